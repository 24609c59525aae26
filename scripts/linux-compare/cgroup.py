#!/usr/bin/env python3
"""Task-group rows of `make linux-compare WHAT=cgroup`: group A's share of
the two groups' CPU time in Linux (cgroup v2 cpu.weight) and in ours
(`cgroup weight`), beside the ideal share and its bound.

    cgroup.py DIR < ROWS

ROWS (from linux-compare.sh's cg_rows): NAME|SMP|CPU|WEIGHT_A|WEIGHT_B|
TASKS_A|TASKS_B|IDEAL_A|BOUND. DIR holds the logs:
- linux-smpN-seedB.log: guest.sh's lc_cgroup prints, per row run at N CPUs,
  `cgtask: i=K cgroup=DIR pid=P cpu_ms=X utime_ticks=U stime_ticks=S` per
  spinner, then `cgroup: case=NAME ... usage_A_usec=U usage_B_usec=U
  utime_A_ticks=T utime_B_ticks=T ... cpu_A_ms=X cpu_B_ms=X` (key=value);
- ours-smpN-NAME-seedB.log: our shell's transcript of the row's script:
  `[1] LEADER (threads FIRST-LAST)`, `sched> cgroup attach G TID` per
  spinner and spin's report, one line per thread: `nice 0 runtime_ms X
  share Y%  (pid TID, switches S)`.

Linux's share is taken two ways: from each group's cpu.stat usage_usec over
the run (the main figure) and from the spinners' /proc/PID/stat utime +
stime (a check, coarse: each spinner's figure is truncated to a clock tick,
10 ms at USER_HZ=100, so a group of 10 spinners loses up to 100 ms). Ours' from each thread's runtime
(sum_exec_runtime). Also per row: A's spinners' CPU time as % of one CPU
each (100: each had a whole CPU) and B's spinners' spread (each one's part
of B's time, min..max; ideal 100 / TASKS_B). A log of ours whose spinners
did not get the thread ids the script attached is refused (its row shows
`ids?`), as is one where the shell printed an error. Last, per row, kernel
and boot: A's spinners' % of a CPU, B's spinners' CPU time in ms (min-max)
and all spinners' CPU time as % of the row's CPUs over the run.
"""

import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance import read  # noqa: E402  (a log's lines, CRs out)

KV = re.compile(r"(\w+)=(\S+)")
OURS_SPIN = re.compile(r"^nice 0 runtime_ms (\d+) share [\d.]+%  \(pid (\d+), switches \d+")


def linux_boot(path):
    """{case: figures} of one Linux boot."""
    out, tasks = {}, []
    for line in read(path):
        if line.startswith("cgtask: "):
            tasks.append(dict(KV.findall(line)))
        elif line.startswith("cgroup: "):
            kv = dict(KV.findall(line))
            case = kv.get("case")
            if "error" in kv or kv.get("status") != "0":
                out[case] = {"error": kv.get("error", "status " + kv.get("status", "?"))}
            else:
                ua, ub = float(kv["usage_A_usec"]), float(kv["usage_B_usec"])
                # utime + stime: a tick that lands in the kernel is stime
                ta = float(kv["utime_A_ticks"]) + float(kv["stime_A_ticks"])
                tb = float(kv["utime_B_ticks"]) + float(kv["stime_B_ticks"])
                a = [float(t["cpu_ms"]) for t in tasks if t["cgroup"].endswith("/A")]
                b = [float(t["cpu_ms"]) for t in tasks if t["cgroup"].endswith("/B")]
                out[case] = {
                    "share": 100 * ua / (ua + ub) if ua + ub else None,
                    "share_utime": 100 * ta / (ta + tb) if ta + tb else None,
                    "a_cpu": [100 * v / float(kv["ms"]) for v in a],
                    "b_parts": [100 * v / sum(b) for v in b] if b and sum(b) else [],
                    "b_ms": b,
                    "all_ms": sum(a) + sum(b),
                    "ms": float(kv["ms"]),
                }
            tasks = []
    return out


def ours_boot(path, tasks_a, tasks_b):
    """Figures of one boot of ours (one row), or {'error': ...}; None without a log."""
    lines = read(path)
    if not lines:
        return None
    group, runtime, ids, ms = {}, {}, None, None
    for line in lines:
        if m := re.match(r"^sched> spin -d (\d+) ", line):
            ms = float(m[1])
        elif m := re.match(r"^\[1\] +\d+ \(threads (\d+)-(\d+)\)", line):
            ids = (int(m[1]), int(m[2]))
        elif m := re.match(r"^sched> cgroup attach (\S+) (\d+)$", line):
            group[int(m[2])] = m[1]
        elif line.startswith("error:"):
            return {"error": line[:60]}
        elif m := OURS_SPIN.match(line):
            runtime[int(m[2])] = float(m[1])
    n = tasks_a + tasks_b
    if ids is None or ids[1] - ids[0] + 1 != n or sorted(group) != list(range(ids[0], ids[1] + 1)):
        return {"error": "ids?"}
    if len(runtime) != n or not ms:
        return {"error": "no report"}
    a = [runtime[t] for t in group if group[t] == "A"]
    b = [runtime[t] for t in group if group[t] == "B"]
    if len(a) != tasks_a or len(b) != tasks_b or sum(a) + sum(b) == 0:
        return {"error": "groups?"}
    return {
        "share": 100 * sum(a) / (sum(a) + sum(b)),
        "a_cpu": [100 * v / ms for v in a],
        "b_parts": [100 * v / sum(b) for v in b] if sum(b) else [],
        "b_ms": b,
        "all_ms": sum(a) + sum(b),
        "ms": ms,
    }


def boots(pattern):
    """The logs matching PATTERN (with {b} for the boot), by boot number."""
    paths = glob.glob(pattern.format(b="*"))
    num = lambda p: int(re.search(r"seed(\d+)\.log$", p)[1])
    return [p for p in sorted(paths, key=num)]


def f(v, d=2):
    return "-" if v is None else f"{v:.{d}f}"


def cells(figs, key):
    return " ".join(x.get("error", "-") if "error" in x else f(x.get(key)) for x in figs) or "-"


def inb(figs, ideal, bound):
    got = [x["share"] for x in figs if x.get("share") is not None]
    return f"{sum(abs(v - ideal) <= bound for v in got)}/{len(got)}" if got else "-"


def rng(vals):
    return f"{min(vals):.1f}..{max(vals):.1f}" if vals else "-"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: cgroup.py DIR < ROWS")
    d = sys.argv[1]
    rows = [line.rstrip("\n").split("|") for line in sys.stdin if line.strip()]
    linux = {}
    for smp in sorted({r[1] for r in rows}):
        linux[smp] = [linux_boot(p) for p in boots(os.path.join(d, f"linux-smp{smp}-seed{{b}}.log"))]
    print("share: group A's part of the two groups' CPU time, %; one figure per boot (Linux: cpu.stat")
    print("usage_usec; utime: /proc/PID/stat utime+stime sums; ours: the threads' runtime); in bound: boots within")
    print("ideal +- bound; in L: ours' boots inside Linux's min..max")
    # a share cell is 6 characters a boot: columns widen past two boots
    nl = max([len(v) for v in linux.values()] + [0])
    lw, ow = max(14, 6 * nl + 2), max(16, 6 * nl + 4)
    print(f"{'row':<17}{'cpus':>4} {'pin':>3} {'A:B':>7} {'ideal':>6} {'bound':>6}  {'Linux share':<{lw}}{'Linux utime':<{lw}}"
          f"{'in':>4}  {'ours share':<{ow}}{'in':>4}{'in L':>5}")
    extra, per_boot = [], []
    for name, smp, cpu, wa, wb, na, nb, ideal, bound in rows:
        ideal, bound, na, nb = float(ideal), float(bound), int(na), int(nb)
        lf = [b_.get(name, {"error": "none"}) for b_ in linux[smp]]
        opaths = boots(os.path.join(d, f"ours-smp{smp}-{name}-seed{{b}}.log"))
        of = [x for x in (ours_boot(p, na, nb) for p in opaths) if x is not None]
        lvals = [x["share"] for x in lf if x.get("share") is not None]
        inl = "-"
        got = [x["share"] for x in of if x.get("share") is not None]
        if lvals and got:
            inl = f"{sum(min(lvals) <= v <= max(lvals) for v in got)}/{len(got)}"
        print(f"{name:<17}{smp:>4} {cpu:>3} {wa + ':' + wb:>7} {ideal:>6.2f} {'+-' + f(bound, 1):>6}  "
              f"{cells(lf, 'share'):<{lw}}{cells(lf, 'share_utime'):<{lw}}{inb(lf, ideal, bound):>4}  "
              f"{cells(of, 'share'):<{ow}}{inb(of, ideal, bound) if of else '-':>4}{inl:>5}")
        la = [v for x in lf for v in x.get("a_cpu", [])]
        oa = [v for x in of for v in x.get("a_cpu", [])]
        lb = [v for x in lf for v in x.get("b_parts", [])]
        ob = [v for x in of for v in x.get("b_parts", [])]
        extra.append(f"{name:<17}{rng(la):>13}{rng(oa):>13}   {100 / nb:>5.1f} {rng(lb):>12}{rng(ob):>12}")
        for kernel, figs in (("Linux", lf), ("ours", of)):
            for b_, x in enumerate(figs, 1):
                if "error" in x or not x["b_ms"]:
                    continue
                machine = 100 * x["all_ms"] / (x["ms"] * int(smp))
                per_boot.append(f"{name:<17}{kernel:>6}{b_:>5}{rng(x['a_cpu']):>13}"
                                f"{min(x['b_ms']):>9.0f}-{max(x['b_ms']):<6.0f}{machine:>9.1f}")
    print()
    print("A's spinners: CPU time as % of one CPU, min..max over spinners and boots; B's spinners:")
    print("each one's part of B's time, % (ideal 100 / B's spinners)")
    print(f"{'row':<17}{'A Linux':>13}{'A ours':>13}   {'B ideal':>5} {'B Linux':>12}{'B ours':>12}")
    for line in extra:
        print(line)
    print()
    print("Per boot: A's spinners' CPU time, % of one CPU; B's spinners' CPU time, ms each (min-max; Linux:")
    print("each one's CLOCK_THREAD_CPUTIME_ID, ours: runtime); all spinners' CPU time, % of the row's CPUs over the run")
    print(f"{'row':<17}{'kernel':>6}{'boot':>5}{'A % CPU':>13}{'B ms each':>16}{'machine':>9}")
    for line in per_boot:
        print(line)


main()
