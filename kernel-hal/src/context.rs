//! Thread contexts and the context switch, as safe types (the part of
//! Linux's `context_switch` / `switch_to` and `finish_task_switch` that
//! touches registers and stacks).
//!
//! - [`TaskContext`]: a thread's saved registers and the kernel stack it
//!   runs on. It is *empty* (no thread), *ready* (prepared to start, or
//!   saved by a switch away) or *running* (its registers are live on a CPU).
//! - Each CPU records the context it runs ([`TaskContext::adopt`] makes the
//!   code a CPU runs at bring-up its first one), so [`switch_to`] always
//!   saves the running registers into the running thread's own context,
//!   and only a ready context can be switched to: no context runs on two
//!   CPUs, none is entered before it was saved or prepared, and its stack
//!   cannot be taken back while it runs.
//! - [`switch_to`] hands the lock the caller holds across the switch (the
//!   runqueue's: [`SwitchLock`]) to the thread switched to, which ends the
//!   hand-over with [`finish_switch`] (a fresh thread first thing).
//!
//! Interrupts stay masked across the switch: [`switch_to`] asks for an
//! [`IrqGuard`] as proof.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

use crate::arch;
use crate::cpu::IrqGuard;
use crate::stack::KernelStack;
use crate::MAX_CPUS;

/// No thread: nothing to switch to.
const EMPTY: u8 = 0;
/// Saved by a switch away, or prepared to start: may be switched to.
const READY: u8 = 1;
/// Its registers are live on a CPU.
const RUNNING: u8 = 2;

/// A thread's saved registers and its kernel stack.
pub struct TaskContext {
    /// Written by the switch away from this context (on the CPU it runs on)
    /// and by [`TaskContext::prepare`] (empty); read by the switch to it
    /// (ready). `state` orders the two.
    regs: UnsafeCell<arch::Context>,
    state: AtomicU8,
    /// The stack it runs on (none for a CPU's first context, which runs on
    /// a stack of its own). Read with `try_lock` by the canary check.
    stack: sched::SpinMutex<Option<KernelStack>>,
}

// SAFETY: `regs` is touched by one CPU at a time, as `state` decides: the
// one preparing it (EMPTY, under the stack lock), the one it runs on when
// switching away from it (RUNNING, that CPU's recorded current context),
// or the one switching to it (the CAS READY -> RUNNING, which one CPU wins).
unsafe impl Sync for TaskContext {}

impl Default for TaskContext {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TaskContext")
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl TaskContext {
    /// An empty context.
    pub const fn new() -> Self {
        TaskContext {
            regs: UnsafeCell::new(arch::Context::new()),
            state: AtomicU8::new(EMPTY),
            stack: sched::SpinMutex::named("thread.stack", None),
        }
    }

    /// Makes this the context of the code running now on this CPU (its
    /// first: the boot code or a secondary CPU's bring-up, which becomes
    /// its idle thread); its registers are saved at the first switch away.
    /// Once per CPU: false, and nothing changes, when this CPU has a
    /// context already or this one is not empty.
    pub fn adopt(&'static self) -> bool {
        let _irqs_off = IrqGuard::save();
        let slot = &CPUS[arch::cpu_id().index()];
        if !slot.current.load(Ordering::Relaxed).is_null() {
            return false;
        }
        if self
            .state
            .compare_exchange(EMPTY, RUNNING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        slot.current
            .store(ptr::from_ref(self).cast_mut(), Ordering::Relaxed);
        true
    }

    /// Prepares an empty context so that the first switch to it runs
    /// `entry(arg)` on `stack`, with interrupts masked and the lock handed
    /// over (the entry calls [`finish_switch`] first). Gives the stack back
    /// if the context is not empty.
    pub fn prepare(
        &self,
        stack: KernelStack,
        entry: extern "C" fn(usize) -> !,
        arg: usize,
    ) -> Result<(), KernelStack> {
        let mut slot = self.stack.lock();
        if self.state.load(Ordering::Acquire) != EMPTY || slot.is_some() {
            return Err(stack);
        }
        // An empty context is not running and cannot be switched to
        // (`switch_to` wants it ready), and its stack lock is held, so no
        // other `prepare` runs: nothing else touches `regs`. `stack` is
        // owned by this context from here on and outlives every switch to
        // it (`take_stack` refuses while it runs).
        // SAFETY: `regs` is exclusively ours and `stack` outlives it (above).
        unsafe { arch::init_thread_context(&mut *self.regs.get(), stack.top(), entry, arg) };
        *slot = Some(stack);
        self.state.store(READY, Ordering::Release);
        Ok(())
    }

    /// Takes the stack back from a context that no longer runs (a thread
    /// that exited and was switched away from, or one never started): the
    /// context becomes empty. `None` while it runs, or when it has none.
    pub fn take_stack(&self) -> Option<KernelStack> {
        let mut slot = self.stack.lock();
        self.state
            .compare_exchange(READY, EMPTY, Ordering::AcqRel, Ordering::Relaxed)
            .ok()?;
        slot.take()
    }

    /// Whether the canary at the bottom of its stack is intact (true
    /// without a stack, or while another CPU holds the stack's lock: it
    /// never waits).
    #[inline]
    pub fn stack_intact(&self, canary: u128) -> bool {
        self.stack
            .try_lock()
            .is_none_or(|s| s.as_ref().is_none_or(|s| s.canary_intact(canary)))
    }

    /// Its registers are live on a CPU.
    pub fn is_running(&self) -> bool {
        self.state.load(Ordering::Acquire) == RUNNING
    }
}

/// A CPU's switch state: the context it runs, the one it just switched
/// away from, and the lock handed over across that switch.
#[repr(align(64))]
struct CpuSwitch {
    current: AtomicPtr<TaskContext>,
    prev: AtomicPtr<TaskContext>,
    /// The `spin::Mutex<T>` handed over (null: none) and its unlock
    /// function (an `unlock_erased::<T>`).
    held: AtomicPtr<()>,
    unlock: AtomicPtr<()>,
}

static CPUS: [CpuSwitch; MAX_CPUS] = [const {
    CpuSwitch {
        current: AtomicPtr::new(ptr::null_mut()),
        prev: AtomicPtr::new(ptr::null_mut()),
        held: AtomicPtr::new(ptr::null_mut()),
        unlock: AtomicPtr::new(ptr::null_mut()),
    }
}; MAX_CPUS];

/// A lock held across a context switch: locked here, released by the
/// thread switched to ([`finish_switch`]), or on drop if no switch came.
pub struct SwitchLock<T: 'static> {
    lock: &'static spin::Mutex<T>,
    guard: spin::MutexGuard<'static, T>,
}

impl<T: 'static> SwitchLock<T> {
    /// Takes `lock`, spinning with [`crate::cpu::cpu_relax`] as the
    /// kernel's other spin-waits do: under QEMU's round-robin TCG its
    /// `yield` hands the turn to the next vCPU, where `spin`'s own loop
    /// (`isb` on aarch64) keeps it while the holder waits for one.
    /// Mask interrupts first.
    #[inline]
    pub fn lock(lock: &'static spin::Mutex<T>) -> Self {
        let guard = loop {
            if let Some(g) = lock.try_lock() {
                break g;
            }
            while lock.is_locked() {
                crate::cpu::cpu_relax();
            }
        };
        SwitchLock { lock, guard }
    }
}

impl<T: 'static> Deref for SwitchLock<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: 'static> DerefMut for SwitchLock<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// Releases a `spin::Mutex<T>` given as an erased pointer.
///
/// # Safety
/// `p` must point to a live `spin::Mutex<T>` that is locked, whose guard
/// was forgotten by [`switch_to`], and that nothing else will release.
unsafe fn unlock_erased<T>(p: *const ()) {
    // SAFETY: as the caller promises.
    unsafe { (*p.cast::<spin::Mutex<T>>()).force_unlock() };
}

/// Switches from this CPU's current context to `next`, which must be ready
/// (a context being switched away from on another CPU is waited for),
/// handing `held` to the thread switched to. Returns when the current
/// context is switched back in (on any CPU, whose hand-over the caller then
/// ends with [`finish_switch`]); never for a context nobody switches back
/// to (an exited thread).
///
/// # Panics
/// If this CPU has no context ([`TaskContext::adopt`]), if `next` is the
/// current one, or if `next` is empty.
#[inline]
pub fn switch_to<T: 'static>(
    next: &'static TaskContext,
    held: SwitchLock<T>,
    _irqs_off: &IrqGuard,
) {
    let slot = &CPUS[arch::cpu_id().index()];
    let prev = slot.current.load(Ordering::Relaxed);
    assert!(!prev.is_null(), "context switch on a CPU without a context");
    assert!(
        !ptr::eq(prev, next),
        "context switch to the running context"
    );
    loop {
        match next
            .state
            .compare_exchange(READY, RUNNING, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => break,
            // Still being switched away from on another CPU.
            Err(RUNNING) => crate::cpu::cpu_relax(),
            Err(_) => panic!("context switch to an empty context"),
        }
    }
    let SwitchLock { lock, guard } = held;
    core::mem::forget(guard);
    slot.held.store(
        ptr::from_ref(lock).cast::<()>().cast_mut(),
        Ordering::Relaxed,
    );
    slot.unlock.store(
        unlock_erased::<T> as *const () as *mut (),
        Ordering::Relaxed,
    );
    slot.prev.store(prev, Ordering::Relaxed);
    slot.current
        .store(ptr::from_ref(next).cast_mut(), Ordering::Relaxed);
    // Interrupts are masked (`_irqs_off`). `prev` is this CPU's running
    // context (recorded by `adopt` or the switch that entered it), so its
    // registers are the ones saved; it stays RUNNING (nobody else switches
    // to it or takes its stack) until the thread switched to marks it ready
    // in `finish_switch`. `next` was ready and this CPU won it (RUNNING
    // now): its registers were saved by a completed switch or set by
    // `prepare`, on the stack it owns.
    // SAFETY: both register blocks are owned by this CPU's switch (above).
    unsafe { arch::switch_context((*prev).regs.get(), next.regs.get()) };
}

/// The end of a switch, on the side of the thread switched to: the context
/// switched away from is saved (ready: another CPU may switch to it now),
/// and the lock handed over is released when the returned value drops.
#[must_use = "the lock handed over is released when this is dropped"]
#[inline]
pub fn finish_switch() -> HandedOver {
    let slot = &CPUS[arch::cpu_id().index()];
    // Only this CPU touches its slot, with interrupts masked: plain loads
    // and stores (no locked read-modify-write).
    let prev = take(&slot.prev);
    // SAFETY: `prev` was this CPU's current context, a `&'static` given to
    // `adopt` or `switch_to`.
    if let Some(prev) = unsafe { prev.as_ref() } {
        prev.state.store(READY, Ordering::Release);
    }
    HandedOver {
        held: take(&slot.held),
        unlock: take(&slot.unlock),
        _cpu_local: core::marker::PhantomData,
    }
}

/// The pointer in `p`, leaving null (this CPU's slot only).
#[inline]
fn take<T>(p: &AtomicPtr<T>) -> *mut T {
    let v = p.load(Ordering::Relaxed);
    p.store(ptr::null_mut(), Ordering::Relaxed);
    v
}

/// The lock a switch handed over; released on drop.
pub struct HandedOver {
    held: *mut (),
    unlock: *mut (),
    _cpu_local: core::marker::PhantomData<*const ()>,
}

impl Drop for HandedOver {
    #[inline]
    fn drop(&mut self) {
        if self.held.is_null() {
            return;
        }
        // SAFETY: `unlock` was stored by `switch_to` beside `held` as
        // `unlock_erased::<T>` for the `spin::Mutex<T>` at `held`, an
        // `unsafe fn(*const ())`.
        let unlock: unsafe fn(*const ()) = unsafe { core::mem::transmute(self.unlock) };
        // SAFETY: `held` is the lock `switch_to` forgot the guard of; this
        // CPU's slot gave it to exactly one `HandedOver`, this one.
        unsafe { unlock(self.held) };
    }
}

// The states refuse what would be unsound: a CPU adopts one context only
// (the running test's CPU has its idle thread's), a ready context cannot
// be prepared again, and its stack comes back once, leaving it empty.
crate::ktest!(task_context_refuses_a_second_adopt_prepare_or_take, || {
    static CTX: TaskContext = TaskContext::new();
    extern "C" fn never(_: usize) -> ! {
        panic!("a context prepared by the test was switched to");
    }
    let stack = |owner| KernelStack::new(owner).map_err(|_| "no memory for a stack");
    crate::kassert!(!CTX.adopt(), "a second context adopted on this CPU");
    crate::kassert!(CTX.prepare(stack(0xfff0)?, never, 0).is_ok());
    crate::kassert!(!CTX.is_running());
    crate::kassert!(
        CTX.prepare(stack(0xfff1)?, never, 0).is_err(),
        "a ready context prepared again"
    );
    crate::kassert!(CTX.take_stack().is_some());
    crate::kassert!(CTX.take_stack().is_none(), "a stack taken twice");
    crate::kassert!(CTX.prepare(stack(0xfff2)?, never, 0).is_ok());
    crate::kassert!(CTX.take_stack().is_some());
    Ok(())
});
