//! [`CpuId`], a CPU's dense index, and [`MAX_CPUS`], the most CPUs anything
//! in the workspace describes.
//!
//! One type and one constant for every crate: the scheduler's runqueues and
//! masks, the kernel's per-CPU data, IPIs and timers, the lock validator's
//! per-CPU tables and the shell's parser. They live here because this crate
//! is the lowest layer the others share (`kernel-hal`, `lockdep` and `shell`
//! re-export or import them; nothing below defines a second one).
//!
//! A `CpuId` is checked against `MAX_CPUS` when it is made, so an array
//! sized by `MAX_CPUS` can be indexed with [`CpuId::index`]. Input from
//! outside (a command line, firmware tables) is checked against the CPUs
//! that exist too ([`CpuId::below`]). Like Linux's `smp_processor_id()`
//! numbering, 0 is the boot CPU and the rest follow in bring-up order.

use core::fmt;

/// Most CPUs the scheduler (its [`CpuMask`](crate::CpuMask)), the kernel and
/// the lock validator describe: Linux's `NR_CPUS`, fixed at build time.
pub const MAX_CPUS: usize = 256;

const _: () = assert!(MAX_CPUS.is_power_of_two() && MAX_CPUS <= u32::MAX as usize);

/// A CPU's dense index, always below [`MAX_CPUS`].
///
/// `repr(transparent)`: a `u32` in an `extern "C"` signature (a secondary
/// CPU's entry point takes one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct CpuId(u32);

impl CpuId {
    /// The boot CPU.
    pub const BOOT: CpuId = CpuId(0);

    /// CPU `index`, or `None` when it is not below [`MAX_CPUS`].
    #[inline]
    pub const fn new(index: usize) -> Option<CpuId> {
        if index < MAX_CPUS {
            Some(CpuId(index as u32))
        } else {
            None
        }
    }

    /// CPU `index` of a machine with `nr_cpus` CPUs, or `None` when it is not
    /// below `nr_cpus` (nor below [`MAX_CPUS`]): for a CPU number that comes
    /// from outside.
    #[inline]
    pub const fn below(index: usize, nr_cpus: usize) -> Option<CpuId> {
        if index < nr_cpus {
            CpuId::new(index)
        } else {
            None
        }
    }

    /// CPUs `0..nr_cpus` in order (`nr_cpus` clamped to [`MAX_CPUS`]):
    /// Linux's `for_each_possible_cpu` over a dense numbering.
    #[inline]
    pub fn range(nr_cpus: usize) -> impl DoubleEndedIterator<Item = CpuId> + ExactSizeIterator {
        let n = if nr_cpus > MAX_CPUS {
            MAX_CPUS
        } else {
            nr_cpus
        };
        (0..n as u32).map(CpuId)
    }

    /// CPU `index % MAX_CPUS`: one AND, no branch ([`MAX_CPUS`] is a power
    /// of two). For an index already known to be below `MAX_CPUS`, where a
    /// check could only repeat one made before: read back from where a
    /// `CpuId` was stored (a per-CPU block the running CPU finds through a
    /// register), or a runqueue's number inside the scheduler, whose CPUs
    /// are below its `nr_cpus` (at most `MAX_CPUS`).
    #[inline]
    pub const fn wrapping(index: usize) -> CpuId {
        CpuId((index % MAX_CPUS) as u32)
    }

    /// The dense index, for arrays sized by [`MAX_CPUS`] or by the CPU count.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The dense index as a `u32` (task and trace records keep CPUs so).
    #[inline]
    pub const fn as_u32(self) -> u32 {
        self.0
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_checks_max_cpus() {
        assert_eq!(CpuId::new(0), Some(CpuId::BOOT));
        assert_eq!(
            CpuId::new(MAX_CPUS - 1).map(CpuId::index),
            Some(MAX_CPUS - 1)
        );
        assert_eq!(CpuId::new(MAX_CPUS), None);
        assert_eq!(CpuId::new(usize::MAX), None);
    }

    #[test]
    fn below_checks_nr_cpus_and_max_cpus() {
        assert_eq!(CpuId::below(3, 4).map(CpuId::index), Some(3));
        assert_eq!(CpuId::below(4, 4), None);
        assert_eq!(CpuId::below(MAX_CPUS, MAX_CPUS + 1), None);
    }

    #[test]
    fn wrapping_stays_below_max_cpus() {
        assert_eq!(CpuId::wrapping(5).index(), 5);
        assert_eq!(CpuId::wrapping(MAX_CPUS + 5).index(), 5);
        assert!(CpuId::wrapping(usize::MAX).index() < MAX_CPUS);
    }

    #[test]
    fn range_is_dense_and_clamped() {
        assert!(CpuId::range(3).map(CpuId::index).eq(0..3));
        assert_eq!(CpuId::range(MAX_CPUS + 7).len(), MAX_CPUS);
        assert_eq!(CpuId::range(0).len(), 0);
    }
}
