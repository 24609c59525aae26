//! The kernel command line: `hz=N`, `ktest[=filter]`, `preempt=MODE`,
//! `idle_poll=US`, `nohz=on|off`, `seed=N`, and last `run=CMD;CMD;...`.
//!
//! `run=` takes the rest of the line (spaces included): shell commands
//! separated by `;`, which the shell runs before its first prompt, echoed as
//! if typed. This is how `make ab` hands a script to a reproducible
//! (`-icount`) boot without typing on the serial port, so two boots of the
//! same script print the same bytes. Every command is parsed here first;
//! if one is not a valid command the whole script is refused with a warning
//! naming it, and the shell starts at its prompt as usual.
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
    /// `seed=N`: seeds the pauses `compare` takes before each run.
    pub seed: Option<u64>,
    /// `run=...`: a validated shell script (`;`-separated commands).
    pub run: Option<&'static str>,
}

/// Longest `run=` script accepted (x86_64 copies 1 KiB of command line).
pub const RUN_MAX: usize = 1000;

impl Default for BootArgs {
    fn default() -> Self {
        BootArgs {
            hz: DEFAULT_HZ,
            ktest: None,
            preempt: None,
            idle_poll_us: None,
            nohz: None,
            seed: None,
            run: None,
        }
    }
}

impl BootArgs {
    /// Drops a `run=` script that does not parse, with a warning (needs the
    /// heap: call after `heap::init`).
    pub fn check_run(&mut self, mut warn: impl FnMut(&str, &str)) {
        if let Some(script) = self.run {
            if let Err(e) = check_script(script) {
                warn("run=", &alloc::format!("{e}; the script is ignored"));
                self.run = None;
            }
        }
    }
}

/// Checks a `run=` script: every `;`-separated piece parses as a shell
/// command (blank pieces are skipped). The error names the bad piece.
pub fn check_script(script: &str) -> Result<usize, alloc::string::String> {
    if script.len() > RUN_MAX {
        return Err(alloc::format!("longer than {RUN_MAX} bytes"));
    }
    let mut n = 0;
    for (i, cmd) in script.split(';').enumerate() {
        match ::shell::parse(cmd) {
            Ok(None) => {}
            Ok(Some(_)) => n += 1,
            Err(e) => return Err(alloc::format!("command {} '{}': {e}", i + 1, cmd.trim())),
        }
    }
    if n == 0 {
        return Err(alloc::string::String::from("no command"));
    }
    Ok(n)
}

/// Parses `cmdline`, calling `warn` once per ignored word with the reason.
pub fn parse(cmdline: &'static str, mut warn: impl FnMut(&str, &str)) -> BootArgs {
    let mut args = BootArgs::default();
    // `run=` takes the rest of the line.
    let (cmdline, run) = match cmdline.find("run=") {
        Some(i) if i == 0 || cmdline.as_bytes()[i - 1].is_ascii_whitespace() => {
            (&cmdline[..i], Some(&cmdline[i + 4..]))
        }
        _ => (cmdline, None),
    };
    // Checked by `check_run` once there is a heap.
    args.run = run;
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
            ("seed", Some(v)) => match v.parse::<u64>() {
                Ok(n) => args.seed = Some(n),
                Err(_) => warn(word, "seed must be a decimal integer"),
            },
            ("seed", None) => warn(word, "seed needs a value (seed=1)"),
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
            seed: None,
            run: None,
        }
    );
    crate::kassert_eq!(warnings, 0);
    let p = |s: &'static str, w: &mut u32| {
        let mut a = parse(s, |_, _| *w += 1);
        a.check_run(|_, _| *w += 1);
        a
    };
    let a = p(
        "seed=7 run=features NEXT_BUDDY; ps ;poweroff",
        &mut warnings,
    );
    crate::kassert_eq!(a.seed, Some(7));
    crate::kassert_eq!(a.run, Some("features NEXT_BUDDY; ps ;poweroff"));
    crate::kassert_eq!(warnings, 0);
    // A bad command refuses the whole script; words before run= still count.
    let a = p("hz=100 run=ps; bogus 1; poweroff", &mut warnings);
    crate::kassert_eq!((a.hz, a.run, warnings), (100, None, 1));
    let a = p("run=; ;", &mut warnings);
    crate::kassert_eq!((a.run, warnings), (None, 2));
    let a = p("seed=x seed norun=ps", &mut warnings);
    crate::kassert_eq!((a.seed, a.run, warnings), (None, None, 5));
    warnings = 0;
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
            seed: None,
            run: None,
        }
    );
    crate::kassert_eq!(warnings, 11);
    Ok(())
});
