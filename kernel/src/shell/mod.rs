//! The `sched> ` debug shell on the serial console: the kernel-side
//! executor of the `shell` crate's typed commands.
//!
//! The pure half (line editing, parsing, help and error texts) lives in the
//! `shell` crate and is tested on the host; this module only does what needs
//! the kernel: it reads console bytes, feeds them to the [`LineEditor`], runs
//! each parsed [`Command`] and prints its reply. One file per command group:
//!
//! - [`config`]: `features`, `sysctl`, `preempt` (the shared `SchedConfig`);
//! - [`inspect`]: `ps`, `sched_debug`, `stat` (read-only views of the runqueues);
//! - [`control`]: `nice`, `chrt`, `taskset`, `kill` (changing one thread or
//!   stopping a job);
//! - [`compare`]: `compare`, A/B runs of a workload under several configs;
//! - [`work`]: the workloads (`spin`, `hackbench`, ...) from [`crate::workloads`],
//!   in the foreground or as background jobs (`&`, `jobs`, `wait`, `fg`);
//! - [`trace`]: the scheduler event ring buffer behind `trace start|stop|dump`.
//!
//! # Input
//! With a receive interrupt (the usual case, see [`crate::console`]) input
//! bytes arrive in the console's ring and the shell thread sleeps until one
//! does; where the firmware describes no interrupt, the shell polls the UART
//! (back to back during a burst such as a piped script, a millisecond apart
//! when the line is quiet). Bytes that arrive while a command is busy
//! (printing, or waiting for a workload) are moved into a software queue
//! ([`Io::pending`]) and fed to the editor after the command, so a whole
//! script piped into QEMU's stdin runs in order, each reply complete before
//! the next prompt. A Ctrl-C among them stops the running workload.
//!
//! # Background jobs
//! `WORKLOAD ... &` runs a workload in a job ([`crate::workloads::jobs`]) and
//! returns to the prompt at once with its number and thread ids, so `ps`,
//! `nice`, `chrt`, `taskset` and `kill` reach its running threads; `jobs`,
//! `wait`, `fg` and `kill %N` manage it ([`work`]). A finished job's report
//! is printed once: by `jobs` / `wait` / `fg` / `kill`, or else before the
//! next prompt, or, when the shell sits at an idle prompt, right away (the
//! line typed so far is redrawn after it).
//!
//! Every refused command prints exactly one `error: ...` line and changes
//! nothing; nothing here panics on user input.

pub mod cgroup;
pub mod compare;
pub mod config;
pub mod control;
pub mod inspect;
pub mod trace;
pub mod work;

use alloc::collections::VecDeque;
use alloc::string::String;
use core::fmt::{self, Write};

use ::shell::{parse, Command, Event, LineEditor};

use crate::workloads::jobs::{self, Jobs};
use crate::{arch, console, task};

/// The boot argument `run=`'s script (`;`-separated commands, validated),
/// run before the first prompt.
pub static SCRIPT: spin::Once<&'static str> = spin::Once::new();

/// A command's failure: the error line without its `error: ` prefix.
pub type CmdResult = Result<(), String>;

/// Returns `Err(format!(...))` from a command.
macro_rules! fail {
    ($($arg:tt)*) => { return Err(alloc::format!($($arg)*)) };
}
pub(crate) use fail;

/// Most bytes queued while a command runs; beyond that the shell stops reading
/// (QEMU's UART then holds the rest back) until the queue drains.
const PENDING_MAX: usize = 64 * 1024;
/// Ctrl-C.
const CTRL_C: u8 = 0x03;
/// Input arriving within this long of the previous byte is a burst.
const BURST_NS: u64 = 20_000_000;
/// How long to poll for the next byte of a burst before sleeping.
const SPIN_POLL_NS: u64 = 200_000;

/// The console: a software receive queue in front of the polled UART.
pub struct Io {
    /// Bytes read from the UART and not yet fed to the line editor.
    pending: VecDeque<u8>,
    /// When the last byte was read (`now_ns`).
    last_rx_ns: u64,
}

impl Io {
    /// An empty queue (one per shell; the in-kernel tests make their own).
    pub(crate) const fn new() -> Self {
        Io {
            pending: VecDeque::new(),
            last_rx_ns: 0,
        }
    }

    /// Moves every input byte waiting into the queue (bounded).
    pub fn pump(&mut self) {
        while self.pending.len() < PENDING_MAX {
            match console::read_byte() {
                Some(b) => self.pending.push_back(b),
                None => break,
            }
        }
    }

    /// Whether the queue is full ([`Io::pump`] leaves the rest in the UART).
    pub fn full(&self) -> bool {
        self.pending.len() >= PENDING_MAX
    }

    /// Reads the UART and reports (and consumes) a Ctrl-C typed during the
    /// running command; the other bytes stay queued for the prompt. For
    /// workloads.
    ///
    /// A Ctrl-C counts only if no complete line is queued before it: in a
    /// script (`spin ...\nps\n^C...`) a Ctrl-C after a queued line belongs to
    /// a later command, and at the prompt it just clears the line.
    pub fn interrupted(&mut self) -> bool {
        self.pump();
        let hit = self
            .pending
            .iter()
            .position(|&b| matches!(b, CTRL_C | b'\r' | b'\n'));
        match hit {
            Some(i) if self.pending[i] == CTRL_C => {
                self.pending.remove(i);
                true
            }
            _ => false,
        }
    }

    /// The next input byte: sleeps until the receive interrupt brings one, or,
    /// where input is polled, between polls while the line is quiet. `None`
    /// when a background job finished first (its report is due).
    fn next_byte(&mut self) -> Option<u8> {
        loop {
            if let Some(b) = self.pending.pop_front().or_else(console::read_byte) {
                self.last_rx_ns = arch::now_ns();
                return Some(b);
            }
            if jobs::finished_flag() {
                return None;
            }
            if console::rx_irq_active() {
                console::wait_input_or(jobs::finished_flag);
                continue;
            }
            // Input came in a moment ago (a piped script, a paste): QEMU
            // refills the FIFO within microseconds, so poll a little before
            // paying a whole tick of sleep. A quiet line costs no CPU.
            let now = arch::now_ns();
            if now.saturating_sub(self.last_rx_ns) < BURST_NS {
                while arch::now_ns() < now + SPIN_POLL_NS {
                    if let Some(b) = console::read_byte() {
                        self.last_rx_ns = arch::now_ns();
                        return Some(b);
                    }
                    core::hint::spin_loop();
                }
            }
            task::sleep_ms(1);
        }
    }
}

/// The shell: console I/O plus the printing side (`fmt::Write`, `\n` becomes
/// `\r\n`). Every command writes its reply through it.
pub struct Sh {
    /// Input side.
    pub io: Io,
    /// The background jobs.
    pub jobs: Jobs,
}

impl Write for Sh {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        crate::console::print(format_args!("{s}"));
        if s.contains('\n') {
            // Keep draining the receive FIFO while printing long replies.
            self.io.pump();
        }
        Ok(())
    }
}

/// Writes the editor's echo bytes (they contain `\r\n` already, which the
/// console would turn into `\r\r\n`).
fn echo(bytes: &[u8]) {
    for part in bytes.split_inclusive(|&b| b == b'\n') {
        let part = match part {
            [rest @ .., b'\r', b'\n'] => {
                print_bytes(rest);
                b"\n".as_slice()
            }
            p => p,
        };
        print_bytes(part);
    }
}

fn print_bytes(b: &[u8]) {
    if b.is_empty() {
        return;
    }
    // The editor echoes ASCII only (non-ASCII input is echoed as `?`).
    let s = core::str::from_utf8(b).unwrap_or("?");
    crate::console::print(format_args!("{s}"));
}

/// The shell thread's body: prompt, read a line, run it, forever (until
/// `poweroff`).
pub fn run() {
    let mut sh = Sh {
        io: Io::new(),
        jobs: Jobs::new(),
    };
    let mut ed = LineEditor::new();
    let _ = writeln!(
        sh,
        "sched debug shell on {} CPU(s); 'help' lists the commands",
        crate::sched::nr_cpus()
    );
    if let Some(script) = SCRIPT.get() {
        // Echoed as if typed: the transcript reads like a session.
        for cmd in script.split(';') {
            let _ = writeln!(sh, "{}{}", ed.prompt(), cmd.trim());
            run_line(&mut sh, cmd);
        }
    }
    loop {
        work::report_finished(&mut sh, false);
        let _ = write!(sh, "{}", ed.prompt());
        loop {
            let Some(b) = sh.io.next_byte() else {
                // A job finished while the prompt waited: its report, then
                // the prompt and the line typed so far again.
                if work::report_finished(&mut sh, true) > 0 {
                    let _ = write!(sh, "{}", ed.prompt());
                    print_bytes(ed.current());
                }
                continue;
            };
            let line = match ed.feed(b, &mut echo) {
                Event::None => continue,
                Event::Interrupt => break,
                Event::Error(e) => {
                    let _ = writeln!(sh, "error: {e}");
                    break;
                }
                Event::Line(line) => String::from(line),
            };
            run_line(&mut sh, &line);
            break;
        }
    }
}

/// Parses and runs one line; a refusal prints its `error: ` line. Log lines
/// from elsewhere are held while it runs and printed after its output
/// (`console::hold_log`).
fn run_line(sh: &mut Sh, line: &str) {
    console::hold_log();
    run_parsed(sh, line);
    console::release_log();
}

fn run_parsed(sh: &mut Sh, line: &str) {
    match parse(line) {
        Ok(None) => {}
        Ok(Some(cmd)) => {
            if let Err(msg) = execute(sh, cmd, line) {
                let _ = writeln!(sh, "error: {msg}");
            }
        }
        Err(e) => {
            let _ = writeln!(sh, "error: {e}");
        }
    }
}

/// Runs one command (`line`: as typed, for `jobs`).
fn execute(sh: &mut Sh, cmd: Command, line: &str) -> CmdResult {
    match cmd {
        Command::Help(topic) => match ::shell::help_text(topic) {
            Ok(text) => {
                let _ = write!(sh, "{text}");
                Ok(())
            }
            Err(e) => fail!("{e}"),
        },
        Command::Features(f) => config::features(sh, f),
        Command::Sysctl(c) => config::sysctl(sh, c),
        Command::Preempt(m) => config::preempt(sh, m),
        Command::Ps => inspect::ps(sh),
        Command::SchedDebug => inspect::sched_debug(sh),
        Command::Schedstat => inspect::schedstat(sh),
        Command::Stat => inspect::stat(sh),
        Command::Nice { target, nice } => control::nice(sh, target, nice),
        Command::Chrt {
            policy,
            prio,
            runtime_ns,
            target,
        } => control::chrt(sh, policy, prio, runtime_ns, target),
        Command::ChrtShow { target } => control::chrt_show(sh, target),
        Command::ChrtDeadline {
            runtime_ns,
            deadline_ns,
            period_ns,
            target,
        } => control::chrt_deadline(sh, runtime_ns, deadline_ns, period_ns, target),
        Command::Taskset { mask, pid } => control::taskset(sh, mask, pid),
        Command::TasksetJob { mask, job } => control::taskset_job(sh, mask, job),
        Command::TasksetShow { pid, list } => control::taskset_show(sh, pid, list),
        Command::Kill { pid } => control::kill(sh, pid),
        Command::KillJob { job } => work::kill_job(sh, job, None),
        Command::Background(c) => work::background(sh, *c, line),
        Command::Jobs { long } => work::jobs(sh, long),
        Command::Wait(job) => work::wait(sh, job),
        Command::Fg(job) => work::fg(sh, job),
        Command::Spin(p) => work::spin(sh, &p),
        Command::Hackbench(p) => work::hackbench(sh, p),
        Command::Schbench(p) => work::schbench(sh, p),
        Command::Pgbench(p) => work::pgbench(sh, p),
        Command::Cyclictest(p) => work::cyclictest(sh, p),
        Command::Wakelat(p) => work::wakelat(sh, p),
        Command::Dlperiodic(p) => work::dlperiodic(sh, p),
        Command::Perfpipe(p) => work::perfpipe(sh, p),
        Command::Soak(p) => work::soak(sh, p),
        Command::Yield(p) => work::yield_pp(sh, p),
        Command::Compare(c) => compare::compare(sh, &c),
        Command::Trace(t) => trace::command(sh, t),
        Command::Cpu { cpu, online } => control::cpu_hotplug(sh, cpu, online),
        Command::Cgroup(c) => cgroup::command(sh, c),
        Command::Poweroff => {
            let _ = writeln!(sh, "poweroff");
            console::release_log();
            arch::exit_qemu(arch::ExitCode::Success)
        }
    }
}
