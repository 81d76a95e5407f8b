#!/usr/bin/env bash
# alternating default / ORBIT_DETERMINISTIC=1 runs of allreduce_bench, raw rows kept
#   run.sh [NAME]   writes NAME (default raw.txt) here; rounds 1-2 ran from the det worktree,
#                   rounds 3-4 as `run.sh raw-round3.txt` and `run.sh raw-round4.txt` on main
cd "$(dirname "$0")/../.."
out=results/2026-11-25-AMD-EPYC-f25m17-det/${1:-raw.txt}
: > $out
for n in 2 4; do
  for size in 8 1M 64M; do
    for rep in 1 2 3 4 5; do
      for mode in default det; do
        if [ $mode = det ]; then d=1; else d=0; fi
        load=$(cut -d' ' -f1 /proc/loadavg)
        row=$(ORBIT_DETERMINISTIC=$d timeout 300 build/launcher/orbitrun --no-tag -n $n build/bench/allreduce_bench --size $size --no-inplace --check 2>&1 | grep -E '^ +[0-9]+ ')
        echo "n=$n size=$size rep=$rep mode=$mode load=$load | $row" >> $out
      done
    done
  done
done
echo finished >> $out
