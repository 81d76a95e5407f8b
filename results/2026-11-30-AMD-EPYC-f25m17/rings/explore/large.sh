#!/bin/bash
# (2026-11-30) large calls, 4 ranks, FIFO geometries (slots x KiB), on a423a1f
# 4 ranks on 2 cores, large calls: FIFO geometries (slots x slot bytes), same build, alternating
cd /work/main
N=${N:-4}; R=${R:-5}; COLLS=${COLLS:-"allreduce broadcast allgather alltoall scatter"}
out=${OUT:-/tmp/ov/large}; mkdir -p $out/raw; : > $out/rows.txt
for r in $(seq 1 $R); do
 for c in $COLLS; do
  for v in 8x256 32x64 16x128 32x256; do
    s=${v%x*}; b=$(( ${v#*x} * 1024 ))
    f=$out/raw/$c-$v-$r.txt
    ORBIT_SHM_SLOTS=$s ORBIT_SHM_SLOT_BYTES=$b build/launcher/orbitrun --no-tag -n $N build/bench/${c}_bench --no-inplace --size 256K:16M --factor 4 --iters 20 --warmup 40 > $f 2>&1
    grep -v '^#' $f | awk -v s=$v -v c=$c -v r=$r 'NF >= 8 && $1 ~ /^[0-9]+$/ {print s, c, $1, $6, r}' >> $out/rows.txt
  done
 done
done
