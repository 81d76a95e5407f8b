#!/usr/bin/env bash
# Two builds of orbit on the same bench, alternating runs, medians: did a change make orbit
# slower? (bench/compare.sh compares orbit with Open MPI; this compares orbit with itself.)
#   bash bench/compare_builds.sh [-n NRANKS] [-r REPS] [-o OUTDIR] [-N NS] [-E VAR=VAL]... OLD_BUILD NEW_BUILD COLLECTIVE [bench flags...]
# Each run is OLD_BUILD/launcher/orbitrun -n NRANKS OLD_BUILD/bench/<coll>_bench --json ...,
# then the same with NEW_BUILD, the order swapped every repetition. Prints per size the
# median time of each and new/old (> 1: the new build is slower). -E sets a variable for the
# NEW runs only: one build against itself with a setting on (ORBIT_TRACE=DIR: what tracing costs).
# "paired" is the median of new/old over each repetition's two runs, which ran one after the
# other: where the machine moves between states that shift both (a VM's vCPUs on near or far
# cores, ranks sharing CPUs), it holds where the two medians' ratio can swing.
# Each run is bracketed by NEW_BUILD/bench/c2c (a cache line's round trip between the first two
# CPUs, as bench/compare.sh does: a VM's vCPUs move between cores that share a cache and cores
# that do not, and small calls' times move with them); -N NS counts only the runs whose
# brackets are both under NS ns.
set -euo pipefail
nranks=2 reps=7 outdir="" near_ns=0
new_env=()
while getopts "n:r:o:E:N:h" opt; do
    case $opt in
    n) nranks=$OPTARG ;; r) reps=$OPTARG ;; o) outdir=$OPTARG ;; E) new_env+=("$OPTARG") ;;
    N) near_ns=$OPTARG ;;
    h) sed -n 2,15p "$0"; exit 0 ;;
    *) sed -n 2,15p "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 3 ] || { sed -n 2,15p "$0" >&2; exit 2; }
case $nranks$reps$near_ns in *[!0-9]*) echo "$0: -n, -r and -N take non-negative integers" >&2; exit 2 ;; esac
old=$1 new=$2 coll=$3
shift 3
for b in "$old" "$new"; do
    [ -x "$b/bench/${coll}_bench" ] && [ -x "$b/launcher/orbitrun" ] ||
        { echo "$0: $b: no bench/${coll}_bench or launcher/orbitrun (ninja -C $b)" >&2; exit 2; }
done
# Two build dirs of one source tree are one program built twice: `meson setup DIR` takes the
# current directory's tree, so an old build set up from the new tree's directory measures the
# new code (2026-11-30: an hour of "no change" that way). Said, not refused: -E compares a
# build with itself on purpose.
src_of() { sed -n 's/.*"source": *"\([^"]*\)".*/\1/p' "$1/meson-info/meson-info.json" 2>/dev/null | head -n 1; }
if [ "$(cd "$old" && pwd)" != "$(cd "$new" && pwd)" ] && [ -n "$(src_of "$old")" ] && [ "$(src_of "$old")" = "$(src_of "$new")" ]; then
    echo "compare_builds: warning: $old and $new were both set up from $(src_of "$new"): the same code" \
        "(set up the old one from its own tree: cd OLD_TREE && meson setup build)" >&2
fi
if [ -z "$outdir" ]; then outdir=$(mktemp -d); trap 'rm -rf "$outdir"' EXIT; fi
mkdir -p "$outdir"
rm -f "$outdir"/old.*.json "$outdir"/new.*.json "$outdir"/runs-cores.txt
. "$(dirname "$0")/c2c_ns.sh"
cores() { c2c_ns "$new"; }
for ((i = 1; i <= reps; i++)); do
    if ((i % 2)); then order="old new"; else order="new old"; fi
    for w in $order; do
        echo "compare_builds: $coll rep $i/$reps: $w" >&2
        b=$old env=(); [ "$w" = new ] && b=$new env=("${new_env[@]}")
        before=$(cores)
        env "${env[@]}" "$b/launcher/orbitrun" -n "$nranks" "$b/bench/${coll}_bench" --json "$outdir/$w.$i.json" "$@" \
            >"$outdir/$w.$i.log" 2>&1 || { tail -n 20 "$outdir/$w.$i.log" >&2; echo "$0: the $w run failed" >&2; exit 1; }
        echo "$w $i $before $(cores)" >>"$outdir/runs-cores.txt"
    done
done
python3 - "$outdir" "$coll" "$nranks" "$reps" "$near_ns" <<'PY'
import glob, json, os, statistics, sys
outdir, coll, nranks, reps, near_ns = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
brackets = {}  # (which, rep) -> (before, after) ns, None where bench/c2c could not tell
cores_path = os.path.join(outdir, "runs-cores.txt")
if os.path.exists(cores_path):
    for line in open(cores_path):
        w, r, before, after = line.split()
        brackets[(w, r)] = tuple(None if v == "-" else int(v) for v in (before, after))
def near(which, rep):
    br = brackets.get((which, rep))
    return br is not None and None not in br and max(br) < near_ns
rows = {}
counted = {}
for path in sorted(glob.glob(os.path.join(outdir, "*.json"))):
    which, rep = os.path.basename(path).split(".")[:2]
    if near_ns and not near(which, rep):
        continue
    counted[which] = counted.get(which, 0) + 1
    for line in open(path):
        r = json.loads(line)
        rows.setdefault((r["inplace"], r["size"]), {}).setdefault(which, {})[int(rep)] = r["time_us"]
def fmt(v):  # a run's time: three significant figures (small calls take fractions of a us)
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"
for inplace in (False, True):
    sizes = sorted(s for (ip, s) in rows if ip == inplace)
    if not sizes:
        continue
    runs = (f"median of the runs with both brackets under {near_ns} ns (old {counted.get('old', 0)}, "
            f"new {counted.get('new', 0)} of {reps})" if near_ns else f"median of {reps} runs each")
    print(f"# {coll}  nranks {nranks}  {runs}  {'in-place' if inplace else 'out-of-place'}")
    print(f"# {'size(B)':>10} {'old(us)':>10} {'new(us)':>10} {'new/old':>8} {'paired':>7}   old runs / new runs (us)")
    for s in sizes:
        od, nd = rows[(inplace, s)].get("old", {}), rows[(inplace, s)].get("new", {})
        if not od or not nd:
            continue
        o, n = [od[k] for k in sorted(od)], [nd[k] for k in sorted(nd)]
        mo, mn = statistics.median(o), statistics.median(n)
        # run i of each side ran next to each other: the machine's state, which moves the times
        # of both by more than most changes do (bimodal on a VM), cancels in their ratio
        both = sorted(set(od) & set(nd))
        paired = f"{statistics.median(nd[k] / od[k] for k in both):>7.3f}" if both else f"{'-':>7}"
        print(f"  {s:>10} {mo:>10.2f} {mn:>10.2f} {mn / mo:>8.3f} {paired}   "
              f"{' '.join(fmt(v) for v in o)} / {' '.join(fmt(v) for v in n)}")
for w in ("old", "new"):
    runs = sorted((int(r), br) for (x, r), br in brackets.items() if x == w)
    if runs:
        shown = " ".join("-".join("?" if v is None else str(v) for v in br) for _, br in runs)
        print(f"# cores ns (bench/c2c before-after each run) {w}: {shown}")
PY
