import sys, statistics as st, collections
rows=collections.defaultdict(list)
for ln in open(sys.argv[1]):
    s,c,size,t,r=ln.split(); rows[(c,int(size),s)].append(float(t))
cs=sorted(set((c,z) for c,z,_ in rows))
vs=('s0','s16','s32','s64','mpi')
print("%-10s %6s"%("coll","size")+"".join("%8s"%v for v in vs)+"   ratios to s0 | to mpi")
for c,z in cs:
    m={s:st.median(rows[(c,z,s)]) for s in vs if rows.get((c,z,s))}
    print("%-10s %6d"%(c,z)+"".join("%8.2f"%m.get(v,0) for v in vs)+"   "+" ".join("%5.2f"%(m[v]/m['s0']) for v in vs[1:4] if v in m)+" | "+" ".join("%5.2f"%(m[v]/m['mpi']) for v in vs[:4] if v in m))
