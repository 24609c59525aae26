//! The UTIL_EST feature (Linux's `SCHED_FEAT(UTIL_EST, true)`,
//! kernel/sched/fair.c `util_est_update`, `util_est_enqueue`,
//! `util_est_dequeue` and `cpu_util()`): a task's estimate is sampled at its
//! sleeps only while the feature is on (off, estimates freeze, they are not
//! zeroed); each CPU's root fair runqueue sums its queued tasks' estimates
//! through enqueue, sleep, delayed dequeue, wakeup and migration; and a
//! CPU's utilisation as the balancer sees it (`cpu_util_cfs`) is the larger
//! of the runqueue's `util_avg` and that sum.

use crate::common;
use common::cpu_id;
use common::plat::{machine, run_ticks, switch};
use common::{H, MS};

use std::sync::atomic::Ordering;

use sched::pelt::UTIL_AVG_UNCHANGED;
use sched::task::TaskState;
use sched::{PrevAction, Rq, SchedTask, TaskId, TaskParams, Topology, WakeFlags};

/// Σ `_task_util_est` of the tasks `ids` that `rq` holds queued (a delayed
/// or blocked task is not counted, as in Linux).
fn queued_est_sum(rq: &Rq, ids: &[u32]) -> u64 {
    ids.iter()
        .filter_map(|&id| rq.task(TaskId(id)))
        .filter(|t| t.state == TaskState::Queued)
        .map(|t| t.se.avg.util_est_ewma())
        .sum()
}

/// One CPU whose task 1 (nice 0) has run alone for `ms` ms, still running.
fn running_alone(ms: u64) -> H {
    let mut h = H::one();
    h.spawn(1, H::nice(0));
    h.pick();
    h.run_ms(ms);
    h
}

/// A task that ran alone for 100 ms, then a 10 ms burst after a 100 ms
/// sleep: with UTIL_EST the second sleep samples the (lower) utilisation;
/// with NO_UTIL_EST the estimate and its flag stay exactly as the first
/// sleep left them, and turning it back on resumes sampling.
#[test]
fn no_util_est_freezes_the_estimate_across_sleeps() {
    // Runs the task `busy_ms` alone, then it sleeps: its `util_est` then.
    let run_then_sleep = |h: &mut H, busy_ms: u64| {
        h.pick();
        h.run_ms(busy_ms);
        h.block();
        h.se(1).avg.util_est
    };
    let wake_after_100ms = |h: &mut H| {
        h.adv(100 * MS);
        h.wake(1, WakeFlags::TTWU);
    };
    let mut h = H::one();
    h.spawn(1, H::nice(0));
    let first = run_then_sleep(&mut h, 100);
    let first_ewma = (first & !UTIL_AVG_UNCHANGED) as u64;
    // 100 ms alone: util_avg ~ 1024 * (1 - 0.5^(100/32)) ~ 905.
    assert!(first_ewma > 800, "first sample {first_ewma}");
    assert_ne!(first & UTIL_AVG_UNCHANGED, 0);

    // On: the short burst after a long sleep lowers the estimate.
    let mut on = H::one();
    on.spawn(1, H::nice(0));
    run_then_sleep(&mut on, 100);
    wake_after_100ms(&mut on);
    let lowered = run_then_sleep(&mut on, 10) & !UTIL_AVG_UNCHANGED;
    assert!((lowered as u64) < first_ewma, "{lowered} vs {first_ewma}");

    // Off: the same history leaves the estimate frozen, its "unchanged"
    // flag included, though the task's averages move while it runs.
    h.cfg.features.write("NO_UTIL_EST").unwrap();
    wake_after_100ms(&mut h);
    h.pick();
    h.run_ms(10);
    assert_eq!(
        h.se(1).avg.util_est,
        first,
        "the flag is not cleared while off"
    );
    h.block();
    assert_eq!(h.se(1).avg.util_est, first, "no sample while off");
    wake_after_100ms(&mut h);
    assert_eq!(
        run_then_sleep(&mut h, 10),
        first,
        "still frozen, not zeroed"
    );
    let a = h.se(1).avg;
    assert!(a.util_avg < first_ewma);
    assert_eq!(a.task_util_est(), first_ewma);

    // On again: the next run moves the averages, and its sleep samples.
    h.cfg.features.write("UTIL_EST").unwrap();
    h.adv(100 * MS);
    h.wake(1, WakeFlags::TTWU);
    h.pick();
    h.run_ms(10);
    h.block();
    let resumed = h.se(1).avg.util_est_ewma();
    assert!(resumed < first_ewma, "{resumed} vs {first_ewma}");
}

/// Four tasks with known estimates (300, 200, 150, 100) woken on CPU 0:
/// the runqueue's sum follows every enqueue, sleep (sampled or delayed),
/// wakeup of a delayed task, completed delayed dequeue and migration to
/// CPU 1, and never counts a delayed task.
#[test]
fn the_runqueue_sum_is_the_queued_tasks_estimates() {
    let mut h = H::new(2, 1000);
    let mut other = Rq::new(cpu_id(1), h.cfg.clone(), 64);
    other.update_rq_clock(h.now);
    let ids = [1, 2, 3, 4];
    for (&id, est) in ids.iter().zip([300u32, 200, 150, 100]) {
        let mut t = SchedTask::new(TaskParams::default());
        t.se.avg.util_est = est | UTIL_AVG_UNCHANGED;
        h.off.insert(id, t);
        h.wake(id, WakeFlags::TTWU);
        assert_eq!(h.rq.util_est(), queued_est_sum(&h.rq, &ids));
    }
    assert_eq!(h.rq.util_est(), 750);

    let check = |h: &H, other: &Rq| {
        assert_eq!(h.rq.util_est(), queued_est_sum(&h.rq, &ids), "cpu 0");
        assert_eq!(other.util_est(), queued_est_sum(other, &ids), "cpu 1");
    };
    let mut saw_delayed = false;
    for round in 0..40 {
        h.pick();
        h.run_ms(3);
        check(&h, &other);
        // The running task sleeps: its estimate leaves before the sample
        // (or stays out while its dequeue is delayed).
        let sleeper = h.curr().unwrap();
        h.block();
        check(&h, &other);
        if h.rq.task(TaskId(sleeper)).map(|t| t.state) == Some(TaskState::Delayed) {
            saw_delayed = true;
        }
        h.adv(MS);
        h.wake(sleeper, WakeFlags::TTWU);
        check(&h, &other);
        if round % 10 == 9 {
            // Migrate a queued task that is not running to CPU 1, and back.
            let curr = h.curr();
            let Some(&id) = ids.iter().find(|&&id| {
                Some(id) != curr
                    && h.rq.task(TaskId(id)).map(|t| t.state) == Some(TaskState::Queued)
            }) else {
                continue;
            };
            let before = h.rq.util_est();
            let t = h.rq.detach_task(TaskId(id)).unwrap();
            let est = t.se.avg.util_est_ewma();
            assert_eq!(h.rq.util_est(), before - est);
            other.update_rq_clock(h.now);
            other.attach_task(TaskId(id), t);
            assert_eq!(other.util_est(), est);
            check(&h, &other);
            let t = other.detach_task(TaskId(id)).unwrap();
            assert_eq!(other.util_est(), 0);
            h.rq.attach_task(TaskId(id), t);
            check(&h, &other);
        }
    }
    assert!(saw_delayed, "a sleep was delayed at least once");
    // Everything sleeps for good: the sum empties.
    while h.curr().is_some() || h.pick().is_some() {
        h.block();
        check(&h, &other);
    }
    h.adv(100 * MS);
    for id in ids {
        if h.held.contains(&id) {
            // A delayed task: its dequeue completes (it was already out).
            h.rq.dequeue_task(TaskId(id), sched::DequeueFlags::SLEEP)
                .unwrap();
            check(&h, &other);
        }
    }
    assert_eq!(h.rq.util_est(), 0);
}

/// A task that ran 200 ms on CPU 1, slept 300 ms and just woke there: its
/// `util_avg` (and the runqueue's) has decayed to almost nothing, but its
/// estimate still says ~1000, so with UTIL_EST CPU 1 looks busy to the
/// balancer (`cpu_util_cfs` ~ the estimate), as in Linux; with NO_UTIL_EST
/// it looks nearly idle.
#[test]
fn a_woken_task_with_a_high_estimate_makes_its_cpu_look_busy() {
    let s = machine(Topology::flat(2));
    s.spawn(TaskId(1), SchedTask::new(TaskParams::default()), cpu_id(1))
        .unwrap();
    switch(&s, 1, PrevAction::Stays);
    run_ticks(&s, 1, 200);
    let st = {
        let mut rq = s.cpu_rq(cpu_id(1));
        rq.schedule(true).prev_blocked.unwrap()
    };
    let est = st.se.avg.util_est_ewma();
    assert!(est > 950, "estimate after 200 ms busy: {est}");
    assert_eq!(s.summary(cpu_id(1)).util_est.load(Ordering::Relaxed), 0);
    let now = s.platform.now.fetch_add(300 * MS, Ordering::Relaxed) + 300 * MS;
    {
        let mut rq = s.cpu_rq(cpu_id(1));
        rq.update_rq_clock(now);
        rq.try_to_wake_up(TaskId(1), st, WakeFlags::TTWU);
        assert_eq!(rq.util_est(), est);
    }
    let sm = s.summary(cpu_id(1));
    let util_avg = sm.util_avg.load(Ordering::Relaxed);
    // 300 ms of sleep: ~1000 * 0.5^(300/32) ~ 1.5.
    assert!(util_avg < 20, "decayed util_avg {util_avg}");
    assert_eq!(sm.util_est.load(Ordering::Relaxed), est);
    assert_eq!(s.cpu_util_cfs(cpu_id(1)), est);
    assert_eq!(s.cpu_util_cfs(cpu_id(0)), 0);

    s.cfg.features.write("NO_UTIL_EST").unwrap();
    assert_eq!(s.cpu_util_cfs(cpu_id(1)), util_avg);
}

/// The sample at a sleep is the task's `util_avg` brought up to the
/// moment it sleeps, as Linux's `dequeue_entity` takes it (after its
/// `update_load_avg`): a task that ran 50 ms and blocks half a millisecond
/// after the last tick has its estimate rise to exactly its `util_avg`
/// then, not to the older value of that tick.
#[test]
fn the_sample_is_the_utilisation_at_the_sleep() {
    let mut h = running_alone(50);
    let at_tick = h.se(1).avg.util_avg;
    h.adv(MS / 2);
    h.block();
    let a = h.se(1).avg;
    assert!(a.util_avg > at_tick, "{} vs {at_tick}", a.util_avg);
    assert_eq!(a.util_est_ewma(), a.util_avg);
    assert_eq!(h.rq.util_est(), 0);
}
