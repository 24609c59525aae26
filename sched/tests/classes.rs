//! Scheduling classes on one runqueue: the class order, policy and
//! priority changes between classes whatever the task's state, the reschedule
//! kind each wakeup asks for under each preemption model, the BATCH / IDLE
//! wakeup rows, the SCHED_RR timeslice tunable, and the FIFO pick across the
//! 99 priorities. One CPU, HZ=1000, default features; `rq.check()` after every
//! state change.

use crate::common;
use common::cpu_id;

use common::{H, MS, US};
use sched::fair::FairWakeup;
use sched::{
    Policy, PreemptMode, Resched, SchedClass, SchedTask, TaskId, TaskParams, TaskState, WakeFlags,
    WakeupReason,
};

fn check(h: &H) {
    h.rq.check().unwrap();
}

/// Wakes a never-run task `id` with zero lag.
fn wake_fresh(h: &mut H, id: u32, p: TaskParams) -> sched::WakeupDecision {
    h.held.insert(id);
    let d =
        h.rq.try_to_wake_up(TaskId(id), SchedTask::new(p), WakeFlags::empty());
    check(h);
    d
}

fn set_mode(h: &H, m: PreemptMode) {
    h.cfg.tunables.set_preempt_mode(m);
}

// ---- class order ----

#[test]
fn class_order_is_rt_fair_idle() {
    assert!(SchedClass::Rt.above(SchedClass::Fair));
    assert!(SchedClass::Fair.above(SchedClass::Idle));
    assert!(!SchedClass::Idle.above(SchedClass::Fair));
    assert!(!SchedClass::Fair.above(SchedClass::Rt));
    for p in [Policy::Fifo, Policy::RoundRobin] {
        assert_eq!(p.class(), SchedClass::Rt);
    }
    for p in [Policy::Normal, Policy::Batch, Policy::Idle] {
        assert_eq!(p.class(), SchedClass::Fair);
    }

    // The pick walks the classes from the top: RT, then fair, then idle (None).
    let mut h = H::one();
    h.spawn(1, TaskParams::default());
    h.spawn(2, TaskParams::fair(Policy::Idle));
    h.spawn(3, TaskParams::fifo(1));
    check(&h);
    assert_eq!(
        h.pick(),
        Some(3),
        "the lowest RT priority beats every fair task"
    );
    // Fair tasks never get the CPU while RT is runnable, even over many ticks.
    h.run_ms(20);
    assert_eq!(h.curr(), Some(3));
    assert_eq!(h.runtime(1), 0);
    assert_eq!(h.runtime(2), 0);
    h.block();
    check(&h);
    assert!(matches!(h.curr(), Some(1) | Some(2)));
    h.block();
    h.block();
    check(&h);
    assert_eq!(h.curr(), None, "nothing left: the idle class runs");
}

#[test]
fn class_wakeup_preemption_follows_the_order() {
    for mode in PreemptMode::ALL {
        let mut h = H::one();
        set_mode(&h, mode);
        h.spawn(1, TaskParams::default());
        h.pick();
        // RT wakee over a fair current: higher class, always Now.
        let d = wake_fresh(&mut h, 2, TaskParams::fifo(10));
        assert_eq!(d.reason, WakeupReason::HigherClass, "{mode:?}");
        assert!(d.preempt);
        assert_eq!(
            d.resched,
            Resched::Now,
            "{mode:?}: RT wakeups are never lazy"
        );
        assert_eq!(h.pick(), Some(2));
        // A fair wakee (NORMAL, short slice: it would win any fair pick) over
        // an RT current: lower class, never.
        let d = wake_fresh(
            &mut h,
            3,
            TaskParams {
                slice_ns: 100 * US,
                ..TaskParams::default()
            },
        );
        assert_eq!(d.reason, WakeupReason::LowerClass, "{mode:?}");
        assert!(!d.preempt);
        assert_eq!(d.resched, Resched::None);
        // Ticks do not rotate a FIFO task out for fair ones.
        for _ in 0..10 {
            h.adv(MS);
            assert_eq!(h.rq.task_tick(), Resched::None, "{mode:?}");
        }
        assert_eq!(h.curr(), Some(2));
    }
}

// ---- resched kinds per model ----

#[test]
fn fair_wakeup_is_lazy_only_in_lazy_mode() {
    for mode in PreemptMode::ALL {
        let mut h = H::one();
        set_mode(&h, mode);
        // A hog with a long request and a short-slice wakee: PREEMPT_SHORT picks it.
        h.spawn(1, H::slice(20 * MS));
        h.pick();
        h.adv(2 * MS);
        let d = wake_fresh(&mut h, 2, TaskParams::default());
        assert!(
            matches!(
                d.reason,
                WakeupReason::Fair(FairWakeup::Picked { short: true })
            ),
            "{mode:?}: {:?}",
            d.reason
        );
        let want = if mode == PreemptMode::Lazy {
            Resched::Lazy
        } else {
            Resched::Now
        };
        assert_eq!(d.resched, want, "{mode:?}");
        assert_eq!(h.rq.need_resched(), want);
        // The next tick upgrades a lazy request.
        h.adv(MS);
        assert_eq!(h.rq.task_tick(), Resched::Now, "{mode:?}");
        assert_eq!(h.pick(), Some(2));
        check(&h);
    }
}

/// Where each model acts on the request a picked fair wakeup makes: under
/// lazy it is lazy, so no kernel-mode point (interrupt exit, `preempt_enable`,
/// `cond_resched`) takes it and the next return to user space does (Linux's
/// `exit_to_user_mode_loop`, which tests both bits); under full the kernel
/// point already does. A plain wakeup of an equal-slice task once the
/// running one's protection has ended: the PICK row, no PREEMPT_SHORT.
#[test]
fn picked_fair_wakeup_honoured_at_user_return_in_every_model() {
    use sched::PreemptPoint::{CondResched, Kernel, UserReturn};
    for mode in PreemptMode::ALL {
        let mut h = H::one();
        set_mode(&h, mode);
        h.spawn(1, TaskParams::default());
        h.pick();
        // Past its protection (one base slice) with nobody else queued: no
        // request yet (a lone task never asks).
        h.adv(2 * MS);
        h.rq.update_curr();
        assert_eq!(h.rq.need_resched(), Resched::None, "{mode:?}");
        let d = wake_fresh(&mut h, 2, TaskParams::default());
        assert_eq!(
            d.reason,
            WakeupReason::Fair(FairWakeup::Picked { short: false }),
            "{mode:?}"
        );
        let need = h.rq.need_resched();
        let lazy = mode == PreemptMode::Lazy;
        assert_eq!(need, if lazy { Resched::Lazy } else { Resched::Now });
        let full = mode == PreemptMode::Full;
        assert_eq!(
            mode.preempts_at(Kernel, need),
            full || (lazy && need == Resched::Now)
        );
        assert_eq!(
            mode.preempts_at(CondResched, need),
            mode == PreemptMode::Voluntary
        );
        assert!(mode.preempts_at(UserReturn, need), "{mode:?}: {need:?}");
        // Acted on at the return to user space: the wakee runs.
        assert_eq!(h.pick(), Some(2), "{mode:?}");
        assert_eq!(h.rq.need_resched(), Resched::None);
        check(&h);
    }
}

#[test]
fn fair_tick_resched_is_lazy_only_in_lazy_mode() {
    for mode in PreemptMode::ALL {
        let mut h = H::one();
        set_mode(&h, mode);
        h.spawn(1, TaskParams::default());
        h.spawn(2, TaskParams::default());
        h.pick();
        // The running task's protection (one base slice, 0.7 ms) ends before
        // this tick: the tick asks for a repick, lazily only in lazy mode.
        h.adv(MS);
        let r = h.rq.task_tick();
        let want = if mode == PreemptMode::Lazy {
            Resched::Lazy
        } else {
            Resched::Now
        };
        assert_eq!(r, want, "{mode:?}");
        if mode == PreemptMode::Lazy {
            h.adv(MS);
            assert_eq!(
                h.rq.task_tick(),
                Resched::Now,
                "lazy: upgraded at the next tick"
            );
        }
    }
}

#[test]
fn rt_wakeups_are_now_in_every_mode() {
    for mode in PreemptMode::ALL {
        let mut h = H::one();
        set_mode(&h, mode);
        h.spawn(1, TaskParams::fifo(10));
        h.pick();
        let d = wake_fresh(&mut h, 2, TaskParams::fifo(20));
        assert_eq!(d.reason, WakeupReason::RtHigherPriority, "{mode:?}");
        assert!(d.preempt);
        assert_eq!(d.resched, Resched::Now, "{mode:?}");
        assert_eq!(h.pick(), Some(2));
        // Equal or lower priority: no preemption.
        let d = wake_fresh(&mut h, 3, TaskParams::fifo(20));
        assert_eq!(d.reason, WakeupReason::RtNotHigher);
        assert!(!d.preempt);
        let d = wake_fresh(&mut h, 4, TaskParams::rr(5));
        assert_eq!(d.reason, WakeupReason::RtNotHigher);
        assert_eq!(d.resched, Resched::None);
        assert_eq!(h.pick(), Some(2));
    }
}

#[test]
fn idle_target_is_always_now() {
    for mode in PreemptMode::ALL {
        for p in [
            TaskParams::default(),
            TaskParams::fair(Policy::Batch),
            TaskParams::fair(Policy::Idle),
            TaskParams::fifo(1),
        ] {
            let mut h = H::one();
            set_mode(&h, mode);
            assert_eq!(h.curr(), None);
            let d = wake_fresh(&mut h, 1, p);
            assert_eq!(d.reason, WakeupReason::IdleCpu, "{mode:?} {p:?}");
            assert!(d.preempt);
            assert_eq!(d.resched, Resched::Now, "{mode:?} {p:?}");
            h.rq.clear_need_resched();
            assert_eq!(h.rq.resched_curr(Resched::Lazy), Resched::Now, "{mode:?}");
        }
    }
}

// ---- BATCH / IDLE rows ----

#[test]
fn batch_and_idle_wakees_never_preempt_a_normal_current() {
    for mode in PreemptMode::ALL {
        for (p, row) in [
            (TaskParams::fair(Policy::Batch), FairWakeup::NotNormalPolicy),
            (TaskParams::fair(Policy::Idle), FairWakeup::IdleWakee),
        ] {
            let mut h = H::one();
            set_mode(&h, mode);
            h.spawn(1, H::slice(20 * MS));
            h.pick();
            h.adv(2 * MS);
            // Short slice and zero lag: as a NORMAL task it would preempt.
            let d = wake_fresh(
                &mut h,
                2,
                TaskParams {
                    slice_ns: 100 * US,
                    ..p
                },
            );
            assert_eq!(d.reason, WakeupReason::Fair(row), "{mode:?} {p:?}");
            assert!(!d.preempt);
            assert_eq!(d.resched, Resched::None);
        }
    }
}

#[test]
fn batch_wakee_is_eligible_but_waits_for_the_tick() {
    let mut h = H::one();
    h.spawn(1, TaskParams::default());
    h.pick();
    h.adv(2 * MS);
    let d = wake_fresh(&mut h, 2, TaskParams::fair(Policy::Batch));
    assert!(!d.preempt);
    assert!(h.rq.entity_eligible(TaskId(2)), "zero lag: eligible");
    // The tick (protection long over, nr_queued > 1) hands it the CPU.
    h.tick();
    assert_eq!(h.curr(), Some(2));
    // A BATCH current is preempted by NORMAL wakees like any other.
    let d = wake_fresh(&mut h, 3, H::slice(100 * US));
    assert!(d.preempt, "{:?}", d.reason);
}

#[test]
fn normal_wakee_preempts_protected_sched_idle_current() {
    for mode in PreemptMode::ALL {
        let mut h = H::one();
        set_mode(&h, mode);
        h.spawn(
            1,
            TaskParams {
                policy: Policy::Idle,
                slice_ns: 100 * MS,
                ..TaskParams::default()
            },
        );
        h.pick();
        h.adv(100 * US);
        let vr = h.se(1).vruntime;
        assert!(h.se(1).vprot.wrapping_sub(vr) as i64 > 0, "protected");
        // A long-slice NORMAL wakee: no PREEMPT_SHORT; the IDLE row decides.
        let d = wake_fresh(&mut h, 2, H::slice(100 * MS));
        assert_eq!(
            d.reason,
            WakeupReason::Fair(FairWakeup::IdleCurrent),
            "{mode:?}"
        );
        assert!(d.preempt);
        // Immediate in every model, lazy included: a SCHED_IDLE task has
        // nothing to finish (the review of the PREEMPT_AUTO series: NORMAL vs
        // SCHED_IDLE is promoted to TIF_NEED_RESCHED; docs/references.md).
        // Linux 6.19 itself asks lazily at this row.
        assert_eq!(d.resched, Resched::Now, "{mode:?}");
        let se = h.se(1);
        assert!(
            se.vprot.wrapping_sub(se.vruntime) as i64 <= 0,
            "protection cancelled"
        );
        assert_eq!(h.pick(), Some(2));
        check(&h);
        // SCHED_IDLE vs SCHED_IDLE: ordinary EEVDF rules (no IdleCurrent).
        let mut h = H::one();
        set_mode(&h, mode);
        h.spawn(1, TaskParams::fair(Policy::Idle));
        h.pick();
        let d = wake_fresh(&mut h, 2, TaskParams::fair(Policy::Idle));
        assert!(!matches!(
            d.reason,
            WakeupReason::Fair(FairWakeup::IdleCurrent | FairWakeup::IdleWakee)
        ));
    }
}

// ---- class changes ----

#[test]
fn setattr_moves_a_running_task_between_classes() {
    let mut h = H::one();
    h.spawn(1, TaskParams::default());
    h.spawn(2, TaskParams::default());
    h.pick();
    let run = h.curr().unwrap();
    let other = 3 - run;
    h.adv(300 * US);
    // Fair -> FIFO while running: it stays current, no reschedule.
    let r =
        h.rq.sched_setattr(TaskId(run), TaskParams::fifo(50))
            .unwrap();
    check(&h);
    assert_eq!(r, Resched::None);
    assert_eq!(h.rq.rt.nr_running, 1);
    assert_eq!(h.rq.fair.nr_queued, 1);
    assert!(
        h.rq.fair.curr().is_none(),
        "no running fair entity any more"
    );
    // It now starves the other one.
    h.run_ms(30);
    assert_eq!(h.curr(), Some(run));
    let starved = h.runtime(other);
    h.run_ms(10);
    assert_eq!(h.runtime(other), starved);
    // FIFO -> NORMAL while running: lower priority, reschedule at once.
    let r =
        h.rq.sched_setattr(TaskId(run), TaskParams::default())
            .unwrap();
    check(&h);
    assert_eq!(r, Resched::Now);
    h.pick();
    check(&h);
    h.run_ms(50);
    assert!(
        h.runtime(other) > starved + 10 * MS,
        "fair again: the other runs"
    );
    // RT priority changes while running: a queued higher RT task takes over.
    h.rq.sched_setattr(TaskId(run), TaskParams::fifo(50))
        .unwrap();
    h.rq.sched_setattr(TaskId(other), TaskParams::fifo(40))
        .unwrap();
    h.pick();
    check(&h);
    assert_eq!(h.curr(), Some(run));
    let r =
        h.rq.sched_setattr(TaskId(run), TaskParams::fifo(30))
            .unwrap();
    assert_eq!(r, Resched::Now, "dropped below a queued RT task");
    assert_eq!(h.pick(), Some(other));
    check(&h);
    // FIFO -> IDLE policy while queued and running.
    h.rq.sched_setattr(TaskId(other), TaskParams::fair(Policy::Idle))
        .unwrap();
    check(&h);
    assert_eq!(h.pick(), Some(run));
    h.rq.sched_setattr(TaskId(run), TaskParams::fair(Policy::Batch))
        .unwrap();
    check(&h);
    h.run_ms(20);
    assert_eq!(h.rq.rt.nr_running, 0);
    assert_eq!(h.rq.fair.nr_queued, 2);
}

#[test]
fn setattr_on_queued_delayed_and_blocked_tasks() {
    let mut h = H::one();
    h.spawn(1, TaskParams::default());
    h.spawn(2, TaskParams::default());
    h.spawn(3, TaskParams::default());
    h.pick();
    h.run_ms(10);
    // Queued fair -> RR: it preempts the fair current.
    let q = (1..=3).find(|&i| Some(i) != h.curr()).unwrap();
    let r = h.rq.sched_setattr(TaskId(q), TaskParams::rr(5)).unwrap();
    check(&h);
    assert_eq!(r, Resched::Now);
    assert_eq!(h.pick(), Some(q));
    assert_eq!(h.task(q).rt.slice_left_ns, h.cfg.tunables.rr_timeslice_ns());
    // Back to fair while queued (not running).
    h.rq.sched_setattr(TaskId(q), TaskParams::default())
        .unwrap();
    h.pick();
    check(&h);
    // Make a delayed task: the running one runs 3 ms without a tick (its
    // lag drops by about 2 ms against 3 tasks), then blocks while ineligible.
    let d = h.curr().unwrap();
    h.adv(3 * MS);
    h.block();
    check(&h);
    assert_eq!(
        h.rq.task(TaskId(d)).map(|t| t.state),
        Some(TaskState::Delayed)
    );
    // A delayed task changed to FIFO: its dequeue completes, it stays asleep.
    h.rq.sched_setattr(TaskId(d), TaskParams::fifo(10)).unwrap();
    check(&h);
    assert_eq!(h.rq.task(TaskId(d)).unwrap().state, TaskState::Blocked);
    assert_eq!(h.rq.rt.nr_running, 0);
    // Woken, it comes back as FIFO and preempts.
    let w = h.wake(d, WakeFlags::empty()).unwrap();
    check(&h);
    assert_eq!(w.reason, WakeupReason::HigherClass);
    assert_eq!(h.pick(), Some(d));
    // A fully blocked RT task moved back to fair while asleep.
    h.block();
    check(&h);
    let st = h.off.get_mut(&d).unwrap();
    sched::rq::set_params_offrq(st, TaskParams::default());
    let w = h.wake(d, WakeFlags::empty()).unwrap();
    check(&h);
    assert!(matches!(w.reason, WakeupReason::Fair(_)), "{:?}", w.reason);
    assert_eq!(h.rq.rt.nr_running, 0);
    // Invalid parameters change nothing.
    let before = h.task(d).params;
    assert!(h.rq.sched_setattr(TaskId(d), TaskParams::fifo(0)).is_err());
    assert!(h
        .rq
        .sched_setattr(TaskId(d), TaskParams::fifo(100))
        .is_err());
    assert_eq!(h.task(d).params, before);
    check(&h);
}

// ---- RR and FIFO ----

#[test]
fn rr_timeslice_comes_from_the_tunable() {
    let mut h = H::one();
    h.cfg
        .tunables
        .set("kernel.sched_rr_timeslice_ms", "10")
        .unwrap();
    h.spawn(1, TaskParams::rr(20));
    h.spawn(2, TaskParams::rr(20));
    assert_eq!(h.task(1).rt.slice_left_ns, 10 * MS);
    h.pick();
    // At HZ=1000 each runs exactly 10 ticks, then the other.
    let mut runs = Vec::new();
    let mut cur = h.curr().unwrap();
    let mut len = 0;
    for _ in 0..60 {
        h.tick();
        check(&h);
        len += 1;
        if h.curr().unwrap() != cur {
            runs.push((cur, len));
            cur = h.curr().unwrap();
            len = 0;
        }
    }
    assert!(runs.len() >= 5, "{runs:?}");
    for w in runs.windows(2) {
        assert_ne!(w[0].0, w[1].0, "alternates: {runs:?}");
    }
    assert!(runs.iter().all(|&(_, l)| l == 10), "{runs:?}");
    // A new value applies from each task's next refill (at its expiry).
    h.cfg
        .tunables
        .set("kernel.sched_rr_timeslice_ms", "3")
        .unwrap();
    let mut runs = Vec::new();
    let mut cur = h.curr().unwrap();
    let mut len = 0;
    for _ in 0..40 {
        h.tick();
        len += 1;
        if h.curr().unwrap() != cur {
            runs.push(len);
            cur = h.curr().unwrap();
            len = 0;
        }
    }
    assert!(runs.len() >= 6, "{runs:?}");
    assert!(
        runs[2..].iter().all(|&l| l == 3),
        "the refilled slice is 3 ms: {runs:?}"
    );
    // A lone RR task is not rescheduled at expiry; its slice is refilled.
    let mut h = H::one();
    h.spawn(1, TaskParams::rr(20));
    h.pick();
    for _ in 0..250 {
        h.adv(MS);
        assert_eq!(h.rq.task_tick(), Resched::None);
    }
    assert!(h.task(1).rt.slice_left_ns <= 100 * MS);
    // A FIFO task is never rotated by the tick, even with a peer waiting.
    let mut h = H::one();
    h.spawn(1, TaskParams::fifo(20));
    h.spawn(2, TaskParams::fifo(20));
    assert_eq!(h.pick(), Some(1));
    h.run_ms(500);
    assert_eq!(h.curr(), Some(1));
    assert_eq!(h.runtime(2), 0);
    // It runs until it blocks; its peer goes next; yield moves it to the tail.
    h.block();
    assert_eq!(h.curr(), Some(2));
    h.wake(1, WakeFlags::empty());
    assert_eq!(h.curr(), Some(2));
    h.rq.yield_task();
    assert_eq!(h.pick(), Some(1));
}

#[test]
fn fifo_pick_across_99_priorities() {
    // Task id = priority (1..=99), plus 100 and 101: a runqueue of 128 slots
    // (the common harness holds 64).
    let cfg = std::sync::Arc::new(sched::SchedConfig::new(1, 1000));
    let mut rq = sched::Rq::new(cpu_id(0), cfg, 128);
    rq.update_rq_clock(1);
    let mut order: Vec<u8> = (1..=99).collect();
    // A fixed shuffle (no rand dependency): multiply by a unit mod 101.
    order.sort_by_key(|&p| (p as u32 * 37) % 101);
    for (i, &p) in order.iter().enumerate() {
        let d = rq.wake_up_new_task(TaskId(p as u32), SchedTask::new(TaskParams::fifo(p)));
        rq.check().unwrap();
        // Each wakee preempts iff it is above everything queued so far.
        let above = order[..i].iter().all(|&q| q < p);
        assert_eq!(d.preempt, above, "prio {p}");
        // The O(1) pick is the head of the highest non-empty list.
        let top = order[..=i].iter().copied().max().unwrap();
        assert_eq!(rq.rt.highest_prio(), Some(top));
        assert_eq!(
            rq.rt.pick_task().and_then(|s| rq.task_id(s)),
            Some(TaskId(top as u32))
        );
        rq.pick_next_task();
    }
    assert_eq!(rq.rt.nr_running, 99);
    // Two more at the bitmap's 63/64 word boundary: FIFO order within a
    // priority (behind the first ones).
    rq.wake_up_new_task(TaskId(100), SchedTask::new(TaskParams::fifo(64)));
    rq.wake_up_new_task(TaskId(101), SchedTask::new(TaskParams::fifo(63)));
    rq.check().unwrap();
    let mut seen = Vec::new();
    rq.pick_next_task();
    while let Some(c) = rq.curr() {
        seen.push(c.0);
        rq.schedule(true);
        rq.check().unwrap();
    }
    let mut want: Vec<u32> = Vec::new();
    for p in (1..=99u32).rev() {
        want.push(p);
        match p {
            64 => want.push(100),
            63 => want.push(101),
            _ => {}
        }
    }
    assert_eq!(seen, want);
    assert_eq!(rq.rt.highest_prio(), None);
    assert_eq!(rq.nr_running(), 0);
}
