//! The one way up: the calls this crate and the arch code make into the
//! kernel above it, as one trait the kernel implements and [`register`]s
//! at boot.
//!
//! This crate never names the kernel crate; what it needs from generic code
//! it asks through [`Hooks`], and the arch code calls the free functions
//! below, which forward to the registered hooks. Before [`register`] every
//! call does nothing and answers as at boot (no thread, no stack owner, no
//! backtrace): the kernel registers first thing, before interrupts are on.
//! The arch-facing calls run with interrupts disabled, on the stack of the
//! interrupted (or faulting) thread.

use core::fmt;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

use crate::addr::VirtAddr;
use crate::cpu::CpuId;
use crate::cpumask::CpuMask;

/// What an inter-processor interrupt asks of its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpiKind {
    /// Run the scheduler: a wakeup was queued or need-resched was set remotely.
    Reschedule,
    /// Run the queued cross-CPU function calls.
    Call,
}

/// Whose stack a guard page protects, for fault reports ("... below the
/// stack of {owner}").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackOwner {
    /// A thread: slot index and name.
    Thread(u32, &'static str),
    /// A CPU's exception stack (x86_64: the page/double-fault IST stack;
    /// aarch64: the stack-overflow emergency stack).
    ExceptionStack(CpuId),
    /// The boot stack (the boot CPU before its idle thread left it).
    BootStack,
    /// A CPU's idle stack before its idle thread was set up (bring-up).
    IdleUnstarted(CpuId),
    /// The stack a secondary CPU starts on, before its idle thread's.
    Bringup(CpuId),
    /// A slot nobody owns (freed).
    Nobody,
}

impl fmt::Display for StackOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StackOwner::Thread(tid, name) => write!(f, "thread '{name}' (tid {tid})"),
            StackOwner::ExceptionStack(cpu) => write!(f, "cpu {cpu}'s exception stack"),
            StackOwner::BootStack => write!(f, "the boot code (cpu 0's boot stack)"),
            StackOwner::Bringup(cpu) => write!(f, "cpu {cpu}'s bring-up code"),
            StackOwner::IdleUnstarted(cpu) => {
                write!(f, "cpu {cpu}'s bring-up code (its idle stack)")
            }
            StackOwner::Nobody => write!(f, "a freed stack"),
        }
    }
}

/// What the kernel provides to the hardware layer.
pub trait Hooks: Sync {
    /// A preemption point in thread context (the end of a spinlocked
    /// section, the last `preempt_enable`): switch threads if an immediate
    /// reschedule is pending and preemption is allowed. Returns at once with
    /// interrupts disabled.
    fn preempt_check_resched(&self);
    /// Disables preemption on this CPU (nests).
    fn preempt_disable(&self);
    /// Re-enables preemption; the last one is a preemption point.
    fn preempt_enable(&self);

    /// The timer interrupt, on every tick, after it was acknowledged: the
    /// scheduler tick, sleeper wakeups, the test watchdog.
    fn timer_interrupt(&self);
    /// A timer event that is not a tick (`timer_set_event`): wakes the
    /// sleepers whose time came.
    fn timer_event(&self);
    /// The scheduler's hrtick came (`timer_set_hrtick`): the running
    /// task's slice may have ended (before `timer_interrupt` when both are
    /// due).
    fn hrtick(&self);
    /// The end of every interrupt handler, before the interrupted context is
    /// restored: switches threads when preemption is allowed and a pending
    /// reschedule asks for it at this return (the kernel decides, from what
    /// the interrupted thread was running: its modelled user code or kernel
    /// code; preemption on return from interrupt).
    fn irq_exit(&self);
    /// The console UART's receive interrupt (before the acknowledge or EOI,
    /// then `irq_exit`): moves the received bytes into the console's ring.
    fn console_rx(&self);
    /// An IPI (after the acknowledge, before `irq_exit`).
    fn ipi(&self, kind: IpiKind);
    /// The thread running on this CPU as (slot index, name), for fault
    /// reports. Takes no locks.
    fn current_thread(&self) -> (Option<u32>, &'static str);
    /// If `addr` lies in the unmapped guard below a kernel stack: whose
    /// stack that is. Takes no locks.
    fn stack_guard_owner(&self, addr: VirtAddr) -> Option<StackOwner>;
    /// A guarded kernel stack for secondary CPU `cpu` to start on: its top,
    /// or `None` (the arch layer then uses a heap block). Boot CPU.
    fn bringup_stack(&self, cpu: CpuId) -> Option<VirtAddr>;
    /// A secondary CPU's arch bring-up set up its traps, still on the stack
    /// it started on.
    fn secondary_arch_up(&self, cpu: CpuId);
    /// A fault report begins: keep ordinary console output out of it.
    fn report_begin(&self);
    /// A fault report is complete, before the run ends.
    fn fault_reported(&self);
    /// Return addresses from the frame-pointer chain at `fp` on the kernel
    /// stack that holds `sp`, at most `out.len()`; how many were written.
    /// Takes no locks.
    fn backtrace(&self, sp: VirtAddr, fp: VirtAddr, out: &mut [usize]) -> usize;
    /// Prints without taking the console lock (panic and fault paths).
    fn emergency_write(&self, args: fmt::Arguments);
    /// The CPUs online in the scheduler (the arch's own tests check their
    /// per-CPU state on each).
    fn online_mask(&self) -> CpuMask;
}

/// The registered hooks: a thin pointer to the kernel's `&'static dyn
/// Hooks` (one load on every lock release and interrupt exit, no `Once`
/// state to check), null before [`register`].
static HOOKS: AtomicPtr<&'static dyn Hooks> = AtomicPtr::new(ptr::null_mut());

/// Installs the kernel's hooks, once (boot CPU, first thing); later calls
/// change nothing. Takes a reference to a `static` holding them, e.g.
/// `static HOOKS: &dyn Hooks = &MyHooks;`, so one word names them.
pub fn register(hooks: &'static &'static dyn Hooks) {
    let p = ptr::from_ref(hooks).cast_mut();
    let _ = HOOKS.compare_exchange(ptr::null_mut(), p, Ordering::Release, Ordering::Relaxed);
}

/// The registered hooks, `None` before [`register`].
#[inline]
pub(crate) fn get() -> Option<&'static dyn Hooks> {
    let p = HOOKS.load(Ordering::Acquire);
    // SAFETY: `p` is null or came from the `&'static &'static dyn Hooks`
    // given to `register`, which lives (unchanged) for the kernel's lifetime.
    unsafe { p.as_ref() }.copied()
}

/// See [`Hooks::timer_interrupt`].
#[inline]
pub fn timer_interrupt() {
    if let Some(h) = get() {
        crate::lockdep::irq_enter();
        h.timer_interrupt();
        crate::lockdep::irq_exit();
    }
}

/// See [`Hooks::timer_event`].
#[inline]
pub fn timer_event() {
    if let Some(h) = get() {
        crate::lockdep::irq_enter();
        h.timer_event();
        crate::lockdep::irq_exit();
    }
}

/// See [`Hooks::hrtick`].
#[inline]
pub fn hrtick() {
    if let Some(h) = get() {
        h.hrtick();
    }
}

/// See [`Hooks::irq_exit`].
#[inline]
pub fn irq_exit() {
    if let Some(h) = get() {
        h.irq_exit();
    }
}

/// See [`Hooks::console_rx`].
#[inline]
pub fn console_rx() {
    if let Some(h) = get() {
        crate::lockdep::irq_enter();
        h.console_rx();
        crate::lockdep::irq_exit();
    }
}

/// See [`Hooks::ipi`].
#[inline]
pub fn ipi(kind: IpiKind) {
    if let Some(h) = get() {
        crate::lockdep::irq_enter();
        h.ipi(kind);
        crate::lockdep::irq_exit();
    }
}

/// See [`Hooks::current_thread`]; `(None, "boot")` before [`register`].
#[inline]
pub fn current_thread() -> (Option<u32>, &'static str) {
    get().map_or((None, "boot"), |h| h.current_thread())
}

/// See [`Hooks::stack_guard_owner`].
#[inline]
pub fn stack_guard_owner(addr: VirtAddr) -> Option<StackOwner> {
    get().and_then(|h| h.stack_guard_owner(addr))
}

/// See [`Hooks::bringup_stack`].
#[allow(dead_code)] // arches whose CPUs start on the caller's stack (x86_64) do not ask
#[inline]
pub fn bringup_stack(cpu: CpuId) -> Option<VirtAddr> {
    get().and_then(|h| h.bringup_stack(cpu))
}

/// See [`Hooks::secondary_arch_up`].
#[inline]
pub fn secondary_arch_up(cpu: CpuId) {
    if let Some(h) = get() {
        h.secondary_arch_up(cpu);
    }
}

/// See [`Hooks::report_begin`].
#[inline]
pub fn report_begin() {
    crate::lockdep::disable();
    if let Some(h) = get() {
        h.report_begin();
    }
}

/// See [`Hooks::fault_reported`].
#[inline]
pub fn fault_reported() {
    if let Some(h) = get() {
        h.fault_reported();
    }
}

/// See [`Hooks::backtrace`]; 0 before [`register`].
#[inline]
pub fn backtrace(sp: VirtAddr, fp: VirtAddr, out: &mut [usize]) -> usize {
    get().map_or(0, |h| h.backtrace(sp, fp, out))
}

/// See [`Hooks::emergency_write`].
#[inline]
pub fn emergency_write(args: fmt::Arguments) {
    if let Some(h) = get() {
        h.emergency_write(args);
    }
}

/// See [`Hooks::online_mask`]; empty before [`register`].
#[inline]
pub fn online_mask() -> CpuMask {
    get().map_or(CpuMask::new(), |h| h.online_mask())
}
