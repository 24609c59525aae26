//! One scheduler instance's configuration: its feature flags, its tunables and
//! the tick period. Runqueues share it (`Arc`), so host tests and the simulator
//! can run several differently configured schedulers side by side, and the
//! kernel flips flags and tunables at run time without taking a runqueue lock.

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::features::{Feature, Features};
use crate::tunables::{SysctlError, Tunables};

/// The sysctl key that reads and writes the feature flags.
pub const FEATURES_KEY: &str = "kernel.sched_features";

/// Features, tunables and tick period of one scheduler instance.
#[derive(Debug)]
pub struct SchedConfig {
    /// The SCHED_FEAT flags.
    pub features: Features,
    /// The sysctl tunables.
    pub tunables: Tunables,
    /// SCHED_DEADLINE admission control: one root domain (every CPU).
    pub dl_bw: crate::deadline::DlBandwidth,
    /// The task groups ([`crate::fair::group`]): only the root until one
    /// is created.
    pub groups: crate::fair::group::TaskGroups,
    tick_ns: AtomicU64,
    /// Set when a SCHED_IDLE task first arrives on a runqueue (or a
    /// queued task becomes one), never cleared: until then no CPU can run
    /// only SCHED_IDLE tasks, and placement's idle scans skip that test
    /// (one load a scan, not two per CPU visited).
    sched_idle_seen: AtomicBool,
}

impl SchedConfig {
    /// Linux's defaults for `ncpus` CPUs ticking at `hz`.
    pub fn new(ncpus: u32, hz: u32) -> Self {
        SchedConfig {
            features: Features::new(),
            tunables: Tunables::new(ncpus),
            dl_bw: crate::deadline::DlBandwidth::new(),
            groups: crate::fair::group::TaskGroups::new(),
            tick_ns: AtomicU64::new(1_000_000_000 / hz.max(1) as u64),
            sched_idle_seen: AtomicBool::new(false),
        }
    }

    /// Is the feature on?
    #[inline]
    pub fn feat(&self, f: Feature) -> bool {
        self.features.enabled(f)
    }

    /// The tick period (TICK_NSEC).
    #[inline]
    pub fn tick_ns(&self) -> u64 {
        self.tick_ns.load(Ordering::Relaxed)
    }

    /// Whether a SCHED_IDLE task has ever been queued (see the field).
    #[inline(always)]
    pub fn sched_idle_seen(&self) -> bool {
        self.sched_idle_seen.load(Ordering::Relaxed)
    }

    /// Records a SCHED_IDLE task arriving on a runqueue.
    #[inline]
    pub(crate) fn note_sched_idle(&self) {
        if !self.sched_idle_seen() {
            self.sched_idle_seen.store(true, Ordering::Relaxed);
        }
    }

    /// Sets the tick rate.
    pub fn set_hz(&self, hz: u32) {
        self.tick_ns
            .store(1_000_000_000 / hz.max(1) as u64, Ordering::Relaxed);
    }

    /// `sysctl KEY`: every tunable, plus `kernel.sched_features`.
    pub fn sysctl_get(&self, key: &str) -> Result<SysctlValue<'_>, SysctlError> {
        if key == FEATURES_KEY {
            return Ok(SysctlValue::Features(&self.features));
        }
        self.tunables.get(key).map(SysctlValue::Tunable)
    }

    /// `sysctl KEY=VALUE`; `kernel.sched_features` takes `NAME` or `NO_NAME`.
    /// An error changes nothing.
    pub fn sysctl_set(&self, key: &str, value: &str) -> Result<SysctlValue<'_>, SysctlError> {
        if key == FEATURES_KEY {
            self.features.write(value).map_err(SysctlError::Feature)?;
            return Ok(SysctlValue::Features(&self.features));
        }
        self.tunables.set(key, value).map(SysctlValue::Tunable)
    }

    /// Every sysctl key in `sysctl -a` order (tunables, then the features).
    pub fn sysctl_all(&self) -> impl Iterator<Item = (&'static str, SysctlValue<'_>)> + '_ {
        self.tunables
            .iter()
            .map(|v| (v.info.key, SysctlValue::Tunable(v)))
            .chain(core::iter::once((
                FEATURES_KEY,
                SysctlValue::Features(&self.features),
            )))
    }
}

/// A sysctl value, printable as text.
#[derive(Debug)]
pub enum SysctlValue<'a> {
    /// A tunable.
    Tunable(crate::tunables::TunableValue),
    /// The feature line (without the trailing space).
    Features(&'a Features),
}

impl fmt::Display for SysctlValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SysctlValue::Tunable(v) => write!(f, "{v}"),
            SysctlValue::Features(fs) => {
                let mask = fs.mask();
                for (n, feat) in Feature::ALL.iter().enumerate() {
                    if n > 0 {
                        f.write_str(" ")?;
                    }
                    if mask & feat.bit() == 0 {
                        f.write_str("NO_")?;
                    }
                    f.write_str(feat.name())?;
                }
                Ok(())
            }
        }
    }
}
