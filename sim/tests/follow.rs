//! `sim::follow`, where wakeups' preemption requests lead, counts every
//! request the wakeup decisions made: on hackbench pipes at 4 groups, 400
//! loops, on `graviton3`, the ineligible-waker rule's requests are the
//! decisions of its row, PICK's those of `picked`, every request but at
//! most one a CPU ends at its CPU's next switch, and the rule (whose requests need not be for the wakee's turn)
//! runs another task first more often than PICK does.

use sim::engine::{row_name, NR_ROWS};
use sim::follow::{KIND_PICK, KIND_RULE, NEXTS};
use sim::machine::Machine;
use sim::workloads::HackbenchCfg;
use sim::{run_one, run_one_followed, Config, RunResult, WorkSpec};

/// hackbench process pipes, 4 groups, 400 loops, on `graviton3` (no
/// machine noise), seed 1, under `config`.
fn run(config: &str) -> RunResult {
    let (m, w) = point();
    run_one_followed(&m, &Config::parse(config), &w, 1, 1_000_000_000, 0).expect("runs")
}

/// The machine and workload of [`run`].
fn point() -> (Machine, WorkSpec) {
    let m = Machine::preset("graviton3").expect("preset");
    let w = WorkSpec::Hackbench(HackbenchCfg {
        groups: 4,
        loops: 400,
        sockets: false,
        threads: false,
        flips: 0,
    });
    (m, w)
}

fn row(r: &RunResult, name: &str) -> u64 {
    let i = (0..NR_ROWS).find(|&i| row_name(i) == name).expect("row");
    r.ctr.rows[i]
}

#[test]
fn requests_are_the_decisions_and_end_at_a_switch() {
    let off = run("NO_NEXT_BUDDY");
    let rule = run("NO_NEXT_BUDDY+NEXT_BUDDY_INELIGIBLE_RESCHED");
    let p = &off.follow.kinds[KIND_PICK];
    let k = &rule.follow.kinds[KIND_RULE];
    assert_eq!(p.requests, row(&off, "picked"));
    assert_eq!(k.requests, row(&rule, "ineligible_waker"));
    assert!(k.requests > 300, "{}", k.requests);
    assert_eq!(off.follow.kinds[KIND_RULE].requests, 0);
    for (c, r) in [(p, &off), (k, &rule)] {
        let ended: u64 = c.next.iter().sum();
        // A request made while an earlier one on its CPU waits for the
        // switch is not followed (the first is): at most one a CPU.
        assert!(ended <= c.requests && ended + 64 >= c.requests);
        assert!((0..NEXTS).all(|j| c.next_remote[j] <= c.next[j]));
        assert!(c.protected <= c.requests && c.remote <= c.requests);
        // Every preemption's wait is counted once, in all and by kind.
        assert!(c.preempted_waits.n <= r.follow.all_preempted.n);
        assert_eq!(c.wakee_waits.n, c.requests);
    }
    assert_eq!(off.follow.all_preempted.n, off.ctr.preemptions);
    // Another task first: PICK only when the pick changed before the
    // switch, the rule whenever the wakee was not the pick.
    let share = |c: &sim::follow::KindCounters| c.next[2] as f64 / c.requests as f64;
    assert!(share(k) > 2.0 * share(p), "{} {}", share(k), share(p));
}

/// Following changes no decision, and a run that did not ask for it
/// counts nothing.
#[test]
fn following_is_off_unless_asked_and_changes_nothing() {
    let (m, w) = point();
    let c = Config::parse("NO_NEXT_BUDDY+NEXT_BUDDY_INELIGIBLE_RESCHED");
    let plain = run_one(&m, &c, &w, 1, 1_000_000_000, 0).expect("runs");
    let followed = run("NO_NEXT_BUDDY+NEXT_BUDDY_INELIGIBLE_RESCHED");
    assert!(plain.follow.kinds.iter().all(|k| k.requests == 0));
    assert_eq!(plain.follow.all_preempted.n, 0);
    assert!(followed.follow.kinds[KIND_RULE].requests > 0);
    assert_eq!(format!("{:?}", plain.ctr), format!("{:?}", followed.ctr));
    assert_eq!(plain.sim_ns, followed.sim_ns);
    assert_eq!(plain.runtimes, followed.runtimes);
}
