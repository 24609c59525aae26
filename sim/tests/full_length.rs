//! The study's full-length mode (`sim study --length full`) and the
//! warm-up of pgbench and schbench (`warmup_ns`, `sim run ... warmup_ms=N`):
//! bad values are refused with the accepted ones; a warm-up changes what
//! is counted, not what runs; what completes inside it is left out of the
//! rates; the subset options cut the study to the named points.

use sim::machine::Machine;
use sim::study::{Study, FULL_LOOPS, FULL_MEASURED_NS, FULL_WARMUP_NS, LENGTHS};
use sim::workloads::{PgbenchCfg, SchbenchCfg};
use sim::{run_one, Config, RunResult, WorkSpec};

fn metric(r: &RunResult, name: &str) -> f64 {
    r.metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", r.metrics))
        .value
}

fn run(w: &WorkSpec, seed: u64, ns: u64) -> RunResult {
    let m = Machine::preset("flat:8").expect("preset");
    run_one(&m, &Config::parse("NEXT_BUDDY"), w, seed, ns, 0).expect("run")
}

fn pg(warmup_ns: u64) -> WorkSpec {
    WorkSpec::Pgbench(PgbenchCfg {
        clients: 12,
        rw: false,
        warmup_ns,
    })
}

fn sch(warmup_ns: u64) -> WorkSpec {
    WorkSpec::Schbench(SchbenchCfg {
        message: 2,
        workers: 6,
        sleep_us: 100,
        work_us: 300,
        warmup_ns,
    })
}

#[test]
fn a_bad_length_is_refused_with_the_accepted_ones_and_changes_nothing() {
    let mut st = Study::default_study();
    let before = format!("{:?}", st);
    let e = st.set_length("long").unwrap_err();
    assert!(e.contains("'long'") || e.contains("long:"), "{e}");
    for l in LENGTHS {
        assert!(e.contains(l), "{e} lacks {l}");
    }
    assert_eq!(format!("{:?}", st), before);
    st.set_length("short").expect("short");
    assert_eq!(format!("{:?}", st), before, "short is the study as it is");
}

#[test]
fn full_length_runs_mmtests_loops_and_seconds_after_a_warm_up() {
    let short = Study::default_study();
    let mut st = short.clone();
    st.set_length("full").expect("full");
    assert_eq!(st.scale.loops, FULL_LOOPS);
    assert_eq!(st.scale.warmup_ns, FULL_WARMUP_NS);
    assert_eq!(st.scale.ops, short.scale.ops, "dbench keeps its size");
    for (it, was) in st.items.iter().zip(&short.items) {
        let m = Machine::preset(&it.machine).expect("preset");
        let w = (it.make)(it.values[0], &m, &st.scale);
        match w {
            WorkSpec::Pgbench(c) => {
                assert_eq!(c.warmup_ns, FULL_WARMUP_NS);
                assert_eq!(it.max_ns, FULL_WARMUP_NS + FULL_MEASURED_NS);
            }
            WorkSpec::Schbench(c) => {
                assert_eq!(c.warmup_ns, FULL_WARMUP_NS);
                assert_eq!(it.max_ns, FULL_WARMUP_NS + FULL_MEASURED_NS);
            }
            WorkSpec::Hackbench(c) => {
                assert_eq!(c.loops, FULL_LOOPS);
                // The time limit grows with the loops (400 -> 10000: 25x).
                assert_eq!(it.max_ns, was.max_ns * 25);
            }
            _ => assert_eq!(it.max_ns, was.max_ns),
        }
    }
    // The short study counts from the start.
    for it in &short.items {
        let m = Machine::preset(&it.machine).expect("preset");
        match (it.make)(it.values[0], &m, &short.scale) {
            WorkSpec::Pgbench(c) => assert_eq!(c.warmup_ns, 0),
            WorkSpec::Schbench(c) => assert_eq!(c.warmup_ns, 0),
            _ => {}
        }
    }
}

#[test]
fn the_warm_up_is_not_part_of_the_boot_seed() {
    // `WorkSpec::boot` hashes the configuration's Debug: the warm-up stays
    // out of it, so a run with one is the same run as without.
    assert_eq!(pg(0).boot(), pg(5_000_000).boot());
    assert_eq!(sch(0).boot(), sch(5_000_000).boot());
    assert_eq!(
        format!("{:?}", pg(7)),
        "Pgbench(PgbenchCfg { clients: 12, rw: false })"
    );
    assert_ne!(pg(0).boot(), sch(0).boot());
}

#[test]
fn pgbench_leaves_the_warm_up_out_of_tps() {
    let (warm, end) = (20_000_000, 60_000_000);
    let all = run(&pg(0), 3, end);
    let counted = run(&pg(warm), 3, end);
    let prefix = run(&pg(0), 3, warm);
    // The same run, counted differently.
    assert_eq!(format!("{:?}", all.ctr), format!("{:?}", counted.ctr));
    assert_eq!(all.sim_ns, counted.sim_ns);
    let tx = |r: &RunResult, from_ns: u64| metric(r, "tps") * (r.sim_ns - from_ns) as f64 / 1e9;
    let (t_all, t_prefix, t_counted) = (tx(&all, 0), tx(&prefix, 0), tx(&counted, warm));
    assert!(
        t_prefix > 1000.0,
        "the warm-up holds transactions: {t_prefix}"
    );
    // What the warm-up run counts is the whole run less the first 20 ms
    // (a transaction completing at the 20-ms boundary may fall either way).
    assert!(
        (t_counted - (t_all - t_prefix)).abs() <= 12.0,
        "counted {t_counted}, whole {t_all}, first 20 ms {t_prefix}"
    );
    assert!(t_counted < t_all - 1000.0);
}

#[test]
fn schbench_leaves_the_warm_up_out_of_rps() {
    let (warm, end) = (20_000_000, 60_000_000);
    let all = run(&sch(0), 4, end);
    let counted = run(&sch(warm), 4, end);
    let prefix = run(&sch(0), 4, warm);
    assert_eq!(format!("{:?}", all.ctr), format!("{:?}", counted.ctr));
    let req = |r: &RunResult, from_ns: u64| metric(r, "rps") * (r.sim_ns - from_ns) as f64 / 1e9;
    let (r_all, r_prefix, r_counted) = (req(&all, 0), req(&prefix, 0), req(&counted, warm));
    assert!(r_prefix > 100.0, "{r_prefix}");
    assert!(
        (r_counted - (r_all - r_prefix)).abs() <= 12.0,
        "counted {r_counted}, whole {r_all}, first 20 ms {r_prefix}"
    );
}

#[test]
fn a_run_that_ends_inside_its_warm_up_counts_nothing() {
    let r = run(&pg(50_000_000), 1, 50_000_000);
    assert_eq!(metric(&r, "tps"), 0.0);
    let r = run(&sch(50_000_000), 1, 50_000_000);
    assert_eq!(metric(&r, "rps"), 0.0);
}

#[test]
fn points_and_rows_cut_the_study_and_keep_every_configuration() {
    let st = Study::default_study();
    let p = st
        .restrict_to_points("pgbench-ro@graviton3=64/1000,hackbench-process-pipes@graviton3")
        .expect("valid");
    assert_eq!(p.configs.len(), st.configs.len());
    assert_eq!(p.items.len(), 2);
    assert_eq!(p.items[0].title, "hackbench-process-pipes");
    assert_eq!(p.items[0].values, st.items[0].values);
    assert_eq!(p.items[1].title, "pgbench-ro");
    assert_eq!(p.items[1].values, vec![64, 1000]);
    let e = st
        .restrict_to_points("pgbench-ro@graviton3=65")
        .unwrap_err();
    assert!(e.contains("'65'") && e.contains("1/16/64/250/1000"), "{e}");
    let e = st.restrict_to_points("pgbench@graviton3").unwrap_err();
    assert!(e.contains("pgbench-ro@graviton3"), "{e}");
    // Rows 26-31: Ryan's read-only pgbench rows at 1, 250 and 1000 clients.
    let r = st.restrict_to_rows("26-31").expect("valid");
    assert_eq!(r.configs.len(), st.configs.len());
    assert_eq!(r.items.len(), 1);
    assert_eq!(r.items[0].title, "pgbench-ro");
    assert_eq!(r.items[0].values, vec![1, 250, 1000]);
    assert!(st.restrict_to_rows("0").is_err());
}

/// Runs `sim study ARGS --out DIR`: (exit status, stdout, stderr).
fn sim_study(line: &str, out: &std::path::Path) -> (Option<i32>, String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
        .arg("study")
        .args(line.split_whitespace())
        .arg("--out")
        .arg(out)
        .output()
        .expect("sim runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sim-full-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn the_ablation_at_full_length_runs_full_length_points_and_says_so() {
    // Row 26: Ryan's pgbench read-only at 1 client (nb-off>nb+inelig), the
    // cheapest scored point.
    let line = "--ablation --length full --rows 26 --mechanisms machine-noise --seeds 2";
    let a = sim::study::parse_study_args(
        &line
            .split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>(),
    )
    .expect("valid");
    let subset = a.ablation.as_ref().expect("an ablation");
    let (st, _) =
        sim::score::ablation_plan(&a.study, &sim::score::clear_rows(), subset).expect("a plan");
    assert_eq!(st.items.len(), 1);
    assert_eq!(st.items[0].title, "pgbench-ro");
    assert_eq!(st.items[0].max_ns, FULL_WARMUP_NS + FULL_MEASURED_NS);
    assert_eq!(st.scale.warmup_ns, FULL_WARMUP_NS);
    let d = scratch("ablation");
    let (code, stdout, stderr) = sim_study(line, &d);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("1 points × 2 configs × 2 seeds = 4 runs per variant"),
        "{stderr}"
    );
    // The table says the length it ran, and only the parts that apply
    // (no hackbench here).
    let want = format!(
        "  length: pgbench and schbench {} ms of warm-up not counted, then until {} ms (sim study --length full)\n",
        FULL_WARMUP_NS / 1_000_000,
        (FULL_WARMUP_NS + FULL_MEASURED_NS) / 1_000_000
    );
    assert!(stdout.contains(&want), "{stdout}");
    let txt = std::fs::read_to_string(d.join("ablation.txt")).unwrap();
    assert!(txt.contains(&want), "{txt}");
    assert!(std::fs::read_to_string(d.join("ablation.csv"))
        .unwrap()
        .lines()
        .any(|l| l.starts_with("all,true,26,")));
    // The short ablation of the same row says no length.
    let (code, stdout, stderr) = sim_study(
        "--ablation --rows 26 --mechanisms machine-noise --seeds 2",
        &d,
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stdout.contains("length:"), "{stdout}");
    let _ = std::fs::remove_dir_all(d);
}

/// The means of `time_s` per configuration in a study's `samples.csv`,
/// and the seeds each ran.
fn hackbench_means(csv: &str) -> Vec<(String, f64, Vec<u64>)> {
    let mut out: Vec<(String, Vec<f64>, Vec<u64>)> = Vec::new();
    for l in csv.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f[6], "time_s", "{l}");
        let (cfg, seed, v) = (f[4], f[5].parse().unwrap(), f[7].parse().unwrap());
        match out.iter_mut().find(|x| x.0 == cfg) {
            Some(x) => {
                x.1.push(v);
                x.2.push(seed);
            }
            None => out.push((cfg.to_string(), vec![v], vec![seed])),
        }
    }
    out.into_iter()
        .map(|(c, v, mut s)| {
            s.sort_unstable();
            (c, v.iter().sum::<f64>() / v.len() as f64, s)
        })
        .collect()
}

#[test]
fn full_length_with_published_samples_runs_the_published_counts_at_full_length() {
    // Mel's CascadeLake hackbench tables rest on 3 samples a point
    // (PUBLISHED_SAMPLES); one group, two configurations.
    let part = "--samples published --points hackbench-process-pipes@cascadelake-2s=1 --config a:NO_NEXT_BUDDY --config b:NEXT_BUDDY";
    let (df, ds) = (scratch("pub-full"), scratch("pub-short"));
    let (code, stdout, stderr) = sim_study(&format!("--length full {part}"), &df);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("study: samples hackbench-process-pipes@cascadelake-2s: 3 (published)"),
        "{stderr}"
    );
    // One line per sweep that runs, not per sweep of the whole study.
    assert_eq!(stderr.matches("study: samples ").count(), 1, "{stderr}");
    assert!(
        stdout.contains("seeds per sweep (--samples published, sim/src/score.rs published_samples): hackbench-process-pipes@cascadelake-2s 3; 6 runs"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "  length: hackbench {FULL_LOOPS} loops (sim study --length full)\n"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("(groups, lower is better; 3 seeds;"),
        "{stdout}"
    );
    let (code, stdout, stderr) = sim_study(part, &ds);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stdout.contains("length:"), "{stdout}");
    let full = hackbench_means(&std::fs::read_to_string(df.join("samples.csv")).unwrap());
    let short = hackbench_means(&std::fs::read_to_string(ds.join("samples.csv")).unwrap());
    assert_eq!(full.len(), 2);
    for ((cf, tf, sf), (cs, ts, ss)) in full.iter().zip(&short) {
        assert_eq!(cf, cs);
        assert_eq!(sf, &[0, 1, 2], "{cf}: the published 3 samples");
        assert_eq!(ss, &[0, 1, 2]);
        // 10 000 loops against 400: 25 times the messages; the ratio of
        // the times within 20-30 (start-up is a smaller share of the
        // longer run, and the noise's draws differ).
        let ratio = tf / ts;
        assert!(
            (20.0..=30.0).contains(&ratio),
            "{cf}: {tf} / {ts} = {ratio}"
        );
    }
    for d in [df, ds] {
        let _ = std::fs::remove_dir_all(d);
    }
}
