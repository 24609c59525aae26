//! `perfpipe [-l LOOPS]`: two threads ping-pong a token through two one-slot
//! channels (Linux `perf bench sched pipe`); reports the round-trip time. Each
//! round trip is two wakeups and two context switches on one CPU.
//!
//! Only the pinger polls the stop flag; it always ends by sending a poison
//! token, so the ponger never waits forever.

use alloc::sync::Arc;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use ::shell::Perfpipe;
use sched::TaskParams;

use super::{Control, Job};
use crate::arch;
use crate::sync::Channel;

const POISON: u32 = u32::MAX;

/// Runs the workload and prints Linux-like result lines.
pub fn run(
    p: Perfpipe,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<(), alloc::string::String> {
    if super::free_slots() < 2 {
        return Err(alloc::string::String::from("no free thread slots"));
    }
    let ping = Arc::new(Channel::<u32>::new(1));
    let pong = Arc::new(Channel::<u32>::new(1));
    // (elapsed ns, round trips done), written by the pinger.
    let result = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let mut job = Job::new();
    {
        let (ping, pong) = (ping.clone(), pong.clone());
        job.spawn("perfpipe-pong", TaskParams::default(), None, move || loop {
            let v = ping.recv();
            if v == POISON {
                break;
            }
            // Like a pipe write followed by a read: a sync wakeup.
            pong.send_sync(v);
        })?;
    }
    let stop = job.stop_flag();
    let res = result.clone();
    let ping_main = ping.clone();
    let loops = p.loops;
    let spawned = job.spawn("perfpipe-ping", TaskParams::default(), None, move || {
        let t0 = arch::now_ns();
        let mut done = 0u64;
        for i in 0..loops {
            if stop.stopped() {
                break;
            }
            ping.send_sync(i);
            pong.recv();
            done += 1;
        }
        res.0.store(arch::now_ns() - t0, Ordering::Relaxed);
        res.1.store(done, Ordering::Relaxed);
        ping.send(POISON);
    });
    if let Err(e) = spawned {
        // End the ponger ourselves, then the job joins it.
        ping_main.send(POISON);
        return Err(e);
    }
    let interrupted = job.wait(ctl, 10);
    job.join();
    let ns = result.0.load(Ordering::Relaxed);
    let n = result.1.load(Ordering::Relaxed).max(1);
    if interrupted {
        let _ = writeln!(out, "perfpipe: interrupted");
    }
    let _ = writeln!(
        out,
        "# Executed {} pipe operations between two threads",
        result.1.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        out,
        "     Total time: {}.{:03} [sec]",
        ns / 1_000_000_000,
        ns / 1_000_000 % 1000
    );
    let per = ns / n;
    let _ = writeln!(out, "     {}.{:03} usecs/op", per / 1000, per % 1000);
    let _ = writeln!(
        out,
        "     {} ops/sec",
        (n as u128 * 1_000_000_000 / (ns.max(1) as u128)) as u64
    );
    let _ = writeln!(out, "     round trip {} ns/op", per);
    Ok(())
}
