//! Thread context switch (AAPCS64 callee-saved state only).
//!
//! A switch is an ordinary function call for both threads, so only what the callee
//! must preserve is saved: x19-x28, the frame pointer x29, the link register x30,
//! `sp`, and the low 64 bits of v8-v15 (d8-d15). Caller-saved registers of an
//! *interrupted* thread are already on its stack in the IRQ frame (see `trap`).
//! The interrupt mask is not part of the context: whoever switches manages it.

/// Saved callee-saved registers of a thread that is not running.
#[derive(Debug, Default, Clone)]
#[repr(C)]
pub struct Context {
    /// x19..=x28.
    x19_x28: [u64; 10],
    /// Frame pointer.
    x29: u64,
    /// Link register: where `switch_context` returns to in this thread.
    x30: u64,
    /// Stack pointer.
    sp: u64,
    /// Padding: keeps `d8_d15` 16-byte aligned and the size a multiple of 16.
    _pad: u64,
    /// d8..=d15 (bit patterns of the low halves of v8-v15).
    d8_d15: [u64; 8],
}

impl Context {
    /// An empty context; the switch *from* the current thread fills it.
    pub const fn new() -> Self {
        Self {
            x19_x28: [0; 10],
            x29: 0,
            x30: 0,
            sp: 0,
            _pad: 0,
            d8_d15: [0; 8],
        }
    }
}

// Field offsets used by the assembly below.
const _: () = {
    assert!(core::mem::offset_of!(Context, x29) == 80);
    assert!(core::mem::offset_of!(Context, sp) == 96);
    assert!(core::mem::offset_of!(Context, d8_d15) == 112);
    assert!(core::mem::size_of::<Context>() == 176);
};

/// Saves the current thread's callee-saved registers into `*prev` and resumes the
/// thread saved in `*next`. Returns when something switches back to `prev`.
///
/// # Safety
/// `prev` must be valid for writes and `next` must hold a context saved by this
/// function or prepared by [`init_thread_context`], whose stack is still alive and
/// not in use by any CPU. Interrupts should be masked so the switch is not
/// preempted half way (the code itself is interrupt safe once `sp` moved).
#[unsafe(naked)]
pub unsafe extern "C" fn switch_context(prev: *mut Context, next: *const Context) {
    core::arch::naked_asm!(
        "stp x19, x20, [x0, #0]",
        "stp x21, x22, [x0, #16]",
        "stp x23, x24, [x0, #32]",
        "stp x25, x26, [x0, #48]",
        "stp x27, x28, [x0, #64]",
        "stp x29, x30, [x0, #80]",
        "mov x9, sp",
        "str x9, [x0, #96]",
        "stp d8, d9, [x0, #112]",
        "stp d10, d11, [x0, #128]",
        "stp d12, d13, [x0, #144]",
        "stp d14, d15, [x0, #160]",
        "ldp x19, x20, [x1, #0]",
        "ldp x21, x22, [x1, #16]",
        "ldp x23, x24, [x1, #32]",
        "ldp x25, x26, [x1, #48]",
        "ldp x27, x28, [x1, #64]",
        "ldp x29, x30, [x1, #80]",
        "ldr x9, [x1, #96]",
        "mov sp, x9",
        "ldp d8, d9, [x1, #112]",
        "ldp d10, d11, [x1, #128]",
        "ldp d12, d13, [x1, #144]",
        "ldp d14, d15, [x1, #160]",
        "ret",
    )
}

/// First code of every new thread: the first `switch_context` to it "returns"
/// here with x19 = entry, x20 = arg. Clears fp/lr so backtraces end here.
#[unsafe(naked)]
extern "C" fn thread_trampoline() -> ! {
    core::arch::naked_asm!("mov x0, x20", "mov x29, xzr", "mov x30, xzr", "br x19",)
}

/// Prepares `ctx` so that the first [`switch_context`] to it runs `entry(arg)` on
/// the stack that ends at `stack_top` (rounded down to 16 bytes, as AAPCS64 needs).
///
/// `entry` starts with the interrupt mask the switching code left: masked when
/// the switch happened in `hooks::irq_exit()` (or under `irq_save`), so the new
/// thread's first code (generic "finish the switch" bookkeeping) must unmask IRQs.
///
/// # Safety
/// The stack below `stack_top` must be mapped, writable and the caller's
/// alone (the contract both arches share; this one writes no memory).
pub unsafe fn init_thread_context(
    ctx: &mut Context,
    stack_top: crate::addr::VirtAddr,
    entry: extern "C" fn(usize) -> !,
    arg: usize,
) {
    *ctx = Context::new();
    ctx.x19_x28[0] = entry as *const () as usize as u64;
    ctx.x19_x28[1] = arg as u64;
    ctx.x30 = thread_trampoline as *const () as usize as u64;
    ctx.sp = stack_top.align_down(16).as_usize() as u64;
}
