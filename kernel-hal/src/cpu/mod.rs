//! This CPU's interrupt mask and spin-wait hint, per arch, and the scope
//! guard generic code uses: [`IrqGuard`].
//!
//! | item | what it does |
//! |---|---|
//! | `fn irq_save() -> IrqState` / `fn irq_restore(IrqState)` | disable interrupts, returning whether they were on / restore |
//! | `fn irq_enable()` / `fn irq_disable()` / `fn irqs_enabled() -> bool` | local interrupt mask |
//! | `fn cpu_relax()` | spin-wait hint (`pause` / `yield`): under QEMU's round-robin TCG it also hands the turn to the next vCPU |

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "aarch64")]
pub use aarch64::*;

#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "x86_64")]
pub use x86_64::*;

/// The scheduler's CPU index type, the one every crate uses.
pub use sched::CpuId;

/// Interrupts masked on this CPU until the guard is dropped, which restores
/// the state found (`irq_save` / `irq_restore` as a scope): no early return
/// can leave interrupts off. Not `Send`: it belongs to the CPU that made it.
#[must_use = "interrupts are restored when the guard is dropped"]
pub struct IrqGuard {
    was: IrqState,
    _cpu_local: core::marker::PhantomData<*const ()>,
}

impl IrqGuard {
    /// Masks interrupts, remembering whether they were on.
    #[inline]
    pub fn save() -> Self {
        IrqGuard {
            was: irq_save(),
            _cpu_local: core::marker::PhantomData,
        }
    }
}

impl Drop for IrqGuard {
    #[inline]
    fn drop(&mut self) {
        irq_restore(self.was);
    }
}
