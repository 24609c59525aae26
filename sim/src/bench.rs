//! Speed figures (reported, not asserted): scheduling events per second on one
//! core, wall time of one simulated second of 64-CPU hackbench with 16 groups,
//! and the memory of a 256-CPU machine with 10 000 tasks.

use std::time::Instant;

use crate::machine::Machine;
use crate::workloads::{HackbenchCfg, MixTask};
use crate::{outln, run_one, Config, RunResult, WorkSpec};

/// CPU time of this thread so far, s (`/proc/thread-self/schedstat`: the
/// scheduler's own runtime account), so that a figure taken on a shared host
/// can be told apart from the waiting for a CPU that wall time includes.
fn cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

fn rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

/// The run of one of the bench's hackbench rows (64-CPU graviton3, 16
/// groups, NO_NEXT_BUDDY, seed 1; unix sockets or pipes, machine noise
/// or not) for `ns` simulated: the bench runs one second of each; a
/// shorter run of the same row is what a profiler can take
/// (`sim/examples/bench_row.rs`).
pub fn hackbench_row(sockets: bool, noise: bool, ns: u64) -> Result<RunResult, String> {
    let base = Config::parse("nb-off:NO_NEXT_BUDDY");
    let mut g3 = Machine::preset("graviton3").ok_or_else(|| "no graviton3 preset".to_string())?;
    g3.mech.set_machine_noise(noise);
    let w = WorkSpec::Hackbench(HackbenchCfg {
        groups: 16,
        loops: 20_000,
        sockets,
        threads: false,
        flips: 0,
    });
    run_one(&g3, &base, &w, 1, ns, 0)
}

/// Prints the bench rows.
pub fn print_bench() {
    let base = Config::parse("nb-off:NO_NEXT_BUDDY");
    // 1. Events per second: 64-CPU hackbench, 16 groups, one thread.
    // 2. One simulated second of it (loops large enough to last > 1 s);
    //    pipes again with machine noise (as the study runs it).
    for (sockets, noise) in [(false, false), (true, false), (false, true)] {
        let (t0, c0) = (Instant::now(), cpu_s());
        let r = hackbench_row(sockets, noise, 1_000_000_000).expect("run");
        let wall = t0.elapsed().as_secs_f64();
        let cpu = match (c0, cpu_s()) {
            (Some(a), Some(b)) => format!(" ({:.2} s on the CPU)", b - a),
            _ => String::new(),
        };
        outln!(
            "sim bench: hackbench 16 groups {}{} on graviton3 (64 CPUs): {:.3} s simulated in {:.2} s wall{cpu}; {} events ({} stale dropped; {:.1}% taken in batches, {} batches split), {:.2} M events/s on one core (targets: >= 5 M events/s, 1 simulated s in <= 2 s)",
            if sockets { "sockets" } else { "pipes" },
            if noise { " (machine noise)" } else { "" },
            r.sim_ns as f64 / 1e9,
            wall,
            r.ctr.events,
            r.ctr.stale,
            100.0 * r.batched_steps as f64 / r.ctr.events.max(1) as f64,
            r.batch_splits,
            r.ctr.events as f64 / wall / 1e6
        );
    }
    // 3. 256 CPUs x 10 000 tasks (sleepers), memory high-water mark.
    let before = rss_kib().unwrap_or(0);
    let m = Machine::preset("flat:256").expect("preset");
    let tasks = vec![
        MixTask::Sleeper {
            run_us: 100,
            sleep_us: 2_000,
            nice: 0
        };
        10_000
    ];
    let t0 = Instant::now();
    let r = run_one(&m, &base, &WorkSpec::Mix(tasks), 1, 20_000_000, 0).expect("run");
    let wall = t0.elapsed().as_secs_f64();
    let after = rss_kib().unwrap_or(0);
    outln!(
        "sim bench: 256 CPUs x 10000 tasks: {:.0} ms simulated in {:.2} s wall ({:.2} M events/s); peak RSS {} MiB (before the run {} MiB; target <= 1024 MiB)",
        r.sim_ns as f64 / 1e6,
        wall,
        r.ctr.events as f64 / wall / 1e6,
        after / 1024,
        before / 1024
    );
}
