#!/usr/bin/env bash
# run one orbit allreduce config across 2 netns, report CPU idle share during it
cd "$(dirname "$0")/../../.." # the repository root
. tests/net/netns_lib.sh
orbtest_setup 2 "" "" || { echo "skip"; exit 77; }
read -r _ u n s i w x y z _ < /proc/stat
t0=$((u+n+s+i+w+x+y+z)); i0=$i
orbtest_job torchrun 1 900 /tmp/r/idle.log "$@" -- "$PWD/build/bench/allreduce_bench" --backend custom --size 16M:16M --iters 300 --no-inplace >/dev/null 2>&1
read -r _ u n s i w x y z _ < /proc/stat
t1=$((u+n+s+i+w+x+y+z)); echo "idle share: $(( 100*(i-i0)/(t1-t0) ))%  (user $u sys $s softirq $y)"
grep -E "^ *16777216" /tmp/r/idle.log | head -2
