#!/usr/bin/env bash
# The handshake window (2026-11-28 evening): old = the tree before it (984ac45), new = after,
# both -Dcuda=disabled (build-ab); then orbit against Open MPI with the product build.
# Run from the repository root with the old tree's build at $OLD (git worktree).
set -euo pipefail
OLD=${OLD:-/work/base/build-ab}
R=$(dirname "$0")
for coll in broadcast reduce gather scatter; do
  bash bench/compare_builds.sh -n 2 -r 11 -o $R/ab-$coll-n2 $OLD build-ab $coll --size 8:4096 --factor 8 --iters 200000 --warmup 5000 --no-inplace > $R/ab-$coll-n2.txt 2>&1
  for n in 4 8; do
    bash bench/compare_builds.sh -n $n -r 7 -o $R/ab-$coll-n$n $OLD build-ab $coll --size 8:4096 --factor 8 --iters 50000 --warmup 2000 --no-inplace > $R/ab-$coll-n$n.txt 2>&1
  done
done
for n in 2 4 8; do
  iters=$([ $n = 2 ] && echo 200000 || echo 50000)
  for coll in broadcast reduce gather scatter; do
    bash bench/compare.sh -n $n -r 7 -o $R/mpi-$coll-n$n build $coll --size 8:4096 --factor 8 --iters $iters --warmup 2000 --no-inplace > $R/mpi-$coll-n$n.txt 2>&1
  done
done
