//! `cyclictest [-t THREADS] [-i INTERVAL_US] [-l LOOPS] [-p PRIO] [-L GROUPS]
//! [-a CPU]`: periodic threads that sleep until absolute times `start + k *
//! interval` and measure how late they wake (rt-tests' cyclictest). `-p` > 0
//! runs them SCHED_FIFO; `-a` pins them to one CPU (rt-tests' `-a CPU`).
//!
//! `-L GROUPS` measures under load, the way rt-tests is usually run
//! (`hackbench -T -p -g GROUPS -l 1000000 & cyclictest ...; kill %1`): a
//! pipe, thread-mode [`super::hackbench`] starts first in a thread of its
//! own, keeps running while the measuring threads run, and is stopped
//! (through its `Control`, as Ctrl-C would) and joined after them. Its
//! threads are not part of the report.
//!
//! Each sleep ends at its deadline through the CPU's one-shot timer event
//! (`task::sleep_until_ns`), so the latency is the timer interrupt, the
//! wakeup and the switch, not the wait for the next tick. Each thread polls
//! the stop flag once per period. A thread that wakes more than a period
//! late skips the periods it missed ([`next_period_ns`]), as rt-tests'
//! cyclictest does.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ::shell::{Cyclictest, Hackbench};
use sched::{Policy, TaskParams};

use super::{Control, Job};
use crate::sync::SpinLock;
use crate::task::Tid;
use crate::{arch, task};

/// What the load's thread and the measurement share.
struct LoadShared {
    /// Set to stop the load (its hackbench's `Control::interrupted`).
    stop: AtomicBool,
    /// The hackbench spawned all its threads.
    started: AtomicBool,
    /// The load's thread is about to exit.
    done: AtomicBool,
    /// Why the hackbench did not run.
    error: SpinLock<Option<alloc::string::String>>,
}

/// The load's hackbench sees the shared stop flag as its Ctrl-C.
struct LoadCtl(Arc<LoadShared>);

impl Control for LoadCtl {
    fn interrupted(&mut self) -> bool {
        self.0.stop.load(Ordering::Acquire)
    }

    fn started(&mut self, _threads: &[Tid]) {
        self.0.started.store(true, Ordering::Release);
    }
}

/// A running `-L` load.
struct Load {
    shared: Arc<LoadShared>,
    tid: Tid,
}

impl Load {
    /// Starts `hackbench -T -p -g GROUPS -l 1000000` in a thread of its own
    /// and returns once all its threads run (or with its error).
    fn start(groups: u32) -> Result<Load, alloc::string::String> {
        let hb = Hackbench {
            groups,
            loops: 1_000_000,
            pipe: true,
            threads: true,
            ..Hackbench::default()
        };
        let shared = Arc::new(LoadShared {
            stop: AtomicBool::new(false),
            started: AtomicBool::new(false),
            done: AtomicBool::new(false),
            error: SpinLock::new(None),
        });
        let sh = shared.clone();
        let tid = task::spawn("cyclictest-load", TaskParams::default(), move || {
            let mut sink = alloc::string::String::new();
            if let Err(e) = super::hackbench::run(hb, &mut LoadCtl(sh.clone()), &mut sink) {
                *sh.error.lock() = Some(e);
            }
            sh.done.store(true, Ordering::Release);
        })
        .map_err(|e| alloc::format!("cannot start the load: {e:?}"))?;
        let load = Load { shared, tid };
        while !load.shared.started.load(Ordering::Acquire)
            && !load.shared.done.load(Ordering::Acquire)
        {
            task::sleep_ms(1);
        }
        if !load.shared.started.load(Ordering::Acquire) {
            let e = load.shared.error.lock().take();
            load.stop();
            return Err(alloc::format!(
                "load (hackbench -T -p -g {groups}): {}",
                e.as_deref().unwrap_or("ended before it started")
            ));
        }
        Ok(load)
    }

    /// Stops the load and joins its thread (which joined the hackbench's).
    fn stop(self) {
        self.shared.stop.store(true, Ordering::Release);
        let _ = task::join(self.tid);
    }
}

/// One thread's counters: count, min, max, sum, last (ns).
struct Lat([AtomicU64; 5]);

/// What a run measured, over all threads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    /// Mean latency, ns.
    pub avg_ns: u64,
    /// Largest latency, ns.
    pub max_ns: u64,
    /// Stopped by Ctrl-C or `kill`.
    pub interrupted: bool,
}

impl Report {
    /// Average and maximum latency (us, lower is better).
    pub fn metrics(&self) -> super::Metrics {
        super::Metrics {
            list: alloc::vec![
                super::Metric::lower("lat_avg_us", self.avg_ns as f64 / 1e3),
                super::Metric::lower("lat_max_us", self.max_ns as f64 / 1e3),
            ],
            interrupted: self.interrupted,
        }
    }
}

/// Runs the workload; one Linux-like line per thread.
pub fn run(
    p: Cyclictest,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    // (`measure` checks the thread slots, beside the load if there is one;
    // a refusal stops the load again.)
    let load = match p.load_groups {
        0 => None,
        g => Some(Load::start(g)?),
    };
    let r = measure(p, ctl, out);
    if let Some(l) = load {
        l.stop();
    }
    r
}

/// The deadline after `next_ns` for a thread that woke at `now_ns`: the
/// next period boundary (`next_ns + k * interval_ns`, k >= 1) not before
/// `now_ns`. Periods that passed while the thread was late are skipped and
/// give no sample, as in rt-tests' cyclictest (`while (tsgreater(&now,
/// &next))` in its `timerthread`): one late wakeup is one late sample, not
/// also the late samples of the periods behind it, which would not sleep.
pub fn next_period_ns(next_ns: u64, interval_ns: u64, now_ns: u64) -> u64 {
    let n = next_ns.saturating_add(interval_ns);
    if now_ns <= n || interval_ns == 0 {
        return n;
    }
    n.saturating_add((now_ns - n).div_ceil(interval_ns) * interval_ns)
}

/// The measuring threads and their report.
fn measure(
    p: Cyclictest,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    if p.threads as usize > super::free_slots() {
        return Err(alloc::format!(
            "{} threads asked, {} thread slots free",
            p.threads,
            super::free_slots()
        ));
    }
    let params = if p.prio > 0 {
        TaskParams {
            policy: Policy::Fifo,
            rt_priority: p.prio as u8,
            ..TaskParams::default()
        }
    } else {
        TaskParams::default()
    };
    let interval = u64::from(p.interval_us) * 1000;
    let mut job = Job::new();
    let mut lats = Vec::new();
    let mut pids = Vec::new();
    for _ in 0..p.threads {
        let lat = Arc::new(Lat([
            AtomicU64::new(0),
            AtomicU64::new(u64::MAX),
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
        ]));
        let (l, stop, loops) = (lat.clone(), job.stop_flag(), p.loops);
        let tid = job.spawn("cyclictest", params, p.cpu, move || {
            let mut next = arch::now_ns() + interval;
            for _ in 0..loops {
                if stop.stopped() {
                    break;
                }
                task::sleep_until_ns(next);
                let now = arch::now_ns();
                let d = now.saturating_sub(next);
                next = next_period_ns(next, interval, now);
                let c = &l.0;
                c[0].fetch_add(1, Ordering::Relaxed);
                c[1].fetch_min(d, Ordering::Relaxed);
                c[2].fetch_max(d, Ordering::Relaxed);
                c[3].fetch_add(d, Ordering::Relaxed);
                c[4].store(d, Ordering::Relaxed);
            }
        })?;
        lats.push(lat);
        pids.push(tid.idx());
    }
    let interrupted = job.wait(ctl, 10);
    job.join();
    if interrupted {
        let _ = writeln!(out, "cyclictest: interrupted");
    }
    let _ = writeln!(
        out,
        "# latencies in us; each sleep ends at its deadline through the CPU's one-shot timer event"
    );
    if p.load_groups > 0 {
        let _ = writeln!(
            out,
            "# under load: hackbench -T -p -g {} ran beside it",
            p.load_groups
        );
    }
    let (mut n_all, mut sum_all, mut max_all) = (0, 0, 0);
    for (i, (l, pid)) in lats.iter().zip(&pids).enumerate() {
        let c = &l.0;
        let n = c[0].load(Ordering::Relaxed);
        n_all += n;
        sum_all += c[3].load(Ordering::Relaxed);
        max_all = max_all.max(c[2].load(Ordering::Relaxed));
        let min = if n == 0 {
            0
        } else {
            c[1].load(Ordering::Relaxed)
        };
        let _ = writeln!(
            out,
            "T:{i:2} ({pid:5}) P:{:2} I:{} C:{n:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
            p.prio,
            p.interval_us,
            min / 1000,
            c[4].load(Ordering::Relaxed) / 1000,
            c[3].load(Ordering::Relaxed) / n.max(1) / 1000,
            c[2].load(Ordering::Relaxed) / 1000
        );
    }
    Ok(Report {
        avg_ns: sum_all / n_all.max(1),
        max_ns: max_all,
        interrupted,
    })
}
