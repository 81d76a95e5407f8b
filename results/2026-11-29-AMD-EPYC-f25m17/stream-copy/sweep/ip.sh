#!/bin/bash
# in-place only: default vs ORBIT_STREAM_BYTES=4M, alternating; prints coll cfg bytes algbw c2c
for r in 1 2 3 4 5; do for c in allgather gather scatter broadcast alltoall; do for cfg in def s4; do
  e=ORBIT_X=1; [ $cfg = s4 ] && e=ORBIT_STREAM_BYTES=4194304
  cc=$(/work/main/build/bench/c2c | tail -1 | awk '{print $2}')
  /work/main/build/launcher/orbitrun -n 2 env $e /work/main/build/bench/${c}_bench --size 4M:16M --factor 2 --inplace 2>&1 | grep -E "^\[0\] +[0-9]+ " | awk -v c=$c -v g=$cfg -v k=$cc '{print c, g, $2, $12, k}'
done; done; done
