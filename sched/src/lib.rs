//! A `no_std` kernel scheduler with Linux 6.19's EEVDF fair class.
//!
//! Pure scheduling logic: no arch code, no `unsafe`, no global state. The same
//! code runs in a kernel, in host tests and in a simulator; the clock is passed
//! in, and everything that only a platform knows (time, CPU ids, IPIs) stays
//! with the caller.
//!
//! # Layout (Linux's vocabulary)
//! - [`features`]: the `SCHED_FEAT` table, runtime flags, `NAME`/`NO_NAME` text.
//! - [`tunables`]: the sysctl table (`kernel.sched_base_slice_ns`, ...).
//! - [`config`]: one scheduler instance's features + tunables + tick.
//! - [`weight`]: nice to weight, `calc_delta_fair`.
//! - [`pelt`]: per-entity load tracking (decaying load, runnable and
//!   utilization averages, `util_est`): wake-affine weighs PELT loads,
//!   and capacity placement sizes tasks by their utilization
//!   ([`smp::capacity`]).
//! - [`task`]: per-task state ([`SchedTask`]): policy, fair and RT entities.
//! - [`deadline`]: the fair server (a per-CPU deadline entity that serves
//!   fair tasks starved by RT).
//! - [`fair`]: EEVDF (the math is in the module docs), [`rt`]: FIFO/RR,
//!   [`idle`]: the idle class; [`class`]: their order, written once.
//! - [`rq`]: one CPU's runqueue and the class-independent core: enqueue,
//!   dequeue, pick, tick, wakeup preemption, need-resched.
//! - [`CpuId`]: a CPU's dense index, checked against [`MAX_CPUS`] (the one
//!   limit every crate of the workspace takes from here).
//! - [`cpumask`]: 256-CPU sets ([`CpuMask`]); [`topology`]: SMT siblings, LLCs
//!   and NUMA nodes ([`Topology`]); [`domain`]: the per-CPU scheduling domains
//!   built from it, which [`smp`] walks for placement and balancing.
//! - [`slots`]: where a runqueue keeps the tasks it holds (local slots and a
//!   `TaskId` → slot map), so memory follows the tasks, not the id space.
//! - [`smp`]: per-CPU runqueues behind interrupt-masking locks, `select_task_rq`,
//!   TTWU_QUEUE wake lists, IPIs through the [`smp::Platform`] trait, load balancing.
//! - `oracle` (feature `oracle`): a brute-force O(n) EEVDF model the tests
//!   check the tree against; `axsched` (feature `axsched`): EEVDF behind
//!   axsched 0.3's `BaseScheduler`.
//! - [`smp::lifecycle`]: the task lifecycle a kernel drives (spawn, schedule,
//!   wake, set_params, ...), its contracts and who owns what.
//! - [`smp::hotplug`]: CPUs leaving and rejoining scheduling (the active
//!   mask, `sched_cpu_deactivate` / `sched_cpu_activate`).
//!
//! # Embedding
//! ```
//! use std::sync::Arc;
//! use sched::{CpuId, Rq, SchedConfig, SchedTask, TaskId, TaskParams};
//! let cfg = Arc::new(SchedConfig::new(1, 250));
//! let mut rq = Rq::new(CpuId::BOOT, cfg.clone(), 64);
//! rq.update_rq_clock(0);
//! rq.wake_up_new_task(TaskId(1), SchedTask::new(TaskParams::default()));
//! rq.wake_up_new_task(TaskId(2), SchedTask::new(TaskParams::default()));
//! assert!(rq.pick_next_task().is_some());
//! rq.update_rq_clock(4_000_000);
//! let _resched = rq.task_tick();        // none / lazy / now
//! cfg.features.write("NEXT_BUDDY").unwrap();
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

/// The crate README's "adopt it in your kernel" example, compiled and run as
/// a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(feature = "axsched")]
pub mod axsched;
pub mod class;
pub mod config;
mod cpu_id;
pub mod cpumask;
pub mod deadline;
pub mod domain;
pub mod fair;
pub mod features;
pub mod flags;
pub mod idle;
#[cfg(feature = "oracle")]
pub mod oracle;
pub mod pelt;
pub mod preempt;
pub mod rq;
pub mod rt;
pub mod slots;
pub mod smp;
mod sync;
pub mod task;
pub mod topology;
pub mod tunables;
pub mod weight;

pub use class::SchedClass;
pub use config::SchedConfig;
pub use cpu_id::{CpuId, MAX_CPUS};
pub use cpumask::{CpuMask, CPUMASK_WORDS};
pub use features::{Feature, Features};
pub use flags::{DequeueFlags, EnqueueFlags, WakeFlags};
pub use preempt::PreemptPoint;
pub use rq::{
    set_params_offrq, HeldWake, HrtickCmd, PrevAction, Resched, Rq, RqError, Switch, TtwuRunnable,
    WakeupDecision, WakeupReason, HRTICK_MIN_NS,
};
#[cfg(all(feature = "lockdep", not(all(loom, test))))]
pub use sync::{set_lock_events, LockEvents};
/// The runqueue, wake-list and task-cell locks (`spin`'s mutex with a lock
/// class), for kernels that hold one across a context switch.
#[cfg(not(all(loom, test)))]
pub use sync::{Mutex as SpinMutex, MutexGuard as SpinMutexGuard};
pub use task::{Policy, SchedTask, TaskId, TaskParams, TaskState};
pub use topology::{CpuDistance, Topology, TopologyError};
pub use tunables::{PreemptMode, Tunables};
