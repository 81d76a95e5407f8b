"""A PyTorch DDP job through orbit is profiled by setting ORBIT_TRACE, with nothing else changed.

python/examples/train_ddp.py trains 8 steps on 2 ranks with ORBIT_TRACE=DIR; both ranks'
trace files must be there, written when the process group was destroyed, holding DDP's
initial parameter broadcast and its per-step bucket all-reduces, the same calls on both ranks
(same sequence numbers, collectives and counts), every one of them OK. The files are parsed
by tests/trace/check_trace.py's parser, which does not go through orbit.
"""
import importlib.util
import os
import subprocess

import pytest

import harness

harness.require_torch()

REPO = os.path.dirname(os.path.dirname(harness.TESTS_DIR))
SCRIPT = os.path.join(REPO, "python", "examples", "train_ddp.py")
DATA_DIR = "/usr/share/datasets/fashion-mnist"
STEPS = 8


def load_parser():
    spec = importlib.util.spec_from_file_location("check_trace", os.path.join(REPO, "tests", "trace", "check_trace.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ddp_traced(under_test, tmp_path):
    if under_test != "orbit":
        pytest.skip("ORBIT_TRACE is orbit's; the backend under test is " + under_test)
    if not os.path.isdir(DATA_DIR):
        pytest.skip(f"{DATA_DIR} is missing (Debian package dataset-fashion-mnist)")
    trace_dir = tmp_path / "trace"
    cmd = [harness.PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", SCRIPT,
           "--backend", "orbit", "--model", "convnet", "--subset", "512", "--test-subset", "64",
           "--batch-size", "64", "--epochs", "1", "--max-steps", str(STEPS), "--seed", "1", "--threads", "1",
           "--timeout", "60"]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", ORBIT_TRACE=str(trace_dir))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, cwd=REPO)
    assert p.returncode == 0, f"train_ddp exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}"

    ct = load_parser()
    comms = ct.load(str(trace_dir))
    assert not ct.failures, ct.failures
    # the world group's communicator is the one with all-reduces (torch may make others)
    worlds = {k: v for k, v in comms.items()
              if any(c["coll"] == "allreduce" for _, calls, _ in v.values() for c in calls)}
    assert len(worlds) == 1, f"communicators with all-reduces: {sorted(worlds)} of {sorted(comms)}"
    ranks = next(iter(worlds.values()))
    assert sorted(ranks) == [0, 1], f"trace files of ranks {sorted(ranks)}"
    calls = {r: ranks[r][1] for r in ranks}
    shape = [[(c["seq"], c["coll"], c["count"], c["dtype"]) for c in calls[r]] for r in (0, 1)]
    assert shape[0] == shape[1], "the two ranks' traces disagree on the calls"
    assert all(c["status"] == "OK" for r in (0, 1) for c in calls[r])
    colls = [c["coll"] for c in calls[0]]
    assert "broadcast" in colls, f"no broadcast (DDP's initial parameter sync) in {colls}"
    # each optimizer step all-reduces the gradient buckets: at least one per step
    assert colls.count("allreduce") >= STEPS, f"{colls.count('allreduce')} all-reduces for {STEPS} steps"
