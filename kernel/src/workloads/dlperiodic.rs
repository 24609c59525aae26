//! `dlperiodic [-n TASKS] [-r US] [-D US] [-p US] [-w US] [-d MS]`: periodic
//! SCHED_DEADLINE threads and whether their jobs meet their deadlines.
//!
//! TASKS threads are spawned as fair threads, allowed every online CPU,
//! then made SCHED_DEADLINE (runtime, deadline, period) with
//! `sched_setattr`, as a Linux program forks and then calls
//! `sched_setattr`: admission control may refuse one (the run then stops,
//! and the error line says why, with Linux's errno). They are released
//! together two ticks after the spawn, then every period; each job burns
//! WORK_US of the thread's own CPU time (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`,
//! in modelled user code) and records its response time, its end minus its
//! release. A job that ends after release + deadline missed it; a late job
//! delays the next one, which starts at once (nothing is skipped, so
//! lateness shows in every later job instead of being forgotten).
//!
//! Work is CPU time, not wall time: under QEMU `-icount` the vCPUs take
//! turns on one host thread and the clock counts every vCPU's
//! instructions, so a fixed stretch of wall time spun on one CPU would be
//! charged the other vCPUs' turns (see the ktest
//! `deadline_periodic_tasks_meet_their_deadlines`).
//!
//! It has the shape of `lcbench dl periodic`, the Linux side of
//! `make linux-compare`'s deadline rows (after rt-tests' cyclicdeadline),
//! and prints the same report line. The response times are kept exactly
//! (allocated before the run); p50 and p99 are order statistics rounded
//! down to whole microseconds, as `lcbench` rounds them.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;

use ::shell::Dlperiodic;
use sched::TaskParams;

use super::wakelat::percentile;
use super::{burn, Control, Job};
use crate::sync::SpinLock;
use crate::{arch, task};

/// What a run measured (times in ns).
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    /// Jobs that ran.
    pub jobs: u64,
    /// Jobs that ended after their absolute deadline.
    pub missed: u64,
    /// Mean response time.
    pub avg_ns: u64,
    /// Median, whole us.
    pub p50_ns: u64,
    /// 99th percentile, whole us.
    pub p99_ns: u64,
    /// Largest response time.
    pub max_ns: u64,
}

/// Runs the workload; prints one report line to `out`.
pub fn run(
    p: Dlperiodic,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    let period = u64::from(p.period_us) * 1000;
    let deadline = u64::from(p.deadline_us) * 1000;
    let work = u64::from(p.work_us) * 1000;
    let length = u64::from(p.duration_ms) * 1_000_000;
    let cap = (length / period + 2) as usize;
    let n = p.tasks as usize;
    super::check_resources(n, n * cap * 8 * 2)?;
    let params = TaskParams::deadline(u64::from(p.runtime_us) * 1000, deadline, period);
    let all: Arc<SpinLock<Vec<u64>>> = Arc::new(SpinLock::new(Vec::new()));
    all.lock()
        .try_reserve_exact(n * cap)
        .map_err(|_| alloc::format!("no memory for {} samples", n * cap))?;
    let mut job = Job::new();
    // Two ticks from now: every thread is spawned, made a deadline thread
    // and asleep by then.
    let tick = crate::sched::sched_config().tick_ns();
    let start = arch::now_ns() + 2 * tick + 1_000_000;
    let end = start + length;
    let mut refused = None;
    for i in 0..n {
        let mut resp: Vec<u64> = Vec::new();
        resp.try_reserve_exact(cap)
            .map_err(|_| alloc::format!("no memory for {cap} samples"))?;
        let (res, stop) = (all.clone(), job.stop_flag());
        let tid = job.spawn("dlperiodic", TaskParams::default(), None, move || {
            task::sleep_until_ns(start);
            let me = task::current();
            // Its CPU time (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`).
            let cpu_ns = || crate::sched::syscall(|| crate::sched::task_runtime_ns(me));
            crate::sched::run_in_user_mode(|| {
                let mut release = start;
                while release + period <= end && !stop.stopped() && resp.len() < resp.capacity() {
                    // `clock_nanosleep(TIMER_ABSTIME)`: at once if late.
                    crate::sched::syscall(|| task::sleep_until_ns(release));
                    let c0 = cpu_ns();
                    while cpu_ns() - c0 < work && !stop.stopped() {
                        burn(256);
                    }
                    resp.push(arch::now_ns() - release);
                    release += period;
                }
            });
            res.lock().extend_from_slice(&resp);
        });
        let tid = match tid {
            Ok(t) => t,
            Err(e) => {
                refused = Some(alloc::format!("thread {} of {n}: {e}", i + 1));
                break;
            }
        };
        // Allowed every online CPU (SCHED_DEADLINE needs it), whatever the
        // spawning thread's own mask.
        if let Err(e) = crate::sched::set_affinity(tid, crate::sched::online_mask()) {
            refused = Some(alloc::format!("thread {} of {n}: affinity: {e:?}", i + 1));
            break;
        }
        if let Err(e) = crate::sched::sched_setattr(task::thread(tid.idx()), params) {
            refused = Some(match e {
                sched::RqError::Params(pe) => alloc::format!(
                    "thread {} of {n} (pid {}): {pe} ({})",
                    i + 1,
                    tid.idx(),
                    match pe {
                        sched::task::ParamsError::DlBandwidthExceeded => "EBUSY",
                        sched::task::ParamsError::DlAffinityRestricted => "EPERM",
                        _ => "EINVAL",
                    }
                ),
                e => alloc::format!("thread {} of {n} (pid {}): {e:?}", i + 1, tid.idx()),
            });
            break;
        }
    }
    if let Some(why) = refused {
        job.stop();
        job.join();
        return Err(why);
    }
    let interrupted = job.wait(ctl, 10);
    job.join();
    let mut r = core::mem::take(&mut *all.lock());
    r.sort_unstable();
    let jobs = r.len() as u64;
    let rep = Report {
        jobs,
        missed: r.iter().filter(|&&x| x > deadline).count() as u64,
        avg_ns: r.iter().sum::<u64>() / jobs.max(1),
        p50_ns: percentile(&r, 500),
        p99_ns: percentile(&r, 990),
        max_ns: r.last().copied().unwrap_or(0),
    };
    if interrupted {
        let _ = writeln!(out, "dlperiodic: interrupted");
    }
    let late_us = (rep.max_ns as i64 - deadline as i64) / 1000;
    let _ = writeln!(
        out,
        "dlperiodic: {} tasks runtime {} deadline {} period {} work {} us: {} jobs, {} missed, response avg {}.{} p50 {} p99 {} max {}.{} us, lateness max {} us",
        p.tasks,
        p.runtime_us,
        p.deadline_us,
        p.period_us,
        p.work_us,
        rep.jobs,
        rep.missed,
        rep.avg_ns / 1000,
        rep.avg_ns % 1000 / 100,
        rep.p50_ns / 1000,
        rep.p99_ns / 1000,
        rep.max_ns / 1000,
        rep.max_ns % 1000 / 100,
        late_us
    );
    Ok(rep)
}
