//! SCHED_DEADLINE's replenishment timer (Linux's `start_dl_timer` /
//! `dl_task_timer`): a throttled task is replenished at the start of its
//! next period, on the CPU's one-shot timer, not at the next tick; and a
//! constrained task (deadline < period) woken after its deadline but before
//! its next period waits for that period (`dl_check_constrained_dl`),
//! which holds back the first job of a task made SCHED_DEADLINE while
//! runnable (`setup_new_dl_entity` gave it a deadline then) but not of one
//! made SCHED_DEADLINE while asleep.
//!
//! The rig drives one runqueue at HZ=1000 with its periodic tick and the
//! one-shot timer it asks for ([`Rq::take_hrtick_cmd`]), as a platform
//! does: whichever is due first fires. The tasks start half a tick off the
//! tick's phase, so that every period starts between two ticks.

use crate::common;

use common::{H, MS, US};
use sched::{HrtickCmd, Resched, TaskId, TaskParams, WakeFlags};

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

/// `sched_setattr` the way the kernel's `dlperiodic` workload and a Linux
/// program forking children do it: task 1 is a fair thread that runs a
/// little, then sleeps until its first release 9 ms after the setattr (the
/// workload's two ticks at HZ=250 and 1 ms); it is made SCHED_DEADLINE
/// (2 ms by 5 ms every 10 ms) either while still runnable or once asleep.
/// Returns the setattr instant.
fn setattr_then_sleep(r: &mut Rig, while_runnable: bool) -> u64 {
    let p = dl_us(2_000, 5_000, 10_000);
    r.h.spawn(1, TaskParams::default());
    r.pick();
    assert_eq!(r.h.curr(), Some(1));
    r.adv(100 * US);
    let t0;
    if while_runnable {
        t0 = r.h.now;
        r.h.rq.sched_setattr(TaskId(1), p).unwrap();
        r.flush();
        r.adv(50 * US);
        r.h.block();
    } else {
        r.adv(50 * US);
        r.h.block();
        t0 = r.h.now;
        if r.h.held.contains(&1) {
            // Its fair dequeue delayed: `sched_setattr` finishes it.
            r.h.rq.sched_setattr(TaskId(1), p).unwrap();
        } else {
            sched::rq::set_params_offrq(r.h.off.get_mut(&1).unwrap(), p);
        }
    }
    r.flush();
    assert_eq!(r.h.curr(), None);
    r.adv(t0 + 9 * MS - r.h.now);
    r.h.wake(1, WakeFlags::empty());
    r.flush();
    r.pick();
    t0
}

/// Made SCHED_DEADLINE while runnable, task 1 is enqueued as a deadline
/// task at once with a fresh budget and a deadline 5 ms later (Linux 7.2's
/// `enqueue_dl_entity` with `ENQUEUE_MOVE` and a deadline in the past:
/// `setup_new_dl_entity`, commit 627cc25f8446). Its release 9 ms after the
/// setattr falls after that deadline and before that period ends
/// (setattr + 10 ms): `dl_check_constrained_dl` throttles it until then
/// with its budget dropped, so the first job starts 1 ms after its
/// release, at an instant the setattr set; the replenishment gives it 2 ms
/// by setattr + 15 ms.
#[test]
fn setattr_of_a_runnable_task_holds_its_first_job_to_a_period_after_the_setattr() {
    let mut r = Rig::new();
    let t0 = setattr_then_sleep(&mut r, true);
    let t = r.h.task(1);
    assert!(t.dl.throttled, "woken after the setattr's deadline");
    assert_eq!((t.dl.runtime_ns, t.dl.deadline), (0, t0 + 5 * MS));
    assert_eq!(r.timer, Some(t0 + 10 * MS));
    assert_eq!(r.h.curr(), None, "nothing runs until that period");
    r.adv(t0 + 10 * MS - r.h.now);
    let t = r.h.task(1);
    assert!(!t.dl.throttled);
    assert_eq!(
        (t.dl.runtime_ns, t.dl.deadline),
        (2 * MS as i64, t0 + 15 * MS),
        "the next period's budget and deadline"
    );
    assert_eq!(r.h.curr(), Some(1), "its first job starts 1 ms late");
}

/// Made SCHED_DEADLINE while asleep, task 1 has no deadline until it wakes:
/// its wakeup finds the (zero) deadline in the past and starts a new period
/// (`update_dl_entity` -> `replenish_dl_new_period`), so its first job runs
/// at its release with 2 ms by release + 5 ms, as every later job does.
/// Here the clock (9.65 ms) is still below one period from 0: a first
/// enqueue that counted periods from a zero deadline (`replenish`) gave it
/// 10 ms, one period from 0, instead.
#[test]
fn setattr_of_a_sleeping_task_releases_its_first_job_at_its_wakeup() {
    let mut r = Rig::new();
    let t0 = setattr_then_sleep(&mut r, false);
    let t = r.h.task(1);
    assert!(!t.dl.throttled);
    assert_eq!(
        (t.dl.runtime_ns, t.dl.deadline),
        (2 * MS as i64, t0 + 14 * MS)
    );
    assert_eq!(r.h.curr(), Some(1), "its first job starts at its release");
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
