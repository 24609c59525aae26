//! The kernel command line: `hz=N`, `ktest[=filter]`, `ktest_suite=SUITE`,
//! `preempt=MODE`, `idle_poll=US`, `nohz=on|off`.
//!
//! The parser is the `bootargs` crate (pure, `no_std`), so the host tests and
//! the fuzzer (`make fuzz`) run the same code: parsing never fails and never
//! panics; an unknown word, a malformed number or an out-of-range value
//! prints a warning naming the word and is ignored (the default stays).

pub use bootargs::{parse, DEFAULT_HZ};

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
    Ok(())
});
