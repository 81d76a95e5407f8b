"""Smoke tests of the orbit_torch package: importing it registers the backend "orbit", and the
device-mapped form ("cpu:orbit,cuda:gloo") routes CPU tensors to it."""
import subprocess

import pytest

import harness

harness.require_torch()


def test_import_registers_orbit(under_test):
    if under_test != "orbit":
        pytest.skip(f"orbit-only: the backend under test is {under_test!r}")
    # In a child process: a crash while loading the extension must fail this test, not pytest.
    code = ("import orbit_torch, torch.distributed as dist; "
            "assert 'orbit' in dist.Backend.backend_list, dist.Backend.backend_list; "
            "print(dist.Backend.backend_capability.get('orbit'))")
    p = subprocess.run([harness.PYTHON, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}{p.stderr}"
    # register_backend(..., devices=["cpu", "cuda"])
    assert p.stdout.strip().splitlines()[-1] == "['cpu', 'cuda']", p.stdout


def test_device_mapped_form(under_test):
    # "cpu:orbit,cuda:nccl" is the form users write on a GPU machine; without a GPU torch's
    # NCCL group refuses to exist, so the CUDA half here is Gloo
    job = harness.run_job("mapped", 2, under_test, timeout=60)
    assert job.returncodes() == [harness.EXIT_OK] * 2, job.describe()
