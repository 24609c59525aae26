//! Memory follows the tasks, not the id space: measured with a test-local
//! counting allocator (live heap bytes), which also checks that the
//! runqueues' own accounting (`heap_bytes`) is exact, and can refuse
//! allocations, to check that a refused growth is an error that leaves
//! everything as it was. One test function, and only the test's own thread
//! is counted and refused (libtest's main thread allocates now and then:
//! counted, it made the exact-accounting check fail about one run in eight).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;

use sched::smp::{Platform, Scheduler, WakeOutcome};
use sched::{Rq, RqError, SchedConfig, SchedTask, TaskId, TaskParams, WakeFlags};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Is this the measuring thread? (Const-initialised: reading it never
    /// allocates, so the allocator may.)
    static MEASURED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn measured() -> bool {
    MEASURED.try_with(|m| m.get()).unwrap_or(false)
}
/// Allocations still granted before the allocator refuses (negative: no limit).
static GRANT: AtomicIsize = AtomicIsize::new(-1);

/// Does the allocator refuse this allocation?
fn refused() -> bool {
    match GRANT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |g| {
        (g > 0).then_some(g - 1)
    }) {
        Ok(_) => false,   // a grant was used
        Err(g) => g == 0, // none left, or no limit (negative)
    }
}

/// Runs `f` with only `n` allocations granted; then no limit again.
fn granting<T>(n: isize, f: impl FnOnce() -> T) -> T {
    GRANT.store(n, Ordering::Relaxed);
    let x = f();
    GRANT.store(-1, Ordering::Relaxed);
    x
}

// SAFETY: every method forwards to `System` unchanged and only keeps a count,
// or returns null (refusal, which the `GlobalAlloc` contract allows).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !measured() {
            // SAFETY: the caller's contract is passed on as is.
            return unsafe { System.alloc(l) };
        }
        if refused() {
            return std::ptr::null_mut();
        }
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if measured() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        // SAFETY: `p` came from `System` with `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if measured() {
            if refused() {
                return std::ptr::null_mut();
            }
            LIVE.fetch_add(new, Ordering::Relaxed);
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        // SAFETY: `p` came from `System` with `l`; the contract is passed on.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Live bytes `f` leaves allocated, and its result.
fn live<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    let x = f();
    (x, LIVE.load(Ordering::Relaxed) - before)
}

/// Interrupts "masked" by the scheduler's locks, to check that memory
/// accounting and reservation restore them.
static MASKED: AtomicUsize = AtomicUsize::new(0);
static IPIS: AtomicUsize = AtomicUsize::new(0);

struct Masking;

impl Platform for Masking {
    fn now_ns(&self) -> u64 {
        1
    }
    fn irq_save(&self) -> bool {
        MASKED.fetch_add(1, Ordering::Relaxed);
        false
    }
    fn irq_restore(&self, _: bool) {
        MASKED.fetch_sub(1, Ordering::Relaxed);
    }
    fn send_resched_ipi(&self, _: sched::CpuId) {
        IPIS.fetch_add(1, Ordering::Relaxed);
    }
}

fn machine(cfg: &Arc<SchedConfig>, cpus: usize, tasks: usize) -> Scheduler<Masking> {
    let s = Scheduler::new(Masking, cfg.clone(), cpus, tasks.max(1));
    for i in 0..tasks {
        let mut rq = s.cpu_rq(cpu_id(i % cpus));
        rq.wake_up_new_task(TaskId(i as u32), SchedTask::new(TaskParams::default()));
    }
    s
}

#[test]
fn memory_is_o_tasks_plus_o_cpus() {
    MEASURED.with(|m| m.set(true));
    // Miri: a 64-CPU machine. At 256 CPUs this test took 680 s of CPU
    // there (for 63 M instructions natively), most of it Stacked Borrows
    // retagging the per-CPU state; the per-CPU bounds below scale with it.
    let cpus: usize = if cfg!(miri) { 64 } else { 256 };
    let cfg = Arc::new(SchedConfig::new(cpus as u32, 250));
    let task = std::mem::size_of::<SchedTask>();
    // Tasks held: 1 000 under Miri (~1000x slower), about 16 per CPU of
    // its 64-CPU machine; the bounds scale with it.
    let n: usize = if cfg!(miri) { 1_000 } else { 10_000 };

    // An empty runqueue allocates nothing, whatever its id limit.
    let (rq, empty) = live(|| Rq::new(cpu_id(0), cfg.clone(), u32::MAX as usize));
    assert_eq!((empty, rq.heap_bytes()), (0, 0));

    // Per task held: the task's state plus about a hundred bytes of slot,
    // map and tree, times at most 2 for the doubling.
    let (rq, bytes) = live(|| {
        let mut rq = Rq::new(cpu_id(0), cfg.clone(), 1 << 20);
        for i in 0..n as u32 {
            rq.wake_up_new_task(TaskId(i * 7), SchedTask::new(TaskParams::default()));
        }
        rq
    });
    rq.check().unwrap();
    assert_eq!(bytes, rq.heap_bytes(), "heap_bytes is exact");
    let per_task = bytes / n;
    assert!(per_task <= 2 * (task + 120), "{per_task} bytes per task");
    drop(rq);

    // The simulator's machine: before, 256 arenas of 10 000 entries (plus
    // wake lists of as many) were allocated up front, ~1.1 GiB. An idle CPU
    // costs about 2.5 KiB: its runqueue (with its fair server's state, about
    // 100 bytes, and the deadline class's two empty trees, about 200),
    // summaries and per-level balance state (with the newidle figures of
    // NI_RANDOM / NI_RATE, 40 bytes per level, and its 16-byte generator)
    // and PELT's state (the fair runqueue's averages, 64 bytes, and the
    // summary's load average, running task and pending removals, about 50;
    // deadline push/pull's two summary words and two counters, 32, with
    // padding about 50; PELT's capacity-invariant clock, its lag and lost
    // idle time and the summary's published lag, about 24; the HRTICK
    // timer's two instants, the slice's end and the fair server's, 16,
    // with padding about 50; the wakeup decision's pick counters, five
    // u64 per fair runqueue, 40, with padding about 50; the balancer's
    // `sgc->imbalance` flag per level, which took the slot past a 64-byte
    // line, 64; the load-balance statistics of `/proc/schedstat`'s domain
    // lines, eleven u32 per level (eight of them per idle type), 108 bytes
    // a level, 432 for the 4 levels, 448 in whole 64-byte lines).
    let (s, empty_machine) = live(|| machine(&cfg, cpus, 0));
    assert_eq!(empty_machine, s.heap_bytes());
    assert!(
        empty_machine <= cpus * 3392,
        "{empty_machine} bytes for {cpus} idle CPUs"
    );
    drop(s);
    let (s, total) = live(|| machine(&cfg, cpus, n));
    assert_eq!(total, s.heap_bytes());
    let bound = empty_machine + n * 2 * (task + 120) + cpus * 8 * (task + 120);
    assert!(total <= bound, "{total} bytes > {bound}");
    // Under 1/64 of what the old per-CPU arenas alone took.
    assert!(64 * total < cpus * 10_000 * task, "{total} bytes");
    for cpu in 0..cpus {
        let rq = s.cpu_rq(cpu_id(cpu));
        rq.check().unwrap();
        assert!(
            rq.slot_capacity() <= 64,
            "cpu {cpu}: {} slots",
            rq.slot_capacity()
        );
    }
    // Pre-sizing (what a kernel does at boot) reserves every CPU at once,
    // with interrupts restored after each lock.
    let (_, reserved) = live(|| s.try_reserve(100).unwrap());
    assert_eq!(MASKED.load(Ordering::Relaxed), 0);
    assert_eq!(total + reserved, s.heap_bytes());
    for cpu in 0..cpus {
        assert_eq!(s.cpu_rq(cpu_id(cpu)).slot_capacity(), 100);
    }
    assert_eq!(IPIS.load(Ordering::Relaxed), 0, "every wakeup was local");
    eprintln!(
        "memory: empty rq {empty} B, {per_task} B per task, {cpus} CPUs idle {empty_machine} B, \
         {cpus} CPUs x {n} tasks {total} B"
    );

    refused_growth_is_an_error(&cfg);
}

/// The allocator refuses the first, second, ... allocation of a growth: each
/// time the enqueue is an error, the runqueue is intact, and it works once
/// memory is there. A wake list that cannot grow falls back to waking the
/// task by locking the remote runqueue.
fn refused_growth_is_an_error(cfg: &Arc<SchedConfig>) {
    let t = SchedTask::new(TaskParams::default());
    for granted in 0..7 {
        let mut rq = Rq::new(cpu_id(0), cfg.clone(), 1000);
        for i in 0..8 {
            rq.wake_up_new_task(TaskId(i), t);
        }
        assert_eq!(rq.slot_capacity(), 8);
        let r = granting(granted, || rq.try_wake_up_new_task(TaskId(8), t));
        assert_eq!(r.err(), Some(RqError::NoMemory), "{granted} granted");
        rq.check().unwrap();
        assert_eq!((rq.nr_running(), rq.slot_capacity()), (8, 8));
        assert!(rq.task(TaskId(8)).is_none());
        rq.try_wake_up_new_task(TaskId(8), t).unwrap();
        rq.check().unwrap();
        assert_eq!((rq.nr_running(), rq.slot_capacity()), (9, 16));
    }

    // Seven allocations grow it (arena, ids, free queue and its flags,
    // leaf_of, tree nodes, id map): with seven granted it grows.
    let mut rq = Rq::new(cpu_id(0), cfg.clone(), 1000);
    for i in 0..8 {
        rq.wake_up_new_task(TaskId(i), t);
    }
    granting(7, || rq.try_wake_up_new_task(TaskId(8), t)).unwrap();
    rq.check().unwrap();

    // A wakeup for an empty CPU goes through its wake list (ttwu_queue_cond);
    // when the list cannot grow, the waker enqueues directly instead.
    let s = Scheduler::new(Masking, cfg.clone(), 3, 100);
    s.cpu_rq(cpu_id(1)).try_reserve(10).unwrap();
    s.cpu_rq(cpu_id(2)).try_reserve(10).unwrap();
    let out = granting(0, || {
        s.ttwu_queue(cpu_id(1), cpu_id(0), TaskId(3), t, WakeFlags::empty())
    });
    assert!(
        matches!(out, WakeOutcome::Remote(c, _) if c == cpu_id(1)),
        "{out:?}"
    );
    assert!(s.cpu_rq(cpu_id(1)).task(TaskId(3)).is_some());
    assert!(!s.has_pending_wakeups(cpu_id(1)));
    let out = s.ttwu_queue(cpu_id(2), cpu_id(0), TaskId(4), t, WakeFlags::empty());
    assert_eq!(
        out,
        WakeOutcome::Queued {
            cpu: cpu_id(2),
            ipi: true
        }
    );
    assert!(s.has_pending_wakeups(cpu_id(2)));
}

/// CPU `i` (below `MAX_CPUS`).
fn cpu_id(i: usize) -> sched::CpuId {
    sched::CpuId::new(i).expect("a CPU below MAX_CPUS")
}
