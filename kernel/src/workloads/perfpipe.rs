//! `perfpipe [-x|-s] [-l LOOPS]`: two threads ping-pong a token through two
//! one-slot channels (Linux `perf bench sched pipe`); reports the round-trip
//! time. Each round trip is two wakeups and two context switches.
//!
//! `-x` / `--cross` pins the pinger to the first and the ponger to the last
//! online CPU, so every wakeup crosses CPUs (IPI or wake list, then a switch
//! on the other side); `-s` / `--same` pins both to the first online CPU, so
//! none does; without either the balancer places them. Either way the
//! report ends with a placement line: the CPUs each thread ran on and how
//! many round trips crossed CPUs (the ponger compares its CPU with the CPU the
//! pinger sent from).
//!
//! Only the pinger polls the stop flag; it always ends by sending a poison
//! token, so the ponger never waits forever.

use alloc::sync::Arc;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel_hal::cpu::CpuId;

use ::shell::{CpuList, Perfpipe};
use sched::TaskParams;

use super::{Control, Job};
use crate::arch;
use crate::cpumask::{AtomicCpuMask, CpuMask};

const POISON: u32 = u32::MAX;

/// What a run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    /// Round trips done.
    pub ops: u64,
    /// Their wall time, ns.
    pub ns: u64,
    /// CPUs the pinger ran on.
    pub ping_cpus: CpuMask,
    /// CPUs the ponger ran on.
    pub pong_cpus: CpuMask,
    /// Round trips whose two halves ran on different CPUs.
    pub crossed: u64,
    /// `--cross` or `--same`: the CPUs the two threads were pinned to.
    pub pinned: Option<(CpuId, CpuId)>,
    /// Stopped by Ctrl-C or `kill`.
    pub interrupted: bool,
}

impl Report {
    /// `usecs_per_op` (lower is better) and `ops_per_s` (higher).
    pub fn metrics(&self) -> super::Metrics {
        let ns = self.ns.max(1) as f64;
        let ops = self.ops.max(1) as f64;
        super::Metrics {
            list: alloc::vec![
                super::Metric::lower("usecs_per_op", ns / ops / 1e3),
                super::Metric::higher("ops_per_s", ops * 1e9 / ns),
            ],
            interrupted: self.interrupted,
        }
    }
}

/// Runs the workload and prints Linux-like result lines and the placement.
pub fn run(
    p: Perfpipe,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    if super::free_slots() < 2 {
        return Err(alloc::string::String::from("no free thread slots"));
    }
    let pinned = if p.cross {
        let online = crate::sched::online_mask();
        let (Some(first), Some(last)) = (online.cpus().next(), online.cpus().last()) else {
            return Err(alloc::string::String::from("no online CPU"));
        };
        if first == last {
            return Err(alloc::format!(
                "--cross needs 2 online CPUs (online: {})",
                CpuList(online)
            ));
        }
        Some((first, last))
    } else if p.same {
        let first = crate::sched::online_mask()
            .cpus()
            .next()
            .unwrap_or(CpuId::BOOT);
        Some((first, first))
    } else {
        None
    };
    let ping = Arc::new(Channel::<u32>::new(1));
    let pong = Arc::new(Channel::<u32>::new(1));
    // elapsed ns, round trips, (unused), (unused), crossed, pinger's CPU now.
    let res = Arc::new([const { AtomicU64::new(0) }; 6]);
    // CPUs the pinger / the ponger ran on.
    let ran_on = Arc::new([const { AtomicCpuMask::new() }; 2]);
    let mut job = Job::new();
    {
        let (ping, pong, res, ran_on) = (ping.clone(), pong.clone(), res.clone(), ran_on.clone());
        job.spawn(
            "perfpipe-pong",
            TaskParams::default(),
            pinned.map(|c| c.1),
            move || {
                let (mut mask, mut crossed, mut last) = (CpuMask::new(), 0u64, None);
                loop {
                    let v = ping.recv();
                    // Each read()/write() returns to user space.
                    crate::sched::exit_to_user_mode();
                    if v == POISON {
                        break;
                    }
                    let me = arch::cpu_id();
                    // Cheap in the measured loop: set only on a change.
                    if Some(me) != last {
                        mask.add(me);
                        last = Some(me);
                    }
                    if res[5].load(Ordering::Relaxed) != me.index() as u64 {
                        crossed += 1;
                    }
                    // Like a pipe write followed by a read: a sync wakeup.
                    pong.send_sync(v);
                    crate::sched::exit_to_user_mode();
                }
                ran_on[1].store(&mask, Ordering::Relaxed);
                res[4].store(crossed, Ordering::Relaxed);
            },
        )?;
    }
    let stop = job.stop_flag();
    let (r2, ran_on2) = (res.clone(), ran_on.clone());
    let ping_main = ping.clone();
    let loops = p.loops;
    let spawned = job.spawn(
        "perfpipe-ping",
        TaskParams::default(),
        pinned.map(|c| c.0),
        move || {
            let t0 = arch::now_ns();
            let (mut done, mut mask, mut last) = (0u64, CpuMask::new(), None);
            for i in 0..loops {
                if stop.stopped() {
                    break;
                }
                let me = arch::cpu_id();
                // Cheap in the measured loop: set only on a change.
                if Some(me) != last {
                    mask.add(me);
                    last = Some(me);
                }
                r2[5].store(me.index() as u64, Ordering::Relaxed);
                ping.send_sync(i);
                crate::sched::exit_to_user_mode();
                pong.recv();
                crate::sched::exit_to_user_mode();
                done += 1;
            }
            r2[0].store(arch::now_ns() - t0, Ordering::Relaxed);
            r2[1].store(done, Ordering::Relaxed);
            ran_on2[0].store(&mask, Ordering::Relaxed);
            ping.send(POISON);
        },
    );
    if let Err(e) = spawned {
        // End the ponger ourselves, then the job joins it.
        ping_main.send(POISON);
        return Err(e);
    }
    let interrupted = job.wait(ctl, 10);
    job.join();
    let ld = |i: usize| res[i].load(Ordering::Relaxed);
    let r = Report {
        ns: ld(0),
        ops: ld(1),
        ping_cpus: ran_on[0].load(Ordering::Relaxed),
        pong_cpus: ran_on[1].load(Ordering::Relaxed),
        crossed: ld(4),
        pinned,
        interrupted,
    };
    let n = r.ops.max(1);
    if interrupted {
        let _ = writeln!(out, "perfpipe: interrupted");
    }
    let _ = writeln!(
        out,
        "# Executed {} pipe operations between two threads",
        r.ops
    );
    let _ = writeln!(
        out,
        "     Total time: {}.{:03} [sec]",
        r.ns / 1_000_000_000,
        r.ns / 1_000_000 % 1000
    );
    let per = r.ns / n;
    let _ = writeln!(out, "     {}.{:03} usecs/op", per / 1000, per % 1000);
    let _ = writeln!(
        out,
        "     {} ops/sec",
        (n as u128 * 1_000_000_000 / (r.ns.max(1) as u128)) as u64
    );
    let _ = writeln!(out, "     round trip {} ns/op", per);
    let _ = writeln!(
        out,
        "placement: ping on cpu {}, pong on cpu {}, {} of {} round trips crossed CPUs ({})",
        CpuList(r.ping_cpus),
        CpuList(r.pong_cpus),
        r.crossed,
        r.ops,
        match r.pinned {
            Some((a, b)) if p.cross => alloc::format!("--cross: pinned to cpu {a} and cpu {b}"),
            Some((a, _)) => alloc::format!("--same: both pinned to cpu {a}"),
            None => alloc::string::String::from("placed by the scheduler"),
        }
    );
    Ok(r)
}

use crate::sync::Channel;
