//! The ARM generic timer: the EL1 virtual timer (CNTV) as the periodic tick and
//! the one-shot timer event, and the virtual counter (CNTVCT_EL0 at CNTFRQ_EL0 Hz)
//! as the monotonic clock.
//!
//! Each CPU keeps two absolute deadlines in counter cycles: its next tick and
//! its next timer event (the earliest sleeper, [`timer_set_event`]); the
//! comparator (`CNTV_CVAL_EL0`) holds the earlier. Ticks advance by whole
//! periods from the previous deadline, so handler latency does not make them
//! drift; after a long stall (missed ticks) the next tick is one period from
//! now instead of a burst of catch-up interrupts.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::arch::MAX_CPUS;

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
/// Per CPU: counter value of the next tick (0 while the tick is off).
static NEXT_TICK: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];
/// Per CPU: counter value of the next timer event (`u64::MAX`: none).
static NEXT_EVENT: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(u64::MAX) }; MAX_CPUS];
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
    NEXT_TICK[super::cpu_id()].store(counter() + period, Ordering::Relaxed);
    program();
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
    super::gic::enable(intid());
}

/// Loads this CPU's comparator with the earlier of its next tick and its
/// next event. Interrupts off.
fn program() {
    let cpu = super::cpu_id();
    let tick = NEXT_TICK[cpu].load(Ordering::Relaxed);
    let event = NEXT_EVENT[cpu].load(Ordering::Relaxed);
    let tick = if tick == 0 { u64::MAX } else { tick };
    CNTV_CVAL_EL0.set(tick.min(event));
}

/// Asks for a timer interrupt on this CPU at `deadline_ns` (`now_ns` time) or
/// soon after, besides the tick; `None` cancels. The handler then calls
/// `hooks::timer_event()` unless a tick is due (which does the same work).
/// Interrupts off.
pub fn timer_set_event(deadline_ns: Option<u64>) {
    let cycles = match deadline_ns {
        None => u64::MAX,
        Some(ns) => {
            let freq = u128::from(FREQ_HZ.load(Ordering::Relaxed));
            let c = u128::from(ns) * freq / u128::from(NS_PER_S);
            BOOT_COUNT
                .load(Ordering::Relaxed)
                .saturating_add(u64::try_from(c).unwrap_or(u64::MAX))
        }
    };
    // Unchanged (the common case at a tick with no sleeper): the comparator
    // already covers it.
    if NEXT_EVENT[super::cpu_id()].swap(cycles, Ordering::Relaxed) != cycles {
        program();
    }
}

/// Stops this CPU's tick (tickless idle); timer events still fire.
/// Interrupts off.
pub fn timer_stop_tick() {
    NEXT_TICK[super::cpu_id()].store(0, Ordering::Relaxed);
    program();
}

/// Restarts this CPU's tick one period from now. Interrupts off.
pub fn timer_restart_tick() {
    let period = PERIOD_CYCLES.load(Ordering::Relaxed);
    if period != 0 {
        NEXT_TICK[super::cpu_id()].store(counter() + period, Ordering::Relaxed);
        program();
    }
}

/// From the IRQ handler before EOI: consumes what is due and reprograms the
/// comparator (the timer's level-triggered output drops once the compare
/// value is in the future). Returns whether a tick is due; otherwise the
/// interrupt is a timer event.
pub fn reload() -> bool {
    let period = PERIOD_CYCLES.load(Ordering::Relaxed);
    let cpu = super::cpu_id();
    let now = counter();
    let tick = NEXT_TICK[cpu].load(Ordering::Relaxed);
    let tick_due = period != 0 && tick != 0 && now >= tick;
    if tick_due {
        let mut next = tick.wrapping_add(period);
        if next <= now {
            next = now + period;
        }
        NEXT_TICK[cpu].store(next, Ordering::Relaxed);
    }
    if now >= NEXT_EVENT[cpu].load(Ordering::Relaxed) {
        NEXT_EVENT[cpu].store(u64::MAX, Ordering::Relaxed);
    }
    if period == 0 && NEXT_EVENT[cpu].load(Ordering::Relaxed) == u64::MAX {
        CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR + CNTV_CTL_EL0::IMASK::SET);
        return false;
    }
    program();
    tick_due
}
