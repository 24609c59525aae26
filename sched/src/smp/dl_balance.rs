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

use super::{Platform, Scheduler};
use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::rq::{dl_migratable, Resched};
use crate::task::{SchedTask, TaskId};

impl<P: Platform> Scheduler<P> {
    /// DL-overloaded CPUs (Linux's `rd->dlo_count`).
    pub fn dl_overloaded_cpus(&self) -> u32 {
        self.dlo_count()
    }

    /// Whether `cpu`'s summary says it is DL-overloaded (one relaxed load).
    #[inline]
    fn dl_overloaded(&self, cpu: CpuId) -> bool {
        self.slots[cpu.index()]
            .summary
            .dl_next
            .load(Ordering::Relaxed)
            != 0
    }

    /// Pushes from `cpu` if its summary says it is DL-overloaded (one
    /// relaxed load otherwise). `this_cpu` is the caller's CPU.
    #[inline]
    pub(crate) fn push_dl_if_overloaded(&self, cpu: CpuId, this_cpu: CpuId) {
        if self.dl_overloaded(cpu) {
            self.push_dl_tasks(cpu, this_cpu);
        }
    }

    /// The deadline balance of `cpu` after it switched or a task's
    /// parameters changed there: a push if it is DL-overloaded, then a pull
    /// if another CPU is. Costs one relaxed load while no CPU is
    /// DL-overloaded. `this_cpu` is the caller's CPU. Returns the tasks
    /// (pushed, pulled).
    pub fn balance_dl(&self, cpu: CpuId, this_cpu: CpuId) -> (u32, u32) {
        if self.dlo_count() == 0 {
            return (0, 0);
        }
        let pushed = if self.dl_overloaded(cpu) {
            self.push_dl_tasks(cpu, this_cpu)
        } else {
            0
        };
        (pushed, self.pull_dl_task(cpu))
    }

    /// `push_dl_tasks`: pushes from `cpu` until it is no longer
    /// DL-overloaded or no CPU takes its next task (at most one task per
    /// CPU). Returns the tasks moved.
    pub fn push_dl_tasks(&self, cpu: CpuId, this_cpu: CpuId) -> u32 {
        let mut n = 0;
        while (n as usize) < self.nr_cpus() && self.push_dl_task(cpu, this_cpu) {
            n += 1;
        }
        n
    }

    /// `push_dl_task`: moves `cpu`'s earliest-deadline queued pushable task
    /// to a CPU with no deadline task or a later one. False when nothing
    /// moved.
    fn push_dl_task(&self, cpu: CpuId, this_cpu: CpuId) -> bool {
        let (id, deadline, mask) = {
            let mut rq = self.cpu_rq(cpu);
            if rq.dl_overload_deadline() == 0 {
                return false;
            }
            let Some(id) = rq.dl_pushable(dl_migratable) else {
                return false;
            };
            let Some(t) = rq.task(id) else { return false };
            let (deadline, mask) = (t.dl.deadline, t.cpus_allowed);
            if rq.dl_curr_deadline().is_none_or(|c| deadline < c) {
                // It should run here, not elsewhere (Linux: resched_curr).
                let r = rq.resched_curr(Resched::Now);
                drop(rq);
                self.kick_if_needed(cpu, this_cpu, r);
                return false;
            }
            (id, deadline, mask)
        };
        let Some(target) = self.find_later_rq(deadline, &mask, cpu) else {
            return false;
        };
        self.move_dl(id, deadline, cpu, target, true)
    }

    /// `find_later_rq` over the published earliest deadlines (cpudl): the
    /// allowed active CPU other than `cpu` with no ready deadline task (an
    /// idle one first), else the one whose earliest deadline is the latest
    /// and later than `deadline`; the first after `cpu` on ties.
    fn find_later_rq(&self, deadline: u64, mask: &CpuMask, cpu: CpuId) -> Option<CpuId> {
        let online = self.active_mask();
        // (has a deadline task, busy, earlier is worse): smaller is better.
        let mut best: Option<(CpuId, (bool, bool, u64))> = None;
        for c in mask.and(&online).cpus_wrap(cpu.index() + 1) {
            if c == cpu || c.index() >= self.nr_cpus() {
                continue;
            }
            let e = self.slots[c.index()]
                .summary
                .dl_earliest
                .load(Ordering::Relaxed);
            if e != 0 && e <= deadline {
                continue;
            }
            let key = (e != 0, !self.idle(c), u64::MAX - e);
            if best.is_none_or(|(_, k)| key < k) {
                best = Some((c, key));
            }
        }
        best.map(|(c, _)| c)
    }

    /// `select_task_rq_dl` for a wakeup: a deadline task wakes on `cpu` (its
    /// previous CPU, or its first allowed one) unless a ready deadline task
    /// there has a deadline no later than the wakee's, so that it could not
    /// run at once; then on the CPU `find_later_rq` finds, if any. As in
    /// Linux, the wakee's deadline is the one it slept with (the CBS wakeup
    /// rule may renew it at the enqueue), and the CPU's deadline is the
    /// published earliest one (Linux reads the running task's).
    pub(super) fn select_task_rq_dl(&self, t: &SchedTask, cpu: CpuId) -> CpuId {
        let earliest = self.slots[cpu.index()]
            .summary
            .dl_earliest
            .load(Ordering::Relaxed);
        if earliest == 0 || t.dl.deadline < earliest || t.cpus_allowed.weight() < 2 {
            return cpu;
        }
        let mask = self.allowed_mask(t);
        self.find_later_rq(t.dl.deadline, &mask, cpu).unwrap_or(cpu)
    }

    /// `pull_dl_task`: takes to `cpu`, from each DL-overloaded CPU, its
    /// earliest queued task allowed here whose deadline is earlier than
    /// everything ready on `cpu` and not earlier than the running task's
    /// where it is. Returns the tasks moved.
    pub fn pull_dl_task(&self, cpu: CpuId) -> u32 {
        if self.dlo_count() == 0 || !self.cpu_active(cpu) {
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
                .dl_next
                .load(Ordering::Relaxed);
            let mine = self.slots[cpu.index()]
                .summary
                .dl_earliest
                .load(Ordering::Relaxed);
            if next == 0 || (mine != 0 && next >= mine) {
                continue;
            }
            let pick = {
                let mut locked = self.double_rq_lock(cpu, src);
                let (this_rq, src_rq) = locked.pair();
                let mine = this_rq.dl_earliest();
                let src_curr = src_rq.dl_curr_deadline();
                src_rq
                    .dl_pushable(|t| {
                        dl_migratable(t)
                            && t.cpus_allowed.has(cpu)
                            && (mine == 0 || t.dl.deadline < mine)
                    })
                    .and_then(|id| Some((id, src_rq.task(id)?.dl.deadline)))
                    // One earlier than what runs there is about to run there.
                    .filter(|&(_, d)| src_curr.is_some_and(|c| d >= c))
            };
            if let Some((id, d)) = pick {
                n += self.move_dl(id, d, src, cpu, false) as u32;
            }
        }
        n
    }

    /// Moves queued deadline task `id` of absolute deadline `deadline` from
    /// `from` to `to` under both locks, if it is still queued and ready
    /// there with that deadline, not running, allowed on `to`, and earlier
    /// than everything ready on `to`; counts a push on `from` or a pull on
    /// `to`, and kicks `to` if it must switch now.
    fn move_dl(&self, id: TaskId, deadline: u64, from: CpuId, to: CpuId, push: bool) -> bool {
        self.move_queued(
            id,
            from,
            to,
            |src, dst| {
                let later = dst.dl_earliest();
                src.task(id).is_some_and(|t| {
                    dl_migratable(t) && t.dl.deadline == deadline && t.cpus_allowed.has(to)
                }) && (later == 0 || later > deadline)
            },
            |src, dst| {
                if push {
                    src.stats.nr_dl_push += 1;
                } else {
                    dst.stats.nr_dl_pull += 1;
                }
            },
        )
    }
}
