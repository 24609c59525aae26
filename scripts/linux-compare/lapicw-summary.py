#!/usr/bin/env python3
"""Summarises the logs of scripts/linux-compare/lapicw-probe.sh: where Linux
7.x writes the LAPIC one-shot timer in hackbench's runs at 4 vCPUs, and how
many of those writes leave the writing CPU's timer the machine's earliest
deadline (in QEMU's -icount TCG such a write kicks the running vCPU out of
its turn).

    scripts/linux-compare/lapicw-summary.py LOG [LOG...] [-v]

Per run kind (plain: untraced; ring: events only; stack: events and each
write's stack) and preemption model (full, lazy), over the runs of all LOGs:

- time_s and ctxt (/proc/stat's switches over the run), mean and sd;
- writes per run (the clock event's set_next_event), per switch;
- stack runs: the writes by place, from each write's stack (the innermost
  frame that names one): `sched arm` (the HRTICK armed in
  `hrtick_schedule_exit()`, `hrtimer_start_range_ns` called from
  `finish_task_switch` or `__schedule`: inside the runqueue-lock window),
  `sched rearm` (an interrupt's deferred reprogram run there,
  `__hrtimer_rearm_deferred` from `finish_task_switch` / `__schedule`: the
  same window), `irq return` (the deferred reprogram at the interrupt's
  return, `__irq_exit_rcu`, `irqentry_exit`, `sysvec_*`), `idle` (the
  tick stopped or restarted, `tick_nohz_*`), `hrtick ipi` (a remote HRTICK
  start run in the IPI, `__hrtick_start`) and `other: CALLER` (the caller
  of the hrtimer function that wrote);
- per place and for all writes: the share that was the machine's earliest
  deadline at the write. Each CPU's armed deadline is the one its last
  write set (Linux's `next_event`, or the write's time plus its delta when
  the delta was clamped to the device's minimum), spent once the clock
  passes it, cleared by `lapic_timer_shutdown`. A write is `earliest` when
  its deadline is more than 2 us before every other CPU's armed one (or no
  other is armed), `tie` when within 2 us of the earliest other one (the
  ticks of all CPUs share their expiry; which one QEMU puts first depends
  on the sub-microsecond time of each write), `later` otherwise. Writes
  before every CPU's timer state is known (its first write or shutdown in
  the run) are left out (`unknown`).
  The deadline is the one QEMU gets: the write's time (the probe's
  timestamp, microseconds) plus its delta in ns (the device ticks times
  2^shift / mult); Linux's `next_event` is 1-3 us earlier (the time from
  its clock read to the probe), the same offset for every write;
- with `lw.starts=1`: the HRTICK's starts (hrtimer_start of hrtick())
  outside interrupts (`hrtick_schedule_exit()`, `enqueue_task`) and in
  the IPI, per switch, and the share that wrote the device (the start
  followed on its CPU by `hrtimer_rearm` with deferred=0 and a write;
  a deferred reprogram after it is not the start's), split by
  `was_armed`;
- in every traced run (ring runs have no stacks): the writes a depth
  test puts in `__schedule`'s window, a write just after the
  `hrtimer_rearm` event on its CPU with interrupts off, no reschedule
  flag and preemption depth 4 in the probe (`schedule()`'s, the runqueue
  lock's, the hrtimer base lock's and the probe's own), not in the idle
  task; in the stack runs, how far it agrees with the stacks.

With -v it also prints each run's figures.
"""
import base64
import gzip
import re
import statistics
import sys

LINE = re.compile(r"^\s*(.+)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+):\s+(<stack trace>|\w+)(?::\s*(.*))?$")
KV = re.compile(r"(\w+)=(\S+)")
RUN = re.compile(r"lapicw run (\d+) (\w+) (\w+): time_s=(\S+) ctxt=(\d+) lost=(\d+)(?: sched_calls=(\d+) wakeups=(\d+))?")
TIE_NS = 2000
SCHED = ("finish_task_switch", "__schedule", "schedule_tail")
IRQ = ("__irq_exit_rcu", "irq_exit_rcu", "irqentry_exit", "sysvec_", "asm_sysvec_", "hrtimer_interrupt")
IDLE = ("tick_nohz_",)
WRITERS = ("lapic_next_event", "lapic_next_deadline")
PLACES = ["sched arm", "sched rearm", "irq return", "idle", "hrtick ipi"]


def runs_of(path):
    """[(meta, lines or None)] for one boot log."""
    out, meta, buf, cur = [], {}, None, None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            m = RUN.search(line)
            if m:
                n, kind, cfg, t, c, lost, calls, wakes = m.groups()
                cur = {"log": path, "n": int(n), "kind": kind, "cfg": cfg,
                       "time": float(t) if t != "?" else None, "ctxt": int(c), "lost": int(lost),
                       "calls": int(calls) if calls else None, "wakeups": int(wakes) if wakes else None}
                meta[int(n)] = cur
                out.append([cur, None])
                continue
            if line.startswith("lwtrace BEGIN "):
                buf = []
                continue
            if line.startswith("lwtrace END "):
                n = int(line.split()[2])
                try:
                    text = gzip.decompress(base64.b64decode("".join(buf))).decode(errors="replace")
                except Exception as e:  # a cut log: say so, keep the run's counters
                    print(f"lapicw: {path} run {n}: trace unreadable ({e})", file=sys.stderr)
                    text = None
                for r in out:
                    if r[0]["n"] == n:
                        r[1] = text.splitlines() if text is not None else None
                buf = None
                continue
            if buf is not None:
                buf.append(line.strip())
    return out


def frame(s):
    s = s.strip()
    if s.startswith("=>"):
        s = s[2:].strip()
    return s.split("+")[0].split(" ")[0]


def place_of(stack):
    """The write's place from its stack (innermost first)."""
    if not stack:
        return None
    i = 0
    while i < len(stack) and stack[i] not in WRITERS:
        i += 1
    fr = stack[i + 1:] if i < len(stack) else stack
    rearm = False
    caller = "?"
    for j, f in enumerate(fr):
        if f == "__hrtimer_rearm_deferred":
            rearm = True
        if f.startswith(SCHED):
            return "sched rearm" if rearm else "sched arm"
        if f.startswith(IRQ):
            return "irq return"
        if f.startswith(IDLE):
            return "idle"
        if f == "__hrtick_start":
            return "hrtick ipi"
        if caller == "?" and not f.startswith(("clockevents_", "tick_program_event", "hrtimer_", "__hrtimer_", "_raw_spin", "lapic_")):
            caller = f
    return "other: " + caller


def analyse(lines):
    """Per write: (cpu, ts_ns, deadline_ns, place, class); and counts."""
    ev = []
    pending_stack = None
    for line in lines:
        s = line.strip()
        if s.startswith("=>"):
            if pending_stack is not None:
                pending_stack.append(frame(s))
            continue
        m = LINE.match(line)
        if not m:
            continue
        comm, pid, cpu, flags, ts, name, rest = m.groups()
        cpu = int(cpu)
        ts_ns = round(float(ts) * 1e9)
        if name == "<stack trace>":
            pending_stack = []
            # the stack belongs to the last write on this CPU
            for e in reversed(ev):
                if e["cpu"] == cpu and e["name"] == "write":
                    if e.get("stack") is None:
                        e["stack"] = pending_stack
                    break
            continue
        pending_stack = None
        kv = dict(KV.findall(rest or ""))
        ev.append({"cpu": cpu, "ts": ts_ns, "name": name, "kv": kv, "flags": flags, "pid": int(pid)})
    ncpu = max((e["cpu"] for e in ev), default=-1) + 1
    armed = {}  # cpu -> deadline ns, None = stopped
    writes = []
    starts = []  # the HRTICK's starts (lw.starts=1): hardirq, was_armed, wrote
    pend = {}  # cpu -> its last start, until the next event other than hrtimer_rearm
    last = {}  # cpu -> its last event
    for e in ev:
        c = e["cpu"]
        prev = last.get(c)
        last[c] = e
        if c in pend:
            # the start's own reprogram: hrtimer_rearm deferred=0, then the
            # write; a deferred one (deferred=1, an interrupt's pending
            # reprogram run by hrtick_schedule_exit() after the start) is not it
            if e["name"] == "hrtimer_rearm":
                if e["kv"].get("deferred") != "0":
                    pend.pop(c)
            else:
                pend.pop(c)["wrote"] = e["name"] == "write"
        if e["name"] == "hrtimer_start":
            f = e["flags"]
            st = {"hardirq": len(f) > 2 and f[2] in "hH", "was_armed": e["kv"].get("was_armed") == "1",
                  "mode": e["kv"].get("mode", "?"), "wrote": False}
            starts.append(st)
            pend[c] = st
        if e["name"] == "stop":
            armed[c] = None
        elif e["name"] == "write":
            kv = e["kv"]
            d = int(kv["d"])
            mult, sh = int(kv["mult"]), int(kv["sh"])
            d_ns = (d << sh) // mult if mult else 0
            dl = e["ts"] + d_ns
            f = e["flags"]
            depth = (prev is not None and prev["name"] == "hrtimer_rearm" and len(f) >= 4
                     and f[0] == "d" and f[1] == "." and f[3] == "4" and e["pid"] != 0)
            cls = "unknown"
            if len(armed) >= ncpu or all(j in armed for j in range(ncpu) if j != c):
                others = [a for j, a in armed.items() if j != c and a is not None and a > e["ts"]]
                if not others:
                    cls = "earliest"
                else:
                    m = min(others)
                    cls = "earliest" if dl < m - TIE_NS else ("tie" if dl <= m + TIE_NS else "later")
            writes.append({"cpu": c, "ts": e["ts"], "dl": dl, "delay": dl - e["ts"],
                           "place": place_of(e.get("stack")), "cls": cls, "depth": depth,
                           "late": dl - int(kv["ne"])})
            armed[c] = dl
    timer_irqs = sum(1 for e in ev if e["name"] == "local_timer_entry")
    return writes, timer_irqs, starts


def ms(vals):
    if not vals:
        return "-"
    m = statistics.mean(vals)
    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return f"{m:.0f} (sd {sd:.0f})" if m >= 100 else f"{m:.3f} (sd {sd:.3f})"


def share(ws):
    n = sum(1 for w in ws if w["cls"] != "unknown")
    if not n:
        return "-"
    e = sum(1 for w in ws if w["cls"] == "earliest")
    t = sum(1 for w in ws if w["cls"] == "tie")
    return f"earliest {100 * e / n:.1f}%, tie {100 * t / n:.1f}%, later {100 * (n - e - t) / n:.1f}% (of {n})"


def main(argv):
    verbose = "-v" in argv
    logs = [a for a in argv if a != "-v"]
    if not logs:
        print(__doc__.strip().splitlines()[3].strip())
        return 2
    groups = {}
    for path in logs:
        for meta, lines in runs_of(path):
            r = dict(meta)
            if lines is not None:
                r["writes"], r["irqs"], r["starts"] = analyse(lines)
            groups.setdefault((meta["kind"], meta["cfg"]), []).append(r)
            if verbose and lines is not None:
                ws = r["writes"]
                byp = {}
                for w in ws:
                    byp[w["place"]] = byp.get(w["place"], 0) + 1
                print(f"lwrun {path} {meta['n']} {meta['kind']} {meta['cfg']}: time {meta['time']} ctxt {meta['ctxt']} "
                      f"lost {meta['lost']} writes {len(ws)} timer irqs {r['irqs']} "
                      + " ".join(f"[{k}: {v}]" for k, v in sorted(byp.items(), key=lambda x: -x[1])[:8]))
    for kind in ("plain", "ring", "stack"):
        for cfg in ("full", "lazy"):
            rs = groups.get((kind, cfg))
            if not rs:
                continue
            tag = f"lwsum {kind} {cfg}"
            print(f"{tag}: runs {len(rs)}, time_s {ms([r['time'] for r in rs if r['time'] is not None])}, "
                  f"switches {ms([r['ctxt'] for r in rs])}, schedule() calls {ms([r['calls'] for r in rs if r['calls']])}, "
                  f"wakeups {ms([r['wakeups'] for r in rs if r['wakeups']])}, lost events {sum(r['lost'] for r in rs)}")
            tr = [r for r in rs if "writes" in r]
            if not tr:
                continue
            allw = [w for r in tr for w in r["writes"]]
            nw = [len(r["writes"]) for r in tr]
            print(f"{tag}: writes per run {ms(nw)}, per switch {sum(nw) / max(1, sum(r['ctxt'] for r in tr)):.3f}, "
                  f"timer interrupts per run {ms([r['irqs'] for r in tr])}")
            print(f"{tag}: all writes: {share(allw)}")
            dw = [w for w in allw if w["depth"]]
            sw = sum(r["ctxt"] for r in tr)
            print(f"{tag}: in __schedule by the depth test: {len(dw) / len(tr):.0f} per run, "
                  f"{len(dw) / sw:.3f} per switch; {share(dw)}")
            per_run = []
            for r in tr:
                d = [w for w in r["writes"] if w["depth"] and w["cls"] != "unknown"]
                if d:
                    per_run.append(100 * sum(1 for w in d if w["cls"] == "earliest") / len(d))
            if per_run:
                print(f"{tag}: by the depth test, earliest per run: " + " ".join(f"{x:.1f}%" for x in per_run))
            st = [s for r in tr for s in r["starts"]]
            if st:
                sw_ = sum(r["ctxt"] for r in tr if r["starts"])
                nr = sum(1 for r in tr if r["starts"])
                for name, sel in (("outside interrupts (__schedule, enqueue)", False), ("in the IPI (__hrtick_start)", True)):
                    ss = [s for s in st if s["hardirq"] == sel]
                    if not ss:
                        continue
                    wrote = sum(1 for s in ss if s["wrote"])
                    armed_ = [s for s in ss if s["was_armed"]]
                    modes = {}
                    for s in ss:
                        modes[s["mode"]] = modes.get(s["mode"], 0) + 1
                    print(f"{tag}: HRTICK starts {name}: {len(ss) / nr:.0f} per run, {len(ss) / sw_:.3f} per switch; "
                          f"wrote the device {100 * wrote / len(ss):.1f}%; moved an armed timer {100 * len(armed_) / len(ss):.1f}% "
                          f"(of those wrote {100 * sum(1 for s in armed_ if s['wrote']) / max(1, len(armed_)):.1f}%, "
                          f"of the others {100 * sum(1 for s in ss if s['wrote'] and not s['was_armed']) / max(1, len(ss) - len(armed_)):.1f}%); "
                          f"modes " + ", ".join(f"{k} {v}" for k, v in sorted(modes.items(), key=lambda x: -x[1])))
            lates = sorted(w["late"] for w in allw)
            print(f"{tag}: QEMU's deadline - next_event: median {lates[len(lates) // 2] / 1e3:.1f} us, "
                  f"over 5 us {100 * sum(1 for x in lates if x > 5000) / len(lates):.1f}% (the minimum delta's clamps)")
            if kind != "stack":
                continue
            places = {}
            for w in allw:
                places.setdefault(w["place"] or "no stack", []).append(w)
            order = [p for p in PLACES if p in places] + sorted(p for p in places if p not in PLACES)
            for p in order:
                ws = places[p]
                delays = sorted(w["delay"] for w in ws)
                med = delays[len(delays) // 2] / 1e6 if delays else 0
                print(f"{tag}: place {p}: {len(ws) / len(tr):.0f} per run ({100 * len(ws) / len(allw):.1f}%), "
                      f"{len(ws) / sw:.3f} per switch, deadline in {med:.2f} ms (median); {share(ws)}")
            sched = [w for w in allw if (w["place"] or "").startswith("sched")]
            print(f"{tag}: in __schedule's lock window (sched arm + sched rearm): {len(sched) / len(tr):.0f} per run, "
                  f"{len(sched) / sw:.3f} per switch; {share(sched)}")
            wc = [r for r in tr if r["calls"]]
            if wc:
                n = sum(1 for r in wc for w in r["writes"] if (w["place"] or "").startswith("sched"))
                print(f"{tag}: in __schedule's lock window: {n / sum(r['calls'] for r in wc):.3f} per schedule() call, "
                      f"{n / sum(r['wakeups'] for r in wc):.3f} per wakeup ({len(wc)} runs with those counters)")
            both = sum(1 for w in sched if w["depth"])
            print(f"{tag}: the depth test against the stacks: {both} of {len(sched)} __schedule writes found, "
                  f"{len(dw) - both} others taken")
            per_run = []
            for r in tr:
                s = [w for w in r["writes"] if (w["place"] or "").startswith("sched") and w["cls"] != "unknown"]
                if s:
                    per_run.append(100 * sum(1 for w in s if w["cls"] == "earliest") / len(s))
            if per_run:
                print(f"{tag}: in __schedule, earliest per run: " + " ".join(f"{x:.1f}%" for x in per_run))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
