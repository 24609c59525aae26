//! x86_64 entry: one ELF64 linked at 1 MiB, loadable two ways.
//!
//! - **PVH** (QEMU `-kernel`): a Xen ELF note (`XEN_ELFNOTE_PHYS32_ENTRY`, type 18)
//!   names the 32-bit entry point. QEMU's firmware enters it in 32-bit protected
//!   mode, paging off, with `ebx` = physical address of `hvm_start_info`.
//! - **Multiboot2** (GRUB, bare metal): a header in the first 32 KiB of the file.
//!   GRUB enters in 32-bit protected mode with `eax` = 0x36d76289 and `ebx` = the
//!   Multiboot2 information structure. There is deliberately no Multiboot1
//!   header: QEMU refuses an ELF64 that carries one.
//!
//! Both paths share one 32-bit stub (`_start32`): zero `.bss`, identity-map
//! 0-4 GiB with 2 MiB pages (this covers the LAPIC and IOAPIC MMIO; the top GiB is
//! mapped uncached), enable long mode, load a minimal GDT, switch to the boot
//! stack and call `boot_main_x86_64`. That function copies what the kernel
//! needs out of the loader's structures into a static [`BootInfo`] (the loader's
//! memory may later become heap) and calls the kernel's `kernel_main`.
//!
//! The kernel replaces the boot GDT with its own (with a TSS) in `early_init`.
//!
//! **What the Multiboot2 path takes from the loader** besides the command
//! line and memory map: the framebuffer (the header asks for one with an
//! optional framebuffer tag, type 5, so text-mode and serial-only loaders
//! still boot us; the information tag 8 goes to [`crate::framebuffer`] when
//! it is direct RGB at 16/24/32 bpp), the ACPI RSDP (tags 14/15, else the EFI
//! system table of tags 12/11, else the BIOS areas: `rsdp.rs`).
//!
//! **No relocatable tag (type 10).** The image is linked and must run at
//! 1 MiB: it is built with `relocation-model=static` (the static-PIE default
//! of x86_64-unknown-none cannot link the 32-bit stub above, whose
//! `offset sym` operands are R_X86_64_32 relocations), so absolute addresses
//! are everywhere, in the stub, in vtables and in the AP trampoline's
//! argument block, and nothing could apply a load offset to them. Making the
//! kernel relocatable means either a PIE build with a self-relocation pass
//! before any absolute address is used (aarch64 does this, see
//! `boot/src/aarch64`; on x86_64 the 32-bit stub would have to be rewritten
//! position-independent first, as 32-bit code has no RIP-relative
//! addressing), or linking the kernel at a high virtual address and mapping
//! it wherever it was loaded (a higher-half kernel: every "virtual ==
//! physical" assumption of the identity map would go). Neither is worth it
//! for a loader that never needs it: the image spans about 1-3 MiB, which is
//! RAM on every PC (GRUB placed it there under SeaBIOS and under OVMF in the
//! tests), and a loader that cannot place the ELF there fails loudly (GRUB
//! prints an error and does not boot it), never silently.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;

use crate::{set_framebuffer, BootInfo, BootProtocol, Framebuffer, MemRegion, MAX_MEM_REGIONS};

mod rsdp;
pub use rsdp::{source as rsdp_source, RsdpSource};

/// `eax` value with which a Multiboot2 loader enters the kernel.
pub const MULTIBOOT2_BOOT_MAGIC: u32 = 0x36d7_6289;
/// `hvm_start_info.magic` of the PVH boot protocol.
pub const PVH_START_MAGIC: u32 = 0x336e_c578;
/// Size of the boot stack, which becomes the stack of the kernel's first thread.
pub const BOOT_STACK_BYTES: usize = 128 * 1024;
/// Longest kernel command line kept (longer ones are truncated).
pub const CMDLINE_MAX_BYTES: usize = 1024;

core::arch::global_asm!(
    r#"
    /* ---- Multiboot2 header (GRUB): must be 8-aligned in the first 32 KiB ---- */
    .section .multiboot2, "a"
    .balign 8
mb2_header_start:
    .long 0xE85250D6                 /* magic */
    .long 0                          /* architecture: i386 protected mode */
    .long mb2_header_end - mb2_header_start
    /* checksum: written as 2^32 - x, since a negative value overflows `.long` */
    .long 0x100000000 - 0xE85250D6 - (mb2_header_end - mb2_header_start)
    .balign 8
    .short 3, 0                      /* entry address tag */
    .long 12
    .long _start32
    .balign 8
    /* framebuffer tag (type 5), flags 1 = optional: a loader that cannot set
       a graphics mode boots us anyway (text mode, serial). Width and height
       0 = no preference (GRUB's gfxpayload decides), 32 bits per pixel. */
    .short 5, 1
    .long 20
    .long 0, 0, 32
    .balign 8
    .short 0, 0                      /* end tag */
    .long 8
mb2_header_end:

    /* ---- PVH: Xen ELF note, in its own output section so lld emits PT_NOTE.
       Alignment MUST be 4: with 8 QEMU misreads the descriptor silently. ---- */
    .section .note.Xen, "a", @note
    .balign 4
    .long 4                          /* name size ("Xen\0") */
    .long 8                          /* desc size: an ELF64 note carries a 64-bit address */
    .long 18                         /* XEN_ELFNOTE_PHYS32_ENTRY */
    .asciz "Xen"
    .balign 4
    .quad _start32
    .balign 4

    /* ---- 32-bit entry, shared by PVH and Multiboot2 ---- */
    .section .text.boot, "ax"
    .code32
    .global _start32
_start32:
    cli
    cld
    mov ebp, eax                     /* Multiboot2 magic (meaningless under PVH) */
    mov esi, ebx                     /* hvm_start_info or Multiboot2 info pointer */

    /* Zero .bss (an ELF loader already did; GRUB's Multiboot2 path may not).
       The page tables and the boot stack live there, so do it first. */
    mov edi, offset __bss_start
    mov ecx, offset __bss_end
    sub ecx, edi
    shr ecx, 2
    xor eax, eax
    rep stosd

    /* PML4[0] -> PDPT; PDPT[0..4] -> four page directories of 2 MiB pages. */
    mov eax, offset boot_pdpt
    or eax, 0x3                      /* present | writable */
    mov [boot_pml4], eax
    mov edi, offset boot_pdpt
    mov eax, offset boot_pd
    or eax, 0x3
    mov ecx, 4
2:
    mov [edi], eax
    add edi, 8
    add eax, 4096
    dec ecx
    jnz 2b

    /* 2048 PD entries: identity map 0-4 GiB. Entry i maps i * 2 MiB. The last GiB
       (PCI holes, LAPIC, IOAPIC) gets PWT|PCD so MMIO is never cached. */
    mov edi, offset boot_pd
    xor ecx, ecx                     /* entry index */
3:
    mov eax, ecx
    shl eax, 21                      /* physical address (low 32 bits) */
    or eax, 0x83                     /* present | writable | 2 MiB page */
    cmp ecx, 1536
    jb 4f
    or eax, 0x18                     /* PWT | PCD: uncached */
4:
    mov [edi + ecx * 8], eax
    mov dword ptr [edi + ecx * 8 + 4], 0
    inc ecx
    cmp ecx, 2048
    jb 3b

    /* CR4.PAE, CR3, EFER.LME, then CR0.PG|PE (and WP) enters long mode. */
    mov eax, cr4
    or eax, 0x20
    mov cr4, eax
    mov eax, offset boot_pml4
    mov cr3, eax
    mov ecx, 0xC0000080
    rdmsr
    or eax, 0x100
    wrmsr
    mov eax, cr0
    or eax, 0x80010001
    mov cr0, eax

    lgdt [boot_gdt_ptr]
    /* Far return into the 64-bit code segment. `push offset sym` would assemble
       to a 16-bit push here, so go through a register. */
    mov eax, 8
    push eax
    mov eax, offset long_mode_entry
    push eax
    retf

    .code64
long_mode_entry:
    mov ax, 16
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor eax, eax
    mov fs, ax
    mov gs, ax
    lea rsp, [rip + boot_stack_top]
    mov edi, ebp                     /* arg 0: entry eax (zero-extended) */
    mov esi, esi                     /* arg 1: entry ebx (zero-extended) */
    xor ebp, ebp                     /* terminate frame-pointer chains */
    call boot_main_x86_64
5:
    cli
    hlt
    jmp 5b

    /* ---- Boot GDT: null, 64-bit code (0x08), data (0x10) ---- */
    .section .rodata.boot, "a"
    .balign 16
boot_gdt:
    .quad 0
    .quad 0x00AF9A000000FFFF
    .quad 0x00CF92000000FFFF
boot_gdt_end:
    .balign 4
    .short 0
boot_gdt_ptr:
    .short boot_gdt_end - boot_gdt - 1
    .long boot_gdt

    /* ---- Page tables and the boot stack (zeroed above) ---- */
    .section .bss.boot, "aw", @nobits
    .balign 4096
boot_pml4:
    .skip 4096
boot_pdpt:
    .skip 4096
boot_pd:
    .skip 4096 * 4
    /* The boot stack, with a guard page below it that the kernel unmaps
       (`boot_stack_guard`: see `crate::BOOT_STACK_GUARD_BYTES`). */
    .balign 4096
    .global boot_stack_guard
boot_stack_guard:
    .skip {guard_bytes}
    .global boot_stack_bottom
boot_stack_bottom:
    .skip {stack_bytes}
    .global boot_stack_top
boot_stack_top:
    "#,
    stack_bytes = const BOOT_STACK_BYTES,
    guard_bytes = const crate::BOOT_STACK_GUARD_BYTES,
);

/// A static written exactly once, by the boot CPU, before `kernel_main` runs.
struct BootCell<T>(UnsafeCell<MaybeUninit<T>>);

// SAFETY: written only by `boot_main_x86_64` on the boot CPU before any other
// code runs; afterwards only shared references exist.
unsafe impl<T> Sync for BootCell<T> {}

static BOOT_INFO: BootCell<BootInfo> = BootCell(UnsafeCell::new(MaybeUninit::uninit()));
static CMDLINE: BootCell<[u8; CMDLINE_MAX_BYTES]> =
    BootCell(UnsafeCell::new(MaybeUninit::uninit()));
/// Copy of the ACPI RSDP (Multiboot2 hands a copy inside its information
/// structure, which the heap may later overwrite).
static RSDP_COPY: BootCell<[u8; 64]> = BootCell(UnsafeCell::new(MaybeUninit::uninit()));

extern "Rust" {
    /// The kernel's entry point (defined by the kernel with `#[no_mangle]`).
    fn kernel_main(info: &'static BootInfo) -> !;
}

extern "C" {
    static __kernel_start: u8;
    static __kernel_end: u8;
}

/// Reads a `T` from a physical address (identity-mapped).
///
/// # Safety
/// `addr` must point to readable memory holding a `T` (any alignment).
unsafe fn read_phys<T: Copy>(addr: usize) -> T {
    // SAFETY: the caller guarantees the address is readable; unaligned read.
    unsafe { core::ptr::read_unaligned(addr as *const T) }
}

/// Copies a NUL-terminated (or `max_len`-bounded) string at `addr` into the
/// static command-line buffer and returns it (empty if not UTF-8).
///
/// # Safety
/// Called once, before `kernel_main`; `addr` must be readable up to the NUL or
/// `max_len` bytes.
unsafe fn copy_cmdline(addr: usize, max_len: usize) -> &'static str {
    if addr == 0 {
        return "";
    }
    let buf = CMDLINE.0.get().cast::<u8>();
    let mut len = 0;
    while len < max_len.min(CMDLINE_MAX_BYTES) {
        // SAFETY: within the loader's string (the caller's contract).
        let b: u8 = unsafe { read_phys(addr + len) };
        if b == 0 {
            break;
        }
        // SAFETY: `len < CMDLINE_MAX_BYTES`, and nothing else accesses the buffer yet.
        unsafe { buf.add(len).write(b) };
        len += 1;
    }
    // SAFETY: the first `len` bytes were just initialised; the buffer is never
    // written again, so a `'static` shared slice is sound.
    let bytes = unsafe { core::slice::from_raw_parts(buf, len) };
    core::str::from_utf8(bytes).map(str::trim).unwrap_or("")
}

/// Copies an RSDP (20 bytes for ACPI 1.0, `length` bytes for 2.0+) into
/// [`RSDP_COPY`] and returns the copy's address.
///
/// # Safety
/// Called once, before `kernel_main`; `addr..addr+len` must be readable.
unsafe fn copy_rsdp(addr: usize, len: usize) -> usize {
    let dst = RSDP_COPY.0.get().cast::<u8>();
    let len = len.min(64);
    // SAFETY: the source is readable (caller); the destination holds 64 bytes and
    // is not yet shared.
    unsafe { core::ptr::copy_nonoverlapping(addr as *const u8, dst, len) };
    dst as usize
}

/// Appends a usable RAM region, skipping empty ones and anything beyond capacity.
fn push_region(info: &mut BootInfo, start: u64, len: u64) {
    if len == 0 || info.memory_len == MAX_MEM_REGIONS {
        return;
    }
    info.memory[info.memory_len] = MemRegion {
        start: start as usize,
        len: len as usize,
    };
    info.memory_len += 1;
}

/// Parses PVH's `hvm_start_info` (layout from Xen's `arch-x86/hvm/start_info.h`).
///
/// # Safety
/// `start` must point to a valid `hvm_start_info`.
unsafe fn parse_pvh(info: &mut BootInfo, start: usize) {
    // SAFETY: (whole function) offsets follow the documented structure; the
    // pointers inside it are the loader's, identity-mapped below 4 GiB.
    unsafe {
        let version: u32 = read_phys(start + 4);
        let cmdline: u64 = read_phys(start + 24);
        let rsdp: u64 = read_phys(start + 32);
        info.cmdline = copy_cmdline(cmdline as usize, CMDLINE_MAX_BYTES);
        if rsdp != 0 {
            info.rsdp = Some(rsdp as usize);
        }
        if version >= 1 {
            let memmap: u64 = read_phys(start + 40);
            let entries: u32 = read_phys(start + 48);
            for i in 0..entries as usize {
                // struct hvm_memmap_table_entry { u64 addr, size; u32 type, reserved; }
                let e = memmap as usize + i * 24;
                let (addr, size, kind): (u64, u64, u32) =
                    (read_phys(e), read_phys(e + 8), read_phys(e + 16));
                if kind == 1 {
                    push_region(info, addr, size);
                }
            }
        }
    }
}

/// Multiboot2 framebuffer type of direct RGB colour (0 is indexed, 2 EGA text).
const MB2_FRAMEBUFFER_RGB: u8 = 1;

/// Reads a Multiboot2 framebuffer tag (type 8) at `tag` of `size` bytes:
/// `u64 addr; u32 pitch, width, height; u8 bpp, type; u16 reserved;` then,
/// for the RGB type, the position and size of the red, green and blue
/// fields. Only direct RGB at 16, 24 or 32 bits per pixel is kept.
///
/// # Safety
/// `tag..tag+size` must be a framebuffer tag inside the information structure.
unsafe fn parse_framebuffer(tag: usize, size: usize) -> Option<Framebuffer> {
    if size < 38 {
        return None;
    }
    // SAFETY: (whole block) offsets inside the tag (size checked above).
    unsafe {
        let fb = Framebuffer {
            addr: read_phys::<u64>(tag + 8) as usize,
            pitch: read_phys::<u32>(tag + 16) as usize,
            width: read_phys::<u32>(tag + 20) as usize,
            height: read_phys::<u32>(tag + 24) as usize,
            bpp: read_phys(tag + 28),
            red: (read_phys(tag + 32), read_phys(tag + 33)),
            green: (read_phys(tag + 34), read_phys(tag + 35)),
            blue: (read_phys(tag + 36), read_phys(tag + 37)),
        };
        let kind: u8 = read_phys(tag + 29);
        let usable = kind == MB2_FRAMEBUFFER_RGB
            && matches!(fb.bpp, 16 | 24 | 32)
            && fb.addr != 0
            && fb.width > 0
            && fb.height > 0
            && fb.pitch >= fb.width * usize::from(fb.bpp / 8);
        usable.then_some(fb)
    }
}

/// Parses the Multiboot2 information structure: command line (tag 1), memory map
/// (tag 6), framebuffer (tag 8), EFI system table (tags 11/12), ACPI old/new
/// RSDP (tags 14/15). Returns the EFI system table, for the RSDP fallback.
///
/// # Safety
/// `mbi` must point to a valid Multiboot2 information structure.
unsafe fn parse_multiboot2(info: &mut BootInfo, mbi: usize) -> Option<rsdp::EfiSystemTable> {
    // SAFETY: (whole function) walks the tags within `total_size` as the
    // Multiboot2 specification lays them out.
    unsafe {
        let total: u32 = read_phys(mbi);
        let end = mbi + total as usize;
        let mut tag = mbi + 8;
        let mut rsdp_v2 = false;
        let mut efi = None;
        while tag + 8 <= end {
            let kind: u32 = read_phys(tag);
            let size: u32 = read_phys(tag + 4);
            if kind == 0 || size < 8 {
                break;
            }
            match kind {
                1 => info.cmdline = copy_cmdline(tag + 8, size as usize - 8),
                6 => {
                    let entry_size: u32 = read_phys(tag + 8);
                    let mut e = tag + 16;
                    while entry_size >= 24 && e + entry_size as usize <= tag + size as usize {
                        // { u64 base_addr, length; u32 type, reserved; }
                        let (addr, len, t): (u64, u64, u32) =
                            (read_phys(e), read_phys(e + 8), read_phys(e + 16));
                        if t == 1 {
                            push_region(info, addr, len);
                        }
                        e += entry_size as usize;
                    }
                }
                8 => {
                    if let Some(fb) = parse_framebuffer(tag, size as usize) {
                        set_framebuffer(fb);
                    }
                }
                // EFI system table pointer: 32-bit (11), 64-bit (12, preferred).
                11 if efi.is_none() && size >= 12 => {
                    efi = Some(rsdp::EfiSystemTable {
                        addr: read_phys::<u32>(tag + 8) as usize,
                        is_64: false,
                    });
                }
                12 if size >= 16 => {
                    efi = Some(rsdp::EfiSystemTable {
                        addr: read_phys::<u64>(tag + 8) as usize,
                        is_64: true,
                    });
                }
                // A v2 RSDP wins over the v1 one, whatever the tag order.
                14 if !rsdp_v2 => info.rsdp = Some(copy_rsdp(tag + 8, size as usize - 8)),
                15 => {
                    info.rsdp = Some(copy_rsdp(tag + 8, size as usize - 8));
                    rsdp_v2 = true;
                }
                _ => {}
            }
            tag += (size as usize + 7) & !7;
        }
        efi
    }
}

/// Writes a message to COM1 without any setup (for a boot failure before the
/// kernel's console exists).
fn early_serial_write(msg: &str) {
    for b in msg.bytes() {
        // SAFETY: port I/O to COM1's data and line-status registers; harmless if
        // no UART is present.
        unsafe {
            let start = core::arch::x86_64::_rdtsc();
            loop {
                let lsr: u8;
                core::arch::asm!("in al, dx", out("al") lsr, in("dx") 0x3fdu16, options(nomem, nostack));
                // Bounded by time, not iterations: give up after ~10^7 cycles.
                if lsr & 0x20 != 0 || core::arch::x86_64::_rdtsc() - start > 10_000_000 {
                    break;
                }
            }
            core::arch::asm!("out dx, al", in("dx") 0x3f8u16, in("al") b, options(nomem, nostack));
        }
    }
}

/// Rust side of the entry: builds the [`BootInfo`] and enters the kernel.
///
/// Called by `_start32` in long mode on the boot stack, with the loader's `eax`
/// and `ebx`.
#[no_mangle]
extern "C" fn boot_main_x86_64(magic: u32, info_addr: u32) -> ! {
    let info_addr = info_addr as usize;
    // Linker-script symbols: only their addresses mean something.
    let kernel_start = core::ptr::addr_of!(__kernel_start) as usize;
    let kernel_end = core::ptr::addr_of!(__kernel_end) as usize;
    let mut info = BootInfo {
        protocol: BootProtocol::Pvh,
        cmdline: "",
        memory: [MemRegion::default(); MAX_MEM_REGIONS],
        memory_len: 0,
        rsdp: None,
        dtb: None,
        kernel_start,
        kernel_end,
    };
    let is_multiboot2 = magic == MULTIBOOT2_BOOT_MAGIC;
    let mut efi = None;
    // SAFETY: under PVH `ebx` points to `hvm_start_info`; under any other
    // loader it is some address below 4 GiB, identity-mapped and readable.
    let is_pvh = !is_multiboot2 && unsafe { read_phys::<u32>(info_addr) } == PVH_START_MAGIC;
    if is_multiboot2 {
        info.protocol = BootProtocol::Multiboot2;
        // SAFETY: the Multiboot2 magic says `ebx` is the information structure.
        efi = unsafe { parse_multiboot2(&mut info, info_addr) };
    } else if is_pvh {
        // SAFETY: the magic identifies a PVH start info.
        unsafe { parse_pvh(&mut info, info_addr) };
    } else {
        early_serial_write("boot: unknown boot protocol (neither PVH nor Multiboot2)\r\n");
        loop {
            // SAFETY: stop this CPU for good.
            unsafe { core::arch::asm!("cli; hlt", options(nomem, nostack)) };
        }
    }
    // SAFETY: the loader's RSDP and EFI system table as just parsed; boot
    // CPU, before `kernel_main`; the copy goes to the static buffer.
    info.rsdp = unsafe {
        rsdp::find(info.rsdp, efi, info.cmdline, |addr, len| {
            copy_rsdp(addr, len)
        })
    };
    let cell = BOOT_INFO.0.get();
    // SAFETY: single-threaded boot; written once, then only shared.
    let info: &'static BootInfo = unsafe {
        (*cell).write(info);
        (*cell).assume_init_ref()
    };
    // SAFETY: `kernel_main` is the kernel's entry with exactly this signature.
    unsafe { kernel_main(info) }
}
