//! Secondary CPU bring-up (PSCI `CPU_ON`) and inter-processor interrupts (SGIs).
//!
//! **Bring-up.** [`start_cpu`] hands PSCI the runtime address of the boot crate's
//! secondary entry (`boot::aarch64::secondary_entry_address`, the image is position
//! independent) and, as `context_id`, this CPU's [`Mailbox`]. The entry code drops
//! to EL1, enables FP/SIMD and calls [`secondary_main`] on a small arch-owned
//! bootstrap stack; that sets `TPIDR_EL1` (so `cpu_id()` is the dense index), the
//! kernel vectors and this CPU's GIC interface, then *claims* the start by moving
//! the mailbox from `PENDING` to `ALIVE` and only then switches to the caller's
//! stack and calls the caller's `entry(cpu)` with IRQs masked.
//!
//! The caller waits for `ALIVE` at most [`START_TIMEOUT_NS`] (by CNTVCT). On
//! timeout it moves the mailbox to `ABANDONED` instead; a CPU that shows up
//! later loses the claim and waits in `wfe` on the bootstrap stack, so it never
//! touches the caller's stack or runs `entry` after `start_cpu` returned false.
//! Why the bootstrap stack: the caller may free its stack after a failure.
//! A later [`start_cpu`] of an abandoned CPU does not call `CPU_ON` again
//! (PSCI has the core on: `ALREADY_ON`); it re-arms the mailbox with its own
//! stack and entry (`ABANDONED` -> `REARMING` -> `PENDING`) and sends an
//! event, and the waiting CPU, or one still on its way, claims that start.
//!
//! **Hotplug.** [`park_this_cpu`] takes a CPU down for good: its mailbox back
//! to `IDLE` (so [`start_cpu`] may start it again), then PSCI `CPU_OFF`. A
//! later `start_cpu` first waits (bounded) until PSCI reports the core off,
//! then `CPU_ON` starts it from the entry code again, as at boot, on the
//! stack the caller gives (Linux's arm64 `cpu_die` / `__cpu_up`).
//!
//! **IPIs.** SGI 0 = [`IpiKind::Reschedule`], SGI 1 = [`IpiKind::Call`]; the IRQ
//! handler (`trap`) maps them back with [`ipi_kind`] and calls
//! `crate::hooks::ipi(kind)`.
//!
//! **Caches.** The started CPU reads its [`SecondaryStart`] block with its MMU
//! and data cache off, so [`start_cpu`] cleans the block to the point of
//! coherency before `CPU_ON`; the entry code then turns the MMU and cache on
//! with the boot CPU's tables before anything else, and from there on the
//! mailbox, the stacks and all kernel data are coherent between CPUs.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use boot::aarch64::SecondaryStart;

use super::{cpu, gic, mmu, psci, timer, trap};
use crate::addr::VirtAddr;
use crate::arch::{IpiKind, MAX_CPUS};
use crate::cpu::CpuId;

/// PSCI `CPU_ON` (SMC64).
const PSCI_CPU_ON: u32 = 0xC400_0003;
/// How long [`start_cpu`] waits for the CPU to report alive: 5 s, as Linux's
/// arm64 `__cpu_up` (`arch/arm64/kernel/smp.c`) waits for `cpu_running`
/// (`msecs_to_jiffies(5000)`). A hypervisor may keep a new vCPU off the host
/// for that long (100 ms ran out at host load 5-6 on 2 cores); the wait ends
/// as soon as the CPU is up, so a normal boot is not slower.
pub const START_TIMEOUT_NS: u64 = 5_000_000_000;

/// SGI used for [`IpiKind::Reschedule`].
const SGI_RESCHEDULE: u32 = gic::SGI_USED[0];
/// SGI used for [`IpiKind::Call`].
const SGI_CALL: u32 = gic::SGI_USED[1];

/// Mailbox states.
const IDLE: u8 = 0;
const PENDING: u8 = 1;
const ALIVE: u8 = 2;
const ABANDONED: u8 = 3;
/// A starter is writing a new start into an abandoned mailbox (not claimable).
const REARMING: u8 = 4;

/// Size of each bootstrap stack (runs only [`secondary_main`] before the switch).
const BOOTSTRAP_STACK_BYTES: usize = 8 * 1024;

/// Top of each CPU's bootstrap stack (0: none yet), a guarded kernel stack
/// (`hooks::bringup_stack`) or else a heap block of
/// [`BOOTSTRAP_STACK_BYTES`], taken by [`start_cpu`] for the CPUs it starts,
/// never freed (a CPU that came up too late parks on it). Only CPUs that
/// exist cost memory.
pub(super) static BOOTSTRAP_TOPS: [AtomicUsize; MAX_CPUS] =
    [const { AtomicUsize::new(0) }; MAX_CPUS];

/// A leaked, 16-byte aligned heap block of `bytes` for a stack; its top.
/// Boot CPU (heap up).
pub(super) fn alloc_stack(bytes: usize) -> Option<VirtAddr> {
    let layout = core::alloc::Layout::from_size_align(bytes, 16).ok()?;
    // SAFETY: the layout has a non-zero size (callers pass constants).
    let p = unsafe { alloc::alloc::alloc(layout) };
    (!p.is_null()).then(|| VirtAddr::from_ptr(p) + bytes)
}

/// CPU `cpu`'s bootstrap stack and emergency stack (allocated on first use).
fn stacks_for(cpu: CpuId) -> Option<VirtAddr> {
    let slot = &BOOTSTRAP_TOPS[cpu.index()];
    if slot.load(Ordering::Relaxed) == 0 {
        // Generic code gave it a guarded one (`set_exception_stack_of`),
        // unless there is no stack region.
        if !trap::has_emergency_stack(cpu) {
            let emergency = alloc_stack(trap::EMERGENCY_STACK_BYTES)?;
            trap::set_exception_stack_of(cpu, 0, emergency);
        }
        // A guarded one from the stack region where there is one.
        let top = match crate::hooks::bringup_stack(cpu) {
            Some(top) => top,
            None => alloc_stack(BOOTSTRAP_STACK_BYTES)?,
        };
        slot.store(top.as_usize(), Ordering::Relaxed);
    }
    Some(VirtAddr::new(slot.load(Ordering::Relaxed)))
}

/// What the starting CPU leaves for the started one (the PSCI `context_id`).
#[repr(C)]
struct Mailbox {
    /// Read by `entry.S`: must be first. Written by the starter before `CPU_ON`.
    start: UnsafeCell<SecondaryStart>,
    /// `IDLE` -> `PENDING` (starter claims the slot) -> `ALIVE` (the CPU claimed
    /// the start) or `ABANDONED` (the starter gave up) or back to `IDLE` (PSCI
    /// refused); `ABANDONED` -> `REARMING` -> `PENDING` (a later start of
    /// the same CPU, [`rearm`]); `ALIVE` -> `IDLE` when the CPU parks.
    state: AtomicU8,
    /// Dense index of the CPU this mailbox starts.
    cpu: AtomicUsize,
    /// The caller's stack top for `entry`.
    stack_top: AtomicUsize,
    /// The caller's `entry` (a function pointer as usize).
    entry: AtomicUsize,
}

// SAFETY: `start` is written only by the CPU that moved `state` from IDLE to
// PENDING, before CPU_ON, and read by the started CPU after CPU_ON; every
// other field is atomic.
unsafe impl Sync for Mailbox {}

static MAILBOXES: [Mailbox; MAX_CPUS] = [const {
    Mailbox {
        start: UnsafeCell::new(SecondaryStart {
            stack_top: 0,
            entry: secondary_main,
            ttbr0: 0,
            tcr: 0,
            mair: 0,
        }),
        state: AtomicU8::new(IDLE),
        cpu: AtomicUsize::new(0),
        stack_top: AtomicUsize::new(0),
        entry: AtomicUsize::new(0),
    }
}; MAX_CPUS];

/// Starts secondary CPU `cpu` (dense index, `1..cpu_count()`) through PSCI
/// `CPU_ON`. It sets up its per-CPU block (`cpu_id()` returns `cpu`), the kernel
/// vectors and its GIC interface, then calls `entry(cpu)` on the stack ending at
/// `stack_top`, with IRQs masked. Returns true once the CPU runs (it is past the
/// point of no return), false if `cpu` is out of range or was already started,
/// there is no PSCI, PSCI refused, or the CPU did not report within `wait_ns`
/// (normally [`START_TIMEOUT_NS`]; 0 always gives up, as if the CPU came
/// too late); after false the CPU never runs `entry` or touches the stack,
/// and `cpu` may be started again.
///
/// # Safety
/// `stack_top` must be the 16-byte aligned top of a stack that nothing else uses
/// and that stays allocated for as long as `entry` runs on it (forever, unless
/// `entry` switches away) if true is returned. Boot CPU, after `early_init`.
pub unsafe fn start_cpu(
    cpu: CpuId,
    stack_top: crate::addr::VirtAddr,
    entry: extern "C" fn(CpuId) -> !,
    wait_ns: u64,
) -> bool {
    let stack_top = stack_top.as_usize();
    if cpu == CpuId::BOOT || cpu.index() >= cpu::cpu_count() {
        return false;
    }
    let Some(bootstrap_top) = stacks_for(cpu) else {
        crate::hooks::emergency_write(format_args!(
            "aarch64: no memory for cpu {cpu}'s bootstrap stacks\n"
        ));
        return false;
    };
    let mb = &MAILBOXES[cpu.index()];
    match mb
        .state
        .compare_exchange(IDLE, PENDING, Ordering::AcqRel, Ordering::Acquire)
    {
        Ok(_) => {}
        Err(ABANDONED) => return rearm(mb, VirtAddr::new(stack_top), entry, wait_ns),
        Err(_) => return false,
    }
    mb.cpu.store(cpu.index(), Ordering::Relaxed);
    mb.stack_top.store(stack_top & !15, Ordering::Relaxed);
    mb.entry
        .store(entry as *const () as usize, Ordering::Relaxed);
    let (ttbr0, tcr, mair) = mmu::config();
    // SAFETY: this CPU moved the mailbox to PENDING, so it alone writes `start`,
    // and CPU `cpu` has not been started yet (it reads `start` after CPU_ON).
    unsafe {
        let start = &mut *mb.start.get();
        start.stack_top = bootstrap_top.as_usize();
        start.entry = secondary_main;
        start.ttbr0 = ttbr0;
        start.tcr = tcr;
        start.mair = mair;
    }
    // The CPU reads its start block with its MMU and cache still off: push the
    // block out to memory (this also orders it before the hvc/smc below, which
    // is not a barrier). Everything else it reads after turning them on.
    mmu::clean_dcache_range(
        VirtAddr::from_ptr(mb.start.get()),
        size_of::<SecondaryStart>(),
    );

    // A core that was parked ([`park_this_cpu`]) may still be on its way
    // off: CPU_ON would be refused (ALREADY_ON) until it is.
    let off_deadline = timer::now_ns().saturating_add(START_TIMEOUT_NS);
    while psci::cpu_is_off(cpu::mpidr_of(cpu)) == Some(false) && timer::now_ns() < off_deadline {
        core::hint::spin_loop();
    }
    if wait_ns == 0 {
        // A zero wait gives up at once, deterministically: the mailbox is
        // abandoned before the CPU can claim it, so it arrives late and
        // waits for a re-armed start, as one the host kept off too long.
        mb.state.store(ABANDONED, Ordering::Release);
    }
    let ret = psci::call(
        PSCI_CPU_ON,
        cpu::mpidr_of(cpu),
        boot::aarch64::secondary_entry_address() as u64,
        mb as *const Mailbox as u64,
    );
    if ret != Some(0) {
        // No PSCI, or an error (ALREADY_ON -4, INVALID_PARAMETERS -2, ...): the
        // CPU will not run our entry, so the slot may be tried again.
        mb.state.store(IDLE, Ordering::Release);
        return false;
    }
    if wait_ns == 0 {
        return false;
    }

    wait_alive(mb, wait_ns)
}

/// Waits at most `wait_ns` for the CPU of `mb` (`PENDING`) to
/// claim its start; true once it did, false after moving the mailbox to
/// `ABANDONED` (the CPU then never claims this start).
fn wait_alive(mb: &Mailbox, wait_ns: u64) -> bool {
    let deadline = timer::now_ns().saturating_add(wait_ns);
    loop {
        if mb.state.load(Ordering::Acquire) == ALIVE {
            return true;
        }
        if timer::now_ns() >= deadline {
            // Give up, unless the CPU claimed the start in the meantime.
            return mb
                .state
                .compare_exchange(PENDING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                .is_err();
        }
        core::hint::spin_loop();
    }
}

/// Starts again a CPU whose earlier start was abandoned ([`wait_alive`]):
/// PSCI already has it on (it waits in [`secondary_main`] for a new
/// start, or has not reached it yet), so no `CPU_ON`: the mailbox gets the
/// new stack and entry and goes back to `PENDING`, and an event wakes the
/// CPU. Same result as [`start_cpu`].
fn rearm(
    mb: &Mailbox,
    stack_top: VirtAddr,
    entry: extern "C" fn(CpuId) -> !,
    wait_ns: u64,
) -> bool {
    if mb
        .state
        .compare_exchange(ABANDONED, REARMING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return false;
    }
    mb.stack_top
        .store(stack_top.as_usize() & !15, Ordering::Relaxed);
    mb.entry
        .store(entry as *const () as usize, Ordering::Relaxed);
    // Publishes the two stores above to the claiming CPU (its claim is an
    // Acquire), then wakes it from `wfe` (`sev` after a `dsb`, which the
    // Release store alone does not give).
    mb.state.store(PENDING, Ordering::Release);
    // SAFETY: a barrier and an event: no memory or register effects beyond
    // ordering and waking CPUs in `wfe`.
    unsafe { core::arch::asm!("dsb ish", "sev", options(nostack, preserves_flags)) };
    wait_alive(mb, wait_ns)
}

/// Rust entry of a secondary CPU, called by `entry.S` on the bootstrap stack at
/// EL1 with DAIF masked; `block` is its [`Mailbox`] (whose first field is the
/// [`SecondaryStart`]), `_entry_el` the EL it was started at.
extern "C" fn secondary_main(block: usize, _entry_el: usize) -> ! {
    // SAFETY: `block` is the context_id start_cpu passed to CPU_ON: a mailbox in
    // the static MAILBOXES.
    let mb = unsafe { &*(block as *const Mailbox) };
    // `start_cpu` stored a `CpuId`'s index.
    let cpu = CpuId::wrapping(mb.cpu.load(Ordering::Relaxed));
    // SAFETY: this CPU is the one start_cpu is bringing up as `cpu`; the mailbox
    // state (PENDING, set once per index) makes that unique.
    unsafe { cpu::init_secondary_cpu(cpu) };
    mmu::note_cpu();
    trap::init();
    gic::init_cpu();
    // Claim the start; if the starter gave up on us (`ABANDONED`), never
    // touch its stack or run its entry: wait for a later start to re-arm
    // the mailbox ([`rearm`]) and claim that one.
    while mb
        .state
        .compare_exchange(PENDING, ALIVE, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        aarch64_cpu::asm::wfe();
    }
    // Read after the claim (Acquire): a re-armed start's stack and entry.
    let stack_top = mb.stack_top.load(Ordering::Relaxed);
    let entry = mb.entry.load(Ordering::Relaxed);
    crate::hooks::secondary_arch_up(cpu);
    // SAFETY: start_cpu's caller gave a stack nobody else uses and `entry` is an
    // `extern "C" fn(CpuId) -> !` (a `u32`); we leave the bootstrap stack for good, with
    // fp/lr cleared so backtraces end here, x0 = cpu. IRQs stay masked.
    unsafe {
        core::arch::asm!(
            "mov sp, {stack}",
            "mov x29, xzr",
            "mov x30, xzr",
            "br {entry}",
            stack = in(reg) stack_top,
            entry = in(reg) entry,
            in("x0") cpu.index(),
            options(noreturn),
        )
    }
}

/// Takes this CPU (a secondary one) down for good (CPU hotplug), with
/// interrupts masked: its timer stops, its mailbox goes back to `IDLE` so
/// that [`start_cpu`] may start it again, `parked` is set (Release), and
/// PSCI `CPU_OFF` powers the core off. If PSCI refuses, the CPU waits in
/// `wfe` forever with interrupts masked (it can then not be started again:
/// `start_cpu` gets ALREADY_ON and returns false).
pub fn park_this_cpu(parked: &core::sync::atomic::AtomicBool) -> ! {
    // SAFETY: masking IRQs and FIQs only changes this CPU's interrupt state.
    unsafe { core::arch::asm!("msr daifset, #3", "isb") };
    let me = cpu::cpu_id();
    timer::timer_stop();
    MAILBOXES[me.index()].state.store(IDLE, Ordering::Release);
    parked.store(true, Ordering::Release);
    psci::cpu_off();
    loop {
        aarch64_cpu::asm::wfe();
    }
}

/// Interrupts CPU `cpu` (may be this CPU) with `kind`; its IRQ handler calls
/// `crate::hooks::ipi(kind)` then `crate::hooks::irq_exit()`. Writes this CPU
/// made before the call are visible to the handler. No effect for an index out
/// of range or (GICv2) a CPU that has not initialised its GIC interface yet.
pub fn send_ipi(cpu: CpuId, kind: IpiKind) {
    if cpu.index() >= cpu::cpu_count() {
        return;
    }
    let sgi = match kind {
        IpiKind::Reschedule => SGI_RESCHEDULE,
        IpiKind::Call => SGI_CALL,
    };
    gic::send_sgi(cpu, sgi);
}

/// Whether an IPI of `kind` is pending and whether it is active at CPU
/// `cpu`'s interrupt controller, where it can be read from another CPU
/// (GICv3); `None` where it cannot. For stall reports.
pub fn ipi_state(cpu: CpuId, kind: IpiKind) -> Option<(bool, bool)> {
    let sgi = match kind {
        IpiKind::Reschedule => SGI_RESCHEDULE,
        IpiKind::Call => SGI_CALL,
    };
    gic::sgi_state(cpu, sgi)
}

/// The IPI an SGI INTID stands for, if it is one of ours.
pub fn ipi_kind(intid: u32) -> Option<IpiKind> {
    match intid {
        SGI_RESCHEDULE => Some(IpiKind::Reschedule),
        SGI_CALL => Some(IpiKind::Call),
        _ => None,
    }
}
