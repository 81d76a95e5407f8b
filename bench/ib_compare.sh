#!/usr/bin/env bash
# orbit over RDMA against the verbs tools and orbit over TCP, in the same Soft-RoCE guest
# boot (tests/ib/rxe_vm.sh): 2 ranks, on one guest (ORBIT_HOSTID apart, rxe loops back) or
# one per guest (-g 2, two QEMU guests joined by a virtual link). Each repetition runs every
# contender once in a rotating order; the table shows medians. Software emulation (no KVM):
# the figures are for ratios within one run, never absolute speed.
#   orbit-ib    allreduce_bench and sendrecv_bench, ORBIT_NET=ib
#   orbit-tcp   allreduce_bench, ORBIT_NET=tcp
#   perftest    ib_write_bw one way and both ways (-b) at the largest size; ib_send_lat 8 B
# Open MPI with UCX is not a contender here: on rxe its wireup over UD times out (see
# docs/perf.md). Usage: ib_compare.sh [-g 1|2] [-r REPS] [-s SIZES] [-f FACTOR] [-o OUTDIR] BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ "${1:-}" = --guest ]; then
    # ---- inside each guest: play this guest's side of every contender ----
    shift
    build=$1 reps=$2 sizes=$3 factor=$4 big=$5
    set -- $ORBIT_VM_ADDRS
    a1=$1 a2=${2:-$1} # rank 0 / the perftest client on guest 1, the perftest server on the last
    g=$ORBIT_VM_GUEST ng=$ORBIT_VM_NGUESTS
    out=$ORBIT_VM_OUT
    sides="0 1"; [ "$ng" = 2 ] && sides=$((g - 1))
    gid=$(for i in $(seq 0 15); do [ "$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] &&
        grep -q "ffff:" /sys/class/infiniband/rxe0/ports/1/gids/$i && { echo "$i"; break; }; done)
    contenders=(orbit-ib orbit-tcp sendrecv-ib write-bw write-bw-bidir send-lat)
    port=30000
    for rep in $(seq 1 "$reps"); do
        n=${#contenders[@]}
        for k in $(seq 0 $((n - 1))); do
            c=${contenders[$(((k + rep) % n))]}
            port=$((port + 1))
            # both guests start each contender together: a file barrier on the shared -o
            # directory (9p, uncached), so that one guest's early finish cannot shift the order
            if [ "$ng" = 2 ]; then
                : >"$out/.sync.$port.$g"
                for _ in $(seq 600); do [ -e "$out/.sync.$port.1" ] && [ -e "$out/.sync.$port.2" ] && break; sleep 0.2; done
            fi
            pids=()
            for s in $sides; do
                f=$out/$c.$rep
                case $c in
                orbit-*|sendrecv-*)
                    net=${c##*-} bench=allreduce_bench
                    [ "$c" = sendrecv-ib ] && bench=sendrecv_bench
                    flags=(--inplace); [ "$c" = sendrecv-ib ] && flags=(--no-inplace)
                    env RANK=$s WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=$a1 MASTER_PORT=$port \
                        ORBIT_SECRET=0123456789abcdef0123456789abcdef ORBIT_HOSTID=h$s ORBIT_NET=$net \
                        timeout 300 "$build/bench/$bench" --size "$sizes" --factor "$factor" --iters 10 --warmup 2 \
                        "${flags[@]}" --json "$f.json" >"$f.log.$s" 2>&1 &
                    ;;
                write-bw|write-bw-bidir|send-lat)
                    tool=ib_write_bw args=(-s "$big" -n 100)
                    [ "$c" = write-bw-bidir ] && args+=(-b)
                    [ "$c" = send-lat ] && tool=ib_send_lat args=(-s 8 -n 1000)
                    if [ "$s" = 0 ]; then
                        # the server may not listen yet: try again for up to 20 s
                        (for _ in $(seq 20); do sleep 1
                             timeout 120 $tool -d rxe0 -x "$gid" -F -p $port "${args[@]}" "$a2" >"$f.txt" 2>&1 &&
                                 break
                             grep -q "Couldn't connect" "$f.txt" || break
                         done) &
                    else
                        timeout 120 $tool -d rxe0 -x "$gid" -F -p $port "${args[@]}" >/dev/null 2>&1 &
                    fi
                    ;;
                esac
                pids+=($!)
            done
            for p in "${pids[@]}"; do wait "$p"; done
        done
    done
    exit 0
fi

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
guests=1 reps=3 sizes=8:2M factor=4 outdir=""
while getopts "g:r:s:f:o:h" opt; do
    case $opt in
    g) guests=$OPTARG ;;
    r) reps=$OPTARG ;;
    s) sizes=$OPTARG ;;
    f) factor=$OPTARG ;;
    o) outdir=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# = 1 ] || { usage >&2; exit 2; }
build=$(cd "$1" && pwd)
[ -n "$outdir" ] || outdir=$(mktemp -d)
mkdir -p "$outdir"
big=$(python3 -c "import sys; s=sys.argv[1].split(':')[-1].upper(); m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(s[:-1])*m[s[-1]] if s[-1] in m else int(s))" "$sizes")
bash "$here/../tests/ib/rxe_vm.sh" -g "$guests" -s -t 3000 -o "$outdir" -- \
    "bash $here/ib_compare.sh --guest $build $reps $sizes $factor $big" || exit $?
python3 - "$outdir" "$guests" "$big" <<'PY' | tee "$outdir/summary.txt"
import glob, json, os, re, statistics, sys
outdir, guests, big = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = {}
for name in ("orbit-ib", "orbit-tcp", "sendrecv-ib"):
    for path in glob.glob(os.path.join(outdir, name + ".*.json")):
        for line in open(path):
            r = json.loads(line)
            rows.setdefault((name, r["size"]), []).append(r)
def tool(name, col):
    vals = []
    for path in glob.glob(os.path.join(outdir, name + ".*.txt")):
        for line in open(path):
            f = line.split()
            if len(f) >= 5 and f[0].isdigit() and f[1].isdigit():
                if float(f[col]) > 0: # perftest prints 0.00 for a run that lost its peer
                    vals.append(float(f[col]))
                else:
                    print("# %s: a run reported %s (left out)" % (os.path.basename(path), f[col]))
    return vals
bw, bwb, lat = tool("write-bw", 3), tool("write-bw-bidir", 3), tool("send-lat", 5)
med = lambda v: statistics.median(v) if v else None
m = lambda n, s, k: med([r[k] for r in rows.get((n, s), [])])
where = "1 guest (rxe loopback), 2 ranks" if guests == "1" else "2 guests x 1 rank (virtual link)"
print("# Soft-RoCE under QEMU TCG, %s; medians of %d repetitions" % (where, max(len(v) for v in rows.values())))
if bw: print("# ib_write_bw %d B one way: %.1f MB/s (runs: %s)" % (big, med(bw), ", ".join("%.1f" % v for v in bw)))
if bwb: print("# ib_write_bw %d B both ways (-b, sum): %.1f MB/s, %.1f per direction" % (big, med(bwb), med(bwb) / 2))
if lat: print("# ib_send_lat 8 B: %.2f us typical (runs: %s)" % (med(lat), ", ".join("%.2f" % v for v in lat)))
print("%10s %12s %12s %12s %12s %12s %10s %10s" % ("bytes", "ib us", "tcp us", "ib busbw", "tcp busbw",
      "sendrecv", "ib/tcp", "ib/perf"))
per_dir = med(bwb) / 2 if bwb else None
for s in sorted({s for (_, s) in rows}):
    ib, tcp, sr = m("orbit-ib", s, "time_us"), m("orbit-tcp", s, "time_us"), m("sendrecv-ib", s, "busbw")
    ibb, tcpb = m("orbit-ib", s, "busbw"), m("orbit-tcp", s, "busbw")
    ratio = "%.2f" % (tcp / ib) if ib and tcp else "-"
    vs = "%.2f" % (ibb * 1000 / per_dir) if per_dir and ibb and s == big else ""
    print("%10d %12.1f %12.1f %12.4f %12.4f %12.4f %10s %10s" % (s, ib or 0, tcp or 0, ibb or 0, tcpb or 0, sr or 0,
          ratio, vs))
print("# busbw in GB/s (nccl-tests); ib/tcp = tcp time / ib time (>1: ib faster); ib/perf = orbit-ib busbw over")
print("# ib_write_bw's per-direction rate with both directions busy, at the largest size")
PY
