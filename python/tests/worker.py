"""One rank of a job of the orbit torch.distributed suite (harness.run_job starts world_size of them).

    python worker.py SCENARIO       with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set

Scenarios:
  collectives  every collective of torch.distributed's public API, run on the backend under test
               and on a Gloo group of the same ranks with the same inputs, in named sections.
  shape, skip, sigkill
               a fault that every (surviving) rank must see as an exception.

The backend under test is $ORBIT_TORCH_BACKEND (default orbit; importing orbit_torch registers it).
Each rank judges its own results: it writes $ORBIT_TEST_DIR/report.RANK.json, prints what failed on
stderr, and exits 0 (all passed), 1 (a check failed), 2 (an unexpected exception stopped it) or,
in the error scenarios, 3 (it caught the exception it had to, and the exception was right).

Inputs are small integers that depend on the rank and the position, so that every SUM, MIN, MAX
and PRODUCT is exact in every dtype; each result is compared with Gloo's and Gloo's with the value
every rank can compute locally from all ranks' inputs (which keeps a mistake in how the test calls
both backends from passing silently in the Gloo-versus-Gloo run).

Test-only knobs (used to show that the checks can fail):
  ORBIT_TEST_CORRUPT=1   each result of the backend under test gets one element changed before it
                         is compared, and the barrier is skipped: every section must then fail.
  ORBIT_TEST_NO_FAULT=1  shape and skip run without their fault: every rank must then exit 0,
                         which the error tests count as a failure.
  ORBIT_TEST_ITERATIONS  sigkill's loop length (60); a run without the kill just has to end.
"""
import json
import math
import os
import re
import sys
import time
import traceback
import warnings
from datetime import timedelta

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])
UNDER_TEST = os.environ.get("ORBIT_TORCH_BACKEND", "orbit")
OUT_DIR = os.environ.get("ORBIT_TEST_DIR", ".")
CORRUPT = os.environ.get("ORBIT_TEST_CORRUPT") == "1"
NO_FAULT = os.environ.get("ORBIT_TEST_NO_FAULT") == "1"
# The error scenarios' collective timeout; a survivor must raise within it (plus MARGIN_S).
ERROR_TIMEOUT_S = 15.0
# Slack for a loaded two-core machine: processes descheduled, Python's own overhead.
MARGIN_S = 10.0
# A data scenario's collective timeout: a hang turns into an exception well before the
# harness's kill, so the report says which call hung.
DATA_TIMEOUT_S = 30

EXIT_OK, EXIT_CHECK_FAILED, EXIT_ABORTED, EXIT_EXPECTED_ERROR = 0, 1, 2, 3

# Deprecated aliases (all_gather_into_tensor, reduce_scatter_tensor, all_reduce_coalesced) are
# still what most code calls, so the suite calls them; their warnings would only drown stderr.
warnings.simplefilter("ignore", FutureWarning)
warnings.simplefilter("ignore", UserWarning)


def say(msg):
    print(f"[rank {RANK}/{WORLD}] {msg}", file=sys.stderr, flush=True)


def write_json(name, obj):
    path = os.path.join(OUT_DIR, name)
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(path + ".tmp", path)  # a reader never sees half a report


def finish(code, report=None):
    """Exits at once: after a fault, tearing down a process group may wait on dead peers."""
    if report is not None:
        write_json(f"report.{RANK}.json", report)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


try:
    import torch
    import torch.distributed as dist
    if UNDER_TEST == "orbit":
        import orbit_torch  # noqa: F401  (registers the "orbit" backend)
except Exception:
    say("import failed:\n" + traceback.format_exc())
    finish(EXIT_ABORTED, {"rank": RANK, "import_error": traceback.format_exc()})

torch.set_num_threads(1)
ReduceOp = dist.ReduceOp

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.int32, torch.int64, torch.uint8]
DTYPES = FLOATS + INTS + [torch.bool]
OPS = {"SUM": ReduceOp.SUM, "PRODUCT": ReduceOp.PRODUCT, "MIN": ReduceOp.MIN, "MAX": ReduceOp.MAX}
BIG = 300_007  # ~300k elements; no world size from 2 to 4 divides it into equal chunks


def dname(dtype):
    return str(dtype).replace("torch.", "")


# ---------------------------------------------------------------------------------------------
# Inputs and the locally computed expectation
# ---------------------------------------------------------------------------------------------

def data(rank, shape, dtype, salt=0, kind="any"):
    """Rank `rank`'s input: small integers that depend on the rank and the position.

    kind "any": values in [-8, 8] (uint8: [0, 16]; bool: odd or not), so that a sum of up to
    four ranks stays within [-32, 32] (or [0, 64]), exact in every dtype, bfloat16 included.
    kind "product": values in {-2, -1, 1, 2} (uint8: {1, 2}; bool: mostly True), so that every
    partial product is a power of two of magnitude at most 16: exact, and no int8 overflow.
    """
    n = math.prod(shape)
    v = ((rank + 1) * 7 + torch.arange(n, dtype=torch.int64) * 3 + salt) % 17 - 8
    if kind == "product":
        if dtype == torch.uint8:
            v = torch.tensor([1, 2])[v % 2]
        elif dtype == torch.bool:
            v = (v % 3 != 0).long()
        else:
            v = torch.tensor([-2, -1, 1, 2])[v % 4]
    elif dtype == torch.uint8:
        v = v + 8
    elif dtype == torch.bool:
        v = v % 2
    return v.to(dtype).reshape(shape)


def reduce_local(opname, tensors, dtype):
    """The exact reduction of `tensors` (every rank's input), in int64, cast to `dtype`.

    Inputs are integers, so int64 is exact; bool goes through 0/1, which makes SUM and MAX an
    OR and PRODUCT and MIN an AND, what torch's backends do for bool.
    """
    s = torch.stack([t.to(torch.int64) for t in tensors])
    r = {"SUM": lambda: s.sum(0), "PRODUCT": lambda: s.prod(0),
         "MIN": lambda: s.amin(0), "MAX": lambda: s.amax(0)}[opname]()
    return r.to(dtype)


def kind_of(opname):
    return "product" if opname == "PRODUCT" else "any"


def eps(dtype):
    return torch.finfo(dtype).eps


# ---------------------------------------------------------------------------------------------
# Sections and checks
# ---------------------------------------------------------------------------------------------

class Skip(Exception):
    """Raised inside a section that cannot run in this configuration; the reason is reported."""


class Section:
    def __init__(self, name):
        self.name = name
        self.checks = 0        # comparisons of a result of the backend under test
        self.failures = []

    def fail(self, msg):
        self.failures.append(msg)
        say(f"{self.name}: FAIL: {msg}")

    def require(self, cond, msg):
        self.checks += 1
        if not cond:
            self.fail(msg)


def corrupted(t):
    """The result of a backend that got one element wrong (the last one: a wrong tail is the
    typical chunking bug, and it shows that a check looks at the whole tensor)."""
    if t.numel() == 0:
        return t
    t = t.clone()
    flat = t.view(-1)
    if t.dtype == torch.bool:
        flat[-1] = ~flat[-1]
    else:
        flat[-1] += 1
    return t


def mismatch(got, want, tol=None):
    """None if got matches want (exactly, or |got - want| <= tol elementwise), else why not."""
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    if tol is None:
        if got.dtype != want.dtype:
            return f"dtype {got.dtype}, expected {want.dtype}"
        if got.dtype == torch.bool:
            # as bytes: a bool tensor holding 2 (true + true summed) compares equal to True
            got, want = got.contiguous().view(torch.uint8), want.contiguous().view(torch.uint8)
        bad = got != want
    else:
        diff = (got.double() - want.double()).abs()
        bad = ~(diff <= tol)  # NaN counts as bad
    if not bool(bad.any()):
        return None
    idx = bad.reshape(-1).nonzero()[0].item()
    g, w = got.reshape(-1)[idx].item(), want.reshape(-1)[idx].item()
    extra = ""
    if tol is not None:
        t = tol.reshape(-1)[idx].item() if torch.is_tensor(tol) and tol.numel() > 1 else float(tol)
        extra = f" (tolerance {t:.3g})"
    return (f"{int(bad.sum())} of {bad.numel()} elements differ; first at flat index {idx}: "
            f"got {g}, expected {w}{extra}")


def compare(sec, label, got, ref, expect=None, tol=None, ref_tol=None):
    """Checks a result of the backend under test against the reference backend's (`ref`) and,
    when given, the reference's against the local expectation `expect` (a test-side sanity
    check: both backends wrong in the same way would otherwise pass the Gloo-vs-Gloo run)."""
    sec.checks += 1
    # Gloo sums bools as bytes (true + true leaves a 2 in a bool tensor); its results are read
    # as the bools they stand for, while orbit's must be real bools (mismatch compares bytes)
    if ref.dtype == torch.bool:
        ref = ref.contiguous().view(torch.uint8) != 0
        if UNDER_TEST == "gloo":
            got = got.contiguous().view(torch.uint8) != 0
    if CORRUPT:
        got = corrupted(got)
    why = mismatch(got, ref, tol)
    if why:
        sec.fail(f"{label}: {UNDER_TEST} differs from gloo: {why}")
    if expect is not None:
        why = mismatch(ref, expect, ref_tol if ref_tol is not None else tol)
        if why:
            sec.fail(f"{label}: the reference (gloo) differs from the expected value: {why}")


def run_sections(scenario, sections):
    report = {"rank": RANK, "world_size": WORLD, "backend": UNDER_TEST, "scenario": scenario,
              "sections": {}}
    failed = False
    for i, (name, fn) in enumerate(sections):
        sec = Section(name)
        t0 = time.monotonic()
        entry = {}
        try:
            fn(sec)
            entry["status"] = "fail" if sec.failures else "pass"
        except Skip as s:
            # Checks made before the skip (e.g. of the reference alone) still count.
            entry.update(status="fail" if sec.failures else "skip", reason=str(s))
        except Exception:
            # The backend under test raised, or the test broke: the other ranks may now be
            # waiting in a collective this rank will never join, so stop here and say so.
            tb = traceback.format_exc()
            say(f"{name}: unexpected exception:\n{tb}")
            sec.failures.append(f"unexpected exception: {tb}")
            entry["status"] = "error"
        entry.update(checks=sec.checks, failures=sec.failures[:20],
                     seconds=round(time.monotonic() - t0, 3))
        report["sections"][name] = entry
        write_json(f"report.{RANK}.json", report)
        failed |= entry["status"] in ("fail", "error")
        if entry["status"] == "error":
            for later, _ in sections[i + 1:]:
                report["sections"][later] = {"status": "not run",
                                             "reason": f"rank {RANK} stopped after {name} raised"}
            finish(EXIT_ABORTED, report)
    finish(EXIT_CHECK_FAILED if failed else EXIT_OK, report)


# ---------------------------------------------------------------------------------------------
# The collectives scenario
# ---------------------------------------------------------------------------------------------

class Groups:
    """The world group of the backend under test and the Gloo reference group of the same ranks."""

    def __init__(self):
        self.ut = dist.group.WORLD
        self.ref = dist.new_group(backend="gloo")


def allreduce_case(sec, g, dtype, opname, shape, salt=0):
    kind = kind_of(opname)
    mine = data(RANK, shape, dtype, salt, kind)
    got = mine.clone()
    dist.all_reduce(got, op=OPS[opname], group=g.ut)
    ref = mine.clone()
    dist.all_reduce(ref, op=OPS[opname], group=g.ref)
    expect = reduce_local(opname, [data(r, shape, dtype, salt, kind) for r in range(WORLD)], dtype)
    compare(sec, f"all_reduce {opname} {dname(dtype)} {tuple(shape)}", got, ref, expect)


def s_init(sec, g):
    sec.require(dist.get_backend() == UNDER_TEST,
                f"default group's backend is {dist.get_backend()!r}, expected {UNDER_TEST!r}")
    sec.require(dist.get_world_size() == WORLD and dist.get_rank() == RANK,
                f"rank/size {dist.get_rank()}/{dist.get_world_size()}, expected {RANK}/{WORLD}")


def s_allreduce(sec, g):
    for dtype in DTYPES:
        for i, opname in enumerate(OPS):
            allreduce_case(sec, g, dtype, opname, (25, 40), salt=i)


def s_allreduce_sizes(sec, g):
    for n in (0, 1, 7, 1000, BIG):
        for dtype in DTYPES:
            allreduce_case(sec, g, dtype, "SUM", (n,), salt=n % 5)
    for dtype in (torch.float32, torch.int64):
        allreduce_case(sec, g, dtype, "MAX", (BIG,), salt=1)


def avg_tolerance(dtype, inputs):
    """Per-element bound on |AVG - exact mean| for a correct backend.

    The sum of these inputs is exact in every dtype (small integers), so a backend that sums
    and then divides is exact to one rounding. One that divides first (x/W for each rank, then
    W-1 additions) makes at most W+1 roundings of size <= u * sum|x_r| / W (u = eps/2, each
    partial sum bounded by the sum of magnitudes), hence (W + 1) * u * sum|x_r| / W; using eps
    instead of u leaves a factor 2 for the second-order terms.
    """
    mag = torch.stack([t.double().abs() for t in inputs]).sum(0) / WORLD
    return (WORLD + 1) * eps(dtype) * mag


def s_allreduce_avg(sec, g):
    """AVG against Gloo's SUM divided by the world size (not against Gloo's own AVG, so that
    the reference is the exact sum and one division, whatever Gloo's AVG does)."""
    for dtype in FLOATS:
        for shape in ((25, 40), (1,), (BIG,)):
            mine = data(RANK, shape, dtype, salt=2)
            inputs = [data(r, shape, dtype, salt=2) for r in range(WORLD)]
            got = mine.clone()
            dist.all_reduce(got, op=ReduceOp.AVG, group=g.ut)
            ref = mine.clone()
            dist.all_reduce(ref, op=ReduceOp.SUM, group=g.ref)
            sec.require(got.dtype == dtype, f"AVG {dname(dtype)}: result dtype {got.dtype}")
            exact = reduce_local("SUM", inputs, torch.float64) / WORLD
            compare(sec, f"all_reduce AVG {dname(dtype)} {shape}", got, ref.double() / WORLD,
                    exact, tol=avg_tolerance(dtype, inputs), ref_tol=0)


def premul_tolerance(dtype, factor, inputs):
    """Per-element bound on |PREMUL_SUM(f) - f * sum x_r| for a correct backend: rounding f to
    the dtype (u), each product f*x_r (u), W-1 additions and a final cast: (W + 2) roundings of
    size <= u * |f| * sum|x_r|; eps = 2u covers the second-order terms."""
    mag = torch.stack([t.double().abs() for t in inputs]).sum(0) * abs(factor)
    return (WORLD + 2) * eps(dtype) * mag


def s_premul_sum(sec, g):
    if UNDER_TEST == "gloo":
        raise Skip("Gloo has no PREMUL_SUM ('Cannot use ReduceOp.PREMUL_SUM with Gloo')")
    # 0.5: every f*x and every sum is exact, so the result must be too.
    # 0.3: not a power of two, so the products round; compared within premul_tolerance.
    for factor in (0.5, 0.3):
        for dtype in FLOATS:
            for shape in ((25, 40), (BIG,)):
                mine = data(RANK, shape, dtype, salt=3)
                inputs = [data(r, shape, dtype, salt=3) for r in range(WORLD)]
                got = mine.clone()
                dist.all_reduce(got, op=dist._make_nccl_premul_sum(factor), group=g.ut)
                # The reference: Gloo's SUM of f*x, the products rounded in the dtype as a
                # backend that premultiplies would round them.
                ref = (mine * factor).to(dtype)
                dist.all_reduce(ref, op=ReduceOp.SUM, group=g.ref)
                exact = reduce_local("SUM", inputs, torch.float64) * factor
                label = f"all_reduce PREMUL_SUM({factor}) {dname(dtype)} {shape}"
                if factor == 0.5:
                    compare(sec, label, got, ref, exact.to(dtype))
                else:
                    tol = premul_tolerance(dtype, factor, inputs)
                    sec.require(got.dtype == dtype, f"{label}: result dtype {got.dtype}")
                    # Both within tol of the exact value, hence within 2*tol of each other.
                    compare(sec, label, got, ref, exact, tol=2 * tol, ref_tol=tol)
                    compare(sec, label + " vs exact", got, exact, tol=tol)


def s_bitwise_rejected(sec, g):
    if UNDER_TEST != "orbit":
        raise Skip("orbit-only check: orbit rejects BAND/BOR/BXOR; "
                   f"{UNDER_TEST} implements them")
    for opname in ("BAND", "BOR", "BXOR"):
        for dtype in (torch.int32, torch.uint8):
            t = data(RANK, (10,), dtype)
            sec.checks += 1
            try:
                dist.all_reduce(t, op=getattr(ReduceOp, opname), group=g.ut)
            # a bad argument is refused before anything is sent: ValueError, as torch's own
            # argument checks raise, naming the op, the rank and what to use instead
            except ValueError as e:
                want = (opname, f"rank {g.ut.rank()} of {g.ut.size()}", "MAX")
                if not all(w in str(e) for w in want):
                    sec.fail(f"all_reduce {opname} {dname(dtype)} raised, but the message does "
                             f"not name all of {want}: {e}")
            except Exception as e:
                sec.fail(f"all_reduce {opname} {dname(dtype)} raised {type(e).__name__}, "
                         f"not a ValueError: {e}")
            else:
                sec.fail(f"all_reduce {opname} {dname(dtype)} did not raise")
    # Rejecting an argument must leave the group usable.
    allreduce_case(sec, g, torch.int32, "SUM", (10,))


def s_allreduce_coalesced(sec, g):
    shapes = [(5,), (25, 40), (1,), (3, 11)]
    for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.uint8):
        for opname in ("SUM", "MAX"):
            mine = [data(RANK, s, dtype, salt=i) for i, s in enumerate(shapes)]
            expect = [reduce_local(opname, [data(r, s, dtype, salt=i) for r in range(WORLD)], dtype)
                      for i, s in enumerate(shapes)]

            def run(how, group):
                ts = [t.clone() for t in mine]
                if how == "all_reduce_coalesced":
                    dist.all_reduce_coalesced(ts, op=OPS[opname], group=group)
                elif how == "_coalescing_manager":
                    with dist._coalescing_manager(group=group):
                        for t in ts:
                            dist.all_reduce(t, op=OPS[opname], group=group)
                else:  # the async form: the manager hands back one handle for the lot
                    with dist._coalescing_manager(group=group, async_ops=True) as cm:
                        for t in ts:
                            dist.all_reduce(t, op=OPS[opname], group=group)
                    cm.wait()
                return ts

            for how in ("all_reduce_coalesced", "_coalescing_manager", "_coalescing_manager async"):
                got, ref = run(how, g.ut), run(how, g.ref)
                for i in range(len(shapes)):
                    compare(sec, f"{how} {opname} {dname(dtype)} tensor {i} {shapes[i]}",
                            got[i], ref[i], expect[i])


def s_broadcast(sec, g):
    for root in range(WORLD):
        for dtype in DTYPES:
            for shape in ((25, 40), (1,), (0,)):
                def run(group):
                    t = data(RANK, shape, dtype, salt=root)
                    dist.broadcast(t, src=root, group=group)
                    return t
                compare(sec, f"broadcast root {root} {dname(dtype)} {shape}",
                        run(g.ut), run(g.ref), data(root, shape, dtype, salt=root))
    t = data(RANK, (BIG,), torch.float32)
    r = t.clone()
    dist.broadcast(t, src=WORLD - 1, group=g.ut)
    dist.broadcast(r, src=WORLD - 1, group=g.ref)
    compare(sec, f"broadcast root {WORLD - 1} float32 ({BIG},)", t, r,
            data(WORLD - 1, (BIG,), torch.float32))


def s_reduce(sec, g):
    shape = (7, 13)
    for root in range(WORLD):
        for dtype in DTYPES:
            for opname in OPS:
                kind = kind_of(opname)
                mine = data(RANK, shape, dtype, salt=root, kind=kind)
                got, ref = mine.clone(), mine.clone()
                dist.reduce(got, dst=root, op=OPS[opname], group=g.ut)
                dist.reduce(ref, dst=root, op=OPS[opname], group=g.ref)
                # Only the destination's tensor is specified after a reduce.
                if RANK == root:
                    expect = reduce_local(opname, [data(r, shape, dtype, salt=root, kind=kind)
                                                   for r in range(WORLD)], dtype)
                    compare(sec, f"reduce {opname} root {root} {dname(dtype)}", got, ref, expect)
            if dtype in FLOATS:
                inputs = [data(r, shape, dtype, salt=root) for r in range(WORLD)]
                got, ref = inputs[RANK].clone(), inputs[RANK].clone()
                dist.reduce(got, dst=root, op=ReduceOp.AVG, group=g.ut)
                dist.reduce(ref, dst=root, op=ReduceOp.SUM, group=g.ref)
                if RANK == root:
                    compare(sec, f"reduce AVG root {root} {dname(dtype)}", got,
                            ref.double() / WORLD, reduce_local("SUM", inputs, torch.float64) / WORLD,
                            tol=avg_tolerance(dtype, inputs), ref_tol=0)


def s_all_gather(sec, g):
    for dtype in DTYPES:
        for shape in ((25, 40), (1,), (0,)):
            def run(group):
                out = [torch.empty(shape, dtype=dtype) for _ in range(WORLD)]
                dist.all_gather(out, data(RANK, shape, dtype, salt=4), group=group)
                return out
            got, ref = run(g.ut), run(g.ref)
            for r in range(WORLD):
                compare(sec, f"all_gather {dname(dtype)} {shape} from rank {r}",
                        got[r], ref[r], data(r, shape, dtype, salt=4))


def s_all_gather_into_tensor(sec, g):
    """The output concatenated along dim 0."""
    for dtype in DTYPES:
        for shape in ((25, 40), (1,), (0,)):
            mine = data(RANK, shape, dtype, salt=5)
            out_shape = (WORLD * shape[0],) + shape[1:]
            def run(group):
                out = torch.empty(out_shape, dtype=dtype)
                dist.all_gather_into_tensor(out, mine, group=group)
                return out
            compare(sec, f"all_gather_into_tensor {dname(dtype)} {shape}", run(g.ut), run(g.ref),
                    torch.cat([data(r, shape, dtype, salt=5) for r in range(WORLD)]))


def s_all_gather_into_tensor_stacked(sec, g):
    """The output stacked, [world, *shape], the other form torch documents; the reference is
    Gloo's concatenated form, which has the same memory layout."""
    if UNDER_TEST == "gloo":
        raise Skip("Gloo's all_gather_into_tensor takes the concatenated output form only "
                   "('invalid tensor size ... expected (25, 40), got (1, 25, 40)')")
    for dtype in DTYPES:
        for shape in ((25, 40), (1,)):
            mine = data(RANK, shape, dtype, salt=5)
            got = torch.empty((WORLD,) + shape, dtype=dtype)
            dist.all_gather_into_tensor(got, mine, group=g.ut)
            ref = torch.empty((WORLD * shape[0],) + shape[1:], dtype=dtype)
            dist.all_gather_into_tensor(ref, mine, group=g.ref)
            compare(sec, f"all_gather_into_tensor stacked {dname(dtype)} {shape}", got,
                    ref.reshape(got.shape),
                    torch.stack([data(r, shape, dtype, salt=5) for r in range(WORLD)]))


def s_all_gather_coalesced(sec, g):
    """Several all_gather_into_tensor under _coalescing_manager: torch hands them to the backend
    as one all_gather_single_coalesced (C++: allgather_into_tensor_coalesced)."""
    shapes = [(5,), (25, 40), (1,)]
    for dtype in (torch.float32, torch.int64, torch.float16):
        for async_ops in (False, True):
            def run(group):
                outs = [torch.empty((WORLD * s[0],) + s[1:], dtype=dtype) for s in shapes]
                with dist._coalescing_manager(group=group, async_ops=async_ops) as cm:
                    for s, o in zip(shapes, outs):
                        dist.all_gather_into_tensor(o, data(RANK, s, dtype, salt=s[0]), group=group)
                if async_ops:
                    cm.wait()
                return outs
            got, ref = run(g.ut), run(g.ref)
            for i, s in enumerate(shapes):
                expect = torch.cat([data(r, s, dtype, salt=s[0]) for r in range(WORLD)])
                compare(sec, f"coalesced all_gather_into_tensor {'async ' if async_ops else ''}"
                        f"{dname(dtype)} tensor {i} {s}", got[i], ref[i], expect)


def s_gather(sec, g):
    for root in range(WORLD):
        for dtype in DTYPES:
            shape = (5, 7)
            def run(group):
                out = [torch.empty(shape, dtype=dtype) for _ in range(WORLD)] if RANK == root else None
                dist.gather(data(RANK, shape, dtype, salt=root), out, dst=root, group=group)
                return out
            got, ref = run(g.ut), run(g.ref)
            if RANK == root:
                for r in range(WORLD):
                    compare(sec, f"gather root {root} {dname(dtype)} from rank {r}",
                            got[r], ref[r], data(r, shape, dtype, salt=root))


def s_scatter(sec, g):
    for root in range(WORLD):
        for dtype in DTYPES:
            shape = (5, 7)
            # The root sends a different tensor to each rank: piece j is salted with j.
            def run(group):
                pieces = ([data(root, shape, dtype, salt=11 * j) for j in range(WORLD)]
                          if RANK == root else None)
                out = torch.empty(shape, dtype=dtype)
                dist.scatter(out, pieces, src=root, group=group)
                return out
            compare(sec, f"scatter root {root} {dname(dtype)}", run(g.ut), run(g.ref),
                    data(root, shape, dtype, salt=11 * RANK))


def s_reduce_scatter(sec, g):
    shape = (5, 7)
    for dtype in DTYPES:
        for opname in OPS:
            kind = kind_of(opname)
            # Rank r's piece for rank j is salted with j, so each destination reduces other data.
            def pieces(r):
                return [data(r, shape, dtype, salt=5 * j, kind=kind) for j in range(WORLD)]
            def run(group):
                out = torch.empty(shape, dtype=dtype)
                dist.reduce_scatter(out, pieces(RANK), op=OPS[opname], group=group)
                return out
            expect = reduce_local(opname, [pieces(r)[RANK] for r in range(WORLD)], dtype)
            compare(sec, f"reduce_scatter {opname} {dname(dtype)}", run(g.ut), run(g.ref), expect)


def s_reduce_scatter_tensor(sec, g, stacked=False):
    """Input concatenated along dim 0 ([world * 5, 7]) or, with stacked, [world, 5, 7] (the
    other form torch documents; the reference then gets the concatenated form, which has the
    same memory layout)."""
    if stacked and UNDER_TEST == "gloo":
        raise Skip("Gloo's reduce_scatter_tensor takes the concatenated input form only")
    shape = (5, 7)
    cat_shape = (WORLD * shape[0],) + shape[1:]
    for dtype in DTYPES:
        for opname in list(OPS) + (["AVG"] if dtype in FLOATS else []):
            kind = kind_of(opname)
            # inputs[r][j]: rank r's contribution to rank j's result.
            inputs = [data(r, (WORLD,) + shape, dtype, salt=6, kind=kind) for r in range(WORLD)]
            mine = [t[RANK] for t in inputs]
            def run(group, op, form):
                out = torch.empty(shape, dtype=dtype)
                dist.reduce_scatter_tensor(out, inputs[RANK].reshape(form), op=op, group=group)
                return out
            ut_form = (WORLD,) + shape if stacked else cat_shape
            label = f"reduce_scatter_tensor {'stacked' if stacked else 'concat'} {opname} {dname(dtype)}"
            if opname == "AVG":
                exact = reduce_local("SUM", mine, torch.float64) / WORLD
                compare(sec, label, run(g.ut, ReduceOp.AVG, ut_form),
                        run(g.ref, ReduceOp.SUM, cat_shape).double() / WORLD, exact,
                        tol=avg_tolerance(dtype, mine), ref_tol=0)
            else:
                compare(sec, label, run(g.ut, OPS[opname], ut_form),
                        run(g.ref, OPS[opname], cat_shape), reduce_local(opname, mine, dtype))


def s_reduce_scatter_coalesced(sec, g):
    """Several reduce_scatter_tensor under _coalescing_manager: one
    reduce_scatter_single_coalesced (C++: reduce_scatter_tensor_coalesced) for the backend."""
    shapes = [(3,), (8, 5), (1,)]
    for dtype in (torch.float32, torch.int32):
        for async_ops in (False, True):
            def run(group):
                outs = [torch.empty(s, dtype=dtype) for s in shapes]
                with dist._coalescing_manager(group=group, async_ops=async_ops) as cm:
                    for s, o in zip(shapes, outs):
                        inp = data(RANK, (WORLD * s[0],) + s[1:], dtype, salt=s[0])
                        dist.reduce_scatter_tensor(o, inp, op=ReduceOp.SUM, group=group)
                if async_ops:
                    cm.wait()
                return outs
            got, ref = run(g.ut), run(g.ref)
            for i, s in enumerate(shapes):
                chunks = [data(r, (WORLD * s[0],) + s[1:], dtype, salt=s[0])
                          .reshape((WORLD,) + s)[RANK] for r in range(WORLD)]
                compare(sec, f"coalesced reduce_scatter_tensor {'async ' if async_ops else ''}"
                        f"{dname(dtype)} tensor {i} {s}", got[i], ref[i],
                        reduce_local("SUM", chunks, dtype))


def a2a_rows(src, dst):
    """Rows rank src sends rank dst in the uneven all-to-alls: 0 to 3, different per pair."""
    return (src * 3 + dst * 2 + 1) % 4


def a2a_piece(src, dst, dtype, rows):
    return data(src, (rows, 3), dtype, salt=13 * dst)


def s_all_to_all(sec, g):
    for dtype in DTYPES:
        # Equal sizes: Gloo's list all_to_all is the reference.
        def run_equal(group):
            out = [torch.empty((4, 3), dtype=dtype) for _ in range(WORLD)]
            dist.all_to_all(out, [a2a_piece(RANK, j, dtype, 4) for j in range(WORLD)], group=group)
            return out
        got, ref = run_equal(g.ut), run_equal(g.ref)
        for j in range(WORLD):
            compare(sec, f"all_to_all equal {dname(dtype)} from rank {j}", got[j], ref[j],
                    a2a_piece(j, RANK, dtype, 4))


def s_all_to_all_uneven(sec, g):
    """The list all_to_all with sizes that differ per pair (some empty). Gloo's list all_to_all
    insists on equal sizes, so the reference is Gloo's all_to_all_single with the same splits."""
    in_splits = [a2a_rows(RANK, j) for j in range(WORLD)]
    out_splits = [a2a_rows(j, RANK) for j in range(WORLD)]
    for dtype in DTYPES:
        ref = torch.empty((sum(out_splits), 3), dtype=dtype)
        dist.all_to_all_single(ref, torch.cat([a2a_piece(RANK, j, dtype, in_splits[j])
                                               for j in range(WORLD)]),
                               out_splits, in_splits, group=g.ref)
        ref = ref.split(out_splits)
        expect = [a2a_piece(j, RANK, dtype, out_splits[j]) for j in range(WORLD)]
        if UNDER_TEST == "gloo":
            # Still check the reference, so that this section's expectations are proven too.
            for j in range(WORLD):
                sec.require(torch.equal(ref[j], expect[j]),
                            f"the reference (gloo) all_to_all_single {dname(dtype)} from rank {j} "
                            f"differs from the expected value")
            continue
        out = [torch.empty((out_splits[j], 3), dtype=dtype) for j in range(WORLD)]
        dist.all_to_all(out, [a2a_piece(RANK, j, dtype, in_splits[j]) for j in range(WORLD)],
                        group=g.ut)
        for j in range(WORLD):
            compare(sec, f"all_to_all uneven {dname(dtype)} from rank {j} ({out_splits[j]} rows)",
                    out[j], ref[j], expect[j])
    if UNDER_TEST == "gloo":
        raise Skip("Gloo's list all_to_all takes equal sizes only ('invalid tensor size'); "
                   "the reference and the expectations were checked")


def s_all_to_all_single(sec, g):
    for dtype in DTYPES:
        def run_equal(group):
            out = torch.empty((WORLD * 4, 3), dtype=dtype)
            dist.all_to_all_single(out, torch.cat([a2a_piece(RANK, j, dtype, 4) for j in range(WORLD)]),
                                   group=group)
            return out
        compare(sec, f"all_to_all_single equal {dname(dtype)}", run_equal(g.ut), run_equal(g.ref),
                torch.cat([a2a_piece(j, RANK, dtype, 4) for j in range(WORLD)]))

        # Uneven: rows rank i sends rank j depend on both, some are 0.
        def rows(i, j):
            return (i + 2 * j) % 3 + (i == j)
        in_splits = [rows(RANK, j) for j in range(WORLD)]
        out_splits = [rows(j, RANK) for j in range(WORLD)]
        inp = torch.cat([a2a_piece(RANK, j, dtype, in_splits[j]) for j in range(WORLD)])
        def run_uneven(group):
            out = torch.empty((sum(out_splits), 3), dtype=dtype)
            dist.all_to_all_single(out, inp, out_splits, in_splits, group=group)
            return out
        compare(sec, f"all_to_all_single uneven {dname(dtype)} splits in {in_splits} out {out_splits}",
                run_uneven(g.ut), run_uneven(g.ref),
                torch.cat([a2a_piece(j, RANK, dtype, out_splits[j]) for j in range(WORLD)]))


def s_barrier(sec, g):
    """A rank that leaves the barrier must find every rank's arrival mark: the marks are files,
    so the check does not ride on the backend under test. Ranks arrive at different times
    (the latest rank differs between rounds)."""
    for rnd in range(2):
        delay = (RANK if rnd == 0 else WORLD - 1 - RANK) * 0.15
        time.sleep(delay)
        open(os.path.join(OUT_DIR, f"barrier.{rnd}.{RANK}"), "w").close()
        if not CORRUPT:  # a backend whose barrier returns at once
            dist.barrier(group=g.ut)
        missing = [r for r in range(WORLD)
                   if not os.path.exists(os.path.join(OUT_DIR, f"barrier.{rnd}.{r}"))]
        sec.require(not missing, f"barrier round {rnd}: left the barrier before rank(s) "
                                 f"{missing} arrived")


def need_peers():
    if WORLD < 2:
        raise Skip("point-to-point needs at least 2 ranks")


def s_send_recv(sec, g):
    """Blocking send/recv between pairs (0,1), (2,3); with 3 ranks, rank 2 sits this one out."""
    need_peers()
    partner = RANK ^ 1
    if partner >= WORLD:
        return
    for dtype in DTYPES:
        for shape in ((25, 40), (1,)):
            def run(group):
                mine = data(RANK, shape, dtype, salt=7)
                got = torch.empty(shape, dtype=dtype)
                if RANK % 2 == 0:
                    dist.send(mine, dst=partner, group=group, tag=7)
                    dist.recv(got, src=partner, group=group, tag=8)
                else:
                    dist.recv(got, src=partner, group=group, tag=7)
                    dist.send(mine, dst=partner, group=group, tag=8)
                return got
            compare(sec, f"send/recv {dname(dtype)} {shape} from rank {partner}",
                    run(g.ut), run(g.ref), data(partner, shape, dtype, salt=7))
    # A large message (chunked by most transports).
    def run_big(group):
        got = torch.empty((BIG,))
        if RANK % 2 == 0:
            dist.send(data(RANK, (BIG,), torch.float32), dst=partner, group=group)
            dist.recv(got, src=partner, group=group)
        else:
            dist.recv(got, src=partner, group=group)
            dist.send(data(RANK, (BIG,), torch.float32), dst=partner, group=group)
        return got
    compare(sec, f"send/recv float32 ({BIG},) from rank {partner}", run_big(g.ut), run_big(g.ref),
            data(partner, (BIG,), torch.float32))


def s_p2p_tags(sec, g):
    """Tags 1 and 2 received in order, then two same-sized messages with tags 1 and 2 received
    in the opposite order. A backend may match them by tag (Gloo, MPI) or refuse the mismatch with an exception on both ranks
    (orbit checks the tag as part of the call's signature); it must not hand tag 1's data to
    the tag-2 receive. The exchange runs on a group of its own, so that a refusal that leaves
    the communicator unusable cannot affect the following sections."""
    need_peers()
    ut_group = dist.new_group(backend=UNDER_TEST)  # collective: every rank creates it
    partner = RANK ^ 1
    if partner >= WORLD:
        return
    shape = (6, 4)
    def run(group, recv_order):
        """The even rank sends tags 1 then 2; the odd one posts its receives in recv_order."""
        if RANK % 2 == 0:
            works = [dist.isend(data(RANK, shape, torch.float32, salt=100 + tag), dst=partner,
                                group=group, tag=tag) for tag in (1, 2)]
            for w in works:
                w.wait()
            return None
        bufs = {tag: torch.empty(shape) for tag in recv_order}
        works = [dist.irecv(bufs[tag], src=partner, group=group, tag=tag) for tag in recv_order]
        for w in works:
            w.wait()
        return bufs
    # Received in the order they were sent, tagged messages arrive with every backend.
    got, ref = run(g.ut, (1, 2)), run(g.ref, (1, 2))
    if got is not None:
        for tag in (1, 2):
            compare(sec, f"in-order recv tag {tag} from rank {partner}", got[tag], ref[tag],
                    data(partner, shape, torch.float32, salt=100 + tag))
    ref = run(g.ref, (2, 1))
    sec.checks += 1
    try:
        got = run(ut_group, (2, 1))
    except RuntimeError as e:
        say(f"p2p_tags: the out-of-order tags were refused ({str(e).splitlines()[0]}), "
            "which is allowed")
        # orbit's receiver must say why: the mismatch, with both tags
        if UNDER_TEST == "orbit" and RANK % 2 == 1:
            for want in ("ORB_ERR_MISMATCH", "tag 1", "tag 2"):
                if want not in str(e):
                    sec.fail(f"orbit refused the out-of-order tags without naming {want!r}: {e}")
        return
    if UNDER_TEST == "orbit" and RANK % 2 == 1:
        sec.fail("orbit received tags 2 and 1 posted against sends of 1 and 2 without an error; "
                 "it pairs messages in order, so it must refuse the mismatch")
    if got is not None:
        for tag in (1, 2):
            compare(sec, f"irecv tag {tag} from rank {partner}", got[tag], ref[tag],
                    data(partner, shape, torch.float32, salt=100 + tag))


def s_isend_irecv_ring(sec, g):
    """Each rank isends to the next and irecvs from the previous, posting the send first, then
    (the order that needs both to be truly non-blocking) the receive first."""
    need_peers()
    nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    for order in ("isend first", "irecv first"):
        for dtype in DTYPES:
            def run(group):
                got = torch.empty((25, 40), dtype=dtype)
                mine = data(RANK, (25, 40), dtype, salt=9)
                if order == "isend first":
                    s = dist.isend(mine, dst=nxt, group=group, tag=3)
                    r = dist.irecv(got, src=prv, group=group, tag=3)
                else:
                    r = dist.irecv(got, src=prv, group=group, tag=3)
                    s = dist.isend(mine, dst=nxt, group=group, tag=3)
                s.wait()
                r.wait()
                return got
            compare(sec, f"isend/irecv ring, {order}, {dname(dtype)} from rank {prv}",
                    run(g.ut), run(g.ref), data(prv, (25, 40), dtype, salt=9))


def s_batch_isend_irecv(sec, g):
    need_peers()
    nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    specs = [((25, 40), torch.float32), ((7,), torch.int64), ((BIG,), torch.float16)]
    def run(group):
        bufs = [torch.empty(s, dtype=d) for s, d in specs]
        ops = []
        for i, ((s, d), b) in enumerate(zip(specs, bufs)):
            ops.append(dist.P2POp(dist.isend, data(RANK, s, d, salt=i), nxt, group))
            ops.append(dist.P2POp(dist.irecv, b, prv, group))
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        return bufs
    got, ref = run(g.ut), run(g.ref)
    for i, (s, d) in enumerate(specs):
        compare(sec, f"batch_isend_irecv ring {dname(d)} {s} from rank {prv}",
                got[i], ref[i], data(prv, s, d, salt=i))


def s_async(sec, g):
    """Several operations in flight at once, waited for in reverse order of issue; one of them
    through its future."""
    shape = (25, 40)
    ar = data(RANK, shape, torch.float32, salt=1)
    bc = data(RANK, (9,), torch.int64, salt=2)
    ag_in = data(RANK, shape, torch.float16, salt=3)
    ag_out = torch.empty((WORLD * shape[0],) + shape[1:], dtype=torch.float16)
    rs_in = data(RANK, (WORLD * 6,), torch.int32, salt=4)
    rs_out = torch.empty((6,), dtype=torch.int32)
    mx = data(RANK, (BIG,), torch.bfloat16, salt=5)
    fut_t = data(RANK, (33,), torch.float64, salt=6)
    ar0, bc0, mx0, fut0 = ar.clone(), bc.clone(), mx.clone(), fut_t.clone()

    works = [
        dist.all_reduce(ar, op=ReduceOp.SUM, group=g.ut, async_op=True),
        dist.broadcast(bc, src=WORLD - 1, group=g.ut, async_op=True),
        dist.all_gather_into_tensor(ag_out, ag_in, group=g.ut, async_op=True),
        dist.reduce_scatter_tensor(rs_out, rs_in, op=ReduceOp.SUM, group=g.ut, async_op=True),
        dist.all_reduce(mx, op=ReduceOp.MAX, group=g.ut, async_op=True),
    ]
    fut_work = dist.all_reduce(fut_t, op=ReduceOp.SUM, group=g.ut, async_op=True)
    value = fut_work.get_future().wait()
    for w in reversed(works):
        w.wait()
    # (Only works waited with wait(): a future may be marked done before its work is, in Gloo.)
    names = ["all_reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor",
             "all_reduce MAX"]
    for name, w in zip(names, works):
        # Gloo's reduce_scatter_tensor work never reports completion (is_completed() stays
        # False after wait() returned with the right result): a Gloo quirk, not asked of others.
        if UNDER_TEST == "gloo" and name == "reduce_scatter_tensor":
            continue
        sec.require(w.is_completed(), f"{name} work: is_completed() is False after wait()")
    # The future's value is the list of the op's output tensors.
    sec.require(isinstance(value, list) and len(value) == 1 and torch.equal(value[0], fut_t),
                f"all_reduce future's value is {value!r}, expected [the reduced tensor]")

    r_ar, r_bc, r_mx, r_fut = ar0.clone(), bc0.clone(), mx0.clone(), fut0.clone()
    dist.all_reduce(r_ar, group=g.ref)
    dist.broadcast(r_bc, src=WORLD - 1, group=g.ref)
    r_ag = torch.empty_like(ag_out)
    dist.all_gather_into_tensor(r_ag, ag_in, group=g.ref)
    r_rs = torch.empty_like(rs_out)
    dist.reduce_scatter_tensor(r_rs, rs_in, group=g.ref)
    dist.all_reduce(r_mx, op=ReduceOp.MAX, group=g.ref)
    dist.all_reduce(r_fut, group=g.ref)

    everyone = lambda shape, dtype, salt: [data(r, shape, dtype, salt) for r in range(WORLD)]  # noqa: E731
    compare(sec, "async all_reduce SUM float32", ar, r_ar,
            reduce_local("SUM", everyone(shape, torch.float32, 1), torch.float32))
    compare(sec, "async broadcast int64", bc, r_bc, data(WORLD - 1, (9,), torch.int64, salt=2))
    compare(sec, "async all_gather_into_tensor float16", ag_out, r_ag,
            torch.cat(everyone(shape, torch.float16, 3)))
    compare(sec, "async reduce_scatter_tensor int32", rs_out, r_rs,
            reduce_local("SUM", [t.view(WORLD, 6)[RANK] for t in everyone((WORLD * 6,), torch.int32, 4)],
                         torch.int32))
    compare(sec, f"async all_reduce MAX bfloat16 ({BIG},)", mx, r_mx,
            reduce_local("MAX", everyone((BIG,), torch.bfloat16, 5), torch.bfloat16))
    compare(sec, "async all_reduce via get_future() float64", fut_t, r_fut,
            reduce_local("SUM", everyone((33,), torch.float64, 6), torch.float64))


def s_noncontiguous(sec, g):
    """Transposed views (not contiguous, but every element of the storage in use): the result
    must land in the view, in the view's element order."""
    for dtype in (torch.float32, torch.int64, torch.bfloat16):
        def run_t(group, op):
            base = data(RANK, (40, 25), dtype, salt=1)
            view = base.t()
            assert not view.is_contiguous()
            op(view, group)
            return base
        def allreduce(v, group):
            dist.all_reduce(v, group=group)
        expect = reduce_local("SUM", [data(r, (40, 25), dtype, salt=1) for r in range(WORLD)], dtype)
        compare(sec, f"all_reduce transposed view {dname(dtype)}", run_t(g.ut, allreduce),
                run_t(g.ref, allreduce), expect)
        for root in range(WORLD):
            def bcast(v, group, root=root):
                dist.broadcast(v, src=root, group=group)
            compare(sec, f"broadcast root {root} transposed view {dname(dtype)}",
                    run_t(g.ut, bcast), run_t(g.ref, bcast), data(root, (40, 25), dtype, salt=1))


def s_noncontiguous_strided(sec, g):
    """Every other column of a 20x30 tensor: only those 300 elements take part, and the gaps
    between them must keep their values. A backend may instead refuse such a view with an
    exception (NCCL refuses every non-contiguous tensor); what it must not do is what Gloo does,
    treat the view as 300 dense elements from its first address, which overwrites the gaps and
    leaves most of the view unreduced. So there is no Gloo reference: the expectation is local."""
    if UNDER_TEST == "gloo":
        raise Skip("Gloo reduces/broadcasts a strided view as if it were dense memory "
                   "(it overwrites the gaps), so it cannot pass, nor be the reference")
    root = WORLD - 1
    for dtype in (torch.float32, torch.int64, torch.bfloat16):
        mine = data(RANK, (20, 30), dtype, salt=2)
        reduced, broadcast = mine.clone(), mine.clone()
        reduced[:, ::2] = reduce_local("SUM", [data(r, (20, 30), dtype, salt=2)[:, ::2]
                                               for r in range(WORLD)], dtype)
        broadcast[:, ::2] = data(root, (20, 30), dtype, salt=2)[:, ::2]
        for name, call, expect in (
                ("all_reduce", lambda v: dist.all_reduce(v, group=g.ut), reduced),
                (f"broadcast root {root}", lambda v: dist.broadcast(v, src=root, group=g.ut),
                 broadcast)):
            base = mine.clone()
            sec.checks += 1
            try:
                call(base[:, ::2])
            except (RuntimeError, ValueError) as e:
                say(f"{name} strided view {dname(dtype)}: refused ({type(e).__name__}: "
                    f"{str(e).splitlines()[0]}), which is allowed")
                continue
            got = corrupted(base) if CORRUPT else base
            why = mismatch(got, expect)
            if why:
                sec.fail(f"{name} strided view {dname(dtype)}: {why}")


def s_subgroups(sec, g):
    """new_group subgroups of the backend under test (even ranks, odd ranks), used while an
    operation on the world group is in flight, against Gloo subgroups of the same ranks."""
    evens, odds = list(range(0, WORLD, 2)), list(range(1, WORLD, 2))
    # new_group is collective over the world: every rank creates every group, in one order.
    ut_even = dist.new_group(ranks=evens, backend=UNDER_TEST)
    ref_even = dist.new_group(ranks=evens, backend="gloo")
    ut_odd = dist.new_group(ranks=odds, backend=UNDER_TEST) if odds else None
    ref_odd = dist.new_group(ranks=odds, backend="gloo") if odds else None
    members = evens if RANK % 2 == 0 else odds
    ut_sub, ref_sub = (ut_even, ref_even) if RANK % 2 == 0 else (ut_odd, ref_odd)

    sec.require(dist.get_world_size(ut_sub) == len(members)
                and dist.get_rank(ut_sub) == members.index(RANK),
                f"subgroup {members}: size {dist.get_world_size(ut_sub)} rank "
                f"{dist.get_rank(ut_sub)}, expected {len(members)} and {members.index(RANK)}")
    if dist.get_backend(ut_sub) != UNDER_TEST:
        sec.fail(f"subgroup backend is {dist.get_backend(ut_sub)!r}, expected {UNDER_TEST!r}")

    shape = (25, 40)
    root = members[-1]  # a global rank; the last member, so not group rank 0 when there are two
    w_in = data(RANK, shape, torch.float32, salt=1)
    s_in = data(RANK, shape, torch.int32, salt=2)
    b_in = data(RANK, (BIG,), torch.float32, salt=3)
    w, s, b = w_in.clone(), s_in.clone(), b_in.clone()
    works = [dist.all_reduce(w, group=g.ut, async_op=True),
             dist.all_reduce(s, op=ReduceOp.MAX, group=ut_sub, async_op=True),
             dist.broadcast(b, src=root, group=ut_sub, async_op=True)]
    # A second world operation issued while the subgroup ones are in flight.
    w2 = data(RANK, (WORLD, 5), torch.int64, salt=4)
    ag = torch.empty((WORLD * WORLD, 5), dtype=torch.int64)
    works.append(dist.all_gather_into_tensor(ag, w2, group=g.ut, async_op=True))
    for work in reversed(works):
        work.wait()

    rw, rs, rb = w_in.clone(), s_in.clone(), b_in.clone()
    dist.all_reduce(rw, group=g.ref)
    dist.all_reduce(rs, op=ReduceOp.MAX, group=ref_sub)
    dist.broadcast(rb, src=root, group=ref_sub)
    rag = torch.empty_like(ag)
    dist.all_gather_into_tensor(rag, w2, group=g.ref)

    compare(sec, "world all_reduce beside subgroups", w, rw,
            reduce_local("SUM", [data(r, shape, torch.float32, salt=1) for r in range(WORLD)],
                         torch.float32))
    compare(sec, f"subgroup {members} all_reduce MAX int32", s, rs,
            reduce_local("MAX", [data(r, shape, torch.int32, salt=2) for r in members], torch.int32))
    compare(sec, f"subgroup {members} broadcast from global rank {root}", b, rb,
            data(root, (BIG,), torch.float32, salt=3))
    compare(sec, "world all_gather_into_tensor beside subgroups", ag, rag,
            torch.cat([data(r, (WORLD, 5), torch.int64, salt=4) for r in range(WORLD)]))

    # Collectives of each kind on the subgroup alone, after the interleaving.
    for dtype in (torch.float32, torch.uint8):
        got = torch.empty((len(members) * 7,), dtype=dtype)
        ref = torch.empty_like(got)
        dist.all_gather_into_tensor(got, data(RANK, (7,), dtype), group=ut_sub)
        dist.all_gather_into_tensor(ref, data(RANK, (7,), dtype), group=ref_sub)
        compare(sec, f"subgroup {members} all_gather_into_tensor {dname(dtype)}", got, ref,
                torch.cat([data(r, (7,), dtype) for r in members]))


SECTIONS = [
    ("init", s_init),
    ("all_reduce", s_allreduce),
    ("all_reduce_sizes", s_allreduce_sizes),
    ("all_reduce_avg", s_allreduce_avg),
    ("all_reduce_premul_sum", s_premul_sum),
    ("all_reduce_bitwise_rejected", s_bitwise_rejected),
    ("all_reduce_coalesced", s_allreduce_coalesced),
    ("broadcast", s_broadcast),
    ("reduce", s_reduce),
    ("all_gather", s_all_gather),
    ("all_gather_into_tensor", s_all_gather_into_tensor),
    ("all_gather_into_tensor_stacked", s_all_gather_into_tensor_stacked),
    ("all_gather_into_tensor_coalesced", s_all_gather_coalesced),
    ("gather", s_gather),
    ("scatter", s_scatter),
    ("reduce_scatter", s_reduce_scatter),
    ("reduce_scatter_tensor", s_reduce_scatter_tensor),
    ("reduce_scatter_tensor_stacked", lambda sec, g: s_reduce_scatter_tensor(sec, g, stacked=True)),
    ("reduce_scatter_tensor_coalesced", s_reduce_scatter_coalesced),
    ("all_to_all", s_all_to_all),
    ("all_to_all_uneven", s_all_to_all_uneven),
    ("all_to_all_single", s_all_to_all_single),
    ("barrier", s_barrier),
    ("async_ops", s_async),
    ("noncontiguous", s_noncontiguous),
    ("noncontiguous_strided", s_noncontiguous_strided),
    ("subgroups", s_subgroups),
    # Point-to-point last: a deadlocked exchange kills the communicator, and the sections
    # after it are not run, so the likeliest hang goes where it hides the least.
    ("send_recv", s_send_recv),
    ("p2p_tags", s_p2p_tags),
    ("isend_irecv_ring", s_isend_irecv_ring),
    ("batch_isend_irecv", s_batch_isend_irecv),
]


def scenario_collectives():
    dist.init_process_group(backend=UNDER_TEST, timeout=timedelta(seconds=DATA_TIMEOUT_S))
    g = Groups()
    run_sections("collectives", [(name, lambda sec, fn=fn: fn(sec, g)) for name, fn in SECTIONS])


# ---------------------------------------------------------------------------------------------
# The error scenarios
# ---------------------------------------------------------------------------------------------

# What orbit_torch raises: "orbit: <op> on rank R of W failed: ORB_ERR_<NAME>: <detail>".
ORBIT_ERROR = re.compile(r"orbit: (?P<op>\S+) on rank (?P<rank>\d+) of (?P<world>\d+) failed: "
                         r"(?P<status>ORB_ERR_[A-Z0-9_]+): (?P<detail>.+)", re.S)


def op_key(op):
    """'all_reduce', 'allreduce' and 'AllReduce' name one operation."""
    return op.replace("_", "").lower()


def judge_orbit_error(e, ops, statuses, detail_re, detail_what):
    """The faults in orbit's exception, or [] if it is as specified."""
    problems = []
    if not isinstance(e, RuntimeError):
        problems.append(f"raised {type(e).__name__}, not a RuntimeError (or subclass)")
    # the message must be the call's own (at its start), not an earlier call's quoted in a
    # later one's "failed earlier" text
    m = ORBIT_ERROR.match(str(e))
    if not m:
        return problems + ["message does not match 'orbit: <op> on rank R of W failed: "
                           "ORB_ERR_<NAME>: <detail>'"]
    if (int(m["rank"]), int(m["world"])) != (RANK, WORLD):
        problems.append(f"message says rank {m['rank']} of {m['world']}, this is rank {RANK} of {WORLD}")
    if op_key(m["op"]) not in {op_key(o) for o in ops}:
        problems.append(f"message names op {m['op']!r}, expected one of {ops}")
    if m["status"] not in statuses:
        problems.append(f"status {m['status']}, expected one of {statuses}")
    if not re.search(detail_re, m["detail"], re.I):
        problems.append(f"detail {m['detail']!r} does not {detail_what}")
    return problems


def expect_failure(scenario, fn, ops, statuses, detail_re, detail_what, since=None, extra=None):
    """Runs fn, which must raise. Exits 3 if it did and the exception is right, 1 if it raised
    but something about it is wrong, 0 if it returned (the fault went unnoticed)."""
    report = {"rank": RANK, "world_size": WORLD, "backend": UNDER_TEST, "scenario": scenario}
    t_call = time.time()
    try:
        fn(report)
    except Exception as e:
        t_exc = time.time()
        t_ref = since() if since else t_call
        report.update(raised=True, type=type(e).__name__, message=str(e), t_exception=t_exc,
                      seconds_to_exception=round(t_exc - t_ref, 3))
        say(f"{scenario}: raised {type(e).__name__} after {t_exc - t_ref:.2f} s: {e}")
        problems = []
        if report.get("returned"):
            problems.append(f"the faulty call ({report['returned']}) returned without an error; "
                            "only a later call raised")
        if UNDER_TEST == "orbit":
            problems += judge_orbit_error(e, ops, statuses, detail_re, detail_what)
        if t_exc - t_ref > ERROR_TIMEOUT_S + MARGIN_S:
            problems.append(f"raised {t_exc - t_ref:.1f} s after the fault, more than the "
                            f"timeout {ERROR_TIMEOUT_S:g} s + {MARGIN_S:g} s")
        report["problems"] = problems
        for p in problems:
            say(f"{scenario}: FAIL: {p}")
        finish(EXIT_CHECK_FAILED if problems else EXIT_EXPECTED_ERROR, report)
    report.update(raised=False)
    say(f"{scenario}: FAIL: no exception: the fault went unnoticed")
    finish(EXIT_OK, report)


def init_for_errors():
    dist.init_process_group(backend=UNDER_TEST, timeout=timedelta(seconds=ERROR_TIMEOUT_S))


def scenario_shape():
    """Rank 0 all-reduces 100 elements, the others 200."""
    init_for_errors()
    n = 100 if RANK == 0 or NO_FAULT else 200

    def fn(report):
        dist.all_reduce(torch.ones(n))
        report["returned"] = "all_reduce"  # the mismatch must surface here, not later
        dist.barrier()  # (not reached when the mismatch is caught)
    expect_failure("shape", fn, ops=["allreduce"], statuses=["ORB_ERR_MISMATCH"],
                   detail_re=r"\brank", detail_what="name a rank")


def scenario_skip():
    """Rank 1 skips one all_reduce; then every rank calls barrier."""
    init_for_errors()

    def fn(report):
        if RANK != 1 or NO_FAULT:
            dist.all_reduce(torch.ones(64))
        dist.barrier()
    expect_failure("skip", fn, ops=["allreduce", "barrier"],
                   statuses=["ORB_ERR_MISMATCH", "ORB_ERR_TIMEOUT"],
                   detail_re=r"\brank", detail_what="name a rank")


def scenario_sigkill():
    """A DDP-like loop (some compute, then an all_reduce of 1M float32 gradients). The harness
    SIGKILLs one rank a few iterations in; the others must raise."""
    init_for_errors()
    grad = torch.empty(1 << 20)
    last_ok = [time.time()]
    iterations = int(os.environ.get("ORBIT_TEST_ITERATIONS", "60"))

    def fn(report):
        for it in range(iterations):
            time.sleep(0.02)  # the backward pass
            grad.fill_(RANK + 1)
            dist.all_reduce(grad)
            if grad[0].item() != WORLD * (WORLD + 1) / 2:
                raise AssertionError(f"iteration {it}: all_reduce gave {grad[0].item()}")
            last_ok[0] = time.time()
            report["iterations"] = it + 1
            with open(os.path.join(OUT_DIR, f"progress.{RANK}.tmp"), "w") as f:
                f.write(str(it + 1))
            os.replace(os.path.join(OUT_DIR, f"progress.{RANK}.tmp"),
                       os.path.join(OUT_DIR, f"progress.{RANK}"))
    # The exception must come within the timeout of the last all_reduce that worked (the fault
    # is after it); the harness also checks it against the moment of the kill.
    expect_failure("sigkill", fn, ops=["allreduce"],
                   statuses=["ORB_ERR_PEER_LOST", "ORB_ERR_TIMEOUT"],
                   detail_re=r"\brank\s*#?\s*\d+", detail_what="name a rank number",
                   since=lambda: last_ok[0])


def scenario_mapped():
    """The device-mapped form: the backend under test for CPU tensors, Gloo for CUDA ones; and
    init_process_group's timeout as orbit's call timeout."""
    dist.init_process_group(backend=f"cpu:{UNDER_TEST},cuda:gloo", timeout=timedelta(seconds=60))
    report = {"rank": RANK, "world_size": WORLD, "backend": UNDER_TEST, "scenario": "mapped"}
    cpu_backend = type(dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))).__name__
    want_backend = "OrbitBackend" if UNDER_TEST == "orbit" else "ProcessGroupGloo"
    problems = []
    if cpu_backend != want_backend:
        problems.append(f"CPU tensors go to {cpu_backend}, not {want_backend}")
    elif UNDER_TEST == "orbit":
        # init_process_group's timeout is orbit's call timeout
        seconds = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu")).comm_timeout_s
        if seconds != 60:
            problems.append(f"orbit's call timeout is {seconds} s, not the 60 s given to init_process_group")
    t = data(RANK, (33,), torch.int64)
    dist.all_reduce(t)
    expect = sum(data(r, (33,), torch.int64) for r in range(WORLD))
    why = mismatch(t, expect)
    if why:
        problems.append(f"all_reduce through the mapped group: {why}")
    for p in problems:
        say(f"mapped: FAIL: {p}")
    report["problems"] = problems
    dist.destroy_process_group()
    finish(EXIT_CHECK_FAILED if problems else EXIT_OK, report)


SCENARIOS = {"collectives": scenario_collectives, "shape": scenario_shape,
             "skip": scenario_skip, "sigkill": scenario_sigkill, "mapped": scenario_mapped}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        sys.exit(f"usage: worker.py {{{','.join(SCENARIOS)}}}")
    try:
        SCENARIOS[sys.argv[1]]()
    except SystemExit:
        raise
    except BaseException:
        say("aborted:\n" + traceback.format_exc())
        finish(EXIT_ABORTED)
