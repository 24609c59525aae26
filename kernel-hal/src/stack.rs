//! Kernel stacks with guard pages.
//!
//! Every spawned thread, every CPU's idle thread (CPU 0's moves here from
//! the boot stack) and every CPU's exception stack (where fatal-exception
//! reports run: `arch::set_exception_stack`) runs on a stack from here. Where the arch layer has a stack region
//! (`arch::stack_region_init`), the region is cut into [`SLOT_BYTES`] slots:
//! the lower [`GUARD_BYTES`] of a slot stay unmapped, the upper
//! [`STACK_SIZE`] are mapped with 4 KiB pages onto heap memory. A stack
//! overflow then touches the guard and faults at once, with the overflowing
//! thread still current; the fault report names it ([`guard_owner`]).
//!
//! # Why a guard page is enough
//! rustc emits inline stack probes on both kernel targets: a function whose
//! frame is larger than a page touches each page of it in order, top down,
//! before it uses any of it (`sub rsp, 4096; mov [rsp], 0` in a loop on
//! x86_64, `sub sp, sp, #4096; str xzr, [sp]` on aarch64; checked in the
//! rustc 1.95 output and by the `fault=huge_frame` boot). A frame of any size
//! thus hits the first guard page before it can skip over it. The guard is
//! 32 KiB all the same (it costs address space only), so that hand-written
//! assembly that moves the stack pointer by less than that is caught too.
//!
//! # Reusing addresses
//! Mapping a never-mapped (or flushed) address needs no TLB flush. After a
//! stack is freed its slot goes on a dirty list and its pages go back to
//! the heap at once: a stale TLB entry on another CPU is harmless while
//! nothing uses that address. Dirty slots become reusable only after a flush
//! of every CPU's TLB that started after they were unmapped; one such flush
//! (a cross-CPU call, when the clean slots run out) serves thousands of
//! slots (there are twice as many slots as threads), so spawn and join do
//! not pay a shootdown each.
//!
//! The stacks that exist before the heap (the boot stack, the boot CPU's
//! first exception stacks) are in the kernel image, with guards the arch
//! layer unmaps at boot (`arch::static_stack_guards`).
//!
//! # CPUs taken offline
//! A secondary CPU runs its idle thread on the stack it was started on
//! ([`KernelStack::start_cpu`], kept forever). [`park_this_cpu`] parks it
//! (CPU hotplug) and [`restart_cpu`] starts it again on that same stack,
//! whose parked frames are abandoned (the arch layer's INIT / `CPU_OFF`
//! never returns into them): the two make the arch layer's unsafe
//! `start_cpu` safe to call again.
//!
//! Without a region (the MMU off, or no memory for the page
//! directory) stacks are plain heap blocks with no guard; the canary at the
//! bottom of every stack (checked at each switch) is then the only check, and
//! stays as a second line of defence where guards exist.

use alloc::vec::Vec;
use core::alloc::Layout;
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicUsize, Ordering};

use crate::addr::VirtAddr;
use crate::arch;
use crate::cpu::CpuId;
use crate::sync::SpinLock;

/// Usable bytes of a kernel stack (arch code sizes the stacks it checks by
/// it too).
pub const STACK_SIZE: usize = crate::heap::STACK_SIZE;
/// Unmapped bytes below each stack.
pub const GUARD_BYTES: usize = 32 * 1024;
/// One slot of the region: guard, then stack.
pub const SLOT_BYTES: usize = GUARD_BYTES + STACK_SIZE;
const PAGE: usize = 4096;
/// Most slots used (the region may be larger): the kernel keeps it above
/// twice its thread slots, so the cross-CPU TLB flush that recycles freed
/// slots is rare.
pub const MAX_SLOTS: usize = 8192;
const _: () = assert!(MAX_SLOTS <= 1 << 16);
/// [`guard_owner`]'s answer for a slot nobody owns.
const NO_OWNER: u16 = u16::MAX;

/// Where the region starts (0: no region) and how many slots it has.
static REGION_BASE: AtomicUsize = AtomicUsize::new(0);
static REGION_SLOTS: AtomicUsize = AtomicUsize::new(0);
/// The thread slot index whose stack occupies each region slot.
static OWNER: [AtomicU16; MAX_SLOTS] = [const { AtomicU16::new(NO_OWNER) }; MAX_SLOTS];

struct Slots {
    /// Never mapped, or unmapped before a completed flush.
    clean: Vec<u16>,
    /// Unmapped, oldest first; reusable once a TLB flush of every CPU that
    /// started after they were unmapped has completed.
    dirty: Vec<u16>,
    /// A flush is under way (others wait for it rather than start one).
    flushing: bool,
}

static SLOTS: SpinLock<Option<Slots>> = SpinLock::named("stack_slots", None);
/// Completed all-CPU TLB flushes that recycled dirty slots.
static FLUSHES: AtomicU64 = AtomicU64::new(0);
/// Flushes every online CPU's TLB and waits for it (the kernel's cross-CPU
/// call): given to [`init`], because this crate has no cross-CPU calls.
static FLUSH_ALL: spin::Once<fn() -> bool> = spin::Once::new();

/// Sets up the stack region (needs the heap; boot CPU, before other CPUs
/// start). Without one, stacks come from the heap unguarded. `flush_all`
/// runs [`arch::flush_tlb_local`] on every online CPU and returns whether
/// all of them did (it may wait; it is called from thread context when the
/// clean slots run out).
pub fn init(flush_all: fn() -> bool) {
    FLUSH_ALL.call_once(|| flush_all);
    let Some((base, bytes)) = arch::stack_region_init() else {
        return;
    };
    let base = base.as_usize();
    let n = (bytes / SLOT_BYTES).min(MAX_SLOTS);
    let mut clean = Vec::new();
    let mut dirty = Vec::new();
    // Both lists get room for every slot up front: freeing never allocates.
    if clean.try_reserve_exact(n).is_err() || dirty.try_reserve_exact(n).is_err() {
        return;
    }
    clean.extend((0..n as u16).rev());
    *SLOTS.lock() = Some(Slots {
        clean,
        dirty,
        flushing: false,
    });
    REGION_SLOTS.store(n, Ordering::Relaxed);
    REGION_BASE.store(base, Ordering::Release);
}

/// Slots of the stack region (0 without one).
pub fn region_slots() -> usize {
    REGION_SLOTS.load(Ordering::Relaxed)
}

/// All-CPU TLB flushes so far that recycled freed slots.
pub fn tlb_flushes() -> u64 {
    FLUSHES.load(Ordering::Relaxed)
}

/// Whether stacks have guard pages.
pub fn guarded() -> bool {
    REGION_BASE.load(Ordering::Acquire) != 0
}

/// Out of memory, region slots or page-table memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoMemory;

/// A kernel stack: freed (unmapped, its memory back to the heap) on drop.
pub struct KernelStack {
    /// The backing memory (heap, page-aligned).
    mem: *mut u8,
    /// Lowest usable address (== `mem` without a region).
    bottom: VirtAddr,
    /// Region slot, if guarded.
    slot: Option<u16>,
}

// SAFETY: the stack is plain memory owned by this value; whoever holds it
// decides which thread runs on it.
unsafe impl Send for KernelStack {}

fn layout() -> Layout {
    // A power of two and a multiple of the page size: cannot fail.
    Layout::from_size_align(STACK_SIZE, PAGE).unwrap_or(Layout::new::<u8>())
}

impl KernelStack {
    /// A zeroed stack for thread slot `owner` (named in fault reports).
    /// Thread context (it may wait for other CPUs to flush their TLBs).
    pub fn new(owner: u32) -> Result<KernelStack, NoMemory> {
        // SAFETY: non-zero size. A failure is this function's error, so
        // failing allocations on demand may hit it.
        let mem = crate::heap::may_fail(|| unsafe { alloc::alloc::alloc_zeroed(layout()) });
        if mem.is_null() {
            return Err(NoMemory);
        }
        let mut stack = KernelStack {
            mem,
            bottom: VirtAddr::from_ptr(mem),
            slot: None,
        };
        if !guarded() {
            return Ok(stack);
        }
        let slot = take_slot()?;
        stack.slot = Some(slot);
        let bottom = slot_bottom(slot);
        stack.bottom = bottom;
        OWNER[slot as usize].store(owner.min(u32::from(NO_OWNER)) as u16, Ordering::Relaxed);
        let _guard = SLOTS.lock();
        for off in (0..STACK_SIZE).step_by(PAGE) {
            // The heap is identity mapped: its virtual address is the
            // physical one. A page table it needs may fail on demand too.
            let page = (VirtAddr::from_ptr(mem) + off).identity_phys();
            let mapped = page.is_some_and(|page| {
                crate::heap::may_fail(|| arch::map_stack_page(bottom + off, page))
            });
            if !mapped {
                drop(_guard);
                // Dropping unmaps what was mapped and frees the memory.
                return Err(NoMemory);
            }
        }
        Ok(stack)
    }

    /// One past the highest address (the initial stack pointer).
    pub fn top(&self) -> VirtAddr {
        self.bottom + STACK_SIZE
    }

    /// Keeps the stack forever (a CPU's idle stack); returns its top.
    pub fn leak(self) -> VirtAddr {
        let top = self.top();
        core::mem::forget(self);
        top
    }

    /// Writes the overflow canary at the bottom (a second line of defence
    /// behind the guard pages).
    pub fn write_canary(&self, canary: u128) {
        // SAFETY: the bottom 16 bytes of a live stack are mapped, writable
        // and 16-byte aligned (page-aligned), and nothing else uses them.
        unsafe { self.bottom.as_mut_ptr::<u128>().write_volatile(canary) };
    }

    /// Whether the canary written by [`Self::write_canary`] is intact.
    pub fn canary_intact(&self, canary: u128) -> bool {
        // SAFETY: as in `write_canary`; a volatile read of mapped memory.
        unsafe { self.bottom.as_ptr::<u128>().read_volatile() == canary }
    }

    /// Runs `f(arg)` on this stack, forever: the stack is leaked (CPU 0's
    /// idle thread leaves the boot stack this way).
    pub fn run_forever(self, f: extern "C" fn(usize) -> !, arg: usize) -> ! {
        let top = self.leak();
        // SAFETY: `top` is the 16-byte aligned end of a mapped stack that is
        // never freed, so running on it forever is sound; `f` never returns.
        unsafe { arch::call_on_stack(top, f, arg) }
    }

    /// Starts secondary CPU `cpu` on this stack (leaked: the CPU runs on it
    /// forever, also if the start timed out and the CPU comes late), waiting
    /// up to `wait_ns` for it (normally `arch::START_TIMEOUT_NS`; 0 gives up
    /// at once, the CPU arriving as a late one would, to test the second
    /// try). Returns whether it started; a CPU
    /// that did not may be started again.
    pub fn start_cpu(self, cpu: CpuId, entry: extern "C" fn(CpuId) -> !, wait_ns: u64) -> bool {
        let top = self.leak();
        // SAFETY: `top` is the 16-byte aligned end of a mapped kernel stack
        // that belongs to this CPU forever; the caller runs after
        // `arch::early_init` on the boot CPU.
        let started = unsafe { arch::start_cpu(cpu, top, entry, wait_ns) };
        if started {
            START_TOPS[cpu.index()].store(top.as_usize(), Ordering::Release);
        }
        started
    }
}

/// The top of the stack each secondary CPU was started on (0: not started).
static START_TOPS: [AtomicUsize; arch::MAX_CPUS] = [const { AtomicUsize::new(0) }; arch::MAX_CPUS];
/// Set by a CPU once it parked itself ([`park_this_cpu`]), cleared by
/// [`restart_cpu`].
static PARKED: [AtomicBool; arch::MAX_CPUS] = [const { AtomicBool::new(false) }; arch::MAX_CPUS];

/// Whether secondary CPU `cpu` was started ([`KernelStack::start_cpu`]).
pub fn cpu_started(cpu: CpuId) -> bool {
    START_TOPS[cpu.index()].load(Ordering::Acquire) != 0
}

/// Whether `cpu` is parked ([`park_this_cpu`]) and may be restarted.
pub fn cpu_parked(cpu: CpuId) -> bool {
    PARKED[cpu.index()].load(Ordering::Acquire)
}

/// Parks this CPU, a secondary one, for good (CPU hotplug), with
/// interrupts off: `arch::park_this_cpu`. [`cpu_parked`] says so once it
/// is; [`restart_cpu`] starts it again.
pub fn park_this_cpu() -> ! {
    arch::park_this_cpu(&PARKED[arch::cpu_id().index()])
}

/// Starts CPU `cpu`, parked by [`park_this_cpu`], again on the stack it was
/// first started on, with `entry(cpu)` (interrupts off) as for
/// [`KernelStack::start_cpu`]. False if it is not parked or did not come
/// up (it is then still parked and may be tried again).
pub fn restart_cpu(cpu: CpuId, entry: extern "C" fn(CpuId) -> !) -> bool {
    let top = START_TOPS[cpu.index()].load(Ordering::Acquire);
    if top == 0
        || PARKED[cpu.index()]
            .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
    {
        return false;
    }
    // `top` is the 16-byte aligned end of the mapped kernel stack leaked
    // for `cpu` when it was first started, which belongs to it forever.
    // The CPU parked itself (PARKED, claimed just above by this call
    // alone), so nothing runs on that stack: its parked frames are
    // abandoned, as INIT (x86_64) and CPU_OFF (aarch64) never return into
    // them.
    // SAFETY: an owned, mapped, unused stack top for `cpu` (above), and
    // `arch::early_init` ran before any CPU was started.
    let started =
        unsafe { arch::start_cpu(cpu, VirtAddr::new(top), entry, arch::START_TIMEOUT_NS) };
    if !started {
        // After false the CPU never runs `entry` nor touches the stack.
        PARKED[cpu.index()].store(true, Ordering::Release);
    }
    started
}

/// Walks the frame-pointer chain from `fp` (a frame record: the caller's
/// frame pointer, then the return address, on both arches) as far as it
/// stays inside the region stack that holds `sp` and climbs: return
/// addresses into `out`, at most its length. Returns how many; none when
/// `sp` is not on a region stack that has an owner (a live, mapped stack).
/// Takes no locks: for fault reports, where `sp` is the faulting thread's
/// own stack, which stays mapped while it runs.
pub fn walk_frames(sp: VirtAddr, fp: VirtAddr, out: &mut [usize]) -> usize {
    let Some((lo, hi)) = stack_bounds(sp) else {
        return 0;
    };
    if guard_owner(lo - 8).is_none_or(|owner| owner.is_none()) {
        return 0;
    }
    let (lo, hi, mut fp) = (lo.as_usize(), hi.as_usize(), fp.as_usize());
    let mut n = 0;
    while n < out.len() && fp >= lo && fp.is_multiple_of(8) && fp + 16 <= hi {
        // SAFETY: `[fp, fp + 16)` lies inside `[lo, hi)`, the stack part of
        // a region slot that has an owner, so it is mapped.
        let (next, ret) = unsafe {
            (
                core::ptr::read_volatile(fp as *const usize),
                core::ptr::read_volatile((fp + 8) as *const usize),
            )
        };
        if ret == 0 {
            break;
        }
        out[n] = ret;
        n += 1;
        if next <= fp {
            break;
        }
        fp = next;
    }
    n
}

impl Drop for KernelStack {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            OWNER[slot as usize].store(NO_OWNER, Ordering::Relaxed);
            let mut slots = SLOTS.lock();
            for off in (0..STACK_SIZE).step_by(PAGE) {
                arch::unmap_stack_page(self.bottom + off);
            }
            if let Some(s) = slots.as_mut() {
                // Capacity for every slot was reserved: no allocation.
                s.dirty.push(slot);
            }
        }
        // SAFETY: allocated in `new` with this layout, and no longer mapped
        // anywhere but the identity map (nobody runs on it any more).
        unsafe { alloc::alloc::dealloc(self.mem, layout()) };
    }
}

/// Owner ids of exception stacks: this plus the CPU index (thread slot
/// indices are below it).
pub const EXCEPTION_OWNER: u32 = 0xfe00;
// Every CPU's id fits below NO_OWNER (0xffff would read as "no owner").
const _: () = assert!(EXCEPTION_OWNER as usize + crate::MAX_CPUS <= NO_OWNER as usize);

/// Gives this CPU (`cpu`, the boot CPU: its static exception stacks have
/// only a page of guard and no owner record) guarded exception stacks from
/// the region (`arch::set_exception_stack`); keeps the static ones when
/// there is no memory or no region.
pub fn exception_stack_init(cpu: CpuId) {
    give_exception_stacks(cpu, arch::set_exception_stack);
}

/// Guarded exception stacks for `cpu` from the region, each handed to
/// `set(index, top)`; none without a region, one fewer per failed
/// allocation (the arch layer keeps its fallback for that index).
fn give_exception_stacks(cpu: CpuId, mut set: impl FnMut(usize, VirtAddr)) {
    if !guarded() {
        return;
    }
    for index in 0..arch::EXCEPTION_STACKS {
        if let Ok(stack) = KernelStack::new(EXCEPTION_OWNER + cpu.as_u32()) {
            set(index, stack.leak());
        }
    }
}

/// Gives secondary CPU `cpu` its exception stacks before it starts
/// (`arch::set_exception_stack_of`): guarded ones from the region, so a
/// fault during its bring-up already reports on a guarded stack. Once per
/// CPU (a CPU whose start timed out keeps them for a later attempt: it may
/// still come up and use them). Without a region or memory the arch layer
/// falls back to unguarded heap stacks.
pub fn exception_stacks_for(cpu: CpuId) {
    static GIVEN: crate::cpumask::AtomicCpuMask = crate::cpumask::AtomicCpuMask::new();
    if !guarded() || GIVEN.test(cpu, Ordering::Relaxed) {
        return;
    }
    GIVEN.set(cpu, Ordering::Relaxed);
    give_exception_stacks(cpu, |index, top| {
        arch::set_exception_stack_of(cpu, index, top)
    });
}

/// Owner ids of the stacks secondary CPUs start on before they switch to
/// their idle thread's (the arch layer's bootstrap stacks, where it has
/// them): this plus the CPU index.
pub const BRINGUP_OWNER: u32 = 0xfd00;
const _: () = assert!(BRINGUP_OWNER as usize + crate::MAX_CPUS <= EXCEPTION_OWNER as usize);

/// A guarded stack for secondary CPU `cpu`'s bring-up, kept forever (a CPU
/// that comes up late may still run on it): its top, or `None` without a
/// region or memory. Boot CPU. (For arches whose CPUs start on a stack of
/// their own before the caller's: aarch64; x86_64's start on the caller's.)
#[allow(dead_code)]
pub fn bringup_stack(cpu: CpuId) -> Option<VirtAddr> {
    if !guarded() {
        return None;
    }
    KernelStack::new(BRINGUP_OWNER + cpu.as_u32())
        .ok()
        .map(KernelStack::leak)
}

/// The CPU whose bring-up stack has owner id `owner`, if it is one.
pub fn bringup_stack_cpu(owner: u32) -> Option<CpuId> {
    owner
        .checked_sub(BRINGUP_OWNER)
        .and_then(|c| CpuId::new(c as usize))
}

// The stacks in the kernel image (the boot stack, the boot CPU's static
// exception stacks) had their guards unmapped by `early_init` on this boot
// (whatever the loader, firmware and memory size), and a fault address in
// each guard is attributed to its stack. The fault tests
// (`fault=early_stack`, `early_exception_stack`) overflow them for real.
crate::ktest!(static_stacks_have_guards, || {
    let Some(g) = arch::static_stack_guards() else {
        return Err("early_init could not unmap the static stacks' guards".into());
    };
    let boot = boot::boot_stack();
    crate::kassert_eq!(
        g.boot,
        (VirtAddr::new(boot.guard), VirtAddr::new(boot.bottom))
    );
    for (lo, hi) in [g.boot].into_iter().chain(g.exception) {
        crate::kassert!(lo < hi && lo.is_aligned(PAGE) && hi.is_aligned(PAGE));
        for addr in [lo, hi - 8] {
            crate::kassert!(
                crate::hooks::stack_guard_owner(addr).is_some(),
                "{addr:#x} in a static guard [{lo:#x}, {hi:#x}) names no stack"
            );
        }
        crate::kassert!(crate::hooks::stack_guard_owner(hi).is_none());
    }
    Ok(())
});

/// The CPU whose exception stack has owner id `owner`, if it is one.
pub fn exception_stack_cpu(owner: u32) -> Option<CpuId> {
    owner
        .checked_sub(EXCEPTION_OWNER)
        .and_then(|c| CpuId::new(c as usize))
}

/// Lowest stack address of region slot `slot`.
fn slot_bottom(slot: u16) -> VirtAddr {
    VirtAddr::new(REGION_BASE.load(Ordering::Relaxed)) + (slot as usize * SLOT_BYTES + GUARD_BYTES)
}

/// A clean region slot; when none is left, flushes every CPU's TLB to clean
/// the dirty ones (or waits for the flush another CPU has under way).
fn take_slot() -> Result<u16, NoMemory> {
    let n = loop {
        let mut slots = SLOTS.lock();
        let s = slots.as_mut().ok_or(NoMemory)?;
        if let Some(slot) = s.clean.pop() {
            return Ok(slot);
        }
        if !s.flushing {
            if s.dirty.is_empty() {
                return Err(NoMemory);
            }
            s.flushing = true;
            // Only these were unmapped before the flush starts.
            break s.dirty.len();
        }
        drop(slots);
        // Bounded: the flusher's cross-CPU call times out at worst.
        arch::cpu_relax();
    };
    let flushed = FLUSH_ALL.get().is_some_and(|flush_all| flush_all());
    let mut slots = SLOTS.lock();
    let s = slots.as_mut().ok_or(NoMemory)?;
    s.flushing = false;
    if !flushed {
        return Err(NoMemory);
    }
    FLUSHES.fetch_add(1, Ordering::Relaxed);
    // Entries are appended, and only a flush (this one) removes them.
    let Slots { clean, dirty, .. } = s;
    clean.extend(dirty.drain(..n));
    clean.pop().ok_or(NoMemory)
}

/// If `addr` is in the guard of a region slot: the thread slot index whose
/// stack sits above it (`None` inside: a slot without an owner).
pub fn guard_owner(addr: VirtAddr) -> Option<Option<u32>> {
    let addr = addr.as_usize();
    let base = REGION_BASE.load(Ordering::Acquire);
    if base == 0 || addr < base {
        return None;
    }
    let slot = (addr - base) / SLOT_BYTES;
    if slot >= REGION_SLOTS.load(Ordering::Relaxed) || (addr - base) % SLOT_BYTES >= GUARD_BYTES {
        return None;
    }
    let owner = OWNER[slot].load(Ordering::Relaxed);
    Some((owner != NO_OWNER).then_some(u32::from(owner)))
}

/// The stack `[bottom, top)` of the region slot holding `addr` (in its
/// guard or its stack), for backtraces in fault reports. Takes no locks.
pub fn stack_bounds(addr: VirtAddr) -> Option<(VirtAddr, VirtAddr)> {
    let addr = addr.as_usize();
    let base = REGION_BASE.load(Ordering::Acquire);
    let off = addr.checked_sub(base)?;
    let slot = off / SLOT_BYTES;
    if base == 0 || slot >= REGION_SLOTS.load(Ordering::Relaxed) {
        return None;
    }
    let bottom = base + slot * SLOT_BYTES + GUARD_BYTES;
    Some((VirtAddr::new(bottom), VirtAddr::new(bottom + STACK_SIZE)))
}

/// Lowest stack address of the region slot holding `addr`, if `addr` is in
/// the stack part of a slot.
pub fn stack_bottom_of(addr: VirtAddr) -> Option<VirtAddr> {
    let addr = addr.as_usize();
    let base = REGION_BASE.load(Ordering::Acquire);
    let off = addr.checked_sub(base)?;
    let slot = off / SLOT_BYTES;
    (base != 0 && slot < REGION_SLOTS.load(Ordering::Relaxed) && off % SLOT_BYTES >= GUARD_BYTES)
        .then(|| VirtAddr::new(base + slot * SLOT_BYTES + GUARD_BYTES))
}
