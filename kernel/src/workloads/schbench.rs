//! `schbench [-m MSG_THREADS] [-t WORKERS] [-r SECONDS]`: message threads wake
//! their workers; each worker records its wakeup latency (from the message
//! thread's wake call until the worker runs), does a little work, and sleeps
//! again. Reports latency percentiles like Meta's schbench.
//!
//! Latencies go into a preallocated log-linear histogram of atomics (no
//! allocation while measuring). The message thread wakes its workers, then
//! sleeps one tick; it polls the stop flag each round and, at the end, sets
//! `done` and wakes every worker once more so they all exit.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ::shell::Schbench;
use sched::TaskParams;

use super::{Control, Job};
use crate::sync::Semaphore;
use crate::{arch, task};

const BUCKETS: usize = 64 + 40 * 8;

/// Histogram bucket of `us`: exact below 64, then 8 buckets per power of two.
fn bucket(us: u64) -> usize {
    if us < 64 {
        return us as usize;
    }
    let e = 63 - us.leading_zeros() as usize; // >= 6
    let sub = ((us >> (e - 3)) & 7) as usize;
    (64 + (e - 6) * 8 + sub).min(BUCKETS - 1)
}

/// Lower bound of a bucket, in us.
fn bucket_value(b: usize) -> u64 {
    if b < 64 {
        return b as u64;
    }
    let e = (b - 64) / 8 + 6;
    let sub = ((b - 64) % 8) as u64;
    (8 + sub) << (e - 3)
}

struct Hist {
    b: Vec<AtomicU64>,
    max: AtomicU64,
}

struct Worker {
    sem: Semaphore,
    woken_at: AtomicU64,
}

/// Runs the workload; prints the percentiles.
pub fn run(
    p: Schbench,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<(), alloc::string::String> {
    let n = (p.message_threads * (p.workers + 1)) as usize;
    if n > super::free_slots() {
        return Err(alloc::format!(
            "{n} threads needed, {} thread slots free",
            super::free_slots()
        ));
    }
    let hist = Arc::new(Hist {
        b: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        max: AtomicU64::new(0),
    });
    let end = arch::now_ns() + u64::from(p.runtime_s) * 1_000_000_000;
    let mut job = Job::new();
    for _ in 0..p.message_threads {
        let workers: Arc<Vec<Worker>> = Arc::new(
            (0..p.workers)
                .map(|_| Worker {
                    sem: Semaphore::new(0),
                    woken_at: AtomicU64::new(0),
                })
                .collect(),
        );
        let done = Arc::new(AtomicBool::new(false));
        let mut spawned = 0;
        let mut err = None;
        for w in 0..workers.len() {
            let (ws, h, done) = (workers.clone(), hist.clone(), done.clone());
            let r = job.spawn("schbench-worker", TaskParams::default(), None, move || {
                let me = &ws[w];
                loop {
                    me.sem.down();
                    if done.load(Ordering::Acquire) {
                        break;
                    }
                    let lat =
                        arch::now_ns().saturating_sub(me.woken_at.load(Ordering::Relaxed)) / 1000;
                    h.b[bucket(lat)].fetch_add(1, Ordering::Relaxed);
                    h.max.fetch_max(lat, Ordering::Relaxed);
                    // Think time: ~100 us of work.
                    let until = arch::now_ns() + 100_000;
                    while arch::now_ns() < until {
                        super::burn(64);
                    }
                }
            });
            match r {
                Ok(_) => spawned += 1,
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        let (ws, stop, done2) = (workers.clone(), job.stop_flag(), done.clone());
        let tick = task::sched_config().tick_ns();
        let r = match err {
            Some(e) => Err(e),
            None => job.spawn("schbench-msg", TaskParams::default(), None, move || {
                while arch::now_ns() < end && !stop.stopped() {
                    for w in ws.iter() {
                        w.woken_at.store(arch::now_ns(), Ordering::Relaxed);
                        w.sem.up();
                    }
                    task::sleep_ns(tick);
                }
                done2.store(true, Ordering::Release);
                for w in ws.iter() {
                    w.sem.up();
                }
            }),
        };
        if let Err(e) = r {
            // End the workers of this group ourselves; the job joins them.
            done.store(true, Ordering::Release);
            for w in &workers[..spawned] {
                w.sem.up();
            }
            return Err(e);
        }
    }
    let interrupted = job.wait(ctl, 10);
    job.join();
    if interrupted {
        let _ = writeln!(out, "schbench: interrupted");
    }
    let total: u64 = hist.b.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    let _ = writeln!(
        out,
        "Wakeup Latencies percentiles (usec) runtime {} (s) ({total} total samples)",
        p.runtime_s
    );
    for (pm, label) in [
        (500u64, "50.0"),
        (900, "90.0"),
        (990, "99.0"),
        (999, "99.9"),
    ] {
        let want = (total * pm).div_ceil(1000).max(1);
        let mut seen = 0;
        let mut v = 0;
        for (i, c) in hist.b.iter().enumerate() {
            seen += c.load(Ordering::Relaxed);
            if seen >= want {
                v = bucket_value(i);
                break;
            }
        }
        let _ = writeln!(out, "\t  {label}th: {v}");
    }
    let _ = writeln!(out, "\t  max: {}", hist.max.load(Ordering::Relaxed));
    Ok(())
}
