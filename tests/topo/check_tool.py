#!/usr/bin/env python3
"""orbit-topo on every XML in tests/data: text and --json agree, the JSON is well formed
and self-consistent, ORBIT_TOPO_FILE works like --xml, ORBIT_DEBUG=INFO logs the same
explanation, and bad arguments are refused."""
import json
import os
import subprocess
import sys

tool, data = sys.argv[1], sys.argv[2]
if not os.path.exists(tool):
    print(f"skip: {tool} not built")
    sys.exit(77)
failures = 0


def check(cond, what):
    global failures
    if not cond:
        print("check failed:", what, file=sys.stderr)
        failures += 1


def run(args, env=None, rc=0):
    e = dict(os.environ)
    e.pop("ORBIT_TOPO_FILE", None)
    e.update(env or {})
    p = subprocess.run([tool] + args, capture_output=True, text=True, env=e, timeout=30)
    check(p.returncode == rc, f"{args}: exit {p.returncode}, want {rc}: {p.stderr}")
    return p


have_hwloc = "built without hwloc" not in run(["--ranks", "1"]).stdout
xmls = sorted(f for f in os.listdir(data) if f.endswith(".xml"))
check(len(xmls) >= 5, "the XMLs are in tests/data")
for f in xmls if have_hwloc else []:
    path = os.path.join(data, f)
    ranks = ["--ranks", "cpu"] if "nopci" in f else []
    text = run(["--xml", path] + ranks).stdout
    js = json.loads(run(["--xml", path, "--json"] + ranks).stdout)
    n = len(js["devices"])
    check(n > 0, f"{f}: devices")
    check(len(js["links"]) == n and all(len(r) == n for r in js["links"]), f"{f}: links is n x n")
    check(all(js["links"][i][i] == "LOC" for i in range(n)), f"{f}: LOC on the diagonal")
    ids = sorted(d["rank"] for d in js["devices"])
    check(sorted(js["rings"][0]) == ids and sorted(js["trees"][0]) == ids, f"{f}: ring and tree hold every rank")
    for ch in js["channels"]:
        check(sorted(ch["order"]) == ids, f"{f}: channel order holds every rank")
    for name, nic in js["nics"].items():
        for r in nic["serves"]:
            dev = next(d for d in js["devices"] if d["rank"] == r)
            check(dev["nic"] == name, f"{f}: NIC {name} serves rank {r}")
    check(js["explain"] in text, f"{f}: --json explains the same as the text")
    check("ring 0: " + " ".join(map(str, js["rings"][0])) in text, f"{f}: text shows the ring")
    # ORBIT_TOPO_FILE is --xml; ORBIT_DEBUG=INFO logs the explanation line by line.
    same = run(ranks, env={"ORBIT_TOPO_FILE": path, "ORBIT_DEBUG": "INFO"})
    check(same.stdout == text, f"{f}: ORBIT_TOPO_FILE gives the same output as --xml")
    first = js["explain"].splitlines()[1]
    check(("topology: " + first) in same.stderr, f"{f}: ORBIT_DEBUG=INFO logs '{first}'")

if have_hwloc:
    vm = os.path.join(data, "vm-2socket-nopci.xml")
    js = json.loads(run(["--xml", vm, "--ranks", "3", "--json"]).stdout)
    check([d["kind"] for d in js["devices"]] == ["cpu"] * 3, "--ranks 3 on a CPU machine: 3 CPU ranks")
    check(js["ring_score"]["slowest_class"] == "SYS", "3 CPU ranks on 2 sockets cross sockets")
    run(["--xml", vm, "--ranks", "gpu"], rc=1)
    dgx = os.path.join(data, "dgx2-16xV100-nvswitch.xml")
    js = json.loads(run(["--xml", dgx, "--ranks", "4", "--json"]).stdout)
    check([d["busid"] for d in js["devices"]] == ["0000:34:00.0", "0000:36:00.0", "0000:39:00.0", "0000:3b:00.0"],
          "--ranks 4 on a GPU machine: the first 4 GPUs")
    run(["--xml", "/nonexistent.xml"], rc=1)
run(["--ranks", "0"], rc=1)
run(["--bogus"], rc=2)
print(f"checked {len(xmls) if have_hwloc else 0} XML files, {failures} failure(s)")
sys.exit(1 if failures else 0)
