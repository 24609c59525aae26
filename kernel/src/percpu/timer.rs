//! The per-CPU sleep timer list: threads in `sleep_ns`, ordered by wake-up time.
//! Its earliest deadline is this CPU's timer event (`arch::timer_set_event`),
//! so a sleep ends when it is due, not at the next tick.
//!
//! Preallocated when its CPU is brought up ([`TimerList::provision`]: one slot
//! per thread, since a thread sleeps on one timer at a time), so arming,
//! cancelling and expiring never allocate; only CPUs that exist get the
//! memory (the kernel's `MAX_THREADS` entries, ~70 KiB each), not all
//! `MAX_CPUS`. Kept sorted
//! with the earliest deadline last: the tick pops expired entries in O(1)
//! each; insertion is O(n) over the sleepers of this CPU.

use alloc::collections::TryReserveError;
use alloc::vec::Vec;

/// Threads sleeping until a deadline.
pub struct TimerList {
    /// (deadline ns, thread index), latest deadline first; room for every
    /// thread once provisioned (each thread at most once).
    entries: Vec<(u64, u32)>,
}

impl TimerList {
    /// An empty list without storage (see [`TimerList::provision`]).
    pub const fn new() -> Self {
        TimerList {
            entries: Vec::new(),
        }
    }

    /// Allocates room for `threads` threads, every thread there is (once,
    /// when its CPU is brought up, never under a runqueue lock), so that no
    /// later call allocates.
    pub fn provision(&mut self, threads: usize) -> Result<(), TryReserveError> {
        self.entries
            .try_reserve_exact(threads.saturating_sub(self.entries.len()))
    }

    /// Arms a timer for thread `idx` at `deadline_ns` (re-arms if present).
    /// Does not allocate on a provisioned list: a thread is in it at most
    /// once, and the list was provisioned for all of them.
    pub fn add(&mut self, deadline_ns: u64, idx: u32) {
        self.remove(idx);
        debug_assert!(
            self.entries.len() < self.entries.capacity(),
            "timer list not provisioned"
        );
        // Position: after every entry with a later-or-equal deadline (FIFO among equals).
        let pos = self.entries.partition_point(|&(d, _)| d >= deadline_ns);
        self.entries.insert(pos, (deadline_ns, idx));
    }

    /// Cancels thread `idx`'s timer; returns whether it was armed.
    pub fn remove(&mut self, idx: u32) -> bool {
        match self.entries.iter().position(|&(_, i)| i == idx) {
            Some(pos) => {
                self.entries.remove(pos);
                true
            }
            None => false,
        }
    }

    /// Takes the earliest timer if it expired at `now_ns`.
    pub fn pop_expired(&mut self, now_ns: u64) -> Option<u32> {
        if self.entries.last()?.0 <= now_ns {
            return self.entries.pop().map(|(_, idx)| idx);
        }
        None
    }

    /// The earliest armed deadline.
    pub fn earliest(&self) -> Option<u64> {
        self.entries.last().map(|&(d, _)| d)
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
