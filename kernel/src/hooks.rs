//! Entry points the arch code calls into generic kernel code.
//!
//! These are the only generic functions that `arch/` calls. Each is called with
//! interrupts disabled, on the stack of the interrupted (or faulting) thread.

use core::sync::atomic::{AtomicU64, Ordering};

/// Ticks seen by the boot CPU since the timer started.
pub static TICKS: AtomicU64 = AtomicU64::new(0);

/// Called by the arch timer interrupt handler on every tick, after the interrupt
/// was acknowledged.
pub fn timer_interrupt() {
    TICKS.fetch_add(1, Ordering::Relaxed);
}

/// Called at the end of every interrupt handler, before the interrupted context
/// is restored. Generic code may switch threads here (preemption on return from
/// interrupt).
pub fn irq_exit() {}

/// The name of the thread running on this CPU, for fault reports. Must not take
/// locks.
pub fn current_thread_name() -> &'static str {
    "boot"
}
