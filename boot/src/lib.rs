//! Per-architecture entry code and the [`BootInfo`] it hands to the kernel.
//!
//! `boot` never calls into kernel modules except the one entry function: after the
//! arch entry code has set up a stack (and on x86_64 long mode with identity
//! paging, on aarch64 EL1 with FP/SIMD and self-relocation), it parses the boot
//! protocol's information into a [`BootInfo`] and calls
//! `extern "Rust" fn kernel_main(info: &'static BootInfo) -> !`, which the kernel
//! defines with `#[no_mangle]`.
//!
//! - x86_64 (`src/x86_64/`): one ELF64 loaded at 1 MiB, with a PVH note (QEMU
//!   `-kernel`) and a Multiboot2 header (GRUB, bare metal).
//! - aarch64 (`src/aarch64/`): a raw `Image` with the arm64 Linux image header,
//!   position independent (relocates itself); the DTB address arrives in `x0`.
#![no_std]

#[cfg(target_arch = "aarch64")]
pub mod aarch64;
pub mod fdt;
#[cfg(target_arch = "x86_64")]
pub mod x86_64;

/// Bytes of the guard below the boot stack: one page, which the kernel
/// leaves unmapped. One page catches any overflow because rustc probes every
/// page of a frame larger than a page, top down, before using it (see the
/// kernel's `heap::stack`), so no frame can step over it.
pub const BOOT_STACK_GUARD_BYTES: usize = 4096;

/// Where the boot stack is: the boot CPU runs on it from the entry code
/// until the kernel moves CPU 0's idle thread to a kernel stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootStack {
    /// First byte of the guard below the stack (page-aligned,
    /// [`BOOT_STACK_GUARD_BYTES`] long).
    pub guard: usize,
    /// Lowest byte of the stack (= the guard's end).
    pub bottom: usize,
    /// One past the highest byte (the initial stack pointer).
    pub top: usize,
}

extern "C" {
    static boot_stack_guard: u8;
    static boot_stack_bottom: u8;
    static boot_stack_top: u8;
}

/// The boot stack and its guard (symbols of the arch entry code).
pub fn boot_stack() -> BootStack {
    // Only the addresses of the linker symbols are taken (no read).
    let s = BootStack {
        guard: core::ptr::addr_of!(boot_stack_guard) as usize,
        bottom: core::ptr::addr_of!(boot_stack_bottom) as usize,
        top: core::ptr::addr_of!(boot_stack_top) as usize,
    };
    debug_assert!(s.guard.is_multiple_of(4096) && s.bottom - s.guard == BOOT_STACK_GUARD_BYTES);
    s
}

/// Most memory regions a [`BootInfo`] carries.
pub const MAX_MEM_REGIONS: usize = 32;

/// One usable RAM region, physical addresses (identity-mapped at boot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemRegion {
    /// First byte.
    pub start: usize,
    /// Length in bytes.
    pub len: usize,
}

/// How the kernel was loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootProtocol {
    /// Xen PVH entry (QEMU `-kernel` on x86_64).
    Pvh,
    /// Multiboot2 (GRUB).
    Multiboot2,
    /// arm64 Linux `Image` protocol (QEMU `-kernel`, U-Boot `booti`).
    LinuxImage,
    /// UEFI (aarch64): the Image's PE entry, then as `LinuxImage` with the
    /// device tree from the EFI configuration table.
    Uefi,
}

/// What the boot code learned from the loader, handed to `kernel_main`.
#[derive(Clone, Copy, Debug)]
pub struct BootInfo {
    /// The loader that started us.
    pub protocol: BootProtocol,
    /// Kernel command line (empty when none was given): PVH/Multiboot2 on
    /// x86_64, `/chosen/bootargs` of the DTB on aarch64.
    pub cmdline: &'static str,
    /// Usable RAM regions (x86_64, and aarch64 under UEFI from its memory map;
    /// otherwise aarch64 reads memory from the DTB).
    pub memory: [MemRegion; MAX_MEM_REGIONS],
    /// How many entries of `memory` are valid.
    pub memory_len: usize,
    /// ACPI RSDP physical address, when the loader gave one.
    pub rsdp: Option<usize>,
    /// Flattened device tree physical address (aarch64).
    pub dtb: Option<usize>,
    /// Physical address range the kernel image occupies (text through bss).
    pub kernel_start: usize,
    /// End of the kernel image (exclusive).
    pub kernel_end: usize,
}

impl BootInfo {
    /// The valid memory regions.
    pub fn memory_regions(&self) -> &[MemRegion] {
        &self.memory[..self.memory_len]
    }
}

/// A linear framebuffer the loader set up (x86_64: the Multiboot2
/// framebuffer tag, type 8, when its colour type is direct RGB).
///
/// Kept apart from [`BootInfo`] (read with [`framebuffer`]), so the arches
/// whose loaders give none need not know about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Framebuffer {
    /// Physical address of the first pixel (identity-mapped by the arch).
    pub addr: usize,
    /// Bytes from one row to the next.
    pub pitch: usize,
    /// Visible pixels per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Bits per pixel (8, 15, 16, 24 or 32; the console draws 16, 24 and 32).
    pub bpp: u8,
    /// Bit position and size of the red, green and blue fields of a pixel.
    pub red: (u8, u8),
    /// See `red`.
    pub green: (u8, u8),
    /// See `red`.
    pub blue: (u8, u8),
}

impl Framebuffer {
    /// Bytes the visible rows span (`pitch * height`).
    pub fn bytes(&self) -> usize {
        self.pitch.saturating_mul(self.height)
    }
}

/// The framebuffer, written once by the arch entry code before `kernel_main`.
struct FramebufferCell(core::cell::UnsafeCell<Option<Framebuffer>>);

// SAFETY: written only by the boot CPU before `kernel_main` runs (the
// `set_framebuffer` contract), read-only afterwards.
unsafe impl Sync for FramebufferCell {}

static FRAMEBUFFER: FramebufferCell = FramebufferCell(core::cell::UnsafeCell::new(None));

/// Records the loader's framebuffer.
///
/// # Safety
/// Call only from the arch entry code on the boot CPU, before `kernel_main`
/// (nothing reads the cell yet).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
unsafe fn set_framebuffer(fb: Framebuffer) {
    // SAFETY: the caller's contract: no reader exists yet.
    unsafe { *FRAMEBUFFER.0.get() = Some(fb) };
}

/// The linear framebuffer the loader set up, if any.
pub fn framebuffer() -> Option<Framebuffer> {
    // SAFETY: written before `kernel_main` only, so every read here sees the
    // final value.
    unsafe { *FRAMEBUFFER.0.get() }
}
