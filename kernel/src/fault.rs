//! Deliberate faults (`fault=CASE` on the command line), one per boot, for
//! the fault-report tests (`scripts/test/fault-test.sh`): each makes the kernel
//! fail in one way, and the test checks the report it prints and that QEMU
//! exits with a failing status.
//!
//! Thread cases run in a thread named `fault` (spawned instead of the shell
//! or the tests); `boot_stack` on CPU 0 in its idle context during boot
//! ([`on_boot_cpu`]); `early_stack` on the boot stack itself, before the
//! heap ([`on_early_boot`]), and `early_exception_stack` then overflows the
//! boot CPU's static exception stack from the report ([`on_report`]); `idle_stack` and `bringup` on CPU 1 while it comes up
//! ([`on_secondary`]); `bringup_stack` on CPU 1 in the arch layer's
//! bring-up code, on the stack the CPU starts on ([`on_secondary_arch`]);
//! `ap_panic` in a `fault` thread pinned to CPU 1;
//! `exception_stack` overflows a thread's stack and then, from the fault
//! handler ([`on_report`]), the exception stack the report runs on.

use core::sync::atomic::{AtomicU8, Ordering};
use kernel_hal::addr::VirtAddr;
use kernel_hal::cpu::CpuId;

use bootargs::FaultCase;
use sched::TaskParams;

use crate::{arch, task};

/// The case asked for (0: none).
static CASE: AtomicU8 = AtomicU8::new(0);

/// An address that no page table maps on either arch (below 2^47, so
/// canonical on x86_64, and above the 4 GiB + 1 GiB that x86_64 maps).
const WILD_ADDRESS: VirtAddr = VirtAddr::new(0x7fff_dead_0000);

/// Records the case (from the command line) for the hooks below.
pub fn set(case: Option<FaultCase>) {
    CASE.store(case.map_or(0, |c| c as u8), Ordering::Relaxed);
}

fn case() -> Option<FaultCase> {
    let v = CASE.load(Ordering::Relaxed);
    FaultCase::ALL.into_iter().find(|&c| c as u8 == v)
}

/// Whether a case was asked for (the kernel then starts neither the shell
/// nor the tests).
pub fn armed() -> bool {
    case().is_some()
}

/// Called by the boot CPU once it runs on its idle thread's (guarded)
/// stack, before the scheduler starts (`boot_stack`).
pub fn on_boot_cpu() {
    if case() == Some(FaultCase::BootStack) {
        recurse(0);
    }
}

/// Called by the boot CPU early in `kernel_main`, still on the boot stack,
/// before the heap (`early_stack`, `early_exception_stack`).
pub fn on_early_boot() {
    if matches!(
        case(),
        Some(FaultCase::EarlyStack | FaultCase::EarlyExceptionStack)
    ) {
        log::info!(
            "fault: triggering '{}' on the boot stack",
            case().map_or("", |c| c.name())
        );
        recurse(0);
    }
}

/// Called by the arch fault handlers after a complete report
/// (`exception_stack`, `early_exception_stack`: the report's own stack
/// overflows too, once).
pub fn on_report() {
    static DONE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if matches!(
        case(),
        Some(FaultCase::ExceptionStack | FaultCase::EarlyExceptionStack)
    ) && !DONE.swap(true, Ordering::Relaxed)
    {
        recurse(0);
    }
}

/// Called by each secondary CPU first thing in generic code (`bringup`),
/// and again once it has its idle thread (`idle_stack`).
pub fn on_secondary(cpu: CpuId, has_idle_thread: bool) {
    if cpu.index() != 1 {
        return;
    }
    match (case(), has_idle_thread) {
        (Some(FaultCase::Bringup), false) => {
            wild_read();
        }
        (Some(FaultCase::IdleStack), true) => {
            recurse(0);
        }
        _ => {}
    }
}

/// Called by each secondary CPU's arch bring-up code, on the stack it
/// starts on, before generic code runs (`bringup_stack`, CPU 1).
pub fn on_secondary_arch(cpu: CpuId) {
    if cpu.index() == 1 && case() == Some(FaultCase::BringupStack) {
        recurse(0);
    }
}

/// Starts the thread of a thread case, or says why the case cannot run.
/// Called once every CPU is up.
pub fn start() {
    let Some(case) = case() else {
        return;
    };
    log::info!("fault: triggering '{}'", case.name());
    if case.needs_cpu1() && !crate::sched::online_mask().test(1) {
        log::error!("error: fault={} needs a second CPU (SMP=2)", case.name());
        arch::exit_qemu(arch::ExitCode::Failure);
    }
    let mask =
        crate::cpumask::CpuMask::from_cpus(&[if case == FaultCase::ApPanic { 1 } else { 0 }]);
    if matches!(
        case,
        FaultCase::IdleStack | FaultCase::Bringup | FaultCase::BringupStack | FaultCase::BootStack
    ) {
        return;
    }
    if let Err(e) = task::spawn_on("fault", TaskParams::default(), mask, move || run(case)) {
        log::error!("error: fault: cannot spawn the thread: {:?}", e);
    }
}

fn run(case: FaultCase) {
    match case {
        FaultCase::Recursion | FaultCase::ExceptionStack => {
            recurse(0);
        }
        FaultCase::HugeFrame => {
            huge_frame();
        }
        FaultCase::WildPointer => {
            wild_read();
        }
        FaultCase::Undefined => arch::undefined_instruction(),
        FaultCase::Panic | FaultCase::ApPanic => {
            panic!("fault={} on cpu {}", case.name(), arch::cpu_id())
        }
        FaultCase::IdleStack
        | FaultCase::Bringup
        | FaultCase::BringupStack
        | FaultCase::BootStack
        | FaultCase::EarlyStack
        | FaultCase::EarlyExceptionStack => {}
    }
    log::error!("fault: '{}' did not fault", case.name());
}

/// Recursion without end (each frame keeps 256 bytes live).
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let mut buf = [0u8; 256];
    buf[0] = depth as u8;
    core::hint::black_box(&mut buf);
    // Never true; keeps the compiler from seeing an unconditional recursion.
    if core::hint::black_box(depth) == u64::MAX {
        return 0;
    }
    recurse(depth + 1) + u64::from(buf[1])
}

/// A 48 KiB frame: larger than a whole stack (32 KiB) and the guard below it
/// (32 KiB). The stack probes make it touch the first guard page.
#[inline(never)]
fn huge_frame() -> u8 {
    let mut buf = [0u8; 48 * 1024];
    core::hint::black_box(&mut buf);
    buf[100]
}

fn wild_read() -> u64 {
    arch::read_unmapped(WILD_ADDRESS)
}
