#!/usr/bin/env bash
# Runs the orbit torch.distributed suite (python/tests) with the torch stage's venv:
#
#   python/tests/run.sh [pytest arguments]             # backend under test: orbit
#   ORBIT_TORCH_BACKEND=gloo python/tests/run.sh       # Gloo against Gloo (proves the suite)
#
# ORBIT_TORCH_PYTHON picks another interpreter. Exits with pytest's status, or 77 (the
# "skipped" status of automake and meson) when that interpreter cannot import torch.
set -u
here=$(cd "$(dirname "$0")" && pwd)
py=${ORBIT_TORCH_PYTHON:-${ORBIT_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/orbit/torch-venv}/bin/python}

if ! "$py" -c 'import torch, torch.distributed' >/dev/null 2>&1; then
    echo "run.sh: $py cannot import torch; the torch suite is skipped (scripts/torch_env.sh installs it)"
    exit 77
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$py" -m pytest -q -ra -p no:cacheprovider --durations=0 "$@" "$here" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# pytest's closing line ("N passed, M skipped in T s"), once more at the very end.
echo "run.sh: $(grep -E '(passed|failed|skipped|error|deselected|no tests ran).* in [0-9.]+s' "$log" \
                | tail -1 | sed -E 's/^=+ //; s/ =+$//')"
exit "$rc"
