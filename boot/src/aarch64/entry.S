// aarch64 entry: arm64 Linux image header, EL2 -> EL1 drop, FP/SIMD enable,
// self-relocation, .bss clearing, boot stack, early vectors, then Rust.
// Also the secondary CPU entry (PSCI CPU_ON target), which shares the EL2 -> EL1
// drop and the EL1 setup but must not relocate again or clear .bss.
//
// Register use until Rust runs: x19 = DTB pointer from the loader (x0) or, on a
// secondary CPU, the PSCI context_id; x20 = exception level we were entered at.

// Drops from EL2 to EL1 (AArch64, EL1h, DAIF masked), resuming at `target`.
// EL1 gets no traps of its timer/counter, FP or ID registers. Clobbers x1.
.macro  drop_to_el1 target
    mov     x1, #(1 << 31)          // HCR_EL2.RW = AArch64 EL1, E2H = 0, VM = 0
    msr     hcr_el2, x1
    mov     x1, #3                  // CNTHCTL_EL2.EL1PCTEN | EL1PCEN
    msr     cnthctl_el2, x1
    msr     cntvoff_el2, xzr        // virtual counter == physical counter
    mov     x1, #0x33ff             // CPTR_EL2: RES1 bits, TFP = 0 (no FP trap)
    msr     cptr_el2, x1
    msr     hstr_el2, xzr
    mrs     x1, midr_el1            // EL1 reads of MIDR/MPIDR see the real values
    msr     vpidr_el2, x1
    mrs     x1, mpidr_el1
    msr     vmpidr_el2, x1
    mov     x1, #0x3c5              // SPSR: EL1h, DAIF all masked
    msr     spsr_el2, x1
    adr     x1, \target
    msr     elr_el2, x1
    eret
.endm

// EL1 system state: SCTLR_EL1 with RES1 bits, MMU and D-cache off, little endian,
// I-cache on, SP alignment checking on (SA): a known state whatever the loader
// left. Then FP/SIMD on (CPACR_EL1.FPEN = 0b11): the target is hard-float NEON,
// so any Rust code may use q-registers. Clobbers x1.
.macro  el1_setup
    ldr     x1, =0x30d01808
    msr     sctlr_el1, x1
    isb
    mov     x1, #(3 << 20)
    msr     cpacr_el1, x1
    isb
.endm

    .section .text.head, "ax"
    .global _start
_start:
    // --- arm64 image header (Documentation/arch/arm64/booting.rst) ---
    b       real_start              // code0: branch to the real entry
    .long   0                       // code1
    .quad   0                       // text_offset: load at a 2 MiB boundary
    .quad   __image_size            // image_size: text..bss, for the loader
    .quad   0xA                     // flags: LE, 4 KiB pages, anywhere in RAM
    .quad   0                       // res2
    .quad   0                       // res3
    .quad   0                       // res4
    .ascii  "ARM\x64"               // magic
    .long   0                       // res5 (PE header offset: none)

    .section .text.boot, "ax"
real_start:
    mov     x19, x0                 // keep the DTB pointer
    msr     daifset, #0xf           // no interrupts or aborts until vectors exist

    mrs     x20, CurrentEL
    ubfx    x20, x20, #2, #2
    cmp     x20, #2
    b.eq    from_el2
    cmp     x20, #1
    b.eq    at_el1
    // EL3 (or EL0, impossible): not supported, there is no firmware below us.
1:  wfe
    b       1b

from_el2:
    drop_to_el1 at_el1

at_el1:
    el1_setup

    // Self-relocation: apply R_AARCH64_RELATIVE (1027) entries of .rela.dyn.
    // delta = runtime address of _start - link address. Idempotent (RELA), but
    // secondary CPUs enter at aarch64_secondary_entry and skip it (and the .bss
    // clearing). Other relocation types are not produced by a static PIE link
    // with --no-dynamic-linker; one would stop the boot here.
    adrp    x1, _start
    add     x1, x1, :lo12:_start
    ldr     x2, =__link_base
    sub     x1, x1, x2              // x1 = delta
    adrp    x2, __rela_start
    add     x2, x2, :lo12:__rela_start
    adrp    x3, __rela_end
    add     x3, x3, :lo12:__rela_end
2:  cmp     x2, x3
    b.hs    4f
    ldp     x4, x5, [x2], #16       // r_offset, r_info
    ldr     x6, [x2], #8            // r_addend
    cmp     x5, #1027               // R_AARCH64_RELATIVE, no symbol
    b.ne    3f
    add     x4, x4, x1
    add     x6, x6, x1
    str     x6, [x4]
    b       2b
3:  wfe                             // unknown relocation: cannot run correctly
    b       3b
4:
    // Clear .bss (16-byte aligned at both ends by the linker script). The boot
    // stack lives there, so do it before the first stack use.
    adrp    x1, __bss_start
    add     x1, x1, :lo12:__bss_start
    adrp    x2, __bss_end
    add     x2, x2, :lo12:__bss_end
5:  cmp     x1, x2
    b.hs    6f
    stp     xzr, xzr, [x1], #16
    b       5b
6:
    adrp    x1, boot_stack_top
    add     x1, x1, :lo12:boot_stack_top
    mov     sp, x1
    mov     x29, xzr
    mov     x30, xzr

    // Early vectors: any exception before the kernel installs its own ends the run.
    adrp    x1, early_vectors
    add     x1, x1, :lo12:early_vectors
    msr     vbar_el1, x1
    isb

    mov     x0, x19                 // DTB
    mov     x1, x20                 // entry EL
    bl      boot_aarch64_main       // -> kernel_main, never returns
7:  wfe
    b       7b
    .ltorg

// Secondary CPU entry: the PSCI CPU_ON entry point, at EL2 or EL1, MMU off, with
// x0 = context_id = address of a `boot::aarch64::SecondaryStart` block written by
// the CPU that called CPU_ON: [x0 + 0] = stack top, [x0 + 8] = entry function,
// [x0 + 16/24/32] = TTBR0/TCR/MAIR to turn the MMU on with (TTBR0 0: stay off).
// Relocations were applied and .bss cleared by the boot CPU: neither runs again.
// Sets the stack, FP/SIMD and the early vectors, then calls entry(x0) at EL1
// with DAIF masked; the entry function never returns.
    .section .text.boot, "ax"
    .global aarch64_secondary_entry
aarch64_secondary_entry:
    mov     x19, x0                 // the SecondaryStart block
    msr     daifset, #0xf
    mrs     x20, CurrentEL
    ubfx    x20, x20, #2, #2
    cmp     x20, #2
    b.eq    secondary_from_el2
    cmp     x20, #1
    b.eq    secondary_at_el1
9:  wfe                             // EL3: not supported (as for the boot CPU)
    b       9b
secondary_from_el2:
    drop_to_el1 secondary_at_el1
secondary_at_el1:
    el1_setup
    // MMU and D-cache on with the boot CPU's tables, before the first
    // cacheable access (ttbr0 = 0: stay off). The block was cleaned to the
    // point of coherency, so these uncached loads see it.
    ldr     x1, [x19, #16]          // ttbr0
    cbz     x1, 11f
    ldr     x2, [x19, #24]          // tcr
    ldr     x3, [x19, #32]          // mair
    msr     mair_el1, x3
    msr     tcr_el1, x2
    msr     ttbr0_el1, x1
    isb
    tlbi    vmalle1
    dsb     nsh
    isb
    mrs     x1, sctlr_el1
    mov     x2, #5                  // SCTLR_EL1.M | .C
    orr     x1, x1, x2
    msr     sctlr_el1, x1
    isb
11:
    ldr     x1, [x19, #0]           // stack top
    mov     sp, x1
    mov     x29, xzr
    mov     x30, xzr
    adrp    x1, early_vectors
    add     x1, x1, :lo12:early_vectors
    msr     vbar_el1, x1
    isb
    ldr     x2, [x19, #8]           // entry function (runtime address)
    mov     x0, x19
    mov     x1, x20                 // entry EL, for diagnostics
    blr     x2
10: wfe
    b       10b
    .ltorg

// 16 slots of 0x80 bytes, table 2 KiB aligned. All go to one report.
    .section .text.boot, "ax"
    .balign 0x800
early_vectors:
    .rept 16
    .balign 0x80
    b       early_trap
    .endr

early_trap:
    // Semihosting (QEMU -semihosting): SYS_WRITE0 a message, then SYS_EXIT(1).
    // Without semihosting `hlt` traps again and we end up here in a loop.
    mov     x0, #0x04
    adr     x1, early_trap_msg
    hlt     #0xf000
    mov     x0, #0x18
    adr     x1, early_exit_block
    hlt     #0xf000
8:  wfe
    b       8b

    .balign 8
early_exit_block:
    .quad   0x20026                 // ADP_Stopped_ApplicationExit
    .quad   1                       // exit status: failure
early_trap_msg:
    .asciz  "boot: CPU exception before the kernel installed its vectors\n"

    .section .bss.boot_stack, "aw", @nobits
    .balign 16
boot_stack_bottom:
    .space  64 * 1024
    .global boot_stack_top
boot_stack_top:
