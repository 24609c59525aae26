//! The ARM generic timer: the EL1 virtual timer (CNTV) as the periodic tick, and the
//! virtual counter (CNTVCT_EL0 at CNTFRQ_EL0 Hz) as the monotonic clock.
//!
//! The tick is programmed with absolute compare values (`CNTV_CVAL_EL0` += period),
//! so handler latency does not make the tick drift; after a long stall (missed
//! ticks) the next deadline is one period from now instead of a burst of catch-up
//! interrupts.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{
    Readable, Writeable, CNTFRQ_EL0, CNTVCT_EL0, CNTV_CTL_EL0, CNTV_CVAL_EL0,
};

const NS_PER_S: u64 = 1_000_000_000;

/// Counter frequency in Hz (62.5 MHz on QEMU 7.2).
static FREQ_HZ: AtomicU64 = AtomicU64::new(0);
/// Counter value at [`init_clock`]: `now_ns()` counts from here.
static BOOT_COUNT: AtomicU64 = AtomicU64::new(0);
/// Tick period in counter cycles; 0 while the tick is off.
static PERIOD_CYCLES: AtomicU64 = AtomicU64::new(0);
/// GIC INTID of the virtual timer.
static INTID: AtomicU32 = AtomicU32::new(27);

/// Reads the virtual counter (`isb` first, so it is not read early).
fn counter() -> u64 {
    barrier::isb(barrier::SY);
    CNTVCT_EL0.get()
}

/// Records the counter frequency and the boot time origin.
pub fn init_clock() {
    let freq = CNTFRQ_EL0.get();
    // A zero CNTFRQ means broken firmware; assume QEMU's 62.5 MHz rather than divide by 0.
    FREQ_HZ.store(if freq == 0 { 62_500_000 } else { freq }, Ordering::Relaxed);
    BOOT_COUNT.store(counter(), Ordering::Relaxed);
}

/// Counter frequency in Hz.
pub fn frequency_hz() -> u64 {
    FREQ_HZ.load(Ordering::Relaxed)
}

/// Sets the INTID the timer interrupt arrives on (from the device tree).
pub fn set_irq(intid: u32) {
    INTID.store(intid, Ordering::Relaxed);
}

/// The timer's INTID.
pub fn intid() -> u32 {
    INTID.load(Ordering::Relaxed)
}

/// Monotonic nanoseconds since [`init_clock`].
pub fn now_ns() -> u64 {
    let freq = FREQ_HZ.load(Ordering::Relaxed);
    if freq == 0 {
        return 0;
    }
    let cycles = counter().wrapping_sub(BOOT_COUNT.load(Ordering::Relaxed));
    // Split to avoid overflow without 128-bit division: exact for freq < 18 GHz.
    cycles / freq * NS_PER_S + cycles % freq * NS_PER_S / freq
}

/// Starts the periodic tick at `hz` on this CPU: programs CNTV and enables its PPI.
pub fn timer_start(hz: u32) {
    assert!(hz > 0, "timer_start: hz must be positive");
    let period = (FREQ_HZ.load(Ordering::Relaxed) / u64::from(hz)).max(1);
    PERIOD_CYCLES.store(period, Ordering::Relaxed);
    CNTV_CVAL_EL0.set(counter() + period);
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
    super::gic::enable(intid());
}

/// Programs the next deadline; called from the IRQ handler before EOI (the timer's
/// level-triggered output drops once the compare value is in the future).
pub fn reload() {
    let period = PERIOD_CYCLES.load(Ordering::Relaxed);
    if period == 0 {
        CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR + CNTV_CTL_EL0::IMASK::SET);
        return;
    }
    let now = counter();
    let mut next = CNTV_CVAL_EL0.get().wrapping_add(period);
    if next <= now {
        next = now + period;
    }
    CNTV_CVAL_EL0.set(next);
}
