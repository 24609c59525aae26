//! 16550 UART on COM1 (I/O port 0x3f8), polled; or on the I/O port the
//! ACPI SPCR table names ([`use_port`], from `early_init`), for PCs whose
//! console UART is not COM1. SPCR UARTs in MMIO space are not driven (the
//! boot log says so and COM1 stays).
//!
//! Transmit is polled on the line-status register: when THRE says the FIFO is
//! empty, up to 16 bytes go out at once, which halves the number of port
//! accesses (each one is a VM exit under KVM). Receive: [`read_byte`] never
//! blocks; the console drains it from COM1's receive interrupt
//! ([`rx_irq_enable`], routed by `ioapic`) into its ring, or polls it where
//! there is no I/O APIC. Nothing here takes a lock, so the fault path may
//! write to the console from any context.
//!
//! # No input is ever dropped here
//! Turning the FIFOs on (FCR bit 0 going from 0 to 1) clears both of them, on a
//! real 16550 and in QEMU (whose `serial_ioport_write` forces the receive and
//! transmit resets whenever the enable bit changes). Whatever sits in the
//! receiver at that moment is lost, and no sequence of register accesses
//! closes the window: reading the byte that is there lets the next one in
//! (QEMU hands a pipe over one byte at a time while the FIFO is off), and it
//! can land between that read and the FCR write. That is how the second byte
//! of every piped script used to disappear. So [`init`] never toggles the
//! enable bit and never asks for a receive reset:
//! - FIFOs already on (GRUB, most firmware): they stay on; the trigger level
//!   is set without a reset, and 16 bytes go out per THRE;
//! - FIFOs off (QEMU's PVH boot, where nothing ran before us): the UART stays
//!   in 16450 mode, one byte of receive buffer and one byte per THRE. Under
//!   QEMU nothing is lost either way (it holds input back until the receiver
//!   has room); on hardware the shell drains the receiver in bursts (its
//!   polling spins while input is flowing).
use core::sync::atomic::{AtomicU16, AtomicUsize, Ordering};

use x86_64::instructions::port::Port;

/// COM1's base I/O port.
pub const COM1_PORT: u16 = 0x3f8;
/// The UART's base I/O port: COM1 until [`use_port`] names another.
static BASE: AtomicU16 = AtomicU16::new(COM1_PORT);
/// Divisor of 115200 for the default rate.
const DEFAULT_DIVISOR: u16 = 1;
/// Register offsets from the base port.
const REG_DATA: u16 = 0; // RBR (read) / THR (write); divisor low with DLAB
const REG_IER: u16 = 1; // interrupt enable; divisor high with DLAB
const REG_FCR: u16 = 2; // FIFO control (write) / IIR (read)
const REG_LCR: u16 = 3; // line control
const REG_MCR: u16 = 4; // modem control
const REG_LSR: u16 = 5; // line status
/// LSR bits.
const LSR_DATA_READY: u8 = 0x01;
const LSR_THR_EMPTY: u8 = 0x20;
/// Give up waiting for the transmitter after this many TSC cycles (about 10 ms
/// at 1 GHz and above), so a missing or stuck UART cannot hang the kernel.
const TX_TIMEOUT_CYCLES: u64 = 10_000_000;

/// Bytes that may be written after THRE is seen: 16 with a working FIFO, else 1.
static TX_BURST_BYTES: AtomicUsize = AtomicUsize::new(1);

fn read_reg(reg: u16) -> u8 {
    // SAFETY: reading a COM1 register has no side effect on memory.
    unsafe { Port::<u8>::new(BASE.load(Ordering::Relaxed) + reg).read() }
}

fn write_reg(reg: u16, value: u8) {
    // SAFETY: COM1 registers control only the UART.
    unsafe { Port::<u8>::new(BASE.load(Ordering::Relaxed) + reg).write(value) }
}

/// Programs COM1 for 115200 baud, 8N1, interrupts off; keeps the FIFOs as
/// they were (see the module docs: enabling them would drop input).
pub fn init() {
    program(DEFAULT_DIVISOR);
}

/// Moves the console to the 16550 at I/O port `port` (from the ACPI SPCR)
/// and programs it as [`init`] does, at 115200 / `divisor` baud. Boot CPU,
/// before other CPUs run.
pub fn use_port(port: u16, divisor: Option<u16>) {
    BASE.store(port, Ordering::Relaxed);
    program(divisor.unwrap_or(DEFAULT_DIVISOR));
}

/// The UART's base I/O port.
pub fn port() -> u16 {
    BASE.load(Ordering::Relaxed)
}

fn program(divisor: u16) {
    // IIR bits 7:6 read 0b11 when the 16-byte FIFOs are enabled.
    let fifo_on = read_reg(REG_FCR) & 0xC0 == 0xC0;
    write_reg(REG_IER, 0x00);
    write_reg(REG_LCR, 0x80); // DLAB: the next two writes set the divisor
    let [lo, hi] = divisor.to_le_bytes();
    write_reg(REG_DATA, lo); // 115200 / divisor
    write_reg(REG_IER, hi);
    write_reg(REG_LCR, 0x03); // 8 data bits, no parity, 1 stop bit
    if fifo_on {
        // Enable bit unchanged and no reset bits: only the RX trigger level
        // (14 bytes) changes, so nothing queued is cleared.
        write_reg(REG_FCR, 0xC1);
    }
    write_reg(REG_MCR, 0x0B); // DTR | RTS | OUT2
    TX_BURST_BYTES.store(if fifo_on { 16 } else { 1 }, Ordering::Relaxed);
}

/// Waits (bounded by time) until the transmitter can take a burst.
fn wait_tx_ready() {
    let start = super::time::rdtsc();
    while read_reg(REG_LSR) & LSR_THR_EMPTY == 0 {
        if super::time::rdtsc().wrapping_sub(start) > TX_TIMEOUT_CYCLES {
            return;
        }
    }
}

/// Writes `bytes` as they are (no newline translation). Takes no lock.
pub fn write_bytes(bytes: &[u8]) {
    let burst = TX_BURST_BYTES.load(Ordering::Relaxed);
    for chunk in bytes.chunks(burst) {
        wait_tx_ready();
        for &b in chunk {
            write_reg(REG_DATA, b);
        }
    }
}

/// Turns the "received data available" interrupt on or off (IER bit 0). The
/// UART raises IRQ 4 while a byte waits (OUT2, set by [`init`], gates it onto
/// the bus on PCs).
pub fn rx_irq_enable(on: bool) {
    write_reg(REG_IER, u8::from(on));
}

/// Returns one received byte, or `None` when nothing is waiting.
pub fn read_byte() -> Option<u8> {
    if read_reg(REG_LSR) & LSR_DATA_READY != 0 {
        Some(read_reg(REG_DATA))
    } else {
        None
    }
}

/// A `core::fmt::Write` sink that writes straight to COM1 with `\n` -> `\r\n`,
/// without locks (for early boot messages and fault reports).
pub struct RawWriter;

impl core::fmt::Write for RawWriter {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for (i, line) in s.split('\n').enumerate() {
            if i > 0 {
                write_bytes(b"\r\n");
            }
            write_bytes(line.as_bytes());
        }
        Ok(())
    }
}
