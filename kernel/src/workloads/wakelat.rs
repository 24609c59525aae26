//! `wakelat [-d MS] [-c CPU] [-n HOGS] [-p PERIOD_US] [-P POLICY] [-s SLICE_US] [-f PRIO]`:
//! a periodic sleeper among CPU hogs on one CPU, and how late it wakes.
//!
//! HOGS nice-0 threads (with `-f`, SCHED_FIFO at PRIO) spin on CPU `-c` in modelled user code
//! (`crate::sched::run_in_user_mode`, as `lcbench`'s hogs spin in user space, so
//! the sleeper's timer interrupt returns to user space and takes even a
//! lazy request at once); one more thread there, with policy
//! `-P` and custom slice `-s`, sleeps until absolute times PERIOD_US apart
//! and records how late it runs after each (a wakeup later than a whole
//! period skips the periods it missed, so one long wait is one sample).
//! That latency is the wakeup preemption decision of EEVDF made visible:
//! a SCHED_NORMAL sleeper that is owed CPU time preempts the running hog
//! at once; a SCHED_BATCH one never preempts on wakeup and waits for the
//! hog's slice to end; a shorter custom slice gives an earlier deadline.
//! Beside FIFO hogs (`-f`) the sleeper runs only when the fair server
//! (`sched::deadline::DlServer`) lends the fair class time: the latency is
//! how long an interactive fair task, such as the shell, waits under an RT
//! hog.
//! It has the shape of `lcbench wakelat`, the Linux side of
//! `make linux-compare`'s conformance rows: the hogs start first, the
//! sleeper starts 20 ms later and measures for MS ms, and the hogs stop
//! 10 ms after it; the report line has the same fields.
//!
//! The wakeups' phase against the tick is lcbench's too: without `-f` the
//! sleeper sleeps 20 ms and its periods count from its first run after
//! that sleep (lcbench's `usleep` then `clock_gettime`); with `-f` they
//! count from the common start (lcbench's absolute start). The phase
//! decides, without HRTICK, whether a SCHED_BATCH sleeper's wakeup finds
//! the hog's slice used up (a repick at the interrupt's return) or still
//! protected (a wait for the next tick): counting from a time of the
//! shell's instead set one phase for every run (docs/results/linux/aarch64.md,
//! "the SCHED_BATCH sleeper without HRTICK").
//!
//! The samples are kept exactly (one `u64` each, allocated before the run),
//! so p50 and p99 are order statistics, rounded down to whole
//! microseconds as `lcbench` does.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;

use ::shell::Wakelat;
use sched::{Policy, TaskParams};

use super::{burn, Control, Job};
use crate::sync::SpinLock;
use crate::{arch, task};

/// What a run measured (latencies in ns).
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    /// Wakeups measured.
    pub wakeups: u64,
    /// Mean latency.
    pub avg_ns: u64,
    /// Median (per mille 500), whole us.
    pub p50_ns: u64,
    /// 99th percentile, whole us.
    pub p99_ns: u64,
    /// Largest latency.
    pub max_ns: u64,
    /// Stopped by Ctrl-C or `kill`.
    pub interrupted: bool,
}

impl Report {
    /// Average, p50, p99 and maximum wakeup latency (us, lower is better).
    pub fn metrics(&self) -> super::Metrics {
        let us = |ns: u64| ns as f64 / 1e3;
        super::Metrics {
            list: alloc::vec![
                super::Metric::lower("lat_avg_us", us(self.avg_ns)),
                super::Metric::lower("lat_p50_us", us(self.p50_ns)),
                super::Metric::lower("lat_p99_us", us(self.p99_ns)),
                super::Metric::lower("lat_max_us", us(self.max_ns)),
            ],
            interrupted: self.interrupted,
        }
    }
}

/// The sample at or under which `permille` of `sorted` lie, rounded down to
/// a whole microsecond (in ns); 0 when there are none.
/// (`dlperiodic`'s too.)
pub(super) fn percentile(sorted: &[u64], permille: u64) -> u64 {
    let n = sorted.len() as u64;
    if n == 0 {
        return 0;
    }
    let want = (n * permille).div_ceil(1000).max(1);
    sorted[(want - 1) as usize] / 1000 * 1000
}

/// `, fifo PRIO` after the hog count when the hogs are SCHED_FIFO.
struct Fifo(u8);

impl core::fmt::Display for Fifo {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            0 => Ok(()),
            prio => write!(f, ", fifo {prio}"),
        }
    }
}

/// The sleeper's first wakeup is this long after the hogs start.
const LEAD_NS: u64 = 20_000_000;
/// The hogs spin on this long after the sleeper's last wakeup.
const TAIL_NS: u64 = 10_000_000;

/// Runs the workload; prints one report line to `out`.
pub fn run(
    p: Wakelat,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    let period = u64::from(p.period_us) * 1000;
    let measure = u64::from(p.duration_ms) * 1_000_000;
    let cap = (measure / period + 3) as usize;
    super::check_resources(p.hogs as usize + 1, cap * 8)?;
    let mut job = Job::new();
    // Two ticks from now: every thread is spawned and asleep by then.
    let tick = crate::sched::sched_config().tick_ns();
    let start = arch::now_ns() + 2 * tick + 1_000_000;
    let first = start + LEAD_NS;
    let end = first + measure;
    let hog_params = if p.hog_fifo_prio > 0 {
        TaskParams::fifo(p.hog_fifo_prio)
    } else {
        TaskParams::default()
    };
    for _ in 0..p.hogs {
        let stop = job.stop_flag();
        job.spawn("wakelat-hog", hog_params, Some(p.cpu), move || {
            task::sleep_until_ns(start);
            // User-space compute (entered through a return to user
            // space): an interrupt's return to it takes a pending
            // request, lazy ones too, as in Linux.
            crate::sched::run_in_user_mode(|| {
                while arch::now_ns() < end + TAIL_NS && !stop.stopped() {
                    burn(256);
                }
            });
        })?;
    }
    let fifo = p.hog_fifo_prio > 0;
    let params = TaskParams {
        policy: p.policy,
        slice_ns: u64::from(p.slice_us) * 1000,
        ..TaskParams::default()
    };
    let result: Arc<SpinLock<Vec<u64>>> = Arc::new(SpinLock::new(Vec::new()));
    let (res, stop) = (result.clone(), job.stop_flag());
    let mut lat: Vec<u64> = Vec::new();
    lat.try_reserve_exact(cap)
        .map_err(|_| alloc::format!("no memory for {cap} samples"))?;
    job.spawn("wakelat", params, Some(p.cpu), move || {
        let mut next = if fifo {
            task::sleep_until_ns(start);
            first
        } else {
            // lcbench's anchor: 20 ms asleep (`usleep`), then the periods
            // count from the sleeper's first run after it (`clock_gettime`).
            task::sleep_until_ns(first);
            crate::sched::exit_to_user_mode();
            arch::now_ns() + period
        };
        while arch::now_ns() < end && !stop.stopped() {
            task::sleep_until_ns(next);
            // `clock_nanosleep` returns to user space.
            crate::sched::exit_to_user_mode();
            let now = arch::now_ns();
            if lat.len() < lat.capacity() {
                lat.push(now.saturating_sub(next));
            }
            // A late wakeup skips the periods it missed.
            while next + period < now {
                next += period;
            }
            next += period;
        }
        *res.lock() = lat;
    })?;
    let interrupted = job.wait(ctl, 10);
    job.join();
    let mut lat = core::mem::take(&mut *result.lock());
    lat.sort_unstable();
    let n = lat.len() as u64;
    let rep = Report {
        wakeups: n,
        avg_ns: lat.iter().sum::<u64>() / n.max(1),
        p50_ns: percentile(&lat, 500),
        p99_ns: percentile(&lat, 990),
        max_ns: lat.last().copied().unwrap_or(0),
        interrupted,
    };
    if interrupted {
        let _ = writeln!(out, "wakelat: interrupted");
    }
    let policy = match p.policy {
        Policy::Batch => "batch",
        Policy::Idle => "idle",
        _ => "normal",
    };
    let _ = writeln!(
        out,
        "wakelat: {} wakeups, avg {}.{} p50 {} p99 {} max {}.{} us (policy {policy}, slice {} us, {} hogs{})",
        rep.wakeups,
        rep.avg_ns / 1000,
        rep.avg_ns % 1000 / 100,
        rep.p50_ns / 1000,
        rep.p99_ns / 1000,
        rep.max_ns / 1000,
        rep.max_ns % 1000 / 100,
        p.slice_us,
        p.hogs,
        Fifo(p.hog_fifo_prio)
    );
    Ok(rep)
}
