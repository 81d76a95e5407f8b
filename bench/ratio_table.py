#!/usr/bin/env python3
"""Where orbit stands against Open MPI on this machine, in one table (the last thing
bench/host_suite.sh prints): for every collective the suite ran, the medians of its
alternating runs (bench/compare.sh folders: custom.N.json and mpi.N.json, nccl-tests rows),
as orbit/MPI busbw at the large sizes (above 1: orbit ahead; goal 1.5) and orbit/MPI time at
8 B-4 KiB (the worst size; below 1: orbit ahead; goal 1), out-of-place. From 16 MiB on, the
collectives in which every rank does the same work, orbit's busbw and Open MPI's, also as a
share of the memory bound (goal for all-reduce and reduce-scatter: 90%), from bench/membw's
copy and a+b->c run on as many threads as there are ranks (they share the memory). The bound is
the time a rank's least memory traffic takes at those rates; the slots or pages between ranks
stay in the caches, and what a rank sends, it reads from memory itself:

  copy mix (one byte read per byte written, t >= bytes written / copy): all-reduce (reads S,
  writes S), all-gather, all-to-all and send/recv (each writes S, the whole output, and reads
  as much: its own block to keep and the blocks it sends).
  a+b->c mix (two bytes read per byte written, t >= bytes written / add): reduce-scatter at
  n = 2 (reads S, writes S/2); above 2 ranks the reads dominate and the bound, still bytes
  written / add, understates them (looser).

Rooted collectives get no line: their ranks split the work unevenly, and the others can do
part of the root's reading (a broadcast's root reads into the slots, its receivers only write),
so no one rank's traffic bounds the call. The bound busbw is the measured busbw scaled by
t_measured / t_bound. Open MPI's share says how far orbit can get ahead of it at that size: at
most 1 / share if orbit reached the bound (a goal of 1.5x Open MPI cannot be met where Open MPI
is above 67% of the bound). membw's arrays are larger than the caches: where a call's buffers
still fit in them, a share above 100%, orbit's or Open MPI's, says the memory is not what
bounds it there, and the line says so instead of a ceiling.

With --near NS only the runs whose bench/c2c brackets (runs-cores.txt, compare.sh) are both
under NS ns count, orbit's and Open MPI's alike: a VM's two vCPUs spend spells on cores that
share no cache, where shared-memory figures fall 2-4x while Open MPI's single copies do not,
and a median over three runs then says more about the spells than about the code. The 'runs'
column gives the runs kept of those made (orbit / Open MPI); folders without brackets keep all.

With --windows the table is made of the 2w-* folders instead: orbit's buffers from its
windows (orb_mem_alloc, read in place by the peer), Open MPI's from malloc (host_suite.sh 2w).

usage: ratio_table.py [--windows] [--near NS] SUITE_OUT_DIR [MEMBW_OUTPUT...]   (the best figures of them count)
"""
import glob
import json
import os
import re
import statistics
import sys

LARGE = [256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
SMALL_MAX = 4096


def label(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def brackets(folder):
    """(backend, run) -> (ns before, ns after) from compare.sh's runs-cores.txt ({} without it)."""
    out = {}
    try:
        for line in open(os.path.join(folder, "runs-cores.txt")):
            f = line.split()
            if len(f) >= 4 and f[1].isdigit() and f[2].isdigit() and f[3].isdigit():
                out[(f[0], int(f[1]))] = (int(f[2]), int(f[3]))
    except OSError:
        pass
    return out


def load(folder, near=0, counts=None):
    """(backend, size, inplace) -> list of (time_us, busbw); also nranks. near > 0: only the runs
    whose brackets are both under near ns (all of a folder that has none); counts[backend] gets
    [kept, made] runs added."""
    rows, nranks = {}, None
    br = brackets(folder) if near > 0 else {}
    for path in glob.glob(os.path.join(folder, "*.json")):
        parts = os.path.basename(path).split(".")
        backend = parts[0]
        run = int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 0
        keep = not br or max(br.get((backend, run), (near, near))) < near
        if counts is not None:
            k = counts.setdefault(backend, [0, 0])
            k[0] += keep
            k[1] += 1
        if not keep:
            continue
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                nranks = r["nranks"]
                rows.setdefault((backend, r["size"], r["inplace"]), []).append((r["time_us"], r["busbw"]))
    return rows, nranks


def median_row(vals):
    t = statistics.median(v[0] for v in vals)
    return t, (vals[0][1] * vals[0][0] / t if t > 0 else 0.0)


def membw(paths):
    """The best copy and a+b->c figures of the bench/membw outputs given (a VM's memory moves
    with its neighbours' load, 1.7x between a suite's start and end on the Intel VM: the
    fastest state seen makes the strictest bound, for the 90% goal and for the ceilings
    alike), and how many of the files had both; None without any."""
    best, n = None, 0
    for path in paths:
        if not os.path.exists(path):
            continue
        text = open(path).read()
        c = re.search(r"^copy_gbps ([0-9.]+)", text, re.M)
        a = re.search(r"^add_gbps ([0-9.]+)", text, re.M)
        if c and a:
            n += 1
            f = (float(c.group(1)), float(a.group(1)))
            best = f if not best else (max(best[0], f[0]), max(best[1], f[1]))
    return (best[0], best[1], n) if best else None


COPY_MIX = ("allreduce", "allgather", "alltoall", "sendrecv")


def bound_time_us(coll, size, n, bw):
    """The least time a rank's memory traffic takes (module doc); None for a rooted collective
    or one it does not know."""
    copy, add = bw[0], bw[1]
    if coll in COPY_MIX:
        return size / (copy * 1e3)
    if coll == "reduce_scatter":
        return size / n / (add * 1e3)
    return None


def cores(folders):
    """The c2c round trips compare.sh left in the folders (runs-cores.txt, around each run; folders
    from before 2026-11-29 15:50 have host_suite.sh's cores.txt, around the collective): 'lo-hi'
    ns, or '-'."""
    ns = []
    for d in folders:
        try:
            ns += [int(x) for x in re.findall(r"c2c_ns (\d+)", open(os.path.join(d, "cores.txt")).read())]
        except OSError:
            pass
        try:
            ns += [int(x) for line in open(os.path.join(d, "runs-cores.txt")) for x in line.split()[2:4] if x.isdigit()]
        except OSError:
            pass
    return "-" if not ns else f"{min(ns)}" if min(ns) == max(ns) else f"{min(ns)}-{max(ns)}"


def main():
    args, near, windows = sys.argv[1:], 0, False
    if args[:1] == ["--windows"]:
        windows, args = True, args[1:]
    if args[:1] == ["--near"]:
        if len(args) < 2 or not args[1].isdigit() or int(args[1]) <= 0:
            print("ratio_table: --near takes a positive number of ns", file=sys.stderr)
            return 2
        near, args = int(args[1]), args[2:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    out, bw = args[0], membw(args[1:])
    # every compare.sh folder of the suite: collective -> folders (the sizes split over them)
    by_coll = {}
    for d in sorted(glob.glob(os.path.join(out, "*"))):
        m = re.match(r"^2w-(\w+)$" if windows else r"^(?:1|2|2b)-(\w+)$", os.path.basename(d))
        if m and os.path.isdir(d):
            by_coll.setdefault(m.group(1), []).append(d)
    if not by_coll:
        print(f"ratio_table: no collective folders ({'2w-*' if windows else '1-*, 2-*, 2b-*'}) under {out}",
              file=sys.stderr)
        return 1
    print("# orbit / Open MPI, 2 ranks, float32, out-of-place, medians of alternating runs"
          + (" (orbit's buffers from orb_mem_alloc, its windows; Open MPI's from malloc)" if windows else "")
          + (f" whose c2c brackets are both under {near} ns ('runs': kept / made, orbit and Open MPI)" if near else ""))
    print("# busbw ratio at each large size (goal >= 1.5); time ratio: the worst of 8 B-4 KiB (goal <= 1)")
    if bw:
        print(f"# memory bound from bench/membw on this machine: copy {bw[0]:.2f} GB/s, a+b->c {bw[1]:.2f} GB/s "
              + (f"(the best of {bw[2]} runs) " if bw[2] > 1 else "") + "a thread with one per rank running; a share of the bound = busbw / bound busbw (goal >= 90% from 16 MiB "
              "for all-reduce and reduce-scatter)")
    print("# cores ns: bench/c2c's round trip between the two CPUs before and after the collective's runs, and each run "
          "(tens of ns: they share a cache; several times that: they do not, and shared-memory figures move with it)")
    head = (f"{'collective':<15}" + "".join(f"{label(s):>10}" for s in LARGE) + f"{'8B-4KiB time':>14}{'worst at':>10}"
            + f"{'cores ns':>12}" + (f"{'runs':>14}" if near else ""))
    print(head)
    bound_lines = []
    for coll in sorted(by_coll):
        rows, n, counts = {}, None, {}
        for d in by_coll[coll]:
            r, nr = load(d, near, counts)
            rows.update(r)
            n = nr or n
        cells = []
        for s in LARGE:
            c, m = rows.get(("custom", s, False)), rows.get(("mpi", s, False))
            if c and m:
                cb, mb = median_row(c)[1], median_row(m)[1]
                cells.append(f"{cb / mb:>9.2f}x" if mb > 0 else f"{'-':>10}")
            else:
                cells.append(f"{'-':>10}")
            tb = bound_time_us(coll, s, n, bw) if bw and c and s >= 16 << 20 else None
            if tb:
                t, b = median_row(c)
                line = (f"  {coll} {label(s)}: bound {b * t / tb:.2f} GB/s busbw; orbit {b:.2f} GB/s, "
                        f"{tb / t * 100:.0f}%")
                if m:
                    mt, mb = median_row(m)
                    line += f"; Open MPI {mb:.2f} GB/s, {tb / mt * 100:.0f}%: " + (
                        f"orbit/MPI at most {mt / tb:.2f}x" if mt >= tb and t >= tb else "the caches serve it, no ceiling")
                bound_lines.append(line)
        worst, at = None, None
        for (backend, s, ip), vals in rows.items():
            if backend != "custom" or ip or s > SMALL_MAX:
                continue
            m = rows.get(("mpi", s, False))
            if not m:
                continue
            ratio = median_row(vals)[0] / median_row(m)[0]
            if worst is None or ratio > worst:
                worst, at = ratio, s
        small = f"{worst:>13.2f}x{label(at):>10}" if worst is not None else f"{'-':>14}{'':>10}"
        kept = ""
        if near:
            c, m = counts.get("custom", [0, 0]), counts.get("mpi", [0, 0])
            kept = f"{f'{c[0]}/{c[1]} {m[0]}/{m[1]}':>14}"
        print(f"{coll:<15}" + "".join(cells) + small + f"{cores(by_coll[coll]):>12}" + kept)
    if bound_lines:
        print("# against the memory bound (a rank's least traffic at membw's rates; module doc):")
        print("\n".join(bound_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
