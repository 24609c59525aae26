//! SCHED_DEADLINE's replenishment timer (Linux's `start_dl_timer` /
//! `dl_task_timer`): a throttled task is replenished at the start of its
//! next period, on the CPU's one-shot timer, not at the next tick; and a
//! constrained task (deadline < period) woken after its deadline but before
//! its next period waits for that period (`dl_check_constrained_dl`).
//!
//! The rig drives one runqueue at HZ=1000 with its periodic tick and the
//! one-shot timer it asks for ([`Rq::take_hrtick_cmd`]), as a platform
//! does: whichever is due first fires. The tasks start half a tick off the
//! tick's phase, so that every period starts between two ticks.

mod common;

use common::{H, MS, US};
use sched::{HrtickCmd, Resched, TaskParams, WakeFlags};

fn dl_us(runtime_us: u64, deadline_us: u64, period_us: u64) -> TaskParams {
    TaskParams::deadline(runtime_us * US, deadline_us * US, period_us * US)
}

/// One runqueue, its tick every `tick_ns` from 0, and its one-shot timer.
struct Rig {
    h: H,
    next_tick: u64,
    timer: Option<u64>,
}

impl Rig {
    /// HZ=1000, the clock at 0.5 ms (half a tick before the first).
    fn new() -> Rig {
        let mut h = H::one();
        h.adv(500 * US - h.now);
        Rig {
            next_tick: MS,
            h,
            timer: None,
        }
    }

    /// Hands the runqueue's wish for its timer to the "platform".
    fn flush(&mut self) {
        match self.h.rq.take_hrtick_cmd() {
            None => {}
            Some(HrtickCmd::Start(d)) => self.timer = Some(self.h.now + d),
            Some(HrtickCmd::At(at)) => self.timer = Some(at.max(self.h.now)),
            Some(HrtickCmd::Cancel) => self.timer = None,
        }
    }

    fn pick(&mut self) {
        self.h.pick();
        self.flush();
    }

    /// The next timer interrupt: the one-shot timer if it is due first,
    /// else the tick; a repick when asked.
    fn step(&mut self) {
        let t = self.timer.map_or(self.next_tick, |x| x.min(self.next_tick));
        self.h.adv(t - self.h.now);
        let r = if self.timer == Some(t) {
            self.timer = None;
            self.h.rq.hrtick()
        } else {
            self.next_tick += self.h.tick_ns();
            self.h.rq.task_tick()
        };
        self.flush();
        if r != Resched::None {
            self.pick();
        }
        self.h.rq.check().unwrap();
    }

    /// Advances the clock by `d_ns`, firing every timer interrupt due on
    /// the way (the running task is charged at each, as on a platform).
    fn adv(&mut self, d_ns: u64) {
        let end = self.h.now + d_ns;
        while self.timer.map_or(self.next_tick, |x| x.min(self.next_tick)) <= end {
            self.step();
        }
        self.h.adv(end - self.h.now);
    }

    fn run_until(&mut self, t: u64) {
        while self.h.now < t {
            self.step();
        }
    }
}

/// A spinner of 2.5 ms every 8 ms by 3 ms, started at 0.5 ms: its budget
/// runs out on a tick (3 ms) and its next period starts at 8.5 ms, half a
/// tick before the tick at 9 ms. Linux's timer replenishes it at 8.5 ms,
/// and it runs from there; a replenishment at the tick would come at 9 ms.
#[test]
fn a_throttled_task_is_replenished_at_its_next_period_not_the_tick() {
    let mut r = Rig::new();
    r.h.spawn(2, TaskParams::fifo(50));
    r.h.spawn(1, dl_us(2_500, 3_000, 8_000));
    r.pick();
    assert_eq!(r.h.curr(), Some(1));
    while !r.h.task(1).dl.throttled {
        r.step();
    }
    assert_eq!(r.h.now, 3 * MS, "its budget runs out at the tick at 3 ms");
    assert_eq!(r.h.curr(), Some(2), "throttled: the FIFO task runs");
    assert_eq!(r.h.rq.dl_replenish_timer_ns(), Some(8_500 * US));
    assert_eq!(
        r.timer,
        Some(8_500 * US),
        "the CPU's timer is armed for the start of its next period"
    );
    r.run_until(8_500 * US);
    assert_eq!(r.h.now, 8_500 * US);
    let t = r.h.task(1);
    assert!(!t.dl.throttled, "replenished at 8.5 ms");
    assert_eq!(
        (t.dl.runtime_ns, t.dl.deadline),
        (2_500 * US as i64, 11_500 * US)
    );
    assert_eq!(r.h.curr(), Some(1), "and running at once, above FIFO");
    assert_eq!(r.timer, None, "nothing else is pending");
    // It runs its whole budget by its deadline, and is throttled again at
    // the tick at 11 ms with the next replenishment armed for 16.5 ms.
    r.run_until(11 * MS);
    let t = r.h.task(1);
    assert!(t.dl.throttled);
    assert_eq!(t.se.sum_exec_runtime, 5 * MS);
    assert_eq!(t.dl.nr_missed, 0);
    assert_eq!(r.timer, Some(16_500 * US));
}

/// Linux's `dl_check_constrained_dl`: a constrained task (2 ms by 5 ms
/// every 10 ms) that sleeps with budget left and wakes after its deadline
/// (5.5 ms) but before its next period (10.5 ms) is throttled until that
/// period, with its budget dropped; the timer then gives it the next
/// period's budget and deadline (a period after the old one). A fresh
/// budget at the wakeup would let it run 2 ms in the 3.5 ms before its
/// next period, more than its bandwidth.
#[test]
fn a_constrained_task_woken_after_its_deadline_waits_for_its_next_period() {
    let mut r = Rig::new();
    r.h.spawn(1, dl_us(2_000, 5_000, 10_000));
    r.pick();
    assert_eq!(r.h.task(1).dl.deadline, 5_500 * US);
    r.adv(700 * US);
    r.h.block();
    r.flush();
    assert_eq!(r.h.curr(), None);
    r.run_until(7 * MS);
    r.h.wake(1, WakeFlags::empty());
    r.flush();
    let t = r.h.task(1);
    assert!(
        t.dl.throttled,
        "woken between its deadline and its next period"
    );
    assert_eq!(t.dl.runtime_ns, 0, "its budget is dropped");
    assert_eq!(t.dl.deadline, 5_500 * US);
    assert_eq!(r.timer, Some(10_500 * US));
    r.pick();
    assert_eq!(r.h.curr(), None, "nothing runs until its next period");
    r.run_until(10_500 * US);
    let t = r.h.task(1);
    assert!(!t.dl.throttled);
    assert_eq!(
        (t.dl.runtime_ns, t.dl.deadline),
        (2 * MS as i64, 15_500 * US),
        "the next period's budget and deadline"
    );
    assert_eq!(r.h.curr(), Some(1));
    assert_eq!(t.se.sum_exec_runtime, 700 * US);
}

/// Woken after its next period began, the same task gets a fresh budget
/// and deadline at once, as before (`update_dl_entity`).
#[test]
fn a_constrained_task_woken_after_its_next_period_runs_at_once() {
    let mut r = Rig::new();
    r.h.spawn(1, dl_us(2_000, 5_000, 10_000));
    r.pick();
    r.adv(700 * US);
    r.h.block();
    r.flush();
    r.run_until(11 * MS);
    r.h.wake(1, WakeFlags::empty());
    r.flush();
    let t = r.h.task(1);
    assert!(!t.dl.throttled);
    assert_eq!((t.dl.runtime_ns, t.dl.deadline), (2 * MS as i64, 16 * MS));
    assert_eq!(r.timer, None);
}

/// Spinners under admitted load, beside a FIFO hog and a fair spinner, for
/// 1 s: a constrained 2.5/3/8 ms one whose periods start between ticks,
/// and an implicit 1/10/10 ms one. Replenished at its next period, the
/// first gets its 2.5 ms by each deadline; replenished at the next tick (up
/// to 1 ms late, with 0.5 ms of laxity) it would overrun into every other
/// deadline.
#[test]
fn spinners_under_admitted_load_miss_no_deadline_with_the_timer() {
    let mut r = Rig::new();
    r.h.spawn(3, TaskParams::fifo(50));
    r.h.spawn(4, TaskParams::default());
    r.h.spawn(1, dl_us(2_500, 3_000, 8_000));
    r.h.spawn(2, dl_us(1_000, 10_000, 10_000));
    r.pick();
    // Sampled at the tick half a millisecond before each deadline of task
    // 1: it has had its 2.5 ms of every period by then, and no more.
    for k in 0..125u64 {
        r.run_until(3 * MS + k * 8 * MS);
        assert_eq!(
            r.h.runtime(1),
            (k + 1) * 2_500 * US,
            "task 1's budget by its deadline in period {k}"
        );
    }
    for id in [1, 2] {
        let t = r.h.task(id);
        eprintln!(
            "task {id}: {} ms, {} throttled, {} missed",
            t.se.sum_exec_runtime / MS,
            t.dl.nr_throttled,
            t.dl.nr_missed
        );
        assert_eq!(t.dl.nr_missed, 0, "task {id}");
    }
    assert!(r.h.runtime(2) >= 99 * MS, "task 2: 1 ms every 10 ms");
}
