//! Kernel threads: the thread table, spawn / exit / join, sleeping, yielding and
//! the preempt count. The glue to the `sched` crate (schedule, wakeup, tick,
//! preemption) is in [`core`](self::core).
//!
//! # The thread table and the scheduler's state
//! Threads live in a fixed table of [`MAX_THREADS`] slots allocated at boot;
//! a thread's `TaskId` for the scheduler is its slot index, and the table has
//! the same capacity as every runqueue. Slots `0..MAX_CPUS` are the CPUs' idle
//! threads (the boot context becomes CPU 0's), which the runqueue never sees
//! (`Rq::curr() == None` means "idle runs"). A [`Tid`] adds a generation
//! number, so a stale id of a reused slot is detected.
//!
//! A thread's [`SchedTask`] lives in the runqueue's arena while the runqueue
//! holds it (queued, running, or asleep with its dequeue delayed: `on_rq`), and
//! in the thread slot (`sched`) while it is fully dequeued (asleep). Both, and
//! the `on_rq` flag, change only under the runqueue lock of the thread's CPU.
//!
//! # Thread states (Linux's `__state`)
//! `TASK_RUNNING` (runnable or running), `TASK_SLEEPING` (set by the thread
//! itself before it calls `schedule()`; a waker flips it back with
//! `try_to_wake_up`), `TASK_DEAD` (exited, waiting to be joined), plus
//! `TASK_NEW` and `TASK_FREE` for slot management.

pub mod core;
pub mod timer;

use ::core::cell::UnsafeCell;
use ::core::fmt;
use ::core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use alloc::boxed::Box;
use alloc::vec::Vec;

use sched::{SchedTask, TaskParams};

use crate::arch;
use crate::percpu::{self, MAX_CPUS};
use crate::sync::{SpinLock, WaitQueue};

pub use self::core::{
    cond_resched, irq_exit, preempt_check_resched, preempt_count, preempt_disable, preempt_enable,
    preempt_mode, sched_config, sched_setattr, sched_snapshot, schedule, set_current_state,
    task_runtime_ns, timer_tick, try_to_wake_up, with_cpu_rq, with_rq, nr_cpus, yield_now,
};

/// Thread slots, idle threads included (= the runqueue capacity).
pub const MAX_THREADS: usize = 256;
/// Kernel stack size of a spawned thread.
pub const STACK_SIZE: usize = 32 * 1024;
/// Written at the bottom of every stack, checked at each switch.
const STACK_CANARY: u128 = 0x5354_4143_4b5f_4f56_4552_464c_4f57_2121;

/// Runnable or running.
pub const TASK_RUNNING: u8 = 0;
/// Asleep (or about to be: set before `schedule()`).
pub const TASK_SLEEPING: u8 = 1;
/// Exited; the slot waits for `join`.
pub const TASK_DEAD: u8 = 2;
/// Unused slot.
pub const TASK_FREE: u8 = 3;
/// Being set up by `spawn`.
pub const TASK_NEW: u8 = 4;

type Entry = Box<dyn FnOnce() + Send + 'static>;

/// One thread slot.
pub struct Thread {
    idx: u32,
    gen: AtomicU32,
    pub(crate) state: AtomicU8,
    /// Held by its runqueue (queued, running or delayed-dequeue asleep).
    pub(crate) on_rq: AtomicBool,
    /// Its registers are live on a CPU (set at switch-in, cleared by
    /// `finish_task_switch` after the switch-out).
    pub(crate) on_cpu: AtomicBool,
    exited: AtomicBool,
    pub(crate) cpu: AtomicU32,
    /// Written only while the slot is `TASK_NEW`, by the spawner that owns it.
    name: UnsafeCell<&'static str>,
    /// Saved registers while switched out; touched only by context switches
    /// under the runqueue lock.
    pub(crate) ctx: UnsafeCell<arch::Context>,
    /// The scheduler state while fully dequeued; under the runqueue lock.
    pub(crate) sched: UnsafeCell<Option<SchedTask>>,
    /// Set by spawn (slot `TASK_NEW`), taken by the thread when it starts.
    entry: UnsafeCell<Option<Entry>>,
    /// Set by spawn, freed by join (after the thread left the CPU for good).
    stack: UnsafeCell<Option<Box<[u128]>>>,
    /// Wait queue links (thread indices), under the owning queue's lock.
    pub(crate) wq_next: AtomicU32,
    pub(crate) wq_prev: AtomicU32,
    /// Address of the wait queue the thread is on, 0 if none.
    pub(crate) wq_owner: AtomicUsize,
    exit_wq: WaitQueue,
    /// Voluntary / involuntary context switches (Linux's nvcsw / nivcsw).
    pub(crate) nvcsw: AtomicU64,
    pub(crate) nivcsw: AtomicU64,
}

// SAFETY: every `UnsafeCell` field has a documented owner (the runqueue lock,
// the spawner of a `TASK_NEW` slot, or the thread itself); see the fields.
unsafe impl Sync for Thread {}

impl Thread {
    fn new(idx: u32) -> Self {
        Thread {
            idx,
            gen: AtomicU32::new(0),
            state: AtomicU8::new(TASK_FREE),
            on_rq: AtomicBool::new(false),
            on_cpu: AtomicBool::new(false),
            exited: AtomicBool::new(false),
            cpu: AtomicU32::new(0),
            name: UnsafeCell::new(""),
            ctx: UnsafeCell::new(arch::Context::default()),
            sched: UnsafeCell::new(None),
            entry: UnsafeCell::new(None),
            stack: UnsafeCell::new(None),
            wq_next: AtomicU32::new(u32::MAX),
            wq_prev: AtomicU32::new(u32::MAX),
            wq_owner: AtomicUsize::new(0),
            exit_wq: WaitQueue::new(),
            nvcsw: AtomicU64::new(0),
            nivcsw: AtomicU64::new(0),
        }
    }

    /// The slot index (= the scheduler's `TaskId`).
    pub fn idx(&self) -> u32 {
        self.idx
    }

    /// The thread's name. Meaningful for the current thread, or any thread
    /// whose slot the caller knows to be in use.
    pub fn name(&self) -> &'static str {
        // SAFETY: `name` is only written while the slot is TASK_NEW, before the
        // thread becomes visible to anyone else; readers look at live threads.
        unsafe { *self.name.get() }
    }

    /// Voluntary and involuntary context switches so far.
    pub fn switches(&self) -> (u64, u64) {
        (
            self.nvcsw.load(Ordering::Relaxed),
            self.nivcsw.load(Ordering::Relaxed),
        )
    }

    /// The state word (`TASK_*`).
    pub fn state(&self) -> u8 {
        self.state.load(Ordering::Relaxed)
    }

    /// Panics if the bottom of the stack was overwritten (a stack overflow).
    pub(crate) fn check_stack(&self) {
        // SAFETY: the stack of a thread that is running or being switched out
        // is only replaced by `join`, after the thread is dead and off the CPU.
        let stack = unsafe { &*self.stack.get() };
        if let Some(s) = stack {
            if s[0] != STACK_CANARY {
                panic!("kernel stack overflow in thread '{}'", self.name());
            }
        }
    }
}

/// A thread id: slot index and the slot's generation at spawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tid {
    idx: u32,
    gen: u32,
}

impl Tid {
    /// The slot index (the scheduler's `TaskId`).
    pub fn idx(self) -> u32 {
        self.idx
    }

    /// The scheduler's id for this thread.
    pub fn task_id(self) -> sched::TaskId {
        sched::TaskId(self.idx)
    }
}

impl fmt::Display for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.idx)
    }
}

/// Why a spawn failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnError {
    /// Invalid scheduling parameters.
    Params(sched::task::ParamsError),
    /// Every thread slot is in use.
    NoSlot,
}

/// Why a join failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinError {
    /// The id is stale (already joined) or was never spawned.
    NoSuchThread,
    /// A thread cannot join itself.
    SelfJoin,
}

static THREADS: spin::Once<Box<[Thread]>> = spin::Once::new();
/// Serialises slot allocation and release.
static SLOT_LOCK: SpinLock<usize> = SpinLock::new(MAX_CPUS);
/// Threads spawned and not yet joined.
static NR_THREADS: AtomicUsize = AtomicUsize::new(0);

/// The thread table.
#[inline]
pub fn threads() -> &'static [Thread] {
    match THREADS.get() {
        Some(t) => t,
        None => &[],
    }
}

/// Thread slot `idx`.
#[inline]
pub fn thread(idx: u32) -> &'static Thread {
    &threads()[idx as usize]
}

/// Index of the current thread.
#[inline]
pub fn current_idx() -> u32 {
    percpu::this_cpu().curr.load(Ordering::Relaxed)
}

/// The current thread.
pub fn current() -> &'static Thread {
    thread(current_idx())
}

/// The current thread's id.
pub fn current_tid() -> Tid {
    let t = current();
    Tid {
        idx: t.idx,
        gen: t.gen.load(Ordering::Relaxed),
    }
}

/// Whether the thread table exists (scheduling is up).
pub fn is_ready() -> bool {
    THREADS.get().is_some()
}

/// Threads spawned and not yet joined.
pub fn nr_threads() -> usize {
    NR_THREADS.load(Ordering::Relaxed)
}

/// Creates the thread table and turns the running boot context into CPU 0's
/// idle thread. Needs the heap; call once, before interrupts are enabled.
pub fn init() {
    THREADS.call_once(|| {
        (0..MAX_THREADS as u32)
            .map(Thread::new)
            .collect::<Vec<_>>()
            .into_boxed_slice()
    });
    let cpu = arch::cpu_id();
    let idle = thread(cpu as u32);
    // SAFETY: the idle slot is not visible to anyone yet.
    unsafe { *idle.name.get() = "idle" };
    idle.state.store(TASK_RUNNING, Ordering::Relaxed);
    idle.on_cpu.store(true, Ordering::Relaxed);
    idle.cpu.store(cpu as u32, Ordering::Relaxed);
    let pc = percpu::this_cpu();
    pc.curr.store(cpu as u32, Ordering::Relaxed);
    pc.prev.store(cpu as u32, Ordering::Relaxed);
}

/// Index of CPU `cpu`'s idle thread.
#[inline]
pub fn idle_idx(cpu: usize) -> u32 {
    cpu as u32
}

/// Spawns a kernel thread running `f` with scheduling parameters `params`.
/// It is queued on this CPU at once (`wake_up_new_task`) and may preempt the
/// caller. Allocates its stack and the closure: thread context only.
pub fn spawn<F>(name: &'static str, params: TaskParams, f: F) -> Result<Tid, SpawnError>
where
    F: FnOnce() + Send + 'static,
{
    params.validate().map_err(SpawnError::Params)?;
    let mut stack = alloc::vec![0u128; STACK_SIZE / 16].into_boxed_slice();
    stack[0] = STACK_CANARY;
    let entry: Entry = Box::new(f);
    let idx = {
        let mut hint = SLOT_LOCK.lock();
        let n = MAX_THREADS - MAX_CPUS;
        let found = (0..n)
            .map(|k| MAX_CPUS + (*hint - MAX_CPUS + k) % n)
            .find(|&i| threads()[i].state.load(Ordering::Relaxed) == TASK_FREE);
        let Some(i) = found else {
            return Err(SpawnError::NoSlot);
        };
        threads()[i].state.store(TASK_NEW, Ordering::Relaxed);
        *hint = MAX_CPUS + (i + 1 - MAX_CPUS) % n;
        i as u32
    };
    let t = thread(idx);
    let top = stack.as_ptr() as usize + STACK_SIZE;
    // SAFETY: the slot is TASK_NEW: only this spawner touches these fields
    // until `wake_up_new` publishes the thread to the runqueue.
    unsafe {
        *t.name.get() = name;
        *t.entry.get() = Some(entry);
        *t.stack.get() = Some(stack);
        *t.sched.get() = None;
        arch::init_thread_context(&mut *t.ctx.get(), top, thread_start, idx as usize);
    }
    t.exited.store(false, Ordering::Relaxed);
    t.on_cpu.store(false, Ordering::Relaxed);
    t.on_rq.store(false, Ordering::Relaxed);
    t.wq_owner.store(0, Ordering::Relaxed);
    t.nvcsw.store(0, Ordering::Relaxed);
    t.nivcsw.store(0, Ordering::Relaxed);
    t.cpu.store(arch::cpu_id() as u32, Ordering::Relaxed);
    NR_THREADS.fetch_add(1, Ordering::Relaxed);
    let tid = Tid {
        idx,
        gen: t.gen.load(Ordering::Relaxed),
    };
    self::core::wake_up_new(idx, SchedTask::new(params));
    Ok(tid)
}

/// First code of every spawned thread, entered from its first context switch
/// with interrupts disabled and the runqueue lock held.
extern "C" fn thread_start(idx: usize) -> ! {
    self::core::finish_task_switch();
    arch::irq_enable();
    let t = thread(idx as u32);
    // SAFETY: the entry was stored by spawn before the thread could run, and
    // only the thread itself takes it.
    let entry = unsafe { (*t.entry.get()).take() };
    if let Some(f) = entry {
        f();
    }
    exit()
}

/// Ends the current thread. Its slot stays until a `join`.
pub fn exit() -> ! {
    let t = current();
    assert!(t.idx as usize >= MAX_CPUS, "the idle thread cannot exit");
    // No preemption from here on: joiners woken below must not run before this
    // thread has left the CPU (they would wait for `on_cpu` to clear).
    preempt_disable();
    t.exited.store(true, Ordering::SeqCst);
    t.exit_wq.wake_all();
    t.state.store(TASK_DEAD, Ordering::SeqCst);
    self::core::schedule_dead()
}

/// What a thread did, reported by [`join`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ExitStats {
    /// CPU time used, ns.
    pub sum_exec_runtime_ns: u64,
    /// Times it was switched in.
    pub nr_switches: u64,
    /// Times it was woken.
    pub nr_wakeups: u64,
    /// Voluntary context switches (it blocked or yielded).
    pub nvcsw: u64,
    /// Involuntary context switches (it was preempted).
    pub nivcsw: u64,
}

/// Waits for thread `tid` to exit, then frees its stack and slot.
pub fn join(tid: Tid) -> Result<ExitStats, JoinError> {
    let t = threads()
        .get(tid.idx as usize)
        .ok_or(JoinError::NoSuchThread)?;
    if tid.idx as usize >= MAX_THREADS
        || (tid.idx as usize) < MAX_CPUS
        || t.gen.load(Ordering::Relaxed) != tid.gen
    {
        return Err(JoinError::NoSuchThread);
    }
    if tid.idx == current_idx() {
        return Err(JoinError::SelfJoin);
    }
    let st = t.state.load(Ordering::Relaxed);
    if st == TASK_FREE || st == TASK_NEW {
        return Err(JoinError::NoSuchThread);
    }
    t.exit_wq.wait_event(|| t.exited.load(Ordering::SeqCst));
    // The exiting thread may still be switching out (another CPU).
    while t.on_cpu.load(Ordering::Acquire) || t.state.load(Ordering::Acquire) != TASK_DEAD {
        ::core::hint::spin_loop();
    }
    let mut stats = ExitStats {
        nvcsw: t.nvcsw.load(Ordering::Relaxed),
        nivcsw: t.nivcsw.load(Ordering::Relaxed),
        ..ExitStats::default()
    };
    let stack = {
        let _slots = SLOT_LOCK.lock();
        if t.gen.load(Ordering::Relaxed) != tid.gen {
            return Err(JoinError::NoSuchThread);
        }
        t.gen.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the thread is dead and off every CPU, and the runqueue no
        // longer holds it: nobody else touches its slot any more.
        let stack = unsafe {
            if let Some(st) = (*t.sched.get()).take() {
                stats.sum_exec_runtime_ns = st.se.sum_exec_runtime;
                stats.nr_switches = st.nr_switches;
                stats.nr_wakeups = st.nr_wakeups;
            }
            (*t.entry.get()).take();
            (*t.stack.get()).take()
        };
        t.state.store(TASK_FREE, Ordering::Release);
        stack
    };
    NR_THREADS.fetch_sub(1, Ordering::Relaxed);
    drop(stack);
    Ok(stats)
}

/// Whether thread `tid` has exited (it may not have been joined yet).
pub fn has_exited(tid: Tid) -> bool {
    let t = thread(tid.idx);
    t.gen.load(Ordering::Relaxed) != tid.gen || t.exited.load(Ordering::SeqCst)
}

/// Sleeps for at least `d_ns` nanoseconds. The wakeup comes from the tick
/// (resolution: one tick), through the runqueue with `WakeFlags::IRQ`.
pub fn sleep_ns(d_ns: u64) {
    sleep_until_ns(arch::now_ns().saturating_add(d_ns));
}

/// Sleeps until the clock reads at least `deadline_ns`.
pub fn sleep_until_ns(deadline_ns: u64) {
    let me = current_idx();
    let pc = percpu::this_cpu();
    while arch::now_ns() < deadline_ns {
        set_current_state(TASK_SLEEPING);
        pc.timers.lock().add(deadline_ns, me);
        schedule();
    }
    set_current_state(TASK_RUNNING);
    pc.timers.lock().remove(me);
}

/// Sleeps for at least `d_ms` milliseconds.
pub fn sleep_ms(d_ms: u64) {
    sleep_ns(d_ms.saturating_mul(1_000_000));
}

/// Prints every live thread and what the runqueue thinks of it (a `sysrq-t`
/// style dump for hangs, used by the test watchdog). Never spins on a lock.
pub fn dump_threads() {
    let pc = percpu::this_cpu();
    // The runqueue only if nobody holds it (the watchdog may have interrupted
    // a holder on this CPU).
    let rq = pc.rq.try_lock();
    let rq = rq.as_ref().and_then(|g| g.as_ref());
    crate::console::emergency_write(format_args!(
        "threads (cpu {} curr {} need_resched {:?} preempt_count {} rq curr {:?} nr_running {:?}):\n",
        arch::cpu_id(),
        pc.curr.load(Ordering::Relaxed),
        pc.need_resched(),
        pc.preempt_count.load(Ordering::Relaxed),
        rq.and_then(|r| r.curr()),
        rq.map(|r| r.nr_running())
    ));
    for t in threads() {
        let st = t.state.load(Ordering::Relaxed);
        if st == TASK_FREE {
            continue;
        }
        let held = rq
            .and_then(|r| r.task(sched::TaskId(t.idx)))
            .map(|s| s.state);
        crate::console::emergency_write(format_args!(
            "  {:3} {:12} state {} on_rq {} on_cpu {} waiting {} rq-state {:?} (nvcsw {} nivcsw {})\n",
            t.idx,
            t.name(),
            st,
            t.on_rq.load(Ordering::Relaxed),
            t.on_cpu.load(Ordering::Relaxed),
            t.wq_owner.load(Ordering::Relaxed) != 0,
            held,
            t.nvcsw.load(Ordering::Relaxed),
            t.nivcsw.load(Ordering::Relaxed),
        ));
    }
}
