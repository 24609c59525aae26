//! Capacity-aware placement and misfit balancing on machines whose CPUs
//! differ in capacity (big.LITTLE; [`crate::Topology::with_capacities`]),
//! as Linux's kernel/sched/fair.c does it:
//!
//! - Fitness (`fits_capacity`, `util_fits_cpu`, `task_fits_cpu`): a
//!   utilization fits a CPU when it leaves it a ~20% margin,
//!   `util * 1280 < capacity * 1024`. The task is sized by `task_util_est`
//!   (the larger of its PELT `util_avg` and its `util_est`). No uclamp: a
//!   task has no utilization clamps here, so `util_fits_cpu` is the
//!   margin test alone (Linux's with uclamp unused) and never answers -1.
//!   The capacity is the CPU's own ([`crate::Topology::capacity_of`],
//!   `arch_scale_cpu_capacity`): no RT, IRQ or thermal pressure is taken
//!   off (Linux's `capacity_of`).
//! - Wakeups (`select_idle_sibling`'s `sched_asym_cpucap_active()`
//!   branches): the target and the previous CPU are taken only if the task
//!   fits them (`asym_fits_cpu`); then, if the target has an
//!   `sd_asym_cpucapacity` domain, `select_idle_capacity` scans its span
//!   from the target for an idle CPU the task fits, else takes the idle one
//!   of most capacity (ties: the first met), else the target. The LLC scan
//!   is not used then. A machine of equal CPUs never enters this file.
//! - Misfit (`update_misfit_status`): at the tick and after each switch, a
//!   running fair task that fits neither its CPU nor could do better (it
//!   may run on a CPU of more capacity) marks the CPU misfit with its load
//!   (`rq->misfit_task_load`, here [`super::CpuSummary::misfit_task_load`],
//!   at least 1). A busy CPU's balancing tick then kicks the idle load
//!   balancer (`nohz_kick_wanted`, `nohz_balancer_kick`'s
//!   `check_misfit_status`): the first tickless idle CPU, whatever its
//!   capacity (`find_new_ilb`), whose pass balances for every tickless
//!   CPU, so a big one among them pulls the misfit.
//! - Balancing (`update_sg_lb_stats`, `group_classify`,
//!   `update_sd_pick_busiest`, `calculate_imbalance`, `find_busiest_queue`,
//!   `detach_tasks` with `migrate_misfit`, `need_active_balance`): in a
//!   domain with `SD_ASYM_CPUCAPACITY`, a group none of whose CPUs is
//!   overloaded but one of which holds a misfit task is of type
//!   `group_misfit_task`; a CPU whose local group has spare capacity and
//!   whose own capacity is more than ~5% above the group's largest
//!   (`capacity_greater`) takes one misfit task from the group's CPU of
//!   largest misfit load: a queued one that does not fit there, else the
//!   running one by active balance (its CPU is asked to switch, and the
//!   switch hands the task to the puller, as Linux's stopper does with
//!   `active_load_balance_cpu_stop`). A group with more tasks than CPUs
//!   is balanced by task counts as before (`group_overloaded` ranks above
//!   `group_misfit_task`).
//!
//! - The utilization these decisions read is capacity-invariant, as
//!   Linux's has been since 23127296889f ("sched/fair: Update scale
//!   invariance of PELT"): each runqueue's PELT clock advances
//!   `capacity / 1024` as fast as its task clock while something runs and
//!   catches up when the CPU goes idle ([`crate::pelt::PeltClock`],
//!   [`Rq::set_cpu_capacity`], which [`Scheduler::with_topology`] calls with
//!   each CPU's capacity). So a given amount of work adds the same
//!   utilization on any CPU: a task that ran 40 ms on a CPU of capacity 512
//!   reads what one that ran 20 ms on a big CPU reads. A task that never
//!   sleeps still reaches 1024 on any CPU (Linux's too: the contributions
//!   are not scaled, the time is), on a CPU of 512 in twice the time; a new
//!   task starts at half its CPU's spare capacity
//!   (`post_init_entity_util_avg`), 256 on an idle CPU of 512, which fits.
//!   Such a CPU-bound task becomes misfit there after ~22 ms of running,
//!   where it was misfit at once before (`sched/tests/pelt_clock.rs`).
//!
//! Left out: energy-aware placement (`find_energy_efficient_cpu`, and the
//! root domain's `overutilized` flag that gates it), uclamp, capacity in
//! fork placement (`find_idlest_group`'s misfit groups), capacity pressure
//! (`check_cpu_capacity`, reduced-capacity misfit on symmetric machines),
//! `sched_idle_cpu`, and frequency invariance (there is no cpufreq:
//! Linux's `arch_scale_freq_capacity` is 1024 here).

use core::sync::atomic::Ordering;

use super::placement::GroupType;
use super::{Platform, Pulled, Scheduler};
use crate::class::SchedClass;
use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::domain::SchedDomain;
use crate::pelt::SCHED_CAPACITY_SCALE;
use crate::rq::{Resched, Rq};
use crate::task::{SchedTask, TaskId, TaskState};

/// `fits_capacity(cap, max)`: does a utilization of `util` fit a CPU of
/// `capacity`, leaving it the ~20% margin Linux wants
/// (`util * 1280 < capacity * 1024`)?
#[inline]
pub const fn fits_capacity(util: u64, capacity: u64) -> bool {
    util.saturating_mul(1280) < capacity.saturating_mul(1024)
}

/// `capacity_greater(cap1, cap2)`: is `a` more than ~5% above `b`
/// (`a * 1024 > b * 1078`)?
#[inline]
pub const fn capacity_greater(a: u64, b: u64) -> bool {
    a.saturating_mul(1024) > b.saturating_mul(1078)
}

impl<P: Platform> Scheduler<P> {
    /// `util_fits_cpu` without uclamp: does `util` fit `cpu`'s capacity
    /// ([`fits_capacity`])?
    #[inline]
    pub fn util_fits_cpu(&self, util: u64, cpu: CpuId) -> bool {
        fits_capacity(util, self.topology.capacity_of(cpu) as u64)
    }

    /// `task_fits_cpu`: does `t`'s `task_util_est` fit `cpu`?
    #[inline]
    pub fn task_fits_cpu(&self, t: &SchedTask, cpu: CpuId) -> bool {
        self.util_fits_cpu(t.se.avg.task_util_est(), cpu)
    }

    /// `cpu`'s misfit load as last set at its tick or switch
    /// (`rq->misfit_task_load`): 0 when its running task fits (or there is
    /// none, or the machine's CPUs are equal).
    pub fn misfit_task_load(&self, cpu: CpuId) -> u64 {
        self.summary(cpu).misfit_task_load.load(Ordering::Relaxed)
    }

    /// `nohz_balancer_kick`'s tests of the busy `cpu` itself, running
    /// `nr_running` tasks: should it kick the idle load balancer? Yes with
    /// two or more tasks here (Linux's first test), and with a misfit
    /// running here (`check_misfit_status`, tested when `cpu` has an
    /// `sd_asym_cpucapacity` domain). Since Linux 6.10 ("sched/fair: Check
    /// if a task has a fitting CPU when updating misfit")
    /// `check_misfit_status` reads `rq->misfit_task_load` alone: whether
    /// some CPU has more capacity for the task is settled when the load is
    /// set (`update_misfit_status` with the task's
    /// `max_allowed_capacity`, here at the tick and each switch); the
    /// older `arch_scale_cpu_capacity(cpu) < rd->max_cpu_capacity ||
    /// check_cpu_capacity(rq, sd)` said the same here, where a misfit is
    /// never marked on a CPU of the largest allowed capacity and no
    /// pressure lowers a capacity. Nothing asks what the kicked CPU
    /// itself is: it balances for every tickless CPU
    /// ([`Self::nohz_idle_balance`]), so a little one can hand the misfit
    /// to a big one. The misfit load is 0 on a machine of equal CPUs, so
    /// there only the first test counts. `check_cpu_capacity`'s own test
    /// (a CFS task on a CPU whose capacity pressure takes more than the
    /// domain's `imbalance_pct` off) never holds here (no RT, IRQ or
    /// thermal pressure), nor the asymmetric-packing one (no domain has
    /// `SD_ASYM_PACKING`).
    #[inline]
    pub fn nohz_kick_wanted(&self, cpu: CpuId, nr_running: u32) -> bool {
        nr_running >= 2 || self.misfit_task_load(cpu) != 0
    }

    /// The CPU `nohz_balancer_kick` kicks as the idle load balancer from
    /// `cpu` (running `nr_running` tasks) at `now_ns`, with `nohz_idle` the
    /// CPUs in tickless idle: none from an idle `cpu` (`rq->idle_balance`:
    /// its own tick balances it) nor before a tickless CPU's periodic
    /// balance is due (`time_before(now, nohz.next_balance)`, which Linux
    /// tests before any reason to kick: a kick then would find nothing due,
    /// [`Self::nohz_next_balance_due`]); then, when
    /// [`Self::nohz_kick_wanted`] or, failing that,
    /// [`Self::nohz_llc_kick_wanted`] holds, [`Self::find_new_ilb`]'s CPU
    /// (`kick_ilb`: one choice, whatever the reason); `None` for no kick.
    /// The flag says which test chose to kick (`true`: the LLC's). The
    /// kernel's tick and the simulator ask this one rule. O(CPUs), no
    /// allocation.
    pub fn nohz_kick_target(
        &self,
        cpu: CpuId,
        nr_running: u32,
        nohz_idle: &CpuMask,
        now_ns: u64,
    ) -> Option<(CpuId, bool)> {
        if self.idle(cpu) || !self.nohz_next_balance_due(nohz_idle, now_ns) {
            return None;
        }
        let llc = if self.nohz_kick_wanted(cpu, nr_running) {
            false
        } else if self.nohz_llc_kick_wanted(cpu, nohz_idle, now_ns) {
            true
        } else {
            return None;
        };
        self.find_new_ilb(cpu, nohz_idle).map(|c| (c, llc))
    }

    /// `find_new_ilb` for a kick from `cpu`: the first CPU of `nohz_idle`
    /// (`nohz.idle_cpus_mask`) in CPU order, not `cpu` itself
    /// (`smp_processor_id()`), that is idle (`idle_cpu`: the mask is
    /// cleared only at a woken CPU's first busy tick). Its capacity is not
    /// asked, nor any asymmetric-packing priority: the kicked CPU balances
    /// on behalf of all of them. Linux also keeps to the housekeeping CPUs
    /// (`HK_TYPE_KERNEL_NOISE`); every CPU is one here (no `nohz_full=`).
    /// O(CPUs), no allocation.
    pub fn find_new_ilb(&self, cpu: CpuId, nohz_idle: &CpuMask) -> Option<CpuId> {
        nohz_idle
            .cpus()
            .take_while(|c| c.index() < self.nr_cpus())
            .find(|&c| c != cpu && self.idle(c))
    }

    /// `nohz_balancer_kick`'s LLC test, for the busy `cpu` whose own tests
    /// ([`Self::nohz_kick_wanted`]) did not hold, with `nohz_idle` the CPUs
    /// in tickless idle (`nohz.idle_cpus_mask`) at `now_ns`: kick the idle
    /// load balancer when more than one CPU of `cpu`'s LLC is busy (not in
    /// tickless idle: `sd_balance_shared->nr_busy_cpus > 1`, "we may need
    /// to spread load within the current LLC domain (e.g. packed SMT
    /// cores but other CPUs are idle)"), and only once a tickless CPU's
    /// periodic balance is due (`nohz.next_balance`, the earliest
    /// `rq->next_balance` of the tickless CPUs, which the kicked CPU's
    /// pass moves on: [`Self::nohz_idle_balance`]), so the kick is not
    /// sent at every tick. Never on a machine with an
    /// `sd_asym_cpucapacity` domain (Linux skips the LLC logic there:
    /// only misfits count), nor without an LLC domain of more than one
    /// CPU. O(CPUs of the LLC), no allocation.
    pub fn nohz_llc_kick_wanted(&self, cpu: CpuId, nohz_idle: &CpuMask, now_ns: u64) -> bool {
        let doms = &self.slots[cpu.index()].doms;
        if doms.asym_cpucapacity().is_some() {
            return false;
        }
        let Some(llc) = doms.llc() else {
            return false;
        };
        let nr_busy = llc
            .span
            .cpus()
            .filter(|&c| c.index() < self.nr_cpus() && self.cpu_active(c) && !nohz_idle.has(c))
            .take(2)
            .count();
        nr_busy > 1 && self.nohz_next_balance_due(nohz_idle, now_ns)
    }

    /// Whether the periodic balance of some CPU of `nohz_idle` is due at
    /// `now_ns` (`!time_before(jiffies, nohz.next_balance)`: Linux keeps
    /// the minimum of the tickless CPUs' `rq->next_balance` as the kicked
    /// CPU found them; this reads them).
    pub fn nohz_next_balance_due(&self, nohz_idle: &CpuMask, now_ns: u64) -> bool {
        nohz_idle
            .cpus()
            .take_while(|c| c.index() < self.nr_cpus())
            .any(|c| self.rebalance_due(c, now_ns))
    }

    /// `select_idle_sibling` on a machine of unequal CPUs
    /// ([`Scheduler::select_idle_sibling_in`] with capacity fits). Not
    /// inlined: the wakeup path of a machine of equal CPUs pays only the
    /// test that sends it here.
    #[inline(never)]
    pub(super) fn select_idle_sibling_asym(
        &self,
        t: &SchedTask,
        prev_cpu: CpuId,
        target: CpuId,
        recent: Option<&crate::sync::AtomicU32>,
        visited: &mut usize,
    ) -> (CpuId, super::SisPick) {
        self.select_idle_sibling_in::<true>(t, prev_cpu, target, recent, visited)
    }

    /// `select_idle_capacity`: from `target` on (wrapping) over `sd`'s span
    /// and `t`'s allowed CPUs, the first idle CPU `util` fits; if none
    /// fits, the idle CPU of most capacity (the first met among equals);
    /// `None` if no CPU is idle.
    pub(super) fn select_idle_capacity(
        &self,
        t: &SchedTask,
        sd: &SchedDomain,
        target: CpuId,
        util: u64,
        visited: &mut usize,
    ) -> Option<CpuId> {
        let cpus = sd.span.and(&self.allowed_mask(t));
        let mut best: Option<(CpuId, u32)> = None;
        for c in cpus.cpus_wrap(target.index()) {
            if c.index() >= self.nr_cpus() {
                continue;
            }
            *visited += 1;
            if !self.choose_idle_cpu(c, t) {
                continue;
            }
            let cap = self.topology.capacity_of(c);
            if fits_capacity(util, cap as u64) {
                return Some(c);
            }
            if best.is_none_or(|(_, b)| cap > b) {
                best = Some((c, cap));
            }
        }
        best.map(|(c, _)| c)
    }

    /// Is `cpu` of the largest capacity among the CPUs `t` may run on
    /// (`arch_scale_cpu_capacity(cpu) == p->max_allowed_capacity`, which
    /// Linux caches per task)? A CPU of the machine's largest capacity
    /// (always [`SCHED_CAPACITY_SCALE`]) is, without a scan; otherwise
    /// the allowed CPUs are scanned, O(CPUs), for a task that does not
    /// fit a smaller CPU, at its ticks.
    fn on_biggest_allowed(&self, t: &SchedTask, cpu: CpuId) -> bool {
        let cap = self.topology.capacity_of(cpu);
        cap as u64 == SCHED_CAPACITY_SCALE
            || self
                .allowed_mask(t)
                .cpus()
                .take_while(|c| c.index() < self.nr_cpus())
                .all(|c| self.topology.capacity_of(c) <= cap)
    }

    /// `update_misfit_status` for `rq`'s running task (Linux calls it at
    /// the tick and when a fair task is picked): its load (at least 1) if
    /// it is a fair task that does not fit its CPU, may run elsewhere and
    /// could have more capacity there; else 0. Call on machines of unequal
    /// CPUs only, with `rq` locked. Not inlined: the switch of a machine of
    /// equal CPUs pays only the test that calls it.
    #[inline(never)]
    pub(super) fn update_misfit_status(&self, rq: &Rq) {
        let cpu = rq.cpu();
        let misfit = match rq.curr().and_then(|c| rq.task(c)) {
            Some(t)
                if t.class() == SchedClass::Fair
                    && t.cpus_allowed.weight() > 1
                    && !self.task_fits_cpu(t, cpu)
                    && !self.on_biggest_allowed(t, cpu) =>
            {
                t.se.avg.load_avg.max(1)
            }
            _ => 0,
        };
        let was = self.slots[cpu.index()]
            .summary
            .misfit_task_load
            .swap(misfit, Ordering::Relaxed);
        if (was != 0) != (misfit != 0) {
            if misfit != 0 {
                self.nr_misfit.fetch_add(1, Ordering::Relaxed);
            } else {
                self.nr_misfit.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// `task_tick_fair`'s `update_misfit_status` (unequal CPUs only; one
    /// test on a machine of equal CPUs), for `rq` locked just after its
    /// [`Rq::task_tick`]: [`Scheduler::tick`] calls it, and so must a
    /// platform that runs `Rq::task_tick` itself under a lock it also
    /// uses for other work (the kernel's and the simulator's ticks, which
    /// drain the wake list under the same lock).
    #[inline]
    pub fn tick_misfit(&self, rq: &Rq) {
        if self.topology.has_asym_capacity() {
            self.update_misfit_status(rq);
        }
    }

    /// [`Self::update_misfit_status`] of `cpu`, locking its runqueue (after
    /// a switch, from [`Scheduler::finish_switch`]).
    #[cold]
    #[inline(never)]
    pub(super) fn update_misfit_status_locked(&self, cpu: CpuId) {
        let rq = self.cpu_rq(cpu);
        self.update_misfit_status(&rq);
    }

    /// Whether any CPU is marked misfit (Linux sets `rd->overloaded` for
    /// a misfit group, so a newly idle CPU balances).
    pub(super) fn any_misfit(&self) -> bool {
        self.nr_misfit.load(Ordering::Relaxed) != 0
    }

    /// The misfit part of `load_balance` at one level of `this_cpu` (a
    /// domain with `SD_ASYM_CPUCAPACITY`): `None` when no group is of type
    /// `group_misfit_task` or one is overloaded (then balancing by task
    /// counts goes on as before), else what the misfit migration did.
    pub(super) fn balance_misfit(
        &self,
        this_cpu: CpuId,
        sd: &SchedDomain,
        local_span: CpuMask,
        local_type: GroupType,
        all: &CpuMask,
    ) -> Option<Pulled> {
        // update_sd_pick_busiest: misfit tasks are pulled only by a group
        // with spare capacity, and an overloaded group outranks them.
        if local_type != GroupType::HasSpare {
            return None;
        }
        let dst_cap = self.topology.capacity_of(this_cpu) as u64;
        let mut busiest: Option<(CpuMask, u64)> = None;
        for g in sd.groups(&self.topology) {
            if g == local_span {
                continue;
            }
            let st = self.sg_stats(g, all);
            if st.group_type(sd.imbalance_pct) == GroupType::Overloaded {
                return None;
            }
            let mut misfit = 0;
            let mut max_cap = 0;
            for c in g.and(all).cpus() {
                misfit = misfit.max(self.misfit_task_load(c));
                max_cap = max_cap.max(self.topology.capacity_of(c) as u64);
            }
            // Don't try to pull misfit tasks we can't help.
            if misfit == 0 || !capacity_greater(dst_cap, max_cap) {
                continue;
            }
            if busiest.is_none_or(|(_, m)| misfit >= m) {
                busiest = Some((g, misfit));
            }
        }
        let (group, _) = busiest?;
        // find_busiest_queue, migrate_misfit: the biggest misfit task.
        let src = group
            .and(all)
            .cpus()
            .filter(|&c| c != this_cpu)
            .max_by_key(|&c| self.misfit_task_load(c))
            .filter(|&c| self.misfit_task_load(c) != 0)?;
        Some(self.migrate_misfit(this_cpu, src))
    }

    /// `detach_tasks` with `migrate_misfit` (one task that does not fit
    /// `src_cpu`), else `need_active_balance`'s misfit case: the running
    /// misfit task, moved at `src_cpu`'s next switch. Nothing allocates.
    fn migrate_misfit(&self, this_cpu: CpuId, src_cpu: CpuId) -> Pulled {
        let mut pulled = Pulled::none(this_cpu);
        pulled.from = src_cpu;
        let mut kick = Resched::None;
        {
            let mut locked = self.double_rq_lock(this_cpu, src_cpu);
            let (this_rq, src) = locked.pair();
            let now = self.platform.now_ns();
            this_rq.update_rq_clock(now);
            src.update_rq_clock(now);
            // Queued (not running) fair tasks allowed here that do not fit
            // the source, least urgent first: the first one goes.
            let mut cand: Option<TaskId> = None;
            for id in src.fair_queue_rev() {
                if src.curr() == Some(id) {
                    continue;
                }
                let Some(t) = src.task(id) else { continue };
                if t.state == TaskState::Queued
                    && t.class() == SchedClass::Fair
                    && self.allowed(t, this_cpu)
                    && !self.task_fits_cpu(t, src_cpu)
                {
                    cand = Some(id);
                    break;
                }
            }
            if let Some(id) = cand {
                if let Ok(t) = src.detach_task(id) {
                    this_rq.attach_task(id, t);
                    self.placed(id, this_cpu);
                    pulled.ids[0] = id;
                    pulled.n = 1;
                }
            } else if let Some(t) = src.curr().and_then(|c| src.task(c)) {
                // Active balance: the running task, if it still is a
                // misfit that may run here.
                if t.class() == SchedClass::Fair
                    && self.allowed(t, this_cpu)
                    && !self.task_fits_cpu(t, src_cpu)
                {
                    src.set_active_push(this_cpu);
                    kick = src.resched_curr(Resched::Now);
                    pulled.active = true;
                }
            }
        }
        if pulled.n != 0 {
            self.recheck_active(this_cpu);
        }
        self.kick_if_needed(src_cpu, this_cpu, kick);
        pulled
    }
}
