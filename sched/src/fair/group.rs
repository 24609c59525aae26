//! Task groups: the hierarchical fair class (Linux's `CONFIG_FAIR_GROUP_SCHED`,
//! the cgroup v2 `cpu` controller's `cpu.weight`).
//!
//! # What
//!
//! A task group has a weight (`cpu.weight`, 1..=10000, default 100) and, on
//! every CPU, a *group entity* and a fair runqueue of its own (Linux's
//! `tg->se[cpu]` and `tg->cfs_rq[cpu]`). The group entity is queued in its
//! parent's runqueue (the root's, the CPU's [`FairRq`], for a top-level
//! group) while the group's runqueue holds anything; the group's tasks and
//! child groups are queued in the group's runqueue. Every level is a plain
//! EEVDF runqueue with its own V, lags, deadlines and eligibility: the code of
//! [`crate::fair`] runs unchanged at each level.
//!
//! - **Pick** walks down from the root (`pick_next_task_fair` →
//!   `pick_task_fair`): EEVDF's pick at each level, descending into the
//!   group runqueue of a picked group entity until a task comes up.
//! - **Charging**: every level's `update_curr` charges its own running
//!   entity (the running task's ancestor there), so a running task's time is
//!   charged to it and to every ancestor entity, each at its own weight
//!   (`task_tick_fair`'s walk, `for_each_sched_entity`).
//! - **Enqueue / dequeue** (`enqueue_task_fair`, `dequeue_entities`): the
//!   task goes into its group's runqueue; a group runqueue that becomes
//!   non-empty queues its group entity in the parent (placed there by
//!   `place_entity` with the lag it kept), one that becomes empty dequeues
//!   it, up to the first level that was (and stays) non-empty.
//! - **Shares** (`update_cfs_group`, `calc_group_shares`): a group entity's
//!   weight on a CPU is the group's shares (`weight · 1024 / 100`,
//!   `sched_group_set_weight` → `sched_weight_from_cgroup`) times the
//!   fraction of the group's load that is on this CPU, clamped to
//!   `[MIN_SHARES, shares]`, with Linux's approximation (eq. 6 of the
//!   comment above `calc_group_shares`):
//!
//!   ```text
//!       load      = max(grq->load.weight, grq->avg.load_avg)
//!       ge->load.weight = shares · load / (tg->load_avg - grq->tg_load_avg_contrib + load)
//!   ```
//!
//!   `tg->load_avg` ([`TaskGroups::load`], one atomic per group) is the sum
//!   of each CPU's last published group-runqueue `load_avg`; a CPU
//!   publishes when its value moved by more than 1/64 of what it published,
//!   at most once a millisecond ([`update_tg_load_avg`]). It is recomputed
//!   where Linux calls `update_cfs_group`: for every group entity on the
//!   path of an enqueue or a dequeue, and for the running task's ancestors
//!   at every tick (`entity_tick`); and on every CPU when the group's weight
//!   changes (`sched_group_set_shares`). A reweight of a queued entity keeps
//!   its lag (`reweight_entity`).
//! - **PELT up the hierarchy**: what is attached to or detached from a
//!   group runqueue (a fork, a migration, a move between groups, an exit)
//!   is recorded there (`add_tg_cfs_propagate`) and, at the group entity's
//!   next update, moved into the entity's averages and its parent's
//!   (`propagate_entity_load_avg`, [`propagate_group_avgs`]), level by level
//!   to the root; group runqueues' blocked load decays and is published at
//!   the tick (`__update_blocked_fair`). So the root's `load_avg` (what
//!   wake-affine and the balancer read) follows the tasks below it as in
//!   Linux, not the group entities' own runnable time.
//! - **Delayed dequeue**: a task whose dequeue is delayed stays queued in its
//!   group's runqueue, so its group entity stays queued too, as in Linux. A
//!   group entity whose runqueue empties is dequeued with DEQUEUE_SLEEP
//!   (Linux 7.2's `dequeue_entities`), so it is delayed in turn when it is
//!   not eligible in its parent's runqueue: queued with its lag until a
//!   pick lands on it (its dequeue finished) or its group gets a task again
//!   (requeued in place).
//! - **Migration**: a task carries its group ([`crate::SchedTask::group`]);
//!   enqueued on another CPU it goes into its group's runqueue there.
//!
//! # Cost, and the root-only path
//!
//! Group entities and group runqueues are created with the group
//! ([`crate::Rq::alloc_task_group`]), which may allocate: a slot of the
//! runqueue's arena for the entity, and a fair tree reserved for every slot.
//! Nothing allocates in a schedule, wakeup or tick path. A task in the root
//! group (every task of a system with no groups) takes the flat path: one test
//! of [`crate::SchedTask::group`] at enqueue and dequeue, and of
//! `SchedTask::my_q` at a pick. A grouped task costs one runqueue operation
//! per level: O(depth · log n). The number of groups is bounded by
//! [`MAX_TASK_GROUPS`] (the root included), the depth by [`MAX_GROUP_DEPTH`].

use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

use super::FairRq;
use crate::pelt::{SchedAvg, LOAD_AVG_MAX, PERIOD_UNITS, SCHED_CAPACITY_SHIFT};
use crate::task::NIL;
use crate::weight::NICE_0_LOAD;

/// Most task groups, the root group (id 0) included.
pub const MAX_TASK_GROUPS: usize = 64;
const _: () = assert!(MAX_TASK_GROUPS <= 256, "group ids are one byte");
/// Deepest nesting below the root (a top-level group has depth 1).
pub const MAX_GROUP_DEPTH: u8 = 8;
/// `cpu.weight`'s range and default (`CGROUP_WEIGHT_MIN/MAX/DFL`).
pub const CPU_WEIGHT_MIN: u32 = 1;
/// `CGROUP_WEIGHT_MAX`.
pub const CPU_WEIGHT_MAX: u32 = 10_000;
/// `CGROUP_WEIGHT_DFL`.
pub const CPU_WEIGHT_DEFAULT: u32 = 100;
/// The smallest weight a group entity gets (`MIN_SHARES`, 2; Linux's is in
/// its scaled load units, 2/1024 of a nice-0 task, ours in plain units).
pub const MIN_SHARES: u64 = 2;

/// A task group's id: 0 is the root group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupId(pub u8);

impl GroupId {
    /// The root group (every task's group until attached elsewhere).
    pub const ROOT: GroupId = GroupId(0);
}

/// Why a task-group operation was refused (nothing was changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupError {
    /// [`MAX_TASK_GROUPS`] groups exist already.
    TooManyGroups,
    /// The parent would be nested deeper than [`MAX_GROUP_DEPTH`].
    TooDeep,
    /// No such group (or the root, where a real group is needed).
    NoSuchGroup,
    /// A weight outside `CPU_WEIGHT_MIN..=CPU_WEIGHT_MAX`.
    BadWeight(u32),
    /// The group still has tasks or child groups.
    Busy,
    /// The task is not known (not held by the runqueue asked).
    NoSuchTask,
    /// Allocating a group runqueue failed.
    NoMemory,
}

impl core::fmt::Display for GroupError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            GroupError::TooManyGroups => {
                write!(f, "too many task groups (at most {})", MAX_TASK_GROUPS - 1)
            }
            GroupError::TooDeep => write!(f, "task groups nest at most {MAX_GROUP_DEPTH} deep"),
            GroupError::NoSuchGroup => write!(f, "no such task group"),
            GroupError::BadWeight(w) => write!(
                f,
                "weight {w} out of range {CPU_WEIGHT_MIN}..={CPU_WEIGHT_MAX}"
            ),
            GroupError::Busy => write!(f, "task group still has tasks or child groups"),
            GroupError::NoSuchTask => write!(f, "no such task"),
            GroupError::NoMemory => write!(f, "out of memory for the group's runqueues"),
        }
    }
}

/// `cpu.weight` → shares (`sched_weight_from_cgroup`: weight · 1024 / 100).
pub fn weight_to_shares(weight: u32) -> u64 {
    u64::from(weight) * NICE_0_LOAD / u64::from(CPU_WEIGHT_DEFAULT)
}

/// `calc_group_shares` (Linux 7.2, kernel/sched/fair.c): the weight of a
/// group entity whose runqueue holds `grq_weight` queued weight and has a
/// PELT load average `grq_load_avg`, for a group of `tg_shares` whose
/// `tg->load_avg` is `tg_load_avg`, this CPU's part of it being
/// `tg_load_avg_contrib` (as last published by [`update_tg_load_avg`]'s
/// filter):
///
/// ```text
///     load      = max(grq->load.weight, grq->avg.load_avg)
///     tg_weight = tg->load_avg - grq->tg_load_avg_contrib + load
///     shares    = tg_shares · load / tg_weight     clamped to [MIN_SHARES, tg_shares]
/// ```
///
/// (eq. 6 of the comment above it: the exact eq. 1 with the queued weights
/// replaced by load averages, and this CPU's own term by its instant value.)
pub fn calc_group_shares(
    tg_shares: u64,
    grq_weight: u64,
    grq_load_avg: u64,
    tg_load_avg: u64,
    tg_load_avg_contrib: u64,
) -> u64 {
    let load = grq_weight.max(grq_load_avg);
    let tg_weight =
        (i128::from(tg_load_avg) - i128::from(tg_load_avg_contrib) + i128::from(load)).max(0);
    let mut shares = u128::from(tg_shares) * u128::from(load);
    if tg_weight != 0 {
        shares /= tg_weight as u128;
    }
    (shares.min(u128::from(u64::MAX)) as u64).clamp(MIN_SHARES, tg_shares.max(MIN_SHARES))
}

/// `NSEC_PER_MSEC`: [`update_tg_load_avg`] publishes a runqueue's load at
/// most once per this many ns (Linux 6.7, commit 1528c661c24b
/// "sched/fair: Ratelimit update to tg->load_avg").
pub const TG_LOAD_AVG_PERIOD_NS: u64 = 1_000_000;

/// `update_tg_load_avg`'s decision for one group runqueue at `now_ns`: the
/// change to add to `tg->load_avg`, or `None` when it is not published
/// (less than [`TG_LOAD_AVG_PERIOD_NS`] since the last publication, or a
/// change of at most 1/64 of the published contribution).
#[inline]
pub fn update_tg_load_avg(
    load_avg: u64,
    tg_load_avg_contrib: u64,
    last_update_ns: u64,
    now_ns: u64,
) -> Option<i64> {
    if now_ns.wrapping_sub(last_update_ns) < TG_LOAD_AVG_PERIOD_NS {
        return None;
    }
    let delta = load_avg as i64 - tg_load_avg_contrib as i64;
    (delta.unsigned_abs() > tg_load_avg_contrib / 64).then_some(delta)
}

/// What `propagate_entity_load_avg` reads of a group runqueue (`gcfs_rq`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupAvgs {
    /// `gcfs_rq->avg.util_avg`.
    pub util_avg: u64,
    /// `gcfs_rq->avg.runnable_avg`.
    pub runnable_avg: u64,
    /// `gcfs_rq->avg.load_sum` (weighted).
    pub load_sum: u64,
    /// `gcfs_rq->load.weight`.
    pub weight: u64,
    /// `gcfs_rq->prop_runnable_sum` (unweighted).
    pub prop_runnable_sum: i64,
}

/// `add_positive`: `*x += d`, 0 where it would go below.
#[inline]
fn add_positive(x: &mut u64, d: i64) {
    *x = if d >= 0 {
        x.saturating_add(d as u64)
    } else {
        x.saturating_sub(d.unsigned_abs())
    };
}

/// `PELT_MIN_DIVIDER`.
const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - PERIOD_UNITS;

/// `update_tg_cfs_util` / `update_tg_cfs_runnable`: the group entity's
/// average takes the group runqueue's value `g_avg`, its sum rebuilt on the
/// parent's `divider`; the parent's average and sum change by as much.
fn take_group_avg(
    g_avg: u64,
    se_avg: &mut u64,
    se_sum: &mut u64,
    avg: &mut u64,
    sum: &mut u64,
    divider: u64,
) {
    let d_avg = g_avg as i64 - *se_avg as i64;
    if d_avg == 0 {
        return;
    }
    *se_avg = g_avg;
    let new_sum = g_avg * divider;
    let d_sum = new_sum as i64 - *se_sum as i64;
    *se_sum = new_sum;
    add_positive(avg, d_avg);
    add_positive(sum, d_sum);
    *sum = (*sum).max(*avg * PELT_MIN_DIVIDER);
}

/// `propagate_entity_load_avg`'s arithmetic (Linux 7.2): a group
/// runqueue's pending change `g` moves into its group entity's averages
/// `se` (of weight `se_weight`) and, by the same amounts, into the averages
/// `cfs` of the runqueue the entity is attached to (`add_tg_cfs_propagate`,
/// `update_tg_cfs_util`, `update_tg_cfs_runnable`, `update_tg_cfs_load`, in
/// that order). Returns what the parent runqueue must propagate in turn
/// (its `prop_runnable_sum` grows by `g.prop_runnable_sum`).
///
/// - util and runnable: the entity takes the group runqueue's averages,
///   its sums rebuilt on the parent's divider; the parent changes by the
///   differences.
/// - load: an attach (`prop_runnable_sum > 0`) adds the attached
///   (unweighted) runnable sum to the entity's, capped at the divider (a
///   group cannot be more than always runnable); a detach estimates the
///   group's new runnable sum as its load sum per unit of queued weight
///   (all its tasks equally runnable), never above the entity's. The
///   result is at least the running sum (`util_sum >> 10`); the entity's
///   `load_avg` is `se_weight ·` it `/ divider`.
pub fn propagate_group_avgs(
    g: GroupAvgs,
    se: &mut SchedAvg,
    se_weight: u64,
    cfs: &mut SchedAvg,
) -> i64 {
    let divider = cfs.divider();
    // update_tg_cfs_util, update_tg_cfs_runnable
    take_group_avg(
        g.util_avg,
        &mut se.util_avg,
        &mut se.util_sum,
        &mut cfs.util_avg,
        &mut cfs.util_sum,
        divider,
    );
    take_group_avg(
        g.runnable_avg,
        &mut se.runnable_avg,
        &mut se.runnable_sum,
        &mut cfs.runnable_avg,
        &mut cfs.runnable_sum,
        divider,
    );
    // update_tg_cfs_load
    let prop = g.prop_runnable_sum;
    if prop == 0 {
        return prop;
    }
    let mut runnable_sum = if prop >= 0 {
        (prop as u64).saturating_add(se.load_sum).min(divider)
    } else {
        let per_weight = g.load_sum.checked_div(g.weight).unwrap_or(0);
        se.load_sum.min(per_weight)
    };
    let running_sum = se.util_sum >> SCHED_CAPACITY_SHIFT;
    runnable_sum = runnable_sum.max(running_sum);
    let load_sum = u128::from(se_weight) * u128::from(runnable_sum);
    let load_avg = (load_sum / u128::from(divider)) as u64;
    let d_avg = load_avg as i64 - se.load_avg as i64;
    if d_avg == 0 {
        return prop;
    }
    let d_sum = load_sum as i128 - i128::from(se_weight) * i128::from(se.load_sum);
    se.load_sum = runnable_sum;
    se.load_avg = load_avg;
    add_positive(&mut cfs.load_avg, d_avg);
    add_positive(
        &mut cfs.load_sum,
        d_sum.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
    );
    cfs.load_sum = cfs.load_sum.max(cfs.load_avg * PELT_MIN_DIVIDER);
    prop
}

/// One group in the registry.
#[derive(Clone, Copy, Debug, Default)]
struct GroupInfo {
    live: bool,
    parent: u8,
    depth: u8,
    weight: u32,
    /// Tasks attached (by [`crate::Rq::sched_move_task`] and its callers),
    /// not yet exited.
    nr_tasks: u32,
    nr_children: u32,
}

/// What a runqueue needs to know of a group to build its per-CPU part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupShape {
    /// The parent group.
    pub parent: GroupId,
    /// Its depth (1: a child of the root).
    pub depth: u8,
}

/// The machine's task groups (Linux's `task_group` list with each group's
/// `shares` and `load_avg`): shared by every runqueue through
/// [`crate::SchedConfig::groups`]. Creation, destruction and attachment
/// counts take a lock (slow paths); the shares and each group's
/// `load_avg` are atomics read and updated under a runqueue's lock only.
#[derive(Debug)]
pub struct TaskGroups {
    registry: spin::Mutex<[GroupInfo; MAX_TASK_GROUPS]>,
    shares: [AtomicU64; MAX_TASK_GROUPS],
    /// `tg->load_avg`: Σ over CPUs of each CPU's contribution (its group
    /// runqueue's `load_avg` when it last published it).
    load: [AtomicI64; MAX_TASK_GROUPS],
    /// Tasks attached to a group other than the root (written under
    /// `registry`; read without it by the balancer, [`Self::any_grouped`]).
    grouped: AtomicU32,
}

impl Default for TaskGroups {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskGroups {
    /// Only the root group.
    pub fn new() -> Self {
        let mut reg = [GroupInfo::default(); MAX_TASK_GROUPS];
        reg[0] = GroupInfo {
            live: true,
            parent: 0,
            depth: 0,
            weight: CPU_WEIGHT_DEFAULT,
            nr_tasks: 0,
            nr_children: 0,
        };
        TaskGroups {
            registry: spin::Mutex::new(reg),
            shares: core::array::from_fn(|_| AtomicU64::new(weight_to_shares(CPU_WEIGHT_DEFAULT))),
            load: core::array::from_fn(|_| AtomicI64::new(0)),
            grouped: AtomicU32::new(0),
        }
    }

    /// Checks a `cpu.weight` value.
    pub fn check_weight(weight: u32) -> Result<(), GroupError> {
        if (CPU_WEIGHT_MIN..=CPU_WEIGHT_MAX).contains(&weight) {
            Ok(())
        } else {
            Err(GroupError::BadWeight(weight))
        }
    }

    /// Registers a group under `parent` with `weight` (`sched_create_group`).
    /// Its per-CPU runqueues are each runqueue's to allocate
    /// ([`crate::Rq::alloc_task_group`]); [`crate::Rq::create_task_group`]
    /// does both on a single runqueue.
    pub fn create(&self, parent: GroupId, weight: u32) -> Result<GroupId, GroupError> {
        Self::check_weight(weight)?;
        let mut reg = self.registry.lock();
        let p = reg
            .get(parent.0 as usize)
            .filter(|g| g.live)
            .ok_or(GroupError::NoSuchGroup)?;
        if p.depth >= MAX_GROUP_DEPTH {
            return Err(GroupError::TooDeep);
        }
        let depth = p.depth + 1;
        let id = (1..MAX_TASK_GROUPS)
            .find(|&i| !reg[i].live)
            .ok_or(GroupError::TooManyGroups)?;
        reg[id] = GroupInfo {
            live: true,
            parent: parent.0,
            depth,
            weight,
            nr_tasks: 0,
            nr_children: 0,
        };
        reg[parent.0 as usize].nr_children += 1;
        self.shares[id].store(weight_to_shares(weight), Ordering::Relaxed);
        self.load[id].store(0, Ordering::Relaxed);
        Ok(GroupId(id as u8))
    }

    /// Forgets a group with no tasks and no child groups
    /// (`sched_destroy_group`); refused ([`GroupError::Busy`]) otherwise.
    /// The runqueues free their part with [`crate::Rq::free_task_group`].
    pub fn destroy(&self, g: GroupId) -> Result<(), GroupError> {
        let mut reg = self.registry.lock();
        let info = Self::live_info(&reg, g)?;
        if info.nr_tasks != 0 || info.nr_children != 0 {
            return Err(GroupError::Busy);
        }
        reg[info.parent as usize].nr_children -= 1;
        reg[g.0 as usize].live = false;
        Ok(())
    }

    fn live_info(reg: &[GroupInfo; MAX_TASK_GROUPS], g: GroupId) -> Result<GroupInfo, GroupError> {
        if g.0 == 0 {
            return Err(GroupError::NoSuchGroup);
        }
        reg.get(g.0 as usize)
            .copied()
            .filter(|i| i.live)
            .ok_or(GroupError::NoSuchGroup)
    }

    /// Sets a group's `cpu.weight` (`sched_group_set_weight`); a bad value or
    /// group changes nothing. The runqueues reweight the group's entities at
    /// their next update, or at once through [`crate::Rq::update_group_shares`].
    pub fn set_weight(&self, g: GroupId, weight: u32) -> Result<(), GroupError> {
        Self::check_weight(weight)?;
        let mut reg = self.registry.lock();
        Self::live_info(&reg, g)?;
        reg[g.0 as usize].weight = weight;
        self.shares[g.0 as usize].store(weight_to_shares(weight), Ordering::Relaxed);
        Ok(())
    }

    /// A group's `cpu.weight`.
    pub fn weight(&self, g: GroupId) -> Result<u32, GroupError> {
        if g.0 == 0 {
            return Ok(CPU_WEIGHT_DEFAULT);
        }
        Ok(Self::live_info(&self.registry.lock(), g)?.weight)
    }

    /// Where a live group sits.
    pub fn shape(&self, g: GroupId) -> Result<GroupShape, GroupError> {
        let reg = self.registry.lock();
        let i = Self::live_info(&reg, g)?;
        Ok(GroupShape {
            parent: GroupId(i.parent),
            depth: i.depth,
        })
    }

    /// Is `g` the root or a live group?
    pub fn exists(&self, g: GroupId) -> bool {
        g.0 == 0 || Self::live_info(&self.registry.lock(), g).is_ok()
    }

    /// Every live group but the root: (id, parent, weight, attached tasks).
    pub fn list(&self) -> alloc::vec::Vec<(GroupId, GroupId, u32, u32)> {
        let reg = self.registry.lock();
        (1..MAX_TASK_GROUPS)
            .filter(|&i| reg[i].live)
            .map(|i| {
                (
                    GroupId(i as u8),
                    GroupId(reg[i].parent),
                    reg[i].weight,
                    reg[i].nr_tasks,
                )
            })
            .collect()
    }

    /// Counts a task moving from group `from` to group `to` (either may be
    /// the root, which is not counted). `to` must be live.
    pub fn move_task(&self, from: GroupId, to: GroupId) -> Result<(), GroupError> {
        let mut reg = self.registry.lock();
        if to.0 != 0 {
            Self::live_info(&reg, to)?;
            reg[to.0 as usize].nr_tasks += 1;
            self.grouped.fetch_add(1, Ordering::Relaxed);
        }
        if from.0 != 0 {
            let f = &mut reg[from.0 as usize];
            if f.nr_tasks != 0 {
                f.nr_tasks -= 1;
                self.grouped.fetch_sub(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Is any task attached to a group other than the root? (One relaxed
    /// load: the balancer's test of whether counts still stand for loads.)
    #[inline]
    pub fn any_grouped(&self) -> bool {
        self.grouped.load(Ordering::Relaxed) != 0
    }

    /// Tasks attached to `g` and not exited.
    pub fn nr_tasks(&self, g: GroupId) -> u32 {
        self.registry.lock()[g.0 as usize].nr_tasks
    }

    /// A group's shares (`tg->shares`).
    #[inline]
    pub fn shares(&self, g: u8) -> u64 {
        self.shares[g as usize].load(Ordering::Relaxed)
    }

    /// The group's load summed over every CPU as published (`tg->load_avg`).
    #[inline]
    pub fn load(&self, g: u8) -> u64 {
        self.load[g as usize].load(Ordering::Relaxed).max(0) as u64
    }

    /// Adds a CPU's change of contribution; returns the new sum.
    #[inline]
    pub(crate) fn add_load(&self, g: u8, delta: i64) -> u64 {
        (self.load[g as usize].fetch_add(delta, Ordering::Relaxed) + delta).max(0) as u64
    }
}

/// One group's part on one CPU: its runqueue and its entity (`tg->cfs_rq[cpu]`,
/// `tg->se[cpu]`).
#[derive(Clone, Debug)]
pub struct GroupRq {
    /// The group's fair runqueue on this CPU.
    pub fair: FairRq,
    /// The group entity's slot in the runqueue's arena, NIL when the group
    /// has no part here (not created, or destroyed).
    pub se: u32,
    /// The parent group.
    pub parent: u8,
    /// Depth below the root (1 for a top-level group).
    pub depth: u8,
    /// This CPU's contribution to the group's load ([`TaskGroups::load`]):
    /// its runqueue's `load_avg` when last published
    /// (`tg_load_avg_contrib`).
    pub load_contrib: u64,
    /// When it was last published, ns of the runqueue's clock
    /// (`last_update_tg_load_avg`).
    pub load_contrib_ns: u64,
}

impl Default for GroupRq {
    fn default() -> Self {
        GroupRq {
            fair: FairRq::new(),
            se: NIL,
            parent: 0,
            depth: 0,
            load_contrib: 0,
            load_contrib_ns: 0,
        }
    }
}

/// The PELT identity of group `g`'s runqueue on CPU `cpu` (the value of
/// `FairEntity::avg_cpu` of an entity attached there): distinct from every
/// CPU number and from the two marks above bit 30 (`AVG_DETACHED`, a group
/// entity not attached yet), so that a grouped task's averages attach to its
/// group runqueue and never to the root's.
pub(crate) fn group_avg_cpu(cpu: u32, g: u8) -> u32 {
    (1 << 30) | (u32::from(g) << 20) | (cpu & 0xF_FFFF)
}

/// The CPU and group of a group runqueue's PELT identity
/// ([`group_avg_cpu`]); `None` for a CPU's root runqueue or a mark.
pub(crate) fn group_avg_owner(avg_cpu: u32) -> Option<(usize, u8)> {
    (avg_cpu >> 30 == 1).then_some(((avg_cpu & 0xF_FFFF) as usize, (avg_cpu >> 20) as u8))
}

/// One group runqueue's pending removals: the sums of the averages of the
/// entities that left it while its lock was not held.
#[derive(Debug, Default)]
struct RemovedSums {
    load_avg: AtomicU64,
    util_avg: AtomicU64,
    runnable_avg: AtomicU64,
}

/// Linux's `cfs_rq->removed` for every group runqueue of one CPU: the
/// averages of grouped sleepers that were attached to one of them and were
/// woken on another CPU, moved to another group or removed while asleep
/// (`remove_entity_load_avg` from `migrate_task_rq_fair`,
/// `task_change_group_fair`, `task_dead_fair`), recorded without that CPU's
/// lock and taken out of the group runqueue's averages under it, where
/// Linux's `update_cfs_rq_load_avg` does (here: the next time the lock is
/// dropped, as the root's `RemovedLoad`). Linux takes a spinlock per
/// runqueue; here each group's sums are atomics and a bit per group marks
/// those with something pending. Fixed size (one record per possible group,
/// [`MAX_TASK_GROUPS`]): built with the CPU's first group, never grown, so
/// a wakeup that records a removal allocates nothing.
#[derive(Debug)]
pub struct GroupRemoved {
    /// Bit `g`: group `g`'s record has a removal to apply.
    pending: AtomicU64,
    sums: [RemovedSums; MAX_TASK_GROUPS],
}

const _: () = assert!(MAX_TASK_GROUPS <= 64, "one pending bit per group");

impl Default for GroupRemoved {
    fn default() -> Self {
        GroupRemoved {
            pending: AtomicU64::new(0),
            sums: core::array::from_fn(|_| RemovedSums::default()),
        }
    }
}

impl GroupRemoved {
    /// A record for one CPU, on the heap; [`GroupError::NoMemory`] when the
    /// allocation is refused.
    pub fn try_new_boxed() -> Result<alloc::boxed::Box<[GroupRemoved; 1]>, GroupError> {
        let mut v = alloc::vec::Vec::new();
        v.try_reserve_exact(1).map_err(|_| GroupError::NoMemory)?;
        v.push(GroupRemoved::default());
        v.into_boxed_slice()
            .try_into()
            .map_err(|_| GroupError::NoMemory)
    }

    /// Records the removal of averages `a` (synchronised to about now) from
    /// group `g`'s runqueue.
    pub fn add(&self, g: u8, a: &SchedAvg) {
        let r = &self.sums[g as usize];
        r.load_avg.fetch_add(a.load_avg, Ordering::Relaxed);
        r.util_avg.fetch_add(a.util_avg, Ordering::Relaxed);
        r.runnable_avg.fetch_add(a.runnable_avg, Ordering::Relaxed);
        self.pending.fetch_or(1 << g, Ordering::Release);
    }

    /// The groups with removals pending, cleared (their sums are taken with
    /// [`Self::take`]). A removal recorded meanwhile sets its bit again: at
    /// worst it is applied now and its bit finds nothing the next time.
    pub fn take_pending(&self) -> u64 {
        self.pending.swap(0, Ordering::Acquire)
    }

    /// Group `g`'s pending sums (`load_avg`, `util_avg`, `runnable_avg`),
    /// cleared.
    pub fn take(&self, g: u8) -> (u64, u64, u64) {
        let r = &self.sums[g as usize];
        (
            r.load_avg.swap(0, Ordering::Relaxed),
            r.util_avg.swap(0, Ordering::Relaxed),
            r.runnable_avg.swap(0, Ordering::Relaxed),
        )
    }

    /// Group `g`'s pending sums as they are (for tests and inspection).
    pub fn peek(&self, g: u8) -> (u64, u64, u64) {
        let r = &self.sums[g as usize];
        (
            r.load_avg.load(Ordering::Relaxed),
            r.util_avg.load(Ordering::Relaxed),
            r.runnable_avg.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_follow_linux() {
        assert_eq!(weight_to_shares(100), 1024);
        assert_eq!(weight_to_shares(1), 10);
        assert_eq!(weight_to_shares(10_000), 102_400);
        // Alone on its CPU: all of it, whatever its figures.
        assert_eq!(calc_group_shares(1024, 3072, 3000, 3000, 3000), 1024);
        assert_eq!(calc_group_shares(1024, 0, 700, 0, 0), 1024);
        // A quarter of its load here: 1024 · 1024 / (4096 - 1024 + 1024).
        assert_eq!(calc_group_shares(1024, 1024, 1000, 4096, 1024), 256);
        // The load is the larger of the queued weight and the average, and
        // this CPU's published part is replaced by it: 1024 · 2048 /
        // (3000 - 1000 + 2048) = 518.
        assert_eq!(calc_group_shares(1024, 2048, 1500, 3000, 1000), 518);
        assert_eq!(calc_group_shares(1024, 1000, 2048, 3000, 1000), 518);
        // Empty here: MIN_SHARES.
        assert_eq!(calc_group_shares(1024, 0, 0, 4096, 0), MIN_SHARES);
        assert_eq!(calc_group_shares(1024, 0, 0, 0, 0), MIN_SHARES);
    }

    #[test]
    fn tg_load_avg_is_published_past_a_64th_at_most_once_a_ms() {
        const MS: u64 = TG_LOAD_AVG_PERIOD_NS;
        // Within the millisecond: nothing, whatever the change.
        assert_eq!(update_tg_load_avg(5000, 0, 10 * MS, 10 * MS + MS - 1), None);
        // A change of 1/64 of the contribution or less: nothing.
        assert_eq!(update_tg_load_avg(6400 + 100, 6400, 0, 2 * MS), None);
        assert_eq!(update_tg_load_avg(6400 - 100, 6400, 0, 2 * MS), None);
        // More: the change.
        assert_eq!(update_tg_load_avg(6400 + 101, 6400, 0, 2 * MS), Some(101));
        assert_eq!(update_tg_load_avg(6400 - 101, 6400, 0, 2 * MS), Some(-101));
        assert_eq!(update_tg_load_avg(1, 0, 0, MS), Some(1));
    }

    #[test]
    fn registry_checks_and_changes_nothing_on_error() {
        let t = TaskGroups::new();
        assert_eq!(t.create(GroupId(0), 0), Err(GroupError::BadWeight(0)));
        assert_eq!(
            t.create(GroupId(0), 10_001),
            Err(GroupError::BadWeight(10_001))
        );
        assert_eq!(t.create(GroupId(5), 100), Err(GroupError::NoSuchGroup));
        let a = t.create(GroupId::ROOT, 100).unwrap();
        let b = t.create(a, 300).unwrap();
        assert_eq!(t.set_weight(b, 0), Err(GroupError::BadWeight(0)));
        assert_eq!(t.weight(b), Ok(300));
        assert_eq!(t.shares(b.0), 3072);
        assert_eq!(t.destroy(a), Err(GroupError::Busy));
        t.move_task(GroupId::ROOT, b).unwrap();
        assert_eq!(t.destroy(b), Err(GroupError::Busy));
        t.move_task(b, GroupId::ROOT).unwrap();
        t.destroy(b).unwrap();
        t.destroy(a).unwrap();
        assert_eq!(t.destroy(GroupId::ROOT), Err(GroupError::NoSuchGroup));
        assert!(t.list().is_empty());
        // The bound.
        let mut made = 0;
        while t.create(GroupId::ROOT, 100).is_ok() {
            made += 1;
        }
        assert_eq!(made, MAX_TASK_GROUPS - 1);
        assert_eq!(t.create(GroupId::ROOT, 100), Err(GroupError::TooManyGroups));
        // Depth.
        let t = TaskGroups::new();
        let mut g = GroupId::ROOT;
        for _ in 0..MAX_GROUP_DEPTH {
            g = t.create(g, 100).unwrap();
        }
        assert_eq!(t.create(g, 100), Err(GroupError::TooDeep));
    }
}
