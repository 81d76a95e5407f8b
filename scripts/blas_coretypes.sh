#!/usr/bin/env bash
# The trainer tests under every OpenBLAS core type this OpenBLAS offers and this CPU runs:
# the numeric bounds must hold whatever kernels the BLAS picks on a user's machine.
#   bash scripts/blas_coretypes.sh [BUILDDIR] [meson test args...]   (default: build, --suite trainer)
# Not in CI (a few minutes per core type); the suite keeps one forced variant
# (trainer_ddp_custom_prescott). Prints one line per core type and exits 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
[ $# -gt 0 ] || set -- --suite trainer
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
train="$dir/trainer/orbit-train"
[ -x "$train" ] || { echo "blas_coretypes: build $dir first ($train missing)" >&2; exit 2; }

flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done; }
# core type: the CPU flags its kernels need
declare -A need=(
  [Prescott]="sse3" [Core2]="ssse3" [Nehalem]="sse4_2" [Sandybridge]="avx"
  [Haswell]="avx2 fma" [Zen]="avx2 fma"
  [SkylakeX]="avx512f avx512bw avx512dq avx512vl avx512cd"
  [Cooperlake]="avx512f avx512bw avx512dq avx512vl avx512cd avx512_bf16"
  [SapphireRapids]="avx512f avx512bw avx512dq avx512vl avx512cd avx512_bf16 amx_bf16")
flags=${flags// pni / pni sse3 }
order=(default Prescott Core2 Nehalem Sandybridge Haswell Zen SkylakeX Cooperlake SapphireRapids)

fail=0
results=()
for ct in "${order[@]}"; do
  if [ "$ct" = default ]; then
    unset OPENBLAS_CORETYPE
  else
    if ! has ${need[$ct]}; then
      results+=("$(printf '%-15s skipped: this CPU lacks %s' "$ct" "${need[$ct]}")"); continue
    fi
    # OpenBLAS says "Core not found" for a name it does not offer and autodetects instead
    if OPENBLAS_CORETYPE=$ct OPENBLAS_VERBOSE=2 "$train" --help 2>&1 | grep -q "Core not found"; then
      results+=("$(printf '%-15s skipped: not offered by this OpenBLAS' "$ct")"); continue
    fi
    export OPENBLAS_CORETYPE=$ct
  fi
  # the kernels orbit-train really runs (it may re-exec itself with another core type)
  used=$(OPENBLAS_VERBOSE=2 "$train" --help 2>&1 | sed -n 's/^Core: //p' | tail -1)
  log=$(mktemp)
  if meson test -C "$dir" --no-rebuild --num-processes 1 "$@" >"$log" 2>&1; then verdict=passed; else verdict=FAILED; fail=1; fi
  worst=$(grep -h -o 'ddp equivalence ([a-z]*): worst difference [0-9.e+-]*' "$dir/meson-logs/testlog.txt" | sed 's/ddp equivalence //' | tr '\n' ' ')
  counts=$(grep -E '^(Ok|Fail|Skipped):' "$log" | tr -s ' ' | tr '\n' ' ')
  results+=("$(printf '%-15s %s (%s): %s| %s' "$ct" "$verdict" "${used:-?} kernels" "$counts" "$worst")")
  [ $verdict = passed ] || grep -E "check failed|FAIL" "$log" | head -5
  rm -f "$log"
done
printf '%s\n' "${results[@]}"
exit $fail
