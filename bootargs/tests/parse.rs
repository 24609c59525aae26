//! The boot-argument parser: accepted words, rejected words (each warned
//! about once, the default kept), and that random input never panics.

use bootargs::{parse, BootArgs, FaultCase, KtestSuite, DEFAULT_HZ};
use proptest::prelude::*;
use sched::PreemptMode;

#[test]
fn accepts_every_argument() {
    let mut warnings = 0;
    let a = parse(
        "hz=100 ktest=sched ktest_suite=timing ktest_repeat=30 preempt=lazy idle_poll=0 nohz=off",
        |_, _| warnings += 1,
    );
    assert_eq!(
        a,
        BootArgs {
            hz: 100,
            ktest: Some("sched"),
            ktest_suite: Some(KtestSuite::Timing),
            ktest_repeat: 30,
            preempt: Some(PreemptMode::Lazy),
            idle_poll_us: Some(0),
            nohz: Some(false),
            seed: None,
            run: None,
            fault: None,
            fail_alloc: None,
            fail_cpu_start: None,
            cpu_capacity: None,
            schedstats: None,
        }
    );
    assert_eq!(warnings, 0);
    let a = parse(
        "seed=7 hz=100 run=features NEXT_BUDDY; ps ;poweroff",
        |_, _| warnings += 1,
    );
    assert_eq!((a.seed, a.hz), (Some(7), 100));
    assert_eq!(a.run, Some("features NEXT_BUDDY; ps ;poweroff"));
    // Only at the start of a word: `norun=` is an unknown argument.
    let a = parse("norun=ps seed=x seed", |_, _| warnings += 1);
    assert_eq!((a.run, a.seed, warnings), (None, None, 3));
    warnings = 0;
    let a = parse("ktest_suite=concurrency ktest_suite=all", |_, _| {
        warnings += 1
    });
    assert_eq!(a.ktest_suite, None);
    assert_eq!(warnings, 0);
}

#[test]
fn fault_cases_round_trip_and_bad_ones_change_nothing() {
    for case in FaultCase::ALL {
        let line = format!("hz=100 fault={}", case.name());
        let mut warnings = 0;
        let a = parse(&line, |_, _| warnings += 1);
        assert_eq!((a.fault, a.hz, warnings), (Some(case), 100, 0), "{line}");
    }
    let mut warned = Vec::new();
    let a = parse(
        "fault=panic fault=Panic fault= fault fault=recursion2",
        |w, why| warned.push((w.to_string(), why.to_string())),
    );
    // The good word before the bad ones stays; each bad one is named.
    assert_eq!(a.fault, Some(FaultCase::Panic));
    let words: Vec<&str> = warned.iter().map(|(w, _)| w.as_str()).collect();
    assert_eq!(
        words,
        ["fault=Panic", "fault=", "fault", "fault=recursion2"]
    );
    assert!(warned[0].1.contains("huge_frame"), "{:?}", warned[0]);
    assert_eq!(parse("fault=bogus", |_, _| {}), BootArgs::default());
}

#[test]
fn rejects_and_keeps_defaults() {
    let mut warned = Vec::new();
    let a = parse(
        "  hz=5 hz=abc hz= hz preempt=sometimes bogus ktest  =x idle_poll=5000 idle_poll nohz nohz=1 ktest_suite ktest_suite=fast ktest_repeat=0 ktest_repeat=10001 ktest_repeat=x ktest_repeat",
        |w, _| warned.push(w.to_string()),
    );
    assert_eq!(
        a,
        BootArgs {
            ktest: Some(""),
            ..BootArgs::default()
        }
    );
    assert_eq!(a.hz, DEFAULT_HZ);
    assert_eq!(
        warned,
        [
            "hz=5",
            "hz=abc",
            "hz=",
            "hz",
            "preempt=sometimes",
            "bogus",
            "=x",
            "idle_poll=5000",
            "idle_poll",
            "nohz",
            "nohz=1",
            "ktest_suite",
            "ktest_suite=fast",
            "ktest_repeat=0",
            "ktest_repeat=10001",
            "ktest_repeat=x",
            "ktest_repeat"
        ]
    );
}

proptest! {
    /// Any input: no panic, and every word is either applied or warned about
    /// (never both, never silently dropped).
    #[test]
    fn never_panics_and_accounts_for_every_word(s in "(hz|ktest|ktest_suite|preempt|idle_poll|nohz|[a-z_]{0,8})(=[ -~]{0,8})?( [ -~]{0,12}){0,4}") {
        let mut warned = 0usize;
        let _ = parse(&s, |_, _| warned += 1);
        prop_assert!(warned <= s.split_ascii_whitespace().count());
    }
}

#[test]
fn acpi_rsdp_values_are_checked_and_change_no_field() {
    let mut warned = Vec::new();
    let a = parse(
        "acpi_rsdp=auto acpi_rsdp=efi acpi_rsdp=bios acpi_rsdp=BIOS acpi_rsdp",
        |w, _| warned.push(w.to_string()),
    );
    // The boot code reads the word itself; the parser only vouches for it.
    assert_eq!(a, BootArgs::default());
    assert_eq!(warned, ["acpi_rsdp=BIOS", "acpi_rsdp"]);
}

#[test]
fn fail_alloc_takes_percent_and_seed_and_refuses_the_rest() {
    use bootargs::FailAlloc;
    let a = bootargs::parse("fail_alloc=10,42", |w, r| panic!("{w}: {r}"));
    assert_eq!(
        a.fail_alloc,
        Some(FailAlloc {
            percent: 10,
            seed: 42
        })
    );
    assert_eq!(FailAlloc::parse("off"), Ok(FailAlloc::default()));
    assert_eq!(
        FailAlloc::parse("100,0").map(|f| f.to_string()),
        Ok("100,0".into())
    );
    assert_eq!(
        FailAlloc::parse("0,7").map(|f| f.to_string()),
        Ok("off".into())
    );
    for bad in ["", "10", "101,1", "-1,1", "x,1", "10,", "10,-1", "10,1,2"] {
        let mut warned = Vec::new();
        let line = format!("fail_alloc={bad}");
        let a = bootargs::parse(&line, |w, r| warned.push(format!("{w}: {r}")));
        assert_eq!(a.fail_alloc, None, "{bad:?}");
        assert_eq!(warned.len(), 1, "{bad:?}: {warned:?}");
        assert!(FailAlloc::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn fail_cpu_start_takes_a_secondary_cpu_and_refuses_the_rest() {
    let a = bootargs::parse("fail_cpu_start=3", |w, r| panic!("{w}: {r}"));
    assert_eq!(a.fail_cpu_start, Some(3));
    let a = bootargs::parse("fail_cpu_start=255", |w, r| panic!("{w}: {r}"));
    assert_eq!(a.fail_cpu_start, Some(bootargs::FAIL_CPU_START_MAX));
    for bad in [
        "fail_cpu_start=0",
        "fail_cpu_start=256",
        "fail_cpu_start=-1",
        "fail_cpu_start=x",
        "fail_cpu_start=",
        "fail_cpu_start",
    ] {
        let mut warned = Vec::new();
        let a = bootargs::parse(bad, |w, r| warned.push(format!("{w}: {r}")));
        assert_eq!(a, BootArgs::default(), "{bad:?}");
        assert_eq!(warned.len(), 1, "{bad:?}: {warned:?}");
        assert!(warned[0].starts_with(bad), "{bad:?}: {warned:?}");
    }
}

#[test]
fn cpu_capacity_takes_a_list_and_refuses_the_rest() {
    let a = bootargs::parse("cpu_capacity=530,530,1024,1024", |w, r| panic!("{w}: {r}"));
    assert_eq!(
        a.cpu_capacity.map(|c| c.as_slice().to_vec()),
        Some(vec![530, 530, 1024, 1024])
    );
    let max = format!("cpu_capacity={}", vec!["1000000"; 256].join(","));
    let a = bootargs::parse(&max, |w, r| panic!("{w}: {r}"));
    assert_eq!(a.cpu_capacity.map(|c| c.as_slice().len()), Some(256));
    let too_many = format!("cpu_capacity={}", vec!["1"; 257].join(","));
    for bad in [
        "cpu_capacity",
        "cpu_capacity=",
        "cpu_capacity=0,1024",
        "cpu_capacity=1024,1000001",
        "cpu_capacity=1024,,1024",
        "cpu_capacity=1024,x",
        "cpu_capacity=-1",
        too_many.as_str(),
    ] {
        let mut warned = Vec::new();
        let a = bootargs::parse(bad, |w, r| warned.push(format!("{w}: {r}")));
        assert_eq!(a, BootArgs::default(), "{bad:?}");
        assert_eq!(warned.len(), 1, "{bad:?}: {warned:?}");
    }
}

#[test]
fn schedstats_takes_enable_or_disable_and_refuses_the_rest() {
    let a = parse("schedstats=enable", |w, r| panic!("{w}: {r}"));
    assert_eq!(a.schedstats, Some(true));
    let a = parse("schedstats=enable schedstats=disable", |w, r| {
        panic!("{w}: {r}")
    });
    assert_eq!(a.schedstats, Some(false));
    // Linux's sysctl values are not the boot argument's; a bad word keeps
    // the value before it (here none) and is named with what is accepted.
    let mut warned = Vec::new();
    let a = parse(
        "schedstats schedstats= schedstats=1 schedstats=on schedstats=Enable",
        |w, why| warned.push((w.to_string(), why.to_string())),
    );
    assert_eq!(a, BootArgs::default());
    let words: Vec<&str> = warned.iter().map(|(w, _)| w.as_str()).collect();
    assert_eq!(
        words,
        [
            "schedstats",
            "schedstats=",
            "schedstats=1",
            "schedstats=on",
            "schedstats=Enable"
        ]
    );
    assert!(warned
        .iter()
        .all(|(_, why)| why == "schedstats must be enable or disable"));
    let a = parse("schedstats=enable schedstats=bogus", |_, _| {});
    assert_eq!(a.schedstats, Some(true));
}

#[test]
fn schedstats_sysctl_takes_one_or_zero() {
    use bootargs::parse_schedstats_sysctl as p;
    assert_eq!((p("1"), p("0")), (Ok(true), Ok(false)));
    for bad in ["", "2", "-1", "01", "on", "enable", " 1", "1 "] {
        let e = p(bad).expect_err(bad);
        assert!(e.contains("must be 1") && e.contains("or 0"), "{bad}: {e}");
    }
}
