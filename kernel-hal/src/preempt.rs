//! [`PreemptGuard`]: preemption off as a scope. The preempt count is the
//! kernel's (its per-CPU block); the guard reaches it through the
//! [`Hooks`](crate::hooks::Hooks).

use crate::hooks;

/// Preemption disabled on this CPU until the guard is dropped
/// (`preempt_disable` / `preempt_enable` as a scope; nests). The
/// thread stays on this CPU meanwhile.
#[must_use = "preemption is re-enabled when the guard is dropped"]
pub struct PreemptGuard {
    /// Whether `new` counted (the hooks were registered): only then does
    /// the drop uncount.
    counted: bool,
    _cpu_local: core::marker::PhantomData<*const ()>,
}

impl PreemptGuard {
    /// Disables preemption.
    #[inline]
    #[allow(clippy::new_without_default)] // a guard is made on purpose, never by default
    pub fn new() -> Self {
        let hooks = hooks::get();
        if let Some(h) = hooks {
            h.preempt_disable();
        }
        PreemptGuard {
            counted: hooks.is_some(),
            _cpu_local: core::marker::PhantomData,
        }
    }
}

impl Drop for PreemptGuard {
    #[inline]
    fn drop(&mut self) {
        if let Some(h) = hooks::get().filter(|_| self.counted) {
            h.preempt_enable();
        }
    }
}
