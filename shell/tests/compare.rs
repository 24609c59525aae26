//! `compare`: its parser (good and bad lines, with the exact error lines), the
//! per-run line round trip and the table's format (the statistics are the
//! `stats` crate's, tested there against published values), and the `CI95`
//! rows: hand-computed intervals, and on random sample pairs an interval that
//! excludes 0 exactly where the mean is marked `*`.

use proptest::prelude::*;
use sched::{Feature, PreemptMode};
use shell::compare::{
    change_ci, write_run_line, write_table, ChangeCi, Kind, RunLine, Series, CI_LEGEND,
};
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
CI95    time_s                                         [+17.90, +22.02]%
Stddev  time_s                    0.0163 (  0.00%)      0.0082 ( 50.00%)
CoV     time_s                     1.63%                 1.02%
Hmean   ops_per_s                 0.9998 (  0.00%)      0.7999 *-19.99%*
CI95    ops_per_s                                      [-22.02, -17.90]%
Stddev  ops_per_s                 0.0163 (  0.00%)      0.0082 ( 50.00%)
CoV     ops_per_s                  1.63%                 1.02%
counters, per run (% change: more is positive)
Amean   switches                   100.0 (  0.00%)       100.0 (  0.00%)
CI95    switches                                         [-2.60, +2.60]%
Stddev  switches                     0.0 (  0.00%)         1.6 (  0.00%)
CoV     switches                   0.00%                 1.63%
% change against A, better is positive; *x.xx%*: Welch's t-test (two-sided, unequal variances) p < 0.05
CI95: 95% confidence interval of that % change (arithmetic means; Fieller's interval, Welch's df), excluding 0 exactly where *x.xx%*; unbounded: A's mean is not significantly away from 0; n/a: fewer than 2 runs
";
    // The intervals, computed apart from the stats crate (the t quantile by
    // bisection on a Simpson integral of the t density): time_s, means 1.0
    // and 0.8, v_a = 0.0008/12, v_b = 0.0002/12, df = 4.4118, t = 2.677174,
    // Fieller's rho in [0.77975, 0.82101], a drop of [17.899, 22.025]%;
    // ops_per_s is the same samples with higher as better, so mirrored.
    // switches: A has no spread, so df = 3 (B's n - 1), t = 3.182446, and
    // rho = 1 -+ t sqrt(v_b) / 100 with v_b = (8/3)/4: 1 -+ 0.025985.
    assert_eq!(s, want, "\n{s}");
}

/// The `CI95` cells for the two worked examples of
/// `stats/tests/published.rs` (equal n and variances, so integer Welch
/// degrees of freedom and published t quantiles), under each kind's sign:
/// means 10 -> 9 with n = 3 (df 4, t = 2.7764451) is -10% in
/// [-29.6034, +14.3506]% of the ratio; means 100 -> 105 with n = 5 (df 8,
/// t = 2.3060041) is +5% in [+2.6631, +7.3928]%.
#[test]
fn ci95_cells_by_hand() {
    let close = |c: ChangeCi, lo: f64, hi: f64| match c {
        ChangeCi::Bounded { lo_pct, hi_pct } => {
            assert!(
                (lo_pct - lo).abs() < 1e-4 && (hi_pct - hi).abs() < 1e-4,
                "{c:?}, want [{lo}, {hi}]"
            )
        }
        other => panic!("{other:?}, want [{lo}, {hi}]"),
    };
    let (b, v) = ([9.0, 10.0, 11.0], [8.0, 9.0, 10.0]);
    // 10 -> 15, n = 3 on both sides: df 4; a = 100 - t^2/3 = 97.430451, the
    // discriminant t^2 (a/3 + 15^2/3) = 828.4994 (root 28.783665), rho =
    // (150 -+ 28.783665) / 97.430451 = 1.244132, 1.834988.
    let c = [14.0, 15.0, 16.0];
    close(change_ci(Kind::Higher, &b, &c), 24.4132, 83.4988);
    // A time that drops 10% is +10% better; a rate or a counter is -10%.
    close(change_ci(Kind::Lower, &b, &v), -14.3506, 29.6034);
    close(change_ci(Kind::Higher, &b, &v), -29.6034, 14.3506);
    close(change_ci(Kind::Counter, &b, &v), -29.6034, 14.3506);
    let b5 = [98.0, 99.0, 100.0, 101.0, 102.0];
    let v5 = [103.0, 104.0, 105.0, 106.0, 107.0];
    close(change_ci(Kind::Lower, &b5, &v5), -7.3928, -2.6631);
    close(change_ci(Kind::Higher, &b5, &v5), 2.6631, 7.3928);

    // In the table: the rows, the cells in the mean cells' columns.
    let series = [
        Series {
            name: "time_s",
            kind: Kind::Lower,
            samples: &[&b, &v, &c],
        },
        Series {
            name: "rps",
            kind: Kind::Higher,
            samples: &[&b5, &v5],
        },
    ];
    let mut s = String::new();
    write_table(&mut s, &["A", "B", "C"], &series).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[1],
        "Amean   time_s                   10.0000 (  0.00%)      9.0000 ( 10.00%)     15.0000 *-50.00%*"
    );
    assert_eq!(
        lines[2],
        "CI95    time_s                                         [-14.35, +29.60]%     [-83.50, -24.41]%"
    );
    assert_eq!(
        lines[6],
        "CI95    rps                                              [+2.66, +7.39]%"
    );
    // Each cell ends where the mean cell above it ends.
    for (m, c) in [(lines[1], lines[2]), (lines[5], lines[6])] {
        assert_eq!(m.len(), c.len(), "{m}\n{c}");
    }
}

/// `n/a` and `unbounded` cells in the table (the cell itself, and the text
/// of wide and exact intervals: `stats/tests/change_ci.rs`).
#[test]
fn ci95_na_and_unbounded() {
    let one = [1.0];
    let two = [1.0, 1.2];
    // A zero baseline (a counter that NEXT_BUDDY starts): no ratio.
    let z = [0.0, 0.0, 0.0];
    let far = [5.0, 6.0, 7.0];
    assert_eq!(change_ci(Kind::Lower, &one, &two), ChangeCi::NotAvailable);
    assert_eq!(change_ci(Kind::Counter, &z, &far), ChangeCi::Unbounded);

    let series = [
        Series {
            name: "time_s",
            kind: Kind::Lower,
            samples: &[&one, &two],
        },
        Series {
            name: "buddy",
            kind: Kind::Counter,
            samples: &[&z, &far],
        },
    ];
    let mut s = String::new();
    write_table(&mut s, &["default", "NEXT_BUDDY"], &series).unwrap();
    // Right-aligned in B's column (28 + 22 + 22 characters), A's blank.
    let row = |name: &str, cell: &str| format!("\nCI95    {name:<20}{cell:>44}\n");
    assert!(s.contains(&row("time_s", "n/a")), "{s}");
    assert!(s.contains(&row("buddy", "unbounded")), "{s}");
    // One config: no variant, no CI95 row.
    let solo = [Series {
        name: "time_s",
        kind: Kind::Lower,
        samples: &[&two],
    }];
    let mut s = String::new();
    write_table(&mut s, &["default"], &solo).unwrap();
    assert!(!s.contains("\nCI95 "), "{s}");
    assert!(s.ends_with(&format!("{CI_LEGEND}\n")), "{s}");
}

/// A table's cell `i` (0 = the baseline) of a row: 28 characters of row
/// name, then 22 per config.
fn cell(row: &str, i: usize) -> &str {
    let start = 28 + 22 * i;
    row.get(start..(start + 22).min(row.len())).unwrap_or("")
}

/// `[lo, hi]%` as printed; `None` for `n/a` and `unbounded`.
fn parse_ci(c: &str) -> Option<(f64, f64)> {
    c.parse::<ChangeCi>().ok()?.bounds()
}

/// Samples around `mean` with a spread `spread` from unit draws `u` (values
/// rounded to 4 decimals, as the run lines print them).
fn samples(mean: f64, spread: f64, u: &[f64]) -> Vec<f64> {
    u.iter()
        .map(|x| (1e4 * (mean + spread * (x - 0.5))).round() / 1e4)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// On random sample pairs, for every kind: a bounded `CI95` interval
    /// excludes 0 exactly when the mean row has `*` (Welch's p < 0.05,
    /// computed here from `stats` directly), and holds the change of the
    /// arithmetic means signed as the kind's %; `n/a` exactly below 2 runs.
    /// Read both from the table's text and from `change_ci`.
    #[test]
    fn ci95_excludes_zero_exactly_where_the_mean_is_starred(
        bmean in -20.0f64..100.0,
        shift_pct in -30.0f64..30.0,
        bspread in 0.0f64..40.0,
        vspread in 0.0f64..40.0,
        bu in prop::collection::vec(0.0f64..1.0, 1..10),
        vu in prop::collection::vec(0.0f64..1.0, 1..10),
    ) {
        let base = samples(bmean, bspread, &bu);
        let var = samples(bmean * (1.0 + shift_pct / 100.0), vspread, &vu);
        for kind in [Kind::Lower, Kind::Higher, Kind::Counter] {
            let series = [Series { name: "m", kind, samples: &[&base, &var] }];
            let mut s = String::new();
            write_table(&mut s, &["A", "B"], &series).unwrap();
            let at = |p: &str| s.lines().find(|l| l.starts_with(p)).unwrap_or("");
            let mean_row = at(if kind == Kind::Higher { "Hmean   m " } else { "Amean   m " });
            let ci_row = at("CI95    m ");
            prop_assert!(!ci_row.is_empty(), "{}", s);
            prop_assert_eq!(cell(ci_row, 0).trim(), "");
            let star = cell(mean_row, 1).contains('*');
            let sig = stats::welch_p(&base, &var) < stats::ALPHA;
            prop_assert_eq!(star, sig, "{}", s);
            let ci = change_ci(kind, &base, &var);
            if base.len() < 2 || var.len() < 2 {
                prop_assert_eq!(ci, ChangeCi::NotAvailable);
                prop_assert_eq!(cell(ci_row, 1).trim(), "n/a");
                continue;
            }
            let ChangeCi::Bounded { lo_pct, hi_pct } = ci else {
                prop_assert_eq!(ci, ChangeCi::Unbounded);
                prop_assert_eq!(cell(ci_row, 1).trim(), "unbounded");
                continue;
            };
            prop_assert!(lo_pct <= hi_pct, "{:?}", ci);
            prop_assert_eq!(lo_pct > 0.0 || hi_pct < 0.0, sig, "{:?}\n{}", ci, s);
            let (ma, mv) = (stats::amean(&base), stats::amean(&var));
            let pct = stats::pct_better(ma, mv, kind != Kind::Lower);
            let tol = 1e-9 * (1.0 + pct.abs());
            prop_assert!(lo_pct - tol <= pct && pct <= hi_pct + tol, "{} {:?}", pct, ci);
            // The text: the same interval to two decimals, its signs intact.
            let (lo, hi) = parse_ci(cell(ci_row, 1)).expect("an interval");
            let half_digit = |x: f64| {
                let t = cell(ci_row, 1);
                if t.contains('e') {
                    0.05 * x.abs()
                } else {
                    let d = t
                        .split_once('.')
                        .map_or(0, |(_, r)| r.bytes().take_while(u8::is_ascii_digit).count());
                    0.5 * 10f64.powi(-(d as i32)) + 1e-9
                }
            };
            prop_assert!(
                (lo - lo_pct).abs() <= half_digit(lo) && (hi - hi_pct).abs() <= half_digit(hi),
                "{}",
                ci_row
            );
            let txt = cell(ci_row, 1).trim();
            let excl = txt.starts_with("[+") && lo_pct != 0.0 || txt.contains(", -");
            prop_assert_eq!(excl, sig, "{}", s);
        }
    }
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
    assert!(
        s.contains(&format!("\nCI95    buddy{:>59}\n", "unbounded")),
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
