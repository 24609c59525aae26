//! aarch64: the local interrupt mask (`DAIF.I`) and the spin-wait hint.

use aarch64_cpu::registers::{Readable, DAIF};

/// Saved interrupt state from [`irq_save`]; opaque, give it back to [`irq_restore`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct IrqState {
    was_enabled: bool,
}

impl IrqState {
    /// Whether interrupts were enabled when it was saved: after
    /// [`irq_restore`] of it, whether they are enabled again (a release
    /// knows without reading the flags back).
    #[inline]
    pub fn enabled(self) -> bool {
        self.was_enabled
    }
}

/// Masks IRQs on this CPU and returns whether they were unmasked.
#[inline]
pub fn irq_save() -> IrqState {
    let was_enabled = irqs_enabled();
    irq_disable();
    IrqState { was_enabled }
}

/// Restores the IRQ mask saved by [`irq_save`].
#[inline]
pub fn irq_restore(state: IrqState) {
    if state.was_enabled {
        irq_enable();
    }
}

/// Unmasks IRQs (`DAIF.I`) on this CPU.
#[inline]
pub fn irq_enable() {
    // SAFETY: clearing PSTATE.I only lets IRQs be taken; the vectors are installed.
    // A compiler barrier (no `nomem`) keeps memory accesses on their side.
    unsafe { core::arch::asm!("msr daifclr, #2", options(nostack, preserves_flags)) }
}

/// Masks IRQs (`DAIF.I`) on this CPU.
#[inline]
pub fn irq_disable() {
    // SAFETY: setting PSTATE.I only defers IRQs; also a compiler barrier.
    unsafe { core::arch::asm!("msr daifset, #2", options(nostack, preserves_flags)) }
}

/// Whether IRQs are unmasked on this CPU.
#[inline]
pub fn irqs_enabled() -> bool {
    !DAIF.is_set(DAIF::I)
}

/// A spin-wait hint (Linux's arm64 `cpu_relax`): `yield`. Rust's
/// `spin_loop()` emits `isb` on aarch64, which QEMU's round-robin TCG (one
/// host thread for every vCPU, as under `-icount`) treats as an ordinary
/// instruction, so a vCPU spinning on a flag another vCPU must set keeps the
/// turn for its whole time slice; `yield` ends the turn there (QEMU's
/// `EXCP_YIELD`), as `pause` does on x86_64. On hardware both are hints.
#[inline]
pub fn cpu_relax() {
    // SAFETY: `yield` is a hint with no architectural effect.
    unsafe { core::arch::asm!("yield", options(nomem, nostack, preserves_flags)) };
}
