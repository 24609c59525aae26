//! A brute-force model of one CPU's fair runqueue, for checking the real one.
//!
//! [`Oracle`] implements the same EEVDF rules as [`crate::fair`] and the fair
//! part of [`crate::rq`] in the plainest way: every entity sits in one vector,
//! V is recomputed from scratch as `⌊Σ w·v / Σ w⌋` over the queued entities,
//! eligibility is `Σ w·v ≥ v·Σ w`, and the pick is a linear scan for the
//! earliest eligible deadline (ties to the earliest queued). No tree, no
//! incremental sums, no zero point. The property tests drive both with the same
//! random operations and require the same pick, the same preemption decisions
//! and the same virtual times every step; the benchmark uses it as the O(n)
//! baseline.
//!
//! Only fair-class tasks on one CPU are modelled by [`Oracle`]; the fair
//! server is modelled apart by [`ServerModel`]: one CPU with an RT hog and
//! fair work, decided tick by tick.

use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::config::SchedConfig;
use crate::fair::FairWakeup;
use crate::features::Feature;
use crate::flags::WakeFlags;
use crate::rq::Resched;
use crate::task::{Policy, TaskId, TaskParams};
use crate::tunables::{PreemptMode, MAX_SLICE_NS, MIN_SLICE_NS};
use crate::weight::{calc_delta_fair, LoadWeight};

/// Where an oracle task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OState {
    /// Not known or exited.
    Gone,
    /// Asleep, off the runqueue.
    Sleeping,
    /// Runnable (queued or running).
    Runnable,
    /// Asleep but still queued (delayed dequeue).
    Delayed,
}

/// One modelled entity.
#[derive(Clone, Copy, Debug)]
pub struct OEnt {
    /// Where it is.
    pub state: OState,
    /// Policy and nice.
    pub params: TaskParams,
    /// Weight.
    pub lw: LoadWeight,
    /// Virtual runtime.
    pub v: u64,
    /// Virtual deadline (relative while `rel`).
    pub deadline: u64,
    /// Saved lag.
    pub vlag: i64,
    /// Protection end.
    pub vprot: u64,
    /// Request size.
    pub slice: u64,
    /// Custom slice.
    pub custom: bool,
    /// Relative deadline.
    pub rel: bool,
    /// Last accounting.
    pub exec_start: u64,
    /// Total runtime.
    pub sum_exec: u64,
    /// Total at last pick.
    pub prev_sum: u64,
    /// Queue-insertion order, for deadline ties.
    pub seq: u64,
}

/// The brute-force runqueue.
#[derive(Debug)]
pub struct Oracle {
    cfg: Arc<SchedConfig>,
    /// Every task ever spawned, by id.
    pub ents: Vec<OEnt>,
    curr: Option<usize>,
    next: Option<usize>,
    clock: u64,
    seq: u64,
    /// V when the queue last ticked: the position of an empty queue.
    origin: u64,
    /// Pending reschedule.
    pub need_resched: Resched,
}

fn sv(v: u64) -> i128 {
    v as i64 as i128
}

fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

impl Oracle {
    /// An empty model that can hold ids below `capacity`.
    pub fn new(cfg: Arc<SchedConfig>, capacity: usize) -> Self {
        let blank = OEnt {
            state: OState::Gone,
            params: TaskParams::default(),
            lw: LoadWeight::NICE_0,
            v: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            slice: 0,
            custom: false,
            rel: false,
            exec_start: 0,
            sum_exec: 0,
            prev_sum: 0,
            seq: 0,
        };
        Oracle {
            cfg,
            ents: alloc::vec![blank; capacity],
            curr: None,
            next: None,
            clock: 0,
            seq: 0,
            origin: 0,
            need_resched: Resched::None,
        }
    }

    /// The running task.
    pub fn curr(&self) -> Option<TaskId> {
        self.curr.map(|c| TaskId(c as u32))
    }

    /// Advances the clock.
    pub fn update_clock(&mut self, now: u64) {
        self.clock = self.clock.max(now);
    }

    fn queued(&self, i: usize) -> bool {
        matches!(self.ents[i].state, OState::Runnable | OState::Delayed)
    }

    fn queued_ids(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.ents.len()).filter(move |&i| self.queued(i))
    }

    fn nr_queued(&self) -> usize {
        self.queued_ids().count()
    }

    /// V = ⌊Σ w·v / Σ w⌋ over the queued entities (the origin if none).
    pub fn avg_vruntime(&self) -> u64 {
        let (mut x, mut w) = (0i128, 0i128);
        for i in self.queued_ids() {
            x += sv(self.ents[i].v) * self.ents[i].lw.weight as i128;
            w += self.ents[i].lw.weight as i128;
        }
        if w == 0 {
            return self.origin;
        }
        x.div_euclid(w) as i64 as u64
    }

    /// v ≤ V, exactly.
    pub fn eligible_v(&self, v: u64) -> bool {
        let (mut x, mut w) = (0i128, 0i128);
        for i in self.queued_ids() {
            x += sv(self.ents[i].v) * self.ents[i].lw.weight as i128;
            w += self.ents[i].lw.weight as i128;
        }
        x >= sv(v) * w
    }

    fn min_slice_all(&self) -> u64 {
        self.queued_ids()
            .map(|i| self.ents[i].slice)
            .min()
            .unwrap_or(u64::MAX)
    }

    fn resched_lazy(&mut self) {
        let k = if self.cfg.tunables.preempt_mode() == PreemptMode::Lazy && self.curr.is_some() {
            Resched::Lazy
        } else {
            Resched::Now
        };
        self.need_resched = self.need_resched.max(k);
    }

    fn protected(&self, i: usize) -> bool {
        (self.ents[i].vprot.wrapping_sub(self.ents[i].v) as i64) > 0
    }

    /// Charges the running entity; true if it should give way.
    fn update_curr(&mut self) -> bool {
        let Some(c) = self.curr else { return false };
        let now = self.clock;
        let base = self.cfg.tunables.base_slice_ns();
        let e = &mut self.ents[c];
        let d = now.wrapping_sub(e.exec_start) as i64;
        if d <= 0 {
            return false;
        }
        e.exec_start = now;
        e.sum_exec += d as u64;
        e.v = e.v.wrapping_add(calc_delta_fair(d as u64, e.lw));
        let mut consumed = false;
        if !before(e.v, e.deadline) {
            if !e.custom {
                e.slice = base;
            }
            e.deadline = e.v.wrapping_add(calc_delta_fair(e.slice, e.lw));
            consumed = true;
        }
        if self.nr_queued() == 1 || !self.queued(c) {
            return false;
        }
        if consumed || !self.protected(c) {
            if self.next == Some(c) {
                self.next = None;
            }
            self.resched_lazy();
            return true;
        }
        false
    }

    /// V − v of entity `i`, clamped to the longest queued slice plus a tick
    /// in its virtual time (Linux 7.2's `entity_lag`).
    fn lag_of(&self, i: usize) -> i64 {
        let e = &self.ents[i];
        let max_slice = self
            .queued_ids()
            .map(|j| self.ents[j].slice)
            .max()
            .unwrap_or(0);
        let limit = calc_delta_fair(max_slice + self.cfg.tick_ns(), e.lw) as i64;
        (self.avg_vruntime().wrapping_sub(e.v) as i64).clamp(-limit, limit)
    }

    /// The lag of a delayed entity (`update_entity_lag` with `sched_delayed`):
    /// no more negative than when it was delayed, and with DELAY_ZERO not
    /// positive.
    fn delayed_lag(&self, i: usize) -> i64 {
        let lag = self.lag_of(i).max(self.ents[i].vlag);
        if self.cfg.feat(Feature::DelayZero) {
            lag.min(0)
        } else {
            lag
        }
    }

    /// Places `i` (not yet queued) at V minus its scaled lag.
    fn place(&mut self, i: usize, initial: bool) {
        self.place_with(i, initial, false);
    }

    /// [`Self::place`]; `count_self`: `i` is the running entity and stays in
    /// V and in the load the lag is scaled by (Linux's `place_entity` counts
    /// `cfs_rq->curr` while it is on the runqueue).
    fn place_with(&mut self, i: usize, initial: bool, count_self: bool) {
        if !self.ents[i].custom {
            self.ents[i].slice = self.cfg.tunables.base_slice_ns();
        }
        let v_avg = self.avg_vruntime();
        let e = self.ents[i];
        let mut lag = 0i128;
        let n = self.queued_ids().filter(|&j| j != i).count();
        if self.cfg.feat(Feature::PlaceLag) && n > 0 && e.vlag != 0 {
            let load: i128 = self
                .queued_ids()
                .filter(|&j| count_self || j != i)
                .map(|j| self.ents[j].lw.weight as i128)
                .sum();
            lag = e.vlag as i128 * (load + e.lw.weight as i128) / load.max(1);
        }
        let e = &mut self.ents[i];
        e.v = v_avg.wrapping_sub(lag as i64 as u64);
        if e.rel {
            e.deadline = e.deadline.wrapping_add(e.v);
            e.rel = false;
            return;
        }
        let mut vs = calc_delta_fair(e.slice, e.lw);
        if initial && self.cfg.feat(Feature::PlaceDeadlineInitial) {
            vs /= 2;
        }
        e.deadline = e.v.wrapping_add(vs);
    }

    /// Spawns a new task (`wake_up_new_task`) and returns the wakeup outcome.
    pub fn wake_up_new_task(&mut self, id: TaskId, params: TaskParams) -> Option<FairWakeup> {
        let i = id.0 as usize;
        let slice = if params.slice_ns != 0 {
            params.slice_ns.clamp(MIN_SLICE_NS, MAX_SLICE_NS)
        } else {
            0
        };
        self.ents[i] = OEnt {
            state: OState::Sleeping,
            params,
            lw: params.weight(),
            v: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            slice,
            custom: slice != 0,
            rel: false,
            exec_start: 0,
            sum_exec: 0,
            prev_sum: 0,
            seq: 0,
        };
        self.enqueue(i, true);
        self.wakeup_preempt(i, WakeFlags::FORK)
    }

    fn enqueue(&mut self, i: usize, initial: bool) {
        self.update_curr();
        self.place(i, initial);
        self.seq += 1;
        self.ents[i].seq = self.seq;
        self.ents[i].state = OState::Runnable;
    }

    /// Wakes a task: a delayed one is re-queued in place, a sleeping one placed.
    pub fn wake(&mut self, id: TaskId, wf: WakeFlags) -> Option<FairWakeup> {
        let i = id.0 as usize;
        match self.ents[i].state {
            OState::Delayed => {
                // requeue_delayed_entity (7.2): placed again only if its lag
                // was bounded (clamp, the lag it had when delayed, DELAY_ZERO).
                self.update_curr();
                let lag = self.delayed_lag(i);
                self.ents[i].vlag = lag;
                if self.avg_vruntime().wrapping_sub(lag as u64) != self.ents[i].v {
                    if self.curr == Some(i) {
                        // The running entity stays in V and in the load.
                        self.place_with(i, false, true);
                    } else {
                        self.ents[i].state = OState::Sleeping;
                        self.place(i, false);
                        self.seq += 1;
                        self.ents[i].seq = self.seq;
                    }
                }
                self.ents[i].state = OState::Runnable;
                if self.curr == Some(i) {
                    return None;
                }
            }
            OState::Sleeping => self.enqueue(i, false),
            _ => {}
        }
        self.wakeup_preempt(i, wf | WakeFlags::TTWU)
    }

    fn wakeup_preempt(&mut self, p: usize, wf: WakeFlags) -> Option<FairWakeup> {
        let Some(s) = self.curr else {
            self.need_resched = Resched::Now;
            return None;
        };
        let r = self.check_wakeup(s, p, wf);
        if r == FairWakeup::IdleCurrent {
            self.need_resched = Resched::Now;
        } else if r.preempts() {
            self.resched_lazy();
        }
        Some(r)
    }

    fn check_wakeup(&mut self, s: usize, p: usize, wf: WakeFlags) -> FairWakeup {
        if s == p {
            return FairWakeup::SameTask;
        }
        if self.need_resched == Resched::Now {
            return FairWakeup::AlreadyPending;
        }
        if !self.cfg.feat(Feature::WakeupPreemption) {
            return FairWakeup::Disabled;
        }
        let s_idle = self.ents[s].params.policy == Policy::Idle;
        let p_idle = self.ents[p].params.policy == Policy::Idle;
        if s_idle && !p_idle {
            if self.protected(s) {
                self.ents[s].vprot = self.ents[s].v;
            }
            return FairWakeup::IdleCurrent;
        }
        if s_idle != p_idle {
            return FairWakeup::IdleWakee;
        }
        if self.ents[p].params.policy != Policy::Normal {
            return FairWakeup::NotNormalPolicy;
        }
        self.update_curr();
        let short = self.cfg.feat(Feature::PreemptShort) && self.ents[p].slice < self.ents[s].slice;
        if !short {
            if wf.contains(WakeFlags::FORK) || self.ents[p].state == OState::Delayed {
                return FairWakeup::ForkOrDelayed;
            }
            if self.cfg.feat(Feature::NextBuddyIneligibleResched)
                && !wf.contains(WakeFlags::IRQ)
                && !self.eligible_v(self.ents[s].v)
            {
                return FairWakeup::IneligibleWaker;
            }
            if self.cfg.feat(Feature::NextBuddy) {
                let keep_old = self
                    .next
                    .is_some_and(|n| before(self.ents[n].deadline, self.ents[p].deadline));
                if !keep_old {
                    if self.ents[p].params.policy != Policy::Idle {
                        self.next = Some(p);
                    }
                    if wf.contains(WakeFlags::SYNC) {
                        let mut thr = self.cfg.tunables.migration_cost_ns();
                        if wf.contains(WakeFlags::RQ_SELECTED) {
                            thr /= 4;
                        }
                        let e = self.ents[s];
                        let ran = if self.cfg.feat(Feature::NextBuddySyncRuntime) {
                            e.sum_exec.saturating_sub(e.prev_sum)
                        } else {
                            self.clock.saturating_sub(e.exec_start)
                        };
                        return if before(self.ents[p].deadline, e.deadline) && ran >= thr {
                            FairWakeup::SyncResched
                        } else {
                            FairWakeup::SyncNone
                        };
                    }
                }
            }
        }
        // `pick_next_entity` (7.x, ac8e69e69363 and 9f6d929ee2c6): a pick
        // that lands on a delayed entity finishes its dequeue and picks again
        // while anything is queued.
        let nse = loop {
            match self.pick(!short) {
                Some(i) if self.ents[i].state == OState::Delayed => {
                    self.finish_delayed(i);
                    if self.nr_queued() == 0 {
                        break None;
                    }
                }
                other => break other,
            }
        };
        if nse == Some(p) {
            if short {
                if self.protected(s) {
                    self.ents[s].vprot = self.ents[s].v;
                }
                if self.next == Some(s) {
                    self.next = None;
                }
            }
            return FairWakeup::Picked { short };
        }
        if self.cfg.feat(Feature::RunToParity) {
            let q = self.min_slice_all();
            let e = &mut self.ents[s];
            let lim = e.v.wrapping_add(calc_delta_fair(q, e.lw));
            if before(lim, e.vprot) {
                e.vprot = lim;
            }
        }
        FairWakeup::NotPicked { short }
    }

    /// The EEVDF pick by linear scan: O(n).
    pub fn pick(&self, protect: bool) -> Option<usize> {
        let (mut x, mut w) = (0i128, 0i128);
        for i in self.queued_ids() {
            x += sv(self.ents[i].v) * self.ents[i].lw.weight as i128;
            w += self.ents[i].lw.weight as i128;
        }
        let eligible = |v: u64| x >= sv(v) * w;
        let tree: Vec<usize> = self
            .queued_ids()
            .filter(|&i| Some(i) != self.curr)
            .collect();
        let curr_q = self.curr.filter(|&c| self.queued(c));
        if self.nr_queued() == 1 {
            return curr_q.or(tree.first().copied());
        }
        if let Some(n) = self.next {
            if self.cfg.feat(Feature::PickBuddy) && protect && eligible(self.ents[n].v) {
                return Some(n);
            }
        }
        let curr = curr_q.filter(|&c| eligible(self.ents[c].v));
        if let Some(c) = curr {
            if protect && self.protected(c) {
                return Some(c);
            }
        }
        let mut best: Option<usize> = None;
        for &i in &tree {
            if !eligible(self.ents[i].v) {
                continue;
            }
            best = match best {
                None => Some(i),
                Some(b) => {
                    let (ei, eb) = (&self.ents[i], &self.ents[b]);
                    if before(ei.deadline, eb.deadline)
                        || (ei.deadline == eb.deadline && ei.seq < eb.seq)
                    {
                        Some(i)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        match (best, curr) {
            (None, c) => c.or(tree.first().copied()),
            (Some(b), Some(c)) if before(self.ents[c].deadline, self.ents[b].deadline) => Some(c),
            (b, _) => b,
        }
    }

    /// The running task blocks; returns true if its dequeue was delayed.
    pub fn sleep(&mut self) -> bool {
        let Some(c) = self.curr else { return false };
        self.update_curr();
        if self.next == Some(c) {
            self.next = None;
        }
        if self.cfg.feat(Feature::DelayDequeue) && !self.eligible_v(self.ents[c].v) {
            self.ents[c].vlag = self.lag_of(c);
            self.ents[c].state = OState::Delayed;
            return true;
        }
        self.ents[c].vlag = self.lag_of(c);
        self.ents[c].state = OState::Sleeping;
        false
    }

    /// Picks and switches to the next task; returns it.
    pub fn schedule(&mut self) -> Option<TaskId> {
        let next = loop {
            if self.nr_queued() == 0 {
                break None;
            }
            self.update_curr();
            match self.pick(true) {
                Some(i) if self.ents[i].state == OState::Delayed => self.finish_delayed(i),
                other => break other,
            }
        };
        if let Some(c) = self.curr {
            if self.queued(c) {
                self.update_curr();
                self.seq += 1;
                self.ents[c].seq = self.seq;
            }
        }
        if next == self.curr {
            // Picked again: nothing is put back or set up.
            self.need_resched = Resched::None;
            return self.curr();
        }
        self.curr = None;
        if let Some(n) = next {
            self.set_next(n, true);
        }
        self.curr = next;
        self.need_resched = Resched::None;
        self.curr()
    }

    /// `set_next_entity`: buddy cleared, protection armed when `first`
    /// (`set_protect_slice`, with `n` out of the queue; not when the running
    /// task is set up again after a `sched_change`), accounting restarted.
    fn set_next(&mut self, n: usize, first: bool) {
        if self.next == Some(n) {
            self.next = None;
        }
        if !first {
            let now = self.clock;
            let e = &mut self.ents[n];
            e.exec_start = now;
            e.prev_sum = e.sum_exec;
            return;
        }
        let q = if self.cfg.feat(Feature::RunToParity) {
            self.queued_ids()
                .filter(|&j| j != n)
                .map(|j| self.ents[j].slice)
                .min()
                .unwrap_or(u64::MAX)
        } else {
            self.cfg.tunables.normalized_base_slice_ns()
        };
        let now = self.clock;
        let e = &mut self.ents[n];
        let q = q.min(e.slice);
        e.vprot = e.deadline;
        if q != e.slice {
            let lim = e.v.wrapping_add(calc_delta_fair(q, e.lw));
            if before(lim, e.vprot) {
                e.vprot = lim;
            }
        }
        e.exec_start = now;
        e.prev_sum = e.sum_exec;
    }

    /// The tick; returns the need-resched state.
    pub fn tick(&mut self) -> Resched {
        if self.need_resched == Resched::Lazy {
            self.need_resched = Resched::Now;
        }
        if self.curr.is_some() {
            self.update_curr();
            self.origin = self.avg_vruntime();
        }
        self.need_resched
    }

    /// `sched_yield` of the running task.
    pub fn yield_task(&mut self) {
        if let Some(c) = self.curr {
            if self.nr_queued() > 1 {
                if self.next == Some(c) {
                    self.next = None;
                }
                self.update_curr();
                if self.eligible_v(self.ents[c].v) {
                    let e = &mut self.ents[c];
                    e.v = e.deadline;
                    e.deadline = e.deadline.wrapping_add(calc_delta_fair(e.slice, e.lw));
                }
            }
        }
        self.need_resched = Resched::Now;
    }

    fn finish_delayed(&mut self, i: usize) {
        self.update_curr();
        if self.next == Some(i) {
            self.next = None;
        }
        self.ents[i].vlag = self.delayed_lag(i);
        self.ents[i].state = OState::Sleeping;
    }

    /// New nice value, lag preserved ([`Self::set_params`]); a delayed
    /// sleeper's dequeue is finished first. Then the priority-change check.
    pub fn set_nice(&mut self, id: TaskId, nice: i32) {
        let p = TaskParams {
            nice,
            ..self.ents[id.0 as usize].params
        };
        self.set_params(id, p);
    }

    /// New fair parameters (`sched_setattr` between fair policies, or a nice
    /// change): as Linux 7.2's `sched_change`, the task is saved, changed
    /// and restored (a non-sleep dequeue with its lag and, with
    /// PLACE_REL_DEADLINE, its relative deadline, both scaled by old/new
    /// weight, then placement), and, if it was running, put back and set up
    /// again. Then the priority-change check.
    pub fn set_params(&mut self, id: TaskId, params: TaskParams) {
        let i = id.0 as usize;
        if self.ents[i].state == OState::Delayed {
            self.finish_delayed(i);
        }
        let old = self.ents[i].params;
        let queued = self.queued(i);
        let running = self.curr == Some(i);
        if queued {
            self.update_curr();
            if self.next == Some(i) {
                self.next = None;
            }
            self.ents[i].vlag = self.lag_of(i);
            if self.cfg.feat(Feature::PlaceRelDeadline) {
                let e = &mut self.ents[i];
                e.deadline = e.deadline.wrapping_sub(e.v);
                e.rel = true;
            }
        }
        self.apply_params(i, params);
        if !queued {
            return;
        }
        self.ents[i].state = OState::Sleeping; // out of the queue while placing
                                               // The running task is put back (nothing to put: it is off the
                                               // queue), enqueued and set up again; another is just enqueued.
        if running {
            self.curr = None;
        }
        self.update_curr();
        self.place(i, false);
        if running {
            self.curr = Some(i);
            self.set_next(i, false);
        }
        self.ents[i].state = OState::Runnable;
        if running {
            if params.nice > old.nice {
                self.need_resched = Resched::Now;
            }
        } else {
            self.seq += 1;
            self.ents[i].seq = self.seq;
            if params.nice != old.nice || params.policy != old.policy {
                self.wakeup_preempt(i, WakeFlags::empty());
            }
        }
    }

    /// Policy, nice and slice, with the lag and a relative deadline scaled
    /// by old/new weight.
    fn apply_params(&mut self, i: usize, params: TaskParams) {
        let lw = params.weight();
        let old = self.ents[i].lw.weight as i128;
        let e = &mut self.ents[i];
        e.vlag = (e.vlag as i128 * old / lw.weight as i128) as i64;
        if e.rel {
            e.deadline = ((e.deadline as i64 as i128) * old / lw.weight as i128) as i64 as u64;
        }
        e.lw = lw;
        e.params = params;
        if params.slice_ns != 0 {
            e.slice = params.slice_ns.clamp(MIN_SLICE_NS, MAX_SLICE_NS);
            e.custom = true;
        } else {
            e.custom = false;
        }
    }
}

/// Who a [`ServerModel`] runs for the next tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runs {
    /// The RT task.
    Rt,
    /// A fair task (on its own or served).
    Fair,
    /// Nothing is runnable.
    Idle,
}

/// The fair server as a plain tick-by-tick model of one CPU, for checking
/// [`crate::deadline::DlServer`] inside a runqueue: no runqueue, no
/// entities, just the budget, the deadline and the rules of
/// [`crate::deadline`]'s docs written out in order. At each tick edge the
/// tick that just ended is charged to the server if a fair task ran in it;
/// a budget spent while serving stops the service, one spent by the fair
/// task running on its own starts a new period and forgets that the server
/// served; a passed deadline replenishes (an overrun is paid back; a
/// deadline still behind starts afresh; a deferred server's unspent budget
/// is dropped for a fresh one) and, if the server has served since it last
/// deferred, serves again at once; the zero-laxity time starts the service
/// with a new period (a full budget, the deadline a period away). Then the
/// next tick goes to RT unless the server serves or no RT task is runnable.
#[derive(Clone, Copy, Debug)]
pub struct ServerModel {
    runtime: i64,
    period: u64,
    budget: i64,
    deadline: u64,
    serving: bool,
    spent: bool,
    served: bool,
    last: Runs,
}

impl ServerModel {
    /// A server with `runtime`/`period` started at `now` (a fair task was
    /// just queued); `runtime` 0: no server.
    pub fn new(runtime_ns: u64, period_ns: u64, now: u64) -> Self {
        ServerModel {
            runtime: runtime_ns as i64,
            period: period_ns,
            budget: runtime_ns as i64,
            deadline: now + period_ns,
            serving: false,
            spent: false,
            served: false,
            last: Runs::Idle,
        }
    }

    /// The tick edge at `now`, after a tick of `tick_ns` during which the
    /// previous answer ran; returns who runs next.
    pub fn edge(&mut self, now: u64, tick_ns: u64, fair: bool, rt: bool) -> Runs {
        if self.runtime > 0 {
            if self.last == Runs::Fair {
                self.budget -= tick_ns as i64;
                if self.budget <= 0 && !self.serving {
                    // Spent by the fair class on its own: a new period.
                    self.budget = self.runtime;
                    self.deadline = now + self.period;
                    self.spent = false;
                    self.served = false;
                }
            }
            if self.budget <= 0 {
                self.serving = false;
                self.spent = true;
            }
            if now >= self.deadline {
                if self.spent {
                    while self.budget <= 0 {
                        self.budget += self.runtime;
                        self.deadline += self.period;
                    }
                    if self.deadline <= now {
                        self.budget = self.runtime;
                        self.deadline = now + self.period;
                    }
                    self.spent = false;
                    self.serving = self.served;
                } else if !self.serving {
                    self.budget = self.runtime;
                    self.deadline = now + self.period;
                }
            }
            if !self.spent && !self.serving && now + self.budget as u64 >= self.deadline {
                self.serving = true;
                self.served = true;
                self.budget = self.runtime;
                self.deadline = now + self.period;
            }
        }
        self.last = match (fair, rt) {
            (true, true) if self.serving => Runs::Fair,
            (_, true) => Runs::Rt,
            (true, false) => Runs::Fair,
            (false, false) => Runs::Idle,
        };
        self.last
    }
}

/// The task-group hierarchy as a fluid (GPS) model of one CPU, for checking
/// [`crate::fair::group`]: each queued entity at each level gets its weight's
/// fraction of what its level gets, a group entity's weight being its
/// group's shares (on one CPU all of a group's load is local, so
/// `calc_group_shares` gives the shares themselves), and a group whose
/// subtree holds no runnable task taking nothing. A task's long-run share of
/// the CPU is the product of its fractions from its group up to the root.
/// No EEVDF, no lag, no ticks: what the tree must converge to.
#[derive(Clone, Debug, Default)]
pub struct GroupModel {
    /// Each group's parent and shares, by group id; index 0 is the root.
    pub groups: Vec<(u16, u64)>,
    /// Each runnable task's group and weight.
    pub tasks: Vec<(u16, u64)>,
}

impl GroupModel {
    /// Only the root.
    pub fn new() -> Self {
        GroupModel {
            groups: alloc::vec![(0, 0)],
            tasks: Vec::new(),
        }
    }

    /// A group under `parent` with `cpu.weight` `weight`; returns its index.
    pub fn group(&mut self, parent: u16, weight: u32) -> u16 {
        self.groups
            .push((parent, crate::fair::group::weight_to_shares(weight)));
        (self.groups.len() - 1) as u16
    }

    /// A runnable task of `weight` in group `g`; returns its index.
    pub fn task(&mut self, g: u16, weight: u64) -> usize {
        self.tasks.push((g, weight));
        self.tasks.len() - 1
    }

    fn busy(&self, g: u16) -> bool {
        self.tasks.iter().any(|&(tg, _)| self.under(tg, g))
    }

    /// Is group `a` group `g` or below it?
    fn under(&self, mut a: u16, g: u16) -> bool {
        loop {
            if a == g {
                return true;
            }
            if a == 0 {
                return false;
            }
            a = self.groups[a as usize].0;
        }
    }

    /// Σ weight of what is queued in group `g`'s runqueue: its tasks and its
    /// busy child groups' shares.
    fn level_load(&self, g: u16) -> u64 {
        let t: u64 = self.tasks.iter().filter(|t| t.0 == g).map(|t| t.1).sum();
        let c: u64 = (1..self.groups.len())
            .filter(|&c| self.groups[c].0 == g && self.busy(c as u16))
            .map(|c| self.groups[c].1)
            .sum();
        t + c
    }

    /// Each task's fraction of the CPU, in task order.
    pub fn shares(&self) -> Vec<f64> {
        self.tasks
            .iter()
            .map(|&(mut g, w)| {
                let mut f = w as f64 / self.level_load(g) as f64;
                while g != 0 {
                    let (p, sh) = self.groups[g as usize];
                    f *= sh as f64 / self.level_load(p) as f64;
                    g = p;
                }
                f
            })
            .collect()
    }
}
