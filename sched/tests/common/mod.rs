//! A small host harness around one `Rq`: a virtual clock, the kernel's side of
//! the task-state hand-off (sleeping tasks' `SchedTask`s), and a tick loop that
//! preempts like the `full` model does.
#![allow(dead_code)]

pub mod plat;
pub mod rng;
#[cfg(feature = "oracle")]
pub mod world;

use std::collections::HashMap;
use std::sync::Arc;

use sched::task::FairEntity;
use sched::{
    CpuId, Rq, SchedConfig, SchedTask, Switch, TaskId, TaskParams, TtwuRunnable, WakeFlags,
    WakeupDecision,
};

pub const MS: u64 = 1_000_000;

/// CPU `i` (below `MAX_CPUS`).
pub fn cpu_id(i: usize) -> CpuId {
    CpuId::new(i).expect("a CPU below MAX_CPUS")
}
pub const US: u64 = 1_000;

/// Runs runqueues side by side for `ms` milliseconds of 1 ms ticks from
/// `*now`: each picks if idle, then at every tick its clock advances, it
/// ticks, repicks when asked, and its invariants are checked.
pub fn run_rqs_ms(rqs: &mut [Rq], now: &mut u64, ms: u64) {
    for rq in rqs.iter_mut() {
        if rq.curr().is_none() {
            rq.pick_next_task();
        }
    }
    for _ in 0..ms {
        *now += MS;
        for rq in rqs.iter_mut() {
            rq.update_rq_clock(*now);
            if rq.task_tick() != sched::Resched::None {
                rq.pick_next_task();
            }
            rq.check().unwrap();
        }
    }
}

pub struct H {
    pub cfg: Arc<SchedConfig>,
    pub rq: Rq,
    pub now: u64,
    pub off: HashMap<u32, SchedTask>,
    pub held: std::collections::HashSet<u32>,
}

impl H {
    pub fn new(ncpus: u32, hz: u32) -> H {
        let cfg = Arc::new(SchedConfig::new(ncpus, hz));
        let mut rq = Rq::new(cpu_id(0), cfg.clone(), 64);
        rq.update_rq_clock(1);
        H {
            cfg,
            rq,
            now: 1,
            off: HashMap::new(),
            held: Default::default(),
        }
    }

    /// Default: one CPU, HZ=1000 (the conformance checklist's assumptions,
    /// `docs/design/scheduler.md`).
    pub fn one() -> H {
        H::new(1, 1000)
    }

    pub fn adv(&mut self, dt: u64) {
        self.now += dt;
        self.rq.update_rq_clock(self.now);
    }

    pub fn spawn(&mut self, id: u32, p: TaskParams) -> WakeupDecision {
        self.held.insert(id);
        self.rq.wake_up_new_task(TaskId(id), SchedTask::new(p))
    }

    pub fn nice(n: i32) -> TaskParams {
        TaskParams {
            nice: n,
            ..Default::default()
        }
    }

    pub fn slice(ns: u64) -> TaskParams {
        TaskParams {
            slice_ns: ns,
            ..Default::default()
        }
    }

    pub fn pick(&mut self) -> Option<u32> {
        self.rq.pick_next_task().map(|t| t.0)
    }

    pub fn curr(&self) -> Option<u32> {
        self.rq.curr().map(|t| t.0)
    }

    /// The running task blocks.
    pub fn block(&mut self) -> Switch {
        let sw = self.rq.schedule(true);
        if let (Some(p), Some(st)) = (sw.prev, sw.prev_blocked) {
            self.off.insert(p.0, st);
            self.held.remove(&p.0);
        }
        sw
    }

    /// Wakes a sleeping task the way the kernel does.
    pub fn wake(&mut self, id: u32, wf: WakeFlags) -> Option<WakeupDecision> {
        if self.held.contains(&id) {
            match self.rq.ttwu_runnable(TaskId(id), wf) {
                TtwuRunnable::Woken(d) => return Some(d),
                TtwuRunnable::Blocked(st) => {
                    self.held.remove(&id);
                    self.off.insert(id, st);
                }
                TtwuRunnable::NotHere => panic!("task {id} not held"),
            }
        }
        let st = self.off.remove(&id)?;
        self.held.insert(id);
        Some(self.rq.try_to_wake_up(TaskId(id), st, wf))
    }

    pub fn se(&self, id: u32) -> FairEntity {
        match self.rq.task(TaskId(id)) {
            Some(t) => t.se,
            None => self.off[&id].se,
        }
    }

    pub fn task(&self, id: u32) -> SchedTask {
        match self.rq.task(TaskId(id)) {
            Some(t) => *t,
            None => self.off[&id],
        }
    }

    pub fn tick_ns(&self) -> u64 {
        self.cfg.tick_ns()
    }

    /// One tick of wall time, preempting when asked (the `full` model).
    pub fn tick(&mut self) {
        let t = self.tick_ns();
        self.adv(t);
        if self.rq.task_tick() != sched::Resched::None {
            self.pick();
        }
    }

    /// `ms` of ticks, checking the runqueue's invariants after each one;
    /// under Miri (~1000x slower, and the check is most of a tick's cost)
    /// after every 8th and the last.
    pub fn run_ms(&mut self, ms: u64) {
        let ticks = ms * MS / self.tick_ns();
        let every = if cfg!(miri) { 8 } else { 1 };
        for n in 1..=ticks {
            self.tick();
            if n % every == 0 || n == ticks {
                self.rq.check().unwrap();
            }
        }
    }

    pub fn runtime(&self, id: u32) -> u64 {
        self.se(id).sum_exec_runtime
    }

    /// V − v of a queued task (virtual ns).
    pub fn lag(&self, id: u32) -> i64 {
        self.rq.avg_vruntime().wrapping_sub(self.se(id).vruntime) as i64
    }
}

/// One timer interrupt at `t` of a rig that drives a runqueue in host time
/// with a periodic tick and the one-shot HRTICK the runqueue asks for: the
/// HRTICK when it is the timer due at `t` (it is then disarmed), else the
/// periodic tick (`next_tick` moves on by `tick_ns`). Returns what the
/// runqueue asked for.
pub fn timer_interrupt(
    rq: &mut Rq,
    hrtick: &mut Option<u64>,
    next_tick: &mut u64,
    tick_ns: u64,
    t: u64,
) -> sched::Resched {
    if *hrtick == Some(t) {
        *hrtick = None;
        rq.hrtick()
    } else {
        *next_tick += tick_ns;
        rq.task_tick()
    }
}
