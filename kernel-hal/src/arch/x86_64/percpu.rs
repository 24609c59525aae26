//! Per-CPU data through the GS base, and each CPU's GDT and TSS.
//!
//! Every CPU owns one [`PerCpu`] block and points `IA32_GS_BASE` at it, so
//! `cpu_id()` is a single `mov` from `gs:` with no table lookup and no lock. The
//! block also holds the CPU's GDT and TSS: a TSS is per CPU by definition (its
//! IST slots give the double-fault and page-fault (shared), NMI and
//! machine-check handlers stacks of their own, so a corrupt stack pointer or
//! a kernel stack overflow into a guard page still yields a report).
//!
//! The boot CPU's block and IST stacks are static: they are needed before
//! the heap exists. Each of those IST stacks has a guard page below it,
//! which `guard_static_stacks` unmaps first thing, so even a fault
//! report that overflows its stack during early boot faults into a guard
//! (and through the IST starts again at the top of a stack). An application
//! processor's block is allocated from the heap by [`alloc_block`] when the
//! boot CPU starts it (only CPUs that exist cost memory, not `MAX_CPUS`
//! blocks in `.bss`), and the AP takes it in `smp::ap_main` before anything
//! on it can call `cpu_id()`. Its IST stacks are chosen before it starts:
//! guarded stacks from the stack region ([`preset_ist_stack`]), or heap
//! stacks without guards when there is no region. [`BLOCKS`] maps dense CPU
//! index -> block.

use core::cell::UnsafeCell;
use core::mem::offset_of;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use x86_64::instructions::segmentation::{Segment, CS, DS, ES, FS, GS, SS};
use x86_64::instructions::tables::load_tss;
use x86_64::registers::model_specific::Msr;
use x86_64::registers::segmentation::SegmentSelector;
use x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable};
use x86_64::structures::tss::TaskStateSegment;
use x86_64::{PrivilegeLevel, VirtAddr};

use super::super::MAX_CPUS;
use crate::cpu::CpuId;

/// IST slot (1-based, as in the IDT gate) of the double-fault handler.
pub const IST_DOUBLE_FAULT: u8 = 1;
/// IST slot of the NMI handler.
pub const IST_NMI: u8 = 2;
/// IST slot of the machine-check handler.
pub const IST_MACHINE_CHECK: u8 = 3;
/// IST slot of the page-fault handler: a kernel stack overflow faults on the
/// guard page below the stack, and the handler needs a stack that works. It
/// shares the double fault's stack: both are fatal, and a double fault while
/// a page fault is reported ends the run all the same.
pub const IST_PAGE_FAULT: u8 = IST_DOUBLE_FAULT;
/// IST stacks per CPU.
const IST_SLOTS: usize = 3;
/// Size of each IST stack.
pub const IST_STACK_BYTES: usize = 16 * 1024;
/// Kernel code selector (GDT index 1).
pub const KERNEL_CS: SegmentSelector = SegmentSelector::new(1, PrivilegeLevel::Ring0);
/// Kernel data selector (GDT index 2).
pub const KERNEL_DS: SegmentSelector = SegmentSelector::new(2, PrivilegeLevel::Ring0);

/// `IA32_GS_BASE`.
const MSR_GS_BASE: u32 = 0xC000_0101;

/// One CPU's private block; `gs:0` points at its own start.
#[repr(C, align(64))]
pub struct PerCpu {
    /// Address of this block (read through `gs:0`).
    self_addr: usize,
    /// Dense CPU index, 0 = boot CPU (read through `gs:8` by `cpu_id()`).
    cpu_id: usize,
    /// The LAPIC id of this CPU.
    lapic_id: u32,
    tss: TaskStateSegment,
    gdt: GlobalDescriptorTable<8>,
}

/// An IST stack, 16-byte aligned as the SysV ABI wants.
#[repr(C, align(16))]
pub struct IstStack([u8; IST_STACK_BYTES]);

impl IstStack {
    /// Address one past the stack's last byte.
    fn top(&self) -> crate::addr::VirtAddr {
        crate::addr::VirtAddr::from_ptr(self.0.as_ptr()) + IST_STACK_BYTES
    }
}

/// Bytes of the guard below each of the boot CPU's static IST stacks (one
/// page: rustc probes every page of a larger frame, see `crate::stack`).
pub const BOOT_IST_GUARD_BYTES: usize = 4096;

/// A static IST stack with a guard page below it (unmapped by
/// [`super::guard_static_stacks`]).
#[repr(C, align(4096))]
struct GuardedIst {
    guard: [u8; BOOT_IST_GUARD_BYTES],
    stack: IstStack,
}

/// The boot CPU's IST stacks, which it uses until generic code gives it
/// stacks from the stack region (`stack::exception_stack_init`):
/// static, because faults must be reported before the heap exists.
struct BootIst(UnsafeCell<[GuardedIst; IST_SLOTS]>);

// SAFETY: only CPU 0's hardware uses the stacks (through its TSS); the Rust
// side takes addresses only.
unsafe impl Sync for BootIst {}

static BOOT_IST: BootIst = BootIst(UnsafeCell::new(
    [const {
        GuardedIst {
            guard: [0; BOOT_IST_GUARD_BYTES],
            stack: IstStack([0; IST_STACK_BYTES]),
        }
    }; IST_SLOTS],
));

/// The guard pages below the boot CPU's static IST stacks, as
/// `(first byte, end)`, in [`IST_DOUBLE_FAULT`], [`IST_NMI`],
/// [`IST_MACHINE_CHECK`] order.
pub fn boot_ist_guards() -> [(crate::addr::VirtAddr, crate::addr::VirtAddr); IST_SLOTS] {
    let base = crate::addr::VirtAddr::from_ptr(BOOT_IST.0.get());
    core::array::from_fn(|i| {
        let g = base + i * core::mem::size_of::<GuardedIst>();
        (g, g + BOOT_IST_GUARD_BYTES)
    })
}

/// The boot CPU's block (zero-initialised, in `.bss`; filled by
/// [`init_cpu`]`(0)`).
struct BootBlock(UnsafeCell<core::mem::MaybeUninit<PerCpu>>);

// SAFETY: only CPU 0 writes it (once, in `init_cpu`), and its GDT/TSS are
// used by CPU 0's hardware only.
unsafe impl Sync for BootBlock {}

static BOOT_BLOCK: BootBlock = BootBlock(UnsafeCell::new(core::mem::MaybeUninit::zeroed()));

/// Each CPU's block by dense index: 0 = [`BOOT_BLOCK`] (set by
/// `init_cpu(0)`), the others from [`alloc_block`]; null until then. A block
/// is never freed (an AP that comes up late may still take it).
static BLOCKS: [AtomicPtr<PerCpu>; MAX_CPUS] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CPUS];

/// Where each CPU's IST slots point when it loads its TSS (0: not chosen
/// yet). The boot CPU fills an AP's entries before starting it: guarded
/// stacks from the stack region ([`preset_ist_stack`]), or failing that
/// heap stacks without guards ([`alloc_block`]).
static IST_TOPS: [[AtomicU64; IST_SLOTS]; MAX_CPUS] =
    [const { [const { AtomicU64::new(0) }; IST_SLOTS] }; MAX_CPUS];

/// IST slot of each [`IST_TOPS`] column.
const IST_SLOT_OF: [u8; IST_SLOTS] = [IST_DOUBLE_FAULT, IST_NMI, IST_MACHINE_CHECK];

/// Gives AP `cpu` the stack ending at `top` for IST column `index` (0:
/// double and page fault, 1: NMI, 2: machine check) before it starts. Boot
/// CPU, before [`alloc_block`] for that CPU.
pub fn preset_ist_stack(cpu: CpuId, index: usize, top: crate::addr::VirtAddr) {
    if cpu != CpuId::BOOT && index < IST_SLOTS {
        IST_TOPS[cpu.index()][index].store(top.as_u64(), Ordering::Relaxed);
    }
}

/// Allocates CPU `cpu`'s block from the heap, and heap IST stacks (no
/// guard pages) for every IST column [`preset_ist_stack`] left empty,
/// unless it has them; false without memory or for an index out of range.
/// Boot CPU, before starting `cpu`.
pub fn alloc_block(cpu: CpuId) -> bool {
    if cpu == CpuId::BOOT {
        return false;
    }
    for top in &IST_TOPS[cpu.index()] {
        if top.load(Ordering::Relaxed) != 0 {
            continue;
        }
        let layout = core::alloc::Layout::new::<IstStack>();
        // SAFETY: the layout has a non-zero size; the stack is leaked (a
        // late AP may still use it).
        let p = unsafe { alloc::alloc::alloc(layout) };
        if p.is_null() {
            return false;
        }
        // Only the address: the stack's bytes stay uninitialised.
        top.store(p as u64 + IST_STACK_BYTES as u64, Ordering::Relaxed);
    }
    if !BLOCKS[cpu.index()].load(Ordering::Acquire).is_null() {
        return true;
    }
    let layout = core::alloc::Layout::new::<PerCpu>();
    // SAFETY: the layout has a non-zero size. All-zero bytes are a valid
    // `PerCpu` (integers, a zeroed TSS and GDT); `init_cpu` rewrites the TSS
    // and GDT before use.
    let p = unsafe { alloc::alloc::alloc_zeroed(layout) }.cast::<PerCpu>();
    if p.is_null() {
        return false;
    }
    BLOCKS[cpu.index()].store(p, Ordering::Release);
    true
}

/// Offset of `cpu_id` in [`PerCpu`], for the `gs:` load.
const CPU_ID_OFFSET: usize = offset_of!(PerCpu, cpu_id);

/// Sets up the boot CPU: its GDT and TSS (with IST stacks), reloads every
/// segment register, and points GS at its [`PerCpu`] block.
pub fn init_boot_cpu() {
    // SAFETY: called once on the boot CPU, before interrupts are enabled and
    // before anything reads block 0.
    unsafe { init_cpu(CpuId::BOOT) }
}

/// Fills block `cpu_id` and makes it this CPU's: loads its GDT and TSS (IST
/// stacks for double fault and page fault, NMI, machine check), reloads the segment
/// registers and sets `IA32_GS_BASE`, so that [`cpu_id`] returns `cpu_id`.
///
/// # Safety
/// Call exactly once per CPU index, on the CPU that will own it, with
/// interrupts disabled; for an AP [`alloc_block`] succeeded for it; no other
/// CPU may use that index.
pub unsafe fn init_cpu(cpu_id: CpuId) {
    if cpu_id == CpuId::BOOT {
        BLOCKS[0].store(BOOT_BLOCK.0.get().cast::<PerCpu>(), Ordering::Release);
        // SAFETY: only the stacks' addresses are taken; CPU 0's TSS alone
        // names them.
        let boot = unsafe { &*BOOT_IST.0.get() };
        for (top, g) in IST_TOPS[0].iter().zip(boot.iter()) {
            top.store(g.stack.top().as_u64(), Ordering::Relaxed);
        }
    }
    let cpu = BLOCKS[cpu_id.index()].load(Ordering::Acquire);
    assert!(!cpu.is_null(), "cpu {cpu_id} has no per-CPU block");
    // SAFETY: a live block (static or leaked heap memory, zeroed or
    // initialised: every bit pattern of it is valid) that belongs to this CPU
    // alone (the caller's contract), so this is the only reference to it.
    let pc = unsafe { &mut *cpu };
    pc.self_addr = cpu as usize;
    pc.cpu_id = cpu_id.index();
    pc.tss = TaskStateSegment::new();
    for (slot, top) in IST_SLOT_OF.into_iter().zip(IST_TOPS[cpu_id.index()].iter()) {
        let top = top.load(Ordering::Relaxed);
        assert!(top != 0, "cpu {cpu_id} has no IST stack for slot {slot}");
        pc.tss.interrupt_stack_table[usize::from(slot - 1)] = VirtAddr::new(top);
    }
    pc.gdt = GlobalDescriptorTable::empty();
    let cs = pc.gdt.append(Descriptor::kernel_code_segment());
    let ds = pc.gdt.append(Descriptor::kernel_data_segment());
    // SAFETY: the TSS lives in the same 'static block as the GDT.
    let tss_desc = unsafe { Descriptor::tss_segment_unchecked(&pc.tss) };
    let tss = pc.gdt.append(tss_desc);
    debug_assert!(cs == KERNEL_CS && ds == KERNEL_DS);
    // SAFETY: the GDT is 'static and never modified while loaded; the selectors
    // name the descriptors just appended; FS/GS get the null selector (their
    // bases come from MSRs), and the GS base is written after the GS load.
    unsafe {
        pc.gdt.load_unsafe();
        CS::set_reg(cs);
        SS::set_reg(ds);
        DS::set_reg(ds);
        ES::set_reg(ds);
        FS::set_reg(SegmentSelector(0));
        GS::set_reg(SegmentSelector(0));
        load_tss(tss);
        Msr::new(MSR_GS_BASE).write(cpu as u64);
    }
}

/// Points IST slot `slot` of this CPU's TSS at the stack ending at `top`
/// (the CPU reads it at the next interrupt through that slot).
pub fn set_ist_stack(slot: u8, top: crate::addr::VirtAddr) {
    let irq = super::irq_save();
    // SAFETY: GS points at this CPU's block, which only this CPU writes;
    // interrupts are off, so no IST interrupt reads the entry half-written.
    unsafe {
        (*current()).tss.interrupt_stack_table[usize::from(slot - 1)] = VirtAddr::new(top.as_u64());
    }
    super::irq_restore(irq);
}

/// Where IST slot `slot` of this CPU's TSS points.
pub fn ist_stack(slot: u8) -> crate::addr::VirtAddr {
    let irq = super::irq_save();
    // SAFETY: GS points at this CPU's block; only this CPU writes it, and not
    // while this read runs (interrupts are off).
    let top = unsafe { (*current()).tss.interrupt_stack_table[usize::from(slot - 1)].as_u64() };
    super::irq_restore(irq);
    crate::addr::VirtAddr::from_u64(top)
}

/// Records this CPU's LAPIC id (once the LAPIC is enabled).
pub fn set_lapic_id(id: u32) {
    // SAFETY: GS points at this CPU's block, which only this CPU writes; the
    // field is plain data read by no one concurrently.
    unsafe {
        let pc = current();
        (*pc).lapic_id = id;
    }
}

/// This CPU's LAPIC id.
pub fn lapic_id() -> u32 {
    // SAFETY: as in `set_lapic_id`.
    unsafe { (*current()).lapic_id }
}

/// This CPU's block.
fn current() -> *mut PerCpu {
    let addr: usize;
    // SAFETY: GS points at this CPU's block, whose first field is its address.
    unsafe {
        core::arch::asm!(
            "mov {a}, qword ptr gs:[0]",
            a = out(reg) addr,
            options(nostack, readonly, preserves_flags),
        );
    }
    addr as *mut PerCpu
}

/// This CPU's dense index (0 = boot CPU). Valid once `early_init` has run (it
/// is the first thing `kernel_main` does).
#[inline]
pub fn cpu_id() -> CpuId {
    let id: usize;
    // SAFETY: GS points at this CPU's `PerCpu` block (set by `init_cpu`).
    unsafe {
        core::arch::asm!(
            "mov {id}, qword ptr gs:[{off}]",
            id = out(reg) id,
            off = const CPU_ID_OFFSET,
            options(nostack, readonly, preserves_flags),
        );
    }
    // The block holds the index `init_cpu` stored from a `CpuId`.
    CpuId::wrapping(id)
}
