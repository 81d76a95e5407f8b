#!/usr/bin/env bash
# usage: tcpalt.sh BUILD COLL SIZES REPS: orbit and Open MPI alternating over 2 netns
set -uo pipefail
build=$(cd "$1" && pwd); coll=$2; sizes=$3; reps=$4; shift 4
. /work/main/tests/net/netns_lib.sh
orbtest_setup 2 "" "" || { echo "skip: $ORBTEST_SKIP"; exit 77; }
for ((i=1;i<=reps;i++)); do
  log=$ORBTEST_WORK/o$i
  orbtest_job torchrun 1 300 "$log" "$@" -- "$build/bench/${coll}_bench" --backend custom --size "$sizes" --factor 4 --no-inplace || { echo FAIL; cat $log/*; }
  echo "orbit $i: $(grep -hE '^ +[0-9]+ ' $log/out.0 | awk '{printf "%s=%s ", $1, $6}')"
  log=$ORBTEST_WORK/m$i
  orbtest_job mpi 1 300 "$log" -- --mca btl tcp,self "$build/bench/${coll}_bench" --backend mpi --size "$sizes" --factor 4 --no-inplace || { echo FAIL; cat $log/*; }
  echo "mpi   $i: $(grep -hE '^ +[0-9]+ ' $log/out.mpi | awk '{printf "%s=%s ", $1, $6}')"
done
