#!/usr/bin/env bash
# usage: [H=2] [ITERS=60] [F=8] ab.sh COLL SIZES REPS OUT BUILD[:VAR=VAL] ...
# COLL's bench from each build (absolute paths; :VAR=VAL sets one variable for that variant) between
# H network namespaces (2 unless set), 1 rank each, real TCP; REPS rounds, the variants' order rotating each
# round; prints each variant's median time per size and, for two variants, their ratio.
coll=$1; sizes=$2; reps=$3; out=$4; shift 4
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
python3 - $out <<'PY'
import glob,json,statistics,sys,collections,os
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(sys.argv[1]+'/*.json'):
    tag=os.path.basename(f).rsplit('.',2)[0]
    for l in open(f):
        r=json.loads(l); d[tag][r['size']].append(r['time_us'])
tags=sorted(d)
for tag in tags:
    print(f"{tag:30s}", "  ".join(f"{s>>10}K:{statistics.median(v):8.1f}us({len(v)})" for s,v in sorted(d[tag].items())))
if len(tags)==2:
    a,b=tags
    print(f"{b}/{a}:", "  ".join(f"{s>>10}K:{statistics.median(d[b][s])/statistics.median(d[a][s]):.3f}" for s in sorted(d[a])))
PY
