#!/bin/bash
# What a loaded init's figures cost for the rest of the boot: the same build, a planted cache
# line of 0.13 us / 0.25 GB/s (as the old estimator measured in 3 of 8 busy inits: single-copy
# pieces on, since the kernel's copy measured 4 GB/s) against 0.13 us / 7.5 GB/s (quiet: off),
# alternating, 2 ranks, 60 timed calls after 20. Usage: damage.sh BUILD RUNS > damage.txt
b=$1 runs=${2:-5}
key=$(ORBIT_CALIB_FILE=/tmp/damage-probe.txt ORBIT_CALIBRATE=2 "$b/launcher/orbitrun" --no-tag -n 2 "$b/bench/sendrecv_bench" --size 8 --iters 1 >/dev/null 2>&1; sed 's/ alpha_us.*//' /tmp/damage-probe.txt)
echo "$key alpha_us=0.13 beta_gbps=0.25 single_gbps=4.0 jobs=3" > /tmp/damage-bad.txt
echo "$key alpha_us=0.13 beta_gbps=7.5 single_gbps=4.0 jobs=3" > /tmp/damage-good.txt
for c in sendrecv broadcast allgather; do
  for i in $(seq "$runs"); do
    for f in bad good; do
      ORBIT_CALIB_FILE=/tmp/damage-$f.txt "$b/launcher/orbitrun" -n 2 "$b/bench/${c}_bench" --size 4M:16M --factor 4 \
        --iters 60 --warmup 20 --no-inplace 2>&1 | grep -E '^\[0\] +[0-9]+ ' | awk -v c=$c -v f=$f -v i=$i '{print c, f, i, $2, $7}'
    done
  done
done
