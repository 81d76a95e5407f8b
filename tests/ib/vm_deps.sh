#!/usr/bin/env bash
# Install what tests/ib/rxe_vm.sh needs from Debian 12 when it is missing (run as root):
# QEMU, Debian's own kernel (its module tree has rdma_rxe, Soft-RoCE), a static busybox for
# the guests' initramfs, and the verbs tools the guests run. Idempotent and silent when every
# package is already there; exits non-zero (with the reason on stderr) when it cannot install.
set -euo pipefail
pkgs=(qemu-system-x86 linux-image-amd64 busybox-static perftest rdma-core ibverbs-utils
      rdmacm-utils iproute2 kmod cpio)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "vm_deps: installing ${missing[*]}" >&2
if [ "$(id -u)" != 0 ]; then
  echo "vm_deps: need root to install packages (run with sudo)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# The kernel package runs update-initramfs on install; its initrd is never used here, but
# that is the package's own business.
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
