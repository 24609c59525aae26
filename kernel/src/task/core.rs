//! The glue between kernel threads and the `sched` crate on many CPUs:
//! `schedule()`, `try_to_wake_up()`, the tick, load balancing, affinity and
//! preemption (on return from interrupt, at `preempt_enable()`, at
//! `cond_resched()`), following Linux's `core.c`.
//!
//! # Runqueues
//! One [`sched::smp::Scheduler`] ([`sched()`]) holds a runqueue per CPU the
//! firmware describes, each behind its own lock, with a capacity of the thread
//! table size. Each CPU works on its own runqueue; other CPUs touch it to wake
//! (only with NO_TTWU_QUEUE), to inspect, to change a thread's parameters or
//! affinity, and to balance (the balancer pulls from the busiest CPU under
//! `double_rq_lock`).
//!
//! # Locks and their order
//! `wait queue -> timer list -> thread pi_lock -> runqueue (two runqueues in
//! CPU order) -> wake list`. A thread's `pi_lock` (Linux's `p->pi_lock`)
//! serialises its wakeups and every operation that must find where its
//! scheduler state is ([`task_rq_lock`]). The runqueue lock is taken with
//! interrupts masked (the Scheduler's platform masks them).
//!
//! # Where a thread's `SchedTask` is
//! - `on_rq` true: in the arena of the runqueue of `thread.cpu` (queued,
//!   running, or asleep with its dequeue delayed or completed there), or for
//!   a moment in that CPU's wake list (drained by whoever locks that
//!   runqueue), or in transit between two runqueues (the balancer updates
//!   `thread.cpu` after the move; a misplaced running thread is carried over
//!   by `finish_task_switch`). [`task_rq_lock`] copes with all three: it
//!   drains the wake list, and when the runqueue of `thread.cpu` does not hold
//!   the thread it searches the others and retries.
//! - `on_rq` false: in the thread slot (`sched`), owned by whoever holds the
//!   thread's `pi_lock` (and `on_cpu` is false, see below).
//!
//! # The switch and `on_cpu`
//! The runqueue lock is held across the context switch and released by the
//! thread switched to (`finish_task_switch`, after it cleared the previous
//! thread's `on_cpu` with Release). So no CPU can lock that runqueue and see a
//! half-switched-out thread: the balancer, `ttwu_runnable` and affinity
//! changes only ever see a previous thread whose registers are saved. A
//! thread that blocked left its runqueue (`on_rq` false) before the switch; a
//! waker that finds it so spins until its `on_cpu` is clear before it takes
//! the `SchedTask` and enqueues the thread anywhere (Linux's
//! `smp_cond_load_acquire(&p->on_cpu, !VAL)`). A thread is therefore never
//! running on two CPUs at once and never migrated or woken remotely while its
//! registers are still live.
//!
//! # Wakeups (`try_to_wake_up`)
//! Under the wakee's `pi_lock`: if it is not `TASK_SLEEPING`, nothing to do.
//! If a runqueue still holds it, lock that runqueue and mark it running there
//! (`ttwu_runnable`; a completed delayed dequeue hands the state back and the
//! wakeup continues as for a sleeper). Otherwise wait for `on_cpu` to clear,
//! take its `SchedTask`, pick a CPU (`select_task_rq`, this CPU being the
//! waker's) and queue it: locally at once, remotely on that CPU's wake list
//! with an IPI (TTWU_QUEUE) or by locking the remote runqueue
//! (NO_TTWU_QUEUE). Every `schedule()`, tick and reschedule IPI drains the
//! local wake list (`sched_ttwu_pending`) under the local runqueue lock. A
//! need-resched raised on another CPU's runqueue is mirrored into that CPU's
//! per-CPU flag and sends an IPI only when it is immediate (`kick_if_needed`);
//! a lazy one waits for that CPU's tick.
//!
//! # Idle polling
//! An idle CPU polls for [`IDLE_POLL_NS`] before it halts, with its per-CPU
//! `polling` flag set. A reschedule "IPI" to it ([`KernelPlatform`]) then
//! only raises its `poll_kick` (Linux's `TIF_POLLING_NRFLAG`): waking a
//! halted CPU is what makes cross-CPU ping-pongs slow under emulation. The
//! sender raises the kick before it reads `polling`; the idle thread never
//! clears a kick when it starts polling (see [`poll`]), clears `polling`
//! before it reads the kick one last time, and `__schedule` clears
//! it before it drains the wake list when the idle thread leaves (also when
//! an interrupt preempted it while polling), so a kick is never left
//! unseen: either the idle thread sees it, or the sender sees `polling`
//! clear and sends the IPI.
//!
//! # Balancing and affinity
//! Each CPU's tick runs `load_balance(cpu, false)` every [`BALANCE_TICKS`]
//! ticks, staggered by CPU number, after it released its runqueue lock; the
//! idle thread runs `load_balance(cpu, true)` once each time it is switched in
//! (newidle).
//!
//! # Tickless idle
//! With [`NOHZ_IDLE`] (boot argument `nohz=on`, the default) an idle CPU
//! other than CPU 0 stops its tick when it halts; timer events (sleepers)
//! and IPIs still wake it, and `__schedule` restarts the tick when the idle
//! thread leaves. A tickless CPU no longer balances on its own, so a busy
//! CPU's balancing tick with two or more runnable tasks kicks one of them to
//! run a newidle balance (`nohz_balance_kick`, after Linux's
//! `nohz_balancer_kick`). [`set_affinity`] uses `Scheduler::set_cpus_allowed`; a thread
//! still running where it may no longer run is asked to reschedule, and
//! `schedule()` takes it off the runqueue before switching away and
//! `finish_task_switch` queues it on an allowed CPU once it is off this one
//! (the `move_misplaced` case of a running task). New threads go through
//! `Scheduler::wake_up_new_task` (fork balancing within their mask).
//!
//! After every scheduler call the runqueue's need-resched state is mirrored
//! into the per-CPU atomic that interrupt exit and `preempt_enable` read
//! without the lock. Nothing here allocates after [`init_sched`].
//!
//! # Preemption models (`kernel.sched_preempt`, boot `preempt=`)
//! - none: switches only when a thread blocks, yields, exits or calls
//!   `schedule()`; `cond_resched()` does nothing (stricter than Linux, whose
//!   `none` still honours it: here it is what tells `voluntary` apart);
//! - voluntary: plus at explicit `cond_resched()` points;
//! - full: also on return from interrupt and at the end of a preempt-disabled
//!   or spinlocked section, when an immediate reschedule is pending;
//! - lazy: as full, but fair-class requests are lazy and only become immediate
//!   at the next tick (the `sched` crate does that); `cond_resched()` is a no-op.

use ::core::ops::{Deref, DerefMut};
use ::core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use alloc::sync::Arc;

use sched::smp::{Platform, RqGuard, Scheduler, WakeOutcome};
use sched::{
    CpuMask, DequeueFlags, PreemptMode, Resched, Rq, SchedConfig, SchedTask, TaskId, TaskParams,
    TaskState, TtwuRunnable, WakeFlags,
};

use super::{idle_idx, thread, Thread, Tid, MAX_THREADS, TASK_DEAD, TASK_RUNNING, TASK_SLEEPING};
use crate::arch;
use crate::percpu::{self, PerCpu, MAX_CPUS};

/// Ticks between two periodic balancing passes of one CPU (staggered by CPU
/// number, so the CPUs do not all balance on the same tick). At the default
/// 250 Hz: every 16 ms.
pub const BALANCE_TICKS: u64 = 4;

/// The [`Platform`] of the kernel: interrupt masking and reschedule IPIs
/// through the arch layer.
pub struct KernelPlatform;

impl Platform for KernelPlatform {
    fn irq_save(&self) -> bool {
        let was = arch::irqs_enabled();
        arch::irq_disable();
        was
    }

    fn irq_restore(&self, was_enabled: bool) {
        if was_enabled {
            arch::irq_enable();
        }
    }

    fn now_ns(&self) -> u64 {
        arch::now_ns()
    }

    fn send_resched_ipi(&self, cpu: usize) {
        let pc = percpu::cpu(cpu);
        if !poll::kick(&pc.poll_kick, &pc.polling) {
            pc.ipis_elided.fetch_add(1, Ordering::Relaxed);
            return;
        }
        pc.ipis_sent.fetch_add(1, Ordering::Relaxed);
        arch::send_ipi(cpu, arch::IpiKind::Reschedule);
    }
}

static SCHED: spin::Once<Scheduler<KernelPlatform>> = spin::Once::new();
/// CPUs running the scheduler (bit n = CPU n).
static ONLINE_MASK: AtomicU64 = AtomicU64::new(0);

/// The machine's scheduler (per-CPU runqueues).
pub fn sched() -> &'static Scheduler<KernelPlatform> {
    SCHED.get().expect("scheduler not initialised")
}

/// The scheduler configuration every runqueue shares.
pub fn sched_config() -> &'static Arc<SchedConfig> {
    &sched().cfg
}

/// The current preemption model.
pub fn preempt_mode() -> PreemptMode {
    SCHED
        .get()
        .map_or(PreemptMode::None, |s| s.cfg.tunables.preempt_mode())
}

/// Creates the scheduler with one runqueue per CPU the firmware describes and
/// puts this (the boot) CPU online. Call once on the boot CPU after
/// [`super::init`]; the other CPUs call [`cpu_online`] when they start.
pub fn init_sched(cfg: Arc<SchedConfig>) {
    let ncpus = arch::cpu_count().clamp(1, MAX_CPUS);
    SCHED.call_once(|| {
        let s = Scheduler::new(KernelPlatform, cfg, ncpus, MAX_THREADS);
        // Every runqueue and wake list sized now for as many threads as can
        // exist, so that nothing allocates later under a runqueue lock with
        // interrupts masked: no more than the thread table holds, nor than
        // the heap has room for stacks (a spawn without room for its stack
        // fails). A heap too small even for that halves it, with a warning.
        let (used, free) = crate::heap::stats();
        let mut want = MAX_THREADS.min((used + free) / super::STACK_SIZE + MAX_CPUS);
        while s.try_reserve(want).is_err() && want > MAX_CPUS {
            want /= 2;
            log::warn!("sched: heap too small for the runqueues, reserving {want} threads per CPU");
        }
        s
    });
    cpu_online(arch::cpu_id());
}

/// Marks `cpu` (this CPU) as running the scheduler.
pub fn cpu_online(cpu: usize) {
    debug_assert_eq!(cpu, arch::cpu_id());
    {
        let mut rq = lock_rq(cpu);
        let now = arch::now_ns();
        rq.update_rq_clock(now);
        percpu::cpu(cpu).account_switch(now, false, true);
    }
    ONLINE_MASK.fetch_or(1 << cpu, Ordering::AcqRel);
    percpu::cpu(cpu).online.store(true, Ordering::Release);
}

/// CPUs running the scheduler, as a mask.
pub fn online_mask() -> u64 {
    ONLINE_MASK.load(Ordering::Acquire)
}

/// Runqueues of the scheduler (CPUs the firmware describes).
fn nr_rqs() -> usize {
    SCHED.get().map_or(0, |s| s.nr_cpus())
}

/// A locked runqueue of the kernel: the Scheduler's guard (interrupts masked)
/// whose drop first mirrors the need-resched state into the CPU's flag.
pub struct RqLock {
    g: Option<RqGuard<'static, KernelPlatform>>,
    cpu: usize,
}

impl Deref for RqLock {
    type Target = Rq;
    fn deref(&self) -> &Rq {
        self.g.as_ref().expect("held until drop")
    }
}

impl DerefMut for RqLock {
    fn deref_mut(&mut self) -> &mut Rq {
        self.g.as_mut().expect("held until drop")
    }
}

impl Drop for RqLock {
    fn drop(&mut self) {
        if let Some(g) = self.g.take() {
            let pc = percpu::cpu(self.cpu);
            if self.cpu == arch::cpu_id() {
                pc.mirror_need_resched(&g);
            } else {
                pc.raise_need_resched(g.need_resched());
            }
            drop(g);
        }
    }
}

/// Locks CPU `cpu`'s runqueue and brings its clock up to date.
fn lock_rq(cpu: usize) -> RqLock {
    let mut g = sched().cpu_rq(cpu);
    g.update_rq_clock(arch::now_ns());
    RqLock { g: Some(g), cpu }
}

/// Runs `f` on this CPU's runqueue, under its lock.
pub fn with_rq<R>(f: impl FnOnce(&mut Rq) -> R) -> R {
    // Interrupts off first: the CPU read is then the one whose lock we take.
    let irq = arch::irq_save();
    let r = {
        let mut rq = lock_rq(arch::cpu_id());
        f(&mut rq)
    };
    arch::irq_restore(irq);
    r
}

/// Runs `f` on CPU `cpu`'s runqueue, under its lock (`cpu_rq(cpu)`), for
/// inspection (`ps`, `sched_debug`) and remote operations.
pub fn with_cpu_rq<R>(cpu: usize, f: impl FnOnce(&mut Rq) -> R) -> R {
    let mut rq = lock_rq(cpu);
    f(&mut rq)
}

/// CPUs running the scheduler.
pub fn nr_cpus() -> usize {
    online_mask().count_ones() as usize
}

/// Sets the current thread's state (`set_current_state`): `TASK_SLEEPING`
/// before checking a wait condition, `TASK_RUNNING` after.
#[inline]
pub fn set_current_state(state: u8) {
    super::current().state.store(state, Ordering::SeqCst);
}

/// Locks the runqueue that holds thread `t`'s scheduler state (Linux's
/// `task_rq_lock` minus the `pi_lock`, which the caller holds). Returns its
/// CPU and the lock. If `t.on_rq` is false under that lock, the state is in
/// `t.sched` (owned by the caller through `pi_lock`). Otherwise the runqueue
/// holds the thread: the wake list of that CPU is drained first (a queued
/// remote wakeup lands), and a thread moved by the balancer or in transit is
/// searched for on every CPU until found.
fn task_rq_lock(t: &Thread) -> (usize, RqLock) {
    let s = sched();
    let id = TaskId(t.idx());
    let mut round = 0u32;
    loop {
        let cpu = (t.cpu.load(Ordering::Acquire) as usize).min(s.nr_cpus() - 1);
        let mut rq = lock_rq(cpu);
        if !t.on_rq.load(Ordering::Acquire) || rq.task(id).is_some() {
            return (cpu, rq);
        }
        if s.sched_ttwu_pending(&mut rq) > 0 {
            // Drained on that CPU's behalf: it must still act on the result.
            s.kick_if_needed(cpu, arch::cpu_id(), rq.need_resched());
            if rq.task(id).is_some() {
                return (cpu, rq);
            }
        }
        drop(rq);
        // Moved by the balancer (thread.cpu not updated yet) or in transit.
        for c in 0..s.nr_cpus() {
            let rq = lock_rq(c);
            if rq.task(id).is_some() {
                t.cpu.store(c as u32, Ordering::Release);
                return (c, rq);
            }
        }
        round += 1;
        if round.is_multiple_of(100_000) {
            crate::kprintln!(
                "BUG?: task_rq_lock: thread {} on_rq but held by no runqueue ({} rounds)",
                t.idx(),
                round
            );
        }
        ::core::hint::spin_loop();
    }
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
    let pcount = preempt_count();
    if pcount != 0 {
        crate::kprintln!(
            "BUG: scheduling while atomic: thread '{}' preempt_count {}",
            super::current().name(),
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
pub(super) fn schedule_dead() -> ! {
    __schedule(SchedMode::Dead);
    unreachable!("a dead thread was switched back in");
}

fn __schedule(mode: SchedMode) {
    let irq = arch::irq_save();
    let cpu = arch::cpu_id();
    let pc = percpu::cpu(cpu);
    let Some(s) = SCHED.get() else {
        arch::irq_restore(irq);
        return;
    };
    if !pc.online.load(Ordering::Acquire) {
        arch::irq_restore(irq);
        return;
    }
    let prev_idx = pc.curr.load(Ordering::Relaxed);
    let idle = idle_idx(cpu);
    if prev_idx == idle {
        // The idle thread leaves (or was preempted while polling): from now
        // on wakers must interrupt this CPU. Before the wake list is drained,
        // so a waker that still saw the flag queued what the drain takes.
        pc.polling.store(false, Ordering::SeqCst);
        // Tickless idle ends here, whichever way the idle thread was left
        // (its own loop, or preemption at an interrupt's exit).
        if pc.nohz_idle.swap(false, Ordering::Relaxed) {
            arch::timer_restart_tick();
        }
    }
    let mut guard = s.rq_lock(cpu).lock();
    let rq: &mut Rq = &mut guard;
    let now = arch::now_ns();
    rq.update_rq_clock(now);
    s.sched_ttwu_pending(rq);
    let prev = thread(prev_idx);
    prev.check_stack();
    let prev_id = TaskId(prev_idx);
    // A running thread whose affinity no longer includes this CPU.
    let misplaced = prev_idx != idle && rq.task(prev_id).is_some_and(|t| !t.cpus_allowed.test(cpu));
    let mut migrate = false;
    // Whether `prev` stays runnable (the stall watchdog's clock starts).
    let mut prev_stays = prev_idx != idle;
    match mode {
        SchedMode::Dead => {
            prev_stays = false;
            if rq.curr().is_some() {
                // A dead task must leave for good: DEQUEUE_SPECIAL is never delayed.
                if let Ok(st) =
                    rq.dequeue_task(prev_id, DequeueFlags::SLEEP | DequeueFlags::SPECIAL)
                {
                    // Kept for `join`'s exit statistics.
                    // SAFETY: the runqueue holding the thread is locked and the
                    // thread is running here: nobody else touches `sched`.
                    unsafe { *prev.sched.get() = st };
                }
                prev.on_rq.store(false, Ordering::Release);
            }
            pc.preempt_count.fetch_sub(1, Ordering::Relaxed);
        }
        SchedMode::Voluntary
            if prev_idx != idle && prev.state.load(Ordering::SeqCst) == TASK_SLEEPING =>
        {
            prev_stays = false;
            // A misplaced sleeper leaves for good (no delayed dequeue), so it
            // cannot be woken in place on a CPU it may not use.
            let flags = if misplaced {
                DequeueFlags::SLEEP | DequeueFlags::SPECIAL
            } else {
                DequeueFlags::SLEEP
            };
            if let Ok(Some(st)) = rq.dequeue_task(prev_id, flags) {
                // SAFETY: as above; `on_rq` false is published after the write
                // (Release), and wakers read `sched` only after seeing it.
                unsafe { *prev.sched.get() = Some(st) };
                prev.on_rq.store(false, Ordering::Release);
            }
        }
        _ => {
            if mode == SchedMode::Yield {
                rq.yield_task();
            }
            if misplaced {
                // Take it off this runqueue now; `finish_task_switch` queues
                // it on an allowed CPU once it is off this one.
                if let Ok(Some(st)) = rq.dequeue_task(prev_id, DequeueFlags::MIGRATING) {
                    // SAFETY: as above; while `migrating` is set, `sched` is
                    // this CPU's until `finish_task_switch` hands it over.
                    unsafe { *prev.sched.get() = Some(st) };
                    migrate = true;
                }
            }
        }
    }
    let next = rq.pick_next_task();
    pc.mirror_need_resched(rq);
    let next_idx = next.map_or(idle, |t| t.0);
    if next_idx == prev_idx {
        s.publish(rq);
        drop(guard);
        arch::irq_restore(irq);
        return;
    }
    if mode == SchedMode::Preempt {
        prev.nivcsw.fetch_add(1, Ordering::Relaxed);
    } else {
        prev.nvcsw.fetch_add(1, Ordering::Relaxed);
    }
    pc.account_switch(now, prev_idx == idle, next_idx == idle);
    let next_t = thread(next_idx);
    if prev_stays {
        prev.runnable_since.store(now.max(1), Ordering::Relaxed);
    }
    next_t.runnable_since.store(0, Ordering::Relaxed);
    next_t.on_cpu.store(true, Ordering::Relaxed);
    next_t.cpu.store(cpu as u32, Ordering::Release);
    prev.migrating.store(migrate, Ordering::Relaxed);
    pc.curr.store(next_idx, Ordering::Relaxed);
    pc.prev.store(prev_idx, Ordering::Relaxed);
    crate::shell::trace::sched_switch(rq, prev_idx, next_idx, mode == SchedMode::Preempt);
    s.publish(rq);
    // The lock stays held across the switch; the next thread releases it in
    // `finish_task_switch`.
    ::core::mem::forget(guard);
    // Soundness: interrupts are off and this CPU's runqueue lock is held; `prev.ctx`
    // is the running thread's save area, and `next.ctx` holds a context saved
    // by an earlier switch (whose `finish_task_switch` ran: `next` was held
    // by this locked runqueue, so it is off every CPU) or prepared by spawn.
    // SAFETY: as argued just above.
    unsafe { arch::switch_context(prev.ctx.get(), next_t.ctx.get()) };
    finish_task_switch();
    arch::irq_restore(irq);
}

/// Completes a switch on the side of the thread switched to: the previous
/// thread is off the CPU (a dead one may now be reaped, a blocked one woken
/// anywhere), and the runqueue lock taken by `__schedule` is released. A
/// previous thread that may no longer run here is then queued on an allowed
/// CPU. Interrupts stay disabled.
pub(super) fn finish_task_switch() {
    let cpu = arch::cpu_id();
    let pc = percpu::cpu(cpu);
    let prev_idx = pc.prev.load(Ordering::Relaxed);
    let prev = thread(prev_idx);
    let migrate = prev.migrating.swap(false, Ordering::Relaxed);
    prev.on_cpu.store(false, Ordering::Release);
    let s = sched();
    // SAFETY: `__schedule` on this CPU locked this runqueue, published it and
    // forgot its guard before switching here; nothing uses that guard's borrow.
    unsafe { s.rq_lock(cpu).force_unlock() };
    if migrate {
        // Soundness: `migrating` was set by `__schedule` with the state in `sched`;
        // the thread is off the CPU and held by no runqueue, so this CPU is the
        // only one that touches it until it is attached below (`on_rq` stays
        // true: `task_rq_lock` waits for it to land).
        // SAFETY: as argued just above.
        let st = unsafe { (*prev.sched.get()).take() };
        if let Some(st) = st {
            let target = s.find_idlest_cpu(&st, cpu);
            crate::shell::trace::sched_migrate_task(prev_idx, st.prio(), cpu, target);
            let d = {
                let mut rq = lock_rq(target);
                let d = rq.attach_task(TaskId(prev_idx), st);
                prev.cpu.store(target as u32, Ordering::Release);
                d
            };
            s.kick_if_needed(target, cpu, d.resched);
        }
    }
}

/// Queues a newly spawned thread (`wake_up_new_task`, fork balancing within
/// its allowed CPUs).
pub(super) fn wake_up_new(idx: u32, st: SchedTask) {
    let s = sched();
    let t = thread(idx);
    // The Scheduler enqueues without touching the target's clock: bring every
    // online runqueue's clock up to date first (spawn is not a hot path).
    let online = online_mask();
    for c in 0..s.nr_cpus() {
        if online & (1 << c) != 0 {
            drop(lock_rq(c));
        }
    }
    let _pi = t.pi_lock.lock();
    let this_cpu = arch::cpu_id();
    t.state.store(TASK_RUNNING, Ordering::SeqCst);
    t.runnable_since
        .store(arch::now_ns().max(1), Ordering::Relaxed);
    t.on_rq.store(true, Ordering::Release);
    t.cpu.store(this_cpu as u32, Ordering::Release);
    let prio = st.prio();
    let (cpu, d) = s.wake_up_new_task(TaskId(idx), st, this_cpu);
    t.cpu.store(cpu as u32, Ordering::Release);
    crate::shell::trace::sched_wakeup_new(idx, prio, cpu);
    percpu::cpu(cpu).raise_need_resched(d.resched);
}

/// Wakes thread `idx` if it is sleeping (`try_to_wake_up`). Returns whether it
/// was. Callable from interrupt context; never allocates. See the module
/// docs for the protocol.
pub fn try_to_wake_up(idx: u32, wf: WakeFlags) -> bool {
    let t = thread(idx);
    let Some(s) = SCHED.get() else { return false };
    let _pi = t.pi_lock.lock();
    if t.state.load(Ordering::SeqCst) != TASK_SLEEPING {
        return false;
    }
    let id = TaskId(idx);
    let this_cpu = arch::cpu_id();
    let st = if t.on_rq.load(Ordering::Acquire) {
        let (cpu, mut rq) = task_rq_lock(t);
        if t.on_rq.load(Ordering::Acquire) {
            t.state.store(TASK_RUNNING, Ordering::SeqCst);
            match rq.ttwu_runnable(id, wf) {
                TtwuRunnable::Woken(d) => {
                    let curr = rq.curr() == Some(id);
                    if !curr {
                        t.runnable_since.store(rq.clock().max(1), Ordering::Relaxed);
                    }
                    let held = rq.task(id);
                    let allowed = held.is_some_and(|st| st.cpus_allowed.test(cpu));
                    let prio = held.map_or(120, |st| st.prio());
                    crate::shell::trace::sched_wakeup(idx, prio, cpu);
                    drop(rq);
                    s.kick_if_needed(cpu, this_cpu, d.resched);
                    if !allowed && !curr {
                        // Its affinity changed while it was held here.
                        if let Some(c) = s.move_misplaced(cpu, id) {
                            t.cpu.store(c as u32, Ordering::Release);
                        }
                    }
                    return true;
                }
                TtwuRunnable::Blocked(st) => {
                    // Its delayed dequeue completed: wake it like a sleeper.
                    t.on_rq.store(false, Ordering::Release);
                    st
                }
                TtwuRunnable::NotHere => {
                    crate::kprintln!(
                        "BUG: thread {} marked on_rq but not held by cpu {} runqueue",
                        idx,
                        cpu
                    );
                    return true;
                }
            }
        } else {
            drop(rq);
            match take_sleeper(t) {
                Some(st) => st,
                None => return true,
            }
        }
    } else {
        match take_sleeper(t) {
            Some(st) => st,
            None => return true,
        }
    };
    let (cpu, wf) = s.select_task_rq(&st, this_cpu, wf | WakeFlags::TTWU);
    let orig = t.cpu.swap(cpu as u32, Ordering::AcqRel) as usize;
    if orig != cpu {
        crate::shell::trace::sched_migrate_task(idx, st.prio(), orig, cpu);
    }
    crate::shell::trace::sched_wakeup(idx, st.prio(), cpu);
    t.runnable_since
        .store(arch::now_ns().max(1), Ordering::Relaxed);
    t.on_rq.store(true, Ordering::Release);
    if cpu == this_cpu {
        let mut rq = lock_rq(cpu);
        rq.try_to_wake_up(id, st, wf);
    } else {
        if !s.cfg.feat(sched::Feature::TtwuQueue) {
            // The waker enqueues remotely: bring that clock up to date first.
            drop(lock_rq(cpu));
        }
        if let WakeOutcome::Remote(c, d) = s.ttwu_queue(cpu, this_cpu, id, st, wf) {
            // Queued wakeups are decided by the target when it drains them.
            percpu::cpu(c).raise_need_resched(d.resched);
        }
    }
    true
}

/// The sleeper's `SchedTask`, once it is off its CPU: the caller holds its
/// `pi_lock` and saw `on_rq` false, and marks it running.
fn take_sleeper(t: &Thread) -> Option<SchedTask> {
    while t.on_cpu.load(Ordering::Acquire) {
        ::core::hint::spin_loop();
    }
    t.state.store(TASK_RUNNING, Ordering::SeqCst);
    // Soundness: `on_rq` is false (the blocking `schedule()` wrote `sched` before
    // publishing that, Release/Acquire) and `on_cpu` is false: the thread is
    // off every CPU and no runqueue holds it, so the `pi_lock` we hold makes
    // us the only user of `sched`.
    // SAFETY: as argued just above.
    let st = unsafe { (*t.sched.get()).take() };
    if st.is_none() {
        crate::kprintln!("BUG: waking thread {} without scheduler state", t.idx());
    }
    st
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
    let mut rq = lock_rq(cpu);
    s.sched_ttwu_pending(&mut rq);
}

/// Wakes this CPU's sleepers whose deadline is `now` or earlier
/// (`WakeFlags::IRQ`) and points its timer event at the next one. Interrupts
/// off.
fn expire_timers(pc: &PerCpu, now: u64) {
    let mut timers = pc.timers.lock();
    while let Some(idx) = timers.pop_expired(now) {
        try_to_wake_up(idx, WakeFlags::IRQ);
    }
    arch::timer_set_event(timers.earliest());
}

/// A timer event between ticks (`hooks::timer_event`): wake the sleepers whose
/// time came.
pub fn timer_event() {
    let pc = percpu::cpu(arch::cpu_id());
    pc.timer_events.fetch_add(1, Ordering::Relaxed);
    if !pc.online.load(Ordering::Acquire) {
        return;
    }
    expire_timers(pc, arch::now_ns());
}

/// The tick (`sched_tick`), from the timer interrupt: drain the wake list,
/// account the running thread, wake the sleepers whose time came
/// (`WakeFlags::IRQ`), and every [`BALANCE_TICKS`] ticks balance.
pub fn timer_tick() {
    let cpu = arch::cpu_id();
    let pc = percpu::cpu(cpu);
    let ticks = pc.ticks.fetch_add(1, Ordering::Relaxed) + 1;
    if !pc.online.load(Ordering::Acquire) {
        return;
    }
    let s = sched();
    let now = {
        let mut rq = lock_rq(cpu);
        s.sched_ttwu_pending(&mut rq);
        rq.task_tick();
        rq.clock()
    };
    expire_timers(pc, now);
    if cpu == 0 && ticks.is_multiple_of(super::stall::CHECK_TICKS) {
        super::stall::check(now);
    }
    if cpu == 0 && ticks.is_multiple_of(super::softlockup::SCAN_TICKS) {
        super::softlockup::check(now);
    }
    if s.nr_cpus() > 1 && (ticks + cpu as u64).is_multiple_of(BALANCE_TICKS) {
        pc.balance_runs.fetch_add(1, Ordering::Relaxed);
        let n = balance(cpu, false);
        pc.balance_pulled.fetch_add(n as u64, Ordering::Relaxed);
        nohz_balance_kick(cpu);
    }
}

/// Tickless idle (`nohz=on`, the default): an idle CPU other than CPU 0
/// stops its tick when it halts. CPU 0 keeps ticking for the test watchdog
/// and the heartbeat.
pub static NOHZ_IDLE: AtomicBool = AtomicBool::new(true);

/// A busy CPU's balancing tick (Linux's `nohz_balancer_kick`): with more than
/// one runnable task here, ask one tickless idle CPU to run a newidle balance
/// (it no longer balances on its own ticks).
fn nohz_balance_kick(cpu: usize) {
    if !NOHZ_IDLE.load(Ordering::Relaxed) {
        return;
    }
    // A tickless CPU first (atomic loads), this runqueue's lock only then.
    let online = online_mask();
    let target = (1..nr_rqs())
        .map(|k| (cpu + k) % nr_rqs())
        .find(|&c| online & (1 << c) != 0 && percpu::cpu(c).nohz_idle.load(Ordering::Relaxed));
    if let Some(c) = target.filter(|_| with_cpu_rq(cpu, |rq| rq.nr_running()) >= 2) {
        let tpc = percpu::cpu(c);
        tpc.newidle.store(true, Ordering::Relaxed);
        tpc.nohz_kicks.fetch_add(1, Ordering::Relaxed);
        arch::send_ipi(c, arch::IpiKind::Reschedule);
    }
}

/// One balancing pass of `cpu` (this CPU); returns the threads pulled. Then
/// records where the pulled threads are (`thread.cpu`).
fn balance(cpu: usize, newidle: bool) -> usize {
    let s = sched();
    let irq = arch::irq_save();
    let pulled = s.load_balance(cpu, newidle);
    if !pulled.is_empty() {
        let rq = lock_rq(cpu);
        for &id in pulled.ids() {
            // Still here unless it already moved on (then its new CPU's
            // pass records it).
            let Some(st) = rq.task(id) else { continue };
            let orig = thread(id.0).cpu.swap(cpu as u32, Ordering::AcqRel) as usize;
            if orig != cpu {
                crate::shell::trace::sched_migrate_task(id.0, st.prio(), orig, cpu);
            }
        }
        percpu::cpu(cpu).raise_need_resched(rq.need_resched());
    }
    arch::irq_restore(irq);
    pulled.len()
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
    pc.interrupts.fetch_add(1, Ordering::Relaxed);
    if should_preempt(pc) {
        __schedule(SchedMode::Preempt);
    }
}

/// A preemption point in thread context with interrupts enabled (the end of a
/// spinlocked section, `preempt_enable`).
pub fn preempt_check_resched() {
    if !arch::irqs_enabled() {
        return;
    }
    // Interrupts off around the per-CPU reads (no migration in between).
    let irq = arch::irq_save();
    let go = should_preempt(percpu::this_cpu());
    arch::irq_restore(irq);
    if go {
        __schedule(SchedMode::Preempt);
    }
}

/// Disables preemption on this CPU (nests). The running thread then stays on
/// this CPU until the matching [`preempt_enable`].
#[inline]
pub fn preempt_disable() {
    // Interrupts off around the CPU lookup: a preemption (and migration)
    // between reading the CPU and counting would count on the wrong CPU.
    let irq = arch::irq_save();
    percpu::this_cpu()
        .preempt_count
        .fetch_add(1, Ordering::Relaxed);
    arch::irq_restore(irq);
    ::core::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// Re-enables preemption; dropping to zero with an immediate reschedule
/// pending reschedules at once (full / lazy models).
#[inline]
pub fn preempt_enable() {
    ::core::sync::atomic::compiler_fence(Ordering::SeqCst);
    // The count is non-zero: no migration until it drops.
    let pc = percpu::this_cpu();
    let old = pc.preempt_count.fetch_sub(1, Ordering::Relaxed);
    debug_assert!(old > 0, "preempt_enable without preempt_disable");
    if old == 1 {
        preempt_check_resched();
    }
}

/// This CPU's preempt count.
pub fn preempt_count() -> u32 {
    let irq = arch::irq_save();
    let n = percpu::this_cpu().preempt_count.load(Ordering::Relaxed);
    arch::irq_restore(irq);
    n
}

/// An explicit preemption point for long-running kernel loops: reschedules if
/// a reschedule is pending, under the voluntary model only (none switches
/// only at blocking, yield and `schedule()`; full and lazy preempt anyway,
/// and lazy leaves a lazy request to the tick, as Linux does).
pub fn cond_resched() {
    let irq = arch::irq_save();
    let pc = percpu::this_cpu();
    let go = pc.preempt_count.load(Ordering::Relaxed) == 0
        && preempt_mode() == PreemptMode::Voluntary
        && pc.need_resched() != Resched::None;
    arch::irq_restore(irq);
    if go {
        __schedule(SchedMode::Preempt);
    }
}

/// A copy of thread `t`'s scheduler state (from the runqueue if one holds the
/// thread). The running thread's runtime is as of its last accounting.
pub fn sched_snapshot(t: &Thread) -> Option<SchedTask> {
    SCHED.get()?;
    let _pi = t.pi_lock.lock();
    let (_, rq) = task_rq_lock(t);
    if t.on_rq.load(Ordering::Acquire) {
        rq.task(TaskId(t.idx())).copied()
    } else {
        // SAFETY: `on_rq` is false and we hold `pi_lock`: `sched` is ours.
        unsafe { *t.sched.get() }
    }
}

/// Thread `t`'s total runtime in ns, including the part of the current run
/// not accounted yet.
pub fn task_runtime_ns(t: &Thread) -> u64 {
    if SCHED.get().is_none() {
        return 0;
    }
    let _pi = t.pi_lock.lock();
    let (_, rq) = task_rq_lock(t);
    let id = TaskId(t.idx());
    if t.on_rq.load(Ordering::Acquire) {
        let Some(st) = rq.task(id) else { return 0 };
        let mut ns = st.se.sum_exec_runtime;
        if rq.curr() == Some(id) {
            ns += rq.clock().saturating_sub(st.se.exec_start);
        }
        ns
    } else {
        // SAFETY: `on_rq` is false and we hold `pi_lock`: `sched` is ours.
        unsafe { (*t.sched.get()).map_or(0, |s| s.se.sum_exec_runtime) }
    }
}

/// Changes thread `t`'s policy / nice / slice (`sched_setattr`), whether it is
/// running, queued or asleep, on any CPU.
pub fn sched_setattr(t: &Thread, params: TaskParams) -> Result<(), sched::RqError> {
    params.validate().map_err(sched::RqError::Params)?;
    let s = SCHED.get().ok_or(sched::RqError::NotQueued)?;
    let _pi = t.pi_lock.lock();
    let (cpu, mut rq) = task_rq_lock(t);
    if t.on_rq.load(Ordering::Acquire) {
        let r = rq.sched_setattr(TaskId(t.idx()), params);
        drop(rq);
        if let Ok(r) = r {
            s.kick_if_needed(cpu, arch::cpu_id(), r);
        }
        r.map(|_| ())
    } else {
        // SAFETY: `on_rq` is false and we hold `pi_lock`: `sched` is ours.
        match unsafe { (*t.sched.get()).as_mut() } {
            Some(st) => {
                sched::rq::set_params_offrq(st, params);
                Ok(())
            }
            None => Err(sched::RqError::NotQueued),
        }
    }
}

/// Why [`set_affinity`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AffinityError {
    /// The mask names no online CPU.
    NoOnlineCpu,
    /// The thread does not exist (any more), or is an idle thread.
    NoSuchThread,
}

/// Restricts thread `tid` to the CPUs in `mask` (bit n = CPU n; CPUs that are
/// not online are ignored), like `sched_setaffinity`. A sleeping thread is
/// woken on an allowed CPU later; a queued one moves at once; a running one
/// is asked to reschedule and moves when it is off its CPU (at once for the
/// caller itself; for a thread running on another CPU at its next preemption
/// point, i.e. at once under the full and lazy models, at its next
/// `schedule()` under none, or `cond_resched()` under voluntary).
pub fn set_affinity(tid: Tid, mask: u64) -> Result<(), AffinityError> {
    let s = SCHED.get().ok_or(AffinityError::NoSuchThread)?;
    let mask = mask & online_mask();
    if mask == 0 {
        return Err(AffinityError::NoOnlineCpu);
    }
    let idx = tid.idx();
    if (idx as usize) < MAX_CPUS || idx as usize >= super::threads().len() {
        return Err(AffinityError::NoSuchThread);
    }
    let t = thread(idx);
    let id = TaskId(idx);
    let mut resched_self = false;
    {
        let _pi = t.pi_lock.lock();
        if !super::tid_is_live(tid) {
            return Err(AffinityError::NoSuchThread);
        }
        t.cpus_allowed.store(mask, Ordering::Relaxed);
        loop {
            let (cpu, mut rq) = task_rq_lock(t);
            if !t.on_rq.load(Ordering::Acquire) {
                // SAFETY: `on_rq` is false and we hold `pi_lock`: `sched` is ours.
                if let Some(st) = unsafe { (*t.sched.get()).as_mut() } {
                    st.cpus_allowed = CpuMask::from_u64(mask);
                }
                break;
            }
            let Some(&st) = rq.task(id) else { break };
            if st.cpus_allowed == CpuMask::from_u64(mask) && mask & (1u64 << cpu) != 0 {
                break;
            }
            rq.set_cpus_allowed(id, CpuMask::from_u64(mask));
            if mask & (1u64 << cpu) != 0 {
                break;
            }
            match st.state {
                TaskState::Delayed | TaskState::Blocked => {
                    // Asleep but still held here: finish its dequeue, so its
                    // wakeup places it on an allowed CPU.
                    if let Ok(Some(mut st)) = rq.dequeue_task(id, DequeueFlags::SLEEP) {
                        st.cpus_allowed = CpuMask::from_u64(mask);
                        // Soundness: the runqueue that held the thread is locked
                        // and the thread is asleep (off the CPU: the runqueue
                        // lock is held across switches); `on_rq` false is
                        // published after the write.
                        // SAFETY: as argued just above.
                        unsafe { *t.sched.get() = Some(st) };
                        t.on_rq.store(false, Ordering::Release);
                    }
                    break;
                }
                _ if rq.curr() == Some(id) => {
                    let r = rq.resched_curr(Resched::Now);
                    drop(rq);
                    if cpu == arch::cpu_id() {
                        resched_self = true;
                    } else {
                        s.kick_if_needed(cpu, arch::cpu_id(), r);
                    }
                    break;
                }
                _ => {
                    drop(rq);
                    if let Some(c) = s.move_misplaced(cpu, id) {
                        t.cpu.store(c as u32, Ordering::Release);
                        break;
                    }
                    // It started running meanwhile: go round again.
                }
            }
        }
    }
    if resched_self && preempt_count() == 0 {
        __schedule(SchedMode::Preempt);
    }
    Ok(())
}

/// Whether the thread is dead (for assertions).
#[allow(dead_code)]
pub(super) fn is_dead(t: &Thread) -> bool {
    t.state.load(Ordering::Relaxed) == TASK_DEAD
}

/// How long an idle CPU polls for work before it halts, ns (boot argument
/// `idle_poll=US`; 0: halt at once).
///
/// Why: waking a halted CPU costs an IPI plus the time the CPU takes to leave
/// its halt, which under QEMU/TCG is the host waking a sleeping vCPU thread:
/// ~15-20 us per wakeup, against ~3 us for a CPU that is running. A
/// ping-pong between two CPUs (`perfpipe`, a pipe, a request/reply) pays it
/// twice per round trip, though each side sleeps only a few microseconds. A
/// polling idle CPU sees the wakeup at once and needs no IPI (Linux's
/// `poll_idle` / guest `haltpoll` do the same); the window is short, so an
/// idle machine still halts almost all the time (one window per idle
/// period: after a wakeup, a tick).
pub static IDLE_POLL_NS: AtomicU64 = AtomicU64::new(DEFAULT_IDLE_POLL_NS);
/// Default of [`IDLE_POLL_NS`].
pub const DEFAULT_IDLE_POLL_NS: u64 = 50_000;

/// Polls for a reschedule request for up to [`IDLE_POLL_NS`], with
/// interrupts enabled (ticks and IPIs are taken). Called and returns with
/// interrupts disabled; returns whether there is something to schedule.
fn poll_idle(pc: &PerCpu) -> bool {
    let window = IDLE_POLL_NS.load(Ordering::Relaxed);
    if window == 0 {
        return false;
    }
    poll::begin(&pc.polling);
    arch::irq_enable();
    let t0 = arch::now_ns();
    while !pc.poll_kick.load(Ordering::Relaxed)
        && pc.need_resched() == Resched::None
        && arch::now_ns().saturating_sub(t0) < window
    {
        ::core::hint::spin_loop();
    }
    arch::irq_disable();
    let kicked = poll::end(&pc.poll_kick, &pc.polling);
    kicked || pc.need_resched() != Resched::None
}

/// The polling-idle wakeup protocol on one CPU's `poll_kick` and `polling`
/// flags (Linux's `TIF_POLLING_NRFLAG`): a waker raises the kick, then looks
/// at `polling`, and sends no IPI if the CPU polls; the idle CPU raises
/// `polling`, polls, clears `polling`, then takes the kick. Every access is
/// SeqCst, so either the idle CPU's final look sees the kick, or the waker
/// saw `polling` clear and sends the IPI.
///
/// The kick is never cleared when polling starts: a kick raised just before
/// (by a waker that then saw `polling` already set, and so sent no IPI)
/// would be lost, the wakeup left in the wake list until the CPU's next
/// interrupt, which for a tickless idle CPU may be seconds away (seen: the
/// cross-CPU ping-pong stood still for over 2 s on a loaded host). A stale
/// kick (its waker did send the IPI) only costs one empty pass through the
/// scheduler.
pub(crate) mod poll {
    use core::sync::atomic::{AtomicBool, Ordering};

    /// Waker: raises the kick; returns whether an IPI is needed (the CPU
    /// does not poll).
    pub fn kick(kick: &AtomicBool, polling: &AtomicBool) -> bool {
        raise(kick);
        needs_ipi(polling)
    }

    /// The waker's first step: the kick.
    pub fn raise(kick: &AtomicBool) {
        kick.store(true, Ordering::SeqCst);
    }

    /// The waker's second step: an IPI only if the CPU does not poll.
    pub fn needs_ipi(polling: &AtomicBool) -> bool {
        !polling.load(Ordering::SeqCst)
    }

    /// Idle CPU: polling starts (wakers may skip the IPI from now on).
    pub fn begin(polling: &AtomicBool) {
        polling.store(true, Ordering::SeqCst);
    }

    /// Idle CPU: polling ends; returns whether a kick came (consuming it).
    pub fn end(kick: &AtomicBool, polling: &AtomicBool) -> bool {
        polling.store(false, Ordering::SeqCst);
        kick.swap(false, Ordering::SeqCst)
    }
}

crate::ktest!(poll_kick_before_polling_starts_is_not_lost, || {
    // Every interleaving of the waker's two steps with the idle CPU's
    // begin / end (the idle CPU's steps in order, the waker's in order):
    // whenever the waker sends no IPI, the idle CPU's end must see the kick.
    // The one that lost wakeups: raise, begin, needs_ipi (polling: no IPI),
    // end; with the kick cleared at begin, end saw nothing.
    use core::sync::atomic::AtomicBool;
    let orders: [[u8; 4]; 6] = [
        [0, 1, 2, 3], // raise, needs_ipi, begin, end
        [0, 2, 1, 3], // raise, begin, needs_ipi, end (the lost one)
        [0, 2, 3, 1], // raise, begin, end, needs_ipi
        [2, 0, 1, 3], // begin, raise, needs_ipi, end
        [2, 0, 3, 1], // begin, raise, end, needs_ipi
        [2, 3, 0, 1], // begin, end, raise, needs_ipi
    ];
    for order in orders {
        let (kick, polling) = (AtomicBool::new(false), AtomicBool::new(false));
        let (mut ipi, mut seen) = (false, false);
        for step in order {
            match step {
                0 => poll::raise(&kick),
                1 => ipi = poll::needs_ipi(&polling),
                2 => poll::begin(&polling),
                _ => seen = poll::end(&kick, &polling),
            }
        }
        crate::kassert!(ipi || seen, "order {:?}: no IPI and the kick unseen", order);
    }
    Ok(())
});

/// The idle loop of this CPU: polls briefly ([`IDLE_POLL_NS`]), then halts
/// until a reschedule is pending, then lets the scheduler pick. Each time it
/// is switched in it first tries to pull work from the busiest CPU (newidle
/// balancing).
pub fn cpu_idle() -> ! {
    let cpu = arch::cpu_id();
    let pc = percpu::cpu(cpu);
    loop {
        arch::irq_disable();
        if pc.need_resched() != Resched::None {
            arch::irq_enable();
            __schedule(SchedMode::Preempt);
            continue;
        }
        if pc.newidle.swap(false, Ordering::Relaxed) && nr_rqs() > 1 {
            pc.newidle_runs.fetch_add(1, Ordering::Relaxed);
            let n = balance(cpu, true);
            pc.newidle_pulled.fetch_add(n as u64, Ordering::Relaxed);
            if n > 0 {
                arch::irq_enable();
                __schedule(SchedMode::Preempt);
                continue;
            }
        }
        if poll_idle(pc) {
            // A kick means a queued wakeup: `__schedule` drains it.
            arch::irq_enable();
            __schedule(SchedMode::Preempt);
            continue;
        }
        // Tickless idle: the tick stays off until the idle thread leaves
        // (`__schedule`); timer events (sleepers) and IPIs still come.
        if cpu != 0
            && NOHZ_IDLE.load(Ordering::Relaxed)
            && !pc.nohz_idle.swap(true, Ordering::Relaxed)
        {
            pc.nohz_entries.fetch_add(1, Ordering::Relaxed);
            arch::timer_stop_tick();
        }
        // Atomically enables interrupts and waits: a wakeup interrupt
        // arriving after the check above still ends the halt.
        arch::halt();
    }
}

/// Every CPU's runqueue, locked if free, for the hang dump (never spins).
pub(super) fn try_rq(cpu: usize) -> Option<spin::MutexGuard<'static, Rq>> {
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
