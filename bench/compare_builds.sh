#!/usr/bin/env bash
# Two builds of orbit on the same bench, alternating runs, medians: did a change make orbit
# slower? (bench/compare.sh compares orbit with Open MPI; this compares orbit with itself.)
#   bash bench/compare_builds.sh [-n NRANKS] [-r REPS] [-o OUTDIR] [-E VAR=VAL]... OLD_BUILD NEW_BUILD COLLECTIVE [bench flags...]
# Each run is OLD_BUILD/launcher/orbitrun -n NRANKS OLD_BUILD/bench/<coll>_bench --json ...,
# then the same with NEW_BUILD, the order swapped every repetition. Prints per size the
# median time of each and new/old (> 1: the new build is slower). -E sets a variable for the
# NEW runs only: one build against itself with a setting on (ORBIT_TRACE=DIR: what tracing costs).
set -euo pipefail
nranks=2 reps=7 outdir=""
new_env=()
while getopts "n:r:o:E:h" opt; do
    case $opt in
    n) nranks=$OPTARG ;; r) reps=$OPTARG ;; o) outdir=$OPTARG ;; E) new_env+=("$OPTARG") ;;
    h) sed -n 2,9p "$0"; exit 0 ;;
    *) sed -n 2,9p "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 3 ] || { sed -n 2,9p "$0" >&2; exit 2; }
old=$1 new=$2 coll=$3
shift 3
for b in "$old" "$new"; do
    [ -x "$b/bench/${coll}_bench" ] && [ -x "$b/launcher/orbitrun" ] ||
        { echo "$0: $b: no bench/${coll}_bench or launcher/orbitrun (ninja -C $b)" >&2; exit 2; }
done
if [ -z "$outdir" ]; then outdir=$(mktemp -d); trap 'rm -rf "$outdir"' EXIT; fi
mkdir -p "$outdir"
rm -f "$outdir"/old.*.json "$outdir"/new.*.json
for ((i = 1; i <= reps; i++)); do
    if ((i % 2)); then order="old new"; else order="new old"; fi
    for w in $order; do
        echo "compare_builds: $coll rep $i/$reps: $w" >&2
        b=$old env=(); [ "$w" = new ] && b=$new env=("${new_env[@]}")
        env "${env[@]}" "$b/launcher/orbitrun" -n "$nranks" "$b/bench/${coll}_bench" --json "$outdir/$w.$i.json" "$@" \
            >"$outdir/$w.$i.log" 2>&1 || { tail -n 20 "$outdir/$w.$i.log" >&2; echo "$0: the $w run failed" >&2; exit 1; }
    done
done
python3 - "$outdir" "$coll" "$nranks" "$reps" <<'PY'
import glob, json, os, statistics, sys
outdir, coll, nranks, reps = sys.argv[1:5]
rows = {}
for path in sorted(glob.glob(os.path.join(outdir, "*.json"))):
    which = os.path.basename(path).split(".")[0]
    for line in open(path):
        r = json.loads(line)
        rows.setdefault((r["inplace"], r["size"]), {}).setdefault(which, []).append(r["time_us"])
for inplace in (False, True):
    sizes = sorted(s for (ip, s) in rows if ip == inplace)
    if not sizes:
        continue
    print(f"# {coll}  nranks {nranks}  median of {reps} runs each  {'in-place' if inplace else 'out-of-place'}")
    print(f"# {'size(B)':>10} {'old(us)':>10} {'new(us)':>10} {'new/old':>8}   old runs / new runs (us)")
    for s in sizes:
        o, n = rows[(inplace, s)].get("old", []), rows[(inplace, s)].get("new", [])
        if not o or not n:
            continue
        mo, mn = statistics.median(o), statistics.median(n)
        print(f"  {s:>10} {mo:>10.2f} {mn:>10.2f} {mn / mo:>8.3f}   "
              f"{' '.join(f'{v:.1f}' for v in o)} / {' '.join(f'{v:.1f}' for v in n)}")
PY
