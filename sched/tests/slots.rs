//! Runqueue storage: tasks live in local slots found through an id map, so a
//! runqueue grows with the tasks it holds (not with the id space), reuses
//! slots, keeps a running task's slot until it is switched out, and reports
//! an id above its limit or a failed growth as an error.

use crate::common::cpu_id;
use std::sync::Arc;

use sched::{
    DequeueFlags, EnqueueFlags, Feature, Rq, RqError, SchedConfig, SchedTask, TaskId, TaskParams,
    TaskState, WakeFlags,
};

use crate::common::MS;

fn rq(max_tasks: usize) -> Rq {
    let cfg = Arc::new(SchedConfig::new(1, 250));
    let mut rq = Rq::new(cpu_id(0), cfg, max_tasks);
    rq.update_rq_clock(1);
    rq
}

fn new_task(nice: i32) -> SchedTask {
    SchedTask::new(TaskParams {
        nice,
        ..Default::default()
    })
}

/// Runs `steps` ticks of 1 ms with a pick after each, checking invariants.
fn run(rq: &mut Rq, now: &mut u64, steps: usize) {
    for _ in 0..steps {
        *now += MS;
        rq.update_rq_clock(*now);
        rq.task_tick();
        rq.pick_next_task();
        rq.check().unwrap();
    }
}

#[test]
fn grows_past_its_initial_size_by_doubling() {
    let mut rq = rq(1 << 20);
    assert_eq!(rq.slot_capacity(), 0, "an empty runqueue allocates nothing");
    assert_eq!(rq.heap_bytes(), 0);
    // Miri interprets ~1000x slower: 300 tasks there (still seven
    // doublings, to 512 slots).
    let n: u32 = if cfg!(miri) { 300 } else { 1000 };
    let mut caps = vec![];
    for i in 0..n {
        rq.wake_up_new_task(TaskId(i), new_task(i as i32 % 7 - 3));
        if caps.last() != Some(&rq.slot_capacity()) {
            caps.push(rq.slot_capacity());
        }
        if i % 37 == 0 {
            rq.check().unwrap();
        }
    }
    rq.check().unwrap();
    let doublings: &[usize] = if cfg!(miri) {
        &[8, 16, 32, 64, 128, 256, 512]
    } else {
        &[8, 16, 32, 64, 128, 256, 512, 1024]
    };
    assert_eq!(caps, doublings);
    assert_eq!(rq.nr_running(), n);
    assert_eq!(rq.tasks().count(), n as usize);
    for i in 0..n {
        let t = rq.task(TaskId(i)).expect("every task is found by its id");
        assert_eq!(t.params.nice, i as i32 % 7 - 3);
    }
    let mut now = 1;
    // Each tick checks every slot (a check of 300 tasks is about 5 s under
    // Miri): 8 ticks there.
    run(&mut rq, &mut now, if cfg!(miri) { 8 } else { 300 });
    // Every task still accounted and found; the queue order is by deadline.
    assert_eq!(rq.fair_queue().count() + 1, n as usize);
    let curr = rq.curr().unwrap();
    assert!(rq
        .fair_queue()
        .all(|id| id != curr && rq.task(id).is_some()));
}

#[test]
fn ids_far_apart_cost_one_slot_each() {
    let mut rq = rq(u32::MAX as usize);
    let ids = [0, 1_000_000, u32::MAX - 1];
    for &id in &ids {
        rq.wake_up_new_task(TaskId(id), new_task(0));
    }
    rq.check().unwrap();
    assert_eq!(rq.slot_capacity(), 8);
    assert!(rq.heap_bytes() < 4096, "{} bytes", rq.heap_bytes());
    let mut now = 1;
    run(&mut rq, &mut now, 20);
    let mut seen: Vec<u32> = rq.tasks().map(|(id, _)| id.0).collect();
    seen.sort_unstable();
    assert_eq!(seen, ids);
    for &id in &ids {
        assert_eq!(rq.task(TaskId(id)).unwrap().state, TaskState::Queued);
    }
    assert!(rq.task(TaskId(1)).is_none());
    assert!(rq.task(TaskId(999_999)).is_none());
}

#[test]
fn slots_are_reused_after_dequeue() {
    let mut rq = rq(1 << 16);
    for i in 0..100u32 {
        rq.wake_up_new_task(TaskId(i), new_task(0));
    }
    let cap = rq.slot_capacity();
    let bytes = rq.heap_bytes();
    assert_eq!(cap, 128);
    // Dequeue them all (not a sleep: never delayed) and bring other ids in.
    let mut off = vec![];
    // A check of 100 tasks is about 1.5 s under Miri: every 10th dequeue
    // and the last there.
    let every = if cfg!(miri) { 10 } else { 1 };
    for i in 0..100u32 {
        let t = rq
            .dequeue_task(TaskId(i), DequeueFlags::SAVE)
            .unwrap()
            .unwrap();
        off.push(t);
        if i % every == 0 || i == 99 {
            rq.check().unwrap();
        }
    }
    assert_eq!(rq.nr_running(), 0);
    assert_eq!(rq.slots_in_use(), 0);
    for i in 1000..1100u32 {
        rq.wake_up_new_task(TaskId(i), new_task(0));
    }
    rq.check().unwrap();
    assert_eq!(
        rq.slot_capacity(),
        cap,
        "no growth: the freed slots are reused"
    );
    assert_eq!(rq.heap_bytes(), bytes);
    assert!(rq.task(TaskId(7)).is_none());
    // With one slot free, a newcomer takes it (the slot forgets its last
    // task), and the task that left comes back to a fresh slot.
    let slot_1050 = rq.slot(TaskId(1050)).unwrap();
    let t = rq
        .dequeue_task(TaskId(1050), DequeueFlags::SAVE)
        .unwrap()
        .unwrap();
    rq.enqueue_task(TaskId(7), off[7], EnqueueFlags::RESTORE);
    assert_eq!(rq.slot(TaskId(7)), Some(slot_1050));
    rq.check().unwrap();
    rq.enqueue_task(TaskId(1050), t, EnqueueFlags::RESTORE);
    assert_ne!(rq.slot(TaskId(1050)), Some(slot_1050));
    rq.check().unwrap();
    assert_eq!(rq.nr_running(), 101);
    assert_eq!(rq.slot_capacity(), cap);
    let mut now = 1;
    // Each tick checks 101 tasks: 10 ticks under Miri.
    run(&mut rq, &mut now, if cfg!(miri) { 10 } else { 50 });
}

#[test]
fn a_sleeper_woken_on_the_same_cpu_gets_its_slot_back() {
    let mut rq = rq(64);
    for i in 0..10u32 {
        rq.wake_up_new_task(TaskId(i), new_task(0));
    }
    let before: Vec<_> = (0..10).map(|i| rq.slot(TaskId(i)).unwrap()).collect();
    let mut off = vec![];
    for i in (0..10u32).step_by(2) {
        off.push((
            i,
            rq.dequeue_task(TaskId(i), DequeueFlags::SAVE)
                .unwrap()
                .unwrap(),
        ));
    }
    for (i, t) in off {
        rq.try_to_wake_up(TaskId(i), t, WakeFlags::empty());
    }
    rq.check().unwrap();
    let after: Vec<_> = (0..10).map(|i| rq.slot(TaskId(i)).unwrap()).collect();
    assert_eq!(before, after);
}

#[test]
fn the_running_tasks_slot_is_kept_until_it_is_switched_out() {
    let mut rq = rq(64);
    rq.config().features.set(Feature::DelayDequeue, false);
    rq.wake_up_new_task(TaskId(1), new_task(0));
    rq.wake_up_new_task(TaskId(2), new_task(0));
    assert_eq!(rq.pick_next_task(), Some(TaskId(1)));
    let slot = rq.slot(TaskId(1)).unwrap();
    // Task 1 blocks: fully dequeued, but it still runs until the next pick.
    let t1 = rq
        .dequeue_task(TaskId(1), DequeueFlags::SLEEP)
        .unwrap()
        .expect("not delayed");
    assert_eq!(rq.curr(), Some(TaskId(1)));
    assert!(rq.task(TaskId(1)).is_none());
    rq.check().unwrap();
    // Newcomers must not take its slot while it is running.
    for i in 3..20u32 {
        rq.wake_up_new_task(TaskId(i), new_task(0));
        assert_ne!(rq.slot(TaskId(i)), Some(slot));
    }
    rq.check().unwrap();
    // Woken before the switch: it gets the same slot and stays running.
    rq.try_to_wake_up(TaskId(1), t1, WakeFlags::empty());
    assert_eq!(rq.slot(TaskId(1)), Some(slot));
    assert_eq!(rq.curr(), Some(TaskId(1)));
    rq.check().unwrap();
    // Blocks again and is switched out: the slot is free for others then.
    rq.dequeue_task(TaskId(1), DequeueFlags::SLEEP).unwrap();
    let next = rq.pick_next_task().unwrap();
    assert_ne!(next, TaskId(1));
    rq.check().unwrap();
    assert_eq!(rq.slots_in_use(), 18);
    let mut now = 1;
    run(&mut rq, &mut now, 50);
}

#[test]
fn ids_above_the_limit_are_errors_not_panics() {
    let mut rq = rq(100);
    assert_eq!(rq.capacity(), 100);
    let t = new_task(0);
    assert_eq!(
        rq.try_enqueue_task(TaskId(100), t, EnqueueFlags::WAKEUP),
        Err(RqError::IdOutOfRange)
    );
    assert_eq!(
        rq.try_wake_up_new_task(TaskId(u32::MAX), t).map(|_| ()),
        Err(RqError::IdOutOfRange)
    );
    assert_eq!(rq.nr_running(), 0);
    assert_eq!(rq.heap_bytes(), 0, "a refused task costs nothing");
    rq.check().unwrap();
    // Ids below the limit work, and never need more slots than the limit.
    for i in 0..100u32 {
        rq.try_wake_up_new_task(TaskId(i), t).unwrap();
    }
    assert_eq!(rq.slot_capacity(), 100);
    rq.check().unwrap();
    assert_eq!(
        rq.dequeue_task(TaskId(100), DequeueFlags::SLEEP).err(),
        Some(RqError::NotQueued)
    );
}

#[test]
#[should_panic(expected = "IdOutOfRange")]
fn enqueue_task_panics_on_an_id_above_the_limit() {
    let mut rq = rq(10);
    rq.enqueue_task(TaskId(10), new_task(0), EnqueueFlags::WAKEUP);
}

#[test]
fn reserve_pre_sizes_so_enqueues_do_not_grow() {
    let mut rq = rq(1 << 20);
    rq.try_reserve(300).unwrap();
    let (cap, bytes) = (rq.slot_capacity(), rq.heap_bytes());
    assert_eq!(cap, 300);
    for i in 0..300u32 {
        rq.wake_up_new_task(TaskId(i * 3000), new_task(0));
    }
    let mut now = 1;
    // Each tick checks every slot (300 tasks, about 5 s under Miri): 5
    // ticks there.
    run(&mut rq, &mut now, if cfg!(miri) { 5 } else { 100 });
    assert_eq!((rq.slot_capacity(), rq.heap_bytes()), (cap, bytes));
    // Room for more than the id space allows is capped at it.
    let mut small = self::rq(10);
    small.try_reserve(1 << 30).unwrap();
    assert_eq!(small.slot_capacity(), 10);
    // An impossible reservation is an error, not an abort. Not under
    // Miri: it backs allocations with host memory and, where the host's
    // allocator refuses these terabytes at once, Miri took them on (it was
    // OOM-killed at 24 GB resident); the refusal path is still exercised
    // there by memory.rs's refused growths.
    let mut huge = self::rq(u32::MAX as usize);
    if !cfg!(miri) {
        assert_eq!(
            huge.try_reserve(u32::MAX as usize - 1),
            Err(RqError::NoMemory)
        );
    }
    huge.check().unwrap();
    huge.wake_up_new_task(TaskId(5), new_task(0));
    huge.check().unwrap();
}

/// xorshift64*: deterministic, no dependencies.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Where the model says a task is: held by runqueue 0 or 1, or asleep with
/// its state kept by the "kernel".
#[derive(Clone, Copy)]
#[allow(clippy::large_enum_variant)] // a test model: tasks by value
enum Where {
    Rq(usize),
    Off(SchedTask),
}

/// Two runqueues and a kernel's protocol on them with sparse ids: spawn,
/// block (delayed or not), wake (from the delayed state or from sleep, on
/// either CPU), tick and pick, migrate, switch class (fair and FIFO), exit.
/// After every step both runqueues pass `check` and hold exactly the tasks
/// the model says, and neither holds more slots than twice its high-water
/// mark.
#[test]
fn random_churn_with_sparse_ids_keeps_slots_and_map_exact() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let cfg = Arc::new(SchedConfig::new(2, 250));
    let mut rqs = [0, 1].map(|cpu| {
        let mut r = Rq::new(cpu_id(cpu), cfg.clone(), 1 << 30);
        r.update_rq_clock(1);
        r
    });
    let (mut exits, mut rt_switches) = (0, 0);
    let mut model: std::collections::BTreeMap<u32, Where> = Default::default();
    let mut high = [0usize; 2];
    let mut now = 1u64;
    // Miri interprets ~1000x slower: 600 steps and at most 30 tasks there
    // (both runqueues are checked after every step, 0.2 s each there); the
    // churn bounds at the end scale with the steps.
    let (steps, max_tasks) = if cfg!(miri) { (600, 30) } else { (20_000, 300) };
    for step in 0..steps {
        let c = rng.below(2) as usize;
        let ids: Vec<u32> = model.keys().copied().collect();
        let pick = |rng: &mut Rng| ids[rng.below(ids.len() as u64) as usize];
        match rng.below(9) {
            // Spawn a task with a fresh id from a sparse space.
            0 | 1 if model.len() < max_tasks => {
                let id = rng.below(1 << 30) as u32;
                if model.contains_key(&id) {
                    continue;
                }
                rqs[c].wake_up_new_task(TaskId(id), new_task(rng.below(11) as i32 - 5));
                model.insert(id, Where::Rq(c));
            }
            // The running task blocks.
            2 => {
                let sw = rqs[c].schedule(true);
                if let (Some(prev), Some(t)) = (sw.prev, sw.prev_blocked) {
                    model.insert(prev.0, Where::Off(t));
                }
            }
            // Wake a task: from sleep on either CPU, or in place.
            3 | 4 if !ids.is_empty() => {
                let id = pick(&mut rng);
                let t = match model[&id] {
                    Where::Off(t) => t,
                    Where::Rq(h) => match rqs[h].ttwu_runnable(TaskId(id), WakeFlags::empty()) {
                        sched::TtwuRunnable::Blocked(t) => t,
                        _ => continue,
                    },
                };
                rqs[c].try_to_wake_up(TaskId(id), t, WakeFlags::empty());
                model.insert(id, Where::Rq(c));
            }
            // Tick and pick.
            5 => {
                now += 1 + rng.below(2 * MS);
                for r in &mut rqs {
                    r.update_rq_clock(now);
                }
                rqs[c].task_tick();
                rqs[c].pick_next_task();
            }
            // Migrate a queued, not running task to the other CPU.
            6 if !ids.is_empty() => {
                let id = pick(&mut rng);
                if let Where::Rq(h) = model[&id] {
                    if let Ok(t) = rqs[h].detach_task(TaskId(id)) {
                        rqs[1 - h].attach_task(TaskId(id), t);
                        model.insert(id, Where::Rq(1 - h));
                    }
                }
            }
            // Switch a held task's class.
            7 if !ids.is_empty() => {
                let id = pick(&mut rng);
                if let Where::Rq(h) = model[&id] {
                    let p = if rng.below(3) == 0 {
                        TaskParams::fifo(1 + rng.below(99) as u8)
                    } else {
                        TaskParams {
                            nice: rng.below(11) as i32 - 5,
                            ..Default::default()
                        }
                    };
                    rt_switches += u32::from(p.rt_priority > 0);
                    let _ = rqs[h].sched_setattr(TaskId(id), p);
                }
            }
            // A sleeping task exits: its id is gone for good.
            8 if !ids.is_empty() => {
                let id = pick(&mut rng);
                if let Where::Off(_) = model[&id] {
                    model.remove(&id);
                    exits += 1;
                }
            }
            _ => continue,
        }
        for (k, r) in rqs.iter().enumerate() {
            if let Err(e) = r.check() {
                panic!("step {step}: cpu {k}: {e}");
            }
            let held = r.tasks().count();
            high[k] = high[k].max(r.slots_in_use());
            assert!(
                r.slot_capacity() <= (2 * high[k]).max(8),
                "step {step}: cpu {k}: {} slots for a high-water mark of {}",
                r.slot_capacity(),
                high[k]
            );
            let want = model
                .values()
                .filter(|w| matches!(w, Where::Rq(h) if *h == k))
                .count();
            assert_eq!(
                held, want,
                "step {step}: cpu {k} holds {held}, model {want}"
            );
        }
        for (&id, w) in &model {
            let on = |k: usize| rqs[k].task(TaskId(id)).is_some();
            match *w {
                Where::Rq(h) => assert!(on(h) && !on(1 - h), "step {step}: task {id}"),
                Where::Off(_) => assert!(!on(0) && !on(1), "step {step}: task {id}"),
            }
        }
    }
    // The protocol really churned: migrations, wakeups across CPUs, RT
    // switches and exits (so slots were handed to new ids).
    let migrations: u64 = rqs.iter().map(|r| r.stats.nr_migrations_in).sum();
    let wakeups: u64 = rqs.iter().map(|r| r.stats.nr_wakeups).sum();
    eprintln!("churn: {migrations} migrations, {wakeups} wakeups, {rt_switches} RT switches, {exits} exits, high-water {high:?}");
    let per = |n: u64| n * steps / 20_000;
    assert!(
        migrations > per(300)
            && wakeups > per(1000)
            && u64::from(rt_switches) > per(300)
            && exits > per(300)
    );
}
