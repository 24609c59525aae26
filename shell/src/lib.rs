//! The pure, host-testable half of the kernel's `sched> ` debug shell.
//!
//! The kernel boots to a sysctl-like prompt on the serial console to flip
//! scheduler features, set tunables, inspect runqueues and run workloads. Everything
//! that does not touch kernel state lives here, so it can be tested on the host
//! (including property tests that throw random bytes at it) and the kernel-side
//! executor stays a thin `match` over typed commands:
//!
//! - [`editor`]: [`LineEditor`], fed one byte at a time from the UART: echo,
//!   backspace, Ctrl-U, Ctrl-C, arrow-key history, CR / LF / CRLF as one Enter,
//!   over-long and non-ASCII lines reported as errors instead of truncated.
//! - [`parse()`]: one line to a validated [`Command`] or an [`Error`] whose
//!   `Display` is the error line without its `error: ` prefix.
//! - [`help`]: the command table (name, usage, summary, examples, limits) that
//!   `help` prints and the usage hints in error messages come from.
//! - [`format`]: small output helpers (the `preempt` line, `ps` rows).
//!
//! `no_std` + `alloc`, no `unsafe`, never panics on any input.
//!
//! # Driving it from the kernel
//! ```
//! use shell::{parse, Command, Event, LineEditor};
//! let mut ed = LineEditor::new();
//! let mut out = Vec::new(); // the kernel writes to the UART instead
//! out.extend_from_slice(ed.prompt().as_bytes());
//! for &b in b"preempt lazy\n" {
//!     match ed.feed(b, &mut |bytes: &[u8]| out.extend_from_slice(bytes)) {
//!         Event::None => {}
//!         Event::Interrupt => { /* stop a running workload */ }
//!         Event::Error(e) => println!("error: {e}"),
//!         Event::Line(line) => match parse(line) {
//!             Ok(None) => {}
//!             Ok(Some(Command::Preempt(Some(mode)))) => assert_eq!(mode.name(), "lazy"),
//!             Ok(Some(_other)) => { /* execute */ }
//!             Err(e) => println!("error: {e}"),
//!         },
//!     }
//! }
//! assert_eq!(out, b"sched> preempt lazy\r\n");
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod compare;
pub mod editor;
pub mod error;
pub mod format;
pub mod help;
pub mod parse;

pub use editor::{Event, LineEditor, LineError, HISTORY_LEN, MAX_LINE, PROMPT};
pub use error::{ArgError, BgError, Error};
pub use format::{CpuList, IdList, Ms, PreemptLine, PsRow, SignedMs, PS_HEADER};
pub use help::{help_text, lookup, usage_words, CommandHelp, COMMANDS, PROBE_WORDS};
pub use parse::{
    parse, parse_compare_config, CgroupCmd, Command, Compare, CompareConfig, Cyclictest,
    Dlperiodic, Hackbench, Limit, Perfpipe, Pgbench, Pid, Schbench, SchedCost, Setting, Soak, Spin,
    SpinThread, SyscallCost, SysctlCmd, Target, TraceCmd, Wakelat, YieldPp, FAIL_ALLOC_KEY, JOB,
    MAX_CPUS, MAX_JOBS, SCHEDSTATS_KEY, SCHED_RUNTIME,
};
