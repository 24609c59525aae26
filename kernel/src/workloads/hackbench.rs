//! `hackbench [-g GROUPS] [-l LOOPS] [-f FDS]`: Linux `perf bench sched
//! messaging` over the kernel's `Channel`. Each group has FDS receivers, each
//! with its own channel (its "pipe"), and FDS senders that each send LOOPS
//! messages to every receiver of the group. Reports the wall time from the
//! start signal until the last thread finished.
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
use crate::sync::{Channel, Semaphore};

const POISON: u32 = u32::MAX;
/// Messages a receiver's channel buffers (a pipe holds many small messages).
const PIPE_MSGS: usize = 64;

/// Runs the workload and prints Linux-like result lines.
pub fn run(
    p: Hackbench,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<(), alloc::string::String> {
    let (groups, fds, loops) = (p.groups as usize, p.fds as usize, p.loops);
    let nthreads = 2 * groups * fds;
    if nthreads > super::free_slots() {
        return Err(alloc::format!(
            "{nthreads} threads needed, {} thread slots free (use fewer groups or fds)",
            super::free_slots()
        ));
    }
    let _ = writeln!(
        out,
        "Running in threaded mode with {groups} groups using {} file descriptors each (== {nthreads} tasks)",
        2 * fds
    );
    let _ = writeln!(out, "Each sender will pass {loops} messages of 4 bytes");
    let gate = Arc::new(Semaphore::new(0));
    let last_end = Arc::new(AtomicU64::new(0));
    let mut job = Job::new();
    let mut pipes_of_groups = Vec::new();
    let mut failed = None;
    for _ in 0..groups {
        if failed.is_some() {
            break;
        }
        let pipes: Vec<Arc<Channel<u32>>> = (0..fds)
            .map(|_| Arc::new(Channel::new(PIPE_MSGS)))
            .collect();
        let mut receivers = 0;
        for pipe in &pipes {
            let pipe = pipe.clone();
            let end = last_end.clone();
            let r = job.spawn("hackbench-recv", TaskParams::default(), None, move || {
                let mut poisons = 0;
                while poisons < fds {
                    if pipe.recv() == POISON {
                        poisons += 1;
                    }
                }
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
            // No senders for this group: end its receivers (fds <= PIPE_MSGS
            // poisons fit in each channel, so this never blocks).
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
    let ns = last_end.load(Ordering::Relaxed).saturating_sub(t0);
    if interrupted {
        let _ = writeln!(out, "hackbench: interrupted");
    }
    let _ = writeln!(
        out,
        "Time: {}.{:03}",
        ns / 1_000_000_000,
        ns / 1_000_000 % 1000
    );
    Ok(())
}
