#!/usr/bin/env bash
# Install what orbit needs from Debian 12 when it is missing (run as root). Idempotent:
# nothing is downloaded when every package is already there. With arguments: those packages
# instead of the build's list (tests/ib/vm_deps.sh asks for the Soft-RoCE guests' own).
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config python3 cmake
      libhwloc-dev hwloc libopenmpi-dev openmpi-bin libopenblas-dev zlib1g-dev
      libibverbs-dev iproute2 iperf3 sockperf dataset-fashion-mnist rsync
      clang libclang-rt-14-dev)
[ "${ORBIT_WITH_TORCH:-0}" = 1 ] && pkgs+=(python3-torch python3-numpy)
[ $# -gt 0 ] && pkgs=("$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "deps: need root to install packages (run with sudo)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
