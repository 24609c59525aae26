//! The serial console as the backend of the `log` crate.
use core::fmt::{self, Write};

use spin::Mutex;

use crate::arch;

static LOCK: Mutex<()> = Mutex::new(());

struct Serial;

impl Write for Serial {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for chunk in s.as_bytes().split_inclusive(|&b| b == b'\n') {
            match chunk.split_last() {
                Some((b'\n', rest)) => {
                    arch::console_write(rest);
                    arch::console_write(b"\r\n");
                }
                _ => arch::console_write(chunk),
            }
        }
        Ok(())
    }
}

/// Prints formatted text to the console, serialised against other CPUs.
pub fn print(args: fmt::Arguments) {
    let flags = arch::irq_save();
    {
        let _g = LOCK.lock();
        let _ = Serial.write_fmt(args);
    }
    arch::irq_restore(flags);
}

/// Prints without taking the console lock (panic and fault paths).
pub fn emergency_write(args: fmt::Arguments) {
    let _ = Serial.write_fmt(args);
}

/// `print!` to the serial console.
#[macro_export]
macro_rules! kprint {
    ($($arg:tt)*) => { $crate::console::print(format_args!($($arg)*)) };
}

/// `println!` to the serial console.
#[macro_export]
macro_rules! kprintln {
    () => { $crate::kprint!("\n") };
    ($($arg:tt)*) => { $crate::console::print(format_args!("{}\n", format_args!($($arg)*))) };
}

struct Logger;

impl log::Log for Logger {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            let ns = arch::now_ns();
            print(format_args!(
                "[{:5}.{:06}] {:5} {}\n",
                ns / 1_000_000_000,
                (ns / 1000) % 1_000_000,
                record.level(),
                record.args()
            ));
        }
    }
    fn flush(&self) {}
}

static LOGGER: Logger = Logger;

/// Installs the console as the `log` backend.
pub fn init() {
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(log::LevelFilter::Info);
}
