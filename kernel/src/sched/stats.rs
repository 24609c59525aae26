//! Reading a thread's scheduler state (`ps`, `join`, tests) and the
//! runqueues for dumps.

use ::core::sync::atomic::Ordering;

use ::sched::{Rq, SchedTask, TaskId};

use super::*;
use crate::arch;
use crate::task::{Thread, TASK_DEAD};

/// A copy of thread `t`'s scheduler state, wherever the scheduler keeps it
/// (an exited thread not joined yet: its final state; `None`: an idle
/// thread, or a free slot). The running
/// thread's runtime is as of its last accounting.
pub fn sched_snapshot(t: &Thread) -> Option<SchedTask> {
    match SCHED.get()?.task(TaskId(t.idx()), arch::cpu_id()) {
        Ok(st) => Some(st),
        // Exited and not joined yet: the state it exited with (`sched`
        // stores it in the same step that forgets the task).
        Err(_) => SCHED.get()?.exited(TaskId(t.idx())),
    }
}

/// Thread `t`'s total runtime in ns, including the part of the current run
/// not accounted yet.
pub fn task_runtime_ns(t: &Thread) -> u64 {
    let Some(s) = SCHED.get() else { return 0 };
    let id = TaskId(t.idx());
    let mut rq = match s.task_rq_lock(id, arch::cpu_id()) {
        Ok((_, rq)) => rq,
        // Asleep: its state is parked, fully accounted.
        Err(::sched::smp::LifecycleError::Asleep) => {
            return s
                .task(id, arch::cpu_id())
                .map_or(0, |st| st.se.sum_exec_runtime);
        }
        Err(_) => return s.exited(id).map_or(0, |st| st.se.sum_exec_runtime),
    };
    rq.update_rq_clock(arch::now_ns());
    let Some(st) = rq.task(id) else { return 0 };
    let mut ns = st.se.sum_exec_runtime;
    if rq.curr() == Some(id) {
        ns += rq.clock().saturating_sub(st.se.exec_start);
    }
    ns
}

/// Whether the thread is dead (for assertions).
#[allow(dead_code)]
pub(crate) fn is_dead(t: &Thread) -> bool {
    t.state.load(Ordering::Relaxed) == TASK_DEAD
}

/// CPU `cpu`'s runqueue, locked if free, for the dumps (never spins). The
/// caller's interrupt guard must outlive the lock (the signature ties them):
/// the tick locks this CPU's runqueue, so holding it with interrupts on would
/// deadlock at the next tick (it did, in the soft-lockup test's report).
pub(crate) fn try_rq<'a>(
    cpu: usize,
    _irqs_off: &'a arch::IrqGuard,
) -> Option<spin::MutexGuard<'a, Rq>> {
    let s = SCHED.get()?;
    if cpu >= s.nr_cpus() {
        return None;
    }
    s.rq_lock(cpu).try_lock()
}

/// The number of runqueues (CPUs the firmware describes).
pub fn nr_runqueues() -> usize {
    nr_rqs()
}
