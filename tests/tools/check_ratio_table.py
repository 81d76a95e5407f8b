#!/usr/bin/env python3
"""bench/ratio_table.py against figures worked out by hand: a suite folder made here (three
alternating runs a backend, as bench/compare.sh leaves them: custom.N.json, mpi.N.json and
runs-cores.txt), one orbit run and one Open MPI run far (c2c brackets over 150 ns), each far run
the slowest of its kind. The table over every run, and with --near 150 over the near ones only,
must give the ratios below; a bad --near names itself. With a bench/membw output beside it, the
shares of the memory bound at 16 MiB and up, orbit's and Open MPI's, and the ceiling that Open
MPI's share puts on orbit/MPI, for collectives of each traffic model (all-reduce and all-to-all:
the copy mix of the whole buffer; reduce-scatter: the a+b->c mix of a rank's block), and no line
for a rooted collective (scatter); of two membw outputs, the best figure of each counts. With
--windows, the 2w-* folders only (orbit's buffers from orb_mem_alloc), and never without.
Usage: check_ratio_table.py RATIO_TABLE_PY"""
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


def row(size, t, coll="allreduce"):
    return {"coll": coll, "size": size, "count": size // 4, "dtype": "float32", "nranks": 2,
            "inplace": False, "time_us": t, "algbw": size / t / 1e3, "busbw": size / t / 1e3}


def run(d, *extra, membw=()):
    r = subprocess.run([sys.executable, tool, *extra, d, *membw], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        sys.exit("FAIL: ratio_table.py %s exited %d" % (" ".join(extra), r.returncode))
    return r.stdout


def table(d, *extra):
    out = run(d, *extra)
    line = [l for l in out.splitlines() if l.startswith("allreduce ")]
    if len(line) != 1:
        print(out)
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
    # the memory bound: copy 4 GB/s, a+b->c 2 GB/s a thread (bytes written a second)
    # (a slower run first, copy 2 and a+b->c 3: the best of each figure counts)
    slow, membw = os.path.join(d, "0-membw-before.txt"), os.path.join(d, "8-membw.txt")
    with open(slow, "w") as f:
        f.write("copy_gbps 2.000  (traffic 4.000 GB/s per thread)\nadd_gbps 3.000  (traffic 9.000 GB/s per thread)\n")
    with open(membw, "w") as f:
        f.write("copy_gbps 4.000  (traffic 8.000 GB/s per thread)\nadd_gbps 2.000  (traffic 6.000 GB/s per thread)\n")
    M = 64 << 20
    for coll, t_orbit, t_mpi in (("alltoall", 20000.0, 25000.0), ("reduce_scatter", 10000.0, 40000.0),
                                 ("scatter", 10000.0, 20000.0)):
        folder = os.path.join(d, "2-" + coll)
        os.mkdir(folder)
        for backend, t in (("custom", t_orbit), ("mpi", t_mpi)):
            with open(os.path.join(folder, "%s.1.json" % backend), "w") as f:
                f.write(json.dumps(row(M, t, coll)) + "\n")
    out = run(d, membw=(slow, membw))
    if "copy 4.00 GB/s, a+b->c 3.00 GB/s (the best of 2 runs)" not in out:
        print(out)
        sys.exit("FAIL: the bound should take the best of each membw figure: copy 4.00, a+b->c 3.00, of 2 runs")
    # all-reduce 16 MiB: t >= S / copy = 4194.3 us, orbit 110 us and Open MPI 210 us (the caches serve)
    # all-to-all 64 MiB: t >= S / copy = 16777.2 us: orbit 84%, Open MPI 67%, ceiling 25000 / 16777.2
    # reduce-scatter 64 MiB at 2 ranks: t >= S/2 / add = 11184.8 us: orbit 112% (the caches: no ceiling), Open MPI 28%
    tb_ar, tb_aa, tb_rs = S / 4e3, M / 4e3, M / 2 / 3e3  # the bound times in us (copy 4, a+b->c 3)
    # a row's busbw here is its algbw (row()); the bound's busbw is that scaled by t / tb
    want = [f"allreduce 16 MiB: bound {S / tb_ar / 1e3:.2f} GB/s busbw; orbit {S / 110 / 1e3:.2f} GB/s, "
            f"{tb_ar / 110 * 100:.0f}%; Open MPI {S / 210 / 1e3:.2f} GB/s, {tb_ar / 210 * 100:.0f}%: the caches serve it",
            f"alltoall 64 MiB: bound {M / tb_aa / 1e3:.2f} GB/s busbw; orbit {M / 2e4 / 1e3:.2f} GB/s, 84%; "
            f"Open MPI {M / 2.5e4 / 1e3:.2f} GB/s, 67%: orbit/MPI at most {2.5e4 / tb_aa:.2f}x",
            f"reduce_scatter 64 MiB: bound {M / tb_rs / 1e3:.2f} GB/s busbw; orbit {M / 1e4 / 1e3:.2f} GB/s, 112%; "
            f"Open MPI {M / 4e4 / 1e3:.2f} GB/s, 28%: the caches serve it, no ceiling"]
    if "  scatter " in out:
        print(out)
        sys.exit("FAIL: the memory bound: a rooted collective (scatter) has a line")
    for w in want:
        if w not in out:
            print(out)
            sys.exit("FAIL: the memory bound: no line has %r" % w)
    print("memory bound:", *want, sep="\n  ")
    r = subprocess.run([sys.executable, tool, "--near", "x", d], capture_output=True, text=True)
    if r.returncode != 2 or "--near takes a positive number" not in r.stderr:
        sys.exit("FAIL: --near x gave %d, %r" % (r.returncode, r.stderr))
    # --windows reads the 2w-* folders only (orbit from its windows), the default table never them
    folder = os.path.join(d, "2w-allreduce")
    os.mkdir(folder)
    for backend, runs in (("custom", {1: (50.0, 0.2), 2: (60.0, 0.2), 3: (55.0, 0.2)}), ("mpi", mpi)):
        for n, (t_large, t_small) in runs.items():
            with open(os.path.join(folder, "%s.%d.json" % (backend, n)), "w") as f:
                f.write(json.dumps(row(S, t_large)) + "\n" + json.dumps(row(8, t_small)) + "\n")
    check(table(d), want_all, "every run, a 2w folder beside")
    check(table(d, "--windows"), (f"{210 / 55:.2f}x", f"{0.2 / 0.2:.2f}x"), "--windows")
    if "its windows" not in run(d, "--windows"):
        sys.exit("FAIL: --windows does not say orbit's buffers came from its windows")
print("ratio_table.py: medians over every run and over the near runs as worked out by hand")
