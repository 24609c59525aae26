//! `yield [-l LOOPS]`: two threads pinned to one CPU hand it to each other
//! with `sched_yield` (`crate::sched::yield_now`), LOOPS times each; reports the time
//! per yield, which is a yield, a pick and a context switch.
//!
//! Both threads wait (yielding) until the other has started, so the timed
//! part always has two runnable threads. A yield that found nobody else to
//! run returns to the same thread; the report counts the yields that handed
//! the CPU over (`handoffs`), so a scheduler that ignores yields shows here.
//! Each thread polls the stop flag once per loop.

use alloc::sync::Arc;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel_hal::cpu::CpuId;

use ::shell::YieldPp;
use sched::TaskParams;

use super::{Control, Job};
use crate::arch;

/// What a run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    /// Yields done (both threads).
    pub yields: u64,
    /// Yields after which the other thread ran.
    pub handoffs: u64,
    /// Wall time from both threads running to both done, ns.
    pub ns: u64,
    /// The CPU both ran on.
    pub cpu: CpuId,
    /// Stopped by Ctrl-C or `kill`.
    pub interrupted: bool,
}

impl Report {
    /// `nsecs_per_yield` (lower is better).
    pub fn metrics(&self) -> super::Metrics {
        super::Metrics {
            list: alloc::vec![super::Metric::lower(
                "nsecs_per_yield",
                self.ns as f64 / self.yields.max(1) as f64
            )],
            interrupted: self.interrupted,
        }
    }
}

// Shared counters, by index.
const READY: usize = 0; // threads started
const T0: usize = 1; // ns when the second one started
const END: usize = 2; // latest finish, ns
const YIELDS: usize = 3;
const HANDOFFS: usize = 4;
const LAST: usize = 5; // 1 + index of the thread that ran last

/// Runs the workload and prints its report.
pub fn run(
    p: YieldPp,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    super::check_resources(2, 0)?;
    let cpu = crate::sched::online_mask()
        .cpus()
        .next()
        .unwrap_or(CpuId::BOOT);
    let res = Arc::new([const { AtomicU64::new(0) }; 6]);
    let mut job = Job::new();
    for me in 1..=2u64 {
        let (res, stop, loops) = (res.clone(), job.stop_flag(), p.loops);
        job.spawn("yield", TaskParams::default(), Some(cpu), move || {
            if res[READY].fetch_add(1, Ordering::AcqRel) == 1 {
                res[T0].store(arch::now_ns(), Ordering::Relaxed);
            }
            while res[READY].load(Ordering::Acquire) < 2 && !stop.stopped() {
                crate::sched::yield_now();
            }
            let (mut done, mut handoffs) = (0u64, 0u64);
            for _ in 0..loops {
                if stop.stopped() {
                    break;
                }
                if res[LAST].swap(me, Ordering::Relaxed) != me {
                    handoffs += 1;
                }
                crate::sched::yield_now();
                // sched_yield() returns to user space.
                crate::sched::exit_to_user_mode();
                done += 1;
            }
            res[END].fetch_max(arch::now_ns(), Ordering::Relaxed);
            res[YIELDS].fetch_add(done, Ordering::Relaxed);
            res[HANDOFFS].fetch_add(handoffs, Ordering::Relaxed);
        })?;
    }
    let interrupted = job.wait(ctl, 10);
    job.join();
    let ld = |i: usize| res[i].load(Ordering::Relaxed);
    let r = Report {
        yields: ld(YIELDS),
        // The first swap of each thread counts the other (or nobody) as
        // the previous runner: only switches between the two count.
        handoffs: ld(HANDOFFS).saturating_sub(1),
        ns: ld(END).saturating_sub(ld(T0)),
        cpu,
        interrupted,
    };
    if interrupted {
        let _ = writeln!(out, "yield: interrupted");
    }
    let per = r.ns / r.yields.max(1);
    let _ = writeln!(
        out,
        "# {} yields by two threads on cpu {}, {} handed the CPU over",
        r.yields, r.cpu, r.handoffs
    );
    let _ = writeln!(
        out,
        "     Total time: {}.{:03} [sec]",
        r.ns / 1_000_000_000,
        r.ns / 1_000_000 % 1000
    );
    let _ = writeln!(out, "     {} ns/yield", per);
    Ok(r)
}
