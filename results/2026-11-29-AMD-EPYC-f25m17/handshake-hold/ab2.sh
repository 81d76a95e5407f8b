#!/bin/bash
# alternate two builds on small calls: ab2.sh REPS COLL...
reps=$1; shift
for r in $(seq $reps); do for coll in "$@"; do for cfg in new=/work/main/build old=/tmp/old/b; do
  n=${cfg%%=*}; d=${cfg#*=}
  c=$(/work/main/build/bench/c2c | tail -1 | awk '{print $2}')
  v=$($d/launcher/orbitrun -n 2 $d/bench/${coll}_bench --size 8:64 --factor 8 --iters 200000 2>&1 | grep -E "^\[0\] +(8|64) " | awk '{printf "%s %s ", $7, $11}')
  echo "$coll $n $v $c"
done; done; done
