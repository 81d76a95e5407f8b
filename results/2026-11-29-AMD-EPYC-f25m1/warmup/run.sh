#!/bin/bash
# (2026-11-29, issue 21) How much of the 256 KiB-4 MiB figures is the first lap of the FIFO:
# bench/compare.sh (orbit and Open MPI alternating, R runs, medians) with 5 untimed calls (the
# benches' default until this change) and with 20, for the collectives below 1.5x there.
# w5-COLL.txt / w20-COLL.txt: compare.sh's table; the folders hold every run's JSON rows.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
R=${R:-5}
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" > "$here/when.txt"
for c in sendrecv scatter gather allgather alltoall broadcast; do
  for w in 5 20; do
    bash bench/compare.sh -n 2 -r "$R" -o "$here/w$w-$c" build "$c" --size 256K:4M --factor 4 --iters 50 \
      --warmup $w --no-inplace > "$here/w$w-$c.txt" 2>&1
  done
done
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$here/when.txt"
