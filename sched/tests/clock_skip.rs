//! `rq_clock_skip_update()` (Linux 7.2, core.c's `wakeup_preempt()` and
//! `__schedule()`): a wakeup that leaves an immediate reschedule pending,
//! the running task still queued, makes the coming `__schedule` skip its
//! clock update. The task switched out is then charged only up to that
//! wakeup's clock, and the task switched in from it (its `exec_start`), so
//! the time between the wakeup and the switch is the wakee's. A lazy
//! request does not skip (`test_tsk_need_resched` reads TIF_NEED_RESCHED
//! only).

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use common::plat::Plat;
use sched::smp::{Platform, Scheduler};
use sched::{
    PreemptMode, PrevAction, Resched, SchedConfig, SchedTask, TaskId, TaskParams, WakeFlags,
};

use crate::common::US;

fn cpu0() -> sched::CpuId {
    common::cpu_id(0)
}

fn machine(mode: PreemptMode) -> Scheduler<Plat> {
    let cfg = Arc::new(SchedConfig::new(1, 1000));
    cfg.tunables.set_preempt_mode(mode);
    let s = Scheduler::new(Plat::default(), cfg, 1, 16);
    s.platform.now.store(1_000_000 * US, Ordering::Relaxed);
    s
}

fn at(s: &Scheduler<Plat>, t: u64) {
    s.platform.now.store(t, Ordering::Relaxed);
}

fn switch(s: &Scheduler<Plat>, a: PrevAction) -> Option<TaskId> {
    let sw = {
        let mut rq = s.cpu_rq(cpu0());
        s.schedule(&mut rq, a)
    };
    s.finish_switch(cpu0(), &sw);
    sw.next
}

fn runtime(s: &Scheduler<Plat>, id: u32) -> u64 {
    s.cpu_rq(cpu0())
        .task(TaskId(id))
        .expect("held")
        .se
        .sum_exec_runtime
}

/// Task 2 (a 100 µs custom slice) has slept at zero lag; task 1 runs alone
/// from `t0`, past its first request (350 µs). At `t0 + 400 µs` task 2
/// wakes and, shorter-sliced (PREEMPT_SHORT), is the pick; the switch
/// comes 50 µs later and task 2 runs another 50 µs to a tick. Returns the
/// two tasks' runtimes then and the wakeup's request.
fn wakeup_then_switch_50us_later(mode: PreemptMode) -> (u64, u64, Resched) {
    let s = machine(mode);
    let t0 = s.platform.now_ns();
    let short = TaskParams {
        slice_ns: 100 * US,
        ..Default::default()
    };
    s.spawn(TaskId(2), SchedTask::new(short), cpu0()).unwrap();
    assert_eq!(switch(&s, PrevAction::Stays), Some(TaskId(2)));
    assert_eq!(switch(&s, PrevAction::Sleeps), None);
    s.spawn(TaskId(1), SchedTask::new(TaskParams::default()), cpu0())
        .unwrap();
    assert_eq!(switch(&s, PrevAction::Stays), Some(TaskId(1)));
    at(&s, t0 + 400 * US);
    let w = s.wake(TaskId(2), WakeFlags::empty(), cpu0()).unwrap();
    let d = w.decision().expect("decided here");
    assert!(d.preempt, "the short-sliced wakee is the pick: {d:?}");
    at(&s, t0 + 450 * US);
    assert_eq!(switch(&s, PrevAction::Stays), Some(TaskId(2)));
    at(&s, t0 + 500 * US);
    s.tick(cpu0());
    (runtime(&s, 1), runtime(&s, 2), d.resched)
}

#[test]
fn a_preempting_wakeup_gives_the_time_until_the_switch_to_the_wakee() {
    let (r1, r2, req) = wakeup_then_switch_50us_later(PreemptMode::Full);
    assert_eq!(req, Resched::Now);
    // Task 1 is charged up to the wakeup (400 µs), not the switch.
    assert_eq!(r1, 400 * US);
    // Task 2 from the wakeup's clock: the 50 µs before the switch too.
    assert_eq!(r2, 100 * US);
}

#[test]
fn a_lazy_request_does_not_skip_the_switchs_clock_update() {
    let (r1, r2, req) = wakeup_then_switch_50us_later(PreemptMode::Lazy);
    assert_eq!(req, Resched::Lazy);
    assert_eq!(r1, 450 * US);
    assert_eq!(r2, 50 * US);
}

/// The idle task counts as queued: a wakee woken onto an idle CPU runs
/// from the wakeup's clock.
#[test]
fn a_wakee_of_an_idle_cpu_is_charged_from_its_wakeup() {
    let s = machine(PreemptMode::Full);
    let t0 = s.platform.now_ns();
    s.spawn(TaskId(1), SchedTask::new(TaskParams::default()), cpu0())
        .unwrap();
    assert_eq!(switch(&s, PrevAction::Stays), Some(TaskId(1)));
    assert_eq!(switch(&s, PrevAction::Sleeps), None);
    at(&s, t0 + 1_000 * US);
    let w = s.wake(TaskId(1), WakeFlags::empty(), cpu0()).unwrap();
    assert_eq!(w.decision().map(|d| d.resched), Some(Resched::Now));
    at(&s, t0 + 1_040 * US);
    assert_eq!(switch(&s, PrevAction::Stays), Some(TaskId(1)));
    at(&s, t0 + 1_100 * US);
    s.tick(cpu0());
    assert_eq!(runtime(&s, 1), 100 * US);
}

/// The skip serves one switch: the next one, with no wakeup before it,
/// moves the clock, and the task switched out is charged up to it.
#[test]
fn the_skip_lasts_one_switch() {
    let s = machine(PreemptMode::Full);
    let t0 = s.platform.now_ns();
    s.spawn(TaskId(1), SchedTask::new(TaskParams::default()), cpu0())
        .unwrap();
    s.spawn(TaskId(2), SchedTask::new(TaskParams::default()), cpu0())
        .unwrap();
    // The first spawn woke an idle CPU: its switch skips the update.
    assert_eq!(switch(&s, PrevAction::Stays), Some(TaskId(1)));
    at(&s, t0 + 200 * US);
    switch(&s, PrevAction::Stays);
    assert_eq!(runtime(&s, 1), 200 * US);
    assert_eq!(s.cpu_rq(cpu0()).stats.nr_clock_skips, 1);
}
