//! Memory figures: what a runqueue costs per task it holds, what an empty one
//! costs, and a whole `smp::Scheduler` with 256 CPUs and 10 000 tasks.
//!
//! Measured with the bench's counting allocator (live heap bytes before and
//! after), not estimated: every allocation the scheduler makes is counted,
//! growth slack (capacities double) included. The tasks are new nice-0 tasks
//! (`wake_up_new_task`); the Scheduler's are spread round-robin over its CPUs,
//! as fork balancing would spread them.

use std::sync::Arc;

use sched::smp::{Platform, Scheduler};
use sched::{CpuId, Rq, SchedConfig, SchedTask, TaskId, TaskParams};

use crate::{live_bytes, out, outln, HZ, NS};

/// A platform that does nothing: the figures need no clock, IRQs or IPIs.
struct Quiet;

impl Platform for Quiet {
    fn now_ns(&self) -> u64 {
        1
    }
    fn irq_save(&self) -> bool {
        false
    }
    fn irq_restore(&self, _: bool) {}
    fn send_resched_ipi(&self, _: sched::CpuId) {}
}

/// Live heap bytes `f` leaves allocated, with its result (kept alive).
fn measure<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = live_bytes();
    let x = f();
    (x, live_bytes().saturating_sub(before))
}

/// One runqueue (ids below 2^20) holding `n` tasks.
fn rq_with(cfg: &Arc<SchedConfig>, n: usize) -> Rq {
    let mut rq = Rq::new(CpuId::BOOT, cfg.clone(), 1 << 20);
    rq.update_rq_clock(1);
    for i in 0..n {
        rq.wake_up_new_task(TaskId(i as u32), SchedTask::new(TaskParams::default()));
    }
    rq
}

/// The `smp::Scheduler` the simulator needs: `cpus` CPUs, `tasks` tasks.
pub fn machine(cpus: usize, tasks: usize) -> Scheduler<impl Platform> {
    let cfg = Arc::new(SchedConfig::new(cpus as u32, HZ));
    let s = Scheduler::new(Quiet, cfg, cpus, tasks);
    for i in 0..tasks {
        let mut rq = s.cpu_rq(CpuId::wrapping(i % cpus));
        rq.update_rq_clock(1);
        rq.wake_up_new_task(TaskId(i as u32), SchedTask::new(TaskParams::default()));
    }
    s
}

/// Prints the memory table.
pub fn report(label_width: usize, cell_width: usize) {
    let (w, c) = (label_width, cell_width);
    let cfg = Arc::new(SchedConfig::new(1, HZ));
    outln!("Memory (live heap bytes, counting allocator; capacities double, so 1x-2x slack):");
    out!("{:<w$}", "bytes per task, one runqueue");
    for n in NS {
        let (rq, bytes) = measure(|| rq_with(&cfg, n));
        rq.check().expect("runqueue invariants");
        out!("{:>c$}", format!("{:.0}", bytes as f64 / n as f64));
    }
    outln!();
    let (rq, empty) = measure(|| Rq::new(CpuId::BOOT, cfg.clone(), 1 << 20));
    drop(rq);
    outln!(
        "{:<w$}{:>c$}   (+ {} bytes inline; SchedTask is {} bytes)",
        "empty runqueue, heap bytes",
        empty,
        std::mem::size_of::<Rq>(),
        std::mem::size_of::<SchedTask>()
    );
    let (s, empty_machine) = measure(|| machine(256, 0));
    drop(s);
    outln!(
        "{:<w$}{:>c$}   ({} bytes per CPU: runqueue, wake list, summary)",
        "256 CPUs, no task, heap bytes",
        empty_machine,
        empty_machine / 256
    );
    let (s, total) = measure(|| machine(256, 10_000));
    drop(s);
    outln!(
        "{:<w$}{:>c$}   ({:.2} MiB, {:.0} bytes per task)",
        "256 CPUs x 10000 tasks, heap bytes",
        total,
        total as f64 / (1 << 20) as f64,
        total as f64 / 10_000.0
    );
}
