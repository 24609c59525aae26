//! Per-CPU data: one cache-line aligned block per CPU, in a static array indexed
//! by `arch::cpu_id()` (room for [`MAX_CPUS`]; a block is a few hundred bytes,
//! its sleep timer list is allocated by [`provision`] for CPUs that exist).
//!
//! Each block holds what the kernel keeps per CPU beside its runqueue (the
//! runqueues themselves live in `sched::smp::Scheduler`, see `crate::sched`):
//! the thread it runs, its preempt count, the lock-free mirror of the
//! runqueue's need-resched state that interrupt exit reads, the idle
//! thread's polling flags, its sleep timer list, and its counters (ticks,
//! interrupts, IPIs, idle time) for `stat`, `sched_debug` and the SMP tests.
//! Every CPU's hot data sits on its own cache lines, so CPUs do not
//! false-share.
//!
//! A block is written by its own CPU, except the need-resched mirror (another
//! CPU may raise it with [`PerCpu::raise_need_resched`], only ever upwards,
//! followed by an IPI or a poll kick), the poll kick, and the sleep timer
//! list (a sleeper may cancel its timer from another CPU after it migrated;
//! the list has its own lock).

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

use sched::{Resched, Rq};

use crate::arch;
use crate::cpumask::{AtomicCpuMask, CpuMask};
use kernel_hal::percpu::{Aligned, CpuLocal};
use kernel_hal::sync::SpinLock;

pub mod liveness;
pub mod timer;

use timer::TimerList;

pub use crate::arch::MAX_CPUS;
pub use kernel_hal::cpu::CpuId;

/// One CPU's data.
pub struct PerCpu {
    /// Index of the thread running here (its idle thread when the runqueue has
    /// no current task).
    pub curr: AtomicU32,
    /// The thread switched away from, for `finish_task_switch`.
    pub prev: AtomicU32,
    /// Preemption is disabled while non-zero (`preempt_disable`). Per CPU:
    /// a thread with a non-zero count cannot be preempted, so it cannot
    /// migrate either.
    pub preempt_count: AtomicU32,
    /// Mirror of `rq.need_resched()` (0 none, 1 lazy, 2 now), updated after
    /// every runqueue operation, read by interrupt exit without the lock.
    pub need_resched: AtomicU8,
    /// The idle thread was just switched in and has not tried newidle
    /// balancing yet.
    pub newidle: AtomicBool,
    /// Kicked as the idle load balancer (a busy CPU's balancing tick,
    /// `crate::sched::tick::nohz_balance_kick`): the idle thread runs the
    /// periodic balance of the tickless CPUs (`_nohz_idle_balance`).
    pub nohz_balance: AtomicBool,
    /// The idle thread halted with this CPU's tick stopped (tickless idle);
    /// `__schedule` restarts the tick when the idle thread leaves.
    pub nohz_idle: AtomicBool,
    /// Times this CPU stopped its tick to idle / was kicked to balance while
    /// tickless.
    pub nohz_entries: AtomicU64,
    pub nohz_kicks: AtomicU64,
    /// Sleeping threads by wake-up time (`sleep_ns`), expired by this CPU's
    /// tick and timer events.
    pub timers: SpinLock<TimerList>,
    /// Ticks seen by this CPU.
    pub ticks: AtomicU64,
    /// Interrupts handled by this CPU (ticks and IPIs included).
    pub interrupts: AtomicU64,
    /// Reschedule IPIs received.
    pub ipis: AtomicU64,
    /// Timer events between ticks (`crate::sched::timer_event`).
    pub timer_events: AtomicU64,
    /// Reschedule IPIs sent to this CPU.
    pub ipis_sent: AtomicU64,
    /// The idle thread polls for work (`crate::sched::cpu_idle`): a CPU that
    /// wants this one to reschedule raises [`PerCpu::poll_kick`] and needs no
    /// IPI (Linux's `TIF_POLLING_NRFLAG`).
    pub polling: AtomicBool,
    /// Set by a CPU that asked this one to reschedule, before it looks at
    /// [`PerCpu::polling`]; cleared by the idle thread.
    pub poll_kick: AtomicBool,
    /// Reschedule requests this CPU saw while polling, without an IPI.
    pub ipis_elided: AtomicU64,
    /// Time spent in the idle thread before its current run, ns.
    pub idle_ns: AtomicU64,
    /// When the idle thread was last switched in (`now_ns`), 0 while another
    /// thread runs.
    pub idle_since: AtomicU64,
    /// Longest completed idle period since [`PerCpu::reset_idle_streak`], ns.
    pub idle_streak_max: AtomicU64,
    /// Periodic load-balancing passes run by this CPU / tasks they pulled.
    pub balance_runs: AtomicU64,
    pub balance_pulled: AtomicU64,
    /// Newidle balancing passes / tasks they pulled.
    pub newidle_runs: AtomicU64,
    pub newidle_pulled: AtomicU64,
    /// The CPU runs the scheduler.
    pub online: AtomicBool,
    /// Context switches on this CPU (the test watchdog's progress signal).
    pub switches: AtomicU64,
    /// Whether this CPU answers reschedule signals and ticks (the
    /// watchdogs' evidence that it runs at all).
    pub liveness: liveness::Liveness,
}

impl PerCpu {
    const fn new() -> Self {
        PerCpu {
            curr: AtomicU32::new(0),
            prev: AtomicU32::new(0),
            preempt_count: AtomicU32::new(0),
            need_resched: AtomicU8::new(0),
            newidle: AtomicBool::new(false),
            nohz_balance: AtomicBool::new(false),
            nohz_idle: AtomicBool::new(false),
            nohz_entries: AtomicU64::new(0),
            nohz_kicks: AtomicU64::new(0),
            timers: SpinLock::named("timers", TimerList::new()),
            ticks: AtomicU64::new(0),
            interrupts: AtomicU64::new(0),
            ipis: AtomicU64::new(0),
            ipis_sent: AtomicU64::new(0),
            polling: AtomicBool::new(false),
            poll_kick: AtomicBool::new(false),
            ipis_elided: AtomicU64::new(0),
            idle_ns: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
            idle_streak_max: AtomicU64::new(0),
            timer_events: AtomicU64::new(0),
            balance_runs: AtomicU64::new(0),
            switches: AtomicU64::new(0),
            balance_pulled: AtomicU64::new(0),
            newidle_runs: AtomicU64::new(0),
            newidle_pulled: AtomicU64::new(0),
            online: AtomicBool::new(false),
            liveness: liveness::Liveness::new(),
        }
    }

    /// Copies the runqueue's need-resched state into the lock-free mirror. Call
    /// with this CPU's runqueue lock held, after any scheduler call.
    pub fn mirror_need_resched(&self, rq: &Rq) {
        self.need_resched
            .store(Self::encode(rq.need_resched()), Ordering::Relaxed);
    }

    /// Raises the mirror to at least `r` (never lowers it). For a CPU that
    /// changed another CPU's runqueue: a stale raise costs one spurious
    /// `schedule()`, which then mirrors the true state.
    pub fn raise_need_resched(&self, r: Resched) {
        self.need_resched
            .fetch_max(Self::encode(r), Ordering::Relaxed);
    }

    fn encode(r: Resched) -> u8 {
        match r {
            Resched::None => 0,
            Resched::Lazy => 1,
            Resched::Now => 2,
        }
    }

    /// The mirrored need-resched state.
    pub fn need_resched(&self) -> Resched {
        match self.need_resched.load(Ordering::Relaxed) {
            0 => Resched::None,
            1 => Resched::Lazy,
            _ => Resched::Now,
        }
    }

    /// Time spent in the idle thread so far, the current idle period included.
    pub fn idle_ns(&self) -> u64 {
        let since = self.idle_since.load(Ordering::Relaxed);
        let cur = if since != 0 {
            arch::now_ns().saturating_sub(since)
        } else {
            0
        };
        self.idle_ns.load(Ordering::Relaxed) + cur
    }

    /// The longest idle period since the last reset, the current one included.
    pub fn idle_streak_max_ns(&self) -> u64 {
        let since = self.idle_since.load(Ordering::Relaxed);
        let cur = if since != 0 {
            arch::now_ns().saturating_sub(since)
        } else {
            0
        };
        self.idle_streak_max.load(Ordering::Relaxed).max(cur)
    }

    /// Forgets the longest idle period (a test starts a measurement). An idle
    /// period in progress counts from now on.
    pub fn reset_idle_streak(&self) {
        self.idle_streak_max.store(0, Ordering::Relaxed);
        let _ = self
            .idle_since
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                (s != 0).then(arch::now_ns)
            });
    }

    /// Accounts a switch at `now`: `from_idle` / `to_idle` say whether the
    /// idle thread leaves / arrives. On this CPU, under its runqueue lock.
    pub(crate) fn account_switch(&self, now: u64, from_idle: bool, to_idle: bool) {
        self.switches.fetch_add(1, Ordering::Relaxed);
        if from_idle {
            let since = self.idle_since.swap(0, Ordering::Relaxed);
            if since != 0 {
                let d = now.saturating_sub(since);
                self.idle_ns.fetch_add(d, Ordering::Relaxed);
                self.idle_streak_max.fetch_max(d, Ordering::Relaxed);
            }
        }
        if to_idle {
            self.idle_since.store(now.max(1), Ordering::Relaxed);
            self.newidle.store(true, Ordering::Relaxed);
        }
    }
}

static PERCPU: CpuLocal<PerCpu> = CpuLocal::new([const { Aligned(PerCpu::new()) }; MAX_CPUS]);

/// This CPU's block. A thread that may be preempted (and so migrated) must
/// not keep it across a preemption point; see `crate::sched`.
#[inline]
pub fn this_cpu() -> &'static PerCpu {
    PERCPU.this_cpu()
}

/// Allocates CPU `cpu`'s sleep timer list for `threads` threads, before it
/// is brought up; false when the heap has no room.
pub fn provision(cpu: CpuId, threads: usize) -> bool {
    PERCPU.get(cpu).timers.lock().provision(threads).is_ok()
}

/// CPU `cpu`'s block.
#[inline]
pub fn cpu(cpu: CpuId) -> &'static PerCpu {
    PERCPU.get(cpu)
}

/// CPUs running the scheduler (set as each comes online).
static ONLINE_MASK: AtomicCpuMask = AtomicCpuMask::new();

/// CPUs running the scheduler.
#[inline]
pub fn online_mask() -> CpuMask {
    ONLINE_MASK.load(Ordering::Acquire)
}

/// CPU `cpu` (this CPU) runs the scheduler from now on.
pub fn set_online(cpu: CpuId) {
    ONLINE_MASK.set(cpu, Ordering::AcqRel);
    self::cpu(cpu).online.store(true, Ordering::Release);
}

/// CPU `cpu` (this CPU, going offline: `crate::hotplug`) no longer runs the
/// scheduler: its ticks and timer events are ignored, cross-CPU calls to it
/// refused, the watchdogs skip it.
pub fn set_offline(cpu: CpuId) {
    self::cpu(cpu).online.store(false, Ordering::Release);
    ONLINE_MASK.clear(cpu, Ordering::AcqRel);
}
