// aarch64 entry: arm64 Linux image header, EL2 -> EL1 drop, FP/SIMD enable,
// self-relocation, .bss clearing, boot stack, early vectors, then Rust.
// The same file is a PE32+ EFI application (header after the arm64 one,
// entry efi_entry), which ends in the same path once boot services are gone.
// Also the secondary CPU entry (PSCI CPU_ON target), which shares the EL2 -> EL1
// drop and the EL1 setup but must not relocate again or clear .bss.
//
// Register use until Rust runs: x19 = DTB pointer from the loader (x0) or, on a
// secondary CPU, the PSCI context_id; x20 = exception level we were entered at.

// SCTLR_EL1 for the entry code: RES1 bits, MMU and D-cache off, I-cache on,
// SP alignment checking on (see el1_setup).
.set    SCTLR_EL1_BOOT, 0x30d01808

// Drops from EL2 to EL1 (AArch64, EL1h, DAIF masked), resuming at `target`.
// EL1 gets no traps of its timer/counter, FP or ID registers. Clobbers x1.
.macro  drop_to_el1 target
    mov     x1, #(1 << 31)          // HCR_EL2.RW = AArch64 EL1, E2H = 0, VM = 0
    msr     hcr_el2, x1
    isb                             // E2H = 0 before the SCTLR_EL1 write below
    ldr     x1, =SCTLR_EL1_BOOT     // EL1 starts with its MMU off whatever a
    msr     sctlr_el1, x1           // firmware at EL2 (UEFI) left there
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
    ldr     x1, =SCTLR_EL1_BOOT
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
    // code0 is "MZ" for UEFI (the DOS header's magic) and harmless when
    // booti / QEMU -kernel enter here: `ccmp x18, #0, #0xd, pl` only sets
    // the flags (Linux's efi_signature_nop). code1 branches to the real entry.
    .long   0xfa405a4d              // code0: ccmp x18, #0, #0xd, pl ("MZ")
    b       real_start              // code1: branch to the real entry
    .quad   0                       // text_offset: load at a 2 MiB boundary
    .quad   __image_size            // image_size: text..bss, for the loader
    .quad   0xA                     // flags: LE, 4 KiB pages, anywhere in RAM
    .quad   0                       // res2
    .quad   0                       // res3
    .quad   0                       // res4
    .ascii  "ARM\x64"               // magic
    .long   pe_header - _start      // res5: PE header offset (DOS e_lfanew, 0x3c)

    // --- PE32+ header: the same file is an EFI application (PE/COFF spec).
    // Two sections, laid out in memory exactly as in the file (VirtualAddress
    // = PointerToRawData), so a UEFI loader puts the Image together as booti
    // does: .text = [4 KiB, __pe_text_end) read/execute, .data = the rest
    // read/write (the loader zero-fills .bss). ImageBase 0 and no base
    // relocation directory: the loader may put us at any 4 KiB-aligned
    // address and the entry code relocates the image itself. The linker
    // script defines the __pe_* values (RVAs and sizes, absolute symbols).
    .balign 8
pe_header:
    .ascii  "PE\0\0"
    .short  0xaa64                  // Machine: ARM64
    .short  2                       // NumberOfSections
    .long   0                       // TimeDateStamp
    .long   0                       // PointerToSymbolTable
    .long   0                       // NumberOfSymbols
    .short  pe_sections - pe_optional // SizeOfOptionalHeader
    .short  0x0206                  // EXECUTABLE_IMAGE | LINE_NUMS_STRIPPED | DEBUG_STRIPPED
pe_optional:
    .short  0x020b                  // PE32+
    .byte   0, 0                    // linker version
    .long   __pe_text_size          // SizeOfCode
    .long   __pe_data_size          // SizeOfInitializedData (with .bss)
    .long   0                       // SizeOfUninitializedData
    .long   __pe_entry_rva          // AddressOfEntryPoint: efi_entry
    .long   __pe_text_rva           // BaseOfCode
    .quad   0                       // ImageBase
    .long   0x1000                  // SectionAlignment
    .long   0x200                   // FileAlignment
    .short  0, 0                    // OS version
    .short  0, 0                    // image version
    .short  0, 0                    // subsystem version
    .long   0                       // Win32VersionValue
    .long   __image_size            // SizeOfImage
    .long   __pe_text_rva           // SizeOfHeaders: everything before .text
    .long   0                       // CheckSum
    .short  10                      // Subsystem: EFI application
    .short  0x0100                  // DllCharacteristics: NX_COMPAT (W^X sections)
    .quad   0, 0, 0, 0              // stack / heap reserve and commit
    .long   0                       // LoaderFlags
    .long   6                       // NumberOfRvaAndSizes
    .quad   0, 0, 0, 0, 0, 0        // export, import, resource, exception, certificate, base relocation: none
pe_sections:
    .ascii  ".text\0\0\0"
    .long   __pe_text_size          // VirtualSize
    .long   __pe_text_rva           // VirtualAddress
    .long   __pe_text_size          // SizeOfRawData
    .long   __pe_text_rva           // PointerToRawData
    .long   0, 0                    // relocations, line numbers
    .short  0, 0
    .long   0x60000020              // CODE | MEM_EXECUTE | MEM_READ
    .ascii  ".data\0\0\0"
    .long   __pe_data_size          // VirtualSize (up to the end of .bss)
    .long   __pe_data_rva           // VirtualAddress
    .long   __pe_data_raw_size      // SizeOfRawData (the rest of the file)
    .long   __pe_data_rva           // PointerToRawData
    .long   0, 0
    .short  0, 0
    .long   0xc0000040              // INITIALIZED_DATA | MEM_READ | MEM_WRITE
    .balign 0x1000                  // the headers end here (__pe_text_rva)
    .global __pe_headers_end
__pe_headers_end:

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

    bl      apply_relocations
    bl      clear_bss               // the boot stack lives there: before its first use
    adrp    x1, boot_stack_top
    add     x1, x1, :lo12:boot_stack_top
    // The boot stack is SP_EL0 (SPSel = 0): an exception then switches to
    // SP_EL1, which the kernel points at a stack of its own before it
    // installs its vectors, so a boot stack overflow into the guard page is
    // reported from a working stack. The early vectors use no stack.
    msr     spsel, #0
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

// Self-relocation: applies the R_AARCH64_RELATIVE (1027) entries of .rela.dyn
// with delta = runtime address of _start - link address. Idempotent (RELA), so
// the UEFI entry and then real_start may both run it; secondary CPUs skip it.
// Other relocation types are not produced by a static PIE link with
// --no-dynamic-linker; one would stop the boot here. A leaf: clobbers x1-x6.
apply_relocations:
    adrp    x1, _start
    add     x1, x1, :lo12:_start
    ldr     x2, =__link_base
    sub     x1, x1, x2              // x1 = delta
    adrp    x2, __rela_start
    add     x2, x2, :lo12:__rela_start
    adrp    x3, __rela_end
    add     x3, x3, :lo12:__rela_end
1:  cmp     x2, x3
    b.hs    3f
    ldp     x4, x5, [x2], #16       // r_offset, r_info
    ldr     x6, [x2], #8            // r_addend
    cmp     x5, #1027               // R_AARCH64_RELATIVE, no symbol
    b.ne    2f
    add     x4, x4, x1
    add     x6, x6, x1
    str     x6, [x4]
    b       1b
2:  wfe                             // unknown relocation: cannot run correctly
    b       2b
3:  ret

// Clears .bss (16-byte aligned at both ends by the linker script). A leaf:
// clobbers x1, x2.
clear_bss:
    adrp    x1, __bss_start
    add     x1, x1, :lo12:__bss_start
    adrp    x2, __bss_end
    add     x2, x2, :lo12:__bss_end
1:  cmp     x1, x2
    b.hs    2f
    stp     xzr, xzr, [x1], #16
    b       1b
2:  ret
    .ltorg

// UEFI entry (the PE AddressOfEntryPoint): x0 = EFI_HANDLE of this image,
// x1 = EFI_SYSTEM_TABLE *, x30 = return address, on the firmware's stack, at
// EL1 or EL2 with the MMU and caches on (identity mapped) and boot services
// running. Relocates the image and clears .bss (the loader zero-fills .bss,
// but U-Boot's or another loader's may not), then `boot_efi_main` (Rust, still
// on the firmware's stack and page tables) takes the DTB from the
// configuration table, the command line from the loaded image's LoadOptions
// and the memory map, exits boot services and cleans what the kernel reads
// with its MMU off to the point of coherency. It returns the DTB address;
// real_start then continues exactly as after booti, with x0 = DTB (it turns
// the MMU off in el1_setup, or drops to EL1 when UEFI ran at EL2). A failure
// before ExitBootServices returns its EFI_STATUS (top bit set) to the
// firmware, after a message on the firmware's console.
//
// x18 is the platform register, which the UEFI specification reserves ("do
// not use") for the firmware; Rust code may use it as a scratch register
// (stable Rust has no -ffixed-x18). So the firmware's x18 is kept here, put
// back for every call into the firmware (efi_call) and on the way back to it.
    .global efi_entry
efi_entry:
    stp     x29, x30, [sp, #-32]!
    mov     x29, sp
    stp     x0, x1, [sp, #16]
    adrp    x2, efi_firmware_x18
    str     x18, [x2, :lo12:efi_firmware_x18]
    bl      apply_relocations
    bl      clear_bss
    ldp     x0, x1, [sp, #16]
    bl      boot_efi_main
    tbnz    x0, #63, 1f             // an EFI error status: back to the firmware
    msr     daifset, #0xf           // no firmware any more: nothing may interrupt us
    ic      iallu                   // nothing stale in the I-cache once the MMU is off
    dsb     nsh
    isb
    b       real_start              // x0 = DTB
1:  adrp    x2, efi_firmware_x18
    ldr     x18, [x2, :lo12:efi_firmware_x18]
    ldp     x29, x30, [sp], #32
    ret

// efi_call(function, a0, a1, a2, a3, a4): calls a UEFI boot service or
// protocol function with up to five arguments and the firmware's x18; it
// returns straight to the caller (x18 is not callee-saved for Rust).
    .global efi_call
efi_call:
    mov     x9, x0
    mov     x0, x1
    mov     x1, x2
    mov     x2, x3
    mov     x3, x4
    mov     x4, x5
    adrp    x10, efi_firmware_x18
    ldr     x18, [x10, :lo12:efi_firmware_x18]
    br      x9

    // In .data: clear_bss runs after it is saved.
    .section .data.efi_firmware_x18, "aw"
    .balign 8
efi_firmware_x18:
    .quad   0

    .section .text.boot, "ax"

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

    // The boot stack, with a guard page below it that the kernel leaves
    // unmapped (`boot::BOOT_STACK_GUARD_BYTES`, checked in `boot_stack()`).
    .section .bss.boot_stack, "aw", @nobits
    .balign 4096
    .global boot_stack_guard
boot_stack_guard:
    .space  4096
    .global boot_stack_bottom
boot_stack_bottom:
    .space  64 * 1024
    .global boot_stack_top
boot_stack_top:
