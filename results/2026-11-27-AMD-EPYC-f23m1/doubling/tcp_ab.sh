#!/usr/bin/env bash
# 2 ranks as 2 pretend hosts (ORBIT_HOSTID per rank: TCP over loopback), A vs B settings alternating
reps=$1; ea=$2; eb=$3; shift 3
out=$(mktemp -d)
for ((i=1;i<=reps;i++)); do for v in A B; do e=$([ $v = A ] && echo "$ea" || echo "$eb")
  env $e /work/main/build/launcher/orbitrun -n 2 bash -c 'ORBIT_HOSTID=h$RANK exec "$0" "$@"' /work/main/build/bench/allreduce_bench "$@" 2>&1 | grep -E "^\[0\] +[0-9]" | awk '{print $2, $7}' > $out/$v.$i; done; done
python3 - "$out" "$reps" <<'PY'
import sys,statistics,collections
d,reps=sys.argv[1],int(sys.argv[2]); res={v:collections.defaultdict(list) for v in 'AB'}
for v in 'AB':
  for i in range(1,reps+1):
    for line in open(f"{d}/{v}.{i}"):
      s,t=line.split(); res[v][int(s)].append(float(t))
print("%10s %10s %10s %8s"%("bytes","A us","B us","B/A"))
for s in sorted(res['A']):
  a=statistics.median(res['A'][s]); b=statistics.median(res['B'][s]); print("%10d %10.2f %10.2f %8.2f"%(s,a,b,b/a))
PY
rm -rf $out
