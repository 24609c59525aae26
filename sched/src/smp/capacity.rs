//! Capacity-aware wakeup placement on machines whose CPUs differ in
//! capacity (big.LITTLE; [`crate::Topology::with_capacities`]), as Linux's
//! kernel/sched/fair.c does it:
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
//!
//! Left out: energy-aware placement (`find_energy_efficient_cpu`, and the
//! root domain's `overutilized` flag that gates it), uclamp, capacity in
//! fork placement (`find_idlest_group`'s misfit groups), misfit tasks,
//! capacity pressure (`check_cpu_capacity`), `sched_idle_cpu`, and PELT's
//! capacity-invariant clock (`rq_clock_pelt`).

use super::{Platform, Scheduler};
use crate::cpu_id::CpuId;
use crate::domain::SchedDomain;
use crate::task::SchedTask;

/// `fits_capacity(cap, max)`: does a utilization of `util` fit a CPU of
/// `capacity`, leaving it the ~20% margin Linux wants
/// (`util * 1280 < capacity * 1024`)?
#[inline]
pub const fn fits_capacity(util: u64, capacity: u64) -> bool {
    util.saturating_mul(1280) < capacity.saturating_mul(1024)
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

    /// `select_idle_sibling` on a machine of unequal CPUs: the target or
    /// the previous CPU if idle and the task (of utilization `util`) fits
    /// there (`asym_fits_cpu`), else `select_idle_capacity` over the
    /// target's `sd_asym_cpucapacity`; `None` when the target has no such
    /// domain (then the LLC scan follows, Linux's symmetric island).
    pub(super) fn select_idle_sibling_asym(
        &self,
        t: &SchedTask,
        prev_cpu: CpuId,
        target: CpuId,
        visited: &mut usize,
    ) -> Result<CpuId, bool> {
        let util = t.se.avg.task_util_est();
        let mut idle_fits = |c: CpuId| {
            *visited += 1;
            self.idle(c) && self.util_fits_cpu(util, c)
        };
        if self.allowed(t, target) && idle_fits(target) {
            return Ok(target);
        }
        let prev_shares = self.topology.share_cache(prev_cpu, target);
        if prev_cpu != target && prev_shares && self.allowed(t, prev_cpu) && idle_fits(prev_cpu) {
            return Ok(prev_cpu);
        }
        match self.slots[target.index()].doms.asym_cpucapacity() {
            Some(sd) => Ok(self
                .select_idle_capacity(t, sd, target, util, visited)
                .unwrap_or(target)),
            None => Err(prev_shares),
        }
    }

    /// `select_idle_capacity`: from `target` on (wrapping) over `sd`'s span
    /// and `t`'s allowed CPUs, the first idle CPU `util` fits; if none
    /// fits, the idle CPU of most capacity (the first met among equals);
    /// `None` if no CPU is idle.
    fn select_idle_capacity(
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
            if !self.idle(c) {
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
}
