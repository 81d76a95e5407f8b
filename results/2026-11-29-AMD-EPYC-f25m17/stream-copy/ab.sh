#!/usr/bin/env bash
# A/B of the copies' streaming threshold (commit 00f159b): the default (copies into an output of
# their own stream from LLC / (4 x host ranks), 4 MiB here) against ORBIT_STREAM_BYTES=LLC (every
# call from the whole cache's size: the code before). Same binary, alternating, each run
# bracketed by bench/c2c (near or far cores). Usage: [NRANKS=2] ab.sh BUILD REPS OUTFILE [COLL...]
# Lines: collective, new/old, round, c2c ns before, bytes, then time (us) and algbw (GB/s) out of
# place and in place; after each run "# COLL CFG run R c2c before NS after NS".
set -euo pipefail
build=$1; reps=$2; out=$3; shift 3
colls=${*:-sendrecv alltoall allgather gather scatter broadcast allreduce reduce reduce_scatter}
llc=$(( $(cat /sys/devices/system/cpu/cpu0/cache/index3/size | tr -d K) * 1024 ))
: > "$out"
for r in $(seq "$reps"); do
  for c in $colls; do
    for cfg in new old; do
      env=(); [ $cfg = old ] && env=(ORBIT_STREAM_BYTES=$llc)
      before=$("$build/bench/c2c" | tail -1 | awk '{print $2}')
      "$build/launcher/orbitrun" -n "${NRANKS:-2}" env "${env[@]}" "$build/bench/${c}_bench" --size 1M:64M --factor 4 2>&1 |
        grep -E '^\[0\] +[0-9]+ ' | awk -v c=$c -v g=$cfg -v r=$r -v b=$before '{print c, g, r, b, $2, $7, $8, $11, $12}' >> "$out"
      after=$("$build/bench/c2c" | tail -1 | awk '{print $2}')
      echo "# $c $cfg run $r c2c before $before after $after" >> "$out"
    done
  done
done
