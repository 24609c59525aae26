//! Model checks of the wake/switch protocol with
//! [`loom`](https://docs.rs/loom) (`make test-loom`: `--cfg loom`, these
//! tests only). Under loom the protocol's locks and atomics (`crate::sync`)
//! are loom's, and each test runs a few lifecycle calls on two or three
//! threads over every interleaving loom's scheduler can produce (no
//! preemption bound unless `LOOM_MAX_PREEMPTIONS` sets one: loom's
//! partial-order reduction keeps the full search to about 1 600 runs of the
//! four tests, under a second). After the
//! threads join, the scheduler must be consistent ([`Scheduler::check`]:
//! no task held by two runqueues) and the task held exactly where its cell
//! says. The races:
//! - a wake racing the switch-out of the task that just went to sleep: the
//!   task must not be picked on another CPU before its context is saved;
//! - two wakes of one sleeping task: it is queued once;
//! - a wake racing the balancer's migration of the task;
//! - a remote wake list drained (by the IPI's handler) while a new entry
//!   arrives: no entry is stranded without an IPI.

use alloc::sync::Arc as StdArc;
use core::sync::atomic::{AtomicU64, Ordering as CoreOrdering};

use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::{Platform, Scheduler, HOME_PARKED, HOME_TRANSIT};
use crate::config::SchedConfig;
use crate::cpumask::CpuMask;
use crate::CpuId;

/// CPU `i`.
fn cpu_id(i: usize) -> CpuId {
    CpuId::new(i).expect("a CPU below MAX_CPUS")
}
use crate::flags::WakeFlags;
use crate::rq::PrevAction;
use crate::task::{SchedTask, TaskId, TaskParams};

/// A platform of counters; spinning hands the turn to another loom thread.
struct LoomPlatform {
    clock_ns: AtomicU64,
    ipis: [AtomicU32; 2],
}

impl Platform for LoomPlatform {
    fn irq_save(&self) -> bool {
        false
    }
    fn irq_restore(&self, _was_enabled: bool) {}
    fn now_ns(&self) -> u64 {
        // Not a protocol variable: a plain counter (loom need not model it).
        self.clock_ns.fetch_add(1_000, CoreOrdering::Relaxed)
    }
    fn send_resched_ipi(&self, cpu: crate::CpuId) {
        self.ipis[cpu.index()].fetch_add(1, Ordering::Release);
    }
    fn cpu_relax(&self) {
        thread::yield_now();
    }
}

type S = Scheduler<LoomPlatform>;

/// Runs `f` under every interleaving loom explores; returns how many it
/// ran (printed by the tests, for the record).
fn model(name: &str, f: impl Fn() + Sync + Send + 'static) -> usize {
    let b = loom::model::Builder::new();
    let runs = StdArc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    b.check(move || {
        counter.fetch_add(1, CoreOrdering::Relaxed);
        f();
    });
    let n = runs.load(CoreOrdering::Relaxed);
    std::eprintln!("{name}: {n} interleavings");
    assert!(n > 1, "{name}: loom explored a single interleaving");
    n
}

/// Two CPUs, task ids below 8, balancing free of cache-hot refusals, and
/// no delayed dequeue (a sleeper leaves its runqueue for its cell at once;
/// the delayed path keeps it in the runqueue, under its lock, and is not
/// what these races are about).
fn machine() -> Arc<S> {
    let cfg = StdArc::new(SchedConfig::new(2, 250));
    cfg.features
        .write("NO_DELAY_DEQUEUE")
        .expect("a valid feature");
    cfg.tunables
        .set("kernel.sched_migration_cost_ns", "0")
        .expect("a valid tunable");
    let p = LoomPlatform {
        clock_ns: AtomicU64::new(1_000_000),
        ipis: [AtomicU32::new(0), AtomicU32::new(0)],
    };
    Arc::new(Scheduler::new(p, cfg, 2, 8))
}

fn task_on(mask: &[usize]) -> SchedTask {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::from_cpus(mask);
    t
}

/// Runs `cpu`'s scheduler once (its wake list drained, the running task
/// staying) and returns what it switched to.
fn run_once(s: &S, cpu: CpuId) -> Option<TaskId> {
    let sw = {
        let mut rq = s.cpu_rq(cpu);
        s.schedule(&mut rq, PrevAction::Stays)
    };
    s.finish_switch(cpu, &sw);
    sw.next
}

/// After the threads: every wake list drained, then the whole scheduler
/// consistent and `id` held by exactly the runqueue its cell names.
fn settle_and_check(s: &S, id: TaskId) {
    for cpu in 0..2 {
        let mut rq = s.cpu_rq(cpu_id(cpu));
        s.sched_ttwu_pending(&mut rq);
    }
    let mut scratch = s.check_scratch();
    s.check(&mut scratch).expect("consistent scheduler");
    let home = s.load_home(id);
    let held = |cpu: usize| {
        let rq = s.cpu_rq(cpu_id(cpu));
        rq.task(id).is_some() || rq.curr() == Some(id)
    };
    if home == HOME_PARKED {
        assert!(!held(0) && !held(1), "task {} parked and held", id.0);
    } else {
        assert_eq!(home & HOME_TRANSIT, 0, "task {} still in transit", id.0);
        let cpu = home as usize;
        assert!(cpu < 2, "task {} lost (home {home:#x})", id.0);
        assert!(held(cpu), "task {} homed on cpu {cpu} but not held", id.0);
        assert!(!held(1 - cpu), "task {} held by both CPUs", id.0);
    }
}

/// The task that just went to sleep on CPU 0 is woken from CPU 1 while CPU
/// 0 is still switching away from it: CPU 1 may run it only once CPU 0 has
/// saved its context (`switching`, Linux's `p->on_cpu`).
#[test]
fn loom_wake_races_switch_out() {
    model("loom_wake_races_switch_out", || {
        let s = machine();
        let t = TaskId(1);
        s.spawn(t, task_on(&[0, 1]), cpu_id(0)).unwrap();
        let home = s.task_cpu(t).unwrap();
        assert_eq!(run_once(&s, home), Some(t));
        let saved = Arc::new(AtomicBool::new(false));
        let other = cpu_id(1 - home.index());

        let (s1, saved1) = (s.clone(), saved.clone());
        let sleeper = thread::spawn(move || {
            let mut rq = s1.cpu_rq(home);
            let sw = s1.schedule(&mut rq, PrevAction::Sleeps);
            // The context switch, with the runqueue locked: the sleeper's
            // registers are saved before the lock is let go.
            saved1.store(true, Ordering::Release);
            drop(rq);
            s1.finish_switch(home, &sw);
        });
        let (s2, saved2) = (s.clone(), saved.clone());
        let waker = thread::spawn(move || {
            s2.wake(t, WakeFlags::empty(), other).unwrap();
            for cpu in [other, home] {
                let sw = {
                    let mut rq = s2.cpu_rq(cpu);
                    s2.schedule(&mut rq, PrevAction::Stays)
                };
                if sw.next == Some(t) && sw.prev != Some(t) {
                    assert!(
                        saved2.load(Ordering::Acquire),
                        "cpu {cpu} switched to the task before its context was saved"
                    );
                }
                s2.finish_switch(cpu, &sw);
            }
        });
        sleeper.join().unwrap();
        waker.join().unwrap();
        settle_and_check(&s, t);
    });
}

/// Two wakers of one sleeping task, from both CPUs: it is queued once.
#[test]
fn loom_two_wakes_of_one_task() {
    model("loom_two_wakes_of_one_task", || {
        let s = machine();
        let t = TaskId(2);
        s.spawn(t, task_on(&[0, 1]), cpu_id(0)).unwrap();
        let home = s.task_cpu(t).unwrap();
        assert_eq!(run_once(&s, home), Some(t));
        let sw = {
            let mut rq = s.cpu_rq(home);
            s.schedule(&mut rq, PrevAction::Sleeps)
        };
        s.finish_switch(home, &sw);
        assert_eq!(s.load_home(t), HOME_PARKED);

        let wakers: alloc::vec::Vec<_> = (0..2)
            .map(|cpu| {
                let s = s.clone();
                thread::spawn(move || {
                    s.wake(t, WakeFlags::empty(), cpu_id(cpu)).unwrap();
                })
            })
            .collect();
        for w in wakers {
            w.join().unwrap();
        }
        settle_and_check(&s, t);
        assert_ne!(s.load_home(t), HOME_PARKED, "woken twice, yet asleep");
    });
}

/// CPU 1's balancer pulls a runnable task from CPU 0 while a waker on CPU 0
/// wakes it (it is runnable: the wake finds it wherever it is).
#[test]
fn loom_wake_races_balancer_migration() {
    model("loom_wake_races_balancer_migration", || {
        let s = machine();
        let (t, u) = (TaskId(3), TaskId(4));
        s.spawn(t, task_on(&[0]), cpu_id(0)).unwrap();
        s.spawn(u, task_on(&[0]), cpu_id(0)).unwrap();
        // Both on CPU 0 (spawned pinned there, then allowed CPU 1 too:
        // a queued task allowed where it is stays), u running, t queued.
        for id in [t, u] {
            s.set_affinity(id, CpuMask::from_cpus(&[0, 1]), cpu_id(0))
                .unwrap();
        }
        assert_eq!(
            (s.task_cpu(t), s.task_cpu(u)),
            (Some(cpu_id(0)), Some(cpu_id(0)))
        );
        let running = run_once(&s, cpu_id(0)).unwrap();
        let queued = if running == t { u } else { t };

        let s1 = s.clone();
        let balancer = thread::spawn(move || {
            s1.load_balance(cpu_id(1), true);
        });
        let s2 = s.clone();
        let waker = thread::spawn(move || {
            s2.wake(queued, WakeFlags::empty(), cpu_id(0)).unwrap();
        });
        balancer.join().unwrap();
        waker.join().unwrap();
        settle_and_check(&s, queued);
        settle_and_check(&s, running);
    });
}

/// Two sleepers that may only run on CPU 1 are woken from CPU 0 one after
/// the other while CPU 1's IPI handler drains its wake list: every entry
/// is either drained or announced by an IPI of its own.
#[test]
fn loom_wake_list_drained_while_entry_arrives() {
    model("loom_wake_list_drained_while_entry_arrives", || {
        let s = machine();
        let (a, b) = (TaskId(5), TaskId(6));
        for id in [a, b] {
            s.spawn(id, task_on(&[1]), cpu_id(1)).unwrap();
        }
        // Both asleep, parked in their cells, having last run on CPU 1.
        for _ in 0..2 {
            let next = run_once(&s, cpu_id(1)).unwrap();
            let sw = {
                let mut rq = s.cpu_rq(cpu_id(1));
                s.schedule(&mut rq, PrevAction::Sleeps)
            };
            assert_eq!(sw.prev, Some(next));
            s.finish_switch(cpu_id(1), &sw);
        }
        assert_eq!(s.load_home(a), HOME_PARKED);
        assert_eq!(s.load_home(b), HOME_PARKED);
        let ipis0 = s.platform.ipis[1].load(Ordering::Acquire);

        let s1 = s.clone();
        let waker = thread::spawn(move || {
            s1.wake(a, WakeFlags::empty(), cpu_id(0)).unwrap();
            s1.wake(b, WakeFlags::empty(), cpu_id(0)).unwrap();
        });
        let s2 = s.clone();
        let handler = thread::spawn(move || {
            // The IPI handler: runs once the first IPI arrives.
            while s2.platform.ipis[1].load(Ordering::Acquire) == ipis0 {
                thread::yield_now();
            }
            let mut rq = s2.cpu_rq(cpu_id(1));
            s2.sched_ttwu_pending(&mut rq);
        });
        waker.join().unwrap();
        handler.join().unwrap();
        // Whatever is still listed must have had an IPI after the drain.
        if s.has_pending_wakeups(cpu_id(1)) {
            assert!(
                s.platform.ipis[1].load(Ordering::Acquire) >= ipis0 + 2,
                "a wakeup is listed on cpu 1 with no IPI to drain it"
            );
        }
        settle_and_check(&s, a);
        settle_and_check(&s, b);
        assert_eq!((s.load_home(a), s.load_home(b)), (1, 1));
    });
}
