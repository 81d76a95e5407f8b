#!/usr/bin/env bash
# Configure (once) and build. Usage: scripts/build.sh [BUILDDIR] [meson options...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" -Dwerror=true "$@"
fi
ninja -C "$dir"
