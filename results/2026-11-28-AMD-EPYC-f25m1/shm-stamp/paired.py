import glob, json, sys, statistics, re, os
d=sys.argv[1]
def load(f):
    rows={}
    for line in open(f):
        try: j=json.loads(line)
        except: continue
        if j.get('inplace') in (1,True) and 'noinp' in sys.argv: continue
        rows[j['bytes'] if 'bytes' in j else j.get('size')]=j.get('time_us', j.get('time'))
    return rows
reps=sorted(int(re.search(r'\.(\d+)\.json',f).group(1)) for f in glob.glob(d+'/old.*.json'))
sizes=None; rat={}
for i in reps:
    o=load(f'{d}/old.{i}.json'); n=load(f'{d}/new.{i}.json')
    for s in o:
        if s in n: rat.setdefault(s,[]).append(n[s]/o[s])
for s in sorted(rat): print(s, 'paired new/old median %.3f'%statistics.median(rat[s]), ' '.join('%.2f'%r for r in rat[s]))
