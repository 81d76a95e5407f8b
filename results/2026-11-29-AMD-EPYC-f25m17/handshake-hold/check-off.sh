#!/usr/bin/env bash
# orbit's 8-byte broadcast with the signature checks on and off (ORBIT_CHECK), alternating,
# 6 rounds, 500000 calls; columns: setting, us a call out of place and in place, c2c ns.
build=${1:-build}
for i in 1 2 3 4 5 6; do for chk in 1 0; do
  c=$("$build/bench/c2c" | tail -1 | awk '{print $2}')
  r=$(ORBIT_CHECK=$chk "$build/launcher/orbitrun" -n 2 "$build/bench/broadcast_bench" --size 8:8 --iters 500000 2>&1 | grep -E '^\[0\] +8 ' | awk '{print $7, $11}')
  echo "check=$chk $r $c"
done; done
