//! An [`axsched`](https://docs.rs/axsched/0.3.1) 0.3 front end (cargo
//! feature `axsched`): [`EevdfScheduler`] implements `axsched::BaseScheduler`
//! over one EEVDF runqueue ([`Rq`]), so an ArceOS kernel gets EEVDF by
//! changing its scheduler and task types:
//!
//! ```text
//! - type AxTask = axsched::CFSTask<TaskInner>;
//! - type Scheduler = axsched::CFScheduler<TaskInner>;
//! + type AxTask = sched::axsched::EevdfTask<TaskInner>;
//! + type Scheduler = sched::axsched::EevdfScheduler<TaskInner>;
//! ```
//!
//! # How axsched's contract maps onto the runqueue
//! axsched's queue holds only runnable tasks that are not running:
//! `pick_next_task` takes the next one *out*, and the caller either puts it
//! back (`put_prev_task`) or, when it blocks or exits, simply does not.
//! Here the picked task stays the runqueue's running task (as in Linux), so:
//! - `pick_next_task` first settles the previous pick: put back, it competes
//!   again (`put_prev_task` inside [`Rq::pick_next_task`]); not put back, it
//!   has left: its entity is dequeued for good (`DEQUEUE_SPECIAL`, no
//!   delayed dequeue, since the caller no longer counts it as queued) and
//!   the scheduler drops its reference. A task that comes back later is
//!   added anew (its lag starts at zero: axsched does not say whether a
//!   returning task slept or is new).
//! - `put_prev_task(prev, false)` is a yield (ArceOS calls it from
//!   `yield_now`): an eligible fair task forfeits the rest of its request
//!   ([`Rq::yield_task`]), so equal tasks take turns even when no time
//!   passes. `preempt == true` just puts it back.
//! - `task_tick` advances the runqueue's clock by one tick
//!   ([`SchedConfig::tick_ns`]; axsched has no clock of its own) and runs
//!   [`Rq::task_tick`]; it returns whether a reschedule is due.
//! - `set_priority` takes a nice value in -20..=19 (as axsched's CFS does)
//!   and reweights the task at once if it is queued or running, else when
//!   it is added.
//! - `remove_task` removes a queued task that is not the current pick.
//!
//! Task ids are dense (`0..`): freed ids are reused, so the runqueue's
//! storage follows the number of tasks. Nothing here allocates per
//! operation except `add_task` when the table of tasks grows.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Deref;
use core::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use crate::config::SchedConfig;
use crate::flags::DequeueFlags;
use crate::rq::{PrevAction, Resched, Rq};
use crate::task::{SchedTask, TaskId, TaskParams, NIL};

/// A task as [`EevdfScheduler`] schedules it: the caller's `T` plus the
/// scheduler's id for it and a pending nice value.
pub struct EevdfTask<T> {
    inner: T,
    id: AtomicU32,
    nice: AtomicI32,
}

impl<T> EevdfTask<T> {
    /// Wraps `inner` (nice 0, not in any scheduler yet).
    pub const fn new(inner: T) -> Self {
        EevdfTask {
            inner,
            id: AtomicU32::new(NIL),
            nice: AtomicI32::new(0),
        }
    }

    /// The wrapped task.
    pub const fn inner(&self) -> &T {
        &self.inner
    }

    /// Its nice value (applied when it is next added, or already applied).
    pub fn nice(&self) -> i32 {
        self.nice.load(Ordering::Relaxed)
    }

    fn id(&self) -> Option<TaskId> {
        match self.id.load(Ordering::Relaxed) {
            NIL => None,
            i => Some(TaskId(i)),
        }
    }
}

impl<T> Deref for EevdfTask<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

/// EEVDF behind axsched's `BaseScheduler` (see the module docs).
pub struct EevdfScheduler<T> {
    rq: Rq,
    cfg: Arc<SchedConfig>,
    now_ns: u64,
    /// The task of each id (`None`: a free id).
    tasks: Vec<Option<Arc<EevdfTask<T>>>>,
    free_ids: Vec<u32>,
    /// The last pick, until it is put back (`put_prev_task`) or has left.
    picked: Option<TaskId>,
    /// Was the last pick put back?
    put_back: bool,
}

impl<T> EevdfScheduler<T> {
    /// An empty scheduler with the default features and tunables, as on one
    /// CPU at 250 Hz.
    pub fn new() -> Self {
        Self::with_config(Arc::new(SchedConfig::new(1, 250)))
    }

    /// An empty scheduler with `cfg` (features, tunables, tick length).
    pub fn with_config(cfg: Arc<SchedConfig>) -> Self {
        let mut rq = Rq::new(0, cfg.clone(), u32::MAX as usize - 1);
        rq.update_rq_clock(1);
        EevdfScheduler {
            rq,
            cfg,
            now_ns: 1,
            tasks: Vec::new(),
            free_ids: Vec::new(),
            picked: None,
            put_back: false,
        }
    }

    /// The name, as axsched's schedulers report theirs.
    pub fn scheduler_name() -> &'static str {
        "EEVDF"
    }

    /// The runqueue (for inspection: `sched_debug`-style views, invariants).
    pub fn rq(&self) -> &Rq {
        &self.rq
    }

    /// The shared configuration: flip features and tunables here.
    pub fn config(&self) -> &Arc<SchedConfig> {
        &self.cfg
    }

    /// Tasks in the scheduler, the current pick included.
    pub fn len(&self) -> usize {
        self.tasks.len() - self.free_ids.len()
    }

    /// No task at all?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn params(nice: i32) -> TaskParams {
        TaskParams {
            nice,
            ..TaskParams::default()
        }
    }

    /// Drops an id's task from the table.
    fn release(&mut self, id: TaskId) -> Option<Arc<EevdfTask<T>>> {
        let t = self.tasks[id.0 as usize].take()?;
        t.id.store(NIL, Ordering::Relaxed);
        self.free_ids.push(id.0);
        Some(t)
    }

    /// The last pick was not put back: it has left (blocked or exited).
    fn settle_pick(&mut self) {
        if let Some(id) = self.picked.take() {
            if !self.put_back && self.rq.curr() == Some(id) {
                self.rq.switch(PrevAction::Exits);
                self.release(id);
            }
        }
    }
}

impl<T> Default for EevdfScheduler<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> ::axsched::BaseScheduler for EevdfScheduler<T> {
    type SchedItem = Arc<EevdfTask<T>>;

    fn init(&mut self) {}

    fn add_task(&mut self, task: Self::SchedItem) {
        if let Some(id) = task.id() {
            // Already here: the current pick being put back, or a double add.
            if self.picked == Some(id) && !self.put_back {
                self.put_back = true;
            }
            return;
        }
        let id = match self.free_ids.pop() {
            Some(i) => i,
            None => {
                self.tasks.push(None);
                self.tasks.len() as u32 - 1
            }
        };
        task.id.store(id, Ordering::Relaxed);
        let st = SchedTask::new(Self::params(task.nice()));
        self.tasks[id as usize] = Some(task);
        self.rq.wake_up_new_task(TaskId(id), st);
    }

    fn remove_task(&mut self, task: &Self::SchedItem) -> Option<Self::SchedItem> {
        let id = task.id()?;
        if self.picked == Some(id) && !self.put_back {
            return None; // running: not in the queue
        }
        if self.picked == Some(id) {
            self.picked = None;
        }
        self.rq
            .dequeue_task(id, DequeueFlags::SLEEP | DequeueFlags::SPECIAL)
            .ok()?;
        self.release(id)
    }

    fn pick_next_task(&mut self) -> Option<Self::SchedItem> {
        self.settle_pick();
        let next = self.rq.pick_next_task()?;
        self.picked = Some(next);
        self.put_back = false;
        self.tasks[next.0 as usize].clone()
    }

    fn put_prev_task(&mut self, prev: Self::SchedItem, preempt: bool) {
        match prev.id() {
            Some(id) if self.picked == Some(id) => {
                self.put_back = true;
                if !preempt && self.rq.curr() == Some(id) {
                    self.rq.yield_task();
                }
            }
            Some(_) => {}
            None => self.add_task(prev),
        }
    }

    fn task_tick(&mut self, current: &Self::SchedItem) -> bool {
        self.now_ns += self.cfg.tick_ns();
        self.rq.update_rq_clock(self.now_ns);
        if current.id().is_none() || current.id() != self.rq.curr() {
            return false;
        }
        self.rq.task_tick() != Resched::None
    }

    fn set_priority(&mut self, task: &Self::SchedItem, prio: isize) -> bool {
        if !(-20..=19).contains(&prio) {
            return false;
        }
        task.nice.store(prio as i32, Ordering::Relaxed);
        if let Some(id) = task.id() {
            let _ = self.rq.set_user_nice(id, prio as i32);
        }
        true
    }
}
