//! RT push and pull balancing (`sched::smp`'s `rt_balance`, after Linux's
//! kernel/sched/rt.c): an RT task queued behind a higher one moves to a CPU
//! running something of lower rank and runs there at once; a CPU that drops
//! to a lower-ranked task pulls a waiting RT task from an RT-overloaded CPU;
//! pinned tasks stay; nothing moves onto a CPU running an equal or higher RT
//! task; the push/pull counters follow.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common;
use common::cpu_id;

use common::plat::Plat;
use sched::smp::Scheduler;
use sched::CpuId;
use sched::{
    CpuMask, Policy, PrevAction, SchedConfig, SchedTask, Switch, TaskId, TaskParams, WakeFlags,
};

fn sched(cpus: usize) -> Scheduler<Plat> {
    let cfg = Arc::new(SchedConfig::new(cpus as u32, 250));
    Scheduler::new(Plat::default(), cfg, cpus, 32)
}

fn fifo(prio: u8) -> TaskParams {
    TaskParams {
        policy: Policy::Fifo,
        rt_priority: prio,
        ..TaskParams::default()
    }
}

fn ipis(s: &Scheduler<Plat>, cpu: CpuId) -> u64 {
    s.platform.ipis[cpu.index()].load(Ordering::Relaxed)
}

/// `schedule()` + `finish_switch` on `cpu`, as a kernel does.
fn switch(s: &Scheduler<Plat>, cpu: CpuId, a: PrevAction) -> Switch {
    s.platform.now.fetch_add(1000, Ordering::Relaxed);
    let sw = {
        let mut rq = s.cpu_rq(cpu);
        s.schedule(&mut rq, a)
    };
    s.finish_switch(cpu, &sw);
    sw
}

fn curr(s: &Scheduler<Plat>, cpu: CpuId) -> Option<u32> {
    s.cpu_rq(cpu).curr().map(|t| t.0)
}

fn stats(s: &Scheduler<Plat>, cpu: CpuId) -> (u64, u64) {
    let rq = s.cpu_rq(cpu);
    (rq.stats.nr_rt_push, rq.stats.nr_rt_pull)
}

/// Spawns task `id` with `p` pinned to `cpu` and runs it there.
fn run_on(s: &Scheduler<Plat>, id: u32, p: TaskParams, cpu: CpuId) {
    let mut t = SchedTask::new(p);
    t.cpus_allowed = CpuMask::from_cpus(&[cpu.index()]);
    assert_eq!(s.spawn(TaskId(id), t, cpu).unwrap().0, cpu);
    switch(s, cpu, PrevAction::Stays);
    assert_eq!(curr(s, cpu), Some(id));
}

/// Spawns task `id` with `p` on `cpu`, runs it there and puts it to sleep,
/// so that its previous CPU is `cpu`; then allows it every CPU, or only
/// `cpu` with `pinned`.
fn asleep_on(s: &Scheduler<Plat>, id: u32, p: TaskParams, cpu: CpuId, pinned: bool) {
    run_on(s, id, p, cpu);
    switch(s, cpu, PrevAction::Sleeps);
    if !pinned {
        s.set_affinity(TaskId(id), CpuMask::all(), cpu).unwrap();
    }
}

/// CPU 1 runs a fair task; FIFO 50 and FIFO 10, asleep with CPU 0 their
/// previous CPU, are woken there together (before CPU 0 switches, so
/// `select_task_rq_rt` sees CPU 0 idle and places both on it): CPU 0 runs
/// the 50, and the 10 queued behind it is pushed to CPU 1, which is kicked
/// and runs it at once.
#[test]
fn lower_rt_task_queued_behind_a_higher_one_is_pushed_to_the_fair_cpu() {
    let s = sched(2);
    run_on(&s, 1, TaskParams::default(), cpu_id(1));
    asleep_on(&s, 2, fifo(50), cpu_id(0), false);
    asleep_on(&s, 3, fifo(10), cpu_id(0), false);
    assert_eq!(s.rt_overloaded_cpus(), 0);
    s.wake(TaskId(2), WakeFlags::empty(), cpu_id(0)).unwrap();
    let w = s.wake(TaskId(3), WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(w.cpu(), cpu_id(0), "placement put the 10 behind the 50");
    // Queued behind the 50 (which outranks the idle task and is about to
    // run here): CPU 0 is RT-overloaded, but the 50 is not pushed.
    assert_eq!(s.rt_overloaded_cpus(), 1);
    assert_eq!(stats(&s, cpu_id(0)), (0, 0));
    let ipis_before = ipis(&s, cpu_id(1));
    switch(&s, cpu_id(0), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(0)), Some(2));
    // The switch's balance callback pushed the 10 to CPU 1 and kicked it.
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(1)));
    assert_eq!(stats(&s, cpu_id(0)), (1, 0));
    assert_eq!(stats(&s, cpu_id(1)), (0, 0));
    assert_eq!(s.rt_overloaded_cpus(), 0);
    assert_eq!(ipis(&s, cpu_id(1)), ipis_before + 1);
    assert_eq!(s.cpu_rq(cpu_id(1)).need_resched(), sched::Resched::Now);
    switch(&s, cpu_id(1), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(1)), Some(3), "the pushed task runs at once");
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).unwrap();
}

/// CPU 0 runs FIFO 50 and CPU 1 FIFO 60 when FIFO 40 wakes with CPU 0 its
/// previous CPU: placement finds no CPU it outranks and queues it on CPU 0,
/// and the push that follows the wakeup (`task_woken_rt`) finds none
/// either. When CPU 1's task drops to a fair priority, CPU 1 pulls it
/// (`prio_changed_rt`).
#[test]
fn waiting_rt_task_is_pulled_when_its_cpu_drops_below_it_by_a_priority_change() {
    let s = sched(2);
    asleep_on(&s, 3, fifo(40), cpu_id(0), false);
    run_on(&s, 1, fifo(60), cpu_id(1));
    run_on(&s, 2, fifo(50), cpu_id(0));
    s.wake(TaskId(3), WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(0)));
    assert_eq!(s.rt_overloaded_cpus(), 1);
    assert_eq!(
        stats(&s, cpu_id(0)),
        (0, 0),
        "no push onto the CPU running the 60"
    );
    s.set_params(TaskId(1), TaskParams::default(), cpu_id(1))
        .unwrap();
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(1)));
    assert_eq!(stats(&s, cpu_id(1)), (0, 1));
    assert_eq!(s.rt_overloaded_cpus(), 0);
    switch(&s, cpu_id(1), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(1)), Some(3));
}

/// Pull: CPU 0 runs FIFO 50 with FIFO 40 and FIFO 30 queued; CPU 1 runs
/// FIFO 60, so neither can be pushed. When CPU 1's task blocks, CPU 1 pulls
/// the 40 (the highest waiting one), is kicked, and runs it; the 30 stays
/// queued on CPU 0, which is still overloaded, and is pulled by CPU 1 only
/// once the 40 blocks in turn.
#[test]
fn cpu_whose_rt_task_blocks_pulls_the_waiting_one() {
    let s = sched(2);
    asleep_on(&s, 3, fifo(40), cpu_id(0), false);
    asleep_on(&s, 4, fifo(30), cpu_id(0), false);
    run_on(&s, 1, fifo(60), cpu_id(1));
    run_on(&s, 2, fifo(50), cpu_id(0));
    s.wake(TaskId(3), WakeFlags::empty(), cpu_id(0)).unwrap();
    s.wake(TaskId(4), WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(0)));
    assert_eq!(s.task_cpu(TaskId(4)), Some(cpu_id(0)));
    assert_eq!(s.rt_overloaded_cpus(), 1);
    let ipis_before = ipis(&s, cpu_id(1));
    let sw = switch(&s, cpu_id(1), PrevAction::Sleeps);
    assert_eq!(sw.next, None, "CPU 1 went idle first");
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(1)), "pulled the 40");
    assert_eq!(s.task_cpu(TaskId(4)), Some(cpu_id(0)));
    assert_eq!(stats(&s, cpu_id(1)), (0, 1));
    assert_eq!(stats(&s, cpu_id(0)), (0, 0));
    assert_eq!(ipis(&s, cpu_id(1)), ipis_before + 1);
    assert_eq!(
        s.rt_overloaded_cpus(),
        1,
        "the 50 and the 30 remain on CPU 0"
    );
    switch(&s, cpu_id(1), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(1)), Some(3));
    // The 40 blocks: the 30 (waiting behind the 50) outranks CPU 1's idle.
    switch(&s, cpu_id(1), PrevAction::Sleeps);
    assert_eq!(s.task_cpu(TaskId(4)), Some(cpu_id(1)));
    assert_eq!(stats(&s, cpu_id(1)), (0, 2));
    assert_eq!(s.rt_overloaded_cpus(), 0);
    switch(&s, cpu_id(1), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(1)), Some(4));
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).unwrap();
}

/// Pinned tasks stay: a FIFO 10 allowed only CPU 0, queued behind a FIFO 50
/// there, is neither pushed to the idle CPU 1 nor pulled by it, and does
/// not count CPU 0 as RT-overloaded (Linux counts only migratable tasks).
#[test]
fn pinned_rt_task_is_never_pushed_nor_pulled() {
    let s = sched(2);
    asleep_on(&s, 2, fifo(50), cpu_id(0), false);
    asleep_on(&s, 3, fifo(10), cpu_id(0), true);
    s.wake(TaskId(2), WakeFlags::empty(), cpu_id(0)).unwrap();
    s.wake(TaskId(3), WakeFlags::empty(), cpu_id(0)).unwrap();
    switch(&s, cpu_id(0), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(0)), Some(2));
    assert_eq!(s.rt_overloaded_cpus(), 0);
    // CPU 1 switches (idle to a fair task and back): nothing to pull.
    run_on(&s, 5, TaskParams::default(), cpu_id(1));
    switch(&s, cpu_id(1), PrevAction::Sleeps);
    assert_eq!(curr(&s, cpu_id(1)), None);
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(0)));
    assert_eq!(stats(&s, cpu_id(0)), (0, 0));
    assert_eq!(stats(&s, cpu_id(1)), (0, 0));
    assert_eq!(s.push_rt_tasks(cpu_id(0), cpu_id(0)), 0);
    assert_eq!(s.pull_rt_task(cpu_id(1)), 0);
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(0)));
}

/// No push onto a CPU running an equal or higher RT task: CPU 0 runs FIFO
/// 50 with FIFO 10 queued (woken together, as in the first test), CPU 1
/// runs FIFO 10, then (another machine) FIFO 70. The 10 stays, CPU 0 stays
/// overloaded, and neither counter moves; an explicit push or pull finds
/// nothing to do.
#[test]
fn no_push_onto_a_cpu_running_an_equal_or_higher_rt_task() {
    for other in [10u8, 70] {
        let s = sched(2);
        run_on(&s, 1, fifo(other), cpu_id(1));
        asleep_on(&s, 2, fifo(50), cpu_id(0), false);
        asleep_on(&s, 3, fifo(10), cpu_id(0), false);
        s.wake(TaskId(2), WakeFlags::empty(), cpu_id(0)).unwrap();
        s.wake(TaskId(3), WakeFlags::empty(), cpu_id(0)).unwrap();
        switch(&s, cpu_id(0), PrevAction::Stays);
        assert_eq!(curr(&s, cpu_id(0)), Some(2));
        assert_eq!(
            s.task_cpu(TaskId(3)),
            Some(cpu_id(0)),
            "CPU 1 runs FIFO {other}"
        );
        assert_eq!(s.rt_overloaded_cpus(), 1);
        assert_eq!(s.push_rt_tasks(cpu_id(0), cpu_id(0)), 0);
        assert_eq!(s.pull_rt_task(cpu_id(1)), 0);
        assert_eq!(stats(&s, cpu_id(0)), (0, 0));
        assert_eq!(stats(&s, cpu_id(1)), (0, 0));
        assert_eq!(curr(&s, cpu_id(1)), Some(1));
    }
}

/// A pull does not take a waiting task that outranks the task running on
/// its own CPU (it is about to run there), and, as in Linux's
/// `pull_rt_task`, then takes nothing from that CPU: CPU 0 runs a fair task
/// with FIFO 50 and FIFO 40 queued (woken together before CPU 0 switched,
/// while CPU 1 ran FIFO 60); CPU 1 goes idle and pulls nothing. Once CPU 0
/// switches to the 50, it pushes the 40 to the idle CPU 1.
#[test]
fn pull_leaves_the_task_about_to_run_where_it_is() {
    let s = sched(2);
    run_on(&s, 1, fifo(60), cpu_id(1));
    asleep_on(&s, 2, fifo(50), cpu_id(0), false);
    asleep_on(&s, 3, fifo(40), cpu_id(0), false);
    run_on(&s, 4, TaskParams::default(), cpu_id(0));
    s.wake(TaskId(2), WakeFlags::empty(), cpu_id(0)).unwrap();
    s.wake(TaskId(3), WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(s.task_cpu(TaskId(2)), Some(cpu_id(0)));
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(0)));
    switch(&s, cpu_id(1), PrevAction::Sleeps);
    assert_eq!(curr(&s, cpu_id(1)), None);
    assert_eq!(
        s.task_cpu(TaskId(2)),
        Some(cpu_id(0)),
        "the 50 outranks CPU 0's fair task"
    );
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(0)));
    assert_eq!(stats(&s, cpu_id(1)), (0, 0));
    switch(&s, cpu_id(0), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(0)), Some(2));
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(1)));
    assert_eq!(stats(&s, cpu_id(0)), (1, 0));
    switch(&s, cpu_id(1), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(1)), Some(3));
}

/// Without RT tasks nothing is ever RT-overloaded, whatever the fair load.
#[test]
fn fair_tasks_never_make_a_cpu_rt_overloaded() {
    let s = sched(2);
    for id in 1..6 {
        let t = SchedTask::new(TaskParams::default());
        s.spawn(TaskId(id), t, cpu_id(0)).unwrap();
    }
    for _ in 0..4 {
        switch(&s, cpu_id(0), PrevAction::Stays);
        switch(&s, cpu_id(1), PrevAction::Stays);
        assert_eq!(s.rt_overloaded_cpus(), 0);
    }
    assert_eq!(stats(&s, cpu_id(0)), (0, 0));
    assert_eq!(stats(&s, cpu_id(1)), (0, 0));
}
