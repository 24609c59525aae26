//! The deadline class: the fair server (Linux 6.12+'s `dl_server`).
//!
//! # The fair server
//! A task of a higher class that never sleeps (a SCHED_FIFO spinner) keeps
//! its CPU for ever: the fair tasks queued behind it never run. Linux used to
//! throttle RT tasks globally for this; since 6.12 (commit 63ba8422f876,
//! "sched/deadline: Introduce deadline servers", and the fair server that
//! followed it) each CPU has a deadline entity instead, the *fair server*,
//! which runs fair tasks for `runtime` out of every `period` (50 ms / 1 s by
//! default, `/sys/kernel/debug/sched/fair_server/cpuN/{runtime,period}`) when
//! they are starved.
//!
//! Our [`DlServer`] follows Linux's *deferred* server (6.13+, commit
//! a110a81c52a9 "sched/deadline: Deferrable dl server"):
//! - It is **active** while fair tasks are queued on its CPU (`dl_server_start`
//!   on the first fair enqueue, `dl_server_stop` when the last one leaves).
//!   On start its budget is checked with the constant bandwidth server's
//!   wakeup rule: a deadline in the past, or a remaining budget that would
//!   need more than `runtime/period` of the time left, gives a fresh budget
//!   and deadline `now + period`; otherwise the current pair is kept.
//! - While active, all fair running time is charged to it, whether it ran on
//!   its own (no higher class was runnable) or served by the server: fair tasks
//!   that already got their `runtime` in this period need no boost.
//! - It waits (*deferred*) until its **zero-laxity** time `deadline -
//!   remaining`: the latest moment at which serving the remaining budget still
//!   meets the deadline. From then on it is **running**: the pick serves fair
//!   tasks above the RT class (a deadline entity outranks RT), and RT wakeups
//!   do not preempt them.
//! - When its budget is spent it is **throttled** until its deadline; then
//!   it is replenished (`deadline += period`, `remaining += runtime` while
//!   the remaining budget is not positive, so an overrun is paid back; a
//!   deadline still in the past starts afresh at `now + period`) and deferred
//!   again.
//!
//! So under a FIFO hog a fair spinner gets `runtime` every `period`, at the
//! end of each period; with no RT load the server never intervenes. A runtime
//! of 0 switches the server off (as writing 0 to Linux's `runtime` file does).
//!
//! # Granularity
//! Linux arms a high-resolution timer for the zero-laxity point and for the
//! replenishment, and charges the budget at every `update_curr`. Here the
//! budget is charged and both points are checked at the tick
//! ([`crate::Rq::task_tick`]), so each boost starts up to one tick late and
//! may overrun by up to one tick; the overrun is taken out of the next period
//! (the replenishment adds to a negative budget), so the long-run share is
//! still `runtime/period`, and any single period's service is within one tick
//! of `runtime`. A per-CPU one-shot timer armed at the zero-laxity time and at
//! the budget's exhaustion (the kernel's hrtick hook) would make both exact.

use crate::config::SchedConfig;

/// Linux's default fair-server runtime: 50 ms.
pub const FAIR_SERVER_RUNTIME_NS: u64 = 50_000_000;
/// Linux's default fair-server period: 1 s.
pub const FAIR_SERVER_PERIOD_NS: u64 = 1_000_000_000;
/// Shortest server period Linux accepts: 100 µs.
pub const DL_SERVER_PERIOD_MIN_NS: u64 = 100_000;
/// Longest server period Linux accepts: 2^22 µs (about 4.2 s).
pub const DL_SERVER_PERIOD_MAX_NS: u64 = (1 << 22) * 1_000;

/// Where the server is in its cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ServerState {
    /// No fair task queued (or runtime 0): the server is stopped.
    #[default]
    Stopped,
    /// Active, waiting for its zero-laxity time (`dl_defer_armed`).
    Deferred,
    /// Active and serving fair tasks above RT (`dl_defer_running`).
    Running,
    /// Budget spent: nothing until its deadline (`dl_throttled`).
    Throttled,
}

impl ServerState {
    /// Lower-case name (`sched_debug`).
    pub const fn name(self) -> &'static str {
        match self {
            ServerState::Stopped => "stopped",
            ServerState::Deferred => "deferred",
            ServerState::Running => "running",
            ServerState::Throttled => "throttled",
        }
    }
}

/// What a server tick asks of the runqueue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerTick {
    /// Nothing changed that affects the pick.
    None,
    /// It started serving: fair tasks now outrank RT (repick).
    Boost,
    /// It stopped serving (budget spent): RT outranks fair again (repick).
    Unboost,
}

/// One CPU's fair server: a deadline entity that serves the fair class.
#[derive(Clone, Copy, Debug, Default)]
pub struct DlServer {
    /// Where it is in its cycle.
    pub state: ServerState,
    /// Budget per period (`dl_runtime`) the current cycle was set up with.
    pub runtime_ns: u64,
    /// Period (`dl_period`, also its relative deadline).
    pub period_ns: u64,
    /// Budget left in this period (`runtime`); negative after an overrun.
    pub remaining_ns: i64,
    /// Absolute deadline of this period.
    pub deadline: u64,
    /// The fair class's cumulative running time already charged.
    charged_exec_ns: u64,
    /// Boosts (zero-laxity points reached with fair tasks starved or not).
    pub nr_boosts: u64,
    /// Replenishments.
    pub nr_replenish: u64,
    /// Fair running time charged while it was running (served above RT).
    pub served_ns: u64,
}

impl DlServer {
    /// Is it serving fair tasks above RT right now?
    #[inline]
    pub fn running(&self) -> bool {
        self.state == ServerState::Running
    }

    /// Is it started (fair tasks queued)?
    #[inline]
    pub fn active(&self) -> bool {
        self.state != ServerState::Stopped
    }

    fn fresh(&mut self, now: u64) {
        self.remaining_ns = self.runtime_ns as i64;
        self.deadline = now.saturating_add(self.period_ns);
        self.nr_replenish += 1;
    }

    /// Would the remaining budget over the time left to the deadline exceed
    /// the server's bandwidth (`dl_entity_overflow`)? Checked as
    /// `remaining * period > (deadline - now) * runtime`, in 128 bits.
    fn overflows(&self, now: u64) -> bool {
        let left = self.deadline.saturating_sub(now) as i128;
        (self.remaining_ns as i128) * (self.period_ns as i128) > left * (self.runtime_ns as i128)
    }

    /// `dl_server_start`: the first fair task was queued at `now`;
    /// `fair_exec_ns` is the fair class's cumulative running time.
    pub fn start(&mut self, cfg: &SchedConfig, now: u64, fair_exec_ns: u64) {
        if self.active() {
            return;
        }
        self.charged_exec_ns = fair_exec_ns;
        let (runtime, period) = cfg.tunables.fair_server();
        if runtime == 0 {
            return;
        }
        if (runtime, period) != (self.runtime_ns, self.period_ns) {
            self.runtime_ns = runtime;
            self.period_ns = period;
            self.fresh(now);
        } else if now >= self.deadline || self.overflows(now) {
            // A throttled server whose deadline passed while stopped is
            // replenished here too: a fresh pair covers it.
            self.fresh(now);
        }
        self.state = if self.remaining_ns > 0 {
            ServerState::Deferred
        } else {
            ServerState::Throttled
        };
    }

    /// `dl_server_stop`: the last fair task left at `now`; charges what
    /// the fair class ran since the last charge first. Returns whether it was
    /// running (the pick changes).
    pub fn stop(&mut self, fair_exec_ns: u64) -> bool {
        if !self.active() {
            return false;
        }
        self.charge(fair_exec_ns);
        let was_running = self.running();
        self.state = ServerState::Stopped;
        was_running
    }

    fn charge(&mut self, fair_exec_ns: u64) {
        let delta = fair_exec_ns.wrapping_sub(self.charged_exec_ns);
        self.charged_exec_ns = fair_exec_ns;
        self.remaining_ns = self.remaining_ns.saturating_sub(delta as i64);
        if self.running() {
            self.served_ns += delta;
        }
    }

    /// The tick (`dl_server_update` plus what Linux's timers do): charges
    /// the fair running time since the last charge, throttles a spent
    /// budget, replenishes at the deadline and starts serving at the
    /// zero-laxity time. `fair_exec_ns`: the fair class's cumulative
    /// running time; `now`: the runqueue clock.
    pub fn tick(&mut self, cfg: &SchedConfig, now: u64, fair_exec_ns: u64) -> ServerTick {
        if !self.active() {
            return ServerTick::None;
        }
        let was_running = self.running();
        self.charge(fair_exec_ns);
        let (runtime, period) = cfg.tunables.fair_server();
        if (runtime, period) != (self.runtime_ns, self.period_ns) {
            // New parameters (`dl_server_apply_params`): restart with them.
            self.state = ServerState::Stopped;
            self.runtime_ns = 0;
            self.start(cfg, now, fair_exec_ns);
        } else if self.remaining_ns <= 0 && self.state != ServerState::Throttled {
            self.state = ServerState::Throttled;
        }
        if now >= self.deadline && self.state != ServerState::Stopped {
            if self.remaining_ns <= 0 {
                // `replenish_dl_entity`: pay an overrun back out of the next
                // periods; a deadline left behind starts afresh.
                while self.remaining_ns <= 0 {
                    self.deadline = self.deadline.saturating_add(self.period_ns);
                    self.remaining_ns += self.runtime_ns as i64;
                }
                self.nr_replenish += 1;
                if self.deadline <= now {
                    self.fresh(now);
                }
                self.state = ServerState::Deferred;
            } else if !self.running() {
                // Deferred past its deadline with budget left (it could not
                // have been starved): a new period.
                self.fresh(now);
            }
            // Running past the deadline with budget left (tick lateness):
            // it serves on until the budget is spent, as a late deadline
            // entity does.
        }
        if self.state == ServerState::Deferred
            && now.saturating_add(self.remaining_ns as u64) >= self.deadline
        {
            self.state = ServerState::Running;
            self.nr_boosts += 1;
        }
        match (was_running, self.running()) {
            (false, true) => ServerTick::Boost,
            (true, false) => ServerTick::Unboost,
            _ => ServerTick::None,
        }
    }
}
