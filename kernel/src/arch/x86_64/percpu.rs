//! Per-CPU data through the GS base, and each CPU's GDT and TSS.
//!
//! Every CPU owns one [`PerCpu`] block and points `IA32_GS_BASE` at it, so
//! `cpu_id()` is a single `mov` from `gs:` with no table lookup and no lock. The
//! block also holds the CPU's GDT and TSS: a TSS is per CPU by definition (its
//! IST slots give the double-fault and page-fault (shared), NMI and
//! machine-check handlers stacks of their own, so a corrupt stack pointer or
//! a kernel stack overflow into a guard page still yields a report).
//!
//! The boot CPU's block (with its IST stacks) is static: it is needed before
//! the heap exists. An application processor's block is allocated from the
//! heap by [`alloc_block`] when the boot CPU starts it (only CPUs that exist
//! cost memory: about 49 KiB each, not `MAX_CPUS` x 49 KiB in `.bss`), and
//! the AP takes it in `smp::ap_main` before anything on it can call
//! `cpu_id()`. [`BLOCKS`] maps dense CPU index -> block.

use core::cell::UnsafeCell;
use core::mem::offset_of;
use core::sync::atomic::{AtomicPtr, Ordering};

use x86_64::instructions::segmentation::{Segment, CS, DS, ES, FS, GS, SS};
use x86_64::instructions::tables::load_tss;
use x86_64::registers::model_specific::Msr;
use x86_64::registers::segmentation::SegmentSelector;
use x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable};
use x86_64::structures::tss::TaskStateSegment;
use x86_64::{PrivilegeLevel, VirtAddr};

use super::super::MAX_CPUS;

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
    fn top(&self) -> u64 {
        self.0.as_ptr() as u64 + IST_STACK_BYTES as u64
    }
}

/// A CPU's block and its IST stacks, allocated together.
#[repr(C, align(64))]
struct CpuBlock {
    pc: PerCpu,
    ist: [IstStack; IST_SLOTS],
}

/// The boot CPU's block (zero-initialised, in `.bss`; filled by
/// [`init_cpu`]`(0)`).
struct BootBlock(UnsafeCell<core::mem::MaybeUninit<CpuBlock>>);

// SAFETY: only CPU 0 writes it (once, in `init_cpu`), and its GDT/TSS/IST
// stacks are used by CPU 0's hardware only.
unsafe impl Sync for BootBlock {}

static BOOT_BLOCK: BootBlock = BootBlock(UnsafeCell::new(core::mem::MaybeUninit::zeroed()));

/// Each CPU's block by dense index: 0 = [`BOOT_BLOCK`] (set by
/// `init_cpu(0)`), the others from [`alloc_block`]; null until then. A block
/// is never freed (an AP that comes up late may still take it).
static BLOCKS: [AtomicPtr<CpuBlock>; MAX_CPUS] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CPUS];

/// Allocates CPU `cpu`'s block (and IST stacks) from the heap, unless it
/// has one; false without memory or for an index out of range. Boot CPU,
/// before starting `cpu`.
pub fn alloc_block(cpu: usize) -> bool {
    if cpu == 0 || cpu >= MAX_CPUS {
        return false;
    }
    if !BLOCKS[cpu].load(Ordering::Acquire).is_null() {
        return true;
    }
    let layout = core::alloc::Layout::new::<CpuBlock>();
    // SAFETY: the layout has a non-zero size. All-zero bytes are a valid
    // `CpuBlock` (integers, a zeroed TSS and GDT, IST stack bytes);
    // `init_cpu` rewrites the TSS and GDT before use.
    let p = unsafe { alloc::alloc::alloc_zeroed(layout) }.cast::<CpuBlock>();
    if p.is_null() {
        return false;
    }
    BLOCKS[cpu].store(p, Ordering::Release);
    true
}

/// Offset of `cpu_id` in [`PerCpu`], for the `gs:` load.
const CPU_ID_OFFSET: usize = offset_of!(PerCpu, cpu_id);

/// Sets up the boot CPU: its GDT and TSS (with IST stacks), reloads every
/// segment register, and points GS at its [`PerCpu`] block.
pub fn init_boot_cpu() {
    // SAFETY: called once on the boot CPU, before interrupts are enabled and
    // before anything reads block 0.
    unsafe { init_cpu(0) }
}

/// Fills block `cpu_id` and makes it this CPU's: loads its GDT and TSS (IST
/// stacks for double fault and page fault, NMI, machine check), reloads the segment
/// registers and sets `IA32_GS_BASE`, so that [`cpu_id`] returns `cpu_id`.
///
/// # Safety
/// Call exactly once per CPU index, on the CPU that will own it, with
/// interrupts disabled; `cpu_id < MAX_CPUS`, and for an AP [`alloc_block`]
/// succeeded for it; no other CPU may use that index.
pub unsafe fn init_cpu(cpu_id: usize) {
    assert!(cpu_id < MAX_CPUS, "cpu index {cpu_id} out of range");
    if cpu_id == 0 {
        BLOCKS[0].store(BOOT_BLOCK.0.get().cast::<CpuBlock>(), Ordering::Release);
    }
    let block = BLOCKS[cpu_id].load(Ordering::Acquire);
    assert!(!block.is_null(), "cpu {cpu_id} has no per-CPU block");
    // SAFETY: a live block (static or leaked heap memory, zeroed or
    // initialised: every bit pattern of it is valid) that belongs to this CPU
    // alone (the caller's contract), so this is the only reference to it.
    let cpu: *mut PerCpu = unsafe { core::ptr::addr_of_mut!((*block).pc) };
    // SAFETY: as above: exclusive use of a 'static block.
    let pc = unsafe { &mut *cpu };
    // SAFETY: only this CPU's TSS will name these stacks, and only their
    // addresses are taken here.
    let ist_stacks = unsafe { &(*block).ist };
    pc.self_addr = cpu as usize;
    pc.cpu_id = cpu_id;
    pc.tss = TaskStateSegment::new();
    for (slot, stack) in [IST_DOUBLE_FAULT, IST_NMI, IST_MACHINE_CHECK]
        .into_iter()
        .zip(ist_stacks.iter())
    {
        pc.tss.interrupt_stack_table[usize::from(slot - 1)] = VirtAddr::new(stack.top());
    }
    pc.gdt = GlobalDescriptorTable::empty();
    let cs = pc.gdt.append(Descriptor::kernel_code_segment());
    let ds = pc.gdt.append(Descriptor::kernel_data_segment());
    // SAFETY: the TSS lives in the same 'static block as the GDT.
    let tss = pc
        .gdt
        .append(unsafe { Descriptor::tss_segment_unchecked(&pc.tss) });
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
pub fn set_ist_stack(slot: u8, top: u64) {
    let irq = super::irq_save();
    // SAFETY: GS points at this CPU's block, which only this CPU writes;
    // interrupts are off, so no IST interrupt reads the entry half-written.
    unsafe {
        (*current()).tss.interrupt_stack_table[usize::from(slot - 1)] = VirtAddr::new(top);
    }
    super::irq_restore(irq);
}

/// Where IST slot `slot` of this CPU's TSS points.
pub fn ist_stack(slot: u8) -> u64 {
    let irq = super::irq_save();
    // SAFETY: GS points at this CPU's block; only this CPU writes it, and not
    // while this read runs (interrupts are off).
    let top = unsafe { (*current()).tss.interrupt_stack_table[usize::from(slot - 1)].as_u64() };
    super::irq_restore(irq);
    top
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
pub fn cpu_id() -> usize {
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
    id
}
