# Per size: median and minimum time of each build, the median of the run pairs' new/old, from
# compare_builds.sh -o DIR (old.N.json, new.N.json). Usage: python3 stats.py DIR...
import glob, json, re, statistics, sys
def load(f):
    rows = {}
    for line in open(f):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        rows[j.get('bytes', j.get('size'))] = j.get('time_us', j.get('time'))
    return rows
for d in sys.argv[1:]:
    reps = sorted(int(re.search(r'\.(\d+)\.json', f).group(1)) for f in glob.glob(d + '/old.*.json'))
    old = {}; new = {}; pair = {}
    for i in reps:
        o = load(f'{d}/old.{i}.json'); n = load(f'{d}/new.{i}.json')
        for s in o:
            if s in n:
                old.setdefault(s, []).append(o[s]); new.setdefault(s, []).append(n[s]); pair.setdefault(s, []).append(n[s] / o[s])
    for s in sorted(pair):
        print('%-28s %6d B  median %.3f / %.3f = %.2f   min %.3f / %.3f = %.2f   pairs %.2f' % (
            d.rstrip('/').split('/')[-1], s, statistics.median(old[s]), statistics.median(new[s]),
            statistics.median(new[s]) / statistics.median(old[s]), min(old[s]), min(new[s]), min(new[s]) / min(old[s]),
            statistics.median(pair[s])))
