//! Thread context switch.
//!
//! A switch happens inside an ordinary function call, so only the SysV
//! callee-saved registers (rbx, rbp, r12-r15) and the stack pointer need saving;
//! the caller already saved everything else, and the return address is on the
//! stack being switched away from. Interrupted threads are no exception: their
//! full register frame sits on their own stack below the `irq_exit()` call chain
//! (see `trap.rs`).
//!
//! RFLAGS is not switched: call [`switch_context`] with interrupts disabled (the
//! scheduler does); the next thread resumes with them still disabled and
//! re-enables them itself (a new thread: in its entry function).

/// Callee-saved state of a thread that is not running.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Context {
    rsp: u64,
    rbx: u64,
    rbp: u64,
    r12: u64,
    r13: u64,
    r14: u64,
    r15: u64,
}

impl Context {
    /// An empty context; the switch *from* the current thread fills it.
    pub const fn new() -> Self {
        Context {
            rsp: 0,
            rbx: 0,
            rbp: 0,
            r12: 0,
            r13: 0,
            r14: 0,
            r15: 0,
        }
    }
}

/// Saves the current callee-saved registers and stack pointer into `*prev`, then
/// loads `*next` and returns into the thread it describes.
///
/// # Safety
/// Interrupts must be disabled. `prev` must be valid for writes; `next` must hold
/// a context saved by an earlier `switch_context` or prepared by
/// [`init_thread_context`], whose stack is still alive and not in use.
#[unsafe(naked)]
pub unsafe extern "C" fn switch_context(prev: *mut Context, next: *const Context) {
    core::arch::naked_asm!(
        "mov [rdi + 0x00], rsp",
        "mov [rdi + 0x08], rbx",
        "mov [rdi + 0x10], rbp",
        "mov [rdi + 0x18], r12",
        "mov [rdi + 0x20], r13",
        "mov [rdi + 0x28], r14",
        "mov [rdi + 0x30], r15",
        "mov rsp, [rsi + 0x00]",
        "mov rbx, [rsi + 0x08]",
        "mov rbp, [rsi + 0x10]",
        "mov r12, [rsi + 0x18]",
        "mov r13, [rsi + 0x20]",
        "mov r14, [rsi + 0x28]",
        "mov r15, [rsi + 0x30]",
        "ret",
    );
}

/// First code of every new thread: `ret` of its first switch lands here with
/// r12 = entry, r13 = argument, and `rsp` 8 bytes below a 16-byte boundary,
/// over a zero "return address". Jumping (not calling) keeps exactly the stack
/// shape a call would give, so `entry` sees an ABI-conforming stack and a
/// backtrace ends at 0.
#[unsafe(naked)]
extern "C" fn thread_trampoline() -> ! {
    core::arch::naked_asm!("mov rdi, r13", "xor ebp, ebp", "jmp r12");
}

/// Prepares `ctx` so that the first [`switch_context`] to it runs `entry(arg)`
/// on the stack ending at `stack_top` (rounded down to 16 bytes), with
/// interrupts still disabled.
///
/// # Safety
/// The stack below `stack_top` must be mapped, writable and the caller's
/// alone (its top 16 bytes are written here).
pub unsafe fn init_thread_context(
    ctx: &mut Context,
    stack_top: crate::addr::VirtAddr,
    entry: extern "C" fn(usize) -> !,
    arg: usize,
) {
    let top = stack_top.align_down(16).as_usize() as u64;
    let frame = (top - 16) as *mut u64;
    // SAFETY: the caller hands over the stack below `stack_top` (the
    // function's contract); the two slots
    // written are its top 16 bytes: the trampoline address (popped by `ret`),
    // then a zero fake return address for `entry`.
    unsafe {
        frame.write(thread_trampoline as *const () as u64);
        frame.add(1).write(0);
    }
    *ctx = Context {
        rsp: top - 16,
        r12: entry as *const () as u64,
        r13: arg as u64,
        ..Context::default()
    };
}
