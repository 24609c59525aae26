//! The tree-based EEVDF runqueue against the brute-force oracle.
//!
//! Random sequences of spawn / tick / wakeup (plain, WF_SYNC, WF_RQ_SELECTED) /
//! sleep / nice change / yield / feature flips / preemption-model switches drive
//! both [`sched::Rq`] and [`sched::oracle::Oracle`]. After every step they must
//! agree on the running task, the need-resched state, every wakeup decision and
//! every task's vruntime, deadline and saved lag; and the runqueue's invariants
//! must hold: tree order and augmentation exact, incremental sums equal to a
//! recomputation, Σ w·lag ≈ 0, every stored vlag within the clamp, and the pick
//! eligible. 250 cases × 400–500 steps ≥ 100k operations per run;
//! `PROPTEST_CASES` raises it (`make bench` runs 20× more).

use crate::common;

use common::world::{op, World};
use proptest::prelude::*;

/// 250 cases of 400-500 steps: at least 100k operations; `PROPTEST_CASES`
/// overrides (the benchmark target runs 20x more).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(250)
}

/// Steps per case: 50-75 under Miri, which interprets ~1000x slower (each
/// step costs about 1 M instructions there natively at opt-level 0, half
/// of it proptest drawing the operation, half the comparison).
fn steps() -> std::ops::RangeInclusive<usize> {
    if cfg!(miri) {
        50..=75
    } else {
        400..=500
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 4000, ..ProptestConfig::default() })]

    #[test]
    fn tree_matches_oracle(ops in proptest::collection::vec(op(), steps())) {
        let mut w = World::new();
        for op in &ops {
            w.apply(op);
            let held = &w.h.held;
            w.lag_unclamped.retain(|id| !held.contains(id));
            w.check();
        }
    }
}
