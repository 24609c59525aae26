//! hackbench's `flips=N`: every worker starts with its main process's
//! `wakee_flips`, as a Linux fork copies them, and `wake_wide()` reads them.

use sim::machine::Machine;
use sim::workloads::HackbenchCfg;
use sim::{run_one, Config, RunResult, WorkSpec};

fn hb(flips: u32) -> HackbenchCfg {
    HackbenchCfg {
        groups: 2,
        loops: 20,
        sockets: true,
        threads: false,
        flips,
    }
}

fn run(flips: u32, seed: u64) -> RunResult {
    let m = Machine::preset("qemu:4").expect("preset");
    run_one(
        &m,
        &Config::parse("NO_NEXT_BUDDY"),
        &WorkSpec::Hackbench(hb(flips)),
        seed,
        60_000_000_000,
        0,
    )
    .expect("run")
}

/// With 0 flips `wake_wide()` almost never holds in a 2-group run (a
/// sender wakes its group's 20 receivers, but starts from nothing and its
/// flips halve once a second), so `wake_affine()` pulls a woken receiver
/// to its waker's CPU, a migration whenever it ran elsewhere; with its
/// parent's 6 it holds from the first wakeups, the wakee is placed from its
/// previous CPU and mostly stays there (Linux and the kernel's `hackbench
/// -W 6`: migrations fall 7 185 -> 344 a run, docs/results/linux/smt.md).
#[test]
fn inherited_flips_keep_the_wakees_where_they_ran() {
    for seed in 1..=3 {
        let (none, six) = (run(0, seed), run(6, seed));
        assert_eq!(none.exited, six.exited, "seed {seed}: every task ends");
        let (a, b) = (none.ctr.wake_migrations, six.ctr.wake_migrations);
        let (wa, wb) = (none.ctr.wakeups, six.ctr.wakeups);
        assert!(wa > 1000 && wb > 1000, "seed {seed}: wakeups {wa} {wb}");
        // Migrations at a wakeup per 1000 wakeups: at most half with flips.
        let (ra, rb) = (a * 1000 / wa, b * 1000 / wb);
        assert!(
            2 * rb <= ra && ra > 0,
            "seed {seed}: 0 flips {a} of {wa}, 6 flips {b} of {wb}"
        );
    }
}

/// A run is a function of its seed and settings: the same flips give the
/// same run, and different flips a different one.
#[test]
fn flips_are_part_of_the_run() {
    let (x, y, z) = (run(6, 2), run(6, 2), run(0, 2));
    assert_eq!(format!("{:?}", x.ctr), format!("{:?}", y.ctr));
    assert_ne!(format!("{:?}", x.ctr), format!("{:?}", z.ctr));
}

/// The workload's debug string seeds its runs' machine noise
/// (`WorkSpec::boot`): without flips it is the string it was before the
/// field existed, so every earlier run keeps its noise; with flips it names
/// them.
#[test]
fn no_flips_keep_the_earlier_noise_seed() {
    assert_eq!(
        format!("{:?}", hb(0)),
        "HackbenchCfg { groups: 2, loops: 20, sockets: true, threads: false }"
    );
    assert_eq!(
        format!("{:?}", hb(6)),
        "HackbenchCfg { groups: 2, loops: 20, sockets: true, threads: false, flips: 6 }"
    );
    assert_ne!(
        WorkSpec::Hackbench(hb(0)).boot(),
        WorkSpec::Hackbench(hb(6)).boot()
    );
}
