#!/usr/bin/env bash
# The session's final build against the one it started from (03acc96), small calls: 8 and 64 B
# broadcast and scatter out of place, 200000 calls, alternating, 5 rounds. Usage:
# vs-start.sh NEW_BUILD OLD_BUILD > vs-start.txt (columns: build, us at 8 and 64 B, then c2c ns).
new=$1; old=$2
for r in 1 2 3 4 5; do for cfg in "new=$new" "old=$old"; do n=${cfg%%=*}; d=${cfg#*=}
  c=$("$new/bench/c2c" | tail -1 | awk '{print $2}')
  v=$("$d/launcher/orbitrun" -n 2 "$d/bench/broadcast_bench" --size 8:64 --factor 8 --iters 200000 --no-inplace 2>&1 | grep -E '^\[0\] +(8|64) ' | awk '{printf "%s ", $7}')
  w=$("$d/launcher/orbitrun" -n 2 "$d/bench/scatter_bench" --size 8:64 --factor 8 --iters 200000 --no-inplace 2>&1 | grep -E '^\[0\] +(8|64) ' | awk '{printf "%s ", $7}')
  echo "$n broadcast $v scatter $w c2c $c"
done; done
