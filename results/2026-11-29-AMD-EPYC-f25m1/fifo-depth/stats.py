#!/usr/bin/env python3
"""usage: stats.py OUT. Medians of OUT/rows.txt per (n, coll, size) for the default (8 slots) and B
(OUT/config.txt), and the B/default ratio of time (below 1: B faster), with the median of the run pairs' ratios too."""
import collections, os, statistics, sys
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), sys.argv[1] if len(sys.argv) > 1 else "s16")
t = collections.defaultdict(dict)
for line in open(os.path.join(here, "rows.txt")):
    s, n, c, size, tm, bw, r = line.split()
    t[(int(n), c, int(size))].setdefault(int(s), {})[int(r)] = float(tm)
print(f"{'n':>2} {'coll':<15} {'size':>9} {'default us':>11} {'B us':>11} {'B/def':>6} {'pairs':>6}")
for (n, c, size) in sorted(t, key=lambda k: (k[0], k[1], k[2])):
    other = [k for k in t[(n, c, size)] if k != (8 if 8 in t[(n, c, size)] else 0)]
    base = 8 if 8 in t[(n, c, size)] else 0
    a, b = t[(n, c, size)].get(base, {}), t[(n, c, size)].get(other[0], {}) if other else {}
    if not a or not b:
        continue
    ma, mb = statistics.median(a.values()), statistics.median(b.values())
    pairs = [b[r] / a[r] for r in a if r in b and a[r] > 0]
    print(f"{n:>2} {c:<15} {size:>9} {ma:>11.2f} {mb:>11.2f} {mb / ma:>6.2f} {statistics.median(pairs):>6.2f}")
