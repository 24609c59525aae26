//! The ARM generic timer: the EL1 virtual timer (CNTV) as the periodic tick and
//! the one-shot timer event, and the virtual counter (CNTVCT_EL0 at CNTFRQ_EL0 Hz)
//! as the monotonic clock.
//!
//! Each CPU's next tick, next timer event (the earliest sleeper,
//! [`timer_set_event`]) and next scheduler hrtick ([`timer_set_hrtick`]) are
//! kept in counter cycles by
//! [`TimerDeadlines`]; the comparator
//! (`CNTV_CVAL_EL0`) holds the earliest, or an earlier moment still ahead
//! (a later deadline does not move it: [`program_if_earlier`]).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::arch::deadlines::{TimerDeadlines, TimerDue};
use crate::cpu::CpuId;

use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{
    Readable, Writeable, CNTFRQ_EL0, CNTVCT_EL0, CNTV_CTL_EL0, CNTV_CVAL_EL0,
};

const NS_PER_S: u64 = 1_000_000_000;

/// Counter frequency in Hz (62.5 MHz on QEMU 7.2).
static FREQ_HZ: AtomicU64 = AtomicU64::new(0);
/// Counter value at [`init_clock`]: `now_ns()` counts from here.
static BOOT_COUNT: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds per counter cycle when that is a whole number (QEMU's 62.5
/// MHz: 16), else 0. [`now_ns`] then multiplies instead of dividing twice:
/// it runs about a dozen times per cross-CPU pipe round trip (the idle
/// poll's window, the scheduler's clocks), and its two `udiv`s made it 16
/// instructions a call.
static NS_PER_CYCLE: AtomicU64 = AtomicU64::new(0);
/// Every CPU's next tick and event, in counter cycles.
static DEADLINES: TimerDeadlines = TimerDeadlines::new();
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
    let freq = if freq == 0 { 62_500_000 } else { freq };
    FREQ_HZ.store(freq, Ordering::Relaxed);
    BOOT_COUNT.store(counter(), Ordering::Relaxed);
    let exact = if NS_PER_S.is_multiple_of(freq) {
        NS_PER_S / freq
    } else {
        0
    };
    NS_PER_CYCLE.store(exact, Ordering::Relaxed);
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

/// Monotonic nanoseconds since `init_clock`.
#[inline]
pub fn now_ns() -> u64 {
    let ns_per_cycle = NS_PER_CYCLE.load(Ordering::Relaxed);
    if ns_per_cycle != 0 {
        // The same value as `now_ns_divided`'s: with NS_PER_S = m * freq,
        // (q * freq + r) * m = q * NS_PER_S + r * NS_PER_S / freq. Wraps
        // only after 2^64 ns (584 years), as that one's result would.
        let cycles = counter().wrapping_sub(BOOT_COUNT.load(Ordering::Relaxed));
        return cycles.wrapping_mul(ns_per_cycle);
    }
    now_ns_divided()
}

/// [`now_ns`] for a frequency that does not divide a second (and 0 before
/// [`init_clock`]).
#[cold]
#[inline(never)]
fn now_ns_divided() -> u64 {
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
    DEADLINES.set_period((FREQ_HZ.load(Ordering::Relaxed) / u64::from(hz)).max(1));
    DEADLINES.start_tick(super::cpu_id(), counter());
    program();
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
    super::gic::enable(intid());
}

/// Stops this CPU's timer for good (CPU hotplug): its tick, event and
/// hrtick deadlines cleared and the counter's interrupt disabled;
/// [`timer_start`] starts it again. Interrupts off.
pub fn timer_stop() {
    timer_stop_tick();
    timer_set_event(None);
    let _ = timer_set_hrtick(super::cpu_id(), None);
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR + CNTV_CTL_EL0::IMASK::SET);
}

/// Loads this CPU's comparator with the earlier of its next tick and its
/// next event. Interrupts off.
fn program() {
    CNTV_CVAL_EL0.set(DEADLINES.arm(super::cpu_id()));
}

/// [`program`] unless the comparator, still ahead of the counter, is armed
/// for no later than the new earliest deadline: the interrupt comes then,
/// finds nothing or less due, and [`reload`] arms the next one (Linux's
/// `hrtimer_reprogram`, in kernel/time/hrtimer.c, likewise touches the
/// clock event device only for an expiry before `expires_next`; x86_64's
/// `program_if_earlier` is the same rule). `CNTV_CVAL_EL0` is absolute, so
/// "still ahead" is a compare with the counter: a compare value already
/// reached has raised the (level-triggered) interrupt or is about to, and
/// is written again as before. Fewer writes: under QEMU's `-icount` each
/// write that leaves this CPU's timer the machine's earliest deadline, later
/// or not, ends the vCPU's turn (the generic timer's model moves its QEMU
/// timer with `timer_mod_ns`, whose notifier kicks the running vCPU;
/// docs/results/linux/ab-features.md, "At 2 vCPUs"). Interrupts off.
fn program_if_earlier() {
    let cpu = super::cpu_id();
    let armed = DEADLINES.armed(cpu);
    if armed <= DEADLINES.next(cpu) && armed > counter() {
        return;
    }
    program();
}

/// Asks for a timer interrupt on this CPU at `deadline_ns` (`now_ns` time) or
/// soon after, besides the tick; `None` cancels. The handler then calls
/// `hooks::timer_event()` unless a tick is due (which does the same work).
/// Interrupts off.
pub fn timer_set_event(deadline_ns: Option<u64>) {
    // Unchanged (the common case at a tick with no sleeper): the comparator
    // already covers it.
    if DEADLINES.set_event(super::cpu_id(), cycles_at(deadline_ns)) {
        program_if_earlier();
    }
}

/// The counter value at `deadline_ns` (`now_ns` time), rounded up, so that
/// the interrupt never comes before `now_ns()` reads `deadline_ns` (rounded
/// down it came up to a cycle early, 16 ns at 62.5 MHz: a sleeper's timer
/// found nothing expired and was armed again, and the fair server's timer
/// found its instant not yet reached); `u64::MAX` for none.
fn cycles_at(deadline_ns: Option<u64>) -> u64 {
    match deadline_ns {
        None => u64::MAX,
        Some(ns) => {
            let freq = u128::from(FREQ_HZ.load(Ordering::Relaxed));
            let c = (u128::from(ns) * freq).div_ceil(u128::from(NS_PER_S));
            BOOT_COUNT
                .load(Ordering::Relaxed)
                .saturating_add(u64::try_from(c).unwrap_or(u64::MAX))
        }
    }
}

/// Sets CPU `cpu`'s scheduler hrtick to `deadline_ns` (`now_ns` time;
/// `None` cancels). On this CPU the comparator is loaded again at once if
/// the new earliest deadline is before the armed one
/// (`program_if_earlier`); for another CPU the deadline is recorded and
/// `true` returned when that CPU must be sent a reschedule IPI, whose
/// handler calls [`timer_sync`]. Interrupts off.
pub fn timer_set_hrtick(cpu: CpuId, deadline_ns: Option<u64>) -> bool {
    DEADLINES.set_hrtick(
        cpu,
        super::cpu_id(),
        cycles_at(deadline_ns),
        program_if_earlier,
    )
}

/// Loads this CPU's comparator again, if another CPU changed its hrtick
/// ([`timer_set_hrtick`]) to before the armed deadline. Interrupts off.
pub fn timer_sync() {
    DEADLINES.sync(super::cpu_id(), program_if_earlier);
}

/// Stops this CPU's tick (tickless idle); timer events still fire.
/// Interrupts off.
pub fn timer_stop_tick() {
    DEADLINES.stop_tick(super::cpu_id());
    program();
}

/// Restarts this CPU's tick at the next point of the tick grid all CPUs share. Interrupts off.
pub fn timer_restart_tick() {
    DEADLINES.start_tick(super::cpu_id(), counter());
    program();
}

/// CPU `cpu`'s late ticks so far: tick interrupts that came a period or
/// more late, the periods they merged, and how many of them the comparator
/// had not been armed for (see `deadlines`).
pub fn timer_tick_stats(cpu: CpuId) -> crate::arch::TickStats {
    DEADLINES.tick_stats(cpu)
}

/// From the IRQ handler before EOI: consumes what is due and reprograms the
/// comparator (the timer's level-triggered output drops once the compare
/// value is in the future). Returns what was due: the tick, the hrtick, or
/// else a timer event.
pub fn reload() -> TimerDue {
    let due = DEADLINES.expire(super::cpu_id(), counter(), 0);
    program();
    due
}
