#!/usr/bin/env bash
# alternating env variants of orbit's 2-host all-reduce (netns, 1 rank each): medians
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$0")/../../.." # the repository root
. tests/net/netns_lib.sh
orbtest_setup 2 "" "" || { echo "skip: $ORBTEST_SKIP"; exit 77; }
reps=${REPS:-3}; sizes=${SIZES:-256K:16M}; out=${OUT:-/tmp/tcpsweep}; mkdir -p $out; rm -f $out/*.json
variants=("$@")
for ((r=1;r<=reps;r++)); do
  n=${#variants[@]}
  for ((i=0;i<n;i++)); do
    v=${variants[$(((i+r-1)%n))]}
    tag=$(echo "$v" | tr ' =/' '_+-'); [ -z "$tag" ] && tag=default
    # shellcheck disable=SC2086
    orbtest_job torchrun 1 900 $out/log.$tag.$r $v -- "$PWD/build/bench/allreduce_bench" --backend custom --size $sizes --factor 8 --iters 60 --no-inplace --json $out/$tag.$r.json >/dev/null 2>&1 || echo "run $tag failed"
  done
done
python3 "$here"/../tcp-place/summ.py "$out"
