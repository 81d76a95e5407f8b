#!/bin/bash
# A chain forwarder's handshake riding on the piece it forwards (collectives/exec_cpu.c,
# ORB_SYNC_AFTER_RECV) against its own piece (OLD: 8bbf5f9 built -Dcuda=disabled in
# /tmp/build-head; NEW: the working tree in build-ab, -Dcuda=disabled), 4 and 8 ranks on the 2
# CPUs, 7 alternating runs of 20000 calls after 2000; then the product build against Open MPI
# at 4 ranks, 5 alternating runs. 8 ranks: the tree (broadcast, reduce) and direct scatter,
# where no handshake rides after a receive: the same path in both builds, a control.
old=${1:-/tmp/build-head} new=${2:-/work/main/build-ab} prod=${3:-/work/main/build}
for n in 4 8; do for c in broadcast reduce scatter; do
  sz="8:4K"; [ $c = scatter ] && sz="$((n*8)):4K"
  bash /work/main/bench/compare_builds.sh -n $n -r 7 -o ab-n$n-$c "$old" "$new" $c --size $sz --factor 8 \
    --iters 20000 --warmup 2000 --no-inplace > ab-n$n-$c.txt 2>&1
done; done
for c in broadcast reduce scatter; do
  sz="8:4K"; [ $c = scatter ] && sz="32:4K"
  bash /work/main/bench/compare.sh -n 4 -r 5 -o mpi-n4-$c "$prod" $c --size $sz --factor 8 --iters 20000 \
    --warmup 2000 --no-inplace > mpi-n4-$c.txt 2>&1
done
