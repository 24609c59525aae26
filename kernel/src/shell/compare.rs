//! `compare [-n RUNS] [-w WARMUP] -c CONFIG ... -- WORKLOAD ARGS`: runs a
//! workload under several scheduler configurations, interleaved, and closes
//! with an mmtests-style table (`docs/guide/measuring.md`).
//!
//! - Every config is checked first on a scratch `SchedConfig` (the boot
//!   defaults plus its settings): a bad value refuses the whole command before
//!   anything runs or changes.
//! - Each run starts from the boot defaults ([`BOOT`]: features, every
//!   tunable, the preemption model as the kernel booted) plus the config's
//!   settings, so a config is exactly what it says.
//! - Rounds are rotated (A B C, B C A, C A B, ...) so no config always runs
//!   first or after the same one; the first WARMUP rounds are printed as
//!   `warmup` and dropped.
//! - Before each run the shell sleeps a pseudo-random 0..1 tick (seeded by
//!   the boot argument `seed=N`), so runs start at different phases of the
//!   tick: under `-icount` the whole boot is deterministic, and the seed is
//!   what samples the variance.
//! - Per run: the workload's metrics and the mechanism counters as deltas
//!   (summed over online CPUs): switches, wakeups, wakeup decisions per row
//!   of `sched::rq::WakeupReason` (`wk_*`), wakeup preemptions, tick
//!   reschedules, buddy picks (PICK_BUDDY), migrations, ticks.
//! - The diagnostic wakeup counters (`ttwu`, `ttwu_local`, `wkl_*`,
//!   `wa_*`, `sis_*`, `placed_local`) are counted only with schedstats on
//!   (`crate::sched::schedstats`): `compare` turns it on for its runs and
//!   puts the value back after, unless the kernel booted with
//!   `schedstats=disable` (`make bench-kernel` does, to time the scheduler
//!   without them); then its header says so and its lines leave them out.
//! - Whatever happens (success, an error, Ctrl-C) the features, tunables and
//!   preemption model in force before the command are put back ([`Restore`]).
//! - Refused while background jobs run: they would take CPU time from the
//!   runs (unevenly, as they start and end) and run under the configs too.
//!   `compare` itself runs in the foreground only (`&` is refused for it).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use ::shell::compare::{write_run_line, write_table, Kind, RunLine, Series};
use ::shell::{Compare, Setting};
use sched::rq::{WAKEUP_ROWS, WAKEUP_ROW_NAMES};
use sched::smp::placement_name;
use sched::tunables::TUNABLES;
use sched::{Feature, SchedConfig};

use super::inspect::online_cpus;
use super::{fail, CmdResult, Sh};
use crate::sched::schedstats::{self, CompareSchedstats};
use crate::sched::PLACEMENT_ROWS;
use crate::task;
use crate::workloads::{self, Control, Metrics};

/// The scheduler state `compare` changes: the feature mask and every
/// tunable's raw value (the preemption model is the tunable
/// `kernel.sched_preempt`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// `Features::mask()`.
    pub features: u64,
    /// Raw values in `TUNABLES` order.
    pub tunables: Vec<u64>,
}

impl State {
    /// Reads `cfg`'s state.
    pub fn capture(cfg: &SchedConfig) -> State {
        State {
            features: cfg.features.mask(),
            tunables: TUNABLES
                .iter()
                .map(|t| cfg.tunables.get_raw(t.tunable))
                .collect(),
        }
    }

    /// Writes this state into `cfg` (values it captured, so none is refused).
    pub fn apply(&self, cfg: &SchedConfig) {
        for f in Feature::ALL {
            cfg.features.set(*f, self.features & f.bit() != 0);
        }
        // The scaling first: setting it recomputes the base slice, which is
        // then set to its own value.
        let order = TUNABLES
            .iter()
            .zip(&self.tunables)
            .filter(|(t, _)| t.key == "kernel.sched_tunable_scaling")
            .chain(
                TUNABLES
                    .iter()
                    .zip(&self.tunables)
                    .filter(|(t, _)| t.key != "kernel.sched_tunable_scaling"),
            );
        for (t, &raw) in order {
            let text = sched::tunables::TunableValue { info: t, raw };
            let _ = cfg.tunables.set(t.key, &alloc::format!("{text}"));
        }
    }
}

/// The state the kernel booted with, and the `seed=` boot argument.
pub static BOOT: spin::Once<(State, u64)> = spin::Once::new();

/// Records the boot state (call once the boot arguments are applied).
pub fn record_boot_state(seed: u64) {
    BOOT.call_once(|| (State::capture(crate::sched::sched_config()), seed));
}

/// The boot state (the current one if it was never recorded).
fn boot_state() -> (State, u64) {
    match BOOT.get() {
        Some(b) => b.clone(),
        None => (State::capture(crate::sched::sched_config()), 0),
    }
}

/// Applies `settings` to `cfg`; the first refused one is the error.
fn apply_settings(cfg: &SchedConfig, settings: &[Setting]) -> Result<(), String> {
    for s in settings {
        match s {
            Setting::Feature(f, on) => cfg.features.set(*f, *on),
            Setting::Preempt(m) => cfg.tunables.set_preempt_mode(*m),
            Setting::Sysctl { key, value } => {
                if let Err(e) = cfg.sysctl_set(key, value) {
                    return Err(alloc::format!("{key}={value}: {e}"));
                }
            }
        }
    }
    Ok(())
}

/// Puts a state back when dropped (every way out of `compare`).
pub struct Restore(pub State);

impl Drop for Restore {
    fn drop(&mut self) {
        self.0.apply(crate::sched::sched_config());
    }
}

/// Mechanism counters summed over the online CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Context switches.
    pub switches: u64,
    /// Wakeups.
    pub wakeups: u64,
    /// Wakeups that asked to preempt.
    pub wakeup_preempt: u64,
    /// Ticks that asked to reschedule.
    pub tick_resched: u64,
    /// HRTICK expiries that asked to reschedule (a slice ended between ticks).
    pub hrtick_resched: u64,
    /// Picks of the next buddy (PICK_BUDDY).
    pub buddy: u64,
    /// Tasks that arrived from another CPU.
    pub migrations: u64,
    /// Ticks.
    pub ticks: u64,
    /// Successful `try_to_wake_up`s (Linux's `ttwu_count`).
    pub ttwu: u64,
    /// Of those, wakeups onto the waker's own CPU (`ttwu_local`).
    pub ttwu_local: u64,
    /// Wakeup decisions per row (`sched::rq::WAKEUP_ROW_NAMES`).
    pub rows: [u64; WAKEUP_ROWS],
    /// Wakeup PICK steps that returned the running task by its slice
    /// protection (`FairRq::wakeup_pick_stats.protect`, root runqueues).
    pub protected: u64,
    /// The decisions of wakees placed on the waker's CPU, per row.
    pub local_rows: [u64; WAKEUP_ROWS],
    /// Of those, the PICK steps the slice protection decided.
    pub local_protected: u64,
    /// Fair wakeups' placements by rule and pick
    /// (`crate::sched::WakeStats::placement`, [`placement_name`]).
    pub placement: [u64; PLACEMENT_ROWS],
}

/// Names of the fixed counters, in [`Counters::fixed`] order.
const FIXED: [&str; 16] = [
    "switches",
    "wakeups",
    "wk_preempt",
    "tick_resched",
    "hrtick_resched",
    "buddy",
    "migrations",
    "ticks",
    "ttwu",
    "ttwu_local",
    "wk_protected",
    "wkl_idle_cpu",
    "wkl_pending",
    "wkl_picked",
    "wkl_not_picked",
    "wkl_protected",
];

/// Which of [`FIXED`] are schedstats counters (`crate::sched::WakeStats`):
/// left out of the lines and tables of runs that did not count them.
const FIXED_SCHEDSTAT: [bool; 16] = [
    false, false, false, false, false, false, false, false, true, true, false, true, true, true,
    true, true,
];

impl Counters {
    /// Reads every online CPU's runqueue counters (no allocation).
    pub fn read() -> Counters {
        let mut c = Counters::default();
        for cpu in online_cpus() {
            let (s, buddy, protected) = crate::sched::with_cpu_rq(cpu, |rq| {
                (
                    rq.stats,
                    rq.fair.pick_stats.buddy,
                    rq.fair.wakeup_pick_stats.protect,
                )
            });
            c.protected += protected;
            c.switches += s.nr_switches;
            c.wakeups += s.nr_wakeups;
            c.wakeup_preempt += s.nr_wakeup_preempt;
            c.tick_resched += s.nr_tick_resched;
            c.hrtick_resched += s.nr_hrtick_resched;
            c.buddy += buddy;
            c.migrations += s.nr_migrations_in;
            c.ticks += s.nr_ticks;
            if let Some(w) = crate::sched::WAKE_STATS.get(cpu.index()) {
                c.ttwu += w.ttwu.load(core::sync::atomic::Ordering::Relaxed);
                c.ttwu_local += w.ttwu_local.load(core::sync::atomic::Ordering::Relaxed);
                c.local_protected += w
                    .local_protected
                    .load(core::sync::atomic::Ordering::Relaxed);
                for (a, b) in c.local_rows.iter_mut().zip(&w.local_rows) {
                    *a += b.load(core::sync::atomic::Ordering::Relaxed);
                }
                for (a, b) in c.placement.iter_mut().zip(&w.placement) {
                    *a += b.load(core::sync::atomic::Ordering::Relaxed);
                }
            }
            for (a, b) in c.rows.iter_mut().zip(s.wakeup_rows) {
                *a += b;
            }
        }
        c
    }

    /// `self - earlier`, counter by counter.
    pub fn since(&self, earlier: &Counters) -> Counters {
        let mut d = Counters {
            switches: self.switches.wrapping_sub(earlier.switches),
            wakeups: self.wakeups.wrapping_sub(earlier.wakeups),
            wakeup_preempt: self.wakeup_preempt.wrapping_sub(earlier.wakeup_preempt),
            tick_resched: self.tick_resched.wrapping_sub(earlier.tick_resched),
            hrtick_resched: self.hrtick_resched.wrapping_sub(earlier.hrtick_resched),
            buddy: self.buddy.wrapping_sub(earlier.buddy),
            migrations: self.migrations.wrapping_sub(earlier.migrations),
            ticks: self.ticks.wrapping_sub(earlier.ticks),
            ttwu: self.ttwu.wrapping_sub(earlier.ttwu),
            ttwu_local: self.ttwu_local.wrapping_sub(earlier.ttwu_local),
            rows: [0; WAKEUP_ROWS],
            protected: self.protected.wrapping_sub(earlier.protected),
            local_rows: [0; WAKEUP_ROWS],
            local_protected: self.local_protected.wrapping_sub(earlier.local_protected),
            placement: [0; PLACEMENT_ROWS],
        };
        for (i, r) in d.placement.iter_mut().enumerate() {
            *r = self.placement[i].wrapping_sub(earlier.placement[i]);
        }
        for (i, r) in d.rows.iter_mut().enumerate() {
            *r = self.rows[i].wrapping_sub(earlier.rows[i]);
        }
        for (i, r) in d.local_rows.iter_mut().enumerate() {
            *r = self.local_rows[i].wrapping_sub(earlier.local_rows[i]);
        }
        d
    }

    /// The fixed counters, in [`FIXED`] order.
    pub fn fixed(&self) -> [u64; 16] {
        let local = |name: &str| {
            WAKEUP_ROW_NAMES
                .iter()
                .position(|n| *n == name)
                .map_or(0, |i| self.local_rows[i])
        };
        [
            self.switches,
            self.wakeups,
            self.wakeup_preempt,
            self.tick_resched,
            self.hrtick_resched,
            self.buddy,
            self.migrations,
            self.ticks,
            self.ttwu,
            self.ttwu_local,
            self.protected,
            local("wk_idle_cpu"),
            local("wk_pending"),
            local("wk_picked") + local("wk_picked_short"),
            local("wk_not_picked") + local("wk_not_picked_short"),
            self.local_protected,
        ]
    }

    /// `(name, value)` of the fixed counters and the non-zero rows;
    /// without `schedstats` (the runs did not count them), not the fixed
    /// schedstats counters ([`FIXED_SCHEDSTAT`]).
    pub fn named(&self, schedstats: bool) -> Vec<(&'static str, u64)> {
        let mut v: Vec<_> = FIXED
            .iter()
            .copied()
            .zip(self.fixed())
            .zip(FIXED_SCHEDSTAT)
            .filter(|&(_, gated)| schedstats || !gated)
            .map(|(nv, _)| nv)
            .collect();
        for (i, &r) in self.rows.iter().enumerate() {
            if r != 0 {
                v.push((WAKEUP_ROW_NAMES[i], r));
            }
        }
        for (i, &r) in self.placement.iter().enumerate() {
            if r != 0 {
                v.push((placement_name(i), r));
            }
        }
        v
    }
}

/// Discards a workload's own report (`compare` prints one line per run).
struct Quiet;

impl Write for Quiet {
    fn write_str(&mut self, _: &str) -> core::fmt::Result {
        Ok(())
    }
}

/// xorshift64*: the pauses before runs.
fn next_rand(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// The samples `compare` kept.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Metric names and kinds (from the first run).
    pub metrics: Vec<(&'static str, Kind)>,
    /// `values[config][metric]`: kept runs' values.
    pub values: Vec<Vec<Vec<f64>>>,
    /// `counters[config]`: kept runs' counter deltas.
    pub counters: Vec<Vec<Counters>>,
    /// Warmup runs dropped.
    pub dropped: u32,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// The runs counted the schedstats counters.
    pub schedstats: bool,
}

/// Checks every config against a scratch copy of the boot state; nothing
/// live changes.
pub fn validate(c: &Compare) -> Result<(), String> {
    let (boot, _) = boot_state();
    let live = crate::sched::sched_config();
    let hz = (1_000_000_000 / live.tick_ns().max(1)) as u32;
    for (i, cfg) in c.configs.iter().enumerate() {
        let scratch = SchedConfig::new(crate::sched::nr_cpus() as u32, hz.max(1));
        boot.apply(&scratch);
        if let Err(e) = apply_settings(&scratch, &cfg.settings) {
            return Err(alloc::format!(
                "config {} '{}': {e}; nothing was run",
                (b'A' + i as u8) as char,
                cfg.label
            ));
        }
    }
    Ok(())
}

/// Runs the comparison: prints one line per run to `out`, returns the kept
/// samples. The caller restores the state. `ctl` stops it (Ctrl-C).
pub fn run(c: &Compare, ctl: &mut dyn Control, out: &mut dyn Write) -> Result<Outcome, String> {
    validate(c)?;
    let (boot, seed) = boot_state();
    let live = crate::sched::sched_config();
    let n = c.configs.len();
    let rounds = c.warmup + c.runs;
    let total = rounds * n as u32;
    let mut o = Outcome {
        values: alloc::vec![Vec::new(); n],
        counters: alloc::vec![Vec::with_capacity(c.runs as usize); n],
        ..Outcome::default()
    };
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed_0fab;
    let tick = live.tick_ns().max(1);
    let mut index = 0;
    let stats = CompareSchedstats::start();
    o.schedstats = stats.counting();
    'rounds: for r in 0..rounds {
        let warm = r < c.warmup;
        for k in 0..n {
            let ci = (r as usize + k) % n;
            index += 1;
            if ctl.interrupted() {
                o.interrupted = true;
                break 'rounds;
            }
            boot.apply(live);
            apply_settings(live, &c.configs[ci].settings)?;
            task::sleep_ns(next_rand(&mut rng) % tick);
            let before = Counters::read();
            let m: Metrics = workloads::run_command(&c.workload, ctl, &mut Quiet)?;
            let d = Counters::read().since(&before);
            if m.interrupted {
                o.interrupted = true;
                let _ = writeln!(out, "compare: run {index}/{total} interrupted, not kept");
                break 'rounds;
            }
            if o.metrics.is_empty() {
                o.metrics = m.list.iter().map(|x| (x.name, x.kind)).collect();
            }
            let named = d.named(o.schedstats);
            let line = RunLine {
                warmup: warm,
                index: (index, total),
                config: ci,
                label: &c.configs[ci].label,
                metrics: m.list.iter().map(|x| (x.name, x.value)).collect(),
                counters: named,
            };
            let _ = write_run_line(out, &line);
            if warm {
                o.dropped += 1;
                continue;
            }
            let vals = &mut o.values[ci];
            if vals.is_empty() {
                vals.resize(m.list.len(), Vec::new());
            }
            for (slot, x) in vals.iter_mut().zip(&m.list) {
                slot.push(x.value);
            }
            o.counters[ci].push(d);
        }
    }
    Ok(o)
}

/// Prints the table of what was kept.
pub fn print_table(c: &Compare, o: &Outcome, out: &mut dyn Write) {
    let n = c.configs.len();
    if o.counters.iter().any(|v| v.is_empty()) {
        let _ = writeln!(out, "compare: no table (a config has no kept run)");
        return;
    }
    let labels: Vec<&str> = c.configs.iter().map(|x| x.label.as_str()).collect();
    // Counter columns: the fixed ones, then rows seen in any kept run.
    let mut names: Vec<(&'static str, usize)> = FIXED
        .iter()
        .copied()
        .zip(0..)
        .filter(|&(_, j)| o.schedstats || !FIXED_SCHEDSTAT[j])
        .collect();
    for (i, name) in WAKEUP_ROW_NAMES.iter().enumerate() {
        if o.counters.iter().flatten().any(|d| d.rows[i] != 0) {
            names.push((name, FIXED.len() + i));
        }
    }
    let placed = FIXED.len() + WAKEUP_ROWS;
    for i in 0..PLACEMENT_ROWS {
        if o.counters.iter().flatten().any(|d| d.placement[i] != 0) {
            names.push((placement_name(i), placed + i));
        }
    }
    let get = |d: &Counters, j: usize| -> f64 {
        if j < FIXED.len() {
            d.fixed()[j] as f64
        } else if j < placed {
            d.rows[j - FIXED.len()] as f64
        } else {
            d.placement[j - placed] as f64
        }
    };
    // samples[series][config]
    let mut owned: Vec<(&str, Kind, Vec<Vec<f64>>)> = Vec::new();
    for (mi, &(name, kind)) in o.metrics.iter().enumerate() {
        let per: Vec<Vec<f64>> = (0..n)
            .map(|ci| o.values[ci].get(mi).cloned().unwrap_or_default())
            .collect();
        owned.push((name, kind, per));
    }
    for &(name, j) in &names {
        let per: Vec<Vec<f64>> = (0..n)
            .map(|ci| o.counters[ci].iter().map(|d| get(d, j)).collect())
            .collect();
        owned.push((name, Kind::Counter, per));
    }
    let refs: Vec<Vec<&[f64]>> = owned
        .iter()
        .map(|(_, _, per)| per.iter().map(|v| v.as_slice()).collect())
        .collect();
    let series: Vec<Series<'_>> = owned
        .iter()
        .zip(&refs)
        .map(|((name, kind, _), r)| Series {
            name,
            kind: *kind,
            samples: r.as_slice(),
        })
        .collect();
    let _ = write_table(out, &labels, &series);
}

/// [`run`] between a check of every config (nothing runs or changes if
/// one is refused) and the restore of the state found before (on every
/// path: success, error, Ctrl-C).
pub fn run_restoring(
    c: &Compare,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Outcome, String> {
    validate(c)?;
    let _restore = Restore(State::capture(crate::sched::sched_config()));
    run(c, ctl, out)
}

/// The `compare` command.
pub fn compare(sh: &mut Sh, c: &Compare) -> CmdResult {
    // Refuse before anything changes. Background jobs would compete with
    // the runs for the CPUs, and the config changes would change them too.
    let running = sh.jobs.running();
    if running > 0 {
        fail!(
            "compare: {running} background job(s) running would disturb the runs; wait for or kill them first"
        );
    }
    if let Err(e) = validate(c) {
        fail!("compare: {e}");
    }
    let (_, seed) = boot_state();
    let _ = writeln!(
        sh,
        "compare: {} config(s) x {} run(s) (+{} warmup) of '{}', rotated order, seed {seed}",
        c.configs.len(),
        c.runs,
        c.warmup,
        WorkloadLine(&c.workload)
    );
    if schedstats::pinned_off() {
        let _ = writeln!(
            sh,
            "compare: schedstats off (boot argument schedstats=disable): ttwu, ttwu_local, wkl_*, wa_*, sis_*, placed_local not counted"
        );
    }
    let (io, mut out) = super::work::parts(sh);
    let o = match run_restoring(c, io, &mut out) {
        Ok(o) => o,
        Err(e) => fail!("compare: {e}; state restored"),
    };
    let kept: usize = o.counters.iter().map(Vec::len).sum();
    if o.interrupted {
        let _ = writeln!(
            sh,
            "compare: interrupted; {kept} run(s) kept, {} warmup dropped",
            o.dropped
        );
    } else {
        let _ = writeln!(
            sh,
            "compare: {kept} run(s) kept, {} warmup dropped",
            o.dropped
        );
    }
    print_table(c, &o, sh);
    let _ = writeln!(sh, "compare: features, sysctls and preempt model restored");
    Ok(())
}

/// A workload command as a short line for the header.
struct WorkloadLine<'a>(&'a ::shell::Command);

impl core::fmt::Display for WorkloadLine<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        use ::shell::Command as C;
        match self.0 {
            C::Hackbench(p) => {
                write!(
                    f,
                    "hackbench{} -g {} -l {} -f {} -s {}",
                    if p.pipe { " -p" } else { "" },
                    p.groups,
                    p.loops,
                    p.fds,
                    p.datasize
                )?;
                if let Some(c) = p.syscall_cost {
                    write!(f, " -C {c}")?;
                }
                if let Some(c) = p.sched_cost {
                    write!(f, " -K {c}")?;
                }
                if p.pipe_mutex {
                    write!(f, " -M")?;
                }
                if let Some(n) = p.wakee_flips {
                    write!(f, " -W {n}")?;
                }
                Ok(())
            }
            C::Perfpipe(p) => write!(
                f,
                "perfpipe{} -l {}",
                if p.cross {
                    " -x"
                } else if p.same {
                    " -s"
                } else {
                    ""
                },
                p.loops
            ),
            C::Schbench(p) => write!(
                f,
                "schbench -m {} -t {} -r {} -F {} -s {}",
                p.message_threads, p.workers, p.runtime_s, p.footprint_kb, p.sleep_us
            ),
            C::Pgbench(p) => write!(
                f,
                "pgbench -c {} -t {}{}",
                p.clients,
                p.transactions,
                if p.select_only { " -S" } else { "" }
            ),
            C::Cyclictest(p) => {
                write!(
                    f,
                    "cyclictest -t {} -i {} -l {} -p {}",
                    p.threads, p.interval_us, p.loops, p.prio
                )?;
                if p.load_groups > 0 {
                    write!(f, " -L {}", p.load_groups)?;
                }
                if let Some(cpu) = p.cpu {
                    write!(f, " -a {cpu}")?;
                }
                Ok(())
            }
            C::Wakelat(p) => {
                write!(
                    f,
                    "wakelat -d {} -c {} -n {} -p {} -P {}",
                    p.duration_ms,
                    p.cpu,
                    p.hogs,
                    p.period_us,
                    p.policy.short_name().to_ascii_lowercase()
                )?;
                if p.slice_us > 0 {
                    write!(f, " -s {}", p.slice_us)?;
                }
                Ok(())
            }
            C::Spin(p) => write!(f, "spin -d {} ({} threads)", p.duration_ms, p.threads.len()),
            C::Yield(p) => write!(f, "yield -l {}", p.loops),
            other => f.write_str(other.name()),
        }
    }
}
