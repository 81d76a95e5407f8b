#!/usr/bin/env bash
# Quick-start command 2: build and run the tests.
#   1. the full suite on a -Werror build (meson test; `ctest --test-dir build` runs the same list)
#   1b. the torch.distributed backend (python/tests, pytest): every operation against Gloo in
#      the same job, DDP training against Gloo, the error cases; in the venv that
#      scripts/torch_env.sh makes (skipped, 77, only where pip cannot install torch)
#   2. the GPU tests and CUDA kernel tests on the CPU emulator of the device path
#      (tools/cuda_emu, -Dgpu_emu=true): no GPU here, so this is where they run in CI
#   2b. the quick suite again on one CPU (taskset -c 0): no test may assume two cores or an
#      unpinned process
#   2c. the ib transport on real verbs: QEMU guests booting Debian's kernel with Soft-RoCE
#      (tests/ib/rxe_vm.sh, suite ibvm), one boot per mode; skipped (77) where no guest boots
#   3. the quick suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   4. the multithreaded tests under ThreadSanitizer
#   5. the wire-format fuzzer (libFuzzer, clang) for ORBIT_FUZZ_SECONDS (default 30) on 2 workers
# Every stage runs even when an earlier one failed; each prints its wall time, and the end
# has one line per stage (passed / failed / skipped and why). Exits 1 if any stage failed.
# The builds of the emulator, sanitizer and fuzz stages run in the background at idle priority
# (SCHED_IDLE) from the end of the main stage: they take the CPU that the torch and ib stages
# leave idle and the core the one-CPU stage leaves free, and each stage waits for its own build.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh || { echo "test.sh: installing the dependencies failed" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

summary=()
npassed=0 nfailed=0 nskipped=0
# stage NAME COMMAND...: runs COMMAND in a subshell with -e, records the verdict and time
stage() {
  local name=$1; shift
  local t0=$SECONDS
  echo "=== test.sh: $name"
  # not inside `if`: bash ignores set -e in a condition, even in a subshell
  (set -e; "$@")
  local rc=$?
  if [ $rc -eq 77 ]; then
    summary+=("$(printf 'skipped  %-10s %4d s  (see its output)' "$name" $((SECONDS - t0)))"); nskipped=$((nskipped + 1))
  elif [ $rc -eq 0 ]; then
    summary+=("$(printf 'passed   %-10s %4d s' "$name" $((SECONDS - t0)))"); npassed=$((npassed + 1))
  else
    summary+=("$(printf 'FAILED   %-10s %4d s' "$name" $((SECONDS - t0)))"); nfailed=$((nfailed + 1))
  fi
  echo "=== test.sh: $name: $((SECONDS - t0)) s"
}
skip() {
  summary+=("$(printf 'skipped  %-10s        %s' "$1" "$2")"); nskipped=$((nskipped + 1))
  echo "=== test.sh: $1: skipped: $2"
}

# configure DIR [meson options...]: set up a build dir once; the `meson test` that follows
# (without --no-rebuild) builds only what its tests depend on, not the trainer, benches and tools
configure() {
  local dir=$1; shift
  [ -f "$dir/build.ninja" ] || meson setup "$dir" -Dwerror=true "$@" >/dev/null
}
main_suite() {
  bash scripts/build.sh build
  meson test -C build --print-errorlogs --num-processes 2 --no-suite ibvm
}
ib_vm() {
  bash tests/ib/vm_deps.sh || { echo "ib: the QEMU/Soft-RoCE packages could not be installed"; return 77; }
  meson test -C build --no-rebuild --print-errorlogs --num-processes 1 --suite ibvm
  # every job skipped (exit 77: no guest could boot here) is a skipped stage, not a pass
  if python3 -c 'import json,sys; r=[json.loads(l)["result"] for l in open(sys.argv[1])]; sys.exit(0 if r and all(x == "SKIP" for x in r) else 1)' \
      build/meson-logs/testlog.json; then
    echo "ib: every guest job skipped (no QEMU guest with Soft-RoCE could boot; reasons above)"
    return 77
  fi
}
torch_suite() {
  local py
  py=$(bash scripts/torch_env.sh) || return $?
  ORBIT_TORCH_PYTHON=$py bash python/tests/run.sh
}
one_cpu() {
  taskset -c 0 meson test -C build --no-rebuild --print-errorlogs --num-processes 1 --suite quick
}
emulator() {
  configure build-emu -Dgpu_emu=true
  # reverse: a block's threads run last-first between barriers, so a read of what thread 0
  # wrote without a barrier in between sees stale data (forward and random: docs/gpu.md)
  # The matrices of process ranks (the full ones, and the quick ones of each protocol and of the
  # tree) run with the emulator's MPS model (kernels of different processes side by side: 25 s
  # instead of 103 s at 4 ranks); every other GPU test keeps the default model, where processes
  # take turns on the device in time slices as on a GPU without MPS (docs/gpu.md): the
  # blocking form's matrix, the schedulers' and the two-GPU tests among them.
  ORBIT_CUDA_EMU_ORDER=reverse meson test -C build-emu --print-errorlogs --num-processes 1 --suite gpu \
    --no-suite gpu-full
  ORBIT_CUDA_EMU_ORDER=reverse ORBIT_CUDA_EMU_MPS=1 meson test -C build-emu --print-errorlogs \
    --num-processes 1 --suite gpu-full
  meson test -C build-emu --print-errorlogs kernels_cuda
}
asan() {
  configure build-asan -Db_sanitize=address,undefined -Dbuildtype=debugoptimized -Dcuda=disabled
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --num-processes 2 --suite quick
}
tsan() {
  configure build-tsan -Db_sanitize=thread -Dbuildtype=debugoptimized -Dcuda=disabled
  TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --num-processes 1 --suite tsan
}
fuzz() {
  CC=clang configure build-fuzz -Dfuzz=enabled -Dcuda=disabled -Db_sanitize=address,undefined \
    -Dbuildtype=debugoptimized
  ninja -C build-fuzz tests/fuzz/fuzz_wire
  local work rc
  work=$(mktemp -d)
  cp tests/fuzz/corpus/* "$work"/
  # two workers (libFuzzer's fork mode): the two cores fuzz 60 CPU-seconds in 30 s
  echo "fuzzing the wire parsers for ${ORBIT_FUZZ_SECONDS:-30} s on 2 workers"
  (cd "$work" && "$OLDPWD"/build-fuzz/tests/fuzz/fuzz_wire -fork=2 -max_total_time="${ORBIT_FUZZ_SECONDS:-30}" \
     -print_final_stats=1 . >fuzz.log 2>&1); rc=$?
  tail -5 "$work/fuzz.log"
  rm -rf "$work"
  return $rc
}

# ---- the later stages' builds, in the background (see the top) --------------------------
# The file $pre/NAME marks a build done; await NAME waits for it or for the builder's end.
# A build that fails here is redone in the foreground by its stage's meson test, which then
# shows the error where it belongs.
pre=$(mktemp -d)
prebuild_all() {
  if command -v chrt >/dev/null; then chrt --idle -p 0 "$BASHPID" >/dev/null; else renice -n 19 "$BASHPID" >/dev/null; fi
  set +e
  # build DIR ARGS...: what the stage's meson test would build (scripts/test_targets.py ARGS)
  build() { local t; t=$(python3 scripts/test_targets.py "$@") && ninja -C "$1" $t; }
  if [ -f /usr/local/cuda/include/cuda_runtime_api.h ]; then
    configure build-emu -Dgpu_emu=true && build build-emu --suite gpu --test kernels_cuda
  fi
  touch "$pre/emulator"
  configure build-asan -Db_sanitize=address,undefined -Dbuildtype=debugoptimized -Dcuda=disabled &&
    build build-asan --suite quick
  touch "$pre/asan"
  configure build-tsan -Db_sanitize=thread -Dbuildtype=debugoptimized -Dcuda=disabled &&
    build build-tsan --suite tsan
  touch "$pre/tsan"
  if command -v clang >/dev/null; then
    CC=clang configure build-fuzz -Dfuzz=enabled -Dcuda=disabled -Db_sanitize=address,undefined \
      -Dbuildtype=debugoptimized && ninja -C build-fuzz tests/fuzz/fuzz_wire
  fi
  touch "$pre/fuzz"
}
prebuild_pid=
trap 'if [ -n "$prebuild_pid" ]; then kill "$prebuild_pid" 2>/dev/null; fi; rm -rf "$pre"' EXIT
await() {
  local t0=$SECONDS
  while [ ! -e "$pre/$1" ] && kill -0 "$prebuild_pid" 2>/dev/null; do sleep 1; done
  if [ -e "$pre/$1" ]; then
    echo "=== test.sh: $1's build (background): ready, waited $((SECONDS - t0)) s"
  else
    echo "=== test.sh: $1's build (background): the builder stopped early ($pre/log); the stage builds it"
  fi
}

stage main main_suite
# not during the main suite: its ranks yield while they wait, which hands even an idle-priority
# task a time slice (it took the main suite from about 390 to 529 s)
prebuild_all >"$pre/log" 2>&1 &
prebuild_pid=$!
stage torch torch_suite
stage ib ib_vm
if command -v taskset >/dev/null; then
  stage one-cpu one_cpu
else
  skip one-cpu "no taskset (util-linux): the quick suite was not run on one CPU"
fi
await emulator
if [ -f /usr/local/cuda/include/cuda_runtime_api.h ]; then
  stage emulator emulator
else
  skip emulator "no CUDA headers under /usr/local/cuda: the device path's tests on the CPU emulator did not run"
fi
await asan
stage asan asan
await tsan
stage tsan tsan
await fuzz
if command -v clang >/dev/null; then
  stage fuzz fuzz
else
  skip fuzz "no clang: the wire parsers were not fuzzed"
fi

echo "=== test.sh: stages"
printf '  %s\n' "${summary[@]}"
echo "test.sh: $npassed passed, $nfailed failed, $nskipped skipped"
[ "$nfailed" -eq 0 ]
