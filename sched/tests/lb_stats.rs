//! The per-domain load-balance statistics (`Scheduler::lb_stats`), counted
//! where Linux 7.2's `sched_balance_rq` (kernel/sched/fair.c) counts its
//! `sd->lb_*[idle]` and its CPU stopper its `sd->alb_*`, as
//! `/proc/schedstat` prints them: each test sets up one simple case and
//! checks the counters of the one level (two CPUs, one MC domain) against
//! what Linux would count.

mod common;
use common::cpu_id;

use common::plat::{machine, spawn_on, switch, Plat};
use sched::smp::{IdleType, LbStats, Scheduler};
use sched::{PrevAction, Topology};

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
