#!/usr/bin/env bash
# The device path in one go, sized for one device call (10 minutes): build, test, benchmark
# orbit on device buffers against NCCL, and print a short table last. docs/gpu.md explains it.
# Every stage stays inside a time budget (-T), and after each one the logs so far are packed
# into OUTDIR/gpu-suite.tar.gz with OUTDIR/summary.txt, so a late failure or a kill at the
# call's limit keeps the early figures ($OUT, where the device tool collects files, is the
# default OUTDIR).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
# Short waits: a hang must cost seconds of device time, not ORBIT_TIMEOUT's default 600 s.
export ORBIT_TIMEOUT=${ORBIT_TIMEOUT:-30} ORBIT_INIT_TIMEOUT=${ORBIT_INIT_TIMEOUT:-30}
# Ranks that are threads need two streams each on the context's hardware queues (docs/gpu.md).
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-32}

usage() {
    cat <<USAGE
usage: $0 [-B BUILD] [-t quick|full|none] [-s SIZES] [-n "RANKS..."] [-c COLLS] [-S] [-k] [-E] [-T SECS] [-o DIR] [-M]
  -B BUILD   build directory (configured here if missing)     [build-gpu-suite]
  -t TESTS   meson suite: quick (gpu-quick), full (gpu), none   [quick]
  -s SIZES   bench sizes, MIN:MAX in bytes                       [8:64M]
  -n RANKS   orbit rank counts on this host (one GPU each while
             there are GPUs, then ranks share them)               ["1 2 4"]
  -c COLLS   benches to run                                      ["allreduce allgather reduce_scatter broadcast"]
  -S         also run compute-sanitizer memcheck and racecheck on a small case
  -k         skip the build (use BUILD as it is)
  -E         the CPU emulator instead of a GPU (-Dgpu_emu=true): a dry run of this script
             on a machine without one; its figures mean nothing    [build-gpu-suite-emu]
  -T SECS    time budget of the whole run; a stage that would not fit is skipped, saying so [540]
  -o DIR     where the packed logs and the summary go              [\$OUT, else BUILD/gpu-suite]
  -M         start the MPS daemon when processes share a GPU (without MPS they time-slice:
             benches with more ranks than GPUs are then skipped, with the reason)
Prints stage timings as it goes and, last, busbw (GB/s) per collective and size.
NCCL refuses two ranks on one GPU, so its column exists only up to the number of GPUs.
USAGE
}

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-gpu-suite
tests=quick
sizes=8:64M
ranks="1 2 4"
colls="allreduce allgather reduce_scatter broadcast"
sanitize=0
do_build=1
emu=0
budget=540
outdir=${OUT:-}
start_mps=0
while getopts "B:t:s:n:c:SkET:o:Mh" opt; do
    case $opt in
    B) build=$OPTARG ;;
    t) tests=$OPTARG ;;
    s) sizes=$OPTARG ;;
    n) ranks=$OPTARG ;;
    c) colls=$OPTARG ;;
    S) sanitize=1 ;;
    k) do_build=0 ;;
    E) emu=1; [ "$build" = "$root/build-gpu-suite" ] && build=$root/build-gpu-suite-emu ;;
    T) budget=$OPTARG ;;
    o) outdir=$OPTARG ;;
    M) start_mps=1 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
case $tests in quick | full | none) ;; *) echo "$0: -t takes quick, full or none" >&2; exit 2 ;; esac

out=$build/gpu-suite
[ -n "$outdir" ] || outdir=$out
mkdir -p "$out" "$outdir"
t0=$SECONDS
summary=$outdir/summary.txt
: >"$summary"
# pack: the logs so far into the out dir (one file: the device tool brings back few)
pack() {
    [ "$outdir" = "$out" ] && return 0
    tar -czf "$outdir/gpu-suite.tar.gz.part" -C "$(dirname "$out")" "$(basename "$out")" 2>/dev/null &&
        mv "$outdir/gpu-suite.tar.gz.part" "$outdir/gpu-suite.tar.gz"
}
stage() { pack; printf '\n== %s (%ds)\n' "$1" $((SECONDS - t0)) | tee -a "$summary"; }
# left: seconds of the budget still there
left() { echo $((budget - (SECONDS - t0))); }
# fits NEED: whether a step of about NEED seconds fits the budget (else says it is skipped)
fits() {
    if [ "$(left)" -lt "$1" ]; then
        echo "skipped: $2 (needs about $1 s, $(left) s of the budget left)" | tee -a "$summary"
        return 1
    fi
}
status=0

stage "machine"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader
    ngpu=$(nvidia-smi -L | grep -c '^GPU')
else
    echo "nvidia-smi not found"
    ngpu=0
fi
nproc_=$(nproc)
[ $emu = 1 ] && echo "CPU emulator (-E): every time and bandwidth below is the emulator's and means nothing"
mps=none
if pgrep -x nvidia-cuda-mps-control >/dev/null 2>&1 || [ -e "${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}/control" ]; then
    mps=running
fi
if [ "$mps" = none ] && [ $start_mps = 1 ] && command -v nvidia-cuda-mps-control >/dev/null; then
    nvidia-cuda-mps-control -d && mps=started
fi
if command -v nvidia-smi >/dev/null; then
    echo "compute mode: $(nvidia-smi --query-gpu=compute_mode --format=csv,noheader | tr '\n' ' ')"
fi
{
    echo "$nproc_ CPUs, $ngpu GPU(s); MPS: $mps; ORBIT_TIMEOUT=$ORBIT_TIMEOUT; CUDA_DEVICE_MAX_CONNECTIONS=$CUDA_DEVICE_MAX_CONNECTIONS"
    command -v nvcc >/dev/null && nvcc --version | tail -1
} | tee -a "$summary"

if [ $do_build = 1 ]; then
    stage "build ($build)"
    if [ ! -f "$build/build.ninja" ]; then
        device_opt=-Dcuda=enabled
        [ $emu = 1 ] && device_opt=-Dgpu_emu=true
        meson setup "$build" "$root" -Dwerror=true $device_opt >"$build.setup.log" 2>&1 ||
            { tail -30 "$build.setup.log"; exit 1; }
    fi
    ninja -C "$build" -j "$nproc_" >"$build.ninja.log" 2>&1 || { grep -E "error|FAILED" "$build.ninja.log" | head -40; exit 1; }
    tail -1 "$build.ninja.log"
fi
mkdir -p "$out"
orbitrun=$build/launcher/orbitrun

if [ "$tests" != none ]; then
    suite=gpu-quick
    [ "$tests" = full ] && suite=gpu
    stage "tests (meson suite $suite)"
    if fits 60 "the $suite tests"; then
        timeout $(($(left) - 30)) meson test -C "$build" --suite "$suite" --num-processes 1 --print-errorlogs \
            >"$out/tests.log" 2>&1 || status=1
        grep -E "^ *[0-9]+/[0-9]+ " "$out/tests.log" | sed 's/  */ /g' | tee -a "$summary"
        grep -E "^(Ok|Fail|Skipped|Timeout):" "$out/tests.log" | tee -a "$summary"
    fi
fi

if [ $sanitize = 1 ] && ! command -v compute-sanitizer >/dev/null; then
    echo "skipped: compute-sanitizer (not on PATH)" | tee -a "$summary"
elif [ $sanitize = 1 ]; then
    stage "compute-sanitizer"
    san() {
        local tool=$1
        shift
        if compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" >"$out/sanitizer-$tool.log" 2>&1; then
            echo "$tool: clean ($*)"
        else
            status=1
            echo "$tool: FAILED ($*):"
            grep -E "=========" "$out/sanitizer-$tool.log" | head -20
        fi
    }
    # Processes, one rank each: the sanitizer serialises launches, so ranks that are threads
    # (whose kernels must run side by side) would wait for each other until the timeout.
    san_ranks() { # TOOL: two ranks as processes, each under its own sanitizer
        local tool=$1
        if "$orbitrun" --no-tag -n 2 compute-sanitizer --tool "$tool" --error-exitcode 9 \
            "$build/tests/gpu/test_gpu_coll" --quick --coll allreduce >"$out/sanitizer-$tool-ranks.log" 2>&1; then
            echo "$tool: clean (2 ranks as processes, test_gpu_coll --quick --coll allreduce)" | tee -a "$summary"
        else
            status=1
            echo "$tool: FAILED (2 ranks as processes):" | tee -a "$summary"
            grep -E "=========" "$out/sanitizer-$tool-ranks.log" | head -20
        fi
    }
    fits 120 "compute-sanitizer memcheck" && san_ranks memcheck
    fits 120 "compute-sanitizer racecheck" && san_ranks racecheck
    fits 60 "compute-sanitizer on test_gpu_api errors" && san memcheck "$build/tests/gpu/test_gpu_api" errors
fi

stage "benchmarks ($sizes; orbit ranks: $ranks; NCCL up to $ngpu rank(s))"
for coll in $colls; do
    for n in $ranks; do
        if [ "$n" -gt "$((ngpu > 0 ? ngpu : 1))" ] && [ "$mps" = none ] && [ $emu = 0 ]; then
            echo "skipped: orbit $coll n=$n: $n processes on $ngpu GPU(s) without MPS time-slice (milliseconds a step; -M starts MPS)" |
                tee -a "$summary"
            continue
        fi
        fits 40 "orbit $coll n=$n" || continue
        ORBIT_DEBUG=WARN timeout 120 "$orbitrun" --no-tag -n "$n" "$build/bench/${coll}_bench" --device gpu \
            --size "$sizes" --json "$out/orbit-$coll-n$n.json" >"$out/orbit-$coll-n$n.txt" 2>&1 ||
            { echo "orbit $coll n=$n failed:"; tail -5 "$out/orbit-$coll-n$n.txt"; status=1; }
        if [ "$n" -le "$ngpu" ] && [ -x "$build/bench/${coll}_bench" ] && fits 40 "nccl $coll n=$n"; then
            timeout 120 "$orbitrun" --no-tag -n "$n" "$build/bench/${coll}_bench" --backend nccl \
                --size "$sizes" --json "$out/nccl-$coll-n$n.json" >"$out/nccl-$coll-n$n.txt" 2>&1 ||
                { echo "nccl $coll n=$n failed:"; tail -5 "$out/nccl-$coll-n$n.txt"; }
        fi
    done
    pack
done

stage "table: busbw GB/s, out-of-place (orbit with n ranks; NCCL where it can run)$([ $emu = 1 ] && echo '; EMULATOR, not figures')"
(python3 - "$out" "$ranks" <<'PY'
import glob, json, os, sys
out, ranks = sys.argv[1], sys.argv[2].split()
rows = {}
for path in glob.glob(os.path.join(out, "*.json")):
    backend, coll, n = os.path.basename(path)[:-5].split("-", 2)
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("inplace"):
            continue
        rows.setdefault((r["coll"], r["size"]), {})[(backend, n[1:])] = r["busbw"]
cols = [("orbit", n) for n in ranks] + sorted({k for v in rows.values() for k in v if k[0] == "nccl"})
print("%-15s %10s " % ("collective", "bytes") + " ".join("%11s" % ("%s n=%s" % c) for c in cols))
shown = {8, 1024, 65536, 1 << 20, 16 << 20, 64 << 20, 256 << 20}
for (coll, size) in sorted(rows):
    if size not in shown:
        continue
    v = rows[(coll, size)]
    print("%-15s %10d " % (coll, size) + " ".join("%11s" % ("%.2f" % v[c] if c in v else "-") for c in cols))
PY
) | tee -a "$summary"
printf '\nstatus %d after %ds; logs in %s\n' $status $((SECONDS - t0)) "$out" | tee -a "$summary"
pack
exit $status
