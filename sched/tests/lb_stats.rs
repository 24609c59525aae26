//! The per-domain load-balance statistics (`Scheduler::lb_stats`), counted
//! where Linux 7.2's `sched_balance_rq` (kernel/sched/fair.c) counts its
//! `sd->lb_*[idle]` and its CPU stopper its `sd->alb_*`, as
//! `/proc/schedstat` prints them: each test sets up one simple case and
//! checks the counters of the one level (two CPUs, one MC domain) against
//! what Linux would count.

use crate::common;
use common::cpu_id;

use common::plat::{machine, spawn_on, switch, Plat};
use sched::smp::{IdleType, LbStats, Scheduler, Woke};
use sched::{PrevAction, TaskId, Topology, WakeFlags};
use std::sync::atomic::Ordering;

fn stats(s: &Scheduler<Plat>, cpu: usize) -> LbStats {
    s.lb_stats(cpu_id(cpu), 0).expect("level 0 exists")
}

const NOT_IDLE: usize = IdleType::NotIdle as usize;
const IDLE: usize = IdleType::Idle as usize;
const NEWLY_IDLE: usize = IdleType::NewlyIdle as usize;

/// Linux's order of `enum cpu_idle_type` since 6.10, which
/// `/proc/schedstat` version 16 and later print in.
#[test]
fn idle_types_are_in_linux_order() {
    assert_eq!((NOT_IDLE, IDLE, NEWLY_IDLE), (0, 1, 2));
}

/// A fresh scheduler has counted nothing, and has no level past its
/// domains.
#[test]
fn nothing_counted_before_any_pass() {
    let s = machine(Topology::flat(2));
    assert_eq!(stats(&s, 1), LbStats::default());
    assert_eq!(s.lb_stats(cpu_id(1), 1), None);
    assert_eq!(s.lb_stats(cpu_id(7), 0), None);
}

/// One task on each CPU: a periodic pass of busy CPU 1 finds no busier
/// group (`lb_nobusyg`) and ends balanced (`lb_balanced`), under
/// `__CPU_NOT_IDLE`.
#[test]
fn a_balanced_pass_counts_lb_balanced_and_nobusyg() {
    let s = machine(Topology::flat(2));
    spawn_on(&s, 1, 0, false);
    spawn_on(&s, 2, 1, false);
    assert!(s.load_balance(cpu_id(1), false).is_empty());
    let st = stats(&s, 1);
    assert_eq!(st.lb_count, [1, 0, 0]);
    assert_eq!(st.lb_balanced, [1, 0, 0]);
    assert_eq!(st.lb_nobusyg, [1, 0, 0]);
    assert_eq!(st.lb_failed, [0; 3]);
    assert_eq!(st.lb_gained, [0; 3]);
    assert_eq!(st.lb_nobusyq, [0; 3]);
    // CPU 0 did not balance: its counters did not move.
    assert_eq!(stats(&s, 0), LbStats::default());
}

/// Four cache-cold tasks on CPU 0, idle CPU 1: a periodic pass of CPU 1
/// (`CPU_IDLE`) sets out to move 2 tasks (`lb_imbalance_task`) and moves
/// them (`lb_gained` 2); no failure, not balanced.
#[test]
fn a_pass_that_pulls_counts_the_tasks_gained() {
    let s = machine(Topology::flat(2));
    for id in 1..=4 {
        spawn_on(&s, id, 0, false);
    }
    assert_eq!(s.load_balance(cpu_id(1), false).len(), 2);
    let st = stats(&s, 1);
    assert_eq!(st.lb_count, [0, 1, 0]);
    assert_eq!(st.lb_gained, [0, 2, 0]);
    assert_eq!(st.lb_imbalance_task, [0, 2, 0]);
    assert_eq!(st.lb_balanced, [0; 3]);
    assert_eq!(st.lb_failed, [0; 3]);
}

/// The same, newly idle: counted under `CPU_NEWLY_IDLE`, one task gained
/// (a newly idle pass of a preemptible kernel detaches one task at most).
#[test]
fn a_newly_idle_pass_counts_under_newly_idle() {
    let s = machine(Topology::flat(2));
    for id in 1..=4 {
        spawn_on(&s, id, 0, false);
    }
    assert_eq!(s.load_balance(cpu_id(1), true).len(), 1);
    let st = stats(&s, 1);
    assert_eq!(st.lb_count, [0, 0, 1]);
    assert_eq!(st.lb_gained, [0, 0, 1]);
    assert_eq!(st.lb_balanced, [0; 3]);
}

/// CPU 0 runs task 1 (allowed anywhere) with task 2 queued behind it,
/// pinned to CPU 0; CPU 1 is idle. The imbalance is one task and the
/// only task CPU 1 may take is running: each pass finds the source and
/// moves nothing (`lb_failed`); the fourth (failures above
/// `cache_nice_tries + 2`) asks for the push, and CPU 0's switch carries
/// it out: `alb_count` and `alb_pushed`, on CPU 1's level spanning CPU 0.
#[test]
fn failed_passes_count_lb_failed_and_the_push_alb_pushed() {
    let s = machine(Topology::flat(2));
    spawn_on(&s, 1, 0, false);
    spawn_on(&s, 2, 0, true);
    for k in 1..=4u32 {
        let p = s.load_balance(cpu_id(1), false);
        assert!(p.is_empty());
        assert_eq!(p.active_balance(), k == 4, "pass {k}");
        let st = stats(&s, 1);
        assert_eq!(st.lb_failed, [0, k, 0]);
        assert_eq!(st.lb_count, [0, k, 0]);
        assert_eq!(st.lb_imbalance_task, [0, k, 0]);
        assert_eq!(st.alb_count, 0, "nothing pushed before the switch");
    }
    assert_eq!(switch(&s, 0, PrevAction::Stays), Some(cpu_id(1)));
    let st = stats(&s, 1);
    assert_eq!((st.alb_count, st.alb_pushed, st.alb_failed), (1, 1, 0));
    assert_eq!(st.lb_balanced, [0; 3]);
    // The source counts nothing: the counters are the puller's.
    assert_eq!(stats(&s, 0), LbStats::default());
    // Balanced now (CPU 1 runs task 1): counted as such, under NOT_IDLE.
    assert!(s.load_balance(cpu_id(1), false).is_empty());
    let st = stats(&s, 1);
    assert_eq!(st.lb_balanced, [1, 0, 0]);
}

/// A push asked for but dropped at the source's switch (its task went to
/// sleep) counts no active balance (Linux's stopper counts nothing when
/// the source has no task to move).
#[test]
fn a_dropped_push_counts_no_active_balance() {
    let s = machine(Topology::flat(2));
    spawn_on(&s, 1, 0, false);
    spawn_on(&s, 2, 0, true);
    for _ in 0..4 {
        s.load_balance(cpu_id(1), false);
    }
    assert_eq!(switch(&s, 0, PrevAction::Sleeps), None);
    let st = stats(&s, 1);
    assert_eq!((st.alb_count, st.alb_pushed, st.alb_failed), (0, 0, 0));
    assert_eq!(st.lb_failed, [0, 4, 0]);
}

/// Every task on CPU 0 pinned there, CPU 1 idle: the pass finds the source
/// but no task may come (`LBF_ALL_PINNED`), retries without it, finds no
/// busier group, and ends at `out_all_pinned`: `lb_balanced`, no failure.
#[test]
fn an_all_pinned_pass_counts_lb_balanced() {
    let s = machine(Topology::flat(2));
    for id in 1..=3 {
        spawn_on(&s, id, 0, true);
    }
    assert!(s.load_balance(cpu_id(1), false).is_empty());
    let st = stats(&s, 1);
    assert_eq!(st.lb_count, [0, 1, 0]);
    assert_eq!(st.lb_balanced, [0, 1, 0]);
    assert_eq!(st.lb_failed, [0; 3]);
    assert_eq!(st.lb_gained, [0; 3]);
}

/// 2 cores x 2 threads (CPUs 0-1 and 2-3), one LLC: levels SMT (0) and
/// MC (1). Sleepers slept on CPU 2 (task 10), CPU 1 (11) and CPU 0 (12),
/// then every CPU runs a task (1 on CPU 0, the waker, up to 4 on CPU 3),
/// so no idle CPU can take a wakee.
fn smt_machine_with_sleepers() -> Scheduler<Plat> {
    let topo = Topology::from_ids(&[0, 0, 1, 1], &[0; 4], &[0; 4]).expect("2 cores x 2 threads");
    let s = machine(topo);
    assert_eq!(s.domains(cpu_id(0)).len(), 2);
    for (id, cpu) in [(10, 2), (11, 1), (12, 0)] {
        spawn_on(&s, id, cpu, false);
        assert_eq!(switch(&s, cpu, PrevAction::Sleeps), None);
    }
    for cpu in 0..4 {
        spawn_on(&s, 1 + cpu as u32, cpu, false);
        assert_eq!(s.cpu_rq(cpu_id(cpu)).curr(), Some(TaskId(1 + cpu as u32)));
    }
    s
}

/// The wakeups' counters, as Linux 7.2's `ttwu_stat()` and `wake_affine()`
/// count them, and ours' `ttwu_migrate`:
/// - a sync wakeup by CPU 0's lone task of task 10, last on the other
///   core: `wake_affine` at the MC level (the waker's lowest spanning CPU
///   2) takes the waker's CPU (WA_IDLE's sync rule), nothing is idle, so it
///   lands there: `ttwu_move_affine` on CPU 0's MC domain, no remote
///   wakeup, and a wakeup migration counted on CPU 0's MC domain (the
///   destination's level spanning CPU 2);
/// - a plain wakeup of task 11, last on CPU 0's sibling, which WA_WEIGHT
///   leaves there (CPU 0 now runs two tasks; CPU 1 one, and task 11's
///   blocked load is its own): remote, at the SMT level; nothing moved;
/// - task 12, last on CPU 0, woken by CPU 0: local, counts nothing.
#[test]
fn wakeups_count_wake_remote_move_affine_and_migrate_at_their_levels() {
    let s = smt_machine_with_sleepers();
    let level = |cpu, l| s.lb_stats(cpu_id(cpu), l).expect("level exists");
    let ttwu = |cpu, l| {
        let st = level(cpu, l);
        (st.ttwu_wake_remote, st.ttwu_move_affine, st.ttwu_migrate)
    };
    let to = |w: Woke| w.cpu().index();
    assert_eq!(
        to(s.wake(TaskId(10), WakeFlags::SYNC, cpu_id(0)).unwrap()),
        0
    );
    assert_eq!(ttwu(0, 0), (0, 0, 0));
    assert_eq!(ttwu(0, 1), (0, 1, 1));
    assert_eq!(
        to(s.wake(TaskId(11), WakeFlags::empty(), cpu_id(0)).unwrap()),
        1
    );
    assert_eq!(ttwu(0, 0), (1, 0, 0));
    assert_eq!(ttwu(0, 1), (0, 1, 1));
    assert_eq!(
        to(s.wake(TaskId(12), WakeFlags::SYNC, cpu_id(0)).unwrap()),
        0
    );
    assert_eq!((ttwu(0, 0), ttwu(0, 1)), ((1, 0, 0), (0, 1, 1)));
    // Only the waker's CPU counted (the moves at the destination, CPU 0
    // here too); no balance pass ran anywhere.
    for cpu in 1..4 {
        for l in 0..2 {
            assert_eq!(level(cpu, l), LbStats::default(), "cpu {cpu} level {l}");
        }
    }
}

/// A wakeup of a task still queued where it was (woken in place) by
/// another CPU is a remote wakeup too (Linux's `ttwu_runnable` path also
/// ends in `ttwu_stat()`), and moves nothing.
#[test]
fn an_in_place_wakeup_by_another_cpu_is_remote() {
    let s = smt_machine_with_sleepers();
    // Task 3, running on CPU 2, woken by CPU 0's task.
    let w = s.wake(TaskId(3), WakeFlags::empty(), cpu_id(0)).unwrap();
    assert!(matches!(w, Woke::InPlace { .. }), "{w:?}");
    let mc = s.lb_stats(cpu_id(0), 1).unwrap();
    assert_eq!(
        (mc.ttwu_wake_remote, mc.ttwu_move_affine, mc.ttwu_migrate),
        (1, 0, 0)
    );
    assert_eq!(s.lb_stats(cpu_id(0), 0).unwrap(), LbStats::default());
}

/// With schedstats off ([`sched::smp::Platform::schedstat_enabled`] false)
/// the wakeups count nothing, as Linux's `ttwu_stat()` returns at once and
/// its `schedstat_inc(sd->ttwu_move_affine)` adds nothing, and neither
/// does a balance pass; switched on again, the next wakeups count as ever.
#[test]
fn wakeup_counters_count_only_with_schedstats_on() {
    let s = smt_machine_with_sleepers();
    let ttwu = |cpu, l| {
        let st = s.lb_stats(cpu_id(cpu), l).expect("level exists");
        (st.ttwu_wake_remote, st.ttwu_move_affine, st.ttwu_migrate)
    };
    s.platform.schedstats.store(false, Ordering::Relaxed);
    // The first test's wakeups (an affine move, a remote one, a local
    // one) land where they did with the counters on: only the counting
    // differs.
    let to = |w: Woke| w.cpu().index();
    assert_eq!(
        to(s.wake(TaskId(10), WakeFlags::SYNC, cpu_id(0)).unwrap()),
        0
    );
    assert_eq!(
        to(s.wake(TaskId(11), WakeFlags::empty(), cpu_id(0)).unwrap()),
        1
    );
    // Task 3, running on CPU 2, woken in place by CPU 0.
    let w = s.wake(TaskId(3), WakeFlags::empty(), cpu_id(0)).unwrap();
    assert!(matches!(w, Woke::InPlace { .. }), "{w:?}");
    for cpu in 0..4 {
        for l in 0..2 {
            assert_eq!(ttwu(cpu, l), (0, 0, 0), "cpu {cpu} level {l}");
        }
    }
    // Nor does a balance pass (one that counts 1 at each level when on:
    // `balance_counters_count_only_with_schedstats_on`).
    let _ = s.load_balance(cpu_id(1), false);
    for l in 0..2 {
        assert_eq!(s.lb_stats(cpu_id(1), l).unwrap(), LbStats::default());
    }
    // On again: CPU 3 wakes task 12 (last on CPU 0), and `wake_affine`
    // at CPU 3's MC level moves it to CPU 3: counted there.
    s.platform.schedstats.store(true, Ordering::Relaxed);
    let w = s.wake(TaskId(12), WakeFlags::empty(), cpu_id(3)).unwrap();
    assert_eq!(w.cpu(), cpu_id(3), "{w:?}");
    assert_eq!(ttwu(3, 1), (0, 1, 1));
}

/// `wake_counting` hands its caller's counter (the kernel's `ttwu`,
/// `ttwu_local` and rows) the wakeup it returns, once, and only while
/// schedstats is on: the caller's statistics of a wakeup under the
/// scheduler's one ask of the switch. Off, the wakeup is made all the same.
#[test]
fn wake_counting_calls_its_counter_only_with_schedstats_on() {
    let s = smt_machine_with_sleepers();
    let mut seen = Vec::new();
    s.platform.schedstats.store(false, Ordering::Relaxed);
    let w = s
        .wake_counting(TaskId(10), WakeFlags::SYNC, cpu_id(0), |w| {
            seen.push(w.cpu())
        })
        .unwrap();
    assert_eq!(w.cpu(), cpu_id(0), "{w:?}");
    assert!(seen.is_empty(), "{seen:?}");
    s.platform.schedstats.store(true, Ordering::Relaxed);
    // Placed: task 11, left on CPU 1 (see the test above).
    let w = s
        .wake_counting(TaskId(11), WakeFlags::empty(), cpu_id(0), |w| {
            seen.push(w.cpu())
        })
        .unwrap();
    assert!(matches!(w, Woke::Placed { .. }), "{w:?}");
    assert_eq!(seen, [cpu_id(1)]);
    // Woken in place: task 3, running on CPU 2.
    let w = s
        .wake_counting(TaskId(3), WakeFlags::empty(), cpu_id(0), |w| {
            seen.push(w.cpu())
        })
        .unwrap();
    assert!(matches!(w, Woke::InPlace { .. }), "{w:?}");
    assert_eq!(seen, [cpu_id(1), cpu_id(2)]);
}

/// `wake_counting_if` counts by its parameter, not by the switch: `true`
/// as `wake_counting` with schedstats on (the caller's counter and the
/// domain statistics), `false` nothing, with schedstats on as well; the
/// wakeup is the same either way.
#[test]
fn wake_counting_if_counts_by_its_parameter() {
    let on = smt_machine_with_sleepers();
    let off = smt_machine_with_sleepers();
    for s in [&on, &off] {
        s.platform.schedstats.store(true, Ordering::Relaxed);
    }
    let (mut seen_on, mut seen_off) = (Vec::new(), Vec::new());
    for (id, from) in [(11, 0), (3, 0)] {
        let a = on
            .wake_counting_if::<true>(TaskId(id), WakeFlags::empty(), cpu_id(from), |w| {
                seen_on.push(w.cpu())
            })
            .unwrap();
        let b = off
            .wake_counting_if::<false>(TaskId(id), WakeFlags::empty(), cpu_id(from), |w| {
                seen_off.push(w.cpu())
            })
            .unwrap();
        assert_eq!(a, b);
    }
    assert_eq!(seen_on, [cpu_id(1), cpu_id(2)]);
    assert!(seen_off.is_empty(), "{seen_off:?}");
    // The domain statistics of the waker's CPU: two remote wakeups, task
    // 11 on its SMT sibling and task 3 in place at the MC level.
    let ttwu = |s: &Scheduler<Plat>, l| {
        let st = s.lb_stats(cpu_id(0), l).expect("level exists");
        (st.ttwu_wake_remote, st.ttwu_move_affine, st.ttwu_migrate)
    };
    assert_eq!((ttwu(&on, 0), ttwu(&on, 1)), ((1, 0, 0), (1, 0, 0)));
    for l in 0..2 {
        assert_eq!(off.lb_stats(cpu_id(0), l).unwrap(), LbStats::default());
    }
}

/// With schedstats off the balance passes and the active push count
/// nothing (Linux's `schedstat_inc()` / `schedstat_add()` add nothing and
/// its `update_lb_imbalance_stat` returns at once), while they balance as
/// with it on: the same pulls, the same push after the same failures (the
/// failure count that asks for it, `nr_balance_failed`, is no statistic).
/// Switched on, the next pass counts.
#[test]
fn balance_counters_count_only_with_schedstats_on() {
    // The counters of CPU 1 (the puller) after a pass that pulls and after
    // four failed passes and the push they ask for (the cases of
    // `a_pass_that_pulls_counts_the_tasks_gained` and
    // `failed_passes_count_lb_failed_and_the_push_alb_pushed`); CPU 0
    // (the source) counts nothing either way.
    let run = |on: bool| -> [LbStats; 2] {
        let pull = machine(Topology::flat(2));
        pull.platform.schedstats.store(on, Ordering::Relaxed);
        for id in 1..=4 {
            spawn_on(&pull, id, 0, false);
        }
        assert_eq!(pull.load_balance(cpu_id(1), false).len(), 2, "on {on}");
        let push = machine(Topology::flat(2));
        push.platform.schedstats.store(on, Ordering::Relaxed);
        spawn_on(&push, 1, 0, false);
        spawn_on(&push, 2, 0, true);
        for k in 1..=4 {
            let p = push.load_balance(cpu_id(1), false);
            assert!(p.is_empty());
            assert_eq!(p.active_balance(), k == 4, "on {on}, pass {k}");
        }
        assert_eq!(switch(&push, 0, PrevAction::Stays), Some(cpu_id(1)));
        assert_eq!(stats(&pull, 0), LbStats::default());
        assert_eq!(stats(&push, 0), LbStats::default());
        [stats(&pull, 1), stats(&push, 1)]
    };
    let [pull, push] = run(true);
    assert_eq!(
        (pull.lb_count, pull.lb_imbalance_task, pull.lb_gained),
        ([0, 1, 0], [0, 2, 0], [0, 2, 0])
    );
    assert_eq!(
        (push.lb_count, push.lb_imbalance_task, push.lb_failed),
        ([0, 4, 0], [0, 4, 0], [0, 4, 0])
    );
    assert_eq!(push.alb_fields(), [1, 0, 1]);
    assert_eq!(run(false), [LbStats::default(); 2]);
    // Off, a balanced pass counts nothing; on, the next one counts
    // `lb_count`, `lb_nobusyg` and `lb_balanced`.
    let s = machine(Topology::flat(2));
    s.platform.schedstats.store(false, Ordering::Relaxed);
    spawn_on(&s, 1, 0, false);
    spawn_on(&s, 2, 1, false);
    assert!(s.load_balance(cpu_id(1), false).is_empty());
    assert_eq!(stats(&s, 1), LbStats::default());
    s.platform.schedstats.store(true, Ordering::Relaxed);
    assert!(s.load_balance(cpu_id(1), false).is_empty());
    let st = stats(&s, 1);
    assert_eq!(
        (st.lb_count, st.lb_nobusyg, st.lb_balanced),
        ([1, 0, 0], [1, 0, 0], [1, 0, 0])
    );
}
