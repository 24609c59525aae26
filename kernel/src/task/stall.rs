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
//!
//! A wait on a CPU that was not running (no answer to a reschedule signal,
//! or no tick, for over a second: a vCPU the host did not schedule, or
//! interrupts masked; `percpu::liveness`) is not the scheduler's: it counts
//! from when that CPU runs again ([`wait_restart`]), unless the CPU stays
//! silent for [`SILENT_CPU_FAIL_NS`].

use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel_hal::cpu::CpuId;

use super::{threads, ThreadState};
use crate::percpu::liveness::SILENCE_NS;

/// Ticks between two scans (100 ms at the default 250 Hz).
pub const CHECK_TICKS: u64 = 25;

/// A CPU silent this long is no longer an excuse: one that takes no
/// reschedule IPI and no tick for a minute is locked up, whatever the host
/// does, and the wait on it is reported.
pub const SILENT_CPU_FAIL_NS: u64 = 60_000_000_000;

/// Waits not counted because the CPU waited on was not running (see
/// [`wait_restart`]).
pub static SILENT_CPU_WAITS: AtomicU64 = AtomicU64::new(0);

/// How long `cpu` has been silent at `now` (0: it answers), see
/// `percpu::liveness`.
pub fn cpu_silent_ns(cpu: CpuId, now: u64) -> u64 {
    let pc = crate::percpu::cpu(cpu);
    pc.liveness
        .silent_ns(now, !pc.nohz_idle.load(Ordering::Relaxed))
}

/// A wait on `cpu` that began at `since` and has lasted past `limit_ns` at
/// `now`: if that CPU was not running for part of it, the time from which
/// the wait counts instead (`now` while it is still silent, for less than
/// [`SILENT_CPU_FAIL_NS`]; the time it came back, if the wait since then is
/// still within `limit_ns`); `None` if the wait counts as it is.
pub fn wait_restart(cpu: CpuId, since: u64, now: u64, limit_ns: u64) -> Option<u64> {
    let silent = cpu_silent_ns(cpu, now);
    if silent > 0 {
        return (silent < SILENT_CPU_FAIL_NS).then_some(now);
    }
    let resumed = crate::percpu::cpu(cpu).liveness.resumed_ns();
    (resumed > since && now.saturating_sub(resumed) <= limit_ns).then_some(resumed)
}

/// [`wait_restart`] for a wait on the whole machine (a test's progress
/// check): the latest restart any online CPU gives.
pub fn machine_wait_restart(since: u64, now: u64, limit_ns: u64) -> Option<u64> {
    let online = crate::sched::online_mask();
    CpuId::range(crate::sched::nr_runqueues())
        .filter(|&c| online.has(c))
        .filter_map(|c| wait_restart(c, since, now, limit_ns))
        .max()
}

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
    let warn = crate::sched::sched_config().tunables.stall_warn_ns();
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
        // Its CPU did not run for part of the wait (see
        // `percpu::liveness`): the wait counts from when that CPU runs.
        // (A thread that has no CPU yet has no CPU that stopped.)
        let restart = wait_restart(t.cpu(), since, now, warn);
        if let Some(restart) = restart {
            if t.runnable_since
                .compare_exchange(since, restart, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                SILENT_CPU_WAITS.fetch_add(1, Ordering::Relaxed);
                crate::console::emergency_write(format_args!(
                    "stall: thread {} '{}' waited {} ms on cpu {}, which was not running (no answer to a reschedule signal, or no tick, for over {} ms: a vCPU the host did not run, or interrupts masked); its wait counts again from {} ms\n",
                    t.idx(),
                    t.name(),
                    (now - since) / 1_000_000,
                    t.cpu(),
                    SILENCE_NS / 1_000_000,
                    restart / 1_000_000
                ));
            }
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
    write_cpu_state(w, t);
    write_rqs(w);
}

/// What tells a lost wakeup from a CPU that does not run: whether the
/// thread is still in transit to its CPU (queued in that CPU's wake list),
/// that CPU's wake-list flag, idle polling and kick flags, tickless state,
/// interrupt counts, and whether a reschedule IPI is pending or active at
/// its interrupt controller (where another CPU can read that; `None`
/// otherwise). Lock-free and allocation-free (it runs in the tick).
fn write_cpu_state(w: &mut dyn Write, t: &super::Thread) {
    let Some(cpu) = Some(t.cpu()).filter(|c| c.index() < crate::sched::nr_runqueues()) else {
        return;
    };
    let pc = crate::percpu::cpu(cpu);
    let ipi = crate::arch::ipi_state(cpu, crate::arch::IpiKind::Reschedule);
    let _ = writeln!(
        w,
        "stall: cpu {}: in transit {}, wake list {}, polling {}, poll_kick {}, tickless {}, silent {} ms, back since {} ms, need_resched {:?}, curr {}, interrupts {}, ipis {} (sent to it {}), reschedule IPI at its interrupt controller (pending, active) {:?}",
        cpu,
        crate::sched::task_in_transit(t),
        if crate::sched::wake_list_pending(cpu) { "pending" } else { "empty" },
        pc.polling.load(Ordering::Relaxed),
        pc.poll_kick.load(Ordering::Relaxed),
        pc.nohz_idle.load(Ordering::Relaxed),
        cpu_silent_ns(cpu, crate::arch::now_ns()) / 1_000_000,
        pc.liveness.resumed_ns() / 1_000_000,
        pc.need_resched(),
        pc.curr.load(Ordering::Relaxed),
        pc.interrupts.load(Ordering::Relaxed),
        pc.ipis.load(Ordering::Relaxed),
        pc.ipis_sent.load(Ordering::Relaxed),
        ipi,
    );
}

/// Every runqueue in the `sched_debug` format, locked if free (a runqueue
/// whose lock is held is shown as such: a watchdog never waits for a lock).
pub(super) fn write_rqs(w: &mut dyn Write) {
    for cpu in CpuId::range(crate::sched::nr_runqueues()) {
        let irqs_off = crate::arch::IrqGuard::save();
        match crate::sched::try_rq(cpu, &irqs_off) {
            Some(rq) => crate::sched::debug::write_rq(w, cpu, &rq),
            None => {
                let _ = writeln!(w, "cpu#{cpu}: runqueue locked");
            }
        };
    }
}
