//! Scheduler statistics for the heartbeat (and later `sched_debug`).

use crate::task;

/// A snapshot of this CPU's runqueue counters.
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
    /// Runnable tasks (running one included).
    pub nr_running: u32,
}

/// This CPU's counters.
pub fn stats() -> Stats {
    task::with_rq(|rq| Stats {
        nr_ticks: rq.stats.nr_ticks,
        nr_switches: rq.stats.nr_switches,
        nr_wakeups: rq.stats.nr_wakeups,
        nr_wakeup_preempt: rq.stats.nr_wakeup_preempt,
        nr_running: rq.nr_running(),
    })
}
