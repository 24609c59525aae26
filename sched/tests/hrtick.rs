//! HRTICK on one runqueue, driven in host time: a periodic tick at 250 Hz
//! plus the one-shot timer the runqueue asks for ([`Rq::take_hrtick_cmd`]),
//! handled at the exact nanosecond it was asked for. Checks that slices end
//! where the request ends, not at the tick, and what that does to the share
//! of the lightest task and to RUN_TO_PARITY.

use crate::common;
use crate::common::cpu_id;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sched::smp::{Platform, Scheduler};
use sched::{
    HrtickCmd, PrevAction, Resched, Rq, SchedConfig, SchedTask, TaskId, TaskParams, TtwuRunnable,
    WakeFlags, HRTICK_MIN_NS,
};

const HZ: u32 = 250;
const TICK_NS: u64 = 1_000_000_000 / HZ as u64;

/// One CPU: a runqueue, its tick and its one-shot timer.
struct Cpu {
    rq: Rq,
    now: u64,
    next_tick: u64,
    hrtick: Option<u64>,
    /// How late the timer's interrupt is handled after its expiry, ns.
    hrtick_latency_ns: u64,
    /// (time, task switched in) for every switch.
    switches: Vec<(u64, TaskId)>,
}

impl Cpu {
    fn new(features: &[&str]) -> Self {
        let cfg = Arc::new(SchedConfig::new(1, HZ));
        for f in features {
            cfg.features.write(f).unwrap();
        }
        let mut rq = Rq::new(cpu_id(0), cfg, 64);
        rq.update_rq_clock(0);
        Cpu {
            rq,
            now: 0,
            next_tick: TICK_NS,
            hrtick: None,
            hrtick_latency_ns: 0,
            switches: Vec::new(),
        }
    }

    fn spawn(&mut self, id: u32, nice: i32) {
        let p = TaskParams {
            nice,
            ..TaskParams::default()
        };
        self.rq.wake_up_new_task(TaskId(id), SchedTask::new(p));
        self.apply();
    }

    /// Hands the runqueue's timer request to "the hardware".
    fn apply(&mut self) {
        match self.rq.take_hrtick_cmd() {
            Some(HrtickCmd::Start(delay)) => {
                assert!(delay >= HRTICK_MIN_NS, "armed below the minimum");
                self.hrtick = Some(self.now + delay + self.hrtick_latency_ns);
            }
            Some(HrtickCmd::At(at)) => {
                self.hrtick = Some(at.max(self.now) + self.hrtick_latency_ns)
            }
            Some(HrtickCmd::Cancel) => self.hrtick = None,
            None => {}
        }
    }

    fn schedule(&mut self) {
        let prev = self.rq.curr();
        let next = self.rq.pick_next_task();
        if next != prev {
            self.switches.push((self.now, next.unwrap()));
        }
        self.apply();
    }

    /// Runs until `end_ns`: the tick every 4 ms, the one-shot timer when it
    /// is due (before the tick at the same instant), a switch at once on an
    /// immediate request (`preempt=full`).
    fn run_until(&mut self, end_ns: u64) {
        if self.rq.curr().is_none() {
            self.schedule();
        }
        loop {
            let t = self.next_tick.min(self.hrtick.unwrap_or(u64::MAX));
            if t > end_ns {
                break;
            }
            self.now = t;
            self.rq.update_rq_clock(t);
            let r = common::timer_interrupt(
                &mut self.rq,
                &mut self.hrtick,
                &mut self.next_tick,
                TICK_NS,
                t,
            );
            if r == Resched::Now {
                self.schedule();
            }
            self.apply();
        }
        self.now = end_ns;
        self.rq.update_rq_clock(end_ns);
        self.rq.update_curr();
    }

    fn runtime_ns(&self, id: u32) -> u64 {
        self.rq.task(TaskId(id)).unwrap().se.sum_exec_runtime
    }

    /// The lengths of the runs between switches.
    fn run_lengths(&self) -> Vec<u64> {
        self.switches.windows(2).map(|w| w[1].0 - w[0].0).collect()
    }
}

/// The base slice at one CPU (0.7 ms).
fn base_slice_ns(cpu: &Cpu) -> u64 {
    cpu.rq.config().tunables.base_slice_ns()
}

/// A hog pair with HRTICK: after the first run, every run lasts exactly
/// one request (the base slice, 0.7 ms), whatever the tick does, and the
/// timer is what ends it.
#[test]
fn hog_pair_switches_follow_the_slice_not_the_tick() {
    let mut cpu = Cpu::new(&[]);
    cpu.spawn(1, 0);
    cpu.spawn(2, 0);
    cpu.run_until(100_000_000);
    assert_pair_ran_one_request_at_a_time(&cpu);
}

/// A hog pair's 100 ms: every run after the first two lasted one request,
/// the timer ended each, the tick none, and the pair alternated.
fn assert_pair_ran_one_request_at_a_time(cpu: &Cpu) {
    let slice = base_slice_ns(cpu);
    let runs = cpu.run_lengths();
    // 100 ms of 0.7 ms runs: about 142.
    assert!(runs.len() > 130, "{} runs", runs.len());
    // The first two runs are half requests (PLACE_DEADLINE_INITIAL).
    for (i, &r) in runs.iter().enumerate().skip(2) {
        assert!(
            r.abs_diff(slice) <= 1_000,
            "run {i} lasted {r} ns, slice {slice} ns"
        );
    }
    // The tick never ended a slice; the timer ended every one.
    assert_eq!(cpu.rq.stats.nr_tick_resched, 0);
    assert!(cpu.rq.stats.nr_hrtick_resched as usize >= runs.len());
    // The pair alternates.
    for w in cpu.switches.windows(2) {
        assert_ne!(w[0].1, w[1].1);
    }
}

/// The same hog pair in one task group: the root holds only the group's
/// entity, so its own count is 1, but the CPU runs two fair tasks (Linux's
/// `rq->cfs.h_nr_queued` is 2) and `hrtick_start_fair` arms the timer for
/// the picked task's own request (`&p->se`). Every run after the first two
/// lasts one request, and the tick ends none. Before the timer was armed
/// only for a task queued in the root, so here every run ended at a tick
/// (4 ms, about 25 runs in 100 ms).
#[test]
fn grouped_hog_pair_switches_follow_the_slice_not_the_tick() {
    let mut cpu = Cpu::new(&[]);
    let a = cpu
        .rq
        .create_task_group(sched::fair::group::GroupId::ROOT, 100)
        .unwrap();
    for id in [1, 2] {
        cpu.spawn(id, 0);
        cpu.rq.sched_move_task(TaskId(id), a).unwrap();
        cpu.apply();
    }
    cpu.run_until(100_000_000);
    assert_pair_ran_one_request_at_a_time(&cpu);
}

/// The same pair without HRTICK: a run ends only at a tick, so every run is
/// a whole number of ticks.
#[test]
fn hog_pair_without_hrtick_switches_at_ticks() {
    let mut cpu = Cpu::new(&["NO_HRTICK"]);
    cpu.spawn(1, 0);
    cpu.spawn(2, 0);
    cpu.run_until(100_000_000);
    assert_eq!(cpu.rq.stats.nr_hrtick, 0);
    assert!(cpu.hrtick.is_none());
    let runs = cpu.run_lengths();
    assert!(runs.len() >= 20, "{} runs", runs.len());
    for &r in &runs {
        assert_eq!(r % TICK_NS, 0, "run of {r} ns");
    }
}

/// Nice −10/0/5/19 on one CPU for 1 s (the conformance row of
/// docs/results/linux/conformance.md): nice 19's ideal share is 15/10922 = 0.137%.
/// Bound fixed before the run: ±0.1 points with HRTICK. Without it, the
/// tick's granularity gives nice 19 at least one whole tick (0.4%).
#[test]
fn nice_19_gets_its_share_within_a_tenth_of_a_point() {
    let share_19 = |features: &[&str]| {
        let mut cpu = Cpu::new(features);
        let nices = [(1, -10), (2, 0), (3, 5), (4, 19)];
        for (id, nice) in nices {
            cpu.spawn(id, nice);
        }
        cpu.run_until(1_000_000_000);
        let total: u64 = nices.iter().map(|&(id, _)| cpu.runtime_ns(id)).sum();
        let by: HashMap<i32, f64> = nices
            .iter()
            .map(|&(id, n)| (n, cpu.runtime_ns(id) as f64 * 100.0 / total as f64))
            .collect();
        (by, total)
    };
    let (with, total) = share_19(&[]);
    assert_eq!(total, 1_000_000_000);
    let ideal = 15.0 * 100.0 / (9548.0 + 1024.0 + 335.0 + 15.0);
    assert!(
        (with[&19] - ideal).abs() <= 0.1,
        "nice 19: {:.3}% (ideal {ideal:.3}%)",
        with[&19]
    );
    // The heavier ones stay within the conformance bounds too.
    assert!((with[&-10] - 87.42).abs() <= 1.0, "{with:?}");
    assert!((with[&0] - 9.38).abs() <= 1.0, "{with:?}");
    assert!((with[&5] - 3.07).abs() <= 0.5, "{with:?}");
    let (without, _) = share_19(&["NO_HRTICK"]);
    assert!(without[&19] >= 0.39, "without HRTICK: {without:?}");
}

/// A hog pair with 4 CPUs' slice (2.1 ms), 0.5 s, started at tick phase
/// `offset_ns`, with the timer's interrupt handled `latency_ns` late:
/// the number of switches.
fn hog_pair_switches(features: &[&str], offset_ns: u64, latency_ns: u64) -> usize {
    let cfg = Arc::new(SchedConfig::new(4, HZ));
    for f in features {
        cfg.features.write(f).unwrap();
    }
    let mut cpu = Cpu::new(&[]);
    cpu.rq = Rq::new(cpu_id(0), cfg, 64);
    cpu.hrtick_latency_ns = latency_ns;
    cpu.now = offset_ns;
    cpu.rq.update_rq_clock(offset_ns);
    cpu.spawn(1, 0);
    cpu.spawn(2, 0);
    cpu.run_until(offset_ns + 500_000_000);
    cpu.switches.len()
}

/// RUN_TO_PARITY with HRTICK and a hog pair at 4 CPUs' slice: the timer
/// ends each request, 2.1 ms apart (238-240 per 0.5 s), whatever the tick
/// phase and the timer's latency. Without RUN_TO_PARITY the protection is
/// the normalized slice (0.7 ms): a tick after it splits a request, the
/// two tasks' virtual times come within a few µs of a tie, and whether the
/// timer's expiry switches or picks the same task again (which, as in
/// Linux 7.2, leaves the timer unarmed until the next tick) turns on
/// sub-µs differences. The count then moves between about 160 and 282
/// with the timer's latency and the tick phase: the rules alone do not fix
/// its direction against RUN_TO_PARITY (the kernel and Linux 7.2 both
/// measured fewer switches without it, docs/results/linux.md).
#[test]
fn run_to_parity_and_a_hog_pairs_switch_rate() {
    let mut no_parity = Vec::new();
    for latency_ns in [0, 100, 1_000, 5_000] {
        for offset_ns in [0, 1_300_000] {
            let parity = hog_pair_switches(&[], offset_ns, latency_ns);
            assert!((235..=241).contains(&parity), "{parity}");
            let np = hog_pair_switches(&["NO_RUN_TO_PARITY"], offset_ns, latency_ns);
            assert!((150..=290).contains(&np), "{np}");
            no_parity.push(np);
            // Without the timer, both switch at every tick (125 per 0.5 s).
            for f in [&["NO_HRTICK"][..], &["NO_HRTICK", "NO_RUN_TO_PARITY"][..]] {
                let t = hog_pair_switches(f, offset_ns, latency_ns);
                assert!(t.abs_diff(125) <= 1, "{f:?}: {t}");
            }
        }
    }
    let (lo, hi) = (
        no_parity.iter().min().unwrap(),
        no_parity.iter().max().unwrap(),
    );
    assert!(hi * 10 > lo * 12, "NO_RUN_TO_PARITY: {no_parity:?}");
}

/// A platform that records every arming of the one-shot timer (CPU,
/// instant or `None` for a cancel), with a clock the test sets.
#[derive(Default)]
struct P {
    now: AtomicU64,
    armed: Mutex<Vec<(usize, Option<u64>)>>,
}

impl Platform for P {
    fn irq_save(&self) -> bool {
        false
    }
    fn irq_restore(&self, _: bool) {}
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
    fn send_resched_ipi(&self, _: sched::CpuId) {}
    fn hrtick_start(&self, cpu: sched::CpuId, at: u64) {
        self.armed.lock().unwrap().push((cpu.index(), Some(at)));
    }
    fn hrtick_cancel(&self, cpu: sched::CpuId) {
        self.armed.lock().unwrap().push((cpu.index(), None));
    }
}

/// The platform hook: a scheduler hands every arm and cancel to the
/// platform when it releases a runqueue, and its expiry entry point ends
/// the slice.
#[test]
fn scheduler_hands_the_timer_to_the_platform() {
    let cfg = Arc::new(SchedConfig::new(1, HZ));
    let s = Scheduler::new(P::default(), cfg, 1, 16);
    let slice = s.cfg.tunables.base_slice_ns();
    s.spawn(TaskId(1), SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    let sw = {
        let mut rq = s.cpu_rq(cpu_id(0));
        s.schedule(&mut rq, PrevAction::Stays)
    };
    assert_eq!(sw.next, Some(TaskId(1)));
    // Alone: no timer.
    assert!(s.platform.armed.lock().unwrap().is_empty());
    // A second task arrives: the running one's request gets the timer, for
    // the end of its first request (half a slice, PLACE_DEADLINE_INITIAL).
    let half = slice / 2;
    s.platform.now.store(100_000, Ordering::Relaxed);
    s.spawn(TaskId(2), SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    let armed = s.platform.armed.lock().unwrap().clone();
    assert_eq!(armed, [(0, Some(half))]);
    // It fires: an immediate reschedule; the switch arms it for the other
    // (its first request is half a slice too).
    s.platform.now.store(half, Ordering::Relaxed);
    assert_eq!(s.hrtick(cpu_id(0)), Resched::Now);
    let sw = {
        let mut rq = s.cpu_rq(cpu_id(0));
        s.schedule(&mut rq, PrevAction::Stays)
    };
    assert_eq!(sw.next, Some(TaskId(2)));
    assert_eq!(
        s.platform.armed.lock().unwrap().last(),
        Some(&(0, Some(2 * half)))
    );
    // Both sleep: the CPU goes idle and the timer is cancelled.
    for _ in 0..2 {
        let mut rq = s.cpu_rq(cpu_id(0));
        s.schedule(&mut rq, PrevAction::Sleeps);
    }
    assert_eq!(s.platform.armed.lock().unwrap().last(), Some(&(0, None)));
    // A stale expiry after the cancel does nothing.
    assert_eq!(s.hrtick(cpu_id(0)), Resched::None);
}

/// `wakelat -n 2 -s 100` on one runqueue: a sleeper with a 100 µs custom
/// slice wakes every 2 ms among two nice-0 hogs and runs 10 µs each time.
/// Returns, per wakeup, how long it waited for the CPU and how long the
/// task running at the wakeup had been running since it was switched in.
fn short_slice_sleeper(phase_ns: u64) -> Vec<(u64, u64)> {
    const SLEEPER: TaskId = TaskId(3);
    const RUN_NS: u64 = 10_000;
    const PERIOD_NS: u64 = 2_000_000;
    let mut cpu = Cpu::new(&[]);
    cpu.spawn(1, 0);
    cpu.spawn(2, 0);
    cpu.schedule();
    let sp = TaskParams {
        slice_ns: 100_000,
        ..TaskParams::default()
    };
    // The sleeper's state while fully dequeued; `None` while the runqueue
    // holds it (queued, running, or asleep with its dequeue delayed).
    let mut parked = Some(SchedTask::new(sp));
    let mut first = true;
    let mut next_wake = 20_000_000 + phase_ns;
    let mut left: Option<u64> = None; // its CPU time left in this period
    let (mut woke_at, mut waiting, mut ran_before) = (0, false, 0);
    let mut since = 0; // when the running task was switched in
    let mut out = Vec::new();
    while cpu.now < 1_020_000_000 {
        let running = cpu.rq.curr() == Some(SLEEPER);
        let done_at = running.then(|| cpu.now + left.unwrap());
        let t = [
            Some(cpu.next_tick),
            cpu.hrtick,
            left.is_none().then_some(next_wake),
            done_at,
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
        if running {
            left = Some(left.unwrap() - (t - cpu.now));
        }
        cpu.now = t;
        cpu.rq.update_rq_clock(t);
        let before = cpu.rq.curr();
        let r = if done_at == Some(t) {
            // It blocks until its next period.
            parked = cpu.rq.schedule(true).prev_blocked;
            left = None;
            next_wake += PERIOD_NS;
            cpu.apply();
            Resched::None
        } else if cpu.hrtick == Some(t) {
            cpu.hrtick = None;
            cpu.rq.hrtick()
        } else if cpu.next_tick == t {
            cpu.next_tick += TICK_NS;
            cpu.rq.task_tick()
        } else {
            let wf = WakeFlags::empty();
            if first {
                cpu.rq.wake_up_new_task(SLEEPER, parked.take().unwrap());
                first = false;
            } else if let Some(p) = parked.take() {
                cpu.rq.try_to_wake_up(SLEEPER, p, wf);
            } else if let TtwuRunnable::Blocked(p) = cpu.rq.ttwu_runnable(SLEEPER, wf) {
                cpu.rq.try_to_wake_up(SLEEPER, p, wf);
            }
            (woke_at, waiting, ran_before) = (t, true, t - since);
            left = Some(RUN_NS);
            cpu.apply();
            cpu.rq.need_resched()
        };
        if r == Resched::Now {
            cpu.rq.pick_next_task();
            cpu.apply();
        }
        if cpu.rq.curr() != before {
            since = t;
        }
        if waiting && cpu.rq.curr() == Some(SLEEPER) {
            waiting = false;
            out.push((t - woke_at, ran_before));
        }
    }
    out
}

/// The short-slice sleeper's long waits, as traced in both kernels at 1
/// CPU (docs/results/linux/conformance.md, "EEVDF conformance"): with Linux 7.2's rules
/// a hog picked again when its timer fires runs on unarmed, past its 0.7 ms
/// request, until the next tick or wakeup; the other hog is then owed more
/// than a request, so its deadline comes before the sleeper's (v + 100 µs)
/// and the pick at the sleeper's wakeup gives it a whole request first.
/// Each wait of more than half a request follows such an overrun and lasts
/// one request; and it happens: in one of the four phases of the period
/// against the tick here, on 13 of its 500 wakeups (none in the others).
#[test]
fn short_slice_sleeper_waits_a_request_only_after_a_repick_overrun() {
    let base = base_slice_ns(&Cpu::new(&[]));
    let mut long = 0;
    for phase_ns in [0, 333_333, 1_000_000, 1_777_777] {
        let waits = short_slice_sleeper(phase_ns);
        assert!(waits.len() >= 495, "{} wakeups", waits.len());
        for &(wait, ran_before) in &waits {
            if wait > base / 2 {
                long += 1;
                assert!(
                    ran_before > base,
                    "waited {wait} ns behind a task that ran {ran_before} ns"
                );
                assert!(wait.abs_diff(base) <= 20_000, "waited {wait} ns");
            }
        }
    }
    assert!(long > 0, "no wait of a whole request");
}

/// The fair server's instant goes to the platform as it is: through the
/// scheduler, the tick before the zero-laxity point arms the CPU's timer at
/// that point (not a delay from the tick), and its expiry serves the fair
/// task there, preempting the FIFO hog.
#[test]
fn scheduler_arms_the_fair_servers_instant() {
    let cfg = Arc::new(SchedConfig::new(1, HZ));
    let s = Scheduler::new(P::default(), cfg, 1, 16);
    let (runtime, period) = s.cfg.tunables.fair_server();
    s.platform.now.store(1_000_000, Ordering::Relaxed);
    s.spawn(TaskId(1), SchedTask::new(TaskParams::fifo(50)), cpu_id(0))
        .unwrap();
    let schedule = |s: &Scheduler<P>| {
        let mut rq = s.cpu_rq(cpu_id(0));
        s.schedule(&mut rq, PrevAction::Stays).next
    };
    assert_eq!(schedule(&s), Some(TaskId(1)));
    s.spawn(TaskId(2), SchedTask::new(TaskParams::default()), cpu_id(0))
        .unwrap();
    let zero_laxity = 1_000_000 + period - runtime;
    // Ticks every 4 ms from 4 ms: none arms the timer until the one before
    // the zero-laxity point (948 ms), which arms it for 951 ms.
    let mut t = TICK_NS;
    while t + TICK_NS <= zero_laxity {
        s.platform.now.store(t, Ordering::Relaxed);
        let _ = s.tick(cpu_id(0));
        t += TICK_NS;
    }
    assert!(s.platform.armed.lock().unwrap().is_empty());
    s.platform.now.store(t, Ordering::Relaxed);
    let _ = s.tick(cpu_id(0));
    assert_eq!(
        s.platform.armed.lock().unwrap().as_slice(),
        [(0, Some(zero_laxity))]
    );
    // It fires there: the server boosts and the hog gives way at once.
    s.platform.now.store(zero_laxity, Ordering::Relaxed);
    assert_eq!(s.hrtick(cpu_id(0)), Resched::Now);
    assert_eq!(schedule(&s), Some(TaskId(2)));
    assert_eq!(
        s.platform.armed.lock().unwrap().last(),
        Some(&(0, None)),
        "the server runs: no instant is armed"
    );
}
