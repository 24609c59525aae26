//! The arch boundary: the one place that picks an architecture.
//!
//! Generic kernel code uses only what this module re-exports, and contains no
//! `cfg(target_arch)`. Each arch module (`x86_64/`, `aarch64/`) provides the same
//! names with the same signatures:
//!
//! | item | what it does |
//! |---|---|
//! | `fn early_init(info: &boot::BootInfo)` | console, traps/vectors, interrupt controller, timer calibration, on the boot CPU |
//! | `fn console_write(bytes: &[u8])` | blocking write to the serial console (COM1 / PL011) |
//! | `fn console_read() -> Option<u8>` | non-blocking read of one byte from the serial console's UART |
//! | `fn console_rx_irq_start() -> bool` | route the UART's receive interrupt to this CPU and enable it (false: none described; input is polled); its handler calls `crate::hooks::console_rx()` then `crate::hooks::irq_exit()` |
//! | `fn console_rx_irq_mask(masked: bool)` | mask / unmask that interrupt at the UART (received bytes wait in it) |
//! | `fn irq_save() -> IrqState` / `fn irq_restore(IrqState)` | disable interrupts, returning whether they were on / restore (generic code uses the scope guard [`IrqGuard`]) |
//! | `fn irq_enable()` / `fn irq_disable()` / `fn irqs_enabled() -> bool` | local interrupt mask |
//! | `fn timer_start(hz: u32)` | periodic tick on this CPU; the tick handler calls `crate::hooks::timer_interrupt()` |
//! | `fn timer_stop_tick()` / `fn timer_restart_tick()` | stop this CPU's tick (timer events still fire) / restart it at the next tick-grid point, the one all CPUs share (tickless idle; interrupts off) |
//! | `fn timer_tick_stats(cpu: CpuId) -> TickStats` | CPU `cpu`'s late ticks so far: those that came a period or more after their deadline, the periods they merged, and how many the timer had not been armed for (a lost tick deadline) |
//! | `fn timer_set_event(deadline_ns: Option<u64>)` | one timer interrupt on this CPU at `deadline_ns` (`now_ns` time) or soon after, besides the tick (`None` cancels; interrupts off); unless a tick is due then, the handler calls `crate::hooks::timer_event()` |
//! | `fn timer_set_hrtick(cpu: CpuId, deadline_ns: Option<u64>) -> bool` | CPU `cpu`'s scheduler hrtick (the end of the running task's slice), a third deadline beside the tick and the event (`None` cancels; interrupts off); when it is due the handler calls `crate::hooks::hrtick()` first. For another CPU it returns true: send that CPU a reschedule IPI, whose path calls `fn timer_sync()` to arm its timer again |
//! | `fn framebuffer_memory() -> Option<&'static mut [u8]>` | that framebuffer's bytes, once (generic, in this file) |
//! | `fn framebuffer() -> Option<boot::Framebuffer>` | the loader's linear framebuffer, mapped, for the framebuffer console (x86_64: Multiboot2 tag 8; a fallback here returns `None` for the other arches) |
//! | `fn heap_regions(info: &boot::BootInfo) -> HeapRegions` | the free, mapped RAM ranges for the kernel heap, after the kernel image, in the order the heap should use them (x86_64: every RAM range, highest first; a fallback here wraps the other arches' single `heap_region`) |
//! | `fn now_ns() -> u64` | monotonic ns clock (TSC / CNTVCT) since boot |
//! | `fn cpu_id() -> CpuId` | this CPU's dense index (0 = boot CPU), a [`CpuId`](crate::cpu::CpuId) |
//! | `fn halt()` | wait for the next interrupt (interrupts enabled around it) |
//! | `fn cpu_relax()` | spin-wait hint (`pause` / `yield`): under QEMU's round-robin TCG it also hands the turn to the next vCPU |
//! | `fn exit_qemu(code: ExitCode) -> !` | leave QEMU with a pass/fail verdict (isa-debug-exit / semihosting) |
//! | `struct Context` + `unsafe fn switch_context(prev: *mut Context, next: *const Context)` | callee-saved register switch |
//! | `unsafe fn init_thread_context(ctx: &mut Context, stack_top: VirtAddr, entry: extern "C" fn(usize) -> !, arg: usize)` | prepare a new thread's first switch |
//! | `fn stack_region_init() -> Option<(VirtAddr, usize)>` | hook a virtual region for kernel stacks into the page tables (heap up, boot CPU, before other CPUs start): `(base, bytes)`, or `None` (stacks then come from the heap, unguarded) |
//! | `fn map_stack_page(va: VirtAddr, pa: PhysAddr) -> bool` / `fn unmap_stack_page(va: VirtAddr)` | map a 4 KiB page of that region (false: out of page-table memory) / unmap it and flush it from this CPU's TLB |
//! | `fn flush_tlb_local()` | flush this CPU's TLB (the stack allocator runs it on every CPU before reusing unmapped addresses) |
//! | `unsafe fn call_on_stack(top: VirtAddr, f: extern "C" fn(usize) -> !, arg: usize) -> !` | switch to another stack and call `f(arg)` there (CPU 0's idle thread leaves the boot stack) |
//! | `const EXCEPTION_STACKS: usize` / `fn set_exception_stack(index: usize, top: VirtAddr)` / `fn exception_stack_tops() -> [VirtAddr; EXCEPTION_STACKS]` | this CPU's stacks for fatal exceptions (x86_64: the #DF/#PF, NMI and machine-check IST stacks; aarch64: the stack-overflow emergency stack): stack `index` becomes the guarded kernel stack ending at `top` / where each ends now |
//! | `fn set_exception_stack_of(cpu: CpuId, index: usize, top: VirtAddr)` | the same for secondary CPU `cpu` before it starts (boot CPU), so it has guarded exception stacks from its first instruction |
//! | `fn static_guards() -> StaticGuards` | where the guards below the stacks in the kernel image are (the boot stack; the boot CPU's exception stacks until it gets guarded ones); `early_init` unmaps them and reports with `note_static_guards_unmapped(ok)`; generic code asks [`static_stack_guards`] |
//! | `fn undefined_instruction() -> !` | execute an undefined instruction (`fault=undefined`) |
//! | `fn cpu_count() -> usize` | CPUs the firmware describes (ACPI MADT / DTB `/cpus`) that the kernel can use: at most [`MAX_CPUS`] (256); x86_64: APIC ids above 254 only with x2APIC; aarch64: at most 8 on a GICv2, on a GICv3 those with a redistributor. `early_init`'s boot line counts the others by reason ([`IgnoredCpus`]) |
//! | `fn cpu_capacity_dmips_mhz(cpu: CpuId) -> Option<u32>` | CPU `cpu`'s relative performance as firmware gives it (aarch64: the DT's `capacity-dmips-mhz`; x86_64: none), for the scheduler's capacities |
//! | `unsafe fn start_cpu(cpu: CpuId, stack_top: VirtAddr, entry: extern "C" fn(CpuId) -> !, wait_ns: u64) -> bool` | starts secondary CPU `cpu` (dense index, 1..cpu_count) on the given stack; it sets up its own traps, per-CPU data (so `cpu_id()` returns `cpu`) and interrupt controller, then calls `entry(cpu)` with interrupts disabled; false if it did not come up within `wait_ns` (normally `const START_TIMEOUT_NS: u64`, the arch's bound: x86_64 10 s, aarch64 5 s, as Linux) (or no memory for its arch per-CPU blocks, which come from the heap: boot CPU, heap up). May be called again for a CPU that timed out or was parked |
//! | `fn park_this_cpu(parked: &AtomicBool) -> !` | takes this secondary CPU down for good (CPU hotplug), interrupts off: makes it startable again by `start_cpu`, sets `parked` (Release), then parks it (x86_64: a `hlt` loop that the next start's INIT resets; aarch64: PSCI `CPU_OFF`, the next start's `CPU_ON` restarts it) |
//! | `fn send_ipi(cpu: CpuId, kind: IpiKind)` | interrupts CPU `cpu` (x86_64: fixed IPI through the xAPIC / x2APIC ICR; aarch64: SGI, GICv3 `ICC_SGI1R_EL1` with the target's Aff3.Aff2.Aff1 and its Aff0 bit); its handler calls `crate::hooks::ipi(kind)` then `crate::hooks::irq_exit()` |
//! | `fn ipi_state(cpu: CpuId, kind: IpiKind) -> Option<(bool, bool)>` | (pending, active) of that IPI at CPU `cpu`'s interrupt controller where another CPU can read it (aarch64 GICv3); `None` elsewhere; for stall reports |
//!
//! Calls the other way (arch -> generic) go only to `crate::hooks`,
//! which forwards them to the one trait the kernel registers at boot
//! (`crate::hooks::KernelHooks`): the timer
//! handler calls `hooks::timer_interrupt()` (a tick) or `hooks::timer_event()`; every interrupt handler ends with
//! `hooks::irq_exit()` (interrupts still disabled, on the interrupted thread's
//! stack, so generic code can `schedule()` there: preemption on return from
//! interrupt); fault reports name `hooks::current_thread()` and, for an address in a
//! stack's guard pages, `hooks::stack_guard_owner()`; aarch64's `start_cpu`
//! takes the guarded stacks its CPUs start on from `hooks::bringup_stack()`;
//! each arch's secondary CPU calls `hooks::secondary_arch_up(cpu)` once its
//! traps are set up, before generic code; the panic and fault paths print
//! through `hooks::emergency_write()`.

mod deadlines;
pub use deadlines::TickStats;

pub use deadlines::TimerDue;

/// What a timer interrupt calls, by what was due ([`TimerDue`]): the
/// hrtick first (it ends a slice), then the tick, or else the timer event
/// (sleepers; also taken for an interrupt that found nothing due, as
/// before). Interrupts off, after the acknowledge, before `irq_exit`.
fn timer_dispatch(due: TimerDue) {
    if due.hrtick {
        crate::hooks::hrtick();
    }
    if due.tick {
        crate::hooks::timer_interrupt();
    } else if due.event || !due.hrtick {
        crate::hooks::timer_event();
    }
}

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "aarch64")]
pub use aarch64::*;

#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "x86_64")]
pub use x86_64::*;

// The local interrupt mask and the spin-wait hint are the hardware layer's.
pub use crate::cpu::{
    cpu_relax, irq_disable, irq_enable, irq_restore, irq_save, irqs_enabled, IrqGuard,
};

/// The guards below the stacks that are part of the kernel image, used
/// before the heap and the stack region exist: each a `[start, end)`
/// range of unmapped pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticGuards {
    /// Below the boot stack (the boot CPU until its idle thread leaves it).
    pub boot: (VirtAddr, VirtAddr),
    /// Below each of the boot CPU's static exception stacks, in
    /// `set_exception_stack`'s index order.
    pub exception: [(VirtAddr, VirtAddr); EXCEPTION_STACKS],
}

/// Whether `early_init` unmapped every static stack guard
/// ([`note_static_guards_unmapped`]).
static STATIC_GUARDS_UNMAPPED: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

/// Records (arch `early_init`) whether every guard of [`static_guards`]
/// was unmapped.
fn note_static_guards_unmapped(ok: bool) {
    STATIC_GUARDS_UNMAPPED.store(ok, core::sync::atomic::Ordering::Relaxed);
}

/// The unmapped guards below the kernel image's stacks, if `early_init`
/// could unmap them all (the arch's `static_guards` says where they are).
pub fn static_stack_guards() -> Option<StaticGuards> {
    STATIC_GUARDS_UNMAPPED
        .load(core::sync::atomic::Ordering::Relaxed)
        .then(static_guards)
}

use crate::addr::VirtAddr;

// The heap's RAM ranges are the hardware layer's type.
pub use crate::heap::HeapRegions;

/// The arches that report one heap range (the largest) use it alone.
#[cfg(not(target_arch = "x86_64"))]
pub fn heap_regions(info: &boot::BootInfo) -> HeapRegions {
    let mut r = HeapRegions::default();
    let (start, len) = heap_region(info);
    r.push(start, len);
    r
}

/// The loader's framebuffer, identity-mapped for the console: x86_64 has
/// its own (`arch/x86_64`); the other arches' loaders give none yet.
#[cfg(not(target_arch = "x86_64"))]
pub fn framebuffer() -> Option<boot::Framebuffer> {
    None
}

/// The bytes of [`framebuffer`] (`pitch * height`), handed out once: the
/// first call gets them (for the console), later calls `None`. The one place
/// that turns the loader's address into memory, so the console is safe code.
pub fn framebuffer_memory() -> Option<&'static mut [u8]> {
    static TAKEN: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    let fb = framebuffer()?;
    if TAKEN.swap(true, core::sync::atomic::Ordering::AcqRel) {
        return None;
    }
    // SAFETY: `framebuffer` returns only a framebuffer that lies wholly in
    // memory the arch maps (not RAM the heap hands out), and the swap above
    // makes this the only reference to it for the kernel's lifetime.
    Some(unsafe { core::slice::from_raw_parts_mut(fb.addr as *mut u8, fb.bytes()) })
}

/// Most CPUs the kernel runs on (the one constant, `sched::MAX_CPUS`):
/// as many as a [`crate::cpumask::CpuMask`] holds (256). Per-CPU statics
/// sized by it stay small (a few words per CPU); anything big per CPU
/// (stacks, x86 GDT/TSS blocks) is allocated at bring-up for the CPUs that
/// exist.
pub use crate::MAX_CPUS;

/// CPUs the firmware describes that the kernel cannot use, counted by
/// reason, for the one boot-log line that must name them (never dropped
/// silently): `" (3 more ignored: 1 beyond MAX_CPUS (256), 2 with APIC id > 254
/// and no x2APIC)"`, or nothing when every count is 0.
pub struct IgnoredCpus<'a>(pub &'a [(usize, &'a str)]);

impl core::fmt::Display for IgnoredCpus<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let total: usize = self.0.iter().map(|&(n, _)| n).sum();
        if total == 0 {
            return Ok(());
        }
        write!(f, " ({total} more ignored: ")?;
        let mut sep = "";
        for &(n, why) in self.0.iter().filter(|&&(n, _)| n > 0) {
            write!(f, "{sep}{n} {why}")?;
            sep = ", ";
        }
        f.write_str(")")
    }
}

/// The reason [`IgnoredCpus`] gives for CPUs beyond [`MAX_CPUS`].
pub const BEYOND_MAX_CPUS: &str = "beyond MAX_CPUS (256)";
const _: () = assert!(MAX_CPUS == 256, "update BEYOND_MAX_CPUS");

/// What an inter-processor interrupt asks of its target (the hooks' type).
pub use crate::hooks::IpiKind;

/// How a test run ends QEMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// Every test passed (or `poweroff`).
    Success,
    /// Something failed (a test, a panic, a CPU exception).
    Failure,
}

/// Reads a word at `addr`, which must be unmapped: a deliberate fault for
/// the fault-report tests (`fault=wild_pointer`); the report ends the run.
pub fn read_unmapped(addr: VirtAddr) -> u64 {
    // SAFETY: not sound by design, and only for the fault tests: the read
    // traps before any memory is touched (the address is not mapped), and
    // the fault handler never returns here.
    unsafe { core::ptr::read_volatile(addr.as_ptr::<u64>()) }
}
