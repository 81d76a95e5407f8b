#!/usr/bin/env bash
# ab_shm.sh COLL REPS SIZES "NAME:ENV ..." ... : alternating 2-rank shm runs of one build with several
# settings; median time per config (for two settings bench/compare_builds.sh -E is the kept tool)
coll=$1 reps=$2 sizes=$3; shift 3
out=/tmp/s1/ab/$coll.$$; mkdir -p $out
cfgs=("$@")
for ((r=1;r<=reps;r++)); do
  for ((i=0;i<${#cfgs[@]};i++)); do
    c=${cfgs[$(((i+r-1)%${#cfgs[@]}))]}
    name=${c%%:*}; envs=${c#*:}
    env $envs /work/main/${BUILD:-build}/launcher/orbitrun -n ${NR:-2} /work/main/${BUILD:-build}/bench/${coll}_bench --size $sizes --factor ${FACTOR:-4} --iters ${ITERS:-200} --warmup 20 --json $out/$name.$r.json > $out/$name.$r.txt 2>&1 || echo "run $name $r failed" >&2
  done
done
python3 - "$out" "${cfgs[@]}" <<'PY'
import json,sys,glob,statistics as st
out=sys.argv[1]; names=[c.split(':')[0] for c in sys.argv[2:]]
d={}
for n in names:
    for f in glob.glob(f"{out}/{n}.*.json"):
        for line in open(f):
            j=json.loads(line); d.setdefault((n,j['size']),[]).append(j['time_us'])
sizes=sorted({s for (_,s) in d})
print("%10s "%"bytes"+" ".join("%12s"%n for n in names)+"   ratio to first")
for s in sizes:
    m=[st.median(d.get((n,s),[float('nan')])) for n in names]
    print("%10d "%s+" ".join("%10.2fus"%x for x in m)+"   "+" ".join("%.2f"%(x/m[0]) for x in m[1:]))
PY
