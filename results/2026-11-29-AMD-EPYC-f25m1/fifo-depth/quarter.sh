#!/bin/bash
# (2026-11-29, issue 21) Direct plans at one slot or less: the default chunk (the slot) against
# ORBIT_CHUNK_BYTES = size/4, at 64-512 KiB, 2 ranks, R alternating runs, same build.
# Rows in quarter/rows.txt as run.sh's ("slots" column: 0 = default chunk, 4 = size/4).
set -u
top=$(cd "$(dirname "$0")" && pwd)
cd "$top/../../.."
R=${R:-7}
here=$top/quarter
mkdir -p "$here/raw"
echo "B: ORBIT_CHUNK_BYTES = size/4 (4) against the default chunk (0)" > "$here/config.txt"
: > "$here/rows.txt"
for r in $(seq 1 "$R"); do
  for c in sendrecv scatter gather alltoall; do
    for size in 65536 131072 262144 524288; do
      for k in 0 4; do
        f="$here/raw/$c-$size-k$k-$r.txt"
        ch=0; [ $k = 4 ] && ch=$((size / 4))
        ORBIT_CHUNK_BYTES=$ch build/launcher/orbitrun --no-tag -n 2 "build/bench/${c}_bench" --no-inplace \
          --size $size --iters 200 --warmup 20 > "$f" 2>&1
        grep -v '^#' "$f" | awk -v s="$k" -v c="$c" -v r="$r" 'NF >= 8 {print s, 2, c, $1, $6, $8, r}' >> "$here/rows.txt"
      done
    done
  done
done
