#!/usr/bin/env python3
"""bench/ratio_table.py against figures worked out by hand: a suite folder made here (three
alternating runs a backend, as bench/compare.sh leaves them: custom.N.json, mpi.N.json and
runs-cores.txt), one orbit run and one Open MPI run far (c2c brackets over 150 ns), each far run
the slowest of its kind. The table over every run, and with --near 150 over the near ones only,
must give the ratios below; a bad --near names itself. Usage: check_ratio_table.py RATIO_TABLE_PY"""
import json
import os
import re
import subprocess
import sys
import tempfile

tool = sys.argv[1]
S = 16 << 20
# times in us: 16 MiB, then 8 B (out-of-place rows; busbw of an all-reduce at 2 ranks = algbw)
custom = {1: (100.0, 0.2), 2: (110.0, 0.3), 3: (400.0, 5.0)}  # run 3 far
mpi = {1: (300.0, 1.0), 2: (200.0, 0.1), 3: (210.0, 0.2)}     # run 1 far
far = {("custom", 3), ("mpi", 1)}
# every run: orbit medians 110 / 0.3, Open MPI 210 / 0.2 -> busbw 210/110, time 0.3/0.2
# near runs: orbit 105 / 0.25, Open MPI 205 / 0.15 -> busbw 205/105, time 0.25/0.15
want_all = (f"{210 / 110:.2f}x", f"{0.3 / 0.2:.2f}x")
want_near = (f"{205 / 105:.2f}x", f"{0.25 / 0.15:.2f}x")


def row(size, t):
    return {"coll": "allreduce", "size": size, "count": size // 4, "dtype": "float32", "nranks": 2,
            "inplace": False, "time_us": t, "algbw": size / t / 1e3, "busbw": size / t / 1e3}


def table(d, *extra):
    r = subprocess.run([sys.executable, tool, *extra, d], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        sys.exit("FAIL: ratio_table.py %s exited %d" % (" ".join(extra), r.returncode))
    line = [l for l in r.stdout.splitlines() if l.startswith("allreduce ")]
    if len(line) != 1:
        print(r.stdout)
        sys.exit("FAIL: no allreduce row")
    return line[0]


def check(line, want, what):
    f = line.split()
    # allreduce, five large sizes (only 16 MiB measured), the small-size ratio, its size (2 words)
    if f[1:6] != ["-", "-", "-", want[0], "-"] or f[6] != want[1] or f[7:9] != ["8", "B"]:
        sys.exit("FAIL (%s): got %r, want 16 MiB %s and 8 B time %s" % (what, line, want[0], want[1]))
    print("%s: %s" % (what, line))


with tempfile.TemporaryDirectory() as d:
    folder = os.path.join(d, "2-allreduce")
    os.mkdir(folder)
    for backend, runs in (("custom", custom), ("mpi", mpi)):
        for n, (t_large, t_small) in runs.items():
            with open(os.path.join(folder, "%s.%d.json" % (backend, n)), "w") as f:
                f.write(json.dumps(row(S, t_large)) + "\n" + json.dumps(row(8, t_small)) + "\n")
    with open(os.path.join(folder, "runs-cores.txt"), "w") as f:
        for backend in ("custom", "mpi"):
            for n in (1, 2, 3):
                ns = 330 if (backend, n) in far else 55
                f.write("%s %d %d %d\n" % (backend, n, ns, 56))
    check(table(d), want_all, "every run")
    line = table(d, "--near", "150")
    check(line, want_near, "near runs")
    if not re.search(r"\b2/3 2/3$", line):
        sys.exit("FAIL: the runs column should say 2/3 2/3 (kept / made): %r" % line)
    r = subprocess.run([sys.executable, tool, "--near", "x", d], capture_output=True, text=True)
    if r.returncode != 2 or "--near takes a positive number" not in r.stderr:
        sys.exit("FAIL: --near x gave %d, %r" % (r.returncode, r.stderr))
print("ratio_table.py: medians over every run and over the near runs as worked out by hand")
