#!/usr/bin/env bash
# Quick-start command 2: build and run the tests.
#   1. the full suite on a -Werror build (meson test; `ctest --test-dir build` runs the same list)
#   2. the GPU tests and CUDA kernel tests on the CPU emulator of the device path
#      (tools/cuda_emu, -Dgpu_emu=true): no GPU here, so this is where they run in CI
#   3. the quick suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   4. the multithreaded tests under ThreadSanitizer
#   5. the wire-format fuzzer (libFuzzer, clang) for ORBIT_FUZZ_SECONDS (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

bash scripts/build.sh build
meson test -C build --print-errorlogs --num-processes 2

if [ -f /usr/local/cuda/include/cuda_runtime_api.h ]; then
  bash scripts/build.sh build-emu -Dgpu_emu=true
  # reverse: a block's threads run last-first between barriers, so a read of what thread 0
  # wrote without a barrier in between sees stale data (forward and random: docs/gpu.md)
  ORBIT_CUDA_EMU_ORDER=reverse meson test -C build-emu --no-rebuild --print-errorlogs --num-processes 1 --suite gpu
  meson test -C build-emu --no-rebuild --print-errorlogs kernels_cuda
else
  echo "test.sh: no CUDA headers under /usr/local/cuda: the device path's tests on the CPU emulator are skipped"
fi

bash scripts/build.sh build-asan -Db_sanitize=address,undefined -Dbuildtype=debugoptimized -Dcuda=disabled
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --num-processes 2 --suite quick

bash scripts/build.sh build-tsan -Db_sanitize=thread -Dbuildtype=debugoptimized -Dcuda=disabled
TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --num-processes 1 --suite tsan

if command -v clang >/dev/null; then
  [ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dfuzz=enabled -Dcuda=disabled \
    -Db_sanitize=address,undefined -Dbuildtype=debugoptimized -Dwerror=true >/dev/null
  ninja -C build-fuzz tests/fuzz/fuzz_wire
  work=$(mktemp -d)
  cp tests/fuzz/corpus/* "$work"/
  echo "fuzzing the wire parsers for ${ORBIT_FUZZ_SECONDS:-60} s"
  (cd "$work" && "$OLDPWD"/build-fuzz/tests/fuzz/fuzz_wire -max_total_time="${ORBIT_FUZZ_SECONDS:-60}" \
     -print_final_stats=1 . 2>&1 | tail -5)
  rm -rf "$work"
fi
echo "test.sh: all passed"
