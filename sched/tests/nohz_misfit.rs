//! The idle load balancer kicked for a misfit (Linux 7.2's
//! `nohz_balancer_kick` with `check_misfit_status`, `find_new_ilb` and
//! `kick_ilb`, then `_nohz_idle_balance`, kernel/sched/fair.c): a busy CPU
//! running a misfit kicks the first tickless idle CPU whatever its
//! capacity, and that CPU's pass balances for every tickless CPU, so a big
//! one among them pulls the misfit even when the kicked one is little.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common;
use common::cpu_id;
use common::plat::{run_ticks, switch, Plat};
use common::MS;

use sched::smp::Scheduler;
use sched::{CpuId, CpuMask, PrevAction, SchedConfig, SchedTask, TaskId, TaskParams, Topology};

/// Two little CPUs first (0, 1: 512), then two big ones (2, 3: 1024), in
/// one LLC (one MC domain with SD_ASYM_CPUCAPACITY_FULL): the first
/// tickless CPU in CPU order is a little one whenever one is tickless.
fn little_big() -> Scheduler<Plat> {
    machine(
        Topology::flat(4)
            .with_capacities(&[512, 512, 1024, 1024])
            .unwrap(),
    )
}

/// The 4-CPU machine `topo` at 250 Hz, its clock at 1 s.
fn machine(topo: Topology) -> Scheduler<Plat> {
    let s = Scheduler::with_topology(
        Plat::default(),
        Arc::new(SchedConfig::new(4, 250)),
        topo,
        64,
    );
    s.platform.now.store(1_000 * MS, Ordering::Relaxed);
    s
}

/// The clock, after asserting that busy CPU `cpu` running `nr_running`
/// tasks kicks CPU 0 (the first of `nohz`) by its own tests, not the
/// LLC's.
fn kicks_cpu0(s: &Scheduler<Plat>, cpu: usize, nr_running: u32, nohz: &CpuMask) -> u64 {
    let now = s.platform.now.load(Ordering::Relaxed);
    assert_eq!(
        s.nohz_kick_target(cpu_id(cpu), nr_running, nohz, now),
        Some((cpu_id(0), false))
    );
    now
}

/// Task `id` running on `cpu`, pinned there.
fn occupy(s: &Scheduler<Plat>, cpu: usize, id: u32) {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(cpu));
    s.spawn(TaskId(id), t, cpu_id(cpu)).unwrap();
    switch(s, cpu, PrevAction::Stays);
}

/// A CPU-bound task (id 1) on little CPU 1, free to run anywhere, after
/// 100 ms there: a misfit (it no longer fits 512, and a big CPU exists).
fn misfit_on_cpu1(s: &Scheduler<Plat>) {
    occupy(s, 1, 1);
    let all = CpuMask::first_n(4);
    assert!(s.set_cpus_allowed(cpu_id(1), TaskId(1), all, cpu_id(1)));
    run_ticks(s, 1, 100);
    assert_ne!(s.misfit_task_load(cpu_id(1)), 0);
}

/// Kicked CPU 0's idle load balancer pass over `nohz` at `now`: the
/// active balances it asks for, (from, to); the misfit runs, so nothing
/// is detached directly.
fn ilb_pass(s: &Scheduler<Plat>, nohz: &CpuMask, now: u64) -> Vec<(CpuId, CpuId)> {
    let mut pushes = Vec::new();
    s.nohz_idle_balance(cpu_id(0), nohz, now, |to, p| {
        assert!(p.is_empty(), "the misfit runs: only an active balance");
        if p.active_balance() {
            pushes.push((p.from_cpu(), to));
        }
        true
    });
    pushes
}

/// Only a little CPU is tickless beside the misfit (the bigs are busy):
/// it is kicked all the same (the old rule kicked only a bigger CPU, so
/// nothing), and its pass, with no bigger CPU idle, moves nothing.
#[test]
fn a_misfit_kicks_a_lone_little_tickless_cpu() {
    let s = little_big();
    misfit_on_cpu1(&s);
    occupy(&s, 2, 2);
    occupy(&s, 3, 3);
    let nohz = CpuMask::of(cpu_id(0));
    let now = kicks_cpu0(&s, 1, 1, &nohz);
    assert_eq!(
        ilb_pass(&s, &nohz, now),
        [],
        "no CPU of more capacity is idle"
    );
    assert_ne!(s.misfit_task_load(cpu_id(1)), 0);
}

/// Little CPU 0 and big CPU 3 tickless, big CPU 2 busy: the kick goes to
/// CPU 0, the first tickless CPU (`find_new_ilb`; the old rule picked
/// CPU 3, the first bigger one after CPU 1), and CPU 0's pass runs CPU 3's
/// periodic idle balance first, which takes the misfit by active balance:
/// CPU 1's next switch hands it to CPU 3.
#[test]
fn a_little_idle_load_balancer_moves_the_misfit_to_a_tickless_big_cpu() {
    let s = little_big();
    misfit_on_cpu1(&s);
    occupy(&s, 2, 2);
    let mut nohz = CpuMask::of(cpu_id(0));
    nohz.add(cpu_id(3));
    let now = kicks_cpu0(&s, 1, 1, &nohz);
    assert_eq!(ilb_pass(&s, &nohz, now), [(cpu_id(1), cpu_id(3))]);
    assert_eq!(switch(&s, 1, PrevAction::Stays), Some(cpu_id(3)));
    switch(&s, 3, PrevAction::Stays);
    assert_eq!(s.cpu_rq(cpu_id(3)).curr(), Some(TaskId(1)));
    assert_eq!(s.misfit_task_load(cpu_id(1)), 0);
}

/// Two tasks on a busy CPU kick the first tickless CPU in CPU order too,
/// not the first after the busy one (`find_new_ilb` scans
/// `nohz.idle_cpus_mask` from CPU 0, skipping only the kicking CPU), and
/// on a machine of equal CPUs one task never kicks.
#[test]
fn the_kick_goes_to_the_first_tickless_cpu_in_cpu_order() {
    let s = machine(Topology::flat(4));
    occupy(&s, 2, 1);
    let mut nohz = CpuMask::first_n(4);
    nohz.remove(cpu_id(2));
    let now = s.platform.now.load(Ordering::Relaxed);
    assert_eq!(s.nohz_kick_target(cpu_id(2), 1, &nohz, now), None);
    occupy(&s, 2, 2);
    kicks_cpu0(&s, 2, 2, &nohz);
}

/// Linux asks `nohz.next_balance` before any reason to kick
/// (`time_before(now, nohz.next_balance)`): two tasks pinned to CPU 2 ask
/// for no kick while no tickless CPU's periodic balance is due (the kick
/// would find nothing to do), and for one again once a balance is due. A
/// CPU whose tick finds it idle kicks nobody (`rq->idle_balance`), even
/// with more than one CPU of its LLC not tickless.
#[test]
fn no_kick_before_a_tickless_balance_is_due_nor_from_an_idle_cpu() {
    let s = machine(Topology::flat(4));
    occupy(&s, 2, 1);
    occupy(&s, 2, 2);
    let mut nohz = CpuMask::first_n(4);
    nohz.remove(cpu_id(2));
    let now = kicks_cpu0(&s, 2, 2, &nohz);
    for c in [0, 1, 3] {
        let p = s.rebalance_domains(cpu_id(c), now);
        assert!(p.is_empty() && !p.active_balance(), "both tasks are pinned");
    }
    assert!(!s.nohz_next_balance_due(&nohz, now));
    assert_eq!(s.nohz_kick_target(cpu_id(2), 2, &nohz, now), None);
    let later = now + 1_000 * MS;
    assert!(s.nohz_next_balance_due(&nohz, later));
    assert_eq!(
        s.nohz_kick_target(cpu_id(2), 2, &nohz, later),
        Some((cpu_id(0), false))
    );
    // CPU 1 idle but ticking (as the kernel's CPU 0 is): CPUs 1 and 2 are
    // the LLC's busy ones by the mask, yet CPU 1 kicks nobody.
    nohz.remove(cpu_id(1));
    assert!(s.nohz_llc_kick_wanted(cpu_id(1), &nohz, later));
    assert_eq!(s.nohz_kick_target(cpu_id(1), 0, &nohz, later), None);
}
