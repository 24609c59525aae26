//! A counting semaphore (`down` sleeps while the count is zero, `up` wakes one
//! sleeper).

use core::sync::atomic::{AtomicIsize, Ordering};

use super::WaitQueue;

/// A counting semaphore.
pub struct Semaphore {
    count: AtomicIsize,
    waiters: WaitQueue,
}

impl Semaphore {
    /// A semaphore with `count` units available.
    pub const fn new(count: isize) -> Self {
        Semaphore {
            count: AtomicIsize::new(count),
            waiters: WaitQueue::new(),
        }
    }

    /// Takes one unit if one is available.
    pub fn try_down(&self) -> bool {
        let mut c = self.count.load(Ordering::Relaxed);
        while c > 0 {
            match self
                .count
                .compare_exchange_weak(c, c - 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => c = now,
            }
        }
        false
    }

    /// Takes one unit, sleeping until one is available. Thread context only.
    pub fn down(&self) {
        self.waiters.wait_event(|| self.try_down());
    }

    /// Returns one unit and wakes one sleeper. Callable from interrupt context.
    pub fn up(&self) {
        self.count.fetch_add(1, Ordering::Release);
        self.waiters.wake_one();
    }

    /// Units available now (a snapshot).
    pub fn count(&self) -> isize {
        self.count.load(Ordering::Relaxed)
    }

    /// The queue its sleepers wait on (for tests that drive the wait
    /// protocol step by step).
    pub(crate) fn wait_queue(&self) -> &WaitQueue {
        &self.waiters
    }
}
