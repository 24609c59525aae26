//! What the `sim run` tests share: a command line parsed as `sim run`
//! parses it, and run as it runs it.

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

/// The run `line` asks for (which must parse).
pub fn run(line: &str) -> sim::RunResult {
    let a = parse(line).expect("valid run");
    run_one(&a.machine, &a.config, &a.work, a.seed, a.ms * 1_000_000, 0).expect("runs")
}
