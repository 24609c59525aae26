//! The `SCHED_FEAT` table: Linux's fair-class feature flags, in one list.
//!
//! Every flag has a compile-time default (Linux 6.19's, and for HRTICK and
//! NI_RATE Linux 7.2's as Debian builds it, unless a `FEAT_ON_<NAME>` / `FEAT_OFF_<NAME>`
//! cargo feature overrides it) and can be flipped at run time
//! without a lock: a [`Features`] set is one atomic word read with relaxed
//! ordering at each decision, like Linux's static keys. Text follows
//! `/sys/kernel/debug/sched/features`: reading prints every name in table order,
//! disabled ones as `NO_NAME`; writing takes one `NAME` or `NO_NAME`, and an
//! unknown name is an error that changes nothing.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};

macro_rules! sched_features {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal, $default:literal,
        on: $on:literal, off: $off:literal; )*) => {
        /// One scheduler feature flag. The declaration order is the table order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Feature {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Feature {
            /// Every feature, in table order.
            pub const ALL: &'static [Feature] = &[ $( Feature::$variant, )* ];

            /// The Linux name (`NEXT_BUDDY`).
            pub const fn name(self) -> &'static str {
                match self { $( Feature::$variant => $name, )* }
            }

            /// The one-line description from the table.
            pub const fn doc(self) -> &'static str {
                match self { $( Feature::$variant => concat!($($doc),*), )* }
            }

            /// The compile-time default: Linux 6.19's, unless overridden by a
            /// `FEAT_ON_<NAME>` / `FEAT_OFF_<NAME>` cargo feature.
            pub const fn default_enabled(self) -> bool {
                match self {
                    $( Feature::$variant => ($default || cfg!(feature = $on)) && !cfg!(feature = $off), )*
                }
            }

            /// The cargo features that override the default (`cfg!` takes
            /// only literals, so each row spells them out; a test checks them
            /// against the name and against Cargo.toml).
            #[cfg(test)]
            const fn cargo_features(self) -> (&'static str, &'static str) {
                match self { $( Feature::$variant => ($on, $off), )* }
            }
        }
    };
}

sched_features! {
    /// Keep a task's lag across sleep and migration (placement strategy #1); off places wakees at the average V.
    PlaceLag = "PLACE_LAG", true, on: "FEAT_ON_PLACE_LAG", off: "FEAT_OFF_PLACE_LAG";
    /// A new task's first virtual deadline uses half a slice, so forks start sooner.
    PlaceDeadlineInitial = "PLACE_DEADLINE_INITIAL", true, on: "FEAT_ON_PLACE_DEADLINE_INITIAL", off: "FEAT_OFF_PLACE_DEADLINE_INITIAL";
    /// Keep the relative deadline (deadline - vruntime) over a non-sleep dequeue/enqueue (migration, reweight).
    PlaceRelDeadline = "PLACE_REL_DEADLINE", true, on: "FEAT_ON_PLACE_REL_DEADLINE", off: "FEAT_OFF_PLACE_REL_DEADLINE";
    /// Protect the running task up to min(own slice, shortest queued slice) before a repick.
    RunToParity = "RUN_TO_PARITY", true, on: "FEAT_ON_RUN_TO_PARITY", off: "FEAT_OFF_RUN_TO_PARITY";
    /// A wakee with a shorter slice may cancel the running task's protection and preempt.
    PreemptShort = "PREEMPT_SHORT", true, on: "FEAT_ON_PREEMPT_SHORT", off: "FEAT_OFF_PREEMPT_SHORT";
    /// Nominate the wakee as the next buddy (Mel Gorman's EEVDF rework; off again in 6.19 final).
    NextBuddy = "NEXT_BUDDY", false, on: "FEAT_ON_NEXT_BUDDY", off: "FEAT_OFF_NEXT_BUDDY";
    /// Honour the next buddy at pick time when it is eligible.
    PickBuddy = "PICK_BUDDY", true, on: "FEAT_ON_PICK_BUDDY", off: "FEAT_OFF_PICK_BUDDY";
    /// The load balancer treats the next buddy as cache-hot and leaves it in place.
    CacheHotBuddy = "CACHE_HOT_BUDDY", true, on: "FEAT_ON_CACHE_HOT_BUDDY", off: "FEAT_OFF_CACHE_HOT_BUDDY";
    /// A task that sleeps with negative lag stays queued (delayed) until it is eligible.
    DelayDequeue = "DELAY_DEQUEUE", true, on: "FEAT_ON_DELAY_DEQUEUE", off: "FEAT_OFF_DELAY_DEQUEUE";
    /// Clip lag to <= 0 when a delayed dequeue completes or the delayed task wakes.
    DelayZero = "DELAY_ZERO", true, on: "FEAT_ON_DELAY_ZERO", off: "FEAT_OFF_DELAY_ZERO";
    /// Master switch for fair-class wakeup preemption.
    WakeupPreemption = "WAKEUP_PREEMPTION", true, on: "FEAT_ON_WAKEUP_PREEMPTION", off: "FEAT_OFF_WAKEUP_PREEMPTION";
    /// End a fair slice in the middle of a tick: a one-shot per-CPU timer armed for the rest of the running task's request (Linux 7.x: on where hrtimer rearming is deferred, as in Debian's build).
    Hrtick = "HRTICK", true, on: "FEAT_ON_HRTICK", off: "FEAT_OFF_HRTICK";
    /// Queue a remote wakeup on the target CPU's wake list and send an IPI instead of locking its runqueue, where Linux's `ttwu_queue_cond()` allows it: a CPU of another LLC, or one with nothing queued ([`crate::smp::Scheduler::ttwu_queue_cond`]).
    TtwuQueue = "TTWU_QUEUE", true, on: "FEAT_ON_TTWU_QUEUE", off: "FEAT_OFF_TTWU_QUEUE";
    /// Limit the wakeup's scan of the LLC for an idle CPU by the LLC's summed PELT utilisation: `nr_idle_scan` CPUs, recomputed by the periodic balance of the LLC domain, none at ~85% (Linux 6.0, commit 70fb5ccf2ebb).
    SisUtil = "SIS_UTIL", true, on: "FEAT_ON_SIS_UTIL", off: "FEAT_OFF_SIS_UTIL";
    /// Wake-affine: prefer the waking CPU when it is (about to be) idle.
    WaIdle = "WA_IDLE", true, on: "FEAT_ON_WA_IDLE", off: "FEAT_OFF_WA_IDLE";
    /// Wake-affine: compare the load of the waking and the previous CPU.
    WaWeight = "WA_WEIGHT", true, on: "FEAT_ON_WA_WEIGHT", off: "FEAT_OFF_WA_WEIGHT";
    /// Wake-affine by load: weigh the previous CPU's load up by half the domain's imbalance margin, a bias toward the waker's CPU.
    WaBias = "WA_BIAS", true, on: "FEAT_ON_WA_BIAS", off: "FEAT_OFF_WA_BIAS";
    /// Keep util_est: a task's estimate takes a sample at each sleep, and the root fair runqueue sums its queued tasks' estimates, which a CPU's utilisation (`cpu_util_cfs`) maxes in; off freezes every estimate where it is.
    UtilEst = "UTIL_EST", true, on: "FEAT_ON_UTIL_EST", off: "FEAT_OFF_UTIL_EST";
    /// Newidle balance each domain level with a probability that follows its recent success ratio (Linux 6.19, commit 33cf66d88306).
    NiRandom = "NI_RANDOM", true, on: "FEAT_ON_NI_RANDOM", off: "FEAT_OFF_NI_RANDOM";
    /// The newidle success ratio also grows with the time between newidle calls, so a CPU that rarely goes newly idle keeps balancing (Linux 7.0, commit 9fe89f022c05).
    NiRate = "NI_RATE", true, on: "FEAT_ON_NI_RATE", off: "FEAT_OFF_NI_RATE";
    /// Ours, default off: the 6.19-rc1..rc6 rule "reschedule when the waker is no longer eligible" (removed in rc7).
    NextBuddyIneligibleResched = "NEXT_BUDDY_INELIGIBLE_RESCHED", false, on: "FEAT_ON_NEXT_BUDDY_INELIGIBLE_RESCHED", off: "FEAT_OFF_NEXT_BUDDY_INELIGIBLE_RESCHED";
    /// Ours, default off: preempt_sync measures the waker's runtime since its last pick, not since the last update_curr.
    NextBuddySyncRuntime = "NEXT_BUDDY_SYNC_RUNTIME", false, on: "FEAT_ON_NEXT_BUDDY_SYNC_RUNTIME", off: "FEAT_OFF_NEXT_BUDDY_SYNC_RUNTIME";
}

impl Feature {
    /// The bit of this feature in a [`Features`] word.
    #[inline]
    pub const fn bit(self) -> u64 {
        1 << self as u8
    }

    /// Looks a feature up by its Linux name (exact, upper case).
    pub fn from_name(name: &str) -> Option<Feature> {
        Feature::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// The mask of every feature's compile-time default.
    pub const fn default_mask() -> u64 {
        let mut mask = 0;
        let mut i = 0;
        while i < Feature::ALL.len() {
            if Feature::ALL[i].default_enabled() {
                mask |= Feature::ALL[i].bit();
            }
            i += 1;
        }
        mask
    }
}

/// Why a feature write was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeatureError {
    /// The text was empty (or only whitespace).
    Empty,
    /// No feature has that name (Linux answers -EINVAL).
    Unknown,
}

impl fmt::Display for FeatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FeatureError::Empty => f.write_str("expected NAME or NO_NAME"),
            FeatureError::Unknown => f.write_str("unknown feature"),
        }
    }
}

/// A set of feature flags, flipped at run time with atomic stores.
#[derive(Debug)]
pub struct Features {
    bits: AtomicU64,
}

impl Default for Features {
    fn default() -> Self {
        Self::new()
    }
}

impl Features {
    /// The compile-time defaults.
    pub const fn new() -> Self {
        Features {
            bits: AtomicU64::new(Feature::default_mask()),
        }
    }

    /// Is `f` enabled? (Linux's `sched_feat(F)`.)
    #[inline]
    pub fn enabled(&self, f: Feature) -> bool {
        self.bits.load(Ordering::Relaxed) & f.bit() != 0
    }

    /// Turns `f` on or off.
    pub fn set(&self, f: Feature, on: bool) {
        if on {
            self.bits.fetch_or(f.bit(), Ordering::Relaxed);
        } else {
            self.bits.fetch_and(!f.bit(), Ordering::Relaxed);
        }
    }

    /// The raw mask, bit `i` for the feature at table index `i`.
    pub fn mask(&self) -> u64 {
        self.bits.load(Ordering::Relaxed)
    }

    /// Parses one `NAME` or `NO_NAME` (surrounding whitespace ignored) without
    /// applying it.
    pub fn parse(text: &str) -> Result<(Feature, bool), FeatureError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(FeatureError::Empty);
        }
        if let Some(f) = Feature::from_name(t) {
            return Ok((f, true));
        }
        match t.strip_prefix("NO_").and_then(Feature::from_name) {
            Some(f) => Ok((f, false)),
            None => Err(FeatureError::Unknown),
        }
    }

    /// Applies one `NAME` or `NO_NAME` write; an error changes nothing.
    pub fn write(&self, text: &str) -> Result<(Feature, bool), FeatureError> {
        let (f, on) = Self::parse(text)?;
        self.set(f, on);
        Ok((f, on))
    }
}

/// Prints the `sched/features` line: every name in table order, each followed by a
/// space, disabled ones with a `NO_` prefix (no trailing newline).
impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mask = self.mask();
        for feat in Feature::ALL {
            if mask & feat.bit() == 0 {
                f.write_str("NO_")?;
            }
            f.write_str(feat.name())?;
            f.write_str(" ")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;
    use std::string::{String, ToString};
    use std::vec::Vec;

    #[test]
    fn defaults_match_linux_6_19() {
        let fs = Features::new();
        for (f, on) in [
            (Feature::PlaceLag, true),
            (Feature::PlaceDeadlineInitial, true),
            (Feature::PlaceRelDeadline, true),
            (Feature::RunToParity, true),
            (Feature::PreemptShort, true),
            (Feature::NextBuddy, false),
            (Feature::PickBuddy, true),
            (Feature::CacheHotBuddy, true),
            (Feature::DelayDequeue, true),
            (Feature::DelayZero, true),
            (Feature::WakeupPreemption, true),
            (Feature::Hrtick, true),
            (Feature::TtwuQueue, true),
            (Feature::SisUtil, true),
            (Feature::WaIdle, true),
            (Feature::WaWeight, true),
            (Feature::WaBias, true),
            (Feature::UtilEst, true),
            (Feature::NiRandom, true),
            (Feature::NiRate, true),
            (Feature::NextBuddyIneligibleResched, false),
            (Feature::NextBuddySyncRuntime, false),
        ] {
            assert_eq!(fs.enabled(f), on, "{}", f.name());
        }
    }

    #[test]
    fn text_round_trip_like_debugfs() {
        let fs = Features::new();
        let line = fs.to_string();
        assert!(line.starts_with("PLACE_LAG PLACE_DEADLINE_INITIAL "));
        assert!(line.contains(" NO_NEXT_BUDDY "));
        assert!(line.ends_with("NO_NEXT_BUDDY_SYNC_RUNTIME "));
        assert_eq!(line.split_whitespace().count(), Feature::ALL.len());
        assert_eq!(fs.write("NEXT_BUDDY"), Ok((Feature::NextBuddy, true)));
        assert!(fs.to_string().contains(" NEXT_BUDDY "));
        assert_eq!(
            fs.write("  NO_RUN_TO_PARITY\n"),
            Ok((Feature::RunToParity, false))
        );
        assert!(fs.to_string().contains("NO_RUN_TO_PARITY"));
        assert!(!fs.enabled(Feature::RunToParity));
    }

    #[test]
    fn unknown_names_change_nothing() {
        let fs = Features::new();
        let before = fs.mask();
        for bad in [
            "",
            "   ",
            "NEXT_BUDDYX",
            "next_buddy",
            "NO_",
            "NO_NO_NEXT_BUDDY",
            "NO_BOGUS",
            "NEXT BUDDY",
        ] {
            assert!(fs.write(bad).is_err(), "{bad:?}");
            assert_eq!(fs.mask(), before, "{bad:?}");
        }
    }

    /// The `FEAT_*` keys of the `[features]` table of a Cargo.toml text,
    /// each checked to enable nothing else (`= []`).
    fn cargo_toml_feat_keys(toml: &str) -> Vec<String> {
        let mut in_features = false;
        let mut keys = Vec::new();
        for line in toml.lines().map(str::trim) {
            if line.starts_with('[') {
                in_features = line == "[features]";
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let key = key.trim().trim_matches('"');
            if in_features && !line.starts_with('#') && key.starts_with("FEAT_") {
                assert_eq!(value.trim(), "[]", "{key} must enable nothing else");
                keys.push(key.to_string());
            }
        }
        keys.sort();
        keys
    }

    /// Cargo cannot generate features, so Cargo.toml lists the overrides of
    /// every row by hand: they must be exactly `FEAT_ON_<NAME>` and
    /// `FEAT_OFF_<NAME>` of the rows of the table, no more and no fewer, and
    /// be the names the table's `cfg!`s test. Reads the manifest the crate
    /// is built from, so it also checks a packaged (normalised) copy.
    #[test]
    fn cargo_toml_lists_exactly_the_table_overrides() {
        let toml = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
        let mut want = Vec::new();
        for f in Feature::ALL {
            let (on, off) = (
                format!("FEAT_ON_{}", f.name()),
                format!("FEAT_OFF_{}", f.name()),
            );
            assert_eq!(
                f.cargo_features(),
                (on.as_str(), off.as_str()),
                "{}",
                f.name()
            );
            want.extend([on, off]);
        }
        let got = cargo_toml_feat_keys(toml);
        let missing: Vec<_> = want.iter().filter(|k| !got.contains(k)).collect();
        let extra: Vec<_> = got.iter().filter(|k| !want.contains(k)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "Cargo.toml [features]: missing {missing:?}, not in the table {extra:?}"
        );
        assert_eq!(got.len(), want.len());
        // The reader itself: a key outside [features] does not count, a
        // commented one neither, a quoted one does.
        let sample = "[features]\nFEAT_ON_A = []\n# FEAT_ON_B = []\n\"FEAT_OFF_A\" = []\n\
                      [dependencies]\nFEAT_ON_C = \"1\"\n";
        assert_eq!(cargo_toml_feat_keys(sample), ["FEAT_OFF_A", "FEAT_ON_A"]);
    }

    #[test]
    fn every_name_and_doc_is_set() {
        for f in Feature::ALL {
            assert_eq!(Feature::from_name(f.name()), Some(*f));
            assert!(!f.doc().is_empty());
        }
        assert!(Feature::ALL.len() < 64);
    }
}
