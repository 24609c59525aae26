//! Per-CPU timer deadlines, shared by the arch timers (LAPIC one-shot on
//! x86_64, the CNTV comparator on aarch64): each CPU's next tick and next
//! timer event, in the timer's own time unit (ns on x86_64, counter cycles on
//! aarch64). The arch code arms its hardware for [`TimerDeadlines::next`]
//! after every change; this module holds the bookkeeping both share.
//!
//! Ticks are absolute and advance by whole periods from the previous
//! deadline, so handler latency does not make them drift; after a stall
//! (missed ticks) the next tick is one period from now instead of a burst of
//! catch-up interrupts. A stopped tick (tickless idle) is 0; no event is
//! `u64::MAX`.

use core::sync::atomic::{AtomicU64, Ordering};

use super::MAX_CPUS;

/// The deadlines of every CPU and the tick period.
pub struct TimerDeadlines {
    period: AtomicU64,
    tick: [AtomicU64; MAX_CPUS],
    event: [AtomicU64; MAX_CPUS],
}

impl TimerDeadlines {
    /// No tick, no event, period 0.
    pub const fn new() -> Self {
        TimerDeadlines {
            period: AtomicU64::new(0),
            tick: [const { AtomicU64::new(0) }; MAX_CPUS],
            event: [const { AtomicU64::new(u64::MAX) }; MAX_CPUS],
        }
    }

    /// Sets the tick period (the same on every CPU).
    pub fn set_period(&self, period: u64) {
        self.period.store(period, Ordering::Relaxed);
    }

    /// Starts (or restarts) `cpu`'s tick one period after `now`.
    pub fn start_tick(&self, cpu: usize, now: u64) {
        let period = self.period.load(Ordering::Relaxed);
        if period != 0 {
            self.tick[cpu].store(now + period, Ordering::Relaxed);
        }
    }

    /// Stops `cpu`'s tick (tickless idle); its events still fire.
    pub fn stop_tick(&self, cpu: usize) {
        self.tick[cpu].store(0, Ordering::Relaxed);
    }

    /// Sets `cpu`'s next event (`u64::MAX`: none); whether it changed, i.e.
    /// whether the hardware needs arming again.
    pub fn set_event(&self, cpu: usize, at: u64) -> bool {
        self.event[cpu].swap(at, Ordering::Relaxed) != at
    }

    /// At an interrupt: consumes what is due at `now` and returns whether a
    /// tick is (one that comes up to `slack_64ths` / 64 of a period early
    /// counts: for a timer clocked apart from `now`'s clock). The tick then
    /// advances by a period; a due event is cleared.
    pub fn expire(&self, cpu: usize, now: u64, slack_64ths: u64) -> bool {
        let period = self.period.load(Ordering::Relaxed);
        let slack = period / 64 * slack_64ths;
        let tick = self.tick[cpu].load(Ordering::Relaxed);
        let tick_due = period != 0 && tick != 0 && now.saturating_add(slack) >= tick;
        if tick_due {
            let mut next = tick + period;
            if next <= now {
                next = now + period;
            }
            self.tick[cpu].store(next, Ordering::Relaxed);
        }
        if now >= self.event[cpu].load(Ordering::Relaxed) {
            self.event[cpu].store(u64::MAX, Ordering::Relaxed);
        }
        tick_due
    }

    /// When `cpu`'s timer must fire next: the earlier of its tick and its
    /// event, `u64::MAX` for neither.
    pub fn next(&self, cpu: usize) -> u64 {
        let tick = match self.tick[cpu].load(Ordering::Relaxed) {
            0 => u64::MAX,
            t => t,
        };
        tick.min(self.event[cpu].load(Ordering::Relaxed))
    }
}
