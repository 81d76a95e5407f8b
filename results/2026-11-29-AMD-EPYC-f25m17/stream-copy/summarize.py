"""Medians of ab.sh's output: per collective and size, new/old algbw out-of-place and in-place,
over the runs whose c2c brackets both say near (< 150 ns; with --far: both far, >= 250 ns),
and the count of such runs. Usage: summarize.py AB_OUTPUT [--far]"""
import collections, statistics, sys

far = '--far' in sys.argv[2:]
near = {}
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith('#'):
        b, a = int(f[7]), int(f[9])
        near[(f[1], f[2], f[4])] = (b >= 250 and a >= 250) if far else (b < 150 and a < 150)
        continue
    rows[(f[0], f[1], f[2])].append(f)
agg = collections.defaultdict(lambda: collections.defaultdict(list))
for (c, g, r), fs in rows.items():
    if not near.get((c, g, r)):
        continue
    for f in fs:
        oop = float(f[6]); ip = float(f[8]) if f[8] != 'N/A' else None
        agg[(c, int(f[4]))][g].append((oop, ip))
print("%-15s %9s %6s %6s %7s  %6s %6s %7s  runs" % ("collective", "bytes", "new", "old", "new/old", "new ip", "old ip", "ip"))
for (c, size) in sorted(agg):
    d = agg[(c, size)]
    if not d['new'] or not d['old']:
        continue
    med = lambda g, i: statistics.median(x[i] for x in d[g]) if d[g][0][i] is not None else float('nan')
    n, o, ni, oi = med('new', 0), med('old', 0), med('new', 1), med('old', 1)
    print("%-15s %9d %6.2f %6.2f %6.2fx  %6.2f %6.2f %6.2fx  %d/%d" % (c, size, n, o, n / o, ni, oi, ni / oi if oi == oi and oi else float('nan'), len(d['new']), len(d['old'])))
