//! The x86_64 arch layer: everything `arch/mod.rs` lists, for a PC (QEMU q35,
//! pc or microvm; real hardware with a 16550 and a LAPIC).
//!
//! - `serial`: COM1, polled both ways.
//! - `percpu`: per-CPU block through the GS base; per-CPU GDT and TSS (IST
//!   stacks for double fault, NMI and machine check).
//! - `trap`: IDT, the 256 entry stubs, the dispatcher and the exception report.
//! - `apic`: 8259 masked; LAPIC (x2APIC or xAPIC) and its periodic timer.
//! - `time`: TSC clock calibrated against PIT channel 2, refined against the
//!   HPET half a second later.
//! - `context`: thread context switch.
//! - `acpi`: the MADT parser that finds the CPUs.
//! - `smp`: CPU numbering, AP start-up (INIT-SIPI-SIPI, real-mode trampoline
//!   in a free page below 1 MiB that `lowmem` picks from the memory map) and
//!   IPIs.
//! - `paging`: RAM above 4 GiB in the identity map; the kernel stack region.
//!
//! The boot code (`boot/src/x86_64`) left us in long mode on the boot stack with
//! 0-4 GiB identity-mapped and interrupts disabled. Application processors go
//! through `smp`'s trampoline into the same page tables; the TSC and LAPIC
//! timer calibration done on the boot CPU serves them all.

mod acpi;
mod apic;
mod context;
mod ioapic;
mod lowmem;
mod paging;
mod percpu;
mod serial;
mod smp;
pub mod tests;
mod time;
mod trap;

use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use x86_64::instructions::port::Port;

pub use self::context::{init_thread_context, switch_context, Context};
pub use self::paging::{flush_tlb_local, map_stack_page, unmap_stack_page};
pub use self::percpu::cpu_id;
pub use self::smp::{
    cpu_count, cpu_topology_ids, ipi_state, park_this_cpu, send_ipi, start_cpu, START_TIMEOUT_NS,
};
pub use self::time::now_ns;
use super::ExitCode;
use crate::addr::{PhysAddr, VirtAddr};
use crate::cpu::CpuId;
// For the submodules (`super::irq_save`).
use crate::cpu::{irq_restore, irq_save};

/// CPU `cpu`'s relative capacity from firmware: none here. (Linux sizes
/// x86 hybrid cores from CPPC's highest performance, ITMT; every CPU is
/// equal to this kernel unless `cpu_capacity=` says otherwise.)
pub fn cpu_capacity_dmips_mhz(_cpu: CpuId) -> Option<u32> {
    None
}

/// What the boot page tables identity-map (2 MiB pages): the first 4 GiB.
/// ACPI tables are read there only; RAM above is mapped by
/// `paging::map_ram_above_4g`.
const BOOT_MAP_BYTES: usize = 4 << 30;
const MAPPED_LIMIT_BYTES: usize = BOOT_MAP_BYTES;
/// Heap assumed after the kernel when the loader gave no memory map.
const FALLBACK_HEAP_BYTES: usize = 16 << 20;
/// isa-debug-exit: QEMU exits with `(value << 1) | 1`.
const DEBUG_EXIT_PORT: u16 = 0xf4;
/// Written for [`ExitCode::Success`]: host exit status 33.
const DEBUG_EXIT_SUCCESS: u32 = 0x10;
/// Written for [`ExitCode::Failure`]: host exit status 35.
const DEBUG_EXIT_FAILURE: u32 = 0x11;
/// Brings up the boot CPU: console, GDT/TSS and GS base, IDT, PIC masked, LAPIC
/// enabled, TSC and LAPIC timer calibrated, CPUs found in the ACPI MADT.
/// Interrupts stay disabled.
pub fn early_init(info: &boot::BootInfo) {
    guard_static_stacks();
    time::set_boot_tsc();
    serial::init();
    percpu::init_boot_cpu();
    trap::init();
    let x2apic = apic::init();
    percpu::set_lapic_id(apic::id());
    let discovery = smp::init(info);
    let uart = console_uart(info);
    // After ACPI was read (its tables are not overwritten), before the heap.
    let high = map_high_ram(info);
    let cpus_found = smp::cpu_count();
    let trampoline = smp::check_trampoline_page(info);
    // The same PIT windows measure the TSC and the LAPIC timer input.
    let cal = time::calibrate(apic::timer_calibration_start, apic::timer_calibration_end);
    time::init(cal.tsc_hz);
    match cal.lapic_hz {
        Some(hz) => apic::set_timer_rate_hz(hz),
        None => {
            // A CPUID rate (or none): measure the LAPIC against the TSC (10 ms).
            apic::timer_calibration_start();
            let start = time::rdtsc();
            while time::rdtsc() - start < time::ns_to_cycles(10_000_000) {}
            apic::set_timer_rate(apic::timer_calibration_end(), 10_000_000);
        }
    }
    // The first snapshot of the refined calibration (see `time.rs`); the
    // LAPIC timer counts from here to CPU 0's `timer_start`.
    if !time::refine_start(acpi::rsdp_of(info), Some(apic::timer_calibration_start)) {
        let _ = writeln!(
            serial::RawWriter,
            "clock: no usable HPET in ACPI: the TSC rate is not refined"
        );
    }
    let source = cal.source;
    let (rsdp_source, rsdp_at) = boot::x86_64::rsdp_source();
    if trampoline.is_none() && cpus_found > 1 {
        let _ = writeln!(
            serial::RawWriter,
            "x86_64: no usable 4 KiB page below 1 MiB in the memory map for the AP start-up \
             trampoline: running on the boot CPU only ({} more found)",
            cpus_found - 1
        );
    }
    if high.mapped + high.unmapped > 0 {
        let _ = writeln!(
            serial::RawWriter,
            "x86_64: RAM above 4 GiB: {} MiB identity-mapped ({} MiB in 1 GiB pages), {} MiB not",
            high.mapped >> 20,
            high.in_1g_pages >> 20,
            high.unmapped >> 20,
        );
    }
    if let Some(fb) = boot::framebuffer().filter(|_| framebuffer().is_none()) {
        let _ = writeln!(
            serial::RawWriter,
            "x86_64: framebuffer at {:#x} lies outside the identity map: serial only",
            fb.addr
        );
    }
    let _ = writeln!(
        serial::RawWriter,
        "x86_64: ACPI RSDP {rsdp_at:#x} ({}), UART {:#x} ({uart})",
        rsdp_source.name(),
        serial::port(),
    );
    let heap = heap_regions(info);
    let heap_len: usize = heap.as_slice().iter().map(|r| r.1).sum();
    let heap_above_4g: usize = heap
        .as_slice()
        .iter()
        .filter(|r| r.0.as_usize() >= BOOT_MAP_BYTES)
        .map(|r| r.1)
        .sum();
    let _ = writeln!(
        serial::RawWriter,
        "x86_64: TSC {}.{:03} MHz ({}, invariant: {}), {} LAPIC id {} timer {} kHz, \
         heap {} MiB in {} range(s) ({} MiB above 4 GiB), {} CPU(s) ({}{})",
        time::tsc_hz() / 1_000_000,
        time::tsc_hz() / 1_000 % 1_000,
        source,
        if time::tsc_invariant() {
            "yes"
        } else {
            "no, assumed"
        },
        if x2apic { "x2APIC" } else { "xAPIC" },
        percpu::lapic_id(),
        apic::timer_hz() / 1000,
        heap_len >> 20,
        heap.len,
        heap_above_4g >> 20,
        smp::cpu_count(),
        discovery,
        TrampolineNote(trampoline.filter(|_| cpus_found > 1)),
    );
}

/// ", AP trampoline 0x8000" on the boot line when other CPUs will start.
struct TrampolineNote(Option<PhysAddr>);

impl core::fmt::Display for TrampolineNote {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(page) => write!(f, ", AP trampoline {page:#x}"),
            None => Ok(()),
        }
    }
}

/// Moves the console to the UART the ACPI SPCR table names, when it names a
/// 16550 in I/O space; says where the console is, for the boot log.
fn console_uart(info: &boot::BootInfo) -> &'static str {
    // SAFETY: the loader's (or boot's copy of the) RSDP; no heap yet, so the
    // firmware tables are intact.
    let spcr = acpi::rsdp_of(info).and_then(|rsdp| unsafe { acpi::spcr(rsdp) });
    match spcr {
        Some(acpi::Spcr::IoPort16550 { port, divisor }) => {
            if port != serial::port() {
                serial::use_port(port, divisor);
            }
            "ACPI SPCR"
        }
        Some(acpi::Spcr::Unsupported(kind, space, addr)) => {
            let _ = writeln!(
                serial::RawWriter,
                "x86_64: ACPI SPCR names UART type {kind:#x} in address space {space} at \
                 {addr:#x}, which this kernel does not drive; staying on COM1"
            );
            "COM1, SPCR unsupported"
        }
        None => "COM1, no ACPI SPCR",
    }
}

/// The loader's framebuffer (Multiboot2 tag 8), when all of it lies in the
/// boot identity map (below 4 GiB; a framebuffer in a 64-bit BAR above it
/// is not mapped, and the console stays serial only).
pub fn framebuffer() -> Option<boot::Framebuffer> {
    boot::framebuffer().filter(|fb| {
        fb.addr
            .checked_add(fb.bytes())
            .is_some_and(|end| end <= BOOT_MAP_BYTES)
    })
}

/// Identity-maps the RAM above 4 GiB (`paging::map_ram_above_4g`), taking
/// page directories from the RAM right after the kernel image.
fn map_high_ram(info: &boot::BootInfo) -> paging::HighMap {
    const PAGE: usize = 4096;
    let low_free = info.kernel_end.next_multiple_of(PAGE);
    // The RAM range that holds the kernel's end bounds the page directories.
    let low_free_end = info
        .memory_regions()
        .iter()
        .find(|r| r.start <= low_free && low_free < r.start.saturating_add(r.len))
        .map_or(low_free, |r| {
            (r.start + r.len).min(BOOT_MAP_BYTES) & !(PAGE - 1)
        });
    paging::map_ram_above_4g(
        info.memory_regions(),
        PhysAddr::new(low_free),
        PhysAddr::new(low_free_end),
    )
}

/// Sets up the kernel stack region (4 KiB pages above the identity map,
/// see `paging`) and returns its `(base, bytes)`; `None` if the heap cannot
/// hold its page directory. Boot CPU, heap up, before other CPUs start.
pub fn stack_region_init() -> Option<(VirtAddr, usize)> {
    paging::init().then_some((
        VirtAddr::new(paging::STACK_REGION_BASE),
        paging::STACK_REGION_BYTES,
    ))
}

/// Switches to the stack that ends at `top` and calls `f(arg)` there; the
/// current stack is abandoned (its frames stay as they are).
///
/// # Safety
/// `top` must be the 16-byte aligned end of a mapped stack that nothing
/// else uses, and stay so for as long as `f` runs (forever).
pub unsafe fn call_on_stack(top: VirtAddr, f: extern "C" fn(usize) -> !, arg: usize) -> ! {
    let top = top.as_usize();
    // SAFETY: the caller's contract; rbp = 0 ends frame-pointer chains, and
    // the call leaves rsp 16-byte aligned minus 8 at f's entry, as the ABI wants.
    unsafe {
        core::arch::asm!(
            "mov rsp, {top}",
            "xor ebp, ebp",
            "call {f}",
            "ud2",
            top = in(reg) top,
            f = in(reg) f,
            in("rdi") arg,
            options(noreturn)
        )
    }
}

/// Moves this CPU's double-fault and page-fault stack (the IST stack the
/// fatal-exception report runs on) to `top`, a guarded kernel stack.
pub fn set_exception_stack(index: usize, top: VirtAddr) {
    percpu::set_ist_stack(ist_slot(index), top);
}

/// Gives AP `cpu` the exception stack `index` ending at `top` before it
/// starts (its TSS names it from the start).
pub fn set_exception_stack_of(cpu: CpuId, index: usize, top: VirtAddr) {
    percpu::preset_ist_stack(cpu, index, top);
}

/// Unmaps the guard pages below the stacks in the kernel image: the boot
/// stack (`boot`) and the boot CPU's IST stacks ([`percpu`]). First thing
/// in `early_init`, on the boot stack (well above its guard).
fn guard_static_stacks() {
    let g = static_guards();
    let mut ok = true;
    for (start, end) in [g.boot].into_iter().chain(g.exception) {
        // SAFETY: boot CPU, others not started; nothing uses a guard page.
        ok &= unsafe { paging::unmap_boot_pages(start, end) };
    }
    super::note_static_guards_unmapped(ok);
}

/// Where the guards below the kernel image's stacks are (see
/// [`super::StaticGuards`]).
pub fn static_guards() -> super::StaticGuards {
    let b = boot::boot_stack();
    super::StaticGuards {
        boot: (VirtAddr::new(b.guard), VirtAddr::new(b.bottom)),
        exception: percpu::boot_ist_guards(),
    }
}

/// Stacks per CPU for fatal exceptions, each on an IST slot of its own:
/// #DF and #PF (shared), NMI, machine check.
pub const EXCEPTION_STACKS: usize = 3;

fn ist_slot(index: usize) -> u8 {
    match index {
        0 => percpu::IST_DOUBLE_FAULT,
        1 => percpu::IST_NMI,
        _ => percpu::IST_MACHINE_CHECK,
    }
}

/// Where this CPU's exception stacks end (the TSS's IST entries), in the
/// order of [`set_exception_stack`]'s index.
pub fn exception_stack_tops() -> [VirtAddr; EXCEPTION_STACKS] {
    core::array::from_fn(|i| percpu::ist_stack(ist_slot(i)))
}

/// Executes `ud2`, for the `fault=undefined` test: an invalid-opcode
/// exception (#UD).
pub fn undefined_instruction() -> ! {
    // SAFETY: deliberately faults; the exception report ends the run.
    unsafe { core::arch::asm!("ud2", options(noreturn, nostack)) }
}

/// Writes bytes to COM1 (blocking, bounded by time if the UART is stuck).
pub fn console_write(bytes: &[u8]) {
    serial::write_bytes(bytes);
}

/// One byte from COM1, or `None` when nothing arrived.
pub fn console_read() -> Option<u8> {
    serial::read_byte()
}

/// Routes COM1's receive interrupt through the I/O APIC to this CPU and turns
/// it on; false (and polling goes on) when the MADT named no I/O APIC.
pub fn console_rx_irq_start() -> bool {
    // Only COM1's interrupt (ISA IRQ 4) is routed; another UART is polled.
    if serial::port() != serial::COM1_PORT || !ioapic::route_com1(apic::id()) {
        return false;
    }
    serial::rx_irq_enable(true);
    true
}

/// Masks (true) or unmasks COM1's receive interrupt at the UART; received
/// bytes wait in it meanwhile.
pub fn console_rx_irq_mask(masked: bool) {
    serial::rx_irq_enable(!masked);
}

/// Starts this CPU's periodic tick at `hz` (LAPIC timer). On the boot CPU,
/// first the LAPIC timer's rate against the HPET (once; see `time.rs`).
pub fn timer_start(hz: u32) {
    if cpu_id() == CpuId::BOOT {
        // The count since the first snapshot, else (too short or too loosely
        // known) dedicated windows against the HPET; the PIT figure only
        // when neither qualifies.
        let counted = time::refine_lapic(apic::timer_calibration_end).and_then(|r| {
            if r.hz.is_some() {
                Some(r)
            } else {
                time::lapic_against_hpet(apic::timer_calibration_start, apic::timer_calibration_end)
                    .or(Some(r))
            }
        });
        if let Some(r) = counted {
            LAPIC_INITIAL_HZ.store(apic::timer_hz(), Ordering::Relaxed);
            LAPIC_INTERVAL_US.store(r.interval_us, Ordering::Relaxed);
            LAPIC_ERROR_PPM.store(r.error_ppm, Ordering::Relaxed);
            if let Some(rate) = r.hz {
                apic::set_timer_rate_hz(rate);
            }
        }
    }
    apic::timer_start(hz);
}

/// For the refined clock's log line: the LAPIC timer rate before
/// `timer_start` counted it against the HPET (Hz; 0: not counted), over how
/// many microseconds, and how well that interval is known (ppm).
static LAPIC_INITIAL_HZ: AtomicU64 = AtomicU64::new(0);
static LAPIC_INTERVAL_US: AtomicU64 = AtomicU64::new(0);
static LAPIC_ERROR_PPM: AtomicU64 = AtomicU64::new(0);

/// The refined TSC calibration's second half (see `time.rs`), from the boot
/// CPU's idle loop; logs its one line when it ran.
fn refine_clock() {
    let Some(r) = time::refine_poll() else {
        return;
    };
    log::info!(
        "clock: TSC refined against HPET over {} ms: {}.{:03} MHz (initial {}.{:03} MHz, {}), \
         read error {} ppm; LAPIC timer {} kHz ({})",
        r.interval_ms,
        r.refined_hz / 1_000_000,
        r.refined_hz / 1_000 % 1_000,
        r.initial_hz / 1_000_000,
        r.initial_hz / 1_000 % 1_000,
        if r.switched { "corrected" } else { "kept" },
        r.error_ppm,
        apic::timer_hz() / 1000,
        LapicNote {
            initial_hz: LAPIC_INITIAL_HZ.load(Ordering::Relaxed),
            interval_us: LAPIC_INTERVAL_US.load(Ordering::Relaxed),
            error_ppm: LAPIC_ERROR_PPM.load(Ordering::Relaxed),
        },
    );
}

/// How the LAPIC timer rate on the refined line was found.
struct LapicNote {
    initial_hz: u64,
    interval_us: u64,
    error_ppm: u64,
}

impl core::fmt::Display for LapicNote {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let ms = self.interval_us / 1000;
        let error = self.error_ppm;
        if self.initial_hz == 0 {
            f.write_str("PIT windows, not counted against HPET")
        } else if error > time::LAPIC_MAX_ERROR_PPM {
            write!(
                f,
                "PIT windows; against HPET over {ms} ms: ends known within {error} ppm only"
            )
        } else {
            write!(
                f,
                "against HPET over {ms} ms within {error} ppm, PIT windows {} kHz",
                self.initial_hz / 1000
            )
        }
    }
}

/// CPU `cpu`'s late ticks so far: tick interrupts that came a period or
/// more late, the periods they merged, and how many of them the timer had
/// not been armed for (see `deadlines`).
pub fn timer_tick_stats(cpu: CpuId) -> super::TickStats {
    apic::timer_tick_stats(cpu)
}

/// Stops this CPU's tick (tickless idle); interrupts off.
pub fn timer_stop_tick() {
    apic::timer_stop_tick();
}

/// Restarts this CPU's tick at the next point of the tick grid all CPUs share; interrupts off.
pub fn timer_restart_tick() {
    apic::timer_restart_tick();
}

/// Asks for a timer interrupt on this CPU at `deadline_ns` or soon after
/// (`None` cancels); interrupts off. See `apic::timer_set_event`.
pub fn timer_set_event(deadline_ns: Option<u64>) {
    apic::timer_set_event(deadline_ns);
}

/// Sets CPU `cpu`'s scheduler hrtick (`None` cancels); `true` when that CPU
/// is another one and must be sent a reschedule IPI. Interrupts off. See
/// `apic::timer_set_hrtick`.
pub fn timer_set_hrtick(cpu: CpuId, deadline_ns: Option<u64>) -> bool {
    apic::timer_set_hrtick(cpu, deadline_ns)
}

/// Arms this CPU's timer again if another CPU changed its hrtick;
/// interrupts off. See `apic::timer_sync`.
pub fn timer_sync() {
    apic::timer_sync();
}

/// Enables interrupts and waits for the next one, atomically (`sti; hlt`: an
/// interrupt that arrives between the two still ends the `hlt`). Returns with
/// interrupts enabled. On the boot CPU it first lets the refined clock
/// calibration take its second snapshot when due (see `time.rs`).
#[inline]
pub fn halt() {
    if cpu_id() == CpuId::BOOT {
        refine_clock();
    }
    // SAFETY: `sti` takes effect after the next instruction, so no interrupt can
    // slip in between and leave `hlt` waiting for another one.
    unsafe { core::arch::asm!("sti", "hlt", options(nostack)) };
}

/// Ends the QEMU run through isa-debug-exit (host status 33 for success, 35 for
/// failure). Without that device, halts this CPU forever.
pub fn exit_qemu(code: ExitCode) -> ! {
    let value = match code {
        ExitCode::Success => DEBUG_EXIT_SUCCESS,
        ExitCode::Failure => DEBUG_EXIT_FAILURE,
    };
    // SAFETY: writing isa-debug-exit's port ends QEMU; on other machines the
    // port is unused.
    unsafe { Port::<u32>::new(DEBUG_EXIT_PORT).write(value) };
    loop {
        // SAFETY: stops this CPU for good.
        unsafe { core::arch::asm!("cli", "hlt", options(nomem, nostack)) };
    }
}

/// RAM ranges for the heap, `(start, len)`, highest first: every usable
/// range of the loader's memory map above the kernel image (and above the
/// page directories `paging::map_ram_above_4g` took after it), clipped to
/// what is identity-mapped, page-aligned. Ranges under 1 MiB long are left
/// out. The boot code copied everything it needed out of loader memory, so
/// all of it is free. Memory below 1 MiB (the AP trampoline page) is never
/// part of it. Without a memory map: 16 MiB after the kernel.
pub fn heap_regions(info: &boot::BootInfo) -> super::HeapRegions {
    const PAGE: usize = 4096;
    const LOW_MEMORY_END: usize = 1 << 20;
    const MIN_RANGE: usize = 1 << 20;
    // The kernel is linked at 1 MiB, so this already excludes low memory; the
    // `max` keeps it so should the link address ever change.
    let floor = paging::early_pages_end(PhysAddr::new(info.kernel_end.max(LOW_MEMORY_END)))
        .as_usize()
        .next_multiple_of(PAGE);
    let mut ranges = [(0usize, 0usize); boot::MAX_MEM_REGIONS];
    let mut n = 0;
    for r in info.memory_regions() {
        let start = r.start.max(floor).next_multiple_of(PAGE);
        let end = r.start.saturating_add(r.len) & !(PAGE - 1);
        // Below 4 GiB all is mapped; above, the 2 MiB-trimmed part is.
        let end = if end > BOOT_MAP_BYTES {
            let mut mapped_end = start.max(BOOT_MAP_BYTES);
            while mapped_end < end && paging::identity_mapped(PhysAddr::new(mapped_end), PAGE) {
                mapped_end = (mapped_end + (2 << 20)) & !((2 << 20) - 1);
            }
            mapped_end.min(end)
        } else {
            end
        };
        if end > start && end - start >= MIN_RANGE {
            ranges[n] = (start, end - start);
            n += 1;
        }
    }
    let ranges = &mut ranges[..n];
    ranges.sort_unstable_by_key(|r| core::cmp::Reverse(r.0));
    let mut out = super::HeapRegions::default();
    for &(start, len) in ranges.iter() {
        out.push(PhysAddr::new(start), len);
    }
    if out.len == 0 {
        // No memory map: assume a small heap right after the kernel.
        out.push(PhysAddr::new(floor), FALLBACK_HEAP_BYTES);
    }
    out
}
