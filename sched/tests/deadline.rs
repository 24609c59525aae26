//! SCHED_DEADLINE: EDF above RT, CBS throttling and replenishment, a
//! cyclictest-like periodic workload with no missed deadline under admitted
//! load, admission control, and the attribute checks. One CPU, HZ=1000
//! (the budget is charged at the tick: every figure below is a whole number
//! of 1 ms ticks).

use crate::common;
use common::cpu_id;

use std::sync::Arc;

use common::plat::Plat;
use common::{H, MS};
use sched::smp::{LifecycleError, Scheduler};
use sched::task::ParamsError;
use sched::{PrevAction, SchedClass, SchedConfig, SchedTask, TaskId, TaskParams, WakeFlags};

fn dl(runtime_ms: u64, deadline_ms: u64, period_ms: u64) -> TaskParams {
    TaskParams::deadline(runtime_ms * MS, deadline_ms * MS, period_ms * MS)
}

#[test]
fn deadline_is_the_highest_class() {
    assert!(SchedClass::Dl.above(SchedClass::Rt));
    assert_eq!(dl(1, 10, 10).policy.class(), SchedClass::Dl);
    let mut h = H::one();
    h.spawn(1, TaskParams::fifo(99));
    h.pick();
    let d = h.spawn(2, dl(1, 10, 10));
    assert!(d.preempt, "a deadline task preempts FIFO 99");
    h.pick();
    assert_eq!(h.curr(), Some(2));
}

#[test]
fn spinners_get_exactly_their_runtime_every_period() {
    // Two deadline spinners (10/100 and 20/50 ms), a FIFO hog and a fair
    // spinner: EDF serves each deadline task its runtime per period, no
    // more (the CBS throttles it) and no later than its deadline; the
    // rest goes to RT, and the fair server still serves the fair spinner.
    let mut h = H::one();
    h.spawn(3, TaskParams::fifo(50));
    h.spawn(4, TaskParams::default());
    h.spawn(1, dl(10, 100, 100));
    h.spawn(2, dl(20, 50, 50));
    h.pick();
    for k in 1..=20u64 {
        h.run_ms(100);
        assert_eq!(
            h.runtime(1),
            k * 10 * MS,
            "10 ms every 100 ms after {k} periods"
        );
        assert_eq!(h.runtime(2), k * 40 * MS, "20 ms every 50 ms");
        assert_eq!(h.task(1).dl.nr_missed + h.task(2).dl.nr_missed, 0);
    }
    // The fair server competes with the deadline tasks under EDF by its own
    // deadline (one period after its boost): it serves in the deadline
    // tasks' slack, no more than its 5%; what a late boost leaves over moves
    // into the next period.
    let fair = h.runtime(4);
    eprintln!(
        "fair spinner beside the deadline tasks and the FIFO hog: {} ms of 2000",
        fair / MS
    );
    assert!(
        fair > 0 && fair <= 2 * 50 * MS + MS,
        "fair server: {fair} ns in 2 s"
    );
    assert_eq!(
        h.runtime(1) + h.runtime(2) + h.runtime(3) + h.runtime(4),
        2_000 * MS
    );
    assert!(h.task(1).dl.nr_throttled >= 19);
}

/// A periodic deadline task of the cyclictest kind: released every
/// `period`, it has `work` to do by `release + deadline`, then sleeps.
struct Periodic {
    id: u32,
    work: u64,
    deadline: u64,
    period: u64,
    release: u64,
    asleep: bool,
    ran_at_release: u64,
    missed: u64,
    jobs: u64,
    worst_response: u64,
}

/// Runs the periodic tasks (plus a FIFO hog and a fair spinner) for
/// `ms`, tick by tick; returns them with their counts.
fn run_periodic(specs: &[(u64, u64, u64)], ms: u64) -> Vec<Periodic> {
    let mut h = H::one();
    h.spawn(50, TaskParams::fifo(50));
    h.spawn(51, TaskParams::default());
    let mut ts: Vec<Periodic> = specs
        .iter()
        .enumerate()
        .map(|(i, &(c, d, p))| {
            let id = i as u32 + 1;
            h.spawn(id, dl(c, d, p));
            Periodic {
                id,
                work: c * MS,
                deadline: d * MS,
                period: p * MS,
                release: h.now,
                asleep: false,
                ran_at_release: 0,
                missed: 0,
                jobs: 0,
                worst_response: 0,
            }
        })
        .collect();
    h.pick();
    for _ in 0..ms {
        // One tick: the running job's work advances by a tick; when it is
        // done it blocks at once (before any repick), as a real job would
        // the moment its work ends.
        let tick = h.tick_ns();
        h.adv(tick);
        h.rq.task_tick();
        if let Some(t) = ts.iter_mut().find(|t| h.curr() == Some(t.id)) {
            h.rq.update_curr();
            if h.runtime(t.id) - t.ran_at_release >= t.work {
                let response = h.now - t.release;
                t.worst_response = t.worst_response.max(response);
                t.missed += u64::from(response > t.deadline);
                t.jobs += 1;
                h.block();
                t.asleep = true;
                t.release += t.period;
            }
        }
        // Jobs whose period came are released.
        for t in ts.iter_mut() {
            if t.asleep && h.now >= t.release {
                t.asleep = false;
                t.ran_at_release = h.runtime(t.id);
                h.wake(t.id, WakeFlags::empty());
            }
        }
        if h.rq.need_resched() != sched::Resched::None {
            h.pick();
        }
        h.rq.check().unwrap();
    }
    ts
}

#[test]
fn periodic_tasks_under_admitted_load_miss_no_deadline() {
    // cyclictest-like: 3 periodic tasks, utilisation 0.2 + 0.3 + 0.25 =
    // 0.75 (admitted on 1 CPU: at most 1.0 - 0.05 for the fair server),
    // under a FIFO hog. EDF on one CPU meets every deadline while the
    // utilisation is at most 1 (Liu and Layland 1973), and the CBS keeps
    // each task to its own budget.
    let ts = run_periodic(&[(2, 10, 10), (6, 20, 20), (5, 15, 20)], 2_000);
    for t in &ts {
        eprintln!(
            "task {}: {} jobs, {} missed, worst response {} us",
            t.id,
            t.jobs,
            t.missed,
            t.worst_response / 1000
        );
        assert!(
            t.jobs >= 2_000 * MS / t.period - 1,
            "task {}: {} jobs",
            t.id,
            t.jobs
        );
        assert_eq!(t.missed, 0, "task {} missed {} deadlines", t.id, t.missed);
        assert!(t.worst_response <= t.deadline);
    }
}

fn sched1() -> Scheduler<Plat> {
    Scheduler::new(Plat::default(), Arc::new(SchedConfig::new(1, 1000)), 1, 64)
}

#[test]
fn admission_control_refuses_an_over_commit_and_changes_nothing() {
    let s = sched1();
    // 1 CPU: 100% (Linux 7.2's sched_rt_runtime_us = sched_rt_period_us)
    // minus the fair server's 5% = 95% for deadline tasks.
    s.spawn(TaskId(1), SchedTask::new(dl(55, 100, 100)), cpu_id(0))
        .unwrap();
    s.spawn(TaskId(2), SchedTask::new(dl(30, 100, 100)), cpu_id(0))
        .unwrap();
    s.spawn(TaskId(3), SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    let bw = s.cpu_rq(cpu_id(0)).config().dl_bw.total_bw();
    // 0.85 + 0.15 > 0.95: refused, as a spawn and as a change of policy.
    let e = s.spawn(TaskId(4), SchedTask::new(dl(15, 100, 100)), cpu_id(0));
    assert_eq!(
        e.unwrap_err(),
        LifecycleError::Params(ParamsError::DlBandwidthExceeded)
    );
    let e = s.set_params(TaskId(3), dl(15, 100, 100), cpu_id(0));
    assert_eq!(
        e.unwrap_err(),
        LifecycleError::Params(ParamsError::DlBandwidthExceeded)
    );
    assert_eq!(
        s.task(TaskId(3), cpu_id(0)).unwrap().params,
        TaskParams::default()
    );
    assert_eq!(s.cpu_rq(cpu_id(0)).config().dl_bw.total_bw(), bw);
    // 0.85 + 0.1 = 0.95 fits exactly.
    s.set_params(TaskId(3), dl(10, 100, 100), cpu_id(0))
        .unwrap();
    // A task that grows past the limit is refused; one that shrinks is not.
    assert!(s
        .set_params(TaskId(1), dl(60, 100, 100), cpu_id(0))
        .is_err());
    s.set_params(TaskId(1), dl(40, 100, 100), cpu_id(0))
        .unwrap();
    s.spawn(TaskId(4), SchedTask::new(dl(10, 100, 100)), cpu_id(0))
        .unwrap();
    // Leaving the class, and exiting, give the bandwidth back.
    s.set_params(TaskId(2), TaskParams::default(), cpu_id(0))
        .unwrap();
    s.spawn(TaskId(5), SchedTask::new(dl(30, 100, 100)), cpu_id(0))
        .unwrap();
    let mut rq = s.cpu_rq(cpu_id(0));
    let sw = s.schedule(&mut rq, PrevAction::Stays);
    let running = sw.next.unwrap();
    assert!(
        [1, 3, 4, 5].contains(&running.0),
        "a deadline task runs first"
    );
    let before = rq.config().dl_bw.total_bw();
    let sw = s.schedule(&mut rq, PrevAction::Exits);
    drop(rq);
    s.finish_switch(cpu_id(0), &sw);
    let freed = s.task(running, cpu_id(0)).is_err();
    assert!(freed);
    assert!(s.cpu_rq(cpu_id(0)).config().dl_bw.total_bw() < before);
}

#[test]
fn bad_deadline_attributes_are_refused() {
    let s = sched1();
    s.spawn(TaskId(1), SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    let us = 1_000;
    for p in [
        TaskParams::deadline(1_000, 10 * MS, 10 * MS), // runtime < 1024 ns
        TaskParams::deadline(5 * MS, 4 * MS, 10 * MS), // runtime > deadline
        TaskParams::deadline(5 * MS, 10 * MS, 8 * MS), // deadline > period
        TaskParams::deadline(10 * us, 50 * us, 50 * us), // period < 100 us
        TaskParams::deadline(MS, 5_000 * MS, 5_000 * MS), // period > 4.19 s
        TaskParams::deadline(0, 0, 0),
        TaskParams {
            dl_runtime_ns: MS,
            ..TaskParams::default()
        }, // attributes on a fair policy
        TaskParams {
            nice: 5,
            ..dl(1, 10, 10)
        },
    ] {
        assert_eq!(
            s.set_params(TaskId(1), p, cpu_id(0)).unwrap_err(),
            LifecycleError::Params(ParamsError::DlAttrInvalid),
            "{p:?}"
        );
        assert_eq!(
            s.task(TaskId(1), cpu_id(0)).unwrap().params,
            TaskParams::default()
        );
    }
    assert_eq!(s.cpu_rq(cpu_id(0)).config().dl_bw.total_bw(), 0);
    // Period 0 means the deadline.
    s.set_params(TaskId(1), TaskParams::deadline(MS, 10 * MS, 0), cpu_id(0))
        .unwrap();
    assert_eq!(
        s.cpu_rq(cpu_id(0)).config().dl_bw.total_bw(),
        sched::deadline::to_ratio(10 * MS, MS)
    );
}
