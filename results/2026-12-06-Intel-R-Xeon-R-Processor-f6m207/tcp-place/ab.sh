#!/usr/bin/env bash
# usage: [H=2] [ITERS=60] [F=8] ab.sh COLL SIZES REPS OUT BUILD[:VAR=VAL] ...
# COLL's bench from each build (absolute paths; :VAR=VAL sets one variable for that variant) between
# H network namespaces (2 unless set), 1 rank each, real TCP; REPS rounds, the variants' order rotating each
# round; prints each variant's median time per size and, for two variants, their ratio.
coll=$1; sizes=$2; reps=$3; out=$4; shift 4
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$0")/../../.." # the repository root (netns_lib.sh)
. tests/net/netns_lib.sh
orbtest_setup ${H:-2} "" "" || { echo "skip: $ORBTEST_SKIP"; exit 77; }
mkdir -p $out; rm -f $out/*.json
builds=("$@")
for ((r=1;r<=reps;r++)); do
  n=${#builds[@]}
  for ((i=0;i<n;i++)); do
    spec=${builds[$(((i+r-1)%n))]}
    b=${spec%%:*}; ev=(); [ "$spec" != "$b" ] && ev=("${spec#*:}")
    tag=$(echo "$spec" | tr '/:=' '_+-')
    orbtest_job torchrun 1 900 $out/log.$tag.$r "${ev[@]}" -- "$b/bench/${coll}_bench" --backend custom --size $sizes --factor ${F:-8} --iters ${ITERS:-60} --no-inplace --json $out/$tag.$r.json >/dev/null 2>&1 || echo "run $tag failed"
  done
done
python3 "$here"/summ.py "$out"
