//! QEMU 7.2's round-robin turn order (`sim run --qemu-rr-turns`, an
//! option; `sim/src/engine.rs`, "vCPU turns"): the zero budget after a
//! turn a timer deadline ended, the kick of the running vCPU when it arms
//! the earliest timer, the exit requests that kick leaves, the periodic
//! kick timer. Checked on busy vCPUs whose only timers are their ticks
//! (aligned, every 4 ms), where the rules fix who runs each period.

mod common;

use common::{parse, parse_error, run};

/// Two hogs on `qemu:2` for 1 s. A period ends at the ticks' deadline in
/// some vCPU's turn. If CPU 0's, CPU 1 is next in the loop with no exit
/// request: a zero budget, and the loop wraps to CPU 0 (the wrap runs the
/// timers, so a whole budget); if CPU 1's, the loop wraps to CPU 0. Either
/// way CPU 0 handles its late tick first and arms its next one, now the
/// earliest timer: a kick, every vCPU gets an exit request, and CPU 1
/// (its request cleared as the loop stops there) runs to the next
/// deadline, arming its own tick at the same instant as CPU 0's (no kick:
/// an equal expiry queues behind). So CPU 1 holds nearly every period and
/// CPU 0 only what the kick timer's expiries (every 100 ms) shift to it;
/// in the even order each holds half.
#[test]
fn two_busy_vcpus_the_second_holds_the_periods() {
    let rr = run("--machine qemu:2 --ms 1000 --qemu-rr-turns mix hog hog");
    let t = &rr.turns;
    assert_eq!(t.turn_ns_by_cpu.len(), 2, "{t:?}");
    let (c0, c1) = (t.turn_ns_by_cpu[0], t.turn_ns_by_cpu[1]);
    assert!(c1 >= 800_000_000 && c0 <= 150_000_000, "{t:?}");
    // About one kick a period (250 in 1 s), a kick timer expiry every
    // 100 ms of virtual time while a vCPU runs.
    assert!((200..=260).contains(&t.kicks), "{t:?}");
    assert!(t.zero_budgets > 0, "{t:?}");
    assert_eq!(t.kick_timer, 10, "{t:?}");
    // The even order (the default): no QEMU-order counters, even turns.
    let even = run("--machine qemu:2 --ms 1000 mix hog hog");
    let t = &even.turns;
    assert_eq!((t.kicks, t.zero_budgets, t.kick_timer), (0, 0, 0), "{t:?}");
    assert!(t.turn_ns_by_cpu.is_empty(), "{t:?}");
    assert!(even.ctr.vcpu_turns >= 240, "{}", even.ctr.vcpu_turns);
}

/// Every turn that ended is counted once by why it ended, with its
/// length: two hogs end theirs at deadlines only (the ticks and, in
/// QEMU's order, the kick timer) or, in QEMU's order, at the kicks of
/// their tick writes; an idle vCPU's turns end at its halt; the lengths
/// add up to the time the turns were held.
#[test]
fn turns_ended_by_why() {
    let even = run("--machine qemu:2 --ms 1000 mix hog hog");
    let t = &even.turns;
    let [deadline, kick, pause, halt] = t.ends;
    assert!(deadline >= 240 && kick == 0 && pause == 0, "{t:?}");
    // Those that ended: every turn begun, but the one still held at the end.
    assert!(
        t.ends.iter().sum::<u64>() + 1 >= even.ctr.vcpu_turns,
        "{t:?}"
    );
    assert!(halt <= 2, "{t:?}");
    for w in 0..4 {
        assert_eq!(t.end_bins[w].iter().sum::<u64>(), t.ends[w], "{t:?}");
    }
    // Two hogs hold the turn all the time: their turns' lengths are the run's.
    let held: u64 = t.end_ns.iter().sum();
    assert!(
        (990_000_000..=1_000_000_000).contains(&held),
        "{held} {t:?}"
    );
    // In QEMU's order each tick write kicks: about one kick-ended turn a
    // period (the kicks' count, less those a deadline met first).
    let rr = run("--machine qemu:2 --ms 1000 --qemu-rr-turns mix hog hog");
    let t = &rr.turns;
    assert!(t.ends[1] >= 200 && t.ends[1] <= t.kicks, "{t:?}");
    // A hog and a sleeper: the sleeper's vCPU halts after each of its runs.
    let idle = run("--machine qemu:2 --ms 1000 mix hog sleeper:100:2000");
    let t = &idle.turns;
    assert!(t.ends[3] >= 300, "{t:?}");
}

/// Four hogs on `qemu:4`: the vCPU after a kicker runs the period, and
/// the exit requests the kick left spare the next vCPUs their zero
/// budgets, so the periods go to CPUs 1 and 3 and CPUs 0 and 2 mostly
/// handle their ticks and kick (in the even order each holds a quarter).
#[test]
fn four_busy_vcpus_odd_ones_hold_the_periods() {
    let rr = run("--machine qemu:4 --ms 1000 --qemu-rr-turns mix hog hog hog hog");
    let by = &rr.turns.turn_ns_by_cpu;
    assert_eq!(by.len(), 4, "{:?}", rr.turns);
    for odd in [1, 3] {
        for even in [0, 2] {
            assert!(by[odd] > 2 * by[even], "{:?}", rr.turns);
        }
    }
    assert!(by.iter().sum::<u64>() >= 990_000_000, "{:?}", rr.turns);
}

/// The option needs vCPU turns, and is given once.
#[test]
fn qemu_rr_turns_flag_errors() {
    assert!(parse_error("--machine small --qemu-rr-turns mix hog").contains("no vCPU turns"));
    assert!(
        parse_error("--machine qemu:4 --no-vcpu-turns --qemu-rr-turns mix hog")
            .contains("no vCPU turns")
    );
    assert!(
        parse_error("--machine qemu:4 --qemu-rr-turns --qemu-rr-turns mix hog")
            .contains("given twice")
    );
    let ok = parse("--machine qemu:4 --qemu-rr-turns mix hog").expect("valid");
    assert!(ok.machine.mech.qemu_rr_turns);
}

// The busy vCPUs' stretches out of their turn (`TurnCounters::away_bins`,
// printed by `sim run` on `qemu:N`, in either turn order): what a busy
// loop on the guest clock sees as jumps, the figure the kernel's
// hackbench can count in its `-C` charges.

/// k hogs on `qemu:4` for 1 s: each turn is one tick period (4 ms, the
/// ticks' deadline), so each hog is away (k − 1) periods at a time, in
/// the last bin, and k busy vCPUs are away k − 1 seconds in all (less
/// the stretches under way at the end). One hog takes no turns
/// away: the other vCPUs are idle and pass theirs at once.
#[test]
fn busy_vcpus_are_away_while_the_others_hold_the_turn() {
    for (k, hogs) in [(4u64, "hog hog hog hog"), (2, "hog hog"), (1, "hog")] {
        let r = run(&format!("--machine qemu:4 --ms 1000 mix {hogs}"));
        let t = &r.turns;
        let [a, b, c, d] = t.away_bins;
        assert_eq!((a, b, c), (0, 0, 0), "k={k}: {t:?}");
        let want_ns = (k - 1) * 1_000_000_000;
        // Each hog's last stretch, still under way at the end, is not
        // counted: up to k − 1 periods each.
        let slack_ns = k * (k - 1) * 4_000_000;
        assert!(
            t.away_ns + slack_ns >= want_ns && t.away_ns <= want_ns,
            "k={k}: {} ns away, want about {want_ns}",
            t.away_ns
        );
        // Each hog is away once in each cycle of k periods: 250 / k
        // stretches a hog, 250 in all (less those under way at the end).
        if k > 1 {
            assert!(d <= 250 && d + k >= 250, "k={k}: {d} stretches");
        } else {
            assert_eq!(d, 0, "{t:?}");
        }
        // One hog a CPU: nothing waits to switch it out.
        assert_eq!(t.away_switched, 0, "k={k}: {t:?}");
    }
    // Two hogs a CPU: the one that lost the turn is past its slice when it
    // comes back, and the late HRTICK (or tick) switches it out then.
    let two = run("--machine qemu:4 --ms 1000 mix hog hog hog hog hog hog hog hog");
    assert!(two.turns.away_switched >= 100, "{:?}", two.turns);
}

/// Without vCPU turns nothing is counted (the vCPUs share the host evenly
/// and continuously: no stretch out of a turn).
#[test]
fn no_stretches_without_turns() {
    let r = run("--machine qemu:4 --ms 1000 --no-vcpu-turns mix hog hog hog hog");
    assert_eq!(r.turns.away_bins, [0; 4]);
    assert_eq!(r.turns.away_ns, 0);
}
