//! Wait queues (Linux's `wait_queue_head_t` with exclusive, auto-removing
//! entries).
//!
//! The protocol that loses no wakeup, as in Linux:
//!
//! ```text
//! waiter:                                   waker:
//!   prepare_to_wait(wq)  // queued, SLEEPING  make the condition true
//!   if !condition { schedule() }            wake_one(wq) / wake_all(wq)
//!   finish_wait(wq)      // RUNNING, unqueued
//! ```
//!
//! `prepare_to_wait` queues the thread and marks it sleeping under the queue
//! lock, and the waker takes the same lock after making the condition true: so
//! either the waiter sees the condition, or the waker finds it queued and
//! sleeping and wakes it. A wakeup that arrives before the waiter reached
//! `schedule()` only flips it back to running (`try_to_wake_up` on a thread the
//! runqueue still holds), and `schedule()` then does not block.
//!
//! One hazard is left by that protocol with exclusive wakeups
//! ([`WaitQueue::wake_one`]): a waiter whose condition came true (it took a
//! semaphore unit, say) is still queued and marked sleeping until
//! `finish_wait`, and can be preempted in between. A `wake_one` in that
//! window picks it (it looks asleep), and the wakeup is spent on a thread
//! that no longer needs it, while the next waiter sleeps on with the
//! resource free. [`WaitQueue::wait_event`] therefore passes the wakeup on
//! ([`WaitQueue::finish_wait_exclusive`]) when a waker took it off the queue
//! after its last `prepare_to_wait`, as Linux's `abort_exclusive_wait` does
//! for an exclusive waiter that leaves without consuming its wakeup. Found
//! as a hackbench start gate stuck with a unit free and one sender asleep
//! (the `make ab` hang); at worst the pass-on wakes a waiter whose condition
//! is still false, which goes back to sleep.
//!
//! Entries are not allocated: each thread can wait on one queue at a time, so
//! the links live in its thread slot (`wq_next` / `wq_prev`, indices into the
//! thread table), and a queue is a head and a tail index.

use core::sync::atomic::Ordering;

use super::SpinLock;
use crate::task::{self, ThreadState};

/// End of a wait list.
const NIL: u32 = u32::MAX;

struct WqList {
    head: u32,
    tail: u32,
}

/// A queue of sleeping threads.
pub struct WaitQueue {
    list: SpinLock<WqList>,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    /// An empty queue.
    pub const fn new() -> Self {
        WaitQueue {
            list: SpinLock::named(
                "waitqueue",
                WqList {
                    head: NIL,
                    tail: NIL,
                },
            ),
        }
    }

    fn key(&self) -> usize {
        self as *const Self as usize
    }

    /// Queues the current thread (at the tail, once) and marks it sleeping.
    /// Follow with a check of the condition, `crate::sched::schedule()` if it is still
    /// false, and [`WaitQueue::finish_wait`].
    pub fn prepare_to_wait(&self) {
        let me = task::current_idx();
        let t = task::thread(me);
        let mut l = self.list.lock();
        let owner = t.wq_owner.load(Ordering::Relaxed);
        if owner == 0 {
            t.wq_owner.store(self.key(), Ordering::Relaxed);
            t.wq_next.store(NIL, Ordering::Relaxed);
            t.wq_prev.store(l.tail, Ordering::Relaxed);
            if l.tail == NIL {
                l.head = me;
            } else {
                task::thread(l.tail).wq_next.store(me, Ordering::Relaxed);
            }
            l.tail = me;
        } else {
            debug_assert_eq!(owner, self.key(), "thread waits on two wait queues");
        }
        crate::sched::set_state_of_current(t, ThreadState::Sleeping);
        drop(l);
    }

    /// Marks the current thread running and takes it off the queue if a waker
    /// did not already. Returns whether a waker had (it woke this thread, or
    /// tried to, after the last `prepare_to_wait`).
    pub fn finish_wait(&self) -> bool {
        let me = task::current_idx();
        let t = task::thread(me);
        crate::sched::set_state_of_current(t, task::ThreadState::Running);
        // Acquire: pairs with the waker's Release in `unlink`, so the waker's
        // reads of our links happen before we reuse them (the waker may run
        // on another CPU).
        if t.wq_owner.load(Ordering::Acquire) == 0 {
            return true;
        }
        let mut l = self.list.lock();
        if t.wq_owner.load(Ordering::Relaxed) == self.key() {
            Self::unlink(&mut l, me);
            return false;
        }
        true
    }

    /// [`Self::finish_wait`] for a waiter whose condition held after its last
    /// `prepare_to_wait`: if a waker took it off the queue meanwhile, that
    /// wakeup may have been meant for the next waiter (see the module docs),
    /// so it is passed on with [`Self::wake_one`].
    pub fn finish_wait_exclusive(&self) {
        if self.finish_wait() {
            self.wake_one();
        }
    }

    fn unlink(l: &mut WqList, i: u32) {
        let t = task::thread(i);
        let (prev, next) = (
            t.wq_prev.load(Ordering::Relaxed),
            t.wq_next.load(Ordering::Relaxed),
        );
        if prev == NIL {
            l.head = next;
        } else {
            task::thread(prev).wq_next.store(next, Ordering::Relaxed);
        }
        if next == NIL {
            l.tail = prev;
        } else {
            task::thread(next).wq_prev.store(prev, Ordering::Relaxed);
        }
        t.wq_owner.store(0, Ordering::Release);
    }

    /// Wakes the first queued thread that is actually asleep and unqueues it.
    /// Returns whether one was woken. Callable from interrupt context.
    pub fn wake_one(&self) -> bool {
        self.wake_one_flags(sched::WakeFlags::empty())
    }

    /// [`Self::wake_one`] with WF_SYNC: the waker is about to sleep, so the
    /// wakee may come to the waker's CPU (wake-affine) and, with NEXT_BUDDY,
    /// `preempt_sync` decides the preemption (Linux's `wake_up_sync`).
    pub fn wake_one_sync(&self) -> bool {
        self.wake_one_flags(sched::WakeFlags::SYNC)
    }

    fn wake_one_flags(&self, wf: sched::WakeFlags) -> bool {
        let mut l = self.list.lock();
        let mut i = l.head;
        while i != NIL {
            let next = task::thread(i).wq_next.load(Ordering::Relaxed);
            if crate::sched::try_to_wake_up(i, wf) {
                Self::unlink(&mut l, i);
                return true;
            }
            i = next;
        }
        false
    }

    /// Wakes and unqueues every queued thread; returns how many were asleep.
    pub fn wake_all(&self) -> usize {
        self.wake_all_flags(sched::WakeFlags::empty())
    }

    /// [`Self::wake_all`] with WF_SYNC: Linux's `wake_up_interruptible_sync_poll`
    /// on a queue of non-exclusive waiters (socket readers and writers sleep
    /// with `prepare_to_wait`, so a sync wakeup reaches every one of them).
    pub fn wake_all_sync(&self) -> usize {
        self.wake_all_flags(sched::WakeFlags::SYNC)
    }

    fn wake_all_flags(&self, wf: sched::WakeFlags) -> usize {
        let mut l = self.list.lock();
        let mut n = 0;
        while l.head != NIL {
            let i = l.head;
            Self::unlink(&mut l, i);
            n += usize::from(crate::sched::try_to_wake_up(i, wf));
        }
        n
    }

    /// Whether no thread is queued (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.list.lock().head == NIL
    }

    /// Sleeps until `cond()` returns true (Linux's `wait_event`). `cond` runs
    /// with the thread marked sleeping, so it must not block; it may take
    /// spinlocks, and it may have side effects (take the resource) when it
    /// returns true.
    pub fn wait_event(&self, mut cond: impl FnMut() -> bool) {
        if cond() {
            return;
        }
        loop {
            self.prepare_to_wait();
            if cond() {
                break;
            }
            crate::sched::schedule();
        }
        self.finish_wait_exclusive();
    }
}

/// What [`kernel_hal::sync::Mutex`] sleeps on.
impl kernel_hal::sync::WaitQueueOps for WaitQueue {
    const NEW: Self = WaitQueue::new();

    fn wait_event(&self, cond: impl FnMut() -> bool) {
        WaitQueue::wait_event(self, cond);
    }

    fn wake_one(&self) -> bool {
        WaitQueue::wake_one(self)
    }
}
