//! The UEFI half of the aarch64 entry: the Image is also an EFI application.
//!
//! `entry.S` gives the Image a PE32+ header whose entry point, `efi_entry`,
//! relocates the image, clears `.bss` and calls [`boot_efi_main`] on the
//! firmware's stack, with boot services running and the firmware's MMU setup
//! (identity mapped, caches on). That:
//!
//! 1. takes the device tree from the EFI configuration table
//!    (`DEVICE_TREE_GUID`); a firmware that offers only ACPI tables gets a clear
//!    message and `EFI_UNSUPPORTED` back (this kernel describes its platform
//!    from a device tree; on QEMU, `-machine virt,acpi=off` makes edk2 install
//!    one),
//! 2. copies the command line out of the loaded image's `LoadOptions` (UCS-2:
//!    what GRUB's `linux` line, QEMU `-append` through edk2, or the UEFI shell
//!    passed),
//! 3. reads the memory map and exits boot services, reading the map again and
//!    retrying when `ExitBootServices` answers `EFI_INVALID_PARAMETER` (the map
//!    changed in between, as the specification allows),
//! 4. keeps the usable RAM (loader, boot-services and conventional memory) for
//!    the kernel, and cleans the image and the device tree to the point of
//!    coherency: the kernel reads both with its MMU and caches off next.
//!
//! `entry.S` then masks interrupts and goes to `real_start` with `x0` = the
//! device tree, exactly as after `booti`; `el1_setup` there turns the MMU off
//! (or the EL2 -> EL1 drop starts EL1 with it off when UEFI ran at EL2).
//!
//! What the kernel gets (through [`super::boot_aarch64_main`]) is kept in
//! [`HANDOFF`], which lives in `.data`: `real_start` clears `.bss` again.
//!
//! Only the few EFI structures and calls this needs are declared here, from
//! the UEFI 2.10 specification (no crate: a dozen offsets).

use core::ffi::c_void;

use crate::{MemRegion, MAX_MEM_REGIONS};

/// `EFI_STATUS`: errors have the top bit set.
type Status = usize;
const ERROR_BIT: usize = 1 << 63;
const EFI_SUCCESS: Status = 0;
const EFI_LOAD_ERROR: Status = ERROR_BIT | 1;
const EFI_INVALID_PARAMETER: Status = ERROR_BIT | 2;
const EFI_UNSUPPORTED: Status = ERROR_BIT | 3;
const EFI_BUFFER_TOO_SMALL: Status = ERROR_BIT | 5;

#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C)]
struct Guid(u32, u16, u16, [u8; 8]);

/// `EFI_DTB_TABLE_GUID` (the device tree in the configuration table).
const DEVICE_TREE_GUID: Guid = Guid(
    0xb1b6_21d5,
    0xf19c,
    0x41a5,
    [0x83, 0x0b, 0xd9, 0x15, 0x2c, 0x69, 0xaa, 0xe0],
);
/// `EFI_ACPI_20_TABLE_GUID`: only to say what the firmware offers instead.
const ACPI_20_GUID: Guid = Guid(
    0x8868_e871,
    0xe4f1,
    0x11d3,
    [0xbc, 0x22, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81],
);
/// `EFI_LOADED_IMAGE_PROTOCOL_GUID`.
const LOADED_IMAGE_GUID: Guid = Guid(
    0x5b1b_31a1,
    0x9562,
    0x11d2,
    [0x8e, 0x3f, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b],
);

/// `EFI_SYSTEM_TABLE` signature ("IBI SYST").
const SYSTEM_TABLE_SIGNATURE: u64 = 0x5453_5953_2049_4249;

#[repr(C)]
struct TableHeader {
    signature: u64,
    revision: u32,
    header_size: u32,
    crc32: u32,
    reserved: u32,
}

#[repr(C)]
struct SystemTable {
    hdr: TableHeader,
    firmware_vendor: *const u16,
    firmware_revision: u32,
    console_in_handle: *mut c_void,
    con_in: *mut c_void,
    console_out_handle: *mut c_void,
    con_out: *mut TextOutput,
    standard_error_handle: *mut c_void,
    std_err: *mut c_void,
    runtime_services: *mut c_void,
    boot_services: *mut BootServices,
    number_of_table_entries: usize,
    configuration_table: *const ConfigurationTable,
}

#[repr(C)]
struct ConfigurationTable {
    vendor_guid: Guid,
    vendor_table: *mut c_void,
}

/// `EFI_SIMPLE_TEXT_OUTPUT_PROTOCOL`, up to the one call used. Functions
/// are addresses, called through [`call`] (efiapi = AAPCS64 with the
/// firmware's x18); their UEFI signatures are in the comments.
#[repr(C)]
struct TextOutput {
    reset: usize,
    /// `(this: *mut TextOutput, string: *const u16) -> Status`
    output_string: usize,
}

/// `EFI_BOOT_SERVICES`, up to `ExitBootServices` (functions as in
/// [`TextOutput`]).
#[repr(C)]
struct BootServices {
    hdr: TableHeader,
    raise_tpl: usize,
    restore_tpl: usize,
    allocate_pages: usize,
    free_pages: usize,
    /// `(map_size: *mut usize, map: *mut u8, map_key: *mut usize,
    /// descriptor_size: *mut usize, descriptor_version: *mut u32) -> Status`
    get_memory_map: usize,
    allocate_pool: usize,
    free_pool: usize,
    create_event: usize,
    set_timer: usize,
    wait_for_event: usize,
    signal_event: usize,
    close_event: usize,
    check_event: usize,
    install_protocol_interface: usize,
    reinstall_protocol_interface: usize,
    uninstall_protocol_interface: usize,
    /// `(handle, protocol: *const Guid, interface: *mut *mut c_void) -> Status`
    handle_protocol: usize,
    reserved: usize,
    register_protocol_notify: usize,
    locate_handle: usize,
    locate_device_path: usize,
    install_configuration_table: usize,
    load_image: usize,
    start_image: usize,
    exit: usize,
    unload_image: usize,
    /// `(image_handle, map_key: usize) -> Status`
    exit_boot_services: usize,
}

/// `EFI_LOADED_IMAGE_PROTOCOL`, up to the image's own range.
#[repr(C)]
struct LoadedImage {
    revision: u32,
    parent_handle: *mut c_void,
    system_table: *mut SystemTable,
    device_handle: *mut c_void,
    file_path: *mut c_void,
    reserved: *mut c_void,
    load_options_size: u32,
    load_options: *const u16,
    image_base: *mut c_void,
    image_size: u64,
}

/// `EFI_MEMORY_DESCRIPTOR` (the firmware's stride may be larger).
#[repr(C)]
struct MemoryDescriptor {
    kind: u32,
    physical_start: u64,
    virtual_start: u64,
    number_of_pages: u64,
    attribute: u64,
}

/// Memory types the kernel may use once boot services are gone: loader code
/// and data (this image, GRUB, the old LoadOptions), boot-services code and
/// data, conventional memory.
fn usable(kind: u32) -> bool {
    matches!(kind, 1..=4 | 7)
}

/// Longest command line kept (bytes); longer ones are cut, and say so.
pub const CMDLINE_MAX: usize = 2048;

/// Where the command line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdlineSource {
    /// The loaded image's `LoadOptions` (UCS-2 text).
    LoadOptions,
    /// None given (empty `LoadOptions`): the device tree's `/chosen/bootargs`.
    DeviceTree,
    /// `LoadOptions` held something that is not text (a boot entry's binary
    /// optional data), so it was ignored: the device tree's, as above.
    NotText,
}

/// What the UEFI entry learned, for the kernel's boot log and `BootInfo`.
#[derive(Clone, Copy, Debug)]
pub struct Handoff {
    /// Whether the image was started through `efi_entry` (else nothing below
    /// is meaningful).
    pub booted: bool,
    /// The command line, ASCII (`cmdline_len` bytes).
    pub cmdline: [u8; CMDLINE_MAX],
    /// Bytes of `cmdline` in use.
    pub cmdline_len: usize,
    /// Where the command line came from.
    pub cmdline_source: CmdlineSource,
    /// Whether the command line was longer than `CMDLINE_MAX` and was cut.
    pub cmdline_cut: bool,
    /// Usable RAM from the memory map, merged, in map order.
    pub memory: [MemRegion; MAX_MEM_REGIONS],
    /// Valid entries of `memory`.
    pub memory_len: usize,
    /// Usable ranges left out for want of room in `memory` (the smallest).
    pub memory_dropped: usize,
    /// Descriptors in the final memory map.
    pub map_entries: usize,
    /// `ExitBootServices` calls it took (more than 1: the map changed).
    pub exit_attempts: usize,
    /// The UEFI revision the system table reports (major << 16 | minor).
    pub uefi_revision: u32,
}

/// Written by [`boot_efi_main`] before boot services end; read by the kernel.
/// In `.data`, not `.bss`: `real_start` clears `.bss` after the UEFI entry.
#[link_section = ".data.efi_handoff"]
pub(super) static mut HANDOFF: Handoff = Handoff {
    booted: false,
    cmdline: [0; CMDLINE_MAX],
    cmdline_len: 0,
    cmdline_source: CmdlineSource::DeviceTree,
    cmdline_cut: false,
    memory: [MemRegion { start: 0, len: 0 }; MAX_MEM_REGIONS],
    memory_len: 0,
    memory_dropped: 0,
    map_entries: 0,
    exit_attempts: 0,
    uefi_revision: 0,
};

/// The memory map buffer (only used while boot services run, so `.bss` is fine).
const MAP_BYTES: usize = 64 * 1024;
static mut MAP: [u64; MAP_BYTES / 8] = [0; MAP_BYTES / 8];

/// How often `ExitBootServices` is tried with a fresh map before giving up.
const EXIT_TRIES: usize = 8;

extern "C" {
    static __kernel_start: u8;
    static __kernel_end: u8;
    /// `entry.S`: calls `function(a0, ..., a4)` with the firmware's x18.
    fn efi_call(function: usize, a0: usize, a1: usize, a2: usize, a3: usize, a4: usize) -> Status;
}

/// Calls the UEFI function at `function` with up to five arguments.
///
/// # Safety
/// `function` must be a UEFI function of boot services or a protocol that
/// takes these arguments (unused ones are ignored), and boot services must
/// be running.
unsafe fn call(function: usize, args: [usize; 5]) -> Status {
    // SAFETY: the caller's contract; efi_call only moves the arguments and
    // restores the firmware's x18 (see entry.S).
    unsafe { efi_call(function, args[0], args[1], args[2], args[3], args[4]) }
}

/// The UEFI handoff, when the image was started as an EFI application.
pub fn handoff() -> Option<&'static Handoff> {
    // SAFETY: written only by `boot_efi_main` on the boot CPU before the kernel
    // runs; read-only afterwards.
    let h = unsafe { &*core::ptr::addr_of!(HANDOFF) };
    h.booted.then_some(h)
}

/// Prints `msg` on the firmware's console (boot services must be running).
fn print(st: &SystemTable, msg: &str) {
    let out = st.con_out;
    if out.is_null() {
        return;
    }
    // UCS-2 in chunks, "\n" as "\r\n".
    let mut buf = [0u16; 128];
    let mut n = 0;
    let flush = |buf: &mut [u16; 128], n: &mut usize| {
        buf[*n] = 0;
        // SAFETY: `out` is the firmware's console protocol (non-null), the
        // string is NUL-terminated, and boot services are running.
        unsafe {
            call(
                (*out).output_string,
                [out as usize, buf.as_ptr() as usize, 0, 0, 0],
            )
        };
        *n = 0;
    };
    for c in msg.chars() {
        if n + 3 >= buf.len() {
            flush(&mut buf, &mut n);
        }
        if c == '\n' {
            buf[n] = u16::from(b'\r');
            n += 1;
        }
        buf[n] = u16::try_from(u32::from(c)).unwrap_or(u16::from(b'?'));
        n += 1;
    }
    flush(&mut buf, &mut n);
}

/// Rust half of `efi_entry`: see the module documentation. Returns the device
/// tree's address with boot services exited, or an EFI error status (top bit
/// set) for the firmware, with boot services still running.
///
/// # Safety
/// Called once by `efi_entry`, as the UEFI specification calls an image's
/// entry point: `image` is this image's handle and `st` the system table.
#[no_mangle]
unsafe extern "C" fn boot_efi_main(image: *mut c_void, st: *const SystemTable) -> usize {
    // SAFETY: the firmware passes a valid system table (checked by signature
    // before anything else in it is used).
    let st = unsafe { &*st };
    if st.hdr.signature != SYSTEM_TABLE_SIGNATURE || st.boot_services.is_null() {
        return EFI_LOAD_ERROR;
    }
    // SAFETY: checked non-null; boot services run until ExitBootServices.
    let bs = unsafe { &*st.boot_services };
    // SAFETY: single-threaded boot, before the kernel: nothing else touches it.
    let h = unsafe { &mut *core::ptr::addr_of_mut!(HANDOFF) };
    h.uefi_revision = st.hdr.revision;

    // 1. The device tree.
    let mut dtb = 0usize;
    let mut acpi = false;
    for i in 0..st.number_of_table_entries {
        // SAFETY: the configuration table has `number_of_table_entries` entries.
        let entry = unsafe { &*st.configuration_table.add(i) };
        if entry.vendor_guid == DEVICE_TREE_GUID {
            dtb = entry.vendor_table as usize;
        } else if entry.vendor_guid == ACPI_20_GUID {
            acpi = true;
        }
    }
    if dtb == 0 {
        print(
            st,
            if acpi {
                "sched kernel: this firmware offers ACPI tables only, no device tree, and this\n\
                 kernel finds its devices (UART, GIC, timer, CPUs) in a device tree.\n\
                 On QEMU boot with -machine virt,acpi=off: edk2 then installs QEMU's device tree.\n"
            } else {
                "sched kernel: no device tree in the EFI configuration table; this kernel needs one.\n"
            },
        );
        return EFI_UNSUPPORTED;
    }
    if !super::fdt_valid(dtb) {
        print(
            st,
            "sched kernel: the EFI configuration table's device tree has no valid FDT header.\n",
        );
        return EFI_UNSUPPORTED;
    }

    // 2. The command line.
    let mut loaded: *mut c_void = core::ptr::null_mut();
    // SAFETY: a boot service call with valid pointers, boot services running.
    let status = unsafe {
        call(
            bs.handle_protocol,
            [
                image as usize,
                &LOADED_IMAGE_GUID as *const Guid as usize,
                &mut loaded as *mut *mut c_void as usize,
                0,
                0,
            ],
        )
    };
    if status == EFI_SUCCESS && !loaded.is_null() {
        // SAFETY: the firmware's protocol instance for this image; LoadOptions
        // holds `load_options_size` bytes when non-null.
        let options = unsafe {
            let li = &*(loaded as *const LoadedImage);
            if li.load_options.is_null() {
                &[][..]
            } else {
                core::slice::from_raw_parts(li.load_options, li.load_options_size as usize / 2)
            }
        };
        copy_cmdline(options, h);
    }

    // 3. The memory map, then ExitBootServices (retried with a fresh map).
    let map = core::ptr::addr_of_mut!(MAP).cast::<u8>();
    let mut desc_size = 0usize;
    let mut status = EFI_INVALID_PARAMETER;
    while h.exit_attempts < EXIT_TRIES {
        h.exit_attempts += 1;
        let mut map_size = MAP_BYTES;
        let mut key = 0usize;
        let mut version = 0u32;
        // SAFETY: MAP is MAP_BYTES long and only used here; boot services run
        // (a failed ExitBootServices leaves them running, and GetMemoryMap is
        // the one call allowed then).
        status = unsafe {
            call(
                bs.get_memory_map,
                [
                    &mut map_size as *mut usize as usize,
                    map as usize,
                    &mut key as *mut usize as usize,
                    &mut desc_size as *mut usize as usize,
                    &mut version as *mut u32 as usize,
                ],
            )
        };
        if status == EFI_BUFFER_TOO_SMALL {
            print(
                st,
                "sched kernel: the EFI memory map is larger than 64 KiB.\n",
            );
            return status;
        }
        if status != EFI_SUCCESS || desc_size < core::mem::size_of::<MemoryDescriptor>() {
            print(st, "sched kernel: GetMemoryMap failed.\n");
            return if status == EFI_SUCCESS {
                EFI_LOAD_ERROR
            } else {
                status
            };
        }
        // SAFETY: the map key comes from the GetMemoryMap call just above.
        status = unsafe { call(bs.exit_boot_services, [image as usize, key, 0, 0, 0]) };
        if status == EFI_SUCCESS {
            // The firmware's interrupt handlers are gone with it: mask now.
            // SAFETY: masking interrupts at this EL has no other effect.
            unsafe { core::arch::asm!("msr daifset, #0xf", options(nomem, nostack)) };
            h.map_entries = map_size / desc_size;
            break;
        }
        if status != EFI_INVALID_PARAMETER {
            break;
        }
    }
    if status != EFI_SUCCESS {
        print(st, "sched kernel: ExitBootServices failed.\n");
        return status;
    }

    // Boot services are gone: no more firmware calls from here on.
    // 4. Usable RAM for the kernel, and the caches.
    for i in 0..h.map_entries {
        // SAFETY: entry i of the map GetMemoryMap wrote (stride desc_size),
        // read unaligned-safe through read_unaligned.
        let d = unsafe {
            map.add(i * desc_size)
                .cast::<MemoryDescriptor>()
                .read_unaligned()
        };
        if usable(d.kind) {
            add_region(
                h,
                d.physical_start as usize,
                (d.number_of_pages as usize) << 12,
            );
        }
    }
    h.booted = true;
    // SAFETY: the linker symbols delimit this image; `dtb` is a valid FDT
    // whose header gives its size. Cleaning changes no memory contents.
    unsafe {
        let start = core::ptr::addr_of!(__kernel_start) as usize;
        let end = core::ptr::addr_of!(__kernel_end) as usize;
        clean_dcache(start, end - start);
        clean_dcache(dtb, super::read_be32(dtb + 4) as usize);
    }
    dtb
}

/// Copies the UCS-2 `LoadOptions` into `h.cmdline` as ASCII. Loaders put
/// their own word first at times: GRUB's `linux` passes `BOOT_IMAGE=<path>`,
/// the UEFI shell the program's path (`...\BOOTAA64.EFI`); such a first word
/// is left out. Options that are not text (a boot entry's binary data) are
/// ignored, and the device tree's `/chosen/bootargs` is used instead.
fn copy_cmdline(options: &[u16], h: &mut Handoff) {
    let text = options.split(|&c| c == 0).next().unwrap_or(&[]);
    if text.is_empty() {
        h.cmdline_source = CmdlineSource::DeviceTree;
        return;
    }
    if !text
        .iter()
        .all(|&c| (0x20..0x7f).contains(&c) || c == 9 || c == 10 || c == 13)
    {
        h.cmdline_source = CmdlineSource::NotText;
        return;
    }
    h.cmdline_source = CmdlineSource::LoadOptions;
    // The ASCII bytes (checked above), whitespace as spaces, then the first
    // word dropped when a loader put it there.
    let mut words = text
        .split(|&c| c == 0x20 || c == 9 || c == 10 || c == 13)
        .filter(|w| !w.is_empty())
        .peekable();
    if let Some(first) = words.peek() {
        if loader_word(first) {
            words.next();
        }
    }
    let mut n = 0;
    for w in words {
        let need = w.len() + usize::from(n > 0);
        if n + need > CMDLINE_MAX {
            h.cmdline_cut = true;
            break;
        }
        if n > 0 {
            h.cmdline[n] = b' ';
            n += 1;
        }
        for &c in w {
            h.cmdline[n] = c as u8; // ASCII: checked above
            n += 1;
        }
    }
    h.cmdline_len = n;
}

/// Whether `word` (UCS-2, ASCII) is a loader's own first word: `BOOT_IMAGE=...`
/// or a path ending in `.efi` (any case).
fn loader_word(word: &[u16]) -> bool {
    let lower = |c: u16| (c as u8).to_ascii_lowercase();
    let prefix = b"boot_image=";
    let is_boot_image =
        word.len() >= prefix.len() && word.iter().zip(prefix).all(|(&c, &p)| lower(c) == p);
    let suffix = b".efi";
    let is_efi = word.len() > suffix.len()
        && word[word.len() - suffix.len()..]
            .iter()
            .zip(suffix)
            .all(|(&c, &p)| lower(c) == p);
    is_boot_image || is_efi
}

/// Adds `[start, start + len)` to the usable RAM, merged with the previous
/// range when they touch; when all slots are taken the smallest range goes.
fn add_region(h: &mut Handoff, start: usize, len: usize) {
    if len == 0 {
        return;
    }
    if let Some(last) = h.memory[..h.memory_len].last_mut() {
        if last.start + last.len == start {
            last.len += len;
            return;
        }
    }
    let new = MemRegion { start, len };
    if h.memory_len < MAX_MEM_REGIONS {
        h.memory[h.memory_len] = new;
        h.memory_len += 1;
        return;
    }
    h.memory_dropped += 1;
    let (i, smallest) = h
        .memory
        .iter()
        .enumerate()
        .min_by_key(|(_, r)| r.len)
        .map(|(i, r)| (i, r.len))
        .unwrap_or((0, 0));
    if smallest < len {
        h.memory[i] = new;
    }
}

/// Cleans and invalidates the data cache over `[start, start + len)` to the
/// point of coherency (`dc civac`), by virtual address: under UEFI's identity
/// map that is the physical range the kernel then reads with its caches off.
///
/// # Safety
/// The range must be mapped (any memory: this changes no contents).
unsafe fn clean_dcache(start: usize, len: usize) {
    let ctr: u64;
    // SAFETY: reading CTR_EL0 has no side effects.
    unsafe { core::arch::asm!("mrs {}, ctr_el0", out(reg) ctr, options(nomem, nostack)) };
    let line = 4usize << ((ctr >> 16) & 0xf);
    let mut a = start & !(line - 1);
    while a < start + len {
        // SAFETY: cache maintenance by VA on a mapped address (caller).
        unsafe { core::arch::asm!("dc civac, {}", in(reg) a, options(nostack)) };
        a += line;
    }
    // SAFETY: a barrier only.
    unsafe { core::arch::asm!("dsb sy", options(nostack)) };
}
