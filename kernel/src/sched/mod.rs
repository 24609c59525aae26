//! The kernel's scheduler core, the glue between kernel threads and the
//! `sched` crate on many CPUs (Linux's `kernel/sched/core.c`, split the same
//! way: [`switch`], [`wakeup`], [`tick`] (and balancing), [`preempt`],
//! [`idle`], [`attr`]ibutes, [`stats`](mod@stats)):
//! `schedule()`, `try_to_wake_up()`, the tick, load balancing, affinity and
//! preemption (on return from interrupt, at `preempt_enable()`, at
//! `cond_resched()`), following Linux's `core.c`.
//!
//! # Runqueues
//! One [`sched::smp::Scheduler`] ([`sched()`]) holds a runqueue per CPU the
//! firmware describes, each behind its own lock, with a capacity of the thread
//! table size. Each CPU works on its own runqueue; other CPUs touch it to wake
//! (only with NO_TTWU_QUEUE), to inspect, to change a thread's parameters or
//! affinity, and to balance (the balancer pulls from the busiest CPU under
//! `double_rq_lock`).
//!
//! # Locks and their order
//! `wait queue -> timer list -> thread pi_lock -> runqueue (two runqueues in
//! CPU order) -> wake list`. A thread's `pi_lock` (Linux's `p->pi_lock`)
//! serialises its wakeups and every operation that must find where its
//! scheduler state is ([`task_rq_lock`](Scheduler::task_rq_lock)). The runqueue lock is taken with
//! interrupts masked (the Scheduler's platform masks them).
//!
//! # Where a thread's scheduler state is
//! The scheduler's, from spawn to exit (the `sched` crate's task
//! lifecycle): in the runqueue of `Scheduler::task_cpu` (queued, running,
//! or asleep, its state kept there), or for a moment on a wake list on its
//! way to another CPU. The kernel never holds it: it spawns
//! (`Scheduler::spawn`), switches (`Scheduler::schedule` with what the
//! running thread does: stays, yields, sleeps or exits), wakes
//! (`Scheduler::wake`, whatever the state), changes parameters and
//! affinity, and reads copies. Every move of a thread to another CPU is
//! reported under the destination runqueue's lock (`Platform::set_task_cpu`),
//! which keeps `thread.cpu` right; `Scheduler::task_rq_lock` finds the
//! runqueue that holds a thread without searching.
//!
//! # The switch and `on_cpu`
//! The runqueue lock is held across the context switch and released by the
//! thread switched to (`finish_task_switch`, after it cleared the previous
//! thread's `on_cpu` with Release). Every operation that moves a thread's
//! state to another CPU (a wakeup that places it elsewhere, balancing, an
//! affinity change) first locks the runqueue that holds it, so it only
//! ever sees a previous thread whose registers are saved: a thread is never
//! running on two CPUs at once. A thread that stays runnable but may no
//! longer run here (its affinity changed) is taken off the queue by the
//! switch and queued on an allowed CPU by `finish_task_switch`.
//!
//! # Wakeups (`try_to_wake_up`)
//! Under the wakee's `pi_lock`: if it is not `ThreadState::Sleeping`, nothing to do;
//! otherwise mark it running and call `Scheduler::wake`, which re-queues a
//! thread still on its runqueue in place, places a blocked one
//! (`select_task_rq`, this CPU being the waker's) and queues it: locally at
//! once, remotely on that CPU's wake list with an IPI (TTWU_QUEUE) or by
//! locking the remote runqueue (NO_TTWU_QUEUE). Every `schedule()`, tick and
//! reschedule IPI drains the local wake list (`sched_ttwu_pending`) under
//! the local runqueue lock. A need-resched raised on another CPU's runqueue
//! is mirrored into that CPU's per-CPU flag and sends an IPI only when it is
//! immediate (`kick_if_needed`); a lazy one waits for that CPU's tick.
//!
//! # Idle polling
//! An idle CPU polls for [`IDLE_POLL_NS`] before it halts, with its per-CPU
//! `polling` flag set. A reschedule "IPI" to it ([`KernelPlatform`]) then
//! only raises its `poll_kick` (Linux's `TIF_POLLING_NRFLAG`): waking a
//! halted CPU is what makes cross-CPU ping-pongs slow under emulation. The
//! sender raises the kick before it reads `polling`; the idle thread never
//! clears a kick when it starts polling (see [`poll`]), clears `polling`
//! before it reads the kick one last time, and `__schedule` clears
//! it before it drains the wake list when the idle thread leaves (also when
//! an interrupt preempted it while polling), so a kick is never left
//! unseen: either the idle thread sees it, or the sender sees `polling`
//! clear and sends the IPI.
//!
//! # Balancing and affinity
//! Each CPU's tick, after it released its runqueue lock, runs the periodic
//! balance (`rebalance_domains(cpu, now)`) once a domain level's interval
//! has passed (Linux's `sched_balance_trigger` and `sched_balance_domains`:
//! the span weight in ms, 16 times that while the CPU is busy, longer while
//! the level stays balanced); the idle thread runs `load_balance(cpu, true)`
//! once each time it is switched in (newidle).
//!
//! # Tickless idle
//! With [`NOHZ_IDLE`] (boot argument `nohz=on`, the default) an idle CPU
//! other than CPU 0 stops its tick when it halts; timer events (sleepers)
//! and IPIs still wake it, and `__schedule` restarts the tick when the idle
//! thread leaves. A tickless CPU no longer balances on its own, so a busy
//! CPU's balancing tick with two or more runnable tasks (or a misfit, or
//! with more than one CPU of its LLC busy) kicks a tickless CPU to run the
//! tickless CPUs' periodic idle balance (`nohz_balance_kick`, after Linux's
//! `nohz_balancer_kick`; `tick::nohz_idle_balance`, Linux's
//! `_nohz_idle_balance`), not a newidle one, which NI_RANDOM may skip and
//! which never lets a cache-hot task move. [`set_affinity`] uses `Scheduler::set_cpus_allowed`; a thread
//! still running where it may no longer run is asked to reschedule, and
//! `schedule()` takes it off the runqueue before switching away and
//! `finish_task_switch` queues it on an allowed CPU once it is off this one
//! (`Scheduler::finish_switch`). New threads go through `Scheduler::spawn`
//! (fork balancing within their mask).
//!
//! After every scheduler call the runqueue's need-resched state is mirrored
//! into the per-CPU atomic that interrupt exit and `preempt_enable` read
//! without the lock. Nothing here allocates after [`init_sched`].
//!
//! # Preemption models (`kernel.sched_preempt`, boot `preempt=`)
//! - none: switches only when a thread blocks, yields, exits or calls
//!   `schedule()`; `cond_resched()` does nothing (stricter than Linux, whose
//!   `none` still honours it: here it is what tells `voluntary` apart);
//! - voluntary: plus at explicit `cond_resched()` points;
//! - full: also on return from interrupt and at the end of a preempt-disabled
//!   or spinlocked section, when an immediate reschedule is pending;
//! - lazy: as full, but fair-class requests are lazy and only become immediate
//!   at the next tick (the `sched` crate does that); `cond_resched()` is a no-op.
//!
//! In every model, the end of a workload's modelled syscall
//! ([`exit_to_user_mode`], Linux's return to user space) takes any pending
//! request, lazy ones included (`sched::preempt` has the table).

mod attr;
pub mod debug;
mod idle;
// The idle-poll kick protocol, for the test that races its two sides.
pub(crate) use idle::poll;
mod preempt;
pub mod schedstats;
mod stats;
// The context switch (kernel-hal's `context`), with the runqueue lock
// handed to the thread switched to.
mod switch;
mod tick;
mod wakeup;

pub use attr::*;
pub use idle::*;
pub use preempt::*;
pub use stats::*;
pub use switch::*;
pub use tick::*;
pub use wakeup::*;

use ::core::ops::{Deref, DerefMut};
use ::core::sync::atomic::Ordering;
use alloc::sync::Arc;

use ::sched::smp::{Platform, RqGuard, Scheduler};
use ::sched::{CpuMask, PreemptMode, Rq, SchedConfig, TaskId, Topology};

use crate::arch;
use crate::percpu::{self, CpuId, MAX_CPUS};
use crate::task::{thread, Thread, MAX_THREADS};

/// The [`Platform`] of the kernel: interrupt masking and reschedule IPIs
/// through the arch layer.
pub struct KernelPlatform;

impl Platform for KernelPlatform {
    fn cpu_relax(&self) {
        arch::cpu_relax();
    }

    fn wake_placement(
        &self,
        rule: ::sched::smp::AffineRule,
        pick: ::sched::smp::SisPick,
        local: bool,
    ) {
        // Off (the default): one relaxed load and a branch on the wakeup
        // path.
        if schedstats::schedstat_enabled() {
            wakeup::count_placement(rule, pick, local);
        }
    }

    /// The per-domain counters (`schedstat`'s `lb_*`, `alb_*` and
    /// `ttwu_*`) follow the schedstats switch, as the kernel's wakeup
    /// counters do.
    fn schedstat_enabled(&self) -> bool {
        schedstats::schedstat_enabled()
    }

    fn irq_save(&self) -> bool {
        let was = arch::irqs_enabled();
        arch::irq_disable();
        was
    }

    fn irq_restore(&self, was_enabled: bool) {
        if was_enabled {
            arch::irq_enable();
        }
    }

    fn now_ns(&self) -> u64 {
        arch::now_ns()
    }

    fn send_resched_ipi(&self, cpu: CpuId) {
        let pc = percpu::cpu(cpu);
        pc.liveness.signalled(arch::now_ns());
        if !poll::kick(&pc.poll_kick, &pc.polling) {
            pc.ipis_elided.fetch_add(1, Ordering::Relaxed);
            return;
        }
        pc.ipis_sent.fetch_add(1, Ordering::Relaxed);
        arch::send_ipi(cpu, arch::IpiKind::Reschedule);
    }

    /// HRTICK: the scheduler's one-shot timer, a third deadline of the arch
    /// timer beside the tick and the sleepers' event. For another CPU (a
    /// remote enqueue) that CPU is sent a reschedule IPI, whose handler
    /// arms its timer (Linux sends `hrtick_csd`). Nothing here allocates.
    fn hrtick_start(&self, cpu: CpuId, expires_ns: u64) {
        if arch::timer_set_hrtick(cpu, Some(expires_ns)) {
            percpu::cpu(cpu).liveness.signalled(arch::now_ns());
            arch::send_ipi(cpu, arch::IpiKind::Reschedule);
        }
    }

    /// A cancel needs no IPI: a remote CPU's timer that still fires finds
    /// its runqueue's timer cancelled and does nothing.
    fn hrtick_cancel(&self, cpu: CpuId) {
        let _ = arch::timer_set_hrtick(cpu, None);
    }

    /// A thread allowed only on CPUs that went offline may run anywhere now
    /// (the scheduler's `select_fallback_rq`; no runqueue lock is held, but
    /// possibly an interrupt handler's locks: a timer's wakeup): its mask
    /// follows, and Linux's line is queued for [`flush_affinity_log`].
    fn affinity_broken(&self, id: TaskId, cpu: CpuId) {
        thread(id.0)
            .cpus_allowed
            .store(&CpuMask::all(), Ordering::Relaxed);
        AFFINITY_LOG.lock().push(id.0, cpu);
    }

    /// The thread's `cpu` follows the scheduler (under the destination
    /// runqueue's lock); a move is a `sched_migrate_task` trace event.
    fn set_task_cpu(&self, id: TaskId, cpu: CpuId) {
        let t = thread(id.0);
        let orig = t.cpu.swap(cpu.as_u32(), Ordering::AcqRel) as usize;
        if let Some(orig) = CpuId::new(orig).filter(|&o| o != cpu) {
            crate::trace::sched_migrate_task(id.0, t.prio.load(Ordering::Relaxed), orig, cpu);
        }
    }
}

pub(crate) static SCHED: spin::Once<Scheduler<KernelPlatform>> = spin::Once::new();

/// "no longer affine" lines waiting to be printed: the wakeup that breaks
/// an affinity may run in an interrupt handler, where the console's
/// framebuffer lock may not be taken.
static AFFINITY_LOG: kernel_hal::sync::SpinLock<AffinityLog> =
    kernel_hal::sync::SpinLock::named("affinity_log", AffinityLog::new());

/// Lines kept for [`flush_affinity_log`]; beyond that they are counted.
const AFFINITY_LOG_LEN: usize = 16;

struct AffinityLog {
    lines: [(u32, CpuId); AFFINITY_LOG_LEN],
    len: usize,
    /// Lines not kept (the buffer was full) or left out by the rate limit.
    dropped: u64,
    /// The rate limit's window start (ns) and lines printed in it: Linux's
    /// `printk_ratelimit()`, 10 lines per 5 s.
    window_ns: u64,
    printed: u32,
}

impl AffinityLog {
    const fn new() -> Self {
        AffinityLog {
            lines: [(0, CpuId::BOOT); AFFINITY_LOG_LEN],
            len: 0,
            dropped: 0,
            window_ns: 0,
            printed: 0,
        }
    }

    fn push(&mut self, idx: u32, cpu: CpuId) {
        if self.len < AFFINITY_LOG_LEN {
            self.lines[self.len] = (idx, cpu);
            self.len += 1;
        } else {
            self.dropped += 1;
        }
    }
}

/// Prints the queued "process P (NAME) no longer affine to cpuN" lines
/// (Linux's `select_fallback_rq`), at most 10 per 5 s as Linux's
/// `printk_ratelimit()`, then how many were left out. From thread context
/// or an idle loop, not from an interrupt handler.
pub fn flush_affinity_log() {
    let (lines, n, dropped) = {
        let mut log = AFFINITY_LOG.lock();
        if log.len == 0 {
            return;
        }
        let now = arch::now_ns();
        if log.window_ns == 0 || now.saturating_sub(log.window_ns) >= 5_000_000_000 {
            log.window_ns = now.max(1);
            log.printed = 0;
        }
        let room = 10u32.saturating_sub(log.printed) as usize;
        let n = log.len.min(room);
        log.printed += n as u32;
        log.dropped += (log.len - n) as u64;
        let dropped = if n > 0 {
            core::mem::take(&mut log.dropped)
        } else {
            0
        };
        let lines = log.lines;
        log.len = 0;
        (lines, n, dropped)
    };
    for &(idx, cpu) in &lines[..n] {
        log::warn!(
            "process {} ({}) no longer affine to cpu{}",
            idx,
            thread(idx).name(),
            cpu
        );
    }
    if dropped > 0 {
        log::warn!("{dropped} more 'no longer affine' lines left out");
    }
}

/// The machine's scheduler (per-CPU runqueues).
pub fn sched() -> &'static Scheduler<KernelPlatform> {
    SCHED.get().expect("scheduler not initialised")
}

/// The scheduler configuration every runqueue shares.
pub fn sched_config() -> &'static Arc<SchedConfig> {
    &sched().cfg
}

/// The current preemption model.
pub fn preempt_mode() -> PreemptMode {
    SCHED
        .get()
        .map_or(PreemptMode::None, |s| s.cfg.tunables.preempt_mode())
}

/// Creates the scheduler with one runqueue per CPU the firmware describes and
/// puts this (the boot) CPU online. `capacity`: `cpu_capacity=`'s raw
/// values, over the firmware's ([`machine_topology`]). Call once on the boot
/// CPU after [`crate::task::init`]; the other CPUs call [`cpu_online`] when they
/// start.
pub fn init_sched(cfg: Arc<SchedConfig>, capacity: Option<&[u32]>) {
    let ncpus = arch::cpu_count().clamp(1, MAX_CPUS);
    SCHED.call_once(|| {
        let topo = machine_topology(ncpus, capacity);
        let s = Scheduler::with_topology(KernelPlatform, cfg, topo, MAX_THREADS);
        // Every runqueue and wake list sized now for as many threads as can
        // exist, so that nothing allocates later under a runqueue lock with
        // interrupts masked: no more than the thread table holds, nor than
        // the heap has room for stacks (a spawn without room for its stack
        // fails). A heap too small even for that halves it, with a warning.
        //
        // That is ncpus x threads slots in all: with many CPUs it must not
        // take the heap the per-CPU lists, stacks and threads need. The
        // cost of a slot is measured on a first reservation (ncpus per CPU,
        // needed anyway), and the total kept to half the heap.
        let (used, free) = crate::heap::stats();
        let mut want = MAX_THREADS.min((used + free) / crate::task::STACK_SIZE + ncpus);
        if s.try_reserve(ncpus).is_ok() {
            let (used_after, _) = crate::heap::stats();
            let per_slot = (used_after.saturating_sub(used) / (ncpus * ncpus)).max(1);
            let fits = (used + free) / 2 / (per_slot * ncpus);
            if fits < want {
                want = fits.max(ncpus);
                log::info!(
                    "sched: {ncpus} runqueues of {want} threads ({per_slot} bytes each) fit in half the heap"
                );
            }
        }
        while s.try_reserve(want).is_err() && want > ncpus {
            want /= 2;
            log::warn!("sched: heap too small for the runqueues, reserving {want} threads per CPU");
        }
        s
    });
    cpu_online(arch::cpu_id());
}

/// The machine as the scheduler sees it: each CPU's core and last-level
/// cache from the firmware (`arch::cpu_topology_ids`: x86_64 CPUID and APIC
/// ids, aarch64 the devicetree's cpu-map) when it places every CPU, else
/// every CPU its own core in one LLC (flat); one node. Capacities from
/// `cpu_capacity=` (one value per CPU) or else from the firmware
/// (`arch::cpu_capacity_dmips_mhz`), used only when every CPU has one, as
/// Linux does (`topology_parse_cpu_capacity`); otherwise every CPU is 1024.
fn machine_topology(ncpus: usize, capacity: Option<&[u32]>) -> Topology {
    let base = firmware_topology(ncpus).unwrap_or_else(|| Topology::flat(ncpus));
    log::info!("sched: topology: {}", TopologyLine(&base));
    let mut from_dt = [0u32; MAX_CPUS];
    let (raw, source) = match capacity {
        Some(raw) if raw.len() == ncpus => (raw, "cpu_capacity="),
        Some(raw) => {
            log::warn!(
                "sched: cpu_capacity= lists {} CPU(s), the machine has {ncpus}: ignored",
                raw.len()
            );
            return base;
        }
        None => {
            for (cpu, slot) in CpuId::range(ncpus).zip(&mut from_dt) {
                *slot = arch::cpu_capacity_dmips_mhz(cpu).unwrap_or(0);
            }
            let given = from_dt[..ncpus].iter().filter(|&&c| c != 0).count();
            if given == 0 {
                return base;
            }
            if given < ncpus {
                log::warn!(
                    "sched: capacity-dmips-mhz on {given} of {ncpus} CPUs: partial information, every CPU 1024"
                );
                return base;
            }
            (&from_dt[..ncpus], "capacity-dmips-mhz")
        }
    };
    match base.clone().with_capacities(raw) {
        Ok(t) => {
            log::info!(
                "sched: CPU capacities from {source}: {}{}",
                CapacityList(&t),
                if t.has_asym_capacity() {
                    " (asymmetric)"
                } else {
                    ""
                }
            );
            t
        }
        Err(e) => {
            log::warn!("sched: {source}: {e}: every CPU 1024");
            base
        }
    }
}

/// The firmware's topology, if it places every CPU (and the places nest).
fn firmware_topology(ncpus: usize) -> Option<Topology> {
    let mut core = [0u32; MAX_CPUS];
    let mut llc = [0u32; MAX_CPUS];
    for cpu in CpuId::range(ncpus) {
        let ids = arch::cpu_topology_ids(cpu)?;
        (core[cpu.index()], llc[cpu.index()]) = (ids.core, ids.llc);
    }
    let node = [0u32; MAX_CPUS];
    match Topology::from_ids(&core[..ncpus], &llc[..ncpus], &node[..ncpus]) {
        Ok(t) => Some(t),
        Err(e) => {
            log::warn!("sched: the firmware's CPU topology is refused ({e}): flat");
            None
        }
    }
}

/// A topology in one line: cores, threads, LLCs, and CPU 0's domains.
struct TopologyLine<'a>(&'a Topology);

impl ::core::fmt::Display for TopologyLine<'_> {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        let t = self.0;
        let n = t.nr_cpus();
        let cores = CpuId::range(n)
            .filter(|&c| t.smt_mask(c).first_cpu() == Some(c))
            .count();
        let llcs = CpuId::range(n)
            .filter(|&c| t.llc_mask(c).first_cpu() == Some(c))
            .count();
        write!(
            f,
            "{n} CPU(s), {cores} core(s), {llcs} LLC(s); cpu0's domains:"
        )?;
        let doms = ::sched::domain::build_domains(t);
        if doms[0].as_slice().is_empty() {
            f.write_str(" none")?;
        }
        for sd in doms[0].as_slice() {
            write!(f, " {} {}", sd.level.name(), sd.weight)?;
        }
        Ok(())
    }
}

/// A topology's capacities, CPU 0 first, separated by spaces.
struct CapacityList<'a>(&'a Topology);

impl ::core::fmt::Display for CapacityList<'_> {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        for cpu in CpuId::range(self.0.nr_cpus()) {
            if cpu != CpuId::BOOT {
                f.write_str(" ")?;
            }
            write!(f, "{}", self.0.capacity_of(cpu))?;
        }
        Ok(())
    }
}

/// Marks `cpu` (this CPU) as running the scheduler.
pub fn cpu_online(cpu: CpuId) {
    debug_assert_eq!(cpu, arch::cpu_id());
    {
        let mut rq = lock_rq(cpu);
        let now = arch::now_ns();
        rq.update_rq_clock(now);
        percpu::cpu(cpu).account_switch(now, false, true);
    }
    percpu::set_online(cpu);
}

/// CPUs running the scheduler (kept with the per-CPU blocks).
pub fn online_mask() -> CpuMask {
    percpu::online_mask()
}

/// Runqueues of the scheduler (CPUs the firmware describes).
pub(crate) fn nr_rqs() -> usize {
    SCHED.get().map_or(0, |s| s.nr_cpus())
}

/// A locked runqueue of the kernel: the Scheduler's guard (interrupts masked)
/// whose drop first mirrors the need-resched state into the CPU's flag.
pub struct RqLock {
    g: Option<RqGuard<'static, KernelPlatform>>,
    cpu: CpuId,
}

impl Deref for RqLock {
    type Target = Rq;
    fn deref(&self) -> &Rq {
        self.g.as_ref().expect("held until drop")
    }
}

impl DerefMut for RqLock {
    fn deref_mut(&mut self) -> &mut Rq {
        self.g.as_mut().expect("held until drop")
    }
}

impl Drop for RqLock {
    fn drop(&mut self) {
        if let Some(g) = self.g.take() {
            let pc = percpu::cpu(self.cpu);
            if self.cpu == arch::cpu_id() {
                pc.mirror_need_resched(&g);
            } else {
                pc.raise_need_resched(g.need_resched());
            }
            drop(g);
        }
    }
}

/// Locks CPU `cpu`'s runqueue and brings its clock up to date.
pub(crate) fn lock_rq(cpu: CpuId) -> RqLock {
    let mut g = sched().cpu_rq(cpu);
    g.update_rq_clock(arch::now_ns());
    RqLock { g: Some(g), cpu }
}

/// Runs `f` on this CPU's runqueue, under its lock.
pub fn with_rq<R>(f: impl FnOnce(&mut Rq) -> R) -> R {
    // Interrupts off first: the CPU read is then the one whose lock we take.
    let irq = arch::IrqGuard::save();
    let r = {
        let mut rq = lock_rq(arch::cpu_id());
        f(&mut rq)
    };
    drop(irq);
    r
}

/// Runs `f` on CPU `cpu`'s runqueue, under its lock (`cpu_rq(cpu)`), for
/// inspection (`ps`, `sched_debug`) and remote operations.
pub fn with_cpu_rq<R>(cpu: CpuId, f: impl FnOnce(&mut Rq) -> R) -> R {
    let mut rq = lock_rq(cpu);
    f(&mut rq)
}

/// CPUs running the scheduler.
pub fn nr_cpus() -> usize {
    online_mask().weight()
}

/// Sets the current thread's state (`set_current_state`): `ThreadState::Sleeping`
/// before checking a wait condition, `ThreadState::Running` after.
#[inline]
pub fn set_current_state(state: crate::task::ThreadState) {
    set_state_of_current(crate::task::current(), state);
}

/// [`set_current_state`] for a caller that already holds the current
/// thread `t` (the wait queues): no second look-up of the CPU's current
/// thread (an interrupt-masked per-CPU read and a bounds-checked index).
#[inline]
pub fn set_state_of_current(t: &crate::task::Thread, state: crate::task::ThreadState) {
    debug_assert!(
        core::ptr::eq(t, crate::task::current()),
        "set_state_of_current on a thread that is not the current one"
    );
    debug_assert!(
        state != crate::task::ThreadState::Sleeping || !t.in_user_mode(),
        "thread '{}' blocks in its modelled user code (run_in_user_mode)",
        t.name()
    );
    t.state.store(state, Ordering::SeqCst);
}

/// Where the scheduler keeps thread `t` (`None`: an idle thread, or not
/// spawned / exited).
pub fn task_cpu(t: &Thread) -> Option<CpuId> {
    SCHED.get()?.task_cpu(TaskId(t.idx()))
}

/// Whether a wakeup is carrying `t` to its CPU (lock-free, for dumps).
pub fn task_in_transit(t: &Thread) -> bool {
    SCHED.get().is_some_and(|s| s.in_transit(TaskId(t.idx())))
}

/// Whether `cpu`'s wake list holds wakeups (lock-free flag, for dumps).
pub fn wake_list_pending(cpu: CpuId) -> bool {
    SCHED.get().is_some_and(|s| s.wake_pending_flag(cpu))
}
