//! The scheduling state of one task: policy, weight, the fair entity and the RT
//! entity. A [`SchedTask`] travels with its thread: while the task is queued on a
//! CPU it lives in that runqueue's arena (so the tree can link it without
//! pointers), and when it is fully dequeued it is handed back to the kernel by
//! value.

use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::tunables::{MAX_SLICE_NS, MIN_SLICE_NS};
use crate::weight::LoadWeight;

/// "No node" in arena links.
pub const NIL: u32 = u32::MAX;

/// A task's id, chosen by the kernel: any value below the runqueue's id limit
/// (it need not be dense; each runqueue maps it to a local slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub u32);

/// Scheduling policies, as in Linux's `sched_setscheduler`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_NORMAL (SCHED_OTHER): fair class, wakeup-preempts.
    Normal,
    /// SCHED_BATCH: fair class, never wakeup-preempts.
    Batch,
    /// SCHED_IDLE: fair class with weight 3; always preempted by non-idle wakees.
    Idle,
    /// SCHED_FIFO: RT class, runs until it blocks, yields or a higher priority wakes.
    Fifo,
    /// SCHED_RR: RT class with a time slice among equal priorities.
    RoundRobin,
    /// SCHED_DEADLINE: runtime every period, by its deadline (EDF + CBS).
    Deadline,
}

impl Policy {
    /// The scheduling class that runs this policy.
    pub const fn class(self) -> crate::class::SchedClass {
        match self {
            Policy::Deadline => crate::class::SchedClass::Dl,
            Policy::Fifo | Policy::RoundRobin => crate::class::SchedClass::Rt,
            Policy::Normal | Policy::Batch | Policy::Idle => crate::class::SchedClass::Fair,
        }
    }

    /// Linux's name (`SCHED_NORMAL`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Normal => "SCHED_NORMAL",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Fifo => "SCHED_FIFO",
            Policy::RoundRobin => "SCHED_RR",
            Policy::Deadline => "SCHED_DEADLINE",
        }
    }

    /// Short name for tables (`ps`): `NORMAL`, `BATCH`, `IDLE`, `FIFO`, `RR`.
    pub const fn short_name(self) -> &'static str {
        match self {
            Policy::Normal => "NORMAL",
            Policy::Batch => "BATCH",
            Policy::Idle => "IDLE",
            Policy::Fifo => "FIFO",
            Policy::RoundRobin => "RR",
            Policy::Deadline => "DEADLINE",
        }
    }
}

/// Highest RT priority (`sched_priority`), as in Linux.
pub const MAX_RT_PRIO: u8 = 99;

/// What a task asks of the scheduler (the `sched_attr` of `sched_setattr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskParams {
    /// The policy.
    pub policy: Policy,
    /// Nice value, -20..=19 (fair policies).
    pub nice: i32,
    /// RT priority 1..=99 (FIFO/RR); ignored for fair policies.
    pub rt_priority: u8,
    /// Custom slice (`sched_runtime`) in ns, 0 for the base slice. Clamped to
    /// 0.1..=100 ms.
    pub slice_ns: u64,
    /// SCHED_DEADLINE: runtime per period (`sched_runtime`), 0 otherwise.
    pub dl_runtime_ns: u64,
    /// SCHED_DEADLINE: relative deadline (`sched_deadline`), 0 otherwise.
    pub dl_deadline_ns: u64,
    /// SCHED_DEADLINE: period (`sched_period`; 0: the deadline), 0 otherwise.
    pub dl_period_ns: u64,
}

impl Default for TaskParams {
    fn default() -> Self {
        TaskParams {
            policy: Policy::Normal,
            nice: 0,
            rt_priority: 0,
            slice_ns: 0,
            dl_runtime_ns: 0,
            dl_deadline_ns: 0,
            dl_period_ns: 0,
        }
    }
}

/// Why a set of [`TaskParams`] was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamsError {
    /// Nice outside -20..=19.
    NiceOutOfRange,
    /// RT priority outside 1..=99 for FIFO/RR, or non-zero for a fair policy.
    RtPriorityOutOfRange,
    /// SCHED_DEADLINE attributes out of range (Linux's `__checkparam_dl`),
    /// or set for another policy.
    DlAttrInvalid,
    /// Admitting the SCHED_DEADLINE task would take the root domain's
    /// deadline bandwidth over its limit (Linux's -EBUSY).
    DlBandwidthExceeded,
    /// SCHED_DEADLINE for a task whose allowed CPUs do not cover its root
    /// domain (here: every active CPU); Linux's `__sched_setscheduler`
    /// refuses it with -EPERM. Admission bounds the domain's bandwidth sum,
    /// which holds only for tasks that may run on any CPU of the domain.
    DlAffinityRestricted,
}

impl core::fmt::Display for ParamsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ParamsError::NiceOutOfRange => f.write_str("nice must be in [-20, 19]"),
            ParamsError::RtPriorityOutOfRange => {
                f.write_str("priority must be in [1, 99] for FIFO/RR and 0 for other policies")
            }
            ParamsError::DlAttrInvalid => f.write_str(
                "deadline attributes need 1024 ns <= runtime <= deadline <= period (period in [100 us, 4.19 s]) and are only for SCHED_DEADLINE",
            ),
            ParamsError::DlBandwidthExceeded => f.write_str(
                "SCHED_DEADLINE bandwidth over the limit (100% of the CPUs, fair servers included)",
            ),
            ParamsError::DlAffinityRestricted => f.write_str(
                "SCHED_DEADLINE needs a task allowed on every online CPU (its affinity is restricted)",
            ),
        }
    }
}

impl TaskParams {
    /// SCHED_FIFO at RT priority `prio` (1..=99).
    pub const fn fifo(prio: u8) -> Self {
        TaskParams {
            policy: Policy::Fifo,
            nice: 0,
            rt_priority: prio,
            slice_ns: 0,
            dl_runtime_ns: 0,
            dl_deadline_ns: 0,
            dl_period_ns: 0,
        }
    }

    /// SCHED_RR at RT priority `prio` (1..=99).
    pub const fn rr(prio: u8) -> Self {
        TaskParams {
            policy: Policy::RoundRobin,
            nice: 0,
            rt_priority: prio,
            slice_ns: 0,
            dl_runtime_ns: 0,
            dl_deadline_ns: 0,
            dl_period_ns: 0,
        }
    }

    /// SCHED_DEADLINE with `runtime` every `period` by `deadline` (ns;
    /// `period` 0: the deadline), as `sched_setattr` takes them.
    pub const fn deadline(runtime_ns: u64, deadline_ns: u64, period_ns: u64) -> Self {
        TaskParams {
            policy: Policy::Deadline,
            nice: 0,
            rt_priority: 0,
            slice_ns: 0,
            dl_runtime_ns: runtime_ns,
            dl_deadline_ns: deadline_ns,
            dl_period_ns: period_ns,
        }
    }

    /// The SCHED_DEADLINE period: `dl_period_ns`, or the deadline when 0.
    pub const fn dl_period(&self) -> u64 {
        if self.dl_period_ns == 0 {
            self.dl_deadline_ns
        } else {
            self.dl_period_ns
        }
    }

    /// The SCHED_DEADLINE bandwidth runtime/period in [`crate::deadline::BW_UNIT`]
    /// units (0 for other policies).
    pub fn dl_bw(&self) -> u64 {
        if self.policy != Policy::Deadline || self.dl_period() == 0 {
            return 0;
        }
        crate::deadline::to_ratio(self.dl_period(), self.dl_runtime_ns)
    }

    /// A fair policy (NORMAL, BATCH or IDLE) at nice 0 with the base slice.
    pub const fn fair(policy: Policy) -> Self {
        TaskParams {
            policy,
            nice: 0,
            rt_priority: 0,
            slice_ns: 0,
            dl_runtime_ns: 0,
            dl_deadline_ns: 0,
            dl_period_ns: 0,
        }
    }

    /// Checks the ranges Linux's `sched_setattr` checks.
    pub fn validate(&self) -> Result<(), ParamsError> {
        if !(-20..=19).contains(&self.nice) {
            return Err(ParamsError::NiceOutOfRange);
        }
        let rt = matches!(self.policy, Policy::Fifo | Policy::RoundRobin);
        if rt && !(1..=MAX_RT_PRIO).contains(&self.rt_priority) || !rt && self.rt_priority != 0 {
            return Err(ParamsError::RtPriorityOutOfRange);
        }
        if self.policy == Policy::Deadline {
            let (r, d, p) = (self.dl_runtime_ns, self.dl_deadline_ns, self.dl_period());
            let period = crate::deadline::DL_PERIOD_MIN_NS..=crate::deadline::DL_PERIOD_MAX_NS;
            if r < crate::deadline::DL_RUNTIME_MIN_NS || d < r || p < d || !period.contains(&p) {
                return Err(ParamsError::DlAttrInvalid);
            }
            if self.nice != 0 || self.slice_ns != 0 {
                return Err(ParamsError::DlAttrInvalid);
            }
        } else if self.dl_runtime_ns | self.dl_deadline_ns | self.dl_period_ns != 0 {
            return Err(ParamsError::DlAttrInvalid);
        }
        Ok(())
    }

    /// The load weight these parameters give a fair task.
    pub fn weight(&self) -> LoadWeight {
        match self.policy {
            Policy::Idle => LoadWeight::IDLE,
            _ => LoadWeight::from_nice(self.nice),
        }
    }
}

/// The fair-class scheduling entity (Linux's `sched_entity`).
///
/// While it is queued, the tree keeps its own copy of the key fields in a
/// compact node array (see `fair::tree`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FairEntity {
    /// Virtual deadline: the tree key. Holds `deadline - vruntime` while
    /// `rel_deadline` is set.
    pub deadline: u64,
    /// Virtual runtime (wrapping; compare through signed differences).
    pub vruntime: u64,
    /// The request size r in ns.
    pub slice_ns: u64,
    /// Load weight and its inverse.
    pub load: LoadWeight,
    /// V - v captured at dequeue or reweight, consumed by placement.
    pub vlag: i64,
    /// The vruntime up to which the running entity is protected (RUN_TO_PARITY).
    pub vprot: u64,
    /// Clock at the last accounting.
    pub exec_start: u64,
    /// Total runtime in ns.
    pub sum_exec_runtime: u64,
    /// `sum_exec_runtime` when it was last picked.
    pub prev_sum_exec_runtime: u64,
    /// `slice_ns` was set by the task, not taken from the base slice.
    pub custom_slice: bool,
    /// `deadline` is relative to `vruntime` (carried across a migration).
    pub rel_deadline: bool,
    /// Accounted on the fair runqueue (tree or current, delayed included).
    pub on_rq: bool,
    /// Slept while ineligible; its dequeue is deferred (DELAY_DEQUEUE).
    pub sched_delayed: bool,
    /// Load tracking (PELT, Linux's `se->avg`): see [`crate::pelt`].
    pub avg: crate::pelt::SchedAvg,
    /// The CPU whose fair runqueue's averages hold this entity's (Linux:
    /// attached to `cfs_rq_of(se)`, `last_update_time != 0`), or
    /// [`AVG_DETACHED`]. A sleeping task stays attached where it last ran,
    /// as Linux's blocked load does, until it is woken elsewhere.
    pub avg_cpu: u32,
}

/// [`FairEntity::avg_cpu`] of an entity no runqueue's averages hold.
pub const AVG_DETACHED: u32 = u32::MAX;

impl Default for FairEntity {
    fn default() -> Self {
        FairEntity {
            load: LoadWeight::NICE_0,
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            slice_ns: crate::tunables::NORMALIZED_BASE_SLICE_NS,
            custom_slice: false,
            rel_deadline: false,
            on_rq: false,
            sched_delayed: false,
            exec_start: 0,
            sum_exec_runtime: 0,
            prev_sum_exec_runtime: 0,
            avg: crate::pelt::SchedAvg::new_task(crate::weight::NICE_0_LOAD),
            avg_cpu: AVG_DETACHED,
        }
    }
}

impl FairEntity {
    /// Gives the entity a new load weight and rescales what is measured in its
    /// virtual time: the saved lag and, while it is relative, the deadline.
    ///
    /// Virtual time advances at `1/w` of real time, so the same real-time lag
    /// or request is `old_w / new_w` times as long in the new virtual time
    /// (Linux's `reweight_entity` for an entity that is not on the tree:
    /// `vlag = vlag * old / new`, and `deadline = deadline * old / new` when
    /// `rel_deadline`). Every weight change of a task that is not on the tree
    /// goes through here: the in-place reweight, the save/restore parameter
    /// change (class or slice), and a sleeping task's new parameters.
    pub(crate) fn reweight(&mut self, lw: LoadWeight) {
        let old = self.load.weight;
        self.vlag = rescale_virtual(self.vlag as u64, old, lw.weight) as i64;
        if self.rel_deadline {
            self.deadline = rescale_virtual(self.deadline, old, lw.weight);
        }
        self.load = lw;
    }
}

/// A signed virtual-time distance (two's complement in a `u64`) measured at
/// weight `old_w`, as the same real-time distance at weight `new_w`:
/// `x · old_w / new_w`, rounded toward zero (Linux's `div64_long`).
pub(crate) fn rescale_virtual(x: u64, old_w: impl Into<u64>, new_w: impl Into<u64>) -> u64 {
    let (old_w, new_w) = (old_w.into() as i128, new_w.into() as i128);
    ((x as i64 as i128) * old_w / new_w) as i64 as u64
}

/// The RT-class entity: links in its priority's FIFO list and the RR slice.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RtEntity {
    pub(crate) prev: u32,
    pub(crate) next: u32,
    /// Queued on an RT priority list.
    pub on_list: bool,
    /// What is left of the SCHED_RR time slice.
    pub slice_left_ns: u64,
}

impl Default for RtEntity {
    fn default() -> Self {
        RtEntity {
            prev: NIL,
            next: NIL,
            on_list: false,
            slice_left_ns: 0,
        }
    }
}

/// The deadline-class entity (`sched_dl_entity`): the CBS state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DlEntity {
    /// Budget left in this period (`runtime`); negative after an overrun.
    pub runtime_ns: i64,
    /// Absolute deadline of this period.
    pub deadline: u64,
    /// Budget spent: off the EDF tree until its next period.
    pub throttled: bool,
    /// In one of the deadline runqueue's trees.
    pub on_rq: bool,
    /// Deadlines it missed (its budget was not spent by the deadline).
    pub nr_missed: u64,
    /// Periods it was throttled in.
    pub nr_throttled: u64,
}

/// Where a task's state sits relative to the runqueue holding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Not held by this runqueue.
    Absent,
    /// Runnable: queued in its class or running.
    Queued,
    /// Blocked, but its fair dequeue is deferred (DELAY_DEQUEUE).
    Delayed,
    /// Blocked; the delayed dequeue has completed. The kernel takes the task
    /// back with `Rq::ttwu_runnable` when it wakes it.
    Blocked,
}

/// Everything the scheduler keeps per task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SchedTask {
    /// Fair-class state (also holds the runtime accounting of every class).
    pub se: FairEntity,
    /// Policy, nice, RT priority and custom slice.
    pub params: TaskParams,
    /// RT-class state.
    pub rt: RtEntity,
    /// Deadline-class state.
    pub dl: DlEntity,
    /// Where it is relative to the runqueue holding it.
    pub state: TaskState,
    /// Times it was switched in.
    pub nr_switches: u64,
    /// Times it was woken.
    pub nr_wakeups: u64,
    /// Times it changed CPU.
    pub nr_migrations: u64,
    /// Allowed CPUs (`p->cpus_mask`); every CPU by default.
    pub cpus_allowed: CpuMask,
    /// The CPU it last ran or was queued on.
    pub cpu: CpuId,
    /// Its task group ([`crate::fair::group`]; 0: the root group): the
    /// fair runqueue it is queued in on whatever CPU holds it. For a group
    /// entity's slot, the parent group. One byte (and `my_q` another): they
    /// fit the padding after `state`, so that the task's state stays 312
    /// bytes (320 made every slot index a shift-and-add instead of one
    /// multiply: about 40 more instructions per tick-and-pick cycle).
    pub group: u8,
    /// Nonzero only in a group entity's slot: the group whose runqueue it
    /// stands for (Linux's `se->my_q`). Never set in a task.
    pub(crate) my_q: u8,
}

impl Default for SchedTask {
    fn default() -> Self {
        SchedTask::new(TaskParams::default())
    }
}

impl SchedTask {
    /// A new task's state (as after fork): zero lag, no relative deadline.
    /// Parameters are assumed valid ([`TaskParams::validate`]).
    pub fn new(params: TaskParams) -> Self {
        let mut t = SchedTask {
            params,
            se: FairEntity::default(),
            rt: RtEntity::default(),
            dl: DlEntity::default(),
            state: TaskState::Absent,
            nr_switches: 0,
            nr_wakeups: 0,
            nr_migrations: 0,
            cpus_allowed: CpuMask::all(),
            cpu: CpuId::BOOT,
            group: 0,
            my_q: 0,
        };
        t.apply_params(params);
        // init_entity_runnable_average: a new task counts at its full weight.
        t.se.avg = crate::pelt::SchedAvg::new_task(t.se.load.weight as u64);
        t
    }

    /// Sets weight and slice from `params` (no lag scaling: for tasks that are
    /// not queued; queued tasks go through the runqueue).
    /// Takes new parameters: policy, nice, priority and slice, and the weight
    /// through [`FairEntity::reweight`] (lag and relative deadline rescaled).
    pub(crate) fn apply_params(&mut self, params: TaskParams) {
        self.params = params;
        self.se.reweight(params.weight());
        if params.slice_ns != 0 {
            self.se.slice_ns = params.slice_ns.clamp(MIN_SLICE_NS, MAX_SLICE_NS);
            self.se.custom_slice = true;
        } else {
            self.se.custom_slice = false;
        }
    }

    /// The class that runs it.
    #[inline]
    pub fn class(&self) -> crate::class::SchedClass {
        self.params.policy.class()
    }

    /// `task_has_idle_policy`: a SCHED_IDLE task.
    #[inline]
    pub fn has_idle_policy(&self) -> bool {
        self.params.policy == Policy::Idle
    }

    /// Linux's `prio` as shown by tracing: -1 for SCHED_DEADLINE, 0..=98 for RT (99 - rt_priority), 100..=139
    /// for fair tasks (120 + nice).
    pub fn prio(&self) -> i32 {
        match self.params.policy {
            Policy::Deadline => -1,
            Policy::Fifo | Policy::RoundRobin => 99 - self.params.rt_priority as i32,
            _ => 120 + self.params.nice,
        }
    }
}
