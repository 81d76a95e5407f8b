#!/usr/bin/env bash
# Planted bugs: every mutant under tests/mutants/ must be caught by the tests it names.
#   bash scripts/mutants.sh            all mutants
#   bash scripts/mutants.sh NAME...    only these (file names without .patch)
# Not part of CI (a rebuild and a test run per mutant: slow). Each mutant is applied to a copy
# of this tree (tracked and untracked-but-not-ignored files, so uncommitted work counts),
# built incrementally in one build dir, the tests it names are run, and the patch is taken
# back. A mutant "survives" when every named test still passes; the script then exits 1.
#
# Mutant format (tests/mutants/NAME.patch): header lines, then a unified diff (git diff):
#   # mutant: what the planted bug does, in one line
#   # tests: meson test names that must catch it (at least one must fail)
#   diff --git a/collectives/ring.c b/collectives/ring.c
#   ...
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# not /tmp: the Soft-RoCE guests (tests/ib/rxe_vm.sh) have their own /tmp, and the ibvm mutants
# run scripts from the copy
work=${ORBIT_MUTANT_DIR:-/var/tmp/orbit-mutants}
mkdir -p "$work"
copy=$work/tree
build=$copy/build-mutants

# refresh the copy from this tree (rsync keeps the build dir and unchanged timestamps)
command -v rsync >/dev/null || bash scripts/deps.sh || exit 2
mkdir -p "$copy"
git ls-files -co --exclude-standard -z | rsync -a --from0 --files-from=- ./ "$copy"/
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$copy" -Dcuda=disabled >"$work/setup.log" 2>&1 \
    || { echo "mutants: meson setup failed (see $work/setup.log)" >&2; exit 2; }
fi
ninja -C "$build" >"$work/build.log" 2>&1 || { echo "mutants: the unmutated tree does not build ($work/build.log)" >&2; exit 2; }

if [ $# -gt 0 ]; then
  patches=(); for n in "$@"; do patches+=("tests/mutants/$n.patch"); done
else
  patches=(tests/mutants/*.patch)
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
survived=0 caught=0 broken=0
summary=()
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  what=$(sed -n 's/^# mutant: //p' "$p" | head -1)
  tests=$(sed -n 's/^# tests: //p' "$p" | head -1)
  if [ -z "$tests" ]; then
    echo "mutants: $p has no '# tests:' line" >&2; broken=$((broken + 1)); continue
  fi
  if ! (cd "$copy" && git apply --unidiff-zero "$root/$p") 2>"$work/$name.apply.log"; then
    echo "mutants: $name does not apply (see $work/$name.apply.log)" >&2
    summary+=("BROKEN   $name: does not apply"); broken=$((broken + 1)); continue
  fi
  if ! ninja -C "$build" >"$work/$name.build.log" 2>&1; then
    # a mutant that does not compile proves nothing
    summary+=("BROKEN   $name: does not build (see $work/$name.build.log)"); broken=$((broken + 1))
  else
    killers=()
    for t in $tests; do
      if ! meson test -C "$build" --no-rebuild --print-errorlogs "$t" >"$work/$name.$t.log" 2>&1; then
        killers+=("$t")
      fi
    done
    if [ ${#killers[@]} -gt 0 ]; then
      summary+=("CAUGHT   $name by ${killers[*]}: $what"); caught=$((caught + 1))
    else
      summary+=("SURVIVED $name (ran: $tests): $what"); survived=$((survived + 1))
    fi
  fi
  (cd "$copy" && git apply -R --unidiff-zero "$root/$p") || { echo "mutants: cannot take $name back" >&2; exit 2; }
done
ninja -C "$build" >/dev/null 2>&1
printf '%s\n' "${summary[@]}"
echo "mutants: $caught caught, $survived survived, $broken broken (logs in $work)"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
