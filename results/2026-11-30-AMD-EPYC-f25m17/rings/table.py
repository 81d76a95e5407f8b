#!/usr/bin/env python3
"""Medians of rows-*.txt (run.sh): time per variant, new/old (of the medians, and the median of
the runs' own new/old: the runs alternate, so a slow spell of the machine meets both), and each
against Open MPI."""
import collections, statistics as st, sys
for path in sys.argv[1:]:
    rows = collections.defaultdict(list)
    byrun = {}
    for ln in open(path):
        v, c, size, t, r = ln.split()
        rows[(c, int(size), v)].append(float(t))
        byrun[(c, int(size), v, r)] = float(t)
    vs = [v for v in ('old', 'new', 'mpi') if any(k[2] == v for k in rows)]
    print(f"## {path.rsplit('/', 1)[-1]}: median us ({len(rows[next(iter(rows))])} runs a side)")
    print("| coll | size | " + " | ".join(vs) + " | new/old | pairs |" + (" old/MPI | new/MPI |" if 'mpi' in vs else ""))
    print("| --- " * (4 + len(vs) + (2 if 'mpi' in vs else 0)) + "|")
    for c, z in sorted(set((c, z) for c, z, _ in rows)):
        m = {v: st.median(rows[(c, z, v)]) for v in vs}
        runs = sorted({k[3] for k in byrun if k[:2] == (c, z)})
        pairs = [byrun[(c, z, 'new', r)] / byrun[(c, z, 'old', r)] for r in runs
                 if (c, z, 'new', r) in byrun and (c, z, 'old', r) in byrun]
        cells = [f"{m[v]:.2f}" for v in vs] + [f"{m['new'] / m['old']:.2f}", f"{st.median(pairs):.2f}"]
        if 'mpi' in vs:
            cells += [f"{m['old'] / m['mpi']:.2f}", f"{m['new'] / m['mpi']:.2f}"]
        print(f"| {c} | {z} | " + " | ".join(cells) + " |")
    print()
