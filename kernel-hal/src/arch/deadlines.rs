//! Per-CPU timer deadlines, shared by the arch timers (LAPIC one-shot on
//! x86_64, the CNTV comparator on aarch64): each CPU's next tick, next timer
//! event (the earliest sleeper) and next scheduler hrtick (the end of the
//! running fair task's slice, `sched`'s HRTICK), in the timer's own time unit
//! (ns on x86_64, counter cycles on aarch64). The arch code arms its hardware
//! for [`TimerDeadlines::next`], the earliest of the three, after a change
//! (only when the hardware, still ahead, is not already armed for that
//! moment or earlier: `program_if_earlier` in each arch's timer); at the
//! interrupt [`TimerDeadlines::expire`] says which of them are due
//! ([`TimerDue`]). This module holds the bookkeeping both share; it is plain
//! atomics, no allocation.
//!
//! Ticks are absolute and sit on one grid shared by every CPU: the whole
//! multiples of the period on the timer's clock. A tick advances by whole
//! periods from the previous deadline, so handler latency does not make it
//! drift; a tick started or restarted (boot, leaving tickless idle) takes
//! the next grid point after now, and after a stall (missed ticks) the next
//! tick is the next grid point instead of a burst of catch-up interrupts.
//! That is Linux's `tick_sched` with `skew_tick` off (its default): the
//! sched timer is set from the global jiffies grid at boot
//! (`tick_init_jiffy_update`) and moved with `hrtimer_forward` from the last
//! tick on idle exit (`tick_nohz_restart`), so all CPUs tick at the same
//! moments. Restarting one period after now instead put each CPU's tick at
//! its own phase, set by when it last left idle. Such a late tick is counted ([`TickStats`]): the
//! whole periods it merged, and whether the hardware had been armed for it
//! at all (the deadline last handed to the hardware, [`TimerDeadlines::arm`],
//! was no later than the tick's): a tick deadline lost or overwritten by a
//! later one is a bug, a late interrupt from a timer armed in time is not
//! ours (an emulator's vCPU that does not run: QEMU's round-robin `-icount`
//! delayed correctly armed ticks by up to 4 periods in the 4-CPU timing
//! suite). A stopped tick (tickless idle) is 0; no event and no
//! hrtick are `u64::MAX`. An hrtick may be set for another CPU (a remote
//! enqueue); that CPU then reprograms its timer when told to
//! ([`TimerDeadlines::sync`], from the reschedule IPI).

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::MAX_CPUS;
use crate::cpu::CpuId;

/// What was due at a timer interrupt (`TimerDeadlines::expire`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimerDue {
    /// The periodic tick.
    pub tick: bool,
    /// The timer event (sleepers).
    pub event: bool,
    /// The scheduler's hrtick.
    pub hrtick: bool,
}

/// A CPU's late ticks since boot (`TimerDeadlines::tick_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickStats {
    /// Tick interrupts that came a whole period or more after their deadline.
    pub late: u64,
    /// Whole periods those late ticks merged (ticks that never came).
    pub merged: u64,
    /// Late ticks for which the hardware had been armed for a later moment
    /// than the tick's deadline: a lost tick deadline (a bug).
    pub misarmed: u64,
}

/// The deadlines of every CPU and the tick period.
pub struct TimerDeadlines {
    period: AtomicU64,
    tick: [AtomicU64; MAX_CPUS],
    event: [AtomicU64; MAX_CPUS],
    hrtick: [AtomicU64; MAX_CPUS],
    /// Set by another CPU that changed this CPU's hrtick.
    resync: [AtomicBool; MAX_CPUS],
    /// The deadline last handed to the hardware ([`TimerDeadlines::arm`]).
    armed: [AtomicU64; MAX_CPUS],
    /// [`TickStats`], per CPU: late, merged, misarmed.
    late: [[AtomicU64; 3]; MAX_CPUS],
}

impl TimerDeadlines {
    /// No tick, no event, period 0.
    pub const fn new() -> Self {
        TimerDeadlines {
            period: AtomicU64::new(0),
            tick: [const { AtomicU64::new(0) }; MAX_CPUS],
            event: [const { AtomicU64::new(u64::MAX) }; MAX_CPUS],
            hrtick: [const { AtomicU64::new(u64::MAX) }; MAX_CPUS],
            resync: [const { AtomicBool::new(false) }; MAX_CPUS],
            armed: [const { AtomicU64::new(u64::MAX) }; MAX_CPUS],
            late: [const { [const { AtomicU64::new(0) }; 3] }; MAX_CPUS],
        }
    }

    /// Sets the tick period (the same on every CPU).
    pub fn set_period(&self, period: u64) {
        self.period.store(period, Ordering::Relaxed);
    }

    /// Starts (or restarts) `cpu`'s tick at the first grid point after
    /// `now` (see the module docs).
    pub fn start_tick(&self, cpu: CpuId, now: u64) {
        let period = self.period.load(Ordering::Relaxed);
        if period != 0 {
            self.tick[cpu.index()].store(next_grid_point(now, period), Ordering::Relaxed);
        }
    }

    /// Stops `cpu`'s tick (tickless idle); its events still fire.
    pub fn stop_tick(&self, cpu: CpuId) {
        self.tick[cpu.index()].store(0, Ordering::Relaxed);
    }

    /// Sets `cpu`'s next event (`u64::MAX`: none); whether it changed, i.e.
    /// whether the hardware needs arming again.
    pub fn set_event(&self, cpu: CpuId, at: u64) -> bool {
        self.event[cpu.index()].swap(at, Ordering::Relaxed) != at
    }

    /// Sets `cpu`'s next hrtick (`u64::MAX`: none) from `this_cpu`. On
    /// `this_cpu` a change runs `program` (arm the hardware again) and
    /// `false` is returned. For another CPU a change marks it for a resync
    /// and returns `true`: send it a reschedule IPI, whose path calls
    /// [`TimerDeadlines::sync`].
    pub fn set_hrtick(&self, cpu: CpuId, this_cpu: CpuId, at: u64, program: impl FnOnce()) -> bool {
        let changed = self.hrtick[cpu.index()].swap(at, Ordering::Relaxed) != at;
        if !changed {
            return false;
        }
        if cpu == this_cpu {
            program();
            return false;
        }
        self.resync[cpu.index()].store(true, Ordering::Release);
        true
    }

    /// On `cpu`: if another CPU changed its hrtick since the last call, runs
    /// `program` (arm the hardware again).
    pub fn sync(&self, cpu: CpuId, program: impl FnOnce()) {
        if self.resync[cpu.index()].load(Ordering::Relaxed)
            && self.resync[cpu.index()].swap(false, Ordering::Acquire)
        {
            program();
        }
    }

    /// At an interrupt: consumes what is due at `now` and says what was. A
    /// tick that comes up to `slack_64ths` / 64 of a period early counts
    /// (for a timer clocked apart from `now`'s clock); the tick then
    /// advances by a period. A due event or hrtick is cleared (an hrtick
    /// only when due: it is the end of a slice, not to be taken early).
    pub fn expire(&self, cpu: CpuId, now: u64, slack_64ths: u64) -> TimerDue {
        let period = self.period.load(Ordering::Relaxed);
        let slack = period / 64 * slack_64ths;
        let tick = self.tick[cpu.index()].load(Ordering::Relaxed);
        let tick_due = period != 0 && tick != 0 && now.saturating_add(slack) >= tick;
        if tick_due {
            if now >= tick.saturating_add(period) {
                let [late, merged, misarmed] = &self.late[cpu.index()];
                late.fetch_add(1, Ordering::Relaxed);
                merged.fetch_add((now - tick) / period, Ordering::Relaxed);
                if self.armed[cpu.index()].load(Ordering::Relaxed) > tick {
                    misarmed.fetch_add(1, Ordering::Relaxed);
                }
            }
            let mut next = tick + period;
            if next <= now {
                next = next_grid_point(now, period);
            }
            self.tick[cpu.index()].store(next, Ordering::Relaxed);
        }
        let event_due = now >= self.event[cpu.index()].load(Ordering::Relaxed);
        if event_due {
            self.event[cpu.index()].store(u64::MAX, Ordering::Relaxed);
        }
        let hrtick_due = now >= self.hrtick[cpu.index()].load(Ordering::Relaxed);
        if hrtick_due {
            self.hrtick[cpu.index()].store(u64::MAX, Ordering::Relaxed);
        }
        TimerDue {
            tick: tick_due,
            event: event_due,
            hrtick: hrtick_due,
        }
    }

    /// [`TimerDeadlines::next`], recorded as what `cpu`'s hardware is armed
    /// for: the arch code arms its timer with this.
    pub fn arm(&self, cpu: CpuId) -> u64 {
        let at = self.next(cpu);
        self.armed[cpu.index()].store(at, Ordering::Relaxed);
        at
    }

    /// What `cpu`'s hardware was last armed for ([`TimerDeadlines::arm`];
    /// `u64::MAX`: disarmed). For the arch timers' `program_if_earlier`.
    pub fn armed(&self, cpu: CpuId) -> u64 {
        self.armed[cpu.index()].load(Ordering::Relaxed)
    }

    /// `cpu`'s late ticks so far.
    pub fn tick_stats(&self, cpu: CpuId) -> TickStats {
        let [late, merged, misarmed] = self.late[cpu.index()]
            .each_ref()
            .map(|a| a.load(Ordering::Relaxed));
        TickStats {
            late,
            merged,
            misarmed,
        }
    }

    /// When `cpu`'s timer must fire next: the earliest of its tick, its
    /// event and its hrtick, `u64::MAX` for none.
    pub fn next(&self, cpu: CpuId) -> u64 {
        let tick = match self.tick[cpu.index()].load(Ordering::Relaxed) {
            0 => u64::MAX,
            t => t,
        };
        tick.min(self.event[cpu.index()].load(Ordering::Relaxed))
            .min(self.hrtick[cpu.index()].load(Ordering::Relaxed))
    }
}

/// The first whole multiple of `period` after `now` (`period` > 0).
fn next_grid_point(now: u64, period: u64) -> u64 {
    (now / period + 1) * period
}
