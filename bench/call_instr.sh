#!/usr/bin/env bash
# What a small call costs in instructions, per collective: deterministic where times are not.
# Between near cores on the project's VMs the same build's 8-byte calls take 0.15 or 0.22-0.25 us
# from one run to the next (docs/perf.md), so a change of a tenth in the call path cannot be
# seen in time; callgrind counts it to a few instructions.
#   bash bench/call_instr.sh [-s BYTES] [-r RANK] [-c "COLL ..."] [-k K] [-m] BUILD [OTHER_BUILD]
# For each collective, 2 ranks: rank RANK runs under callgrind, the other natively (so the
# measured one seldom waits), twice, with N1 and N2 timed calls; (total(N2) - total(N1)) /
# (N2 - N1) is one call's instructions with start-up and warm-up cancelled. Spinning where the
# measured rank waits adds a little: the same build's figure moves by up to ~50 from run to run
# (2026-11-29), so -k K measures each build K times, alternating, and prints the median with
# the range (lo-hi) beside it; a change of a few percent needs K >= 3 to be told from that.
# With OTHER_BUILD, a column for it and OTHER/BUILD (of the medians). With -m, a column for
# Open MPI (BUILD's bench with --backend mpi under mpirun, measured alike: the bench's own loop
# is in both) and BUILD/MPI: where a small call's time follows its instructions, the gap in
# time is there to see without the machine's noise. Needs valgrind (installed through
# scripts/deps.sh when missing).
set -euo pipefail
size=8 rank=0 k=1 mpi=0 colls="allreduce broadcast reduce allgather reduce_scatter gather scatter alltoall sendrecv"
n1=${CALL_INSTR_N1:-5000} n2=${CALL_INSTR_N2:-10000}
usage() { sed -n 2,15p "$0"; }
while getopts "s:r:c:k:mh" opt; do
    case $opt in
    s) size=$OPTARG ;; r) rank=$OPTARG ;; c) colls=$OPTARG ;; k) k=$OPTARG ;; m) mpi=1 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] && [ $# -le 2 ] || { usage >&2; exit 2; }
case $rank in 0 | 1) ;; *) echo "$0: -r takes 0 or 1 (2 ranks)" >&2; exit 2 ;; esac
case $k in '' | *[!0-9]* | 0) echo "$0: -k takes a whole number of runs, at least 1" >&2; exit 2 ;; esac
case $n1$n2 in *[!0-9]*) echo "$0: CALL_INSTR_N1 and CALL_INSTR_N2 take whole numbers" >&2; exit 2 ;; esac
[ "$n2" -gt "$n1" ] || { echo "$0: CALL_INSTR_N2 ($n2) must be larger than CALL_INSTR_N1 ($n1)" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || bash "$here/scripts/deps.sh" valgrind >&2 ||
    { echo "$0: valgrind is missing and could not be installed" >&2; exit 2; }
builds=("$@")
mpirun=${MPIRUN:-mpirun}
if [ "$mpi" = 1 ]; then
    [ ${#builds[@]} -eq 1 ] || { echo "$0: -m compares one build with Open MPI: give one build" >&2; exit 2; }
    command -v "$mpirun" >/dev/null || { echo "$0: -m: $mpirun not found (install Open MPI)" >&2; exit 2; }
    # Under root in a container, Open MPI needs to be told twice that it is fine.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
for b in "${builds[@]}"; do
    [ -x "$b/launcher/orbitrun" ] || { echo "$0: $b: no launcher/orbitrun (ninja -C $b)" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the launcher starts this for every rank; only the measured one runs under valgrind
cat >"$tmp/wrap.sh" <<'W'
#!/bin/bash
if [ "${RANK:-$OMPI_COMM_WORLD_RANK}" = "$CALL_INSTR_RANK" ]; then
    exec valgrind --tool=callgrind --callgrind-out-file="$CALL_INSTR_OUT" "$@" 2>/dev/null
fi
exec "$@"
W
chmod +x "$tmp/wrap.sh"

per_call() { # build coll [mpi] -> instructions a call, or "-" when a run failed
    local b=$1 c=$2 n t1 t2 flags=(--size "$size" --warmup 10) launch
    [ "$c" = sendrecv ] || flags+=(--no-inplace)
    [ -x "$b/bench/${c}_bench" ] || { echo -; return; }
    if [ "${3:-}" = mpi ]; then
        launch=("$mpirun" --oversubscribe -np 2 -x CALL_INSTR_RANK -x CALL_INSTR_OUT)
        flags+=(--backend mpi)
    else
        launch=("$b/launcher/orbitrun" -n 2)
    fi
    for n in "$n1" "$n2"; do
        CALL_INSTR_RANK=$rank CALL_INSTR_OUT=$tmp/cg.$n "${launch[@]}" "$tmp/wrap.sh" \
            "$b/bench/${c}_bench" "${flags[@]}" --iters "$n" >"$tmp/log" 2>&1 || { echo -; return; }
    done
    t1=$(awk '/^summary:/ {print $2; exit}' "$tmp/cg.$n1")
    t2=$(awk '/^summary:/ {print $2; exit}' "$tmp/cg.$n2")
    [ -n "$t1" ] && [ -n "$t2" ] || { echo -; return; }
    echo $(((t2 - t1) / (n2 - n1)))
}

# median and range of the numbers given ("-" when any is "-"): "MEDIAN LO-HI"
summary() {
    case " $* " in *" - "*) echo "- -"; return ;; esac
    printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {
        m = NR % 2 ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)
        print m, (NR > 1 ? v[1] "-" v[NR] : "")}'
}

echo "# instructions a call (callgrind), $size B, 2 ranks, rank $rank measured, median of $k run(s)" \
    "$( [ "$k" -gt 1 ] && echo "(range beside it)" ); $(date -u +%FT%RZ)"
if [ "$mpi" = 1 ]; then
    printf '%-16s %10s %12s %10s %12s %8s   (A = %s, B = Open MPI through its bench)\n' collective A "" MPI "" A/MPI "${builds[0]}"
elif [ ${#builds[@]} -eq 1 ]; then
    printf '%-16s %10s %12s\n' collective "${builds[0]}" ""
else
    printf '%-16s %10s %12s %10s %12s %8s   (A = %s, B = %s)\n' collective A "" B "" B/A "${builds[0]}" "${builds[1]}"
fi
for c in $colls; do
    as=() bs=()
    for ((i = 0; i < k; i++)); do # alternating, so that a change of the machine's mood hits both
        as+=("$(per_call "${builds[0]}" "$c")")
        if [ "$mpi" = 1 ]; then
            bs+=("$(per_call "${builds[0]}" "$c" mpi)")
        elif [ ${#builds[@]} -eq 2 ]; then
            bs+=("$(per_call "${builds[1]}" "$c")")
        fi
    done
    read -r a ar <<<"$(summary "${as[@]}")"
    if [ "$mpi" = 1 ]; then
        read -r b br <<<"$(summary "${bs[@]}")"
        r=-
        [ "$a" != - ] && [ "$b" != - ] && [ "$b" -gt 0 ] && r=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a / b}')
        printf '%-16s %10s %12s %10s %12s %8s\n' "$c" "$a" "$ar" "$b" "$br" "$r"
    elif [ ${#builds[@]} -eq 1 ]; then
        printf '%-16s %10s %12s\n' "$c" "$a" "$ar"
    else
        read -r b br <<<"$(summary "${bs[@]}")"
        r=-
        [ "$a" != - ] && [ "$b" != - ] && [ "$a" -gt 0 ] && r=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}')
        printf '%-16s %10s %12s %10s %12s %8s\n' "$c" "$a" "$ar" "$b" "$br" "$r"
    fi
done
