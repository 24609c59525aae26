//! Active balancing beyond misfit tasks, as Linux 7.2's `sched_balance_rq`
//! (kernel/sched/fair.c) does it: a pass that found an imbalance in tasks
//! (`migrate_task`) and a source CPU but could detach nothing counts a
//! failure (`nr_balance_failed`, periodic passes only); once the failures
//! exceed `cache_nice_tries + 2` (`imbalanced_active_balance`), the
//! source's running task is pushed here by the CPU stopper
//! (`active_load_balance_cpu_stop`; ours: the source is asked to switch,
//! and its switch hands the task over), which resets the count. When that
//! task may not run here (`out_one_pinned`), nothing is pushed, the count
//! is kept and the interval backs off.

use std::sync::atomic::Ordering;

use crate::common;
use common::cpu_id;

use common::plat::{machine, nr, spawn_on, switch, Plat};
use sched::smp::{Scheduler, MAX_PINNED_INTERVAL_MS};
use sched::{Feature, PrevAction, TaskId, Topology};

fn ipis(s: &Scheduler<Plat>, cpu: usize) -> u64 {
    s.platform.ipis[cpu].load(Ordering::Relaxed)
}

/// Two CPUs, one MC level (`cache_nice_tries` 1): CPU 0 runs task 1, which
/// may run anywhere, with task 2 queued behind it, pinned to CPU 0. CPU 1
/// is idle. The imbalance is one task, but the only task CPU 1 may take is
/// running: no pass can detach anything.
fn running_task_movable_only() -> Scheduler<Plat> {
    let s = machine(Topology::flat(2));
    spawn_on(&s, 1, 0, false);
    spawn_on(&s, 2, 0, true);
    assert_eq!(s.cpu_rq(cpu_id(0)).curr(), Some(TaskId(1)));
    s
}

/// `imbalanced_active_balance`: `nr_balance_failed > cache_nice_tries + 2`.
/// Passes 1-3 fail and count (1 is not above 3 ... 3 is not); the 4th
/// counts 4 and asks CPU 0 to give up its running task: an IPI, no task
/// detached. CPU 0's next switch hands task 1 to CPU 1, and the landing
/// resets CPU 1's count (`active_load_balance_cpu_stop`: "Active
/// balancing done, reset the failure counter").
#[test]
fn after_cache_nice_tries_plus_three_failures_the_running_task_is_pushed() {
    let s = running_task_movable_only();
    let tries = s.domains(cpu_id(1))[0].cache_nice_tries;
    assert_eq!(tries, 1);
    for k in 1..=tries + 2 {
        let p = s.load_balance(cpu_id(1), false);
        assert!(p.is_empty() && !p.active_balance(), "pass {k}");
        assert_eq!(s.nr_balance_failed(cpu_id(1), 0), k);
        // "We were unbalanced": the interval stays at min_interval (2 ms).
        assert_eq!(s.balance_interval_ms(cpu_id(1), 0), 2);
    }
    let before = ipis(&s, 0);
    let p = s.load_balance(cpu_id(1), false);
    assert!(p.is_empty(), "the running task is not detached");
    assert!(p.active_balance());
    assert_eq!(p.from_cpu(), cpu_id(0));
    assert!(p.touched().has(cpu_id(0)));
    assert_eq!(ipis(&s, 0), before + 1);
    assert_eq!(s.nr_balance_failed(cpu_id(1), 0), tries + 3);
    assert_eq!(s.balance_interval_ms(cpu_id(1), 0), 2);
    // CPU 0's switch: task 1 goes to CPU 1, task 2 runs on CPU 0.
    assert_eq!(switch(&s, 0, PrevAction::Stays), Some(cpu_id(1)));
    assert_eq!(s.cpu_rq(cpu_id(0)).curr(), Some(TaskId(2)));
    assert!(s.cpu_rq(cpu_id(1)).task(TaskId(1)).is_some());
    assert_eq!((nr(&s, 0), nr(&s, 1)), (1, 1));
    assert_eq!(s.nr_balance_failed(cpu_id(1), 0), 0);
    // Balanced now: the next pass finds nothing to do.
    let p = s.load_balance(cpu_id(1), false);
    assert!(p.is_empty() && !p.active_balance());
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).unwrap();
}

/// A push asked for but not carried out (the task went to sleep before
/// its CPU switched) resets nothing: the next periodic pass asks again
/// once the task is back (Linux's stopper finds no task to move and
/// leaves the count).
#[test]
fn a_push_that_did_not_land_keeps_the_failures() {
    let s = running_task_movable_only();
    for _ in 0..4 {
        s.load_balance(cpu_id(1), false);
    }
    assert_eq!(s.nr_balance_failed(cpu_id(1), 0), 4);
    // Task 1 sleeps instead: no push, task 2 runs alone on CPU 0.
    assert_eq!(switch(&s, 0, PrevAction::Sleeps), None);
    assert_eq!(s.cpu_rq(cpu_id(0)).curr(), Some(TaskId(2)));
    assert_eq!(s.nr_balance_failed(cpu_id(1), 0), 4);
}

/// A newly idle pass counts no failure (`idle != CPU_NEWLY_IDLE`: "we do
/// not want newidle balance, which can be very frequent, pollute the
/// failure counter causing excessive cache_hot migrations and active
/// balances"), so however many there are, none pushes; the periodic
/// passes' count is what reaches the threshold.
#[test]
fn newidle_passes_count_no_failure_and_push_nothing_below_the_threshold() {
    let s = running_task_movable_only();
    s.cfg.features.set(Feature::NiRandom, false);
    for _ in 0..10 {
        let p = s.load_balance(cpu_id(1), true);
        assert!(p.is_empty() && !p.active_balance());
    }
    assert_eq!(s.nr_balance_failed(cpu_id(1), 0), 0);
    for _ in 0..3 {
        s.load_balance(cpu_id(1), false);
    }
    assert_eq!(s.nr_balance_failed(cpu_id(1), 0), 3);
    // 3 is not above cache_nice_tries + 2, and a newidle pass adds nothing.
    let p = s.load_balance(cpu_id(1), true);
    assert!(!p.active_balance());
    assert_eq!(s.nr_balance_failed(cpu_id(1), 0), 3);
    let p = s.load_balance(cpu_id(1), false);
    assert!(p.active_balance());
    assert_eq!(switch(&s, 0, PrevAction::Stays), Some(cpu_id(1)));
    assert_eq!(s.nr_balance_failed(cpu_id(1), 0), 0);
}

/// Two cores {0, 1} and {2, 3}; CPUs 0 and 1 run one task each (pinned
/// there with `pinned`), core {2, 3} is idle. CPU 2 balances the MC level
/// (level 1) for its core: one task of the busy core's two should move
/// (`calculate_imbalance`: (2·2 − 0) / 4 = 1), but each CPU runs a lone
/// task, which no pass can detach (`busiest->nr_running <= 1`).
fn packed_core(pinned: bool) -> Scheduler<Plat> {
    let s = machine(Topology::uniform(4, 2, 2, 1).unwrap());
    for c in 0..2 {
        spawn_on(&s, c as u32 + 1, c, pinned);
    }
    s
}

/// Linux spreads the threads of a core onto an idle core by active
/// balancing ("the even distribution of the threads on a system with
/// spare capacity", `imbalanced_active_balance`): MC's `cache_nice_tries`
/// is 1, so the 4th failed pass pushes the running task of CPU 1 (the
/// busiest: ties go to the later CPU) to CPU 2.
#[test]
fn the_lone_task_of_a_busy_sibling_is_pushed_to_an_idle_core() {
    let s = packed_core(false);
    assert_eq!(s.domains(cpu_id(2))[1].cache_nice_tries, 1);
    for k in 1..=3 {
        let p = s.load_balance(cpu_id(2), false);
        assert!(p.is_empty() && !p.active_balance());
        assert_eq!(s.nr_balance_failed(cpu_id(2), 1), k);
    }
    let before = ipis(&s, 1);
    let p = s.load_balance(cpu_id(2), false);
    assert!(p.active_balance());
    assert_eq!(p.from_cpu(), cpu_id(1));
    assert_eq!(ipis(&s, 1), before + 1);
    assert_eq!(switch(&s, 1, PrevAction::Stays), Some(cpu_id(2)));
    assert!(s.cpu_rq(cpu_id(1)).curr().is_none());
    assert_eq!((nr(&s, 0), nr(&s, 1), nr(&s, 2), nr(&s, 3)), (1, 0, 1, 0));
    assert_eq!(s.nr_balance_failed(cpu_id(2), 1), 0);
    // One task per core: balanced.
    for _ in 0..5 {
        let p = s.load_balance(cpu_id(2), false);
        assert!(p.is_empty() && !p.active_balance());
    }
    assert_eq!(s.nr_balance_failed(cpu_id(2), 1), 0);
}

/// The same with both tasks pinned: "don't kick the
/// active_load_balance_cpu_stop, if the curr task on busiest CPU can't be
/// moved to this_cpu" (`out_one_pinned`). Nothing is pushed and no IPI
/// sent; the failures are kept (they go on counting), and each periodic
/// pass from the 4th doubles the interval: the source's lone task was
/// never looked at, so `LBF_ALL_PINNED` is still set and the doubling goes
/// on past `max_interval` (8 ms) up to `MAX_PINNED_INTERVAL` (512 ms).
#[test]
fn a_pinned_running_task_is_not_pushed_and_the_interval_backs_off() {
    let s = packed_core(true);
    let before = ipis(&s, 1) + ipis(&s, 0);
    let mut seen = Vec::new();
    for k in 1..=12 {
        let p = s.load_balance(cpu_id(2), false);
        assert!(p.is_empty() && !p.active_balance(), "pass {k}");
        assert_eq!(s.nr_balance_failed(cpu_id(2), 1), k);
        seen.push(s.balance_interval_ms(cpu_id(2), 1));
    }
    assert_eq!(seen, [4, 4, 4, 8, 16, 32, 64, 128, 256, 512, 512, 512]);
    assert_eq!(MAX_PINNED_INTERVAL_MS, 512);
    assert_eq!(ipis(&s, 1) + ipis(&s, 0), before);
    assert_eq!((nr(&s, 0), nr(&s, 1), nr(&s, 2)), (1, 1, 0));
    // A newly idle pass that meets the pinned task leaves the interval.
    s.cfg.features.set(Feature::NiRandom, false);
    let p = s.load_balance(cpu_id(2), true);
    assert!(!p.active_balance());
    assert_eq!(s.balance_interval_ms(cpu_id(2), 1), 512);
}

/// Big CPUs {0, 1} (capacity 1024) and little ones {2, 3} (512) in two
/// clusters joined at the package level (`SD_ASYM_CPUCAPACITY`). With a
/// lone task on each big CPU, a little CPU finds the big cluster busier
/// but takes neither CPU as its source ("don't pick a CPU that could
/// eventually lead to active_balancing high->low capacity"): with no
/// source the level counts as balanced, and nothing is pushed down. The other way, a big CPU does push up
/// the lone task of a little one once the failures pass the threshold.
#[test]
fn an_active_balance_never_pushes_a_lone_task_to_a_smaller_cpu() {
    let clusters = || {
        Topology::from_ids(&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0])
            .unwrap()
            .with_capacities(&[1024, 1024, 512, 512])
            .unwrap()
    };
    let s = machine(clusters());
    let pkg = s.domains(cpu_id(2)).len() - 1;
    assert!(s.domains(cpu_id(2))[pkg].asym_cpucapacity);
    spawn_on(&s, 1, 0, false);
    spawn_on(&s, 2, 1, false);
    for _ in 0..10 {
        let p = s.load_balance(cpu_id(2), false);
        assert!(p.is_empty() && !p.active_balance());
        // No source at all (`out_balanced`): no failure counted.
        assert_eq!(s.nr_balance_failed(cpu_id(2), pkg), 0);
    }
    assert_eq!((nr(&s, 0), nr(&s, 1), nr(&s, 2)), (1, 1, 0));
    // The tasks on the little CPUs instead (they fit there: no misfit).
    let t = machine(clusters());
    spawn_on(&t, 1, 2, false);
    spawn_on(&t, 2, 3, false);
    assert_eq!(t.misfit_task_load(cpu_id(3)), 0);
    let tries = t.domains(cpu_id(0))[pkg].cache_nice_tries;
    for _ in 0..tries + 2 {
        assert!(!t.load_balance(cpu_id(0), false).active_balance());
    }
    let p = t.load_balance(cpu_id(0), false);
    assert!(p.active_balance());
    assert_eq!(p.from_cpu(), cpu_id(3));
    assert_eq!(switch(&t, 3, PrevAction::Stays), Some(cpu_id(0)));
}
