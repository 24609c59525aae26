//! Scheduler micro-benchmarks: `sched`'s EEVDF runqueue against the brute-force
//! [`Oracle`] and against `axsched` 0.3.1's `CFScheduler` (the peer crate;
//! the protocol and the targets are in `docs/benchmarks.md`).
//!
//! Run with `make bench` (`cargo run -p bench --release`), or
//! `cargo run -p bench --profile bench` for the LTO build the targets were
//! set with; `-- --quick` does a smaller run (3 runs per cell, shorter
//! batches).
//!
//! # Workload
//! n runnable fair entities (n = 10, 100, 1000, 10000) on one CPU (HZ=250,
//! Linux 6.19 default features, DELAY_DEQUEUE on), nice drawn from -5..=5 and a
//! custom slice from {0.1, 0.7, 3} ms, all from a fixed xorshift seed. Before
//! anything is timed the queue runs max(20·n, 2000) tick cycles so every entity
//! has run and the lags are in steady state. The clock is passed in: a tick
//! advances it by a pseudo-random 50 µs–1 ms (as in the protocol), a wakeup or
//! sleep by 0.5–5 µs.
//!
//! # Rows (ns per operation)
//! - `enqueue`: `Rq::enqueue_task(WAKEUP)` of a sleeper onto the queue. Per
//!   batch, k = clamp(n/2, 1, 256) random queued, non-running entities are put
//!   to sleep untimed (their lag saved, delayed dequeues completed), then the k
//!   wakeups are timed: the queue grows from n-k back to n. Batched as in the protocol:
//!   one `Instant` pair per batch, its measured cost subtracted.
//! - `dequeue`: `Rq::dequeue_task(SLEEP)` of k random queued, non-running
//!   entities (n down to n-k), timed; the untimed re-enqueue restores n. With
//!   DELAY_DEQUEUE an ineligible sleeper is only marked delayed (it stays in the
//!   tree): that is the real 6.19 path and is timed as such; the share is
//!   printed below the table (`dequeue: share delayed`).
//! - `sleep+wake pair`: one `dequeue_task(SLEEP)` (plus the completing
//!   `dequeue_task` when it was delayed, as the next pick would do) and one
//!   `enqueue_task(WAKEUP)` of the same random entity; n stays constant. 64
//!   pairs per timed batch.
//! - `pick_next_task, no time`: `Rq::pick_next_task()` with the clock not
//!   moving: update_curr is a no-op, the running entity is normally re-picked
//!   (protected), so this is put_prev (tree insert) + pick + set_next (tree
//!   erase).
//! - `pick_eevdf raw, protect`: `FairRq::pick_eevdf(arena, cfg, true, false)`
//!   on snapshots of the steady-state queue (the running entity is protected,
//!   so this is mostly the RUN_TO_PARITY early return).
//! - `pick_eevdf raw, no protect`: the same with `protect = false`: the O(1)
//!   leftmost fast path or the O(log n) heap search, whichever the snapshot
//!   needs (mix printed below the table).
//! - `pick_eevdf adversarial`: a static queue whose 2n/3 earliest deadlines
//!   are ineligible (the first EEVDF prototypes' adversarial queue used n/2:
//!   in a balanced tree a 1/2 boundary ends the heap search at the root, 2/3
//!   is deep), so every pick is a heap search.
//! - `cycle tick+put+pick`: the steady state: advance the clock 50 µs–1 ms,
//!   `update_rq_clock`, `task_tick()`, `pick_next_task()` (put_prev + pick +
//!   set_next), unconditionally, as the protocol does for axsched.
//! - `cycle, uniform`: the same cycle with every entity at nice 0 and the
//!   base slice. Deadlines then follow vruntimes, so the put-back lands at the
//!   tree's right edge and the pick at its left edge, as in a CFS queue: the
//!   difference from the mixed cycle is what EEVDF's interior positions cost.
//! - `oracle cycle`: the same cycle on [`Oracle`] (`update_clock`, `tick`,
//!   `schedule`). Its pick re-sums V for every candidate, so it is O(n²) per
//!   step: few iterations at large n, and at n = 10000 it does not reach steady
//!   state first (its warm-up is time-capped).
//! - `axsched CFS cycle`: `task_tick(&curr)`, `put_prev_task(curr, true)`,
//!   `pick_next_task()` on `CFScheduler` (a `BTreeMap<(vruntime, id), Arc<_>>`),
//!   same nice spread.
//!
//! Each cell: one warm-up run, then R runs (7, or 3 with `--quick`) of a batch
//! sized to ~20 ms (~4 ms quick); printed as median (min-max) of the per-run
//! ns/op. Nothing is pinned; the VM is noisy.
//!
//! # Other tables
//! - Allocations: a counting `#[global_allocator]` wraps `System`; every heap
//!   acquisition (alloc, alloc_zeroed, realloc) during the measured runs of a
//!   cell is counted, untimed set-up work between batches included. `sched`
//!   must show 0.
//! - Pick-path mix of the steady-state cycle (`rq.fair.pick_stats`): single /
//!   buddy / protect / fast / heap, and how often the pick switched tasks.
//! - Memory ([`memory`]; alone with `--memory`): live heap bytes per task a
//!   runqueue holds, of an empty runqueue, and of a 256-CPU scheduler
//!   holding 10 000 tasks, from the same counting allocator.

// Stdout goes through `outln!` / `out!`, stderr through `errln!`
// (`sim/src/out.rs`): `println!` and `eprintln!` panic on a closed pipe.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod axfront;
mod memory;
// `outln!` / `out!` / `errln!`: printing that ends the process on a closed
// pipe instead of panicking; the one source is `sim`'s (no dependency on it).
#[path = "../../sim/src/out.rs"]
mod out;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axsched::{BaseScheduler, CFSTask, CFScheduler};
use sched::fair::{FairRq, PickStats};
use sched::oracle::Oracle;
use sched::{
    CpuId, DequeueFlags, EnqueueFlags, Rq, SchedConfig, SchedTask, TaskId, TaskParams, TaskState,
    WakeFlags,
};

// ---- allocation counting ----

struct CountingAlloc;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
/// Heap bytes allocated and not yet freed.
static LIVE: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the only addition is a relaxed counter increment.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's `GlobalAlloc::alloc` contract is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's `GlobalAlloc::alloc_zeroed` contract is passed on as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` (through us) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(new_size as u64, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` (through us) with `layout`;
        // the caller's `GlobalAlloc::realloc` contract is passed on as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn allocs() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

/// Heap bytes currently allocated (single-threaded use: the bench's).
fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed) as usize
}

// ---- deterministic PRNG ----

/// xorshift64 (Marsaglia): enough for workload shapes, no crate needed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    #[inline]
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in 0..n (multiply-shift).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in lo..hi.
    #[inline]
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo)
    }
}

const SLICES_NS: [u64; 3] = [100_000, 700_000, 3_000_000];
const TICK_DELTA: (u64, u64) = (50_000, 1_000_001);
const WAKE_DELTA: (u64, u64) = (500, 5_001);
const HZ: u32 = 250;

fn entity_params(rng: &mut Rng) -> TaskParams {
    TaskParams {
        nice: rng.below(11) as i32 - 5,
        slice_ns: SLICES_NS[rng.below(3) as usize],
        ..TaskParams::default()
    }
}

/// Nice 0 and the base slice for every entity (the `uniform` cycle row).
fn uniform_params(_rng: &mut Rng) -> TaskParams {
    TaskParams::default()
}

fn warm_cycles(n: usize) -> usize {
    (20 * n).max(2000)
}

// ---- measurement harness ----

struct Plan {
    runs: usize,
    target_ns: f64,
    overhead_ns: f64,
}

/// One cell: ns/op per run, allocations over the measured runs, and an
/// optional counter (delayed dequeues) summed over the measured runs.
#[derive(Clone, Default)]
struct Cell {
    per_op: Vec<f64>,
    allocs: u64,
    ops: u64,
    extra: u64,
}

impl Cell {
    fn median(&self) -> f64 {
        let mut v = self.per_op.clone();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    fn min(&self) -> f64 {
        self.per_op.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn max(&self) -> f64 {
        self.per_op.iter().copied().fold(0.0, f64::max)
    }
}

/// What one measured call reports: timed ns, operations, extra counter.
struct Sample {
    ns: f64,
    ops: u64,
    extra: u64,
}

/// Runs `f(units)` once to warm up and calibrate, then `plan.runs` times with
/// the unit count sized to `plan.target_ns`, between 1 and `max_units`.
/// `f`'s second argument says whether the call is measured (false: warm-up).
fn measure(
    plan: &Plan,
    warm_units: u64,
    max_units: u64,
    mut f: impl FnMut(u64, bool) -> Sample,
) -> Cell {
    let w = f(warm_units.max(1), false);
    let per_unit = (w.ns / warm_units.max(1) as f64).max(0.5);
    let units = ((plan.target_ns / per_unit) as u64).clamp(1, max_units.max(1));
    let mut cell = Cell::default();
    for _ in 0..plan.runs {
        let a0 = allocs();
        let s = f(units, true);
        cell.allocs += allocs() - a0;
        cell.ops += s.ops;
        cell.extra += s.extra;
        cell.per_op.push(s.ns / s.ops.max(1) as f64);
    }
    cell
}

/// The cost of an empty `Instant::now()` / `elapsed()` pair (median).
fn instant_overhead() -> f64 {
    let mut v: Vec<f64> = (0..20_001)
        .map(|_| {
            let t = Instant::now();
            black_box(());
            t.elapsed().as_nanos() as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

// ---- sched rig ----

struct SchedRig {
    rq: Rq,
    cfg: Arc<SchedConfig>,
    now: u64,
    rng: Rng,
    n: usize,
    /// Per-batch scratch, allocated once: ids and their dequeue results.
    slots: Vec<(TaskId, Option<SchedTask>)>,
    ids: Vec<TaskId>,
    mark: Vec<u64>,
    epoch: u64,
}

impl SchedRig {
    fn new(n: usize) -> Self {
        Self::with_params(n, entity_params)
    }

    fn with_params(n: usize, params: fn(&mut Rng) -> TaskParams) -> Self {
        let cfg = Arc::new(SchedConfig::new(1, HZ));
        let mut rq = Rq::new(CpuId::BOOT, cfg.clone(), n);
        let mut rng = Rng::new(0x5EED ^ n as u64);
        let now = 1_000_000;
        rq.update_rq_clock(now);
        for i in 0..n {
            rq.wake_up_new_task(TaskId(i as u32), SchedTask::new(params(&mut rng)));
        }
        rq.pick_next_task();
        let mut rig = SchedRig {
            rq,
            cfg,
            now,
            rng,
            n,
            slots: Vec::with_capacity(256),
            ids: Vec::with_capacity(256),
            mark: vec![0; n],
            epoch: 0,
        };
        for _ in 0..warm_cycles(n) {
            rig.cycle();
        }
        rig.rq.check().expect("runqueue invariants after warm-up");
        rig
    }

    /// The steady-state step: clock, tick, put_prev + pick + set_next.
    #[inline]
    fn cycle(&mut self) {
        self.now += self.rng.range(TICK_DELTA.0, TICK_DELTA.1);
        self.rq.update_rq_clock(self.now);
        black_box(self.rq.task_tick());
        black_box(self.rq.pick_next_task());
    }

    #[inline]
    fn nudge_clock(&mut self) {
        self.now += self.rng.range(WAKE_DELTA.0, WAKE_DELTA.1);
        self.rq.update_rq_clock(self.now);
    }

    /// A random queued entity that is not running.
    fn random_queued(&mut self) -> TaskId {
        loop {
            let id = TaskId(self.rng.below(self.n as u64) as u32);
            if self.rq.curr() != Some(id)
                && self
                    .rq
                    .task(id)
                    .is_some_and(|t| t.state == TaskState::Queued)
            {
                return id;
            }
        }
    }

    /// Fills `self.ids` with k distinct random queued, non-running entities.
    fn choose_distinct(&mut self, k: usize) {
        self.epoch += 1;
        self.ids.clear();
        while self.ids.len() < k {
            let id = self.random_queued();
            if self.mark[id.0 as usize] != self.epoch {
                self.mark[id.0 as usize] = self.epoch;
                self.ids.push(id);
            }
        }
    }

    fn batch_k(&self) -> usize {
        (self.n / 2).clamp(1, 256).min(self.n - 1)
    }

    /// `units` batches of k sleeps followed by k wakeups; times the wakeups
    /// (`time_enqueue`) or the sleeps. Two tick cycles between batches.
    fn enqueue_dequeue(&mut self, units: u64, overhead: f64, time_enqueue: bool) -> Sample {
        let k = self.batch_k();
        let (mut ns, mut delayed) = (0.0, 0);
        for _ in 0..units {
            self.choose_distinct(k);
            self.slots.clear();
            let t = Instant::now();
            for j in 0..k {
                let id = self.ids[j];
                self.nudge_clock();
                let r = self
                    .rq
                    .dequeue_task(id, DequeueFlags::SLEEP)
                    .expect("queued");
                self.slots.push((id, r));
            }
            let e = t.elapsed().as_nanos() as f64;
            if !time_enqueue {
                ns += (e - overhead).max(0.0);
            }
            for (id, r) in self.slots.iter_mut() {
                if r.is_none() {
                    delayed += 1;
                    *r = self
                        .rq
                        .dequeue_task(*id, DequeueFlags::SLEEP)
                        .expect("delayed task is held");
                }
            }
            let t = Instant::now();
            for j in 0..k {
                let (id, task) = self.slots[j];
                self.nudge_clock();
                self.rq
                    .enqueue_task(id, task.expect("fully dequeued"), EnqueueFlags::WAKEUP);
            }
            let e = t.elapsed().as_nanos() as f64;
            if time_enqueue {
                ns += (e - overhead).max(0.0);
            }
            self.cycle();
            self.cycle();
        }
        debug_assert_eq!(self.rq.nr_running() as usize, self.n);
        Sample {
            ns,
            ops: units * k as u64,
            extra: if time_enqueue { 0 } else { delayed },
        }
    }

    /// `units` batches of 64 sleep+wake pairs of random entities.
    fn pairs(&mut self, units: u64, overhead: f64) -> Sample {
        const B: usize = 64;
        let (mut ns, mut delayed) = (0.0, 0u64);
        for _ in 0..units {
            self.ids.clear();
            for _ in 0..B {
                let id = self.random_queued();
                self.ids.push(id);
            }
            let t = Instant::now();
            for j in 0..B {
                let id = self.ids[j];
                self.nudge_clock();
                let task = match self.rq.dequeue_task(id, DequeueFlags::SLEEP) {
                    Ok(Some(task)) => task,
                    Ok(None) => {
                        delayed += 1;
                        self.rq
                            .dequeue_task(id, DequeueFlags::SLEEP)
                            .ok()
                            .flatten()
                            .expect("delayed task is held")
                    }
                    Err(e) => panic!("dequeue of a queued task failed: {e:?}"),
                };
                self.rq.enqueue_task(id, task, EnqueueFlags::WAKEUP);
            }
            ns += (t.elapsed().as_nanos() as f64 - overhead).max(0.0);
            self.cycle();
        }
        Sample {
            ns,
            ops: units * B as u64,
            extra: delayed,
        }
    }

    fn pick_next_no_time(&mut self, units: u64) -> Sample {
        let t = Instant::now();
        for _ in 0..units {
            black_box(self.rq.pick_next_task());
        }
        Sample {
            ns: t.elapsed().as_nanos() as f64,
            ops: units,
            extra: 0,
        }
    }

    /// Timed cycles; `extra` = context switches. The pick-path counters of
    /// these cycles are added to `mix`.
    fn cycles(&mut self, units: u64, mix: Option<&mut PickStats>) -> Sample {
        self.rq.fair.pick_stats = PickStats::default();
        let sw = self.rq.stats.nr_switches;
        let t = Instant::now();
        for _ in 0..units {
            self.cycle();
        }
        let ns = t.elapsed().as_nanos() as f64;
        if let Some(m) = mix {
            add_stats(m, &self.rq.fair.pick_stats);
        }
        Sample {
            ns,
            ops: units,
            extra: self.rq.stats.nr_switches - sw,
        }
    }

    /// Snapshots of the fair runqueue and arena a few cycles apart: the raw
    /// pick can only be called on a copy (`rq.fair` is borrowed mutably while
    /// `rq.arena()` borrows the whole `Rq`).
    fn snapshots(&mut self, count: usize) -> Vec<(FairRq, Vec<SchedTask>)> {
        (0..count)
            .map(|_| {
                for _ in 0..self.rng.range(1, 6) {
                    self.cycle();
                }
                (self.rq.fair.clone(), self.rq.arena().to_vec())
            })
            .collect()
    }
}

/// Raw `pick_eevdf` over snapshots, 32 picks per snapshot in turn.
fn raw_picks(
    snaps: &mut [(FairRq, Vec<SchedTask>)],
    cfg: &SchedConfig,
    protect: bool,
    units: u64,
) -> Sample {
    const R: u64 = 32;
    let mut ops = 0;
    let t = Instant::now();
    for u in 0..units {
        let (fair, arena) = &mut snaps[u as usize % snaps.len()];
        for _ in 0..R {
            black_box(black_box(&mut *fair).pick_eevdf(arena, cfg, black_box(protect), false));
        }
        ops += R;
    }
    Sample {
        ns: t.elapsed().as_nanos() as f64,
        ops,
        extra: 0,
    }
}

/// Which path `pick_eevdf` takes on each snapshot.
fn raw_pick_paths(
    snaps: &[(FairRq, Vec<SchedTask>)],
    cfg: &SchedConfig,
    protect: bool,
) -> PickStats {
    let mut total = PickStats::default();
    for (fair, arena) in snaps {
        let mut f = fair.clone();
        f.pick_stats = PickStats::default();
        f.pick_eevdf(arena, cfg, protect, true);
        add_stats(&mut total, &f.pick_stats);
    }
    total
}

fn add_stats(total: &mut PickStats, s: &PickStats) {
    total.single += s.single;
    total.buddy += s.buddy;
    total.protect += s.protect;
    total.fast += s.fast;
    total.heap += s.heap;
}

/// The adversarial pick: a static queue (nothing running) whose earliest
/// deadlines belong to ineligible entities: two in three get a 0.1 ms slice
/// and lag -0.15 ms, the others a 3 ms slice and lag +0.3 ms. A 2/3 boundary
/// in deadline order lies deep in the tree (a 1/2 split would end the heap
/// search at the root). Returns the snapshot and how many of the 2n/3
/// earliest deadlines are ineligible.
fn adversarial(n: usize) -> (FairRq, Vec<SchedTask>, Arc<SchedConfig>, usize) {
    const LAG: i64 = 150_000;
    let cfg = Arc::new(SchedConfig::new(1, HZ));
    let mut rq = Rq::new(CpuId::BOOT, cfg.clone(), n);
    let mut rng = Rng::new(0xAD ^ n as u64);
    rq.update_rq_clock(1_000_000);
    let lag = |i: usize| if !i.is_multiple_of(3) { -LAG } else { 2 * LAG };
    for i in 0..n {
        let mut p = entity_params(&mut rng);
        p.slice_ns = if !i.is_multiple_of(3) {
            SLICES_NS[0]
        } else {
            SLICES_NS[2]
        };
        let mut t = SchedTask::new(p);
        t.se.vlag = lag(i);
        rq.enqueue_task(TaskId(i as u32), t, EnqueueFlags::WAKEUP);
    }
    // The first entities were placed against a small queue whose V then
    // moved: place them again against the full one.
    for i in 0..n.min(64) {
        let id = TaskId(i as u32);
        let mut t = rq
            .dequeue_task(id, DequeueFlags::SAVE)
            .expect("queued")
            .expect("not delayed");
        t.se.vlag = lag(i);
        t.se.rel_deadline = false;
        rq.enqueue_task(id, t, EnqueueFlags::WAKEUP);
    }
    rq.check().expect("adversarial queue invariants");
    let prefix = rq
        .fair_queue()
        .take(2 * n / 3)
        .filter(|&id| !rq.entity_eligible(id))
        .count();
    (rq.fair.clone(), rq.arena().to_vec(), cfg, prefix)
}

// ---- oracle rig ----

struct OracleRig {
    o: Oracle,
    now: u64,
    rng: Rng,
}

impl OracleRig {
    fn new(n: usize, warm_budget_ns: f64) -> (Self, usize) {
        let cfg = Arc::new(SchedConfig::new(1, HZ));
        let mut o = Oracle::new(cfg, n);
        let mut rng = Rng::new(0x5EED ^ n as u64);
        let now = 1_000_000;
        o.update_clock(now);
        for i in 0..n {
            o.wake_up_new_task(TaskId(i as u32), entity_params(&mut rng));
        }
        o.schedule();
        let mut rig = OracleRig { o, now, rng };
        let t = Instant::now();
        let mut done = 0;
        while done < warm_cycles(n) && (t.elapsed().as_nanos() as f64) < warm_budget_ns {
            rig.cycle();
            done += 1;
        }
        (rig, done)
    }

    #[inline]
    fn cycle(&mut self) {
        self.now += self.rng.range(TICK_DELTA.0, TICK_DELTA.1);
        self.o.update_clock(self.now);
        black_box(self.o.tick());
        black_box(self.o.schedule());
    }

    fn cycles(&mut self, units: u64) -> Sample {
        let t = Instant::now();
        for _ in 0..units {
            self.cycle();
        }
        Sample {
            ns: t.elapsed().as_nanos() as f64,
            ops: units,
            extra: 0,
        }
    }
}

// ---- axsched rig ----

struct AxRig {
    s: CFScheduler<u32>,
    curr: Option<Arc<CFSTask<u32>>>,
}

impl AxRig {
    fn new(n: usize) -> Self {
        let mut s = CFScheduler::new();
        let mut rng = Rng::new(0x5EED ^ n as u64);
        for i in 0..n {
            let t = Arc::new(CFSTask::new(i as u32));
            let p = entity_params(&mut rng);
            assert!(s.set_priority(&t, p.nice as isize));
            s.add_task(t);
        }
        let curr = s.pick_next_task();
        let mut rig = AxRig { s, curr };
        for _ in 0..warm_cycles(n) {
            rig.cycle();
        }
        rig
    }

    /// The protocol's tick+put+pick.
    #[inline]
    fn cycle(&mut self) {
        let c = self.curr.take().expect("a current task");
        black_box(self.s.task_tick(&c));
        self.s.put_prev_task(c, true);
        self.curr = self.s.pick_next_task();
    }

    fn cycles(&mut self, units: u64) -> Sample {
        let t = Instant::now();
        for _ in 0..units {
            self.cycle();
        }
        Sample {
            ns: t.elapsed().as_nanos() as f64,
            ops: units,
            extra: 0,
        }
    }
}

// ---- the run ----

const NS: [usize; 4] = [10, 100, 1000, 10_000];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Row {
    Enqueue,
    Dequeue,
    Pair,
    PickNext,
    RawProtect,
    RawNoProtect,
    RawAdversarial,
    Cycle,
    CycleUniform,
    Oracle,
    Axsched,
}

const ROWS: [(Row, &str); 11] = [
    (Row::Enqueue, "sched enqueue (WAKEUP)"),
    (Row::Dequeue, "sched dequeue (SLEEP)"),
    (Row::Pair, "sched sleep+wake pair"),
    (Row::PickNext, "sched pick_next_task, no time"),
    (Row::RawProtect, "sched pick_eevdf raw, protect"),
    (Row::RawNoProtect, "sched pick_eevdf raw, no protect"),
    (Row::RawAdversarial, "sched pick_eevdf adversarial"),
    (Row::Cycle, "sched cycle tick+put+pick"),
    (Row::CycleUniform, "sched cycle, uniform (nice 0)"),
    (Row::Oracle, "oracle cycle tick+schedule"),
    (Row::Axsched, "axsched CFS cycle tick+put+pick"),
];

/// Everything measured at one n.
struct Column {
    cells: Vec<(Row, Cell)>,
    cycle_mix: PickStats,
    cycle_switch_pct: f64,
    uniform_mix: PickStats,
    raw_np_mix: PickStats,
    adv_mix: PickStats,
    adv_prefix: usize,
    oracle_warm: usize,
}

impl Column {
    fn cell(&self, r: Row) -> &Cell {
        &self
            .cells
            .iter()
            .find(|(row, _)| *row == r)
            .expect("every row is measured")
            .1
    }
}

fn run_n(plan: &Plan, n: usize, quick: bool) -> Column {
    let mut cells = Vec::new();
    let oh = plan.overhead_ns;

    let mut rig = SchedRig::new(n);
    let c = measure(plan, 20, 1 << 20, |u, _| rig.enqueue_dequeue(u, oh, true));
    cells.push((Row::Enqueue, c));
    let c = measure(plan, 20, 1 << 20, |u, _| rig.enqueue_dequeue(u, oh, false));
    cells.push((Row::Dequeue, c));
    let c = measure(plan, 20, 1 << 20, |u, _| rig.pairs(u, oh));
    cells.push((Row::Pair, c));
    let c = measure(plan, 10_000, 1 << 26, |u, _| rig.pick_next_no_time(u));
    cells.push((Row::PickNext, c));
    rig.rq
        .check()
        .expect("runqueue invariants after enqueue/dequeue");

    let mut cycle_mix = PickStats::default();
    let c = measure(plan, 10_000, 1 << 26, |u, measured| {
        rig.cycles(u, measured.then_some(&mut cycle_mix))
    });
    let cycle_switch_pct = 100.0 * c.extra as f64 / c.ops.max(1) as f64;
    cells.push((Row::Cycle, c));
    rig.rq.check().expect("runqueue invariants after the cycle");

    let mut uni = SchedRig::with_params(n, uniform_params);
    let mut uniform_mix = PickStats::default();
    let c = measure(plan, 10_000, 1 << 26, |u, measured| {
        uni.cycles(u, measured.then_some(&mut uniform_mix))
    });
    cells.push((Row::CycleUniform, c));
    uni.rq
        .check()
        .expect("runqueue invariants after the uniform cycle");
    drop(uni);

    let cfg = rig.cfg.clone();
    let mut snaps = rig.snapshots(if quick { 4 } else { 8 });
    let c = measure(plan, 300, 1 << 22, |u, _| {
        raw_picks(&mut snaps, &cfg, true, u)
    });
    cells.push((Row::RawProtect, c));
    let c = measure(plan, 300, 1 << 22, |u, _| {
        raw_picks(&mut snaps, &cfg, false, u)
    });
    cells.push((Row::RawNoProtect, c));
    let raw_np_mix = raw_pick_paths(&snaps, &cfg, false);
    drop(snaps);
    drop(rig);

    let (fair, arena, acfg, adv_prefix) = adversarial(n);
    let mut adv = [(fair, arena)];
    let c = measure(plan, 300, 1 << 22, |u, _| {
        raw_picks(&mut adv, &acfg, false, u)
    });
    cells.push((Row::RawAdversarial, c));
    let adv_mix = raw_pick_paths(&adv, &acfg, false);
    drop(adv);

    // The oracle: O(n²) per step; cap its warm-up and iterations.
    let (mut orig, oracle_warm) = OracleRig::new(n, if quick { 2e8 } else { 1e9 });
    let c = measure(plan, 1, 1 << 22, |u, _| orig.cycles(u));
    cells.push((Row::Oracle, c));
    drop(orig);

    let mut ax = AxRig::new(n);
    let c = measure(plan, 10_000, 1 << 26, |u, _| ax.cycles(u));
    cells.push((Row::Axsched, c));

    Column {
        cells,
        cycle_mix,
        cycle_switch_pct,
        uniform_mix,
        raw_np_mix,
        adv_mix,
        adv_prefix,
        oracle_warm,
    }
}

/// ns with an SI suffix past 10^5 (`919k`, `99.5M`), so the oracle fits.
fn fmt_ns(x: f64) -> String {
    if x >= 1e7 {
        format!("{:.1}M", x / 1e6)
    } else if x >= 1e5 {
        format!("{:.0}k", x / 1e3)
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn fmt_cell(c: &Cell) -> String {
    format!(
        "{} ({}-{})",
        fmt_ns(c.median()),
        fmt_ns(c.min()),
        fmt_ns(c.max())
    )
}

fn mix(s: &PickStats) -> String {
    let t = (s.single + s.buddy + s.protect + s.fast + s.heap).max(1) as f64;
    let p = |x: u64| 100.0 * x as f64 / t;
    format!(
        "{:.0}/{:.0}/{:.0}/{:.0}/{:.1}",
        p(s.single),
        p(s.buddy),
        p(s.protect),
        p(s.fast),
        p(s.heap)
    )
}

/// The steady-state cycle alone at `n` entities (all alike if `uniform`),
/// `count` times or for about 3 seconds.
fn cycle_only(n: usize, count: Option<u64>, uniform: bool) {
    let mut rig = if uniform {
        SchedRig::with_params(n, uniform_params)
    } else {
        SchedRig::new(n)
    };
    let t = Instant::now();
    let mut done = 0u64;
    if let Some(count) = count {
        for _ in 0..count {
            rig.cycle();
        }
        outln!("n={n}: {count} cycles");
        return;
    }
    while t.elapsed().as_secs_f64() < 3.0 {
        for _ in 0..10_000 {
            rig.cycle();
        }
        done += 10_000;
    }
    let ns = t.elapsed().as_nanos() as f64 / done as f64;
    outln!("n={n}: {done} cycles, {ns:.1} ns/cycle");
}

/// `--idle-cycle-only COUNT`: one fair task on one runqueue sleeps (the
/// CPU goes idle) and wakes again, COUNT times: `schedule(true)` (dequeue
/// with SLEEP, the pick finds nothing), 0.5-5 µs later
/// `try_to_wake_up` and `pick_next_task`. Each CPU of a cross-CPU pipe
/// ping-pong does this once per round trip: the fair server stops with the
/// last fair task and starts with the next, HRTICK is cancelled at idle.
fn idle_cycle_only(count: u64) {
    let cfg = Arc::new(SchedConfig::new(1, HZ));
    let mut rq = Rq::new(CpuId::BOOT, cfg, 1);
    let mut rng = Rng::new(0x5EED);
    let mut now = 1_000_000;
    rq.update_rq_clock(now);
    let id = TaskId(0);
    rq.wake_up_new_task(id, SchedTask::new(TaskParams::default()));
    rq.pick_next_task();
    for _ in 0..count {
        now += rng.range(WAKE_DELTA.0, WAKE_DELTA.1);
        rq.update_rq_clock(now);
        let sw = rq.schedule(true);
        let task = match sw.prev_blocked {
            Some(t) => t,
            None => rq
                .dequeue_task(id, DequeueFlags::SLEEP)
                .ok()
                .flatten()
                .expect("the sleeper is held"),
        };
        now += rng.range(WAKE_DELTA.0, WAKE_DELTA.1);
        rq.update_rq_clock(now);
        black_box(rq.try_to_wake_up(id, task, WakeFlags::empty()));
        black_box(rq.pick_next_task());
    }
    outln!("idle cycle: {count} cycles");
}

/// `--smp-idle-cycle-only COUNT`: the idle cycle through `smp::Scheduler`'s
/// lifecycle calls on a 2-CPU machine whose CPU 1 runs a fair task: the fair
/// task pinned to CPU 0 sleeps (`schedule` with `PrevAction::Sleeps`, then
/// `finish_switch`), is woken from CPU 0 (`wake`) and switched in again.
/// What the runqueue summaries, the wakeup path and the switch's callbacks
/// cost beyond the runqueue's own work (no RT task exists).
fn smp_idle_cycle_only(count: u64) {
    use sched::smp::{Platform, Scheduler};
    struct Clock(AtomicU64);
    impl Platform for Clock {
        fn irq_save(&self) -> bool {
            false
        }
        fn irq_restore(&self, _: bool) {}
        fn now_ns(&self) -> u64 {
            self.0.load(Ordering::Relaxed)
        }
        fn send_resched_ipi(&self, _: sched::CpuId) {}
    }
    let cfg = Arc::new(SchedConfig::new(2, HZ));
    let s = Scheduler::new(Clock(AtomicU64::new(1_000_000)), cfg, 2, 4);
    let mut rng = Rng::new(0x5EED);
    for cpu in CpuId::range(2) {
        let mut t = SchedTask::new(TaskParams::default());
        t.cpus_allowed = sched::CpuMask::of(cpu);
        s.spawn(TaskId(cpu.as_u32()), t, cpu).expect("spawn");
        let sw = s.schedule(&mut s.cpu_rq(cpu), sched::PrevAction::Stays);
        s.finish_switch(cpu, &sw);
    }
    for _ in 0..count {
        s.platform
            .0
            .fetch_add(rng.range(WAKE_DELTA.0, WAKE_DELTA.1), Ordering::Relaxed);
        let sw = s.schedule(&mut s.cpu_rq(CpuId::BOOT), sched::PrevAction::Sleeps);
        black_box(s.finish_switch(CpuId::BOOT, &sw));
        s.platform
            .0
            .fetch_add(rng.range(WAKE_DELTA.0, WAKE_DELTA.1), Ordering::Relaxed);
        black_box(
            s.wake(TaskId(0), WakeFlags::empty(), CpuId::BOOT)
                .expect("wake"),
        );
        let sw = s.schedule(&mut s.cpu_rq(CpuId::BOOT), sched::PrevAction::Stays);
        black_box(s.finish_switch(CpuId::BOOT, &sw));
    }
    outln!("smp idle cycle: {count} cycles");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let idle_cycle: Option<fn(u64)> = match args.first().map(String::as_str) {
        Some("--idle-cycle-only") => Some(idle_cycle_only),
        Some("--smp-idle-cycle-only") => Some(smp_idle_cycle_only),
        _ => None,
    };
    if let (Some(run), 2) = (idle_cycle, args.len()) {
        match args[1].parse::<u64>() {
            Ok(count) => return run(count),
            Err(_) => {
                errln!("usage: bench {} COUNT", args[0]);
                std::process::exit(2);
            }
        }
    }
    // `--cycle-only N`: run just the steady-state cycle at n = N for ~3 s, for
    // `perf record` and friends.
    // `--cycle-only N COUNT`: exactly COUNT cycles (for instruction counts).
    // `--cycle-only-uniform`: the same with every entity at nice 0, base slice.
    if let Some(uniform) = args.first().and_then(|a| match a.as_str() {
        "--cycle-only" => Some(false),
        "--cycle-only-uniform" => Some(true),
        _ => None,
    }) {
        let n = args
            .get(1)
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n > 0);
        let count = match args.get(2) {
            None => Some(None),
            Some(c) => c.parse::<u64>().ok().map(Some),
        };
        match (n, count, args.len() <= 3) {
            (Some(n), Some(count), true) => return cycle_only(n, count, uniform),
            _ => {
                errln!(
                    "usage: bench --cycle-only[-uniform] N [COUNT]   (N entities > 0, COUNT cycles)"
                );
                std::process::exit(2);
            }
        }
    }
    if args.len() == 1 && args[0] == "--memory" {
        return memory::report(34, 22);
    }
    if args.len() == 1 && args[0] == "--axsched" {
        return axfront::report();
    }
    if args.first().map(String::as_str) == Some("--axsched-one") {
        return axfront::one(&args[1..]);
    }
    let quick = args.iter().any(|a| a == "--quick");
    if let Some(bad) = args.iter().find(|a| *a != "--quick") {
        errln!(
            "usage: bench [--quick | --memory | --axsched | --axsched-one SCHED OP N | --cycle-only[-uniform] N [COUNT] | --idle-cycle-only COUNT | --smp-idle-cycle-only COUNT]   (unknown argument {bad:?})"
        );
        std::process::exit(2);
    }
    let started = Instant::now();
    let overhead_ns = instant_overhead();
    let plan = Plan {
        runs: if quick { 3 } else { 7 },
        target_ns: if quick { 4e6 } else { 2e7 },
        overhead_ns,
    };

    let build = if cfg!(debug_assertions) {
        "DEBUG build: numbers are meaningless"
    } else {
        "optimized"
    };
    outln!(
        "sched micro-benchmarks ({build}; {})",
        if quick { "--quick" } else { "full run" }
    );
    outln!(
        "ns per operation, median (min-max) of {} runs; n = runnable fair entities on one CPU.",
        plan.runs
    );
    outln!("Workload: nice -5..5, slices {{0.1, 0.7, 3}} ms, HZ={HZ}, 6.19 default features (DELAY_DEQUEUE on);");
    outln!("tick = clock +50us..1ms; sleep/wake = clock +0.5..5us. Steady state reached before timing.");
    outln!("enqueue/dequeue: batches of k = clamp(n/2,1,256) ops (queue between n-k and n), one Instant pair per");
    outln!("batch minus its measured cost ({overhead_ns:.0} ns). pair: 64 sleep+wake pairs per batch, n constant.");
    outln!("pick_next_task, no time: put_prev + pick + set_next with the clock still (curr normally re-picked).");
    outln!("pick_eevdf raw: FairRq::pick_eevdf on snapshots of the steady-state queue (count = false);");
    outln!("adversarial: static queue whose 2n/3 earliest deadlines are ineligible (every pick = deep heap search).");
    outln!("cycle: clock +50us..1ms, task_tick, pick_next_task (put_prev + pick + set_next), every step.");
    outln!("axsched 0.3.1 CFS cycle: task_tick(&curr), put_prev_task(curr, true), pick_next_task (the protocol of docs/benchmarks.md).");
    outln!();

    let mut cols = Vec::new();
    for &n in &NS {
        let t = Instant::now();
        cols.push(run_n(&plan, n, quick));
        errln!("  n={n}: {:.1} s", t.elapsed().as_secs_f64());
    }

    const W: usize = 34;
    const C: usize = 22;
    out!("{:<W$}", "operation");
    for n in NS {
        out!("{:>C$}", format!("n={n}"));
    }
    outln!();
    outln!("{}", "-".repeat(W + C * NS.len()));
    for (row, label) in ROWS {
        out!("{label:<W$}");
        for col in &cols {
            out!("{:>C$}", fmt_cell(col.cell(row)));
        }
        outln!();
    }
    outln!("{}", "-".repeat(W + C * NS.len()));
    let ratio_row = |label: &str, f: &dyn Fn(&Column) -> f64| {
        out!("{label:<W$}");
        for col in &cols {
            out!("{:>C$}", format!("{:.2}x", f(col)));
        }
        outln!();
    };
    ratio_row("sched cycle / axsched cycle", &|c| {
        c.cell(Row::Cycle).median() / c.cell(Row::Axsched).median()
    });
    ratio_row("oracle cycle / sched cycle", &|c| {
        c.cell(Row::Oracle).median() / c.cell(Row::Cycle).median()
    });
    for (row, label) in [
        (Row::Dequeue, "dequeue: share delayed"),
        (Row::Pair, "pair: share delayed"),
    ] {
        out!("{label:<W$}");
        for col in &cols {
            let c = col.cell(row);
            out!(
                "{:>C$}",
                format!("{:.0}%", 100.0 * c.extra as f64 / c.ops.max(1) as f64)
            );
        }
        outln!();
    }

    outln!();
    outln!("Pick-path mix, % single/buddy/protect/fast/heap (rq.fair.pick_stats):");
    // One line: a label, then one cell per n.
    let text_row = |label: &str, cell: &dyn Fn(&Column, usize) -> String| {
        out!("{label:<W$}");
        for (col, n) in cols.iter().zip(NS) {
            out!("{:>C$}", cell(col, n));
        }
        outln!();
    };
    text_row("sched cycle", &|c, _| mix(&c.cycle_mix));
    text_row("sched cycle, uniform", &|c, _| mix(&c.uniform_mix));
    text_row("sched cycle: pick switched task", &|c, _| {
        format!("{:.0}%", c.cycle_switch_pct)
    });
    text_row("raw no-protect snapshots", &|c, _| mix(&c.raw_np_mix));
    text_row("adversarial queue", &|c, _| mix(&c.adv_mix));
    text_row("adversarial: ineligible of 2n/3", &|c, n| {
        format!("{} of {}", c.adv_prefix, 2 * n / 3)
    });
    text_row("oracle warm-up cycles", &|c, n| {
        format!("{} / {}", c.oracle_warm, warm_cycles(n))
    });
    outln!();
    outln!("Heap allocations during the measured runs (must be 0 for sched):");
    for (row, label) in ROWS {
        out!("{label:<W$}");
        for col in &cols {
            let c = col.cell(row);
            let s = if c.allocs == 0 {
                "0".to_string()
            } else {
                format!(
                    "{} ({:.2}/op)",
                    c.allocs,
                    c.allocs as f64 / c.ops.max(1) as f64
                )
            };
            out!("{s:>C$}");
        }
        outln!();
    }
    let sched_rows = [
        Row::Enqueue,
        Row::Dequeue,
        Row::Pair,
        Row::PickNext,
        Row::RawProtect,
        Row::RawNoProtect,
        Row::RawAdversarial,
        Row::Cycle,
    ];
    let sched_allocs: u64 = cols
        .iter()
        .flat_map(|c| sched_rows.map(|r| c.cell(r).allocs))
        .sum();

    outln!();
    outln!("Targets (docs/benchmarks.md):");
    let last = cols.last().expect("columns");
    let first = &cols[0];
    let check = |ok: bool| if ok { "met" } else { "NOT met" };
    let raw = last.cell(Row::RawNoProtect).median();
    let adv = last.cell(Row::RawAdversarial).median();
    outln!(
        "  pick <= 40 ns at n=10000: raw {:.1} ns, adversarial {:.1} ns -> {}",
        raw,
        adv,
        check(raw <= 40.0 && adv <= 40.0)
    );
    let (cy, axc) = (
        last.cell(Row::Cycle).median(),
        last.cell(Row::Axsched).median(),
    );
    outln!(
        "  cycle <= axsched CFS cycle at n=10000: {cy:.1} vs {axc:.1} ns -> {}",
        check(cy <= axc)
    );
    outln!(
        "  cycle <= 200 ns at n=10000: {cy:.1} ns -> {}",
        check(cy <= 200.0)
    );
    let c10 = first.cell(Row::Cycle).median();
    outln!(
        "  cycle <= 60 ns at n=10: {c10:.1} ns -> {}",
        check(c10 <= 60.0)
    );
    outln!(
        "  zero allocations in sched's measured loops: {sched_allocs} -> {}",
        check(sched_allocs == 0)
    );
    outln!();
    memory::report(W, C);
    errln!("total {:.1} s", started.elapsed().as_secs_f64());
}
