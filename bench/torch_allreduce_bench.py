"""torch.distributed.all_reduce (sum, in place) timed per message size through any backend,
printed as nccl-tests prints its tables: orbit (python/orbit_torch), Gloo or NCCL measured
by the very same loop.

    python -m torch.distributed.run --standalone --nproc_per_node=2 bench/torch_allreduce_bench.py \\
        --backend gloo --sizes 8:64M [--factor 2] [--dtype float32] [--device cpu] [--json FILE]

Per size: warm-up calls, a barrier, `iters` timed calls (CUDA: synchronised before and after);
time is the mean per call of the slowest rank, algbw = bytes / time, busbw = algbw * 2(n-1)/n.
Without --iters the count is chosen from rounds of probe calls so that a size takes about
TARGET_S seconds (at least MIN_ITERS calls). #wrong counts, over all ranks, the elements of
one further call on rank- and position-dependent integers that differ from the exact sum.
--json writes {"backend", "nranks", "dtype", "device", "torch", "rows": [{bytes, count,
time_us, algbw, busbw, wrong, iters}, ...]}.
"""
import argparse
import json
import math
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

# the import of orbit_torch for --backend orbit and the device choice: the same as
# python/examples/train_ddp.py's
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "examples"))
from train_ddp import import_backend, pick_device  # noqa: E402

TARGET_S = 0.3  # timed seconds per size when --iters is left to the script
MIN_ITERS, MAX_ITERS = 5, 100000
DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16}
# The largest integer up to which each dtype holds every integer exactly: the check's sums
# stay below it, so that any rounding is a wrong result and not an accident of the format.
EXACT = {torch.float32: 1 << 24, torch.float64: 1 << 53, torch.float16: 1 << 11, torch.bfloat16: 1 << 8}


def parse_bytes(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    try:
        if text and text[-1] in mult:
            return int(text[:-1]) * mult[text[-1]]
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: not a byte count (digits, K/M/G suffix)")


def probe_iters(x, device, sync):
    """How many calls on x take about TARGET_S seconds: calls timed in rounds of 1, 4, 16, ...
    until a round lasts a tenth of that (a single call of a small message is too noisy to go
    by). Every rank must run as many calls, so each round goes by the slowest rank's time."""
    n = 1
    while True:
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            dist.all_reduce(x)
        sync()
        t = torch.tensor([time.perf_counter() - t0], dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        t = t.item()
        if t >= TARGET_S / 10 or n >= MAX_ITERS:
            return max(MIN_ITERS, min(MAX_ITERS, math.ceil(TARGET_S * n / max(t, 1e-9))))
        n *= 4


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["orbit", "gloo", "nccl"], default="orbit")
    p.add_argument("--sizes", default="8:64M", help="MIN:MAX or N, bytes, K/M/G suffixes [8:64M]")
    p.add_argument("--factor", type=int, default=2, help="size multiplier from MIN to MAX [2]")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    p.add_argument("--iters", type=int, default=0, help="timed calls per size (0: about %.1f s a size)" % TARGET_S)
    p.add_argument("--warmup", type=int, default=-1, help="untimed calls per size (-1: by iters)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    p.add_argument("--timeout", type=float, default=300, help="seconds before a stuck collective fails")
    p.add_argument("--json", help="write the table as JSON here (rank 0)")
    args = p.parse_args()
    lo, _, hi = args.sizes.partition(":")
    try:
        args.min_bytes = parse_bytes(lo)
        args.max_bytes = parse_bytes(hi) if hi else args.min_bytes
    except argparse.ArgumentTypeError as e:
        p.error(f"--sizes: {e}")
    if args.factor < 2 or args.min_bytes < 1 or args.max_bytes < args.min_bytes:
        p.error("need --factor >= 2 and 1 <= MIN <= MAX in --sizes")
    if args.iters < 0:
        p.error("--iters must not be negative")
    if args.backend == "nccl" and args.device != "cuda":
        p.error("--backend nccl needs --device cuda")
    return args


def main():
    args = parse_args()
    import_backend(args.backend)
    torch.set_num_threads(args.threads)
    device = pick_device(args.device, "torch_allreduce_bench")

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    dist.init_process_group(backend=args.backend, timeout=timedelta(seconds=args.timeout))
    rank, nranks = dist.get_rank(), dist.get_world_size()
    dtype = DTYPES[args.dtype]
    esize = torch.tensor([], dtype=dtype).element_size()
    busbw_factor = 2.0 * (nranks - 1) / nranks

    sizes = []
    size = args.min_bytes
    while size <= args.max_bytes:
        if size >= esize:  # a message below one element has nothing to reduce
            sizes.append(size // esize * esize)
        size *= args.factor
    if not sizes:
        sys.exit(f"torch_allreduce_bench: no size in {args.sizes} holds one {args.dtype}")

    # One buffer of the largest size, sliced per size. The timed calls reduce zeros in place:
    # a sum of anything else would grow every call and end in inf (or denormals) long before
    # the last iteration, which some hardware handles at a different speed.
    buf = torch.zeros(sizes[-1] // esize, dtype=dtype, device=device)
    # The check's integers: rank- and position-dependent, their sum over the ranks exact in dtype.
    modulus = max(2, min(1024, EXACT[dtype] // nranks))
    pos = torch.arange(sizes[-1] // esize, dtype=torch.int64)

    if rank == 0:
        print(f"# torch.distributed all_reduce: backend {args.backend}  nranks {nranks}  device {device}  "
              f"torch {torch.__version__}")
        print(f"# {'size':>10} {'count':>12} {'type':>8} {'redop':>6} {'iters':>7} {'time':>10} "
              f"{'algbw':>8} {'busbw':>8} {'#wrong':>7}")
        print(f"# {'(B)':>10} {'(elements)':>12} {'':>8} {'':>6} {'':>7} {'(us)':>10} "
              f"{'(GB/s)':>8} {'(GB/s)':>8}", flush=True)
    rows = []
    for size in sizes:
        count = size // esize
        x = buf[:count]
        x.zero_()
        iters = args.iters or probe_iters(x, device, sync)
        warmup = args.warmup if args.warmup >= 0 else max(1, min(20, iters // 10))
        for _ in range(warmup):
            dist.all_reduce(x)
        sync()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        sync()
        per_call = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64, device=device)
        dist.all_reduce(per_call, op=dist.ReduceOp.MAX)
        t = per_call.item()

        p = pos[:count]
        x.copy_(((p + 3 * rank) % modulus).to(dtype))
        dist.all_reduce(x)
        want = sum((p + 3 * r) % modulus for r in range(nranks)).to(dtype)
        wrong = torch.tensor([(x.cpu() != want).sum().item()], dtype=torch.int64, device=device)
        dist.all_reduce(wrong)
        wrong = int(wrong.item())
        x.zero_()

        algbw = size / t / 1e9
        row = {"bytes": size, "count": count, "time_us": t * 1e6, "algbw": algbw,
               "busbw": algbw * busbw_factor, "wrong": wrong, "iters": iters}
        rows.append(row)
        if rank == 0:
            print(f"  {size:>10} {count:>12} {args.dtype:>8} {'sum':>6} {iters:>7} {row['time_us']:>10.2f} "
                  f"{algbw:>8.3f} {row['busbw']:>8.3f} {wrong:>7}", flush=True)

    total_wrong = sum(r["wrong"] for r in rows)
    if rank == 0:
        print(f"# out of bounds values : {total_wrong} {'OK' if total_wrong == 0 else 'FAILED'}")
        if rows:
            print(f"# avg bus bandwidth    : {sum(r['busbw'] for r in rows) / len(rows):.3f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"backend": args.backend, "nranks": nranks, "dtype": args.dtype, "op": "sum",
                           "device": str(device.type), "torch": torch.__version__, "rows": rows}, f, indent=1)
                f.write("\n")
    dist.destroy_process_group()
    return 1 if total_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
