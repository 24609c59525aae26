//! CPU hotplug: taking a CPU out of scheduling and putting it back (Linux's
//! `sched_cpu_deactivate`, `sched_cpu_dying`, `sched_cpu_activate`,
//! `balance_push` and `select_fallback_rq` in kernel/sched/core.c).
//!
//! # The active mask
//! The scheduler keeps the CPUs it may use (Linux's `cpu_active_mask`). A CPU
//! outside it gets nothing: wakeup and fork placement, the idle-CPU scans,
//! load balancing (it neither pulls nor counts), RT push and pull, affinity
//! changes and the remote wake lists all look only at active CPUs. A task
//! that slept on it wakes on an active CPU (its previous CPU is not
//! allowed, so placement starts from its first allowed active CPU).
//!
//! # Taking a CPU down
//! 1. [`Scheduler::sched_cpu_deactivate`] (any CPU): the CPU leaves the
//!    active mask and its runqueue is marked `balance_push`: from its next
//!    switch on it runs only its idle task, and a running task that stays
//!    runnable leaves as a misplaced task (moved by
//!    [`Scheduler::finish_switch`]). Its running task is asked to
//!    reschedule now. The queued tasks move at once
//!    ([`Scheduler::migrate_tasks`]).
//! 2. The dying CPU, once it runs its idle task, calls
//!    [`Scheduler::migrate_tasks`] for itself (what it got meanwhile: its
//!    wake list, the previous task put back) and parks; the platform's
//!    part (timers, interrupts, firmware) is the caller's.
//! 3. [`Scheduler::sched_cpu_dying`] (another CPU, after the dying one has
//!    stopped): moves whatever is left and checks that the runqueue is
//!    empty, that nothing runs there, and cancels its slice timer.
//!
//! Linux closes the race between a waker that chose the CPU before it left
//! the active mask and the final sweep with RCU (`synchronize_rcu` in
//! `sched_cpu_deactivate`) and `balance_push`. Here every path that puts a
//! task on a runqueue (wakeups, wake lists, balancing, RT push/pull,
//! affinity moves) looks at the active mask after it released that
//! runqueue's lock, and moves what it finds on an inactive CPU itself: the
//! deactivation's store happens before the final sweep takes the lock, so a
//! task that lands after the sweep is seen by its own enqueuer.
//!
//! # Tasks that may run only there
//! As Linux does (`select_fallback_rq`): a task whose affinity names no
//! active CPU gets its affinity widened to every CPU, and the platform is
//! told ([`Platform::affinity_broken`]; Linux prints "process %d (%s) no
//! longer affine to cpu%d"). A queued one is moved at the deactivation, a
//! sleeping one when it wakes. New affinity masks and spawns must name an
//! active CPU ([`LifecycleError::NoAllowedCpu`](super::LifecycleError)).
//!
//! # Rules for the caller
//! Hotplug calls are serialised (Linux's `cpu_hotplug_lock`); the last
//! active CPU cannot go down, nor can one whose loss would leave admitted
//! SCHED_DEADLINE bandwidth without room (`dl_bw_deactivate`).

use core::sync::atomic::Ordering;

use super::{Platform, Scheduler, HOME_PARKED, MAX_PULL};
use crate::cpu_id::CpuId;
use crate::cpumask::{CpuMask, CPUMASK_WORDS};
use crate::deadline::DlBandwidth;
use crate::rq::{Resched, Rq};
use crate::task::{SchedTask, TaskId, TaskState};

/// Why a hotplug call changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HotplugError {
    /// The CPU is not one of the scheduler's.
    NoSuchCpu,
    /// [`Scheduler::sched_cpu_deactivate`] of an inactive CPU.
    AlreadyInactive,
    /// [`Scheduler::sched_cpu_activate`] (or `sched_cpu_dying`) of an
    /// active CPU.
    AlreadyActive,
    /// The last active CPU cannot go.
    LastCpu,
    /// The admitted SCHED_DEADLINE bandwidth would not fit in the CPUs left.
    DlBandwidth,
    /// [`Scheduler::sched_cpu_dying`]: the CPU still runs a task or holds
    /// one (it has not switched to its idle task yet).
    Busy,
}

impl core::fmt::Display for HotplugError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            HotplugError::NoSuchCpu => "no such CPU",
            HotplugError::AlreadyInactive => "CPU is already offline",
            HotplugError::AlreadyActive => "CPU is already online",
            HotplugError::LastCpu => "the last online CPU cannot go offline",
            HotplugError::DlBandwidth => "deadline tasks would not fit in the CPUs left",
            HotplugError::Busy => "CPU still runs a task",
        })
    }
}

impl<P: Platform> Scheduler<P> {
    /// Is `cpu` active (placement, balancing and wakeups may use it)?
    #[inline]
    pub fn cpu_active(&self, cpu: CpuId) -> bool {
        // The word modulo the word count: the same word for a `CpuId`
        // (below MAX_CPUS), and no bounds check.
        let w = &self.active[(cpu.index() / 64) % CPUMASK_WORDS];
        w.load(Ordering::Acquire) & (1 << (cpu.index() % 64)) != 0
    }

    /// The active CPUs (`cpu_active_mask`).
    pub fn active_mask(&self) -> CpuMask {
        let mut w = [0u64; CPUMASK_WORDS];
        for (d, a) in w.iter_mut().zip(&self.active) {
            *d = a.load(Ordering::Acquire);
        }
        CpuMask::from_words(w)
    }

    /// The root domain for deadline admission (`dl_bw_cpus`,
    /// `dl_bw_capacity`): the active CPUs, less `without` (a CPU about to
    /// go), and the sum of their capacities (1024 each on a machine of
    /// equal CPUs). O(CPUs) on an asymmetric machine; called by admission
    /// and hotplug only.
    pub fn dl_capacity(&self, without: Option<CpuId>) -> (u32, u64) {
        let gone = without.is_some_and(|c| self.cpu_active(c));
        let n = (self.nr_active() - usize::from(gone)) as u32;
        if !self.topology.has_asym_capacity() {
            return (n, u64::from(n) * 1024);
        }
        let units = (0..self.nr_cpus())
            .filter_map(CpuId::new)
            .filter(|&c| self.cpu_active(c) && Some(c) != without)
            .map(|c| u64::from(self.topology.capacity_of(c)))
            .sum();
        (n, units)
    }

    /// Active CPUs.
    pub fn nr_active(&self) -> usize {
        self.nr_cpus() - self.nr_inactive.load(Ordering::Acquire) as usize
    }

    fn check_cpu(&self, cpu: CpuId) -> Result<(), HotplugError> {
        if cpu.index() < self.nr_cpus() {
            Ok(())
        } else {
            Err(HotplugError::NoSuchCpu)
        }
    }

    /// `sched_cpu_deactivate`: `cpu` leaves the active mask (nothing is
    /// placed, balanced or woken there from now on), its runqueue runs
    /// nothing more after its next switch (`balance_push`), its running
    /// task is asked to reschedule now, and its queued tasks move to active
    /// CPUs. Refused (nothing changes) for the last active CPU, an inactive
    /// one, or when the admitted deadline bandwidth would not fit in the
    /// CPUs left. `this_cpu` is the caller's.
    pub fn sched_cpu_deactivate(&self, cpu: CpuId, this_cpu: CpuId) -> Result<(), HotplugError> {
        self.check_cpu(cpu)?;
        if !self.cpu_active(cpu) {
            return Err(HotplugError::AlreadyInactive);
        }
        if self.nr_active() <= 1 {
            return Err(HotplugError::LastCpu);
        }
        let (left, units) = self.dl_capacity(Some(cpu));
        if self.cfg.dl_bw.total_bw() > DlBandwidth::capacity(&self.cfg, left, units) {
            return Err(HotplugError::DlBandwidth);
        }
        self.active[cpu.index() / 64].fetch_and(!(1 << (cpu.index() % 64)), Ordering::SeqCst);
        self.nr_inactive.fetch_add(1, Ordering::SeqCst);
        let r = {
            let mut rq = self.cpu_rq(cpu);
            rq.set_balance_push(true);
            if rq.curr().is_some() {
                rq.resched_curr(Resched::Now)
            } else {
                Resched::None
            }
        };
        self.kick_if_needed(cpu, this_cpu, r);
        self.migrate_tasks(cpu);
        Ok(())
    }

    /// `sched_cpu_activate`: `cpu` is active again (placement and balancing
    /// use it, its runqueue picks tasks again). Call once the CPU runs its
    /// idle task again.
    pub fn sched_cpu_activate(&self, cpu: CpuId) -> Result<(), HotplugError> {
        self.check_cpu(cpu)?;
        if self.cpu_active(cpu) {
            return Err(HotplugError::AlreadyActive);
        }
        {
            let mut rq = self.cpu_rq(cpu);
            rq.update_rq_clock(self.platform.now_ns());
            rq.set_balance_push(false);
        }
        self.active[cpu.index() / 64].fetch_or(1 << (cpu.index() % 64), Ordering::SeqCst);
        self.nr_inactive.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }

    /// `sched_cpu_dying`, on another CPU once the inactive `cpu` has
    /// stopped: moves what is left on it ([`Self::migrate_tasks`]), cancels
    /// its slice timer and checks that its runqueue holds nothing and runs
    /// nothing ([`HotplugError::Busy`] otherwise: it had not switched to its
    /// idle task).
    pub fn sched_cpu_dying(&self, cpu: CpuId) -> Result<(), HotplugError> {
        self.check_cpu(cpu)?;
        if self.cpu_active(cpu) {
            return Err(HotplugError::AlreadyActive);
        }
        self.migrate_tasks(cpu);
        let busy = {
            let mut rq = self.cpu_rq(cpu);
            // rq_offline_fair: it no longer counts in any group's shares.
            rq.clear_tg_load_avg();
            rq.curr().is_some() || rq.tasks().next().is_some()
        };
        self.platform.hrtick_cancel(cpu);
        if busy || self.has_pending_wakeups(cpu) {
            return Err(HotplugError::Busy);
        }
        Ok(())
    }

    /// Moves everything off the inactive `cpu` but its running task
    /// (`balance_push` / `migrate_tasks`): lands its wake list, moves each
    /// queued task to the idlest CPU it may use (breaking the affinity of
    /// one pinned there, `Self::select_fallback_rq`), and hands each
    /// sleeper still held there (a delayed dequeue) to its own cell, to be
    /// placed by its wakeup. Returns the tasks moved. Does nothing on an
    /// active CPU. Any CPU may call it; no runqueue lock may be held.
    pub fn migrate_tasks(&self, cpu: CpuId) -> usize {
        let mut moved = 0;
        while cpu.index() < self.nr_cpus() && !self.cpu_active(cpu) {
            let mut ids = [TaskId(0); MAX_PULL];
            let mut n = 0;
            {
                let mut rq = self.cpu_rq(cpu);
                rq.update_rq_clock(self.platform.now_ns());
                // The list's lock, not its flag: a waker that pushed before
                // this lock saw the flag's store, or one after sees the
                // CPU inactive (no store-load race between the two flags).
                self.drain_wake_list(&mut rq);
                self.park_held_sleepers(&mut rq);
                let curr = rq.curr();
                for (id, t) in rq.tasks() {
                    if n == MAX_PULL {
                        break;
                    }
                    if t.state == TaskState::Queued && Some(id) != curr {
                        ids[n] = id;
                        n += 1;
                    }
                }
            }
            if n == 0 {
                break;
            }
            for &id in &ids[..n] {
                // Not allowed here (inactive): to the idlest CPU it may use.
                moved += self.move_misplaced(cpu, id).is_some() as usize;
            }
        }
        moved
    }

    /// Hands every sleeper `rq` still holds (delayed or blocked in its
    /// slot, not running) to its cell, as a switch does for a task going
    /// to sleep, so that its wakeup places it on an active CPU. Not the
    /// misplaced previous task of a switch whose `finish_switch` has not
    /// run yet: blocked in its slot, it is runnable, and that call moves it.
    fn park_held_sleepers(&self, rq: &mut Rq) {
        let curr = rq.curr();
        let misplaced = rq.pending_misplaced();
        loop {
            let next = rq
                .tasks()
                .find(|&(id, t)| {
                    Some(id) != curr
                        && Some(id) != misplaced
                        && matches!(t.state, TaskState::Delayed | TaskState::Blocked)
                })
                .map(|(id, _)| id);
            let Some(id) = next else { break };
            rq.settle_delayed(id);
            if !self.park_blocked(rq, id, false) {
                break; // not blocked after all: leave it (never seen)
            }
        }
    }

    /// Linux's `select_fallback_rq` for a task about to be placed: if its
    /// affinity names no active CPU, it is widened to every CPU of the
    /// machine and the CPU it was on is returned, to be reported with
    /// [`Self::report_broken`] once no lock is held (the caller stores the
    /// new mask where the task's state lives).
    pub(crate) fn select_fallback_rq(&self, t: &mut SchedTask) -> Option<CpuId> {
        let mask = self.fallback_mask(t)?;
        t.cpus_allowed = mask;
        Some(t.cpu)
    }

    /// The affinity [`Self::select_fallback_rq`] would give `t` (every CPU
    /// of the machine), or `None` if its own names an active CPU. For a
    /// caller that reads the task where it is held and stores the new mask
    /// there (`Rq::set_cpus_allowed`) instead of copying its state out.
    pub(crate) fn fallback_mask(&self, t: &SchedTask) -> Option<CpuMask> {
        if self.nr_inactive.load(Ordering::Acquire) == 0
            || t.cpus_allowed.intersects(&self.active_mask())
        {
            return None;
        }
        Some(CpuMask::first_n(self.nr_cpus()))
    }

    /// Tells the platform that task `id`'s affinity was broken (Linux's
    /// "no longer affine" line), if [`Self::select_fallback_rq`] said so.
    /// No runqueue lock may be held.
    pub(crate) fn report_broken(&self, id: TaskId, from: Option<CpuId>) {
        if let Some(cpu) = from {
            self.platform.affinity_broken(id, cpu);
        }
    }

    /// After a task landed on `cpu` (its lock released): if `cpu` has left
    /// the active mask meanwhile, move what it holds (the enqueuer's half
    /// of the race with the final sweep, see the module docs). One load
    /// while every CPU is active.
    #[inline(always)]
    pub(crate) fn recheck_active(&self, cpu: CpuId) {
        if self.nr_inactive.load(Ordering::Acquire) != 0 && !self.cpu_active(cpu) {
            self.migrate_inactive(cpu);
        }
    }

    #[cold]
    #[inline(never)]
    fn migrate_inactive(&self, cpu: CpuId) {
        self.migrate_tasks(cpu);
    }

    /// Is task `id` parked (asleep in its cell)? For the hotplug tests.
    #[doc(hidden)]
    pub fn is_parked(&self, id: TaskId) -> bool {
        self.load_home(id) == HOME_PARKED
    }
}
