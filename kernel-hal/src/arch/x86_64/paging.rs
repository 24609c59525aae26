//! The identity map of RAM above 4 GiB, and the kernel stack region: 4 KiB
//! mappings above the identity map.
//!
//! **RAM above 4 GiB.** The boot code identity-maps 0-4 GiB with 2 MiB pages
//! (`boot/src/x86_64`). [`map_ram_above_4g`] (from `early_init`, before the
//! heap) extends the identity map over every RAM range the loader's memory
//! map lists above 4 GiB, up to [`IDENTITY_LIMIT`] (512 GiB: PML4 entry 0,
//! whose PDPT the boot code made): 1 GiB pages where a whole aligned GiB is
//! RAM and the CPU has them (CPUID 0x8000_0001 EDX bit 26, `-cpu max` has,
//! `qemu64` has not), else 2 MiB pages. Ranges are trimmed to 2 MiB
//! boundaries, so only RAM is mapped, never a hole (which on real hardware
//! may be MMIO that must not be cached). Page directories for the 2 MiB
//! pages come from the RAM right after the kernel image (a bump allocator;
//! the heap starts after what it took, [`early_pages_end`]).
//!
//! **Stacks.** The 2 MiB pages of the identity map cannot leave a hole below
//! a stack. Kernel stacks therefore live in
//! their own virtual region, [`STACK_REGION_BASE`] (512 GiB, PML4 entry 1,
//! right above the identity map) for [`STACK_REGION_BYTES`]
//! (1 GiB), mapped with 4 KiB pages onto heap memory. Generic code
//! (`crate::stack`) carves it into slots of stack plus unmapped guard pages.
//!
//! One PDPT and one page directory cover the region; they are allocated at [`init`] and
//! hooked into the PML4 that every CPU's CR3 shares. Page tables (one per
//! 2 MiB of region) are allocated from the heap when a slot in their range is
//! first mapped, and never freed. Nothing here is cached by a CPU before it
//! is present (the TLB and the paging-structure caches hold present entries
//! only), so mapping needs no flush; unmapping flushes this CPU's entry, and
//! the stack allocator flushes every CPU before it reuses an unmapped address
//! (`flush_tlb_local` through a cross-CPU call).

use crate::addr::{PhysAddr, VirtAddr};
use core::alloc::Layout;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use x86_64::registers::control::Cr3;

/// End of the identity map of RAM (PML4 entry 0); RAM above is not used.
pub const IDENTITY_LIMIT: usize = 512 << 30;
/// First address of the stack region (PML4 entry 1).
pub const STACK_REGION_BASE: usize = IDENTITY_LIMIT;
/// Size of the stack region (one PDPT entry).
pub const STACK_REGION_BYTES: usize = 1 << 30;

const PAGE: usize = 4096;
const PRESENT: u64 = 1;
const WRITABLE: u64 = 2;
/// Page-size bit of a PDPT (1 GiB) or PD (2 MiB) entry.
const HUGE: u64 = 1 << 7;
const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;
const GIB: usize = 1 << 30;
const MIB2: usize = 2 << 20;
/// Boot identity map's end (the boot code's four page directories).
const BOOT_MAP_END: usize = 4 << 30;

/// Physical (= identity virtual) address of the region's page directory, 0
/// before [`init`].
static REGION_PD: AtomicU64 = AtomicU64::new(0);

/// A zeroed page-table page from the heap (identity-mapped, so its virtual
/// address is its physical one), or `None` when the heap is full.
fn alloc_table() -> Option<*mut u64> {
    let layout = Layout::from_size_align(PAGE, PAGE).ok()?;
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { alloc::alloc::alloc_zeroed(layout) };
    if !p.is_null() {
        crate::heap::note_kept(PAGE);
    }
    (!p.is_null()).then_some(p.cast::<u64>())
}

/// The boot PML4 (CR3), identity-mapped in the kernel image.
fn pml4() -> *mut u64 {
    let (pml4, _) = Cr3::read_raw();
    pml4.start_address().as_u64() as *mut u64
}

/// The PDPT that PML4 entry 0 (the identity map) names.
fn pdpt() -> *mut u64 {
    // SAFETY: CR3 names the boot PML4, identity-mapped in the kernel image.
    let e = unsafe { pml4().read_volatile() };
    (e & ADDR_MASK) as *mut u64
}

/// Hooks the stack region into the page tables. Needs the heap; call once on
/// the boot CPU before other CPUs start. False if the heap cannot hold the
/// PDPT and page directory (stacks then come from the heap, without guard
/// pages).
pub fn init() -> bool {
    let Some(pdpt) = alloc_table() else {
        return false;
    };
    let Some(pd) = alloc_table() else {
        let layout = Layout::from_size_align(PAGE, PAGE).expect("page layout");
        // SAFETY: `pdpt` came from `alloc_zeroed` with this layout.
        unsafe { alloc::alloc::dealloc(pdpt.cast(), layout) };
        return false;
    };
    // SAFETY: both tables are fresh and ours; PML4 entry 1 (the region's)
    // was empty (the boot code maps PML4 entry 0 only), so no CPU caches it.
    unsafe {
        pdpt.write_volatile(pd as u64 | PRESENT | WRITABLE);
        pml4()
            .add(STACK_REGION_BASE / IDENTITY_LIMIT)
            .write_volatile(pdpt as u64 | PRESENT | WRITABLE);
    }
    REGION_PD.store(pd as u64, Ordering::Release);
    true
}

/// Page tables for the 2 MiB pages of the boot identity map that
/// [`unmap_boot_pages`] splits (the guards below the static stacks all lie
/// in the kernel image: one or two 2 MiB pages).
const SPLIT_TABLES: usize = 4;

#[repr(C, align(4096))]
struct SplitTables(UnsafeCell<[[u64; 512]; SPLIT_TABLES]>);

// SAFETY: written only by the boot CPU in `unmap_boot_pages`, before other
// CPUs start; read by the table walkers.
unsafe impl Sync for SplitTables {}

static SPLIT: SplitTables = SplitTables(UnsafeCell::new([[0; 512]; SPLIT_TABLES]));
static SPLIT_USED: AtomicUsize = AtomicUsize::new(0);

/// Unmaps the 4 KiB pages of `[start, end)` (page-aligned, inside the boot
/// identity map below 4 GiB) from the identity map, splitting each 2 MiB
/// page that holds one into 4 KiB pages (same flags) with a table of
/// [`SPLIT_TABLES`]. Then reloads CR3 (the boot tables have no global
/// pages), so no CPU keeps a stale translation. Returns false, having
/// unmapped only part of the range (or nothing), when the range is not in
/// the boot map or the tables ran out.
///
/// # Safety
/// Boot CPU, before other CPUs start; nothing may use the range afterwards
/// (the guard pages below the static stacks).
pub unsafe fn unmap_boot_pages(start: VirtAddr, end: VirtAddr) -> bool {
    let (start, end) = (start.as_usize(), end.as_usize());
    let mut ok = start.is_multiple_of(PAGE) && end.is_multiple_of(PAGE) && end <= BOOT_MAP_END;
    let mut page = start;
    while ok && page < end {
        // SAFETY: the boot PDPT and page directories are identity-mapped in
        // the kernel image; only this CPU runs (the caller's contract).
        unsafe {
            let pdpte = pdpt().add(page / GIB).read_volatile();
            if pdpte & PRESENT == 0 || pdpte & HUGE != 0 {
                ok = false;
                break;
            }
            let pde_ptr = ((pdpte & ADDR_MASK) as *mut u64).add((page / MIB2) % 512);
            let pde = pde_ptr.read_volatile();
            if pde & PRESENT == 0 {
                ok = false;
                break;
            }
            let table = if pde & HUGE != 0 {
                let n = SPLIT_USED.load(Ordering::Relaxed);
                if n == SPLIT_TABLES {
                    ok = false;
                    break;
                }
                SPLIT_USED.store(n + 1, Ordering::Relaxed);
                let t = SPLIT.0.get().cast::<[u64; 512]>().add(n).cast::<u64>();
                // Present, writable, user, PWT, PCD and NX carry over; the
                // PAT bit (bit 12 in a 2 MiB entry) is never set by the boot code.
                let flags = pde & (0x1f | 1 << 63);
                let base = pde & ADDR_MASK & !(MIB2 as u64 - 1);
                for i in 0..512 {
                    t.add(i).write_volatile((base + (i * PAGE) as u64) | flags);
                }
                pde_ptr.write_volatile(t as u64 | PRESENT | WRITABLE);
                t
            } else {
                (pde & ADDR_MASK) as *mut u64
            };
            table.add((page / PAGE) % 512).write_volatile(0);
        }
        page += PAGE;
    }
    let (frame, flags) = Cr3::read_raw();
    // SAFETY: the same PML4 again: flushes every non-global translation.
    unsafe { Cr3::write_raw(frame, flags) };
    ok
}

/// Whether the CPU has 1 GiB pages (CPUID 0x8000_0001 EDX bit 26).
fn has_1g_pages() -> bool {
    let max_ext = core::arch::x86_64::__cpuid(0x8000_0000).eax;
    max_ext >= 0x8000_0001 && core::arch::x86_64::__cpuid(0x8000_0001).edx & (1 << 26) != 0
}

/// End of the page-table pages [`map_ram_above_4g`] took after the kernel
/// image (0: none taken).
static EARLY_PAGES_END: AtomicUsize = AtomicUsize::new(0);

/// The first address after the kernel image that the heap may use: past
/// the page directories [`map_ram_above_4g`] took.
pub fn early_pages_end(kernel_end: PhysAddr) -> PhysAddr {
    kernel_end.max(PhysAddr::new(EARLY_PAGES_END.load(Ordering::Relaxed)))
}

/// What [`map_ram_above_4g`] did, for the boot log.
#[derive(Clone, Copy, Debug, Default)]
pub struct HighMap {
    /// Bytes of RAM above 4 GiB now identity-mapped.
    pub mapped: usize,
    /// Of which in 1 GiB pages.
    pub in_1g_pages: usize,
    /// Bytes of RAM above 4 GiB left unmapped (beyond [`IDENTITY_LIMIT`],
    /// trimmed to 2 MiB boundaries, or no memory for a page directory).
    pub unmapped: usize,
}

/// Identity-maps the RAM above 4 GiB that `ram` lists (see the module
/// docs); `low_free` is where free, mapped RAM for page directories starts
/// (page-aligned, right after the kernel image) and `low_free_end` where
/// that RAM ends. Boot CPU, before the heap and before other CPUs start.
pub fn map_ram_above_4g(
    ram: &[boot::MemRegion],
    low_free: PhysAddr,
    low_free_end: PhysAddr,
) -> HighMap {
    let (low_free, low_free_end) = (low_free.as_usize(), low_free_end.as_usize());
    let use_1g = has_1g_pages();
    let mut bump = low_free;
    let mut out = HighMap::default();
    for r in ram {
        let end = r.start.saturating_add(r.len);
        let lo = r.start.max(BOOT_MAP_END).next_multiple_of(MIB2);
        let hi = end.min(IDENTITY_LIMIT) & !(MIB2 - 1);
        if end <= BOOT_MAP_END {
            continue;
        }
        let total = end - r.start.max(BOOT_MAP_END);
        let mut at = lo;
        while at < hi {
            let gib = at / GIB;
            // SAFETY: the boot PDPT (identity-mapped, in the kernel image);
            // `gib` < 512 since `at` < IDENTITY_LIMIT.
            let entry = unsafe { pdpt().add(gib) };
            if use_1g && at.is_multiple_of(GIB) && hi - at >= GIB {
                // SAFETY: a not-present entry past the boot map: nothing
                // caches it and nothing else writes it (boot CPU, early).
                unsafe { entry.write_volatile(at as u64 | PRESENT | WRITABLE | HUGE) };
                out.in_1g_pages += GIB;
                out.mapped += GIB;
                at += GIB;
                continue;
            }
            // SAFETY: as above.
            let mut e = unsafe { entry.read_volatile() };
            if e & PRESENT == 0 {
                if bump + PAGE > low_free_end {
                    break; // no room for a page directory: leave the rest
                }
                // SAFETY: free RAM after the kernel image, identity-mapped
                // below 4 GiB, handed out once by this bump allocator.
                unsafe { core::ptr::write_bytes(bump as *mut u8, 0, PAGE) };
                e = bump as u64 | PRESENT | WRITABLE;
                bump += PAGE;
                // SAFETY: as above (a not-present entry becomes present).
                unsafe { entry.write_volatile(e) };
            }
            let pd = (e & ADDR_MASK) as *mut u64;
            let gib_end = ((gib + 1) * GIB).min(hi);
            while at < gib_end {
                // SAFETY: the PD just made (or made for an earlier range in
                // this GiB); index < 512 within it.
                unsafe {
                    pd.add((at % GIB) / MIB2)
                        .write_volatile(at as u64 | PRESENT | WRITABLE | HUGE)
                };
                out.mapped += MIB2;
                at += MIB2;
            }
        }
        out.unmapped += total - (at.max(lo) - lo).min(total);
    }
    EARLY_PAGES_END.store(bump, Ordering::Relaxed);
    out
}

/// Whether `start..start + len` lies in the identity map: below 4 GiB, or
/// RAM that [`map_ram_above_4g`] mapped (every 2 MiB page present).
pub fn identity_mapped(start: PhysAddr, len: usize) -> bool {
    let Some(end) = start.checked_add(len).map(PhysAddr::as_usize) else {
        return false;
    };
    let start = start.as_usize();
    if end <= BOOT_MAP_END {
        return true;
    }
    if end > IDENTITY_LIMIT {
        return false;
    }
    let mut at = start & !(MIB2 - 1);
    while at < end {
        // SAFETY: the boot PDPT, index < 512.
        let e = unsafe { pdpt().add(at / GIB).read_volatile() };
        let present = if e & PRESENT == 0 {
            false
        } else if e & HUGE != 0 {
            true
        } else {
            // SAFETY: a PD this module made (or the boot code's), index < 512.
            let pde = unsafe {
                ((e & ADDR_MASK) as *const u64)
                    .add((at % GIB) / MIB2)
                    .read_volatile()
            };
            pde & PRESENT != 0
        };
        if !present {
            return false;
        }
        at += MIB2;
    }
    true
}

/// The page-table entry for `va` in the region, allocating its page table
/// if `alloc` (None: no table, or out of memory).
fn pte(va: VirtAddr, alloc: bool) -> Option<*mut u64> {
    let va = va.as_usize();
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
pub fn map_stack_page(va: VirtAddr, pa: PhysAddr) -> bool {
    let Some(pte) = pte(va, true) else {
        return false;
    };
    // SAFETY: the entry belongs to the region's page tables; `va` was
    // unmapped (and flushed everywhere) or never mapped.
    unsafe { pte.write_volatile(pa.as_u64() | PRESENT | WRITABLE) };
    true
}

/// Unmaps the page at `va` and flushes it from this CPU's TLB (other CPUs
/// may keep it until [`flush_tlb_local`] runs there).
pub fn unmap_stack_page(va: VirtAddr) {
    if let Some(pte) = pte(va, false) {
        // SAFETY: as in `map_stack_page`; then drop this CPU's cached entry.
        unsafe {
            pte.write_volatile(0);
            core::arch::asm!("invlpg [{}]", in(reg) va.as_usize(), options(nostack, preserves_flags));
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
