//! The idle loop: polling, halting, tickless idle and newidle balancing.

use ::core::sync::atomic::{AtomicU64, Ordering};

use ::sched::Resched;

use super::*;
use crate::arch;
use crate::percpu::{self, PerCpu};

/// How long an idle CPU polls for work before it halts, ns (boot argument
/// `idle_poll=US`; 0: halt at once).
///
/// Why: waking a halted CPU costs an IPI plus the time the CPU takes to leave
/// its halt, which under QEMU/TCG is the host waking a sleeping vCPU thread:
/// ~15-20 us per wakeup, against ~3 us for a CPU that is running. A
/// ping-pong between two CPUs (`perfpipe`, a pipe, a request/reply) pays it
/// twice per round trip, though each side sleeps only a few microseconds. A
/// polling idle CPU sees the wakeup at once and needs no IPI (Linux's
/// `poll_idle` / guest `haltpoll` do the same); the window is short, so an
/// idle machine still halts almost all the time (one window per idle
/// period: after a wakeup, a tick).
pub static IDLE_POLL_NS: AtomicU64 = AtomicU64::new(DEFAULT_IDLE_POLL_NS);
/// Default of [`IDLE_POLL_NS`].
pub const DEFAULT_IDLE_POLL_NS: u64 = 50_000;

/// Polls for a reschedule request for up to [`IDLE_POLL_NS`], with
/// interrupts enabled (ticks and IPIs are taken). Called and returns with
/// interrupts disabled; returns whether there is something to schedule.
pub(crate) fn poll_idle(pc: &PerCpu) -> bool {
    let window = IDLE_POLL_NS.load(Ordering::Relaxed);
    if window == 0 {
        return false;
    }
    poll::begin(&pc.polling);
    arch::irq_enable();
    let t0 = arch::now_ns();
    while !pc.poll_kick.load(Ordering::Relaxed)
        && pc.need_resched() == Resched::None
        && arch::now_ns().saturating_sub(t0) < window
    {
        arch::cpu_relax();
    }
    arch::irq_disable();
    let kicked = poll::end(&pc.poll_kick, &pc.polling);
    kicked || pc.need_resched() != Resched::None
}

/// The polling-idle wakeup protocol on one CPU's `poll_kick` and `polling`
/// flags (Linux's `TIF_POLLING_NRFLAG`): a waker raises the kick, then looks
/// at `polling`, and sends no IPI if the CPU polls; the idle CPU raises
/// `polling`, polls, clears `polling`, then takes the kick. Every access is
/// SeqCst, so either the idle CPU's final look sees the kick, or the waker
/// saw `polling` clear and sends the IPI.
///
/// Each side stores its own flag and then loads the other's (the
/// store-buffering pattern), so the store must not pass the load; a
/// `SeqCst` fence sits between the two. SeqCst accesses alone order them
/// in the language and on Arm hardware (`stlr` then `ldar`), but QEMU's
/// TCG translates `stlr` as barrier + store and `ldar` as load + barrier,
/// nothing between: on an x86 host the store waits in the store buffer
/// while the load goes ahead, and both sides miss each other (the waker
/// sees `polling`, sends no IPI, and `end` sees no kick: the CPU halts
/// with the wakeup in its wake list). Seen with QEMU 7.2 and 10.0
/// (`smp_poll_kick_racing_poll_end_is_not_lost`). Linux's idle side has the
/// same `smp_mb()` between clearing the polling bit and looking for a
/// reschedule (`current_clr_polling`, "paired with resched_curr()"); its
/// waker sets need-resched and reads the polling bit in one `fetch_or` of
/// one word, which no reordering can split.
///
/// The kick is never cleared when polling starts: a kick raised just before
/// (by a waker that then saw `polling` already set, and so sent no IPI)
/// would be lost, the wakeup left in the wake list until the CPU's next
/// interrupt, which for a tickless idle CPU may be seconds away (seen: the
/// cross-CPU ping-pong stood still for over 2 s on a loaded host). A stale
/// kick (its waker did send the IPI) only costs one empty pass through the
/// scheduler.
pub(crate) mod poll {
    use core::sync::atomic::{fence, AtomicBool, Ordering};

    /// Waker: raises the kick; returns whether an IPI is needed (the CPU
    /// does not poll).
    pub fn kick(kick: &AtomicBool, polling: &AtomicBool) -> bool {
        raise(kick);
        fence(Ordering::SeqCst);
        needs_ipi(polling)
    }

    /// The waker's first step: the kick.
    pub fn raise(kick: &AtomicBool) {
        kick.store(true, Ordering::SeqCst);
    }

    /// The waker's second step: an IPI only if the CPU does not poll.
    pub fn needs_ipi(polling: &AtomicBool) -> bool {
        !polling.load(Ordering::SeqCst)
    }

    /// Idle CPU: polling starts (wakers may skip the IPI from now on).
    pub fn begin(polling: &AtomicBool) {
        polling.store(true, Ordering::SeqCst);
    }

    /// Idle CPU: polling ends; returns whether a kick came (consuming it).
    pub fn end(kick: &AtomicBool, polling: &AtomicBool) -> bool {
        polling.store(false, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        kick.swap(false, Ordering::SeqCst)
    }
}

crate::ktest!(poll_kick_before_polling_starts_is_not_lost, || {
    // Every interleaving of the waker's two steps with the idle CPU's
    // begin / end (the idle CPU's steps in order, the waker's in order):
    // whenever the waker sends no IPI, the idle CPU's end must see the kick.
    // The one that lost wakeups: raise, begin, needs_ipi (polling: no IPI),
    // end; with the kick cleared at begin, end saw nothing.
    use core::sync::atomic::AtomicBool;
    let orders: [[u8; 4]; 6] = [
        [0, 1, 2, 3], // raise, needs_ipi, begin, end
        [0, 2, 1, 3], // raise, begin, needs_ipi, end (the lost one)
        [0, 2, 3, 1], // raise, begin, end, needs_ipi
        [2, 0, 1, 3], // begin, raise, needs_ipi, end
        [2, 0, 3, 1], // begin, raise, end, needs_ipi
        [2, 3, 0, 1], // begin, end, raise, needs_ipi
    ];
    for order in orders {
        let (kick, polling) = (AtomicBool::new(false), AtomicBool::new(false));
        let (mut ipi, mut seen) = (false, false);
        for step in order {
            match step {
                0 => poll::raise(&kick),
                1 => ipi = poll::needs_ipi(&polling),
                2 => poll::begin(&polling),
                _ => seen = poll::end(&kick, &polling),
            }
        }
        crate::kassert!(ipi || seen, "order {:?}: no IPI and the kick unseen", order);
    }
    Ok(())
});

/// The idle loop of this CPU: polls briefly ([`IDLE_POLL_NS`]), then halts
/// until a reschedule is pending, then lets the scheduler pick. Each time it
/// is switched in it first tries to pull work from the busiest CPU (newidle
/// balancing).
pub fn cpu_idle() -> ! {
    let cpu = arch::cpu_id();
    let pc = percpu::cpu(cpu);
    loop {
        arch::irq_disable();
        // Asked to go offline: this CPU runs nothing more (never returns).
        crate::hotplug::play_dead_if_dying(cpu);
        if pc.need_resched() != Resched::None {
            arch::irq_enable();
            __schedule(SchedMode::Preempt);
            continue;
        }
        if pc.newidle.swap(false, Ordering::Relaxed) && nr_rqs() > 1 {
            pc.newidle_runs.fetch_add(1, Ordering::Relaxed);
            // The balance's own first test, made here: when it would pull
            // nothing (no CPU overloaded, no misfit), the call, its
            // interrupt save and its frame are skipped.
            let n = if sched().newidle_finds_nothing() {
                0
            } else {
                balance_newidle(cpu)
            };
            pc.newidle_pulled.fetch_add(n as u64, Ordering::Relaxed);
            if n > 0 {
                arch::irq_enable();
                __schedule(SchedMode::Preempt);
                continue;
            }
        }
        if pc.nohz_balance.swap(false, Ordering::Relaxed) && nr_rqs() > 1 {
            // Kicked as the idle load balancer: the periodic balance of
            // each tickless CPU that is due, this one's last.
            if nohz_idle_balance(cpu) > 0 {
                arch::irq_enable();
                __schedule(SchedMode::Preempt);
                continue;
            }
        }
        if poll_idle(pc) {
            // A kick means a queued wakeup: `__schedule` drains it.
            arch::irq_enable();
            __schedule(SchedMode::Preempt);
            continue;
        }
        // Tickless idle: the tick stays off until the idle thread leaves
        // (`__schedule`); timer events (sleepers), the scheduler's one-shot
        // timer (a throttled deadline task's replenishment, the fair
        // server's instants) and IPIs still come.
        if cpu != CpuId::BOOT
            && NOHZ_IDLE.load(Ordering::Relaxed)
            && !pc.nohz_idle.load(Ordering::Relaxed)
            && !pc.nohz_idle.swap(true, Ordering::Relaxed)
        {
            pc.nohz_entries.fetch_add(1, Ordering::Relaxed);
            arch::timer_stop_tick();
        }
        if cpu == CpuId::BOOT {
            // Lines a wakeup queued from an interrupt handler (CPU hotplug).
            flush_affinity_log();
        }
        // A kick whose IPI came while this CPU polled (interrupts on) set
        // its flag after the tests above: take it now, not at the next
        // wakeup. The idle load balancer's kicker sends no second IPI while
        // its flag is set.
        if pc.nohz_balance.load(Ordering::Relaxed) || pc.newidle.load(Ordering::Relaxed) {
            arch::irq_enable();
            continue;
        }
        // Atomically enables interrupts and waits: a wakeup interrupt
        // arriving after the check above still ends the halt.
        arch::halt();
    }
}
