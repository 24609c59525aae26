//! CPU discovery from the ACPI MADT ("APIC" table): a small hand parser.
//!
//! Walks RSDP -> XSDT (or RSDT for ACPI 1.0) -> MADT and collects the APIC ids
//! of the Processor Local APIC (type 0) and Processor Local x2APIC (type 9)
//! entries that are enabled (online-capable ones are hotplug slots, absent at
//! boot: counted, not started, as Linux does), the first I/O APIC (type 1) and
//! the override of ISA IRQ 4 (type 2, COM1's receive interrupt). Nothing else
//! of ACPI is needed yet, so a ~150-line parser is used instead of the `acpi` crate: no new
//! dependency (and no `Cargo.toml`/lock change in the shared kernel crate), no
//! allocator, no handler trait for physical mappings (everything below 4 GiB is
//! identity-mapped here), and it runs in `early_init`, before the heap exists.
//!
//! Every table is checked (signature, length, checksum) and every address must
//! lie in the identity-mapped 0-4 GiB; anything odd makes discovery return
//! `None`, and the kernel then runs on the boot CPU alone.
//!
//! Table addresses are [`PhysAddr`]es (read through the identity map); the
//! loader's RSDP becomes one in [`rsdp_of`].

use crate::addr::PhysAddr;

/// Signature of the RSDP.
const RSDP_SIGNATURE: &[u8; 8] = b"RSD PTR ";
/// Size of the standard ACPI table header.
const SDT_HEADER_BYTES: usize = 36;
/// Largest table accepted (a sanity bound on `length`).
const MAX_TABLE_BYTES: usize = 1 << 20;
/// MADT: offset of the first interrupt-controller structure.
pub(super) const MADT_ENTRIES_OFFSET: usize = 44;
/// MADT entry types.
pub(super) const MADT_LOCAL_APIC: u8 = 0;
const MADT_IO_APIC: u8 = 1;
const MADT_INTERRUPT_OVERRIDE: u8 = 2;
pub(super) const MADT_LOCAL_X2APIC: u8 = 9;
/// MADT processor flags.
pub(super) const MADT_ENABLED: u32 = 1 << 0;
pub(super) const MADT_ONLINE_CAPABLE: u32 = 1 << 1;

/// The CPUs to run on: the boot CPU's APIC id first, then the other usable
/// processors in MADT order (duplicates removed), at most `MAX_CPUS` in all.
#[derive(Clone, Copy, Debug)]
pub struct MadtCpus {
    /// The ids; the first `len` are valid; `apic_ids[0]` is the boot CPU's.
    pub apic_ids: [u32; super::super::MAX_CPUS],
    /// Valid entries in `apic_ids` (at least 1).
    pub len: usize,
    /// Usable processors the MADT lists beyond that limit, ignored.
    pub dropped: usize,
    /// Processors marked online-capable and not enabled: hotplug slots with
    /// no CPU at boot (ACPI 6.3, MADT processor flags), ignored. Linux does
    /// not start them either; starting one would wait the whole bring-up
    /// timeout for a CPU that is not there.
    pub hotplug: usize,
    /// The first I/O APIC: MMIO address and first GSI.
    pub io_apic: Option<(PhysAddr, u32)>,
    /// ISA IRQ 4 (COM1): its GSI and MPS INTI flags (polarity bits 1:0,
    /// trigger bits 3:2; 0 = the bus default, for ISA edge / active high).
    pub com1_gsi: (u32, u16),
}

/// The loader's RSDP address (`None` without one, or beyond 52 bits, which
/// no table can be).
pub fn rsdp_of(info: &boot::BootInfo) -> Option<PhysAddr> {
    info.rsdp.and_then(PhysAddr::try_new)
}

/// Reads a `T` at a physical address (unaligned).
///
/// # Safety
/// `addr..addr + size_of::<T>()` must be mapped, readable memory.
unsafe fn read<T: Copy>(addr: PhysAddr) -> T {
    // SAFETY: the caller vouches for the range.
    unsafe { core::ptr::read_unaligned(addr.identity_virt().as_ptr::<T>()) }
}

/// Whether `addr..addr+len` is inside the identity map.
fn mapped(addr: PhysAddr, len: usize) -> bool {
    addr != PhysAddr::ZERO
        && addr
            .checked_add(len)
            .is_some_and(|end| end.as_usize() <= super::MAPPED_LIMIT_BYTES)
}

/// Sum of `len` bytes at `addr`, mod 256 (0 for a valid ACPI structure).
///
/// # Safety
/// The range must be mapped and readable.
unsafe fn checksum(addr: PhysAddr, len: usize) -> u8 {
    // SAFETY: the caller vouches for the range.
    let bytes = unsafe { core::slice::from_raw_parts(addr.identity_virt().as_ptr::<u8>(), len) };
    bytes.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

/// Validates the table at `addr` and returns its length if its signature is
/// `sig` (or any signature when `sig` is `None`) and its checksum holds.
///
/// # Safety
/// `addr` must be an address from a validated RSDT/XSDT/RSDP; it is
/// range-checked against the identity map before any read.
unsafe fn table(addr: PhysAddr, sig: Option<&[u8; 4]>) -> Option<usize> {
    if !mapped(addr, SDT_HEADER_BYTES) {
        return None;
    }
    // SAFETY: the header is inside the identity map (checked above).
    let (signature, len) = unsafe { (read::<[u8; 4]>(addr), read::<u32>(addr + 4) as usize) };
    if sig.is_some_and(|s| *s != signature)
        || !(SDT_HEADER_BYTES..=MAX_TABLE_BYTES).contains(&len)
        || !mapped(addr, len)
    {
        return None;
    }
    // SAFETY: the whole table is inside the identity map (checked above).
    (unsafe { checksum(addr, len) } == 0).then_some(len)
}

/// Finds the MADT through the RSDP at `rsdp` and lists its usable CPUs, with
/// `boot_apic_id` (the caller's) first.
///
/// # Safety
/// `rsdp` must be the RSDP address the loader reported (or a copy of it); the
/// ACPI tables must not have been overwritten (call before the heap exists).
pub unsafe fn discover(rsdp: PhysAddr, boot_apic_id: u32) -> Option<MadtCpus> {
    // SAFETY: the caller's contract is `find_table`'s.
    let (addr, len) = unsafe { find_table(rsdp, b"APIC") }?;
    // SAFETY: `find_table` validated the table inside the identity map.
    Some(unsafe { parse_madt(addr, len, boot_apic_id) })
}

/// Finds the table with signature `sig` through the RSDP at `rsdp` (XSDT
/// preferred, else RSDT) and returns its validated `(address, length)`.
///
/// # Safety
/// As for [`discover`].
pub unsafe fn find_table(rsdp: PhysAddr, sig: &[u8; 4]) -> Option<(PhysAddr, usize)> {
    if !mapped(rsdp, 36) {
        return None;
    }
    // SAFETY: (whole block) every read is inside a range checked by `mapped`
    // or `table` first.
    unsafe {
        if read::<[u8; 8]>(rsdp) != *RSDP_SIGNATURE || checksum(rsdp, 20) != 0 {
            return None;
        }
        let revision: u8 = read(rsdp + 15);
        let rsdt = PhysAddr::new(read::<u32>(rsdp + 16) as usize);
        let xsdt = if revision >= 2 && checksum(rsdp, read::<u32>(rsdp + 20) as usize) == 0 {
            PhysAddr::try_from_u64(read::<u64>(rsdp + 24)).unwrap_or(PhysAddr::ZERO)
        } else {
            PhysAddr::ZERO
        };
        // Prefer the XSDT (64-bit entries), fall back to the RSDT (32-bit).
        let (root, entry_bytes) = match table(xsdt, Some(b"XSDT")) {
            Some(len) => ((xsdt, len), 8),
            None => ((rsdt, table(rsdt, Some(b"RSDT"))?), 4),
        };
        let (root_addr, root_len) = root;
        let entries = (root_len - SDT_HEADER_BYTES) / entry_bytes;
        (0..entries).find_map(|i| {
            let at = root_addr + SDT_HEADER_BYTES + i * entry_bytes;
            let addr = if entry_bytes == 8 {
                PhysAddr::try_from_u64(read::<u64>(at)).unwrap_or(PhysAddr::ZERO)
            } else {
                PhysAddr::new(read::<u32>(at) as usize)
            };
            table(addr, Some(sig)).map(|len| (addr, len))
        })
    }
}

/// The console UART the ACPI SPCR table describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spcr {
    /// A 16550-compatible UART in I/O port space: its base port and the
    /// divisor of 115200 for the baud rate the table asks (`None`: keep).
    IoPort16550 {
        /// Base I/O port.
        port: u16,
        /// Baud-rate divisor, when the table names a rate.
        divisor: Option<u16>,
    },
    /// Something this kernel does not drive (an MMIO UART, another type):
    /// the interface type, the address space id and the address.
    Unsupported(u8, u8, u64),
}

/// SPCR interface types (from the DBG2 table's list) that are 16550s.
const SPCR_16550_TYPES: [u8; 3] = [0x00, 0x01, 0x12];
/// Generic Address Structure address-space id of system I/O.
const GAS_SYSTEM_IO: u8 = 1;
/// Shortest SPCR read (through the baud-rate byte at offset 58).
const SPCR_MIN_BYTES: usize = 59;

/// The serial port control table (SPCR), when the firmware has one.
///
/// # Safety
/// As for [`discover`].
pub unsafe fn spcr(rsdp: PhysAddr) -> Option<Spcr> {
    // SAFETY: the caller's contract is `find_table`'s.
    let (addr, len) = unsafe { find_table(rsdp, b"SPCR") }?;
    if len < SPCR_MIN_BYTES {
        return None;
    }
    // SAFETY: (whole block) offsets below SPCR_MIN_BYTES of a validated table:
    // interface type at 36, the base address (GAS: space id, bit width, bit
    // offset, access size, u64 address) at 40, the baud rate at 58.
    unsafe {
        let kind: u8 = read(addr + 36);
        let space: u8 = read(addr + 40);
        let base: u64 = read(addr + 44);
        let divisor = match read::<u8>(addr + 58) {
            3 => Some(12), // 9600
            4 => Some(6),  // 19200
            6 => Some(2),  // 57600
            7 => Some(1),  // 115200
            _ => None,     // "as is"
        };
        match u16::try_from(base) {
            Ok(port) if space == GAS_SYSTEM_IO && SPCR_16550_TYPES.contains(&kind) && port != 0 => {
                Some(Spcr::IoPort16550 { port, divisor })
            }
            _ => Some(Spcr::Unsupported(kind, space, base)),
        }
    }
}

/// Collects the processor entries of a validated MADT.
///
/// # Safety
/// `addr..addr+len` must be a validated MADT inside the identity map.
pub(super) unsafe fn parse_madt(addr: PhysAddr, len: usize, boot_apic_id: u32) -> MadtCpus {
    let mut cpus = MadtCpus {
        apic_ids: [boot_apic_id; super::super::MAX_CPUS],
        len: 1,
        dropped: 0,
        hotplug: 0,
        io_apic: None,
        com1_gsi: (4, 0),
    };
    let mut at = addr + MADT_ENTRIES_OFFSET;
    let end = addr + len;
    while at + 2 <= end {
        // SAFETY: (whole block) `at + 2 <= end` and each entry is read only
        // within its own `entry_len`, which stays inside the table.
        let (kind, entry_len) = unsafe { (read::<u8>(at), usize::from(read::<u8>(at + 1))) };
        if entry_len < 2 || at + entry_len > end {
            break;
        }
        // SAFETY: the reads below are inside this entry (length checked).
        let cpu = unsafe {
            match kind {
                // { type, len, acpi_processor_uid: u8, apic_id: u8, flags: u32 }
                MADT_LOCAL_APIC if entry_len >= 8 => {
                    Some((u32::from(read::<u8>(at + 3)), read::<u32>(at + 4)))
                }
                // { type, len, reserved: u16, x2apic_id: u32, flags: u32, uid: u32 }
                MADT_LOCAL_X2APIC if entry_len >= 16 => {
                    Some((read::<u32>(at + 4), read::<u32>(at + 8)))
                }
                // { type, len, id: u8, reserved: u8, address: u32, gsi_base: u32 }
                MADT_IO_APIC if entry_len >= 12 => {
                    if cpus.io_apic.is_none() {
                        let base = PhysAddr::new(read::<u32>(at + 4) as usize);
                        cpus.io_apic = Some((base, read::<u32>(at + 8)));
                    }
                    None
                }
                // { type, len, bus: u8, source irq: u8, gsi: u32, flags: u16 }
                MADT_INTERRUPT_OVERRIDE if entry_len >= 10 => {
                    if read::<u8>(at + 2) == 0 && read::<u8>(at + 3) == 4 {
                        cpus.com1_gsi = (read::<u32>(at + 4), read::<u16>(at + 8));
                    }
                    None
                }
                _ => None,
            }
        };
        if let Some((id, flags)) = cpu {
            let usable = flags & MADT_ENABLED != 0;
            let known = cpus.apic_ids[..cpus.len].contains(&id);
            if !usable && flags & MADT_ONLINE_CAPABLE != 0 && !known {
                cpus.hotplug += 1;
            }
            if usable && !known {
                if cpus.len < cpus.apic_ids.len() {
                    cpus.apic_ids[cpus.len] = id;
                    cpus.len += 1;
                } else {
                    cpus.dropped += 1;
                }
            }
        }
        at += entry_len;
    }
    cpus
}
