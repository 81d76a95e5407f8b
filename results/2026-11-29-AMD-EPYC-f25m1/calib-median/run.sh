#!/bin/bash
# The link calibration's figures over many inits, the mean-based estimator (OLD build, deed4a9:
# alpha and beta computed as before this change) against the medians (NEW build), alternating,
# quiet and beside two busy loops (the 2 CPUs' worth of another job), ORBIT_CALIB_FILE=none so
# that every init measures. Usage: run.sh OLD_BUILD NEW_BUILD RUNS RANKS > out.txt
old=$1 new=$2 runs=${3:-8} n=${4:-2}
one() { ORBIT_CALIB_FILE=none ORBIT_DEBUG=INFO "$1/launcher/orbitrun" --no-tag -n "$n" "$1/bench/allreduce_bench" \
          --size 8 --iters 3 --warmup 1 2>&1 | grep -m1 -o 'tuner links inside this host: [0-9.]* us, [0-9.]* GB/s'; }
for load in quiet busy; do
  pids=()
  if [ $load = busy ]; then for j in 1 2; do (while :; do :; done) & pids+=($!); done; sleep 0.5; fi
  for i in $(seq "$runs"); do
    for b in old new; do
      dir=$old; [ $b = new ] && dir=$new
      echo "$load $b $i $(one "$dir")"
    done
  done
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
done
