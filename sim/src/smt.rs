//! SMT throughput sharing: the hardware threads of a core share its
//! execution resources, so a thread runs slower while its sibling is busy
//! than alone ([`Costs::smt_busy_cap`](crate::machine::Costs), with the
//! figure it comes from).
//!
//! A CPU's speed in the engine is its capacity (`asym:`'s big and little
//! CPUs): `work_ns` of work takes `work_ns * 1024 / cap`. Under SMT sharing
//! a CPU's capacity is its own (1024 on every preset with SMT) times
//! `smt_busy_cap / 1024` while another thread of its core runs a task, its
//! own otherwise; an idle sibling (in an idle state, or paying its exit)
//! takes nothing from it. When a CPU goes busy or idle, each sibling's
//! running task is charged at its old speed and its burst's end re-armed at
//! the new one, as the vCPU time sharing of `qemu:N` does for all CPUs
//! (`Kernel::share_change`). The scheduler is not told: its runtime
//! accounting is wall time, as Linux's (which no longer scales an SMT
//! thread's capacity: commit 765d0af19f5f).
//!
//! Modelled for cores of two threads (every preset with SMT): with more, any
//! busy sibling would slow a thread by the same factor. Not batched: a
//! burst's end moves when a sibling goes busy or idle, which a batch planned
//! at its start cannot know (`--no-smt-share` batches as before).

use sched::Topology;

/// Each CPU's speed alone and beside a busy sibling (the siblings are the
/// topology's `smt_mask`).
#[derive(Clone, Debug)]
pub struct Smt {
    /// Each CPU's own capacity (1024: a lone thread of a full-speed core).
    base_cap: Vec<u32>,
    /// A thread's speed with a busy sibling, per 1024.
    busy_cap: u32,
}

impl Smt {
    /// The model for `topo` with each CPU's own capacity `base_cap`, or
    /// None if no core has two threads or the factor is 1024 (nothing to
    /// share).
    pub fn new(topo: &Topology, base_cap: Vec<u32>, busy_cap: u32) -> Option<Smt> {
        if !topo.has_smt() || busy_cap >= 1024 {
            return None;
        }
        Some(Smt { base_cap, busy_cap })
    }

    /// CPU `cpu`'s capacity with a sibling busy (`sibling_busy`) or not.
    pub fn cap(&self, cpu: usize, sibling_busy: bool) -> u32 {
        let b = self.base_cap[cpu];
        if sibling_busy {
            // Rounded, at least 1.
            ((b as u64 * self.busy_cap as u64 + 512) / 1024).max(1) as u32
        } else {
            b
        }
    }
}
