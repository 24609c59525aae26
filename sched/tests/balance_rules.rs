//! Rules of Linux 7.2's load balancer (kernel/sched/fair.c) for CPU
//! affinity and SCHED_IDLE tasks:
//! - `LBF_DST_PINNED`: tasks that may not run on the balancing CPU but may
//!   on another CPU of its group go there (`can_migrate_task`'s
//!   `new_dst_cpu`, `sched_balance_rq`'s `more_balance`);
//! - `LBF_SOME_PINNED` and `group_imbalanced`: a level that affinity kept
//!   from balancing marks its group for the level above
//!   (`sd_parent->groups->sgc->imbalance`), which then moves any task out
//!   of it (`calculate_imbalance`'s `group_imbalanced` case);
//! - a CPU running only SCHED_IDLE tasks counts as idle for the periodic
//!   balance's intervals (`sched_balance_domains`' `busy`) and for wakeup
//!   placement (`choose_idle_cpu` in `select_idle_sibling`).

use std::sync::atomic::Ordering;

use crate::common;
use common::cpu_id;

use common::plat::{load_cpu, load_cpu_as, machine, nr, Plat};
use sched::smp::Scheduler;
use sched::{CpuMask, Policy, SchedTask, TaskParams, Topology, WakeFlags};

use crate::common::MS;

fn mask(cpus: &[usize]) -> Option<CpuMask> {
    Some(CpuMask::from_cpus(cpus))
}

fn idle_policy() -> TaskParams {
    TaskParams {
        policy: Policy::Idle,
        ..TaskParams::default()
    }
}

/// Two cores {0, 1} and {2, 3}; CPU 2 holds 4 tasks that may run only on
/// CPUs 1 and 2.
fn pinned_away() -> Scheduler<Plat> {
    let s = machine(Topology::uniform(4, 2, 2, 1).unwrap());
    let mut next = 1;
    let allowed = mask(&[1, 2]);
    load_cpu_as(&s, cpu_id(2), 4, &mut next, TaskParams::default(), allowed);
    s
}

/// `LBF_DST_PINNED` (`can_migrate_task`, `sched_balance_rq`): CPU 0
/// balances the MC level for its core {0, 1}; CPU 2 holds 4 tasks that may
/// run only on CPUs 1 and 2. None can come to CPU 0, so the pull goes on
/// from CPU 2 to CPU 1, the first CPU of the local group they may run on,
/// up to the imbalance ((4·2 − 0) / 4 = 2 tasks).
#[test]
fn tasks_pinned_away_from_the_balancing_cpu_go_to_another_cpu_of_its_group() {
    let s = pinned_away();
    let ipis = s.platform.ipis[1].load(Ordering::Relaxed);
    let p = s.load_balance(cpu_id(0), false);
    assert_eq!(p.len(), 2, "two tasks moved");
    assert_eq!((nr(&s, 0), nr(&s, 1), nr(&s, 2)), (0, 2, 2));
    assert!(p.touched().has(cpu_id(1)) && p.touched().has(cpu_id(2)));
    assert_eq!(p.from_cpu(), cpu_id(2));
    // CPU 1 was idle: `attach_task`'s preemption check kicks it.
    assert!(s.platform.ipis[1].load(Ordering::Relaxed) > ipis);
}

/// A newly idle pass never looks for another destination
/// (`can_migrate_task`: "Avoid computing new_dst_cpu - for NEWLY_IDLE").
#[test]
fn a_newidle_pass_does_not_move_tasks_to_another_cpu() {
    let s = pinned_away();
    s.cfg.features.set(sched::Feature::NiRandom, false);
    assert!(s.load_balance(cpu_id(0), true).is_empty());
    assert_eq!((nr(&s, 1), nr(&s, 2)), (0, 4));
}

/// Two cores {0, 1} and {2, 3}: CPUs 0-2 each run a task pinned there, and
/// CPU 2 also holds one allowed on CPUs 0-2 but not 3 (its id returned);
/// CPU 3 is idle. Then CPU 3's passes: its SMT pass finds CPU 2 with two
/// tasks and can take neither, which marks the core {2, 3} imbalanced for
/// the MC level (`sd_parent->groups->sgc->imbalance`).
fn pinned_core(s: &Scheduler<Plat>) -> u32 {
    let mut next = 1;
    for c in 0..3 {
        load_cpu(s, cpu_id(c), 1, &mut next, true);
    }
    let free = next;
    let allowed = mask(&[0, 1, 2]);
    load_cpu_as(s, cpu_id(2), 1, &mut next, TaskParams::default(), allowed);
    // Before the mark: CPU 0 finds the cores balanced, 2 tasks each.
    assert!(s.load_balance(cpu_id(0), false).is_empty());
    assert!(s.load_balance(cpu_id(3), false).is_empty());
    free
}

/// `LBF_SOME_PINNED` and `group_imbalanced`: after [`pinned_core`], CPU 0's
/// MC pass sees 2 tasks on each core, balanced by counts, but the marked
/// core is the busiest (`group_classify`), and one task moves out of it
/// ("try to move any task to fix the imbalance", `calculate_imbalance`).
#[test]
fn a_group_imbalanced_for_affinity_gives_a_task_to_the_level_above() {
    let s = machine(Topology::uniform(4, 2, 2, 1).unwrap());
    let free = pinned_core(&s);
    let p = s.load_balance(cpu_id(0), false);
    assert_eq!(p.ids(), [sched::TaskId(free)]);
    assert_eq!((nr(&s, 0), nr(&s, 2)), (2, 1));
}

/// The mark is cleared by a pass at that level that finds it balanced with
/// no source all pinned (`out_balanced` without `LBF_ALL_PINNED`: "clear
/// the imbalance flag only if other tasks got a chance to move"): CPU 2's
/// own SMT pass finds nothing busier than itself, and CPU 0's MC pass then
/// leaves the cores as they are.
#[test]
fn a_balanced_pass_clears_the_group_imbalance() {
    let s = machine(Topology::uniform(4, 2, 2, 1).unwrap());
    pinned_core(&s);
    assert!(s.load_balance(cpu_id(2), false).is_empty());
    assert!(s.load_balance(cpu_id(0), false).is_empty());
    assert_eq!((nr(&s, 0), nr(&s, 2)), (1, 2));
}

/// `sched_balance_domains`: `busy = idle != CPU_IDLE && !sched_idle_rq(rq)`.
/// A CPU running only SCHED_IDLE tasks balances at its idle interval (one
/// tick for a 4-CPU level at 250 Hz), not `busy_factor` times it.
#[test]
fn a_cpu_running_only_sched_idle_tasks_balances_at_the_idle_interval() {
    let s = machine(Topology::flat(4));
    let mut next = 1;
    load_cpu_as(&s, cpu_id(0), 2, &mut next, idle_policy(), None);
    assert_eq!(s.balance_interval_ns(cpu_id(0), 0), 4 * MS);
    // One ordinary task beside them: busy, 16 × 4 ms less one tick.
    load_cpu(&s, cpu_id(0), 1, &mut next, false);
    assert_eq!(s.balance_interval_ns(cpu_id(0), 0), 60 * MS);
    // A nice-19 task alone (weight 15) is no SCHED_IDLE task.
    let t = machine(Topology::flat(4));
    let nice19 = TaskParams {
        nice: 19,
        ..TaskParams::default()
    };
    load_cpu_as(&t, cpu_id(0), 1, &mut next, nice19, None);
    assert_eq!(t.balance_interval_ns(cpu_id(0), 0), 60 * MS);
}

/// A 4-CPU machine of `topo` whose CPUs 0-2 run an ordinary task each and
/// CPU 3 `n` SCHED_IDLE tasks.
fn sched_idle_cpu3(topo: Topology, n: u32) -> Scheduler<Plat> {
    let s = machine(topo);
    let mut next = 1;
    for c in 0..3 {
        load_cpu(&s, cpu_id(c), 1, &mut next, false);
    }
    load_cpu_as(&s, cpu_id(3), n, &mut next, idle_policy(), None);
    s
}

/// Where a task whose previous CPU is `prev` wakes, woken from `prev`.
fn wake(s: &Scheduler<Plat>, prev: usize, params: TaskParams) -> usize {
    let mut t = SchedTask::new(params);
    t.cpu = cpu_id(prev);
    s.select_task_rq(&t, cpu_id(prev), WakeFlags::TTWU)
        .0
        .index()
}

/// `select_idle_sibling` takes a CPU running only SCHED_IDLE tasks as idle
/// for a wakee that is not SCHED_IDLE (`choose_idle_cpu`:
/// `available_idle_cpu(cpu) || choose_sched_idle_rq(rq, p)`): 4 CPUs of
/// one LLC, CPUs 0-2 running ordinary tasks, CPU 3 a SCHED_IDLE one.
#[test]
fn a_wakeup_takes_a_cpu_running_only_sched_idle_tasks_as_idle() {
    let s = sched_idle_cpu3(Topology::flat(4), 1);
    assert_eq!(wake(&s, 0, TaskParams::default()), 3);
    // A SCHED_IDLE wakee would not preempt there: no idle CPU, it stays.
    assert_eq!(wake(&s, 0, idle_policy()), 0);
    // The previous CPU itself, running only SCHED_IDLE tasks, is kept.
    assert_eq!(wake(&s, 3, TaskParams::default()), 3);
}

/// The same on SMT: a thread running only SCHED_IDLE tasks makes no idle
/// core, but is the idle CPU remembered (`select_idle_core`).
#[test]
fn an_smt_wakeup_takes_a_sched_idle_thread_when_no_core_is_idle() {
    let s = sched_idle_cpu3(Topology::uniform(4, 2, 2, 1).unwrap(), 1);
    assert_eq!(wake(&s, 0, TaskParams::default()), 3);
    assert_eq!(wake(&s, 0, idle_policy()), 0);
}

/// Fork placement (`find_idlest_group_cpu`) takes a CPU running only
/// SCHED_IDLE tasks at once (`choose_sched_idle_rq`).
#[test]
fn fork_placement_takes_a_cpu_running_only_sched_idle_tasks() {
    // CPU 3: two SCHED_IDLE tasks, more than any other CPU runs.
    let s = sched_idle_cpu3(Topology::flat(4), 2);
    let t = SchedTask::new(TaskParams::default());
    assert_eq!(s.find_idlest_cpu(&t, cpu_id(0)).index(), 3);
    let t = SchedTask::new(idle_policy());
    assert_ne!(s.find_idlest_cpu(&t, cpu_id(0)).index(), 3);
}

/// A CPU whose one task becomes SCHED_IDLE in place (`sched_setattr` on
/// the runqueue, no SCHED_IDLE task queued anywhere before) counts as idle
/// for the next wakeup: the placement's skip of the SCHED_IDLE test, taken
/// while no such task has been seen, ends with the first one.
#[test]
fn a_task_made_sched_idle_in_place_makes_its_cpu_count_as_idle() {
    let s = machine(Topology::flat(4));
    let mut next = 1;
    for c in 0..4 {
        load_cpu(&s, cpu_id(c), 1, &mut next, false);
    }
    // No idle CPU: the wakee stays on its previous CPU.
    assert_eq!(wake(&s, 0, TaskParams::default()), 0);
    let on_cpu3 = sched::TaskId(next - 1);
    s.cpu_rq(cpu_id(3))
        .sched_setattr(on_cpu3, idle_policy())
        .expect("the task is held by CPU 3");
    assert_eq!(wake(&s, 0, TaskParams::default()), 3);
}
