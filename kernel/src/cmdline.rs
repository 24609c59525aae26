//! The kernel command line: `hz=N`, `ktest[=filter]`, `ktest_suite=SUITE`,
//! `preempt=MODE`, `idle_poll=US`, `nohz=on|off`, `seed=N`, and last
//! `run=CMD;CMD;...`.
//!
//! The parser is the `bootargs` crate (pure, `no_std`), so the host tests and
//! the fuzzer (`make fuzz`) run the same code: parsing never fails and never
//! panics; an unknown word, a malformed number or an out-of-range value
//! prints a warning naming the word and is ignored (the default stays).
//!
//! `run=` takes the rest of the line (spaces included): shell commands
//! separated by `;`, which the shell runs before its first prompt, echoed as
//! if typed. This is how `make ab` hands a script to a reproducible
//! (`-icount`) boot without typing on the serial port, so two boots of the
//! same script print the same bytes. Every command is parsed here first
//! ([`check_run`]); if one is not a valid command the whole script is
//! refused with a warning naming it, and the shell starts at its prompt.

pub use bootargs::{parse, BootArgs, DEFAULT_HZ};

/// Longest `run=` script accepted (x86_64 copies 1 KiB of command line).
pub const RUN_MAX: usize = 1000;

/// Drops a `run=` script that does not parse, with a warning (needs the
/// heap: call after `heap::init`).
pub fn check_run(args: &mut BootArgs<'_>, mut warn: impl FnMut(&str, &str)) {
    if let Some(script) = args.run {
        if let Err(e) = check_script(script) {
            warn("run=", &alloc::format!("{e}; the script is ignored"));
            args.run = None;
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

crate::ktest!(cmdline_parse, || {
    let mut warnings = 0;
    let a = parse(
        "hz=100 ktest=sched ktest_suite=timing preempt=lazy idle_poll=0 nohz=off",
        |_, _| warnings += 1,
    );
    crate::kassert_eq!(a.hz, 100);
    crate::kassert_eq!(a.ktest, Some("sched"));
    crate::kassert_eq!(a.ktest_suite, Some(bootargs::KtestSuite::Timing));
    crate::kassert_eq!(warnings, 0);
    let a = parse("  hz=5 hz=abc bogus ktest nohz=1", |_, _| warnings += 1);
    crate::kassert_eq!(a.hz, DEFAULT_HZ);
    crate::kassert_eq!(a.ktest, Some(""));
    crate::kassert_eq!(warnings, 4);
    warnings = 0;
    let p = |s: &'static str, w: &mut u32| {
        let mut a = parse(s, |_, _| *w += 1);
        check_run(&mut a, |_, _| *w += 1);
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
    Ok(())
});
