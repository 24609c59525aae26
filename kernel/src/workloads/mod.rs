//! Scheduler workloads the debug shell runs (`spin`, `perfpipe`, `hackbench`,
//! `cyclictest`, `schbench`): each spawns kernel threads, waits for them,
//! reports and joins every thread it spawned, also when it is stopped.
//!
//! # Stopping
//! A kernel thread cannot be killed asynchronously here (it may hold a lock or
//! sit in a wait queue), so every workload thread polls its job's stop flag
//! ([`Stop`]) at safe points and returns. The flag is set by Ctrl-C (the shell
//! reads the console while it waits, see [`Job::wait`]) or by `kill PID` of
//! any thread of the job; the threads of one job depend on each other (a
//! receiver waits for its senders), so the whole job stops. Workloads whose
//! threads block on each other end through poison messages sent by the thread
//! that saw the flag, so no thread is left waiting forever.
//!
//! # Waiting
//! The shell thread does not busy-poll: it sleeps a few milliseconds between
//! checks of the threads and of the console ([`Control::interrupted`]).

pub mod cyclictest;
pub mod hackbench;
pub mod perfpipe;
pub mod schbench;
pub mod spin;

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use sched::TaskParams;

use crate::percpu::MAX_CPUS;
use crate::sync::SpinLock;
use crate::task::{self, ExitStats, Tid};

/// What a workload needs from the shell while it waits.
pub trait Control {
    /// Whether the user pressed Ctrl-C since the last call (reads the console
    /// without blocking; other input stays queued for the prompt).
    fn interrupted(&mut self) -> bool;
}

/// A job's stop flag, as its threads see it.
#[derive(Clone)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Whether the job was asked to stop.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Threads of running jobs, by slot index, with their job's flag (for `kill`).
static REGISTRY: SpinLock<Vec<(u32, Arc<AtomicBool>)>> = SpinLock::new(Vec::new());

/// Sets the stop flag of the job thread `idx` belongs to; false if it is no
/// workload thread.
pub fn stop_thread(idx: u32) -> bool {
    let reg = REGISTRY.lock();
    match reg.iter().find(|(i, _)| *i == idx) {
        Some((_, f)) => {
            f.store(true, Ordering::Relaxed);
            true
        }
        None => false,
    }
}

/// Free thread slots.
pub fn free_slots() -> usize {
    (task::MAX_THREADS - MAX_CPUS).saturating_sub(task::nr_threads())
}

/// The threads of one workload run. Dropping it stops and joins them all.
pub struct Job {
    stop: Arc<AtomicBool>,
    threads: Vec<Tid>,
    interrupted: bool,
}

impl Job {
    /// A job with no threads yet.
    pub fn new() -> Self {
        Job {
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            interrupted: false,
        }
    }

    /// The job's stop flag, for its threads.
    pub fn stop_flag(&self) -> Stop {
        Stop(self.stop.clone())
    }

    /// Asks every thread to stop.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Spawns one thread of the job, allowed on `cpu` only if given, else on
    /// the CPUs the shell may use (the balancer places it).
    pub fn spawn<F>(
        &mut self,
        name: &'static str,
        params: TaskParams,
        cpu: Option<u32>,
        f: F,
    ) -> Result<Tid, String>
    where
        F: FnOnce() + Send + 'static,
    {
        let mask = match cpu {
            Some(c) => {
                let online = task::online_mask();
                if c >= 64 || online & (1 << c) == 0 {
                    return Err(alloc::format!(
                        "CPU {c} is not online (online: {})",
                        ::shell::CpuList(online)
                    ));
                }
                1 << c
            }
            None => task::current().cpus_allowed(),
        };
        self.threads.reserve(1);
        REGISTRY.lock().reserve(1);
        let tid = task::spawn_on(name, params, mask, f)
            .map_err(|e| alloc::format!("cannot spawn: {e:?}"))?;
        self.threads.push(tid);
        REGISTRY.lock().push((tid.idx(), self.stop.clone()));
        Ok(tid)
    }

    /// Sleeps until every thread exited, checking the console every `poll_ms`
    /// for Ctrl-C (which stops the job). Returns whether it was interrupted.
    pub fn wait(&mut self, ctl: &mut dyn Control, poll_ms: u64) -> bool {
        loop {
            if self.threads.iter().all(|&t| task::has_exited(t)) {
                return self.interrupted;
            }
            if ctl.interrupted() {
                self.interrupted = true;
                self.stop();
            }
            task::sleep_ms(poll_ms);
        }
    }

    /// Joins every thread (in spawn order) and returns their exit statistics.
    pub fn join(mut self) -> Vec<ExitStats> {
        self.join_all()
    }

    fn join_all(&mut self) -> Vec<ExitStats> {
        let mut out = Vec::with_capacity(self.threads.len());
        for tid in core::mem::take(&mut self.threads) {
            let st = task::join(tid).unwrap_or_default();
            REGISTRY.lock().retain(|(i, _)| *i != tid.idx());
            out.push(st);
        }
        out
    }
}

impl Default for Job {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.stop();
            self.join_all();
        }
    }
}

/// Spins for about `iters` loop iterations (a little CPU work).
#[inline]
pub fn burn(iters: u32) {
    for _ in 0..iters {
        core::hint::spin_loop();
    }
}

/// `x` per mille of `total`, as `12.3`.
pub struct Permille(pub u64);

impl core::fmt::Display for Permille {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.{}", self.0 / 10, self.0 % 10)
    }
}
