//! The task lifecycle: one entry point per event in a task's life, with the
//! scheduler, not the caller, keeping every task's state.
//!
//! | event | call | Linux |
//! |---|---|---|
//! | spawn | [`Scheduler::spawn`] | `wake_up_new_task` |
//! | timer tick | [`Scheduler::tick`] | `scheduler_tick` |
//! | switch (stay, yield, block, exit) | [`Scheduler::schedule`] with a [`PrevAction`] | `__schedule` |
//! | after the switch | [`Scheduler::finish_switch`] | `finish_task_switch` |
//! | wake, whatever the state | [`Scheduler::wake`] | `try_to_wake_up` |
//! | change policy / nice / priority / slice | [`Scheduler::set_params`] | `sched_setattr` |
//! | change affinity | [`Scheduler::set_affinity`] | `set_cpus_allowed_ptr` |
//! | remove a task that is not running | [`Scheduler::remove`] | — |
//! | where is it? | [`Scheduler::task_cpu`], [`Scheduler::task_rq_lock`] | `task_cpu`, `task_rq_lock` |
//! | migrate | internal: wakeup placement, balancing, affinity | `set_task_cpu` → [`Platform::set_task_cpu`] |
//!
//! # Who owns a task's state
//! From [`Scheduler::spawn`] to its exit, a task's [`SchedTask`] lives in
//! exactly one runqueue (its *home*, [`Scheduler::task_cpu`]), in one of
//! three states: `Queued` (runnable or running), `Delayed` (asleep, still in
//! the fair queue for DELAY_DEQUEUE) or `Blocked` (asleep, off every queue,
//! kept in its slot). Between a wakeup on another CPU and that CPU taking it,
//! it is in that CPU's wake list; the directory then says "in transit". The
//! caller never holds the state, so it cannot get it wrong: there is one wake
//! call whatever the state, one parameter call whether the task is running,
//! queued or asleep, and the exit hands the final state back once.
//!
//! The directory (4 bytes per task id) is written under the destination
//! runqueue's lock, and each write is reported to [`Platform::set_task_cpu`]
//! under that lock, so the kernel's per-thread CPU field follows every move.
//!
//! # What the caller still does
//! - Serialise the lifecycle calls for one task (Linux's `p->pi_lock`):
//!   two concurrent wakes of one task are fine (the second finds it
//!   runnable), but spawn and exit race with everything.
//! - Decide *whether* to wake (its own sleep/wake state machine: a thread
//!   that set itself sleeping and a waker that sets it running).
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

use crate::cpumask::CpuMask;
use crate::flags::{DequeueFlags, WakeFlags};
use crate::rq::{HeldWake, PrevAction, Resched, Rq, RqError, Switch, WakeupDecision};
use crate::task::{ParamsError, SchedTask, TaskId, TaskParams, TaskState};

use super::{Platform, RqGuard, Scheduler, WakeOutcome, HOME_CHUNK, HOME_NONE, HOME_TRANSIT};
use alloc::collections::TryReserveError;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

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
        cpu: usize,
        /// The wakeup-preemption decision there.
        decision: WakeupDecision,
    },
    /// It was blocked on `from`: placed (`select_task_rq`) and enqueued, or
    /// queued on the chosen CPU's wake list.
    Placed {
        /// Where it slept.
        from: usize,
        /// Where it went.
        to: usize,
        /// How: enqueued by the waker on its own CPU (`Local`) or another
        /// (`Remote`), or left on `to`'s wake list (`Queued`).
        outcome: WakeOutcome,
    },
    /// A wakeup is already carrying it to `cpu`: nothing to do.
    Pending {
        /// The CPU it is on its way to.
        cpu: usize,
    },
}

impl Woke {
    /// The CPU the task is runnable on (or on its way to).
    pub fn cpu(&self) -> usize {
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

impl<P: Platform> Scheduler<P> {
    /// Records that `id` now lives on `cpu` (called with that runqueue
    /// locked) and tells the platform.
    pub(crate) fn placed(&self, id: TaskId, cpu: usize) {
        self.set_home(id, cpu as u32);
        self.platform.set_task_cpu(id, cpu);
    }

    /// The directory cell of `id`, if its chunk exists (never allocates).
    fn home_cell(&self, id: TaskId) -> Option<&AtomicU32> {
        let i = id.0 as usize;
        self.homes.get(i / HOME_CHUNK)?.get()?.get(i % HOME_CHUNK)
    }

    /// The directory cell of `id`, allocating its chunk if needed.
    fn home_cell_alloc(&self, id: TaskId) -> Result<&AtomicU32, LifecycleError> {
        let i = id.0 as usize;
        if i >= self.capacity {
            return Err(LifecycleError::IdOutOfRange);
        }
        let chunk = self.homes[i / HOME_CHUNK]
            .try_call_once(|| {
                let mut v = Vec::new();
                v.try_reserve_exact(HOME_CHUNK)?;
                v.extend((0..HOME_CHUNK).map(|_| AtomicU32::new(HOME_NONE)));
                Ok::<_, TryReserveError>(v)
            })
            .map_err(|_| LifecycleError::NoMemory)?;
        Ok(&chunk[i % HOME_CHUNK])
    }

    fn set_home(&self, id: TaskId, h: u32) {
        if let Some(c) = self.home_cell(id) {
            c.store(h, Ordering::Release);
        }
    }

    fn load_home(&self, id: TaskId) -> u32 {
        self.home_cell(id)
            .map_or(HOME_NONE, |c| c.load(Ordering::Acquire))
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

    /// `task_cpu`: the CPU whose runqueue holds task `id` (or that a wakeup
    /// is carrying it to); `None` for no live task. Lock-free: the answer
    /// may be stale by the time it is used; [`Scheduler::task_rq_lock`]
    /// gives one that holds.
    pub fn task_cpu(&self, id: TaskId) -> Option<usize> {
        self.home(id).ok().map(|h| (h & !HOME_TRANSIT) as usize)
    }

    /// `task_rq_lock`: locks the runqueue that holds task `id` and returns
    /// its CPU with the guard. A task in transit is landed first (its
    /// target's wake list is drained on that CPU's behalf, which is kicked
    /// if it must act). `this_cpu` is the caller's CPU.
    pub fn task_rq_lock(
        &self,
        id: TaskId,
        this_cpu: usize,
    ) -> Result<(usize, RqGuard<'_, P>), LifecycleError> {
        loop {
            let h = self.home(id)?;
            let cpu = (h & !HOME_TRANSIT) as usize;
            let mut rq = self.cpu_rq(cpu);
            let now = self.load_home(id);
            if now == cpu as u32 {
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
            core::hint::spin_loop();
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
        this_cpu: usize,
    ) -> Result<(usize, WakeupDecision), LifecycleError> {
        if self.home_cell_alloc(id)?.load(Ordering::Acquire) != HOME_NONE {
            return Err(LifecycleError::AlreadySpawned);
        }
        task.params.validate().map_err(LifecycleError::Params)?;
        if !task.cpus_allowed.intersects(&self.topology.online_mask()) {
            return Err(LifecycleError::NoAllowedCpu);
        }
        task.state = TaskState::Absent;
        task.cpu = this_cpu as u32;
        let (cpu, _) = self.select_task_rq(&task, this_cpu, WakeFlags::FORK);
        let d = {
            let mut rq = self.cpu_rq(cpu);
            rq.update_rq_clock(self.platform.now_ns());
            let d = rq.try_wake_up_new_task(id, task)?;
            self.placed(id, cpu);
            d
        };
        self.kick_if_needed(cpu, this_cpu, d.resched);
        Ok((cpu, d))
    }

    /// `__schedule` on `rq`'s CPU, with `rq` locked by the caller: brings
    /// its clock up to date, lands the queued remote wakeups, applies what
    /// the running task does ([`PrevAction`]) and picks the next task.
    ///
    /// Keep `rq` locked until the previous task is off the CPU (switch
    /// stacks with the lock held, unlock on the other side), then call
    /// [`Scheduler::finish_switch`]. An exiting task's final state is in
    /// [`Switch::prev_exited`]; its id is free for a new spawn.
    pub fn schedule(&self, rq: &mut Rq, action: PrevAction) -> Switch {
        rq.update_rq_clock(self.platform.now_ns());
        self.sched_ttwu_pending(rq);
        let sw = rq.switch(action);
        if let (Some(prev), Some(_)) = (sw.prev, sw.prev_exited) {
            self.set_home(prev, HOME_NONE);
        }
        sw
    }

    /// `scheduler_tick` on `cpu`: brings its clock up to date and charges
    /// the running task ([`Rq::task_tick`]: slice and request accounting,
    /// tick preemption). Returns the need-resched state: call
    /// [`Scheduler::schedule`] at once for `Now`, at the next preemption
    /// point or tick for `Lazy` (the lazy model).
    pub fn tick(&self, cpu: usize) -> Resched {
        let mut rq = self.cpu_rq(cpu);
        rq.update_rq_clock(self.platform.now_ns());
        rq.task_tick()
    }

    /// `finish_task_switch`'s scheduler half, on `cpu` once the previous
    /// task is off it and the runqueue unlocked: a previous task that
    /// stayed runnable but may no longer run here ([`Switch::prev_misplaced`])
    /// is queued on the idlest allowed CPU. Returns that CPU.
    pub fn finish_switch(&self, cpu: usize, sw: &Switch) -> Option<usize> {
        if !sw.prev_misplaced {
            return None;
        }
        let id = sw.prev?;
        let t = {
            let mut rq = self.cpu_rq(cpu);
            // A wakeup may have placed it meanwhile (it looked blocked).
            if rq.task(id).map(|t| t.state) != Some(TaskState::Blocked)
                || self.load_home(id) != cpu as u32
            {
                return None;
            }
            let t = rq.take_blocked(id).ok()?;
            self.set_home(id, HOME_TRANSIT | cpu as u32);
            t
        };
        let target = self.find_idlest_cpu(&t, self.first_allowed(&t));
        let d = {
            let mut rq = self.cpu_rq(target);
            rq.update_rq_clock(self.platform.now_ns());
            let d = rq.attach_task(id, t);
            self.placed(id, target);
            d
        };
        self.kick_if_needed(target, cpu, d.resched);
        Some(target)
    }

    /// `try_to_wake_up`, whatever state the task is in: a task still
    /// queued (preempted, or asleep with its dequeue delayed) is made
    /// runnable where it is; a blocked one is placed (`select_task_rq`:
    /// wake-affine, idle siblings, its allowed CPUs) and enqueued there,
    /// locally or through the target's wake list; a task already on its
    /// way is left alone. `wf`: `SYNC`, `IRQ` or empty (see the module
    /// docs). `this_cpu` is the waker's CPU.
    pub fn wake(&self, id: TaskId, wf: WakeFlags, this_cpu: usize) -> Result<Woke, LifecycleError> {
        loop {
            let h = self.home(id)?;
            let cpu = (h & !HOME_TRANSIT) as usize;
            if h & HOME_TRANSIT != 0 {
                return Ok(Woke::Pending { cpu });
            }
            let mut rq = self.cpu_rq(cpu);
            if self.load_home(id) != h {
                continue; // moved before we got the lock
            }
            rq.update_rq_clock(self.platform.now_ns());
            match rq.wake_held(id, wf) {
                HeldWake::Woken(decision) => {
                    let misplaced = rq.curr() != Some(id)
                        && rq.task(id).is_some_and(|t| !t.cpus_allowed.test(cpu));
                    drop(rq);
                    self.kick_if_needed(cpu, this_cpu, decision.resched);
                    if misplaced {
                        self.move_misplaced(cpu, id);
                    }
                    return Ok(Woke::InPlace { cpu, decision });
                }
                HeldWake::NotHere => {
                    // The directory is written under this lock: a task it
                    // places here is held here. Not reachable; refuse.
                    debug_assert!(false, "task {} homed on cpu {cpu} but not held", id.0);
                    return Err(LifecycleError::NoSuchTask);
                }
                HeldWake::Blocked => {
                    let Some(&t) = rq.task(id) else {
                        return Err(LifecycleError::NoSuchTask);
                    };
                    let (target, wf) = self.select_task_rq(&t, this_cpu, wf | WakeFlags::TTWU);
                    if target == cpu {
                        let d = rq.wake_in_place(id, wf)?;
                        drop(rq);
                        self.kick_if_needed(cpu, this_cpu, d.resched);
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
                    let st = rq.take_blocked(id)?;
                    self.set_home(id, HOME_TRANSIT | target as u32);
                    drop(rq);
                    let outcome = self.ttwu_queue(target, this_cpu, id, st, wf);
                    return Ok(Woke::Placed {
                        from: cpu,
                        to: target,
                        outcome,
                    });
                }
            }
        }
    }

    /// `sched_setattr`: new policy, nice, RT priority or slice for task
    /// `id`, running, queued or asleep. Returns the need-resched state of
    /// its CPU afterwards (acted on by IPI when that is not `this_cpu`).
    pub fn set_params(
        &self,
        id: TaskId,
        params: TaskParams,
        this_cpu: usize,
    ) -> Result<(usize, Resched), LifecycleError> {
        params.validate().map_err(LifecycleError::Params)?;
        let (cpu, mut rq) = self.task_rq_lock(id, this_cpu)?;
        rq.update_rq_clock(self.platform.now_ns());
        let r = rq.sched_setattr(id, params)?;
        drop(rq);
        self.kick_if_needed(cpu, this_cpu, r);
        Ok((cpu, r))
    }

    /// `set_cpus_allowed_ptr`: task `id` may run only on `mask` from now
    /// on. A queued task outside it moves at once; the running task is
    /// asked to reschedule and moves at its switch
    /// ([`Switch::prev_misplaced`]); a sleeper is placed by its wakeup (a
    /// delayed dequeue is completed so that the wakeup places it).
    pub fn set_affinity(
        &self,
        id: TaskId,
        mask: CpuMask,
        this_cpu: usize,
    ) -> Result<(), LifecycleError> {
        if !mask.intersects(&self.topology.online_mask()) {
            return Err(LifecycleError::NoAllowedCpu);
        }
        let (cpu, mut rq) = self.task_rq_lock(id, this_cpu)?;
        rq.set_cpus_allowed(id, mask);
        if mask.test(cpu) {
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
    pub fn remove(&self, id: TaskId, this_cpu: usize) -> Result<SchedTask, LifecycleError> {
        let (_, mut rq) = self.task_rq_lock(id, this_cpu)?;
        if rq.curr() == Some(id) {
            return Err(LifecycleError::Running);
        }
        rq.update_rq_clock(self.platform.now_ns());
        let t = rq
            .dequeue_task(id, DequeueFlags::SLEEP | DequeueFlags::SPECIAL)?
            .ok_or(LifecycleError::NoSuchTask)?;
        self.set_home(id, HOME_NONE);
        Ok(t)
    }

    /// A copy of task `id`'s state, wherever it is.
    pub fn task(&self, id: TaskId, this_cpu: usize) -> Result<SchedTask, LifecycleError> {
        let (_, rq) = self.task_rq_lock(id, this_cpu)?;
        rq.task(id).copied().ok_or(LifecycleError::NoSuchTask)
    }
}
