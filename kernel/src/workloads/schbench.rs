//! `schbench [-m MSG_THREADS] [-t WORKERS] [-r SECONDS] [-F KB] [-s USEC]`:
//! Meta's schbench 1.0 (`worker.c` `worker_thread` / `msg_and_wait`,
//! `message.c`), minus its RPS mode and CPU pinning.
//!
//! Each worker loops: it queues itself on its message thread's list, posts the
//! message thread's futex and sleeps on its own (`msg_and_wait`); the message
//! thread takes the whole list and wakes each worker, stamping the time just
//! before each wake; the woken worker records its **wakeup latency** (stamp →
//! running). Then it serves a request: sleep `-s` us (schbench's simulated
//! network / I/O), then touch its `-F` KiB buffer (one write per 64-byte line,
//! schbench's cache footprint) and record the **request latency** (request
//! start → end). RPS is requests served / run time.
//!
//! Wake flags: schbench's waits and posts are futexes (`FUTEX_WAKE` →
//! `wake_up_q` → `wake_up_process`, no WF_SYNC), so the posts here wake
//! plain too.
//!
//! Each futex is a binary one ([`Futex`]), as schbench's `fpost` / `fwait`
//! and lcbench's `sem_post_f` / `sem_wait_fs` (Linux's side) are: posts that
//! come while the message thread runs give it one more round, not one round
//! each. A counting semaphore gave ours' message thread one round per post
//! (7338 rounds for 7338 posts in a 1 s run, half of them without sleeping,
//! where Linux's lcbench made 2774 rounds for 5457 posts).
//!
//! Latencies go into preallocated histograms of atomics; nothing allocates
//! while measuring. The printed percentiles come from schbench's log-linear
//! buckets ([`Hist`], within 12.5 %); the metrics `compare` reports, from 1 us
//! buckets ([`UsHist`]), as lcbench's (Linux's side) are: on the log-linear
//! buckets a p99 near 330 us moves only in steps of 33 us, and an A/B of two
//! configs compared which side of a bucket boundary their p99 fell. At the end the message thread sets `done` and
//! posts every worker once more, so they all exit.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use ::shell::Schbench;
use sched::TaskParams;

use super::{Control, Hist, Job};
use crate::sync::{SpinLock, WaitQueue};
use crate::{arch, task};

/// A binary futex word and its waiters: [`Futex::post`] sets it and wakes one
/// waiter (`FUTEX_WAKE`, 1), [`Futex::wait`] sleeps until it is set and clears
/// it (a `FUTEX_WAIT` loop around a compare-and-swap of 1 to 0).
pub struct Futex {
    set: AtomicBool,
    waiters: WaitQueue,
}

impl Futex {
    /// A clear futex.
    pub const fn new() -> Self {
        Futex {
            set: AtomicBool::new(false),
            waiters: WaitQueue::new(),
        }
    }

    /// Sets the word and wakes one sleeper; returns whether one was asleep
    /// (what `FUTEX_WAKE` returns). Posting a set word changes nothing.
    pub fn post(&self) -> bool {
        self.set.store(true, Ordering::Release);
        self.waiters.wake_one()
    }

    /// Whether the word is set (posted, not yet taken).
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Clears the word if it was set; returns whether it was.
    pub fn try_take(&self) -> bool {
        self.set.swap(false, Ordering::Acquire)
    }

    /// Sleeps until the word is set, then clears it.
    pub fn wait(&self) {
        self.waiters.wait_event(|| self.try_take());
    }
}

impl Default for Futex {
    fn default() -> Self {
        Self::new()
    }
}

/// Buckets of [`UsHist`]: 1 us each; the last takes everything longer.
const US_BUCKETS: usize = 1 << 16;

/// A latency histogram of 1 us buckets up to 65.5 ms (lcbench's `hist`,
/// which goes to 1 s), preallocated, of atomics.
pub struct UsHist {
    b: Vec<AtomicU32>,
    n: AtomicU64,
}

impl Default for UsHist {
    fn default() -> Self {
        Self::new()
    }
}

impl UsHist {
    /// Bytes one takes.
    pub const BYTES: usize = US_BUCKETS * 4;

    /// An empty histogram.
    pub fn new() -> Self {
        UsHist {
            b: (0..US_BUCKETS).map(|_| AtomicU32::new(0)).collect(),
            n: AtomicU64::new(0),
        }
    }

    /// Records one sample, ns.
    pub fn add(&self, ns: u64) {
        let us = ((ns / 1000) as usize).min(US_BUCKETS - 1);
        self.b[us].fetch_add(1, Ordering::Relaxed);
        self.n.fetch_add(1, Ordering::Relaxed);
    }

    /// The smallest bucket (us) at or under which `permille` of the samples
    /// lie (0 if none): lcbench's `hist_pct`.
    pub fn percentile_us(&self, permille: u64) -> u64 {
        let n = self.n.load(Ordering::Relaxed);
        if n == 0 {
            return 0;
        }
        let want = (n * permille).div_ceil(1000);
        let mut seen = 0;
        for (i, b) in self.b.iter().enumerate() {
            seen += u64::from(b.load(Ordering::Relaxed));
            if seen >= want {
                return i as u64;
            }
        }
        US_BUCKETS as u64 - 1
    }
}

struct Worker {
    sem: Futex,
    woken_at: AtomicU64,
    /// The CPU the message thread stamped `woken_at` on.
    waker_cpu: AtomicU64,
}

/// One message thread's state, shared with its workers.
struct Group {
    /// The message thread's futex: posted by each worker that queued itself.
    post: Futex,
    /// The time and CPU of the post that set `post` (stamped before it,
    /// when the word was clear): where the message thread's wakeup starts.
    first_post_at: AtomicU64,
    first_post_cpu: AtomicU64,
    /// Workers waiting for their wakeup (indices), preallocated.
    list: SpinLock<Vec<u32>>,
    workers: Vec<Worker>,
    done: AtomicBool,
}

/// What a run measured.
pub struct Report {
    /// Wakeup latencies, ns.
    pub wakeup: Hist,
    /// Request latencies, ns.
    pub request: Hist,
    /// The same wakeup and request latencies in 1 us buckets (the metrics).
    pub wakeup_us: UsHist,
    pub request_us: UsHist,
    /// Requests served.
    pub requests: AtomicU64,
    /// From start to the last thread's end, ns.
    pub ns: AtomicU64,
    /// Stopped by Ctrl-C or `kill`.
    pub interrupted: bool,
    /// Counters, the same as lcbench's (Linux's side).
    pub counters: Counters,
}

/// Where each worker was when its message thread posted it, the posts each
/// way and the threads' involuntary switches: lcbench prints the same
/// counters for Linux, so the two kernels' wakeups can be set side by side.
#[derive(Default)]
pub struct Counters {
    /// Wakeup latencies (ns) by where the worker was: not asleep yet (it
    /// did not switch out in its wait), asleep and run on the CPU the message
    /// thread stamped on, asleep and run on another CPU.
    pub by_place: [Hist; 3],
    /// The message thread's posts of workers, and those that woke a sleeper.
    pub msg_posts: AtomicU64,
    pub msg_posts_woke: AtomicU64,
    /// The workers' posts of the message thread, and those that woke it.
    pub wk_posts: AtomicU64,
    pub wk_posts_woke: AtomicU64,
    /// The message thread's rounds, and those it slept before.
    pub msg_rounds: AtomicU64,
    pub msg_slept: AtomicU64,
    /// Of the rounds it slept before: the time from the stamp of the post
    /// that set its futex to its return from the wait (ns, summed), and how
    /// many ran on the posting CPU (lcbench's `-M` counters).
    pub msg_wake_ns: AtomicU64,
    pub msg_same: AtomicU64,
    /// Involuntary switches of the message threads and of the workers.
    pub nivcsw_msg: AtomicU64,
    pub nivcsw_wk: AtomicU64,
}

/// The current thread's (voluntary, involuntary) switches so far.
fn my_switches() -> (u64, u64) {
    task::thread(task::current_idx()).switches()
}

impl Counters {
    /// Prints them as lcbench does (`name=value ...`).
    pub fn print(&self, out: &mut dyn Write) {
        for (h, name) in self.by_place.iter().zip(["awake", "same", "other"]) {
            let _ = write!(
                out,
                "wk_{name}={} wk_{name}_p99_us={} wk_{name}_sum_us={} ",
                h.count(),
                h.percentile(990) / 1000,
                h.mean() * h.count() / 1000
            );
        }
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "msg_posts={} msg_posts_woke={} wk_posts={} wk_posts_woke={} msg_rounds={} msg_slept={} nivcsw_msg={} nivcsw_wk={} msg_wake_sum_us={} msg_same={}",
            l(&self.msg_posts),
            l(&self.msg_posts_woke),
            l(&self.wk_posts),
            l(&self.wk_posts_woke),
            l(&self.msg_rounds),
            l(&self.msg_slept),
            l(&self.nivcsw_msg),
            l(&self.nivcsw_wk),
            l(&self.msg_wake_ns) / 1000,
            l(&self.msg_same)
        );
    }
}

impl Report {
    /// Wakeup and request p99 (us, lower is better) and RPS (higher).
    pub fn metrics(&self) -> super::Metrics {
        let ns = self.ns.load(Ordering::Relaxed).max(1) as f64;
        let reqs = self.requests.load(Ordering::Relaxed) as f64;
        super::Metrics {
            list: alloc::vec![
                super::Metric::lower("wakeup_p99_us", self.wakeup_us.percentile_us(990) as f64),
                super::Metric::lower("request_p99_us", self.request_us.percentile_us(990) as f64),
                super::Metric::higher("rps", reqs * 1e9 / ns),
            ],
            interrupted: self.interrupted,
        }
    }
}

/// Runs the workload; prints the percentiles and RPS.
pub fn run(
    p: Schbench,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    let (m, t) = (p.message_threads as usize, p.workers as usize);
    let n = m * (t + 1);
    let footprint = p.footprint_kb as usize * 1024;
    super::check_resources(n, m * t * (footprint + 128) + 2 * UsHist::BYTES)?;
    let rep = Arc::new(Report {
        wakeup: Hist::new(),
        request: Hist::new(),
        wakeup_us: UsHist::new(),
        request_us: UsHist::new(),
        requests: AtomicU64::new(0),
        ns: AtomicU64::new(0),
        interrupted: false,
        counters: Counters::default(),
    });
    let t0 = arch::now_ns();
    let end = t0 + u64::from(p.runtime_s) * 1_000_000_000;
    let sleep_ns = u64::from(p.sleep_us) * 1000;
    let mut job = Job::new();
    let mut groups: Vec<Arc<Group>> = Vec::with_capacity(m);
    let mut failed = None;
    'groups: for _ in 0..m {
        let g = Arc::new(Group {
            post: Futex::new(),
            first_post_at: AtomicU64::new(0),
            first_post_cpu: AtomicU64::new(0),
            list: SpinLock::new(Vec::with_capacity(t)),
            workers: (0..t)
                .map(|_| Worker {
                    sem: Futex::new(),
                    woken_at: AtomicU64::new(0),
                    waker_cpu: AtomicU64::new(0),
                })
                .collect(),
            done: AtomicBool::new(false),
        });
        groups.push(g.clone());
        for w in 0..t {
            let (g, rep) = (g.clone(), rep.clone());
            // Allocated here, not in the thread: the resource check counted it.
            let mut buf = alloc::vec![0u64; footprint / 8];
            let r = job.spawn("schbench-worker", TaskParams::default(), None, move || {
                let me = &g.workers[w];
                let mut gen = 0u64;
                while !g.done.load(Ordering::Acquire) {
                    // msg_and_wait: queue ourselves, post, sleep.
                    g.list.lock().push(w as u32);
                    let c = &rep.counters;
                    if !g.post.is_set() {
                        g.first_post_at.store(arch::now_ns(), Ordering::Relaxed);
                        g.first_post_cpu
                            .store(arch::cpu_id().index() as u64, Ordering::Relaxed);
                    }
                    c.wk_posts_woke
                        .fetch_add(u64::from(g.post.post()), Ordering::Relaxed);
                    c.wk_posts.fetch_add(1, Ordering::Relaxed);
                    // Each futex wake / wait returns to user space.
                    crate::sched::exit_to_user_mode();
                    let before = my_switches().0;
                    me.sem.wait();
                    let slept = my_switches().0 != before;
                    crate::sched::exit_to_user_mode();
                    if g.done.load(Ordering::Acquire) {
                        break;
                    }
                    let now = arch::now_ns();
                    let lat = now.saturating_sub(me.woken_at.load(Ordering::Relaxed));
                    rep.wakeup.add(lat);
                    rep.wakeup_us.add(lat);
                    let place = match slept {
                        false => 0,
                        true if arch::cpu_id().index() as u64
                            == me.waker_cpu.load(Ordering::Relaxed) =>
                        {
                            1
                        }
                        true => 2,
                    };
                    c.by_place[place].add(lat);
                    // The request: simulated I/O, then the cache footprint.
                    let start = now;
                    if sleep_ns > 0 {
                        task::sleep_ns(sleep_ns);
                        crate::sched::exit_to_user_mode();
                    }
                    gen = gen.wrapping_add(1);
                    // The cache footprint: user-space work.
                    crate::sched::run_in_user_mode(|| {
                        for line in buf.iter_mut().step_by(8) {
                            *line = line.wrapping_add(gen);
                        }
                    });
                    let fin = arch::now_ns();
                    rep.request.add(fin - start);
                    rep.request_us.add(fin - start);
                    rep.requests.fetch_add(1, Ordering::Relaxed);
                    rep.ns.fetch_max(fin, Ordering::Relaxed);
                }
                core::hint::black_box(&buf);
                rep.counters
                    .nivcsw_wk
                    .fetch_add(my_switches().1, Ordering::Relaxed);
            });
            if let Err(e) = r {
                failed = Some(e);
                break 'groups;
            }
        }
        let (g2, stop, rep2) = (g.clone(), job.stop_flag(), rep.clone());
        let r = job.spawn("schbench-msg", TaskParams::default(), None, move || {
            let mut batch: Vec<u32> = Vec::with_capacity(t);
            let c = &rep2.counters;
            while arch::now_ns() < end && !stop.stopped() {
                let before = my_switches().0;
                g2.post.wait();
                if my_switches().0 != before {
                    c.msg_slept.fetch_add(1, Ordering::Relaxed);
                    let lat =
                        arch::now_ns().saturating_sub(g2.first_post_at.load(Ordering::Relaxed));
                    c.msg_wake_ns.fetch_add(lat, Ordering::Relaxed);
                    let same =
                        arch::cpu_id().index() as u64 == g2.first_post_cpu.load(Ordering::Relaxed);
                    c.msg_same.fetch_add(u64::from(same), Ordering::Relaxed);
                }
                c.msg_rounds.fetch_add(1, Ordering::Relaxed);
                crate::sched::exit_to_user_mode();
                core::mem::swap(&mut batch, &mut *g2.list.lock());
                for &w in &batch {
                    let w = &g2.workers[w as usize];
                    w.waker_cpu
                        .store(arch::cpu_id().index() as u64, Ordering::Relaxed);
                    w.woken_at.store(arch::now_ns(), Ordering::Relaxed);
                    c.msg_posts_woke
                        .fetch_add(u64::from(w.sem.post()), Ordering::Relaxed);
                    c.msg_posts.fetch_add(1, Ordering::Relaxed);
                    crate::sched::exit_to_user_mode();
                }
                batch.clear();
            }
            c.nivcsw_msg.fetch_add(my_switches().1, Ordering::Relaxed);
            g2.done.store(true, Ordering::Release);
            for w in &g2.workers {
                w.sem.post();
            }
        });
        if let Err(e) = r {
            failed = Some(e);
            break;
        }
    }
    if failed.is_some() {
        // End every worker ourselves, and every message thread (it may wait
        // for a post from workers that are gone).
        job.stop();
        for g in &groups {
            g.done.store(true, Ordering::Release);
            for w in &g.workers {
                w.sem.post();
            }
            g.post.post();
        }
    }
    let interrupted = job.wait(ctl, 10);
    job.join();
    if let Some(e) = failed {
        return Err(e);
    }
    let mut rep = match Arc::try_unwrap(rep) {
        Ok(r) => r,
        Err(_) => return Err("schbench: a thread still holds the report".into()),
    };
    rep.interrupted = interrupted;
    let ran_ns = rep.ns.load(Ordering::Relaxed).saturating_sub(t0).max(1);
    rep.ns.store(ran_ns, Ordering::Relaxed);
    if interrupted {
        let _ = writeln!(out, "schbench: interrupted");
    }
    // schbench prints the configured run time; a stopped run, what it ran.
    let runtime_s = if interrupted {
        ran_ns / 1_000_000_000
    } else {
        u64::from(p.runtime_s)
    };
    let _ = write!(out, "schbench counters: ");
    rep.counters.print(out);
    rep.wakeup
        .print_schbench(out, "Wakeup Latencies", runtime_s);
    rep.request
        .print_schbench(out, "Request Latencies", runtime_s);
    let reqs = rep.requests.load(Ordering::Relaxed);
    let rps_x100 = (u128::from(reqs) * 100_000_000_000 / u128::from(ran_ns)) as u64;
    let _ = writeln!(
        out,
        "average rps: {}.{:02} ({reqs} requests in {} ms)",
        rps_x100 / 100,
        rps_x100 % 100,
        ran_ns / 1_000_000
    );
    Ok(rep)
}
