//! Finding the ACPI RSDP when the loader did not hand one over.
//!
//! Order (the first that gives a valid RSDP wins):
//! 1. what the loader passed: PVH `hvm_start_info.rsdp_paddr`, or the
//!    Multiboot2 ACPI tags (15, the 2.0+ RSDP, over 14, the 1.0 one);
//! 2. the EFI system table (Multiboot2 tags 12 / 11, 64- / 32-bit pointer):
//!    its configuration table lists the RSDP under the ACPI 2.0 GUID (taken
//!    first) or the ACPI 1.0 GUID;
//! 3. the BIOS areas: the first KiB of the EBDA (segment at 0x40E), then
//!    0xE0000-0xFFFFF, on 16-byte boundaries, for "RSD PTR " with a valid
//!    checksum (and a valid extended checksum for revision 2+).
//!
//! The boot argument `acpi_rsdp=efi` skips step 1 and `acpi_rsdp=bios` steps
//! 1 and 2, so the tests can run the fallbacks on a loader that does give an
//! RSDP (QEMU's PVH boot, GRUB). Everything read here lies below 4 GiB (the
//! boot identity map); a pointer above it is ignored.

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Signature of the RSDP.
const SIGNATURE: &[u8; 8] = b"RSD PTR ";
/// EFI_ACPI_20_TABLE_GUID 8868e871-e4f1-11d3-bc22-0080c73c8881, as stored.
const ACPI_20_GUID: [u8; 16] = [
    0x71, 0xe8, 0x68, 0x88, 0xf1, 0xe4, 0xd3, 0x11, 0xbc, 0x22, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81,
];
/// ACPI_TABLE_GUID (1.0) eb9d2d30-2d88-11d3-9a16-0090273fc14d, as stored.
const ACPI_10_GUID: [u8; 16] = [
    0x30, 0x2d, 0x9d, 0xeb, 0x88, 0x2d, 0xd3, 0x11, 0x9a, 0x16, 0x00, 0x90, 0x27, 0x3f, 0xc1, 0x4d,
];
/// Most configuration-table entries read (a sanity bound).
const MAX_EFI_CONFIG_ENTRIES: usize = 256;
/// Highest address read here (the boot identity map ends at 4 GiB).
const LIMIT: usize = 1 << 32;

/// Where the RSDP the kernel uses came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RsdpSource {
    /// No RSDP was found.
    None = 0,
    /// The loader: PVH start info or Multiboot2 tag 14/15.
    Loader = 1,
    /// The EFI system table's configuration table.
    EfiSystemTable = 2,
    /// The BIOS area scan.
    BiosScan = 3,
}

impl RsdpSource {
    /// A short name for the boot log.
    pub fn name(self) -> &'static str {
        match self {
            RsdpSource::None => "none",
            RsdpSource::Loader => "loader",
            RsdpSource::EfiSystemTable => "EFI system table",
            RsdpSource::BiosScan => "BIOS area scan",
        }
    }
}

static SOURCE: AtomicU8 = AtomicU8::new(RsdpSource::None as u8);
/// Where the firmware keeps the RSDP found (before any copy).
static FOUND_AT: AtomicUsize = AtomicUsize::new(0);

/// Where the RSDP came from and the firmware's address of it (set before
/// `kernel_main`; `BootInfo::rsdp` may name a copy).
pub fn source() -> (RsdpSource, usize) {
    let source = match SOURCE.load(Ordering::Relaxed) {
        1 => RsdpSource::Loader,
        2 => RsdpSource::EfiSystemTable,
        3 => RsdpSource::BiosScan,
        _ => RsdpSource::None,
    };
    (source, FOUND_AT.load(Ordering::Relaxed))
}

/// The EFI system table a Multiboot2 loader named (tag 12 or 11).
#[derive(Clone, Copy, Debug)]
pub struct EfiSystemTable {
    /// Physical address.
    pub addr: usize,
    /// Tag 12 (64-bit table) rather than tag 11 (32-bit).
    pub is_64: bool,
}

/// Which steps the command line skips (`acpi_rsdp=efi|bios`; anything else,
/// or nothing: none). The kernel's parser (`bootargs`) checks the value.
/// Words after `run=` belong to its shell script, not to the boot.
fn first_step(cmdline: &str) -> RsdpSource {
    match cmdline
        .split_ascii_whitespace()
        .take_while(|w| !w.starts_with("run="))
        .find_map(|w| w.strip_prefix("acpi_rsdp="))
    {
        Some("efi") => RsdpSource::EfiSystemTable,
        Some("bios") => RsdpSource::BiosScan,
        _ => RsdpSource::Loader,
    }
}

/// Whether `addr..addr+len` lies in the identity map.
fn in_map(addr: usize, len: usize) -> bool {
    addr != 0 && addr.checked_add(len).is_some_and(|end| end <= LIMIT)
}

/// Sum of `len` bytes at `addr`, mod 256.
///
/// # Safety
/// The range must be readable.
unsafe fn sum(addr: usize, len: usize) -> u8 {
    // SAFETY: the caller vouches for the range.
    let bytes = unsafe { core::slice::from_raw_parts(addr as *const u8, len) };
    bytes.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

/// The RSDP's length if a valid one starts at `addr`.
///
/// # Safety
/// `addr` must be readable for 20 bytes when it passes `in_map` (the
/// identity map below 4 GiB holds nothing that faults on a read).
unsafe fn valid(addr: usize) -> Option<usize> {
    if !in_map(addr, 36) {
        return None;
    }
    // SAFETY: (whole block) inside the identity map (checked above).
    unsafe {
        if super::read_phys::<[u8; 8]>(addr) != *SIGNATURE || sum(addr, 20) != 0 {
            return None;
        }
        if super::read_phys::<u8>(addr + 15) < 2 {
            return Some(20);
        }
        let len = super::read_phys::<u32>(addr + 20) as usize;
        ((36..=64).contains(&len) && sum(addr, len) == 0).then_some(len)
    }
}

/// The RSDP from the EFI configuration table.
///
/// # Safety
/// `st` must be the system table the loader named.
unsafe fn from_efi(st: EfiSystemTable) -> Option<(usize, usize)> {
    // EFI_SYSTEM_TABLE: a 24-byte header, then pointers; NumberOfTableEntries
    // and ConfigurationTable at 104/112 (64-bit) or 64/68 (32-bit). Each
    // EFI_CONFIGURATION_TABLE entry is a GUID and a pointer: 24 / 20 bytes.
    let (count_at, table_at, entry_bytes) = if st.is_64 {
        (104, 112, 24)
    } else {
        (64, 68, 20)
    };
    if !in_map(st.addr, table_at + 8) {
        return None;
    }
    // SAFETY: (whole block) the system table is inside the map (checked),
    // and each entry is range-checked before it is read.
    unsafe {
        let (count, table) = if st.is_64 {
            (
                super::read_phys::<u64>(st.addr + count_at) as usize,
                super::read_phys::<u64>(st.addr + table_at) as usize,
            )
        } else {
            (
                super::read_phys::<u32>(st.addr + count_at) as usize,
                super::read_phys::<u32>(st.addr + table_at) as usize,
            )
        };
        let count = count.min(MAX_EFI_CONFIG_ENTRIES);
        if !in_map(table, count * entry_bytes) {
            return None;
        }
        let lookup = |guid: &[u8; 16]| {
            (0..count).find_map(|i| {
                let e = table + i * entry_bytes;
                if super::read_phys::<[u8; 16]>(e) != *guid {
                    return None;
                }
                let ptr = if st.is_64 {
                    super::read_phys::<u64>(e + 16) as usize
                } else {
                    super::read_phys::<u32>(e + 16) as usize
                };
                valid(ptr).map(|len| (ptr, len))
            })
        };
        lookup(&ACPI_20_GUID).or_else(|| lookup(&ACPI_10_GUID))
    }
}

/// The RSDP from the BIOS areas.
///
/// # Safety
/// Legacy BIOS memory (the BDA word at 0x40E, the EBDA, 0xE0000-0xFFFFF) must
/// be readable, as it is in the identity map on any PC.
unsafe fn from_bios() -> Option<(usize, usize)> {
    // SAFETY: the BDA is identity-mapped low memory.
    let ebda = usize::from(unsafe { super::read_phys::<u16>(0x40e) }) << 4;
    let scan = |start: usize, end: usize| {
        (start..end).step_by(16).find_map(|a| {
            // SAFETY: low memory below 1 MiB, identity-mapped.
            unsafe { valid(a) }.map(|len| (a, len))
        })
    };
    // The EBDA lies just below 640 KiB; a zero or odd segment is skipped.
    let ebda_hit = if (0x8_0000..0xA_0000).contains(&ebda) {
        scan(ebda, ebda + 1024)
    } else {
        None
    };
    ebda_hit.or_else(|| scan(0xE_0000, 0x10_0000))
}

/// The RSDP: `loader`'s if given and not skipped, else one found in the EFI
/// system table or the BIOS areas, handed to `keep(address, length)` (which
/// copies it out of firmware memory and returns the copy's address). Records
/// the source.
///
/// # Safety
/// `loader` must be what the loader passed, `efi` the system table it named;
/// called once on the boot CPU before `kernel_main`.
pub unsafe fn find(
    loader: Option<usize>,
    efi: Option<EfiSystemTable>,
    cmdline: &str,
    keep: impl FnOnce(usize, usize) -> usize,
) -> Option<usize> {
    let first = first_step(cmdline);
    if let Some(addr) = loader.filter(|_| first == RsdpSource::Loader) {
        SOURCE.store(RsdpSource::Loader as u8, Ordering::Relaxed);
        FOUND_AT.store(addr, Ordering::Relaxed);
        return Some(addr);
    }
    let efi_hit = efi
        .filter(|_| first != RsdpSource::BiosScan)
        // SAFETY: the loader's system table (caller's contract).
        .and_then(|st| unsafe { from_efi(st) })
        .map(|r| (r, RsdpSource::EfiSystemTable));
    // SAFETY: a PC's legacy areas, identity-mapped.
    let found = efi_hit.or_else(|| unsafe { from_bios() }.map(|r| (r, RsdpSource::BiosScan)));
    let ((addr, len), source) = found?;
    SOURCE.store(source as u8, Ordering::Relaxed);
    FOUND_AT.store(addr, Ordering::Relaxed);
    Some(keep(addr, len))
}
