#!/usr/bin/env bash
# The due window follows the FIFOs' depth: the last commit before it (OLD, a worktree build)
# against this tree's build, both with ORBIT_SHM_SLOTS=$SLOTS (default 32), 4 and 8 ranks on
# the 2 CPUs, rooted calls at 8-64 B (gather and scatter 64-512 B: 8 B is less than an element
# a rank), 5000 calls, alternating (bench/compare_builds.sh); then orbit (new) against Open MPI.
set -euo pipefail
cd "$(dirname "$0")"; root=$(git rev-parse --show-toplevel)
old=${OLD:-/tmp/base/build} new=$root/build
export ORBIT_SHM_SLOTS=${SLOTS:-32}
for n in 4 8; do
    for c in broadcast reduce gather scatter; do
        sz=8:64; case $c in gather | scatter) sz=64:512 ;; esac
        bash "$root/bench/compare_builds.sh" -n $n -r "${REPS:-5}" -o "runs-ab-n$n-$c" "$old" "$new" $c \
            --size $sz --factor 8 --iters 5000 --no-inplace 2>/dev/null
    done
done
