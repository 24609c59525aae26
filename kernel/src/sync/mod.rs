//! Synchronisation between kernel threads.
//!
//! - [`SpinLock`]: interrupt-safe spinlock, for short critical sections that
//!   interrupt handlers may share (runqueue, wait queue lists, timer list).
//! - [`WaitQueue`]: the sleeping primitive every blocking object is built on
//!   (prepare-to-wait / check / schedule / finish-wait, so no wakeup is lost).
//! - [`Mutex`], [`Semaphore`]: blocking locks.
//! - [`Channel`]: a bounded pipe-like FIFO between threads with blocking send
//!   and receive (hackbench / perfpipe style workloads).
//!
//! Nothing here allocates on the wait or wake paths: waiters are linked through
//! fields of their own thread slot.

mod channel;
mod mutex;
mod semaphore;
mod spinlock;
mod waitqueue;

pub use channel::Channel;
#[allow(unused_imports)] // the guard types are named by users to come (shell, workloads)
pub use mutex::{Mutex, MutexGuard};
pub use semaphore::Semaphore;
#[allow(unused_imports)]
pub use spinlock::{SpinLock, SpinLockGuard};
pub use waitqueue::WaitQueue;
