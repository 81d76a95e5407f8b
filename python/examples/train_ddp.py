"""Data-parallel training of PyTorch's MNIST example network on Fashion-MNIST through any
torch.distributed backend: orbit (python/orbit_torch), Gloo or NCCL, in one and the same
loop, so that the backends can be compared on loss, accuracy and time.

Launch it with torchrun, which sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT:

    python -m torch.distributed.run --standalone --nproc_per_node=2 python/examples/train_ddp.py \\
        --backend gloo --subset 2048 --test-subset 1000 --batch-size 64 --accum 2 --loss-log /tmp/a.jsonl

--batch-size is the global batch of one optimizer step; each rank feeds micro-batches of
B / world_size / accum samples, the first accum-1 of them under DDP's no_sync(). With
--loss-log, rank 0 writes one JSON line per optimizer step, {"step": i, "loss": L} (i from
0; L the step's loss averaged over its micro-batches and over the ranks), then one line
{"accuracy": A, "eval_loss": E, "samples": N} (A a fraction, E the mean loss per test sample,
N the number of test samples). The data is Debian's dataset-fashion-mnist package.
"""
import argparse
import gzip
import json
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST training set pixel statistics


class ConvNet(nn.Module):
    """The network of PyTorch's examples/mnist/main.py (28x28 greyscale in, 10 classes)."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def import_backend(backend):
    """orbit is not built into torch: importing orbit_torch registers it with torch.distributed."""
    if backend != "orbit":
        return
    try:
        import orbit_torch  # noqa: F401
    except ImportError as e:
        sys.exit(f"{os.path.basename(sys.argv[0])}: --backend orbit needs the orbit_torch package "
                 f"(python/orbit_torch, built and installed into this Python), "
                 f"but importing it failed: {e}")


def pick_device(name, prog):
    """cpu, or this rank's GPU (LOCAL_RANK modulo the GPUs: several ranks may share one)."""
    if name != "cuda":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        sys.exit(f"{prog}: --device cuda, but torch sees no CUDA device")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    return torch.device("cuda", torch.cuda.current_device())


def read_idx(path):
    """A gzipped IDX file of unsigned bytes as a numpy array of the shape in its header."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[:3] != b"\x00\x00\x08":
        sys.exit(f"train_ddp: {path}: not an unsigned-byte IDX file")
    ndims = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndims)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndims)
    if data.size != int(np.prod(dims)):
        sys.exit(f"train_ddp: {path}: size does not match the header")
    return data.reshape(dims)


def load_split(split, limit):
    """The first `limit` (0: all) images, normalised, as N x 1 x 28 x 28 float32, and labels."""
    images = read_idx(os.path.join(DATA_DIR, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(DATA_DIR, f"{split}-labels-idx1-ubyte.gz"))
    if limit > len(labels):
        sys.exit(f"train_ddp: asked for {limit} {split} samples, the set has {len(labels)}")
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = (images.astype(np.float32) / 255.0 - MEAN) / STD
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(labels.astype(np.int64))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["orbit", "gloo", "nccl"], default="orbit")
    p.add_argument("--model", choices=["convnet"], default="convnet")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many optimizer steps (0: no limit)")
    p.add_argument("--subset", type=int, default=0, help="train on the first N samples only (0: all)")
    p.add_argument("--test-subset", type=int, default=0, help="evaluate on the first M test samples (0: all)")
    p.add_argument("--batch-size", type=int, default=64, help="global batch per optimizer step")
    p.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step")
    p.add_argument("--lr", type=float, default=0.01, help="SGD learning rate (momentum 0.9)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--loss-log", help="rank 0 writes JSON lines of per-step loss and the final evaluation here")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    p.add_argument("--timeout", type=float, default=120, help="seconds before a stuck collective fails")
    args = p.parse_args()
    for name in ("epochs", "batch_size", "accum", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    for name in ("max_steps", "subset", "test_subset"):
        if getattr(args, name) < 0:
            p.error(f"--{name.replace('_', '-')} must not be negative")
    if args.backend == "nccl" and args.device != "cuda":
        p.error("--backend nccl needs --device cuda")
    return args


def evaluate(model, test_x, test_y, device, rank, world):
    """Each rank its shard of the test set; returns (accuracy, mean loss, samples) of the whole set."""
    sampler = DistributedSampler(test_x, num_replicas=world, rank=rank, shuffle=False)
    # Without drop_last the sampler pads the shards to equal length by repeating samples at
    # the end; keep only this rank's real ones so that every test sample counts exactly once.
    indices = torch.tensor(list(sampler)[:len(range(rank, len(test_y), world))], dtype=torch.long)
    model.eval()
    correct, loss_sum = 0, 0.0
    with torch.no_grad():
        for s in range(0, len(indices), 256):
            b = indices[s:s + 256]
            x, y = test_x[b].to(device), test_y[b].to(device)
            out = model(x)
            loss_sum += F.nll_loss(out, y, reduction="sum").item()
            correct += (out.argmax(dim=1) == y).sum().item()
    totals = torch.tensor([correct, loss_sum, len(indices)], dtype=torch.float64, device=device)
    dist.all_reduce(totals, op=dist.ReduceOp.SUM)
    correct, loss_sum, count = totals.tolist()
    return correct / count, loss_sum / count, int(count)


def main():
    args = parse_args()
    import_backend(args.backend)
    torch.set_num_threads(args.threads)

    device = pick_device(args.device, "train_ddp")

    dist.init_process_group(backend=args.backend, timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % (world * args.accum):
        # Every rank stops; rank 0 alone says why.
        sys.exit(f"train_ddp: --batch-size {args.batch_size} does not split into {world} ranks x "
                 f"{args.accum} micro-batches (it must be a multiple of {world * args.accum})"
                 if rank == 0 else 1)
    micro = args.batch_size // world // args.accum

    train_x, train_y = load_split("train", args.subset)
    test_x, test_y = load_split("t10k", args.test_subset)
    sampler = DistributedSampler(train_x, num_replicas=world, rank=rank, shuffle=True,
                                 seed=args.seed, drop_last=True)
    # Every rank has the same number of samples (drop_last), hence the same number of steps,
    # and the incomplete last step of an epoch is dropped so that all ranks' collectives match.
    steps_per_epoch = len(sampler) // (micro * args.accum)
    if steps_per_epoch == 0:
        sys.exit(f"train_ddp: {len(train_y)} training samples give no complete step of "
                 f"{args.batch_size} samples" if rank == 0 else 1)

    torch.manual_seed(args.seed)
    model = ConvNet().to(device)
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    # The weights are rank 0's on every rank (DDP broadcasts them); dropout should draw
    # different masks on different ranks, as it would on one process with the whole batch.
    torch.manual_seed(args.seed + 1 + rank)

    log = open(args.loss_log, "w") if args.loss_log and rank == 0 else None
    if rank == 0:
        print(f"train_ddp: {args.model} ({sum(p.numel() for p in model.parameters())} parameters), "
              f"backend {args.backend}, {world} ranks, batch {args.batch_size} = {world} x {args.accum} x "
              f"{micro}, {len(train_y)} training / {len(test_y)} test samples, device {device}, "
              f"torch {torch.__version__}", flush=True)

    step = 0
    t_start = time.perf_counter()
    for epoch in range(args.epochs):
        if args.max_steps and step >= args.max_steps:
            break
        t0 = time.perf_counter()
        sampler.set_epoch(epoch)
        order = torch.tensor(list(sampler), dtype=torch.long)
        ddp.train()
        epoch_loss, epoch_steps = 0.0, 0
        for s in range(steps_per_epoch):
            if args.max_steps and step >= args.max_steps:
                break
            opt.zero_grad(set_to_none=True)
            step_loss = torch.zeros(1, device=device)
            for m in range(args.accum):
                b = order[(s * args.accum + m) * micro:(s * args.accum + m + 1) * micro]
                x, y = train_x[b].to(device), train_y[b].to(device)
                # Only the last micro-batch's backward all-reduces the accumulated gradients.
                if m < args.accum - 1:
                    with ddp.no_sync():
                        loss = F.nll_loss(ddp(x), y)
                        (loss / args.accum).backward()
                else:
                    loss = F.nll_loss(ddp(x), y)
                    (loss / args.accum).backward()
                step_loss += loss.detach()
            opt.step()
            step_loss /= args.accum
            dist.all_reduce(step_loss, op=dist.ReduceOp.SUM)
            loss_value = step_loss.item() / world
            if log:
                log.write(json.dumps({"step": step, "loss": loss_value}) + "\n")
                log.flush()
            epoch_loss += loss_value
            epoch_steps += 1
            step += 1
        if rank == 0 and epoch_steps:
            print(f"epoch {epoch + 1}/{args.epochs}  steps {epoch_steps}  loss {epoch_loss / epoch_steps:.4f}  "
                  f"time {time.perf_counter() - t0:.2f} s", flush=True)
    train_time = time.perf_counter() - t_start

    accuracy, eval_loss, samples = evaluate(model, test_x, test_y, device, rank, world)
    if rank == 0:
        print(f"train_ddp: {step} steps in {train_time:.2f} s", flush=True)
        print(f"accuracy {accuracy:.4f}  eval_loss {eval_loss:.4f}  samples {samples}", flush=True)
        if log:
            log.write(json.dumps({"accuracy": accuracy, "eval_loss": eval_loss, "samples": samples}) + "\n")
            log.close()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
