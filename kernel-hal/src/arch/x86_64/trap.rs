//! The IDT, the interrupt entry stubs and the trap dispatcher.
//!
//! Every one of the 256 vectors gets a 16-byte stub (generated in `global_asm!`,
//! so no unstable `x86-interrupt` ABI): it pushes a zero error code where the
//! CPU pushes none, then the vector number, and jumps to `isr_common`, which
//! saves all 15 general registers into a [`TrapFrame`] on the current stack and
//! calls [`trap_dispatch`]. The target is soft-float: there is no SSE/x87 state
//! to save.
//!
//! Saving every register (not only the caller-saved ones) costs a few cycles and
//! gives complete fault reports. Because the frame lives on the interrupted
//! thread's own stack, `hooks::irq_exit()` may switch to another thread: this
//! one's frame waits on its stack and is popped (`iretq`) when it runs again.
//!
//! Vectors: 0-31 CPU exceptions (all fatal: a report, then QEMU exits with
//! failure; the page fault runs on an IST stack, so that a kernel stack
//! overflow, which faults on the guard page below the stack, gets its report
//! instead of a double and then a triple fault), [`apic::TIMER_VECTOR`] the tick, `apic::PIC_VECTOR_BASE..+16` the
//! masked 8259 (spurious only), [`apic::IPI_RESCHEDULE_VECTOR`] and
//! [`apic::IPI_CALL_VECTOR`] the inter-processor interrupts (EOI, then
//! `hooks::ipi(kind)` and `hooks::irq_exit()`), [`apic::SPURIOUS_VECTOR`] the
//! LAPIC's spurious vector. Anything else is reported once per occurrence and
//! acknowledged.

use core::cell::UnsafeCell;
use core::fmt::Write;
use core::sync::atomic::{AtomicUsize, Ordering};

use x86_64::instructions::tables::lidt;
use x86_64::registers::control::Cr2;
use x86_64::structures::DescriptorTablePointer;
use x86_64::VirtAddr;

use super::{apic, percpu, serial};

/// Size of each entry stub in `isr_stubs`.
const STUB_BYTES: usize = 16;

// Stub for vector v: [push 0] ; push v ; jmp isr_common (at most 12 bytes, padded
// to 16 so that stub v sits at isr_stubs + 16 * v). AT&T syntax keeps `$v` an
// immediate. Exceptions 8, 10-14, 17, 21, 29 and 30 push an error code themselves.
core::arch::global_asm!(
    r#"
    .macro isr_stub v
        .balign 16
        .if (\v == 8) || (\v == 10) || (\v == 11) || (\v == 12) || (\v == 13) || (\v == 14) || (\v == 17) || (\v == 21) || (\v == 29) || (\v == 30)
        .else
            pushq $0
        .endif
        pushq $\v
        jmp isr_common
    .endm

    .section .text.isr, "ax"
    .balign 16
    .global isr_stubs
isr_stubs:
    .irp hi, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    .irp lo, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
        isr_stub (\hi*16+\lo)
    .endr
    .endr

isr_common:
    pushq %rax
    pushq %rbx
    pushq %rcx
    pushq %rdx
    pushq %rsi
    pushq %rdi
    pushq %rbp
    pushq %r8
    pushq %r9
    pushq %r10
    pushq %r11
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    cld                     /* the ABI wants DF clear at calls */
    movq %rsp, %rdi         /* &mut TrapFrame; 16-byte aligned (22 qwords below the CPU-aligned frame) */
    call trap_dispatch
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %r11
    popq %r10
    popq %r9
    popq %r8
    popq %rbp
    popq %rdi
    popq %rsi
    popq %rdx
    popq %rcx
    popq %rbx
    popq %rax
    addq $16, %rsp          /* vector and error code */
    iretq
    "#,
    options(att_syntax)
);

extern "C" {
    /// The first of 256 entry stubs, [`STUB_BYTES`] apart.
    static isr_stubs: u8;
}

/// The registers saved on interrupt entry, lowest address first.
#[repr(C)]
#[derive(Debug)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    /// Pushed by the stub.
    pub vector: u64,
    /// Pushed by the CPU, or 0 by the stub.
    pub error_code: u64,
    // Pushed by the CPU.
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

/// One 16-byte IDT gate.
#[repr(C)]
#[derive(Clone, Copy)]
struct Gate {
    offset_low: u16,
    selector: u16,
    ist: u8,
    type_attr: u8,
    offset_mid: u16,
    offset_high: u32,
    reserved: u32,
}

impl Gate {
    const MISSING: Gate = Gate {
        offset_low: 0,
        selector: 0,
        ist: 0,
        type_attr: 0,
        offset_mid: 0,
        offset_high: 0,
        reserved: 0,
    };

    /// A present, DPL 0 interrupt gate (interrupts stay disabled in the handler).
    fn interrupt(handler: u64, ist: u8) -> Gate {
        Gate {
            offset_low: handler as u16,
            selector: percpu::KERNEL_CS.0,
            ist,
            type_attr: 0x8E,
            offset_mid: (handler >> 16) as u16,
            offset_high: (handler >> 32) as u32,
            reserved: 0,
        }
    }
}

#[repr(C, align(16))]
struct Idt(UnsafeCell<[Gate; 256]>);

// SAFETY: written only by `init` on the boot CPU before it is loaded; after that
// only the CPUs read it.
unsafe impl Sync for Idt {}

/// One IDT shared by all CPUs.
static IDT: Idt = Idt(UnsafeCell::new([Gate::MISSING; 256]));

/// Fills the IDT (every vector to its stub; double fault, NMI, machine check
/// and page fault on their own IST stacks) and loads it on this CPU.
pub fn init() {
    let stubs = core::ptr::addr_of!(isr_stubs) as u64;
    // SAFETY: the boot CPU fills the table once, before loading it anywhere.
    let idt = unsafe { &mut *IDT.0.get() };
    for (vector, gate) in idt.iter_mut().enumerate() {
        let ist = match vector {
            2 => percpu::IST_NMI,
            8 => percpu::IST_DOUBLE_FAULT,
            14 => percpu::IST_PAGE_FAULT,
            18 => percpu::IST_MACHINE_CHECK,
            _ => 0,
        };
        *gate = Gate::interrupt(stubs + (vector * STUB_BYTES) as u64, ist);
    }
    load();
}

/// Loads the shared IDT on this CPU (APs call this after the boot CPU's `init`).
pub fn load() {
    let ptr = DescriptorTablePointer {
        limit: (core::mem::size_of::<[Gate; 256]>() - 1) as u16,
        base: VirtAddr::new(IDT.0.get() as u64),
    };
    // SAFETY: the IDT is 'static, fully initialised, and every gate points at a
    // stub in this image.
    unsafe { lidt(&ptr) };
}

/// Called by `isr_common` with interrupts disabled, on the interrupted stack (or
/// on an IST stack for vectors 2, 8, 14, 18).
#[no_mangle]
extern "C" fn trap_dispatch(frame: &mut TrapFrame) {
    let vector = frame.vector as u8;
    match vector {
        0..=31 => exception(frame),
        apic::TIMER_VECTOR => {
            let due = apic::timer_reload();
            apic::eoi();
            super::super::timer_dispatch(due);
            crate::hooks::irq_exit();
        }
        super::ioapic::COM1_VECTOR => {
            crate::hooks::console_rx();
            apic::eoi();
            crate::hooks::irq_exit();
        }
        apic::IPI_RESCHEDULE_VECTOR => ipi(crate::arch::IpiKind::Reschedule),
        apic::IPI_CALL_VECTOR => ipi(crate::arch::IpiKind::Call),
        apic::SPURIOUS_VECTOR => {}
        v if (apic::PIC_VECTOR_BASE..apic::PIC_VECTOR_BASE + 16).contains(&v) => {}
        _ => {
            let _ = writeln!(
                serial::RawWriter,
                "\nx86_64: unexpected interrupt vector {} on cpu {}",
                vector,
                percpu::cpu_id()
            );
            apic::eoi();
        }
    }
}

/// An inter-processor interrupt (sent by `smp::send_ipi`): acknowledged first,
/// like the tick, so that the hook may switch threads.
fn ipi(kind: crate::arch::IpiKind) {
    apic::eoi();
    crate::hooks::ipi(kind);
    crate::hooks::irq_exit();
}

/// Exception names, by vector.
const EXCEPTION_NAMES: [&str; 32] = [
    "divide error (#DE)",
    "debug (#DB)",
    "non-maskable interrupt (NMI)",
    "breakpoint (#BP)",
    "overflow (#OF)",
    "bound range exceeded (#BR)",
    "invalid opcode (#UD)",
    "device not available (#NM)",
    "double fault (#DF)",
    "coprocessor segment overrun",
    "invalid TSS (#TS)",
    "segment not present (#NP)",
    "stack-segment fault (#SS)",
    "general protection fault (#GP)",
    "page fault (#PF)",
    "reserved (15)",
    "x87 floating-point error (#MF)",
    "alignment check (#AC)",
    "machine check (#MC)",
    "SIMD floating-point exception (#XM)",
    "virtualization exception (#VE)",
    "control protection exception (#CP)",
    "reserved (22)",
    "reserved (23)",
    "reserved (24)",
    "reserved (25)",
    "reserved (26)",
    "reserved (27)",
    "hypervisor injection exception (#HV)",
    "VMM communication exception (#VC)",
    "security exception (#SX)",
    "reserved (31)",
];

/// The CPU writing an exception report ([`NO_REPORTER`] when none): an
/// arch-level lock that keeps two CPUs' reports from interleaving.
static REPORTER: AtomicUsize = AtomicUsize::new(NO_REPORTER);
const NO_REPORTER: usize = usize::MAX;
/// How long a second faulting CPU waits for the first one's report (which ends
/// with `exit_qemu`) before it reports anyway: at 115200 baud a report takes
/// about 0.2 s, and the host may keep the first reporter's vCPU off its core
/// for seconds (5 s, as for every wait on another CPU: "Waits on other
/// CPUs" in docs/design/kernel.md).
const REPORT_WAIT_NS: u64 = 5_000_000_000;

/// Reports a CPU exception, then fails the QEMU run.
///
/// Waits a bounded time for the generic console lock and keeps it
/// (`hooks::report_begin`), so no other CPU's log line lands inside the
/// report; it is written without that lock all the same if the interrupted
/// code holds it. Reports from two
/// faulting CPUs do not interleave: the first takes [`REPORTER`]; a second
/// waits for it (up to [`REPORT_WAIT_NS`], after which it writes anyway); a
/// fault while reporting on the same CPU exits at once.
fn exception(frame: &TrapFrame) -> ! {
    let me = percpu::cpu_id().index();
    if let Err(holder) =
        REPORTER.compare_exchange(NO_REPORTER, me, Ordering::Acquire, Ordering::Relaxed)
    {
        if holder == me {
            // A fault while reporting one: one line, then the exit.
            let mut w = serial::RawWriter;
            let _ = writeln!(
                w,
                "\n*** nested CPU exception {} {} (RIP {:#x}, RSP {:#x})",
                frame.vector,
                EXCEPTION_NAMES[frame.vector as usize & 31],
                frame.rip,
                frame.rsp
            );
            if frame.vector == 14 {
                report_stack_overflow(&mut w, crate::addr::VirtAddr::from_u64(Cr2::read_raw()));
            }
            super::exit_qemu(super::ExitCode::Failure);
        }
        let start = super::time::rdtsc();
        let limit = super::time::ns_to_cycles(REPORT_WAIT_NS);
        while super::time::rdtsc().wrapping_sub(start) < limit {
            core::hint::spin_loop();
        }
    }
    crate::hooks::report_begin();
    let vector = frame.vector as usize;
    let mut w = serial::RawWriter;
    let (tid, name) = crate::hooks::current_thread();
    let _ = write!(
        w,
        "\n*** CPU EXCEPTION {} {} on cpu {} in thread '{}'",
        vector,
        EXCEPTION_NAMES[vector & 31],
        percpu::cpu_id(),
        name
    );
    let _ = match tid {
        Some(t) => writeln!(w, " (tid {t})"),
        None => writeln!(w),
    };
    let _ = writeln!(
        w,
        "    error code {:#x}  RIP {:#018x}  RSP {:#018x}  RFLAGS {:#x}  CS {:#x}  SS {:#x}",
        frame.error_code, frame.rip, frame.rsp, frame.rflags, frame.cs, frame.ss
    );
    if vector == 14 {
        let e = frame.error_code;
        let cr2 = Cr2::read_raw();
        let _ = writeln!(
            w,
            "    fault address (CR2) {:#018x} ({} {} access, {})",
            cr2,
            if e & 1 != 0 {
                "protection violation on"
            } else {
                "non-present page on"
            },
            if e & 2 != 0 { "write" } else { "read" },
            if e & 16 != 0 {
                "instruction fetch"
            } else {
                "data"
            },
        );
        report_stack_overflow(&mut w, crate::addr::VirtAddr::from_u64(cr2));
    }
    let f = frame;
    let _ = writeln!(
        w,
        "    RAX {:#018x} RBX {:#018x} RCX {:#018x} RDX {:#018x}\n    RSI {:#018x} RDI {:#018x} RBP {:#018x} R8  {:#018x}\n    R9  {:#018x} R10 {:#018x} R11 {:#018x} R12 {:#018x}\n    R13 {:#018x} R14 {:#018x} R15 {:#018x}",
        f.rax, f.rbx, f.rcx, f.rdx, f.rsi, f.rdi, f.rbp, f.r8, f.r9, f.r10, f.r11, f.r12, f.r13,
        f.r14, f.r15
    );
    let mut ret = [0usize; 16];
    let n = crate::hooks::backtrace(
        crate::addr::VirtAddr::new(f.rsp as usize),
        crate::addr::VirtAddr::new(f.rbp as usize),
        &mut ret,
    );
    let _ = write!(w, "    backtrace (frame pointers): {:#x}", f.rip);
    for r in &ret[..n] {
        let _ = write!(w, " {r:#x}");
    }
    let _ = writeln!(w);
    crate::hooks::fault_reported();
    super::exit_qemu(super::ExitCode::Failure)
}

/// Adds the stack-overflow line when `addr` is in the guard below a kernel
/// stack (a thread's, an idle thread's or an exception stack, in the stack
/// region).
fn report_stack_overflow(w: &mut serial::RawWriter, addr: crate::addr::VirtAddr) {
    if let Some(owner) = crate::hooks::stack_guard_owner(addr) {
        let _ = writeln!(
            w,
            "    kernel stack overflow: the fault address is in the guard page below the stack of {owner}"
        );
    }
}
