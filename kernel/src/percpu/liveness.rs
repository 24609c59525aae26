//! Whether a CPU runs at all: the evidence the watchdogs need before they
//! blame the scheduler.
//!
//! A thread that stays runnable for seconds on a CPU that was running is a
//! scheduler fault (a lost wakeup, a pick that skips it). The same wait on a
//! CPU that was not running is not: under QEMU without `-icount` each CPU is
//! a host thread, and on an overloaded host (two cores, several guests and
//! builds beside them) one can go unscheduled for a second or more while
//! guest time, which is the host's clock, goes on. Linux's watchdogs face
//! the same question in guests (the soft-lockup detector asks the hypervisor
//! whether the guest was paused, `kvm_check_and_clear_guest_paused()`; the
//! RCU stall warning reports a CPU that did not take its interrupt). Here a
//! CPU's answer to what is asked of it tells:
//!
//! - a reschedule signal (an IPI, or a poll kick to an idle CPU that polls)
//!   sent to it and not yet answered (its IPI handler, or its idle thread
//!   leaving) means it is not running, or runs with interrupts masked;
//! - a CPU that ticks (not tickless) and whose tick stopped coming likewise.
//!
//! A CPU that answers late (more than [`SILENCE_NS`]) was silent until then;
//! the time it came back ([`Liveness::resumed_ns`]) is when a wait on it
//! starts to count. Lock-free: written from the tick, the IPI handler and
//! the wakeup path, read by watchdogs in interrupt context.

use core::sync::atomic::{AtomicU64, Ordering};

/// A CPU that has not answered for this long is silent: far above an IPI's
/// latency (microseconds; milliseconds on a loaded host), well below the
/// watchdogs' thresholds (seconds).
pub const SILENCE_NS: u64 = 1_000_000_000;

/// One CPU's answers.
pub struct Liveness {
    /// Latest time another CPU asked this one to reschedule (IPI or kick).
    signal_sent_ns: AtomicU64,
    /// Latest time this CPU answered (took the IPI, or its idle thread left).
    signal_taken_ns: AtomicU64,
    /// Latest tick on this CPU (or tick restart after tickless idle).
    last_tick_ns: AtomicU64,
    /// When this CPU last came back from a silence (0: never).
    resumed_ns: AtomicU64,
}

impl Liveness {
    /// Nothing sent, nothing seen.
    pub const fn new() -> Self {
        Liveness {
            signal_sent_ns: AtomicU64::new(0),
            signal_taken_ns: AtomicU64::new(0),
            last_tick_ns: AtomicU64::new(0),
            resumed_ns: AtomicU64::new(0),
        }
    }

    /// Another CPU asks this one to reschedule at `now` (before the IPI or
    /// the kick).
    pub fn signalled(&self, now: u64) {
        self.signal_sent_ns.fetch_max(now, Ordering::Relaxed);
    }

    /// This CPU answered at `now`: a signal that waited more than
    /// [`SILENCE_NS`] ends a silence.
    pub fn answered(&self, now: u64) {
        let sent = self.signal_sent_ns.load(Ordering::Relaxed);
        let taken = self.signal_taken_ns.swap(now, Ordering::Relaxed);
        if sent > taken && now.saturating_sub(sent) > SILENCE_NS {
            self.resumed_ns.fetch_max(now, Ordering::Relaxed);
        }
    }

    /// A tick on this CPU at `now`: one more than [`SILENCE_NS`] after the
    /// last (with the tick running all along) ends a silence.
    pub fn ticked(&self, now: u64) {
        let last = self.last_tick_ns.swap(now, Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) > SILENCE_NS {
            self.resumed_ns.fetch_max(now, Ordering::Relaxed);
        }
    }

    /// The tick starts again at `now` after tickless idle (the gap before
    /// is no silence).
    pub fn tick_restarted(&self, now: u64) {
        self.last_tick_ns.store(now, Ordering::Relaxed);
    }

    /// How long this CPU has been silent at `now` (0 if it answers):
    /// the age of an unanswered signal, and, if it `ticking`, the time since
    /// its last tick, whichever is longer, counted only past [`SILENCE_NS`].
    pub fn silent_ns(&self, now: u64, ticking: bool) -> u64 {
        let sent = self.signal_sent_ns.load(Ordering::Relaxed);
        let taken = self.signal_taken_ns.load(Ordering::Relaxed);
        let unanswered = if sent > taken {
            now.saturating_sub(sent)
        } else {
            0
        };
        let last_tick = self.last_tick_ns.load(Ordering::Relaxed);
        let untick = if ticking && last_tick != 0 {
            now.saturating_sub(last_tick)
        } else {
            0
        };
        let s = unanswered.max(untick);
        if s > SILENCE_NS {
            s
        } else {
            0
        }
    }

    /// When this CPU last came back from a silence (0: never).
    pub fn resumed_ns(&self) -> u64 {
        self.resumed_ns.load(Ordering::Relaxed)
    }
}

impl Default for Liveness {
    fn default() -> Self {
        Self::new()
    }
}

crate::ktest!(liveness_tells_a_silent_cpu_from_one_that_answers, || {
    use crate::{kassert, kassert_eq};
    const S: u64 = SILENCE_NS;
    let l = Liveness::new();
    // Ticking every 4 ms, signals answered within microseconds: never silent.
    for k in 1..=10u64 {
        l.ticked(k * 4_000_000);
        l.signalled(k * 4_000_000 + 1_000);
        l.answered(k * 4_000_000 + 3_000);
    }
    kassert_eq!(l.silent_ns(40_000_000, true), 0);
    kassert_eq!(l.resumed_ns(), 0);
    // A signal unanswered: silent once it is older than SILENCE_NS, by its age.
    let t0 = 100_000_000;
    l.signalled(t0);
    kassert_eq!(l.silent_ns(t0 + S / 2, false), 0);
    kassert_eq!(l.silent_ns(t0 + 3 * S, false), 3 * S);
    // Answered late: no longer silent, and it came back then.
    l.answered(t0 + 3 * S);
    kassert_eq!(l.silent_ns(t0 + 3 * S + 1, false), 0);
    kassert_eq!(l.resumed_ns(), t0 + 3 * S);
    // Answered promptly: the resume time stays.
    l.signalled(t0 + 4 * S);
    l.answered(t0 + 4 * S + 10);
    kassert_eq!(l.resumed_ns(), t0 + 3 * S);
    // A ticking CPU whose tick stops is silent (tickless, it is not).
    let t1 = t0 + 5 * S;
    l.ticked(t1);
    kassert_eq!(l.silent_ns(t1 + 2 * S, true), 2 * S);
    kassert_eq!(l.silent_ns(t1 + 2 * S, false), 0);
    // A late tick ends the silence; a tick restarted after tickless idle
    // does not count the tickless time.
    l.ticked(t1 + 2 * S);
    kassert_eq!(l.resumed_ns(), t1 + 2 * S);
    l.tick_restarted(t1 + 9 * S);
    l.ticked(t1 + 9 * S + 4_000_000);
    kassert_eq!(l.resumed_ns(), t1 + 2 * S);
    kassert!(l.silent_ns(t1 + 9 * S + 5_000_000, true) == 0);
    Ok(())
});
