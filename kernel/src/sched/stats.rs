//! Reading a thread's scheduler state (`ps`, `join`, tests) and the
//! runqueues for dumps; the scheduler statistics for the heartbeat, `stat`
//! and `sched_debug`: per CPU ([`cpu_stats`]) and summed over the online
//! CPUs ([`stats()`]).

use ::core::sync::atomic::Ordering;
use kernel_hal::cpu::CpuId;

use ::sched::smp::Platform;
use ::sched::{Resched, Rq, SchedTask, TaskId};

use super::*;
use crate::arch;
use crate::task::{Thread, ThreadState};

/// A copy of thread `t`'s scheduler state, wherever the scheduler keeps it
/// (an exited thread not joined yet: its final state; `None`: an idle
/// thread, or a free slot). The running
/// thread's runtime is as of its last accounting.
pub fn sched_snapshot(t: &Thread) -> Option<SchedTask> {
    match SCHED.get()?.task(TaskId(t.idx()), arch::cpu_id()) {
        Ok(st) => Some(st),
        // Exited and not joined yet: the state it exited with (`sched`
        // stores it in the same step that forgets the task).
        Err(_) => SCHED.get()?.exited(TaskId(t.idx())),
    }
}

/// Thread `t`'s total runtime in ns (Linux's `task_sched_runtime()`, behind
/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`), the current run included.
///
/// A running thread is charged first, as 7.2 does: `task_sched_runtime()`
/// calls the class's `update_curr` for a task that is current and queued,
/// so the read does the tick's accounting (`sched`'s
/// [`Rq::task_sched_runtime`], under the runqueue's lock). For a fair task whose request is
/// consumed (or whose RUN_TO_PARITY protection ended) that is
/// `update_deadline` → `resched_curr_lazy`: a thread that reads its own CPU
/// time ends its own slice there, within a read of its request's end, not
/// at its hrtick or the tick. A thread that polls its CPU time (the `spin`
/// duty-cycle task, `lcbench`'s duty loop in Linux) thus ends each request
/// at the syscall's return ([`exit_to_user_mode`] takes the request), and
/// another reader (`ps`) may end the slice of a thread it reads.
///
/// The request is handed to the CPU as any runqueue operation does
/// ([`RqLock`]'s drop): this CPU's flag mirrors its runqueue's state (a
/// flag above it would be a stale remote raise; none was found in the duty
/// runs, so the mirror only raised it; under `preempt=full` the lazy
/// request is already immediate);
/// another CPU's flag is raised and, for an immediate request the read
/// made, that CPU is kicked (Linux's `resched_curr` sends the IPI), as
/// `sched`'s own remote enqueues do.
///
/// What it changes (docs/results/linux/conformance.md, "2026-12-03: why Linux's hog
/// pair switches at the tick"): the duty-cycle task of the conformance rows
/// ends its requests at its reads, about 2 µs late, instead of at its
/// hrtick; the tie at V after the hog's request is still decided by µs,
/// since ours' hrtick is late by µs where Linux's is late by about 30.
pub fn task_runtime_ns(t: &Thread) -> u64 {
    let Some(s) = SCHED.get() else { return 0 };
    let id = TaskId(t.idx());
    // Interrupts off first: `this_cpu` is then the CPU whose flag the drop
    // below mirrors (`task_rq_lock` masks them too, but only once locked).
    let irq = arch::IrqGuard::save();
    let this_cpu = arch::cpu_id();
    let (cpu, g) = match s.task_rq_lock(id, this_cpu) {
        Ok(locked) => locked,
        // Asleep: its state is parked, fully accounted.
        Err(::sched::smp::LifecycleError::Asleep) => {
            return s.task(id, this_cpu).map_or(0, |st| st.se.sum_exec_runtime);
        }
        Err(_) => return s.exited(id).map_or(0, |st| st.se.sum_exec_runtime),
    };
    let mut rq = RqLock { g: Some(g), cpu };
    let before = rq.need_resched();
    let ns = rq.task_sched_runtime(id, arch::now_ns()).unwrap_or(0);
    // Only a request this read made (`resched_curr` sends no IPI for one
    // already pending).
    let kick = cpu != this_cpu && before != Resched::Now && rq.need_resched() == Resched::Now;
    drop(rq);
    if kick {
        KernelPlatform.send_resched_ipi(cpu);
    }
    drop(irq);
    ns
}

/// Whether the thread is dead (for assertions).
#[allow(dead_code)]
pub(crate) fn is_dead(t: &Thread) -> bool {
    t.state.load(Ordering::Relaxed) == ThreadState::Dead
}

/// CPU `cpu`'s runqueue, locked if free, for the dumps (never spins). The
/// caller's interrupt guard must outlive the lock (the signature ties them):
/// the tick locks this CPU's runqueue, so holding it with interrupts on would
/// deadlock at the next tick (it did, in the soft-lockup test's report).
pub(crate) fn try_rq<'a>(
    cpu: CpuId,
    _irqs_off: &'a arch::IrqGuard,
) -> Option<::sched::SpinMutexGuard<'a, Rq>> {
    let s = SCHED.get()?;
    if cpu.index() >= s.nr_cpus() {
        return None;
    }
    s.rq_lock(cpu).try_lock()
}

/// The number of runqueues (CPUs the firmware describes).
pub fn nr_runqueues() -> usize {
    nr_rqs()
}

/// Counters of the machine (summed over CPUs) or of one CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Ticks.
    pub nr_ticks: u64,
    /// Context switches.
    pub nr_switches: u64,
    /// Wakeups.
    pub nr_wakeups: u64,
    /// Wakeups that preempted.
    pub nr_wakeup_preempt: u64,
    /// Runnable tasks (running ones included).
    pub nr_running: u32,
    /// Tasks that arrived from another CPU (balancing, wakeup placement).
    pub nr_migrations_in: u64,
    /// Interrupts handled (ticks and IPIs included).
    pub nr_interrupts: u64,
    /// Reschedule IPIs received.
    pub nr_ipis: u64,
    /// Timer events between ticks (sleeps that ended at their deadline).
    pub nr_timer_events: u64,
    /// Times the tick was stopped for idle / tickless-idle balance kicks.
    pub nr_nohz_entries: u64,
    pub nr_nohz_kicks: u64,
    /// Time spent in the idle thread(s), ns.
    pub idle_ns: u64,
    /// CPUs summed (1 for [`cpu_stats`]).
    pub nr_cpus: u32,
}

/// CPU `cpu`'s counters (`None` if it is not online).
pub fn cpu_stats(cpu: CpuId) -> Option<Stats> {
    if !crate::sched::online_mask().has(cpu) {
        return None;
    }
    let pc = percpu::cpu(cpu);
    let mut s = crate::sched::with_cpu_rq(cpu, |rq| Stats {
        nr_ticks: rq.stats.nr_ticks,
        nr_switches: rq.stats.nr_switches,
        nr_wakeups: rq.stats.nr_wakeups,
        nr_wakeup_preempt: rq.stats.nr_wakeup_preempt,
        nr_running: rq.nr_running(),
        nr_migrations_in: rq.stats.nr_migrations_in,
        ..Stats::default()
    });
    s.nr_interrupts = pc.interrupts.load(Ordering::Relaxed);
    s.nr_ipis = pc.ipis.load(Ordering::Relaxed);
    s.nr_timer_events = pc.timer_events.load(Ordering::Relaxed);
    s.nr_nohz_entries = pc.nohz_entries.load(Ordering::Relaxed);
    s.nr_nohz_kicks = pc.nohz_kicks.load(Ordering::Relaxed);
    s.idle_ns = pc.idle_ns();
    s.nr_cpus = 1;
    Some(s)
}

/// The counters of every online CPU, summed.
pub fn stats() -> Stats {
    let mut t = Stats::default();
    for s in CpuId::range(MAX_CPUS).filter_map(cpu_stats) {
        t.nr_ticks += s.nr_ticks;
        t.nr_switches += s.nr_switches;
        t.nr_wakeups += s.nr_wakeups;
        t.nr_wakeup_preempt += s.nr_wakeup_preempt;
        t.nr_running += s.nr_running;
        t.nr_migrations_in += s.nr_migrations_in;
        t.nr_interrupts += s.nr_interrupts;
        t.nr_ipis += s.nr_ipis;
        t.nr_timer_events += s.nr_timer_events;
        t.nr_nohz_entries += s.nr_nohz_entries;
        t.nr_nohz_kicks += s.nr_nohz_kicks;
        t.idle_ns += s.idle_ns;
        t.nr_cpus += 1;
    }
    t
}
