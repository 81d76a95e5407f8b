"""Self-check of the error tests: without its fault, each error scenario must fail them.

(test_collectives.py's test_checks_detect_corruption does the same for the data checks.)
About 9 s on 2 cores; ORBIT_TEST_SELFCHECK=0 leaves them out.
"""
import os

import pytest

import harness

harness.require_torch()

if os.environ.get("ORBIT_TEST_SELFCHECK") == "0":
    pytest.skip("self-check of the error tests left out (ORBIT_TEST_SELFCHECK=0)", allow_module_level=True)


@pytest.mark.parametrize("scenario,world_size", [("shape", 2), ("skip", 2), ("sigkill", 3)])
def test_error_test_fails_without_its_fault(scenario, world_size, under_test):
    # shape and skip drop their fault with ORBIT_TEST_NO_FAULT; sigkill's is the harness's
    # kill, which is simply not asked for. The loop is shortened: it only has to end.
    job = harness.run_job(scenario, world_size, under_test, timeout=60,
                          env={"ORBIT_TEST_NO_FAULT": "1", "ORBIT_TEST_ITERATIONS": "10"})
    with pytest.raises(pytest.fail.Exception, match="raised nothing: the fault went unnoticed"):
        harness.assert_ranks_raised(job, range(world_size))
    assert job.returncodes() == [harness.EXIT_OK] * world_size, job.describe()
