//! `soak [-t THREADS] [-s SECS] [-r SEED]`: an SMP soak of the scheduler.
//! THREADS worker threads take random actions for SECS seconds while the
//! shell thread (the controller, SCHED_FIFO above every worker) flips
//! features and the preemption model and checks the scheduler's invariants.
//!
//! # Actions
//! Each worker, in a loop: busy work of up to [`MAX_WORK_NS`] (with
//! `cond_resched()` points), then one of: sleep (timer), wait for a token
//! (blocks until another thread wakes it), wake a random worker, yield,
//! change its nice value and slice, take another policy (BATCH, IDLE, FIFO,
//! RR) for a few rounds, change its affinity, spin with preemption disabled,
//! or exit (the controller joins it and spawns a new worker in its place).
//! The controller also changes random workers' affinity and nice value from
//! outside, flips a random SCHED_FEAT flag and switches the preemption model
//! (none / voluntary / full / lazy), and every [`HOTPLUG_NS`] takes a random
//! CPU other than 0 offline or brings it back (`crate::hotplug`, from its
//! own PRNG stream, so the other flips of a seed stay what they were); every
//! CPU is back online before the final checks. Every choice comes from a PRNG seeded
//! with SEED (per worker: SEED, the worker's number and its incarnation), so
//! a failing run's actions can be replayed with its seed; the interleaving
//! depends on timing, so a replay is likely, not certain, to fail the same way.
//!
//! # Checks (every [`CHECK_NS`] and at the end)
//! - `sched::smp::Scheduler::check`: every runqueue's invariants (tree order
//!   and augmentation, the avg_vruntime sums, Σ w·lag = 0, nr_running against
//!   what is queued, the slots) and no task held by two runqueues, all under
//!   every runqueue lock at once, with scratch memory allocated beforehand.
//! - No lost wakeup: a waiting worker whose token is set (a waker set it,
//!   then called `try_to_wake_up`), with no waker still in that window, that
//!   is still asleep (`ThreadState::Sleeping`, not queued, not on a CPU) at two scans
//!   [`LOST_NS`] apart within the same wait was woken and never ran. The
//!   controller's sweep that wakes forgotten waiters leaves such a worker
//!   alone, so a lost wakeup stays visible.
//! - Progress: the workers' action count must grow within every
//!   [`STUCK_NS`]; at the end every worker must exit, each exit within
//!   [`STUCK_NS`] of the previous one (no single total deadline).
//! - Soft lockups (`kernel.softlockup_thresh_ms`, set to [`LOCKUP_MS`] for
//!   the run): each one reported is a violation.
//! - At the end, CPU time: the runtime of every thread (live ones, and the
//!   workers from their exit statistics) plus every CPU's idle time must be
//!   the elapsed time × CPUs within 1 %, less the time CPUs spent offline.
//! - CPU hotplug: a request refused for a reason other than a CPU that does
//!   not reach its idle thread in time (`HotplugError::Timeout`: a worker
//!   there spinning under the `none` model) is a violation.
//!
//! - Under failing allocations (`sysctl debug.fail_alloc=PERCENT,SEED`):
//!   a spawn that fails (no memory for the stack or the scheduler state) is
//!   counted and retried at the next poll, never fatal; at the end, the heap
//!   in use (within [`LEAK_SLACK_BYTES`]) and the live threads must be back
//!   where they were before the workers started (nothing leaked, no thread
//!   lost).
//!
//! The stall watchdog is switched off for the run: SCHED_IDLE and nice +10
//! workers among hundreds of runnable ones legitimately wait for seconds.
//! Everything changed (features, preemption model, sysctls, the shell
//! thread's policy) is put back at the end, also after an error.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel_hal::cpu::CpuId;

use ::shell::Soak;
use sched::tunables::Tunable;
use sched::{CpuMask, Feature, Policy, PreemptMode, TaskParams, TaskState, WakeFlags};

use crate::shell::compare::Counters;
use crate::task::{self, ThreadState, Tid};
use crate::{arch, percpu};

/// No thread (a worker between two incarnations).
const NONE: u32 = u32::MAX;
/// Longest busy work between two actions.
const MAX_WORK_NS: u64 = 100_000;
/// Longest timed sleep.
const MAX_SLEEP_NS: u64 = 2_000_000;
/// Longest preempt-disabled spin.
const MAX_ATOMIC_NS: u64 = 50_000;
/// Rounds a worker keeps a policy other than NORMAL (bounds how much of the
/// machine FIFO workers can take, and how long IDLE ones starve).
const MAX_SPECIAL_ROUNDS: u64 = 4;
/// The controller's poll period.
const POLL_MS: u64 = 5;
/// Between two configuration flips.
const FLIP_NS: u64 = 100_000_000;
/// Between two CPU hotplug operations.
const HOTPLUG_NS: u64 = 150_000_000;
/// Between two sweeps that wake workers waiting with no token.
const SWEEP_NS: u64 = 50_000_000;
/// Between two invariant checks.
const CHECK_NS: u64 = 250_000_000;
/// Between two progress lines.
const REPORT_NS: u64 = 10_000_000_000;
/// A worker asleep with its token set for this long in one wait lost its
/// wakeup. The only legitimate window is a waker between setting the token
/// and `try_to_wake_up` (preemption disabled: microseconds), plus the time a
/// host keeps the waker's vCPU off its core in that window (~15 ms seen on
/// a loaded host, seconds allowed: 5 s, as for every wait on another CPU).
/// A lost wakeup stays lost, so a longer bound finds the same ones.
const LOST_NS: u64 = 5_000_000_000;
/// No worker action (or, at the end, no worker exit) for this long is a
/// deadlock. An action is at most MAX_WORK_NS of work plus a 2 ms sleep,
/// and hundreds of workers act at once; 10 s is far above any slowdown a
/// loaded host causes.
const STUCK_NS: u64 = 10_000_000_000;
/// `kernel.softlockup_thresh_ms` during the run: a CPU with work queued
/// switches within a slice (full, lazy), at the running worker's next
/// block, yield or `cond_resched()` (none, voluntary: within MAX_WORK_NS
/// plus MAX_ATOMIC_NS), or when a FIFO worker's few rounds end.
const LOCKUP_MS: u64 = 10_000;
/// The controller's SCHED_FIFO priority (workers use 1..=50).
const CONTROLLER_PRIO: u8 = 90;
/// Heap growth over a run that is not called a leak: a one-time growth of
/// 448 bytes was seen once in an ordinary soak (the first after boot; its
/// owner was not found). A leak per failed spawn under failing allocations
/// (hundreds of them in a short soak) of even a few bytes is above it.
const LEAK_SLACK_BYTES: usize = 1024;
/// Violation lines printed at most (the count goes on).
const MAX_PRINTED: u64 = 20;
/// Worker actions by weight (out of 1000).
const ACTIONS: [(u64, Action); 9] = [
    (300, Action::Sleep),
    (150, Action::Wait),
    (150, Action::Wake),
    (100, Action::Yield),
    (80, Action::Nice),
    (50, Action::Policy),
    (70, Action::Affinity),
    (90, Action::Atomic),
    (10, Action::Exit),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Sleep,
    Wait,
    Wake,
    Yield,
    Nice,
    Policy,
    Affinity,
    Atomic,
    Exit,
}

/// splitmix64: small, fast, and every seed (0 included) gives a good stream.
#[derive(Default)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; the modulo bias is irrelevant here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A random non-empty subset of `mask` (itself if the draw is empty).
    /// One draw per non-empty word of the mask (so a seed gives the same
    /// sequence as before masks grew past 64 CPUs, on up to 64 of them).
    fn mask(&mut self, mask: &CpuMask) -> CpuMask {
        let mut w = mask.words();
        for word in w.iter_mut().filter(|w| **w != 0) {
            *word &= self.next();
        }
        match CpuMask::from_words(w) {
            m if m.is_empty() => *mask,
            m => m,
        }
    }

    fn action(&mut self) -> Action {
        let mut r = self.below(1000);
        for (w, a) in ACTIONS {
            if r < w {
                return a;
            }
            r -= w;
        }
        Action::Exit
    }
}

/// One worker's place, kept across its incarnations.
#[derive(Default)]
struct Worker {
    /// Thread slot of the live incarnation, or [`NONE`].
    idx: AtomicU32,
    /// Set by a waker before it calls `try_to_wake_up`, taken by the worker.
    token: AtomicBool,
    /// In [`wait`].
    waiting: AtomicBool,
    /// Waits started (tells one wait from the next).
    wait_seq: AtomicU64,
    /// Wakers between reading `idx` and the end of their `try_to_wake_up`.
    wakers: AtomicU32,
    /// The incarnation has finished (no waker can reach it any more).
    done: AtomicBool,
}

/// What the workers and the controller share.
struct Shared {
    stop: AtomicBool,
    workers: Vec<Worker>,
    /// Actions taken.
    ops: AtomicU64,
    /// Successful `try_to_wake_up` calls of wakers.
    woken: AtomicU64,
    online: CpuMask,
}

impl Shared {
    /// Hands worker `i` a token and wakes it. Preemption is off from reading
    /// its slot to the end of the wakeup, so the token-set-but-not-woken
    /// window is short; `wakers` lets the worker's exit wait for us and the
    /// lost-wakeup scan skip the window.
    fn wake(&self, i: usize) {
        let w = &self.workers[i];
        crate::sched::preempt_disable();
        w.wakers.fetch_add(1, Ordering::SeqCst);
        let idx = w.idx.load(Ordering::SeqCst);
        let mut woke = false;
        if idx != NONE {
            w.token.store(true, Ordering::SeqCst);
            woke = crate::sched::try_to_wake_up(idx, WakeFlags::empty());
        }
        w.wakers.fetch_sub(1, Ordering::SeqCst);
        crate::sched::preempt_enable();
        if woke {
            self.woken.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Busy work for `ns`, with `cond_resched()` points (the voluntary model's
/// preemption points).
fn work(ns: u64) {
    let end = arch::now_ns() + ns;
    while arch::now_ns() < end {
        super::burn(64);
        crate::sched::cond_resched();
    }
}

/// Blocks until the worker's token is set (or the run stops).
fn wait(sh: &Shared, w: &Worker) {
    w.wait_seq.fetch_add(1, Ordering::SeqCst);
    w.waiting.store(true, Ordering::SeqCst);
    loop {
        crate::sched::set_current_state(ThreadState::Sleeping);
        if w.token.swap(false, Ordering::SeqCst) || sh.stop.load(Ordering::SeqCst) {
            break;
        }
        crate::sched::schedule();
    }
    crate::sched::set_current_state(ThreadState::Running);
    w.waiting.store(false, Ordering::SeqCst);
}

/// Random fair parameters: nice in -10..=10 (a 1:87 weight range: wide,
/// but no thread waits minutes) and now and then a custom slice.
fn fair_params(rng: &mut Rng) -> TaskParams {
    TaskParams {
        nice: rng.below(21) as i32 - 10,
        slice_ns: if rng.below(4) == 0 {
            100_000 + rng.below(5_000_000)
        } else {
            0
        },
        ..TaskParams::default()
    }
}

/// One worker incarnation.
fn worker(sh: Arc<Shared>, i: usize, seed: u64) {
    let w = &sh.workers[i];
    let me = task::current();
    let mut rng = Rng::new(seed);
    w.idx.store(me.idx(), Ordering::SeqCst);
    let n = sh.workers.len() as u64;
    let mut special = 0;
    while !sh.stop.load(Ordering::Relaxed) {
        work(rng.below(MAX_WORK_NS));
        sh.ops.fetch_add(1, Ordering::Relaxed);
        if special > 0 {
            special -= 1;
            if special == 0 {
                let _ = crate::sched::sched_setattr(me, TaskParams::default());
            }
        }
        match rng.action() {
            Action::Sleep => task::sleep_ns(1 + rng.below(MAX_SLEEP_NS)),
            Action::Wait => wait(&sh, w),
            Action::Wake => sh.wake(rng.below(n) as usize),
            Action::Yield => crate::sched::yield_now(),
            Action::Nice if special == 0 => {
                let _ = crate::sched::sched_setattr(me, fair_params(&mut rng));
            }
            Action::Nice => {}
            Action::Policy => {
                let p = match rng.below(4) {
                    0 => TaskParams {
                        policy: Policy::Batch,
                        ..fair_params(&mut rng)
                    },
                    1 => TaskParams {
                        policy: Policy::Idle,
                        ..TaskParams::default()
                    },
                    2 => TaskParams::fifo(1 + rng.below(50) as u8),
                    _ => TaskParams {
                        policy: Policy::RoundRobin,
                        rt_priority: 1 + rng.below(50) as u8,
                        ..TaskParams::default()
                    },
                };
                if crate::sched::sched_setattr(me, p).is_ok() {
                    special = 1 + rng.below(MAX_SPECIAL_ROUNDS);
                }
            }
            Action::Affinity => {
                let _ = crate::sched::set_affinity(task::current_tid(), rng.mask(&sh.online));
            }
            Action::Atomic => {
                crate::sched::preempt_disable();
                let end = arch::now_ns() + rng.below(MAX_ATOMIC_NS);
                while arch::now_ns() < end {
                    super::burn(64);
                }
                crate::sched::preempt_enable();
            }
            Action::Exit => break,
        }
    }
    // No waker may reach this slot once it is freed: unpublish it, then let
    // the wakers that already read it finish.
    w.idx.store(NONE, Ordering::SeqCst);
    while w.wakers.load(Ordering::SeqCst) != 0 {
        core::hint::spin_loop();
    }
    w.done.store(true, Ordering::SeqCst);
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Worker threads kept running.
    pub threads: u64,
    /// Worker threads spawned (the first ones and every respawn).
    pub spawned: u64,
    /// Worker actions.
    pub ops: u64,
    /// Wakeups (every runqueue's `nr_wakeups`, all threads).
    pub wakeups: u64,
    /// Tasks that arrived on a runqueue from another CPU.
    pub migrations: u64,
    /// Context switches.
    pub switches: u64,
    /// Invariant checks done.
    pub checks: u64,
    /// Configuration flips done.
    pub flips: u64,
    /// Every violation found (0 is the pass).
    pub violations: u64,
}

/// The settings a run changes, put back when dropped.
struct Saved {
    features: Vec<(Feature, bool)>,
    preempt: PreemptMode,
    stall_ms: u64,
    lockup_ms: u64,
    params: Option<TaskParams>,
}

impl Saved {
    fn take() -> Saved {
        let cfg = crate::sched::sched_config();
        Saved {
            features: Feature::ALL.iter().map(|&f| (f, cfg.feat(f))).collect(),
            preempt: cfg.tunables.preempt_mode(),
            stall_ms: cfg.tunables.get_raw(Tunable::StallWarnMs),
            lockup_ms: cfg.tunables.get_raw(Tunable::SoftlockupThreshMs),
            params: crate::sched::sched_snapshot(task::current()).map(|st| st.params),
        }
    }
}

impl Drop for Saved {
    fn drop(&mut self) {
        let cfg = crate::sched::sched_config();
        for &(f, on) in &self.features {
            cfg.features.set(f, on);
        }
        cfg.tunables.set_preempt_mode(self.preempt);
        set_ms("kernel.sched_stall_warn_ms", self.stall_ms);
        set_ms("kernel.softlockup_thresh_ms", self.lockup_ms);
        if let Some(p) = self.params {
            let _ = crate::sched::sched_setattr(task::current(), p);
        }
    }
}

fn set_ms(key: &str, ms: u64) {
    let _ = crate::sched::sched_config()
        .tunables
        .set(key, &alloc::format!("{ms}"));
}

/// CPU time at one instant: every live thread's runtime, and idle time.
struct CpuTime {
    at_ns: u64,
    threads: Vec<(Tid, u64)>,
    idle_ns: u64,
    /// How long the sampling took after `at_ns`. Each CPU's figures count
    /// up to the moment they are read, so a sample can be off `at_ns` by up
    /// to this much per CPU (a vCPU the host stops mid-sample makes it ms).
    window_ns: u64,
}

impl CpuTime {
    fn now() -> CpuTime {
        let live = task::live_threads();
        let mut threads = Vec::with_capacity(live.len());
        let at_ns = arch::now_ns();
        for tid in live {
            threads.push((tid, crate::sched::task_runtime_ns(task::thread(tid.idx()))));
        }
        let idle_ns = online_cpus().map(|c| percpu::cpu(c).idle_ns()).sum();
        CpuTime {
            at_ns,
            threads,
            idle_ns,
            window_ns: arch::now_ns() - at_ns,
        }
    }

    /// Runtime of the threads live now since `earlier` (a thread born since
    /// counts whole).
    fn runtime_since(&self, earlier: &CpuTime) -> u64 {
        self.threads
            .iter()
            .map(|(tid, ns)| {
                let before = earlier
                    .threads
                    .iter()
                    .find(|(t, _)| t == tid)
                    .map_or(0, |&(_, b)| b);
                ns.saturating_sub(before)
            })
            .sum()
    }
}

fn online_cpus() -> impl Iterator<Item = CpuId> {
    let online = crate::sched::online_mask();
    online
        .cpus()
        .filter(|&c| c.index() < crate::sched::nr_runqueues())
}

/// The controller's state.
struct Run<'a> {
    sh: Arc<Shared>,
    tids: Vec<Option<Tid>>,
    incarnation: Vec<u64>,
    seed: u32,
    /// Runtime of joined workers, ns.
    exited_ns: u64,
    spawned: u64,
    /// Spawns that failed (each retried at the next poll).
    spawn_failed: u64,
    violations: u64,
    out: &'a mut dyn Write,
}

impl Run<'_> {
    fn violation(&mut self, what: core::fmt::Arguments) {
        self.violations += 1;
        if self.violations <= MAX_PRINTED {
            let _ = writeln!(self.out, "soak: VIOLATION: {what} (seed {})", self.seed);
        }
    }

    fn spawn(&mut self, i: usize) -> bool {
        let w = &self.sh.workers[i];
        w.token.store(false, Ordering::SeqCst);
        w.waiting.store(false, Ordering::SeqCst);
        w.done.store(false, Ordering::SeqCst);
        self.incarnation[i] += 1;
        let seed = (u64::from(self.seed) << 32) ^ ((i as u64) << 20) ^ self.incarnation[i];
        let sh = self.sh.clone();
        let online = self.sh.online;
        match task::spawn_on("soak", TaskParams::default(), online, move || {
            worker(sh, i, seed)
        }) {
            Ok(tid) => {
                self.tids[i] = Some(tid);
                self.spawned += 1;
                true
            }
            Err(task::SpawnError::NoMemory) => {
                self.spawn_failed += 1;
                false
            }
            Err(e) => {
                self.violation(format_args!("spawn of worker {i} failed: {e:?}"));
                false
            }
        }
    }

    /// Joins finished workers; respawns them unless the run is stopping.
    /// Returns how many were joined.
    fn reap(&mut self, respawn: bool) -> usize {
        let mut n = 0;
        for i in 0..self.tids.len() {
            let Some(tid) = self.tids[i] else {
                if respawn {
                    self.spawn(i);
                }
                continue;
            };
            if !self.sh.workers[i].done.load(Ordering::SeqCst) {
                continue;
            }
            if let Ok(st) = task::join(tid) {
                self.exited_ns += st.sum_exec_runtime_ns;
            }
            self.tids[i] = None;
            n += 1;
            if respawn {
                self.spawn(i);
            }
        }
        n
    }

    /// The runqueues' invariants.
    fn check(&mut self, scratch: &mut sched::smp::CheckScratch) {
        if let Err(e) = crate::sched::sched().check(scratch) {
            self.violation(format_args!(
                "invariant: cpu {}: {} (task {:?}, also on cpu {:?})",
                e.cpu, e.what, e.task, e.other_cpu
            ));
            if self.violations == 1 {
                for c in online_cpus() {
                    let out = &mut *self.out;
                    crate::sched::with_cpu_rq(c, |rq| crate::sched::debug::write_rq(out, c, rq));
                }
            }
        }
    }
}

/// `LostScan::since` of a wait already reported (once per wait).
const REPORTED: u64 = u64::MAX;

/// Lost-wakeup candidates: per worker, the wait (`wait_seq + 1`, 0: none)
/// seen asleep with its token set, and since when.
struct LostScan {
    wait: Vec<u64>,
    since: Vec<u64>,
}

impl LostScan {
    fn scan(&mut self, run: &mut Run, now: u64) {
        for i in 0..run.sh.workers.len() {
            let w = &run.sh.workers[i];
            let idx = w.idx.load(Ordering::SeqCst);
            let seq = w.wait_seq.load(Ordering::SeqCst) + 1;
            if idx == NONE || !w.waiting.load(Ordering::SeqCst) || !asleep_with_token(w, idx) {
                self.wait[i] = 0;
                continue;
            }
            if self.wait[i] != seq {
                self.wait[i] = seq;
                self.since[i] = now;
            } else if self.since[i] != REPORTED && now - self.since[i] >= LOST_NS {
                let t = task::thread(idx);
                run.violation(format_args!(
                    "lost wakeup: worker {i} (thread {idx}, cpu {}, home {:?}) woken {} ms ago, still asleep",
                    t.cpu(),
                    crate::sched::task_cpu(t),
                    (now - self.since[i]) / 1_000_000
                ));
                self.since[i] = REPORTED;
            }
        }
    }
}

/// Whether thread `idx` (worker `w`) is blocked with its token set and no
/// waker in the middle of waking it: asleep, not queued anywhere as
/// runnable, off every CPU. The waker count is read last: a waker that set
/// the token after our look at the state is then still counted.
fn asleep_with_token(w: &Worker, idx: u32) -> bool {
    let t = task::thread(idx);
    if t.state() != ThreadState::Sleeping || !w.token.load(Ordering::SeqCst) {
        return false;
    }
    if t.on_cpu.load(Ordering::SeqCst) {
        return false;
    }
    let queued = crate::sched::sched_snapshot(t).is_some_and(|st| st.state == TaskState::Queued);
    !queued
        && t.state() == ThreadState::Sleeping
        && w.token.load(Ordering::SeqCst)
        && w.wakers.load(Ordering::SeqCst) == 0
}

/// Runs the soak; prints its progress and report to `out`.
pub fn run(p: Soak, ctl: &mut dyn super::Control, out: &mut dyn Write) -> Result<Report, String> {
    let n = p.threads as usize;
    let worker_bytes = n * (core::mem::size_of::<Worker>() + 64);
    super::check_resources(n, worker_bytes)?;
    let seed = p
        .seed
        .unwrap_or_else(|| (arch::now_ns() ^ (arch::now_ns() >> 29)) as u32);
    let online = crate::sched::online_mask();
    let ncpus = online.weight() as u64;
    let _ = writeln!(
        out,
        "soak: seed {seed}, {n} threads, {ncpus} CPUs, {} s (rerun: soak -t {n} -s {} -r {seed})",
        p.secs, p.secs
    );
    let saved = Saved::take();
    crate::sched::sched_setattr(task::current(), TaskParams::fifo(CONTROLLER_PRIO))
        .map_err(|e| alloc::format!("cannot make the controller FIFO: {e:?}"))?;
    set_ms("kernel.sched_stall_warn_ms", 0);
    set_ms("kernel.softlockup_thresh_ms", LOCKUP_MS);
    let mut lockups_seen = task::softlockup::LOCKUPS.load(Ordering::Relaxed);
    let mut scratch = crate::sched::sched().check_scratch();
    let mut lost = LostScan {
        wait: alloc::vec![0; n],
        since: alloc::vec![0; n],
    };
    let mut swept = alloc::vec![0u64; n];
    let sh = Arc::new(Shared {
        stop: AtomicBool::new(false),
        workers: (0..n).map(|_| Worker::default()).collect(),
        ops: AtomicU64::new(0),
        woken: AtomicU64::new(0),
        online,
    });
    for w in &sh.workers {
        w.idx.store(NONE, Ordering::Relaxed);
    }
    let mut run = Run {
        sh: sh.clone(),
        tids: alloc::vec![None; n],
        incarnation: alloc::vec![0; n],
        seed,
        exited_ns: 0,
        spawned: 0,
        spawn_failed: 0,
        violations: 0,
        out,
    };
    let mut rng = Rng::new(u64::from(seed).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let c0 = Counters::read();
    let t0 = CpuTime::now();
    let offline0 = crate::hotplug::offline_ns();
    let mut hp = Hotplug {
        rng: Rng::new(u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ HOTPLUG_STREAM),
        ..Default::default()
    };
    // What must be back at the end (taken after the run's own allocations).
    let (heap0, threads0) = (heap_in_use(), task::live_threads().len());
    let fail0 = kernel_hal::heap::fail::counts();
    for i in 0..n {
        // A worker that cannot be spawned for memory is retried at the
        // next poll (`reap`); any other failure is a violation.
        run.spawn(i);
    }
    let start = arch::now_ns();
    let end = start + u64::from(p.secs) * 1_000_000_000;
    let (mut next_flip, mut next_sweep, mut next_check, mut next_report) = (
        start + FLIP_NS,
        start + SWEEP_NS,
        start + CHECK_NS,
        start + REPORT_NS,
    );
    let mut next_hotplug = start + HOTPLUG_NS;
    let (mut checks, mut flips, mut interrupted) = (0u64, 0u64, false);
    let (mut last_ops, mut progress_at) = (0u64, start);
    loop {
        task::sleep_ms(POLL_MS);
        let now = arch::now_ns();
        if ctl.interrupted() {
            interrupted = true;
        }
        if interrupted || now >= end || sh.stop.load(Ordering::Relaxed) {
            break;
        }
        run.reap(true);
        if now >= next_flip {
            next_flip = now + FLIP_NS;
            flips += 1;
            flip(&mut run, &mut rng);
        }
        if now >= next_hotplug {
            hotplug_flip(&mut run, &mut hp);
            next_hotplug = arch::now_ns() + HOTPLUG_NS;
        }
        if now >= next_sweep {
            next_sweep = now + SWEEP_NS;
            // Wake the workers that have waited since the last sweep with no
            // token (nobody picked them); never those with a token.
            for (i, w) in sh.workers.iter().enumerate() {
                let seq = w.wait_seq.load(Ordering::SeqCst) + 1;
                if !w.waiting.load(Ordering::SeqCst) || w.token.load(Ordering::SeqCst) {
                    swept[i] = 0;
                } else if swept[i] == seq {
                    sh.wake(i);
                } else {
                    swept[i] = seq;
                }
            }
        }
        if now >= next_check {
            next_check = now + CHECK_NS;
            checks += 1;
            run.check(&mut scratch);
            lost.scan(&mut run, now);
            lockups(&mut run, &mut lockups_seen);
            let ops = sh.ops.load(Ordering::Relaxed);
            if ops != last_ops {
                (last_ops, progress_at) = (ops, now);
            } else if now - progress_at > STUCK_NS {
                run.violation(format_args!(
                    "no progress: no worker action for {} ms",
                    (now - progress_at) / 1_000_000
                ));
                progress_at = now;
            }
        }
        if now >= next_report {
            next_report = now + REPORT_NS;
            let _ = writeln!(
                run.out,
                "soak: {} s: {} actions, {} spawned, {} checks, {} violations",
                (now - start) / 1_000_000_000,
                sh.ops.load(Ordering::Relaxed),
                run.spawned,
                checks,
                run.violations
            );
        }
    }
    // The end: every worker must exit, each exit soon after the last.
    sh.stop.store(true, Ordering::SeqCst);
    let mut exit_progress = arch::now_ns();
    loop {
        if run.reap(false) > 0 {
            exit_progress = arch::now_ns();
        }
        let left = run.tids.iter().filter(|t| t.is_some()).count();
        if left == 0 {
            break;
        }
        for i in 0..n {
            if run.tids[i].is_some() && sh.workers[i].waiting.load(Ordering::SeqCst) {
                sh.wake(i);
            }
        }
        if arch::now_ns() - exit_progress > STUCK_NS {
            run.violation(format_args!(
                "no progress: {left} worker(s) did not exit in {} ms",
                STUCK_NS / 1_000_000
            ));
            task::dump_threads();
            break;
        }
        task::sleep_ms(POLL_MS);
    }
    hotplug_restore(&mut run, &mut hp);
    let _ = writeln!(
        run.out,
        "soak: cpu hotplug: {} offline, {} online, {} timed out (a CPU that did not reach its idle thread)",
        hp.downs, hp.ups, hp.timeouts
    );
    let (heap1, threads1) = (heap_in_use(), task::live_threads().len());
    let fail1 = kernel_hal::heap::fail::counts();
    let fa = kernel_hal::heap::fail::get();
    let _ = writeln!(
        run.out,
        "soak: fail_alloc {fa}: {} of {} allocations failed on purpose, {} spawns failed and were retried; heap used {heap0} -> {heap1} bytes, threads {threads0} -> {threads1}",
        fail1.1 - fail0.1,
        fail1.0 - fail0.0,
        run.spawn_failed
    );
    if threads1 != threads0 {
        run.violation(format_args!(
            "threads: {threads0} live before the workers, {threads1} after"
        ));
    }
    if heap1 > heap0 + LEAK_SLACK_BYTES {
        run.violation(format_args!(
            "heap: {heap0} bytes in use before the workers, {heap1} after ({:+}, more than {LEAK_SLACK_BYTES} bytes)",
            heap1 as i64 - heap0 as i64
        ));
    }
    #[cfg(feature = "lockdep")]
    let _ = writeln!(run.out, "soak: lockdep: {}", kernel_hal::lockdep::stats());
    checks += 1;
    run.check(&mut scratch);
    lockups(&mut run, &mut lockups_seen);
    let t1 = CpuTime::now();
    let c1 = Counters::read().since(&c0);
    let elapsed = t1.at_ns - t0.at_ns;
    let busy = t1.runtime_since(&t0) + run.exited_ns;
    let idle = t1.idle_ns - t0.idle_ns;
    let offline = crate::hotplug::offline_ns() - offline0;
    let want = (elapsed * ncpus).saturating_sub(offline);
    let err_ns = (busy + idle).abs_diff(want);
    let err_ppm = err_ns * 1_000_000 / want.max(1);
    // What the two samples themselves may be off by (see CpuTime::window_ns).
    let sampling_ns = (t0.window_ns + t1.window_ns) * ncpus;
    let _ = writeln!(
        run.out,
        "soak: cpu time: runtime {} ms + idle {} ms = {} ms; elapsed {} ms x {ncpus} CPUs - {} ms offline = {} ms (error {}.{:03} %, sampling windows {} us x {ncpus} CPUs)",
        busy / 1_000_000,
        idle / 1_000_000,
        (busy + idle) / 1_000_000,
        elapsed / 1_000_000,
        offline / 1_000_000,
        want / 1_000_000,
        err_ppm / 10_000,
        err_ppm % 10_000 / 10,
        (t0.window_ns + t1.window_ns) / 1_000
    );
    // 1 % of the total, beyond what the sampling itself may be off by: a
    // short run (Ctrl-C soon after the start) on a loaded host has a total
    // of a few ms x CPUs, where a vCPU stopped mid-sample alone is 1 %.
    if err_ns.saturating_sub(sampling_ns) * 100 > want {
        run.violation(format_args!(
            "cpu time: runtime + idle is off elapsed x CPUs by {}.{:03} % (> 1 % beyond the sampling windows' {} us x {ncpus} CPUs)",
            err_ppm / 10_000,
            err_ppm % 10_000 / 10,
            (t0.window_ns + t1.window_ns) / 1_000
        ));
    }
    let r = Report {
        threads: n as u64,
        spawned: run.spawned,
        ops: sh.ops.load(Ordering::Relaxed),
        wakeups: c1.wakeups,
        migrations: c1.migrations,
        switches: c1.switches,
        checks,
        flips,
        violations: run.violations,
    };
    drop(saved);
    let _ = writeln!(
        run.out,
        "soak: threads {} spawned {} actions {} wakeups {} migrations {} switches {} checks {} flips {} violations {}{}",
        r.threads,
        r.spawned,
        r.ops,
        r.wakeups,
        r.migrations,
        r.switches,
        r.checks,
        r.flips,
        r.violations,
        if interrupted { " (interrupted)" } else { "" }
    );
    Ok(r)
}

/// Heap bytes in use, less what is kept by design and accounted apart: what
/// the scheduler keeps for the tasks it has seen (runqueue arenas and wake
/// lists keep their capacity, task cells stay allocated;
/// `sched::smp::Scheduler::heap_bytes`) and the page tables the stack
/// region grows (`kernel_hal::heap::kept_bytes`).
fn heap_in_use() -> usize {
    crate::heap::stats().0 - crate::sched::sched().heap_bytes() - kernel_hal::heap::kept_bytes()
}

/// Soft lockups reported since `seen` (each one a violation).
fn lockups(run: &mut Run, seen: &mut u64) {
    let now = task::softlockup::LOCKUPS.load(Ordering::Relaxed);
    if now != *seen {
        let cpu = task::softlockup::LAST_CPU.load(Ordering::Relaxed);
        run.violation(format_args!(
            "{} soft lockup(s) reported (last on cpu {cpu})",
            now - *seen
        ));
        *seen = now;
    }
}

/// One random configuration change from the controller: a feature flip, a
/// preemption model switch, or another worker's affinity or nice value.
fn flip(run: &mut Run, rng: &mut Rng) {
    let cfg = crate::sched::sched_config();
    match rng.below(4) {
        0 => {
            let f = Feature::ALL[rng.below(Feature::ALL.len() as u64) as usize];
            cfg.features.set(f, rng.below(2) == 0);
        }
        1 => {
            let m = PreemptMode::ALL[rng.below(PreemptMode::ALL.len() as u64) as usize];
            cfg.tunables.set_preempt_mode(m);
        }
        k => {
            let i = rng.below(run.tids.len() as u64) as usize;
            // Its slot stays this worker's until we join it, even if it exits.
            let Some(tid) = run.tids[i] else { return };
            if k == 2 {
                let _ = crate::sched::set_affinity(tid, rng.mask(&run.sh.online));
            } else if task::tid_is_live(tid) {
                let t = task::thread(tid.idx());
                let fair = crate::sched::sched_snapshot(t)
                    .is_some_and(|st| st.params.policy == Policy::Normal);
                if fair {
                    let _ = crate::sched::sched_setattr(t, fair_params(rng));
                }
            }
        }
    }
}

/// Salt of the hotplug operations' PRNG stream ("hotplug").
const HOTPLUG_STREAM: u64 = 0x0068_6f74_706c_7567;

/// The controller's CPU hotplug operations.
#[derive(Default)]
struct Hotplug {
    rng: Rng,
    downs: u64,
    ups: u64,
    timeouts: u64,
}

/// Takes a random CPU other than 0 offline, or brings it back if it is.
fn hotplug_flip(run: &mut Run, hp: &mut Hotplug) {
    let n = crate::sched::nr_runqueues();
    if n < 2 {
        return;
    }
    let Some(c) = CpuId::new(1 + hp.rng.below(n as u64 - 1) as usize) else {
        return;
    };
    if !run.sh.online.has(c) {
        return; // it never came up
    }
    let down = crate::sched::online_mask().has(c);
    let r = if down {
        crate::hotplug::cpu_down(c)
    } else {
        crate::hotplug::cpu_up(c)
    };
    match r {
        Ok(()) if down => hp.downs += 1,
        Ok(()) => hp.ups += 1,
        Err(crate::hotplug::HotplugError::Timeout) => hp.timeouts += 1,
        Err(e) => run.violation(format_args!(
            "cpu {} {}: {e}",
            if down { "offline" } else { "online" },
            c
        )),
    }
}

/// Brings every CPU the run started with back online.
fn hotplug_restore(run: &mut Run, hp: &mut Hotplug) {
    let back: Vec<CpuId> = run
        .sh
        .online
        .and_not(&crate::sched::online_mask())
        .cpus()
        .collect();
    for c in back {
        match crate::hotplug::cpu_up(c) {
            Ok(()) => hp.ups += 1,
            Err(e) => run.violation(format_args!("cpu {c} online at the end: {e}")),
        }
    }
}
