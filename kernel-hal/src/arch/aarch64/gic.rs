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
//!
//! **SMP.** [`init`] (boot CPU) sets up the distributor and the boot CPU's
//! interface; every secondary CPU calls [`init_cpu`] for its own interface: GICv2
//! banks GICC and the SGI/PPI registers of GICD per CPU, GICv3 has a
//! redistributor per CPU (found by affinity) plus per-CPU `ICC_*` registers. So
//! [`enable`] of a PPI (the timer) or SGI affects only the calling CPU.
//! Inter-processor interrupts are SGIs ([`send_sgi`]): GICv2 through
//! `GICD_SGIR` with the target's CPU interface number (each CPU reads its own
//! from the banked `GICD_ITARGETSR0` in [`init_cpu`]; it need not equal the
//! dense index), GICv3 through `ICC_SGI1R_EL1` with the target's affinity.

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use aarch64_cpu::registers::{Readable, ID_AA64PFR0_EL1, MPIDR_EL1};

use super::cpu::{cpu_id, mpidr_of};
use super::platform::GicKind;
use crate::addr::PhysAddr;
use crate::arch::MAX_CPUS;
use crate::cpu::CpuId;

// Distributor registers (common to v2 and v3).
const GICD_CTLR: usize = 0x000;
const GICD_ISENABLER: usize = 0x100;
const GICD_IPRIORITYR: usize = 0x400;
const GICD_ITARGETSR: usize = 0x800;
const GICD_IGROUPR: usize = 0x080;
const GICD_ICFGR: usize = 0xc00;
/// GICv3: 64-bit SPI routing registers (affinity, IRM = 0).
const GICD_IROUTER: usize = 0x6000;
/// GICv2 software generated interrupt register.
const GICD_SGIR: usize = 0xf00;
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
const GICR_ISPENDR0: usize = GICR_SGI_BASE + 0x200;
const GICR_ISACTIVER0: usize = GICR_SGI_BASE + 0x300;
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
/// GICv3: first redistributor region (base, length) from the device tree.
static GICR_REGION: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];
/// GICv3: each CPU's redistributor RD_base, by dense index; written by that CPU.
static GICR_BASE: [AtomicUsize; MAX_CPUS] = [const { AtomicUsize::new(0) }; MAX_CPUS];
/// GICv2: each CPU's interface bit mask for `GICD_SGIR`'s target list, by dense
/// index; written by that CPU in [`init_cpu`], 0 until then.
static V2_TARGET: [AtomicU8; MAX_CPUS] = [const { AtomicU8::new(0) }; MAX_CPUS];

/// The SGIs the kernel uses (enabled on every CPU by [`init_cpu`]).
pub const SGI_USED: [u32; 2] = [0, 1];

/// The MMIO address kept in `a` (a GIC base; 0: none).
fn phys(a: &AtomicUsize, order: Ordering) -> PhysAddr {
    PhysAddr::new(a.load(order))
}

fn rd32(addr: PhysAddr) -> u32 {
    // SAFETY: `addr` is a GIC register inside a region the device tree
    // described (identity map: physical = virtual, Device memory).
    unsafe { core::ptr::read_volatile(addr.identity_virt().as_ptr::<u32>()) }
}

fn rd64(addr: PhysAddr) -> u64 {
    // SAFETY: as in `rd32`; GICR_TYPER is a 64-bit register.
    unsafe { core::ptr::read_volatile(addr.identity_virt().as_ptr::<u64>()) }
}

fn wr32(addr: PhysAddr, v: u32) {
    // SAFETY: as in `rd32`.
    unsafe { core::ptr::write_volatile(addr.identity_virt().as_mut_ptr::<u32>(), v) }
}

fn wr8(addr: PhysAddr, v: u8) {
    // SAFETY: as in `rd32`; the priority registers are byte accessible.
    unsafe { core::ptr::write_volatile(addr.identity_virt().as_mut_ptr::<u8>(), v) }
}

/// Whether the CPU implements the GICv3 system-register CPU interface.
fn cpu_has_gicv3_sysregs() -> bool {
    (ID_AA64PFR0_EL1.get() >> 24) & 0xf != 0
}

/// Initialises the distributor and the boot CPU's interface (boot CPU, once,
/// before any secondary CPU starts). Interrupts are enabled one by one with
/// [`enable`].
pub fn init(kind: GicKind) {
    match kind {
        GicKind::V2 { gicd, gicc } => {
            GICD.store(gicd.as_usize(), Ordering::Relaxed);
            GICC.store(gicc.as_usize(), Ordering::Relaxed);
            wr32(gicd + GICD_CTLR, 0);
            wr32(gicd + GICD_CTLR, 1);
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
            GICD.store(gicd.as_usize(), Ordering::Relaxed);
            GICR_REGION[0].store(gicr.as_usize(), Ordering::Relaxed);
            GICR_REGION[1].store(gicr_len, Ordering::Relaxed);
            wr32(gicd + GICD_CTLR, 0);
            while rd32(gicd + GICD_CTLR) & GICD_CTLR_RWP != 0 {
                core::hint::spin_loop();
            }
            wr32(gicd + GICD_CTLR, GICD_CTLR_V3_ENABLE);
            VERSION.store(3, Ordering::Release);
        }
    }
    init_cpu();
}

/// Initialises the calling CPU's GIC interface (GICv2 CPU interface, or GICv3
/// redistributor and `ICC_*` registers) and enables the SGIs in [`SGI_USED`] on
/// it. Runs on every CPU, after [`init`] ran on the boot CPU and after the CPU's
/// per-CPU block is set (it files its state under `cpu_id()`).
pub fn init_cpu() {
    let cpu = cpu_id();
    match VERSION.load(Ordering::Acquire) {
        2 => {
            let gicd = phys(&GICD, Ordering::Relaxed);
            let gicc = phys(&GICC, Ordering::Relaxed);
            wr32(gicc + GICC_PMR, 0xff);
            wr32(gicc + GICC_CTLR, 1);
            // GICD_ITARGETSR0..7 (SGIs/PPIs) read as the reading CPU's own
            // interface mask. A uniprocessor GIC reads 0: interface 0.
            let mask = (rd32(gicd + GICD_ITARGETSR) & 0xff) as u8;
            V2_TARGET[cpu.index()].store(if mask == 0 { 1 } else { mask }, Ordering::Release);
        }
        3 => {
            let base = phys(&GICR_REGION[0], Ordering::Relaxed);
            let len = GICR_REGION[1].load(Ordering::Relaxed);
            let rd = find_redistributor(base, len).expect("no GICv3 redistributor for this CPU");
            GICR_BASE[cpu.index()].store(rd.as_usize(), Ordering::Release);
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
            // Soundness: ICC_SRE_EL1.SRE=1 (system register interface), ICC_PMR_EL1 =
            // 0xff (let every priority through), ICC_BPR1_EL1 = 0, ICC_IGRPEN1_EL1
            // = 1 (Group 1 on), all for this CPU only. Encodings: S3_0_C12_C12_5,
            // S3_0_C4_C6_0, S3_0_C12_C12_3, S3_0_C12_C12_7.
            // SAFETY: as argued just above.
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
        }
        _ => panic!("gic::init_cpu before gic::init"),
    }
    for sgi in SGI_USED {
        enable(sgi);
    }
}

/// RD_base of the redistributor whose `GICR_TYPER` affinity matches this CPU.
fn find_redistributor(base: PhysAddr, len: usize) -> Option<PhysAddr> {
    redistributor_of(base, len, MPIDR_EL1.get())
}

/// RD_base of the redistributor for the CPU with affinity `mpidr`: walks the
/// frames of the region `base..base + len` (to the frame marked Last when
/// `len` is 0) and matches `GICR_TYPER`'s affinity. QEMU `virt` puts up to
/// 123 redistributors in its first region and the rest in a second one,
/// which the device tree parser does not report yet: CPUs there are not
/// found (and [`usable_cpus`] leaves them out).
fn redistributor_of(base: PhysAddr, len: usize, mpidr: u64) -> Option<PhysAddr> {
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

/// Most CPUs a GICv2 can address: its SGI and SPI target lists are 8 bits.
pub const GICV2_MAX_CPUS: usize = 8;

/// Why [`usable_cpus`] left CPUs out, as counts, for the boot line.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unusable {
    /// Beyond [`GICV2_MAX_CPUS`] on a GICv2.
    pub gicv2_limit: usize,
    /// GICv3: no redistributor with their affinity in the region we know.
    pub no_redistributor: usize,
    /// GICv3: Aff0 >= 16 while the CPU interface has no SGI range selector
    /// (`ICC_CTLR_EL1.RSS`), so no SGI can reach them.
    pub no_sgi_range: usize,
}

/// Keeps, in order, the CPUs of `mpidrs` (affinities; `[0]` is the boot
/// CPU, always kept) that this interrupt controller can serve, and returns
/// how many were kept and why the others were not. After [`init`] (boot CPU).
pub fn usable_cpus(mpidrs: &mut [u64]) -> (usize, Unusable) {
    let mut why = Unusable::default();
    let n = mpidrs.len();
    match VERSION.load(Ordering::Acquire) {
        2 if n > GICV2_MAX_CPUS => {
            why.gicv2_limit = n - GICV2_MAX_CPUS;
            (GICV2_MAX_CPUS, why)
        }
        3 => {
            let base = phys(&GICR_REGION[0], Ordering::Relaxed);
            let len = GICR_REGION[1].load(Ordering::Relaxed);
            let rss = icc_ctlr_rss();
            let mut kept = 0;
            for i in 0..n {
                let m = mpidrs[i];
                if i > 0 && redistributor_of(base, len, m).is_none() {
                    why.no_redistributor += 1;
                } else if i > 0 && m & 0xff >= 16 && !rss {
                    why.no_sgi_range += 1;
                } else {
                    mpidrs[kept] = m;
                    kept += 1;
                }
            }
            (kept, why)
        }
        _ => (n, why),
    }
}

/// `ICC_CTLR_EL1.RSS` (bit 18): SGIs can target Aff0 values 16..255.
fn icc_ctlr_rss() -> bool {
    let ctlr: u64;
    // SAFETY: reads ICC_CTLR_EL1 (S3_0_C12_C12_4); the system register
    // interface is enabled (GICv3 `init_cpu` ran on this CPU).
    unsafe { core::arch::asm!("mrs {}, S3_0_C12_C12_4", out(reg) ctlr, options(nostack)) };
    ctlr & (1 << 18) != 0
}

/// Enables `intid` on this CPU (SGI/PPI, < 32: banked GICD registers on v2, this
/// CPU's redistributor on v3) or globally (SPI) at the default priority. SPIs are
/// routed by the distributor's reset defaults.
pub fn enable(intid: u32) {
    let n = intid as usize;
    let gicd = phys(&GICD, Ordering::Relaxed);
    if VERSION.load(Ordering::Acquire) == 3 && n < 32 {
        let rd = phys(&GICR_BASE[cpu_id().index()], Ordering::Relaxed);
        wr8(rd + GICR_IPRIORITYR + n, DEFAULT_PRIORITY);
        wr32(rd + GICR_ISENABLER0, 1 << n);
    } else {
        wr8(gicd + GICD_IPRIORITYR + n, DEFAULT_PRIORITY);
        wr32(gicd + GICD_ISENABLER + 4 * (n / 32), 1 << (n % 32));
    }
}

/// Whether SGI/PPI `intid` is pending, and whether it is active, at CPU
/// `cpu`'s redistributor (GICv3 only: any CPU may read another's frame;
/// `None` on v2, whose banked registers show only the reader's own state).
/// For diagnostics: an IPI pending there for seconds was sent and never
/// taken (the target masks interrupts, or its vCPU does not run), one
/// neither pending nor active was taken or never sent.
pub fn sgi_state(cpu: CpuId, intid: u32) -> Option<(bool, bool)> {
    if VERSION.load(Ordering::Acquire) != 3 || intid >= 32 {
        return None;
    }
    let rd = phys(&GICR_BASE[cpu.index()], Ordering::Acquire);
    if rd == PhysAddr::ZERO {
        return None;
    }
    let bit = 1u32 << intid;
    Some((
        rd32(rd + GICR_ISPENDR0) & bit != 0,
        rd32(rd + GICR_ISACTIVER0) & bit != 0,
    ))
}

/// Enables the level-triggered SPI `intid` (a device interrupt) and routes it
/// to CPU `cpu` (dense index): GICv2 through `GICD_ITARGETSR` with that CPU's
/// interface mask (known once its [`init_cpu`] ran), GICv3 through
/// `GICD_IROUTER` with its affinity, in Group 1 like everything else.
pub fn enable_spi(intid: u32, cpu: CpuId) -> bool {
    let n = intid as usize;
    let gicd = phys(&GICD, Ordering::Relaxed);
    if !(32..SPURIOUS_MIN as usize).contains(&n) || gicd == PhysAddr::ZERO {
        return false;
    }
    // ICFGR: two bits per INTID; bit 1 clear = level-sensitive.
    let cfg = gicd + GICD_ICFGR + 4 * (n / 16);
    wr32(cfg, rd32(cfg) & !(0b10 << (2 * (n % 16))));
    match VERSION.load(Ordering::Acquire) {
        2 => {
            let target = V2_TARGET[cpu.index()].load(Ordering::Acquire);
            if target == 0 {
                return false;
            }
            wr8(gicd + GICD_ITARGETSR + n, target);
        }
        3 => {
            let grp = gicd + GICD_IGROUPR + 4 * (n / 32);
            wr32(grp, rd32(grp) | 1 << (n % 32));
            let mpidr = mpidr_of(cpu);
            // IROUTER: Aff3 at [39:32], Aff2..Aff0 at [23:0] as in MPIDR.
            let route = mpidr & 0xff_00ff_ffff;
            // SAFETY: GICD_IROUTER<n> is a 64-bit register of the distributor
            // the device tree described; n is an SPI (32..1020).
            unsafe {
                core::ptr::write_volatile(
                    (gicd + GICD_IROUTER + 8 * n)
                        .identity_virt()
                        .as_mut_ptr::<u64>(),
                    route,
                )
            };
        }
        _ => return false,
    }
    enable(intid);
    true
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
        let raw = rd32(phys(&GICC, Ordering::Relaxed) + GICC_IAR);
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
        wr32(phys(&GICC, Ordering::Relaxed) + GICC_EOIR, irq.raw);
    }
}

/// Sends SGI `intid` (< 16) to CPU `cpu` (dense index, may be this CPU).
///
/// Ordered after this CPU's earlier memory writes (`dsb`), so the target sees
/// whatever the sender published before the IPI. On GICv2 an SGI to a CPU whose
/// interface is not initialised yet is dropped (its target mask is unknown).
pub fn send_sgi(cpu: CpuId, intid: u32) {
    debug_assert!(intid < 16);
    // Publish prior writes before the interrupt can be observed.
    aarch64_cpu::asm::barrier::dsb(aarch64_cpu::asm::barrier::SY);
    match VERSION.load(Ordering::Acquire) {
        2 => {
            let mask = V2_TARGET[cpu.index()].load(Ordering::Acquire);
            if mask != 0 {
                // TargetListFilter 0 (use the list), CPUTargetList [23:16], NSATT 0.
                let sgir = (u32::from(mask) << 16) | (intid & 0xf);
                wr32(phys(&GICD, Ordering::Relaxed) + GICD_SGIR, sgir);
            }
        }
        3 => {
            let mpidr = mpidr_of(cpu);
            let aff0 = mpidr & 0xff;
            let aff1 = (mpidr >> 8) & 0xff;
            let aff2 = (mpidr >> 16) & 0xff;
            let aff3 = (mpidr >> 32) & 0xff;
            // ICC_SGI1R_EL1 names a group of up to 16 CPUs that share
            // Aff3.Aff2.Aff1 and whose Aff0 lies in one range of 16 (QEMU
            // virt: 16 CPUs per Aff1 cluster, Aff0 0..15): TargetList [15:0]
            // (bit aff0 % 16), Aff1 [23:16], INTID [27:24], Aff2 [39:32],
            // IRM [40] = 0, RS [47:44] = aff0 / 16 (0 unless the CPU
            // interface has RSS; usable_cpus drops CPUs needing it
            // otherwise), Aff3 [55:48]. Each IPI here has one target.
            let v = (1u64 << (aff0 & 0xf))
                | (aff1 << 16)
                | (u64::from(intid & 0xf) << 24)
                | (aff2 << 32)
                | ((aff0 >> 4) << 44)
                | (aff3 << 48);
            // SAFETY: writing ICC_SGI1R_EL1 (S3_0_C12_C11_5) only generates a Group 1
            // SGI; the system register interface was enabled by init_cpu.
            unsafe {
                core::arch::asm!("msr S3_0_C12_C11_5, {}", "isb", in(reg) v, options(nostack))
            };
        }
        _ => {}
    }
}
