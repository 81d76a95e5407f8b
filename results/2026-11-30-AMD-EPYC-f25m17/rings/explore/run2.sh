#!/bin/bash
# (2026-11-30) on the small-ring build: ORBIT_SHM_SMALL_SLOTS 0/16/32/64 against Open MPI, 4 ranks
cd /work/main
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
N=${N:-4}; R=${R:-5}; COLLS=${COLLS:-"broadcast reduce scatter gather allreduce"}
out=${OUT:-/tmp/ov}; mkdir -p $out/raw; : > $out/rows.txt
for r in $(seq 1 $R); do
 for c in $COLLS; do
  for v in s0 s16 s32 s64 mpi; do
    f=$out/raw/$c-$v-$r.txt
    if [ $v = mpi ]; then
      mpirun --oversubscribe -np $N build/bench/${c}_bench --backend mpi --no-inplace --size 32:4096 --factor 8 --iters 20000 --warmup 2000 > $f 2>&1
    else
      ORBIT_SHM_SMALL_SLOTS=${v#s} build/launcher/orbitrun --no-tag -n $N build/bench/${c}_bench --no-inplace --size 32:4096 --factor 8 --iters 20000 --warmup 2000 > $f 2>&1
    fi
    grep -v '^#' $f | awk -v s=$v -v c=$c -v r=$r 'NF >= 8 && $1 ~ /^[0-9]+$/ {print s, c, $1, $6, r}' >> $out/rows.txt
  done
 done
done
