//! The stall watchdog (`task::stall`, `kernel.sched_stall_warn_ms`).

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sched::TaskParams;

use super::tick_ns;
use crate::task::{self, stall};
use crate::{kassert, kassert_eq, kprintln, ktest_timing};

/// Puts the watchdog back as the runner wants it, also when the test fails.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        stall::EXPECTED.store(false, Ordering::SeqCst);
        let _ = task::sched_setattr(task::current(), TaskParams::default());
        crate::ktest::reset_sched_state();
    }
}

ktest_timing!(stall_watchdog_reports_a_starved_thread, || {
    // A FIFO hog on this CPU starves a NORMAL thread that is runnable from
    // its spawn on; this test thread is FIFO too, above the hog, and sleeps
    // meanwhile. With the threshold at 50 ms, the scan (every CHECK_TICKS
    // ticks on CPU 0, where this single-CPU test runs) must report the
    // starved thread within 50 ms + CHECK_TICKS + 1 ticks; we sleep 3x that.
    // The runner's watchdog would fail the run: EXPECTED makes it record only.
    // Then the hog stops, the starved thread runs, and no more stalls come.
    let _restore = Restore;
    const WARN_MS: u64 = 50;
    task::sched_config()
        .tunables
        .set("kernel.sched_stall_warn_ms", "50")
        .map_err(|e| alloc::format!("{e:?}"))?;
    stall::EXPECTED.store(true, Ordering::SeqCst);
    task::sched_setattr(task::current(), TaskParams::fifo(20))
        .map_err(|e| alloc::format!("{e:?}"))?;
    let before = stall::STALLS.load(Ordering::SeqCst);
    let ran = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let starved = task::spawn("starved", TaskParams::default(), move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    let s = stop.clone();
    let hog = task::spawn("fifo-hog", TaskParams::fifo(10), move || {
        while !s.load(Ordering::Relaxed) {
            core::hint::spin_loop();
        }
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    let bound_ns = WARN_MS * 1_000_000 + (stall::CHECK_TICKS + 1) * tick_ns();
    task::sleep_ns(3 * bound_ns);
    let stalls = stall::STALLS.load(Ordering::SeqCst) - before;
    let last = stall::LAST_STALLED.load(Ordering::SeqCst);
    let ran_while_hogged = ran.load(Ordering::SeqCst);
    // The report the watchdog prints outside of tests (the thread, then
    // every runqueue in the sched_debug format), while the stall lasts.
    stall::report(
        task::thread(starved.idx()),
        3 * bound_ns,
        WARN_MS * 1_000_000,
    );
    stop.store(true, Ordering::SeqCst);
    task::join(hog).map_err(|e| alloc::format!("{e:?}"))?;
    task::join(starved).map_err(|e| alloc::format!("{e:?}"))?;
    kprintln!(
        "    {} stall report(s) in {} ms, last thread {} (starved: {})",
        stalls,
        3 * bound_ns / 1_000_000,
        last,
        starved.idx()
    );
    kassert_eq!(ran_while_hogged, 0);
    kassert!(
        stalls >= 1,
        "no stall reported in {} ms",
        3 * bound_ns / 1_000_000
    );
    kassert_eq!(last, starved.idx());
    // Nothing is runnable-and-waiting now: no new report over two scans.
    let after = stall::STALLS.load(Ordering::SeqCst);
    task::sleep_ns(2 * bound_ns);
    kassert_eq!(stall::STALLS.load(Ordering::SeqCst), after);
    Ok(())
});
