#!/bin/bash
# (2026-11-30, issue 21) The shared-memory FIFO's small ring: OLD (a423a1f, 8 large slots only)
# against NEW (the small ring of 64), same machine, runs alternating OLD NEW MPI ...; every
# run's table kept under raw/, one line per row in rows-*.txt: "variant coll size time_us run".
#   small N:  broadcast reduce gather scatter allreduce, 32 B-2 KiB (x8), N ranks on the 2
#             CPUs, 20000 calls after 2000 untimed, R runs a side, Open MPI (--oversubscribe) too
#   large N:  allreduce allgather broadcast alltoall scatter, 256 KiB-16 MiB (x4), 20 calls after
#             40 untimed, R runs a side (orbit only)
# usage: OLD=/tmp/base/build NEW=build R=7 [ITERS=20] [TAG=-b] run.sh small 4 | large 4
#   (ITERS: the large calls' timed calls; TAG: added to the rows file's and raw files' names)
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
OLD=${OLD:-/tmp/base/build} NEW=${NEW:-build} R=${R:-7}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
kind=$1 n=$2
mkdir -p "$here/raw"
TAG=${TAG:-} ITERS=${ITERS:-20}
rows=$here/rows-$kind-n$n$TAG.txt
: > "$rows"
if [ "$kind" = small ]; then
  colls="broadcast reduce gather scatter allreduce" vs="old new mpi" sz="--size 32:2048 --factor 8 --iters 20000 --warmup 2000"
else
  colls="allreduce allgather broadcast alltoall scatter" vs="old new" sz="--size 256K:16M --factor 4 --iters $ITERS --warmup 40"
fi
for r in $(seq 1 "$R"); do
  for c in $colls; do
    for v in $vs; do
      f=$here/raw/$kind-n$n$TAG-$c-$v-$r.txt
      case $v in
      old) "$OLD/launcher/orbitrun" --no-tag -n "$n" "$OLD/bench/${c}_bench" --no-inplace $sz > "$f" 2>&1 ;;
      new) "$NEW/launcher/orbitrun" --no-tag -n "$n" "$NEW/bench/${c}_bench" --no-inplace $sz > "$f" 2>&1 ;;
      mpi) mpirun --oversubscribe -np "$n" "$NEW/bench/${c}_bench" --backend mpi --no-inplace $sz > "$f" 2>&1 ;;
      esac
      grep -v '^#' "$f" | awk -v s="$v" -v c="$c" -v r="$r" 'NF >= 8 && $1 ~ /^[0-9]+$/ {print s, c, $1, $6, r}' >> "$rows"
    done
  done
done
