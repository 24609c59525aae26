//! The sysctl side: scheduler tunables with defaults, ranges, units and docs.
//!
//! Every tunable is one atomic word, so the scheduler reads it without a lock and
//! a `sysctl KEY=VALUE` write takes effect at the next decision that uses it.
//! Text get/set validates everything before it stores anything: an unknown key, a
//! malformed number or a value out of range is a [`SysctlError`] and changes
//! nothing.
//!
//! `kernel.sched_base_slice_ns` follows Linux's `tunable_scaling`: the effective
//! base slice is the normalized slice (0.7 ms) times a factor of the CPU count,
//! `1` (none), `1 + ilog2(min(ncpus, 8))` (log, the default) or `min(ncpus, 8)`
//! (linear). Writing the base slice sets the effective value and stores
//! `value / factor` as the new normalized slice, so a later change of the CPU
//! count or of the scaling rescales it.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::deadline::{
    DL_SERVER_PERIOD_MAX_NS, DL_SERVER_PERIOD_MIN_NS, FAIR_SERVER_PERIOD_NS, FAIR_SERVER_RUNTIME_NS,
};

/// The normalized base slice: 0.7 ms (Linux 6.15+).
pub const NORMALIZED_BASE_SLICE_NS: u64 = 700_000;
/// Smallest custom or base slice: 0.1 ms.
pub const MIN_SLICE_NS: u64 = 100_000;
/// Largest custom or base slice: 100 ms.
pub const MAX_SLICE_NS: u64 = 100_000_000;

/// Linux's default timer slack of a normal task: `init_task`'s
/// `timer_slack_ns`, which every task inherits unless it sets its own
/// (`prctl(PR_SET_TIMERSLACK)`).
pub const DEFAULT_TIMER_SLACK_NS: u64 = 50_000;
/// Largest accepted timer slack: 100 ms.
pub const MAX_TIMER_SLACK_NS: u64 = 100_000_000;

/// The preemption model (`/sys/kernel/debug/sched/preempt`, boot `preempt=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PreemptMode {
    /// Switch only when a thread blocks, yields or calls `schedule()`.
    None = 0,
    /// Plus at explicit `cond_resched()` points.
    Voluntary = 1,
    /// Plus on return from interrupt and at `preempt_enable()`.
    Full = 2,
    /// Like full for immediate requests; fair-class requests are lazy and
    /// upgraded at the next tick.
    Lazy = 3,
}

impl PreemptMode {
    /// Every mode in Linux's print order.
    pub const ALL: [PreemptMode; 4] = [
        PreemptMode::None,
        PreemptMode::Voluntary,
        PreemptMode::Full,
        PreemptMode::Lazy,
    ];

    /// The lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            PreemptMode::None => "none",
            PreemptMode::Voluntary => "voluntary",
            PreemptMode::Full => "full",
            PreemptMode::Lazy => "lazy",
        }
    }

    /// Parses a mode name.
    pub fn from_name(s: &str) -> Option<PreemptMode> {
        PreemptMode::ALL.into_iter().find(|m| m.name() == s)
    }

    fn from_u64(v: u64) -> PreemptMode {
        match v {
            0 => PreemptMode::None,
            1 => PreemptMode::Voluntary,
            3 => PreemptMode::Lazy,
            _ => PreemptMode::Full,
        }
    }
}

/// Linux's `tunable_scaling`: how the base slice grows with the CPU count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TunableScaling {
    /// Factor 1.
    None = 0,
    /// Factor 1 + ilog2(min(ncpus, 8)) (the default).
    Log = 1,
    /// Factor min(ncpus, 8).
    Linear = 2,
}

impl TunableScaling {
    /// The lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            TunableScaling::None => "none",
            TunableScaling::Log => "log",
            TunableScaling::Linear => "linear",
        }
    }

    fn from_u64(v: u64) -> TunableScaling {
        match v {
            0 => TunableScaling::None,
            2 => TunableScaling::Linear,
            _ => TunableScaling::Log,
        }
    }

    /// The slice factor for `ncpus` CPUs.
    pub fn factor(self, ncpus: u32) -> u64 {
        let n = ncpus.clamp(1, 8) as u64;
        match self {
            TunableScaling::None => 1,
            TunableScaling::Log => 1 + n.ilog2() as u64,
            TunableScaling::Linear => n,
        }
    }
}

/// One tunable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tunable {
    /// `kernel.sched_base_slice_ns`
    BaseSliceNs,
    /// `kernel.sched_tunable_scaling`
    TunableScaling,
    /// `kernel.sched_migration_cost_ns`
    MigrationCostNs,
    /// `kernel.sched_nr_migrate`
    NrMigrate,
    /// `kernel.sched_rr_timeslice_ms`
    RrTimesliceMs,
    /// `kernel.sched_preempt`
    Preempt,
    /// `kernel.sched_stall_warn_ms`
    StallWarnMs,
    /// `kernel.softlockup_thresh_ms`
    SoftlockupThreshMs,
    /// `kernel.sched_fair_server_runtime_ns`
    FairServerRuntimeNs,
    /// `kernel.sched_fair_server_period_ns`
    FairServerPeriodNs,
    /// `kernel.timer_slack_ns`
    TimerSlackNs,
}

/// The value kind of a tunable, for parsing and printing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A decimal integer within `min..=max`.
    Int {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// One of a fixed set of names (also accepted: the name's index).
    Choice(&'static [&'static str]),
}

/// The static description of a tunable.
#[derive(Clone, Copy, Debug)]
pub struct TunableInfo {
    /// Which tunable.
    pub tunable: Tunable,
    /// The sysctl key.
    pub key: &'static str,
    /// Unit of the value (`ns`, `ms`, `tasks`, or empty).
    pub unit: &'static str,
    /// Accepted values.
    pub kind: Kind,
    /// One line on what it does.
    pub doc: &'static str,
}

/// Every tunable, in `sysctl -a` order.
pub const TUNABLES: &[TunableInfo] = &[
    TunableInfo {
        tunable: Tunable::BaseSliceNs,
        key: "kernel.sched_base_slice_ns",
        unit: "ns",
        kind: Kind::Int { min: MIN_SLICE_NS, max: MAX_SLICE_NS },
        doc: "EEVDF request size r: a fair task runs this long before its virtual deadline (0.7 ms x scaling factor)",
    },
    TunableInfo {
        tunable: Tunable::TunableScaling,
        key: "kernel.sched_tunable_scaling",
        unit: "",
        kind: Kind::Choice(&["none", "log", "linear"]),
        doc: "how the base slice grows with the CPU count: none (x1), log (x 1+ilog2(min(n,8))), linear (x min(n,8))",
    },
    TunableInfo {
        tunable: Tunable::MigrationCostNs,
        key: "kernel.sched_migration_cost_ns",
        unit: "ns",
        kind: Kind::Int { min: 0, max: 1_000_000_000 },
        doc: "a task that ran within this long is cache-hot (balancer) and the NEXT_BUDDY sync threshold",
    },
    TunableInfo {
        tunable: Tunable::NrMigrate,
        key: "kernel.sched_nr_migrate",
        unit: "tasks",
        kind: Kind::Int { min: 1, max: 1024 },
        doc: "most tasks one load-balancing pass moves",
    },
    TunableInfo {
        tunable: Tunable::RrTimesliceMs,
        key: "kernel.sched_rr_timeslice_ms",
        unit: "ms",
        kind: Kind::Int { min: 1, max: 10_000 },
        doc: "SCHED_RR time slice",
    },
    TunableInfo {
        tunable: Tunable::Preempt,
        key: "kernel.sched_preempt",
        unit: "",
        kind: Kind::Choice(&["none", "voluntary", "full", "lazy"]),
        doc: "preemption model: none, voluntary, full or lazy",
    },
    TunableInfo {
        tunable: Tunable::StallWarnMs,
        key: "kernel.sched_stall_warn_ms",
        unit: "ms",
        kind: Kind::Int { min: 0, max: 3_600_000 },
        doc: "stall watchdog: a runnable thread not run for longer than this dumps every runqueue and the thread (0: off)",
    },
    TunableInfo {
        tunable: Tunable::SoftlockupThreshMs,
        key: "kernel.softlockup_thresh_ms",
        unit: "ms",
        kind: Kind::Int { min: 0, max: 3_600_000 },
        doc: "soft-lockup detector: a CPU with work queued and no context switch for longer than this dumps every runqueue (0: off)",
    },
    TunableInfo {
        tunable: Tunable::FairServerRuntimeNs,
        key: "kernel.sched_fair_server_runtime_ns",
        unit: "ns",
        kind: Kind::Int { min: 0, max: DL_SERVER_PERIOD_MAX_NS },
        doc: "fair server: fair tasks starved by RT run this long every period on each CPU (Linux's debugfs fair_server/cpuN/runtime; 0: off; at most the period)",
    },
    TunableInfo {
        tunable: Tunable::FairServerPeriodNs,
        key: "kernel.sched_fair_server_period_ns",
        unit: "ns",
        kind: Kind::Int { min: DL_SERVER_PERIOD_MIN_NS, max: DL_SERVER_PERIOD_MAX_NS },
        doc: "fair server period on each CPU (Linux's debugfs fair_server/cpuN/period; at least the runtime)",
    },
    TunableInfo {
        tunable: Tunable::TimerSlackNs,
        key: "kernel.timer_slack_ns",
        unit: "ns",
        kind: Kind::Int { min: 0, max: MAX_TIMER_SLACK_NS },
        doc: "a normal task's timed sleep may end this much late, so one timer interrupt serves several sleepers (Linux's per-task timer_slack_ns, 50 us; RT and deadline tasks: none; 0: off)",
    },
];

impl Tunable {
    /// The table entry.
    pub fn info(self) -> &'static TunableInfo {
        TUNABLES
            .iter()
            .find(|t| t.tunable == self)
            .expect("every tunable is in TUNABLES")
    }

    /// Looks a tunable up by its key.
    pub fn from_key(key: &str) -> Option<Tunable> {
        TUNABLES.iter().find(|t| t.key == key).map(|t| t.tunable)
    }
}

/// Why a sysctl read or write was refused. Nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysctlError {
    /// No tunable has that key.
    UnknownKey,
    /// The value is not a decimal number.
    NotANumber,
    /// The number is outside `min..=max`.
    OutOfRange {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// The value is not one of the accepted names.
    BadChoice(&'static [&'static str]),
    /// The feature write was refused (`kernel.sched_features`).
    Feature(crate::features::FeatureError),
    /// The value is in range but conflicts with another setting (which is
    /// named in the message).
    Conflict(&'static str),
}

impl fmt::Display for SysctlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SysctlError::UnknownKey => f.write_str("unknown key"),
            SysctlError::NotANumber => f.write_str("invalid number"),
            SysctlError::OutOfRange { min, max } => write!(f, "value out of range [{min}, {max}]"),
            SysctlError::BadChoice(names) => {
                f.write_str("expected one of")?;
                for n in names.iter() {
                    write!(f, " {n}")?;
                }
                Ok(())
            }
            SysctlError::Feature(e) => write!(f, "{e}"),
            SysctlError::Conflict(why) => f.write_str(why),
        }
    }
}

/// Parses an unsigned decimal integer (optional `_` separators are not accepted;
/// a leading `+` is not accepted either, as in the kernel's `kstrtoull`).
pub fn parse_u64(s: &str) -> Result<u64, SysctlError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SysctlError::NotANumber);
    }
    s.parse::<u64>().map_err(|_| SysctlError::NotANumber)
}

/// Validates `text` for `info` and returns the raw value to store.
fn parse_value(info: &TunableInfo, text: &str) -> Result<u64, SysctlError> {
    let t = text.trim();
    match info.kind {
        Kind::Int { min, max } => {
            // Out-of-range beats not-a-number for huge but well-formed values.
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && t.parse::<u64>().is_err() {
                return Err(SysctlError::OutOfRange { min, max });
            }
            let v = parse_u64(t)?;
            if v < min || v > max {
                return Err(SysctlError::OutOfRange { min, max });
            }
            Ok(v)
        }
        Kind::Choice(names) => {
            if let Some(i) = names.iter().position(|n| *n == t) {
                return Ok(i as u64);
            }
            match parse_u64(t) {
                Ok(i) if (i as usize) < names.len() => Ok(i),
                _ => Err(SysctlError::BadChoice(names)),
            }
        }
    }
}

/// The tunables of one scheduler instance.
#[derive(Debug)]
pub struct Tunables {
    normalized_base_slice_ns: AtomicU64,
    base_slice_ns: AtomicU64,
    scaling: AtomicU64,
    ncpus: AtomicU64,
    migration_cost_ns: AtomicU64,
    nr_migrate: AtomicU64,
    rr_timeslice_ms: AtomicU64,
    preempt: AtomicU64,
    stall_warn_ms: AtomicU64,
    softlockup_thresh_ms: AtomicU64,
    /// The fair server's runtime and period. Two words: a reader may see
    /// one new and one old value for an instant, which the server takes as
    /// new parameters and restarts with at its next tick; writers (the
    /// shell's `sysctl`) are serialized, so the runtime <= period check
    /// holds for every stored pair.
    fair_server_runtime_ns: AtomicU64,
    fair_server_period_ns: AtomicU64,
    timer_slack_ns: AtomicU64,
}

impl Tunables {
    /// Linux's defaults for a machine with `ncpus` CPUs.
    pub fn new(ncpus: u32) -> Self {
        let t = Tunables {
            normalized_base_slice_ns: AtomicU64::new(NORMALIZED_BASE_SLICE_NS),
            base_slice_ns: AtomicU64::new(NORMALIZED_BASE_SLICE_NS),
            scaling: AtomicU64::new(TunableScaling::Log as u64),
            ncpus: AtomicU64::new(ncpus.max(1) as u64),
            migration_cost_ns: AtomicU64::new(500_000),
            nr_migrate: AtomicU64::new(32),
            rr_timeslice_ms: AtomicU64::new(100),
            preempt: AtomicU64::new(PreemptMode::Full as u64),
            stall_warn_ms: AtomicU64::new(0),
            softlockup_thresh_ms: AtomicU64::new(0),
            fair_server_runtime_ns: AtomicU64::new(FAIR_SERVER_RUNTIME_NS),
            fair_server_period_ns: AtomicU64::new(FAIR_SERVER_PERIOD_NS),
            timer_slack_ns: AtomicU64::new(DEFAULT_TIMER_SLACK_NS),
        };
        t.update_base_slice();
        t
    }

    fn update_base_slice(&self) {
        let f = self
            .scaling()
            .factor(self.ncpus.load(Ordering::Relaxed) as u32);
        let v = self.normalized_base_slice_ns.load(Ordering::Relaxed) * f;
        self.base_slice_ns
            .store(v.clamp(MIN_SLICE_NS, MAX_SLICE_NS), Ordering::Relaxed);
    }

    /// The effective base slice.
    #[inline]
    pub fn base_slice_ns(&self) -> u64 {
        self.base_slice_ns.load(Ordering::Relaxed)
    }

    /// The normalized (unscaled) base slice, used by NO_RUN_TO_PARITY protection.
    #[inline]
    pub fn normalized_base_slice_ns(&self) -> u64 {
        self.normalized_base_slice_ns.load(Ordering::Relaxed)
    }

    /// The slice scaling mode.
    pub fn scaling(&self) -> TunableScaling {
        TunableScaling::from_u64(self.scaling.load(Ordering::Relaxed))
    }

    /// Tells the tunables how many CPUs are online (rescales the base slice).
    pub fn set_ncpus(&self, ncpus: u32) {
        self.ncpus.store(ncpus.max(1) as u64, Ordering::Relaxed);
        self.update_base_slice();
    }

    /// The cache-hot window and NEXT_BUDDY sync threshold.
    #[inline]
    pub fn migration_cost_ns(&self) -> u64 {
        self.migration_cost_ns.load(Ordering::Relaxed)
    }

    /// Most tasks a balancing pass migrates.
    #[inline]
    pub fn nr_migrate(&self) -> u64 {
        self.nr_migrate.load(Ordering::Relaxed)
    }

    /// The SCHED_RR time slice in ns.
    #[inline]
    pub fn rr_timeslice_ns(&self) -> u64 {
        self.rr_timeslice_ms.load(Ordering::Relaxed) * 1_000_000
    }

    /// The preemption model.
    #[inline]
    pub fn preempt_mode(&self) -> PreemptMode {
        PreemptMode::from_u64(self.preempt.load(Ordering::Relaxed))
    }

    /// Switches the preemption model.
    pub fn set_preempt_mode(&self, m: PreemptMode) {
        self.preempt.store(m as u64, Ordering::Relaxed);
    }

    /// The stall watchdog's threshold in ns (0: off).
    #[inline]
    pub fn stall_warn_ns(&self) -> u64 {
        self.stall_warn_ms.load(Ordering::Relaxed) * 1_000_000
    }

    /// The soft-lockup detector's threshold in ns (0: off).
    #[inline]
    pub fn softlockup_thresh_ns(&self) -> u64 {
        self.softlockup_thresh_ms.load(Ordering::Relaxed) * 1_000_000
    }

    /// How late a normal task's timed sleep may end, ns (0: on time).
    #[inline]
    pub fn timer_slack_ns(&self) -> u64 {
        self.timer_slack_ns.load(Ordering::Relaxed)
    }

    /// The raw stored value of a tunable.
    pub fn get_raw(&self, t: Tunable) -> u64 {
        match t {
            Tunable::BaseSliceNs => self.base_slice_ns(),
            Tunable::TunableScaling => self.scaling.load(Ordering::Relaxed),
            Tunable::MigrationCostNs => self.migration_cost_ns(),
            Tunable::NrMigrate => self.nr_migrate(),
            Tunable::RrTimesliceMs => self.rr_timeslice_ms.load(Ordering::Relaxed),
            Tunable::Preempt => self.preempt.load(Ordering::Relaxed),
            Tunable::StallWarnMs => self.stall_warn_ms.load(Ordering::Relaxed),
            Tunable::SoftlockupThreshMs => self.softlockup_thresh_ms.load(Ordering::Relaxed),
            Tunable::FairServerRuntimeNs => self.fair_server_runtime_ns.load(Ordering::Relaxed),
            Tunable::FairServerPeriodNs => self.fair_server_period_ns.load(Ordering::Relaxed),
            Tunable::TimerSlackNs => self.timer_slack_ns(),
        }
    }

    /// Stores a raw value that [`Tunables::set`]-style validation accepted.
    fn store(&self, t: Tunable, v: u64) {
        match t {
            Tunable::BaseSliceNs => {
                let f = self
                    .scaling()
                    .factor(self.ncpus.load(Ordering::Relaxed) as u32);
                self.normalized_base_slice_ns
                    .store((v / f).max(1), Ordering::Relaxed);
                self.base_slice_ns.store(v, Ordering::Relaxed);
            }
            Tunable::TunableScaling => {
                self.scaling.store(v, Ordering::Relaxed);
                self.update_base_slice();
            }
            Tunable::MigrationCostNs => self.migration_cost_ns.store(v, Ordering::Relaxed),
            Tunable::NrMigrate => self.nr_migrate.store(v, Ordering::Relaxed),
            Tunable::RrTimesliceMs => self.rr_timeslice_ms.store(v, Ordering::Relaxed),
            Tunable::Preempt => self.preempt.store(v, Ordering::Relaxed),
            Tunable::StallWarnMs => self.stall_warn_ms.store(v, Ordering::Relaxed),
            Tunable::SoftlockupThreshMs => self.softlockup_thresh_ms.store(v, Ordering::Relaxed),
            Tunable::FairServerRuntimeNs => self.fair_server_runtime_ns.store(v, Ordering::Relaxed),
            Tunable::FairServerPeriodNs => self.fair_server_period_ns.store(v, Ordering::Relaxed),
            Tunable::TimerSlackNs => self.timer_slack_ns.store(v, Ordering::Relaxed),
        }
    }

    /// The fair server's (runtime, period) in ns; runtime 0: off.
    #[inline]
    pub fn fair_server(&self) -> (u64, u64) {
        (
            self.fair_server_runtime_ns.load(Ordering::Relaxed),
            self.fair_server_period_ns.load(Ordering::Relaxed),
        )
    }

    /// Refuses a value that is in range but inconsistent with another
    /// tunable: the fair server's runtime may not exceed its period (Linux's
    /// debugfs write returns -EINVAL for that).
    fn check_conflicts(&self, t: Tunable, v: u64) -> Result<(), SysctlError> {
        let (runtime, period) = self.fair_server();
        match t {
            Tunable::FairServerRuntimeNs if v > period => Err(SysctlError::Conflict(
                "fair server runtime must not exceed kernel.sched_fair_server_period_ns",
            )),
            Tunable::FairServerPeriodNs if v < runtime => Err(SysctlError::Conflict(
                "fair server period must not be below kernel.sched_fair_server_runtime_ns",
            )),
            _ => Ok(()),
        }
    }

    /// Reads a tunable as text (`sysctl KEY`).
    pub fn get(&self, key: &str) -> Result<TunableValue, SysctlError> {
        let t = Tunable::from_key(key).ok_or(SysctlError::UnknownKey)?;
        Ok(TunableValue {
            info: t.info(),
            raw: self.get_raw(t),
        })
    }

    /// Writes a tunable from text (`sysctl KEY=VALUE`); an error changes nothing.
    pub fn set(&self, key: &str, value: &str) -> Result<TunableValue, SysctlError> {
        let t = Tunable::from_key(key).ok_or(SysctlError::UnknownKey)?;
        let v = parse_value(t.info(), value)?;
        self.check_conflicts(t, v)?;
        self.store(t, v);
        Ok(TunableValue {
            info: t.info(),
            raw: self.get_raw(t),
        })
    }

    /// Every tunable with its value, in table order (`sysctl -a`).
    pub fn iter(&self) -> impl Iterator<Item = TunableValue> + '_ {
        TUNABLES.iter().map(move |info| TunableValue {
            info,
            raw: self.get_raw(info.tunable),
        })
    }
}

/// A tunable's value, printable as text.
#[derive(Clone, Copy, Debug)]
pub struct TunableValue {
    /// The table entry.
    pub info: &'static TunableInfo,
    /// The stored value (the index for choices).
    pub raw: u64,
}

impl fmt::Display for TunableValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.info.kind {
            Kind::Int { .. } => write!(f, "{}", self.raw),
            Kind::Choice(names) => {
                f.write_str(names.get(self.raw as usize).copied().unwrap_or("?"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn base_slice_scales_with_cpus_like_linux() {
        for (n, ns) in [
            (1, 700_000),
            (2, 1_400_000),
            (3, 1_400_000),
            (4, 2_100_000),
            (7, 2_100_000),
            (8, 2_800_000),
            (64, 2_800_000),
        ] {
            assert_eq!(Tunables::new(n).base_slice_ns(), ns, "{n} cpus");
        }
        let t = Tunables::new(4);
        t.set("kernel.sched_tunable_scaling", "none").unwrap();
        assert_eq!(t.base_slice_ns(), 700_000);
        t.set("kernel.sched_tunable_scaling", "linear").unwrap();
        assert_eq!(t.base_slice_ns(), 2_800_000);
        t.set("kernel.sched_tunable_scaling", "1").unwrap();
        assert_eq!(t.base_slice_ns(), 2_100_000);
    }

    #[test]
    fn base_slice_write_sets_effective_and_normalized() {
        let t = Tunables::new(4); // log: factor 3
        t.set("kernel.sched_base_slice_ns", "3000000").unwrap();
        assert_eq!(t.base_slice_ns(), 3_000_000);
        assert_eq!(t.normalized_base_slice_ns(), 1_000_000);
        t.set_ncpus(1);
        assert_eq!(t.base_slice_ns(), 1_000_000);
    }

    #[test]
    fn bad_writes_change_nothing() {
        let t = Tunables::new(1);
        let before: std::vec::Vec<_> = t.iter().map(|v| v.to_string()).collect();
        let cases = [
            ("kernel.bogus", "1", SysctlError::UnknownKey),
            ("kernel.sched_base_slice_ns", "abc", SysctlError::NotANumber),
            ("kernel.sched_base_slice_ns", "-5", SysctlError::NotANumber),
            ("kernel.sched_base_slice_ns", "", SysctlError::NotANumber),
            ("kernel.sched_base_slice_ns", "1.5", SysctlError::NotANumber),
            (
                "kernel.sched_base_slice_ns",
                "99999",
                SysctlError::OutOfRange {
                    min: MIN_SLICE_NS,
                    max: MAX_SLICE_NS,
                },
            ),
            (
                "kernel.sched_base_slice_ns",
                "100000001",
                SysctlError::OutOfRange {
                    min: MIN_SLICE_NS,
                    max: MAX_SLICE_NS,
                },
            ),
            (
                "kernel.sched_base_slice_ns",
                "99999999999999999999999",
                SysctlError::OutOfRange {
                    min: MIN_SLICE_NS,
                    max: MAX_SLICE_NS,
                },
            ),
            (
                "kernel.sched_nr_migrate",
                "0",
                SysctlError::OutOfRange { min: 1, max: 1024 },
            ),
            (
                "kernel.sched_preempt",
                "sometimes",
                SysctlError::BadChoice(&["none", "voluntary", "full", "lazy"]),
            ),
            (
                "kernel.sched_preempt",
                "4",
                SysctlError::BadChoice(&["none", "voluntary", "full", "lazy"]),
            ),
        ];
        for (k, v, e) in cases {
            assert_eq!(t.set(k, v).unwrap_err(), e, "{k}={v}");
        }
        let after: std::vec::Vec<_> = t.iter().map(|v| v.to_string()).collect();
        assert_eq!(before, after);
    }

    #[test]
    fn get_set_round_trip() {
        let t = Tunables::new(1);
        assert_eq!(t.get("kernel.sched_preempt").unwrap().to_string(), "full");
        t.set("kernel.sched_preempt", "lazy").unwrap();
        assert_eq!(t.preempt_mode(), PreemptMode::Lazy);
        assert_eq!(t.get("kernel.sched_preempt").unwrap().to_string(), "lazy");
        assert_eq!(
            t.set("kernel.sched_rr_timeslice_ms", " 30 ")
                .unwrap()
                .to_string(),
            "30"
        );
        assert_eq!(t.rr_timeslice_ns(), 30_000_000);
        assert_eq!(
            t.get("kernel.sched_migration_cost_ns").unwrap().to_string(),
            "500000"
        );
        assert_eq!(t.get("nope").unwrap_err(), SysctlError::UnknownKey);
        assert_eq!(
            SysctlError::OutOfRange { min: 1, max: 2 }.to_string(),
            "value out of range [1, 2]"
        );
    }
}
