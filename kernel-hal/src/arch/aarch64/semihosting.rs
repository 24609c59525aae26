//! Arm semihosting, used only to end a QEMU run with an exit status.
//!
//! QEMU (started with `-semihosting`) handles `hlt #0xf000` as a semihosting call:
//! `w0` = operation, `x1` = parameter block. Without semihosting the `hlt` traps as
//! an undefined instruction; the trap handler recognises that while [`PROBING`] is
//! set and skips the instruction, so [`exit`] returns and the caller falls back.

use core::sync::atomic::{AtomicBool, Ordering};

/// `SYS_EXIT`: report an exception/exit to the debugger (here: end QEMU).
const SYS_EXIT: u64 = 0x18;
/// `ADP_Stopped_ApplicationExit`: the "reason" for a normal exit with a status.
const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x20026;

/// The encoding of `hlt #0xf000`, the AArch64 semihosting trap instruction.
pub const HLT_SEMIHOSTING: u32 = 0xd45e_0000;

/// Set around a semihosting call so the trap handler may skip an `hlt` that traps.
pub static PROBING: AtomicBool = AtomicBool::new(false);

/// Asks QEMU to exit with host status `status` (0..=255). Returns only when
/// semihosting is not available.
pub fn exit(status: u8) {
    let block: [u64; 2] = [ADP_STOPPED_APPLICATION_EXIT, u64::from(status)];
    PROBING.store(true, Ordering::SeqCst);
    // SAFETY: a semihosting call reads the two-word parameter block at x1 and, for
    // SYS_EXIT, ends the emulator. If it traps instead, the trap handler skips it.
    unsafe {
        core::arch::asm!(
            "hlt #0xf000",
            inout("x0") SYS_EXIT => _,
            in("x1") block.as_ptr(),
            options(nostack),
        );
    }
    PROBING.store(false, Ordering::SeqCst);
}
