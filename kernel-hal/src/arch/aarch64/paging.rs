//! The kernel stack region: 4 KiB pages in the last gigabyte of the 39-bit
//! address space.
//!
//! The identity map (`mmu`) uses 1 GiB and 2 MiB blocks, which cannot leave
//! a hole below a stack. Kernel stacks therefore live in
//! [`STACK_REGION_BASE`]..+1 GiB (level-1 entry 511: no RAM or device of the
//! supported boards sits there; it was mapped as Device and never touched),
//! re-pointed at a level-2 table of level-3 tables with 4 KiB pages onto heap
//! memory. The stack allocator (`crate::stack`) cuts it into slots of an unmapped
//! guard and a stack; the exception entry (`trap`) recognises a stack pointer
//! that entered a guard by the region's address bits and bit 15 (slots are
//! 64 KiB, the stack the upper half) and switches to a per-CPU emergency
//! stack for the report.
//!
//! Level-3 tables are allocated from the heap when first needed and never
//! freed. Unmapping broadcasts the TLB invalidation to every CPU (`tlbi
//! vaae1is`), so no cross-CPU call is needed here; the stack allocator's
//! `flush_tlb_local` round is then a formality.

use crate::addr::{PhysAddr, VirtAddr};
use core::alloc::Layout;
use core::sync::atomic::{AtomicU64, Ordering};

/// First address of the stack region (level-1 entry 511).
pub const STACK_REGION_BASE: usize = 511 << 30;
/// Size of the stack region.
pub const STACK_REGION_BYTES: usize = 1 << 30;

const PAGE: usize = 4096;
const VALID_TABLE: u64 = 0b11;
/// A level-3 page descriptor: valid, page, Normal (MAIR attribute 1), inner
/// shareable, accessed, never executable.
const PAGE_NORMAL: u64 = 0b11 | (1 << 2) | (0b11 << 8) | (1 << 10) | (1 << 53) | (1 << 54);
const ADDR_MASK: u64 = 0x0000_ffff_ffff_f000;

/// Address (identity) of the region's level-2 table, 0 before [`init`].
static REGION_L2: AtomicU64 = AtomicU64::new(0);

fn alloc_table() -> Option<*mut u64> {
    let layout = Layout::from_size_align(PAGE, PAGE).ok()?;
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { alloc::alloc::alloc_zeroed(layout) };
    if !p.is_null() {
        crate::heap::note_kept(PAGE);
    }
    (!p.is_null()).then_some(p.cast::<u64>())
}

/// Orders table writes before the walker sees them.
fn table_barrier() {
    // SAFETY: barriers only.
    unsafe { core::arch::asm!("dsb ishst", "isb", options(nostack)) };
}

/// Points level-1 entry 511 at a fresh level-2 table. Boot CPU, heap up,
/// before other CPUs start; false without the MMU (nothing to map with) or
/// without memory.
pub fn init() -> bool {
    if !super::mmu::enabled() {
        return false;
    }
    let Some(l2) = alloc_table() else {
        return false;
    };
    let l1 = super::mmu::l1_table();
    // SAFETY: entry 511 of the live level-1 table; break-before-make: the
    // Device block goes away (and out of every TLB) before the table comes.
    unsafe {
        let e = l1.add(STACK_REGION_BASE >> 30);
        e.write_volatile(0);
        core::arch::asm!(
            "dsb ishst",
            "tlbi vmalle1is",
            "dsb ish",
            "isb",
            options(nostack)
        );
        e.write_volatile(l2 as u64 | VALID_TABLE);
    }
    table_barrier();
    REGION_L2.store(l2 as u64, Ordering::Release);
    true
}

/// The level-3 entry for `va`, allocating its table if `alloc`.
fn pte(va: VirtAddr, alloc: bool) -> Option<*mut u64> {
    let va = va.as_usize();
    let l2 = REGION_L2.load(Ordering::Acquire) as *mut u64;
    if l2.is_null() || !(STACK_REGION_BASE..STACK_REGION_BASE + STACK_REGION_BYTES).contains(&va) {
        return None;
    }
    let off = va - STACK_REGION_BASE;
    // SAFETY: index < 512 in our level-2 table; written only under the
    // stack allocator's lock.
    let l2e = unsafe { l2.add(off >> 21) };
    // SAFETY: as above.
    let mut e = unsafe { l2e.read_volatile() };
    if e & 0b11 != VALID_TABLE {
        if !alloc {
            return None;
        }
        let l3 = alloc_table()?;
        e = l3 as u64 | VALID_TABLE;
        // SAFETY: an invalid entry is never cached: no invalidation needed.
        unsafe { l2e.write_volatile(e) };
        table_barrier();
    }
    let l3 = (e & ADDR_MASK) as *mut u64;
    // SAFETY: index < 512 in that level-3 table.
    Some(unsafe { l3.add((off >> 12) & 511) })
}

/// Maps the page at `va` (in the region) onto physical page `pa`; false
/// without memory for a table or outside the region. The caller serialises.
pub fn map_stack_page(va: VirtAddr, pa: PhysAddr) -> bool {
    let Some(pte) = pte(va, true) else {
        return false;
    };
    // SAFETY: the region's own table; the entry is invalid (never mapped, or
    // unmapped with a broadcast invalidation).
    unsafe { pte.write_volatile(pa.as_u64() | PAGE_NORMAL) };
    table_barrier();
    true
}

/// Unmaps the page at `va` and invalidates it in every CPU's TLB.
pub fn unmap_stack_page(va: VirtAddr) {
    if let Some(pte) = pte(va, false) {
        // SAFETY: as in `map_stack_page`; the invalidation is broadcast to
        // the inner shareable domain (all CPUs).
        unsafe {
            pte.write_volatile(0);
            core::arch::asm!(
                "dsb ishst",
                "tlbi vaae1is, {page}",
                "dsb ish",
                "isb",
                page = in(reg) va.as_u64() >> 12,
                options(nostack)
            );
        }
    }
}
