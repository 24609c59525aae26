//! HRTICK: ending a fair slice between two ticks with a one-shot per-CPU
//! timer (Linux's `rq->hrtick_timer`).
//!
//! Without it a fair task's request can only be found consumed at a tick, so
//! a slice lasts a whole number of ticks (4 ms at 250 Hz) whatever its
//! length. With it, when a fair task is picked while others are queued, the
//! runqueue asks for a timer at the moment the task reaches its virtual
//! deadline ([`FairRq::time_to_deadline_ns`]); at expiry ([`Rq::hrtick`])
//! the task is charged and an immediate reschedule is requested, as Linux's
//! `hrtick()` → `task_tick_fair(rq, curr, 1)` does.
//!
//! The rules follow Linux 7.2 (`kernel/sched/core.c`, `fair.c`, after the
//! `sched/hrtick` series of February 2026, whose "sched: Default enable
//! HRTICK when deferred rearming is enabled", commit 9213aa4784cf, turned it
//! on where Debian's kernel has it on):
//! - **arm on pick**: a newly picked fair task (`__set_next_task_fair` with
//!   `first`) with more than one fair entity queued gets the timer for the
//!   rest of its request (`hrtick_start_fair`). A task picked again while
//!   running (a reschedule that picks the same task) does not re-arm it, as
//!   in 7.2 (`put_prev_set_next_task` returns early; a fix for that,
//!   "sched: Restart fair hrtick after same-task repicks", was still under
//!   review);
//! - **arm on enqueue**: a fair enqueue while a fair task runs and no timer
//!   is pending arms it for the running task (`hrtick_update`): the second
//!   task to arrive starts the clock of the first;
//! - **task groups**: a task in a group gets the timer too, for its own
//!   entity's request (`&p->se`), when the CPU holds more than one fair
//!   task whatever the groups (`rq->cfs.h_nr_queued`);
//! - **the minimum** delay is 10 µs (`hrtick_start`);
//! - **cancel** only when the CPU goes idle (`hrtick_schedule_exit`); a
//!   switch to an RT task leaves a pending timer alone, and its expiry then
//!   only charges the running task;
//! - **expiry** charges the running fair task and asks for an immediate
//!   reschedule, even under the lazy model ("sched/fair: Make hrtick resched
//!   hard", commit 5d88e424ec1b): it does not do the tick's other work.
//!
//! The runqueue only records what it wants ([`HrtickCmd`]); whoever holds
//! its lock hands that to the platform ([`Rq::take_hrtick_cmd`]; the
//! [`crate::smp::Scheduler`] does it through
//! [`crate::smp::Platform::hrtick_start`] / `hrtick_cancel` whenever it
//! releases a runqueue). The timer is class-neutral: a deadline class could
//! arm it the same way (Linux's HRTICK_DL).

use super::{Resched, Rq};
use crate::class::SchedClass;
use crate::fair::FairRq;
use crate::features::Feature;
use crate::slots::Slot;
use crate::task::NIL;

/// The shortest delay the timer is armed for (Linux's `hrtick_start`:
/// "Don't schedule slices shorter than 10000ns").
pub const HRTICK_MIN_NS: u64 = 10_000;

/// No timer pending.
pub(super) const HRTICK_NONE: u64 = u64::MAX;

/// What a runqueue wants done with its CPU's one-shot scheduler timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HrtickCmd {
    /// Arm (or move) it to fire this long after the moment it is armed, ns
    /// (at least [`HRTICK_MIN_NS`]). As Linux's `hrtick_schedule_exit`
    /// does, the delay is decided at the pick and counted from when the
    /// timer is armed, at the end of `schedule()` (`ktime_get() +
    /// rq->hrtick_delay`), not from the runqueue clock of the pick.
    Start(u64),
    /// Arm (or move) it to fire at this instant, ns on the runqueue's
    /// clock (the [`crate::smp::Platform::now_ns`] clock): the deadline
    /// class's instant (the fair server's, or a throttled deadline task's
    /// replenishment), or a slice's end when the timer is armed again after
    /// such an instant came first.
    At(u64),
    /// Stop it.
    Cancel,
}

impl Rq {
    /// Is a timer pending (armed and its expiry not yet handled)? Linux's
    /// `hrtick_active`.
    pub fn hrtick_active(&self) -> bool {
        self.hrtick_expires_ns != HRTICK_NONE
    }

    /// When the pending timer fires, if one is pending, on this runqueue's
    /// clock as of when it was asked for.
    pub fn hrtick_expires_ns(&self) -> Option<u64> {
        self.hrtick_active().then_some(self.hrtick_expires_ns)
    }

    /// The change to the timer this runqueue asked for since the last call,
    /// if any: hand it to the platform before releasing the runqueue lock.
    pub fn take_hrtick_cmd(&mut self) -> Option<HrtickCmd> {
        self.hrtick_cmd.take()
    }

    /// Whether [`Rq::take_hrtick_cmd`] has a change to hand over (most
    /// unlocks have none: a test before the call that takes it).
    #[inline]
    pub fn hrtick_cmd_pending(&self) -> bool {
        self.hrtick_cmd.is_some()
    }

    /// `hrtick_start`: fire `delay_ns` (at least [`HRTICK_MIN_NS`]) from now
    /// (or at the fair server's instant, if that comes first: the slice's
    /// end is then armed once that has been handled).
    fn hrtick_start(&mut self, delay_ns: u64) {
        let delay = delay_ns.max(HRTICK_MIN_NS);
        self.hrtick_expires_ns = self.clock.saturating_add(delay);
        self.hrtick_cmd = Some(HrtickCmd::Start(delay));
        if self.dl_timer_ns < self.hrtick_expires_ns {
            self.hrtick_program();
        }
    }

    /// Stops a pending timer (the slice's; a pending deadline-class instant
    /// keeps the CPU's timer armed for it).
    pub(super) fn hrtick_cancel(&mut self) {
        if self.hrtick_active() {
            self.hrtick_expires_ns = HRTICK_NONE;
            self.hrtick_program();
        }
    }

    /// Asks the platform for the CPU's timer at the earlier of the slice's
    /// end and the deadline class's instant, or for none.
    #[cold]
    fn hrtick_program(&mut self) {
        let at = self.hrtick_expires_ns.min(self.dl_timer_ns);
        self.hrtick_cmd = Some(if at == HRTICK_NONE {
            HrtickCmd::Cancel
        } else {
            HrtickCmd::At(at)
        });
    }

    /// When the fair server's own timer fires, if it is armed.
    pub fn fair_server_timer_ns(&self) -> Option<u64> {
        (self.server_timer_ns != HRTICK_NONE).then_some(self.server_timer_ns)
    }

    /// Arms the fair server's timer (Linux's `start_dl_timer` for the
    /// `dl_server`) for its next instant ([`crate::deadline::DlServer::timer_at`]:
    /// the zero-laxity boost, or the replenishment) when that comes before
    /// the next tick, which would otherwise be the first to notice it; stops
    /// it when the server needs none. Called after a server tick that
    /// changed its state or found that instant less than a tick away
    /// ([`crate::deadline::ServerTick::Near`]), and after its timer: an
    /// instant a tick or more away is armed by a later tick, so a CPU whose
    /// fair tasks run on their own (the zero-laxity time then moves on with
    /// the clock) never arms it. A timer left armed for an instant that
    /// moved or a server that stopped fires, finds nothing due and is
    /// stopped or moved then (Linux's `dl_server_timer` likewise returns
    /// early for a server no longer throttled).
    pub(super) fn fair_server_timer_arm(&mut self) {
        let at = match self.fair_server.timer_at() {
            Some(at) if at < self.clock.saturating_add(self.cfg.tick_ns()) => at,
            _ => HRTICK_NONE,
        };
        self.server_timer_ns = at;
        self.dl_timer_update();
    }

    /// When the earliest throttled deadline task's replenishment is due, if
    /// one waits here: the CPU's timer is armed for it.
    pub fn dl_replenish_timer_ns(&self) -> Option<u64> {
        self.dl.next_replenish_ns(&self.tasks)
    }

    /// Arms the CPU's timer for the deadline class's next instant: the
    /// earlier of the fair server's ([`Rq::fair_server_timer_arm`]) and the
    /// first throttled deadline task's replenishment, the start of its next
    /// period (Linux's `start_dl_timer` for each throttled task; the
    /// earliest is the only one that can fire next, so one instant per CPU
    /// gives the same replenishments). Unlike the fair server's, that
    /// instant does not move, so it is armed however far away it is: a CPU
    /// whose only task is throttled may stop its tick. Called after
    /// whatever may change the first throttled task (a throttle, a
    /// replenishment, a deadline task's enqueue or dequeue); O(1), and it
    /// asks the platform for nothing when the instant did not change.
    #[inline(never)]
    pub(super) fn dl_timer_update(&mut self) {
        let dl = self
            .dl
            .next_replenish_ns(&self.tasks)
            .unwrap_or(HRTICK_NONE);
        let at = self.server_timer_ns.min(dl);
        if at != self.dl_timer_ns {
            self.dl_timer_ns = at;
            self.hrtick_program();
        }
    }

    /// `hrtick_start_fair` for the running fair task: arm the timer for the
    /// rest of its request when another fair entity is queued; if the
    /// request is already consumed, reschedule now. Inlined: on the common
    /// path (one fair task on the CPU, as in a cross-CPU ping-pong) it is
    /// a count and a return, paid at every pick.
    #[inline(always)]
    fn hrtick_start_fair(&mut self) {
        // Linux's `rq->cfs.h_nr_queued`: with task groups the root counts
        // a group entity for the tasks below it, which count here instead
        // (the runnable ones: a delayed grouped task is not counted), and a
        // delayed group entity, with no task below it, counts for none. With
        // no task in a group this is the root's count.
        let h_nr_queued = match self.grp.as_deref() {
            Some(g) => {
                (self.fair.nr_queued + g.runnable).saturating_sub(g.root_se + g.root_delayed_se)
            }
            None => self.fair.nr_queued,
        };
        if h_nr_queued <= 1 || self.fair.curr == NIL {
            return;
        }
        self.hrtick_start_fair_curr();
    }

    /// The rest of [`Rq::hrtick_start_fair`], when the timer is wanted.
    fn hrtick_start_fair_curr(&mut self) {
        // The task's own entity (`&p->se`), in its group's runqueue when it
        // is in one: its request, not its group entity's.
        match FairRq::time_to_deadline_ns(&self.tasks, Slot(self.curr)) {
            Some(ns) => self.hrtick_start(ns),
            None => {
                self.resched_curr(Resched::Now);
            }
        }
    }

    /// After a pick (`__set_next_task_fair` with `first`, and
    /// `hrtick_schedule_exit`): a newly picked fair task gets the timer; an
    /// idle CPU stops it. Inlined, with [`Rq::curr_is_fair`]: a few tests
    /// at every pick (out of line they cost ~15 instructions a call in the
    /// kernel's cross-CPU round trip).
    #[inline(always)]
    pub(super) fn hrtick_after_pick(&mut self, switched: bool) {
        if self.curr == NIL {
            self.hrtick_cancel();
        } else if switched && self.curr_is_fair() && self.cfg.feat(Feature::Hrtick) {
            self.hrtick_start_fair();
        }
    }

    /// Is the running task a fair one? Without groups the root's running
    /// entity is that task; with groups it may be the entity of the task's
    /// top-level group, which runs it just the same (Linux arms the timer
    /// for any fair task, `hrtick_start_fair(rq, p)` with `&p->se`).
    #[inline(always)]
    fn curr_is_fair(&self) -> bool {
        self.fair.curr == self.curr
            || (self.grp.is_some()
                && self.fair.curr != NIL
                && self.tasks[self.curr as usize].class() == SchedClass::Fair)
    }

    /// After a fair enqueue (`hrtick_update`): with a fair task running and
    /// no timer pending, arm it for the running task.
    #[inline(always)]
    pub(super) fn hrtick_update(&mut self) {
        if self.curr != NIL
            && self.curr_is_fair()
            && !self.hrtick_active()
            && self.cfg.feat(Feature::Hrtick)
        {
            self.hrtick_start_fair();
        }
    }

    /// The timer fired: bring the clock to `now_ns` first
    /// ([`Rq::update_rq_clock`]), then call this on the timer's CPU with the
    /// runqueue locked. The CPU's one timer serves two: the deadline
    /// class's instant, if it is armed and due, is handled first (the
    /// running task is charged; the throttled deadline tasks whose period
    /// began are replenished, Linux's `dl_task_timer`, with a reschedule if
    /// one has an earlier deadline than what runs; then, if its instant was
    /// due, the fair server boosts or is replenished, Linux's
    /// `dl_server_timer`, and a fair task served above RT asks for an
    /// immediate reschedule); then the slice's end (Linux's `hrtick()`, which
    /// calls the running task's `task_tick` with `queued = 1`), when due: a
    /// running fair task is charged and an immediate reschedule requested;
    /// a task of another class is only charged. With no deadline-class
    /// instant armed every expiry is the slice's. An expiry of a timer that was
    /// cancelled meanwhile does nothing; one that comes before what is
    /// pending arms the timer again for it. Returns the need-resched state.
    pub fn hrtick(&mut self) -> Resched {
        let dl_armed = self.dl_timer_ns != HRTICK_NONE;
        if dl_armed {
            if self.dl_timer_ns <= self.clock {
                self.dl_timer_ns = HRTICK_NONE;
                self.dl_timer();
            }
            // The slice's end may still be ahead (the server's instant came
            // first): the timer is armed again for whatever is left.
            if !self.hrtick_active() || self.hrtick_expires_ns > self.clock {
                self.hrtick_program();
                return self.need_resched;
            }
        } else if !self.hrtick_active() {
            return self.need_resched;
        }
        self.hrtick_expires_ns = HRTICK_NONE;
        if self.dl_timer_ns != HRTICK_NONE {
            self.hrtick_program();
        }
        self.stats.nr_hrtick += 1;
        if self.curr == NIL {
            return self.need_resched;
        }
        match self.tasks[self.curr as usize].class() {
            SchedClass::Fair => {
                self.fair.update_curr(&mut self.tasks, &self.cfg);
                if self.grp.is_some() {
                    // Every level of a grouped task (`task_tick_fair`'s
                    // walk); their lazy requests give way to this one.
                    self.update_curr_grouped();
                }
                self.fair.resched = false;
                let before = self.need_resched;
                self.resched_curr(Resched::Now);
                if self.need_resched > before {
                    self.stats.nr_hrtick_resched += 1;
                }
            }
            // Another class (the timer was armed for a fair task that has
            // been switched out): only charge it, as `update_curr` does.
            _ => self.update_curr(),
        }
        self.need_resched
    }
}
