#!/usr/bin/env bash
# Quick-start command 2: build and run the tests: the full suite on a -Werror build (through
# meson and again through ctest), then the quick suite under AddressSanitizer+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh build
meson test -C build --print-errorlogs --num-processes 2
bash scripts/build.sh build-asan -Db_sanitize=address,undefined -Dbuildtype=debugoptimized
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --num-processes 2 --suite quick
