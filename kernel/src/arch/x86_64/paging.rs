//! The kernel stack region: 4 KiB mappings above the identity map.
//!
//! The boot code identity-maps 0-4 GiB with 2 MiB pages (`boot/src/x86_64`),
//! which cannot leave a hole below a stack. Kernel stacks therefore live in
//! their own virtual region, [`STACK_REGION_BASE`] (4 GiB, PDPT entry 4 of
//! PML4 entry 0, right above the identity map) for [`STACK_REGION_BYTES`]
//! (1 GiB), mapped with 4 KiB pages onto heap memory. Generic code
//! (`heap::stack`) carves it into slots of stack plus unmapped guard pages.
//!
//! One page directory covers the region; it is allocated at [`init`] and
//! hooked into the PDPT that every CPU's CR3 shares. Page tables (one per
//! 2 MiB of region) are allocated from the heap when a slot in their range is
//! first mapped, and never freed. Nothing here is cached by a CPU before it
//! is present (the TLB and the paging-structure caches hold present entries
//! only), so mapping needs no flush; unmapping flushes this CPU's entry, and
//! the stack allocator flushes every CPU before it reuses an unmapped address
//! (`flush_tlb_local` through a cross-CPU call).

use core::alloc::Layout;
use core::sync::atomic::{AtomicU64, Ordering};

use x86_64::registers::control::Cr3;

/// First address of the stack region.
pub const STACK_REGION_BASE: usize = 4 << 30;
/// Size of the stack region (one PDPT entry).
pub const STACK_REGION_BYTES: usize = 1 << 30;

const PAGE: usize = 4096;
const PRESENT: u64 = 1;
const WRITABLE: u64 = 2;
const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Physical (= identity virtual) address of the region's page directory, 0
/// before [`init`].
static REGION_PD: AtomicU64 = AtomicU64::new(0);

/// A zeroed page-table page from the heap (identity-mapped, so its virtual
/// address is its physical one), or `None` when the heap is full.
fn alloc_table() -> Option<*mut u64> {
    let layout = Layout::from_size_align(PAGE, PAGE).ok()?;
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { alloc::alloc::alloc_zeroed(layout) };
    (!p.is_null()).then_some(p.cast::<u64>())
}

/// The PDPT that PML4 entry 0 (the identity map) names.
fn pdpt() -> *mut u64 {
    let (pml4, _) = Cr3::read_raw();
    let pml4 = pml4.start_address().as_u64() as *const u64;
    // SAFETY: CR3 names the boot PML4, identity-mapped in the kernel image.
    let e = unsafe { pml4.read_volatile() };
    (e & ADDR_MASK) as *mut u64
}

/// Hooks the stack region into the page tables. Needs the heap; call once on
/// the boot CPU before other CPUs start. False if the heap cannot hold the
/// page directory (stacks then come from the heap, without guard pages).
pub fn init() -> bool {
    let Some(pd) = alloc_table() else {
        return false;
    };
    let idx = STACK_REGION_BASE >> 30;
    // SAFETY: the PDPT is the boot one (identity-mapped); entry `idx` is past
    // the four the identity map uses, so nothing relies on it being empty.
    unsafe {
        pdpt()
            .add(idx)
            .write_volatile(pd as u64 | PRESENT | WRITABLE)
    };
    REGION_PD.store(pd as u64, Ordering::Release);
    true
}

/// The page-table entry for `va` in the region, allocating its page table
/// if `alloc` (None: no table, or out of memory).
fn pte(va: usize, alloc: bool) -> Option<*mut u64> {
    let pd = REGION_PD.load(Ordering::Acquire) as *mut u64;
    if pd.is_null() || !(STACK_REGION_BASE..STACK_REGION_BASE + STACK_REGION_BYTES).contains(&va) {
        return None;
    }
    let off = va - STACK_REGION_BASE;
    // SAFETY: in bounds (the region is one PD's 512 entries); the PD is ours,
    // and its entries are written only under the stack allocator's lock.
    let pde = unsafe { pd.add(off >> 21) };
    // SAFETY: as above.
    let mut e = unsafe { pde.read_volatile() };
    if e & PRESENT == 0 {
        if !alloc {
            return None;
        }
        let pt = alloc_table()?;
        e = pt as u64 | PRESENT | WRITABLE;
        // SAFETY: as above; a not-present entry was never cached by any CPU.
        unsafe { pde.write_volatile(e) };
    }
    let pt = (e & ADDR_MASK) as *mut u64;
    // SAFETY: index < 512 within the page table this PD entry names.
    Some(unsafe { pt.add((off >> 12) & 511) })
}

/// Maps the 4 KiB page at `va` (in the region) onto physical page `pa`.
/// False when a page table could not be allocated, or `va` is outside the
/// region. The caller serialises calls (the stack allocator's lock).
pub fn map_stack_page(va: usize, pa: usize) -> bool {
    let Some(pte) = pte(va, true) else {
        return false;
    };
    // SAFETY: the entry belongs to the region's page tables; `va` was
    // unmapped (and flushed everywhere) or never mapped.
    unsafe { pte.write_volatile(pa as u64 | PRESENT | WRITABLE) };
    true
}

/// Unmaps the page at `va` and flushes it from this CPU's TLB (other CPUs
/// may keep it until [`flush_tlb_local`] runs there).
pub fn unmap_stack_page(va: usize) {
    if let Some(pte) = pte(va, false) {
        // SAFETY: as in `map_stack_page`; then drop this CPU's cached entry.
        unsafe {
            pte.write_volatile(0);
            core::arch::asm!("invlpg [{}]", in(reg) va, options(nostack, preserves_flags));
        }
    }
}

/// Flushes this CPU's TLB (no page is global: CR4.PGE is off and no entry
/// has the G bit).
pub fn flush_tlb_local() {
    let (frame, flags) = Cr3::read_raw();
    // SAFETY: reloading the same CR3 changes no mapping, it only flushes.
    unsafe { Cr3::write_raw(frame, flags) };
}
