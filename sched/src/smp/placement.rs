//! Wakeup and fork placement over the scheduling domains
//! (Linux's `select_task_rq_fair` and its helpers in kernel/sched/fair.c).
//!
//! - Wakeups (fast path): `wake_affine` chooses between the waker's CPU and
//!   the previous CPU; it is tried when some domain of the waker holds the
//!   previous CPU (always, on one machine: every level has `SD_WAKE_AFFINE`,
//!   as in Linux unless node distances exceed `node_reclaim_distance`, which
//!   we do not model). Then `select_idle_sibling` looks for an idle CPU
//!   *within the target's LLC only*: the target, the previous CPU if it shares
//!   the LLC, the task's `recent_used_cpu`, an idle core (every SMT sibling
//!   idle), an idle SMT sibling of the previous CPU, any idle CPU; scans start after the target and wrap
//!   (`for_each_cpu_wrap`), so concurrent wakeups spread out.
//! - Fork and exec (slow path): `find_idlest_cpu` descends from this CPU's
//!   top domain: at each level the idlest group (`find_idlest_group`: least
//!   busy type, then most idle CPUs or lowest average load, keeping the local
//!   group unless the other one is clearly better; across nodes a small
//!   imbalance is allowed, `adjust_numa_imbalance`), then the idlest CPU in it
//!   (`find_idlest_group_cpu`), then the next level down from that CPU.
//!
//! - RT wakeups (`select_task_rq_rt`, kernel/sched/rt.c): none of the
//!   above. An RT task wakes on its previous CPU and preempts the fair task
//!   there; it looks elsewhere only when an RT or deadline task of at least
//!   its priority runs there (`find_lowest_rq`, over the running tasks'
//!   ranks published in [`super::CpuSummary::curr_rt_rank`]). What placement
//!   leaves undone, a task queued behind a higher one or a CPU that drops to
//!   a lower task, RT push/pull balancing fixes afterwards
//!   ([`super::rt_balance`]). Left out here: the test of a pinned
//!   lower-priority RT task, the queued (not running) RT tasks' priority
//!   (push and pull use it, [`super::CpuSummary::rt_rank`]), capacity
//!   fitness; and RT forks, which still take the slow path below (Linux
//!   places them by the same rule as RT wakeups).
//! - Deadline wakeups (`select_task_rq_dl`, [`super::dl_balance`]): the
//!   previous CPU, unless the wakee's deadline is not earlier than the
//!   earliest there; then a CPU with no deadline task or a later one.
//!
//! `wake_affine_weight` compares PELT load averages (the runqueue's
//! `load_avg`, blocked load included, and the wakee's, [`crate::pelt`]) with
//! WA_BIAS, and `wake_wide` (wakee flip counting, recorded by
//! [`Scheduler::wake`]; callers of [`Scheduler::select_task_rq`] pass no
//! flips: never wide) turns affinity off, as in Linux 7.2.
//!
//! On a machine of unequal CPUs `select_idle_sibling` first checks that
//! the task fits the target and the previous CPU, then scans the
//! `sd_asym_cpucapacity` domain instead of the LLC ([`super::capacity`]).
//!
//! SIS_UTIL (Linux 6.0, 70fb5ccf2ebb; on by default since): the periodic balance of
//! a CPU's LLC domain turns the LLC's summed PELT utilisation into a scan
//! limit, `nr_idle_scan` ([`nr_idle_scan_for`], kept for the LLC in its
//! first CPU's summary), and `select_idle_cpu` looks at no more than that
//! many CPUs of the LLC: all of an idle LLC, none from ~85% utilisation
//! on. The limit counts the scan for an idle CPU; the scan for an idle
//! core is not counted (Linux counts `nr` down only in the branch without
//! an idle core), and ours looks for an idle core whenever the machine has
//! SMT (no `has_idle_cores` hint). A limit of 0 stops both: Linux's
//! `select_idle_cpu` returns before its loop then, idle-core hint or not;
//! ours still tries an idle sibling of the previous CPU (`select_idle_smt`,
//! which Linux runs before `select_idle_cpu` when it has no idle-core hint,
//! the likely case on an LLC that busy).
//!
//! `recent_used_cpu` (the previous CPU of the task's last wakeup that got
//! past the target and previous-CPU checks, its parent's CPU at first) is
//! tried after the previous CPU, before the scan, as in Linux; each fair
//! wakeup's rule and result are reported to [`super::Platform::wake_placement`]
//! ([`AffineRule`], [`SisPick`]) for counters.
//!
//! Left out: the `has_idle_cores` hint (we scan the LLC
//! for an idle core whenever the machine has SMT), capacity in fork
//! placement. Fork placement and balancing weigh groups and CPUs by PELT
//! load (`cpu_load()`, blocked load included) after nr_running, and
//! classify groups as Linux's `group_classify` does, by nr_running and
//! the PELT utilisation and runnable sums against the group's capacity.

use super::{CpuSlot, Platform, Scheduler};
use crate::sync::AtomicU32;
use core::sync::atomic::Ordering;

use crate::class::SchedClass;
use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::domain::{DomainLevel, SchedDomain};
use crate::features::Feature;
use crate::flags::WakeFlags;
use crate::task::SchedTask;
use crate::weight::WEIGHT_IDLEPRIO;

/// `NUMA_IMBALANCE_MIN`: an imbalance of up to this many tasks between nodes
/// is left alone while the destination is lightly loaded.
pub(super) const NUMA_IMBALANCE_MIN: u32 = 2;

/// Which rule chose between the waker's CPU and the previous one for a
/// fair wakeup (`select_task_rq_fair`'s `wake_wide` and `wake_affine`),
/// reported with [`SisPick`] through [`super::Platform::wake_placement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AffineRule {
    /// `wake_affine` not asked: the waker's CPU is the previous one
    /// (whatever `wake_wide` says), or the task may not run on the waker's
    /// CPU.
    NotAsked = 0,
    /// `wake_wide` held, the previous CPU being another: not affine, the
    /// previous CPU is the target.
    Wide,
    /// WA_IDLE: the waker's CPU idle (a wakeup from an interrupt) and the
    /// previous one busy: the waker's.
    IdleThis,
    /// WA_IDLE: the previous CPU idle: the previous.
    IdlePrev,
    /// WA_IDLE: a sync waker alone on its CPU: the waker's.
    Sync,
    /// WA_WEIGHT chose the waker's CPU.
    WeightThis,
    /// WA_WEIGHT did not (or WA_WEIGHT off): the previous.
    WeightPrev,
}

/// [`AffineRule`]s, in order, as counter names.
pub const AFFINE_RULE_NAMES: [&str; 7] = [
    "wa_not_asked",
    "wa_wide",
    "wa_idle_this",
    "wa_idle_prev",
    "wa_sync",
    "wa_weight_this",
    "wa_weight_prev",
];

/// What `select_idle_sibling` returned for a fair wakeup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SisPick {
    /// The target (the CPU `wake_affine` chose), idle.
    Target = 0,
    /// The previous CPU, idle and sharing the target's cache.
    Prev,
    /// The task's `recent_used_cpu`, idle.
    Recent,
    /// An idle CPU the scan of the LLC (or of the capacity domain) found.
    Scan,
    /// None idle: the target, busy.
    None,
}

/// [`SisPick`]s, in order, as counter names.
pub const SIS_PICK_NAMES: [&str; 5] = [
    "sis_target",
    "sis_prev",
    "sis_recent",
    "sis_scan",
    "sis_none",
];

/// Rows of a fair wakeups' placement count (the kernel's `compare`
/// counters `wa_*`, `sis_*` and `placed_local`, the simulator's the
/// same): one per [`AffineRule`], one per [`SisPick`], and one for the
/// placements on the waker's CPU.
pub const PLACEMENT_ROWS: usize = AFFINE_RULE_NAMES.len() + SIS_PICK_NAMES.len() + 1;

/// The rows of a [`PLACEMENT_ROWS`] count that one placement adds to: its
/// rule's, its pick's, and the last row if it is on the waker's CPU.
#[inline(always)]
pub fn placement_rows(rule: AffineRule, pick: SisPick, local: bool) -> [Option<usize>; 3] {
    [
        Some(rule as usize),
        Some(AFFINE_RULE_NAMES.len() + pick as usize),
        local.then_some(PLACEMENT_ROWS - 1),
    ]
}

/// The counter name of row `i` of a [`PLACEMENT_ROWS`] count.
pub fn placement_name(i: usize) -> &'static str {
    let (wa, sis) = (AFFINE_RULE_NAMES.len(), SIS_PICK_NAMES.len());
    if i < wa {
        AFFINE_RULE_NAMES[i]
    } else if i < wa + sis {
        SIS_PICK_NAMES[i - wa]
    } else {
        "placed_local"
    }
}

/// Linux's `group_type`, the part of it `group_classify` tells from
/// nr_running and the PELT sums (no asym packing, SMT balance or
/// imbalanced groups; misfit groups are [`super::capacity`]'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum GroupType {
    /// Fewer tasks than CPUs, or utilisation and runnable time leaving
    /// room (`group_has_capacity`).
    HasSpare,
    /// Neither spare nor overloaded.
    FullyBusy,
    /// More tasks than CPUs and the utilisation or the runnable time over
    /// the capacity by the domain's `imbalance_pct` (`group_is_overloaded`).
    Overloaded,
}

/// Figures of one group (`struct sg_lb_stats`), from the lock-free summaries.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SgStats {
    /// The group's CPUs.
    pub span: CpuMask,
    /// CPUs in the group (`group_weight`).
    pub w: u32,
    /// Σ nr_running over the counted CPUs.
    pub nr: u32,
    /// Σ `cpu_load()`: each runqueue's PELT `load_avg`, blocked load
    /// included (Linux's `group_load`; the instantaneous weight before).
    pub load: u64,
    /// Σ [`Scheduler::cpu_util_cfs`] (`group_util`).
    pub util: u64,
    /// Σ `cpu_runnable()`: each runqueue's `runnable_avg`
    /// (`group_runnable`).
    pub runnable: u64,
    /// Σ the counted CPUs' capacities (`group_capacity`).
    pub capacity: u64,
    /// Idle CPUs among the counted ones.
    pub idle: u32,
}

impl SgStats {
    /// `group_is_overloaded`: more tasks than CPUs, and the utilisation
    /// above the capacity shrunk by `imbalance_pct`, or the runnable time
    /// above it grown by `imbalance_pct`.
    fn is_overloaded(&self, imbalance_pct: u32) -> bool {
        if self.nr <= self.w {
            return false;
        }
        let (cap, pct) = (self.capacity as u128, imbalance_pct as u128);
        cap * 100 < self.util as u128 * pct || cap * pct < self.runnable as u128 * 100
    }

    /// `group_has_capacity`: fewer tasks than CPUs, or the runnable time
    /// within the capacity grown by `imbalance_pct` and the utilisation
    /// below it shrunk by `imbalance_pct`.
    fn has_capacity(&self, imbalance_pct: u32) -> bool {
        if self.nr < self.w {
            return true;
        }
        let (cap, pct) = (self.capacity as u128, imbalance_pct as u128);
        if cap * pct < self.runnable as u128 * 100 {
            return false;
        }
        cap * 100 > self.util as u128 * pct
    }

    /// `group_classify` in a domain of `imbalance_pct`.
    pub fn group_type(&self, imbalance_pct: u32) -> GroupType {
        if self.is_overloaded(imbalance_pct) {
            GroupType::Overloaded
        } else if !self.has_capacity(imbalance_pct) {
            GroupType::FullyBusy
        } else {
            GroupType::HasSpare
        }
    }

    /// Load per capacity, scaled by 1024 (`avg_load`: `group_load *
    /// SCHED_CAPACITY_SCALE / group_capacity`).
    pub fn avg_load(&self) -> u64 {
        self.load * crate::pelt::SCHED_CAPACITY_SCALE / self.capacity.max(1)
    }
}

impl<P: Platform> Scheduler<P> {
    /// `cpu_util_cfs`: the CPU's fair utilisation as the balancer and
    /// SIS_UTIL see it, its root runqueue's `util_avg` (blocked tasks'
    /// decaying share included) or, with UTIL_EST, the larger of that and
    /// the runqueue's `util_est` (what its queued tasks' last sleeps said
    /// they need: a task that just woke counts in full, not at its decayed
    /// `util_avg`), capped at the CPU's capacity.
    pub fn cpu_util_cfs(&self, cpu: CpuId) -> u64 {
        let sm = self.summary(cpu);
        let mut util = sm.util_avg.load(Ordering::Relaxed);
        if self.cfg.feat(Feature::UtilEst) {
            util = util.max(sm.util_est.load(Ordering::Relaxed));
        }
        util.min(self.topology.capacity_of(cpu) as u64)
    }

    /// Sums `cpus ∩ span` into the stats of the group `span`.
    pub(super) fn sg_stats(&self, span: CpuMask, cpus: &CpuMask) -> SgStats {
        let mut s = SgStats {
            span,
            w: span.weight() as u32,
            ..Default::default()
        };
        for c in span.and(cpus).cpus() {
            let sm = self.summary(c);
            let cap = self.topology.capacity_of(c) as u64;
            s.nr += self.nr(c);
            s.load += self.load_avg(c);
            s.util += self.cpu_util_cfs(c);
            s.runnable += sm.runnable_avg.load(Ordering::Relaxed);
            s.capacity += cap;
            s.idle += self.idle(c) as u32;
        }
        s
    }

    /// The allowed CPU of `span` with the fewest runnable tasks, then the
    /// least PELT load (`cpu_load()`), preferring `prefer` on ties, else the
    /// lowest (`find_idlest_group_cpu`).
    /// A CPU running only SCHED_IDLE tasks, `t` not being one, is taken at
    /// once (`choose_sched_idle_rq`).
    fn idlest_cpu_in(&self, t: &SchedTask, span: &CpuMask, prefer: CpuId) -> Option<CpuId> {
        let mut best: Option<(CpuId, (u32, u64))> = None;
        let sched_idle_ok = self.may_prefer_sched_idle(t);
        for c in span.and(&self.allowed_mask(t)).cpus() {
            if c.index() >= self.nr_cpus() {
                break;
            }
            if sched_idle_ok && self.sched_idle_cpu(c) {
                return Some(c);
            }
            let key = (self.nr(c), self.load_avg(c));
            match best {
                Some((_, k)) if key > k || (key == k && c != prefer) => {}
                _ => best = Some((c, key)),
            }
        }
        best.map(|(c, _)| c)
    }

    /// `find_idlest_group`: the group of `sd` (one of `this_cpu`'s domains) a
    /// new task should go to, or `None` to stay in the local group.
    fn find_idlest_group(
        &self,
        sd: &SchedDomain,
        t: &SchedTask,
        this_cpu: CpuId,
    ) -> Option<CpuMask> {
        let allowed = &self.allowed_mask(t);
        let mut local = None;
        let mut idlest: Option<SgStats> = None;
        for g in sd.groups(&self.topology) {
            if !g.intersects(allowed) {
                continue;
            }
            let st = self.sg_stats(g, allowed);
            if g.has(this_cpu) {
                local = Some(st);
            } else if idlest.is_none_or(|i| idlest_better(&st, &i, sd.imbalance_pct)) {
                idlest = Some(st);
            }
        }
        let idlest = idlest?;
        let Some(local) = local else {
            return Some(idlest.span);
        };
        let pct = sd.imbalance_pct;
        let (lt, it) = (local.group_type(pct), idlest.group_type(pct));
        if lt != it {
            return (lt > it).then_some(idlest.span);
        }
        if lt == GroupType::HasSpare {
            if sd.level == DomainLevel::Numa {
                // Keep a lightly loaded node's tasks together (locality)
                // unless the idle CPU counts differ by more than a couple.
                let cpus_here = local.span.and(allowed).weight() as u32;
                let imb_numa_nr = sd.imb_numa_nr.min(cpus_here);
                let imbalance = local.idle.abs_diff(idlest.idle);
                // Linux's dst_running = nr + 1 <= imb_numa_nr.
                if local.nr < imb_numa_nr && imbalance <= NUMA_IMBALANCE_MIN {
                    return None;
                }
            }
            return (local.idle < idlest.idle).then_some(idlest.span);
        }
        // Busy groups: compare average loads with imbalance_pct slack.
        let slack = 1024 * (sd.imbalance_pct as u64 - 100) / 100;
        let (la, ia) = (local.avg_load(), idlest.avg_load());
        if sd.level == DomainLevel::Numa && ia + slack >= la {
            return None;
        }
        if ia >= la + slack || 100 * la <= sd.imbalance_pct as u64 * ia {
            return None;
        }
        Some(idlest.span)
    }

    /// The allowed CPU a new (or exec'ing) task should start on
    /// (`find_idlest_cpu`): descends `this_cpu`'s domains, at each level
    /// moving to the idlest group's idlest CPU, and picks the idlest CPU at
    /// the lowest level. On a flat machine: the allowed CPU with the fewest
    /// runnable tasks (idle first), then the least load, preferring
    /// `this_cpu` on ties.
    pub fn find_idlest_cpu(&self, t: &SchedTask, this_cpu: CpuId) -> CpuId {
        let mut cpu = this_cpu;
        let mut below = u32::MAX;
        while let Some(sd) = self.slots[cpu.index()]
            .doms
            .as_slice()
            .iter()
            .rev()
            .find(|sd| sd.weight < below)
        {
            if sd.child.is_none() {
                if let Some(c) = self.idlest_cpu_in(t, &sd.span, cpu) {
                    return c;
                }
                break;
            }
            below = sd.weight;
            if let Some(g) = self.find_idlest_group(sd, t, cpu) {
                if let Some(c) = self.idlest_cpu_in(t, &g, cpu) {
                    cpu = c;
                }
            }
        }
        if self.allowed(t, cpu) {
            cpu
        } else {
            self.first_allowed(t)
        }
    }

    /// `wake_affine` (Linux's, kernel/sched/fair.c): the waker's CPU if
    /// WA_IDLE or WA_WEIGHT choose it, else the previous CPU; and the rule
    /// that decided.
    fn wake_affine(
        &self,
        sd: &SchedDomain,
        t: &SchedTask,
        this_cpu: CpuId,
        prev_cpu: CpuId,
        sync: bool,
    ) -> (CpuId, AffineRule) {
        let mut target = None;
        if self.cfg.feat(Feature::WaIdle) {
            target = self.wake_affine_idle(this_cpu, prev_cpu, sync);
        }
        // WA_IDLE answers with the waker's or the previous CPU, as is.
        if let Some(decided) = target {
            return decided;
        }
        if self.cfg.feat(Feature::WaWeight)
            && self
                .wake_affine_weight(sd, t, this_cpu, prev_cpu, sync)
                .is_some()
        {
            return (this_cpu, AffineRule::WeightThis);
        }
        (prev_cpu, AffineRule::WeightPrev)
    }

    /// `wake_affine_idle`: an idle waker's CPU pulls the wakee only within
    /// one cache (and only if the previous CPU is not idle too); a sync
    /// waker alone on its CPU pulls it; an idle previous CPU keeps it.
    fn wake_affine_idle(
        &self,
        this_cpu: CpuId,
        prev_cpu: CpuId,
        sync: bool,
    ) -> Option<(CpuId, AffineRule)> {
        if self.idle(this_cpu) && self.topology.share_cache(this_cpu, prev_cpu) {
            return Some(if self.idle(prev_cpu) {
                (prev_cpu, AffineRule::IdlePrev)
            } else {
                (this_cpu, AffineRule::IdleThis)
            });
        }
        if sync && self.nr(this_cpu) == 1 {
            return Some((this_cpu, AffineRule::Sync));
        }
        if self.idle(prev_cpu) {
            return Some((prev_cpu, AffineRule::IdlePrev));
        }
        None
    }

    /// `wake_affine_weight`: the waker's CPU if its PELT load with the
    /// wakee's added (and a sync waker's own taken out) is below the
    /// previous CPU's without the wakee's, the previous CPU's load weighed
    /// up by half the domain's imbalance margin with WA_BIAS
    /// (`100 + (imbalance_pct - 100) / 2` against 100). A sync wakeup adds
    /// 1 to the previous CPU's side, so a tie comes to the waker. Loads are
    /// `cpu_load()` (the runqueue's `load_avg`, blocked load included) and
    /// `task_h_load()` (the task's `load_avg`: no task groups here). Each
    /// side is weighed by the other CPU's capacity (`capacity_of()`, here
    /// the CPU's own capacity, [`crate::Topology::capacity_of`], with no
    /// RT or IRQ pressure taken off), so that a smaller CPU must be less
    /// loaded in proportion to win.
    fn wake_affine_weight(
        &self,
        sd: &SchedDomain,
        t: &SchedTask,
        this_cpu: CpuId,
        prev_cpu: CpuId,
        sync: bool,
    ) -> Option<CpuId> {
        let mut this_eff_load = self.load_avg(this_cpu) as i128;
        if sync {
            let current_load = self.cpu_rq_curr_load_avg(this_cpu) as i128;
            if current_load > this_eff_load {
                return Some(this_cpu);
            }
            this_eff_load -= current_load;
        }
        let task_load = t.se.avg.load_avg as i128;
        this_eff_load += task_load;
        let bias = self.cfg.feat(Feature::WaBias);
        if bias {
            this_eff_load *= 100;
        }
        this_eff_load *= self.topology.capacity_of(prev_cpu) as i128;
        let mut prev_eff_load = self.load_avg(prev_cpu) as i128 - task_load;
        if bias {
            prev_eff_load *= 100 + (sd.imbalance_pct as i128 - 100) / 2;
        }
        prev_eff_load *= self.topology.capacity_of(this_cpu) as i128;
        if sync {
            prev_eff_load += 1;
        }
        (this_eff_load < prev_eff_load).then_some(this_cpu)
    }

    /// The running task's `load_avg` on `cpu` (`task_h_load(current)`).
    fn cpu_rq_curr_load_avg(&self, cpu: CpuId) -> u64 {
        // A racy read like Linux's: good enough for a heuristic; never blocks.
        self.slots[cpu.index()]
            .rq
            .try_lock()
            .and_then(|rq| {
                rq.curr()
                    .and_then(|c| rq.task(c).map(|t| t.se.avg.load_avg))
            })
            .unwrap_or(0)
    }

    /// `wake_wide`: does the waker (the task running on `this_cpu`) wake
    /// many different tasks, and the wakee too, each more than the LLC has
    /// CPUs (`sd_llc_size`), one of them that many times more than the
    /// other? Then pulling wakees to the waker would pile them up: the
    /// wakeup is not affine (Linux's `wake_wide()`, kernel/sched/fair.c).
    /// The flips are the tasks' `wakee_flips`, kept in their cells and
    /// recorded by [`Scheduler::wake`].
    pub fn wake_wide(&self, waker_flips: u32, wakee_flips: u32, this_cpu: CpuId) -> bool {
        let factor = self.topology.llc_size(this_cpu);
        let (master, slave) = if waker_flips < wakee_flips {
            (wakee_flips, waker_flips)
        } else {
            (waker_flips, wakee_flips)
        };
        !(slave < factor || master < slave.saturating_mul(factor))
    }

    /// `select_idle_sibling`: an idle CPU in `target`'s LLC, else `target`.
    /// Reports the CPUs it looked at ([`Platform::idle_scan`]).
    fn select_idle_sibling(
        &self,
        t: &SchedTask,
        prev_cpu: CpuId,
        target: CpuId,
        recent: Option<&AtomicU32>,
    ) -> (CpuId, SisPick) {
        let mut visited = 0;
        // sched_asym_cpucap_active(): CPUs of unequal capacity.
        let cpu = if self.topology.has_asym_capacity() {
            self.select_idle_sibling_asym(t, prev_cpu, target, recent, &mut visited)
        } else {
            self.select_idle_sibling_in::<false>(t, prev_cpu, target, recent, &mut visited)
        };
        self.platform.idle_scan(visited);
        cpu
    }

    /// `select_idle_sibling` after the asym test: the target, else the
    /// previous CPU if it shares the target's cache, else the task's
    /// `recent_used_cpu` (`recent`, its cell's; `None`: not tracked) if it
    /// differs from both and shares the target's cache, each if idle (and,
    /// with `ASYM`, if the task's utilization fits there: `asym_fits_cpu`);
    /// then with `ASYM` `select_idle_capacity` over the target's
    /// `sd_asym_cpucapacity`, else (or without such a domain: Linux's
    /// symmetric island) the LLC scan. Counts the CPUs it looks at.
    #[inline(always)]
    pub(super) fn select_idle_sibling_in<const ASYM: bool>(
        &self,
        t: &SchedTask,
        prev_cpu: CpuId,
        target: CpuId,
        recent: Option<&AtomicU32>,
        visited: &mut usize,
    ) -> (CpuId, SisPick) {
        let util = if ASYM { t.se.avg.task_util_est() } else { 0 };
        let mut idle_fits = |c: CpuId| {
            *visited += 1;
            self.choose_idle_cpu(c, t) && (!ASYM || self.util_fits_cpu(util, c))
        };
        if self.allowed(t, target) && idle_fits(target) {
            return (target, SisPick::Target);
        }
        let prev_shares = self.topology.share_cache(prev_cpu, target);
        if prev_cpu != target && prev_shares && self.allowed(t, prev_cpu) && idle_fits(prev_cpu) {
            return (prev_cpu, SisPick::Prev);
        }
        // recent_used_cpu (Linux 4.16, 32e839dda3ba "sched/fair: Use a
        // recently used CPU as an idle candidate and the basis for an SMT
        // search"): the previous CPU of the last wakeup that came this far.
        // Linux's fallback to it after the scan exists only for clusters,
        // which are not modelled.
        if let Some(cell) = recent {
            let r = cell.load(Ordering::Relaxed);
            cell.store(prev_cpu.as_u32(), Ordering::Relaxed);
            if r != prev_cpu.as_u32() && r != target.as_u32() {
                if let Some(rc) = CpuId::below(r as usize, self.nr_cpus()) {
                    if self.topology.share_cache(rc, target) && idle_fits(rc) && self.allowed(t, rc)
                    {
                        return (rc, SisPick::Recent);
                    }
                }
            }
        }
        if ASYM {
            if let Some(sd) = self.slots[target.index()].doms.asym_cpucapacity() {
                return self
                    .select_idle_capacity(t, sd, target, util, visited)
                    .map_or((target, SisPick::None), |c| (c, SisPick::Scan));
            }
        }
        self.select_idle_llc(t, prev_cpu, target, prev_shares, visited)
    }

    /// The LLC part of `select_idle_sibling`, once the target and the
    /// previous CPU were found busy: `select_idle_core`, `select_idle_smt`,
    /// `select_idle_cpu`; `target` if no CPU is idle.
    #[inline(always)]
    fn select_idle_llc(
        &self,
        t: &SchedTask,
        prev_cpu: CpuId,
        target: CpuId,
        prev_shares: bool,
        visited: &mut usize,
    ) -> (CpuId, SisPick) {
        let sched_idle_ok = self.may_prefer_sched_idle(t);
        let llc_span = self.topology.llc_mask(target);
        let llc = llc_span.and(&self.allowed_mask(t));
        if !self.topology.has_smt() {
            // select_idle_cpu: every core is one CPU. With SIS_UTIL at most
            // nr_idle_scan of them are looked at (Linux's `nr` counts down
            // before each CPU: none when the LLC is ~85% utilised). A
            // closure of its own, used once, so that it is compiled into
            // the scan's loop (a busy 64-CPU LLC is looked at CPU by CPU),
            // with its values (the slots as a slice) in registers.
            let nr = if self.cfg.feat(Feature::SisUtil) {
                self.llc_nr_idle_scan(&llc_span) as usize
            } else {
                usize::MAX
            };
            let slots = &self.slots[..];
            return llc
                .find_wrap(target.index() + 1, nr, move |c| {
                    *visited += 1;
                    self.scan_probe(&slots[c.index()], c, sched_idle_ok).1
                })
                .map_or((target, SisPick::None), |c| (c, SisPick::Scan));
        }
        let mut probe = |c: CpuId| {
            *visited += 1;
            self.scan_probe(&self.slots[c.index()], c, sched_idle_ok)
        };
        // select_idle_core: a core whose threads are all idle, remembering
        // the first idle CPU seen on the way. SIS_UTIL's limit of 0 (an LLC
        // ~85% utilised) skips it: Linux's select_idle_cpu returns before its
        // loop when `nr_idle_scan` is 0, with or without an idle-core hint.
        let mut unscanned = llc;
        if self.cfg.feat(Feature::SisUtil) && self.llc_nr_idle_scan(&llc_span) == 0 {
            unscanned = CpuMask::new();
        }
        let mut idle_cpu = None;
        for c in llc.cpus_wrap(target.index() + 1) {
            if !unscanned.has(c) {
                continue;
            }
            let core = self.topology.smt_mask(c);
            unscanned = unscanned.and_not(&core);
            let mut all_idle = true;
            for s in core.cpus() {
                // `select_idle_core`: a thread running only SCHED_IDLE
                // tasks (`choose_sched_idle_rq`) is no idle core's, but
                // may be the idle CPU remembered.
                let (idle, usable) = probe(s);
                if !idle {
                    all_idle = false;
                }
                if usable && idle_cpu.is_none() && llc.has(s) {
                    idle_cpu = Some(s);
                }
            }
            if all_idle {
                return (c, SisPick::Scan);
            }
        }
        // select_idle_smt: no idle core, so an idle thread next to prev.
        if prev_shares {
            let sibling = self
                .topology
                .smt_mask(prev_cpu)
                .and(&llc)
                .cpus()
                .find(|&s| s != prev_cpu && probe(s).1);
            if let Some(s) = sibling {
                return (s, SisPick::Scan);
            }
        }
        idle_cpu.map_or((target, SisPick::None), |c| (c, SisPick::Scan))
    }

    /// A CPU `c` looked at by the LLC scan, `slot` its slot: (idle, idle
    /// or running only SCHED_IDLE tasks that the wakee would preempt:
    /// `choose_idle_cpu`, with `sched_idle_ok` from
    /// [`Self::may_prefer_sched_idle`]).
    #[inline(always)]
    fn scan_probe(&self, slot: &CpuSlot, c: CpuId, sched_idle_ok: bool) -> (bool, bool) {
        let idle = self.idle_in(slot, c);
        (idle, idle || (sched_idle_ok && self.sched_idle_cpu(c)))
    }

    /// `sched_idle_rq` as the CPU's summary shows it: runnable tasks, all
    /// of them SCHED_IDLE. Read off the published counts: no RT or
    /// deadline task ready (`rt_rank` 0) and a fair weight of
    /// [`WEIGHT_IDLEPRIO`] per runnable task, which only SCHED_IDLE tasks
    /// have (the lightest nice weight is 15) when no task is in a group
    /// (with groups the root's weights are the groups' shares, so no CPU
    /// counts as such: Linux's `h_nr_idle` is left out there). A delayed
    /// task's weight still counts until it leaves, so the CPU is not
    /// SCHED_IDLE-only until then.
    pub(super) fn sched_idle_cpu(&self, cpu: CpuId) -> bool {
        if !self.cfg.sched_idle_seen() {
            return false;
        }
        let s = self.summary(cpu);
        let nr = s.nr_running.load(Ordering::Relaxed) as u64;
        nr != 0
            && s.load.load(Ordering::Relaxed) == nr * WEIGHT_IDLEPRIO as u64
            && s.rt_rank.load(Ordering::Relaxed) == 0
            && !self.cfg.groups.any_grouped()
    }

    /// `choose_idle_cpu`: `cpu` is idle, or runs only SCHED_IDLE tasks and
    /// `t` is not one (`available_idle_cpu || choose_sched_idle_rq`): the
    /// wakee would preempt them at once.
    #[inline(always)]
    pub(super) fn choose_idle_cpu(&self, cpu: CpuId, t: &SchedTask) -> bool {
        self.idle(cpu) || self.choose_sched_idle_rq(cpu, t)
    }

    /// `choose_sched_idle_rq`: `cpu` runs only SCHED_IDLE tasks and `t` is
    /// not one. Out of line: a wakeup that finds its target idle, the
    /// common case, does not pay for its code.
    #[inline(never)]
    fn choose_sched_idle_rq(&self, cpu: CpuId, t: &SchedTask) -> bool {
        self.may_prefer_sched_idle(t) && self.sched_idle_cpu(cpu)
    }

    /// Whether a CPU running only SCHED_IDLE tasks can count as idle for
    /// `t`: `t` is not SCHED_IDLE, and such a task has been seen
    /// ([`crate::config::SchedConfig::sched_idle_seen`]). Tested once per scan.
    #[inline(always)]
    fn may_prefer_sched_idle(&self, t: &SchedTask) -> bool {
        !t.has_idle_policy() && self.cfg.sched_idle_seen()
    }

    /// SIS_UTIL's scan limit of the LLC `llc_span` (its first CPU's summary
    /// holds it, Linux's `sd_llc_shared->nr_idle_scan`).
    #[inline]
    fn llc_nr_idle_scan(&self, llc_span: &CpuMask) -> u32 {
        llc_span.first_cpu().map_or(u32::MAX, |c| {
            self.summary(c).nr_idle_scan.load(Ordering::Relaxed)
        })
    }

    /// SIS_UTIL's current scan limit for `cpu`'s LLC
    /// (`sd_llc_shared->nr_idle_scan`): the CPUs a wakeup's
    /// `select_idle_cpu` may look at. The LLC's size until the first
    /// periodic balance of its domain; see [`nr_idle_scan_for`].
    pub fn nr_idle_scan(&self, cpu: CpuId) -> u32 {
        self.llc_nr_idle_scan(&self.topology.llc_mask(cpu))
    }

    /// Sets `cpu`'s LLC's scan limit, for tests that start from a given
    /// one (the next periodic balance of the LLC domain recomputes it).
    #[doc(hidden)]
    pub fn set_nr_idle_scan(&self, cpu: CpuId, nr: u32) {
        if let Some(c) = self.topology.llc_mask(cpu).first_cpu() {
            self.summary(c).nr_idle_scan.store(nr, Ordering::Relaxed);
        }
    }

    /// `update_idle_cpu_scan` (Linux's, kernel/sched/fair.c, from
    /// `update_sd_lb_stats`): at a periodic (not newly idle) balance of the
    /// domain that is `this_cpu`'s LLC, recomputes the LLC's scan limit
    /// from the utilisation summed over its active CPUs
    /// ([`Self::cpu_util_cfs`]). Returns the limit when it was recomputed.
    pub(super) fn update_idle_cpu_scan(
        &self,
        this_cpu: CpuId,
        sd: &SchedDomain,
        active: &CpuMask,
    ) -> Option<u32> {
        if !self.cfg.feat(Feature::SisUtil) {
            return None;
        }
        let llc_span = self.topology.llc_mask(this_cpu);
        let llc_weight = llc_span.weight() as u32;
        if sd.weight != llc_weight {
            return None;
        }
        let mut sum_util = 0;
        for c in sd.span.and(active).cpus() {
            sum_util += self.cpu_util_cfs(c);
        }
        let nr = nr_idle_scan_for(sum_util, llc_weight, sd.imbalance_pct);
        let first = llc_span.first_cpu()?;
        let cell = &self.summary(first).nr_idle_scan;
        // Linux writes the shared line only when the value changes.
        if cell.load(Ordering::Relaxed) != nr {
            cell.store(nr, Ordering::Relaxed);
        }
        Some(nr)
    }

    /// `select_task_rq`: the CPU a waking (or new) task should run on, and the
    /// wake flags to use (WF_RQ_SELECTED, plus WF_MIGRATED if it moves).
    pub fn select_task_rq(
        &self,
        t: &SchedTask,
        this_cpu: CpuId,
        wf: WakeFlags,
    ) -> (CpuId, WakeFlags) {
        self.select_task_rq_wide(t, this_cpu, wf, false)
    }

    /// [`Self::select_task_rq`] with `wake_wide()`'s answer for this wakeup
    /// (`wide`: not affine: the wakee stays near its previous CPU).
    pub fn select_task_rq_wide(
        &self,
        t: &SchedTask,
        this_cpu: CpuId,
        wf: WakeFlags,
        wide: bool,
    ) -> (CpuId, WakeFlags) {
        self.select_task_rq_recent(t, this_cpu, wf, wide, None)
    }

    /// [`Self::select_task_rq_wide`] with the task's `recent_used_cpu`
    /// (its cell's; read and written by `select_idle_sibling`).
    pub(super) fn select_task_rq_recent(
        &self,
        t: &SchedTask,
        this_cpu: CpuId,
        wf: WakeFlags,
        wide: bool,
        recent: Option<&AtomicU32>,
    ) -> (CpuId, WakeFlags) {
        let prev_cpu = t.cpu;
        let prev_ok = self.allowed(t, prev_cpu);
        // The previous CPU, or the first allowed one: where a wakeup starts.
        let base = || {
            if prev_ok {
                prev_cpu
            } else {
                self.first_allowed(t)
            }
        };
        let fork = wf.contains(WakeFlags::FORK) || wf.contains(WakeFlags::EXEC);
        let cpu = if t.class() == SchedClass::Rt && !fork {
            self.select_task_rq_rt(t, base(), this_cpu)
        } else if t.class() == SchedClass::Dl && !fork {
            self.select_task_rq_dl(t, base(), this_cpu)
        } else if fork {
            self.find_idlest_cpu(t, this_cpu)
        } else {
            let base = base();
            let mut target = base;
            let mut rule = if wide && this_cpu != base {
                AffineRule::Wide
            } else {
                AffineRule::NotAsked
            };
            // Wake-affine at the lowest domain of the waker holding prev,
            // looked up only when it is asked.
            let want_affine = !wide && self.allowed(t, this_cpu);
            let affine = (want_affine && this_cpu != base)
                .then(|| self.lowest_level_spanning(this_cpu, base))
                .flatten();
            if let Some(level) = affine {
                let sd = &self.domains(this_cpu)[level];
                (target, rule) =
                    self.wake_affine(sd, t, this_cpu, base, wf.contains(WakeFlags::SYNC));
                // The switch is asked here, and `Scheduler::wake` asks it
                // again after the wakeup: asked once there and passed down
                // (through `try_to_wake_up`, the parked path and this
                // function), it saved nothing: the flag kept live across
                // the wakeup cost what the second load saved (kernel,
                // `-icount`, schedstats off: a round trip +6.4 guest
                // instructions cross-CPU, +1.6 unpinned;
                // `docs/benchmarks.md`).
                if target == this_cpu
                    && wf.contains(WakeFlags::TTWU)
                    && self.platform.schedstat_enabled()
                {
                    self.ttwu_move_affine(this_cpu, level);
                }
            }
            let (cpu, pick) = self.select_idle_sibling(t, base, target, recent);
            if wf.contains(WakeFlags::TTWU) {
                self.platform.wake_placement(rule, pick, cpu == this_cpu);
            }
            cpu
        };
        let mut out = wf | WakeFlags::RQ_SELECTED;
        if cpu != prev_cpu && !wf.contains(WakeFlags::FORK) {
            out |= WakeFlags::MIGRATED;
        }
        (cpu, out)
    }
}

impl<P: Platform> Scheduler<P> {
    /// `select_task_rq_rt` for a wakeup: an RT task wakes on `cpu` (its
    /// previous CPU, or its first allowed one), where it preempts whatever
    /// fair task runs, unless an RT or deadline task of at least its rank
    /// runs there. Only then does it look elsewhere (`find_lowest_rq`): the
    /// allowed CPU running the lowest-ranked task, idle before fair, `cpu`
    /// then `this_cpu` on ties, and it moves there only if it would outrank
    /// what runs there. Fair placement (wake-affine, idle siblings) is not
    /// used: moving an RT wakee to an idle CPU costs it an IPI where Linux
    /// preempts locally.
    fn select_task_rq_rt(&self, t: &SchedTask, cpu: CpuId, this_cpu: CpuId) -> CpuId {
        let rank = super::rt_rank(t);
        let curr_rank = |c: CpuId| self.summary(c).curr_rt_rank.load(Ordering::Relaxed);
        if curr_rank(cpu) < rank {
            return cpu;
        }
        // (lowest rank, busy before idle is worse, preference) per CPU.
        let key = |c: CpuId| {
            let pref = if c == cpu {
                0
            } else if c == this_cpu {
                1
            } else {
                2
            };
            (curr_rank(c), !self.idle(c), pref)
        };
        let best = self
            .allowed_mask(t)
            .cpus()
            .take_while(|&c| c.index() < self.nr_cpus())
            .min_by_key(|&c| (key(c), c));
        match best {
            Some(c) if curr_rank(c) < rank => c,
            _ => cpu,
        }
    }
}

/// SIS_UTIL's scan limit for an LLC of `llc_weight` CPUs whose
/// utilisation sums to `sum_util`, in a domain of `imbalance_pct`
/// (Linux's `update_idle_cpu_scan`, introduced by 70fb5ccf2ebb
/// "sched/fair: Introduce SIS_UTIL to search idle CPU based on sum of
/// util_avg", Linux 6.0). With `x` the LLC's mean
/// utilisation per CPU (`sum_util / llc_weight`), the share of the LLC to
/// scan is `y = 1024 - x² · pct² / (10000 · 1024)` (at least 0), and the
/// limit `y · llc_weight / 1024`: the whole LLC when idle, nothing from
/// `x = 1024 · 100 / pct` on (~85% at the LLC's 117), each step in
/// Linux's integer arithmetic (truncating divisions).
pub fn nr_idle_scan_for(sum_util: u64, llc_weight: u32, imbalance_pct: u32) -> u32 {
    let scale = crate::pelt::SCHED_CAPACITY_SCALE as u128;
    let weight = llc_weight.max(1) as u128;
    let x = sum_util as u128 / weight;
    let pct = imbalance_pct as u128;
    let tmp = (x.saturating_mul(x).saturating_mul(pct * pct) / (10000 * scale)).min(scale);
    ((scale - tmp) * weight / scale) as u32
}

/// `update_pick_idlest`: is `a` a better place for a new task than `b`
/// (groups of a domain of `imbalance_pct`)?
fn idlest_better(a: &SgStats, b: &SgStats, imbalance_pct: u32) -> bool {
    let (ta, tb) = (a.group_type(imbalance_pct), b.group_type(imbalance_pct));
    if ta != tb {
        return ta < tb;
    }
    if ta == GroupType::HasSpare {
        (a.idle, b.nr) > (b.idle, a.nr)
    } else {
        (a.avg_load(), a.nr) < (b.avg_load(), b.nr)
    }
}
