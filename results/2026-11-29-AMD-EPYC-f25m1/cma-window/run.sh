#!/usr/bin/env bash
# Single-copy reads (CMA) against two copies through the slots, on this machine: each
# non-reducing collective with ORBIT_CMA_BYTES at its default (single copy from twice the L2
# up to the last-level cache) against -1 (never), alternating runs; send/recv against Open MPI;
# where a 16 MiB send/recv spends its CPU either way.   usage: run.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1"); here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
cd "$root"
lscpu | grep -E 'Model name|^CPU\(s\)|L2|L3' > "$here/machine.txt"; uptime >> "$here/machine.txt"
bench/compare.sh -n 2 -r 7 -o "$here/sendrecv-mpi" "$build" sendrecv --size 256K:64M --factor 4 > "$here/sendrecv-mpi.txt" 2>&1
for c in sendrecv alltoall broadcast allgather scatter; do
    bash bench/compare_builds.sh -r 7 -o "$here/nocma-$c" -E ORBIT_CMA_BYTES=-1 "$build" "$build" $c \
        --size 256K:64M --factor 4 --no-inplace > "$here/nocma-$c.txt" 2>&1
done
for v in 0 -1; do
    { echo "ORBIT_CMA_BYTES=$v: 300 send/recv calls of 16 MiB after 20, 2 ranks";
      ORBIT_CMA_BYTES=$v /usr/bin/time -f "%e s wall, %U s user, %S s system" "$build/launcher/orbitrun" -n 2 \
          "$build/bench/sendrecv_bench" --size 16M --iters 300 --warmup 20 --no-inplace 2>&1 | grep -E '^ +16777216|wall'
    } >> "$here/cpu-16m.txt"
done
perf record -q -e cpu-clock -a -o "$here/perf.data" -- env ORBIT_CMA_BYTES=0 "$build/launcher/orbitrun" -n 2 \
    "$build/bench/sendrecv_bench" --size 16M --iters 300 --warmup 20 --no-inplace > /dev/null 2>&1
perf report -i "$here/perf.data" --sort sym --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30 > "$here/perf-16m-cma.txt"
rm -f "$here/perf.data"
