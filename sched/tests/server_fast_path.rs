//! The fast paths that keep the deadline class cheap while no deadline or
//! RT task exists, checked where they could go wrong:
//! - the fair server's tick only charges while nothing is due
//!   (`DlServer::tick`): the budget a fair task used while it ran alone
//!   must still count when an RT hog arrives in the middle of a period, at
//!   any point of the server's cycle, and a change of the server's
//!   parameters must still restart it at the next tick;
//! - the pick skips the deadline and RT classes while neither has a ready
//!   task: a throttled deadline task (queued, not ready) must still come
//!   back at its replenishment.
//!
//! The service is checked tick by tick against the plain model of the
//! server in the oracle ([`ServerModel`]), which charges every tick a fair
//! task ran and knows nothing of fast paths.

use crate::common;

use common::{H, MS};
use sched::deadline::ServerState;
use sched::oracle::{Runs, ServerModel};
use sched::{TaskId, TaskParams};

const HOG: u32 = 1;
const FAIR: u32 = 2;

fn set_server(h: &H, runtime_ns: u64, period_ns: u64) {
    let t = &h.cfg.tunables;
    // Period first when it grows, runtime first when it shrinks, so that
    // every intermediate pair is valid.
    let (runtime0, _) = t.fair_server();
    let (first, second) = if runtime_ns < runtime0 {
        (
            ("kernel.sched_fair_server_runtime_ns", runtime_ns),
            ("kernel.sched_fair_server_period_ns", period_ns),
        )
    } else {
        (
            ("kernel.sched_fair_server_period_ns", period_ns),
            ("kernel.sched_fair_server_runtime_ns", runtime_ns),
        )
    };
    t.set(first.0, &first.1.to_string()).unwrap();
    t.set(second.0, &second.1.to_string()).unwrap();
    assert_eq!(t.fair_server(), (runtime_ns, period_ns));
}

fn who(h: &H) -> Runs {
    match h.curr() {
        Some(HOG) => Runs::Rt,
        Some(FAIR) => Runs::Fair,
        _ => Runs::Idle,
    }
}

/// A fair spinner alone for `alone_ticks` ticks, then a FIFO hog; returns
/// the fair spinner's ticks after the hog arrived. Checked against the
/// model at every tick, before and after the arrival.
fn hog_arrives_after(hz: u32, runtime: u64, period: u64, alone_ticks: u64) -> u64 {
    let ctx = format!("hz {hz}, {runtime}/{period}, hog after {alone_ticks} ticks");
    let mut h = H::new(1, hz);
    set_server(&h, runtime, period);
    let tick = h.tick_ns();
    h.spawn(FAIR, TaskParams::default());
    let mut model = ServerModel::new(runtime, period, h.now);
    h.pick();
    assert_eq!(model.edge(h.now, tick, true, false), Runs::Fair, "{ctx}");
    for n in 0..alone_ticks {
        h.tick();
        h.rq.check().unwrap();
        let want = if n + 1 == alone_ticks {
            // The hog wakes right after this tick; the model decides who
            // runs the next one knowing it is there.
            let d = h.spawn(HOG, TaskParams::fifo(50));
            if d.preempt {
                h.pick();
            }
            model.edge(h.now, tick, true, true)
        } else {
            model.edge(h.now, tick, true, false)
        };
        assert_eq!(who(&h), want, "{ctx}: tick {n} at {} ns", h.now);
    }
    assert_eq!(h.runtime(FAIR), alone_ticks * tick, "{ctx}: ran alone");
    let mut fair_ticks = 0u64;
    let mut last = who(&h);
    for n in 0..(6 * period / tick) {
        fair_ticks += u64::from(last == Runs::Fair);
        h.tick();
        h.rq.check().unwrap();
        let want = model.edge(h.now, tick, true, true);
        last = who(&h);
        assert_eq!(last, want, "{ctx}: tick {n} after the hog at {} ns", h.now);
    }
    assert_eq!(
        h.runtime(FAIR),
        (alone_ticks + fair_ticks) * tick,
        "{ctx}: fair service"
    );
    fair_ticks
}

#[test]
fn budget_used_alone_counts_when_an_rt_hog_arrives_mid_period() {
    for (hz, runtime, period) in [
        (1000, 7 * MS, 30 * MS),
        (250, 50 * MS, 1_000 * MS),
        (250, 10 * MS, 14 * MS),
        (100, 35 * MS, 110 * MS),
    ] {
        // Linux's default 50 ms / 1 s is 85% of the ticks: not under Miri
        // (~1000x slower), where the three short periods cover the same
        // paths.
        if cfg!(miri) && period == 1_000 * MS {
            continue;
        }
        let tick = 1_000 * MS / u64::from(hz);
        let (r, p) = (runtime / tick, period / tick);
        // Budget partly used, nearly used, used up (throttled), just before
        // the deadline, in the next period, some periods later.
        for alone in [1, r / 2, r - 1, r, r + 1, p - 1, p + r / 2, 3 * p + 1] {
            if alone == 0 {
                continue;
            }
            let served = hog_arrives_after(hz, runtime, period, alone);
            // With budget left at the arrival, the six periods after it
            // hold at least four whole ones (the first partly used, the
            // last cut off), each served in full: no boost was lost. (An
            // arrival after the budget ran out alone finds the overrun
            // charged as debt, paid back first: the model agrees, see the
            // module docs of `sched::deadline`.)
            if alone < r {
                assert!(
                    served * tick >= 4 * runtime,
                    "hz {hz}, {runtime}/{period}, alone {alone}: {served} ticks"
                );
            }
        }
    }
}

#[test]
fn rt_arrival_after_a_partly_used_budget_waits_for_the_smaller_zero_laxity() {
    // 1000 Hz, 7 ms every 30 ms. The spinner runs 3 ms alone (charged
    // on the tick's fast path): 4 ms are left, so the server boosts at its
    // deadline minus 4 ms, not minus 7 ms, and serves 4 ms in this period.
    let mut h = H::new(1, 1000);
    set_server(&h, 7 * MS, 30 * MS);
    h.spawn(FAIR, TaskParams::default());
    h.pick();
    let start = h.now;
    h.run_ms(3);
    assert_eq!(h.rq.fair_server.state, ServerState::Deferred);
    assert_eq!(h.rq.fair_server.remaining_ns, 4 * MS as i64);
    h.spawn(HOG, TaskParams::fifo(50));
    h.pick();
    assert_eq!(h.curr(), Some(HOG));
    let mut boost_at = None;
    while h.now < start + 30 * MS {
        h.tick();
        if boost_at.is_none() && h.curr() == Some(FAIR) {
            boost_at = Some(h.now - start);
        }
    }
    assert_eq!(
        boost_at,
        Some(26 * MS),
        "zero laxity: deadline 30 ms - 4 ms left"
    );
    assert_eq!(h.runtime(FAIR), 7 * MS, "3 ms alone + 4 ms served");
}

#[test]
fn a_parameter_change_restarts_the_server_at_the_next_tick() {
    // While the server only charges, a new runtime/period must still be
    // taken at the next tick: a fresh budget and deadline with them.
    let mut h = H::new(1, 1000);
    h.spawn(FAIR, TaskParams::default());
    h.pick();
    h.run_ms(10);
    assert_eq!(h.rq.fair_server.runtime_ns, 50 * MS);
    set_server(&h, 20 * MS, 500 * MS);
    h.tick();
    let s = h.rq.fair_server;
    assert_eq!((s.runtime_ns, s.period_ns), (20 * MS, 500 * MS));
    assert_eq!(s.deadline, h.now + 500 * MS);
    assert_eq!(s.remaining_ns, 20 * MS as i64);
    assert_eq!(s.state, ServerState::Deferred);
    // Then the hog, at once: the new parameters rule the service (the
    // model starts where the server restarted, nothing charged yet).
    let mut model = ServerModel::new(20 * MS, 500 * MS, h.now);
    h.spawn(HOG, TaskParams::fifo(50));
    h.pick();
    assert_eq!(model.edge(h.now, MS, true, true), Runs::Rt);
    assert_eq!(h.curr(), Some(HOG));
    let mut last = Runs::Rt;
    let mut fair_ticks = 0;
    for n in 0..2_000 {
        fair_ticks += u64::from(last == Runs::Fair);
        h.tick();
        let want = model.edge(h.now, MS, true, true);
        last = who(&h);
        assert_eq!(last, want, "tick {n}");
    }
    assert_eq!(fair_ticks, 4 * 20, "20 ms in each of 4 periods");
}

#[test]
fn a_throttled_deadline_task_comes_back_while_only_fair_tasks_are_ready() {
    // A deadline spinner (10 ms every 100 ms) and a fair spinner: while the
    // deadline task is throttled no class above fair has a ready task, so
    // the pick goes straight to the fair class; the replenishment must
    // still bring the deadline task back at each period.
    let mut h = H::one();
    h.spawn(FAIR, TaskParams::default());
    h.spawn(3, TaskParams::deadline(10 * MS, 100 * MS, 100 * MS));
    h.pick();
    assert_eq!(h.curr(), Some(3));
    for k in 1..=10u64 {
        h.run_ms(100);
        assert_eq!(h.runtime(3), k * 10 * MS, "period {k}");
        assert_eq!(h.runtime(FAIR), k * 90 * MS, "period {k}");
    }
    assert_eq!(h.rq.task(TaskId(3)).unwrap().dl.nr_missed, 0);
}
