#!/usr/bin/env bash
# 4 ranks on 2 cores, small messages, out of place, 2000 calls per size, alternating runs:
# scatter with ORBIT_CHECK=1 (default) / 0 / Open MPI, and alltoall through Bruck / the
# pairwise exchange / Open MPI. Raw rows (size, time us) and the load kept. Run from the top.
set -u
out=results/2026-11-25-AMD-EPYC-f25m17-a2a-small/raw.txt
: > $out
row() { grep -E '^(\[0\])? +[0-9]+ ' | awk '{ if ($1 == "[0]") { $1 = "" } print }' | awk '{printf "%s:%s ", $1, $6}'; }
for rep in 1 2 3 4 5; do
  for v in check1 check0 mpi; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    if [ $v = mpi ]; then
      r=$(mpirun --allow-run-as-root --oversubscribe -np 4 build/bench/scatter_bench --backend mpi --size 64:4K --factor 8 --no-inplace --iters 2000 2>&1 | row)
    else
      r=$(ORBIT_CHECK=${v#check} build/launcher/orbitrun -n 4 build/bench/scatter_bench --size 64:4K --factor 8 --no-inplace --iters 2000 2>&1 | row)
    fi
    echo "scatter rep=$rep $v load=$load | $r" >> $out
  done
  for v in bruck direct mpi; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    if [ $v = mpi ]; then
      r=$(mpirun --allow-run-as-root --oversubscribe -np 4 build/bench/alltoall_bench --backend mpi --size 64:4K --factor 8 --no-inplace --iters 2000 2>&1 | row)
    else
      r=$(ORBIT_ALGO=$v build/launcher/orbitrun -n 4 build/bench/alltoall_bench --size 64:4K --factor 8 --no-inplace --iters 2000 2>&1 | row)
    fi
    echo "alltoall rep=$rep $v load=$load | $r" >> $out
  done
done
echo finished >> $out
