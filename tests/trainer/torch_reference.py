"""Loss and gradients of orbit-train's models recomputed by PyTorch in float64 from the
parameters and batch that test_torchref.c wrote. Exit 1 on a mismatch.

    python3 torch_reference.py bench/ddp_torch.py lenet.bin convnet.bin
"""
import importlib.util
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

BATCH = 16


def main():
    spec = importlib.util.spec_from_file_location("ddp_torch", sys.argv[1])
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    torch.set_num_threads(1)
    ok = True
    for path, cls in zip(sys.argv[2:], (peer.LeNet, peer.ConvNet)):
        raw = open(path, "rb").read()
        off = 0

        def take(dtype, count):
            nonlocal off
            a = np.frombuffer(raw, dtype, count, off)
            off += a.nbytes
            return a

        n = int(take(np.uint64, 1)[0])
        params = take(np.float32, n).astype(np.float64)
        x = take(np.float32, BATCH * 784).astype(np.float64).reshape(BATCH, 1, 28, 28)
        y = take(np.int32, BATCH).astype(np.int64)
        grads = take(np.float32, n).astype(np.float64)
        loss_orbit = float(take(np.float64, 1)[0])

        model = cls(10).double()
        o = 0
        for t in model.parameters():
            t.data.copy_(torch.from_numpy(params[o:o + t.numel()]).view_as(t))
            o += t.numel()
        if o != n:
            print(f"{cls.__name__}: {n} parameters in orbit, {o} in PyTorch")
            ok = False
            continue
        model.eval()
        loss = F.nll_loss(model(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        ref = np.concatenate([t.grad.numpy().ravel() for t in model.parameters()])
        gerr = float(np.abs(ref - grads).max() / np.abs(ref).max())
        lerr = abs(loss.item() - loss_orbit)
        print(f"{cls.__name__}: loss orbit {loss_orbit:.8f} PyTorch {loss.item():.8f}; "
              f"max |gradient difference| / max |gradient| {gerr:.2e}")
        # float32 against float64: a few units in the 7th digit
        ok &= lerr < 1e-5 and gerr < 1e-5
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
