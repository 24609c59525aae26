//! Reading a task's CPU time (Linux 7.2's `task_sched_runtime()`, behind
//! `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`): [`sched::Rq::task_sched_runtime`].
//! A task that is running and queued is charged first (`update_rq_clock`,
//! then its class's `update_curr`), so a read mid-slice moves its runtime
//! and vruntime, and a read at the end of its request ends the request and
//! asks for a reschedule exactly as the tick's `update_curr` would. Any
//! other task is read as it is, the clock untouched. The duty-cycle row of
//! the conformance checklist rests on this (`duty_place_lag.rs`, and
//! docs/results/linux/conformance.md, "EEVDF conformance (1 CPU)").

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use common::plat::Plat;
use common::{H, US};
use sched::smp::{Platform, Scheduler};
use sched::{
    PreemptMode, PrevAction, Resched, SchedConfig, SchedTask, TaskId, TaskParams, WakeFlags,
};

/// Two nice-0 hogs on one CPU, the first picked at `h.now`; returns the
/// running one.
fn two_hogs(mode: PreemptMode) -> (H, u32) {
    let mut h = H::one();
    h.cfg.tunables.set_preempt_mode(mode);
    h.spawn(1, TaskParams::default());
    h.spawn(2, TaskParams::default());
    let c = h.pick().expect("a hog runs");
    (h, c)
}

#[test]
fn a_read_mid_request_charges_the_running_task() {
    let (mut h, c) = two_hogs(PreemptMode::Full);
    let before = h.se(c);
    let t = h.now + 300 * US;
    // The clock is not moved before the read: the read itself moves it.
    assert_eq!(h.rq.task_sched_runtime(TaskId(c), t), Some(300 * US));
    let after = h.se(c);
    assert_eq!(h.rq.clock(), t);
    assert_eq!(after.sum_exec_runtime, before.sum_exec_runtime + 300 * US);
    // Nice 0: virtual time runs at wall-clock rate.
    assert_eq!(after.vruntime, before.vruntime + 300 * US);
    assert_eq!(after.exec_start, t);
    assert_eq!(after.deadline, before.deadline, "request not consumed");
    assert_eq!(h.rq.need_resched(), Resched::None);
    // A second read at the same instant charges nothing more.
    assert_eq!(h.rq.task_sched_runtime(TaskId(c), t), Some(300 * US));
    assert_eq!(h.se(c), after);
}

#[test]
fn a_read_at_the_end_of_the_request_ends_it_as_update_curr_would() {
    for mode in [PreemptMode::Lazy, PreemptMode::Full] {
        let (mut h, c) = two_hogs(mode);
        // The same runqueue charged by `update_curr` at the same instants,
        // as the tick's accounting does.
        let (mut twin, c2) = two_hogs(mode);
        assert_eq!(c, c2);
        let slice_ns = h.cfg.tunables.base_slice_ns();
        let start = h.se(c);
        // The first request is half a slice (PLACE_DEADLINE_INITIAL); nice
        // 0: its virtual length is its wall-clock length.
        let left_ns = start.deadline - start.vruntime;
        assert!(left_ns > 0 && left_ns <= slice_ns);
        // One ns before the request's end: nothing asked.
        let t = h.now + left_ns - 1;
        assert_eq!(h.rq.task_sched_runtime(TaskId(c), t), Some(left_ns - 1));
        assert_eq!(h.rq.need_resched(), Resched::None);
        assert_eq!(h.se(c).deadline, start.deadline);
        // At its end: a new request, and the reschedule the model asks for.
        let t = h.now + left_ns;
        assert_eq!(h.rq.task_sched_runtime(TaskId(c), t), Some(left_ns));
        let want = match mode {
            PreemptMode::Lazy => Resched::Lazy,
            _ => Resched::Now,
        };
        assert_eq!(h.rq.need_resched(), want, "{mode:?}");
        let end = h.se(c);
        assert_eq!(end.vruntime, start.deadline);
        assert_eq!(end.deadline, end.vruntime + slice_ns);

        twin.rq.update_rq_clock(twin.now + left_ns - 1);
        twin.rq.update_curr();
        twin.rq.update_rq_clock(twin.now + left_ns);
        twin.rq.update_curr();
        assert_eq!(twin.se(c), end, "{mode:?}");
        assert_eq!(twin.se(3 - c), h.se(3 - c), "{mode:?}");
        assert_eq!(twin.rq.need_resched(), h.rq.need_resched(), "{mode:?}");
        assert_eq!(twin.rq.avg_vruntime(), h.rq.avg_vruntime(), "{mode:?}");

        // The reschedule switches to the other hog, now the earlier
        // eligible deadline.
        assert_eq!(h.pick(), Some(3 - c), "{mode:?}");
        h.rq.check().unwrap();
    }
}

#[test]
fn a_read_of_a_task_that_is_not_running_charges_nothing() {
    let (mut h, c) = two_hogs(PreemptMode::Full);
    let other = 3 - c;
    let clock = h.rq.clock();
    let running = h.se(c);
    let queued = h.se(other);
    let t = h.now + 500 * US;
    assert_eq!(h.rq.task_sched_runtime(TaskId(other), t), Some(0));
    assert_eq!(h.rq.clock(), clock, "the clock is not updated");
    assert_eq!(h.se(c), running, "the running task is not charged");
    assert_eq!(h.se(other), queued);
    assert_eq!(h.rq.need_resched(), Resched::None);
    // A task this runqueue does not hold.
    assert_eq!(h.rq.task_sched_runtime(TaskId(9), t), None);
    assert_eq!(h.rq.clock(), clock);
}

#[test]
fn a_read_of_a_running_deadline_task_throttles_it_when_its_runtime_is_spent() {
    let mut h = H::one();
    h.spawn(1, TaskParams::default());
    h.spawn(2, TaskParams::deadline(200 * US, 1_000 * US, 1_000 * US));
    assert_eq!(h.pick(), Some(2));
    let t = h.now + 100 * US;
    assert_eq!(h.rq.task_sched_runtime(TaskId(2), t), Some(100 * US));
    assert!(!h.task(2).dl.throttled);
    assert_eq!(h.rq.need_resched(), Resched::None);
    let t = h.now + 200 * US;
    assert_eq!(h.rq.task_sched_runtime(TaskId(2), t), Some(200 * US));
    assert!(h.task(2).dl.throttled, "runtime spent at the read");
    assert_eq!(h.rq.need_resched(), Resched::Now);
    assert_eq!(h.pick(), Some(1));
}

const CPU0: usize = 0;

fn machine() -> Scheduler<Plat> {
    let cfg = Arc::new(SchedConfig::new(1, 1000));
    cfg.tunables.set_preempt_mode(PreemptMode::Full);
    let s = Scheduler::new(Plat::default(), cfg, 1, 16);
    s.platform.now.store(1_000_000 * US, Ordering::Relaxed);
    s
}

fn switch(s: &Scheduler<Plat>, a: PrevAction) -> Option<TaskId> {
    let cpu = common::cpu_id(CPU0);
    let sw = {
        let mut rq = s.cpu_rq(cpu);
        s.schedule(&mut rq, a)
    };
    s.finish_switch(cpu, &sw);
    sw.next
}

#[test]
fn a_read_between_a_preempting_wakeup_and_the_switch_keeps_the_clock_skip() {
    // Task 1 runs; task 2 (a 100 µs custom slice, slept at lag 0) wakes
    // 400 µs in and is the pick, so the coming `__schedule` will skip its
    // clock update. Task 1 reads its CPU time 20 µs later: the read moves
    // the clock and charges it (Linux's `update_rq_clock` skips only for
    // RQCF_ACT_SKIP, set by `__schedule`), and the switch 30 µs after that
    // still skips: task 1 is charged up to its read, not to the switch.
    let s = machine();
    let cpu = common::cpu_id(CPU0);
    let t0 = s.platform.now_ns();
    let at = |t: u64| s.platform.now.store(t, Ordering::Relaxed);
    let short = TaskParams {
        slice_ns: 100 * US,
        ..Default::default()
    };
    s.spawn(TaskId(2), SchedTask::new(short), cpu).unwrap();
    assert_eq!(switch(&s, PrevAction::Stays), Some(TaskId(2)));
    assert_eq!(switch(&s, PrevAction::Sleeps), None);
    s.spawn(TaskId(1), SchedTask::new(TaskParams::default()), cpu)
        .unwrap();
    assert_eq!(switch(&s, PrevAction::Stays), Some(TaskId(1)));
    let ran0 = s.cpu_rq(cpu).task(TaskId(1)).unwrap().se.sum_exec_runtime;
    at(t0 + 400 * US);
    let w = s.wake(TaskId(2), WakeFlags::empty(), cpu).unwrap();
    assert!(w.decision().expect("decided here").preempt);
    let ran = s
        .cpu_rq(cpu)
        .task_sched_runtime(TaskId(1), t0 + 420 * US)
        .unwrap();
    assert_eq!(ran, ran0 + 420 * US);
    assert_eq!(s.cpu_rq(cpu).clock(), t0 + 420 * US);
    let skips = s.cpu_rq(cpu).stats.nr_clock_skips;
    at(t0 + 450 * US);
    assert_eq!(switch(&s, PrevAction::Stays), Some(TaskId(2)));
    let rq = s.cpu_rq(cpu);
    assert_eq!(rq.stats.nr_clock_skips, skips + 1, "the switch skipped");
    assert_eq!(rq.task(TaskId(1)).unwrap().se.sum_exec_runtime, ran);
}
