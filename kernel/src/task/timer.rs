//! The per-CPU sleep timer list: threads in `sleep_ns`, ordered by wake-up time.
//! Its earliest deadline is this CPU's timer event (`arch::timer_set_event`),
//! so a sleep ends when it is due, not at the next tick.
//!
//! Preallocated (one slot per thread, since a thread sleeps on one timer at a
//! time), so arming, cancelling and expiring never allocate. Kept sorted with
//! the earliest deadline last: the tick pops expired entries in O(1) each;
//! insertion is O(n) over the sleepers of this CPU.

use super::MAX_THREADS;

/// Threads sleeping until a deadline.
pub struct TimerList {
    /// (deadline ns, thread index), latest deadline first.
    entries: [(u64, u32); MAX_THREADS],
    len: usize,
}

impl TimerList {
    /// An empty list.
    pub const fn new() -> Self {
        TimerList {
            entries: [(0, 0); MAX_THREADS],
            len: 0,
        }
    }

    /// Arms a timer for thread `idx` at `deadline_ns` (re-arms if present).
    pub fn add(&mut self, deadline_ns: u64, idx: u32) {
        self.remove(idx);
        // Position: after every entry with a later-or-equal deadline (FIFO among equals).
        let pos = self.entries[..self.len].partition_point(|&(d, _)| d >= deadline_ns);
        self.entries.copy_within(pos..self.len, pos + 1);
        self.entries[pos] = (deadline_ns, idx);
        self.len += 1;
    }

    /// Cancels thread `idx`'s timer; returns whether it was armed.
    pub fn remove(&mut self, idx: u32) -> bool {
        match self.entries[..self.len].iter().position(|&(_, i)| i == idx) {
            Some(pos) => {
                self.entries.copy_within(pos + 1..self.len, pos);
                self.len -= 1;
                true
            }
            None => false,
        }
    }

    /// Takes the earliest timer if it expired at `now_ns`.
    pub fn pop_expired(&mut self, now_ns: u64) -> Option<u32> {
        if self.len > 0 && self.entries[self.len - 1].0 <= now_ns {
            self.len -= 1;
            return Some(self.entries[self.len].1);
        }
        None
    }

    /// The earliest armed deadline.
    pub fn earliest(&self) -> Option<u64> {
        self.len.checked_sub(1).map(|i| self.entries[i].0)
    }

    /// Armed timers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no timer is armed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
