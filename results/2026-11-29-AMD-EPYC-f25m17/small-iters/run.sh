#!/usr/bin/env bash
# Small calls timed over 50 calls a size (the old default) and 1000 (the new one below 3 KiB),
# orbit and Open MPI alternating, 50 and 1000 alternating, broadcast 8 B-4 KiB out of place, 6
# rounds; c2c after each.
# Usage: run.sh BUILD > out.txt. Columns: iters, backend, then us per call at 8, 64, 512, 4096 B.
build=${1:-build}
for r in 1 2 3 4 5 6; do for it in 50 1000; do
  o=$("$build/launcher/orbitrun" -n 2 "$build/bench/broadcast_bench" --size 8:4K --factor 8 --iters $it --no-inplace 2>&1 | grep -E '^\[0\] +[0-9]+ ' | awk '{printf "%s ", $7}')
  m=$(mpirun --allow-run-as-root -np 2 "$build/bench/broadcast_bench" --backend mpi --size 8:4K --factor 8 --iters $it --no-inplace 2>&1 | grep -E '^ +[0-9]+ ' | awk '{printf "%s ", $6}')
  c=$("$build/bench/c2c" | tail -1 | awk '{print $2}')
  echo "$it orbit $o"; echo "$it mpi $m"; echo "# c2c $c"
done; done
