//! PELT's capacity-invariant clock (Linux's `rq_clock_pelt`, kernel
//! commit 23127296889f "sched/fair: Update scale invariance of PELT";
//! kernel/sched/pelt.h's `update_rq_clock_pelt` and
//! `update_idle_rq_clock_pelt`): on a CPU of capacity `c` the clock PELT
//! runs on advances `c / 1024` as fast as the task clock while something
//! runs, catches up when the CPU goes idle, and keeps the catch-up as lost
//! idle time when the CPU was busy all along.
//!
//! Expected figures come from the series' closed form, not from the code:
//! from a utilization `u0`, running `n` periods (1 048 576 ns each) gives
//! `1024 - (1024 - u0) * y^n`, sleeping `n` periods multiplies by `y^n`,
//! with `y = 0.5^(1/32)`. The integer sums, truncated at each update and
//! divided by a divider that moves with the period's progress, read within
//! a unit of it here; the tolerance is 6 units, far inside the differences
//! the tests tell apart (hundreds of units, and 4 ms against ~22 ms).

use std::sync::atomic::Ordering;

use crate::common;
use common::cpu_id;
use common::plat::{machine, switch, Plat};

use sched::fair::group::GroupId;
use sched::pelt::{PeltClock, LOAD_AVG_MAX, PELT_FULL_UTIL_SUM};
use sched::smp::Scheduler;
use sched::{CpuMask, Feature, PrevAction, SchedTask, TaskId, TaskParams, Topology, WakeFlags};

use crate::common::MS;
/// A PELT period, ns.
const PERIOD_NS: f64 = 1_048_576.0;
/// The tolerance against the closed form, in units of `util_avg` (see
/// the module docs).
const TOL: f64 = 6.0;

/// `y^n` for `ns` of PELT time.
fn decay(ns: f64) -> f64 {
    0.5f64.powf(ns / PERIOD_NS / 32.0)
}

/// The closed form of a task's utilization after `ns` of PELT time
/// running, from `u0`.
fn rise(u0: f64, ns: f64) -> f64 {
    1024.0 - (1024.0 - u0) * decay(ns)
}

/// Two big CPUs (0, 1: 1024) and two little ones (2, 3: 512) in one LLC.
fn big_little() -> Topology {
    Topology::flat(4)
        .with_capacities(&[1024, 1024, 512, 512])
        .unwrap()
}

fn run(s: &Scheduler<Plat>, cpu: usize, ms: u64) {
    common::plat::run_ticks(s, cpu, ms);
}

/// A new CPU-bound task `id` allowed only on `cpu`, running there.
fn start(s: &Scheduler<Plat>, cpu: usize, id: u32) {
    s.cfg.features.set(Feature::DelayDequeue, false);
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(cpu));
    let (c, _) = s.spawn(TaskId(id), t, cpu_id(cpu)).unwrap();
    assert_eq!(c, cpu_id(cpu));
    switch(s, cpu, PrevAction::Stays);
    assert_eq!(s.cpu_rq(cpu_id(cpu)).curr(), Some(TaskId(id)));
}

fn util(s: &Scheduler<Plat>, cpu: usize, id: u32) -> u64 {
    s.cpu_rq(cpu_id(cpu))
        .task(TaskId(id))
        .unwrap()
        .se
        .avg
        .util_avg
}

/// Every runqueue's invariants, the PELT clock's among them (the fair
/// runqueue's copy is the task clock less the lag; no lag at full
/// capacity).
fn check(s: &Scheduler<Plat>) {
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).unwrap();
}

fn near(got: u64, want: f64, what: &str) {
    assert!(
        (got as f64 - want).abs() <= TOL,
        "{what}: util_avg {got}, closed form {want:.1}"
    );
}

/// The clock of the diagram in kernel/sched/pelt.h, by hand: at half
/// capacity 2 ms of running count 1; idle, the clock catches up; busy to
/// the maximum, the catch-up is lost. And the threshold's figure:
/// `(47742 - 1024) * 1024 - 47742 = 47 791 490`.
#[test]
fn the_clock_scales_running_time_and_catches_up_when_idle() {
    assert_eq!(LOAD_AVG_MAX, 47742);
    assert_eq!(PELT_FULL_UTIL_SUM, 47_791_490);
    let mut c = PeltClock::default();
    assert!(c.advance(2 * MS, true, 512));
    assert_eq!((c.stolen_ns, c.lag_ns()), (MS, MS));
    assert_eq!(c.now_ns(10 * MS), 9 * MS);
    // Full capacity steals nothing; capacity 768 counts three quarters.
    assert!(!c.advance(5 * MS, true, 1024));
    assert!(c.advance(4 * MS, true, 768));
    assert_eq!(c.stolen_ns, 2 * MS);
    // Idle at a clock update: caught up, nothing lost.
    assert!(c.advance(MS, false, 768));
    assert_eq!(c, PeltClock::default());
    // Going idle: caught up if not fully busy; fully busy, the stolen time
    // is lost and the lag stays.
    for (util_sum, lost_ns) in [(PELT_FULL_UTIL_SUM - 1, 0), (PELT_FULL_UTIL_SUM, MS)] {
        c.advance(2 * MS, true, 512);
        assert_eq!(c.enter_idle(util_sum), lost_ns == 0);
        assert_eq!(
            (c.stolen_ns, c.lost_idle_ns, c.lag_ns()),
            (0, lost_ns, lost_ns)
        );
    }
    // Rounding: 3 ns at 512 count 1 (3 * 512 >> 10), 2 stolen.
    let mut c = PeltClock::default();
    c.advance(3, true, 512);
    assert_eq!(c.stolen_ns, 2);
}

/// A CPU-bound task on a little CPU (512): its first utilization is half
/// the CPU's spare capacity (256, Linux's `post_init_entity_util_avg`
/// sizes it by `arch_scale_cpu_capacity`), and it rises at half the rate
/// of a big CPU's: 64 ms of running count 32 ms. Before the clock was
/// scaled it started at 512 and read about 888 here (the closed form for
/// 64 ms from 512, what the big CPU reads). It still reaches the top of
/// the scale (a task that never sleeps is always-running on any CPU),
/// later.
#[test]
fn a_busy_task_on_a_little_cpu_rises_at_the_rate_of_the_work_done() {
    let s = machine(big_little());
    // The little CPU 3 (task 1: from 256, 64 ms of running count 32), then
    // the big CPU 0 (task 2: from 512, the task clock).
    for (cpu, id, u0, pelt_ms) in [(3, 1, 256.0, 32.0), (0, 2, 512.0, 64.0)] {
        start(&s, cpu, id);
        near(util(&s, cpu, id), u0, "spawned");
        run(&s, cpu, 64);
        near(util(&s, cpu, id), rise(u0, pelt_ms * MS as f64), "64 ms");
    }
    assert_eq!(s.cpu_rq(cpu_id(0)).pelt_lag_ns(), 0);
    // The little CPU's clock: half of the 64 ms it ran.
    let lag = s.cpu_rq(cpu_id(3)).pelt_lag_ns();
    assert_eq!(lag, 32 * MS, "half of 64 ms of running stolen");
    run(&s, 3, 700);
    let u = util(&s, 3, 1);
    assert!(u >= 1015, "after 764 ms of running: {u}");
    check(&s);
}

/// A task that ran 40 ms on a little CPU, then slept 60 ms: it ran 20 ms
/// of PELT time, and when the CPU went idle the clock caught up, so its
/// sleep decays over 80 ms (the idle time a big CPU would have had after
/// the same work). Closed form: `rise(256, 20 ms) * y^(80 ms)` = 98.8;
/// before the scaled clock `rise(512, 40 ms) * y^(60 ms)` = 231.6. Woken
/// on the little CPU or moved to a big one (its averages brought to the
/// little CPU's PELT clock from another CPU), the same; and the same in a
/// task group (its group runqueue runs on the CPU's PELT clock).
#[test]
fn a_short_run_then_sleep_decays_as_after_the_same_work_on_a_big_cpu() {
    for (wake_on, grouped) in [(3usize, false), (0, false), (3, true), (0, true)] {
        let s = machine(big_little());
        start(&s, 3, 1);
        if grouped {
            let g = s.create_task_group(GroupId::ROOT, 1024).unwrap();
            s.sched_move_task(TaskId(1), g, cpu_id(3)).unwrap();
            assert_eq!(s.cpu_rq(cpu_id(3)).curr(), Some(TaskId(1)));
        }
        run(&s, 3, 40);
        let ran = util(&s, 3, 1);
        near(ran, rise(256.0, 20.0 * MS as f64), "40 ms on 512");
        switch(&s, 3, PrevAction::Sleeps);
        assert!(s.cpu_rq(cpu_id(3)).curr().is_none());
        // Caught up, nothing lost (far from always busy).
        assert_eq!(s.cpu_rq(cpu_id(3)).pelt_lag_ns(), 0);
        s.platform.now.fetch_add(60 * MS, Ordering::Relaxed);
        if wake_on != 3 {
            let mask = CpuMask::of(cpu_id(wake_on));
            s.set_affinity(TaskId(1), mask, cpu_id(wake_on)).unwrap();
        }
        s.wake(TaskId(1), WakeFlags::TTWU, cpu_id(wake_on)).unwrap();
        {
            let mut rq = s.cpu_rq(cpu_id(wake_on));
            s.sched_ttwu_pending(&mut rq);
        }
        let want = rise(256.0, 20.0 * MS as f64) * decay(80.0 * MS as f64);
        near(util(&s, wake_on, 1), want, "after 60 ms asleep");
        assert!((util(&s, wake_on, 1) as f64) < 150.0);
        check(&s);
    }
}

/// Lost idle time: a task that kept a little CPU busy until its `util_sum`
/// reached the top (more than 160 periods of PELT time) leaves the CPU
/// with its stolen time lost when it sleeps: the PELT clock stays behind
/// the task clock by half of the 600 ms it ran, and the sleep that follows
/// decays over the sleep alone (a big CPU busy all along would have had no
/// idle time to give back). Without the rule the 300 ms would count as
/// idle: `1024 * y^(350 ms)` = 0.6 instead of `1024 * y^(50 ms)` = 364.
#[test]
fn an_always_busy_little_cpu_loses_the_idle_time_it_stole() {
    let s = machine(big_little());
    start(&s, 3, 1);
    run(&s, 3, 600);
    assert_eq!(s.cpu_rq(cpu_id(3)).pelt_lag_ns(), 300 * MS);
    assert!(s.cpu_rq(cpu_id(3)).fair.avg().util_sum >= PELT_FULL_UTIL_SUM);
    let busy = util(&s, 3, 1);
    assert!(busy >= 1015, "util_avg {busy}");
    switch(&s, 3, PrevAction::Sleeps);
    let rq = s.cpu_rq(cpu_id(3));
    let c = rq.pelt_clock();
    assert_eq!((c.stolen_ns, c.lost_idle_ns), (0, 300 * MS));
    assert_eq!(rq.clock_pelt(), rq.clock() - 300 * MS);
    drop(rq);
    s.platform.now.fetch_add(50 * MS, Ordering::Relaxed);
    s.wake(TaskId(1), WakeFlags::TTWU, cpu_id(3)).unwrap();
    {
        let mut rq = s.cpu_rq(cpu_id(3));
        s.sched_ttwu_pending(&mut rq);
    }
    near(
        util(&s, 3, 1),
        busy as f64 * decay(50.0 * MS as f64),
        "after 50 ms asleep",
    );
    // The lost time stays lost: the clock runs 300 ms behind from now on.
    assert_eq!(s.cpu_rq(cpu_id(3)).pelt_lag_ns(), 300 * MS);
    check(&s);
}

/// Misfit as Linux's would see it: a CPU-bound task spawned on a little
/// CPU starts at 256, which fits (`256 * 1280 < 512 * 1024`), and becomes
/// misfit when it passes 409: by the closed form after 10.8 ms of PELT
/// time, 21.7 ms of running at half capacity, so at the 6th tick (24 ms).
/// Before the clock was scaled it started at 512 and was misfit at the
/// first tick.
#[test]
fn a_new_busy_task_becomes_misfit_on_a_little_cpu_when_linux_s_would() {
    let s = machine(big_little());
    start(&s, 3, 1);
    // Allowed everywhere from now on (a task kept to the littles is no
    // misfit).
    s.set_affinity(TaskId(1), CpuMask::first_n(4), cpu_id(3))
        .unwrap();
    assert_eq!(s.misfit_task_load(cpu_id(3)), 0);
    let crossing_ms = 2.0 * 32.0 * (768.0f64 / (1024.0 - 410.0)).log2() * PERIOD_NS / MS as f64;
    assert!((21.0..22.5).contains(&crossing_ms), "{crossing_ms}");
    let mut first = None;
    for tick in 1..=20u64 {
        run(&s, 3, 4);
        if s.misfit_task_load(cpu_id(3)) != 0 {
            first = Some(tick * 4);
            break;
        }
    }
    let first = first.expect("misfit within 80 ms");
    assert!(
        (20..=28).contains(&first),
        "misfit first marked after {first} ms (closed form {crossing_ms:.1} ms)"
    );
}

/// A machine of equal CPUs (given as equal capacities too): the PELT clock
/// is the task clock, whatever runs and sleeps.
#[test]
fn equal_cpus_keep_the_task_clock() {
    for topo in [
        Topology::flat(2),
        Topology::flat(2).with_capacities(&[512, 512]).unwrap(),
    ] {
        let s = machine(topo);
        start(&s, 1, 1);
        run(&s, 1, 400);
        switch(&s, 1, PrevAction::Sleeps);
        s.platform.now.fetch_add(10 * MS, Ordering::Relaxed);
        s.wake(TaskId(1), WakeFlags::TTWU, cpu_id(1)).unwrap();
        let mut rq = s.cpu_rq(cpu_id(1));
        s.sched_ttwu_pending(&mut rq);
        assert_eq!(rq.cpu_capacity(), 1024);
        assert_eq!(rq.pelt_clock(), PeltClock::default());
        assert_eq!(rq.clock_pelt(), rq.clock());
    }
}

/// A sleeper woken on a big CPU while its little CPU stays busy: its
/// averages are brought to the little CPU's PELT clock, which ran at half
/// speed since it slept (Linux syncs it to the runqueue's last update,
/// `sync_entity_load_avg`; ours to the lag the little CPU last published,
/// at most one tick stale). 40 ms asleep decay as 20 ms of PELT time
/// (plus at most half a tick), not 40 as on the task clock.
#[test]
fn a_sleeper_woken_elsewhere_decays_on_its_busy_cpu_s_clock() {
    let s = machine(big_little());
    start(&s, 3, 2); // a hog, always on CPU 3
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(3));
    s.spawn(TaskId(1), t, cpu_id(3)).unwrap();
    // Run both until task 1 is picked, then let it sleep there.
    let mut picked = false;
    for _ in 0..50 {
        run(&s, 3, 4);
        switch(&s, 3, PrevAction::Stays);
        if s.cpu_rq(cpu_id(3)).curr() == Some(TaskId(1)) {
            picked = true;
            break;
        }
    }
    assert!(picked, "task 1 never ran");
    run(&s, 3, 4);
    // Its averages at the tick, where it sleeps (no time passes).
    let slept = util(&s, 3, 1);
    switch(&s, 3, PrevAction::Sleeps);
    assert_eq!(s.cpu_rq(cpu_id(3)).curr(), Some(TaskId(2)));
    assert!(slept > 100, "util_avg {slept} at its sleep");
    run(&s, 3, 40);
    assert!(s.cpu_rq(cpu_id(3)).pelt_lag_ns() > 0);
    s.set_affinity(TaskId(1), CpuMask::of(cpu_id(0)), cpu_id(0))
        .unwrap();
    s.wake(TaskId(1), WakeFlags::TTWU, cpu_id(0)).unwrap();
    {
        let mut rq = s.cpu_rq(cpu_id(0));
        s.sched_ttwu_pending(&mut rq);
    }
    let woke = util(&s, 0, 1) as f64;
    let hi = slept as f64 * decay(20.0 * MS as f64);
    let lo = slept as f64 * decay(22.0 * MS as f64);
    assert!(
        woke <= hi + 1.0 && woke >= lo - 1.0,
        "util_avg {woke} after 40 ms asleep beside a hog: want {lo:.1}..{hi:.1} \
         (the task clock's 40 ms would give {:.1})",
        slept as f64 * decay(40.0 * MS as f64)
    );
    check(&s);
}
