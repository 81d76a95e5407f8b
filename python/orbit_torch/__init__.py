"""orbit as a torch.distributed backend.

    import orbit_torch                      # registers the backend "orbit"
    dist.init_process_group("orbit")         # or "cpu:orbit,cuda:nccl", ...

CPU tensors run on a worker thread per process group, in issue order; CUDA tensors are
enqueued on the current stream. Errors raise with orbit's message, which names the rank and
the call. See docs/pytorch.md.
"""
from datetime import timedelta

import torch
import torch.distributed as dist

from . import _C

__all__ = ["OrbitBackend"]

OrbitBackend = _C.OrbitBackend


def _create(dist_opts, pg_opts=None):
    timeout = dist_opts.timeout
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    parent = dist_opts.split_from
    # torch hands a split source only where it also makes the ranks outside the new group
    # join the split (perform_nocolor_split): then the group is split from the parent's
    # communicator; otherwise it gets one of its own through the group's store
    if parent is not None and not isinstance(parent, OrbitBackend):
        parent = None
    return OrbitBackend(dist_opts.store, dist_opts.group_rank, dist_opts.group_size, seconds, parent, True)


if "orbit" not in dist.Backend.backend_list:
    dist.Backend.register_backend("orbit", _create, extended_api=True, devices=["cpu", "cuda"])
