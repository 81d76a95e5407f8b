#!/usr/bin/python3
"""Gloo's all-reduce (torch.distributed, CPU tensors), timed like bench/allreduce_bench so the
two sit side by side: float32 sum, warm-up calls, a barrier, timed calls, the slowest rank's
time. Gloo reduces in place; the timed calls do only that (no copy of a fresh input, which
would cost Gloo time orbit's out-of-place call does not spend); --check then verifies one
call on a fresh input.

Run it with Debian's python3-torch under any launcher that sets RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT (torchrun, orbitrun, tests/net/netns_run.sh). Across hosts set
GLOO_SOCKET_IFNAME to the interface that links them.

    /usr/bin/python3 bench/gloo_allreduce.py --size 8:256M --factor 2 [--json FILE] [--check]
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

ITERS_MAX, WARMUP_MAX = 50, 20  # the same budgets as bench/options.c
ITER_BUDGET, WARMUP_BUDGET = 1 << 30, 256 << 20
ITERS_SMALL_MAX, ITER_SMALL_BUDGET = 1000, 50 << 16  # small calls: up to 1000 below 64 KiB


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text and text[-1] in mult:
        return int(text[:-1]) * mult[text[-1]]
    return int(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="8:256M", help="MIN:MAX or N bytes, K/M/G suffixes")
    ap.add_argument("--factor", type=int, default=2)
    ap.add_argument("--iters", type=int, default=0, help="timed calls per size (0: by budget)")
    ap.add_argument("--warmup", type=int, default=-1, help="untimed calls per size (-1: by budget)")
    ap.add_argument("--check", action="store_true", help="verify the sums exactly")
    ap.add_argument("--json", help="also write one JSON object per row to this file")
    a = ap.parse_args()
    lo, _, hi = a.size.partition(":")
    lo = parse_size(lo)
    hi = parse_size(hi) if hi else lo
    if a.factor < 2 or lo < 4 or hi < lo:
        ap.error("need --factor >= 2 and 4 <= MIN <= MAX")

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, nranks = dist.get_rank(), dist.get_world_size()
    out = open(a.json, "a") if a.json and rank == 0 else None
    if rank == 0:
        print(f"# gloo allreduce: torch {torch.__version__}  nranks {nranks}  "
              f"GLOO_SOCKET_IFNAME={os.environ.get('GLOO_SOCKET_IFNAME', '(unset)')}")
        print(f"# {'size':>10}  {'count':>12}  {'time':>9}  {'algbw':>7}  {'busbw':>7}  {'#wrong':>6}")
        print(f"# {'(B)':>10}  {'(elements)':>12}  {'(us)':>9}  {'(GB/s)':>7}  {'(GB/s)':>7}")
    busbw_factor = 2.0 * (nranks - 1) / nranks if nranks > 1 else 1.0
    maxbuf = torch.empty(hi // 4, dtype=torch.float32)
    src = torch.empty(hi // 4, dtype=torch.float32)
    size = lo
    while size <= hi:
        count = size // 4
        iters = a.iters or max(2, min(ITERS_MAX, ITER_BUDGET // size), min(ITERS_SMALL_MAX, ITER_SMALL_BUDGET // size))
        warmup = a.warmup if a.warmup >= 0 else max(1, min(WARMUP_MAX, WARMUP_BUDGET // size))
        inp = src[:count]
        inp.copy_(torch.arange(count, dtype=torch.float32) % 1024 + rank)
        buf = maxbuf[:count]
        buf.copy_(inp)
        for _ in range(warmup):
            dist.all_reduce(buf)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf)
        per_call = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
        dist.all_reduce(per_call, op=dist.ReduceOp.MAX)
        t = per_call.item()
        wrong = "N/A"
        if a.check:
            buf.copy_(inp)
            dist.all_reduce(buf)
            want = (torch.arange(count, dtype=torch.float32) % 1024) * nranks + nranks * (nranks - 1) / 2
            wrong = int((buf != want).sum().item())
        algbw = size / t / 1e9
        if rank == 0:
            print(f"  {size:>10}  {count:>12}  {t * 1e6:>9.2f}  {algbw:>7.2f}  {algbw * busbw_factor:>7.2f}  {wrong:>6}",
                  flush=True)
            if out:
                out.write(json.dumps({"coll": "allreduce", "size": size, "count": count, "dtype": "float32",
                                      "op": "sum", "backend": "gloo", "nranks": nranks, "inplace": False,
                                      "iters": iters, "time_us": t * 1e6, "algbw": algbw,
                                      "busbw": algbw * busbw_factor,
                                      "wrong": None if wrong == "N/A" else wrong}) + "\n")
                out.flush()
        size *= a.factor
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
