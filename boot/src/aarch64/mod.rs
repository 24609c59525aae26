//! aarch64 entry: a position-independent arm64 Linux `Image`.
//!
//! `entry.S` starts with the 64-byte arm64 image header, so QEMU `-kernel`, U-Boot
//! `booti` and the Raspberry Pi firmware all load the raw `Image` (made from the
//! kernel ELF by `scripts/boot/aarch64-image.sh`) at any 2 MiB-aligned address and enter
//! it with the DTB address in `x0`. Like Linux's arm64 Image, the same file is
//! also a PE32+ EFI application (first instruction "MZ", PE header at 0x3c):
//! UEFI firmware and GRUB's `linux` command load it at any 4 KiB-aligned
//! address and enter `efi_entry`, which ends in the same path (see `efi.rs`).
//! The entry code:
//!
//! 1. drops from EL2 to EL1 if needed (EL1 is where the kernel runs),
//! 2. enables FP/SIMD (`CPACR_EL1.FPEN`; the target is hard-float NEON),
//! 3. applies the `R_AARCH64_RELATIVE` entries of `.rela.dyn`, because the image is
//!    linked at 0x40200000 as a static PIE (see `.cargo/config.toml`) and pointers
//!    in data (vtables, `.ktest` entries) hold link-time addresses,
//! 4. clears `.bss`, sets up a 64 KiB boot stack and an early vector table that
//!    ends the run through semihosting on any exception,
//! 5. calls `boot_aarch64_main`, which builds the [`BootInfo`] and calls the
//!    kernel's `kernel_main`.
//!
//! Secondary CPUs enter at `aarch64_secondary_entry` ([`secondary_entry_address`],
//! the PSCI `CPU_ON` entry point) with a [`SecondaryStart`] block as the PSCI
//! `context_id`. They share steps 1 and 2, skip 3 and 4 (the boot CPU already
//! relocated the image and cleared `.bss`; clearing it again would wipe live
//! kernel state), take the stack and the Rust entry function from the block and
//! call it. Interrupts stay masked; the kernel installs its own vectors there.
//!
//! The boot CPU enters the kernel with the MMU off (all of memory identity
//! mapped, as Device memory); the kernel builds an identity map and turns the
//! MMU and caches on. A secondary CPU turns them on first thing in its entry
//! code, with the values its [`SecondaryStart`] block carries. The
//! `aarch64-unknown-none` target is built with `+strict-align`, so Rust code does
//! no unaligned accesses (which fault on Device memory) while the MMU is off.

use crate::{BootInfo, BootProtocol, MemRegion, MAX_MEM_REGIONS};

mod efi;
pub use efi::{handoff as efi_handoff, CmdlineSource, Handoff as EfiHandoff};

core::arch::global_asm!(include_str!("entry.S"));

extern "C" {
    static __kernel_start: u8;
    static __kernel_end: u8;
    /// The secondary CPU entry in `entry.S` (code, never called from Rust).
    static aarch64_secondary_entry: u8;
}

/// What a secondary CPU reads at its entry: the PSCI `CPU_ON` `context_id` is the
/// address of one of these. It must stay valid and unchanged until the started
/// CPU is running `entry` (the kernel keeps it in a static).
#[derive(Debug)]
#[repr(C)]
pub struct SecondaryStart {
    /// Initial stack pointer (16-byte aligned top of a stack).
    pub stack_top: usize,
    /// Called at EL1 with DAIF masked, FP/SIMD enabled and the early vectors
    /// installed: `entry(block, entry_el)` with `block` = this block's address and
    /// `entry_el` the exception level the CPU was started at (1 or 2).
    pub entry: extern "C" fn(block: usize, entry_el: usize) -> !,
    /// `TTBR0_EL1` to turn the MMU and data cache on with, before anything
    /// else (0: leave them off), with [`tcr`](Self::tcr) and
    /// [`mair`](Self::mair). The CPU reads this block with its cache off: the
    /// starter must clean it to the point of coherency before `CPU_ON`.
    pub ttbr0: u64,
    /// `TCR_EL1` for the MMU (see `ttbr0`).
    pub tcr: u64,
    /// `MAIR_EL1` for the MMU (see `ttbr0`).
    pub mair: u64,
}

const _: () = {
    // entry.S reads the fields at these offsets.
    assert!(core::mem::offset_of!(SecondaryStart, stack_top) == 0);
    assert!(core::mem::offset_of!(SecondaryStart, entry) == 8);
    assert!(core::mem::offset_of!(SecondaryStart, ttbr0) == 16);
    assert!(core::mem::offset_of!(SecondaryStart, tcr) == 24);
    assert!(core::mem::offset_of!(SecondaryStart, mair) == 32);
};

/// Runtime address of the secondary CPU entry point, to hand to PSCI `CPU_ON`
/// (the image is position independent: this is where it runs, not where it was
/// linked).
pub fn secondary_entry_address() -> usize {
    // Taking the address (PC-relative `adrp`/`add` in this PIE image) reads nothing.
    core::ptr::addr_of!(aarch64_secondary_entry) as usize
}

extern "Rust" {
    fn kernel_main(info: &'static BootInfo) -> !;
}

/// The [`BootInfo`] handed to the kernel; written once by the boot CPU.
static mut BOOT_INFO: BootInfo = BootInfo {
    protocol: BootProtocol::LinuxImage,
    cmdline: "",
    memory: [MemRegion { start: 0, len: 0 }; MAX_MEM_REGIONS],
    memory_len: 0,
    rsdp: None,
    dtb: None,
    kernel_start: 0,
    kernel_end: 0,
};

/// Exception level the boot CPU was entered at (1 or 2), for diagnostics and for
/// picking the PSCI conduit when the DTB does not name one.
static mut ENTRY_EL: usize = 0;

/// Where QEMU `virt` puts the DTB when it passes none in `x0` (an ELF `-kernel`, or
/// `-device loader` without a kernel): the base of RAM.
const QEMU_VIRT_DTB_FALLBACK: usize = 0x4000_0000;

use crate::fdt::FDT_MAGIC;

/// The exception level the boot CPU was entered at: 2 when the loader started us
/// at EL2 (we dropped to EL1), else 1.
pub fn entry_el() -> usize {
    // SAFETY: written once by the boot CPU before `kernel_main`, read-only after.
    unsafe { core::ptr::addr_of!(ENTRY_EL).read() }
}

/// Rust half of the boot CPU's entry, called by `entry.S` at EL1 on the boot stack
/// with `.bss` cleared and relocations applied.
///
/// `dtb` is the loader's `x0`; `el` the exception level we were entered at.
#[no_mangle]
extern "C" fn boot_aarch64_main(dtb: usize, el: usize) -> ! {
    let dtb = if fdt_valid(dtb) {
        Some(dtb)
    } else if fdt_valid(QEMU_VIRT_DTB_FALLBACK) {
        // Not the Linux boot protocol, but what QEMU virt does for ELF kernels and
        // raw `-device loader` boots: the DTB sits at the start of RAM.
        Some(QEMU_VIRT_DTB_FALLBACK)
    } else {
        None
    };
    if let Some(dtb) = dtb {
        // SAFETY: a devicetree header (40 bytes) is at `dtb`, checked above.
        let total = unsafe { read_be32(dtb + 4) } as usize;
        // SAFETY: the blob's `total` bytes at `dtb` are in RAM the loader
        // gave the kernel, and nothing else touches them while the boot CPU
        // runs alone.
        let blob = unsafe { core::slice::from_raw_parts_mut(dtb as *mut u8, total) };
        // A blob that cannot be walked stays as it is: the kernel's parser
        // says what is wrong with it.
        let _ = crate::fdt::strip_nops(blob);
    }
    let efi = efi::handoff();
    // Under UEFI the command line is the image's LoadOptions, when it had any.
    let cmdline = match efi {
        Some(h) if h.cmdline_source == CmdlineSource::LoadOptions => {
            core::str::from_utf8(&h.cmdline[..h.cmdline_len]).unwrap_or("")
        }
        _ => dtb.and_then(fdt_bootargs).unwrap_or(""),
    };
    // SAFETY: only the boot CPU runs this, once, before anything reads BOOT_INFO or
    // ENTRY_EL; the linker symbols are addresses only and are never dereferenced.
    let info: &'static BootInfo = unsafe {
        ENTRY_EL = el;
        let info = &mut *core::ptr::addr_of_mut!(BOOT_INFO);
        if let Some(h) = efi {
            // Usable RAM from the EFI memory map (the device tree's /memory
            // also covers firmware runtime and reserved memory).
            info.protocol = BootProtocol::Uefi;
            info.memory = h.memory;
            info.memory_len = h.memory_len;
        }
        info.dtb = dtb;
        info.cmdline = cmdline;
        info.kernel_start = core::ptr::addr_of!(__kernel_start) as usize;
        info.kernel_end = core::ptr::addr_of!(__kernel_end) as usize;
        info
    };
    // SAFETY: `kernel_main` is the kernel's #[no_mangle] entry with this signature.
    unsafe { kernel_main(info) }
}

/// Reads a big-endian `u32` at `addr` (any alignment is fine: byte loads).
///
/// # Safety
/// `addr..addr + 4` must be readable memory.
unsafe fn read_be32(addr: usize) -> u32 {
    let p = addr as *const [u8; 4];
    // SAFETY: the caller guarantees the 4 bytes are readable; [u8; 4] has align 1.
    u32::from_be_bytes(unsafe { p.read_volatile() })
}

/// Whether `addr` holds a flattened device tree header (checks magic and version).
fn fdt_valid(addr: usize) -> bool {
    if addr == 0 || !addr.is_multiple_of(8) {
        return false;
    }
    // SAFETY: the loader passed `addr` as the DTB, or it is the QEMU virt RAM base;
    // both are RAM on the platforms this image boots on. The header is 40 bytes.
    unsafe { read_be32(addr) == FDT_MAGIC && read_be32(addr + 20) >= 16 }
}

/// `/chosen/bootargs` of the DTB at `dtb` (a valid FDT), without its NUL.
///
/// A minimal walk of the structure block, so `BootInfo::cmdline` means the same
/// on every arch without the `boot` crate depending on an FDT parser.
fn fdt_bootargs(dtb: usize) -> Option<&'static str> {
    const BEGIN_NODE: u32 = 1;
    const END_NODE: u32 = 2;
    const PROP: u32 = 3;
    const NOP: u32 = 4;
    // SAFETY: `dtb` is a valid FDT (checked by the caller), which stays in place and
    // unmodified for the kernel's lifetime (heap_region excludes it); all offsets
    // below are bounded by `totalsize` from its header.
    unsafe {
        let total = read_be32(dtb + 4) as usize;
        let blob = core::slice::from_raw_parts(dtb as *const u8, total);
        let struct_off = read_be32(dtb + 8) as usize;
        let strings_off = read_be32(dtb + 12) as usize;
        let cstr = |off: usize| -> Option<&'static [u8]> {
            let rest = blob.get(off..)?;
            let len = rest.iter().position(|&b| b == 0)?;
            Some(&rest[..len])
        };
        let be32 = |off: usize| -> Option<u32> {
            Some(u32::from_be_bytes(blob.get(off..off + 4)?.try_into().ok()?))
        };
        let mut off = struct_off;
        let mut depth = 0usize;
        let mut in_chosen = false;
        loop {
            let token = be32(off)?;
            off += 4;
            match token {
                BEGIN_NODE => {
                    let name = cstr(off)?;
                    off = (off + name.len() + 1 + 3) & !3;
                    depth += 1;
                    if depth == 2 {
                        in_chosen = name == b"chosen" || name.starts_with(b"chosen@");
                    }
                }
                END_NODE => {
                    if in_chosen && depth == 2 {
                        return None;
                    }
                    depth = depth.checked_sub(1)?;
                }
                PROP => {
                    let len = be32(off)? as usize;
                    let name_off = be32(off + 4)? as usize;
                    let value = blob.get(off + 8..off + 8 + len)?;
                    off = (off + 8 + len + 3) & !3;
                    if in_chosen && depth == 2 && cstr(strings_off + name_off)? == b"bootargs" {
                        let text = value.split(|&b| b == 0).next()?;
                        return core::str::from_utf8(text).ok();
                    }
                }
                NOP => {}
                _ => return None,
            }
        }
    }
}
