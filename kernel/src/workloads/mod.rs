//! Scheduler workloads the debug shell runs (`spin`, `perfpipe`, `hackbench`,
//! `cyclictest`, `wakelat`, `schbench`, `yield`): each spawns kernel threads, waits for them,
//! reports and joins every thread it spawned, also when it is stopped.
//!
//! # Stopping
//! A kernel thread cannot be killed asynchronously here (it may hold a lock or
//! sit in a wait queue), so every workload thread polls its job's stop flag
//! ([`Stop`]) at safe points and returns. The flag is set by Ctrl-C (the shell
//! reads the console while it waits, see [`Job::wait`]), by `kill %JOB` of a
//! background job ([`jobs`]) or by `kill PID` of any thread of the job; the
//! threads of one job depend on each other (a receiver waits for its
//! senders), so the whole job stops. Workloads whose threads block on each
//! other end through poison messages sent by the thread that saw the flag, so
//! no thread is left waiting forever: a killed receiver keeps receiving until
//! its senders' poisons arrive, a killed sender sends its poisons on the way
//! out. Either way the run reports itself interrupted.
//!
//! # Who spawns
//! `hackbench` and `pgbench` spawn and start their threads from a fresh
//! parent thread of the run ([`Job::spawn_parent`]), as Linux's benchmark
//! process does after the shell forked it, so the shell wakes nobody and
//! its `wakee_flips` do not grow from run to run (a new task starts with
//! its parent's). The others start their threads without waking them, so
//! the shell spawns them directly.
//!
//! # Waiting
//! The shell thread sleeps while the job runs, as Linux's harnesses do
//! (blocked in `waitpid`, `pthread_join` or a pipe read): the job's last
//! thread wakes it as it ends ([`Job::spawn`] counts them), and console input
//! wakes it for a Ctrl-C ([`Control::sleep`]). It polls only where input is
//! polled (no receive interrupt). A 10 ms poll made it a third task beside
//! the measured ones, 100 wakeups a second (docs/results/linux/conformance.md, "The
//! shell's poll and DELAY_DEQUEUE").

pub mod cyclictest;
pub mod dlperiodic;
pub mod hackbench;
pub mod jobs;
pub mod perfpipe;
pub mod pgbench;
pub mod schbench;
pub mod soak;
pub mod spin;
pub mod wakelat;
pub mod yieldpp;

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel_hal::cpu::CpuId;

use sched::TaskParams;

use crate::percpu::MAX_CPUS;
use crate::sync::SpinLock;
use crate::task::{self, ExitStats, Tid};

/// One number a workload measured, for `compare`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Metric {
    /// Name in `compare`'s run lines and table (`time_s`, `rps`, ...).
    pub name: &'static str,
    /// The value.
    pub value: f64,
    /// Lower-is-better time/latency (Amean) or higher-is-better rate (Hmean).
    pub kind: ::shell::compare::Kind,
}

impl Metric {
    /// A time or latency (lower is better).
    pub fn lower(name: &'static str, value: f64) -> Self {
        Metric {
            name,
            value,
            kind: ::shell::compare::Kind::Lower,
        }
    }

    /// A rate (higher is better).
    pub fn higher(name: &'static str, value: f64) -> Self {
        Metric {
            name,
            value,
            kind: ::shell::compare::Kind::Higher,
        }
    }
}

/// What one workload run measured: its metrics, and whether it was stopped
/// early (then the metrics describe a partial run).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics {
    /// The metrics, in print order.
    pub list: Vec<Metric>,
    /// Stopped by Ctrl-C or `kill`.
    pub interrupted: bool,
}

/// Runs a workload command (`spin`, `hackbench`, `schbench`, `pgbench`,
/// `cyclictest`, `wakelat`, `perfpipe`, `yield`), printing its usual report to `out`, and returns
/// its metrics. Any other command is refused.
pub fn run_command(
    cmd: &::shell::Command,
    ctl: &mut dyn Control,
    out: &mut dyn core::fmt::Write,
) -> Result<Metrics, String> {
    use ::shell::Command as C;
    let (name, r) = match cmd {
        C::Spin(p) => ("spin", spin::run(p, ctl, out).map(|r| r.metrics())),
        C::Hackbench(p) => (
            "hackbench",
            hackbench::run(*p, ctl, out).map(|r| r.metrics()),
        ),
        C::Schbench(p) => ("schbench", schbench::run(*p, ctl, out).map(|r| r.metrics())),
        C::Pgbench(p) => ("pgbench", pgbench::run(*p, ctl, out).map(|r| r.metrics())),
        C::Cyclictest(p) => (
            "cyclictest",
            cyclictest::run(*p, ctl, out).map(|r| r.metrics()),
        ),
        C::Wakelat(p) => ("wakelat", wakelat::run(*p, ctl, out).map(|r| r.metrics())),
        C::Perfpipe(p) => ("perfpipe", perfpipe::run(*p, ctl, out).map(|r| r.metrics())),
        C::Yield(p) => ("yield", yieldpp::run(*p, ctl, out).map(|r| r.metrics())),
        other => return Err(alloc::format!("{} is not a workload", other.name())),
    };
    r.map_err(|e| alloc::format!("{name}: {e}"))
}

/// What a workload needs from the shell while it waits.
pub trait Control {
    /// Whether [`Control::started`] wants every thread of a run whose
    /// workers a parent thread spawns ([`Job::spawn_parent`]): then
    /// [`Job::wait`] sleeps until the parent has spawned them all (it wakes
    /// the waiter once) before it calls `started`. Only a background job
    /// wants them (for `jobs`, `nice %N`, `taskset %N`); otherwise the shell
    /// sleeps through the run's start, as a Linux shell in `waitpid` does.
    fn wants_threads(&self) -> bool {
        false
    }

    /// Whether the user pressed Ctrl-C since the last call (reads the console
    /// without blocking; other input stays queued for the prompt), or, for a
    /// background job, whether it was killed.
    fn interrupted(&mut self) -> bool;

    /// Every thread of the run was spawned and started: called once per
    /// [`Job::wait`], before it waits (not when the run failed to start).
    /// A background job learns its thread ids here.
    fn started(&mut self, _threads: &[Tid]) {}

    /// Sleeps until `done()` holds, or less if [`Control::interrupted`] may
    /// have news sooner. `done` is checked with the caller marked sleeping,
    /// and whoever makes it true wakes the caller (the job's last thread, as
    /// it ends), so that wakeup is never lost; any other wakeup returns
    /// early too (the caller loops). By default it also returns after
    /// `poll_ms` (a control that can only be polled).
    fn sleep(&mut self, poll_ms: u64, done: &dyn Fn() -> bool) {
        poll_sleep(poll_ms, done);
    }
}

/// [`sleep_unless`] for at most `poll_ms` (the default [`Control::sleep`]).
pub fn poll_sleep(poll_ms: u64, done: &dyn Fn() -> bool) {
    let poll_end = crate::arch::now_ns().saturating_add(poll_ms.saturating_mul(1_000_000));
    sleep_unless(done, poll_end);
}

/// Sleeps once until woken or the clock reads `deadline_ns` (`u64::MAX`:
/// no timer), unless `done()` already holds; `done` is checked with the
/// thread marked sleeping, so a wakeup after it made `done` true cannot be
/// lost (the default [`Control::sleep`]).
pub fn sleep_unless(done: &dyn Fn() -> bool, deadline_ns: u64) {
    crate::sched::set_current_state(task::ThreadState::Sleeping);
    if done() {
        crate::sched::set_current_state(task::ThreadState::Running);
    } else {
        task::sleep_prepared_until_ns(deadline_ns);
    }
}

/// A job's stop flag, as its threads see it.
#[derive(Clone)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Whether the job was asked to stop.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Threads of running jobs, by slot index, with their job's flag (for `kill`).
static REGISTRY: SpinLock<Vec<(u32, Arc<AtomicBool>)>> = SpinLock::named("workloads", Vec::new());

/// Sets the stop flag of the job thread `idx` belongs to; false if it is no
/// workload thread.
pub fn stop_thread(idx: u32) -> bool {
    let reg = REGISTRY.lock();
    match reg.iter().find(|(i, _)| *i == idx) {
        Some((_, f)) => {
            f.store(true, Ordering::Relaxed);
            true
        }
        None => false,
    }
}

/// Free thread slots.
pub fn free_slots() -> usize {
    (task::MAX_THREADS - MAX_CPUS).saturating_sub(task::nr_threads())
}

/// Heap a spawned thread costs beyond its stack (closure, `Arc`s, registry).
const THREAD_OVERHEAD: usize = 1024;
/// Heap left to the rest of the kernel when a workload sizes itself: 8 MiB,
/// or a quarter of the heap on a small machine.
fn heap_reserve() -> usize {
    let (used, free) = crate::heap::stats();
    (8 << 20).min((used + free) / 4)
}

/// Refuses a run before anything is started: `threads` thread slots must be
/// free, and the heap must hold their stacks plus `extra_bytes` (buffers,
/// channels) with [`heap_reserve`] to spare. The error says what is short.
pub fn check_resources(threads: usize, extra_bytes: usize) -> Result<(), String> {
    let free = free_slots();
    if threads > free {
        return Err(alloc::format!(
            "{threads} threads needed, {free} thread slots free (of {}); use fewer",
            task::MAX_THREADS - MAX_CPUS
        ));
    }
    let need = threads
        .saturating_mul(task::STACK_SIZE + THREAD_OVERHEAD)
        .saturating_add(extra_bytes);
    let (_, heap_free) = crate::heap::stats();
    let reserve = heap_reserve();
    if need.saturating_add(reserve) > heap_free {
        return Err(alloc::format!(
            "needs about {} MiB of memory ({threads} threads of {} KiB stack + {} KiB of buffers, and {} MiB kept free for the kernel), {} MiB free",
            need.div_ceil(1 << 20),
            task::STACK_SIZE / 1024,
            extra_bytes / 1024,
            reserve.div_ceil(1 << 20),
            heap_free >> 20
        ));
    }
    Ok(())
}

/// A [`Control`] that never interrupts (in-kernel tests run workloads with it).
pub struct NoInterrupt;

impl Control for NoInterrupt {
    fn interrupted(&mut self) -> bool {
        false
    }

    /// Nothing to poll for: asleep until the job's end.
    fn sleep(&mut self, _poll_ms: u64, done: &dyn Fn() -> bool) {
        sleep_unless(done, u64::MAX);
    }
}

/// Buckets of a [`Hist`]: exact below 64, then 8 per power of two.
const BUCKETS: usize = 64 + 40 * 8;

/// Histogram bucket of `v`.
fn bucket(v: u64) -> usize {
    if v < 64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() as usize; // >= 6
    let sub = ((v >> (e - 3)) & 7) as usize;
    (64 + (e - 6) * 8 + sub).min(BUCKETS - 1)
}

/// Lower bound of a bucket.
fn bucket_value(b: usize) -> u64 {
    if b < 64 {
        return b as u64;
    }
    let e = (b - 64) / 8 + 6;
    let sub = ((b - 64) % 8) as u64;
    (8 + sub) << (e - 3)
}

/// A latency histogram (log-linear like fio's and schbench's: 8 buckets per
/// power of two, so a percentile is within 12.5 % of the sample), of atomics,
/// preallocated: recording never allocates and many threads may record.
pub struct Hist {
    b: Vec<AtomicU64>,
    n: AtomicU64,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl Default for Hist {
    fn default() -> Self {
        Self::new()
    }
}

impl Hist {
    /// An empty histogram.
    pub fn new() -> Self {
        Hist {
            b: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            n: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }

    /// Records one sample.
    pub fn add(&self, v: u64) {
        self.b[bucket(v)].fetch_add(1, Ordering::Relaxed);
        self.n.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(v, Ordering::Relaxed);
        self.min.fetch_min(v, Ordering::Relaxed);
        self.max.fetch_max(v, Ordering::Relaxed);
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.n.load(Ordering::Relaxed)
    }

    /// Smallest sample (0 if none).
    pub fn min(&self) -> u64 {
        match self.min.load(Ordering::Relaxed) {
            u64::MAX => 0,
            v => v,
        }
    }

    /// Largest sample.
    pub fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    /// Mean sample (0 if none).
    pub fn mean(&self) -> u64 {
        self.sum.load(Ordering::Relaxed) / self.count().max(1)
    }

    /// The `permille`-th per mille (999: p99.9): the lower bound of the
    /// bucket holding it, clamped to [min, max].
    pub fn percentile(&self, permille: u64) -> u64 {
        let total = self.count();
        if total == 0 {
            return 0;
        }
        let want = (total * permille).div_ceil(1000).max(1);
        let mut seen = 0;
        for (i, c) in self.b.iter().enumerate() {
            seen += c.load(Ordering::Relaxed);
            if seen >= want {
                return bucket_value(i).clamp(self.min(), self.max());
            }
        }
        self.max()
    }

    /// Samples at or below `v`'s bucket.
    pub fn count_upto(&self, v: u64) -> u64 {
        self.b[..=bucket(v)]
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// Prints schbench's percentile block: `label percentiles (usec) runtime
    /// N (s) (M total samples)`, the p50/p90/p99/p99.9 rows with the samples
    /// of each row, and `min=, max=`; samples are in ns, printed in us.
    pub fn print_schbench(&self, out: &mut dyn core::fmt::Write, label: &str, runtime_s: u64) {
        let _ = writeln!(
            out,
            "{label} percentiles (usec) runtime {runtime_s} (s) ({} total samples)",
            self.count()
        );
        let mut below = 0;
        for (pm, name) in [(500, "50.0"), (900, "90.0"), (990, "99.0"), (999, "99.9")] {
            let v = self.percentile(pm);
            let upto = self.count_upto(v);
            let _ = writeln!(
                out,
                "\t  {name}th: {:<10} ({} samples)",
                v / 1000,
                upto.saturating_sub(below)
            );
            below = below.max(upto);
        }
        let _ = writeln!(
            out,
            "\t  min={}, max={}",
            self.min() / 1000,
            self.max() / 1000
        );
    }
}

/// Busy-works (no sleeping) for `ns` of wall time.
pub fn work_ns(ns: u64) {
    let until = crate::arch::now_ns() + ns;
    while crate::arch::now_ns() < until {
        burn(64);
    }
}

/// The threads of a job that have not ended, and who waits for them (a
/// background job's leader is counted so too, for `wait` and `fg`).
pub(crate) struct Live {
    /// Threads spawned whose workload function has not returned.
    count: AtomicU32,
    /// The waiting thread (slot index), [`NO_WAITER`] before [`Job::wait`].
    waiter: AtomicU32,
}

/// [`Live::waiter`] before anyone waits.
const NO_WAITER: u32 = u32::MAX;

impl Live {
    /// `count` threads running, nobody waiting yet.
    pub(crate) const fn new(count: u32) -> Self {
        Live {
            count: AtomicU32::new(count),
            waiter: AtomicU32::new(NO_WAITER),
        }
    }

    /// The current thread is the one to wake when the count reaches zero;
    /// before it checks [`Live::done`] (and sleeps).
    pub(crate) fn set_waiter(&self) {
        self.waiter.store(task::current_idx(), Ordering::SeqCst);
    }

    /// One thread's workload function returned: the last one wakes the
    /// waiter (Linux's exit notification of a waiting parent). No allocation:
    /// an atomic decrement and a `try_to_wake_up`. SeqCst pairs with
    /// [`Job::wait`]'s store of the waiter and its check of the count, made
    /// after it marked itself sleeping: either it sees the count at zero or
    /// this sees it (asleep, or about to be) and wakes it.
    pub(crate) fn thread_done(&self) {
        if self.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            let w = self.waiter.load(Ordering::SeqCst);
            if w != NO_WAITER {
                crate::sched::try_to_wake_up(w, sched::WakeFlags::empty());
            }
        }
    }

    /// Whether every thread's workload function returned.
    pub(crate) fn done(&self) -> bool {
        self.count.load(Ordering::SeqCst) == 0
    }
}

/// What a run's parent thread ([`Job::spawn_parent`]) tells the thread
/// that waits for it: when it released the tasks (the run's start), and
/// why it could not spawn them all.
pub struct ParentReport {
    start_ns: AtomicU64,
    error: SpinLock<Option<String>>,
}

impl Default for ParentReport {
    fn default() -> Self {
        Self::new()
    }
}

impl ParentReport {
    /// Nothing reported yet.
    pub const fn new() -> Self {
        ParentReport {
            start_ns: AtomicU64::new(0),
            error: SpinLock::named("parent report", None),
        }
    }

    /// The parent releases the tasks now: the run starts.
    pub fn released(&self) {
        self.start_ns
            .store(crate::arch::now_ns(), Ordering::Relaxed);
    }

    /// The parent's spawn error, if one failed.
    pub fn set_error(&self, e: Option<String>) {
        *self.error.lock() = e;
    }

    /// When the run started (0 if the parent never released the tasks).
    pub fn start_ns(&self) -> u64 {
        self.start_ns.load(Ordering::Relaxed)
    }

    /// The spawn error, once.
    pub fn take_error(&self) -> Option<String> {
        self.error.lock().take()
    }
}

/// The workers a run's parent thread spawned ([`Job::spawn_parent`]), as
/// the job that spawned the parent sees them.
struct Roster {
    /// Their ids, in spawn order.
    threads: SpinLock<Vec<Tid>>,
    /// The parent spawned every worker, or gave up, or ended.
    complete: AtomicBool,
    /// The job's waiter wants to be woken when `complete` is set
    /// ([`Control::wants_threads`]).
    wanted: AtomicBool,
}

/// The threads of one workload run. Dropping it stops and joins them all.
pub struct Job {
    stop: Arc<AtomicBool>,
    live: Arc<Live>,
    threads: Vec<Tid>,
    interrupted: bool,
    /// A job with a parent thread: the workers it spawned.
    roster: Option<Arc<Roster>>,
    /// A parent thread's job of workers: the roster it fills and the live
    /// count of the job that spawned the parent (whose waiter it wakes).
    reports_to: Option<(Arc<Roster>, Arc<Live>)>,
}

impl Job {
    /// A job with no threads yet.
    pub fn new() -> Self {
        Job {
            stop: Arc::new(AtomicBool::new(false)),
            live: Arc::new(Live::new(0)),
            threads: Vec::new(),
            interrupted: false,
            roster: None,
            reports_to: None,
        }
    }

    /// The job's stop flag, for its threads.
    pub fn stop_flag(&self) -> Stop {
        Stop(self.stop.clone())
    }

    /// Asks every thread to stop.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Spawns the run's parent thread, a fresh task that spawns the
    /// workers itself (`f` gets a [`Job`] of its own for them, sharing this
    /// job's stop flag, so Ctrl-C and `kill` reach them), releases them and
    /// waits for them, as a Linux benchmark's main process does after the
    /// shell forked it. Why it matters: a new task starts with its
    /// parent's `wakee_flips` (Linux's fork copies `task_struct`, and
    /// `__sched_fork()` leaves `wakee_flips`, `last_wakee` and
    /// `wakee_flip_decay_ts` as they are), which `wake_wide()` compares.
    /// The shell thread lives across runs: when it released the workers
    /// itself, it gained a flip per worker each run (about 200 after a
    /// few hackbench runs) and every later run's workers inherited them.
    /// The parent has woken nobody when it spawns them. It starts with the
    /// shell's flips (it is the shell's child), and the shell no longer
    /// wakes anybody, so those stay near 0 here (docs/results/linux/three-way.md,
    /// "hackbench's workers and the shell's wakee_flips", with what that
    /// does to the placement).
    ///
    /// This job holds and joins the parent; the parent joins its workers
    /// before it returns. `kill` of the parent or of any worker stops the
    /// whole run; [`Control::started`] lists the parent and, for a control
    /// that [wants them](Control::wants_threads), the workers (the parent
    /// calls [`Job::spawned`] once it spawned them all).
    pub fn spawn_parent<F>(&mut self, name: &'static str, f: F) -> Result<Tid, String>
    where
        F: FnOnce(Job) + Send + 'static,
    {
        let roster = Arc::new(Roster {
            threads: SpinLock::named("workload roster", Vec::new()),
            complete: AtomicBool::new(false),
            wanted: AtomicBool::new(false),
        });
        let mut workers = Job::new();
        workers.stop = self.stop.clone();
        workers.reports_to = Some((roster.clone(), self.live.clone()));
        self.roster = Some(roster);
        self.spawn(name, TaskParams::default(), None, move || {
            f(workers);
        })
    }

    /// A parent thread's job of workers: every worker is spawned (or the
    /// parent gave up). Wakes the waiter of the parent's job only if its
    /// control [wants the threads](Control::wants_threads). Also done when
    /// this job is dropped. Nothing for any other job.
    pub fn spawned(&self) {
        if let Some((roster, outer)) = &self.reports_to {
            if !roster.complete.swap(true, Ordering::SeqCst) && roster.wanted.load(Ordering::SeqCst)
            {
                let w = outer.waiter.load(Ordering::SeqCst);
                if w != NO_WAITER {
                    crate::sched::try_to_wake_up(w, sched::WakeFlags::empty());
                }
            }
        }
    }

    /// Spawns one thread of the job, allowed on `cpu` only if given, else on
    /// the CPUs the spawning thread may use (the balancer places it).
    pub fn spawn<F>(
        &mut self,
        name: &'static str,
        params: TaskParams,
        cpu: Option<CpuId>,
        f: F,
    ) -> Result<Tid, String>
    where
        F: FnOnce() + Send + 'static,
    {
        let mask = match cpu {
            Some(c) => {
                let online = crate::sched::online_mask();
                if !online.has(c) {
                    return Err(alloc::format!(
                        "CPU {c} is not online (online: {})",
                        ::shell::CpuList(online)
                    ));
                }
                crate::cpumask::only(c)
            }
            None => task::current().cpus_allowed(),
        };
        self.threads.reserve(1);
        REGISTRY.lock().reserve(1);
        // Counted before it can run (and end); uncounted if it never starts.
        self.live.count.fetch_add(1, Ordering::SeqCst);
        let live = self.live.clone();
        let tid = task::spawn_on(name, params, mask, move || {
            f();
            live.thread_done();
        })
        .map_err(|e| {
            self.live.count.fetch_sub(1, Ordering::SeqCst);
            alloc::format!("cannot spawn: {e:?}")
        })?;
        self.threads.push(tid);
        REGISTRY.lock().push((tid.idx(), self.stop.clone()));
        if let Some((roster, _)) = &self.reports_to {
            roster.threads.lock().push(tid);
        }
        Ok(tid)
    }

    /// Sleeps until every thread's work is done, woken by the last one as
    /// it ends, or by `ctl` for a Ctrl-C (which stops the job); a `ctl` that
    /// can only be polled is checked every `poll_ms` ([`Control::sleep`]).
    /// Returns whether it was interrupted: by `ctl`, or by `kill` of one of
    /// its threads (the stop flag). So the shell is no third task beside the
    /// measured ones, as Linux's harness (blocked in `waitpid` or a pipe
    /// read) is none: a 10 ms poll had cut the duty-cycle task's delayed
    /// dequeues from 104 to 78 a second and what NO_DELAY_DEQUEUE changes in
    /// its share from −0.5 to −0.2 points (docs/results/linux/conformance.md, "The
    /// shell's poll and DELAY_DEQUEUE").
    ///
    /// With a parent thread ([`Job::spawn_parent`]) and a control that
    /// [wants every thread](Control::wants_threads), `started` waits for
    /// the parent's [`Job::spawned`] (or its end).
    pub fn wait(&mut self, ctl: &mut dyn Control, poll_ms: u64) -> bool {
        let roster = self.roster.clone().filter(|_| ctl.wants_threads());
        if let Some(r) = &roster {
            r.wanted.store(true, Ordering::SeqCst);
        }
        self.live.set_waiter();
        let live = self.live.clone();
        // A job stopped before it waits (it failed to start) is not
        // announced.
        let mut told = self.stop.load(Ordering::Relaxed);
        loop {
            if !told
                && roster
                    .as_ref()
                    .is_none_or(|r| r.complete.load(Ordering::SeqCst) || live.done())
            {
                told = true;
                let mut all = self.threads.clone();
                if let Some(r) = &self.roster {
                    all.extend(r.threads.lock().iter().copied());
                }
                ctl.started(&all);
            }
            if live.done() {
                return self.interrupted || self.stop.load(Ordering::Relaxed);
            }
            if ctl.interrupted() {
                self.interrupted = true;
                self.stop();
            }
            let announced = told;
            ctl.sleep(poll_ms, &|| {
                live.done()
                    || (!announced
                        && roster
                            .as_ref()
                            .is_some_and(|r| r.complete.load(Ordering::SeqCst)))
            });
        }
    }

    /// Joins every thread (in spawn order) and returns their exit statistics.
    pub fn join(mut self) -> Vec<ExitStats> {
        self.join_all()
    }

    fn join_all(&mut self) -> Vec<ExitStats> {
        let mut out = Vec::with_capacity(self.threads.len());
        for tid in core::mem::take(&mut self.threads) {
            let st = task::join(tid).unwrap_or_default();
            REGISTRY.lock().retain(|(i, _)| *i != tid.idx());
            out.push(st);
        }
        out
    }
}

impl Default for Job {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.spawned();
        if !self.threads.is_empty() {
            self.stop();
            self.join_all();
        }
    }
}

/// Spins for about `iters` loop iterations (a little CPU work), the way a
/// user program computes: plain arithmetic, no `spin_loop` hint. The hint is
/// PAUSE on x86_64 and YIELD on aarch64, and QEMU's TCG leaves its
/// translated-code loop at each one, which made a spinning thread cost
/// about 40 s of host CPU per guest second under `-icount`.
#[inline]
pub fn burn(iters: u32) {
    let mut x = core::hint::black_box(0u32);
    for i in 0..iters {
        x = core::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    core::hint::black_box(x);
}

/// `x` per mille of `total`, as `12.3`.
pub struct Permille(pub u64);

impl core::fmt::Display for Permille {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.{}", self.0 / 10, self.0 % 10)
    }
}
