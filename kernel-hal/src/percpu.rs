//! Per-CPU data: [`CpuLocal<T>`], one `T` per CPU in a static array, each on
//! its own cache lines (so CPUs do not false-share), and the safe handles to
//! it: [`CpuLocal::get`] for CPU `cpu`'s value and [`CpuLocal::this_cpu`]
//! for the running CPU's.
//!
//! The values are shared between CPUs (a CPU reads another's counters, raises
//! its need-resched flag, cancels a timer on it), so `T` must be `Sync`: the
//! handles are plain shared references. A thread that may be preempted, and
//! so migrated, must not keep [`CpuLocal::this_cpu`]'s reference across a
//! preemption point if it means "the CPU I run on": that is a question of
//! meaning, not of memory safety, which the `Sync` bound covers.

use crate::cpu::CpuId;
use crate::MAX_CPUS;

/// A value on cache lines of its own (what [`CpuLocal::new`] takes).
#[repr(align(64))]
#[derive(Debug)]
pub struct Aligned<T>(pub T);

/// One `T` per CPU (room for [`MAX_CPUS`]).
pub struct CpuLocal<T: Sync> {
    slots: [Aligned<T>; MAX_CPUS],
}

impl<T: Sync> CpuLocal<T> {
    /// Per-CPU storage holding `values[cpu]` for each CPU. In a `static`:
    /// `CpuLocal::new([const { Aligned(T::new()) }; MAX_CPUS])`.
    pub const fn new(values: [Aligned<T>; MAX_CPUS]) -> Self {
        CpuLocal { slots: values }
    }

    /// CPU `cpu`'s value.
    #[inline]
    pub fn get(&self, cpu: CpuId) -> &T {
        &self.slots[cpu.index()].0
    }

    /// The running CPU's value.
    #[inline]
    pub fn this_cpu(&self) -> &T {
        &self.slots[crate::arch::cpu_id().index()].0
    }
}
