#!/usr/bin/env python3
"""The tuner's link calibration (comm/comm_calib.c, ORBIT_CALIBRATE, ORBIT_CALIB_FILE), from
the outside: real ranks under orbitrun, judged by what they log (ORBIT_DEBUG=INFO) and what
the cache file holds. The first three jobs of a shape measure, each keeping the best figures
of the line and its own (the file's values only improve), then later jobs read them back;
planted lines show that the best of both is kept, whichever side it comes from; another FIFO
geometry is another job shape (measured again); a damaged line is reported and replaced; 2
measures again and starts the line afresh; 0 and `none` behave as documented; every rank
agrees on the values; single-copy pieces are off from twice the L2 exactly where the measured
single copy from memory is slower than the slots, on from 64 KiB exactly where the one copy of
pieces in the caches sent both ways was faster than the slots, and ORBIT_CMA_BYTES set by hand
keeps them on from its size.
Usage: check_calibration.py ORBITRUN BENCH"""
import os
import re
import subprocess
import sys
import tempfile

orbitrun, bench = sys.argv[1], sys.argv[2]
failures = 0
LINE = re.compile(r"rank (\d+): tuner links inside this host: ([0-9.]+) us, ([0-9.]+) GB/s, single copy ([0-9.]+) GB/s; "
                  r"pieces of 64 KiB in the caches ([0-9.]+) GB/s through the slots, ([0-9.]+) GB/s single copy "
                  r"\((measured at init|from the cache \S+)(?:, best of (\d+) jobs)?\)")
OFF = re.compile(r"rank (\d+): no single-copy pieces( from memory)?: the kernel's one copy measured ([0-9.]+) GB/s against "
                 r"([0-9.]+) GB/s through the slots \(ORBIT_CMA_BYTES=\d+ sends them anyway\)")
ON = re.compile(r"rank (\d+): calls of (\d+) input bytes or more(?:, below (\d+),)? send single-copy pieces")
HOT = 65536


def run(env_extra, n=2):
    env = dict(os.environ, ORBIT_DEBUG="INFO", ORBIT_TIMEOUT="60", ORBIT_INIT_TIMEOUT="60")
    env.pop("ORBIT_CMA_BYTES", None)
    env.update(env_extra)
    p = subprocess.run([orbitrun, "-n", str(n), bench, "--size", "8", "--iters", "3", "--warmup", "1"],
                       env=env, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    if p.returncode != 0:
        print(out)
        raise SystemExit(f"FAIL: the job failed (rc {p.returncode}) with {env_extra}")
    return out


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += 0 if ok else 1


def views(out, n):
    """Every rank's (alpha, beta, how): one line each, the same values on every rank; and the
    single-copy verdict each rank logs, against its figures."""
    got = {int(m.group(1)): (m.group(2), m.group(3), m.group(4), m.group(5), m.group(6), m.group(7))
           for m in LINE.finditer(out)}
    jobs = set(int(m.group(8) or 1) for m in LINE.finditer(out))
    check(len(jobs) == 1, f"the ranks agree on how many jobs the figures are the best of ({jobs})")
    check(sorted(got) == list(range(n)), f"every one of {n} ranks logs its link price (got ranks {sorted(got)})")
    vals = set(v[:5] for v in got.values())
    check(len(vals) == 1, f"the ranks agree on the values ({vals})")
    a, b, g, hs, hg = (float(x) for x in next(iter(vals))) if vals else (0, 0, 0, 0, 0)
    check(0 < a < 1e6 and 0 < b < 1e4 and 0 <= g < 1e4 and 0 <= hs < 1e4 and 0 <= hg < 1e4,
          f"alpha {a} us, beta {b} GB/s, single copy {g} GB/s, in the caches {hs} and {hg} GB/s are finite")
    hows = set(v[5].split(" /")[0] for v in got.values())
    off = {int(m.group(1)): (m.group(2) is not None, float(m.group(3)), float(m.group(4))) for m in OFF.finditer(out)}
    on = {int(m.group(1)): (int(m.group(2)), int(m.group(3) or 0)) for m in ON.finditer(out)}
    if abs(g - b) < 0.02 or abs(hg - hs) < 0.02:  # the log's two decimals cannot say which is slower
        print(f"skip the verdict: single copy {g} and slots {b} GB/s, or {hg} and {hs} in the caches, are within "
              f"the log's rounding")
        return a, b, hows, (jobs.pop() if len(jobs) == 1 else 0), g
    slower, hot = 0 < g < b, hs > 0 and hg > hs
    if slower:
        check(sorted(off) == list(range(n)) and all(fm == hot and abs(x - g) < 0.006 and abs(y - b) < 0.006
              for fm, x, y in off.values()), f"single copy {g} < slots {b} GB/s from memory: every rank sends none "
              f"from there, and says so ({off})")
    else:
        check(not off, f"single copy {g} >= slots {b} GB/s from memory (or not measured): no rank says it sends none ({off})")
    if hot:
        # from 64 KiB; below twice the L2 (the size it starts from otherwise) where slower from memory
        check(sorted(on) == list(range(n)) and all(t == HOT and ((u > HOT) if slower else u == 0) for t, u in on.values()),
              f"in the caches one copy {hg} > slots {hs} GB/s: every rank sends single-copy pieces from {HOT} bytes"
              f"{', below twice the L2' if slower else ''} ({on})")
    elif slower:
        check(not on, f"neither in the caches nor from memory faster: no rank sends single-copy pieces ({on})")
    else:
        check(sorted(on) == list(range(n)) and all(t > HOT and u == 0 for t, u in on.values()),
              f"from memory single copy {g} >= slots {b}, in the caches {hg} <= {hs} GB/s: every rank sends "
              f"single-copy pieces from twice the L2, not from {HOT} bytes ({on})")
    return a, b, hows, (jobs.pop() if len(jobs) == 1 else 0), g


def lines(path):
    with open(path) as f:
        return [l for l in f.read().splitlines() if l]


FIG = re.compile(r"alpha_us=([0-9.]+) beta_gbps=([0-9.]+) single_gbps=([0-9.]+) hot_slots_gbps=([0-9.]+) "
                 r"hot_single_gbps=([0-9.]+) jobs=(\d+)$")


def line_of(path, slot="262144"):
    """The (alpha, beta, single, jobs, hot slots, hot single) of the 2-rank line with this slot
    size, or None."""
    for l in lines(path):
        m = FIG.search(l)
        if f" ranks=2 " in l and f" slot={slot} " in l and m:
            return (float(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(6)), float(m.group(4)),
                    float(m.group(5)))
    return None


def plant(path, alpha, beta, single, jobs, hot_slots, hot_single):
    """Rewrite the 2-rank 256 KiB line with these figures."""
    ls = [FIG.sub(f"alpha_us={alpha} beta_gbps={beta} single_gbps={single} hot_slots_gbps={hot_slots} "
                  f"hot_single_gbps={hot_single} jobs={jobs}", l)
          if " ranks=2 " in l and " slot=262144 " in l else l for l in lines(path)]
    with open(path, "w") as f:
        f.write("\n".join(ls) + "\n")


# the log prints 3 and 2 decimals, the file 4: equal to within the log's rounding
same = lambda x, y: abs(x[0] - y[0]) <= 0.0011 and abs(x[1] - y[1]) <= 0.011


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "sub", "links.txt")
    # 1. nothing cached: measured, stored (the directory made), the file's values are the logged ones
    a, b, hows, jobs, _ = views(run({"ORBIT_CALIB_FILE": path}), 2)
    check(hows == {"measured at init"} and jobs == 1, f"first job: measured at init, 1 job ({hows}, {jobs})")
    check(os.path.exists(path) and len(lines(path)) == 1, "first job: one line written")
    line = lines(path)[0] if os.path.exists(path) else ""
    fig = line_of(path) if os.path.exists(path) else None
    check(" ranks=2 " in line and fig is not None and fig[3] == 1 and same((a, b), fig),
          f"the line is this job's, with its values and 1 job: {line}")
    # 2. the second and third jobs measure again and keep the best: the line only improves
    for k in (2, 3):
        before = line_of(path)
        a, b, hows, jobs, _ = views(run({"ORBIT_CALIB_FILE": path}), 2)
        fig = line_of(path)
        check(hows == {"measured at init"} and jobs == k, f"job {k}: measured again, best of {k} jobs ({hows}, {jobs})")
        check(fig is not None and fig[3] == k and same((a, b), fig), f"job {k}: the line holds the logged values, {k} jobs ({fig})")
        check(fig is not None and before is not None and fig[0] <= before[0] and fig[1] >= before[1] and fig[2] >= before[2]
              and fig[4] >= before[4] and fig[5] >= before[5],
              f"job {k}: no figure got worse ({before} -> {fig})")
    # 3. the fourth reads them back
    fig = line_of(path)
    a2, b2, hows, jobs, _ = views(run({"ORBIT_CALIB_FILE": path}), 2)
    check(hows == {"from the cache"} and jobs == 3 and fig is not None and same((a2, b2), fig) and line_of(path) == fig,
          f"job 4: from the cache, best of 3 jobs, the line's values, the line untouched ({hows}, {jobs})")
    # 4. planted lines: the job's own figures win over worse ones, the line's over better ones
    plant(path, 99.0, 0.01, 0.01, 1, 0.01, 0.01)
    a, b, hows, jobs, _ = views(run({"ORBIT_CALIB_FILE": path}), 2)
    fig = line_of(path)
    check(hows == {"measured at init"} and jobs == 2 and a < 99 and b > 0.01 and fig is not None and fig[3] == 2
          and same((a, b), fig), f"a worse line of 1 job: measured, its own figures kept, 2 jobs ({a}, {b}, {fig})")
    plant(path, 0.001, 900.0, 500.0, 2, 700.0, 800.0)
    a, b, hows, jobs, g = views(run({"ORBIT_CALIB_FILE": path}), 2)
    check(hows == {"measured at init"} and jobs == 3 and same((a, b), (0.001, 900.0)) and abs(g - 500.0) < 0.006
          and line_of(path) == (0.001, 900.0, 500.0, 3, 700.0, 800.0),
          f"a better line of 2 jobs: measured, the line's figures kept, 3 jobs ({a}, {b}, {g}, {line_of(path)})")
    # 3. another FIFO geometry is another key
    _, _, hows, _, _ = views(run({"ORBIT_CALIB_FILE": path, "ORBIT_SHM_SLOT_BYTES": "65536"}), 2)
    check(hows == {"measured at init"}, f"other slot size: measured again ({hows})")
    check(len(lines(path)) == 2, "other slot size: a second line")
    # 4. a damaged line for the key: warned, measured, replaced
    ls = lines(path)
    ls[0] = re.sub(r"alpha_us=\S+", "alpha_us=garbage", ls[0])
    with open(path, "w") as f:
        f.write("\n".join(ls) + "\n")
    out = run({"ORBIT_CALIB_FILE": path})
    check("unreadable calibration line" in out and "ORBIT_CALIB_FILE" in out, "damaged line: a warning that names the setting")
    _, _, hows, _, _ = views(out, 2)
    check(hows == {"measured at init"}, f"damaged line: measured again ({hows})")
    check(all("garbage" not in l for l in lines(path)) and len(lines(path)) == 2, "damaged line: replaced")
    # 5. ORBIT_CALIBRATE=2 measures although cached, and starts the line afresh (1 job, its own
    #    figures, not the planted ones); 0 keeps the transport's constants
    plant(path, 0.001, 900.0, 500.0, 3, 700.0, 800.0)
    a, b, hows, jobs, _ = views(run({"ORBIT_CALIB_FILE": path, "ORBIT_CALIBRATE": "2"}), 2)
    fig = line_of(path)
    check(hows == {"measured at init"} and jobs == 1 and b < 900 and fig is not None and fig[3] == 1 and same((a, b), fig),
          f"ORBIT_CALIBRATE=2: measured, the line afresh with 1 job ({hows}, {jobs}, {fig})")
    out = run({"ORBIT_CALIB_FILE": path, "ORBIT_CALIBRATE": "0"})
    check(not LINE.search(out) and "the transports' cost" in out, "ORBIT_CALIBRATE=0: the transport's constants")
    # 6. none: measured, nothing written; 3 ranks
    path2 = os.path.join(tmp, "none-dir")
    _, _, hows, _, _ = views(run({"ORBIT_CALIB_FILE": "none", "XDG_CACHE_HOME": path2}, n=3), 3)
    check(hows == {"measured at init"} and not os.path.exists(path2), "none: 3 ranks measured, no file anywhere")
    # 7. a line of the key without the single copy's figure or the jobs (as versions 1 and 2
    #    wrote them): measured again
    ls = [l if " slot=65536 " in l else re.sub(r" single_gbps=\S+", "", l) for l in lines(path)]
    with open(path, "w") as f:
        f.write("\n".join(ls) + "\n")
    out = run({"ORBIT_CALIB_FILE": path})
    _, _, hows, _, _ = views(out, 2)
    check("unreadable calibration line" in out and hows == {"measured at init"}, f"no single copy figure: measured again ({hows})")
    #    ... and one without the figures of pieces in the caches (as version 3 wrote them)
    ls = [l if " slot=65536 " in l else re.sub(r" hot_slots_gbps=\S+ hot_single_gbps=\S+", "", l) for l in lines(path)]
    with open(path, "w") as f:
        f.write("\n".join(ls) + "\n")
    out = run({"ORBIT_CALIB_FILE": path})
    _, _, hows, _, _ = views(out, 2)
    check("unreadable calibration line" in out and hows == {"measured at init"},
          f"no figures of pieces in the caches: measured again ({hows})")
    # 8. the four verdicts from planted figures read back (3 jobs: nothing measured), each
    #    judged by views(): from memory slower or not, in the caches faster or not
    for single, hot_slots, hot_single in ((12.0, 5.0, 6.0), (12.0, 6.0, 5.0), (8.0, 6.0, 5.0), (8.0, 5.0, 6.0)):
        plant(path, 0.3, 10.0, single, 3, hot_slots, hot_single)
        a, b, hows, jobs, g = views(run({"ORBIT_CALIB_FILE": path}), 2)
        check(hows == {"from the cache"} and (b, g) == (10.0, single),
              f"planted single copy {single}, in the caches {hot_slots} / {hot_single} GB/s: read back ({hows}, {b}, {g})")
    # 9. ORBIT_CMA_BYTES given: single-copy pieces whatever the figures
    #    (the last planted line says the one copy is slower from memory and faster in the caches)
    out = run({"ORBIT_CALIB_FILE": path, "ORBIT_CMA_BYTES": "1048576"})
    on = {int(m.group(1)): (int(m.group(2)), m.group(3)) for m in ON.finditer(out)}
    check(not OFF.search(out) and on == {0: (1048576, None), 1: (1048576, None)},
          f"ORBIT_CMA_BYTES=1048576: every rank sends single-copy pieces from that size, none says otherwise ({on})")

print(f"{failures} failures")
sys.exit(1 if failures else 0)
