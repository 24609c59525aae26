//! Entry points the hardware layer and the arch code call into generic
//! kernel code: [`KernelHooks`], the kernel's side of
//! [`kernel_hal::hooks::Hooks`], registered first thing at boot.
//!
//! These are the only generic functions that `arch/` and `kernel-hal` call
//! (through `kernel_hal::hooks`). The arch-facing ones are called with
//! interrupts disabled, on the stack of the interrupted (or faulting)
//! thread.

use crate::{ktest, task};
use kernel_hal::addr::VirtAddr;
use kernel_hal::cpu::CpuId;

pub use kernel_hal::hooks::StackOwner;

/// The kernel's side of [`kernel_hal::hooks::Hooks`]: what the hardware
/// layer calls up into, registered by [`register`] first thing at boot.
pub struct KernelHooks;

impl kernel_hal::hooks::Hooks for KernelHooks {
    fn preempt_check_resched(&self) {
        crate::sched::preempt_check_resched();
    }

    fn preempt_disable(&self) {
        crate::sched::preempt_disable();
    }

    fn preempt_enable(&self) {
        crate::sched::preempt_enable();
    }

    fn timer_interrupt(&self) {
        timer_interrupt();
    }

    fn timer_event(&self) {
        timer_event();
    }

    fn hrtick(&self) {
        crate::sched::hrtick_interrupt();
    }

    fn irq_exit(&self) {
        irq_exit();
    }

    fn console_rx(&self) {
        console_rx();
    }

    fn ipi(&self, kind: kernel_hal::hooks::IpiKind) {
        ipi(kind);
    }

    fn current_thread(&self) -> (Option<u32>, &'static str) {
        current_thread()
    }

    fn stack_guard_owner(&self, addr: VirtAddr) -> Option<StackOwner> {
        stack_guard_owner(addr)
    }

    fn bringup_stack(&self, cpu: CpuId) -> Option<VirtAddr> {
        bringup_stack(cpu)
    }

    fn secondary_arch_up(&self, cpu: CpuId) {
        secondary_arch_up(cpu);
    }

    fn report_begin(&self) {
        report_begin();
    }

    fn fault_reported(&self) {
        fault_reported();
    }

    fn backtrace(&self, sp: VirtAddr, fp: VirtAddr, out: &mut [usize]) -> usize {
        backtrace(sp, fp, out)
    }

    fn emergency_write(&self, args: core::fmt::Arguments) {
        crate::console::emergency_write(args);
    }

    fn online_mask(&self) -> crate::cpumask::CpuMask {
        crate::sched::online_mask()
    }
}

/// The hooks as the hardware layer holds them (one word points here).
static KERNEL_HOOKS: &dyn kernel_hal::hooks::Hooks = &KernelHooks;

/// Hands [`KernelHooks`] to the hardware layer (boot CPU, before anything
/// takes a lock that could preempt).
pub fn register() {
    kernel_hal::hooks::register(&KERNEL_HOOKS);
}

/// Called by the arch timer interrupt handler on every tick, after the interrupt
/// was acknowledged: the scheduler tick, sleeper wakeups, the test watchdog.
pub fn timer_interrupt() {
    crate::sched::timer_tick();
    ktest::watchdog_check();
}

/// Called by the arch timer handler for a timer event that is not a tick
/// (`arch::timer_set_event`): wakes the sleepers whose time came.
pub fn timer_event() {
    crate::sched::timer_event();
}

/// Called at the end of every interrupt handler, before the interrupted context
/// is restored. Switches threads here when preemption is allowed and a
/// reschedule is pending that this return takes: any request when the
/// interrupted thread was in its modelled user code, an immediate one under
/// full or lazy otherwise (`crate::sched::irq_exit`).
pub fn irq_exit() {
    crate::sched::irq_exit();
}

/// Called by the arch handler of the console UART's receive interrupt (before
/// the acknowledge or EOI, then `irq_exit`): moves the received bytes into the
/// console's ring.
pub fn console_rx() {
    crate::console::rx_interrupt();
}

/// Called by the arch IPI handler (after the acknowledge, before `irq_exit`).
/// A reschedule IPI drains this CPU's wake list into its runqueue and
/// refreshes its need-resched flag (`sched_ttwu_pending`); `irq_exit` then
/// preempts if that asks for it. A function-call IPI runs the calls other
/// CPUs queued for this one ([`crate::smp`]).
pub fn ipi(kind: crate::arch::IpiKind) {
    match kind {
        crate::arch::IpiKind::Reschedule => crate::sched::sched_ipi(),
        crate::arch::IpiKind::Call => crate::smp::call_ipi(),
    }
}

/// The thread running on this CPU as (slot index, name), for fault reports:
/// `(None, "boot")` before the thread table exists, `(None, "bring-up")` on
/// a secondary CPU that has no idle thread yet. Takes no locks.
pub fn current_thread() -> (Option<u32>, &'static str) {
    if !task::is_ready() {
        return (None, "boot");
    }
    let cpu = crate::arch::cpu_id();
    let idx = crate::percpu::this_cpu()
        .curr
        .load(core::sync::atomic::Ordering::Relaxed);
    // CPU `cpu` sets `curr` to its idle thread first thing (`init_idle`);
    // before that a secondary CPU still shows CPU 0's idle thread.
    if cpu != CpuId::BOOT && idx == task::idle_idx(CpuId::BOOT) {
        return (None, "bring-up");
    }
    (Some(idx), task::thread(idx).name())
}

/// If `addr` lies in the unmapped guard below a kernel stack (of the stack
/// region, or one of the kernel image's static stacks): whose stack that
/// is. Takes no locks.
pub fn stack_guard_owner(addr: VirtAddr) -> Option<StackOwner> {
    if let Some(g) = crate::arch::static_stack_guards() {
        let within = |(lo, hi): (VirtAddr, VirtAddr)| (lo..hi).contains(&addr);
        if within(g.boot) {
            return Some(StackOwner::BootStack);
        }
        if g.exception.into_iter().any(within) {
            return Some(StackOwner::ExceptionStack(CpuId::BOOT));
        }
    }
    Some(match crate::heap::stack::guard_owner(addr)? {
        // An idle slot whose thread is not set up yet: a secondary CPU in
        // its bring-up, on the idle stack its starter gave it.
        Some(idx) if task::is_idle_idx(idx) && task::thread(idx).name().is_empty() => {
            // (Idle thread `idx` is CPU `idx`'s.)
            StackOwner::IdleUnstarted(CpuId::wrapping(idx as usize))
        }
        Some(idx) if (idx as usize) < task::threads().len() => {
            StackOwner::Thread(idx, task::thread(idx).name())
        }
        Some(idx) => match (
            crate::heap::stack::exception_stack_cpu(idx),
            crate::heap::stack::bringup_stack_cpu(idx),
        ) {
            (Some(cpu), _) => StackOwner::ExceptionStack(cpu),
            (None, Some(cpu)) => StackOwner::Bringup(cpu),
            (None, None) => StackOwner::Nobody,
        },
        None => StackOwner::Nobody,
    })
}

/// A guarded kernel stack (from the stack region, kept forever) for
/// secondary CPU `cpu` to start on before it switches to the stack its
/// `start_cpu` caller gave: its top, or `None` (no region or no memory:
/// the arch layer then uses a heap block). Boot CPU. Unused on arches
/// whose CPUs start on the caller's stack (x86_64).
pub fn bringup_stack(cpu: CpuId) -> Option<VirtAddr> {
    crate::heap::stack::bringup_stack(cpu)
}

/// Called by a secondary CPU's arch bring-up code once its traps are set
/// up, still on the stack it started on (the `fault=bringup_stack` test).
pub fn secondary_arch_up(cpu: CpuId) {
    crate::fault::on_secondary_arch(cpu);
}

/// Called by the arch fault handlers before a report: keeps ordinary
/// console output out of it (`console::claim_for_report`, bounded wait).
pub fn report_begin() {
    crate::console::claim_for_report();
}

/// Called by the arch fault handlers after a complete report, before the
/// run ends (the `fault=exception_stack` test overflows the report's stack
/// here).
pub fn fault_reported() {
    crate::fault::on_report();
}

/// Return addresses found by following the frame-pointer chain from `fp`
/// (a frame record: the caller's frame pointer, then the return address,
/// on both arches), as far as it stays inside the kernel stack that holds
/// `sp` and climbs; at most `out.len()`. Returns how many were written.
/// Empty when `sp` is not on a stack of the stack region. Takes no locks.
pub fn backtrace(sp: VirtAddr, fp: VirtAddr, out: &mut [usize]) -> usize {
    crate::heap::stack::walk_frames(sp, fp, out)
}
