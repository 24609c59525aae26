//! Changing a thread's scheduling attributes: `sched_setattr` (policy, nice,
//! RT priority, slice) and `sched_setaffinity`.

use ::core::sync::atomic::Ordering;

use ::sched::smp::LifecycleError;
use ::sched::{CpuMask, Resched, SchedTask, TaskId, TaskParams};

use super::*;
use crate::arch;
use crate::percpu;
use crate::task::{thread, Thread, Tid};

/// Changes thread `t`'s policy / nice / slice (`sched_setattr`), whether it is
/// running, queued or asleep, on any CPU.
pub fn sched_setattr(t: &Thread, params: TaskParams) -> Result<(), sched::RqError> {
    params.validate().map_err(sched::RqError::Params)?;
    let s = SCHED.get().ok_or(sched::RqError::NotQueued)?;
    let _pi = t.pi_lock.lock();
    match s.set_params(TaskId(t.idx()), params, arch::cpu_id()) {
        Ok((cpu, r)) => {
            t.prio
                .store(SchedTask::new(params).prio(), Ordering::Relaxed);
            percpu::cpu(cpu).raise_need_resched(r);
            Ok(())
        }
        Err(LifecycleError::Params(p)) => Err(sched::RqError::Params(p)),
        Err(LifecycleError::NoMemory) => Err(sched::RqError::NoMemory),
        Err(_) => Err(sched::RqError::NotQueued),
    }
}

/// Why [`set_affinity`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AffinityError {
    /// The mask names no online CPU.
    NoOnlineCpu,
    /// The thread does not exist (any more), or is an idle thread.
    NoSuchThread,
    /// The thread is SCHED_DEADLINE and the mask does not cover every
    /// online CPU: Linux's `sched_setaffinity` refuses it with -EBUSY
    /// (admission counts on a deadline task being free to run on any CPU).
    DeadlineBusy,
}

/// Restricts thread `tid` to the CPUs in `mask` (CPUs that are not online
/// are ignored), like `sched_setaffinity`. A sleeping thread is
/// woken on an allowed CPU later; a queued one moves at once; a running one
/// is asked to reschedule and moves when it is off its CPU (at once for the
/// caller itself; for a thread running on another CPU at its next preemption
/// point, i.e. at once under the full and lazy models, at its next
/// `schedule()` under none, or `cond_resched()` under voluntary). Refused
/// for a SCHED_DEADLINE thread unless the mask covers every online CPU
/// ([`AffinityError::DeadlineBusy`], nothing changes).
pub fn set_affinity(tid: Tid, mask: CpuMask) -> Result<(), AffinityError> {
    let s = SCHED.get().ok_or(AffinityError::NoSuchThread)?;
    let mask = mask.and(&online_mask());
    if mask.is_empty() {
        return Err(AffinityError::NoOnlineCpu);
    }
    let idx = tid.idx();
    if crate::task::is_idle_idx(idx) || idx as usize >= crate::task::threads().len() {
        return Err(AffinityError::NoSuchThread);
    }
    let t = thread(idx);
    {
        let _pi = t.pi_lock.lock();
        if !crate::task::tid_is_live(tid) {
            return Err(AffinityError::NoSuchThread);
        }
        let old = t.cpus_allowed();
        t.cpus_allowed.store(&mask, Ordering::Relaxed);
        let refused = match s.set_affinity(TaskId(idx), mask, arch::cpu_id()) {
            Ok(()) => None,
            Err(LifecycleError::NoAllowedCpu) => Some(AffinityError::NoOnlineCpu),
            Err(LifecycleError::DlAffinityBusy) => Some(AffinityError::DeadlineBusy),
            Err(_) => Some(AffinityError::NoSuchThread),
        };
        if let Some(e) = refused {
            // The scheduler changed nothing: neither does the thread.
            t.cpus_allowed.store(&old, Ordering::Relaxed);
            return Err(e);
        }
    }
    // The caller itself, on a CPU it may no longer use: move now.
    let irq = arch::IrqGuard::save();
    let me = crate::task::current_idx() == idx && !mask.has(arch::cpu_id());
    if me {
        percpu::this_cpu().raise_need_resched(Resched::Now);
    }
    drop(irq);
    if me && preempt_count() == 0 {
        __schedule(SchedMode::Preempt);
    }
    Ok(())
}
