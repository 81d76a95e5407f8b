#!/usr/bin/env python3
"""A compare_builds.sh -o folder, its runs split by their bench/c2c brackets: near (both
under 150 ns), far (both over 250 ns), the rest left out. Per size: median time old / new
and new/old, in each group, with how many runs counted. usage: split.py DIR [inplace]"""
import glob, json, os, statistics, sys
d = sys.argv[1]; inplace = len(sys.argv) > 2
br = {}
for line in open(os.path.join(d, "runs-cores.txt")):
    w, r, a, b = line.split()
    br[(w, r)] = None if "-" in (a, b) else (int(a), int(b))
def group(w, r):
    x = br.get((w, r))
    if not x: return None
    return "near" if max(x) < 150 else "far" if min(x) > 250 else None
rows = {}
for p in glob.glob(os.path.join(d, "*.json")):
    w, r = os.path.basename(p).split(".")[:2]
    g = group(w, r)
    if not g: continue
    for l in open(p):
        j = json.loads(l)
        if j["inplace"] != inplace: continue
        rows.setdefault((g, j["size"]), {}).setdefault(w, []).append(j["time_us"])
for g in ("near", "far"):
    sizes = sorted(s for (gg, s) in rows if gg == g)
    if not sizes: print(f"# {g}: no runs"); continue
    print(f"# {g} runs ({'in place' if inplace else 'out of place'}): size  old us (n)  new us (n)  new/old")
    for s in sizes:
        o, n = rows[(g, s)].get("old", []), rows[(g, s)].get("new", [])
        if o and n:
            mo, mn = statistics.median(o), statistics.median(n)
            print(f"  {s:>10} {mo:>10.1f} ({len(o)}) {mn:>10.1f} ({len(n)})  {mn/mo:6.2f}")
