//! The switchable mechanisms of the `qemu:N` machine (`sim run --no-...`):
//! each one does what it says, is off when switched off, and keeps a run
//! deterministic and its CPU time conserved.

use sim::machine::Machine;
use sim::workloads::HackbenchCfg;
use sim::{run_one, Config, RunResult, WorkSpec};

fn hb(sockets: bool) -> WorkSpec {
    WorkSpec::Hackbench(HackbenchCfg {
        groups: 2,
        loops: 20,
        sockets,
        threads: false,
    })
}

fn qemu(n: usize, off: &[&str]) -> Machine {
    let mut m = Machine::preset(&format!("qemu:{n}")).expect("preset");
    for f in off {
        m.mech.turn_off(f).expect("flag");
    }
    m
}

fn run(m: &Machine, w: &WorkSpec, seed: u64) -> RunResult {
    run_one(
        m,
        &Config::parse("NO_NEXT_BUDDY"),
        w,
        seed,
        60_000_000_000,
        0,
    )
    .expect("run")
}

fn time_s(r: &RunResult) -> f64 {
    r.metrics.iter().find(|m| m.name == "time_s").unwrap().value
}

fn fingerprint(r: &RunResult) -> String {
    format!("{:?} {:?} {} {:?}", r.metrics, r.ctr, r.sim_ns, r.runtimes)
}

#[test]
fn deterministic_and_conserved_with_every_mechanism() {
    for sockets in [false, true] {
        let m = qemu(4, &[]);
        let (a, b) = (run(&m, &hb(sockets), 5), run(&m, &hb(sockets), 5));
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&run(&m, &hb(sockets), 6)));
        assert_eq!(a.exited, 80, "every task finished");
        for &(busy, idle) in &a.cpu_times {
            assert_eq!(busy + idle, a.sim_ns);
        }
        let busy: u64 = a.cpu_times.iter().map(|c| c.0).sum();
        assert_eq!(busy, a.runtimes.iter().sum::<u64>());
    }
}

/// The waker pays `wake_ns` for each wakeup it enqueues and `ipi_send_ns`
/// per IPI (each ±10% jitter), and nothing with `--no-wake-cost`.
#[test]
fn wakeup_costs_are_charged_to_the_waker() {
    let m = qemu(4, &[]);
    let r = run(&m, &hb(false), 1);
    let c = &m.costs;
    let direct = r.ctr.wakeups - r.ctr.queued_wakeups;
    let lo = 0.9 * (direct * c.wake_ns + r.ctr.queued_wakeups * c.ipi_send_ns) as f64;
    let hi = 1.1 * (direct * c.wake_ns + r.ctr.ipis * c.ipi_send_ns) as f64;
    let got = r.ctr.wake_cost_ns as f64;
    assert!(
        r.ctr.wakeups > 100 && got >= lo && got <= hi,
        "{got} ns for {} wakeups ({} queued, {} IPIs): expected {lo}..{hi}",
        r.ctr.wakeups,
        r.ctr.queued_wakeups,
        r.ctr.ipis
    );
    let off = run(&qemu(4, &["--no-wake-cost"]), &hb(false), 1);
    assert_eq!(off.ctr.wake_cost_ns, 0);
    assert!(time_s(&off) < time_s(&r), "the waker's costs take time");
}

/// Four busy vCPUs share one instruction rate: hackbench on 4 vCPUs takes
/// longer than on 4 CPUs of their own, by at most 4x (plus 0.1%: work done
/// is rounded down to whole ns at each charge); on one vCPU sharing changes
/// nothing.
#[test]
fn vcpus_share_the_instruction_rate() {
    let shared = time_s(&run(&qemu(4, &[]), &hb(true), 2));
    let own = time_s(&run(&qemu(4, &["--no-vcpu-share"]), &hb(true), 2));
    let ratio = shared / own;
    assert!(
        (1.5..=4.004).contains(&ratio),
        "shared {shared} s, own {own} s: ratio {ratio}"
    );
    let a = run(&qemu(1, &[]), &hb(true), 2);
    let b = run(&qemu(1, &["--no-vcpu-share"]), &hb(true), 2);
    assert_eq!(fingerprint(&a), fingerprint(&b));
}

/// The idle scan is charged per CPU visited; `qemu:N` measured no cost for
/// it, so a machine with a per-CPU cost is built here.
#[test]
fn idle_scan_is_charged_by_cpus_visited() {
    let mut m = qemu(4, &["--no-wake-cost"]);
    m.costs.scan_cpu_ns = 1_000;
    let r = run(&m, &hb(false), 3);
    assert!(r.ctr.scanned_cpus > 100, "{}", r.ctr.scanned_cpus);
    let (lo, hi) = (0.9 * 1000.0, 1.1 * 1000.0);
    let per = r.ctr.wake_cost_ns as f64 / r.ctr.scanned_cpus as f64;
    assert!((lo..=hi).contains(&per), "{per} ns per CPU visited");
    m.mech.turn_off("--no-scan-cost").unwrap();
    assert_eq!(run(&m, &hb(false), 3).ctr.wake_cost_ns, 0);
}

fn metric(r: &RunResult, name: &str) -> Option<f64> {
    r.metrics.iter().find(|m| m.name == name).map(|m| m.value)
}

/// The pipe mutex: waiters spin while the owner runs and sleep while it is
/// off its CPU (a preempted owner keeps the mutex: a holder never blocks,
/// so every sleep on the mutex is behind a preempted owner); every task
/// still finishes. Off with `--no-contention`, and never on sockets.
#[test]
fn pipe_mutex_contention() {
    let r = run(&qemu(4, &[]), &hb(false), 4);
    let spins = metric(&r, "lock_spins").expect("lock counters");
    let sleeps = metric(&r, "lock_sleeps").expect("lock counters");
    assert!(spins > 0.0 && sleeps > 0.0, "spins {spins} sleeps {sleeps}");
    assert_eq!(r.exited, 80);
    let off = run(&qemu(4, &["--no-contention"]), &hb(false), 4);
    assert!(metric(&off, "lock_spins").is_none());
    assert!(
        time_s(&off) < time_s(&r),
        "contention takes time: {} against {}",
        time_s(&off),
        time_s(&r)
    );
    assert!(metric(&run(&qemu(4, &[]), &hb(true), 4), "lock_spins").is_none());
}
