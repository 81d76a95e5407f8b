#!/bin/bash
# What made this folder (2026-11-29, issue 21): FIFO depth. The default geometry (8 slots of
# 256 KiB) against B (ORBIT_SHM_SLOTS / ORBIT_SHM_SLOT_BYTES = $B_SLOTS / $B_BYTES), same build
# (build: the product build, CUDA on), runs alternating A B A B ...; every run's table is kept
# (OUT/raw/), one line per row in OUT/rows.txt: "slots n coll size time_us busbw run".
#   s16/:      B = 16 x 256 KiB (R=11)
#   s16x128k/: B = 16 x 128 KiB (the same bytes as the default; R=11)
#   s4/:       B = 4 x 256 KiB, part 3 only (PARTS=3, R=9): is it the slots' footprint?
#   s16-warm/: B = 16 x 256 KiB, parts 3 and 4 with LARGE_ITERS=60 LARGE_WARMUP=40 (R=7): the
#              runs above time 20 calls after 5 untimed ones, so with 16 slots (8: 3) of the
#              timed 256 KiB calls are the first to touch their slot's pages
#   s16-cap64k/: B = 16 x 256 KiB with ORBIT_CHUNK_BYTES=65536 (the chunk the tuner's cache cap,
#              L2/nslots, gives 8 slots here; 16 slots halve it), parts 3 and 4 warm, ring and
#              chain collectives only (P3_COLLS="allreduce allgather broadcast reduce_scatter"), R=7
#   s16-newcap/: B = 16 x 256 KiB after the tuner keeps the 8-slot chunk cap for deeper FIFOs
#              (the commit after c1a2a90), parts 3 and 4 warm, every collective of part 3, R=7
#   part 1: 4 ranks on the 2 cores (more ranks than cores), 8 B-4 KiB
#   part 2: 2 ranks (one a core), 8 B-4 KiB
#   part 3: 2 ranks, 256 KiB-64 MiB;  part 4: 4 ranks, 256 KiB-16 MiB
# stats.py OUT prints the medians and the 16/8 time ratio per row.
set -u
top=$(cd "$(dirname "$0")" && pwd)
cd "$top/../../.."
B_SLOTS=${B_SLOTS:-16} B_BYTES=${B_BYTES:-262144}
here=$top/${OUT:-s16}
R=${R:-7}
mkdir -p "$here/raw"
echo "B: $B_SLOTS slots of $B_BYTES bytes, ORBIT_CHUNK_BYTES=${B_CHUNK:-0}" > "$here/config.txt"
: > "$here/rows.txt"
one() { # slots n coll run args...
  local s=$1 n=$2 c=$3 r=$4; shift 4
  local f="$here/raw/$c-n$n-s$s-$r.txt"
  local bytes=262144
  local chunk=0
  [ "$s" = 8 ] || { bytes=$B_BYTES; chunk=${B_CHUNK:-0}; }
  ORBIT_CHUNK_BYTES=$chunk ORBIT_SHM_SLOTS=$s ORBIT_SHM_SLOT_BYTES=$bytes build/launcher/orbitrun --no-tag -n "$n" "build/bench/${c}_bench" --no-inplace "$@" > "$f" 2>&1
  grep -v '^#' "$f" | awk -v s="$s" -v n="$n" -v c="$c" -v r="$r" 'NF >= 8 {print s, n, c, $1, $6, $8, r}' >> "$here/rows.txt"
}
part() { # n colls args...
  local n=$1 colls=$2; shift 2
  for r in $(seq 1 "$R"); do
    for c in $colls; do
      for s in 8 "$B_SLOTS"; do one "$s" "$n" "$c" "$r" "$@"; done
    done
  done
}
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" > "$here/when.txt"
want() { [[ " ${PARTS:-1 2 3 4} " == *" $1 "* ]]; }
want 1 && part 4 "broadcast reduce gather scatter allreduce" --size 8:4096 --factor 8 --iters 50000 --warmup 2000
want 2 && part 2 "broadcast reduce gather scatter allreduce sendrecv" --size 8:4096 --factor 8 --iters 100000 --warmup 2000
want 3 && part 2 "${P3_COLLS:-allreduce allgather broadcast reduce_scatter sendrecv}" --size 256K:64M --factor 4 --iters "${LARGE_ITERS:-20}" --warmup "${LARGE_WARMUP:-5}"
want 4 && part 4 "allreduce broadcast allgather" --size 256K:16M --factor 4 --iters "${LARGE_ITERS:-20}" --warmup "${LARGE_WARMUP:-5}"
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$here/when.txt"
