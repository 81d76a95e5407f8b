#!/usr/bin/env python3
"""Runs a test_trace job under orbitrun and checks what the tracer left, from the files alone.

    check_trace.py MODE NRANKS ORBITRUN TEST_TRACE ORBIT_TRACE_TOOL [--netns NETNS_RUN]

With --netns the ranks run one per network namespace (tests/net/netns_run.sh: separate "hosts"
joined by TCP), so the trace crosses the network and the clocks are aligned over it.

The expectations come from what test_trace.c is known to do (the calls, their sizes, the
delays it injects), never from orbit's own summary: the per-rank files are parsed here, and the
straggler figures orbit-trace prints are compared with the ones computed here from the same
files. Exit 0 on success, 1 with the reasons on failure.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

DELAY_NS = 40_000_000  # test_trace.c's DELAY_MS
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def parse(path):
    """One rank's file: header fields, calls (dicts) and steps (dicts), whether it ended."""
    head, calls, steps, ended = {}, [], [], False
    with open(path) as f:
        lines = f.read().split("\n")
    if lines[0] != "orbit-trace 1":
        fail(f"{path}: first line {lines[0]!r}, expected 'orbit-trace 1'")
    for ln in lines[1:]:
        t = ln.split()
        if not t:
            continue
        if t[0] == "rank":
            head.update(rank=int(t[1]), nranks=int(t[3]), comm=t[5], host=t[7], pid=int(t[9]))
        elif t[0] == "clock":
            head.update(offset_ns=int(t[2]), error_ns=int(t[4]))
        elif t[0] == "dropped":
            head.update(dropped_calls=int(t[1]), dropped_steps=int(t[2]))
        elif t[0] == "call":
            calls.append(dict(id=int(t[1]), seq=int(t[2]), coll=t[3], count=int(t[4]), dtype=t[5], op=t[6],
                              root=int(t[7]), bytes=int(t[8]), algo=t[9], proto=t[10], nch=int(t[11]),
                              transports=t[12], t0=int(t[13]), t1=int(t[14]), status=t[15]))
        elif t[0] == "step":
            steps.append(dict(id=int(t[1]), ch=int(t[2]), index=int(t[3]), kind=t[4], send=int(t[5]),
                              recv=int(t[6]), bytes=int(t[7]), t0=int(t[8]), t1=int(t[9]), wait=int(t[10]),
                              move=int(t[11]), reduce=int(t[12])))
        elif t[0] == "end":
            ended = True
        else:
            fail(f"{path}: unknown record {ln!r}")
    return head, calls, steps, ended


def load(d):
    """{comm: {rank: (head, calls, steps)}} of every trace file in d."""
    out = {}
    for p in sorted(glob.glob(os.path.join(d, "orbit-*-r*.trace"))):
        head, calls, steps, ended = parse(p)
        if not ended:
            fail(f"{p}: no 'end' line")
        out.setdefault(head["comm"], {})[head["rank"]] = (head, calls, steps)
    return out


NETNS = None  # tests/net/netns_run.sh when the ranks run on namespace "hosts"


def run_job(orbitrun, prog, mode, n, d, env_extra, expect_ok=True):
    env = dict(os.environ, ORBIT_INIT_TIMEOUT="30", ORBIT_TIMEOUT="30", **env_extra)
    if NETNS:
        cmd = ["bash", NETNS, "-t", "90", "-H", str(n)]
        for k, v in env_extra.items():
            cmd += ["-e", f"{k}={v}"]
        cmd += ["--", prog, mode, d]
    else:
        cmd = [orbitrun, "-n", str(n), prog, mode, d]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if NETNS and r.returncode == 77:
        print(f"skip: no network namespaces here:\n{r.stdout}{r.stderr}")
        sys.exit(77)
    if expect_ok and r.returncode != 0:
        fail(f"test_trace {mode} on {n} ranks exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def expect_calls(calls, want, where):
    """want: list of (coll, count, dtype, op, root, bytes) in order."""
    got = [(c["coll"], c["count"], c["dtype"], c["op"], c["root"], c["bytes"]) for c in calls]
    if got != want:
        fail(f"{where}: calls\n  {got}\nexpected\n  {want}")
    for c in calls:
        if c["status"] != "OK":
            fail(f"{where}: call {c['id']} has status {c['status']}")
        if c["t1"] < c["t0"]:
            fail(f"{where}: call {c['id']} ends before it starts")
    seqs = [c["seq"] for c in calls]
    if seqs != list(range(seqs[0], seqs[0] + len(seqs))) if seqs else False:
        fail(f"{where}: sequence numbers {seqs} are not consecutive")


def stragglers(ranks):
    """Per coll: {rank: ns it made the others wait}, computed here from the files."""
    by_seq = {}
    for r, (_, calls, _) in ranks.items():
        for c in calls:
            if c["seq"] >= 0:
                by_seq.setdefault(c["seq"], {})[r] = c
    out = {}
    for seq, per in by_seq.items():
        if len(per) < 2:
            continue
        last = max(sorted(per), key=lambda r: per[r]["t0"])
        w = sum(max(0, min(per[last]["t0"], c["t1"]) - c["t0"]) for r, c in per.items() if r != last)
        coll = per[last]["coll"]
        out.setdefault(coll, {}).setdefault(last, 0)
        out[coll][last] += w
    return out


def run_tool(tool, d, extra=()):
    js = os.path.join(d, "summary.json")
    r = subprocess.run([tool, "--json", js, "-o", os.path.join(d, "trace.json"), *extra, d], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        fail(f"orbit-trace exited {r.returncode}: {r.stderr}")
        return None, r
    return json.load(open(js)), r


def check_chrome(path):
    """Valid Chrome trace JSON: X events of one track nested or disjoint, in order; flows paired."""
    ev = json.load(open(path))["traceEvents"]
    tracks = {}
    flows = {}
    for e in ev:
        if e.get("ph") == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append(e)
        elif e.get("ph") in ("s", "f"):
            flows.setdefault(e["id"], []).append(e["ph"])
    if not tracks:
        fail(f"{path}: no complete events")
    for key, es in tracks.items():
        # the tool writes microseconds exact to the nanosecond: compare in integer nanoseconds,
        # as in floats a step that starts where its sibling ended (709.493 + 16.075 and 725.568)
        # can seem to start before it
        ns = lambda us: round(us * 1000)
        ts = [ns(e["ts"]) for e in es]
        if ts != sorted(ts):
            fail(f"{path}: track {key} is not in time order")
        stack = []
        for e in es:
            t0 = ns(e["ts"])
            end = t0 + ns(e["dur"])
            while stack and stack[-1] <= t0:
                stack.pop()
            if stack and end > stack[-1]:
                fail(f"{path}: track {key}: event at {e['ts']} overlaps its parent without nesting")
                break
            stack.append(end)
    for i, phs in flows.items():
        if sorted(phs) != ["f", "s"]:
            fail(f"{path}: flow {i} has {phs}")
    return ev


def main():
    global NETNS
    mode, n, orbitrun, prog, tool = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    if sys.argv[6:7] == ["--netns"]:
        NETNS = sys.argv[7]
    with tempfile.TemporaryDirectory(prefix="orbit-trace-test-") as d:
        if mode == "known":
            run_job(orbitrun, prog, mode, n, d, {"ORBIT_TRACE": d})
            comms = load(d)
            if len(comms) != 1 or len(next(iter(comms.values()))) != n:
                fail(f"expected one communicator of {n} files, got { {k: sorted(v) for k, v in comms.items()} }")
                return
            ranks = next(iter(comms.values()))
            want = ([("allreduce", 1024, "float32", "sum", -1, 4096)] * 5 +
                    [("broadcast", 4096, "uint8", "-", 1, 4096)] * 3 +
                    [("allgather", 256, "int32", "-", -1, 256 * 4 * n)] * 2)
            for r, (head, calls, _) in ranks.items():
                expect_calls(calls, want, f"rank {r}")
                if head["dropped_calls"] != 0:
                    fail(f"rank {r}: {head['dropped_calls']} calls dropped")
                if not 0 <= head["error_ns"] < 50_000_000:
                    fail(f"rank {r}: clock error {head['error_ns']} ns")
                # one rank a host: every peer is reached over TCP; on one host, shared memory
                want_tp = "tcp" if NETNS else "shm"
                if any(c["transports"] != want_tp for c in calls):
                    fail(f"rank {r}: transports {sorted(set(c['transports'] for c in calls))}, expected {want_tp}")
            mine = stragglers(ranks)
            # rank 2 was late by DELAY before allreduce #2 and #4: each of the n-1 others waited
            # about DELAY each time (at least half of it: the previous call ends within
            # microseconds on every rank; at most 3x: a loaded machine can oversleep)
            ar = mine.get("allreduce", {})
            lo, hi = 2 * (n - 1) * DELAY_NS // 2, 2 * (n - 1) * DELAY_NS * 3
            if not lo <= ar.get(2, 0) <= hi:
                fail(f"allreduce: rank 2 made the others wait {ar.get(2, 0)} ns, expected {lo}..{hi}")
            if max(ar, key=ar.get, default=None) != 2:
                fail(f"allreduce: the largest straggler is not rank 2: {ar}")
            bc = mine.get("broadcast", {})
            # the root of a broadcast may go on before rank 2 arrives: at least one rank waited
            if not DELAY_NS // 2 <= bc.get(2, 0) <= (n - 1) * DELAY_NS * 3:
                fail(f"broadcast: rank 2 made the others wait {bc.get(2, 0)} ns")
            summary, r = run_tool(tool, d)
            if summary is not None:
                check_tool_stragglers(summary, mine)
                if "rank 2 made the others wait" not in r.stdout:
                    fail(f"orbit-trace's summary does not name rank 2 as a straggler:\n{r.stdout}")
                check_chrome(os.path.join(d, "trace.json"))
                print(r.stdout)
        elif mode == "startstop":
            run_job(orbitrun, prog, mode, n, d, {})
            comms = load(d)
            ranks = next(iter(comms.values()), {})
            if len(comms) != 1 or len(ranks) != n:
                fail(f"expected one communicator of {n} files, got {len(comms)}")
                return
            for r, (head, calls, steps) in ranks.items():
                expect_calls(calls, [("broadcast", 100000, "uint8", "-", 0, 100000)] * 4, f"rank {r}")
                if calls and calls[0]["seq"] != 4:
                    fail(f"rank {r}: the first traced call has seq {calls[0]['seq']}, expected 4 (3 untraced before)")
                for c in calls:
                    mine = [s for s in steps if s["id"] == c["id"]]
                    got = sum(s["bytes"] for s in mine if s["recv"] >= 0)
                    sent = sum(s["bytes"] for s in mine if s["send"] >= 0)
                    # every non-root receives the whole buffer exactly once; the root sends it
                    if r != 0 and got != 100000:
                        fail(f"rank {r} call {c['id']}: steps received {got} bytes, expected 100000")
                    if r == 0 and (got != 0 or sent < 100000):
                        fail(f"rank 0 (root) call {c['id']}: steps received {got}, sent {sent} bytes")
                    for s in mine:
                        if not c["t0"] <= s["t0"] <= s["t1"] <= c["t1"]:
                            fail(f"rank {r}: step {s} lies outside its call {c['t0']}..{c['t1']}")
                        if abs(s["wait"] + s["move"] + s["reduce"] - (s["t1"] - s["t0"])) > 1000:
                            fail(f"rank {r}: step {s}: wait+move+reduce != its duration")
                        if s["reduce"] != 0:
                            fail(f"rank {r}: a broadcast step reduced: {s}")
            summary, r = run_tool(tool, d)
            if summary is not None:
                ev = check_chrome(os.path.join(d, "trace.json"))
                if not any(e.get("ph") == "s" for e in ev):
                    fail("the merged trace has no flow arrows although steps were traced")
        elif mode == "many":
            run_job(orbitrun, prog, mode, n, d, {"ORBIT_TRACE": d})
            comms = load(d)
            if len(comms) != 4 or any(len(v) != n for v in comms.values()):
                fail(f"expected 4 communicators of {n} files each, got { {k: sorted(v) for k, v in comms.items()} }")
                return
            # every rank's file of a comm says the same; the world (the one with broadcasts)
            # made the dups too, which may show as calls of its own: only its broadcasts count
            shapes = [[(c["coll"], c["count"]) for c in v[0][1]] for v in comms.values()]
            world = [s for s in shapes if ("broadcast", 64) in s]
            dups = sorted(s for s in shapes if ("broadcast", 64) not in s)
            if len(world) != 1 or [c for c in world[0] if c[0] == "broadcast"] != [("broadcast", 64)] * 4:
                fail(f"the world's traced calls: {world}")
            if dups != sorted([[("allreduce", 16 << k)] * 4 for k in range(3)]):
                fail(f"the dups' traced calls: {dups}")
            for v in comms.values():
                for r, (_, calls, _) in v.items():
                    if [(c["coll"], c["count"]) for c in calls] != [(c["coll"], c["count"]) for c in v[0][1]]:
                        fail(f"rank {r}'s calls differ from rank 0's on the same communicator")
            summary, r = run_tool(tool, d)
            if summary is not None:
                check_chrome(os.path.join(d, "trace.json"))
        elif mode == "overflow":
            run_job(orbitrun, prog, mode, n, d, {"ORBIT_TRACE": d, "ORBIT_TRACE_CALLS": "16"})
            comms = load(d)
            for r, (head, calls, _) in next(iter(comms.values()), {}).items():
                if len(calls) != 16 or head["dropped_calls"] != 84:
                    fail(f"rank {r}: {len(calls)} calls held, {head['dropped_calls']} dropped; expected 16 and 84")
                if [c["seq"] for c in calls] != list(range(85, 101)):
                    fail(f"rank {r}: held seqs {[c['seq'] for c in calls]}, expected the last 16 (85..100)")
            if not comms:
                fail("no trace written")
            summary, r = run_tool(tool, d)
            if summary is not None and f"{84 * n} calls" not in r.stdout:  # summed over the ranks
                fail(f"orbit-trace does not report the 84 dropped calls:\n{r.stdout}")
        elif mode in ("mismatch", "kill"):
            r = run_job(orbitrun, prog, mode, n, d, {"ORBIT_TRACE": d}, expect_ok=(mode == "mismatch"))
            survivors = range(n) if mode == "mismatch" else range(n - 1)
            want_status = "ORB_ERR_MISMATCH" if mode == "mismatch" else "ORB_ERR_PEER_LOST"
            for rank in survivors:
                paths = glob.glob(os.path.join(d, f"orbit-*-r{rank}.flight"))
                if len(paths) != 1:
                    fail(f"rank {rank}: {len(paths)} flight recorder files, expected 1")
                    continue
                text = open(paths[0]).read()
                lines = text.strip().split("\n")
                body = [ln.strip() for ln in lines[1:]]
                if len(body) != 4 or not all(" allreduce seq %d count 32 float32 sum: done" % (i + 1) in body[i]
                                             for i in range(3)):
                    fail(f"rank {rank}: flight recorder:\n{text}")
                elif "seq 4 count" not in body[3] or want_status not in body[3]:
                    fail(f"rank {rank}: the last flight record is not the failed allreduce #4 ({want_status}): {body[3]}")
                if f"rank {rank} of {n}: flight recorder" not in r.stderr:
                    fail(f"rank {rank}: the flight recorder was not printed with the error")
                # the trace was written on the error too, with the failed call in it
                comms = load(d)
                calls = next(iter(comms.values()), {}).get(rank, (None, []))[1]
                if not calls or calls[-1]["status"] != want_status:
                    fail(f"rank {rank}: the trace written on the error does not end with the failed call")
            if mode == "kill" and glob.glob(os.path.join(d, f"orbit-*-r{n - 1}.*")):
                fail("the killed rank left files")
            if mode == "kill":
                summary, r2 = run_tool(tool, d)
                if summary is not None and f"{n - 1}" not in r2.stderr + r2.stdout:
                    fail(f"orbit-trace does not name the missing rank {n - 1}:\n{r2.stderr}")
        else:
            fail(f"unknown mode {mode}")
    if failures:
        print(f"check_trace {mode}: {len(failures)} failure(s)")
        sys.exit(1)
    print(f"check_trace {mode} on {n} ranks: ok")


def check_tool_stragglers(summary, mine):
    """orbit-trace's straggler figures must equal the ones computed here (to the ns)."""
    got = summary.get("stragglers")
    if got is None:
        fail(f"orbit-trace's JSON has no 'stragglers': {list(summary)}")
        return
    for coll, per in mine.items():
        for rank, w in per.items():
            g = tool_wait(got, coll, rank)
            if g is None or abs(g - w) > 1:
                fail(f"orbit-trace says rank {rank} made the others wait {g} ns in {coll}, the files say {w}")


def tool_wait(got, coll, rank):
    """The wait orbit-trace charged to rank in coll (its JSON layout: see tools/trace_summary.c)."""
    per = got.get(coll)
    if per is None:
        return None
    if isinstance(per, dict):
        e = per.get(str(rank))
        return None if e is None else e.get("wait_ns")
    for e in per:
        if e.get("rank") == rank:
            return e.get("wait_ns")
    return None


if __name__ == "__main__":
    main()
