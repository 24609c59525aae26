//! The idle class: what a CPU runs when no other class has work.
//!
//! The idle task is the kernel's own per-CPU thread; the scheduler represents it
//! as "no current task" (`Rq::curr() == None`), so the idle class holds no
//! queue. What it contributes is policy: any wakeup on an idle CPU preempts at
//! once, and reschedule requests aimed at the idle task are always immediate,
//! never lazy (as with Linux's lazy preemption model, which promotes a
//! request aimed at the idle task at once), because an idle CPU has nothing
//! to finish.
//!
//! SCHED_IDLE *tasks* are not this class: they are fair tasks of weight 3
//! (see `fair`).

use crate::Resched;

/// The reschedule the idle task gets for any request: always immediate.
#[inline]
pub const fn resched_idle(_requested: Resched) -> Resched {
    Resched::Now
}
