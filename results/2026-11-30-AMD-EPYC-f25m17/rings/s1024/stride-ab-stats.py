import collections, statistics as st, sys
rows=collections.defaultdict(dict)
for ln in open('/tmp/sx/rows.txt'):
    v,c,z,t,r=ln.split(); rows[(c,int(z))].setdefault(v,{})[r]=float(t)
for k in sorted(rows):
    d=rows[k]; vs=sorted(d)
    med={v:st.median(d[v].values()) for v in vs}
    pr=lambda a,b: st.median([d[a][r]/d[b][r] for r in d[a] if r in d[b]])
    print(k, ' '.join('%s=%.3f'%(v,med[v]) for v in vs), ' '.join('%s/%s=%.3f'%(a,b,pr(a,b)) for a in vs for b in vs if a<b))
