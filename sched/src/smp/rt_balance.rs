//! RT push and pull balancing (Linux's kernel/sched/rt.c: `push_rt_task`,
//! `push_rt_tasks`, `pull_rt_task`, `find_lowest_rq` over cpupri, the
//! overload mask `rd->rto_mask`).
//!
//! Wakeup placement ([`super::placement`], `select_task_rq_rt`) puts an RT
//! task where it can run at once when it wakes; these keep it so afterwards:
//! - **Overload.** A runqueue with two or more RT tasks, one of them queued
//!   (not running) and allowed on another CPU, is RT-overloaded; its
//!   summary's [`super::CpuSummary::rt_next_rank`] holds that task's
//!   priority, and the scheduler counts such CPUs (`rd->rto_count`). Both
//!   are republished at every unlock, like the rest of the summary.
//! - **Push** (`push_rt_tasks`): while `cpu` is overloaded, its highest
//!   queued pushable task goes to the allowed CPU whose highest RT rank
//!   ([`super::CpuSummary::rt_rank`], cpupri's value: idle and fair count 0,
//!   idle preferred) is the lowest and below the task's, if there is one; a
//!   task that outranks `cpu`'s running task reschedules `cpu` instead.
//!   Tried after an enqueue that leaves a CPU overloaded (`task_woken_rt`;
//!   a wakeup, a spawn), after every context switch (the balance callback
//!   Linux queues in `set_next_task_rt`), after a priority change, and by
//!   the embedder's reschedule IPI ([`Scheduler::balance_rt`]).
//! - **Pull** (`pull_rt_task`): after a switch or a priority change on a
//!   CPU, while some CPU is overloaded, each overloaded CPU whose waiting
//!   task outranks everything on this CPU gives that task up to this one,
//!   unless it is about to run where it is (it outranks the running task
//!   there). Linux pulls from `balance_rt` before the pick, when the task
//!   going out was RT and what is left ranks lower (`need_pull_rt_task`),
//!   and from `switched_from_rt` / `prio_changed_rt`; here the pull runs
//!   after the switch (as the newidle balance does, with no runqueue lock
//!   held), so a CPU that switched to a fair task or idle first switches
//!   once more to the pulled task, and it runs after any switch, not only
//!   one from an RT task.
//!
//! The steps are the shared engine's ([`super::push_pull`], written once
//! for RT and deadline); this module is what RT gives it ([`Rt`]): the
//! priority as the key (higher outranks, 0 is none), the overload summary
//! `rt_next_rank` and the published rank `rt_rank`, the running task's rank
//! as what a pushed task must exceed to run at once, and
//! `find_lowest_rq`'s order of targets.
//!
//! Moves take the two runqueues with [`Scheduler::double_rq_lock`] (CPU
//! order, as the load balancer does), recheck under the locks what the
//! lock-free summaries suggested, and go through `detach_task` /
//! `attach_task` and [`Platform::set_task_cpu`]. A CPU that must switch to a
//! moved task is sent a reschedule IPI, the caller's own CPU included (a
//! wakeup's result does not carry a request for the waker's CPU, and
//! Linux's `resched_curr` on the local CPU sets the flag that the next
//! preemption point reads). Nothing allocates; a decision reads the
//! summaries of the CPUs (a scan, as cpupri's and `rto_mask`'s are) and at
//! most [`crate::rt::PUSHABLE_SCAN`] queued tasks.
//!
//! Left out: the RT_PUSH_IPI feature (a pulling CPU sends an IPI chain
//! through the overloaded CPUs so that each pushes its own tasks, which
//! avoids many CPUs contending for one runqueue lock; we pull directly, as
//! Linux does without it), capacity fitness, and Linux's retry when the task to push changed while the locks
//! were taken (we stop; the next switch tries again).

use core::sync::atomic::Ordering;

use super::push_pull::PushClass;
use super::{rt_rank, CpuSummary, Platform, Scheduler};
use crate::cpu_id::CpuId;
use crate::rq::{rt_migratable, Rq, RqStats};
use crate::task::{SchedTask, TaskId};

/// The RT class in the push/pull engine: keys are RT ranks (1..=99 for an
/// RT task, higher outranks; 0 is none).
pub(super) struct Rt;

impl PushClass for Rt {
    type Key = u8;
    /// (the CPU's rank, busy): the lowest rank first, then an idle CPU.
    type Fit = (u8, bool);
    type Need = ();
    const NONE: u8 = 0;

    #[inline]
    fn nr_overloaded<P: Platform>(s: &Scheduler<P>) -> u32 {
        s.rto_count()
    }

    #[inline]
    fn summary_next(s: &CpuSummary) -> u8 {
        s.rt_next_rank.load(Ordering::Relaxed)
    }

    #[inline]
    fn summary_highest(s: &CpuSummary) -> u8 {
        s.rt_rank.load(Ordering::Relaxed)
    }

    #[inline]
    fn overload_key(rq: &Rq) -> u8 {
        rq.rt_overload_rank()
    }

    #[inline]
    fn rq_highest(rq: &Rq) -> u8 {
        rq.rt_highest_rank()
    }

    #[inline]
    fn migratable(t: &SchedTask) -> bool {
        rt_migratable(t)
    }

    #[inline]
    fn pushable(rq: &Rq, ok: impl Fn(&SchedTask) -> bool) -> Option<TaskId> {
        rq.rt_pushable(ok)
    }

    /// The RT priority; for the RT tasks the engine moves, their rank.
    #[inline]
    fn key(t: &SchedTask) -> u8 {
        t.params.rt_priority
    }

    /// Outranks: `rank > highest` (`rt_rq->highest_prio.curr`).
    #[inline]
    fn beats(rank: u8, highest: u8) -> bool {
        rank > highest
    }

    /// Outranks the running task (a fair task or idle ranks 0, a deadline
    /// task 100).
    #[inline]
    fn preempts_curr(rq: &Rq, rank: u8) -> bool {
        rank > rq.curr().and_then(|c| rq.task(c)).map_or(0, rt_rank)
    }

    /// `find_lowest_rq` over cpupri: a CPU ranked below `rank`, the lowest
    /// first, an idle one before a busy one.
    #[inline]
    fn fit(cpu_rank: u8, rank: u8, idle: impl FnOnce() -> bool) -> Option<(u8, bool)> {
        (cpu_rank < rank).then(|| (cpu_rank, !idle()))
    }

    #[inline]
    fn nr_pushed(stats: &mut RqStats) -> &mut u64 {
        &mut stats.nr_rt_push
    }

    #[inline]
    fn nr_pulled(stats: &mut RqStats) -> &mut u64 {
        &mut stats.nr_rt_pull
    }
}

impl<P: Platform> Scheduler<P> {
    /// RT-overloaded CPUs (Linux's `rd->rto_count`).
    pub fn rt_overloaded_cpus(&self) -> u32 {
        self.rto_count()
    }

    /// Pushes from `cpu` if its summary says it is RT-overloaded (one
    /// relaxed load otherwise). `this_cpu` is the caller's CPU.
    #[inline]
    pub(crate) fn push_rt_if_overloaded(&self, cpu: CpuId, this_cpu: CpuId) {
        self.push_if_overloaded_in::<Rt>(cpu, this_cpu);
    }

    /// The RT balance of `cpu` after it switched or its running task's
    /// priority changed, or when the embedder's reschedule IPI lands there:
    /// a push if it is RT-overloaded, then a pull if another CPU is. Costs
    /// one relaxed load while no CPU is RT-overloaded. `this_cpu` is the
    /// caller's CPU. Returns the tasks (pushed, pulled).
    pub fn balance_rt(&self, cpu: CpuId, this_cpu: CpuId) -> (u32, u32) {
        self.balance_class::<Rt>(cpu, this_cpu)
    }

    /// `push_rt_tasks`: pushes from `cpu` until it is no longer RT-overloaded
    /// or no CPU takes its next task (at most one task per CPU): its highest
    /// queued pushable task goes to the lowest-ranked CPU that would run it
    /// at once (`push_rt_task`, `find_lowest_rq`). Returns the tasks moved.
    pub fn push_rt_tasks(&self, cpu: CpuId, this_cpu: CpuId) -> u32 {
        self.push_tasks::<Rt>(cpu, this_cpu)
    }

    /// `pull_rt_task`: takes to `cpu`, from each RT-overloaded CPU, its
    /// highest queued task allowed here that outranks everything on `cpu`
    /// and does not outrank the task running where it is. Returns the tasks
    /// moved.
    pub fn pull_rt_task(&self, cpu: CpuId) -> u32 {
        self.pull_tasks::<Rt>(cpu)
    }
}
