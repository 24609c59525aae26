//! EEVDF: the fair scheduling class (SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE).
//!
//! # The algorithm
//!
//! Earliest Eligible Virtual Deadline First (Stoica and Abdel-Wahab, TR-95-22,
//! 1995; Stoica et al., RTSS 1996), as Linux runs it since 6.6 and in the form of
//! Linux 6.19 (`kernel/sched/fair.c`; the sources are listed in
//! `docs/references.md`, the decision table and the conformance checklist
//! in `docs/design/scheduler.md`).
//!
//! Every entity i has a weight w_i and a virtual runtime v_i that advances by
//! `δ · 1024 / w_i` while it runs ([`calc_delta_fair`]). The runqueue's virtual
//! time V is the weighted average of the queued entities' virtual runtimes:
//!
//! ```text
//!     V = Σ w_i·v_i / Σ w_i            lag_i = w_i·(V − v_i),  Σ lag_i = 0
//! ```
//!
//! An entity is *eligible* when its lag is non-negative (v_i ≤ V): it has
//! received no more than its share. Each entity also asks for a request of r_i
//! nanoseconds (its slice), which gives it a *virtual deadline*
//! `d_i = v_i + r_i · 1024 / w_i`. EEVDF runs the eligible entity with the
//! earliest virtual deadline; a shorter slice means an earlier deadline, hence
//! lower latency, at the same long-run share.
//!
//! ## Keeping V cheap and exact
//!
//! V is kept incrementally relative to a zero point v0 (`zero_vruntime`):
//! `sum_w_vruntime = Σ (v_i − v0)·w_i` and `sum_weight = Σ w_i` over the tree;
//! the running entity (outside the tree) is added on the fly. Insert and erase
//! add and subtract one term; moving v0 by Δ subtracts Δ·Σw. We move v0 to V at
//! every tick and whenever V is recomputed for a placement, which keeps the keys
//! small (Linux 7.0's fix, recommended by the reference). The sums are `i128`, so
//! no weight or key range can overflow them. Eligibility is tested without a
//! division: `v ≤ V ⇔ Σ(v_i − v0)w_i ≥ (v − v0)·Σw_i`. `avg_vruntime()` floors
//! the division, biasing V left, so an entity placed at V is always eligible.
//!
//! ## O(log n) pick
//!
//! The timeline ([`tree::Timeline`], a B+tree) is ordered by deadline and every
//! internal entry carries the minimum vruntime of its subtree. If the leftmost
//! (earliest-deadline) entity is eligible it is the answer (the O(1) fast path;
//! its vruntime is read from the tree's first leaf). Otherwise
//! `Timeline::first_eligible` descends from the root taking, at each
//! level, the first entry whose subtree minimum vruntime is eligible: that
//! subtree holds an eligible entity, and everything before it is ineligible.
//! For the search the eligibility test is divided out once:
//! `v ≤ V ⇔ v − v0 ≤ ⌊Σ(v_i − v0)w_i / Σw_i⌋`, so each step is an `i64`
//! comparison. One node per level: O(log n).
//!
//! ## Placement and lag
//!
//! On dequeue the lag `vlag = V − v` is captured, clamped to
//! `±calc_delta_fair(max_slice + tick)`, `max_slice` being the longest slice
//! queued (Linux 7.2's bound; 6.18/6.19 used the entity's own
//! `max(2·slice, tick)`; EEVDF's steady-state bound is
//! −r_max < lag < max(r_max, q)). On wakeup (PLACE_LAG) the entity is
//! placed at `v = V − vlag·(W + w)/W`: inserting it drags V toward it, and the
//! pre-scaling makes its lag right after the insert equal to the saved vlag.
//! A new task gets half a slice for its first deadline (PLACE_DEADLINE_INITIAL);
//! a migrating task keeps its deadline relative to v (PLACE_REL_DEADLINE).
//!
//! ## Preemption
//!
//! The running entity is protected (RUN_TO_PARITY) until it has run
//! min(own slice, shortest queued slice) of virtual time or reached its
//! deadline; after that every tick asks for a repick ([`FairRq::update_curr`]).
//! Wakeups go through the 6.19 decision sequence in
//! [`FairRq::check_preempt_wakeup`], including PREEMPT_SHORT, the BATCH/IDLE rows
//! and Mel Gorman's EEVDF-aligned NEXT_BUDDY with `preempt_sync`.
//!
//! ## Delayed dequeue
//!
//! A task that blocks while ineligible (negative lag) stays in the tree, marked
//! `sched_delayed`, until V passes it; it is then dequeued when picked. So it
//! cannot shed its debt by sleeping briefly (DELAY_DEQUEUE; DELAY_ZERO clips
//! positive lag at that point).

pub mod group;
pub mod load_avg;
pub mod tree;

use crate::config::SchedConfig;
use crate::features::Feature;
use crate::flags::{DequeueFlags, EnqueueFlags, WakeFlags};
use crate::slots::Slot;
use crate::task::{Policy, SchedTask, NIL};
use crate::weight::{calc_delta_fair, LoadWeight, NICE_0_LOAD};
use load_avg::AvgAction;
use tree::{vbefore, vmin, Timeline};

/// Why a fair wakeup did or did not preempt: the rows of 6.19's
/// `check_preempt_wakeup_fair`, numbered as in `docs/design/scheduler.md`
/// ("The wakeup decision").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairWakeup {
    /// Row 1: the wakee is the running task.
    SameTask,
    /// Row 3: an immediate reschedule is already pending.
    AlreadyPending,
    /// Row 4: NO_WAKEUP_PREEMPTION.
    Disabled,
    /// Row 6: a SCHED_IDLE current is preempted by a non-idle wakee (protection cancelled).
    IdleCurrent,
    /// Row 7: the wakee is SCHED_IDLE and the current task is not.
    IdleWakee,
    /// Row 8: BATCH and IDLE wakees never preempt.
    NotNormalPolicy,
    /// Row 11: a fork or a still-delayed wakee.
    ForkOrDelayed,
    /// NEXT_BUDDY_INELIGIBLE_RESCHED (6.19-rc1..rc6): the waker is no longer eligible.
    IneligibleWaker,
    /// Row 12: NEXT_BUDDY sync wakeup, waker ran long enough and the wakee's deadline is earlier.
    SyncResched,
    /// Row 12: NEXT_BUDDY sync wakeup that does not preempt (the buddy runs when the waker sleeps).
    SyncNone,
    /// PICK: the wakee is what EEVDF would pick now. `short`: PREEMPT_SHORT override.
    Picked {
        /// The pick ignored the running task's protection (PREEMPT_SHORT).
        short: bool,
    },
    /// PICK: the wakee is not the pick; protection shrinks to the shortest slice.
    NotPicked {
        /// The pick ignored the running task's protection (PREEMPT_SHORT).
        short: bool,
    },
}

/// Where [`FairRq::check_preempt_wakeup`] stopped: a decided row, or the PICK
/// step, which the runqueue completes (it may finish delayed dequeues on the
/// way, `pick_next_entity`) with [`FairRq::wakeup_pick_done`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeupStep {
    /// A row before PICK decided.
    Done(FairWakeup),
    /// The PICK step is next; `short`: PREEMPT_SHORT (the pick ignores the
    /// running task's protection).
    Pick {
        /// The pick ignores the running task's protection (PREEMPT_SHORT).
        short: bool,
    },
}

impl FairWakeup {
    /// Does this outcome preempt the running task?
    pub fn preempts(self) -> bool {
        matches!(
            self,
            FairWakeup::IdleCurrent
                | FairWakeup::IneligibleWaker
                | FairWakeup::SyncResched
                | FairWakeup::Picked { .. }
        )
    }
}

/// How a pick was made (counted, as in the Linux commit that added the fast path).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PickStats {
    /// Only one entity queued.
    pub single: u64,
    /// The eligible next buddy (PICK_BUDDY).
    pub buddy: u64,
    /// The protected running entity (RUN_TO_PARITY).
    pub protect: u64,
    /// The eligible leftmost (O(1) fast path).
    pub fast: u64,
    /// The O(log n) heap search.
    pub heap: u64,
}

/// A fair runqueue (Linux's `cfs_rq`): a CPU's root one, or a task group's
/// on that CPU ([`group`]).
///
/// Its entities are slots of the owning runqueue's arena (`ts`, indexed by
/// [`Slot`]), not task ids: the runqueue translates.
#[derive(Clone, Debug)]
pub struct FairRq {
    pub(crate) timeline: Timeline,
    /// The running fair entity (outside the tree), or NIL.
    pub(crate) curr: u32,
    /// The next buddy, or NIL.
    pub(crate) next: u32,
    /// Entities accounted here: tree + running, delayed ones included.
    pub nr_queued: u32,
    /// Entities that are runnable (delayed ones excluded); in a CPU's root
    /// runqueue with task groups, the runnable tasks below each group entity
    /// instead of the entity (Linux's hierarchical count).
    pub h_nr_runnable: u32,
    /// Σ weight of the accounted entities.
    pub load: u64,
    pub(crate) zero_vruntime: u64,
    pub(crate) sum_w_vruntime: i128,
    pub(crate) sum_weight: u64,
    /// The task clock of the last `update_rq_clock`.
    pub(crate) clock: u64,
    /// The CPU's PELT clock at that update (`rq_clock_pelt`,
    /// [`crate::pelt::PeltClock`]): what PELT updates here run on; `clock`
    /// itself on a CPU of full capacity.
    pub(crate) clock_pelt: u64,
    /// The CPU's capacity (`arch_scale_cpu_capacity`), 1..=1024: sizes a new
    /// task's first utilization.
    pub(crate) cpu_capacity: u32,
    /// `update_curr` asked for a (lazy) reschedule since the core last looked.
    pub(crate) resched: bool,
    /// Σ running time charged to fair entities here (what the fair server
    /// is charged from, [`crate::deadline::DlServer`]).
    pub sum_exec_ns: u64,
    /// Pick-path counters.
    pub pick_stats: PickStats,
    /// Pick-path counters of the wakeup decision's PICK step (the picks
    /// made with `count` = false): `protect` counts the wakeups the running
    /// entity's slice protection kept (diagnostic; decides nothing).
    pub wakeup_pick_stats: PickStats,
    /// Load tracking (PELT, Linux's `cfs_rq->avg`; [`load_avg`]).
    pub(crate) avg: crate::pelt::SchedAvg,
    /// The CPU this runqueue belongs to (what entities attach to).
    pub(crate) cpu: u32,
    /// Load attached here or detached since the group entity above took it
    /// over (Linux's `cfs_rq->propagate` and `prop_runnable_sum`, unweighted
    /// `load_sum` units): moved up by [`crate::fair::group`]'s
    /// `propagate_entity_load_avg`; unused in the root runqueue.
    pub(crate) propagate: bool,
    /// See [`Self::propagate`].
    pub(crate) prop_runnable_sum: i64,
}

#[inline]
fn se(ts: &[SchedTask], i: u32) -> &crate::task::FairEntity {
    &ts[i as usize].se
}

#[inline]
fn sem(ts: &mut [SchedTask], i: u32) -> &mut crate::task::FairEntity {
    &mut ts[i as usize].se
}

#[inline]
fn is_idle_policy(ts: &[SchedTask], i: u32) -> bool {
    ts[i as usize].has_idle_policy()
}

/// Floor division of a signed sum by a positive load, with an i64 fast path.
#[inline]
fn floor_div(num: i128, den: i128) -> i128 {
    let adj = if num < 0 { num - (den - 1) } else { num };
    match (i64::try_from(adj), i64::try_from(den)) {
        (Ok(a), Ok(d)) => (a / d) as i128,
        _ => adj / den,
    }
}

impl Default for FairRq {
    fn default() -> Self {
        Self::new()
    }
}

impl FairRq {
    /// An empty runqueue; allocates nothing. Entities are the owning
    /// runqueue's slots ([`crate::slots`]); it sizes the tree for them with
    /// [`FairRq::try_reserve`].
    pub fn new() -> Self {
        FairRq {
            timeline: Timeline::new(),
            curr: NIL,
            next: NIL,
            nr_queued: 0,
            h_nr_runnable: 0,
            load: 0,
            zero_vruntime: 0,
            sum_w_vruntime: 0,
            sum_weight: 0,
            clock: 0,
            clock_pelt: 0,
            cpu_capacity: crate::pelt::SCHED_CAPACITY_SCALE as u32,
            resched: false,
            sum_exec_ns: 0,
            pick_stats: PickStats::default(),
            wakeup_pick_stats: PickStats::default(),
            avg: crate::pelt::SchedAvg::default(),
            cpu: 0,
            propagate: false,
            prop_runnable_sum: 0,
        }
    }

    /// Reserves the tree for slots below `slots` (see [`Timeline::try_reserve`]).
    pub fn try_reserve(&mut self, slots: usize) -> Result<(), alloc::collections::TryReserveError> {
        self.timeline.try_reserve(slots)
    }

    /// Makes slots below `slots` usable, within the reservation.
    pub fn add_slots(&mut self, slots: usize) {
        self.timeline.add_slots(slots);
    }

    /// The running fair entity, if any.
    pub fn curr(&self) -> Option<Slot> {
        (self.curr != NIL).then_some(Slot(self.curr))
    }

    /// The next buddy, if any.
    pub fn next_buddy(&self) -> Option<Slot> {
        (self.next != NIL).then_some(Slot(self.next))
    }

    /// The tree (for dumps and invariant checks).
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    #[inline]
    fn curr_on_rq(&self, ts: &[SchedTask]) -> Option<u32> {
        (self.curr != NIL && se(ts, self.curr).on_rq).then_some(self.curr)
    }

    #[inline]
    fn key(&self, v: u64) -> i128 {
        v.wrapping_sub(self.zero_vruntime) as i64 as i128
    }

    /// Σ(v_i − v0)·w_i and Σw_i including the running entity.
    ///
    /// Σw is summed in `i64` and widened: a load is at most 2^32 entities of
    /// weight 88761 (< 2^49), so nothing is lost, and the products
    /// `key · load` that follow are then known to be i64 × i64, one
    /// widening multiply instead of a full 128-bit one.
    #[inline]
    fn sums(&self, ts: &[SchedTask]) -> (i128, i128) {
        let mut avg = self.sum_w_vruntime;
        debug_assert!(self.sum_weight < 1 << 62, "load beyond any task count");
        let mut load = self.sum_weight as i64;
        if let Some(c) = self.curr_on_rq(ts) {
            let w = se(ts, c).load.weight;
            avg += self.key(se(ts, c).vruntime) * i128::from(w);
            load += i64::from(w);
        }
        (avg, i128::from(load))
    }

    /// [`Self::sums`] with the running entity on the runqueue, `c`
    /// ([`Self::curr_on_rq`]), already known. (`sums` keeps its own body:
    /// written as `sums_with(ts, self.curr_on_rq(ts))` it cost the host's
    /// LTO build 5.5 instructions a tick-and-pick cycle, in `pick_eevdf`'s
    /// register allocation.)
    #[inline(always)]
    fn sums_with(&self, ts: &[SchedTask], c: Option<u32>) -> (i128, i128) {
        let mut avg = self.sum_w_vruntime;
        debug_assert!(self.sum_weight < 1 << 62, "load beyond any task count");
        let mut load = self.sum_weight as i64;
        if let Some(c) = c {
            let w = se(ts, c).load.weight;
            avg += self.key(se(ts, c).vruntime) * i128::from(w);
            load += i64::from(w);
        }
        (avg, i128::from(load))
    }

    /// V, the weighted average vruntime (floored), including the running entity.
    /// With nothing queued it is the zero point.
    pub fn avg_vruntime(&self, ts: &[SchedTask]) -> u64 {
        self.avg_vruntime_with(ts, self.curr_on_rq(ts))
    }

    /// [`Self::avg_vruntime`] with [`Self::curr_on_rq`] already known.
    #[inline(always)]
    fn avg_vruntime_with(&self, ts: &[SchedTask], c: Option<u32>) -> u64 {
        let (avg, load) = self.sums_with(ts, c);
        let delta = if load > 0 { floor_div(avg, load) } else { 0 };
        self.zero_vruntime.wrapping_add(delta as i64 as u64)
    }

    /// Is virtual time `v` eligible (v ≤ V)? Exact, no division.
    #[inline]
    pub fn vruntime_eligible(&self, ts: &[SchedTask], v: u64) -> bool {
        let (avg, load) = self.sums(ts);
        avg >= self.key(v) * load
    }

    /// Is the entity eligible (lag ≥ 0)?
    #[inline]
    pub fn entity_eligible(&self, ts: &[SchedTask], id: Slot) -> bool {
        self.vruntime_eligible(ts, se(ts, id.0).vruntime)
    }

    /// Moves the zero point to V (Linux 7.0's `avg_vruntime()` side effect).
    fn update_zero_vruntime(&mut self, ts: &[SchedTask]) {
        let v = self.avg_vruntime(ts);
        let delta = self.key(v);
        self.sum_w_vruntime -= delta * i128::from(self.sum_weight as i64);
        self.zero_vruntime = v;
    }

    fn enqueue_tree(&mut self, ts: &mut [SchedTask], i: u32) {
        let e = *se(ts, i);
        self.sum_w_vruntime += self.key(e.vruntime) * e.load.weight as i128;
        self.sum_weight += e.load.weight as u64;
        self.timeline
            .insert(Slot(i), e.deadline, e.vruntime, e.slice_ns);
    }

    fn dequeue_tree(&mut self, ts: &mut [SchedTask], i: u32) {
        self.timeline.erase(Slot(i));
        let e = se(ts, i);
        self.sum_w_vruntime -= self.key(e.vruntime) * e.load.weight as i128;
        self.sum_weight -= e.load.weight as u64;
    }

    /// The shortest slice among the running entity and the tree (`u64::MAX` if none).
    pub fn min_slice(&self, ts: &[SchedTask]) -> u64 {
        let mut s = self.timeline.min_slice().unwrap_or(u64::MAX);
        if let Some(c) = self.curr_on_rq(ts) {
            s = s.min(se(ts, c).slice_ns);
        }
        s
    }

    /// The longest slice among the running entity and the tree (0 if none):
    /// `cfs_rq_max_slice`.
    #[inline]
    pub fn max_slice(&self, ts: &[SchedTask]) -> u64 {
        self.max_slice_with(ts, self.curr_on_rq(ts))
    }

    /// [`Self::max_slice`] with [`Self::curr_on_rq`] already known.
    #[inline(always)]
    fn max_slice_with(&self, ts: &[SchedTask], c: Option<u32>) -> u64 {
        let mut s = self.timeline.max_slice().unwrap_or(0);
        if let Some(c) = c {
            s = s.max(se(ts, c).slice_ns);
        }
        s
    }

    /// Linux 7.2's lag clamp for entity `e` of this runqueue: the longest
    /// queued slice plus a tick, in `e`'s virtual time,
    /// `calc_delta_fair(cfs_rq_max_slice() + TICK_NSEC)` ("sched/fair:
    /// Increase max lag clamping", lkml
    /// 20250613140514.2781138-3-vincent.guittot@linaro.org). It replaced
    /// `max(2·slice, tick)` of the entity's own slice: a short-slice
    /// entity among long-slice ones may now carry as much lag as they.
    #[inline]
    pub fn lag_limit(
        &self,
        ts: &[SchedTask],
        cfg: &SchedConfig,
        e: &crate::task::FairEntity,
    ) -> i64 {
        self.lag_limit_with(ts, cfg, e, self.curr_on_rq(ts))
    }

    /// [`Self::lag_limit`] with [`Self::curr_on_rq`] already known.
    #[inline(always)]
    fn lag_limit_with(
        &self,
        ts: &[SchedTask],
        cfg: &SchedConfig,
        e: &crate::task::FairEntity,
        c: Option<u32>,
    ) -> i64 {
        calc_delta_fair(self.max_slice_with(ts, c) + cfg.tick_ns(), e.load) as i64
    }

    /// `entity_lag`: clamp(V − v, ±limit).
    #[inline]
    fn entity_lag(
        &self,
        ts: &[SchedTask],
        cfg: &SchedConfig,
        e: &crate::task::FairEntity,
        v_avg: u64,
    ) -> i64 {
        self.entity_lag_with(ts, cfg, e, v_avg, self.curr_on_rq(ts))
    }

    /// [`Self::entity_lag`] with [`Self::curr_on_rq`] already known.
    #[inline(always)]
    fn entity_lag_with(
        &self,
        ts: &[SchedTask],
        cfg: &SchedConfig,
        e: &crate::task::FairEntity,
        v_avg: u64,
        c: Option<u32>,
    ) -> i64 {
        let limit = self.lag_limit_with(ts, cfg, e, c);
        (v_avg.wrapping_sub(e.vruntime) as i64).clamp(-limit, limit)
    }

    /// `update_entity_lag` (Linux 7.2): vlag = [`Self::entity_lag`], except
    /// that a delayed entity's lag may not have become more negative since its
    /// dequeue was delayed (`max` with the lag saved then) and, with
    /// DELAY_ZERO, may not be positive. Returns whether the saved vlag differs
    /// from V − v, i.e. whether a re-queued entity must be placed again.
    fn update_entity_lag(&self, ts: &mut [SchedTask], cfg: &SchedConfig, i: u32) -> bool {
        // V and the clamp's longest slice both count the running entity:
        // looked up once for both (`entity_lag` with it known).
        let c = self.curr_on_rq(ts);
        let v_avg = self.avg_vruntime_with(ts, c);
        let e = se(ts, i);
        let mut vlag = self.entity_lag_with(ts, cfg, e, v_avg, c);
        if e.sched_delayed {
            vlag = vlag.max(e.vlag);
            if cfg.feat(Feature::DelayZero) {
                vlag = vlag.min(0);
            }
        }
        let moved = v_avg.wrapping_sub(vlag as u64) != e.vruntime;
        sem(ts, i).vlag = vlag;
        moved
    }

    /// Issues a new deadline once the request is consumed (v ≥ deadline).
    fn update_deadline(&self, ts: &mut [SchedTask], cfg: &SchedConfig, i: u32) -> bool {
        let e = sem(ts, i);
        if vbefore(e.vruntime, e.deadline) {
            return false;
        }
        if !e.custom_slice {
            e.slice_ns = cfg.tunables.base_slice_ns();
        }
        e.deadline = e.vruntime.wrapping_add(calc_delta_fair(e.slice_ns, e.load));
        true
    }

    /// Charges the running entity for the time since its last accounting and
    /// decides whether it should give way: its request is consumed or its slice
    /// protection has ended. A lone entity never asks. Sets `self.resched` (the
    /// core turns it into a lazy reschedule) and returns it.
    pub fn update_curr(&mut self, ts: &mut [SchedTask], cfg: &SchedConfig) -> bool {
        let c = self.curr;
        if c == NIL {
            return false;
        }
        let now = self.clock;
        let e = sem(ts, c);
        let delta = now.wrapping_sub(e.exec_start) as i64;
        if delta <= 0 {
            return false;
        }
        e.exec_start = now;
        e.sum_exec_runtime += delta as u64;
        self.sum_exec_ns += delta as u64;
        e.vruntime = e
            .vruntime
            .wrapping_add(calc_delta_fair(delta as u64, e.load));
        let resched = self.update_deadline(ts, cfg, c);
        if self.nr_queued == 1 {
            return false;
        }
        if resched || !Self::protect_slice(ts, c) {
            self.clear_buddies(c);
            self.resched = true;
            return true;
        }
        false
    }

    // ---- slice protection (RUN_TO_PARITY) ----

    fn set_protect_slice(&self, ts: &mut [SchedTask], cfg: &SchedConfig, i: u32) {
        let q = if cfg.feat(Feature::RunToParity) {
            self.min_slice(ts)
        } else {
            cfg.tunables.normalized_base_slice_ns()
        };
        let e = sem(ts, i);
        let q = q.min(e.slice_ns);
        e.vprot = e.deadline;
        if q != e.slice_ns {
            e.vprot = vmin(e.vprot, e.vruntime.wrapping_add(calc_delta_fair(q, e.load)));
        }
    }

    /// Is the entity still inside its protected run (v < vprot)?
    #[inline]
    pub fn protect_slice(ts: &[SchedTask], i: u32) -> bool {
        let e = se(ts, i);
        (e.vprot.wrapping_sub(e.vruntime) as i64) > 0
    }

    fn cancel_protect_slice(ts: &mut [SchedTask], i: u32) {
        if Self::protect_slice(ts, i) {
            let e = sem(ts, i);
            e.vprot = e.vruntime;
        }
    }

    fn update_protect_slice(&self, ts: &mut [SchedTask], i: u32) {
        let q = self.min_slice(ts);
        let e = sem(ts, i);
        if q == u64::MAX {
            return;
        }
        e.vprot = vmin(e.vprot, e.vruntime.wrapping_add(calc_delta_fair(q, e.load)));
    }

    // ---- buddies ----

    fn clear_buddies(&mut self, i: u32) {
        if self.next == i {
            self.next = NIL;
        }
    }

    fn set_next_buddy(&mut self, ts: &[SchedTask], i: u32) {
        if is_idle_policy(ts, i) || se(ts, i).sched_delayed {
            return;
        }
        self.next = i;
    }

    /// `set_next_buddy()` at one level of a sleeping grouped task's
    /// ancestors (Linux's `dequeue_entities()`): nominates the group entity
    /// `i`; false when it is refused (an idle entity), which ends the walk
    /// up, as Linux's loop returns there.
    pub(crate) fn nominate_sleepers_group(&mut self, ts: &[SchedTask], i: u32) -> bool {
        if is_idle_policy(ts, i) || se(ts, i).sched_delayed {
            return false;
        }
        self.next = i;
        true
    }

    /// Mel Gorman's `set_preempt_buddy`: keep an existing buddy whose deadline is
    /// earlier than the wakee's; otherwise nominate the wakee.
    fn set_preempt_buddy(&mut self, ts: &[SchedTask], pse: u32) -> bool {
        if self.next != NIL && vbefore(se(ts, self.next).deadline, se(ts, pse).deadline) {
            return false;
        }
        self.set_next_buddy(ts, pse);
        true
    }

    // ---- placement ----

    /// Places an entity that is about to be queued: v from its saved lag, and a
    /// deadline (relative one restored, half a slice for a new task).
    fn place_entity(&self, ts: &mut [SchedTask], cfg: &SchedConfig, i: u32, flags: EnqueueFlags) {
        {
            let e = sem(ts, i);
            if !e.custom_slice {
                e.slice_ns = cfg.tunables.base_slice_ns();
            }
        }
        let v_avg = self.avg_vruntime(ts);
        let (vlag, w, slice) = {
            let e = se(ts, i);
            (e.vlag, e.load.weight as i128, e.slice_ns)
        };
        let mut vslice = calc_delta_fair(slice, se(ts, i).load);
        let mut lag: i128 = 0;
        if cfg.feat(Feature::PlaceLag) && self.nr_queued > 0 && vlag != 0 {
            let mut load = self.sum_weight as i128;
            if let Some(c) = self.curr_on_rq(ts) {
                load += se(ts, c).load.weight as i128;
            }
            lag = vlag as i128 * (load + w);
            if load == 0 {
                load = 1;
            }
            lag /= load;
        }
        let e = sem(ts, i);
        e.vruntime = v_avg.wrapping_sub(lag as i64 as u64);
        if e.rel_deadline {
            e.deadline = e.deadline.wrapping_add(e.vruntime);
            e.rel_deadline = false;
            return;
        }
        if cfg.feat(Feature::PlaceDeadlineInitial) && flags.contains(EnqueueFlags::INITIAL) {
            vslice /= 2;
        }
        e.deadline = e.vruntime.wrapping_add(vslice);
    }

    /// Accounts an entity on this runqueue and inserts it into the tree (unless
    /// it is the running entity being re-queued).
    pub fn enqueue_entity(
        &mut self,
        ts: &mut [SchedTask],
        cfg: &SchedConfig,
        id: Slot,
        flags: EnqueueFlags,
    ) {
        let i = id.0;
        if flags.contains(EnqueueFlags::DELAYED) {
            self.requeue_delayed_entity(ts, cfg, i);
            return;
        }
        let is_curr = self.curr == i;
        if is_curr {
            self.place_entity(ts, cfg, i, flags);
        }
        self.update_curr(ts, cfg);
        if flags.contains(EnqueueFlags::INITIAL) && se(ts, i).avg_cpu != self.cpu {
            self.post_init_entity_util_avg(sem(ts, i));
        }
        self.update_load_avg(ts, cfg, i, AvgAction::Attach);
        if !is_curr {
            self.place_entity(ts, cfg, i, flags);
        }
        if flags.contains(EnqueueFlags::MIGRATED) {
            sem(ts, i).exec_start = 0;
        }
        self.load += se(ts, i).load.weight as u64;
        self.nr_queued += 1;
        self.h_nr_runnable += 1;
        if !is_curr {
            self.enqueue_tree(ts, i);
        }
        let e = sem(ts, i);
        e.on_rq = true;
        e.sched_delayed = false;
    }

    /// `requeue_delayed_entity` (Linux 7.2): a delayed entity woke before it
    /// was picked. It keeps its place unless [`Self::update_entity_lag`]
    /// changed its lag (the clamp, the lag it had when its dequeue was delayed
    /// if it now owes more, or DELAY_ZERO's zero if it is now owed); then it is
    /// placed again at that lag. The running entity is charged first, as the
    /// enqueue of a sleeper charges it.
    fn requeue_delayed_entity(&mut self, ts: &mut [SchedTask], cfg: &SchedConfig, i: u32) {
        debug_assert!(se(ts, i).sched_delayed && se(ts, i).on_rq);
        self.update_curr(ts, cfg);
        if self.update_entity_lag(ts, cfg, i) {
            self.nr_queued -= 1;
            if self.curr != i {
                self.dequeue_tree(ts, i);
            }
            self.place_entity(ts, cfg, i, EnqueueFlags::empty());
            if self.curr != i {
                self.enqueue_tree(ts, i);
            }
            self.nr_queued += 1;
        }
        self.update_load_avg(ts, cfg, i, AvgAction::Update);
        sem(ts, i).sched_delayed = false;
        self.h_nr_runnable += 1;
    }

    /// Removes an entity. Returns false when the dequeue is deferred
    /// (DELAY_DEQUEUE: a sleeper with negative lag stays queued, delayed).
    pub fn dequeue_entity(
        &mut self,
        ts: &mut [SchedTask],
        cfg: &SchedConfig,
        id: Slot,
        flags: DequeueFlags,
    ) -> bool {
        let i = id.0;
        let sleep = flags.contains(DequeueFlags::SLEEP);
        self.update_curr(ts, cfg);
        self.clear_buddies(i);
        if flags.contains(DequeueFlags::DELAYED) {
            debug_assert!(se(ts, i).sched_delayed);
        } else {
            let delay = sleep && !flags.contains(DequeueFlags::SPECIAL);
            if cfg.feat(Feature::DelayDequeue) && delay && !self.entity_eligible(ts, id) {
                // The lag it owes now: its lag may only shrink while it waits.
                self.update_entity_lag(ts, cfg, i);
                self.update_load_avg(ts, cfg, i, AvgAction::Update);
                sem(ts, i).sched_delayed = true;
                self.h_nr_runnable -= 1;
                return false;
            }
        }
        let action = if flags.contains(DequeueFlags::MIGRATING) {
            AvgAction::Detach
        } else {
            AvgAction::Update
        };
        self.update_load_avg(ts, cfg, i, action);
        self.update_entity_lag(ts, cfg, i);
        if cfg.feat(Feature::PlaceRelDeadline) && !sleep {
            let e = sem(ts, i);
            e.deadline = e.deadline.wrapping_sub(e.vruntime);
            e.rel_deadline = true;
        }
        if self.curr != i {
            self.dequeue_tree(ts, i);
        }
        let was_delayed = se(ts, i).sched_delayed;
        let e = sem(ts, i);
        e.on_rq = false;
        self.load -= e.load.weight as u64;
        self.nr_queued -= 1;
        if flags.contains(DequeueFlags::DELAYED) || was_delayed {
            // finish_delayed_dequeue_entity (its vlag was bounded above, by
            // update_entity_lag, while it was still marked delayed)
            e.sched_delayed = false;
        } else {
            self.h_nr_runnable -= 1;
        }
        true
    }

    // ---- pick ----

    /// EEVDF's pick (`__pick_eevdf`): the eligible entity with the earliest
    /// virtual deadline, honouring, when `protect`, an eligible next buddy
    /// (PICK_BUDDY) and the running entity's slice protection. O(log n); O(1) when the
    /// leftmost entity is eligible. `count` records the path taken in
    /// `pick_stats`; without it, in `wakeup_pick_stats` (the wakeup
    /// decision's picks).
    pub fn pick_eevdf(
        &mut self,
        ts: &[SchedTask],
        cfg: &SchedConfig,
        protect: bool,
        count: bool,
    ) -> Option<Slot> {
        let leftmost = self.timeline.leftmost;
        let mut curr = self.curr;
        macro_rules! stat {
            ($f:ident) => {
                if count {
                    self.pick_stats.$f += 1;
                } else {
                    self.wakeup_pick_stats.$f += 1;
                }
            };
        }
        if self.nr_queued == 1 {
            stat!(single);
            let c = self.curr_on_rq(ts);
            return c.or((leftmost != NIL).then_some(leftmost)).map(Slot);
        }
        // The buddy only for a protecting pick: a PREEMPT_SHORT wakeup check
        // (protect = false) looks past it (7.0, 78cde54ea5f0 "sched/eevdf:
        // Clear buddies for preempt_short").
        if cfg.feat(Feature::PickBuddy)
            && protect
            && self.next != NIL
            && self.vruntime_eligible(ts, se(ts, self.next).vruntime)
        {
            stat!(buddy);
            return Some(Slot(self.next));
        }
        if curr != NIL
            && (!se(ts, curr).on_rq || !self.vruntime_eligible(ts, se(ts, curr).vruntime))
        {
            curr = NIL;
        }
        if curr != NIL && protect && Self::protect_slice(ts, curr) {
            stat!(protect);
            return Some(Slot(curr));
        }
        // v ≤ V ⇔ (v − v0)·Σw ≤ Σ(v_i − v0)w_i. The leftmost's vruntime is read
        // from the tree's first leaf, not its task (usually a cache miss).
        let (avg, load) = self.sums(ts);
        let mut best = if leftmost != NIL && avg >= self.key(self.timeline.first_vruntime()) * load
        {
            stat!(fast);
            leftmost
        } else {
            stat!(heap);
            // Heap search. With Σw > 0 the test is (v − v0) ≤ ⌊Σ(v_i − v0)w_i / Σw⌋,
            // so one division up front turns every test into an i64 comparison.
            let bound = if load > 0 {
                floor_div(avg, load)
            } else if avg >= 0 {
                i128::MAX
            } else {
                i128::MIN
            };
            let zero = self.zero_vruntime;
            match i64::try_from(bound) {
                Ok(b) => self
                    .timeline
                    .first_eligible(|v| v.wrapping_sub(zero) as i64 <= b),
                // Beyond every key: all eligible, or none.
                Err(_) if bound > 0 => leftmost,
                Err(_) => NIL,
            }
        };
        if best == NIL || (curr != NIL && vbefore(se(ts, curr).deadline, se(ts, best).deadline)) {
            best = curr;
        }
        if best == NIL {
            // Cannot happen (the minimum-vruntime entity is always eligible);
            // fall back to the earliest deadline rather than idling.
            best = if leftmost != NIL {
                leftmost
            } else {
                self.curr_on_rq(ts).unwrap_or(NIL)
            };
        }
        (best != NIL).then_some(Slot(best))
    }

    /// Takes the running entity's place back in the tree (if it is still queued).
    ///
    /// Always inlined: the task groups' walk (`rq/group.rs`) is a second,
    /// cold caller beside `Rq::put_prev_task`, and with two callers it was
    /// no longer inlined there (8 more instructions per switch).
    #[inline(always)]
    pub fn put_prev_entity(&mut self, ts: &mut [SchedTask], cfg: &SchedConfig, id: Slot) {
        let i = id.0;
        if se(ts, i).on_rq {
            self.update_curr(ts, cfg);
            self.update_load_avg(ts, cfg, i, AvgAction::Update);
            self.enqueue_tree(ts, i);
        }
        debug_assert_eq!(self.curr, i);
        self.curr = NIL;
    }

    /// Makes `id` the newly picked running entity: out of the tree, its
    /// slice protection armed (`set_next_entity` with `first`).
    pub fn set_next_entity(&mut self, ts: &mut [SchedTask], cfg: &SchedConfig, id: Slot) {
        self.set_next_entity_as(ts, cfg, id, true);
    }

    /// Makes the running task's entity `id` the running entity again after
    /// a `sched_change` (an attribute change or a group move: Linux's
    /// `set_next_task(rq, p)`, i.e. `set_next_entity(.., first = false)`):
    /// the protection it had is kept, so a renice does not buy a running
    /// task a fresh protected run.
    pub fn set_next_entity_again(&mut self, ts: &mut [SchedTask], cfg: &SchedConfig, id: Slot) {
        self.set_next_entity_as(ts, cfg, id, false);
    }

    /// [`Self::set_next_entity`] (`first`) or
    /// [`Self::set_next_entity_again`]; inlined into each, so that the
    /// pick's path tests nothing more than before.
    #[inline(always)]
    fn set_next_entity_as(
        &mut self,
        ts: &mut [SchedTask],
        cfg: &SchedConfig,
        id: Slot,
        first: bool,
    ) {
        let i = id.0;
        self.clear_buddies(i);
        if se(ts, i).on_rq {
            self.dequeue_tree(ts, i);
            self.update_load_avg(ts, cfg, i, AvgAction::Update);
            if first {
                self.set_protect_slice(ts, cfg, i);
            }
        }
        debug_assert_eq!(self.curr, NIL);
        self.curr = i;
        let now = self.clock;
        let e = sem(ts, i);
        e.exec_start = now;
        e.prev_sum_exec_runtime = e.sum_exec_runtime;
    }

    /// How much wall time the running entity `i` needs to reach its virtual
    /// deadline, i.e. to consume its request: `(deadline − vruntime) ·
    /// weight / NICE_0_LOAD` ns. `None` when it is already past it.
    /// This is the delay Linux 7.x arms its hrtick for (`hrtick_start_fair`
    /// since "sched/eevdf: Fix HRTICK duration", commit 558c18d3fbb6); Linux
    /// then stretches it by the CPU's interrupt utilisation, which this crate
    /// does not track (a factor of 1).
    pub fn time_to_deadline_ns(ts: &[SchedTask], i: Slot) -> Option<u64> {
        let e = se(ts, i.0);
        let vdelta = e.deadline.wrapping_sub(e.vruntime) as i64;
        if vdelta < 0 {
            return None;
        }
        let ns = (vdelta as u128) * u128::from(e.load.weight) / u128::from(NICE_0_LOAD);
        Some(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// The tick: charge the running entity, pull the zero point along, and ask
    /// for a repick if its request is consumed or its protection ended.
    pub fn entity_tick(&mut self, ts: &mut [SchedTask], cfg: &SchedConfig) -> bool {
        let r = self.update_curr(ts, cfg);
        if self.curr != NIL {
            self.update_load_avg(ts, cfg, self.curr, AvgAction::Update);
        }
        self.update_zero_vruntime(ts);
        r
    }

    /// The 6.19 wakeup decision (`check_preempt_wakeup_fair`; the rows of [`FairWakeup`]):
    /// should the waking fair entity `pse` preempt the running fair entity?
    /// `need_resched_now`: an immediate reschedule is already pending (row 3).
    /// Up to the PICK step: that step is [`WakeupStep::Pick`], which the
    /// runqueue completes with [`Self::wakeup_pick_done`], since a pick that
    /// lands on a delayed entity dequeues it for good (a runqueue matter).
    pub fn check_preempt_wakeup(
        &mut self,
        ts: &mut [SchedTask],
        cfg: &SchedConfig,
        pse: Slot,
        wake_flags: WakeFlags,
        need_resched_now: bool,
    ) -> WakeupStep {
        let s = self.curr;
        let p = pse.0;
        if s == p {
            return WakeupStep::Done(FairWakeup::SameTask);
        }
        if need_resched_now {
            return WakeupStep::Done(FairWakeup::AlreadyPending);
        }
        if !cfg.feat(Feature::WakeupPreemption) {
            return WakeupStep::Done(FairWakeup::Disabled);
        }
        if s == NIL {
            // No fair entity is running (the core handles class differences);
            // treat as a pick against an empty current.
            return WakeupStep::Done(FairWakeup::Picked { short: false });
        }
        let cse_idle = is_idle_policy(ts, s);
        let pse_idle = is_idle_policy(ts, p);
        if cse_idle && !pse_idle {
            Self::cancel_protect_slice(ts, s);
            return WakeupStep::Done(FairWakeup::IdleCurrent);
        }
        if cse_idle != pse_idle {
            return WakeupStep::Done(FairWakeup::IdleWakee);
        }
        if ts[p as usize].params.policy != Policy::Normal {
            return WakeupStep::Done(FairWakeup::NotNormalPolicy);
        }
        self.update_curr(ts, cfg);
        let mut short = false;
        let mut sync_none = false;
        if cfg.feat(Feature::PreemptShort) && se(ts, p).slice_ns < se(ts, s).slice_ns {
            short = true;
        } else {
            if wake_flags.contains(WakeFlags::FORK) || se(ts, p).sched_delayed {
                return WakeupStep::Done(FairWakeup::ForkOrDelayed);
            }
            if cfg.feat(Feature::NextBuddyIneligibleResched)
                && !wake_flags.contains(WakeFlags::IRQ)
                && !self.vruntime_eligible(ts, se(ts, s).vruntime)
            {
                return WakeupStep::Done(FairWakeup::IneligibleWaker);
            }
            if cfg.feat(Feature::NextBuddy)
                && self.set_preempt_buddy(ts, p)
                && wake_flags.contains(WakeFlags::SYNC)
            {
                if self.preempt_sync(ts, cfg, wake_flags, p, s) {
                    return WakeupStep::Done(FairWakeup::SyncResched);
                }
                sync_none = true;
            }
        }
        if sync_none {
            return WakeupStep::Done(FairWakeup::SyncNone);
        }
        WakeupStep::Pick { short }
    }

    /// The PICK step of the wakeup decision, once [`Self::check_preempt_wakeup`]
    /// returned [`WakeupStep::Pick`] and the runqueue picked `nse` with
    /// [`Self::pick_eevdf`] (protect = `!short`), finishing the dequeue of
    /// every delayed entity that pick landed on (`pick_next_entity`, Linux 7.x
    /// since ac8e69e69363; `None`: the queue emptied). Preempts if the pick
    /// is the wakee `pse`; otherwise the running entity's protection shrinks
    /// to the shortest slice queued (RUN_TO_PARITY).
    pub fn wakeup_pick_done(
        &mut self,
        ts: &mut [SchedTask],
        cfg: &SchedConfig,
        pse: Slot,
        nse: Option<Slot>,
        short: bool,
    ) -> FairWakeup {
        let s = self.curr;
        if nse == Some(pse) {
            if short && s != NIL {
                Self::cancel_protect_slice(ts, s);
                self.clear_buddies(s);
            }
            return FairWakeup::Picked { short };
        }
        if cfg.feat(Feature::RunToParity) && s != NIL && se(ts, s).on_rq {
            self.update_protect_slice(ts, s);
        }
        FairWakeup::NotPicked { short }
    }

    /// `preempt_sync`: on a WF_SYNC wakeup, preempt when the wakee's deadline is
    /// earlier and the waker has run at least the migration cost (a quarter of
    /// it when `select_task_rq` chose this CPU). The waker's runtime is the time
    /// since its last accounting (6.19), or since its last pick with
    /// NEXT_BUDDY_SYNC_RUNTIME (what the NEXT_BUDDY rework's changelog describes:
    /// "throttled based on the accumulated runtime of the waker").
    fn preempt_sync(
        &self,
        ts: &[SchedTask],
        cfg: &SchedConfig,
        wf: WakeFlags,
        p: u32,
        s: u32,
    ) -> bool {
        let mut thr = cfg.tunables.migration_cost_ns();
        if wf.contains(WakeFlags::RQ_SELECTED) {
            thr /= 4;
        }
        let e = se(ts, s);
        let delta = if cfg.feat(Feature::NextBuddySyncRuntime) {
            e.sum_exec_runtime.saturating_sub(e.prev_sum_exec_runtime)
        } else {
            self.clock.saturating_sub(e.exec_start)
        };
        vbefore(se(ts, p).deadline, e.deadline) && delta >= thr
    }

    /// `yield_task_fair` (6.19): an eligible yielder forfeits the rest of its
    /// request: v = old deadline, and a new deadline one slice later. Not
    /// when the CPU holds no other runnable task: `rq_nr_running` is the
    /// whole CPU's count (Linux 7.2 tests `rq->nr_running == 1`, not this
    /// runqueue's), so a task alone in its group, or beside another class's
    /// tasks, forfeits too.
    pub fn yield_entity(&mut self, ts: &mut [SchedTask], cfg: &SchedConfig, rq_nr_running: u32) {
        let c = self.curr;
        if c == NIL || rq_nr_running <= 1 {
            return;
        }
        self.clear_buddies(c);
        self.update_curr(ts, cfg);
        if self.vruntime_eligible(ts, se(ts, c).vruntime) {
            let e = sem(ts, c);
            e.vruntime = e.deadline;
            e.deadline = e.deadline.wrapping_add(calc_delta_fair(e.slice_ns, e.load));
        }
    }

    /// Changes a queued (or sleeping) entity's weight in place, as Linux 7.2's
    /// `reweight_entity()` does for a group entity whose shares move: V stays
    /// where it is, and the entity keeps its lag, its deadline's distance from
    /// V and (while running inside it) its protected slice's end, each in
    /// real time, i.e. scaled by `w_old / w_new` in virtual time:
    /// `v' = V − vlag·w/w'`, `d' = V + (d − V)·w/w'`.
    ///
    /// Taking an entity out of the weighted average at its own lag and
    /// putting it back at the same real-time lag leaves the average where it
    /// was, so no placement (and no `place_entity()` lag inflation) is
    /// involved: the inflated placement of 6d71a9c61604 was reverted by
    /// 101f3498b4bd ("sched/fair: Revert 6d71a9c61604"), since `avg_vruntime()`
    /// already counts a queued running entity. Tasks do not come here: a
    /// task's nice change dequeues, reweights and enqueues it
    /// (`sched_change`), see `Rq::sched_setattr`.
    pub fn reweight_entity(
        &mut self,
        ts: &mut [SchedTask],
        cfg: &SchedConfig,
        id: Slot,
        lw: LoadWeight,
    ) {
        let i = id.0;
        let is_curr = self.curr == i;
        let on_rq = se(ts, i).on_rq;
        let mut v_avg = 0;
        let mut rel_vprot = false;
        if on_rq {
            self.update_curr(ts, cfg);
            v_avg = self.avg_vruntime(ts);
            let lag = self.entity_lag(ts, cfg, se(ts, i), v_avg);
            rel_vprot = is_curr && Self::protect_slice(ts, i);
            let e = sem(ts, i);
            e.vlag = lag;
            e.deadline = e.deadline.wrapping_sub(v_avg);
            e.rel_deadline = true;
            if rel_vprot {
                e.vprot = e.vprot.wrapping_sub(v_avg);
            }
            self.nr_queued -= 1;
            if !is_curr {
                self.dequeue_tree(ts, i);
            }
            self.load -= se(ts, i).load.weight as u64;
        }
        self.reweight_load_avg(sem(ts, i), lw.weight as u64);
        let old = se(ts, i).load.weight;
        sem(ts, i).reweight(lw);
        if on_rq {
            let e = sem(ts, i);
            if rel_vprot {
                e.vprot = crate::task::rescale_virtual(e.vprot, old, lw.weight).wrapping_add(v_avg);
            }
            e.deadline = e.deadline.wrapping_add(v_avg);
            e.rel_deadline = false;
            e.vruntime = v_avg.wrapping_sub(e.vlag as u64);
            self.load += lw.weight as u64;
            if !is_curr {
                self.enqueue_tree(ts, i);
            }
            self.nr_queued += 1;
        }
    }

    /// Is the entity cache-hot for the balancer: it ran within the migration
    /// cost, or it is the next buddy (CACHE_HOT_BUDDY)?
    pub fn task_hot(&self, ts: &[SchedTask], cfg: &SchedConfig, id: Slot) -> bool {
        if cfg.feat(Feature::CacheHotBuddy) && self.next == id.0 {
            return true;
        }
        self.clock.saturating_sub(se(ts, id.0).exec_start) < cfg.tunables.migration_cost_ns()
    }

    /// Σ w_i·lag_i over every entity in V (the tree and a queued running
    /// entity), with lag_i = V − v_i taken from the vruntimes themselves:
    /// V is their weighted average, so the sum is 0 up to V's flooring,
    /// i.e. within (−Σw, 0]. A zero point or sum that lost track of an
    /// entity, or a key that overflowed, breaks it.
    pub(crate) fn check_lag_sum(&self, ts: &[SchedTask]) -> Result<(), &'static str> {
        let v = self.avg_vruntime(ts);
        let lag = |e: &crate::task::FairEntity| {
            v.wrapping_sub(e.vruntime) as i64 as i128 * e.load.weight as i128
        };
        let mut sum = 0i128;
        let mut w = 0i128;
        for (i, ..) in self.timeline.iter() {
            let e = se(ts, i);
            sum += lag(e);
            w += e.load.weight as i128;
        }
        if let Some(c) = self.curr_on_rq(ts) {
            sum += lag(se(ts, c));
            w += se(ts, c).load.weight as i128;
        }
        if sum > 0 || (w > 0 && sum <= -w) || (w == 0 && sum != 0) {
            return Err("weighted lag sum is not 0");
        }
        Ok(())
    }

    /// Checks the fair runqueue's invariants (tests, debug dumps): the tree, the
    /// sums against a recomputation, the counts, every queued entity's lag within
    /// the clamp.
    pub fn check(&self, ts: &[SchedTask]) -> Result<(), &'static str> {
        self.check_adj(ts, 0)
    }

    /// [`FairRq::check`] of a root runqueue with task groups: its
    /// `h_nr_runnable` counts the runnable tasks of its groups instead of
    /// its group entities, which differs by `adj` (wrapping).
    pub(crate) fn check_adj(&self, ts: &[SchedTask], adj: u32) -> Result<(), &'static str> {
        let n = self.timeline.check()?;
        let mut sum = 0i128;
        let mut w = 0u64;
        let mut delayed = 0;
        let mut prev_deadline: Option<u64> = None;
        for (i, deadline, vruntime, slice_ns) in self.timeline.iter() {
            let e = se(ts, i);
            if !e.on_rq {
                return Err("tree entity not on_rq");
            }
            if (deadline, vruntime, slice_ns) != (e.deadline, e.vruntime, e.slice_ns) {
                return Err("tree node key out of sync with its entity");
            }
            if let Some(d) = prev_deadline {
                if vbefore(e.deadline, d) {
                    return Err("tree not in deadline order");
                }
            }
            prev_deadline = Some(e.deadline);
            sum += self.key(e.vruntime) * e.load.weight as i128;
            w += e.load.weight as u64;
            delayed += u32::from(e.sched_delayed);
        }
        if sum != self.sum_w_vruntime || w != self.sum_weight {
            return Err("avg_vruntime sums drifted");
        }
        self.check_lag_sum(ts)?;
        let curr_n = u32::from(self.curr_on_rq(ts).is_some());
        if self.curr_on_rq(ts).is_some_and(|c| se(ts, c).sched_delayed) {
            delayed += 1;
        }
        if n as u32 + curr_n != self.nr_queued {
            return Err("nr_queued does not match the tree");
        }
        if (self.nr_queued - delayed).wrapping_add(adj) != self.h_nr_runnable {
            return Err("h_nr_runnable does not match");
        }
        let total_w = w + self
            .curr_on_rq(ts)
            .map_or(0, |c| se(ts, c).load.weight as u64);
        if total_w != self.load {
            return Err("load does not match");
        }
        if self.next != NIL && (!se(ts, self.next).on_rq || se(ts, self.next).sched_delayed) {
            return Err("buddy is not a runnable queued entity");
        }
        Ok(())
    }
}
