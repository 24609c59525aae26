//! Task groups and load balancing on four CPUs, nothing pinned: group A
//! with one spinner, group B with ten, placed as the kernel places new
//! threads (fork balancing from CPU 0) and balanced as the kernel does (a
//! periodic pass every fourth tick of its 250 Hz, staggered by CPU, a
//! newidle pass each time a CPU is about to idle, tickless idle CPUs kicked
//! by busy ones to run as the idle load balancer, as the kernel's have
//! since its kick stopped asking for a newidle pass).
//! Eleven spinners on four CPUs leave no CPU a reason to idle, and A's lone
//! spinner can use at most one CPU of four, whatever the weights: a quarter
//! of the machine (the `*_4cpu_free` rows of the Linux comparison,
//! docs/results/linux/groups.md, "Task groups: cpu.weight shares").
//!
//! Balanced by task counts alone, the machine settles at 3, 3, 3, 2 tasks
//! with A's spinner sharing its CPU with two of B's: it got 83% of that
//! CPU at equal weights (A 20.8% of the machine) and 62.5% at 100:300
//! (15.6%), as ours' kernel did (83.2% and 62.3%). With `migrate_load` and
//! `task_h_load` (Linux's `calculate_imbalance` and `detach_tasks`), B's
//! spinners leave A's CPU; at 100:300 a B spinner left on A's CPU is
//! heavier than the load imbalance and leaves only because failed passes
//! halve its load (`nr_balance_failed`).
//!
//! The tick rate is the kernel's, not a convenient 1 ms: each periodic pass
//! of A's CPU may pull a B spinner, since that CPU sits at the machine's
//! average load and the poller's load tips it under now and then (without
//! the poller A's CPU pulled once in 3 s); each such visitor takes about
//! one request from A (2.1 ms, run to the next tick) before another CPU's
//! pass takes it back. Ticking at 1000 Hz, the harness balanced every 4 ms,
//! not every 16 as the kernel does, and at 100:300 a B spinner came to A's
//! CPU 126 times in 3 s (2.9 ms of A's time each): A had 87.9% of its CPU,
//! 21.99% of the machine, and 21.87-22.51% when started 37-185 µs later.
//! At 250 Hz: 48 visits (3.9 ms each), A 93.7% of its CPU, 23.46% at every
//! start offset tried (0-2.5 ms); ours' kernel gets 91% of its CPU
//! (23.50-23.65%), Linux 88-94% (22.61-23.75%). Left out: HRTICK (the
//! kernel ends a request between ticks, the harness at the tick); fired at
//! the first 1 ms step after it was due, it gave A 23.16%.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common;
use common::cpu_id;
use common::plat::Plat;

use sched::fair::group::GroupId;
use sched::smp::{Platform, Scheduler};
use sched::{CpuMask, PrevAction, Resched, SchedConfig, SchedTask, TaskId, TaskParams, WakeFlags};

use crate::common::MS;
const NCPUS: usize = 4;
/// The kernel's tick rate (its default `hz=`, at which the Linux comparison
/// ran both kernels; Linux's there is `CONFIG_HZ=250` too).
const HZ: u32 = 250;
/// Milliseconds between two ticks of a CPU.
const TICK_MS: u64 = 1000 / HZ as u64;
/// The kernel's nohz kick runs every this many ticks (its
/// `BALANCE_TICKS`: 16 ms at 250 Hz), staggered by CPU number; its
/// periodic balance is asked at every tick and runs when a level's
/// interval has passed (`Scheduler::rebalance_domains`).
const BALANCE_TICKS: u64 = 4;

/// The kernel's idle and balancing state of the machine: the time in ms,
/// which CPUs are tickless (an idle CPU but CPU 0 stops its tick, and then
/// balances only when a busy CPU's balancing tick kicks it:
/// `nohz_balance_kick`), which were kicked, and each CPU's idle time.
struct Machine {
    s: Scheduler<Plat>,
    ms: u64,
    tickless: [bool; NCPUS],
    kicked: [bool; NCPUS],
    idle_ms: [u64; NCPUS],
    /// A root-level task woken from CPU 0 every 10 ms that sleeps as soon
    /// as it runs (the kernel's pollers: the shell, the job's leader).
    poller: Option<u32>,
}

impl Machine {
    fn new() -> Self {
        let cfg = Arc::new(SchedConfig::new(NCPUS as u32, HZ));
        let s = Scheduler::new(Plat::default(), cfg, NCPUS, 64);
        s.platform.now.store(1_000 * MS, Ordering::Relaxed);
        Machine {
            s,
            ms: 0,
            tickless: [false; NCPUS],
            kicked: [false; NCPUS],
            idle_ms: [0; NCPUS],
            poller: None,
        }
    }

    fn switch(&mut self, c: usize, action: PrevAction) {
        let s = &self.s;
        let cpu = cpu_id(c);
        let sw = {
            let mut rq = s.cpu_rq(cpu);
            s.schedule(&mut rq, action)
        };
        s.finish_switch(cpu, &sw);
        if sw.next.is_some() {
            self.tickless[c] = false;
        } else if sw.prev.is_some() {
            // The idle thread switched in: one newidle balance.
            self.newidle(c);
        }
    }

    /// The idle thread's newidle balance; if it pulled, the switch to the
    /// pulled task; if not, this CPU halts (tickless but CPU 0).
    fn newidle(&mut self, c: usize) {
        if !self.s.load_balance(cpu_id(c), true).is_empty() {
            self.switch(c, PrevAction::Stays);
        } else {
            self.tickless[c] = c != 0;
        }
    }

    /// The poller, if it runs on CPU `c`, sleeps at once.
    fn poller_sleeps(&mut self, c: usize) {
        let curr = self.s.cpu_rq(cpu_id(c)).curr();
        if curr.is_some() && curr.map(|t| t.0) == self.poller {
            self.switch(c, PrevAction::Sleeps);
        }
    }

    /// The CPUs in tickless idle.
    fn nohz_mask(&self) -> CpuMask {
        let mut nohz = CpuMask::new();
        for c in (0..NCPUS).filter(|&c| self.tickless[c]) {
            nohz.set(c);
        }
        nohz
    }

    /// `nohz_balance_kick` from busy CPU `c`: if `c` runs two tasks or
    /// more (`Scheduler::nohz_kick_wanted`), or else more than one CPU of
    /// the LLC is busy and a tickless CPU's periodic balance is due
    /// (`Scheduler::nohz_llc_kick_wanted`), the first tickless CPU
    /// (`Scheduler::find_new_ilb`) is kicked as the idle load balancer
    /// (one kick pending a CPU).
    fn nohz_kick(&mut self, c: usize) {
        let nr = self.s.cpu_rq(cpu_id(c)).nr_running();
        let nohz = self.nohz_mask();
        let now = self.s.platform.now_ns();
        if let Some((ilb, _)) = self.s.nohz_kick_target(cpu_id(c), nr, &nohz, now) {
            self.kicked[ilb.index()] = true;
        }
    }

    /// The kicked CPU `ilb` runs as the idle load balancer
    /// (`tick::nohz_idle_balance`, Linux's `_nohz_idle_balance`): the
    /// periodic idle balance of each tickless CPU that is due, `ilb` last;
    /// a CPU that pulled switches to what it pulled.
    fn idle_load_balance(&mut self, ilb: usize) {
        let nohz = self.nohz_mask();
        let mut got = [false; NCPUS];
        let now = self.s.platform.now_ns();
        self.s
            .nohz_idle_balance(cpu_id(ilb), &nohz, now, |c, pulled| {
                got[c.index()] |= !pulled.is_empty();
                true
            });
        for c in (0..NCPUS).filter(|&c| got[c]) {
            self.switch(c, PrevAction::Stays);
        }
    }

    /// `ms` milliseconds, in steps of one: each step, on each CPU, queued
    /// wakeups and a switch when asked to (the interrupt's or IPI's exit);
    /// every [`TICK_MS`] on each CPU that ticks, the tick, the periodic
    /// balance (`rebalance_domains`: the levels whose interval passed) and
    /// the nohz kick every [`BALANCE_TICKS`] ticks; kicked CPUs run as the
    /// idle load balancer.
    fn run_ms(&mut self, ms: u64) {
        for _ in 0..ms {
            self.ms += 1;
            self.s.platform.now.fetch_add(MS, Ordering::Relaxed);
            if let Some(p) = self.poller.filter(|_| self.ms.is_multiple_of(10)) {
                let _ = self.s.wake(TaskId(p), WakeFlags::empty(), cpu_id(0));
            }
            let tick = self.ms.is_multiple_of(TICK_MS).then_some(self.ms / TICK_MS);
            for c in 0..NCPUS {
                let cpu = cpu_id(c);
                if self.s.has_pending_wakeups(cpu) {
                    let mut rq = self.s.cpu_rq(cpu);
                    self.s.sched_ttwu_pending(&mut rq);
                }
                if self.kicked[c] {
                    self.kicked[c] = false;
                    self.idle_load_balance(c);
                }
                let Some(ticks) = tick.filter(|_| !self.tickless[c]) else {
                    if self.s.cpu_rq(cpu).need_resched() != Resched::None {
                        self.switch(c, PrevAction::Stays);
                    }
                    self.poller_sleeps(c);
                    if self.s.cpu_rq(cpu).curr().is_none() {
                        self.idle_ms[c] += 1;
                    }
                    continue;
                };
                let r = self.s.tick(cpu);
                self.s.rebalance_domains(cpu, self.s.platform.now_ns());
                if (ticks + c as u64).is_multiple_of(BALANCE_TICKS) {
                    self.nohz_kick(c);
                }
                let idle = self.s.cpu_rq(cpu).curr().is_none();
                if r != Resched::None || self.s.cpu_rq(cpu).need_resched() != Resched::None {
                    self.switch(c, PrevAction::Stays);
                } else if idle {
                    self.newidle(c);
                }
                self.poller_sleeps(c);
                if self.s.cpu_rq(cpu).curr().is_none() {
                    self.idle_ms[c] += 1;
                }
            }
        }
        let mut scratch = self.s.check_scratch();
        self.s.check(&mut scratch).unwrap();
    }
}

fn runtime(s: &Scheduler<Plat>, id: u32) -> u64 {
    s.task(TaskId(id), cpu_id(0)).unwrap().se.sum_exec_runtime
}

/// One spinner (task 1) in A, ten (10..20) in B, as the kernel's `spin`
/// starts them: spawned from CPU 0, each sleeps at once, is attached to its
/// group asleep, and all wake together from their timers (on the CPU each
/// slept on), beside a root-level task woken every 10 ms that sleeps at once
/// (the kernel's pollers: the shell, the job's leader); then `ms` of
/// spinning from the wakeup (as spin's report counts): A's share of the
/// spinners' time and each CPU's idle time.
fn one_against_ten(weight_a: u32, weight_b: u32, ms: u64) -> (f64, [u64; NCPUS]) {
    let mut m = Machine::new();
    let a = m.s.create_task_group(GroupId::ROOT, weight_a).unwrap();
    let b = m.s.create_task_group(GroupId::ROOT, weight_b).unwrap();
    let ids: Vec<u32> = [1].into_iter().chain(10..20).collect();
    for &id in &ids {
        m.s.spawn(TaskId(id), SchedTask::new(TaskParams::default()), cpu_id(0))
            .unwrap();
    }
    // Each runs for the first time and sleeps.
    let mut slept_on = [0usize; 64];
    let mut asleep = 0;
    while asleep < ids.len() {
        for c in 0..NCPUS {
            let curr = m.s.cpu_rq(cpu_id(c)).curr();
            if let Some(id) = curr {
                slept_on[id.0 as usize] = c;
                asleep += 1;
                m.switch(c, PrevAction::Sleeps);
            }
        }
        m.run_ms(1);
    }
    for &id in &ids {
        let g = if id == 1 { a } else { b };
        m.s.sched_move_task(TaskId(id), g, cpu_id(0)).unwrap();
    }
    m.run_ms(3);
    m.s.spawn(TaskId(30), SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    m.poller = Some(30);
    for &id in &ids {
        let c = slept_on[id as usize];
        m.s.wake(TaskId(id), WakeFlags::IRQ, cpu_id(c)).unwrap();
    }
    // Each timer's interrupt exit switches at once, not at the next
    // millisecond step: a switch after a wakeup's immediate request skips
    // its clock update (`rq_clock_skip_update`), so a late switch would
    // charge the wakee the step's idle time.
    for c in 0..NCPUS {
        if m.s.cpu_rq(cpu_id(c)).need_resched() != Resched::None {
            m.switch(c, PrevAction::Stays);
        }
    }
    let r0: Vec<u64> = ids.iter().map(|&i| runtime(&m.s, i)).collect();
    m.idle_ms = [0; NCPUS];
    m.run_ms(ms);
    let d: Vec<u64> = ids
        .iter()
        .zip(&r0)
        .map(|(&i, &r)| runtime(&m.s, i) - r)
        .collect();
    let total: u64 = d.iter().sum();
    let per_cpu: Vec<u32> = (0..NCPUS)
        .map(|c| m.s.cpu_rq(cpu_id(c)).nr_running())
        .collect();
    eprintln!(
        "busy {:.4} of the machine; tasks per CPU {per_cpu:?}; A on CPU {:?}; runtimes ms {:?}",
        total as f64 / (ms * MS * NCPUS as u64) as f64,
        m.s.task_cpu(TaskId(1)),
        d.iter().map(|x| x / MS).collect::<Vec<_>>()
    );
    (d[0] as f64 / total as f64, m.idle_ms)
}

/// A's share must be a quarter within `bound` (the Linux comparison's
/// bound for the row: ±1.5 points at equal weights, ±3 at 100:300).
fn check_one_against_ten(weight_a: u32, weight_b: u32, bound: f64) {
    // Under Miri 500 ms (a sixth of the run; the bounds unchanged), as the
    // other smp targets shrink their runs there.
    let ms = if cfg!(miri) { 500 } else { 3000 };
    let (share_a, idle_ms) = one_against_ten(weight_a, weight_b, ms);
    let idle: u64 = idle_ms.iter().sum();
    eprintln!("A:B {weight_a}:{weight_b}: A's share {share_a:.4}, idle ms per CPU {idle_ms:?}");
    // Eleven runnable spinners on four CPUs: no CPU should idle beyond a
    // few balancing intervals' worth (1% of the machine's time).
    assert!(
        idle * 100 <= ms * NCPUS as u64,
        "CPUs idle {idle_ms:?} ms of {ms} each beside 11 runnable spinners"
    );
    // A's spinner keeps most of its CPU: a quarter of the machine.
    assert!(
        (share_a - 0.25).abs() <= bound,
        "A got {share_a:.4} of the machine, want 0.25 ± {bound}"
    );
}

#[test]
fn lone_spinner_keeps_its_cpu_beside_ten_equal_weights() {
    check_one_against_ten(100, 100, 0.015);
}

#[test]
fn lone_spinner_keeps_its_cpu_beside_ten_weights_1_to_3() {
    check_one_against_ten(100, 300, 0.03);
}

/// A machine running A's spinner (task 1) and B's (the others) at equal
/// weights, each pinned to the CPU `start` names, running.
fn pinned_at_equal_weights(start: &[(u32, usize)]) -> Machine {
    let mut m = Machine::new();
    let a = m.s.create_task_group(GroupId::ROOT, 100).unwrap();
    let b = m.s.create_task_group(GroupId::ROOT, 100).unwrap();
    for &(id, c) in start {
        let mut t = SchedTask::new(TaskParams::default());
        t.cpus_allowed = CpuMask::of(cpu_id(c));
        m.s.spawn(TaskId(id), t, cpu_id(0)).unwrap();
        let g = if id == 1 { a } else { b };
        m.s.sched_move_task(TaskId(id), g, cpu_id(0)).unwrap();
    }
    for c in 0..NCPUS {
        if m.s.cpu_rq(cpu_id(c)).need_resched() != Resched::None {
            m.switch(c, PrevAction::Stays);
        }
    }
    m
}

/// B's spinners left where the row's seed-1 boot of ours' kernel left them
/// after the periodic balance took Linux's cadence: A's spinner alone on
/// CPU 0, and B's 1, 4 and 5 on CPUs 1, 2 and 3 (pinned there for 1 s, so
/// their PELT loads settle, then free). At equal weights A's CPU carries
/// twice the load of any of B's (its group's whole share against a tenth of
/// B's per spinner), so no CPU of B's is above the machine's average load:
/// Linux's `calculate_imbalance` still pulls there (its unsigned `busiest -
/// average` wraps and the minimum takes the local side, up to the
/// average), and B's spinners spread: 704-1 316 ms each of 3 000. Taking
/// the busiest side (nothing) left the lone B spinner alone until another
/// CPU's count balance sent it a second one late in the run: 2 212 ms, the
/// other nine 676-1 072. Returns each B spinner's CPU time over `ms`.
fn b_spinners_from_1_4_5(ms: u64) -> Vec<u64> {
    let mut start = vec![(1u32, 0usize), (10, 1)];
    start.extend((11..15).map(|id| (id, 2)));
    start.extend((15..20).map(|id| (id, 3)));
    let mut m = pinned_at_equal_weights(&start);
    m.s.spawn(TaskId(30), SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    m.poller = Some(30);
    m.run_ms(1000);
    for &(id, c) in &start {
        assert_eq!(m.s.task_cpu(TaskId(id)), Some(cpu_id(c)));
        m.s.set_affinity(TaskId(id), CpuMask::first_n(NCPUS), cpu_id(0))
            .unwrap();
    }
    let r0: Vec<u64> = (10..20).map(|i| runtime(&m.s, i)).collect();
    let a0 = runtime(&m.s, 1);
    m.run_ms(ms);
    let d: Vec<u64> = (10..20)
        .zip(&r0)
        .map(|(i, &r)| runtime(&m.s, i) - r)
        .collect();
    let per_cpu: Vec<u32> = (0..NCPUS)
        .map(|c| m.s.cpu_rq(cpu_id(c)).nr_running())
        .collect();
    eprintln!(
        "from 1, 4, 5: tasks per CPU {per_cpu:?}; A {} ms; B ms {:?}",
        (runtime(&m.s, 1) - a0) / MS,
        d.iter().map(|x| x / MS).collect::<Vec<_>>()
    );
    d
}

/// Each B spinner gets within half of B's mean either way (at 4, 3, 3:
/// 750 and 1 000 ms of 3 000 against a mean of 900; Linux's boots of the
/// row: 661-1 095 ms).
#[test]
fn ten_spinners_beside_a_lone_one_spread_over_the_other_cpus() {
    let ms = if cfg!(miri) { 500 } else { 3000 };
    let d = b_spinners_from_1_4_5(ms);
    let mean = d.iter().sum::<u64>() / d.len() as u64;
    for (i, &x) in d.iter().enumerate() {
        assert!(
            x * 2 >= mean && x * 2 <= mean * 3,
            "B spinner {} ran {} ms, B's mean {} ms: {:?}",
            10 + i,
            x / MS,
            mean / MS,
            d.iter().map(|x| x / MS).collect::<Vec<_>>()
        );
    }
}

/// One periodic pass from a CPU running 3 of B's spinners against one
/// running 4 (A's lone spinner on CPU 0, PELT settled over 1 s pinned):
/// the imbalance is what brings the local CPU to the average, 205 of load
/// (512 − 307), and each of the busiest's B spinners counts 102 at first.
/// Linux's `detach_tasks` detaches as it goes: B's runqueue there loses
/// each detached task's `load_avg` at once while its `h_load` stays the
/// jiffy's, so the second counts 410 × 1024 / 3 073 = 136, more than the
/// 103 left, and one task moves (4, 3, 3 becomes 3, 4, 3). Counting every
/// candidate at the first one's weight moved two (2, 5, 3), and the
/// machine swung two spinners at a time between B's CPUs.
#[test]
fn a_load_pass_counts_later_tasks_of_a_group_heavier() {
    let mut start = vec![(1u32, 0usize)];
    start.extend((10..14).map(|id| (id, 1)));
    start.extend((14..17).map(|id| (id, 2)));
    start.extend((17..20).map(|id| (id, 3)));
    let mut m = pinned_at_equal_weights(&start);
    m.run_ms(1000);
    for &(id, _) in &start {
        m.s.set_affinity(TaskId(id), CpuMask::first_n(NCPUS), cpu_id(0))
            .unwrap();
    }
    let pulled = m.s.load_balance(cpu_id(2), false);
    let per_cpu: Vec<u32> = (0..NCPUS)
        .map(|c| m.s.cpu_rq(cpu_id(c)).nr_running())
        .collect();
    assert_eq!(pulled.from_cpu(), cpu_id(1));
    assert_eq!(pulled.len(), 1, "tasks per CPU after the pass: {per_cpu:?}");
    assert_eq!(per_cpu, [1, 3, 4, 3]);
}
