//! Where each CPU sits: its core (SMT siblings share one) and its last-level
//! cache, as ids the scheduler's `Topology::from_ids` takes.
//!
//! **x86_64.** An APIC id is a bit field: the low `smt_shift` bits number
//! the hardware threads of a core, the bits up to `pkg_shift` the cores of a
//! package (CPUID leaf 0xB / 0x1F, "x2APIC topology"), and a cache is shared
//! by the CPUs whose ids agree above `log2(sharing)` bits (leaf 4 on Intel,
//! 0x8000001D on AMD: `EAX[25:14]` + 1 logical CPUs share it). Linux derives
//! `cpu_smt_mask` and `cpu_llc_shared_mask` the same way
//! (arch/x86/kernel/cpu/topology*.c, cacheinfo.c). [`X86Shifts::ids`] does
//! the arithmetic; the arch code reads the leaves.
//!
//! **aarch64** reads the devicetree's `/cpus/cpu-map` in its platform code
//! (core and thread nodes; without cache nodes the last-level cache is the
//! socket, as Linux's `cpu_coregroup_mask` falls back to the package).
//!
//! No NUMA information is read: every CPU is in node 0.

/// A CPU's place: CPUs with the same `core` are SMT siblings, with the same
/// `llc` share a last-level cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopoIds {
    /// Core id (shared by the core's hardware threads).
    pub core: u32,
    /// Last-level cache id.
    pub llc: u32,
}

/// The x86 APIC-id bit fields, from CPUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct X86Shifts {
    /// Bits of the thread number within a core.
    pub smt_shift: u32,
    /// Bits below the last-level cache's id (from its sharing count).
    pub llc_shift: u32,
    /// Bits below the package id.
    pub pkg_shift: u32,
}

impl X86Shifts {
    /// From the leaves' raw fields: `smt_shift` and `pkg_shift` (leaf
    /// 0xB/0x1F's `EAX[4:0]` at the SMT and at the last level), and how many
    /// logical CPUs share the last-level cache (`None`: no cache leaf, the
    /// package then). The cache is kept between a core and the package: a
    /// cache said to be shared by fewer CPUs than a core has threads is the
    /// core's, one shared beyond the package is the package's.
    pub fn new(smt_shift: u32, pkg_shift: u32, llc_sharing: Option<u32>) -> X86Shifts {
        let smt_shift = smt_shift.min(31);
        let pkg_shift = pkg_shift.clamp(smt_shift, 31);
        let llc_shift = llc_sharing
            .map_or(pkg_shift, log2_ceil)
            .clamp(smt_shift, pkg_shift);
        X86Shifts {
            smt_shift,
            llc_shift,
            pkg_shift,
        }
    }

    /// The ids of the CPU with APIC id `apic_id`.
    pub fn ids(&self, apic_id: u32) -> TopoIds {
        TopoIds {
            core: apic_id >> self.smt_shift,
            llc: apic_id >> self.llc_shift,
        }
    }
}

/// The smallest `k` with `2^k >= n` (0 for 0 and 1).
pub fn log2_ceil(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}
