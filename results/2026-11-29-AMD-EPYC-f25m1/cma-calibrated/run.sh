#!/usr/bin/env bash
# The link calibration's single-copy figure against the slots' (5 inits), then the verdict's
# effect: the calibrated default (no single-copy pieces where it measured them slower) against
# single-copy pieces forced on from the same size (ORBIT_CMA_BYTES = twice the L2), alternating.
#   usage: run.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1"); here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
cd "$root"
uptime > "$here/machine.txt"
for i in 1 2 3 4 5; do
    ORBIT_CALIBRATE=2 ORBIT_CALIB_FILE=none ORBIT_DEBUG=INFO "$build/launcher/orbitrun" -n 2 \
        "$build/bench/allreduce_bench" --size 8 --iters 3 2>&1 | grep -m1 -o 'tuner links inside this host.*'
done > "$here/calibration-5-inits.txt"
export ORBIT_CALIB_FILE="$here/links.txt"
rm -f "$ORBIT_CALIB_FILE"
ORBIT_DEBUG=INFO "$build/launcher/orbitrun" -n 2 "$build/bench/allreduce_bench" --size 8 --iters 3 2>&1 |
    grep -E 'tuner links inside|single-copy' > "$here/cached-verdict.txt"
l2x2=$(( $(cat /sys/devices/system/cpu/cpu0/cache/index2/size | tr -d K) * 2048 ))
for c in sendrecv broadcast allgather scatter alltoall; do
    ORBIT_CMA_BYTES=$l2x2 bash bench/compare_builds.sh -r 7 -o "$here/$c" -E ORBIT_CMA_BYTES=0 "$build" "$build" $c \
        --size 1M:16M --factor 4 --no-inplace > "$here/$c.txt" 2>&1
done
