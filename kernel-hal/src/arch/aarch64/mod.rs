//! The aarch64 arch layer (QEMU `virt`, and any board described by a device tree).
//!
//! Everything platform specific comes from the device tree whose address the boot
//! code put in [`boot::BootInfo::dtb`]: RAM ([`heap_region`]), the PL011 console,
//! the GIC (v2 or v3, told apart at run time), the virtual timer's interrupt and the
//! PSCI conduit. The kernel runs at EL1 on an identity map (virtual = physical).
//!
//! Submodules:
//! - [`platform`]: device tree parsing into a small, `Copy` description,
//! - [`pl011`]: polled serial console,
//! - [`gic`]: GICv2 / GICv3 interrupt controller,
//! - [`timer`]: CNTV periodic tick and the CNTVCT clock,
//! - [`trap`]: exception vectors, IRQ entry, fault reports,
//! - [`context`]: thread context switch,
//! - [`mem`]: `memcpy` (64 bytes per step where `compiler_builtins` moves 8),
//! - [`cpu`]: per-CPU data (`TPIDR_EL1`), interrupt masking, `halt`,
//! - [`psci`]: PSCI calls over HVC or SMC,
//! - [`smp`]: secondary CPU start (PSCI `CPU_ON`) and IPIs (SGIs),
//! - [`semihosting`]: QEMU exit with a status.
//!
//! See `kernel-hal/src/arch/mod.rs` for the contract every arch module fulfils.
//!
//! SMP: the CPUs are the DTB `/cpus` nodes started through PSCI (dense index 0 =
//! the boot CPU, the others in DTB order, at most `MAX_CPUS`, at most 8 on a
//! GICv2, only those with a redistributor on a GICv3; the boot line counts
//! the rest by reason); [`start_cpu`]
//! brings one up, [`send_ipi`] interrupts one, and [`timer_start`] works on
//! every CPU (each programs its own CNTV and enables the PPI in its banked
//! GICv2 registers / own GICv3 redistributor).
//!
//! Memory: [`mmu`] maps the physical address space one to one (RAM Normal
//! write-back, the rest Device) and turns the MMU and caches on, on the boot
//! CPU in [`early_init`] and on each secondary in its entry code, so atomics
//! and spin locks run on Normal memory as the architecture requires.

mod context;
mod cpu;
mod gic;
mod mem;
pub(crate) mod mmu;
mod paging;
mod pl011;
mod platform;
mod psci;
mod semihosting;
mod smp;
pub mod tests;
mod timer;
mod trap;

use crate::cpu::irq_disable;
pub use context::{init_thread_context, switch_context, Context};
pub use cpu::{cpu_capacity_dmips_mhz, cpu_count, cpu_id, cpu_topology_ids, halt};
pub use pl011::{console_read, console_write};

/// The PL011's interrupt from the device tree (0: none; polling then).
static UART_INTID: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// Routes the PL011's receive interrupt through the GIC to this CPU and turns
/// it on; false (and polling goes on) when the device tree names none.
pub fn console_rx_irq_start() -> bool {
    let intid = UART_INTID.load(core::sync::atomic::Ordering::Relaxed);
    if intid == 0 || !gic::enable_spi(intid, cpu_id()) {
        return false;
    }
    pl011::rx_irq_enable(true);
    true
}

/// Masks (true) or unmasks the PL011's receive interrupt; received bytes wait
/// in it meanwhile.
pub fn console_rx_irq_mask(masked: bool) {
    pl011::rx_irq_enable(!masked);
}

/// The console's interrupt number, for the IRQ handler.
fn uart_intid() -> Option<u32> {
    match UART_INTID.load(core::sync::atomic::Ordering::Relaxed) {
        0 => None,
        intid => Some(intid),
    }
}
pub use platform::heap_region;
pub use smp::{ipi_state, park_this_cpu, send_ipi, start_cpu, START_TIMEOUT_NS};
pub use timer::{
    now_ns, timer_restart_tick, timer_set_event, timer_set_hrtick, timer_start, timer_stop_tick,
    timer_sync, timer_tick_stats,
};

use super::ExitCode;
use crate::addr::{PhysAddr, VirtAddr};

/// Brings up the boot CPU: per-CPU data, the console (from the DTB), exception
/// vectors, the interrupt controller and the clock. Interrupts stay masked; the
/// kernel enables them after [`timer_start`].
///
/// Panics when there is no usable device tree: without it nothing here can be found.
pub fn early_init(info: &boot::BootInfo) {
    cpu::init_boot_cpu();
    timer::init_clock();
    let plat = platform::discover(info);
    let (ram, nr_ram) = platform::ram_ranges::<8>(info);
    // The stacks' guards in the image stay unmapped.
    let g = static_guards();
    let holes = [g.boot, g.exception[0]];
    let image = (
        VirtAddr::new(info.kernel_start),
        VirtAddr::new(info.kernel_end),
    );
    // SAFETY: boot CPU, once, before any other CPU runs and before the heap;
    // the ranges are the DTB's RAM, the image range is the kernel's own, the
    // holes are guard pages nothing uses.
    let map = unsafe { mmu::init(&ram[..nr_ram], image, &holes) };
    super::note_static_guards_unmapped(map.holes_unmapped);
    mmu::note_cpu();
    if let Some(uart) = plat.uart_base {
        pl011::init(uart);
        if let Some(intid) = plat.uart_intid {
            UART_INTID.store(intid, core::sync::atomic::Ordering::Relaxed);
        }
    }
    trap::init();
    psci::init(plat.psci);
    gic::init(plat.gic);
    // The CPUs the GIC can reach: at most 8 on a GICv2; on a GICv3 those
    // with a redistributor we found (and an SGI range we can name).
    let mut cpus = plat.cpus;
    let (nr_cpus, unusable) = gic::usable_cpus(&mut cpus[..plat.nr_cpus]);
    cpu::set_cpu_table(&cpus[..nr_cpus], |mpidr| {
        plat.cpus[..plat.nr_cpus]
            .iter()
            .position(|&m| m == mpidr)
            .map_or((0, None), |i| (plat.capacity_dmips_mhz[i], plat.topo[i]))
    });
    timer::set_irq(plat.timer_intid);
    let (gic_name, gic_base) = match plat.gic {
        platform::GicKind::V2 { gicd, .. } => ("GICv2", gicd),
        platform::GicKind::V3 { gicd, .. } => ("GICv3", gicd),
    };
    let psci = psci::version().unwrap_or((0, 0));
    crate::hooks::emergency_write(format_args!(
        "aarch64: entered at EL{}, image {:#x}..{:#x}, dtb {:#x}, uart {:#x}, {} at {:#x}, \
         timer intid {} at {} Hz, psci {}.{} via {:?}, {} cpu(s){}, mmu {} \
         ({} GiB RAM blocks, {} 2 MiB tables, {} partial)\n",
        boot::aarch64::entry_el(),
        info.kernel_start,
        info.kernel_end,
        info.dtb.unwrap_or(0),
        plat.uart_base.unwrap_or(PhysAddr::ZERO),
        gic_name,
        gic_base,
        plat.timer_intid,
        timer::frequency_hz(),
        psci.0,
        psci.1,
        plat.psci,
        nr_cpus,
        super::IgnoredCpus(&[
            (plat.cpus_ignored, super::BEYOND_MAX_CPUS),
            (unusable.gicv2_limit, "beyond GICv2's 8"),
            (
                unusable.no_redistributor,
                "without a GICv3 redistributor in the first region"
            ),
            (
                unusable.no_sgi_range,
                "with Aff0 >= 16 and no GICv3 SGI range selector"
            ),
        ]),
        if mmu::enabled() { "on" } else { "off" },
        map.ram_gib,
        map.l2_tables,
        map.partial_2m + map.no_table,
    ));
    if let Some(h) = boot::aarch64::efi_handoff() {
        let usable: usize = info.memory_regions().iter().map(|r| r.len).sum();
        crate::hooks::emergency_write(format_args!(
            "aarch64: UEFI {}.{}: device tree from the EFI configuration table, command line \
             from {}{}; memory map of {} entries, {} usable range(s), {} MiB{}; \
             ExitBootServices on attempt {}\n",
            h.uefi_revision >> 16,
            (h.uefi_revision & 0xffff) / 10,
            match h.cmdline_source {
                boot::aarch64::CmdlineSource::LoadOptions => "LoadOptions",
                boot::aarch64::CmdlineSource::DeviceTree => "the device tree (no LoadOptions)",
                boot::aarch64::CmdlineSource::NotText =>
                    "the device tree (LoadOptions were not text: ignored)",
            },
            if h.cmdline_cut {
                " (cut at 2048 bytes)"
            } else {
                ""
            },
            h.map_entries,
            info.memory_len,
            usable >> 20,
            match h.memory_dropped {
                0 => "",
                _ => " (smallest ranges dropped: more than 32)",
            },
            h.exit_attempts,
        ));
    }
}

/// Ends the QEMU run with `code` (host exit status 0 for success, 1 for failure)
/// through semihosting `SYS_EXIT` (QEMU needs `-semihosting`). Falls back to PSCI
/// `SYSTEM_OFF` (no status) and then to parking the CPU.
pub fn exit_qemu(code: ExitCode) -> ! {
    irq_disable();
    let status = match code {
        ExitCode::Success => 0,
        ExitCode::Failure => 1,
    };
    semihosting::exit(status);
    // No semihosting. PSCI SYSTEM_OFF makes QEMU exit with status 0, so use it only
    // for success: a failure must never look like a pass.
    if code == ExitCode::Success {
        psci::system_off();
    }
    loop {
        aarch64_cpu::asm::wfe();
    }
}

/// Sets up the kernel stack region (4 KiB pages in the last gigabyte of
/// the address space, see `paging`) and returns its `(base, bytes)`; `None`
/// with the MMU off or without memory. Boot CPU, heap up, before other CPUs
/// start.
pub fn stack_region_init() -> Option<(VirtAddr, usize)> {
    paging::init().then_some((
        VirtAddr::new(paging::STACK_REGION_BASE),
        paging::STACK_REGION_BYTES,
    ))
}

pub use paging::{map_stack_page, unmap_stack_page};
pub use trap::{
    exception_stack_tops, set_exception_stack, set_exception_stack_of, EXCEPTION_STACKS,
};

/// Where the guards below the kernel image's stacks are: the boot stack's
/// page and the boot CPU's static emergency stack's 32 KiB.
pub fn static_guards() -> super::StaticGuards {
    let b = boot::boot_stack();
    super::StaticGuards {
        boot: (VirtAddr::new(b.guard), VirtAddr::new(b.bottom)),
        exception: [trap::boot_emergency_guard()],
    }
}

/// Flushes this CPU's TLB (EL1&0 regime, this CPU only).
pub fn flush_tlb_local() {
    // SAFETY: invalidating TLB entries changes no mapping.
    unsafe {
        core::arch::asm!(
            "dsb ishst",
            "tlbi vmalle1",
            "dsb nsh",
            "isb",
            options(nostack)
        )
    };
}

/// Switches to the stack that ends at `top` and calls `f(arg)` there; the
/// current stack is abandoned (its frames stay as they are).
///
/// # Safety
/// `top` must be the 16-byte aligned end of a mapped stack that nothing
/// else uses, and stay so for as long as `f` runs (forever).
pub unsafe fn call_on_stack(top: VirtAddr, f: extern "C" fn(usize) -> !, arg: usize) -> ! {
    let top = top.as_usize();
    // SAFETY: the caller's contract; x29 = x30 = 0 end frame-record chains.
    unsafe {
        core::arch::asm!(
            "msr spsel, #1",
            "mov sp, {top}",
            "mov x29, xzr",
            "mov x30, xzr",
            "blr {f}",
            "udf #0",
            top = in(reg) top,
            f = in(reg) f,
            in("x0") arg,
            options(noreturn)
        )
    }
}

/// Executes a permanently undefined instruction (`udf #0`), for the
/// `fault=undefined` test: a synchronous exception with EC 0.
pub fn undefined_instruction() -> ! {
    // SAFETY: deliberately faults; the exception report ends the run.
    unsafe { core::arch::asm!("udf #0", options(noreturn, nostack)) }
}
