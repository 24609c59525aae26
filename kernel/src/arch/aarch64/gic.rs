//! ARM Generic Interrupt Controller, v2 or v3, picked at run time from the device
//! tree (`arm,gic-v3` vs `arm,gic-400`/`arm,cortex-a15-gic`) and cross-checked with
//! `ID_AA64PFR0_EL1.GIC` (the GICv3 system-register interface).
//!
//! - GICv2: distributor (GICD) and CPU interface (GICC) are both MMIO.
//! - GICv3: GICD MMIO, one redistributor (GICR) frame pair per CPU (found by
//!   matching `GICR_TYPER` affinity with `MPIDR_EL1`), CPU interface through the
//!   `ICC_*_EL1` system registers. Touching GICR on a v2 machine is a data abort.
//!
//! All interrupts are Group 1 with one priority (0x80); we run non-secure (or with
//! a single security state, as on QEMU virt), priority mask 0xff.

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use aarch64_cpu::registers::{Readable, ID_AA64PFR0_EL1, MPIDR_EL1};

use super::platform::GicKind;

// Distributor registers (common to v2 and v3).
const GICD_CTLR: usize = 0x000;
const GICD_ISENABLER: usize = 0x100;
const GICD_IPRIORITYR: usize = 0x400;
// GICv2 CPU interface.
const GICC_CTLR: usize = 0x00;
const GICC_PMR: usize = 0x04;
const GICC_IAR: usize = 0x0c;
const GICC_EOIR: usize = 0x10;
// GICv3 redistributor: RD_base frame, then SGI_base frame 64 KiB above it.
const GICR_TYPER: usize = 0x0008;
const GICR_WAKER: usize = 0x0014;
const GICR_SGI_BASE: usize = 0x1_0000;
const GICR_IGROUPR0: usize = GICR_SGI_BASE + 0x080;
const GICR_ISENABLER0: usize = GICR_SGI_BASE + 0x100;
const GICR_IPRIORITYR: usize = GICR_SGI_BASE + 0x400;
/// Frame pair size of one GICv3 redistributor (RD_base + SGI_base).
const GICR_STRIDE_V3: usize = 0x2_0000;
/// With GICv4 vLPIs two more frames follow.
const GICR_STRIDE_V4: usize = 0x4_0000;
const GICR_TYPER_VLPIS: u64 = 1 << 1;
const GICR_TYPER_LAST: u64 = 1 << 4;
const GICR_WAKER_PROCESSOR_SLEEP: u32 = 1 << 1;
const GICR_WAKER_CHILDREN_ASLEEP: u32 = 1 << 2;
/// GICD_CTLR (v3): RWP, register write pending.
const GICD_CTLR_RWP: u32 = 1 << 31;
/// GICD_CTLR (v3): EnableGrp0 | EnableGrp1 | ARE (affinity routing).
const GICD_CTLR_V3_ENABLE: u32 = (1 << 0) | (1 << 1) | (1 << 4);

/// Priority given to every interrupt we enable.
const DEFAULT_PRIORITY: u8 = 0x80;
/// INTIDs 1020..=1023 are special (1023: spurious, nothing pending).
pub const SPURIOUS_MIN: u32 = 1020;

/// 0 = not initialised, 2 = GICv2, 3 = GICv3.
static VERSION: AtomicU8 = AtomicU8::new(0);
static GICD: AtomicUsize = AtomicUsize::new(0);
static GICC: AtomicUsize = AtomicUsize::new(0);
/// This (boot) CPU's redistributor RD_base. Per-CPU once SMP exists.
static GICR_THIS: AtomicUsize = AtomicUsize::new(0);

fn rd32(addr: usize) -> u32 {
    // SAFETY: `addr` is a GIC register inside a region the device tree described.
    unsafe { core::ptr::read_volatile(addr as *const u32) }
}

fn rd64(addr: usize) -> u64 {
    // SAFETY: as in `rd32`; GICR_TYPER is a 64-bit register.
    unsafe { core::ptr::read_volatile(addr as *const u64) }
}

fn wr32(addr: usize, v: u32) {
    // SAFETY: as in `rd32`.
    unsafe { core::ptr::write_volatile(addr as *mut u32, v) }
}

fn wr8(addr: usize, v: u8) {
    // SAFETY: as in `rd32`; the priority registers are byte accessible.
    unsafe { core::ptr::write_volatile(addr as *mut u8, v) }
}

/// Whether the CPU implements the GICv3 system-register CPU interface.
fn cpu_has_gicv3_sysregs() -> bool {
    (ID_AA64PFR0_EL1.get() >> 24) & 0xf != 0
}

/// Initialises the distributor and this CPU's interface. Interrupts are enabled
/// one by one with [`enable`].
pub fn init(kind: GicKind) {
    match kind {
        GicKind::V2 { gicd, gicc } => {
            GICD.store(gicd, Ordering::Relaxed);
            GICC.store(gicc, Ordering::Relaxed);
            wr32(gicd + GICD_CTLR, 0);
            wr32(gicd + GICD_CTLR, 1);
            wr32(gicc + GICC_PMR, 0xff);
            wr32(gicc + GICC_CTLR, 1);
            VERSION.store(2, Ordering::Release);
        }
        GicKind::V3 {
            gicd,
            gicr,
            gicr_len,
        } => {
            assert!(
                cpu_has_gicv3_sysregs(),
                "GICv3 in the DTB but no ICC system registers"
            );
            GICD.store(gicd, Ordering::Relaxed);
            wr32(gicd + GICD_CTLR, 0);
            while rd32(gicd + GICD_CTLR) & GICD_CTLR_RWP != 0 {
                core::hint::spin_loop();
            }
            wr32(gicd + GICD_CTLR, GICD_CTLR_V3_ENABLE);
            let rd =
                find_redistributor(gicr, gicr_len).expect("no GICv3 redistributor for this CPU");
            GICR_THIS.store(rd, Ordering::Relaxed);
            // Wake the redistributor.
            wr32(
                rd + GICR_WAKER,
                rd32(rd + GICR_WAKER) & !GICR_WAKER_PROCESSOR_SLEEP,
            );
            while rd32(rd + GICR_WAKER) & GICR_WAKER_CHILDREN_ASLEEP != 0 {
                core::hint::spin_loop();
            }
            // SGIs and PPIs: all Group 1.
            wr32(rd + GICR_IGROUPR0, 0xffff_ffff);
            // SAFETY: ICC_SRE_EL1.SRE=1 (system register interface), ICC_PMR_EL1 =
            // 0xff (let every priority through), ICC_BPR1_EL1 = 0, ICC_IGRPEN1_EL1
            // = 1 (Group 1 on). Encodings: S3_0_C12_C12_5, S3_0_C4_C6_0,
            // S3_0_C12_C12_3, S3_0_C12_C12_7.
            unsafe {
                core::arch::asm!(
                    "mrs {t}, S3_0_C12_C12_5",
                    "orr {t}, {t}, #1",
                    "msr S3_0_C12_C12_5, {t}",
                    "isb",
                    "mov {t}, #0xff",
                    "msr S3_0_C4_C6_0, {t}",
                    "msr S3_0_C12_C12_3, xzr",
                    "mov {t}, #1",
                    "msr S3_0_C12_C12_7, {t}",
                    "isb",
                    t = out(reg) _,
                    options(nostack),
                );
            }
            VERSION.store(3, Ordering::Release);
        }
    }
}

/// RD_base of the redistributor whose `GICR_TYPER` affinity matches this CPU.
fn find_redistributor(base: usize, len: usize) -> Option<usize> {
    let mpidr = MPIDR_EL1.get();
    // GICR_TYPER[63:32] = Aff3.Aff2.Aff1.Aff0.
    let aff = ((mpidr >> 32) & 0xff) << 24 | (mpidr & 0xff_ffff);
    let mut rd = base;
    while len == 0 || rd < base + len {
        let typer = rd64(rd + GICR_TYPER);
        if typer >> 32 == aff {
            return Some(rd);
        }
        if typer & GICR_TYPER_LAST != 0 {
            return None;
        }
        rd += if typer & GICR_TYPER_VLPIS != 0 {
            GICR_STRIDE_V4
        } else {
            GICR_STRIDE_V3
        };
    }
    None
}

/// Enables `intid` on this CPU (SGI/PPI, < 32) or globally (SPI) at the default
/// priority. SPIs are routed by the distributor's reset defaults.
pub fn enable(intid: u32) {
    let n = intid as usize;
    let gicd = GICD.load(Ordering::Relaxed);
    if VERSION.load(Ordering::Acquire) == 3 && n < 32 {
        let rd = GICR_THIS.load(Ordering::Relaxed);
        wr8(rd + GICR_IPRIORITYR + n, DEFAULT_PRIORITY);
        wr32(rd + GICR_ISENABLER0, 1 << n);
    } else {
        wr8(gicd + GICD_IPRIORITYR + n, DEFAULT_PRIORITY);
        wr32(gicd + GICD_ISENABLER + 4 * (n / 32), 1 << (n % 32));
    }
}

/// An acknowledged interrupt, to be passed to [`eoi`].
#[derive(Clone, Copy, Debug)]
pub struct Acked {
    /// The interrupt ID (`>= SPURIOUS_MIN` when nothing was pending).
    pub intid: u32,
    /// The raw IAR value (GICv2 SGIs carry the source CPU, which EOIR needs back).
    raw: u32,
}

/// Acknowledges the highest-priority pending interrupt.
pub fn ack() -> Acked {
    if VERSION.load(Ordering::Relaxed) == 3 {
        let iar: u64;
        // SAFETY: reads ICC_IAR1_EL1 (S3_0_C12_C12_0), which acknowledges the IRQ.
        unsafe { core::arch::asm!("mrs {}, S3_0_C12_C12_0", out(reg) iar, options(nostack)) };
        let intid = (iar & 0xff_ffff) as u32;
        Acked { intid, raw: intid }
    } else {
        let raw = rd32(GICC.load(Ordering::Relaxed) + GICC_IAR);
        Acked {
            intid: raw & 0x3ff,
            raw,
        }
    }
}

/// Signals end of interrupt (drops the running priority and deactivates it).
pub fn eoi(irq: Acked) {
    if VERSION.load(Ordering::Relaxed) == 3 {
        // SAFETY: writes ICC_EOIR1_EL1 (S3_0_C12_C12_1) for an acknowledged INTID.
        unsafe {
            core::arch::asm!("msr S3_0_C12_C12_1, {}", in(reg) u64::from(irq.raw), options(nostack))
        };
    } else {
        wr32(GICC.load(Ordering::Relaxed) + GICC_EOIR, irq.raw);
    }
}
