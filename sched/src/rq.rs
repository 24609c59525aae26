//! One CPU's runqueue and the class-independent core: enqueue, dequeue, pick,
//! tick, wakeup preemption and the need-resched state.
//!
//! The runqueue owns the [`SchedTask`]s it holds, in local slots of an arena
//! ([`crate::slots`]): a task is moved into a slot when it is enqueued and
//! handed back by value when it is fully dequeued, and the fair tree and the RT
//! lists link slots: no pointers, no `unsafe`. A small table maps the caller's
//! [`TaskId`] to the slot, so memory follows the tasks held here, not the
//! id space: an empty runqueue allocates nothing, and storage grows by
//! doubling when this runqueue's own high-water mark is passed (fallibly:
//! [`RqError::NoMemory`]; [`Rq::try_reserve`] pre-sizes so that the steady
//! state never allocates). Task ids must be below the limit given to
//! [`Rq::new`] ([`RqError::IdOutOfRange`] otherwise), which costs nothing.
//!
//! The running task's slot stays reserved for its id after it is dequeued
//! (it blocked) until it is switched out, as Linux's `rq->curr` stays valid:
//! a wakeup in between finds the same slot, and no other task can take it.
//!
//! Decisions are values: [`Rq::task_tick`] returns the [`Resched`] it wants,
//! [`Rq::wakeup_preempt`] returns a [`WakeupDecision`] with the reason, and the
//! runqueue keeps the resulting need-resched state (none / lazy / now) for the
//! kernel to act on according to the preemption model.
//!
//! The clock is passed in ([`Rq::update_rq_clock`]); the crate keeps no global
//! state.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::class::SchedClass;
use crate::config::SchedConfig;
use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::deadline::{DlRq, DlServer, ServerTick};
use crate::fair::{FairRq, FairWakeup, WakeupStep};
use crate::features::Feature;
use crate::flags::{DequeueFlags, EnqueueFlags, WakeFlags};
use crate::rt::RtRq;
use crate::slots::{IdMap, Slot};
use crate::task::{ParamsError, SchedTask, TaskId, TaskParams, TaskState, NIL};
use crate::tunables::PreemptMode;

mod group;
mod hrtick;
pub use group::HLoadParts;
use hrtick::HRTICK_NONE;
pub use hrtick::{HrtickCmd, HRTICK_MIN_NS};

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
    /// Both deadline: the wakee's absolute deadline is earlier.
    DlEarlierDeadline,
    /// Both deadline: the wakee's deadline is not earlier.
    DlNotEarlier,
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
    "wk_dl_earlier",
    "wk_dl_not_earlier",
];
/// Number of wakeup decision rows counted.
pub const WAKEUP_ROWS: usize = 21;

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
            WakeupReason::DlEarlierDeadline => 19,
            WakeupReason::DlNotEarlier => 20,
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
    /// The PICK step returned the running task by its slice protection
    /// (RUN_TO_PARITY's `protect_slice`; root runqueue only). Diagnostic.
    pub protected: bool,
}

/// What [`Rq::ttwu_runnable`] found.
#[derive(Clone, Copy, Debug)]
// The blocked task is handed back by value, like `Rq::dequeue_task`'s
// result: boxing it would allocate in the wakeup path.
#[allow(clippy::large_enum_variant)]
pub enum TtwuRunnable {
    /// The task was still queued (delayed or preempted) and is runnable again.
    Woken(WakeupDecision),
    /// Its delayed dequeue had completed: it is blocked. The task is handed
    /// back; wake it like any sleeper (select a CPU, `try_to_wake_up`).
    Blocked(SchedTask),
    /// This runqueue does not hold the task.
    NotHere,
}

/// [`Rq`]'s push bit: the CPU is going offline (`balance_push`).
pub(crate) const PUSH_BALANCE: u8 = 1;
/// [`Rq`]'s push bit: an active balance wants the running task
/// ([`Rq::set_active_push`]).
pub(crate) const PUSH_ACTIVE: u8 = 2;

/// What [`Rq::schedule`] did.
#[derive(Clone, Copy, Debug)]
pub struct Switch {
    /// The task that was running (`None`: the idle task).
    pub prev: Option<TaskId>,
    /// The task to run next (`None`: the idle task).
    pub next: Option<TaskId>,
    /// [`Rq::schedule`] only: when prev went to sleep and was fully
    /// dequeued, its state, for the caller to keep until it wakes. `None`
    /// while its dequeue is delayed (it stays in this runqueue; wake it with
    /// [`Rq::ttwu_runnable`]). Always `None` from [`Rq::switch`], which keeps
    /// a sleeper's state in its slot.
    pub prev_blocked: Option<SchedTask>,
    /// [`Rq::switch`] with [`PrevAction::Exits`]: the exited task's final
    /// state (runtime, switch counts), which no runqueue holds any more.
    pub prev_exited: Option<SchedTask>,
    /// [`Rq::switch`]: prev stayed runnable but may not run on this CPU (its
    /// affinity changed, the CPU is going offline, or an active balance
    /// wants it elsewhere, `Rq::set_active_push`): it was taken off the queue (`DEQUEUE_MIGRATING`,
    /// its state kept here as `Blocked`) so that it is not picked again;
    /// once it is off the CPU, [`crate::smp::Scheduler::finish_switch`]
    /// queues it on an allowed CPU.
    pub prev_misplaced: bool,
}

/// What the running task does as it gives up the CPU ([`Rq::switch`],
/// [`crate::smp::Scheduler::schedule`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrevAction {
    /// It stays runnable (preempted, or it called `schedule()` with work left).
    Stays,
    /// `sched_yield`: a fair task forfeits the rest of its request.
    Yields,
    /// It blocks (`DEQUEUE_SLEEP`): its state stays in this runqueue, as
    /// `Delayed` while DELAY_DEQUEUE keeps it queued, else `Blocked`.
    Sleeps,
    /// It exits (`DEQUEUE_SLEEP | DEQUEUE_SPECIAL`, never delayed): its state
    /// leaves the runqueue and is returned in [`Switch::prev_exited`].
    Exits,
}

/// What a picked task is, as the pick knows it: which `set_next_task`
/// it needs ([`Rq::set_next_task_as`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NextKind {
    /// A fair task of the root runqueue (not grouped).
    Fair,
    /// A fair task of a task group's runqueue.
    FairGrouped,
    /// A deadline or RT task (or none).
    Other,
}

/// What `Rq::wake_held` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldWake {
    /// It was still queued (delayed or preempted) and is runnable again.
    Woken(WakeupDecision),
    /// It is blocked here, its state in its slot: place it
    /// (`Rq::wake_in_place` here, or `Rq::take_blocked` to move it).
    Blocked,
    /// This runqueue does not hold the task.
    NotHere,
}

/// May an RT task run on more than one CPU (Linux's `nr_cpus_allowed > 1`)?
/// A pinned task is never pushed or pulled.
#[inline]
pub fn rt_migratable(t: &SchedTask) -> bool {
    t.class() == SchedClass::Rt && t.cpus_allowed.weight() > 1
}

/// May a SCHED_DEADLINE task be pushed or pulled: ready (not throttled)
/// and allowed on more than one CPU? The fair server is no task and never
/// moves.
#[inline]
pub fn dl_migratable(t: &SchedTask) -> bool {
    t.class() == SchedClass::Dl && !t.dl.throttled && t.cpus_allowed.weight() > 1
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
    /// HRTICK expiries handled ([`Rq::hrtick`]).
    pub nr_hrtick: u64,
    /// HRTICK expiries that asked for a reschedule (the slice ended between
    /// ticks).
    pub nr_hrtick_resched: u64,
    /// Wakeup decisions ([`Rq::wakeup_preempt`]) per row, by
    /// [`WakeupReason::row`]; preempting or not.
    pub wakeup_rows: [u64; WAKEUP_ROWS],
    /// Delayed entities whose dequeue a wakeup's PICK step finished
    /// (`pick_next_entity` at a wakeup).
    pub nr_wakeup_delayed_dequeues: u64,
    /// RT tasks pushed from here to a CPU running something of lower rank
    /// (`push_rt_task`).
    pub nr_rt_push: u64,
    /// RT tasks pulled here from an RT-overloaded CPU (`pull_rt_task`).
    pub nr_rt_pull: u64,
    /// Deadline tasks pushed from here to a CPU with no deadline task or a
    /// later earliest deadline (`push_dl_task`).
    pub nr_dl_push: u64,
    /// Deadline tasks pulled here from a DL-overloaded CPU (`pull_dl_task`).
    pub nr_dl_pull: u64,
    /// Switches whose clock update was skipped after a wakeup
    /// ([`Rq::update_rq_clock_schedule`]).
    pub nr_clock_skips: u64,
}

/// Why a runqueue operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RqError {
    /// The task is not on this runqueue (or not in the needed state).
    NotQueued,
    /// Invalid parameters.
    Params(ParamsError),
    /// The task id is not below the runqueue's id limit ([`Rq::capacity`]).
    IdOutOfRange,
    /// Growing the runqueue's storage failed (the allocator refused).
    NoMemory,
}

impl From<alloc::collections::TryReserveError> for RqError {
    fn from(_: alloc::collections::TryReserveError) -> Self {
        RqError::NoMemory
    }
}

/// One CPU's runqueue.
#[derive(Debug)]
pub struct Rq {
    cpu: CpuId,
    cfg: Arc<SchedConfig>,
    /// The held tasks by slot (`TaskState::Absent`: a free slot).
    tasks: Vec<SchedTask>,
    /// Each slot's task id: the holder's, or for a free slot the last
    /// holder's (still mapped, so its next wakeup here finds the slot), or NIL.
    slot_ids: Vec<u32>,
    /// Freed slots, oldest first: a new task takes the front one. Entries
    /// are not removed when their slot is taken back by its own task (so that
    /// costs nothing); such stale entries are skipped when they reach the
    /// front. Every free slot is in it; no slot is in it twice.
    free_queue: VecDeque<u32>,
    /// Is the slot in `free_queue` (stale or not)?
    queued_free: Vec<bool>,
    /// The slot of the running task after it was dequeued (it blocked),
    /// reserved for it until it is switched out, or NIL.
    retired: u32,
    /// Slots in use (held tasks, plus a dequeued running task's).
    used_slots: u32,
    /// Slots every slot-indexed structure has room for.
    slot_cap: u32,
    /// Task id → slot.
    ids: IdMap,
    /// Task ids must be below this.
    id_limit: u32,
    /// The fair (EEVDF) runqueue.
    pub fair: FairRq,
    /// The root fair runqueue's `util_est` (Linux's `rq->cfs.avg.util_est`):
    /// Σ the estimates (`_task_util_est`) of the fair tasks queued here, at
    /// any group depth, delayed ones excluded; kept while UTIL_EST is on.
    util_est: u64,
    /// The RT runqueue.
    pub rt: RtRq,
    /// The deadline runqueue (SCHED_DEADLINE tasks).
    pub dl: DlRq,
    /// The fair server: serves fair tasks above RT for a bounded share
    /// ([`crate::deadline`]).
    pub fair_server: DlServer,
    /// The running task's slot, or NIL.
    curr: u32,
    clock: u64,
    /// A queue event left an immediate reschedule pending while the running
    /// task (or idle) stays queued, so the coming `__schedule` does not
    /// move the clock (Linux's `rq_clock_skip_update()`, RQCF_REQ_SKIP):
    /// [`Rq::update_rq_clock_schedule`].
    clock_skip: bool,
    /// The PELT clock's lag behind `clock` (Linux's `clock_pelt`,
    /// `lost_idle_time`); `fair.clock_pelt` is `clock` less it. Stays 0 on
    /// a CPU of full capacity.
    pelt: crate::pelt::PeltClock,
    need_resched: Resched,
    nr_running: u32,
    /// When the one-shot scheduler timer fires (HRTICK), or `HRTICK_NONE`.
    hrtick_expires_ns: u64,
    /// When the fair server's own instant (its zero-laxity boost or its
    /// replenishment) is due, if the CPU's one-shot timer is armed for it,
    /// or `HRTICK_NONE` ([`Rq::fair_server_timer_arm`]).
    server_timer_ns: u64,
    /// The deadline class's instant on the CPU's one-shot timer: the
    /// earlier of `server_timer_ns` and the first throttled deadline task's
    /// replenishment (Linux's per-entity `dl_timer`s, of which only the
    /// earliest can fire next), or `HRTICK_NONE` ([`Rq::dl_timer_update`]).
    dl_timer_ns: u64,
    /// The change to that timer not yet handed to the platform.
    hrtick_cmd: Option<HrtickCmd>,
    /// Why [`Rq::switch`] may hand a still runnable previous task back as
    /// misplaced, as bits: [`PUSH_BALANCE`], the CPU is going offline
    /// (Linux's `balance_push`, set by `sched_cpu_deactivate`; nothing more
    /// runs here), and [`PUSH_ACTIVE`], another CPU asked for the running
    /// task (active balance: a misfit, or after failed balancing passes;
    /// [`Rq::set_active_push`]). One byte, so
    /// that the switch tests both with the one compare it had for the first.
    push: u8,
    /// [`PUSH_ACTIVE`]'s destination while the bit is set; after the
    /// switch it moved the task off, where `Scheduler::finish_switch` is
    /// to queue it.
    active_push_cpu: Option<CpuId>,
    /// The previous task of the last switch, taken off as misplaced and
    /// not yet moved by `Scheduler::finish_switch` (blocked in its slot
    /// meanwhile, but runnable: not a sleeper to park).
    misplaced: Option<TaskId>,
    /// Counters.
    pub stats: RqStats,
    /// The task groups' parts on this CPU ([`crate::fair::group`]); `None`
    /// until the first group is built here (one word while there is none).
    grp: Option<alloc::boxed::Box<group::RqGroups>>,
}

impl Rq {
    /// An empty runqueue for CPU `cpu` that accepts task ids below
    /// `max_tasks` (at most `u32::MAX`). Allocates nothing: storage grows with
    /// the tasks it holds, or is pre-sized with [`Rq::try_reserve`].
    pub fn new(cpu: CpuId, cfg: Arc<SchedConfig>, max_tasks: usize) -> Self {
        Rq {
            cpu,
            cfg,
            tasks: Vec::new(),
            slot_ids: Vec::new(),
            free_queue: VecDeque::new(),
            queued_free: Vec::new(),
            retired: NIL,
            used_slots: 0,
            slot_cap: 0,
            ids: IdMap::new(),
            id_limit: max_tasks.min(NIL as usize) as u32,
            fair: FairRq {
                cpu: cpu.as_u32(),
                ..FairRq::new()
            },
            util_est: 0,
            rt: RtRq::new(),
            dl: DlRq::new(),
            fair_server: DlServer::default(),
            curr: NIL,
            clock: 0,
            clock_skip: false,
            pelt: crate::pelt::PeltClock {
                stolen_ns: 0,
                lost_idle_ns: 0,
            },
            need_resched: Resched::None,
            nr_running: 0,
            hrtick_expires_ns: HRTICK_NONE,
            server_timer_ns: HRTICK_NONE,
            dl_timer_ns: HRTICK_NONE,
            hrtick_cmd: None,
            push: 0,
            active_push_cpu: None,
            misplaced: None,
            stats: RqStats::default(),
            grp: None,
        }
    }

    /// The CPU this runqueue belongs to.
    pub fn cpu(&self) -> CpuId {
        self.cpu
    }

    /// The shared configuration.
    pub fn config(&self) -> &Arc<SchedConfig> {
        &self.cfg
    }

    /// Largest task id + 1 this runqueue accepts (not an allocation).
    pub fn capacity(&self) -> usize {
        self.id_limit as usize
    }

    /// Slots in use: the tasks held here (and a dequeued running task's).
    pub fn slots_in_use(&self) -> usize {
        self.used_slots as usize
    }

    /// Tasks it can hold without allocating.
    pub fn slot_capacity(&self) -> usize {
        self.slot_cap as usize
    }

    /// Bytes of heap it holds (arena, id map, tree), for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.tasks.capacity() * core::mem::size_of::<SchedTask>()
            + self.slot_ids.capacity() * core::mem::size_of::<u32>()
            + self.free_queue.capacity() * core::mem::size_of::<u32>()
            + self.queued_free.capacity()
            + self.ids.heap_bytes()
            + self.fair.timeline.heap_bytes()
            + self.dl.heap_bytes()
            + self.grp.as_ref().map_or(0, |g| g.heap_bytes())
    }

    /// Makes room for `additional` more tasks than it holds now, so that
    /// enqueueing them allocates nothing (a kernel calls this where it may
    /// allocate, before it needs the room under a lock). Never more than the
    /// id limit allows.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), RqError> {
        let want = (self.used_slots as usize).saturating_add(additional);
        if want > self.slot_cap as usize {
            self.reserve_slots(want)?;
        }
        Ok(())
    }

    /// Reserves every slot-indexed structure for `n` slots (capped by the id
    /// limit): all or nothing is usable, so `slot_cap` only moves on success.
    fn reserve_slots(&mut self, n: usize) -> Result<(), RqError> {
        // Tasks below the id limit, and the group entities' slots.
        let n = n.min(self.id_limit as usize + self.g_slots() as usize);
        self.tasks
            .try_reserve_exact(n.saturating_sub(self.tasks.len()))?;
        self.slot_ids
            .try_reserve_exact(n.saturating_sub(self.slot_ids.len()))?;
        self.free_queue
            .try_reserve_exact(n.saturating_sub(self.free_queue.len()))?;
        self.queued_free
            .try_reserve_exact(n.saturating_sub(self.queued_free.len()))?;
        self.fair.try_reserve(n)?;
        if self.dl.enabled {
            self.dl.try_reserve(n)?;
        }
        if let Some(g) = self.grp.as_mut() {
            for r in g.rqs.iter_mut().filter(|r| r.se != NIL) {
                r.fair.try_reserve(n)?;
            }
        }
        self.ids.try_reserve(n)?;
        self.slot_cap = self.slot_cap.max(n as u32);
        Ok(())
    }

    /// The slot `id` has here (held, the dequeued running task's, or a free
    /// slot it last held: taken back with nothing else to update), or NIL.
    /// The map only ever holds ids below the limit.
    #[inline(always)]
    fn own_slot(&mut self, id: TaskId) -> u32 {
        let s = self.ids.get(id.0);
        if s != NIL {
            if s == self.retired {
                self.retired = NIL;
            } else if self.tasks[s as usize].state == TaskState::Absent {
                // Its entry in `free_queue` goes stale.
                self.used_slots += 1;
            }
        }
        s
    }

    /// The slot for `id`: its own ([`Rq::own_slot`]) or a new one.
    #[inline]
    fn slot_for(&mut self, id: TaskId) -> Result<u32, RqError> {
        match self.own_slot(id) {
            NIL => self.new_slot(id),
            s => Ok(s),
        }
    }

    /// A slot for a task without one: the oldest free slot (its old id
    /// forgotten), growing by doubling when none is free.
    #[cold]
    fn new_slot(&mut self, id: TaskId) -> Result<u32, RqError> {
        if id.0 >= self.id_limit {
            return Err(RqError::IdOutOfRange);
        }
        let s = loop {
            if let Some(s) = self.free_queue.pop_front() {
                self.queued_free[s as usize] = false;
                if self.tasks[s as usize].state == TaskState::Absent && s != self.retired {
                    break s;
                }
                continue; // stale: taken back by its own task
            }
            let len = self.tasks.len();
            if len >= self.slot_cap as usize {
                self.reserve_slots((2 * len).max(8))?;
            }
            self.tasks.push(SchedTask::default());
            self.slot_ids.push(NIL);
            self.queued_free.push(false);
            self.fair.add_slots(len + 1);
            if self.dl.enabled {
                self.dl.add_slots(len + 1);
            }
            if let Some(g) = self.grp.as_mut() {
                g.add_slots(len + 1);
            }
            break len as u32;
        };
        let old = self.slot_ids[s as usize];
        if old != NIL {
            self.ids.remove(old);
        }
        self.slot_ids[s as usize] = id.0;
        self.ids.insert(id.0, s);
        self.used_slots += 1;
        Ok(s)
    }

    /// Returns an emptied slot to the free queue; it stays mapped to its id.
    #[inline]
    fn free_slot(&mut self, s: u32) {
        debug_assert_eq!(self.tasks[s as usize].state, TaskState::Absent);
        if !self.queued_free[s as usize] {
            self.queue_free(s);
        }
        self.used_slots -= 1;
    }

    /// Queues a free slot not in the queue yet (once per slot, not per sleep:
    /// a slot taken back by its own task stays queued).
    #[cold]
    fn queue_free(&mut self, s: u32) {
        self.queued_free[s as usize] = true;
        self.free_queue.push_back(s);
    }

    /// The slot of a task held here.
    #[inline]
    fn held_slot(&self, id: TaskId) -> Option<u32> {
        let s = self.ids.get(id.0);
        (s != NIL && self.tasks[s as usize].state != TaskState::Absent).then_some(s)
    }

    /// The task id in slot `s`.
    #[inline]
    fn id_of(&self, s: u32) -> TaskId {
        TaskId(self.slot_ids[s as usize])
    }

    /// The slot holding task `id`, if held here (indexes [`Rq::arena`]).
    pub fn slot(&self, id: TaskId) -> Option<Slot> {
        self.held_slot(id).map(Slot)
    }

    /// The task in `slot`, if the slot holds one.
    pub fn task_id(&self, slot: Slot) -> Option<TaskId> {
        self.tasks
            .get(slot.0 as usize)
            .filter(|t| t.state != TaskState::Absent)
            .map(|_| self.id_of(slot.0))
    }

    /// The fair next buddy, if any.
    pub fn next_buddy(&self) -> Option<TaskId> {
        self.fair.next_buddy().map(|s| self.id_of(s.0))
    }

    /// Advances the runqueue clock (monotonic; a step backwards is ignored)
    /// and, on a CPU of less than full capacity, the PELT clock with it
    /// (Linux's `update_rq_clock_pelt`).
    #[inline]
    pub fn update_rq_clock(&mut self, now_ns: u64) {
        if now_ns > self.clock {
            let pelt_ns = if self.fair.cpu_capacity < crate::pelt::SCHED_CAPACITY_SCALE as u32 {
                self.update_clock_pelt(now_ns)
            } else {
                now_ns
            };
            self.clock = now_ns;
            self.fair.clock = now_ns;
            self.fair.clock_pelt = pelt_ns;
        }
    }

    /// `__schedule()`'s clock update (`clock_update_flags <<= 1;
    /// update_rq_clock(rq)`): skipped, once, when a wakeup decision since
    /// the last switch left an immediate reschedule pending with the
    /// running task still queued ([`Rq::wakeup_preempt`],
    /// `rq_clock_skip_update()` in `wakeup_preempt()`, Linux 7.2's core.c;
    /// RQCF_REQ_SKIP promoted to RQCF_ACT_SKIP). The clock then stays where
    /// that wakeup's update left it: the switched-out task is not charged
    /// the time from there to the switch, and the task switched in, whose
    /// `exec_start` is that clock, is charged it at its first update. Any
    /// other update in between (a tick, another wakeup here) moves the clock
    /// as usual.
    #[inline]
    pub fn update_rq_clock_schedule(&mut self, now_ns: u64) {
        if core::mem::take(&mut self.clock_skip) {
            self.stats.nr_clock_skips += 1;
            return;
        }
        self.update_rq_clock(now_ns);
    }

    /// [`Rq::update_rq_clock`]'s PELT part on a CPU of reduced capacity,
    /// the clock about to move to `now_ns`: the time elapsed counts
    /// `capacity / 1024` of itself if a task ran, and if the CPU was idle
    /// the PELT clock catches up. Returns the PELT clock at `now_ns`. (At
    /// full capacity the lag stays 0: nothing to do.)
    #[cold]
    #[inline(never)]
    fn update_clock_pelt(&mut self, now_ns: u64) -> u64 {
        let cap = self.fair.cpu_capacity as u64;
        self.pelt
            .advance(now_ns - self.clock, self.curr != NIL, cap);
        self.pelt.now_ns(now_ns)
    }

    /// The CPU goes idle (Linux's `set_next_task_idle` calling
    /// `update_idle_rq_clock_pelt`): the PELT clock catches up with the task
    /// clock, less the stolen time if the CPU was busy all along
    /// ([`crate::pelt::PeltClock::enter_idle`]). Nothing was stolen on a CPU
    /// of full capacity: one test.
    #[inline(always)]
    fn idle_clock_pelt(&mut self) {
        if self.pelt.stolen_ns != 0 && self.pelt.enter_idle(self.fair.avg.util_sum) {
            self.fair.clock_pelt = self.clock - self.pelt.lag_ns();
        }
    }

    /// Sets the CPU's capacity (`arch_scale_cpu_capacity`, 1..=1024; out of
    /// range is clamped), which scales its PELT clock and a new task's
    /// first utilization here. A runqueue starts at full capacity; the
    /// multi-CPU scheduler sets each CPU's from its topology before any
    /// task runs. Set later, the PELT clock restarts at the task clock
    /// (stolen and lost time dropped: the clock only moves forward).
    pub fn set_cpu_capacity(&mut self, capacity: u32) {
        let cap = capacity.clamp(1, crate::pelt::SCHED_CAPACITY_SCALE as u32);
        self.pelt = crate::pelt::PeltClock::default();
        self.fair.clock_pelt = self.clock;
        self.fair.cpu_capacity = cap;
        if let Some(grp) = self.grp.as_deref_mut() {
            for r in grp.rqs.iter_mut() {
                r.fair.cpu_capacity = cap;
            }
        }
    }

    /// The CPU's capacity as set by [`Rq::set_cpu_capacity`].
    pub fn cpu_capacity(&self) -> u32 {
        self.fair.cpu_capacity
    }

    /// `rq_clock_pelt()`: the clock PELT runs on, `clock() -`
    /// [`Rq::pelt_lag_ns`].
    pub fn clock_pelt(&self) -> u64 {
        self.clock - self.pelt.lag_ns()
    }

    /// How far the PELT clock is behind the runqueue clock: stolen idle
    /// time not yet given back plus `lost_idle_time`; 0 on a CPU of full
    /// capacity.
    pub fn pelt_lag_ns(&self) -> u64 {
        self.pelt.lag_ns()
    }

    /// The PELT clock's state (stolen and lost idle time).
    pub fn pelt_clock(&self) -> crate::pelt::PeltClock {
        self.pelt
    }

    /// The runqueue clock.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// The running task (`None`: the idle task).
    #[inline]
    pub fn curr(&self) -> Option<TaskId> {
        (self.curr != NIL).then(|| self.id_of(self.curr))
    }

    /// The running task's state, as `curr().and_then(|c| task(c))` finds it
    /// (none once its slot was given up, while it switches out), read in its
    /// slot instead of through the id map.
    #[inline]
    pub(crate) fn curr_task(&self) -> Option<&SchedTask> {
        let t = (self.curr != NIL)
            .then(|| &self.tasks[self.curr as usize])
            .filter(|t| t.state != TaskState::Absent);
        debug_assert_eq!(
            t.map(|t| t as *const SchedTask),
            self.curr()
                .and_then(|c| self.task(c))
                .map(|t| t as *const SchedTask)
        );
        t
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
        // Group entities in the root stand for the runnable grouped tasks.
        // The root's count is hierarchical (Linux's `h_nr_runnable`): the
        // runnable tasks of its groups, not its group entities.
        self.dl.nr_running + self.rt.nr_running + self.fair.h_nr_runnable
    }

    /// Σ fair weight queued here (the balancer's load).
    pub fn load(&self) -> u64 {
        self.fair.load
    }

    /// The task's state if this runqueue holds it.
    pub fn task(&self, id: TaskId) -> Option<&SchedTask> {
        self.held_slot(id).map(|s| &self.tasks[s as usize])
    }

    /// Every task this runqueue holds (queued, delayed or blocked-delayed),
    /// in slot order.
    pub fn tasks(&self) -> impl Iterator<Item = (TaskId, &SchedTask)> {
        self.tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state != TaskState::Absent)
            .map(|(s, t)| (self.id_of(s as u32), t))
    }

    /// The arena by slot (read-only), for checkers and dumps; [`Rq::slot`]
    /// finds a task's slot. Free slots hold `TaskState::Absent`.
    pub fn arena(&self) -> &[SchedTask] {
        &self.tasks
    }

    /// The fair runqueue's V.
    pub fn avg_vruntime(&self) -> u64 {
        self.fair.avg_vruntime(&self.tasks)
    }

    /// Is the fair task eligible (lag ≥ 0)?
    /// `false` when the task is not held here.
    pub fn entity_eligible(&self, id: TaskId) -> bool {
        self.held_slot(id)
            .is_some_and(|s| self.fair.entity_eligible(&self.tasks, Slot(s)))
    }

    /// Queued fair tasks in deadline order (`sched_debug`); O(n).
    pub fn fair_queue(&self) -> impl Iterator<Item = TaskId> + '_ {
        let mut i = self.fair.timeline.leftmost;
        core::iter::from_fn(move || loop {
            if i == NIL {
                return None;
            }
            let cur = i;
            i = self.fair.timeline.next(i);
            if self.tasks[cur as usize].my_q == 0 {
                return Some(self.id_of(cur));
            }
        })
        .chain(self.grouped_queue())
    }

    /// Queued fair tasks from the latest deadline to the earliest (the
    /// balancer's order: least urgent first); O(n).
    /// Tasks queued in group runqueues follow the root's, group by group.
    pub fn fair_queue_rev(&self) -> impl Iterator<Item = TaskId> + '_ {
        let mut i = self.fair.timeline.last();
        core::iter::from_fn(move || loop {
            if i == NIL {
                return None;
            }
            let cur = i;
            i = self.fair.timeline.prev(i);
            if self.tasks[cur as usize].my_q == 0 {
                return Some(self.id_of(cur));
            }
        })
        .chain(self.grouped_queue())
    }

    /// Sets the task's allowed CPUs. Moving it off a CPU it may no longer use
    /// is the caller's (`smp::Scheduler::set_cpus_allowed`).
    pub fn set_cpus_allowed(&mut self, id: TaskId, mask: CpuMask) {
        if let Some(s) = self.held_slot(id) {
            self.tasks[s as usize].cpus_allowed = mask;
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
    /// If the id is at or above the id limit, if growing the storage fails
    /// ([`Rq::try_enqueue_task`] returns these as errors), or if the task is
    /// already held here: a kernel bug.
    pub fn enqueue_task(&mut self, id: TaskId, task: SchedTask, flags: EnqueueFlags) {
        let s = self.slot_or_panic(id);
        self.enqueue_at(s, &task, flags);
    }

    /// [`Rq::enqueue_task`] that reports an id above the limit or a failed
    /// growth instead of panicking (the task is `Copy`: the caller keeps it).
    pub fn try_enqueue_task(
        &mut self,
        id: TaskId,
        task: SchedTask,
        flags: EnqueueFlags,
    ) -> Result<(), RqError> {
        let s = self.slot_for(id)?;
        self.enqueue_at(s, &task, flags);
        Ok(())
    }

    #[inline]
    fn slot_or_panic(&mut self, id: TaskId) -> u32 {
        match self.own_slot(id) {
            NIL => self.new_slot_or_panic(id),
            s => s,
        }
    }

    #[cold]
    fn new_slot_or_panic(&mut self, id: TaskId) -> u32 {
        match self.new_slot(id) {
            Ok(s) => s,
            Err(e) => panic!("cannot enqueue task {} on cpu {}: {:?}", id.0, self.cpu, e),
        }
    }

    /// Enqueues a copy of `task` into slot `s` (from [`Rq::slot_for`]); the
    /// task is passed by reference so that it is copied once, into the slot.
    fn enqueue_at(&mut self, s: u32, task: &SchedTask, flags: EnqueueFlags) {
        let i = s as usize;
        assert!(
            self.tasks[i].state == TaskState::Absent,
            "task {} enqueued twice on cpu {}",
            self.slot_ids[i],
            self.cpu
        );
        self.tasks[i] = *task;
        if task.params.policy == crate::task::Policy::Idle {
            self.cfg.note_sched_idle();
        }
        self.enqueue_slot(s, flags);
    }

    /// [`Rq::enqueue_at`] of the state already in slot `s` (no copy).
    #[inline(always)]
    fn enqueue_slot(&mut self, s: u32, flags: EnqueueFlags) {
        let i = s as usize;
        let task = &mut self.tasks[i];
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
        // Read while the task is at hand, not indexed again in the fair
        // arms that use it (a load and a mask wasted on RT and deadline).
        let est = task.se.avg.util_est_ewma();
        let slot = Slot(s);
        match class {
            SchedClass::Fair if task.group != 0 => {
                self.util_est_add(est);
                self.enqueue_fair_grouped(s, flags)
            }
            SchedClass::Fair => {
                self.util_est_add(est);
                self.fair
                    .enqueue_entity(&mut self.tasks, &self.cfg, slot, flags);
                if self.fair.nr_queued == 1 {
                    self.fair_server_start();
                }
            }
            SchedClass::Rt => {
                self.rt
                    .enqueue(&mut self.tasks, slot, flags.contains(EnqueueFlags::HEAD))
            }
            SchedClass::Dl => {
                self.dl_enable();
                let moved =
                    flags.contains(EnqueueFlags::MIGRATED) && !flags.contains(EnqueueFlags::WAKEUP);
                self.dl.enqueue(&mut self.tasks, slot, self.clock, moved);
                self.dl_timer_update();
            }
            SchedClass::Idle => unreachable!("no task has the idle class"),
        }
        self.nr_running += 1;
        self.drain_fair_resched();
        if class == SchedClass::Fair {
            self.hrtick_update();
        }
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
        let s = self.held_slot(id).ok_or(RqError::NotQueued)?;
        self.dequeue_slot(s, flags)
    }

    // Inlined into `dequeue_task`, so the result is not copied once more.
    #[inline(always)]
    fn dequeue_slot(&mut self, s: u32, flags: DequeueFlags) -> Result<Option<SchedTask>, RqError> {
        let mut out = None;
        self.dequeue_slot_into(s, flags, &mut out)?;
        Ok(out)
    }

    /// [`Rq::dequeue_slot`] with the task's state written straight into
    /// `dst` (left `None` while its dequeue is delayed): one copy of the
    /// state, slot to `dst`, where [`Rq::schedule`] built its result from
    /// `dequeue_slot`'s paid two or three more (the `Result` and `Option`
    /// layers; a task's state is over 300 bytes, each copy a `memcpy`).
    #[inline(always)]
    fn dequeue_slot_into(
        &mut self,
        s: u32,
        flags: DequeueFlags,
        dst: &mut Option<SchedTask>,
    ) -> Result<(), RqError> {
        match self.tasks[s as usize].state {
            TaskState::Queued => {
                if !self.deactivate(s, flags) {
                    return Ok(());
                }
            }
            TaskState::Delayed => self.finish_delayed(s),
            TaskState::Blocked => {}
            TaskState::Absent => return Err(RqError::NotQueued),
        }
        self.take_into(s, dst);
        Ok(())
    }

    /// Takes a queued task out of its class (`deactivate_task`). Returns
    /// false when a sleeping fair task's dequeue is delayed (it stays queued
    /// as `Delayed`); otherwise it is off the runqueue, marked `Blocked` and
    /// no longer counted, its state still in its slot.
    #[inline(always)]
    fn deactivate(&mut self, s: u32, flags: DequeueFlags) -> bool {
        let i = s as usize;
        let id = Slot(s);
        match self.tasks[i].class() {
            SchedClass::Fair => {
                let util_est = self.cfg.feat(Feature::UtilEst);
                if util_est {
                    // util_est_dequeue: the estimate it was counted with
                    // leaves before the sample changes it.
                    let est = self.tasks[i].se.avg.util_est_ewma();
                    self.util_est = self.util_est.saturating_sub(est);
                }
                let done = if self.tasks[i].group != 0 {
                    self.dequeue_fair_grouped(s, flags)
                } else {
                    self.fair
                        .dequeue_entity(&mut self.tasks, &self.cfg, id, flags)
                };
                if util_est && flags.contains(DequeueFlags::SLEEP) {
                    // util_est_update: a sample of its utilization at sleep
                    // (delayed or not), taken as Linux's dequeue_entity
                    // takes it, after the update of its averages there.
                    self.tasks[i].se.avg.util_est_update();
                }
                if !done {
                    self.tasks[i].state = TaskState::Delayed;
                    self.stats.nr_delayed += 1;
                    self.drain_fair_resched();
                    return false;
                }
                self.fair_server_stop_if_empty();
            }
            SchedClass::Rt => {
                if self.curr == s {
                    RtRq::update_curr(&mut self.tasks, id, self.clock);
                }
                self.rt.dequeue(&mut self.tasks, id);
            }
            SchedClass::Dl => {
                if self.curr == s {
                    self.dl.update_curr(&mut self.tasks, id, self.clock);
                }
                self.dl.dequeue(&mut self.tasks, id);
                self.dl_timer_update();
            }
            SchedClass::Idle => unreachable!(),
        }
        self.drain_fair_resched();
        self.tasks[i].state = TaskState::Blocked;
        self.nr_running -= 1;
        true
    }

    /// `util_est_enqueue`: a fair task joining the root runqueue adds its
    /// estimate to [`Rq::util_est`] (when UTIL_EST is on). Its dequeue
    /// (in [`Rq::deactivate`], when it leaves or is delayed) takes it out,
    /// saturating at 0: the sum is stale after UTIL_EST was off for a while,
    /// as in Linux.
    #[inline(always)]
    fn util_est_enqueue(&mut self, s: u32) {
        let est = self.tasks[s as usize].se.avg.util_est_ewma();
        self.util_est_add(est);
    }

    /// [`Rq::util_est_enqueue`] of an estimate already read.
    #[inline(always)]
    fn util_est_add(&mut self, est: u64) {
        if self.cfg.feat(Feature::UtilEst) {
            self.util_est += est;
        }
    }

    /// The root fair runqueue's `util_est`: Σ the queued (not delayed) fair
    /// tasks' `_task_util_est`, kept while UTIL_EST is on.
    pub fn util_est(&self) -> u64 {
        self.util_est
    }

    /// Completes a delayed dequeue: the task is `Blocked`, its state kept
    /// (or, for a group entity, [`Rq::finish_delayed_group`]).
    fn finish_delayed(&mut self, s: u32) {
        if self.tasks[s as usize].my_q != 0 {
            // A delayed group entity (picked: its runqueue is empty).
            self.finish_delayed_group(s);
            return;
        }
        let flags = DequeueFlags::SLEEP | DequeueFlags::DELAYED;
        if self.tasks[s as usize].group != 0 {
            self.dequeue_fair_grouped(s, flags);
        } else {
            self.fair
                .dequeue_entity(&mut self.tasks, &self.cfg, Slot(s), flags);
        }
        self.fair_server_stop_if_empty();
        self.tasks[s as usize].state = TaskState::Blocked;
        self.nr_running -= 1;
        self.drain_fair_resched();
    }

    /// Reserves the deadline trees for this runqueue's slots at its first
    /// deadline task (a cold path, like a slot growth: a kernel that admits
    /// deadline tasks pays for the trees only then).
    #[cold]
    fn dl_enable_slow(&mut self) {
        if let Err(e) = self.dl.try_reserve(self.slot_cap as usize) {
            panic!(
                "cannot reserve the deadline trees on cpu {}: {:?}",
                self.cpu, e
            );
        }
        self.dl.add_slots(self.tasks.len());
        self.dl.enabled = true;
    }

    #[inline]
    fn dl_enable(&mut self) {
        if !self.dl.enabled {
            self.dl_enable_slow();
        }
    }

    /// Replenishes the throttled deadline tasks whose period began, and
    /// asks for a repick when one of them should run before the current
    /// (`dl_task_timer`'s `wakeup_preempt_dl` / `resched_curr`). At the
    /// deadline timer ([`Rq::dl_timer`]) and at the tick, which finds
    /// nothing due when the timer came first and replenishes on a platform
    /// without the one-shot timer.
    fn dl_replenish(&mut self) {
        if self.dl.nr_running == self.dl.nr_ready {
            return;
        }
        let Some(d) = self.dl.replenish_due(&mut self.tasks, self.clock) else {
            return;
        };
        self.dl_timer_update();
        let preempt = self.curr == NIL || {
            let c = &self.tasks[self.curr as usize];
            c.class() != SchedClass::Dl || c.dl.throttled || d < c.dl.deadline
        };
        if preempt {
            self.resched_curr(Resched::Now);
        }
    }

    /// `dl_server_start` for the first fair entity queued (or at the tick,
    /// for a server whose runtime was 0): a server that comes back serving
    /// (within the period it was boosted into) outranks the running RT task.
    #[inline]
    fn fair_server_start(&mut self) {
        if self
            .fair_server
            .start(&self.cfg, self.clock, self.fair.sum_exec_ns)
        {
            self.fair_server_resched(ServerTick::Boost);
        }
    }

    /// `dl_server_stop` once the last fair entity has left.
    #[inline]
    fn fair_server_stop_if_empty(&mut self) {
        if self.fair.nr_queued == 0 {
            self.fair_server.stop(self.clock, self.fair.sum_exec_ns);
        }
    }

    /// Is the fair server serving fair tasks above RT now?
    #[inline]
    pub fn fair_served(&self) -> bool {
        self.fair_server.running() && self.fair.nr_queued > 0
    }

    /// The fair server's tick: (re)starts it if fair tasks are queued but
    /// it is stopped (its runtime was 0), charges, replenishes, boosts; a
    /// change of who outranks whom asks for an immediate repick.
    #[inline]
    fn fair_server_tick(&mut self) {
        if self.fair.nr_queued == 0 {
            return;
        }
        if !self.fair_server.active() {
            self.fair_server_start();
        }
        let tick = self
            .fair_server
            .tick(&self.cfg, self.clock, self.fair.sum_exec_ns);
        if tick != ServerTick::None {
            self.fair_server_changed(tick);
        }
    }

    /// The server's tick changed its state or found its next instant less
    /// than a tick away: the repick it may need, and its timer.
    #[cold]
    fn fair_server_changed(&mut self, tick: ServerTick) {
        self.fair_server_resched(tick);
        self.fair_server_timer_arm();
    }

    /// The deadline class's timer fired: the running task's time is
    /// charged first (its `update_curr`, so that a fair task's running time
    /// reaches the server), then the throttled deadline tasks whose next
    /// period began are replenished (Linux's `dl_task_timer`), then, if its
    /// instant was due, the fair server's tick work runs (`dl_server_timer`),
    /// and the timer is armed for what is next (or stopped).
    #[cold]
    fn dl_timer(&mut self) {
        let server_due = self.server_timer_ns <= self.clock;
        self.update_curr();
        self.dl_replenish();
        if server_due {
            self.server_timer_ns = HRTICK_NONE;
            self.fair_server_tick();
        }
        self.fair_server_timer_arm();
    }

    /// A boost or unboost at the tick: who outranks whom changed, so the
    /// running task may have to give way.
    #[cold]
    fn fair_server_resched(&mut self, tick: ServerTick) {
        let curr_class = (self.curr != NIL).then(|| self.tasks[self.curr as usize].class());
        match tick {
            ServerTick::Boost if curr_class != Some(SchedClass::Fair) => {
                self.resched_curr(Resched::Now);
            }
            ServerTick::Unboost
                if curr_class == Some(SchedClass::Fair) && self.rt.nr_running > 0 =>
            {
                self.resched_curr(Resched::Now);
            }
            _ => {}
        }
    }

    /// Empties slot `s` and returns its task. The running task's slot stays
    /// reserved for its id until it is switched out ([`Rq::pick_next_task`]).
    // Not inlined: inlined into `dequeue_task`, the task is copied twice.
    #[inline(never)]
    fn take(&mut self, s: u32) -> SchedTask {
        let mut out = self.tasks[s as usize];
        out.state = TaskState::Absent;
        self.release(s);
        out
    }

    /// [`Rq::take`] straight into `dst`: one copy of the state.
    #[inline(always)]
    fn take_into(&mut self, s: u32, dst: &mut Option<SchedTask>) {
        dst.insert(self.tasks[s as usize]).state = TaskState::Absent;
        self.release(s);
    }

    /// The slot half of [`Rq::take`]: `s` no longer holds a task.
    fn release(&mut self, s: u32) {
        self.tasks[s as usize].state = TaskState::Absent;
        if s == self.curr {
            self.retired = s;
        } else {
            self.free_slot(s);
        }
    }

    // ---- wakeups ----

    /// `wakeup_preempt`: should the just-queued task `id` preempt the running
    /// one? Records the resulting need-resched and returns the decision.
    ///
    /// # Panics
    /// If the task is not held here.
    pub fn wakeup_preempt(&mut self, id: TaskId, wf: WakeFlags) -> WakeupDecision {
        let s = self
            .held_slot(id)
            .expect("wakeup_preempt of a task not held here");
        self.wakeup_preempt_slot(s, wf)
    }

    fn wakeup_preempt_slot(&mut self, s: u32, wf: WakeFlags) -> WakeupDecision {
        let id = Slot(s);
        let decide = |rq: &mut Rq, reason: WakeupReason, preempt: bool, kind: Resched| {
            rq.stats.wakeup_rows[reason.row()] += 1;
            if preempt {
                rq.resched_curr(kind);
                rq.stats.nr_wakeup_preempt += 1;
            }
            // `wakeup_preempt()`'s tail: an immediate request is pending
            // and the running task (the idle task counts: it is always
            // queued) stays queued, so `__schedule` will run soon and skip
            // its clock update (`rq_clock_skip_update`). A lazy request
            // (TIF_NEED_RESCHED_LAZY) does not count.
            if rq.need_resched == Resched::Now
                && (rq.curr == NIL
                    || matches!(
                        rq.tasks[rq.curr as usize].state,
                        TaskState::Queued | TaskState::Delayed
                    ))
            {
                rq.clock_skip = true;
            }
            WakeupDecision {
                reason,
                preempt,
                resched: rq.need_resched,
                protected: false,
            }
        };
        if self.curr == NIL {
            return decide(self, WakeupReason::IdleCpu, true, Resched::Now);
        }
        if self.curr == s {
            return decide(self, WakeupReason::SameTask, false, Resched::None);
        }
        let pc = self.tasks[s as usize].class();
        let cc = self.tasks[self.curr as usize].class();
        if pc == SchedClass::Dl && cc == SchedClass::Dl {
            // EDF: an earlier absolute deadline preempts (`dl_entity_preempt`).
            let earlier = self.tasks[s as usize].dl.deadline
                < self.tasks[self.curr as usize].dl.deadline
                || self.tasks[self.curr as usize].dl.throttled;
            let reason = if earlier {
                WakeupReason::DlEarlierDeadline
            } else {
                WakeupReason::DlNotEarlier
            };
            return decide(self, reason, earlier, Resched::Now);
        }
        if pc == SchedClass::Rt && cc == SchedClass::Fair && self.fair_served() {
            // The running fair task is served by the fair server, a
            // deadline entity: RT does not preempt it.
            return decide(self, WakeupReason::LowerClass, false, Resched::None);
        }
        if pc.above(cc) {
            return decide(self, WakeupReason::HigherClass, true, Resched::Now);
        }
        if cc.above(pc) {
            if pc == SchedClass::Fair
                && self.fair_served()
                && (cc == SchedClass::Rt
                    || self.fair_server.deadline < self.tasks[self.curr as usize].dl.deadline)
            {
                // The wakee is served at once by the fair server, a
                // deadline entity (restarted within its boosted period): it
                // outranks RT, and a deadline task with a later deadline
                // (`dl_server_start`'s `resched_curr`).
                return decide(self, WakeupReason::HigherClass, true, Resched::Now);
            }
            return decide(self, WakeupReason::LowerClass, false, Resched::None);
        }
        match pc {
            SchedClass::Fair => {
                let now_pending = self.need_resched == Resched::Now;
                let protect_picks = self.fair.wakeup_pick_stats.protect;
                let grouped = self.grp.is_some()
                    && (self.tasks[s as usize].group | self.tasks[self.curr as usize].group) != 0;
                let r = if grouped {
                    // Decided at the level the two tasks share.
                    self.wakeup_fair_grouped(s, wf, now_pending)
                } else {
                    match self.fair.check_preempt_wakeup(
                        &mut self.tasks,
                        &self.cfg,
                        id,
                        wf,
                        now_pending,
                    ) {
                        WakeupStep::Done(r) => r,
                        WakeupStep::Pick { short } => self.wakeup_pick(id, short),
                    }
                };
                self.drain_fair_resched();
                // Fair preemption is lazy, except that a SCHED_IDLE task gives
                // way at once (the NORMAL-vs-SCHED_IDLE promotion agreed in the
                // review of the PREEMPT_AUTO series, docs/references.md; 6.19
                // asks lazily here too).
                let kind = if r == FairWakeup::IdleCurrent {
                    Resched::Now
                } else {
                    Resched::Lazy
                };
                let mut d = decide(self, WakeupReason::Fair(r), r.preempts(), kind);
                d.protected = !grouped && self.fair.wakeup_pick_stats.protect != protect_picks;
                d
            }
            SchedClass::Rt => {
                let higher = self.tasks[s as usize].params.rt_priority
                    > self.tasks[self.curr as usize].params.rt_priority;
                let reason = if higher {
                    WakeupReason::RtHigherPriority
                } else {
                    WakeupReason::RtNotHigher
                };
                decide(self, reason, higher, Resched::Now)
            }
            SchedClass::Dl | SchedClass::Idle => unreachable!(),
        }
    }

    /// The PICK step of a fair wakeup decision through `pick_next_entity`
    /// (Linux 7.x, ac8e69e69363 and 9f6d929ee2c6): a pick that lands on a
    /// delayed entity finishes its dequeue (it is past its 0-lag point) and
    /// picks again while the fair queue holds anything. Each round removes
    /// one entity, so it ends.
    fn wakeup_pick(&mut self, pse: Slot, short: bool) -> FairWakeup {
        let nse = loop {
            match self.fair.pick_eevdf(&self.tasks, &self.cfg, !short, false) {
                Some(se) if self.tasks[se.0 as usize].se.sched_delayed => {
                    self.finish_delayed(se.0);
                    self.stats.nr_wakeup_delayed_dequeues += 1;
                    if self.fair.nr_queued == 0 {
                        break None;
                    }
                }
                other => break other,
            }
        };
        self.fair
            .wakeup_pick_done(&mut self.tasks, &self.cfg, pse, nse, short)
    }

    /// `ttwu_do_activate`: enqueue a sleeping task here and decide preemption.
    pub fn try_to_wake_up(&mut self, id: TaskId, task: SchedTask, wf: WakeFlags) -> WakeupDecision {
        self.ttwu_enqueue(id, &task, wf)
    }

    /// [`Rq::try_to_wake_up`] from a state the caller keeps (a wake-list
    /// entry, a parked task taken out of its cell): copied once, into the
    /// task's slot.
    pub(crate) fn ttwu_enqueue(
        &mut self,
        id: TaskId,
        task: &SchedTask,
        wf: WakeFlags,
    ) -> WakeupDecision {
        let s = self.slot_or_panic(id);
        self.ttwu_activate(s, Some(task), wf)
    }

    /// [`Rq::ttwu_enqueue`] of a task parked from this runqueue whose state
    /// in its cell, `kept`, is still the one its slot here kept when it
    /// left (the caller knows it: nothing changed it since): the slot is
    /// taken back as it is, without copying the state in (312 bytes, a
    /// `memcpy` at each such wakeup). `None`, with nothing done, when the
    /// slot is no longer its own (another task took it): copy then.
    pub(crate) fn ttwu_enqueue_kept(
        &mut self,
        id: TaskId,
        kept: &SchedTask,
        wf: WakeFlags,
    ) -> Option<WakeupDecision> {
        let s = self.ids.get(id.0);
        if s == NIL || self.tasks[s as usize].state != TaskState::Absent {
            return None;
        }
        // A free slot is written by no one: its state is the one it left
        // with, which the cell was given (but where it sits).
        debug_assert!(
            SchedTask {
                state: kept.state,
                ..self.tasks[s as usize]
            } == *kept,
            "task {} woken on cpu {} with a changed state but a kept slot",
            id.0,
            self.cpu
        );
        // `own_slot`'s bookkeeping, the slot known.
        if s == self.retired {
            self.retired = NIL;
        } else {
            self.used_slots += 1;
        }
        Some(self.ttwu_activate(s, None, wf))
    }

    /// The wakeup's enqueue into slot `s` (`ttwu_do_activate`): of `copy`,
    /// or of the state the slot holds.
    #[inline(always)]
    fn ttwu_activate(&mut self, s: u32, copy: Option<&SchedTask>, wf: WakeFlags) -> WakeupDecision {
        let mut flags = EnqueueFlags::WAKEUP;
        if wf.contains(WakeFlags::MIGRATED) {
            flags |= EnqueueFlags::MIGRATED;
        }
        self.stats.nr_wakeups += 1;
        match copy {
            Some(task) => self.enqueue_at(s, task, flags),
            None => self.enqueue_slot(s, flags),
        }
        self.tasks[s as usize].nr_wakeups += 1;
        self.wakeup_preempt_slot(s, wf | WakeFlags::TTWU)
    }

    /// `wake_up_new_task`: a new task's first enqueue (half-slice deadline with
    /// PLACE_DEADLINE_INITIAL; never a buddy or sync preemption).
    ///
    /// # Panics
    /// As [`Rq::enqueue_task`]; [`Rq::try_wake_up_new_task`] returns errors.
    pub fn wake_up_new_task(&mut self, id: TaskId, task: SchedTask) -> WakeupDecision {
        let s = self.slot_or_panic(id);
        self.enqueue_at(s, &task, EnqueueFlags::INITIAL);
        self.wakeup_preempt_slot(s, WakeFlags::FORK)
    }

    /// [`Rq::wake_up_new_task`] that reports an id above the limit or a
    /// failed growth ([`RqError::IdOutOfRange`], [`RqError::NoMemory`]).
    pub fn try_wake_up_new_task(
        &mut self,
        id: TaskId,
        task: SchedTask,
    ) -> Result<WakeupDecision, RqError> {
        let s = self.slot_for(id)?;
        self.enqueue_at(s, &task, EnqueueFlags::INITIAL);
        Ok(self.wakeup_preempt_slot(s, WakeFlags::FORK))
    }

    /// `ttwu_runnable`: wake a task this runqueue still holds: a delayed sleeper
    /// is re-queued in place (its negative lag kept), a preempted task is
    /// re-checked against the running one.
    pub fn ttwu_runnable(&mut self, id: TaskId, wf: WakeFlags) -> TtwuRunnable {
        let Some(s) = self.held_slot(id) else {
            return TtwuRunnable::NotHere;
        };
        let i = s as usize;
        match self.tasks[i].state {
            TaskState::Delayed => {
                // Its estimate left at the sleep that delayed it.
                self.util_est_enqueue(s);
                if self.tasks[i].group != 0 {
                    self.enqueue_fair_grouped(s, EnqueueFlags::DELAYED);
                } else {
                    self.fair.enqueue_entity(
                        &mut self.tasks,
                        &self.cfg,
                        Slot(s),
                        EnqueueFlags::DELAYED,
                    );
                }
                self.tasks[i].state = TaskState::Queued;
                self.tasks[i].nr_wakeups += 1;
                self.stats.nr_wakeups += 1;
                self.drain_fair_resched();
                if self.curr == s {
                    return TtwuRunnable::Woken(WakeupDecision {
                        reason: WakeupReason::SameTask,
                        preempt: false,
                        resched: self.need_resched,
                        protected: false,
                    });
                }
                TtwuRunnable::Woken(self.wakeup_preempt_slot(s, wf | WakeFlags::TTWU))
            }
            TaskState::Queued => {
                TtwuRunnable::Woken(self.wakeup_preempt_slot(s, wf | WakeFlags::TTWU))
            }
            TaskState::Blocked => TtwuRunnable::Blocked(self.take(s)),
            TaskState::Absent => TtwuRunnable::NotHere,
        }
    }

    // ---- pick ----

    fn put_prev_task(&mut self, prev: u32) {
        let id = Slot(prev);
        if self.fair.curr == prev {
            self.fair.put_prev_entity(&mut self.tasks, &self.cfg, id);
        } else if self.fair.curr != NIL && self.tasks[self.fair.curr as usize].my_q != 0 {
            // A grouped task: the root runs its group's entity.
            self.put_prev_grouped(prev);
        } else if self.tasks[prev as usize].rt.on_list {
            RtRq::update_curr(&mut self.tasks, id, self.clock);
        } else if self.tasks[prev as usize].dl.on_rq
            && self.dl.update_curr(&mut self.tasks, id, self.clock)
        {
            self.dl_timer_update();
        }
    }

    /// Sets the running task up again after a `sched_change` (Linux's
    /// `set_next_task(rq, p)`, `first` false): its slice protection is
    /// kept, no timer armed.
    fn set_next_task(&mut self, next: u32) {
        let t = &self.tasks[next as usize];
        let kind = match t.class() {
            SchedClass::Fair if t.group != 0 => NextKind::FairGrouped,
            SchedClass::Fair => NextKind::Fair,
            _ => NextKind::Other,
        };
        self.set_next_task_as(next, kind, false);
    }

    /// [`Rq::set_next_task`] when the caller knows `next`'s kind: the pick
    /// does (a task it took from the root's tree is a flat fair task, one
    /// it found below a group entity a grouped one, one from above the fair
    /// class neither), so that its flat path tests neither the class nor
    /// the group again. `first`: a newly picked task (the pick's
    /// `put_prev_set_next_task`), whose slice protection is armed; false
    /// for the running task set up again after a `sched_change`.
    #[inline(always)]
    fn set_next_task_as(&mut self, next: u32, kind: NextKind, first: bool) {
        debug_assert!({
            let t = &self.tasks[next as usize];
            let fair = t.class() == SchedClass::Fair;
            match kind {
                NextKind::Fair => fair && t.group == 0,
                NextKind::FairGrouped => fair && t.group != 0,
                NextKind::Other => !fair,
            }
        });
        match kind {
            NextKind::Fair if first => {
                self.fair
                    .set_next_entity(&mut self.tasks, &self.cfg, Slot(next))
            }
            NextKind::Fair => {
                self.fair
                    .set_next_entity_again(&mut self.tasks, &self.cfg, Slot(next))
            }
            NextKind::FairGrouped => self.set_next_grouped(next, first),
            NextKind::Other => self.tasks[next as usize].se.exec_start = self.clock,
        }
    }

    /// The pick above the fair class, with a deadline or RT task ready: the
    /// earliest deadline among the deadline tasks and the fair server (a
    /// deadline entity, which outranks RT while it serves), then RT.
    /// `None`: the fair class picks (the server serves, or no task above
    /// it is ready).
    #[inline]
    fn pick_above_fair(&self) -> Option<u32> {
        let dl = self.dl.pick_task();
        let served = self.fair_served()
            && dl.is_none_or(|d| self.fair_server.deadline < self.tasks[d.0 as usize].dl.deadline);
        if served {
            return None;
        }
        dl.or_else(|| self.rt.pick_task()).map(|p| p.0)
    }

    /// The highest class with work picks (`pick_next_task`); a delayed fair task
    /// that comes up is dequeued for good and the pick restarts. Then the
    /// previous task is put back and the next one set up (`put_prev_task` /
    /// `set_next_task`). Clears the need-resched state. `None`: run idle.
    pub fn pick_next_task(&mut self) -> Option<TaskId> {
        let prev = self.curr;
        // Each arm knows what it picked, so that `set_next_task` need not
        // test the task's class and group again.
        let (next, kind) = loop {
            // Deadline tasks and the fair server (a deadline entity, which
            // outranks RT while it serves) by earliest deadline, then RT;
            // skipped at once while neither class has a ready task.
            if self.dl.nr_ready | self.rt.nr_running != 0 {
                if let Some(p) = self.pick_above_fair() {
                    break (p, NextKind::Other);
                }
            }
            if self.fair.nr_queued == 0 {
                break (NIL, NextKind::Other);
            }
            if self.fair.curr != NIL {
                self.fair.update_curr(&mut self.tasks, &self.cfg);
            }
            match self.fair.pick_eevdf(&self.tasks, &self.cfg, true, true) {
                Some(se) if self.tasks[se.0 as usize].se.sched_delayed => self.finish_delayed(se.0),
                // A group entity: pick down through its runqueues.
                Some(se) if self.tasks[se.0 as usize].my_q != 0 => match self.pick_grouped(se.0) {
                    NIL => break (self.rt.pick_task().map_or(NIL, |p| p.0), NextKind::Other),
                    t if self.tasks[t as usize].se.sched_delayed => self.finish_delayed(t),
                    t => break (t, NextKind::FairGrouped),
                },
                // A task of the root runqueue: a flat fair task.
                Some(se) => break (se.0, NextKind::Fair),
                None => break (self.rt.pick_task().map_or(NIL, |p| p.0), NextKind::Other),
            }
        };
        // One copy of the end per kind, so that each arm above jumps to
        // its own (the kind is a constant in each: not kept in a register
        // across `put_prev_task` and tested after it).
        match kind {
            NextKind::Fair => self.put_prev_set_next(prev, next, NextKind::Fair),
            NextKind::FairGrouped => self.put_prev_set_next(prev, next, NextKind::FairGrouped),
            NextKind::Other => self.put_prev_set_next(prev, next, NextKind::Other),
        }
        self.curr()
    }

    /// The end of a pick: `put_prev_set_next_task` from `prev` to `next`
    /// (either may be `NIL`, the idle task), then the need-resched state
    /// cleared, the slice timer and the switch counters updated.
    /// `kind`: what `next` is ([`Rq::set_next_task_as`]).
    #[inline(always)]
    fn put_prev_set_next(&mut self, prev: u32, next: u32, kind: NextKind) {
        // Nothing to do when the running task is picked again (its
        // protection is not re-armed, as in Linux).
        if next != prev {
            if prev != NIL {
                self.put_prev_task(prev);
                if prev == self.retired {
                    // It was dequeued while running: its slot is free now.
                    self.retired = NIL;
                    self.free_slot(prev);
                }
            }
            self.curr = NIL;
            if next != NIL {
                self.set_next_task_as(next, kind, true);
            } else {
                self.idle_clock_pelt();
            }
            self.curr = next;
        }
        self.fair.resched = false;
        self.need_resched = Resched::None;
        self.hrtick_after_pick(next != prev);
        if next != prev {
            self.stats.nr_switches += 1;
            if next != NIL {
                self.tasks[next as usize].nr_switches += 1;
            }
        }
    }

    /// A [`Switch`] from the running task to be filled in (nothing picked,
    /// no state taken yet).
    #[inline(always)]
    fn switch_from_curr(&self) -> Switch {
        Switch {
            prev: self.curr(),
            next: None,
            prev_blocked: None,
            prev_exited: None,
            prev_misplaced: false,
        }
    }

    /// `__schedule` in one call: if `prev_sleeps`, dequeue the running task
    /// (DEQUEUE_SLEEP, possibly delayed), then pick the next task.
    pub fn schedule(&mut self, prev_sleeps: bool) -> Switch {
        // `__schedule` ends any skip request (`clock_update_flags =
        // RQCF_UPDATED`), whether its clock update used it or not.
        self.clock_skip = false;
        // Built in place: the sleeper's state is written straight into it.
        let mut sw = self.switch_from_curr();
        if prev_sleeps && self.curr != NIL {
            // The running task's slot is never empty: no error.
            let _ = self.dequeue_slot_into(self.curr, DequeueFlags::SLEEP, &mut sw.prev_blocked);
        }
        sw.next = self.pick_next_task();
        sw
    }

    /// `__schedule` with the task lifecycle of [`crate::smp::Scheduler`]:
    /// the running task stays, yields, sleeps (its state kept here, see
    /// [`PrevAction::Sleeps`]) or exits; then the next task is picked. A
    /// sleeper this CPU is not allowed to run leaves its fair queue at once
    /// (no delayed dequeue), so that its wakeup places it anew.
    pub fn switch(&mut self, action: PrevAction) -> Switch {
        // As in `schedule`: the request was for this `__schedule`.
        self.clock_skip = false;
        if action == PrevAction::Exits && self.curr != NIL {
            return self.switch_exits();
        }
        // Only scalars here, the result built at the end: the common switch
        // writes its `Switch` straight into the caller's (with the state of
        // no task), where building it in a local to fill in, as the exit
        // does, cost a copy of the whole `Switch` (two task states, over 600
        // bytes) at every switch.
        let prev = self.curr();
        let mut prev_misplaced = false;
        if self.curr != NIL {
            let s = self.curr;
            let queued = self.tasks[s as usize].state == TaskState::Queued;
            let mut allowed = self.tasks[s as usize].cpus_allowed.has(self.cpu);
            if self.push != 0 {
                allowed = self.push_prev(s, action, allowed);
            }
            match action {
                PrevAction::Stays | PrevAction::Yields if queued && !allowed => {
                    prev_misplaced = self.deactivate(s, DequeueFlags::MIGRATING);
                    if prev_misplaced {
                        self.misplaced = prev;
                    } else {
                        self.active_push_cpu = None;
                    }
                }
                PrevAction::Stays => {}
                PrevAction::Yields => self.yield_task(),
                PrevAction::Sleeps => {
                    if queued {
                        let flags = if allowed {
                            DequeueFlags::SLEEP
                        } else {
                            DequeueFlags::SLEEP | DequeueFlags::SPECIAL
                        };
                        self.deactivate(s, flags);
                    }
                }
                // With a running task: `switch_exits`.
                PrevAction::Exits => {}
            }
        }
        Switch {
            prev,
            next: self.switch_next(),
            prev_blocked: None,
            prev_exited: None,
            prev_misplaced,
        }
    }

    /// [`Rq::switch`] for a running task that exits: its final state is
    /// written straight into the result (built in place and filled in).
    #[inline(never)]
    fn switch_exits(&mut self) -> Switch {
        let mut sw = self.switch_from_curr();
        let s = self.curr;
        if self.push != 0 {
            // Its PUSH_ACTIVE is cleared as at any switch (the task goes anyway).
            let allowed = self.tasks[s as usize].cpus_allowed.has(self.cpu);
            self.push_prev(s, PrevAction::Exits, allowed);
        }
        let flags = DequeueFlags::SLEEP | DequeueFlags::SPECIAL;
        // The running task's slot is never empty: no error.
        let _ = self.dequeue_slot_into(s, flags, &mut sw.prev_exited);
        // task_dead_fair: its load leaves with it.
        if let Some(t) = sw.prev_exited.as_mut() {
            self.detach_gone_task(t);
            if t.group != 0 {
                // It leaves its task group (which may then be destroyed).
                let _ = self.cfg.groups.move_task(
                    crate::fair::group::GroupId(t.group),
                    crate::fair::group::GroupId::ROOT,
                );
            }
        }
        sw.next = self.switch_next();
        sw
    }

    /// The pick that ends [`Rq::switch`]. Going offline: the idle task runs,
    /// and the CPU's queued tasks are moved off by `Scheduler::migrate_tasks`.
    #[inline(always)]
    fn switch_next(&mut self) -> Option<TaskId> {
        if self.push & PUSH_BALANCE != 0 {
            self.put_prev_set_next(self.curr, NIL, NextKind::Other);
            None
        } else {
            self.pick_next_task()
        }
    }

    /// Is this runqueue's CPU going offline ([`Rq::switch`] then picks
    /// nothing; Linux's `balance_push`)?
    pub fn balance_push(&self) -> bool {
        self.push & PUSH_BALANCE != 0
    }

    /// Active balance (Linux's `active_load_balance_cpu_stop`, which the
    /// stopper runs on the busiest CPU after preempting its task): at the
    /// next switch, a running fair task that stays runnable is taken off
    /// this CPU as misplaced, and `Scheduler::finish_switch` queues it on
    /// `dst`. The caller asks for that switch (`resched_curr`).
    pub(crate) fn set_active_push(&mut self, dst: CpuId) {
        self.push |= PUSH_ACTIVE;
        self.active_push_cpu = Some(dst);
    }

    /// An active push asked for by [`Rq::set_active_push`] has not been
    /// carried out by a switch yet (Linux's `rq->active_balance`).
    pub(crate) fn active_push_pending(&self) -> bool {
        self.push & PUSH_ACTIVE != 0
    }

    /// The destination of the last active push that took a task off (see
    /// [`Rq::set_active_push`]), once.
    pub(crate) fn take_active_push_cpu(&mut self) -> Option<CpuId> {
        self.active_push_cpu.take()
    }

    /// A switch with a push bit set: may the previous task (slot `s`,
    /// `allowed` here by its affinity) stay? Not while the CPU goes offline
    /// ([`PUSH_BALANCE`]). [`PUSH_ACTIVE`] is cleared, and the task goes if
    /// it is a fair task that stays runnable and may run on the destination.
    #[cold]
    #[inline(never)]
    fn push_prev(&mut self, s: u32, action: PrevAction, allowed: bool) -> bool {
        let here = allowed && self.push & PUSH_BALANCE == 0;
        if self.push & PUSH_ACTIVE == 0 {
            return here;
        }
        self.push &= !PUSH_ACTIVE;
        let t = &self.tasks[s as usize];
        let go = here
            && matches!(action, PrevAction::Stays | PrevAction::Yields)
            && t.state == TaskState::Queued
            && t.class() == SchedClass::Fair
            && self.active_push_cpu.is_some_and(|c| t.cpus_allowed.has(c));
        if !go {
            self.active_push_cpu = None;
        }
        here && !go
    }

    /// The misplaced previous task `Scheduler::finish_switch` has not moved
    /// yet (see [`Switch::prev_misplaced`]).
    pub(crate) fn pending_misplaced(&self) -> Option<TaskId> {
        self.misplaced
    }

    /// `Scheduler::finish_switch` took over the misplaced previous task.
    pub(crate) fn clear_pending_misplaced(&mut self) {
        self.misplaced = None;
    }

    /// Sets or clears [`Rq::balance_push`] (`sched_cpu_deactivate` /
    /// `sched_cpu_activate`).
    pub(crate) fn set_balance_push(&mut self, on: bool) {
        if on {
            self.push |= PUSH_BALANCE;
        } else {
            self.push &= !PUSH_BALANCE;
        }
    }

    /// Wakes a task this runqueue holds, whatever its state, without handing
    /// its state out: a delayed or preempted task is handled as
    /// [`Rq::ttwu_runnable`] does; a blocked one is reported for placement.
    pub(crate) fn wake_held(&mut self, id: TaskId, wf: WakeFlags) -> HeldWake {
        match self.held_slot(id).map(|s| self.tasks[s as usize].state) {
            None | Some(TaskState::Absent) => HeldWake::NotHere,
            Some(TaskState::Blocked) => HeldWake::Blocked,
            Some(_) => match self.ttwu_runnable(id, wf) {
                TtwuRunnable::Woken(d) => HeldWake::Woken(d),
                // Unreachable: only a Blocked task is handed back, and it was
                // not Blocked. Report it as blocked rather than lose it.
                TtwuRunnable::Blocked(_) | TtwuRunnable::NotHere => HeldWake::NotHere,
            },
        }
    }

    /// Enqueues a task blocked here in its own slot (`ttwu_do_activate`
    /// without a move) and decides preemption.
    pub(crate) fn wake_in_place(
        &mut self,
        id: TaskId,
        wf: WakeFlags,
    ) -> Result<WakeupDecision, RqError> {
        let s = self.held_slot(id).ok_or(RqError::NotQueued)?;
        let i = s as usize;
        if self.tasks[i].state != TaskState::Blocked {
            return Err(RqError::NotQueued);
        }
        // Enqueued where it is: no copy of its state out of the slot and back.
        self.tasks[i].nr_wakeups += 1;
        self.stats.nr_wakeups += 1;
        let mut flags = EnqueueFlags::WAKEUP;
        if wf.contains(WakeFlags::MIGRATED) {
            flags |= EnqueueFlags::MIGRATED;
        }
        self.enqueue_slot(s, flags);
        Ok(self.wakeup_preempt_slot(s, wf | WakeFlags::TTWU))
    }

    /// Hands out the state of a task blocked here, to move it to another
    /// CPU ([`Rq::try_to_wake_up`] there) or to drop it.
    pub(crate) fn take_blocked(&mut self, id: TaskId) -> Result<SchedTask, RqError> {
        let s = self.held_slot(id).ok_or(RqError::NotQueued)?;
        if self.tasks[s as usize].state != TaskState::Blocked {
            return Err(RqError::NotQueued);
        }
        Ok(self.take(s))
    }

    /// The fair runqueue's load average (Linux's `cpu_load()`,
    /// `cfs_rq->avg.load_avg`: queued and blocked load).
    #[inline]
    pub fn load_avg(&self) -> u64 {
        self.fair.avg().load_avg
    }

    /// Takes the load of a task that slept here and is being woken on
    /// another CPU out of this runqueue's averages (its state is the
    /// caller's now): Linux's `migrate_task_rq_fair` on a wakeup.
    pub(crate) fn detach_sleeper_load(&mut self, t: &mut SchedTask) {
        self.detach_gone_task(t);
    }

    /// [`Rq::take_blocked`] straight into `dst` (a sleeper's cell): one copy
    /// of the state instead of two on the way to sleep.
    pub(crate) fn take_blocked_into(
        &mut self,
        id: TaskId,
        dst: &mut Option<SchedTask>,
    ) -> Result<(), RqError> {
        let s = self.held_slot(id).ok_or(RqError::NotQueued)?;
        if self.tasks[s as usize].state != TaskState::Blocked {
            return Err(RqError::NotQueued);
        }
        self.take_into(s, dst);
        Ok(())
    }

    /// Completes a delayed dequeue now (the task stays here, `Blocked`), so
    /// that its wakeup places it anew. Nothing happens in any other state.
    pub fn settle_delayed(&mut self, id: TaskId) {
        if let Some(s) = self.held_slot(id) {
            if self.tasks[s as usize].state == TaskState::Delayed {
                self.finish_delayed(s);
            }
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
                if self.grp.is_some() {
                    self.update_curr_grouped();
                }
                self.drain_fair_resched();
            }
            SchedClass::Rt => {
                RtRq::update_curr(&mut self.tasks, Slot(self.curr), self.clock);
            }
            SchedClass::Dl => {
                if self
                    .dl
                    .update_curr(&mut self.tasks, Slot(self.curr), self.clock)
                {
                    self.dl_timer_update();
                    self.resched_curr(Resched::Now);
                }
            }
            SchedClass::Idle => {}
        }
    }

    /// Task `id`'s total runtime in ns (Linux 7.2's `task_sched_runtime()`,
    /// behind `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` and the other thread
    /// CPU-time reads), the caller holding this runqueue's lock; `None` if
    /// the task is not held here.
    ///
    /// A task that is running here and on the runqueue (Linux:
    /// `task_current_donor(rq, p) && task_on_rq_queued(p)`: queued or
    /// delayed, not blocked) is charged first: the clock moves to `now_ns`
    /// (`update_rq_clock`) and its class's `update_curr` runs
    /// ([`Rq::update_curr`]), so the read does what the tick's accounting
    /// does, including a fair task's `update_deadline` and the lazy
    /// reschedule for a consumed request or an ended RUN_TO_PARITY
    /// protection (a deadline task's throttling asks for an immediate one).
    /// Any other task is read as it is: its runtime is fully accounted, and
    /// the clock is not touched (Linux's 64-bit fast path returns
    /// `p->se.sum_exec_runtime` without the lock for a task that is not
    /// `on_cpu` or not queued; under the lock, a task that is not current
    /// is not charged either). A pending clock-skip request
    /// (`rq_clock_skip_update`) is left as it is: Linux's `update_rq_clock`
    /// honours only RQCF_ACT_SKIP, which `__schedule` sets for itself.
    ///
    /// With task groups ours' [`Rq::update_curr`] charges every level of the
    /// running task, where 7.2's `update_curr_fair` charges its own
    /// `cfs_rq` only (the levels above are charged at their next update);
    /// the task's own runtime and request are the same either way.
    pub fn task_sched_runtime(&mut self, id: TaskId, now_ns: u64) -> Option<u64> {
        let s = self.held_slot(id)?;
        if s == self.curr
            && matches!(
                self.tasks[s as usize].state,
                TaskState::Queued | TaskState::Delayed
            )
        {
            self.update_rq_clock(now_ns);
            self.update_curr();
        }
        Some(self.tasks[s as usize].se.sum_exec_runtime)
    }

    // ---- tick, yield ----

    /// `sched_tick`: upgrade a pending lazy request, then the running task's
    /// class accounts the tick. Returns the need-resched state.
    pub fn task_tick(&mut self) -> Resched {
        self.stats.nr_ticks += 1;
        if self.need_resched == Resched::Lazy {
            self.need_resched = Resched::Now;
        }
        self.dl_replenish();
        let before = self.need_resched;
        let id = Slot(self.curr);
        // One call site of the fair server's tick (so that it is inlined);
        // an idle CPU's tick is not counted as a tick reschedule.
        let class = if self.curr == NIL {
            SchedClass::Idle
        } else {
            self.tasks[self.curr as usize].class()
        };
        match class {
            SchedClass::Fair => {
                // The root's running entity: the task, or its top group's.
                self.fair.entity_tick(&mut self.tasks, &self.cfg);
                if self.grp.is_some() {
                    self.tick_grouped();
                }
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
            SchedClass::Dl => {
                // Spent: throttled; or an earlier deadline became ready.
                if self.dl.update_curr(&mut self.tasks, id, self.clock) {
                    self.dl_timer_update();
                    self.resched_curr(Resched::Now);
                } else if self.dl.pick_task() != Some(id) {
                    self.resched_curr(Resched::Now);
                }
            }
            SchedClass::Idle => {}
        }
        if class != SchedClass::Fair {
            // The blocked load decays without a fair task running (Linux's
            // update_blocked_averages, run from the balance softirq).
            self.fair.update_cfs_rq_load_avg();
            if self.grp.is_some() {
                self.update_blocked_groups();
            }
        }
        self.fair_server_tick();
        if self.need_resched > before && class != SchedClass::Idle {
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
        let id = Slot(self.curr);
        match self.tasks[self.curr as usize].class() {
            SchedClass::Fair if self.tasks[self.curr as usize].group != 0 => {
                self.yield_grouped(self.curr)
            }
            SchedClass::Fair => self
                .fair
                .yield_entity(&mut self.tasks, &self.cfg, self.nr_running),
            SchedClass::Rt => {
                RtRq::update_curr(&mut self.tasks, id, self.clock);
                self.rt.requeue_tail(&mut self.tasks, id);
            }
            SchedClass::Dl => {
                self.dl.update_curr(&mut self.tasks, id, self.clock);
                self.dl.yield_task(&mut self.tasks, id, self.clock);
                self.dl_timer_update();
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
        if params.policy == crate::task::Policy::Idle {
            self.cfg.note_sched_idle();
        }
        let (tid, s) = (id, self.held_slot(id).ok_or(RqError::NotQueued)?);
        let (i, id) = (s as usize, Slot(s));
        let state = self.tasks[i].state;
        match state {
            TaskState::Absent => return Err(RqError::NotQueued),
            TaskState::Delayed => {
                // A delayed task is asleep: finish its dequeue first.
                self.finish_delayed(s);
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
        // The sched_change pattern: save, change, restore. Linux 7.2
        // changes every attribute this way, a nice value too
        // (`set_user_nice()` under `sched_change` with DEQUEUE_SAVE):
        // the lag saved at the dequeue is rescaled to the new weight and
        // the enqueue places the task with it. Only group entities are
        // reweighted in place (`FairRq::reweight_entity`).
        let Some(mut t) = self.dequeue_slot(s, DequeueFlags::SAVE | DequeueFlags::MOVE)? else {
            unreachable!("a non-sleep dequeue is never delayed")
        };
        if running {
            self.put_prev_task(id.0);
            self.curr = NIL;
        }
        // Lag and relative deadline follow the new weight.
        t.apply_params(params);
        // Back into the same slot: the running task's stayed reserved,
        // any other's still names it (a freed slot keeps its id).
        let back = self.slot_or_panic(tid);
        debug_assert_eq!(back, s);
        self.enqueue_at(s, &t, EnqueueFlags::RESTORE | EnqueueFlags::MOVE);
        if running {
            self.set_next_task(id.0);
            self.curr = id.0;
        }
        self.drain_fair_resched();
        // check_class_changed / prio_changed
        let new_prio = self.tasks[i].prio();
        if running {
            if new_prio > old_prio
                || self.rt.pick_task().is_some_and(|p| p != id)
                || self.dl.pick_task().is_some_and(|p| p != id)
            {
                self.resched_curr(Resched::Now);
            }
        } else if new_prio != old_prio || old.policy != params.policy {
            self.wakeup_preempt_slot(s, WakeFlags::empty());
        }
        Ok(self.need_resched)
    }

    /// `set_user_nice`: a new nice value for a fair task held here.
    pub fn set_user_nice(&mut self, id: TaskId, nice: i32) -> Result<Resched, RqError> {
        let mut p = self.task(id).ok_or(RqError::NotQueued)?.params;
        p.nice = nice;
        self.sched_setattr(id, p)
    }

    // ---- migration ----

    /// Takes a queued, not running task off this runqueue to move it to another
    /// CPU (`detach_task`): its lag and relative deadline travel with it
    /// (PLACE_REL_DEADLINE). Enqueue it on the target with
    /// [`Rq::attach_task`].
    pub fn detach_task(&mut self, id: TaskId) -> Result<SchedTask, RqError> {
        let s = self.held_slot(id).ok_or(RqError::NotQueued)?;
        if self.tasks[s as usize].state != TaskState::Queued || self.curr == s {
            return Err(RqError::NotQueued);
        }
        Ok(self
            .dequeue_slot(s, DequeueFlags::MIGRATING)?
            .expect("a migration dequeue is never delayed"))
    }

    /// Enqueues a task detached from another CPU and checks preemption.
    pub fn attach_task(&mut self, id: TaskId, task: SchedTask) -> WakeupDecision {
        let s = self.slot_or_panic(id);
        self.enqueue_at(s, &task, EnqueueFlags::MIGRATED);
        self.wakeup_preempt_slot(s, WakeFlags::empty())
    }

    /// The highest RT rank present here, running or queued (what Linux's
    /// cpupri records, `rt_rq->highest_prio.curr`): 100 with a ready
    /// deadline task or the fair server serving (Linux's `inc_dl_deadline`
    /// sets `CPUPRI_HIGHER` for any deadline entity queued, the server's
    /// too), else the highest queued RT priority, else 0. See
    /// [`crate::smp::CpuSummary::rt_rank`].
    #[inline]
    pub fn rt_highest_rank(&self) -> u8 {
        // A running deadline task is queued, and ready.
        if self.dl.nr_ready != 0 || self.fair_served() {
            return 100;
        }
        self.rt.highest_prio().unwrap_or(0)
    }

    /// The queued, not running RT task that push balancing would move first
    /// and that `ok` accepts ([`crate::rt::RtRq::highest_pushable`]).
    pub fn rt_pushable(&self, ok: impl Fn(&SchedTask) -> bool) -> Option<TaskId> {
        let s = self.rt.highest_pushable(&self.tasks, self.curr, ok)?;
        Some(self.id_of(s.0))
    }

    /// Linux's `rt_rq->overloaded`: with two or more RT tasks here and a
    /// queued, not running one that may run elsewhere (not pinned), that
    /// task's priority (1..=99); else 0.
    #[inline]
    pub fn rt_overload_rank(&self) -> u8 {
        if self.rt.nr_running < 2 {
            return 0;
        }
        self.rt_pushable(rt_migratable)
            .and_then(|id| self.task(id))
            .map_or(0, |t| t.params.rt_priority)
    }

    /// The earliest absolute deadline of a ready deadline entity here, running
    /// or queued (`dl_rq->earliest_dl.curr`, what cpudl records), or 0 with
    /// none: a ready deadline task's, or the fair server's while it serves.
    /// Linux 7.2 queues the serving server in the deadline runqueue's tree
    /// like a task (`__enqueue_dl_entity` → `inc_dl_tasks` →
    /// `inc_dl_deadline`), so its deadline is in cpudl, and the push and
    /// wakeup target search (`find_later_rq`) and pull see it; a deferred
    /// or throttled server is not queued there and is not seen.
    #[inline]
    pub fn dl_earliest(&self) -> u64 {
        let task = self
            .dl
            .pick_task()
            .map_or(0, |s| self.tasks[s.0 as usize].dl.deadline.max(1));
        if self.fair_served() {
            let server = self.fair_server.deadline.max(1);
            if task == 0 || server < task {
                return server;
            }
        }
        task
    }

    /// The queued, not running deadline task that push balancing would move
    /// first (the earliest deadline) and that `ok` accepts.
    pub fn dl_pushable(&self, ok: impl Fn(&SchedTask) -> bool) -> Option<TaskId> {
        let s = self.dl.earliest_pushable(&self.tasks, self.curr, ok)?;
        Some(self.id_of(s.0))
    }

    /// Linux's `dl_rq->overloaded`: with a queued, not running ready
    /// deadline task here that may run elsewhere (Linux's pushable tree
    /// holds every such task), that task's absolute deadline (at least 1);
    /// else 0. Such a task exists with two or more ready, or with one
    /// waiting behind the serving fair server (an earlier deadline).
    #[inline]
    pub fn dl_overload_deadline(&self) -> u64 {
        if self.dl.nr_ready < 2 && !(self.dl.nr_ready == 1 && self.fair_served()) {
            return 0;
        }
        self.dl_pushable(dl_migratable)
            .and_then(|id| self.task(id))
            .map_or(0, |t| t.dl.deadline.max(1))
    }

    /// The deadline a deadline task must beat to run here at once: the
    /// running deadline task's (if it is ready), or the fair server's while
    /// it serves; `None` when something of a lower class runs (any deadline
    /// task preempts it).
    pub fn dl_curr_deadline(&self) -> Option<u64> {
        if let Some(c) = self.curr_task() {
            if c.class() == SchedClass::Dl && !c.dl.throttled {
                return Some(c.dl.deadline);
            }
        }
        self.fair_served().then_some(self.fair_server.deadline)
    }

    /// Is the queued task cache-hot (ran within `migration_cost_ns`, or is the
    /// next buddy with CACHE_HOT_BUDDY)?
    /// `false` when the task is not held here.
    pub fn task_hot(&self, id: TaskId) -> bool {
        self.held_slot(id).is_some_and(|s| self.task_hot_level(s))
    }

    /// Checks every invariant of this runqueue (tests, `sched_debug`): the
    /// classes' structures, the counts, and the slots: every slot in use (and
    /// every free slot that still names its last task) is in the id map under
    /// its own id, every map entry points back at its slot, the free queue
    /// holds every free slot and no slot twice, the structures are reserved
    /// for the slots, and ids are in range. O(n); allocates a scratch bitmap
    /// (not for use under a lock that forbids allocation: see
    /// [`Rq::check_with`]).
    pub fn check(&self) -> Result<(), &'static str> {
        let mut seen = Vec::with_capacity(self.tasks.len());
        self.check_with(&mut seen)
    }

    /// [`Rq::check`] with a caller's scratch bitmap, which it never grows:
    /// with `seen.capacity()` at least [`Rq::slot_capacity`] it allocates
    /// nothing (callable with runqueue locks held and interrupts masked);
    /// a smaller one is an error.
    pub fn check_with(&self, seen: &mut Vec<bool>) -> Result<(), &'static str> {
        let grouped = self
            .grp
            .as_ref()
            .map_or(0, |g| g.runnable.wrapping_sub(g.root_se));
        self.fair.check_adj(&self.tasks, grouped)?;
        self.rt.check(&self.tasks)?;
        self.dl.check(&self.tasks)?;
        let held = self
            .tasks
            .iter()
            .filter(|t| matches!(t.state, TaskState::Queued | TaskState::Delayed))
            .count();
        if held as u32 != self.nr_running {
            return Err("nr_running does not match the queued tasks");
        }
        if self.fair.nr_queued == 0 && self.fair_server.active() {
            return Err("fair server active with no fair task queued");
        }
        if self.fair.clock_pelt != self.clock_pelt()
            || (self.fair.cpu_capacity as u64 >= crate::pelt::SCHED_CAPACITY_SCALE
                && self.pelt.lag_ns() != 0)
        {
            return Err("PELT clock not the task clock less its lag (0 at full capacity)");
        }
        if self.curr != NIL
            && self.tasks[self.curr as usize].state == TaskState::Absent
            && self.level_curr(self.curr) != self.curr
        {
            return Err("curr is not held here");
        }
        self.check_groups()?;
        self.check_slots(seen)
    }

    fn check_slots(&self, seen: &mut Vec<bool>) -> Result<(), &'static str> {
        self.ids.check()?;
        let len = self.tasks.len();
        if self.slot_ids.len() != len
            || self.queued_free.len() != len
            || len > self.slot_cap as usize
        {
            return Err("slot arrays out of step");
        }
        if self.slot_cap as usize > self.ids.capacity() {
            return Err("id map not reserved for the slots");
        }
        if !self.fair.timeline.reserved_for(len) {
            return Err("tree not reserved for the slots");
        }
        let mut in_use = 0;
        let mut named = 0;
        for (s, t) in self.tasks.iter().enumerate() {
            let s = s as u32;
            let id = self.slot_ids[s as usize];
            let used = t.state != TaskState::Absent || s == self.retired;
            if (t.state == TaskState::Absent) != (s == self.retired) && s == self.curr {
                return Err("the running task's slot must be either held or reserved");
            }
            in_use += u32::from(used);
            if id == NIL {
                if used {
                    return Err("a slot in use has no task id");
                }
                continue;
            }
            named += 1;
            if id >= self.id_limit {
                return Err("task id above the limit");
            }
            if self.ids.get(id) != s {
                return Err("id map does not point at the slot's task");
            }
        }
        if in_use != self.used_slots || self.ids.len() != named {
            return Err("id map and used slots disagree");
        }
        for (id, s) in self.ids.iter() {
            if s as usize >= len || self.slot_ids[s as usize] != id {
                return Err("id map entry points at another slot");
            }
        }
        // The free queue: each slot at most once, flagged, and every free
        // slot in it.
        if seen.capacity() < len {
            return Err("check scratch smaller than the slot count");
        }
        seen.clear();
        seen.resize(len, false);
        let mut free = 0;
        for &f in &self.free_queue {
            if f as usize >= len || seen[f as usize] || !self.queued_free[f as usize] {
                return Err("free slot queue broken");
            }
            seen[f as usize] = true;
            let is_free = self.tasks[f as usize].state == TaskState::Absent && f != self.retired;
            free += usize::from(is_free);
        }
        if self.queued_free.iter().filter(|&&q| q).count() != self.free_queue.len() {
            return Err("free slot queue flags wrong");
        }
        if free + self.used_slots as usize + self.g_slots() as usize != len {
            return Err("slots lost: neither free nor in use");
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

#[cfg(test)]
mod tests {
    //! `Rq::check` catches every way the slots and the id map can disagree.

    use super::*;

    fn rq_with(ids: &[u32]) -> Rq {
        let mut rq = Rq::new(CpuId::BOOT, Arc::new(SchedConfig::new(1, 250)), 1 << 20);
        rq.update_rq_clock(1);
        for &id in ids {
            rq.wake_up_new_task(TaskId(id), SchedTask::default());
        }
        rq.check().unwrap();
        rq
    }

    /// Applies `corrupt` to a fresh runqueue (three held tasks, one freed
    /// slot still named by its last task) and returns what `check` says.
    fn broken(corrupt: impl FnOnce(&mut Rq)) -> Result<(), &'static str> {
        let mut rq = rq_with(&[5, 70, 900_000, 12]);
        rq.dequeue_task(TaskId(12), DequeueFlags::SAVE).unwrap();
        rq.check().unwrap();
        corrupt(&mut rq);
        rq.check()
    }

    fn slot(rq: &Rq, id: u32) -> u32 {
        rq.ids.get(id)
    }

    fn set_queued_flag(rq: &mut Rq, id: u32, queued: bool) {
        let s = slot(rq, id) as usize;
        rq.queued_free[s] = queued;
    }

    #[test]
    fn check_catches_every_slot_corruption() {
        type Corrupt = fn(&mut Rq);
        let cases: [(&str, Corrupt, &str); 10] = [
            (
                "lost map entry",
                |rq| rq.ids.remove(70),
                "id map does not point at the slot's task",
            ),
            (
                "map entry to the wrong slot",
                |rq| {
                    let other = slot(rq, 5);
                    rq.ids.remove(70);
                    rq.ids.insert(70, other);
                },
                "id map does not point at the slot's task",
            ),
            (
                "stray map entry",
                |rq| rq.ids.insert(4242, slot(rq, 5)),
                "id map and used slots disagree",
            ),
            (
                "slot renamed",
                |rq| {
                    let s = slot(rq, 900_000);
                    rq.slot_ids[s as usize] = 900_001;
                },
                "id map does not point at the slot's task",
            ),
            (
                "id above the limit",
                |rq| rq.id_limit = 1000,
                "task id above the limit",
            ),
            (
                "slot queued twice",
                |rq| rq.free_queue.push_back(slot(rq, 12)),
                "free slot queue broken",
            ),
            (
                "queued slot not flagged",
                |rq| set_queued_flag(rq, 12, false),
                "free slot queue broken",
            ),
            (
                "free slot lost",
                |rq| {
                    let s = rq.free_queue.pop_back().unwrap();
                    rq.queued_free[s as usize] = false;
                },
                "slots lost: neither free nor in use",
            ),
            (
                "stray queued flag",
                |rq| set_queued_flag(rq, 70, true),
                "free slot queue flags wrong",
            ),
            (
                "use count wrong",
                |rq| rq.used_slots += 1,
                "id map and used slots disagree",
            ),
        ];
        for (what, corrupt, want) in cases {
            assert_eq!(broken(corrupt), Err(want), "{what}");
        }
    }

    #[test]
    fn check_catches_a_weighted_lag_sum_off_zero() {
        // Three entities of different weights, one running: Σ w·lag is 0
        // (within V's flooring). A sum that lost 10 x the total weight moves
        // V by 10 and the lag sum by 10·Σw.
        let mut rq = rq_with(&[5, 70, 12]);
        rq.set_user_nice(TaskId(70), 5).unwrap();
        rq.set_user_nice(TaskId(12), -3).unwrap();
        rq.pick_next_task().unwrap();
        rq.update_rq_clock(3_000_000);
        rq.update_curr();
        rq.check().unwrap();
        let w = rq.fair.load as i128;
        rq.fair.sum_w_vruntime += 10 * w;
        assert_eq!(
            rq.fair.check_lag_sum(&rq.tasks),
            Err("weighted lag sum is not 0")
        );
        assert_eq!(rq.check(), Err("avg_vruntime sums drifted"));
    }

    #[test]
    fn check_with_never_grows_its_scratch() {
        let rq = rq_with(&[5, 70]);
        let mut small = Vec::new();
        assert_eq!(
            rq.check_with(&mut small),
            Err("check scratch smaller than the slot count")
        );
        assert_eq!(small.capacity(), 0);
        let mut enough = Vec::with_capacity(rq.slot_capacity());
        rq.check_with(&mut enough).unwrap();
    }

    #[test]
    fn check_catches_a_running_slot_both_held_and_reserved() {
        let mut rq = rq_with(&[5, 70]);
        rq.pick_next_task().unwrap();
        rq.check().unwrap();
        rq.retired = rq.curr;
        assert_eq!(
            rq.check(),
            Err("the running task's slot must be either held or reserved")
        );
    }
}
