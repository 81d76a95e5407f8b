#!/usr/bin/env bash
# usage: tcprep.sh BUILD COLL SIZES REPS [ENV=VAL...]: orbit alone over 2 netns, REPS runs
set -uo pipefail
build=$(cd "$1" && pwd); coll=$2; sizes=$3; reps=$4; shift 4
. /work/main/tests/net/netns_lib.sh
orbtest_setup 2 "" "" || { echo "skip: $ORBTEST_SKIP"; exit 77; }
for ((i=1;i<=reps;i++)); do
  log=$ORBTEST_WORK/r$i
  orbtest_job torchrun 1 300 "$log" "$@" -- "$build/bench/${coll}_bench" --backend custom --size "$sizes" --factor 4 --no-inplace || { echo FAIL; cat $log/*; }
  echo "run $i: $(grep -hE '^ +[0-9]+ ' $log/out.0 | awk '{printf "%s=%s ", $1, $6}')"
done
