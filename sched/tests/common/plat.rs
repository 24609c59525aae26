//! A host [`Platform`] for multi-CPU tests: a virtual clock the test advances,
//! reschedule IPIs counted per CPU, and the CPUs the last wakeup's idle
//! search looked at.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::sync::Arc;

use sched::smp::{Platform, Scheduler};
use sched::{SchedConfig, Topology, MAX_CPUS};

pub struct Plat {
    /// Reschedule IPIs sent to each CPU.
    pub ipis: Vec<AtomicU64>,
    /// The virtual clock, ns.
    pub now: AtomicU64,
    /// CPUs the last `select_idle_sibling` looked at ([`Platform::idle_scan`]).
    pub visited: AtomicU64,
    /// What [`Platform::schedstat_enabled`] answers (on by default).
    pub schedstats: AtomicBool,
}

impl Default for Plat {
    fn default() -> Self {
        Plat {
            ipis: (0..MAX_CPUS).map(|_| AtomicU64::new(0)).collect(),
            now: AtomicU64::new(0),
            visited: AtomicU64::new(0),
            schedstats: AtomicBool::new(true),
        }
    }
}

impl Platform for Plat {
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
    fn irq_save(&self) -> bool {
        false
    }
    fn irq_restore(&self, _: bool) {}
    fn send_resched_ipi(&self, cpu: sched::CpuId) {
        self.ipis[cpu.index()].fetch_add(1, Ordering::Relaxed);
    }
    fn idle_scan(&self, cpus_visited: usize) {
        self.visited.store(cpus_visited as u64, Ordering::Relaxed);
    }
    fn schedstat_enabled(&self) -> bool {
        self.schedstats.load(Ordering::Relaxed)
    }
}

/// A scheduler for `topo` at 250 Hz, task ids below 64, the clock at 1 s
/// (far from 0, so tasks that never ran are cache-cold everywhere).
pub fn machine(topo: Topology) -> Scheduler<Plat> {
    machine_hz(topo, 250)
}

/// [`machine`] at `hz`.
pub fn machine_hz(topo: Topology, hz: u32) -> Scheduler<Plat> {
    let n = topo.nr_cpus() as u32;
    let cfg = Arc::new(SchedConfig::new(n, hz));
    let s = Scheduler::with_topology(Plat::default(), cfg, topo, 64);
    s.platform.now.store(1_000 * super::MS, Ordering::Relaxed);
    s
}

/// Tasks runnable on `cpu`.
pub fn nr(s: &Scheduler<Plat>, cpu: usize) -> u32 {
    s.cpu_rq(super::cpu_id(cpu)).nr_runnable()
}

/// One `schedule` on `cpu` with `prev` treated as `a`, then its
/// `finish_switch`: where a misplaced previous task went, if anywhere.
pub fn switch(s: &Scheduler<Plat>, cpu: usize, a: sched::PrevAction) -> Option<sched::CpuId> {
    let sw = {
        let mut rq = s.cpu_rq(super::cpu_id(cpu));
        s.schedule(&mut rq, a)
    };
    s.finish_switch(super::cpu_id(cpu), &sw)
}

/// `ms` of 250 Hz ticks on `cpu`, the clock advanced 4 ms before each.
pub fn run_ticks(s: &Scheduler<Plat>, cpu: usize, ms: u64) {
    const TICK_NS: u64 = 4 * super::MS;
    for _ in 0..ms * super::MS / TICK_NS {
        s.platform.now.fetch_add(TICK_NS, Ordering::Relaxed);
        s.tick(super::cpu_id(cpu));
    }
}

/// Spawns task `id` on `cpu` through the scheduler (so that a balancer's
/// push can move it) and lets it run on every CPU unless `pinned`; if
/// `cpu` ran nothing, it runs now.
pub fn spawn_on(s: &Scheduler<Plat>, id: u32, cpu: usize, pinned: bool) {
    let on = sched::CpuId::new(cpu).unwrap();
    let mut t = sched::SchedTask::new(sched::TaskParams::default());
    t.cpus_allowed = sched::CpuMask::of(on);
    let (at, _) = s.spawn(sched::TaskId(id), t, on).unwrap();
    assert_eq!(at, on);
    if !pinned {
        let all = sched::CpuMask::first_n(s.nr_cpus());
        assert!(s.set_cpus_allowed(on, sched::TaskId(id), all, on));
    }
    if s.cpu_rq(on).curr().is_none() {
        switch(s, cpu, sched::PrevAction::Stays);
    }
    assert!(s.cpu_rq(on).task(sched::TaskId(id)).is_some());
}

/// Puts `n` new tasks on `cpu` (never run, so cache-cold), ids from
/// `*next`; with `pinned`, each may run only there. The first one runs.
pub fn load_cpu(s: &Scheduler<Plat>, cpu: sched::CpuId, n: u32, next: &mut u32, pinned: bool) {
    let allowed = pinned.then(|| sched::CpuMask::of(cpu));
    load_cpu_as(s, cpu, n, next, sched::TaskParams::default(), allowed);
}

/// [`load_cpu`] with tasks of `params`, each allowed on `allowed` (`None`:
/// every CPU).
pub fn load_cpu_as(
    s: &Scheduler<Plat>,
    cpu: sched::CpuId,
    n: u32,
    next: &mut u32,
    params: sched::TaskParams,
    allowed: Option<sched::CpuMask>,
) {
    let now = s.platform.now_ns();
    let mut rq = s.cpu_rq(cpu);
    rq.update_rq_clock(now);
    for _ in 0..n {
        let mut t = sched::SchedTask::new(params);
        t.cpu = cpu;
        if let Some(mask) = allowed {
            t.cpus_allowed = mask;
        }
        rq.wake_up_new_task(sched::TaskId(*next), t);
        *next += 1;
    }
    if rq.curr().is_none() {
        rq.pick_next_task();
    }
}

/// Puts `n` new tasks on `cpu` (ids from `*next`) and runs them in 50 µs
/// turns from the platform's clock until each has run; returns the
/// runqueue clock at the last turn (the platform's clock is left as it
/// was).
pub fn run_each_in_turns(s: &Scheduler<Plat>, cpu: sched::CpuId, n: u32, next: &mut u32) -> u64 {
    let mut now = s.platform.now_ns();
    let mut rq = s.cpu_rq(cpu);
    rq.update_rq_clock(now);
    let first = *next;
    for _ in 0..n {
        rq.wake_up_new_task(
            sched::TaskId(*next),
            sched::SchedTask::new(sched::TaskParams::default()),
        );
        *next += 1;
    }
    let ran = |rq: &sched::Rq| {
        (first..*next).all(|id| rq.task(sched::TaskId(id)).unwrap().se.exec_start > 0)
    };
    while !ran(&rq) {
        now += 50_000;
        rq.update_rq_clock(now);
        rq.resched_curr(sched::Resched::Now);
        rq.pick_next_task();
    }
    now
}
