#!/bin/bash
# (2026-11-29, issue 21) The direct plans keep slot-sized chunks (256 KiB; collectives/tuner.c):
# against ORBIT_CHUNK_BYTES=65536 (L2/nslots here), 2 ranks, 64 KiB-16 MiB, R alternating runs,
# same build. Rows in chunk/rows.txt as run.sh's ("slots" column: 0 = default chunk, 64 = 64 KiB).
set -u
top=$(cd "$(dirname "$0")" && pwd)
cd "$top/../../.."
R=${R:-7}
here=$top/chunk
mkdir -p "$here/raw"
echo "B: the default chunk (0) against ORBIT_CHUNK_BYTES=65536 (64)" > "$here/config.txt"
: > "$here/rows.txt"
for r in $(seq 1 "$R"); do
  for c in sendrecv allgather scatter gather alltoall; do
    for k in 0 64; do
      f="$here/raw/$c-k$k-$r.txt"
      ORBIT_CHUNK_BYTES=$((k * 1024)) build/launcher/orbitrun --no-tag -n 2 "build/bench/${c}_bench" --no-inplace \
        --size 64K:16M --factor 4 --iters 40 > "$f" 2>&1
      grep -v '^#' "$f" | awk -v s="$k" -v c="$c" -v r="$r" 'NF >= 8 {print s, 2, c, $1, $6, $8, r}' >> "$here/rows.txt"
    done
  done
done
