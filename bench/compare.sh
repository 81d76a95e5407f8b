#!/usr/bin/env bash
# Runs one collective's bench with orbit (--backend custom, under orbitrun) and with Open
# MPI (--backend mpi, under mpirun), alternating so that a noisy machine hurts both alike,
# and prints the median time and busbw of each per size with the ratio custom/mpi.
# Builds nothing: point it at a build dir that has the benches and the launcher.
set -euo pipefail

usage() {
    cat <<USAGE
usage: $0 [-n NRANKS] [-r REPS] [-o OUTDIR] BUILD_DIR COLLECTIVE [bench flags...]
  COLLECTIVE   allreduce broadcast reduce gather allgather reduce_scatter sendrecv
               alltoall scatter
  -n NRANKS    ranks per run                         [2]
  -r REPS      runs per backend, alternating         [5]
  -o OUTDIR    keep each run's table and JSON here   [a temporary dir, removed]
  bench flags  passed to both runs (--size, --dtype, --op, --check, ...), not --backend/--json
Environment: ORBITRUN (default BUILD_DIR/launcher/orbitrun), MPIRUN (default mpirun).
USAGE
}

nranks=2
reps=5
outdir=""
while getopts "n:r:o:h" opt; do
    case $opt in
    n) nranks=$OPTARG ;;
    r) reps=$OPTARG ;;
    o) outdir=$OPTARG ;;
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
case $nranks$reps in *[!0-9]*) echo "$0: -n and -r take positive integers" >&2; exit 2 ;; esac

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
rm -f "$outdir"/custom.*.json "$outdir"/mpi.*.json # a kept dir's last run must not count

# Under root in a container, Open MPI needs to be told twice that it is fine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

run() { # backend rep
    local log=$outdir/$1.$2.log json=$outdir/$1.$2.json
    echo "compare: $coll rep $2/$reps: $1" >&2
    if [ "$1" = custom ]; then
        "$orbitrun" -n "$nranks" "$bench" --backend custom --json "$json" "${flags[@]}" >"$log" 2>&1 ||
            { tail -n 20 "$log" >&2; echo "$0: the custom run failed, log in $log" >&2; exit 1; }
    else
        "$mpirun" --oversubscribe -np "$nranks" "$bench" --backend mpi --json "$json" "${flags[@]}" \
            >"$log" 2>&1 ||
            { tail -n 20 "$log" >&2; echo "$0: the mpi run failed, log in $log" >&2; exit 1; }
    fi
}

for ((i = 1; i <= reps; i++)); do
    # Swap who goes first each repetition, so neither always runs on a warmer machine.
    if ((i % 2)); then order="custom mpi"; else order="mpi custom"; fi
    for b in $order; do
        run "$b" "$i"
    done
done

python3 - "$outdir" "$coll" "$nranks" "$reps" <<'PY'
import glob, json, os, statistics, sys

outdir, coll, nranks, reps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = {}  # (inplace, size) -> backend -> list of (time_us, busbw)
wrong = {}
for path in sorted(glob.glob(os.path.join(outdir, "*.json"))):
    backend = os.path.basename(path).split(".")[0]
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            key = (r["inplace"], r["size"])
            rows.setdefault(key, {}).setdefault(backend, []).append((r["time_us"], r["busbw"]))
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
    print(f"# {coll}  nranks {nranks}  median of {reps} runs per backend  "
          f"{'in-place' if inplace else 'out-of-place'}")
    print(f"# {'size':>10}  {'custom':>24}  {'mpi':>24}  {'custom/mpi':>10}")
    print(f"# {'(B)':>10}  {'time(us)':>12}{'busbw(GB/s)':>12}  {'time(us)':>12}"
          f"{'busbw(GB/s)':>12}  {'(time)':>10}")
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
        print(line)
    print("#")
print("# custom/mpi (time) below 1: orbit is faster")
for name, n in sorted(wrong.items()):
    print(f"# {name}: {n} wrong elements in --check")
sys.exit(1 if wrong else 0)
PY
