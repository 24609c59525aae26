//! Kernel threads: the thread table, spawn / exit / join, sleeping, yielding and
//! the preempt count. The glue to the `sched` crate (schedule, wakeup, tick,
//! preemption) is in [`crate::sched`].
//!
//! # The thread table and the scheduler's state
//! Threads live in a fixed table of [`MAX_THREADS`] slots allocated at boot;
//! a thread's `TaskId` for the scheduler is its slot index, and the table has
//! the same capacity as every runqueue. Slots `0..idle_slots()` are the CPUs'
//! idle threads (slot = CPU index; as many as the CPUs found, at least 8, so
//! that on a machine of up to 8 CPUs the first spawned thread, the shell, is
//! pid 8 whatever `MAX_CPUS` is; the boot context becomes CPU 0's), which the runqueue never sees
//! (`Rq::curr() == None` means "idle runs"). A [`Tid`] adds a generation
//! number, so a stale id of a reused slot is detected.
//!
//! A thread's scheduler state ([`SchedTask`]) is the scheduler's, from
//! spawn to exit: it lives in the runqueue of the CPU the scheduler says
//! (`sched::smp::Scheduler::task_cpu`; the thread's `cpu` field follows it
//! through `Platform::set_task_cpu`), whether the thread runs, waits to run
//! or sleeps. The kernel keeps only a copy of the final state, for `join`.
//! The rules on many CPUs (the thread's `pi_lock`, `on_cpu`, the switch)
//! are in [`crate::sched`].
//!
//! # Affinity
//! Each thread has a CPU mask (`cpus_allowed`, a [`CpuMask`]), inherited from
//! the thread that spawns it (Linux's fork) unless given with [`spawn_on`],
//! and changed with [`set_affinity`](crate::sched::set_affinity). The in-kernel test runner pins tests
//! that measure single-CPU behaviour to CPU 0 this way.
//!
//! # Thread states (Linux's `__state`)
//! [`ThreadState`]: `Running` (runnable or running), `Sleeping` (set by the
//! thread itself before it calls `schedule()`; a waker flips it back with
//! `try_to_wake_up`), `Dead` (exited, waiting to be joined), plus `New` and
//! `Free` for slot management.

pub mod inspect;
pub mod softlockup;
pub mod stall;

use crate::heap::stack;
use kernel_hal::context::TaskContext;
use kernel_hal::cpu::CpuId;

use ::core::fmt;
use ::core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use alloc::boxed::Box;
use alloc::vec::Vec;

use sched::{SchedTask, TaskParams};

use crate::cpumask::AtomicCpuMask;
pub use crate::cpumask::CpuMask;

use crate::arch;
use crate::percpu::{self, MAX_CPUS};

use crate::sync::{SpinLock, WaitQueue};

/// Thread slots, idle threads included (= the runqueue capacity): 4096
/// spawnable threads (workloads go up to that). The cost is per slot: the
/// thread table entry, a runqueue arena entry per CPU and a timer-list entry
/// per CPU (a few MiB in all); stacks are allocated per spawned thread.
pub const MAX_THREADS: usize = 4096 + MAX_CPUS;
// Stack owner ids: thread slots below the CPUs' bring-up and exception
// stacks' ids; more stack slots than threads.
const _: () =
    assert!(MAX_THREADS < stack::BRINGUP_OWNER as usize && MAX_THREADS < stack::MAX_SLOTS);
/// Kernel stack size of a spawned thread.
pub const STACK_SIZE: usize = stack::STACK_SIZE;
/// Written at the bottom of every stack, checked at each switch: a second
/// line of defence behind the guard pages (and the only one where the arch
/// has no stack region), one 16-byte compare per switch.
const STACK_CANARY: u128 = 0x5354_4143_4b5f_4f56_4552_464c_4f57_2121;

/// A thread slot's state: Linux's `__state`, reduced to what this kernel
/// needs, plus the slot management states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ThreadState {
    /// Runnable or running.
    Running = 0,
    /// Asleep (or about to be: set before `schedule()`).
    Sleeping = 1,
    /// Exited; the slot waits for `join`.
    Dead = 2,
    /// Unused slot.
    Free = 3,
    /// Being set up by `spawn`.
    New = 4,
}

impl ThreadState {
    const ALL: [ThreadState; 5] = [
        ThreadState::Running,
        ThreadState::Sleeping,
        ThreadState::Dead,
        ThreadState::Free,
        ThreadState::New,
    ];
}

/// A thread's state word: an atomic byte that only ever holds a
/// [`ThreadState`] (only [`StateWord::store`] writes it), so the wakeup path's
/// check-and-set stays one atomic access.
pub struct StateWord(AtomicU8);

impl StateWord {
    const fn new(s: ThreadState) -> Self {
        StateWord(AtomicU8::new(s as u8))
    }

    /// The state, with the given ordering.
    #[inline]
    pub fn load(&self, order: Ordering) -> ThreadState {
        let v = self.0.load(order);
        // Indexing by the discriminant: every stored byte came from a
        // ThreadState, so it is in range.
        ThreadState::ALL[v as usize]
    }

    /// Sets the state, with the given ordering.
    #[inline]
    pub fn store(&self, s: ThreadState, order: Ordering) {
        self.0.store(s as u8, order);
    }
}

type Entry = Box<dyn FnOnce() + Send + 'static>;

/// One thread slot.
pub struct Thread {
    idx: u32,
    gen: AtomicU32,
    pub(crate) state: StateWord,
    /// Its registers are live on a CPU (set at switch-in, cleared by
    /// `finish_task_switch` after the switch-out).
    pub(crate) on_cpu: AtomicBool,
    /// Switched out still runnable on a CPU its affinity excludes
    /// (`Switch::prev_misplaced`): `finish_task_switch` moves it.
    pub(crate) migrating: AtomicBool,
    exited: AtomicBool,
    /// The CPU whose runqueue holds it (kept by the scheduler through
    /// `Platform::set_task_cpu`), or where it last ran.
    pub(crate) cpu: AtomicU32,
    /// Linux's `prio` (120 + nice, 99 - RT priority), for trace events:
    /// set at spawn and by `sched_setattr`.
    pub(crate) prio: AtomicI32,
    /// Serialises its wakeups and the lookups of its scheduler state
    /// (Linux's `p->pi_lock`); see `core`.
    pub(crate) pi_lock: SpinLock<()>,
    /// Allowed CPUs (the kernel's copy, inherited by threads it spawns).
    pub(crate) cpus_allowed: AtomicCpuMask,
    /// The CPU whose timer list holds its sleep timer.
    pub(crate) timer_cpu: AtomicU32,
    /// Written only while the slot is `ThreadState::New`, by the spawner that owns
    /// it (or for an idle thread before its CPU is online); read with
    /// `try_lock`, so a reader never waits (it says "?" instead).
    name: ::sched::SpinMutex<&'static str>,
    /// Saved registers while switched out, and the kernel stack: prepared
    /// by spawn (slot `ThreadState::New`), switched by `sched::switch`, the stack
    /// taken back by join (after the thread left the CPU for good); the
    /// switch checks the stack's canary without waiting.
    pub(crate) ctx: TaskContext,
    /// Set by spawn (slot `ThreadState::New`), taken by the thread when it starts.
    entry: ::sched::SpinMutex<Option<Entry>>,
    /// Wait queue links (thread indices), under the owning queue's lock.
    pub(crate) wq_next: AtomicU32,
    pub(crate) wq_prev: AtomicU32,
    /// Address of the wait queue the thread is on, 0 if none.
    pub(crate) wq_owner: AtomicUsize,
    exit_wq: WaitQueue,
    /// Voluntary / involuntary context switches (Linux's nvcsw / nivcsw).
    pub(crate) nvcsw: AtomicU64,
    pub(crate) nivcsw: AtomicU64,
    /// Since when it has been runnable without running (ns, 0: running or
    /// asleep): set when it is woken or switched out still runnable,
    /// cleared when it is switched in. The stall watchdog reads it.
    pub(crate) runnable_since: AtomicU64,
    /// It runs code that models user space (Linux's user mode): set and
    /// cleared only by the thread itself, in [`run_in_user_mode`](crate::sched::run_in_user_mode); read by
    /// interrupt exit on the CPU that runs it. Never set for idle threads
    /// and kernel threads that model nothing.
    pub(crate) user_mode: AtomicBool,
}

impl Thread {
    fn new(idx: u32) -> Self {
        Thread {
            idx,
            gen: AtomicU32::new(0),
            state: StateWord::new(ThreadState::Free),
            on_cpu: AtomicBool::new(false),
            migrating: AtomicBool::new(false),
            exited: AtomicBool::new(false),
            cpu: AtomicU32::new(0),
            prio: AtomicI32::new(120),
            pi_lock: SpinLock::named("pi_lock", ()),
            cpus_allowed: AtomicCpuMask::from_mask(CpuMask::all()),
            timer_cpu: AtomicU32::new(0),
            name: ::sched::SpinMutex::named("thread.name", ""),
            ctx: TaskContext::new(),
            entry: ::sched::SpinMutex::named("thread.entry", None),
            wq_next: AtomicU32::new(u32::MAX),
            wq_prev: AtomicU32::new(u32::MAX),
            wq_owner: AtomicUsize::new(0),
            exit_wq: WaitQueue::new(),
            nvcsw: AtomicU64::new(0),
            nivcsw: AtomicU64::new(0),
            runnable_since: AtomicU64::new(0),
            user_mode: AtomicBool::new(false),
        }
    }

    /// The slot index (= the scheduler's `TaskId`).
    pub fn idx(&self) -> u32 {
        self.idx
    }

    /// The thread's name. Meaningful for the current thread, or any thread
    /// whose slot the caller knows to be in use.
    pub fn name(&self) -> &'static str {
        self.name.try_lock().map_or("?", |n| *n)
    }

    /// Voluntary and involuntary context switches so far.
    pub fn switches(&self) -> (u64, u64) {
        (
            self.nvcsw.load(Ordering::Relaxed),
            self.nivcsw.load(Ordering::Relaxed),
        )
    }

    /// The CPU whose runqueue holds the thread, or where it last ran.
    pub fn cpu(&self) -> CpuId {
        // Only the scheduler stores it, from a CpuId.
        CpuId::wrapping(self.cpu.load(Ordering::Relaxed) as usize)
    }

    /// Its allowed CPUs.
    pub fn cpus_allowed(&self) -> CpuMask {
        self.cpus_allowed.load(Ordering::Relaxed)
    }

    /// The thread's state.
    pub fn state(&self) -> ThreadState {
        self.state.load(Ordering::Relaxed)
    }

    /// Whether it runs code that models user space ([`run_in_user_mode`](crate::sched::run_in_user_mode)).
    pub fn in_user_mode(&self) -> bool {
        self.user_mode.load(Ordering::Relaxed)
    }

    /// Panics if the bottom of the stack was overwritten (a stack overflow).
    pub(crate) fn check_stack(&self) {
        if !self.ctx.stack_intact(STACK_CANARY) {
            panic!("kernel stack overflow in thread '{}'", self.name());
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
    /// Invalid scheduling parameters, or ones the scheduler refused
    /// (deadline admission; SCHED_DEADLINE with a mask that does not cover
    /// every online CPU).
    Params(sched::task::ParamsError),
    /// Every thread slot is in use.
    NoSlot,
    /// The heap (or the stack region, or memory for its page tables)
    /// cannot hold the thread's stack.
    NoMemory,
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
static SLOT_LOCK: SpinLock<usize> = SpinLock::named("thread_slots", 0);
/// Thread slots of idle threads, `0..IDLE_SLOTS` (see the module docs); set
/// by [`init`], before any spawn.
static IDLE_SLOTS: AtomicUsize = AtomicUsize::new(MAX_CPUS);
/// Slots spawned threads may use, from `idle_slots()` up.
const SPAWN_SLOTS: usize = MAX_THREADS - MAX_CPUS;

/// Slots `0..idle_slots()` hold the CPUs' idle threads.
#[inline]
pub fn idle_slots() -> usize {
    IDLE_SLOTS.load(Ordering::Relaxed)
}

/// Whether thread slot `idx` is an idle thread's.
#[inline]
pub fn is_idle_idx(idx: u32) -> bool {
    (idx as usize) < idle_slots()
}
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
    // Interrupts off: no preemption (and migration) between reading the CPU
    // and reading what it runs.
    let irq = arch::IrqGuard::save();
    let idx = percpu::this_cpu().curr.load(Ordering::Relaxed);
    drop(irq);
    idx
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
    IDLE_SLOTS.store(arch::cpu_count().clamp(8, MAX_CPUS), Ordering::Relaxed);
    THREADS.call_once(|| {
        (0..MAX_THREADS as u32)
            .map(Thread::new)
            .collect::<Vec<_>>()
            .into_boxed_slice()
    });
    stack::init(flush_tlb_everywhere);
    init_idle(arch::cpu_id());
}

/// Flushes every online CPU's TLB (a cross-CPU call that waits): how the
/// stack allocator recycles the addresses of freed stacks.
fn flush_tlb_everywhere() -> bool {
    fn flush_here(_: usize) {
        arch::flush_tlb_local();
    }
    crate::smp::on_each_cpu(flush_here, 0, true).is_ok()
}

/// Turns the running context of this CPU (`cpu`) into its idle thread. The
/// boot CPU's is set up by [`init`]; each secondary CPU calls this first.
pub fn init_idle(cpu: CpuId) {
    let idle = thread(idle_idx(cpu));
    *idle.name.lock() = idle_name(cpu);
    idle.state.store(ThreadState::Running, Ordering::Relaxed);
    idle.on_cpu.store(true, Ordering::Relaxed);
    idle.cpu.store(cpu.as_u32(), Ordering::Relaxed);
    idle.cpus_allowed.store(&CpuMask::all(), Ordering::Relaxed);
    let pc = percpu::cpu(cpu);
    pc.curr.store(cpu.as_u32(), Ordering::Relaxed);
    pc.prev.store(cpu.as_u32(), Ordering::Relaxed);
    // The code running here is this CPU's context from now on: its
    // registers go to the idle thread's at the first switch away.
    assert!(
        idle.ctx.adopt(),
        "cpu {cpu}: a second start, or its idle context is in use"
    );
}

/// Bytes of the longest idle thread name, `idle/255`.
const IDLE_NAME_BYTES: usize = 8;
const _: () = assert!(MAX_CPUS <= 1000, "idle names have at most 3 digits");

/// The idle threads' names, `idle/0` to `idle/{MAX_CPUS - 1}` (NUL padded),
/// built at compile time: thread names are `&'static str`.
static IDLE_NAMES: [[u8; IDLE_NAME_BYTES]; MAX_CPUS] = {
    let mut names = [[0u8; IDLE_NAME_BYTES]; MAX_CPUS];
    let mut cpu = 0;
    while cpu < MAX_CPUS {
        let n = &mut names[cpu];
        let prefix = b"idle/";
        let mut i = 0;
        while i < prefix.len() {
            n[i] = prefix[i];
            i += 1;
        }
        let digits = if cpu >= 100 {
            3
        } else if cpu >= 10 {
            2
        } else {
            1
        };
        let mut d = 0;
        let mut v = cpu;
        while d < digits {
            n[prefix.len() + digits - 1 - d] = b'0' + (v % 10) as u8;
            v /= 10;
            d += 1;
        }
        cpu += 1;
    }
    names
};

/// CPU `cpu`'s idle thread name (`idle/<cpu>`).
fn idle_name(cpu: CpuId) -> &'static str {
    let n = &IDLE_NAMES[cpu.index()];
    let len = n.iter().position(|&b| b == 0).unwrap_or(IDLE_NAME_BYTES);
    ::core::str::from_utf8(&n[..len]).unwrap_or("idle")
}

/// Whether `tid` names a thread that was spawned and not joined yet.
pub fn tid_is_live(tid: Tid) -> bool {
    let Some(t) = threads().get(tid.idx as usize) else {
        return false;
    };
    !is_idle_idx(tid.idx)
        && t.gen.load(Ordering::Relaxed) == tid.gen
        && !matches!(
            t.state.load(Ordering::Relaxed),
            ThreadState::Free | ThreadState::New
        )
}

/// Every spawned thread that was not joined yet (running, asleep or exited),
/// idle threads excepted.
pub fn live_threads() -> alloc::vec::Vec<Tid> {
    threads()
        .iter()
        .enumerate()
        .skip(idle_slots())
        .filter(|(_, t)| {
            !matches!(
                t.state.load(Ordering::Acquire),
                ThreadState::Free | ThreadState::New
            )
        })
        .map(|(i, t)| Tid {
            idx: i as u32,
            gen: t.gen.load(Ordering::Relaxed),
        })
        .collect()
}

/// Index of CPU `cpu`'s idle thread.
#[inline]
pub fn idle_idx(cpu: CpuId) -> u32 {
    cpu.as_u32()
}

/// Spawns a kernel thread running `f` with scheduling parameters `params`,
/// allowed on the CPUs its creator may use. It is queued at once
/// (`wake_up_new_task`: on the idlest allowed CPU) and may preempt the
/// caller. Allocates its stack and the closure: thread context only.
pub fn spawn<F>(name: &'static str, params: TaskParams, f: F) -> Result<Tid, SpawnError>
where
    F: FnOnce() + Send + 'static,
{
    spawn_on(name, params, current().cpus_allowed(), f)
}

/// [`spawn`] with an explicit CPU mask (CPUs not online are ignored; a mask
/// without an online CPU means all of them).
pub fn spawn_on<F>(
    name: &'static str,
    params: TaskParams,
    mask: CpuMask,
    f: F,
) -> Result<Tid, SpawnError>
where
    F: FnOnce() + Send + 'static,
{
    params.validate().map_err(SpawnError::Params)?;
    let online = crate::sched::online_mask();
    let mask = match mask.and(&online) {
        m if m.is_empty() => online,
        m => m,
    };
    let entry: Entry = Box::new(f);
    let idx = {
        let mut hint = SLOT_LOCK.lock();
        // SPAWN_SLOTS slots from the first after the idle threads; the hint
        // is the offset to look at first.
        let (base, n) = (idle_slots(), SPAWN_SLOTS);
        let found = (0..n)
            .map(|k| base + (*hint + k) % n)
            .find(|&i| threads()[i].state.load(Ordering::Relaxed) == ThreadState::Free);
        let Some(i) = found else {
            return Err(SpawnError::NoSlot);
        };
        threads()[i]
            .state
            .store(ThreadState::New, Ordering::Relaxed);
        *hint = (i + 1 - base) % n;
        i as u32
    };
    let t = thread(idx);
    // Out of memory is an error for the caller, not a panic.
    let stack = match stack::KernelStack::new(idx) {
        Ok(s) => s,
        Err(stack::NoMemory) => {
            let _slots = SLOT_LOCK.lock();
            t.state.store(ThreadState::Free, Ordering::Relaxed);
            return Err(SpawnError::NoMemory);
        }
    };
    stack.write_canary(STACK_CANARY);
    // The slot is ThreadState::New: only this spawner touches these fields until
    // `wake_up_new` publishes the thread to the runqueue. Its context was
    // emptied by join (or never used).
    if t.ctx.prepare(stack, thread_start, idx as usize).is_err() {
        let _slots = SLOT_LOCK.lock();
        t.state.store(ThreadState::Free, Ordering::Relaxed);
        return Err(SpawnError::NoMemory);
    }
    *t.name.lock() = name;
    *t.entry.lock() = Some(entry);
    t.exited.store(false, Ordering::Relaxed);
    t.on_cpu.store(false, Ordering::Relaxed);
    t.migrating.store(false, Ordering::Relaxed);
    t.cpus_allowed.store(&mask, Ordering::Relaxed);
    t.wq_owner.store(0, Ordering::Relaxed);
    t.nvcsw.store(0, Ordering::Relaxed);
    t.nivcsw.store(0, Ordering::Relaxed);
    t.user_mode.store(false, Ordering::Relaxed);
    t.cpu.store(arch::cpu_id().as_u32(), Ordering::Relaxed);
    NR_THREADS.fetch_add(1, Ordering::Relaxed);
    let tid = Tid {
        idx,
        gen: t.gen.load(Ordering::Relaxed),
    };
    let mut st = SchedTask::new(params);
    st.cpus_allowed = mask;
    t.prio.store(st.prio(), Ordering::Relaxed);
    if let Err(e) = crate::sched::wake_up_new(idx, st) {
        // The scheduler refused it (its parameters: deadline admission or a
        // deadline task's restricted mask; or no memory for its directory
        // entry): nothing ran, so the slot goes back as it came.
        t.entry.lock().take();
        t.ctx.take_stack();
        NR_THREADS.fetch_sub(1, Ordering::Relaxed);
        t.state.store(ThreadState::Free, Ordering::Release);
        return Err(match e {
            sched::smp::LifecycleError::Params(p) => SpawnError::Params(p),
            e => {
                log::warn!("spawn '{}': the scheduler refused it: {:?}", name, e);
                SpawnError::NoMemory
            }
        });
    }
    Ok(tid)
}

/// First code of every spawned thread, entered from its first context switch
/// with interrupts disabled and the runqueue lock held.
extern "C" fn thread_start(idx: usize) -> ! {
    crate::sched::finish_task_switch();
    arch::irq_enable();
    let t = thread(idx as u32);
    let entry = t.entry.lock().take();
    if let Some(f) = entry {
        f();
    }
    exit()
}

/// Ends the current thread. Its slot stays until a `join`.
pub fn exit() -> ! {
    let t = current();
    assert!(!is_idle_idx(t.idx), "the idle thread cannot exit");
    // No preemption from here on: joiners woken below must not run before this
    // thread has left the CPU (they would wait for `on_cpu` to clear).
    crate::sched::preempt_disable();
    t.exited.store(true, Ordering::SeqCst);
    t.exit_wq.wake_all();
    // Under the `pi_lock` (Linux's `set_special_state`): a waker holds it from
    // its ThreadState::Sleeping check to the end of the wakeup, and it may have seen
    // this thread sleeping in a wait loop it left without blocking. Without
    // the lock this thread could die and leave its CPU in between; the waker
    // would then find it off every runqueue and off-CPU, take the scheduler
    // state kept for `join` and enqueue the dead thread ("a dead thread was
    // switched back in"). With it, the waker finds it still running and only
    // marks it running; the DEAD below comes after.
    {
        let _pi = t.pi_lock.lock();
        t.state.store(ThreadState::Dead, Ordering::SeqCst);
    }
    crate::sched::schedule_dead()
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
        || is_idle_idx(tid.idx)
        || t.gen.load(Ordering::Relaxed) != tid.gen
    {
        return Err(JoinError::NoSuchThread);
    }
    if tid.idx == current_idx() {
        return Err(JoinError::SelfJoin);
    }
    let st = t.state.load(Ordering::Relaxed);
    if st == ThreadState::Free || st == ThreadState::New {
        return Err(JoinError::NoSuchThread);
    }
    t.exit_wq.wait_event(|| t.exited.load(Ordering::SeqCst));
    // The exiting thread may still be switching out (another CPU).
    while t.on_cpu.load(Ordering::Acquire) || t.state.load(Ordering::Acquire) != ThreadState::Dead {
        arch::cpu_relax();
    }
    let mut stats = ExitStats {
        nvcsw: t.nvcsw.load(Ordering::Relaxed),
        nivcsw: t.nivcsw.load(Ordering::Relaxed),
        ..ExitStats::default()
    };
    if let Some(st) = crate::sched::sched().exited(sched::TaskId(t.idx)) {
        stats.sum_exec_runtime_ns = st.se.sum_exec_runtime;
        stats.nr_switches = st.nr_switches;
        stats.nr_wakeups = st.nr_wakeups;
    }
    let stack = {
        let _slots = SLOT_LOCK.lock();
        if t.gen.load(Ordering::Relaxed) != tid.gen {
            return Err(JoinError::NoSuchThread);
        }
        t.gen.fetch_add(1, Ordering::Relaxed);
        // The thread is dead and off every CPU: nobody runs on its stack.
        t.entry.lock().take();
        let stack = t.ctx.take_stack();
        t.state.store(ThreadState::Free, Ordering::Release);
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

/// Sleeps for at least `d_ns` nanoseconds. The wakeup comes from this CPU's
/// first timer interrupt at or after the deadline (its timer event, the tick
/// or the hrtick), at the latest the timer slack after it for a normal task
/// (`kernel.timer_slack_ns`; none for RT and deadline tasks), through the
/// runqueue with `WakeFlags::IRQ`.
pub fn sleep_ns(d_ns: u64) {
    sleep_until_ns(arch::now_ns().saturating_add(d_ns));
}

/// Sleeps until the clock reads at least `deadline_ns`.
pub fn sleep_until_ns(deadline_ns: u64) {
    while arch::now_ns() < deadline_ns {
        crate::sched::set_current_state(ThreadState::Sleeping);
        arm_timer_and_schedule(deadline_ns);
    }
    crate::sched::set_current_state(ThreadState::Running);
    cancel_timer();
}

/// Sleeps once, for a thread that already marked itself sleeping (a wait
/// queue's `prepare_to_wait`): arms this CPU's timer for `deadline_ns` and
/// schedules. Returns at the deadline or at any earlier wakeup (the wait
/// queue's); the caller tells which and finishes its wait. The timer is
/// cancelled on return. `u64::MAX` arms no timer: only a wakeup ends it.
pub fn sleep_prepared_until_ns(deadline_ns: u64) {
    if deadline_ns == u64::MAX {
        crate::sched::schedule();
        crate::sched::set_current_state(ThreadState::Running);
        return;
    }
    if arch::now_ns() < deadline_ns {
        arm_timer_and_schedule(deadline_ns);
    }
    crate::sched::set_current_state(ThreadState::Running);
    cancel_timer();
}

/// Arms the current thread's wakeup at `deadline_ns` on this CPU's timer
/// list and schedules (the thread is marked sleeping: it blocks unless a
/// wakeup came in the meantime).
fn arm_timer_and_schedule(deadline_ns: u64) {
    let me = current_idx();
    let t = thread(me);
    {
        // Armed on this CPU's list (the CPU is read with interrupts off,
        // under the list lock: no migration in between).
        let irq = arch::IrqGuard::save();
        let cpu = arch::cpu_id();
        // (`timer_cpu` only ever holds a `CpuId`.)
        let old = CpuId::wrapping(t.timer_cpu.load(Ordering::Relaxed) as usize);
        if old != cpu {
            // Woken early on another CPU: drop the timer armed there.
            percpu::cpu(old).timers.lock().remove(me);
        }
        {
            let mut timers = percpu::cpu(cpu).timers.lock();
            timers.add(
                deadline_ns,
                deadline_ns.saturating_add(timer_slack_ns(t)),
                me,
            );
            arch::timer_set_event(timers.earliest());
        }
        t.timer_cpu.store(cpu.as_u32(), Ordering::Relaxed);
        drop(irq);
    }
    crate::sched::schedule();
}

/// How late thread `t`'s timed sleep may end (Linux's `timer_slack_ns`):
/// `kernel.timer_slack_ns` for a normal task (SCHED_NORMAL, BATCH, IDLE),
/// none for an RT or deadline task, as Linux 6.11+ gives those none (its
/// prio below 100, `rt_or_dl_task`; commit ed4fb6d7ef68, "hrtimer: Use and
/// report correct timerslack values for realtime tasks").
fn timer_slack_ns(t: &Thread) -> u64 {
    if t.prio.load(Ordering::Relaxed) < 100 {
        return 0;
    }
    crate::sched::sched_config().tunables.timer_slack_ns()
}

/// Drops the current thread's sleep timer, if still armed.
fn cancel_timer() {
    let me = current_idx();
    // The thread may have moved since: cancel on the CPU that armed it.
    let cpu = CpuId::wrapping(thread(me).timer_cpu.load(Ordering::Relaxed) as usize);
    percpu::cpu(cpu).timers.lock().remove(me);
}

/// Sleep timers armed on every CPU.
pub fn nr_sleepers() -> usize {
    CpuId::range(MAX_CPUS)
        .map(|c| percpu::cpu(c).timers.lock().len())
        .sum()
}

/// Sleeps for at least `d_ms` milliseconds.
pub fn sleep_ms(d_ms: u64) {
    sleep_ns(d_ms.saturating_mul(1_000_000));
}

/// Prints every CPU and every live thread and what the runqueues think of it
/// (a `sysrq-t` style dump for hangs, used by the test watchdog). Never spins
/// on a lock: a runqueue held by someone (maybe the interrupted code) is
/// shown as busy.
pub fn dump_threads() {
    let irqs_off = arch::IrqGuard::save();
    let mut rqs: [Option<sched::SpinMutexGuard<'_, sched::Rq>>; MAX_CPUS] =
        [const { None }; MAX_CPUS];
    for (cpu, slot) in CpuId::range(crate::sched::nr_runqueues()).zip(rqs.iter_mut()) {
        let pc = percpu::cpu(cpu);
        *slot = crate::sched::try_rq(cpu, &irqs_off);
        let rq = slot.as_deref();
        crate::console::emergency_write(format_args!(
            "cpu {} (online {}, this {}): curr {} need_resched {:?} preempt_count {} rq {} curr {:?} nr_running {:?} ticks {} timer events {} interrupts {} ipis {} tickless {} (entered {}) wake list {} polling {} poll_kick {} sleepers (count, earliest ns) {:?} now {}\n",
            cpu,
            pc.online.load(Ordering::Relaxed),
            cpu == arch::cpu_id(),
            pc.curr.load(Ordering::Relaxed),
            pc.need_resched(),
            pc.preempt_count.load(Ordering::Relaxed),
            if rq.is_some() { "free" } else { "LOCKED" },
            rq.and_then(|r| r.curr()),
            rq.map(|r| r.nr_running()),
            pc.ticks.load(Ordering::Relaxed),
            pc.timer_events.load(Ordering::Relaxed),
            pc.interrupts.load(Ordering::Relaxed),
            pc.ipis.load(Ordering::Relaxed),
            pc.nohz_idle.load(Ordering::Relaxed),
            pc.nohz_entries.load(Ordering::Relaxed),
            if crate::sched::wake_list_pending(cpu) { "pending" } else { "empty" },
            pc.polling.load(Ordering::Relaxed),
            pc.poll_kick.load(Ordering::Relaxed),
            pc.timers.try_lock().map(|t| (t.len(), t.earliest())),
            arch::now_ns(),
        ));
    }
    for t in threads() {
        let st = t.state.load(Ordering::Relaxed);
        if st == ThreadState::Free {
            continue;
        }
        let cpu = t.cpu.load(Ordering::Relaxed) as usize;
        let held = rqs
            .get(cpu)
            .and_then(|r| r.as_deref())
            .and_then(|r| r.task(sched::TaskId(t.idx)))
            .map(|s| s.state);
        crate::console::emergency_write(format_args!(
            "  {:3} {:12} cpu {} state {:?} home {:?}{} on_cpu {} waiting {:#x} rq-state {:?} mask {} (nvcsw {} nivcsw {})\n",
            t.idx,
            t.name(),
            cpu,
            st,
            crate::sched::task_cpu(t),
            if crate::sched::task_in_transit(t) { " (in transit)" } else { "" },
            t.on_cpu.load(Ordering::Relaxed),
            t.wq_owner.load(Ordering::Relaxed),
            held,
            t.cpus_allowed.load(Ordering::Relaxed),
            t.nvcsw.load(Ordering::Relaxed),
            t.nivcsw.load(Ordering::Relaxed),
        ));
    }
}
