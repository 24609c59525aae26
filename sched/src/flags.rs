//! Wake, enqueue and dequeue flags (Linux's `WF_*`, `ENQUEUE_*`, `DEQUEUE_*`).

use bitflags::bitflags;

bitflags! {
    /// Why and how a task is woken (Linux's `WF_*` values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct WakeFlags: u32 {
        /// After exec.
        const EXEC = 0x02;
        /// A new child (`wake_up_new_task`): no buddy, no sync path.
        const FORK = 0x04;
        /// A normal `try_to_wake_up`.
        const TTWU = 0x08;
        /// The waker will sleep soon: wake-affine and `preempt_sync` hint.
        const SYNC = 0x10;
        /// The task changed CPU while waking.
        const MIGRATED = 0x20;
        /// Prefer the waking CPU.
        const CURRENT_CPU = 0x40;
        /// `select_task_rq` ran for this wakeup (sync threshold / 4).
        const RQ_SELECTED = 0x80;
        /// Ours: the wakeup comes from interrupt context (Linux's `!in_task()`),
        /// which exempts it from NEXT_BUDDY_INELIGIBLE_RESCHED.
        const IRQ = 0x100;
    }
}

bitflags! {
    /// How a task is enqueued.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct EnqueueFlags: u32 {
        /// Waking from sleep.
        const WAKEUP = 0x01;
        /// Re-queued after a property change (the `sched_change` pattern).
        const RESTORE = 0x02;
        /// Moved between queues (keeps relative deadline).
        const MOVE = 0x04;
        /// A new task (`wake_up_new_task`): half-slice first deadline.
        const INITIAL = 0x80;
        /// Arrived from another CPU.
        const MIGRATED = 0x40;
        /// Waking while its dequeue was still delayed.
        const DELAYED = 0x200;
        /// Put at the head of its RT priority list.
        const HEAD = 0x10;
    }
}

bitflags! {
    /// How a task is dequeued.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct DequeueFlags: u32 {
        /// Going to sleep (may be delayed; lag kept for wakeup placement).
        const SLEEP = 0x01;
        /// Saved for a property change (no delay, relative deadline kept).
        const SAVE = 0x02;
        /// Moved between queues.
        const MOVE = 0x04;
        /// Leaving for another CPU.
        const MIGRATING = 0x08;
        /// A special sleep that must not be delayed.
        const SPECIAL = 0x10;
        /// Completing a delayed dequeue.
        const DELAYED = 0x200;
    }
}
