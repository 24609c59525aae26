//! In-kernel tests of the scheduler integration (tick and wakeup preemption,
//! fairness, buddies, latency, preemption models), of the thread API and of the
//! sync primitives, plus the helpers they share.
//!
//! Timing bounds are derived from the tick period and the base slice at run
//! time (so they hold for any `hz=`), and each test stays well under a second
//! of guest time so the suite is quick under TCG too.

mod call;
mod classes;
mod compare;
mod console;
mod sched;
mod smp;
mod sync;
mod threads;
mod workloads;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ::sched::{PreemptMode, TaskParams};

use crate::arch;
use crate::percpu;
use crate::task::{self, Tid};

/// The tick period in ns.
pub fn tick_ns() -> u64 {
    task::sched_config().tick_ns()
}

/// The effective base slice in ns.
pub fn slice_ns() -> u64 {
    task::sched_config().tunables.base_slice_ns()
}

/// Ticks seen by this CPU.
pub fn ticks() -> u64 {
    percpu::this_cpu().ticks.load(Ordering::Relaxed)
}

/// Sets the preemption model (the runner restores the boot one per test).
pub fn set_preempt(mode: PreemptMode) {
    task::sched_config().tunables.set_preempt_mode(mode);
}

/// Spins (without sleeping) until the tick counter changes; returns the new
/// value and the time it was seen.
pub fn wait_tick_edge() -> (u64, u64) {
    let t0 = ticks();
    loop {
        let t = ticks();
        if t != t0 {
            return (t, arch::now_ns());
        }
        core::hint::spin_loop();
    }
}

/// Spins until the clock reads `deadline_ns`.
pub fn spin_until(deadline_ns: u64) {
    while arch::now_ns() < deadline_ns {
        core::hint::spin_loop();
    }
}

/// A CPU-bound thread that counts loop iterations until told to stop.
pub struct Hog {
    pub tid: Tid,
    pub idx: u32,
    pub count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Hog {
    /// Spawns a hog with `params`.
    pub fn spawn(name: &'static str, params: TaskParams) -> Result<Hog, alloc::string::String> {
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (count.clone(), stop.clone());
        let tid = task::spawn(name, params, move || {
            while !s.load(Ordering::Relaxed) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        })
        .map_err(|e| alloc::format!("spawn {}: {:?}", name, e))?;
        Ok(Hog {
            tid,
            idx: tid.idx(),
            count,
            stop,
        })
    }

    /// The hog's CPU time so far.
    pub fn runtime_ns(&self) -> u64 {
        task::task_runtime_ns(task::thread(self.idx))
    }

    /// Stops and joins it.
    pub fn stop(self) -> Result<task::ExitStats, alloc::string::String> {
        self.stop.store(true, Ordering::Relaxed);
        task::join(self.tid).map_err(|e| alloc::format!("join: {:?}", e))
    }
}

/// Parameters with a nice value.
pub fn nice(n: i32) -> TaskParams {
    TaskParams {
        nice: n,
        ..TaskParams::default()
    }
}
