//! The scoring of the NEXT_BUDDY study against the published tables
//! (`sim::score`): verdicts, the factor-2 rule, rows that are not modelled
//! or not run, the clear-row rule on the published data, the mapping onto
//! study points, that the ablation's variants really run with different
//! mechanisms, and that a subset of the ablation (`--mechanisms`, `--rows`)
//! plans only the chosen parts and refuses unknown names with the accepted
//! ones; and that the study's counters carry the idle scan.

use sim::machine::{Machine, MECHANISM_FLAGS};
use sim::score::{
    ablation_csv, ablation_plan, ablation_study, ablation_table, ablation_variants,
    changes_mechanisms, clear_rows, is_clear, mechanism_names, mel_rows, parse_mechanisms,
    parse_rows, published_count, published_samples, resolve, run_ablation, ryan_change,
    schbench_rows, score_csv, score_json, score_table, score_with, totals, verdict, within_2x,
    AblationSubset, Row, Target, Verdict,
};
use sim::study::{results_for, run_study, study_machine, to_csv, Item, Scale, Study};
use sim::workloads::HackbenchCfg;
use sim::{Config, WorkSpec};
use stats::ChangeCi;

fn row(published: f64, target: Target) -> Row {
    Row {
        source: "test",
        machine: "m",
        workload: "w".into(),
        param: 8,
        base: "nb-off",
        variant: "nb+inelig",
        published,
        target,
    }
}

fn point(value: u64) -> Target {
    Target::Point {
        title: "hackbench-process-pipes",
        machine: "graviton3",
        value,
        metric: "time_s",
    }
}

#[test]
fn verdicts_follow_sign_and_significance() {
    assert_eq!(verdict(5.0, 3.0, true), Verdict::Agree);
    assert_eq!(verdict(-5.0, -0.5, true), Verdict::Agree);
    assert_eq!(verdict(5.0, -3.0, true), Verdict::Opposite);
    assert_eq!(verdict(-5.0, 3.0, true), Verdict::Opposite);
    assert_eq!(verdict(5.0, 3.0, false), Verdict::Null);
    assert_eq!(verdict(5.0, -30.0, false), Verdict::Null);
    assert_eq!(verdict(5.0, 0.0, true), Verdict::Null);
}

#[test]
fn factor_two_rule() {
    assert!(within_2x(10.0, 10.0));
    assert!(within_2x(10.0, 5.0));
    assert!(within_2x(10.0, 20.0));
    assert!(!within_2x(10.0, 4.99));
    assert!(!within_2x(10.0, 20.01));
    assert!(!within_2x(10.0, -10.0));
    assert!(within_2x(-4.0, -8.0));
    assert!(!within_2x(-4.0, -1.9));
    assert!(!within_2x(0.0, 0.0));
}

#[test]
fn changes_between_columns_of_a_common_base() {
    // A time: rc1 -18.36% and revert -0.41% against 6.18 (better positive):
    // t_rc1 / t_rev = (1 - 0.1836) / (1 - 0.0041).
    let c = ryan_change(-18.36, -0.41, false);
    let expect = 100.0 * (1.0041 - 1.1836) / 1.0041;
    assert!((c - expect).abs() < 1e-9, "{c} against {expect}");
    assert!((c + 17.876).abs() < 0.01, "{c}");
    // A rate: -11.37% against +0.48%.
    let r = ryan_change(-11.37, 0.48, true);
    assert!((r + 11.79).abs() < 0.01, "{r}");
    assert!(ryan_change(3.0, 3.0, true).abs() < 1e-12);
    assert!(is_clear(2.0, true) && is_clear(-2.5, true));
    assert!(!is_clear(1.99, true) && !is_clear(40.0, false));
}

#[test]
fn scoring_of_constructed_rows() {
    let rows = vec![
        row(5.0, point(1)),  // the variant 10% faster: agree, within 2x
        row(-5.0, point(2)), // published slower: opposite
        row(30.0, point(3)), // agree, but 3x smaller
        row(5.0, point(4)),  // noise: null
        row(5.0, Target::NotModelled("no such workload")),
        row(5.0, point(5)), // the lookup finds no point: not run
    ];
    let base = vec![10.0, 10.1, 9.9, 10.0, 10.05];
    let faster = vec![9.0, 9.1, 8.9, 9.0, 9.05];
    let noisy = vec![9.0, 11.0, 10.5, 9.4, 10.1];
    let s = score_with(&rows, &|r: &Row| {
        let Target::Point { value, .. } = r.target else {
            panic!("not-modelled rows must not be looked up");
        };
        match value {
            1..=3 => Ok((base.clone(), faster.clone(), false, value)),
            4 => Ok((base.clone(), noisy.clone(), false, value)),
            _ => Err("not run: no point".into()),
        }
    });
    let v: Vec<_> = s.iter().map(|x| x.verdict()).collect();
    assert_eq!(
        v,
        vec![
            Some(Verdict::Agree),
            Some(Verdict::Opposite),
            Some(Verdict::Agree),
            Some(Verdict::Null),
            None,
            None
        ]
    );
    let pct = s[0].sim.as_ref().unwrap().pct;
    // (10.01 - 9.01) / 10.01
    assert!((pct - 9.99).abs() < 0.01, "{pct}");
    assert_eq!(s[0].within_2x(), Some(true));
    assert_eq!(s[2].within_2x(), Some(false));
    assert!(s[4].why_not.as_deref().unwrap().starts_with("not modelled"));
    assert!(s[5].why_not.as_deref().unwrap().starts_with("not run"));
    let t = totals(&s);
    assert_eq!(
        (
            t.rows,
            t.agree,
            t.agree_2x,
            t.null,
            t.opposite,
            t.not_modelled,
            t.not_run
        ),
        (6, 2, 1, 1, 1, 1, 1)
    );
    // The 95% interval of row 1, by hand: means 10.01 and 9.01, s² =
    // 0.0055 on both sides (n = 5, so v = 0.0011 and df = 8, t = 2.3060041);
    // Fieller: a = 10.01² − t² v = 100.194251, root of t² (v a + 9.01² v)
    // = 1.030017, ratios (90.1901 ∓ 1.030017) / a = 0.889872, 0.910433,
    // so 10% faster in [+8.9567, +11.0128]%, better positive. It excludes
    // 0 as p < 0.05 does, and the published +5% lies outside it.
    let (lo, hi) = s[0].sim.as_ref().unwrap().ci.bounds().unwrap();
    assert!(
        (lo - 8.9567).abs() < 1e-4 && (hi - 11.0128).abs() < 1e-4,
        "[{lo}, {hi}]"
    );
    assert_eq!(s[0].published_in_ci(), Some(false));
    // Every scored row's interval holds its change and excludes 0 exactly
    // when its verdict is not null; the noisy row's holds the published 5%.
    for x in &s[..4] {
        let sc = x.sim.as_ref().unwrap();
        let (lo, hi) = sc.ci.bounds().unwrap();
        assert!(lo <= sc.pct && sc.pct <= hi, "{sc:?}");
        assert_eq!(
            lo > 0.0 || hi < 0.0,
            x.verdict() != Some(Verdict::Null),
            "{sc:?}"
        );
    }
    assert_eq!(s[3].published_in_ci(), Some(true));
    assert_eq!(s[4].published_in_ci(), None);
    // A rate the other way round: higher is better.
    let s = score_with(&rows[..1], &|_| Ok((base.clone(), faster.clone(), true, 1)));
    assert_eq!(s[0].verdict(), Some(Verdict::Opposite));
    let (lo, hi) = s[0].sim.as_ref().unwrap().ci.bounds().unwrap();
    assert!(
        (lo + 11.0128).abs() < 1e-4 && (hi + 8.9567).abs() < 1e-4,
        "[{lo}, {hi}]"
    );
}

/// The score's table, CSV and JSON carry the interval and whether the
/// published change lies inside it; a row without an interval (a base mean
/// not significantly away from 0) says so, and the rows that are not scored
/// leave the fields empty.
#[test]
fn score_outputs_carry_the_interval() {
    let rows = vec![
        row(5.0, point(1)),
        row(5.0, point(2)),
        row(5.0, Target::NotModelled("no such workload")),
    ];
    let s = score_with(&rows, &|r: &Row| {
        let Target::Point { value, .. } = r.target else {
            unreachable!()
        };
        match value {
            1 => Ok((
                vec![10.0, 10.1, 9.9, 10.0, 10.05],
                vec![9.0, 9.1, 8.9, 9.0, 9.05],
                false,
                1,
            )),
            // 0.5 ± 4.3: Fieller's set for the ratio is unbounded.
            _ => Ok((vec![0.0, 0.5, 1.0], vec![5.0, 6.0, 7.0], false, 2)),
        }
    });
    assert_eq!(s[1].sim.as_ref().unwrap().ci, ChangeCi::Unbounded);
    assert_eq!(s[1].published_in_ci(), None);

    let t = score_table(&s);
    assert!(t.contains(" 95% CI in "), "{t}");
    assert!(t.contains("      [+8.96, +11.01]% no  agree"), "{t}");
    assert!(t.contains("             unbounded -   "), "{t}");

    let csv = score_csv(&s);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].ends_with(",why_not,ci_lo_pct,ci_hi_pct,published_in_ci"),
        "{csv}"
    );
    let cells = |l: &str| l.rsplitn(4, ',').map(str::to_string).collect::<Vec<_>>();
    let c1 = cells(lines[1]);
    assert_eq!(c1[0], "no");
    assert!(
        (c1[2].parse::<f64>().unwrap() - 8.9567).abs() < 1e-4,
        "{csv}"
    );
    assert!(
        (c1[1].parse::<f64>().unwrap() - 11.0128).abs() < 1e-4,
        "{csv}"
    );
    assert!(lines[2].ends_with("\"\",,,"), "{csv}");
    assert!(lines[3].ends_with(",,,"), "{csv}");

    let json = score_json(&s);
    assert!(json.contains("\"ci_lo_pct\": 8.956"), "{json}");
    assert!(
        json.contains("\"ci_lo_pct\": null, \"ci_hi_pct\": null"),
        "{json}"
    );
    assert_eq!(
        json.matches("\"published_in_ci\": false").count(),
        1,
        "{json}"
    );
    assert_eq!(
        json.matches("\"published_in_ci\": null").count(),
        2,
        "{json}"
    );
}

#[test]
fn clear_rows_follow_the_rule_and_cover_the_tables() {
    let rows = clear_rows();
    assert!(rows.iter().all(|r| r.published.abs() >= 2.0));
    // Mel's: 7 dbench, 9 pipes, 3 sockets rows are marked and >= 2%.
    let mel = mel_rows();
    assert_eq!(mel.len(), 19);
    assert!(mel
        .iter()
        .all(|r| r.base == "nb-off" && r.variant == "nb+inelig"));
    // Ryan's schbench rows keep the old NEXT_BUDDY on: not modelled.
    let sch = schbench_rows();
    assert_eq!(sch.len(), 7);
    assert!(sch
        .iter()
        .all(|r| matches!(r.target, Target::NotModelled(_))));
    // NEXT_BUDDY's own effect with the rule present (rc1 against rc6 +
    // patch): 7 groups of process pipes, +4.96%.
    let nb = rows
        .iter()
        .find(|r| {
            r.base == "off+inelig"
                && r.workload.starts_with("hackbench-process-pipes")
                && r.param == 7
        })
        .expect("rc1 against rc6+patch at 7 groups");
    assert!((nb.published - 4.96).abs() < 0.01, "{}", nb.published);
    // Rows of workloads the simulator lacks are kept, not dropped.
    assert!(rows
        .iter()
        .any(|r| r.workload.contains("mysql") && matches!(r.target, Target::NotModelled(_))));
}

#[test]
fn targets_resolve_to_the_nearest_study_value_within_ten_percent() {
    let st = Study::default_study();
    let (ii, _, v) = resolve(&st, &point(30)).expect("30 groups runs as 32");
    assert_eq!(
        (st.items[ii].title.as_str(), v),
        ("hackbench-process-pipes", 32)
    );
    assert_eq!(resolve(&st, &point(7)).map(|x| x.2), Some(7));
    assert_eq!(resolve(&st, &point(48)).map(|x| x.2), Some(48));
    assert_eq!(resolve(&st, &point(141)), None);
    assert_eq!(resolve(&st, &Target::NotModelled("x")), None);
    // Every Mel row of the sweep's sizes resolves, on the right machine.
    for r in mel_rows().iter().filter(|r| r.param <= 80) {
        let (ii, _, _) = resolve(&st, &r.target).unwrap_or_else(|| panic!("{r:?}"));
        assert_eq!(st.items[ii].machine, "cascadelake-2s");
    }
}

#[test]
fn ablation_variants_differ_in_mechanisms() {
    let vs = ablation_variants();
    assert_eq!(vs.len(), MECHANISM_FLAGS.len() + 1);
    assert!(vs[0].1.is_empty());
    // qemu:4 models every mechanism but machine noise (its clock counts
    // instructions): each other variant turns exactly one off there, and
    // that one on graviton3.
    let full = study_machine("qemu:4", &[]).unwrap().mech;
    assert_eq!(full, Machine::preset("qemu:4").unwrap().mech);
    assert!(!full.machine_noise);
    let g3 = study_machine("graviton3", &[]).unwrap().mech;
    let g3_quiet = study_machine("graviton3", &["--no-machine-noise"])
        .unwrap()
        .mech;
    assert!(g3.machine_noise && !g3_quiet.machine_noise);
    assert_eq!(g3_quiet, Machine::preset("graviton3").unwrap().mech);
    let mut seen = vec![full];
    for (name, off) in &vs[1..] {
        if *name == "--no-machine-noise" {
            continue;
        }
        if name.starts_with("--no-noise-") {
            // A part of machine noise: none on qemu:4, on graviton3 the
            // one part off and the rest of the noise on.
            let m = study_machine("qemu:4", off).unwrap().mech;
            assert_eq!(m, full, "{name} on qemu:4");
            let part = study_machine("graviton3", off).unwrap().mech;
            assert_ne!(part, g3, "{name} changes nothing on graviton3");
            assert!(part.machine_noise, "{name}");
            continue;
        }
        let m = study_machine("qemu:4", off).unwrap().mech;
        assert_ne!(m, full, "{name} changes nothing");
        assert!(!seen.contains(&m), "{name} is the same as another variant");
        seen.push(m);
    }
    assert!(study_machine("qemu:4", &["--no-such"]).is_err());
    // On the study's presets the pipe mutex is not modelled: that variant is
    // the same runs; SMT sharing is (cascadelake-2s).
    let ab = ablation_study(&Study::default_study(), &clear_rows());
    assert!(!changes_mechanisms(&ab, &["--no-contention"]).unwrap());
    assert!(changes_mechanisms(&ab, &["--no-smt-share"]).unwrap());
    assert!(changes_mechanisms(&ab, &["--no-machine-noise"]).unwrap());
    assert!(changes_mechanisms(&ab, &["--no-noise-placement"]).unwrap());
    // The row locks change read-write pgbench only, which the study does
    // not run: the same runs. A sweep of it would make them count.
    assert!(!changes_mechanisms(&ab, &["--no-row-lock"]).unwrap());
    let mut rw = ab.clone();
    for it in &mut rw.items {
        it.make = |c, _, s| {
            WorkSpec::Pgbench(sim::workloads::PgbenchCfg {
                clients: c as usize,
                rw: true,
                warmup_ns: s.warmup_ns,
            })
        };
    }
    assert!(changes_mechanisms(&rw, &["--no-row-lock"]).unwrap());
    // The kworker pool's concurrency management acts on dbench with bound
    // workers alone: the study's dbench-bound item makes it count; without
    // that item (unbound dbench, hackbench, pgbench) the same runs.
    assert!(changes_mechanisms(&ab, &["--no-wq-concurrency"]).unwrap());
    let mut unbound = ab.clone();
    unbound.items.retain(|it| it.title != "dbench-bound");
    assert_ne!(unbound.items.len(), ab.items.len());
    assert!(!changes_mechanisms(&unbound, &["--no-wq-concurrency"]).unwrap());
    assert!(changes_mechanisms(&unbound, &["--no-smt-share"]).unwrap());
    // The syscalls' return to user space before their decision acts on
    // hackbench alone: the study's hackbench items make it count.
    assert!(changes_mechanisms(&ab, &["--no-syscall-user-return"]).unwrap());
    let mut no_hb = ab.clone();
    no_hb.items.retain(|it| !it.title.contains("hackbench"));
    assert_ne!(no_hb.items.len(), ab.items.len());
    assert!(!changes_mechanisms(&no_hb, &["--no-syscall-user-return"]).unwrap());
    // Of the 35 flags, 11 can act on its two presets (graviton3,
    // cascadelake-2s; `Machine::effective_mech`): the noise and its four
    // parts, SMT sharing and idle states (cascadelake-2s), the kworker
    // pool (dbench-bound), the two of the idle load balancer's kick and
    // hackbench's return to user space before its syscalls' decisions.
    let run: Vec<&str> = MECHANISM_FLAGS
        .iter()
        .map(|(f, _)| *f)
        .filter(|f| changes_mechanisms(&ab, &[f]).unwrap())
        .collect();
    assert_eq!(
        run,
        [
            "--no-smt-share",
            "--no-idle-states",
            "--no-machine-noise",
            "--no-wq-concurrency",
            "--no-ilb-kick",
            "--no-ilb-ipi",
            "--no-noise-boot-speed",
            "--no-noise-cpu-speed",
            "--no-noise-irqs",
            "--no-noise-placement",
            "--no-syscall-user-return",
        ]
    );
    // An ablation of the study without machine noise keeps it off in
    // every variant: that variant is then the same runs.
    let mut quiet = Study::default_study();
    quiet.mechanisms_off = vec!["--no-machine-noise"];
    let abq = ablation_study(&quiet, &clear_rows());
    assert_eq!(abq.mechanisms_off, ["--no-machine-noise"]);
    assert!(!changes_mechanisms(&abq, &["--no-machine-noise"]).unwrap());
    assert!(!changes_mechanisms(&abq, &["--no-noise-placement"]).unwrap());
    assert!(changes_mechanisms(&abq, &["--no-smt-share"]).unwrap());
    let names: Vec<&str> = ab.configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["nb-off", "nb+inelig", "off+inelig"]);
    assert!(ab.items.iter().all(|it| it.title != "schbench"));
}

#[test]
fn a_study_runs_with_the_mechanisms_it_names_off() {
    let st = Study {
        items: vec![Item {
            title: "hackbench-process-pipes".into(),
            machine: "qemu:2".into(),
            param: "groups",
            values: vec![1],
            make: |g, _, s| {
                WorkSpec::Hackbench(HackbenchCfg {
                    groups: g as usize,
                    loops: s.loops,
                    sockets: false,
                    threads: false,
                    flips: 0,
                })
            },
            metrics: vec!["time_s"],
            max_ns: 2_000_000_000,
            seeds: None,
        }],
        configs: vec![Config::parse("nb-off:NO_NEXT_BUDDY")],
        seeds: 1,
        scale: Scale {
            loops: 5,
            ops: 10,
            warmup_ns: 0,
        },
        mechanisms_off: Vec::new(),
    };
    let all = to_csv(&run_study(&st, 1, false).unwrap());
    let mut off = st.clone();
    off.mechanisms_off = vec!["--no-wake-cost"];
    let less = to_csv(&run_study(&off, 1, false).unwrap());
    assert_ne!(all, less, "--no-wake-cost changed nothing on qemu:2");
}

fn point_of(r: &Row) -> Option<(&'static str, &'static str, u64)> {
    match r.target {
        Target::Point {
            title,
            machine,
            value,
            ..
        } => Some((title, machine, value)),
        Target::NotModelled(_) => None,
    }
}

#[test]
fn an_ablation_subset_plans_only_the_chosen_rows_and_mechanisms() {
    let base = Study::default_study();
    let rows = clear_rows();
    let shape = |st: &Study| -> Vec<(String, String, Vec<u64>)> {
        st.items
            .iter()
            .map(|it| (it.title.clone(), it.machine.clone(), it.values.clone()))
            .collect()
    };
    let names = |st: &Study| -> Vec<String> { st.configs.iter().map(|c| c.name.clone()).collect() };
    // No subset: the full ablation, every variant.
    let (full, fv) = ablation_plan(&base, &rows, &AblationSubset::default()).unwrap();
    let whole = ablation_study(&base, &rows);
    assert_eq!(shape(&full), shape(&whole));
    assert_eq!(names(&full), names(&whole));
    let all_names: Vec<&str> = ablation_variants().iter().map(|v| v.0).collect();
    assert_eq!(fv.iter().map(|v| v.name).collect::<Vec<_>>(), all_names);
    assert!(fv.iter().enumerate().all(|(k, v)| v.number == k));
    // One row (Ryan's pgbench tps at 1 client, nb-off>nb+inelig) and two
    // mechanisms, named both ways and out of order: only its point, only
    // its pair's configurations, `all` and the two variants in the full
    // ablation's order with its numbers.
    let k = rows
        .iter()
        .position(|r| {
            point_of(r).is_some_and(|p| p.0 == "pgbench-ro" && p.2 == 1)
                && r.base == "nb-off"
                && r.variant == "nb+inelig"
        })
        .expect("a pgbench row at 1 client");
    assert_eq!(parse_rows(&(k + 1).to_string(), &base, &rows).unwrap(), [k]);
    let sub = AblationSubset {
        mechanisms: Some(parse_mechanisms("smt-share,machine-noise,--no-wake-cost").unwrap()),
        rows: Some(vec![k]),
    };
    let (st, v) = ablation_plan(&base, &rows, &sub).unwrap();
    assert_eq!(
        shape(&st),
        [("pgbench-ro".to_string(), "graviton3".to_string(), vec![1])]
    );
    assert_eq!(names(&st), ["nb-off", "nb+inelig"]);
    let got: Vec<(usize, &str)> = v.iter().map(|v| (v.number, v.name)).collect();
    assert_eq!(
        got,
        [
            (0, "all"),
            (1, "--no-wake-cost"),
            (7, "--no-smt-share"),
            (9, "--no-machine-noise")
        ]
    );
    // graviton3 has no SMT and charges a wakeup's waker nothing: those two
    // cannot act there (`Machine::effective_mech`), so they are planned,
    // not run; the noise acts.
    assert_eq!(
        v.iter().map(|v| v.ran).collect::<Vec<_>>(),
        [true, false, false, true]
    );
    // A mechanism that cannot act on the points' machines is planned, not run.
    let sub = AblationSubset {
        mechanisms: Some(parse_mechanisms("contention").unwrap()),
        rows: None,
    };
    let (_, v) = ablation_plan(&base, &rows, &sub).unwrap();
    assert_eq!(
        v.iter().map(|v| (v.name, v.ran)).collect::<Vec<_>>(),
        [("all", true), ("--no-contention", false)]
    );
    // A point by name: every row the ablation scores there, on that
    // machine only; without the machine, on every machine.
    let db = parse_rows("dbench-bound@cascadelake-2s", &base, &rows).unwrap();
    let want: Vec<usize> = (0..rows.len())
        .filter(|&k| {
            point_of(&rows[k]).is_some_and(|p| p.0 == "dbench-bound")
                && resolve(&base, &rows[k].target).is_some()
        })
        .collect();
    assert!(!db.is_empty());
    assert_eq!(db, want);
    let pipes_cl = parse_rows("hackbench-process-pipes@cascadelake-2s", &base, &rows).unwrap();
    let pipes = parse_rows("hackbench-process-pipes", &base, &rows).unwrap();
    assert!(pipes_cl
        .iter()
        .all(|k| point_of(&rows[*k]).unwrap().1 == "cascadelake-2s"));
    assert!(pipes.len() > pipes_cl.len() && pipes_cl.iter().all(|k| pipes.contains(k)));
    // A range keeps the rows it can score; lists are merged and sorted.
    let r = parse_rows(&format!("{}-{},1", k + 1, k + 3), &base, &rows).unwrap();
    assert_eq!(r[0], 0);
    assert!(r.contains(&k) && r.len() <= 4);
}

#[test]
fn ablation_subsets_refuse_unknown_names_with_the_accepted_ones() {
    let base = Study::default_study();
    let rows = clear_rows();
    let e = parse_mechanisms("contention,bogus").unwrap_err();
    assert!(e.contains("unknown mechanism 'bogus'"), "{e}");
    for n in mechanism_names() {
        assert!(e.contains(n), "{e} lacks {n}");
    }
    assert_eq!(mechanism_names().len(), MECHANISM_FLAGS.len());
    for bad in ["", "smt-share,", "all", "no-wake-cost", "--wake-cost"] {
        assert!(parse_mechanisms(bad).is_err(), "'{bad}' accepted");
    }
    assert!(parse_mechanisms("smt-share,--no-smt-share")
        .unwrap_err()
        .contains("given twice"));
    let points: Vec<String> = ablation_study(&base, &rows)
        .items
        .iter()
        .map(|it| format!("{}@{}", it.title, it.machine))
        .collect();
    let e = parse_rows("bogus", &base, &rows).unwrap_err();
    assert!(e.contains("unknown row 'bogus'"), "{e}");
    for p in &points {
        assert!(e.contains(p.as_str()), "{e} lacks {p}");
    }
    // The first scored rows, as the numbers the tables print.
    assert!(e.contains("row numbers 1-"), "{e}");
    let not_modelled = rows
        .iter()
        .position(|r| matches!(r.target, Target::NotModelled(_)))
        .unwrap();
    let e = parse_rows(&(not_modelled + 1).to_string(), &base, &rows).unwrap_err();
    assert!(e.contains("not modelled"), "{e}");
    let n = rows.len();
    for bad in [
        "0".to_string(),
        (n + 1).to_string(),
        "5-3".to_string(),
        format!("1-{}", n + 1),
        "pgbench-ro@cascadelake-2s".into(),
        "schbench".into(),
        "".into(),
        "1,,2".into(),
    ] {
        assert!(parse_rows(&bad, &base, &rows).is_err(), "'{bad}' accepted");
    }
    // A range of only rows the ablation cannot score.
    let e = parse_rows(
        &format!("{}-{}", not_modelled + 1, not_modelled + 1),
        &base,
        &rows,
    )
    .unwrap_err();
    assert!(e.contains("no row in"), "{e}");
}

#[test]
fn published_samples_are_the_cited_counts_and_cover_every_sweep() {
    let mut st = Study::default_study();
    let lines = published_samples(&mut st);
    assert_eq!(lines.len(), st.items.len());
    for (ii, it) in st.items.iter().enumerate() {
        let want = match (it.title.as_str(), it.machine.as_str()) {
            // Mel Gorman's tables: mmtests' HACKBENCH_ITERATIONS=3, and
            // dbench4's 120 one-second lines of one 120 s run (the sweep
            // his rows are scored on).
            (t, "cascadelake-2s") if t.starts_with("hackbench-") => 3,
            ("dbench-bound", "cascadelake-2s") => 120,
            // The unbound dbench sweep: no scored row, the study's seeds.
            ("dbench", "cascadelake-2s") => st.seeds,
            // Ryan Roberts' graviton3 rows: not fixed by the sources, the
            // study's own seeds.
            (_, "graviton3") => st.seeds,
            other => panic!("a sweep the test does not know: {other:?}"),
        };
        assert_eq!(st.item_seeds(ii), want, "{}@{}", it.title, it.machine);
        // Every sweep of the default study has an entry with its source.
        assert!(
            published_count(&it.title, &it.machine).is_some(),
            "{}@{} has no entry in PUBLISHED_SAMPLES",
            it.title,
            it.machine
        );
        assert!(!lines[ii].contains("no published table"), "{}", lines[ii]);
    }
    assert!(!st.uniform_seeds());
    assert!(Study::default_study().uniform_seeds());
    // A sweep no entry names keeps the study's seeds.
    let mut q = Study::quick();
    published_samples(&mut q);
    assert!(q.uniform_seeds());
}

#[test]
fn a_sweep_with_its_own_seeds_runs_those_and_leaves_the_others_as_they_were() {
    let st = Study::quick();
    assert_eq!(st.seeds, 3);
    let uniform = run_study(&st, 2, false).unwrap();
    // Every sweep at the study's count: the same plan, the same bytes.
    let mut same = st.clone();
    for it in &mut same.items {
        it.seeds = Some(st.seeds);
    }
    assert_eq!(
        to_csv(&run_study(&same, 2, false).unwrap()),
        to_csv(&uniform)
    );
    // The first sweep at 1 seed, the second at 5: the first keeps seed 0's
    // runs, the second gains seeds 3 and 4 and keeps 0..3 as they were.
    let mut mixed = st.clone();
    mixed.items[0].seeds = Some(1);
    mixed.items[1].seeds = Some(5);
    let r = run_study(&mixed, 2, false).unwrap();
    let seeds_of = |item: usize| {
        let mut s: Vec<u64> = r
            .samples
            .iter()
            .filter(|x| x.item == item)
            .map(|x| x.seed)
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    assert_eq!(seeds_of(0), [0]);
    assert_eq!(seeds_of(1), [0, 1, 2, 3, 4]);
    let nv = |i: usize| mixed.items[i].values.len() * mixed.configs.len();
    assert_eq!(r.samples.len(), nv(0) + 5 * nv(1));
    for s in &r.samples {
        let Some(u) = uniform
            .samples
            .iter()
            .find(|u| (u.item, u.vi, u.ci, u.seed) == (s.item, s.vi, s.ci, s.seed))
        else {
            assert!(s.item == 1 && s.seed >= 3, "an unexpected run {s:?}");
            continue;
        };
        assert_eq!(
            format!("{:?}", u.r.metrics),
            format!("{:?}", s.r.metrics),
            "item {} vi {} ci {} seed {} moved",
            s.item,
            s.vi,
            s.ci,
            s.seed
        );
    }
}

#[test]
fn the_study_counters_carry_the_idle_scan() {
    // SIS_UTIL's limit shows in how many CPUs a wakeup's idle scan looks
    // at: the counters table, counters.csv and samples.json carry it.
    let mut st = Study::quick();
    st.seeds = 1;
    let r = run_study(&st, 1, false).unwrap();
    let k = r
        .samples
        .iter()
        .position(|s| s.r.ctr.scanned_cpus > 0)
        .expect("a run whose wakeups scanned");
    let s = &r.samples[k];
    let t = sim::study::counters_table(&r, s.item);
    assert!(t.lines().any(|l| l.starts_with("scanned_cpus ")), "{t}");
    let (_, counters) = to_csv(&r);
    let mut lines = counters.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = head
        .iter()
        .position(|h| *h == "scanned_cpus")
        .expect("a column");
    let line: Vec<&str> = lines.nth(k).unwrap().split(',').collect();
    assert_eq!(line[col], s.r.ctr.scanned_cpus.to_string());
    let json = sim::study::to_json(&r);
    assert!(
        json.contains(&format!("\"scanned_cpus\": {}", s.r.ctr.scanned_cpus)),
        "{json}"
    );
}

/// What `sim study --with-ablation --rows LIST --seeds 2` runs, with only
/// the `all` variant: (the uncut study, the ablation's subset, the study cut
/// to the rows' points, the ablation's study).
fn with_ablation_parts(list: &str) -> (Study, AblationSubset, Study, Study) {
    let mut base = Study::default_study();
    base.seeds = 2;
    let rows = clear_rows();
    let sub = AblationSubset {
        mechanisms: Some(Vec::new()),
        rows: Some(parse_rows(list, &base, &rows).unwrap()),
    };
    let study = base.restrict_to_rows(list).unwrap();
    let (st, _) = ablation_plan(&base, &rows, &sub).unwrap();
    (base, sub, study, st)
}

#[test]
fn the_ablations_all_from_the_studys_runs_is_a_fresh_run_byte_for_byte() {
    // Row 26 (pgbench read-only at 1 client) and row 57 (at 250, with a
    // third configuration, off+inelig), 2 seeds: the study cut to their points with all
    // five configurations, as `sim study --with-ablation --rows 26,57`.
    let (base, sub, study, st) = with_ablation_parts("26,57");
    assert_eq!(study.configs.len(), 5);
    let r = run_study(&study, 2, false).unwrap();
    assert!(st.configs.len() < study.configs.len(), "a true subset");
    // The runs taken from the study are a fresh run's, sample for sample
    // (every metric and counter), in its job order.
    let fresh_runs = run_study(&st, 2, false).unwrap();
    let taken = results_for(&st, &r).unwrap();
    assert_eq!(to_csv(&taken), to_csv(&fresh_runs));
    // And the ablation scores them the same: its table and CSV.
    let (_, reused) = run_ablation(&base, 2, &sub, Some(&r)).unwrap();
    let (_, fresh) = run_ablation(&base, 2, &sub, None).unwrap();
    assert_eq!(reused, fresh);
    assert_eq!(ablation_table(&reused), ablation_table(&fresh));
    assert_eq!(ablation_csv(&reused), ablation_csv(&fresh));
    assert!(reused[0].2.iter().any(|s| s.sim.is_some()));
}

#[test]
fn runs_of_another_study_are_not_taken_for_the_ablations() {
    let (_, _, study, st) = with_ablation_parts("26");
    let r = run_study(&study, 1, false).unwrap();
    assert!(results_for(&st, &r).is_ok());
    // Each difference that changes a run is named, and nothing is taken.
    let mut other = st.clone();
    other.mechanisms_off = vec!["--no-machine-noise"];
    let e = results_for(&other, &r).unwrap_err();
    assert!(e.contains("mechanisms off"), "{e}");
    let mut other = st.clone();
    other.seeds = 3;
    let e = results_for(&other, &r).unwrap_err();
    assert!(e.contains("seeds"), "{e}");
    let mut other = st.clone();
    other.scale.loops += 1;
    let e = results_for(&other, &r).unwrap_err();
    assert!(e.contains("scale"), "{e}");
    let mut other = st.clone();
    other.items[0].max_ns += 1;
    let e = results_for(&other, &r).unwrap_err();
    assert!(e.contains("another sweep"), "{e}");
    let mut other = st.clone();
    other.items[0].values = vec![16];
    let e = results_for(&other, &r).unwrap_err();
    assert!(e.contains("no pgbench-ro@graviton3 clients=16"), "{e}");
    let mut other = st.clone();
    other.configs[1] = sim::Config::parse("nb+inelig:NEXT_BUDDY");
    let e = results_for(&other, &r).unwrap_err();
    assert!(e.contains("no configuration nb+inelig = NEXT_BUDDY"), "{e}");
    let mut other = st.clone();
    other.items[0].machine = "cascadelake-2s".into();
    let e = results_for(&other, &r).unwrap_err();
    assert!(e.contains("no pgbench-ro@cascadelake-2s"), "{e}");
}
