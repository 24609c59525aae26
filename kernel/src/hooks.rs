//! Entry points the arch code calls into generic kernel code.
//!
//! These are the only generic functions that `arch/` calls. Each is called with
//! interrupts disabled, on the stack of the interrupted (or faulting) thread.

use crate::{ktest, task};

/// Called by the arch timer interrupt handler on every tick, after the interrupt
/// was acknowledged: the scheduler tick, sleeper wakeups, the test watchdog.
pub fn timer_interrupt() {
    task::timer_tick();
    ktest::watchdog_check();
}

/// Called by the arch timer handler for a timer event that is not a tick
/// (`arch::timer_set_event`): wakes the sleepers whose time came.
pub fn timer_event() {
    task::timer_event();
}

/// Called at the end of every interrupt handler, before the interrupted context
/// is restored. Switches threads here when an immediate reschedule is pending
/// and preemption is allowed (preemption on return from interrupt).
pub fn irq_exit() {
    task::irq_exit();
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
        crate::arch::IpiKind::Reschedule => task::core::sched_ipi(),
        crate::arch::IpiKind::Call => crate::smp::call_ipi(),
    }
}

/// The name of the thread running on this CPU, for fault reports. Takes no locks.
pub fn current_thread_name() -> &'static str {
    if task::is_ready() {
        task::current().name()
    } else {
        "boot"
    }
}
