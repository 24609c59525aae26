//! The heap spans every RAM range the arch reports, highest first
//! (`heap::init`): an allocation lands in the highest range, and memory
//! there holds what is written to it, page by page. In a boot with RAM above
//! 4 GiB (`scripts/test/pc-paths-test.sh`: x86_64 at 6 GiB) that range starts at
//! 4 GiB, so this writes and reads back memory above 4 GiB through the
//! identity map `arch::x86_64::paging` extended at boot.

use alloc::vec::Vec;

use kernel_hal::addr::VirtAddr;

use crate::{heap, kassert, ktest};

const PAGE: usize = 4096;
/// Most the test allocates (less when the highest range is small).
const MAX_BYTES: usize = 32 << 20;

ktest!(highmem_heap_allocates_from_highest_range, || {
    let Some(regions) = heap::regions() else {
        return Err("heap not initialised".into());
    };
    let ranges = regions.as_slice();
    kassert!(!ranges.is_empty());
    kassert!(
        ranges.windows(2).all(|w| w[0].0 > w[1].0 + (w[1].1 - 1)),
        "ranges not highest first / overlapping: {:x?}",
        ranges
    );
    let (top_start, top_len) = ranges[0];
    let (_, free) = heap::stats();
    let bytes = MAX_BYTES.min(top_len / 4).min(free / 4) & !(PAGE - 1);
    kassert!(
        bytes >= PAGE,
        "highest range {:#x}+{:#x} too small",
        top_start,
        top_len
    );
    let mut v: Vec<u64> = Vec::new();
    if v.try_reserve_exact(bytes / 8).is_err() {
        return Err(alloc::format!("cannot allocate {} KiB", bytes >> 10).into());
    }
    v.resize(bytes / 8, 0);
    let at = VirtAddr::from_ptr(v.as_ptr());
    let top = top_start.identity_virt();
    kassert!(
        (top..top + top_len).contains(&at),
        "{} KiB at {:#x}, not in the highest range {:#x}+{:#x}",
        bytes >> 10,
        at,
        top_start,
        top_len
    );
    // A different pattern per word: every page written, then read back.
    let pattern = |i: usize| (at.as_u64() + i as u64 * 8) ^ 0x5a5a_a5a5_0f0f_f0f0;
    for i in (0..v.len()).step_by(PAGE / 8 / 4) {
        v[i] = pattern(i);
    }
    for i in (0..v.len()).step_by(PAGE / 8 / 4) {
        kassert!(
            v[i] == pattern(i),
            "word {} at {:#x} lost its value",
            i,
            at + i * 8
        );
    }
    crate::kprintln!(
        "    {} KiB at {:#x} (highest of {} heap range(s), {} MiB above 4 GiB): written and read back",
        bytes >> 10,
        at,
        ranges.len(),
        ranges
            .iter()
            .map(|&(s, l)| (s.as_usize() + l).saturating_sub(s.as_usize().max(1 << 32)))
            .sum::<usize>()
            >> 20
    );
    Ok(())
});
