//! Task groups through `smp::Scheduler` on two CPUs: a group is built on
//! every runqueue, tasks are attached running, queued or asleep, a weight
//! change reaches every CPU, a destroy is refused while the group has
//! tasks, and with one spinner of group A and five of group B pinned to
//! each CPU each group gets half of the machine.

use std::sync::atomic::Ordering;
use std::sync::Arc;

mod common;
use common::cpu_id;
use common::plat::Plat;
use sched::fair::group::{GroupError, GroupId};
use sched::smp::Scheduler;
use sched::{CpuMask, PrevAction, Resched, SchedConfig, SchedTask, TaskId, TaskParams};

const MS: u64 = 1_000_000;

fn machine() -> Scheduler<Plat> {
    let cfg = Arc::new(SchedConfig::new(2, 1000));
    let s = Scheduler::new(Plat::default(), cfg, 2, 64);
    s.platform.now.store(1_000 * MS, Ordering::Relaxed);
    s
}

fn pinned(cpu: usize) -> SchedTask {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(cpu));
    t
}

/// One millisecond on each CPU: tick, and switch when asked to.
fn run_ms(s: &Scheduler<Plat>, ms: u64) {
    for _ in 0..ms {
        s.platform.now.fetch_add(MS, Ordering::Relaxed);
        for c in 0..2 {
            let cpu = cpu_id(c);
            let r = s.tick(cpu);
            let idle = s.cpu_rq(cpu).curr().is_none();
            if r != Resched::None || idle {
                let sw = {
                    let mut rq = s.cpu_rq(cpu);
                    s.schedule(&mut rq, PrevAction::Stays)
                };
                s.finish_switch(cpu, &sw);
            }
        }
    }
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).unwrap();
}

fn runtime(s: &Scheduler<Plat>, id: u32) -> u64 {
    s.task(TaskId(id), cpu_id(0)).unwrap().se.sum_exec_runtime
}

#[test]
fn equal_groups_split_a_two_cpu_machine() {
    let s = machine();
    let a = s.create_task_group(GroupId::ROOT, 100).unwrap();
    let b = s.create_task_group(GroupId::ROOT, 100).unwrap();
    for c in 0..2 {
        assert!(s.cpu_rq(cpu_id(c)).group_fair(a).is_some());
    }
    for (id, cpu) in [(1, 0), (2, 1)] {
        s.spawn(TaskId(id), pinned(cpu), cpu_id(cpu)).unwrap();
        s.sched_move_task(TaskId(id), a, cpu_id(0)).unwrap();
    }
    for id in 10..20u32 {
        let cpu = (id % 2) as usize;
        s.spawn(TaskId(id), pinned(cpu), cpu_id(cpu)).unwrap();
        s.sched_move_task(TaskId(id), b, cpu_id(0)).unwrap();
    }
    assert_eq!(s.cfg.groups.nr_tasks(a), 2);
    assert_eq!(s.cfg.groups.nr_tasks(b), 10);
    run_ms(&s, 3000);
    let ra: u64 = [1, 2].iter().map(|&i| runtime(&s, i)).sum();
    let rb: u64 = (10..20).map(|i| runtime(&s, i)).sum();
    let sa = ra as f64 / (ra + rb) as f64;
    assert!(
        (sa - 0.5).abs() < 0.01,
        "A got {sa:.4} of the machine, want 0.5 ± 0.01"
    );
    // 300 for A: 3/4 of each CPU from now on.
    assert_eq!(
        s.set_task_group_weight(a, 0, cpu_id(0)),
        Err(GroupError::BadWeight(0))
    );
    s.set_task_group_weight(a, 300, cpu_id(0)).unwrap();
    for c in 0..2 {
        assert_eq!(s.cpu_rq(cpu_id(c)).group_entity_weight(a), Some(1536));
    }
    let (ra0, rb0) = (ra, rb);
    run_ms(&s, 3000);
    let ra: u64 = [1, 2].iter().map(|&i| runtime(&s, i)).sum::<u64>() - ra0;
    let rb: u64 = (10..20).map(|i| runtime(&s, i)).sum::<u64>() - rb0;
    let sa = ra as f64 / (ra + rb) as f64;
    assert!(
        (sa - 0.75).abs() < 0.01,
        "A at 300 got {sa:.4}, want 0.75 ± 0.01"
    );
}

#[test]
fn attach_running_queued_and_sleeping_tasks_and_destroy() {
    let s = machine();
    let a = s.create_task_group(GroupId::ROOT, 100).unwrap();
    let child = s.create_task_group(a, 100).unwrap();
    s.spawn(TaskId(1), pinned(0), cpu_id(0)).unwrap();
    s.spawn(TaskId(2), pinned(0), cpu_id(0)).unwrap();
    run_ms(&s, 5);
    let running = s.cpu_rq(cpu_id(0)).curr().unwrap();
    let queued = TaskId(3 - running.0);
    s.sched_move_task(running, a, cpu_id(0)).unwrap();
    s.sched_move_task(queued, child, cpu_id(0)).unwrap();
    assert_eq!(s.task_group(running, cpu_id(0)), Some(a));
    assert_eq!(s.task_group(queued, cpu_id(0)), Some(child));
    run_ms(&s, 20);
    // The running one sleeps; attached asleep (to the child group, where
    // it may be already), it wakes into the child group.
    let cpu = cpu_id(0);
    let curr = s.cpu_rq(cpu).curr().unwrap();
    let sw = {
        let mut rq = s.cpu_rq(cpu);
        s.schedule(&mut rq, PrevAction::Sleeps)
    };
    s.finish_switch(cpu, &sw);
    s.sched_move_task(curr, child, cpu_id(1)).unwrap();
    assert_eq!(s.task_group(curr, cpu_id(1)), Some(child));
    assert_eq!(s.destroy_task_group(child), Err(GroupError::Busy));
    assert_eq!(s.destroy_task_group(a), Err(GroupError::Busy));
    s.wake(curr, sched::WakeFlags::empty(), cpu_id(0)).unwrap();
    run_ms(&s, 20);
    // Both runnable on CPU 0: each queued in its group's runqueue there.
    let in_child = [1, 2]
        .iter()
        .filter(|&&id| s.task_group(TaskId(id), cpu) == Some(child))
        .count() as u32;
    assert!(in_child >= 1);
    assert_eq!(s.cpu_rq(cpu).group_fair(child).unwrap().nr_queued, in_child);
    assert_eq!(s.cfg.groups.nr_tasks(child), in_child);
    assert_eq!(s.cfg.groups.nr_tasks(a), 2 - in_child);
    assert_eq!(
        s.sched_move_task(TaskId(40), a, cpu),
        Err(GroupError::NoSuchTask)
    );
    assert_eq!(
        s.sched_move_task(TaskId(1), GroupId(50), cpu),
        Err(GroupError::NoSuchGroup)
    );
    // Removal detaches: then both groups can go.
    for id in [TaskId(1), TaskId(2)] {
        if s.cpu_rq(cpu).curr() == Some(id) {
            s.sched_move_task(id, GroupId::ROOT, cpu).unwrap();
        } else {
            s.remove(id, cpu).unwrap();
        }
    }
    run_ms(&s, 10);
    s.destroy_task_group(child).unwrap();
    s.destroy_task_group(a).unwrap();
    assert!(s.cfg.groups.list().is_empty());
    run_ms(&s, 10);
}
