//! lcbench's pgbench (`sim run ... lcpgbench`): the shape `make
//! linux-compare` runs in Linux and in our kernel, so that the simulator's
//! column has its rows (sim/src/workloads.rs, "lcbench's pgbench").

mod common;
use common::{metric, run, same_run_twice};

#[test]
fn every_thread_exits_once_its_transactions_are_done() {
    for machine in ["flat:1", "flat:4", "qemu:4"] {
        let r = run(&format!(
            "--machine {machine} --ms 600000 --seed 3 lcpgbench clients=3 tx=5"
        ));
        assert_eq!(r.exited, 6, "{machine}: every client and backend exits");
        // 15 transactions over the time the last client finished, which is
        // before the run's end (the backends' last messages follow).
        let done = metric(&r, "tps") * r.sim_ns as f64 / 1e9;
        assert!(
            done >= 15.0 - 1e-9,
            "{machine}: {done} transactions by the run's end"
        );
        assert!(
            done < 15.0 * 1.5,
            "{machine}: {done}: the clients' end is near the run's"
        );
        assert!(metric(&r, "lat_avg_ms") > 0.0, "{machine}");
    }
}

#[test]
fn a_read_write_transaction_is_seven_round_trips_and_a_commit_sleep() {
    // One CPU, one client: every transaction runs alone. Seven statements'
    // work (5 x 20 us, BEGIN's and END's 4 us) and END's 200 us sleep are a
    // floor; the one-statement transaction (rw=0) has 20 us of work and no
    // sleep, and its own seven-fold fewer round trips.
    let rw = run("--machine flat:1 --ms 600000 --seed 1 lcpgbench clients=1 tx=10 rw=1");
    let ro = run("--machine flat:1 --ms 600000 --seed 1 lcpgbench clients=1 tx=10 rw=0");
    let (lat_rw, lat_ro) = (metric(&rw, "lat_avg_ms"), metric(&ro, "lat_avg_ms"));
    assert!(
        lat_rw >= 0.308,
        "read-write latency {lat_rw} ms below its work and sleep"
    );
    assert!(
        lat_ro >= 0.020,
        "read-only latency {lat_ro} ms below its work"
    );
    assert!(
        lat_ro < lat_rw / 4.0,
        "one statement {lat_ro} ms against seven {lat_rw} ms"
    );
    // Each round trip wakes the backend for the request and the client for
    // the reply: at least two wakeups a statement on one CPU.
    assert!(
        rw.ctr.wakeups >= 2 * 70,
        "{} wakeups for 70 statements",
        rw.ctr.wakeups
    );
    assert!(
        ro.ctr.wakeups >= 2 * 10,
        "{} wakeups for 10 statements",
        ro.ctr.wakeups
    );
}

#[test]
fn a_consume_wakes_the_sender_asleep_in_its_read() {
    // Two consumes a statement (the request's and the reply's), each of
    // which wakes its sender if it sleeps in its own read (unix_write_space).
    for machine in ["flat:1", "qemu:4"] {
        let r = run(&format!(
            "--machine {machine} --ms 600000 --seed 2 lcpgbench clients=4 tx=20"
        ));
        let statements = 4.0 * 20.0 * 7.0;
        let space = metric(&r, "space_wakeups");
        assert!(
            space <= 2.0 * statements,
            "{machine}: {space} for {statements} statements"
        );
        assert!(
            space >= statements,
            "{machine}: {space} for {statements} statements"
        );
        // Those wakeups are real ones: the engine counts them too.
        assert!(
            r.ctr.wakeups as f64 >= space,
            "{machine}: {} wakeups",
            r.ctr.wakeups
        );
    }
}

#[test]
fn a_seed_gives_the_same_run() {
    same_run_twice("--machine qemu:4 --ms 600000 --seed 5 lcpgbench clients=4 tx=20");
}

#[test]
fn without_the_consumes_wakeup_none_is_counted_and_tasks_wake_and_switch_less() {
    let line = "--machine qemu:4 --ms 600000 --seed 2 lcpgbench clients=4 tx=20";
    let (on, off) = (run(line), run(&format!("{line} space_wake=0")));
    assert_eq!(metric(&off, "space_wakeups"), 0.0);
    assert!(metric(&on, "space_wakeups") > 0.0);
    // A consume's wakeup often comes first and the reply's then finds its
    // reader awake: fewer wakeups in all without it, not one fewer each.
    assert!(
        off.ctr.wakeups < on.ctr.wakeups && off.ctr.switches < on.ctr.switches,
        "without: {} wakeups, {} switches; with: {}, {}",
        off.ctr.wakeups,
        off.ctr.switches,
        on.ctr.wakeups,
        on.ctr.switches
    );
    assert_eq!(off.exited, on.exited);
}
