//! Where a pending reschedule request is acted on: the preemption points, by
//! preemption model. The kernel and the simulator ask [`PreemptMode::preempts_at`]
//! at each point instead of spelling the rule out themselves.
//!
//! | point | none | voluntary | full | lazy |
//! |---|---|---|---|---|
//! | interrupt exit to kernel mode, `preempt_enable` | – | – | now | now |
//! | `cond_resched()` | – | now, lazy | – | – |
//! | return to user space: a syscall's end, interrupt exit to user mode | now, lazy | now, lazy | now, lazy | now, lazy |
//!
//! ("now": an immediate request, TIF_NEED_RESCHED; "lazy": a lazy one,
//! TIF_NEED_RESCHED_LAZY, which only the lazy model ever makes, see
//! [`crate::rq::Rq::resched_curr`]. The tick upgrades a lazy request to an
//! immediate one, so under lazy a request waits at most one tick for a
//! kernel-mode point.)
//!
//! # Return to user space
//! Linux honours both bits on every return to user space, in every model:
//! `exit_to_user_mode_loop()` (kernel/entry/common.c) calls `schedule()` when
//! `ti_work & (_TIF_NEED_RESCHED | _TIF_NEED_RESCHED_LAZY)`. The lazy bit was
//! added to that test by 26baa1f1c4bd ("sched: Add TIF_NEED_RESCHED_LAZY
//! infrastructure", v6.13), and 7c70cb94d29c ("sched: Add Lazy preemption
//! model") made the fair class ask lazily: a lazy request is honoured at the
//! task's next return to user space or at the next tick, whichever comes
//! first. A task that makes syscalls (hackbench: one per message) therefore
//! gives way at its next syscall's end, not a tick later.
//!
//! Our workloads that model user programs are kernel threads. They mark each
//! modelled syscall's end as a return to user space (the kernel's
//! `exit_to_user_mode()`, the simulator's burst end), so a lazy request made
//! during the syscall (a wakeup that should preempt) is honoured there, as in
//! Linux, instead of waiting for the tick.
//!
//! # Interrupt exit
//! Where an interrupt returns decides which point its exit is. Linux's
//! `irqentry_exit()` (kernel/entry/common.c) sends an interrupt taken in
//! user mode (`user_mode(regs)`) through `irqentry_exit_to_user_mode()`,
//! which runs the same `exit_to_user_mode_loop()` as a syscall's end: both
//! bits, every model. An interrupt taken in kernel mode goes through
//! `irqentry_exit_cond_resched()` only under a preemptible model (full,
//! lazy), and that calls `preempt_schedule_irq()` only when `need_resched()`
//! holds, which tests TIF_NEED_RESCHED alone: a lazy request set in that
//! interrupt waits for the tick. [`PreemptPoint::irq_exit`] makes that
//! choice. So a lazy wakeup made by a timer interrupt that arrives while a
//! CPU-bound task computes in user space preempts it at that interrupt's
//! return, not a tick later (under lazy in Linux a periodic sleeper among
//! user-space hogs waits microseconds, docs/results/linux.md).
//!
//! Our kernel marks the stretches of a workload thread that model user code
//! (a compute loop between modelled syscalls; the kernel's
//! `run_in_user_mode()`), and its interrupt exit asks
//! `PreemptPoint::irq_exit(interrupted thread in that stretch)`.
//!
//! `cond_resched()`: ours is a switch point only under voluntary (Linux's
//! `none` honours it too; here it is what tells `voluntary` from `none`), and
//! is a no-op under full and lazy, as Linux 6.13+ makes it under lazy.

use crate::rq::Resched;
use crate::tunables::PreemptMode;

/// A place where the running task may be switched out without blocking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptPoint {
    /// Kernel mode with preemption enabled again: interrupt exit to kernel
    /// code, `preempt_enable()`, the end of a spinlocked section.
    Kernel,
    /// An explicit `cond_resched()` in a long kernel loop.
    CondResched,
    /// Return to user space (the end of a syscall or of an interrupt taken in
    /// user mode): Linux's `exit_to_user_mode_loop()`.
    UserReturn,
}

impl PreemptPoint {
    /// The point an interrupt's exit is: a return to user space when the
    /// interrupt was taken in user mode (`user_mode`), kernel mode
    /// otherwise (Linux's `irqentry_exit()`, see the module docs).
    #[inline]
    pub const fn irq_exit(user_mode: bool) -> PreemptPoint {
        if user_mode {
            PreemptPoint::UserReturn
        } else {
            PreemptPoint::Kernel
        }
    }
}

impl PreemptMode {
    /// Whether a task at `point` with the request `need` pending (and
    /// preemption not disabled) reschedules under this model.
    #[inline]
    pub const fn preempts_at(self, point: PreemptPoint, need: Resched) -> bool {
        match (point, need) {
            (_, Resched::None) => false,
            (PreemptPoint::UserReturn, _) => true,
            (PreemptPoint::Kernel, Resched::Now) => {
                matches!(self, PreemptMode::Full | PreemptMode::Lazy)
            }
            (PreemptPoint::Kernel, Resched::Lazy) => false,
            (PreemptPoint::CondResched, _) => matches!(self, PreemptMode::Voluntary),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PreemptMode::*;
    use PreemptPoint::*;
    use Resched::{Lazy as L, None as N, Now as W};

    /// The table of the module docs, cell by cell.
    #[test]
    fn the_table() {
        let want = |m: PreemptMode, p: PreemptPoint, r: Resched| -> bool {
            match p {
                Kernel => r == W && (m == Full || m == Lazy),
                CondResched => r != N && m == Voluntary,
                UserReturn => r != N,
            }
        };
        for m in PreemptMode::ALL {
            for p in [Kernel, CondResched, UserReturn] {
                for r in [N, L, W] {
                    assert_eq!(m.preempts_at(p, r), want(m, p, r), "{m:?} {p:?} {r:?}");
                }
            }
        }
        // The cells the lazy model is about.
        assert!(!Lazy.preempts_at(Kernel, L));
        assert!(!Lazy.preempts_at(CondResched, L));
        assert!(Lazy.preempts_at(UserReturn, L));
        assert!(!None.preempts_at(Kernel, W));
        assert!(None.preempts_at(UserReturn, W));
    }

    /// Interrupt exit: to user mode it takes any request in every model
    /// (`irqentry_exit_to_user_mode()`), to kernel mode only an immediate
    /// one under full and lazy (`irqentry_exit_cond_resched()`).
    #[test]
    fn interrupt_exit_by_mode_of_the_interrupted_code() {
        assert_eq!(PreemptPoint::irq_exit(true), UserReturn);
        assert_eq!(PreemptPoint::irq_exit(false), Kernel);
        for m in PreemptMode::ALL {
            let user = |r| m.preempts_at(PreemptPoint::irq_exit(true), r);
            let kernel = |r| m.preempts_at(PreemptPoint::irq_exit(false), r);
            assert!(!user(N) && !kernel(N), "{m:?}");
            assert!(user(L) && user(W), "{m:?}");
            assert!(
                !kernel(L),
                "{m:?}: a lazy request at interrupt exit to kernel mode"
            );
            assert_eq!(kernel(W), m == Full || m == Lazy, "{m:?}");
        }
        // What the lazy model's sleeper-among-hogs case turns on: the same
        // lazy request, taken or left by where the interrupt returns.
        assert!(Lazy.preempts_at(PreemptPoint::irq_exit(true), L));
        assert!(!Lazy.preempts_at(PreemptPoint::irq_exit(false), L));
    }
}
