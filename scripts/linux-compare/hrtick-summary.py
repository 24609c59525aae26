#!/usr/bin/env python3
"""Summarises the traces of scripts/linux-compare/hrtick-probe.sh: what ended
each slice of the two spinners (`lcbench`) in a 1-CPU run of Linux 7.x.

    scripts/linux-compare/hrtick-summary.py LOG [LOG...] [-v]

LOG is the serial log of a boot with hrtick-probe.sh as its plan (the
gzipped, base64-encoded ftrace buffers between `hrtrace BEGIN NAME` and
`hrtrace END NAME`), or a log of our kernel with `trace dump`s (only their
sched_switch and sched_wakeup events: the stints, episodes and causes
below, with no timer events to name a cause). Per run it prints one block
of `hrsum NAME: ...` lines:

- switches: sched_switch events between the run's two spinners (`lcbench`,
  ours `spin`), and all of the CPU's;
- hrtick: arms (hrtimer_start of hrtick(); `moved` = was_armed), expiries
  (hrtimer_expire_entry), cancels; how late the timer fired past its expiry
  time, and by how much the running task had overrun its request then
  (task_tick_fair's vruntime + the run time not yet charged - deadline);
  an expiry is followed by a switch, by nothing while the task is alone
  (a timer left from an earlier pick), or by a "repick" (the pick chose the
  same task again), split by whether the other spinner was awake, whether
  the request was consumed, still protected, and whether a timer was armed
  again before the next timer event;
- ticks: the tick's expiries (tick_nohz_handler) while a spinner ran, those
  that found the request consumed and those followed by a switch with no
  wakeup in between (a slice ended at the tick);
- stints: how long a spinner ran between two switches (ms: <0.8, 0.8-1.5,
  1.5-3, >=3), and tick-locked episodes: runs of stints of >= 3 ms in a
  row, whether another task ran just before one began or ended;
- the switches away from a runnable spinner by the last event in the stint
  (hrtick, tick, a wakeup; "none" for Linux: the task's own syscall);
- the duty-cycle runs: the sleeper's wakeups and cycles, the cycles it ran
  in one stint, the hog's stints ended at the tick while the sleeper waited,
  and its enqueued lag (place_entity's se->vlag, ns of virtual time: > 0
  means owed).

With -v it also prints every repick, tick-ended stint and episode.
"""
import base64
import gzip
import re
import statistics
import sys

LINE = re.compile(r"^\s*(.+)-(\d+)\s+\[(\d+)\]\s+(?:[^\s\d]\S*\s+)?([\d.]+):\s+(\w+):\s*(.*)$")
KV = re.compile(r"(\w+)=(\S+)")


def traces(path):
    """(name, [lines]) per traced run of one boot log; a log of our kernel
    gives one per `trace dump` (its sched_switch and sched_wakeup events)."""
    out, name, buf = [], None, []
    dump = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if line.startswith("# tracer: nop"):
                dump = []
                out.append((f"ours-dump{len(out) + 1}", dump))
            elif dump is not None and line.startswith("sched>"):
                dump = None
            elif dump is not None:
                dump.append(line)
            if line.startswith("hrtrace BEGIN "):
                name, buf = line.split()[2], []
            elif line.startswith("hrtrace END "):
                text = gzip.decompress(base64.b64decode("".join(buf))).decode(errors="replace")
                out.append((name, text.splitlines()))
                name = None
            elif name is not None:
                buf.append(line.strip())
    return out


def parse(lines):
    evs = []
    # Linux's runs are marked; our kernel's dumps hold only the run
    on = not any("tracing_mark_write" in x for x in lines)
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        comm, pid, _, ts, ev, rest = m.groups()
        if ev == "tracing_mark_write":
            on = "start" in rest
            continue
        if not on:
            continue
        kv = dict(KV.findall(rest))
        evs.append((float(ts), int(pid), comm, ev, kv))
    return evs


def ms_bucket(d_ns):
    ms = d_ns / 1e6
    return "<0.8" if ms < 0.8 else "0.8-1.5" if ms < 1.5 else "1.5-3" if ms < 3 else ">=3"


def summarise(name, evs, verbose):
    p = f"hrsum {name}:"
    # the spinners: the two lcbench pids that were switched in most
    counts = {}
    for _, _, _, ev, kv in evs:
        if ev == "sched_switch" and kv.get("next_comm") in ("lcbench", "spin", "wakelat-hog"):
            counts[int(kv["next_pid"])] = counts.get(int(kv["next_pid"]), 0) + 1
    spin = sorted(counts, key=counts.get, reverse=True)[:2]
    sleeps = {}
    for _, _, _, ev, kv in evs:
        if ev == "sched_switch" and int(kv["prev_pid"]) in spin and kv["prev_state"] in ("S", "D"):
            sleeps[int(kv["prev_pid"])] = sleeps.get(int(kv["prev_pid"]), 0) + 1
    sleeper = max(sleeps, key=sleeps.get) if sleeps and max(sleeps.values()) >= 10 else None
    asleep = False  # the sleeper has blocked and not been woken yet
    cause = {}  # what ended the stints that a spinner left runnable
    last_evt = None  # the last timer expiry or wakeup in the current stint
    cycle_stints, cycles_one, cycles = 0, 0, 0
    hrtick_timer, hrtick_expires = None, None
    late_ns, overrun_ns = [], []  # the timer's lateness; the request's overrun at the expiry
    st = dict(sw_all=0, sw_pair=0, arm=0, arm_moved=0, exp=0, cancel=0, exp_sw=0, repick=0,
              repick_unconsumed=0, repick_protected=0, repick_rearmed=0, ticks=0, tick_consumed=0,
              tick_sw=0, tick_sw_after_repick=0, tick_sw_noarm=0, tick_sw_pending=0, start_expired=0, exp_alone=0, repick_other_awake=0)
    stints = {}
    seq = []  # (start, end, pid, third) per spinner stint; third: another task ran just before it
    third_at = -1.0
    cur = None  # pid of the spinner running
    stint_t0 = None
    stint_armed = False  # a hrtick was armed in this stint (at its pick or later)
    stint_repicked = False
    pending = False  # a hrtick armed and not yet expired/cancelled
    repick_log, tick_log = [], []
    awaiting = None  # ('exp'|'tick', ts, info) until the next switch or timer event
    # the duty task
    wake_n, hog_tick_stints = 0, 0
    sleeper_se = {}
    for ts, pid, comm, ev, kv in evs:
        if ev == "hrtimer_start" and kv.get("function") == "hrtick":
            hrtick_timer = kv["hrtimer"]
            hrtick_expires = int(kv["expires"])
            st["arm"] += 1
            st["arm_moved"] += kv.get("was_armed") == "1"
            pending = True
            if cur is not None:
                stint_armed = True
            if awaiting and awaiting[0] == "exp":
                awaiting[2]["rearmed"] = True
        elif ev == "hrtimer_cancel" and hrtick_timer and kv.get("hrtimer") == hrtick_timer:
            st["cancel"] += 1
            pending = False
        elif ev == "hrtimer_start_expired":
            st["start_expired"] += 1
        elif ev == "hrtimer_expire_entry" and kv.get("function") == "hrtick":
            st["exp"] += 1
            if hrtick_expires is not None:
                late_ns.append(int(kv["now"]) - hrtick_expires)
            pending = False
            if awaiting and awaiting[0] == "exp":
                close_exp(st, awaiting, repick_log)
                stint_repicked = True
            awaiting = ("exp", ts, {"pid": pid, "rearmed": False, "other_awake": sleeper is None or not asleep})
            last_evt = "hrtick"
        elif ev == "hrtimer_expire_entry" and kv.get("function") == "tick_nohz_handler":
            if awaiting and awaiting[0] == "exp":
                close_exp(st, awaiting, repick_log)
                stint_repicked = True
                awaiting = None
            if cur is not None:
                st["ticks"] += 1
                awaiting = ("tick", ts, {"pid": cur, "pending": pending, "consumed": None})
            last_evt = "tick"
        elif ev == "ttf":
            v, d, vp = int(kv["v"]), int(kv["d"]), int(kv["vp"])
            ran = int(kv["ct"]) - int(kv["es"])
            info = awaiting[2] if awaiting else None
            if info is not None and info["pid"] == int(kv["pid"]):
                # nice 0: virtual time = real time
                info["consumed"] = v + ran >= d
                info["protected"] = v + ran < vp
                info["short_ns"] = d - (v + ran)
                info["nr"] = int(kv["nr"])
                if awaiting[0] == "exp" and info["nr"] > 1:
                    overrun_ns.append(-info["short_ns"])
                if awaiting[0] == "tick" and info["consumed"]:
                    st["tick_consumed"] += 1
        elif ev == "sched_wakeup":
            if awaiting and awaiting[0] == "tick":
                awaiting = None  # a switch after this is the wakeup's
            if int(kv["pid"]) == sleeper:
                wake_n += 1
                asleep = False
                cycle_stints = 0
            last_evt = "wakeup of " + ("the sleeper" if int(kv["pid"]) == sleeper else "another task")
        elif ev == "pe":
            sleeper_se[kv["se"]] = sleeper_se.get(kv["se"], []) + [int(kv["vlag"])]
        elif ev == "sched_switch":
            st["sw_all"] += 1
            prev, nxt = int(kv["prev_pid"]), int(kv["next_pid"])
            if prev in spin and nxt in spin:
                st["sw_pair"] += 1
            if awaiting:
                kind, t_aw, info = awaiting
                if kind == "exp" and info["pid"] == prev:
                    st["exp_sw"] += 1
                elif kind == "tick" and info["pid"] == prev and prev in spin and kv["prev_state"].startswith("R"):
                    st["tick_sw"] += 1
                    st["tick_sw_after_repick"] += stint_repicked
                    st["tick_sw_noarm"] += not stint_armed
                    st["tick_sw_pending"] += info["pending"]
                    if prev != sleeper:
                        hog_tick_stints += 1
                    tick_log.append((t_aw, prev, (ts - stint_t0) * 1e3 if stint_t0 else -1, stint_armed, stint_repicked))
                awaiting = None
            if prev not in spin and prev != 0:
                third_at = ts
            if cur is not None and stint_t0 is not None:
                seq.append((stint_t0, ts, prev, third_at))
                b = ms_bucket((ts - stint_t0) * 1e9)
                stints[b] = stints.get(b, 0) + 1
                if prev == sleeper:
                    cycle_stints += 1
                    if kv["prev_state"] in ("S", "D"):
                        asleep = True
                        cycles += 1
                        cycles_one += cycle_stints == 1
                if kv["prev_state"].startswith("R"):
                    who = "sleeper" if prev == sleeper else "hog" if sleeper is not None else "spinner"
                    c = f"{who} -> {'sleeper' if nxt == sleeper else 'hog' if nxt in spin else 'other'}: {last_evt or 'none (a syscall of its own)'}"
                    if last_evt == "tick" and prev in spin:
                        c += f" ({ms_bucket((ts - stint_t0) * 1e9)} ms)"
                    cause[c] = cause.get(c, 0) + 1
            cur = nxt if nxt in spin else None
            stint_t0 = ts if cur is not None else None
            stint_armed = False
            stint_repicked = False
            last_evt = None
    if awaiting and awaiting[0] == "exp":
        close_exp(st, awaiting, repick_log)
    print(f"{p} spinners {spin} (sleeper {sleeper}); switches: pair {st['sw_pair']}, all {st['sw_all']}")
    print(f"{p} hrtick: arms {st['arm']} (moved while armed {st['arm_moved']}), expiries {st['exp']}, cancels {st['cancel']}, start_expired {st['start_expired']}")
    if late_ns:
        print(f"{p} hrtick expiry after its expiry time: median {statistics.median(late_ns) / 1e3:.1f} us, max {max(late_ns) / 1e3:.1f} us; "
              f"the running task's request overrun at the expiry (queued > 1): median {statistics.median(overrun_ns) / 1e3 if overrun_ns else 0:.1f} us, "
              f"min {min(overrun_ns, default=0) / 1e3:.1f}, max {max(overrun_ns, default=0) / 1e3:.1f} us")
    print(f"{p} hrtick expiries followed by a switch {st['exp_sw']}, by none with the task alone {st['exp_alone']}, by a repick {st['repick']} "
          f"(the other spinner awake {st['repick_other_awake']}, request not consumed {st['repick_unconsumed']}, still protected {st['repick_protected']}, timer armed again before the next timer event {st['repick_rearmed']})")
    print(f"{p} ticks while a spinner ran {st['ticks']}, finding its request consumed {st['tick_consumed']}, followed by a switch {st['tick_sw']} "
          f"(stint had no hrtick armed at all {st['tick_sw_noarm']}, a hrtick pending at the tick {st['tick_sw_pending']})")
    print(f"{p} stints (ms): " + ", ".join(f"{k} {stints.get(k, 0)}" for k in ("<0.8", "0.8-1.5", "1.5-3", ">=3")))
    if sleeper is not None:
        se, lags = max(sleeper_se.items(), key=lambda kv: len(kv[1])) if sleeper_se else (None, [])
        pos = [l for l in lags if l > 0]
        print(f"{p} duty: sleeper wakeups {wake_n}, cycles {cycles}, run in one stint {cycles_one}; hog stints ended at the tick with the sleeper waiting {hog_tick_stints}")
        if lags:
            print(f"{p} duty: enqueued vlag of the most-placed entity ({len(lags)} placements): mean {statistics.mean(lags) / 1e3:.1f} us, "
                  f"> 0 (owed) {len(pos)} (mean {statistics.mean(pos) / 1e3 if pos else 0:.1f} us), > 100 us {sum(l > 100000 for l in lags)}, "
                  f"== 0 {sum(l == 0 for l in lags)}, < 0 {sum(l < 0 for l in lags)}")
    # episodes of the tick-locked regime: consecutive stints of >= 3 ms
    eps, i = [], 0
    while i < len(seq):
        if seq[i][1] - seq[i][0] >= 0.003:
            j = i
            while j + 1 < len(seq) and seq[j + 1][1] - seq[j + 1][0] >= 0.003:
                j += 1
            # entered after another task ran within the 3 stints before it
            entered_third = any(seq[k][3] >= seq[max(i - 3, 0)][0] for k in range(max(i - 3, 0), i + 1))
            left_third = j + 1 < len(seq) and any(seq[k][3] >= seq[j][0] for k in range(j + 1, min(j + 3, len(seq))))
            at_end = seq[-1][1] - seq[j][1] < 0.005
            eps.append((seq[i][0], j - i + 1, (seq[j][1] - seq[i][0]) * 1e3, entered_third, at_end, left_third and not at_end))
            i = j + 1
        else:
            i += 1
    locked_ms = sum(e[2] for e in eps)
    if sleeper is None:
        print(f"{p} tick-locked episodes (stints >= 3 ms in a row) {len(eps)}, {locked_ms:.0f} ms in all; "
              f"entered just after another task ran {sum(e[3] for e in eps)}, still locked at the end {sum(e[4] for e in eps)}, "
              f"left just after another task ran {sum(e[5] for e in eps)}")
    if verbose:
        for e in eps:
            print(f"{p}   episode at {e[0]:.6f}: {e[1]} stints, {e[2]:.1f} ms, entered after another task {e[3]}, left after another task {e[5]}")
    for c in sorted(cause):
        print(f"{p} switch away from a runnable spinner, {c}: {cause[c]}")
    if verbose:
        for r in repick_log:
            print(f"{p}   repick at {r[0]:.6f} pid {r[1]}: consumed {r[2]}, protected {r[3]}, short by {r[4]} ns, re-armed {r[5]}")
        for t in tick_log:
            print(f"{p}   tick-ended stint at {t[0]:.6f} pid {t[1]}: {t[2]:.3f} ms, hrtick armed in it {t[3]}")


def close_exp(st, awaiting, log):
    _, ts, info = awaiting
    if info.get("closed"):
        return
    info["closed"] = True
    # called when the next timer event comes with no switch in between
    if info.get("nr", 2) <= 1:
        # the running task was alone (h_nr_queued 1): a timer left from an
        # earlier pick; nothing else could run
        st["exp_alone"] += 1
        return
    st["repick"] += 1
    st["repick_other_awake"] += info["other_awake"]
    st["repick_unconsumed"] += info.get("consumed") is False
    st["repick_protected"] += bool(info.get("protected"))
    st["repick_rearmed"] += info["rearmed"]
    log.append((ts, info["pid"], info.get("consumed"), info.get("protected"), info.get("short_ns"), info["rearmed"]))


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    if not args:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    for path in args:
        for name, lines in traces(path):
            print(f"hrsum {path}")
            summarise(name, parse(lines), "-v" in sys.argv)


if __name__ == "__main__":
    main()
