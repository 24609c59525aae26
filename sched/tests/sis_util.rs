//! SIS_UTIL: the wakeup's scan of the LLC for an idle CPU limited by the
//! LLC's summed PELT utilisation, as Linux's `update_idle_cpu_scan` and
//! `select_idle_cpu` do it (kernel/sched/fair.c, 70fb5ccf2ebb "sched/fair:
//! Introduce SIS_UTIL to search idle CPU based on sum of util_avg").

use std::sync::atomic::Ordering;

use crate::common;
use common::cpu_id;

use common::plat::{machine, switch, Plat};
use sched::smp::{nr_idle_scan_for, Platform, Scheduler};
use sched::{CpuMask, Feature, PrevAction, SchedTask, TaskId, TaskParams, Topology, WakeFlags};

use crate::common::MS;

/// One always-running task on each CPU of `busy`, ticked every ms for
/// `ms` ms, so each of those CPUs' `util_avg` nears 1024 (after 300 ms:
/// within 1001..=1024) and the others' stays 0.
fn run_hogs(s: &Scheduler<Plat>, busy: &[usize], ms: u64) {
    for (i, &c) in busy.iter().enumerate() {
        start(s, c, 1 + i as u32);
    }
    for _ in 0..ms {
        s.platform.now.fetch_add(MS, Ordering::Relaxed);
        for &c in busy {
            s.tick(cpu_id(c));
        }
    }
}

/// Where a task last on `prev` wakes when woken from `prev` itself (no
/// wake-affine choice: the target is `prev`), and how many CPUs the idle
/// search looked at.
fn wake(s: &Scheduler<Plat>, prev: usize) -> (usize, u64) {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpu = cpu_id(prev);
    let cpu = s
        .select_task_rq(&t, cpu_id(prev), WakeFlags::TTWU)
        .0
        .index();
    (cpu, s.platform.visited.load(Ordering::Relaxed))
}

#[test]
fn the_scan_number_follows_linuxs_formula_worked_by_hand() {
    // x = sum_util / llc_weight; tmp = min(1024, x² · pct² / 10 240 000);
    // nr = (1024 - tmp) · llc_weight / 1024, every division truncated.
    // Idle LLC: the whole LLC.
    assert_eq!(nr_idle_scan_for(0, 8, 117), 8);
    // 25% of 8 CPUs: x = 256, tmp = 65 536 · 13 689 / 10 240 000 = 87.6 -> 87,
    // y = 937, 937 · 8 / 1024 = 7.3 -> 7.
    assert_eq!(nr_idle_scan_for(2048, 8, 117), 7);
    // The same share of 16 CPUs: 937 · 16 / 1024 = 14.6 -> 14.
    assert_eq!(nr_idle_scan_for(4096, 16, 117), 14);
    // 50%: x = 512, tmp = 262 144 · 13 689 / 10 240 000 = 350.4 -> 350,
    // y = 674, 674 · 8 / 1024 = 5.3 -> 5.
    assert_eq!(nr_idle_scan_for(4096, 8, 117), 5);
    // 50% with pct 125: tmp = 262 144 · 15 625 / 10 240 000 = 400,
    // y = 624, 624 · 8 / 1024 = 4.9 -> 4.
    assert_eq!(nr_idle_scan_for(4096, 8, 125), 4);
    // x = 860 on 64 CPUs: tmp = 739 600 · 13 689 / 10 240 000 = 988.7 -> 988,
    // y = 36, 36 · 64 / 1024 = 2.25 -> 2.
    assert_eq!(nr_idle_scan_for(860 * 64, 64, 117), 2);
    // x = 875 (1024 · 100 / 117 = 875.2): tmp = 765 625 · 13 689 /
    // 10 240 000 = 1023.5 -> 1023, y = 1, 8 / 1024 -> 0: no scan.
    assert_eq!(nr_idle_scan_for(875 * 8, 8, 117), 0);
    // Fully utilised: tmp = 1401.7, capped at 1024: y = 0.
    assert_eq!(nr_idle_scan_for(8192, 8, 117), 0);
    // Above capacity (cannot come from capped CPUs): still 0, no overflow.
    assert_eq!(nr_idle_scan_for(u64::MAX, 8, 117), 0);
    // Never more than the LLC, and never rising with the utilisation.
    let mut last = u32::MAX;
    for sum in (0..=8 * 1024).step_by(64) {
        let nr = nr_idle_scan_for(sum, 8, 117);
        assert!(nr <= 8 && nr <= last, "sum {sum}: {nr} after {last}");
        last = nr;
    }
}

#[test]
fn the_periodic_balance_of_the_llc_sizes_the_scan_by_its_utilisation() {
    let s = machine(Topology::flat(8));
    assert!(s.cfg.feat(Feature::SisUtil), "on by default, as in Linux");
    // Before any periodic balance: the whole LLC.
    assert_eq!(s.nr_idle_scan(cpu_id(0)), 8);
    // Four CPUs of eight always busy: util 1001..=1024 each, so the sum is
    // 4004..=4096, x = 500..=512, tmp = 334..=350, y = 674..=690 and the
    // number 674 · 8 / 1024 = 5.3 .. 690 · 8 / 1024 = 5.4: 5.
    run_hogs(&s, &[0, 1, 2, 3], 300);
    for c in 0..4 {
        let u = s.summary(cpu_id(c)).util_avg.load(Ordering::Relaxed);
        assert!((1001..=1024).contains(&u), "cpu {c}: util {u}");
    }
    // A newly idle balance does not write it (Linux: only periodic ones).
    assert!(s.load_balance(cpu_id(7), true).is_empty());
    assert_eq!(s.nr_idle_scan(cpu_id(0)), 8);
    // The periodic balance of idle CPU 4 (the first idle CPU of the
    // domain's only group balances for it) computes it.
    s.rebalance_domains(cpu_id(4), s.platform.now_ns());
    assert_eq!(s.nr_idle_scan(cpu_id(0)), 5);
    assert_eq!(s.nr_idle_scan(cpu_id(7)), 5, "one value for the LLC");
    // NO_SIS_UTIL: the balance leaves it alone.
    s.set_nr_idle_scan(cpu_id(0), 3);
    s.cfg.features.set(Feature::SisUtil, false);
    s.platform.now.fetch_add(1_000 * MS, Ordering::Relaxed);
    s.rebalance_domains(cpu_id(4), s.platform.now_ns());
    assert_eq!(s.nr_idle_scan(cpu_id(0)), 3);
}

#[test]
fn each_llc_gets_its_own_scan_number_from_its_own_domain() {
    // Two LLCs of 4 CPUs in one node, no SMT: MC (the LLC) and PKG.
    let s = machine(Topology::uniform(8, 1, 4, 2).unwrap());
    // LLC 0 fully busy, LLC 1 idle.
    run_hogs(&s, &[0, 1, 2, 3], 300);
    // CPU 4 balances LLC 1's MC domain (all idle: 4) and the PKG domain
    // (8 CPUs: not an LLC, so it writes nothing for LLC 0).
    s.rebalance_domains(cpu_id(4), s.platform.now_ns());
    assert_eq!(s.nr_idle_scan(cpu_id(4)), 4);
    assert_eq!(s.nr_idle_scan(cpu_id(0)), 4, "LLC 0 not balanced yet");
    // CPU 0 (no idle CPU in its group: the first one balances) does LLC 0:
    // x >= 1001 > 875: no scan.
    s.rebalance_domains(cpu_id(0), s.platform.now_ns());
    assert_eq!(s.nr_idle_scan(cpu_id(0)), 0);
    assert_eq!(s.nr_idle_scan(cpu_id(4)), 4);
}

#[test]
fn the_scan_stops_after_nr_idle_scan_cpus() {
    // CPUs 0..=3 busy, 4..=7 idle; a wakee of CPU 0 looks at CPU 0, then
    // scans from CPU 1 on.
    let s = machine(Topology::flat(8));
    run_hogs(&s, &[0, 1, 2, 3], 20);
    // Limit 2: CPUs 1 and 2, both busy: it stays on its target, CPU 0,
    // having looked at 1 + 2 CPUs.
    s.set_nr_idle_scan(cpu_id(0), 2);
    assert_eq!(wake(&s, 0), (0, 3));
    // Limit 4: CPUs 1..=4, and CPU 4 is idle.
    s.set_nr_idle_scan(cpu_id(0), 4);
    assert_eq!(wake(&s, 0), (4, 5));
    // Limit 0 (an LLC at ~85% or more): no scan at all.
    s.set_nr_idle_scan(cpu_id(0), 0);
    assert_eq!(wake(&s, 0), (0, 1));
    // An idle target is taken before any scan, whatever the limit.
    assert_eq!(wake(&s, 5), (5, 1));
}

#[test]
fn no_sis_util_scans_the_whole_llc() {
    // Only CPU 7 idle; the limit says no scan, but NO_SIS_UTIL ignores it.
    let s = machine(Topology::flat(8));
    run_hogs(&s, &[0, 1, 2, 3, 4, 5, 6], 20);
    s.set_nr_idle_scan(cpu_id(0), 0);
    assert_eq!(wake(&s, 0), (0, 1));
    s.cfg.features.set(Feature::SisUtil, false);
    // CPUs 1..=7: the seventh is idle.
    assert_eq!(wake(&s, 0), (7, 8));
    // Every CPU busy: the whole LLC is looked at (the wrap ends at the
    // target itself, as Linux's for_each_cpu_wrap), the target kept.
    start(&s, 7, 47);
    assert_eq!(wake(&s, 0), (0, 9));
    // With SIS_UTIL and a limit of 6 (of the 7 CPUs after the target),
    // CPU 7 is never reached: 6 looked at after the target.
    s.cfg.features.set(Feature::SisUtil, true);
    s.set_nr_idle_scan(cpu_id(0), 6);
    assert_eq!(wake(&s, 0), (0, 7));
}

/// Starts task `id`, new, on CPU `c` (running it if the CPU was idle).
fn start(s: &Scheduler<Plat>, c: usize, id: u32) {
    let mut rq = s.cpu_rq(cpu_id(c));
    rq.update_rq_clock(s.platform.now_ns());
    let mut t = SchedTask::new(TaskParams::default());
    t.cpu = cpu_id(c);
    rq.wake_up_new_task(TaskId(id), t);
    rq.pick_next_task();
}

#[test]
fn an_smt_machines_idle_core_scan_is_not_counted_but_a_limit_of_0_stops_it() {
    // 4 cores of 2 threads, one LLC. Linux counts SIS_UTIL's number down
    // only in select_idle_cpu's branch without an idle core; ours looks for
    // an idle core whenever there is SMT (no has_idle_cores hint), so a
    // limit of 1 still finds core 3 (CPUs 6, 7), two cores away. A limit of
    // 0 returns before any scan in Linux (`nr == 1` after its `+ 1`), idle
    // core or not: the wakee stays on its busy target.
    let s = machine(Topology::uniform(8, 2, 4, 1).unwrap());
    run_hogs(&s, &[0, 1, 2, 3, 4, 5], 20);
    s.set_nr_idle_scan(cpu_id(0), 1);
    assert_eq!(wake(&s, 0).0, 6);
    s.set_nr_idle_scan(cpu_id(0), 0);
    assert_eq!(wake(&s, 0).0, 0);
}

/// Linux's `recent_used_cpu` (select_idle_sibling, since 4.16, 32e839dda3ba
/// "sched/fair: Use a recently used CPU as an idle candidate and the basis
/// for an SMT search"): after the target and the previous CPU, an idle CPU
/// the wakee recently used is taken before the LLC scan, so even with
/// SIS_UTIL's limit at 0 (no scan). A new task's is its parent's CPU
/// (`wake_up_new_task`); each wakeup that gets past the two first checks
/// makes the previous CPU the next one's.
#[test]
fn a_wakee_takes_its_recently_used_cpu_if_idle_before_any_scan() {
    let s = machine(Topology::flat(4));
    s.cfg.features.set(Feature::DelayDequeue, false);
    // CPUs 0 and 1 each run a hog; 2 and 3 are idle.
    start(&s, 0, 1);
    start(&s, 1, 2);
    // Task 5, spawned from CPU 2 (its recently used CPU), slept on CPU 1.
    sleeper_on_cpu1(&s, 5, 2);
    s.set_nr_idle_scan(cpu_id(0), 0);
    // Woken from CPU 0: the waker's CPU and the previous one are busy, and
    // there is no scan: CPU 2, its recently used CPU, idle.
    let w = s.wake(TaskId(5), WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(w.cpu(), cpu_id(2), "{w:?}");
    // Task 6 the same way, spawned from CPU 3, which is busy by its
    // wakeup: it is not taken, and the wakee stays on its (busy) target.
    sleeper_on_cpu1(&s, 6, 3);
    start(&s, 3, 3);
    let w = s.wake(TaskId(6), WakeFlags::empty(), cpu_id(0)).unwrap();
    assert!(w.cpu() == cpu_id(0) || w.cpu() == cpu_id(1), "{w:?}");
}

/// Spawns task `id` from CPU `from` (its `recent_used_cpu`) pinned to CPU
/// 1, runs it there until it sleeps, then lets it run anywhere.
fn sleeper_on_cpu1(s: &Scheduler<Plat>, id: u32, from: usize) {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::from_cpus(&[1]);
    assert_eq!(s.spawn(TaskId(id), t, cpu_id(from)).unwrap().0, cpu_id(1));
    while s.cpu_rq(cpu_id(1)).curr() != Some(TaskId(id)) {
        switch(s, 1, PrevAction::Yields);
    }
    switch(s, 1, PrevAction::Sleeps);
    s.set_affinity(TaskId(id), CpuMask::from_cpus(&[0, 1, 2, 3]), cpu_id(0))
        .unwrap();
}
