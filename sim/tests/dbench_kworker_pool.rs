//! `dbench-bound`'s kworkers are a concurrency-managed per-CPU pool, as
//! Linux's bound workqueue pools are (`kernel/workqueue.c`:
//! `wq_worker_sleeping` wakes an idle worker of the pool when its running
//! worker sleeps inside a work item and items wait; `keep_working` lets a
//! worker take the next item only while no other worker of the pool
//! runs): an item queued while the pool's worker sleeps in the device wait
//! of another is taken by an idle worker, not left behind the sleeper
//! (`sim/src/workloads.rs`, "dbench-like"; `docs/results/study.md`, the
//! dbench rows at 141 and 160 clients). `--no-wq-concurrency` keeps the
//! earlier model, one worker per CPU.

use sim::machine::Machine;
use sim::workloads::{DbenchCfg, KWORKERS_PER_CPU};
use sim::{run_one, Config, RunResult, WorkSpec};

const CLIENTS: usize = 4;

fn run(pool: bool) -> RunResult {
    let mut m = Machine::preset("flat:1").expect("preset");
    if !pool {
        m.mech.turn_off("--no-wq-concurrency").expect("flag");
    }
    let w = WorkSpec::Dbench(DbenchCfg {
        clients: CLIENTS,
        ops: 200,
        workers: 2,
        bound: true,
    });
    run_one(&m, &Config::parse("NO_NEXT_BUDDY"), &w, 1, 5_000_000_000, 0).expect("run")
}

/// The share of the run in which the one CPU was idle.
fn idle_share(r: &RunResult) -> f64 {
    let (busy, idle) = r.cpu_times[0];
    idle as f64 / (busy + idle) as f64
}

/// Workers (the tasks after the clients) that ran at least one item
/// (15 µs of CPU, jittered by 10%).
fn workers_that_worked(r: &RunResult) -> usize {
    r.runtimes[CLIENTS..]
        .iter()
        .filter(|&&ns| ns >= 13_500)
        .count()
}

/// Four clients on one CPU, 200 operations each: the CPU has work for
/// all but moments of the run when the pool serves an item while another
/// sleeps in its device wait (idle under 5% of the run), and more than
/// one of the CPU's workers served items. With one worker per CPU the
/// clients queue behind its device waits and the CPU idles through them
/// (over 15% of the run), and the run is longer by over a fifth.
#[test]
fn an_item_does_not_wait_behind_a_sleeping_worker() {
    let pool = run(true);
    let one = run(false);
    assert_eq!(pool.runtimes.len(), CLIENTS + KWORKERS_PER_CPU);
    assert_eq!(one.runtimes.len(), CLIENTS + 1);
    assert!(workers_that_worked(&pool) >= 2, "{:?}", pool.runtimes);
    assert_eq!(workers_that_worked(&one), 1, "{:?}", one.runtimes);
    assert!(idle_share(&pool) < 0.05, "pool idle {}", idle_share(&pool));
    assert!(
        idle_share(&one) > 0.15,
        "one worker idle {}",
        idle_share(&one)
    );
    assert!(
        one.sim_ns as f64 > 1.2 * pool.sim_ns as f64,
        "one worker {} ns, pool {} ns",
        one.sim_ns,
        pool.sim_ns
    );
}
