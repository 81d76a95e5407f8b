#!/bin/bash
# what is left of the small rooted calls' gap with more ranks than cores: the handshake?
cd /work/main
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
: > /tmp/ck/rows.txt
for r in 1 2 3 4 5; do
 for n in 4 8; do
  for c in broadcast scatter; do
   for v in check nocheck mpi; do
    f=/tmp/ck/$n-$c-$v-$r.txt
    case $v in
     check) build/launcher/orbitrun --no-tag -n $n build/bench/${c}_bench --no-inplace --size 32:256 --factor 8 --iters 20000 --warmup 2000 > $f 2>&1 ;;
     nocheck) ORBIT_CHECK=0 build/launcher/orbitrun --no-tag -n $n build/bench/${c}_bench --no-inplace --size 32:256 --factor 8 --iters 20000 --warmup 2000 > $f 2>&1 ;;
     mpi) mpirun --oversubscribe -np $n build/bench/${c}_bench --backend mpi --no-inplace --size 32:256 --factor 8 --iters 20000 --warmup 2000 > $f 2>&1 ;;
    esac
    grep -v '^#' $f | awk -v s=$v -v c=$c -v r=$r -v n=$n 'NF >= 8 && $1 ~ /^[0-9]+$/ {print s, n"-"c, $1, $6, r}' >> /tmp/ck/rows.txt
   done
  done
 done
done
