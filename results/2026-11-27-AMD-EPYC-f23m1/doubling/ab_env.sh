#!/usr/bin/env bash
# usage: [AB_HOSTS=1] ab_env.sh N REPS COLL "ENV_A" "ENV_B" bench flags... ; prints median time per size for A and B
# AB_HOSTS=1: every rank a pretend host of its own (TCP between them on loopback)
n=$1; reps=$2; coll=$3; ea=$4; eb=$5; shift 5
out=$(mktemp -d)
for ((i=1;i<=reps;i++)); do
  for v in A B; do
    e=$([ $v = A ] && echo "$ea" || echo "$eb")
    if [ -n "${AB_HOSTS:-}" ]; then # each rank a pretend host (ORBIT_HOSTID): TCP on loopback
      env $e /work/main/build/launcher/orbitrun -n $n bash -c 'ORBIT_HOSTID=h$RANK exec "$0" "$@"' /work/main/build/bench/${coll}_bench "$@"
    else
      env $e /work/main/build/launcher/orbitrun -n $n /work/main/build/bench/${coll}_bench "$@"
    fi 2>&1 | grep -E "^\[0\] +[0-9]" | awk '{print $2, $7}' > $out/$v.$i
  done
done
python3 - "$out" "$reps" <<'PY'
import sys,statistics,collections
d,reps=sys.argv[1],int(sys.argv[2])
res={v:collections.defaultdict(list) for v in 'AB'}
for v in 'AB':
  for i in range(1,reps+1):
    for line in open(f"{d}/{v}.{i}"):
      s,t=line.split(); res[v][int(s)].append(float(t))
print("%10s %10s %10s %8s"%("bytes","A us","B us","B/A"))
for s in sorted(res['A']):
  a=statistics.median(res['A'][s]); b=statistics.median(res['B'][s])
  print("%10d %10.2f %10.2f %8.2f"%(s,a,b,b/a))
PY
rm -rf $out
