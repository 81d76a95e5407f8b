#!/usr/bin/env bash
# The host-memory measurements behind docs/perf.md, in one go, on this machine:
#   1. all-reduce, 2 ranks, orbit vs Open MPI, 8 B .. 256 MiB (medians of REPS alternating runs)
#   2. every collective at 256 KiB .. 64 MiB and at 8 B .. 4 KiB, orbit vs Open MPI
#   3. ring vs tree all-reduce at 2, 4 and 8 ranks (the crossover)
#   4. the cost of mismatch detection on an 8-byte all-reduce (ORBIT_CHECK=1 vs 0)
#   2w. every collective at 256 KiB .. 64 MiB with orbit's buffers in its windows (orb_mem_alloc:
#      the peer reads them in place) against Open MPI with malloc'd buffers, as section 2
#   5. small all-reduce with more ranks than cores (4 ranks on this machine's cores), and all-reduce,
#      all-gather and broadcast with 8 ranks, orbit vs MPI
#   5b. small rooted calls with 4 ranks, orbit (default FIFOs, then no small ring) vs MPI
#   6. small all-reduce, 2 ranks, while a 2-rank orbit-train job competes for the cores
#   7. all-to-all and scatter at 2 and 4 ranks: busbw at 1-64 MiB, time at 8 B-4 KiB (goal_compare.sh)
#   8. last: one table of orbit/MPI ratios for every collective of 1-2b (and one of 2w), and the collectives whose
#      ranks all do the same work against the memory bound from bench/membw, run before 1-2b and
#      again here, the best of each figure (bench/ratio_table.py); then the
#      same over the runs whose c2c brackets say near only (8-table-near.txt)
#   8b. each collective's instructions a call at 8 B against Open MPI's, rank 0 and rank 1
#      (bench/call_instr.sh -m: callgrind, free of the machine's noise; where a small call's
#      time follows its instructions, the side that needs more of them says where the gap is)
# Usage: [SECTIONS="2 2b 8"] bench/host_suite.sh [BUILD_DIR] [REPS] [OUT_DIR]
#   SECTIONS: which to run (default all); 8 reads whatever 1-2b left in OUT_DIR
#   defaults: build 5 results/<UTC date>-<CPU model>; every run's table and JSON (nccl-tests
#   rows, one object per line) are kept under OUT_DIR, and the suite's output is added to OUT_DIR/suite.txt,
#   so that every figure docs/perf.md quotes can be traced to the run it came from.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
# the model name a VM shows can be as short as "AMD EPYC": family and model tell Zen 2/3/4 apart
cpu=$(awk -F': *' '/^model name/ && !n {n=$2} /^cpu family/ && !f {f=$2} /^model\t/ && !m {m=$2}
      END {print n "-f" f "m" m}' /proc/cpuinfo | sed 's/[^A-Za-z0-9]\+/-/g; s/-$//')
out=${3:-results/$(date -u +%F)-$cpu}
mkdir -p "$out"
exec > >(tee -a "$out/suite.txt") 2>&1 # appended: SECTIONS may split one suite over several runs
echo "# raw output: $out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
orbitrun=$build/launcher/orbitrun
echo "# host suite: $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# The tuner's link price (docs/algorithms.md): measured afresh now, while nothing else runs;
# the 2-rank runs below read it from the cache (other rank counts measure at their first run).
echo "# $(ORBIT_CALIBRATE=2 ORBIT_DEBUG=INFO "$orbitrun" --no-tag -n 2 "$build/bench/allreduce_bench" --size 8 --iters 10 2>&1 |
  grep -m1 -o 'tuner links inside this host.*' || echo 'tuner links: not measured (see ORBIT_CALIBRATE)')"
# How far apart the two CPUs are (bench/c2c.c): a VM's vCPUs can move between sharing a cache
# (tens of ns) and not (several times that) within seconds, and shared-memory figures move
# with them. Printed here; compare.sh brackets each of its runs the same way (listed under its
# tables and kept in runs-cores.txt, which bench/ratio_table.py shows).
echo "# cores: $("$build/bench/c2c" 2>&1 | head -1) (a cache line's round trip; load $(cut -d' ' -f1 /proc/loadavg))"
sections=" ${SECTIONS:-1 2 2w 2b 3 4 5 5b 6 7 8 8b} "
want() { [[ $sections == *" $1 "* ]]; }
# The memory bound's rates before the collectives too (section 8 measures them after): a VM's
# memory moves with its neighbours' load, and bench/ratio_table.py takes the best of the two.
if want 1 || want 2 || want 2b; then
  echo "# membw before the collectives: $("$build/bench/membw" --threads 2 | tee "$out/0-membw-before.txt" | grep -o '^copy_gbps [0-9.]*\|^add_gbps [0-9.]*' | tr '\n' ' ')"
fi

if want 1; then
echo; echo "## 1. allreduce, 2 ranks, float32 sum, 8 B .. 256 MiB"
bash bench/compare.sh -n 2 -r "$reps" -o "$out/1-allreduce" "$build" allreduce --size 8:256M --factor 4 --check
fi

if want 2; then
echo; echo "## 2. every collective, 2 ranks, float32, 16 MiB and 64 MiB"
for c in allreduce broadcast reduce gather allgather reduce_scatter sendrecv alltoall scatter; do
  echo "### $c"
  bash bench/compare.sh -n 2 -r "$reps" -o "$out/2-$c" "$build" "$c" --size 256K:64M --factor 4
done
fi

if want 2w; then
echo; echo "## 2w. every collective, 2 ranks, float32, 256 KiB .. 64 MiB, orbit's buffers in its windows"
for c in allreduce broadcast reduce gather allgather reduce_scatter sendrecv alltoall scatter; do
  echo "### $c"
  bash bench/compare.sh -n 2 -r "$reps" -o "$out/2w-$c" -c "--mem lib" "$build" "$c" --size 256K:64M --factor 4
done
fi

if want 2b; then
echo; echo "## 2b. every collective, 2 ranks, float32, 8 B .. 4 KiB, 20000 calls a size"
# the bench's default of 50 calls leaves a small size's median at the mercy of one slow spell
for c in allreduce broadcast reduce gather allgather reduce_scatter sendrecv alltoall scatter; do
  echo "### $c"
  bash bench/compare.sh -n 2 -r "$reps" -o "$out/2b-$c" "$build" "$c" --size 8:4K --factor 8 --iters 20000 --warmup 1000
done
fi

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

if want 3; then
echo; echo "## 3. ring vs tree all-reduce (median out-of-place time in us of $reps runs)"
for n in 2 4 8; do
  printf "%-8s %12s %12s %12s\n" "nranks=$n" "size(B)" "ring(us)" "tree(us)"
  tmp=$out/3-ring-tree-n$n
  mkdir -p "$tmp"
  for i in $(seq "$reps"); do
    for a in ring tree; do
      "$orbitrun" --no-tag -n "$n" "$build/bench/allreduce_bench" --algo "$a" --size 8:4M --factor 4 \
        --no-inplace --json "$tmp/$a.$i.json" >/dev/null
    done
  done
  for size in $(python3 -c "print(' '.join(str(8*4**k) for k in range(0,10)))"); do
    r=$(cat "$tmp"/ring.*.json | python3 -c "import sys,json
for l in sys.stdin:
  o=json.loads(l)
  if o['size']==$size and not o['inplace']: print(o['time_us'])" | median)
    t=$(cat "$tmp"/tree.*.json | python3 -c "import sys,json
for l in sys.stdin:
  o=json.loads(l)
  if o['size']==$size and not o['inplace']: print(o['time_us'])" | median)
    printf "%-8s %12s %12s %12s\n" "" "$size" "$r" "$t"
  done
done
fi

if want 4; then
echo; echo "## 4. mismatch detection cost: 8-byte allreduce, 2 ranks (median of $((reps*2+1)) alternating runs)"
on=(); off=()
for i in $(seq $((reps * 2 + 1))); do
  for chk in 1 0; do
    t=$(ORBIT_CHECK=$chk "$orbitrun" --no-tag -n 2 "$build/bench/allreduce_bench" --size 8 --iters 20000 --warmup 1000 \
        --no-inplace | awk '/^ +8 /{print $6}')
    if [ "$chk" = 1 ]; then on+=("$t"); else off+=("$t"); fi
  done
done
m1=$(printf "%s\n" "${on[@]}" | median); m0=$(printf "%s\n" "${off[@]}" | median)
printf 'ORBIT_CHECK=1 %s\nORBIT_CHECK=0 %s\n' "${on[*]}" "${off[*]}" >"$out/4-check-cost.txt"
echo "ORBIT_CHECK=1: $m1 us   ORBIT_CHECK=0: $m0 us   overhead: $(python3 -c "print(f'{($m1/$m0-1)*100:.1f}%')")"
fi

if want 5; then
echo; echo "## 5. all-reduce with 4 ranks (oversubscribed when the machine has fewer than 4 cores), 8 B .. 32 KiB"
bash bench/compare.sh -n 4 -r "$reps" -o "$out/5-allreduce-n4" "$build" allreduce --size 8:32K --factor 8 --no-inplace
# 8 ranks: on 2 cores more than twice as many ranks as CPUs (a waiting rank yields every 4th
# idle pass; docs/transports.md), and all-gather's small blocks go by Bruck's rounds
echo; echo "## 5. all-reduce, all-gather and broadcast with 8 ranks, 8 B .. 32 KiB"
for c in allreduce allgather broadcast; do
  bash bench/compare.sh -n 8 -r "$reps" -o "$out/5-$c-n8" "$build" $c --size 8:32K --factor 8 --no-inplace --iters 3000
done
fi

if want 5b; then
echo; echo "## 5b. rooted calls with 4 ranks, 8 B .. 512 B (gather, scatter from 64 B): orbit's default FIFOs, then no small ring"
# A root runs as many calls ahead as a FIFO holds small pieces (docs/errors.md): with more ranks
# than cores that is what small rooted calls wait on. The small ring (64 slots) gives that depth;
# ORBIT_SHM_SMALL_SLOTS=0 is the FIFO before 2026-11-30 (8 large slots only, docs/transports.md).
for small in "" 0; do
  echo "# ORBIT_SHM_SMALL_SLOTS=${small:-128 (the default)}"
  for c in broadcast reduce gather scatter; do
    sz=8:512; case $c in gather | scatter) sz=64:512 ;; esac
    env ${small:+ORBIT_SHM_SMALL_SLOTS=$small} bash bench/compare.sh -n 4 -r "$reps" -o "$out/5b-$c-n4${small:+-small$small}" \
      "$build" $c --size $sz --factor 8 --no-inplace --iters 5000
  done
done
fi

if want 6; then
echo; echo "## 6. all-reduce, 2 ranks, 8 B .. 4 KiB, while a 2-rank orbit-train (lenet) job runs alongside"
if [ -x "$build/trainer/orbit-train" ] && [ -d /usr/share/datasets/fashion-mnist ]; then
  OMP_NUM_THREADS=1 "$orbitrun" -n 2 -- "$build/trainer/orbit-train" --model lenet --epochs 100 --backend custom \
    >/dev/null 2>&1 &
  load=$!
  sleep 3
  bash bench/compare.sh -n 2 -r "$reps" -o "$out/6-under-load" "$build" allreduce --size 8:4K --factor 8 --no-inplace --iters 2000
  kill "$load" 2>/dev/null || true
  wait "$load" 2>/dev/null || true
else
  echo "(skipped: orbit-train or Fashion-MNIST missing)"
fi
fi

if want 7; then
echo; echo "## 7. alltoall and scatter, 2 and 4 ranks, orbit vs Open MPI: busbw 1-64 MiB, time 8 B-4 KiB"
bash bench/goal_compare.sh -r "$reps" -o "$out/7-goals" "$build" alltoall scatter
fi

if want 8; then
  echo; echo "## 8. where orbit stands: ratios against Open MPI, and the memory bound"
  "$build/bench/membw" --threads 2 | tee "$out/8-membw.txt"
  python3 bench/ratio_table.py "$out" "$out/0-membw-before.txt" "$out/8-membw.txt" | tee "$out/8-table.txt"
  # the same over the runs between cores that share a cache: what the code does, not the VM's spells
  echo; python3 bench/ratio_table.py --near 150 "$out" "$out/0-membw-before.txt" "$out/8-membw.txt" | tee "$out/8-table-near.txt"
  if ls -d "$out"/2w-* >/dev/null 2>&1; then # the same, orbit's buffers in its windows (2w)
    echo; python3 bench/ratio_table.py --windows "$out" "$out/0-membw-before.txt" "$out/8-membw.txt" | tee "$out/8-table-windows.txt"
  fi
fi

if want 8b; then
  echo; echo "## 8b. instructions a call at 8 B, orbit against Open MPI (callgrind), rank 0 then rank 1"
  for r in 0 1; do
    bash bench/call_instr.sh -m -r "$r" "$build" | tee "$out/8b-instr-r$r.txt"
  done
fi
