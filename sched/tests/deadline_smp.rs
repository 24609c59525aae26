//! SCHED_DEADLINE on several CPUs (`sched::smp`'s `dl_balance`, after
//! Linux's kernel/sched/deadline.c push/pull): admitted deadline tasks
//! started on one CPU spread so that none misses a deadline; a CPU that
//! goes idle pulls a waiting deadline task; a task restricted to one CPU
//! stays; the fair server (a per-CPU entity, not a task) is never moved.
//! HZ=1000: the budget is charged at the tick.
//!
//! A deadline task must be allowed on every CPU (Linux's
//! `__sched_setscheduler` and `dl_task_check_affinity` rule, tested at the
//! end), so the tests start one on a chosen CPU as Linux would: a fair task
//! there, allowed every CPU, then made SCHED_DEADLINE where it sits.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common;
use common::cpu_id;
use common::plat::Plat;
use common::MS;

use sched::smp::{LifecycleError, Scheduler};
use sched::task::ParamsError;
use sched::CpuId;
use sched::{CpuMask, Policy, PrevAction, Resched, SchedConfig, SchedTask, TaskId, TaskParams};

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

/// Spawns task `id` with `p` (not SCHED_DEADLINE) on CPU `cpu`, allowed
/// only there.
fn pin_on(s: &Scheduler<Plat>, id: u32, p: TaskParams, cpu: CpuId) {
    let mut t = SchedTask::new(p);
    t.cpus_allowed = CpuMask::from_cpus(&[cpu.index()]);
    assert_eq!(s.spawn(TaskId(id), t, cpu).unwrap().0, cpu);
}

/// Starts task `id` with `p` on CPU `cpu` the way Linux allows for a
/// deadline task: spawned fair and allowed only `cpu` (so it lands there),
/// allowed every CPU, then given `p` (`sched_setattr`) where it is queued.
/// The setattr's balancing may push it on at once, as Linux's
/// `switched_to_dl` does.
fn spawn_on(s: &Scheduler<Plat>, id: u32, p: TaskParams, cpu: CpuId) {
    pin_on(s, id, TaskParams::default(), cpu);
    s.set_affinity(TaskId(id), CpuMask::all(), cpu).unwrap();
    s.set_params(TaskId(id), p, cpu).unwrap();
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
    check(s);
}

/// The scheduler's invariants hold.
fn check(s: &Scheduler<Plat>) {
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
    spawn_on(&s, 1, dl(6, 10, 10), cpu_id(0));
    spawn_on(&s, 2, dl(6, 10, 10), cpu_id(0));
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
        spawn_on(&s, id, dl(4, 10, 10), cpu_id(0));
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
    spawn_on(&s, 1, dl(2, 5, 100), cpu_id(1));
    switch(&s, cpu_id(1), PrevAction::Stays);
    spawn_on(&s, 2, dl(2, 10, 100), cpu_id(0));
    switch(&s, cpu_id(0), PrevAction::Stays);
    spawn_on(&s, 3, dl(2, 20, 100), cpu_id(0));
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
    check(&s);
}

/// Spawns deadline task `id` with `p` allowed only on CPU 0, which Linux
/// allows while CPU 0 is its root domain's only CPU: CPU 1 goes inactive
/// for the spawn and comes back after it (affinity is checked when it is
/// set, not when a CPU comes online, in Linux too).
fn restricted_on_cpu0(s: &Scheduler<Plat>, id: u32, p: TaskParams) {
    s.sched_cpu_deactivate(cpu_id(1), cpu_id(0)).unwrap();
    pin_on(s, id, p, cpu_id(0));
    s.sched_cpu_activate(cpu_id(1)).unwrap();
}

/// A 6/10 task restricted to CPU 0 and a free one, both on CPU 0: the
/// free one goes to CPU 1, the restricted one never leaves CPU 0, and
/// neither misses. Two restricted 4/10 tasks on CPU 0: nothing moves and
/// CPU 0 does not count as overloaded (nothing there may be pushed). (Two
/// 6/10 tasks restricted to CPU 0, 1.2 CPUs of work on one, missed
/// deadlines here before the affinity rule; it now refuses the second:
/// see `a_restricted_deadline_task_is_refused`.)
#[test]
fn restricted_deadline_tasks_stay() {
    let s = sched(2);
    restricted_on_cpu0(&s, 1, dl(6, 10, 10));
    spawn_on(&s, 2, dl(6, 10, 10), cpu_id(0));
    switch(&s, cpu_id(0), PrevAction::Stays);
    for _ in 0..20 {
        run_ms(&s, 50);
        assert_eq!(s.task_cpu(TaskId(1)), Some(cpu_id(0)));
    }
    assert_eq!(s.task_cpu(TaskId(2)), Some(cpu_id(1)));
    assert_eq!(missed(&s, 1) + missed(&s, 2), 0);

    let s = sched(2);
    restricted_on_cpu0(&s, 1, dl(4, 10, 10));
    restricted_on_cpu0(&s, 2, dl(4, 10, 10));
    switch(&s, cpu_id(0), PrevAction::Stays);
    run_ms(&s, 1_000);
    assert_eq!(s.task_cpu(TaskId(1)), Some(cpu_id(0)));
    assert_eq!(s.task_cpu(TaskId(2)), Some(cpu_id(0)));
    assert_eq!(moves(&s, cpu_id(0)), (0, 0));
    assert_eq!(moves(&s, cpu_id(1)), (0, 0));
    assert_eq!(
        s.dl_overloaded_cpus(),
        0,
        "restricted tasks do not overload"
    );
    assert_eq!(missed(&s, 1) + missed(&s, 2), 0, "0.8 CPUs of work on one");
}

/// CPU 0 runs a FIFO hog, a fair spinner and two free 4/10 deadline
/// tasks (the fair ones pinned): the deadline tasks spread, and the fair
/// spinner is still served on CPU 0 by CPU 0's own fair server; CPU 1's
/// server, with no fair task, serves nothing.
#[test]
fn the_fair_server_is_not_moved() {
    let s = sched(2);
    fifo_hog_and_fair_spinner_on_cpu0(&s);
    spawn_on(&s, 1, dl(4, 10, 10), cpu_id(0));
    spawn_on(&s, 2, dl(4, 10, 10), cpu_id(0));
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

/// CPU 0's fair server's case: a FIFO hog (task 10) and a fair spinner
/// (task 11) pinned there, the hog switched in.
fn fifo_hog_and_fair_spinner_on_cpu0(s: &Scheduler<Plat>) {
    pin_on(s, 10, TaskParams::fifo(50), cpu_id(0));
    pin_on(s, 11, TaskParams::default(), cpu_id(0));
    switch(s, cpu_id(0), PrevAction::Stays);
}

/// Runs every CPU until `cpu`'s fair server serves (within 2 s).
fn run_until_served(s: &Scheduler<Plat>, cpu: CpuId) {
    let mut ms = 0;
    while !s.cpu_rq(cpu).fair_served() {
        run_ms(s, 1);
        ms += 1;
        assert!(ms < 2_000, "CPU {cpu:?}'s server never served");
    }
}

/// Linux 7.2 queues the serving fair server in the deadline runqueue's
/// tree like a task (`inc_dl_tasks` → `inc_dl_deadline`), so cpudl holds
/// its deadline and cpupri marks its CPU above RT: a CPU whose server
/// serves is not free for the deadline push, and a task whose deadline is
/// later than the server's is not pushed there. Here CPU 0's server serves
/// a fair spinner under a FIFO hog; CPU 1 runs a FIFO hog and gets two
/// deadline tasks, the second (deadline 4 s away, later than the server's)
/// queued behind the first (90 ms of every 100). Before, CPU 0 counted as free and took it.
#[test]
fn the_serving_fair_servers_deadline_is_seen_by_the_push() {
    let s = sched(2);
    pin_on(&s, 10, TaskParams::fifo(50), cpu_id(0));
    pin_on(&s, 11, TaskParams::default(), cpu_id(0));
    pin_on(&s, 12, TaskParams::fifo(50), cpu_id(1));
    switch(&s, cpu_id(0), PrevAction::Stays);
    switch(&s, cpu_id(1), PrevAction::Stays);
    run_until_served(&s, cpu_id(0));
    let d = s.cpu_rq(cpu_id(0)).fair_server.deadline;
    let sum = s.summary(cpu_id(0));
    assert_eq!(sum.dl_earliest.load(Ordering::Relaxed), d, "cpudl");
    assert_eq!(sum.rt_rank.load(Ordering::Relaxed), 100, "cpupri");
    spawn_on(&s, 1, dl(90, 100, 100), cpu_id(1));
    switch(&s, cpu_id(1), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(1)), Some(1));
    spawn_on(&s, 2, dl(10, 4_000, 4_000), cpu_id(1));
    assert!(s.task(TaskId(2), cpu_id(0)).unwrap().dl.deadline > d);
    assert_eq!(s.task_cpu(TaskId(2)), Some(cpu_id(1)), "not pushed");
    assert_eq!(moves(&s, cpu_id(1)), (0, 0));
    // Once the server stops serving (throttled after its 50 ms), CPU 0 is
    // free again and pulls the waiting task (task 1 runs 90 ms on CPU 1).
    run_ms(&s, 60);
    assert!(!s.cpu_rq(cpu_id(0)).fair_served());
    assert_eq!(s.task_cpu(TaskId(2)), Some(cpu_id(0)));
    check(&s);
}

/// Spawns deadline task `id` on CPU `cpu`, runs it there and puts it to
/// sleep (its previous CPU is `cpu`).
fn asleep_on(s: &Scheduler<Plat>, id: u32, p: TaskParams, cpu: CpuId) {
    spawn_on(s, id, p, cpu);
    switch(s, cpu, PrevAction::Stays);
    assert_eq!(curr(s, cpu), Some(id));
    switch(s, cpu, PrevAction::Sleeps);
}

/// A deadline task waiting behind the serving fair server (whose deadline
/// is earlier) is pushable, as in Linux (its pushable tree holds every
/// queued, not running deadline task, and `dl_rq->overloaded` is set by
/// the first): made SCHED_DEADLINE on CPU 0, where the server serves a
/// fair spinner under a FIFO hog, a task whose deadline is 4 s away goes
/// to the idle CPU 1 at once. Before, it waited on CPU 0 until the server's
/// budget ran out.
#[test]
fn a_deadline_task_behind_the_serving_fair_server_is_pushed() {
    let s = sched(2);
    fifo_hog_and_fair_spinner_on_cpu0(&s);
    run_until_served(&s, cpu_id(0));
    assert_eq!(curr(&s, cpu_id(1)), None);
    spawn_on(&s, 1, dl(10, 4_000, 4_000), cpu_id(0));
    assert!(
        s.task(TaskId(1), cpu_id(0)).unwrap().dl.deadline
            > s.cpu_rq(cpu_id(0)).fair_server.deadline
    );
    assert_eq!(
        s.task_cpu(TaskId(1)),
        Some(cpu_id(1)),
        "pushed to the idle CPU"
    );
    assert_eq!(
        curr(&s, cpu_id(0)),
        Some(11),
        "the served fair task runs on"
    );
    check(&s);
}

/// Linux's `dl_task_timer` ends with a push (`__push_dl_task`): a task
/// the replenishment timer makes ready behind an earlier deadline goes to
/// a free CPU at once. Two constrained tasks (2 ms by 5 ms every 10 ms)
/// that slept on CPU 0 wake there after their deadlines (CPU 0 idle, so
/// they stay) and wait for their next periods (10 and 10.3 ms); at the
/// second timer the later one is queued behind the first and is pushed to
/// the idle CPU 1. Before, nothing moved it until CPU 0 switched.
#[test]
fn the_replenishment_timer_pushes_a_task_queued_behind_an_earlier_deadline() {
    let s = sched(2);
    let t0 = s.platform.now.load(Ordering::Relaxed);
    let at = |ns: u64| s.platform.now.store(t0 + ns, Ordering::Relaxed);
    asleep_on(&s, 1, dl(2, 5, 10), cpu_id(0));
    at(300_000);
    asleep_on(&s, 2, dl(2, 5, 10), cpu_id(0));
    at(7 * MS);
    for id in [1, 2] {
        let w = s
            .wake(TaskId(id), sched::WakeFlags::empty(), cpu_id(0))
            .unwrap();
        assert_eq!(w.cpu(), cpu_id(0));
        assert!(s.task(TaskId(id), cpu_id(0)).unwrap().dl.throttled);
    }
    at(10 * MS);
    s.hrtick(cpu_id(0));
    switch(&s, cpu_id(0), PrevAction::Stays);
    assert_eq!(curr(&s, cpu_id(0)), Some(1), "replenished at 10 ms");
    at(10 * MS + 300_000);
    s.hrtick(cpu_id(0));
    assert!(!s.task(TaskId(2), cpu_id(0)).unwrap().dl.throttled);
    assert_eq!(
        s.task_cpu(TaskId(2)),
        Some(cpu_id(1)),
        "pushed at the timer"
    );
    assert_eq!(moves(&s, cpu_id(0)), (1, 0));
    check(&s);
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
    spawn_on(&s, 1, dl(2, 10, 100), cpu_id(0));
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
    check(&s);
}

fn pinned(p: TaskParams, cpu: usize) -> SchedTask {
    let mut t = SchedTask::new(p);
    t.cpus_allowed = CpuMask::from_cpus(&[cpu]);
    t
}

const RESTRICTED: LifecycleError = LifecycleError::Params(ParamsError::DlAffinityRestricted);

/// Linux's `__sched_setscheduler` rule (-EPERM): a deadline task must be
/// allowed on every CPU of its root domain, so spawning one restricted to
/// CPU 0 of two is refused, admitting no bandwidth (afterwards two 9/10
/// tasks, 1.8 CPUs, the most that two admit, still fit). Two admitted
/// 6/10 tasks pinned to one CPU needed 1.2 of it.
#[test]
fn a_restricted_deadline_task_is_refused() {
    let s = sched(2);
    assert_eq!(
        s.spawn(TaskId(1), pinned(dl(6, 10, 10), 0), cpu_id(0)),
        Err(RESTRICTED)
    );
    assert_eq!(
        s.task(TaskId(1), cpu_id(0)),
        Err(LifecycleError::NoSuchTask)
    );
    assert_eq!(s.task_cpu(TaskId(1)), None);
    assert_eq!(s.cfg.dl_bw.total_bw(), 0);
    // Both CPUs named explicitly, or all: allowed.
    let mut t = SchedTask::new(dl(9, 10, 10));
    t.cpus_allowed = CpuMask::from_cpus(&[0, 1]);
    s.spawn(TaskId(1), t, cpu_id(0)).unwrap();
    s.spawn(TaskId(2), SchedTask::new(dl(9, 10, 10)), cpu_id(0))
        .unwrap();
    // A fair task may be pinned.
    s.spawn(TaskId(3), pinned(TaskParams::default(), 0), cpu_id(0))
        .unwrap();
}

/// `sched_setattr` to SCHED_DEADLINE of a task restricted to one CPU of
/// two is refused (-EPERM), whether it is queued or asleep, and changes
/// nothing: its policy, mask and CPU stay, no bandwidth is admitted. Once
/// allowed every CPU, it may.
#[test]
fn setattr_deadline_of_a_restricted_task_is_refused() {
    let s = sched(2);
    pin_on(&s, 1, TaskParams::default(), cpu_id(1));
    asleep_on(&s, 2, TaskParams::default(), cpu_id(0));
    s.set_affinity(TaskId(2), CpuMask::of(cpu_id(0)), cpu_id(0))
        .unwrap();
    for (id, cpu) in [(1, 1), (2, 0)] {
        let before = s.task(TaskId(id), cpu_id(0)).unwrap();
        assert_eq!(
            s.set_params(TaskId(id), dl(2, 10, 10), cpu_id(0)),
            Err(RESTRICTED),
            "task {id}"
        );
        let t = s.task(TaskId(id), cpu_id(0)).unwrap();
        assert_eq!(t.params, before.params);
        assert_eq!(t.params.policy, Policy::Normal);
        assert_eq!(t.cpus_allowed, CpuMask::of(cpu_id(cpu)));
        assert_eq!(s.task_cpu(TaskId(id)), Some(cpu_id(cpu)));
        assert_eq!(s.cfg.dl_bw.total_bw(), 0);
    }
    for id in [1, 2] {
        s.set_affinity(TaskId(id), CpuMask::all(), cpu_id(0))
            .unwrap();
        s.set_params(TaskId(id), dl(2, 10, 10), cpu_id(0)).unwrap();
        assert_eq!(
            s.task(TaskId(id), cpu_id(0)).unwrap().params.policy,
            Policy::Deadline
        );
    }
    assert_ne!(s.cfg.dl_bw.total_bw(), 0);
    check(&s);
}

/// `sched_setaffinity` of a deadline task (running, queued or asleep) to
/// less than every CPU is refused (Linux's `dl_task_check_affinity`,
/// -EBUSY) and changes nothing, through the lifecycle call and the
/// runqueue-level one; a mask of every CPU, named one by one, is fine, and
/// so is narrowing once the task is fair again.
#[test]
fn narrowing_a_deadline_tasks_affinity_is_refused() {
    let s = sched(2);
    asleep_on(&s, 3, dl(1, 10, 100), cpu_id(1));
    spawn_on(&s, 1, dl(2, 10, 10), cpu_id(0));
    switch(&s, cpu_id(0), PrevAction::Stays);
    spawn_on(&s, 2, dl(2, 20, 20), cpu_id(0));
    assert_eq!(curr(&s, cpu_id(0)), Some(1));
    // 2 went on to the idle CPU 1 (queued there, not yet switched to).
    assert_eq!(s.task_cpu(TaskId(2)), Some(cpu_id(1)));
    assert_eq!(curr(&s, cpu_id(1)), None);
    for id in [1, 2, 3] {
        let cpu = s.task_cpu(TaskId(id)).unwrap();
        for mask in [CpuMask::of(cpu_id(0)), CpuMask::of(cpu_id(1))] {
            assert_eq!(
                s.set_affinity(TaskId(id), mask, cpu_id(0)),
                Err(LifecycleError::DlAffinityBusy),
                "task {id}"
            );
            if id != 3 {
                assert!(!s.set_cpus_allowed(cpu, TaskId(id), mask, cpu_id(0)));
            }
            assert_eq!(
                s.task(TaskId(id), cpu_id(0)).unwrap().cpus_allowed,
                CpuMask::all()
            );
            assert_eq!(s.task_cpu(TaskId(id)), Some(cpu));
        }
        s.set_affinity(TaskId(id), CpuMask::from_cpus(&[0, 1]), cpu_id(0))
            .unwrap();
        s.set_affinity(TaskId(id), CpuMask::all(), cpu_id(0))
            .unwrap();
    }
    assert_eq!(curr(&s, cpu_id(0)), Some(1));
    assert_eq!(s.cpu_rq(cpu_id(0)).need_resched(), Resched::None);
    s.set_params(TaskId(2), TaskParams::default(), cpu_id(0))
        .unwrap();
    s.set_affinity(TaskId(2), CpuMask::of(cpu_id(0)), cpu_id(0))
        .unwrap();
    assert_eq!(
        s.task(TaskId(2), cpu_id(0)).unwrap().cpus_allowed,
        CpuMask::of(cpu_id(0))
    );
    check(&s);
}

/// The root domain is the active CPUs: with CPU 1 inactive, a deadline
/// task may be narrowed to CPU 0 (Linux's `rd->span` shrinks with
/// hotplug), and widened again.
#[test]
fn the_affinity_rule_follows_the_active_cpus() {
    let s = sched(2);
    spawn_on(&s, 1, dl(2, 10, 10), cpu_id(0));
    s.sched_cpu_deactivate(cpu_id(1), cpu_id(0)).unwrap();
    s.set_affinity(TaskId(1), CpuMask::of(cpu_id(0)), cpu_id(0))
        .unwrap();
    s.sched_cpu_activate(cpu_id(1)).unwrap();
    assert_eq!(
        s.set_affinity(TaskId(1), CpuMask::of(cpu_id(1)), cpu_id(0)),
        Err(LifecycleError::DlAffinityBusy)
    );
    s.set_affinity(TaskId(1), CpuMask::all(), cpu_id(0))
        .unwrap();
}
