//! `memcpy` for aarch64, in place of `compiler_builtins`' generic one.
//!
//! The kernel's copies of task state go through `memcpy` (the scheduler's
//! 312-byte `SchedTask`, twice per cross-CPU pipe round trip, and a few
//! small ones). `compiler_builtins` ships no aarch64 assembly for it: its
//! portable loop moves 8 bytes per 4 instructions and spends about 30 on
//! alignment and tails, so one 312-byte copy cost about 176 instructions and
//! a 7-byte one about 42 (counted per instruction under QEMU's `-icount`;
//! x86_64's `rep movsq` counts one per 8 bytes). This one moves 64 bytes per
//! 12 instructions and the tail in at most three steps (32, 16, 8) when both
//! pointers are 8-byte aligned, else byte by byte.
//!
//! It is the strong definition of the symbol; `compiler_builtins`' is weak,
//! so every `memcpy` call in the image (and every one LLVM emits for a
//! large move) comes here. It uses only x0-x11 and the flags (caller-saved
//! under AAPCS64), no FP/SIMD register, and only 8-byte accesses at 8-byte
//! aligned addresses or byte accesses, so it is also correct before the MMU
//! is on (Device memory faults on unaligned accesses; the target is built
//! with `strict-align` for that reason). It copies forwards, so `src ==
//! dst` (which LLVM allows itself for `memcpy`) is harmless; other
//! overlaps are undefined, as for every `memcpy`.

core::arch::global_asm!(
    r#"
    .section .text.memcpy, "ax"
    .global memcpy
    .type   memcpy, %function
    .balign 16
memcpy:
    mov     x3, x0                  // x0 (dst) is the return value
    orr     x4, x0, x1
    tst     x4, #7
    b.ne    2f                      // not both 8-byte aligned: bytes
    subs    x2, x2, #64
    b.lo    1f
0:  // 64 bytes per step while at least 64 remain
    ldp     x4, x5, [x1]
    ldp     x6, x7, [x1, #16]
    ldp     x8, x9, [x1, #32]
    ldp     x10, x11, [x1, #48]
    add     x1, x1, #64
    stp     x4, x5, [x3]
    stp     x6, x7, [x3, #16]
    stp     x8, x9, [x3, #32]
    stp     x10, x11, [x3, #48]
    add     x3, x3, #64
    subs    x2, x2, #64
    b.hs    0b
1:  // x2 = remaining - 64 (wrapped): its low 6 bits are the remaining count
    tbz     x2, #5, 4f
    ldp     x4, x5, [x1]
    ldp     x6, x7, [x1, #16]
    add     x1, x1, #32
    stp     x4, x5, [x3]
    stp     x6, x7, [x3, #16]
    add     x3, x3, #32
4:
    tbz     x2, #4, 5f
    ldp     x4, x5, [x1], #16
    stp     x4, x5, [x3], #16
5:
    tbz     x2, #3, 6f
    ldr     x4, [x1], #8
    str     x4, [x3], #8
6:
    and     x2, x2, #7
2:  // x2 bytes left, one at a time
    cbz     x2, 3f
7:
    ldrb    w4, [x1], #1
    strb    w4, [x3], #1
    subs    x2, x2, #1
    b.ne    7b
3:
    ret
    .size   memcpy, . - memcpy
    .text
    "#
);
