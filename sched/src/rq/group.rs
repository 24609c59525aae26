//! The runqueue's side of task groups ([`crate::fair::group`]): each
//! group's per-CPU runqueue and entity, and the walks over the levels that
//! Linux's fair.c does with `for_each_sched_entity` (`enqueue_task_fair`,
//! `dequeue_entities`, `pick_task_fair`, `put_prev_task_fair`,
//! `set_next_task_fair`, `task_tick_fair`, `check_preempt_wakeup_fair`'s
//! `find_matching_se`, `update_cfs_group`, `sched_move_task`).
//!
//! A group entity lives in a slot of the runqueue's arena like a task (so
//! the fair code of each level runs on it unchanged), but a slot no task id
//! maps to, outside the free queue, marked by `SchedTask::my_q`. Every path
//! here is taken only for a task whose `group` is not the root.

use super::*;
use crate::fair::group::{
    calc_group_shares, group_avg_cpu, propagate_group_avgs, update_tg_load_avg, GroupAvgs,
    GroupError, GroupId, GroupRemoved, GroupRq,
};
use crate::fair::load_avg::AvgAction;
use crate::weight::LoadWeight;
use alloc::boxed::Box;

/// The fair runqueue of level `g` (0: the root), its clock brought to the
/// runqueue's (a group runqueue's clock is only kept when it is used).
#[inline]
fn lvl<'a>(
    fair: &'a mut FairRq,
    grp: &'a mut Option<Box<RqGroups>>,
    g: u8,
    clock: u64,
) -> &'a mut FairRq {
    match grp {
        Some(grp) if g != 0 => {
            let f = &mut grp.rqs[g as usize].fair;
            f.clock = clock;
            f.clock_pelt = fair.clock_pelt;
            f
        }
        _ => fair,
    }
}

macro_rules! lv {
    ($s:ident, $g:expr) => {
        lvl(&mut $s.fair, &mut $s.grp, $g, $s.clock)
    };
}

/// The task groups' parts on one CPU.
#[derive(Debug, Default)]
pub(super) struct RqGroups {
    /// Each group's part, by group id (index 0, the root, unused).
    pub(super) rqs: Vec<GroupRq>,
    /// Runnable tasks queued in group runqueues (not delayed).
    pub(super) runnable: u32,
    /// Group entities queued in the root runqueue, not delayed.
    pub(super) root_se: u32,
    /// Delayed group entities in the root runqueue (their runqueues empty).
    pub(super) root_delayed_se: u32,
    /// Arena slots holding group entities.
    pub(super) slots: u32,
}

impl RqGroups {
    pub(super) fn heap_bytes(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.rqs.capacity() * core::mem::size_of::<GroupRq>()
            + self
                .rqs
                .iter()
                .map(|g| g.fair.timeline.heap_bytes())
                .sum::<usize>()
    }

    pub(super) fn add_slots(&mut self, n: usize) {
        for r in self.rqs.iter_mut().filter(|r| r.se != NIL) {
            r.fair.add_slots(n);
        }
    }
}

/// A load weight of any value (a group entity's shares).
fn load_weight(w: u64) -> LoadWeight {
    let w = w.clamp(1, u64::from(u32::MAX)) as u32;
    LoadWeight {
        weight: w,
        inv_weight: u32::try_from((1u64 << 32) / u64::from(w)).unwrap_or(u32::MAX),
    }
}

/// A new group entity's PELT identity until its first enqueue attaches it:
/// neither a runqueue's nor `AVG_DETACHED` (which marks a new *task*, whose
/// load counts at full weight before it is attached), so that it starts
/// with no load, as Linux's `init_entity_runnable_average` leaves a group
/// entity: its load comes from what is attached below it, by propagation.
const GE_UNATTACHED: u32 = crate::task::AVG_DETACHED - 1;
const _: () = assert!(GE_UNATTACHED > (1 << 31), "distinct from group_avg_cpu");

impl Rq {
    /// The groups' state (built by the first [`Rq::alloc_task_group`]).
    #[inline]
    fn gs(&self) -> &RqGroups {
        self.grp
            .as_deref()
            .expect("no task group built on this CPU")
    }

    #[inline]
    fn gsm(&mut self) -> &mut RqGroups {
        self.grp
            .as_deref_mut()
            .expect("no task group built on this CPU")
    }

    #[inline]
    fn gs_opt_get(&self, g: usize) -> Option<&GroupRq> {
        self.grp.as_ref().and_then(|x| x.rqs.get(g))
    }

    /// Arena slots holding group entities.
    #[inline]
    pub(super) fn g_slots(&self) -> u32 {
        self.grp.as_ref().map_or(0, |g| g.slots)
    }

    // ---- groups: creation, weight, attachment ----

    /// Has this runqueue allocated group `g`'s part?
    #[inline]
    fn group_here(&self, g: u8) -> bool {
        g == 0 || self.gs_opt_get(g as usize).is_some_and(|r| r.se != NIL)
    }

    /// Builds this CPU's part of a registered group: its entity (a slot of
    /// the arena) and its runqueue, reserved for every slot. May allocate
    /// (a slow path; nothing in the schedule, wakeup or tick paths does).
    /// The parent's part must exist here.
    pub fn alloc_task_group(&mut self, g: GroupId) -> Result<(), GroupError> {
        let shape = self.cfg.groups.shape(g)?;
        if self.group_here(g.0) {
            return Ok(());
        }
        if !self.group_here(shape.parent.0) {
            return Err(GroupError::NoSuchGroup);
        }
        let gi = g.0 as usize;
        let grp = self.grp.get_or_insert_with(Box::default);
        if grp.rqs.len() <= gi {
            grp.rqs
                .try_reserve(gi + 1 - grp.rqs.len())
                .map_err(|_| GroupError::NoMemory)?;
            grp.rqs.resize_with(gi + 1, GroupRq::default);
        }
        // Room for one more slot, in every slot-indexed structure (the
        // entity's slot is above the id limit's count: `reserve_slots`
        // counts `g_slots`).
        let len = self.tasks.len();
        self.gsm().slots += 1;
        if len >= self.slot_cap as usize {
            let r = self.reserve_slots((2 * len).max(8));
            if r.is_err() || len >= self.slot_cap as usize {
                self.gsm().slots -= 1;
                return Err(GroupError::NoMemory);
            }
        }
        let mut fair = FairRq {
            cpu: group_avg_cpu(self.cpu.as_u32(), g.0),
            ..FairRq::new()
        };
        if fair.try_reserve(self.slot_cap as usize).is_err() {
            self.gsm().slots -= 1;
            return Err(GroupError::NoMemory);
        }
        fair.add_slots(len + 1);
        // The entity's slot: never mapped to an id, never in the free queue.
        let mut t = SchedTask {
            group: shape.parent.0,
            my_q: g.0,
            ..SchedTask::default()
        };
        t.se.avg = crate::pelt::SchedAvg::default();
        t.se.avg_cpu = GE_UNATTACHED;
        // An empty group's weight (`calc_group_shares` of no load); its
        // first enqueue here gives it its share.
        t.se.load = load_weight(crate::fair::group::MIN_SHARES);
        self.tasks.push(t);
        self.slot_ids.push(NIL);
        self.queued_free.push(false);
        self.fair.add_slots(len + 1);
        if self.dl.enabled {
            self.dl.add_slots(len + 1);
        }
        for r in self.gsm().rqs.iter_mut().filter(|r| r.se != NIL) {
            r.fair.add_slots(len + 1);
        }
        fair.clock = self.clock;
        fair.clock_pelt = self.fair.clock_pelt;
        fair.cpu_capacity = self.fair.cpu_capacity;
        self.gsm().rqs[gi] = GroupRq {
            fair,
            se: len as u32,
            parent: shape.parent.0,
            depth: shape.depth,
            load_contrib: 0,
            load_contrib_ns: 0,
        };
        Ok(())
    }

    /// Frees this CPU's part of group `g`: refused ([`GroupError::Busy`])
    /// while its runqueue holds anything or its entity is still someone's
    /// running entity.
    pub fn free_task_group(&mut self, g: GroupId) -> Result<(), GroupError> {
        if g.0 == 0 {
            return Err(GroupError::NoSuchGroup);
        }
        if !self.group_here(g.0) {
            return Ok(());
        }
        if !self.group_idle_here(g.0) {
            return Err(GroupError::Busy);
        }
        let s = self.gs().rqs[g.0 as usize].se;
        if self.tasks[s as usize].se.sched_delayed {
            // unregister_fair_sched_group: a delayed entity's dequeue is
            // finished first.
            self.finish_delayed_group(s);
        }
        let r = &self.gs().rqs[g.0 as usize];
        let p = r.parent;
        let contrib = r.load_contrib;
        if contrib != 0 {
            self.cfg.groups.add_load(g.0, -(contrib as i64));
        }
        // unregister_fair_sched_group: the entity's (blocked) averages
        // leave its parent's.
        let clock = self.clock;
        lvl(&mut self.fair, &mut self.grp, p, clock).detach_gone(&mut self.tasks[s as usize].se);
        if p != 0 {
            self.propagate_up(p);
        }
        self.tasks[s as usize] = SchedTask::default();
        self.gsm().rqs[g.0 as usize] = GroupRq::default();
        self.gsm().slots -= 1;
        // A free slot like any other now.
        if !self.queued_free[s as usize] {
            self.queue_free(s);
        }
        Ok(())
    }

    /// Nothing queued in group `g` here, and its entity neither queued
    /// (but delayed, its runqueue empty) nor running (a group whose part is
    /// not here is idle here).
    pub fn group_idle_here(&self, g: u8) -> bool {
        let Some(r) = self.gs_opt_get(g as usize).filter(|r| r.se != NIL) else {
            return true;
        };
        let s = r.se;
        let parent_curr = if r.parent == 0 {
            self.fair.curr
        } else {
            self.gs().rqs[r.parent as usize].fair.curr
        };
        let e = &self.tasks[s as usize].se;
        r.fair.nr_queued == 0
            && r.fair.curr == NIL
            && (!e.on_rq || e.sched_delayed)
            && parent_curr != s
    }

    /// A single runqueue's `sched_create_group` (one CPU, or a caller that
    /// allocates the group on each runqueue itself): registers the group and
    /// builds its part here. Errors change nothing.
    pub fn create_task_group(
        &mut self,
        parent: GroupId,
        weight: u32,
    ) -> Result<GroupId, GroupError> {
        if !self.group_here(parent.0) {
            return Err(GroupError::NoSuchGroup);
        }
        let g = self.cfg.groups.create(parent, weight)?;
        if let Err(e) = self.alloc_task_group(g) {
            let _ = self.cfg.groups.destroy(g);
            return Err(e);
        }
        Ok(g)
    }

    /// A single runqueue's `sched_destroy_group`: refused while the group has
    /// tasks attached or child groups, or anything queued here.
    pub fn destroy_task_group(&mut self, g: GroupId) -> Result<(), GroupError> {
        if g.0 != 0 && !self.group_idle_here(g.0) {
            return Err(GroupError::Busy);
        }
        self.cfg.groups.destroy(g)?;
        self.free_task_group(g)
    }

    /// A single runqueue's `sched_group_set_weight`: range-checked (a bad
    /// value changes nothing), then the group's entities here reweighted.
    pub fn set_task_group_weight(&mut self, g: GroupId, weight: u32) -> Result<(), GroupError> {
        self.cfg.groups.set_weight(g, weight)?;
        self.update_group_shares(g);
        Ok(())
    }

    /// Recomputes the weight of group `g`'s entity here and of its
    /// ancestors' (`update_cfs_group` up the hierarchy, as
    /// `sched_group_set_shares` does on every CPU).
    pub fn update_group_shares(&mut self, g: GroupId) {
        let mut g = g.0;
        while g != 0 && self.group_here(g) {
            self.update_cfs_group(g);
            g = self.gs().rqs[g as usize].parent;
        }
        self.collect_group_resched();
    }

    /// `sched_move_task`: moves a task this runqueue holds to group `g`
    /// (queued or running: dequeued from its old group's runqueue and
    /// enqueued in the new one's, keeping its lag; asleep: only its group
    /// changes). Counts the task in the registry. Errors change nothing.
    pub fn sched_move_task(&mut self, id: TaskId, g: GroupId) -> Result<(), GroupError> {
        if !self.cfg.groups.exists(g) || !self.group_here(g.0) {
            return Err(GroupError::NoSuchGroup);
        }
        let s = self.held_slot(id).ok_or(GroupError::NoSuchTask)?;
        let i = s as usize;
        let old = self.tasks[i].group;
        if old == g.0 {
            return Ok(());
        }
        self.cfg.groups.move_task(GroupId(old), g)?;
        let fair = self.tasks[i].class() == SchedClass::Fair;
        match self.tasks[i].state {
            TaskState::Queued if fair => {
                // The sched_change pattern, as sched_setattr's.
                let running = self.curr == s;
                if running {
                    self.update_curr();
                }
                self.fair_dequeue(s, DequeueFlags::SAVE | DequeueFlags::MOVE);
                if running {
                    self.put_prev_task(s);
                }
                // task_change_group_fair: its load leaves the old group's
                // runqueue (and, propagated, its ancestors'); the enqueue
                // attaches it to the new one's.
                self.detach_task_level(s, old);
                self.tasks[i].group = g.0;
                self.fair_enqueue(s, EnqueueFlags::RESTORE | EnqueueFlags::MOVE);
                if running {
                    self.set_next_task(s);
                    self.resched_curr(Resched::Lazy);
                }
            }
            TaskState::Delayed => {
                self.finish_delayed(s);
                self.detach_task_level(s, old);
                self.tasks[i].group = g.0;
            }
            _ => {
                // A sleeper: detached from the old group's runqueue now,
                // attached to the new one's at its next enqueue.
                if fair {
                    self.detach_task_level(s, old);
                }
                self.tasks[i].group = g.0;
            }
        }
        self.drain_fair_resched();
        Ok(())
    }

    // ---- the walks ----

    /// The level a fair slot is queued in, and the entity above it.
    #[inline]
    fn parent_entity(&self, s: u32) -> u32 {
        let g = self.tasks[s as usize].group;
        if g == 0 {
            NIL
        } else {
            self.gs().rqs[g as usize].se
        }
    }

    #[inline]
    fn se_depth(&self, s: u32) -> u8 {
        let g = self.tasks[s as usize].group;
        if g == 0 {
            0
        } else {
            self.gs().rqs[g as usize].depth
        }
    }

    /// `update_cfs_group`: group `g`'s entity gets `calc_group_shares` of
    /// the group's shares, from its runqueue's queued weight and load
    /// average here and the group's `tg->load_avg`; not while the runqueue
    /// holds nothing.
    pub(super) fn update_cfs_group(&mut self, g: u8) {
        let groups = &self.cfg.groups;
        let Some(grp) = self.grp.as_deref_mut() else {
            return;
        };
        let r = &grp.rqs[g as usize];
        // An emptied group keeps its weight (66951e4860d3, "sched/fair: Fix
        // update_cfs_group() vs DELAY_DEQUEUE"): its entity may still be
        // queued, delayed, and must leave with the weight it competed with.
        if r.fair.load == 0 {
            return;
        }
        let shares = calc_group_shares(
            groups.shares(g),
            r.fair.load,
            r.fair.avg.load_avg,
            groups.load(g),
            r.load_contrib,
        );
        let (ge, p) = (r.se, r.parent);
        if u64::from(self.tasks[ge as usize].se.load.weight) != shares {
            lv!(self, p).reweight_entity(&mut self.tasks, &self.cfg, Slot(ge), load_weight(shares));
        }
    }

    /// `update_tg_load_avg` for group `g`'s runqueue here: its `load_avg`
    /// published into the group's `tg->load_avg` ([`crate::fair::group::TaskGroups::load`])
    /// when it moved by more than 1/64 of what was published, at most once
    /// a millisecond ([`crate::fair::group::update_tg_load_avg`]). Nothing
    /// for the root.
    fn update_tg_load_avg(&mut self, g: u8) {
        // Nor for a CPU going offline: it stops counting in the shares
        // (`update_tg_load_avg`'s `cpu_active` test; cleared by
        // `Rq::clear_tg_load_avg`).
        if g == 0 || self.balance_push() {
            return;
        }
        let now = self.clock;
        let groups = &self.cfg.groups;
        let Some(grp) = self.grp.as_deref_mut() else {
            return;
        };
        let r = &mut grp.rqs[g as usize];
        let load_avg = r.fair.avg.load_avg;
        if let Some(d) = update_tg_load_avg(load_avg, r.load_contrib, r.load_contrib_ns, now) {
            groups.add_load(g, d);
            r.load_contrib = load_avg;
            r.load_contrib_ns = now;
        }
    }

    /// `update_load_avg(cfs_rq_of(ge), ge)` with its
    /// `propagate_entity_load_avg` for group `g`'s entity `ge`: `ge` brought
    /// to now in its parent's runqueue, then what was attached to or
    /// detached from `g`'s runqueue since (its `prop_runnable_sum`), and its
    /// util and runnable averages, moved into `ge`'s averages and the
    /// parent's ([`propagate_group_avgs`]), to be propagated from the parent
    /// in turn. While `ge` is not attached to its parent (before its first
    /// enqueue) the change waits: the attach carries `ge`'s averages up.
    fn propagate_entity_load_avg(&mut self, g: u8) {
        let clock = self.clock;
        let Some(grp) = self.grp.as_deref() else {
            return;
        };
        let r = &grp.rqs[g as usize];
        let (ge, p) = (r.se, r.parent);
        let parent = lvl(&mut self.fair, &mut self.grp, p, clock);
        parent.update_load_avg(&mut self.tasks, &self.cfg, ge, AvgAction::Update);
        let attached = self.tasks[ge as usize].se.avg_cpu == parent.cpu;
        let r = &mut self.gsm().rqs[g as usize];
        if !r.fair.propagate || !attached {
            return;
        }
        let figures = GroupAvgs {
            util_avg: r.fair.avg.util_avg,
            runnable_avg: r.fair.avg.runnable_avg,
            load_sum: r.fair.avg.load_sum,
            weight: r.fair.load,
            prop_runnable_sum: r.fair.prop_runnable_sum,
        };
        r.fair.propagate = false;
        r.fair.prop_runnable_sum = 0;
        let e = &mut self.tasks[ge as usize].se;
        let w = u64::from(e.load.weight);
        let parent = lvl(&mut self.fair, &mut self.grp, p, clock);
        let prop = propagate_group_avgs(figures, &mut e.avg, w, &mut parent.avg);
        parent.add_tg_cfs_propagate(prop);
    }

    /// `__update_blocked_fair` for the groups here (Linux runs it from the
    /// balance softirq; here at every tick while groups exist): each group
    /// runqueue with load, history or a pending change, deepest first, has
    /// its averages decayed to now, its load published
    /// ([`Self::update_tg_load_avg`]) and its entity updated with the change
    /// ([`Self::propagate_entity_load_avg`]). So a runqueue a group's last
    /// task left publishes its decaying load and the group's shares on the
    /// other CPUs follow. O(groups · depth), groups bounded by
    /// `MAX_TASK_GROUPS`; nothing allocates.
    #[cold]
    #[inline(never)]
    pub(super) fn update_blocked_groups(&mut self) {
        let Some(grp) = self.grp.as_deref() else {
            return;
        };
        let busy = |r: &GroupRq| {
            r.se != NIL
                && (r.fair.propagate
                    || r.load_contrib != 0
                    || r.fair.avg.load_sum != 0
                    || r.fair.avg.util_sum != 0
                    || r.fair.avg.runnable_sum != 0)
        };
        let deepest = grp.rqs.iter().filter(|r| busy(r)).map(|r| r.depth).max();
        let Some(deepest) = deepest else {
            return;
        };
        let n = grp.rqs.len();
        for d in (1..=deepest).rev() {
            for g in 1..n {
                let r = &self.gs().rqs[g];
                if r.depth != d || !busy(r) {
                    continue;
                }
                let g = g as u8;
                lv!(self, g).update_cfs_rq_load_avg();
                self.update_tg_load_avg(g);
                self.propagate_entity_load_avg(g);
            }
        }
    }

    /// `clear_tg_offline_cfs_rqs` (Linux 6.8, `rq_offline_fair`): this CPU's
    /// part of every group's `tg->load_avg` withdrawn, for a CPU going
    /// offline, so that the groups' shares on the other CPUs no longer count
    /// its (blocked) load. It publishes again once it is back
    /// (`Self::update_tg_load_avg`).
    pub fn clear_tg_load_avg(&mut self) {
        let now = self.clock;
        let groups = &self.cfg.groups;
        let Some(grp) = self.grp.as_deref_mut() else {
            return;
        };
        for (g, r) in grp.rqs.iter_mut().enumerate() {
            if r.se != NIL && r.load_contrib != 0 {
                groups.add_load(g as u8, -(r.load_contrib as i64));
                r.load_contrib = 0;
                r.load_contrib_ns = now;
            }
        }
    }

    /// `propagate_entity_cfs_rq` after an attach or detach in group `g`'s
    /// runqueue: `g`'s load published, then each ancestor entity updated
    /// with what changed below it, up to the root.
    fn propagate_up(&mut self, mut g: u8) {
        self.update_tg_load_avg(g);
        while g != 0 {
            self.propagate_entity_load_avg(g);
            let p = self.gs().rqs[g as usize].parent;
            self.update_tg_load_avg(p);
            g = p;
        }
    }

    /// `detach_entity_cfs_rq` for task slot `s` at level `g` (0: the root):
    /// its averages, brought to now, leave that runqueue's, and the change
    /// is propagated up.
    fn detach_task_level(&mut self, s: u32, g: u8) {
        let clock = self.clock;
        lvl(&mut self.fair, &mut self.grp, g, clock).detach_gone(&mut self.tasks[s as usize].se);
        if g != 0 {
            self.propagate_up(g);
        }
    }

    /// `task_dead_fair` / `migrate_task_rq_fair` for a task whose state
    /// this runqueue no longer holds (an exit, a sleeper woken elsewhere):
    /// its averages leave the runqueue of its level here, and for a
    /// grouped task the change is propagated up.
    #[inline]
    pub(super) fn detach_gone_task(&mut self, t: &mut SchedTask) {
        if t.group == 0 {
            self.fair.detach_gone(&mut t.se);
        } else {
            self.detach_gone_grouped(t);
        }
    }

    #[cold]
    #[inline(never)]
    fn detach_gone_grouped(&mut self, t: &mut SchedTask) {
        let g = t.group;
        if !self.group_here(g) {
            return;
        }
        lv!(self, g).detach_gone(&mut t.se);
        self.propagate_up(g);
    }

    /// Applies the removals recorded in `rec` for this CPU's group
    /// runqueues ([`GroupRemoved`], Linux's `cfs_rq->removed` of each): each
    /// group runqueue's averages lose the sums, as `update_cfs_rq_load_avg`
    /// does with them, and the change goes up the hierarchy at once
    /// (`propagate_up`: the group's `tg->load_avg`, its entity's averages
    /// and its ancestors'), where Linux carries it up at the entities' next
    /// updates. A group no longer built here has nothing left to remove
    /// from. O(pending groups · depth); nothing allocates.
    #[cold]
    #[inline(never)]
    pub(crate) fn apply_group_removals(&mut self, rec: &GroupRemoved) {
        let mut pending = rec.take_pending();
        while pending != 0 {
            let g = pending.trailing_zeros() as u8;
            pending &= pending - 1;
            let (l, u, r) = rec.take(g);
            if g == 0 || !self.group_here(g) {
                continue;
            }
            lv!(self, g).remove_load(l, u, r);
            self.propagate_up(g);
        }
    }

    /// Moves every group runqueue's reschedule request to the root's, which
    /// the core reads.
    pub(super) fn collect_group_resched(&mut self) {
        if let Some(grp) = self.grp.as_deref_mut() {
            for r in grp.rqs.iter_mut() {
                if r.fair.resched {
                    r.fair.resched = false;
                    self.fair.resched = true;
                }
            }
        }
    }

    /// `enqueue_task_fair` for a grouped task in slot `s`: into its group's
    /// runqueue, then each group entity whose runqueue was empty into its
    /// parent's (placed with its kept lag), every group on the path
    /// reweighted.
    #[cold]
    #[inline(never)]
    pub(super) fn enqueue_fair_grouped(&mut self, s: u32, flags: EnqueueFlags) {
        let mut g = self.tasks[s as usize].group;
        debug_assert!(self.group_here(g), "task in a group not built here");
        if flags.contains(EnqueueFlags::DELAYED) {
            // requeue_delayed_entity: it never left; its group is queued.
            lv!(self, g).enqueue_entity(&mut self.tasks, &self.cfg, Slot(s), flags);
            self.gsm().runnable += 1;
            self.fair.h_nr_runnable += 1;
            self.collect_group_resched();
            return;
        }
        lv!(self, g).enqueue_entity(&mut self.tasks, &self.cfg, Slot(s), flags);
        self.gsm().runnable += 1;
        self.fair.h_nr_runnable += 1;
        self.update_tg_load_avg(g);
        let mut root_new = false;
        while g != 0 {
            let (ge, p) = {
                let r = &self.gs().rqs[g as usize];
                (r.se, r.parent)
            };
            // update_load_avg(UPDATE_TG) of the entity, then its weight.
            self.propagate_entity_load_avg(g);
            self.update_cfs_group(g);
            if self.tasks[ge as usize].se.sched_delayed {
                // requeue_delayed_entity: its runqueue was empty, its dequeue
                // delayed; it keeps its place (unless its lag changed), and
                // the levels above are queued already.
                lv!(self, p).enqueue_entity(
                    &mut self.tasks,
                    &self.cfg,
                    Slot(ge),
                    EnqueueFlags::DELAYED,
                );
                if p == 0 {
                    let gs = self.gsm();
                    gs.root_se += 1;
                    gs.root_delayed_se -= 1;
                    self.fair.h_nr_runnable -= 1;
                }
            } else if !self.tasks[ge as usize].se.on_rq {
                lv!(self, p).enqueue_entity(
                    &mut self.tasks,
                    &self.cfg,
                    Slot(ge),
                    EnqueueFlags::WAKEUP,
                );
                // A first enqueue attached it: what waited moves up now.
                self.propagate_entity_load_avg(g);
                if p == 0 {
                    self.gsm().root_se += 1;
                    self.fair.h_nr_runnable -= 1;
                    root_new = true;
                }
            }
            self.update_tg_load_avg(p);
            g = p;
        }
        if root_new && self.fair.nr_queued == 1 {
            self.fair_server_start();
        }
        self.collect_group_resched();
    }

    /// `dequeue_entities` for a grouped task: out of its group's runqueue
    /// (or delayed there: then nothing above changes, `false`), then each
    /// group entity whose runqueue emptied out of its parent's
    /// ([`Self::dequeue_group_levels`]). A sleep (SLEEP: also a delayed
    /// dequeue finished) that leaves a runqueue on the path with other
    /// entities makes that runqueue's group entity the next buddy in its
    /// parent's runqueue, and each ancestor in its own (Linux 7.2: `if
    /// (task_sleep && se) set_next_buddy(se)`, whatever NEXT_BUDDY says: the
    /// next pick favours the sleeper's group).
    #[cold]
    #[inline(never)]
    pub(super) fn dequeue_fair_grouped(&mut self, s: u32, flags: DequeueFlags) -> bool {
        let g = self.tasks[s as usize].group;
        let was_delayed = self.tasks[s as usize].se.sched_delayed;
        if !lv!(self, g).dequeue_entity(&mut self.tasks, &self.cfg, Slot(s), flags) {
            self.gsm().runnable -= 1;
            self.fair.h_nr_runnable -= 1;
            self.collect_group_resched();
            return false;
        }
        if !was_delayed {
            self.gsm().runnable -= 1;
            self.fair.h_nr_runnable -= 1;
        }
        self.update_tg_load_avg(g);
        self.dequeue_group_levels(g, !flags.contains(DequeueFlags::SLEEP));
        self.collect_group_resched();
        true
    }

    /// `dequeue_entities` above the level `g` an entity just left: each
    /// group entity whose runqueue emptied is dequeued from its parent's
    /// runqueue with DEQUEUE_SLEEP (whatever the task's flags: Linux's
    /// `flags |= DEQUEUE_SLEEP; flags &= ~(DEQUEUE_DELAYED |
    /// DEQUEUE_SPECIAL)`), so that with DELAY_DEQUEUE one that is not
    /// eligible there stays queued, delayed, keeping its lag, until it is
    /// picked or its group gets a task again (`set_delayed`: the walk stops
    /// dequeuing there). Every group on the path is updated and reweighted.
    /// Unless `buddy_done`, the first level left with other entities
    /// nominates its group up the hierarchy ([`Self::nominate_group_up`]).
    fn dequeue_group_levels(&mut self, mut g: u8, mut buddy_done: bool) {
        let mut dequeuing = true;
        while g != 0 {
            let (ge, p) = {
                let r = &self.gs().rqs[g as usize];
                (r.se, r.parent)
            };
            // dequeue_entity's update_load_avg(UPDATE_TG) of the entity.
            self.propagate_entity_load_avg(g);
            self.update_tg_load_avg(p);
            let e = &self.tasks[ge as usize].se;
            if dequeuing
                && self.gs().rqs[g as usize].fair.nr_queued == 0
                && e.on_rq
                && !e.sched_delayed
            {
                if p == 0 {
                    // Before the root's own count drops by the entity (or
                    // its runnable count, if delayed).
                    self.gsm().root_se -= 1;
                    self.fair.h_nr_runnable += 1;
                }
                let done = lv!(self, p).dequeue_entity(
                    &mut self.tasks,
                    &self.cfg,
                    Slot(ge),
                    DequeueFlags::SLEEP,
                );
                if !done {
                    // Delayed in its parent, which stays queued: above,
                    // only the updates (dequeue_entities' second walk).
                    if p == 0 {
                        self.gsm().root_delayed_se += 1;
                    }
                    dequeuing = false;
                    buddy_done = true;
                }
            } else if !buddy_done {
                buddy_done = true;
                dequeuing = false;
                self.nominate_group_up(g);
            } else {
                dequeuing = false;
            }
            self.update_cfs_group(g);
            g = p;
        }
    }

    /// `pick_next_entity` landing on a delayed group entity (slot `ge`,
    /// its runqueue empty): `dequeue_entities(DEQUEUE_SLEEP |
    /// DEQUEUE_DELAYED)` of it, its dequeue finished in its parent's
    /// runqueue (its lag bounded as a delayed task's, DELAY_ZERO), then the
    /// levels above as after a task's dequeue (an ancestor whose runqueue it
    /// emptied is dequeued, or delayed in turn). No task changes state.
    #[cold]
    #[inline(never)]
    pub(super) fn finish_delayed_group(&mut self, ge: u32) {
        let g = self.tasks[ge as usize].my_q;
        let p = self.tasks[ge as usize].group;
        debug_assert!(self.tasks[ge as usize].se.sched_delayed);
        if p == 0 {
            self.gsm().root_delayed_se -= 1;
        }
        self.propagate_entity_load_avg(g);
        lv!(self, p).dequeue_entity(
            &mut self.tasks,
            &self.cfg,
            Slot(ge),
            DequeueFlags::SLEEP | DequeueFlags::DELAYED,
        );
        self.update_cfs_group(g);
        self.dequeue_group_levels(p, true);
        self.fair_server_stop_if_empty();
        self.collect_group_resched();
    }

    /// Linux's `set_next_buddy()` from group `g`'s entity up: each
    /// ancestor entity becomes the next buddy in its parent's runqueue,
    /// until the root or an entity refused (idle).
    fn nominate_group_up(&mut self, mut g: u8) {
        while g != 0 {
            let (ge, p) = {
                let r = &self.gs().rqs[g as usize];
                (r.se, r.parent)
            };
            if !lv!(self, p).nominate_sleepers_group(&self.tasks, ge) {
                return;
            }
            g = p;
        }
    }

    /// The fair enqueue of slot `s`, flat or grouped.
    #[inline]
    pub(super) fn fair_enqueue(&mut self, s: u32, flags: EnqueueFlags) {
        if self.tasks[s as usize].group != 0 {
            self.enqueue_fair_grouped(s, flags);
        } else {
            self.fair
                .enqueue_entity(&mut self.tasks, &self.cfg, Slot(s), flags);
            if self.fair.nr_queued == 1 && !flags.contains(EnqueueFlags::DELAYED) {
                self.fair_server_start();
            }
        }
    }

    /// The fair dequeue of slot `s`, flat or grouped (false: delayed).
    #[inline]
    pub(super) fn fair_dequeue(&mut self, s: u32, flags: DequeueFlags) -> bool {
        let done = if self.tasks[s as usize].group != 0 {
            self.dequeue_fair_grouped(s, flags)
        } else {
            self.fair
                .dequeue_entity(&mut self.tasks, &self.cfg, Slot(s), flags)
        };
        if done {
            self.fair_server_stop_if_empty();
        }
        done
    }

    /// `pick_task_fair` below the root: `s` is a group entity the root
    /// picked; EEVDF's pick in each group runqueue down to a task, or to a
    /// delayed entity (a task or a group's) for the caller to finish.
    #[cold]
    #[inline(never)]
    pub(super) fn pick_grouped(&mut self, mut s: u32) -> u32 {
        loop {
            let g = self.tasks[s as usize].my_q;
            if g == 0 {
                return s;
            }
            let f = lvl(&mut self.fair, &mut self.grp, g, self.clock);
            if f.curr != NIL {
                f.update_curr(&mut self.tasks, &self.cfg);
            }
            match f.pick_eevdf(&self.tasks, &self.cfg, true, true) {
                // A delayed entity, task or group: the caller finishes its
                // dequeue and picks again (`pick_next_entity`).
                Some(x) if self.tasks[x.0 as usize].se.sched_delayed => return x.0,
                Some(x) => s = x.0,
                None => return NIL,
            }
        }
    }

    /// `put_prev_task_fair` for a grouped task: each level's running entity
    /// back into its tree, bottom up.
    #[cold]
    #[inline(never)]
    pub(super) fn put_prev_grouped(&mut self, prev: u32) {
        let mut s = prev;
        while s != NIL {
            let g = self.tasks[s as usize].group;
            let f = lvl(&mut self.fair, &mut self.grp, g, self.clock);
            if f.curr == s {
                f.put_prev_entity(&mut self.tasks, &self.cfg, Slot(s));
            }
            s = self.parent_entity(s);
        }
    }

    /// `set_next_task_fair` for a grouped task: each level's entity becomes
    /// that level's running entity (with its protection armed when `first`,
    /// as Linux's loop passes `first` to every level's `set_next_entity`).
    #[cold]
    #[inline(never)]
    pub(super) fn set_next_grouped(&mut self, next: u32, first: bool) {
        let mut s = next;
        while s != NIL {
            let g = self.tasks[s as usize].group;
            let f = lvl(&mut self.fair, &mut self.grp, g, self.clock);
            if first {
                f.set_next_entity(&mut self.tasks, &self.cfg, Slot(s));
            } else {
                f.set_next_entity_again(&mut self.tasks, &self.cfg, Slot(s));
            }
            s = self.parent_entity(s);
        }
    }

    /// Runs `f(rq, g)` for every group level of the running task, from
    /// its own up to the root's child (not the root); nothing for a root
    /// task.
    fn for_each_group_level(&mut self, mut f: impl FnMut(&mut Self, u8)) {
        let mut s = self.curr;
        loop {
            let g = self.tasks[s as usize].group;
            if g == 0 {
                break;
            }
            f(self, g);
            s = self.parent_entity(s);
        }
        self.collect_group_resched();
    }

    /// `update_curr` at every level of the running task below the root
    /// (whose own the caller charged).
    #[cold]
    #[inline(never)]
    pub(super) fn update_curr_grouped(&mut self) {
        self.for_each_group_level(|rq, g| {
            lv!(rq, g).update_curr(&mut rq.tasks, &rq.cfg);
        });
    }

    /// `task_tick_fair` below the root (whose `entity_tick` the caller ran):
    /// `entity_tick` at every group level of the running task, and every
    /// group on its path reweighted (`update_cfs_group`).
    #[cold]
    #[inline(never)]
    pub(super) fn tick_grouped(&mut self) {
        self.update_blocked_groups();
        self.for_each_group_level(|rq, g| {
            lv!(rq, g).entity_tick(&mut rq.tasks, &rq.cfg);
            rq.update_tg_load_avg(g);
            // The next level's entity_tick, or the root's (run first by
            // the caller), updates the entity above: its update with the
            // propagation of what changed here.
            rq.propagate_entity_load_avg(g);
            rq.update_cfs_group(g);
        });
    }

    /// `check_preempt_wakeup_fair` when the wakee `p` or the running task is
    /// grouped: `find_matching_se` brings both to the level they share, and
    /// the decision runs there between their entities.
    #[cold]
    #[inline(never)]
    pub(super) fn wakeup_fair_grouped(
        &mut self,
        p: u32,
        wf: WakeFlags,
        now_pending: bool,
    ) -> FairWakeup {
        let (mut a, mut b) = (self.curr, p);
        while self.se_depth(a) > self.se_depth(b) {
            a = self.parent_entity(a);
        }
        while self.se_depth(b) > self.se_depth(a) {
            b = self.parent_entity(b);
        }
        while self.tasks[a as usize].group != self.tasks[b as usize].group {
            a = self.parent_entity(a);
            b = self.parent_entity(b);
        }
        let g = self.tasks[a as usize].group;
        let step =
            lv!(self, g).check_preempt_wakeup(&mut self.tasks, &self.cfg, Slot(b), wf, now_pending);
        let r = match step {
            WakeupStep::Done(r) => r,
            WakeupStep::Pick { short } => {
                let nse = loop {
                    let f = lvl(&mut self.fair, &mut self.grp, g, self.clock);
                    match f.pick_eevdf(&self.tasks, &self.cfg, !short, false) {
                        Some(x) if self.tasks[x.0 as usize].se.sched_delayed => {
                            self.finish_delayed(x.0);
                            self.stats.nr_wakeup_delayed_dequeues += 1;
                            if lv!(self, g).nr_queued == 0 {
                                break None;
                            }
                        }
                        other => break other,
                    }
                };
                lv!(self, g).wakeup_pick_done(&mut self.tasks, &self.cfg, Slot(b), nse, short)
            }
        };
        self.collect_group_resched();
        r
    }

    /// `yield_task_fair` for a grouped task: in its group's runqueue.
    #[cold]
    #[inline(never)]
    pub(super) fn yield_grouped(&mut self, s: u32) {
        let g = self.tasks[s as usize].group;
        let n = self.nr_running;
        lv!(self, g).yield_entity(&mut self.tasks, &self.cfg, n);
        self.collect_group_resched();
    }

    /// [`FairRq::task_hot`] in the task's own runqueue.
    pub(super) fn task_hot_level(&self, s: u32) -> bool {
        let g = self.tasks[s as usize].group;
        let f = if g == 0 {
            &self.fair
        } else {
            &self.gs().rqs[g as usize].fair
        };
        f.task_hot(&self.tasks, &self.cfg, Slot(s))
    }

    /// `task_h_load`: the part of this CPU's root load (`cpu_load()`, the
    /// root's PELT `load_avg`) that task `id` stands for, what moving it
    /// takes off this CPU. A root-level task's is its own `load_avg`; a
    /// grouped task's is scaled at each level by its group entity's share
    /// of that level: `load_avg × Π se.load_avg / (cfs_rq.load_avg + 1)`
    /// (Linux computes the same product top-down in `update_cfs_rq_h_load`).
    /// O(group depth), no allocation. 0 when the task is not held here.
    pub fn task_h_load(&self, id: TaskId) -> u64 {
        let Some(s) = self.held_slot(id) else {
            return 0;
        };
        let t = &self.tasks[s as usize];
        let mut load = t.se.avg.load_avg;
        let mut g = t.group;
        while g != 0 {
            let Some(r) = self.gs_opt_get(g as usize) else {
                return 0;
            };
            let se_load = self.tasks[r.se as usize].se.avg.load_avg;
            load = load * se_load / (r.fair.avg().load_avg + 1);
            g = r.parent;
        }
        load
    }

    /// [`Self::task_h_load`] in its parts, for a balancer that detaches
    /// several tasks in one pass: Linux's `task_h_load(p)` is
    /// `cfs_rq->h_load × p.load_avg / (cfs_rq.load_avg + 1)`, where the
    /// runqueue's `h_load` is computed once per jiffy
    /// (`update_cfs_rq_h_load`) while its `load_avg` drops at once by each
    /// task detached from it (`detach_entity_load_avg`): later tasks of a
    /// pass count heavier. `None` when the task is not held here.
    pub fn task_h_load_parts(&self, id: TaskId) -> Option<HLoadParts> {
        let s = self.held_slot(id)?;
        let t = &self.tasks[s as usize];
        let load = t.se.avg.load_avg;
        let g = t.group;
        if g == 0 {
            // The root's share of itself (ours counts a root-level task's
            // own load_avg, so `h_load` is taken as `load_avg + 1`).
            let l = self.fair.avg().load_avg;
            return Some(HLoadParts {
                cfs_rq: 0,
                cfs_rq_h_load: l + 1,
                cfs_rq_load: l,
                load,
            });
        }
        let r = self.gs_opt_get(g as usize)?;
        let cfs_rq_load = r.fair.avg().load_avg;
        let mut h = self.tasks[r.se as usize].se.avg.load_avg;
        let mut up = r.parent;
        while up != 0 {
            let p = self.gs_opt_get(up as usize)?;
            let se_load = self.tasks[p.se as usize].se.avg.load_avg;
            h = h * se_load / (p.fair.avg().load_avg + 1);
            up = p.parent;
        }
        Some(HLoadParts {
            cfs_rq: g as u32,
            cfs_rq_h_load: h,
            cfs_rq_load,
            load,
        })
    }

    /// The running entity of the level task slot `s` is queued in.
    pub(super) fn level_curr(&self, s: u32) -> u32 {
        let g = self.tasks[s as usize].group;
        if g == 0 {
            self.fair.curr
        } else {
            self.gs_opt_get(g as usize).map_or(NIL, |r| r.fair.curr)
        }
    }

    /// The fair runqueue of group `g` on this CPU (`None`: not built here).
    pub fn group_fair(&self, g: GroupId) -> Option<&FairRq> {
        if g.0 == 0 {
            return Some(&self.fair);
        }
        self.grp
            .as_ref()
            .map_or(&[][..], |g| &g.rqs[..])
            .get(g.0 as usize)
            .filter(|r| r.se != NIL)
            .map(|r| &r.fair)
    }

    /// The weight group `g`'s entity has on this CPU now (`None` for the
    /// root or a group not built here).
    pub fn group_entity_weight(&self, g: GroupId) -> Option<u32> {
        let r = self.gs_opt_get(g.0 as usize).filter(|r| r.se != NIL)?;
        Some(self.tasks[r.se as usize].se.load.weight)
    }

    /// Group `g`'s entity here (`None` for the root or a group not built
    /// here): its lag, vruntime and delayed state.
    pub fn group_entity(&self, g: GroupId) -> Option<&crate::task::FairEntity> {
        let r = self.gs_opt_get(g.0 as usize).filter(|r| r.se != NIL)?;
        Some(&self.tasks[r.se as usize].se)
    }

    /// Group `g`'s entity's load tracking here (`None` for the root or a
    /// group not built here).
    pub fn group_entity_avg(&self, g: GroupId) -> Option<&crate::pelt::SchedAvg> {
        let r = self.gs_opt_get(g.0 as usize).filter(|r| r.se != NIL)?;
        Some(&self.tasks[r.se as usize].se.avg)
    }

    /// This CPU's part of group `g`'s `tg->load_avg` as last published
    /// (`tg_load_avg_contrib`; `None` for the root or a group not built here).
    pub fn group_load_contrib(&self, g: GroupId) -> Option<u64> {
        Some(
            self.gs_opt_get(g.0 as usize)
                .filter(|r| r.se != NIL)?
                .load_contrib,
        )
    }

    /// Is group `g`'s entity queued in its parent's runqueue here?
    pub fn group_entity_queued(&self, g: GroupId) -> bool {
        self.grp
            .as_ref()
            .map_or(&[][..], |g| &g.rqs[..])
            .get(g.0 as usize)
            .filter(|r| r.se != NIL)
            .is_some_and(|r| self.tasks[r.se as usize].se.on_rq)
    }

    /// Every queued fair task of the group runqueues (not the root's), by
    /// slot (for [`Rq::fair_queue_rev`]).
    pub(super) fn grouped_queue(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.grp
            .as_ref()
            .map_or(&[][..], |g| &g.rqs[..])
            .iter()
            .filter(|r| r.se != NIL)
            .flat_map(|r| r.fair.timeline.iter().map(|e| e.0))
            .filter(|&s| self.tasks[s as usize].my_q == 0)
            .map(|s| self.id_of(s))
    }

    /// The group invariants: each group runqueue's own, each group entity
    /// queued exactly while its runqueue holds something, its weight within
    /// `[MIN_SHARES, shares]`, each level's load the sum of its entities'
    /// weights (checked by [`FairRq::check`]), the counts of runnable
    /// grouped tasks and of group entities in the root.
    pub(super) fn check_groups(&self) -> Result<(), &'static str> {
        let mut runnable = 0u32;
        let mut root_se = 0u32;
        let mut root_delayed_se = 0u32;
        let mut slots = 0u32;
        let rqs: &[GroupRq] = self.grp.as_ref().map_or(&[], |g| &g.rqs);
        for (g, r) in rqs.iter().enumerate() {
            if r.se == NIL {
                continue;
            }
            slots += 1;
            r.fair.check(&self.tasks)?;
            let t = &self.tasks[r.se as usize];
            if t.my_q as usize != g || t.group != r.parent || t.state != TaskState::Absent {
                return Err("group entity slot does not name its group");
            }
            let busy = r.fair.nr_queued > 0;
            if !t.se.sched_delayed && t.se.on_rq != busy {
                return Err("group entity queued while its runqueue is empty, or not while busy");
            }
            if t.se.sched_delayed && (busy || !t.se.on_rq) {
                return Err("delayed group entity with a busy runqueue, or not queued");
            }
            // While the runqueue holds weight the entity's is its share of
            // the group's; an emptied one keeps the weight it had (its
            // shares may have been lowered since), within the largest.
            let shares = if r.fair.load > 0 {
                self.cfg.groups.shares(g as u8)
            } else {
                crate::fair::group::weight_to_shares(crate::fair::group::CPU_WEIGHT_MAX)
            };
            let w = u64::from(t.se.load.weight);
            if !(crate::fair::group::MIN_SHARES..=shares.max(crate::fair::group::MIN_SHARES))
                .contains(&w)
            {
                return Err("group entity weight outside [MIN_SHARES, shares]");
            }
            // A delayed group entity counts as queued in its parent's tree
            // but not in the runnable counts (`root_se` counts the others).
            if t.se.on_rq && r.parent == 0 {
                if t.se.sched_delayed {
                    root_delayed_se += 1;
                } else {
                    root_se += 1;
                }
            }
            // Runnable tasks (not child group entities) of this level.
            let runnable_ge = |s: u32| {
                let c = &self.tasks[s as usize];
                c.my_q != 0 && c.se.on_rq && !c.se.sched_delayed
            };
            let mut child_se = 0;
            for (s, ..) in r.fair.timeline.iter() {
                child_se += u32::from(runnable_ge(s));
            }
            if r.fair.curr != NIL && runnable_ge(r.fair.curr) {
                child_se += 1;
            }
            runnable += r.fair.h_nr_runnable - child_se;
        }
        let Some(gs) = self.grp.as_deref() else {
            return Ok(());
        };
        if runnable != gs.runnable {
            return Err("runnable grouped tasks miscounted");
        }
        if root_se != gs.root_se || root_delayed_se != gs.root_delayed_se {
            return Err("group entities in the root miscounted");
        }

        if slots != gs.slots {
            return Err("group entity slots miscounted");
        }
        for (_, t) in self.tasks() {
            if t.group != 0 && !self.group_here(t.group) {
                return Err("task in a group not built here");
            }
        }
        Ok(())
    }
}

/// A task's `task_h_load` in its parts ([`Rq::task_h_load_parts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HLoadParts {
    /// The runqueue the task is queued in: 0 for the root, else its
    /// group's index on this CPU.
    pub cfs_rq: u32,
    /// That runqueue's share of this CPU's root load (`cfs_rq->h_load`).
    pub cfs_rq_h_load: u64,
    /// That runqueue's PELT `load_avg`.
    pub cfs_rq_load: u64,
    /// The task's own PELT `load_avg`.
    pub load: u64,
}

impl HLoadParts {
    /// `task_h_load` once `removed` of the runqueue's `load_avg` has left
    /// with tasks detached before this one.
    pub fn h_load(&self, removed: u64) -> u64 {
        self.cfs_rq_h_load * self.load / (self.cfs_rq_load.saturating_sub(removed) + 1)
    }
}
