//! A spin on a pipe's mutex hands the vCPU turn on
//! (`Mechanisms::pipe_lock_pause`, `sim run --no-pipe-lock-pause` to turn
//! it off; `sim/src/engine.rs`, "vCPU turns"): under QEMU's round-robin
//! TCG one vCPU executes at a time, so a task that finds its pipe's mutex
//! owned by a task on a CPU finds the owner out of its turn, and its
//! spin's first `pause` ends its turn. Our kernel's pipe lock does so:
//! 1.07 `pause`s per wait that met a holder out of its turn
//! (`scripts/linux-compare/pipelock-probe.sh`).

use sim::cli::parse_run;
use sim::engine::PAUSE_PIPE_LOCK;
use sim::run_one;

fn run(line: &str) -> sim::RunResult {
    let a = parse_run(
        &line
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>(),
    )
    .expect("valid run");
    run_one(&a.machine, &a.config, &a.work, a.seed, a.ms * 1_000_000, 0).expect("runs")
}

fn metric(r: &sim::RunResult, name: &str) -> f64 {
    r.metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no metric {name}"))
        .value
}

const PIPES: &str = "hackbench ipc=pipe mode=process groups=2 loops=40";

/// Pipe hackbench on `qemu:4`: spinners pass the turn on at their first
/// poll, so the polls a run makes fall from hundreds of thousands (each
/// spinner polling through the rest of its turn, the owner unable to
/// release out of its turn) to about one per wait, and the run is
/// shorter. Without the mechanism no turn ends so.
#[test]
fn pipe_spin_hands_the_turn_on() {
    let on = run(&format!("--machine qemu:4 --ms 600000 --seed 1 {PIPES}"));
    let off = run(&format!(
        "--machine qemu:4 --ms 600000 --seed 1 --no-pipe-lock-pause {PIPES}"
    ));
    let (p, q) = (
        on.turns.pauses[PAUSE_PIPE_LOCK],
        off.turns.pauses[PAUSE_PIPE_LOCK],
    );
    assert!(p > 50, "{p}");
    assert_eq!(q, 0);
    let (spins_on, spins_off) = (metric(&on, "lock_spins"), metric(&off, "lock_spins"));
    // Each pause ends a turn after one poll; a poll at the instant a turn
    // begins does not end it (`Kernel::pause`), so a few waits poll twice.
    assert!(
        spins_on >= p as f64 && spins_on <= 2.0 * p as f64,
        "{spins_on} polls, {p} pauses"
    );
    assert!(
        100.0 * spins_on < spins_off,
        "{spins_on} polls against {spins_off}"
    );
    assert!(
        metric(&on, "time_s") < metric(&off, "time_s"),
        "{} against {}",
        metric(&on, "time_s"),
        metric(&off, "time_s")
    );
}

/// Sockets take no pipe mutex, and a machine without vCPU turns has no
/// turn to end: the runs are the runs without the mechanism, to the
/// counter. With `--no-vcpu-pause` (no spin wait passes the turn on) it
/// does not act either.
#[test]
fn no_pipe_mutex_or_no_turns_no_change() {
    for line in [
        "--machine qemu:4 --ms 600000 --seed 2 hackbench ipc=socket mode=process groups=2 loops=40",
        "--machine qemu:1 --ms 600000 --seed 2 hackbench ipc=pipe mode=process groups=1 loops=20",
        "--machine qemu:4 --ms 600000 --seed 2 --no-vcpu-turns hackbench ipc=pipe mode=process groups=2 loops=20",
        "--machine qemu:4 --ms 600000 --seed 2 --no-vcpu-pause hackbench ipc=pipe mode=process groups=2 loops=20",
    ] {
        let on = run(line);
        let (flag, rest) = line.split_at(line.find(" hackbench").unwrap());
        let off = run(&format!("{flag} --no-pipe-lock-pause{rest}"));
        assert_eq!(on.turns.pauses[PAUSE_PIPE_LOCK], 0, "{line}");
        assert_eq!(format!("{:?}", on.ctr), format!("{:?}", off.ctr), "{line}");
        assert_eq!(format!("{:?}", on.metrics), format!("{:?}", off.metrics), "{line}");
    }
}

/// A bad flag is refused and names the mechanism flags.
#[test]
fn unknown_flag_is_refused() {
    let e = parse_run(
        &"--machine qemu:4 --no-pipe-pause hackbench ipc=pipe"
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>(),
    )
    .expect_err("refused");
    assert!(e.contains("--no-pipe-lock-pause"), "{e}");
}
