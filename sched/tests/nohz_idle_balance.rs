//! The idle load balancer (Linux 7.2's `nohz_balancer_kick` and
//! `_nohz_idle_balance`, kernel/sched/fair.c): a busy CPU kicks a CPU in
//! tickless idle when more than one CPU of its LLC is busy
//! (`sd_balance_shared->nr_busy_cpus > 1`), once a tickless CPU's periodic
//! balance is due (`nohz.next_balance`); the kicked CPU runs the periodic
//! balance with idle semantics for each tickless idle CPU whose
//! `next_balance` has come (`sched_balance_domains(rq, CPU_IDLE)`), which
//! counts failed passes, so the active balance can spread two tasks packed
//! on the threads of one core while the other core is tickless.

use crate::common;
use common::cpu_id;

use common::plat::{machine, nr, switch, Plat};
use common::MS;
use sched::smp::Scheduler;
use sched::{CpuMask, PrevAction, SchedTask, TaskId, TaskParams, Topology};
use std::sync::atomic::Ordering;

const TICK_NS: u64 = 4 * MS;

/// Task `id` spawned on `cpu`, then allowed every CPU; it runs there.
fn spawn_on(s: &Scheduler<Plat>, id: u32, cpu: usize) {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(cpu));
    s.spawn(TaskId(id), t, cpu_id(cpu)).unwrap();
    let all = CpuMask::first_n(s.nr_cpus());
    assert!(s.set_cpus_allowed(cpu_id(cpu), TaskId(id), all, cpu_id(cpu)));
    switch(s, cpu, PrevAction::Stays);
    assert_eq!(s.cpu_rq(cpu_id(cpu)).curr(), Some(TaskId(id)));
}

/// Two cores {0, 1} and {2, 3} of one LLC; the tasks run on `busy`, the
/// other CPUs are in tickless idle.
fn machine_with(busy: &[usize]) -> (Scheduler<Plat>, CpuMask) {
    let s = machine(Topology::uniform(4, 2, 2, 1).unwrap());
    for (k, &c) in busy.iter().enumerate() {
        spawn_on(&s, k as u32 + 1, c);
    }
    let mut nohz = CpuMask::first_n(4);
    for &c in busy {
        nohz.remove(cpu_id(c));
    }
    (s, nohz)
}

/// What the kernel does from the busy CPUs' ticks over `ticks` ticks: each
/// busy CPU ticks and runs its own periodic balance; each CPU whose turn it
/// is (every tick here, the strictest rate) asks
/// [`Scheduler::nohz_llc_kick_wanted`] and, if so, the first tickless CPU
/// runs [`Scheduler::nohz_idle_balance`]; a push asked for lands at the
/// source's next switch, the destination then leaves tickless idle.
/// Returns the kicks sent, stopping early once `done` holds.
fn run(
    s: &Scheduler<Plat>,
    nohz: &mut CpuMask,
    ticks: u32,
    done: impl Fn(&Scheduler<Plat>) -> bool,
) -> u32 {
    let mut kicks = 0;
    for _ in 0..ticks {
        let now = s.platform.now.fetch_add(TICK_NS, Ordering::Relaxed) + TICK_NS;
        for c in 0..4 {
            if nohz.has(cpu_id(c)) || s.cpu_rq(cpu_id(c)).curr().is_none() {
                continue;
            }
            s.tick(cpu_id(c));
            let p = s.rebalance_domains(cpu_id(c), now);
            assert!(p.is_empty() && !p.active_balance(), "busy cpu {c} pulled");
            let nr_running = s.cpu_rq(cpu_id(c)).nr_running();
            assert!(!s.nohz_kick_wanted(cpu_id(c), nr_running));
            if !s.nohz_llc_kick_wanted(cpu_id(c), nohz, now) {
                continue;
            }
            kicks += 1;
            let ilb = nohz.first_cpu().unwrap();
            let mut pushes = Vec::new();
            s.nohz_idle_balance(ilb, nohz, now, |to, p| {
                assert!(p.is_empty(), "a lone running task is never detached");
                if p.active_balance() {
                    pushes.push((p.from_cpu(), to));
                }
                true
            });
            for (from, to) in pushes {
                assert_eq!(switch(s, from.index(), PrevAction::Stays), Some(to));
                switch(s, to.index(), PrevAction::Stays);
                nohz.remove(to);
                nohz.add(from);
            }
            if done(s) {
                return kicks;
            }
        }
    }
    kicks
}

fn spread(s: &Scheduler<Plat>) -> bool {
    nr(s, 0) + nr(s, 1) == 1 && nr(s, 2) + nr(s, 3) == 1
}

/// Two CPU hogs on the two threads of core {0, 1}, core {2, 3} tickless:
/// with one task per CPU no busy CPU has a task to spare
/// (`nohz_kick_wanted` says no, and a newly idle pass counts no failure),
/// but two CPUs of the LLC are busy, so the idle load balancer is kicked;
/// CPU 2's periodic MC pass fails `cache_nice_tries + 3` = 4 times and
/// then pushes one task to its core. The kicks are bounded: one per tick
/// while the MC level's idle interval (4 ms, one tick) keeps it due.
#[test]
fn packed_smt_siblings_spread_to_a_tickless_core() {
    let (s, mut nohz) = machine_with(&[0, 1]);
    assert_eq!(s.domains(cpu_id(2))[1].cache_nice_tries, 1);
    // The old kick's pass alone (newly idle) never moves them.
    s.cfg.features.set(sched::Feature::NiRandom, false);
    for _ in 0..20 {
        let p = s.load_balance(cpu_id(2), true);
        assert!(p.is_empty() && !p.active_balance());
    }
    assert_eq!(s.nr_balance_failed(cpu_id(2), 1), 0);
    let kicks = run(&s, &mut nohz, 50, spread);
    assert!(spread(&s), "not spread after {kicks} kicks");
    assert!((4..=8).contains(&kicks), "{kicks} kicks");
    assert_eq!(nohz.weight(), 2);
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).unwrap();
}

/// One busy CPU in the LLC: no kick for balancing (`nr_busy_cpus` 1).
#[test]
fn one_busy_cpu_kicks_nobody() {
    let (s, mut nohz) = machine_with(&[0]);
    let now = s.platform.now.load(Ordering::Relaxed) + 100 * MS;
    assert!(s.nohz_next_balance_due(&nohz, now));
    assert!(!s.nohz_llc_kick_wanted(cpu_id(0), &nohz, now));
    assert_eq!(run(&s, &mut nohz, 50, |_| false), 0);
}

/// Already spread (CPUs 0 and 2 busy, 1 and 3 tickless): two CPUs of the
/// LLC are busy, so kicks come, but each pass finds the levels balanced
/// and nothing moves. The rate limit holds the kicks to one a tick for the
/// whole machine (not one per busy CPU): the tickless CPUs' idle intervals
/// at 250 Hz are a tick or two (SMT: 2-4 ms, MC: 4-8 ms), so
/// `next_balance` is due again at most a tick or two later, as in Linux.
#[test]
fn spread_tasks_are_left_alone_and_the_kicks_are_rate_limited() {
    let (s, mut nohz) = machine_with(&[0, 2]);
    let kicks = run(&s, &mut nohz, 100, |_| false);
    assert!(kicks >= 50, "{kicks} kicks");
    assert!(kicks <= 100, "{kicks} kicks for 100 ticks of two busy CPUs");
    assert_eq!((nr(&s, 0), nr(&s, 1), nr(&s, 2), nr(&s, 3)), (1, 0, 1, 0));
    assert_eq!(s.nr_balance_failed(cpu_id(1), 1), 0);
}

/// The rate limit: right after the kicked CPU's pass, the tickless CPUs'
/// `next_balance` lies ahead, so no second kick in the same tick.
#[test]
fn no_second_kick_before_next_balance() {
    let (s, nohz) = machine_with(&[0, 1]);
    let now = s.platform.now.load(Ordering::Relaxed) + 10 * TICK_NS;
    s.platform.now.store(now, Ordering::Relaxed);
    assert!(s.nohz_llc_kick_wanted(cpu_id(0), &nohz, now));
    s.nohz_idle_balance(cpu_id(2), &nohz, now, |_, _| true);
    assert!(!s.nohz_next_balance_due(&nohz, now));
    assert!(!s.nohz_llc_kick_wanted(cpu_id(0), &nohz, now));
    assert!(!s.nohz_llc_kick_wanted(cpu_id(1), &nohz, now));
    assert!(s.nr_balance_failed(cpu_id(2), 1) == 1);
}

/// CPUs of unequal capacity: only misfits kick (Linux skips the LLC test
/// when there is an `sd_asym_cpucapacity` domain).
#[test]
fn no_llc_kick_on_a_machine_of_unequal_cpus() {
    let s = machine(
        Topology::flat(4)
            .with_capacities(&[1024, 1024, 512, 512])
            .unwrap(),
    );
    let nohz = CpuMask::from_cpus(&[2, 3]);
    let now = s.platform.now.load(Ordering::Relaxed) + 100 * MS;
    assert!(s.nohz_next_balance_due(&nohz, now));
    assert!(!s.nohz_llc_kick_wanted(cpu_id(0), &nohz, now));
}
