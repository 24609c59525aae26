//! `sim run --timer-slack` (`Mechanisms::timer_slack`, an option): a normal
//! task's `nanosleep` is a timer range of Linux's default 50 µs of slack:
//! it ends at the range's end on a CPU that takes no other timer interrupt
//! inside it, else with that interrupt; device waits, RT threads' sleeps
//! and sleeps of 0 have none.

mod common;
use common::{args, metric, parse_error, run, run_args};

#[test]
fn the_flag_is_parsed_once_and_off_by_default() {
    let base = "--machine qemu:4 --ms 100 schbench m=1 t=1";
    assert!(!args(base).machine.mech.timer_slack);
    assert!(
        args(&format!("--timer-slack {base}"))
            .machine
            .mech
            .timer_slack
    );
    let e = parse_error(&format!("--timer-slack --timer-slack {base}"));
    assert!(e.contains("--timer-slack given twice"), "{e}");
    assert!(parse_error("--timer-slacks schbench").contains("--timer-slack"));
}

#[test]
fn a_schbench_workers_sleep_ends_fifty_us_late() {
    // One worker, no contention: each round has one sleep, 50 us longer.
    for machine in ["flat:1", "qemu:4"] {
        let line = format!(
            "--machine {machine} --ms 1000 --seed 1 schbench m=1 t=1 sleep_us=100 work_us=1"
        );
        let (off, on) = (run(&line), run(&format!("--timer-slack {line}")));
        let round_us = |r: &sim::RunResult| 1e6 / metric(r, "rps");
        let d = round_us(&on) - round_us(&off);
        assert!((d - 50.0).abs() < 1.0, "{machine}: a round {d} us longer");
        // Its CPU idles through the sleep: no interrupt ends it earlier.
        assert_eq!(on.ranges_early, 0, "{machine}");
    }
}

#[test]
fn another_timer_interrupt_inside_the_range_ends_the_sleep() {
    // A 300 us / 1 ms sleeper beside two hogs on one CPU: the tick and the
    // HRTICK keep firing while it sleeps, and those inside a sleep's range
    // end it there. Without the slack no sleep is ranged.
    let line = "--machine flat:1 --ms 2000 --seed 1 mix sleeper:300:1000 hog hog";
    let (off, on) = (run(line), run(&format!("--timer-slack {line}")));
    assert_eq!(off.ranges_early, 0);
    assert!(on.ranges_early > 0, "no sleep ended inside its range");
    // Not every one: most ranges hold no other interrupt.
    assert!(
        on.ranges_early * 4 < on.ctr.wakeups,
        "{} of {} wakeups",
        on.ranges_early,
        on.ctr.wakeups
    );
}

#[test]
fn a_sleep_of_zero_and_an_rt_threads_sleep_take_no_slack() {
    for work in [
        "schbench m=1 t=2 sleep_us=0 work_us=50",
        "mix cyclic:500 hog",
    ] {
        let line = format!("--machine qemu:4 --ms 200 --seed 2 {work}");
        let (off, on) = (run(&line), run(&format!("--timer-slack {line}")));
        for (a, b) in off.metrics.iter().zip(&on.metrics) {
            assert_eq!(a.value.to_bits(), b.value.to_bits(), "{work}: {}", a.name);
        }
        assert_eq!(off.ctr.switches, on.ctr.switches, "{work}");
    }
}

#[test]
fn a_pgbench_commit_sleep_and_a_mix_sleeper_take_it() {
    // lcbench's pgbench, one client on one CPU: one commit sleep a
    // transaction, so the mean latency grows by the slack.
    let line = "--machine flat:1 --ms 600000 --seed 1 lcpgbench clients=1 tx=20";
    let (off, on) = (run(line), run(&format!("--timer-slack {line}")));
    let d_ms = metric(&on, "lat_avg_ms") - metric(&off, "lat_avg_ms");
    assert!(
        (d_ms - 0.050).abs() < 0.002,
        "a transaction {d_ms} ms longer"
    );
    // A sleeper of 1 ms run, 1 ms sleep alone on a CPU: 50 us more sleep a
    // period, so it runs about 1/2.05 of the time instead of 1/2.
    let mut a = args("--machine flat:1 --ms 2000 --seed 1 mix sleeper:1000:1000");
    let off = run_args(&a);
    a.machine.mech.timer_slack = true;
    let on = run_args(&a);
    let share = |r: &sim::RunResult| r.runtimes[0] as f64 / r.sim_ns as f64;
    let (s0, s1) = (share(&off), share(&on));
    assert!(
        (s0 - 0.5).abs() < 0.01 && (s1 - 1.0 / 2.05).abs() < 0.01,
        "{s0} {s1}"
    );
}
