//! The stall watchdog (`task::stall`, `kernel.sched_stall_warn_ms`) and the
//! soft-lockup detector (`task::softlockup`, `kernel.softlockup_thresh_ms`).

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel_hal::cpu::CpuId;

use sched::TaskParams;

use super::tick_ns;
use crate::cpumask::only;
use crate::task::{self, softlockup, stall};
use crate::{kassert, kassert_eq, kprintln, ktest_timing};

/// Puts the watchdog back as the runner wants it, also when the test fails.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        stall::EXPECTED.store(false, Ordering::SeqCst);
        let _ = crate::sched::sched_setattr(task::current(), TaskParams::default());
        crate::ktest::reset_sched_state();
    }
}

/// Lets the test thread run anywhere again, also when the test fails.
struct Unpin(task::Tid);

impl Drop for Unpin {
    fn drop(&mut self) {
        let _ = crate::sched::set_affinity(self.0, crate::sched::online_mask());
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
    // The starved thread must stay starved: no fair server (with it, a fair
    // thread starved for most of a period is served).
    let _no_server = super::FairServer::set(0, 1_000_000_000)?;
    const WARN_MS: u64 = 50;
    crate::sched::sched_config()
        .tunables
        .set("kernel.sched_stall_warn_ms", "50")
        .map_err(|e| alloc::format!("{e:?}"))?;
    stall::EXPECTED.store(true, Ordering::SeqCst);
    crate::sched::sched_setattr(task::current(), TaskParams::fifo(20))
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

/// Puts the soft-lockup detector back as the runner wants it, and ends a
/// preempt-disabled section left open by a failed check.
struct RestoreLockup {
    preempt_off: bool,
}

impl Drop for RestoreLockup {
    fn drop(&mut self) {
        if self.preempt_off {
            crate::sched::preempt_enable();
        }
        softlockup::EXPECTED.store(false, Ordering::SeqCst);
        crate::ktest::reset_sched_state();
    }
}

ktest_timing!(softlockup_detector_reports_a_stuck_cpu, || {
    // This thread disables preemption and spins on its CPU while a thread
    // spawned onto that CPU (allowed nowhere else) waits there: work queued,
    // no context switch. With the threshold at 100 ms the scan (CPU 0's
    // tick every SCAN_TICKS ticks; this single-CPU test runs on CPU 0) must
    // report it within 100 ms + 2 scans + 1 tick (the scan that starts the
    // clock and the one that sees it run over); we spin 3x that. The runner's
    // detector would fail the run: EXPECTED makes it record only. Then
    // preemption comes back, the waiting thread runs, and no more lockups
    // are reported.
    const THRESH_MS: u64 = 100;
    crate::sched::sched_config()
        .tunables
        .set("kernel.softlockup_thresh_ms", "100")
        .map_err(|e| alloc::format!("{e:?}"))?;
    softlockup::EXPECTED.store(true, Ordering::SeqCst);
    let before = softlockup::LOCKUPS.load(Ordering::SeqCst);
    let ran = Arc::new(AtomicU64::new(0));
    let r = ran.clone();
    crate::sched::preempt_disable();
    let mut restore = RestoreLockup { preempt_off: true };
    let cpu = crate::arch::cpu_id();
    let waiter = task::spawn_on(
        "lockup-waiter",
        TaskParams::default(),
        crate::cpumask::only(cpu),
        move || {
            r.fetch_add(1, Ordering::SeqCst);
        },
    )
    .map_err(|e| alloc::format!("{e:?}"))?;
    let bound_ns = THRESH_MS * 1_000_000 + (2 * softlockup::SCAN_TICKS + 1) * tick_ns();
    let t0 = crate::arch::now_ns();
    while crate::arch::now_ns() - t0 < 3 * bound_ns {
        core::hint::spin_loop();
    }
    let lockups = softlockup::LOCKUPS.load(Ordering::SeqCst) - before;
    let last = softlockup::LAST_CPU.load(Ordering::SeqCst);
    let ran_while_locked = ran.load(Ordering::SeqCst);
    // The report the detector prints outside of tests, while it lasts.
    softlockup::report(cpu, 3 * bound_ns, 1, THRESH_MS * 1_000_000);
    restore.preempt_off = false;
    crate::sched::preempt_enable();
    task::join(waiter).map_err(|e| alloc::format!("{e:?}"))?;
    kprintln!(
        "    {} soft-lockup report(s) in {} ms, last cpu {} (spinning: {})",
        lockups,
        3 * bound_ns / 1_000_000,
        last,
        cpu
    );
    kassert_eq!(ran_while_locked, 0);
    kassert!(
        lockups >= 1,
        "no soft lockup reported in {} ms",
        3 * bound_ns / 1_000_000
    );
    kassert_eq!(last, cpu.as_u32());
    // The CPU switches again: no new report over two thresholds.
    let after = softlockup::LOCKUPS.load(Ordering::SeqCst);
    task::sleep_ns(2 * bound_ns);
    kassert_eq!(softlockup::LOCKUPS.load(Ordering::SeqCst), after);
    Ok(())
});

crate::ktest_smp!(stall_watchdog_waits_out_a_cpu_that_does_not_run, 2, || {
    // A CPU that does not run (here: a thread masks interrupts on it for
    // MASKED_MS; in the wild, a vCPU the host does not schedule) takes no
    // tick and no reschedule IPI. A thread woken onto it waits, longer
    // than the stall threshold, through no fault of the scheduler: the
    // watchdog must see that the CPU was silent (`percpu::liveness`) and
    // count the wait from when the CPU runs again, not report it. Then the
    // CPU comes back, the woken thread runs, and nothing was reported.
    // (`stall_watchdog_reports_a_starved_thread` checks that a wait on a
    // CPU that runs is still reported.)
    const WARN_MS: u64 = 1500;
    const MASKED_MS: u64 = 3500;
    let _restore = Restore;
    let _unpin = Unpin(task::current_tid());
    let cpu = CpuId::new(crate::sched::nr_cpus() - 1).ok_or("no such CPU")?;
    // This thread must not sleep on the masked CPU: its timer could not
    // fire there, it would see the masker's flag only after the masking
    // ended, and the waiter would not wait at all (seen once in a loaded
    // `make test`: "waited only 0 ms", no stall line). It stays on the boot
    // CPU, which is never the masked one (the test needs 2 CPUs).
    crate::sched::set_affinity(task::current_tid(), only(CpuId::BOOT))
        .map_err(|e| alloc::format!("{e:?}"))?;
    crate::sched::yield_now();
    kassert!(
        task::current().cpu() == CpuId::BOOT,
        "the test thread is not on the boot CPU"
    );
    crate::sched::sched_config()
        .tunables
        .set("kernel.sched_stall_warn_ms", "1500")
        .map_err(|e| alloc::format!("{e:?}"))?;
    // Count, do not end the run, if a stall is reported after all.
    stall::EXPECTED.store(true, Ordering::SeqCst);
    let (stalls0, excused0) = (
        stall::STALLS.load(Ordering::SeqCst),
        stall::SILENT_CPU_WAITS.load(Ordering::SeqCst),
    );
    let masked = Arc::new(AtomicBool::new(false));
    let m = masked.clone();
    let masker = task::spawn_on(
        "irq-masker",
        TaskParams::default(),
        crate::cpumask::only(cpu),
        move || {
            let _irqs_off = crate::arch::IrqGuard::save();
            m.store(true, Ordering::SeqCst);
            let until = crate::arch::now_ns() + MASKED_MS * 1_000_000;
            while crate::arch::now_ns() < until {
                core::hint::spin_loop();
            }
        },
    )
    .map_err(|e| alloc::format!("{e:?}"))?;
    while !masked.load(Ordering::SeqCst) {
        task::sleep_ms(1);
    }
    let ran_at = Arc::new(AtomicU64::new(0));
    let r = ran_at.clone();
    let woken_at = crate::arch::now_ns();
    let waiter = task::spawn_on(
        "waits-on-silent",
        TaskParams::default(),
        crate::cpumask::only(cpu),
        move || {
            r.store(crate::arch::now_ns(), Ordering::SeqCst);
        },
    )
    .map_err(|e| alloc::format!("{e:?}"))?;
    task::join(masker).map_err(|e| alloc::format!("{e:?}"))?;
    task::join(waiter).map_err(|e| alloc::format!("{e:?}"))?;
    let waited_ms = (ran_at.load(Ordering::SeqCst) - woken_at) / 1_000_000;
    let stalls = stall::STALLS.load(Ordering::SeqCst) - stalls0;
    let excused = stall::SILENT_CPU_WAITS.load(Ordering::SeqCst) - excused0;
    kprintln!(
        "    cpu {} masked interrupts for {} ms: the woken thread waited {} ms (threshold {} ms), {} wait(s) counted again from the CPU's return, {} stall report(s)",
        cpu,
        MASKED_MS,
        waited_ms,
        WARN_MS,
        excused,
        stalls
    );
    // The wait did pass the threshold (else this checks nothing), was
    // excused, and was not reported.
    kassert!(
        waited_ms > WARN_MS,
        "the thread waited only {} ms",
        waited_ms
    );
    kassert!(excused >= 1, "no wait was counted again");
    kassert_eq!(stalls, 0);
    Ok(())
});
