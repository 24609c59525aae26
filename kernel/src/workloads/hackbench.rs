//! `hackbench [-p] [-T|-P] [-g GROUPS] [-l LOOPS] [-f FDS] [-s DATASIZE]`:
//! rt-tests `hackbench` / `perf bench sched messaging`. Each group has FDS
//! receivers, each reading its own socket (default) or pipe (`-p`), and FDS
//! senders that each write LOOPS messages of DATASIZE bytes to every receiver
//! of the group. Reports the wall time from the start signal until the last
//! thread finished, like Linux's `Time:` line.
//!
//! # Wakeups, as Linux's
//! The channels follow [`Model::Socket`] or [`Model::Pipe`] (see
//! [`crate::sync::channel`] for the Linux code they model):
//! - sockets (`unix_stream_sendmsg` → `sock_def_readable` →
//!   `wake_up_interruptible_sync_poll`): every send wakes the sleeping
//!   receiver with WF_SYNC; senders block while the socket's 208 KiB sndbuf is
//!   charged and are all woken (sync) when it drains to a quarter;
//! - pipes (`anon_pipe_write`): a write wakes one reader with WF_SYNC only if
//!   the pipe was empty; writers block on a full pipe (16 pages) and are woken
//!   one at a time (sync) as pages are freed.
//!
//! Either way every wakeup hackbench causes is WF_SYNC (counted per channel
//! and reported); the start signal is a semaphore (Linux: a `poll` on a pipe).
//!
//! `-T` / `-P`: Linux runs each task as a thread or a forked process; the only
//! scheduler-visible difference is that a switch between processes also
//! switches the mm. Here every task is a kernel thread either way; the flag is
//! accepted and printed.
//!
//! # The cost of a syscall (`-C`)
//! By default a send or a receive costs only what the channel operation
//! costs here, about a tenth of what Linux's `write()`/`read()` cost on the
//! same QEMU machine (docs/results/linux.md, "Problems found", item 2).
//! `-C linux` charges each data message's send and receive the CPU time
//! Linux 7.2 spends in that syscall on that machine, as measured by `lcbench
//! costs` (pipe write / read 4358 / 3883 ns, socket 9618 / 7773 ns: the
//! figures and their conditions are at [`Hackbench::LINUX_PIPE_WRITE_NS`]);
//! `-C NS` charges NS ns to each. The charge is a busy loop on the guest
//! clock ([`syscall_work`]), which under `-icount` counts this vCPU's
//! instructions, so it is CPU time in the A/B's time base.
//!
//! It is burned as the syscall's kernel time, where Linux spends it: in
//! kernel code, not in [`crate::sched::run_in_user_mode`]. So an interrupt
//! arriving during it preempts only for an immediate request under full or
//! lazy (a return to kernel code), and a lazy request waits for the
//! syscall's end, [`crate::sched::exit_to_user_mode`], as Linux's waits for
//! `exit_to_user_mode_loop()`. A send burns before it queues the message
//! and wakes the receiver (Linux copies the data in, then calls
//! `sk_data_ready` / wakes `rd_wait`); a receive burns after it took the
//! message (Linux copies it out after any sleep). Poison messages, which
//! Linux's hackbench does not send, are not charged. Not modelled: the
//! pipe's `mutex`, which Linux holds while it copies (the charge runs
//! outside the channel's lock), and a cost that grows with `-s` (the
//! figures are for 100-byte messages).
//!
//! Stopping: senders poll the stop flag; every sender, finished or stopped,
//! sends one poison message to each receiver of its group, and a receiver
//! exits after FDS poisons, so nobody waits forever. A sender that could not
//! be spawned is poisoned for by the shell.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use ::shell::Hackbench;
use sched::TaskParams;

use super::{Control, Job};
use crate::arch;
use crate::sync::{Channel, ChannelStats, Model, Semaphore};

const POISON: u32 = u32::MAX;

/// What a run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    /// From the start signal to the last thread's end.
    pub ns: u64,
    /// Data messages the receivers got (poisons excluded).
    pub data_received: u64,
    /// Data messages the run was to pass: groups x fds x fds x loops.
    pub data_expected: u64,
    /// All channels' counters summed (poison messages included).
    pub channels: ChannelStats,
    /// Stopped by Ctrl-C or `kill`.
    pub interrupted: bool,
}

impl Report {
    /// `time_s` (lower is better).
    pub fn metrics(&self) -> super::Metrics {
        super::Metrics {
            list: alloc::vec![super::Metric::lower("time_s", self.ns as f64 / 1e9)],
            interrupted: self.interrupted,
        }
    }
}

/// The CPU time charged to a message's send and receive (`-C`). A type,
/// not a value, so that a run without `-C` ([`NoCharge`], zero-sized)
/// compiles to the code it had before the option existed.
trait Charge: Copy + Send + 'static {
    /// Before a data message is queued.
    fn send(self);
    /// After a data message was taken.
    fn recv(self);
    /// Says what is charged, after the run's header lines.
    fn print(self, out: &mut dyn Write);
}

/// No `-C`: nothing charged.
#[derive(Clone, Copy)]
struct NoCharge;

impl Charge for NoCharge {
    #[inline(always)]
    fn send(self) {}
    #[inline(always)]
    fn recv(self) {}
    #[inline(always)]
    fn print(self, _: &mut dyn Write) {}
}

/// `-C`: ns burned per send and per receive.
#[derive(Clone, Copy)]
struct ChargeNs {
    send_ns: u32,
    recv_ns: u32,
}

impl Charge for ChargeNs {
    fn send(self) {
        syscall_work(self.send_ns);
    }
    fn recv(self) {
        syscall_work(self.recv_ns);
    }
    fn print(self, out: &mut dyn Write) {
        let _ = writeln!(
            out,
            "Each send is charged {} ns and each receive {} ns of syscall time",
            self.send_ns, self.recv_ns
        );
    }
}

/// Busy-works `ns` of guest time as kernel code (a syscall's work): no
/// sleeping, no user-mode mark, preemptible by an immediate request at an
/// interrupt's exit. Polls the clock every few instructions (`burn(8)`),
/// so it overshoots by well under a microsecond.
fn syscall_work(ns: u32) {
    let until = arch::now_ns() + u64::from(ns);
    while arch::now_ns() < until {
        super::burn(8);
    }
}

/// Runs the workload and prints Linux-like result lines.
pub fn run(
    p: Hackbench,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    match p.syscall_cost_ns() {
        (0, 0) => run_charged(p, NoCharge, ctl, out),
        (send_ns, recv_ns) => run_charged(p, ChargeNs { send_ns, recv_ns }, ctl, out),
    }
}

fn run_charged<C: Charge>(
    p: Hackbench,
    charge: C,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    let (groups, fds, loops) = (p.groups as usize, p.fds as usize, p.loops);
    let model = if p.pipe {
        Model::Pipe {
            msg_bytes: p.datasize as usize,
        }
    } else {
        Model::Socket {
            msg_bytes: p.datasize as usize,
        }
    };
    let nthreads = 2 * groups * fds;
    let per_channel = model.ring_bytes::<u32>() + 256;
    super::check_resources(nthreads, groups * fds * per_channel)?;
    let _ = writeln!(
        out,
        "Running in {} mode with {groups} groups using {} file descriptors each (== {nthreads} tasks)",
        if p.threads { "threaded" } else { "process" },
        2 * fds
    );
    let _ = writeln!(
        out,
        "Each sender will pass {loops} messages of {} bytes",
        p.datasize
    );
    charge.print(out);
    let gate = Arc::new(Semaphore::new(0));
    let last_end = Arc::new(AtomicU64::new(0));
    let received = Arc::new(AtomicU64::new(0));
    let mut job = Job::new();
    let mut pipes_of_groups = Vec::new();
    let mut all = Vec::with_capacity(groups * fds);
    let mut failed = None;
    for _ in 0..groups {
        if failed.is_some() {
            break;
        }
        let pipes: Vec<Arc<Channel<u32>>> = (0..fds)
            .map(|_| Arc::new(Channel::with_model(model)))
            .collect();
        all.extend(pipes.iter().cloned());
        let mut receivers = 0;
        for pipe in &pipes {
            let pipe = pipe.clone();
            let (end, got) = (last_end.clone(), received.clone());
            let r = job.spawn("hackbench-recv", TaskParams::default(), None, move || {
                let (mut poisons, mut n) = (0, 0);
                while poisons < fds {
                    let v = pipe.recv();
                    if v != POISON {
                        // read()'s copy-out and exit, after any sleep.
                        charge.recv();
                    }
                    // read() returns to user space (a lazy request is taken).
                    crate::sched::exit_to_user_mode();
                    if v == POISON {
                        poisons += 1;
                    } else {
                        n += 1;
                    }
                }
                got.fetch_add(n, Ordering::Relaxed);
                end.fetch_max(arch::now_ns(), Ordering::Relaxed);
            });
            match r {
                Ok(_) => receivers += 1,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if failed.is_some() {
            // No senders for this group: end its receivers with fds poisons
            // each (a full channel only blocks until its receiver drains it).
            for pipe in &pipes[..receivers] {
                for _ in 0..fds {
                    pipe.send(POISON);
                }
            }
            break;
        }
        let mut unspawned = 0;
        for _ in 0..fds {
            let pipes2 = pipes.clone();
            let (gate, stop, end) = (gate.clone(), job.stop_flag(), last_end.clone());
            let r = job.spawn("hackbench-send", TaskParams::default(), None, move || {
                gate.down();
                'outer: for i in 0..loops {
                    for pipe in &pipes2 {
                        if stop.stopped() {
                            break 'outer;
                        }
                        // write()'s entry and copy-in, before the wakeup.
                        charge.send();
                        pipe.send(i);
                        // write() returns to user space.
                        crate::sched::exit_to_user_mode();
                    }
                }
                for pipe in &pipes2 {
                    pipe.send(POISON);
                }
                end.fetch_max(arch::now_ns(), Ordering::Relaxed);
            });
            if let Err(e) = r {
                failed.get_or_insert(e);
                unspawned += 1;
            }
        }
        pipes_of_groups.push((pipes, unspawned));
    }
    let t0 = arch::now_ns();
    for _ in 0..groups * fds {
        gate.up();
    }
    if failed.is_some() {
        job.stop();
        // Stand in for the senders that do not exist.
        for (pipes, unspawned) in &pipes_of_groups {
            for _ in 0..*unspawned {
                for pipe in pipes {
                    pipe.send(POISON);
                }
            }
        }
    }
    let interrupted = job.wait(ctl, 10);
    job.join();
    if let Some(e) = failed {
        return Err(e);
    }
    let mut channels = ChannelStats::default();
    for c in &all {
        channels += c.stats();
    }
    let r = Report {
        ns: last_end.load(Ordering::Relaxed).saturating_sub(t0),
        data_received: received.load(Ordering::Relaxed),
        data_expected: (groups * fds * fds) as u64 * u64::from(loops),
        channels,
        interrupted,
    };
    if interrupted {
        let _ = writeln!(out, "hackbench: interrupted");
    }
    let _ = writeln!(
        out,
        "Time: {}.{:03}",
        r.ns / 1_000_000_000,
        r.ns / 1_000_000 % 1000
    );
    let _ = writeln!(
        out,
        "{} {} messages; wakeups: {} sync, {} plain; senders blocked {} times",
        r.data_received,
        if p.pipe { "pipe" } else { "socket" },
        channels.woken_sync,
        channels.woken_plain,
        channels.sender_waits
    );
    Ok(r)
}
