//! The workload commands: thin wrappers that run a [`crate::workloads`]
//! workload with the shell as its [`Control`] (Ctrl-C from the console) and
//! print its report. Errors (not enough thread slots, a CPU that is not
//! online) come back as the command's `error:` line, after every thread that
//! was started has been stopped and joined.
//!
//! And the job control commands over [`crate::workloads::jobs`]: `WORKLOAD
//! &`, `jobs`, `wait`, `fg`, `kill %N`. `kill` waits for the killed job's
//! threads to end, so when it returns they are joined and their memory is
//! freed, and it prints the job's (partial) report.

use alloc::vec::Vec;
use core::fmt::Write;

use ::shell::{
    Cyclictest, Dlperiodic, Hackbench, IdList, Perfpipe, Pgbench, Schbench, Soak, Spin, Wakelat,
    YieldPp,
};

use super::{fail, CmdResult, Sh};
use crate::workloads::jobs::{self, Finished, WaitError};
use crate::workloads::{self, Control};

impl Control for super::Io {
    fn interrupted(&mut self) -> bool {
        super::Io::interrupted(self)
    }

    /// Sleeps until input arrives (a Ctrl-C, for the next `interrupted`) or
    /// the job's last thread wakes it; polls every `poll_ms` where input is
    /// not interrupt-driven, or while the queue is full (the UART's input
    /// then stays waiting, and would end every sleep at once).
    fn sleep(&mut self, poll_ms: u64, done: &dyn Fn() -> bool) {
        if self.full() || !crate::console::wait_input_unless(done) {
            workloads::poll_sleep(poll_ms, done);
        }
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

/// `spin -d MS [-c CPU] SPEC...`.
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

/// `wakelat`.
pub fn wakelat(sh: &mut Sh, p: Wakelat) -> CmdResult {
    let (io, mut out) = parts(sh);
    with_cmd(
        "wakelat",
        workloads::wakelat::run(p, io, &mut out).map(|_| ()),
    )
}

/// `dlperiodic`.
pub fn dlperiodic(sh: &mut Sh, p: Dlperiodic) -> CmdResult {
    let (io, mut out) = parts(sh);
    with_cmd(
        "dlperiodic",
        workloads::dlperiodic::run(p, io, &mut out).map(|_| ()),
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

// ---- background jobs ----

/// `WORKLOAD ... &`: starts the job; prints `[N] LEADER (threads IDS)`.
pub fn background(sh: &mut Sh, cmd: ::shell::Command, line: &str) -> CmdResult {
    let line = line.trim();
    let job = match sh.jobs.start(cmd, line) {
        Ok(j) => j,
        Err(e) => fail!("{e}"),
    };
    let (n, leader, threads) = (job.number, job.leader(), job.threads());
    let _ = writeln!(sh, "[{n}] {leader} (threads {})", IdList(&threads));
    Ok(())
}

/// Prints a reported job: its state line, then its report.
fn print_finished(sh: &mut Sh, f: &Finished) {
    let _ = writeln!(sh, "[{}]  {:<8} {}", f.number, f.state.name(), f.line);
    let _ = write!(sh, "{}", f.report);
    if let Some(e) = &f.error {
        let _ = writeln!(sh, "error: {e}");
    }
}

/// Reports every job that finished (before a prompt, or at an idle one,
/// then after a line break); returns how many.
pub fn report_finished(sh: &mut Sh, line_break: bool) -> usize {
    jobs::take_finished_flag();
    let done = sh.jobs.reap();
    if line_break && !done.is_empty() {
        let _ = writeln!(sh);
    }
    for f in &done {
        print_finished(sh, f);
    }
    done.len()
}

/// `jobs [-l]`: running jobs, then finished ones with their reports (each
/// reported once).
pub fn jobs(sh: &mut Sh, long: bool) -> CmdResult {
    jobs::take_finished_flag();
    let mut lines = Vec::new();
    for j in sh.jobs.iter() {
        let state = match j.state() {
            jobs::JobState::Running => "Running",
            _ => continue, // reported below, with its report
        };
        let mut l = if long {
            alloc::format!("[{}]  {:>5} {state:<8} {}", j.number, j.leader(), j.line)
        } else {
            alloc::format!("[{}]  {state:<8} {}", j.number, j.line)
        };
        if long {
            let _ = write!(l, "\n        threads {}", IdList(&j.threads()));
        }
        lines.push(l);
    }
    for l in &lines {
        let _ = writeln!(sh, "{l}");
    }
    for f in sh.jobs.reap() {
        print_finished(sh, &f);
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

/// `wait [%N]`: job N, or every job, to its end; Ctrl-C stops waiting.
pub fn wait(sh: &mut Sh, job: Option<u32>) -> CmdResult {
    let numbers: Vec<u32> = match job {
        Some(n) if sh.jobs.get(n).is_none() => fail!("wait: no such job %{n}"),
        Some(n) => alloc::vec![n],
        None => sh.jobs.iter().map(|j| j.number).collect(),
    };
    for n in numbers {
        match sh.jobs.wait(n, &mut sh.io, false) {
            Ok(f) => print_finished(sh, &f),
            Err(WaitError::Interrupted) => return Ok(()),
            Err(WaitError::NoSuchJob) => {}
        }
    }
    Ok(())
}

/// `fg [%N]`: waits for job N (default: the newest); Ctrl-C kills it.
pub fn fg(sh: &mut Sh, job: Option<u32>) -> CmdResult {
    let n = match job {
        Some(n) if sh.jobs.get(n).is_none() => fail!("fg: no such job %{n}"),
        Some(n) => n,
        None => match sh.jobs.newest() {
            Some(n) => n,
            None => fail!("fg: no current job"),
        },
    };
    let line = sh.jobs.get(n).map(|j| j.line.clone()).unwrap_or_default();
    let _ = writeln!(sh, "{line}");
    match sh.jobs.wait(n, &mut sh.io, true) {
        Ok(f) => print_finished(sh, &f),
        Err(_) => fail!("fg: no such job %{n}"),
    }
    Ok(())
}

/// `kill %N` (and `kill PID` of one of its threads, `by`): stops the whole
/// job, waits for every thread to end (Ctrl-C stops waiting, not the kill)
/// and prints its report.
pub fn kill_job(sh: &mut Sh, n: u32, by: Option<u32>) -> CmdResult {
    if !sh.jobs.kill(n) {
        fail!("kill: no such job %{n}");
    }
    if let Some(pid) = by {
        let _ = writeln!(
            sh,
            "kill: {pid} ({}) belongs to job {n}: stopping the whole job",
            crate::task::thread(pid).name()
        );
    }
    match sh.jobs.wait(n, &mut sh.io, false) {
        Ok(f) => print_finished(sh, &f),
        Err(WaitError::Interrupted) => {
            let _ = writeln!(
                sh,
                "kill: job {n} is still stopping; 'jobs' shows when it ended"
            );
        }
        Err(WaitError::NoSuchJob) => fail!("kill: no such job %{n}"),
    }
    Ok(())
}
