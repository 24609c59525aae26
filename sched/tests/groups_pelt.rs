//! PELT propagation up the task-group hierarchy (Linux 7.2,
//! kernel/sched/fair.c: `add_tg_cfs_propagate`, `propagate_entity_load_avg`
//! with `update_tg_cfs_util` / `_runnable` / `_load`, `update_tg_load_avg`,
//! `calc_group_shares` from `tg->load_avg`).
//!
//! The expected figures are worked by hand in each test from Linux's
//! formulas (restated here, step by step, not taken from the code under
//! test): a task with a known `load_avg` attached to a group runqueue at a
//! clock on a PELT period boundary (so every divider is `LOAD_AVG_MAX -
//! 1024`), detached by a migration, moved between groups; and the shares of
//! a group whose task migrates between CPUs, against Linux's
//! `calc_group_shares` restated over the figures the runqueues show.

use crate::common;

use std::sync::Arc;

use common::{cpu_id, MS};
use sched::fair::group::{GroupId, MIN_SHARES};
use sched::pelt::{SchedAvg, LOAD_AVG_MAX};
use sched::{DequeueFlags, Rq, SchedConfig, SchedTask, TaskId, TaskParams};

/// A clock on a PELT period boundary (16 periods of 1024 units of 1024 ns),
/// past the 1 ms rate limit of `update_tg_load_avg`.
const T: u64 = 16 << 20;
/// `get_pelt_divider` with `period_contrib` 0.
const DIV: u64 = LOAD_AVG_MAX - 1024;

struct Cpus {
    cfg: Arc<SchedConfig>,
    rqs: Vec<Rq>,
    now: u64,
}

impl Cpus {
    fn new(n: usize) -> Cpus {
        let cfg = Arc::new(SchedConfig::new(n as u32, 1000));
        let rqs = (0..n)
            .map(|i| Rq::new(cpu_id(i), cfg.clone(), 64))
            .collect();
        Cpus { cfg, rqs, now: 0 }
    }
    fn group(&mut self, w: u32) -> GroupId {
        let g = self.cfg.groups.create(GroupId::ROOT, w).unwrap();
        for rq in &mut self.rqs {
            rq.alloc_task_group(g).unwrap();
        }
        g
    }
    fn clock(&mut self, now: u64) {
        self.now = now;
        for rq in &mut self.rqs {
            rq.update_rq_clock(now);
        }
    }
    fn run_ms(&mut self, ms: u64) {
        common::run_rqs_ms(&mut self.rqs, &mut self.now, ms);
    }
}

/// A nice-0 task of group `g` with these averages, never attached.
fn task_with(g: GroupId, load_avg: u64, util_avg: u64, runnable_avg: u64) -> SchedTask {
    let mut t = SchedTask::new(TaskParams::default());
    t.group = g.0;
    t.se.avg = SchedAvg {
        load_avg,
        util_avg,
        runnable_avg,
        ..SchedAvg::default()
    };
    t
}

/// `attach_entity_load_avg`'s unweighted load sum of a nice-0 task.
fn attached_load_sum(load_avg: u64) -> u64 {
    (load_avg * DIV / 1024).max(1)
}

/// Linux's `calc_group_shares`, restated over what a runqueue shows.
fn linux_shares(rq: &Rq, cfg: &SchedConfig, g: GroupId) -> u64 {
    let grq = rq.group_fair(g).unwrap();
    let load = grq.load.max(grq.avg().load_avg) as i64;
    let tg_weight = cfg.groups.load(g.0) as i64 - rq.group_load_contrib(g).unwrap() as i64 + load;
    let tg_shares = cfg.groups.shares(g.0) as i64;
    let shares = if tg_weight != 0 {
        tg_shares * load / tg_weight
    } else {
        tg_shares * load
    };
    shares.clamp(MIN_SHARES as i64, tg_shares) as u64
}

/// A task with load_avg 300, util_avg 200, runnable_avg 300 is attached to
/// group A's runqueue (a migration's enqueue) at a period boundary. By hand:
///
/// - A's runqueue: its averages are the task's; its pending change
///   (`prop_runnable_sum`) is the task's unweighted sum, 300·DIV/1024.
/// - A's entity (no load before: a group entity starts empty) gets A's
///   shares, all of them (`load = max(1024, 300)`, `tg_weight = 300 - 300 +
///   1024`), and is attached to the root with load_sum 1 (attach's floor).
/// - propagation: util and runnable are copied (200, 300); the load's
///   runnable sum is the pending one plus the entity's, 300·DIV/1024 + 1,
///   so load_avg = 1024 · that / DIV = 300.
/// - the root: 300, 200, 300, the entity's; `tg->load_avg` 300.
#[test]
fn attaching_a_task_moves_its_group_entity_and_the_root() {
    let mut c = Cpus::new(1);
    let a = c.group(100);
    c.clock(T);
    let rq = &mut c.rqs[0];
    rq.attach_task(TaskId(1), task_with(a, 300, 200, 300));
    rq.check().unwrap();
    let grq = rq.group_fair(a).unwrap().avg();
    assert_eq!(grq.period_contrib, 0, "the clock is on a period boundary");
    assert_eq!(
        (grq.load_avg, grq.util_avg, grq.runnable_avg),
        (300, 200, 300)
    );
    assert_eq!(rq.group_entity_weight(a), Some(1024));
    let se_load_sum = attached_load_sum(300) + 1;
    let ge = rq.group_entity_avg(a).unwrap();
    assert_eq!(ge.load_sum, se_load_sum);
    assert_eq!(ge.load_avg, 1024 * se_load_sum / DIV);
    assert_eq!(ge.load_avg, 300);
    assert_eq!((ge.util_avg, ge.runnable_avg), (200, 300));
    assert_eq!(ge.util_sum, 200 * DIV);
    let root = rq.fair.avg();
    assert_eq!(
        (root.load_avg, root.util_avg, root.runnable_avg),
        (300, 200, 300)
    );
    assert_eq!(root.load_sum, 1024 * se_load_sum);
    assert_eq!(c.cfg.groups.load(a.0), 300);
}

/// The same task migrates away at the same instant (`detach_task`): A's
/// runqueue empties; propagated, A's entity is estimated from A's queued
/// weight (0: no runnable sum left) and its running sum (0 once util is
/// copied): load 0; the root is back to 0 everywhere. `tg->load_avg` keeps
/// 300 (published less than 1 ms ago). On the new CPU the task's group
/// entity gets 1024 · 1024 / (600 - 300 + 1024) = 791 of A's shares, CPU
/// 0's stale 300 still counted; CPU 0's blocked-load update a millisecond
/// later publishes its 0, and the next tick gives CPU 1 all of it.
#[test]
fn a_migration_takes_the_load_out_of_the_group_and_the_root() {
    let mut c = Cpus::new(2);
    let a = c.group(100);
    c.clock(T);
    c.rqs[0].attach_task(TaskId(1), task_with(a, 300, 200, 300));
    let t = c.rqs[0].detach_task(TaskId(1)).unwrap();
    c.rqs[0].check().unwrap();
    let grq = c.rqs[0].group_fair(a).unwrap().avg();
    assert_eq!((grq.load_avg, grq.util_avg, grq.runnable_avg), (0, 0, 0));
    let ge = c.rqs[0].group_entity_avg(a).unwrap();
    assert_eq!((ge.load_avg, ge.util_avg, ge.runnable_avg), (0, 0, 0));
    assert_eq!((ge.load_sum, ge.util_sum), (0, 0));
    let root = c.rqs[0].fair.avg();
    assert_eq!(
        (
            root.load_avg,
            root.util_avg,
            root.runnable_avg,
            root.load_sum
        ),
        (0, 0, 0, 0)
    );
    // Empty on CPU 0: the entity keeps the weight it had there (Linux's
    // `update_cfs_group()` leaves an empty group's entity alone).
    assert_eq!(c.rqs[0].group_entity_weight(a), Some(1024));
    assert_eq!(c.cfg.groups.load(a.0), 300);
    c.rqs[1].attach_task(TaskId(1), t);
    c.rqs[1].check().unwrap();
    assert_eq!(c.cfg.groups.load(a.0), 600);
    assert_eq!(c.rqs[1].group_entity_weight(a), Some(1024 * 1024 / 1324));
    assert_eq!(
        c.rqs[1].fair.avg().load_avg,
        791 * (attached_load_sum(300) + 1) / DIV
    );
    c.run_ms(2);
    assert_eq!(c.rqs[0].group_load_contrib(a), Some(0));
    assert_eq!(c.rqs[1].group_entity_weight(a), Some(1024));
}

/// `sched_move_task` from A to B at one instant: the task's load leaves A's
/// runqueue and A's entity (propagated as a detach: 0), joins B's
/// runqueue and B's entity (as the attach above: 300); the root holds 300,
/// now through B.
#[test]
fn moving_a_task_between_groups_moves_its_load() {
    let mut c = Cpus::new(1);
    let a = c.group(100);
    let b = c.group(100);
    c.clock(T);
    let rq = &mut c.rqs[0];
    rq.attach_task(TaskId(1), task_with(a, 300, 200, 300));
    rq.sched_move_task(TaskId(1), b).unwrap();
    rq.check().unwrap();
    assert_eq!(rq.group_fair(a).unwrap().avg().load_avg, 0);
    let ga = rq.group_entity_avg(a).unwrap();
    assert_eq!((ga.load_avg, ga.util_avg, ga.runnable_avg), (0, 0, 0));
    let gb = rq.group_entity_avg(b).unwrap();
    assert_eq!((gb.load_avg, gb.util_avg, gb.runnable_avg), (300, 200, 300));
    let root = rq.fair.avg();
    assert_eq!(
        (root.load_avg, root.util_avg, root.runnable_avg),
        (300, 200, 300)
    );
}

/// Two spinners of A share CPU 0 for 300 ms; one migrates to CPU 1. A tick
/// later, and 300 ms later, each CPU's entity of A has Linux's
/// `calc_group_shares` of the figures its runqueue shows; at the end
/// both are near half of A's shares (512, within 1%): the group's shares
/// moved with the task, on both CPUs. And `tg->load_avg` is the sum of the
/// CPUs' published parts, each within 1/64 of its runqueue's load_avg
/// (`update_tg_load_avg`'s filter).
#[test]
fn a_migration_within_a_group_moves_its_shares_on_both_cpus() {
    let mut c = Cpus::new(2);
    let a = c.group(100);
    c.clock(T);
    for id in [1, 2] {
        let mut t = SchedTask::new(TaskParams::default());
        t.group = a.0;
        c.cfg.groups.move_task(GroupId::ROOT, a).unwrap();
        c.rqs[0].wake_up_new_task(TaskId(id), t);
    }
    c.run_ms(300);
    assert_eq!(c.rqs[0].group_entity_weight(a), Some(1024));
    assert_eq!(c.rqs[1].group_entity_weight(a), Some(MIN_SHARES as u32));
    let mover = if c.rqs[0].curr() == Some(TaskId(1)) {
        2
    } else {
        1
    };
    let t = c.rqs[0].detach_task(TaskId(mover)).unwrap();
    c.rqs[1].attach_task(TaskId(mover), t);
    // CPU 1 computed its entity's weight at the attach; CPU 0 keeps the
    // weight of its dequeue (computed before CPU 1 published its part, as
    // in Linux) until its next update, the next tick.
    let want = linux_shares(&c.rqs[1], &c.cfg, a);
    assert_eq!(c.rqs[1].group_entity_weight(a), Some(want as u32));
    c.run_ms(1);
    for (i, rq) in c.rqs.iter().enumerate() {
        let want = linux_shares(rq, &c.cfg, a);
        assert_eq!(rq.group_entity_weight(a), Some(want as u32), "CPU {i}");
        assert!(want < 1000, "CPU {i}: {want}: the shares moved");
    }
    c.run_ms(300);
    let mut contribs = 0;
    for (i, rq) in c.rqs.iter().enumerate() {
        let want = linux_shares(rq, &c.cfg, a);
        let w = u64::from(rq.group_entity_weight(a).unwrap());
        assert_eq!(w, want, "CPU {i}");
        assert!((507..=517).contains(&w), "CPU {i}: {w}, want 512 ± 1%");
        let contrib = rq.group_load_contrib(a).unwrap();
        let load_avg = rq.group_fair(a).unwrap().avg().load_avg;
        assert!(
            load_avg.abs_diff(contrib) <= contrib / 64 + 1,
            "CPU {i}: {load_avg} published as {contrib}"
        );
        contribs += contrib;
    }
    assert_eq!(c.cfg.groups.load(a.0), contribs);
}

/// A CPU going offline withdraws its part of every group's `tg->load_avg`
/// (`clear_tg_offline_cfs_rqs`): with one spinner of A per CPU for 100 ms,
/// CPU 1's spinner leaves (its load stays there, blocked) and CPU 1 clears
/// its part; `tg->load_avg` is then CPU 0's part alone, and CPU 0's entity of
/// A gets all of A's shares at its next tick (with CPU 1's blocked load
/// still counted it would stay near 512).
#[test]
fn an_offline_cpu_stops_counting_in_the_shares() {
    let mut c = Cpus::new(2);
    let a = c.group(100);
    c.clock(T);
    for (cpu, id) in [(0, 1), (1, 2)] {
        let mut t = SchedTask::new(TaskParams::default());
        t.group = a.0;
        c.cfg.groups.move_task(GroupId::ROOT, a).unwrap();
        c.rqs[cpu].wake_up_new_task(TaskId(id), t);
    }
    c.run_ms(100);
    let (w0, w1) = (
        c.rqs[0].group_entity_weight(a).unwrap(),
        c.rqs[1].group_entity_weight(a).unwrap(),
    );
    assert!(
        (507..=517).contains(&w0) && (507..=517).contains(&w1),
        "{w0} {w1}"
    );
    let _ = c.rqs[1]
        .dequeue_task(TaskId(2), DequeueFlags::empty())
        .unwrap();
    c.rqs[1].pick_next_task();
    assert!(
        c.rqs[1].group_fair(a).unwrap().avg().load_avg > 1000,
        "blocked"
    );
    c.rqs[1].clear_tg_load_avg();
    assert_eq!(c.rqs[1].group_load_contrib(a), Some(0));
    let contrib0 = c.rqs[0].group_load_contrib(a).unwrap();
    assert_eq!(c.cfg.groups.load(a.0), contrib0);
    // CPU 0 alone ticks (CPU 1 is offline).
    c.now += MS;
    c.rqs[0].update_rq_clock(c.now);
    c.rqs[0].task_tick();
    c.rqs[0].check().unwrap();
    assert_eq!(c.rqs[0].group_entity_weight(a), Some(1024));
}
