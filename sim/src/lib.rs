//! `sim`: a discrete-event simulator that runs `sched`'s per-CPU scheduler
//! (`sched::smp::Scheduler`) on virtual machines of 1–256 CPUs, under models of
//! hackbench, schbench, dbench, pgbench and cyclictest, and compares
//! scheduler configurations (feature flags, sysctls, preemption models) in
//! mmtests-style A/B tables.
//!
//! - [`engine`]: the event loop, the `Platform` implementation, the kernel's
//!   wakeup / schedule / tick / balance protocol, the cost accounting;
//! - [`machine`]: topologies, presets and the cost model (every default cited);
//!   [`idle`]: idle states by depth and their governor; [`smt`]: SMT siblings'
//!   shared throughput;
//! - [`workloads`]: the benchmark models (each documents the Linux path it models);
//! - [`study`]: sweeps × configurations × seeds, compare tables, CSV/JSON;
//! - [`score`]: the study scored against the published tables, and its
//!   ablation by mechanism;
//! - [`plot`]: PNG plots; [`rng`]: the PRNG; [`out`](mod@out): the
//!   tools' stdout and stderr, which end quietly on a closed pipe instead of
//!   panicking.
//!
//! Means, CoV and Welch's t-test come from the `stats` crate, the same code
//! as the kernel's `compare`, so the study and the kernel's tables mark
//! significance identically.

// Stdout goes through `outln!` / `out!`, stderr through `errln!`
// (`sim/src/out.rs`): `println!` and `eprintln!` panic on a closed pipe.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod bench;
pub mod cli;
pub mod engine;
pub mod follow;
pub mod idle;
pub mod machine;
pub mod out;
pub mod plot;
pub mod rng;
pub mod score;
pub mod smt;
pub mod study;
pub mod workloads;

use std::sync::Arc;
use std::time::Instant;

use sched::config::FEATURES_KEY;
use sched::tunables::{Kind, TUNABLES};
use sched::{Feature, PreemptMode, SchedConfig};

use engine::{Counters, Kernel, Metric, Segment, TurnCounters, UnlockCounters, Workload};
use machine::Machine;
use workloads::*;

/// A scheduler configuration: a name and settings, each `FEATURE`,
/// `NO_FEATURE`, `preempt=MODE` or `sysctl.key=value`.
#[derive(Clone, Debug)]
pub struct Config {
    /// Column name.
    pub name: String,
    /// Settings, applied in order.
    pub settings: Vec<String>,
}

impl Config {
    /// Parses `A+B+C` (named by the text itself) or `LABEL:A+B+C`.
    pub fn parse(s: &str) -> Config {
        let (name, body) = match s.split_once(':') {
            Some((l, b)) => (l, b),
            None => (s, s),
        };
        Config {
            name: name.to_string(),
            settings: body
                .split('+')
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect(),
        }
    }

    /// A fresh `SchedConfig` for `ncpus` CPUs at `hz` with these settings.
    /// An unknown feature, sysctl key or preemption model, or a value out of
    /// range, is an error that lists what is accepted.
    pub fn build(&self, ncpus: usize, hz: u32) -> Result<Arc<SchedConfig>, String> {
        let cfg = Arc::new(SchedConfig::new(ncpus as u32, hz));
        for s in &self.settings {
            if let Some(m) = s.strip_prefix("preempt=") {
                let m = PreemptMode::from_name(m).ok_or_else(|| {
                    let names: Vec<&str> = PreemptMode::ALL.iter().map(|m| m.name()).collect();
                    format!("preempt={m}: expected one of {}", names.join(", "))
                })?;
                cfg.tunables.set_preempt_mode(m);
            } else if let Some((k, v)) = s.split_once('=') {
                cfg.sysctl_set(k, v)
                    .map_err(|e| format!("{k}={v}: {e} (accepted: {})", sysctl_accepted(k)))?;
            } else {
                cfg.features.write(s).map_err(|e| {
                    let names: Vec<&str> = Feature::ALL.iter().map(|f| f.name()).collect();
                    format!(
                        "feature '{s}': {e} (accepted: NAME or NO_NAME of {})",
                        names.join(", ")
                    )
                })?;
            }
        }
        Ok(cfg)
    }

    /// Its part of a run's boot, for machine noise ([`Kernel::with_boot`],
    /// [`run_one`]): a digest of its settings, not of its name, so that
    /// two configurations are two boots of the machine (their noise drawn
    /// apart, as two kernels booted for an A/B comparison) and a column
    /// renamed is the same boot.
    pub fn boot(&self) -> u64 {
        fnv1a(self.settings.iter().flat_map(|s| s.bytes().chain([b'+'])))
    }

    /// Checks every setting (on a 4-CPU configuration): the errors of
    /// [`Config::build`], and an empty configuration name.
    pub fn check(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("a configuration needs a name (LABEL:A+B, or A+B)".into());
        }
        self.build(4, 250).map(|_| ())
    }
}

/// What sysctl `key` accepts, for error messages.
fn sysctl_accepted(key: &str) -> String {
    if key == FEATURES_KEY {
        return "NAME or NO_NAME of a feature".into();
    }
    match TUNABLES.iter().find(|t| t.key == key).map(|t| t.kind) {
        Some(Kind::Int { min, max }) => format!("an integer in [{min}, {max}]"),
        Some(Kind::Choice(names)) => format!("one of {}", names.join(", ")),
        None => {
            let mut keys: Vec<&str> = TUNABLES.iter().map(|t| t.key).collect();
            keys.push(FEATURES_KEY);
            format!("one of the keys {}", keys.join(", "))
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub enum WorkSpec {
    /// hackbench.
    Hackbench(HackbenchCfg),
    /// schbench.
    Schbench(SchbenchCfg),
    /// dbench-like.
    Dbench(DbenchCfg),
    /// pgbench-like.
    Pgbench(PgbenchCfg),
    /// lcbench's pgbench (`make linux-compare`'s shape).
    LcPgbench(LcPgbenchCfg),
    /// lcbench's schbench (`make linux-compare`'s shape).
    LcSchbench(LcSchbenchCfg),
    /// Hogs, sleepers, cyclictest threads.
    Mix(Vec<MixTask>),
}

/// FNV-1a, 64 bits, of `bytes`.
fn fnv1a(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

impl WorkSpec {
    /// Its part of a run's boot, for machine noise ([`run_one`]): a digest
    /// of the workload and its settings, so that each point of a sweep is
    /// a boot of its own. (Were a configuration's boot at a seed shared by
    /// every point, its one draw of the machine's speed would shift all
    /// of that configuration's rows alike: every row of a study would
    /// share the same few draws.)
    pub fn boot(&self) -> u64 {
        fnv1a(format!("{self:?}").into_bytes().into_iter())
    }

    /// Tasks it creates on a machine of `nr_cpus`.
    pub fn nr_tasks(&self, nr_cpus: usize) -> usize {
        match self {
            WorkSpec::Hackbench(c) => Hackbench::nr_tasks(c),
            WorkSpec::Schbench(c) => Schbench::nr_tasks(c),
            WorkSpec::Dbench(c) => Dbench::nr_tasks(c, nr_cpus),
            WorkSpec::Pgbench(c) => Pgbench::nr_tasks(c),
            WorkSpec::LcPgbench(c) => LcPgbench::nr_tasks(c),
            WorkSpec::LcSchbench(c) => LcSchbench::nr_tasks(c),
            WorkSpec::Mix(v) => v.len(),
        }
    }

    /// Runs it on `k` for at most `max_ns`: its metrics and the wall time
    /// of the run, s. Each workload gets its own copy of the event loop
    /// ([`Kernel::run`] is generic), its step compiled into it.
    fn run_on(&self, k: &mut Kernel, max_ns: u64) -> (Vec<Metric>, f64) {
        fn drive<W: Workload>(k: &mut Kernel, mut wl: W, max_ns: u64) -> (Vec<Metric>, f64) {
            let t0 = Instant::now();
            k.run(&mut wl, max_ns);
            let wall_s = t0.elapsed().as_secs_f64();
            (wl.metrics(k), wall_s)
        }
        match self {
            WorkSpec::Hackbench(c) => drive(k, Hackbench::new(*c), max_ns),
            WorkSpec::Schbench(c) => drive(k, Schbench::new(*c), max_ns),
            WorkSpec::Dbench(c) => drive(k, Dbench::new(*c), max_ns),
            WorkSpec::Pgbench(c) => drive(k, Pgbench::new(*c), max_ns),
            WorkSpec::LcPgbench(c) => drive(k, LcPgbench::new(*c), max_ns),
            WorkSpec::LcSchbench(c) => drive(k, LcSchbench::new(*c), max_ns),
            WorkSpec::Mix(v) => drive(k, Mix::new(v.clone()), max_ns),
        }
    }
}

/// The outcome of one run.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The workload's metrics.
    pub metrics: Vec<Metric>,
    /// Mechanism counters.
    pub ctr: Counters,
    /// Virtual time simulated, ns.
    pub sim_ns: u64,
    /// Wall time, s.
    pub wall_s: f64,
    /// Wakeup-latency samples of class 0 (schbench workers), ns.
    pub lat0: Vec<u64>,
    /// Per-CPU busy/idle ns.
    pub cpu_times: Vec<(u64, u64)>,
    /// Per-task runtime, ns.
    pub runtimes: Vec<u64>,
    /// Timeline segments (if asked for).
    pub trace: Vec<Segment>,
    /// Tasks that exited.
    pub exited: usize,
    /// Steps taken in batches (the engine's speed, not the model's output:
    /// every other field is the same with batching off).
    pub batched_steps: u64,
    /// Batches split before their event (likewise).
    pub batch_splits: u64,
    /// Fair wakeups' placements: by affine rule, by `select_idle_sibling`'s
    /// pick, and those on the waker's CPU (`engine::PLACEMENT_ROWS`; the
    /// kernel's `compare` counters `wa_*`, `sis_*`, `placed_local`).
    pub placement: [u64; engine::PLACEMENT_ROWS],
    /// Timed sleeps with timer slack (`Mechanisms::timer_slack`) that
    /// another timer interrupt of their CPU ended inside their range.
    pub ranges_early: u64,
    /// Idle states by depth, if modelled: (state, entries, exit latency
    /// paid in ns before jitter), shallowest first ([`Kernel::idle_stats`]).
    pub idle_states: Vec<(&'static str, u64, u64)>,
    /// The wakeup's irqs-off window ([`UnlockCounters`]; all 0 where
    /// wakeups cost their waker nothing or with `--no-wake-unlock`).
    pub unlock: UnlockCounters,
    /// QEMU's turn order ([`TurnCounters`]; all 0 without
    /// `--qemu-rr-turns`).
    pub turns: TurnCounters,
    /// Where and how soon woken tasks ran ([`engine::WakeRunCounters`]).
    pub wake_runs: engine::WakeRunCounters,
    /// Where wakeups' preemption requests led ([`follow::Follow`]; output
    /// only).
    pub follow: follow::Follow,
}

/// Runs `w` on `m` under `c` with `seed` for at most `max_ns` of virtual time;
/// records a timeline of the first `trace_ns`. [`RunResult::follow`] stays
/// empty: [`run_one_followed`] fills it.
pub fn run_one(
    m: &Machine,
    c: &Config,
    w: &WorkSpec,
    seed: u64,
    max_ns: u64,
    trace_ns: u64,
) -> Result<RunResult, String> {
    run_with(m, c, w, seed, max_ns, trace_ns, false)
}

/// [`run_one`], also counting where the wakeups' preemption requests led
/// ([`follow::Follow`]; the same run, decision for decision).
pub fn run_one_followed(
    m: &Machine,
    c: &Config,
    w: &WorkSpec,
    seed: u64,
    max_ns: u64,
    trace_ns: u64,
) -> Result<RunResult, String> {
    run_with(m, c, w, seed, max_ns, trace_ns, true)
}

fn run_with(
    m: &Machine,
    c: &Config,
    w: &WorkSpec,
    seed: u64,
    max_ns: u64,
    trace_ns: u64,
    follow: bool,
) -> Result<RunResult, String> {
    let cfg = c.build(m.topo.nr_cpus(), m.hz)?;
    let mut k = Kernel::with_boot(
        m.clone(),
        cfg,
        w.nr_tasks(m.topo.nr_cpus()),
        seed,
        c.boot() ^ w.boot(),
    );
    k.trace_until = trace_ns;
    k.follow.enabled = follow;
    let (metrics, wall_s) = w.run_on(&mut k, max_ns);
    Ok(RunResult {
        metrics,
        sim_ns: k.now,
        wall_s,
        lat0: k.lat.first().cloned().unwrap_or_default(),
        cpu_times: k.cpu_times(),
        runtimes: k.tasks.iter().map(|t| t.runtime).collect(),
        trace: std::mem::take(&mut k.trace),
        exited: k.nr_exited(),
        batched_steps: k.batched_steps,
        batch_splits: k.batch_splits,
        ranges_early: k.ranges_early,
        placement: k.placement(),
        idle_states: k.idle_stats(),
        ctr: k.ctr.clone(),
        unlock: k.unlock.clone(),
        turns: k.turns.clone(),
        wake_runs: k.wake_runs.clone(),
        follow: std::mem::take(&mut k.follow),
    })
}
