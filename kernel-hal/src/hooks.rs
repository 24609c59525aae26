//! The one way up: the calls this crate makes into the kernel above it,
//! as one trait the kernel implements and [`register`]s at boot.
//!
//! This crate never names the kernel crate; what it needs from generic code
//! (the scheduler's preemption points, today) it asks through [`Hooks`].
//! Before [`register`] every call is a no-op: nothing can be preempted before
//! the scheduler exists.

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
}

static HOOKS: spin::Once<&'static dyn Hooks> = spin::Once::new();

/// Installs the kernel's hooks, once (boot CPU, first thing); later calls
/// change nothing.
pub fn register(hooks: &'static dyn Hooks) {
    HOOKS.call_once(|| hooks);
}

/// The registered hooks, `None` before [`register`].
#[inline]
pub(crate) fn get() -> Option<&'static dyn Hooks> {
    HOOKS.get().copied()
}
