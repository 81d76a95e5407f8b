#!/bin/bash
# usage: big.sh COLL REPS SIZES "name=ENV..." ... : alternate env configs, orbit only; prints name size busbw(oop) busbw(ip)
coll=$1; reps=$2; sizes=$3; shift 3
for r in $(seq $reps); do
  for cfg in "$@"; do
    name=${cfg%%=*}; envs=${cfg#*=}
    /work/main/build/launcher/orbitrun -n ${NR:-2} env $envs /work/main/build/bench/${coll}_bench --size $sizes --factor 2 2>&1 | grep -E "^\[0\] +[0-9]+ " | awk -v n=$name '{print n, $2, $8, $12}'
    echo "c2c $(/work/main/build/bench/c2c | tail -1 | awk '{print $2}')"
  done
done
