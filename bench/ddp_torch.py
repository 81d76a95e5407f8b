#!/usr/bin/python3
"""PyTorch DDP peer of orbit-train: the same models, data, sampler, optimisers and output,
over Gloo (or orbit's torch.distributed backend, --backend orbit) on CPU. Run it with
Debian's python3-torch (/usr/bin/python3) or the venv's (scripts/torch_env.sh; ResNet needs
torchvision, --backend orbit needs orbit_torch), either under a launcher that sets
RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (torchrun, orbitrun) or on its own with --nproc N (it
then spawns the ranks itself).

    /usr/bin/python3 bench/ddp_torch.py --nproc 2 --model lenet --epochs 1
    $(bash scripts/torch_env.sh) bench/ddp_torch.py --nproc 2 --model resnet20 --grad-dtype bf16

It prints what orbit-train prints (Epoch [i/E], Loss, Dur; total time; accuracy) and
writes the same --json keys, so bench/train_compare.sh can put both side by side.
"""
import argparse
import contextlib
import gzip
import json
import os
import resource
import socket
import sys
import time


def _threads_from_argv():
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


# Before torch loads: torch.set_num_threads covers OpenMP and oneDNN, but the OpenBLAS that
# Debian's torch links for its matrix products sizes its pool from the environment only
# (orbit-train does the same; bench/train_compare.sh runs both sides alike).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, _threads_from_argv())

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402


def read_idx(path_base):
    """IDX file, gzipped or not (detected from the content), as a uint8 numpy array."""
    for path in (path_base, path_base + ".gz"):
        if os.path.exists(path):
            break
    else:
        sys.exit(f"ddp_torch: missing data file {path_base}.gz")
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        sys.exit(f"ddp_torch: {path}: not an unsigned-byte IDX file")
    ndims = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndims)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndims)
    if data.size != int(np.prod(dims)):
        sys.exit(f"ddp_torch: {path}: size does not match the header")
    return data.reshape(dims)


def load_split(data_dir, split):
    images = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte"))
    labels = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte"))
    return images, labels.astype(np.int64)


class LeNet(nn.Module):
    """conv 6@5x5 (pad 2), pool, conv 16@5x5, pool, fc 120, fc 84, fc 10 (ReLU, max pool)."""

    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.log_softmax(self.fc3(x), dim=1)


class ConvNet(nn.Module):
    """The network of PyTorch's examples/mnist/main.py."""

    def __init__(self, classes):
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


class BasicBlock(nn.Module):
    """torchvision's BasicBlock: conv3x3-bn-relu-conv3x3-bn, plus the input or its 1x1
    projection (conv-bn) when the shape changes, then relu (orbit-train's trainer/block.c)."""

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or cin != planes:
            self.downsample = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (self.downsample(x) if self.downsample is not None else x))


class ResNet20(nn.Module):
    """The CIFAR ResNet-20 of He et al. with projection shortcuts, as orbit-train's resnet20."""

    def __init__(self, channels, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        blocks, cin = [], 16
        for planes, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                blocks.append(BasicBlock(cin, planes, stride if i == 0 else 1))
                cin = planes
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, classes)
        for m in self.modules():  # as torchvision's ResNet initialises itself
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.blocks(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class LogSoftmax(nn.Module):
    """A classifier that ends in log_softmax, as orbit-train's models do (nll_loss after)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return F.log_softmax(self.net(x), dim=1)


def make_model(name, channels, classes):
    if name == "lenet":
        return LeNet(classes)
    if name == "convnet":
        return ConvNet(classes)
    if name == "resnet20":
        return LogSoftmax(ResNet20(channels, classes))
    import torchvision
    net = getattr(torchvision.models, name)(num_classes=classes)
    if channels != 3:  # the stem takes the data's channels (orbit-train takes the shape from the data)
        net.conv1 = nn.Conv2d(channels, 64, 7, 2, 3, bias=False)
        nn.init.kaiming_normal_(net.conv1.weight, mode="fan_out", nonlinearity="relu")
    return LogSoftmax(net)


def worker(rank, world, args):
    torch.set_num_threads(args.threads)
    if args.backend == "orbit":
        import orbit_torch  # noqa: F401  (registers the backend)
    dist.init_process_group(args.backend, init_method="env://", rank=rank, world_size=world)
    if args.batch_size % world:
        sys.exit(f"ddp_torch: --batch-size {args.batch_size} is not a multiple of {world} ranks")
    local_batch = args.batch_size // world

    tr_x, tr_y = load_split(args.data, "train")
    te_x, te_y = load_split(args.data, "t10k")
    scaled = tr_x.astype(np.float64) / 255.0
    mean, std = float(scaled.mean()), float(scaled.std(ddof=1))
    del scaled

    def tensor(x):
        t = torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)
        return (t - mean) / std

    classes = int(max(tr_y.max(), te_y.max())) + 1
    train_set = TensorDataset(tensor(tr_x), torch.from_numpy(tr_y))
    test_x, test_y = tensor(te_x), torch.from_numpy(te_y)

    torch.manual_seed(args.seed)
    model = make_model(args.model, 1, classes)
    ddp = DDP(model, bucket_cap_mb=args.bucket_mb)
    if args.grad_dtype != "fp32":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(None, default_hooks.bf16_compress_hook if args.grad_dtype == "bf16"
                               else default_hooks.fp16_compress_hook)
    if args.optimizer == "adam":
        opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
    sched = torch.optim.lr_scheduler.StepLR(opt, args.lr_step, args.lr_gamma) if args.lr_step > 0 else None
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=local_batch, sampler=sampler)

    if rank == 0:
        print(f"ddp_torch: {args.model}, {sum(p.numel() for p in model.parameters())} parameters, "
              f"{world} ranks x batch {local_batch} (global {args.batch_size}), {args.optimizer} lr {args.lr}, "
              f"{args.backend}, torch {torch.__version__}, {torch.get_num_threads()} thread(s) per rank, data {args.data} "
              f"(mean {mean:.4f} std {std:.4f})", flush=True)
    records = []
    t_start = time.time()
    def cpu_seconds():
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime

    for epoch in range(args.epochs):
        t0 = time.time()
        cpu0 = cpu_seconds()
        sampler.set_epoch(epoch)
        ddp.train()
        loss_sum, steps = 0.0, 0
        for x, y in loader:
            if args.steps and steps == args.steps:
                break
            opt.zero_grad()
            # --no-sync: DDP's no_sync() (buffers still broadcast, no gradient all-reduce), the
            # step without communication that orbit-train --no-sync also measures
            with ddp.no_sync() if args.no_sync else contextlib.nullcontext():
                loss = F.nll_loss(ddp(x), y)
                loss.backward()
            opt.step()
            loss_sum += loss.item()
            steps += 1
        # the mean over all ranks' batches, as orbit-train prints it; CPU seconds of all ranks
        t = torch.tensor([loss_sum, float(steps), cpu_seconds() - cpu0], dtype=torch.float64)
        dist.all_reduce(t)
        loss_mean = (t[0] / t[1]).item()
        lr = opt.param_groups[0]["lr"]
        if sched:
            sched.step()
        dur = time.time() - t0
        records.append({"epoch": epoch + 1, "loss": loss_mean, "dur": dur, "lr": lr, "cpu": t[2].item()})
        if rank == 0:
            print(f"Epoch [{epoch + 1}/{args.epochs}], Loss: {loss_mean:.4f}, Dur: {dur:.2f}", flush=True)
    total = time.time() - t_start
    if rank == 0:
        print(f"Total training time: {total:.2f} s", flush=True)

    # each rank its shard of the test set (no padding), counts reduced to rank 0
    ddp.eval()
    counts = torch.zeros(2, classes, dtype=torch.int64)
    idx = torch.arange(rank, len(test_y), world)
    with torch.no_grad():
        for s in range(0, len(idx), 128):
            b = idx[s:s + 128]
            pred = model(test_x[b]).argmax(dim=1)
            y = test_y[b]
            counts[0].index_add_(0, y, (pred == y).long())
            counts[1].index_add_(0, y, torch.ones_like(y))
    dist.reduce(counts, dst=0)
    if rank == 0:
        correct, n = int(counts[0].sum()), int(counts[1].sum())
        acc = 100.0 * correct / n
        print(f"Accuracy of the network on the {n} test images: {acc:.2f}%")
        class_acc = []
        for c in range(classes):
            tot = int(counts[1, c])
            class_acc.append(100.0 * int(counts[0, c]) / tot if tot else 0.0)
            if tot:
                print(f"Accuracy of class {c}: {class_acc[-1]:.2f}%")
        sys.stdout.flush()
        if args.json:
            out = {
                "impl": "pytorch", "torch": torch.__version__, "model": args.model, "backend": args.backend,
                "sync_bn": args.sync_bn, "grad_dtype": args.grad_dtype, "no_sync": args.no_sync,
                "world_size": world, "batch_size": args.batch_size, "per_rank_batch": local_batch,
                "optimizer": args.optimizer, "lr": args.lr, "momentum": args.momentum, "lr_step": args.lr_step,
                "lr_gamma": args.lr_gamma, "seed": args.seed, "bucket_mb": args.bucket_mb,
                "threads": torch.get_num_threads(), "nparams": sum(p.numel() for p in model.parameters()),
                "data_mean": mean, "data_std": std, "epochs": records,
                "final_loss": records[-1]["loss"] if records else -1.0, "total_time": total,
                "test_images": n, "accuracy": acc, "class_accuracy": class_acc,
            }
            with open(args.json, "w") as f:
                json.dump(out, f, indent=2)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["lenet", "convnet", "resnet20", "resnet18", "resnet50"], default="lenet")
    p.add_argument("--backend", choices=["gloo", "orbit"], default="gloo")
    p.add_argument("--sync-bn", action="store_true",
                   help="SyncBatchNorm: refused, DDP takes it only in GPU modules (kept so the error says so)")
    p.add_argument("--grad-dtype", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="gradient buckets compressed by DDP's bf16/fp16 hook")
    p.add_argument("--no-sync", action="store_true",
                   help="gradients not all-reduced (DDP's no_sync()): the step without communication")
    p.add_argument("--steps", type=int, default=0, help="end each epoch after this many steps (0: whole epoch)")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64, help="global batch (per rank: B / world size)")
    p.add_argument("--lr", type=float, default=None, help="0.01 for sgd, 0.001 for adam")
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--lr-step", type=int, default=0)
    p.add_argument("--lr-gamma", type=float, default=0.1)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    p.add_argument("--nproc", type=int, default=2, help="ranks to spawn when no launcher set RANK")
    p.add_argument("--json")
    args = p.parse_args()
    if args.sync_bn:
        # DDP refuses SyncBatchNorm in CPU modules ("SyncBatchNorm layers only work with GPU
        # modules", torch 2.14): there is no CPU peer for orbit-train --sync-bn
        p.error("--sync-bn: PyTorch's SyncBatchNorm runs only on GPU modules and this script trains on "
                "CPU; compare orbit-train --sync-bn against orbit-train without it")
    if args.lr is None:
        args.lr = 0.001 if args.optimizer == "adam" else 0.01
    torch.set_num_interop_threads(1)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
    else:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(free_port())
        mp.spawn(worker, args=(args.nproc, args), nprocs=args.nproc, join=True)


if __name__ == "__main__":
    main()
