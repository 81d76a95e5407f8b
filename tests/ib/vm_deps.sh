#!/usr/bin/env bash
# Install what tests/ib/rxe_vm.sh needs from Debian 12 when it is missing (run as root):
# QEMU, Debian's own kernel (its module tree has rdma_rxe, Soft-RoCE), a static busybox and
# cpio for the guests' initramfs, and the verbs tools the guests run. The installing is
# scripts/deps.sh's (idempotent, silent when all is there, non-zero with the reason if not).
# The kernel package runs update-initramfs on install; its initrd is never used here.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../scripts/deps.sh" qemu-system-x86 linux-image-amd64 \
  busybox-static perftest rdma-core ibverbs-utils rdmacm-utils iproute2 kmod cpio
