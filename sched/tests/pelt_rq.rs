//! PELT wired into the runqueue (`sched::fair::load_avg`): the averages an
//! entity and its runqueue reach under known duty cycles, checked against
//! values computed here independently (in floating point, from
//! `y^32 = 1/2`), and the runqueue's sums against its entities'.

use crate::common;
use common::cpu_id;

use std::sync::Arc;

use common::{H, MS};
use sched::CpuId;
use sched::{DequeueFlags, Rq, SchedConfig, SchedTask, TaskId, TaskParams};

/// PELT's period in ns (1024 units of 1024 ns).
const PERIOD_NS: f64 = 1024.0 * 1024.0;

/// `y^(ns / period)`, `y = 0.5^(1/32)`.
fn decay(ns: f64) -> f64 {
    0.5f64.powf(ns / PERIOD_NS / 32.0)
}

fn within(x: u64, want: f64, pct: f64) -> bool {
    (x as f64 - want).abs() <= want * pct / 100.0
}

#[test]
fn a_task_that_always_runs_tends_to_full_util_and_its_weight() {
    let mut h = H::one();
    h.spawn(1, H::nice(0));
    h.pick();
    h.run_ms(400);
    let a = h.se(1).avg;
    // The sums' largest value over the divider: 1024 to within the
    // period in progress (at most 1024 / 46718 below).
    assert!(a.util_avg >= 1001 && a.util_avg <= 1024, "{a:?}");
    assert!(a.load_avg >= 1001 && a.load_avg <= 1024, "{a:?}");
    let r = *h.rq.fair.avg();
    assert!(r.util_avg >= 1001 && r.util_avg <= 1024, "{r:?}");
    assert!(r.load_avg >= 1001 && r.load_avg <= 1024, "{r:?}");
    assert_eq!(h.rq.load_avg(), r.load_avg);
}

#[test]
fn a_nice_minus_5_task_counts_its_weight_and_util_stays_capped() {
    let mut h = H::one();
    h.spawn(1, H::nice(-5));
    h.pick();
    h.run_ms(400);
    let a = h.se(1).avg;
    let w = h.se(1).load.weight as f64; // 3121
    assert!(within(a.load_avg, w, 2.5), "{a:?} vs weight {w}");
    assert!(a.util_avg <= 1024);
}

#[test]
fn a_half_duty_task_oscillates_around_512() {
    // 5 ms on, 5 ms off. Steady state of u' = (1024 - u) on, u decays off:
    // peak = 1024 / (1 + y^h), trough = peak * y^h, h = 5 ms in periods.
    let yh = decay(5.0 * MS as f64);
    let peak = 1024.0 / (1.0 + yh);
    let trough = peak * yh;
    let mut h = H::one();
    h.spawn(1, H::nice(0));
    h.pick();
    let (mut hi, mut lo) = (0, 0);
    for _ in 0..100 {
        h.adv(5 * MS);
        h.block();
        hi = h.se(1).avg.util_avg;
        h.adv(5 * MS);
        h.wake(1, sched::WakeFlags::empty());
        lo = h.se(1).avg.util_avg;
        h.pick();
    }
    assert!(within(hi, peak, 3.0), "peak {hi}, computed {peak:.1}");
    assert!(within(lo, trough, 3.0), "trough {lo}, computed {trough:.1}");
    // The runqueue's util: the same history (one task, attached).
    let r = h.rq.fair.avg().util_avg;
    assert!(within(r, trough, 3.0), "rq util {r}, computed {trough:.1}");
}

#[test]
fn a_sleeper_leaves_blocked_load_that_decays() {
    let mut h = H::one();
    h.spawn(1, H::nice(0));
    h.pick();
    h.run_ms(200);
    h.block();
    let before = h.rq.load_avg();
    assert!(before > 1000);
    // 32 periods idle halve it (the runqueue's own clock runs at ticks).
    for _ in 0..34 {
        h.adv(PERIOD_NS as u64);
        h.rq.task_tick();
    }
    let after = h.rq.load_avg() as f64;
    let want = before as f64 * decay(34.0 * PERIOD_NS);
    assert!(
        (after - want).abs() <= want * 0.03 + 2.0,
        "{after} vs {want:.1}"
    );
}

#[test]
fn the_runqueue_sums_are_the_sum_of_its_entities() {
    let mut h = H::one();
    h.spawn(1, H::nice(0));
    h.spawn(2, H::nice(3));
    h.spawn(3, H::nice(-2));
    h.pick();
    h.run_ms(300);
    let r = *h.rq.fair.avg();
    let (mut load, mut util, mut runnable) = (0, 0, 0);
    for id in 1..=3 {
        let a = h.se(id).avg;
        load += a.load_avg;
        util += a.util_avg;
        runnable += a.runnable_avg;
    }
    // Entities are updated at their own events, the runqueue at every
    // one: they differ by at most a tick's decay (about 2%).
    assert!(within(r.load_avg, load as f64, 3.0), "{r:?} vs {load}");
    assert!(within(r.util_avg, util as f64, 3.0), "{r:?} vs {util}");
    assert!(
        within(r.runnable_avg, runnable as f64, 3.0),
        "{r:?} vs {runnable}"
    );
    // Three always runnable tasks: the CPU is always busy, three runnable.
    assert!(within(r.util_avg, 1024.0, 3.0), "{r:?}");
    assert!(within(r.runnable_avg, 3.0 * 1024.0, 3.0), "{r:?}");
}

#[test]
fn a_migration_moves_the_load_between_runqueues() {
    let cfg = Arc::new(SchedConfig::new(2, 1000));
    let mut a = Rq::new(cpu_id(0), cfg.clone(), 8);
    let mut b = Rq::new(cpu_id(1), cfg.clone(), 8);
    let mut now = 1;
    a.update_rq_clock(now);
    b.update_rq_clock(now);
    for id in 1..=2 {
        a.wake_up_new_task(TaskId(id), SchedTask::new(TaskParams::default()));
    }
    a.pick_next_task();
    for _ in 0..200 {
        now += MS;
        a.update_rq_clock(now);
        b.update_rq_clock(now);
        if a.task_tick() != sched::Resched::None {
            a.pick_next_task();
        }
    }
    let moving = if a.curr() == Some(TaskId(1)) { 2 } else { 1 };
    let before = a.load_avg();
    let t = a.detach_task(TaskId(moving)).unwrap();
    let la = t.se.avg.load_avg;
    assert!(la > 900, "{:?}", t.se.avg);
    assert_eq!(a.load_avg(), before - la);
    assert_eq!(b.load_avg(), 0);
    b.attach_task(TaskId(moving), t);
    assert_eq!(b.load_avg(), la);
    assert_eq!(b.task(TaskId(moving)).unwrap().se.avg.load_avg, la);
    // Detaching again is a migration too; a dequeue that is not one keeps
    // the (blocked) load where it is.
    let t = b
        .dequeue_task(TaskId(moving), DequeueFlags::SLEEP | DequeueFlags::SPECIAL)
        .unwrap()
        .unwrap();
    assert_eq!(b.load_avg(), t.se.avg.load_avg);
}

#[test]
fn a_new_task_counts_at_full_weight_and_half_the_spare_capacity() {
    let mut h = H::one();
    h.spawn(1, H::nice(0));
    let a = h.se(1).avg;
    assert_eq!(a.load_avg, 1024);
    // An empty CPU: half its capacity (post_init_entity_util_avg).
    assert_eq!(a.util_avg, 512);
    assert_eq!(h.rq.fair.avg().load_avg, 1024);
    assert_eq!(h.rq.fair.avg().util_avg, 512);
}

/// Ticks `cpu` every ms for `ms` ms.
fn run_cpu(s: &sched::smp::Scheduler<common::plat::Plat>, cpu: CpuId, ms: u64) {
    use std::sync::atomic::Ordering::Relaxed;
    for _ in 0..ms {
        let now = s.platform.now.fetch_add(MS, Relaxed) + MS;
        let mut rq = s.cpu_rq(cpu);
        rq.update_rq_clock(now);
        rq.task_tick();
    }
}

/// `cpu` switches, its previous task doing `a`.
fn switch(
    s: &sched::smp::Scheduler<common::plat::Plat>,
    cpu: CpuId,
    a: sched::PrevAction,
) -> sched::Switch {
    let sw = {
        let mut rq = s.cpu_rq(cpu);
        s.schedule(&mut rq, a)
    };
    s.finish_switch(cpu, &sw);
    sw
}

#[test]
fn a_sleeper_woken_on_another_cpu_takes_its_load_along() {
    use sched::smp::{Scheduler, Woke};
    use sched::{CpuMask, PrevAction, WakeFlags};
    let cfg = Arc::new(SchedConfig::new(2, 1000));
    let s = Scheduler::new(common::plat::Plat::default(), cfg, 2, 8);
    s.platform
        .now
        .store(1_000 * MS, std::sync::atomic::Ordering::Relaxed);
    let id = TaskId(1);
    let (cpu, _) = s
        .spawn(id, SchedTask::new(TaskParams::default()), cpu_id(1))
        .unwrap();
    assert_eq!(cpu, cpu_id(1));
    switch(&s, cpu_id(1), PrevAction::Stays);
    run_cpu(&s, cpu_id(1), 200);
    switch(&s, cpu_id(1), PrevAction::Sleeps);
    // Asleep, it still weighs on its CPU (blocked load).
    let blocked = s.cpu_rq(cpu_id(1)).load_avg();
    assert!(blocked > 1000, "{blocked}");
    assert_eq!(s.cpu_rq(cpu_id(0)).load_avg(), 0);
    // Allowed only on CPU 0, it is woken there: its load leaves CPU 1 (at
    // that CPU's next publish) and joins CPU 0's.
    s.set_affinity(id, CpuMask::from_cpus(&[0]), cpu_id(0))
        .unwrap();
    let w = s.wake(id, WakeFlags::empty(), cpu_id(0)).unwrap();
    assert_eq!(w.cpu(), cpu_id(0), "{w:?}");
    assert!(
        matches!(w, Woke::Placed { from, to, .. } if from == cpu_id(1) && to == cpu_id(0)),
        "{w:?}"
    );
    drop(s.cpu_rq(cpu_id(1)));
    let left = s.cpu_rq(cpu_id(1)).load_avg();
    let here = s.cpu_rq(cpu_id(0)).load_avg();
    assert!(left <= blocked / 50, "CPU 1 kept {left} of {blocked}");
    assert!(
        here * 100 >= blocked * 97 && here <= blocked,
        "{here} vs {blocked}"
    );
}

#[test]
fn a_removed_sleeper_takes_its_load_along() {
    use sched::smp::Scheduler;
    use sched::PrevAction;
    let cfg = Arc::new(SchedConfig::new(1, 1000));
    let s = Scheduler::new(common::plat::Plat::default(), cfg, 1, 8);
    for id in 1..=2 {
        s.spawn(TaskId(id), SchedTask::new(TaskParams::default()), cpu_id(0))
            .unwrap();
    }
    switch(&s, cpu_id(0), PrevAction::Stays);
    run_cpu(&s, cpu_id(0), 100);
    let sw = switch(&s, cpu_id(0), PrevAction::Sleeps);
    let gone = sw.prev.unwrap();
    let before = s.cpu_rq(cpu_id(0)).load_avg();
    let t = s.remove(gone, cpu_id(0)).unwrap();
    drop(s.cpu_rq(cpu_id(0)));
    let after = s.cpu_rq(cpu_id(0)).load_avg();
    let la = t.se.avg.load_avg;
    assert!(la > 300, "{:?}", t.se.avg);
    // Within the decay of the few ns between the two reads.
    assert!(
        after + la >= before - 2 && after + la <= before + 2,
        "{before} - {la} != {after}"
    );
}
