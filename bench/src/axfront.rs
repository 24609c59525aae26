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

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use axsched::{BaseScheduler, CFSTask, CFScheduler, FifoScheduler, FifoTask, RRScheduler, RRTask};
use sched::axsched::{EevdfScheduler, EevdfTask};

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

fn yield_ns<F: Front>(n: usize) -> f64 {
    let (mut s, _) = filled::<F>(n);
    let count = 3 * n;
    let t0 = Instant::now();
    for _ in 0..count {
        let t = s.pick_next_task().expect("a task");
        s.put_prev_task(t, false);
    }
    t0.elapsed().as_nanos() as f64 / count as f64
}

fn remove_ns<F: Front>(n: usize) -> f64 {
    let (mut s, ts) = filled::<F>(n);
    let t0 = Instant::now();
    for t in ts.iter().rev() {
        black_box(s.remove_task(t).expect("queued"));
    }
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
    for _ in 0..count {
        black_box(s.task_tick(&curr));
        s.put_prev_task(curr, true);
        curr = s.pick_next_task().expect("a task");
    }
    t0.elapsed().as_nanos() as f64 / count as f64
}

fn cell(f: impl Fn() -> f64) -> String {
    let mut v: Vec<f64> = (0..RUNS).map(|_| f()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    format!("{:.1} ({:.1}-{:.1})", v[RUNS / 2], v[0], v[RUNS - 1])
}

fn row<F: Front>() {
    println!(
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
    println!("axsched 0.3 BaseScheduler implementations ({build}); ns per operation, median (min-max) of {RUNS} runs");
    println!(
        "{:<32} {:>20} {:>20} {:>20} {:>20}",
        "scheduler", "yield, 1M tasks", "remove, 10k tasks", "cycle, n=10", "cycle, n=10k"
    );
    row::<Fifo>();
    row::<Rr>();
    row::<Cfs>();
    row::<Eevdf>();
}
