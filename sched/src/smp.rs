//! Many CPUs: per-CPU runqueues behind interrupt-masking locks, wakeup placement
//! (`select_task_rq`), remote wakeups through per-CPU wake lists (TTWU_QUEUE),
//! reschedule IPIs only when a CPU must act now, and load balancing.
//!
//! # Locking
//! Each CPU has a cache-line aligned slot with its runqueue lock, its wake list
//! lock and a lock-free summary (nr_running, load, idle) that placement reads
//! without taking remote locks, as Linux reads remote `rq` fields. Locking a
//! runqueue masks interrupts through the [`Platform`] first (an interrupt
//! handler on the same CPU may take the same lock); [`RqGuard`] restores them
//! and republishes the summary when it is dropped. Two runqueues are always
//! locked in CPU order ([`Scheduler::double_rq_lock`]). A wake list is only
//! ever locked alone, or after its own CPU's runqueue.
//!
//! # Topology
//! The scheduler is built for a [`Topology`] ([`Scheduler::with_topology`];
//! [`Scheduler::new`] means [`Topology::flat`]: one cache, one node). From it
//! each CPU gets its scheduling domains ([`crate::domain`]: SMT, MC = the LLC,
//! PKG = the node, NUMA = the machine, degenerate levels dropped), which
//! placement and balancing walk as Linux's `for_each_domain` does. On a flat
//! machine there is one level, MC over single CPUs, and both reduce to the
//! flat rules of old, with one change from Linux: a CPU already running two
//! or more tasks pulls only from a CPU with `imbalance_pct` (117%) of its
//! count (`sched/tests/topology.rs` checks the flat rules against a model).
//! Nothing on these paths allocates: masks are fixed
//! 256-bit [`CpuMask`]s, domains and their per-level state are arrays built
//! at construction.
//!
//! # Wakeups (`placement`)
//! [`Scheduler::select_task_rq`] picks the CPU: fork/exec balancing down the
//! domains to the idlest group, then the idlest allowed CPU
//! ([`Scheduler::find_idlest_cpu`]); otherwise wake-affine between the waker's
//! and the previous CPU unless `wake_wide` (WA_IDLE within a shared cache,
//! then WA_WEIGHT over PELT load averages with WA_BIAS and the WF_SYNC
//! discount), then an idle-CPU search that never leaves the
//! target's LLC: target, previous CPU, an idle core, an idle sibling of the
//! previous CPU, any idle CPU (on CPUs of unequal capacity: a target or
//! previous CPU the task fits, then an idle CPU it fits anywhere in
//! `sd_asym_cpucapacity`, [`capacity`]). It sets WF_RQ_SELECTED, and
//! WF_MIGRATED when the CPU changes. A wakeup on another CPU goes as Linux's
//! `ttwu_queue_cond()` decides ([`Scheduler::ttwu_queue_cond`]): to a CPU
//! outside the waker's LLC, or to one whose runqueue holds nothing, it is
//! queued on that CPU's wake list and the CPU is kicked with an IPI
//! (TTWU_QUEUE); to a busy CPU of the same LLC (or with NO_TTWU_QUEUE) the
//! waker locks the remote runqueue, enqueues and decides the preemption
//! itself. A task still switching out of its CPU is queued on that CPU's
//! wake list under the same condition, without being placed again (Linux's
//! `p->on_cpu` case); otherwise the waker waits for the switch to end.
//!
//! # RT push and pull (`rt_balance`)
//! What RT wakeup placement cannot see coming, Linux's RT push/pull fixes
//! afterwards: an RT-overloaded CPU (two or more RT tasks, a queued one
//! allowed elsewhere; counted as `rd->rto_count`) pushes its waiting task to
//! the CPU of lowest RT rank below it, and a CPU that drops below an
//! overloaded CPU's waiting task pulls it. Pushes follow wakeups, switches
//! and priority changes; pulls follow switches and priority changes
//! ([`Scheduler::balance_rt`]). Moves use `double_rq_lock` as balancing does.
//!
//! # Deadline push and pull (`dl_balance`)
//! The same for SCHED_DEADLINE (global EDF): a DL-overloaded CPU (two or
//! more ready deadline tasks, a queued one allowed elsewhere; counted as
//! `rd->dlo_count`) pushes its earliest waiting task to a CPU with no
//! deadline task or a later one, and a CPU whose earliest deadline is later
//! than an overloaded CPU's waiting task pulls it. Pushes follow enqueues,
//! switches, ticks and parameter changes; pulls follow switches and
//! parameter changes ([`Scheduler::balance_dl`]).
//!
//! # Balancing (`balance`)
//! [`Scheduler::load_balance`] walks this CPU's domains bottom-up and, at the
//! first level out of balance, pulls runnable, not running, allowed,
//! cache-cold fair tasks from the busiest CPU of the busiest group, enough to
//! even the groups' tasks per CPU, at most `kernel.sched_nr_migrate` per pass.
//! Cache-hot tasks (ran within the level's multiple of
//! `kernel.sched_migration_cost_ns`, or the next buddy with CACHE_HOT_BUDDY)
//! are skipped unless earlier periodic passes failed to move anything
//! (Linux's `nr_balance_failed` against `cache_nice_tries`). Migrated tasks
//! keep their lag and relative deadline. [`Scheduler::rebalance_domains`] is
//! the periodic form: each level is balanced only once its interval (span
//! weight in ms, longer while busy) has passed. Sources: Linux kernel/sched/fair.c
//! (`select_task_rq_fair`, `select_idle_sibling`, `find_idlest_cpu`,
//! `load_balance`, `rebalance_domains`) and topology.c (`sd_init`).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

use crate::sync::{Mutex, MutexGuard};

mod balance;
pub use balance::MAX_PINNED_INTERVAL_MS;
pub mod capacity;
mod groups;
pub mod hotplug;
mod lb_stats;
pub use lb_stats::{
    IdleType, LbStats, ALB_FIELD_NAMES, CPU_MAX_IDLE_TYPES, LB_FIELD_NAMES, TTWU_FIELD_NAMES,
};
pub mod lifecycle;
#[cfg(all(test, loom))]
mod loom_tests;
pub mod newidle;
mod placement;
pub use placement::{
    nr_idle_scan_for, placement_name, placement_rows, AffineRule, SisPick, AFFINE_RULE_NAMES,
    PLACEMENT_ROWS, SIS_PICK_NAMES,
};
mod dl_balance;
mod push_pull;
mod rt_balance;

pub use hotplug::HotplugError;
pub use lifecycle::{LifecycleError, Woke};
pub use newidle::NewidleStats;

use crate::config::SchedConfig;
use crate::cpu_id::CpuId;
use crate::cpumask::{CpuMask, CPUMASK_WORDS, MAX_CPUS};
use crate::domain::{build_domains, CpuDomains, SchedDomain, MAX_LEVELS};
use crate::features::Feature;
use crate::flags::WakeFlags;
use crate::rq::{HrtickCmd, Resched, Rq, RqError, WakeupDecision};
use crate::task::{SchedTask, TaskId, TaskState};
use crate::topology::Topology;

/// Most tasks one balancing pass moves, whatever `kernel.sched_nr_migrate` says.
pub const MAX_PULL: usize = 32;

/// What one [`Scheduler::load_balance`] pass moved: up to [`MAX_PULL`] tasks,
/// over every domain level the pass balanced. A fixed array: balancing never
/// allocates.
#[derive(Clone, Copy, Debug)]
pub struct Pulled {
    ids: [TaskId; MAX_PULL],
    n: usize,
    from: CpuId,
    /// The CPUs other than the caller's whose runqueues the pass changed:
    /// every source, and a destination of the local group other than the
    /// caller's CPU (`LBF_DST_PINNED`, [`balance`]).
    touched: CpuMask,
    /// An active balance was started instead ([`Pulled::active_balance`]).
    active: bool,
}

impl Pulled {
    /// Nothing moved (yet) to `cpu`.
    fn none(cpu: CpuId) -> Self {
        Pulled {
            ids: [TaskId(0); MAX_PULL],
            n: 0,
            from: cpu,
            touched: CpuMask::new(),
            active: false,
        }
    }

    /// Nothing could be detached, but the source's running task will move
    /// here at the source's next switch (an active balance: a misfit,
    /// [`capacity`], or after `cache_nice_tries + 2` failed passes,
    /// `balance`): the source was asked to reschedule. Counts as a
    /// balance that acted (a newly idle pass stops at this level).
    pub fn active_balance(&self) -> bool {
        self.active
    }

    /// The tasks moved, in the order they were pulled.
    pub fn ids(&self) -> &[TaskId] {
        &self.ids[..self.n]
    }

    /// How many moved.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Nothing moved.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The CPU the first of them came from (meaningless when nothing
    /// moved); a periodic pass that balanced several levels may have taken
    /// tasks from others too ([`Pulled::touched`]).
    pub fn from_cpu(&self) -> CpuId {
        self.from
    }

    /// Every CPU other than the caller's whose runqueue the pass changed:
    /// the sources of the tasks moved, and any CPU of the caller's group
    /// that received them in its stead (`LBF_DST_PINNED`).
    pub fn touched(&self) -> &CpuMask {
        &self.touched
    }
}

/// What only the platform knows. The kernel implements it over its arch layer;
/// host tests implement it with counters.
pub trait Platform: Send + Sync {
    /// Masks interrupts on this CPU; returns whether they were enabled.
    fn irq_save(&self) -> bool;
    /// Restores the state [`Platform::irq_save`] returned.
    fn irq_restore(&self, was_enabled: bool);
    /// The scheduler clock in ns (monotonic, comparable across CPUs); used to
    /// bring a runqueue's clock up to date before queueing on it.
    fn now_ns(&self) -> u64;
    /// Interrupts `cpu` so that it runs the scheduler (drains its wake list,
    /// honours its need-resched).
    fn send_resched_ipi(&self, cpu: CpuId);
    /// Linux's `set_task_cpu`: task `id` now belongs to `cpu`'s runqueue.
    /// Called with that runqueue locked, whenever the scheduler places a task
    /// (spawn, a wakeup on another CPU, balancing, an affinity move), so the
    /// kernel's own record of a thread's CPU never lags the scheduler's.
    /// Must not take a runqueue lock. The default does nothing.
    fn set_task_cpu(&self, id: TaskId, cpu: CpuId) {
        let _ = (id, cpu);
    }
    /// The pause between two polls of a lock or flag another CPU holds
    /// (Linux's `cpu_relax`). The default is `core::hint::spin_loop()`; a
    /// kernel may use its own instruction (arm64 Linux uses `yield`, which
    /// also hands the turn to another vCPU under an emulator that runs
    /// them in turns, such as QEMU's round-robin TCG).
    fn cpu_relax(&self) {
        core::hint::spin_loop();
    }
    /// A wakeup's `select_idle_sibling` looked at the idle state of this
    /// many CPUs (the target, the previous CPU, each CPU of the LLC scan).
    /// For a simulator that charges the scan's cost; the default does
    /// nothing.
    fn idle_scan(&self, cpus_visited: usize) {
        let _ = cpus_visited;
    }
    /// A fair wakeup (`WF_TTWU`) was placed: the rule of `wake_wide` /
    /// `wake_affine` that chose the target, what `select_idle_sibling`
    /// returned, and whether the CPU is the waker's. For counters (the
    /// kernel's `compare`); the default does nothing. Called on the wakeup
    /// path: keep it cheap.
    fn wake_placement(&self, rule: AffineRule, pick: SisPick, local: bool) {
        let _ = (rule, pick, local);
    }
    /// Whether the per-domain counters of [`Scheduler::lb_stats`] are
    /// counted: the balance passes' `lb_*`, the active balance's `alb_*`
    /// and the wakeups' `ttwu_wake_remote`, `ttwu_move_affine` and
    /// `ttwu_migrate`. Linux's `schedstat_enabled()`, the
    /// `sched_schedstats` static key (`kernel.sched_schedstats`, boot
    /// argument `schedstats=`), with which its `schedstat_inc()` and
    /// `schedstat_add()` add nothing and its `ttwu_stat()` returns at once.
    /// Asked once per wakeup, and again only when `wake_affine` chose the
    /// waker's CPU; once per balance pass at a level; once per active push
    /// done: keep it cheap. The default is `true` (always counted), for
    /// host tests and the simulator.
    fn schedstat_enabled(&self) -> bool {
        true
    }
    /// Arms `cpu`'s one-shot scheduler timer (Linux's hrtick) to fire at
    /// `expires_ns` on the [`Platform::now_ns`] clock, replacing any earlier
    /// setting; when it fires, the kernel calls [`Scheduler::hrtick`] on
    /// that CPU. Called with `cpu`'s runqueue locked and interrupts masked,
    /// possibly from another CPU (then the platform forwards it, as Linux
    /// does with an IPI); must not take a runqueue lock nor allocate. The
    /// default does nothing: slices then end at the tick, as without HRTICK,
    /// the fair server boosts and is replenished at the tick, and so are
    /// throttled deadline tasks (up to a tick late).
    /// The timer is class-neutral: the fair class arms it for a slice's end,
    /// the fair server for its zero-laxity point or its replenishment, and
    /// the deadline class for its first throttled task's replenishment (the
    /// runqueue asks for the earliest).
    fn hrtick_start(&self, cpu: CpuId, expires_ns: u64) {
        let _ = (cpu, expires_ns);
    }
    /// Stops `cpu`'s one-shot scheduler timer (same context as
    /// [`Platform::hrtick_start`]). The default does nothing.
    fn hrtick_cancel(&self, cpu: CpuId) {
        let _ = cpu;
    }
    /// Task `id` could run on no active CPU (its CPU went offline and its
    /// affinity named only offline CPUs): the scheduler widened its
    /// affinity to every CPU (Linux's `select_fallback_rq`, which prints
    /// "process %d (%s) no longer affine to cpu%d"). `cpu` is the CPU it
    /// was on. Called with no runqueue lock held or with one held; must
    /// not take a runqueue lock. The default does nothing.
    fn affinity_broken(&self, id: TaskId, cpu: CpuId) {
        let _ = (id, cpu);
    }
}

/// Hands a runqueue's pending change of its one-shot timer
/// ([`Rq::take_hrtick_cmd`]) to the platform, a delay counted from now or
/// an instant as it is;
/// done whenever a runqueue is released (Linux's `hrtick_schedule_exit`,
/// right before the unlock). Most unlocks have none: that test is inlined
/// into the unlock, the hand-over is a call.
#[inline(always)]
fn flush_hrtick<P: Platform>(rq: &mut Rq, platform: &P) {
    if rq.hrtick_cmd_pending() {
        flush_hrtick_cmd(rq, platform);
    }
}

/// [`flush_hrtick`] with a change pending.
#[inline(never)]
fn flush_hrtick_cmd<P: Platform>(rq: &mut Rq, platform: &P) {
    match rq.take_hrtick_cmd() {
        None => {}
        Some(HrtickCmd::Start(delay)) => {
            let at = platform.now_ns().saturating_add(delay);
            platform.hrtick_start(rq.cpu(), at);
        }
        Some(HrtickCmd::At(at)) => platform.hrtick_start(rq.cpu(), at),
        Some(HrtickCmd::Cancel) => platform.hrtick_cancel(rq.cpu()),
    }
}

/// A queued remote wakeup (Linux's `wake_entry` on `rq->wake_list`).
#[derive(Clone, Copy, Debug)]
pub struct WakeEntry {
    /// The task.
    pub id: TaskId,
    /// Its state, handed over by value; `None`: it is still in the task's
    /// cell (`InTransit`), and the drain copies it from there straight
    /// into the runqueue (one copy of a task's state on the way, not two).
    pub task: Option<SchedTask>,
    /// The wakeup's flags.
    pub wf: WakeFlags,
}

/// Lock-free per-CPU figures for placement and balancing.
#[derive(Debug, Default)]
pub struct CpuSummary {
    /// Runnable tasks (delayed ones excluded), the running one included.
    pub nr_running: AtomicU32,
    /// The runqueue holds no task at all, delayed fair tasks and the running
    /// one counted ([`Rq::nr_running`] is 0, Linux's `!rq->nr_running`):
    /// what [`Scheduler::ttwu_queue_cond`] reads. (A flag, not a count: it
    /// fits the slot's padding.)
    pub rq_empty: AtomicBool,
    /// Σ fair weight.
    pub load: AtomicU64,
    /// The fair runqueue's PELT load average, queued and blocked (Linux's
    /// `cpu_load()`), what `wake_affine_weight` compares.
    pub load_avg: AtomicU64,
    /// The fair runqueue's PELT utilisation (`cfs_rq->avg.util_avg`,
    /// blocked utilisation included): what the periodic balance of the LLC
    /// domain sums for SIS_UTIL (`cpu_util_cfs`, `group_util`).
    pub util_avg: AtomicU64,
    /// The root fair runqueue's `util_est` ([`Rq::util_est`]), which
    /// [`Scheduler::cpu_util_cfs`] maxes in while UTIL_EST is on.
    pub util_est: AtomicU64,
    /// The fair runqueue's PELT runnable average (`cfs_rq->avg.runnable_avg`,
    /// Linux's `cpu_runnable()`), what the balancer sums per group
    /// (`group_runnable`).
    pub runnable_avg: AtomicU64,
    /// SIS_UTIL's scan limit (`sd_llc_shared->nr_idle_scan`): how many CPUs
    /// of the LLC a wakeup's `select_idle_cpu` may look at. Kept only in
    /// the summary of the LLC's first CPU, which stands for Linux's
    /// `sd_llc_shared` ([`Scheduler::nr_idle_scan`]); written by the
    /// periodic balance of the LLC domain, starts at the LLC's size.
    pub nr_idle_scan: AtomicU32,
    /// The running task's id, or [`crate::task::NIL`]: the waker whose
    /// `wakee_flips` a wakeup from this CPU records (Linux's `current`).
    pub curr_id: AtomicU32,
    /// The averages of tasks that slept here and were woken elsewhere
    /// without this runqueue's lock, to take out of its averages at its
    /// next publish (Linux's `cfs_rq->removed`).
    pub removed: RemovedLoad,
    /// The same for this CPU's group runqueues, one record per group
    /// (built with the CPU's first group by [`Scheduler::create_task_group`];
    /// a pending one is announced in `removed.nr`,
    /// [`RemovedLoad::GROUPS_PENDING`]).
    pub group_removed: spin::Once<alloc::boxed::Box<[crate::fair::group::GroupRemoved; 1]>>,
    /// Running its idle task.
    pub idle: AtomicBool,
    /// How far the CPU's PELT clock is behind its runqueue clock
    /// ([`Rq::pelt_lag_ns`]) as last published: what a sleeper's averages
    /// are brought to when it is woken on another CPU. Written only on a
    /// CPU of reduced capacity (elsewhere it stays 0).
    pub pelt_lag_ns: AtomicU64,
    /// The running task's load if it is a misfit, else 0 (Linux's
    /// `rq->misfit_task_load`, [`capacity`]); always 0 on a machine of
    /// equal CPUs. Written at the tick and the switch, under the lock.
    pub misfit_task_load: AtomicU64,
    /// The RT rank of the running task (`cpupri`'s view, for RT wakeup
    /// placement): 0 for a fair task or idle, the RT priority (1..=99) for
    /// an RT task, 100 for a SCHED_DEADLINE task. Higher outranks.
    pub curr_rt_rank: AtomicU8,
    /// The highest RT rank on the runqueue, running or queued (Linux's
    /// cpupri value, `rt_rq->highest_prio.curr`): as `curr_rt_rank`, but a
    /// queued RT task that has not run yet counts. RT push and pull move a
    /// task only to a CPU whose rank it exceeds.
    pub rt_rank: AtomicU8,
    /// Nonzero while the runqueue is RT-overloaded (Linux's
    /// `rt_rq->overloaded`, its CPU in `rd->rto_mask`): two or more RT tasks
    /// and a queued, not running one that may migrate; the value is that
    /// task's priority, what a pull would gain ([`Rq::rt_overload_rank`]).
    pub rt_next_rank: AtomicU8,
    /// The earliest absolute deadline of a ready SCHED_DEADLINE task here,
    /// running or queued, or 0 with none (Linux's cpudl heap entry,
    /// `dl_rq->earliest_dl.curr`): DL push and pull move a task only to a
    /// CPU with none or a later one (`dl_balance`).
    pub dl_earliest: AtomicU64,
    /// Nonzero while the runqueue is DL-overloaded (Linux's
    /// `dl_rq->overloaded`, its CPU in `rd->dlo_mask`): two or more ready
    /// deadline tasks and a queued, not running one that may migrate; the
    /// value is that task's absolute deadline ([`Rq::dl_overload_deadline`]).
    pub dl_next: AtomicU64,
}

/// Linux's `cfs_rq->removed`: PELT averages waiting to leave a runqueue
/// whose lock their remover did not hold ([`Rq::load_avg`]).
#[derive(Debug, Default)]
pub struct RemovedLoad {
    /// Removals not yet applied, and [`Self::GROUPS_PENDING`] while the
    /// CPU's group records ([`CpuSummary::group_removed`]) have some.
    pub nr: AtomicU32,
    /// Σ `load_avg`.
    pub load_avg: AtomicU64,
    /// Σ `util_avg`.
    pub util_avg: AtomicU64,
    /// Σ `runnable_avg`.
    pub runnable_avg: AtomicU64,
}

impl RemovedLoad {
    /// The bit of `nr` that announces a group runqueue's removal: the
    /// publish tests one word for both.
    pub const GROUPS_PENDING: u32 = 1 << 31;

    /// Queues the removal of a sleeper's averages (synchronised to now).
    pub fn add(&self, a: &crate::pelt::SchedAvg) {
        self.load_avg.fetch_add(a.load_avg, Ordering::Relaxed);
        self.util_avg.fetch_add(a.util_avg, Ordering::Relaxed);
        self.runnable_avg
            .fetch_add(a.runnable_avg, Ordering::Relaxed);
        self.nr.fetch_add(1, Ordering::Release);
    }

    /// Applies the queued removals to `rq` (its lock held), the root's and,
    /// if announced, its group runqueues' (`groups`).
    #[cold]
    fn apply(
        &self,
        rq: &mut Rq,
        groups: &spin::Once<alloc::boxed::Box<[crate::fair::group::GroupRemoved; 1]>>,
    ) {
        let nr = self.nr.swap(0, Ordering::Acquire);
        if nr & Self::GROUPS_PENDING != 0 {
            Self::apply_groups(rq, groups);
            if nr == Self::GROUPS_PENDING {
                return;
            }
        }
        let l = self.load_avg.swap(0, Ordering::Relaxed);
        let u = self.util_avg.swap(0, Ordering::Relaxed);
        let r = self.runnable_avg.swap(0, Ordering::Relaxed);
        rq.fair.remove_load(l, u, r);
    }

    #[cold]
    #[inline(never)]
    fn apply_groups(
        rq: &mut Rq,
        groups: &spin::Once<alloc::boxed::Box<[crate::fair::group::GroupRemoved; 1]>>,
    ) {
        if let Some(g) = groups.get() {
            rq.apply_group_removals(&g[0]);
        }
    }
}

/// The changing state of one CPU's domain at one level (the dynamic part of
/// Linux's `struct sched_domain`).
#[derive(Debug)]
struct DomainState {
    /// When this level was last balanced periodically, in ticks of
    /// `SchedConfig::tick_ns` since 0 (`sd->last_balance`, jiffies).
    last_balance_jiffies: AtomicU64,
    /// The current periodic interval, ms (`sd->balance_interval`).
    interval_ms: AtomicU32,
    /// Balancing passes in a row that found only cache-hot tasks.
    nr_balance_failed: AtomicU32,
    /// The `imbalance` flag of the `sched_group_capacity` of the group one
    /// level up that this domain's span forms (`sgc->imbalance`), kept in
    /// the state of the span's first CPU: a pass inside the span could not
    /// even it out for CPU affinity, so the parent level may move any task
    /// out of it (`group_imbalanced`, [`balance`]).
    group_imbalance: AtomicBool,
    /// NI_RANDOM / NI_RATE figures ([`newidle`]).
    ni: newidle::NewidleState,
    /// The load-balance statistics ([`lb_stats`]).
    stats: lb_stats::LbCounters,
}

/// One CPU's slot. `repr(C)` keeps the fields in this order, the
/// runqueue first, at the slot's own address: the switch and the wakeup
/// lock it at `slots + cpu * size` with no offset to add, and the
/// registers that frees keep their hot paths from spilling. Left to the
/// compiler's reordering, a field added elsewhere in the slot (the
/// periodic balance's `next_balance_jiffies`) moved the runqueue to byte
/// 0x100 and cost a same-CPU pipe round trip 28 guest instructions
/// (`docs/benchmarks.md`).
#[repr(C, align(64))]
struct CpuSlot {
    rq: Mutex<Rq>,
    wake_list: Mutex<Vec<WakeEntry>>,
    /// `wake_list` is not empty (written under its lock; read without it,
    /// as Linux reads `llist_empty(&rq->wake_list)`): a CPU with nothing
    /// queued for it does not take the lock at each switch.
    wake_pending: crate::sync::AtomicBool,
    summary: CpuSummary,
    doms: CpuDomains,
    lb: [DomainState; MAX_LEVELS],
    /// The earliest tick at which a level of this CPU is due for its
    /// periodic balance (`rq->next_balance`, jiffies).
    next_balance_jiffies: AtomicU64,
    /// NI_RANDOM's die (Linux's per-CPU `sched_rnd_state`).
    rng: newidle::RngCell,
}

/// A locked runqueue; interrupts stay masked until it is dropped.
pub struct RqGuard<'a, P: Platform> {
    guard: Option<MutexGuard<'a, Rq>>,
    summary: &'a CpuSummary,
    overloaded: &'a AtomicU32,
    push_count: &'a AtomicU64,
    platform: &'a P,
    irq: Option<bool>,
}

impl<P: Platform> Deref for RqGuard<'_, P> {
    type Target = Rq;
    fn deref(&self) -> &Rq {
        self.guard.as_ref().expect("guard is held until drop")
    }
}

impl<P: Platform> DerefMut for RqGuard<'_, P> {
    fn deref_mut(&mut self) -> &mut Rq {
        self.guard.as_mut().expect("guard is held until drop")
    }
}

/// Republishes `rq`'s summary `s` (its lock held) and keeps `overloaded`, the
/// count of CPUs with two or more runnable tasks, and `push_count`, the
/// counts of RT- and DL-overloaded CPUs ([`Scheduler::push_count`]), in
/// step with it.
///
/// Shaped for the common case (no removed load to apply, no RT or deadline
/// task): its other paths are calls in tail position, so that path keeps
/// nothing across a call (no callee-saved registers to push and pop, about
/// 10 instructions at each of the several unlocks of a wakeup).
fn publish(rq: &mut Rq, s: &CpuSummary, overloaded: &AtomicU32, push_count: &AtomicU64) {
    if s.removed.nr.load(Ordering::Relaxed) != 0 {
        return publish_removed(rq, s, overloaded, push_count);
    }
    publish_summary(rq, s, overloaded, push_count)
}

/// [`publish`] with removed load to apply first.
#[cold]
#[inline(never)]
fn publish_removed(rq: &mut Rq, s: &CpuSummary, overloaded: &AtomicU32, push_count: &AtomicU64) {
    s.removed.apply(rq, &s.group_removed);
    publish_summary(rq, s, overloaded, push_count)
}

/// [`publish`]'s summary, the removed load applied.
#[inline(always)]
fn publish_summary(rq: &Rq, s: &CpuSummary, overloaded: &AtomicU32, push_count: &AtomicU64) {
    let nr = rq.nr_runnable();
    // Written here only, with the runqueue locked: a load and a store, not
    // a swap (a locked instruction at every unlock).
    let was = s.nr_running.load(Ordering::Relaxed);
    s.nr_running.store(nr, Ordering::Relaxed);
    if (was >= 2) != (nr >= 2) {
        if nr >= 2 {
            overloaded.fetch_add(1, Ordering::Relaxed);
        } else {
            overloaded.fetch_sub(1, Ordering::Relaxed);
        }
    }
    s.rq_empty.store(rq.nr_running() == 0, Ordering::Relaxed);
    s.load.store(rq.load(), Ordering::Relaxed);
    s.load_avg.store(rq.load_avg(), Ordering::Relaxed);
    let avg = rq.fair.avg();
    s.util_avg.store(avg.util_avg, Ordering::Relaxed);
    s.util_est.store(rq.util_est(), Ordering::Relaxed);
    s.runnable_avg.store(avg.runnable_avg, Ordering::Relaxed);
    if rq.cpu_capacity() < crate::pelt::SCHED_CAPACITY_SCALE as u32 {
        s.pelt_lag_ns.store(rq.pelt_lag_ns(), Ordering::Relaxed);
    }
    let curr = rq.curr();
    s.curr_id
        .store(curr.map_or(crate::task::NIL, |c| c.0), Ordering::Relaxed);
    s.idle.store(curr.is_none(), Ordering::Relaxed);
    // At every unlock: read in its slot (a hash probe less).
    let rank = rq.curr_task().map_or(0, rt_rank);
    s.curr_rt_rank.store(rank, Ordering::Relaxed);
    // No RT or deadline task queued here, now or at the last publish (a
    // nonzero overload rank implies a nonzero rank): nothing to write. (A
    // running RT task that just blocked is left out until the switch.)
    if (rq.rt.nr_running | rq.dl.nr_ready) != 0
        || rq.fair_server.running()
        || s.rt_rank.load(Ordering::Relaxed) != 0
    {
        publish_rt(rq, s, rank, push_count);
    }
}

/// The RT part of [`publish`]: the highest RT rank and the overload rank,
/// and the RT count of `push_count` in step with the latter. Written only under the
/// runqueue's lock, so a load and a compare stand in for an atomic swap.
#[inline(never)]
fn publish_rt(rq: &Rq, s: &CpuSummary, curr_rank: u8, push_count: &AtomicU64) {
    s.rt_rank
        .store(rq.rt_highest_rank().max(curr_rank), Ordering::Relaxed);
    let next = rq.rt_overload_rank();
    let was = s.rt_next_rank.load(Ordering::Relaxed);
    if was != next {
        s.rt_next_rank.store(next, Ordering::Relaxed);
        if was == 0 {
            push_count.fetch_add(RTO_ONE, Ordering::Relaxed);
        } else if next == 0 {
            push_count.fetch_sub(RTO_ONE, Ordering::Relaxed);
        }
    }
    // A deadline task or the serving fair server here now, or one at the
    // last publish (a nonzero published earliest deadline implies `rt_rank`
    // 100, so this runs then).
    if rq.dl.nr_ready != 0 || rq.fair_served() || s.dl_earliest.load(Ordering::Relaxed) != 0 {
        publish_dl(rq, s, push_count);
    }
}

/// The deadline part of [`publish`] (cpudl and `rd->dlo_mask`): the
/// earliest ready deadline, the overload deadline, and the DL count of
/// `push_count` in step with the latter.
fn publish_dl(rq: &Rq, s: &CpuSummary, push_count: &AtomicU64) {
    s.dl_earliest.store(rq.dl_earliest(), Ordering::Relaxed);
    let next = rq.dl_overload_deadline();
    let was = s.dl_next.swap(next, Ordering::Relaxed);
    if (was == 0) != (next == 0) {
        if was == 0 {
            push_count.fetch_add(DLO_ONE, Ordering::Relaxed);
        } else {
            push_count.fetch_sub(DLO_ONE, Ordering::Relaxed);
        }
    }
}

/// One RT-overloaded CPU in [`Scheduler::push_count`].
const RTO_ONE: u64 = 1;
/// One DL-overloaded CPU in [`Scheduler::push_count`].
const DLO_ONE: u64 = 1 << 32;

/// A task's RT rank ([`CpuSummary::curr_rt_rank`]): what Linux's
/// `rt_task()` and `p->prio` order, inverted so that higher outranks.
pub(crate) fn rt_rank(t: &SchedTask) -> u8 {
    match t.class() {
        crate::class::SchedClass::Dl => 100,
        crate::class::SchedClass::Rt => t.params.rt_priority,
        _ => 0,
    }
}

impl<P: Platform> Drop for RqGuard<'_, P> {
    fn drop(&mut self) {
        if let Some(mut g) = self.guard.take() {
            flush_hrtick(&mut g, self.platform);
            publish(&mut g, self.summary, self.overloaded, self.push_count);
            drop(g);
        }
        if let Some(irq) = self.irq {
            self.platform.irq_restore(irq);
        }
    }
}

/// Two locked runqueues; interrupts stay masked until it is dropped.
pub struct DoubleRqGuard<'a, P: Platform> {
    a: Option<MutexGuard<'a, Rq>>,
    b: Option<MutexGuard<'a, Rq>>,
    sa: &'a CpuSummary,
    sb: &'a CpuSummary,
    overloaded: &'a AtomicU32,
    push_count: &'a AtomicU64,
    platform: &'a P,
    irq: bool,
}

impl<P: Platform> DoubleRqGuard<'_, P> {
    /// The two runqueues, in the order they were asked for.
    pub fn pair(&mut self) -> (&mut Rq, &mut Rq) {
        match (self.a.as_mut(), self.b.as_mut()) {
            (Some(a), Some(b)) => (a, b),
            _ => unreachable!("guards are held until drop"),
        }
    }
}

impl<P: Platform> Drop for DoubleRqGuard<'_, P> {
    fn drop(&mut self) {
        if let Some(mut g) = self.b.take() {
            flush_hrtick(&mut g, self.platform);
            publish(&mut g, self.sb, self.overloaded, self.push_count);
        }
        if let Some(mut g) = self.a.take() {
            flush_hrtick(&mut g, self.platform);
            publish(&mut g, self.sa, self.overloaded, self.push_count);
        }
        self.platform.irq_restore(self.irq);
    }
}

/// Where a wakeup went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeOutcome {
    /// Enqueued on this CPU's runqueue directly.
    Local(WakeupDecision),
    /// Enqueued on a remote runqueue by the waker (NO_TTWU_QUEUE).
    Remote(CpuId, WakeupDecision),
    /// Queued on the target CPU's wake list; `ipi`: the CPU was kicked.
    Queued {
        /// The target CPU.
        cpu: CpuId,
        /// Whether an IPI was sent (only for the first entry of an empty list).
        ipi: bool,
    },
}

/// What [`Scheduler::check`] found wrong: the CPU whose runqueue broke an
/// invariant, the task involved if one is, and the invariant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckError {
    /// The runqueue's CPU.
    pub cpu: CpuId,
    /// The task held twice (with [`CheckError::other_cpu`]), if that is the fault.
    pub task: Option<TaskId>,
    /// The other runqueue holding [`CheckError::task`].
    pub other_cpu: Option<CpuId>,
    /// What broke ([`Rq::check`]'s message, or "task held by two runqueues").
    pub what: &'static str,
}

/// No runqueue holds the task (in [`CheckScratch`]).
const NO_OWNER: u16 = u16::MAX;

/// The scratch memory of [`Scheduler::check`], allocated beforehand so that
/// the check allocates nothing while it holds every runqueue lock with
/// interrupts masked.
pub struct CheckScratch {
    /// Per task id: the CPU whose runqueue holds it, or [`NO_OWNER`].
    owner: Vec<u16>,
    /// [`Rq::check_with`]'s bitmap.
    seen: Vec<bool>,
}

/// The scheduler of a machine: configuration, platform and per-CPU runqueues.
pub struct Scheduler<P: Platform> {
    /// Features and tunables shared by every runqueue.
    pub cfg: Arc<SchedConfig>,
    /// The platform hooks.
    pub platform: P,
    /// One slot per CPU. A boxed slice, not a `Vec`: `self.slots[cpu].x`
    /// is then a place (the slice's own indexing) and a reference to it
    /// covers `x` alone, where `Vec`'s `Index` returns a reference to the
    /// whole slot. Native code indexes both alike; under Miri every reference is
    /// retagged over the bytes it covers, and a slot (its runqueue above
    /// all) spans hundreds of separately tracked ranges: at 80 CPUs that
    /// was most of a balancing test's time.
    slots: alloc::boxed::Box<[CpuSlot]>,
    capacity: usize,
    topology: Topology,
    /// Per task id ([`TaskCell`]): where it lives and, while it sleeps, its
    /// state. A two-level table: chunks of [`HOME_CHUNK`] cells, in
    /// directories of [`DIR_CHUNKS`] chunks, each allocated by the first
    /// [`Scheduler::spawn`] of an id it covers. Memory follows the ids in
    /// use; the capacity costs only the top level (16 bytes per
    /// `HOME_CHUNK * DIR_CHUNKS` = 32 768 ids).
    cells: Vec<spin::Once<CellDir>>,
    /// CPUs whose published summary counts two or more runnable tasks: the
    /// only CPUs balancing can pull from (Linux's `rd->overloaded`, kept as
    /// an exact count). A newly idle CPU skips its balance while it is 0.
    overloaded: AtomicU32,
    /// RT-overloaded CPUs ([`CpuSummary::rt_next_rank`] nonzero; Linux's
    /// `rd->rto_count`) in the low half, DL-overloaded ones
    /// ([`CpuSummary::dl_next`] nonzero; `rd->dlo_count`) in the high half:
    /// while a half is 0, no CPU looks for a task of that class to push or
    /// pull, and the switch tests both with one load
    /// ([`Self::rto_count`], [`Self::dlo_count`]).
    push_count: AtomicU64,
    /// CPUs placement, balancing and wakeups may use (Linux's
    /// `cpu_active_mask`), a bit per CPU; see [`hotplug`].
    active: [AtomicU64; CPUMASK_WORDS],
    /// CPUs of the machine not in `active`: while 0, the hotplug checks on
    /// the enqueue paths cost one load.
    nr_inactive: AtomicU32,
    /// CPUs whose [`CpuSummary::misfit_task_load`] is nonzero: a newly
    /// idle CPU balances while there are any, as while `overloaded`.
    nr_misfit: AtomicU32,
}

/// What the scheduler keeps per task id outside the runqueues.
pub(crate) struct TaskCell {
    /// Where the task lives (`task_cpu`): a CPU whose runqueue holds it,
    /// [`HOME_PARKED`] (asleep, its state in `parked`), a CPU with
    /// [`HOME_TRANSIT`] while a wakeup carries it there, or [`HOME_NONE`].
    /// Written under the lock of the runqueue it moves to, or of `parked`.
    pub(crate) home: crate::sync::AtomicU32,
    /// Set while the task that just went to sleep is still switching out of
    /// its CPU (from [`Scheduler::schedule`] to [`Scheduler::finish_switch`]):
    /// a waker waits for it before the task may run elsewhere (Linux's
    /// `p->on_cpu`).
    pub(crate) switching: crate::sync::AtomicBool,
    /// A sleeping task's state (Linux keeps it in the `task_struct`): waking
    /// it takes only this lock, not a remote runqueue's.
    pub(crate) parked: Mutex<Option<SchedTask>>,
    /// The CPU it slept on (its previous CPU for placement), while parked.
    pub(crate) last_cpu: crate::sync::AtomicU32,
    /// The state in `parked` is the one `last_cpu`'s runqueue kept in the
    /// task's slot there (free since, but its own until another task takes
    /// it): set when it is parked, cleared by anything that changes the
    /// state in the cell. A wakeup back onto `last_cpu` then takes the
    /// slot back as it is instead of copying the state in
    /// ([`InTransit`]). Written under `parked`'s lock.
    pub(crate) kept: crate::sync::AtomicBool,
    /// Wakeups of another task than the last one it woke, halved once a
    /// second (Linux's `wakee_flips`, read by `wake_wide`). Written by the
    /// task's own wakeups of others (it is the running task then).
    pub(crate) wakee_flips: crate::sync::AtomicU32,
    /// The last task it woke (`last_wakee`), or [`crate::task::NIL`].
    pub(crate) last_wakee: crate::sync::AtomicU32,
    /// When `wakee_flips` was last halved, ns (`wakee_flip_decay_ts`).
    pub(crate) wakee_flip_decay_ns: AtomicU64,
    /// A CPU it recently used (Linux's `recent_used_cpu`): the previous
    /// CPU of its last wakeup that got past `select_idle_sibling`'s target
    /// and previous-CPU checks, or its parent's CPU at its spawn. That
    /// wakeup's `select_idle_sibling` tries it, if idle, before the LLC
    /// scan. Written only by its wakeups' placement (under `parked`'s lock
    /// or its runqueue's) and its spawn.
    pub(crate) recent_used_cpu: crate::sync::AtomicU32,
}

impl TaskCell {
    fn new() -> Self {
        TaskCell {
            home: crate::sync::AtomicU32::new(HOME_NONE),
            switching: crate::sync::AtomicBool::new(false),
            parked: Mutex::named("task_cell.parked", None),
            last_cpu: crate::sync::AtomicU32::new(0),
            kept: crate::sync::AtomicBool::new(false),
            wakee_flips: crate::sync::AtomicU32::new(0),
            last_wakee: crate::sync::AtomicU32::new(crate::task::NIL),
            wakee_flip_decay_ns: AtomicU64::new(0),
            recent_used_cpu: crate::sync::AtomicU32::new(0),
        }
    }

    /// Sets `wake_wide`'s state: the flips, the last wakee and the stamp of
    /// the flips' last halving, ns (a spawn's copy of its parent's, or a
    /// value given from outside).
    pub(crate) fn set_flip_state(&self, flips: u32, last_wakee: u32, decay_ns: u64) {
        self.wakee_flips.store(flips, Ordering::Relaxed);
        self.last_wakee.store(last_wakee, Ordering::Relaxed);
        self.wakee_flip_decay_ns.store(decay_ns, Ordering::Relaxed);
    }
}

/// Task ids per chunk of [`Scheduler`]'s task cells.
pub(crate) const HOME_CHUNK: usize = 128;
/// Chunks per directory of [`Scheduler`]'s task cells.
pub(crate) const DIR_CHUNKS: usize = 256;
/// A directory of cell chunks (each allocated on first use).
pub(crate) type CellDir = alloc::boxed::Box<[spin::Once<Vec<TaskCell>>]>;
/// [`TaskCell::home`]: no task with this id.
pub(crate) const HOME_NONE: u32 = u32::MAX;
/// Where [`Scheduler::ttwu_queue_from`] reads a wakee's state: read once,
/// at the place it is copied to (the target's slot or wake list).
pub(crate) trait WakeeState {
    /// Whether the task may run on `cpu`.
    fn allows(&self, cpu: CpuId) -> bool;
    /// Runs `f` on the state, which is the destination's afterwards.
    fn with<R>(&self, f: impl FnOnce(&SchedTask) -> R) -> R;
    /// The state a wake list entry carries: a copy, or `None` for a state
    /// that waits in the task's cell until the entry is drained.
    fn for_wake_list(&self) -> Option<SchedTask>;
    /// Enqueues the task, `id`, on `rq` (`ttwu_do_activate`).
    #[inline(always)]
    fn ttwu_enqueue(&self, rq: &mut Rq, id: TaskId, wf: WakeFlags) -> WakeupDecision {
        self.with(|t| rq.ttwu_enqueue(id, t, wf))
    }
}

impl WakeeState for &SchedTask {
    #[inline(always)]
    fn allows(&self, cpu: CpuId) -> bool {
        self.cpus_allowed.has(cpu)
    }

    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce(&SchedTask) -> R) -> R {
        f(self)
    }

    #[inline(always)]
    fn for_wake_list(&self) -> Option<SchedTask> {
        Some(**self)
    }
}

/// A woken task in transit ([`HOME_TRANSIT`]) whose state is still in its
/// cell: copied from there straight into its destination, under the cell's
/// lock taken after the destination's (runqueue, then cell, as
/// [`Scheduler::schedule`] parks a sleeper; wake list, then cell), and the
/// cell emptied. Nothing else touches a cell's state in transit (every
/// other user wants [`HOME_PARKED`]), so the state is the one the waker
/// placed. Saves the copy out of the cell before the destination's lock.
pub(crate) struct InTransit<'a, P: Platform> {
    pub(crate) sched: &'a Scheduler<P>,
    pub(crate) cell: &'a TaskCell,
    /// `cpus_allowed.has(target)`, read when it was placed.
    pub(crate) allowed: bool,
}

impl<P: Platform> WakeeState for InTransit<'_, P> {
    #[inline(always)]
    fn allows(&self, _cpu: CpuId) -> bool {
        self.allowed
    }

    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce(&SchedTask) -> R) -> R {
        let mut p = self.sched.lock(&self.cell.parked);
        let t = p
            .as_ref()
            .expect("a woken task keeps its state in its cell until it is queued");
        let r = f(t);
        *p = None;
        self.cell.kept.store(false, Ordering::Relaxed);
        r
    }

    #[inline(always)]
    fn for_wake_list(&self) -> Option<SchedTask> {
        None
    }

    /// Back on the CPU it slept on, with nothing changed in its cell
    /// ([`TaskCell::kept`]): its slot there is taken back as it is, not
    /// copied into.
    #[inline(always)]
    fn ttwu_enqueue(&self, rq: &mut Rq, id: TaskId, wf: WakeFlags) -> WakeupDecision {
        let cell = self.cell;
        let mut p = self.sched.lock(&cell.parked);
        let t = p
            .as_ref()
            .expect("a woken task keeps its state in its cell until it is queued");
        let kept = cell.kept.load(Ordering::Relaxed)
            && cell.last_cpu.load(Ordering::Relaxed) == rq.cpu().as_u32();
        let d = match kept.then(|| rq.ttwu_enqueue_kept(id, t, wf)).flatten() {
            Some(d) => d,
            None => rq.ttwu_enqueue(id, t, wf),
        };
        *p = None;
        cell.kept.store(false, Ordering::Relaxed);
        d
    }
}

/// [`TaskCell::home`]: asleep, its state parked in the cell.
pub(crate) const HOME_PARKED: u32 = u32::MAX - 1;
/// [`TaskCell::home`]: the task is on its way to this CPU (in a wake list,
/// or being enqueued by a waker).
pub(crate) const HOME_TRANSIT: u32 = 1 << 31;

impl<P: Platform> Scheduler<P> {
    /// `nr_cpus` empty runqueues that accept task ids below `capacity`, on a
    /// flat machine ([`Topology::flat`]: one cache, one node). Allocates only
    /// the per-CPU arrays: each runqueue and wake list grows with the tasks it
    /// holds (memory is O(tasks) + O(CPUs)), or is pre-sized with
    /// [`Scheduler::try_reserve`]. Panics unless `1 <= nr_cpus <= MAX_CPUS`.
    pub fn new(platform: P, cfg: Arc<SchedConfig>, nr_cpus: usize, capacity: usize) -> Self {
        assert!(
            (1..=MAX_CPUS).contains(&nr_cpus),
            "{nr_cpus} CPUs: 1 to {MAX_CPUS} supported"
        );
        Self::with_topology(platform, cfg, Topology::flat(nr_cpus), capacity)
    }

    /// One empty runqueue per CPU of `topology`, accepting task ids below
    /// `capacity` (see [`Scheduler::new`] for the memory).
    pub fn with_topology(
        platform: P,
        cfg: Arc<SchedConfig>,
        topology: Topology,
        capacity: usize,
    ) -> Self {
        let nr_cpus = topology.nr_cpus();
        let now_ns = platform.now_ns();
        let now_jiffies = now_ns / cfg.tick_ns().max(1);
        let slots = build_domains(&topology)
            .into_iter()
            .zip(CpuId::range(nr_cpus))
            .map(|(doms, cpu)| CpuSlot {
                rq: Mutex::named("rq", {
                    let mut rq = Rq::new(cpu, cfg.clone(), capacity);
                    rq.set_cpu_capacity(topology.capacity_of(cpu));
                    rq
                }),
                wake_list: Mutex::named("wake_list", Vec::new()),
                wake_pending: crate::sync::AtomicBool::new(false),
                summary: CpuSummary {
                    idle: AtomicBool::new(true),
                    rq_empty: AtomicBool::new(true),
                    nr_idle_scan: AtomicU32::new(topology.llc_mask(cpu).weight() as u32),
                    ..Default::default()
                },
                lb: core::array::from_fn(|l| DomainState {
                    last_balance_jiffies: AtomicU64::new(now_jiffies),
                    interval_ms: AtomicU32::new(
                        doms.as_slice().get(l).map_or(1, |sd| sd.min_interval_ms),
                    ),
                    nr_balance_failed: AtomicU32::new(0),
                    group_imbalance: AtomicBool::new(false),
                    ni: newidle::NewidleState::new(now_ns),
                    stats: Default::default(),
                }),
                next_balance_jiffies: AtomicU64::new(now_jiffies),
                rng: {
                    let r = newidle::RngCell::default();
                    r.seed(newidle::Lfsr113::new(newidle::rng_seed(0, cpu)));
                    r
                },
                doms,
            })
            .collect();
        cfg.tunables.set_ncpus(nr_cpus as u32);
        Scheduler {
            cfg,
            platform,
            slots,
            capacity,
            topology,
            cells: (0..capacity.div_ceil(HOME_CHUNK * DIR_CHUNKS))
                .map(|_| spin::Once::new())
                .collect(),
            overloaded: AtomicU32::new(0),
            push_count: AtomicU64::new(0),
            active: CpuMask::first_n(nr_cpus).words().map(AtomicU64::new),
            nr_inactive: AtomicU32::new(0),
            nr_misfit: AtomicU32::new(0),
        }
    }

    /// The machine's topology.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// `cpu`'s scheduling domains, lowest level first (`for_each_domain`).
    pub fn domains(&self, cpu: CpuId) -> &[SchedDomain] {
        self.slots[cpu.index()].doms.as_slice()
    }

    /// The level (an index into [`Self::domains`]) of `cpu`'s lowest domain
    /// that spans `other`, or none (`for_each_domain` until
    /// `cpumask_test_cpu(other, sched_domain_span(sd))`).
    pub(crate) fn lowest_level_spanning(&self, cpu: CpuId, other: CpuId) -> Option<usize> {
        self.domains(cpu).iter().position(|sd| sd.span.has(other))
    }

    /// Periodic balancing passes in a row at `cpu`'s domain `level` (an
    /// index into [`Self::domains`]) that found an imbalance and moved
    /// nothing (`sd->nr_balance_failed`, kept by Linux's `sched_balance_rq`
    /// rules); a newly idle pass leaves it, a move or a balanced level
    /// resets it.
    pub fn nr_balance_failed(&self, cpu: CpuId, level: usize) -> u32 {
        self.slots[cpu.index()].lb[level]
            .nr_balance_failed
            .load(Ordering::Relaxed)
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.slots.len()
    }

    /// Task ids must be below this.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Sizes every CPU's runqueue and wake list for `per_cpu` tasks, so that
    /// nothing allocates while no CPU holds or is sent more than that (a
    /// kernel calls this at boot: its runqueue and wake-list locks are taken
    /// with interrupts masked, where it must not allocate).
    pub fn try_reserve(&self, per_cpu: usize) -> Result<(), RqError> {
        for cpu in CpuId::range(self.nr_cpus()) {
            {
                let mut rq = self.cpu_rq(cpu);
                let more = per_cpu.saturating_sub(rq.slots_in_use());
                rq.try_reserve(more)?;
            }
            let irq = self.platform.irq_save();
            let r = {
                let mut list = self.lock(&self.slots[cpu.index()].wake_list);
                let more = per_cpu.saturating_sub(list.len());
                list.try_reserve_exact(more)
            };
            self.platform.irq_restore(irq);
            r?;
        }
        Ok(())
    }

    /// Locks `m`, polling with [`Platform::cpu_relax`] while it is held.
    pub(crate) fn lock<'a, T>(&self, m: &'a Mutex<T>) -> MutexGuard<'a, T> {
        // Under loom, its own blocking lock: loom switches threads there.
        #[cfg(all(loom, test))]
        return m.lock();
        #[cfg(not(all(loom, test)))]
        m.lock_relax(false, || self.platform.cpu_relax())
    }

    /// [`Self::lock`] for the second of two locks of one class taken in a
    /// fixed order (`double_rq_lock`; the lock validator's "nested").
    fn lock_nested<'a, T>(&self, m: &'a Mutex<T>) -> MutexGuard<'a, T> {
        #[cfg(all(loom, test))]
        return m.lock();
        #[cfg(not(all(loom, test)))]
        m.lock_relax(true, || self.platform.cpu_relax())
    }

    /// Heap bytes held by the runqueues, wake lists, domains and topology
    /// (memory accounting).
    pub fn heap_bytes(&self) -> usize {
        let mut n = self.slots.len() * core::mem::size_of::<CpuSlot>()
            + self.topology.heap_bytes()
            + self.cells.capacity() * core::mem::size_of::<spin::Once<CellDir>>()
            + self
                .cells
                .iter()
                .filter_map(|d| d.get())
                .map(|d| {
                    d.len() * core::mem::size_of::<spin::Once<Vec<TaskCell>>>()
                        + d.iter()
                            .filter_map(|c| c.get())
                            .map(|c| c.capacity() * core::mem::size_of::<TaskCell>())
                            .sum::<usize>()
                })
                .sum::<usize>();
        for cpu in CpuId::range(self.nr_cpus()) {
            n += self.cpu_rq(cpu).heap_bytes();
            if self.slots[cpu.index()]
                .summary
                .group_removed
                .get()
                .is_some()
            {
                n += core::mem::size_of::<[crate::fair::group::GroupRemoved; 1]>();
            }
            let irq = self.platform.irq_save();
            n += self.lock(&self.slots[cpu.index()].wake_list).capacity()
                * core::mem::size_of::<WakeEntry>();
            self.platform.irq_restore(irq);
        }
        n
    }

    /// The lock-free summary of `cpu`.
    pub fn summary(&self, cpu: CpuId) -> &CpuSummary {
        &self.slots[cpu.index()].summary
    }

    /// CPUs whose published summary counts two or more runnable tasks (the
    /// ones balancing could pull from); a newly idle CPU does not balance
    /// while there are none.
    pub fn overloaded_cpus(&self) -> u32 {
        self.overloaded.load(Ordering::Relaxed)
    }

    /// Locks `cpu`'s runqueue with interrupts masked (`cpu_rq(cpu)` + `rq_lock_irqsave`).
    pub fn cpu_rq(&self, cpu: CpuId) -> RqGuard<'_, P> {
        let irq = self.platform.irq_save();
        let slot = &self.slots[cpu.index()];
        RqGuard {
            guard: Some(self.lock(&slot.rq)),
            summary: &slot.summary,
            overloaded: &self.overloaded,
            push_count: &self.push_count,
            platform: &self.platform,
            irq: Some(irq),
        }
    }

    /// The raw lock of `cpu`'s runqueue, for a kernel that holds it across a
    /// context switch and releases it from the thread switched to (Linux's
    /// `finish_task_switch`). Mask interrupts before taking it, and call
    /// [`Self::publish`] before releasing it.
    pub fn rq_lock(&self, cpu: CpuId) -> &Mutex<Rq> {
        &self.slots[cpu.index()].rq
    }

    /// `cpu`'s runqueue through the one reference to the scheduler (a
    /// simulator driving it from one thread): nobody else can hold its
    /// lock, so none is taken. What it changes is not published
    /// ([`Self::publish`] needs the lock held).
    pub fn rq_mut(&mut self, cpu: CpuId) -> &mut Rq {
        self.slots[cpu.index()].rq.get_mut()
    }

    /// Republishes the lock-free summary of `rq`'s CPU and hands a pending
    /// change of its one-shot timer to the platform (the guards do both when
    /// they are dropped). Call with the runqueue locked, before releasing it.
    pub fn publish(&self, rq: &mut Rq) {
        flush_hrtick(rq, &self.platform);
        let s = &self.slots[rq.cpu().index()].summary;
        publish(rq, s, &self.overloaded, &self.push_count);
    }

    /// Locks two runqueues in CPU order (`double_rq_lock`); `a != b`.
    /// [`DoubleRqGuard::pair`] gives them back in argument order.
    pub fn double_rq_lock(&self, a: CpuId, b: CpuId) -> DoubleRqGuard<'_, P> {
        assert_ne!(a, b, "double_rq_lock of one CPU");
        let irq = self.platform.irq_save();
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        let glo = self.lock(&self.slots[lo.index()].rq);
        let ghi = self.lock_nested(&self.slots[hi.index()].rq);
        let (ga, gb) = if a < b { (glo, ghi) } else { (ghi, glo) };
        DoubleRqGuard {
            a: Some(ga),
            b: Some(gb),
            sa: &self.slots[a.index()].summary,
            sb: &self.slots[b.index()].summary,
            overloaded: &self.overloaded,
            push_count: &self.push_count,
            platform: &self.platform,
            irq,
        }
    }

    /// May `t` run on `cpu` now: in its mask and active (`is_cpu_allowed`)?
    fn allowed(&self, t: &SchedTask, cpu: CpuId) -> bool {
        cpu.index() < self.nr_cpus() && t.cpus_allowed.has(cpu) && self.cpu_active(cpu)
    }

    /// The CPUs `t` may run on now: its mask and the active CPUs.
    fn allowed_mask(&self, t: &SchedTask) -> CpuMask {
        // Every CPU active (always, but across a hotplug): the affinity
        // as it is, without reading the active mask word by word. A CPU
        // deactivated after this load is caught as after a stale mask:
        // every enqueue re-checks its CPU (`recheck_active`).
        if self.nr_inactive.load(Ordering::Acquire) == 0 {
            return t.cpus_allowed;
        }
        t.cpus_allowed.and(&self.active_mask())
    }

    /// The first CPU `t` may run on now; CPU 0 if none (the callers break
    /// the affinity of such a task first, [`Self::select_fallback_rq`]).
    fn first_allowed(&self, t: &SchedTask) -> CpuId {
        CpuId::range(self.nr_cpus())
            .find(|&c| self.allowed(t, c))
            .unwrap_or(CpuId::BOOT)
    }

    /// `available_idle_cpu`: active, idle, nothing runnable, no wakeup
    /// on its way. The idle flag first: the test a busy CPU fails (a
    /// wakeup's LLC scan looks at every CPU of a busy LLC), with no
    /// ordered load of the active mask for it.
    fn idle(&self, cpu: CpuId) -> bool {
        self.idle_in(&self.slots[cpu.index()], cpu)
    }

    /// [`Self::idle`] for `cpu`'s slot `slot`, taken by the caller (the
    /// LLC scan's loop keeps the slots' address and length in registers,
    /// where each `self.slots` read is made again after an atomic load).
    #[inline(always)]
    fn idle_in(&self, slot: &CpuSlot, cpu: CpuId) -> bool {
        let s = &slot.summary;
        s.idle.load(Ordering::Relaxed)
            && self.cpu_active(cpu)
            && s.nr_running.load(Ordering::Relaxed) == 0
            && !slot.wake_pending.load(Ordering::Acquire)
    }

    fn nr(&self, cpu: CpuId) -> u32 {
        self.slots[cpu.index()]
            .summary
            .nr_running
            .load(Ordering::Relaxed)
    }

    /// `migrate_task_rq_fair` for a sleeper no runqueue holds, woken onto
    /// `target` (or removed: no CPU): it leaves the averages of the
    /// runqueue it is attached to, the CPU's root or one of its group
    /// runqueues, through that CPU's [`RemovedLoad`] or its
    /// [`CpuSummary::group_removed`], synchronised to now. Woken on the CPU
    /// it is attached to, it stays attached, unless its group changed while
    /// it slept (`task_change_group_fair`'s detach).
    /// `target` is a CPU's index, or `usize::MAX` for none. Returns whether
    /// it changed `t` (it was attached elsewhere).
    pub(crate) fn remove_sleeper_load(
        &self,
        t: &mut crate::task::SchedTask,
        target: usize,
    ) -> bool {
        let c = t.se.avg_cpu as usize;
        if c >= self.nr_cpus() {
            // Attached to a group runqueue, or to none.
            return self.remove_grouped_sleeper_load(t, target);
        }
        // Attached to a CPU's root runqueue: kept there if it wakes there.
        // (Its group is the root: a sleeper moved to a group leaves the
        // root's averages when it is moved, `sched_move_task`.)
        if c == target {
            return false;
        }
        let w = t.se.load.weight as u64;
        t.se.avg
            .update_entity(self.remote_clock_pelt(c), false, false, false, w);
        self.slots[c].summary.removed.add(&t.se.avg);
        t.se.avg_cpu = crate::task::AVG_DETACHED;
        true
    }

    /// CPU `c`'s PELT clock now, estimated without its lock: the platform's
    /// clock less the lag `c` last published (Linux's `migrate_se_pelt_lag`
    /// estimates an idle CPU's the same way, from `clock_pelt_idle` and
    /// `clock_idle`; for a busy one it takes the runqueue's last update).
    /// On a CPU of full capacity, the platform's clock.
    #[inline]
    fn remote_clock_pelt(&self, c: usize) -> u64 {
        let lag = self.slots[c].summary.pelt_lag_ns.load(Ordering::Relaxed);
        self.platform.now_ns().saturating_sub(lag)
    }

    /// [`Self::remove_sleeper_load`] for a sleeper attached to a group
    /// runqueue (or to none): recorded in that CPU's
    /// [`CpuSummary::group_removed`], unless it wakes on that CPU in that
    /// group.
    #[cold]
    #[inline(never)]
    fn remove_grouped_sleeper_load(&self, t: &mut crate::task::SchedTask, target: usize) -> bool {
        // A grouped task's identity names its group runqueue's CPU.
        let Some((c, g)) = crate::fair::group::group_avg_owner(t.se.avg_cpu) else {
            return false;
        };
        if (c == target && g == t.group) || c >= self.nr_cpus() {
            return false;
        }
        let s = &self.slots[c].summary;
        // Built with the group's part on that CPU by `create_task_group`; a
        // group built on a runqueue alone has no record (its sleeper's load
        // stays and decays there).
        let Some(rec) = s.group_removed.get() else {
            return false;
        };
        let w = t.se.load.weight as u64;
        t.se.avg
            .update_entity(self.remote_clock_pelt(c), false, false, false, w);
        rec[0].add(g, &t.se.avg);
        s.removed
            .nr
            .fetch_or(RemovedLoad::GROUPS_PENDING, Ordering::Release);
        t.se.avg_cpu = crate::task::AVG_DETACHED;
        true
    }

    /// `cpu_load()`: the CPU's fair PELT load average, as last published.
    fn load_avg(&self, cpu: CpuId) -> u64 {
        self.slots[cpu.index()]
            .summary
            .load_avg
            .load(Ordering::Relaxed)
    }

    /// RT-overloaded CPUs as last published (Linux's `rd->rto_count`).
    #[inline]
    pub(crate) fn rto_count(&self) -> u32 {
        self.push_count.load(Ordering::Relaxed) as u32
    }

    /// DL-overloaded CPUs as last published (Linux's `rd->dlo_count`).
    #[inline]
    pub(crate) fn dlo_count(&self) -> u32 {
        (self.push_count.load(Ordering::Relaxed) >> 32) as u32
    }

    /// Is some CPU RT- or DL-overloaded? One load.
    #[inline]
    pub(crate) fn any_push_overloaded(&self) -> bool {
        self.push_count.load(Ordering::Relaxed) != 0
    }

    /// After an enqueue on `cpu`: the RT and deadline pushes if some CPU is
    /// overloaded (one load otherwise). `this_cpu` is the caller's CPU.
    #[inline]
    pub(crate) fn push_if_overloaded(&self, cpu: CpuId, this_cpu: CpuId) {
        if self.any_push_overloaded() {
            self.push_rt_if_overloaded(cpu, this_cpu);
            self.push_dl_if_overloaded(cpu, this_cpu);
        }
    }

    /// Sends a reschedule IPI to `cpu` if it must act now (an immediate
    /// request); lazy requests wait for that CPU's tick.
    pub(crate) fn kick_if_needed(&self, cpu: CpuId, this_cpu: CpuId, resched: Resched) {
        if cpu != this_cpu && resched == Resched::Now {
            self.platform.send_resched_ipi(cpu);
        }
    }

    /// Enqueues task `id` on `cpu` with `enqueue` (that runqueue locked, its
    /// clock brought up to date), records the placement
    /// ([`Platform::set_task_cpu`]) and kicks `cpu` if it must act now. The
    /// one place where a task lands on a runqueue from outside it. Inlined
    /// into each caller, as the sequence was before it was shared: as a
    /// call of its own (with the task's state captured by value, since
    /// passed by reference) it cost a local wakeup 0.33 µs under `-icount`.
    #[inline(always)]
    fn enqueue_on<E>(
        &self,
        cpu: CpuId,
        this_cpu: CpuId,
        id: TaskId,
        enqueue: impl FnOnce(&mut Rq) -> Result<WakeupDecision, E>,
    ) -> Result<WakeupDecision, E> {
        let d = {
            let mut rq = self.cpu_rq(cpu);
            rq.update_rq_clock(self.platform.now_ns());
            let d = enqueue(&mut rq)?;
            self.placed(id, cpu);
            d
        };
        self.kick_if_needed(cpu, this_cpu, d.resched);
        self.recheck_active(cpu);
        // `task_woken_rt` / `task_woken_dl`: an RT task queued behind a
        // higher one, or a deadline task behind an earlier one, moves on
        // (one load of the overload counts while no CPU is overloaded).
        self.push_if_overloaded(cpu, this_cpu);
        Ok(d)
    }

    /// Linux's `ttwu_queue_cond()` (kernel/sched/core.c, 6.0 to 7.x): should
    /// a wakeup of `t` on `cpu`, by a waker on `this_cpu`, go through
    /// `cpu`'s wake list (and an IPI) rather than the waker locking that
    /// runqueue? With TTWU_QUEUE, and `cpu` online and allowed to `t`: yes
    /// when the two CPUs do not share a last-level cache (the waker stays
    /// off remote cache lines); otherwise only when `cpu` is another CPU
    /// whose runqueue holds nothing at all ([`CpuSummary::rq_empty`]:
    /// delayed fair tasks count, as they do in `rq->nr_running`), so that
    /// the idle, or soon idle, CPU does the enqueue while the busy waker
    /// goes on. A busy CPU in the same LLC is enqueued on directly, and the
    /// waker decides its preemption. (Linux's other conditions, the stop
    /// class and sched_ext, have no counterpart here; before 6.0, f3dd3f674555,
    /// the idle case also required the wakee to be still switching out.)
    pub fn ttwu_queue_cond(&self, this_cpu: CpuId, cpu: CpuId, t: &SchedTask) -> bool {
        self.ttwu_queue_cond_allowed(this_cpu, cpu, t.cpus_allowed.has(cpu))
    }

    /// [`Self::ttwu_queue_cond`] for a task that is (`allowed`) or is not
    /// allowed on `cpu`.
    #[inline]
    fn ttwu_queue_cond_allowed(&self, this_cpu: CpuId, cpu: CpuId, allowed: bool) -> bool {
        if !self.cfg.feat(Feature::TtwuQueue) || !self.cpu_active(cpu) || !allowed {
            return false;
        }
        if !self.topology.share_cache(this_cpu, cpu) {
            return true;
        }
        cpu != this_cpu
            && self.slots[cpu.index()]
                .summary
                .rq_empty
                .load(Ordering::Relaxed)
    }

    /// Wakes a fully dequeued task on `cpu` (chosen by [`Self::select_task_rq`]):
    /// directly when `cpu` is this CPU; through the target's wake list and an
    /// IPI when [`Self::ttwu_queue_cond`] says so (TTWU_QUEUE); else by
    /// locking the remote runqueue, enqueueing there and deciding the
    /// preemption (an IPI only if it must act now).
    pub fn ttwu_queue(
        &self,
        cpu: CpuId,
        this_cpu: CpuId,
        id: TaskId,
        task: SchedTask,
        wf: WakeFlags,
    ) -> WakeOutcome {
        self.ttwu_queue_ref(cpu, this_cpu, id, &task, wf)
    }

    /// [`Self::ttwu_queue`] of a state the caller keeps: copied once, into
    /// the wake-list entry or the runqueue slot (a wakeup's hot path; a
    /// [`SchedTask`] is over 300 bytes, each copy a `memcpy`).
    pub(crate) fn ttwu_queue_ref(
        &self,
        cpu: CpuId,
        this_cpu: CpuId,
        id: TaskId,
        task: &SchedTask,
        wf: WakeFlags,
    ) -> WakeOutcome {
        self.ttwu_queue_from(cpu, this_cpu, id, task, wf)
    }

    /// [`Self::ttwu_queue_ref`] from wherever the wakee's state is
    /// ([`WakeeState`]: a reference, or the cell of a task in transit, read
    /// under the locks of its destination so that it is copied once).
    pub(crate) fn ttwu_queue_from(
        &self,
        cpu: CpuId,
        this_cpu: CpuId,
        id: TaskId,
        task: impl WakeeState,
        wf: WakeFlags,
    ) -> WakeOutcome {
        let wake = |rq: &mut Rq| Ok::<_, core::convert::Infallible>(task.ttwu_enqueue(rq, id, wf));
        if cpu == this_cpu {
            let Ok(d) = self.enqueue_on(cpu, this_cpu, id, wake);
            return WakeOutcome::Local(d);
        }
        if self.ttwu_queue_cond_allowed(this_cpu, cpu, task.allows(cpu)) {
            let irq = self.platform.irq_save();
            // The list grows by doubling past its high-water mark (never, once
            // reserved); if growing fails, wake the task directly below.
            let first = {
                let mut list = self.lock(&self.slots[cpu.index()].wake_list);
                if list.len() == list.capacity() && list.try_reserve(1).is_err() {
                    None
                } else {
                    list.push(WakeEntry {
                        id,
                        task: task.for_wake_list(),
                        wf,
                    });
                    self.slots[cpu.index()]
                        .wake_pending
                        .store(true, Ordering::Release);
                    Some(list.len() == 1)
                }
            };
            self.platform.irq_restore(irq);
            if let Some(first) = first {
                // Mark the target busy at once, so placement stops treating it as idle.
                self.slots[cpu.index()]
                    .summary
                    .idle
                    .store(false, Ordering::Relaxed);
                if first {
                    self.platform.send_resched_ipi(cpu);
                }
                self.recheck_active(cpu);
                return WakeOutcome::Queued { cpu, ipi: first };
            }
        }
        let Ok(d) = self.enqueue_on(cpu, this_cpu, id, wake);
        WakeOutcome::Remote(cpu, d)
    }

    /// Drains `rq`'s CPU wake list into it (`sched_ttwu_pending`); call with
    /// that CPU's runqueue locked, on that CPU. Returns the wakeups done.
    /// As in Linux, a queued wakeup keeps only WF_MIGRATED of its wake flags
    /// (`ttwu_do_activate(rq, p, p->sched_remote_wakeup ? WF_MIGRATED : 0)`):
    /// the waker's WF_SYNC and WF_RQ_SELECTED are hints about the waker's CPU,
    /// so the wakeup decision here is the non-sync one. It is made as from an
    /// interrupt (`WakeFlags::IRQ`): Linux lands a wake list from the
    /// target's IPI (`sched_ttwu_pending` under
    /// `__flush_smp_call_function_queue`, where `in_task()` is false) or from
    /// its idle loop, where the running task is the idle task; so the
    /// ineligible-waker rule of 6.19-rc1..rc6 (`in_task() &&
    /// !entity_eligible(cfs_rq, se)`), which blames the running task for a
    /// wakeup it made, never applies to a queued wakeup.
    pub fn sched_ttwu_pending(&self, rq: &mut Rq) -> usize {
        let slot = &self.slots[rq.cpu().index()];
        // An entry pushed after this look comes with its own kick (the
        // waker's IPI for the first entry of an empty list).
        if !slot.wake_pending.load(Ordering::Acquire) {
            return 0;
        }
        self.drain_wake_list(rq)
    }

    /// [`Self::sched_ttwu_pending`] whatever the list's flag says (it takes
    /// the list's lock every time); for CPU hotplug's sweeps.
    #[inline]
    pub(crate) fn drain_wake_list(&self, rq: &mut Rq) -> usize {
        let cpu = rq.cpu();
        let slot = &self.slots[cpu.index()];
        let mut list = self.lock(&slot.wake_list);
        let n = list.len();
        for e in list.iter() {
            let wf = (e.wf & WakeFlags::MIGRATED) | WakeFlags::IRQ;
            match &e.task {
                Some(t) => {
                    rq.ttwu_enqueue(e.id, t, wf);
                    self.placed(e.id, cpu);
                }
                None => {
                    let cell = self
                        .cell(e.id)
                        .expect("a task in a wake list without its state has a cell");
                    let wakee = InTransit {
                        sched: self,
                        cell,
                        allowed: true,
                    };
                    wakee.ttwu_enqueue(rq, e.id, wf);
                    self.placed_cell(e.id, cell, cpu);
                }
            }
        }
        list.clear();
        slot.wake_pending.store(false, Ordering::Relaxed);
        n
    }

    /// Are wakeups queued for `cpu`? (Takes the list's lock with
    /// interrupts masked, as every other user of it.)
    pub fn has_pending_wakeups(&self, cpu: CpuId) -> bool {
        let irq = self.platform.irq_save();
        let pending = !self.lock(&self.slots[cpu.index()].wake_list).is_empty();
        self.platform.irq_restore(irq);
        pending
    }

    /// The lock-free flag that says `cpu`'s wake list holds entries (for
    /// diagnostics that must not take a lock, e.g. a watchdog's dump).
    pub fn wake_pending_flag(&self, cpu: CpuId) -> bool {
        self.slots
            .get(cpu.index())
            .is_some_and(|s| s.wake_pending.load(Ordering::Acquire))
    }

    /// Places and wakes a new task (fork balancing); returns its CPU and what
    /// happened. No admission control, neither the deadline bandwidth nor
    /// the deadline affinity rule: [`Self::spawn`] applies both.
    pub fn wake_up_new_task(
        &self,
        id: TaskId,
        mut task: SchedTask,
        this_cpu: CpuId,
    ) -> (CpuId, WakeupDecision) {
        task.cpu = this_cpu;
        let (cpu, _) = self.select_task_rq(&task, this_cpu, WakeFlags::FORK);
        let Ok(d) = self.enqueue_on(cpu, this_cpu, id, |rq| {
            Ok::<_, core::convert::Infallible>(rq.wake_up_new_task(id, task))
        });
        (cpu, d)
    }

    /// Changes a task's allowed CPUs. A queued task that may no longer stay
    /// is moved at once to an allowed CPU; a running one is asked to
    /// reschedule (the kernel then calls [`Self::move_misplaced`] once it is
    /// off the CPU); a task held nowhere (asleep) is the caller's to update.
    /// Returns false if the mask allows no online CPU, or is one a deadline
    /// task may not have ([`Self::set_affinity`]'s rule): nothing changes.
    pub fn set_cpus_allowed(&self, cpu: CpuId, id: TaskId, mask: CpuMask, this_cpu: CpuId) -> bool {
        if !mask.intersects(&self.active_mask()) {
            return false;
        }
        let mut rq = self.cpu_rq(cpu);
        let Some(&t) = rq.task(id) else { return true };
        if self.dl_check_new_affinity(&t, &mask).is_err() {
            return false;
        }
        let running = rq.curr() == Some(id);
        let stays = mask.has(cpu);
        rq.set_cpus_allowed(id, mask);
        if stays {
            return true;
        }
        if running {
            let r = rq.resched_curr(Resched::Now);
            drop(rq);
            self.kick_if_needed(cpu, this_cpu, r);
            return true;
        }
        if t.state == TaskState::Queued {
            drop(rq);
            self.move_misplaced(cpu, id);
        }
        true
    }

    /// Scratch for [`Scheduler::check`], sized for every task id (a slot
    /// count never exceeds the id limit, so it is always big enough).
    pub fn check_scratch(&self) -> CheckScratch {
        CheckScratch {
            owner: alloc::vec![NO_OWNER; self.capacity],
            seen: Vec::with_capacity(self.capacity),
        }
    }

    /// Checks every runqueue at one instant: locks them all in CPU order
    /// (interrupts masked), runs [`Rq::check_with`] on each, and checks that
    /// no task is held (queued, delayed, blocked, or running) by two
    /// runqueues. Allocates nothing (the scratch is the caller's, from
    /// [`Scheduler::check_scratch`]); O(tasks + slots). Tasks in a wake
    /// list or in transit between runqueues are held by none, which is fine.
    pub fn check(&self, scratch: &mut CheckScratch) -> Result<(), CheckError> {
        scratch.owner.fill(NO_OWNER);
        let irq = self.platform.irq_save();
        let r = self.check_from(CpuId::BOOT, scratch);
        self.platform.irq_restore(irq);
        r
    }

    /// Locks runqueue `cpu`, checks it and records what it holds, then does
    /// the same for the next CPUs with this lock still held: every runqueue
    /// is read under its lock and all of them stay locked until the last one
    /// is checked, so what is seen is one instant's state.
    fn check_from(&self, cpu: CpuId, scratch: &mut CheckScratch) -> Result<(), CheckError> {
        let Some(slot) = self.slots.get(cpu.index()) else {
            return Ok(());
        };
        // Every runqueue at once, in CPU order: the order `double_rq_lock`
        // takes two in, so the lock validator is told they nest.
        let rq = if cpu == CpuId::BOOT {
            self.lock(&slot.rq)
        } else {
            self.lock_nested(&slot.rq)
        };
        let err = |task, other_cpu, what| CheckError {
            cpu,
            task,
            other_cpu,
            what,
        };
        rq.check_with(&mut scratch.seen)
            .map_err(|what| err(None, None, what))?;
        for id in rq.tasks().map(|(id, _)| id).chain(rq.curr()) {
            let Some(o) = scratch.owner.get_mut(id.0 as usize) else {
                return Err(err(Some(id), None, "task id above the limit"));
            };
            if *o != NO_OWNER && *o as usize != cpu.index() {
                let other = Some(CpuId::wrapping(*o as usize));
                return Err(err(Some(id), other, "task held by two runqueues"));
            }
            *o = cpu.index() as u16;
        }
        match CpuId::new(cpu.index() + 1) {
            Some(next) => self.check_from(next, scratch),
            None => Ok(()),
        }
    }

    /// Moves a queued, not running task that may not run on `cpu` (its
    /// mask excludes it, or `cpu` is inactive) to the idlest CPU it may use
    /// (its affinity broken first if that is none,
    /// `Self::select_fallback_rq`). Returns the new CPU.
    pub fn move_misplaced(&self, cpu: CpuId, id: TaskId) -> Option<CpuId> {
        let (t, broken) = {
            let mut rq = self.cpu_rq(cpu);
            let mut t = *rq.task(id)?;
            if self.allowed(&t, cpu) {
                return None;
            }
            let broken = self.select_fallback_rq(&mut t);
            if broken.is_some() {
                rq.set_cpus_allowed(id, t.cpus_allowed);
            }
            (t, broken)
        };
        self.report_broken(id, broken);
        let target = self.find_idlest_cpu(&t, self.first_allowed(&t));
        let mut locked = self.double_rq_lock(cpu, target);
        let (a, b) = locked.pair();
        let now = self.platform.now_ns();
        a.update_rq_clock(now);
        b.update_rq_clock(now);
        let st = a.detach_task(id).ok()?;
        let d = b.attach_task(id, st);
        self.placed(id, target);
        drop(locked);
        self.kick_if_needed(target, cpu, d.resched);
        self.recheck_active(target);
        Some(target)
    }
}
