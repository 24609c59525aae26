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
//!
//! Each lock has a class for the lock validator (the `lockdep` feature): the
//! place its `new` or `named` is called from (`#[track_caller]`), and a name.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::cpu::{self as arch, IrqState};

/// The preemption point a [`SpinLock`] release is (with interrupts back
/// on): a type, so that the kernel's locks call its scheduler directly (no
/// indirect call on every release), while the locks of this crate go
/// through the registered [`Hooks`](crate::hooks::Hooks) ([`ViaHooks`]).
pub trait ReschedPoint {
    /// Switch threads if an immediate reschedule is pending and preemption
    /// is allowed.
    fn preempt_check_resched();
}

/// [`ReschedPoint`] through the registered hooks (nothing before they are).
#[derive(Debug)]
pub struct ViaHooks;

impl ReschedPoint for ViaHooks {
    #[inline]
    fn preempt_check_resched() {
        if let Some(h) = crate::hooks::get() {
            h.preempt_check_resched();
        }
    }
}

/// A spinlock that disables local interrupts while held; its release is the
/// preemption point `P`.
pub struct SpinLock<T: ?Sized, P = ViaHooks> {
    locked: AtomicBool,
    _resched: PhantomData<fn() -> P>,
    #[cfg(feature = "lockdep")]
    key: crate::lockdep::Key,
    data: UnsafeCell<T>,
}

// SAFETY: the lock serialises all access to `data`, so sharing the lock between
// CPUs is sound whenever `T` may be sent between them.
unsafe impl<T: ?Sized + Send, P> Sync for SpinLock<T, P> {}
// SAFETY: moving the lock moves the `T` it owns.
unsafe impl<T: ?Sized + Send, P> Send for SpinLock<T, P> {}

impl<T, P> SpinLock<T, P> {
    /// An unlocked lock around `data`, of the class of the caller's site.
    #[track_caller]
    pub const fn new(data: T) -> Self {
        Self::named("", data)
    }

    /// An unlocked lock around `data`, of the class of the caller's site,
    /// named `name` in the lock validator's reports.
    #[track_caller]
    #[allow(unused_variables)] // `name` without lockdep
    pub const fn named(name: &'static str, data: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            _resched: PhantomData,
            #[cfg(feature = "lockdep")]
            key: crate::lockdep::Key::new(name),
            data: UnsafeCell::new(data),
        }
    }
}

impl<T: ?Sized, P: ReschedPoint> SpinLock<T, P> {
    /// Disables interrupts, then spins until the lock is ours.
    pub fn lock(&self) -> SpinLockGuard<'_, T, P> {
        let irq = arch::irq_save();
        #[cfg(feature = "lockdep")]
        crate::lockdep::acquire(&self.key, self.addr(), crate::lockdep::Acquire::default());
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
    pub fn try_lock(&self) -> Option<SpinLockGuard<'_, T, P>> {
        let irq = arch::irq_save();
        if self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            #[cfg(feature = "lockdep")]
            crate::lockdep::acquire(
                &self.key,
                self.addr(),
                crate::lockdep::Acquire {
                    trylock: true,
                    ..Default::default()
                },
            );
            Some(SpinLockGuard { lock: self, irq })
        } else {
            arch::irq_restore(irq);
            None
        }
    }

    /// The lock's address: its identity for the lock validator.
    fn addr(&self) -> usize {
        core::ptr::from_ref(&self.locked) as usize
    }
}

/// Holds a [`SpinLock`]; releases it and restores the interrupt state on drop.
pub struct SpinLockGuard<'a, T: ?Sized, P: ReschedPoint = ViaHooks> {
    lock: &'a SpinLock<T, P>,
    irq: IrqState,
}

impl<T: ?Sized, P: ReschedPoint> Deref for SpinLockGuard<'_, T, P> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held, so no one else accesses the data.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized, P: ReschedPoint> DerefMut for SpinLockGuard<'_, T, P> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized, P: ReschedPoint> Drop for SpinLockGuard<'_, T, P> {
    fn drop(&mut self) {
        crate::lockdep::release(self.lock.addr());
        self.lock.locked.store(false, Ordering::Release);
        arch::irq_restore(self.irq);
        // Interrupts are back on exactly when they were on at `lock` (locks
        // are released in the order opposite to taking them, each restoring
        // what it saved): the saved state says so without reading the
        // flags back.
        if self.irq.enabled() {
            P::preempt_check_resched();
        }
    }
}
