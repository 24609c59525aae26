//! Wakeups: a new thread's first (`wake_up_new_task`), `try_to_wake_up`,
//! and the reschedule IPI that lands queued remote wakeups.

use ::core::sync::atomic::{AtomicU64, Ordering};

use ::sched::rq::WAKEUP_ROWS;
use ::sched::smp::{LifecycleError, Woke};
use ::sched::{SchedTask, TaskId, WakeFlags, WakeupReason};

use super::*;
use crate::arch;
use crate::percpu::{self};
use crate::task::{thread, ThreadState};

/// One CPU's wakeup counters, a cache line of its own; counted only with
/// schedstats on ([`super::schedstats`]).
#[repr(align(64))]
pub struct WakeStats {
    /// Threads it woke (Linux's schedstat `ttwu_count`, every successful
    /// `try_to_wake_up`, in place or placed).
    pub ttwu: AtomicU64,
    /// Of those, the ones that landed on this, the waker's, CPU
    /// (`ttwu_local`): what wake-affine placement decides.
    pub ttwu_local: AtomicU64,
    /// Of those, the wakeup decisions taken on this CPU for its own
    /// wakees, by row (`sched::rq::WAKEUP_ROW_NAMES`); a remote wakee's
    /// decision is the rows' total minus these (`compare`'s `wkl_*`).
    pub local_rows: [AtomicU64; WAKEUP_ROWS],
    /// Of the local ones, the PICK steps that the running task's slice
    /// protection decided (`WakeupDecision::protected`).
    pub local_protected: AtomicU64,
    /// Fair wakeups placed from this CPU (`select_task_rq_fair`), by the
    /// rule that chose the target (`sched::smp::AFFINE_RULE_NAMES`), then
    /// by what `select_idle_sibling` returned
    /// (`sched::smp::SIS_PICK_NAMES`), then the ones placed on this CPU
    /// (`compare`'s `wa_*`, `sis_*` and `placed_local`).
    pub placement: [AtomicU64; PLACEMENT_ROWS],
}

/// Counters in [`WakeStats::placement`]: the affine rules, the
/// `select_idle_sibling` picks, and the placements on the waker's CPU.
pub use ::sched::smp::PLACEMENT_ROWS;

/// Counts a fair wakeup's placement on this CPU's [`WakeStats`]
/// (`Platform::wake_placement`, with schedstats on): three relaxed
/// increments on a line of this CPU's. Inline behind the switch's test:
/// out of line (`#[cold]`), the calls cost the counting runs 39 more
/// guest instructions per cross-CPU pipe round trip and the disabled path
/// no fewer.
#[inline(always)]
pub(crate) fn count_placement(
    rule: ::sched::smp::AffineRule,
    pick: ::sched::smp::SisPick,
    local: bool,
) {
    let Some(st) = WAKE_STATS.get(arch::cpu_id().index()) else {
        return;
    };
    for row in ::sched::smp::placement_rows(rule, pick, local)
        .into_iter()
        .flatten()
    {
        st.placement[row].fetch_add(1, Ordering::Relaxed);
    }
}

/// Counts a successful `try_to_wake_up` (not left pending on a wake
/// list) on the waking CPU's [`WakeStats`] (schedstats on): `ttwu`, and
/// for a wakee placed on this CPU `ttwu_local` and its decision's row.
/// Inline, as [`count_placement`].
#[inline(always)]
fn count_ttwu(cpu: CpuId, this_cpu: CpuId, decision: Option<::sched::WakeupDecision>) {
    let Some(st) = WAKE_STATS.get(this_cpu.index()) else {
        return;
    };
    st.ttwu.fetch_add(1, Ordering::Relaxed);
    if cpu == this_cpu {
        st.ttwu_local.fetch_add(1, Ordering::Relaxed);
        if let Some(d) = decision {
            if let Some(r) = st.local_rows.get(d.reason.row()) {
                r.fetch_add(1, Ordering::Relaxed);
            }
            if d.protected {
                st.local_protected.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Wakeup counters by waking CPU (`compare` reports them as `ttwu` and
/// `ttwu_local`).
pub static WAKE_STATS: [WakeStats; percpu::MAX_CPUS] = [const {
    WakeStats {
        ttwu: AtomicU64::new(0),
        ttwu_local: AtomicU64::new(0),
        local_rows: [const { AtomicU64::new(0) }; WAKEUP_ROWS],
        local_protected: AtomicU64::new(0),
        placement: [const { AtomicU64::new(0) }; PLACEMENT_ROWS],
    }
}; percpu::MAX_CPUS];

/// Queues a newly spawned thread (`wake_up_new_task`, fork balancing within
/// its allowed CPUs).
pub(crate) fn wake_up_new(idx: u32, st: SchedTask) -> Result<(), LifecycleError> {
    let s = sched();
    let t = thread(idx);
    let _pi = t.pi_lock.lock();
    let this_cpu = arch::cpu_id();
    t.state.store(ThreadState::Running, Ordering::SeqCst);
    t.runnable_since
        .store(arch::now_ns().max(1), Ordering::Relaxed);
    // No CPU yet: `set_task_cpu` records the first one without a migration.
    t.cpu.store(u32::MAX, Ordering::Release);
    let prio = st.prio();
    // Its scheduler state may need memory; a failure is an error for the
    // spawner (failing allocations on demand may hit it).
    match kernel_hal::heap::may_fail(|| s.spawn(TaskId(idx), st, this_cpu)) {
        Ok((cpu, d)) => {
            crate::trace::sched_wakeup_new(idx, prio, cpu);
            percpu::cpu(cpu).raise_need_resched(d.resched);
            Ok(())
        }
        Err(e) => {
            t.cpu.store(this_cpu.as_u32(), Ordering::Release);
            Err(e)
        }
    }
}

/// Wakes thread `idx` if it is sleeping (`try_to_wake_up`). Returns whether it
/// was. Callable from interrupt context; never allocates. See the module
/// docs for the protocol.
///
/// The schedstats switch is asked once, here: each answer has its own copy
/// of the wakeup ([`wake_sleeper`]), so the one with schedstats off carries
/// nothing of the counting (Linux's `schedstat_enabled()` is a static key
/// for the same reason).
pub fn try_to_wake_up(idx: u32, wf: WakeFlags) -> bool {
    if super::schedstats::schedstat_enabled() {
        wake_sleeper::<true>(idx, wf)
    } else {
        wake_sleeper::<false>(idx, wf)
    }
}

/// [`try_to_wake_up`] with the diagnostic counters (`COUNTING`: schedstats
/// on) or without. Out of line: one copy each, not both in every caller.
#[inline(never)]
fn wake_sleeper<const COUNTING: bool>(idx: u32, wf: WakeFlags) -> bool {
    let t = thread(idx);
    let Some(s) = SCHED.get() else { return false };
    let _pi = t.pi_lock.lock();
    if t.state.load(Ordering::SeqCst) != ThreadState::Sleeping {
        return false;
    }
    t.state.store(ThreadState::Running, Ordering::SeqCst);
    let this_cpu = arch::cpu_id();
    // The diagnostic counters, only when asked for (schedstats: COUNTING),
    // with the scheduler's own (its domain statistics).
    let counted = s.wake_counting_if::<COUNTING>(TaskId(idx), wf, this_cpu, |w| {
        count_ttwu(w.cpu(), this_cpu, w.decision());
    });
    match counted {
        Ok(w) => {
            let cpu = w.cpu();
            let running = matches!(
                w,
                Woke::InPlace { decision, .. } if decision.reason == WakeupReason::SameTask
            );
            if !running {
                t.runnable_since
                    .store(arch::now_ns().max(1), Ordering::Relaxed);
            }
            crate::trace::sched_wakeup(idx, t.prio.load(Ordering::Relaxed), cpu);
            if let Some(d) = w.decision() {
                // Mirror the decision into the CPU's flag (a wakeup left on
                // a remote wake list is decided by that CPU when it drains).
                percpu::cpu(cpu).raise_need_resched(d.resched);
            }
        }
        Err(e) => crate::kprintln!("BUG: waking thread {}: {:?}", idx, e),
    }
    true
}

/// Drains this CPU's wake list and refreshes its need-resched mirror: the
/// reschedule IPI's work (the preemption itself happens in `irq_exit`).
pub fn sched_ipi() {
    let cpu = arch::cpu_id();
    percpu::cpu(cpu).ipis.fetch_add(1, Ordering::Relaxed);
    let Some(s) = SCHED.get() else { return };
    if !percpu::cpu(cpu).online.load(Ordering::Acquire) {
        return;
    }
    // Another CPU may have moved this CPU's hrtick (a remote enqueue).
    arch::timer_sync();
    {
        let mut rq = lock_rq(cpu);
        percpu::cpu(cpu).liveness.answered(rq.clock());
        s.sched_ttwu_pending(&mut rq);
    }
    // `task_woken_rt` / `task_woken_dl` for the wakeups just landed: an RT
    // task queued behind a higher one, or a deadline task behind an earlier
    // one, is pushed on (one load each while no CPU is overloaded).
    s.balance_rt(cpu, cpu);
    s.balance_dl(cpu, cpu);
}
