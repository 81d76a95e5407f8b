import sys, statistics as st, collections
rows=collections.defaultdict(list)
for ln in open(sys.argv[1]):
    s,c,size,t,r=ln.split(); rows[(c,int(size),s)].append(float(t))
vs=['8x256','32x64','16x128','32x256']
cs=sorted(set((c,z) for c,z,_ in rows))
print("%-10s %9s"%("coll","size")+"".join("%10s"%v for v in vs)+"   ratios to 8x256 (n)")
for c,z in cs:
    m={s:st.median(rows[(c,z,s)]) for s in vs if rows.get((c,z,s))}
    print("%-10s %9d"%(c,z)+"".join("%10.1f"%m.get(v,0) for v in vs)+"   "+" ".join("%5.2f"%(m[v]/m['8x256']) if v in m else '-' for v in vs[1:])+"  (%d)"%len(rows[(c,z,'8x256')]))
