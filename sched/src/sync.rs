//! The locks and atomics of the wake/switch protocol (a task cell's `home`,
//! `switching` and `last_cpu`, the runqueue, wake-list and cell locks),
//! behind one seam so that [`loom`](https://docs.rs/loom) can model-check
//! the protocol: built with `--cfg loom` (tests only, `make test-loom`),
//! they are loom's types, whose every operation is a point where loom's
//! scheduler may switch threads, and the tests in `smp::loom_tests` explore
//! every interleaving of a few lifecycle calls on two or three threads.
//! Otherwise they are `core`'s atomics and `spin`'s mutex, unchanged.

#[cfg(not(all(loom, test)))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU32};
#[cfg(all(loom, test))]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32};

#[cfg(not(all(loom, test)))]
pub use spin::{Mutex, MutexGuard};

#[cfg(all(loom, test))]
pub use loom_mutex::{Mutex, MutexGuard};

#[cfg(all(loom, test))]
mod loom_mutex {
    use core::ops::{Deref, DerefMut};

    /// `spin::Mutex`'s interface over loom's mutex.
    #[derive(Debug)]
    pub struct Mutex<T>(loom::sync::Mutex<T>);

    /// Its guard.
    #[derive(Debug)]
    pub struct MutexGuard<'a, T>(loom::sync::MutexGuard<'a, T>);

    impl<T> Mutex<T> {
        /// A new unlocked mutex.
        pub fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        /// Locks it (loom blocks the thread and switches to another).
        pub fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(self.0.lock().expect("no panics while locked"))
        }

        /// Locks it if it is free.
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok().map(MutexGuard)
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.0
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.0
        }
    }
}
