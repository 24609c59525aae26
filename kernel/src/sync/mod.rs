//! Synchronisation between kernel threads.
//!
//! - [`SpinLock`] (from `kernel_hal`): interrupt-safe spinlock, for short critical sections that
//!   interrupt handlers may share (runqueue, wait queue lists, timer list).
//! - [`WaitQueue`]: the sleeping primitive every blocking object is built on
//!   (prepare-to-wait / check / schedule / finish-wait, so no wakeup is lost).
//! - [`Mutex`] (`kernel_hal`'s, over [`WaitQueue`]), [`Semaphore`]: blocking locks.
//! - [`Channel`]: a bounded FIFO between threads with blocking send and
//!   receive that buffers and wakes like a Linux pipe or unix socket
//!   ([`Model`]), for the workloads.
//!
//! Nothing here allocates on the wait or wake paths: waiters are linked through
//! fields of their own thread slot.

pub mod channel;
mod semaphore;
mod waitqueue;

pub use channel::{Channel, ChannelStats, Model};
/// The kernel's preemption point at a lock release: a direct call into the
/// scheduler (`crate::sched::preempt_check_resched_irqs_on`, the
/// lock's release having found interrupts on), inlined.
#[derive(Debug)]
pub struct Resched;

impl kernel_hal::sync::ReschedPoint for Resched {
    #[inline]
    fn preempt_check_resched() {
        crate::sched::preempt_check_resched_irqs_on();
    }
}

/// An interrupt-safe spinlock ([`kernel_hal::sync::SpinLock`]) whose release
/// is the scheduler's preemption point, called directly.
pub type SpinLock<T> = kernel_hal::sync::SpinLock<T, Resched>;
/// Holds a [`SpinLock`].
#[allow(dead_code)] // named by users to come (shell, workloads)
pub type SpinLockGuard<'a, T> = kernel_hal::sync::SpinLockGuard<'a, T, Resched>;
pub use semaphore::Semaphore;

/// A sleeping lock around `T` ([`kernel_hal::sync::Mutex`] on a [`WaitQueue`]).
pub type Mutex<T> = kernel_hal::sync::Mutex<T, WaitQueue>;
/// Holds a [`Mutex`]; unlocks and wakes one waiter on drop.
#[allow(dead_code)] // named by users to come (shell, workloads)
pub type MutexGuard<'a, T> = kernel_hal::sync::MutexGuard<'a, T, WaitQueue>;
pub use waitqueue::WaitQueue;
