//! A waker that spins in a wakeup holds the wakee's wait queue while it
//! spins (`Mechanisms::wq_spin_hold`, the default; `--no-wq-spin-hold`):
//! Linux's `__wake_up_common_lock()` holds `wq_head->lock` around
//! `try_to_wake_up()`, and under QEMU's `-icount` TCG the waker's `pause`
//! ends its vCPU's turn with the queue held, so the senders that test
//! that queue (`sock_def_readable`) meet it (`sim/src/engine.rs`, "vCPU
//! turns").

mod common;

use common::{parse, run, seed_pairs};
use sim::engine::PAUSE_WQ;

const SOCKETS: &str = "hackbench ipc=socket mode=process groups=2 loops=40";

/// Socket hackbench on `qemu:4`, seeds 1-4: the turns a `pause` ends on a
/// wait queue at least double with the hold (summed over the seeds; seed
/// 1 of the 100-loop run: 146 without, 767 with, against our kernel's
/// 1 013 contended tests of a receiver's queue a run). Without `vcpu_pause`
/// nobody spins and the flag changes nothing, to the counter.
#[test]
fn spinning_wakers_keep_the_wait_queue() {
    let (mut off, mut on) = (0, 0);
    for (_, a, b) in seed_pairs("--no-wq-spin-hold", "", SOCKETS) {
        off += a.turns.pauses[PAUSE_WQ];
        on += b.turns.pauses[PAUSE_WQ];
    }
    assert!(
        on >= 2 * off && off > 0,
        "wait-queue turn ends {off} -> {on} (seeds 1-4)"
    );
    let base = "--machine qemu:4 --ms 600000 --seed 1 --no-vcpu-pause";
    let a = run(&format!("{base} {SOCKETS}"));
    let b = run(&format!("{base} --no-wq-spin-hold {SOCKETS}"));
    assert_eq!(format!("{:?}", a.ctr), format!("{:?}", b.ctr));
}

/// On by default, off with its flag, given once.
#[test]
fn wq_spin_hold_flag() {
    assert!(
        parse("--machine qemu:4 hackbench")
            .unwrap()
            .machine
            .mech
            .wq_spin_hold
    );
    let a = parse("--machine qemu:4 --no-wq-spin-hold hackbench").unwrap();
    assert!(!a.machine.mech.wq_spin_hold);
    let e = parse("--machine qemu:4 --no-wq-spin-hold --no-wq-spin-hold hackbench").unwrap_err();
    assert!(e.contains("given twice"), "{e}");
}
