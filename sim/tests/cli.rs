//! Bad input to `sim`: every unknown key, value, option or malformed
//! argument is refused with what is accepted, exits nonzero, prints no
//! results and writes nothing.

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
    ] {
        assert!(e.contains(k), "{e} lacks {k}");
    }
    let e = err("pgbench clients=8 rows=3");
    assert!(e.contains("'rows'") && e.contains("rw=0|1"), "{e}");
    assert!(err("schbench m=2 threads=4").contains("t=1..=256"));
    assert!(err("dbench bound=1 unbound=1").contains("workers="));
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
        ("pgbench rw=2", "expected 0|1"),
        ("dbench bound=yes", "expected 0|1"),
        ("schbench work_us=0", "expected 1..=10000000"),
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
