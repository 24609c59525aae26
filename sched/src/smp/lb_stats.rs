//! Per-domain load-balance statistics (Linux's `CONFIG_SCHEDSTATS`
//! counters of `struct sched_domain`, printed by `show_schedstat` in
//! kernel/sched/stats.c as the `domainN` lines of `/proc/schedstat`,
//! version 17), so the balancer's behaviour can be set beside Linux's.
//!
//! Each CPU's domain at each level counts, per idle type of the pass
//! ([`IdleType`], Linux's `enum cpu_idle_type`), where `sched_balance_rq`
//! (formerly `load_balance`, kernel/sched/fair.c) counts them:
//! - `lb_count`: every pass at the level, before `should_we_balance`;
//! - `lb_balanced`: a pass that ended balanced (`out_balanced` and
//!   `out_all_pinned`: another CPU balances the level, no busier group,
//!   no imbalance, no source CPU, every source pinned);
//! - `lb_failed`: a pass that found an imbalance and a source and moved
//!   nothing (whether or not an active balance follows, and
//!   `out_one_pinned`);
//! - `lb_imbalance_load` / `lb_imbalance_task`: the imbalance a pass set
//!   out to move once it had a source (`update_lb_imbalance_stat`), in
//!   load (ours: `cpu_load()` units) or tasks;
//! - `lb_gained`: the tasks a pass moved (`detach_tasks`);
//! - `lb_nobusyg`: no busiest group (`sched_balance_find_src_group`
//!   returned none: no busier group, or the imbalance is nil);
//! - `lb_nobusyq`: a busiest group but no source CPU in it
//!   (`sched_balance_find_src_rq` returned none).
//!
//! A pass retried without a pinned source (`LBF_ALL_PINNED`, `redo`)
//! counts `lb_nobusyg` / `lb_nobusyq` / the imbalance again for each try,
//! as Linux's does, but `lb_count` once.
//!
//! Active balance (the CPU stopper's `active_load_balance_cpu_stop`),
//! counted at the destination's lowest domain that spans the source:
//! `alb_count` for every push that took the source's running task off at
//! its switch, `alb_pushed` when it landed on the destination that asked
//! for it, `alb_failed` when it could not (the task's affinity changed
//! meanwhile, and it went elsewhere). A push dropped at the switch because
//! the task had stopped running (blocked, or no longer a fair task) counts
//! nothing, as Linux's stopper counts nothing when the source has no
//! second task (`busiest_rq->nr_running <= 1`). The misfit's active
//! balance ([`super::capacity`]) goes through the same push and counts
//! here too, as Linux's stopper does for it.
//!
//! The wakeups (Linux's `ttwu_stat()` in kernel/sched/core.c and
//! `wake_affine()` in fair.c), counted on the waker's CPU's domains:
//! - `ttwu_wake_remote`: a wakeup (any class, placed or woken where it
//!   was queued) that left the task runnable on another CPU than the
//!   waker's, at the waker's lowest domain that spans that CPU;
//! - `ttwu_move_affine`: a fair wakeup whose `wake_affine` chose the
//!   waker's CPU (WA_IDLE or WA_WEIGHT; before `select_idle_sibling`,
//!   which may still pick another), at the domain `wake_affine` was asked
//!   for (the waker's lowest one spanning the wakee's previous CPU).
//!
//! Ours only, not in Linux's line (Linux counts a task's
//! `nr_wakeups_migrate` in `/proc/PID/sched`, not per domain), so that
//! every migration has a counter by its cause beside `lb_gained` and
//! `alb_pushed`: `ttwu_migrate`, a wakeup that placed the task on another
//! CPU than the one it slept on, counted at the destination's lowest
//! domain that spans that CPU (as `lb_gained` counts at the puller's).
//!
//! Not counted (no mechanism of ours behind them, or not yet):
//! `lb_imbalance_util` and `lb_imbalance_misfit` (no `migrate_util`; the
//! misfit pass does not size an imbalance), `lb_hot_gained` (the hot
//! tasks moved after `cache_nice_tries`), the `sbe_*` / `sbf_*` fields
//! (zero in Linux too since the exec and fork balance counters were
//! dropped) and `ttwu_move_balance` (zero in Linux too: nothing counts
//! it since SD_BALANCE_WAKE left the wakeup's fast path).
//!
//! Each is an `unsigned int` in Linux (printed with `%u`) and wraps; so
//! do these (`u32`, wrapping adds; a load imbalance past `u32::MAX` counts
//! as `u32::MAX`). They cost 120 bytes per CPU and level.
//!
//! All of them are counted only while [`Platform::schedstat_enabled`]
//! says so, as Linux counts them only with schedstats on (the
//! `kernel.sched_schedstats` switch, off by default): its balance
//! counters are `schedstat_inc()` / `schedstat_add()`s and its
//! `update_lb_imbalance_stat` returns at once when `!schedstat_enabled()`
//! (kernel/sched/fair.c; stats.h). A pass at a level asks once, at its
//! start, and with the switch off counts nothing and does not read the
//! CPU's idle state it would count under; an active push asks when it is
//! done (the failure count's reset on landing is made either way).
//! Counted, a pass adds a few relaxed increments to this CPU's own line.
//! Off, they keep their values (nothing resets them, in Linux neither,
//! whose `/proc/schedstat` prints them either way). No allocation.
//! Measured (callgrind, host, release, 1 000 failed and 1 000 balanced
//! passes of a 2-CPU machine): off saves 43.7 host instructions a pass
//! against counting unconditionally; on, a pass costs 18.7 more than that
//! (`docs/benchmarks.md`).
//!
//! The wakeup counters (Linux's `ttwu_stat()` returns at once when
//! `!schedstat_enabled()`; `ttwu_move_affine` is a `schedstat_inc()`):
//! [`Scheduler::wake`] asks once per wakeup, the placement again only when
//! `wake_affine` chose the waker's CPU. Counted, a remote wakeup walks the
//! waker's domains up to the one spanning the target (at most [`crate::domain::MAX_LEVELS`]) and adds
//! 1 with a relaxed atomic; a moved one does the same at the destination.
//! Measured (callgrind, `bench/cycle-instructions.sh smp-idle idle`,
//! counted): the smp-idle cycle, whose wakeup is remote, 2 186.53 → 2 205.53
//! host instructions (+19); the idle cycle (no `Scheduler` wakeup) 1 581.52,
//! unchanged. In the kernel (x86_64, 2 CPUs, `-icount`, schedstats off)
//! the switch saves a cross-CPU pipe round trip 52 guest instructions
//! (`ttwu_stat` −60, the switch's test in `try_to_wake_up` +4.5) and a
//! same-CPU one 8 (−14, +8; `docs/benchmarks.md`).

use core::sync::atomic::{AtomicU32, Ordering};

use super::{Platform, Scheduler};
use crate::cpu_id::CpuId;

/// The kind of CPU a pass balances for (Linux's `enum cpu_idle_type`, in
/// its order since 6.10 and in `/proc/schedstat` version 16 and later).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    /// A periodic pass of a CPU running a task (`__CPU_NOT_IDLE`).
    NotIdle = 0,
    /// A periodic pass of an idle CPU, or of a CPU in tickless idle by the
    /// idle load balancer (`CPU_IDLE`).
    Idle = 1,
    /// A pass of a CPU about to go idle (`CPU_NEWLY_IDLE`).
    NewlyIdle = 2,
}

/// `CPU_MAX_IDLE_TYPES`.
pub const CPU_MAX_IDLE_TYPES: usize = 3;

/// Linux's names of the per-idle-type fields of a `domainN` line that
/// [`LbStats`] holds, in `/proc/schedstat` order (the absent ones left
/// out: see the module doc).
pub const LB_FIELD_NAMES: [&str; 8] = [
    "lb_count",
    "lb_balanced",
    "lb_failed",
    "lb_imbalance_load",
    "lb_imbalance_task",
    "lb_gained",
    "lb_nobusyq",
    "lb_nobusyg",
];

/// Linux's names of the active-balance fields of a `domainN` line that
/// [`LbStats`] holds, in `/proc/schedstat` order.
pub const ALB_FIELD_NAMES: [&str; 3] = ["alb_count", "alb_failed", "alb_pushed"];

/// Linux's names of the wakeup fields of a `domainN` line that [`LbStats`]
/// holds, in `/proc/schedstat` order, then ours' `ttwu_migrate` (not in
/// Linux's line; see the module doc).
pub const TTWU_FIELD_NAMES: [&str; 3] = ["ttwu_wake_remote", "ttwu_move_affine", "ttwu_migrate"];

/// The counters of one CPU's domain at one level (with the rest of its
/// state in `DomainState`). Relaxed atomics: written by the balancing CPU
/// (and, for `alb_*`, by the source at its switch), read by anyone.
#[derive(Debug, Default)]
pub(super) struct LbCounters {
    lb_count: [AtomicU32; CPU_MAX_IDLE_TYPES],
    lb_balanced: [AtomicU32; CPU_MAX_IDLE_TYPES],
    lb_failed: [AtomicU32; CPU_MAX_IDLE_TYPES],
    lb_imbalance_load: [AtomicU32; CPU_MAX_IDLE_TYPES],
    lb_imbalance_task: [AtomicU32; CPU_MAX_IDLE_TYPES],
    lb_gained: [AtomicU32; CPU_MAX_IDLE_TYPES],
    lb_nobusyq: [AtomicU32; CPU_MAX_IDLE_TYPES],
    lb_nobusyg: [AtomicU32; CPU_MAX_IDLE_TYPES],
    alb_count: AtomicU32,
    alb_failed: AtomicU32,
    alb_pushed: AtomicU32,
    ttwu_wake_remote: AtomicU32,
    ttwu_move_affine: AtomicU32,
    ttwu_migrate: AtomicU32,
}

/// One counter event of a balance pass at one level.
#[derive(Clone, Copy, Debug)]
pub(super) enum LbEvent {
    /// A pass began (`lb_count`).
    Count,
    /// It ended balanced (`lb_balanced`).
    Balanced,
    /// It found an imbalance and a source, and moved nothing (`lb_failed`).
    Failed,
    /// It moved this many tasks (`lb_gained`).
    Gained(u32),
    /// No busiest group (`lb_nobusyg`).
    NoBusyGroup,
    /// No source CPU in the busiest group (`lb_nobusyq`).
    NoBusyQueue,
    /// The imbalance it set out to move, in tasks.
    ImbalanceTasks(u32),
    /// The imbalance it set out to move, in load.
    ImbalanceLoad(u64),
}

impl LbCounters {
    pub(super) fn count(&self, itype: IdleType, ev: LbEvent) {
        let i = itype as usize;
        let r = Ordering::Relaxed;
        let (a, n) = match ev {
            LbEvent::Count => (&self.lb_count[i], 1),
            LbEvent::Balanced => (&self.lb_balanced[i], 1),
            LbEvent::Failed => (&self.lb_failed[i], 1),
            LbEvent::Gained(n) => (&self.lb_gained[i], n),
            LbEvent::NoBusyGroup => (&self.lb_nobusyg[i], 1),
            LbEvent::NoBusyQueue => (&self.lb_nobusyq[i], 1),
            LbEvent::ImbalanceTasks(n) => (&self.lb_imbalance_task[i], n),
            LbEvent::ImbalanceLoad(l) => (
                &self.lb_imbalance_load[i],
                u32::try_from(l).unwrap_or(u32::MAX),
            ),
        };
        a.fetch_add(n, r);
    }

    /// An active push taken off its source at its switch: `landed` when
    /// it reached the destination that asked for it.
    pub(super) fn count_alb(&self, landed: bool) {
        self.alb_count.fetch_add(1, Ordering::Relaxed);
        if landed {
            self.alb_pushed.fetch_add(1, Ordering::Relaxed);
        } else {
            self.alb_failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> LbStats {
        let load = |a: &[AtomicU32; CPU_MAX_IDLE_TYPES]| {
            core::array::from_fn(|i| a[i].load(Ordering::Relaxed))
        };
        LbStats {
            lb_count: load(&self.lb_count),
            lb_balanced: load(&self.lb_balanced),
            lb_failed: load(&self.lb_failed),
            lb_imbalance_load: load(&self.lb_imbalance_load),
            lb_imbalance_task: load(&self.lb_imbalance_task),
            lb_gained: load(&self.lb_gained),
            lb_nobusyq: load(&self.lb_nobusyq),
            lb_nobusyg: load(&self.lb_nobusyg),
            alb_count: self.alb_count.load(Ordering::Relaxed),
            alb_failed: self.alb_failed.load(Ordering::Relaxed),
            alb_pushed: self.alb_pushed.load(Ordering::Relaxed),
            ttwu_wake_remote: self.ttwu_wake_remote.load(Ordering::Relaxed),
            ttwu_move_affine: self.ttwu_move_affine.load(Ordering::Relaxed),
            ttwu_migrate: self.ttwu_migrate.load(Ordering::Relaxed),
        }
    }
}

/// A copy of one CPU's domain counters at one level (see the module
/// doc); arrays indexed by [`IdleType`] `as usize`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbStats {
    /// Passes.
    pub lb_count: [u32; CPU_MAX_IDLE_TYPES],
    /// Passes that found the level balanced.
    pub lb_balanced: [u32; CPU_MAX_IDLE_TYPES],
    /// Passes that found an imbalance and a source and moved nothing.
    pub lb_failed: [u32; CPU_MAX_IDLE_TYPES],
    /// Sum of the load imbalances passes set out to move.
    pub lb_imbalance_load: [u32; CPU_MAX_IDLE_TYPES],
    /// Sum of the task imbalances passes set out to move.
    pub lb_imbalance_task: [u32; CPU_MAX_IDLE_TYPES],
    /// Tasks moved.
    pub lb_gained: [u32; CPU_MAX_IDLE_TYPES],
    /// Passes with a busiest group but no source CPU.
    pub lb_nobusyq: [u32; CPU_MAX_IDLE_TYPES],
    /// Passes with no busiest group.
    pub lb_nobusyg: [u32; CPU_MAX_IDLE_TYPES],
    /// Active pushes taken off their source (per level, not per idle type).
    pub alb_count: u32,
    /// Of those, the ones that could not land here.
    pub alb_failed: u32,
    /// Of those, the ones that landed here.
    pub alb_pushed: u32,
    /// Wakeups by this CPU that left the task on another CPU, the lowest
    /// domain spanning it this one.
    pub ttwu_wake_remote: u32,
    /// Fair wakeups by this CPU whose `wake_affine` at this domain chose
    /// this CPU.
    pub ttwu_move_affine: u32,
    /// Wakeups that placed a task here from another CPU, the lowest domain
    /// spanning it this one (ours only).
    pub ttwu_migrate: u32,
}

impl LbStats {
    /// The per-idle-type fields for `itype`, in [`LB_FIELD_NAMES`] order.
    pub fn fields(&self, itype: IdleType) -> [u32; 8] {
        let i = itype as usize;
        [
            self.lb_count[i],
            self.lb_balanced[i],
            self.lb_failed[i],
            self.lb_imbalance_load[i],
            self.lb_imbalance_task[i],
            self.lb_gained[i],
            self.lb_nobusyq[i],
            self.lb_nobusyg[i],
        ]
    }

    /// The active-balance fields, in [`ALB_FIELD_NAMES`] order.
    pub fn alb_fields(&self) -> [u32; 3] {
        [self.alb_count, self.alb_failed, self.alb_pushed]
    }

    /// The wakeup fields, in [`TTWU_FIELD_NAMES`] order.
    pub fn ttwu_fields(&self) -> [u32; 3] {
        [
            self.ttwu_wake_remote,
            self.ttwu_move_affine,
            self.ttwu_migrate,
        ]
    }
}

/// The counters one balance pass adds to (its CPU's domain at its level)
/// and the idle type it counts under: found once a pass
/// ([`Scheduler::pass_stats`]), so that each event is one test and one
/// add, not a lookup of the CPU's slot and level again.
#[derive(Clone, Copy, Debug)]
pub(super) struct PassStats<'a> {
    counters: &'a LbCounters,
    itype: IdleType,
}

/// Counts `ev` of a balance pass where `stats` says; nothing when it is
/// `None` (schedstats off: [`Scheduler::pass_stats`]).
#[inline]
pub(super) fn lb_stat(stats: Option<PassStats<'_>>, ev: LbEvent) {
    if let Some(s) = stats {
        s.counters.count(s.itype, ev);
    }
}

impl<P: Platform> Scheduler<P> {
    /// The load-balance counters of `cpu`'s domain at `level` (an index
    /// into [`Self::domains`]), `None` when it has no such level.
    pub fn lb_stats(&self, cpu: CpuId, level: usize) -> Option<LbStats> {
        let slot = self.slots.get(cpu.index())?;
        if level >= slot.doms.as_slice().len() {
            return None;
        }
        Some(slot.lb[level].stats.snapshot())
    }

    /// Where a balance pass of `cpu` at its domain `level` counts: `None`
    /// while [`Platform::schedstat_enabled`] says no (asked once, at the
    /// pass's start; nor is the CPU's idle state read then). `newidle`: a
    /// newly idle pass; a periodic one counts as idle or not idle as
    /// `cpu` is now (`sched_balance_domains` reads it at the start and
    /// again after a level pulled; here, for each level).
    #[inline]
    pub(super) fn pass_stats(
        &self,
        cpu: CpuId,
        level: usize,
        newidle: bool,
    ) -> Option<PassStats<'_>> {
        if !self.platform.schedstat_enabled() {
            return None;
        }
        let itype = if newidle {
            IdleType::NewlyIdle
        } else if self.idle(cpu) {
            IdleType::Idle
        } else {
            IdleType::NotIdle
        };
        Some(PassStats {
            counters: &self.slots[cpu.index()].lb[level].stats,
            itype,
        })
    }

    /// Adds 1 to the counter `field` picks of `cpu`'s lowest domain that
    /// spans `other` (none if no domain does).
    fn ttwu_count(&self, cpu: CpuId, other: CpuId, field: impl Fn(&LbCounters) -> &AtomicU32) {
        if let Some(l) = self.lowest_level_spanning(cpu, other) {
            field(&self.slots[cpu.index()].lb[l].stats).fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `ttwu_stat()`'s domain part for a wakeup by `this_cpu` that left the
    /// task runnable on `cpu` (`ttwu_wake_remote` when they differ), and
    /// ours' `ttwu_migrate` when it was placed there from `from`.
    pub(super) fn ttwu_stat(&self, this_cpu: CpuId, from: CpuId, cpu: CpuId) {
        if cpu != this_cpu {
            self.ttwu_count(this_cpu, cpu, |s| &s.ttwu_wake_remote);
        }
        if from != cpu {
            self.ttwu_count(cpu, from, |s| &s.ttwu_migrate);
        }
    }

    /// `wake_affine()` at `this_cpu`'s domain `level` chose `this_cpu`
    /// (`ttwu_move_affine`).
    pub(super) fn ttwu_move_affine(&self, this_cpu: CpuId, level: usize) {
        self.slots[this_cpu.index()].lb[level]
            .stats
            .ttwu_move_affine
            .fetch_add(1, Ordering::Relaxed);
    }
}
