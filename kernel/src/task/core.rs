//! The glue between kernel threads and the `sched` crate: `schedule()`,
//! `try_to_wake_up()`, the tick, and preemption (on return from interrupt, at
//! `preempt_enable()`, at `cond_resched()`), following Linux's `core.c`.
//!
//! Locking: one runqueue lock per CPU (an interrupt-disabling spinlock). It is
//! held across the context switch and released by the thread switched to
//! (`finish_task_switch`), so no other CPU or interrupt sees a half-switched
//! runqueue. Lock order: wait queue -> timer list -> runqueue.
//!
//! After every scheduler call the runqueue's need-resched state is mirrored
//! into the per-CPU atomic that interrupt exit and `preempt_enable` read
//! without the lock. Nothing here allocates.
//!
//! Preemption models (`kernel.sched_preempt`, boot `preempt=`):
//! - none: switches only when a thread blocks, yields, exits or calls
//!   `schedule()` / `cond_resched()`;
//! - voluntary: the same here (Linux adds `might_resched` points, which this
//!   kernel does not have);
//! - full: also on return from interrupt and at the end of a preempt-disabled
//!   or spinlocked section, when an immediate reschedule is pending;
//! - lazy: as full, but fair-class requests are lazy and only become immediate
//!   at the next tick (the `sched` crate does that); `cond_resched()` is a no-op.

use ::core::sync::atomic::Ordering;
use alloc::sync::Arc;

use sched::{
    DequeueFlags, PreemptMode, Resched, Rq, SchedConfig, SchedTask, TaskId, TaskParams,
    TtwuRunnable, WakeFlags,
};

use super::{idle_idx, thread, Thread, MAX_THREADS, TASK_DEAD, TASK_RUNNING, TASK_SLEEPING};
use crate::arch;
use crate::percpu::{self, PerCpu};

static CONFIG: spin::Once<Arc<SchedConfig>> = spin::Once::new();

/// The scheduler configuration every runqueue shares.
pub fn sched_config() -> &'static Arc<SchedConfig> {
    CONFIG.get().expect("scheduler not initialised")
}

/// The current preemption model.
pub fn preempt_mode() -> PreemptMode {
    CONFIG
        .get()
        .map_or(PreemptMode::None, |c| c.tunables.preempt_mode())
}

/// Creates the shared configuration and this CPU's runqueue. Call once on the
/// boot CPU after [`super::init`].
pub fn init_sched(cfg: Arc<SchedConfig>) {
    let cfg = CONFIG.call_once(|| cfg).clone();
    let cpu = arch::cpu_id();
    let pc = percpu::this_cpu();
    let mut rq = Rq::new(cpu as u32, cfg, MAX_THREADS);
    rq.update_rq_clock(arch::now_ns());
    *pc.rq.lock() = Some(rq);
    pc.online.store(true, Ordering::Release);
}

/// Runs `f` on this CPU's runqueue, under its lock.
pub fn with_rq<R>(f: impl FnOnce(&mut Rq) -> R) -> R {
    let pc = percpu::this_cpu();
    let mut g = pc.rq.lock();
    let rq = g.as_mut().expect("runqueue not initialised");
    rq.update_rq_clock(arch::now_ns());
    let r = f(rq);
    pc.mirror_need_resched(rq);
    r
}

/// Runs `f` on CPU `cpu`'s runqueue, under its lock (`cpu_rq(cpu)`), for
/// inspection (`ps`, `sched_debug`) and remote operations.
pub fn with_cpu_rq<R>(cpu: usize, f: impl FnOnce(&mut Rq) -> R) -> R {
    let pc = percpu::cpu(cpu);
    let mut g = pc.rq.lock();
    let rq = g.as_mut().expect("runqueue not initialised");
    rq.update_rq_clock(arch::now_ns());
    let r = f(rq);
    pc.mirror_need_resched(rq);
    r
}

/// CPUs running the scheduler.
pub fn nr_cpus() -> usize {
    (0..percpu::MAX_CPUS).filter(|&c| percpu::cpu(c).online.load(Ordering::Acquire)).count()
}

/// Sets the current thread's state (`set_current_state`): `TASK_SLEEPING`
/// before checking a wait condition, `TASK_RUNNING` after.
#[inline]
pub fn set_current_state(state: u8) {
    super::current().state.store(state, Ordering::SeqCst);
}

/// How `__schedule` was entered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SchedMode {
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

/// Gives up the CPU. Blocks if the current thread set itself `TASK_SLEEPING`
/// and no wakeup came in the meantime; otherwise just lets the scheduler pick.
pub fn schedule() {
    if percpu::this_cpu().preempt_count.load(Ordering::Relaxed) != 0 {
        crate::kprintln!(
            "BUG: scheduling while atomic: thread '{}' preempt_count {}",
            super::current().name(),
            percpu::this_cpu().preempt_count.load(Ordering::Relaxed)
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
pub(super) fn schedule_dead() -> ! {
    __schedule(SchedMode::Dead);
    unreachable!("a dead thread was switched back in");
}

fn __schedule(mode: SchedMode) {
    let irq = arch::irq_save();
    let pc = percpu::this_cpu();
    let cpu = arch::cpu_id();
    let mut guard = pc.rq.lock();
    let Some(rq) = guard.as_mut() else {
        drop(guard);
        arch::irq_restore(irq);
        return;
    };
    rq.update_rq_clock(arch::now_ns());
    let prev_idx = pc.curr.load(Ordering::Relaxed);
    let prev = thread(prev_idx);
    prev.check_stack();
    let idle = idle_idx(cpu);
    let sw = match mode {
        SchedMode::Dead => {
            if let Some(id) = rq.curr() {
                // A dead task must leave for good: DEQUEUE_SPECIAL is never delayed.
                if let Ok(st) = rq.dequeue_task(id, DequeueFlags::SLEEP | DequeueFlags::SPECIAL) {
                    // Kept for `join`'s exit statistics.
                    // SAFETY: the runqueue lock is held; `sched` is protected by it.
                    unsafe { *prev.sched.get() = st };
                }
                prev.on_rq.store(false, Ordering::Relaxed);
            }
            pc.preempt_count.fetch_sub(1, Ordering::Relaxed);
            let next = rq.pick_next_task();
            sched::Switch {
                prev: None,
                next,
                prev_blocked: None,
            }
        }
        SchedMode::Voluntary
            if prev_idx != idle && prev.state.load(Ordering::SeqCst) == TASK_SLEEPING =>
        {
            let sw = rq.schedule(true);
            if let Some(st) = sw.prev_blocked {
                // SAFETY: the runqueue lock is held; `sched` is protected by it.
                unsafe { *prev.sched.get() = Some(st) };
                prev.on_rq.store(false, Ordering::Relaxed);
            }
            sw
        }
        SchedMode::Yield => {
            rq.yield_task();
            rq.schedule(false)
        }
        _ => rq.schedule(false),
    };
    pc.mirror_need_resched(rq);
    let next_idx = sw.next.map_or(idle, |t| t.0);
    if next_idx == prev_idx {
        drop(guard);
        arch::irq_restore(irq);
        return;
    }
    if mode == SchedMode::Preempt {
        prev.nivcsw.fetch_add(1, Ordering::Relaxed);
    } else {
        prev.nvcsw.fetch_add(1, Ordering::Relaxed);
    }
    let next = thread(next_idx);
    next.on_cpu.store(true, Ordering::Relaxed);
    pc.curr.store(next_idx, Ordering::Relaxed);
    pc.prev.store(prev_idx, Ordering::Relaxed);
    // The lock stays held across the switch; the next thread releases it in
    // `finish_task_switch`.
    ::core::mem::forget(guard);
    // SAFETY: interrupts are off and the runqueue lock is held; `prev.ctx` is
    // the running thread's save area, and `next.ctx` holds a context saved by
    // an earlier switch or prepared by spawn, on a live stack no CPU uses
    // (next was not running: it was picked from this runqueue).
    unsafe { arch::switch_context(prev.ctx.get(), next.ctx.get()) };
    finish_task_switch();
    arch::irq_restore(irq);
}

/// Completes a switch on the side of the thread switched to: the previous
/// thread is off the CPU (a dead one may now be reaped), and the runqueue lock
/// taken by `__schedule` is released. Interrupts stay disabled.
pub(super) fn finish_task_switch() {
    let pc = percpu::this_cpu();
    let prev = thread(pc.prev.load(Ordering::Relaxed));
    prev.on_cpu.store(false, Ordering::Release);
    // SAFETY: `__schedule` forgot its guard of this lock before switching here.
    unsafe { pc.rq.force_unlock() };
}

/// Queues a newly spawned thread (`wake_up_new_task`).
pub(super) fn wake_up_new(idx: u32, st: SchedTask) {
    let t = thread(idx);
    let pc = percpu::cpu(t.cpu.load(Ordering::Relaxed) as usize);
    let mut g = pc.rq.lock();
    let rq = g.as_mut().expect("runqueue not initialised");
    rq.update_rq_clock(arch::now_ns());
    t.state.store(TASK_RUNNING, Ordering::SeqCst);
    t.on_rq.store(true, Ordering::Relaxed);
    rq.wake_up_new_task(TaskId(idx), st);
    pc.mirror_need_resched(rq);
}

/// Wakes thread `idx` if it is sleeping (`try_to_wake_up`). Returns whether it
/// was. Callable from interrupt context; never allocates.
///
/// A thread the runqueue still holds (it set itself sleeping but has not
/// switched out yet, or its dequeue was delayed) goes through `ttwu_runnable`
/// and is simply marked running; a fully dequeued one is enqueued with its
/// saved state. Either way the scheduler decides wakeup preemption.
pub fn try_to_wake_up(idx: u32, wf: WakeFlags) -> bool {
    let t = thread(idx);
    let pc = percpu::cpu(t.cpu.load(Ordering::Relaxed) as usize);
    let mut g = pc.rq.lock();
    if t.state
        .compare_exchange(
            TASK_SLEEPING,
            TASK_RUNNING,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_err()
    {
        return false;
    }
    let Some(rq) = g.as_mut() else { return true };
    rq.update_rq_clock(arch::now_ns());
    let id = TaskId(idx);
    if t.on_rq.load(Ordering::Relaxed) {
        match rq.ttwu_runnable(id, wf) {
            TtwuRunnable::Woken(_) => {}
            TtwuRunnable::Blocked(st) => {
                rq.try_to_wake_up(id, st, wf);
            }
            TtwuRunnable::NotHere => {
                crate::kprintln!(
                    "BUG: thread {} marked on_rq but not held by cpu {} runqueue",
                    idx,
                    rq.cpu()
                );
            }
        }
    } else {
        // SAFETY: the runqueue lock is held; `sched` is protected by it.
        let st = unsafe { (*t.sched.get()).take() };
        match st {
            Some(st) => {
                rq.try_to_wake_up(id, st, wf);
                t.on_rq.store(true, Ordering::Relaxed);
            }
            None => crate::kprintln!("BUG: waking thread {} without scheduler state", idx),
        }
    }
    pc.mirror_need_resched(rq);
    true
}

/// The tick (`sched_tick`), from the timer interrupt: account the running
/// thread, then wake the sleepers whose time came (`WakeFlags::IRQ`).
pub fn timer_tick() {
    let pc = percpu::this_cpu();
    pc.ticks.fetch_add(1, Ordering::Relaxed);
    if !pc.online.load(Ordering::Acquire) {
        return;
    }
    let now = arch::now_ns();
    {
        let mut g = pc.rq.lock();
        if let Some(rq) = g.as_mut() {
            rq.update_rq_clock(now);
            rq.task_tick();
            pc.mirror_need_resched(rq);
        }
    }
    let mut timers = pc.timers.lock();
    while let Some(idx) = timers.pop_expired(now) {
        try_to_wake_up(idx, WakeFlags::IRQ);
    }
}

fn preemptible_model() -> bool {
    matches!(preempt_mode(), PreemptMode::Full | PreemptMode::Lazy)
}

fn should_preempt(pc: &PerCpu) -> bool {
    pc.online.load(Ordering::Relaxed)
        && pc.need_resched() == Resched::Now
        && pc.preempt_count.load(Ordering::Relaxed) == 0
        && preemptible_model()
}

/// Interrupt exit (interrupts disabled, on the interrupted thread's stack):
/// preempt the interrupted thread if an immediate reschedule is pending, the
/// preempt count is zero and the model is full or lazy.
pub fn irq_exit() {
    let pc = percpu::this_cpu();
    if should_preempt(pc) {
        __schedule(SchedMode::Preempt);
    }
}

/// A preemption point in thread context with interrupts enabled (the end of a
/// spinlocked section, `preempt_enable`).
pub fn preempt_check_resched() {
    let pc = percpu::this_cpu();
    if should_preempt(pc) && arch::irqs_enabled() {
        __schedule(SchedMode::Preempt);
    }
}

/// Disables preemption on this CPU (nests).
#[inline]
pub fn preempt_disable() {
    percpu::this_cpu()
        .preempt_count
        .fetch_add(1, Ordering::Relaxed);
    ::core::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// Re-enables preemption; dropping to zero with an immediate reschedule
/// pending reschedules at once (full / lazy models).
#[inline]
pub fn preempt_enable() {
    ::core::sync::atomic::compiler_fence(Ordering::SeqCst);
    let pc = percpu::this_cpu();
    let old = pc.preempt_count.fetch_sub(1, Ordering::Relaxed);
    debug_assert!(old > 0, "preempt_enable without preempt_disable");
    if old == 1 {
        preempt_check_resched();
    }
}

/// This CPU's preempt count.
pub fn preempt_count() -> u32 {
    percpu::this_cpu().preempt_count.load(Ordering::Relaxed)
}

/// An explicit preemption point for long-running kernel loops: reschedules if
/// a reschedule is pending, under the none and voluntary models (full and lazy
/// preempt anyway; lazy leaves a lazy request to the tick, as Linux does).
pub fn cond_resched() {
    let pc = percpu::this_cpu();
    if pc.preempt_count.load(Ordering::Relaxed) != 0 {
        return;
    }
    match preempt_mode() {
        PreemptMode::None | PreemptMode::Voluntary if pc.need_resched() != Resched::None => {
            __schedule(SchedMode::Preempt)
        }
        _ => {}
    }
}

/// A copy of thread `t`'s scheduler state (from the runqueue if it holds the
/// thread). The running thread's runtime is as of its last accounting.
pub fn sched_snapshot(t: &Thread) -> Option<SchedTask> {
    let pc = percpu::cpu(t.cpu.load(Ordering::Relaxed) as usize);
    let g = pc.rq.lock();
    let rq = g.as_ref()?;
    if t.on_rq.load(Ordering::Relaxed) {
        rq.task(TaskId(t.idx())).copied()
    } else {
        // SAFETY: the runqueue lock is held; `sched` is protected by it.
        unsafe { *t.sched.get() }
    }
}

/// Thread `t`'s total runtime in ns, including the part of the current run
/// not accounted yet.
pub fn task_runtime_ns(t: &Thread) -> u64 {
    let pc = percpu::cpu(t.cpu.load(Ordering::Relaxed) as usize);
    let g = pc.rq.lock();
    let Some(rq) = g.as_ref() else { return 0 };
    let id = TaskId(t.idx());
    if t.on_rq.load(Ordering::Relaxed) {
        let Some(st) = rq.task(id) else { return 0 };
        let mut ns = st.se.sum_exec_runtime;
        if rq.curr() == Some(id) {
            ns += arch::now_ns().saturating_sub(st.se.exec_start);
        }
        ns
    } else {
        // SAFETY: the runqueue lock is held; `sched` is protected by it.
        unsafe { (*t.sched.get()).map_or(0, |s| s.se.sum_exec_runtime) }
    }
}

/// Changes thread `t`'s policy / nice / slice (`sched_setattr`), whether it is
/// running, queued or asleep.
pub fn sched_setattr(t: &Thread, params: TaskParams) -> Result<(), sched::RqError> {
    params.validate().map_err(sched::RqError::Params)?;
    let pc = percpu::cpu(t.cpu.load(Ordering::Relaxed) as usize);
    let mut g = pc.rq.lock();
    let rq = g.as_mut().ok_or(sched::RqError::NotQueued)?;
    rq.update_rq_clock(arch::now_ns());
    let r = if t.on_rq.load(Ordering::Relaxed) {
        rq.sched_setattr(TaskId(t.idx()), params).map(|_| ())
    } else {
        // SAFETY: the runqueue lock is held; `sched` is protected by it.
        match unsafe { (*t.sched.get()).as_mut() } {
            Some(st) => {
                sched::rq::set_params_offrq(st, params);
                Ok(())
            }
            None => Err(sched::RqError::NotQueued),
        }
    };
    pc.mirror_need_resched(rq);
    r
}

/// Whether the thread is dead (for assertions).
#[allow(dead_code)]
pub(super) fn is_dead(t: &Thread) -> bool {
    t.state.load(Ordering::Relaxed) == TASK_DEAD
}

/// The idle loop of this CPU: halts until a reschedule is pending, then lets
/// the scheduler pick. Never spins.
pub fn cpu_idle() -> ! {
    let pc = percpu::this_cpu();
    loop {
        arch::irq_disable();
        if pc.need_resched() != Resched::None {
            arch::irq_enable();
            __schedule(SchedMode::Preempt);
        } else {
            // Atomically enables interrupts and waits: a wakeup interrupt
            // arriving after the check above still ends the halt.
            arch::halt();
        }
    }
}
