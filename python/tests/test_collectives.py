"""Every collective of torch.distributed's public API on the backend under test, at world sizes
1 to 4, compared with Gloo (and Gloo with the locally computed value); see worker.py.

One job per world size runs all sections; each section is its own test here, so that a failure
names the operation. Orbit-only sections are skipped in the Gloo-versus-Gloo run, with the reason.
"""
import pytest

import harness

harness.require_torch()

# The sections of worker.py's collectives scenario, in its order (test_job checks they agree).
SECTIONS = [
    "init",
    "all_reduce",
    "all_reduce_sizes",
    "all_reduce_avg",
    "all_reduce_premul_sum",
    "all_reduce_bitwise_rejected",
    "all_reduce_coalesced",
    "broadcast",
    "reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_into_tensor_stacked",
    "all_gather_into_tensor_coalesced",
    "gather",
    "scatter",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "reduce_scatter_tensor_stacked",
    "reduce_scatter_tensor_coalesced",
    "all_to_all",
    "all_to_all_uneven",
    "all_to_all_single",
    "barrier",
    "async_ops",
    "noncontiguous",
    "noncontiguous_strided",
    "subgroups",
    "send_recv",
    "p2p_tags",
    "isend_irecv_ring",
    "batch_isend_irecv",
]
WORLD_SIZES = [1, 2, 3, 4]


def section_entries(job, section):
    """{rank: that rank's report entry for the section}; fails if a rank wrote no report."""
    entries = {}
    for r in job.ranks:
        if not r.report or "sections" not in r.report:
            pytest.fail(f"rank {r.rank} wrote no report\n" + job.describe(), pytrace=False)
        entries[r.rank] = r.report["sections"].get(section, {"status": "missing"})
    return entries


@pytest.mark.parametrize("world_size", WORLD_SIZES, ids=lambda w: f"ws{w}")
def test_job(world_size, collectives_job):
    """Every rank exited 0 and reported exactly the sections this file tests."""
    job = collectives_job(world_size)
    for r in job.ranks:
        reported = list((r.report or {}).get("sections", {}))
        assert reported == SECTIONS, (f"rank {r.rank} reported sections {reported}, "
                                      f"this file tests {SECTIONS}")
    assert job.returncodes() == [harness.EXIT_OK] * world_size, job.describe()


@pytest.mark.parametrize("world_size,section",
                         [(w, s) for w in WORLD_SIZES for s in SECTIONS],
                         ids=lambda v: f"ws{v}" if isinstance(v, int) else v)
def test_section(world_size, section, collectives_job):
    job = collectives_job(world_size)
    entries = section_entries(job, section)
    statuses = {e["status"] for e in entries.values()}
    if statuses == {"skip"}:
        pytest.skip(entries[0]["reason"])
    bad = {r: e for r, e in entries.items() if e["status"] != "pass"}
    if bad:
        lines = []
        for r, e in bad.items():
            lines.append(f"rank {r}: {e['status']}" + (f" ({e['reason']})" if "reason" in e else ""))
            lines += [f"    {f}" for f in e.get("failures", [])]
        pytest.fail(f"{section} at world size {world_size}:\n" + "\n".join(lines) + "\n"
                    + job.describe(), pytrace=False)


def test_checks_detect_corruption(under_test):
    """The checks can fail: with ORBIT_TEST_CORRUPT=1 every result of the backend under test
    has one element changed before it is compared (and the barrier is skipped), so every
    section that runs must report a failure on some rank, and no rank may exit 0."""
    job = harness.run_job("collectives", 2, under_test, timeout=150,
                          env={"ORBIT_TEST_CORRUPT": "1"})
    missed = []
    for section in SECTIONS:
        if section == "init":  # checks the group's metadata, which corruption does not touch
            continue
        entries = section_entries(job, section)
        statuses = {e["status"] for e in entries.values()}
        if "error" in statuses or "not run" in statuses:
            pytest.fail(f"{section} raised in the corrupted run\n" + job.describe(), pytrace=False)
        if statuses != {"skip"} and "fail" not in statuses:
            missed.append(section)
    assert not missed, f"these sections passed although every result was corrupted: {missed}"
    assert all(rc == harness.EXIT_CHECK_FAILED for rc in job.returncodes()), job.describe()
