//! SCHED_DEADLINE on several CPUs (`sched::smp`'s `dl_balance`, after
//! Linux's kernel/sched/deadline.c push/pull): admitted deadline tasks
//! started on one CPU spread so that none misses a deadline; a CPU that
//! goes idle pulls a waiting deadline task; a pinned task stays; the fair
//! server (a per-CPU entity, not a task) is never moved. HZ=1000: the
//! budget is charged at the tick.

use std::sync::atomic::Ordering;
use std::sync::Arc;

mod common;
use common::cpu_id;
use common::plat::Plat;
use common::MS;

use sched::smp::Scheduler;
use sched::CpuId;
use sched::{CpuMask, PrevAction, Resched, SchedConfig, SchedTask, TaskId, TaskParams};

fn sched(cpus: usize) -> Scheduler<Plat> {
    let cfg = Arc::new(SchedConfig::new(cpus as u32, 1000));
    Scheduler::new(Plat::default(), cfg, cpus, 32)
}

fn dl(runtime_ms: u64, deadline_ms: u64, period_ms: u64) -> TaskParams {
    TaskParams::deadline(runtime_ms * MS, deadline_ms * MS, period_ms * MS)
}

/// `schedule()` + `finish_switch` on `cpu`, as a kernel does.
fn switch(s: &Scheduler<Plat>, cpu: CpuId, a: PrevAction) {
    let sw = {
        let mut rq = s.cpu_rq(cpu);
        s.schedule(&mut rq, a)
    };
    s.finish_switch(cpu, &sw);
}

fn curr(s: &Scheduler<Plat>, cpu: CpuId) -> Option<u32> {
    s.cpu_rq(cpu).curr().map(|t| t.0)
}

/// (pushes, pulls) counted on `cpu`.
fn moves(s: &Scheduler<Plat>, cpu: CpuId) -> (u64, u64) {
    let rq = s.cpu_rq(cpu);
    (rq.stats.nr_dl_push, rq.stats.nr_dl_pull)
}

/// Spawns task `id` with `p` on CPU `cpu` (allowed only there while it is
/// spawned), then allows it every CPU unless `pinned`.
fn spawn_on(s: &Scheduler<Plat>, id: u32, p: TaskParams, cpu: CpuId, pinned: bool) {
    let mut t = SchedTask::new(p);
    t.cpus_allowed = CpuMask::from_cpus(&[cpu.index()]);
    assert_eq!(s.spawn(TaskId(id), t, cpu).unwrap().0, cpu);
    if !pinned {
        s.set_affinity(TaskId(id), CpuMask::all(), cpu).unwrap();
    }
}

/// Runs every CPU for `ms` milliseconds of spinning tasks: a tick on each
/// CPU, then a switch on each CPU asked to reschedule (by its tick, or by
/// an IPI of a push or pull).
fn run_ms(s: &Scheduler<Plat>, ms: u64) {
    let n = s.nr_cpus();
    for _ in 0..ms {
        s.platform.now.fetch_add(MS, Ordering::Relaxed);
        for c in 0..n {
            s.tick(cpu_id(c));
        }
        // A switch's balance may ask another CPU to switch: repeat until
        // none is asked (bounded: a push or pull moves a task at most once
        // per switch).
        for _ in 0..4 * n {
            let mut any = false;
            for c in 0..n {
                if s.cpu_rq(cpu_id(c)).need_resched() != Resched::None {
                    switch(s, cpu_id(c), PrevAction::Stays);
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
    }
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).unwrap();
}

fn missed(s: &Scheduler<Plat>, id: u32) -> u64 {
    s.task(TaskId(id), cpu_id(0)).unwrap().dl.nr_missed
}

fn runtime(s: &Scheduler<Plat>, id: u32) -> u64 {
    s.task(TaskId(id), cpu_id(0)).unwrap().se.sum_exec_runtime
}

/// Two admitted 6/10 ms spinners (1.2 CPUs of the 1.8 that admission
/// allows on two CPUs) both started on CPU 0. Without migration CPU 0 is
/// overcommitted for ever: before deadline push/pull both stayed there
/// while CPU 1 idled, and in these 2 s they missed 196 and 134 of their
/// 200 deadlines, running 1196 and 804 ms of the 1200 each asked for (with
/// three 4/10 tasks: 195, 197 and 102 missed). Now the one queued behind
/// is pushed to the idle CPU 1 at once and each gets its 6 ms in every
/// period, no deadline missed.
#[test]
fn two_admitted_sixty_percent_tasks_on_one_cpu_spread_and_miss_nothing() {
    let s = sched(2);
    switch(&s, cpu_id(0), PrevAction::Stays);
    spawn_on(&s, 1, dl(6, 10, 10), cpu_id(0), false);
    spawn_on(&s, 2, dl(6, 10, 10), cpu_id(0), false);
    switch(&s, cpu_id(0), PrevAction::Stays);
    run_ms(&s, 2_000);
    let (c1, c2) = (s.task_cpu(TaskId(1)), s.task_cpu(TaskId(2)));
    eprintln!(
        "cpus {c1:?} {c2:?}, missed {} {}, ran {} {} ms, moves cpu0 {:?} cpu1 {:?}",
        missed(&s, 1),
        missed(&s, 2),
        runtime(&s, 1) / MS,
        runtime(&s, 2) / MS,
        moves(&s, cpu_id(0)),
        moves(&s, cpu_id(1))
    );
    assert_ne!(c1, c2, "one of them moved to CPU 1");
    assert_eq!(missed(&s, 1) + missed(&s, 2), 0);
    for id in [1, 2] {
        // 6 ms in each of 200 periods (the last one's budget may be under
        // way).
        let r = runtime(&s, id);
        assert!(
            (199 * 6 * MS..=200 * 6 * MS + MS).contains(&r),
            "task {id}: {r} ns"
        );
    }
    assert!(moves(&s, cpu_id(0)).0 + moves(&s, cpu_id(1)).1 >= 1);
}

/// Three admitted 4/10 ms spinners started on CPU 0 of two: global EDF
/// runs the two earliest deadlines at once on the two CPUs and the third
/// after them on whichever frees first; 1.2 CPUs of work, none missed.
#[test]
fn three_admitted_tasks_on_one_cpu_share_two_cpus_and_miss_nothing() {
    let s = sched(2);
    for id in 1..=3 {
        spawn_on(&s, id, dl(4, 10, 10), cpu_id(0), false);
    }
    switch(&s, cpu_id(0), PrevAction::Stays);
    run_ms(&s, 2_000);
    let total: u64 = (1..=3).map(|id| missed(&s, id)).sum();
    eprintln!(
        "missed {:?}, ran {:?} ms, moves cpu0 {:?} cpu1 {:?}",
        (1..=3).map(|id| missed(&s, id)).collect::<Vec<_>>(),
        (1..=3).map(|id| runtime(&s, id) / MS).collect::<Vec<_>>(),
        moves(&s, cpu_id(0)),
        moves(&s, cpu_id(1))
    );
    assert_eq!(total, 0);
    for id in 1..=3 {
        assert!(runtime(&s, id) >= 199 * 4 * MS, "task {id}");
    }
}

/// CPU 1 runs a deadline task with the earliest deadline; CPU 0 runs one
/// and has a third, of a later deadline than CPU 1's, queued: no push (CPU
/// 1's deadline is earlier). When CPU 1's task sleeps and CPU 1 goes idle,
/// its switch pulls the waiting task, which runs there at once.
#[test]
fn a_cpu_going_idle_pulls_the_waiting_deadline_task() {
    let s = sched(2);
    spawn_on(&s, 1, dl(2, 5, 100), cpu_id(1), false);
    switch(&s, cpu_id(1), PrevAction::Stays);
    spawn_on(&s, 2, dl(2, 10, 100), cpu_id(0), false);
    switch(&s, cpu_id(0), PrevAction::Stays);
    spawn_on(&s, 3, dl(2, 20, 100), cpu_id(0), false);
    assert_eq!(curr(&s, cpu_id(0)), Some(2));
    assert_eq!(curr(&s, cpu_id(1)), Some(1));
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(0)));
    assert_eq!(s.dl_overloaded_cpus(), 1);
    assert_eq!(
        moves(&s, cpu_id(0)),
        (0, 0),
        "no push onto the earlier deadline"
    );
    s.platform.now.fetch_add(MS, Ordering::Relaxed);
    switch(&s, cpu_id(1), PrevAction::Sleeps);
    assert_eq!(s.task_cpu(TaskId(3)), Some(cpu_id(1)));
    assert_eq!(moves(&s, cpu_id(1)), (0, 1));
    assert_eq!(s.dl_overloaded_cpus(), 0);
    assert_eq!(s.cpu_rq(cpu_id(1)).need_resched(), Resched::Now);
    switch(&s, cpu_id(1), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(1)), Some(3), "the pulled task runs at once");
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).unwrap();
}

/// A 6/10 task pinned to CPU 0 and a free one, both on CPU 0: the free
/// one goes to CPU 1, the pinned one never leaves CPU 0, and neither
/// misses. With both pinned nothing moves and CPU 0 stays overcommitted.
#[test]
fn pinned_deadline_tasks_stay() {
    let s = sched(2);
    spawn_on(&s, 1, dl(6, 10, 10), cpu_id(0), true);
    spawn_on(&s, 2, dl(6, 10, 10), cpu_id(0), false);
    switch(&s, cpu_id(0), PrevAction::Stays);
    for _ in 0..20 {
        run_ms(&s, 50);
        assert_eq!(s.task_cpu(TaskId(1)), Some(cpu_id(0)));
    }
    assert_eq!(s.task_cpu(TaskId(2)), Some(cpu_id(1)));
    assert_eq!(missed(&s, 1) + missed(&s, 2), 0);

    let s = sched(2);
    spawn_on(&s, 1, dl(6, 10, 10), cpu_id(0), true);
    spawn_on(&s, 2, dl(6, 10, 10), cpu_id(0), true);
    switch(&s, cpu_id(0), PrevAction::Stays);
    run_ms(&s, 1_000);
    assert_eq!(s.task_cpu(TaskId(1)), Some(cpu_id(0)));
    assert_eq!(s.task_cpu(TaskId(2)), Some(cpu_id(0)));
    assert_eq!(moves(&s, cpu_id(0)), (0, 0));
    assert_eq!(moves(&s, cpu_id(1)), (0, 0));
    assert_eq!(s.dl_overloaded_cpus(), 0, "pinned tasks do not overload");
    assert!(missed(&s, 1) + missed(&s, 2) > 0, "1.2 CPUs of work on one");
}

/// CPU 0 runs a FIFO hog, a fair spinner and two free 4/10 deadline
/// tasks (the fair ones pinned): the deadline tasks spread, and the fair
/// spinner is still served on CPU 0 by CPU 0's own fair server; CPU 1's
/// server, with no fair task, serves nothing.
#[test]
fn the_fair_server_is_not_moved() {
    let s = sched(2);
    spawn_on(&s, 10, TaskParams::fifo(50), cpu_id(0), true);
    spawn_on(&s, 11, TaskParams::default(), cpu_id(0), true);
    switch(&s, cpu_id(0), PrevAction::Stays);
    spawn_on(&s, 1, dl(4, 10, 10), cpu_id(0), false);
    spawn_on(&s, 2, dl(4, 10, 10), cpu_id(0), false);
    switch(&s, cpu_id(0), PrevAction::Stays);
    run_ms(&s, 3_000);
    let served = |c: usize| s.cpu_rq(cpu_id(c)).fair_server.served_ns;
    eprintln!(
        "fair spinner ran {} ms; served cpu0 {} ms cpu1 {} ms; dl on {:?} {:?}",
        runtime(&s, 11) / MS,
        served(0) / MS,
        served(1) / MS,
        s.task_cpu(TaskId(1)),
        s.task_cpu(TaskId(2))
    );
    assert_eq!(s.task_cpu(TaskId(11)), Some(cpu_id(0)));
    assert!(served(0) > 0 && runtime(&s, 11) > 0);
    assert_eq!(served(1), 0);
    assert_ne!(s.task_cpu(TaskId(1)), s.task_cpu(TaskId(2)));
    assert_eq!(missed(&s, 1) + missed(&s, 2), 0);
}

/// Spawns deadline task `id` on CPU `cpu`, runs it there and puts it to
/// sleep (its previous CPU is `cpu`), then allows it every CPU.
fn asleep_on(s: &Scheduler<Plat>, id: u32, p: TaskParams, cpu: CpuId) {
    spawn_on(s, id, p, cpu, true);
    switch(s, cpu, PrevAction::Stays);
    assert_eq!(curr(s, cpu), Some(id));
    switch(s, cpu, PrevAction::Sleeps);
    s.set_affinity(TaskId(id), CpuMask::all(), cpu).unwrap();
}

/// `select_task_rq_dl`: a deadline task waking where a task of an earlier
/// deadline runs goes straight to the idle CPU (no push needed); one with
/// an earlier deadline stays on its previous CPU and preempts even with a
/// CPU idle, and the task it preempted is pushed there after the switch.
#[test]
fn deadline_wakeups_go_where_they_run_at_once() {
    let s = sched(2);
    // Deadlines: B now+50 ms (renewed to wake time + 50), C now+5 ms
    // (renewed to wake time + 5), A spawn time + 10 ms.
    asleep_on(&s, 2, dl(2, 50, 100), cpu_id(0));
    asleep_on(&s, 3, dl(1, 5, 100), cpu_id(0));
    s.platform.now.fetch_add(MS, Ordering::Relaxed);
    spawn_on(&s, 1, dl(2, 10, 100), cpu_id(0), false);
    switch(&s, cpu_id(0), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(0)), Some(1));
    s.platform.now.fetch_add(MS, Ordering::Relaxed);

    let w = s
        .wake(TaskId(2), sched::WakeFlags::empty(), cpu_id(0))
        .unwrap();
    assert_eq!(w.cpu(), cpu_id(1), "a later deadline goes to the idle CPU");
    assert_eq!(moves(&s, cpu_id(0)), (0, 0));
    switch(&s, cpu_id(1), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(1)), Some(2));
    switch(&s, cpu_id(1), PrevAction::Sleeps);
    assert_eq!(curr(&s, cpu_id(1)), None);
    // CPU 1 idle again, CPU 0 runs A (deadline ~11 ms): C (~7 ms) stays on
    // CPU 0 and preempts A (Linux's choice: the fair placement would have
    // taken the idle CPU), and A then goes to the idle CPU 1.
    let w = s
        .wake(TaskId(3), sched::WakeFlags::empty(), cpu_id(0))
        .unwrap();
    assert_eq!(w.cpu(), cpu_id(0), "an earlier deadline stays and preempts");
    assert_eq!(s.cpu_rq(cpu_id(0)).need_resched(), Resched::Now);
    switch(&s, cpu_id(0), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(0)), Some(3));
    assert_eq!(s.task_cpu(TaskId(1)), Some(cpu_id(1)));
    assert_eq!(moves(&s, cpu_id(0)), (1, 0));
    switch(&s, cpu_id(1), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(1)), Some(1));
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).unwrap();
}
