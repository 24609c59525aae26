//! Memory follows the tasks, not the id space: measured with a test-local
//! counting allocator (live heap bytes), which also checks that the
//! runqueues' own accounting (`heap_bytes`) is exact. One test function, so
//! no other test allocates while it measures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sched::smp::{Platform, Scheduler};
use sched::{Rq, SchedConfig, SchedTask, TaskId, TaskParams};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` unchanged and only keeps a count.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: `p` came from `System` with `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new, Ordering::Relaxed);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
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
    fn send_resched_ipi(&self, cpu: usize) {
        panic!("IPI to cpu {cpu}: every wakeup here is local");
    }
}

fn machine(cfg: &Arc<SchedConfig>, cpus: usize, tasks: usize) -> Scheduler<Masking> {
    let s = Scheduler::new(Masking, cfg.clone(), cpus, tasks.max(1));
    for i in 0..tasks {
        let mut rq = s.cpu_rq(i % cpus);
        rq.wake_up_new_task(TaskId(i as u32), SchedTask::new(TaskParams::default()));
    }
    s
}

#[test]
fn memory_is_o_tasks_plus_o_cpus() {
    let cfg = Arc::new(SchedConfig::new(256, 250));
    let task = std::mem::size_of::<SchedTask>();

    // An empty runqueue allocates nothing, whatever its id limit.
    let (rq, empty) = live(|| Rq::new(0, cfg.clone(), u32::MAX as usize));
    assert_eq!((empty, rq.heap_bytes()), (0, 0));

    // Per task held: the task's state plus about a hundred bytes of slot,
    // map and tree, times at most 2 for the doubling.
    let (rq, bytes) = live(|| {
        let mut rq = Rq::new(0, cfg.clone(), 1 << 20);
        for i in 0..10_000u32 {
            rq.wake_up_new_task(TaskId(i * 7), SchedTask::new(TaskParams::default()));
        }
        rq
    });
    rq.check().unwrap();
    assert_eq!(bytes, rq.heap_bytes(), "heap_bytes is exact");
    let per_task = bytes / 10_000;
    assert!(per_task <= 2 * (task + 120), "{per_task} bytes per task");
    drop(rq);

    // The simulator's machine: before, 256 arenas of 10 000 entries (plus
    // wake lists of as many) were allocated up front, ~1.1 GiB.
    let (s, empty_machine) = live(|| machine(&cfg, 256, 0));
    assert_eq!(empty_machine, s.heap_bytes());
    assert!(
        empty_machine <= 256 * 2048,
        "{empty_machine} bytes for 256 idle CPUs"
    );
    drop(s);
    let (s, total) = live(|| machine(&cfg, 256, 10_000));
    assert_eq!(total, s.heap_bytes());
    let bound = empty_machine + 10_000 * 2 * (task + 120) + 256 * 8 * (task + 120);
    assert!(total <= bound, "{total} bytes > {bound}");
    // Under 1/64 of what the old per-CPU arenas alone took.
    assert!(64 * total < 256 * 10_000 * task, "{total} bytes");
    for cpu in 0..256 {
        let rq = s.cpu_rq(cpu);
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
    for cpu in 0..256 {
        assert_eq!(s.cpu_rq(cpu).slot_capacity(), 100);
    }
    eprintln!(
        "memory: empty rq {empty} B, {per_task} B per task, 256 CPUs idle {empty_machine} B, \
         256 CPUs x 10000 tasks {total} B"
    );
}
