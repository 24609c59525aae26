//! The stall watchdog (`kernel.sched_stall_warn_ms`, 0 = off): a thread that
//! has been runnable for longer than that without running is reported, with
//! every runqueue in the `sched_debug` format. A runnable thread that never
//! runs is a scheduler fault (a lost enqueue, a CPU that stopped ticking or
//! picking, a pick that skips an entity); under the in-kernel tests the
//! report fails the run.
//!
//! Each thread's `runnable_since` is set when it is woken or switched out
//! still runnable and cleared when it is switched in (`crate::sched`); CPU 0's
//! tick scans the thread slots every [`CHECK_TICKS`] ticks (loads only; the
//! dump takes no lock it would wait for). A reported thread's clock restarts,
//! so a lasting stall is reported once per threshold, not once per scan.

use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use super::{threads, ThreadState};

/// Ticks between two scans (100 ms at the default 250 Hz).
pub const CHECK_TICKS: u64 = 25;

/// Stalls seen since boot.
pub static STALLS: AtomicU64 = AtomicU64::new(0);
/// Index of the last stalled thread.
pub static LAST_STALLED: AtomicU32 = AtomicU32::new(u32::MAX);
/// While set (a test that starves a thread on purpose), stalls are counted
/// and recorded but not reported.
pub static EXPECTED: AtomicBool = AtomicBool::new(false);

/// Told the stalled thread's name after each unexpected stall report (the
/// test runner registers itself: the running test fails).
static NOTIFIER: spin::Once<fn(&'static str)> = spin::Once::new();

/// Registers what hears of an unexpected stall (once; later calls change
/// nothing).
pub fn set_notifier(notify: fn(&'static str)) {
    NOTIFIER.call_once(|| notify);
}

/// Writes through the lock-free emergency console path.
pub(super) struct Emergency;

impl Write for Emergency {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        crate::console::emergency_write(format_args!("{}", s));
        Ok(())
    }
}

/// The scan, from CPU 0's tick at `now`.
pub fn check(now: u64) {
    let warn = super::sched_config().tunables.stall_warn_ns();
    if warn == 0 {
        return;
    }
    for t in threads().iter().skip(super::idle_slots()) {
        if t.state.load(Ordering::Relaxed) != ThreadState::Running {
            continue;
        }
        let since = t.runnable_since.load(Ordering::Relaxed);
        if since == 0 || now.saturating_sub(since) <= warn {
            continue;
        }
        // Restart its clock, unless it was switched in meanwhile (0).
        if t.runnable_since
            .compare_exchange(since, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        STALLS.fetch_add(1, Ordering::Relaxed);
        LAST_STALLED.store(t.idx(), Ordering::Relaxed);
        if EXPECTED.load(Ordering::Relaxed) {
            continue;
        }
        report(t, now - since, warn);
        if let Some(notify) = NOTIFIER.get() {
            notify(t.name());
        }
    }
}

/// The stalled thread, then every runqueue (locked if free: a runqueue
/// whose lock is held is shown as such). Public for the watchdog's test.
pub fn report(t: &super::Thread, waited: u64, warn: u64) {
    let w = &mut Emergency;
    let _ = writeln!(
        w,
        "stall: thread {} '{}' runnable for {} ms without running (cpu {}, home {:?}, on_cpu {}; kernel.sched_stall_warn_ms = {})",
        t.idx(),
        t.name(),
        waited / 1_000_000,
        t.cpu(),
        crate::sched::task_cpu(t),
        t.on_cpu.load(Ordering::Relaxed),
        warn / 1_000_000
    );
    write_rqs(w);
}

/// Every runqueue in the `sched_debug` format, locked if free (a runqueue
/// whose lock is held is shown as such: a watchdog never waits for a lock).
pub(super) fn write_rqs(w: &mut dyn Write) {
    for cpu in 0..crate::sched::nr_runqueues() {
        let irqs_off = crate::arch::IrqGuard::save();
        match crate::sched::try_rq(cpu, &irqs_off) {
            Some(rq) => crate::sched::debug::write_rq(w, cpu, &rq),
            None => {
                let _ = writeln!(w, "cpu#{cpu}: runqueue locked");
            }
        };
    }
}
