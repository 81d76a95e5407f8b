#!/usr/bin/python3
"""The gradient all-reduce time of a training step, from the Chrome trace that
`orbit-train --profile FILE` writes: for every bucket and step, the shortest of the ranks'
durations of that bucket's all-reduce (the rank that arrives last waits for nobody, so its
duration is the collective's own time; the others' include waiting for it), then per bucket
and for the whole step the median over the steps after the first (the warm-up).

    orbitrun -n 2 -- build/trainer/orbit-train --model resnet50 --data synthetic:3,64,64,1000 \\
        --batch-size 4 --steps 8 --epochs 1 --no-overlap --profile p.json [--grad-dtype bf16]
    python3 bench/bucket_times.py p.json [--json out.json]

Under --profile the trainer takes each duration from liborbit's own tracer: the library
call alone, without the trainer's averaging or, with --grad-dtype bf16|fp16, the conversions
to and from 16 bits. Standard library only.
"""
import argparse
import json
import re
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--json", help="write the figures here too")
    a = ap.parse_args()
    try:
        with open(a.profile, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"bucket_times.py: {a.profile}: {e}; give the file orbit-train --profile wrote")
    per = {}  # (step, bucket) -> {pid: ms}
    size = {}
    for e in doc.get("traceEvents", []) if isinstance(doc, dict) else []:
        m = re.match(r"allreduce bucket (\d+)", e.get("name", ""))
        if e.get("ph") != "X" or not m:
            continue
        b, step = int(m.group(1)), (e.get("args") or {}).get("step")
        size[b] = (e.get("args") or {}).get("bytes", 0)
        per.setdefault((step, b), {})[e["pid"]] = e["dur"] / 1e3
    if not per:
        sys.exit(f"bucket_times.py: {a.profile} has no bucket all-reduces; was it a multi-rank run with --profile?")
    nranks = max(len(v) for v in per.values())
    steps = sorted({s for s, _ in per})
    steps = steps[1:] or steps  # the first step carries connection setup and cold caches
    rows, total = {}, []
    for s in steps:
        t = 0.0
        for b in sorted(size):
            d = per.get((s, b), {})
            if len(d) == nranks:
                rows.setdefault(b, []).append(min(d.values()))
                t += min(d.values())
        total.append(t)
    print(f"# {a.profile}: {nranks} ranks, steps {steps[0]}-{steps[-1]}; ms = median over steps of the least rank's time")
    print(f"# {'bucket':>6} {'bytes':>12} {'ms':>9}")
    for b in sorted(rows):
        print(f"  {b:>6} {size[b]:>12} {statistics.median(rows[b]):>9.3f}")
    med = statistics.median(total)
    print(f"  {'step':>6} {sum(size.values()):>12} {med:>9.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ranks": nranks, "steps": steps, "bucket_bytes": size,
                       "bucket_ms": {b: statistics.median(v) for b, v in rows.items()},
                       "step_ms": med, "step_ms_each": total}, f, indent=1)


if __name__ == "__main__":
    main()
