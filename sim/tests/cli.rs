//! Bad input to `sim`: every unknown key, value, option or malformed
//! argument is refused with what is accepted, exits nonzero, prints no
//! results and writes nothing. Also that a subset of the ablation
//! (`sim study --ablation --rows LIST --mechanisms LIST`) runs only the
//! chosen parts, with the full ablation's lines for them.

use std::process::Command;

use sim::cli::{parse_run, parse_work};
use sim::machine::Machine;
use sim::{Config, WorkSpec};

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn err(line: &str) -> String {
    match parse_run(&args(line)) {
        Ok(a) => panic!("'{line}' was accepted: {:?}", a.work),
        Err(e) => e,
    }
}

#[test]
fn unknown_keys_are_refused_with_the_accepted_ones() {
    let e = err("hackbench sockets=true");
    assert!(e.contains("unknown key 'sockets'"), "{e}");
    for k in [
        "groups=",
        "loops=",
        "ipc=pipe|socket",
        "mode=process|thread",
        "flips=0..=1000000",
    ] {
        assert!(e.contains(k), "{e} lacks {k}");
    }
    let e = err("pgbench clients=8 rows=3");
    assert!(e.contains("'rows'") && e.contains("rw=0|1"), "{e}");
    assert!(err("schbench m=2 threads=4").contains("t=1..=256"));
    assert!(err("dbench bound=1 unbound=1").contains("workers="));
    let e = err("lcpgbench clients=4 t=20");
    assert!(
        e.contains("'t'") && e.contains("tx=1..=1000000") && e.contains("rw=1|0"),
        "{e}"
    );
    let e = err("lcschbench m=1 workers=4");
    assert!(
        e.contains("'workers'") && e.contains("t=1..=4095") && e.contains("sleep_us="),
        "{e}"
    );
}

#[test]
fn bad_values_are_refused_not_clamped() {
    for (line, want) in [
        ("hackbench ipc=sockets", "ipc=sockets: expected pipe|socket"),
        ("hackbench mode=threads", "expected process|thread"),
        ("hackbench groups=0", "groups=0: expected 1..=400"),
        ("hackbench groups=401", "expected 1..=400"),
        ("hackbench loops=-1", "expected 1..=100000"),
        ("hackbench groups=4x", "expected 1..=400"),
        ("hackbench groups=", "expected 1..=400"),
        ("hackbench flips=-1", "flips=-1: expected 0..=1000000"),
        ("hackbench flips=1000001", "expected 0..=1000000"),
        ("hackbench flips=six", "expected 0..=1000000"),
        ("pgbench rw=2", "expected 0|1"),
        ("dbench bound=yes", "expected 0|1"),
        ("schbench work_us=0", "expected 1..=10000000"),
        ("lcpgbench tx=0", "tx=0: expected 1..=1000000"),
        ("lcpgbench clients=1001", "expected 1..=1000"),
        ("lcpgbench rw=yes", "expected 1|0"),
        ("lcpgbench space_wake=2", "space_wake=2: expected 1|0"),
        ("lcschbench m=0", "m=0: expected 1..=64"),
        ("lcschbench t=4096", "expected 1..=4095"),
        ("lcschbench sleep_us=1000001", "expected 0..=1000000"),
        ("lcschbench work_us=x", "expected 0..=10000000"),
    ] {
        let e = err(line);
        assert!(e.contains(want), "'{line}': {e}");
    }
}

#[test]
fn malformed_arguments_are_refused() {
    for (line, want) in [
        ("hackbench groups", "expected key=value, got 'groups'"),
        ("hackbench groups=2 groups=3", "'groups' given twice"),
        (
            "hackbenchx",
            "unknown workload 'hackbenchx' (one of hackbench",
        ),
        ("", "which workload?"),
        ("--machine", "--machine needs a value"),
        (
            "--machine huge hackbench",
            "unknown machine 'huge' (one of graviton3",
        ),
        ("--machine flat:0 hackbench", "flat:N with N in 1..=256"),
        (
            "--cpus 4 hackbench",
            "unknown option '--cpus' (accepted: --machine",
        ),
        ("--seed x hackbench", "--seed: expected a number"),
        ("--ms 0 hackbench", "--ms: expected a number >= 1"),
        ("--seed 1 --seed 2 hackbench", "--seed given twice"),
        ("--config NEXT_BUDY hackbench", "NO_NAME of PLACE_LAG"),
        (
            "--config kernel.sched_foo=1 hackbench",
            "kernel.sched_base_slice_ns",
        ),
        (
            "--config kernel.sched_base_slice_ns=1 hackbench",
            "an integer in [",
        ),
        (
            "--config preempt=fast hackbench",
            "one of none, voluntary, full, lazy",
        ),
        ("mix", "mix needs tasks"),
        ("mix hog sleeper:1", "unknown task 'sleeper:1'"),
        ("--machine qemu:0 hackbench", "qemu:N in 1..=64"),
        ("--machine qemu:65 hackbench", "qemu:N in 1..=64"),
        (
            "--no-locks hackbench",
            "unknown mechanism flag '--no-locks' (accepted: --no-wake-cost",
        ),
        (
            "--no-contention --no-contention hackbench",
            "--no-contention given twice",
        ),
        ("--no-batching hackbench", "or --no-batch"),
        ("--no-batch --no-batch hackbench", "--no-batch given twice"),
    ] {
        let e = err(line);
        assert!(e.contains(want), "'{line}': {e}");
    }
}

#[test]
fn good_input_is_parsed_as_written() {
    let m = Machine::preset("small").unwrap();
    match parse_work("hackbench", &args("groups=7 ipc=socket mode=thread"), &m).unwrap() {
        WorkSpec::Hackbench(c) => {
            assert_eq!(
                (c.groups, c.loops, c.sockets, c.threads),
                (7, 100, true, true)
            )
        }
        w => panic!("{w:?}"),
    }
    match parse_work("dbench", &[], &m).unwrap() {
        WorkSpec::Dbench(c) => assert_eq!((c.workers, c.bound), (2, false)),
        w => panic!("{w:?}"),
    }
    let a = parse_run(&args(
        "--machine graviton3 --config nb:NEXT_BUDDY --seed 3 --ms 7 pgbench rw=1",
    ))
    .unwrap();
    assert_eq!((a.machine.topo.nr_cpus(), a.seed, a.ms), (64, 3, 7));
    assert_eq!(a.config.name, "nb");
    assert!(matches!(a.work, WorkSpec::Pgbench(c) if c.rw));
    assert!(Config::parse("A:NEXT_BUDDY+preempt=lazy").check().is_ok());
    assert!(a.machine.batch);
    let nb = parse_run(&args("--no-batch --machine graviton3 hackbench")).unwrap();
    assert!(!nb.machine.batch);
    let q = parse_run(&args("--machine qemu:4 hackbench")).unwrap();
    assert!(q.machine.mech.contention && q.machine.mech.wake_cost && q.machine.mech.vcpu_share);
    assert!(q.machine.mech.vcpu_turns && q.machine.costs.vcpu_turn_ns > 0);
    let q = parse_run(&args(
        "--machine qemu:4 --no-contention --no-vcpu-share --no-wake-cost --no-scan-cost hackbench",
    ))
    .unwrap();
    let m = q.machine.mech;
    assert!(!m.contention && !m.vcpu_share && !m.wake_cost && !m.scan_cost);
    let q = parse_run(&args("--machine qemu:4 --no-vcpu-turns hackbench")).unwrap();
    assert!(q.machine.mech.vcpu_share && !q.machine.mech.vcpu_turns);
    let e = parse_run(&args(
        "--machine qemu:4 --no-vcpu-turns --no-vcpu-turns hackbench",
    ));
    assert!(e.unwrap_err().contains("given twice"));
    // The presets whose costs have no syscall split model no pipe mutex.
    let g = parse_run(&args("--machine graviton3 hackbench")).unwrap();
    assert!(!g.machine.mech.contention && g.machine.mech.wake_cost);
    // Machine noise: off unless asked for, and on with --machine-noise.
    assert!(!g.machine.mech.machine_noise);
    let n = parse_run(&args("--machine-noise --machine graviton3 hackbench")).unwrap();
    assert!(n.machine.mech.machine_noise && n.machine.mech.wake_cost);
    let n = parse_run(&args("--no-machine-noise --machine graviton3 hackbench")).unwrap();
    assert!(!n.machine.mech.machine_noise);
    // A part of it off: the rest on, with the noise; none without it.
    let p = parse_run(&args(
        "--machine-noise --no-noise-placement --machine graviton3 hackbench",
    ))
    .unwrap()
    .machine
    .mech;
    assert!(p.machine_noise && !p.noise_placement);
    assert!(p.noise_boot_speed && p.noise_cpu_speed && p.noise_irqs);
    let q = parse_run(&args("--no-noise-irqs --machine graviton3 hackbench"))
        .unwrap()
        .machine
        .mech;
    assert!(!(q.machine_noise || q.noise_boot_speed || q.noise_placement || q.noise_irqs));
}

/// `--machine-noise` where it cannot apply, twice, or with its opposite
/// is refused, saying why.
#[test]
fn machine_noise_flag_is_checked() {
    let e = err("--machine qemu:4 --machine-noise hackbench");
    assert!(e.contains("qemu:4 has no machine noise"), "{e}");
    let e = err("--machine-noise --machine-noise hackbench");
    assert!(e.contains("given twice"), "{e}");
    let e = err("--machine-noise --no-machine-noise hackbench");
    assert!(e.contains("contradict"), "{e}");
}

#[test]
fn the_binary_refuses_and_writes_nothing() {
    let sim = env!("CARGO_BIN_EXE_sim");
    let out = Command::new(sim)
        .args(args("run --ms 1 hackbench sockets=true"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "results printed for bad input");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.starts_with("error: hackbench: unknown key 'sockets'"),
        "{e}"
    );
    // A study with a bad option leaves no output directory behind.
    let dir = std::env::temp_dir().join(format!("sim-cli-test-{}", std::process::id()));
    for bad in [
        "--seeds 0",
        "--jobs x",
        "--config A:NEXT_BUDDY --config B:NO_SUCH",
        "--quick --fast",
        "--samples bogus",
        "--samples published --samples seeds",
        "--samples published --ablation",
    ] {
        let out = Command::new(sim)
            .arg("study")
            .args(args(bad))
            .arg("--out")
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "study {bad}");
        assert!(out.stdout.is_empty(), "study {bad} printed results");
        assert!(!dir.exists(), "study {bad} wrote {}", dir.display());
    }
    // An unknown --samples value is refused with the accepted ones.
    let out = Command::new(sim)
        .args(args("study --samples bogus --out"))
        .arg(&dir)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.starts_with("error: --samples bogus: unknown (one of seeds, published)"),
        "{e}"
    );
    for bad in ["bench 1", "walk"] {
        let out = Command::new(sim).args(args(bad)).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(out.stdout.is_empty(), "{bad}");
    }
}

#[test]
fn help_prints_the_usage_and_runs_nothing() {
    let sim = env!("CARGO_BIN_EXE_sim");
    for line in [
        "--help",
        "-h",
        "run --help",
        "run --machine small -h",
        "study --help",
    ] {
        let out = Command::new(sim).args(args(line)).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{line}");
        let o = String::from_utf8_lossy(&out.stdout);
        assert!(o.starts_with("usage: sim run "), "{line}: {o}");
        assert!(out.stderr.is_empty(), "{line}");
    }
    // Without it, a value-taking option still needs its value.
    let out = Command::new(sim).args(args("run --seed")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sim-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs `sim study --ablation ARGS --out DIR`: (exit status, stdout, stderr).
fn ablation(extra: &str, dir: &std::path::Path) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["study", "--ablation"])
        .args(args(extra))
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_ablation_subset_runs_only_the_chosen_rows_and_variants() {
    let rows = sim::score::clear_rows();
    let find = |title: &str, value: u64, base: &str, variant: &str| {
        1 + rows
            .iter()
            .position(|r| {
                matches!(r.target, sim::score::Target::Point { title: t, value: v, .. } if t == title && v == value)
                    && r.base == base
                    && r.variant == variant
            })
            .unwrap_or_else(|| panic!("no row {title} {value} {base}>{variant}"))
    };
    // Cheap points: pgbench at 1 client (nb-off>nb+inelig), and at 250
    // (nb-off>off+inelig), which brings a third configuration in.
    let one = find("pgbench-ro", 1, "nb-off", "nb+inelig");
    let other = find("pgbench-ro", 250, "nb-off", "off+inelig");
    let d1 = scratch("ablation-one");
    let (code, stdout, stderr) = ablation(
        &format!("--rows {one} --mechanisms machine-noise --seeds 2"),
        &d1,
    );
    assert_eq!(code, Some(0), "{stderr}");
    // The progress: the plan, each variant starting and done.
    for want in [
        "ablation: 1 items, 1 points × 2 configs × 2 seeds = 4 runs per variant; 2 variants, 2 to run: 8 runs",
        "ablation: v0 all (1/2) starts: 4 runs",
        "ablation: v0 all done: 4 runs",
        "ablation: v9 --no-machine-noise (2/2) starts: 4 runs",
        "in all 8/8",
    ] {
        assert!(stderr.contains(want), "stderr lacks '{want}':\n{stderr}");
    }
    assert!(
        stdout.contains("  pgbench-ro on graviton3: [1]\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("  --rows: only the rows {one}\n")),
        "{stdout}"
    );
    let csv1 = std::fs::read_to_string(d1.join("ablation.csv")).unwrap();
    let lines1: Vec<&str> = csv1.lines().skip(1).collect();
    // One line per (variant, row): the chosen row under all and
    // --no-machine-noise, nothing else.
    let mut got: Vec<(String, String)> = lines1
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), f[2].to_string())
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("--no-machine-noise".to_string(), one.to_string()),
            ("all".to_string(), one.to_string())
        ]
    );
    // A larger subset (another point, a third configuration, so another
    // order of runs) gives the same lines for the row: a run depends only
    // on its configuration, point, seed and mechanisms.
    let d2 = scratch("ablation-two");
    let (code, _, stderr) = ablation(
        &format!("--rows {other},{one} --mechanisms --no-machine-noise --seeds 2"),
        &d2,
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("2 points × 3 configs × 2 seeds"),
        "{stderr}"
    );
    let csv2 = std::fs::read_to_string(d2.join("ablation.csv")).unwrap();
    for l in &lines1 {
        assert!(csv2.lines().any(|m| m == *l), "{l} not in\n{csv2}");
    }
    assert!(
        csv2.lines().any(|m| m.contains(&format!(",{other},"))),
        "{csv2}"
    );
    let txt1 = std::fs::read_to_string(d1.join("ablation.txt")).unwrap();
    let txt2 = std::fs::read_to_string(d2.join("ablation.txt")).unwrap();
    let row_line = |t: &str| {
        t.lines()
            .find(|l| l.starts_with(&format!("{one:<3} ")))
            .map(str::to_string)
    };
    assert!(row_line(&txt1).is_some(), "{txt1}");
    assert_eq!(row_line(&txt1), row_line(&txt2));
    for d in [d1, d2] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn the_ablation_refuses_unknown_mechanisms_and_rows_and_writes_nothing() {
    let dir = scratch("ablation-bad");
    let mechanisms: Vec<&str> = sim::machine::MECHANISM_FLAGS
        .iter()
        .map(|(f, _)| f.trim_start_matches("--no-"))
        .collect();
    let points = [
        "pgbench-ro@graviton3",
        "dbench-bound@cascadelake-2s",
        "hackbench-process-pipes@cascadelake-2s",
    ];
    for (bad, want) in [
        ("--mechanisms contention,bogus", "unknown mechanism 'bogus'"),
        (
            "--mechanisms wake-cost,wake-cost",
            "'wake-cost' given twice",
        ),
        ("--rows bogus", "unknown row 'bogus'"),
        ("--rows 0", "no row 0"),
        ("--rows 1 --rows 2", "--rows given twice"),
        ("--rows 1 --config A:NEXT_BUDDY", "no --config"),
    ] {
        let (code, stdout, stderr) = ablation(bad, &dir);
        assert_eq!(code, Some(2), "{bad}: {stderr}");
        assert!(stdout.is_empty(), "{bad} printed results");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(want),
            "{bad}: {stderr}"
        );
        assert!(!stderr.contains("ablation: "), "{bad} started: {stderr}");
        assert!(!dir.exists(), "{bad} wrote {}", dir.display());
        if bad.starts_with("--mechanisms contention") {
            for m in &mechanisms {
                assert!(stderr.contains(m), "{bad}: {stderr} lacks {m}");
            }
        }
        if bad == "--rows bogus" {
            for p in points {
                assert!(stderr.contains(p), "{bad}: {stderr} lacks {p}");
            }
        }
    }
    // Without --ablation --mechanisms is refused; --rows cuts the study
    // to the rows' points, and a row the (quick) study cannot score is
    // refused with the accepted ones.
    for (bad, says) in [
        (
            "--mechanisms smt-share",
            "give --ablation or --with-ablation too",
        ),
        ("--rows 1", "accepted: row numbers"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(args(&format!("study --quick {bad} --out")))
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{bad}: {stderr}");
        assert!(!dir.exists());
    }
}

#[test]
fn sim_run_warm_up_values_are_checked() {
    let e = err("--ms 100 pgbench clients=4 warmup_ms=abc");
    assert!(
        e.contains("warmup_ms=abc") && e.contains("0..=3600000"),
        "{e}"
    );
    let e = err("--ms 100 pgbench warmup_ms=100");
    assert!(e.contains("not below --ms 100"), "{e}");
    let e = err("--ms 100 schbench warmup_ms=-1");
    assert!(e.contains("warmup_ms=-1"), "{e}");
    let e = err("hackbench warmup_ms=10");
    assert!(e.contains("unknown key 'warmup_ms'"), "{e}");
    let a = parse_run(&args("--ms 100 pgbench clients=4 warmup_ms=40")).expect("valid");
    match a.work {
        WorkSpec::Pgbench(c) => assert_eq!(c.warmup_ns, 40_000_000),
        w => panic!("{w:?}"),
    }
}

/// `sim study`'s arguments parsed and checked, not run.
fn study_err(line: &str) -> String {
    match sim::study::parse_study_args(&args(line)) {
        Ok(a) => panic!("'{line}' was accepted: {:?}", a.study.configs),
        Err(e) => e,
    }
}

#[test]
fn study_rows_errors_name_the_command_they_are_for() {
    let rows = sim::score::clear_rows();
    let not_modelled = 1 + rows
        .iter()
        .position(|r| matches!(r.target, sim::score::Target::NotModelled(_)))
        .expect("a row that is not modelled");
    // Without --ablation --rows cuts the study: its errors say so, and list
    // the accepted row numbers and points.
    for (line, want) in [
        (
            "--quick --rows 1".to_string(),
            "row 1 is not scored by this study (not run",
        ),
        (
            format!("--rows {not_modelled}"),
            "is not scored by this study (not modelled",
        ),
        (
            format!("--rows {not_modelled}-{not_modelled}"),
            "is scored by this study",
        ),
    ] {
        let e = study_err(&line);
        assert!(e.contains(want), "{line}: {e}");
        assert!(!e.contains("by this ablation"), "{line}: {e}");
        assert!(e.contains("accepted: row numbers"), "{line}: {e}");
    }
    let e = study_err(&format!("--rows {not_modelled}"));
    assert!(e.contains("hackbench-process-pipes@graviton3"), "{e}");
    // With --ablation, the ablation's.
    let e = study_err(&format!("--ablation --rows {not_modelled}"));
    assert!(
        e.contains("is not scored by this ablation (not modelled"),
        "{e}"
    );
}

#[test]
fn study_bad_input_is_refused_with_the_accepted_values() {
    let options = sim::study::STUDY_OPTIONS;
    for (line, want) in [
        ("--bogus", "unknown option '--bogus' (accepted: --quick"),
        ("--quick --newidle", "give one of --quick, --newidle"),
        ("--newidle --quick", "give one of --quick, --newidle"),
        ("--quick --quick", "--quick given twice"),
        ("--ablation --ablation", "--ablation given twice"),
        ("--no-machine-noise --no-machine-noise", "given twice"),
        ("--seeds", "--seeds needs a value"),
        ("--seeds 0", "--seeds 0: a number from 1 to 1000"),
        ("--seeds 1001", "a number from 1 to 1000"),
        ("--seeds 99999999999999999999999", "a number from 1 to 1000"),
        ("--seeds -1", "a number from 1 to 1000"),
        ("--seeds 2 --seeds 3", "--seeds given twice"),
        ("--jobs 0", "--jobs 0: a number from 1 to 256"),
        ("--jobs 100000", "a number from 1 to 256"),
        ("--jobs 1 --jobs 2", "--jobs given twice"),
        (
            "--length medium",
            "--length medium: unknown (one of short, full)",
        ),
        ("--length full --length short", "--length given twice"),
        (
            "--samples all",
            "--samples all: unknown (one of seeds, published)",
        ),
        (
            "--length full --samples published --ablation",
            "--samples published: not with --ablation",
        ),
        (
            "--points bogus",
            "accepted: hackbench-process-pipes@graviton3",
        ),
        ("--points pgbench-ro@graviton3 --rows 26", "not with --rows"),
        (
            "--points pgbench-ro@graviton3 --ablation",
            "not with --rows or --ablation",
        ),
        (
            "--mechanisms smt-share",
            "give --ablation or --with-ablation too",
        ),
        ("--ablation --mechanisms bogus", "accepted: "),
        ("--ablation --config a:NEXT_BUDDY", "no --config"),
        ("--newidle --ablation", "no clear row resolves"),
        (
            "--ablation --with-ablation",
            "--ablation and --with-ablation: give one",
        ),
        (
            "--with-ablation --ablation",
            "--ablation and --with-ablation: give one",
        ),
        ("--with-ablation --with-ablation", "--with-ablation given twice"),
        (
            "--with-ablation --config a:NEXT_BUDDY --config b:NO_NEXT_BUDDY",
            "--with-ablation runs the default study's configurations (the ablation's are the scored rows' pairs of them); no --config",
        ),
        (
            "--with-ablation --samples published",
            "--samples published: not with --with-ablation",
        ),
        (
            "--with-ablation --points pgbench-ro@graviton3",
            "--points: not with --rows or --with-ablation",
        ),
        ("--quick --with-ablation", "no clear row resolves"),
        ("--newidle --with-ablation", "no clear row resolves"),
        ("--with-ablation --mechanisms bogus", "unknown mechanism 'bogus'"),
        ("--with-ablation --rows 0", "no row 0"),
        ("--config a:NEXT_BUDDY", "at least two --config"),
        (
            "--config a:NEXT_BUDDY --config a:NO_NEXT_BUDDY",
            "the name 'a' is given twice",
        ),
        (
            "--config a:NO_SUCH --config b:NEXT_BUDDY",
            "--config a:NO_SUCH:",
        ),
        ("--config :NEXT_BUDDY --config b:NEXT_BUDDY", "needs a name"),
        (
            "--config a:preempt=sometimes --config b:NEXT_BUDDY",
            "expected one of",
        ),
    ] {
        let e = study_err(line);
        assert!(e.contains(want), "'{line}': {e}");
        if line == "--bogus" {
            for o in options {
                assert!(e.contains(o), "'{line}': {e} lacks {o}");
            }
        }
    }
    // Good input still parses as written.
    let a = sim::study::parse_study_args(&args(
        "--quick --seeds 2 --jobs 1 --out x --out y --config a:NO_NEXT_BUDDY --config b:NEXT_BUDDY",
    ))
    .expect("valid");
    assert_eq!(a.study.seeds, 2);
    assert_eq!(a.jobs, 1);
    assert_eq!(
        a.out,
        std::path::PathBuf::from("y"),
        "the last --out counts"
    );
    let names: Vec<&str> = a.study.configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn with_ablation_runs_the_cut_study_then_the_ablation_of_the_uncut_one() {
    // No subset: the default study, and the full ablation of it.
    let a = sim::study::parse_study_args(&args("--with-ablation")).expect("valid");
    let full = sim::study::Study::default_study();
    let shape = |st: &sim::study::Study| -> Vec<(String, String, Vec<u64>)> {
        st.items
            .iter()
            .map(|it| (it.title.clone(), it.machine.clone(), it.values.clone()))
            .collect()
    };
    assert_eq!(shape(&a.study), shape(&full));
    assert_eq!(a.ablation, Some(sim::score::AblationSubset::default()));
    assert_eq!(
        shape(a.ablation_base.as_ref().expect("a base")),
        shape(&full)
    );
    // A part: the study is cut to the rows' points with every
    // configuration (as `--rows` without an ablation); the ablation's
    // subset is the one `--ablation` parses from the same words, of the
    // uncut study with the same seeds.
    let line = "--rows 26 --mechanisms machine-noise --seeds 2";
    let a = sim::study::parse_study_args(&args(&format!("--with-ablation {line}"))).unwrap();
    let alone = sim::study::parse_study_args(&args(&format!("--ablation {line}"))).unwrap();
    let cut = sim::study::parse_study_args(&args("--rows 26 --seeds 2")).unwrap();
    assert_eq!(shape(&a.study), shape(&cut.study));
    assert_eq!(a.study.configs.len(), full.configs.len());
    assert_eq!(a.study.seeds, 2);
    assert_eq!(a.ablation, alone.ablation);
    assert!(alone.ablation_base.is_none());
    let base = a.ablation_base.as_ref().expect("a base");
    assert_eq!(shape(base), shape(&alone.study));
    assert_eq!(base.seeds, 2);
    // Without either, no ablation.
    assert!(cut.ablation.is_none() && cut.ablation_base.is_none());
}

#[test]
fn with_ablation_prints_the_ablation_of_a_fresh_run_from_the_studys_runs() {
    // Row 26 (pgbench read-only at 1 client, nb-off>nb+inelig), the
    // cheapest scored point, 2 seeds: the study (5 configurations) and its
    // ablation with all from the study's runs, against `--ablation` alone.
    let line = "--rows 26 --mechanisms machine-noise --seeds 2";
    let d1 = scratch("with-ablation");
    let d2 = scratch("ablation-alone");
    let (code, stdout, stderr) = {
        let out = Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(args(&format!("study --with-ablation {line} --out")))
            .arg(&d1)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(code, Some(0), "{stderr}");
    // The runs count first: the study's 10, the ablation's 4 besides all.
    assert!(
        stderr.starts_with("study: 10 runs, then the ablation: 2 variants, 1 to run besides all (whose 4 runs are the study's) × 4 runs = 4 runs; 14 runs in all"),
        "{stderr}"
    );
    for want in [
        "ablation: 1 items, 1 points × 2 configs × 2 seeds = 4 runs per variant; 2 variants, 1 to run (all's runs are the study's): 4 runs",
        "ablation: v0 all: its 4 runs are the study's",
        "ablation: v9 --no-machine-noise (1/1) starts: 4 runs",
    ] {
        assert!(stderr.contains(want), "stderr lacks '{want}':\n{stderr}");
    }
    assert!(!stderr.contains("v0 all (1/"), "all ran again: {stderr}");
    // stdout: the study's tables, its score, then the ablation's table, as
    // the files hold them.
    let tables = std::fs::read_to_string(d1.join("tables.txt")).unwrap();
    let abl_txt = std::fs::read_to_string(d1.join("ablation.txt")).unwrap();
    assert_eq!(stdout, format!("{tables}\n{abl_txt}"));
    assert!(
        tables.contains("\nScore against the published tables"),
        "{tables}"
    );
    assert!(abl_txt.contains("  all: the study's own runs (sim study --with-ablation)\n"));
    let (code, _, stderr) = ablation(line, &d2);
    assert_eq!(code, Some(0), "{stderr}");
    // The scores byte for byte; the text but for the wall time and the line
    // that says where all's runs came from.
    let csv = |d: &std::path::Path| std::fs::read_to_string(d.join("ablation.csv")).unwrap();
    assert_eq!(csv(&d1), csv(&d2));
    let alone = std::fs::read_to_string(d2.join("ablation.txt")).unwrap();
    let body = |t: &str| -> Vec<String> {
        t.lines()
            .skip(1)
            .filter(|l| !l.starts_with("  all: the study's own runs"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(body(&abl_txt), body(&alone));
    // Both carry the cost digest line the study prints.
    let digest = tables
        .lines()
        .find(|l| l.starts_with("  costs of graviton3: digest "))
        .expect("the study's cost line");
    assert!(
        abl_txt.contains(digest) && alone.contains(digest),
        "{alone}"
    );
    for d in [d1, d2] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_study_whose_out_is_a_file_refuses_before_running() {
    let dir = scratch("out-file");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("not-a-dir");
    std::fs::write(&file, "kept").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args("study --quick --seeds 1 --out"))
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.starts_with("error: --out ") && e.contains("not a directory"),
        "{e}"
    );
    assert!(!e.contains("runs"), "it ran before refusing: {e}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
    let _ = std::fs::remove_dir_all(dir);
}
