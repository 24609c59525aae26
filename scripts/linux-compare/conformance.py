#!/usr/bin/env python3
"""EEVDF conformance rows of `make linux-compare`: Linux's figure and ours
beside the reference value and its bound.

    conformance.py LINUX_LOG OURS_LOG < ROWS
    conformance.py LINUX_LOG... -- OURS_LOG... < ROWS   (several boots)

ROWS (from linux-compare.sh): NAME|LINUX CMD|OUR CMD|WHAT|REF|BOUND[|BASE],
where
- NAME may end in :CONFIG (a feature setting the run is made under, upper
  case); other suffixes (:n0, :avg) only tell rows apart;
- WHAT is `share K` (the K-th task's share of the CPU time, %), `switches`
  (voluntary + involuntary switches of all the run's tasks), a wakelat
  figure (lat_avg_us, lat_p50_us, lat_p99_us, lat_max_us), a cyclictest
  one (cyc_avg_us, cyc_max_us, thread 0's) or a SCHED_DEADLINE one:
  dl_admitted (tasks made SCHED_DEADLINE), dl_errno (the first refusal's
  errno name, `ok` if none: a word, judged by equality), and dlperiodic's
  dl_jobs, dl_missed, resp_avg_us, resp_p50_us, resp_p99_us, resp_max_us,
  lateness_max_us;
- REF is the ideal value (both kernels are judged: |figure - ideal| <=
  BOUND), `linux` (ours is judged against Linux's figure: |ours - Linux| <=
  BOUND), `<=linux` (ours <= Linux's) or empty (a figure only, no verdict);
- BASE, if given, is another row's NAME: each kernel's figure of that row
  is subtracted from its own figure of this row first (an effect, or a
  latency beyond the kernel's own floor).

Linux's log has `conf CONFIG|CMD` before each run's output. Ours has the
shell's echoed `sched> WORKLOAD ...` lines; its runs are matched to rows by
order, one per distinct (CONFIG, OUR CMD), as linux-compare.sh issued them.
Both kernels print the same lines for a run: `dlperiodic: N tasks ...: J
jobs, M missed, response avg A p50 B p99 C max D us, lateness max L us`,
`spin` (ours: `SPEC
runtime_ms X share Y%  (pid P, switches S`; lcbench: `spin: SPEC runtime X
ms  share Y%  nvcsw N nivcsw M`), `wakelat: N wakeups, avg A p50 B p99 C max
D us ...` and cyclictest's `T: 0 ... Avg: A Max: M`. The deadline
figures differ: lcbench prints `dl: admitted N` and `dl: errno NAME`; ours
has a line `pid P's policy: ... -> SCHED_DEADLINE ...` per thread admitted
by `chrt -d` and the refusal's `error: chrt|taskset: ... (NAME)`.

With several boots of each kernel (linux-compare.sh's CONF_BOOTS), each row's
spread instead: per kernel the min-max and mean +- sd over its boots, and how
many of ours' boots are within the bound (of the ideal value; of Linux's mean
for `linux` rows; at most Linux's mean for `<=linux`) and inside Linux's
min-max. Linux's boots are judged against an ideal value too.
"""

import re
import sys

WAKELAT = re.compile(r"wakelat: +\d+ wakeups, avg ([\d.]+) p50 ([\d.]+) p99 ([\d.]+) max ([\d.]+) us")
CYC = re.compile(r"T: *0 .*Avg: *(\d+) +Max: *(\d+)")
DLP = re.compile(r"dlperiodic: .*: (\d+) jobs, (\d+) missed, response avg ([\d.]+) p50 ([\d.]+) p99 ([\d.]+) "
                 r"max ([\d.]+) us, lateness max (-?\d+) us")
DLP_KEYS = ("dl_jobs", "dl_missed", "resp_avg_us", "resp_p50_us", "resp_p99_us", "resp_max_us", "lateness_max_us")


def new_run():
    return {"shares": [], "switches": 0, "metrics": {}}


def common(cur, line):
    """The lines both kernels print alike; True if the line was one."""
    if m := WAKELAT.match(line):
        for k, v in zip(("lat_avg_us", "lat_p50_us", "lat_p99_us", "lat_max_us"), m.groups()):
            cur["metrics"][k] = float(v)
    elif m := CYC.match(line):
        cur["metrics"]["cyc_avg_us"] = float(m[1])
        cur["metrics"]["cyc_max_us"] = float(m[2])
    elif m := DLP.match(line):
        for k, v in zip(DLP_KEYS, m.groups()):
            cur["metrics"][k] = int(v) if k in ("dl_jobs", "dl_missed") else float(v)
    else:
        return False
    return True


def read(path):
    try:
        return open(path, errors="replace").read().replace("\r", "").splitlines()
    except OSError:
        return []


def linux_runs(path):
    runs, cur = {}, None
    for line in read(path):
        if line.startswith("conf "):
            cur = new_run()
            runs[line[5:]] = cur
        elif cur is None or common(cur, line):
            continue
        elif m := re.match(r"spin: +\S+ +runtime +[\d.]+ ms +share +([\d.]+)% +nvcsw (\d+) nivcsw (\d+)", line):
            cur["shares"].append(float(m[1]))
            cur["switches"] += int(m[2]) + int(m[3])
        elif m := re.match(r"dl: admitted (\d+)$", line):
            cur["metrics"]["dl_admitted"] = int(m[1])
        elif m := re.match(r"dl: errno (\S+)$", line):
            cur["metrics"]["dl_errno"] = m[1]
    return runs


def ours_runs(path):
    runs, cur = [], None
    for line in read(path):
        if re.match(r"^sched> (spin|wakelat|cyclictest|dlperiodic) ", line):
            cur = new_run()
            cur["metrics"].update(dl_admitted=0, dl_errno="ok")
            runs.append(cur)
        elif cur is None or common(cur, line):
            continue
        elif m := re.match(r"(?:nice -?\d+|\S+) runtime_ms \d+ share ([\d.]+)%  \(pid \d+, switches (\d+)", line):
            cur["shares"].append(float(m[1]))
            cur["switches"] += int(m[2])
        elif re.match(r"pid \d+'s policy: .* -> SCHED_DEADLINE ", line):
            cur["metrics"]["dl_admitted"] += 1
        elif (m := re.match(r"error: (?:chrt|taskset|dlperiodic): .*\((E[A-Z0-9]+)\)$", line)) and cur["metrics"]["dl_errno"] == "ok":
            cur["metrics"]["dl_errno"] = m[1]
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


def read_rows():
    rows = []
    for line in sys.stdin:
        f = line.rstrip("\n").split("|")
        rows.append((*f[:6], f[6] if len(f) > 6 else ""))
    return rows


def figures(rows, linux, ours):
    """Each row's (name, what, ref, bound, base, Linux's figure, ours)."""
    order, out, fig = [], [], {}
    for name, cmd, ourcmd, what, ref, bound, base in rows:
        cfg = name.rsplit(":", 1)[1] if re.search(r":[A-Z]", name) else "default"
        key = (cfg, ourcmd)
        if ourcmd and key not in order:
            order.append(key)
        o = ours[order.index(key)] if ourcmd and order.index(key) < len(ours) else None
        lv, ov = pick(linux.get(f"{cfg}|{cmd}"), what), pick(o, what)
        fig[name] = (lv, ov)
        if base:
            lb, ob = fig.get(base, (None, None))
            lv = None if lv is None or lb is None else lv - lb
            ov = None if ov is None or ob is None else ov - ob
        out.append((name, what, ref, bound, base, lv, ov))
    return out


def f(v):
    return "-" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))


def verdict(v, ref, bound, lv):
    if v is None or not ref:
        return ""
    if isinstance(v, str) or isinstance(lv, str):  # an errno name: equal or not
        want = lv if ref == "linux" else ref
        return "" if want is None else ("ok" if v == want else "OUT")
    if ref == "linux":
        return "" if lv is None else ("ok" if abs(v - lv) <= float(bound) else "OUT")
    if ref == "<=linux":
        return "" if lv is None else ("ok" if v <= lv else "OUT")
    return "ok" if abs(v - float(ref)) <= float(bound) else "OUT"


def one_boot(rows):
    print("== conformance: one CPU (every task on CPU 0), one run each; share = % of the tasks' CPU time")
    print(f"{'row':<37}{'what':<13}{'ref':>8}{'bound':>8}{'Linux':>10}{'':>5}{'ours':>10}{'':>5}  minus")
    for name, what, ref, bound, base, lv, ov in rows:
        b = f"+-{bound}" if bound else ""
        lverdict = "ref" if ref in ("linux", "<=linux") else verdict(lv, ref, bound, lv)
        print(f"{name:<37}{what:<13}{ref or '-':>8}{b:>8}{f(lv):>10}{lverdict:>5}"
              f"{f(ov):>10}{verdict(ov, ref, bound, lv):>5}  {base}")
    print("ok / OUT: within / outside the bound around the reference (ideal value, or Linux's figure);")
    print("'minus': the figure is this row's minus that row's, each kernel its own; '-': not measured")


def spread(vs):
    """'min..max mean+-sd' of the figures that were measured."""
    vs = [float(v) for v in vs if v is not None]
    if not vs:
        return "-", None
    mean = sum(vs) / len(vs)
    sd = (sum((v - mean) ** 2 for v in vs) / (len(vs) - 1)) ** 0.5 if len(vs) > 1 else 0.0
    return f"{min(vs):.2f}..{max(vs):.2f}  {mean:.2f}+-{sd:.2f}", mean


def words(vs):
    """'EBUSY x3' (each word and how many boots gave it), its most common."""
    got = [v for v in vs if v is not None]
    if not got:
        return "-", None
    counts = {w: got.count(w) for w in dict.fromkeys(got)}
    return " ".join(f"{w} x{n}" for w, n in counts.items()), max(counts, key=counts.get)


def several_boots(boots):
    n = len(boots)
    print(f"== conformance over {n} boots of each kernel: min..max mean+-sd (sample sd)")
    print(f"{'row':<37}{'ref':>8}{'bound':>8}  {'Linux':<32}{'ours':<32}{'in bound':>9}{'in L range':>11}")
    for i, (name, _what, ref, bound, _base, _lv, _ov) in enumerate(boots[0]):
        ls = [b[i][5] for b in boots]
        os_ = [b[i][6] for b in boots]
        if any(isinstance(v, str) for v in ls + os_):
            lsp, lmode = words(ls)
            osp, _ = words(os_)
            got = [v for v in os_ if v is not None]
            inb = "" if lmode is None or not got else f"{sum(verdict(v, ref, bound, lmode) == 'ok' for v in got)}/{len(got)}"
            print(f"{name:<37}{ref or '-':>8}{'=':>8}  {lsp:<32}{osp:<32}{inb:>9}{'':>11}")
            continue
        lsp, lmean = spread(ls)
        osp, _ = spread(os_)
        got = [v for v in os_ if v is not None]
        if ref in ("linux", "<=linux"):
            inb = "" if lmean is None or not got else f"{sum(verdict(v, ref, bound, lmean) == 'ok' for v in got)}/{len(got)}"
        elif ref:
            lok = sum(verdict(v, ref, bound, None) == "ok" for v in ls if v is not None)
            inb = f"L{lok}/{len([v for v in ls if v is not None])} O{sum(verdict(v, ref, bound, None) == 'ok' for v in got)}/{len(got)}"
        else:
            inb = ""
        lg = [v for v in ls if v is not None]
        inr = f"{sum(min(lg) <= v <= max(lg) for v in got)}/{len(got)}" if lg and got else ""
        b = f"+-{bound}" if bound else ""
        print(f"{name:<37}{ref or '-':>8}{b:>8}  {lsp:<32}{osp:<32}{inb:>9}{inr:>11}")
    print("in bound: ours' boots within the bound of the ideal value (L: Linux's boots, O: ours'),")
    print("or of Linux's mean (ref linux; <=linux: at most Linux's mean); in L range: ours' boots")
    print("inside Linux's min..max")


def main():
    args = sys.argv[1:]
    rows = read_rows()
    if "--" not in args:
        one_boot(figures(rows, linux_runs(args[0]), ours_runs(args[1])))
        return
    k = args.index("--")
    lpaths, opaths = args[:k], args[k + 1:]
    if len(lpaths) != len(opaths) or not lpaths:
        sys.exit("conformance.py: as many Linux logs as ours before and after '--'")
    several_boots([figures(rows, linux_runs(lp), ours_runs(op)) for lp, op in zip(lpaths, opaths)])


if __name__ == "__main__":
    main()
