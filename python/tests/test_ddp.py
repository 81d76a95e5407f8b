"""DDP training through the backend under test follows the same trajectory as through Gloo.

python/examples/train_ddp.py trains PyTorch's MNIST example network on a Fashion-MNIST subset
under torchrun, 2 ranks; it runs once with --backend gloo and once with the backend under test,
same seed, same data order, and rank 0's per-step losses and final evaluation are compared.
"""
import json
import os
import subprocess
import sys

import pytest

import harness

harness.require_torch()

REPO = os.path.dirname(os.path.dirname(harness.TESTS_DIR))
SCRIPT = os.path.join(REPO, "python", "examples", "train_ddp.py")
# The script's data: Debian's dataset-fashion-mnist package.
DATA_DIR = "/usr/share/datasets/fashion-mnist"
NPROC = 2
STEPS = 32  # 2048 samples / 64 per step: one epoch
TEST_SAMPLES = 1000
ARGS = ["--model", "convnet", "--subset", "2048", "--test-subset", str(TEST_SAMPLES),
        "--batch-size", "64", "--accum", "2", "--epochs", "1", "--max-steps", str(STEPS),
        "--seed", "1", "--threads", "1", "--timeout", "60"]

# Per-step loss tolerance. With 2 ranks every all-reduced gradient element is one float32
# addition a+b, which is commutative and correctly rounded, so a correct backend gives Gloo's
# gradients bit for bit and the losses agree exactly (Gloo against Gloo they do). The
# tolerance leaves room for what a correct backend may still do differently (AVG instead of
# SUM-then-divide, another summation order with more ranks): measured on this configuration,
# moving every reduced gradient element by one ulp at every step moves the losses by at most
# 2.7e-6 relative over the 32 steps; a bfloat16-compressed all-reduce (DDP's
# bf16_compress_hook) moves them by up to 1.7e-2. 1e-4 sits between, ~40x above the first.
LOSS_RTOL = 1e-4
LOSS_ATOL = 1e-6
# Final accuracy: weights within that tolerance move a test sample across a decision boundary
# only when its top two log-probabilities are almost tied; allow one such sample of the 1000
# (the one-ulp-per-step run above changed none; the bfloat16 one changed 3).
ACCURACY_SAMPLES = 1


def train(backend, log_path):
    cmd = [harness.PYTHON, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={NPROC}", SCRIPT, "--backend", backend, "--loss-log", log_path] + ARGS
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, cwd=REPO)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"train_ddp --backend {backend} ran past 180 s\n{e.stdout}\n{e.stderr}",
                    pytrace=False)
    lines = []
    if os.path.exists(log_path):
        with open(log_path) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    # Gloo in torch 2.14.1 now and then aborts a rank as the process exits, after training
    # and evaluation are done and logged ("terminate called without an active exception",
    # about 1 run in 10 here). That is not what this test is about, so for Gloo alone an
    # abort after the final log line is let through; any other backend must exit cleanly.
    exit_abort = ("terminate called without an active exception" in p.stderr
                  and lines and "accuracy" in lines[-1])
    if p.returncode != 0 and not (backend == "gloo" and exit_abort):
        pytest.fail(f"train_ddp --backend {backend} exited {p.returncode}\n"
                    f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}", pytrace=False)
    steps = [x for x in lines if "step" in x]
    final = [x for x in lines if "accuracy" in x]
    assert [x["step"] for x in steps] == list(range(STEPS)), f"{backend}: steps {steps}"
    assert len(final) == 1 and final[0]["samples"] == TEST_SAMPLES, f"{backend}: {final}"
    return [x["loss"] for x in steps], final[0]


def test_ddp_matches_gloo(under_test, tmp_path):
    if not os.path.exists(SCRIPT):
        pytest.skip(f"{os.path.relpath(SCRIPT, REPO)} is not in this tree yet")
    if not os.path.isdir(DATA_DIR):
        pytest.skip(f"{DATA_DIR} is missing (Debian package dataset-fashion-mnist)")
    ref_losses, ref_final = train("gloo", str(tmp_path / "gloo.jsonl"))
    losses, final = train(under_test, str(tmp_path / f"{under_test}.jsonl"))
    for step, (a, b) in enumerate(zip(losses, ref_losses)):
        assert abs(a - b) <= LOSS_ATOL + LOSS_RTOL * abs(b), (
            f"step {step}: loss {a!r} with {under_test}, {b!r} with gloo "
            f"(relative difference {abs(a - b) / abs(b):.2e} > {LOSS_RTOL})")
    correct = round(final["accuracy"] * TEST_SAMPLES)
    ref_correct = round(ref_final["accuracy"] * TEST_SAMPLES)
    assert abs(correct - ref_correct) <= ACCURACY_SAMPLES, (
        f"{correct}/{TEST_SAMPLES} correct with {under_test}, {ref_correct} with gloo")
    assert abs(final["eval_loss"] - ref_final["eval_loss"]) <= LOSS_RTOL * abs(ref_final["eval_loss"]), (
        f"eval loss {final['eval_loss']!r} with {under_test}, {ref_final['eval_loss']!r} with gloo")
    print(f"max relative loss difference over {STEPS} steps: "
          f"{max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses)):.3g}", file=sys.stderr)
