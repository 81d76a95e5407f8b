#!/usr/bin/env python3
# Lists every run of compare.sh dirs PREFIX-COLL under DIR with its c2c bracket (time@max ns) and
# the medians of the runs whose brackets are both under 60 ns:  near_list.py DIR PREFIX
import json,sys,glob,statistics
D=sys.argv[1]; pre=sys.argv[2]
for c in ['broadcast','scatter','gather','reduce','sendrecv']:
    d=f'{D}/{pre}-{c}'
    cores={}
    for l in open(f'{d}/runs-cores.txt'):
        b,i,x,y=l.split()[:4]; cores[(b,int(i))]=(int(x),int(y))
    for size in [8,64,512]:
        out=[]
        med={}
        for b in ['custom','mpi']:
            near=[];allr=[]
            for (bb,i),(x,y) in sorted(cores.items()):
                if bb!=b: continue
                for l in open(f'{d}/{b}.{i}.json'):
                    r=json.loads(l)
                    if r['size']==size:
                        t=r['time_us']; allr.append((t,max(x,y)))
                        if max(x,y)<60: near.append(t)
            med[b]=statistics.median(near) if near else None
            out.append(f"{b} n<60:{len(near)} med {med[b]} all {' '.join('%.3f@%d'%(t,m) for t,m in allr)}")
        r = med['custom']/med['mpi'] if med['custom'] and med['mpi'] else None
        print(c,size,'ratio(<60ns) %.2f'%r if r else '-', '|', ' | '.join(out))
