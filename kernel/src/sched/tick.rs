//! The tick and timer events (sleepers' wakeups), and load balancing
//! (periodic, newidle, and the kick of a tickless CPU).

use ::core::sync::atomic::{AtomicBool, Ordering};
use kernel_hal::cpu::CpuId;

use ::sched::WakeFlags;

use super::*;
use crate::arch;
use crate::percpu::{self, PerCpu};

/// Ticks between two nohz kicks from one busy CPU ([`nohz_balance_kick`],
/// staggered by CPU number, so the CPUs do not all kick on the same tick).
/// At the default 250 Hz: every 16 ms. The periodic balance itself is asked
/// at every tick and runs at its own cadence (each domain level's interval:
/// `Scheduler::rebalance_domains`).
pub const BALANCE_TICKS: u64 = 4;

/// Wakes this CPU's sleepers whose deadline is `now` or earlier
/// (`WakeFlags::IRQ`) and points its timer event at the next one. Interrupts
/// off.
pub(crate) fn expire_timers(pc: &PerCpu, now: u64) {
    let mut timers = pc.timers.lock();
    while let Some(idx) = timers.pop_expired(now) {
        try_to_wake_up(idx, WakeFlags::IRQ);
    }
    arch::timer_set_event(timers.earliest());
}

/// A timer event between ticks (`hooks::timer_event`): wake the sleepers whose
/// time came.
pub fn timer_event() {
    let pc = percpu::cpu(arch::cpu_id());
    pc.timer_events.fetch_add(1, Ordering::Relaxed);
    if !pc.online.load(Ordering::Acquire) {
        return;
    }
    expire_timers(pc, arch::now_ns());
}

/// The scheduler's one-shot timer (Linux's `hrtick()`), from the timer
/// interrupt: the running task's slice may have ended between two ticks.
/// The `sched` crate charges it and, for a fair task, asks for an
/// immediate reschedule, which `irq_exit` then honours (HRTICK; the timer
/// was armed through [`KernelPlatform`]'s `hrtick_start`).
pub fn hrtick_interrupt() {
    let cpu = arch::cpu_id();
    let pc = percpu::cpu(cpu);
    if !pc.online.load(Ordering::Acquire) {
        return;
    }
    {
        let mut rq = lock_rq(cpu);
        rq.hrtick();
    }
    expire_timers(pc, arch::now_ns());
    // A deadline task the timer replenished behind an earlier deadline
    // moves on (Linux's `dl_task_timer` ends with `__push_dl_task`): one
    // relaxed load while no CPU is DL-overloaded.
    sched().push_dl_if_overloaded(cpu, cpu);
}

/// The tick (`sched_tick`), from the timer interrupt: drain the wake list,
/// account the running thread, wake the sleepers whose time came
/// (`WakeFlags::IRQ`), the periodic balance once a domain level is due
/// (`sched_balance_trigger`), and every [`BALANCE_TICKS`] ticks the nohz
/// kick.
pub fn timer_tick() {
    let cpu = arch::cpu_id();
    let pc = percpu::cpu(cpu);
    let ticks = pc.ticks.fetch_add(1, Ordering::Relaxed) + 1;
    if !pc.online.load(Ordering::Acquire) {
        return;
    }
    let s = sched();
    let now = {
        let mut rq = lock_rq(cpu);
        s.sched_ttwu_pending(&mut rq);
        rq.task_tick();
        s.tick_misfit(&rq);
        rq.clock()
    };
    pc.liveness.ticked(now);
    // As at the one-shot timer: the tick's replenishment (a fallback) may
    // leave a deadline task behind an earlier one.
    s.push_dl_if_overloaded(cpu, cpu);
    expire_timers(pc, now);
    if cpu == CpuId::BOOT && ticks.is_multiple_of(crate::task::stall::CHECK_TICKS) {
        crate::task::stall::check(now);
    }
    if cpu == CpuId::BOOT && ticks.is_multiple_of(crate::task::softlockup::SCAN_TICKS) {
        crate::task::softlockup::check(now);
    }
    if s.nr_cpus() > 1 {
        if s.rebalance_due(cpu, now) {
            pc.balance_runs.fetch_add(1, Ordering::Relaxed);
            let n = rebalance(cpu, now);
            pc.balance_pulled.fetch_add(n as u64, Ordering::Relaxed);
        }
        if (ticks + cpu.index() as u64).is_multiple_of(BALANCE_TICKS) {
            nohz_balance_kick(cpu);
        }
    }
}

/// Tickless idle (`nohz=on`, the default): an idle CPU other than CPU 0
/// stops its tick when it halts. CPU 0 keeps ticking for the test watchdog
/// and the heartbeat.
pub static NOHZ_IDLE: AtomicBool = AtomicBool::new(true);

/// A busy CPU's balancing tick (Linux's `nohz_balancer_kick`), once a
/// tickless CPU's periodic balance is due: with more than one runnable task
/// here, or a misfit task running here on a machine of unequal CPUs
/// (`Scheduler::nohz_kick_wanted`), or else with more than one CPU of this
/// LLC busy (not tickless; `Scheduler::nohz_llc_kick_wanted`), kick the
/// first tickless idle CPU, whatever its capacity
/// (`Scheduler::find_new_ilb`). Either way the kicked CPU runs as the idle load
/// balancer ([`nohz_idle_balance`]: the periodic idle balance of each
/// tickless CPU that is due, itself last), as Linux's kicked CPU does for
/// both kinds of kick (`kick_ilb(NOHZ_BALANCE_KICK)`, then
/// `_nohz_idle_balance`), one kick at a time (`NOHZ_KICK_MASK`).
///
/// The first kind used to ask for a newly idle balance instead. That pass
/// is the wrong one for a kick: NI_RANDOM skips it with the probability
/// that the CPU's newidle passes failed (half of them at the initial ratio,
/// nearly all once they kept failing), and a newidle pass that finds only
/// cache-hot tasks counts no failure, so the next kick is no likelier to
/// move one. With ticks late on a loaded host (a kick every 50 ms rather
/// than every 16), a CPU stayed idle for 100-370 ms beside CPUs running two
/// hogs each (`smp_no_idle_cpu_with_waiting_work`).
pub(crate) fn nohz_balance_kick(cpu: CpuId) {
    if !NOHZ_IDLE.load(Ordering::Relaxed) {
        return;
    }
    // A tickless CPU first (atomic loads), this runqueue's lock only then.
    let nohz = tickless_mask();
    if !nohz.cpus().any(|c| c != cpu) {
        return;
    }
    let nr_running = with_cpu_rq(cpu, |rq| rq.nr_running());
    let Some((ilb, _)) = sched().nohz_kick_target(cpu, nr_running, &nohz, arch::now_ns()) else {
        return;
    };
    if !percpu::cpu(ilb).nohz_balance.swap(true, Ordering::Relaxed) {
        send_kick(ilb);
    }
}

/// Wakes the tickless CPU `c` for the balancing its flag asks for.
fn send_kick(c: CpuId) {
    let pc = percpu::cpu(c);
    pc.nohz_kicks.fetch_add(1, Ordering::Relaxed);
    pc.liveness.signalled(arch::now_ns());
    arch::send_ipi(c, arch::IpiKind::Reschedule);
}

/// The online CPUs in tickless idle (`nohz.idle_cpus_mask`).
fn tickless_mask() -> ::sched::CpuMask {
    let online = online_mask();
    let mut nohz = ::sched::CpuMask::new();
    for c in online.cpus().take_while(|c| c.index() < nr_rqs()) {
        if percpu::cpu(c).nohz_idle.load(Ordering::Relaxed) {
            nohz.add(c);
        }
    }
    nohz
}

/// The kicked idle load balancer's pass on `ilb` (this CPU;
/// `_nohz_idle_balance`): `Scheduler::nohz_idle_balance`, the periodic
/// balance of each tickless idle CPU whose `next_balance` has come, this
/// one last. A CPU that got tasks is asked to reschedule (an IPI for
/// another one); the walk stops once this CPU has work of its own.
/// Returns the threads pulled to this CPU.
pub(crate) fn nohz_idle_balance(ilb: CpuId) -> usize {
    let irq = arch::IrqGuard::save();
    let nohz = tickless_mask();
    let mut mine = 0;
    sched().nohz_idle_balance(ilb, &nohz, arch::now_ns(), |c, pulled| {
        let pc = percpu::cpu(c);
        // (`balance_runs` counts the tick's own passes only: this walk
        // does not say whether the CPU's levels were due.)
        pc.balance_pulled
            .fetch_add(pulled.len() as u64, Ordering::Relaxed);
        if c == ilb {
            mine = pulled.len();
            resched_if_pulled(ilb, pulled);
        } else if !pulled.is_empty() {
            resched_if_pulled(c, pulled);
            pc.liveness.signalled(arch::now_ns());
            arch::send_ipi(c, arch::IpiKind::Reschedule);
        }
        // "If this CPU gets work to do, stop the load balancing work
        // being done for other CPUs."
        c == ilb || percpu::cpu(ilb).need_resched() == ::sched::Resched::None
    });
    drop(irq);
    mine
}

/// One newly idle balancing pass of `cpu` (this CPU); returns the threads
/// pulled (their `thread.cpu` is kept by `set_task_cpu`).
pub(crate) fn balance_newidle(cpu: CpuId) -> usize {
    balance_pass(cpu, |s| s.load_balance(cpu, true))
}

/// The periodic balance of `cpu` (this CPU) at `now_ns`
/// (`sched_balance_domains`): the domain levels whose interval passed;
/// returns the threads pulled.
fn rebalance(cpu: CpuId, now_ns: u64) -> usize {
    balance_pass(cpu, |s| s.rebalance_domains(cpu, now_ns))
}

/// Runs one balancing `pass` of `cpu` with interrupts masked, then asks for
/// a reschedule if it pulled threads here; returns how many.
fn balance_pass(
    cpu: CpuId,
    pass: impl FnOnce(&'static Scheduler<KernelPlatform>) -> ::sched::smp::Pulled,
) -> usize {
    let irq = arch::IrqGuard::save();
    let pulled = pass(sched());
    resched_if_pulled(cpu, &pulled);
    drop(irq);
    pulled.len()
}

/// After a pass that pulled threads here: the new work may preempt the
/// running one.
fn resched_if_pulled(cpu: CpuId, pulled: &::sched::smp::Pulled) {
    if !pulled.is_empty() {
        let rq = lock_rq(cpu);
        percpu::cpu(cpu).raise_need_resched(rq.need_resched());
    }
}
