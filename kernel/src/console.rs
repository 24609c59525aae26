//! The serial console: the backend of the `log` crate, and the input side
//! (a receive ring filled by the UART's interrupt) for the shell. Output
//! also goes to the framebuffer console (`fbcon`) when the loader set one up.
//!
//! While a shell command runs, informational log lines from elsewhere (the
//! x86 clock's refinement from CPU 0's idle loop, say) are held back and
//! printed when the command ends ([`hold_log`], [`release_log`]), so they do
//! not land in the middle of the command's output. Warnings and errors are
//! never held.
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use ::sched::SpinMutex as Mutex;

use crate::arch;

static LOCK: Mutex<()> = Mutex::named("console", ());

/// The output side: the serial port, and the framebuffer console if any
/// (which the fault paths only try to lock: `wait` false).
struct Serial {
    wait: bool,
}

impl Write for Serial {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        crate::fbcon::write_str(s, self.wait);
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

/// The CPU (index + 1) inside [`print`] with [`LOCK`] held; 0: none. Lets a
/// report on that CPU (a fault while printing) skip waiting for the lock.
static PRINTER: AtomicUsize = AtomicUsize::new(0);

/// Prints formatted text to the console, serialised against other CPUs.
pub fn print(args: fmt::Arguments) {
    let flags = arch::IrqGuard::save();
    {
        let _g = LOCK.lock();
        // Interrupts are off: this CPU stays this CPU while it holds the lock.
        PRINTER.store(arch::cpu_id().index() + 1, Ordering::Relaxed);
        let _ = Serial { wait: true }.write_fmt(args);
        PRINTER.store(0, Ordering::Relaxed);
    }
    drop(flags);
}

/// The CPU (index + 1) that took the console for a panic or fault report
/// ([`claim_for_report`]); 0: none.
static REPORT_OWNER: AtomicUsize = AtomicUsize::new(0);
/// Longest a report waits for a line another CPU is printing: a line takes
/// microseconds in QEMU and about 10 ms at 115200 baud, but the host may
/// keep the printing CPU's vCPU off its core for seconds while it holds the
/// lock (5 s, as for every wait on another CPU: "Waits on other CPUs" in
/// docs/design/kernel.md). The wait is this long only when the holder is
/// wedged; a report does not wait when this CPU holds the lock (it faulted
/// inside [`print`]) or another CPU's report has it.
const REPORT_CONSOLE_WAIT_NS: u64 = 5_000_000_000;

/// Polls of the lock, with the clock standing still, after which
/// [`claim_for_report`] stops waiting (a clock that does not run).
const REPORT_CONSOLE_STILL_POLLS: u32 = 1_000_000;

/// For panic and fault reports, which end the run: waits (at most
/// [`REPORT_CONSOLE_WAIT_NS`]) for the console lock, so that a line another
/// CPU is printing ends first, then keeps it for good, so that no ordinary
/// output (a log line from another CPU) lands inside the report. The report
/// itself writes without the lock ([`emergency_write`], the arch's raw
/// writer); reports from several CPUs are serialised by the arch layer's
/// report lock. Without the lock (this CPU faulted inside `print`, another
/// CPU's report has it, or the holder did not let go in time) the report is
/// written all the same, at once in the first two cases.
/// Other CPUs that print afterwards spin until the run ends.
pub fn claim_for_report() {
    let me = arch::cpu_id().index() + 1;
    if REPORT_OWNER.load(Ordering::Relaxed) == me {
        return;
    }
    let t0 = arch::now_ns();
    let (mut last, mut still) = (t0, 0u32);
    loop {
        if let Some(g) = LOCK.try_lock() {
            core::mem::forget(g);
            REPORT_OWNER.store(me, Ordering::Relaxed);
            write_held_for_report();
            return;
        }
        if PRINTER.load(Ordering::Relaxed) == me || REPORT_OWNER.load(Ordering::Relaxed) != 0 {
            return;
        }
        // The clock bounds the wait; the count only if the clock stands still.
        let now = arch::now_ns();
        if now.saturating_sub(t0) >= REPORT_CONSOLE_WAIT_NS {
            return;
        }
        if now == last {
            still += 1;
            if still >= REPORT_CONSOLE_STILL_POLLS {
                return;
            }
        } else {
            (last, still) = (now, 0);
        }
        arch::cpu_relax();
    }
}

/// A report's first words: the log lines a running shell command was
/// holding (they may say what led to it). Only tries the lock: the CPU that
/// holds it may be the one that faulted.
fn write_held_for_report() {
    let Some(mut g) = HELD.try_lock() else {
        return;
    };
    let mut chunk = [0u8; 256];
    loop {
        let n = g.take(&mut chunk);
        if n == 0 {
            break;
        }
        let _ = Serial { wait: false }.write_str(core::str::from_utf8(&chunk[..n]).unwrap_or(""));
    }
    g.set_holding(false);
    HOLDING.store(false, Ordering::Relaxed);
}

/// Prints without taking the console lock (panic and fault paths).
pub fn emergency_write(args: fmt::Arguments) {
    let _ = Serial { wait: false }.write_fmt(args);
}

/// Where the lock validator's reports go: the raw writer (a report may come
/// from inside `print`, with the console lock held), one line per call.
#[cfg(feature = "lockdep")]
pub fn lockdep_sink(args: fmt::Arguments) {
    emergency_write(format_args!("{args}\n"));
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
            let line = format_args!(
                "[{:5}.{:06}] {:5} {}\n",
                ns / 1_000_000_000,
                (ns / 1000) % 1_000_000,
                record.level(),
                record.args()
            );
            if record.level() >= log::Level::Info && held(line) {
                return;
            }
            print(line);
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

// ---- log lines held while a shell command runs ----

/// Bytes of log lines a command's run can hold; a line that does not fit is
/// printed at once, as if nothing were held.
pub const HELD_LOG_BYTES: usize = 4096;
/// The longest log line that is held; a longer one is printed at once.
const HELD_LINE_BYTES: usize = 512;

/// Log lines kept back while a shell command prints its output, in order.
/// Fixed size: holding never allocates.
pub struct HeldLog {
    buf: [u8; HELD_LOG_BYTES],
    len: usize,
    on: bool,
}

impl Default for HeldLog {
    fn default() -> Self {
        Self::new()
    }
}

impl HeldLog {
    /// Empty, not holding.
    pub const fn new() -> Self {
        Self {
            buf: [0; HELD_LOG_BYTES],
            len: 0,
            on: false,
        }
    }

    /// Starts or stops holding (what is held stays until [`Self::take`]).
    pub fn set_holding(&mut self, on: bool) {
        self.on = on;
    }

    /// Keeps `line` (a whole line) if holding and it fits; false otherwise,
    /// and then nothing of it is kept.
    pub fn push(&mut self, line: &[u8]) -> bool {
        if !self.on || line.len() > HELD_LOG_BYTES - self.len {
            return false;
        }
        self.buf[self.len..self.len + line.len()].copy_from_slice(line);
        self.len += line.len();
        true
    }

    /// Moves the held bytes into `out` (at most `out.len()`, whole lines
    /// only unless one line is longer than `out`) and returns how many.
    pub fn take(&mut self, out: &mut [u8]) -> usize {
        let mut n = self.len.min(out.len());
        if n < self.len {
            if let Some(end) = self.buf[..n].iter().rposition(|&b| b == b'\n') {
                n = end + 1;
            }
        }
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf.copy_within(n..self.len, 0);
        self.len -= n;
        n
    }
}

static HELD: Mutex<HeldLog> = Mutex::named("console_held", HeldLog::new());
/// Whether [`HELD`] is holding: a lock-free first check for every log line.
static HOLDING: AtomicBool = AtomicBool::new(false);

/// One formatted line on the stack; `full` when it did not fit.
struct LineBuf {
    buf: [u8; HELD_LINE_BYTES],
    len: usize,
    full: bool,
}

impl Write for LineBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let b = s.as_bytes();
        if b.len() > HELD_LINE_BYTES - self.len {
            self.full = true;
            return Err(fmt::Error);
        }
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
        Ok(())
    }
}

/// Keeps `line` back if a shell command is running and it fits; false: the
/// caller prints it. Formats on the stack first, outside the lock.
fn held(line: fmt::Arguments) -> bool {
    if !HOLDING.load(Ordering::Relaxed) {
        return false;
    }
    let mut l = LineBuf {
        buf: [0; HELD_LINE_BYTES],
        len: 0,
        full: false,
    };
    if l.write_fmt(line).is_err() || l.full {
        return false;
    }
    let flags = arch::IrqGuard::save();
    // `push` checks holding again under the lock: a release that started
    // after the check above has printed everything and stopped holding.
    let kept = HELD.lock().push(&l.buf[..l.len]);
    drop(flags);
    kept
}

/// The shell, before it runs a command: informational log lines are held
/// from now until [`release_log`].
pub fn hold_log() {
    let flags = arch::IrqGuard::save();
    HELD.lock().set_holding(true);
    HOLDING.store(true, Ordering::Relaxed);
    drop(flags);
}

/// The shell, when a command has ended: prints the held log lines, in
/// order, and stops holding. Lines logged while these print are held too and
/// printed after them, so the order is kept.
pub fn release_log() {
    let mut chunk = [0u8; 1024];
    loop {
        let n = {
            let flags = arch::IrqGuard::save();
            let mut g = HELD.lock();
            let n = g.take(&mut chunk);
            if n == 0 {
                g.set_holding(false);
                HOLDING.store(false, Ordering::Relaxed);
            }
            drop(g);
            drop(flags);
            n
        };
        if n == 0 {
            return;
        }
        print(format_args!(
            "{}",
            core::str::from_utf8(&chunk[..n]).unwrap_or("(log lines not UTF-8)\n")
        ));
    }
}

// ---- input ----
//
// With a receive interrupt (COM1 through the I/O APIC, the PL011 through the
// GIC) the interrupt handler moves every byte the UART holds into `RX`, a
// ring that readers drain: a paste is taken off the UART as fast as it
// arrives, and a reader with nothing to read sleeps on `RX_WAIT` instead of
// polling. When the ring is full the handler masks the UART's receive
// interrupt and leaves the rest in the UART (whose own flow control, or
// QEMU's, holds it back); the reader that makes room unmasks it. Nothing is
// ever dropped here. Without an interrupt (none described by the firmware)
// readers poll the UART directly.

/// Bytes the receive ring holds.
pub const RX_RING_BYTES: usize = 4096;

/// The receive ring and its flow control, apart from the hardware.
pub struct Rx {
    buf: [u8; RX_RING_BYTES],
    /// Index of the oldest byte.
    head: usize,
    /// Bytes held.
    len: usize,
    /// The UART's receive interrupt is masked because the ring was full.
    masked: bool,
}

impl Rx {
    /// An empty ring.
    pub const fn new() -> Self {
        Rx {
            buf: [0; RX_RING_BYTES],
            head: 0,
            len: 0,
            masked: false,
        }
    }

    /// Takes bytes from `source` until it runs dry or the ring is full.
    /// Returns how many it took and whether the source must now be masked
    /// (the ring filled up with the source maybe holding more).
    pub fn fill(&mut self, mut source: impl FnMut() -> Option<u8>) -> (usize, bool) {
        let mut moved = 0;
        while self.len < RX_RING_BYTES {
            let Some(b) = source() else { break };
            self.buf[(self.head + self.len) % RX_RING_BYTES] = b;
            self.len += 1;
            moved += 1;
        }
        let mask = self.len == RX_RING_BYTES && !self.masked;
        self.masked |= mask;
        (moved, mask)
    }

    /// The oldest byte, and whether the source may be unmasked again (this
    /// read made room after [`Rx::fill`] masked it).
    pub fn pop(&mut self) -> (Option<u8>, bool) {
        if self.len == 0 {
            return (None, false);
        }
        let b = self.buf[self.head];
        self.head = (self.head + 1) % RX_RING_BYTES;
        self.len -= 1;
        let unmask = core::mem::take(&mut self.masked);
        (Some(b), unmask)
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }
}

static RX: crate::sync::SpinLock<Rx> = crate::sync::SpinLock::named("console_rx", Rx::new());
static RX_WAIT: crate::sync::WaitQueue = crate::sync::WaitQueue::new();
/// Receive is interrupt-driven (set once, at start-up).
static RX_IRQ: AtomicBool = AtomicBool::new(false);
/// Receive interrupts taken and bytes they moved (`stat`).
pub static RX_INTERRUPTS: AtomicU64 = AtomicU64::new(0);
/// Times the ring was full and the UART had to hold input back.
pub static RX_HELD_BACK: AtomicU64 = AtomicU64::new(0);

/// Turns on the UART's receive interrupt, routed to this CPU; from then on
/// input goes through the ring. Returns whether it did.
pub fn rx_start() -> bool {
    let on = arch::console_rx_irq_start();
    RX_IRQ.store(on, Ordering::Release);
    on
}

/// Input is interrupt-driven.
pub fn rx_irq_active() -> bool {
    RX_IRQ.load(Ordering::Acquire)
}

/// The receive interrupt (`hooks::console_rx`, interrupts off): moves what
/// the UART holds into the ring and wakes readers.
pub fn rx_interrupt() {
    RX_INTERRUPTS.fetch_add(1, Ordering::Relaxed);
    let mut dump = false;
    let moved = {
        // The mask is written under the ring's lock, so it cannot overtake
        // a reader's unmask.
        let mut rx = RX.lock();
        // Ctrl-\ is taken here, not queued: a thread dump (Linux's sysrq-t)
        // that works while the shell is stuck behind a hung workload.
        let (moved, mask) = rx.fill(|| loop {
            match arch::console_read() {
                Some(SYSRQ_DUMP) => dump = true,
                other => return other,
            }
        });
        if mask {
            RX_HELD_BACK.fetch_add(1, Ordering::Relaxed);
            arch::console_rx_irq_mask(true);
        }
        moved
    };
    if moved > 0 {
        RX_WAIT.wake_all();
    }
    if dump {
        crate::task::dump_threads();
    }
}

/// The byte that asks for a thread dump from the receive interrupt: Ctrl-\.
pub const SYSRQ_DUMP: u8 = 0x1c;

/// One input byte, or `None` when none is waiting (never blocks).
pub fn read_byte() -> Option<u8> {
    if !rx_irq_active() {
        return arch::console_read();
    }
    let mut rx = RX.lock();
    let (b, unmask) = rx.pop();
    if unmask {
        // Room again: let the UART interrupt (it still holds input).
        arch::console_rx_irq_mask(false);
    }
    b
}

/// Sleeps until input is waiting or `also()` holds (checked whenever
/// [`wake_readers`] is called); interrupt-driven input only, returns at
/// once otherwise. The shell waits so for a key or a finished background job.
pub fn wait_input_or(also: impl Fn() -> bool) {
    if rx_irq_active() {
        RX_WAIT.wait_event(|| also() || RX.lock().len() > 0);
    }
}

/// Sleeps once until input is waiting or the thread is woken otherwise
/// ([`wake_readers`], or directly: a job's last thread wakes its waiter),
/// unless `done()` holds (checked with the thread queued and marked
/// sleeping, so the wakeup that makes it true is not lost); interrupt-driven
/// input only (returns false at once otherwise, so the caller polls). A
/// foreground workload's wait so sleeps through its run and still sees a
/// Ctrl-C as it arrives, where a poll would wake it every few ms beside the
/// workload's own threads.
pub fn wait_input_unless(done: &dyn Fn() -> bool) -> bool {
    if !rx_irq_active() {
        return false;
    }
    RX_WAIT.prepare_to_wait();
    if RX.lock().len() == 0 && !done() {
        crate::task::sleep_prepared_until_ns(u64::MAX);
    }
    RX_WAIT.finish_wait();
    true
}

/// Wakes the readers sleeping in [`wait_input_or`] to check their condition.
pub fn wake_readers() {
    RX_WAIT.wake_all();
}
