//! The soft-lockup detector (`kernel.softlockup_thresh_ms`, 0 = off): a CPU
//! that has had work queued (a runnable thread besides the one running, or
//! any runnable thread while it idles) and made no context switch for longer
//! than that is reported, with every runqueue in the `sched_debug` format.
//! Linux's soft-lockup watchdog catches a CPU stuck in the kernel; here the
//! cause is a thread that spins with preemption disabled, a preemption that
//! never comes (a lost need-resched, a tick that stopped reaching
//! `__schedule`), or an idle CPU that does not pick its queued work. Under
//! the in-kernel tests a report fails the run.
//!
//! It complements the stall watchdog ([`super::stall`]), which is about one
//! thread (runnable, not run). Like it, it runs from CPU 0's tick (every
//! [`SCAN_TICKS`] ticks), after the tick released its runqueue lock, and
//! looks at every online CPU, itself included: a CPU that stopped taking
//! interrupts (its tick stopped and a wakeup IPI never arrived) cannot
//! notice its own lockup, but CPU 0 can. For each CPU it remembers the
//! context-switch count and since when it has stayed there with work
//! queued; a switch, or an empty queue, restarts the clock, and a report
//! restarts it too (one report per threshold while the lockup lasts). The
//! queue is read under a `try_lock` (the scan never waits for a lock); a
//! runqueue that is locked counts as unchanged. CPU 0 locked up with
//! interrupts masked is the one case it cannot see.

use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel_hal::cpu::CpuId;

use crate::percpu::{self, MAX_CPUS};

/// Soft lockups seen since boot.
pub static LOCKUPS: AtomicU64 = AtomicU64::new(0);
/// The CPU of the last soft lockup.
pub static LAST_CPU: AtomicU32 = AtomicU32::new(u32::MAX);
/// While set (a test that provokes a lockup on purpose), lockups are
/// counted and recorded but not reported.
pub static EXPECTED: AtomicBool = AtomicBool::new(false);

/// Told the CPU after each unexpected soft-lockup report (the test runner
/// registers itself: the running test fails).
static NOTIFIER: spin::Once<fn(CpuId)> = spin::Once::new();

/// Registers what hears of an unexpected soft lockup (once; later calls
/// change nothing).
pub fn set_notifier(notify: fn(CpuId)) {
    NOTIFIER.call_once(|| notify);
}

/// Ticks between two scans (20 ms at the default 250 Hz).
pub const SCAN_TICKS: u64 = 5;

/// One CPU's view (written by CPU 0's scan only): the switch count last
/// seen, since when (ns) it has stayed there with work queued (0: not yet
/// seen), and the threads waiting at the last look.
struct CpuState {
    switches: AtomicU64,
    since: AtomicU64,
    waiting: AtomicU32,
}

static STATE: [CpuState; MAX_CPUS] = [const {
    CpuState {
        switches: AtomicU64::new(0),
        since: AtomicU64::new(0),
        waiting: AtomicU32::new(0),
    }
}; MAX_CPUS];

/// The scan, from CPU 0's tick at `now`. The state is kept up to date
/// also while the detector is off, so switching it on never reports an old
/// interval.
pub fn check(now: u64) {
    let online = crate::sched::online_mask();
    for cpu in CpuId::range(crate::sched::nr_runqueues()) {
        if online.has(cpu) {
            observe(cpu, now);
        }
    }
}

/// One CPU: threads waiting there (runnable, not running) and its switches.
fn observe(cpu: CpuId, now: u64) {
    let st = &STATE[cpu.index()];
    let sw = percpu::cpu(cpu).switches.load(Ordering::Relaxed);
    let irqs_off = crate::arch::IrqGuard::save();
    let waiting = match crate::sched::try_rq(cpu, &irqs_off) {
        Some(rq) => {
            let running = u32::from(rq.curr().is_some());
            rq.nr_runnable().saturating_sub(running)
        }
        None => st.waiting.load(Ordering::Relaxed),
    };
    st.waiting.store(waiting, Ordering::Relaxed);
    let since = st.since.load(Ordering::Relaxed);
    if waiting == 0 || since == 0 || sw != st.switches.load(Ordering::Relaxed) {
        st.switches.store(sw, Ordering::Relaxed);
        st.since.store(now.max(1), Ordering::Relaxed);
        return;
    }
    let thresh = crate::sched::sched_config().tunables.softlockup_thresh_ns();
    if thresh == 0 || now.saturating_sub(since) <= thresh {
        return;
    }
    // A CPU that was not running (see `percpu::liveness`) made no switch
    // for that reason: its time counts from when it runs again.
    if let Some(restart) = super::stall::wait_restart(cpu, since, now, thresh) {
        st.since.store(restart.max(1), Ordering::Relaxed);
        return;
    }
    st.since.store(now.max(1), Ordering::Relaxed);
    LOCKUPS.fetch_add(1, Ordering::Relaxed);
    LAST_CPU.store(cpu.as_u32(), Ordering::Relaxed);
    if EXPECTED.load(Ordering::Relaxed) {
        return;
    }
    report(cpu, now - since, waiting, thresh);
    if let Some(notify) = NOTIFIER.get() {
        notify(cpu);
    }
}

/// The locked-up CPU (what runs there, how many wait), then every runqueue
/// (locked if free). Public for the detector's test.
pub fn report(cpu: CpuId, stuck_ns: u64, waiting: u32, thresh_ns: u64) {
    let w = &mut super::stall::Emergency;
    let pc = percpu::cpu(cpu);
    let curr = pc.curr.load(Ordering::Relaxed);
    let name = if curr as usize == super::idle_idx(cpu) as usize {
        "idle"
    } else {
        super::thread(curr).name()
    };
    let _ = writeln!(
        w,
        "softlockup: cpu {} made no context switch for {} ms with {} thread(s) waiting (running: {} '{}', preempt_count {}; kernel.softlockup_thresh_ms = {})",
        cpu,
        stuck_ns / 1_000_000,
        waiting,
        curr,
        name,
        pc.preempt_count.load(Ordering::Relaxed),
        thresh_ns / 1_000_000
    );
    super::stall::write_rqs(w);
}
