//! The kernel heap: `linked_list_allocator`'s first-fit heap over each free
//! RAM range the arch layer reports (the kernel's `arch::heap_regions`; on x86_64 all RAM,
//! including above 4 GiB, highest range first), behind one
//! interrupt-disabling spinlock (a thread preempted inside the allocator
//! must not leave the lock held for the next thread to spin on). An
//! allocation tries the ranges in order; a free goes back to the range
//! that holds the address.
//!
//! Thread stacks, the thread table and the runqueue arenas come from here, at
//! spawn and boot time only: the schedule, wakeup and tick paths never allocate.
//! Kernel stacks have their own allocator on top of it (this crate's
//! `crate::stack`): heap pages mapped into a guarded virtual region.
//!
//! Failing allocations on demand ([`fail`], Linux's `failslab`): with
//! `fail_alloc=PERCENT,SEED` armed, an allocation made inside [`may_fail`]
//! (the callers that turn a failed allocation into an error: a kernel
//! stack and its page tables, a new task's scheduler state) fails with
//! that probability, from a PRNG stream seeded with SEED.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub use bootargs::FailAlloc;

use linked_list_allocator::Heap;

use crate::addr::PhysAddr;
use crate::sync::SpinLock;

/// Most RAM ranges the kernel heap spans.
pub const MAX_HEAP_REGIONS: usize = 16;

/// RAM ranges for the kernel heap, `(start, len)` (reached through the
/// identity map), in the order the heap should try them; the first `len`
/// are valid.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeapRegions {
    /// The ranges.
    pub ranges: [(PhysAddr, usize); MAX_HEAP_REGIONS],
    /// How many are valid.
    pub len: usize,
}

impl HeapRegions {
    /// Appends `(start, len)`; empty ranges and those beyond capacity are
    /// dropped (returns whether it was kept).
    pub fn push(&mut self, start: PhysAddr, len: usize) -> bool {
        if len == 0 || self.len == MAX_HEAP_REGIONS {
            return false;
        }
        self.ranges[self.len] = (start, len);
        self.len += 1;
        true
    }

    /// The valid ranges.
    pub fn as_slice(&self) -> &[(PhysAddr, usize)] {
        &self.ranges[..self.len]
    }
}

/// Usable bytes of a kernel stack (the kernel's stack allocator maps them
/// above an unmapped guard).
pub const STACK_SIZE: usize = 32 * 1024;

/// One heap per RAM range; the first `len` are in use.
struct Heaps {
    heaps: [Heap; MAX_HEAP_REGIONS],
    len: usize,
}

impl Heaps {
    fn in_use(&mut self) -> &mut [Heap] {
        &mut self.heaps[..self.len]
    }
}

struct KernelHeap(SpinLock<Heaps>);

// SAFETY: each heap hands out non-overlapping blocks of its own range (the
// ranges given to `init` do not overlap), serialised by the lock; `dealloc`
// gets back what `alloc` returned, and returns it to the heap whose range
// holds it.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if fail::should_fail() {
            return ptr::null_mut();
        }
        let mut heaps = self.0.lock();
        heaps
            .in_use()
            .iter_mut()
            .find_map(|h| h.allocate_first_fit(layout).ok())
            .map_or(ptr::null_mut(), |p| p.as_ptr())
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let Some(p) = NonNull::new(p) else { return };
        let mut heaps = self.0.lock();
        let owner = heaps
            .in_use()
            .iter_mut()
            .find(|h| (h.bottom()..h.top()).contains(&p.as_ptr()));
        if let Some(h) = owner {
            // SAFETY: the caller passes a block `alloc` returned with this
            // layout, and it came from this heap (its range holds it).
            unsafe { h.deallocate(p, layout) };
        }
    }
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(SpinLock::named(
    "heap",
    Heaps {
        heaps: [const { Heap::empty() }; MAX_HEAP_REGIONS],
        len: 0,
    },
));

static INIT: spin::Once<HeapRegions> = spin::Once::new();

/// Hands the free RAM ranges the arch layer reports (after the kernel
/// image) to the allocator, once; later calls change nothing. Returns the
/// ranges.
pub fn init(regions: HeapRegions) -> &'static HeapRegions {
    INIT.call_once(|| {
        let mut heaps = HEAP.0.lock();
        for (heap, &(start, len)) in heaps.heaps.iter_mut().zip(regions.as_slice()) {
            // SAFETY: the arch layer reports free, mapped RAM ranges that
            // do not overlap and are used for nothing else, and the `Once`
            // makes this the only call.
            unsafe { heap.init(start.identity_virt().as_mut_ptr(), len) };
        }
        heaps.len = regions.len;
        regions
    })
}

/// The heap's ranges, once [`init`] ran.
pub fn regions() -> Option<&'static HeapRegions> {
    INIT.get()
}

/// Total bytes of the heap's ranges.
pub fn total_bytes(regions: &HeapRegions) -> usize {
    regions.as_slice().iter().map(|&(_, len)| len).sum()
}

/// (used, free) bytes, over all ranges.
pub fn stats() -> (usize, usize) {
    let mut heaps = HEAP.0.lock();
    heaps
        .in_use()
        .iter()
        .fold((0, 0), |(u, f), h| (u + h.used(), f + h.free()))
}

/// Heap bytes kept for good by the arch layer (page tables it grows and never
/// frees), so that accounting can tell them from a leak.
static KEPT_BYTES: AtomicU64 = AtomicU64::new(0);

/// The arch layer allocated `bytes` it keeps for good (a page table).
pub fn note_kept(bytes: usize) {
    KEPT_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
}

/// Heap bytes kept for good ([`note_kept`]).
pub fn kept_bytes() -> usize {
    KEPT_BYTES.load(Ordering::Relaxed) as usize
}

/// Runs `f` with this CPU's allocations open to failure injection (and
/// preemption off, so no other thread's allocation is): for callers that
/// turn a failed allocation into an error (`try_reserve`, the stack
/// allocator), never for `Box::new` and friends, which cannot fail
/// gracefully. Nests.
pub fn may_fail<R>(f: impl FnOnce() -> R) -> R {
    let _p = crate::PreemptGuard::new();
    let depth = &fail::DEPTH[crate::arch::cpu_id().index()];
    depth.fetch_add(1, Ordering::Relaxed);
    let r = f();
    depth.fetch_sub(1, Ordering::Relaxed);
    r
}

/// Failing allocations on demand: the setting, and what it did.
pub mod fail {
    use super::{AtomicU32, AtomicU64, FailAlloc, Ordering};

    static PERCENT: AtomicU32 = AtomicU32::new(0);
    static SEED: AtomicU64 = AtomicU64::new(0);
    /// Decisions taken since the setting changed (the PRNG stream's index).
    static SEQ: AtomicU64 = AtomicU64::new(0);
    static CANDIDATES: AtomicU64 = AtomicU64::new(0);
    static FAILED: AtomicU64 = AtomicU64::new(0);
    /// Per CPU: inside [`may_fail`](super::may_fail) (nesting depth).
    pub(super) static DEPTH: [AtomicU32; crate::MAX_CPUS] =
        [const { AtomicU32::new(0) }; crate::MAX_CPUS];

    /// Arms (or, with 0 %, disarms) the injection; restarts the PRNG stream.
    pub fn set(f: FailAlloc) {
        PERCENT.store(0, Ordering::SeqCst);
        SEED.store(f.seed, Ordering::SeqCst);
        SEQ.store(0, Ordering::SeqCst);
        PERCENT.store(f.percent.min(100), Ordering::SeqCst);
    }

    /// The setting.
    pub fn get() -> FailAlloc {
        FailAlloc {
            percent: PERCENT.load(Ordering::Relaxed),
            seed: SEED.load(Ordering::Relaxed),
        }
    }

    /// (allocations that could have failed, allocations failed on purpose),
    /// since boot.
    pub fn counts() -> (u64, u64) {
        (
            CANDIDATES.load(Ordering::Relaxed),
            FAILED.load(Ordering::Relaxed),
        )
    }

    /// splitmix64's output function.
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Whether this allocation fails on purpose.
    #[inline]
    pub(super) fn should_fail() -> bool {
        let percent = PERCENT.load(Ordering::Relaxed);
        if percent == 0 {
            return false;
        }
        let cpu = crate::arch::cpu_id().index();
        if DEPTH[cpu].load(Ordering::Relaxed) == 0 {
            return false;
        }
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        CANDIDATES.fetch_add(1, Ordering::Relaxed);
        let seed = SEED.load(Ordering::Relaxed);
        let fail = mix(seed.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15))) % 100
            < u64::from(percent);
        if fail {
            FAILED.fetch_add(1, Ordering::Relaxed);
        }
        fail
    }
}
