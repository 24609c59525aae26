//! The push/pull engine that RT ([`super::rt_balance`]) and deadline
//! ([`super::dl_balance`]) balancing share.
//!
//! Linux writes the two classes' balancing twice, in kernel/sched/rt.c
//! (`push_rt_task`, `push_rt_tasks`, `pull_rt_task`, `find_lowest_rq`) and
//! kernel/sched/deadline.c (`push_dl_task`, `push_dl_tasks`,
//! `pull_dl_task`, `find_later_rq`): the same steps over a different order.
//! Here the steps are written once, generic over a [`PushClass`], and each
//! class says only what differs:
//! - its **key**, what it orders its tasks by: the RT priority (higher runs
//!   first) or the absolute deadline (earlier runs first), and
//!   [`PushClass::beats`], whether a task of a key would run before
//!   everything of the class on a runqueue whose highest (RT) or earliest
//!   (DL) key is given, 0 meaning none there (`rt_rq->highest_prio.curr`,
//!   `dl_rq->earliest_dl.curr`);
//! - its **overload summary**: the published overload key
//!   ([`super::CpuSummary::rt_next_rank`], [`super::CpuSummary::dl_next`];
//!   `rd->rto_mask`, `rd->dlo_mask`), its count (`rd->rto_count`,
//!   `rd->dlo_count`), and the published highest key a pull compares with
//!   ([`super::CpuSummary::rt_rank`], [`super::CpuSummary::dl_earliest`]);
//! - whether a task **preempts the running one** ([`PushClass::preempts_curr`]):
//!   then push reschedules its own CPU instead of moving it, and pull leaves
//!   it where it is (it is about to run there). RT compares with the
//!   running task's rank (a fair task or idle counts 0, a deadline task
//!   100); DL with the running ready deadline task's deadline, or the
//!   serving fair server's, and any deadline task preempts a lower class;
//! - how the target CPU is chosen ([`PushClass::fit`]): RT's
//!   `find_lowest_rq` takes the lowest published rank below the task's, an
//!   idle CPU first; DL's `find_later_rq` takes a CPU with no ready
//!   deadline task (an idle one first), else the latest earliest deadline
//!   that is later than the task's. RT's push uses the generic scan
//!   ([`Scheduler::find_target_rq`]); DL overrides [`PushClass::push_target`]
//!   to add capacity fitness and the topology order, for which it copies
//!   the task's runtime and relative deadline ([`PushClass::Need`]) out
//!   under the source runqueue's lock;
//! - the task filter (`rt_migratable`, `dl_migratable`: a throttled
//!   deadline task never moves), its pushable scan, and its counters.
//!
//! Each class is a zero-sized type whose methods the generic functions
//! call statically: one monomorphized copy per class, as if written twice,
//! no `dyn`, nothing allocated.
//!
//! Moves take the two runqueues with [`Scheduler::double_rq_lock`] (CPU
//! order, as the load balancer does), recheck under the locks what the
//! lock-free summaries suggested, and go through `detach_task` /
//! `attach_task` and [`Platform::set_task_cpu`] ([`Scheduler::move_queued`]).

use super::{CpuSummary, Platform, Scheduler};
use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::rq::{Resched, Rq, RqStats};
use crate::task::{SchedTask, TaskId, TaskState};

/// What one scheduling class gives the shared push/pull engine (see the
/// module docs). Implemented by zero-sized types, called statically.
pub(super) trait PushClass {
    /// What the class orders its tasks by (RT priority, absolute deadline).
    type Key: Copy + PartialEq;
    /// The order of candidate target CPUs: smaller is better.
    type Fit: Copy + PartialOrd;
    /// What the class's push target search needs of the task besides its
    /// key, copied out under the runqueue lock (deadline: its runtime and
    /// relative deadline, for capacity fitness; RT: nothing).
    type Need: Copy + Default;
    /// The key of "nothing of the class" in the summaries and runqueues.
    const NONE: Self::Key;

    /// The class's overloaded CPUs as last published (`rd->rto_count`,
    /// `rd->dlo_count`).
    fn nr_overloaded<P: Platform>(s: &Scheduler<P>) -> u32;
    /// A CPU's published overload key: its next task to push, or
    /// [`Self::NONE`] while it is not overloaded.
    fn summary_next(s: &CpuSummary) -> Self::Key;
    /// A CPU's published highest key (cpupri, cpudl).
    fn summary_highest(s: &CpuSummary) -> Self::Key;
    /// The runqueue's overload key, under its lock.
    fn overload_key(rq: &Rq) -> Self::Key;
    /// The runqueue's highest key, running or queued, under its lock.
    fn rq_highest(rq: &Rq) -> Self::Key;
    /// May the task be pushed or pulled?
    fn migratable(t: &SchedTask) -> bool;
    /// The queued, not running task that push would move first and that
    /// `ok` accepts.
    fn pushable(rq: &Rq, ok: impl Fn(&SchedTask) -> bool) -> Option<TaskId>;
    /// The task's key (called only on a task [`Self::migratable`] accepts,
    /// or to compare with a key one had).
    fn key(t: &SchedTask) -> Self::Key;
    /// Would a task of `key` run before everything of the class on a
    /// runqueue whose highest key is `highest` ([`Self::NONE`]: none)?
    fn beats(key: Self::Key, highest: Self::Key) -> bool;
    /// Would a task of `key` preempt what runs on `rq`?
    fn preempts_curr(rq: &Rq, key: Self::Key) -> bool;
    /// How well a CPU whose published highest key is `highest` takes a task
    /// of `key` (smaller is better), `None` if it would not run it at once;
    /// `idle` says whether the CPU is idle.
    fn fit(highest: Self::Key, key: Self::Key, idle: impl FnOnce() -> bool) -> Option<Self::Fit>;
    /// What [`Self::push_target`] needs of `t` besides its key.
    #[inline]
    fn need(_t: &SchedTask) -> Self::Need {
        Self::Need::default()
    }
    /// The CPU a push from `cpu` sends a task of `key` allowed on `mask` to
    /// (`find_lowest_rq` / `find_later_rq`); `this_cpu` is the caller's CPU.
    /// By default the generic [`Scheduler::find_target_rq`].
    #[inline]
    fn push_target<P: Platform>(
        s: &Scheduler<P>,
        key: Self::Key,
        _need: Self::Need,
        mask: &CpuMask,
        cpu: CpuId,
        _this_cpu: CpuId,
    ) -> Option<CpuId>
    where
        Self: Sized,
    {
        s.find_target_rq::<Self>(key, mask, cpu)
    }
    /// The counter of tasks pushed from a runqueue.
    fn nr_pushed(stats: &mut RqStats) -> &mut u64;
    /// The counter of tasks pulled to a runqueue.
    fn nr_pulled(stats: &mut RqStats) -> &mut u64;
}

impl<P: Platform> Scheduler<P> {
    /// Whether `cpu`'s summary says it is overloaded in class `C` (one
    /// relaxed load).
    #[inline]
    pub(super) fn overloaded<C: PushClass>(&self, cpu: CpuId) -> bool {
        C::summary_next(&self.slots[cpu.index()].summary) != C::NONE
    }

    /// Pushes from `cpu` if its summary says it is overloaded in class `C`
    /// (one relaxed load otherwise). `this_cpu` is the caller's CPU.
    #[inline]
    pub(super) fn push_if_overloaded_in<C: PushClass>(&self, cpu: CpuId, this_cpu: CpuId) {
        if self.overloaded::<C>(cpu) {
            self.push_tasks::<C>(cpu, this_cpu);
        }
    }

    /// Class `C`'s balance of `cpu`: a push if it is overloaded, then a pull
    /// if another CPU is. One relaxed load while no CPU is overloaded in
    /// `C`. Returns the tasks (pushed, pulled).
    pub(super) fn balance_class<C: PushClass>(&self, cpu: CpuId, this_cpu: CpuId) -> (u32, u32) {
        if C::nr_overloaded(self) == 0 {
            return (0, 0);
        }
        let pushed = if self.overloaded::<C>(cpu) {
            self.push_tasks::<C>(cpu, this_cpu)
        } else {
            0
        };
        (pushed, self.pull_tasks::<C>(cpu))
    }

    /// `push_rt_tasks` / `push_dl_tasks`: pushes from `cpu` until it is no
    /// longer overloaded or no CPU takes its next task (at most one task per
    /// CPU). Returns the tasks moved.
    pub(super) fn push_tasks<C: PushClass>(&self, cpu: CpuId, this_cpu: CpuId) -> u32 {
        let mut n = 0;
        while (n as usize) < self.nr_cpus() && self.push_task::<C>(cpu, this_cpu) {
            n += 1;
        }
        n
    }

    /// `push_rt_task` / `push_dl_task`: moves `cpu`'s first queued pushable
    /// task to the CPU [`PushClass::push_target`] finds; reschedules `cpu`
    /// instead if that task preempts what runs there. False when nothing
    /// moved.
    fn push_task<C: PushClass>(&self, cpu: CpuId, this_cpu: CpuId) -> bool {
        let (id, key, need, mask) = {
            let mut rq = self.cpu_rq(cpu);
            if C::overload_key(&rq) == C::NONE {
                return false;
            }
            let Some(id) = C::pushable(&rq, C::migratable) else {
                return false;
            };
            let Some(t) = rq.task(id) else { return false };
            let (key, need, mask) = (C::key(t), C::need(t), t.cpus_allowed);
            if C::preempts_curr(&rq, key) {
                // It should run here, not elsewhere (Linux: resched_curr).
                let r = rq.resched_curr(Resched::Now);
                drop(rq);
                self.kick_if_needed(cpu, this_cpu, r);
                return false;
            }
            (id, key, need, mask)
        };
        let Some(target) = C::push_target(self, key, need, &mask, cpu, this_cpu) else {
            return false;
        };
        self.move_pushable::<C>(id, key, cpu, target, true)
    }

    /// `find_lowest_rq` / `find_later_rq` over the published summaries
    /// (cpupri, cpudl): the allowed active CPU other than `cpu` with the
    /// best [`PushClass::fit`] for a task of `key`, the first after `cpu`
    /// on ties.
    pub(super) fn find_target_rq<C: PushClass>(
        &self,
        key: C::Key,
        mask: &CpuMask,
        cpu: CpuId,
    ) -> Option<CpuId> {
        let online = self.active_mask();
        let mut best: Option<(CpuId, C::Fit)> = None;
        for c in mask.and(&online).cpus_wrap(cpu.index() + 1) {
            if c == cpu || c.index() >= self.nr_cpus() {
                continue;
            }
            let highest = C::summary_highest(&self.slots[c.index()].summary);
            let Some(fit) = C::fit(highest, key, || self.idle(c)) else {
                continue;
            };
            if best.is_none_or(|(_, b)| fit < b) {
                best = Some((c, fit));
            }
        }
        best.map(|(c, _)| c)
    }

    /// `pull_rt_task` / `pull_dl_task`: takes to `cpu`, from each CPU
    /// overloaded in class `C`, its first queued task allowed here that
    /// beats everything of the class on `cpu` and does not preempt the task
    /// running where it is. Returns the tasks moved.
    pub(super) fn pull_tasks<C: PushClass>(&self, cpu: CpuId) -> u32 {
        if C::nr_overloaded(self) == 0 || !self.cpu_active(cpu) {
            return 0;
        }
        let mut n = 0;
        let online = self.topology.online_mask();
        for src in online.cpus_wrap(cpu.index() + 1) {
            if src == cpu || src.index() >= self.nr_cpus() {
                continue;
            }
            let next = C::summary_next(&self.slots[src.index()].summary);
            let mine = C::summary_highest(&self.slots[cpu.index()].summary);
            if next == C::NONE || !C::beats(next, mine) {
                continue;
            }
            let pick = {
                let mut locked = self.double_rq_lock(cpu, src);
                let (this_rq, src_rq) = locked.pair();
                let mine = C::rq_highest(this_rq);
                C::pushable(src_rq, |t| {
                    C::migratable(t) && t.cpus_allowed.has(cpu) && C::beats(C::key(t), mine)
                })
                .and_then(|id| Some((id, C::key(src_rq.task(id)?))))
                // One that preempts what runs there is about to run there.
                .filter(|&(_, key)| !C::preempts_curr(src_rq, key))
            };
            if let Some((id, key)) = pick {
                n += self.move_pushable::<C>(id, key, src, cpu, false) as u32;
            }
        }
        n
    }

    /// Moves queued task `id` of key `key` from `from` to `to` under both
    /// locks, if it is still queued there with that key, not running,
    /// migratable, allowed on `to`, and beats everything of its class on
    /// `to`; counts a push on `from` or a pull on `to`, and kicks `to` if it
    /// must switch now.
    fn move_pushable<C: PushClass>(
        &self,
        id: TaskId,
        key: C::Key,
        from: CpuId,
        to: CpuId,
        push: bool,
    ) -> bool {
        self.move_queued(
            id,
            from,
            to,
            |src, dst| {
                src.task(id)
                    .is_some_and(|t| C::migratable(t) && C::key(t) == key && t.cpus_allowed.has(to))
                    && C::beats(key, C::rq_highest(dst))
            },
            |src, dst| {
                if push {
                    *C::nr_pushed(&mut src.stats) += 1;
                } else {
                    *C::nr_pulled(&mut dst.stats) += 1;
                }
            },
        )
    }

    /// Moves task `id`, queued and not running on `from`, to `to` under both
    /// locks if `still(from's rq, to's rq)` holds there (what the lock-free
    /// summaries suggested, rechecked); `count` records the move on the two
    /// runqueues. Kicks `to` if it must switch now, even when it is the
    /// caller's own CPU: a wakeup's result does not carry a request for the
    /// waker's CPU, and Linux's `resched_curr` on the local CPU sets the
    /// flag that the next preemption point reads.
    pub(super) fn move_queued(
        &self,
        id: TaskId,
        from: CpuId,
        to: CpuId,
        still: impl FnOnce(&Rq, &Rq) -> bool,
        count: impl FnOnce(&mut Rq, &mut Rq),
    ) -> bool {
        let d = {
            let mut locked = self.double_rq_lock(from, to);
            let (src, dst) = locked.pair();
            let queued = src.curr() != Some(id)
                && src.task(id).is_some_and(|t| t.state == TaskState::Queued);
            if !queued || !still(src, dst) {
                return false;
            }
            let now = self.platform.now_ns();
            src.update_rq_clock(now);
            dst.update_rq_clock(now);
            let Ok(t) = src.detach_task(id) else {
                return false;
            };
            let d = dst.attach_task(id, t);
            self.placed(id, to);
            count(src, dst);
            d
        };
        // Kicked even when it is the caller's own CPU (see above), so not
        // through `kick_if_needed`.
        if d.resched == Resched::Now {
            self.platform.send_resched_ipi(to);
        }
        self.recheck_active(to);
        true
    }
}
