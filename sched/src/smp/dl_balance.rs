//! Deadline push and pull balancing: global EDF across the CPUs (Linux's
//! kernel/sched/deadline.c: `push_dl_task`, `push_dl_tasks`,
//! `pull_dl_task`, `find_later_rq` over cpudl, the overload mask
//! `rd->dlo_mask`).
//!
//! Admission control ([`crate::deadline::DlBandwidth`]) bounds the deadline
//! tasks' bandwidth over the whole machine, not per CPU: two admitted 60%
//! tasks may both be placed on one CPU, which they overcommit for as long
//! as they stay there. These moves keep, on every CPU, the earliest
//! deadlines running (the `m` earliest ready deadlines on `m` CPUs, as far
//! as affinity allows), as Linux's global EDF does:
//! - **Overload.** A runqueue with two or more ready deadline tasks, one of
//!   them queued (not running) and allowed on another CPU, is
//!   DL-overloaded; its summary's [`super::CpuSummary::dl_next`] holds that
//!   task's absolute deadline, and the scheduler counts such CPUs
//!   (`rd->dlo_count`). [`super::CpuSummary::dl_earliest`] holds each CPU's
//!   earliest ready deadline, 0 with none (cpudl). Both are republished at
//!   every unlock, with the RT summary.
//! - **Push** (`push_dl_tasks`): while `cpu` is overloaded, its earliest
//!   queued pushable task goes to the allowed CPU found by `find_later_rq`:
//!   one with no ready deadline task (an idle one first), else the one whose
//!   earliest deadline is the latest, if that is later than the task's; a
//!   task whose deadline is earlier than the running one's (or than the
//!   serving fair server's) reschedules `cpu` instead. Tried after an
//!   enqueue (`task_woken_dl`; a wakeup, a spawn), after every context
//!   switch (Linux's balance callback from `set_next_task_dl`), after the
//!   tick (a replenished task queued behind an earlier deadline: Linux's
//!   `dl_task_timer` pushes), and after a change of parameters.
//! - **Pull** (`pull_dl_task`): after a switch or a change of parameters on
//!   a CPU, while some CPU is overloaded, each overloaded CPU whose waiting
//!   task has a deadline earlier than everything ready on this CPU gives
//!   that task up to this one, unless it is about to run where it is (its
//!   deadline is earlier than the running task's there). Linux pulls from
//!   `balance_dl` before the pick when the CPU's deadline work dropped, and
//!   from `switched_from_dl` / `prio_changed_dl`; here, as for RT, the pull
//!   runs after the switch with no runqueue lock held, so a CPU that went
//!   idle switches once more, to the pulled task.
//!
//! Only ready tasks move: a throttled task waits for its replenishment
//! where it is (Linux's pushable tree holds no throttled task either); a
//! task allowed on one CPU never moves; the fair server is a per-CPU
//! entity, not a task, and is never moved. A moved task keeps its budget
//! and absolute deadline ([`crate::deadline::DlRq::enqueue`]'s `moved`).
//! Admission is for the whole machine (one root domain) and nothing is
//! accounted per CPU, so a move has no bandwidth to transfer (Linux moves
//! the task's `running_bw`/`this_bw` between the runqueues, used by GRUB
//! reclaiming and frequency selection, which we do not model).
//!
//! The steps are the shared engine's ([`super::push_pull`], written once
//! for RT and deadline); this module is what the deadline class gives it
//! ([`Dl`]): the absolute deadline as the key, where earlier beats later
//! and a runqueue with no ready deadline task (0) is beaten by any; the
//! overload summary `dl_next` and the published earliest deadline
//! `dl_earliest`; the running ready deadline task's deadline, or the
//! serving fair server's, as what a pushed task must be earlier than to run
//! at once (any deadline task preempts a lower class); `find_later_rq`'s
//! order of targets; and `dl_migratable`, which leaves throttled tasks.
//!
//! Moves take the two runqueues with [`Scheduler::double_rq_lock`], recheck
//! under the locks what the lock-free summaries suggested, and go through
//! `detach_task` / `attach_task`. Nothing allocates; a decision reads the
//! summaries of the CPUs and at most [`crate::rt::PUSHABLE_SCAN`] ready
//! tasks. While no CPU is DL-overloaded, each hook costs one relaxed load.
//!
//! Left out: capacity fitness (`dl_task_fits_capacity`), the topology
//! preference among later CPUs (`find_later_rq` prefers this CPU, then
//! the nearest domain; we take the first after `cpu`), the fair server's
//! deadline on the target (cpudl sees only tasks here), and Linux's retry
//! when the task to push changed while the locks were taken (we stop; the
//! next switch tries again).
//!
//! Wakeup placement (`select_task_rq_dl`, [`Scheduler::select_task_rq`])
//! uses the same `find_later_rq`: a wakee that could not run at once on its
//! previous CPU (a ready deadline task there is no later) goes to a later
//! CPU if there is one; forks take the fair slow path.

use core::sync::atomic::Ordering;

use super::push_pull::PushClass;
use super::{CpuSummary, Platform, Scheduler};
use crate::cpu_id::CpuId;
use crate::rq::{dl_migratable, Rq, RqStats};
use crate::task::{SchedTask, TaskId};

/// The deadline class in the push/pull engine: keys are absolute deadlines
/// (earlier beats later; 0 is none).
pub(super) struct Dl;

impl PushClass for Dl {
    type Key = u64;
    /// (has a deadline task, busy, earlier is worse): smaller is better.
    type Fit = (bool, bool, u64);
    const NONE: u64 = 0;

    #[inline]
    fn nr_overloaded<P: Platform>(s: &Scheduler<P>) -> u32 {
        s.dlo_count()
    }

    #[inline]
    fn summary_next(s: &CpuSummary) -> u64 {
        s.dl_next.load(Ordering::Relaxed)
    }

    #[inline]
    fn summary_highest(s: &CpuSummary) -> u64 {
        s.dl_earliest.load(Ordering::Relaxed)
    }

    #[inline]
    fn overload_key(rq: &Rq) -> u64 {
        rq.dl_overload_deadline()
    }

    #[inline]
    fn rq_highest(rq: &Rq) -> u64 {
        rq.dl_earliest()
    }

    #[inline]
    fn migratable(t: &SchedTask) -> bool {
        dl_migratable(t)
    }

    #[inline]
    fn pushable(rq: &Rq, ok: impl Fn(&SchedTask) -> bool) -> Option<TaskId> {
        rq.dl_pushable(ok)
    }

    #[inline]
    fn key(t: &SchedTask) -> u64 {
        t.dl.deadline
    }

    /// Earlier than the earliest ready deadline there, or there is none
    /// (`dl_rq->earliest_dl.curr`).
    #[inline]
    fn beats(deadline: u64, earliest: u64) -> bool {
        earliest == 0 || deadline < earliest
    }

    /// Earlier than the running ready deadline task's deadline or the
    /// serving fair server's; any deadline task preempts a lower class.
    #[inline]
    fn preempts_curr(rq: &Rq, deadline: u64) -> bool {
        rq.dl_curr_deadline().is_none_or(|c| deadline < c)
    }

    /// `find_later_rq` over cpudl: a CPU with no ready deadline task (an
    /// idle one first), else one whose earliest deadline is later than
    /// `deadline`, the latest first.
    #[inline]
    fn fit(earliest: u64, deadline: u64, idle: impl FnOnce() -> bool) -> Option<(bool, bool, u64)> {
        if earliest != 0 && earliest <= deadline {
            return None;
        }
        Some((earliest != 0, !idle(), u64::MAX - earliest))
    }

    #[inline]
    fn nr_pushed(stats: &mut RqStats) -> &mut u64 {
        &mut stats.nr_dl_push
    }

    #[inline]
    fn nr_pulled(stats: &mut RqStats) -> &mut u64 {
        &mut stats.nr_dl_pull
    }
}

impl<P: Platform> Scheduler<P> {
    /// DL-overloaded CPUs (Linux's `rd->dlo_count`).
    pub fn dl_overloaded_cpus(&self) -> u32 {
        self.dlo_count()
    }

    /// Pushes from `cpu` if its summary says it is DL-overloaded (one
    /// relaxed load otherwise). `this_cpu` is the caller's CPU.
    #[inline]
    pub(crate) fn push_dl_if_overloaded(&self, cpu: CpuId, this_cpu: CpuId) {
        self.push_if_overloaded_in::<Dl>(cpu, this_cpu);
    }

    /// The deadline balance of `cpu` after it switched or a task's
    /// parameters changed there: a push if it is DL-overloaded, then a pull
    /// if another CPU is. Costs one relaxed load while no CPU is
    /// DL-overloaded. `this_cpu` is the caller's CPU. Returns the tasks
    /// (pushed, pulled).
    pub fn balance_dl(&self, cpu: CpuId, this_cpu: CpuId) -> (u32, u32) {
        self.balance_class::<Dl>(cpu, this_cpu)
    }

    /// `push_dl_tasks`: pushes from `cpu` until it is no longer
    /// DL-overloaded or no CPU takes its next task (at most one task per
    /// CPU): its earliest-deadline queued pushable task goes to a CPU with
    /// no deadline task or a later one (`push_dl_task`, `find_later_rq`).
    /// Returns the tasks moved.
    pub fn push_dl_tasks(&self, cpu: CpuId, this_cpu: CpuId) -> u32 {
        self.push_tasks::<Dl>(cpu, this_cpu)
    }

    /// `select_task_rq_dl` for a wakeup: a deadline task wakes on `cpu` (its
    /// previous CPU, or its first allowed one) unless a ready deadline task
    /// there has a deadline no later than the wakee's, so that it could not
    /// run at once; then on the CPU `find_later_rq` finds, if any. As in
    /// Linux, the wakee's deadline is the one it slept with (the CBS wakeup
    /// rule may renew it at the enqueue), and the CPU's deadline is the
    /// published earliest one (Linux reads the running task's).
    pub(super) fn select_task_rq_dl(&self, t: &SchedTask, cpu: CpuId) -> CpuId {
        let earliest = Dl::summary_highest(&self.slots[cpu.index()].summary);
        if earliest == 0 || t.dl.deadline < earliest || t.cpus_allowed.weight() < 2 {
            return cpu;
        }
        let mask = self.allowed_mask(t);
        self.find_target_rq::<Dl>(t.dl.deadline, &mask, cpu)
            .unwrap_or(cpu)
    }

    /// `pull_dl_task`: takes to `cpu`, from each DL-overloaded CPU, its
    /// earliest queued task allowed here whose deadline is earlier than
    /// everything ready on `cpu` and not earlier than the running task's
    /// where it is. Returns the tasks moved.
    pub fn pull_dl_task(&self, cpu: CpuId) -> u32 {
        self.pull_tasks::<Dl>(cpu)
    }
}
