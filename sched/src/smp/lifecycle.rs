//! The task lifecycle: one entry point per event in a task's life, with the
//! scheduler, not the caller, keeping every task's state.
//!
//! | event | call | Linux |
//! |---|---|---|
//! | spawn | [`Scheduler::spawn`] | `wake_up_new_task` |
//! | timer tick | [`Scheduler::tick`] | `scheduler_tick` |
//! | one-shot slice timer | [`Scheduler::hrtick`] | `hrtick` |
//! | switch (stay, yield, block, exit) | [`Scheduler::schedule`] with a [`PrevAction`] | `__schedule` |
//! | after the switch | [`Scheduler::finish_switch`] | `finish_task_switch` |
//! | wake, whatever the state | [`Scheduler::wake`] | `try_to_wake_up` |
//! | change policy / nice / priority / slice | [`Scheduler::set_params`] | `sched_setattr` |
//! | change affinity | [`Scheduler::set_affinity`] | `set_cpus_allowed_ptr` |
//! | remove a task that is not running | [`Scheduler::remove`] | — |
//! | read an exited task's final state (`join`) | [`Scheduler::exited`] | — |
//! | where is it? | [`Scheduler::task_cpu`], [`Scheduler::task_rq_lock`] | `task_cpu`, `task_rq_lock` |
//! | migrate | internal: wakeup placement, balancing, affinity | `set_task_cpu` → [`Platform::set_task_cpu`] |
//!
//! # Who owns a task's state
//! The scheduler, from [`Scheduler::spawn`] to the exit. A runnable task's
//! [`SchedTask`] lives in exactly one runqueue (its *home*,
//! [`Scheduler::task_cpu`]), `Queued` (runnable or running) or `Delayed`
//! (asleep, still in the fair queue for DELAY_DEQUEUE; a delayed dequeue
//! that completes leaves it `Blocked` in its slot until woken). A task that
//! goes to sleep leaves its runqueue for its own *cell* (Linux keeps it in
//! the `task_struct`), so that waking it takes that cell's lock, never a
//! remote runqueue's: on a busy machine the waker would otherwise wait for
//! that CPU's context switches (measured: hackbench 1.5-2x slower under
//! QEMU `-icount` at 4 CPUs). Between a wakeup on another CPU and that CPU
//! taking it, a task is in that CPU's wake list, "in transit". The caller
//! never holds the state, so it cannot get it wrong: there is one wake call
//! whatever the state, one parameter call whether the task is running,
//! queued or asleep, and the exit hands the final state back once.
//!
//! The cells (where each task is, and a sleeper's state; about 200 bytes
//! per task id, allocated in chunks of 128 ids at spawn) are written under
//! the destination runqueue's lock or the cell's own; every move to a
//! runqueue is reported to [`Platform::set_task_cpu`] under that runqueue's
//! lock, so the kernel's per-thread CPU field follows it.
//!
//! # What the caller still does
//! - Serialise the lifecycle calls for one task (Linux's `p->pi_lock`):
//!   two concurrent wakes of one task are fine (the second finds it
//!   runnable), but spawn and exit race with everything.
//! - Decide *whether* to wake (its own sleep/wake state machine: a thread
//!   that set itself sleeping and a waker that sets it running).
//! - Call [`Scheduler::finish_switch`] after every switch, once the previous
//!   task is off the CPU: a wakeup of the task that just went to sleep waits
//!   for it (Linux's `p->on_cpu`).
//! - Hold the runqueue lock across the context switch and release it only
//!   once the previous task is off the CPU (as Linux does; see
//!   [`Scheduler::schedule`]). Every path that moves a task's state to
//!   another CPU takes the home runqueue's lock first, so no task is ever
//!   picked on one CPU while it still runs on another.
//! - Act on the [`Resched`] values returned for this CPU (a reschedule
//!   request for another CPU is sent by the scheduler through
//!   [`Platform::send_resched_ipi`]).
//!
//! # Flags
//! A plain block is [`PrevAction::Sleeps`] (`DEQUEUE_SLEEP`; with
//! DELAY_DEQUEUE a fair sleeper with negative lag stays queued as `Delayed`
//! until it is picked or woken). An exit is [`PrevAction::Exits`]
//! (`DEQUEUE_SLEEP | DEQUEUE_SPECIAL`: never delayed). A plain wake is
//! `WakeFlags::empty()`; `WakeFlags::SYNC` says the waker is about to sleep
//! (pipes, request/reply: wake-affine discounts the waker and NEXT_BUDDY's
//! sync rule may apply); `WakeFlags::IRQ` marks a wakeup from an interrupt
//! (a timer). The scheduler adds `TTWU`, `RQ_SELECTED` and `MIGRATED`
//! itself.

use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::flags::{DequeueFlags, WakeFlags};
use crate::rq::{HeldWake, PrevAction, Resched, Rq, RqError, Switch, WakeupDecision};
use crate::task::{ParamsError, Policy, SchedTask, TaskId, TaskParams, TaskState};

use super::{
    CellDir, InTransit, Platform, RqGuard, Scheduler, TaskCell, WakeOutcome, DIR_CHUNKS,
    HOME_CHUNK, HOME_NONE, HOME_PARKED, HOME_TRANSIT,
};
use alloc::collections::TryReserveError;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

/// Why a lifecycle call changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LifecycleError {
    /// No live task has this id (never spawned, or exited).
    NoSuchTask,
    /// [`Scheduler::spawn`] of an id that is alive.
    AlreadySpawned,
    /// The id is not below [`Scheduler::capacity`].
    IdOutOfRange,
    /// A runqueue could not grow (the allocator refused).
    NoMemory,
    /// Invalid parameters.
    Params(ParamsError),
    /// The affinity mask allows no online CPU.
    NoAllowedCpu,
    /// [`Scheduler::remove`] of the running task (it exits through
    /// [`Scheduler::schedule`] with [`PrevAction::Exits`]).
    Running,
    /// [`Scheduler::task_rq_lock`] of a sleeping task: no runqueue holds it
    /// (use [`Scheduler::task`] for a copy of its state).
    Asleep,
    /// [`Scheduler::set_affinity`] of a SCHED_DEADLINE task to a mask that
    /// does not cover its root domain (every active CPU): Linux's
    /// `dl_task_check_affinity` refuses it with -EBUSY, since the domain's
    /// admitted bandwidth counts on the task being free to move anywhere in
    /// it. Make it another policy first.
    DlAffinityBusy,
}

impl From<RqError> for LifecycleError {
    fn from(e: RqError) -> Self {
        match e {
            RqError::NotQueued => LifecycleError::NoSuchTask,
            RqError::Params(p) => LifecycleError::Params(p),
            RqError::IdOutOfRange => LifecycleError::IdOutOfRange,
            RqError::NoMemory => LifecycleError::NoMemory,
        }
    }
}

/// What [`Scheduler::wake`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woke {
    /// It was still on its runqueue (preempted, or asleep with its dequeue
    /// delayed): runnable again where it was.
    InPlace {
        /// Its CPU.
        cpu: CpuId,
        /// The wakeup-preemption decision there.
        decision: WakeupDecision,
    },
    /// It was blocked on `from`: placed (`select_task_rq`) and enqueued, or
    /// queued on the chosen CPU's wake list.
    Placed {
        /// Where it slept.
        from: CpuId,
        /// Where it went.
        to: CpuId,
        /// How: enqueued by the waker on its own CPU (`Local`) or another
        /// (`Remote`), or left on `to`'s wake list (`Queued`).
        outcome: WakeOutcome,
    },
    /// A wakeup is already carrying it to `cpu`: nothing to do.
    Pending {
        /// The CPU it is on its way to.
        cpu: CpuId,
    },
}

impl Woke {
    /// The CPU the task is runnable on (or on its way to).
    pub fn cpu(&self) -> CpuId {
        match *self {
            Woke::InPlace { cpu, .. } | Woke::Pending { cpu } | Woke::Placed { to: cpu, .. } => cpu,
        }
    }

    /// The preemption decision, when it was made by this call (not for a
    /// wakeup left on a remote wake list, which that CPU decides).
    pub fn decision(&self) -> Option<WakeupDecision> {
        match *self {
            Woke::InPlace { decision, .. } => Some(decision),
            Woke::Placed {
                outcome: WakeOutcome::Local(d) | WakeOutcome::Remote(_, d),
                ..
            } => Some(d),
            _ => None,
        }
    }
}

/// The CPU of a [`TaskCell::home`] that names one (on it, or in transit
/// to it): written from a `CpuId`, so the index is below `MAX_CPUS`.
#[inline(always)]
fn home_cpu(h: u32) -> CpuId {
    CpuId::wrapping((h & !HOME_TRANSIT) as usize)
}

impl TaskCell {
    /// [`TaskCell::last_cpu`] (written from a `CpuId`).
    #[inline(always)]
    fn last_cpu(&self) -> CpuId {
        CpuId::wrapping(self.last_cpu.load(Ordering::Relaxed) as usize)
    }
}

impl<P: Platform> Scheduler<P> {
    /// Records that `id` now lives on `cpu` (called with that runqueue
    /// locked) and tells the platform.
    pub(crate) fn placed(&self, id: TaskId, cpu: CpuId) {
        self.set_home(id, cpu.as_u32());
        self.platform.set_task_cpu(id, cpu);
    }

    /// [`Self::placed`] for a caller that has the task's cell.
    #[inline]
    pub(crate) fn placed_cell(&self, id: TaskId, cell: &TaskCell, cpu: CpuId) {
        cell.home.store(cpu.as_u32(), Ordering::Release);
        self.platform.set_task_cpu(id, cpu);
    }

    /// The cell of `id`, if its chunk exists (never allocates).
    pub(super) fn cell(&self, id: TaskId) -> Option<&TaskCell> {
        let i = id.0 as usize;
        self.cells
            .get(i / (HOME_CHUNK * DIR_CHUNKS))?
            .get()?
            .get(i / HOME_CHUNK % DIR_CHUNKS)?
            .get()?
            .get(i % HOME_CHUNK)
    }

    /// The cell of `id`, allocating its directory and chunk if needed.
    fn cell_alloc(&self, id: TaskId) -> Result<&TaskCell, LifecycleError> {
        let i = id.0 as usize;
        if i >= self.capacity {
            return Err(LifecycleError::IdOutOfRange);
        }
        let dir = self.cells[i / (HOME_CHUNK * DIR_CHUNKS)]
            .try_call_once(|| {
                let mut v = Vec::new();
                v.try_reserve_exact(DIR_CHUNKS)?;
                v.extend((0..DIR_CHUNKS).map(|_| spin::Once::new()));
                Ok::<CellDir, TryReserveError>(v.into_boxed_slice())
            })
            .map_err(|_| LifecycleError::NoMemory)?;
        let chunk = dir[i / HOME_CHUNK % DIR_CHUNKS]
            .try_call_once(|| {
                let mut v = Vec::new();
                v.try_reserve_exact(HOME_CHUNK)?;
                v.extend((0..HOME_CHUNK).map(|_| TaskCell::new()));
                Ok::<_, TryReserveError>(v)
            })
            .map_err(|_| LifecycleError::NoMemory)?;
        Ok(&chunk[i % HOME_CHUNK])
    }

    fn set_home(&self, id: TaskId, h: u32) {
        if let Some(c) = self.cell(id) {
            c.home.store(h, Ordering::Release);
        }
    }

    pub(super) fn load_home(&self, id: TaskId) -> u32 {
        self.cell(id)
            .map_or(HOME_NONE, |c| c.home.load(Ordering::Acquire))
    }

    fn home(&self, id: TaskId) -> Result<u32, LifecycleError> {
        if id.0 as usize >= self.capacity {
            return Err(LifecycleError::IdOutOfRange);
        }
        match self.load_home(id) {
            HOME_NONE => Err(LifecycleError::NoSuchTask),
            h => Ok(h),
        }
    }

    /// Runs `f` on a parked (sleeping) task's state, under its cell's lock
    /// with interrupts masked, if it is still parked; `None` otherwise.
    pub(super) fn with_parked<R>(
        &self,
        id: TaskId,
        f: impl FnOnce(&TaskCell, &mut Option<SchedTask>) -> R,
    ) -> Option<R> {
        let cell = self.cell(id)?;
        let irq = self.platform.irq_save();
        let r = {
            let mut p = self.lock(&cell.parked);
            (cell.home.load(Ordering::Acquire) == HOME_PARKED).then(|| {
                // `f` may change the state: its slot's copy no longer counts.
                cell.kept.store(false, Ordering::Relaxed);
                f(cell, &mut p)
            })
        };
        self.platform.irq_restore(irq);
        r
    }

    /// `task_cpu`: the CPU whose runqueue holds task `id` (or that a wakeup
    /// is carrying it to, or that it last ran on while it sleeps); `None`
    /// for no live task. Lock-free: the answer may be stale by the time it
    /// is used; [`Scheduler::task_rq_lock`] gives one that holds.
    pub fn task_cpu(&self, id: TaskId) -> Option<CpuId> {
        match self.home(id).ok()? {
            HOME_PARKED => self.cell(id).map(|c| c.last_cpu()),
            h => Some(home_cpu(h)),
        }
    }

    /// Is task `id` in transit (a wakeup is carrying it to a CPU's
    /// runqueue, e.g. it waits in that CPU's wake list)? Lock-free, for
    /// diagnostics.
    pub fn in_transit(&self, id: TaskId) -> bool {
        let h = self.load_home(id);
        h != HOME_NONE && h != HOME_PARKED && h & HOME_TRANSIT != 0
    }

    /// `task_rq_lock`: locks the runqueue that holds task `id` and returns
    /// its CPU with the guard. A task in transit is landed first (its
    /// target's wake list is drained on that CPU's behalf, which is kicked
    /// if it must act); a sleeping task is held by no runqueue
    /// ([`LifecycleError::Asleep`]). `this_cpu` is the caller's CPU.
    pub fn task_rq_lock(
        &self,
        id: TaskId,
        this_cpu: CpuId,
    ) -> Result<(CpuId, RqGuard<'_, P>), LifecycleError> {
        loop {
            let h = self.home(id)?;
            if h == HOME_PARKED {
                return Err(LifecycleError::Asleep);
            }
            let cpu = home_cpu(h);
            let mut rq = self.cpu_rq(cpu);
            let now = self.load_home(id);
            if now == cpu.as_u32() {
                return Ok((cpu, rq));
            }
            if now == h && h & HOME_TRANSIT != 0 {
                rq.update_rq_clock(self.platform.now_ns());
                if self.sched_ttwu_pending(&mut rq) > 0 {
                    let r = rq.need_resched();
                    drop(rq);
                    self.kick_if_needed(cpu, this_cpu, r);
                    continue;
                }
            }
            // Moved meanwhile, or a waker is still enqueueing it: look again.
            drop(rq);
            self.platform.cpu_relax();
        }
    }

    /// Spawns task `id` (`wake_up_new_task`): places it with fork balancing
    /// among its allowed CPUs (`task.cpus_allowed`) and enqueues it with the
    /// initial half-slice deadline. Returns its CPU and the preemption
    /// decision there. `this_cpu` is the caller's CPU.
    pub fn spawn(
        &self,
        id: TaskId,
        mut task: SchedTask,
        this_cpu: CpuId,
    ) -> Result<(CpuId, WakeupDecision), LifecycleError> {
        let cell = self.cell_alloc(id)?;
        if cell.home.load(Ordering::Acquire) != HOME_NONE {
            return Err(LifecycleError::AlreadySpawned);
        }
        task.params.validate().map_err(LifecycleError::Params)?;
        if !task.cpus_allowed.intersects(&self.active_mask()) {
            return Err(LifecycleError::NoAllowedCpu);
        }
        self.dl_check_affinity(&task.params, &task.cpus_allowed)?;
        let bw = task.params.dl_bw();
        self.dl_admit(0, bw)?;
        task.state = TaskState::Absent;
        task.cpu = this_cpu;
        cell.switching.store(false, Ordering::Relaxed);
        self.fork_wakee_flips(cell, id, this_cpu);
        // wake_up_new_task: the parent's CPU (`task_cpu(p)` there).
        cell.recent_used_cpu
            .store(this_cpu.as_u32(), Ordering::Relaxed);
        // A previous task's exit state, if any, is forgotten.
        let irq = self.platform.irq_save();
        self.lock(&cell.parked).take();
        cell.kept.store(false, Ordering::Relaxed);
        self.platform.irq_restore(irq);
        let (cpu, _) = self.select_task_rq(&task, this_cpu, WakeFlags::FORK);
        let d = self
            .enqueue_on(cpu, this_cpu, id, |rq| rq.try_wake_up_new_task(id, task))
            .inspect_err(|_| self.dl_release(bw))?;
        Ok((cpu, d))
    }

    /// A new task's `wakee_flips`, `last_wakee` and their decay stamp are
    /// its parent's, the task running on `this_cpu` (Linux's fork copies the
    /// parent's `task_struct` and `__sched_fork()` leaves them), or none
    /// (zero, no last wakee, decayed now); never those of the exited task
    /// that held the id before, which a cell would otherwise keep (an
    /// unrelated task's flips made `wake_wide` hold for its successor).
    fn fork_wakee_flips(&self, cell: &TaskCell, id: TaskId, this_cpu: CpuId) {
        let parent = self
            .slots
            .get(this_cpu.index())
            .map_or(crate::task::NIL, |s| {
                s.summary.curr_id.load(Ordering::Relaxed)
            });
        let from = (parent != crate::task::NIL && parent != id.0)
            .then(|| self.cell(TaskId(parent)))
            .flatten();
        let (flips, last, decay_ns) = match from {
            Some(p) => (
                p.wakee_flips.load(Ordering::Relaxed),
                p.last_wakee.load(Ordering::Relaxed),
                p.wakee_flip_decay_ns.load(Ordering::Relaxed),
            ),
            None => (0, crate::task::NIL, self.platform.now_ns()),
        };
        cell.set_flip_state(flips, last, decay_ns);
    }

    /// Sets live task `id`'s `wakee_flips` to `flips`, with no last wakee
    /// and the once-a-second halving restarted now: the state of a task
    /// that woke `flips` distinct tasks just now, and what
    /// [`Scheduler::spawn`] copies into the tasks it spawns next. Nothing
    /// in Linux sets them; a task's flips are its history (and its
    /// ancestors', which a fork copies). This lets a workload start with
    /// the history a Linux run had, measured, instead of ours' (the
    /// kernel's `hackbench -W`: rt-tests' hackbench main process inherits
    /// its flips from init, ours' parent thread from a shell that wakes
    /// nobody). Not on any scheduling path. `NoSuchTask` (or
    /// `IdOutOfRange`) for an id that is not alive; nothing changes then.
    pub fn set_wakee_flips(&self, id: TaskId, flips: u32) -> Result<(), LifecycleError> {
        self.home(id)?;
        let cell = self.cell(id).ok_or(LifecycleError::NoSuchTask)?;
        cell.set_flip_state(flips, crate::task::NIL, self.platform.now_ns());
        Ok(())
    }

    /// The `wakee_flips` of task `id` (`wake_wide`'s count; 0 for an id
    /// never spawned). For the tests.
    #[doc(hidden)]
    pub fn wakee_flips(&self, id: TaskId) -> u32 {
        self.cell(id)
            .map_or(0, |c| c.wakee_flips.load(Ordering::Relaxed))
    }

    /// SCHED_DEADLINE admission control (`sched_dl_overflow`): replaces a
    /// task's bandwidth `old_bw` by `new_bw` in the root domain's sum, or
    /// refuses when the sum would pass the limit.
    fn dl_admit(&self, old_bw: u64, new_bw: u64) -> Result<(), LifecycleError> {
        if old_bw == new_bw {
            return Ok(());
        }
        let cfg = &self.cfg;
        let (ncpus, units) = self.dl_capacity(None);
        if cfg.dl_bw.change(cfg, ncpus, units, old_bw, new_bw) {
            Ok(())
        } else {
            Err(LifecycleError::Params(ParamsError::DlBandwidthExceeded))
        }
    }

    /// Linux's SCHED_DEADLINE affinity rule (`__sched_setscheduler`'s
    /// -EPERM): a task may take `params` of the deadline policy only if
    /// `mask` covers its root domain, here every active CPU (we have no
    /// exclusive cpusets, the only way Linux splits root domains).
    /// Admission ([`Self::dl_admit`]) bounds the domain's bandwidth sum by
    /// its CPUs; that bound gives bounded tardiness under global EDF only if
    /// every admitted task can migrate to any CPU of the domain (two admitted
    /// 60% tasks pinned to one CPU would need 1.2 of it).
    fn dl_check_affinity(&self, params: &TaskParams, mask: &CpuMask) -> Result<(), LifecycleError> {
        if params.policy == Policy::Deadline && !self.dl_span_covered(mask) {
            return Err(LifecycleError::Params(ParamsError::DlAffinityRestricted));
        }
        Ok(())
    }

    /// `dl_task_check_affinity`: may task `t` get affinity `mask`? Not a
    /// deadline task's mask that does not cover every active CPU (Linux's
    /// -EBUSY; why: [`Self::dl_check_affinity`]).
    pub(super) fn dl_check_new_affinity(
        &self,
        t: &SchedTask,
        mask: &CpuMask,
    ) -> Result<(), LifecycleError> {
        if t.params.policy == Policy::Deadline && !self.dl_span_covered(mask) {
            return Err(LifecycleError::DlAffinityBusy);
        }
        Ok(())
    }

    /// Does `mask` cover the deadline root domain (every active CPU)?
    pub(super) fn dl_span_covered(&self, mask: &CpuMask) -> bool {
        self.active_mask().is_subset(mask)
    }

    /// Gives an exited (or refused) deadline task's bandwidth back.
    fn dl_release(&self, bw: u64) {
        if bw != 0 {
            let _ = self.dl_admit(bw, 0);
        }
    }

    /// `__schedule` on `rq`'s CPU, with `rq` locked by the caller: brings
    /// its clock up to date, lands the queued remote wakeups, applies what
    /// the running task does ([`PrevAction`]) and picks the next task. A
    /// task that went to sleep leaves the runqueue for its own cell (so a
    /// wakeup needs no runqueue lock), marked as still switching out.
    ///
    /// Keep `rq` locked until the previous task is off the CPU (switch
    /// stacks with the lock held, unlock on the other side), then call
    /// [`Scheduler::finish_switch`], always: until then, a wakeup of the
    /// task that just slept waits. An exiting task's final state is in
    /// [`Switch::prev_exited`]; its id is free for a new spawn.
    pub fn schedule(&self, rq: &mut Rq, action: PrevAction) -> Switch {
        rq.update_rq_clock_schedule(self.platform.now_ns());
        self.sched_ttwu_pending(rq);
        let sw = rq.switch(action);
        let Some(prev) = sw.prev else { return sw };
        if let Some(t) = sw.prev_exited {
            self.dl_release(t.params.dl_bw());
            // Kept in its cell until the id is spawned again (`exited`).
            if let Some(cell) = self.cell(prev) {
                let irq = self.platform.irq_save();
                *self.lock(&cell.parked) = Some(t);
                cell.kept.store(false, Ordering::Relaxed);
                cell.home.store(HOME_NONE, Ordering::Release);
                self.platform.irq_restore(irq);
            }
        } else if action == PrevAction::Sleeps && sw.next != Some(prev) {
            self.park(rq, prev);
        }
        sw
    }

    /// Moves a task blocked in `rq` (just switched out) into its cell.
    fn park(&self, rq: &mut Rq, id: TaskId) {
        self.park_blocked(rq, id, true);
    }

    /// Moves a task blocked in `rq` into its cell; `switching`: it is still
    /// switching out of this CPU (a waker waits for [`Self::finish_switch`]).
    /// False if it was not blocked there.
    pub(super) fn park_blocked(&self, rq: &mut Rq, id: TaskId, switching: bool) -> bool {
        let Some(cell) = self.cell(id) else {
            return false;
        };
        let irq = self.platform.irq_save();
        let parked = {
            // The state goes from its slot straight into the cell (locked
            // after the runqueue, as everywhere).
            let mut p = self.lock(&cell.parked);
            // Not blocked (delayed: it stays queued until picked or woken): no.
            if rq.take_blocked_into(id, &mut p).is_ok() {
                if let Some(t) = p.as_mut() {
                    t.state = TaskState::Blocked;
                }
                // Its slot keeps the same state (free, still its own).
                cell.kept.store(true, Ordering::Relaxed);
                cell.switching.store(switching, Ordering::Relaxed);
                cell.last_cpu.store(rq.cpu().as_u32(), Ordering::Relaxed);
                cell.home.store(HOME_PARKED, Ordering::Release);
                true
            } else {
                false
            }
        };
        self.platform.irq_restore(irq);
        parked
    }

    /// `scheduler_tick` on `cpu`: brings its clock up to date and charges
    /// the running task ([`Rq::task_tick`]: slice and request accounting,
    /// tick preemption). Returns the need-resched state: call
    /// [`Scheduler::schedule`] at once for `Now`, at the next preemption
    /// point or tick for `Lazy` (the lazy model).
    pub fn tick(&self, cpu: CpuId) -> Resched {
        let mut rq = self.cpu_rq(cpu);
        rq.update_rq_clock(self.platform.now_ns());
        let r = rq.task_tick();
        self.tick_misfit(&rq);
        drop(rq);
        // A replenished deadline task queued behind an earlier deadline
        // moves on (`dl_task_timer`'s push).
        if self.dlo_count() != 0 {
            self.push_dl_if_overloaded(cpu, cpu);
        }
        r
    }

    /// The one-shot scheduler timer fired on `cpu` (Linux's `hrtick()`, see
    /// [`Platform::hrtick_start`]): brings the clock up to date and charges
    /// the running task ([`Rq::hrtick`]: a fair task whose timer this was
    /// gets an immediate reschedule). Returns the need-resched state, to act
    /// on as for [`Scheduler::tick`].
    pub fn hrtick(&self, cpu: CpuId) -> Resched {
        let mut rq = self.cpu_rq(cpu);
        rq.update_rq_clock(self.platform.now_ns());
        let r = rq.hrtick();
        drop(rq);
        // A deadline task the timer replenished behind an earlier deadline
        // moves on (`dl_task_timer`'s push).
        if self.dlo_count() != 0 {
            self.push_dl_if_overloaded(cpu, cpu);
        }
        r
    }

    /// `finish_task_switch`'s scheduler half, on `cpu` once the previous
    /// task is off it and the runqueue unlocked; call it after every
    /// [`Scheduler::schedule`] that switched. A task that went to sleep may
    /// now run elsewhere; one that stayed runnable but may no longer run
    /// here ([`Switch::prev_misplaced`]) is queued on the idlest allowed
    /// CPU, or on the CPU whose active balance asked for it (misfit,
    /// [`super::capacity`]); that CPU is returned.
    ///
    /// Then the RT balance callbacks ([`Scheduler::balance_rt`]): push if
    /// this CPU is RT-overloaded, pull if it now runs something of lower
    /// rank than another overloaded CPU's waiting RT task; and the deadline
    /// ones ([`Scheduler::balance_dl`]) likewise (one relaxed load while no
    /// CPU is RT- or DL-overloaded).
    ///
    /// On a CPU going offline, it then moves off what the switch landed
    /// there (its wake list; Linux's `balance_push` callback).
    pub fn finish_switch(&self, cpu: CpuId, sw: &Switch) -> Option<CpuId> {
        let moved = if self.any_push_overloaded() {
            self.finish_switch_rt(cpu, sw)
        } else {
            self.finish_switch_prev(cpu, sw)
        };
        self.recheck_active(cpu);
        // pick_next_task_fair's update_misfit_status for the task switched
        // to (unequal CPUs only; out of line, it takes the lock again).
        if self.topology.has_asym_capacity() {
            self.update_misfit_status_locked(cpu);
        }
        moved
    }

    /// [`Scheduler::finish_switch`] while some CPU is RT- or DL-overloaded:
    /// the previous task, then the RT and deadline balance (out of line: the
    /// fair path pays one load for it).
    #[cold]
    #[inline(never)]
    fn finish_switch_rt(&self, cpu: CpuId, sw: &Switch) -> Option<CpuId> {
        let moved = self.finish_switch_prev(cpu, sw);
        self.balance_rt(cpu, cpu);
        self.balance_dl(cpu, cpu);
        moved
    }

    /// [`Scheduler::finish_switch`] for the previous task.
    #[inline(always)]
    fn finish_switch_prev(&self, cpu: CpuId, sw: &Switch) -> Option<CpuId> {
        let id = sw.prev?;
        if let Some(c) = self.cell(id) {
            c.switching.store(false, Ordering::Release);
        }
        if !sw.prev_misplaced {
            return None;
        }
        let (t, pushed_to) = {
            let mut rq = self.cpu_rq(cpu);
            rq.clear_pending_misplaced();
            // An active balance's destination, if it was one.
            let pushed_to = rq.take_active_push_cpu();
            // A wakeup may have placed it meanwhile (it looked blocked).
            if rq.task(id).map(|t| t.state) != Some(TaskState::Blocked)
                || self.load_home(id) != cpu.as_u32()
            {
                return None;
            }
            let t = rq.take_blocked(id).ok()?;
            self.set_home(id, HOME_TRANSIT | cpu.as_u32());
            (t, pushed_to)
        };
        let mut t = t;
        let broken = self.select_fallback_rq(&mut t);
        self.report_broken(id, broken);
        let target = match pushed_to {
            Some(c) if self.allowed(&t, c) => c,
            _ => self.find_idlest_cpu(&t, self.first_allowed(&t)),
        };
        let Ok(_) = self.enqueue_on(target, cpu, id, |rq| {
            Ok::<_, core::convert::Infallible>(rq.attach_task(id, t))
        });
        if let Some(asked) = pushed_to {
            // An active balance done: its statistics, and on landing the
            // puller's failures reset.
            self.active_push_done(asked, cpu, asked == target);
        }
        Some(target)
    }

    /// `try_to_wake_up`, whatever state the task is in: a task still
    /// queued (preempted, or asleep with its dequeue delayed) is made
    /// runnable where it is; a sleeping one is placed (`select_task_rq`:
    /// wake-affine, idle siblings, its allowed CPUs) and enqueued there,
    /// locally or through the target's wake list; a task already on its
    /// way is left alone. `wf`: `SYNC`, `IRQ` or empty (see the module
    /// docs). `this_cpu` is the waker's CPU.
    /// Counts the wakeup in the waker's domain statistics (`ttwu_stat()`:
    /// [`Scheduler::lb_stats`]'s `ttwu_*`) while
    /// [`Platform::schedstat_enabled`] says so; a wakeup already under way
    /// counts nothing, as Linux's `try_to_wake_up` returns without its
    /// `success` then.
    pub fn wake(&self, id: TaskId, wf: WakeFlags, this_cpu: CpuId) -> Result<Woke, LifecycleError> {
        self.wake_counting(id, wf, this_cpu, |_| {})
    }

    /// [`Scheduler::wake`], and `count` for the caller's own statistics
    /// of the same wakeups under the same ask of
    /// [`Platform::schedstat_enabled`]: called after the domain
    /// statistics, only while the switch is on and only for a wakeup
    /// that made the task runnable (not [`Woke::Pending`]). `count` takes
    /// the wakeup by value: a reference made the wakeup's result live in
    /// memory on every wakeup, with schedstats off too (in the kernel, a
    /// same-CPU pipe round trip 10 guest instructions more under
    /// `-icount`; `docs/benchmarks.md`).
    #[inline]
    pub fn wake_counting(
        &self,
        id: TaskId,
        wf: WakeFlags,
        this_cpu: CpuId,
        count: impl FnOnce(Woke),
    ) -> Result<Woke, LifecycleError> {
        let woke = self.try_to_wake_up(id, wf, this_cpu)?;
        if self.platform.schedstat_enabled() {
            self.count_woke(this_cpu, woke, count);
        }
        Ok(woke)
    }

    /// [`Scheduler::wake_counting`] with the answer of
    /// [`Platform::schedstat_enabled`] given at compile time: `COUNTING`
    /// true counts as `wake_counting` does with schedstats on, false
    /// counts nothing and asks nothing. For a caller that asks the switch
    /// once and runs a copy of its whole wakeup for each answer (as
    /// Linux's `schedstat_enabled()` is a static key): a single copy that
    /// tests the answer after the wakeup loads every field of the result
    /// for the counting before the test, with schedstats off too (in the
    /// kernel, 23 guest instructions a same-CPU pipe round trip under
    /// `-icount`; `docs/benchmarks.md`).
    #[inline]
    pub fn wake_counting_if<const COUNTING: bool>(
        &self,
        id: TaskId,
        wf: WakeFlags,
        this_cpu: CpuId,
        count: impl FnOnce(Woke),
    ) -> Result<Woke, LifecycleError> {
        let woke = self.try_to_wake_up(id, wf, this_cpu)?;
        if COUNTING {
            self.count_woke(this_cpu, woke, count);
        }
        Ok(woke)
    }

    /// The counting of [`Scheduler::wake_counting`] (schedstats on): the
    /// domain statistics, then `count`, for a wakeup that made the task
    /// runnable.
    #[inline(always)]
    fn count_woke(&self, this_cpu: CpuId, woke: Woke, count: impl FnOnce(Woke)) {
        match woke {
            Woke::InPlace { cpu, .. } => {
                self.ttwu_stat(this_cpu, cpu, cpu);
                count(woke);
            }
            Woke::Placed { from, to, .. } => {
                self.ttwu_stat(this_cpu, from, to);
                count(woke);
            }
            Woke::Pending { .. } => {}
        }
    }

    /// [`Scheduler::wake`] less its statistics. Always inline: a caller
    /// with a copy for each answer of the schedstats switch
    /// ([`Scheduler::wake_counting_if`]) otherwise calls it out of line.
    #[inline(always)]
    fn try_to_wake_up(
        &self,
        id: TaskId,
        wf: WakeFlags,
        this_cpu: CpuId,
    ) -> Result<Woke, LifecycleError> {
        if id.0 as usize >= self.capacity {
            return Err(LifecycleError::IdOutOfRange);
        }
        let cell = self.cell(id).ok_or(LifecycleError::NoSuchTask)?;
        loop {
            let h = cell.home.load(Ordering::Acquire);
            if h == HOME_NONE {
                return Err(LifecycleError::NoSuchTask);
            }
            if h == HOME_PARKED {
                if let Some(w) = self.wake_parked(cell, wf, this_cpu, id) {
                    return Ok(w);
                }
                continue; // woken or moved meanwhile: look again
            }
            let cpu = home_cpu(h);
            if h & HOME_TRANSIT != 0 {
                return Ok(Woke::Pending { cpu });
            }
            let mut rq = self.cpu_rq(cpu);
            if cell.home.load(Ordering::Acquire) != h {
                continue; // moved before we got the lock
            }
            rq.update_rq_clock(self.platform.now_ns());
            match rq.wake_held(id, wf) {
                HeldWake::Woken(decision) => {
                    let misplaced = rq.curr() != Some(id)
                        && rq.task(id).is_some_and(|t| !t.cpus_allowed.has(cpu));
                    drop(rq);
                    self.kick_if_needed(cpu, this_cpu, decision.resched);
                    if misplaced {
                        self.move_misplaced(cpu, id);
                    }
                    self.push_if_overloaded(cpu, this_cpu);
                    return Ok(Woke::InPlace { cpu, decision });
                }
                HeldWake::NotHere => {
                    // The cell's home is written under this lock: a task it
                    // places here is held here. Not reachable; refuse.
                    debug_assert!(false, "task {} homed on cpu {cpu} but not held", id.0);
                    return Err(LifecycleError::NoSuchTask);
                }
                HeldWake::Blocked => {
                    // Blocked in its slot (a delayed dequeue completed, or
                    // it is being moved off a CPU it may not use).
                    // Read in its slot, not copied out (312 bytes): a
                    // broken affinity is stored there first.
                    let Some(t) = rq.task(id) else {
                        return Err(LifecycleError::NoSuchTask);
                    };
                    // Only when `cpu` is inactive, so never with `target == cpu`.
                    let broken = self.fallback_mask(t).map(|mask| (t.cpu, mask));
                    if let Some((_, mask)) = broken {
                        rq.set_cpus_allowed(id, mask);
                    }
                    let broken = broken.map(|(from, _)| from);
                    let Some(t) = rq.task(id) else {
                        return Err(LifecycleError::NoSuchTask);
                    };
                    let wide = self.record_wakee_wide(t, id, cell, this_cpu);
                    let (target, wf) = self.select_task_rq_recent(
                        t,
                        this_cpu,
                        wf | WakeFlags::TTWU,
                        wide,
                        Some(&cell.recent_used_cpu),
                    );
                    if target == cpu {
                        let d = rq.wake_in_place(id, wf)?;
                        drop(rq);
                        self.kick_if_needed(cpu, this_cpu, d.resched);
                        self.push_if_overloaded(cpu, this_cpu);
                        let outcome = if cpu == this_cpu {
                            WakeOutcome::Local(d)
                        } else {
                            WakeOutcome::Remote(cpu, d)
                        };
                        return Ok(Woke::Placed {
                            from: cpu,
                            to: cpu,
                            outcome,
                        });
                    }
                    // Taken straight into `st` (through a `Result` it was
                    // copied twice).
                    let mut st = None;
                    rq.take_blocked_into(id, &mut st)?;
                    let Some(st) = st.as_mut() else {
                        return Err(LifecycleError::NoSuchTask); // never: taken
                    };
                    // migrate_task_rq_fair: its load leaves this runqueue.
                    rq.detach_sleeper_load(st);
                    self.set_home(id, HOME_TRANSIT | target.as_u32());
                    drop(rq);
                    self.report_broken(id, broken);
                    // By reference: passed by value, it was copied again.
                    let outcome = self.ttwu_queue_ref(target, this_cpu, id, st, wf);
                    return Ok(Woke::Placed {
                        from: cpu,
                        to: target,
                        outcome,
                    });
                }
            }
        }
    }

    /// `record_wakee` on the waker (the task running on `this_cpu`), then
    /// `wake_wide` for its wakeup of `id` (a fair task; Linux does both in
    /// `select_task_rq_fair`). The waker's flips are halved once a second
    /// (`HZ` jiffies in Linux). `cell` is the wakee's.
    fn record_wakee_wide(
        &self,
        t: &SchedTask,
        id: TaskId,
        cell: &TaskCell,
        this_cpu: CpuId,
    ) -> bool {
        if t.class() != crate::class::SchedClass::Fair {
            return false;
        }
        let waker = self.summary(this_cpu).curr_id.load(Ordering::Relaxed);
        let Some(wc) = (waker != crate::task::NIL && waker != id.0)
            .then(|| self.cell(TaskId(waker)))
            .flatten()
        else {
            return false;
        };
        let now = self.platform.now_ns();
        if now > wc.wakee_flip_decay_ns.load(Ordering::Relaxed) + 1_000_000_000 {
            let f = wc.wakee_flips.load(Ordering::Relaxed);
            wc.wakee_flips.store(f >> 1, Ordering::Relaxed);
            wc.wakee_flip_decay_ns.store(now, Ordering::Relaxed);
        }
        if wc.last_wakee.load(Ordering::Relaxed) != id.0 {
            wc.last_wakee.store(id.0, Ordering::Relaxed);
            let f = wc.wakee_flips.load(Ordering::Relaxed);
            wc.wakee_flips.store(f.saturating_add(1), Ordering::Relaxed);
        }
        let master = wc.wakee_flips.load(Ordering::Relaxed);
        // The wakee's own cell, which the caller has (not looked up again).
        let slave = cell.wakee_flips.load(Ordering::Relaxed);
        self.wake_wide(master, slave, this_cpu)
    }

    /// Wakes a parked task: takes its state from its cell, places it and
    /// queues it. `None` if it was no longer parked. A task still switching
    /// out of the CPU it slept on is queued on that CPU's wake list, not
    /// placed again, when [`Scheduler::ttwu_queue_cond`] holds for that CPU
    /// (Linux's `p->on_cpu` case in `try_to_wake_up`: the CPU takes it once
    /// the switch is done, since it drains its list only after it); else the
    /// waker waits until it is off that CPU (Linux's
    /// `smp_cond_load_acquire(&p->on_cpu, !VAL)`) and places it.
    fn wake_parked(
        &self,
        cell: &TaskCell,
        wf: WakeFlags,
        this_cpu: CpuId,
        id: TaskId,
    ) -> Option<Woke> {
        // The state stays in the cell (in transit) until the destination
        // copies it from there ([`InTransit`]): one copy of it, not two.
        let mut from = CpuId::BOOT;
        let mut allowed = false;
        let mut broken = None;
        let irq = self.platform.irq_save();
        let placed = {
            let mut p = self.lock(&cell.parked);
            if p.is_some() && cell.home.load(Ordering::Acquire) == HOME_PARKED {
                let on_cpu = cell.last_cpu();
                let descheduling = cell.switching.load(Ordering::Acquire)
                    && p.as_ref()
                        .is_some_and(|t| self.ttwu_queue_cond(this_cpu, on_cpu, t));
                while !descheduling && cell.switching.load(Ordering::Acquire) {
                    self.platform.cpu_relax();
                }
                p.as_mut().map(|t| {
                    broken = self.select_fallback_rq(t);
                    let (target, wf) = if descheduling {
                        (on_cpu, wf | WakeFlags::TTWU)
                    } else {
                        let wide = self.record_wakee_wide(t, id, cell, this_cpu);
                        self.select_task_rq_recent(
                            t,
                            this_cpu,
                            wf | WakeFlags::TTWU,
                            wide,
                            Some(&cell.recent_used_cpu),
                        )
                    };
                    from = t.cpu;
                    allowed = t.cpus_allowed.has(target);
                    let moved_load = self.remove_sleeper_load(t, target.index());
                    if broken.is_some() || moved_load {
                        // Changed here: its slot's copy no longer counts.
                        cell.kept.store(false, Ordering::Relaxed);
                    }
                    cell.home
                        .store(HOME_TRANSIT | target.as_u32(), Ordering::Release);
                    (target, wf)
                })
            } else {
                None
            }
        };
        self.platform.irq_restore(irq);
        self.report_broken(id, broken);
        let (target, wf) = placed?;
        let wakee = InTransit {
            sched: self,
            cell,
            allowed,
        };
        let outcome = self.ttwu_queue_from(target, this_cpu, id, wakee, wf);
        Some(Woke::Placed {
            from,
            to: target,
            outcome,
        })
    }

    /// `sched_setattr`: new policy, nice, RT priority or slice for task
    /// `id`, running, queued or asleep. Returns its CPU and that CPU's
    /// need-resched state afterwards (acted on by IPI when that is not
    /// `this_cpu`). SCHED_DEADLINE is refused, changing nothing, for a task
    /// whose affinity does not cover every active CPU
    /// ([`ParamsError::DlAffinityRestricted`], checked under the lock that
    /// [`Scheduler::set_affinity`] takes) or over the bandwidth limit.
    pub fn set_params(
        &self,
        id: TaskId,
        params: TaskParams,
        this_cpu: CpuId,
    ) -> Result<(CpuId, Resched), LifecycleError> {
        params.validate().map_err(LifecycleError::Params)?;
        if params.policy == Policy::Idle {
            // Before the task can be found running SCHED_IDLE anywhere
            // (a sleeper's kept state takes the new policy in place).
            self.cfg.note_sched_idle();
        }
        let (old_bw, new_bw) = (self.task(id, this_cpu)?.params.dl_bw(), params.dl_bw());
        self.dl_admit(old_bw, new_bw)?;
        let r = self.set_params_admitted(id, params, this_cpu);
        if r.is_err() {
            let _ = self.dl_admit(new_bw, old_bw);
        }
        r
    }

    fn set_params_admitted(
        &self,
        id: TaskId,
        params: TaskParams,
        this_cpu: CpuId,
    ) -> Result<(CpuId, Resched), LifecycleError> {
        loop {
            match self.task_rq_lock(id, this_cpu) {
                Ok((cpu, mut rq)) => {
                    let t = rq.task(id).ok_or(LifecycleError::NoSuchTask)?;
                    self.dl_check_affinity(&params, &t.cpus_allowed)?;
                    rq.update_rq_clock(self.platform.now_ns());
                    let r = rq.sched_setattr(id, params)?;
                    drop(rq);
                    self.kick_if_needed(cpu, this_cpu, r);
                    // `prio_changed_rt` / `switched_from_rt`, and the
                    // deadline class's.
                    self.balance_rt(cpu, this_cpu);
                    self.balance_dl(cpu, this_cpu);
                    return Ok((cpu, r));
                }
                Err(LifecycleError::Asleep) => {
                    let done = self.with_parked(id, |cell, p| {
                        let t = p.as_mut()?;
                        if let Err(e) = self.dl_check_affinity(&params, &t.cpus_allowed) {
                            return Some(Err(e));
                        }
                        crate::rq::set_params_offrq(t, params);
                        Some(Ok(cell.last_cpu()))
                    });
                    match done {
                        Some(Some(Ok(cpu))) => return Ok((cpu, Resched::None)),
                        Some(Some(Err(e))) => return Err(e),
                        _ => {}
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// `set_cpus_allowed_ptr`: task `id` may run only on `mask` from now
    /// on. A queued task outside it moves at once; the running task is
    /// asked to reschedule and moves at its switch
    /// ([`Switch::prev_misplaced`]); a sleeper is placed by its wakeup (a
    /// delayed dequeue is completed so that the wakeup places it). A
    /// SCHED_DEADLINE task's mask must cover every active CPU
    /// ([`LifecycleError::DlAffinityBusy`], nothing changes; see
    /// [`ParamsError::DlAffinityRestricted`] for why).
    pub fn set_affinity(
        &self,
        id: TaskId,
        mask: CpuMask,
        this_cpu: CpuId,
    ) -> Result<(), LifecycleError> {
        if !mask.intersects(&self.active_mask()) {
            return Err(LifecycleError::NoAllowedCpu);
        }
        let (cpu, mut rq) = loop {
            match self.task_rq_lock(id, this_cpu) {
                Ok(x) => break x,
                Err(LifecycleError::Asleep) => {
                    let done = self.with_parked(id, |_, p| {
                        let t = p.as_mut()?;
                        Some(self.dl_check_new_affinity(t, &mask).map(|()| {
                            t.cpus_allowed = mask;
                        }))
                    });
                    if let Some(Some(r)) = done {
                        return r;
                    }
                }
                Err(e) => return Err(e),
            }
        };
        self.dl_check_new_affinity(rq.task(id).ok_or(LifecycleError::NoSuchTask)?, &mask)?;
        rq.set_cpus_allowed(id, mask);
        if mask.has(cpu) {
            return Ok(());
        }
        if rq.curr() == Some(id) {
            let r = rq.resched_curr(Resched::Now);
            drop(rq);
            self.kick_if_needed(cpu, this_cpu, r);
            return Ok(());
        }
        match rq.task(id).map(|t| t.state) {
            Some(TaskState::Delayed) => {
                rq.update_rq_clock(self.platform.now_ns());
                rq.settle_delayed(id);
            }
            Some(TaskState::Queued) => {
                drop(rq);
                self.move_misplaced(cpu, id);
            }
            _ => {}
        }
        Ok(())
    }

    /// Removes task `id`, which is not running, from the scheduler (a task
    /// killed before it ran, or an embedding whose tasks leave without
    /// running, like `axsched`'s `remove_task`). Returns its final state.
    /// The running task exits through [`Scheduler::schedule`] instead.
    pub fn remove(&self, id: TaskId, this_cpu: CpuId) -> Result<SchedTask, LifecycleError> {
        loop {
            match self.task_rq_lock(id, this_cpu) {
                Ok((_, mut rq)) => {
                    if rq.curr() == Some(id) {
                        return Err(LifecycleError::Running);
                    }
                    rq.update_rq_clock(self.platform.now_ns());
                    let mut t = rq
                        .dequeue_task(id, DequeueFlags::SLEEP | DequeueFlags::SPECIAL)?
                        .ok_or(LifecycleError::NoSuchTask)?;
                    // task_dead_fair: its (blocked) load leaves with it.
                    rq.detach_sleeper_load(&mut t);
                    self.leave_task_group(&t);
                    self.set_home(id, HOME_NONE);
                    self.dl_release(t.params.dl_bw());
                    return Ok(t);
                }
                Err(LifecycleError::Asleep) => {
                    let got = self.with_parked(id, |cell, p| {
                        while cell.switching.load(Ordering::Acquire) {
                            self.platform.cpu_relax();
                        }
                        let t = p.take()?;
                        cell.home.store(HOME_NONE, Ordering::Release);
                        Some(t)
                    });
                    if let Some(Some(mut t)) = got {
                        self.remove_sleeper_load(&mut t, usize::MAX);
                        self.leave_task_group(&t);
                        self.dl_release(t.params.dl_bw());
                        return Ok(t);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The state task `id` exited with ([`PrevAction::Exits`]), kept until
    /// the id is spawned again (`join`'s statistics); `None` while it lives
    /// or if it never ran.
    pub fn exited(&self, id: TaskId) -> Option<SchedTask> {
        let cell = self.cell(id)?;
        let irq = self.platform.irq_save();
        let t = {
            let p = self.lock(&cell.parked);
            (cell.home.load(Ordering::Acquire) == HOME_NONE)
                .then_some(*p)
                .flatten()
        };
        self.platform.irq_restore(irq);
        t
    }

    /// A copy of task `id`'s state, wherever it is.
    pub fn task(&self, id: TaskId, this_cpu: CpuId) -> Result<SchedTask, LifecycleError> {
        loop {
            match self.task_rq_lock(id, this_cpu) {
                Ok((_, rq)) => return rq.task(id).copied().ok_or(LifecycleError::NoSuchTask),
                Err(LifecycleError::Asleep) => {
                    if let Some(Some(t)) = self.with_parked(id, |_, p| *p) {
                        return Ok(t);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}
