//! Where the AP start-up trampoline goes: a 4 KiB page below 1 MiB (a
//! STARTUP IPI names a page number of 8 bits) that the loader's memory map
//! lists as usable RAM.
//!
//! 0x8000 when it is usable (where the trampoline always was; it keeps clear
//! of the real-mode IVT and BIOS data area in page 0 and of the EBDA at the
//! top of conventional memory), else the highest usable page below 1 MiB
//! other than page 0 (top-down, as Linux takes its real-mode trampoline).
//! The heap never reaches below 1 MiB (`heap_regions`), and by the time an AP
//! starts the boot code has copied everything it needed out of loader memory,
//! so a usable page there is free. No such page (or no memory map at all,
//! whose low memory nothing vouches for): `None`, and the kernel runs on the
//! boot CPU alone, saying so in one line.

use crate::addr::PhysAddr;

/// The page the trampoline has always used, taken when it is usable.
pub const PREFERRED_PAGE: usize = 0x8000;
const PAGE: usize = 4096;
/// STARTUP IPI vectors reach pages below 1 MiB.
const LOW_LIMIT: usize = 1 << 20;

/// The trampoline page for the memory map `ram` (usable RAM ranges), if any.
pub fn trampoline_page(ram: &[boot::MemRegion]) -> Option<PhysAddr> {
    let usable = |page: usize| {
        ram.iter()
            .any(|r| r.start <= page && r.start.saturating_add(r.len) >= page + PAGE)
    };
    if usable(PREFERRED_PAGE) {
        return Some(PhysAddr::new(PREFERRED_PAGE));
    }
    ram.iter()
        .filter_map(|r| {
            let end = r.start.saturating_add(r.len).min(LOW_LIMIT) & !(PAGE - 1);
            let first = r.start.max(PAGE).next_multiple_of(PAGE);
            (end >= first + PAGE).then(|| end - PAGE)
        })
        .max()
        .map(PhysAddr::new)
}
