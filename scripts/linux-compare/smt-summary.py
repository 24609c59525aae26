#!/usr/bin/env python3
"""The `smt` part's table (scripts/linux-compare.sh): each row of
smt_rows, Linux's runs against ours', on a machine whose CPUs share cores
(SMP=4,threads=2).

    scripts/linux-compare/smt-summary.py DIR

DIR holds rows.txt (the row names in run order, the same in every boot),
linux-seedB.log (one `smt: row=...` line per run, guest.sh's lc_smt, after
the run's output) and ours-seedB-partK.log (our shell's transcript: `stat`
before and after each run). Per run, from both kernels:

- each CPU's busy fraction: the time tasks ran there over the run's guest
  time (Linux: /proc/schedstat rq_cpu_time; ours: `stat`'s busy, which
  also counts the shell's own `stat`);
- per core (CPUs that are SMT siblings, from Linux's thread_siblings_list;
  both kernels boot the same QEMU machine): the busy fractions summed;
- the placement: each core's busy CPUs, rounded, busiest core first,
  e.g. `1+1` (a CPU's worth of work on each core) or `2+0` (both threads
  of one core busy, the other core idle); for the pipe pair the two
  busiest CPUs: `same-core`, `cross-core`;
- the workload's figure (hogs: the part of SMT_MS each hog ran, mean;
  pipe pair: us per round trip; hackbench: seconds), context switches,
  migrations (Linux:
  sched_migrate_task events, all tasks, and of those between cores; ours:
  `stat`'s migrations_in, all threads, by destination only);
- both kernels, per domain level (SMT, MC), summed over CPUs: the
  balancer's passes and tasks pulled per idle type, active balance pushes,
  and the wakeups' ttwu_wake_remote / ttwu_move_affine (Linux:
  /proc/schedstat's domain lines; ours: the `schedstat` command's, run
  before and after each run); ours also ttwu_migrate (wakeups that moved
  a task, by the destination's level). Then each kernel's migrations by
  cause: the wakeups' (ours counted; Linux's the migrations less the
  tasks pulled and pushed: sched_migrate_task fires for both) and the
  balancer's per idle type; Linux's wakeups and the share placed on the
  waker's CPU (ttwu_local), ours' wakeups (`stat`, by destination) less
  the remote ones; ours: nohz balance kicks.
"""
import os
import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path


# The hogs' length (guest ms): the part's SMT_MS.
HOG_MS = float(os.environ.get("SMT_MS", "1000"))


def mean_sd(xs):
    if not xs:
        return "-"
    m = statistics.fmean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{m:.3g} +- {sd:.2g}"


def med_range(xs):
    if not xs:
        return "-"
    return f"{statistics.median(xs):.0f} [{min(xs):.0f}-{max(xs):.0f}]"


def seed_of(p):
    return int(re.search(r"seed(\d+)", p.name).group(1))


def part_of(p):
    m = re.search(r"part(\d+)", p.name)
    return int(m.group(1)) if m else 0


def clean(path):
    return path.read_text(errors="replace").replace("\r", "").splitlines()


def linux_runs(path):
    """(topology lines, [(row, fields, output lines)])."""
    topo, runs, out = [], [], []
    for line in clean(path):
        if line.startswith("smt: topo "):
            topo.append(line[len("smt: topo "):])
        elif line.startswith("smt: row="):
            f = dict(kv.split("=", 1) for kv in line[len("smt: "):].split())
            runs.append((f["row"], f, out))
            out = []
        else:
            out.append(line)
    return topo, runs


def cores_from(topo):
    core = {}
    for t in topo:
        m = re.match(r"cpu(\d+) core (\d+)", t)
        if m:
            core[int(m.group(1))] = int(m.group(2))
    return core


STAT_CPU = re.compile(
    r"^cpu(\d+) busy ([\d.]+) ms idle ([\d.]+) ms switches (\d+) .*tickless idle (\d+) "
    r"\(kicked (\d+)\) wakeups (\d+) migrations_in (\d+)"
)


def ours_commands(paths):
    """Our shell's commands in order: [(command line, output lines)]."""
    cmds = []
    for p in paths:
        cur = None
        for line in clean(p):
            if line.startswith("sched> "):
                cur = (line[len("sched> "):], [])
                cmds.append(cur)
            elif cur is not None:
                cur[1].append(line)
    return cmds


def ours_stat(lines):
    s = {"cpu": {}}
    for line in lines:
        if line.startswith("uptime "):
            s["up_ms"] = float(line.split()[1])
        m = STAT_CPU.match(line)
        if m:
            s["cpu"][int(m.group(1))] = [float(m.group(2))] + [int(g) for g in m.groups()[3:]]
        if line.startswith("ctxt "):
            s["ctxt"] = int(line.split()[1])
    return s


SCHEDSTAT_KEYS = (
    [f"{k}_{t}" for t in ("busy", "idle", "newidle") for k in
     ("lb", "balanced", "failed", "imb_load", "imb_task", "gained", "nobusyq", "nobusyg")]
    + ["alb_count", "alb_failed", "alb_pushed", "wake_remote", "move_affine", "ttwu_migrate"]
)


def ours_schedstat(lines):
    """Our `schedstat`'s domain lines summed per level name:
    {"SMT.gained_idle": n, ...}, in Linux's keys (guest.sh, lc_smt_snap)."""
    s = defaultdict(int)
    for line in lines:
        f = line.split()
        if len(f) == 3 + len(SCHEDSTAT_KEYS) and f[0].startswith("domain"):
            for k, v in zip(SCHEDSTAT_KEYS, f[3:]):
                s[f"{f[1]}.{k}"] += int(v)
    return s


def ours_runs(paths):
    """[(fields, output lines)] from each `stat; CMD; ...; stat` (the
    commands between a pair of `stat`s are one run; the `yield` pause
    before the first `stat` is not)."""
    cmds = ours_commands(paths)
    runs = []
    i = 0
    while i < len(cmds):
        j = i + 1
        while j < len(cmds) and cmds[j][0] != "stat" and not cmds[j][0].startswith("yield"):
            j += 1
        if cmds[i][0] == "stat" and j > i + 1 and j < len(cmds) and cmds[j][0] == "stat":
            a, b = ours_stat(cmds[i][1]), ours_stat(cmds[j][1])
            f = {"up_ms": b["up_ms"] - a["up_ms"], "ctxt": b["ctxt"] - a["ctxt"]}
            mig = kicks = 0
            for c in sorted(b["cpu"]):
                f[f"cpu{c}_ms"] = b["cpu"][c][0] - a["cpu"][c][0]
                kicks += b["cpu"][c][3] - a["cpu"][c][3]
                mig += b["cpu"][c][5] - a["cpu"][c][5]
            f["mig_all"] = mig
            f["nohz_kicks"] = kicks
            f["wakeups"] = sum(b["cpu"][c][4] - a["cpu"][c][4] for c in b["cpu"])
            if i > 0 and j + 1 < len(cmds) and cmds[i - 1][0] == "schedstat" and cmds[j + 1][0] == "schedstat":
                s0, s1 = ours_schedstat(cmds[i - 1][1]), ours_schedstat(cmds[j + 1][1])
                for k in s1:
                    f[k] = s1[k] - s0.get(k, 0)
            runs.append((f, [line for c in cmds[i + 1 : j] for line in c[1]]))
            i = j + 1
        else:
            i += 1
    return runs


def figure(row, out):
    """The workload's own figure, from its output (either kernel)."""
    text = "\n".join(out)
    if row.startswith("hogs"):
        ms = [float(x) for x in re.findall(r"runtime(?:_ms)?\s+([\d.]+)", text)]
        return sum(ms) / (len(ms) * HOG_MS) if ms else None
    if row == "pipe_pair":
        m = re.search(r"([\d.]+) usecs/op", text)
        return float(m.group(1)) if m else None
    m = re.search(r"^Time: ([\d.]+)", text, re.M)
    return float(m.group(1)) if m else None


def placement(row, f, core):
    up = float(f["up_ms"]) or 1.0
    # (ours' busy is uptime less idle time: a CPU idle all along may come
    # out a few microseconds below zero)
    frac = {c: max(0.0, float(f.get(f"cpu{c}_ms", 0)) / up) for c in core}
    per_core = defaultdict(float)
    for c, x in frac.items():
        per_core[core[c]] += x
    if row == "pipe_pair":
        top = sorted(frac, key=frac.get, reverse=True)[:2]
        shape = "same-core" if core[top[0]] == core[top[1]] else "cross-core"
    else:
        shape = "+".join(str(round(x)) for x in sorted(per_core.values(), reverse=True))
    return shape, sorted(per_core.values(), reverse=True)


def main():
    d = Path(sys.argv[1])
    rows = (d / "rows.txt").read_text().split()
    topo, core = [], {}
    lin = defaultdict(list)
    for p in sorted(d.glob("linux-seed*.log"), key=seed_of):
        t, runs = linux_runs(p)
        topo = topo or t
        for row, f, out in runs:
            lin[row].append((f, out))
    core = cores_from(topo)
    if not core:
        print("smt: no Linux topology lines (smt: topo); no table")
        return 1
    ours = defaultdict(list)
    seeds = sorted({seed_of(p) for p in d.glob("ours-seed*-part*.log")})
    for s in seeds:
        parts = sorted(d.glob(f"ours-seed{s}-part*.log"), key=part_of)
        runs = ours_runs(parts)
        if len(runs) != len(rows):
            print(f"smt: ours seed {s}: {len(runs)} runs, want {len(rows)} (a boot did not finish?)")
        for row, (f, out) in zip(rows, runs):
            ours[row].append((f, out))
    print("Linux's view of the machine:")
    for t in topo:
        print("  " + t)
    print("\nper row (mean +- stddev over all runs; migrations: median [min-max]; placement: runs per shape)")
    hdr = f"{'row':15} {'kernel':6} {'n':>3} {'figure':>16} {'placement':24} {'core busy (CPUs)':18} {'ctxt':>16} {'migrations':>17} {'mig. cross-core':>17}"
    print(hdr)
    for row in dict.fromkeys(rows):
        for name, runs in (("linux", lin[row]), ("ours", ours[row])):
            figs, shapes, cb0, cb1, ctxt, mig, cross = [], Counter(), [], [], [], [], []
            for f, out in runs:
                x = figure(row, out)
                if x is not None:
                    figs.append(x)
                shape, pc = placement(row, f, core)
                shapes[shape] += 1
                cb0.append(pc[0])
                cb1.append(pc[-1])
                ctxt.append(float(f["ctxt"]))
                mig.append(float(f["mig_all"]))
                if "mig_all_cross" in f:
                    cross.append(float(f["mig_all_cross"]))
            pl = " ".join(f"{k} x{v}" for k, v in shapes.most_common())
            cb = f"{statistics.fmean(cb0):.2f}/{statistics.fmean(cb1):.2f}" if cb0 else "-"
            print(f"{row:15} {name:6} {len(runs):>3} {mean_sd(figs):>16} {pl:24} {cb:18} {mean_sd(ctxt):>16} {med_range(mig):>17} {med_range(cross):>17}")
    print("\nper domain level, mean per run (sum over CPUs): load_balance calls idle/busy/newidle;"
          " tasks pulled idle/busy/newidle; active pushes; ttwu_wake_remote; ttwu_move_affine;"
          " ours: ttwu_migrate (wakeups that moved a task)")
    for row in dict.fromkeys(rows):
        for name, runs in (("linux", lin[row]), ("ours", ours[row])):
            levels = sorted({k.split(".")[0] for f, _ in runs for k in f if "." in k and not k.startswith("cpu.")},
                            key=lambda l: {"SMT": 0, "MC": 1}.get(l, 2))
            for lv in levels:
                def m(key):
                    return statistics.fmean(float(f.get(f"{lv}.{key}", 0)) for f, _ in runs)
                lb = "/".join(f"{m('lb_' + t):.1f}" for t in ("idle", "busy", "newidle"))
                ga = "/".join(f"{m('gained_' + t):.1f}" for t in ("idle", "busy", "newidle"))
                mig = f"  ttwu_migrate {m('ttwu_migrate'):.1f}" if name == "ours" else ""
                print(f"  {row:15} {name:6} {lv:4} lb {lb:22} pulled {ga:18} alb_pushed {m('alb_pushed'):.1f}"
                      f"  wake_remote {m('wake_remote'):.1f}  move_affine {m('move_affine'):.1f}{mig}")
    print("\nmigrations by cause, mean per run: all; by wakeups (ours: ttwu_migrate; Linux: all less pulled"
          " and pushed); pulled by idle / busy / newly idle passes; active pushes; wakeups, of them on the waker's CPU")
    for row in dict.fromkeys(rows):
        for name, runs in (("linux", lin[row]), ("ours", ours[row])):
            if not runs:
                continue
            def tot(f, key):
                return sum(float(v) for k, v in f.items() if "." in k and not k.startswith("cpu.") and k.split(".", 1)[1] == key)
            al, wk, gi, gb, gn, ap, tw, lo = ([] for _ in range(8))
            for f, _ in runs:
                g = [tot(f, "gained_" + t) for t in ("idle", "busy", "newidle")]
                p = tot(f, "alb_pushed")
                al.append(float(f["mig_all"]))
                wk.append(tot(f, "ttwu_migrate") if name == "ours" else float(f["mig_all"]) - sum(g) - p)
                gi.append(g[0]); gb.append(g[1]); gn.append(g[2]); ap.append(p)
                if name == "linux" and "cpu.ttwu" in f:
                    tw.append(float(f["cpu.ttwu"])); lo.append(float(f["cpu.ttwu_local"]))
                elif name == "ours" and "wakeups" in f:
                    tw.append(float(f["wakeups"])); lo.append(float(f["wakeups"]) - tot(f, "wake_remote"))
            mn = statistics.fmean
            loc = f"{mn(tw):.0f}, local {100 * sum(lo) / sum(tw):.1f}%" if tw and sum(tw) else "-"
            print(f"  {row:15} {name:6} all {mn(al):7.0f}  wakeup {mn(wk):7.0f}  pulled {mn(gi):.1f} / {mn(gb):.1f} / {mn(gn):.1f}"
                  f"  pushed {mn(ap):.1f}  wakeups {loc}")
    print("\nLinux: other threads' CPU time during the runs, mean ms per run (the 3 largest)")
    for row in dict.fromkeys(rows):
        tot = Counter()
        for f, _ in lin[row]:
            for kv in f.get("others_ms", "-").split(","):
                if ":" in kv:
                    k, v = kv.rsplit(":", 1)
                    tot[k] += float(v)
        if lin[row] and tot:
            top = ", ".join(f"{k} {v / len(lin[row]):.0f}" for k, v in tot.most_common(3))
            print(f"  {row:15} {top}")
    print("\nours per row, mean per run: nohz balance kicks (a busy CPU asking a tickless idle one to balance)")
    for row in dict.fromkeys(rows):
        runs = ours[row]
        if runs:
            print(f"  {row:15} nohz_kicks {statistics.fmean(float(f['nohz_kicks']) for f, _ in runs):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
