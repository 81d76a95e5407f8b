"""Launches the multi-process jobs of the orbit torch.distributed suite and collects what each rank says.

A job is `world_size` real processes running worker.py with one scenario, rendezvousing over
MASTER_ADDR/MASTER_PORT like torchrun's children do. Each rank decides its own verdict (exit
status, stderr, and a JSON report file in the job's folder): nothing a test asserts travels
through the backend under test, so a backend that corrupts or loses data cannot vouch for itself.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(TESTS_DIR, "worker.py")
# The workers run under the interpreter that runs pytest (run.sh uses the torch venv's).
PYTHON = sys.executable

# Exit statuses a worker uses. An error scenario's rank that caught the exception it was
# waiting for, and found nothing wrong with it, exits EXPECTED_ERROR, never 0: 0 would mean
# the fault went unnoticed.
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_ABORTED = 2
EXIT_EXPECTED_ERROR = 3


def backend_under_test():
    return os.environ.get("ORBIT_TORCH_BACKEND", "orbit")


def require_torch():
    """Skips the calling test module when torch cannot be imported (the torch stage is optional)."""
    try:
        import torch  # noqa: F401
        import torch.distributed as dist
    except Exception as e:  # ImportError, or a broken install failing while loading its libraries
        pytest.skip(f"torch cannot be imported by {PYTHON}: {e}", allow_module_level=True)
    if not dist.is_available():
        pytest.skip("this torch build has no torch.distributed", allow_module_level=True)


def free_port():
    # Another process may take the port between this close and rank 0's bind; on a test
    # machine that is rare enough, and the failure is a loud rendezvous error, not a wrong pass.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Rank:
    rank: int
    returncode: int | None
    stdout: str
    stderr: str
    report: dict | None  # the rank's JSON report (worker.py writes it), None if it wrote none

    def describe(self, tail=4000):
        err = self.stderr[-tail:] if len(self.stderr) > tail else self.stderr
        return (f"--- rank {self.rank}: exit {self.returncode}"
                f"{' (' + signal.Signals(-self.returncode).name + ')' if self.returncode and self.returncode < 0 else ''}"
                f"\n--- stderr:\n{err.rstrip()}\n")


@dataclass
class Job:
    scenario: str
    world_size: int
    backend: str
    ranks: list
    wall_s: float
    fault_time: float | None = None  # time.time() when the harness killed a rank, if it did
    killed_rank: int | None = None
    extra: dict = field(default_factory=dict)

    def describe(self):
        return (f"job {self.scenario} (world size {self.world_size}, backend {self.backend}, "
                f"{self.wall_s:.1f} s)\n" + "".join(r.describe() for r in self.ranks))

    def returncodes(self):
        return [r.returncode for r in self.ranks]


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def _kill_all(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()


def run_job(scenario, world_size, backend_under_test, timeout, env=None, kill=None):
    """Runs `scenario` on `world_size` processes and returns a Job once every one has exited.

    timeout: seconds for the whole job; past it every process is killed and the test fails
    with each rank's stderr (a hang is a failure, never a pass).
    env: extra environment variables for every rank.
    kill: (rank, iteration): SIGKILL that rank as soon as its progress file (written by the
    worker after each iteration of a loop scenario) reaches `iteration`; the time of the kill
    is Job.fault_time.
    """
    workdir = tempfile.mkdtemp(prefix=f"orbit-torch-{scenario}-{world_size}-")
    port = free_port()
    procs, outs = [], []
    base_env = dict(os.environ)
    base_env.update({
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "WORLD_SIZE": str(world_size),
        "LOCAL_WORLD_SIZE": str(world_size),
        "ORBIT_TORCH_BACKEND": backend_under_test,
        "ORBIT_TEST_DIR": workdir,
        # Two cores are shared by all ranks: intra-op threads would only contend.
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONWARNINGS": "ignore::FutureWarning",
    })
    # Gloo (the reference, and the backend under test while orbit_torch is missing) otherwise
    # picks the interface that the host name resolves to, which need not be reachable here.
    if "GLOO_SOCKET_IFNAME" not in base_env and os.path.exists("/sys/class/net/lo"):
        base_env["GLOO_SOCKET_IFNAME"] = "lo"
    if env:
        base_env.update(env)
    t0 = time.monotonic()
    try:
        for r in range(world_size):
            e = dict(base_env, RANK=str(r), LOCAL_RANK=str(r))
            out = open(os.path.join(workdir, f"stdout.{r}"), "w")
            err = open(os.path.join(workdir, f"stderr.{r}"), "w")
            outs += [out, err]
            procs.append(subprocess.Popen([PYTHON, WORKER, scenario], stdout=out, stderr=err,
                                          stdin=subprocess.DEVNULL, env=e, cwd=TESTS_DIR))
        fault_time, killed = None, None
        deadline = t0 + timeout
        while any(p.poll() is None for p in procs):
            if time.monotonic() > deadline:
                _kill_all(procs)
                job = _collect(scenario, world_size, backend_under_test, workdir, procs,
                               time.monotonic() - t0)
                shutil.rmtree(workdir, ignore_errors=True)
                pytest.fail(f"{job.scenario}: still running after {timeout} s, all ranks killed\n"
                            + job.describe(), pytrace=False)
            if kill and killed is None:
                victim, iteration = kill
                progress = _read(os.path.join(workdir, f"progress.{victim}")).strip()
                if progress and int(progress) >= iteration and procs[victim].poll() is None:
                    procs[victim].send_signal(signal.SIGKILL)
                    fault_time, killed = time.time(), victim
            time.sleep(0.01)
    except BaseException:
        _kill_all(procs)
        raise
    finally:
        for f in outs:
            f.close()
    job = _collect(scenario, world_size, backend_under_test, workdir, procs, time.monotonic() - t0)
    job.fault_time, job.killed_rank = fault_time, killed
    shutil.rmtree(workdir, ignore_errors=True)  # everything in it is in `job` now
    return job


def _collect(scenario, world_size, backend, workdir, procs, wall):
    ranks = []
    for r, p in enumerate(procs):
        text = _read(os.path.join(workdir, f"report.{r}.json"))
        try:
            report = json.loads(text) if text else None
        except json.JSONDecodeError:
            report = None  # a rank killed while writing; its stderr tells the rest
        ranks.append(Rank(r, p.returncode, _read(os.path.join(workdir, f"stdout.{r}")),
                          _read(os.path.join(workdir, f"stderr.{r}")), report))
    return Job(scenario, world_size, backend, ranks, wall)


def assert_ranks_raised(job, survivors, also_allowed=()):
    """Fails unless every rank in `survivors` caught the exception its error scenario waits
    for, and found it right (exit 3). also_allowed: other exit statuses to tolerate."""
    problems = []
    for r in survivors:
        rc = job.ranks[r].returncode
        if rc == EXIT_EXPECTED_ERROR or rc in also_allowed:
            continue
        if rc == EXIT_OK:
            problems.append(f"rank {r} raised nothing: the fault went unnoticed")
        elif rc == EXIT_CHECK_FAILED:
            why = (job.ranks[r].report or {}).get("problems", [])
            problems.append(f"rank {r} raised, but: {'; '.join(why) or 'see its stderr'}")
        else:
            problems.append(f"rank {r} exited {rc} instead of raising")
    if problems:
        pytest.fail("\n".join(problems) + "\n" + job.describe(), pytrace=False)
    if not any(job.ranks[r].returncode == EXIT_EXPECTED_ERROR for r in survivors):
        pytest.fail("no rank raised\n" + job.describe(), pytrace=False)
