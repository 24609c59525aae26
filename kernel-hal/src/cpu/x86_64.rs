//! x86_64: the local interrupt flag (RFLAGS.IF) and the spin-wait hint.

/// RFLAGS.IF, the interrupt-enable flag.
const RFLAGS_IF: u64 = 1 << 9;

/// Whether interrupts were enabled, as returned by [`irq_save`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "pass it to irq_restore"]
pub struct IrqState {
    enabled: bool,
}

impl IrqState {
    /// Whether interrupts were enabled when it was saved: after
    /// [`irq_restore`] of it, whether they are enabled again (a release
    /// knows without reading the flags back).
    #[inline]
    pub fn enabled(self) -> bool {
        self.enabled
    }
}

// The interrupt-flag primitives below are written here rather than taken from
// the `x86_64` crate because its `cli`/`sti` are `nomem`: the compiler could then
// move memory accesses out of a critical section. Without `nomem` each one is
// also a compiler barrier, as Linux's `local_irq_*` are.

/// Disables interrupts and returns whether they were enabled.
#[inline]
pub fn irq_save() -> IrqState {
    let rflags: u64;
    // SAFETY: reads RFLAGS and clears IF; no memory is touched besides the stack
    // slot of the push/pop pair.
    unsafe { core::arch::asm!("pushfq", "pop {}", "cli", out(reg) rflags) };
    IrqState {
        enabled: rflags & RFLAGS_IF != 0,
    }
}

/// Re-enables interrupts if `state` says they were enabled.
#[inline]
pub fn irq_restore(state: IrqState) {
    if state.enabled {
        irq_enable();
    }
}

/// Enables interrupts on this CPU.
#[inline]
pub fn irq_enable() {
    // SAFETY: kernel code runs with the IDT loaded; handlers may run from here on.
    unsafe { core::arch::asm!("sti", options(nostack)) };
}

/// Disables interrupts on this CPU.
#[inline]
pub fn irq_disable() {
    // SAFETY: clearing IF only defers interrupts.
    unsafe { core::arch::asm!("cli", options(nostack)) };
}

/// Whether interrupts are enabled on this CPU.
#[inline]
pub fn irqs_enabled() -> bool {
    let rflags: u64;
    // SAFETY: reads RFLAGS through the stack.
    unsafe {
        core::arch::asm!("pushfq", "pop {}", out(reg) rflags, options(nomem, preserves_flags))
    };
    rflags & RFLAGS_IF != 0
}

/// A spin-wait hint (Linux's `cpu_relax`): `pause`, which also ends a
/// vCPU's turn under QEMU's round-robin TCG (`-icount`), so the vCPU it waits
/// for gets to run.
#[inline]
pub fn cpu_relax() {
    core::hint::spin_loop();
}
