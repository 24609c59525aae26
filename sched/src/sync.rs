//! The locks and atomics of the wake/switch protocol (a task cell's `home`,
//! `switching` and `last_cpu`, the runqueue, wake-list and cell locks),
//! behind one seam so that [`loom`](https://docs.rs/loom) can model-check
//! the protocol: built with `--cfg loom` (tests only, `make test-loom`),
//! they are loom's types, whose every operation is a point where loom's
//! scheduler may switch threads, and the tests in `smp::loom_tests` explore
//! every interleaving of a few lifecycle calls on two or three threads.
//! Otherwise they are `core`'s atomics and `spin`'s mutex, behind
//! [`Mutex`], which with the `lockdep` feature tells a lock validator
//! (`set_lock_events`) what is taken and released: each mutex's class is
//! its declaration site (`#[track_caller]`) and a name.

#[cfg(not(all(loom, test)))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU32};
#[cfg(all(loom, test))]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32};

#[cfg(all(feature = "lockdep", not(all(loom, test))))]
pub use classed::{set_lock_events, LockEvents};
#[cfg(not(all(loom, test)))]
pub use classed::{Mutex, MutexGuard};

#[cfg(not(all(loom, test)))]
mod classed {
    use core::ops::{Deref, DerefMut};
    #[cfg(feature = "lockdep")]
    use core::panic::Location;
    #[cfg(feature = "lockdep")]
    use core::sync::atomic::AtomicU16;

    /// What a lock validator is told (the kernel's lockdep implements it).
    #[cfg(feature = "lockdep")]
    pub trait LockEvents: Sync {
        /// The lock at `addr`, of the class declared at `site` (named
        /// `name`; `class` caches the validator's id), is about to be
        /// waited for (`trylock`: was just taken by a try-lock; `nested`: a
        /// second lock of its class, taken in a fixed order).
        fn acquire(
            &self,
            site: &'static Location<'static>,
            name: &'static str,
            class: &AtomicU16,
            addr: usize,
            trylock: bool,
            nested: bool,
        );
        /// The lock at `addr` is released.
        fn release(&self, addr: usize);
    }

    #[cfg(feature = "lockdep")]
    static EVENTS: spin::Once<&'static dyn LockEvents> = spin::Once::new();

    /// Installs the validator (once; later calls change nothing).
    #[cfg(feature = "lockdep")]
    pub fn set_lock_events(events: &'static dyn LockEvents) {
        EVENTS.call_once(|| events);
    }

    /// `spin::Mutex` with a lock class: its declaration site and a name.
    pub struct Mutex<T> {
        inner: spin::Mutex<T>,
        #[cfg(feature = "lockdep")]
        site: &'static Location<'static>,
        #[cfg(feature = "lockdep")]
        name: &'static str,
        #[cfg(feature = "lockdep")]
        class: AtomicU16,
    }

    impl<T: core::fmt::Debug> core::fmt::Debug for Mutex<T> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            self.inner.fmt(f)
        }
    }

    /// Holds a [`Mutex`]; tells the validator on drop, then unlocks.
    pub struct MutexGuard<'a, T> {
        g: spin::MutexGuard<'a, T>,
        #[cfg(feature = "lockdep")]
        addr: usize,
    }

    impl<T> Mutex<T> {
        /// An unlocked mutex of the caller's class, unnamed.
        #[track_caller]
        pub const fn new(value: T) -> Self {
            Self::named("", value)
        }

        /// An unlocked mutex of the caller's class, named `name`.
        #[track_caller]
        #[allow(unused_variables)] // `name` without lockdep
        pub const fn named(name: &'static str, value: T) -> Self {
            Mutex {
                inner: spin::Mutex::new(value),
                #[cfg(feature = "lockdep")]
                site: core::panic::Location::caller(),
                #[cfg(feature = "lockdep")]
                name,
                #[cfg(feature = "lockdep")]
                class: AtomicU16::new(0),
            }
        }

        #[allow(unused_variables)] // without lockdep
        fn announce(&self, trylock: bool, nested: bool) {
            #[cfg(feature = "lockdep")]
            if let Some(e) = EVENTS.get() {
                e.acquire(
                    self.site,
                    self.name,
                    &self.class,
                    self.addr(),
                    trylock,
                    nested,
                );
            }
        }

        #[cfg(feature = "lockdep")]
        fn addr(&self) -> usize {
            core::ptr::from_ref(&self.inner) as usize
        }

        fn guard<'a>(&'a self, g: spin::MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            MutexGuard {
                g,
                #[cfg(feature = "lockdep")]
                addr: self.addr(),
            }
        }

        /// Takes the lock, calling `relax` between polls while it is held;
        /// `nested`: a second lock of this class, in a fixed order.
        pub fn lock_relax(&self, nested: bool, mut relax: impl FnMut()) -> MutexGuard<'_, T> {
            self.announce(false, nested);
            loop {
                if let Some(g) = self.inner.try_lock() {
                    return self.guard(g);
                }
                while self.inner.is_locked() {
                    relax();
                }
            }
        }

        /// Takes the lock, spinning.
        pub fn lock(&self) -> MutexGuard<'_, T> {
            self.lock_relax(false, core::hint::spin_loop)
        }

        /// Takes the lock if it is free.
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            let g = self.inner.try_lock()?;
            self.announce(true, false);
            Some(self.guard(g))
        }

        /// Whether somebody holds it.
        pub fn is_locked(&self) -> bool {
            self.inner.is_locked()
        }

        /// The value, through the one reference to the mutex: nobody else
        /// can hold it, so no lock is taken (no atomic operation).
        pub fn get_mut(&mut self) -> &mut T {
            self.inner.get_mut()
        }

        /// The `spin` mutex inside, for a kernel that holds it across a
        /// context switch ([`Mutex::note_locking`] before taking it,
        /// [`Mutex::note_released`] after releasing it).
        pub fn raw(&self) -> &spin::Mutex<T> {
            &self.inner
        }

        /// Tells the validator that the lock is about to be taken through
        /// [`Mutex::raw`] (held across a context switch).
        pub fn note_locking(&self) {
            self.announce(false, false);
        }

        /// Tells the validator that a guard forgotten with
        /// `core::mem::forget` is released by other means ([`Mutex::raw`]).
        pub fn note_released(&self) {
            #[cfg(feature = "lockdep")]
            if let Some(e) = EVENTS.get() {
                e.release(self.addr());
            }
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.g
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.g
        }
    }

    #[cfg(feature = "lockdep")]
    impl<T> Drop for MutexGuard<'_, T> {
        fn drop(&mut self) {
            if let Some(e) = EVENTS.get() {
                e.release(self.addr);
            }
        }
    }
}

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

        /// A new unlocked mutex (the name is for the kernel's validator).
        pub fn named(_name: &'static str, value: T) -> Self {
            Self::new(value)
        }

        /// Locks it (loom blocks the thread and switches to another).
        pub fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(self.0.lock().expect("no panics while locked"))
        }

        /// Locks it if it is free.
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok().map(MutexGuard)
        }

        /// The value, through the one reference to the mutex.
        pub fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().expect("no panics while locked")
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
