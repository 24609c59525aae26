//! `schedule()` and the context switch (`__schedule`, `finish_task_switch`).

use ::core::sync::atomic::Ordering;
use kernel_hal::cpu::CpuId;

use ::sched::{PrevAction, Rq, Switch, TaskId};

use super::*;
use crate::arch;
use crate::percpu::{self};
use crate::task::{idle_idx, thread, Thread, ThreadState};
use kernel_hal::context::{self as context_switch, SwitchLock};

/// How `__schedule` was entered.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchedMode {
    /// A thread called `schedule()`: it blocks if it set itself sleeping.
    Voluntary,
    /// Preemption (interrupt exit, `preempt_enable`, `cond_resched`): the
    /// thread stays runnable whatever its state says.
    Preempt,
    /// `yield_now()`.
    Yield,
    /// The thread exited.
    Dead,
}

/// Gives up the CPU. Blocks if the current thread set itself `ThreadState::Sleeping`
/// and no wakeup came in the meantime; otherwise just lets the scheduler pick.
pub fn schedule() {
    let pcount = preempt_count();
    if pcount != 0 {
        crate::kprintln!(
            "BUG: scheduling while atomic: thread '{}' preempt_count {}",
            crate::task::current().name(),
            pcount
        );
    }
    __schedule(SchedMode::Voluntary);
}

/// Gives the CPU to another runnable thread if one should run (`sched_yield`:
/// an eligible fair thread forfeits the rest of its request).
pub fn yield_now() {
    __schedule(SchedMode::Yield);
}

/// Last switch of an exiting thread (preemption disabled by the caller).
pub(crate) fn schedule_dead() -> ! {
    __schedule(SchedMode::Dead);
    unreachable!("a dead thread was switched back in");
}

/// `__schedule`, in Linux's steps: leave idle if idle runs, lock the
/// runqueue, tell the scheduler what the running thread does and let it
/// pick, account the switch, and switch stacks with the runqueue still
/// locked (`finish_task_switch` unlocks it on the other side).
pub(crate) fn __schedule(mode: SchedMode) {
    // Restored when this thread runs again and returns from here.
    let _irq = arch::IrqGuard::save();
    let cpu = arch::cpu_id();
    let pc = percpu::cpu(cpu);
    let Some(s) = SCHED.get() else { return };
    if !pc.online.load(Ordering::Acquire) {
        return;
    }
    let idle = idle_idx(cpu);
    let prev_idx = pc.curr.load(Ordering::Relaxed);
    let tick_restarted = prev_idx == idle && leave_idle(pc);
    let rq_mutex = s.rq_lock(cpu);
    rq_mutex.note_locking();
    let mut rq = SwitchLock::lock(rq_mutex.raw());
    let prev = thread(prev_idx);
    prev.check_stack();
    let action = prev_action(mode, prev_idx == idle, prev);
    let sw = s.schedule(&mut rq, action);
    if prev_idx == idle {
        // The idle thread left: whatever asked this CPU to run was answered
        // (times from the clock `schedule` just read: no read of its own).
        pc.liveness.answered(rq.clock());
        if tick_restarted {
            pc.liveness.tick_restarted(rq.clock());
        }
    }
    if mode == SchedMode::Dead {
        // Its exit state stays with the scheduler for `join` (`exited`).
        pc.preempt_count.fetch_sub(1, Ordering::Relaxed);
    }
    pc.mirror_need_resched(&rq);
    let next_idx = sw.next.map_or(idle, |t| t.0);
    if next_idx == prev_idx {
        s.publish(&mut rq);
        drop(rq);
        rq_mutex.note_released();
        return;
    }
    let stays = prev_idx != idle && matches!(action, PrevAction::Stays | PrevAction::Yields);
    prepare_task_switch(cpu, &rq, mode, stays, sw.prev_misplaced, prev_idx, next_idx);
    s.publish(&mut rq);
    // The lock stays held across the switch; the next thread releases it in
    // `finish_task_switch`.
    context_switch::switch_to(&thread(next_idx).ctx, rq, &_irq);
    finish_task_switch();
}

/// The idle thread leaves (or was preempted while polling). Returns
/// whether it restarted the tick (tickless idle ended).
fn leave_idle(pc: &percpu::PerCpu) -> bool {
    // From now on wakers must interrupt this CPU. Before the wake list is
    // drained, so a waker that still saw the flag queued what the drain takes.
    pc.polling.store(false, Ordering::SeqCst);
    // Tickless idle ends here, whichever way the idle thread was left (its
    // own loop, or preemption at an interrupt's exit).
    let tickless = pc.nohz_idle.swap(false, Ordering::Relaxed);
    if tickless {
        arch::timer_restart_tick();
    }
    tickless
}

/// What the running thread does as it gives up the CPU.
fn prev_action(mode: SchedMode, prev_is_idle: bool, prev: &Thread) -> PrevAction {
    match mode {
        SchedMode::Dead => PrevAction::Exits,
        SchedMode::Voluntary
            if !prev_is_idle && prev.state.load(Ordering::SeqCst) == ThreadState::Sleeping =>
        {
            PrevAction::Sleeps
        }
        SchedMode::Yield => PrevAction::Yields,
        _ => PrevAction::Stays,
    }
}

/// Bookkeeping of a switch from `prev_idx` to `next_idx` (`rq` locked):
/// switch counts, CPU time split, the stall watchdog's clocks, `on_cpu`,
/// the per-CPU current thread, and the trace event.
fn prepare_task_switch(
    cpu: CpuId,
    rq: &Rq,
    mode: SchedMode,
    prev_stays: bool,
    prev_misplaced: bool,
    prev_idx: u32,
    next_idx: u32,
) {
    let pc = percpu::cpu(cpu);
    let (prev, next) = (thread(prev_idx), thread(next_idx));
    let idle = idle_idx(cpu);
    let now = rq.clock();
    if mode == SchedMode::Preempt {
        prev.nivcsw.fetch_add(1, Ordering::Relaxed);
    } else {
        prev.nvcsw.fetch_add(1, Ordering::Relaxed);
    }
    pc.account_switch(now, prev_idx == idle, next_idx == idle);
    if prev_stays {
        prev.runnable_since.store(now.max(1), Ordering::Relaxed);
    }
    next.runnable_since.store(0, Ordering::Relaxed);
    next.on_cpu.store(true, Ordering::Relaxed);
    next.cpu.store(cpu.as_u32(), Ordering::Release);
    prev.migrating.store(prev_misplaced, Ordering::Relaxed);
    pc.curr.store(next_idx, Ordering::Relaxed);
    pc.prev.store(prev_idx, Ordering::Relaxed);
    crate::trace::sched_switch(rq, prev_idx, next_idx, mode == SchedMode::Preempt);
}

/// Completes a switch on the side of the thread switched to: the previous
/// thread is off the CPU (a dead one may now be reaped, a blocked one woken
/// anywhere), and the runqueue lock taken by `__schedule` is released. A
/// previous thread that may no longer run here is then queued on an allowed
/// CPU. Interrupts stay disabled.
pub(crate) fn finish_task_switch() {
    let cpu = arch::cpu_id();
    let pc = percpu::cpu(cpu);
    let prev_idx = pc.prev.load(Ordering::Relaxed);
    let prev = thread(prev_idx);
    // Its registers are saved: another CPU may switch to it from here on.
    let rq_lock = context_switch::finish_switch();
    let migrate = prev.migrating.swap(false, Ordering::Relaxed);
    prev.on_cpu.store(false, Ordering::Release);
    let s = sched();
    // The runqueue lock `__schedule` on this CPU took and published (the
    // lock validator saw it taken on this CPU).
    drop(rq_lock);
    s.rq_lock(cpu).note_released();
    // A thread that went to sleep may now run elsewhere; one that stayed
    // runnable on a CPU it may no longer use is queued on an allowed one.
    let sw = Switch {
        prev: (prev_idx != idle_idx(cpu)).then_some(TaskId(prev_idx)),
        next: None,
        prev_blocked: None,
        prev_exited: None,
        prev_misplaced: migrate,
    };
    s.finish_switch(cpu, &sw);
}
