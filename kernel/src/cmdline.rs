//! The kernel command line: `hz=N`, `ktest[=filter]`, `preempt=MODE`,
//! `idle_poll=US`, `nohz=on|off`.
//!
//! Parsing never fails and never panics: an unknown word, a malformed number or
//! an out-of-range value prints a warning naming the word and is ignored (the
//! default stays).

use sched::PreemptMode;

/// Default tick rate.
pub const DEFAULT_HZ: u32 = 250;
/// Accepted tick rates.
pub const HZ_RANGE: core::ops::RangeInclusive<u32> = 10..=1000;

/// Longest idle polling window accepted, us.
pub const IDLE_POLL_MAX_US: u64 = 1000;

/// What the command line asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootArgs {
    /// Tick rate.
    pub hz: u32,
    /// Run the in-kernel tests whose name contains this filter (`""`: all).
    pub ktest: Option<&'static str>,
    /// Preemption model, when given.
    pub preempt: Option<PreemptMode>,
    /// How long an idle CPU polls before it halts, us, when given.
    pub idle_poll_us: Option<u64>,
    /// Tickless idle (idle CPUs other than CPU 0 stop their tick), when given.
    pub nohz: Option<bool>,
}

impl Default for BootArgs {
    fn default() -> Self {
        BootArgs {
            hz: DEFAULT_HZ,
            ktest: None,
            preempt: None,
            idle_poll_us: None,
            nohz: None,
        }
    }
}

/// Parses `cmdline`, calling `warn` once per ignored word with the reason.
pub fn parse(cmdline: &'static str, mut warn: impl FnMut(&str, &str)) -> BootArgs {
    let mut args = BootArgs::default();
    for word in cmdline.split_ascii_whitespace() {
        let (key, value) = match word.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (word, None),
        };
        match (key, value) {
            ("hz", Some(v)) => match v.parse::<u32>() {
                Ok(hz) if HZ_RANGE.contains(&hz) => args.hz = hz,
                Ok(_) => warn(word, "hz out of range 10..=1000; keeping the default"),
                Err(_) => warn(word, "hz is not a number; keeping the default"),
            },
            ("hz", None) => warn(word, "hz needs a value (hz=250)"),
            ("ktest", None) => args.ktest = Some(""),
            ("ktest", Some(f)) => args.ktest = Some(f),
            ("preempt", Some(v)) => match PreemptMode::from_name(v) {
                Some(m) => args.preempt = Some(m),
                None => warn(word, "preempt must be none, voluntary, full or lazy"),
            },
            ("preempt", None) => warn(word, "preempt needs a value (preempt=full)"),
            ("idle_poll", Some(v)) => match v.parse::<u64>() {
                Ok(us) if us <= IDLE_POLL_MAX_US => args.idle_poll_us = Some(us),
                Ok(_) => warn(
                    word,
                    "idle_poll out of range 0..=1000 (us); keeping the default",
                ),
                Err(_) => warn(word, "idle_poll is not a number; keeping the default"),
            },
            ("idle_poll", None) => warn(word, "idle_poll needs a value in us (idle_poll=50)"),
            ("nohz", Some("on")) => args.nohz = Some(true),
            ("nohz", Some("off")) => args.nohz = Some(false),
            ("nohz", _) => warn(word, "nohz must be on or off"),
            _ => warn(word, "unknown argument"),
        }
    }
    args
}

crate::ktest!(cmdline_parse, || {
    let mut warnings = 0;
    let a = parse(
        "hz=100 ktest=sched preempt=lazy idle_poll=0 nohz=off",
        |_, _| warnings += 1,
    );
    crate::kassert_eq!(
        a,
        BootArgs {
            hz: 100,
            ktest: Some("sched"),
            preempt: Some(PreemptMode::Lazy),
            idle_poll_us: Some(0),
            nohz: Some(false),
        }
    );
    crate::kassert_eq!(warnings, 0);
    let a = parse(
        "  hz=5 hz=abc hz= hz preempt=sometimes bogus ktest  =x idle_poll=5000 idle_poll nohz nohz=1",
        |_, _| warnings += 1,
    );
    crate::kassert_eq!(
        a,
        BootArgs {
            hz: DEFAULT_HZ,
            ktest: Some(""),
            preempt: None,
            idle_poll_us: None,
            nohz: None,
        }
    );
    crate::kassert_eq!(warnings, 11);
    Ok(())
});
