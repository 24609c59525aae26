//! PSCI (Power State Coordination Interface) calls over the conduit the device tree
//! names (`/psci` `method`: `hvc` or `smc`, SMC Calling Convention, SMC64 ids).
//!
//! Used now for `SYSTEM_OFF` (the fallback when semihosting is unavailable) and for
//! the version banner; `CPU_ON` for SMP bring-up goes through [`call`] as well.

use core::sync::atomic::{AtomicU8, Ordering};

use super::platform::PsciConduit;

/// `PSCI_VERSION`.
const PSCI_VERSION: u32 = 0x8400_0000;
/// `SYSTEM_OFF`.
const SYSTEM_OFF: u32 = 0x8400_0008;
/// `CPU_OFF` (SMC32: it takes no argument).
const CPU_OFF: u32 = 0x8400_0002;
/// `AFFINITY_INFO` (SMC64).
const AFFINITY_INFO: u32 = 0xC400_0004;
/// `AFFINITY_INFO`'s answer for a core that is off.
const AFFINITY_OFF: i64 = 1;

/// 0 = no PSCI, 1 = HVC, 2 = SMC.
static CONDUIT: AtomicU8 = AtomicU8::new(0);

/// Records the conduit found in the device tree.
pub fn init(conduit: Option<PsciConduit>) {
    let v = match conduit {
        None => 0,
        Some(PsciConduit::Hvc) => 1,
        Some(PsciConduit::Smc) => 2,
    };
    CONDUIT.store(v, Ordering::Relaxed);
}

/// Makes the PSCI call `function` with up to three arguments; returns x0, or `None`
/// when the platform has no PSCI.
pub fn call(function: u32, a1: u64, a2: u64, a3: u64) -> Option<i64> {
    let mut x0 = u64::from(function);
    match CONDUIT.load(Ordering::Relaxed) {
        // SAFETY: an SMCCC call to the PSCI firmware/hypervisor named by the DTB; it
        // clobbers at most x0-x17 (SMCCC v1.1 preserves x4-x17, but be conservative).
        1 => unsafe {
            core::arch::asm!("hvc #0", inout("x0") x0, inout("x1") a1 => _, inout("x2") a2 => _,
                inout("x3") a3 => _, out("x4") _, out("x5") _, out("x6") _, out("x7") _,
                out("x8") _, out("x9") _, out("x10") _, out("x11") _, out("x12") _,
                out("x13") _, out("x14") _, out("x15") _, out("x16") _, out("x17") _,
                options(nostack));
        },
        // SAFETY: as above, through the secure monitor.
        2 => unsafe {
            core::arch::asm!("smc #0", inout("x0") x0, inout("x1") a1 => _, inout("x2") a2 => _,
                inout("x3") a3 => _, out("x4") _, out("x5") _, out("x6") _, out("x7") _,
                out("x8") _, out("x9") _, out("x10") _, out("x11") _, out("x12") _,
                out("x13") _, out("x14") _, out("x15") _, out("x16") _, out("x17") _,
                options(nostack));
        },
        _ => return None,
    }
    Some(x0 as i64)
}

/// PSCI version as (major, minor), if there is PSCI.
pub fn version() -> Option<(u16, u16)> {
    let v = call(PSCI_VERSION, 0, 0, 0)? as u32;
    Some(((v >> 16) as u16, v as u16))
}

/// Powers this CPU off (`CPU_OFF`); a later `CPU_ON` starts it again at the
/// entry point it names. Returns only if there is no PSCI or the call
/// failed (DENIED: e.g. a trusted OS lives on this core).
pub fn cpu_off() {
    let _ = call(CPU_OFF, 0, 0, 0);
}

/// Whether the core with affinity `mpidr` is off (`AFFINITY_INFO` at level
/// 0); `None` without PSCI or if the call is not supported.
pub fn cpu_is_off(mpidr: u64) -> Option<bool> {
    let r = call(AFFINITY_INFO, mpidr, 0, 0)?;
    (0..=2).contains(&r).then_some(r == AFFINITY_OFF)
}

/// Powers the machine off (QEMU exits with status 0: no pass/fail verdict).
/// Returns only if there is no PSCI or the call failed.
pub fn system_off() {
    let _ = call(SYSTEM_OFF, 0, 0, 0);
}
