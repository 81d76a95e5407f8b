#!/usr/bin/env bash
# orbit vs Open MPI on the figures the goals name, in one table: for each collective and rank
# count, busbw over the large sizes and time per call over the small ones, medians of REPS
# alternating runs (bench/compare.sh on this host, bench/net_compare.sh across two network
# namespaces with -N). Builds nothing.
set -uo pipefail

usage() {
    cat <<USAGE
usage: $0 [-N] [-n RANKS] [-r REPS] [-L SIZES] [-S SIZES] [-x FLAGS] [-o OUTDIR] BUILD_DIR [COLL...]
  COLL        collectives                                   [alltoall scatter]
  -N          across two network namespaces (root; half the ranks on each), not one host
  -n RANKS    rank counts, space-separated                  ["2 4"]
  -r REPS     runs per backend, alternating                 [5]
  -L SIZES    sizes whose busbw counts, step x4             [1M:64M]
  -S SIZES    sizes whose time counts, step x8              [8:4K]
  -x FLAGS    more bench flags, for every run (e.g. "--check")
  -o OUTDIR   keep every run's table and JSON here          [results/goals-<UTC time>]
Out-of-place only. The table (also OUTDIR/goals.txt) has one row per collective, ranks and
size: the median busbw (large sizes) or time (small sizes) of each, and orbit/mpi of that
figure (busbw above 1 or time below 1: orbit is ahead). Exits 1 if a run failed or a --check
found wrong elements, after printing what did run.
USAGE
}

net=0 ranks="2 4" reps=5 large=1M:64M small=8:4K extra="" outdir=""
while getopts "Nn:r:L:S:x:o:h" opt; do
    case $opt in
    N) net=1 ;;
    n) ranks=$OPTARG ;;
    r) reps=$OPTARG ;;
    L) large=$OPTARG ;;
    S) small=$OPTARG ;;
    x) extra=$OPTARG ;;
    o) outdir=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { usage >&2; exit 2; }
build=$1
shift
colls=("$@")
[ ${#colls[@]} -gt 0 ] || colls=(alltoall scatter)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
outdir=${outdir:-results/goals-$(date -u +%Y%m%dT%H%MZ)}
mkdir -p "$outdir"
read -r -a xflags <<<"$extra"

failed=0
for coll in "${colls[@]}"; do
    for n in $ranks; do
        for range in large small; do
            if [ $range = large ]; then sizes=$large f=4; else sizes=$small f=8; fi
            dir=$outdir/$coll-n$n-$range
            mkdir -p "$dir"
            echo "# $coll, $n ranks, $sizes" >&2
            if [ $net = 1 ]; then
                if ((n % 2)); then echo "$0: -N: $n ranks do not split over 2 hosts" >&2; exit 2; fi
                # net_compare.sh takes no bench flags: -x applies to this host's runs only
                bash "$here/net_compare.sh" -I -c "$coll" -p $((n / 2)) -r "$reps" -s "$sizes" \
                    -f $f -o "$dir" "$build" >"$dir/table.txt"
            else
                bash "$here/compare.sh" -n "$n" -r "$reps" -o "$dir" "$build" "$coll" \
                    --size "$sizes" --factor $f --no-inplace "${xflags[@]}" >"$dir/table.txt"
            fi
            s=$?
            [ $s = 77 ] && { echo "$0: cannot run here (see above)" >&2; exit 77; }
            [ $s = 0 ] || { failed=1; echo "$0: $coll $n ranks $sizes failed, see $dir" >&2; }
        done
    done
done

python3 - "$outdir" "$reps" "$net" "${colls[@]}" <<'PY' | tee "$outdir/goals.txt"
import glob, json, os, re, statistics, sys

outdir, reps, net, colls = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4:]
where = "2 network namespaces" if net else "one host"
print(f"# orbit vs Open MPI, {where}, float32 out-of-place, medians of {reps} alternating runs")
print(f"# {'coll':<10} {'ranks':>5} {'size(B)':>10}  {'figure':<11} {'orbit':>10} {'mpi':>10}"
      f"  {'orbit/mpi':>9}")
runs_dirs = []  # (coll order, ranks, large first, ...) from the OUTDIR/COLL-nN-RANGE names
for d in glob.glob(os.path.join(outdir, "*-n*-*")):
    m = re.match(r"(.+)-n(\d+)-(large|small)$", os.path.basename(d))
    if m and m[1] in colls:
        runs_dirs.append((colls.index(m[1]), int(m[2]), m[3] == "small", m[1], m[2], m[3], d))
wrong = 0
for _, _, _, coll, n, rng, d in sorted(runs_dirs):
    runs = {}  # (backend, size) -> [row]
    for path in glob.glob(os.path.join(d, "*.json")):
        backend = os.path.basename(path).split(".")[0]
        backend = "orbit" if backend in ("custom", "orbit") else backend
        for line in open(path):
            r = json.loads(line)
            if r["inplace"]:
                continue
            runs.setdefault((backend, r["size"]), []).append(r)
            wrong += r["wrong"] or 0
    key, label = ("busbw", "busbw(GB/s)") if rng == "large" else ("time_us", "time(us)")
    for size in sorted({s for (_, s) in runs}):
        med = {b: statistics.median(r[key] for r in runs[(b, size)])
               for b in ("orbit", "mpi") if (b, size) in runs}
        cells = [f"{med[b]:>10.3f}" if b in med else f"{'-':>10}" for b in ("orbit", "mpi")]
        ratio = med["orbit"] / med["mpi"] if len(med) == 2 and med["mpi"] > 0 else None
        print(f"  {coll:<10} {n:>5} {size:>10}  {label:<11} {cells[0]} {cells[1]}  "
              + (f"{ratio:>9.2f}" if ratio is not None else f"{'-':>9}"))
print("# orbit/mpi: busbw above 1 or time below 1 means orbit is ahead")
if wrong:
    print(f"# {wrong} wrong elements reported by --check")
sys.exit(1 if wrong else 0)
PY
[ "${PIPESTATUS[0]}" = 0 ] || failed=1
echo "# tables and JSON of every run: $outdir" >&2
exit $failed
