#!/usr/bin/env bash
# ab.sh REPS SIZES "NAME:BUILD:ENV..." ... : alternating orbit-only TCP runs between 2 netns; median busbw/time per config
# (VARIANT=--inplace for the in-place calls, tcp-inplace/; the default, --no-inplace, made tcp-direct/)
reps=$1 sizes=$2; shift 2
cd /work/main
. tests/net/netns_lib.sh
orbtest_setup 2 || exit 1
out=/tmp/np/ab.$$; mkdir -p $out
cfgs=("$@")
for ((r=1;r<=reps;r++)); do
  for ((i=0;i<${#cfgs[@]};i++)); do
    c=${cfgs[$(((i+r-1)%${#cfgs[@]}))]}
    name=${c%%:*}; rest=${c#*:}; build=${rest%%:*}; envs=${rest#*:}
    orbtest_job torchrun 1 600 $out/$name.$r $envs -- $build/bench/${COLL:-allreduce}_bench --backend custom --size $sizes --factor ${FACTOR:-8} --iters ${ITERS:-50} ${VARIANT:---no-inplace} --json $out/$name.$r.json || echo "run $name $r failed" >&2
  done
done
python3 - "$out" "${cfgs[@]}" <<'PY'
import json,sys,glob,statistics as st
out=sys.argv[1]; names=[c.split(':')[0] for c in sys.argv[2:]]
d={}
for n in names:
    for f in glob.glob(f"{out}/{n}.*.json"):
        for line in open(f):
            j=json.loads(line); d.setdefault((n,j['size']),[]).append((j['time_us'],j['busbw']))
sizes=sorted({s for (_,s) in d})
print("%10s "%"bytes"+" ".join("%22s"%n for n in names))
for s in sizes:
    row=[]
    for n in names:
        v=d.get((n,s),[])
        if not v: row.append("%22s"%"-"); continue
        t=st.median(x[0] for x in v); b=st.median(x[1] for x in v)
        row.append("%9.1fus %6.3fGB/s"%(t,b) + "")
    print("%10d "%s+" ".join(row))
for s in sizes:
    v0=[x[0] for x in d.get((names[0],s),[])]
    print("%10d runs(us): "%s + " | ".join(n+": "+" ".join("%.0f"%x[0] for x in d.get((n,s),[])) for n in names))
PY
