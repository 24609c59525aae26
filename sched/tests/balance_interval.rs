//! The periodic balance's cadence, as Linux 7.2's kernel/sched/fair.c keeps
//! it: `get_sd_balance_interval` (the interval in ticks, `busy_factor`
//! while busy less one tick, capped at `max_load_balance_interval`),
//! `sched_balance_rq`'s end (an imbalance found resets `balance_interval`
//! to `min_interval`, a level found balanced doubles it up to
//! `max_interval`, or `MAX_PINNED_INTERVAL` when every task was pinned),
//! and `rq->next_balance` (`sched_balance_domains`, `update_next_balance`
//! in `sched_balance_newidle`, `sched_balance_trigger`).

use std::sync::atomic::Ordering;

use crate::common;
use common::cpu_id;

use common::plat::{load_cpu, machine, machine_hz, nr, run_each_in_turns, switch, Plat};
use sched::smp::{Scheduler, MAX_PINNED_INTERVAL_MS};
use sched::{CpuId, Feature, PrevAction, Topology};

use crate::common::MS;
/// The tick at 250 Hz (`machine`).
const TICK: u64 = 4 * MS;

/// Like [`load_cpu`], but every task runs in 50 µs turns until each has
/// run, and the clock stays at the last turn: all of them are cache-hot
/// (ran within `sched_migration_cost`, 0.5 ms).
fn load_cpu_hot(s: &Scheduler<Plat>, cpu: CpuId, n: u32, next: &mut u32) {
    let now = run_each_in_turns(s, cpu, n, next);
    s.platform.now.store(now, Ordering::Relaxed);
}

fn set_now(s: &Scheduler<Plat>, ns: u64) {
    s.platform.now.store(ns, Ordering::Relaxed);
}

/// `get_sd_balance_interval`: idle, the interval in whole ticks (rounded
/// up); busy (`idle != CPU_IDLE`), `busy_factor` (16) times that less one
/// tick, so that busy levels do not balance on multiples of each other.
#[test]
fn a_busy_cpu_waits_busy_factor_times_the_interval_less_one_tick() {
    // One MC level of 4 CPUs: `balance_interval` 4 ms.
    let s = machine(Topology::flat(4));
    assert_eq!(s.balance_interval_ms(cpu_id(0), 0), 4);
    assert_eq!(s.balance_interval_ns(cpu_id(0), 0), 4 * MS, "idle: 1 tick");
    let mut next = 1;
    load_cpu(&s, cpu_id(0), 1, &mut next, false);
    // 4 ms × 16 = 64 ms = 16 ticks, less one: 60 ms.
    assert_eq!(s.balance_interval_ns(cpu_id(0), 0), 15 * TICK);
    // At 1000 Hz: 64 ticks less one.
    let k = machine_hz(Topology::flat(4), 1000);
    load_cpu(&k, cpu_id(0), 1, &mut next, false);
    assert_eq!(k.balance_interval_ns(cpu_id(0), 0), 63 * MS);
    // At 250 Hz a 2-CPU level's 2 ms rounds up to one tick.
    let t = machine(Topology::flat(2));
    assert_eq!(t.balance_interval_ns(cpu_id(0), 0), TICK);
}

/// A periodic pass that finds the level balanced doubles its interval, up
/// to `max_interval` (twice the span weight in ms); one that finds an
/// imbalance, moved or not, puts it back to `min_interval`.
#[test]
fn balanced_passes_double_the_interval_up_to_max_interval() {
    let s = machine(Topology::flat(4));
    let mut seen = Vec::new();
    for _ in 0..3 {
        assert!(s.load_balance(cpu_id(0), false).is_empty());
        seen.push(s.balance_interval_ms(cpu_id(0), 0));
    }
    assert_eq!(seen, [8, 8, 8]);
    let mut next = 1;
    load_cpu(&s, cpu_id(1), 3, &mut next, false);
    assert!(!s.load_balance(cpu_id(0), false).is_empty());
    assert_eq!(
        s.balance_interval_ms(cpu_id(0), 0),
        4,
        "moved: min_interval"
    );
}

/// Two idle CPUs (one MC level: `min_interval` 2 ms, `max_interval` 4 ms)
/// after CPU 0's periodic pass found them balanced (2 -> 4 ms), with no
/// NI_RANDOM die (every newidle pass runs).
fn backed_off_pair() -> Scheduler<Plat> {
    let s = machine(Topology::flat(2));
    s.cfg.features.set(Feature::NiRandom, false);
    assert!(s.load_balance(cpu_id(0), false).is_empty());
    assert_eq!(s.balance_interval_ms(cpu_id(0), 0), 4, "balanced: doubled");
    s
}

/// `sched_balance_rq`: a periodic pass that found an imbalance and a
/// source but moved nothing (here: every queued task cache-hot) counts a
/// failure and resets the interval to `min_interval` ("We were unbalanced,
/// so reset the balancing interval"); it does not back off.
#[test]
fn a_failed_pass_that_found_an_imbalance_resets_the_interval() {
    let s = backed_off_pair();
    let mut next = 1;
    load_cpu_hot(&s, cpu_id(1), 3, &mut next);
    assert!(s.load_balance(cpu_id(0), false).is_empty(), "all hot");
    assert_eq!(s.nr_balance_failed(cpu_id(0), 0), 1);
    assert_eq!(
        s.balance_interval_ms(cpu_id(0), 0),
        2,
        "reset to min_interval"
    );
}

/// The reset is not only periodic: a newly idle pass that finds an
/// imbalance resets the interval too (the reset comes before
/// `out_balanced` in `sched_balance_rq`, for every `idle` type), while a
/// newly idle pass that finds nothing leaves it (`out_one_pinned` skips
/// the doubling for `CPU_NEWLY_IDLE`), and counts no failure.
#[test]
fn a_newidle_pass_resets_the_interval_on_an_imbalance_and_never_doubles_it() {
    let s = backed_off_pair();
    assert!(s.load_balance(cpu_id(0), true).is_empty());
    assert_eq!(s.balance_interval_ms(cpu_id(0), 0), 4, "nothing to pull");
    let mut next = 1;
    load_cpu_hot(&s, cpu_id(1), 3, &mut next);
    assert!(s.load_balance(cpu_id(0), true).is_empty(), "all hot");
    assert_eq!(s.nr_balance_failed(cpu_id(0), 0), 0, "newidle: no failure");
    assert_eq!(s.balance_interval_ms(cpu_id(0), 0), 2);
}

/// A CPU that another CPU of its group balances for (`should_we_balance`)
/// goes to `out_balanced`, which doubles its interval too.
#[test]
fn a_level_left_to_another_cpu_backs_off() {
    // SMT pairs {0, 1} and {2, 3} under one MC level (levels 0 and 1).
    let s = machine(Topology::uniform(4, 2, 2, 1).unwrap());
    let mut next = 1;
    load_cpu(&s, cpu_id(1), 1, &mut next, false);
    assert_eq!(s.balance_interval_ms(cpu_id(1), 1), 4);
    // CPU 1 is busy, its sibling CPU 0 idle: CPU 0 balances MC for both.
    assert!(s.load_balance(cpu_id(1), false).is_empty());
    assert_eq!(s.balance_interval_ms(cpu_id(1), 1), 8);
}

/// `out_all_pinned`: when every task of every source may run only there,
/// the interval keeps doubling past `max_interval`, up to
/// `MAX_PINNED_INTERVAL` (512 ms), and the tick interval is capped at
/// `max_load_balance_interval`: 100 ms per active CPU.
#[test]
fn pinned_tasks_back_off_to_max_pinned_interval_capped_per_active_cpu() {
    let s = machine(Topology::flat(4));
    let mut next = 1;
    load_cpu(&s, cpu_id(1), 3, &mut next, true);
    let mut seen = Vec::new();
    for _ in 0..9 {
        assert!(s.load_balance(cpu_id(0), false).is_empty());
        seen.push(s.balance_interval_ms(cpu_id(0), 0));
    }
    assert_eq!(seen, [8, 16, 32, 64, 128, 256, 512, 512, 512]);
    assert_eq!(MAX_PINNED_INTERVAL_MS, 512);
    assert_eq!(s.nr_balance_failed(cpu_id(0), 0), 0);
    // 512 ms is 128 ticks; 4 active CPUs cap it at 100 ticks (400 ms)...
    assert_eq!(s.balance_interval_ns(cpu_id(0), 0), 400 * MS);
    // ... and 3 at 300 ms (`num_online_cpus()`).
    s.sched_cpu_deactivate(cpu_id(3), cpu_id(0)).unwrap();
    assert_eq!(s.balance_interval_ns(cpu_id(0), 0), 300 * MS);
}

/// The tick of [`busy_pair_balanced_at`]'s pass.
const J: u64 = 1_000;

/// Two CPUs running a task each; CPU 0's periodic pass at tick `j` finds
/// them balanced. Returns the machine and the next task id.
fn busy_pair_balanced_at(j: u64) -> (Scheduler<Plat>, u32) {
    let s = machine(Topology::flat(2));
    let mut next = 1;
    load_cpu(&s, cpu_id(0), 1, &mut next, false);
    load_cpu(&s, cpu_id(1), 1, &mut next, false);
    set_now(&s, j * TICK);
    assert!(s.rebalance_domains(cpu_id(0), j * TICK).is_empty());
    // Balanced: 2 -> 4 ms; busy: 4 × 16 = 64 ms = 16 ticks, less one.
    assert_eq!(s.balance_interval_ms(cpu_id(0), 0), 4);
    assert_eq!(s.next_balance_ns(cpu_id(0)), (j + 15) * TICK);
    (s, next)
}

/// `rq->next_balance`: the earliest time a level is due, computed with the
/// intervals of the pass (busy ones on a busy CPU). A CPU that went idle
/// since does not balance before it, even where an idle interval would
/// have passed.
#[test]
fn the_periodic_balance_waits_for_next_balance() {
    let (s, mut next) = busy_pair_balanced_at(J);
    let j = J;
    // CPU 0's task exits and CPU 1 gets three more: an idle CPU 0 would
    // be due after one tick, but next_balance holds.
    switch(&s, 0, PrevAction::Exits);
    load_cpu(&s, cpu_id(1), 3, &mut next, false);
    assert_eq!(s.balance_interval_ns(cpu_id(0), 0), TICK, "idle now");
    set_now(&s, (j + 2) * TICK);
    assert!(s.rebalance_domains(cpu_id(0), (j + 2) * TICK).is_empty());
    set_now(&s, (j + 15) * TICK);
    let p = s.rebalance_domains(cpu_id(0), (j + 15) * TICK);
    assert_eq!((p.from_cpu(), p.len()), (cpu_id(1), 2));
    // The pass moved tasks: interval back to 2 ms; CPU 0 busy again.
    assert_eq!(s.balance_interval_ms(cpu_id(0), 0), 2);
    assert_eq!(s.next_balance_ns(cpu_id(0)), (j + 15 + 7) * TICK);
}

/// `sched_balance_newidle` moves `next_balance` forward to when the levels
/// it looked at are due at their idle intervals (`update_next_balance`),
/// even when it had nothing to pull.
#[test]
fn a_newidle_pass_brings_next_balance_forward() {
    let (s, mut next) = busy_pair_balanced_at(J);
    let j = J;
    switch(&s, 0, PrevAction::Exits);
    set_now(&s, j * TICK + MS);
    assert!(
        s.load_balance(cpu_id(0), true).is_empty(),
        "nothing to pull"
    );
    assert_eq!(s.next_balance_ns(cpu_id(0)), (j + 1) * TICK);
    load_cpu(&s, cpu_id(1), 3, &mut next, false);
    set_now(&s, (j + 2) * TICK);
    let p = s.rebalance_domains(cpu_id(0), (j + 2) * TICK);
    assert_eq!((p.from_cpu(), p.len()), (cpu_id(1), 2));
    assert_eq!(nr(&s, 0), 2);
}

/// A periodic pass climbs every level whose interval has passed, whatever
/// the levels below moved: Linux's `sched_balance_domains` only reads the
/// CPU's idle state again after a pull (`busy` for the next intervals).
/// The newly idle pass stops at the first level that pulled
/// (`sched_balance_newidle`: `if (pulled_task || !continue_balancing)
/// break;`).
#[test]
fn a_periodic_pass_climbs_on_after_a_level_moved_tasks() {
    // SMT pairs under one MC level.
    let s = machine(Topology::uniform(4, 2, 2, 1).unwrap());
    let mut next = 1;
    // CPU 1 (CPU 0's sibling) holds 3 tasks, CPU 2 (the other core) 6.
    load_cpu(&s, cpu_id(1), 3, &mut next, false);
    load_cpu(&s, cpu_id(2), 6, &mut next, false);
    let j = 1_000;
    set_now(&s, j * TICK);
    let p = s.rebalance_domains(cpu_id(0), j * TICK);
    // SMT: (3 - 0) / 2 = 1 task from CPU 1; then MC, CPU 0 now busy:
    // local 3 tasks on 2 CPUs, the other core 6, (12 - 6) / 4 = 1 from CPU 2.
    assert_eq!(p.len(), 2, "both levels balanced in one pass");
    assert_eq!(p.from_cpu(), cpu_id(1), "SMT first");
    assert!(p.touched().has(cpu_id(1)) && p.touched().has(cpu_id(2)));
    assert_eq!((nr(&s, 0), nr(&s, 1), nr(&s, 2)), (2, 2, 5));
    // Both levels were balanced now: next_balance is ahead.
    assert!(s.next_balance_ns(cpu_id(0)) > j * TICK);
}

/// The newly idle pass of the same machine stops at the SMT level once it
/// pulled (NI_RANDOM off, so that every level is tried).
#[test]
fn a_newidle_pass_stops_at_the_first_level_that_pulled() {
    let s = machine(Topology::uniform(4, 2, 2, 1).unwrap());
    s.cfg.features.set(Feature::NiRandom, false);
    let mut next = 1;
    load_cpu(&s, cpu_id(1), 3, &mut next, false);
    load_cpu(&s, cpu_id(2), 6, &mut next, false);
    let p = s.load_balance(cpu_id(0), true);
    assert_eq!((p.from_cpu(), p.len()), (cpu_id(1), 1));
    assert_eq!((nr(&s, 0), nr(&s, 2)), (1, 6), "MC left alone");
}
