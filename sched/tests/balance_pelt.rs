//! The balancer's and fork placement's group figures on PELT, as Linux
//! 7.2's `update_sg_lb_stats` / `update_sg_wakeup_stats` take them
//! (kernel/sched/fair.c): a CPU's load is `cpu_load()`, its runqueue's
//! `load_avg` with blocked load, not the weight queued at the instant.

use std::sync::atomic::Ordering;

use crate::common;
use common::cpu_id;

use common::plat::{machine, Plat};
use sched::smp::{Platform, Scheduler};
use sched::{DequeueFlags, Feature, SchedTask, TaskId, TaskParams, Topology, WakeFlags};

use crate::common::MS;

/// New tasks `ids` on `cpu`, the first one running.
fn put(s: &Scheduler<Plat>, cpu: usize, ids: &[u32]) {
    let mut rq = s.cpu_rq(cpu_id(cpu));
    rq.update_rq_clock(s.platform.now_ns());
    for &id in ids {
        let mut t = SchedTask::new(TaskParams::default());
        t.cpu = cpu_id(cpu);
        rq.wake_up_new_task(TaskId(id), t);
    }
    if rq.curr().is_none() {
        rq.pick_next_task();
    }
}

#[test]
fn fork_placement_breaks_a_tie_in_tasks_by_pelt_load_with_blocked_load() {
    // Four CPUs running one task each; CPU 1 also had a second task, which
    // went to sleep: its weight left the runqueue, its load average stays
    // there as blocked load (cpu_load 2048 against 1024 elsewhere).
    let s = machine(Topology::flat(4));
    s.cfg.features.set(Feature::DelayDequeue, false);
    put(&s, 0, &[1]);
    put(&s, 1, &[2, 5]);
    put(&s, 2, &[3]);
    put(&s, 3, &[4]);
    {
        let mut rq = s.cpu_rq(cpu_id(1));
        rq.dequeue_task(TaskId(5), DequeueFlags::SLEEP).unwrap();
    }
    for c in 0..4 {
        let sm = s.summary(cpu_id(c));
        assert_eq!(sm.load.load(Ordering::Relaxed), 1024, "cpu {c} weight");
        let want = if c == 1 { 2048 } else { 1024 };
        assert_eq!(
            sm.load_avg.load(Ordering::Relaxed),
            want,
            "cpu {c} load_avg"
        );
    }
    // A fork from CPU 1: every CPU runs one task, so the least loaded one
    // wins, CPU 1's blocked load counted; by the weight all four tied and
    // the forking CPU kept the child.
    let child = SchedTask::new(TaskParams::default());
    let (cpu, _) = s.select_task_rq(&child, cpu_id(1), WakeFlags::FORK);
    assert_eq!(cpu.index(), 0);
}

/// `ms` ms of ticks on each CPU of `cpus` (the clock advanced 1 ms before
/// each round).
fn run(s: &Scheduler<Plat>, cpus: &[usize], ms: u64) {
    for _ in 0..ms {
        s.platform.now.fetch_add(MS, Ordering::Relaxed);
        for &c in cpus {
            s.tick(cpu_id(c));
        }
    }
}

#[test]
fn a_group_of_light_tasks_has_spare_capacity_by_pelt() {
    // Two LLCs of two CPUs in one node; every CPU runs one task, so by
    // counts both LLCs are fully busy. LLC 0's tasks ran 300 ms (util
    // ~1014 each), LLC 1's were just spawned (util 512 each: half of an
    // empty CPU's capacity). group_classify (imbalance_pct 117): LLC 0,
    // util 2028 · 117 > 2048 · 100, is fully busy; LLC 1, 1024 · 117 <
    // 2048 · 100, has spare capacity.
    let s = machine(Topology::uniform(4, 1, 2, 2).unwrap());
    put(&s, 0, &[1]);
    put(&s, 1, &[2]);
    run(&s, &[0, 1], 300);
    put(&s, 2, &[3]);
    put(&s, 3, &[4]);
    for c in 0..4 {
        let u = s.summary(cpu_id(c)).util_avg.load(Ordering::Relaxed);
        let want = if c < 2 { 1001..=1024 } else { 512..=512 };
        assert!(want.contains(&u), "cpu {c}: util {u}");
    }
    // A fork from CPU 0 goes to the LLC with spare capacity (Linux's
    // find_idlest_group: a local group of a busier type loses); by counts
    // both were fully busy with equal load, and the local LLC kept it.
    let child = SchedTask::new(TaskParams::default());
    let (cpu, _) = s.select_task_rq(&child, cpu_id(0), WakeFlags::FORK);
    assert!(cpu.index() >= 2, "went to cpu {}", cpu.index());
    // Once LLC 1's tasks have run as long, both are fully busy again and
    // the local LLC keeps the child.
    run(&s, &[0, 1, 2, 3], 300);
    let (cpu, _) = s.select_task_rq(&child, cpu_id(0), WakeFlags::FORK);
    assert!(cpu.index() < 2, "went to cpu {}", cpu.index());
}
