#!/usr/bin/env python3
"""Sums the `trace` lines of Linux A/B logs (linux-compare.sh TRACE=1) per
workload and config, as means per kept run (warmups left out):

    scripts/linux-compare/trace-summary.py LOG...

The guest (guest.sh, lc_trace_*) prints after each run line one line per
histogram entry, `trace I/T HIST: KEYS = COUNT`. This script classifies
them:
- the workload's tasks' switch-outs by prev_state (S: blocked; D: blocked
  uninterruptibly, a mutex's waiter; R: called
  schedule() while runnable, the return to user space's need_resched loop;
  R+: preempted) and by where in the kernel (the stack's first frame that
  says what the task was doing);
- who woke them (the waker's stack) and, for hackbench, which role woke
  which, and for pipes which wait queue (`pipe wakeup:` rows, from the
  waker's stack and the wakee's role: a pipe write wakes the reader on
  rd_wait, or the next writer on wr_wait; a read wakes a writer on wr_wait;
  a mutex unlock wakes the mutex's first waiter through wake_up_q):
  rt-tests' hackbench forks, per group, its 20 receivers and then
  its 20 senders, so with pids in creation order the lowest pid is the
  main process and each next 40 are a group's receivers then senders (the
  roles are given only when the task count is 1 + 40 x groups);
- migrations by what moved the task (a wakeup's placement, load balance);
- reschedule requests (kprobes on resched_curr, resched_curr_lazy, all
  tasks) by caller: wakeup preemption, slice end at the tick or the HRTICK,
  the tick's upgrade of a lazy request, and so on;
- /proc/schedstat's ttwu_wake_remote, ttwu_move_affine per domain;
- the workload's tasks' wakeup-to-run time (the `lc_wlat` synthetic
  event): count, mean and log2 histogram, on the waker's CPU or another;
- hrtimer expiries by function (`hrtick`: the HRTICK's);
- the workload's preemptions (R+) per role by how long after the last
  HRTICK expiry, tick or reschedule IPI on their CPU they came;
- the pipe mutex: entries into __mutex_lock_slowpath (a mutex_lock that
  found the lock taken; it then spins or sleeps) and __mutex_unlock_slowpath
  (an unlock that found waiters or a handoff flag), by the pipe function,
  against the sleeps in __mutex_lock_slowpath.
Each row ends with the last config's mean over the first's.
"""
import re
import sys
from collections import defaultdict

RUN = re.compile(r"^(run|warmup) (\d+)/(\d+) cfg [A-Z] (.*?): (.*?) \| (.*)$")
TRACE = re.compile(r"^trace (\d+)/(\d+) (\S+): (.*) = (\d+)$")
SD = re.compile(r"^trace (\d+)/(\d+) sd: (\S+) (.*)$")

# What a blocked (S) or runnable (R, R+) switch-out was doing: the first of
# these frames in its stack (innermost first) names it.
MUTEX_SLEEP = "mutex_lock slow path (__mutex_lock)"
PIPE_FUNCS = ["anon_pipe_read", "anon_pipe_write", "pipe_read", "pipe_write"]
SWITCH_PLACES = [
    ("preempt_schedule_irq", None),  # refined below by the interrupt
    ("exit_to_user_mode_loop", "return to user (need_resched loop)"),
    ("sock_def_readable", "preempt_enable after waking a reader (sender side)"),
    ("sock_def_write_space", "preempt_enable after waking a writer"),
    ("unix_write_space", "preempt_enable after waking a writer"),
    ("__mutex_lock_slowpath", MUTEX_SLEEP),
    ("__mutex_lock", MUTEX_SLEEP),  # the slow path's tail call leaves no frame of it
    ("sock_alloc_send_pskb", "sender: sndbuf full (sock_alloc_send_pskb)"),
    ("unix_stream_data_wait", "receiver: no data (unix_stream_data_wait)"),
    ("anon_pipe_write", "pipe writer (anon_pipe_write)"),
    ("anon_pipe_read", "pipe reader: empty (anon_pipe_read)"),
    ("pipe_write", "pipe writer (pipe_write)"),
    ("pipe_read", "pipe reader: empty (pipe_read)"),
    ("do_exit", "exit"),
    ("do_wait", "parent: wait"),
    ("do_sys_poll", "poll (start barrier)"),
    ("do_poll", "poll (start barrier)"),
    ("kernel_clone", "fork"),
]
IRQS = [
    ("asm_sysvec_apic_timer_interrupt", "timer interrupt"),
    ("asm_sysvec_reschedule_ipi", "reschedule IPI"),
    ("asm_sysvec_call_function_single", "call-function IPI (wake list)"),
]
WAKERS = [
    ("sock_def_readable", "data written (wakes a reader)"),
    ("unix_write_space", "space freed (wakes a writer)"),
    ("sock_def_write_space", "space freed (wakes a writer)"),
    ("sock_wfree", "space freed (wakes a writer)"),
    ("__mutex_unlock_slowpath", "mutex released (the pipe's lock)"),
    ("anon_pipe_write", "data written to a pipe (wakes a reader)"),
    ("anon_pipe_read", "space freed in a pipe (wakes a writer)"),
    ("pipe_write", "data written to a pipe (wakes a reader)"),
    ("pipe_read", "space freed in a pipe (wakes a writer)"),
    ("do_notify_parent", "exit (wakes the parent)"),
]
MIGRATIONS = [
    ("try_to_wake_up", "at wakeup (select_task_rq)"),
    ("wake_up_new_task", "at fork"),
    ("sched_balance_newidle", "newidle balance"),
    ("sched_balance_rq", "periodic/idle balance"),
    ("active_load_balance_cpu_stop", "active balance"),
]


def first(stack, table, default):
    for name, what in table:
        if name in stack:
            return what
    return default


def frames_of(stack):
    """A stack's frames, innermost first, without the compiler's suffixes
    (`__mutex_lock.constprop.0` -> `__mutex_lock`)."""
    return [f.split(".", 1)[0] for f in stack.split("<")]


def switch_place(stack):
    frames = frames_of(stack)
    if "preempt_schedule_irq" in frames:
        irq = first(frames, IRQS, "other interrupt")
        user = "exit_to_user" in stack
        return f"interrupt return in kernel, {irq}" + (" (on the way to user)" if user else "")
    if "preempt_schedule" in frames or "preempt_schedule_thunk" in frames:
        w = first(frames, SWITCH_PLACES[2:], None)
        at = frames[3] if len(frames) > 3 else "?"
        return "preempt_enable in kernel: " + (w or f"at {at}")
    if "irqentry_exit_to_user_mode" in frames or "irqentry_exit" in frames:
        irq = first(frames, IRQS, "other interrupt")
        return f"interrupt return to user, {irq}"
    w = first(frames, SWITCH_PLACES, None)
    if w == MUTEX_SLEEP:
        return w + " in " + pipe_func(frames)
    if w:
        return w
    return "other: " + "<".join(frames[1:4])


def pipe_func(frames):
    return next((f for f in PIPE_FUNCS if f in frames), "other: " + "<".join(frames[-3:]))


def pipe_wakeup(frames, wakee):
    """The wait queue a pipe wakeup came from, by the waker's stack and the
    wakee's role (receivers read, senders write), or None if not a pipe's."""
    if "pollwake" in frames:
        return "poll (start barrier), woken by a " + ("write" if "anon_pipe_write" in frames or "pipe_write" in frames else "?")
    if "__mutex_unlock_slowpath" in frames or ("wake_up_q" in frames and "mutex_unlock" in frames):
        return f"mutex unlock (__mutex_unlock_slowpath, wake_up_q) in {pipe_func(frames)} -> {wakee}"
    if "anon_pipe_write" in frames or "pipe_write" in frames:
        q = {"receiver": "rd_wait: a reader", "sender": "wr_wait: the next writer"}.get(wakee, f"? {wakee}")
        return f"{q}, woken by a write"
    if "anon_pipe_read" in frames or "pipe_read" in frames:
        q = {"sender": "wr_wait: a writer", "receiver": "rd_wait: the next reader"}.get(wakee, f"? {wakee}")
        return f"{q}, woken by a read"
    return None


def resched_caller(stack):
    f = stack.split("<")
    try:
        i = next(k for k, x in enumerate(f) if x in ("resched_curr", "resched_curr_lazy"))
    except StopIteration:
        return "?"
    up = f[i + 1:]
    c = up[0] if up else "?"
    if c == "wakeup_preempt":
        if "sched_ttwu_pending" in up:
            return "wakeup_preempt, wake list (on the wakee's CPU)"
        if "wake_up_new_task" in up:
            return "wakeup_preempt, fork"
        return "wakeup_preempt, waker's try_to_wake_up"
    if c == "update_curr" and len(up) > 1:
        nxt = up[1]
        if nxt == "task_tick_fair":
            return "update_curr (slice end) at the " + ("HRTICK" if "hrtick" in up else "tick")
        return f"update_curr (slice end) in {nxt}"
    if c == "task_tick_fair":
        return "task_tick_fair at the " + ("HRTICK" if "hrtick" in up else "tick")
    if c == "sched_tick":
        return "sched_tick: the tick's upgrade of a lazy request"
    return c


def roles(pids):
    """pid -> 'main' / 'receiver' / 'sender' for hackbench's layout, or {}"""
    p = sorted(pids)
    if len(p) < 41 or (len(p) - 1) % 40:
        return {}
    r = {p[0]: "main"}
    for k, pid in enumerate(p[1:]):
        r[pid] = "receiver" if k % 40 < 20 else "sender"
    return r


# The lc_pre* synthetic events: a preemption and the time since the last
# HRTICK expiry / tick / reschedule IPI on its CPU that no earlier
# preemption took.
PRE_SOURCES = {
    "lc_prehrt.pid,dt.log2": "an HRTICK expiry",
    "lc_pretck.pid,dt.log2": "a tick",
    "lc_preipi.pid,dt.log2": "a reschedule IPI",
}

STATE = {"1": "S", "2": "D", "0": "R", "256": "R+"}


def parse(paths):
    # (workload, config) -> list of per-run dicts (row -> value)
    runs = defaultdict(list)
    for path in paths:
        workload = None
        traces = defaultdict(list)  # index -> [(hist, keys, count)]
        sds = defaultdict(list)
        header = {}
        with open(path, errors="replace") as fh:
            lines = [l.rstrip("\r\n") for l in fh]

        def flush():
            for idx, (cfg, warm, met, cnt) in header.items():
                if warm:
                    continue
                runs[(workload, cfg)].append(summarize(met, cnt, traces.get(idx, []), sds.get(idx, [])))
            header.clear()
            traces.clear()
            sds.clear()

        for l in lines:
            if l.startswith("compare: ") and " of '" in l:
                flush()
                workload = l.split(" of '", 1)[1].split("'", 1)[0]
                continue
            m = RUN.match(l)
            if m:
                header[m.group(2)] = (m.group(4), m.group(1) == "warmup", m.group(5), m.group(6))
                continue
            m = SD.match(l)
            if m:
                sds[m.group(1)].append((m.group(3), m.group(4)))
                continue
            m = TRACE.match(l)
            if m:
                traces[m.group(1)].append((m.group(3).rstrip(":"), m.group(4), int(m.group(5))))
        flush()
    return runs


def summarize(met, cnt, tr, sds):
    row = defaultdict(float)
    for kv in (met + " " + cnt).split():
        if "=" in kv:
            k, v = kv.split("=", 1)
            try:
                row["run: " + k] = float(v)
            except ValueError:
                pass
    states = [(k.split(), n) for h, k, n in tr if h == "sched_switch.prev_pid,prev_state" and k != "dropped"]
    pids = {int(k[0]) for k, _ in states}
    role = roles(pids)
    for (pid, st), n in [((int(k[0]), k[1]), n) for k, n in states]:
        s = STATE.get(st, f"state {st}")
        row[f"switch-outs {s}"] += n
        if role:
            row[f"switch-outs {s}, {role[pid]}"] += n
    for h, k, n in tr:
        if k == "dropped":
            row[f"dropped ({h})"] += n
            continue
        if h.startswith("sched_switch.stk."):
            s = STATE.get(h.rsplit(".", 1)[1], "?")
            row[f"switch-out {s} at: {switch_place(k)}"] += n
        elif h == "sched_waking.stk":
            row[f"wakeup by: {first(frames_of(k), WAKERS, 'other: ' + '<'.join(k.split('<')[:3]))}"] += n
        elif h == "sched_waking.common_pid,pid" and role and k != "dropped":
            a, b = (int(x) for x in k.split())
            row[f"wakeup {role.get(a, 'other task')} -> {role.get(b, '?')}"] += n
        elif h == "sched_waking.pid.stk":
            pid, _, stk = k.partition(" ")
            frames = frames_of(stk)
            w = pipe_wakeup(frames, role.get(int(pid), "?") if role and pid.isdigit() else "?")
            row["pipe wakeup: " + (w or "other: " + "<".join(frames[:3]))] += n
        elif h in ("mutexlock.stk", "mutexunlock.stk"):
            what = "__mutex_lock_slowpath entries" if h == "mutexlock.stk" else "__mutex_unlock_slowpath entries"
            row[f"pipe mutex: {what} in {pipe_func(frames_of(k))}"] += n
        elif h == "sched_migrate_task.stk":
            row[f"migration: {first(k.split('<'), MIGRATIONS, 'other')}"] += n
        elif h == "resched_curr.stk":
            row[f"resched_curr: {resched_caller(k)}"] += n
        elif h == "resched_curr_lazy.stk":
            row[f"resched_curr_lazy: {resched_caller(k)}"] += n
    for h, k, n in tr:
        if k == "dropped":
            continue
        if h in ("lc_wlat.wcpu,rcpu", "lc_wlat.wcpu,rcpu.sum_lat"):
            w, r = k.split()[:2]
            where = "on the waker's CPU" if w == r else "on another CPU"
            what = "wakeups" if h == "lc_wlat.wcpu,rcpu" else "ns summed"
            row[f"wakeup-to-run: {where}, {what}"] += n
        elif h == "lc_wlat.wcpu,rcpu,lat.log2":
            f = k.split()
            where = "waker's CPU" if f[0] == f[1] else "other CPU"
            row[f"wakeup-to-run log2 ns, {where}: {f[-1]}"] += n
        elif h in PRE_SOURCES:
            f = k.split()
            b = int(f[-1].split("^")[1])
            who = role.get(int(f[0]), "other task") if role else "all"
            row[f"R+ switch-outs, {who}: 2^{b:02d} ns after {PRE_SOURCES[h]}"] += n
        elif h == "hrtimer_expire_entry.function.sym":
            row[f"hrtimer expiries: {k.split()[-1]}"] += n
    for where in ("on the waker's CPU", "on another CPU"):
        c = row.get(f"wakeup-to-run: {where}, wakeups", 0)
        if c:
            row[f"wakeup-to-run: {where}, mean us"] = row[f"wakeup-to-run: {where}, ns summed"] / c / 1000
    entries = sum(v for k, v in row.items() if k.startswith("pipe mutex: __mutex_lock_slowpath entries"))
    sleeps = sum(v for k, v in row.items() if k.startswith(("switch-out S at: " + MUTEX_SLEEP, "switch-out D at: " + MUTEX_SLEEP)))
    if entries:
        row["pipe mutex: slow-path entries less sleeps in it (lower bound of those that never slept)"] = entries - sleeps
    for dom, kvs in sds:
        for kv in kvs.split():
            k, v = kv.split("=")
            row[f"schedstat {dom} {k}"] += float(v)
    return row


def main():
    if len(sys.argv) < 2:
        print("usage: trace-summary.py LOG...", file=sys.stderr)
        sys.exit(2)
    try:
        runs = parse(sys.argv[1:])
    except OSError as e:
        print(f"error: trace-summary.py: {e}", file=sys.stderr)
        sys.exit(2)
    workloads = []
    for w, _ in runs:
        if w not in workloads:
            workloads.append(w)
    for w in workloads:
        cfgs = [c for (w2, c) in runs if w2 == w]
        print(f"== {w}: mean per kept run ({', '.join(f'{c}: {len(runs[(w, c)])} runs' for c in cfgs)})")
        keys = sorted({k for c in cfgs for r in runs[(w, c)] for k in r})
        width = max(len(k) for k in keys) if keys else 10
        print(f"{'':{width}} " + " ".join(f"{c[:16]:>16}" for c in cfgs) + "    ratio")
        for k in keys:
            means = [sum(r.get(k, 0.0) for r in runs[(w, c)]) / max(1, len(runs[(w, c)])) for c in cfgs]
            ratio = f"x{means[-1] / means[0]:.2f}" if len(means) > 1 and means[0] else "-"
            fmt = "{:>16.4f}" if k.startswith("run: time") else "{:>16.1f}"
            print(f"{k:{width}} " + " ".join(fmt.format(m) for m in means) + f"    {ratio}")
        print()


if __name__ == "__main__":
    main()
