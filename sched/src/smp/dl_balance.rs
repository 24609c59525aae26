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
//! - **Overload.** A runqueue with a ready deadline task queued (not
//!   running) and allowed on another CPU, behind another deadline task or
//!   behind the serving fair server, is DL-overloaded (Linux sets
//!   `dl_rq->overloaded` for any pushable task); its summary's [`super::CpuSummary::dl_next`] holds that
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
//! Target choice (`find_later_rq` over `cpudl_find`), in this order:
//! - **Later CPUs.** A CPU with no ready deadline task (cpudl's free CPUs;
//!   an idle one first, our addition), else one whose earliest deadline is
//!   later than the task's, the latest first.
//! - **Capacity** (`cpudl_find`, `dl_task_fits_capacity`), on machines of
//!   unequal CPUs only: among the free CPUs, only those the task fits,
//!   whose capacity gives it its runtime within its relative deadline
//!   (`dl_deadline * capacity / 1024 >= dl_runtime`, [`dl_fits_capacity`]);
//!   if none fits, the free CPU of largest capacity (the task's own CPU
//!   among equals, where it then stays). The task's own CPU, when free,
//!   counts among the free CPUs: a wakee that does not fit it stays there
//!   if no other CPU is free. As in Linux, a CPU that holds a deadline task
//!   is not sized (cpudl keeps only the latest one).
//! - **Topology** among the CPUs equal so far (`find_later_rq`): the task's
//!   own CPU; then, walking the task's CPU's sched domains from the
//!   smallest (every level has `SD_WAKE_AFFINE` here, as in Linux unless
//!   NUMA distances exceed `node_reclaim_distance`), for the first domain
//!   whose span holds one, the caller's CPU if it is one, else the first
//!   one after the task's CPU; then the caller's CPU; then the first after
//!   the task's CPU. Linux applies this order to all of cpudl's free CPUs;
//!   we apply it only among the equally good ones, so that an idle CPU
//!   still goes before a busy one, and a machine's choice changes only
//!   where topology breaks a tie.
//!
//! Wakeup placement (`select_task_rq_dl`, [`Scheduler::select_task_rq`])
//! uses the same `find_later_rq`: a wakee that could not run at once on its
//! previous CPU (a ready deadline task there is no later), or, on a machine
//! of unequal CPUs, that does not fit it, goes to the CPU found, if any;
//! forks take the fair slow path.
//!
//! The scan is O(CPUs) over the published summaries, plus one mask
//! intersection per sched domain level when several CPUs tie; nothing
//! allocates. Machines of equal CPUs skip the capacity test.
//!
//! The fair server's deadline, while it serves, is a CPU's earliest too
//! ([`Rq::dl_earliest`]): Linux 7.2 queues the serving server in the
//! deadline runqueue's tree like a task, so cpudl holds its deadline (and
//! cpupri marks the CPU above RT); a deferred or throttled server is not
//! seen. So a task whose deadline is later than a serving server's is not
//! pushed or pulled there, and no CPU so served counts as free.
//!
//! Left out: Linux's retry when the task to push changed while the locks
//! were taken (we stop; the next switch tries again), the capacity in
//! admission (`dl_bw_capacity`: [`crate::deadline::DlBandwidth`] counts
//! CPUs, not capacities), and capacity in pull (Linux's `pull_dl_task`
//! does not size the puller either).
use core::sync::atomic::Ordering;

use super::push_pull::PushClass;
use super::{CpuSummary, Platform, Scheduler};
use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::pelt::SCHED_CAPACITY_SHIFT;
use crate::rq::{dl_migratable, Rq, RqStats};
use crate::task::{SchedTask, TaskId};

/// `dl_task_fits_capacity`: does a CPU of `capacity` (1024 the largest)
/// give a task its `dl_runtime_ns` within its relative deadline
/// `dl_deadline_ns` (`cap_scale(dl_deadline, capacity) >= dl_runtime`)?
#[inline]
pub const fn dl_fits_capacity(dl_runtime_ns: u64, dl_deadline_ns: u64, capacity: u32) -> bool {
    (dl_deadline_ns as u128 * capacity as u128) >> SCHED_CAPACITY_SHIFT >= dl_runtime_ns as u128
}

/// What `find_later_rq` needs of a task besides its absolute deadline: its
/// runtime and relative deadline, for [`dl_fits_capacity`].
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct DlNeed {
    dl_runtime_ns: u64,
    dl_deadline_ns: u64,
}

impl DlNeed {
    fn of(t: &SchedTask) -> DlNeed {
        DlNeed {
            dl_runtime_ns: t.params.dl_runtime_ns,
            dl_deadline_ns: t.params.dl_deadline_ns,
        }
    }

    fn fits(self, capacity: u32) -> bool {
        dl_fits_capacity(self.dl_runtime_ns, self.dl_deadline_ns, capacity)
    }
}

/// A candidate's rank in `find_later_rq` (smaller is better): has a ready
/// deadline task; free but the task does not fit it; then for those,
/// capacity (largest first); busy; earlier deadline there is worse.
type LaterRank = (bool, bool, u32, bool, u64);

/// The deadline class in the push/pull engine: keys are absolute deadlines
/// (earlier beats later; 0 is none).
pub(super) struct Dl;

impl PushClass for Dl {
    type Key = u64;
    /// (has a deadline task, busy, earlier is worse): smaller is better.
    type Fit = (bool, bool, u64);
    type Need = DlNeed;
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
    fn need(t: &SchedTask) -> DlNeed {
        DlNeed::of(t)
    }

    /// `find_later_rq` over cpudl (`cpudl_find`), for a push or a wakeup:
    /// the allowed active CPU other than `cpu` (the task's) that would run
    /// a task of absolute deadline `deadline` at once, in the module docs'
    /// order: later CPUs, capacity fitness on machines of unequal CPUs,
    /// then topology from `cpu` and `this_cpu` (the caller's CPU). `None` when there is none,
    /// or when `cpu` itself is free and `cpudl_find` would keep it: it fits
    /// the task, or no other CPU is free, or none fits and it is as large
    /// as any.
    #[inline]
    fn push_target<P: Platform>(
        s: &Scheduler<P>,
        deadline: u64,
        need: DlNeed,
        mask: &CpuMask,
        cpu: CpuId,
        this_cpu: CpuId,
    ) -> Option<CpuId> {
        let asym = s.topology.has_asym_capacity();
        let allowed = mask.and(&s.active_mask());
        let mut best: Option<LaterRank> = None;
        // The CPUs of rank `best`: what the topology order chooses among.
        let mut ties = CpuMask::new();
        for c in allowed.cpus_wrap(cpu.index() + 1) {
            if c == cpu || c.index() >= s.nr_cpus() {
                continue;
            }
            let earliest = Dl::summary_highest(&s.slots[c.index()].summary);
            let Some((has_dl, busy, later)) = Dl::fit(earliest, deadline, || s.idle(c)) else {
                continue;
            };
            // cpudl_find sizes only the free CPUs.
            let (misfit, smaller) = if asym && !has_dl {
                let cap = s.topology.capacity_of(c);
                if need.fits(cap) {
                    (false, 0)
                } else {
                    (true, u32::MAX - cap)
                }
            } else {
                (false, 0)
            };
            let rank = (has_dl, misfit, smaller, busy, later);
            match best {
                Some(b) if rank > b => {}
                Some(b) if rank == b => ties.add(c),
                _ => {
                    best = Some(rank);
                    ties = CpuMask::of(c);
                }
            }
        }
        // The task's own CPU, if free, is one of cpudl's free CPUs too: it
        // stays there if it fits it (`task_cpu` comes first), or if no
        // other CPU is free, or if none fits and it is as large as any.
        if allowed.has(cpu) && Dl::summary_highest(&s.slots[cpu.index()].summary) == 0 {
            let cap = s.topology.capacity_of(cpu);
            let stays = match best {
                None | Some((true, ..)) => true,
                Some((false, misfit, smaller, ..)) => {
                    !asym || need.fits(cap) || (misfit && cap >= u32::MAX - smaller)
                }
            };
            if stays {
                return None;
            }
        }
        best?;
        if ties.weight() == 1 {
            return ties.first_cpu();
        }
        let this_ok = ties.has(this_cpu);
        for sd in s.slots[cpu.index()].doms.as_slice() {
            if this_ok && sd.span.has(this_cpu) {
                return Some(this_cpu);
            }
            if let Some(c) = sd.span.and(&ties).cpus_wrap(cpu.index() + 1).next() {
                return Some(c);
            }
        }
        if this_ok {
            return Some(this_cpu);
        }
        ties.cpus_wrap(cpu.index() + 1).next()
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
    /// relaxed load otherwise). `this_cpu` is the caller's CPU. Call it with
    /// no runqueue lock held after a tick or a one-shot timer that may have
    /// replenished a deadline task behind an earlier deadline (Linux's
    /// `dl_task_timer` ends with `__push_dl_task`).
    #[inline]
    pub fn push_dl_if_overloaded(&self, cpu: CpuId, this_cpu: CpuId) {
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
    /// previous CPU, or its first allowed one) unless a deadline task runs
    /// there with a deadline no later than the wakee's, so that it could not
    /// run at once, or (on a machine of unequal CPUs) the wakee does not fit
    /// `cpu` ([`dl_fits_capacity`]); then on the CPU `find_later_rq`
    /// finds, if any. `this_cpu` is the waker's CPU. As in Linux, the
    /// wakee's deadline is the one it slept with (the CBS wakeup rule may
    /// renew it at the enqueue), and the CPU's deadline is the published
    /// earliest one (Linux reads the running task's; the two agree while a
    /// deadline task runs). Linux looks further only when the running task
    /// is a deadline task (`dl_task(donor)`): a CPU whose fair server serves
    /// a fair task keeps the wakee, though the server's deadline is in
    /// cpudl.
    pub(super) fn select_task_rq_dl(&self, t: &SchedTask, cpu: CpuId, this_cpu: CpuId) -> CpuId {
        if t.cpus_allowed.weight() < 2 {
            return cpu;
        }
        let summary = &self.slots[cpu.index()].summary;
        let earliest = Dl::summary_highest(summary);
        let curr_dl = summary.curr_rt_rank.load(Ordering::Relaxed) == 100;
        let runs_at_once = !curr_dl || earliest == 0 || t.dl.deadline < earliest;
        let misfit = self.topology.has_asym_capacity()
            && !DlNeed::of(t).fits(self.topology.capacity_of(cpu));
        if runs_at_once && !misfit {
            return cpu;
        }
        let mask = self.allowed_mask(t);
        Dl::push_target(self, t.dl.deadline, DlNeed::of(t), &mask, cpu, this_cpu).unwrap_or(cpu)
    }

    /// `pull_dl_task`: takes to `cpu`, from each DL-overloaded CPU, its
    /// earliest queued task allowed here whose deadline is earlier than
    /// everything ready on `cpu` and not earlier than the running task's
    /// where it is. Returns the tasks moved.
    pub fn pull_dl_task(&self, cpu: CpuId) -> u32 {
        self.pull_tasks::<Dl>(cpu)
    }
}
