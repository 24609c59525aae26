//! PLACE_LAG with a request/reply pair on one runqueue: why a wakee whose
//! dequeue was delayed does not preempt its waker (docs/results/linux/ab-features.md,
//! "A/B: the other features (second set)", the pgbench rows).
//!
//! Each side blocks just after its send (the receive's syscall cost puts it
//! past V), so its dequeue is delayed (DELAY_DEQUEUE). When the peer's reply
//! wakes it, it has become eligible meanwhile; `requeue_delayed_entity`
//! with DELAY_ZERO (Linux 6.12, 54a58a787791 "sched/fair: Implement
//! DELAY_ZERO"; 7.x does it in `update_entity_lag`) clips that positive lag to 0
//! and places it at V, beside a waker that is at V too: the waker stays
//! protected (with NO_DELAY_ZERO it would preempt). Without delayed
//! dequeue, the sleeper keeps a positive lag and preempts on half of the
//! wakeups.

use crate::common;

use common::{H, US};
use sched::{Feature, WakeFlags};

/// Syscall cost of a send or receive.
const SYSCALL_NS: u64 = 2 * US;

/// Client (task 1): run `c_ns`, send, receive. Backend (task 2): receive,
/// run `b_ns`, send. `n` round trips; returns (wakeups, wakeup preemptions).
fn ping_pong(delay_dequeue: bool, c_ns: u64, b_ns: u64, n: u32) -> (u32, u32) {
    #[derive(Clone, Copy)]
    enum Op {
        Run(u64),
        Send,
        Recv,
    }
    let progs = [
        [Op::Run(c_ns), Op::Send, Op::Recv],
        [Op::Recv, Op::Run(b_ns), Op::Send],
    ];
    let mut h = H::new(1, 250);
    h.cfg.features.set(Feature::PlaceLag, true);
    h.cfg.features.set(Feature::DelayDequeue, delay_dequeue);
    h.spawn(1, H::nice(0));
    h.spawn(2, H::nice(0));
    let (mut pc, mut inbox, mut asleep) = ([0usize; 2], [0u32; 2], [false; 2]);
    let (mut wakeups, mut preempts, mut done) = (0, 0, 0);
    let mut cur = h.pick().unwrap();
    while done < n {
        let t = cur as usize - 1;
        let peer = 1 - t;
        match progs[t][pc[t] % 3] {
            Op::Run(ns) => {
                h.adv(ns);
                pc[t] += 1;
            }
            Op::Send => {
                h.adv(SYSCALL_NS);
                inbox[peer] += 1;
                pc[t] += 1;
                if asleep[peer] {
                    asleep[peer] = false;
                    wakeups += 1;
                    let d = h.wake(peer as u32 + 1, WakeFlags::SYNC).unwrap();
                    if d.preempt {
                        preempts += 1;
                        h.rq.schedule(false);
                    }
                }
            }
            Op::Recv => {
                h.adv(SYSCALL_NS);
                if inbox[t] > 0 {
                    inbox[t] -= 1;
                    pc[t] += 1;
                    done += u32::from(t == 0);
                } else {
                    asleep[t] = true;
                    h.block();
                }
            }
        }
        h.rq.check().unwrap();
        cur = h.curr().expect("one of the pair is runnable");
    }
    (wakeups, preempts)
}

/// Round trips per run: 100 under Miri, which checks the runqueue after
/// every step of 1 000 too slowly (the bounds scale with it).
const ROUND_TRIPS: u32 = if cfg!(miri) { 100 } else { 1000 };

#[test]
fn delayed_sleeper_woken_at_v_does_not_preempt_its_waker() {
    for (c_us, b_us) in [(5, 20), (20, 20), (2, 40)] {
        let (w, p) = ping_pong(true, c_us * US, b_us * US, ROUND_TRIPS);
        assert!(
            w >= ROUND_TRIPS * 19 / 10,
            "c {c_us} us, b {b_us} us: {w} wakeups"
        );
        assert_eq!(
            p, 0,
            "c {c_us} us, b {b_us} us: {p} of {w} wakeups preempted"
        );
    }
}

#[test]
fn without_delayed_dequeue_the_lag_kept_preempts() {
    let (w, p) = ping_pong(false, 20 * US, 20 * US, ROUND_TRIPS);
    // 666 of 1333 wakeups preempt here; the bounds are 1/3 and 2/3.
    assert!(p * 3 > w && p * 3 < 2 * w, "{p} of {w} wakeups preempted");
}
