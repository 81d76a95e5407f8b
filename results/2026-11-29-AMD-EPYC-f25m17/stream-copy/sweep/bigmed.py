import sys, collections, statistics
d=collections.defaultdict(list); c2c=[]
for line in open(sys.argv[1]):
    f=line.split()
    if f[0]=='c2c': c2c.append(f[1]); continue
    d[(int(f[1]),f[0])].append((float(f[2]),float(f[3]) if f[3]!='N/A' else 0))
for k in sorted(d):
    v=d[k]; print(k[0], k[1], "oop %.2f ip %.2f" % (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)), " ".join("%.1f"%x[0] for x in v))
print("c2c", " ".join(c2c))
