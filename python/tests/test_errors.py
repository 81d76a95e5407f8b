"""Faults that every surviving rank must see as an exception, within the timeout given to
init_process_group (15 s here) plus a margin: a mismatched shape, a skipped collective, a
rank killed in the middle of a training loop. See worker.py's shape, skip and sigkill.

A rank that caught the exception, and found it right, exits 3; a rank exits 0 only when its
call returned, i.e. the fault went unnoticed, which fails these tests. For orbit the rank also
checks the message, which orbit_torch raises as
    orbit: <op> on rank R of W failed: ORB_ERR_<NAME>: <detail naming ranks and the call>
(a RuntimeError, or a subclass such as DistBackendError): R and W its own, <op> the call, the
status one of those expected, the detail naming a rank. Gloo's messages differ: for it any
exception will do.
"""
import signal

import pytest

import harness

harness.require_torch()

ERROR_TIMEOUT_S = 15  # worker.py's ERROR_TIMEOUT_S: the timeout the error scenarios init with
MARGIN_S = 10         # worker.py's MARGIN_S
JOB_TIMEOUT_S = 60


def test_shape_mismatch(under_test):
    """Rank 0 all-reduces 100 elements, rank 1 200: both raise (orbit: ORB_ERR_MISMATCH, and
    the detail names a rank)."""
    job = harness.run_job("shape", 2, under_test, timeout=JOB_TIMEOUT_S)
    # Gloo does not raise here: the rank whose buffer is the smaller aborts the process
    # (SIGABRT from a check in Gloo's TCP transport), and its peer raises on the lost
    # connection. That is Gloo's behaviour, not something asked of orbit.
    allowed = (-signal.SIGABRT,) if under_test == "gloo" else ()
    harness.assert_ranks_raised(job, range(2), also_allowed=allowed)


def test_skipped_collective(under_test):
    """Rank 1 skips an all_reduce, then both call barrier: both raise (orbit: ORB_ERR_MISMATCH
    or ORB_ERR_TIMEOUT)."""
    job = harness.run_job("skip", 2, under_test, timeout=JOB_TIMEOUT_S)
    harness.assert_ranks_raised(job, range(2))


def test_sigkill_during_training(under_test):
    """Rank 2 of 3 is SIGKILLed while the ranks loop over all_reduces of 1M float32: ranks 0
    and 1 raise (orbit: ORB_ERR_PEER_LOST or ORB_ERR_TIMEOUT, the detail naming a rank), each
    within the timeout + margin of the kill."""
    victim = 2
    job = harness.run_job("sigkill", 3, under_test, timeout=JOB_TIMEOUT_S, kill=(victim, 5))
    if job.killed_rank is None:
        pytest.fail("the harness never killed rank 2 (its loop ended or it failed first)\n"
                    + job.describe(), pytrace=False)
    assert job.ranks[victim].returncode == -signal.SIGKILL, job.describe()
    harness.assert_ranks_raised(job, [0, 1])
    for r in (0, 1):
        t_exc = job.ranks[r].report["t_exception"]
        assert t_exc - job.fault_time <= ERROR_TIMEOUT_S + MARGIN_S, (
            f"rank {r} raised {t_exc - job.fault_time:.1f} s after the kill, more than "
            f"{ERROR_TIMEOUT_S} + {MARGIN_S} s\n" + job.describe())
