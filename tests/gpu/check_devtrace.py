#!/usr/bin/env python3
"""Device steps in the trace (docs/profiling.md), from the files alone, for two jobs run with
ORBIT_TRACE and ORBIT_TRACE_STEPS=1:

  coll   test_gpu_coll's device allreduces (every dtype, op and size, 4 channels allowed) on 2
         ranks as processes under orbitrun: one launch per call, the test synchronising after
         each;
  group  test_gpu_api group on 2 ranks as threads: allreduce, send and recv of each rank in
         one launch (the blocks of three calls).

    check_devtrace.py ORBITRUN TEST_GPU_COLL TEST_GPU_API ORBIT_TRACE_TOOL

Each device call that moved data has one `kernel` step per channel (channels 0..nch-1, index
and peers -1, no wait/move/reduce split, bytes > 0); a kernel step starts after its call
started (the call's end is the enqueue's return, before the kernel ran) and ends after it
starts. In the coll job besides: a kernel ends before the rank's next call starts (this is
what shows the device clock was put on the host's: unaligned, the emulator's CLOCK_REALTIME
stamps would be decades off), per channel the lanes follow call order without overlapping,
and some calls use several channels. Host calls keep host steps only; nothing is dropped;
orbit-trace reads the files. Exit 77 without a device, 1 with the reasons on failure.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trace"))
import check_trace  # noqa: E402  (parse, load, run_tool; failures collect there)

SLACK_NS = 5_000_000  # the device clock's alignment error on the emulator is far below this
fail = check_trace.fail


def check_rank(job, rank, head, calls, steps):
    where = f"{job}: rank {rank}"
    sequential = job == "coll"
    if head.get("dropped_steps"):
        fail(f"{where}: {head['dropped_steps']} steps dropped")
    by_id = {c["id"]: c for c in calls}
    kernels = {}
    for s in steps:
        c = by_id.get(s["id"])
        if c is None:
            fail(f"{where}: step of unknown call {s['id']}")
            continue
        if s["kind"] == "kernel":
            if c["proto"] != "device":
                fail(f"{where}: host call {c['id']} has a kernel step")
            kernels.setdefault(c["id"], []).append(s)
            if (s["index"], s["send"], s["recv"], s["wait"], s["move"], s["reduce"]) != (-1, -1, -1, 0, 0, 0):
                fail(f"{where}: kernel step of call {c['id']} channel {s['ch']}: {s}")
        elif c["proto"] == "device":
            fail(f"{where}: device call {c['id']} has a host step {s['kind']}")
        elif s["index"] < 0:
            fail(f"{where}: host step with index {s['index']}: {s}")
    ordered = sorted(calls, key=lambda c: c["id"])
    ndev = 0
    for i, c in enumerate(ordered):
        if c["proto"] != "device":
            continue
        ndev += 1
        ks = kernels.get(c["id"], [])
        if c["count"] == 0 and not ks:
            continue  # nothing to move: no kernel launched
        chans = sorted(k["ch"] for k in ks)
        if chans != list(range(c["nch"])):
            fail(f"{where}: call {c['id']} ({c['coll']} count {c['count']}) has {c['nch']} channels but kernel "
                 f"steps on channels {chans}")
        nxt = ordered[i + 1]["t0"] if i + 1 < len(ordered) and sequential else None
        for k in ks:
            if c["count"] and k["bytes"] <= 0:
                fail(f"{where}: call {c['id']} channel {k['ch']}: kernel step of {k['bytes']} bytes")
            if k["t0"] < c["t0"]:
                fail(f"{where}: call {c['id']} channel {k['ch']}: kernel starts {c['t0'] - k['t0']} ns before its call")
            if k["t1"] < k["t0"]:
                fail(f"{where}: call {c['id']} channel {k['ch']}: kernel ends before it starts")
            if nxt is not None and k["t1"] > nxt + SLACK_NS:
                fail(f"{where}: call {c['id']} channel {k['ch']}: kernel ends {k['t1'] - nxt} ns after the next "
                     f"call started (device clock not aligned?)")
    if ndev == 0:
        fail(f"{where}: no device calls traced")
    per_ch = {}
    for cid in sorted(kernels) if sequential else []:
        for k in kernels[cid]:
            per_ch.setdefault(k["ch"], []).append(k)
    for ch, ks in per_ch.items():
        for a, b in zip(ks, ks[1:]):
            if b["t0"] < a["t1"]:
                fail(f"{where}: channel {ch}: call {b['id']}'s lane starts before call {a['id']}'s ended")
    return sum(len(v) for v in kernels.values())


def run(job, argv, env_extra):
    """Runs one job and checks its files; None when there is no device (exit 77)."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, ORBIT_TRACE=d, ORBIT_TRACE_STEPS="1", **env_extra)
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        if r.returncode == 77:
            print(r.stdout + r.stderr)
            return None
        if r.returncode != 0:
            fail(f"{job}: {' '.join(argv)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
        comms = check_trace.load(d)
        if len(comms) != 1 or len(next(iter(comms.values()), {})) != 2:
            fail(f"{job}: expected one communicator of 2 ranks, found {[sorted(v) for v in comms.values()]}")
        total, multi = 0, 0
        for ranks in comms.values():
            for rank, (head, calls, steps) in sorted(ranks.items()):
                total += check_rank(job, rank, head, calls, steps)
                multi += sum(c["nch"] > 1 for c in calls)
        if job == "coll" and not multi:
            fail(f"{job}: no call used several channels")
        ncalls = sum(len(calls) for ranks in comms.values() for (_, calls, _) in ranks.values())
        if job == "group" and ncalls != 6:  # 2 ranks x (allreduce, send, recv)
            fail(f"{job}: {ncalls} calls traced, expected 6")
        check_trace.run_tool(tool, d)
        print(f"{job}: {total} kernel steps checked")
        return total


def main():
    global tool
    orbitrun, coll, api, tool = sys.argv[1:5]
    if run("coll", [orbitrun, "-n", "2", coll, "--coll", "allreduce"], {"ORBIT_NCHANNELS": "4"}) is None:
        return 77
    run("group", [api, "group", "2"], {})
    return 1 if check_trace.failures else 0


if __name__ == "__main__":
    sys.exit(main())
