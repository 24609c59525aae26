//! Preemption: at interrupt exit, at `preempt_enable()`, at `cond_resched()`
//! and at the return to user space of a workload's modelled syscall, by
//! preemption model (the table is `sched::preempt`'s).

use ::core::sync::atomic::Ordering;

use ::sched::{PreemptPoint, Resched};

use super::*;
use crate::arch;
use crate::percpu::{self, PerCpu};

/// Whether this CPU's thread is to be preempted now: an immediate request,
/// the CPU online, preemption enabled, and the model preempting kernel
/// code. Loads only: the request, false at nearly every call, is tested
/// first (its order changes no answer).
#[inline(always)]
pub(crate) fn should_preempt(pc: &PerCpu) -> bool {
    pc.need_resched() == Resched::Now
        && pc.online.load(Ordering::Relaxed)
        && pc.preempt_count.load(Ordering::Relaxed) == 0
        && preempt_mode().preempts_at(PreemptPoint::Kernel, Resched::Now)
}

/// Interrupt exit (interrupts disabled, on the interrupted thread's stack),
/// Linux's `irqentry_exit()`: an interrupt taken while the thread ran its
/// modelled user code ([`run_in_user_mode`]) returns to user space and takes
/// any pending request, lazy included, in every model; one taken in kernel
/// code preempts only for an immediate request under full or lazy (the
/// table is `sched::preempt`'s). Either way only with the preempt count at
/// zero, and again while a request is pending when the thread comes back.
pub fn irq_exit() {
    let mut pc = percpu::this_cpu();
    pc.interrupts.fetch_add(1, Ordering::Relaxed);
    loop {
        let need = pc.need_resched();
        if need == Resched::None
            || !pc.online.load(Ordering::Relaxed)
            || pc.preempt_count.load(Ordering::Relaxed) != 0
        {
            return;
        }
        // The interrupted thread's mode is read only where it changes the
        // answer (a return to user space takes whatever kernel mode takes).
        let mode = preempt_mode();
        let go = mode.preempts_at(PreemptPoint::irq_exit(false), need)
            || (mode.preempts_at(PreemptPoint::irq_exit(true), need)
                && interrupted_in_user_mode(pc));
        if !go {
            return;
        }
        __schedule(SchedMode::Preempt);
        // The thread may come back on another CPU.
        pc = percpu::this_cpu();
    }
}

/// Whether the thread this CPU runs (the one the interrupt stopped) was in
/// its modelled user code. False before the thread table exists and for
/// idle threads (which never enter user mode).
fn interrupted_in_user_mode(pc: &PerCpu) -> bool {
    crate::task::threads()
        .get(pc.curr.load(Ordering::Relaxed) as usize)
        .is_some_and(|t| t.in_user_mode())
}

/// Runs `f` as the current thread's user-space code (Linux's user mode):
/// while it runs, an interrupt's exit is a return to user space, which takes
/// any pending request, lazy ones included ([`irq_exit`]). For a workload's
/// compute between modelled syscalls (a spin loop, a request's CPU work).
/// Kernel work inside `f` (a modelled syscall: a sleep, a lock, a runtime
/// read) goes through [`syscall`], which leaves user mode for it; anything
/// else would be preempted where Linux's kernel code would not be, and a
/// sleep outside [`syscall`] is caught by `set_current_state` in debug
/// builds. Nests (an inner call leaves the mark set). Entering it is a
/// return to user space, so any pending request is taken first
/// ([`exit_to_user_mode`]).
pub fn run_in_user_mode<R>(f: impl FnOnce() -> R) -> R {
    exit_to_user_mode();
    with_user_mark(true, f)
}

/// A modelled syscall `f` made from user code: the thread leaves user mode
/// for `f` (Linux's syscall entry) and returns to user space after it
/// ([`exit_to_user_mode`]: any pending request is taken) before its user
/// mode, if it had one, resumes. Outside [`run_in_user_mode`] it is `f`
/// followed by [`exit_to_user_mode`].
pub fn syscall<R>(f: impl FnOnce() -> R) -> R {
    with_user_mark(false, || {
        let r = f();
        exit_to_user_mode();
        r
    })
}

/// Runs `f` with the current thread's user-mode mark set to `mark`, then
/// puts back the mark it had. Only this thread writes its mark, and only
/// this CPU's interrupts read it while it runs here (a switch orders it for
/// the next CPU): compiler fences keep `f`'s code between the two stores.
fn with_user_mark<R>(mark: bool, f: impl FnOnce() -> R) -> R {
    let t = crate::task::current();
    let was = t.user_mode.load(Ordering::Relaxed);
    t.user_mode.store(mark, Ordering::Relaxed);
    ::core::sync::atomic::compiler_fence(Ordering::SeqCst);
    let r = f();
    ::core::sync::atomic::compiler_fence(Ordering::SeqCst);
    t.user_mode.store(was, Ordering::Relaxed);
    r
}

/// A preemption point in thread context with interrupts enabled (the end of a
/// spinlocked section, `preempt_enable`).
pub fn preempt_check_resched() {
    if arch::irqs_enabled() {
        preempt_check_resched_irqs_on();
    }
}

/// [`preempt_check_resched`] with interrupts known to be on: the release
/// of a kernel spinlock, which calls it only when the release turned them
/// back on (`kernel_hal::sync::SpinLock`'s drop), does not test them again,
/// and the per-CPU reads are masked with `cli` / `sti` alone (no flags
/// saved). About 22 releases a cross-CPU pipe round trip come here.
#[inline(always)]
pub(crate) fn preempt_check_resched_irqs_on() {
    debug_assert!(arch::irqs_enabled());
    // Interrupts off around the per-CPU reads (no migration in between).
    arch::irq_disable();
    let go = should_preempt(percpu::this_cpu());
    arch::irq_enable();
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
