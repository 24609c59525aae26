//! Synchronisation between kernel threads.
//!
//! - [`SpinLock`]: interrupt-safe spinlock, for short critical sections that
//!   interrupt handlers may share (runqueue, wait queue lists, timer list).
//! - [`WaitQueue`]: the sleeping primitive every blocking object is built on
//!   (prepare-to-wait / check / schedule / finish-wait, so no wakeup is lost).
//! - [`Mutex`], [`Semaphore`]: blocking locks.
//! - [`Channel`]: a bounded FIFO between threads with blocking send and
//!   receive that buffers and wakes like a Linux pipe or unix socket
//!   ([`Model`]), for the workloads.
//!
//! Nothing here allocates on the wait or wake paths: waiters are linked through
//! fields of their own thread slot.

pub mod channel;
mod mutex;
mod semaphore;
mod spinlock;
mod waitqueue;

pub use channel::{Channel, ChannelStats, Model};
#[allow(unused_imports)] // the guard types are named by users to come (shell, workloads)
pub use mutex::{Mutex, MutexGuard};
pub use semaphore::Semaphore;
#[allow(unused_imports)]
pub use spinlock::{SpinLock, SpinLockGuard};
pub use waitqueue::WaitQueue;
