#!/usr/bin/env bash
# Single-copy reads (ORBIT_CMA_BYTES=65536: every plain send of 64 KiB or more goes as an
# address the receiver reads with process_vm_readv) against this VM's default (the init
# calibration measured the slots faster: no single copy), same build, alternating, each run
# bracketed by bench/c2c; split.py then tells near runs from far ones.
set -euo pipefail
cd "$(dirname "$0")"; root=$(git rev-parse --show-toplevel); b=$root/build
reps=${REPS:-10}
for c in ${COLLS:-alltoall sendrecv allgather scatter broadcast}; do
    flags=(--size 256K:4M --factor 4 --iters 200); [ $c = sendrecv ] || flags+=(--no-inplace)
    bash "$root/bench/compare_builds.sh" -r "$reps" -o "runs-$c" -E ORBIT_CMA_BYTES=65536 "$b" "$b" $c "${flags[@]}" > "ab-$c.txt" 2>/dev/null
    { echo "## $c"; python3 split.py "runs-$c"; } | tee "split-$c.txt"
done
