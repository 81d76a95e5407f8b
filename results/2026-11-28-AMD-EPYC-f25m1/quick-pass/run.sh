#!/bin/bash
# What made this folder (2026-11-28, third session, issue 21): the streamlined first pass and
# borrowed group plans (155e023..) against c32729a, and against Open MPI.
#   ab-COLL.txt     bench/compare_builds.sh -r 11: /work/base/build-ab (c32729a) vs build-ab (new),
#                   both -Dcuda=disabled, 2 ranks, 20000 calls, out of place
#   mpi-COLL.txt    bench/compare.sh -r 7 on build (the product build, CUDA on): orbit vs Open MPI
#   callgrind.txt   instructions a call a rank (callgrind, --toggle-collect on the entry point)
set -u
cd "$(dirname "$0")/../../.."
R=results/2026-11-28-AMD-EPYC-f25m1/quick-pass
for c in broadcast sendrecv gather scatter reduce allreduce; do
  bash bench/compare_builds.sh -r 11 -o $R/ab-$c /work/base/build-ab build-ab $c --size 8:4096 --factor 8 \
    --iters 200000 --warmup 5000 --no-inplace > $R/ab-$c.txt 2>&1
done
for c in broadcast sendrecv gather scatter reduce allreduce allgather reduce_scatter alltoall; do
  bash bench/compare.sh -r 7 -o $R/mpi-$c build $c --size 8:4096 --factor 8 --iters 200000 --warmup 5000 \
    --no-inplace > $R/mpi-$c.txt 2>&1
done
