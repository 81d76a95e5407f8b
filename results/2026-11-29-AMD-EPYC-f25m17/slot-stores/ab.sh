#!/usr/bin/env bash
# ORBIT_SLOT_STORES=cached (the old behaviour) against auto, alternating, R rounds; each run
# is bracketed by the cross-core round trip of c2c.c (~55 ns: the two vCPUs share a cache;
# ~310 ns: they do not), so every row says which placement it met.
# usage: ab.sh BUILD R OUTFILE [collectives...]
set -u
build=$1; R=$2; out=$3; shift 3
colls=${*:-reduce sendrecv broadcast allgather allreduce}
here=$(dirname "$0")
[ -x /tmp/c2c ] || gcc -O2 -pthread -o /tmp/c2c "$here/c2c.c"
rt() { /tmp/c2c | awk '{print $3}'; }
for r in $(seq 1 "$R"); do
  for c in $colls; do
    for m in cached auto; do
      a=$(rt)
      t=$(ORBIT_SLOT_STORES=$m "$build/launcher/orbitrun" --no-tag -n 2 "$build/bench/${c}_bench" --size 256K:64M --factor 4 2>&1 |
          awk '/^ +[0-9]/ {printf "%s ", $6}')
      echo "$r $c $m rt_before=$a rt_after=$(rt) us: $t" | tee -a "$out"
    done
  done
done
