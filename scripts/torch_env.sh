#!/usr/bin/env bash
# The torch stage's environment: a virtual environment with the pinned torch
# (python/requirements.txt) and orbit_torch built against it and against build/liborbit.so.
# Creates or updates only what is missing or stale, then prints the environment's python.
#   ORBIT_TORCH_VENV  where the environment lives (default ~/.cache/orbit/torch-venv: outside
#                     the work tree, so fresh clones on one machine share the 3 GB download)
#   ORBIT_BUILD       the meson build whose liborbit.so orbit_torch links (default build)
# Exit 77 (skip) with a line saying why when pip cannot install torch here; 1 on other errors.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=${ORBIT_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/orbit/torch-venv}
build=$(cd "${ORBIT_BUILD:-build}" && pwd)
log() { echo "torch_env: $*" >&2; }

[ -f "$build/liborbit.so" ] || { log "$build/liborbit.so is missing: run bash scripts/build.sh build first"; exit 1; }

# Debian's python3 has no venv module or headers until these are installed
if ! python3 -c 'import ensurepip, sysconfig, os; assert os.path.exists(sysconfig.get_paths()["include"] + "/Python.h")' 2>/dev/null; then
  bash scripts/deps.sh python3-venv python3-dev python3-pip >&2
fi

want=$(sha256sum python/requirements.txt | cut -c1-16)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.orbit-requirements" 2>/dev/null)" != "$want" ]; then
  log "installing python/requirements.txt into $venv (torch with its CUDA libraries: about 3 GB, minutes)"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" >&2
  if ! "$venv/bin/pip" install -q --disable-pip-version-check -r python/requirements.txt >&2; then
    log "pip could not install torch here (see above): the torch stage is skipped"
    rm -rf "$venv"
    exit 77
  fi
  echo "$want" > "$venv/.orbit-requirements"
fi

# orbit_torch: compiled again only when its sources or orbit.h changed; a new liborbit.so
# (every fresh clone builds one) is copied into the installed package, since the extension
# depends on the library's interface only
stamp=$(cat python/setup.py python/orbit_torch/*.py python/orbit_torch/csrc/* include/orbit.h | sha256sum | cut -c1-16)
if [ "$(cat "$venv/.orbit-torch-build" 2>/dev/null)" != "$stamp" ]; then
  log "building orbit_torch against $("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)') and $build/liborbit.so"
  ORBIT_BUILD=$build "$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation \
    --force-reinstall --no-deps "$root/python" >&2
  echo "$stamp" > "$venv/.orbit-torch-build"
fi
pkg=$("$venv/bin/python" -c 'import importlib.util as u, os; print(os.path.dirname(u.find_spec("orbit_torch").origin))')
lib=$(readlink -f "$build/liborbit.so")
# a new file renamed over the old one: a running process keeps the copy it mapped
cmp -s "$lib" "$pkg/liborbit.so.0" || { cp "$lib" "$pkg/.liborbit.so.0.new" && mv -f "$pkg/.liborbit.so.0.new" "$pkg/liborbit.so.0"; }
echo "$venv/bin/python"
