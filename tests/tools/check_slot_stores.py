#!/usr/bin/env python3
"""How a rank writes pieces into its shared-memory peers' slots (ORBIT_SLOT_STORES,
collectives/slot_stores.h), from the outside: real ranks under orbitrun, judged by their
results (the bench's --check) and what they log (ORBIT_DEBUG=INFO). auto turns to streaming
stores when its timed copies run under a third of the calibrated link rate: a planted line
of 3000 GB/s makes every copy that slow, so every rank must say so, and its results stay
exact; cached never times a copy, nor does auto without a measured rate (ORBIT_CALIBRATE=0);
a value that is none of the three fails init with a message naming it. Which way this
machine's cores happen to sit (near or far) is not assumed anywhere.
Usage: check_slot_stores.py ORBITRUN BENCH"""
import os
import re
import subprocess
import sys
import tempfile

orbitrun, bench = sys.argv[1], sys.argv[2]
failures = 0
FAR = re.compile(r"rank (\d+): copies into rank (\d+)'s slots \(channel (\d+)\) ran at ([0-9.]+) GB/s, under a third "
                 r"of the ([0-9.]+) GB/s calibrated for the link")


def run(env_extra, size="1M", iters="40"):
    env = dict(os.environ, ORBIT_DEBUG="INFO", ORBIT_TIMEOUT="60", ORBIT_INIT_TIMEOUT="60")
    for k in ("ORBIT_SLOT_STORES", "ORBIT_CALIBRATE", "ORBIT_CMA_BYTES"):
        env.pop(k, None)
    env.update(env_extra)
    p = subprocess.run([orbitrun, "-n", "2", bench, "--size", size, "--iters", iters, "--warmup", "1", "--check"],
                       env=env, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def check(ok, what, out=None):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1
        if out:
            print(out)


with tempfile.TemporaryDirectory() as d:
    calib = os.path.join(d, "links.txt")
    rc, out = run({"ORBIT_CALIB_FILE": calib}, size="8", iters="2")
    check(rc == 0, "a first job measures the link", out)
    lines = open(calib).read().splitlines() if os.path.exists(calib) else []
    check(len(lines) == 1 and "beta_gbps=" in lines[0], f"it leaves one line in the cache ({len(lines)})", out)
    if lines:
        # 3000 GB/s, read as is from now on (3 jobs): every copy is under a third of it
        planted = re.sub(r"beta_gbps=[0-9.]+", "beta_gbps=3000.0000", lines[0])
        planted = re.sub(r"jobs=\d+", "jobs=3", planted)
        open(calib, "w").write(planted + "\n")
        rc, out = run({"ORBIT_CALIB_FILE": calib})
        check(rc == 0, "auto over a planted 3000 GB/s link: the job passes its --check", out)
        far = {int(m.group(1)): m for m in FAR.finditer(out)}
        check(sorted(far) == [0, 1], f"auto: both ranks turn to streaming stores (ranks {sorted(far)})", out)
        for r, m in far.items():
            check(int(m.group(2)) == 1 - r and float(m.group(5)) == 3000.0 and float(m.group(4)) < 1000,
                  f"rank {r}: names its peer {m.group(2)}, the calibrated 3000 GB/s and a copy under 1000 "
                  f"({m.group(4)} GB/s)")
        rc, out = run({"ORBIT_CALIB_FILE": calib, "ORBIT_SLOT_STORES": "cached"})
        check(rc == 0 and not FAR.search(out), "cached over the same line: passes, and no rank turns", out)
        rc, out = run({"ORBIT_CALIB_FILE": calib, "ORBIT_SLOT_STORES": "stream"})
        check(rc == 0 and not FAR.search(out), "stream over the same line: passes, nothing timed, no rank turns", out)
    rc, out = run({"ORBIT_CALIBRATE": "0"})
    check(rc == 0 and not FAR.search(out), "auto without a measured rate (ORBIT_CALIBRATE=0): passes, no rank turns",
          out)
    rc, out = run({"ORBIT_CALIB_FILE": "none", "ORBIT_SLOT_STORES": "fast"}, size="8", iters="2")
    msg = "ORBIT_SLOT_STORES=fast: not a way to write slots; use auto, cached or stream"
    check(rc != 0 and msg in out, f"ORBIT_SLOT_STORES=fast: init fails with \"{msg}\"", out)

print(f"{failures} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
