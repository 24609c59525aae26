//! The I/O APIC, for the one device interrupt the kernel takes: COM1's
//! receive interrupt (ISA IRQ 4).
//!
//! The MADT names the I/O APIC's MMIO address and first GSI, and may override
//! where ISA IRQ 4 lands and its polarity and trigger mode (`acpi`). One
//! redirection-table entry is programmed: fixed delivery of [`COM1_VECTOR`] to
//! the boot CPU, unmasked. Every other entry keeps its reset state (masked).
//! Without an I/O APIC in the MADT the console keeps polling.

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use crate::addr::PhysAddr;

/// Vector of COM1's receive interrupt.
pub const COM1_VECTOR: u8 = 0x24;

/// I/O register select and window, as offsets from the MMIO base.
const IOREGSEL: usize = 0x00;
const IOWIN: usize = 0x10;
/// Register index of redirection-table entry `n` (low dword; high is +1).
const fn redtbl(n: u32) -> u32 {
    0x10 + 2 * n
}
/// Redirection entry bits.
const RTE_ACTIVE_LOW: u32 = 1 << 13;
const RTE_LEVEL: u32 = 1 << 15;
const RTE_MASKED: u32 = 1 << 16;

static BASE: AtomicUsize = AtomicUsize::new(0);
static GSI_BASE: AtomicU32 = AtomicU32::new(0);
/// COM1's GSI (4 unless the MADT overrides it) and its MPS INTI flags.
static COM1: AtomicU32 = AtomicU32::new(4);
static COM1_FLAGS: AtomicU32 = AtomicU32::new(0);

/// Records what the MADT says (from `smp::init`).
pub fn set(addr: PhysAddr, gsi_base: u32, (com1_gsi, com1_flags): (u32, u16)) {
    BASE.store(addr.as_usize(), Ordering::Relaxed);
    GSI_BASE.store(gsi_base, Ordering::Relaxed);
    COM1.store(com1_gsi, Ordering::Relaxed);
    COM1_FLAGS.store(u32::from(com1_flags), Ordering::Relaxed);
}

fn write(base: PhysAddr, reg: u32, value: u32) {
    let base = base.identity_virt();
    // SAFETY: `base` is the I/O APIC the MADT describes, inside the identity
    // map below 4 GiB; IOREGSEL then IOWIN is its register protocol, and the
    // only caller runs once on the boot CPU with interrupts off.
    unsafe {
        core::ptr::write_volatile((base + IOREGSEL).as_mut_ptr::<u32>(), reg);
        core::ptr::write_volatile((base + IOWIN).as_mut_ptr::<u32>(), value);
    }
}

fn read(base: PhysAddr, reg: u32) -> u32 {
    let base = base.identity_virt();
    // SAFETY: as in `write`.
    unsafe {
        core::ptr::write_volatile((base + IOREGSEL).as_mut_ptr::<u32>(), reg);
        core::ptr::read_volatile((base + IOWIN).as_ptr::<u32>())
    }
}

/// Routes COM1's interrupt to `dest_apic_id` on [`COM1_VECTOR`]; false when
/// the MADT named no I/O APIC or it does not serve that GSI.
pub fn route_com1(dest_apic_id: u32) -> bool {
    let base = PhysAddr::new(BASE.load(Ordering::Relaxed));
    if base == PhysAddr::ZERO || dest_apic_id > 0xff {
        return false;
    }
    let gsi = COM1.load(Ordering::Relaxed);
    let Some(pin) = gsi.checked_sub(GSI_BASE.load(Ordering::Relaxed)) else {
        return false;
    };
    // IOAPICVER bits 23:16: the highest redirection entry.
    let max_entry = (read(base, 0x01) >> 16) & 0xff;
    if pin > max_entry {
        return false;
    }
    let flags = COM1_FLAGS.load(Ordering::Relaxed);
    let mut low = u32::from(COM1_VECTOR);
    // MPS INTI polarity 0b11 = active low; trigger 0b11 = level. 0 (bus
    // default) is ISA's edge / active high.
    if flags & 0b11 == 0b11 {
        low |= RTE_ACTIVE_LOW;
    }
    if (flags >> 2) & 0b11 == 0b11 {
        low |= RTE_LEVEL;
    }
    write(base, redtbl(pin), RTE_MASKED);
    write(base, redtbl(pin) + 1, dest_apic_id << 24);
    write(base, redtbl(pin), low);
    true
}
