#!/usr/bin/env python3
"""EEVDF conformance rows of `make linux-compare`: Linux's figure and ours
beside the ideal value and its bound.

    conformance.py LINUX_LOG OURS_LOG < ROWS

ROWS (from linux-compare.sh): NAME|LINUX CMD|OUR CMD|WHAT|IDEAL|BOUND, where
NAME may end in :CONFIG (a feature setting the run is made under; other
suffixes only tell rows apart), WHAT is `share K` (the K-th task's share of
the CPU time, %), `switches` (voluntary + involuntary switches of all the
run's tasks) or a metric of lcbench's summary line (e.g. lat_avg_us).
IDEAL and BOUND are empty when there is no ideal value: the row is then a
Linux-against-ours figure only.

Linux's log has `conf CONFIG|CMD` before each run's output (lcbench spin:
`spin: SPEC runtime X ms  share Y%  nvcsw N nivcsw M`, then `lcbench: ...`).
Ours has the shell's `spin` lines (`nice N runtime_ms X share Y%  (pid P,
switches S`); its runs are matched to rows by order, one per distinct
(CONFIG, OUR CMD), as linux-compare.sh issued them.
"""

import re
import sys


def linux_runs(path):
    runs, cur = {}, None
    try:
        text = open(path, errors="replace").read().replace("\r", "")
    except OSError:
        return runs
    for line in text.splitlines():
        if line.startswith("conf "):
            cur = {"shares": [], "switches": 0, "metrics": {}}
            runs[line[5:]] = cur
        elif cur is None:
            continue
        elif m := re.match(r"spin: +\S+ +runtime +[\d.]+ ms +share +([\d.]+)% +nvcsw (\d+) nivcsw (\d+)", line):
            cur["shares"].append(float(m[1]))
            cur["switches"] += int(m[2]) + int(m[3])
        elif line.startswith("lcbench: "):
            for kv in line[9:].replace("|", " ").split():
                k, _, v = kv.partition("=")
                cur["metrics"][k] = float(v)
    return runs


def ours_runs(path):
    runs, cur = [], None
    try:
        text = open(path, errors="replace").read().replace("\r", "")
    except OSError:
        return runs
    for line in text.splitlines():
        if re.match(r"^sched> spin ", line):
            cur = {"shares": [], "switches": 0, "metrics": {}}
            runs.append(cur)
        elif cur is not None and (m := re.match(r"nice -?\d+ runtime_ms \d+ share ([\d.]+)%  \(pid \d+, switches (\d+)", line)):
            cur["shares"].append(float(m[1]))
            cur["switches"] += int(m[2])
    return runs


def pick(run, what):
    if run is None:
        return None
    if what.startswith("share "):
        k = int(what.split()[1])
        return run["shares"][k] if k < len(run["shares"]) else None
    if what == "switches":
        return run["switches"]
    return run["metrics"].get(what)


def main():
    linux, ours = linux_runs(sys.argv[1]), ours_runs(sys.argv[2])
    order, rows = [], []
    for line in sys.stdin:
        name, cmd, ourcmd, what, ideal, bound = line.rstrip("\n").split("|")
        cfg = name.rsplit(":", 1)[1] if re.search(r":[A-Z]", name) else "default"
        key = (cfg, ourcmd)
        if ourcmd and key not in order:
            order.append(key)
        o = ours[order.index(key)] if ourcmd and order.index(key) < len(ours) else None
        rows.append((name, what, ideal, bound, pick(linux.get(f"{cfg}|{cmd}"), what), pick(o, what)))

    def f(v):
        return "-" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))

    def verdict(v, ideal, bound):
        if v is None or not ideal:
            return ""
        return "ok" if abs(v - float(ideal)) <= float(bound) else "OUT"

    print("== conformance: one CPU (every task on CPU 0), one run each; share = % of the tasks' CPU time")
    print(f"{'row':<36}{'what':<14}{'ideal':>8}{'bound':>8}{'Linux':>10}{'':>5}{'ours':>10}{'':>5}")
    for name, what, ideal, bound, lv, ov in rows:
        b = f"+-{bound}" if bound else ""
        print(f"{name:<36}{what:<14}{ideal or '-':>8}{b:>8}{f(lv):>10}{verdict(lv, ideal, bound):>5}"
              f"{f(ov):>10}{verdict(ov, ideal, bound):>5}")
    print("ok / OUT: within / outside the bound around the ideal; '-': not measured (ours has no such command)")


main()
