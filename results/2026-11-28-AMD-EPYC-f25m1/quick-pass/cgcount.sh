#!/bin/bash
# usage: cgcount.sh BUILD COLL FN [bench flags]  -> instructions per call per rank (callgrind)
b=$1 c=$2 fn=$3; shift 3
d=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1
$b/launcher/orbitrun -n 2 valgrind --tool=callgrind --callgrind-out-file=$d/cg.%p --toggle-collect=$fn $b/bench/${c}_bench --size 8 --iters 20000 --warmup 100 --no-inplace "$@" >/dev/null 2>&1
for f in $d/cg.*; do
  tot=$(callgrind_annotate $f 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')
  echo -n "$((tot/20100)) "
done
echo " $c $b"
rm -rf $d
