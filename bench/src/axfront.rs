//! `bench --axsched`: `sched::axsched::EevdfScheduler` (EEVDF behind axsched
//! 0.3's `BaseScheduler`) beside axsched 0.3.1's own FIFO, RR and CFS
//! schedulers, with axsched's own benchmark protocols:
//! - yield: N tasks, 3·N `pick_next_task` + `put_prev_task(t, false)`
//!   (axsched's `bench_yield`, N = 1M);
//! - remove: N tasks added, then removed one by one, last first
//!   (axsched's `bench_remove`, N = 10k);
//! - cycle: `task_tick`, `put_prev_task(t, true)`, `pick_next_task` with N
//!   runnable tasks (the protocol of `docs/benchmarks.md`).
//!
//! Each cell is the median (min–max) of 5 runs, in ns per operation.
//!
//! `bench --axsched-one SCHED OP N` runs one protocol once, for
//! instruction counts under callgrind (`--toggle-collect='*measured*'`
//! counts only the operations, not the set-up): SCHED is `fifo`, `rr`,
//! `cfs` or `eevdf`, OP `yield`, `remove` or `cycle`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use axsched::{BaseScheduler, CFSTask, CFScheduler, FifoScheduler, FifoTask, RRScheduler, RRTask};
use sched::axsched::{EevdfScheduler, EevdfTask};

use crate::{errln, outln};

const RUNS: usize = 5;

/// One scheduler under test: how to make it and its tasks.
trait Front {
    type S: BaseScheduler<SchedItem = Arc<Self::T>>;
    type T;
    const NAME: &'static str;
    fn sched() -> Self::S;
    fn task(i: usize) -> Arc<Self::T>;
}

/// A [`Front`] for scheduler `$s` and task `$t` (both over `usize`).
macro_rules! front {
    ($front:ident, $name:literal, $s:ty, $t:ty) => {
        struct $front;
        impl Front for $front {
            type S = $s;
            type T = $t;
            const NAME: &'static str = $name;
            fn sched() -> Self::S {
                <$s>::new()
            }
            fn task(i: usize) -> Arc<Self::T> {
                Arc::new(<$t>::new(i))
            }
        }
    };
}

front!(Fifo, "axsched FIFO", FifoScheduler<usize>, FifoTask<usize>);
front!(Rr, "axsched RR", RRScheduler<usize, 5>, RRTask<usize, 5>);
front!(Cfs, "axsched CFS", CFScheduler<usize>, CFSTask<usize>);
front!(
    Eevdf,
    "sched EEVDF (axsched front end)",
    EevdfScheduler<usize>,
    EevdfTask<usize>
);

fn filled<F: Front>(n: usize) -> (F::S, Vec<Arc<F::T>>) {
    let mut s = F::sched();
    let ts: Vec<_> = (0..n).map(F::task).collect();
    for t in &ts {
        s.add_task(t.clone());
    }
    (s, ts)
}

#[inline(never)]
fn measured_yield<F: Front>(s: &mut F::S, count: usize) {
    for _ in 0..count {
        let t = s.pick_next_task().expect("a task");
        s.put_prev_task(t, false);
    }
}

fn yield_ns<F: Front>(n: usize) -> f64 {
    let (mut s, _) = filled::<F>(n);
    let count = 3 * n;
    let t0 = Instant::now();
    measured_yield::<F>(&mut s, count);
    t0.elapsed().as_nanos() as f64 / count as f64
}

#[inline(never)]
fn measured_remove<F: Front>(s: &mut F::S, ts: &[Arc<F::T>]) {
    for t in ts.iter().rev() {
        black_box(s.remove_task(t).expect("queued"));
    }
}

fn remove_ns<F: Front>(n: usize) -> f64 {
    let (mut s, ts) = filled::<F>(n);
    let t0 = Instant::now();
    measured_remove::<F>(&mut s, &ts);
    t0.elapsed().as_nanos() as f64 / n as f64
}

fn cycle_ns<F: Front>(n: usize) -> f64 {
    let (mut s, _) = filled::<F>(n);
    let mut curr = s.pick_next_task().expect("a task");
    let count = 2_000_000usize;
    for _ in 0..(20 * n).max(2000) {
        s.task_tick(&curr);
        s.put_prev_task(curr, true);
        curr = s.pick_next_task().expect("a task");
    }
    let t0 = Instant::now();
    measured_cycle::<F>(&mut s, curr, count);
    t0.elapsed().as_nanos() as f64 / count as f64
}

#[inline(never)]
fn measured_cycle<F: Front>(s: &mut F::S, mut curr: Arc<F::T>, count: usize) {
    for _ in 0..count {
        black_box(s.task_tick(&curr));
        s.put_prev_task(curr, true);
        curr = s.pick_next_task().expect("a task");
    }
}

fn one_run<F: Front>(op: &str, n: usize) -> Result<(), String> {
    match op {
        "yield" => yield_ns::<F>(n),
        "remove" => remove_ns::<F>(n),
        "cycle" => cycle_ns::<F>(n),
        _ => return Err(format!("unknown OP {op:?} (yield, remove, cycle)")),
    };
    Ok(())
}

/// `bench --axsched-one SCHED OP N`: one run of one protocol.
pub fn one(args: &[String]) {
    let usage = "usage: bench --axsched-one fifo|rr|cfs|eevdf yield|remove|cycle N";
    let (Some(sched), Some(op), Some(n), None) =
        (args.first(), args.get(1), args.get(2), args.get(3))
    else {
        errln!("{usage}");
        std::process::exit(2);
    };
    let Ok(n) = n.parse::<usize>() else {
        errln!("{usage} (N must be a whole number, got {n:?})");
        std::process::exit(2);
    };
    let r = match sched.as_str() {
        "fifo" => one_run::<Fifo>(op, n),
        "rr" => one_run::<Rr>(op, n),
        "cfs" => one_run::<Cfs>(op, n),
        "eevdf" => one_run::<Eevdf>(op, n),
        _ => Err(format!("unknown SCHED {sched:?} (fifo, rr, cfs, eevdf)")),
    };
    if let Err(e) = r {
        errln!("{usage}: {e}");
        std::process::exit(2);
    }
}

fn cell(f: impl Fn() -> f64) -> String {
    let mut v: Vec<f64> = (0..RUNS).map(|_| f()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    format!("{:.1} ({:.1}-{:.1})", v[RUNS / 2], v[0], v[RUNS - 1])
}

fn row<F: Front>() {
    outln!(
        "{:<32} {:>20} {:>20} {:>20} {:>20}",
        F::NAME,
        cell(|| yield_ns::<F>(1_000_000)),
        cell(|| remove_ns::<F>(10_000)),
        cell(|| cycle_ns::<F>(10)),
        cell(|| cycle_ns::<F>(10_000)),
    );
}

/// Prints the table.
pub fn report() {
    let build = if cfg!(debug_assertions) {
        "DEBUG build: numbers are meaningless"
    } else {
        "optimized"
    };
    outln!("axsched 0.3 BaseScheduler implementations ({build}); ns per operation, median (min-max) of {RUNS} runs");
    outln!(
        "{:<32} {:>20} {:>20} {:>20} {:>20}",
        "scheduler",
        "yield, 1M tasks",
        "remove, 10k tasks",
        "cycle, n=10",
        "cycle, n=10k"
    );
    row::<Fifo>();
    row::<Rr>();
    row::<Cfs>();
    row::<Eevdf>();
}
