//! SMT throughput sharing and idle states by depth (`sim/src/smt.rs`,
//! `sim/src/idle.rs`): each changes what it models and nothing else, keeps
//! a run deterministic and its CPU time conserved, and is off with its
//! switch (`--no-smt-share`, `--no-idle-states`).

use sim::engine::{Kernel, Metric, Next, Spawn, Workload};
use sim::machine::{Machine, SMT_BUSY_CAP};
use sim::workloads::HackbenchCfg;
use sim::{run_one, Config, RunResult, WorkSpec};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// A preset without switch costs or jitter (times exact), with the
/// mechanisms `off` switched off.
fn exact(preset: &str, off: &[&str]) -> Machine {
    let mut m = Machine::preset(preset).expect("preset");
    m.costs.switch_thread_ns = 0;
    m.costs.switch_process_ns = 0;
    m.sleep_ns = 0;
    m.tick_irq_ns = 0;
    m.hrtick_irq_ns = 0;
    m.ipi_irq_ns = 0;
    m.sock_sleep_ns = 0;
    m.costs.jitter_pct = 0;
    for f in off {
        m.mech.turn_off(f).expect("flag");
    }
    m
}

/// Tasks pinned to a CPU each with some work to do ((CPU, ns)); each
/// records when it exits.
struct Pinned {
    work: Vec<(u32, u64)>,
    /// The work a task has not started yet.
    unstarted: Vec<Option<u64>>,
    exit_ns: Vec<u64>,
}

impl Workload for Pinned {
    fn init(&mut self, k: &mut Kernel) {
        for &(cpu, ns) in &self.work {
            spawn_pinned(k, cpu);
            self.unstarted.push(Some(ns));
            self.exit_ns.push(0);
        }
    }
    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        match self.unstarted[tid as usize].take() {
            Some(ns) => Next::Run(ns),
            None => {
                self.exit_ns[tid as usize] = k.now;
                Next::Exit
            }
        }
    }
    fn metrics(&mut self, _: &Kernel) -> Vec<Metric> {
        Vec::new()
    }
}

/// When each task of `work` ((CPU, ns) each) exits.
fn pinned_exits(m: Machine, work: &[(u32, u64)]) -> Vec<u64> {
    let cfg = Config::parse("NO_NEXT_BUDDY")
        .build(m.topo.nr_cpus(), m.hz)
        .unwrap();
    let mut k = Kernel::new(m, cfg, work.len(), 1);
    let mut wl = Pinned {
        work: work.to_vec(),
        unstarted: Vec::new(),
        exit_ns: Vec::new(),
    };
    k.run(&mut wl, 1_000 * MS);
    wl.exit_ns
}

/// `work_ns` at the speed of a thread whose sibling is busy, rounded up.
fn shared_ns(work_ns: u64) -> u64 {
    (work_ns * 1024).div_ceil(SMT_BUSY_CAP as u64)
}

/// Two busy siblings (CPUs 0 and 1 of cascadelake-2s: one core) each run at
/// 666/1024 of a lone thread: 1 ms of work takes 1.5375 ms; on two cores
/// (CPUs 0 and 2) each takes its own time. With 2 ms on CPU 0 and 1 ms on
/// CPU 1, CPU 1's task exits at 1.5375 ms, and CPU 0's, which has done
/// 1 ms of work by then, does its second ms alone at full speed. With
/// `--no-smt-share` every thread runs at full speed. The idle states
/// do not enter into it (no task is woken), and epyc-ccx's cores are alike.
#[test]
fn busy_siblings_run_at_the_shared_speed() {
    let one = shared_ns(MS);
    assert_eq!(one, 1_537_538);
    for preset in ["cascadelake-2s", "epyc-ccx"] {
        let m = exact(preset, &[]);
        assert_eq!(pinned_exits(m.clone(), &[(0, MS), (1, MS)]), [one, one]);
        assert_eq!(pinned_exits(m.clone(), &[(0, MS), (2, MS)]), [MS, MS]);
        let e = pinned_exits(m.clone(), &[(0, 2 * MS), (1, MS)]);
        assert_eq!(e[1], one);
        // The charge at the sibling's exit rounds the work done down: at
        // most a nanosecond late.
        assert!((one + MS..=one + MS + 1).contains(&e[0]), "{e:?}");
        let own = exact(preset, &["--no-smt-share"]);
        assert_eq!(pinned_exits(own.clone(), &[(0, MS), (1, MS)]), [MS, MS]);
        assert_eq!(pinned_exits(own, &[(0, 2 * MS), (1, MS)]), [2 * MS, MS]);
    }
    // No SMT: nothing shared.
    let g = exact("graviton3", &[]);
    assert_eq!(pinned_exits(g, &[(0, MS), (1, MS)]), [MS, MS]);
}

/// Task 0 (CPU 0) wakes task 1 (CPU 2, another core) after each gap of
/// `GAPS`; task 1 blocks again at once and records when it runs. Its CPU's
/// idle periods are the gaps less the exit it paid before, and the state
/// each wakeup finds is the one the period before chose.
struct Waker {
    /// Task 1 has blocked once (its first step).
    blocked: bool,
    /// Task 0 has started.
    started: bool,
    woke_at: Vec<u64>,
    ran_at: Vec<u64>,
}

const GAPS: [u64; 6] = [MS, MS, 300 * US, 300 * US, 15 * US, 300 * US];

fn spawn_pinned(k: &mut Kernel, cpu: u32) {
    k.spawn(Spawn {
        pin: Some(cpu),
        ..Default::default()
    });
}

impl Workload for Waker {
    fn init(&mut self, k: &mut Kernel) {
        spawn_pinned(k, 0);
        spawn_pinned(k, 2);
    }
    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        if tid == 1 {
            if std::mem::replace(&mut self.blocked, true) {
                self.ran_at.push(k.now);
            }
            return if self.ran_at.len() < GAPS.len() {
                Next::Block
            } else {
                Next::Exit
            };
        }
        if std::mem::replace(&mut self.started, true) {
            self.woke_at.push(k.now);
            assert!(
                k.wake(1, false),
                "task 1 sleeps at wakeup {}",
                self.woke_at.len()
            );
        }
        match GAPS.get(self.woke_at.len()) {
            Some(&g) => Next::Run(g),
            None => Next::Exit,
        }
    }
    fn metrics(&mut self, _: &Kernel) -> Vec<Metric> {
        Vec::new()
    }
}

/// Each wakeup's latency (task 1 running, less the wakeup), ns.
fn wake_latencies(m: Machine) -> Vec<u64> {
    let cfg = Config::parse("NO_NEXT_BUDDY")
        .build(m.topo.nr_cpus(), m.hz)
        .unwrap();
    let mut k = Kernel::new(m, cfg, 2, 1);
    let mut wl = Waker {
        blocked: false,
        started: false,
        woke_at: Vec::new(),
        ran_at: Vec::new(),
    };
    k.run(&mut wl, 100 * MS);
    assert_eq!(wl.ran_at.len(), GAPS.len());
    wl.ran_at
        .iter()
        .zip(&wl.woke_at)
        .map(|(r, w)| r - w)
        .collect()
}

/// A CPU that slept long pays the deep exit, after a short sleep the
/// shallow one: the IPI's 1.5 µs plus the exit of the state the last idle
/// period chose. The first: C1E, after the 134.5 µs period that the spawn's
/// IPI ended (sent at 0 to CPU 2 in C6, idle since before the run, it came
/// after task 1 had blocked, and left the CPU idle); then C6 after 1 ms
/// twice, C1E after 167 µs and 290 µs, C1 after 5 µs. `--no-idle-states`:
/// C1's 2 µs every time, as graviton3 (no table of idle states).
#[test]
fn idle_exit_follows_the_state_the_last_idle_period_chose() {
    let m = exact("cascadelake-2s", &[]);
    let ipi = m.costs.ipi_ns;
    let exits = [10, 133, 133, 10, 10, 2].map(|us| ipi + us * US);
    assert_eq!(wake_latencies(m), exits);
    let c1 = [ipi + 2 * US; 6];
    assert_eq!(
        wake_latencies(exact("cascadelake-2s", &["--no-idle-states"])),
        c1
    );
    assert_eq!(wake_latencies(exact("graviton3", &[])), c1);
    // Other cores' SMT sharing does not enter into it.
    assert_eq!(
        wake_latencies(exact("cascadelake-2s", &["--no-smt-share"])),
        exits
    );
}

fn hb(groups: usize, sockets: bool) -> WorkSpec {
    WorkSpec::Hackbench(HackbenchCfg {
        groups,
        loops: 100,
        sockets,
        threads: false,
        flips: 0,
    })
}

fn run(m: &Machine, w: &WorkSpec, seed: u64) -> RunResult {
    run_one(m, &Config::parse("NO_NEXT_BUDDY"), w, seed, 10_000 * MS, 0).expect("run")
}

fn fingerprint(r: &RunResult) -> String {
    format!(
        "{:?} {:?} {} {:?} {:?} {:?}",
        r.metrics, r.ctr, r.sim_ns, r.runtimes, r.cpu_times, r.idle_states
    )
}

/// With both mechanisms (and each alone): the same seed gives the same
/// bytes, another seed other bytes, every task finishes and every CPU's
/// busy and idle time add up to the run, its busy time to the tasks'
/// runtimes; each mechanism moves the result.
#[test]
fn deterministic_and_conserved_with_smt_and_idle_states() {
    for sockets in [false, true] {
        let w = hb(4, sockets);
        let mut fps = Vec::new();
        for off in [
            &[][..],
            &["--no-smt-share"][..],
            &["--no-idle-states"][..],
            &["--no-smt-share", "--no-idle-states"][..],
        ] {
            let mut m = Machine::preset("cascadelake-2s").unwrap();
            for f in off {
                m.mech.turn_off(f).unwrap();
            }
            let (a, b) = (run(&m, &w, 5), run(&m, &w, 5));
            assert_eq!(fingerprint(&a), fingerprint(&b), "{off:?}");
            assert_ne!(fingerprint(&a), fingerprint(&run(&m, &w, 6)), "{off:?}");
            assert_eq!(a.exited, 160, "{off:?}: every task finished");
            for &(busy, idle) in &a.cpu_times {
                assert_eq!(busy + idle, a.sim_ns, "{off:?}");
            }
            let busy: u64 = a.cpu_times.iter().map(|c| c.0).sum();
            assert_eq!(busy, a.runtimes.iter().sum::<u64>(), "{off:?}");
            assert_eq!(a.idle_states.is_empty(), off.contains(&"--no-idle-states"));
            fps.push(fingerprint(&a));
        }
        for i in 0..fps.len() {
            for j in 0..i {
                assert_ne!(fps[i], fps[j], "{i} {j}");
            }
        }
    }
}

/// The machines without SMT or a table of idle states run as before with
/// both mechanisms on: switching them off changes no byte.
#[test]
fn no_change_without_smt_or_idle_states() {
    for preset in ["graviton3", "small", "qemu:4", "flat:8", "asym:4+4"] {
        let on = Machine::preset(preset).unwrap();
        let mut off = on.clone();
        off.mech.turn_off("--no-smt-share").unwrap();
        off.mech.turn_off("--no-idle-states").unwrap();
        for sockets in [false, true] {
            let w = hb(2, sockets);
            let (a, b) = (run(&on, &w, 3), run(&off, &w, 3));
            assert_eq!(fingerprint(&a), fingerprint(&b), "{preset}");
            assert!(a.idle_states.is_empty());
        }
    }
}
