//! The balancer's and fork placement's group figures on PELT, as Linux
//! 7.2's `update_sg_lb_stats` / `update_sg_wakeup_stats` take them
//! (kernel/sched/fair.c): a CPU's load is `cpu_load()`, its runqueue's
//! `load_avg` with blocked load, not the weight queued at the instant.

use std::sync::atomic::Ordering;
use std::sync::Arc;

mod common;
use common::cpu_id;

use common::plat::Plat;
use sched::smp::{Platform, Scheduler};
use sched::{
    DequeueFlags, Feature, SchedConfig, SchedTask, TaskId, TaskParams, Topology, WakeFlags,
};

const MS: u64 = 1_000_000;

fn machine(topo: Topology) -> Scheduler<Plat> {
    let n = topo.nr_cpus() as u32;
    let cfg = Arc::new(SchedConfig::new(n, 250));
    let s = Scheduler::with_topology(Plat::default(), cfg, topo, 64);
    s.platform.now.store(1_000 * MS, Ordering::Relaxed);
    s
}

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
