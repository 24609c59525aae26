//! The oracle world of `tests/oracle.rs`: random operations ([`Op`], [`op`])
//! applied to the tree runqueue and the brute-force oracle side by side
//! ([`World`]), with every agreement and invariant checked by
//! [`World::check`]. Shared with the fuzzer (`fuzz/`, `make fuzz`).

use super::{H, MS, US};
use proptest::prelude::*;
use sched::oracle::{OState, Oracle};
use sched::{Feature, Policy, PreemptMode, TaskId, TaskParams, WakeFlags, WakeupReason};

const MAX_TASKS: u32 = 48;

#[derive(Clone, Debug)]
pub enum Op {
    Spawn {
        nice: i32,
        slice: u64,
        policy: Policy,
    },
    Tick {
        dt: u64,
    },
    Advance {
        dt: u64,
    },
    Wake {
        pick: usize,
        sync: bool,
        selected: bool,
        irq: bool,
    },
    Sleep,
    Nice {
        pick: usize,
        nice: i32,
    },
    /// Nice, slice and policy at once (`sched_setattr` between fair policies).
    SetAttr {
        pick: usize,
        nice: i32,
        slice: u64,
        policy: Policy,
    },
    Yield,
    Flip {
        feat: usize,
        on: bool,
    },
    Lazy(bool),
}

const FLIPPABLE: &[Feature] = &[
    Feature::PlaceLag,
    Feature::PlaceDeadlineInitial,
    Feature::RunToParity,
    Feature::PreemptShort,
    Feature::NextBuddy,
    Feature::PickBuddy,
    Feature::DelayDequeue,
    Feature::DelayZero,
    Feature::WakeupPreemption,
    Feature::NextBuddyIneligibleResched,
    Feature::NextBuddySyncRuntime,
];

pub fn op() -> impl Strategy<Value = Op> {
    let policy =
        prop_oneof![8 => Just(Policy::Normal), 1 => Just(Policy::Batch), 1 => Just(Policy::Idle)];
    let slice = prop_oneof![4 => Just(0u64), 1 => Just(100 * US), 1 => Just(MS), 1 => Just(3 * MS)];
    prop_oneof![
        2 => (-20i32..=19, slice.clone(), policy.clone()).prop_map(|(nice, slice, policy)| Op::Spawn { nice, slice, policy }),
        8 => (1u64..=2 * MS).prop_map(|dt| Op::Tick { dt }),
        4 => (1u64..=600 * US).prop_map(|dt| Op::Advance { dt }),
        6 => (any::<usize>(), any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(pick, sync, selected, irq)| Op::Wake { pick, sync, selected, irq }),
        5 => Just(Op::Sleep),
        1 => (any::<usize>(), -20i32..=19).prop_map(|(pick, nice)| Op::Nice { pick, nice }),
        1 => (any::<usize>(), -20i32..=19, slice.clone(), policy.clone())
            .prop_map(|(pick, nice, slice, policy)| Op::SetAttr { pick, nice, slice, policy }),
        1 => Just(Op::Yield),
        1 => (0..FLIPPABLE.len(), any::<bool>()).prop_map(|(feat, on)| Op::Flip { feat, on }),
        1 => any::<bool>().prop_map(Op::Lazy),
    ]
}

pub struct World {
    pub h: H,
    pub o: Oracle,
    pub n: u32,
    /// Sleepers whose slice changed after their lag was saved: the lag was
    /// clamped to the old slice and may exceed the new clamp (Linux clamps
    /// only when the lag is saved) until they are queued again.
    pub lag_unclamped: std::collections::HashSet<u32>,
}

impl World {
    pub fn new() -> Self {
        let h = H::one();
        let mut o = Oracle::new(h.cfg.clone(), 64);
        o.update_clock(h.now);
        World {
            h,
            o,
            n: 0,
            lag_unclamped: Default::default(),
        }
    }

    fn sleeping(&self) -> Vec<u32> {
        (0..self.n)
            .filter(|&i| {
                matches!(
                    self.o.ents[i as usize].state,
                    OState::Sleeping | OState::Delayed
                )
            })
            .collect()
    }

    fn clock(&mut self, dt: u64) {
        self.h.adv(dt);
        self.o.update_clock(self.h.now);
    }

    fn schedule(&mut self) {
        let a = self.h.pick();
        let b = self.o.schedule().map(|t| t.0);
        assert_eq!(a, b, "pick differs");
        if let Some(c) = a {
            if self.h.rq.fair.nr_queued > 1 {
                assert!(
                    self.h.rq.entity_eligible(TaskId(c)),
                    "picked an ineligible task"
                );
            }
        }
    }

    /// New parameters for task `id`, the same on both sides: `on_rq` changes
    /// a task the runqueue holds (queued, running or delayed), a sleeping
    /// one's state changes off the runqueue.
    fn set_params(
        &mut self,
        id: u32,
        p: TaskParams,
        on_rq: impl FnOnce(&mut sched::Rq) -> Result<sched::Resched, sched::RqError>,
    ) {
        if self.h.held.contains(&id) {
            on_rq(&mut self.h.rq).unwrap();
            // A delayed task is finished (blocked) by the change.
            if let sched::TtwuRunnable::Blocked(st) = peek_blocked(&mut self.h, id) {
                self.h.off.insert(id, st);
                self.h.held.remove(&id);
            }
        } else {
            let st = self.h.off.get_mut(&id).unwrap();
            sched::rq::set_params_offrq(st, p);
        }
        self.lag_unclamped.insert(id);
        self.o.set_params(TaskId(id), p);
        if self.h.rq.need_resched() == sched::Resched::Now {
            assert_eq!(self.o.need_resched, sched::Resched::Now);
            self.schedule();
        }
    }

    pub fn apply(&mut self, op: &Op) {
        match *op {
            Op::Spawn {
                nice,
                slice,
                policy,
            } => {
                if self.n >= MAX_TASKS {
                    return;
                }
                let id = self.n;
                self.n += 1;
                let p = TaskParams {
                    policy,
                    nice,
                    rt_priority: 0,
                    slice_ns: slice,
                    ..Default::default()
                };
                let a = self.h.spawn(id, p);
                let b = self.o.wake_up_new_task(TaskId(id), p);
                check_decision(a.reason, b);
            }
            Op::Tick { dt } => {
                self.clock(dt);
                let a = self.h.rq.task_tick();
                let b = self.o.tick();
                assert_eq!(a, b, "tick resched differs");
                if a == sched::Resched::Now {
                    self.schedule();
                }
            }
            Op::Advance { dt } => self.clock(dt),
            Op::Wake {
                pick,
                sync,
                selected,
                irq,
            } => {
                let s = self.sleeping();
                if s.is_empty() {
                    return;
                }
                let id = s[pick % s.len()];
                let mut wf = WakeFlags::empty();
                if sync {
                    wf |= WakeFlags::SYNC;
                }
                if selected {
                    wf |= WakeFlags::RQ_SELECTED;
                }
                if irq {
                    wf |= WakeFlags::IRQ;
                }
                let a = self.h.wake(id, wf).expect("sleeping task wakes");
                let b = self.o.wake(TaskId(id), wf);
                if a.reason != WakeupReason::SameTask {
                    check_decision(a.reason, b);
                }
                if a.resched == sched::Resched::Now {
                    self.schedule();
                }
            }
            Op::Sleep => {
                if self.h.curr().is_none() {
                    self.schedule();
                    return;
                }
                let sw = self.h.block();
                let delayed = self.o.sleep();
                assert_eq!(
                    sw.prev_blocked.is_none(),
                    delayed,
                    "delayed dequeue differs"
                );
                let b = self.o.schedule().map(|t| t.0);
                assert_eq!(sw.next.map(|t| t.0), b, "pick after sleep differs");
            }
            Op::Nice { pick, nice } => {
                if self.n == 0 {
                    return;
                }
                let id = (pick % self.n as usize) as u32;
                let p = TaskParams {
                    nice,
                    ..self.o.ents[id as usize].params
                };
                self.set_params(id, p, |rq| rq.set_user_nice(TaskId(id), nice));
            }
            Op::SetAttr {
                pick,
                nice,
                slice,
                policy,
            } => {
                if self.n == 0 {
                    return;
                }
                let id = (pick % self.n as usize) as u32;
                let p = TaskParams {
                    nice,
                    slice_ns: slice,
                    policy,
                    ..Default::default()
                };
                self.set_params(id, p, |rq| rq.sched_setattr(TaskId(id), p));
            }
            Op::Yield => {
                self.h.rq.yield_task();
                self.o.yield_task();
                self.schedule();
            }
            Op::Flip { feat, on } => self.h.cfg.features.set(FLIPPABLE[feat], on),
            Op::Lazy(lazy) => self.h.cfg.tunables.set_preempt_mode(if lazy {
                PreemptMode::Lazy
            } else {
                PreemptMode::Full
            }),
        }
    }

    pub fn check(&self) {
        let h = &self.h;
        h.rq.check().unwrap();
        assert_eq!(h.curr(), self.o.curr().map(|t| t.0), "curr differs");
        assert_eq!(
            h.rq.need_resched(),
            self.o.need_resched,
            "need_resched differs"
        );
        assert_eq!(h.rq.avg_vruntime(), self.o.avg_vruntime(), "V differs");
        for id in 0..self.n {
            let a = h.se(id);
            let b = &self.o.ents[id as usize];
            assert_eq!(a.vruntime, b.v, "task {id} vruntime");
            assert_eq!(a.deadline, b.deadline, "task {id} deadline");
            assert_eq!(a.load.weight, b.lw.weight, "task {id} weight");
            if !h.held.contains(&id) {
                assert_eq!(a.vlag, b.vlag, "task {id} vlag");
                if self.lag_unclamped.contains(&id) {
                    continue;
                }
                // The clamp is the longest slice queued at the dequeue plus a
                // tick (the exact vlag is the oracle's, above); whatever was
                // queued then, at most the longest slice there is.
                let limit = sched::weight::calc_delta_fair(
                    sched::tunables::MAX_SLICE_NS + h.cfg.tick_ns(),
                    a.load,
                ) as i64;
                // +1: a reweight rescales a clamped lag by w_old/w_new, and the
                // clamp itself is computed with the inverse-weight multiply;
                // the two roundings can differ by one virtual ns.
                assert!(
                    a.vlag.abs() <= limit + 1,
                    "task {id} vlag {} beyond clamp {}",
                    a.vlag,
                    limit
                );
            }
        }
        // Σ w·lag over the queued entities is ~0: |Σ w(V − v)| < Σ w.
        let v_avg = h.rq.avg_vruntime();
        let (mut sum, mut w) = (0i128, 0i128);
        for id in 0..self.n {
            let se = h.se(id);
            if se.on_rq {
                sum += (v_avg.wrapping_sub(se.vruntime) as i64 as i128) * se.load.weight as i128;
                w += se.load.weight as i128;
            }
        }
        assert!(sum.abs() < w.max(1), "Σ w·lag = {sum}, Σ w = {w}");
    }
}

/// Asks the runqueue, without side effects on a queued task, whether `id` has
/// become blocked (its delayed dequeue completed).
fn peek_blocked(h: &mut H, id: u32) -> sched::TtwuRunnable {
    match h.rq.task(TaskId(id)).map(|t| t.state) {
        Some(sched::TaskState::Blocked) => h.rq.ttwu_runnable(TaskId(id), WakeFlags::empty()),
        _ => sched::TtwuRunnable::NotHere,
    }
}

fn check_decision(a: WakeupReason, b: Option<sched::fair::FairWakeup>) {
    match (a, b) {
        (WakeupReason::Fair(x), Some(y)) => assert_eq!(x, y, "wakeup decision differs"),
        (WakeupReason::IdleCpu, None) => {}
        (x, y) => panic!("wakeup decision differs: {x:?} vs {y:?}"),
    }
}
