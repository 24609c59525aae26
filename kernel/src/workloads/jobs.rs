//! Background jobs: `WORKLOAD ... &` in the shell.
//!
//! A job is a *leader* thread (`job/N` in `ps`) that runs the workload
//! exactly as the foreground command does ([`super::run_command`]), with a
//! [`Control`] that reports the job's cancel flag instead of Ctrl-C and an
//! output buffer instead of the console: the report is printed by the shell
//! when the job is reported (at the next prompt, by `jobs`, `wait`, `fg` or
//! `kill`), so it never interleaves with what the shell prints meanwhile.
//!
//! [`Jobs::start`] returns once the workload has spawned all its threads
//! ([`Control::started`]) or has failed: a refusal (not enough thread slots
//! or memory, a CPU that is not online) is the command's error, no job
//! number is given, nothing keeps running.
//!
//! # Limits and memory
//! At most [`MAX_JOBS`] jobs exist at once (running, or finished and not yet
//! reported). Each job costs its leader (a thread slot, a 32 KiB stack) plus
//! what its workload allocates, which the workload checks when it starts
//! against what is free *then* ([`super::check_resources`]: thread slots,
//! and the heap with a reserve kept for the kernel), so a job that does not
//! fit next to the running ones is refused with an error, never a panic.
//!
//! # Killing
//! [`Jobs::kill`] sets the job's cancel flag and the stop flag of its
//! workload: every thread stops at its next check and releases its partners
//! (poison messages, see [`super`]), the leader joins them all (stacks and
//! slots freed) and records the report, marked interrupted. A killed job
//! ends as [`JobState::Killed`].

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use ::shell::Command;
use sched::TaskParams;

use super::Control;
use crate::sync::SpinLock;
use crate::task::{self, Tid};

/// Background jobs that may exist at once (`%1` .. `%8`).
pub const MAX_JOBS: usize = ::shell::MAX_JOBS as usize;

/// Leader thread names, by job number - 1.
const LEADER_NAMES: [&str; MAX_JOBS] = [
    "job/1", "job/2", "job/3", "job/4", "job/5", "job/6", "job/7", "job/8",
];

/// How often waiters look at a job (ms) where they must poll: console input
/// without a receive interrupt; otherwise the leader's end wakes them.
const POLL_MS: u64 = 5;

/// What a job is doing, or how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Its workload runs.
    Running,
    /// Its workload ran to its end.
    Done,
    /// Stopped by `kill` (or Ctrl-C under `fg`); the report is partial.
    Killed,
    /// The workload failed (its error is in the report).
    Failed,
}

impl JobState {
    /// As `jobs` prints it.
    pub fn name(self) -> &'static str {
        match self {
            JobState::Running => "Running",
            JobState::Done => "Done",
            JobState::Killed => "Killed",
            JobState::Failed => "Failed",
        }
    }
}

/// A finished job's outcome, written by its leader.
struct Outcome {
    state: JobState,
    report: String,
    error: Option<String>,
}

/// What the shell and a job's leader share.
struct Shared {
    /// `kill`: the leader's [`Control::interrupted`].
    cancel: AtomicBool,
    /// The workload spawned all its threads.
    started: AtomicBool,
    /// The leader wrote `outcome` and is about to exit.
    done: AtomicBool,
    /// The leader, counted until it set `done`: its end wakes a `wait`.
    leader: super::Live,
    /// The workload's thread ids (slot indices), sorted.
    threads: SpinLock<Vec<u32>>,
    outcome: SpinLock<Option<Outcome>>,
}

/// Set by a leader that finished; cleared by whoever reports finished jobs.
static FINISHED: AtomicBool = AtomicBool::new(false);

/// Whether a job finished since the last [`take_finished_flag`].
pub fn finished_flag() -> bool {
    FINISHED.load(Ordering::Acquire)
}

/// Clears the flag [`finished_flag`] reads; returns whether it was set.
pub fn take_finished_flag() -> bool {
    FINISHED.swap(false, Ordering::AcqRel)
}

/// The leader's view of the shell.
struct Leader(Arc<Shared>);

impl Control for Leader {
    fn interrupted(&mut self) -> bool {
        self.0.cancel.load(Ordering::Acquire)
    }

    /// Its threads are listed, reniced and moved by job number: all of
    /// them, also those a run's parent thread spawns.
    fn wants_threads(&self) -> bool {
        true
    }

    fn started(&mut self, threads: &[Tid]) {
        let mut ids: Vec<u32> = threads.iter().map(|t| t.idx()).collect();
        ids.sort_unstable();
        *self.0.threads.lock() = ids;
        self.0.started.store(true, Ordering::Release);
    }

    /// No poll: `kill` sets the stop flag of every thread of the workload,
    /// and the last one to end wakes the leader as any other.
    fn sleep(&mut self, _poll_ms: u64, done: &dyn Fn() -> bool) {
        super::sleep_unless(done, u64::MAX);
    }
}

/// One background job.
pub struct BgJob {
    /// Its number (`%N`).
    pub number: u32,
    /// The command as typed, with its `&`.
    pub line: String,
    leader: Tid,
    shared: Arc<Shared>,
}

impl BgJob {
    /// The leader's thread id.
    pub fn leader(&self) -> u32 {
        self.leader.idx()
    }

    /// The workload's thread ids, sorted (joined ones included: the list is
    /// what the job spawned).
    pub fn threads(&self) -> Vec<u32> {
        self.shared.threads.lock().clone()
    }

    /// Whether `idx` is its leader or one of its workload threads.
    pub fn owns(&self, idx: u32) -> bool {
        idx == self.leader() || self.shared.threads.lock().binary_search(&idx).is_ok()
    }

    /// Running, or how it ended.
    pub fn state(&self) -> JobState {
        if !self.shared.done.load(Ordering::Acquire) {
            return JobState::Running;
        }
        self.shared
            .outcome
            .lock()
            .as_ref()
            .map_or(JobState::Failed, |o| o.state)
    }

    /// Whether its leader finished.
    pub fn finished(&self) -> bool {
        self.shared.done.load(Ordering::Acquire)
    }
}

/// A reported job: what `jobs`, `wait`, `fg`, `kill` and the prompt print.
pub struct Finished {
    /// Its number.
    pub number: u32,
    /// The command line.
    pub line: String,
    /// Done, Killed or Failed.
    pub state: JobState,
    /// The workload's report, as it prints it in the foreground.
    pub report: String,
    /// The workload's error (Failed).
    pub error: Option<String>,
}

/// How a wait for a job ended without the job ending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// No such job.
    NoSuchJob,
    /// The [`Control`] said stop waiting (Ctrl-C).
    Interrupted,
}

/// The shell's job table.
pub struct Jobs {
    list: Vec<BgJob>,
}

impl Default for Jobs {
    fn default() -> Self {
        Self::new()
    }
}

impl Jobs {
    /// No jobs.
    pub const fn new() -> Self {
        Jobs { list: Vec::new() }
    }

    /// The jobs, by number.
    pub fn iter(&self) -> impl Iterator<Item = &BgJob> {
        self.list.iter()
    }

    /// Jobs whose workload still runs.
    pub fn running(&self) -> usize {
        self.list.iter().filter(|j| !j.finished()).count()
    }

    /// Job `number`.
    pub fn get(&self, number: u32) -> Option<&BgJob> {
        self.list.iter().find(|j| j.number == number)
    }

    /// The job thread `idx` belongs to (leader or workload thread).
    pub fn of_thread(&self, idx: u32) -> Option<u32> {
        self.list.iter().find(|j| j.owns(idx)).map(|j| j.number)
    }

    /// The newest job (the highest number, as `fg` picks it).
    pub fn newest(&self) -> Option<u32> {
        self.list.iter().map(|j| j.number).max()
    }

    /// Starts `cmd` (a workload) in the background; `line` is how `jobs`
    /// shows it. Returns once its threads run, or the workload's error (then
    /// nothing runs and no number was used).
    pub fn start(&mut self, cmd: Command, line: &str) -> Result<&BgJob, String> {
        if !cmd.is_workload() {
            return Err(alloc::format!(
                "{} is not a workload; only workloads run in the background",
                cmd.name()
            ));
        }
        let Some(number) = (1..=MAX_JOBS as u32).find(|n| self.get(*n).is_none()) else {
            return Err(alloc::format!(
                "{}: already {MAX_JOBS} background jobs; wait for or kill one first",
                cmd.name()
            ));
        };
        self.list.try_reserve(1).map_err(|_| "out of memory")?;
        let shared = Arc::new(Shared {
            cancel: AtomicBool::new(false),
            started: AtomicBool::new(false),
            done: AtomicBool::new(false),
            leader: super::Live::new(1),
            threads: SpinLock::new(Vec::new()),
            outcome: SpinLock::new(None),
        });
        let sh = shared.clone();
        let name = cmd.name();
        let leader = task::spawn(
            LEADER_NAMES[number as usize - 1],
            TaskParams::default(),
            move || {
                let mut out = String::new();
                let mut ctl = Leader(sh.clone());
                let r = super::run_command(&cmd, &mut ctl, &mut out);
                let (state, error) = match r {
                    Ok(m) if m.interrupted => (JobState::Killed, None),
                    Ok(_) => (JobState::Done, None),
                    Err(e) => (JobState::Failed, Some(e)),
                };
                *sh.outcome.lock() = Some(Outcome {
                    state,
                    report: out,
                    error,
                });
                sh.done.store(true, Ordering::Release);
                FINISHED.store(true, Ordering::Release);
                sh.leader.thread_done();
                crate::console::wake_readers();
            },
        )
        .map_err(|e| alloc::format!("{name}: cannot start a job thread: {e:?}"))?;
        // The workload spawns its threads (bounded work), then says so.
        while !shared.started.load(Ordering::Acquire) && !shared.done.load(Ordering::Acquire) {
            task::sleep_ms(1);
        }
        let job = BgJob {
            number,
            line: String::from(line),
            leader,
            shared,
        };
        if !job.shared.started.load(Ordering::Acquire) {
            // It ended without starting: a refusal. Nothing to report later.
            let f = Self::finish(job);
            return Err(f
                .error
                .unwrap_or_else(|| alloc::format!("{name}: ended before it started")));
        }
        let at = self.list.partition_point(|j| j.number < number);
        self.list.insert(at, job);
        Ok(&self.list[at])
    }

    /// Asks job `number` to stop (every thread of it); false if there is no
    /// such job. Returns at once: [`Jobs::wait`] for the end.
    pub fn kill(&self, number: u32) -> bool {
        let Some(j) = self.get(number) else {
            return false;
        };
        j.shared.cancel.store(true, Ordering::Release);
        // The workload would see the cancel at its next poll of the leader's
        // Control; its own stop flag reaches the threads at once.
        for idx in j.threads() {
            super::stop_thread(idx);
        }
        true
    }

    /// Joins a finished job's leader and takes its outcome.
    fn finish(job: BgJob) -> Finished {
        let _ = task::join(job.leader);
        let o = job.shared.outcome.lock().take();
        let (state, report, error) = match o {
            Some(o) => (o.state, o.report, o.error),
            None => (
                JobState::Failed,
                String::new(),
                Some(String::from("the job left no report")),
            ),
        };
        Finished {
            number: job.number,
            line: job.line,
            state,
            report,
            error,
        }
    }

    /// Removes every finished job, in number order, for reporting.
    pub fn reap(&mut self) -> Vec<Finished> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.list.len() {
            if self.list[i].finished() {
                out.push(Self::finish(self.list.remove(i)));
            } else {
                i += 1;
            }
        }
        out
    }

    /// Waits until job `number` finished and removes it, asleep until the
    /// leader's end wakes it or `ctl` may have news ([`Control::sleep`]).
    /// When `ctl` reports an interrupt, `kill_on_interrupt` kills the job
    /// and waits on (`fg`), else the wait ends with
    /// [`WaitError::Interrupted`] and the job runs on (`wait`).
    pub fn wait(
        &mut self,
        number: u32,
        ctl: &mut dyn Control,
        kill_on_interrupt: bool,
    ) -> Result<Finished, WaitError> {
        loop {
            let Some(i) = self.list.iter().position(|j| j.number == number) else {
                return Err(WaitError::NoSuchJob);
            };
            if self.list[i].finished() {
                return Ok(Self::finish(self.list.remove(i)));
            }
            if ctl.interrupted() {
                if !kill_on_interrupt {
                    return Err(WaitError::Interrupted);
                }
                self.kill(number);
            }
            let leader = &self.list[i].shared.leader;
            leader.set_waiter();
            ctl.sleep(POLL_MS, &|| leader.done());
        }
    }
}

impl Drop for Jobs {
    /// Kills and joins every job left (in-kernel tests drop their table).
    fn drop(&mut self) {
        for n in self.list.iter().map(|j| j.number).collect::<Vec<_>>() {
            self.kill(n);
        }
        for j in self.list.drain(..) {
            while !j.finished() {
                task::sleep_ms(POLL_MS);
            }
            let _ = Self::finish(j);
        }
    }
}
