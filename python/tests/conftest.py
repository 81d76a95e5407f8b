"""Shared fixtures of the orbit torch.distributed suite (see harness.py for how jobs run).

The backend under test is $ORBIT_TORCH_BACKEND, "orbit" unless set. Until python/orbit_torch
exists, ORBIT_TORCH_BACKEND=gloo runs the whole suite Gloo against Gloo, which proves the
harness and the checks; the orbit-only checks are then skipped, each saying why.
"""
import pytest

import harness


def pytest_report_header(config):
    return [f"orbit torch suite: backend under test = {harness.backend_under_test()!r} "
            f"(ORBIT_TORCH_BACKEND), reference = 'gloo', python = {harness.PYTHON}"]


@pytest.fixture(scope="session")
def under_test():
    return harness.backend_under_test()


@pytest.fixture(scope="session")
def collectives_job(under_test):
    """run(world_size) -> the Job of the collectives scenario at that size, run once per
    session: its many sections are reported by many tests (a process costs ~2 s of torch
    import, so one job per check would not fit the suite's time)."""
    jobs = {}

    def run(world_size):
        if world_size not in jobs:
            try:
                jobs[world_size] = harness.run_job("collectives", world_size, under_test, timeout=150)
            except pytest.fail.Exception as e:
                # A hung job fails every test that reads it, each with the same report,
                # instead of being rerun (and waited for again) by each.
                jobs[world_size] = e
        job = jobs[world_size]
        if isinstance(job, BaseException):
            pytest.fail(str(job), pytrace=False)
        return job
    return run
