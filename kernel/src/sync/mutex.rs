//! A blocking mutex: contended lockers sleep on a wait queue instead of
//! spinning, so a holder that is preempted or blocks does not burn the CPU of
//! its waiters. Unlock wakes one waiter, which competes for the lock again (no
//! hand-off: a running thread may take it first, as with Linux's mutex
//! fast path); the wait queue protocol guarantees no waiter sleeps through an
//! unlock.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

use super::WaitQueue;

/// A sleeping lock around `T`.
pub struct Mutex<T: ?Sized> {
    locked: AtomicBool,
    waiters: WaitQueue,
    data: UnsafeCell<T>,
}

// SAFETY: the lock serialises access to `data`.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}
// SAFETY: moving the mutex moves the `T` it owns.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}

impl<T> Mutex<T> {
    /// An unlocked mutex.
    pub const fn new(data: T) -> Self {
        Mutex {
            locked: AtomicBool::new(false),
            waiters: WaitQueue::new(),
            data: UnsafeCell::new(data),
        }
    }
}

impl<T: ?Sized> Mutex<T> {
    fn try_acquire(&self) -> bool {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the lock, sleeping while somebody else holds it. Thread context only.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.waiters.wait_event(|| self.try_acquire());
        MutexGuard { mutex: self }
    }

    /// Takes the lock if it is free.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.try_acquire().then_some(MutexGuard { mutex: self })
    }
}

/// Holds a [`Mutex`]; unlocks and wakes one waiter on drop.
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves we hold the lock.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves we hold the lock; `&mut self` is unique.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.mutex.locked.store(false, Ordering::Release);
        self.mutex.waiters.wake_one();
    }
}
