//! Per-CPU data: one cache-line aligned block per CPU, in a static array indexed
//! by `arch::cpu_id()` (room for [`MAX_CPUS`]).
//!
//! Each block holds the CPU's runqueue behind an interrupt-disabling spinlock,
//! the thread it runs, its preempt count, the lock-free mirror of the
//! runqueue's need-resched state that interrupt exit reads, and its sleep timer
//! list. Only CPU 0 is brought up for now (SMP is a later issue); the layout
//! already keeps every CPU's hot data on its own cache lines.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

use sched::{Resched, Rq};

use crate::arch;
use crate::sync::SpinLock;
use crate::task::timer::TimerList;

/// Most CPUs the kernel supports.
pub const MAX_CPUS: usize = 8;

/// One CPU's data.
#[repr(align(64))]
pub struct PerCpu {
    /// This CPU's runqueue (`None` until the scheduler is initialised). Held
    /// across a context switch: the thread switched to releases it
    /// (`finish_task_switch`).
    pub rq: SpinLock<Option<Rq>>,
    /// Index of the thread running here (its idle thread when the runqueue has
    /// no current task).
    pub curr: AtomicU32,
    /// The thread switched away from, for `finish_task_switch`.
    pub prev: AtomicU32,
    /// Preemption is disabled while non-zero (`preempt_disable`).
    pub preempt_count: AtomicU32,
    /// Mirror of `rq.need_resched()` (0 none, 1 lazy, 2 now), updated after
    /// every runqueue operation, read by interrupt exit without the lock.
    pub need_resched: AtomicU8,
    /// Sleeping threads by wake-up time (`sleep_ns`), checked by the tick.
    pub timers: SpinLock<TimerList>,
    /// Ticks seen by this CPU.
    pub ticks: AtomicU64,
    /// The CPU runs the scheduler.
    pub online: AtomicBool,
}

impl PerCpu {
    const fn new() -> Self {
        PerCpu {
            rq: SpinLock::new(None),
            curr: AtomicU32::new(0),
            prev: AtomicU32::new(0),
            preempt_count: AtomicU32::new(0),
            need_resched: AtomicU8::new(0),
            timers: SpinLock::new(TimerList::new()),
            ticks: AtomicU64::new(0),
            online: AtomicBool::new(false),
        }
    }

    /// Copies the runqueue's need-resched state into the lock-free mirror. Call
    /// with the runqueue lock held, after any scheduler call.
    pub fn mirror_need_resched(&self, rq: &Rq) {
        let v = match rq.need_resched() {
            Resched::None => 0,
            Resched::Lazy => 1,
            Resched::Now => 2,
        };
        self.need_resched.store(v, Ordering::Relaxed);
    }

    /// The mirrored need-resched state.
    pub fn need_resched(&self) -> Resched {
        match self.need_resched.load(Ordering::Relaxed) {
            0 => Resched::None,
            1 => Resched::Lazy,
            _ => Resched::Now,
        }
    }
}

static PERCPU: [PerCpu; MAX_CPUS] = [const { PerCpu::new() }; MAX_CPUS];

/// This CPU's block.
#[inline]
pub fn this_cpu() -> &'static PerCpu {
    &PERCPU[arch::cpu_id() % MAX_CPUS]
}

/// CPU `cpu`'s block.
#[inline]
pub fn cpu(cpu: usize) -> &'static PerCpu {
    &PERCPU[cpu]
}
