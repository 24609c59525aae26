//! [`CpuId`]: a CPU's dense index (0 = the boot CPU, then bring-up order),
//! always below [`MAX_CPUS`](crate::MAX_CPUS).

use core::fmt;

/// A CPU's dense index, checked against [`MAX_CPUS`](crate::MAX_CPUS) when
/// it is made, so an array sized by `MAX_CPUS` can be indexed with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CpuId(u32);

impl CpuId {
    /// The boot CPU.
    pub const BOOT: CpuId = CpuId(0);

    /// CPU `index`, or `None` when it is not below `MAX_CPUS`.
    #[inline]
    pub const fn new(index: usize) -> Option<CpuId> {
        if index < crate::MAX_CPUS {
            Some(CpuId(index as u32))
        } else {
            None
        }
    }

    /// The dense index, for arrays sized by `MAX_CPUS`.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}
