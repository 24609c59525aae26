//! pgbench read-write's row locks (`Mechanisms::row_lock`, `sim run
//! --no-row-lock`; `sim/src/workloads.rs`, "pgbench-like"): the lock's FIFO
//! order and handoff, the serialisation on the one branch row at scale 1,
//! determinism per seed, the model before under `--no-row-lock`, and the
//! switch's parsing.

use sim::cli::parse_run;
use sim::machine::Machine;
use sim::workloads::{PgbenchCfg, RowLocks};
use sim::{run_one, Config, RunResult, WorkSpec};

const MS: u64 = 1_000_000;

fn rw(clients: usize, warmup_ns: u64) -> WorkSpec {
    WorkSpec::Pgbench(PgbenchCfg {
        clients,
        rw: true,
        warmup_ns,
    })
}

fn graviton3(off: &[&str]) -> Machine {
    let mut m = Machine::preset("graviton3").expect("preset");
    for f in off {
        m.mech.turn_off(f).expect("flag");
    }
    m
}

/// (TPS, mean latency in ms): pgbench's two metrics, in its order.
fn tps_latency(r: &RunResult) -> (f64, f64) {
    match &r.metrics[..] {
        [t, l] if t.name == "tps" && l.name == "latency_ms" => (t.value, l.value),
        m => panic!("not pgbench's metrics: {m:?}"),
    }
}

fn run(m: &Machine, w: &WorkSpec, seed: u64, max_ns: u64) -> RunResult {
    run_one(m, &Config::parse("NO_NEXT_BUDDY"), w, seed, max_ns, 0).expect("run")
}

/// Waiters get a held lock in the order they queued, one at a time, each
/// owning it when it is handed over; a lock without waiters is freed; locks
/// are independent.
#[test]
fn row_locks_are_fifo_with_handoff() {
    let mut l = RowLocks::new(2, 5);
    assert_eq!(l.owner(0), None);
    assert!(l.acquire(0, 3));
    assert_eq!(l.owner(0), Some(3));
    for w in [1, 4, 0] {
        assert!(!l.acquire(0, w), "{w} queues behind 3");
    }
    // The other lock is free, whoever waits on the first.
    assert!(l.acquire(1, 2));
    assert!(!l.acquire(1, 3), "3 waits on lock 1 too (holding lock 0)");
    assert_eq!(l.release(0, 3), Some(1));
    assert_eq!(l.owner(0), Some(1), "handed to the head, not freed");
    // A newcomer queues behind the waiters still there.
    assert!(!l.acquire(0, 2));
    assert_eq!(l.release(0, 1), Some(4));
    assert_eq!(l.release(0, 4), Some(0));
    assert_eq!(l.release(0, 0), Some(2));
    assert_eq!(l.release(0, 2), None);
    assert_eq!(l.owner(0), None);
    assert!(l.acquire(0, 4), "a freed lock is taken at once");
    assert_eq!(l.release(1, 2), Some(3));
    assert_eq!(l.release(1, 3), None);
}

#[test]
#[should_panic(expected = "released by a non-owner")]
fn a_row_lock_released_by_another_panics() {
    let mut l = RowLocks::new(1, 2);
    assert!(l.acquire(0, 0));
    assert!(!l.acquire(0, 1));
    l.release(0, 1);
}

/// At scale 1 every transaction holds the one branch row's lock from its
/// branches UPDATE through its commit's 900 µs (±10%) WAL flush, so with
/// 64 clients on 64 CPUs the rate is at most one transaction per 810 µs
/// (1235 TPS), and the lock is busy nearly all the time (over 900 TPS).
/// Without the lock the same clients run tens of thousands a second.
#[test]
fn the_branch_lock_serialises_read_write() {
    let w = rw(64, 50 * MS);
    let locked = run(&graviton3(&[]), &w, 1, 300 * MS);
    let (tps, lat) = tps_latency(&locked);
    assert!((900.0..=1235.0).contains(&tps), "with the lock: {tps} TPS");
    // 64 transactions queue on the lock: each waits for ~63 others.
    assert!(lat > 40.0, "with the lock: {lat} ms");
    let free = run(&graviton3(&["--no-row-lock"]), &w, 1, 300 * MS);
    let (tps_free, lat_free) = tps_latency(&free);
    assert!(tps_free > 20_000.0, "without the lock: {tps_free} TPS");
    assert!(lat_free < 1.2, "without the lock: {lat_free} ms");
}

/// One client meets no lock held by another: its transaction is its seven
/// round trips, 60 µs of work and the 900 µs flush, ~1 ms.
#[test]
fn one_client_is_not_slowed_by_the_lock() {
    let r = run(&graviton3(&[]), &rw(1, 0), 1, 200 * MS);
    let (_, lat) = tps_latency(&r);
    assert!((0.95..1.15).contains(&lat), "{lat} ms");
}

fn digest(r: &RunResult) -> String {
    format!("{:?} {:?} {} {:?}", r.metrics, r.ctr, r.sim_ns, r.runtimes)
}

/// The same seed gives the same run (machine noise on, as in the study);
/// another seed gives another.
#[test]
fn read_write_is_deterministic_per_seed() {
    let mut m = graviton3(&[]);
    m.mech.set_machine_noise(true);
    let w = rw(250, 10 * MS);
    let a = run(&m, &w, 3, 60 * MS);
    let b = run(&m, &w, 3, 60 * MS);
    assert_eq!(digest(&a), digest(&b));
    let c = run(&m, &w, 4, 60 * MS);
    assert_ne!(digest(&a), digest(&c));
}

/// `--no-row-lock` is the model before: `sim run --machine graviton3 --ms
/// 20 pgbench clients=250 rw=1` printed these figures at ae9e2ae, before
/// the row locks (tps 240100.0000, latency_ms 1.0066, events 44800,
/// switches 29502, wakeups 14534); with the locks they move.
#[test]
fn no_row_lock_is_the_model_before() {
    let w = rw(250, 0);
    let r = run(&graviton3(&["--no-row-lock"]), &w, 1, 20 * MS);
    let (tps, lat) = tps_latency(&r);
    assert_eq!(tps, 240_100.0);
    assert_eq!(format!("{lat:.4}"), "1.0066");
    assert_eq!(
        (r.ctr.events, r.ctr.switches, r.ctr.wakeups),
        (44_800, 29_502, 14_534)
    );
    let locked = run(&graviton3(&[]), &w, 1, 20 * MS);
    assert!(tps_latency(&locked).0 < 5_000.0);
}

/// The switch parses, turns only the row locks off, and a misspelt one is
/// refused with the accepted flags.
#[test]
fn the_switch_parses_and_a_bad_one_is_refused() {
    let args = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let on = parse_run(&args("--machine graviton3 pgbench rw=1")).expect("valid");
    assert!(on.machine.mech.row_lock);
    let off = parse_run(&args("--machine graviton3 --no-row-lock pgbench rw=1")).expect("valid");
    assert!(!off.machine.mech.row_lock);
    let mut only = on.machine.mech;
    only.row_lock = false;
    assert_eq!(
        off.machine.mech, only,
        "--no-row-lock turns only row_lock off"
    );
    for bad in ["--no-row-locks", "--no-rowlock", "--no-row-lock=1"] {
        let e = parse_run(&args(&format!("{bad} pgbench rw=1"))).unwrap_err();
        assert!(
            e.contains(&format!("unknown mechanism flag '{bad}'")) && e.contains("--no-row-lock"),
            "{bad}: {e}"
        );
    }
    let e = parse_run(&args("--no-row-lock --no-row-lock pgbench rw=1")).unwrap_err();
    assert!(e.contains("--no-row-lock given twice"), "{e}");
}
