//! Exception vectors, the IRQ entry path and fault reports.
//!
//! The vector table has the architectural 16 slots of 0x80 bytes. The kernel runs
//! at EL1 on `SP_EL1`, so an IRQ arrives in the "current EL with SPx" IRQ slot;
//! every other slot (synchronous exceptions, FIQ, SError, anything from SP0 or a
//! lower EL) is unexpected and goes to [`fault`], which prints a report and ends
//! the run with [`ExitCode::Failure`].
//!
//! **IRQ dispatch.** The timer PPI reloads the timer and calls
//! `hooks::timer_interrupt()` for a tick or `hooks::timer_event()` for an
//! early timer event; the IPI SGIs (see `smp`) call `hooks::ipi(kind)`;
//! each after EOI, and every handled interrupt ends in `hooks::irq_exit()`.
//!
//! **Stack overflow.** Kernel stacks sit in the stack region (`paging`) with
//! unmapped guard pages below them, and exceptions are taken on the same
//! stack (`SP_EL1`). An overflow faults on the guard; taking that exception
//! would store the frame into the guard again, forever. So every
//! current-EL-SPx slot first checks, without touching memory (Linux's
//! `sp`/`x0` juggling; x1 parks in `TPIDRRO_EL0` for the second test), whether `sp` minus the largest frame lies in
//! the guard half of a region slot (the region's address bits all set, bit
//! 15 clear: slots are 64 KiB with the stack in the upper half). If so it
//! moves to this CPU's emergency stack (a guarded kernel stack once
//! generic code gave one, [`set_exception_stack`]; before that, on the boot
//! CPU, a static one with a guard of its own) and
//! reports from there, with the faulting `sp` in the frame. The same check
//! knows the guard below the boot CPU's static emergency stack (32 KiB,
//! aligned to 32 KiB) by its address bits. The check runs out of line (a
//! vector slot holds 32 instructions) and costs about 25 instructions per
//! exception and IRQ.
//!
//! **The boot stack.** The boot CPU runs on the boot stack through `SP_EL0`
//! (`SPSel` = 0, set by `boot`'s entry code) until its idle thread moves to
//! a kernel stack ([`super::call_on_stack`] selects `SP_EL1` again). Its
//! exceptions meanwhile arrive in the "current EL with SP0" slots, on
//! `SP_EL1`, which [`init`] points at the static emergency stack: an
//! overflow of the boot stack into its guard page is reported from there.
//!
//! **Fault reports from several CPUs.** Reports never wait unboundedly for the
//! generic console lock (the faulting thread may hold it): the first takes
//! it within a short bound and keeps it (`hooks::report_begin`), which keeps
//! other CPUs' log lines out, and writes without it otherwise. They serialise among
//! themselves on an arch-level report lock with a time bound
//! ([`REPORT_LOCK_TIMEOUT_NS`]): a CPU that cannot get it in time (the holder
//! is wedged) prints anyway, interleaved. The first CPU to finish its report
//! waits a short grace period ([`FAULT_GRACE_NS`]) for other CPUs to start
//! theirs and for reports in progress to finish (bounded as well) before it
//! ends the run, so simultaneous faults give whole, separate reports.
//! Nesting is counted per CPU: a fault inside a report prints one line and exits.
//!
//! **IRQ frame.** The IRQ stub saves every register the interrupted code did not
//! expect to lose on the interrupted thread's own stack: x0-x18, x29, x30,
//! `ELR_EL1`, `SPSR_EL1`, `FPCR`, `FPSR` and all of q0-q31. The handler ends in
//! `hooks::irq_exit()`, which may switch to another thread and come back much later;
//! since `switch_context` keeps only the AAPCS64 callee-saved state (x19-x29, d8-d15)
//! and another thread may clobber the *upper* halves of v8-v15, all 32 q-registers
//! are saved here, not just the caller-saved q0-q7 and q16-q31.

use core::cell::UnsafeCell;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use aarch64_cpu::registers::{Writeable, VBAR_EL1};

use super::semihosting;
use super::{cpu_id, exit_qemu, gic, pl011, smp, timer, ExitCode};
use crate::addr::VirtAddr;
use crate::arch::MAX_CPUS;
use crate::cpu::CpuId;

/// Size of the IRQ frame: 26 x-sized slots (x0-x18, x29, x30, ELR, SPSR, FPCR,
/// FPSR, padding) then 32 q-registers.
const IRQ_FRAME_BYTES: usize = 26 * 8 + 32 * 16;
const _: () = assert!(IRQ_FRAME_BYTES == 720 && IRQ_FRAME_BYTES.is_multiple_of(16));

/// Registers of the faulting context, as the fault stub saves them.
#[repr(C)]
struct FaultFrame {
    /// x0..=x30.
    x: [u64; 31],
    /// `sp` at the time of the exception.
    sp: u64,
    /// `ELR_EL1`: the faulting (or, for SError, interrupted) instruction.
    elr: u64,
    /// `SPSR_EL1`: PSTATE at the exception.
    spsr: u64,
    /// `ESR_EL1`: exception syndrome.
    esr: u64,
    /// `FAR_EL1`: faulting address (aborts, alignment faults).
    far: u64,
}
const FAULT_FRAME_BYTES: usize = core::mem::size_of::<FaultFrame>();
const _: () = assert!(FAULT_FRAME_BYTES == 288);

core::arch::global_asm!(
    r#"
    // Stack overflow check for the current-EL-SPx slots: would the frame
    // (at most {check} bytes) end in the guard half of a stack-region slot?
    // That is, are bits 38..30 of sp - {check} all set (the region) and bit
    // 15 clear (the guard half of a 64 KiB slot)? Uses no register: sp and
    // x0 are juggled as in Linux's arm64 entry (sp += x0; x0 = sp - x0).
    .macro stack_check slot
    sub     sp, sp, #{check}
    add     sp, sp, x0
    sub     x0, sp, x0
    tbnz    x0, #15, 1f
    tbz     x0, #38, 1f
    tbz     x0, #37, 1f
    tbz     x0, #36, 1f
    tbz     x0, #35, 1f
    tbz     x0, #34, 1f
    tbz     x0, #33, 1f
    tbz     x0, #32, 1f
    tbz     x0, #31, 1f
    tbz     x0, #30, 1f
    sub     x0, sp, x0
    sub     sp, sp, x0
    add     sp, sp, #{check}
    msr     tpidrro_el0, x1
    mov     x1, #\slot
    b       aarch64_stack_overflow
1:
    // Not a region slot: the guard below the boot CPU's static emergency
    // stack? (32 KiB, aligned to 32 KiB: the same bits above bit 15.) x1
    // is parked in TPIDRRO_EL0 meanwhile.
    msr     tpidrro_el0, x1
    adrp    x1, {static_guard}
    eor     x1, x1, x0
    lsr     x1, x1, #15
    cbnz    x1, 3f
    sub     x0, sp, x0
    sub     sp, sp, x0
    add     sp, sp, #{check}
    mov     x1, #\slot
    b       aarch64_stack_overflow
3:
    mrs     x1, tpidrro_el0
    sub     x0, sp, x0
    sub     sp, sp, x0
    add     sp, sp, #{check}
    .endm

    .section .text.vectors, "ax"
    .balign 0x800
    .global aarch64_vectors
aarch64_vectors:
    .irp slot, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    .balign 0x80
    .if (\slot >= 4) && (\slot <= 7)
    b       vector_check_\slot      // out of line: a slot holds 32 instructions
vector_resume_\slot:
    .endif
    .if \slot == 5
    b       aarch64_irq_entry
    .else
    sub     sp, sp, #{fault_frame}
    stp     x0, x1, [sp, #0]
    mov     x0, #\slot
    .if \slot < 4
    mrs     x1, sp_el0              // from SP_EL0: the boot stack (see above)
    .else
    add     x1, sp, #{fault_frame}
    .endif
    b       aarch64_fault_entry
    .endif
    .endr
    // A slot that outgrew its 0x80 bytes would shift every later vector:
    // the assembler then refuses to move `.org` backwards.
    .org    aarch64_vectors + 0x800
    // The current-EL-SPx slots' stack checks (the macro above), each
    // going back to its slot.
    .irp slot, 4,5,6,7
vector_check_\slot:
    stack_check \slot
    b       vector_resume_\slot
    .endr

// The stack pointer is in a guard page (x1 = vector slot, original x1 in
// TPIDRRO_EL0, sp and x0 as at the exception): move to this CPU's emergency
// stack, build the fault frame there and report. Never returns.
aarch64_stack_overflow:
    msr     tpidr_el0, x0
    mov     x0, sp
    msr     sp_el0, x0
    mrs     x0, tpidr_el1           // this CPU's block (0 before it has one)
    cbz     x0, 2f
    ldr     x0, [x0]                // PerCpu.id
2:
    lsl     x0, x0, #3
    mov     sp, x0
    adrp    x0, {tops}
    add     x0, x0, :lo12:{tops}
    add     sp, sp, x0              // &EMERGENCY_TOPS[cpu]
    mov     x0, sp
    ldr     x0, [x0]
    mov     sp, x0                  // top of this CPU's emergency stack
    sub     sp, sp, #{fault_frame}
    mrs     x0, tpidr_el0
    str     x0, [sp, #0]
    mrs     x0, tpidrro_el0
    str     x0, [sp, #8]
    mov     x0, x1
    mrs     x1, sp_el0
    b       aarch64_fault_entry

// Unexpected exception: x0 = vector slot, x1 = sp at the exception, original
// x0/x1 saved at [sp].
aarch64_fault_entry:
    stp     x2, x3, [sp, #16]
    stp     x4, x5, [sp, #32]
    stp     x6, x7, [sp, #48]
    stp     x8, x9, [sp, #64]
    stp     x10, x11, [sp, #80]
    stp     x12, x13, [sp, #96]
    stp     x14, x15, [sp, #112]
    stp     x16, x17, [sp, #128]
    stp     x18, x19, [sp, #144]
    stp     x20, x21, [sp, #160]
    stp     x22, x23, [sp, #176]
    stp     x24, x25, [sp, #192]
    stp     x26, x27, [sp, #208]
    stp     x28, x29, [sp, #224]
    stp     x30, x1, [sp, #240]
    mrs     x2, elr_el1
    mrs     x3, spsr_el1
    stp     x2, x3, [sp, #256]
    mrs     x2, esr_el1
    mrs     x3, far_el1
    stp     x2, x3, [sp, #272]
    mov     x1, x0
    mov     x0, sp
    bl      {fault}
    // Returns only to resume (a semihosting probe that trapped): ELR may have moved.
    ldp     x2, x3, [sp, #256]
    msr     elr_el1, x2
    msr     spsr_el1, x3
    ldp     x2, x3, [sp, #16]
    ldp     x4, x5, [sp, #32]
    ldp     x6, x7, [sp, #48]
    ldp     x8, x9, [sp, #64]
    ldp     x10, x11, [sp, #80]
    ldp     x12, x13, [sp, #96]
    ldp     x14, x15, [sp, #112]
    ldp     x16, x17, [sp, #128]
    ldp     x18, x19, [sp, #144]
    ldp     x20, x21, [sp, #160]
    ldp     x22, x23, [sp, #176]
    ldp     x24, x25, [sp, #192]
    ldp     x26, x27, [sp, #208]
    ldp     x28, x29, [sp, #224]
    ldr     x30, [sp, #240]
    ldp     x0, x1, [sp, #0]
    add     sp, sp, #{fault_frame}
    eret

// IRQ from EL1h: save the full caller-saved state on this thread's stack.
aarch64_irq_entry:
    sub     sp, sp, #{irq_frame}
    stp     x0, x1, [sp, #0]
    stp     x2, x3, [sp, #16]
    stp     x4, x5, [sp, #32]
    stp     x6, x7, [sp, #48]
    stp     x8, x9, [sp, #64]
    stp     x10, x11, [sp, #80]
    stp     x12, x13, [sp, #96]
    stp     x14, x15, [sp, #112]
    stp     x16, x17, [sp, #128]
    stp     x18, x29, [sp, #144]
    mrs     x0, elr_el1
    stp     x30, x0, [sp, #160]
    mrs     x0, spsr_el1
    mrs     x1, fpcr
    stp     x0, x1, [sp, #176]
    mrs     x0, fpsr
    str     x0, [sp, #192]
    stp     q0, q1, [sp, #208]
    stp     q2, q3, [sp, #240]
    stp     q4, q5, [sp, #272]
    stp     q6, q7, [sp, #304]
    stp     q8, q9, [sp, #336]
    stp     q10, q11, [sp, #368]
    stp     q12, q13, [sp, #400]
    stp     q14, q15, [sp, #432]
    stp     q16, q17, [sp, #464]
    stp     q18, q19, [sp, #496]
    stp     q20, q21, [sp, #528]
    stp     q22, q23, [sp, #560]
    stp     q24, q25, [sp, #592]
    stp     q26, q27, [sp, #624]
    stp     q28, q29, [sp, #656]
    stp     q30, q31, [sp, #688]
    mov     x29, xzr                // backtraces stop at the interrupt boundary
    bl      {irq}
    ldp     q0, q1, [sp, #208]
    ldp     q2, q3, [sp, #240]
    ldp     q4, q5, [sp, #272]
    ldp     q6, q7, [sp, #304]
    ldp     q8, q9, [sp, #336]
    ldp     q10, q11, [sp, #368]
    ldp     q12, q13, [sp, #400]
    ldp     q14, q15, [sp, #432]
    ldp     q16, q17, [sp, #464]
    ldp     q18, q19, [sp, #496]
    ldp     q20, q21, [sp, #528]
    ldp     q22, q23, [sp, #560]
    ldp     q24, q25, [sp, #592]
    ldp     q26, q27, [sp, #624]
    ldp     q28, q29, [sp, #656]
    ldp     q30, q31, [sp, #688]
    ldr     x0, [sp, #192]
    msr     fpsr, x0
    ldp     x0, x1, [sp, #176]
    msr     spsr_el1, x0
    msr     fpcr, x1
    ldp     x30, x0, [sp, #160]
    msr     elr_el1, x0
    ldp     x18, x29, [sp, #144]
    ldp     x16, x17, [sp, #128]
    ldp     x14, x15, [sp, #112]
    ldp     x12, x13, [sp, #96]
    ldp     x10, x11, [sp, #80]
    ldp     x8, x9, [sp, #64]
    ldp     x6, x7, [sp, #48]
    ldp     x4, x5, [sp, #32]
    ldp     x2, x3, [sp, #16]
    ldp     x0, x1, [sp, #0]
    add     sp, sp, #{irq_frame}
    eret
    .text
    "#,
    fault_frame = const FAULT_FRAME_BYTES,
    irq_frame = const IRQ_FRAME_BYTES,
    check = const IRQ_FRAME_BYTES,
    tops = sym EMERGENCY_TOPS,
    static_guard = sym BOOT_EMERGENCY,
    fault = sym fault,
    irq = sym irq,
);

extern "C" {
    static aarch64_vectors: u8;
}

/// Size of each CPU's emergency stack (16 KiB): the fault report of a stack
/// overflow runs there.
pub(super) const EMERGENCY_STACK_BYTES: usize = 16 * 1024;
const _: () = assert!(IRQ_FRAME_BYTES >= FAULT_FRAME_BYTES);

/// Bytes of the guard below the boot CPU's static emergency stack: 32 KiB,
/// and the block is aligned to 32 KiB, so the vectors' stack check knows
/// the guard by the address bits above bit 15.
const STATIC_GUARD_BYTES: usize = 32 * 1024;

/// The boot CPU's emergency stack, with its guard below it (left unmapped
/// by `mmu::init`): SP_EL1 while the boot CPU runs on the boot stack (on
/// SP_EL0), and where `aarch64_stack_overflow` goes until the CPU has a
/// guarded one from the stack region ([`set_exception_stack`]). Static: it
/// is needed before the heap exists.
#[repr(C, align(32768))]
struct BootEmergency {
    guard: UnsafeCell<[u8; STATIC_GUARD_BYTES]>,
    stack: UnsafeCell<[u8; EMERGENCY_STACK_BYTES]>,
}

// SAFETY: only the boot CPU's exception entry uses it; Rust only computes
// its addresses.
unsafe impl Sync for BootEmergency {}

static BOOT_EMERGENCY: BootEmergency = BootEmergency {
    guard: UnsafeCell::new([0; STATIC_GUARD_BYTES]),
    stack: UnsafeCell::new([0; EMERGENCY_STACK_BYTES]),
};

/// The guard below the boot CPU's static emergency stack, `[start, end)`.
pub(super) fn boot_emergency_guard() -> (VirtAddr, VirtAddr) {
    let g = VirtAddr::from_ptr(BOOT_EMERGENCY.guard.get());
    (g, g + STATIC_GUARD_BYTES)
}

/// Top of the boot CPU's static emergency stack.
fn boot_emergency_top() -> VirtAddr {
    VirtAddr::from_ptr(BOOT_EMERGENCY.stack.get()) + EMERGENCY_STACK_BYTES
}

/// Top of each CPU's emergency stack, read by `aarch64_stack_overflow`.
static EMERGENCY_TOPS: [AtomicUsize; MAX_CPUS] = [const { AtomicUsize::new(0) }; MAX_CPUS];

/// Gives secondary CPU `cpu` the emergency stack ending at `top` (a
/// guarded kernel stack, or a heap block of `EMERGENCY_STACK_BYTES` it
/// owns for good), before it starts.
pub fn set_exception_stack_of(cpu: CpuId, index: usize, top: crate::addr::VirtAddr) {
    if index == 0 {
        EMERGENCY_TOPS[cpu.index()].store(top.as_usize(), Ordering::Relaxed);
    }
}

/// Whether secondary CPU `cpu` has an emergency stack.
pub(super) fn has_emergency_stack(cpu: CpuId) -> bool {
    EMERGENCY_TOPS[cpu.index()].load(Ordering::Relaxed) != 0
}

/// Moves this CPU's emergency stack (where the report of a kernel stack
/// overflow runs) to `top`, a guarded kernel stack.
pub fn set_exception_stack(index: usize, top: crate::addr::VirtAddr) {
    if index == 0 {
        EMERGENCY_TOPS[cpu_id().index()].store(top.as_usize(), Ordering::Relaxed);
    }
}

/// Stacks per CPU for fatal exceptions: the one emergency stack (aarch64
/// has no NMI or machine-check vector of its own).
pub const EXCEPTION_STACKS: usize = 1;

/// Where this CPU's exception stack ends.
pub fn exception_stack_tops() -> [crate::addr::VirtAddr; EXCEPTION_STACKS] {
    [crate::addr::VirtAddr::new(
        EMERGENCY_TOPS[cpu_id().index()].load(Ordering::Relaxed),
    )]
}

/// Installs the kernel's vector table on this CPU and unmasks SErrors (so they get
/// reported). Every CPU calls it once (the boot CPU in `early_init`).
pub fn init() {
    if cpu_id() == CpuId::BOOT {
        let top = boot_emergency_top();
        EMERGENCY_TOPS[0].store(top.as_usize(), Ordering::Relaxed);
        // The boot CPU runs on the boot stack through SP_EL0 (`boot`'s
        // entry code): exceptions then switch to SP_EL1, which becomes the
        // static emergency stack, so an overflow of the boot stack into its
        // guard is reported from a working stack.
        // SAFETY: with SPSel = 0, selecting SP_EL1 for two instructions to
        // set it touches no memory; with SPSel = 1 (no boot stack switch,
        // e.g. a future entry path) nothing changes.
        unsafe {
            core::arch::asm!(
                "mrs {t}, spsel",
                "cbnz {t}, 1f",
                "msr spsel, #1",
                "mov sp, {top}",
                "msr spsel, #0",
                "1:",
                t = out(reg) _,
                top = in(reg) top.as_usize(),
                options(nostack),
            )
        };
    }
    let vectors = core::ptr::addr_of!(aarch64_vectors) as u64;
    VBAR_EL1.set(vectors);
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
    // SAFETY: clearing PSTATE.A lets SErrors be taken; the vectors are in place.
    unsafe { core::arch::asm!("msr daifclr, #4", options(nostack, preserves_flags)) };
}

/// IRQs that were neither the timer, an IPI nor spurious (for diagnostics).
pub static UNEXPECTED_IRQS: AtomicU64 = AtomicU64::new(0);

/// IRQ handler, on the interrupted thread's stack with IRQs masked.
extern "C" fn irq() {
    let acked = gic::ack();
    if acked.intid >= gic::SPURIOUS_MIN {
        return;
    }
    if acked.intid == timer::intid() {
        let due = timer::reload();
        gic::eoi(acked);
        super::super::timer_dispatch(due);
    } else if super::uart_intid() == Some(acked.intid) {
        // Level-triggered: draining the UART (or masking its receive
        // interrupt when the console's ring is full) lowers the line before
        // the EOI, so it is not taken again.
        crate::hooks::console_rx();
        gic::eoi(acked);
    } else if let Some(kind) = smp::ipi_kind(acked.intid) {
        // EOI first: an IPI sent while the hook runs (or switches threads in
        // irq_exit) is then taken again instead of being merged into this one.
        gic::eoi(acked);
        crate::hooks::ipi(kind);
    } else {
        gic::eoi(acked);
        UNEXPECTED_IRQS.fetch_add(1, Ordering::Relaxed);
    }
    crate::hooks::irq_exit();
}

/// Lock-free console writer for reports (CR before LF).
struct RawConsole;

impl Write for RawConsole {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for chunk in s.as_bytes().split_inclusive(|&b| b == b'\n') {
            match chunk.split_last() {
                Some((b'\n', rest)) => {
                    pl011::console_write(rest);
                    pl011::console_write(b"\r\n");
                }
                _ => pl011::console_write(chunk),
            }
        }
        Ok(())
    }
}

/// Human-readable name of an `ESR_EL1.EC` exception class.
fn exception_class_name(ec: u64) -> &'static str {
    match ec {
        0x00 => "Unknown reason (undefined instruction)",
        0x01 => "Trapped WFI/WFE",
        0x07 => "Trapped SIMD/FP access",
        0x0e => "Illegal execution state",
        0x15 => "SVC from AArch64",
        0x16 => "HVC from AArch64",
        0x17 => "SMC from AArch64",
        0x18 => "Trapped MSR/MRS/system instruction",
        0x19 => "Trapped SVE access",
        0x20 => "Instruction abort from a lower EL",
        0x21 => "Instruction abort from the current EL",
        0x22 => "PC alignment fault",
        0x24 => "Data abort from a lower EL",
        0x25 => "Data abort from the current EL",
        0x26 => "SP alignment fault",
        0x2c => "Floating-point exception",
        0x2f => "SError",
        0x30 | 0x31 => "Breakpoint",
        0x32 | 0x33 => "Software step",
        0x34 | 0x35 => "Watchpoint",
        0x3c => "BRK instruction",
        _ => "Other",
    }
}

/// Decodes the fault status code (`ISS[5:0]`) of an instruction or data abort.
fn abort_status_name(fsc: u64) -> &'static str {
    match fsc {
        0x00..=0x03 => "address size fault",
        0x04..=0x07 => "translation fault",
        0x09..=0x0b => "access flag fault",
        0x0d..=0x0f => "permission fault",
        0x10 => "synchronous external abort",
        0x14..=0x17 => "synchronous external abort on table walk",
        0x21 => "alignment fault",
        0x30 => "TLB conflict abort",
        _ => "other fault status",
    }
}

/// Faults taken so far on each CPU; a fault while reporting one skips straight to
/// the exit.
static FAULT_DEPTH: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];

/// Longest a CPU waits for the report lock, and the exiting CPU for other
/// reports in progress: at 115200 baud a report takes about 0.2 s, and the
/// host may keep the reporting CPU's vCPU off its core for seconds (5 s, as
/// for every wait on another CPU: "Waits on other CPUs" in
/// docs/design/kernel.md). Only a wedged reporter makes anyone wait this
/// long; the first report normally ends the run.
const REPORT_LOCK_TIMEOUT_NS: u64 = 5_000_000_000;

/// How long the first CPU done with its report waits for other CPUs to start
/// theirs before it ends the run.
const FAULT_GRACE_NS: u64 = 20_000_000;

/// Holder of the report lock: 0 = free, else CPU index + 1.
static REPORT_LOCK: AtomicUsize = AtomicUsize::new(0);
/// CPUs between entering [`fault`] and finishing their report.
static REPORTS_IN_PROGRESS: AtomicU32 = AtomicU32::new(0);

/// Takes the report lock, or gives up after [`REPORT_LOCK_TIMEOUT_NS`]. Returns
/// whether this CPU holds it (and must release it).
fn report_lock() -> bool {
    let me = cpu_id().index() + 1;
    let deadline = timer::now_ns().saturating_add(REPORT_LOCK_TIMEOUT_NS);
    loop {
        match REPORT_LOCK.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            // This CPU already holds it (fault while reporting): do not wait.
            Err(holder) if holder == me => return false,
            Err(_) if timer::now_ns() >= deadline => return false,
            Err(_) => core::hint::spin_loop(),
        }
    }
}

/// Handler for every unexpected vector slot. Returns only to resume after a
/// semihosting `hlt` that trapped (no semihosting available).
extern "C" fn fault(frame: &mut FaultFrame, slot: u64) {
    let ec = (frame.esr >> 26) & 0x3f;
    if slot == 4 && ec == 0 && semihosting::PROBING.load(Ordering::SeqCst) {
        // SAFETY: ELR points at the instruction that raised this synchronous
        // exception, in our own (readable) text.
        let insn = unsafe { core::ptr::read_volatile(frame.elr as *const u32) };
        if insn == semihosting::HLT_SEMIHOSTING {
            frame.elr += 4;
            return;
        }
    }
    let depth = FAULT_DEPTH[cpu_id().index()].fetch_add(1, Ordering::SeqCst);
    if depth == 0 {
        REPORTS_IN_PROGRESS.fetch_add(1, Ordering::SeqCst);
        // No other CPU's log line inside the report (bounded wait).
        crate::hooks::report_begin();
        let locked = report_lock();
        report(frame, slot, ec);
        crate::hooks::fault_reported();
        if locked {
            REPORT_LOCK.store(0, Ordering::Release);
        }
        REPORTS_IN_PROGRESS.fetch_sub(1, Ordering::SeqCst);
        // Give other CPUs that fault at about the same time (often a consequence
        // of this fault) a short grace period to start their report, and let
        // reports in progress finish, before the run ends.
        let now = timer::now_ns();
        let grace_end = now.saturating_add(FAULT_GRACE_NS);
        let deadline = now.saturating_add(REPORT_LOCK_TIMEOUT_NS);
        loop {
            let now = timer::now_ns();
            let busy = REPORTS_IN_PROGRESS.load(Ordering::SeqCst) != 0;
            if now >= deadline || (!busy && now >= grace_end) {
                break;
            }
            core::hint::spin_loop();
        }
    } else {
        let _ = writeln!(
            RawConsole,
            "\n*** nested CPU exception (ESR {:#x}, ELR {:#x}, FAR {:#x}, SP {:#x})",
            frame.esr, frame.elr, frame.far, frame.sp
        );
        report_stack_overflow(&mut RawConsole, frame, ec);
    }
    if depth <= 1 {
        exit_qemu(ExitCode::Failure);
    }
    loop {
        aarch64_cpu::asm::wfe();
    }
}

/// The stack-overflow line: a data abort's FAR in a guard page, or the
/// stack pointer in one (the entry code then moved to the emergency stack).
fn report_stack_overflow(out: &mut RawConsole, frame: &FaultFrame, ec: u64) {
    let guard = if ec == 0x25 {
        crate::hooks::stack_guard_owner(crate::addr::VirtAddr::new(frame.far as usize))
    } else {
        None
    }
    .or_else(|| crate::hooks::stack_guard_owner(crate::addr::VirtAddr::new(frame.sp as usize)));
    if let Some(owner) = guard {
        let _ = writeln!(
            out,
            "    kernel stack overflow: the fault address is in the guard page below the stack of {owner}"
        );
    }
}

/// Prints the fault report (not under the generic console lock: the faulting
/// thread may hold it; the caller holds the report lock if it could get it).
fn report(frame: &FaultFrame, slot: u64, ec: u64) {
    let mut out = RawConsole;
    let kind = ["synchronous exception", "IRQ", "FIQ", "SError"][(slot % 4) as usize];
    let from = [
        "current EL (SP0)",
        "current EL (SPx)",
        "lower EL (AArch64)",
        "lower EL (AArch32)",
    ][(slot / 4 % 4) as usize];
    let (tid, name) = crate::hooks::current_thread();
    let _ = write!(
        out,
        "\n*** CPU EXCEPTION: {} from {} on cpu {} in thread '{}'",
        kind,
        from,
        cpu_id(),
        name
    );
    let _ = match tid {
        Some(t) => writeln!(out, " (tid {t})"),
        None => writeln!(out),
    };
    let _ = write!(
        out,
        "    class: {} (EC {:#04x})",
        exception_class_name(ec),
        ec
    );
    if matches!(ec, 0x20 | 0x21 | 0x24 | 0x25) {
        let iss = frame.esr & 0x1ff_ffff;
        let _ = write!(out, ": {}", abort_status_name(iss & 0x3f));
        if ec >= 0x24 {
            let _ = write!(
                out,
                " on {}",
                if iss & (1 << 6) != 0 { "write" } else { "read" }
            );
        }
        if iss & 0x3f >= 0x04 && iss & 0x3f <= 0x0f {
            let _ = write!(out, ", level {}", iss & 3);
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "    ESR {:#010x}  FAR {:#018x}  ELR {:#018x}  SPSR {:#010x}  SP {:#018x}",
        frame.esr, frame.far, frame.elr, frame.spsr, frame.sp
    );
    report_stack_overflow(&mut out, frame, ec);
    for (i, pair) in frame.x.chunks(4).enumerate() {
        let _ = write!(out, "   ");
        for (j, v) in pair.iter().enumerate() {
            let _ = write!(out, " x{:<2} {:#018x}", i * 4 + j, v);
        }
        let _ = writeln!(out);
    }
    let mut ret = [0usize; 16];
    let n = crate::hooks::backtrace(
        crate::addr::VirtAddr::new(frame.sp as usize),
        crate::addr::VirtAddr::new(frame.x[29] as usize),
        &mut ret,
    );
    let _ = write!(
        out,
        "    backtrace (frame pointers): {:#x} {:#x}",
        frame.elr, frame.x[30]
    );
    for r in &ret[..n] {
        let _ = write!(out, " {r:#x}");
    }
    let _ = writeln!(out);
}
