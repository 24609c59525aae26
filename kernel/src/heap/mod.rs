//! The kernel heap: `linked_list_allocator`'s first-fit heap over the free RAM
//! the arch layer reports, behind an interrupt-disabling spinlock (a thread
//! preempted inside the allocator must not leave the lock held for the next
//! thread to spin on).
//!
//! Thread stacks, the thread table and the runqueue arenas come from here, at
//! spawn and boot time only: the schedule, wakeup and tick paths never allocate.
//! Kernel stacks have their own allocator on top of it ([`stack`]): heap
//! pages mapped into a guarded virtual region.

pub mod stack;

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{self, NonNull};

use linked_list_allocator::Heap;

use crate::sync::SpinLock;

struct KernelHeap(SpinLock<Heap>);

// SAFETY: the heap hands out non-overlapping blocks of the region given to
// `init`, serialised by the lock; `dealloc` gets back what `alloc` returned.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.0
            .lock()
            .allocate_first_fit(layout)
            .map_or(ptr::null_mut(), |p| p.as_ptr())
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(p) {
            // SAFETY: the caller passes a block `alloc` returned with this layout.
            unsafe { self.0.lock().deallocate(p, layout) };
        }
    }
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(SpinLock::new(Heap::empty()));

static INIT: spin::Once<(usize, usize)> = spin::Once::new();

/// Hands the free RAM the arch layer reports for `info` (after the kernel
/// image) to the allocator, once; later calls change nothing. Returns the
/// heap's (start, length).
pub fn init(info: &boot::BootInfo) -> (usize, usize) {
    *INIT.call_once(|| {
        let (start, len) = crate::arch::heap_region(info);
        // SAFETY: the arch layer reports free, mapped RAM used for nothing
        // else, and the `Once` makes this the only call.
        unsafe { HEAP.0.lock().init(start as *mut u8, len) };
        (start, len)
    })
}

/// (used, free) bytes.
pub fn stats() -> (usize, usize) {
    let h = HEAP.0.lock();
    (h.used(), h.free())
}
