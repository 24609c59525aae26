//! `spin -d MS [-c CPU] NICE...`: one CPU-bound thread per nice value for MS
//! milliseconds, then each thread's CPU time and share. With every thread on
//! one CPU the shares should follow the weights (nice 0 vs 5: 1024 / 335, so
//! 75.3 % / 24.7 %): the fair-share check of EEVDF.
//!
//! All threads sleep until a common start time (a tick boundary wakes them
//! together), then spin until a common end time, calling `cond_resched()` so
//! the voluntary model still shares the CPU (under `none` the first thread
//! keeps it until its end time: that is what `none` means). The runtime is
//! the scheduler's `sum_exec_runtime`, from `join`.

use alloc::vec::Vec;
use core::fmt::Write;

use ::shell::Spin;
use sched::TaskParams;

use super::{burn, Control, Job, Permille};
use crate::{arch, task};

/// One thread's result.
#[derive(Clone, Copy, Debug)]
pub struct SpinResult {
    /// Its nice value.
    pub nice: i32,
    /// Its thread id.
    pub pid: u32,
    /// CPU time, ns.
    pub runtime_ns: u64,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// One entry per thread, in the order of the nice values.
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
    if p.nices.len() > super::free_slots() {
        return Err(alloc::format!(
            "{} threads asked, {} thread slots free",
            p.nices.len(),
            super::free_slots()
        ));
    }
    let mut job = Job::new();
    // Two ticks from now: every thread is spawned and asleep by then.
    let tick = task::sched_config().tick_ns();
    let start = arch::now_ns() + 2 * tick + 1_000_000;
    let end = start + u64::from(p.duration_ms) * 1_000_000;
    let mut pids = Vec::with_capacity(p.nices.len());
    for &nice in &p.nices {
        let stop = job.stop_flag();
        let params = TaskParams {
            nice,
            ..TaskParams::default()
        };
        let tid = job.spawn("spin", params, p.cpu, move || {
            task::sleep_until_ns(start);
            while arch::now_ns() < end && !stop.stopped() {
                burn(256);
                task::cond_resched();
            }
        })?;
        pids.push(tid.idx());
    }
    let interrupted = job.wait(ctl, 10);
    // The parameters each thread ended with (`nice` / `chrt` may have
    // changed them while it ran, e.g. as a background job), read before the
    // join frees them.
    let finals: Vec<Option<TaskParams>> = pids
        .iter()
        .map(|&p| task::sched_snapshot(task::thread(p)).map(|s| s.params))
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
    for (((nice, pid), st), fin) in p.nices.iter().zip(&pids).zip(&stats).zip(&finals) {
        let r = SpinResult {
            nice: *nice,
            pid: *pid,
            runtime_ns: st.sum_exec_runtime_ns,
        };
        let _ = write!(
            out,
            "nice {} runtime_ms {} share {}%  (pid {}, switches {}",
            r.nice,
            r.runtime_ns / 1_000_000,
            Permille((r.runtime_ns * 1000 + total / 2) / total),
            r.pid,
            st.nvcsw + st.nivcsw
        );
        match fin {
            Some(f) if f.nice != r.nice || f.policy != sched::Policy::Normal => {
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
