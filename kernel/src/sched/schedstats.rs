//! The diagnostic counters' switch (Linux's schedstats:
//! `kernel.sched_schedstats`, boot argument `schedstats=enable|disable`,
//! the `sched_schedstats` static key): the per-wakeup counters of
//! [`super::WakeStats`] (`ttwu`, `ttwu_local`, the local decisions
//! `wkl_*`, the placements `wa_*` / `sis_*` / `placed_local`) and the
//! per-domain counters of the `sched` crate (`schedstat`'s lines: the
//! balance passes' `lb_*`, the active pushes' `alb_*`, the wakeups'
//! `ttwu_wake_remote`, `ttwu_move_affine`, `ttwu_migrate`, through
//! [`::sched::smp::Platform::schedstat_enabled`]) are counted only while it
//! is on. Off by default, as in Linux.
//!
//! Why: counted on every wakeup (relaxed atomic increments on the waker's
//! line) they cost a same-CPU pipe round trip (`perfpipe -s`) 59 guest
//! instructions of 8 665 and a cross-CPU one 19 of 8 402, for figures only
//! `compare` prints (`docs/benchmarks.md`). The per-domain ones, counted
//! on every wakeup before they followed the switch, cost a cross-CPU round
//! trip 60 guest instructions (in `ttwu_stat`) and a same-CPU one 14; with
//! the switch's test, off saves 52 and 8 (232 and 27 ns of guest time;
//! x86_64, 2 CPUs, `-icount`). Off, a wakeup pays one relaxed load of
//! [`SCHEDSTATS`] and a branch that skips the counting, in
//! `try_to_wake_up`, in `Scheduler::wake` and in the `wake_placement` hook
//! (and in the placement when `wake_affine` chose the waker's CPU); a
//! balance pass at a level pays one at its start, an active push one when
//! it is done.
//!
//! `compare` turns the switch on for its runs and puts the value it found
//! back afterwards, so its run lines and tables show the same counters as
//! ever, unless the boot command line said `schedstats=disable`
//! ([`pinned_off`]): then the counters stay off under `compare` too. That
//! is what `make bench-kernel` boots with, to time the scheduler without
//! its diagnostics.
//!
//! The counters kept by the `sched` crate under the runqueue lock (the
//! decision rows `wk_*`, `wk_preempt`, `wk_protected`, switches, ...) are
//! plain increments of the locked runqueue and are always counted.

use ::core::sync::atomic::{AtomicBool, Ordering};

/// Whether the diagnostic wakeup counters are counted now.
pub static SCHEDSTATS: AtomicBool = AtomicBool::new(false);

/// Set by the boot argument `schedstats=disable`: `compare` leaves the
/// counters off.
static PINNED_OFF: AtomicBool = AtomicBool::new(false);

/// Whether the counters are counted (one relaxed load: a wakeup reads it).
#[inline(always)]
pub fn schedstat_enabled() -> bool {
    SCHEDSTATS.load(Ordering::Relaxed)
}

/// Turns the counters on or off (the sysctl; `compare` for its runs).
/// Counts already made are kept.
pub fn set_schedstats(on: bool) {
    SCHEDSTATS.store(on, Ordering::Relaxed);
}

/// The boot argument `schedstats=enable|disable` (`on`: enable): the
/// switch's value from the boot on; `disable` also keeps `compare` from
/// turning it on.
pub fn boot_schedstats(on: bool) {
    set_schedstats(on);
    PINNED_OFF.store(!on, Ordering::Relaxed);
}

/// Whether the boot said `schedstats=disable`.
pub fn pinned_off() -> bool {
    PINNED_OFF.load(Ordering::Relaxed)
}

/// `compare`'s runs: the counters on (unless [`pinned_off`]) while it
/// lives, the value found put back when dropped (every way out).
pub struct CompareSchedstats {
    was: bool,
}

impl CompareSchedstats {
    /// Turns the counters on unless the boot pinned them off.
    pub fn start() -> CompareSchedstats {
        let was = schedstat_enabled();
        if !pinned_off() {
            set_schedstats(true);
        }
        CompareSchedstats { was }
    }

    /// Whether the runs count the diagnostic counters.
    pub fn counting(&self) -> bool {
        schedstat_enabled()
    }
}

impl Drop for CompareSchedstats {
    fn drop(&mut self) {
        set_schedstats(self.was);
    }
}
