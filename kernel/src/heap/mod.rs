//! The kernel heap and kernel stacks.
//!
//! The global allocator is the hardware layer's (`kernel_hal::heap`: a
//! first-fit heap over each free RAM range, behind one interrupt-disabling
//! spinlock); [`init`] hands it the ranges the arch layer reports. Kernel
//! stacks have their own allocator on top of it (`kernel_hal::stack`,
//! re-exported as [`stack`]): heap pages mapped into a guarded virtual
//! region.
//!
//! Thread stacks, the thread table and the runqueue arenas come from the
//! heap at spawn and boot time only: the schedule, wakeup and tick paths
//! never allocate.

pub use kernel_hal::stack;

pub use kernel_hal::heap::{regions, stats, total_bytes};

use kernel_hal::heap::HeapRegions;

/// Hands the free RAM ranges the arch layer reports for `info` (after the
/// kernel image) to the allocator, once; later calls change nothing.
/// Returns the ranges.
pub fn init(info: &boot::BootInfo) -> &'static HeapRegions {
    match kernel_hal::heap::regions() {
        Some(r) => r,
        None => kernel_hal::heap::init(crate::arch::heap_regions(info)),
    }
}
