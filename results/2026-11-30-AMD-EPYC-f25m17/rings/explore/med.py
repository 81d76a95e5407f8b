import sys, statistics as st, collections
rows=collections.defaultdict(list)
for ln in open(sys.argv[1]):
    s,c,size,t,r=ln.split(); rows[(c,int(size),s)].append(float(t))
cs=sorted(set((c,z) for c,z,_ in rows))
print("%-10s %6s %8s %8s %8s %8s   16/8  32/8  16/mpi 32/mpi"%("coll","size","8","16","32","mpi"))
for c,z in cs:
    m={s:st.median(rows[(c,z,s)]) for s in ('8','16','32','mpi') if rows.get((c,z,s))}
    f=lambda a,b: "%5.2f"%(m[a]/m[b]) if a in m and b in m else "  -  "
    print("%-10s %6d %8.2f %8.2f %8.2f %8.2f  %s %s %s %s"%(c,z,m.get('8',0),m.get('16',0),m.get('32',0),m.get('mpi',0),f('16','8'),f('32','8'),f('16','mpi'),f('32','mpi')))
