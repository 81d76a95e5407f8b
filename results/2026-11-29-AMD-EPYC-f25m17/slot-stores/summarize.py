#!/usr/bin/env python3
"""Medians of ab.sh rows: per collective and size, cached against auto, only runs whose
c2c round trip before and after agree on the placement (near: both under 150 ns; far: both
over). usage: summarize.py FILE near|far"""
import re, statistics, sys
sizes = ["256K", "1M", "4M", "16M", "64M"]
want = sys.argv[2]
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"\d+ (\w+) (cached|auto) rt_before=(\d+) rt_after=(\d+) us: (.*)", line)
    if not m:
        continue
    c, mode, a, b, ts = m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), m.group(5).split()
    place = "near" if a < 150 and b < 150 else "far" if a > 150 and b > 150 else "mixed"
    if place != want or len(ts) != len(sizes):
        continue
    rows.setdefault((c, mode), []).append([float(t) for t in ts])
print(f"# {want}: median us (runs), cached -> auto, auto/cached")
for c in sorted(set(k[0] for k in rows)):
    a, b = rows.get((c, "cached"), []), rows.get((c, "auto"), [])
    if not a or not b:
        continue
    cells = []
    for i, s in enumerate(sizes):
        x, y = statistics.median(r[i] for r in a), statistics.median(r[i] for r in b)
        cells.append(f"{s} {x:.0f}->{y:.0f} ({y / x:.2f})")
    print(f"{c:10s} [{len(a)}/{len(b)}] " + "  ".join(cells))
