//! CPU hotplug: `cpu offline N` / `cpu online N` (Linux's `cpu_down` /
//! `cpu_up`, kernel/cpu.c, with the scheduler's part in the `sched` crate's
//! `smp::hotplug`).
//!
//! # Down ([`cpu_down`], from a thread on another CPU or on N itself)
//! 1. `Scheduler::sched_cpu_deactivate`: N leaves the active mask, nothing is
//!    placed, balanced or woken there any more, its queued threads move now,
//!    its running thread is asked to reschedule and leaves at its switch; N
//!    then runs only its idle thread (`balance_push`). A thread allowed only
//!    on N has its affinity widened to every CPU, with Linux's log line
//!    ("process P (NAME) no longer affine to cpuN").
//! 2. N's idle thread sees the request at the top of its loop
//!    ([`play_dead_if_dying`], interrupts off): it moves what landed on it
//!    meanwhile, stops its tick, timer event and hrtick, leaves the online
//!    mask (its ticks and timer events are ignored from then on, cross-CPU
//!    calls to it are refused, the watchdogs skip it), runs the cross-CPU
//!    calls already queued for it, wakes the sleepers whose timers it held
//!    (they arm their timers again on the CPU they wake on), lands its wake
//!    list, and parks (`kernel_hal::stack::park_this_cpu`): x86_64 halts
//!    with interrupts off until an INIT; aarch64 calls PSCI `CPU_OFF`.
//! 3. The caller waits for the park (sleeping 1 ms at a time, at most
//!    [`DOWN_TIMEOUT_NS`]), then `Scheduler::sched_cpu_dying` checks that
//!    N's runqueue is empty. If N never reached its idle thread (a thread
//!    there that does not reschedule: under the `none` model, until it
//!    blocks), the request is withdrawn, N is active again, and the caller
//!    gets [`HotplugError::Timeout`].
//!
//! # Up ([`cpu_up`])
//! The arch layer starts N again exactly as at boot
//! (`kernel_hal::stack::restart_cpu`: INIT-SIPI-SIPI / PSCI `CPU_ON`), on
//! N's idle stack, with
//! [`cpu_restart`] as the entry: the idle thread is still N's current thread
//! (it parked as that thread), so N clears its idle flags, becomes active in
//! the scheduler, online, restarts its tick and enters the idle loop.
//!
//! # Rules
//! CPU 0 stays online (it keeps the watchdogs' tick, the console's
//! interrupts and the shell's pinned threads). Hotplug operations are
//! serialised ([`HotplugError::Busy`] for a second one at the same time).
//! Refused requests change nothing.

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use kernel_hal::stack::{cpu_parked, cpu_started, park_this_cpu, restart_cpu};

use crate::arch;
use crate::percpu::{self, CpuId, MAX_CPUS};

/// Longest [`cpu_down`] waits for the CPU to park: 10 s, the bound of a
/// CPU's start ([`cpu_up`]'s arch wait), which a vCPU the host keeps off
/// for seconds still meets.
pub const DOWN_TIMEOUT_NS: u64 = 10_000_000_000;
/// Longest [`cpu_up`] waits, once the arch layer started the CPU, for it to
/// come online (a few microseconds of its own work).
const UP_TIMEOUT_NS: u64 = 10_000_000_000;

/// A CPU's hotplug state.
const UP: u8 = 0;
/// Asked to go down; its idle thread has not started to yet.
const DYING: u8 = 1;
/// Going down or parked (past the point of no return).
const DEAD: u8 = 2;

static STATE: [AtomicU8; MAX_CPUS] = [const { AtomicU8::new(UP) }; MAX_CPUS];
/// When each CPU stopped accounting time (its idle period ended as it went
/// down), 0 while it is up; and its time offline before that, ns. Neither
/// idle nor busy: `offline_ns` lets CPU-time checks leave it out.
static OFFLINE_SINCE: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];
static OFFLINE_NS: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];
/// A hotplug operation is in progress.
static BUSY: AtomicBool = AtomicBool::new(false);

/// Why a hotplug request changed nothing (or, for [`HotplugError::Timeout`]
/// and [`HotplugError::StartFailed`], what went wrong).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HotplugError {
    /// Not a CPU of this machine.
    NoSuchCpu,
    /// CPU 0 stays online.
    BootCpu,
    /// `cpu offline` of an offline CPU.
    AlreadyOffline,
    /// `cpu online` of an online CPU.
    AlreadyOnline,
    /// The CPU never came up at boot.
    NeverStarted,
    /// Another hotplug operation is in progress.
    Busy,
    /// The scheduler refused (the last active CPU, deadline bandwidth).
    Sched(sched::smp::HotplugError),
    /// The CPU did not reach its idle thread in time; it stays online.
    Timeout,
    /// The arch layer could not start the CPU again; it stays offline.
    StartFailed,
}

impl fmt::Display for HotplugError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HotplugError::NoSuchCpu => f.write_str("no such CPU"),
            HotplugError::BootCpu => f.write_str("CPU 0 stays online"),
            HotplugError::AlreadyOffline => f.write_str("CPU is already offline"),
            HotplugError::AlreadyOnline => f.write_str("CPU is already online"),
            HotplugError::NeverStarted => f.write_str("CPU did not come up at boot"),
            HotplugError::Busy => f.write_str("another CPU hotplug operation is in progress"),
            HotplugError::Sched(e) => write!(f, "{e}"),
            HotplugError::Timeout => f.write_str(
                "CPU did not reach its idle thread within 10 s (a thread there does not \
                 reschedule); it stays online",
            ),
            HotplugError::StartFailed => f.write_str("CPU did not start again; it stays offline"),
        }
    }
}

/// Holds [`BUSY`] while a hotplug operation runs.
struct Serial;

impl Serial {
    fn lock() -> Result<Serial, HotplugError> {
        BUSY.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .map(|_| Serial)
            .map_err(|_| HotplugError::Busy)
    }
}

impl Drop for Serial {
    fn drop(&mut self) {
        BUSY.store(false, Ordering::Release);
    }
}

/// Time every CPU spent offline so far, the current offline periods
/// included, ns (neither idle nor busy time).
pub fn offline_ns() -> u64 {
    let now = arch::now_ns();
    CpuId::range(crate::sched::nr_rqs())
        .map(|c| {
            let since = OFFLINE_SINCE[c.index()].load(Ordering::Acquire);
            let cur = if since != 0 {
                now.saturating_sub(since)
            } else {
                0
            };
            OFFLINE_NS[c.index()].load(Ordering::Acquire) + cur
        })
        .sum()
}

/// CPUs the scheduler has (the firmware's), to check a CPU number against.
fn check(cpu: CpuId) -> Result<(), HotplugError> {
    if cpu.index() >= crate::sched::nr_rqs() {
        return Err(HotplugError::NoSuchCpu);
    }
    if cpu == CpuId::BOOT {
        return Err(HotplugError::BootCpu);
    }
    if !cpu_started(cpu) {
        return Err(HotplugError::NeverStarted);
    }
    Ok(())
}

/// Takes `cpu` down (see the module docs); returns once it is parked.
/// Sleeps: call from a thread, not with interrupts off.
pub fn cpu_down(cpu: CpuId) -> Result<(), HotplugError> {
    let _serial = Serial::lock()?;
    check(cpu)?;
    let i = cpu.index();
    if STATE[i].load(Ordering::Acquire) != UP {
        return Err(HotplugError::AlreadyOffline);
    }
    if !percpu::cpu(cpu).online.load(Ordering::Acquire) {
        return Err(HotplugError::NeverStarted);
    }
    let s = crate::sched::sched();
    s.sched_cpu_deactivate(cpu, arch::cpu_id())
        .map_err(HotplugError::Sched)?;
    STATE[i].store(DYING, Ordering::SeqCst);
    // Wake its idle loop (polling or halted, possibly tickless).
    use sched::smp::Platform;
    s.platform.send_resched_ipi(cpu);
    let t0 = arch::now_ns();
    while !cpu_parked(cpu) {
        let waited = arch::now_ns().saturating_sub(t0);
        if waited > DOWN_TIMEOUT_NS
            && STATE[i]
                .compare_exchange(DYING, UP, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // Withdrawn before its idle thread took it: active again.
            let _ = s.sched_cpu_activate(cpu);
            return Err(HotplugError::Timeout);
        }
        if waited > 2 * DOWN_TIMEOUT_NS {
            // Past the point of no return but not parked: a bug; say so
            // rather than wait for ever.
            log::error!("smp: cpu {cpu} went down but did not park");
            return Err(HotplugError::Timeout);
        }
        crate::task::sleep_ms(1);
    }
    if let Err(e) = s.sched_cpu_dying(cpu) {
        log::warn!("smp: cpu {cpu} parked but its runqueue is not empty: {e}");
    }
    crate::sched::flush_affinity_log();
    log::info!("smp: cpu {cpu} offline");
    Ok(())
}

/// Brings `cpu` back (see the module docs); returns once it is online.
pub fn cpu_up(cpu: CpuId) -> Result<(), HotplugError> {
    let _serial = Serial::lock()?;
    check(cpu)?;
    let i = cpu.index();
    if STATE[i].load(Ordering::Acquire) != DEAD || !cpu_parked(cpu) {
        return Err(HotplugError::AlreadyOnline);
    }
    // On its idle stack, whose parked frames are abandoned.
    if !restart_cpu(cpu, cpu_restart) {
        return Err(HotplugError::StartFailed);
    }
    let t0 = arch::now_ns();
    while !percpu::cpu(cpu).online.load(Ordering::Acquire) {
        if arch::now_ns().saturating_sub(t0) > UP_TIMEOUT_NS {
            log::warn!("smp: cpu {cpu} started but did not come online");
            return Err(HotplugError::StartFailed);
        }
        crate::task::sleep_ms(1);
    }
    crate::sched::flush_affinity_log();
    log::info!("smp: cpu {cpu} online");
    Ok(())
}

/// From the idle loop of `cpu` (this CPU), interrupts off: if it was asked
/// to go down, goes down and parks (never returns); else returns at once.
#[inline]
pub fn play_dead_if_dying(cpu: CpuId) {
    if STATE[cpu.index()].load(Ordering::Relaxed) == DYING {
        play_dead(cpu);
    }
}

#[cold]
fn play_dead(cpu: CpuId) {
    let i = cpu.index();
    // The point of no return: a caller that timed out can no longer
    // withdraw the request.
    if STATE[i]
        .compare_exchange(DYING, DEAD, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return;
    }
    let s = crate::sched::sched();
    let pc = percpu::cpu(cpu);
    s.migrate_tasks(cpu);
    {
        // Its idle period ends here: offline time is not idle time.
        let _rq = crate::sched::lock_rq(cpu);
        let now = arch::now_ns();
        pc.account_switch(now, true, false);
        OFFLINE_SINCE[i].store(now.max(1), Ordering::Release);
    }
    arch::timer_stop_tick();
    arch::timer_set_event(None);
    let _ = arch::timer_set_hrtick(cpu, None);
    pc.nohz_idle.store(false, Ordering::Relaxed);
    percpu::set_offline(cpu);
    // Calls queued before it left the online mask.
    crate::smp::call_ipi();
    // Its sleepers wake now, elsewhere, and arm their timers there.
    crate::sched::expire_timers(pc, u64::MAX);
    // What landed meanwhile (its wake list).
    s.migrate_tasks(cpu);
    park_this_cpu()
}

/// The entry of a CPU started again by [`cpu_up`], on its idle stack,
/// interrupts off: its idle thread (still its current thread) goes on.
extern "C" fn cpu_restart(cpu: CpuId) -> ! {
    let pc = percpu::cpu(cpu);
    pc.need_resched.store(0, Ordering::Relaxed);
    pc.poll_kick.store(false, Ordering::Relaxed);
    pc.polling.store(false, Ordering::Relaxed);
    pc.nohz_idle.store(false, Ordering::Relaxed);
    STATE[cpu.index()].store(UP, Ordering::Release);
    if let Err(e) = crate::sched::sched().sched_cpu_activate(cpu) {
        log::warn!("smp: cpu {cpu} restarted but the scheduler refused it: {e}");
    }
    let now = arch::now_ns();
    let since = OFFLINE_SINCE[cpu.index()].swap(0, Ordering::AcqRel);
    OFFLINE_NS[cpu.index()].fetch_add(now.saturating_sub(since), Ordering::AcqRel);
    pc.liveness.tick_restarted(now);
    // A new idle period starts.
    crate::sched::cpu_online(cpu);
    arch::timer_start(crate::HZ.load(Ordering::Relaxed));
    arch::irq_enable();
    crate::sched::cpu_idle()
}
