#!/bin/bash
# (2026-11-30) ORBIT_SHM_SLOTS 8/16/32 against Open MPI, 4 ranks on the 2 CPUs, on a423a1f (OUT, R, COLLS)
# 4 ranks on 2 cores: orbit with ORBIT_SHM_SLOTS=8/16/32 against Open MPI, alternating
cd /work/main
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
N=${N:-4}; R=${R:-5}; COLLS=${COLLS:-"broadcast reduce scatter gather allreduce"}
out=${OUT:-/tmp/ov}; mkdir -p $out/raw; : > $out/rows.txt
for r in $(seq 1 $R); do
 for c in $COLLS; do
  for v in 8 16 32 mpi; do
    f=$out/raw/$c-$v-$r.txt
    if [ $v = mpi ]; then
      mpirun --oversubscribe -np $N build/bench/${c}_bench --backend mpi --no-inplace --size 32:4096 --factor 8 --iters 20000 --warmup 2000 > $f 2>&1
    else
      ORBIT_SHM_SLOTS=$v build/launcher/orbitrun --no-tag -n $N build/bench/${c}_bench --no-inplace --size 32:4096 --factor 8 --iters 20000 --warmup 2000 > $f 2>&1
    fi
    grep -v '^#' $f | awk -v s=$v -v c=$c -v r=$r 'NF >= 8 && $1 ~ /^[0-9]+$/ {print s, c, $1, $6, r}' >> $out/rows.txt
  done
 done
done
