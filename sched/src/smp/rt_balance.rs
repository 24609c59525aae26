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
//! Linux does without it), the deadline class's push/pull, capacity
//! fitness, and Linux's retry when the task to push changed while the locks
//! were taken (we stop; the next switch tries again).

use core::sync::atomic::Ordering;

use super::{rt_rank, Platform, Scheduler};
use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::rq::{rt_migratable, Resched, Rq};
use crate::task::{TaskId, TaskState};

impl<P: Platform> Scheduler<P> {
    /// RT-overloaded CPUs (Linux's `rd->rto_count`).
    pub fn rt_overloaded_cpus(&self) -> u32 {
        self.rto_count()
    }

    /// Whether `cpu`'s summary says it is RT-overloaded (one relaxed load).
    #[inline]
    fn rt_overloaded(&self, cpu: CpuId) -> bool {
        self.slots[cpu.index()]
            .summary
            .rt_next_rank
            .load(Ordering::Relaxed)
            != 0
    }

    /// Pushes from `cpu` if its summary says it is RT-overloaded (one
    /// relaxed load otherwise). `this_cpu` is the caller's CPU.
    #[inline]
    pub(crate) fn push_rt_if_overloaded(&self, cpu: CpuId, this_cpu: CpuId) {
        if self.rt_overloaded(cpu) {
            self.push_rt_tasks(cpu, this_cpu);
        }
    }

    /// The RT balance of `cpu` after it switched or its running task's
    /// priority changed, or when the embedder's reschedule IPI lands there:
    /// a push if it is RT-overloaded, then a pull if another CPU is. Costs
    /// one relaxed load while no CPU is RT-overloaded. `this_cpu` is the
    /// caller's CPU. Returns the tasks (pushed, pulled).
    pub fn balance_rt(&self, cpu: CpuId, this_cpu: CpuId) -> (u32, u32) {
        if self.rto_count() == 0 {
            return (0, 0);
        }
        let pushed = if self.rt_overloaded(cpu) {
            self.push_rt_tasks(cpu, this_cpu)
        } else {
            0
        };
        (pushed, self.pull_rt_task(cpu))
    }

    /// `push_rt_tasks`: pushes from `cpu` until it is no longer RT-overloaded
    /// or no CPU takes its next task (at most one task per CPU). Returns the
    /// tasks moved.
    pub fn push_rt_tasks(&self, cpu: CpuId, this_cpu: CpuId) -> u32 {
        let mut n = 0;
        while (n as usize) < self.nr_cpus() && self.push_rt_task(cpu, this_cpu) {
            n += 1;
        }
        n
    }

    /// `push_rt_task`: moves `cpu`'s highest queued pushable RT task to the
    /// lowest-ranked CPU that would run it at once. False when nothing moved.
    fn push_rt_task(&self, cpu: CpuId, this_cpu: CpuId) -> bool {
        let (id, rank, mask) = {
            let mut rq = self.cpu_rq(cpu);
            if rq.rt_overload_rank() == 0 {
                return false;
            }
            let Some(id) = rq.rt_pushable(rt_migratable) else {
                return false;
            };
            let Some(t) = rq.task(id) else { return false };
            let (rank, mask) = (rt_rank(t), t.cpus_allowed);
            let curr_rank = rq.curr().and_then(|c| rq.task(c)).map_or(0, rt_rank);
            if rank > curr_rank {
                // It should run here, not elsewhere (Linux: resched_curr).
                let r = rq.resched_curr(Resched::Now);
                drop(rq);
                self.kick_if_needed(cpu, this_cpu, r);
                return false;
            }
            (id, rank, mask)
        };
        let Some(target) = self.find_lowest_rq(rank, &mask, cpu) else {
            return false;
        };
        self.move_rt(id, rank, cpu, target, true)
    }

    /// `find_lowest_rq` over the published ranks (cpupri): the allowed CPU
    /// other than `cpu` whose highest RT rank is the lowest and below
    /// `rank`, an idle one before a busy one, the first after `cpu` on ties.
    fn find_lowest_rq(&self, rank: u8, mask: &CpuMask, cpu: CpuId) -> Option<CpuId> {
        let online = self.active_mask();
        let mut best: Option<(CpuId, (u8, bool))> = None;
        for c in mask.and(&online).cpus_wrap(cpu.index() + 1) {
            if c == cpu || c.index() >= self.nr_cpus() {
                continue;
            }
            let key = (
                self.slots[c.index()]
                    .summary
                    .rt_rank
                    .load(Ordering::Relaxed),
                !self.idle(c),
            );
            if key.0 < rank && best.is_none_or(|(_, k)| key < k) {
                best = Some((c, key));
            }
        }
        best.map(|(c, _)| c)
    }

    /// `pull_rt_task`: takes to `cpu`, from each RT-overloaded CPU, its
    /// highest queued task allowed here that outranks everything on `cpu`
    /// and does not outrank the task running where it is. Returns the tasks
    /// moved.
    pub fn pull_rt_task(&self, cpu: CpuId) -> u32 {
        if self.rto_count() == 0 || !self.cpu_active(cpu) {
            return 0;
        }
        let mut n = 0;
        let online = self.topology.online_mask();
        for src in online.cpus_wrap(cpu.index() + 1) {
            if src == cpu || src.index() >= self.nr_cpus() {
                continue;
            }
            let next = self.slots[src.index()]
                .summary
                .rt_next_rank
                .load(Ordering::Relaxed);
            if next
                <= self.slots[cpu.index()]
                    .summary
                    .rt_rank
                    .load(Ordering::Relaxed)
            {
                continue;
            }
            let pick = {
                let mut locked = self.double_rq_lock(cpu, src);
                let (this_rq, src_rq) = locked.pair();
                let mine = this_rq.rt_highest_rank();
                let src_curr = src_rq
                    .curr()
                    .and_then(|c| src_rq.task(c))
                    .map_or(0, rt_rank);
                src_rq
                    .rt_pushable(|t| {
                        rt_migratable(t) && t.cpus_allowed.has(cpu) && t.params.rt_priority > mine
                    })
                    .and_then(|id| Some((id, rt_rank(src_rq.task(id)?))))
                    // One that outranks what runs there is about to run there.
                    .filter(|&(_, rank)| rank <= src_curr)
            };
            if let Some((id, rank)) = pick {
                n += self.move_rt(id, rank, src, cpu, false) as u32;
            }
        }
        n
    }

    /// Moves queued RT task `id` of rank `rank` from `from` to `to` under
    /// both locks, if it is still queued there, not running, allowed on
    /// `to`, and outranks everything on `to`; counts a push on `from` or a
    /// pull on `to`, and kicks `to` if it must switch now.
    fn move_rt(&self, id: TaskId, rank: u8, from: CpuId, to: CpuId, push: bool) -> bool {
        self.move_queued(
            id,
            from,
            to,
            |src, dst| {
                src.task(id).is_some_and(|t| {
                    rt_rank(t) == rank && rt_migratable(t) && t.cpus_allowed.has(to)
                }) && dst.rt_highest_rank() < rank
            },
            |src, dst| {
                if push {
                    src.stats.nr_rt_push += 1;
                } else {
                    dst.stats.nr_rt_pull += 1;
                }
            },
        )
    }

    /// Moves task `id`, queued and not running on `from`, to `to` under both
    /// locks if `still(from's rq, to's rq)` holds there (what the lock-free
    /// summaries suggested, rechecked); `count` records the move on the two
    /// runqueues. Kicks `to` if it must switch now. RT and deadline push
    /// and pull ([`super::dl_balance`]) move tasks through it.
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
        // Kicked even when it is the caller's own CPU (see the module docs),
        // so not through `kick_if_needed`.
        if d.resched == Resched::Now {
            self.platform.send_resched_ipi(to);
        }
        self.recheck_active(to);
        true
    }
}
