//! The clock: nanoseconds since boot from the TSC.
//!
//! The TSC frequency is measured once, against PIT channel 2 (a 1.193182 MHz
//! crystal that QEMU emulates on every PC machine type, TCG and KVM alike; under
//! nested KVM CPUID's frequency leaves are often missing or describe the host).
//! The same PIT window also measures the LAPIC timer's input clock (see
//! `apic.rs`), so boot pays for one window only. When the PIT does not respond
//! (QEMU microvm has no port 0x61), CPUID leaves 0x15, 0x4000_0010 and 0x16 and
//! finally an assumed 1 GHz stand in; the LAPIC timer is then measured against
//! that TSC rate, so ticks and `now_ns()` stay consistent with each other even
//! when both are off from wall-clock time.
//!
//! `now_ns()` is `(tsc - boot_tsc) * mult >> 32` with a 128-bit product: no
//! division, no overflow for centuries. The TSC is assumed invariant (constant
//! rate, running in every C-state, synchronised across CPUs); that is what KVM
//! and TCG provide. Without the invariant-TSC CPUID bit the clock is still used,
//! and [`tsc_invariant`] lets boot code say so.

use core::arch::x86_64::__cpuid;
use core::sync::atomic::{AtomicU64, Ordering};

use x86_64::instructions::port::Port;

/// PIT input clock.
const PIT_HZ: u64 = 1_193_182;
/// Length of the calibration window.
const CALIBRATION_WINDOW_NS: u64 = 25_000_000;
/// Give up on the PIT after this many TSC cycles (seconds at any plausible rate).
const PIT_TIMEOUT_CYCLES: u64 = 20_000_000_000;
/// Frequency assumed when nothing can measure the TSC.
const FALLBACK_TSC_HZ: u64 = 1_000_000_000;

/// TSC at `init`: the zero of `now_ns()`.
static BOOT_TSC: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds per TSC cycle as a 32.32 fixed-point number.
static NS_PER_CYCLE_FP32: AtomicU64 = AtomicU64::new(0);
/// Measured TSC frequency.
static TSC_HZ: AtomicU64 = AtomicU64::new(0);

/// Where the TSC frequency came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TscSource {
    /// Measured against PIT channel 2.
    Pit,
    /// CPUID leaf 0x15 (crystal ratio) or 0x16 (base MHz).
    Cpuid,
    /// Nothing worked; 1 GHz assumed.
    Assumed,
}

/// Reads the time-stamp counter.
#[inline]
pub fn rdtsc() -> u64 {
    // SAFETY: RDTSC only reads a counter (CR4.TSD is clear in ring 0 anyway).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Monotonic nanoseconds since `init` (0 before it).
#[inline]
pub fn now_ns() -> u64 {
    let cycles = rdtsc().wrapping_sub(BOOT_TSC.load(Ordering::Relaxed));
    ((u128::from(cycles) * u128::from(NS_PER_CYCLE_FP32.load(Ordering::Relaxed))) >> 32) as u64
}

/// The TSC frequency in Hz (0 before `init`).
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// Converts nanoseconds to TSC cycles (for time-bounded busy waits).
pub fn ns_to_cycles(ns: u64) -> u64 {
    (u128::from(ns) * u128::from(tsc_hz().max(1)) / 1_000_000_000) as u64
}

/// Whether CPUID advertises an invariant TSC (leaf 0x8000_0007, EDX bit 8).
pub fn tsc_invariant() -> bool {
    let max_ext = __cpuid(0x8000_0000).eax;
    max_ext >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
}

/// TSC frequency from CPUID 0x15 (crystal * ratio), the hypervisor leaf
/// 0x4000_0010, or 0x16 (base MHz), if one of them says.
fn cpuid_tsc_hz() -> Option<u64> {
    let max = __cpuid(0).eax;
    if max >= 0x15 {
        let l = __cpuid(0x15);
        if l.eax != 0 && l.ebx != 0 && l.ecx != 0 {
            return Some(u64::from(l.ecx) * u64::from(l.ebx) / u64::from(l.eax));
        }
    }
    // Hypervisor timing leaf (QEMU/KVM with `vmware-cpuid-freq`): EAX = TSC kHz.
    if __cpuid(0x4000_0000).eax >= 0x4000_0010 {
        let khz = __cpuid(0x4000_0010).eax;
        if khz != 0 {
            return Some(u64::from(khz) * 1000);
        }
    }
    if max >= 0x16 {
        let mhz = __cpuid(0x16).eax & 0xffff;
        if mhz != 0 {
            return Some(u64::from(mhz) * 1_000_000);
        }
    }
    None
}

/// Runs one PIT channel 2 one-shot window of [`CALIBRATION_WINDOW_NS`] and
/// returns `(tsc_cycles, window_ns, end_sample)`. `on_start` runs as the window
/// opens and `on_end`'s result is taken as it closes, so another counter (the
/// LAPIC timer) can be measured over the same window. `None` if the PIT never
/// fired.
pub fn pit_window<T>(on_start: impl FnOnce(), on_end: impl FnOnce() -> T) -> Option<(u64, u64, T)> {
    let pit_count = PIT_HZ * CALIBRATION_WINDOW_NS / 1_000_000_000; // < 65536
    let mut port61 = Port::<u8>::new(0x61);
    let mut pit_cmd = Port::<u8>::new(0x43);
    let mut pit_ch2 = Port::<u8>::new(0x42);
    // SAFETY: port 0x61 bit 0 gates PIT channel 2, bit 1 drives the speaker (off);
    // ports 0x43/0x42 program channel 2 only, which nothing else uses.
    unsafe {
        let v = port61.read();
        port61.write((v & !0x02) | 0x01);
        pit_cmd.write(0b1011_0000); // channel 2, lobyte/hibyte, mode 0, binary
        pit_ch2.write((pit_count & 0xff) as u8);
        pit_ch2.write((pit_count >> 8) as u8);
    }
    // Mode 0 starts counting with the count written; OUT2 (0x61 bit 5) is low
    // until the count reaches 0. High already: no PIT (or no port 0x61) here.
    // SAFETY: reading port 0x61 has no side effects.
    if unsafe { port61.read() } & 0x20 != 0 {
        return None;
    }
    on_start();
    let start = rdtsc();
    loop {
        // SAFETY: reading port 0x61 has no side effects.
        let out2 = unsafe { port61.read() } & 0x20 != 0;
        let now = rdtsc();
        if out2 {
            let end = on_end();
            let cycles = now - start;
            // Plausible TSC rates only (100 MHz..20 GHz); else the PIT misbehaved.
            let window_ns = pit_count * 1_000_000_000 / PIT_HZ;
            let plausible = cycles > window_ns / 10 && cycles < window_ns * 20;
            return plausible.then_some((cycles, window_ns, end));
        }
        if now - start > PIT_TIMEOUT_CYCLES {
            return None;
        }
    }
}

/// Sets the TSC frequency (from a PIT window measured by the caller, or by
/// falling back to CPUID) and starts the clock. Returns where the rate came from.
pub fn init(pit_measurement: Option<(u64, u64)>) -> TscSource {
    let (hz, source) = match pit_measurement {
        Some((cycles, window_ns)) if cycles > 0 => (
            (u128::from(cycles) * 1_000_000_000 / u128::from(window_ns)) as u64,
            TscSource::Pit,
        ),
        _ => match cpuid_tsc_hz() {
            Some(hz) => (hz, TscSource::Cpuid),
            None => (FALLBACK_TSC_HZ, TscSource::Assumed),
        },
    };
    TSC_HZ.store(hz, Ordering::Relaxed);
    NS_PER_CYCLE_FP32.store(
        ((1_000_000_000u128 << 32) / u128::from(hz)) as u64,
        Ordering::Relaxed,
    );
    source
}

/// Marks "now" as time zero of `now_ns()`.
pub fn set_boot_tsc() {
    BOOT_TSC.store(rdtsc(), Ordering::Relaxed);
}
