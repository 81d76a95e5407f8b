import subprocess,re,sys
# instructions a call, less the general loop's passes (one_pass: polls while waiting), from two callgrind files
def load(f):
    out=subprocess.run(['callgrind_annotate','--threshold=100','--inclusive=yes',f],capture_output=True,text=True).stdout
    d={}
    for l in out.splitlines():
        m=re.match(r'\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$',l)
        if m and ':' in m.group(2):
            k=m.group(2).split(' [')[0].split(':',1)[1]
            d[k]=d.get(k,0)+int(m.group(1).replace(',',''))
    return d
a,b=load(sys.argv[1]),load(sys.argv[2]); n=int(sys.argv[3])
f=lambda k:(b.get(k,0)-a.get(k,0))/n
print(f"{f('custom_run'):.0f} total, {f('one_pass.constprop.0'):.0f} in one_pass, {f('custom_run')-f('one_pass.constprop.0'):.0f} without")
