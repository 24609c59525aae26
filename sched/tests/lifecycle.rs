//! The task lifecycle of `smp::Scheduler` (spawn, schedule with a
//! `PrevAction`, wake, set_params, set_affinity, remove): the scheduler keeps
//! every task's state, its directory and the platform's `set_task_cpu` record
//! agree with the runqueue that holds the task after every operation, in
//! scripted cases, in a seeded random walk over every operation, and with
//! CPUs and wakers racing on real threads.

use crate::common::cpu_id;
use crate::common::rng::Rng;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use sched::smp::{LifecycleError, Platform, Scheduler, Woke};
use sched::{
    CpuMask, PrevAction, SchedConfig, SchedTask, TaskId, TaskParams, TaskState, WakeFlags,
};

const IDS: usize = 48;
use crate::common::MS;

/// A platform that records `set_task_cpu` per task.
struct Rec {
    now: AtomicU64,
    cpu_of: Vec<AtomicU32>,
    moves: AtomicU64,
}

impl Rec {
    fn new() -> Rec {
        Rec {
            now: AtomicU64::new(1),
            cpu_of: (0..IDS).map(|_| AtomicU32::new(u32::MAX)).collect(),
            moves: AtomicU64::new(0),
        }
    }
}

impl Platform for Rec {
    fn irq_save(&self) -> bool {
        false
    }
    fn irq_restore(&self, _: bool) {}
    fn now_ns(&self) -> u64 {
        self.now.fetch_add(1000, Ordering::Relaxed)
    }
    fn send_resched_ipi(&self, _: sched::CpuId) {}
    fn set_task_cpu(&self, id: TaskId, cpu: sched::CpuId) {
        self.cpu_of[id.0 as usize].store(cpu.as_u32(), Ordering::Relaxed);
        self.moves.fetch_add(1, Ordering::Relaxed);
    }
}

fn sched(cpus: usize) -> Scheduler<Rec> {
    Scheduler::new(
        Rec::new(),
        Arc::new(SchedConfig::new(cpus as u32, 250)),
        cpus,
        IDS,
    )
}

fn task(nice: i32) -> SchedTask {
    SchedTask::new(TaskParams {
        nice,
        ..Default::default()
    })
}

fn switch(s: &Scheduler<Rec>, cpu: sched::CpuId, a: PrevAction) -> sched::Switch {
    let sw = {
        let mut rq = s.cpu_rq(cpu);
        s.schedule(&mut rq, a)
    };
    s.finish_switch(cpu, &sw);
    sw
}

/// Lands every queued wakeup, then checks that each live task is held by
/// exactly one runqueue, which the directory and the platform both name,
/// and that every runqueue's own invariants hold.
fn check(s: &Scheduler<Rec>, live: &[bool]) {
    for c in 0..s.nr_cpus() {
        let mut rq = s.cpu_rq(cpu_id(c));
        s.sched_ttwu_pending(&mut rq);
    }
    for c in 0..s.nr_cpus() {
        s.cpu_rq(cpu_id(c))
            .check()
            .unwrap_or_else(|e| panic!("cpu {c}: {e}"));
    }
    // Every guard above republished its summary: the overload count agrees.
    let overloaded = (0..s.nr_cpus())
        .filter(|&c| s.summary(cpu_id(c)).nr_running.load(Ordering::Relaxed) >= 2)
        .count();
    assert_eq!(s.overloaded_cpus() as usize, overloaded, "overloaded CPUs");
    for (i, &alive) in live.iter().enumerate() {
        let id = TaskId(i as u32);
        let holders: Vec<usize> = (0..s.nr_cpus())
            .filter(|&c| s.cpu_rq(cpu_id(c)).task(id).is_some())
            .collect();
        if alive {
            // Held by one runqueue, or asleep in its cell (held by none).
            let cpu = match holders[..] {
                [c] => c,
                [] => {
                    let t = s
                        .task(id, cpu_id(0))
                        .unwrap_or_else(|e| panic!("task {i}: {e:?}"));
                    assert_eq!(t.state, TaskState::Blocked, "task {i} held nowhere");
                    t.cpu.index()
                }
                _ => panic!("task {i} held by {holders:?}"),
            };
            assert_eq!(s.task_cpu(id), Some(cpu_id(cpu)), "task {i}: directory");
            assert_eq!(
                s.platform.cpu_of[i].load(Ordering::Relaxed) as usize,
                cpu,
                "task {i}: set_task_cpu"
            );
        } else {
            assert!(holders.is_empty(), "dead task {i} held by {holders:?}");
            assert_eq!(s.task_cpu(id), None);
        }
    }
}

fn state(s: &Scheduler<Rec>, id: u32) -> TaskState {
    s.task(TaskId(id), cpu_id(0)).unwrap().state
}

#[test]
fn spawn_block_wake_exit_on_one_cpu() {
    let s = sched(1);
    let mut live = [false; IDS];
    for id in 0..3u32 {
        let (cpu, _) = s.spawn(TaskId(id), task(0), cpu_id(0)).unwrap();
        assert_eq!(cpu, cpu_id(0));
        live[id as usize] = true;
    }
    assert_eq!(
        s.spawn(TaskId(1), task(0), cpu_id(0)),
        Err(LifecycleError::AlreadySpawned)
    );
    assert_eq!(
        s.spawn(TaskId(IDS as u32), task(0), cpu_id(0)),
        Err(LifecycleError::IdOutOfRange)
    );
    let sw = switch(&s, cpu_id(0), PrevAction::Stays);
    let a = sw.next.unwrap();
    // It blocks: its state stays with the scheduler (no hand-off).
    let sw = switch(&s, cpu_id(0), PrevAction::Sleeps);
    assert_eq!(sw.prev, Some(a));
    assert!(sw.prev_blocked.is_none() && sw.prev_exited.is_none());
    assert!(matches!(
        state(&s, a.0),
        TaskState::Blocked | TaskState::Delayed
    ));
    check(&s, &live);
    // One wake, whatever the state; a second one finds it runnable.
    let w = s.wake(a, WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(w.cpu(), cpu_id(0));
    assert_eq!(state(&s, a.0), TaskState::Queued);
    assert!(matches!(
        s.wake(a, WakeFlags::empty(), cpu_id(0)),
        Ok(Woke::InPlace { cpu, .. }) if cpu == cpu_id(0)
    ));
    check(&s, &live);
    // The running task exits: its final state comes back once, its id is free.
    let curr = s.cpu_rq(cpu_id(0)).curr().unwrap();
    let sw = switch(&s, cpu_id(0), PrevAction::Exits);
    assert_eq!(sw.prev, Some(curr));
    assert!(sw.prev_exited.is_some_and(|t| t.nr_switches >= 1));
    live[curr.0 as usize] = false;
    // Its exit state stays readable (join) until the id is spawned again.
    let kept = s.exited(curr).expect("exit state kept");
    assert_eq!(kept.nr_switches, sw.prev_exited.unwrap().nr_switches);
    let other = (0..3).map(TaskId).find(|&i| i != curr).unwrap();
    assert!(s.exited(other).is_none(), "a live task has no exit state");
    assert_eq!(
        s.wake(curr, WakeFlags::empty(), cpu_id(0)),
        Err(LifecycleError::NoSuchTask)
    );
    assert_eq!(
        s.set_params(curr, TaskParams::default(), cpu_id(0)),
        Err(LifecycleError::NoSuchTask)
    );
    check(&s, &live);
    s.spawn(curr, task(0), cpu_id(0)).unwrap();
    live[curr.0 as usize] = true;
    assert!(
        s.exited(curr).is_none(),
        "a new spawn forgets the old exit state"
    );
    check(&s, &live);
}

/// Task 0, allowed only on CPU 1, runs there and goes to sleep; the switch
/// away from it is left unfinished (`finish_switch` not yet called). With
/// `beside`, task 1 (also only on CPU 1) is queued there and is what CPU 1
/// switches to; else CPU 1 goes idle.
fn sleeping_while_switching(beside: bool) -> (Scheduler<Rec>, sched::Switch) {
    let s = sched(2);
    // It must leave the runqueue when it sleeps (not stay, delayed).
    s.cfg.features.set(sched::Feature::DelayDequeue, false);
    let only1 = CpuMask::from_cpus(&[1]);
    for id in 0..1 + u32::from(beside) {
        let mut t = task(0);
        t.cpus_allowed = only1;
        s.spawn(TaskId(id), t, cpu_id(1)).unwrap();
    }
    // Task 0 runs on CPU 1 (picked first, or made current by a pick).
    while s.cpu_rq(cpu_id(1)).curr() != Some(TaskId(0)) {
        switch(&s, cpu_id(1), PrevAction::Yields);
    }
    let sw = {
        let mut rq = s.cpu_rq(cpu_id(1));
        s.schedule(&mut rq, PrevAction::Sleeps)
    };
    assert_eq!(sw.prev, Some(TaskId(0)));
    assert_eq!(sw.next, beside.then_some(TaskId(1)));
    (s, sw)
}

/// Wakes task 0 from CPU 0 while CPU 1 is still switching away from it;
/// CPU 1 finishes that switch `delay_ms` later, on another thread. Returns
/// the wakeup and whether it returned before the switch was finished.
fn wake_during_switch(s: &Scheduler<Rec>, sw: &sched::Switch, delay_ms: u64) -> (Woke, bool) {
    let finished = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(delay_ms));
            finished.store(true, Ordering::SeqCst);
            s.finish_switch(cpu_id(1), sw);
        });
        let w = s.wake(TaskId(0), WakeFlags::empty(), cpu_id(0)).unwrap();
        (w, !finished.load(Ordering::SeqCst))
    })
}

#[test]
fn a_wakee_still_switching_out_of_an_emptied_cpu_is_queued_there_at_once() {
    // Linux's `p->on_cpu` case of `try_to_wake_up`: its CPU holds nothing
    // now, so `ttwu_queue_cond` holds and the wakee goes on that CPU's wake
    // list without waiting for the switch to end.
    let (s, sw) = sleeping_while_switching(false);
    let (w, early) = wake_during_switch(&s, &sw, 500);
    assert!(early, "the waker waited for the switch to end: {w:?}");
    assert_eq!(
        w,
        Woke::Placed {
            from: cpu_id(1),
            to: cpu_id(1),
            outcome: sched::smp::WakeOutcome::Queued {
                cpu: cpu_id(1),
                ipi: true
            },
        }
    );
    // CPU 1 takes it from its list (after its switch) and runs it.
    let mut rq = s.cpu_rq(cpu_id(1));
    assert_eq!(s.sched_ttwu_pending(&mut rq), 1);
    assert_eq!(rq.task(TaskId(0)).map(|t| t.state), Some(TaskState::Queued));
    assert_eq!(rq.pick_next_task(), Some(TaskId(0)));
    drop(rq);
    check(&s, &[true]);
}

#[test]
fn a_wakee_still_switching_out_of_a_busy_cpu_is_placed_after_the_switch() {
    // Its CPU runs another task now: no wake list; the waker waits until
    // the wakee is off that CPU, then places it (here on CPU 1, its only
    // allowed CPU) and enqueues it there itself (same LLC, CPU 1 busy).
    let (s, sw) = sleeping_while_switching(true);
    let (w, early) = wake_during_switch(&s, &sw, 50);
    assert!(!early, "woken before its switch ended: {w:?}");
    assert!(
        matches!(
            w,
            Woke::Placed {
                from,
                to,
                outcome: sched::smp::WakeOutcome::Remote(c, _),
            } if from == cpu_id(1) && to == cpu_id(1) && c == cpu_id(1)
        ),
        "{w:?}"
    );
    assert!(!s.has_pending_wakeups(cpu_id(1)));
    check(&s, &[true, true]);
}

#[test]
fn set_params_reaches_running_queued_and_sleeping_tasks() {
    let s = sched(1);
    for id in 0..3 {
        s.spawn(TaskId(id), task(0), cpu_id(0)).unwrap();
    }
    let running = switch(&s, cpu_id(0), PrevAction::Stays).next.unwrap();
    let sleeper = switch(&s, cpu_id(0), PrevAction::Sleeps).next.unwrap();
    switch(&s, cpu_id(0), PrevAction::Sleeps); // `sleeper` was running: it sleeps now
    let _ = running;
    let queued = (0..3)
        .map(TaskId)
        .find(|&i| state(&s, i.0) == TaskState::Queued)
        .unwrap();
    for (i, id) in [sleeper, queued].into_iter().enumerate() {
        let p = TaskParams {
            nice: 5 + i as i32,
            ..Default::default()
        };
        s.set_params(id, p, cpu_id(0)).unwrap();
        assert_eq!(s.task(id, cpu_id(0)).unwrap().params.nice, 5 + i as i32);
    }
    let bad = TaskParams {
        nice: 40,
        ..Default::default()
    };
    assert!(matches!(
        s.set_params(queued, bad, cpu_id(0)),
        Err(LifecycleError::Params(_))
    ));
    assert_eq!(
        s.task(queued, cpu_id(0)).unwrap().params.nice,
        6,
        "a refused change changes nothing"
    );
    // The sleeper wakes with its new weight.
    s.wake(sleeper, WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(s.task(sleeper, cpu_id(0)).unwrap().params.nice, 5);
    assert_eq!(state(&s, sleeper.0), TaskState::Queued);
}

#[test]
fn affinity_moves_queued_running_and_sleeping_tasks() {
    let s = sched(2);
    let mut live = [false; IDS];
    let only0 = CpuMask::from_u64(1);
    // Four tasks pinned to CPU 0.
    for id in 0..4 {
        let mut t = task(0);
        t.cpus_allowed = only0;
        assert_eq!(s.spawn(TaskId(id), t, cpu_id(0)).unwrap().0, cpu_id(0));
        live[id as usize] = true;
    }
    let running = switch(&s, cpu_id(0), PrevAction::Stays).next.unwrap();
    let sleeper = switch(&s, cpu_id(0), PrevAction::Sleeps).next.unwrap();
    assert_ne!(running, sleeper);
    switch(&s, cpu_id(0), PrevAction::Sleeps);
    check(&s, &live);
    let queued = (0..4)
        .map(TaskId)
        .find(|&i| state(&s, i.0) == TaskState::Queued && s.cpu_rq(cpu_id(0)).curr() != Some(i))
        .unwrap();
    let curr = s.cpu_rq(cpu_id(0)).curr().unwrap();
    let only1 = CpuMask::from_u64(2);
    assert_eq!(
        s.set_affinity(queued, CpuMask::new(), cpu_id(0)),
        Err(LifecycleError::NoAllowedCpu)
    );
    // A queued task moves at once.
    s.set_affinity(queued, only1, cpu_id(0)).unwrap();
    assert_eq!(s.task_cpu(queued), Some(cpu_id(1)));
    check(&s, &live);
    // A sleeper moves when it wakes.
    s.set_affinity(sleeper, only1, cpu_id(0)).unwrap();
    let w = s.wake(sleeper, WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(w.cpu(), cpu_id(1));
    check(&s, &live);
    assert_eq!(s.task_cpu(sleeper), Some(cpu_id(1)));
    // The running task moves at its switch.
    s.set_affinity(curr, only1, cpu_id(0)).unwrap();
    assert_eq!(s.cpu_rq(cpu_id(0)).need_resched(), sched::Resched::Now);
    let sw = switch(&s, cpu_id(0), PrevAction::Stays);
    assert!(sw.prev_misplaced);
    assert_ne!(sw.next, Some(curr));
    assert_eq!(s.task_cpu(curr), Some(cpu_id(1)));
    check(&s, &live);
    for id in [queued, sleeper, curr] {
        assert!(s.task(id, cpu_id(0)).unwrap().cpus_allowed.test(1));
    }
}

#[test]
fn remove_takes_a_task_that_is_not_running() {
    let s = sched(1);
    let mut live = [false; IDS];
    for id in 0..3 {
        s.spawn(TaskId(id), task(0), cpu_id(0)).unwrap();
        live[id as usize] = true;
    }
    let curr = switch(&s, cpu_id(0), PrevAction::Stays).next.unwrap();
    assert!(matches!(
        s.remove(curr, cpu_id(0)),
        Err(LifecycleError::Running)
    ));
    let other = (0..3).map(TaskId).find(|&i| i != curr).unwrap();
    let t = s.remove(other, cpu_id(0)).unwrap();
    assert_eq!(t.state, TaskState::Absent);
    live[other.0 as usize] = false;
    check(&s, &live);
    assert!(matches!(
        s.remove(other, cpu_id(0)),
        Err(LifecycleError::NoSuchTask)
    ));
}

/// Every lifecycle operation in random order on 4 CPUs, checking the
/// directory, the platform's record and every runqueue after each step.
#[test]
fn random_walk_keeps_one_home_per_task() {
    // Miri interprets ~1000x slower: 2 seeds of 600 steps there.
    let (seeds, steps): (u64, _) = if cfg!(miri) { (2, 600) } else { (6, 4000) };
    for seed in 1..=seeds {
        let s = sched(4);
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut live = [false; IDS];
        for step in 0..steps {
            let id = TaskId(rng.below(IDS as u64) as u32);
            let cpu = rng.below(4) as usize;
            match rng.below(9) {
                0 => {
                    let r = s.spawn(id, task(rng.below(10) as i32 - 5), cpu_id(cpu));
                    assert_eq!(r.is_ok(), !live[id.0 as usize], "seed {seed} step {step}");
                    live[id.0 as usize] = true;
                }
                1..=3 => {
                    let action = match rng.below(4) {
                        0 => PrevAction::Stays,
                        1 => PrevAction::Yields,
                        2 => PrevAction::Sleeps,
                        _ if rng.below(4) == 0 => PrevAction::Exits,
                        _ => PrevAction::Sleeps,
                    };
                    let sw = switch(&s, cpu_id(cpu), action);
                    if let (Some(p), Some(_)) = (sw.prev, sw.prev_exited) {
                        live[p.0 as usize] = false;
                    }
                }
                4 | 5 => {
                    let wf = if rng.below(2) == 0 {
                        WakeFlags::SYNC
                    } else {
                        WakeFlags::empty()
                    };
                    let r = s.wake(id, wf, cpu_id(cpu));
                    assert_eq!(
                        r.is_ok(),
                        live[id.0 as usize],
                        "seed {seed} step {step}: {r:?}"
                    );
                }
                6 => {
                    let p = TaskParams {
                        nice: rng.below(40) as i32 - 20,
                        ..Default::default()
                    };
                    assert_eq!(
                        s.set_params(id, p, cpu_id(cpu)).is_ok(),
                        live[id.0 as usize]
                    );
                }
                7 => {
                    let mut m = CpuMask::new();
                    for c in 0..4 {
                        if rng.below(2) == 0 {
                            m.set(c);
                        }
                    }
                    let r = s.set_affinity(id, m, cpu_id(cpu));
                    if m.is_empty() {
                        assert_eq!(r, Err(LifecycleError::NoAllowedCpu));
                    } else {
                        assert_eq!(r.is_ok(), live[id.0 as usize]);
                    }
                }
                _ => {
                    if rng.below(2) == 0 {
                        s.load_balance(cpu_id(cpu), false);
                    } else if s.remove(id, cpu_id(cpu)).is_ok() {
                        live[id.0 as usize] = false;
                    }
                }
            }
            if step % 7 == 0 {
                check(&s, &live);
            }
        }
        check(&s, &live);
        // Nothing lost: waking every live task makes every one runnable.
        for i in (0..IDS).filter(|&i| live[i]) {
            s.wake(TaskId(i as u32), WakeFlags::empty(), cpu_id(0))
                .unwrap();
        }
        check(&s, &live);
        for i in (0..IDS).filter(|&i| live[i]) {
            assert_eq!(
                state(&s, i as u32),
                TaskState::Queued,
                "seed {seed}: task {i}"
            );
        }
    }
}

/// Four CPU threads switching (stay, yield, sleep) while two waker threads
/// wake random tasks: afterwards every task is held by exactly one
/// runqueue, the one the directory and the platform name, and one more
/// wake of each makes all runnable (no wakeup lost its task). The race runs
/// for at least 300 ms and until every thread has done `MIN_ROUNDS` rounds,
/// so a busy host only makes it longer, never weaker.
#[test]
fn racing_cpus_and_wakers_lose_nothing() {
    let s = Arc::new(sched(4));
    let live = [true; 32];
    let mut all = [false; IDS];
    all[..32].copy_from_slice(&live);
    for id in 0..32 {
        s.spawn(TaskId(id), task(0), cpu_id(id as usize % 4))
            .unwrap();
    }
    // Miri interprets ~1000x slower (and interleaves the threads itself):
    // 40 rounds per thread there.
    const MIN_ROUNDS: u64 = if cfg!(miri) { 40 } else { 2000 };
    let stop = Arc::new(AtomicBool::new(false));
    let rounds: Arc<[AtomicU64; 6]> = Arc::new(core::array::from_fn(|_| AtomicU64::new(0)));
    let mut hs = Vec::new();
    for cpu in 0..4usize {
        let (s, stop, rounds) = (s.clone(), stop.clone(), rounds.clone());
        hs.push(std::thread::spawn(move || {
            let mut rng = Rng(0x1234_5678 + cpu as u64);
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let a = match rng.below(3) {
                    0 => PrevAction::Stays,
                    1 => PrevAction::Yields,
                    _ => PrevAction::Sleeps,
                };
                switch(&s, cpu_id(cpu), a);
                if n.is_multiple_of(16) {
                    s.load_balance(cpu_id(cpu), rng.below(2) == 0);
                }
                n += 1;
                rounds[cpu].store(n, Ordering::Relaxed);
            }
            n
        }));
    }
    for w in 0..2usize {
        let (s, stop, rounds) = (s.clone(), stop.clone(), rounds.clone());
        hs.push(std::thread::spawn(move || {
            let mut rng = Rng(0xabcd_ef01 + w as u64);
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let id = TaskId(rng.below(32) as u32);
                s.wake(id, WakeFlags::empty(), cpu_id(rng.below(4) as usize))
                    .unwrap();
                if rng.below(8) == 0 {
                    let mut m = CpuMask::from_u64(1 << rng.below(4) as usize);
                    m.set(rng.below(4) as usize);
                    s.set_affinity(id, m, cpu_id(w)).unwrap();
                }
                n += 1;
                rounds[4 + w].store(n, Ordering::Relaxed);
            }
            n
        }));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    while rounds
        .iter()
        .any(|r| r.load(Ordering::Relaxed) < MIN_ROUNDS)
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    let counts: Vec<u64> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(
        counts.iter().all(|&n| n >= MIN_ROUNDS),
        "every thread raced: {counts:?}"
    );
    check(&s, &all);
    for id in 0..32 {
        s.wake(TaskId(id), WakeFlags::empty(), cpu_id(0)).unwrap();
    }
    check(&s, &all);
    for id in 0..32 {
        assert_eq!(state(&s, id), TaskState::Queued, "task {id}");
    }
    assert!(s.platform.moves.load(Ordering::Relaxed) >= 32);
    let _ = MS;
}
