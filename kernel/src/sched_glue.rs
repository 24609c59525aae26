//! Scheduler statistics for the heartbeat, `stat` and `sched_debug`: per CPU
//! ([`cpu_stats`]) and summed over the online CPUs ([`stats`]).

use core::sync::atomic::Ordering;

use crate::percpu::{self, MAX_CPUS};
use crate::task;

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
pub fn cpu_stats(cpu: usize) -> Option<Stats> {
    if !task::online_mask().test(cpu) {
        return None;
    }
    let pc = percpu::cpu(cpu);
    let mut s = task::with_cpu_rq(cpu, |rq| Stats {
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
    for s in (0..MAX_CPUS).filter_map(cpu_stats) {
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
