import json,sys,glob,statistics,os
# summ.py DIR...: per folder of compare_builds.sh JSON (old.N.json, new.N.json), median out-of-place time per size and new/old
for d in sys.argv[1:]:
    t={'old':{},'new':{}}
    for side in t:
        for f in sorted(glob.glob(os.path.join(d,side+'.*.json'))):
            txt=open(f).read()
            for line in txt.splitlines():
                line=line.strip().rstrip(',')
                if not line.startswith('{'): continue
                try: r=json.loads(line)
                except Exception: continue
                if 'size' in r and 'time_us' in r and not r.get('inplace'):
                    t[side].setdefault(r['size'],[]).append(r['time_us'])
    print('#',d)
    for s in sorted(t['old']):
        o=statistics.median(t['old'][s]); n=statistics.median(t['new'].get(s,[float('nan')]))
        print(f"{s:>8} {o:8.2f} {n:8.2f} {n/o:6.3f}  runs {len(t['old'][s])}/{len(t['new'].get(s,[]))}")
