#!/usr/bin/env bash
# Runs one torch.distributed benchmark with two backends (orbit and Gloo unless --backends
# says otherwise), alternating them and swapping who goes first each round so that a noisy
# machine hurts both alike, keeps each run's JSON and log, and prints the medians over the
# rounds side by side: per message size for allreduce (bench/torch_allreduce_bench.py), per
# model for ddp-* (bench/torch_ddp_step.py).
set -euo pipefail

usage() {
    cat <<USAGE
usage: $0 [-r ROUNDS] [-n NRANKS] [-o OUTDIR] [--backends A,B] WHAT [bench flags...]
  WHAT            allreduce | ddp-convnet | ddp-resnet18
  -r ROUNDS       runs per backend                                [5]
  -n NRANKS       ranks per run (torch.distributed.run --standalone)  [2]
  -o OUTDIR       where the runs' JSON and logs go  [results/DATE-torch-WHAT]
  --backends A,B  the two backends, A's ratios against B           [orbit,gloo]
  -S              run nothing: print the table of the runs already in OUTDIR
  bench flags     passed to every run (--sizes, --device cuda, --batch, --steps, ...),
                  not --backend, --json or --model
Environment: ORBIT_TORCH_PYTHON, the Python that has torch (and orbit_torch)
             [/root/.cache/orbit/torch-venv/bin/python].
USAGE
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${ORBIT_TORCH_PYTHON:-/root/.cache/orbit/torch-venv/bin/python}
rounds=5
nranks=2
outdir=""
backends=orbit,gloo
summary_only=0
while [ $# -gt 0 ]; do
    case $1 in
    -r) rounds=${2:?-r needs a value}; shift 2 ;;
    -S) summary_only=1; shift ;;
    -n) nranks=${2:?-n needs a value}; shift 2 ;;
    -o) outdir=${2:?-o needs a value}; shift 2 ;;
    --backends) backends=${2:?--backends needs a value}; shift 2 ;;
    --backends=*) backends=${1#--backends=}; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) usage >&2; exit 2 ;;
    *) break ;;
    esac
done
if [ $# -lt 1 ]; then
    usage >&2
    exit 2
fi
what=$1
shift
case $what in
allreduce) bench=(bench/torch_allreduce_bench.py) ;;
ddp-convnet) bench=(bench/torch_ddp_step.py --model convnet) ;;
ddp-resnet18) bench=(bench/torch_ddp_step.py --model resnet18) ;;
*) echo "$0: $what: not one of allreduce ddp-convnet ddp-resnet18" >&2; exit 2 ;;
esac
for a in "$@"; do
    case $a in
    --backend | --backend=* | --json* | --model*) echo "$0: $a: set by this script, leave it out" >&2; exit 2 ;;
    esac
done
if ! [[ $rounds =~ ^[1-9][0-9]*$ && $nranks =~ ^[1-9][0-9]*$ ]]; then
    echo "$0: -r and -n take positive integers" >&2
    exit 2
fi
IFS=, read -r back_a back_b extra <<<"$backends"
if [ -z "$back_a" ] || [ -z "${back_b:-}" ] || [ -n "${extra:-}" ]; then
    echo "$0: --backends takes two backends, A,B" >&2
    exit 2
fi
# Each backend's runs are told apart by a label; the same backend twice (a check of the
# plumbing, or of the noise) gets a second label.
label_a=$back_a
label_b=$back_b
[ "$back_a" != "$back_b" ] || label_b=$back_b-2
[ -x "$py" ] || { echo "$0: $py: no such Python (set ORBIT_TORCH_PYTHON)" >&2; exit 2; }

# The benches set torch's threads themselves (--threads, 1 by default); this only keeps
# torchrun from announcing that it chose OMP_NUM_THREADS=1 in every log.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

outdir=${outdir:-$root/results/$(date +%F)-torch-$what}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd) # the runs go from the repository root
if ((summary_only)); then
    rounds=$(ls "$outdir/$label_a".*.json 2>/dev/null | wc -l)
else
rm -f "$outdir/$label_a".*.json "$outdir/$label_b".*.json # a kept dir's last runs must not count

{
    echo "date: $(date -Is)"
    echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
    echo "cpus: $(nproc --all)"  # plain nproc obeys OMP_NUM_THREADS
    echo "torch: $("$py" -c 'import torch; print(torch.__version__)')"
    echo "orbit commit: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi -L | sed 's/^/gpu: /'
    fi
    echo "command: $0 -r $rounds -n $nranks --backends $backends $what $*"
} >"$outdir/machine.txt"
fi

run() { # backend label round [bench flags...]
    local backend=$1 log=$outdir/$2.$3.log json=$outdir/$2.$3.json
    echo "torch_compare: $what round $3/$rounds: $2" >&2
    shift 3
    (cd "$root" && "$py" -m torch.distributed.run --standalone --nproc_per_node="$nranks" \
        "${bench[@]}" --backend "$backend" --json "$json" "$@") >"$log" 2>&1 ||
        if [ -s "$json" ] && grep -q "terminate called without an active exception" "$log"; then
            # Gloo aborts now and then in its teardown, after the results are written (about
            # 1 run in 10 here): the measurement is complete, so it counts; the log keeps it
            echo "torch_compare: the $backend run aborted at exit after writing $json (kept; see $log)" >&2
        else
            # The ranks' last words, without torchrun's own traceback and summary after them.
            sed '/elastic\/multiprocessing\/api.py.*failed (exitcode/,$d' "$log" | tail -n 20 >&2
            echo "$0: the $backend run failed, log in $log" >&2
            exit 1
        fi
}

for ((i = 1; i <= rounds && !summary_only; i++)); do
    if ((i % 2)); then
        run "$back_a" "$label_a" "$i" "$@"
        run "$back_b" "$label_b" "$i" "$@"
    else
        run "$back_b" "$label_b" "$i" "$@"
        run "$back_a" "$label_a" "$i" "$@"
    fi
done

"$py" - "$outdir" "$what" "$label_a" "$label_b" "$rounds" "$nranks" <<'PY'
import glob, json, os, statistics, sys

outdir, what, a, b, rounds, nranks = sys.argv[1:]
runs = {}
for label in (a, b):
    runs[label] = []
    for path in sorted(glob.glob(os.path.join(outdir, f"{label}.*.json"))):
        with open(path) as f:
            runs[label].append(json.load(f))
med = statistics.median
print(f"# {what}  nranks {nranks}  median of {rounds} runs per backend  ({outdir})")

if what == "allreduce":
    rows = {}  # bytes -> label -> list of rows
    wrong = {a: 0, b: 0}
    for label in (a, b):
        for run in runs[label]:
            for r in run["rows"]:
                rows.setdefault(r["bytes"], {}).setdefault(label, []).append(r)
                wrong[label] += r["wrong"]
    print(f"# {'size':>10}  {a:>23}  {b:>23}  {a + '/' + b:>11}  {b + '/' + a:>11}")
    print(f"# {'(B)':>10}  {'time(us)':>11} {'busbw(GB/s)':>11}  {'time(us)':>11} {'busbw(GB/s)':>11}"
          f"  {'(busbw)':>11}  {'(time)':>11}")
    for size in sorted(rows):
        cells = {}
        for label in (a, b):
            rs = rows[size].get(label)
            cells[label] = (med(r["time_us"] for r in rs), med(r["busbw"] for r in rs)) if rs else None
        line = f"  {size:>10}"
        for label in (a, b):
            c = cells[label]
            line += f"  {c[0]:>11.2f} {c[1]:>11.3f}" if c else f"  {'N/A':>11} {'N/A':>11}"
        ca, cb = cells[a], cells[b]
        line += f"  {ca[1] / cb[1]:>11.2f}" if ca and cb and cb[1] > 0 else f"  {'N/A':>11}"
        line += f"  {cb[0] / ca[0]:>11.2f}" if ca and cb and ca[0] > 0 else f"  {'N/A':>11}"
        print(line)
    print(f"# above 1: {a} is faster")
    for label in (a, b):
        if wrong[label]:
            print(f"# {label}: {wrong[label]} wrong elements")
    sys.exit(1 if any(wrong.values()) else 0)

models = {}  # model -> label -> (step, no_sync, exposed) medians
for label in (a, b):
    by_model = {}
    for run in runs[label]:
        by_model.setdefault(run["model"], []).append(run)
    for model, rs in by_model.items():
        models.setdefault(model, {})[label] = tuple(med(r[k] for r in rs)
                                                    for k in ("step_ms", "nosync_ms", "exposed_comm_ms"))
print(f"# {'model':>10}  {a:>30}  {b:>30}  {b + '/' + a:>16}")
print(f"# {'(ms)':>10}  {'step':>10}{'no_sync':>10}{'exposed':>10}  {'step':>10}{'no_sync':>10}{'exposed':>10}"
      f"  {'step':>8}{'exposed':>8}")
for model in sorted(models):
    line = f"  {model:>10}"
    for label in (a, b):
        c = models[model].get(label)
        line += f"  {c[0]:>10.2f}{c[1]:>10.2f}{c[2]:>10.2f}" if c else f"  {'N/A':>10}{'N/A':>10}{'N/A':>10}"
    ca, cb = models[model].get(a), models[model].get(b)
    line += f"  {cb[0] / ca[0]:>8.2f}" if ca and cb and ca[0] > 0 else f"  {'N/A':>8}"
    # An exposed time at or below zero is noise around full overlap: no ratio to take.
    line += f"{cb[2] / ca[2]:>8.2f}" if ca and cb and ca[2] > 0 and cb[2] > 0 else f"{'N/A':>8}"
    print(line)
print(f"# {b}/{a} above 1: {a} is faster")
PY
