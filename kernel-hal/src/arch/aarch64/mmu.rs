//! The identity map: MMU and caches on, RAM as Normal write-back memory,
//! everything else as Device memory.
//!
//! Why: with the MMU off every data access is Device-nGnRnE and uncached.
//! QEMU does not mind, but on hardware exclusive loads and stores (every
//! atomic, every spin lock) are only architecturally reliable on Normal
//! memory, and running uncached is slow. So the boot CPU maps the physical
//! address space one to one and turns the MMU on before anything allocates;
//! secondary CPUs turn it on in `boot`'s entry code, before they touch a
//! cacheable line, with the values [`config`] gives them.
//!
//! Layout: 4 KiB granule, 39-bit virtual addresses (`T0SZ` = 25, 512 GiB),
//! translation starting at level 1. Each 1 GiB level-1 entry is a block: Normal
//! when the DTB's `/memory` covers it whole, Device when no RAM touches it;
//! a gigabyte that is only partly RAM gets a level-2 table of 2 MiB blocks
//! classified the same way (a 2 MiB block that is only partly RAM is mapped as
//! Device: never map device registers cacheable). RAM is inner shareable,
//! execute-never for EL0; Device memory is execute-never everywhere. `TTBR1`
//! walks are disabled: the kernel lives in the low half.
//!
//! Cache maintenance: everything the boot CPU wrote before the switch (the
//! relocated image, `.bss`, these tables, the boot stack) went to memory with
//! the D-cache off, so its range is invalidated (not cleaned) before the cache
//! goes on, and a stale line a loader left behind cannot be written back over
//! it later. Data a secondary CPU reads with its MMU still off (its start
//! block) is cleaned to the point of coherency first ([`clean_dcache_range`]).
//! QEMU's TCG does not model caches, so the tests exercise the tables and the
//! sequence, not the maintenance.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::addr::{PhysAddr, VirtAddr};

/// Entries per table (4 KiB granule).
const ENTRIES: usize = 512;
/// Level-2 tables for gigabytes that are only partly RAM (and for a RAM
/// gigabyte that holds a hole).
const L2_TABLES: usize = 8;
/// Level-3 tables for the 2 MiB blocks that hold holes (the guards below
/// the kernel image's stacks: one or two blocks).
const L3_TABLES: usize = 4;
/// Output-address bits of a block or page descriptor.
const OA_MASK: u64 = 0x0000_ffff_ffff_f000;
/// A level-3 page descriptor's type bits.
const VALID_PAGE: u64 = 0b11;
const GIB: u64 = 1 << 30;
const MIB2: u64 = 2 << 20;

/// MAIR_EL1: attribute 0 = Device-nGnRE, attribute 1 = Normal, inner and
/// outer write-back, read/write-allocate.
const MAIR: u64 = 0x04 | (0xff << 8);
const ATTR_DEVICE: u64 = 0 << 2;
const ATTR_NORMAL: u64 = 1 << 2;
/// Descriptor bits.
const VALID_BLOCK: u64 = 0b01;
const VALID_TABLE: u64 = 0b11;
const AF: u64 = 1 << 10;
const SH_INNER: u64 = 0b11 << 8;
const PXN: u64 = 1 << 53;
const UXN: u64 = 1 << 54;
const NORMAL: u64 = VALID_BLOCK | ATTR_NORMAL | SH_INNER | AF | UXN;
const DEVICE: u64 = VALID_BLOCK | ATTR_DEVICE | AF | PXN | UXN;

/// TCR_EL1 without IPS: T0SZ = 25, walks of TTBR0 inner/outer write-back
/// write-allocate cacheable and inner shareable, 4 KiB granule, EPD1 (no TTBR1
/// walks).
const TCR_BASE: u64 = 25 | (0b01 << 8) | (0b01 << 10) | (0b11 << 12) | (1 << 23);
/// SCTLR_EL1.M (MMU) and .C (data cache).
const SCTLR_M_C: u64 = (1 << 0) | (1 << 2);

#[repr(C, align(4096))]
struct Table([u64; ENTRIES]);

struct Tables {
    l1: UnsafeCell<Table>,
    l2: UnsafeCell<[Table; L2_TABLES]>,
    l3: UnsafeCell<[Table; L3_TABLES]>,
}

// SAFETY: written only by the boot CPU in `init`, before any other CPU runs
// and before the MMU reads them; read-only (by the table walkers) after.
unsafe impl Sync for Tables {}

static TABLES: Tables = Tables {
    l1: UnsafeCell::new(Table([0; ENTRIES])),
    l2: UnsafeCell::new([const { Table([0; ENTRIES]) }; L2_TABLES]),
    l3: UnsafeCell::new([const { Table([0; ENTRIES]) }; L3_TABLES]),
};

/// What a secondary CPU loads before setting SCTLR_EL1.M and .C; all zero
/// until the boot CPU's MMU is on (then secondaries keep theirs off too).
static TTBR0: AtomicU64 = AtomicU64::new(0);
static TCR: AtomicU64 = AtomicU64::new(0);

/// How the address space was mapped (for the boot log).
#[derive(Clone, Copy, Debug, Default)]
pub struct MapSummary {
    /// 1 GiB blocks of RAM.
    pub ram_gib: usize,
    /// Level-2 tables used for partly-RAM gigabytes.
    pub l2_tables: usize,
    /// 2 MiB blocks mapped as Device although part of them is RAM.
    pub partial_2m: usize,
    /// Partly-RAM gigabytes mapped as Device for want of a level-2 table.
    pub no_table: usize,
    /// Whether every page of the holes was left unmapped.
    pub holes_unmapped: bool,
}

/// Unmaps the 4 KiB page at `page` from the tables being built: the block
/// that maps it is split (a level-1 block into a level-2 table of 2 MiB
/// blocks, a level-2 block into a level-3 table of pages, same attributes)
/// with tables from `l2[*next_l2..]` and `l3[*next_l3..]`. False when the
/// page is not mapped by RAM blocks or the tables ran out.
fn unmap_page(
    l1: &mut [u64; ENTRIES],
    l2: &mut [Table; L2_TABLES],
    next_l2: &mut usize,
    l3: &mut [Table; L3_TABLES],
    next_l3: &mut usize,
    page: VirtAddr,
) -> bool {
    let page = page.as_u64();
    let e1 = &mut l1[(page / GIB) as usize % ENTRIES];
    if *e1 & 0b11 == VALID_BLOCK {
        if *e1 & ATTR_NORMAL == 0 || *next_l2 == L2_TABLES {
            return false;
        }
        let t = &mut l2[*next_l2].0;
        *next_l2 += 1;
        let attrs = *e1 & !OA_MASK;
        let base = *e1 & OA_MASK;
        for (j, e) in t.iter_mut().enumerate() {
            *e = (base + j as u64 * MIB2) | attrs;
        }
        *e1 = (t.as_ptr() as u64) | VALID_TABLE;
    }
    // The level-2 table the entry names: one of ours (identity-mapped
    // statics, so the entry holds its address).
    let Some(t2) = l2.iter_mut().find(|t| t.0.as_ptr() as u64 == *e1 & OA_MASK) else {
        return false;
    };
    let e2 = &mut t2.0[(page / MIB2) as usize % ENTRIES];
    if *e2 & 0b11 == VALID_BLOCK {
        if *e2 & ATTR_NORMAL == 0 || *next_l3 == L3_TABLES {
            return false;
        }
        let t = &mut l3[*next_l3].0;
        *next_l3 += 1;
        let attrs = *e2 & !OA_MASK & !0b11;
        let base = *e2 & OA_MASK;
        for (k, e) in t.iter_mut().enumerate() {
            *e = (base + k as u64 * 4096) | attrs | VALID_PAGE;
        }
        *e2 = (t.as_ptr() as u64) | VALID_TABLE;
    }
    if *e2 & 0b11 != VALID_TABLE {
        return false;
    }
    let Some(t3) = l3.iter_mut().find(|t| t.0.as_ptr() as u64 == *e2 & OA_MASK) else {
        return false;
    };
    t3.0[(page / 4096) as usize % ENTRIES] = 0;
    true
}

/// How much of `[start, start + len)` the RAM ranges cover: `None` = none,
/// `Some(true)` = all of it, `Some(false)` = part of it.
fn coverage(ram: &[(PhysAddr, PhysAddr)], start: PhysAddr, len: u64) -> Option<bool> {
    let start = start.as_u64();
    let end = start + len;
    let mut covered = 0;
    for &(s, e) in ram {
        let (a, b) = (s.as_u64().max(start), e.as_u64().min(end));
        if a < b {
            covered += b - a;
        }
    }
    match covered {
        0 => None,
        c => Some(c >= len),
    }
}

/// Builds the identity map for the RAM ranges `ram` (`[start, end)`, not
/// overlapping) and turns the MMU and D-cache on for this (the boot) CPU.
/// `image` is the kernel image's `[start, end)`, invalidated first; the
/// 4 KiB pages of each `holes` range (page-aligned, in RAM) stay unmapped:
/// the guards below the kernel image's stacks.
///
/// # Safety
/// Boot CPU only, once, before any other CPU is started and before anything
/// relies on caches or atomics across CPUs; `ram` must describe real RAM.
pub unsafe fn init(
    ram: &[(PhysAddr, PhysAddr)],
    image: (VirtAddr, VirtAddr),
    holes: &[(VirtAddr, VirtAddr)],
) -> MapSummary {
    let mut sum = MapSummary::default();
    // SAFETY: the caller guarantees we are alone and the MMU is off: nothing
    // else reads or writes the tables.
    let (l1, l2, l3) = unsafe {
        (
            &mut (*TABLES.l1.get()).0,
            &mut *TABLES.l2.get(),
            &mut *TABLES.l3.get(),
        )
    };
    let mut next_l2 = 0;
    for (i, entry) in l1.iter_mut().enumerate() {
        let base = i as u64 * GIB;
        *entry = match coverage(ram, PhysAddr::new(base as usize), GIB) {
            None => base | DEVICE,
            Some(true) => {
                sum.ram_gib += 1;
                base | NORMAL
            }
            Some(false) if next_l2 < L2_TABLES => {
                let t = &mut l2[next_l2].0;
                next_l2 += 1;
                for (j, e) in t.iter_mut().enumerate() {
                    let b = base + j as u64 * MIB2;
                    *e = match coverage(ram, PhysAddr::new(b as usize), MIB2) {
                        Some(true) => b | NORMAL,
                        Some(false) => {
                            sum.partial_2m += 1;
                            b | DEVICE
                        }
                        None => b | DEVICE,
                    };
                }
                (t.as_ptr() as u64) | VALID_TABLE
            }
            Some(false) => {
                sum.no_table += 1;
                base | DEVICE
            }
        };
    }
    let mut next_l3 = 0;
    sum.holes_unmapped = true;
    for &(start, end) in holes {
        sum.holes_unmapped &= start.is_aligned(4096) && end.is_aligned(4096);
        for page in (start.as_usize()..end.as_usize()).step_by(4096) {
            let page = VirtAddr::new(page);
            sum.holes_unmapped &= unmap_page(l1, l2, &mut next_l2, l3, &mut next_l3, page);
        }
    }
    sum.l2_tables = next_l2;

    let parange: u64;
    // SAFETY: reading an ID register has no side effects.
    unsafe { core::arch::asm!("mrs {}, id_aa64mmfr0_el1", out(reg) parange) };
    // IPS takes PARange's encoding; 52-bit output needs FEAT_LPA: stay at 48.
    let tcr = TCR_BASE | ((parange & 0xf).min(5) << 32);
    let ttbr0 = l1.as_ptr() as u64;

    let image_bytes = image
        .1
        .offset_from(image.0)
        .expect("kernel image ends below its start");
    invalidate_dcache_range(image.0, image_bytes);
    // The architecture's sequence: registers, ISB, TLB invalidate, DSB, ISB,
    // SCTLR, ISB.
    // SAFETY: the tables map all memory this kernel touches one to one (RAM
    // Normal, the rest Device): execution and every pointer carry on unchanged.
    unsafe {
        core::arch::asm!(
            "dsb sy",
            "msr mair_el1, {mair}",
            "msr tcr_el1, {tcr}",
            "msr ttbr0_el1, {ttbr0}",
            "isb",
            "tlbi vmalle1",
            "dsb nsh",
            "isb",
            "mrs {t}, sctlr_el1",
            "orr {t}, {t}, {mc}",
            "msr sctlr_el1, {t}",
            "isb",
            mair = in(reg) MAIR,
            tcr = in(reg) tcr,
            ttbr0 = in(reg) ttbr0,
            mc = in(reg) SCTLR_M_C,
            t = out(reg) _,
            options(nostack),
        );
    }
    TTBR0.store(ttbr0, Ordering::Relaxed);
    TCR.store(tcr, Ordering::Relaxed);
    sum
}

/// The translation setup secondary CPUs copy: `(ttbr0, tcr, mair)`, or
/// zeroes when the boot CPU has not turned its MMU on.
pub fn config() -> (u64, u64, u64) {
    match TTBR0.load(Ordering::Relaxed) {
        0 => (0, 0, 0),
        t => (t, TCR.load(Ordering::Relaxed), MAIR),
    }
}

/// CPUs (by dense index) that found their MMU and data cache on when they
/// came up ([`note_cpu`]).
static CPUS_ON: crate::cpumask::AtomicCpuMask = crate::cpumask::AtomicCpuMask::new();

/// Records whether this CPU runs with the MMU and cache on (each CPU once, as
/// it comes up).
pub fn note_cpu() {
    if enabled() {
        CPUS_ON.set(super::cpu::cpu_id(), Ordering::Relaxed);
    }
}

/// CPUs that came up with the MMU and data cache on.
pub fn cpus_on() -> crate::cpumask::CpuMask {
    CPUS_ON.load(Ordering::Relaxed)
}

/// Whether this CPU runs with the MMU and the data cache on.
pub fn enabled() -> bool {
    let sctlr: u64;
    // SAFETY: reading SCTLR_EL1 has no side effects.
    unsafe { core::arch::asm!("mrs {}, sctlr_el1", out(reg) sctlr) };
    sctlr & SCTLR_M_C == SCTLR_M_C
}

/// Smallest data cache line, from CTR_EL0.DminLine.
fn dcache_line() -> usize {
    let ctr: u64;
    // SAFETY: reading CTR_EL0 has no side effects.
    unsafe { core::arch::asm!("mrs {}, ctr_el0", out(reg) ctr) };
    4 << ((ctr >> 16) & 0xf)
}

/// Runs `dc <op>` on every line of `[start, start + len)`, then DSB.
macro_rules! dcache_range {
    ($op:literal, $start:expr, $len:expr) => {{
        let line = dcache_line();
        let mut a = $start & !(line - 1);
        let end = $start + $len;
        while a < end {
            // SAFETY: data cache maintenance by VA on addresses the caller
            // names; it changes no architectural memory contents except that
            // an invalidate drops lines (documented at the callers).
            unsafe { core::arch::asm!(concat!("dc ", $op, ", {}"), in(reg) a, options(nostack)) };
            a += line;
        }
        // SAFETY: a barrier only.
        unsafe { core::arch::asm!("dsb sy", options(nostack)) };
    }};
}

/// Invalidates the data cache lines of `[start, start + len)` to the point
/// of coherency: anything cached there is dropped, memory is what remains.
/// Only for memory written with the cache off (boot CPU, before `init`).
fn invalidate_dcache_range(start: VirtAddr, len: usize) {
    dcache_range!("ivac", start.as_usize(), len);
}

/// Cleans the data cache lines of `[start, start + len)` to the point of
/// coherency, so a CPU reading with its MMU and cache off sees this CPU's
/// writes.
pub fn clean_dcache_range(start: VirtAddr, len: usize) {
    dcache_range!("cvac", start.as_usize(), len);
}

/// The level-1 table (identity map) every CPU's `TTBR0_EL1` names, for the
/// kernel stack region (`paging`).
pub(super) fn l1_table() -> *mut u64 {
    TABLES.l1.get().cast::<u64>()
}
