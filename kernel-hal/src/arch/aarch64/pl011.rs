//! ARM PL011 UART as the console.
//!
//! The base address comes from the device tree. Line settings (baud rate, 8N1,
//! FIFO on or off) are left as the firmware or QEMU set them (changing FEN
//! flushes the FIFO, which would drop input that already arrived); we only make
//! sure the UART, TX and RX are enabled. Receive is drained by the console from
//! the UART's receive interrupt ([`rx_irq_enable`], routed through the GIC), or
//! polled when the device tree names no interrupt. Before [`init`] output is
//! dropped.
//!
//! No locks here: [`console_write`] is also the panic and fault path. Callers that
//! want whole lines unbroken serialise above this (`crate::console`).

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::addr::PhysAddr;

/// Data register.
const DR: usize = 0x00;
/// Flag register.
const FR: usize = 0x18;
/// Interrupt mask set/clear register.
const IMSC: usize = 0x38;
/// IMSC: receive and receive-timeout interrupts.
const RX_INTERRUPTS: u32 = (1 << 4) | (1 << 6);
/// Control register.
const CR: usize = 0x30;

/// FR: receive FIFO empty.
const FR_RXFE: u32 = 1 << 4;
/// FR: transmit FIFO full.
const FR_TXFF: u32 = 1 << 5;
/// CR: UART enable, transmit enable, receive enable.
const CR_UARTEN_TXE_RXE: u32 = (1 << 0) | (1 << 8) | (1 << 9);

/// MMIO base of the console UART; 0 until [`init`].
static BASE: AtomicUsize = AtomicUsize::new(0);

/// The console UART's base, once [`init`] ran.
fn base() -> Option<PhysAddr> {
    match BASE.load(Ordering::Acquire) {
        0 => None,
        b => Some(PhysAddr::new(b)),
    }
}

fn read(base: PhysAddr, reg: usize) -> u32 {
    // SAFETY: `base` is the PL011 from the device tree (identity map: physical = virtual, Device memory);
    // `reg` is one of its 32-bit registers.
    unsafe { core::ptr::read_volatile((base + reg).identity_virt().as_ptr::<u32>()) }
}

fn write(base: PhysAddr, reg: usize, value: u32) {
    // SAFETY: as in `read`.
    unsafe { core::ptr::write_volatile((base + reg).identity_virt().as_mut_ptr::<u32>(), value) }
}

/// Starts using the PL011 at `base` as the console.
pub fn init(base: PhysAddr) {
    write(base, IMSC, 0);
    let cr = read(base, CR);
    if cr & CR_UARTEN_TXE_RXE != CR_UARTEN_TXE_RXE {
        write(base, CR, cr | CR_UARTEN_TXE_RXE);
    }
    BASE.store(base.as_usize(), Ordering::Release);
}

/// Writes `bytes` to the console, waiting for FIFO space (no locks, any context).
pub fn console_write(bytes: &[u8]) {
    let Some(base) = base() else {
        return;
    };
    for &b in bytes {
        while read(base, FR) & FR_TXFF != 0 {
            core::hint::spin_loop();
        }
        write(base, DR, u32::from(b));
    }
}

/// Unmasks (true) or masks the receive interrupts; bytes wait in the UART
/// while they are masked. The raw receive status follows the FIFO level (set
/// when data reaches the trigger level, cleared when reads take it below), so
/// unmasking with data waiting raises the interrupt again. It is deliberately
/// not cleared through `ICR` here: QEMU's model would then not raise it again
/// for data that is already waiting (it raises it only as data arrives), and
/// with the FIFO off nothing more arrives until that byte is read.
pub fn rx_irq_enable(on: bool) {
    if let Some(base) = base() {
        write(base, IMSC, if on { RX_INTERRUPTS } else { 0 });
    }
}

/// One received byte, or `None` when the receive FIFO is empty (never blocks).
pub fn console_read() -> Option<u8> {
    let base = base()?;
    if read(base, FR) & FR_RXFE != 0 {
        return None;
    }
    Some((read(base, DR) & 0xff) as u8)
}
