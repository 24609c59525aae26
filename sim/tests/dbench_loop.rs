//! The dbench model's clients replay their loadfile until the run ends, as
//! dbench does until its time limit, and its throughput counts every
//! client's operations over the time while all of them ran: no drain in
//! which the clients that are done have left the machine to the others
//! (`sim/src/workloads.rs`, "dbench-like"; `docs/results/study.md`, the
//! dbench rows at 141 and 160 clients).

use sim::machine::Machine;
use sim::workloads::DbenchCfg;
use sim::{run_one, Config, RunResult, WorkSpec};

/// dbench's unit: 64 KiB per operation, throughput in MB/s.
const MB_PER_OP: f64 = 64.0 / 1024.0;

fn run(preset: &str, config: &str, clients: usize, ops: usize, max_ns: u64) -> RunResult {
    let m = Machine::preset(preset).expect("preset");
    let w = WorkSpec::Dbench(DbenchCfg {
        clients,
        ops,
        workers: 2,
        bound: true,
    });
    run_one(&m, &Config::parse(config), &w, 1, max_ns, 0).expect("run")
}

fn metric(r: &RunResult, name: &str) -> f64 {
    r.metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no metric {name}"))
        .value
}

/// The operations the throughput counts: throughput × the run's time.
fn ops_counted(r: &RunResult) -> f64 {
    metric(r, "throughput_mbs") * (r.sim_ns as f64 / 1e9) / MB_PER_OP
}

/// Six clients on four CPUs, 50 operations a loadfile: no client exits,
/// the run ends when the last one finishes its first loadfile (the
/// all-clients time), and by then the clients that finished earlier have
/// started their next one, so the throughput counts more operations than
/// six loadfiles. The count is a whole number: operations completed, over
/// the run's time. Under each configuration the study compares.
#[test]
fn clients_replay_their_loadfile_until_the_last_finishes_its_first() {
    for config in ["NO_NEXT_BUDDY", "NEXT_BUDDY+NEXT_BUDDY_INELIGIBLE_RESCHED"] {
        let r = run("flat:4", config, 6, 50, 5_000_000_000);
        assert_eq!(r.exited, 0, "{config}: a client exited");
        let all_ms = metric(&r, "all_clients_ms");
        assert_eq!(all_ms, r.sim_ns as f64 / 1e6, "{config}");
        let loadfile_ms = metric(&r, "loadfile_ms");
        assert!(
            loadfile_ms > 0.0 && loadfile_ms < all_ms,
            "{config}: mean loadfile {loadfile_ms} ms, last {all_ms} ms"
        );
        let ops = ops_counted(&r);
        assert!(
            (ops - ops.round()).abs() < 1e-6,
            "{config}: {ops} operations"
        );
        assert!(ops.round() > 300.0, "{config}: {ops} operations");
    }
}

/// A run cut by its time limit before every client has finished a
/// loadfile ends at the limit: the all-clients time is the limit and the
/// throughput counts what the clients completed by then.
#[test]
fn a_run_cut_by_its_limit_ends_there() {
    let r = run("flat:4", "NO_NEXT_BUDDY", 6, 50, 1_000_000);
    assert_eq!(r.sim_ns, 1_000_000);
    assert_eq!(metric(&r, "all_clients_ms"), 1.0);
    let ops = ops_counted(&r);
    assert!((ops - ops.round()).abs() < 1e-6, "{ops} operations");
    assert!(
        ops.round() >= 1.0 && ops.round() < 300.0,
        "{ops} operations"
    );
}
