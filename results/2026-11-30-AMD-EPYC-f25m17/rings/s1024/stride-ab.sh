#!/bin/bash
cd /work/main
: > /tmp/sx/rows.txt
for r in $(seq 1 ${R:-11}); do
 for c in ${COLLS:-broadcast allreduce}; do
  for v in ${VS:-1024 1088 s0}; do
   if [ $v = s0 ]; then e="ORBIT_SHM_SMALL_SLOTS=0"; else e="SHMX_STRIDE=$v"; fi
   rm -f /tmp/sx/j.json
   env $e build/launcher/orbitrun --no-tag -n 2 build/bench/${c}_bench --no-inplace --size 8:512 --factor 8 --iters 20000 --warmup 1000 --json /tmp/sx/j.json >/dev/null 2>&1
   python3 -c "
import json,sys
for l in open('/tmp/sx/j.json'):
    o=json.loads(l); print('$v', '$c', o['size'], o['time_us'], $r)" >> /tmp/sx/rows.txt
  done
 done
done
