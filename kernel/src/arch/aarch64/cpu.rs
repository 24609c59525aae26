//! Per-CPU data, the local interrupt mask (DAIF) and idling.
//!
//! Each CPU's `TPIDR_EL1` points at its [`PerCpu`] block, so finding "this CPU"
//! costs one system register read and works the same once secondaries are started
//! (each gets the next dense index). Before [`init_boot_cpu`] `TPIDR_EL1` is 0 and
//! [`cpu_id`] answers 0.

use aarch64_cpu::registers::{Readable, Writeable, DAIF, MPIDR_EL1, TPIDR_EL1};

/// Most CPUs the per-CPU table has room for.
pub const MAX_CPUS: usize = 8;

/// Data private to one CPU, reached through `TPIDR_EL1`.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct PerCpu {
    /// Dense index: 0 = boot CPU, then in bring-up order.
    pub id: usize,
    /// `MPIDR_EL1` affinity fields (Aff3..Aff0) of this CPU, as PSCI and the GIC
    /// redistributor name it.
    pub mpidr_aff: u64,
}

/// The per-CPU blocks. Only CPU `i` writes `PER_CPU[i]`, before it publishes it in
/// its own `TPIDR_EL1`; afterwards the block is read only.
static mut PER_CPU: [PerCpu; MAX_CPUS] = [const {
    PerCpu {
        id: 0,
        mpidr_aff: 0,
    }
}; MAX_CPUS];

/// `MPIDR_EL1` affinity bits: Aff3 (39:32), Aff2 (23:16), Aff1 (15:8), Aff0 (7:0).
const MPIDR_AFF_MASK: u64 = 0xff_00ff_ffff;

/// Sets up the boot CPU's per-CPU block (index 0) and `TPIDR_EL1`.
pub fn init_boot_cpu() {
    // SAFETY: the boot CPU runs this once, before any other CPU exists and before
    // anything reads PER_CPU[0] through TPIDR_EL1.
    let block = unsafe {
        let block = &mut (*core::ptr::addr_of_mut!(PER_CPU))[0];
        block.id = 0;
        block.mpidr_aff = MPIDR_EL1.get() & MPIDR_AFF_MASK;
        block as *const PerCpu
    };
    TPIDR_EL1.set(block as u64);
}

/// This CPU's per-CPU block, if it was set up.
pub fn this_cpu() -> Option<&'static PerCpu> {
    let p = TPIDR_EL1.get() as *const PerCpu;
    // SAFETY: TPIDR_EL1 is 0 or points into PER_CPU, whose entry is never written
    // after being published (see PER_CPU).
    unsafe { p.as_ref() }
}

/// This CPU's dense index (0 = boot CPU).
pub fn cpu_id() -> usize {
    this_cpu().map_or(0, |c| c.id)
}

/// Saved interrupt state from [`irq_save`]; opaque, give it back to [`irq_restore`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct IrqState {
    was_enabled: bool,
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

/// Waits for the next interrupt and returns with IRQs unmasked, after it was
/// handled.
///
/// No lost wakeup: `wfi` wakes on a *pending* interrupt even while `DAIF.I` masks
/// it, so a caller may mask IRQs, check for work, and call `halt()`; an interrupt
/// that arrived after the check is taken right after `wfi` (at the `daifclr`).
#[inline]
pub fn halt() {
    // SAFETY: wfi only waits; unmasking IRQs is what the contract asks for; the isb
    // makes a pending IRQ be taken before this function returns.
    unsafe {
        core::arch::asm!(
            "dsb sy",
            "wfi",
            "msr daifclr, #2",
            "isb",
            options(nostack, preserves_flags)
        )
    }
}
