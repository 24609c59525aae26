//! Task groups against models, with random hierarchies and operations.
//!
//! - `shares_match_the_fluid_model`: random hierarchies (up to 6 groups, up
//!   to 5 deep, `cpu.weight` anywhere in 1..=10000) of spinners with random
//!   nice values on one CPU; after 3 s each task's share of the CPU is the
//!   one [`sched::oracle::GroupModel`] (a fluid, per-level weighted model)
//!   gives, within 1.5 points.
//! - `random_operations_keep_the_invariants`: spawns into groups, ticks,
//!   sleeps, wakeups, moves between groups (running, queued, delayed or
//!   asleep), weight changes (good and bad), nice changes, yields and
//!   destroy attempts; after every step the runqueue's invariants hold
//!   (`Rq::check`: every level's tree, sums and counts; each group entity
//!   queued exactly while its runqueue holds something, with a weight in
//!   `[MIN_SHARES, shares]`; the counts of runnable grouped tasks and of group
//!   entities in the root), a destroy succeeds only for a group with no
//!   task and no child, and a bad weight changes nothing.

use crate::common;

use common::H;
use proptest::prelude::*;
use sched::fair::group::{GroupError, GroupId};
use sched::oracle::GroupModel;
use sched::{TaskId, WakeFlags};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(miri) { 2 } else { 24 })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn shares_match_the_fluid_model(
        groups in proptest::collection::vec((0usize..6, 1u32..=10_000), 0..6),
        tasks in proptest::collection::vec((0usize..7, -5i32..=5), 1..8),
    ) {
        let mut h = H::one();
        let mut m = GroupModel::new();
        let mut ids = vec![GroupId::ROOT];
        for (i, &(p, w)) in groups.iter().enumerate() {
            let p = p % (i + 1);
            let g = h.rq.create_task_group(ids[p], w).unwrap();
            prop_assert_eq!(m.group(p as u16, w) as usize, ids.len());
            ids.push(g);
        }
        for (n, &(g, nice)) in tasks.iter().enumerate() {
            let g = g % ids.len();
            let id = n as u32 + 1;
            let p = H::nice(nice);
            h.spawn(id, p);
            h.rq.sched_move_task(TaskId(id), ids[g]).unwrap();
            m.task(g as u16, u64::from(p.weight().weight));
        }
        h.pick();
        h.run_ms(3000);
        let want = m.shares();
        let total: u64 = (1..=tasks.len() as u32).map(|i| h.runtime(i)).sum();
        for (n, w) in want.iter().enumerate() {
            let got = h.runtime(n as u32 + 1) as f64 / total as f64;
            prop_assert!((got - w).abs() < 0.015, "task {} got {:.4}, model {:.4}", n + 1, got, w);
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Spawn { g: usize, nice: i32 },
    Tick,
    Block,
    Wake { pick: usize },
    Move { pick: usize, g: usize },
    Weight { g: usize, w: u32 },
    Nice { pick: usize, nice: i32 },
    Yield,
    Destroy { g: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0usize..8, -10i32..=10).prop_map(|(g, nice)| Op::Spawn { g, nice }),
        6 => Just(Op::Tick),
        3 => Just(Op::Block),
        3 => any::<usize>().prop_map(|pick| Op::Wake { pick }),
        3 => (any::<usize>(), 0usize..8).prop_map(|(pick, g)| Op::Move { pick, g }),
        1 => (0usize..8, 0u32..=10_100).prop_map(|(g, w)| Op::Weight { g, w }),
        1 => (any::<usize>(), -20i32..=19).prop_map(|(pick, nice)| Op::Nice { pick, nice }),
        1 => Just(Op::Yield),
        1 => (0usize..8).prop_map(|g| Op::Destroy { g }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases() * 4, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_keep_the_invariants(
        shape in proptest::collection::vec((0usize..8, 1u32..=10_000), 1..8),
        ops in proptest::collection::vec(op(), 100..300),
    ) {
        let mut h = H::one();
        let mut ids = vec![GroupId::ROOT];
        for (i, &(p, w)) in shape.iter().enumerate() {
            ids.push(h.rq.create_task_group(ids[p % (i + 1)], w).unwrap());
        }
        let mut next = 1u32;
        let mut all: Vec<u32> = Vec::new();
        for op in &ops {
            match *op {
                Op::Spawn { g, nice } => {
                    let g = ids[g % ids.len()];
                    if g != GroupId::ROOT && !h.cfg.groups.exists(g) {
                        continue;
                    }
                    h.spawn(next, H::nice(nice));
                    h.rq.sched_move_task(TaskId(next), g).unwrap();
                    all.push(next);
                    next += 1;
                    if h.curr().is_none() {
                        h.pick();
                    }
                }
                Op::Tick => h.tick(),
                Op::Block => {
                    if h.curr().is_some() {
                        h.block();
                    }
                }
                Op::Wake { pick } => {
                    if !all.is_empty() {
                        let id = all[pick % all.len()];
                        h.wake(id, WakeFlags::empty());
                        if h.curr().is_none() {
                            h.pick();
                        }
                    }
                }
                Op::Move { pick, g } => {
                    if all.is_empty() {
                        continue;
                    }
                    let id = all[pick % all.len()];
                    let g = ids[g % ids.len()];
                    if !h.cfg.groups.exists(g) {
                        continue;
                    }
                    if h.held.contains(&id) {
                        h.rq.sched_move_task(TaskId(id), g).unwrap();
                    } else if let Some(t) = h.off.get_mut(&id) {
                        // Asleep off the runqueue: the caller's state.
                        h.cfg.groups.move_task(GroupId(t.group), g).unwrap();
                        t.group = g.0;
                    }
                    prop_assert_eq!(h.task(id).group, g.0);
                }
                Op::Weight { g, w } => {
                    let g = ids[g % ids.len()];
                    if g == GroupId::ROOT || !h.cfg.groups.exists(g) {
                        continue;
                    }
                    let before = h.cfg.groups.weight(g).unwrap();
                    match h.rq.set_task_group_weight(g, w) {
                        Ok(()) => prop_assert_eq!(h.cfg.groups.weight(g), Ok(w)),
                        Err(e) => {
                            prop_assert_eq!(e, GroupError::BadWeight(w));
                            prop_assert_eq!(h.cfg.groups.weight(g), Ok(before));
                        }
                    }
                }
                Op::Nice { pick, nice } => {
                    if !all.is_empty() {
                        let id = all[pick % all.len()];
                        if h.held.contains(&id) {
                            let _ = h.rq.set_user_nice(TaskId(id), nice);
                        }
                    }
                }
                Op::Yield => {
                    if h.curr().is_some() {
                        h.rq.yield_task();
                        h.pick();
                    }
                }
                Op::Destroy { g } => {
                    let g = ids[g % ids.len()];
                    if g == GroupId::ROOT || !h.cfg.groups.exists(g) {
                        continue;
                    }
                    let members = all.iter().any(|&id| h.task(id).group == g.0);
                    let children = h.cfg.groups.list().iter().any(|x| x.1 == g);
                    let r = h.rq.destroy_task_group(g);
                    if members || children {
                        prop_assert_eq!(r, Err(GroupError::Busy));
                    } else {
                        prop_assert_eq!(r, Ok(()));
                    }
                }
            }
            h.rq.check().unwrap();
            let runnable = h
                .rq
                .tasks()
                .filter(|(_, t)| t.state == sched::TaskState::Queued)
                .count() as u32;
            prop_assert_eq!(h.rq.nr_runnable(), runnable);
        }
    }
}
