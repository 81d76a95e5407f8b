# The median time per size of each variant's JSON rows in DIR (files TAG.RUN.json, as
# tcp-place/ab.sh and tcp-knobs/sweep.sh write them), and for two variants their ratio.
# usage: python3 summ.py DIR
import collections
import glob
import json
import os
import statistics
import sys

d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(sys.argv[1] + '/*.json'):
    tag = os.path.basename(f).rsplit('.', 2)[0]
    for line in open(f):
        r = json.loads(line)
        d[tag][r['size']].append(r['time_us'])
tags = sorted(d)
for tag in tags:
    print(f"{tag:30s}", "  ".join(f"{s >> 10}K:{statistics.median(v):8.1f}us({len(v)})" for s, v in sorted(d[tag].items())))
if len(tags) == 2:
    a, b = tags
    print(f"{b}/{a}:", "  ".join(f"{s >> 10}K:{statistics.median(d[b][s]) / statistics.median(d[a][s]):.3f}"
                                  for s in sorted(d[a])))
