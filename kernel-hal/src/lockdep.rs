//! The lock validator's seam (the `lockdep` feature): the `lockdep`
//! crate's checks, told this CPU's id, whether it runs an interrupt
//! handler and whether interrupts stay on; [`SpinLock`](crate::sync::SpinLock)s
//! and the `sched` crate's runqueue, wake-list and task-cell locks report to
//! it. Without the feature every call here is empty.
//!
//! What is tracked and what is not, and the report format:
//! docs/design/lockdep.md.

#[cfg(feature = "lockdep")]
pub use lockdep::{Acquire, Key, Kind, Stats};

/// Runs `f` with interrupts off: the validator's graph lock is also taken
/// by lock operations in interrupt handlers.
#[cfg(feature = "lockdep")]
fn irqs_off<R>(f: impl FnOnce() -> R) -> R {
    let irq = crate::cpu::irq_save();
    let r = f();
    crate::cpu::irq_restore(irq);
    r
}

/// The validator's counters ([`lockdep::stats`]).
#[cfg(feature = "lockdep")]
pub fn stats() -> Stats {
    irqs_off(lockdep::stats)
}

/// Whether a report of `kind` named classes `a` and `b` ([`lockdep::reported`]).
#[cfg(feature = "lockdep")]
pub fn reported(kind: Kind, a: &str, b: &str) -> bool {
    irqs_off(|| lockdep::reported(kind, a, b))
}

/// Whether a class named `name` was seen ([`lockdep::has_class`]).
#[cfg(feature = "lockdep")]
pub fn has_class(name: &str) -> bool {
    irqs_off(|| lockdep::has_class(name))
}

#[cfg(feature = "lockdep")]
mod on {
    use core::panic::Location;
    use core::sync::atomic::AtomicU16;

    use crate::cpu as arch_cpu;

    /// The `sched` crate's locks report here.
    struct SchedLocks;

    impl sched::LockEvents for SchedLocks {
        fn acquire(
            &self,
            site: &'static Location<'static>,
            name: &'static str,
            class: &AtomicU16,
            addr: usize,
            trylock: bool,
            nested: bool,
        ) {
            let irqs_on = arch_cpu::irqs_enabled();
            let irq = arch_cpu::irq_save();
            lockdep::acquire_site(
                site,
                name,
                class,
                addr,
                crate::arch::cpu_id(),
                lockdep::Acquire {
                    trylock,
                    nested,
                    irqs_on,
                },
            );
            arch_cpu::irq_restore(irq);
        }

        fn release(&self, addr: usize) {
            super::release(addr);
        }
    }

    static SCHED_LOCKS: SchedLocks = SchedLocks;

    /// Starts validating: reports go to `sink`, the `sched` crate's locks
    /// report here. Call once this CPU's id is valid (after `early_init`).
    pub fn enable(sink: fn(core::fmt::Arguments)) {
        lockdep::set_sink(sink);
        sched::set_lock_events(&SCHED_LOCKS);
        lockdep::enable();
        log::info!(
            "lockdep: lock validator on ({} classes, {} dependencies, {} locks per CPU at most)",
            lockdep::MAX_CLASSES,
            lockdep::MAX_EDGES,
            lockdep::MAX_DEPTH
        );
    }
}

#[cfg(feature = "lockdep")]
pub use on::enable;

/// Whether this kernel validates locks.
pub const ENABLED: bool = cfg!(feature = "lockdep");

/// The lock at `addr` of class `key` is about to be waited for (or, with
/// `how.trylock`, was just taken), with interrupts already off.
#[cfg(feature = "lockdep")]
#[inline]
pub fn acquire(key: &Key, addr: usize, how: Acquire) {
    irqs_off(|| lockdep::acquire(key, addr, crate::arch::cpu_id(), how));
}

/// The lock at `addr` is released (or handed to the next thread's
/// `finish_task_switch`, which releases it).
#[inline]
#[allow(unused_variables)]
pub fn release(addr: usize) {
    #[cfg(feature = "lockdep")]
    irqs_off(|| lockdep::release(addr, crate::arch::cpu_id()));
}

/// This CPU enters an interrupt handler (the hooks call it around the
/// handlers' bodies).
#[inline]
pub fn irq_enter() {
    #[cfg(feature = "lockdep")]
    lockdep::irq_enter(crate::arch::cpu_id());
}

/// This CPU leaves an interrupt handler.
#[inline]
pub fn irq_exit() {
    #[cfg(feature = "lockdep")]
    lockdep::irq_exit(crate::arch::cpu_id());
}

/// Stops validating (a fault report or panic is on its way).
#[inline]
pub fn disable() {
    #[cfg(feature = "lockdep")]
    lockdep::disable();
}
