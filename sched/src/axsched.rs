//! An [`axsched`](https://docs.rs/axsched/0.3.1) 0.3 front end (cargo
//! feature `axsched`): [`EevdfScheduler`] implements `axsched::BaseScheduler`
//! over one EEVDF runqueue ([`Rq`]), so an ArceOS kernel gets EEVDF by
//! changing its scheduler and task types (see `sched/README.md` for the
//! whole axtask change, a cargo feature `sched-eevdf` of its own):
//!
//! ```text
//! type AxTask = sched::axsched::EevdfTask<TaskInner>;
//! type Scheduler = sched::axsched::EevdfScheduler<
//!     TaskInner, { axconfig::TICKS_PER_SEC }, { axconfig::plat::MAX_CPU_NUM }>;
//! ```
//!
//! The two const parameters are the tick rate (`HZ`: `task_tick` advances
//! the runqueue's clock by `1 s / HZ`, since axsched has no clock) and the
//! CPU count (`CPUS`: Linux scales the base slice by `1 + log2(min(CPUS,
//! 8))`). Both default to one CPU at 250 Hz; [`EevdfScheduler::with_config`]
//! takes any [`SchedConfig`] instead.
//!
//! # How axsched's contract maps onto the runqueue
//! axsched's queue holds only runnable tasks that are not running:
//! `pick_next_task` takes the next one *out*, and the caller either puts it
//! back (`put_prev_task`) or, when it blocks, exits or migrates, simply does
//! not. Here the picked task stays the runqueue's running task (as in
//! Linux), so:
//! - `pick_next_task` first settles the previous pick. Put back, it
//!   competes again. Not put back, it has left: its entity is dequeued for
//!   good (`DEQUEUE_SLEEP | DEQUEUE_SPECIAL`, no delayed dequeue, since the
//!   caller no longer counts it as queued), and its final state, lag
//!   included, is kept in the [`EevdfTask`] for its wakeup.
//! - `put_prev_task` tells three cases apart by who owns the task:
//!   - the current pick, owned here: a preemption (`preempt == true`) just
//!     puts it back; a yield (`false`, ArceOS's `yield_now`) also forfeits
//!     the rest of its request ([`Rq::yield_task`]), so equal tasks take
//!     turns even when no time passes;
//!   - a task nobody owns: a **wakeup** (ArceOS's `unblock_task`, or a
//!     migration task delivering a task to its new CPU). It is enqueued
//!     with `ENQUEUE_WAKEUP` and the state it left with, so PLACE_LAG keeps
//!     its lag across the sleep, as in Linux;
//!   - a task owned by another scheduler: see "Ownership" below.
//! - `add_task` of a task nobody owns is a new task (`wake_up_new_task`:
//!   zero lag, half-slice deadline with PLACE_DEADLINE_INITIAL).
//! - `task_tick` advances the clock by one tick and runs [`Rq::task_tick`].
//!   A current task this scheduler does not run (ArceOS's `main` task, a
//!   migration task, any task never added) is preempted when another task
//!   waits here, as axsched's CFS does.
//! - `set_priority` takes a nice value in -20..=19 (as axsched's CFS does).
//!   It is kept in the task, applied at once when this scheduler owns it,
//!   and otherwise by whichever scheduler next enqueues or picks it.
//! - `remove_task` removes a task queued here; it refuses (returns `None`)
//!   the running pick and tasks owned by another scheduler.
//!
//! # Ownership
//! ArceOS keeps one scheduler per CPU, and moves tasks between them without
//! settling them first: `migrate_current` switches to a migration task
//! without telling the old CPU's scheduler, and that task then calls
//! `put_prev_task` on the new CPU's scheduler while the old one still holds
//! the task as its running pick. So each task carries one atomic word
//! naming its owner: the scheduler's instance number, the task's id in that
//! scheduler, and whether it is that scheduler's running pick ("in flight":
//! picked and not put back). Every change of the word is a compare-and-swap
//! made under the changing scheduler's own lock, so:
//! - a scheduler may **adopt** a task that nobody owns, or that another
//!   scheduler has in flight (its owner has let it go to the caller: it is
//!   running or leaving, not queued there). The old owner finds the word
//!   changed when it settles or puts back its pick, and lets its entity go
//!   without touching the task (its lag is not carried over in this case);
//! - a task queued in another scheduler is never taken: `put_prev_task` and
//!   `add_task` leave it where it is (it is runnable there: taking it too
//!   would duplicate it), and `remove_task` returns `None`.
//!
//! A task is therefore queued in at most one scheduler at any time, and a
//! task handed to a scheduler is never dropped on the floor.
//!
//! Task ids are dense per scheduler (`0..`): freed ids are reused, so the
//! runqueue's storage follows the number of tasks. Nothing here allocates
//! per operation except when the table of tasks grows.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Deref;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};

use crate::config::SchedConfig;
use crate::cpu_id::CpuId;
use crate::flags::{DequeueFlags, WakeFlags};
use crate::rq::set_params_offrq;
use crate::rq::{Resched, Rq};
use crate::task::{SchedTask, TaskId, TaskParams, TaskState};

/// The owner word of a task that no scheduler holds.
const UNOWNED: u64 = 0;
/// The owner word's "running pick, not put back" bit.
const IN_FLIGHT: u64 = 1 << 31;
/// The owner word's "its owner is letting it go" bit: the lag it leaves
/// with is being written; the word becomes `UNOWNED` right after.
const LEAVING: u64 = 1 << 30;
/// Ids a scheduler gives out are below this (the word's low 30 bits).
const MAX_IDS: u32 = 1 << 30;

/// The owner word: scheduler instance (high 32 bits, never 0), in-flight
/// bit, leaving bit, id in that scheduler (low 30 bits).
const fn word(instance: u32, id: u32, in_flight: bool) -> u64 {
    ((instance as u64) << 32) | if in_flight { IN_FLIGHT } else { 0 } | id as u64
}

/// Instance numbers of schedulers: each [`EevdfScheduler`] takes the next.
static NEXT_INSTANCE: AtomicU32 = AtomicU32::new(1);

/// A task as [`EevdfScheduler`] schedules it: the caller's `T`, the word
/// that says which scheduler owns it, its nice value, and the lag it left
/// its last scheduler with (for its wakeup).
pub struct EevdfTask<T> {
    inner: T,
    owner: AtomicU64,
    nice: AtomicI32,
    /// Set by `set_priority` on a scheduler that does not own the task: the
    /// owner applies `nice` when it next picks it.
    nice_pending: AtomicBool,
    /// The lag (`NO_LAG`: none kept) and the nice value it was taken at.
    left_vlag: AtomicI64,
    left_nice: AtomicI32,
}

/// `left_vlag` when no lag is kept.
const NO_LAG: i64 = i64::MIN;

impl<T> EevdfTask<T> {
    /// Wraps `inner` (nice 0, not in any scheduler yet).
    pub const fn new(inner: T) -> Self {
        EevdfTask {
            inner,
            owner: AtomicU64::new(UNOWNED),
            nice: AtomicI32::new(0),
            nice_pending: AtomicBool::new(false),
            left_vlag: AtomicI64::new(NO_LAG),
            left_nice: AtomicI32::new(0),
        }
    }

    /// The wrapped task.
    pub const fn inner(&self) -> &T {
        &self.inner
    }

    /// Its nice value (already applied, or applied by the next scheduler
    /// that enqueues or picks it).
    pub fn nice(&self) -> i32 {
        self.nice.load(Ordering::Relaxed)
    }

    /// Is some scheduler holding it (queued there, or its running pick)?
    pub fn is_owned(&self) -> bool {
        self.owner.load(Ordering::Acquire) != UNOWNED
    }

    /// The lag (virtual ns) it left its last scheduler with, kept for its
    /// wakeup; `None` when none is kept (it was never let go, or its
    /// wakeup used it).
    pub fn saved_lag(&self) -> Option<i64> {
        match self.left_vlag.load(Ordering::Acquire) {
            NO_LAG => None,
            v => Some(v),
        }
    }

    /// The state for its wakeup: the lag it left with (rescaled if its nice
    /// value changed since), or a fresh state. Consumes the kept lag.
    fn wakeup_state(&self, params: TaskParams) -> SchedTask {
        let vlag = self.left_vlag.swap(NO_LAG, Ordering::AcqRel);
        if vlag == NO_LAG {
            return SchedTask::new(params);
        }
        let left_nice = self.left_nice.load(Ordering::Relaxed);
        let mut st = SchedTask::new(TaskParams {
            nice: left_nice,
            ..params
        });
        st.se.vlag = vlag;
        if left_nice != params.nice {
            set_params_offrq(&mut st, params);
        }
        st
    }
}

impl<T> Deref for EevdfTask<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

/// EEVDF behind axsched's `BaseScheduler` (see the module docs): `HZ` is
/// the caller's tick rate, `CPUS` its CPU count.
pub struct EevdfScheduler<T, const HZ: usize = 250, const CPUS: usize = 1> {
    rq: Rq,
    cfg: Arc<SchedConfig>,
    /// This scheduler's instance number, in its tasks' owner words.
    instance: u32,
    now_ns: u64,
    /// The task of each id (`None`: a free id).
    tasks: Vec<Option<Arc<EevdfTask<T>>>>,
    free_ids: Vec<u32>,
    /// The last pick, until it is put back or has left (settled at the
    /// next pick).
    picked: Option<TaskId>,
    /// Was the last pick put back?
    put_back: bool,
    /// The id of a task that left while the runqueue still runs it: free
    /// once the runqueue has switched away from it (at the next pick).
    retired: Option<u32>,
    /// Tasks handed to this scheduler but queued in another one, left there.
    refused: u64,
    /// Tasks adopted from another scheduler that had them in flight.
    adopted: u64,
}

impl<T, const HZ: usize, const CPUS: usize> EevdfScheduler<T, HZ, CPUS> {
    /// An empty scheduler with the default features and tunables, for
    /// `CPUS` CPUs ticking at `HZ`.
    pub fn new() -> Self {
        let hz = u32::try_from(HZ).unwrap_or(u32::MAX);
        let cpus = u32::try_from(CPUS.max(1)).unwrap_or(u32::MAX);
        Self::with_config(Arc::new(SchedConfig::new(cpus, hz)))
    }

    /// An empty scheduler with `cfg` (features, tunables, tick length; the
    /// `HZ` and `CPUS` parameters are then unused). Several schedulers may
    /// share one configuration.
    pub fn with_config(cfg: Arc<SchedConfig>) -> Self {
        let mut rq = Rq::new(CpuId::BOOT, cfg.clone(), MAX_IDS as usize);
        rq.update_rq_clock(1);
        EevdfScheduler {
            rq,
            cfg,
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            now_ns: 1,
            tasks: Vec::new(),
            free_ids: Vec::new(),
            picked: None,
            put_back: false,
            retired: None,
            refused: 0,
            adopted: 0,
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

    /// Tasks in the scheduler: queued, the current pick, and a pick that
    /// left and is not settled yet.
    pub fn len(&self) -> usize {
        self.tasks.len() - self.free_ids.len() - usize::from(self.retired.is_some())
    }

    /// No task at all?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tasks a later `pick_next_task` may return: runnable in the
    /// runqueue, the running pick excluded unless it was put back. Read
    /// from the runqueue itself, not from the owner words; O(n).
    pub fn queued(&self) -> impl Iterator<Item = &Arc<EevdfTask<T>>> + '_ {
        let running = match self.picked {
            Some(id) if !self.put_back => Some(id),
            _ => None,
        };
        self.rq
            .tasks()
            .filter(move |(id, t)| t.state == TaskState::Queued && Some(*id) != running)
            .filter_map(|(id, _)| self.tasks.get(id.0 as usize)?.as_ref())
    }

    /// Tasks handed to this scheduler (`add_task`, `put_prev_task`) while
    /// queued in another scheduler, and left there.
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Tasks adopted while another scheduler still had them as its running
    /// pick (a migration before the old CPU settled).
    pub fn adopted(&self) -> u64 {
        self.adopted
    }

    fn params(nice: i32) -> TaskParams {
        TaskParams {
            nice,
            ..TaskParams::default()
        }
    }

    /// The id of `task` here, if this scheduler owns it, and whether it is
    /// in flight.
    fn own_id(&self, w: u64) -> Option<(TaskId, bool)> {
        if (w >> 32) as u32 != self.instance {
            return None;
        }
        Some((TaskId(w as u32 & (MAX_IDS - 1)), w & IN_FLIGHT != 0))
    }

    /// A free id for `task`, entered in the table.
    fn new_id(&mut self, task: Arc<EevdfTask<T>>) -> u32 {
        match self.free_ids.pop() {
            Some(i) => {
                self.tasks[i as usize] = Some(task);
                i
            }
            None => {
                let i = self.tasks.len() as u32;
                assert!(i < MAX_IDS, "axsched front end: more than 2^30 tasks");
                self.tasks.push(Some(task));
                i
            }
        }
    }

    /// Drops an id's task from the table (the task's word is not touched).
    /// The id of the task the runqueue is running is freed at the next
    /// pick, when the runqueue has let go of its slot.
    fn release(&mut self, id: TaskId) -> Option<Arc<EevdfTask<T>>> {
        let t = self.tasks[id.0 as usize].take()?;
        if self.rq.curr() == Some(id) {
            self.retired = Some(id.0);
        } else {
            self.free_ids.push(id.0);
        }
        Some(t)
    }

    /// Lets `task` go if its word still says `w` (nobody adopted it
    /// meanwhile): marks it leaving, keeps the lag it `left` with for its
    /// wakeup, then marks it unowned. A scheduler that finds it leaving
    /// waits the few instructions until it is unowned, so the lag it reads
    /// is this one, and a late owner never overwrites a newer one.
    fn let_go(task: &EevdfTask<T>, w: u64, left: Option<SchedTask>) {
        if task
            .owner
            .compare_exchange(w, w | LEAVING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let (nice, vlag) = left.map_or((0, NO_LAG), |st| (st.params.nice, st.se.vlag));
        task.left_nice.store(nice, Ordering::Relaxed);
        task.left_vlag.store(vlag, Ordering::Relaxed);
        task.owner.store(UNOWNED, Ordering::Release);
    }

    /// Takes `task` in: claims its owner word (from `from`: nobody, or
    /// another scheduler's in-flight pick) and enqueues it, as a new task
    /// (`new`) or as a wakeup. Returns false if the word was no longer
    /// `from`.
    fn adopt(&mut self, task: Arc<EevdfTask<T>>, from: u64, new: bool) -> bool {
        let id = self.new_id(task.clone());
        let claimed = word(self.instance, id, false);
        // Acquire: the lag a let-go wrote before `UNOWNED` is visible.
        if task
            .owner
            .compare_exchange(from, claimed, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            self.tasks[id as usize] = None;
            self.free_ids.push(id);
            return false;
        }
        task.nice_pending.store(false, Ordering::Relaxed);
        let params = Self::params(task.nice());
        if new {
            self.rq.wake_up_new_task(TaskId(id), SchedTask::new(params));
        } else if from == UNOWNED {
            // A wakeup: with the lag it left with (PLACE_LAG).
            let st = task.wakeup_state(params);
            self.rq.try_to_wake_up(TaskId(id), st, WakeFlags::empty());
        } else {
            // Its old owner has not settled it: no lag was kept.
            self.adopted += 1;
            let st = SchedTask::new(params);
            self.rq.try_to_wake_up(TaskId(id), st, WakeFlags::MIGRATED);
        }
        true
    }

    /// `add_task` / `put_prev_task` of a task this scheduler does not own.
    fn take_in(&mut self, task: Arc<EevdfTask<T>>, new: bool) {
        loop {
            let w = task.owner.load(Ordering::Acquire);
            if w & LEAVING != 0 {
                // Its owner is writing its lag, under its own lock.
                core::hint::spin_loop();
                continue;
            }
            if w != UNOWNED && w & IN_FLIGHT == 0 {
                // Queued in another scheduler: it is runnable there.
                self.refused += 1;
                return;
            }
            // Nobody owns it, or another scheduler has let it go to the
            // caller (its running pick, not put back).
            if self.adopt(task.clone(), w, new) {
                return;
            }
        }
    }

    /// The last pick was not put back: it has left (blocked, exited or
    /// moved to another scheduler).
    fn settle_pick(&mut self) {
        let Some(id) = self.picked.take() else {
            return;
        };
        if self.put_back || self.rq.curr() != Some(id) {
            return;
        }
        // Never delayed (SPECIAL): the caller no longer counts it as queued.
        let left = self
            .rq
            .dequeue_task(id, DequeueFlags::SLEEP | DequeueFlags::SPECIAL)
            .ok()
            .flatten();
        if let Some(task) = self.release(id) {
            Self::let_go(&task, word(self.instance, id.0, true), left);
        }
    }

    /// Any task waiting here besides a pick that has left?
    fn others_waiting(&self) -> bool {
        let leaving = match self.picked {
            Some(id) if !self.put_back && self.rq.curr() == Some(id) => 1,
            _ => 0,
        };
        self.rq.nr_running() > leaving
    }
}

impl<T, const HZ: usize, const CPUS: usize> Default for EevdfScheduler<T, HZ, CPUS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const HZ: usize, const CPUS: usize> ::axsched::BaseScheduler
    for EevdfScheduler<T, HZ, CPUS>
{
    type SchedItem = Arc<EevdfTask<T>>;

    fn init(&mut self) {}

    fn add_task(&mut self, task: Self::SchedItem) {
        match self.own_id(task.owner.load(Ordering::Acquire)) {
            // The current pick, added back: as put back.
            Some((id, true)) if self.picked == Some(id) => self.put_prev_task(task, true),
            // Already queued here.
            Some(_) => {}
            None => self.take_in(task, true),
        }
    }

    fn remove_task(&mut self, task: &Self::SchedItem) -> Option<Self::SchedItem> {
        let w = task.owner.load(Ordering::Acquire);
        let (id, in_flight) = self.own_id(w)?;
        if in_flight {
            return None; // running: not in the queue
        }
        if self.picked == Some(id) {
            self.picked = None;
        }
        let left = self
            .rq
            .dequeue_task(id, DequeueFlags::SLEEP | DequeueFlags::SPECIAL)
            .ok()?;
        let t = self.release(id)?;
        Self::let_go(&t, w, left);
        Some(t)
    }

    fn pick_next_task(&mut self) -> Option<Self::SchedItem> {
        self.settle_pick();
        let next = self.rq.pick_next_task();
        if let Some(id) = self.retired.take() {
            self.free_ids.push(id);
        }
        let next = next?;
        self.picked = Some(next);
        self.put_back = false;
        let task = self.tasks[next.0 as usize].clone()?;
        // Queued here, so only this scheduler changes its word.
        task.owner
            .store(word(self.instance, next.0, true), Ordering::Release);
        if task.nice_pending.load(Ordering::Relaxed)
            && task.nice_pending.swap(false, Ordering::AcqRel)
        {
            let _ = self.rq.set_user_nice(next, task.nice());
        }
        Some(task)
    }

    fn put_prev_task(&mut self, prev: Self::SchedItem, preempt: bool) {
        let w = prev.owner.load(Ordering::Acquire);
        match self.own_id(w) {
            Some((id, true)) if self.picked == Some(id) && !self.put_back => {
                let queued = word(self.instance, id.0, false);
                if prev
                    .owner
                    .compare_exchange(w, queued, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    // Adopted by another scheduler meanwhile: it has left.
                    return;
                }
                self.put_back = true;
                if !preempt && self.rq.curr() == Some(id) {
                    self.rq.yield_task();
                }
            }
            // Queued here already (or an old pick that left): nothing to add.
            Some(_) => {}
            None => self.take_in(prev, false),
        }
    }

    fn task_tick(&mut self, current: &Self::SchedItem) -> bool {
        self.now_ns += self.cfg.tick_ns();
        self.rq.update_rq_clock(self.now_ns);
        match self.own_id(current.owner.load(Ordering::Acquire)) {
            Some((id, true)) if self.rq.curr() == Some(id) => self.rq.task_tick() != Resched::None,
            // Not a task this scheduler runs: preempt it for any waiter.
            _ => self.others_waiting(),
        }
    }

    fn set_priority(&mut self, task: &Self::SchedItem, prio: isize) -> bool {
        if !(-20..=19).contains(&prio) {
            return false;
        }
        task.nice.store(prio as i32, Ordering::Relaxed);
        match self.own_id(task.owner.load(Ordering::Acquire)) {
            Some((id, _)) => {
                let _ = self.rq.set_user_nice(id, prio as i32);
            }
            // Not here: its owner applies it at its next pick, or the next
            // scheduler that takes it in.
            None => task.nice_pending.store(true, Ordering::Release),
        }
        true
    }
}
