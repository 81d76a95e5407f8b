#!/usr/bin/python3
"""Draws one training step of orbit-train as an SVG timeline, from the Chrome trace that
`orbit-train --profile FILE` writes: one band per rank, each with a compute lane (data,
forward, backward, wait, optimizer) and a communication lane (bucket all-reduces labelled
with their size, buffer broadcasts), on a millisecond axis from the step's start. `wait`
(the compute thread blocked on buckets: exposed communication) is hatched red.

    orbitrun -n 2 -- build/trainer/orbit-train --model resnet20 --steps 6 --profile p.json
    python3 bench/step_svg.py p.json -o step.svg [--step N] [--title "..."]

Standard library only (Debian 12's /usr/bin/python3).
"""
import argparse
import json
import math
import os
import re
import sys
from xml.sax.saxutils import escape, quoteattr

COLOURS = {"data": "#9e9e9e", "forward": "#4c78a8", "backward": "#59a14f", "wait": "#d62728",
           "optimizer": "#8c6bb1", "allreduce": "#f28e2b", "broadcast": "#edc948", "reduce": "#e377c2"}
WIDTH, LEFT, RIGHT, LANE, GAP = 1000, 120, 20, 24, 14
FONT = 'font-family="sans-serif"'


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 1, like the other errors
        sys.exit(f"step_svg.py: {message} (see --help)")


def fail(msg):
    sys.exit(f"step_svg.py: {msg}")


def kind_of(name):
    return name.split()[0] if name else "?"


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}; give the file orbit-train --profile wrote")
    except (ValueError, UnicodeDecodeError) as e:
        fail(f"{path} is not JSON ({e}); give the file orbit-train --profile wrote")
    evs = doc.get("traceEvents") if isinstance(doc, dict) else doc  # Chrome also allows a bare array
    if not isinstance(evs, list):
        fail(f"{path} has no traceEvents list; is it an orbit-train --profile trace?")
    names, xs = {}, []
    for e in evs:
        if not isinstance(e, dict):
            continue
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e.get("pid")] = str((e.get("args") or {}).get("name", f"pid {e.get('pid')}"))
        elif e.get("ph") == "X" and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float)):
            xs.append(e)
    if not xs:
        fail(f"{path} has no complete (ph \"X\") events; run orbit-train with --profile and a few steps")
    return names, xs


def step_of(e):
    s = (e.get("args") or {}).get("step")
    return s if isinstance(s, int) else None


def pick(xs, want, path):
    # A step's window on a rank: its compute events (data .. optimizer), which carry args.step.
    win = {}
    for e in xs:
        if e.get("tid") == 0 and step_of(e) is not None:
            lo, hi = win.get((step_of(e), e["pid"]), (math.inf, -math.inf))
            win[(step_of(e), e["pid"])] = (min(lo, e["ts"]), max(hi, e["ts"] + e["dur"]))
    steps = sorted({s for s, _ in win})
    if not steps:
        fail(f"{path} has no compute events with args.step; is it an orbit-train --profile trace?")
    span = {s: max(h for (t, _), (_, h) in win.items() if t == s) - min(l for (t, _), (l, _) in win.items() if t == s)
            for s in steps}
    if want is None:
        # Step 0 is the warm-up (first-touch allocations, cold caches, connection setup) and
        # is often much slower; the median of the rest is the typical step.
        rest = steps[1:] or steps
        want = sorted(rest, key=lambda s: (span[s], s))[(len(rest) - 1) // 2]
    elif want not in span:
        fail(f"--step {want}: {path} has steps {steps[0]}-{steps[-1]}; pick one of them")
    # Bucket all-reduces carry their step. The other communication is taken by time, inside
    # this step's window on its own rank: the loss all-reduce and the evaluation reduce belong to
    # no step (they say step 0, as traces from before the buffer broadcasts carried theirs do),
    # and the first broadcast of the model predates the trace origin (a huge ts).
    out = []
    for e in xs:
        w = win.get((want, e["pid"]))
        if e.get("tid") == 0 or "bucket" in e.get("name", ""):
            if step_of(e) == want:
                out.append(e)
        elif w and e["ts"] < w[1] and e["ts"] + e["dur"] > w[0]:
            out.append(e)
    wins = {p: w for (s, p), w in win.items() if s == want}
    return want, out, wins


def mib(b):
    return f"{b / 1048576:.1f} MiB" if b >= 104858 else f"{b / 1024:.1f} KiB" if b >= 1024 else f"{b} B"


def nice_step(span_ms, n=10):
    raw = span_ms / n
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def text(x, y, s, size=11, anchor="start", fill="#222", weight="normal"):
    return (f'<text x="{x:.1f}" y="{y:.1f}" {FONT} font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{fill}">{escape(s)}</text>')


def draw(names, ev, wins, step, title):
    pids = sorted(wins)
    # The step's start: its earliest event over all ranks. Each rank timestamps from its own
    # origin (taken after the rendezvous, no barrier), so ranks can be offset by a few ms.
    t0 = min(e["ts"] for e in ev)
    end = max(e["ts"] + e["dur"] for e in ev)
    span = max((end - t0) / 1e3, 1e-3)
    plot = WIDTH - LEFT - RIGHT
    X = lambda ts: LEFT + (ts - t0) / 1e3 / span * plot  # noqa: E731
    top, band = 64, 2 * LANE + GAP + 16
    height = top + band * len(pids) + 60
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH}" height="{height}" '
         f'viewBox="0 0 {WIDTH} {height}">',
         '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
         'patternTransform="rotate(45)"><rect width="6" height="6" fill="#d62728"/>'
         '<rect width="2.5" height="6" fill="#ffffff" fill-opacity="0.55"/></pattern></defs>',
         f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>', text(LEFT, 20, title, 15, weight="bold")]
    lx = LEFT  # legend: the kinds present in this step, in pipeline order
    for k in [k for k in COLOURS if any(kind_of(e["name"]) == k for e in ev)]:
        fill = "url(#hatch)" if k == "wait" else COLOURS[k]
        o.append(f'<rect x="{lx}" y="32" width="12" height="12" fill="{fill}" stroke="#333" stroke-width="0.5"/>')
        o.append(text(lx + 16, 42, k + (" (exposed comm)" if k == "wait" else "")))
        lx += 28 + 7 * len(k) + (100 if k == "wait" else 0)
    ybot = top + band * len(pids) - GAP
    tick = nice_step(span)
    for i in range(int(span / tick) + 1):
        x = LEFT + i * tick / span * plot
        o.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{ybot}" stroke="#e4e4e4"/>')
        o.append(f'<line x1="{x:.1f}" y1="{ybot}" x2="{x:.1f}" y2="{ybot + 5}" stroke="#333"/>')
        o.append(text(x, ybot + 17, f"{i * tick:g}", 10, "middle"))
    o.append(f'<line x1="{LEFT}" y1="{ybot}" x2="{LEFT + plot}" y2="{ybot}" stroke="#333"/>')
    o.append(text(LEFT + plot, ybot + 31, "ms from the step's start", 10, "end"))
    for r, pid in enumerate(pids):
        y = top + 16 + r * band
        o.append(text(8, y - 4, names.get(pid, f"rank {pid}"), 12, weight="bold"))
        for lane, label in ((0, "compute"), (1, "communication")):
            ly = y + lane * LANE
            o.append(f'<rect x="{LEFT}" y="{ly}" width="{plot}" height="{LANE - 2}" fill="#f6f6f6"/>')
            o.append(text(LEFT - 6, ly + LANE / 2 + 3, label, 10, "end", "#555"))
        for e in sorted((e for e in ev if e["pid"] == pid), key=lambda e: e["ts"]):
            k, lane = kind_of(e["name"]), 1 if e.get("tid") == 1 else 0
            x, w = X(e["ts"]), max(e["dur"] / 1e3 / span * plot, 1.0)
            ly, by = y + lane * LANE, (e.get("args") or {}).get("bytes", 0)
            wait = k == "wait"
            fill = "url(#hatch)" if wait else COLOURS.get(k, "#bbbbbb")
            stroke = 'stroke="#7a0000" stroke-width="1.5"' if wait else 'stroke="#ffffff" stroke-width="0.5"'
            tip = f'{e["name"]}: {e["dur"] / 1e3:.3f} ms' + (f", {by} B" if by else "")
            o.append(f'<rect class={quoteattr("ev " + k)} x="{x:.2f}" y="{ly}" width="{max(w, 2.5 if wait else w):.2f}" '
                     f'height="{LANE - 2}" fill="{fill}" {stroke}><title>{escape(tip)}</title></rect>')
            m = re.search(r"bucket (\d+)", e["name"])
            labels = ([f"allreduce {mib(by)}", mib(by)] if k == "allreduce" else
                      [f"wait {e['dur'] / 1e3:.1f} ms", "wait"] if wait else [k] if lane == 0 else [])
            if m and k == "allreduce":
                labels.insert(0, f"allreduce b{m.group(1)} {mib(by)}")
            fit = next((s for s in labels if 6.2 * len(s) + 6 <= w), None)  # ~6.2 px a glyph at 11 px
            if fit:
                o.append(text(x + w / 2, ly + LANE / 2 + 3, fit, 11, "middle", "#000" if k in ("broadcast", "allreduce", "wait") else "#fff",
                                "bold" if wait else "normal"))
    waits = {p: sum(e["dur"] for e in ev if e["pid"] == p and kind_of(e["name"]) == "wait") / 1e3 for p in pids}
    per = ", ".join(f"{names.get(p, p)} {(wins[p][1] - wins[p][0]) / 1e3:.1f} ms (wait {waits[p]:.1f})" for p in pids)
    o.append(text(LEFT, height - 12, f"step {step}, data start to optimizer end: {per}", 11, fill="#444"))
    o.append("</svg>")
    return "\n".join(o) + "\n"


def main():
    ap = Parser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", help="Chrome trace from orbit-train --profile")
    ap.add_argument("-o", "--output", required=True, help="SVG to write")
    ap.add_argument("--step", type=int, help="step to draw (default: the median-duration step after step 0)")
    ap.add_argument("--title", help="title line (default: the file name and rank count)")
    a = ap.parse_args()
    names, xs = load(a.profile)
    step, ev, wins = pick(xs, a.step, a.profile)
    n = len(wins)
    # the trace names no model, so the default title is the file's name and the rank count
    title = a.title or f"{os.path.basename(a.profile)}: {n} rank{'s' if n != 1 else ''}, step {step}"
    svg = draw(names, ev, wins, step, title)
    try:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(svg)
    except OSError as e:
        fail(f"-o {a.output}: cannot write ({e.strerror}); give a writable path")


if __name__ == "__main__":
    main()
