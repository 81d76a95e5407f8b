#!/usr/bin/env bash
# A collective (all-reduce unless -c) across two "hosts" (network namespaces joined by a
# bridge, 1 rank each unless -p, real TCP): orbit, Open MPI over TCP and (all-reduce only)
# Gloo side by side in one run, with iperf3 measuring the same link. Each repetition runs
# every contender once, in a rotating order, so a noisy machine hurts all alike; the table
# shows medians. Needs root (ip netns), Open MPI, iperf3 and Debian's python3-torch at
# /usr/bin/python3; a missing peer is left out.
set -uo pipefail

usage() {
    cat <<USAGE
usage: $0 [-c COLL] [-p PER] [-r REPS] [-o OUTDIR] [-s SIZES] [-f FACTOR] [-d NETEM] [-b RATE]
          [-I] BUILD_DIR
  -c COLL     the collective: BUILD_DIR/bench/COLL_bench             [allreduce]
  -p PER      ranks per host (2 hosts)                             [1]
  -r REPS     repetitions of the whole set                         [3]
  -s SIZES    MIN:MAX bytes, K/M/G suffixes                        [8:64M]
  -f FACTOR   size step                                            [2]
  -d NETEM    tc netem arguments for both hosts' egress (e.g. "delay 1ms")
  -b RATE     a tc tbf rate limit for both hosts' egress (e.g. "5gbit")
  -o OUTDIR   keep every run's output and JSON here                [a temporary dir, removed]
  -I          no iperf3 or sockperf runs (when only orbit vs the peers matters)
Contenders: orbit   BUILD_DIR/bench/COLL_bench --backend custom (torchrun-style env)
            mpi     the same bench --backend mpi under mpirun --mca btl tcp,self (with -p 2
                    or more, ranks on one host talk TCP too: Open MPI's shared-memory btl,
                    vader, segfaults across these namespaces, which share one hostname)
            gloo    bench/gloo_allreduce.py (torch.distributed, GLOO_SOCKET_IFNAME=eth0),
                    all-reduce only
            iperf3  3 s of one TCP stream h1 -> h2 (GB/s) per repetition: with the system's
                    congestion control, with cubic (what orbit's sockets use), and with cubic
                    both ways at once (--bidir, the mean of the two ways)
            sockperf  2 s of TCP ping-pong h1 -> h2 with 16 B and 4 KiB messages per
                    repetition (Debian's sockperf): the raw round trip, against which the
                    summary's last column holds orbit's time at 8 B-512 B and 1-4 KiB
The summary reports busbw (GB/s) and orbit's ratio to the better peer, to the better one-way
iperf3 median and to the two-way one. With 2 ranks an all-reduce sends busbw bytes per
second in each direction at once, so the two-way figure is the link it runs on; on a real
full-duplex NIC the two are about equal, on veth pairs both ways share the same CPUs.
USAGE
}

reps=3 sizes=8:64M factor=2 netem="" rate="" outdir="" coll=allreduce per=1 no_iperf=0
while getopts "c:p:r:s:f:d:b:o:Ih" opt; do
    case $opt in
    c) coll=$OPTARG ;;
    p) per=$OPTARG ;;
    I) no_iperf=1 ;;
    r) reps=$OPTARG ;;
    s) sizes=$OPTARG ;;
    f) factor=$OPTARG ;;
    d) netem=$OPTARG ;;
    b) rate=$OPTARG ;;
    o) outdir=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { usage >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case $per in '' | *[!0-9]* | 0) echo "$0: -p takes a positive integer" >&2; exit 2 ;; esac
bench=$build/bench/${coll}_bench
[ -x "$bench" ] || { echo "$0: $bench: not built (ninja -C $1)" >&2; exit 2; }
# shellcheck source=../tests/net/netns_lib.sh
. "$here/../tests/net/netns_lib.sh"

contenders=(orbit)
if command -v mpirun >/dev/null && "$bench" --backend mpi --help >/dev/null 2>&1; then
    contenders+=(mpi)
else
    echo "# mpi: left out (no mpirun, or the bench was built without Open MPI)" >&2
fi
if [ "$coll" != allreduce ]; then
    : # bench/gloo_allreduce.py times all-reduce only
elif /usr/bin/python3 -c "import torch.distributed as d; assert d.is_gloo_available()" 2>/dev/null; then
    contenders+=(gloo)
else
    echo "# gloo: left out (no torch.distributed with Gloo at /usr/bin/python3)" >&2
fi
have_iperf=0
[ "$no_iperf" = 0 ] && command -v iperf3 >/dev/null && have_iperf=1
have_sockperf=0 # the raw TCP round trip (Debian's sockperf): what small messages are held to
[ "$no_iperf" = 0 ] && command -v sockperf >/dev/null && have_sockperf=1

# sockperf ping-pong h1 -> h2 of SIZE-byte messages for 2 s: the median one-way latency in us
# (half the round trip, as sockperf reports it).
sockperf_lat() {
    local size=$1
    orbtest_serve 11111 sockperf sr --tcp -i "$ORBTEST_SUBNET.2" -p 11111
    ip netns exec "$ORBTEST_PREFIX-h1" sockperf pp --tcp -i "$ORBTEST_SUBNET.2" -p 11111 -m "$size" -t 2 2>&1 |
        sed 's/\x1b\[[0-9;]*m//g' | awk '/percentile 50.000 =/ {print $NF}'
    kill "$ORBTEST_SERVER_PID" 2>/dev/null
    wait "$ORBTEST_SERVER_PID" 2>/dev/null
}

orbtest_setup 2 "$netem" "$rate" || { echo "$0: cannot run: $ORBTEST_SKIP" >&2; exit 77; }
[ -n "$outdir" ] || outdir=$ORBTEST_WORK/out
mkdir -p "$outdir"
rm -f "$outdir"/*.json "$outdir"/iperf.txt

run() { # contender rep
    local c=$1 rep=$2 json=$outdir/$1.$2.json log=$outdir/$1.$2
    echo "# rep $rep/$reps: $c" >&2
    case $c in
    orbit)
        orbtest_job torchrun "$per" 900 "$log" -- "$bench" --backend custom --size "$sizes" --factor "$factor" \
            --no-inplace --json "$json" ;;
    mpi)
        orbtest_job mpi "$per" 900 "$log" -- --mca btl tcp,self "$bench" --backend mpi --size "$sizes" \
            --factor "$factor" --no-inplace --json "$json" ;;
    gloo)
        orbtest_job torchrun 1 900 "$log" GLOO_SOCKET_IFNAME=eth0 -- /usr/bin/python3 "$here/gloo_allreduce.py" \
            --size "$sizes" --factor "$factor" --json "$json" ;;
    esac || { orbtest_show "$log" "$per" | tail -n 20 >&2; echo "$0: the $c run failed" >&2; exit 1; }
}

for ((rep = 1; rep <= reps; rep++)); do
    n=${#contenders[@]}
    for ((i = 0; i < n; i++)); do run "${contenders[$(((i + rep - 1) % n))]}" "$rep"; done
    if [ "$have_iperf" = 1 ]; then
        bw=$(orbtest_iperf 3)
        bwc=$(orbtest_iperf 3 cubic)
        bwb=$(orbtest_iperf 3 cubic bidir)
        echo "# rep $rep/$reps: iperf3 $bw GB/s, with cubic $bwc GB/s, both ways $bwb GB/s each" >&2
        echo "$bw" >>"$outdir/iperf.txt"
        echo "$bwc" >>"$outdir/iperf_cubic.txt"
        echo "$bwb" >>"$outdir/iperf_bidir.txt"
    fi
    if [ "$have_sockperf" = 1 ]; then
        for m in 16 4096; do # sockperf sends 14 bytes at least
            lat=$(sockperf_lat "$m")
            echo "# rep $rep/$reps: sockperf TCP ping-pong $m B: $lat us one way (median)" >&2
            echo "$lat" >>"$outdir/sockperf_$m.txt"
        done
    fi
done

/usr/bin/python3 - "$outdir" "$coll" "$per" "${contenders[@]}" <<'PY'
import glob, json, os, statistics, sys
outdir, coll, per, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
rows = {}
for name in names:
    for path in glob.glob(os.path.join(outdir, name + ".*.json")):
        for line in open(path):
            r = json.loads(line)
            rows.setdefault((name, r["size"]), []).append(r)
def floats(name):
    path = os.path.join(outdir, name)
    return [float(x) for x in open(path) if x.strip()] if os.path.exists(path) else []
iperf, iperf_cubic, iperf_bidir = floats("iperf.txt"), floats("iperf_cubic.txt"), floats("iperf_bidir.txt")
cc = open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip()
links = [statistics.median(v) for v in (iperf, iperf_cubic) if v]
link = max(links) if links else None
link2 = statistics.median(iperf_bidir) if iperf_bidir else None
sizes = sorted({s for (_, s) in rows})
med = lambda name, s, k: statistics.median(r[k] for r in rows[(name, s)]) if (name, s) in rows else None
print("# %s float32, 2 hosts x %s rank(s), medians of %d runs each" % (coll, per, max(len(v) for v in rows.values())))
for name, v in (("one way, system default " + cc, iperf), ("one way, cubic", iperf_cubic),
                ("both ways at once, cubic, per way", iperf_bidir)):
    if v:
        print("# iperf3 h1 <-> h2 (%s): median %.2f GB/s (runs: %s)" % (name, statistics.median(v),
                                                                      " ".join("%.2f" % x for x in v)))
rtt = {m: floats("sockperf_%d.txt" % m) for m in (16, 4096)}
for m, v in rtt.items():
    if v:
        print("# sockperf TCP ping-pong h1 -> h2, %d B: one way %.1f us, round trip %.1f us (medians; runs: %s)"
              % (m, statistics.median(v), 2 * statistics.median(v), " ".join("%.1f" % x for x in v)))
        rtt[m] = 2 * statistics.median(v)
    else:
        rtt[m] = None
head = "%12s" % "bytes"
for n in names:
    head += "  %10s %8s" % (n + " us", "GB/s")
head += "  %9s" % "vs peer"
if link:
    head += "  %9s" % "vs 1-way"
if link2:
    head += "  %9s" % "vs 2-way"
if rtt[16]:
    head += "  %9s" % "orbit/RTT"
print(head)
for s in sizes:
    line = "%12d" % s
    for n in names:
        t, b = med(n, s, "time_us"), med(n, s, "busbw")
        line += "  %10s %8s" % ("-" if t is None else "%.1f" % t, "-" if b is None else "%.3f" % b)
    o = med("orbit", s, "busbw")
    peers = [med(n, s, "busbw") for n in names if n != "orbit" and med(n, s, "busbw")]
    line += "  %9s" % ("%.2fx" % (o / max(peers)) if o and peers and max(peers) > 0 else "-")
    for l in (link, link2):
        if l:
            line += "  %8.0f%%" % (100 * o / l) if o else "  %9s" % "-"
    # small messages against the raw round trip of the nearer measured size (16 B or 4 KiB)
    r = rtt[16] if s <= 512 else rtt[4096] if s <= 4096 else None
    t = med("orbit", s, "time_us")
    if rtt[16]:
        line += "  %8.2fx" % (t / r) if r and t else "  %9s" % "-"
    print(line)
wrong = [r for v in rows.values() for r in v if r.get("wrong")]
if wrong:
    print("# %d rows reported wrong results" % len(wrong))
PY
