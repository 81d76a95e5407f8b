#!/bin/bash
# (2026-11-29, issue 21) The first lap of the FIFO in the bench's timing: 10 timed send/recv
# calls after 5 untimed ones (the benches' default until c1a2a90) against 20, alternating, R runs
# at 256 KiB and at 64 KiB (one slot a call, 8 slots a FIFO). first-lap.txt: one line a run,
# "size warmup time_us".
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
R=${R:-7}
: > "$here/first-lap.txt"
for size in 262144 65536; do
  for r in $(seq 1 "$R"); do
    for w in 5 20; do
      t=$(build/launcher/orbitrun --no-tag -n 2 build/bench/sendrecv_bench --no-inplace --size $size --iters 10 \
            --warmup $w 2>&1 | grep -v '^#' | awk 'NF >= 8 {print $6}')
      echo "$size $w $t" >> "$here/first-lap.txt"
    done
  done
done
