#!/usr/bin/env bash
# Planted bugs in orbit_torch (python/orbit_torch): each must make the torch suite fail.
#   bash scripts/torch_mutants.sh            all of tests/mutants/torch/*.patch
#   bash scripts/torch_mutants.sh NAME...    only these
# Same format as scripts/mutants.sh: '# mutant:' and '# tests:' lines (here pytest node ids
# under python/tests, at least one of which must fail), then a git diff. Each mutant is applied
# to a copy of python/, built in place there (incrementally) and put first on PYTHONPATH, so
# the installed orbit_torch is not touched. Not part of CI: about a minute per mutant.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=${ORBIT_MUTANT_DIR:-/var/tmp/orbit-mutants}/torch
py=$(bash scripts/torch_env.sh) || exit 2
mkdir -p "$work/tree"
rsync -a --delete --exclude build --exclude '*.egg-info' --exclude '_C*.so' python include "$work/tree"/
ln -sfn "$root/build" "$work/tree/build"
build() { (cd "$work/tree/python" && ORBIT_BUILD="$root/build" "$py" setup.py -q build_ext --inplace) >"$work/$1.build.log" 2>&1; }
build unmutated || { echo "torch_mutants: the unmutated copy does not build ($work/unmutated.build.log)" >&2; exit 2; }

if [ $# -gt 0 ]; then
  patches=(); for n in "$@"; do patches+=("tests/mutants/torch/$n.patch"); done
else
  patches=(tests/mutants/torch/*.patch)
fi
survived=0 caught=0 broken=0
summary=()
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  what=$(sed -n 's/^# mutant: //p' "$p" | head -1)
  tests=$(sed -n 's/^# tests: //p' "$p" | head -1)
  if ! (cd "$work/tree" && git apply --unidiff-zero "$root/$p") 2>"$work/$name.apply.log"; then
    summary+=("BROKEN   $name: does not apply"); broken=$((broken + 1)); continue
  fi
  if ! build "$name"; then
    summary+=("BROKEN   $name: does not build (see $work/$name.build.log)"); broken=$((broken + 1))
  else
    args=(); for t in $tests; do args+=("python/tests/$t"); done
    if PYTHONPATH="$work/tree/python" "$py" -m pytest -q -x -p no:cacheprovider "${args[@]}" >"$work/$name.test.log" 2>&1; then
      summary+=("SURVIVED $name: $what"); survived=$((survived + 1))
    else
      summary+=("caught   $name: $(grep -E '^FAILED' "$work/$name.test.log" | head -1 | cut -c1-100)"); caught=$((caught + 1))
    fi
  fi
  (cd "$work/tree" && git apply -R --unidiff-zero "$root/$p") || { echo "torch_mutants: $name does not revert" >&2; exit 2; }
done
build reverted >/dev/null || true
printf '%s\n' "${summary[@]}"
echo "torch_mutants: $caught caught, $survived survived, $broken broken"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
