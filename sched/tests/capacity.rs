//! Capacity-aware placement and misfit balancing on machines of unequal
//! CPUs (big.LITTLE), as Linux's kernel/sched/fair.c does it:
//! `fits_capacity`/`util_fits_cpu` (no uclamp here), `select_idle_capacity`
//! and `asym_fits_cpu` in `select_idle_sibling`, `update_misfit_status` at
//! the tick and the switch, and the balancer's `group_misfit_task` /
//! `migrate_misfit` with `need_active_balance`. A machine of equal CPUs
//! must not see any of it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common;
use common::cpu_id;
use common::plat::{switch, Plat};

use sched::smp::capacity::{capacity_greater, fits_capacity};
use sched::smp::Scheduler;
use sched::{
    CpuMask, Feature, PrevAction, SchedConfig, SchedTask, TaskId, TaskParams, Topology, WakeFlags,
};

use crate::common::MS;
/// HZ 250: one tick.
const TICK_NS: u64 = 4 * MS;

/// Two big CPUs (0, 1: 1024) and two little ones (2, 3: 512) in one LLC
/// (a DynamIQ-like cluster: one MC domain with SD_ASYM_CPUCAPACITY_FULL).
fn big_little() -> Topology {
    Topology::flat(4)
        .with_capacities(&[1024, 1024, 512, 512])
        .unwrap()
}

/// The same CPUs as two clusters (bigs sharing one LLC, littles another),
/// joined at the package level (legacy big.LITTLE: the asym domain is PKG).
fn big_little_clusters() -> Topology {
    Topology::from_ids(&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0])
        .unwrap()
        .with_capacities(&[1024, 1024, 512, 512])
        .unwrap()
}

fn machine(topo: Topology) -> Scheduler<Plat> {
    let n = topo.nr_cpus();
    let s = Scheduler::with_topology(
        Plat::default(),
        Arc::new(SchedConfig::new(n as u32, 250)),
        topo,
        64,
    );
    s.platform.now.store(1_000 * MS, Ordering::Relaxed);
    s
}

/// A wakee last on `prev` with the given PELT utilization, woken from `this`.
fn wake_util(s: &Scheduler<Plat>, prev: usize, this: usize, util_avg: u64, util_est: u32) -> usize {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpu = cpu_id(prev);
    t.se.avg.util_avg = util_avg;
    t.se.avg.util_est = util_est;
    s.select_task_rq(&t, cpu_id(this), WakeFlags::TTWU)
        .0
        .index()
}

/// Makes `cpu` busy with a task of its own (id `id`), running.
fn occupy(s: &Scheduler<Plat>, cpu: usize, id: u32) {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(cpu));
    s.spawn(TaskId(id), t, cpu_id(cpu)).unwrap();
    switch(s, cpu, PrevAction::Stays);
}

fn run(s: &Scheduler<Plat>, cpu: usize, ms: u64) {
    common::plat::run_ticks(s, cpu, ms);
}

/// `fits_capacity(cap, max)`: `cap * 1280 < max * 1024`, a ~20% margin.
/// The boundaries: 819 fits 1024 (1 048 320 < 1 048 576), 820 does not;
/// 409 fits 512, 410 does not; nothing fits capacity 0, 0 fits anything
/// above. `capacity_greater` wants more than ~5% (`* 1024 > * 1078`).
#[test]
fn fits_capacity_leaves_a_20_percent_margin() {
    assert!(fits_capacity(819, 1024));
    assert!(!fits_capacity(820, 1024));
    assert!(fits_capacity(409, 512));
    assert!(!fits_capacity(410, 512));
    assert!(fits_capacity(0, 1));
    assert!(!fits_capacity(0, 0));
    assert!(!fits_capacity(1024, 1024));
    assert!(!fits_capacity(u64::MAX, 1024));
    assert!(capacity_greater(1079, 1024));
    assert!(!capacity_greater(1078, 1024));
    assert!(capacity_greater(1024, 512));
    assert!(!capacity_greater(1024, 1000));
    // util_fits_cpu on the 2 big + 2 little machine: by each CPU's capacity.
    let s = machine(big_little());
    assert!(s.util_fits_cpu(819, cpu_id(0)));
    assert!(!s.util_fits_cpu(820, cpu_id(1)));
    assert!(s.util_fits_cpu(409, cpu_id(2)));
    assert!(!s.util_fits_cpu(410, cpu_id(3)));
}

/// `select_idle_sibling` → `select_idle_capacity`: a wakee too big for its
/// idle little previous CPU (util 800 > 409) scans the asym domain from
/// the target (wrapping) and takes the first idle CPU it fits: CPU 0.
/// A small wakee (util 100) fits its little CPU and stays there
/// (`asym_fits_cpu` accepts the idle target).
#[test]
fn a_big_wakee_goes_to_an_idle_big_cpu_a_small_one_may_stay_little() {
    for topo in [big_little(), big_little_clusters()] {
        let s = machine(topo);
        assert_eq!(wake_util(&s, 3, 3, 800, 0), 0);
        assert_eq!(wake_util(&s, 2, 2, 800, 0), 0);
        assert_eq!(wake_util(&s, 3, 3, 100, 0), 3);
        assert_eq!(wake_util(&s, 2, 3, 100, 0), 2);
        // task_util_est: a low util_avg with a high estimate is sized by
        // the estimate.
        assert_eq!(wake_util(&s, 3, 3, 100, 800), 0);
        // A small wakee whose previous CPU is big stays big.
        assert_eq!(wake_util(&s, 1, 1, 100, 0), 1);
        // CPU 0 busy: the other big one.
        occupy(&s, 0, 40);
        assert_eq!(wake_util(&s, 3, 3, 800, 0), 1);
    }
}

/// `select_idle_capacity`'s fallback: no idle CPU fits, so the idle CPU
/// of most capacity (the first met from the target among equals); none
/// idle: the target.
#[test]
fn without_a_fitting_idle_cpu_the_biggest_idle_one_then_the_target() {
    let s = machine(big_little());
    occupy(&s, 0, 40);
    occupy(&s, 1, 41);
    // Util 1000 fits no CPU at all; the bigs are busy: the littles are
    // equal, the scan starts at the target (3), so 3.
    assert_eq!(wake_util(&s, 3, 3, 1000, 0), 3);
    assert_eq!(wake_util(&s, 2, 2, 1000, 0), 2);
    // A big CPU idle again: fits nothing either, but it is the biggest.
    switch(&s, 1, PrevAction::Sleeps);
    assert_eq!(wake_util(&s, 3, 3, 1000, 0), 1);
    occupy(&s, 2, 42);
    occupy(&s, 3, 43);
    occupy(&s, 1, 44);
    assert_eq!(wake_util(&s, 3, 3, 800, 0), 3);
}

/// Affinity: the scan only looks at allowed CPUs, so a big wakee allowed
/// on the littles only stays little.
#[test]
fn the_capacity_scan_keeps_to_the_allowed_cpus() {
    let s = machine(big_little());
    let mut t = SchedTask::new(TaskParams::default());
    t.cpu = cpu_id(3);
    t.se.avg.util_avg = 800;
    t.cpus_allowed = CpuMask::of(cpu_id(2)).or(&CpuMask::of(cpu_id(3)));
    let (cpu, _) = s.select_task_rq(&t, cpu_id(3), WakeFlags::TTWU);
    assert_eq!(cpu, cpu_id(3));
}

/// Spawns a CPU-bound task on little CPU 3 and runs it there for 100 ms of
/// ticks: its util_avg grows past what fits 512 (409) and the tick marks
/// the CPU misfit (`update_misfit_status`).
fn busy_on_little(s: &Scheduler<Plat>, id: u32) {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(3));
    let (cpu, _) = s.spawn(TaskId(id), t, cpu_id(3)).unwrap();
    assert_eq!(cpu, cpu_id(3));
    switch(s, 3, PrevAction::Stays);
    // Let it run anywhere from now on.
    assert!(s.set_cpus_allowed(cpu_id(3), TaskId(id), CpuMask::first_n(4), cpu_id(3)));
    assert_eq!(s.misfit_task_load(cpu_id(3)), 0);
    run(s, 3, 100);
    let util = s
        .cpu_rq(cpu_id(3))
        .task(TaskId(id))
        .unwrap()
        .se
        .avg
        .util_avg;
    assert!(util >= 410, "util_avg {util} after 100 ms of running");
}

/// Misfit: a CPU-bound task on a little CPU marks it misfit at the tick;
/// the next balance of an idle big CPU (periodic, `should_we_balance`
/// lets CPU 0 balance) finds `group_misfit_task`, cannot detach the
/// running task and starts an active balance (`need_active_balance`,
/// `migrate_misfit`): CPU 3 is kicked, and its next switch hands the task
/// to CPU 0, where it is no misfit (none is bigger).
#[test]
fn an_idle_big_cpu_pulls_the_misfit_task_of_a_little_one() {
    for topo in [big_little(), big_little_clusters()] {
        let s = machine(topo);
        busy_on_little(&s, 1);
        let load = s.misfit_task_load(cpu_id(3));
        assert!(load >= 1);
        assert_eq!(
            load,
            s.cpu_rq(cpu_id(3))
                .task(TaskId(1))
                .unwrap()
                .se
                .avg
                .load_avg
                .max(1)
        );
        for c in 0..3 {
            assert_eq!(s.misfit_task_load(cpu_id(c)), 0);
        }
        let ipis = s.platform.ipis[3].load(Ordering::Relaxed);
        let p = s.load_balance(cpu_id(0), false);
        assert!(p.is_empty(), "the running task cannot be detached");
        assert!(p.active_balance());
        assert_eq!(p.from_cpu(), cpu_id(3));
        assert_eq!(s.platform.ipis[3].load(Ordering::Relaxed), ipis + 1);
        // CPU 3 reschedules: the task moves to CPU 0.
        assert_eq!(switch(&s, 3, PrevAction::Stays), Some(cpu_id(0)));
        assert!(s.cpu_rq(cpu_id(3)).curr().is_none());
        assert_eq!(s.misfit_task_load(cpu_id(3)), 0);
        assert!(s.cpu_rq(cpu_id(0)).task(TaskId(1)).is_some());
        switch(&s, 0, PrevAction::Stays);
        assert_eq!(s.cpu_rq(cpu_id(0)).curr(), Some(TaskId(1)));
        // Even past what fits 1024 it is no misfit there: no CPU is bigger.
        run(&s, 0, 200);
        let util = s.cpu_rq(cpu_id(0)).task(TaskId(1)).unwrap().se.avg.util_avg;
        assert!(!s.util_fits_cpu(util, cpu_id(0)), "util_avg {util}");
        assert_eq!(s.misfit_task_load(cpu_id(0)), 0);
        let mut scratch = s.check_scratch();
        s.check(&mut scratch).unwrap();
    }
}

/// The newly idle balance pulls a misfit too, though no CPU runs two
/// tasks (Linux marks the root domain overloaded for a misfit group).
#[test]
fn a_newly_idle_big_cpu_pulls_the_misfit_task() {
    let s = machine(big_little());
    s.cfg.features.set(Feature::NiRandom, false);
    busy_on_little(&s, 1);
    assert_eq!(s.overloaded_cpus(), 0);
    let p = s.load_balance(cpu_id(1), true);
    assert!(p.active_balance());
    assert_eq!(switch(&s, 3, PrevAction::Stays), Some(cpu_id(1)));
}

/// Who does not pull: a little CPU (no more capacity than the misfit's:
/// `capacity_greater` fails), a busy big CPU (its group has no spare
/// capacity). And what is no misfit: a task allowed only on little CPUs
/// (it is on the biggest CPU it may use), a task that fits.
#[test]
fn misfit_is_left_alone_when_nothing_bigger_can_help() {
    let s = machine(big_little());
    busy_on_little(&s, 1);
    let p = s.load_balance(cpu_id(2), false);
    assert!(p.is_empty() && !p.active_balance());
    occupy(&s, 0, 40);
    // Busy by PELT (group_has_capacity): a task just spawned leaves its
    // CPU spare capacity (util 512 < 1024 · 100 / 117) and would pull;
    // after 200 ms of running, util ~1014 does not.
    run(&s, 0, 200);
    let p = s.load_balance(cpu_id(0), false);
    assert!(p.is_empty() && !p.active_balance());
    // Pinned to the littles: no misfit.
    let s = machine(big_little());
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(2)).or(&CpuMask::of(cpu_id(3)));
    s.spawn(TaskId(1), t, cpu_id(3)).unwrap();
    switch(&s, 3, PrevAction::Stays);
    run(&s, 3, 100);
    assert_eq!(s.misfit_task_load(cpu_id(3)), 0);
    let p = s.load_balance(cpu_id(0), false);
    assert!(p.is_empty() && !p.active_balance());
    // Going idle clears a misfit mark (the switch's update_misfit_status).
    let s = machine(big_little());
    busy_on_little(&s, 1);
    assert_ne!(s.misfit_task_load(cpu_id(3)), 0);
    switch(&s, 3, PrevAction::Sleeps);
    assert_eq!(s.misfit_task_load(cpu_id(3)), 0);
    let p = s.load_balance(cpu_id(0), true);
    assert!(p.is_empty() && !p.active_balance());
}

/// A machine of equal CPUs (also when given equal capacities): no misfit,
/// no capacity scan: a big wakee stays on its idle previous CPU, as the
/// LLC path decides, and a CPU-bound task is never misfit.
#[test]
fn equal_cpus_see_no_capacity_logic() {
    for topo in [
        Topology::flat(4),
        Topology::flat(4).with_capacities(&[512; 4]).unwrap(),
    ] {
        assert!(!topo.has_asym_capacity());
        let s = machine(topo);
        assert_eq!(wake_util(&s, 3, 3, 1000, 0), 3);
        busy_on_little(&s, 1);
        assert_eq!(s.misfit_task_load(cpu_id(3)), 0);
        let p = s.load_balance(cpu_id(0), false);
        assert!(p.is_empty() && !p.active_balance());
        assert_eq!(s.load_balance(cpu_id(0), true).len(), 0);
    }
}

/// `detach_tasks` with `migrate_misfit` takes only a task that does not
/// fit the source: with the misfit running on little CPU 3 and a new,
/// light task queued behind it (its initial util_avg is half the CPU's
/// spare, little after 100 ms of a busy CPU), the light one stays and the
/// running misfit goes by active balance. Two clusters: the bigs' MC finds
/// nothing, the PKG level (SD_ASYM_CPUCAPACITY) finds the little group
/// fully busy (2 tasks, 2 CPUs), of type `group_misfit_task`. Periodic
/// balance (`rebalance_domains`, its interval passed).
#[test]
fn a_queued_task_that_fits_stays_the_running_misfit_goes() {
    let s = machine(big_little_clusters());
    busy_on_little(&s, 1);
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(3));
    s.spawn(TaskId(2), t, cpu_id(3)).unwrap();
    assert!(s.set_cpus_allowed(cpu_id(3), TaskId(2), CpuMask::first_n(4), cpu_id(3)));
    let light = s
        .cpu_rq(cpu_id(3))
        .task(TaskId(2))
        .unwrap()
        .se
        .avg
        .task_util_est();
    assert!(s.util_fits_cpu(light, cpu_id(3)), "util {light}");
    assert_eq!(s.cpu_rq(cpu_id(3)).curr(), Some(TaskId(1)));
    let now = s.platform.now.load(Ordering::Relaxed);
    let p = s.rebalance_domains(cpu_id(0), now);
    assert!(p.is_empty());
    assert!(p.active_balance());
    assert!(s.cpu_rq(cpu_id(3)).task(TaskId(2)).is_some());
    assert_eq!(switch(&s, 3, PrevAction::Stays), Some(cpu_id(0)));
    assert_eq!(s.cpu_rq(cpu_id(3)).curr(), Some(TaskId(2)));
    assert!(s.cpu_rq(cpu_id(0)).task(TaskId(1)).is_some());
}

/// `detach_tasks` with `migrate_misfit`, the queued case: two CPU-bound
/// tasks share little CPU 3 for 200 ms (tick preemption), so both grow
/// past what fits 512; the running one marks the CPU misfit, and an idle
/// big CPU's balance detaches the queued one (it does not fit CPU 3)
/// at once, no active balance needed.
#[test]
fn a_queued_misfit_is_detached_directly() {
    let s = machine(big_little_clusters());
    for id in [1, 2] {
        let mut t = SchedTask::new(TaskParams::default());
        t.cpus_allowed = CpuMask::of(cpu_id(3));
        s.spawn(TaskId(id), t, cpu_id(3)).unwrap();
        assert!(s.set_cpus_allowed(cpu_id(3), TaskId(id), CpuMask::first_n(4), cpu_id(3)));
    }
    switch(&s, 3, PrevAction::Stays);
    for _ in 0..200 * MS / TICK_NS {
        s.platform.now.fetch_add(TICK_NS, Ordering::Relaxed);
        if s.tick(cpu_id(3)) != sched::Resched::None {
            switch(&s, 3, PrevAction::Stays);
        }
    }
    let curr = s.cpu_rq(cpu_id(3)).curr().unwrap();
    let queued = if curr == TaskId(1) {
        TaskId(2)
    } else {
        TaskId(1)
    };
    for id in [curr, queued] {
        let u = s.cpu_rq(cpu_id(3)).task(id).unwrap().se.avg.task_util_est();
        assert!(!s.util_fits_cpu(u, cpu_id(3)), "task {} util {u}", id.0);
    }
    assert_ne!(s.misfit_task_load(cpu_id(3)), 0);
    let p = s.load_balance(cpu_id(0), false);
    assert_eq!(p.ids(), &[queued]);
    assert!(!p.active_balance());
    assert_eq!(p.from_cpu(), cpu_id(3));
    assert!(s.cpu_rq(cpu_id(0)).task(queued).is_some());
    assert_eq!(s.cpu_rq(cpu_id(3)).curr(), Some(curr));
}

/// `nohz_balancer_kick`'s misfit case (`check_misfit_status`): a busy
/// CPU running one task asks for a kick only once that task is a misfit
/// (`rq->misfit_task_load`); any tickless CPU is kicked then
/// (`find_new_ilb`, `sched/tests/nohz_misfit.rs`), since it balances for
/// every tickless CPU. Two tasks ask for one as before; on equal CPUs one
/// task never does.
#[test]
fn a_misfit_asks_for_a_kick() {
    let s = machine(big_little());
    // One task on CPU 3, not yet a misfit: no kick.
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(3));
    s.spawn(TaskId(1), t, cpu_id(3)).unwrap();
    switch(&s, 3, PrevAction::Stays);
    assert!(!s.nohz_kick_wanted(cpu_id(3), 1));
    assert!(s.nohz_kick_wanted(cpu_id(3), 2), "two tasks");
    assert!(s.set_cpus_allowed(cpu_id(3), TaskId(1), CpuMask::first_n(4), cpu_id(3)));
    run(&s, 3, 100);
    assert_ne!(s.misfit_task_load(cpu_id(3)), 0);
    assert!(s.nohz_kick_wanted(cpu_id(3), 1));
    // The kicked big CPU's own (newly idle) balance pulls it.
    let p = s.load_balance(cpu_id(0), true);
    assert!(p.active_balance());
    assert_eq!(switch(&s, 3, PrevAction::Stays), Some(cpu_id(0)));
    switch(&s, 0, PrevAction::Stays);
    assert_eq!(s.misfit_task_load(cpu_id(3)), 0);
    assert!(!s.nohz_kick_wanted(cpu_id(0), 1), "no misfit on a big CPU");

    // Equal CPUs: the same CPU-bound task never asks for a kick.
    let s = machine(Topology::flat(4));
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(3));
    s.spawn(TaskId(1), t, cpu_id(3)).unwrap();
    switch(&s, 3, PrevAction::Stays);
    assert!(s.set_cpus_allowed(cpu_id(3), TaskId(1), CpuMask::first_n(4), cpu_id(3)));
    run(&s, 3, 100);
    assert_eq!(s.misfit_task_load(cpu_id(3)), 0);
    assert!(!s.nohz_kick_wanted(cpu_id(3), 1));
}
