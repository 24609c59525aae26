//! Interrupt controllers: the legacy 8259 PIC (remapped, then masked for good)
//! and the local APIC, whose timer drives the scheduler tick.
//!
//! The LAPIC is used in x2APIC mode (MSRs) when CPUID offers it (KVM always
//! does), else in xAPIC mode (MMIO at the address in `IA32_APIC_BASE`, mapped
//! uncached by the boot page tables). Both modes share one register numbering:
//! the xAPIC MMIO offset `reg`, which is MSR `0x800 + reg / 16` in x2APIC mode.
//!
//! The timer divides its input clock by 16; that input rate differs between KVM
//! (1 GHz), TCG and real hardware, so it is measured over the same PIT window as
//! the TSC (see `time.rs`).

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use x86_64::instructions::port::Port;

use super::super::deadlines::{TickStats, TimerDeadlines, TimerDue};
use crate::cpu::CpuId;
use x86_64::registers::model_specific::Msr;

/// Vector of the LAPIC timer interrupt.
pub const TIMER_VECTOR: u8 = 0x20;
/// Legacy 8259 vectors (all masked; a spurious IRQ7/IRQ15 lands at +7/+15).
pub const PIC_VECTOR_BASE: u8 = 0xE0;
/// LAPIC spurious-interrupt vector (must not be acknowledged with an EOI).
pub const SPURIOUS_VECTOR: u8 = 0xFF;
/// Inter-processor interrupt for `IpiKind::Reschedule`.
pub const IPI_RESCHEDULE_VECTOR: u8 = 0xF0;
/// Inter-processor interrupt for `IpiKind::Call`.
pub const IPI_CALL_VECTOR: u8 = 0xF1;

/// `IA32_APIC_BASE` MSR and its bits.
const MSR_APIC_BASE: u32 = 0x1B;
const APIC_BASE_X2APIC: u64 = 1 << 10;
const APIC_BASE_ENABLE: u64 = 1 << 11;
/// First x2APIC MSR.
const MSR_X2APIC_BASE: u32 = 0x800;

/// LAPIC registers (xAPIC MMIO offsets).
const REG_ID: u32 = 0x20;
const REG_TPR: u32 = 0x80;
const REG_EOI: u32 = 0xB0;
const REG_SVR: u32 = 0xF0;
const REG_LVT_TIMER: u32 = 0x320;
const REG_TIMER_INITIAL: u32 = 0x380;
const REG_TIMER_CURRENT: u32 = 0x390;
const REG_TIMER_DIVIDE: u32 = 0x3E0;
/// Interrupt command register: low half (xAPIC; the whole 64-bit ICR is MSR
/// 0x830 in x2APIC mode) and high half (xAPIC only: destination in bits 24-31).
const REG_ICR_LOW: u32 = 0x300;
const REG_ICR_HIGH: u32 = 0x310;
/// ICR bits.
const ICR_DELIVERY_FIXED: u32 = 0b000 << 8;
const ICR_DELIVERY_INIT: u32 = 0b101 << 8;
const ICR_DELIVERY_STARTUP: u32 = 0b110 << 8;
/// Delivery status (xAPIC only): the previous IPI has not been sent yet.
const ICR_SEND_PENDING: u32 = 1 << 12;
const ICR_LEVEL_ASSERT: u32 = 1 << 14;
/// Longest wait for the xAPIC ICR to become idle before sending anyway.
const ICR_IDLE_TIMEOUT_NS: u64 = 10_000_000;
/// SVR bit 8: APIC software enable.
const SVR_ENABLE: u32 = 1 << 8;
/// LVT bits.
const LVT_MASKED: u32 = 1 << 16;
/// Divide configuration value for "divide by 16".
const TIMER_DIVIDE_BY_16: u32 = 0x3;

static X2APIC: AtomicBool = AtomicBool::new(false);
static XAPIC_BASE: AtomicUsize = AtomicUsize::new(0xFEE0_0000);
/// Timer ticks per second after the divide-by-16 (0 until calibrated).
static TIMER_HZ: AtomicU64 = AtomicU64::new(0);
/// Every CPU's next tick and event, in `now_ns` time.
static DEADLINES: TimerDeadlines = TimerDeadlines::new();
/// Shortest one-shot programmed: a deadline already past fires this soon.
const MIN_ONESHOT_NS: u64 = 2_000;

fn read(reg: u32) -> u32 {
    if X2APIC.load(Ordering::Relaxed) {
        // SAFETY: an x2APIC register read; the LAPIC is enabled in x2APIC mode.
        unsafe { Msr::new(MSR_X2APIC_BASE + (reg >> 4)).read() as u32 }
    } else {
        let addr = XAPIC_BASE.load(Ordering::Relaxed) + reg as usize;
        // SAFETY: the xAPIC page is identity-mapped uncached; registers are
        // 32-bit aligned.
        unsafe { core::ptr::read_volatile(addr as *const u32) }
    }
}

fn write(reg: u32, value: u32) {
    if X2APIC.load(Ordering::Relaxed) {
        // SAFETY: an x2APIC register write; callers pass valid registers.
        unsafe { Msr::new(MSR_X2APIC_BASE + (reg >> 4)).write(u64::from(value)) }
    } else {
        let addr = XAPIC_BASE.load(Ordering::Relaxed) + reg as usize;
        // SAFETY: as in `read`.
        unsafe { core::ptr::write_volatile(addr as *mut u32, value) }
    }
}

/// Remaps the 8259 pair to [`PIC_VECTOR_BASE`] and masks every line, so that a
/// stray legacy interrupt can never look like a CPU exception.
fn disable_pic() {
    let writes: [(u16, u8); 10] = [
        (0x20, 0x11), // ICW1: initialise, ICW4 follows
        (0xA0, 0x11),
        (0x21, PIC_VECTOR_BASE), // ICW2: vector offsets
        (0xA1, PIC_VECTOR_BASE + 8),
        (0x21, 0x04), // ICW3: slave on IRQ2
        (0xA1, 0x02),
        (0x21, 0x01), // ICW4: 8086 mode
        (0xA1, 0x01),
        (0x21, 0xFF), // OCW1: mask all
        (0xA1, 0xFF),
    ];
    for (port, value) in writes {
        // SAFETY: the 8259 ports; nothing else drives the PIC.
        unsafe { Port::<u8>::new(port).write(value) };
    }
}

/// Masks the PIC and enables this CPU's LAPIC (x2APIC if available) with the
/// spurious vector set and all priorities accepted. Returns whether x2APIC is used.
pub fn init() -> bool {
    disable_pic();
    let x2apic = core::arch::x86_64::__cpuid(1).ecx & (1 << 21) != 0;
    let mut base_msr = Msr::new(MSR_APIC_BASE);
    // SAFETY: IA32_APIC_BASE exists on every x86_64 CPU.
    let base = unsafe { base_msr.read() };
    XAPIC_BASE.store((base & 0xF_FFFF_F000) as usize, Ordering::Relaxed);
    let mut new_base = base | APIC_BASE_ENABLE;
    if x2apic {
        new_base |= APIC_BASE_X2APIC;
    }
    // SAFETY: enabling the LAPIC (and moving it to x2APIC mode, which CPUID
    // allows) keeps the base address; no interrupt is enabled yet.
    unsafe { base_msr.write(new_base) };
    X2APIC.store(x2apic, Ordering::Relaxed);
    write(REG_TPR, 0);
    write(REG_SVR, SVR_ENABLE | u32::from(SPURIOUS_VECTOR));
    write(REG_LVT_TIMER, LVT_MASKED);
    x2apic
}

/// Enables an application processor's LAPIC in the mode the boot CPU chose
/// ([`init`] must have run there): x2APIC or xAPIC, spurious vector set, all
/// priorities accepted, timer masked. The PIC is the boot CPU's business.
pub fn init_ap() {
    let mut base_msr = Msr::new(MSR_APIC_BASE);
    // SAFETY: IA32_APIC_BASE exists on every x86_64 CPU.
    let base = unsafe { base_msr.read() };
    let mut new_base = base | APIC_BASE_ENABLE;
    if X2APIC.load(Ordering::Relaxed) {
        new_base |= APIC_BASE_X2APIC;
    }
    // SAFETY: enables this CPU's LAPIC in the boot CPU's mode (all CPUs of one
    // machine report the same CPUID x2APIC bit), keeping the base address; no
    // interrupt is enabled yet.
    unsafe { base_msr.write(new_base) };
    write(REG_TPR, 0);
    write(REG_SVR, SVR_ENABLE | u32::from(SPURIOUS_VECTOR));
    write(REG_LVT_TIMER, LVT_MASKED);
}

/// Writes the interrupt command register: sends `low` (vector, delivery mode,
/// level) to the LAPIC with id `dest`. In xAPIC mode, first waits (bounded by
/// time) for the previous command to leave. Disables interrupts around the
/// two-register xAPIC write so that a handler's IPI cannot split it.
fn send_icr(dest: u32, low: u32) {
    let irq = super::irq_save();
    if X2APIC.load(Ordering::Relaxed) {
        // A WRMSR to the ICR is not ordered after earlier stores (Intel SDM
        // 11.12.3); the fence makes data written before the IPI visible to its
        // handler.
        // SAFETY: `mfence` only orders memory accesses.
        unsafe { core::arch::asm!("mfence", options(nostack, preserves_flags)) };
        // SAFETY: an x2APIC ICR write with a valid command; the destination is
        // a 32-bit x2APIC id.
        unsafe {
            Msr::new(MSR_X2APIC_BASE + (REG_ICR_LOW >> 4))
                .write(u64::from(dest) << 32 | u64::from(low))
        };
    } else {
        wait_icr_idle();
        write(REG_ICR_HIGH, dest << 24);
        // UC MMIO stores are ordered after earlier stores: no fence needed.
        write(REG_ICR_LOW, low);
    }
    super::irq_restore(irq);
}

/// Waits until the xAPIC has sent the previous IPI, at most
/// [`ICR_IDLE_TIMEOUT_NS`]; returns whether it did.
fn wait_icr_idle() -> bool {
    if X2APIC.load(Ordering::Relaxed) {
        return true;
    }
    let start = super::time::rdtsc();
    let limit = super::time::ns_to_cycles(ICR_IDLE_TIMEOUT_NS);
    while read(REG_ICR_LOW) & ICR_SEND_PENDING != 0 {
        if super::time::rdtsc().wrapping_sub(start) > limit {
            return false;
        }
        core::hint::spin_loop();
    }
    true
}

/// Sends a fixed interrupt with `vector` to the LAPIC with id `dest`.
pub fn send_fixed(dest: u32, vector: u8) {
    send_icr(
        dest,
        ICR_DELIVERY_FIXED | ICR_LEVEL_ASSERT | u32::from(vector),
    );
}

/// Sends INIT (assert) to `dest`; returns whether the xAPIC reported it sent.
pub fn send_init(dest: u32) -> bool {
    send_icr(dest, ICR_DELIVERY_INIT | ICR_LEVEL_ASSERT);
    wait_icr_idle()
}

/// Sends a STARTUP IPI to `dest`: it starts in real mode at `page << 12`.
/// Returns whether the xAPIC reported it sent.
pub fn send_startup(dest: u32, page: u8) -> bool {
    send_icr(
        dest,
        ICR_DELIVERY_STARTUP | ICR_LEVEL_ASSERT | u32::from(page),
    );
    wait_icr_idle()
}

/// Whether the LAPICs run in x2APIC mode (after [`init`]).
pub fn x2apic() -> bool {
    X2APIC.load(Ordering::Relaxed)
}

/// Highest LAPIC id an xAPIC ICR can name as a single destination (its
/// destination field is 8 bits and 0xFF is the broadcast).
pub const XAPIC_MAX_ID: u32 = 0xFE;

/// This CPU's LAPIC id.
pub fn id() -> u32 {
    if X2APIC.load(Ordering::Relaxed) {
        read(REG_ID)
    } else {
        read(REG_ID) >> 24
    }
}

/// Signals the end of the interrupt being handled.
#[inline]
pub fn eoi() {
    write(REG_EOI, 0);
}

/// Starts the timer as a masked one-shot counting down from `u32::MAX`, for
/// calibration.
pub fn timer_calibration_start() {
    write(REG_TIMER_DIVIDE, TIMER_DIVIDE_BY_16);
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_TIMER_INITIAL, u32::MAX);
}

/// Ticks counted since [`timer_calibration_start`]; stops the count.
pub fn timer_calibration_end() -> u32 {
    let elapsed = u32::MAX - read(REG_TIMER_CURRENT);
    write(REG_TIMER_INITIAL, 0);
    elapsed
}

/// Records the timer rate: `ticks` counted in `window_ns`.
pub fn set_timer_rate(ticks: u32, window_ns: u64) {
    let hz = u128::from(ticks) * 1_000_000_000 / u128::from(window_ns.max(1));
    TIMER_HZ.store(hz as u64, Ordering::Relaxed);
}

/// Records the timer rate in ticks per second.
pub fn set_timer_rate_hz(hz: u64) {
    TIMER_HZ.store(hz, Ordering::Relaxed);
}

/// Timer ticks per second after the divider (0 before calibration).
pub fn timer_hz() -> u64 {
    TIMER_HZ.load(Ordering::Relaxed)
}

/// Starts this CPU's tick at `hz` interrupts per second on [`TIMER_VECTOR`].
///
/// The LAPIC timer runs one-shot: each interrupt programs the earlier of the
/// next tick and the next timer event ([`timer_set_event`]). Tick deadlines
/// are absolute (`now_ns` time) and advance by whole periods, so neither
/// handler latency nor the one-shot reprogramming makes the tick drift.
pub fn timer_start(hz: u32) {
    DEADLINES.set_period(1_000_000_000 / u64::from(hz.max(1)));
    write(REG_TIMER_DIVIDE, TIMER_DIVIDE_BY_16);
    DEADLINES.start_tick(super::cpu_id(), super::now_ns());
    program();
}

/// Arms the one-shot for the earlier of this CPU's next tick and next event.
/// Interrupts off.
fn program() {
    let deadline = DEADLINES.arm(super::cpu_id());
    if deadline == u64::MAX {
        write(REG_LVT_TIMER, LVT_MASKED);
        write(REG_TIMER_INITIAL, 0);
        return;
    }
    let delta_ns = deadline.saturating_sub(super::now_ns()).max(MIN_ONESHOT_NS);
    let count = u128::from(delta_ns) * u128::from(timer_hz()) / 1_000_000_000;
    let count = count.clamp(1, u128::from(u32::MAX)) as u32;
    write(REG_LVT_TIMER, u32::from(TIMER_VECTOR));
    write(REG_TIMER_INITIAL, count);
}

/// [`program`] unless the one-shot, still ahead, is armed for no later than
/// the new earliest deadline: it fires then, finds nothing or less due, and
/// [`timer_reload`] arms the next one (Linux's `hrtimer_reprogram`, in
/// kernel/time/hrtimer.c, likewise touches the clock event device only for
/// an expiry before `expires_next`). Fewer LAPIC writes: under QEMU's
/// `-icount` each write that leaves this CPU's timer the machine's earliest
/// deadline, later or not, ends the vCPU's turn (`timer_mod_ns` re-inserts
/// it at the head and the notification kicks the running vCPU), which had
/// a thread woken on CPU 0 wait a whole turn of the others after a third
/// of its wakeups (docs/results/linux/ab-features.md, "At 2 vCPUs";
/// scripts/test/cyclictest-cpu0.sh). Interrupts off.
fn program_if_earlier() {
    let cpu = super::cpu_id();
    let armed = DEADLINES.armed(cpu);
    if armed <= DEADLINES.next(cpu) && armed > super::now_ns() {
        return;
    }
    program();
}

/// Asks for a timer interrupt on this CPU at `deadline_ns` (`now_ns` time) or
/// soon after, besides the tick; `None` cancels. Interrupts off.
pub fn timer_set_event(deadline_ns: Option<u64>) {
    // Unchanged (the common case at a tick with no sleeper): the one-shot
    // already covers it.
    if DEADLINES.set_event(super::cpu_id(), deadline_ns.unwrap_or(u64::MAX)) {
        program_if_earlier();
    }
}

/// Sets CPU `cpu`'s scheduler hrtick to `deadline_ns` (`now_ns` time;
/// `None` cancels). On this CPU the one-shot is armed again at once if the
/// new earliest deadline is before the armed one ([`program_if_earlier`]); for
/// another CPU the deadline is recorded and `true` returned when that CPU
/// must be sent a reschedule IPI, whose handler calls [`timer_sync`].
/// Interrupts off.
pub fn timer_set_hrtick(cpu: CpuId, deadline_ns: Option<u64>) -> bool {
    DEADLINES.set_hrtick(
        cpu,
        super::cpu_id(),
        deadline_ns.unwrap_or(u64::MAX),
        program_if_earlier,
    )
}

/// Arms this CPU's one-shot again if another CPU changed its hrtick
/// ([`timer_set_hrtick`]). Interrupts off.
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
    DEADLINES.start_tick(super::cpu_id(), super::now_ns());
    program();
}

/// From the timer interrupt: consumes what is due and arms the next one-shot.
/// Returns what was due: the tick, the hrtick, or else a timer event. The
/// LAPIC timer and the TSC are calibrated against each other, not locked: a
/// tick that fires up to 1/64 of a period early still counts as the tick.
pub fn timer_reload() -> TimerDue {
    let due = DEADLINES.expire(super::cpu_id(), super::now_ns(), 1);
    program();
    due
}

/// CPU `cpu`'s late ticks so far (see `deadlines`).
pub fn timer_tick_stats(cpu: CpuId) -> TickStats {
    DEADLINES.tick_stats(cpu)
}
