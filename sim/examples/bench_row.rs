//! One of `sim bench`'s hackbench rows for a given simulated time: the
//! same run (`sim::bench::hackbench_row`), short enough for a profiler
//! (callgrind, `perf`), without `sim run`'s follow counters.
//!
//! ```text
//! cargo build -p sim --release --example bench_row
//! valgrind --tool=callgrind target/release/examples/bench_row pipe 30
//! ```
//!
//! `KIND` is `pipe`, `socket` or `noise` (pipes with machine noise),
//! `MS` the simulated milliseconds. Prints the run's simulated time and
//! its event counts.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        sim::errln!("usage: bench_row pipe|socket|noise MS");
        std::process::exit(2);
    };
    let [kind, ms] = args.as_slice() else { usage() };
    let (sockets, noise) = match kind.as_str() {
        "pipe" => (false, false),
        "socket" => (true, false),
        "noise" => (false, true),
        _ => {
            sim::errln!("bench_row: KIND: expected pipe, socket or noise, got '{kind}'");
            usage()
        }
    };
    let ms: u64 = match ms.parse() {
        Ok(n) if n > 0 && n <= 60_000 => n,
        _ => {
            sim::errln!("bench_row: MS: expected a number of ms from 1 to 60000, got '{ms}'");
            usage()
        }
    };
    match sim::bench::hackbench_row(sockets, noise, ms * 1_000_000) {
        Ok(r) => sim::outln!(
            "{} ns simulated; {} events, {} stale dropped, {} steps taken in batches, {} batches split",
            r.sim_ns, r.ctr.events, r.ctr.stale, r.batched_steps, r.batch_splits
        ),
        Err(e) => {
            sim::errln!("bench_row: {e}");
            std::process::exit(1);
        }
    }
}
