//! PELT's integer arithmetic against values computed independently: the
//! decay table and its fixed point from `y = 0.5^(1/32)` in floating point,
//! and whole histories against a unit-by-unit floating-point model of the
//! same geometric series.

use proptest::prelude::*;
use sched::pelt::{
    decay_load, decay_table, SchedAvg, LOAD_AVG_MAX, PERIOD_UNITS, SCHED_CAPACITY_SCALE,
    UTIL_AVG_UNCHANGED, UTIL_EST_MARGIN,
};

const UNIT_NS: u64 = 1024;

fn y() -> f64 {
    0.5f64.powf(1.0 / 32.0)
}

#[test]
fn the_table_is_y_to_the_n() {
    for (n, &v) in decay_table().iter().enumerate() {
        let want = ((1u64 << 32) - 1) as f64 * y().powi(n as i32);
        assert_eq!(v as u64, want as u64, "n = {n}");
    }
}

#[test]
fn load_avg_max_is_the_series_fixed_point() {
    // The recurrence Linux's generator runs: max = max * y + 1024 in the
    // table's 32-bit fixed point, until it stops moving.
    let y_inv = (((1u64 << 32) - 1) as f64 * y()) as u64;
    let mut max = 1024u64;
    loop {
        let next = ((max * y_inv) >> 32) + 1024;
        if next == max {
            break;
        }
        max = next;
    }
    assert_eq!(max, LOAD_AVG_MAX);
    // The real series' limit, 1024 / (1 - y) = 47788.08, is 0.1% above:
    // what truncating each step costs.
    let real = 1024.0 / (1.0 - y());
    assert!((real - LOAD_AVG_MAX as f64) / real < 0.001, "{real}");
    assert!(real > LOAD_AVG_MAX as f64);
}

#[test]
fn decay_halves_every_32_periods() {
    for &v in &[1u64 << 20, 47742, 1_000_000_007] {
        for k in 1..5u64 {
            let got = decay_load(v, 32 * k) as f64;
            let want = v as f64 / 2f64.powi(k as i32);
            // The shift truncates, then the table's 1 - 2^-32 takes a unit.
            assert!((got - want).abs() <= 2.0, "{v} {k}: {got} {want}");
        }
        for n in [1u64, 7, 31, 33, 100, 1000] {
            let got = decay_load(v, n) as f64;
            let want = v as f64 * y().powi(n as i32);
            assert!(
                (got - want).abs() <= 2.0 + want * 1e-6,
                "{v} {n}: {got} {want}"
            );
        }
    }
    assert_eq!(decay_load(u64::MAX, 32 * 64), 0);
}

/// A unit-by-unit floating-point model: each unit spent running adds
/// 1024 to the current period's bucket; at each period boundary the past
/// decays by y. The average divides by the same divider as PELT.
struct Model {
    sum: f64,
    contrib: u64,
}

impl Model {
    /// Unit by unit in effect, but the units up to the next period
    /// boundary are added at once (`k` running units add `1024 k`: what
    /// `k` additions of 1024 give, up to the f64 rounding of the
    /// additions, about 1e-13 relative, far below the tolerance), so it
    /// costs a step per period, not per unit: a 40 ms segment is 39
    /// periods but 39 063 units (under Miri, minutes per history).
    fn advance(&mut self, mut units: u64, running: bool) {
        while units > 0 {
            let k = units.min(PERIOD_UNITS - self.contrib);
            if running {
                self.sum += 1024.0 * k as f64;
            }
            self.contrib += k;
            units -= k;
            if self.contrib == PERIOD_UNITS {
                self.contrib = 0;
                self.sum *= y();
            }
        }
    }
    fn avg(&self) -> f64 {
        self.sum / (LOAD_AVG_MAX - PERIOD_UNITS + self.contrib) as f64
    }
}

/// How far the integer sums may drift from the exact series: whole periods
/// are added by the closed form with the truncated LOAD_AVG_MAX (0.1% under
/// the real limit) and every decay truncates, so up to a few tenths of a
/// percent; a wrong segment or decay would be off by far more.
const TOLERANCE: f64 = 0.005;

/// Runs a task through alternating run/sleep segments (lengths in units),
/// updating at each segment's end as a scheduler would (at dequeue and at
/// enqueue), and checks util_avg and load_avg against the model after every
/// segment.
fn check_history(segments: &[(u64, bool)], weight: u64) {
    let mut sa = SchedAvg::default();
    let mut model = Model {
        sum: 0.0,
        contrib: 0,
    };
    let mut now = 0u64;
    for (i, &(units, running)) in segments.iter().enumerate() {
        now += units * UNIT_NS;
        sa.update_entity(now, running, running, running, weight);
        model.advance(units, running);
        // update_entity recomputes the averages only when a period ended;
        // compare at the state the sums are in.
        let mut fresh = sa;
        fresh.update_avgs(weight);
        let want = model.avg();
        assert!(
            (fresh.util_avg as f64 - want).abs() <= 2.0 + want * TOLERANCE,
            "segment {i}: util_avg {} model {want:.2}",
            fresh.util_avg
        );
        // load_sum counts units unweighted, so each unit it loses to a
        // truncated decay costs weight / divider in load_avg: allow 8.
        let want_load = want * weight as f64 / 1024.0;
        let unit = weight as f64 / (LOAD_AVG_MAX - PERIOD_UNITS) as f64;
        assert!(
            (fresh.load_avg as f64 - want_load).abs() <= 2.0 + 8.0 * unit + want_load * TOLERANCE,
            "segment {i}: load_avg {} model {want_load:.2}",
            fresh.load_avg
        );
    }
}

#[test]
fn always_running_tends_to_full_scale() {
    let mut sa = SchedAvg::default();
    for ms in 1..=400u64 {
        sa.update_entity(ms * 1_000_000, true, true, true, 1024);
    }
    assert!(
        sa.util_avg >= 1010 && sa.util_avg <= 1024,
        "{}",
        sa.util_avg
    );
    assert!(
        sa.load_avg >= 1010 && sa.load_avg <= 1024,
        "{}",
        sa.load_avg
    );
    // A nice 5 task's load tends to its weight (335).
    let mut sa = SchedAvg::default();
    for ms in 1..=400u64 {
        sa.update_entity(ms * 1_000_000, true, true, true, 335);
    }
    assert!(sa.load_avg >= 330 && sa.load_avg <= 335, "{}", sa.load_avg);
}

#[test]
fn sleeping_32_periods_halves_it() {
    let mut sa = SchedAvg::default();
    let mut now = 0;
    for _ in 0..400 {
        now += PERIOD_UNITS * UNIT_NS;
        sa.update_entity(now, true, true, true, 1024);
    }
    let before = sa.util_avg as f64;
    now += 32 * PERIOD_UNITS * UNIT_NS;
    sa.update_entity(now, false, false, false, 1024);
    let after = sa.util_avg as f64;
    assert!((after - before / 2.0).abs() <= 2.0, "{before} -> {after}");
}

#[test]
fn half_duty_cycle_settles_near_half() {
    // 5 ms on, 5 ms off for 1 s: util_avg oscillates around 512, sampled
    // at the end of a sleep it is below, at the end of a run above.
    let mut segs = Vec::new();
    for _ in 0..100 {
        segs.push((4883, true));
        segs.push((4883, false));
    }
    check_history(&segs, 1024);
    let mut sa = SchedAvg::default();
    let mut now = 0;
    let (mut lo, mut hi) = (0, 0);
    for _ in 0..100 {
        now += 5_000_000;
        sa.update_entity(now, true, true, true, 1024);
        hi = sa.util_avg;
        now += 5_000_000;
        sa.update_entity(now, false, false, false, 1024);
        lo = sa.util_avg;
    }
    assert!(lo < 512 && hi > 512 && lo > 400 && hi < 624, "{lo} {hi}");
}

#[test]
fn a_clock_that_goes_back_moves_only_the_stamp() {
    let mut sa = SchedAvg::default();
    sa.update_entity(10_000_000, true, true, true, 1024);
    let kept = sa;
    assert!(!sa.update_entity(5_000_000, true, true, true, 1024));
    assert_eq!(sa.last_update_time_ns, 5_000_000);
    assert_eq!((sa.util_sum, sa.util_avg), (kept.util_sum, kept.util_avg));
    // Less than a unit: nothing at all.
    let kept = sa;
    assert!(!sa.update_entity(5_000_000 + 1023, true, true, true, 1024));
    assert_eq!(sa, kept);
}

#[test]
fn a_runqueue_carries_its_weights_and_runnable_count() {
    // Two nice-0 tasks queued, one running, for long: load_avg tends to
    // 2048, runnable_avg to 2 * 1024, util_avg to 1024.
    let mut rq = SchedAvg::default();
    for ms in 1..=400u64 {
        rq.update_rq(ms * 1_000_000, 2048, 2, true);
    }
    assert!((2020..=2048).contains(&rq.load_avg), "{}", rq.load_avg);
    assert!(
        (2020..=2048).contains(&rq.runnable_avg),
        "{}",
        rq.runnable_avg
    );
    assert!((1010..=1024).contains(&rq.util_avg), "{}", rq.util_avg);
}

#[test]
fn a_new_task_starts_heavy_and_gets_a_share_of_what_is_left() {
    let sa = SchedAvg::new_task(1024);
    assert_eq!(sa.load_avg, 1024);
    // A runqueue at util 600 with load 1024: the new task gets
    // 600 * 1024 / 1025 = 599, capped at half of what is left, 212.
    let rq = SchedAvg {
        util_avg: 600,
        load_avg: 1024,
        ..SchedAvg::default()
    };
    let mut t = SchedAvg::new_task(1024);
    t.post_init_util(7_000_000, &rq, 1024, SCHED_CAPACITY_SCALE);
    assert_eq!(t.util_avg, 212);
    assert_eq!(t.runnable_avg, 212);
    assert_eq!(t.last_update_time_ns, 7_000_000);
    assert_eq!(t.util_sum / t.divider(), 212);
    // An idle runqueue: half the capacity.
    let mut t = SchedAvg::new_task(1024);
    t.post_init_util(0, &SchedAvg::default(), 1024, SCHED_CAPACITY_SCALE);
    assert_eq!(t.util_avg, 512);
}

#[test]
fn util_est_rises_at_once_and_falls_by_a_quarter() {
    let mut sa = SchedAvg {
        util_avg: 800,
        runnable_avg: 800,
        ..SchedAvg::default()
    };
    sa.util_est_update();
    assert_eq!(sa.util_est_ewma(), 800);
    assert_ne!(sa.util_est & UTIL_AVG_UNCHANGED, 0);
    // No PELT update since: a second sleep takes nothing.
    sa.util_avg = 100;
    sa.util_est_update();
    assert_eq!(sa.util_est_ewma(), 800);
    // After an update, a fall of 400 is averaged in at 1/4.
    sa.util_est &= !UTIL_AVG_UNCHANGED;
    sa.util_avg = 400;
    sa.runnable_avg = 400;
    sa.util_est_update();
    assert_eq!(sa.util_est_ewma(), 700);
    assert_eq!(sa.task_util_est(), 700);
    // A fall within the margin is not taken.
    sa.util_est &= !UTIL_AVG_UNCHANGED;
    sa.util_avg = 700 - (UTIL_EST_MARGIN - 1);
    sa.runnable_avg = sa.util_avg;
    sa.util_est_update();
    assert_eq!(sa.util_est_ewma(), 700);
    // A task that waited (runnable well above util) gives no fall either.
    sa.util_est &= !UTIL_AVG_UNCHANGED;
    sa.util_avg = 300;
    sa.runnable_avg = 600;
    sa.util_est_update();
    assert_eq!(sa.util_est_ewma(), 700);
    // A real update leaves the flag to its caller: the fair runqueue
    // clears it (`util_change`, Linux's `cfs_se_util_change`) when the
    // averages moved and UTIL_EST is on.
    let mut sa = SchedAvg {
        util_est: 700 | UTIL_AVG_UNCHANGED,
        ..SchedAvg::default()
    };
    assert!(sa.update_entity(2_000_000, true, true, true, 1024));
    assert_ne!(sa.util_est & UTIL_AVG_UNCHANGED, 0);
    sa.util_change();
    assert_eq!(sa.util_est, 700);
}

/// 8 cases under Miri, which interprets ~1000x slower.
const CASES: u32 = if cfg!(miri) { 8 } else { 48 };

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    /// Any history of runs and sleeps (each 1 unit to 40 ms): the integer
    /// averages stay within 2 units plus 0.5% of the floating-point model.
    #[test]
    fn histories_match_the_floating_point_series(
        segs in proptest::collection::vec((1u64..40_000, any::<bool>()), 1..40),
        weight in prop_oneof![Just(15u64), Just(1024u64), Just(88761u64)],
    ) {
        check_history(&segs, weight);
    }
}
