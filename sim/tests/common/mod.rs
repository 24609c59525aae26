//! What the `sim run` tests share: a command line parsed as `sim run`
//! parses it, run as it runs it, and the seed loop of the `qemu:N`
//! counter tests.

// Each test crate that includes this module uses some of it.
#![allow(dead_code)]

use sim::cli::{parse_run, RunArgs};
use sim::run_one;

/// `sim run`'s arguments from one line (split at white space).
pub fn parse(line: &str) -> Result<RunArgs, String> {
    parse_run(
        &line
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>(),
    )
}

/// The arguments of `line`, which must parse.
pub fn args(line: &str) -> RunArgs {
    parse(line).expect("valid run")
}

/// `sim run`'s error for `line` ("" if it parses).
pub fn parse_error(line: &str) -> String {
    parse(line).err().unwrap_or_default()
}

/// The run `a` asks for.
pub fn run_args(a: &RunArgs) -> sim::RunResult {
    run_one(&a.machine, &a.config, &a.work, a.seed, a.ms * 1_000_000, 0).expect("runs")
}

/// The run `line` asks for (which must parse).
pub fn run(line: &str) -> sim::RunResult {
    run_args(&args(line))
}

/// Seeds 1-4 of `work` on `qemu:4` for up to 600 s, each run with the
/// flags `off` and with `on`: `(seed, off's run, on's run)`.
pub fn seed_pairs(off: &str, on: &str, work: &str) -> Vec<(u64, sim::RunResult, sim::RunResult)> {
    (1..=4)
        .map(|seed| {
            let base = format!("--machine qemu:4 --ms 600000 --seed {seed}");
            (
                seed,
                run(&format!("{base} {off} {work}")),
                run(&format!("{base} {on} {work}")),
            )
        })
        .collect()
}

/// The value of metric `name` of run `r` (which must have it).
pub fn metric(r: &sim::RunResult, name: &str) -> f64 {
    r.metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", r.metrics))
        .value
}

/// Runs `line` twice: every metric the same to the bit and the same
/// switches. Returns the first run.
pub fn same_run_twice(line: &str) -> sim::RunResult {
    let (a, b) = (run(line), run(line));
    for (x, y) in a.metrics.iter().zip(&b.metrics) {
        assert_eq!(x.value.to_bits(), y.value.to_bits(), "{}", x.name);
    }
    assert_eq!(a.ctr.switches, b.ctr.switches);
    a
}
