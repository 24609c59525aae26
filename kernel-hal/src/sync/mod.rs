//! The lock primitives that own their data behind their own protocol
//! (interior mutability): [`SpinLock`] and [`Mutex`]. The wait queue a
//! mutex sleeps on is the kernel's ([`WaitQueueOps`]); the kernel builds its
//! other blocking objects (semaphores, channels) from these in safe code.

mod mutex;
mod spinlock;

pub use mutex::{Mutex, MutexGuard, WaitQueueOps};
pub use spinlock::{ReschedPoint, SpinLock, SpinLockGuard, ViaHooks};
