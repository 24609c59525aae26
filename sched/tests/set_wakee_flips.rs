//! `Scheduler::set_wakee_flips`: a task's `wakee_flips` set from outside
//! (a workload starting its run's parent with the flips a Linux run's
//! parent inherited), then grown, halved and copied at fork by the same
//! rules as flips a task earned (Linux 7.2's `record_wakee()` and fork).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common;
use common::cpu_id;

use common::plat::Plat;
use sched::smp::{LifecycleError, Scheduler};
use sched::{PrevAction, SchedConfig, SchedTask, TaskId, TaskParams, WakeFlags};

use crate::common::MS;

/// One switch on CPU 0: `a` for the running task, then the pick.
fn switch(s: &Scheduler<Plat>, a: PrevAction) -> sched::rq::Switch {
    let sw = {
        let mut rq = s.cpu_rq(cpu_id(0));
        s.schedule(&mut rq, a)
    };
    s.finish_switch(cpu_id(0), &sw);
    sw
}

/// One CPU at 1000 s; tasks 1..=3 spawned, 2 and 3 asleep, 1 running.
fn one_waker_two_sleepers() -> Scheduler<Plat> {
    let cfg = Arc::new(SchedConfig::new(1, 250));
    let s = Scheduler::new(Plat::default(), cfg, 1, 16);
    s.platform.now.store(1_000 * 1_000 * MS, Ordering::Relaxed);
    for id in 1..=3 {
        s.spawn(TaskId(id), SchedTask::new(TaskParams::default()), cpu_id(0))
            .unwrap();
    }
    let (mut asleep, mut sw) = (0, switch(&s, PrevAction::Stays));
    for _ in 0..50 {
        if asleep == 2 {
            break;
        }
        sw = if sw.next.is_some_and(|n| n != TaskId(1)) {
            asleep += 1;
            switch(&s, PrevAction::Sleeps)
        } else {
            switch(&s, PrevAction::Yields)
        };
    }
    assert_eq!((asleep, sw.next), (2, Some(TaskId(1))));
    assert_eq!(s.wakee_flips(TaskId(1)), 0);
    s
}

#[test]
fn set_flips_are_copied_at_fork_and_grow_without_a_stale_halving() {
    let s = one_waker_two_sleepers();
    let waker = TaskId(1);
    // Two seconds after the spawns (whose decay stamp is 1000 s), the
    // waker is given 6 flips: no last wakee, the halving restarted now.
    s.platform.now.store(1_002 * 1_000 * MS, Ordering::Relaxed);
    s.set_wakee_flips(waker, 6).unwrap();
    assert_eq!(s.wakee_flips(waker), 6);
    // A child spawned by it (it runs on CPU 0) starts with them.
    s.spawn(TaskId(4), SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    assert_eq!(s.wakee_flips(TaskId(4)), 6);
    // Its next wakeup adds one (a new wakee) and does not halve them: the
    // spawn's stamp, 2 s old, would have made that 6 / 2 + 1 = 4.
    s.wake(TaskId(2), WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(s.wakee_flips(waker), 7);
    // More than a second later, the same rule as for earned flips halves.
    s.platform.now.store(1_003_500 * MS, Ordering::Relaxed);
    s.wake(TaskId(3), WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(s.wakee_flips(waker), 7 / 2 + 1);
    // The child's own flips are its copy, untouched by the parent's.
    assert_eq!(s.wakee_flips(TaskId(4)), 6);
}

#[test]
fn set_flips_of_a_task_that_is_not_alive_is_refused_and_changes_nothing() {
    let s = one_waker_two_sleepers();
    assert_eq!(
        s.set_wakee_flips(TaskId(9), 6),
        Err(LifecycleError::NoSuchTask)
    );
    assert_eq!(
        s.set_wakee_flips(TaskId(16), 6),
        Err(LifecycleError::IdOutOfRange)
    );
    // A task spawned later under the refused id starts with its parent's.
    s.spawn(TaskId(9), SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    assert_eq!(s.wakee_flips(TaskId(9)), 0);
}
