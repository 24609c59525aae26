//! `compare`: its parser (good and bad lines, with the exact error lines), the
//! per-run line round trip and the table's format (the statistics are the
//! `stats` crate's, tested there against published values).

use sched::{Feature, PreemptMode};
use shell::compare::{write_run_line, write_table, Kind, RunLine, Series};
use shell::{parse, Command, Compare, Hackbench, Perfpipe, Setting, YieldPp};

fn ok(line: &str) -> Compare {
    match parse(line) {
        Ok(Some(Command::Compare(c))) => c,
        other => panic!("{line:?}: {other:?}"),
    }
}

#[track_caller]
fn err_is(line: &str, want: &str) {
    match parse(line) {
        Err(e) => assert_eq!(e.to_string(), want, "{line:?}"),
        other => panic!("{line:?} should fail: {other:?}"),
    }
}

#[test]
fn compare_parses_configs_and_workload() {
    let c = ok("compare -c '' -c NEXT_BUDDY -- hackbench -g 2");
    assert_eq!((c.runs, c.warmup), (5, 1));
    assert_eq!(c.configs.len(), 2);
    assert_eq!(c.configs[0].label, "default");
    assert!(c.configs[0].settings.is_empty());
    assert_eq!(c.configs[1].label, "NEXT_BUDDY");
    assert_eq!(
        c.configs[1].settings,
        vec![Setting::Feature(Feature::NextBuddy, true)]
    );
    assert_eq!(
        *c.workload,
        Command::Hackbench(Hackbench {
            groups: 2,
            ..Hackbench::default()
        })
    );

    let c = ok(
        "compare -n 10 -w0 -c \"NEXT_BUDDY, NO_RUN_TO_PARITY preempt=lazy\" \
         -c kernel.sched_base_slice_ns=3000000,kernel.sched_features=NO_PLACE_LAG -- perfpipe -x -l 500",
    );
    assert_eq!((c.runs, c.warmup), (10, 0));
    assert_eq!(
        c.configs[0].label,
        "NEXT_BUDDY,NO_RUN_TO_PARITY,preempt=lazy"
    );
    assert_eq!(
        c.configs[0].settings,
        vec![
            Setting::Feature(Feature::NextBuddy, true),
            Setting::Feature(Feature::RunToParity, false),
            Setting::Preempt(PreemptMode::Lazy),
        ]
    );
    assert_eq!(
        c.configs[1].settings,
        vec![
            Setting::Sysctl {
                key: "kernel.sched_base_slice_ns",
                value: "3000000".into()
            },
            Setting::Feature(Feature::PlaceLag, false),
        ]
    );
    assert_eq!(
        *c.workload,
        Command::Perfpipe(Perfpipe {
            loops: 500,
            cross: true,
            same: false
        })
    );
    // A/A (two identical configs) is allowed: it measures the noise.
    assert_eq!(
        ok("compare -c default -c '' -- spin -d 10 0").configs.len(),
        2
    );
    // yield is a workload too, under a preempt model.
    let y = ok("compare -c preempt=none -c preempt=full -- yield -l 300");
    assert_eq!(*y.workload, Command::Yield(YieldPp { loops: 300 }));
    assert_eq!(
        y.configs[1].settings,
        vec![Setting::Preempt(PreemptMode::Full)]
    );
    assert_eq!(
        parse("compare -h"),
        Ok(Some(Command::Help(Some("compare"))))
    );
}

#[test]
fn compare_refuses_bad_lines() {
    err_is(
        "compare",
        "compare: missing -c CONFIG (usage: compare [-n RUNS] [-w WARMUP] -c CONFIG [-c CONFIG ...] -- WORKLOAD ARGS)",
    );
    err_is(
        "compare -c ''",
        "compare: missing -- WORKLOAD (usage: compare [-n RUNS] [-w WARMUP] -c CONFIG [-c CONFIG ...] -- WORKLOAD ARGS)",
    );
    err_is(
        "compare -c '' --",
        "compare: missing -- WORKLOAD (usage: compare [-n RUNS] [-w WARMUP] -c CONFIG [-c CONFIG ...] -- WORKLOAD ARGS)",
    );
    err_is(
        "compare -c 'NEXT_BUDDY -- ps",
        "compare: unterminated quote",
    );
    err_is(
        "compare -c NEXT_BUDY -- ps",
        "compare: bad setting 'NEXT_BUDY' in a config: not a feature NAME/NO_NAME, key=value or preempt=MODE",
    );
    err_is(
        "compare -c preempt=sometimes -- perfpipe",
        "compare: bad setting 'preempt=sometimes' in a config: the mode must be none, voluntary, full or lazy",
    );
    err_is(
        "compare -c kernel.nope=1 -- perfpipe",
        "compare: bad setting 'kernel.nope=1' in a config: unknown sysctl key (see 'sysctl -a')",
    );
    err_is(
        "compare -c kernel.sched_nr_migrate= -- perfpipe",
        "compare: bad setting 'kernel.sched_nr_migrate=' in a config: missing value",
    );
    err_is(
        "compare -c 'NEXT_BUDDY NO_NEXT_BUDDY' -- perfpipe",
        "compare: 'NO_NEXT_BUDDY' sets something the same config already sets",
    );
    err_is(
        "compare -c 'preempt=full kernel.sched_preempt=lazy' -- perfpipe",
        "compare: 'kernel.sched_preempt=lazy' sets something the same config already sets",
    );
    err_is(
        "compare -c '' -- ps",
        "compare: 'ps' is not a workload (spin, hackbench, schbench, pgbench, cyclictest, wakelat, perfpipe, yield) (usage: compare [-n RUNS] [-w WARMUP] -c CONFIG [-c CONFIG ...] -- WORKLOAD ARGS)",
    );
    err_is(
        "compare -c '' -- hackbench -h",
        "compare: 'hackbench -h' is not a workload (spin, hackbench, schbench, pgbench, cyclictest, wakelat, perfpipe, yield) (usage: compare [-n RUNS] [-w WARMUP] -c CONFIG [-c CONFIG ...] -- WORKLOAD ARGS)",
    );
    // The workload's own errors come through.
    err_is(
        "compare -c '' -- hackbench -g 0",
        "hackbench: -g GROUPS must be in [1, 256], got '0'",
    );
    err_is(
        "compare -n 0 -c '' -- perfpipe",
        "compare: -n RUNS must be in [1, 100], got '0'",
    );
    err_is(
        "compare -w x -c '' -- perfpipe",
        "compare: -w WARMUP must be a decimal integer, got 'x'",
    );
    err_is(
        "compare -n 2 -n 3 -c '' -- perfpipe",
        "compare: option '-n' given twice (usage: compare [-n RUNS] [-w WARMUP] -c CONFIG [-c CONFIG ...] -- WORKLOAD ARGS)",
    );
    err_is(
        "compare -c",
        "compare: option '-c' needs a value (usage: compare [-n RUNS] [-w WARMUP] -c CONFIG [-c CONFIG ...] -- WORKLOAD ARGS)",
    );
    err_is(
        "compare -q -c '' -- perfpipe",
        "compare: unknown option '-q' (usage: compare [-n RUNS] [-w WARMUP] -c CONFIG [-c CONFIG ...] -- WORKLOAD ARGS)",
    );
    err_is(
        "compare hackbench",
        "compare: unexpected argument 'hackbench' (usage: compare [-n RUNS] [-w WARMUP] -c CONFIG [-c CONFIG ...] -- WORKLOAD ARGS)",
    );
    let nine = format!("compare {}-- perfpipe", "-c '' ".repeat(9));
    err_is(&nine, "compare: at most 8 -c CONFIG values");
}

#[test]
fn run_lines_round_trip() {
    let r = RunLine {
        warmup: false,
        index: (3, 12),
        config: 1,
        label: "NEXT_BUDDY,preempt=lazy",
        metrics: vec![("time_s", 0.365), ("ops_per_s", 12363.0)],
        counters: vec![("switches", 1234), ("buddy", 0)],
    };
    let mut s = String::new();
    write_run_line(&mut s, &r).unwrap();
    assert_eq!(
        s,
        "run 3/12 cfg B NEXT_BUDDY,preempt=lazy: time_s=0.3650 ops_per_s=12363.0000 | switches=1234 buddy=0\n"
    );
    assert_eq!(RunLine::parse(&s), Some(r));
    let w = RunLine::parse("warmup 1/6 cfg A default: time_s=1.0000 |\r").unwrap();
    assert!(w.warmup && w.counters.is_empty() && w.config == 0);
    for bad in [
        "",
        "run",
        "run x/2 cfg A a: t=1 |",
        "run 1/2 cfg a a: t=1 |",
        "run 1/2 cfg A a: t=x |",
    ] {
        assert_eq!(RunLine::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn table_format() {
    let a = [1.00, 1.02, 0.98, 1.00];
    let b = [0.80, 0.81, 0.79, 0.80];
    let sw_a = [100.0, 100.0, 100.0, 100.0];
    let sw_b = [100.0, 102.0, 98.0, 100.0];
    let series = [
        Series {
            name: "time_s",
            kind: Kind::Lower,
            samples: &[&a, &b],
        },
        Series {
            name: "ops_per_s",
            kind: Kind::Higher,
            samples: &[&a, &b],
        },
        Series {
            name: "switches",
            kind: Kind::Counter,
            samples: &[&sw_a, &sw_b],
        },
    ];
    let mut s = String::new();
    write_table(&mut s, &["default", "NEXT_BUDDY"], &series).unwrap();
    let want = "                                         A:default          B:NEXT_BUDDY
Amean   time_s                    1.0000 (  0.00%)      0.8000 * 20.00%*
Stddev  time_s                    0.0163 (  0.00%)      0.0082 ( 50.00%)
CoV     time_s                     1.63%                 1.02%
Hmean   ops_per_s                 0.9998 (  0.00%)      0.7999 *-19.99%*
Stddev  ops_per_s                 0.0163 (  0.00%)      0.0082 ( 50.00%)
CoV     ops_per_s                  1.63%                 1.02%
counters, per run (% change: more is positive)
Amean   switches                   100.0 (  0.00%)       100.0 (  0.00%)
Stddev  switches                     0.0 (  0.00%)         1.6 (  0.00%)
CoV     switches                   0.00%                 1.63%
% change against A, better is positive; *x.xx%*: Welch's t-test (two-sided, unequal variances) p < 0.05
";
    assert_eq!(s, want, "\n{s}");
}

#[test]
fn zero_baseline_has_no_percentage() {
    let z = [0.0, 0.0, 0.0];
    let b = [300.0, 310.0, 290.0];
    let series = [Series {
        name: "buddy",
        kind: Kind::Counter,
        samples: &[&z, &b],
    }];
    let mut s = String::new();
    write_table(&mut s, &["default", "NEXT_BUDDY"], &series).unwrap();
    assert!(
        s.contains("Amean   buddy                        0.0 (  0.00%)       300.0 *    n/a*"),
        "{s}"
    );
}

#[test]
fn long_labels_are_listed_in_full() {
    let a = [1.0, 1.0];
    let series = [Series {
        name: "time_s",
        kind: Kind::Lower,
        samples: &[&a, &a],
    }];
    let mut s = String::new();
    write_table(
        &mut s,
        &["default", "NEXT_BUDDY,NEXT_BUDDY_SYNC_RUNTIME"],
        &series,
    )
    .unwrap();
    let first = s.lines().next().unwrap();
    assert_eq!(
        first,
        "configs: A=default B=NEXT_BUDDY,NEXT_BUDDY_SYNC_RUNTIME"
    );
    assert!(
        s.lines().nth(1).unwrap().ends_with("B:NEXT_BUDDY,NEXT_BU~"),
        "{s}"
    );
    // Short labels: no list.
    let mut s = String::new();
    write_table(&mut s, &["default", "NEXT_BUDDY"], &series).unwrap();
    assert!(!s.starts_with("configs:"), "{s}");
}
