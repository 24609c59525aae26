//! The workload commands: thin wrappers that run a [`crate::workloads`]
//! workload with the shell as its [`Control`] (Ctrl-C from the console) and
//! print its report. Errors (not enough thread slots, a CPU that is not
//! online) come back as the command's `error:` line, after every thread that
//! was started has been stopped and joined.

use ::shell::{Cyclictest, Hackbench, Perfpipe, Pgbench, Schbench, Soak, Spin, YieldPp};

use super::{CmdResult, Sh};
use crate::workloads::{self, Control};

impl Control for super::Io {
    fn interrupted(&mut self) -> bool {
        super::Io::interrupted(self)
    }
}

/// Splits the shell into its console input (the workload's `Control`) and a
/// printer for the report.
pub(super) fn parts(sh: &mut Sh) -> (&mut super::Io, Printer) {
    (&mut sh.io, Printer)
}

/// Prints to the console (the report comes after the threads are joined).
pub(super) struct Printer;

impl core::fmt::Write for Printer {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        crate::console::print(format_args!("{s}"));
        Ok(())
    }
}

fn with_cmd(cmd: &str, r: Result<(), alloc::string::String>) -> CmdResult {
    r.map_err(|e| alloc::format!("{cmd}: {e}"))
}

/// `spin -d MS [-c CPU] NICE...`.
pub fn spin(sh: &mut Sh, p: &Spin) -> CmdResult {
    let (io, mut out) = parts(sh);
    with_cmd("spin", workloads::spin::run(p, io, &mut out).map(|_| ()))
}

/// `hackbench`.
pub fn hackbench(sh: &mut Sh, p: Hackbench) -> CmdResult {
    let (io, mut out) = parts(sh);
    with_cmd(
        "hackbench",
        workloads::hackbench::run(p, io, &mut out).map(|_| ()),
    )
}

/// `schbench`.
pub fn schbench(sh: &mut Sh, p: Schbench) -> CmdResult {
    let (io, mut out) = parts(sh);
    with_cmd(
        "schbench",
        workloads::schbench::run(p, io, &mut out).map(|_| ()),
    )
}

/// `pgbench`.
pub fn pgbench(sh: &mut Sh, p: Pgbench) -> CmdResult {
    let (io, mut out) = parts(sh);
    with_cmd(
        "pgbench",
        workloads::pgbench::run(p, io, &mut out).map(|_| ()),
    )
}

/// `cyclictest`.
pub fn cyclictest(sh: &mut Sh, p: Cyclictest) -> CmdResult {
    let (io, mut out) = parts(sh);
    with_cmd(
        "cyclictest",
        workloads::cyclictest::run(p, io, &mut out).map(|_| ()),
    )
}

/// `perfpipe`.
pub fn perfpipe(sh: &mut Sh, p: Perfpipe) -> CmdResult {
    let (io, mut out) = parts(sh);
    with_cmd(
        "perfpipe",
        workloads::perfpipe::run(p, io, &mut out).map(|_| ()),
    )
}

/// `soak`: its report ends with `violations N`; any violation also makes
/// the command fail with an `error:` line.
pub fn soak(sh: &mut Sh, p: Soak) -> CmdResult {
    let (io, mut out) = parts(sh);
    let r = workloads::soak::run(p, io, &mut out).map_err(|e| alloc::format!("soak: {e}"))?;
    if r.violations > 0 {
        return Err(alloc::format!("soak: {} violation(s)", r.violations));
    }
    Ok(())
}

/// `yield`.
pub fn yield_pp(sh: &mut Sh, p: YieldPp) -> CmdResult {
    let (io, mut out) = parts(sh);
    with_cmd(
        "yield",
        workloads::yieldpp::run(p, io, &mut out).map(|_| ()),
    )
}
