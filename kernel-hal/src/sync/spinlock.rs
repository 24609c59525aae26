//! An interrupt-safe spinlock (Linux's `spin_lock_irqsave`).
//!
//! Every lock in the kernel that an interrupt handler may take (thread
//! `pi_lock`s, wait queues, the timer lists, the console; the runqueues use the
//! `sched` crate's locks, masked the same way) must disable interrupts while it is
//! held: otherwise the tick could interrupt a holder on the same CPU and spin on
//! the lock forever. Disabling interrupts also disables preemption (preemption
//! only happens on return from interrupt or at an explicit point), so a holder is
//! never switched out. When the guard drops and interrupts come back on, it is a
//! preemption point, like Linux's `spin_unlock_irqrestore` -> `preempt_enable`: a
//! wakeup made under the lock that asked for an immediate reschedule takes effect
//! right there (full/lazy preemption models only).

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::cpu::{self as arch, IrqState};

/// A spinlock that disables local interrupts while held.
pub struct SpinLock<T: ?Sized> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the lock serialises all access to `data`, so sharing the lock between
// CPUs is sound whenever `T` may be sent between them.
unsafe impl<T: ?Sized + Send> Sync for SpinLock<T> {}
// SAFETY: moving the lock moves the `T` it owns.
unsafe impl<T: ?Sized + Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// An unlocked lock around `data`.
    pub const fn new(data: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            data: UnsafeCell::new(data),
        }
    }
}

impl<T: ?Sized> SpinLock<T> {
    /// Disables interrupts, then spins until the lock is ours.
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        let irq = arch::irq_save();
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.locked.load(Ordering::Relaxed) {
                arch::cpu_relax();
            }
        }
        SpinLockGuard { lock: self, irq }
    }

    /// Takes the lock if it is free (interrupts disabled while held).
    #[allow(dead_code)] // for dumps that must not spin
    pub fn try_lock(&self) -> Option<SpinLockGuard<'_, T>> {
        let irq = arch::irq_save();
        if self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            Some(SpinLockGuard { lock: self, irq })
        } else {
            arch::irq_restore(irq);
            None
        }
    }
}

/// Holds a [`SpinLock`]; releases it and restores the interrupt state on drop.
pub struct SpinLockGuard<'a, T: ?Sized> {
    lock: &'a SpinLock<T>,
    irq: IrqState,
}

impl<T: ?Sized> Deref for SpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held, so no one else accesses the data.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for SpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for SpinLockGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
        arch::irq_restore(self.irq);
        if arch::irqs_enabled() {
            if let Some(h) = crate::hooks::get() {
                h.preempt_check_resched();
            }
        }
    }
}
