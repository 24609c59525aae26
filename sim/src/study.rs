//! A/B studies: a workload sweep under several scheduler configurations, each
//! over several seeds, printed as mmtests compare tables (the format is
//! described in `docs/guide/measuring.md`): the baseline column first, then each
//! variant's value and its change in parentheses, better-is-positive (a
//! shorter time or a higher throughput is a positive %); Amean for times and
//! latencies, Hmean for rates; Stddev and CoV rows. A change is marked
//! significant, `*  x.xx%*`, when Welch's t-test gives p < 0.05 against the
//! baseline's samples. Runs are interleaved (seed-major, configurations
//! rotated per seed) and spread over `--jobs` threads; the output depends only
//! on the inputs, not on the thread timing. Every run's samples and counters
//! go to CSV and JSON.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::engine::{row_name, Counters, NR_ROWS};
use crate::machine::Machine;
use crate::workloads::*;
use crate::{errln, out, run_one, Config, RunResult, WorkSpec};
use stats::{amean, cov, hmean, stddev, welch_p};

/// One sweep: a workload on a machine over a list of parameter values.
#[derive(Clone, Debug)]
pub struct Item {
    /// mmtests-style name (`hackbench-process-pipes`).
    pub title: String,
    /// Machine preset.
    pub machine: String,
    /// What the parameter is (`groups`, `clients`, `threads`).
    pub param: &'static str,
    /// Its values.
    pub values: Vec<u64>,
    /// The workload for a value.
    pub make: fn(u64, &Machine, &Scale) -> WorkSpec,
    /// Metrics to tabulate.
    pub metrics: Vec<&'static str>,
    /// Virtual-time limit per run, ns.
    pub max_ns: u64,
    /// Seeds of this sweep when they are not the study's
    /// ([`Study::seeds`]): `sim study --samples published` sets them to the
    /// sample counts of the published tables ([`crate::score::published_samples`]).
    pub seeds: Option<u64>,
}

/// Sizes that differ between the full and the quick study.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    /// hackbench loops.
    pub loops: usize,
    /// dbench operations per loadfile.
    pub ops: usize,
    /// pgbench's and schbench's warm-up, not counted, ns
    /// ([`crate::workloads`], "Warm-up"); 0 in the short study.
    pub warmup_ns: u64,
}

/// The values of `sim study --length`: `short` (default), the study as it
/// always ran; `full` ([`Study::set_length`]), hackbench at mmtests' loop
/// count and pgbench and schbench for simulated seconds after a warm-up
/// that is not counted.
pub const LENGTHS: &[&str] = &["short", "full"];

/// hackbench's loops at full length: `HACKBENCH_LOOPS=10000` of mmtests'
/// `configs/config-scheduler-hackbench` from 267fe388 (2024-01-26, where
/// `config-scheduler-unbound` had it before) until d2f3e1d2 (2026-03-10,
/// which set 100 and moved longer runs to `config-scheduler-hackbench-long`,
/// 500): the config of Mel Gorman's (2025-07) and Ryan Roberts' (2025-12)
/// tables' time. mmtests times the whole `perf bench sched messaging`
/// run: no warm-up.
pub const FULL_LOOPS: usize = 10_000;

/// pgbench's and schbench's warm-up at full length, ns: far past the
/// start-up placement state of the 64-client pgbench point (1-84 ms,
/// `docs/results/study.md`) and the first periodic balance of a
/// 64-CPU LLC (64 ms). mmtests' `pgbench-bench` (737901ce and later) warms
/// up for at least 60 s before its 120 s (`WARM_TIME`, `MAX_TIME`): twice
/// the warm-up is measured, the same ratio here ([`FULL_MEASURED_NS`]).
pub const FULL_WARMUP_NS: u64 = 1_000_000_000;

/// pgbench's and schbench's counted time after the warm-up at full length, ns.
pub const FULL_MEASURED_NS: u64 = 2_000_000_000;

/// A study: items × configurations × seeds.
#[derive(Clone, Debug)]
pub struct Study {
    /// The sweeps.
    pub items: Vec<Item>,
    /// Configurations, the baseline first.
    pub configs: Vec<Config>,
    /// Seeds per point.
    pub seeds: u64,
    /// Sizes.
    pub scale: Scale,
    /// Mechanisms turned off on every machine (`sim run`'s `--no-...`
    /// flags, [`crate::machine::MECHANISM_FLAGS`]); empty: each preset's own.
    pub mechanisms_off: Vec<&'static str>,
}

fn hb(sockets: bool, threads: bool) -> fn(u64, &Machine, &Scale) -> WorkSpec {
    match (sockets, threads) {
        (false, false) => |g, _, s| {
            WorkSpec::Hackbench(HackbenchCfg {
                groups: g as usize,
                loops: s.loops,
                sockets: false,
                threads: false,
                flips: 0,
            })
        },
        (true, false) => |g, _, s| {
            WorkSpec::Hackbench(HackbenchCfg {
                groups: g as usize,
                loops: s.loops,
                sockets: true,
                threads: false,
                flips: 0,
            })
        },
        (false, true) => |g, _, s| {
            WorkSpec::Hackbench(HackbenchCfg {
                groups: g as usize,
                loops: s.loops,
                sockets: false,
                threads: true,
                flips: 0,
            })
        },
        (true, true) => |g, _, s| {
            WorkSpec::Hackbench(HackbenchCfg {
                groups: g as usize,
                loops: s.loops,
                sockets: true,
                threads: true,
                flips: 0,
            })
        },
    }
}

fn hb_item(machine: &str, sockets: bool, threads: bool, values: &[u64]) -> Item {
    Item {
        title: format!(
            "hackbench-{}-{}",
            if threads { "thread" } else { "process" },
            if sockets { "sockets" } else { "pipes" }
        ),
        machine: machine.to_string(),
        param: "groups",
        values: values.to_vec(),
        make: hb(sockets, threads),
        metrics: vec!["time_s"],
        max_ns: 5_000_000_000,
        seeds: None,
    }
}

fn db(clients: u64, m: &Machine, s: &Scale, bound: bool) -> WorkSpec {
    WorkSpec::Dbench(DbenchCfg {
        clients: clients as usize,
        ops: s.ops,
        workers: (m.topo.nr_cpus() / 2).max(1),
        bound,
    })
}

fn db_item(bound: bool, values: &[u64]) -> Item {
    Item {
        title: if bound { "dbench-bound" } else { "dbench" }.into(),
        machine: "cascadelake-2s".into(),
        param: "clients",
        values: values.to_vec(),
        make: if bound {
            |c, m, s| db(c, m, s, true)
        } else {
            |c, m, s| db(c, m, s, false)
        },
        metrics: vec!["throughput_mbs", "loadfile_ms", "all_clients_ms"],
        max_ns: 5_000_000_000,
        seeds: None,
    }
}

fn pg_item(machine: &str, values: &[u64], max_ns: u64) -> Item {
    Item {
        title: "pgbench-ro".into(),
        machine: machine.to_string(),
        param: "clients",
        values: values.to_vec(),
        make: |c, _, s| {
            WorkSpec::Pgbench(PgbenchCfg {
                clients: c as usize,
                rw: false,
                warmup_ns: s.warmup_ns,
            })
        },
        metrics: vec!["tps", "latency_ms"],
        max_ns,
        seeds: None,
    }
}

/// The default configurations: 6.19's default (NEXT_BUDDY off) against
/// NEXT_BUDDY and its two variants, and the rc1..rc6 ineligible-waker rule
/// with NEXT_BUDDY off (Ryan Roberts' "6.19-rc6 + patch" column in the
/// thread of the NEXT_BUDDY disable patch, `docs/references.md`: the rule
/// applied whatever NEXT_BUDDY said).
pub fn default_configs() -> Vec<Config> {
    [
        "nb-off:NO_NEXT_BUDDY",
        "nb-on:NEXT_BUDDY",
        "nb+inelig:NEXT_BUDDY+NEXT_BUDDY_INELIGIBLE_RESCHED",
        "nb+syncrt:NEXT_BUDDY+NEXT_BUDDY_SYNC_RUNTIME",
        "off+inelig:NO_NEXT_BUDDY+NEXT_BUDDY_INELIGIBLE_RESCHED",
    ]
    .iter()
    .map(|s| Config::parse(s))
    .collect()
}

impl Study {
    /// The default study (`make study`). Besides the original sweeps (1, 4,
    /// 8, 16, 32 groups; 1, 8, 32, 80, 160 clients) it runs the sizes of the
    /// published rows it scores ([`crate::score`]): hackbench at 7, 12 and 21
    /// groups on graviton3 and 48 with pipes (Ryan Roberts' table); pipes at
    /// 48 and 80 and sockets at 21 and 48 groups on cascadelake-2s, dbench
    /// at 4, 48, 110 and 141 clients (Mel Gorman's). Larger published sizes
    /// (up to 296 groups) stay "not run" in the score: their runs would take
    /// the study past its time.
    pub fn default_study() -> Study {
        let g3 = &[1, 4, 7, 8, 12, 16, 21, 32];
        let g3_pipes = &[1, 4, 7, 8, 12, 16, 21, 32, 48];
        let db = &[1, 4, 8, 32, 48, 80, 110, 141, 160];
        let mut items = vec![
            hb_item("graviton3", false, false, g3_pipes),
            hb_item("graviton3", true, false, g3),
            hb_item("graviton3", false, true, g3_pipes),
            hb_item("graviton3", true, true, g3),
            pg_item("graviton3", &[1, 16, 64, 250, 1000], 20_000_000),
            Item {
                title: "schbench".into(),
                machine: "graviton3".into(),
                param: "threads",
                values: vec![1, 4, 16],
                make: |t, _, s| {
                    WorkSpec::Schbench(SchbenchCfg {
                        message: 16,
                        workers: t as usize,
                        sleep_us: 100,
                        work_us: 1000,
                        warmup_ns: s.warmup_ns,
                    })
                },
                metrics: vec!["wakeup_p99_us", "request_p99_us", "rps"],
                max_ns: 100_000_000,
                seeds: None,
            },
            db_item(false, db),
            db_item(true, db),
        ];
        items.push(hb_item(
            "cascadelake-2s",
            false,
            false,
            &[1, 4, 8, 16, 32, 48, 80],
        ));
        items.push(hb_item(
            "cascadelake-2s",
            true,
            false,
            &[1, 4, 8, 16, 21, 32, 48],
        ));
        Study {
            items,
            configs: default_configs(),
            seeds: 5,
            scale: Scale {
                loops: 400,
                ops: 400,
                warmup_ns: 0,
            },
            mechanisms_off: Vec::new(),
        }
    }

    /// Proportional newidle balancing (`--newidle`): Linux 7.2's default
    /// (NI_RANDOM and NI_RATE on) against each flag off, on the 64-CPU
    /// graviton3 preset: hackbench (process, pipes) and schbench.
    pub fn newidle() -> Study {
        let mut study = Study::default_study();
        study.items.retain(|it| {
            it.machine == "graviton3"
                && (it.title == "hackbench-process-pipes" || it.title == "schbench")
        });
        // The sweep this study was made with (not the scored sizes).
        for it in &mut study.items {
            if it.title.starts_with("hackbench") {
                it.values = vec![1, 4, 8, 16, 32];
            }
        }
        study.configs = [
            "default:",
            "no-ni-rate:NO_NI_RATE",
            "no-ni-random:NO_NI_RANDOM",
        ]
        .iter()
        .map(|s| Config::parse(s))
        .collect();
        study
    }

    /// Sets the runs' length, one of [`LENGTHS`]: `full` runs hackbench
    /// [`FULL_LOOPS`] loops (its time limit grown in proportion) and
    /// pgbench and schbench for [`FULL_WARMUP_NS`] not counted plus
    /// [`FULL_MEASURED_NS`]; the same for every point (no per-row value).
    /// dbench keeps its size. `short` leaves the study as it is.
    pub fn set_length(&mut self, length: &str) -> Result<(), String> {
        match length {
            "short" => Ok(()),
            "full" => {
                let grow = FULL_LOOPS.div_ceil(self.scale.loops.max(1)) as u64;
                for it in &mut self.items {
                    if it.title.starts_with("hackbench") {
                        it.max_ns = it.max_ns.saturating_mul(grow.max(1));
                    } else if it.title.starts_with("pgbench") || it.title == "schbench" {
                        it.max_ns = FULL_WARMUP_NS + FULL_MEASURED_NS;
                    }
                }
                self.scale.loops = FULL_LOOPS;
                self.scale.warmup_ns = FULL_WARMUP_NS;
                Ok(())
            }
            other => Err(format!(
                "--length {other}: unknown (one of {})",
                LENGTHS.join(", ")
            )),
        }
    }

    /// The study cut to the points of the score rows `list` names
    /// ([`crate::score::parse_rows`]: row numbers, ranges, `TITLE@MACHINE`),
    /// every configuration kept: `sim study --rows` without `--ablation`.
    pub fn restrict_to_rows(&self, list: &str) -> Result<Study, String> {
        let rows = crate::score::clear_rows();
        let ix = crate::score::parse_rows_for(list, self, &rows, crate::score::RowsFor::Study)?;
        let chosen: Vec<_> = ix.iter().map(|&k| rows[k].clone()).collect();
        let mut st = self.clone();
        st.items = crate::score::ablation_study(self, &chosen).items;
        Ok(st)
    }

    /// The study cut to the sweeps and values `list` names: `sim study
    /// --points`. Entries, comma-separated: `TITLE@MACHINE` (the whole
    /// sweep) or `TITLE@MACHINE=V/V/..` (those values of it); every
    /// configuration kept. An unknown sweep or value is an error that lists
    /// the accepted ones.
    pub fn restrict_to_points(&self, list: &str) -> Result<Study, String> {
        let names: Vec<String> = self
            .items
            .iter()
            .map(|it| format!("{}@{}", it.title, it.machine))
            .collect();
        let mut keep: Vec<Vec<u64>> = vec![Vec::new(); self.items.len()];
        for w in list.split(',').map(str::trim) {
            let (name, vals) = match w.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (w, None),
            };
            let ii = names.iter().position(|n| n == name).ok_or_else(|| {
                format!(
                    "--points: unknown sweep '{name}' (accepted: {}, each optionally =V/V/.. with values of its sweep)",
                    names.join(", ")
                )
            })?;
            let it = &self.items[ii];
            let chosen: Vec<u64> = match vals {
                None => it.values.clone(),
                Some(v) => v
                    .split('/')
                    .map(|x| {
                        x.trim()
                            .parse::<u64>()
                            .ok()
                            .filter(|n| it.values.contains(n))
                            .ok_or_else(|| {
                                let vs: Vec<String> =
                                    it.values.iter().map(|v| v.to_string()).collect();
                                format!(
                                    "--points: {name} has no {} '{x}' (accepted: {})",
                                    it.param,
                                    vs.join("/")
                                )
                            })
                    })
                    .collect::<Result<_, _>>()?,
            };
            keep[ii].extend(chosen);
        }
        let mut st = self.clone();
        st.items = self
            .items
            .iter()
            .zip(&keep)
            .filter(|(_, k)| !k.is_empty())
            .map(|(it, k)| {
                let mut it = it.clone();
                it.values.retain(|v| k.contains(v));
                it
            })
            .collect();
        Ok(st)
    }

    /// The seeds of sweep `item`: its own ([`Item::seeds`]) or the study's.
    pub fn item_seeds(&self, item: usize) -> u64 {
        self.items[item].seeds.unwrap_or(self.seeds)
    }

    /// Whether every sweep runs the study's seeds (no `--samples published`).
    pub fn uniform_seeds(&self) -> bool {
        (0..self.items.len()).all(|ii| self.item_seeds(ii) == self.seeds)
    }

    /// A small study for tests and `--quick`.
    pub fn quick() -> Study {
        Study {
            items: vec![
                hb_item("small", false, false, &[1, 2]),
                pg_item("small", &[1, 8], 5_000_000),
            ],
            configs: default_configs()[..2].to_vec(),
            seeds: 3,
            scale: Scale {
                loops: 20,
                ops: 50,
                warmup_ns: 0,
            },
            mechanisms_off: Vec::new(),
        }
    }
}

/// One run's identity and result.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Item index.
    pub item: usize,
    /// Parameter value index.
    pub vi: usize,
    /// Configuration index.
    pub ci: usize,
    /// Seed.
    pub seed: u64,
    /// Result.
    pub r: RunResult,
}

/// All results of a study.
#[derive(Debug)]
pub struct Results {
    /// The study.
    pub study: Study,
    /// Samples in job order.
    pub samples: Vec<Sample>,
    /// Wall time, s.
    pub wall_s: f64,
}

impl Results {
    /// The values of `metric` at (item, vi, ci) over seeds.
    pub fn values(&self, item: usize, vi: usize, ci: usize, metric: &str) -> Vec<f64> {
        let mut v: Vec<(u64, f64)> = self
            .samples
            .iter()
            .filter(|s| s.item == item && s.vi == vi && s.ci == ci)
            .filter_map(|s| {
                s.r.metrics
                    .iter()
                    .find(|m| m.name == metric)
                    .map(|m| (s.seed, m.value))
            })
            .collect();
        v.sort_by_key(|x| x.0);
        v.into_iter().map(|x| x.1).collect()
    }

    /// Whether `metric` is better higher (a rate) or lower (a time).
    pub fn higher_better(&self, metric: &str) -> bool {
        self.samples
            .iter()
            .flat_map(|s| s.r.metrics.iter())
            .find(|m| m.name == metric)
            .is_some_and(|m| m.higher_better)
    }

    fn counters(&self, item: usize, vi: usize, ci: usize) -> Vec<&Counters> {
        self.samples
            .iter()
            .filter(|s| s.item == item && s.vi == vi && s.ci == ci)
            .map(|s| &s.r.ctr)
            .collect()
    }
}

/// The preset `name` with the mechanisms `off` turned off (one the preset
/// does not model stays off).
pub fn study_machine(name: &str, off: &[&str]) -> Result<Machine, String> {
    let mut m = Machine::preset(name).ok_or_else(|| format!("unknown machine {name}"))?;
    // The study's runs are boots of a machine with its noise
    // (`MachineNoise`), where it applies.
    m.mech.set_machine_noise(m.noise_applies());
    for f in off {
        m.mech.turn_off(f)?;
    }
    Ok(m)
}

/// One finished run of [`run_study_with`], for a progress report: how many
/// runs have finished (this one included) of how many, and which run it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    /// Runs finished so far, this one included.
    pub done: usize,
    /// Runs in the study.
    pub total: usize,
    /// Item index.
    pub item: usize,
    /// Parameter value index.
    pub vi: usize,
    /// Configuration index.
    pub ci: usize,
    /// Seed.
    pub seed: u64,
}

/// The runs of `study` in job order, each (item, value index,
/// configuration index, seed): seed-major over the largest seed count, the
/// configurations rotated per seed; a sweep with fewer seeds
/// (`Item::seeds`) drops out when its own are done, so a study whose
/// sweeps all run `study.seeds` has the plan it always had.
pub fn study_plan(study: &Study) -> Vec<(usize, usize, usize, u64)> {
    let mut plan = Vec::new();
    let nc = study.configs.len();
    let max_seeds = (0..study.items.len())
        .map(|ii| study.item_seeds(ii))
        .max()
        .unwrap_or(0);
    for seed in 0..max_seeds {
        for (ii, it) in study.items.iter().enumerate() {
            if seed >= study.item_seeds(ii) {
                continue;
            }
            for vi in 0..it.values.len() {
                for k in 0..nc {
                    let ci = (k + seed as usize) % nc;
                    plan.push((ii, vi, ci, seed));
                }
            }
        }
    }
    plan
}

/// The runs of `want` taken from `from`'s, in `want`'s job order
/// ([`study_plan`]), when `from` ran every one of them; else why not.
///
/// A run is a pure function of its machine (the preset and the study's
/// mechanisms turned off, [`study_machine`]), its configuration's
/// settings, its workload (the sweep's `make` at the value, on that
/// machine, at the study's [`Scale`]), its seed (`1000 + seed`) and the
/// sweep's time limit ([`run_study_with`], [`crate::run_one`]: the
/// machine noise is drawn from the seed and the configuration's and
/// workload's boot digests, not from a run's place in the plan or its
/// thread). So a run of `want` is the run of `from` at the same sweep
/// (title, machine, `make`, metrics, time limit, seeds), value,
/// configuration (name and settings) and seed, when the two studies turn
/// the same mechanisms off at the same scale; each of these is checked.
/// The result's wall time is 0 (nothing ran).
pub fn results_for(want: &Study, from: &Results) -> Result<Results, String> {
    let have = &from.study;
    if want.mechanisms_off != have.mechanisms_off {
        return Err(format!(
            "mechanisms off: [{}] against the study's [{}]",
            want.mechanisms_off.join(" "),
            have.mechanisms_off.join(" ")
        ));
    }
    let (a, b) = (&want.scale, &have.scale);
    if (a.loops, a.ops, a.warmup_ns) != (b.loops, b.ops, b.warmup_ns) {
        return Err(format!("scale {a:?} against the study's {b:?}"));
    }
    let mut item_of = Vec::new();
    for (ii, it) in want.items.iter().enumerate() {
        let name = format!("{}@{}", it.title, it.machine);
        let jj = have
            .items
            .iter()
            .position(|h| h.title == it.title && h.machine == it.machine)
            .ok_or_else(|| format!("the study has no {name}"))?;
        let h = &have.items[jj];
        if !std::ptr::fn_addr_eq(h.make, it.make)
            || h.param != it.param
            || h.metrics != it.metrics
            || h.max_ns != it.max_ns
            || have.item_seeds(jj) != want.item_seeds(ii)
        {
            return Err(format!(
                "{name} is another sweep in the study (workload, metrics, time limit or seeds)"
            ));
        }
        let values = it
            .values
            .iter()
            .map(|v| {
                h.values
                    .iter()
                    .position(|x| x == v)
                    .ok_or_else(|| format!("the study has no {name} {}={v}", it.param))
            })
            .collect::<Result<Vec<_>, _>>()?;
        item_of.push((jj, values));
    }
    let config_of = want
        .configs
        .iter()
        .map(|c| {
            have.configs
                .iter()
                .position(|h| h.name == c.name && h.settings == c.settings)
                .ok_or_else(|| {
                    format!(
                        "the study has no configuration {} = {}",
                        c.name,
                        c.settings.join(" ")
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut at = std::collections::HashMap::new();
    for (k, s) in from.samples.iter().enumerate() {
        at.insert((s.item, s.vi, s.ci, s.seed), k);
    }
    let mut samples = Vec::new();
    for (ii, vi, ci, seed) in study_plan(want) {
        let (jj, values) = &item_of[ii];
        let k = at
            .get(&(*jj, values[vi], config_of[ci], seed))
            .ok_or_else(|| format!("the study did not run {} seed {seed}", want.items[ii].title))?;
        let s = &from.samples[*k];
        samples.push(Sample {
            item: ii,
            vi,
            ci,
            seed,
            r: s.r.clone(),
        });
    }
    Ok(Results {
        study: want.clone(),
        samples,
        wall_s: 0.0,
    })
}

/// Runs every (item, value, config, seed), interleaved, on `jobs` threads.
pub fn run_study(study: &Study, jobs: usize, progress: bool) -> Result<Results, String> {
    run_study_with(study, jobs, progress, &|_| {})
}

/// [`run_study`], calling `on_done` after each run finishes (from the
/// thread that ran it, in no fixed order; the results do not depend on it).
pub fn run_study_with(
    study: &Study,
    jobs: usize,
    progress: bool,
    on_done: &(dyn Fn(Finished) + Sync),
) -> Result<Results, String> {
    let plan = study_plan(study);
    let machines: Vec<Machine> = study
        .items
        .iter()
        .map(|it| study_machine(&it.machine, &study.mechanisms_off))
        .collect::<Result<_, _>>()?;
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Result<RunResult, String>>>> = Mutex::new(vec![None; plan.len()]);
    let t0 = Instant::now();
    std::thread::scope(|sc| {
        for _ in 0..jobs.max(1) {
            sc.spawn(|| loop {
                let j = next.fetch_add(1, Ordering::Relaxed);
                if j >= plan.len() {
                    break;
                }
                let (ii, vi, ci, seed) = plan[j];
                let it = &study.items[ii];
                let m = &machines[ii];
                let w = (it.make)(it.values[vi], m, &study.scale);
                let r = run_one(m, &study.configs[ci], &w, 1000 + seed, it.max_ns, 0);
                if progress && j.is_multiple_of(20) {
                    errln!(
                        "study: {}/{} runs, {:.0} s",
                        j,
                        plan.len(),
                        t0.elapsed().as_secs_f64()
                    );
                }
                out.lock().expect("results")[j] = Some(r);
                on_done(Finished {
                    done: finished.fetch_add(1, Ordering::Relaxed) + 1,
                    total: plan.len(),
                    item: ii,
                    vi,
                    ci,
                    seed,
                });
            });
        }
    });
    let mut samples = Vec::with_capacity(plan.len());
    for (j, r) in out.into_inner().expect("results").into_iter().enumerate() {
        let (item, vi, ci, seed) = plan[j];
        samples.push(Sample {
            item,
            vi,
            ci,
            seed,
            r: r.expect("every job ran")?,
        });
    }
    Ok(Results {
        study: study.clone(),
        samples,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

fn pct(base: f64, v: f64, higher_better: bool) -> f64 {
    if base == 0.0 {
        return 0.0;
    }
    if higher_better {
        100.0 * (v - base) / base
    } else {
        100.0 * (base - v) / base
    }
}

fn cell(v: f64, p: f64, sig: bool) -> String {
    if sig {
        format!("{:>12.4} *{:>7.2}%*", v, p)
    } else {
        format!("{:>12.4} ({:>7.2}%)", v, p)
    }
}

/// The compare table of one item and metric, mmtests style.
pub fn compare_table(r: &Results, item: usize, metric: &str) -> String {
    let st = &r.study;
    let it = &st.items[item];
    let hb = r.higher_better(metric);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} {} on {} ({}, {}; {} seeds; * = Welch t-test p < 0.05; CI95 = 95% interval of the change, better positive)",
        it.title,
        metric,
        it.machine,
        it.param,
        if hb {
            "higher is better"
        } else {
            "lower is better"
        },
        st.item_seeds(item)
    );
    let _ = write!(s, "{:<14}", "");
    for c in &st.configs {
        let _ = write!(s, "{:>23}", c.name);
    }
    s.push('\n');
    let mean_name = if hb { "Hmean" } else { "Amean" };
    type Stat = fn(&[f64]) -> f64;
    let rows: [(&str, Stat, bool); 3] = [
        (mean_name, if hb { hmean } else { amean }, true),
        ("Stddev", stddev, false),
        ("CoV", cov, false),
    ];
    for (label, f, is_mean) in rows {
        for (vi, v) in it.values.iter().enumerate() {
            let base = r.values(item, vi, 0, metric);
            let bm = f(&base);
            let _ = write!(s, "{:<8}{:>6}", label, v);
            for ci in 0..st.configs.len() {
                let x = r.values(item, vi, ci, metric);
                let xm = f(&x);
                if label == "CoV" {
                    let _ = write!(s, "{:>12.2}%{:>10}", xm, "");
                    continue;
                }
                // Stddev: lower is better whatever the metric.
                let p = if is_mean {
                    pct(bm, xm, hb)
                } else {
                    pct(bm, xm, false)
                };
                let sig = is_mean && ci > 0 && welch_p(&base, &x) < 0.05;
                let _ = write!(s, " {}", cell(xm, if ci == 0 { 0.0 } else { p }, sig));
            }
            s.push('\n');
        }
        if is_mean {
            ci_rows(&mut s, r, item, metric, hb);
        }
    }
    s
}

/// The `CI95` rows under the means: for each configuration against the
/// baseline, the 95% confidence interval of the change of the arithmetic
/// means in % of the baseline's mean, better as positive, as the `%`
/// column: Fieller's interval for the ratio of the means with Welch's
/// degrees of freedom ([`stats::change_ci`], the score's and every A/B
/// table's cell), which carries the baseline mean's own error into the
/// denominator. It excludes 0 exactly when the mean is marked `*`; `n/a`
/// with fewer than 2 samples on a side (a metric the workload does not
/// report has none), `unbounded` when the baseline mean is not
/// significantly away from 0.
fn ci_rows(s: &mut String, r: &Results, item: usize, metric: &str, hb: bool) {
    let st = &r.study;
    for (vi, v) in st.items[item].values.iter().enumerate() {
        let base = r.values(item, vi, 0, metric);
        let _ = write!(s, "{:<8}{:>6} {:>23}", "CI95", v, "");
        for ci in 1..st.configs.len() {
            let x = r.values(item, vi, ci, metric);
            let _ = write!(s, " {:>23}", stats::change_ci(&base, &x, hb));
        }
        s.push('\n');
    }
}

/// Counter names in the counters table, and how to read them.
pub const COUNTERS: &[&str] = &[
    "switches",
    "preemptions",
    "wakeups",
    "sync_wakeups",
    "queued_wakeups",
    "wakeup_preempts",
    "buddy_picks",
    "migrations",
    "cold_runs",
    "cold_ms",
    "ipis",
    "newidle_balances",
    "newidle_skipped",
    "newidle_pulled",
    "scanned_cpus",
];

/// A counter of one run by name (also the wakeup rows by their names).
pub fn counter(c: &Counters, name: &str) -> f64 {
    match name {
        "events" => c.events as f64,
        "switches" => c.switches as f64,
        "preemptions" => c.preemptions as f64,
        "wakeups" => c.wakeups as f64,
        "sync_wakeups" => c.sync_wakeups as f64,
        "queued_wakeups" => c.queued_wakeups as f64,
        "ttwu_runnable" => c.ttwu_runnable as f64,
        "wakeup_preempts" => c.wakeup_preempts as f64,
        "buddy_picks" => c.buddy_picks as f64,
        "migrations" => c.migrations as f64,
        "wake_migrations" => c.wake_migrations as f64,
        "balanced" => c.balanced as f64,
        "newidle_balances" => c.newidle_balances as f64,
        "newidle_skipped" => c.newidle_skipped as f64,
        "newidle_pulled" => c.newidle_pulled as f64,
        "cold_runs" => c.cold_runs as f64,
        "cold_ms" => c.cold_ns as f64 / 1e6,
        "switch_ms" => c.switch_ns as f64 / 1e6,
        "ipis" => c.ipis as f64,
        "tick_resched" => c.tick_resched as f64,
        "hrtick_resched" => c.hrtick_resched as f64,
        "scanned_cpus" => c.scanned_cpus as f64,
        r => (0..NR_ROWS)
            .find(|&i| row_name(i) == r)
            .map_or(0.0, |i| c.rows[i] as f64),
    }
}

/// The mechanism counters of one item: mean per run at each parameter value.
pub fn counters_table(r: &Results, item: usize) -> String {
    let st = &r.study;
    let it = &st.items[item];
    let mut names: Vec<&str> = COUNTERS.to_vec();
    // The wakeup-decision rows that occurred anywhere in this item.
    for i in 0..NR_ROWS {
        if r.samples
            .iter()
            .any(|s| s.item == item && s.r.ctr.rows[i] > 0)
        {
            names.push(row_name(i));
        }
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} on {}: mechanism counters, mean per run (rows after ipis: wakeup decisions of direct wakeups)",
        it.title, it.machine
    );
    let _ = write!(s, "{:<24}", "");
    for c in &st.configs {
        let _ = write!(s, "{:>16}", c.name);
    }
    s.push('\n');
    for (vi, v) in it.values.iter().enumerate() {
        for n in &names {
            let _ = write!(s, "{:<17}{:>7}", n, v);
            for ci in 0..st.configs.len() {
                let cs = r.counters(item, vi, ci);
                let x: Vec<f64> = cs.iter().map(|c| counter(c, n)).collect();
                let _ = write!(s, "{:>16.1}", amean(&x));
            }
            s.push('\n');
        }
    }
    s
}

/// `s` as a JSON string literal (quotes, backslashes and control characters
/// escaped). Public for `abtool`.
pub fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".into()
    }
}

/// Every sample as CSV (long format: one metric per row) and the counters (wide).
pub fn to_csv(r: &Results) -> (String, String) {
    let st = &r.study;
    let mut m = String::from("item,machine,param,value,config,seed,metric,sample\n");
    let mut c = String::from("item,machine,param,value,config,seed");
    let cnames: Vec<&str> = COUNTERS
        .iter()
        .copied()
        .chain([
            "events",
            "ttwu_runnable",
            "wake_migrations",
            "balanced",
            "switch_ms",
            "tick_resched",
            "hrtick_resched",
        ])
        .chain((0..NR_ROWS).map(row_name))
        .collect();
    for n in &cnames {
        c.push(',');
        c.push_str(n);
    }
    c.push('\n');
    for s in &r.samples {
        let it = &st.items[s.item];
        let head = format!(
            "{},{},{},{},{},{}",
            it.title, it.machine, it.param, it.values[s.vi], st.configs[s.ci].name, s.seed
        );
        for mt in &s.r.metrics {
            let _ = writeln!(m, "{head},{},{}", mt.name, mt.value);
        }
        c.push_str(&head);
        for n in &cnames {
            let _ = write!(c, ",{}", counter(&s.r.ctr, n));
        }
        c.push('\n');
    }
    (m, c)
}

/// Every sample as JSON.
pub fn to_json(r: &Results) -> String {
    let st = &r.study;
    let mut o = String::from("{\n  \"configs\": [");
    for (i, c) in st.configs.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        let set: Vec<String> = c.settings.iter().map(|x| json_str(x)).collect();
        let _ = write!(
            o,
            "{{\"name\": {}, \"settings\": [{}]}}",
            json_str(&c.name),
            set.join(", ")
        );
    }
    let _ = write!(o, "],\n  \"seeds\": {},\n  \"runs\": [\n", st.seeds);
    for (k, s) in r.samples.iter().enumerate() {
        let it = &st.items[s.item];
        let ms: Vec<String> =
            s.r.metrics
                .iter()
                .map(|m| format!("{}: {}", json_str(&m.name), num(m.value)))
                .collect();
        let cs: Vec<String> = COUNTERS
            .iter()
            .copied()
            .chain(["events"])
            .chain((0..NR_ROWS).map(row_name))
            .map(|n| format!("{}: {}", json_str(n), num(counter(&s.r.ctr, n))))
            .collect();
        let _ = writeln!(
            o,
            "    {{\"item\": {}, \"machine\": {}, \"param\": {}, \"value\": {}, \"config\": {}, \"seed\": {}, \"sim_ns\": {}, \"metrics\": {{{}}}, \"counters\": {{{}}}}}{}",
            json_str(&it.title),
            json_str(&it.machine),
            json_str(it.param),
            it.values[s.vi],
            json_str(&st.configs[s.ci].name),
            s.seed,
            s.r.sim_ns,
            ms.join(", "),
            cs.join(", "),
            if k + 1 < r.samples.len() { "," } else { "" }
        );
    }
    o.push_str("  ]\n}\n");
    o
}

/// The cost-table lines of a study's header: the digest of each machine's
/// costs its sweeps run on, in name order (the study's and the ablation's
/// output carry them, so a result names the costs it was run with).
pub fn costs_lines(st: &Study) -> Vec<String> {
    let mut machines: Vec<&str> = st.items.iter().map(|it| it.machine.as_str()).collect();
    machines.sort_unstable();
    machines.dedup();
    machines
        .into_iter()
        .filter_map(|m| {
            Machine::preset(m).map(|mc| {
                format!(
                    "  costs of {m}: digest {:016x} (sim/src/machine.rs, Costs::digest)",
                    mc.costs.digest()
                )
            })
        })
        .collect()
}

/// Prints every table and writes CSV, JSON, tables and plots under `out`.
pub fn report(r: &Results, out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut all = String::new();
    let st = &r.study;
    if st.uniform_seeds() {
        let _ = writeln!(
            all,
            "study: {} configs × {} seeds, {} runs in {:.1} s wall",
            st.configs.len(),
            st.seeds,
            r.samples.len(),
            r.wall_s
        );
    } else {
        let per: Vec<String> = (0..st.items.len())
            .map(|ii| {
                let it = &st.items[ii];
                format!("{}@{} {}", it.title, it.machine, st.item_seeds(ii))
            })
            .collect();
        let _ = writeln!(
            all,
            "study: {} configs, seeds per sweep (--samples published, sim/src/score.rs published_samples): {}; {} runs in {:.1} s wall",
            st.configs.len(),
            per.join(", "),
            r.samples.len(),
            r.wall_s
        );
    }
    for c in &st.configs {
        let _ = writeln!(all, "  {:<12} = {}", c.name, c.settings.join(" "));
    }
    if let Some(l) = length_line(st) {
        let _ = writeln!(all, "{l}");
    }
    for l in costs_lines(st) {
        let _ = writeln!(all, "{l}");
    }
    if !st.mechanisms_off.contains(&"--no-machine-noise") {
        let n = crate::machine::MACHINE_NOISE;
        let _ = writeln!(
            all,
            "  machine noise (but on qemu:N): boot speed spread {}%, per-CPU {}%, {} interrupts/s per CPU of {} ns (sim/src/machine.rs, MachineNoise; --no-machine-noise: off)",
            n.boot_speed_spread_ppm as f64 / 1e4,
            n.cpu_speed_spread_ppm as f64 / 1e4,
            n.irq_per_s,
            n.irq_ns
        );
    }
    all.push('\n');
    for (ii, it) in st.items.iter().enumerate() {
        for m in &it.metrics {
            all.push_str(&compare_table(r, ii, m));
            all.push('\n');
        }
        all.push_str(&counters_table(r, ii));
        all.push('\n');
    }
    out!("{all}");
    let w = |name: &str, text: &str| -> Result<(), String> {
        let p: PathBuf = out.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
    };
    w("tables.txt", &all)?;
    let (m, c) = to_csv(r);
    w("samples.csv", &m)?;
    w("counters.csv", &c)?;
    w("samples.json", &to_json(r))?;
    let scored = crate::score::score(&crate::score::clear_rows(), r);
    if scored.iter().any(|x| x.sim.is_some()) {
        let t = crate::score::score_table(&scored);
        out!("\n{t}");
        all.push('\n');
        all.push_str(&t);
        w("tables.txt", &all)?;
        w("score.csv", &crate::score::score_csv(&scored))?;
        w("score.json", &crate::score::score_json(&scored))?;
    }
    match crate::plot::study_plots(r, out) {
        Ok(files) => {
            for f in files {
                errln!("study: wrote {}", f.display());
            }
        }
        Err(e) => errln!("study: plots skipped: {e}"),
    }
    Ok(())
}

/// `sim study`'s usage line.
pub const STUDY_USAGE: &str = "usage: sim study [--quick | --newidle | --ablation | --with-ablation] [--mechanisms LIST] [--rows LIST | --points LIST] [--length short|full] [--no-machine-noise] [--seeds N] [--samples seeds|published] [--jobs N] [--out DIR] [--config LABEL:A+B]...";

/// The options `sim study` takes.
pub const STUDY_OPTIONS: &[&str] = &[
    "--quick",
    "--newidle",
    "--ablation",
    "--with-ablation",
    "--mechanisms",
    "--rows",
    "--points",
    "--length",
    "--no-machine-noise",
    "--seeds",
    "--samples",
    "--jobs",
    "--out",
    "--config",
];

/// The most seeds a point runs (`--seeds`): far above any published
/// table's count ([`crate::score::PUBLISHED_SAMPLES`], 120 at most), and
/// small enough that the study's plan is always built.
pub const MAX_SEEDS: usize = 1000;

/// The most threads `--jobs` starts: a thread per run of a small study,
/// never so many that the system refuses to start them.
pub const MAX_JOBS: usize = 256;

/// The length line of a study's header: hackbench's loops and the
/// warm-up, when they are not the short study's (`--length full`); each
/// part only when the study has a sweep it applies to.
pub fn length_line(st: &Study) -> Option<String> {
    if st.scale.warmup_ns == 0 {
        return None;
    }
    let mut parts = Vec::new();
    if st.items.iter().any(|it| it.title.starts_with("hackbench")) {
        parts.push(format!("hackbench {} loops", st.scale.loops));
    }
    let timed = st
        .items
        .iter()
        .filter(|it| it.title.starts_with("pgbench") || it.title == "schbench")
        .map(|it| it.max_ns / 1_000_000)
        .max();
    if let Some(until_ms) = timed {
        parts.push(format!(
            "pgbench and schbench {} ms of warm-up not counted, then until {until_ms} ms",
            st.scale.warmup_ns / 1_000_000
        ));
    }
    if st.items.iter().any(|it| it.title.starts_with("dbench")) {
        parts.push(format!(
            "dbench {} operations (its size at any length)",
            st.scale.ops
        ));
    }
    Some(format!(
        "  length: {} (sim study --length full)",
        parts.join("; ")
    ))
}

/// `sim study [--quick | --newidle | --ablation | --with-ablation] [--mechanisms LIST] [--rows LIST | --points LIST] [--length short|full] [--no-machine-noise] [--seeds N] [--samples seeds|published] [--jobs N] [--out DIR] [--config LABEL:A+B]...`
///
/// Every option but `--config` (one per configuration) and `--out` (the
/// last one counts, so `make study ARGS="--out DIR"` works) is given at
/// most once. Anything else is refused, with the accepted options or
/// values, before anything runs or is written.
pub fn cmd_study(args: &[String]) {
    let fail = |e: &str| -> ! {
        errln!("error: {e}");
        errln!("{STUDY_USAGE}");
        std::process::exit(2)
    };
    let opts = parse_study_args(args).unwrap_or_else(|e| fail(&e));
    match opts.run() {
        Ok(()) => {}
        Err(e) => fail(&e),
    }
}

/// A parsed `sim study` command line ([`parse_study_args`]): what it
/// runs, checked; [`StudyArgs::run`] runs it.
#[derive(Clone, Debug)]
pub struct StudyArgs {
    /// The study to run (cut to `--rows` or `--points`, its length, seeds
    /// and configurations set). For `--ablation`, the study whose scored
    /// points the ablation runs; for `--with-ablation`, the study that runs
    /// first (cut to `--rows`).
    pub study: Study,
    /// `--ablation` or `--with-ablation`: the parts of it to run.
    pub ablation: Option<crate::score::AblationSubset>,
    /// `--with-ablation`: the study whose ablation runs after `study` (the
    /// study before the cut of `--rows`: the base `--ablation` would
    /// have), the ablation's `all` variant taken from `study`'s runs
    /// ([`results_for`]). `None`: `study` alone, or the ablation alone.
    pub ablation_base: Option<Study>,
    /// `--jobs`.
    pub jobs: usize,
    /// `--out`.
    pub out: PathBuf,
    /// `--samples published`: one line per sweep, its seeds and why.
    pub samples_lines: Vec<String>,
}

/// `v` if it is one of `accepted`, else `option`'s error naming them.
fn one_of(option: &str, v: String, accepted: &[&str]) -> Result<String, String> {
    if accepted.contains(&v.as_str()) {
        Ok(v)
    } else {
        Err(format!(
            "{option} {v}: unknown (one of {})",
            accepted.join(", ")
        ))
    }
}

/// Parses and checks `sim study`'s arguments (after `study`): an unknown
/// option or value, an option given twice, or a combination that is not
/// supported is an error naming the accepted ones.
pub fn parse_study_args(args: &[String]) -> Result<StudyArgs, String> {
    let mut preset: Option<&str> = None;
    let mut out = PathBuf::from("build/study");
    let mut jobs = None;
    let mut configs = Vec::new();
    let mut seeds = None;
    let mut ablation = false;
    let mut with_ablation = false;
    let mut no_noise = false;
    let mut mechanisms: Option<String> = None;
    let mut rows: Option<String> = None;
    let mut samples: Option<String> = None;
    let mut length: Option<String> = None;
    let mut points: Option<String> = None;
    let mut seen: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if !STUDY_OPTIONS.contains(&a) {
            return Err(format!(
                "unknown option '{a}' (accepted: {})",
                STUDY_OPTIONS.join(", ")
            ));
        }
        if a != "--config" && a != "--out" {
            if seen.contains(&a) {
                return Err(format!("{a} given twice"));
            }
            seen.push(a);
        }
        // The options without a value.
        match a {
            "--ablation" => ablation = true,
            "--with-ablation" => with_ablation = true,
            "--no-machine-noise" => no_noise = true,
            "--quick" | "--newidle" => {
                if let Some(p) = preset.replace(a) {
                    return Err(format!(
                        "{p} and {a}: give one of --quick, --newidle (or neither: the default study)"
                    ));
                }
            }
            _ => {}
        }
        if matches!(
            a,
            "--ablation" | "--with-ablation" | "--no-machine-noise" | "--quick" | "--newidle"
        ) {
            i += 1;
            continue;
        }
        let v = args
            .get(i + 1)
            .cloned()
            .ok_or_else(|| format!("{a} needs a value"))?;
        match a {
            "--seeds" => {
                seeds = Some(
                    bounded(&v, MAX_SEEDS)
                        .ok_or_else(|| format!("--seeds {v}: a number from 1 to {MAX_SEEDS}"))?,
                )
            }
            "--jobs" => {
                jobs = Some(
                    bounded(&v, MAX_JOBS)
                        .ok_or_else(|| format!("--jobs {v}: a number from 1 to {MAX_JOBS}"))?,
                )
            }
            "--samples" => samples = Some(one_of(a, v, SAMPLES)?),
            "--length" => length = Some(one_of(a, v, LENGTHS)?),
            "--points" => points = Some(v),
            "--rows" => rows = Some(v),
            "--mechanisms" => mechanisms = Some(v),
            "--out" => {
                if v.is_empty() {
                    return Err("--out: an empty directory name".into());
                }
                out = PathBuf::from(v);
            }
            "--config" => {
                let c = Config::parse(&v);
                c.check().map_err(|e| format!("--config {v}: {e}"))?;
                if configs.iter().any(|x: &Config| x.name == c.name) {
                    return Err(format!(
                        "--config {v}: the name '{}' is given twice (each configuration needs its own LABEL)",
                        c.name
                    ));
                }
                configs.push(c);
            }
            o => return Err(format!("unknown option '{o}'")),
        }
        i += 2;
    }
    if out.exists() && !out.is_dir() {
        return Err(format!("--out {}: not a directory", out.display()));
    }
    let mut study = match preset {
        Some("--quick") => Study::quick(),
        Some("--newidle") => Study::newidle(),
        _ => Study::default_study(),
    };
    if let Some(s) = seeds {
        study.seeds = s as u64;
    }
    if no_noise {
        study.mechanisms_off.push("--no-machine-noise");
    }
    if let Some(l) = &length {
        study.set_length(l)?;
    }
    if ablation && with_ablation {
        return Err("--ablation and --with-ablation: give one (--ablation: the ablation alone; --with-ablation: the study, then its ablation)".into());
    }
    // The ablation's option as given, for the errors.
    let ab_opt = if with_ablation {
        "--with-ablation"
    } else {
        "--ablation"
    };
    if points.is_some() && (rows.is_some() || ablation || with_ablation) {
        return Err(format!(
            "--points: not with --rows or {ab_opt} (give one way to choose the points)"
        ));
    }
    let published = samples.as_deref() == Some("published");
    if ablation || with_ablation {
        if published {
            return Err(format!("--samples published: not with {ab_opt} (its plan and counts are per study seeds); --samples seeds or leave it out"));
        }
        if !configs.is_empty() {
            return Err(if with_ablation {
                "--with-ablation runs the default study's configurations (the ablation's are the scored rows' pairs of them); no --config".into()
            } else {
                "--ablation runs the configurations the scored rows need; no --config".into()
            });
        }
        // Every name is checked before anything runs or is written.
        let subset = crate::score::AblationSubset {
            mechanisms: mechanisms
                .map(|m| crate::score::parse_mechanisms(&m))
                .transpose()?,
            rows: rows
                .as_deref()
                .map(|r| crate::score::parse_rows(r, &study, &crate::score::clear_rows()))
                .transpose()?,
        };
        crate::score::ablation_plan(&study, &crate::score::clear_rows(), &subset)?;
        if !with_ablation {
            return Ok(StudyArgs {
                study,
                ablation: Some(subset),
                ablation_base: None,
                jobs: jobs.unwrap_or(2),
                out,
                samples_lines: Vec::new(),
            });
        }
        // The study runs its points cut to --rows (as without an
        // ablation); the ablation's plan is `--ablation`'s, of the uncut
        // study.
        let base = study.clone();
        if let Some(r) = &rows {
            study = study.restrict_to_rows(r)?;
        }
        return Ok(StudyArgs {
            study,
            ablation: Some(subset),
            ablation_base: Some(base),
            jobs: jobs.unwrap_or(2),
            out,
            samples_lines: Vec::new(),
        });
    }
    if mechanisms.is_some() {
        return Err(
            "--mechanisms chooses the variants of the ablation: give --ablation or --with-ablation too".into(),
        );
    }
    if let Some(p) = &points {
        study = study.restrict_to_points(p)?;
    }
    if let Some(r) = &rows {
        study = study.restrict_to_rows(r)?;
    }
    // After the cut: a line for each sweep that runs.
    let samples_lines = if published {
        crate::score::published_samples(&mut study)
    } else {
        Vec::new()
    };
    if configs.len() >= 2 {
        study.configs = configs;
    } else if !configs.is_empty() {
        return Err("give at least two --config (the first is the baseline)".into());
    }
    Ok(StudyArgs {
        study,
        ablation: None,
        ablation_base: None,
        jobs: jobs.unwrap_or(2),
        out,
        samples_lines,
    })
}

impl StudyArgs {
    /// Runs what was parsed: the ablation, or the study and its report,
    /// or (`--with-ablation`) the study and its report, then the ablation
    /// with its `all` variant from the study's runs.
    pub fn run(&self) -> Result<(), String> {
        if let (Some(subset), None) = (&self.ablation, &self.ablation_base) {
            return crate::score::cmd_ablation(&self.study, self.jobs, &self.out, subset, None);
        }
        for line in &self.samples_lines {
            errln!("study: samples {line}");
        }
        if let (Some(subset), Some(base)) = (&self.ablation, &self.ablation_base) {
            errln!("{}", self.plan_line(base, subset)?);
        }
        let r = run_study(&self.study, self.jobs, true)?;
        report(&r, &self.out)?;
        match (&self.ablation, &self.ablation_base) {
            (Some(subset), Some(base)) => {
                out!("\n");
                crate::score::cmd_ablation(base, self.jobs, &self.out, subset, Some(&r))
            }
            _ => Ok(()),
        }
    }

    /// `--with-ablation`'s first line: the runs the study and the
    /// ablation take (the ablation's `all` counted once: its runs are the
    /// study's).
    pub fn plan_line(
        &self,
        base: &Study,
        subset: &crate::score::AblationSubset,
    ) -> Result<String, String> {
        let study_runs = study_plan(&self.study).len();
        let (st, variants) =
            crate::score::ablation_plan(base, &crate::score::clear_rows(), subset)?;
        let per_variant = study_plan(&st).len();
        let more = variants
            .iter()
            .filter(|v| v.ran && !v.off.is_empty())
            .count();
        Ok(format!(
            "study: {study_runs} runs, then the ablation: {} variants, {more} to run besides all (whose {per_variant} runs are the study's) × {per_variant} runs = {} runs; {} runs in all (docs/results/study.md, Reproduce: the time the default takes)",
            variants.len(),
            more * per_variant,
            study_runs + more * per_variant
        ))
    }
}

/// The values of `sim study --samples`: `seeds` (default), every sweep runs
/// `--seeds` seeds; `published`, a sweep whose published table's sample
/// count the cited mmtests sources fix runs that many
/// ([`crate::score::PUBLISHED_SAMPLES`]), the others `--seeds`.
pub const SAMPLES: &[&str] = &["seeds", "published"];

fn bounded(s: &str, max: usize) -> Option<usize> {
    s.parse().ok().filter(|&n| (1..=max).contains(&n))
}

/// `sim bench`: the speed figures.
pub fn cmd_bench() {
    crate::bench::print_bench();
}
