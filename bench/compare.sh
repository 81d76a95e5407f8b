#!/usr/bin/env bash
# Runs one collective's bench with orbit (--backend custom, under orbitrun) and with Open
# MPI (--backend mpi, under mpirun), alternating so that a noisy machine hurts both alike,
# and prints the median time and busbw of each per size with the ratio custom/mpi.
# Builds nothing: point it at a build dir that has the benches and the launcher.
# Each run is bracketed by bench/c2c (a cache line's round trip between the first two CPUs):
# a VM's vCPUs can sit on cores that share a cache or on cores that do not and move between
# the two within seconds, and shared-memory figures move with them; -N keeps only the runs
# whose brackets both say near.
set -euo pipefail

usage() {
    cat <<USAGE
usage: $0 [-n NRANKS] [-r REPS] [-o OUTDIR] [-N NS] [-c FLAGS] BUILD_DIR COLLECTIVE [bench flags...]
  COLLECTIVE   allreduce broadcast reduce gather allgather reduce_scatter sendrecv
               alltoall scatter
  -n NRANKS    ranks per run                         [2]
  -r REPS      runs per backend, alternating         [5]
  -o OUTDIR    keep each run's table and JSON here   [a temporary dir, removed]
  -N NS        medians over the runs whose bench/c2c brackets are both under NS ns only
               (the others are listed, not counted)  [every run counts]
  -c FLAGS     more bench flags for orbit's runs only, space separated (-c "--mem lib":
               orbit's windows against MPI's malloc'd buffers)  [none]
  bench flags  passed to both runs (--size, --dtype, --op, --check, ...), not --backend/--json
Environment: ORBITRUN (default BUILD_DIR/launcher/orbitrun), MPIRUN (default mpirun).
USAGE
}

nranks=2
reps=5
outdir=""
near_ns=0
custom_only=()
while getopts "n:r:o:N:c:h" opt; do
    case $opt in
    n) nranks=$OPTARG ;;
    r) reps=$OPTARG ;;
    o) outdir=$OPTARG ;;
    N) near_ns=$OPTARG ;;
    c) read -r -a custom_only <<<"$OPTARG" ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ $# -lt 2 ]; then
    usage >&2
    exit 2
fi
build=$1
coll=$2
shift 2
flags=("$@")

for a in "$@"; do
    case $a in
    --backend* | --json*) echo "$0: $a: set by this script, leave it out" >&2; exit 2 ;;
    esac
done
case $nranks$reps$near_ns in *[!0-9]*) echo "$0: -n, -r and -N take positive integers" >&2; exit 2 ;; esac

bench=$build/bench/${coll}_bench
orbitrun=${ORBITRUN:-$build/launcher/orbitrun}
mpirun=${MPIRUN:-mpirun}
[ -x "$bench" ] || { echo "$0: $bench: not built (ninja -C $build)" >&2; exit 2; }
[ -x "$orbitrun" ] || { echo "$0: $orbitrun: launcher not built" >&2; exit 2; }
command -v "$mpirun" >/dev/null || { echo "$0: $mpirun: not found (install Open MPI)" >&2; exit 2; }

if [ -z "$outdir" ]; then
    outdir=$(mktemp -d)
    trap 'rm -rf "$outdir"' EXIT
fi
mkdir -p "$outdir"
rm -f "$outdir"/custom.*.json "$outdir"/mpi.*.json "$outdir"/runs-cores.txt # a kept dir's last run must not count

# Under root in a container, Open MPI needs to be told twice that it is fine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

. "$(dirname "$0")/c2c_ns.sh"
cores() { c2c_ns "$build"; }

run() { # backend rep
    local log=$outdir/$1.$2.log json=$outdir/$1.$2.json before
    echo "compare: $coll rep $2/$reps: $1" >&2
    before=$(cores)
    if [ "$1" = custom ]; then
        "$orbitrun" -n "$nranks" "$bench" --backend custom --json "$json" "${flags[@]}" ${custom_only[@]+"${custom_only[@]}"} \
            >"$log" 2>&1 ||
            { tail -n 20 "$log" >&2; echo "$0: the custom run failed, log in $log" >&2; exit 1; }
    else
        "$mpirun" --oversubscribe -np "$nranks" "$bench" --backend mpi --json "$json" "${flags[@]}" \
            >"$log" 2>&1 ||
            { tail -n 20 "$log" >&2; echo "$0: the mpi run failed, log in $log" >&2; exit 1; }
    fi
    echo "$1 $2 $before $(cores)" >>"$outdir/runs-cores.txt"
}

for ((i = 1; i <= reps; i++)); do
    # Swap who goes first each repetition, so neither always runs on a warmer machine.
    if ((i % 2)); then order="custom mpi"; else order="mpi custom"; fi
    for b in $order; do
        run "$b" "$i"
    done
done

python3 - "$outdir" "$coll" "$nranks" "$reps" "$near_ns" <<'PY'
import glob, json, os, statistics, sys

outdir, coll, nranks, reps, near_ns = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
brackets = {}  # (backend, rep) -> (before, after) ns, None where bench/c2c could not tell
cores_path = os.path.join(outdir, "runs-cores.txt")
if os.path.exists(cores_path):
    with open(cores_path) as f:
        for line in f:
            b, r, before, after = line.split()
            brackets[(b, r)] = tuple(None if v == "-" else int(v) for v in (before, after))

def near(backend, rep):
    br = brackets.get((backend, rep))
    return br is not None and None not in br and max(br) < near_ns

rows = {}  # (inplace, size) -> backend -> list of (time_us, busbw)
by_rep = {}  # (inplace, size) -> backend -> rep -> time_us
wrong = {}
counted = {}  # backend -> runs whose figures count
for path in sorted(glob.glob(os.path.join(outdir, "*.json"))):
    backend, rep = os.path.basename(path).split(".")[:2]
    if near_ns and not near(backend, rep):
        continue
    counted[backend] = counted.get(backend, 0) + 1
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            key = (r["inplace"], r["size"])
            rows.setdefault(key, {}).setdefault(backend, []).append((r["time_us"], r["busbw"]))
            by_rep.setdefault(key, {}).setdefault(backend, {})[int(rep)] = r["time_us"]
            if r["wrong"]:
                wrong[backend] = wrong.get(backend, 0) + r["wrong"]

def summary(vals):
    """Median time, and the busbw of that time (busbw * time is fixed per size), so the
    two columns always describe the same run time."""
    t = statistics.median(v[0] for v in vals)
    return t, (vals[0][1] * vals[0][0] / t if t > 0 else 0.0)

for inplace in (False, True):
    sizes = sorted(s for (ip, s) in rows if ip == inplace)
    if not sizes:
        continue
    runs = (f"median of the runs with both brackets under {near_ns} ns (custom {counted.get('custom', 0)}, "
            f"mpi {counted.get('mpi', 0)} of {reps})" if near_ns else f"median of {reps} runs per backend")
    print(f"# {coll}  nranks {nranks}  {runs}  {'in-place' if inplace else 'out-of-place'}")
    print(f"# {'size':>10}  {'custom':>24}  {'mpi':>24}  {'custom/mpi':>10}  {'paired':>7}")
    print(f"# {'(B)':>10}  {'time(us)':>12}{'busbw(GB/s)':>12}  {'time(us)':>12}"
          f"{'busbw(GB/s)':>12}  {'(time)':>10}  {'(time)':>7}")
    for s in sizes:
        b = rows[(inplace, s)]
        cells = []
        for name in ("custom", "mpi"):
            if name in b:
                cells.append(summary(b[name]))
            else:
                cells.append(None)
        line = f"  {s:>10}"
        for c in cells:
            line += "  " + (f"{c[0]:>12.2f}{c[1]:>12.3f}" if c else f"{'N/A':>12}{'N/A':>12}")
        ratio = cells[0][0] / cells[1][0] if cells[0] and cells[1] and cells[1][0] > 0 else None
        line += f"  {ratio:>10.2f}" if ratio is not None else f"  {'N/A':>10}"
        # each repetition's two runs ran one after the other: their ratio, median over the
        # repetitions, holds where the machine's state moves both (docs/bench.md)
        pr = by_rep.get((inplace, s), {})
        both = sorted(set(pr.get("custom", {})) & set(pr.get("mpi", {})))
        line += (f"  {statistics.median(pr['custom'][k] / pr['mpi'][k] for k in both):>7.2f}" if both
                 else f"  {'N/A':>7}")
        print(line)
    print("#")
print("# custom/mpi (time) below 1: orbit is faster; paired: the median of each repetition's custom/mpi")
if brackets:
    for name in ("custom", "mpi"):
        runs = sorted((int(r), br) for (b, r), br in brackets.items() if b == name)
        shown = " ".join("-".join("?" if v is None else str(v) for v in br) for _, br in runs)
        print(f"# cores ns (bench/c2c before-after each run) {name}: {shown}")
if near_ns:
    for name in ("custom", "mpi"):
        if not counted.get(name):
            print(f"# {name}: no run had both brackets under {near_ns} ns; its cells are N/A")
for name, n in sorted(wrong.items()):
    print(f"# {name}: {n} wrong elements in --check")
sys.exit(1 if wrong else 0)
PY
if ((${#custom_only[@]})); then
    echo "# orbit's runs also had: ${custom_only[*]} (Open MPI's did not)"
fi
