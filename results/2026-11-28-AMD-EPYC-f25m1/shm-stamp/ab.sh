#!/usr/bin/env bash
# The shm stamp protocol (ab8ce6a) against 5327abd, both built -Dcuda=disabled (release, LTO):
# small sizes, 10000 calls a run, alternating, 7 runs. Usage: ab.sh OLD_BUILD NEW_BUILD
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd /work/main
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for c in sendrecv broadcast gather scatter allreduce allgather; do
  bash bench/compare_builds.sh -r 7 -o "$here/ab-$c" "$1" "$2" $c --size 8:32768 --factor 8 --iters 10000 --warmup 1000 --no-inplace \
    2>/dev/null | tee "$here/ab-$c.txt"
done
