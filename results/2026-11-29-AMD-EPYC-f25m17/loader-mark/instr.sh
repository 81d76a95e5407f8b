#!/usr/bin/env bash
# Instructions a call, under callgrind, for each collective at 8 B, 2 ranks: one rank runs
# under valgrind (the other natively, so the measured one rarely waits), twice with N1 and
# N2 timed calls; (total(N2) - total(N1)) / (N2 - N1) is one call's cost with start-up and
# warm-up cancelled. Deterministic: the same binary gives the same count to a few
# instructions (spinning adds a little where the measured rank waits).
#   bash instr.sh BUILD [RANK] [N1] [N2]  -> "coll rank instr/call" lines
set -euo pipefail
build=$1 rank=${2:-0} n1=${3:-5000} n2=${4:-10000}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/wrap.sh" <<W
#!/bin/bash
if [ "\$RANK" = "$rank" ]; then exec valgrind --tool=callgrind --callgrind-out-file=$tmp/cg.\$N "\$@" 2>/dev/null; fi
exec "\$@"
W
chmod +x "$tmp/wrap.sh"
for coll in allreduce broadcast reduce allgather reduce_scatter gather scatter alltoall sendrecv; do
    size=8
    flags=(--size $size --warmup 10); [ $coll = sendrecv ] || flags+=(--no-inplace)
    for n in $n1 $n2; do
        N=$n "$build/launcher/orbitrun" -n 2 "$tmp/wrap.sh" "$build/bench/${coll}_bench" "${flags[@]}" --iters $n >/dev/null 2>&1
    done
    t1=$(grep -m1 '^summary:' "$tmp/cg.$n1" | awk '{print $2}')
    t2=$(grep -m1 '^summary:' "$tmp/cg.$n2" | awk '{print $2}')
    echo "$coll ${size}B rank $rank $(( (t2 - t1) / (n2 - n1) ))"
done
