//! In-kernel tests of the scheduler integration (tick and wakeup preemption,
//! fairness, buddies, latency, preemption models), of the thread API and of the
//! sync primitives, plus the helpers they share.
//!
//! Timing bounds are derived from the tick period and the base slice at run
//! time (so they hold for any `hz=`), and each test stays well under a second
//! of guest time so the suite is quick under TCG too.

mod active_balance;
mod call;
mod capacity;
mod classes;
mod compare;
mod console;
mod cpus;
mod cputime;
mod fbcon;
mod groups;
mod highmem;
mod hotplug;
mod hrtick;
#[cfg(feature = "lockdep")]
mod lockdep;
mod sched;
mod server;
mod smp;
mod stacks;
mod stall;
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
    crate::sched::sched_config().tick_ns()
}

/// The effective base slice in ns.
pub fn slice_ns() -> u64 {
    crate::sched::sched_config().tunables.base_slice_ns()
}

/// Ticks seen by this CPU.
pub fn ticks() -> u64 {
    percpu::this_cpu().ticks.load(Ordering::Relaxed)
}

/// Sets the preemption model (the runner restores the boot one per test).
pub fn set_preempt(mode: PreemptMode) {
    crate::sched::sched_config().tunables.set_preempt_mode(mode);
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

/// How long a progress check tolerates no progress at all (the runner's
/// bound, [`crate::ktest::STALL_NS`], where it is explained).
pub use crate::ktest::STALL_NS;

/// After a stall, how long [`wait_progress`] watches whether it resumes
/// (stall + watch stay below the runner's 10 s watchdog).
const RESUME_WATCH_MS: u64 = 4000;

/// Waits until `done()`, checking every `poll_ms` (sleeping, or spinning
/// when `poll_ms` is 0) that `progress()` keeps changing: fails with `what`
/// and the last progress value when it stood still for [`STALL_NS`]. A
/// progress check, not a deadline: a slow host makes the wait longer, never
/// the verdict different; a lost wakeup or a deadlock stops the count.
pub fn wait_progress(
    what: &str,
    poll_ms: u64,
    done: impl Fn() -> bool,
    progress: impl Fn() -> u64,
) -> Result<(), alloc::string::String> {
    let mut last = progress();
    let mut since = arch::now_ns();
    while !done() {
        let p = progress();
        let now = arch::now_ns();
        if p != last {
            last = p;
            since = now;
            crate::ktest::progress();
        } else if let Some(restart) = (now - since > STALL_NS)
            .then(|| task::stall::machine_wait_restart(since, now, STALL_NS))
            .flatten()
        {
            // A CPU was not running for part of the wait (a vCPU the host
            // did not run): the wait counts from when it runs again.
            crate::kprintln!(
                "    {}: no progress for {} ms while a CPU was not running; counting again from {} ms",
                what,
                (now - since) / 1_000_000,
                restart / 1_000_000
            );
            since = restart;
        } else if now - since > STALL_NS {
            // A failure either way; the dump and whether it moves again
            // within another few seconds tell a lost wakeup (stays stuck)
            // from a starved vCPU (resumes) for whoever reads the log.
            task::dump_threads();
            let resumed = (0..RESUME_WATCH_MS / 10).find_map(|k| {
                task::sleep_ms(10);
                (progress() != p || done()).then_some(10 * (k + 1))
            });
            return Err(alloc::format!(
                "{}: no progress for {} ms (stuck at {}); {}",
                what,
                STALL_NS / 1_000_000,
                p,
                match resumed {
                    Some(ms) => alloc::format!("it moved again {ms} ms later"),
                    None => alloc::format!("still stuck {RESUME_WATCH_MS} ms later"),
                }
            ));
        }
        if poll_ms == 0 {
            core::hint::spin_loop();
        } else {
            task::sleep_ms(poll_ms);
        }
    }
    Ok(())
}

/// A CPU-bound thread that counts loop iterations until told to stop.
/// Dropping one that was not stopped (a test that failed early) stops and
/// joins it, so a failed test leaves no thread behind.
pub struct Hog {
    pub tid: Tid,
    pub idx: u32,
    pub count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    joined: bool,
}

impl Hog {
    /// Spawns a hog with `params`.
    pub fn spawn(name: &'static str, params: TaskParams) -> Result<Hog, alloc::string::String> {
        Hog::spawn_with(name, params, None)
    }

    /// Spawns a hog with `params`, allowed only on the CPUs of `mask`.
    pub fn spawn_on(
        name: &'static str,
        params: TaskParams,
        mask: crate::cpumask::CpuMask,
    ) -> Result<Hog, alloc::string::String> {
        Hog::spawn_with(name, params, Some(mask))
    }

    fn spawn_with(
        name: &'static str,
        params: TaskParams,
        mask: Option<crate::cpumask::CpuMask>,
    ) -> Result<Hog, alloc::string::String> {
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (count.clone(), stop.clone());
        let body = move || {
            while !s.load(Ordering::Relaxed) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        };
        let tid = match mask {
            Some(m) => task::spawn_on(name, params, m, body),
            None => task::spawn(name, params, body),
        }
        .map_err(|e| alloc::format!("spawn {}: {:?}", name, e))?;
        Ok(Hog {
            tid,
            idx: tid.idx(),
            count,
            stop,
            joined: false,
        })
    }

    /// The hog's CPU time so far.
    pub fn runtime_ns(&self) -> u64 {
        crate::sched::task_runtime_ns(task::thread(self.idx))
    }

    /// Stops and joins it.
    pub fn stop(mut self) -> Result<task::ExitStats, alloc::string::String> {
        self.joined = true;
        self.stop.store(true, Ordering::Relaxed);
        task::join(self.tid).map_err(|e| alloc::format!("join: {:?}", e))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        if !self.joined {
            self.stop.store(true, Ordering::Relaxed);
            let _ = task::join(self.tid);
        }
    }
}

/// Parameters with a nice value.
pub fn nice(n: i32) -> TaskParams {
    TaskParams {
        nice: n,
        ..TaskParams::default()
    }
}

/// Sets the fair server's runtime and period (`kernel.sched_fair_server_*`)
/// until dropped, then restores Linux's defaults (as the runner does between
/// tests). A test that asserts that RT starves a fair task completely turns
/// the server off with `FairServer::set(0, ..)`: with it on (the default, as
/// in Linux), a fair task starved for most of a period is served.
pub struct FairServer;

impl FairServer {
    pub fn set(runtime_ns: u64, period_ns: u64) -> Result<FairServer, alloc::string::String> {
        set_fair_server(runtime_ns, period_ns)?;
        Ok(FairServer)
    }
}

impl Drop for FairServer {
    fn drop(&mut self) {
        let _ = set_fair_server(
            ::sched::deadline::FAIR_SERVER_RUNTIME_NS,
            ::sched::deadline::FAIR_SERVER_PERIOD_NS,
        );
    }
}

/// Sets both fair-server tunables, in the order that keeps runtime <= period
/// at every step.
pub fn set_fair_server(runtime_ns: u64, period_ns: u64) -> Result<(), alloc::string::String> {
    let t = &crate::sched::sched_config().tunables;
    let set = |k: &str, v: u64| {
        t.set(k, &alloc::format!("{v}"))
            .map(|_| ())
            .map_err(|e| alloc::format!("{k}={v}: {e}"))
    };
    let (runtime_key, period_key) = (
        "kernel.sched_fair_server_runtime_ns",
        "kernel.sched_fair_server_period_ns",
    );
    if runtime_ns <= t.fair_server().1 {
        set(runtime_key, runtime_ns)?;
        set(period_key, period_ns)
    } else {
        set(period_key, period_ns)?;
        set(runtime_key, runtime_ns)
    }
}
