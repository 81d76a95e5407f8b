#!/usr/bin/env bash
# usage: ab_multi.sh N REPS COLL "ENV1;ENV2;..." bench flags... ; median time per size per variant (alternating)
n=$1; reps=$2; coll=$3; IFS=';' read -ra vs <<< "$4"; shift 4
out=$(mktemp -d)
for ((i=1;i<=reps;i++)); do
  for j in "${!vs[@]}"; do
    env ${vs[$j]} /work/main/build/launcher/orbitrun -n $n /work/main/build/bench/${coll}_bench "$@" 2>&1 | grep -E "^\[0\] +[0-9]" | awk '{print $2, $7}' > $out/$j.$i
  done
done
python3 - "$out" "$reps" "${vs[@]}" <<'PY'
import sys,statistics,collections
d,reps,vs=sys.argv[1],int(sys.argv[2]),sys.argv[3:]
res=[collections.defaultdict(list) for _ in vs]
for j in range(len(vs)):
  for i in range(1,reps+1):
    for line in open(f"{d}/{j}.{i}"):
      s,t=line.split(); res[j][int(s)].append(float(t))
print("%10s"%"bytes"+"".join("%26s"%v[:26] for v in vs))
for s in sorted(res[0]):
  base=statistics.median(res[0][s])
  print("%10d"%s+"".join("%17.1f (%5.2f)"%(statistics.median(res[j][s]),statistics.median(res[j][s])/base) for j in range(len(vs))))
PY
rm -rf $out
