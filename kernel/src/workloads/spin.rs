//! `spin -d MS [-c CPU] SPEC...`: one CPU-bound thread per SPEC for MS
//! milliseconds, then each thread's CPU time and share. With every thread on
//! one CPU the shares should follow the weights (nice 0 vs 5: 1024 / 335, so
//! 75.3 % / 24.7 %): the fair-share check of EEVDF.
//!
//! A SPEC ([`SpinThread`]) is a nice value, or a policy (SCHED_BATCH,
//! SCHED_IDLE), a custom slice, or a duty cycle: a `duty:RUN_US:SLEEP_US`
//! thread sleeps SLEEP_US each time it has used another RUN_US of CPU time
//! (its own runtime, as Linux's `CLOCK_THREAD_CPUTIME_ID` counts it), which
//! shows what PLACE_LAG and DELAY_DEQUEUE do to a sleeper's share.
//!
//! All threads sleep until a common start time (a tick boundary wakes them
//! together), then spin until a common end time in modelled user code
//! (`crate::sched::run_in_user_mode`), as `lcbench spin`'s threads spin in user
//! space: an interrupt's return to them is a return to user space, where
//! every preemption model takes a pending request (the tick's at the end of
//! a slice, a wakeup's), lazy ones included. The duty cycle's runtime reads
//! and sleeps are modelled syscalls (`crate::sched::syscall`). The runtime is the
//! scheduler's `sum_exec_runtime`, from `join`.

use alloc::vec::Vec;
use core::fmt::Write;

use ::shell::{Spin, SpinThread};
use sched::TaskParams;

use super::{burn, Control, Job, Permille};
use crate::{arch, task};

/// One thread's result.
#[derive(Clone, Copy, Debug)]
pub struct SpinResult {
    /// Its SPEC.
    pub spec: SpinThread,
    /// Its thread id.
    pub pid: u32,
    /// CPU time, ns.
    pub runtime_ns: u64,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// One entry per thread, in the order of the SPECs.
    pub threads: Vec<SpinResult>,
    /// Stopped by Ctrl-C or `kill`.
    pub interrupted: bool,
}

impl Report {
    /// CPU time of all threads (ms, higher is better) and the first
    /// thread's share of it (%).
    pub fn metrics(&self) -> super::Metrics {
        let total: u64 = self.threads.iter().map(|t| t.runtime_ns).sum();
        let first = self.threads.first().map_or(0, |t| t.runtime_ns);
        super::Metrics {
            list: alloc::vec![
                super::Metric::higher("runtime_ms", total as f64 / 1e6),
                super::Metric::higher("share0_pct", 100.0 * first as f64 / total.max(1) as f64),
            ],
            interrupted: self.interrupted,
        }
    }
}

/// Runs the workload; prints one line per thread to `out`.
pub fn run(
    p: &Spin,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    if p.threads.len() > super::free_slots() {
        return Err(alloc::format!(
            "{} threads asked, {} thread slots free",
            p.threads.len(),
            super::free_slots()
        ));
    }
    let mut job = Job::new();
    // Two ticks from now: every thread is spawned and asleep by then.
    let tick = crate::sched::sched_config().tick_ns();
    let start = arch::now_ns() + 2 * tick + 1_000_000;
    let end = start + u64::from(p.duration_ms) * 1_000_000;
    let mut pids = Vec::with_capacity(p.threads.len());
    for spec in &p.threads {
        let stop = job.stop_flag();
        let params = TaskParams {
            policy: spec.policy,
            nice: spec.nice,
            slice_ns: u64::from(spec.slice_us) * 1000,
            ..TaskParams::default()
        };
        let duty = spec
            .duty_us
            .map(|(r, s)| (u64::from(r) * 1000, u64::from(s) * 1000));
        let tid = job.spawn("spin", params, p.cpu, move || {
            task::sleep_until_ns(start);
            let me = task::current();
            // Its CPU time (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`).
            let runtime = || crate::sched::syscall(|| crate::sched::task_runtime_ns(me));
            crate::sched::run_in_user_mode(|| {
                // Duty cycle: the runtime at which the next sleep is due.
                let mut due = duty.map_or(0, |(run, _)| runtime() + run);
                while arch::now_ns() < end && !stop.stopped() {
                    match duty {
                        // As `lcbench`'s duty loop: a read of its CPU time
                        // every iteration, nothing between, so the read
                        // that ends its request comes within one syscall of
                        // the request's end (with `burn(256)` between reads
                        // it came up to 11.6 µs late under `-icount
                        // shift=2`).
                        Some((run, sleep)) => {
                            if runtime() >= due {
                                crate::sched::syscall(|| task::sleep_ns(sleep));
                                due = runtime() + run;
                            }
                        }
                        None => burn(256),
                    }
                }
            });
        })?;
        pids.push(tid.idx());
    }
    let interrupted = job.wait(ctl, 10);
    // The parameters each thread ended with (`nice` / `chrt` may have
    // changed them while it ran, e.g. as a background job), read before the
    // join frees them.
    let finals: Vec<Option<TaskParams>> = pids
        .iter()
        .map(|&p| crate::sched::sched_snapshot(task::thread(p)).map(|s| s.params))
        .collect();
    let stats = job.join();
    let total: u64 = stats
        .iter()
        .map(|s| s.sum_exec_runtime_ns)
        .sum::<u64>()
        .max(1);
    if interrupted {
        let _ = writeln!(out, "spin: interrupted");
    }
    let mut rep = Report {
        threads: Vec::with_capacity(stats.len()),
        interrupted,
    };
    for (((spec, pid), st), fin) in p.threads.iter().zip(&pids).zip(&stats).zip(&finals) {
        let r = SpinResult {
            spec: *spec,
            pid: *pid,
            runtime_ns: st.sum_exec_runtime_ns,
        };
        // A plain nice value prints as before (`nice N`), the other SPECs
        // as they were typed.
        if r.spec == SpinThread::nice(r.spec.nice) {
            let _ = write!(out, "nice {}", r.spec.nice);
        } else {
            let _ = write!(out, "{}", r.spec);
        }
        let _ = write!(
            out,
            " runtime_ms {} share {}%  (pid {}, switches {}",
            r.runtime_ns / 1_000_000,
            Permille((r.runtime_ns * 1000 + total / 2) / total),
            r.pid,
            st.nvcsw + st.nivcsw
        );
        match fin {
            Some(f) if f.nice != spec.nice || f.policy != spec.policy => {
                let _ = writeln!(out, "; ended as {} nice {})", f.policy.name(), f.nice);
            }
            _ => {
                let _ = writeln!(out, ")");
            }
        }
        rep.threads.push(r);
    }
    Ok(rep)
}
