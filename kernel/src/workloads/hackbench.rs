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

/// Runs the workload and prints Linux-like result lines.
pub fn run(
    p: Hackbench,
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
