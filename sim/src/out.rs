//! Standard output and standard error for the host tools (`sim`, `abtool`,
//! `bench`, `fuzz`): [`outln!`](macro@crate::outln) and
//! [`out!`](macro@crate::out) print as `println!` and `print!` do, and
//! [`errln!`](macro@crate::errln) as `eprintln!` does, byte for byte, but a
//! failed write does not panic.
//!
//! `println!` and `eprintln!` panic when the write fails, and Rust ignores
//! SIGPIPE, so `sim run ... | head -2` ended in "failed printing to stdout:
//! Broken pipe" and, under `panic = "abort"`, a SIGABRT; so did any message
//! to a broken stderr (`sim study ... 2>&1 | head -1`, `2>/dev/full`).
//!
//! Stdout: a closed pipe (`EPIPE`) ends the process quietly with status
//! 141, the status a shell reports for a C filter killed by SIGPIPE
//! (128 + 13): the reader stopped early, which is no error to report, but
//! the tool did not finish either, so a `set -o pipefail` script does not
//! read a truncated `abtool --baseline-check` as its verdict. Any other
//! write error (`ENOSPC` on `/dev/full`, `EIO`) is one line on stderr and
//! status 1.
//!
//! Stderr: a closed pipe ends the process quietly with status 141 too, for
//! the same reason and as SIGPIPE would end a C tool. Any other write error
//! is ignored: stderr carries only diagnostics (usage errors, progress,
//! "wrote FILE"), never a result, and there is nowhere left to report its
//! failure, while the tool's status already says whether it failed (a bad
//! argument still exits 2). Exiting instead would end a long `sim study`
//! whose stdout and files are fine because a progress line did not fit.
//!
//! `abtool` uses this module through `sim`; `bench` and `fuzz` include this
//! file as their own `mod out` at the crate root (`#[path]`), so the macros'
//! `$crate::out` resolves in each crate without a new dependency.

use std::fmt;
use std::io::{self, ErrorKind, Write};
use std::process;

/// Exit status on a closed output pipe: 128 + SIGPIPE, as a shell reports
/// for a filter the signal killed.
pub const EXIT_BROKEN_PIPE: i32 = 128 + 13;

/// Writes `args` to standard output as `print!` does; on a write error
/// ends the process (see the module docs) instead of panicking.
pub fn write_stdout(args: fmt::Arguments<'_>) {
    let result = io::stdout().lock().write_fmt(args);
    if let Err(e) = result {
        exit_on_write_error(&e);
    }
}

/// Writes `args` to standard error as `eprint!` does; a closed pipe ends
/// the process with status 141, any other write error is ignored (see the
/// module docs). Never panics.
pub fn write_stderr(args: fmt::Arguments<'_>) {
    let result = io::stderr().lock().write_fmt(args);
    if let Err(e) = result {
        if e.kind() == ErrorKind::BrokenPipe {
            process::exit(EXIT_BROKEN_PIPE);
        }
    }
}

/// Status 141 and no message on `BrokenPipe`; otherwise one line on stderr
/// (itself unchecked: nowhere is left to report to) and status 1.
fn exit_on_write_error(e: &io::Error) -> ! {
    if e.kind() == ErrorKind::BrokenPipe {
        process::exit(EXIT_BROKEN_PIPE);
    }
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let name = std::path::Path::new(&argv0).file_name().unwrap_or_default();
    let _ = writeln!(
        io::stderr(),
        "error: {}: writing to stdout: {e}",
        name.to_string_lossy()
    );
    process::exit(1);
}

/// `println!` whose write error ends the process instead of panicking
/// (see the `out` module's docs).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::out::write_stdout(::std::format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write_stdout(::std::format_args!("{}\n", ::std::format_args!($($arg)*)))
    };
}

/// `print!` whose write error ends the process instead of panicking
/// (see the `out` module's docs).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write_stdout(::std::format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics: a closed pipe ends the process with
/// status 141, any other write error is ignored (see the `out` module's
/// docs).
#[macro_export]
macro_rules! errln {
    () => {
        $crate::out::write_stderr(::std::format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write_stderr(::std::format_args!("{}\n", ::std::format_args!($($arg)*)))
    };
}
