//! The clock: nanoseconds since boot from the TSC.
//!
//! # Calibration
//! The TSC rate comes, in this order of preference, from:
//! 1. CPUID leaf 0x15 when it names the crystal (crystal Hz * EBX / EAX: what
//!    Linux trusts on current Intel parts), or the hypervisor timing leaf
//!    0x4000_0010 (EAX: TSC kHz);
//! 2. PIT channel 2 (a 1.193182 MHz crystal every PC machine type emulates),
//!    over several 10 ms one-shot windows. Each window brackets its two edges
//!    (the count written, OUT2 rising) between TSC reads, so its error is
//!    known: a window whose edges took longer than [`MAX_EDGE_ERROR_PPM`] of
//!    the window to observe (the vCPU was descheduled there, an SMI, a slow
//!    port) is thrown away and another is run, up to [`MAX_WINDOWS`]. A delay
//!    in the middle of a window does not matter: the PIT and the TSC both go on
//!    counting. The rate is the median of the kept windows, and the boot log
//!    prints how many were kept and their spread;
//! 3. CPUID leaf 0x16 (the nominal base MHz);
//! 4. 1 GHz assumed, said loudly (QEMU microvm: no PIT, no CPUID leaves).
//!
//! Then, whatever the first rate came from, it is refined as Linux's
//! `tsc_refine_calibration_work` does: the TSC against the HPET over at least
//! half a second, taken from the boot CPU's idle loop without holding up the
//! boot, and the clock switches to that rate (rebased: no jump) when it
//! differs by more than 0.1%. See "Refined calibration" below.
//!
//! Before, one 25 ms PIT window was trusted blindly: on a loaded host it read
//! 1993–5095 MHz instead of ~1995 in 9 of 26 boots. The LAPIC timer's input
//! clock is counted over the same windows (see `apic.rs`); with a CPUID rate it
//! is measured against the TSC instead, so ticks and `now_ns()` always agree.
//!
//! `now_ns()` is `(tsc - boot_tsc) * mult >> 32` with a 128-bit product: no
//! division, no overflow for centuries. The TSC is assumed invariant (constant
//! rate, running in every C-state, synchronised across CPUs); that is what KVM
//! and TCG provide. Without the invariant-TSC CPUID bit the clock is still used,
//! and [`tsc_invariant`] lets boot code say so.

use core::arch::x86_64::__cpuid;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use x86_64::instructions::port::Port;

use crate::addr::PhysAddr;

/// PIT input clock.
const PIT_HZ: u64 = 1_193_182;
/// Length of one calibration window.
const CALIBRATION_WINDOW_NS: u64 = 5_000_000;
/// The rate is taken once [`AGREE_WINDOWS`] kept windows (of at least
/// [`MIN_WINDOWS`]) agree within [`AGREE_PPM`]: the lowest such cluster.
const MIN_WINDOWS: usize = 5;
const AGREE_WINDOWS: usize = 3;
const AGREE_PPM: u64 = 1_000;
/// Windows tried at most.
const MAX_WINDOWS: usize = 32;
/// A window whose two edges together took longer than this (parts per million
/// of the window) to observe is thrown away: 500 ppm of 5 ms is 2.5 us.
const MAX_EDGE_ERROR_PPM: u64 = 500;
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

/// Set once [`switch_rate`] changed the rate; then `now_ns()` is
/// `REFINED_BASE_NS + (tsc - REFINED_BASE_TSC) * REFINED_NS_PER_CYCLE_FP32 >> 32`.
static REFINED: AtomicBool = AtomicBool::new(false);
static REFINED_BASE_TSC: AtomicU64 = AtomicU64::new(0);
static REFINED_BASE_NS: AtomicU64 = AtomicU64::new(0);
static REFINED_NS_PER_CYCLE_FP32: AtomicU64 = AtomicU64::new(0);

/// Where the TSC frequency came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TscSource {
    /// CPUID leaf 0x15 (crystal ratio) or the hypervisor leaf 0x4000_0010.
    Cpuid,
    /// Measured against PIT channel 2: the windows that agree (the rate is
    /// their median), the windows kept and run, and the spread of the
    /// agreeing rates (max - min) in parts per million of the median.
    Pit {
        /// Windows that agree within [`AGREE_PPM`].
        agree: u32,
        /// Windows kept (edges observed in time).
        kept: u32,
        /// Windows run.
        tried: u32,
        /// (max - min) / median of the agreeing windows, ppm.
        spread_ppm: u32,
    },
    /// CPUID leaf 0x16: the nominal base frequency (PIT unusable).
    CpuidBase,
    /// Nothing worked; 1 GHz assumed.
    Assumed,
}

impl core::fmt::Display for TscSource {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            TscSource::Cpuid => f.write_str("CPUID 0x15/0x4000_0010"),
            TscSource::Pit {
                agree,
                kept,
                tried,
                spread_ppm,
            } => write!(
                f,
                "PIT, {agree} of {kept} kept windows agree ({tried} run), spread {}.{:03}%",
                spread_ppm / 10_000,
                spread_ppm / 10 % 1_000
            ),
            TscSource::CpuidBase => f.write_str("CPUID 0x16 base frequency"),
            TscSource::Assumed => f.write_str("ASSUMED 1 GHz: no PIT, no CPUID frequency"),
        }
    }
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
    if REFINED.load(Ordering::Acquire) {
        // After [`refine`] switched the rate: the same line, rebased at the
        // switch (the Acquire pairs with its Release: all three are set).
        let cycles = rdtsc().wrapping_sub(REFINED_BASE_TSC.load(Ordering::Relaxed));
        let scaled = (u128::from(cycles)
            * u128::from(REFINED_NS_PER_CYCLE_FP32.load(Ordering::Relaxed)))
            >> 32;
        return REFINED_BASE_NS.load(Ordering::Relaxed) + scaled as u64;
    }
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

/// TSC frequency from CPUID 0x15 (crystal * ratio) or the hypervisor leaf
/// 0x4000_0010, if one of them says.
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
    None
}

/// The nominal base frequency from CPUID 0x16, if present.
fn cpuid_base_hz() -> Option<u64> {
    if __cpuid(0).eax >= 0x16 {
        let mhz = __cpuid(0x16).eax & 0xffff;
        if mhz != 0 {
            return Some(u64::from(mhz) * 1_000_000);
        }
    }
    None
}

/// One PIT window: TSC cycles between its edges, how long the two edges took
/// to observe (the error bound, cycles), and the other counter's reading.
struct Window<T> {
    cycles: u64,
    error_cycles: u64,
    end: T,
    /// TSC cycles from just after `on_start` to just before `on_end`: the
    /// interval the other counter counted, on the TSC's own scale.
    end_cycles: u64,
}

/// Runs one PIT channel 2 one-shot window of [`CALIBRATION_WINDOW_NS`].
/// `on_start` runs as the window opens and `on_end`'s result is taken as it
/// closes, so another counter (the LAPIC timer) is measured over the same
/// window. `None` if the PIT never fired (there is none).
fn pit_window<T>(on_start: impl FnOnce(), on_end: impl FnOnce() -> T) -> Option<Window<T>> {
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
    }
    on_start();
    let l0 = rdtsc();
    // The count starts with its high byte: bracket that write.
    let t0 = rdtsc();
    // SAFETY: as above.
    unsafe { pit_ch2.write((pit_count >> 8) as u8) };
    let t1 = rdtsc();
    // Mode 0: OUT2 (0x61 bit 5) stays low until the count reaches 0. High
    // already: no PIT (or no port 0x61) here.
    // SAFETY: reading port 0x61 has no side effects.
    if unsafe { port61.read() } & 0x20 != 0 {
        return None;
    }
    let mut before = t1;
    loop {
        // SAFETY: reading port 0x61 has no side effects.
        let out2 = unsafe { port61.read() } & 0x20 != 0;
        let after = rdtsc();
        if out2 {
            let l1 = rdtsc();
            let end = on_end();
            // Edges at the midpoints of their brackets.
            let start = t0 + (t1 - t0) / 2;
            let stop = before + (after - before) / 2;
            let cycles = stop.saturating_sub(start);
            // Plausible TSC rates only (100 MHz..20 GHz); else this window
            // misbehaved (its error bound says so, and it is thrown away).
            let plausible =
                cycles > CALIBRATION_WINDOW_NS / 10 && cycles < CALIBRATION_WINDOW_NS * 20;
            return Some(Window {
                cycles,
                error_cycles: if plausible {
                    (t1 - t0) + (after - before)
                } else {
                    u64::MAX
                },
                end,
                end_cycles: l1 - l0,
            });
        }
        if after - t1 > PIT_TIMEOUT_CYCLES {
            return None;
        }
        before = after;
    }
}

/// How the clocks were calibrated: the TSC rate, where it came from, and the
/// LAPIC timer's ticks per second if they were counted over PIT windows.
pub struct Calibration {
    /// TSC Hz.
    pub tsc_hz: u64,
    /// Where it came from.
    pub source: TscSource,
    /// LAPIC timer ticks per second (median over the kept windows), when the
    /// PIT was used.
    pub lapic_hz: Option<u64>,
}

/// Measures the TSC (and, over the same windows, the LAPIC timer:
/// `lapic_start` / `lapic_end` as for [`pit_window`]) as the module docs say.
pub fn calibrate(lapic_start: impl Fn(), lapic_end: impl Fn() -> u32) -> Calibration {
    if let Some(hz) = cpuid_tsc_hz() {
        return Calibration {
            tsc_hz: hz,
            source: TscSource::Cpuid,
            lapic_hz: None,
        };
    }
    let window_ns = u128::from(PIT_HZ * CALIBRATION_WINDOW_NS / 1_000_000_000) * 1_000_000_000
        / u128::from(PIT_HZ);
    // (TSC Hz, LAPIC ticks per 2^32 TSC cycles) of the kept windows. The
    // LAPIC is scaled to the TSC, not to the PIT window: its start and end
    // are not bracketed, but the TSC interval around them is.
    let mut kept = [(0u64, 0u64); MAX_WINDOWS];
    let mut n = 0;
    let mut tried = 0;
    let mut found = None;
    while tried < MAX_WINDOWS {
        tried += 1;
        let Some(w) = pit_window(&lapic_start, &lapic_end) else {
            break; // no PIT
        };
        if w.error_cycles.saturating_mul(1_000_000) > w.cycles.saturating_mul(MAX_EDGE_ERROR_PPM) {
            continue;
        }
        let hz = (u128::from(w.cycles) * 1_000_000_000 / window_ns) as u64;
        let lapic = ((u128::from(w.end) << 32) / u128::from(w.end_cycles.max(1))) as u64;
        kept[n] = (hz, lapic);
        n += 1;
        if n >= MIN_WINDOWS {
            found = cluster(&mut kept[..n]).filter(|c| c.agree as usize >= AGREE_WINDOWS);
            if found.is_some() {
                break;
            }
        }
    }
    let Some(c) = found.or_else(|| cluster(&mut kept[..n])) else {
        let (hz, source) = match cpuid_base_hz() {
            Some(hz) => (hz, TscSource::CpuidBase),
            None => (FALLBACK_TSC_HZ, TscSource::Assumed),
        };
        return Calibration {
            tsc_hz: hz,
            source,
            lapic_hz: None,
        };
    };
    Calibration {
        tsc_hz: c.tsc_hz,
        source: TscSource::Pit {
            agree: c.agree,
            kept: n as u32,
            tried: tried as u32,
            spread_ppm: c.spread_ppm,
        },
        lapic_hz: Some(((u128::from(c.lapic_per_2_32) * u128::from(c.tsc_hz)) >> 32) as u64),
    }
}

/// The windows that agree: their median TSC rate and LAPIC ratio.
struct Cluster {
    tsc_hz: u64,
    lapic_per_2_32: u64,
    agree: u32,
    spread_ppm: u32,
}

/// The lowest group of kept windows whose rates lie within [`AGREE_PPM`] of
/// its lowest one, among the largest such groups up to [`AGREE_WINDOWS`].
/// Lowest, because what disturbs a window here makes the TSC look faster: a
/// host that deschedules the vCPU in the middle of a window (seen under
/// nested virtualisation, where the host's TSC and its clock drift apart
/// under load) adds TSC cycles, never removes them. `None` when nothing was
/// kept. Sorts `kept`.
fn cluster(kept: &mut [(u64, u64)]) -> Option<Cluster> {
    kept.sort_unstable_by_key(|&(hz, _)| hz);
    let mut best: Option<(usize, usize)> = None; // (start, len)
    for i in 0..kept.len() {
        let lo = kept[i].0;
        let len = kept[i..]
            .iter()
            .take_while(|&&(hz, _)| (hz - lo).saturating_mul(1_000_000) <= lo * AGREE_PPM)
            .count();
        let better = match best {
            None => true,
            Some((_, b)) => len > b && b < AGREE_WINDOWS,
        };
        if better {
            best = Some((i, len));
        }
    }
    let (start, len) = best?;
    let group = &kept[start..start + len];
    let mut lapic = [0u64; MAX_WINDOWS];
    for (slot, &(_, l)) in lapic.iter_mut().zip(group) {
        *slot = l;
    }
    let lapic = &mut lapic[..len];
    lapic.sort_unstable();
    let median = group[len / 2].0;
    Some(Cluster {
        tsc_hz: median,
        lapic_per_2_32: lapic[len / 2],
        agree: len as u32,
        spread_ppm: (u128::from(group[len - 1].0 - group[0].0) * 1_000_000
            / u128::from(median.max(1))) as u32,
    })
}

/// Starts the clock at `hz` TSC cycles per second.
pub fn init(hz: u64) {
    TSC_HZ.store(hz, Ordering::Relaxed);
    NS_PER_CYCLE_FP32.store(
        ((1_000_000_000u128 << 32) / u128::from(hz.max(1))) as u64,
        Ordering::Relaxed,
    );
}

/// Marks "now" as time zero of `now_ns()`.
pub fn set_boot_tsc() {
    BOOT_TSC.store(rdtsc(), Ordering::Relaxed);
}

// ---------------------------------------------------------------------------
// Refined calibration (Linux's `tsc_refine_calibration_work`).
//
// Under nested virtualisation with busy host cores, TCG's TSC (the host's)
// and the emulated PIT (QEMU's clock) disagree by 2-6x for tens of
// milliseconds at a time, so short PIT windows can all agree on a wrong rate.
// Over a long interval the two clocks agree again. So the boot takes a
// (TSC, HPET) snapshot right after the PIT calibration ([`refine_start`]),
// and the boot CPU's idle loop, once the HPET says [`REFINE_MIN_NS`] passed,
// takes another ([`refine_poll`]: nothing waits for it, as Linux defers its
// refinement to a work item). When the TSC rate between the two differs from
// the PIT's by more than [`REFINE_SWITCH_PPM`], the clock switches to it,
// rebased at the switch, so `now_ns()` neither jumps nor goes back.
//
// The LAPIC timer runs on QEMU's clock like the HPET, so it needs no long
// interval: it counts (masked) from the first snapshot until the boot CPU
// starts its tick ([`refine_lapic`]), and that count against the HPET, when
// the reads around both ends were quick enough, replaces the PIT figure.
// ---------------------------------------------------------------------------

/// Shortest interval, by the HPET, between the two snapshots.
const REFINE_MIN_NS: u64 = 500_000_000;
/// A refined rate this far (ppm) from the initial one replaces it.
const REFINE_SWITCH_PPM: u64 = 1_000;
/// The LAPIC count is used when its two ends, each known within half the
/// HPET reads around it, are known within this much (ppm) of the interval:
/// 0.2%, well inside the 1% `make clock-test` allows. (Measured under TCG:
/// each LAPIC access bracketed by HPET reads spans ~20 us and the interval
/// is 6-160 ms, so the error is 100-3300 ppm; the shortest intervals, one
/// CPU booting fast, keep the PIT figure.)
pub const LAPIC_MAX_ERROR_PPM: u64 = 2_000;
/// HPET registers: capabilities (period in fs in bits 63:32), configuration
/// (bit 0: counter enabled), main counter.
const HPET_CAPS: usize = 0x00;
const HPET_CONFIG: usize = 0x10;
const HPET_COUNTER: usize = 0xf0;
/// Snapshots tried; the one whose HPET read the TSC brackets tightest is kept.
const SNAPSHOT_TRIES: usize = 5;
/// Femtoseconds per second.
const FS_PER_S: u128 = 1_000_000_000_000_000;

/// The HPET (MMIO base, counter period in femtoseconds) and the first
/// snapshots, taken in [`refine_start`].
struct RefineStart {
    hpet: PhysAddr,
    period_fs: u64,
    /// The main counter's width: all ones (64-bit) or the low 32 bits.
    mask: u64,
    /// (TSC, HPET) at the start.
    snap: Snapshot,
    /// HPET counts just before and just after the LAPIC count started, when
    /// it was started.
    lapic: Option<(u64, u64)>,
}

/// A TSC reading and the HPET counter at the same moment, with the TSC
/// cycles the HPET read took (the error bound).
#[derive(Clone, Copy)]
struct Snapshot {
    tsc: u64,
    count: u64,
    error_cycles: u64,
}

static REFINE_START: spin::Once<RefineStart> = spin::Once::new();
/// Set once [`refine_poll`] measured (or gave up): its fast path.
static REFINE_DONE: AtomicBool = AtomicBool::new(false);
/// Set once [`refine_lapic`] ran: the count it ends is over.
static LAPIC_DONE: AtomicBool = AtomicBool::new(false);

/// Reads a 32-bit HPET register.
///
/// # Safety
/// `base` must be the HPET's MMIO base, inside the identity map.
unsafe fn hpet_read(base: PhysAddr, reg: usize) -> u32 {
    // SAFETY: the caller vouches for the base; HPET registers are 32-bit
    // readable at their offsets, and reading them has no side effects.
    unsafe { core::ptr::read_volatile((base + reg).identity_virt().as_ptr::<u32>()) }
}

/// The HPET main counter (64-bit, read as two halves: the high half is read
/// again until it did not change under the low one).
///
/// # Safety
/// As for [`hpet_read`].
unsafe fn hpet_counter(base: PhysAddr) -> u64 {
    loop {
        // SAFETY: the caller's contract.
        let (hi, lo, hi2) = unsafe {
            (
                hpet_read(base, HPET_COUNTER + 4),
                hpet_read(base, HPET_COUNTER),
                hpet_read(base, HPET_COUNTER + 4),
            )
        };
        if hi == hi2 {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}

/// The tightest of [`SNAPSHOT_TRIES`] bracketed HPET reads.
///
/// # Safety
/// As for [`hpet_read`].
unsafe fn snapshot(base: PhysAddr) -> Snapshot {
    let mut best = Snapshot {
        tsc: 0,
        count: 0,
        error_cycles: u64::MAX,
    };
    for _ in 0..SNAPSHOT_TRIES {
        let t0 = rdtsc();
        // SAFETY: the caller's contract.
        let count = unsafe { hpet_counter(base) };
        let t1 = rdtsc();
        if t1 - t0 < best.error_cycles {
            best = Snapshot {
                tsc: t0 + (t1 - t0) / 2,
                count,
                error_cycles: t1 - t0,
            };
        }
    }
    best
}

/// Finds the HPET through the ACPI tables at `rsdp`, starts its counter if
/// the firmware left it stopped, takes the first snapshot and, when
/// `lapic_start` is given, starts the LAPIC timer counting (masked) for
/// [`refine_lapic`]. Returns whether there is an HPET to refine against.
/// Call once, on the boot CPU, before the heap exists and before anything
/// else uses its LAPIC timer.
pub fn refine_start(rsdp: Option<PhysAddr>, lapic_start: Option<fn()>) -> bool {
    // SAFETY: the loader's RSDP, read before the heap exists (the caller's
    // contract), as `acpi::find_table` requires.
    let Some((table, len)) = rsdp.and_then(|r| unsafe { super::acpi::find_table(r, b"HPET") })
    else {
        return false;
    };
    if len < 52 {
        return false;
    }
    // SAFETY: `find_table` validated `len` (>= 52) bytes at `table` inside
    // the identity map. Offset 40 is the base address's GAS: address space
    // (0 = memory) at 40, the 64-bit address at 44.
    let (space, base) = unsafe {
        (
            core::ptr::read_unaligned((table + 40).identity_virt().as_ptr::<u8>()),
            core::ptr::read_unaligned((table + 44).identity_virt().as_ptr::<u64>()),
        )
    };
    let Some(base) = PhysAddr::try_from_u64(base) else {
        return false;
    };
    if space != 0
        || base == PhysAddr::ZERO
        || !base.is_aligned(1024)
        || (base + 1024).as_usize() > super::MAPPED_LIMIT_BYTES
    {
        return false;
    }
    // SAFETY: the HPET's register block (1 KiB) lies in the identity map
    // (checked above), which maps the MMIO below 4 GiB, the LAPIC's too.
    let (period_fs, caps) = unsafe {
        (
            u64::from(hpet_read(base, HPET_CAPS + 4)),
            hpet_read(base, HPET_CAPS),
        )
    };
    // COUNT_SIZE_CAP (bit 13): a 64-bit main counter; else it wraps at 2^32.
    let mask = if caps & (1 << 13) != 0 {
        u64::MAX
    } else {
        u64::from(u32::MAX)
    };
    // The specification's bound: at most 100 ns per count.
    if period_fs == 0 || period_fs > 100_000_000 {
        return false;
    }
    // SAFETY: as above; setting ENABLE_CNF only starts the main counter (no
    // comparator is armed; legacy replacement stays as the firmware left it).
    unsafe {
        let cfg = hpet_read(base, HPET_CONFIG);
        if cfg & 1 == 0 {
            core::ptr::write_volatile(
                (base + HPET_CONFIG).identity_virt().as_mut_ptr::<u32>(),
                cfg | 1,
            );
        }
    }
    // SAFETY: as above.
    let snap = unsafe { snapshot(base) };
    let lapic = lapic_start.map(|start| {
        // SAFETY: as above.
        let before = unsafe { hpet_counter(base) };
        start();
        // SAFETY: as above.
        let after = unsafe { hpet_counter(base) };
        (before, after)
    });
    REFINE_START.call_once(|| RefineStart {
        hpet: base,
        period_fs,
        mask,
        snap,
        lapic,
    });
    true
}

/// The LAPIC timer against the HPET since [`refine_start`] (see
/// [`refine_lapic`]).
pub struct LapicRefined {
    /// Ticks per second, when the count's ends are known within
    /// [`LAPIC_MAX_ERROR_PPM`] of the interval (else the PIT figure stays).
    pub hz: Option<u64>,
    /// The interval, µs by the HPET.
    pub interval_us: u64,
    /// How well the interval's ends are known, ppm of it.
    pub error_ppm: u64,
}

/// The LAPIC timer against the HPET since [`refine_start`]: `lapic_end`
/// ends the count it began. `None` without a count, and after the first
/// call. On the boot CPU, before it starts its tick.
pub fn refine_lapic(lapic_end: impl FnOnce() -> u32) -> Option<LapicRefined> {
    let start = REFINE_START.get()?;
    let (b0, a0) = start.lapic?;
    if LAPIC_DONE.swap(true, Ordering::Relaxed) {
        return None;
    }
    // SAFETY: `refine_start` checked the HPET's base.
    let b1 = unsafe { hpet_counter(start.hpet) };
    let ticks = lapic_end();
    // SAFETY: as above.
    let a1 = unsafe { hpet_counter(start.hpet) };
    Some(lapic_rate(start, (b0, a0), (b1, a1), ticks))
}

/// `ticks` of the LAPIC timer between two ends, each an HPET count read just
/// before and just after it: the ends are taken at the midpoints of their
/// brackets, each off by at most half its bracket. A count that reached 0
/// (`u32::MAX`) or never ran is no measurement.
fn lapic_rate(
    hpet: &RefineStart,
    (b0, a0): (u64, u64),
    (b1, a1): (u64, u64),
    ticks: u32,
) -> LapicRefined {
    let m = hpet.mask;
    let counts =
        ((b1 + (a1.wrapping_sub(b1) & m) / 2).wrapping_sub(b0 + (a0.wrapping_sub(b0) & m) / 2) & m)
            .max(1);
    let error = ((a0.wrapping_sub(b0) & m) + (a1.wrapping_sub(b1) & m)) / 2;
    let error_ppm = (u128::from(error) * 1_000_000 / u128::from(counts)) as u64;
    let elapsed_fs = u128::from(counts) * u128::from(hpet.period_fs);
    let hz = (ticks != 0 && ticks != u32::MAX && error_ppm <= LAPIC_MAX_ERROR_PPM)
        .then(|| (u128::from(ticks) * FS_PER_S / elapsed_fs) as u64);
    LapicRefined {
        hz,
        interval_us: (elapsed_fs / 1_000_000_000) as u64,
        error_ppm,
    }
}

/// Window of one dedicated LAPIC measurement ([`lapic_against_hpet`]), by
/// the HPET: 20 ms, so that ~20 us brackets stay near 1000 ppm.
const LAPIC_WINDOW_NS: u64 = 20_000_000;
/// Dedicated LAPIC measurements tried before the PIT figure is kept.
const LAPIC_TRIES: usize = 5;

/// The LAPIC timer against the HPET over dedicated [`LAPIC_WINDOW_NS`]
/// windows, for when the count since [`refine_start`] was too short or its
/// ends too loosely known (a fast one-CPU boot, or a vCPU descheduled
/// around a read on a loaded host): up to [`LAPIC_TRIES`] windows, the
/// first whose ends are known within [`LAPIC_MAX_ERROR_PPM`] gives the rate.
/// Under QEMU both run on the same clock, so a short window is exact up to
/// its read brackets. `None` without an HPET or when no window qualified.
/// Boot CPU, before it starts its tick.
pub fn lapic_against_hpet(start: impl Fn(), end: impl Fn() -> u32) -> Option<LapicRefined> {
    let hpet = REFINE_START.get()?;
    let m = hpet.mask;
    let window =
        (u128::from(LAPIC_WINDOW_NS) * 1_000_000 / u128::from(hpet.period_fs.max(1))) as u64;
    // SAFETY: `refine_start` checked the HPET's base.
    let now = || unsafe { hpet_counter(hpet.hpet) };
    let mut last = None;
    for _ in 0..LAPIC_TRIES {
        let b0 = now();
        start();
        let a0 = now();
        while (now().wrapping_sub(a0) & m) < window {
            core::hint::spin_loop();
        }
        let b1 = now();
        let ticks = end();
        let a1 = now();
        let r = lapic_rate(hpet, (b0, a0), (b1, a1), ticks);
        if r.hz.is_some() {
            return Some(r);
        }
        last = Some(r);
    }
    last
}

/// What [`refine_poll`] measured.
pub struct Refined {
    /// Milliseconds between the two snapshots, by the HPET.
    pub interval_ms: u64,
    /// The TSC rate before, Hz.
    pub initial_hz: u64,
    /// The TSC rate over the interval, Hz.
    pub refined_hz: u64,
    /// Whether the clock was switched to `refined_hz`.
    pub switched: bool,
    /// The two snapshots' read error over the interval, ppm.
    pub error_ppm: u64,
}

/// The second snapshot, from the boot CPU's idle loop: `None` (one load)
/// until [`REFINE_MIN_NS`] passed since [`refine_start`] by the HPET; then,
/// once, the TSC rate over the whole interval, and the switch to it when it
/// differs by more than [`REFINE_SWITCH_PPM`] (see the section comment).
/// Boot CPU only.
pub fn refine_poll() -> Option<Refined> {
    if REFINE_DONE.load(Ordering::Relaxed) {
        return None;
    }
    let Some(start) = REFINE_START.get() else {
        REFINE_DONE.store(true, Ordering::Relaxed);
        return None;
    };
    let min_counts = (u128::from(REFINE_MIN_NS) * 1_000_000 / u128::from(start.period_fs)) as u64;
    // SAFETY: `refine_start` checked the HPET's base.
    if unsafe { hpet_counter(start.hpet) }.wrapping_sub(start.snap.count) & start.mask < min_counts
    {
        return None;
    }
    REFINE_DONE.store(true, Ordering::Relaxed);
    // A 32-bit counter may have wrapped (every 42 s at QEMU's 100 MHz) if
    // CPU 0 was busy that long: then the interval is unknown. A quarter of the
    // wrap by the TSC at its initial rate (taken to be less than 4x off) is
    // the limit.
    let wrap_ns = u128::from(start.mask) * u128::from(start.period_fs) / 1_000_000;
    let since_ns = u128::from(rdtsc().wrapping_sub(start.snap.tsc)) * 1_000_000_000
        / u128::from(tsc_hz().max(1));
    if since_ns > wrap_ns / 4 {
        return None;
    }
    // SAFETY: as above.
    let end = unsafe { snapshot(start.hpet) };
    let elapsed_fs = u128::from(end.count.wrapping_sub(start.snap.count) & start.mask)
        * u128::from(start.period_fs);
    let cycles = end.tsc.wrapping_sub(start.snap.tsc);
    let refined_hz = (u128::from(cycles) * FS_PER_S / elapsed_fs) as u64;
    let initial_hz = tsc_hz();
    let off_ppm =
        u128::from(refined_hz.abs_diff(initial_hz)) * 1_000_000 / u128::from(initial_hz.max(1));
    let switched = off_ppm > u128::from(REFINE_SWITCH_PPM);
    if switched {
        switch_rate(refined_hz);
    }
    Some(Refined {
        interval_ms: (elapsed_fs / 1_000_000_000_000) as u64,
        initial_hz,
        refined_hz,
        switched,
        error_ppm: (u128::from(start.snap.error_cycles + end.error_cycles) * 1_000_000
            / u128::from(cycles.max(1))) as u64,
    })
}

/// Switches `now_ns()` to `hz`, continuing from its current value. Once.
/// Another CPU's `now_ns()` that loaded the old scale just before the switch
/// and reads the TSC just after it is off by the rate difference over those
/// few instructions (nanoseconds), as small as the TSC skew between CPUs.
fn switch_rate(hz: u64) {
    let tsc = rdtsc();
    let cycles = tsc.wrapping_sub(BOOT_TSC.load(Ordering::Relaxed));
    let base_ns =
        ((u128::from(cycles) * u128::from(NS_PER_CYCLE_FP32.load(Ordering::Relaxed))) >> 32) as u64;
    REFINED_BASE_TSC.store(tsc, Ordering::Relaxed);
    REFINED_BASE_NS.store(base_ns, Ordering::Relaxed);
    REFINED_NS_PER_CYCLE_FP32.store(
        ((1_000_000_000u128 << 32) / u128::from(hz.max(1))) as u64,
        Ordering::Relaxed,
    );
    TSC_HZ.store(hz, Ordering::Relaxed);
    // Publishes the three above to `now_ns()`'s Acquire.
    REFINED.store(true, Ordering::Release);
}
