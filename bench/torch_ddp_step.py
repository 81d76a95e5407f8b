"""DDP training step time through any torch.distributed backend (orbit, Gloo, NCCL), and how
much of it is communication the backward pass did not hide.

    python -m torch.distributed.run --standalone --nproc_per_node=2 bench/torch_ddp_step.py \\
        --backend gloo --model resnet18 --batch 16 --steps 20 [--device cpu] [--json FILE]

One DDP model, one synthetic batch per rank (convnet: 1x28x28, resnet18: 3 x --image x
--image, random labels), SGD. The steps (forward, backward, optimizer step) run in blocks
that alternate between normal DDP steps and steps entirely inside no_sync(), which do no
gradient communication; interleaving them in one process lets machine noise hit both alike.
The first step of each block is run untimed: it is the one where DDP changes between the
modes (the first no_sync step still syncs buffers, the first normal one does not), and a
barrier before it keeps ranks that drifted apart during no_sync from charging the wait to
a normal step. A step's time is the slowest rank's. Reported: the medians of both kinds,
and exposed_comm_ms = median(normal) - median(no_sync).
"""
import argparse
import json
import os
import statistics
import sys
import time
from contextlib import nullcontext
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

# The convnet is the one python/examples/train_ddp.py trains, imported so that both measure
# the same network; so is the import of orbit_torch for --backend orbit.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "examples"))
from train_ddp import ConvNet, import_backend, pick_device  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["orbit", "gloo", "nccl"], default="orbit")
    p.add_argument("--model", choices=["convnet", "resnet18"], default="convnet")
    p.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    p.add_argument("--image", type=int, default=64, help="resnet18 input height and width")
    p.add_argument("--steps", type=int, default=20, help="timed steps of each kind")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps of each kind first")
    p.add_argument("--block", type=int, default=5, help="timed steps per block of one kind")
    p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket_cap_mb")
    p.add_argument("--lr", type=float, default=0.01, help="SGD learning rate (momentum 0.9)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    p.add_argument("--timeout", type=float, default=300, help="seconds before a stuck collective fails")
    p.add_argument("--json", help="write the result as JSON here (rank 0)")
    args = p.parse_args()
    for name in ("batch", "image", "steps", "block", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if args.warmup < 0:
        p.error("--warmup must not be negative")
    if args.backend == "nccl" and args.device != "cuda":
        p.error("--backend nccl needs --device cuda")
    return args


def build_model(args):
    """The model, the shape of one input sample, and the loss function."""
    if args.model == "convnet":
        return ConvNet(), (1, 28, 28), F.nll_loss  # ConvNet ends in log_softmax
    import torchvision
    return torchvision.models.resnet18(num_classes=10), (3, args.image, args.image), F.cross_entropy


def main():
    args = parse_args()
    import_backend(args.backend)
    torch.set_num_threads(args.threads)
    device = pick_device(args.device, "torch_ddp_step")

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    dist.init_process_group(backend=args.backend, timeout=timedelta(seconds=args.timeout))
    rank, nranks = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(args.seed)
    model, shape, loss_fn = build_model(args)
    model = model.to(device)
    torch.manual_seed(args.seed + 1 + rank)  # each rank its own batch
    x = torch.randn(args.batch, *shape).to(device)
    y = torch.randint(0, 10, (args.batch,)).to(device)
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None,
              bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    params = sum(p.numel() for p in model.parameters())
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)

    def step(local):
        """One training step, inside no_sync() if local; its seconds on this rank."""
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        # Forward and backward both inside no_sync(): DDP decides at forward time.
        with ddp.no_sync() if local else nullcontext():
            loss = loss_fn(ddp(x), y)
            loss.backward()
        opt.step()
        sync()
        return time.perf_counter() - t0

    for local in (False, True):
        for _ in range(args.warmup):
            step(local)
    times = {False: [], True: []}
    blocks = -(-args.steps // args.block)
    for _ in range(blocks):
        for local in (False, True):
            sync()
            dist.barrier()
            step(local)  # the mode change, untimed
            times[local] += [step(local) for _ in range(args.block)]
    # The slowest rank's time per step (the lists are as long and in the same order on all ranks).
    both = torch.tensor(times[False][:args.steps] + times[True][:args.steps], dtype=torch.float64, device=device)
    dist.all_reduce(both, op=dist.ReduceOp.MAX)
    both = [t * 1e3 for t in both.tolist()]
    normal_ms, local_ms = both[:args.steps], both[args.steps:]
    step_ms, nosync_ms = statistics.median(normal_ms), statistics.median(local_ms)
    exposed = step_ms - nosync_ms

    if rank == 0:
        print(f"torch_ddp_step: {args.model} backend {args.backend} nranks {nranks} batch {args.batch}/rank "
              f"device {device.type}: step {step_ms:.2f} ms  no_sync {nosync_ms:.2f} ms  "
              f"exposed comm {exposed:.2f} ms  ({params} params, {grad_bytes / 1e6:.1f} MB of gradients, "
              f"median of {args.steps} steps each, torch {torch.__version__})", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"backend": args.backend, "model": args.model, "nranks": nranks, "batch": args.batch,
                           "image": args.image if args.model == "resnet18" else 28, "device": device.type,
                           "threads": args.threads, "bucket_mb": args.bucket_mb, "torch": torch.__version__,
                           "params": params, "grad_bytes": grad_bytes, "steps": args.steps,
                           "step_ms": step_ms, "nosync_ms": nosync_ms, "exposed_comm_ms": exposed,
                           "step_ms_all": normal_ms, "nosync_ms_all": local_ms}, f, indent=1)
                f.write("\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
