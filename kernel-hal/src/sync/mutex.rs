//! A blocking mutex: contended lockers sleep on a wait queue instead of
//! spinning, so a holder that is preempted or blocks does not burn the CPU of
//! its waiters. Unlock wakes one waiter, which competes for the lock again (no
//! hand-off: a running thread may take it first, as with Linux's mutex
//! fast path); the wait queue protocol guarantees no waiter sleeps through an
//! unlock. The wait queue is the kernel's, a type parameter: it sleeps and
//! wakes through the scheduler, which lives above this crate.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

/// The wait queue a [`Mutex`] sleeps on (the kernel's `WaitQueue`).
pub trait WaitQueueOps {
    /// An empty queue, for `const` mutexes.
    const NEW: Self;
    /// Sleeps until `cond` returns true (checked before each sleep, with no
    /// lost wakeup in between).
    fn wait_event(&self, cond: impl FnMut() -> bool);
    /// Wakes one waiter, if any; whether one was woken.
    fn wake_one(&self) -> bool;
}

/// A sleeping lock around `T`.
pub struct Mutex<T: ?Sized, Q> {
    locked: AtomicBool,
    waiters: Q,
    data: UnsafeCell<T>,
}

// SAFETY: the lock serialises access to `data`.
unsafe impl<T: ?Sized + Send, Q: Sync> Sync for Mutex<T, Q> {}
// SAFETY: moving the mutex moves the `T` it owns.
unsafe impl<T: ?Sized + Send, Q: Send> Send for Mutex<T, Q> {}

impl<T, Q: WaitQueueOps> Mutex<T, Q> {
    /// An unlocked mutex.
    pub const fn new(data: T) -> Self {
        Mutex {
            locked: AtomicBool::new(false),
            waiters: Q::NEW,
            data: UnsafeCell::new(data),
        }
    }
}

impl<T: ?Sized, Q: WaitQueueOps> Mutex<T, Q> {
    fn try_acquire(&self) -> bool {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the lock, sleeping while somebody else holds it. Thread context only.
    pub fn lock(&self) -> MutexGuard<'_, T, Q> {
        self.waiters.wait_event(|| self.try_acquire());
        MutexGuard { mutex: self }
    }

    /// Takes the lock if it is free.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T, Q>> {
        self.try_acquire().then_some(MutexGuard { mutex: self })
    }
}

/// Holds a [`Mutex`]; unlocks and wakes one waiter on drop.
pub struct MutexGuard<'a, T: ?Sized, Q: WaitQueueOps> {
    mutex: &'a Mutex<T, Q>,
}

impl<T: ?Sized, Q: WaitQueueOps> Deref for MutexGuard<'_, T, Q> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves we hold the lock.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized, Q: WaitQueueOps> DerefMut for MutexGuard<'_, T, Q> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves we hold the lock; `&mut self` is unique.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized, Q: WaitQueueOps> Drop for MutexGuard<'_, T, Q> {
    fn drop(&mut self) {
        self.mutex.locked.store(false, Ordering::Release);
        self.mutex.waiters.wake_one();
    }
}
