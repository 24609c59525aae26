//! Many CPUs on the host: placement, remote wakeups, balancing and fairness,
//! with a platform whose IPIs are counters and whose clock is virtual.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common;
use common::cpu_id;

use common::plat::Plat;
use sched::rq::WAKEUP_ROW_NAMES;
use sched::smp::{CheckScratch, Scheduler, WakeOutcome};
use sched::CpuId;
use sched::{
    CpuMask, Feature, Resched, SchedConfig, SchedTask, TaskId, TaskParams, Topology, WakeFlags,
};

use crate::common::MS;

fn ipis(s: &Scheduler<Plat>, cpu: CpuId) -> u64 {
    s.platform.ipis[cpu.index()].load(Ordering::Relaxed)
}

struct Sim {
    s: Scheduler<Plat>,
    now: u64,
    tick_ns: u64,
    /// Sleeping tasks' state, as the kernel would keep it.
    off: Vec<Option<SchedTask>>,
    idle_streak: Vec<u64>,
    max_idle_streak: Vec<u64>,
    balance_every: u64,
    ticks: u64,
    /// For the every-tick `Scheduler::check`.
    scratch: CheckScratch,
}

impl Sim {
    fn new(ncpus: usize, hz: u32) -> Sim {
        let cfg = Arc::new(SchedConfig::new(ncpus as u32, hz));
        let s = Scheduler::new(Plat::default(), cfg.clone(), ncpus, 64);
        let scratch = s.check_scratch();
        Sim {
            s,
            scratch,
            now: 1,
            tick_ns: cfg.tick_ns(),
            off: vec![None; 64],
            idle_streak: vec![0; ncpus],
            max_idle_streak: vec![0; ncpus],
            balance_every: 4,
            ticks: 0,
        }
    }

    fn fork(&mut self, id: u32, p: TaskParams, from: usize) -> usize {
        for c in 0..self.s.nr_cpus() {
            self.s.cpu_rq(cpu_id(c)).update_rq_clock(self.now);
        }
        let (cpu, _) = self
            .s
            .wake_up_new_task(TaskId(id), SchedTask::new(p), cpu_id(from));
        cpu.index()
    }

    /// One tick on every CPU: drain wakeups, tick, balance, pick.
    fn tick(&mut self) {
        self.now += self.tick_ns;
        self.s.platform.now.store(self.now, Ordering::Relaxed);
        self.ticks += 1;
        for c in 0..self.s.nr_cpus() {
            let newidle;
            {
                let mut rq = self.s.cpu_rq(cpu_id(c));
                rq.update_rq_clock(self.now);
                self.s.sched_ttwu_pending(&mut rq);
                let r = rq.task_tick();
                if r != Resched::None || rq.curr().is_none() {
                    rq.pick_next_task();
                }
                newidle = rq.curr().is_none();
            }
            let periodic = (self.ticks + c as u64).is_multiple_of(self.balance_every);
            if (newidle || periodic) && !self.s.load_balance(cpu_id(c), newidle).is_empty() {
                let mut rq = self.s.cpu_rq(cpu_id(c));
                if rq.curr().is_none() || rq.need_resched() != Resched::None {
                    rq.pick_next_task();
                }
            }
            let idle = self.s.cpu_rq(cpu_id(c)).curr().is_none();
            if idle {
                self.idle_streak[c] += self.tick_ns;
                self.max_idle_streak[c] = self.max_idle_streak[c].max(self.idle_streak[c]);
            } else {
                self.idle_streak[c] = 0;
            }
        }
        // Every runqueue's invariants, and no task on two of them.
        self.s.check(&mut self.scratch).unwrap();
    }

    fn runtime(&self, id: u32) -> u64 {
        for c in 0..self.s.nr_cpus() {
            let mut rq = self.s.cpu_rq(cpu_id(c));
            if rq.curr() == Some(TaskId(id)) {
                rq.update_curr();
            }
            if let Some(t) = rq.task(TaskId(id)) {
                return t.se.sum_exec_runtime;
            }
        }
        self.off[id as usize].unwrap().se.sum_exec_runtime
    }
}

#[test]
fn fork_balancing_spreads_over_idle_cpus() {
    let mut sim = Sim::new(4, 250);
    let cpus: Vec<usize> = (0..4)
        .map(|i| sim.fork(i, TaskParams::default(), 0))
        .collect();
    let mut sorted = cpus.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![0, 1, 2, 3],
        "one new task per idle CPU: {cpus:?}"
    );
}

#[test]
fn wakeup_prefers_idle_cpu_and_respects_affinity() {
    let sim = Sim::new(4, 250);
    // CPUs 0 and 1 busy.
    for (id, cpu) in [(1u32, 0usize), (2, 1)] {
        let mut rq = sim.s.cpu_rq(cpu_id(cpu));
        rq.wake_up_new_task(TaskId(id), SchedTask::new(TaskParams::default()));
        rq.pick_next_task();
    }
    let mut t = SchedTask::new(TaskParams::default());
    t.cpu = cpu_id(0);
    let (cpu, wf) = sim.s.select_task_rq(&t, cpu_id(1), WakeFlags::TTWU);
    assert!(
        cpu == cpu_id(2) || cpu == cpu_id(3),
        "idle CPU expected, got {cpu}"
    );
    assert!(wf.contains(WakeFlags::RQ_SELECTED) && wf.contains(WakeFlags::MIGRATED));
    // Pinned to CPU 1 (busy): stays there.
    t.cpus_allowed = CpuMask::from_cpus(&[1]);
    let (cpu, wf) = sim.s.select_task_rq(&t, cpu_id(0), WakeFlags::TTWU);
    assert_eq!(cpu, cpu_id(1));
    assert!(wf.contains(WakeFlags::MIGRATED));
    // Previous CPU idle: stays.
    let mut t = SchedTask::new(TaskParams::default());
    t.cpu = cpu_id(3);
    assert_eq!(
        sim.s.select_task_rq(&t, cpu_id(0), WakeFlags::TTWU).0,
        cpu_id(3)
    );
}

/// An RT wakee is placed as Linux's `select_task_rq_rt` places it: on its
/// previous CPU, preempting the fair task there, even when another CPU is
/// idle (fair placement would move it there, behind an IPI); elsewhere only
/// when an RT task of at least its priority runs there, and then on the CPU
/// running the lowest-ranked task, an idle one first.
#[test]
fn rt_wakeup_stays_on_its_cpu_unless_an_equal_rt_task_runs_there() {
    let sim = Sim::new(4, 250);
    let fifo = |prio: u8| TaskParams {
        policy: sched::Policy::Fifo,
        rt_priority: prio,
        ..TaskParams::default()
    };
    // CPU 0: a fair task; CPU 1: FIFO 50; CPU 2: FIFO 10; CPU 3: idle.
    for (id, cpu, p) in [
        (1u32, 0usize, TaskParams::default()),
        (2, 1, fifo(50)),
        (3, 2, fifo(10)),
    ] {
        let mut rq = sim.s.cpu_rq(cpu_id(cpu));
        rq.wake_up_new_task(TaskId(id), SchedTask::new(p));
        rq.pick_next_task();
    }
    let mut t = SchedTask::new(fifo(50));
    t.cpu = cpu_id(0);
    let (cpu, wf) = sim.s.select_task_rq(&t, cpu_id(0), WakeFlags::TTWU);
    assert_eq!(
        cpu,
        cpu_id(0),
        "a fair task runs on its CPU: it preempts it there"
    );
    assert!(!wf.contains(WakeFlags::MIGRATED));
    // Its CPU runs FIFO 50 (its own priority): the idle CPU 3.
    t.cpu = cpu_id(1);
    assert_eq!(
        sim.s.select_task_rq(&t, cpu_id(0), WakeFlags::TTWU).0,
        cpu_id(3)
    );
    // Not allowed on CPU 3: CPU 0's fair task ranks below CPU 2's FIFO 10.
    t.cpus_allowed = CpuMask::from_cpus(&[0, 1, 2]);
    assert_eq!(
        sim.s.select_task_rq(&t, cpu_id(1), WakeFlags::TTWU).0,
        cpu_id(0)
    );
    // Only CPUs 1 and 2: CPU 2's FIFO 10 ranks below it.
    t.cpus_allowed = CpuMask::from_cpus(&[1, 2]);
    assert_eq!(
        sim.s.select_task_rq(&t, cpu_id(1), WakeFlags::TTWU).0,
        cpu_id(2)
    );
    // A FIFO 5 wakee outranks nothing there: it stays queued on CPU 1.
    let mut low = SchedTask::new(fifo(5));
    low.cpu = cpu_id(1);
    low.cpus_allowed = CpuMask::from_cpus(&[1, 2]);
    assert_eq!(
        sim.s.select_task_rq(&low, cpu_id(1), WakeFlags::TTWU).0,
        cpu_id(1)
    );
    // A fair wakee on CPU 0 still goes to the idle CPU.
    let mut f = SchedTask::new(TaskParams::default());
    f.cpu = cpu_id(0);
    assert_eq!(
        sim.s.select_task_rq(&f, cpu_id(0), WakeFlags::TTWU).0,
        cpu_id(3)
    );
}

#[test]
fn sync_wakeup_is_affine_when_no_cpu_is_idle() {
    let sim = Sim::new(2, 250);
    let mut id = 1;
    // CPU 0: the waker alone; CPU 1: three tasks.
    for (cpu, n) in [(0usize, 1), (1, 3)] {
        let mut rq = sim.s.cpu_rq(cpu_id(cpu));
        for _ in 0..n {
            rq.wake_up_new_task(TaskId(id), SchedTask::new(TaskParams::default()));
            id += 1;
        }
        rq.pick_next_task();
    }
    let mut t = SchedTask::new(TaskParams::default());
    t.cpu = cpu_id(1);
    assert_eq!(
        sim.s
            .select_task_rq(&t, cpu_id(0), WakeFlags::TTWU | WakeFlags::SYNC)
            .0,
        cpu_id(0),
        "sync: come to the waker"
    );
    sim.s.cfg.features.set(Feature::WaIdle, false);
    sim.s.cfg.features.set(Feature::WaWeight, false);
    assert_eq!(
        sim.s
            .select_task_rq(&t, cpu_id(0), WakeFlags::TTWU | WakeFlags::SYNC)
            .0,
        cpu_id(1),
        "no wake-affine: stay"
    );
}

/// Two CPUs, each its own LLC (so every remote wakeup goes through the wake
/// list, whatever the target runs).
fn two_llcs() -> Scheduler<Plat> {
    let cfg = Arc::new(SchedConfig::new(2, 250));
    let topo = Topology::uniform(2, 1, 1, 2).unwrap();
    Scheduler::with_topology(Plat::default(), cfg, topo, 64)
}

#[test]
fn remote_wakeups_go_through_the_wake_list_and_lose_none() {
    let sim = Sim {
        s: two_llcs(),
        ..Sim::new(2, 250)
    };
    // A running task on CPU 1 so that it is not idle.
    {
        let mut rq = sim.s.cpu_rq(cpu_id(1));
        rq.wake_up_new_task(TaskId(1), SchedTask::new(TaskParams::default()));
        rq.pick_next_task();
    }
    // 10k wakeups of task 2 from CPU 0 onto CPU 1, each drained and slept
    // (300 under Miri, which interprets ~1000x slower).
    let n: u64 = if cfg!(miri) { 300 } else { 10_000 };
    let mut st = Some(SchedTask::new(TaskParams::default()));
    for i in 0..n {
        let task = st.take().unwrap();
        let out = sim
            .s
            .ttwu_queue(cpu_id(1), cpu_id(0), TaskId(2), task, WakeFlags::TTWU);
        assert!(
            matches!(out, WakeOutcome::Queued { cpu, ipi: true } if cpu == cpu_id(1)),
            "{out:?}"
        );
        let mut rq = sim.s.cpu_rq(cpu_id(1));
        rq.update_rq_clock(1 + i * 1000);
        assert_eq!(sim.s.sched_ttwu_pending(&mut rq), 1);
        // It runs (within a few slices), then sleeps again.
        let mut k = 0;
        while rq.curr() != Some(TaskId(2)) {
            k += 1;
            assert!(k < 100, "woken task never ran");
            rq.update_rq_clock(1 + i * 1000 + k * MS / 4);
            rq.resched_curr(Resched::Now);
            rq.pick_next_task();
        }
        let sw = rq.schedule(true);
        st = Some(match sw.prev_blocked {
            Some(t) => t,
            None => match rq.ttwu_runnable(TaskId(2), WakeFlags::empty()) {
                // Still delayed: finish it the way the kernel's wakeup would.
                sched::TtwuRunnable::Woken(_) => rq
                    .dequeue_task(TaskId(2), sched::DequeueFlags::SAVE)
                    .unwrap()
                    .unwrap(),
                sched::TtwuRunnable::Blocked(t) => t,
                sched::TtwuRunnable::NotHere => unreachable!(),
            },
        });
        rq.check().unwrap();
    }
    assert_eq!(ipis(&sim.s, cpu_id(1)), n);
    assert_eq!(st.unwrap().nr_wakeups, n);
    // NO_TTWU_QUEUE: the waker locks the remote runqueue; an IPI only when needed now.
    sim.s.cfg.features.set(Feature::TtwuQueue, false);
    let mut t = SchedTask::new(TaskParams {
        nice: 19,
        ..Default::default()
    });
    t.cpu = cpu_id(1);
    let out = sim
        .s
        .ttwu_queue(cpu_id(1), cpu_id(0), TaskId(3), t, WakeFlags::TTWU);
    assert!(matches!(out, WakeOutcome::Remote(c, _) if c == cpu_id(1)));
}

/// Linux's `ttwu_queue_cond()`: the wake list (and its IPI) only for a CPU
/// outside the waker's LLC or one whose runqueue holds nothing; a busy CPU
/// of the same LLC is enqueued on by the waker, which decides preemption.
#[test]
fn remote_wakeup_delivery_follows_ttwu_queue_cond() {
    let sim = Sim::new(4, 250);
    let s = &sim.s;
    let t = SchedTask::new(TaskParams::default());
    // CPU 1 holds nothing: queued, one IPI.
    assert!(s.ttwu_queue_cond(cpu_id(0), cpu_id(1), &t));
    assert_eq!(
        s.ttwu_queue(cpu_id(1), cpu_id(0), TaskId(1), t, WakeFlags::TTWU),
        WakeOutcome::Queued {
            cpu: cpu_id(1),
            ipi: true
        }
    );
    assert_eq!(ipis(s, cpu_id(1)), 1);
    {
        let mut rq = s.cpu_rq(cpu_id(1));
        assert_eq!(s.sched_ttwu_pending(&mut rq), 1);
        assert_eq!(rq.pick_next_task(), Some(TaskId(1)));
    }
    // CPU 1 now runs task 1: the waker enqueues directly; the wakee (same
    // slice, placed with no lag) does not preempt, so no IPI.
    assert!(!s.ttwu_queue_cond(cpu_id(0), cpu_id(1), &t));
    let out = s.ttwu_queue(cpu_id(1), cpu_id(0), TaskId(2), t, WakeFlags::TTWU);
    let WakeOutcome::Remote(c, d) = out else {
        panic!("{out:?}")
    };
    assert_eq!(c, cpu_id(1));
    assert!(!s.has_pending_wakeups(cpu_id(1)));
    assert_eq!(
        s.cpu_rq(cpu_id(1)).task(TaskId(2)).map(|t| t.cpu),
        Some(cpu_id(1))
    );
    assert_eq!(ipis(s, cpu_id(1)), u64::from(d.resched == Resched::Now) + 1);
    // A wakee that may not run on the target is never queued there.
    let mut pinned = t;
    pinned.cpus_allowed = CpuMask::from_cpus(&[0]);
    assert!(!s.ttwu_queue_cond(cpu_id(0), cpu_id(2), &pinned));
    // This CPU: never through the list.
    assert!(!s.ttwu_queue_cond(cpu_id(2), cpu_id(2), &t));
    // NO_TTWU_QUEUE: never, even to an empty CPU.
    s.cfg.features.set(Feature::TtwuQueue, false);
    assert!(!s.ttwu_queue_cond(cpu_id(0), cpu_id(2), &t));
    assert!(matches!(
        s.ttwu_queue(cpu_id(2), cpu_id(0), TaskId(3), t, WakeFlags::TTWU),
        WakeOutcome::Remote(c, _) if c == cpu_id(2)
    ));
    s.cfg.features.set(Feature::TtwuQueue, true);

    // Two LLCs of two CPUs: a busy CPU of the other LLC still gets the list.
    let cfg = Arc::new(SchedConfig::new(4, 250));
    let topo = Topology::uniform(4, 1, 2, 2).unwrap();
    let s = Scheduler::with_topology(Plat::default(), cfg, topo, 64);
    for cpu in [1, 2] {
        let mut rq = s.cpu_rq(cpu_id(cpu));
        rq.wake_up_new_task(
            TaskId(10 + cpu as u32),
            SchedTask::new(TaskParams::default()),
        );
        rq.pick_next_task();
    }
    assert!(
        !s.ttwu_queue_cond(cpu_id(0), cpu_id(1), &t),
        "same LLC, busy"
    );
    assert!(
        s.ttwu_queue_cond(cpu_id(0), cpu_id(2), &t),
        "other LLC, busy"
    );
    assert!(
        s.ttwu_queue_cond(cpu_id(0), cpu_id(3), &t),
        "other LLC, empty"
    );
    assert_eq!(
        s.ttwu_queue(cpu_id(2), cpu_id(0), TaskId(4), t, WakeFlags::TTWU),
        WakeOutcome::Queued {
            cpu: cpu_id(2),
            ipi: true
        }
    );
    assert!(matches!(
        s.ttwu_queue(cpu_id(1), cpu_id(0), TaskId(5), t, WakeFlags::TTWU),
        WakeOutcome::Remote(c, _) if c == cpu_id(1)
    ));
}

/// Linux's `sched_ttwu_pending()` activates a queued wakee with
/// `p->sched_remote_wakeup ? WF_MIGRATED : 0`: the waker's WF_SYNC does not
/// travel through the wake list. Under NEXT_BUDDY, a sync wakeup decided by
/// the waker keeps the buddy without preempting (`preempt_sync`'s runtime is
/// 0 right after `update_curr`); the same wakeup delivered through the list
/// onto a busy CPU is a plain one, and its eligible buddy is the pick.
#[test]
fn a_queued_wakeup_loses_its_sync_hint_as_in_linux() {
    let row = |rq: &sched::Rq, name: &str| {
        let i = WAKEUP_ROW_NAMES.iter().position(|n| *n == name).unwrap();
        rq.stats.wakeup_rows[i]
    };
    // NEXT_BUDDY on, CPU 1 running task 1; task 2 woken there from CPU 0
    // with the flags of a hackbench send.
    let wake_onto_busy_cpu1 = |s: &Scheduler<Plat>| {
        s.cfg.features.set(Feature::NextBuddy, true);
        {
            let mut rq = s.cpu_rq(cpu_id(1));
            rq.update_rq_clock(MS);
            rq.wake_up_new_task(TaskId(1), SchedTask::new(TaskParams::default()));
            rq.pick_next_task();
        }
        let sync = WakeFlags::TTWU | WakeFlags::SYNC | WakeFlags::RQ_SELECTED;
        s.ttwu_queue(
            cpu_id(1),
            cpu_id(0),
            TaskId(2),
            SchedTask::new(TaskParams::default()),
            sync,
        )
    };
    // Through the waker's own decision (same LLC, busy target): no preemption.
    let sim = Sim::new(2, 250);
    let out = wake_onto_busy_cpu1(&sim.s);
    assert!(
        matches!(out, WakeOutcome::Remote(c, _) if c == cpu_id(1)),
        "{out:?}"
    );
    {
        let rq = sim.s.cpu_rq(cpu_id(1));
        assert_eq!(row(&rq, "wk_sync_none"), 1);
        assert_eq!(rq.next_buddy(), Some(TaskId(2)));
        assert_eq!(rq.need_resched(), Resched::None);
    }
    // Through the wake list (two LLCs, busy target): WF_SYNC is gone, the
    // buddy is set and picked, and the wakee preempts.
    let s = two_llcs();
    let out = wake_onto_busy_cpu1(&s);
    assert!(
        matches!(out, WakeOutcome::Queued { cpu, ipi: true } if cpu == cpu_id(1)),
        "{out:?}"
    );
    let mut rq = s.cpu_rq(cpu_id(1));
    assert_eq!(s.sched_ttwu_pending(&mut rq), 1);
    assert_eq!(row(&rq, "wk_sync_none"), 0);
    assert_eq!(row(&rq, "wk_picked"), 1);
    assert_ne!(rq.need_resched(), Resched::None);
    assert_eq!(rq.pick_next_task(), Some(TaskId(2)));
}

/// The ineligible-waker rule of 6.19-rc1..rc6 (NEXT_BUDDY_INELIGIBLE_RESCHED,
/// `in_task() && !entity_eligible(cfs_rq, se)`) blames the running task for
/// a wakeup it made. A wakeup decided by the waker on the target's runqueue
/// is that (the waker's decision, in task context); one landed from the
/// target's wake list is not: Linux drains the list in the target's IPI,
/// where `in_task()` is false, so the rule never fires there.
#[test]
fn a_queued_wakeup_is_not_blamed_on_the_running_task() {
    let row = |rq: &sched::Rq, name: &str| {
        let i = WAKEUP_ROW_NAMES.iter().position(|n| *n == name).unwrap();
        rq.stats.wakeup_rows[i]
    };
    // CPU 1 runs task 1 with task 3 queued, until 1 is ineligible (it ran
    // 0.3 ms, within its slice, and 3 none, both from lag 0); then task 2
    // is woken there from CPU 0 with a plain wakeup's flags.
    let wake_onto_ineligible_cpu1 = |s: &Scheduler<Plat>| {
        s.cfg
            .features
            .set(Feature::NextBuddyIneligibleResched, true);
        {
            let mut rq = s.cpu_rq(cpu_id(1));
            rq.update_rq_clock(MS);
            rq.wake_up_new_task(TaskId(1), SchedTask::new(TaskParams::default()));
            rq.wake_up_new_task(TaskId(3), SchedTask::new(TaskParams::default()));
            while rq.pick_next_task() != Some(TaskId(1)) {}
            rq.clear_need_resched();
        }
        s.platform.now.store(MS + 300_000, Ordering::Relaxed);
        s.ttwu_queue(
            cpu_id(1),
            cpu_id(0),
            TaskId(2),
            SchedTask::new(TaskParams::default()),
            WakeFlags::TTWU | WakeFlags::RQ_SELECTED,
        )
    };
    // Decided by the waker (one LLC): the rule fires.
    let sim = Sim::new(2, 250);
    let out = wake_onto_ineligible_cpu1(&sim.s);
    assert!(
        matches!(out, WakeOutcome::Remote(c, _) if c == cpu_id(1)),
        "{out:?}"
    );
    assert_eq!(row(&sim.s.cpu_rq(cpu_id(1)), "wk_inelig_waker"), 1);
    // Landed from the wake list (two LLCs): it does not.
    let s = two_llcs();
    let out = wake_onto_ineligible_cpu1(&s);
    assert!(
        matches!(out, WakeOutcome::Queued { cpu, ipi: true } if cpu == cpu_id(1)),
        "{out:?}"
    );
    let mut rq = s.cpu_rq(cpu_id(1));
    rq.update_rq_clock(MS + 300_000);
    assert_eq!(s.sched_ttwu_pending(&mut rq), 1);
    assert_eq!(row(&rq, "wk_inelig_waker"), 0);
    // Decided once, in another row (beside the two new tasks' wakeups).
    assert_eq!(rq.stats.wakeup_rows.iter().sum::<u64>(), 3);
    assert_eq!(row(&rq, "wk_idle_cpu"), 2);
}

#[test]
fn balancing_pulls_from_busiest_bounded_by_nr_migrate_and_skips_cache_hot() {
    let sim = Sim::new(2, 250);
    {
        let mut rq = sim.s.cpu_rq(cpu_id(0));
        rq.update_rq_clock(10 * MS);
        for id in 1..=9 {
            rq.wake_up_new_task(TaskId(id), SchedTask::new(TaskParams::default()));
        }
        rq.pick_next_task();
    }
    sim.s
        .cfg
        .tunables
        .set("kernel.sched_nr_migrate", "2")
        .unwrap();
    // All queued tasks never ran: exec_start 0 is far in the past -> cold.
    let pulled = sim.s.load_balance(cpu_id(1), false);
    assert_eq!(pulled.len(), 2, "bounded by nr_migrate");
    assert_eq!(pulled.from_cpu(), cpu_id(0));
    // The ids reported are the ones that now live on CPU 1, and only those.
    let on1: Vec<TaskId> = sim.s.cpu_rq(cpu_id(1)).tasks().map(|(id, _)| id).collect();
    let mut ids = pulled.ids().to_vec();
    ids.sort_by_key(|t| t.0);
    let mut on1_sorted = on1.clone();
    on1_sorted.sort_by_key(|t| t.0);
    assert_eq!(ids, on1_sorted);
    assert!(ids
        .iter()
        .all(|id| sim.s.cpu_rq(cpu_id(0)).task(*id).is_none()));
    sim.s
        .cfg
        .tunables
        .set("kernel.sched_nr_migrate", "32")
        .unwrap();
    // 7 vs 2: half the difference moves.
    assert_eq!(sim.s.load_balance(cpu_id(1), false).len(), 2);
    let (a, b) = (
        sim.s.cpu_rq(cpu_id(0)).nr_runnable(),
        sim.s.cpu_rq(cpu_id(1)).nr_runnable(),
    );
    assert_eq!((a, b), (5, 4));
    assert_eq!(
        sim.s.load_balance(cpu_id(1), false).len(),
        0,
        "balanced within one task"
    );
    sim.s.cpu_rq(cpu_id(0)).check().unwrap();
    sim.s.cpu_rq(cpu_id(1)).check().unwrap();
    // Cache-hot: with a 10 ms migration cost, tasks that ran (or were queued)
    // within the last 10 ms are skipped by a periodic pass.
    let sim = Sim::new(2, 250);
    sim.s
        .cfg
        .tunables
        .set("kernel.sched_migration_cost_ns", "10000000")
        .unwrap();
    {
        let mut rq = sim.s.cpu_rq(cpu_id(0));
        for id in 1..=4 {
            rq.update_rq_clock(id as u64 * 100_000);
            rq.wake_up_new_task(TaskId(id), SchedTask::new(TaskParams::default()));
            rq.resched_curr(Resched::Now);
            rq.pick_next_task();
        }
        rq.update_rq_clock(500_000);
    }
    assert_eq!(sim.s.load_balance(cpu_id(1), false).len(), 0, "all hot");
    assert_eq!(
        sim.s.load_balance(cpu_id(1), false).len(),
        0,
        "still hot, one failure"
    );
    assert!(
        !sim.s.load_balance(cpu_id(1), false).is_empty(),
        "after repeated failures hot tasks move"
    );
}

#[test]
fn equal_hogs_get_equal_shares_on_four_cpus() {
    let mut sim = Sim::new(4, 250);
    for id in 0..8 {
        sim.fork(id, TaskParams::default(), 0);
    }
    // 1 s under Miri (~1000x slower), with the same bound in ns.
    let secs = if cfg!(miri) { 1 } else { 2 };
    for _ in 0..(secs * 250) {
        sim.tick();
    }
    let want = (secs * 1000 * MS) as f64 * 4.0 / 8.0;
    for id in 0..8 {
        let got = sim.runtime(id) as f64;
        // Each CPU runs two hogs that alternate every slice (2.1 ms at 4 CPUs)
        // at tick granularity (4 ms): within 5 ticks (2% of 1 s) of half of
        // the time.
        assert!(
            (got - want).abs() <= (20 * MS) as f64,
            "task {id}: {got} vs {want}"
        );
    }
    for c in 0..4 {
        assert_eq!(sim.max_idle_streak[c], 0, "cpu {c} idle");
    }
}

#[test]
fn more_tasks_than_cpus_leaves_no_cpu_idle_longer_than_a_balance_interval() {
    let mut sim = Sim::new(4, 250);
    // All forked pinned to CPU 0, then released: the balancer must spread them.
    for id in 0..6 {
        let cpu = sim.fork(id, TaskParams::default(), 0);
        sim.s
            .set_cpus_allowed(cpu_id(cpu), TaskId(id), CpuMask::from_u64(1), cpu_id(0));
    }
    for _ in 0..10 {
        sim.tick();
    }
    for id in 0..6 {
        let cpu = (0..4)
            .find(|&c| sim.s.cpu_rq(cpu_id(c)).task(TaskId(id)).is_some())
            .unwrap();
        assert_eq!(cpu, 0, "pinned task {id} stayed on CPU 0");
        assert!(sim
            .s
            .set_cpus_allowed(cpu_id(cpu), TaskId(id), CpuMask::from_u64(0xf), cpu_id(0)));
    }
    sim.idle_streak.iter_mut().for_each(|s| *s = 0);
    sim.max_idle_streak.iter_mut().for_each(|s| *s = 0);
    // 100 ticks (25 balance intervals) and 30 below under Miri (~1000x
    // slower) instead of 250 and 100.
    let (spread, pinned) = if cfg!(miri) { (100, 30) } else { (250, 100) };
    for _ in 0..spread {
        sim.tick();
    }
    let interval = sim.balance_every * sim.tick_ns;
    for c in 0..4 {
        assert!(
            sim.max_idle_streak[c] <= interval,
            "cpu {c} idle for {} ns",
            sim.max_idle_streak[c]
        );
    }
    // Affinity is respected while balancing: pin task 0 to CPU 3.
    let cpu = (0..4)
        .find(|&c| sim.s.cpu_rq(cpu_id(c)).task(TaskId(0)).is_some())
        .unwrap();
    sim.s
        .set_cpus_allowed(cpu_id(cpu), TaskId(0), CpuMask::from_cpus(&[3]), cpu_id(0));
    for _ in 0..pinned {
        sim.tick();
        let cpu = (0..4)
            .find(|&c| sim.s.cpu_rq(cpu_id(c)).task(TaskId(0)).is_some())
            .unwrap();
        let running = sim.s.cpu_rq(cpu_id(cpu)).curr() == Some(TaskId(0));
        assert!(cpu == 3 || running, "task 0 on cpu {cpu}");
    }
}

#[test]
fn check_catches_a_task_held_by_two_runqueues() {
    // Tasks spread over 4 CPUs by fork balancing and ticks pass the check;
    // the same id enqueued on a second CPU fails it, naming both CPUs.
    let mut sim = Sim::new(4, 250);
    for id in 0..8 {
        sim.fork(id, TaskParams::default(), 0);
    }
    for _ in 0..20 {
        sim.tick();
    }
    let home = (0..4)
        .find(|&c| sim.s.cpu_rq(cpu_id(c)).task(TaskId(3)).is_some())
        .expect("task 3 is held somewhere");
    let other = (home + 1) % 4;
    sim.s
        .cpu_rq(cpu_id(other))
        .wake_up_new_task(TaskId(3), SchedTask::default());
    let e = sim.s.check(&mut sim.scratch).unwrap_err();
    assert_eq!(e.what, "task held by two runqueues");
    assert_eq!(e.task, Some(TaskId(3)));
    let mut cpus = [e.cpu.index(), e.other_cpu.unwrap().index()];
    cpus.sort();
    let mut want = [home, other];
    want.sort();
    assert_eq!(cpus, want);
}
