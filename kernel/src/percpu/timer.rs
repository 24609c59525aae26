//! The per-CPU sleep timer list: threads in `sleep_ns`, ordered by wake-up time.
//! Each timer is a range, as Linux's hrtimers are (`hrtimer_set_expires_range_ns`):
//! a soft deadline, from which the sleep may end, and a hard one, by which it
//! must (the soft one plus the thread's timer slack, `kernel.timer_slack_ns`).
//! The earliest hard deadline is this CPU's timer event
//! (`arch::timer_set_event`), so a sleep ends by then, not at the next tick;
//! any timer interrupt of the CPU (tick, event, hrtick) ends every sleep whose
//! soft deadline has passed, so one interrupt serves the sleepers whose
//! ranges overlap (Linux's `__hrtimer_run_queues` expires by the soft
//! deadline, and the device is programmed for the hard one).
//!
//! Preallocated when its CPU is brought up ([`TimerList::provision`]: one slot
//! per thread, since a thread sleeps on one timer at a time), so arming,
//! cancelling and expiring never allocate; only CPUs that exist get the
//! memory (the kernel's `MAX_THREADS` entries, ~70 KiB each), not all
//! `MAX_CPUS`. Kept sorted
//! with the latest soft deadline first: the tick pops expired entries in O(1)
//! each; insertion is O(n) over the sleepers of this CPU. The earliest hard
//! deadline is cached, and found again (O(n)) only after the timer that held
//! it went.

use alloc::collections::TryReserveError;
use alloc::vec::Vec;
use core::cell::Cell;

/// Threads sleeping until a deadline.
pub struct TimerList {
    /// (soft deadline ns, hard deadline ns, thread index), latest soft
    /// deadline first; room for every thread once provisioned (each thread
    /// at most once).
    entries: Vec<(u64, u64, u32)>,
    /// The earliest hard deadline (`u64::MAX`: none armed); `None` after
    /// the timer that held it went, until [`TimerList::earliest`] looks.
    min_hard: Cell<Option<u64>>,
}

impl TimerList {
    /// An empty list without storage (see [`TimerList::provision`]).
    pub const fn new() -> Self {
        TimerList {
            entries: Vec::new(),
            min_hard: Cell::new(Some(u64::MAX)),
        }
    }

    /// Allocates room for `threads` threads, every thread there is (once,
    /// when its CPU is brought up, never under a runqueue lock), so that no
    /// later call allocates.
    pub fn provision(&mut self, threads: usize) -> Result<(), TryReserveError> {
        self.entries
            .try_reserve_exact(threads.saturating_sub(self.entries.len()))
    }

    /// Arms a timer for thread `idx` that may fire from `deadline_ns` and
    /// must by `hard_ns` (at least `deadline_ns`; re-arms if present).
    /// Does not allocate on a provisioned list: a thread is in it at most
    /// once, and the list was provisioned for all of them.
    pub fn add(&mut self, deadline_ns: u64, hard_ns: u64, idx: u32) {
        self.remove(idx);
        debug_assert!(
            self.entries.len() < self.entries.capacity(),
            "timer list not provisioned"
        );
        // Position: after every entry with a later-or-equal deadline (FIFO among equals).
        let hard_ns = hard_ns.max(deadline_ns);
        let pos = self.entries.partition_point(|&(d, _, _)| d >= deadline_ns);
        self.entries.insert(pos, (deadline_ns, hard_ns, idx));
        if let Some(min) = self.min_hard.get() {
            self.min_hard.set(Some(min.min(hard_ns)));
        }
    }

    /// A timer of hard deadline `hard_ns` went: the cache is stale if it
    /// held that one.
    fn gone(&self, hard_ns: u64) {
        if self.min_hard.get() == Some(hard_ns) {
            self.min_hard.set(None);
        }
    }

    /// Cancels thread `idx`'s timer; returns whether it was armed.
    pub fn remove(&mut self, idx: u32) -> bool {
        match self.entries.iter().position(|&(_, _, i)| i == idx) {
            Some(pos) => {
                let (_, hard, _) = self.entries.remove(pos);
                self.gone(hard);
                true
            }
            None => false,
        }
    }

    /// Takes the timer of the earliest soft deadline if that has passed at
    /// `now_ns`.
    pub fn pop_expired(&mut self, now_ns: u64) -> Option<u32> {
        if self.entries.last()?.0 <= now_ns {
            let (_, hard, idx) = self.entries.pop()?;
            self.gone(hard);
            return Some(idx);
        }
        None
    }

    /// The earliest hard deadline: when the timer must fire.
    pub fn earliest(&self) -> Option<u64> {
        let min = self.min_hard.get().unwrap_or_else(|| {
            let min = self.entries.iter().map(|&(_, h, _)| h).min();
            min.unwrap_or(u64::MAX)
        });
        self.min_hard.set(Some(min));
        Some(min).filter(|_| !self.entries.is_empty())
    }

    /// Armed timers.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no timer is armed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
