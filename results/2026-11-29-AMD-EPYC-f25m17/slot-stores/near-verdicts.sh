#!/usr/bin/env bash
# Every collective, 256 KiB-64 MiB, ORBIT_SLOT_STORES=auto with ORBIT_DEBUG=INFO: how many
# times a rank turned to streaming stores, with c2c's round trip before and after each run.
build=$1; here=$(dirname "$0")
[ -x /tmp/c2c ] || gcc -O2 -pthread -o /tmp/c2c "$here/c2c.c"
for c in allreduce broadcast reduce gather allgather reduce_scatter sendrecv alltoall scatter; do
  a=$(/tmp/c2c | awk '{print $3}')
  out=$(ORBIT_DEBUG=INFO "$build/launcher/orbitrun" --no-tag -n 2 "$build/bench/${c}_bench" --size 256K:64M --factor 4 2>&1)
  echo "$c rt_before=$a rt_after=$(/tmp/c2c | awk '{print $3}') turned_far=$(grep -c 'its core is far' <<<"$out") turned_back=$(grep -c 'again: ordinary stores' <<<"$out")"
done
