//! One CPU's runqueue and the class-independent core: enqueue, dequeue, pick,
//! tick, wakeup preemption and the need-resched state.
//!
//! The runqueue owns an arena of [`SchedTask`]s indexed by [`TaskId`]. A task is
//! moved into the arena when it is enqueued and handed back by value when it is
//! fully dequeued, so the fair tree and the RT lists link tasks by index: no
//! allocation after [`Rq::new`], no pointers, no `unsafe`.
//!
//! Decisions are values: [`Rq::task_tick`] returns the [`Resched`] it wants,
//! [`Rq::wakeup_preempt`] returns a [`WakeupDecision`] with the reason, and the
//! runqueue keeps the resulting need-resched state (none / lazy / now) for the
//! kernel to act on according to the preemption model.
//!
//! The clock is passed in ([`Rq::update_rq_clock`]); the crate keeps no global
//! state.

use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::class::SchedClass;
use crate::config::SchedConfig;
use crate::cpumask::CpuMask;
use crate::fair::{FairRq, FairWakeup};
use crate::flags::{DequeueFlags, EnqueueFlags, WakeFlags};
use crate::rt::RtRq;
use crate::task::{ParamsError, SchedTask, TaskId, TaskParams, TaskState, NIL};
use crate::tunables::PreemptMode;

/// A reschedule request, in increasing urgency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Resched {
    /// Nothing to do.
    #[default]
    None,
    /// Reschedule at the next natural point; the next tick upgrades it
    /// (TIF_NEED_RESCHED_LAZY, lazy preemption model only).
    Lazy,
    /// Reschedule as soon as preemption is allowed (TIF_NEED_RESCHED).
    Now,
}

/// Why a wakeup did or did not preempt the running task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeupReason {
    /// The CPU was running its idle task.
    IdleCpu,
    /// The wakee is the running task.
    SameTask,
    /// The wakee's class is above the running task's (always immediate).
    HigherClass,
    /// The wakee's class is below the running task's.
    LowerClass,
    /// Both fair: the 6.19 decision sequence's outcome.
    Fair(FairWakeup),
    /// Both RT: the wakee has a higher RT priority.
    RtHigherPriority,
    /// Both RT: the wakee's priority is not higher.
    RtNotHigher,
}

/// Rows of [`WakeupReason`] that [`RqStats::wakeup_rows`] counts, by
/// [`WakeupReason::row`]; the names are `compare`'s counter names.
pub const WAKEUP_ROW_NAMES: [&str; WAKEUP_ROWS] = [
    "wk_idle_cpu",
    "wk_same",
    "wk_higher_class",
    "wk_lower_class",
    "wk_pending",
    "wk_disabled",
    "wk_idle_curr",
    "wk_idle_wakee",
    "wk_not_normal",
    "wk_fork_delayed",
    "wk_inelig_waker",
    "wk_sync_resched",
    "wk_sync_none",
    "wk_picked",
    "wk_picked_short",
    "wk_not_picked",
    "wk_not_picked_short",
    "wk_rt_higher",
    "wk_rt_not_higher",
];
/// Number of wakeup decision rows counted.
pub const WAKEUP_ROWS: usize = 19;

impl WakeupReason {
    /// This decision's index in [`RqStats::wakeup_rows`] / [`WAKEUP_ROW_NAMES`].
    pub fn row(self) -> usize {
        match self {
            WakeupReason::IdleCpu => 0,
            WakeupReason::SameTask => 1,
            WakeupReason::HigherClass => 2,
            WakeupReason::LowerClass => 3,
            WakeupReason::Fair(f) => match f {
                FairWakeup::SameTask => 1,
                FairWakeup::AlreadyPending => 4,
                FairWakeup::Disabled => 5,
                FairWakeup::IdleCurrent => 6,
                FairWakeup::IdleWakee => 7,
                FairWakeup::NotNormalPolicy => 8,
                FairWakeup::ForkOrDelayed => 9,
                FairWakeup::IneligibleWaker => 10,
                FairWakeup::SyncResched => 11,
                FairWakeup::SyncNone => 12,
                FairWakeup::Picked { short: false } => 13,
                FairWakeup::Picked { short: true } => 14,
                FairWakeup::NotPicked { short: false } => 15,
                FairWakeup::NotPicked { short: true } => 16,
            },
            WakeupReason::RtHigherPriority => 17,
            WakeupReason::RtNotHigher => 18,
        }
    }
}

/// The outcome of [`Rq::wakeup_preempt`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeupDecision {
    /// Why.
    pub reason: WakeupReason,
    /// Did it ask to preempt the running task?
    pub preempt: bool,
    /// The runqueue's need-resched state afterwards.
    pub resched: Resched,
}

/// What [`Rq::ttwu_runnable`] found.
#[derive(Clone, Copy, Debug)]
pub enum TtwuRunnable {
    /// The task was still queued (delayed or preempted) and is runnable again.
    Woken(WakeupDecision),
    /// Its delayed dequeue had completed: it is blocked. The task is handed
    /// back; wake it like any sleeper (select a CPU, `try_to_wake_up`).
    Blocked(SchedTask),
    /// This runqueue does not hold the task.
    NotHere,
}

/// What [`Rq::schedule`] did.
#[derive(Clone, Copy, Debug)]
pub struct Switch {
    /// The task that was running (`None`: the idle task).
    pub prev: Option<TaskId>,
    /// The task to run next (`None`: the idle task).
    pub next: Option<TaskId>,
    /// When prev went to sleep and was fully dequeued: its state, for the
    /// kernel to keep until it wakes. `None` while its dequeue is delayed (it
    /// stays in this runqueue; wake it with [`Rq::ttwu_runnable`]).
    pub prev_blocked: Option<SchedTask>,
}

/// Per-CPU counters (`sched_debug`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RqStats {
    /// Context switches (pick returned a different task).
    pub nr_switches: u64,
    /// Ticks that asked for a reschedule.
    pub nr_tick_resched: u64,
    /// Wakeups that asked to preempt.
    pub nr_wakeup_preempt: u64,
    /// Wakeups handled here.
    pub nr_wakeups: u64,
    /// Tasks that arrived from another CPU.
    pub nr_migrations_in: u64,
    /// Sleeps whose dequeue was delayed.
    pub nr_delayed: u64,
    /// Ticks.
    pub nr_ticks: u64,
    /// Wakeup decisions ([`Rq::wakeup_preempt`]) per row, by
    /// [`WakeupReason::row`]; preempting or not.
    pub wakeup_rows: [u64; WAKEUP_ROWS],
}

/// Why a runqueue operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RqError {
    /// The task is not on this runqueue (or not in the needed state).
    NotQueued,
    /// Invalid parameters.
    Params(ParamsError),
}

/// One CPU's runqueue.
#[derive(Debug)]
pub struct Rq {
    cpu: u32,
    cfg: Arc<SchedConfig>,
    tasks: Vec<SchedTask>,
    /// The fair (EEVDF) runqueue.
    pub fair: FairRq,
    /// The RT runqueue.
    pub rt: RtRq,
    curr: u32,
    clock: u64,
    need_resched: Resched,
    nr_running: u32,
    /// Counters.
    pub stats: RqStats,
}

impl Rq {
    /// A runqueue for CPU `cpu` that can hold tasks with ids below `capacity`.
    /// This is the only allocation the runqueue ever makes.
    pub fn new(cpu: u32, cfg: Arc<SchedConfig>, capacity: usize) -> Self {
        let mut tasks = Vec::with_capacity(capacity);
        tasks.resize(capacity, SchedTask::default());
        Rq {
            cpu,
            cfg,
            tasks,
            fair: FairRq::new(capacity),
            rt: RtRq::new(),
            curr: NIL,
            clock: 0,
            need_resched: Resched::None,
            nr_running: 0,
            stats: RqStats::default(),
        }
    }

    /// The CPU this runqueue belongs to.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// The shared configuration.
    pub fn config(&self) -> &Arc<SchedConfig> {
        &self.cfg
    }

    /// Largest task id + 1 this runqueue can hold.
    pub fn capacity(&self) -> usize {
        self.tasks.len()
    }

    /// Advances the runqueue clock (monotonic; a step backwards is ignored).
    #[inline]
    pub fn update_rq_clock(&mut self, now_ns: u64) {
        if now_ns > self.clock {
            self.clock = now_ns;
            self.fair.clock = now_ns;
        }
    }

    /// The runqueue clock.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// The running task (`None`: the idle task).
    #[inline]
    pub fn curr(&self) -> Option<TaskId> {
        (self.curr != NIL).then_some(TaskId(self.curr))
    }

    /// The pending reschedule request.
    #[inline]
    pub fn need_resched(&self) -> Resched {
        self.need_resched
    }

    /// Runnable tasks of every class, delayed fair tasks included (Linux's
    /// `rq->nr_running`), the running one included.
    #[inline]
    pub fn nr_running(&self) -> u32 {
        self.nr_running
    }

    /// Runnable tasks, delayed ones excluded.
    pub fn nr_runnable(&self) -> u32 {
        self.rt.nr_running + self.fair.h_nr_runnable
    }

    /// Σ fair weight queued here (the balancer's load).
    pub fn load(&self) -> u64 {
        self.fair.load
    }

    /// The task's state if this runqueue holds it.
    pub fn task(&self, id: TaskId) -> Option<&SchedTask> {
        self.tasks
            .get(id.0 as usize)
            .filter(|t| t.state != TaskState::Absent)
    }

    /// Every task this runqueue holds (queued, delayed or blocked-delayed).
    pub fn tasks(&self) -> impl Iterator<Item = (TaskId, &SchedTask)> {
        self.tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state != TaskState::Absent)
            .map(|(i, t)| (TaskId(i as u32), t))
    }

    /// The arena (read-only), for checkers and dumps.
    pub fn arena(&self) -> &[SchedTask] {
        &self.tasks
    }

    /// The fair runqueue's V.
    pub fn avg_vruntime(&self) -> u64 {
        self.fair.avg_vruntime(&self.tasks)
    }

    /// Is the fair task eligible (lag ≥ 0)?
    pub fn entity_eligible(&self, id: TaskId) -> bool {
        self.fair.entity_eligible(&self.tasks, id)
    }

    /// Queued fair tasks in deadline order (`sched_debug`); O(n).
    pub fn fair_queue(&self) -> impl Iterator<Item = TaskId> + '_ {
        let mut i = self.fair.timeline.leftmost;
        core::iter::from_fn(move || {
            if i == NIL {
                return None;
            }
            let cur = i;
            i = self.fair.timeline.next(i);
            Some(TaskId(cur))
        })
    }

    /// Queued fair tasks from the latest deadline to the earliest (the
    /// balancer's order: least urgent first); O(n).
    pub fn fair_queue_rev(&self) -> impl Iterator<Item = TaskId> + '_ {
        let mut i = self.fair.timeline.last();
        core::iter::from_fn(move || {
            if i == NIL {
                return None;
            }
            let cur = i;
            i = self.fair.timeline.prev(i);
            Some(TaskId(cur))
        })
    }

    /// Sets the task's allowed CPUs. Moving it off a CPU it may no longer use
    /// is the caller's (`smp::Scheduler::set_cpus_allowed`).
    pub fn set_cpus_allowed(&mut self, id: TaskId, mask: CpuMask) {
        if let Some(t) = self.tasks.get_mut(id.0 as usize) {
            t.cpus_allowed = mask;
        }
    }

    // ---- need-resched ----

    /// `resched_curr` / `resched_curr_lazy`: records a reschedule request. A
    /// lazy request becomes immediate unless the model is lazy, and any request
    /// aimed at the idle task is immediate.
    pub fn resched_curr(&mut self, kind: Resched) -> Resched {
        let kind = match kind {
            Resched::None => return self.need_resched,
            _ if self.curr == NIL => crate::idle::resched_idle(kind),
            Resched::Lazy if self.cfg.tunables.preempt_mode() != PreemptMode::Lazy => Resched::Now,
            k => k,
        };
        self.need_resched = self.need_resched.max(kind);
        self.need_resched
    }

    /// Forgets the pending request (done by [`Rq::pick_next_task`]).
    pub fn clear_need_resched(&mut self) {
        self.need_resched = Resched::None;
    }

    #[inline]
    fn drain_fair_resched(&mut self) {
        if self.fair.resched {
            self.fair.resched = false;
            if self.curr != NIL && self.tasks[self.curr as usize].class() == SchedClass::Fair {
                self.resched_curr(Resched::Lazy);
            }
        }
    }

    // ---- enqueue / dequeue ----

    /// `enqueue_task` (activate): takes ownership of the task's state.
    ///
    /// # Panics
    /// If the id is beyond the capacity or already held here: a kernel bug.
    pub fn enqueue_task(&mut self, id: TaskId, mut task: SchedTask, flags: EnqueueFlags) {
        let i = id.0 as usize;
        assert!(
            self.tasks[i].state == TaskState::Absent,
            "task {} enqueued twice on cpu {}",
            id.0,
            self.cpu
        );
        if flags.contains(EnqueueFlags::MIGRATED) {
            task.nr_migrations += 1;
            self.stats.nr_migrations_in += 1;
        }
        task.state = TaskState::Queued;
        task.cpu = self.cpu;
        task.se.on_rq = false;
        task.se.sched_delayed = false;
        task.rt.on_list = false;
        let rr = task.params.policy == crate::task::Policy::RoundRobin;
        if rr && task.rt.slice_left_ns == 0 {
            task.rt.slice_left_ns = self.cfg.tunables.rr_timeslice_ns();
        }
        let class = task.class();
        self.tasks[i] = task;
        match class {
            SchedClass::Fair => self
                .fair
                .enqueue_entity(&mut self.tasks, &self.cfg, id, flags),
            SchedClass::Rt => {
                self.rt
                    .enqueue(&mut self.tasks, id, flags.contains(EnqueueFlags::HEAD))
            }
            SchedClass::Idle => unreachable!("no task has the idle class"),
        }
        self.nr_running += 1;
        self.drain_fair_resched();
    }

    /// `dequeue_task` (deactivate). Returns the task's state when it left the
    /// runqueue, or `None` when a sleeping fair task's dequeue is delayed (it
    /// stays here until picked or woken). A delayed task is dequeued for good
    /// by any call. The running task may be dequeued (it blocks); it stays
    /// `curr` until the next [`Rq::pick_next_task`].
    pub fn dequeue_task(
        &mut self,
        id: TaskId,
        flags: DequeueFlags,
    ) -> Result<Option<SchedTask>, RqError> {
        let i = id.0 as usize;
        match self.tasks.get(i).map(|t| t.state) {
            Some(TaskState::Queued) => {}
            Some(TaskState::Delayed) => {
                self.fair.dequeue_entity(
                    &mut self.tasks,
                    &self.cfg,
                    id,
                    DequeueFlags::SLEEP | DequeueFlags::DELAYED,
                );
                self.drain_fair_resched();
                return Ok(Some(self.release(id)));
            }
            Some(TaskState::Blocked) => return Ok(Some(self.take(id))),
            _ => return Err(RqError::NotQueued),
        }
        match self.tasks[i].class() {
            SchedClass::Fair => {
                if !self
                    .fair
                    .dequeue_entity(&mut self.tasks, &self.cfg, id, flags)
                {
                    self.tasks[i].state = TaskState::Delayed;
                    self.stats.nr_delayed += 1;
                    self.drain_fair_resched();
                    return Ok(None);
                }
            }
            SchedClass::Rt => {
                if self.curr == id.0 {
                    RtRq::update_curr(&mut self.tasks, id, self.clock);
                }
                self.rt.dequeue(&mut self.tasks, id);
            }
            SchedClass::Idle => unreachable!(),
        }
        self.drain_fair_resched();
        Ok(Some(self.release(id)))
    }

    /// Drops a fully dequeued task from the arena and returns its state.
    fn release(&mut self, id: TaskId) -> SchedTask {
        self.nr_running -= 1;
        self.take(id)
    }

    fn take(&mut self, id: TaskId) -> SchedTask {
        let t = &mut self.tasks[id.0 as usize];
        let mut out = *t;
        out.state = TaskState::Absent;
        t.state = TaskState::Absent;
        out
    }

    // ---- wakeups ----

    /// `wakeup_preempt`: should the just-queued task `id` preempt the running
    /// one? Records the resulting need-resched and returns the decision.
    pub fn wakeup_preempt(&mut self, id: TaskId, wf: WakeFlags) -> WakeupDecision {
        let decide = |rq: &mut Rq, reason: WakeupReason, preempt: bool, kind: Resched| {
            rq.stats.wakeup_rows[reason.row()] += 1;
            if preempt {
                rq.resched_curr(kind);
                rq.stats.nr_wakeup_preempt += 1;
            }
            WakeupDecision {
                reason,
                preempt,
                resched: rq.need_resched,
            }
        };
        if self.curr == NIL {
            return decide(self, WakeupReason::IdleCpu, true, Resched::Now);
        }
        if self.curr == id.0 {
            return decide(self, WakeupReason::SameTask, false, Resched::None);
        }
        let pc = self.tasks[id.0 as usize].class();
        let cc = self.tasks[self.curr as usize].class();
        if pc.above(cc) {
            return decide(self, WakeupReason::HigherClass, true, Resched::Now);
        }
        if cc.above(pc) {
            return decide(self, WakeupReason::LowerClass, false, Resched::None);
        }
        match pc {
            SchedClass::Fair => {
                let now_pending = self.need_resched == Resched::Now;
                let r =
                    self.fair
                        .check_preempt_wakeup(&mut self.tasks, &self.cfg, id, wf, now_pending);
                self.drain_fair_resched();
                // Fair preemption is lazy, except that a SCHED_IDLE task gives
                // way at once (the NORMAL-vs-SCHED_IDLE promotion agreed in the
                // PREEMPT_AUTO thread, seed 004; 6.19 asks lazily here too).
                let kind = if r == FairWakeup::IdleCurrent {
                    Resched::Now
                } else {
                    Resched::Lazy
                };
                decide(self, WakeupReason::Fair(r), r.preempts(), kind)
            }
            SchedClass::Rt => {
                let higher = self.tasks[id.0 as usize].params.rt_priority
                    > self.tasks[self.curr as usize].params.rt_priority;
                let reason = if higher {
                    WakeupReason::RtHigherPriority
                } else {
                    WakeupReason::RtNotHigher
                };
                decide(self, reason, higher, Resched::Now)
            }
            SchedClass::Idle => unreachable!(),
        }
    }

    /// `ttwu_do_activate`: enqueue a sleeping task here and decide preemption.
    pub fn try_to_wake_up(
        &mut self,
        id: TaskId,
        mut task: SchedTask,
        wf: WakeFlags,
    ) -> WakeupDecision {
        let mut flags = EnqueueFlags::WAKEUP;
        if wf.contains(WakeFlags::MIGRATED) {
            flags |= EnqueueFlags::MIGRATED;
        }
        task.nr_wakeups += 1;
        self.stats.nr_wakeups += 1;
        self.enqueue_task(id, task, flags);
        self.wakeup_preempt(id, wf | WakeFlags::TTWU)
    }

    /// `wake_up_new_task`: a new task's first enqueue (half-slice deadline with
    /// PLACE_DEADLINE_INITIAL; never a buddy or sync preemption).
    pub fn wake_up_new_task(&mut self, id: TaskId, task: SchedTask) -> WakeupDecision {
        self.enqueue_task(id, task, EnqueueFlags::INITIAL);
        self.wakeup_preempt(id, WakeFlags::FORK)
    }

    /// `ttwu_runnable`: wake a task this runqueue still holds: a delayed sleeper
    /// is re-queued in place (its negative lag kept), a preempted task is
    /// re-checked against the running one.
    pub fn ttwu_runnable(&mut self, id: TaskId, wf: WakeFlags) -> TtwuRunnable {
        let i = id.0 as usize;
        match self.tasks.get(i).map(|t| t.state) {
            Some(TaskState::Delayed) => {
                self.fair
                    .enqueue_entity(&mut self.tasks, &self.cfg, id, EnqueueFlags::DELAYED);
                self.tasks[i].state = TaskState::Queued;
                self.tasks[i].nr_wakeups += 1;
                self.stats.nr_wakeups += 1;
                self.drain_fair_resched();
                if self.curr == id.0 {
                    return TtwuRunnable::Woken(WakeupDecision {
                        reason: WakeupReason::SameTask,
                        preempt: false,
                        resched: self.need_resched,
                    });
                }
                TtwuRunnable::Woken(self.wakeup_preempt(id, wf | WakeFlags::TTWU))
            }
            Some(TaskState::Queued) => {
                TtwuRunnable::Woken(self.wakeup_preempt(id, wf | WakeFlags::TTWU))
            }
            Some(TaskState::Blocked) => TtwuRunnable::Blocked(self.take(id)),
            _ => TtwuRunnable::NotHere,
        }
    }

    // ---- pick ----

    fn put_prev_task(&mut self, prev: u32) {
        let id = TaskId(prev);
        if self.fair.curr == prev {
            self.fair.put_prev_entity(&mut self.tasks, &self.cfg, id);
        } else if self.tasks[prev as usize].rt.on_list {
            RtRq::update_curr(&mut self.tasks, id, self.clock);
        }
    }

    fn set_next_task(&mut self, next: u32) {
        let id = TaskId(next);
        match self.tasks[next as usize].class() {
            SchedClass::Fair => self.fair.set_next_entity(&mut self.tasks, &self.cfg, id),
            _ => self.tasks[next as usize].se.exec_start = self.clock,
        }
    }

    /// The highest class with work picks (`pick_next_task`); a delayed fair task
    /// that comes up is dequeued for good and the pick restarts. Then the
    /// previous task is put back and the next one set up (`put_prev_task` /
    /// `set_next_task`). Clears the need-resched state. `None`: run idle.
    pub fn pick_next_task(&mut self) -> Option<TaskId> {
        let prev = self.curr;
        let next = loop {
            if let Some(p) = self.rt.pick_task() {
                break p.0;
            }
            if self.fair.nr_queued == 0 {
                break NIL;
            }
            if self.fair.curr != NIL {
                self.fair.update_curr(&mut self.tasks, &self.cfg);
            }
            match self.fair.pick_eevdf(&self.tasks, &self.cfg, true, true) {
                Some(se) if self.tasks[se.0 as usize].se.sched_delayed => {
                    self.fair.dequeue_entity(
                        &mut self.tasks,
                        &self.cfg,
                        se,
                        DequeueFlags::SLEEP | DequeueFlags::DELAYED,
                    );
                    self.tasks[se.0 as usize].state = TaskState::Blocked;
                    self.nr_running -= 1;
                }
                Some(se) => break se.0,
                None => break NIL,
            }
        };
        // put_prev_set_next_task: nothing to do when the running task is
        // picked again (its protection is not re-armed, as in Linux).
        if next != prev {
            if prev != NIL {
                self.put_prev_task(prev);
            }
            self.curr = NIL;
            if next != NIL {
                self.set_next_task(next);
            }
            self.curr = next;
        }
        self.fair.resched = false;
        self.need_resched = Resched::None;
        if next != prev {
            self.stats.nr_switches += 1;
            if next != NIL {
                self.tasks[next as usize].nr_switches += 1;
            }
        }
        self.curr()
    }

    /// `__schedule` in one call: if `prev_sleeps`, dequeue the running task
    /// (DEQUEUE_SLEEP, possibly delayed), then pick the next task.
    pub fn schedule(&mut self, prev_sleeps: bool) -> Switch {
        let prev = self.curr();
        let mut prev_blocked = None;
        if prev_sleeps {
            if let Some(p) = prev {
                prev_blocked = self.dequeue_task(p, DequeueFlags::SLEEP).ok().flatten();
            }
        }
        let next = self.pick_next_task();
        Switch {
            prev,
            next,
            prev_blocked,
        }
    }

    /// Charges the running task for the time since its last accounting
    /// (Linux's `update_curr`), e.g. before reading its runtime. A fair task
    /// whose request is consumed or whose protection ended gets a lazy
    /// reschedule request, exactly as at a tick.
    pub fn update_curr(&mut self) {
        if self.curr == NIL {
            return;
        }
        match self.tasks[self.curr as usize].class() {
            SchedClass::Fair => {
                self.fair.update_curr(&mut self.tasks, &self.cfg);
                self.drain_fair_resched();
            }
            SchedClass::Rt => {
                RtRq::update_curr(&mut self.tasks, TaskId(self.curr), self.clock);
            }
            SchedClass::Idle => {}
        }
    }

    // ---- tick, yield ----

    /// `sched_tick`: upgrade a pending lazy request, then the running task's
    /// class accounts the tick. Returns the need-resched state.
    pub fn task_tick(&mut self) -> Resched {
        self.stats.nr_ticks += 1;
        if self.need_resched == Resched::Lazy {
            self.need_resched = Resched::Now;
        }
        if self.curr == NIL {
            return self.need_resched;
        }
        let id = TaskId(self.curr);
        let before = self.need_resched;
        match self.tasks[self.curr as usize].class() {
            SchedClass::Fair => {
                self.fair.entity_tick(&mut self.tasks, &self.cfg);
                self.drain_fair_resched();
            }
            SchedClass::Rt => {
                if self
                    .rt
                    .task_tick(&mut self.tasks, &self.cfg, id, self.clock)
                {
                    self.resched_curr(Resched::Now);
                }
            }
            SchedClass::Idle => {}
        }
        if self.need_resched > before {
            self.stats.nr_tick_resched += 1;
        }
        self.need_resched
    }

    /// `sched_yield` by the running task: a fair task forfeits the rest of its
    /// request if eligible, an RT task goes to the tail of its list. Asks for an
    /// immediate reschedule.
    pub fn yield_task(&mut self) {
        if self.curr == NIL {
            return;
        }
        let id = TaskId(self.curr);
        match self.tasks[self.curr as usize].class() {
            SchedClass::Fair => self.fair.yield_entity(&mut self.tasks, &self.cfg),
            SchedClass::Rt => {
                RtRq::update_curr(&mut self.tasks, id, self.clock);
                self.rt.requeue_tail(&mut self.tasks, id);
            }
            SchedClass::Idle => {}
        }
        self.fair.resched = false;
        self.need_resched = Resched::Now;
    }

    // ---- attribute changes ----

    /// `sched_setattr` for a task this runqueue holds: policy, nice, RT
    /// priority and slice, moving it between classes if needed, whether it is
    /// running, queued or delayed. Returns the need-resched state afterwards.
    pub fn sched_setattr(&mut self, id: TaskId, params: TaskParams) -> Result<Resched, RqError> {
        params.validate().map_err(RqError::Params)?;
        let i = id.0 as usize;
        let state = self
            .tasks
            .get(i)
            .map(|t| t.state)
            .unwrap_or(TaskState::Absent);
        match state {
            TaskState::Absent => return Err(RqError::NotQueued),
            TaskState::Delayed => {
                // A delayed task is asleep: finish its dequeue first.
                self.fair.dequeue_entity(
                    &mut self.tasks,
                    &self.cfg,
                    id,
                    DequeueFlags::SLEEP | DequeueFlags::DELAYED,
                );
                self.tasks[i].state = TaskState::Blocked;
                self.nr_running -= 1;
                self.drain_fair_resched();
                set_params_offrq(&mut self.tasks[i], params);
                return Ok(self.need_resched);
            }
            TaskState::Blocked => {
                set_params_offrq(&mut self.tasks[i], params);
                return Ok(self.need_resched);
            }
            TaskState::Queued => {}
        }
        let old = self.tasks[i].params;
        let old_prio = self.tasks[i].prio();
        let running = self.curr == id.0;
        let fair_to_fair =
            old.policy.class() == SchedClass::Fair && params.policy.class() == SchedClass::Fair;
        if fair_to_fair && old.slice_ns == params.slice_ns {
            // Only the weight changes: reweight in place, preserving lag.
            self.tasks[i].params = params;
            self.fair
                .reweight_entity(&mut self.tasks, &self.cfg, id, params.weight());
        } else {
            // The sched_change pattern: save, change, restore.
            let Some(mut t) = self.dequeue_task(id, DequeueFlags::SAVE | DequeueFlags::MOVE)?
            else {
                unreachable!("a non-sleep dequeue is never delayed")
            };
            if running {
                self.put_prev_task(id.0);
                self.curr = NIL;
            }
            // Lag and relative deadline follow the new weight.
            t.apply_params(params);
            self.enqueue_task(id, t, EnqueueFlags::RESTORE | EnqueueFlags::MOVE);
            if running {
                self.set_next_task(id.0);
                self.curr = id.0;
            }
        }
        self.drain_fair_resched();
        // check_class_changed / prio_changed
        let new_prio = self.tasks[i].prio();
        if running {
            if new_prio > old_prio || self.rt.pick_task().is_some_and(|p| p != id) {
                self.resched_curr(Resched::Now);
            }
        } else if new_prio != old_prio || old.policy != params.policy {
            self.wakeup_preempt(id, WakeFlags::empty());
        }
        Ok(self.need_resched)
    }

    /// `set_user_nice`: a new nice value for a fair task held here.
    pub fn set_user_nice(&mut self, id: TaskId, nice: i32) -> Result<Resched, RqError> {
        let mut p = self
            .tasks
            .get(id.0 as usize)
            .filter(|t| t.state != TaskState::Absent)
            .ok_or(RqError::NotQueued)?
            .params;
        p.nice = nice;
        self.sched_setattr(id, p)
    }

    // ---- migration ----

    /// Takes a queued, not running task off this runqueue to move it to another
    /// CPU (`detach_task`): its lag and relative deadline travel with it
    /// (PLACE_REL_DEADLINE). Enqueue it on the target with
    /// [`Rq::attach_task`].
    pub fn detach_task(&mut self, id: TaskId) -> Result<SchedTask, RqError> {
        let t = self.tasks.get(id.0 as usize).ok_or(RqError::NotQueued)?;
        if t.state != TaskState::Queued || self.curr == id.0 {
            return Err(RqError::NotQueued);
        }
        Ok(self
            .dequeue_task(id, DequeueFlags::MIGRATING)?
            .expect("a migration dequeue is never delayed"))
    }

    /// Enqueues a task detached from another CPU and checks preemption.
    pub fn attach_task(&mut self, id: TaskId, task: SchedTask) -> WakeupDecision {
        self.enqueue_task(id, task, EnqueueFlags::MIGRATED);
        self.wakeup_preempt(id, WakeFlags::empty())
    }

    /// Is the queued task cache-hot (ran within `migration_cost_ns`, or is the
    /// next buddy with CACHE_HOT_BUDDY)?
    pub fn task_hot(&self, id: TaskId) -> bool {
        self.fair.task_hot(&self.tasks, &self.cfg, id)
    }

    /// Checks every invariant of this runqueue (tests, `sched_debug`).
    pub fn check(&self) -> Result<(), &'static str> {
        self.fair.check(&self.tasks)?;
        self.rt.check(&self.tasks)?;
        let held = self
            .tasks
            .iter()
            .filter(|t| matches!(t.state, TaskState::Queued | TaskState::Delayed))
            .count();
        if held as u32 != self.nr_running {
            return Err("nr_running does not match the queued tasks");
        }
        if self.curr != NIL
            && self.tasks[self.curr as usize].state == TaskState::Absent
            && self.fair.curr != self.curr
        {
            return Err("curr is not held here");
        }
        Ok(())
    }
}

/// Applies new parameters to a task that is not queued (sleeping): the saved
/// lag and a relative deadline are rescaled to the new weight
/// ([`FairEntity::reweight`](crate::task::FairEntity)), as for a queued task.
pub fn set_params_offrq(t: &mut SchedTask, params: TaskParams) {
    t.apply_params(params);
}
