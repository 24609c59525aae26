//! CPU hotplug (`sched_cpu_deactivate` / `migrate_tasks` / `sched_cpu_dying`
//! / `sched_cpu_activate`): an offline CPU's queued tasks move, its sleepers
//! wake elsewhere, a task pinned only there has its affinity broken (and the
//! platform told), nothing is placed, balanced or woken onto it, and once
//! active again it is used again. Scripted cases, an enqueue that raced the
//! deactivation, a seeded random walk with CPUs going down and up among the
//! lifecycle operations, and racing threads.

use crate::common::rng::Rng;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sched::smp::{HotplugError, LifecycleError, Platform, Scheduler};
use sched::{
    CpuId, CpuMask, Feature, Policy, PrevAction, SchedConfig, SchedTask, TaskId, TaskParams,
    TaskState, WakeFlags,
};

const IDS: usize = 48;
use crate::common::MS;

/// Records `set_task_cpu` per task and every broken affinity.
struct Rec {
    now: AtomicU64,
    cpu_of: Vec<AtomicU32>,
    broken: Mutex<Vec<(u32, u32)>>,
}

impl Platform for Rec {
    fn irq_save(&self) -> bool {
        false
    }
    fn irq_restore(&self, _: bool) {}
    fn now_ns(&self) -> u64 {
        self.now.fetch_add(1000, Ordering::Relaxed)
    }
    fn send_resched_ipi(&self, _: CpuId) {}
    fn set_task_cpu(&self, id: TaskId, cpu: CpuId) {
        self.cpu_of[id.0 as usize].store(cpu.as_u32(), Ordering::Relaxed);
    }
    fn affinity_broken(&self, id: TaskId, cpu: CpuId) {
        self.broken.lock().unwrap().push((id.0, cpu.as_u32()));
    }
}

fn sched(cpus: usize) -> Scheduler<Rec> {
    Scheduler::new(
        Rec {
            now: AtomicU64::new(1),
            cpu_of: (0..IDS).map(|_| AtomicU32::new(u32::MAX)).collect(),
            broken: Mutex::new(Vec::new()),
        },
        Arc::new(SchedConfig::new(cpus as u32, 250)),
        cpus,
        IDS,
    )
}

fn cpu(c: usize) -> CpuId {
    CpuId::new(c).unwrap()
}

fn task() -> SchedTask {
    SchedTask::new(TaskParams::default())
}

fn pinned(c: usize) -> SchedTask {
    let mut t = task();
    t.cpus_allowed = CpuMask::from_cpus(&[c]);
    t
}

fn switch(s: &Scheduler<Rec>, cpu: CpuId, a: PrevAction) -> sched::Switch {
    let sw = {
        let mut rq = s.cpu_rq(cpu);
        s.schedule(&mut rq, a)
    };
    s.finish_switch(cpu, &sw);
    sw
}

/// Takes `c` down as a kernel does: deactivate, the CPU switches to idle
/// (its running task stays runnable), moves what it got, and the dying
/// step checks it is empty.
fn offline(s: &Scheduler<Rec>, c: usize) {
    s.sched_cpu_deactivate(cpu(c), cpu(0)).unwrap();
    let sw = switch(s, cpu(c), PrevAction::Stays);
    assert_eq!(sw.next, None, "cpu {c} runs nothing once inactive");
    s.migrate_tasks(cpu(c));
    s.sched_cpu_dying(cpu(c)).unwrap();
}

/// Lands every wake list of an active CPU, checks every runqueue, that each
/// live task is held by one runqueue (or asleep in its cell) named by the
/// directory and the platform, and that no inactive CPU holds or is sent
/// anything.
fn check(s: &Scheduler<Rec>, live: &[bool]) {
    for c in (0..s.nr_cpus()).filter(|&c| s.cpu_active(cpu(c))) {
        let mut rq = s.cpu_rq(cpu(c));
        s.sched_ttwu_pending(&mut rq);
    }
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).unwrap();
    for c in (0..s.nr_cpus()).filter(|&c| !s.cpu_active(cpu(c))) {
        let rq = s.cpu_rq(cpu(c));
        assert_eq!(rq.curr(), None, "inactive cpu {c} runs a task");
        let held: Vec<_> = rq.tasks().map(|(id, _)| id.0).collect();
        assert!(held.is_empty(), "inactive cpu {c} holds {held:?}");
        drop(rq);
        assert!(
            !s.has_pending_wakeups(cpu(c)),
            "wakeups queued for inactive cpu {c}"
        );
    }
    for (i, &alive) in live.iter().enumerate() {
        let id = TaskId(i as u32);
        if !alive {
            assert_eq!(s.task_cpu(id), None, "dead task {i}");
            continue;
        }
        let t = s
            .task(id, cpu(0))
            .unwrap_or_else(|e| panic!("task {i}: {e:?}"));
        let c = s.task_cpu(id).unwrap();
        if t.state == TaskState::Blocked {
            continue; // asleep: its last CPU may be inactive
        }
        assert!(
            s.cpu_active(c),
            "task {i} ({:?}) on inactive cpu {c}",
            t.state
        );
        assert_eq!(
            s.platform.cpu_of[i].load(Ordering::Relaxed) as usize,
            c.index(),
            "task {i}: set_task_cpu"
        );
    }
}

fn home(s: &Scheduler<Rec>, id: u32) -> usize {
    s.task_cpu(TaskId(id)).unwrap().index()
}

#[test]
fn queued_and_running_tasks_leave_a_deactivated_cpu() {
    let s = sched(4);
    let mut live = [false; IDS];
    // Eight tasks on CPU 2: allowed everywhere, spawned with fork balancing
    // off (each spawn lands on the spawner's CPU when all are allowed only
    // there, so pin first and widen after).
    for id in 0..8u32 {
        s.spawn(TaskId(id), pinned(2), cpu(0)).unwrap();
        s.set_affinity(TaskId(id), CpuMask::first_n(4), cpu(0))
            .unwrap();
        live[id as usize] = true;
    }
    assert!((0..8).all(|id| home(&s, id) == 2));
    let running = switch(&s, cpu(2), PrevAction::Stays).next.unwrap();
    s.sched_cpu_deactivate(cpu(2), cpu(0)).unwrap();
    // The queued ones moved at once; the running one waits for its switch,
    // asked to go now.
    {
        let rq = s.cpu_rq(cpu(2));
        assert_eq!(rq.curr(), Some(running));
        assert_eq!(rq.tasks().count(), 1, "only the running task is left");
        assert_eq!(rq.need_resched(), sched::Resched::Now);
    }
    assert_eq!(
        s.sched_cpu_dying(cpu(2)),
        Err(HotplugError::Busy),
        "still running a task"
    );
    let sw = switch(&s, cpu(2), PrevAction::Stays);
    assert_eq!((sw.prev, sw.next), (Some(running), None));
    assert!(sw.prev_misplaced);
    s.sched_cpu_dying(cpu(2)).unwrap();
    check(&s, &live);
    assert!(s.platform.broken.lock().unwrap().is_empty());
    // Spread over the three others, none lost.
    let per: Vec<usize> = (0..4)
        .map(|c| (0..8).filter(|&id| home(&s, id) == c).count())
        .collect();
    assert_eq!(per[2], 0);
    assert_eq!(per.iter().sum::<usize>(), 8);
    assert!(per.iter().all(|&n| n <= 3), "spread evenly: {per:?}");
}

#[test]
fn sleepers_of_an_offline_cpu_wake_elsewhere() {
    let s = sched(2);
    let mut live = [false; IDS];
    // Task 0 sleeps in its cell (its dequeue not delayed); task 1 sleeps
    // with its dequeue delayed (it ran past its share: negative lag), so
    // CPU 1 still holds it.
    s.spawn(TaskId(0), pinned(1), cpu(0)).unwrap();
    s.spawn(TaskId(1), pinned(1), cpu(0)).unwrap();
    s.spawn(TaskId(2), pinned(1), cpu(0)).unwrap();
    for id in 0..3 {
        s.set_affinity(TaskId(id), CpuMask::first_n(2), cpu(0))
            .unwrap();
        live[id as usize] = true;
    }
    // Run task 1 for 20 ms so that it has negative lag when it sleeps.
    loop {
        let sw = switch(&s, cpu(1), PrevAction::Stays);
        if sw.next == Some(TaskId(1)) {
            break;
        }
        switch(&s, cpu(1), PrevAction::Yields);
    }
    s.platform.now.fetch_add(20 * MS, Ordering::Relaxed);
    s.tick(cpu(1));
    switch(&s, cpu(1), PrevAction::Sleeps);
    assert_eq!(s.task(TaskId(1), cpu(0)).unwrap().state, TaskState::Delayed);
    while s.cpu_rq(cpu(1)).curr() != Some(TaskId(0)) {
        switch(&s, cpu(1), PrevAction::Yields);
    }
    s.cfg.features.set(Feature::DelayDequeue, false);
    switch(&s, cpu(1), PrevAction::Sleeps);
    s.cfg.features.set(Feature::DelayDequeue, true);
    assert!(s.is_parked(TaskId(0)));
    assert_eq!(home(&s, 0), 1, "task 0 last ran on CPU 1");

    offline(&s, 1);
    check(&s, &live);
    // The delayed sleeper left CPU 1 for its cell.
    assert!(s.is_parked(TaskId(1)));
    // Woken by CPU 1 itself (an interrupt before it stopped) and by CPU 0:
    // both land on CPU 0.
    let w = s.wake(TaskId(0), WakeFlags::empty(), cpu(1)).unwrap();
    assert_eq!(w.cpu(), cpu(0));
    let w = s.wake(TaskId(1), WakeFlags::SYNC, cpu(0)).unwrap();
    assert_eq!(w.cpu(), cpu(0));
    check(&s, &live);
    assert!(s.platform.broken.lock().unwrap().is_empty());
}

#[test]
fn a_task_pinned_to_the_offline_cpu_has_its_affinity_broken() {
    let s = sched(3);
    let live = [true, true, true];
    // 0 runs on CPU 2, 1 is queued there, 2 sleeps there: all pinned to it.
    for id in 0..3 {
        s.spawn(TaskId(id), pinned(2), cpu(0)).unwrap();
    }
    let first = switch(&s, cpu(2), PrevAction::Stays).next.unwrap();
    switch(&s, cpu(2), PrevAction::Sleeps);
    let sleeper = first;
    let running = s.cpu_rq(cpu(2)).curr().unwrap();
    let queued = (0..3)
        .map(TaskId)
        .find(|&i| i != sleeper && i != running)
        .unwrap();

    s.sched_cpu_deactivate(cpu(2), cpu(0)).unwrap();
    // The queued one moved now, its affinity widened.
    assert_ne!(home(&s, queued.0), 2);
    assert_eq!(
        s.task(queued, cpu(0)).unwrap().cpus_allowed,
        CpuMask::first_n(3)
    );
    let sw = switch(&s, cpu(2), PrevAction::Stays);
    assert!(sw.prev_misplaced && sw.next.is_none());
    s.sched_cpu_dying(cpu(2)).unwrap();
    assert_ne!(home(&s, running.0), 2);
    // The sleeper keeps its mask until it wakes.
    assert_eq!(
        s.task(sleeper, cpu(0)).unwrap().cpus_allowed,
        CpuMask::from_cpus(&[2])
    );
    let w = s.wake(sleeper, WakeFlags::empty(), cpu(0)).unwrap();
    assert_ne!(w.cpu(), cpu(2));
    check(&s, &live);
    let mut broken = s.platform.broken.lock().unwrap().clone();
    broken.sort();
    let mut want = vec![(queued.0, 2), (running.0, 2), (sleeper.0, 2)];
    want.sort();
    assert_eq!(broken, want, "one report per task, naming CPU 2");
    for id in 0..3 {
        assert_eq!(
            s.task(TaskId(id), cpu(0)).unwrap().cpus_allowed,
            CpuMask::first_n(3)
        );
    }
}

#[test]
fn nothing_is_placed_balanced_or_woken_onto_an_inactive_cpu() {
    let s = sched(4);
    let mut live = [false; IDS];
    offline(&s, 3);
    // Refused: masks with no active CPU.
    assert_eq!(
        s.spawn(TaskId(0), pinned(3), cpu(0)),
        Err(LifecycleError::NoAllowedCpu)
    );
    for id in 0..24u32 {
        let mut t = task();
        if id % 4 == 0 {
            t.params.policy = Policy::Fifo;
            t.params.rt_priority = 1 + (id % 50) as u8;
        }
        // Spawned from every CPU, the inactive one included (a thread
        // that ran there just before it went).
        let (c, _) = s.spawn(TaskId(id), t, cpu(id as usize % 4)).unwrap();
        assert_ne!(c, cpu(3));
        live[id as usize] = true;
    }
    assert_eq!(
        s.set_affinity(TaskId(1), CpuMask::from_cpus(&[3]), cpu(0)),
        Err(LifecycleError::NoAllowedCpu)
    );
    s.set_affinity(TaskId(1), CpuMask::from_cpus(&[2, 3]), cpu(0))
        .unwrap();
    for round in 0..40 {
        for c in 0..3 {
            let a = match (round + c) % 3 {
                0 => PrevAction::Sleeps,
                1 => PrevAction::Yields,
                _ => PrevAction::Stays,
            };
            switch(&s, cpu(c), a);
            s.platform.now.fetch_add(MS, Ordering::Relaxed);
            s.tick(cpu(c));
        }
        for id in 0..24u32 {
            // Wakers on every CPU, the inactive one too.
            let _ = s.wake(
                TaskId(id),
                WakeFlags::empty(),
                cpu((id as usize + round) % 4),
            );
        }
        for c in 0..4 {
            let p = s.load_balance(cpu(c), round % 2 == 0);
            if c == 3 {
                assert!(p.is_empty(), "the inactive CPU pulled");
            }
        }
        s.balance_rt(cpu(0), cpu(0));
        check(&s, &live);
    }
    assert!(s.platform.broken.lock().unwrap().is_empty());
}

#[test]
fn an_enqueue_that_raced_the_deactivation_is_moved_by_its_enqueuer() {
    // A waker chose CPU 1 before it left the active mask and enqueues
    // after the final sweep: its own check moves the task.
    for ttwu_queue in [true, false] {
        let s = sched(2);
        s.cfg.features.set(Feature::TtwuQueue, ttwu_queue);
        offline(&s, 1);
        let mut t = task();
        t.cpu = cpu(1);
        s.ttwu_queue(cpu(1), cpu(0), TaskId(5), t, WakeFlags::TTWU);
        assert!(s.cpu_rq(cpu(1)).tasks().next().is_none());
        assert!(!s.has_pending_wakeups(cpu(1)));
        assert!(s.cpu_rq(cpu(0)).task(TaskId(5)).is_some());
        assert_eq!(s.platform.cpu_of[5].load(Ordering::Relaxed), 0);
    }
}

#[test]
fn a_misplaced_task_is_not_parked_before_its_finish_switch() {
    // CPU 1 switches its running task out (going offline: misplaced, so
    // blocked in its slot but runnable) and, before its `finish_switch`,
    // another CPU sweeps it (a waker's check, or the deactivation's): the
    // sweep must leave it to `finish_switch`, not park it as a sleeper
    // (it would never run again: its thread is not asleep).
    let s = sched(2);
    let live = [true];
    s.spawn(TaskId(0), pinned(1), cpu(0)).unwrap();
    s.set_affinity(TaskId(0), CpuMask::first_n(2), cpu(0))
        .unwrap();
    assert_eq!(switch(&s, cpu(1), PrevAction::Stays).next, Some(TaskId(0)));
    s.sched_cpu_deactivate(cpu(1), cpu(0)).unwrap();
    let sw = {
        let mut rq = s.cpu_rq(cpu(1));
        s.schedule(&mut rq, PrevAction::Yields)
    };
    assert!(sw.prev_misplaced && sw.next.is_none());
    s.migrate_tasks(cpu(1));
    assert!(!s.is_parked(TaskId(0)), "a runnable task was parked");
    assert_eq!(
        s.sched_cpu_dying(cpu(1)),
        Err(HotplugError::Busy),
        "its move is still to come"
    );
    assert_eq!(s.finish_switch(cpu(1), &sw), Some(cpu(0)));
    assert_eq!(s.task(TaskId(0), cpu(0)).unwrap().state, TaskState::Queued);
    s.sched_cpu_dying(cpu(1)).unwrap();
    check(&s, &live);
}

#[test]
fn an_online_cpu_is_used_again() {
    let s = sched(2);
    let mut live = [false; IDS];
    offline(&s, 1);
    for id in 0..4u32 {
        assert_eq!(s.spawn(TaskId(id), task(), cpu(0)).unwrap().0, cpu(0));
        live[id as usize] = true;
    }
    assert_eq!(s.sched_cpu_activate(cpu(1)), Ok(()));
    assert!(s.cpu_active(cpu(1)) && s.active_mask() == CpuMask::first_n(2));
    // Balancing pulls to it (the tasks cache-cold by then), fork balancing
    // places on it.
    s.platform.now.fetch_add(10 * MS, Ordering::Relaxed);
    let p = s.load_balance(cpu(1), false);
    assert!(!p.is_empty(), "the CPU back online pulls");
    switch(&s, cpu(1), PrevAction::Stays);
    assert!(s.cpu_rq(cpu(1)).curr().is_some(), "and runs what it pulled");
    let (c, _) = s.spawn(TaskId(9), task(), cpu(0)).unwrap();
    live[9] = true;
    let on1 = (0..10)
        .filter(|&id| live[id] && home(&s, id as u32) == 1)
        .count();
    assert!(on1 >= 2, "CPU 1 holds {on1} tasks (spawn went to {c})");
    check(&s, &live);
    // A pinned task may be made again.
    s.spawn(TaskId(10), pinned(1), cpu(0)).unwrap();
    assert_eq!(home(&s, 10), 1);
}

#[test]
fn bad_hotplug_requests_change_nothing() {
    let s = sched(2);
    assert_eq!(
        s.sched_cpu_deactivate(cpu(2), cpu(0)),
        Err(HotplugError::NoSuchCpu)
    );
    assert_eq!(
        s.sched_cpu_activate(cpu(1)),
        Err(HotplugError::AlreadyActive)
    );
    assert_eq!(s.sched_cpu_dying(cpu(1)), Err(HotplugError::AlreadyActive));
    s.sched_cpu_deactivate(cpu(1), cpu(0)).unwrap();
    assert_eq!(
        s.sched_cpu_deactivate(cpu(1), cpu(0)),
        Err(HotplugError::AlreadyInactive)
    );
    assert_eq!(
        s.sched_cpu_deactivate(cpu(0), cpu(0)),
        Err(HotplugError::LastCpu)
    );
    assert!(s.cpu_active(cpu(0)) && !s.cpu_active(cpu(1)) && s.nr_active() == 1);
    s.sched_cpu_activate(cpu(1)).unwrap();
    // Deadline bandwidth admitted for two CPUs does not fit in one.
    let dl = TaskParams {
        policy: Policy::Deadline,
        dl_runtime_ns: 8 * MS,
        dl_deadline_ns: 10 * MS,
        dl_period_ns: 10 * MS,
        ..Default::default()
    };
    s.spawn(TaskId(0), SchedTask::new(dl), cpu(0)).unwrap();
    s.spawn(TaskId(1), SchedTask::new(dl), cpu(0)).unwrap();
    assert_eq!(
        s.sched_cpu_deactivate(cpu(1), cpu(0)),
        Err(HotplugError::DlBandwidth)
    );
    assert!(s.cpu_active(cpu(1)));
}

/// The lifecycle operations in random order on 4 CPUs with CPUs going down
/// and up among them, checked after each step: nothing on an inactive CPU,
/// one home per task, and at the end every task still wakes.
#[test]
fn random_walk_with_cpus_going_down_and_up() {
    // Miri interprets ~1000x slower: one seed of 120 steps there.
    let (seeds, steps): (u64, u64) = if cfg!(miri) { (1, 120) } else { (6, 3000) };
    for seed in 1..=seeds {
        let s = sched(4);
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut live = [false; IDS];
        let (mut downs, mut ups) = (0, 0);
        for step in 0..steps {
            let id = TaskId(rng.below(IDS as u64) as u32);
            let c = rng.below(4) as usize;
            match rng.below(10) {
                0 => {
                    let mut t = task();
                    t.cpus_allowed = CpuMask::from_u64(rng.below(15) + 1);
                    let r = s.spawn(id, t, cpu(c));
                    let ok = !live[id.0 as usize] && t.cpus_allowed.intersects(&s.active_mask());
                    assert_eq!(r.is_ok(), ok, "seed {seed} step {step}: {r:?}");
                    live[id.0 as usize] |= ok;
                }
                1..=3 if s.cpu_active(cpu(c)) => {
                    let action = match rng.below(5) {
                        0 => PrevAction::Stays,
                        1 => PrevAction::Yields,
                        4 if rng.below(3) == 0 => PrevAction::Exits,
                        _ => PrevAction::Sleeps,
                    };
                    let sw = switch(&s, cpu(c), action);
                    if let (Some(p), Some(_)) = (sw.prev, sw.prev_exited) {
                        live[p.0 as usize] = false;
                    }
                }
                4 | 5 => {
                    let r = s.wake(id, WakeFlags::empty(), cpu(c));
                    assert_eq!(r.is_ok(), live[id.0 as usize], "seed {seed} step {step}");
                    if let Ok(w) = r {
                        assert!(s.cpu_active(w.cpu()), "seed {seed} step {step}: {w:?}");
                    }
                }
                6 => {
                    let m = CpuMask::from_u64(rng.below(15) + 1);
                    let r = s.set_affinity(id, m, cpu(c));
                    if m.intersects(&s.active_mask()) {
                        assert_eq!(r.is_ok(), live[id.0 as usize]);
                    } else {
                        assert_eq!(r, Err(LifecycleError::NoAllowedCpu));
                    }
                }
                7 => {
                    s.load_balance(cpu(c), rng.below(2) == 0);
                }
                8 if c != 0 && s.cpu_active(cpu(c)) => {
                    offline(&s, c);
                    downs += 1;
                }
                9 if !s.cpu_active(cpu(c)) => {
                    s.sched_cpu_activate(cpu(c)).unwrap();
                    ups += 1;
                }
                _ => {}
            }
            check(&s, &live);
        }
        // Seeded, so the same counts every run: CPUs did go down and up.
        assert!(
            downs * 60 >= steps && ups * 60 >= steps,
            "seed {seed}: {downs} down, {ups} up in {steps} steps"
        );
        for c in 1..4 {
            if !s.cpu_active(cpu(c)) {
                s.sched_cpu_activate(cpu(c)).unwrap();
            }
        }
        for i in (0..IDS).filter(|&i| live[i]) {
            s.wake(TaskId(i as u32), WakeFlags::empty(), cpu(0))
                .unwrap();
        }
        check(&s, &live);
        for i in (0..IDS).filter(|&i| live[i]) {
            let st = s.task(TaskId(i as u32), cpu(0)).unwrap().state;
            assert_eq!(st, TaskState::Queued, "seed {seed}: task {i}");
        }
    }
}

/// CPU threads switching and wakers waking while a CPU goes down and up
/// again and again: afterwards every task is held once and wakes. Runs
/// until each side has done its rounds, so a busy host makes it longer,
/// not weaker.
#[test]
fn racing_wakers_and_hotplug_lose_nothing() {
    let s = Arc::new(sched(4));
    let mut live = [false; IDS];
    live[..32].fill(true);
    for id in 0..32u32 {
        s.spawn(TaskId(id), task(), cpu(id as usize % 4)).unwrap();
    }
    let rounds = if cfg!(miri) { 20 } else { 400 };
    let stop = Arc::new(AtomicBool::new(false));
    let mut hs = Vec::new();
    for c in 0..4usize {
        let (s, stop) = (s.clone(), stop.clone());
        hs.push(std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) || n < rounds {
                if s.cpu_active(cpu(c)) || s.cpu_rq(cpu(c)).curr().is_some() {
                    let a = if n.is_multiple_of(3) {
                        PrevAction::Sleeps
                    } else {
                        PrevAction::Yields
                    };
                    switch(&s, cpu(c), a);
                }
                n += 1;
            }
        }));
    }
    for w in 0..2u32 {
        let (s, stop) = (s.clone(), stop.clone());
        hs.push(std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) || (n as u64) < rounds {
                let id = TaskId((n * 7 + w * 13) % 32);
                let _ = s.wake(id, WakeFlags::empty(), cpu(((n + w) % 4) as usize));
                n += 1;
            }
        }));
    }
    // The CPU threads emulate the kernel's dying CPU; this thread is the
    // control CPU: down, wait until CPU 3 ran its idle task, dying, up.
    for _ in 0..rounds / 4 {
        s.sched_cpu_deactivate(cpu(3), cpu(0)).unwrap();
        while s.sched_cpu_dying(cpu(3)).is_err() {
            std::thread::yield_now();
        }
        s.sched_cpu_activate(cpu(3)).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    for c in 0..4 {
        // Put every running task back on its queue, then wake everyone.
        let mut rq = s.cpu_rq(cpu(c));
        let sw = s.schedule(&mut rq, PrevAction::Stays);
        drop(rq);
        s.finish_switch(cpu(c), &sw);
    }
    for id in 0..32 {
        s.wake(TaskId(id), WakeFlags::empty(), cpu(0)).unwrap();
    }
    check(&s, &live);
    for id in 0..32 {
        let st = s.task(TaskId(id), cpu(0)).unwrap().state;
        assert_eq!(st, TaskState::Queued, "task {id}");
    }
}
