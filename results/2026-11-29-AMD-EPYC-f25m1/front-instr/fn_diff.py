import subprocess,re,sys
def load(f,incl):
    out=subprocess.run(['callgrind_annotate','--threshold=100','--inclusive='+incl,f],capture_output=True,text=True).stdout
    d={}
    for l in out.splitlines():
        m=re.match(r'\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$',l)
        if m and ':' in m.group(2):
            d[m.group(2)]=int(m.group(1).replace(',',''))
    return d
a,b,n,incl=sys.argv[1],sys.argv[2],int(sys.argv[3]),sys.argv[4]
A=load(a,incl);B=load(b,incl)
rows=sorted(((B.get(k,0)-A.get(k,0))/n,k) for k in set(A)|set(B))
for v,k in reversed(rows):
    if abs(v)>=8: print(f"{v:8.0f}  {k[:150]}")
