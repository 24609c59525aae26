//! Per-CPU data, the CPU table, the local interrupt mask (DAIF) and idling.
//!
//! Each CPU's `TPIDR_EL1` points at its [`PerCpu`] block, so finding "this CPU"
//! costs one system register read, the same on the boot CPU ([`init_boot_cpu`])
//! and on secondaries ([`init_secondary_cpu`]). Before [`init_boot_cpu`]
//! `TPIDR_EL1` is 0 and [`cpu_id`] answers 0.
//!
//! The CPU table maps dense indices (0 = boot CPU, then device-tree order) to
//! `MPIDR_EL1` affinity values, which PSCI `CPU_ON` and GICv3 SGIs need. It is
//! filled once by the boot CPU ([`set_cpu_table`]) before any secondary starts.

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use aarch64_cpu::registers::{Readable, Writeable, MPIDR_EL1, TPIDR_EL1};

use crate::arch::MAX_CPUS;
use crate::cpu::CpuId;
use crate::topo::TopoIds;

/// Data private to one CPU, reached through `TPIDR_EL1`.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct PerCpu {
    /// Dense index: 0 = boot CPU, then in bring-up order.
    pub id: CpuId,
    /// `MPIDR_EL1` affinity fields (Aff3..Aff0) of this CPU, as PSCI and the GIC
    /// redistributor name it.
    pub mpidr_aff: u64,
}

/// The per-CPU blocks. Only CPU `i` writes `PER_CPU[i]`, once, before it
/// publishes it in its own `TPIDR_EL1`; afterwards the block is read only.
static mut PER_CPU: [PerCpu; MAX_CPUS] = [const {
    PerCpu {
        id: CpuId::BOOT,
        mpidr_aff: 0,
    }
}; MAX_CPUS];

/// `MPIDR_EL1` affinity bits: Aff3 (39:32), Aff2 (23:16), Aff1 (15:8), Aff0 (7:0).
pub const MPIDR_AFF_MASK: u64 = 0xff_00ff_ffff;

/// Affinity (`MPIDR_EL1 & MPIDR_AFF_MASK`) of each CPU by dense index.
static CPU_MPIDR: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];
/// Each CPU's `capacity-dmips-mhz` by dense index (0: none given).
static CPU_CAPACITY: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];
/// Valid entries of [`CPU_MPIDR`]; 1 (the boot CPU) until [`set_cpu_table`].
static NR_CPUS: AtomicUsize = AtomicUsize::new(1);

/// Each CPU's core and last-level cache ids by dense index, from the
/// devicetree's cpu-map (`u32::MAX`: not in it).
static CPU_CORE: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(u32::MAX) }; MAX_CPUS];
static CPU_LLC: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(u32::MAX) }; MAX_CPUS];

/// Records the CPUs found in the device tree; `mpidrs[0]` is the boot CPU,
/// `info(mpidr)` its `capacity-dmips-mhz` (0: none) and its place in the
/// cpu-map. Boot CPU only, before any secondary CPU is started.
pub fn set_cpu_table(mpidrs: &[u64], info: impl Fn(u64) -> (u32, Option<TopoIds>)) {
    let n = mpidrs.len().clamp(1, MAX_CPUS);
    for (i, &m) in mpidrs[..n].iter().enumerate() {
        let (capacity, topo) = info(m);
        CPU_MPIDR[i].store(m & MPIDR_AFF_MASK, Ordering::Relaxed);
        CPU_CAPACITY[i].store(capacity, Ordering::Relaxed);
        CPU_CORE[i].store(topo.map_or(u32::MAX, |t| t.core), Ordering::Relaxed);
        CPU_LLC[i].store(topo.map_or(u32::MAX, |t| t.llc), Ordering::Relaxed);
    }
    NR_CPUS.store(n, Ordering::Release);
}

/// Where CPU `cpu` sits (core and last-level cache ids), if the devicetree's
/// cpu-map names it.
pub fn cpu_topology_ids(cpu: CpuId) -> Option<TopoIds> {
    if cpu.index() >= cpu_count() {
        return None;
    }
    let core = CPU_CORE[cpu.index()].load(Ordering::Acquire);
    let llc = CPU_LLC[cpu.index()].load(Ordering::Acquire);
    (core != u32::MAX).then_some(TopoIds { core, llc })
}

/// CPU `cpu`'s `capacity-dmips-mhz` from the device tree, if its node has
/// one (big.LITTLE boards; QEMU's `virt` has none).
pub fn cpu_capacity_dmips_mhz(cpu: CpuId) -> Option<u32> {
    Some(CPU_CAPACITY.get(cpu.index())?.load(Ordering::Acquire)).filter(|&c| c != 0)
}

/// How many CPUs the kernel can use: the boot CPU plus those the device tree
/// describes as started through PSCI (at most `MAX_CPUS`).
pub fn cpu_count() -> usize {
    NR_CPUS.load(Ordering::Acquire)
}

/// `MPIDR_EL1` affinity of CPU `cpu` (dense index < [`cpu_count`]).
pub fn mpidr_of(cpu: CpuId) -> u64 {
    CPU_MPIDR[cpu.index()].load(Ordering::Relaxed)
}

/// Sets up the boot CPU's per-CPU block (index 0) and `TPIDR_EL1`.
pub fn init_boot_cpu() {
    // SAFETY: the boot CPU runs this once, before any other CPU exists and before
    // anything reads PER_CPU[0] through TPIDR_EL1.
    let block = unsafe {
        let block = &mut (*core::ptr::addr_of_mut!(PER_CPU))[0];
        block.id = CpuId::BOOT;
        block.mpidr_aff = MPIDR_EL1.get() & MPIDR_AFF_MASK;
        block as *const PerCpu
    };
    TPIDR_EL1.set(block as u64);
}

/// Sets up the per-CPU block of secondary CPU `cpu` and points this CPU's
/// `TPIDR_EL1` at it, so [`cpu_id`] returns `cpu` from now on.
///
/// # Safety
/// Must run on the CPU being brought up as `cpu` (not the boot CPU), once,
/// before anything reads `PER_CPU[cpu]`: no other CPU has that index.
pub unsafe fn init_secondary_cpu(cpu: CpuId) {
    assert!(cpu != CpuId::BOOT, "init_secondary_cpu: the boot CPU");
    // SAFETY: the caller guarantees this CPU is `cpu` and runs this once, so no
    // one else writes PER_CPU[cpu] or reads it before TPIDR_EL1 publishes it.
    let block = unsafe {
        let block = &mut (*core::ptr::addr_of_mut!(PER_CPU))[cpu.index()];
        block.id = cpu;
        block.mpidr_aff = MPIDR_EL1.get() & MPIDR_AFF_MASK;
        block as *const PerCpu
    };
    TPIDR_EL1.set(block as u64);
}

/// This CPU's per-CPU block, if it was set up.
pub fn this_cpu() -> Option<&'static PerCpu> {
    let p = TPIDR_EL1.get() as *const PerCpu;
    // SAFETY: TPIDR_EL1 is 0 or points into PER_CPU, whose entry is never written
    // after being published (see PER_CPU).
    unsafe { p.as_ref() }
}

/// This CPU's dense index (0 = boot CPU).
pub fn cpu_id() -> CpuId {
    this_cpu().map_or(CpuId::BOOT, |c| c.id)
}

/// Waits for the next interrupt and returns with IRQs unmasked, after it was
/// handled.
///
/// No lost wakeup: `wfi` wakes on a *pending* interrupt even while `DAIF.I` masks
/// it, so a caller may mask IRQs, check for work, and call `halt()`; an interrupt
/// that arrived after the check is taken right after `wfi` (at the `daifclr`).
#[inline]
pub fn halt() {
    // SAFETY: wfi only waits; unmasking IRQs is what the contract asks for; the isb
    // makes a pending IRQ be taken before this function returns.
    unsafe {
        core::arch::asm!(
            "dsb sy",
            "wfi",
            "msr daifclr, #2",
            "isb",
            options(nostack, preserves_flags)
        )
    }
}
