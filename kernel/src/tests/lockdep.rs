//! The lock validator (the `lockdep` build) on purpose: an order inversion
//! and an interrupt-unsafe class, each of two test-only classes (named
//! `test.*`, so the harness can tell these reports from real ones), must
//! be reported; and the kernel's own lock classes must have been seen.

use kernel_hal::lockdep::{self, Acquire, Key, Kind};

use crate::sync::SpinLock;
use crate::{kassert, ktest};

static LOCK_A: SpinLock<u32> = SpinLock::named("test.lockdep_a", 0);
static LOCK_B: SpinLock<u32> = SpinLock::named("test.lockdep_b", 0);

ktest!(lockdep_reports_an_order_inversion, || {
    let before = lockdep::stats();
    {
        let mut a = LOCK_A.lock();
        let mut b = LOCK_B.lock();
        *a += 1;
        *b += 1;
    }
    kassert!(!lockdep::reported(
        Kind::Inversion,
        "test.lockdep_a",
        "test.lockdep_b"
    ));
    // B then A, one at a time on this CPU: no deadlock now, but two CPUs
    // doing the two orders at once would.
    {
        let mut b = LOCK_B.lock();
        let mut a = LOCK_A.lock();
        *a += 1;
        *b += 1;
    }
    kassert!(
        lockdep::reported(Kind::Inversion, "test.lockdep_a", "test.lockdep_b"),
        "no inversion report for test.lockdep_b -> test.lockdep_a"
    );
    let after = lockdep::stats();
    kassert!(
        after.inversions == before.inversions + 1,
        "{before} -> {after}"
    );
    // Once per pair.
    {
        let _b = LOCK_B.lock();
        let _a = LOCK_A.lock();
    }
    let again = lockdep::stats();
    kassert!(
        again.inversions == after.inversions,
        "reported twice: {again}"
    );
    // The kernel's own locks are validated too.
    for class in ["rq", "wake_list", "heap", "waitqueue", "pi_lock", "timers"] {
        kassert!(lockdep::has_class(class), "class {class} never seen");
    }
    Ok(())
});

static IRQ_KEY: Key = Key::new("test.lockdep_irq");

ktest!(lockdep_reports_an_irq_unsafe_class, || {
    let addr = core::ptr::from_ref(&IRQ_KEY) as usize;
    let irq = crate::arch::IrqGuard::save();
    // Taken inside an interrupt handler (as the tick would)...
    lockdep::irq_enter();
    lockdep::acquire(&IRQ_KEY, addr, Acquire::default());
    lockdep::release(addr);
    lockdep::irq_exit();
    drop(irq);
    kassert!(!lockdep::reported(
        Kind::IrqUnsafe,
        "test.lockdep_irq",
        "test.lockdep_irq"
    ));
    // ...and held with interrupts enabled elsewhere.
    lockdep::acquire(
        &IRQ_KEY,
        addr,
        Acquire {
            irqs_on: true,
            ..Acquire::default()
        },
    );
    lockdep::release(addr);
    kassert!(
        lockdep::reported(Kind::IrqUnsafe, "test.lockdep_irq", "test.lockdep_irq"),
        "no irq-unsafe report"
    );
    Ok(())
});
