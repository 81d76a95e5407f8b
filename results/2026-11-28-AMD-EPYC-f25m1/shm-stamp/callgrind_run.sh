#!/bin/bash
# usage: cgrun.sh BUILD COLL FN  -> prints per-call instructions per rank and one_pass calls per call
b=$1 c=$2 fn=$3; shift 3
d=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1
$b/launcher/orbitrun -n 2 valgrind --tool=callgrind --callgrind-out-file=$d/cg.%p --toggle-collect=$fn $b/bench/${c}_bench --size 8 --iters 20000 --warmup 100 --no-inplace "$@" >/dev/null 2>&1
for f in $d/cg.*; do
  tot=$(callgrind_annotate $f 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')
  passes=$(callgrind_annotate --inclusive=yes $f 2>/dev/null | grep 'one_pass' | head -1 | awk '{print $1}')
  echo "$c $b: $((tot/20100)) instr/call  (one_pass incl $passes)"
done
rm -rf $d
