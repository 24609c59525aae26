//! Wakeup placement by PELT (`wake_affine_weight` with WA_BIAS,
//! `wake_wide`), as Linux 7.2's kernel/sched/fair.c decides, on a flat
//! machine whose CPUs are all busy (so WA_IDLE and the idle scan have
//! nothing to say).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common;
use common::cpu_id;

use common::plat::Plat;
use sched::smp::{Platform, Scheduler};
use sched::CpuId;
use sched::{Feature, SchedConfig, SchedTask, TaskId, TaskParams, Topology, WakeFlags};

use crate::common::MS;

fn machine(per_cpu: &[u32]) -> Scheduler<Plat> {
    machine_on(Topology::flat(per_cpu.len()), per_cpu)
}

fn machine_on(topo: Topology, per_cpu: &[u32]) -> Scheduler<Plat> {
    let n = per_cpu.len();
    let cfg = Arc::new(SchedConfig::new(n as u32, 250));
    let s = Scheduler::with_topology(Plat::default(), cfg, topo, 64);
    s.platform.now.store(1_000 * MS, Ordering::Relaxed);
    let mut next = 1;
    for (cpu, &k) in per_cpu.iter().enumerate() {
        let mut rq = s.cpu_rq(cpu_id(cpu));
        rq.update_rq_clock(s.platform.now_ns());
        for _ in 0..k {
            let mut t = SchedTask::new(TaskParams::default());
            t.cpu = cpu_id(cpu);
            rq.wake_up_new_task(TaskId(next), t);
            next += 1;
        }
        rq.pick_next_task();
    }
    s
}

/// A wakee last on `prev` with load average `load_avg`, woken from `this`.
fn wake(s: &Scheduler<Plat>, prev: usize, this: usize, load_avg: u64, wf: WakeFlags) -> usize {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpu = cpu_id(prev);
    t.se.avg.load_avg = load_avg;
    s.select_task_rq(&t, cpu_id(this), wf | WakeFlags::TTWU)
        .0
        .index()
}

#[test]
fn wa_bias_weighs_the_previous_cpu_up_by_half_the_imbalance_margin() {
    // New tasks count 1024 each. Waker's CPU 0: 2 tasks, previous CPU 1: 4.
    // this = (2048 + 1024) * 100 = 307 200; prev = (4096 - 1024) * 108.
    let s = machine(&[2, 4, 5, 5]);
    assert_eq!(s.cpu_rq(cpu_id(0)).load_avg(), 2048);
    assert_eq!(s.cpu_rq(cpu_id(1)).load_avg(), 4096);
    assert_eq!(wake(&s, 1, 0, 1024, WakeFlags::empty()), 0);
    // Without the bias: 3072 < 3072 is false, the wakee stays.
    s.cfg.features.set(Feature::WaBias, false);
    assert_eq!(wake(&s, 1, 0, 1024, WakeFlags::empty()), 1);
    // Without WA_WEIGHT nothing pulls it either.
    s.cfg.features.set(Feature::WaBias, true);
    s.cfg.features.set(Feature::WaWeight, false);
    assert_eq!(wake(&s, 1, 0, 1024, WakeFlags::empty()), 1);
}

#[test]
fn the_wakee_is_weighed_by_its_load_average_not_its_weight() {
    // Equal CPUs (3 tasks each): a wakee counts on the waker's side and
    // comes off the previous CPU's, so only a wakee of no load at all
    // could tie; with load 0: 3072 * 100 < 3072 * 108, it moves.
    let s = machine(&[3, 3, 5, 5]);
    assert_eq!(wake(&s, 1, 0, 0, WakeFlags::empty()), 0);
    // A light wakee (100): 3172 * 100 = 317 200 < 2972 * 108 = 320 976.
    assert_eq!(wake(&s, 1, 0, 100, WakeFlags::empty()), 0);
    // A heavier one (200): 327 200 > 310 176: it stays.
    assert_eq!(wake(&s, 1, 0, 200, WakeFlags::empty()), 1);
}

#[test]
fn a_sync_wakeup_takes_the_wakers_load_out() {
    // Waker's CPU 2 tasks, previous 3: (2048 + 1024) * 100 > 2048 * 108.
    let s = machine(&[2, 3, 5, 5]);
    assert_eq!(wake(&s, 1, 0, 1024, WakeFlags::empty()), 1);
    // Sync: the running waker's 1024 off: 2048 * 100 < 2048 * 108 + 1.
    assert_eq!(wake(&s, 1, 0, 1024, WakeFlags::SYNC), 0);
}

#[test]
fn each_side_is_weighed_by_the_other_cpus_capacity() {
    // As wa_bias_weighs_...: loads 2048 (waker's CPU 0) and 4096 (CPU 1),
    // which pull the wakee on equal CPUs (307 200 < 331 776).
    let same = Topology::flat(4).with_capacities(&[1024; 4]).unwrap();
    assert_eq!(
        wake(
            &machine_on(same, &[2, 4, 5, 5]),
            1,
            0,
            1024,
            WakeFlags::empty()
        ),
        0
    );
    // CPU 0 at half the capacity of CPU 1: 307 200 * 1024 against
    // 331 776 * 512: the wakee stays on the bigger CPU.
    let asym = Topology::flat(4)
        .with_capacities(&[512, 1024, 1024, 1024])
        .unwrap();
    let s = machine_on(asym, &[2, 4, 5, 5]);
    assert_eq!(s.cpu_rq(cpu_id(0)).load_avg(), 2048);
    assert_eq!(wake(&s, 1, 0, 1024, WakeFlags::empty()), 1);
    // The other way round (the waker's CPU the bigger one) it moves: the
    // previous CPU's side is weighed up by the waker's larger capacity.
    let asym = Topology::flat(4)
        .with_capacities(&[1024, 512, 1024, 1024])
        .unwrap();
    let s = machine_on(asym, &[3, 3, 5, 5]);
    // Equal loads 3072 with a wakee of 512: 3584 * 100 * 512 = 183 500 800
    // < 2560 * 108 * 1024 = 283 115 520; on equal CPUs it would stay
    // (358 400 > 276 480).
    assert_eq!(wake(&s, 1, 0, 512, WakeFlags::empty()), 0);
    let flat = machine(&[3, 3, 5, 5]);
    assert_eq!(wake(&flat, 1, 0, 512, WakeFlags::empty()), 1);
}

#[test]
fn wake_wide_needs_both_tasks_flipping_and_one_llc_size_times_more() {
    // One LLC of 4 CPUs: factor 4.
    let s = machine(&[1, 1, 1, 1]);
    assert!(
        !s.wake_wide(100, 3, cpu_id(0)),
        "the wakee flips less than the LLC size"
    );
    assert!(
        !s.wake_wide(3, 100, cpu_id(0)),
        "the waker flips less than the LLC size"
    );
    assert!(!s.wake_wide(15, 4, cpu_id(0)), "15 < 4 * 4");
    assert!(s.wake_wide(16, 4, cpu_id(0)));
    assert!(
        s.wake_wide(4, 16, cpu_id(0)),
        "either may be the one that flips more"
    );
    assert!(
        !s.wake_wide(16, 16, cpu_id(0)),
        "16 < 16 * 4: both flip as much"
    );
}

#[test]
fn a_wide_wakeup_is_not_affine() {
    // The same loads that pull the wakee to the waker's CPU affine.
    let s = machine(&[2, 4, 5, 5]);
    let mut t = SchedTask::new(TaskParams::default());
    t.cpu = cpu_id(1);
    assert_eq!(
        s.select_task_rq_wide(&t, cpu_id(0), WakeFlags::TTWU, false)
            .0,
        cpu_id(0)
    );
    assert_eq!(
        s.select_task_rq_wide(&t, cpu_id(0), WakeFlags::TTWU, true)
            .0,
        cpu_id(1)
    );
}

/// One switch on `cpu`: `a` for the running task, then the pick.
fn switch(s: &Scheduler<Plat>, cpu: CpuId, a: sched::PrevAction) -> sched::rq::Switch {
    let sw = {
        let mut rq = s.cpu_rq(cpu);
        s.schedule(&mut rq, a)
    };
    s.finish_switch(cpu, &sw);
    sw
}

#[test]
fn a_new_task_takes_its_parents_wakee_flips_not_its_ids_last_holders() {
    use sched::PrevAction;
    let cfg = Arc::new(SchedConfig::new(1, 250));
    let s = Scheduler::new(Plat::default(), cfg, 1, 16);
    s.platform.now.store(1_000 * MS, Ordering::Relaxed);
    let waker = TaskId(1);
    for id in 1..=6 {
        s.spawn(TaskId(id), SchedTask::new(TaskParams::default()), cpu_id(0))
            .unwrap();
    }
    // Tasks 2..=6 run once and sleep (the waker yields when picked); then
    // only the waker is runnable.
    let mut asleep = 0;
    let mut sw = switch(&s, cpu_id(0), PrevAction::Stays);
    for _ in 0..100 {
        if asleep == 5 {
            break;
        }
        sw = if sw.next.is_some_and(|n| n != waker) {
            asleep += 1;
            switch(&s, cpu_id(0), PrevAction::Sleeps)
        } else {
            switch(&s, cpu_id(0), PrevAction::Yields)
        };
    }
    assert_eq!(asleep, 5);
    assert_eq!(sw.next, Some(waker));
    // It wakes five different tasks: five flips (Linux's record_wakee).
    for id in 2..=6 {
        s.wake(TaskId(id), WakeFlags::empty(), cpu_id(0)).unwrap();
    }
    assert_eq!(s.wakee_flips(waker), 5);
    // A child it forks starts with its flips, as a fork copies them.
    let child = TaskId(7);
    s.spawn(child, SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    assert_eq!(s.wakee_flips(child), 5);
    // The waker exits; a task spawned under its id by another (which never
    // woke anyone) starts with that one's flips, 0, not the exited one's.
    let sw = switch(&s, cpu_id(0), PrevAction::Exits);
    assert_eq!(sw.prev, Some(waker));
    let parent = sw.next.expect("a woken task runs");
    assert_eq!(s.wakee_flips(parent), 0);
    s.spawn(waker, SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    assert_eq!(
        s.wakee_flips(waker),
        0,
        "inherited from the id's last holder"
    );
}
