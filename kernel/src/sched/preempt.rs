//! Preemption: at interrupt exit, at `preempt_enable()`, at `cond_resched()`
//! and at the return to user space of a workload's modelled syscall, by
//! preemption model (the table is `sched::preempt`'s).

use ::core::sync::atomic::Ordering;

use ::sched::{PreemptPoint, Resched};

use super::*;
use crate::arch;
use crate::percpu::{self, PerCpu};

pub(crate) fn should_preempt(pc: &PerCpu) -> bool {
    pc.online.load(Ordering::Relaxed)
        && pc.need_resched() == Resched::Now
        && pc.preempt_count.load(Ordering::Relaxed) == 0
        && preempt_mode().preempts_at(PreemptPoint::Kernel, Resched::Now)
}

/// Interrupt exit (interrupts disabled, on the interrupted thread's stack):
/// preempt the interrupted thread if an immediate reschedule is pending, the
/// preempt count is zero and the model is full or lazy.
pub fn irq_exit() {
    let pc = percpu::this_cpu();
    pc.interrupts.fetch_add(1, Ordering::Relaxed);
    if should_preempt(pc) {
        __schedule(SchedMode::Preempt);
    }
}

/// A preemption point in thread context with interrupts enabled (the end of a
/// spinlocked section, `preempt_enable`).
pub fn preempt_check_resched() {
    if !arch::irqs_enabled() {
        return;
    }
    // Interrupts off around the per-CPU reads (no migration in between).
    let irq = arch::IrqGuard::save();
    let go = should_preempt(percpu::this_cpu());
    drop(irq);
    if go {
        __schedule(SchedMode::Preempt);
    }
}

/// Disables preemption on this CPU (nests). The running thread then stays on
/// this CPU until the matching [`preempt_enable`].
#[inline]
pub fn preempt_disable() {
    // Interrupts off around the CPU lookup: a preemption (and migration)
    // between reading the CPU and counting would count on the wrong CPU.
    let irq = arch::IrqGuard::save();
    percpu::this_cpu()
        .preempt_count
        .fetch_add(1, Ordering::Relaxed);
    drop(irq);
    ::core::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// Re-enables preemption; dropping to zero with an immediate reschedule
/// pending reschedules at once (full / lazy models).
#[inline]
pub fn preempt_enable() {
    ::core::sync::atomic::compiler_fence(Ordering::SeqCst);
    // The count is non-zero: no migration until it drops.
    let pc = percpu::this_cpu();
    let old = pc.preempt_count.fetch_sub(1, Ordering::Relaxed);
    debug_assert!(old > 0, "preempt_enable without preempt_disable");
    if old == 1 {
        preempt_check_resched();
    }
}

/// This CPU's preempt count.
pub fn preempt_count() -> u32 {
    let irq = arch::IrqGuard::save();
    let n = percpu::this_cpu().preempt_count.load(Ordering::Relaxed);
    drop(irq);
    n
}

/// An explicit preemption point for long-running kernel loops: reschedules if
/// a reschedule is pending, under the voluntary model only (none switches
/// only at blocking, yield and `schedule()`; full and lazy preempt anyway,
/// and lazy leaves a lazy request to the tick, as Linux does).
pub fn cond_resched() {
    let irq = arch::IrqGuard::save();
    let pc = percpu::this_cpu();
    let go = pc.preempt_count.load(Ordering::Relaxed) == 0
        && preempt_mode().preempts_at(PreemptPoint::CondResched, pc.need_resched());
    drop(irq);
    if go {
        __schedule(SchedMode::Preempt);
    }
}

/// The return to user space at the end of a syscall (Linux's
/// `exit_to_user_mode_loop()`): reschedules while any request is pending,
/// lazy or immediate, in every model. Our threads never leave kernel mode;
/// a workload that models a user program calls this at the end of each
/// modelled syscall (a send, a receive, a wakeup, a sleep's return), so a
/// lazy request made during the syscall is honoured there, as Linux honours
/// it at a hackbench task's next `write()`/`read()` return, instead of at
/// the next tick. A no-op with interrupts or preemption disabled (a caller
/// inside a critical section is not at a syscall boundary).
pub fn exit_to_user_mode() {
    // Fast path, no interrupt guard (it runs after every modelled syscall):
    // nothing pending here. A migration between reading the CPU and its flag
    // can only cost a needless trip through the checked path below, or
    // leave a request to this CPU's next preemption point or tick.
    if percpu::this_cpu().need_resched() == Resched::None || !arch::irqs_enabled() {
        return;
    }
    loop {
        // Interrupts off around the per-CPU reads (no migration in between).
        let irq = arch::IrqGuard::save();
        let pc = percpu::this_cpu();
        let go = pc.online.load(Ordering::Relaxed)
            && pc.preempt_count.load(Ordering::Relaxed) == 0
            && preempt_mode().preempts_at(PreemptPoint::UserReturn, pc.need_resched());
        drop(irq);
        if !go {
            return;
        }
        __schedule(SchedMode::Preempt);
    }
}

/// Preemption disabled on this CPU until the guard is dropped: the hardware
/// layer's guard, which counts through [`crate::hooks::KernelHooks`].
pub use kernel_hal::PreemptGuard;
