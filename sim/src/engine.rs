//! The discrete-event engine: virtual CPUs running `sched::smp::Scheduler`
//! through the same [`Platform`] trait the kernel implements.
//!
//! Events sit in a calendar queue (`Calendar`) ordered by (virtual ns,
//! kind, argument): events of one instant are taken by kind (burst ends,
//! ticks, IPIs, timers, HRTICK) and then by CPU or task, whatever order
//! they were queued in (only a stale copy of an event can tie with it
//! entirely; those go in the order queued), so a run is a pure function of
//! (machine, configuration, workload, seed), and the place of an event in
//! the order follows from the event alone (which batching needs: see
//! "Batching"). Events: a CPU's burst ends, a
//! CPU's tick, a reschedule IPI arrives, a sleeper's timer fires, a CPU's
//! one-shot scheduler timer fires (HRTICK).
//!
//! # How the kernel is mirrored (`kernel/src/sched/`)
//! The engine drives `sched::smp::Scheduler`'s task lifecycle with the calls
//! the kernel makes, in the kernel's order; the scheduler, not the engine,
//! keeps every task's state (where it is, its `SchedTask` while it sleeps).
//! - **Spawn**: `Scheduler::spawn` from CPU 0 (`wake_up_new_task`: fork
//!   balancing), as `kernel/src/sched/wakeup.rs` `wake_up_new`.
//! - **Wakeups** ([`Kernel::wake`]): `Scheduler::wake(id, wf, this_cpu)`,
//!   as the kernel's `try_to_wake_up` once its own sleep state says the task
//!   sleeps: a task its runqueue still holds (dequeue delayed) is re-queued
//!   in place; a sleeper is placed (`select_task_rq(.., wf | TTWU)`) and
//!   queued (`ttwu_queue`: local enqueue, or the target's wake list plus an
//!   IPI with TTWU_QUEUE).
//! - **IPIs** the scheduler sends through [`Platform::send_resched_ipi`]
//!   become events [`Costs::ipi_ns`](crate::machine::Costs) later (plus the
//!   idle-exit latency if the target is idle); the handler drains the wake list
//!   (`sched_ttwu_pending`) and, if the CPU is idle or the model preempts at
//!   interrupt exit (full, lazy), reschedules.
//! - **Schedule**: `Scheduler::schedule(rq, action)` with the running task's
//!   `PrevAction` (stays, sleeps, exits), then `Scheduler::finish_switch`
//!   (`kernel/src/sched/switch.rs`); a CPU that finds nothing runs a newidle
//!   `load_balance(cpu, true)` (the kernel's idle thread) and, if it pulled a
//!   task, schedules again.
//! - **Tick** every `1/HZ` on busy CPUs (idle CPUs stop it, as with
//!   `nohz=on`): `task_tick`, the interrupt's exit (below), the periodic
//!   balance `rebalance_domains(cpu, now)` (the levels whose interval
//!   passed), and every [`BALANCE_TICKS`] ticks staggered by CPU the nohz
//!   kick: a busy CPU
//!   with two or more runnable tasks, or a misfit on a machine of unequal
//!   CPUs, or with more than one CPU of its LLC busy, has an idle CPU (for
//!   the misfit, a bigger one) run the idle CPUs' periodic balance as the
//!   idle load balancer (`nohz_balance_kick`, `nohz_idle_balance`;
//!   `--no-ilb-kick`: the two-task and misfit kick sends an IPI for a
//!   newidle balance, the model before). The pass runs when the kick's IPI
//!   reaches the kicked CPU, which then runs no task for the IPI's receive
//!   cost and goes back to sleep unless it pulled a task for itself
//!   (`Kernel::ilb_arrive`; `--no-ilb-ipi`: the pass at the kick's
//!   instant, the kicked CPU charged nothing). `task_tick` is followed by
//!   `Scheduler::tick_misfit` (`update_misfit_status`). On `qemu:N` the
//!   tick's interrupt costs its measured time
//!   ([`Machine::tick_irq_ns`](crate::machine::Machine)), overhead of the
//!   task that runs after it (`Kernel::tick_irq_cost`); `--no-irq-cost`.
//!   So do an HRTICK expiry on a busy CPU (`Machine::hrtick_irq_ns`,
//!   `--no-hrtick-cost`) and an IPI taken by a busy CPU
//!   (`Machine::ipi_irq_ns`, `--no-ipi-cost`); with
//!   `Mechanisms::irq_split` (`--no-irq-split`) the interrupted task's
//!   runtime holds each one's part before its decisions at them and the
//!   rest before the exit's switch (`Kernel::irq_begin`,
//!   `Kernel::irq_handler_end`, `Kernel::irq_overhead`).
//! - **Capacity** ([`Machine::speed`](crate::machine::Machine), the
//!   `asym:` presets): a task's bursts are work at capacity 1024; a CPU of
//!   capacity `c` does `c/1024` ns of it per ns, in `Kernel::charge`,
//!   when a burst's end is armed and when a batch is planned
//!   ([`Kernel::run_time_ns`]), so a batch on a little CPU plans the
//!   stretched steps the unbatched run takes. Overheads (switch, cache
//!   refill) stretch alike.
//! - **HRTICK**: the one-shot per-CPU timer the scheduler arms and cancels
//!   through [`Platform::hrtick_start`] / `hrtick_cancel` is an event at the
//!   time asked for (a later request or a cancel makes a pending one stale);
//!   it calls `Rq::hrtick`, then the interrupt's exit, as the tick.
//! - **Preemption models** (`sched::preempt`'s table, asked with the
//!   kernel's calls): a [`Next::Run`] or [`Next::RunUser`] burst starts
//!   with a return to user space, where every
//!   model honours any pending reschedule, lazy or immediate (Linux's
//!   `exit_to_user_mode_loop` tests both bits). A burst that goes on inside
//!   the kernel ([`Next::RunKernel`]: a syscall's entry, a spin on a lock,
//!   a waker's own wakeup cost before it blocks) starts at a kernel
//!   preemption point instead: an immediate request, under full or lazy.
//! - **A wakeup inside its syscall** (`Mechanisms::wake_unlock`, on
//!   `qemu:N`, the only presets where a wakeup costs its waker time): a
//!   step's wakeups are made at its burst's end, and what they cost the
//!   waker ([`Costs::wake_ns`](crate::machine::Costs), `ipi_send_ns`,
//!   `scan_cpu_ns`) is then a burst with interrupts off, Linux's
//!   `try_to_wake_up` under the wait queue's `spin_lock_irqsave`
//!   (`__wake_up_sync_key` from `sock_def_readable` or `pipe_write`):
//!   no preemption point at its start, and an interrupt's exit in it
//!   (an HRTICK expiry, the tick, an IPI) preempts nobody
//!   ([`UnlockCounters::deferred_irqs`]). Its end is the
//!   `spin_unlock_irqrestore`, a kernel preemption point: the wakeup's
//!   own immediate request (full) or a deferred interrupt's (an HRTICK's
//!   is hard under lazy too) switches there, with the scheduler's clock
//!   skip giving the window to the wakee; then the step's next burst
//!   starts as it would have (a return to user space takes a lazy
//!   request). The syscall's rest after the unlock is not split off: it
//!   is in the syscall's measured cost, before the wakeup.
//!   `--no-wake-unlock`: the cost added to the next burst, whose start at
//!   the wakeup's instant is the preemption point (the model before).
//! - **Interrupt exit** (the tick, HRTICK, an IPI, a sleeper's timer):
//!   `PreemptPoint::irq_exit(user)`, as the kernel's `irq_exit`. A task
//!   in a [`Next::RunUser`] burst (user code: the kernel's
//!   `task::run_in_user_mode`, whose per-thread mark the engine keeps per
//!   task) returns to user space there and takes any request in every model,
//!   so under lazy a lazy request made by that interrupt (a timer's
//!   wakeup, the tick's slice end) is honoured at once, as Linux's
//!   `irqentry_exit_to_user_mode` does. Any other burst (a syscall's
//!   cost, [`Next::Run`], unmarked as in the kernel) returns to kernel
//!   mode, which takes only an immediate request under full and lazy: a
//!   lazy request waits for the burst's end or the next tick (which
//!   upgrades it), and none/voluntary wait for the burst's end.
//!
//! # Batching
//! Most of a busy hackbench's events are a task's syscall ending and the
//! next starting: no scheduler call, nobody woken. With each task drawing
//! from its own random stream ([`Rng::stream`]), such a run of steps can
//! be worked out when it starts: at a burst end (`Kernel::try_batch`),
//! the workload plans the task's next *quiet* steps ([`Workload::plan`]:
//! steps that wake nobody, do not block and decide nothing differently
//! whenever within the batch their effects on shared state are made) up
//! to the first event already known for the CPU (its tick, its one-shot
//! timer, an IPI on the way), and one event is queued at the time of the
//! step after them. When it comes, the planned steps are taken at once
//! ([`Workload::take`]) and that step as usual. Anything else that comes
//! for the CPU in between splits the batch exactly there
//! (`Kernel::split`): an event of the CPU (IPI, tick, HRTICK, a timer
//! of a task it holds), or a scheduler call from another CPU that touches
//! its runqueue (a wakeup placed there or taken from there, a balancing
//! move: `Kernel::touch`, split once that event is handled if it left
//! the CPU a request to reschedule, which the task's next step reads; a task
//! switched in whose stepping a plan did not bound, because it was off its
//! CPU: [`Kernel::split_on_switch_in`], split if its
//! [`Workload::quiet_until`] does not keep the batch, or cut short
//! before the time it gives); the steps
//! before that event in the order of events ((time, kind, argument), as
//! a step's own event would have had) are taken, and the task's burst
//! ends at its own event as in the unbatched run; likewise at the run's
//! end. The output is the same byte for byte with `--no-batch`
//! ([`Machine::batch`](crate::machine::Machine)), which takes every step
//! as an event (`batching_changes_no_output` in `sim/tests/sim.rs`; the
//! digest matrix, `sim/examples/digest.rs`). Off under vCPU time sharing
//! (a burst's end moves with the other vCPUs).
//!
//! # vCPU turns (`qemu:N`)
//! QEMU's TCG under `-icount` runs all vCPUs in one host thread, round-robin.
//! The model follows the source of the QEMU on the project's machine (7.2.22,
//! Debian's `qemu 1:7.2+dfsg-7+deb12u18`): `accel/tcg/tcg-accel-ops-rr.c`
//! (`rr_cpu_thread_fn`, the kick timer), `accel/tcg/tcg-accel-ops-icount.c`
//! (`icount_prepare_for_run`, `icount_get_limit`), `accel/tcg/cpu-exec.c`
//! (`cpu_handle_halt`, `cpu_handle_interrupt`) and `accel/tcg/tcg-accel-ops.c`
//! (`tcg_handle_interrupt`):
//! - one vCPU executes at a time, visited in CPU order; a vCPU out of its
//!   turn makes no progress, while the clock (which counts the running vCPU's
//!   instructions) charges its task the time all the same;
//! - a turn's instruction budget runs to the next deadline of the virtual
//!   clock's timers, any vCPU's: a tick, HRTICK expiry or sleeper's timer
//!   that comes due ends the running turn (a busy CPU's tick, aligned on all
//!   CPUs as Linux's, caps a turn at one tick period); timers due at the
//!   instant a turn began end no turn (one instant, one deadline);
//! - a vCPU that halts (goes idle) ends its turn at once, and a halted vCPU
//!   with nothing pending is passed over in no time;
//! - an interrupt for another vCPU raised in the thread (an IPI, a timer that
//!   fired) only marks it pending: the target's thread is the running one, so
//!   nothing kicks it. An out-of-turn vCPU's resched IPI, tick, HRTICK and
//!   sleepers' timers wait for its turn and are handled as it begins (timers,
//!   HRTICK, tick, IPI: the kernel's timer interrupt runs a due HRTICK
//!   before a due tick); if no vCPU has the turn (all halted), its vCPU
//!   takes it at once;
//! - the kick timer (`TCG_KICK_PERIOD`, 100 ms of virtual time) ends a turn
//!   that no deadline ended ([`Costs::vcpu_turn_ns`](crate::machine::Costs)).
//!
//! Not modelled by default: after a turn that ends at its budget, QEMU 7.2
//! gives the next vCPU a budget of 0 (the deadline is now: it runs the
//! timers and executes nothing), and a timer reprogrammed to be the earliest
//! deadline kicks every vCPU out (`qemu_timer_notify_cb`,
//! `rr_kick_vcpu_thread`), so the turn passes on early. Both make QEMU's
//! turns uneven (the measured gaps between a vCPU's turns,
//! `crate::machine::qemu_costs`); QEMU 8.1 splits the budget between the
//! vCPUs (commit 83ecdb18eb65), which 7.2 does not.
//!
//! With `Mechanisms::qemu_rr_turns` (`sim run --qemu-rr-turns`, an
//! experiment) they are modelled (`Kernel::end_turn`,
//! `Kernel::lapic_program`): each vCPU's LAPIC one-shot is armed for the
//! earlier of its next tick and HRTICK where the kernel writes it (the
//! timer interrupt's end, `program_if_earlier` for an HRTICK, the IPI's
//! `timer_sync`); a write by the running vCPU that leaves its timer the
//! earliest of the virtual clock's kicks it, with an exit request on every
//! vCPU; the vCPU after a turn that a deadline ended gets a zero budget
//! unless it is CPU 0 or has an exit request, and the loop clears the
//! requests of the vCPUs it reaches; the kick timer is one periodic timer
//! (100 ms, stopped while every vCPU is halted) instead of a bound per
//! turn. Left out: QEMU's real-time-clock timers, which `icount_get_limit`
//! also counts (host time), and other devices' virtual timers. Against
//! `lcbench turns` it is not the measured order (docs/results/linux/three-way.md,
//! "QEMU's round-robin turn order"), so it is not the default.
//!
//! With `Mechanisms::switch_timer_kick` (`sim run --switch-timer-kick`, an
//! experiment, off by default) in either order: a context switch on the
//! running vCPU whose HRTICK arm moves its LAPIC one-shot earlier
//! (`program_if_earlier`) and leaves it the earliest of the virtual
//! clock's timers ends the turn when the vCPU reaches the write, the last
//! instant of the switch's runqueue-lock window (our kernel writes it in
//! `Scheduler::publish` before `switch_to`, Linux 7.2 in
//! `hrtick_schedule_exit` before `__schedule` unlocks), so the vCPU keeps
//! the lock out of its turn; `Kernel::lapic_program` keeps each vCPU's
//! armed one-shot for it. A turn that ends before the write is reached
//! loses the kick (a simplification). The tick's and the IPI's
//! reprogramming kick no one here (they hold no lock). Its kicks, 0.044 a
//! switch in the socket row, are near Linux 7.2's 0.023-0.035 on this
//! machine, but the 15 rows score no better with it (one opposite at 4
//! flips; docs/results/linux/lazy-rows.md), so it is not the default.
//!
//! With `Mechanisms::clock_burn` (`sim run --clock-burn`, off by
//! default) a task's step burst is burned on the guest clock, as our
//! kernel's `hackbench -C` charges were until 10010b3 (`syscall_work`;
//! they are calibrated instructions since 5b89f38): out of its turn
//! a vCPU whose task has no overhead left (a switch's, a wakeup's, a
//! sleep's or an interrupt's cost, instructions in the kernel too) and is
//! not in a wakeup's irqs-off window gets that step done by the clock, so
//! its task goes on at once when the turn comes back. Linux's syscall
//! costs are instructions, so this models the kernel's charge, not Linux.
//!
//! Without vCPU turns (`--no-vcpu-turns`) the k busy vCPUs share the rate
//! evenly and continuously, each at 1/k.
//!
//! Either turn order counts the busy vCPUs' stretches out of their turn
//! ([`TurnCounters::away_bins`]): the jumps a busy loop on the guest clock
//! sees, which the kernel's hackbench can count in its `-C` charges.
//!
//! With `Mechanisms::vcpu_pause` (the default; `--no-vcpu-pause`), in
//! either order: a `pause` in a spin wait ends a TCG vCPU's turn
//! (`helper_pause` raises `EXCP_INTERRUPT`), and since one vCPU executes
//! at a time, a spin wait that finds a lock held always finds its holder
//! out of its turn. The locks: a CPU's runqueue lock, held for the first
//! [`LockShares::switch_rq_locked_pm`](crate::machine::LockShares) of each switch
//! cost on it, and a wakeup's, the target's runqueue lock for the last
//! `wake_rq_locked_pm` of the wakeup's cost and the wakee's wait queue
//! for the first `wake_wq_locked_pm` (shares measured in the kernel,
//! `scripts/linux-compare/lockhold-probe.sh`). A vCPU whose turn ends
//! inside such a part keeps the lock until its next turn
//! (`LockWindow`); a vCPU that in its turn wakes a task onto that CPU,
//! switches on it, or takes that wait queue (a wakeup, or a socket send
//! that tests the receiver's queue, [`Kernel::wait_queue_lock`]) passes
//! the turn on after the event ([`TurnCounters::pauses`]). A window
//! belongs to the burst that pays its cost: the task's next burst that
//! sets none clears them (`Mechanisms::burst_lock_windows`;
//! `--no-burst-lock-windows`, the model before, kept them until the CPU's
//! next switch or wakeup, so the task's later bursts held the lock again).
//! Two simplifications: the waiter's step or switch is made at once (its
//! decisions are not delayed to the holder's release), and a vCPU whose
//! turn begins at that instant is not sent on. A waker that spins so in a
//! wakeup (on the target's runqueue lock, or on its wakee's switch-out
//! below) holds the wakee's wait queue from the wakeup's instant, as
//! Linux's `__wake_up_common_lock()` holds `wq_head->lock` around
//! `try_to_wake_up()`: its vCPU, out of its turn after the `pause`, keeps
//! the queue (`Mechanisms::wq_spin_hold`, the default; with
//! `--no-wq-spin-hold` the queue is held only while the wakeup's share is
//! paid, so not across the turn its spin ended). With
//! `Mechanisms::wakee_switch_wait` (the default; `--no-wakee-switch-wait`)
//! a wakeup also waits for its wakee's switch-out still under way on
//! another CPU of the LLC (Linux's spin on `p->on_cpu`, or
//! `ttwu_runnable()`'s on that runqueue's lock: the switch's runqueue-lock
//! window there, whatever CPU the wakee is then placed on;
//! [`PAUSE_WAKEE_SWITCH`]). Not modelled: the short holds (a wait queue's
//! join and leave, the tick's runqueue lock), and a switch to idle (which
//! costs nothing here, so a wakee switching out to an idle CPU, which
//! Linux queues on that CPU's wake list, is never seen mid-switch).
//! A switch after a sleep also pays the sleep's cost
//! ([`Machine::sleep_ns`](crate::machine::Machine)), and by default the
//! lock is held for the switch's measured share of the switch's own cost
//! and for the sleep's part measured under the lock in Linux
//! ([`LockShares::sleep_rq_locked_ns`](crate::machine::LockShares),
//! 3.62 us of `qemu:N`'s 5.52 us pipe sleep and 6.58 us socket sleep: the
//! dequeue and PSI's sleep part), `Mechanisms::sleep_lock_split`: Linux's
//! sleeper does its wait-queue work (`prepare_to_wait`, the socket's state
//! lock) before `__schedule()` takes the runqueue lock. Its two bounds:
//! `--no-sleep-lock-split`, the switch's share held over the whole switch
//! and sleep (the model before), and `Mechanisms::sleep_unlocked`
//! (`sim run --sleep-unlocked`, off by default), none of the sleep.
//!
//! With `Mechanisms::pipe_lock_pause` too (the default;
//! `--no-pipe-lock-pause`): a task that spins on a pipe's mutex whose
//! owner is on a CPU (the hackbench model's `mutex_spin_on_owner`) spins
//! with `pause`, and that owner's vCPU is out of its turn, so the first
//! poll ends the spinner's turn ([`Kernel::pipe_lock_spin`],
//! [`TurnCounters::pauses`]); it polls again in its next turn.
//! Before it, a spinner polled through the rest of its turn while the
//! owner, out of its turn, could not release. Our kernel's pipe lock
//! (its channel's spinlock) does the same: its waiters met a holder out
//! of its turn 158-214 times a run of `hackbench -p -g 2 -l 100 -C
//! linux`, with 1.07 `pause`s each, and waited about a round of turns
//! (0.9-1.1 ms; `scripts/linux-compare/pipelock-probe.sh`).
//!
//! # Machine noise
//! With [`Mechanisms::machine_noise`](crate::machine::Mechanisms) (the
//! study's runs; [`MachineNoise`](crate::machine::MachineNoise) has the
//! parameters), a run is a boot of its own, drawn from streams apart from
//! the tasks' and CPUs' (so the cost jitter and the workloads' draws are
//! those of the run without it): each CPU's capacity is its own times the
//! boot's whole-machine and per-CPU speed factors (the scheduler is not
//! told); the tasks are forked from a CPU, and in an order, drawn for the
//! boot; and each busy CPU takes interrupts, a Poisson stream of events
//! (`Irq`) that each add their time to the running task's overhead. An
//! interrupt is an event of its CPU: it bounds a batch as the tick does and
//! splits one it lands in. Off, nothing is drawn and a run is the run
//! from before the model, byte for byte. Each of its four parts (the
//! speeds, whole-machine and per-CPU, the interrupts, the placement) has
//! its switch (`Mechanisms::noise_boot_speed` and after it); a part off is
//! still drawn, so the others' draws stay those of the run with it.
//!
//! # Counters
//! Wakeup decisions are counted by row (`WakeupReason` / `FairWakeup`) for the
//! wakeups whose decision the caller sees (`Woke::decision`): local and
//! remote enqueues and wakeups in place (`ttwu_runnable`). A wakeup queued
//! on a remote wake list is decided when the target drains it (`sched_ttwu_pending` returns only a count), so those are
//! counted as `queued_wakeups`; `wakeup_preempts` (from `RqStats`) counts the
//! preempting decisions of every path. Buddy picks, migrations and tick
//! reschedules come from the runqueues' own counters at the end of the run.
//!
//! # Costs
//! A switched-in task first spends "overhead" time (CPU busy, no progress):
//! the context switch (thread or process: same or different address space
//! than the CPU's last one) plus cache refill after a migration or after
//! other tasks displaced its working set (see [`crate::machine`]). The
//! scheduler charges that time to the task, as Linux does.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sched::cpumask::CpuMask;
use sched::smp::{Platform, Scheduler, WakeOutcome, Woke};
use sched::CpuId;
use sched::{
    PreemptPoint, PrevAction, Resched, SchedConfig, SchedTask, TaskId, TaskParams, WakeFlags,
    WakeupDecision, WakeupReason,
};

use crate::follow::{AtDecision, Follow, KIND_OTHER, KIND_PICK, KIND_RULE};
use crate::idle::IdleCpus;
use crate::machine::Machine;
use crate::rng::{Jitter, Rng};
use crate::smt::Smt;
use sched::topology::CpuDistance;

/// A busy CPU may kick a tickless one every this many ticks (the kernel's
/// `BALANCE_TICKS`); the periodic balance runs at its intervals.
pub const BALANCE_TICKS: u64 = 4;

const NIL: u32 = u32::MAX;

/// The generation bit of a batch's event (a [`Kind::Burst`] whose
/// generation has it): stale, it is no event of the unbatched run, and is
/// dropped uncounted.
const BATCH_GEN: u32 = 1 << 31;

/// The next burst generation after `g` (the batch bit clear).
#[inline(always)]
fn next_gen(g: u32) -> u32 {
    g.wrapping_add(1) & !BATCH_GEN
}

/// The longest batch, ns: its steps' times are before its start plus this.
const BATCH_WINDOW_NS: u64 = 32_000;

/// [`Kernel::step_delay_ns`] of a task off its CPU: no bound (far beyond
/// any batch, and small enough to add to).
pub const NOT_ON_CPU_NS: u64 = u64::MAX >> 2;

/// CPU `c`'s random stream is [`Rng::stream`] id `CPU_STREAM + c` (tasks'
/// ids are below it).
const CPU_STREAM: u64 = 1 << 40;

/// Machine noise's streams are [`Rng::stream`]s of their own seed (the
/// run's seed through stream id `NOISE_STREAM`, mixed with the boot's
/// salt): id 0 the boot's draws, `1 + c` CPU `c`'s interrupts.
const NOISE_STREAM: u64 = 1 << 41;

/// Machine noise's interrupts ([`crate::machine::MachineNoise`]).
#[derive(Clone, Debug)]
struct Irqs {
    /// Each CPU's stream: arrivals and durations.
    rngs: Vec<Rng>,
    /// Mean time between arrivals on a busy CPU, ns.
    mean_gap_ns: u64,
    /// The time each steals (work at full speed), jittered.
    cost: Jitter,
}

/// Words a [`HookLog`] holds before it spills into its locked list: two
/// HRTICK arms, what a scheduler call asks for between two drains but for
/// a few (balancing, a switch after a newidle pull).
const LOG_ROOM: usize = 4;

/// What the scheduler's hooks ask of the engine between two of its
/// drains, in order: words appended by [`HookLog::append`] and read back
/// by [`HookLog::get`].
///
/// The engine is the scheduler's one caller, on one thread, and drains
/// after every scheduler call: an append is then a relaxed load and two
/// relaxed stores, no locked instruction (a `Mutex<Vec>` took an atomic
/// exchange to lock and another to unlock, at every switch's HRTICK arm).
/// It stays memory-safe if hooks ran on two threads at once, but entries
/// could then be lost. Past [`LOG_ROOM`] entries the rest go to a locked
/// list, after the others.
#[derive(Debug, Default)]
struct HookLog {
    room: [AtomicU64; LOG_ROOM],
    len: AtomicUsize,
    more: Mutex<Vec<u64>>,
}

impl HookLog {
    /// Appends `word`.
    #[inline(always)]
    fn append(&self, word: u64) {
        let n = self.len.load(Ordering::Relaxed);
        if let Some(slot) = self.room.get(n) {
            slot.store(word, Ordering::Relaxed);
        } else {
            self.more.lock().expect("hook log").push(word);
        }
        self.len.store(n + 1, Ordering::Relaxed);
    }

    /// Entries appended since the last [`HookLog::clear`].
    #[inline(always)]
    fn len(&mut self) -> usize {
        *self.len.get_mut()
    }

    /// Entry `i` (below [`HookLog::len`]).
    #[inline(always)]
    fn get(&mut self, i: usize) -> u64 {
        match self.room.get_mut(i) {
            Some(w) => *w.get_mut(),
            None => self.more.get_mut().expect("hook log")[i - LOG_ROOM],
        }
    }

    /// Empties it (keeping the spill list's room).
    #[inline(always)]
    fn clear(&mut self) {
        if *self.len.get_mut() > LOG_ROOM {
            self.more.get_mut().expect("hook log").clear();
        }
        *self.len.get_mut() = 0;
    }
}

/// An HRTICK entry's CPU word: the CPU, and this bit for an arm (the
/// expiry follows as the next word) rather than a cancel.
const HRTICK_ARM: u64 = 1 << 32;

/// The platform hooks: a shared virtual clock, a list of IPIs to deliver and
/// the one-shot timer changes (CPU, expiry; `None`: cancel) to apply.
#[derive(Debug, Default)]
pub struct SimPlatform {
    now: AtomicU64,
    any_ipi: AtomicBool,
    /// CPUs to send a resched IPI, one word each.
    ipis: HookLog,
    /// One-shot timer changes: the CPU's word (with [`HRTICK_ARM`] for an
    /// arm), then for an arm the expiry.
    hrticks: HookLog,
    /// CPUs `select_idle_sibling` looked at since the engine last read it.
    scanned: AtomicU64,
    /// Fair wakeups' placements (`Platform::wake_placement`): by the
    /// affine rule (`sched::smp::AFFINE_RULE_NAMES`), then by what
    /// `select_idle_sibling` returned (`SIS_PICK_NAMES`), then those
    /// placed on the waker's CPU: the kernel's `compare` counters
    /// `wa_*`, `sis_*` and `placed_local`. Output only.
    placement: [AtomicU64; PLACEMENT_ROWS],
}

/// Rows of [`SimPlatform`]'s placement counters ([`Kernel::placement`]).
pub use sched::smp::PLACEMENT_ROWS;

impl Platform for SimPlatform {
    fn irq_save(&self) -> bool {
        false
    }
    fn irq_restore(&self, _: bool) {}
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
    fn send_resched_ipi(&self, cpu: CpuId) {
        self.ipis.append(cpu.as_u32() as u64);
        self.any_ipi.store(true, Ordering::Relaxed);
    }
    fn hrtick_start(&self, cpu: CpuId, expires_ns: u64) {
        self.hrticks.append(cpu.as_u32() as u64 | HRTICK_ARM);
        self.hrticks.append(expires_ns);
        self.any_ipi.store(true, Ordering::Relaxed);
    }
    fn hrtick_cancel(&self, cpu: CpuId) {
        self.hrticks.append(cpu.as_u32() as u64);
        self.any_ipi.store(true, Ordering::Relaxed);
    }
    fn idle_scan(&self, cpus_visited: usize) {
        // A load and a store, not a locked add: the engine's one thread
        // calls it (see [`HookLog`]).
        let n = self.scanned.load(Ordering::Relaxed);
        self.scanned
            .store(n + cpus_visited as u64, Ordering::Relaxed);
    }
    fn wake_placement(&self, rule: sched::smp::AffineRule, pick: sched::smp::SisPick, local: bool) {
        // Loads and stores, as `idle_scan`'s.
        for row in sched::smp::placement_rows(rule, pick, local)
            .into_iter()
            .flatten()
        {
            let c = &self.placement[row];
            c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }
}

/// What a task does once its current burst of CPU work is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Return to user space (a preemption point for any request), then run
    /// this many ns of CPU work the task's model does not mark as user code
    /// (the next syscall's cost: an interrupt in it returns to kernel
    /// mode), as the kernel's workload threads outside
    /// `task::run_in_user_mode`.
    Run(u64),
    /// Return to user space, then run this many ns of user code (a compute
    /// loop between syscalls, the kernel's `task::run_in_user_mode`): an
    /// interrupt in it returns to user space and takes any request, lazy
    /// ones included, in every model (`PreemptPoint::irq_exit(true)`).
    RunUser(u64),
    /// Run this many ns of CPU work inside the kernel, which goes on
    /// afterwards (a syscall's entry, a spin on a lock): its end is a
    /// kernel preemption point (an immediate request, under full or lazy).
    RunKernel(u64),
    /// Run this many ns of kernel code that goes on from the burst before
    /// with no preemption point between them (the work after a fast-path
    /// `mutex_lock`, an uncontended `cmpxchg` with no `preempt_enable()`):
    /// a request pending at its start waits for an interrupt's exit in it
    /// or its end, which is a kernel preemption point as
    /// [`Next::RunKernel`]'s.
    RunOn(u64),
    /// Return to user space between two syscalls (a preemption point for
    /// any request, lazy too: Linux's `exit_to_user_mode_loop`) and step
    /// again: at once if the return takes nothing, else when the task runs
    /// again. The next syscall's first decision then comes after it
    /// (`Mechanisms::syscall_user_return`).
    ReturnToUser,
    /// Sleep until another task wakes it ([`Kernel::wake`]).
    Block,
    /// Sleep for this many ns (a timer wakes it, in interrupt context).
    Sleep(u64),
    /// Sleep for at least the first ns and at most their sum: a timer
    /// range (Linux's `hrtimer_set_expires_range_ns`, the second the
    /// task's timer slack). The timer fires at the range's end, or with
    /// any earlier timer interrupt of its CPU inside it (the tick, the
    /// HRTICK, another sleeper's timer: Linux's `__hrtimer_run_queues`
    /// expires by the soft deadline; `Mechanisms::timer_slack`).
    SleepRange(u64, u64),
    /// Exit.
    Exit,
}

/// A workload: the tasks' programs. The engine calls [`Workload::step`] each
/// time a task's burst completes (and once when a new task first runs).
pub trait Workload {
    /// Creates the tasks ([`Kernel::spawn`]).
    fn init(&mut self, k: &mut Kernel);
    /// Task `tid` finished its burst, on CPU `k.this_cpu()`, at `k.now`.
    /// May wake others; says what the task does next.
    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next;
    /// The results, (metric name, value, higher is better).
    fn metrics(&mut self, k: &Kernel) -> Vec<Metric>;

    /// Batching (the engine's "Batching"): task `tid`, running, has just
    /// stepped at `k.now` and its burst ends at `first_ns`. Plans its
    /// next steps, from `first_ns` on, that are *quiet* whatever the
    /// other tasks do meanwhile (each would return [`Next::Run`], with
    /// the duration drawn from its own stream [`Kernel::rng`], and wake
    /// nobody, and no decision of any task, its own included, depends on
    /// when within the batch their effects are made), and returns how
    /// many (at least one), the time of the last of them and the time of
    /// the step after them (taken as an event), which is before
    /// `before_ns`. Draws the planned steps' durations (the stream is then
    /// where the last planned step leaves it). `None` (the default) if no
    /// step is quiet.
    fn plan(&mut self, k: &mut Kernel, tid: u32, first_ns: u64, before_ns: u64) -> Option<Planned> {
        let _ = (k, tid, first_ns, before_ns);
        None
    }

    /// The times of task `tid`'s planned steps (the first at `first_ns`)
    /// and then of the step after them, onto `times`, as [`Workload::plan`]
    /// worked them out (on the CPU the task runs on, `k.this_cpu()`), up
    /// to the first one later than `until_ns`: what a split of its batch
    /// at `until_ns` needs.
    fn planned_times(
        &self,
        k: &Kernel,
        tid: u32,
        first_ns: u64,
        until_ns: u64,
        times: &mut Vec<u64>,
    ) {
        let _ = (k, tid, first_ns, until_ns, times);
        unreachable!("planned_times without a plan");
    }

    /// Takes the first `steps` of task `tid`'s planned steps (all of them,
    /// or those before a split) and drops the others: its state and its
    /// stream are then what [`Workload::step`] would have left them after
    /// those steps.
    fn take(&mut self, k: &mut Kernel, tid: u32, steps: u32) {
        let _ = (k, tid, steps);
        unreachable!("take without a plan");
    }

    /// A split of task `tid`'s batch (its first planned step at
    /// `first_ns`, `steps` of them) before `until_ns`: takes the planned
    /// steps whose times are below it ([`Workload::take`]) and returns how
    /// many, the time of the last of them (0 if none) and of the step
    /// after them. The default works them out from
    /// [`Workload::planned_times`]; a workload may walk its plan once
    /// instead (the same values, and the same state and stream after).
    fn take_before(
        &mut self,
        k: &mut Kernel,
        tid: u32,
        first_ns: u64,
        steps: u32,
        until_ns: u64,
    ) -> (u32, u64, u64) {
        let mut times = std::mem::take(&mut k.split_times);
        self.planned_times(k, tid, first_ns, until_ns, &mut times);
        let (n, prev, next) = split_point(&times, steps, until_ns);
        times.clear();
        k.split_times = times;
        self.take(k, tid, n);
        (n, prev, next)
    }

    /// Batching: task `tid` has just been switched in (in the event being
    /// handled): the time before which the batch of task `other` (one
    /// named for it, [`Kernel::split_on_switch_in`]) stays quiet whatever
    /// `tid` does from now on, ns: a batch whose event is before it is
    /// kept; one whose event is not is cut short there
    /// ([`Workload::planned_before`]) or split at the event. 0 (the
    /// default): split them all.
    fn quiet_until(&self, k: &Kernel, tid: u32, other: u32) -> u64 {
        let _ = (k, tid, other);
        0
    }

    /// Batching: the first of task `tid`'s `steps` planned steps (the first
    /// at `first_ns`) whose step after them is before `limit_ns`, as the
    /// batch they make ([`Planned`]: how many, the time of the last of them
    /// and of the step after them), their times drawn again as
    /// [`Workload::plan`] worked them out; `None` if not even one (or the
    /// default: the batch is split instead). The plan is left as it is:
    /// the batch's event takes fewer steps than planned
    /// ([`Workload::take`]), and what the steps left out counted against
    /// the others' bands until then only narrows those bands.
    fn planned_before(
        &self,
        k: &Kernel,
        tid: u32,
        first_ns: u64,
        steps: u32,
        limit_ns: u64,
    ) -> Option<Planned> {
        let _ = (k, tid, first_ns, steps, limit_ns);
        None
    }
}

/// Where a split before `until_ns` falls in a plan of `steps` steps
/// whose times, then the time of the step after them, are `times` (up to
/// the first one at or after `until_ns`): the steps before it, the time
/// of the last of them (0 if none) and of the step after them.
fn split_point(times: &[u64], steps: u32, until_ns: u64) -> (u32, u64, u64) {
    let n = times.len().min(steps as usize);
    let k = times[..n].iter().take_while(|&&t| t < until_ns).count();
    let prev = if k > 0 { times[k - 1] } else { 0 };
    (k as u32, prev, times[k])
}

/// What [`Workload::plan`] planned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Planned {
    /// Steps planned (at least one).
    pub steps: u32,
    /// The time of the last of them, ns.
    pub last_ns: u64,
    /// The time of the step after them (the batch's event), ns.
    pub end_ns: u64,
}

/// One result of a run.
#[derive(Clone, Debug)]
pub struct Metric {
    /// Name, e.g. `time_s`, `wakeup_p99_us`.
    pub name: String,
    /// Value.
    pub value: f64,
    /// Is a higher value better (throughput) or a lower (time, latency)?
    pub higher_better: bool,
}

impl Metric {
    /// A metric.
    pub fn new(name: &str, value: f64, higher_better: bool) -> Self {
        Metric {
            name: name.to_string(),
            value,
            higher_better,
        }
    }
}

/// A task's state in the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TState {
    /// Created, not yet woken.
    New,
    /// Queued or running.
    Runnable,
    /// Asleep.
    Blocked,
    /// Gone.
    Exited,
}

/// How a task is created.
#[derive(Clone, Copy, Debug)]
pub struct Spawn {
    /// Address space id: switching between tasks of one `mm` costs a thread
    /// switch, otherwise a process switch.
    pub mm: u32,
    /// Working set, bytes.
    pub footprint: u64,
    /// Latency class for wakeup-latency samples (`None`: not recorded).
    pub lat_class: Option<u8>,
    /// Scheduling parameters.
    pub params: TaskParams,
    /// Pinned to this CPU (`cpus_allowed` of one CPU).
    pub pin: Option<u32>,
    /// The `wakee_flips` it starts with, its parent's at the fork (the
    /// engine forks every task from a CPU running nothing, so without this
    /// a task starts with none).
    pub wakee_flips: u32,
}

impl Default for Spawn {
    fn default() -> Self {
        Spawn {
            mm: 0,
            footprint: 32 << 10,
            lat_class: None,
            params: TaskParams::default(),
            pin: None,
            wakee_flips: 0,
        }
    }
}

/// Per-task bookkeeping. The fields every burst end reads and writes come
/// first, in the record's first cache line (`repr(C)`, 64-byte aligned): a
/// busy machine's running tasks then stay in the CPU's cache.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Task {
    work: u64,
    overhead: u64,
    /// CPU time it used, ns (overheads included).
    pub runtime: u64,
    /// What it does after the burst that pays its wakeups' cost (it
    /// blocks, sleeps or exits once that is paid, or returns to its user
    /// code).
    deferred: Option<Next>,
    /// Its current burst is user code ([`Next::RunUser`]): the kernel's
    /// per-thread user-mode mark, kept across switches.
    user: bool,
    /// Its current burst is the irqs-off rest of a wakeup it made
    /// (`Mechanisms::wake_unlock`): an interrupt's exit does not preempt
    /// it, and the burst's end is the `spin_unlock_irqrestore`.
    irqs_off: bool,
    /// Its step said exit and it pays its wakeups first
    /// ([`Kernel`]'s `exits_pending`).
    exit_pending: bool,
    /// Its current burst is one Linux runs with preemption off and leaves
    /// at `need_resched()` ([`Kernel::burst_leaves_at_resched`]): if it is
    /// switched out in it, the rest is dropped.
    leaves_at_resched: bool,
    /// State.
    pub state: TState,
    timer_gen: u32,
    last_ran: u32,
    mark: u64,
    wake_origin: u64,
    /// The CPU of the task that woke it, while [`Task::wake_origin`] is
    /// that wakeup's instant ([`NIL`]: a timer's, or none), for
    /// [`WakeRunCounters`].
    waker_cpu: u32,
    spawn: Spawn,
    /// Times it was switched in.
    pub nr_switch_in: u64,
}

/// A CPU. The fields every burst end and every batch's event read and
/// write come first, in the record's first cache line (`repr(C)`, 64-byte
/// aligned); what making a batch also reads (its bounds) in the second.
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
struct Cpu {
    run_start: u64,
    /// Batching: the running task's plan: the time of its first planned
    /// step (the others follow from it: [`Workload::planned_times`]),
    /// and how many, the last one's time and its batch's event's.
    batch_first: u64,
    batch: Planned,
    /// When its task's pending burst event comes (its next step; for a
    /// batch, the step after the planned ones, which count apart).
    step_at: u64,
    curr: u32,
    /// Its real capacity ([`Machine::speed`], times machine noise's speed
    /// factors if modelled, and SMT sharing's; 1024: work takes its own
    /// time).
    cap: u32,
    burst_gen: u32,
    /// The scheduler may have changed this CPU's need-resched state since
    /// the engine last read it as `None` (see [`Kernel::need_resched`]).
    rq_touched: bool,
    tick_on: bool,
    ipi_pending: bool,
    /// Its task's steps are batched ([`Cpu::batch`]).
    batched: bool,
    /// When its pending one-shot timer fires (`u64::MAX`: none).
    hrtick_at: u64,
    /// When its pending IPI arrives (if `ipi_pending`).
    ipi_at: u64,
    /// Batching: the (time, tag) of the event in which another CPU's
    /// scheduler call touched this CPU's runqueue during its batch.
    split_at: Option<(u64, u32)>,
    tick_gen: u32,
    /// Bumped by every arm or cancel of the one-shot timer: an older event is stale.
    hrtick_gen: u32,
    touched: u64,
    /// Machine noise: its interrupt stream has an arrival queued (it stops
    /// at an arrival that finds the CPU idle, and starts again when the
    /// CPU next runs a task), due at `irq_at` (`u64::MAX`: none). (In the
    /// second line, with the other bounds of a batch.)
    irq_at: u64,
    since: u64,
    last_mm: u32,
    busy_ns: u64,
    idle_ns: u64,
    ticks: u64,
    /// vCPU turns: interrupts that arrived out of this vCPU's turn, handled
    /// when its turn comes (the resched IPI, the tick, the one-shot timer of
    /// this generation, sleepers' timers as (task, timer generation)).
    late_ipi: bool,
    late_tick: bool,
    late_hrtick: Option<u32>,
    late_timers: Vec<(u32, u32)>,
    /// Sleepers of [`Next::SleepRange`] armed on this CPU as (task, timer
    /// generation, soft deadline): any timer interrupt of the CPU after the
    /// soft deadline ends their sleep ([`Kernel::expire_ranges`]).
    ranges: Vec<(u32, u32, u64)>,
    /// QEMU's turn order (`Mechanisms::qemu_rr_turns`): when the tick is
    /// next due (with `tick_on`), when the LAPIC one-shot is armed for
    /// (`u64::MAX`: masked; at or before now: fired), and the vCPU's
    /// `exit_request`, left by a kick of every vCPU.
    tick_at: u64,
    lapic_at: u64,
    exit_req: bool,
    /// vCPU turns: when it lost the turn with a task on it (`u64::MAX`:
    /// it holds the turn, or lost it idle), for
    /// [`TurnCounters::away_bins`].
    away_since: u64,
    /// Machine noise: its interrupt stream has an arrival queued (see
    /// `irq_at`).
    irq_on: bool,
    /// vCPU turns with `Mechanisms::vcpu_pause`: the locks task
    /// `lock_task` holds while paying the burst armed when they were set
    /// ([`LockWindow`]).
    lock_task: u32,
    lock_windows: Vec<LockWindow>,
    /// The task switched out at the switch whose [`LockWindow`]s these
    /// are ([`NIL`] once they are a wakeup's, or cleared): while the
    /// switch's runqueue-lock window lasts, it is Linux's `prev` in
    /// `__schedule()`, `p->on_cpu` still set
    /// (`Mechanisms::wakee_switch_wait`).
    lock_prev: u32,
    /// `Mechanisms::ilb_ipi`: a nohz kick's IPI is on its way to it (the
    /// kick's flags, `nohz_flags(cpu)`, set by `kick_ilb`).
    ilb_kicked: bool,
    /// `Mechanisms::ilb_ipi`: when the idle load balancer's run on it ends
    /// (the IPI's handler and the pass, [`Kernel::ilb_arrive`]); no task
    /// runs on it before (0: none).
    ilb_until: u64,
    /// vCPU turns: that end came out of its turn.
    late_ilb_end: bool,
}

/// vCPU turns with `Mechanisms::vcpu_pause`: a lock the kernel holds while
/// the task on a CPU pays part of its burst's cost (a switch, a wakeup):
/// held while what is left of the burst (overhead and work) is below `hi`
/// and above `lo`, ns. The burst is paid from its start, so the first part
/// of a cost is the highest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LockWindow {
    lock: LockId,
    lo: u64,
    hi: u64,
}

/// A wakeup's lock held from the wakeup's instant, before any of the
/// wake debt is paid (the `from` of a [`Kernel`]'s `wake_locks` entry;
/// `Mechanisms::wq_spin_hold`).
const FROM_INSTANT: u64 = u64::MAX;

/// A kernel lock a vCPU may spin on ([`LockWindow`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LockId {
    /// A CPU's runqueue lock.
    Rq(u32),
    /// A task's wait queue (the queue it sleeps on; its waker holds it
    /// around `try_to_wake_up`).
    Wq(u32),
}

// A batch's event reads and writes only the first line; making a batch
// reads its bounds in the second too.
const _: () = assert!(
    std::mem::offset_of!(Cpu, batched) < 64
        && std::mem::offset_of!(Cpu, step_at) < 64
        && std::mem::offset_of!(Cpu, batch) < 64
        && std::mem::offset_of!(Cpu, hrtick_at) / 64 == 1
        && std::mem::offset_of!(Cpu, ipi_at) / 64 == 1
        && std::mem::offset_of!(Cpu, irq_at) / 64 == 1
);

impl Cpu {
    /// Has interrupts waiting for its turn.
    fn has_late(&self) -> bool {
        self.late_ipi
            || self.late_ilb_end
            || self.late_tick
            || self.late_hrtick.is_some()
            || !self.late_timers.is_empty()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum Kind {
    Burst,
    Tick,
    Ipi,
    TimerFire,
    TimerWake,
    Hrtick,
    /// The running vCPU's turn reaches its length (vCPU turns).
    TurnEnd,
    /// An interrupt of machine noise arrives.
    Irq,
}

/// An event, 16 bytes: due at `t`; its kind and argument (a CPU or a
/// task) in one word, and the generation that tells a stale one. Ties are
/// taken by kind and argument ([`Ev::key`], see [`Calendar`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ev {
    t: u64,
    /// Kind in the top [`KIND_BITS`] bits, the argument below.
    tag: u32,
    gen: u32,
}

const KIND_BITS: u32 = 3;
/// The generation of a [`Kind::Ipi`] event that is the end of an idle
/// load balancer's run on its CPU ([`Kernel::ilb_end`]), not an IPI
/// (whose events have generation 0).
const ILB_END: u32 = 1;
/// The argument of QEMU's kick timer's [`Kind::TurnEnd`] (a turn's own
/// has 0).
const KICK_TIMER: u32 = 1;
/// The argument of a [`Kind::TurnEnd`] that is a switch's timer write
/// reached (`Mechanisms::switch_timer_kick`); its generation is the turn's.
const SWITCH_KICK: u32 = 2;
const ARG_MASK: u32 = u32::MAX >> KIND_BITS;

impl Ev {
    #[inline(always)]
    fn new(t: u64, kind: Kind, a: u32, gen: u32) -> Self {
        debug_assert!(a < ARG_MASK, "event argument {a} too large");
        Ev {
            t,
            tag: (kind as u32) << (32 - KIND_BITS) | a,
            gen,
        }
    }

    #[inline(always)]
    fn kind(&self) -> Kind {
        // Eight entries, one per value of the bits (no bounds check).
        const KINDS: [Kind; 1 << KIND_BITS] = [
            Kind::Burst,
            Kind::Tick,
            Kind::Ipi,
            Kind::TimerFire,
            Kind::TimerWake,
            Kind::Hrtick,
            Kind::TurnEnd,
            Kind::Irq,
        ];
        KINDS[(self.tag >> (32 - KIND_BITS)) as usize]
    }

    /// The CPU or task it is for.
    #[inline(always)]
    fn a(&self) -> u32 {
        self.tag & ARG_MASK
    }

    /// Its place among the events of its calendar bucket in the order
    /// events are taken: by time, then by kind and argument (then, the
    /// calendar keeps it, in the order queued). The events of a bucket
    /// share the time's bits above [`BUCKET_SHIFT`] (one window of
    /// buckets at a time, see [`Calendar`]), so the time's bits below it
    /// and the tag order them as the whole time and tag would, in a
    /// word; [`NO_EVENT`]'s key is above every event's (no argument is
    /// [`ARG_MASK`]).
    #[inline(always)]
    fn key(&self) -> u64 {
        (self.t & ((1 << BUCKET_SHIFT) - 1)) << 32 | self.tag as u64
    }
}

/// An event beyond the calendar's window, ordered by (time, kind and
/// argument, order queued).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FarEv {
    t: u64,
    seq: u64,
    ev: Ev,
}

impl Ord for FarEv {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.t, self.ev.tag, self.seq).cmp(&(o.t, o.ev.tag, o.seq))
    }
}

impl PartialOrd for FarEv {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// Width of a calendar bucket: 2^6 = 64 ns of virtual time. A busy
/// 64-CPU hackbench has an event every ~100 ns, so a bucket holds one or
/// two: 8 ns buckets spread the same events over eight times the cache
/// lines of slots and bitmap, and sent every batch's event beyond their
/// 8 µs window through the coarse calendar (64 ns: 10% fewer L1 data
/// misses and 1.5% fewer instructions than 8 ns in callgrind, 100 ms
/// of `sim bench`'s pipes).
const BUCKET_SHIFT: u32 = 6;
/// Buckets in the calendar's window (2^10 × 64 ns = 65 µs: a batch's
/// event, at most [`BATCH_WINDOW_NS`] ahead, goes straight into a bucket,
/// not through the coarse calendar).
const NR_BUCKETS: usize = 1 << 10;
/// Words of the calendar's bitmap of non-empty buckets.
const NR_WORDS: usize = NR_BUCKETS / 64;
/// Width of a coarse calendar bucket: 2^6 buckets, 4 µs.
const COARSE_SHIFT: u32 = 6;
/// Coarse buckets (2^14 × 4 µs = 67 ms, 16 ticks at HZ=250).
const NR_COARSE: usize = 1 << 14;

/// Events a bucket holds in its own cache line; more spill into a list.
const SLOTS: usize = 4;

/// What an empty slot holds: later than any event ([`Ev::key`]), so that
/// the earliest of a bucket's slots is found without looking at its
/// length.
const NO_EVENT: Ev = Ev {
    t: u64::MAX,
    tag: u32::MAX,
    gen: 0,
};

/// A calendar bucket's first [`SLOTS`] events, one cache line; a slot
/// past the bucket's events holds [`NO_EVENT`].
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Slots([Ev; SLOTS]);

/// The pending events, popped in order of time, ties by kind and argument
/// (then in the order queued): a calendar queue (R. Brown, "Calendar queues", CACM 31(10),
/// 1988). Events due within the window (`NR_BUCKETS` buckets of
/// 2^`BUCKET_SHIFT` ns from the current bucket) go to the bucket of their
/// time; later ones (a switched-in task's first burst, IPIs, ticks,
/// sleeps, the scheduler's one-shot timers) wait in a coarse calendar of
/// 4 µs buckets over 67 ms, later still in a binary heap, and move into
/// the window as it advances (a coarse bucket as a whole); a CPU's
/// one-shot timer may instead be held apart, one per CPU, until the
/// window takes in its coarse bucket ([`Calendar::hold`]). A busy
/// 64-CPU machine has an event every ~100 ns and most are burst ends a
/// few hundred ns ahead or a batch's some µs ahead, so a push is an append and a pop finds the next
/// non-empty bucket in a bitmap (one bit per bucket) and scans its one or
/// two events, where a binary heap of a few hundred events moves ~9 levels
/// each way. A bucket's first [`SLOTS`] events sit in one cache line, the
/// window's in 64 KiB.
///
/// A bucket's list is in the order its events were queued, so the earliest
/// event is the first one of the smallest (time, kind, argument) and no
/// event carries a sequence number: the far events of a bucket move in (a
/// coarse bucket in its order, which is the order queued for events of one
/// key: the heap's (key, order queued) first, then those queued into it
/// directly) when the window takes in the coarse bucket, before any event
/// can be queued into the bucket directly (`split`: events from there on
/// go to the coarse calendar until it moves), and those come later. The
/// order is exactly a binary heap's by (time, kind, argument, order
/// queued) (`calendar_pops_in_the_heaps_order`). (Events of one key are a
/// live event and stale copies of it, whose order changes nothing.)
#[derive(Debug)]
struct Calendar {
    slots: Box<[Slots; NR_BUCKETS]>,
    /// Events in each bucket (its slots, then its spill list).
    lens: [u32; NR_BUCKETS],
    /// A bucket's events after its first [`SLOTS`], in order.
    spill: Box<[Vec<Ev>; NR_BUCKETS]>,
    /// Bit `b % 64` of word `b / 64`: bucket `b` holds an event.
    occupied: [u64; NR_WORDS],
    /// Absolute number (time >> BUCKET_SHIFT) of the earliest bucket that
    /// may hold an event; every queued event is at or after it.
    cur: u64,
    /// Events in the buckets.
    near: usize,
    /// The first bucket of the coarse calendar (a multiple of 2^COARSE_SHIFT,
    /// at most `cur + NR_BUCKETS`): events before it are in the buckets,
    /// events at or after it in the coarse calendar or the heap.
    split: u64,
    /// Coarse buckets, absolute number `bucket >> COARSE_SHIFT` from
    /// `split`'s on; each list in the order queued.
    coarse: Vec<Vec<Ev>>,
    /// The room of coarse lists emptied into the buckets, last emptied
    /// last: a coarse bucket's first event takes the most recent one, so
    /// that the lists in use stay in the cache (a list kept in its bucket
    /// would next be written a whole coarse round, 67 ms, later).
    spare: Vec<Vec<Ev>>,
    /// Bit `k % 64` of word `(k / 64) % ...`: coarse bucket `k` holds an event.
    coarse_occupied: Vec<u64>,
    /// Events in the coarse calendar.
    nr_coarse: usize,
    /// Events due beyond the coarse calendar.
    far: BinaryHeap<Reverse<FarEv>>,
    /// Far events queued so far (their order among themselves).
    far_seq: u64,
    /// The coarse bucket of the earliest far event (`u64::MAX`: none).
    far_min: u64,
    /// Events held back, one per index (a CPU's one-shot timer, HRTICK:
    /// [`Calendar::hold`]), [`NO_EVENT`] for none: each at or after
    /// `split`, moved into its bucket when the window takes in its coarse
    /// bucket.
    held: Vec<Ev>,
    /// The time of the earliest held event (`u64::MAX`: none).
    held_min: u64,
}

impl Calendar {
    fn new() -> Self {
        let empty = Slots([NO_EVENT; SLOTS]);
        let spill: Vec<Vec<Ev>> = (0..NR_BUCKETS).map(|_| Vec::new()).collect();
        Calendar {
            slots: vec![empty; NR_BUCKETS]
                .into_boxed_slice()
                .try_into()
                .expect("NR_BUCKETS"),
            lens: [0; NR_BUCKETS],
            spill: spill.into_boxed_slice().try_into().expect("NR_BUCKETS"),
            occupied: [0; NR_WORDS],
            cur: 0,
            near: 0,
            split: NR_BUCKETS as u64,
            coarse: (0..NR_COARSE).map(|_| Vec::new()).collect(),
            spare: Vec::new(),
            coarse_occupied: vec![0; NR_COARSE / 64],
            nr_coarse: 0,
            far: BinaryHeap::new(),
            far_seq: 0,
            far_min: u64::MAX,
            held: Vec::new(),
            held_min: u64::MAX,
        }
    }

    /// Queues `ev` as index `i`'s held event, which it replaces: taken in
    /// the same order as if queued by [`Calendar::push`], but replaced or
    /// [`Calendar::unhold`]en before its coarse bucket enters the window it
    /// never enters the buckets. Most HRTICK arms are replaced by the next
    /// switch's, milliseconds before they expire: through the coarse
    /// calendar each cost a write and a read of a list long out of the
    /// cache, and a stale event to take. Returns the event replaced if it
    /// was still held (never queued; the caller counts it as the stale
    /// event it would have been). `ev` at or after `split` is held; before,
    /// queued at once.
    #[inline(always)]
    fn hold(&mut self, i: usize, ev: Ev) -> Option<Ev> {
        let was = self.unhold(i);
        if ev.t >> BUCKET_SHIFT < self.split {
            self.put(ev);
        } else {
            self.held[i] = ev;
            self.held_min = self.held_min.min(ev.t);
        }
        was
    }

    /// Takes index `i`'s held event out (see [`Calendar::hold`]).
    #[inline(always)]
    fn unhold(&mut self, i: usize) -> Option<Ev> {
        if i >= self.held.len() {
            self.held.resize(i + 1, NO_EVENT);
        }
        let was = std::mem::replace(&mut self.held[i], NO_EVENT);
        if was.t == u64::MAX {
            return None;
        }
        if was.t == self.held_min {
            self.held_min = self.held.iter().map(|e| e.t).min().unwrap_or(u64::MAX);
        }
        Some(was)
    }

    /// Moves the held events now before `split` into their buckets.
    #[inline(always)]
    fn pull_held(&mut self) {
        while self.held_min >> BUCKET_SHIFT < self.split {
            let i = self
                .held
                .iter()
                .position(|e| e.t == self.held_min)
                .expect("the earliest held event");
            let ev = std::mem::replace(&mut self.held[i], NO_EVENT);
            self.held_min = self.held.iter().map(|e| e.t).min().unwrap_or(u64::MAX);
            self.put(ev);
        }
    }

    /// Appends `ev` to its bucket (in the window).
    #[inline(always)]
    fn put(&mut self, ev: Ev) {
        let i = (ev.t >> BUCKET_SHIFT) as usize % NR_BUCKETS;
        let n = self.lens[i] as usize;
        if n < SLOTS {
            self.slots[i].0[n] = ev;
        } else {
            self.spill[i].push(ev);
        }
        self.lens[i] += 1;
        self.occupied[i / 64] |= 1 << (i % 64);
        self.near += 1;
    }

    /// Queues `ev`, due no earlier than the last event popped.
    #[inline(always)]
    fn push(&mut self, ev: Ev) {
        let b = ev.t >> BUCKET_SHIFT;
        debug_assert!(b >= self.cur, "event in the past");
        if b < self.split {
            self.put(ev);
        } else {
            self.push_far(ev);
        }
    }

    /// Queues `ev` (at or after `split`) in the coarse calendar or the heap.
    #[inline(never)]
    fn push_far(&mut self, ev: Ev) {
        let k = (ev.t >> BUCKET_SHIFT) >> COARSE_SHIFT;
        if k < (self.split >> COARSE_SHIFT) + NR_COARSE as u64 {
            self.put_coarse(k, ev);
        } else {
            self.far_seq += 1;
            self.far.push(Reverse(FarEv {
                t: ev.t,
                seq: self.far_seq,
                ev,
            }));
            self.far_min = self.far_min.min(k);
        }
    }

    fn put_coarse(&mut self, k: u64, ev: Ev) {
        let i = k as usize % NR_COARSE;
        let list = &mut self.coarse[i];
        if list.capacity() == 0 {
            if let Some(room) = self.spare.pop() {
                *list = room;
            }
        }
        list.push(ev);
        self.coarse_occupied[i / 64] |= 1 << (i % 64);
        self.nr_coarse += 1;
    }

    /// Moves the coarse buckets the window now covers as a whole into the
    /// buckets (and the heap's events the coarse calendar now covers into
    /// it).
    #[inline(always)]
    fn pull_far(&mut self) {
        if self.split + (1 << COARSE_SHIFT) <= self.cur + NR_BUCKETS as u64 {
            self.pull_far_slow();
        }
    }

    #[inline(never)]
    fn pull_far_slow(&mut self) {
        while self.split + (1 << COARSE_SHIFT) <= self.cur + NR_BUCKETS as u64 {
            let k = self.split >> COARSE_SHIFT;
            let i = k as usize % NR_COARSE;
            if self.coarse_occupied[i / 64] & (1 << (i % 64)) != 0 {
                self.coarse_occupied[i / 64] &= !(1 << (i % 64));
                let mut list = std::mem::take(&mut self.coarse[i]);
                self.nr_coarse -= list.len();
                for &ev in &list {
                    self.put(ev);
                }
                // Keep the list's room for the next bucket to fill.
                list.clear();
                self.spare.push(list);
            }
            self.split += 1 << COARSE_SHIFT;
            self.pull_heap();
            self.pull_held();
        }
    }

    /// Moves the heap's events the coarse calendar now covers into it.
    fn pull_heap(&mut self) {
        let end = (self.split >> COARSE_SHIFT) + NR_COARSE as u64;
        while self.far_min < end {
            let Some(Reverse(far)) = self.far.pop() else {
                break;
            };
            self.put_coarse(far.t >> BUCKET_SHIFT >> COARSE_SHIFT, far.ev);
            self.far_min = self
                .far
                .peek()
                .map_or(u64::MAX, |e| e.0.t >> BUCKET_SHIFT >> COARSE_SHIFT);
        }
    }

    /// With no event in the buckets: moves the window on to the earliest
    /// coarse bucket that holds one (through the heap if the coarse
    /// calendar is empty). False if no event is queued.
    #[inline(never)]
    fn jump(&mut self) -> bool {
        // The coarse bucket of the earliest held event (beyond every
        // bucket for none).
        let held_k = self.held_min >> BUCKET_SHIFT >> COARSE_SHIFT;
        let k = if self.nr_coarse == 0 && self.far_min > held_k {
            if self.held_min == u64::MAX {
                return false;
            }
            // Every coarse bucket up to the held event's is empty, and the
            // heap holds nothing before it.
            self.split = held_k << COARSE_SHIFT;
            self.pull_heap();
            held_k
        } else {
            if self.nr_coarse == 0 {
                // Every coarse bucket up to the heap's earliest is empty.
                self.split = self.far_min << COARSE_SHIFT;
                self.pull_heap();
            }
            // The first non-empty coarse bucket from `split`'s on.
            let k0 = self.split >> COARSE_SHIFT;
            let mut k = k0;
            loop {
                let i = k as usize % NR_COARSE;
                let word = self.coarse_occupied[i / 64] >> (i % 64);
                if word != 0 {
                    k += word.trailing_zeros() as u64;
                    break;
                }
                k += 64 - (i % 64) as u64;
                debug_assert!(k < k0 + 2 * NR_COARSE as u64, "coarse events not found");
            }
            k.min(held_k)
        };
        self.split = k << COARSE_SHIFT;
        self.cur = self.cur.max(self.split);
        self.pull_far();
        true
    }

    /// The number of buckets from `cur` to the next non-empty one (the
    /// window holds an event).
    #[inline(always)]
    fn next_occupied(&self) -> u64 {
        let i = self.cur as usize % NR_BUCKETS;
        let (w, bit) = (i / 64, i % 64);
        let first = self.occupied[w] >> bit;
        if first != 0 {
            return first.trailing_zeros() as u64;
        }
        let mut d = (64 - bit) as u64;
        for k in 1..=NR_WORDS {
            let word = self.occupied[(w + k) % NR_WORDS];
            if word != 0 {
                return d + word.trailing_zeros() as u64;
            }
            d += 64;
        }
        unreachable!("calendar: {} events but no bucket marked", self.near)
    }

    /// The earliest event by (time, kind and argument, order queued).
    #[inline(always)]
    fn pop(&mut self) -> Option<Ev> {
        if self.near == 0 && !self.jump() {
            return None;
        }
        // Far events are at or after `split`, after the bucket found:
        // pulling them in cannot put one before it. (No test of whether
        // the bucket changed: which it is, is random, and a mispredicted
        // branch costs more than the test of `split`.)
        self.cur += self.next_occupied();
        self.pull_far();
        let i = self.cur as usize % NR_BUCKETS;
        let n = self.lens[i] as usize;
        self.near -= 1;
        let ev = if n == 1 {
            // A bucket's one event (7 pops in 10 on the bench's pipes
            // row): its first slot, the others empty already, without
            // the keys and selects below (the same event).
            let slots = &mut self.slots[i].0;
            let ev = slots[0];
            debug_assert!(slots[1..].iter().all(|e| e.key() == NO_EVENT.key()));
            slots[0] = NO_EVENT;
            self.lens[i] = 0;
            ev
        } else if n > SLOTS {
            self.take_first_earliest(i, n)
        } else {
            // The first of the earliest slots, and the later slots move up
            // one; selects rather than branches, as which slot it is, is
            // random.
            let slots = &mut self.slots[i].0;
            let (mut m, mut key) = (0, slots[0].key());
            for (j, e) in slots.iter().enumerate().skip(1) {
                let earlier = e.key() < key;
                m = if earlier { j } else { m };
                key = if earlier { e.key() } else { key };
            }
            let ev = slots[m];
            debug_assert!(slots[..n]
                .iter()
                .all(|e| e.t >> BUCKET_SHIFT == ev.t >> BUCKET_SHIFT));
            for j in 0..SLOTS - 1 {
                slots[j] = if j >= m { slots[j + 1] } else { slots[j] };
            }
            slots[SLOTS - 1] = NO_EVENT;
            self.lens[i] -= 1;
            ev
        };
        let empty = (self.lens[i] == 0) as u64;
        self.occupied[i / 64] &= !(empty << (i % 64));
        Some(ev)
    }

    /// Takes the first event of the smallest (time, tag) out of bucket `i` (of `n`
    /// events, more than its slots); the others keep their order.
    #[inline(never)]
    fn take_first_earliest(&mut self, i: usize, n: usize) -> Ev {
        let slots = &mut self.slots[i].0;
        let spill = &mut self.spill[i];
        let ev_at = |j: usize| {
            if j < SLOTS {
                slots[j]
            } else {
                spill[j - SLOTS]
            }
        };
        let mut m = 0;
        let mut key = slots[0].key();
        for j in 1..n {
            let e = ev_at(j);
            if e.key() < key {
                m = j;
                key = e.key();
            }
        }
        let ev = ev_at(m);
        if m < SLOTS {
            for j in m + 1..SLOTS.min(n) {
                slots[j - 1] = slots[j];
            }
            if n > SLOTS {
                slots[SLOTS - 1] = spill.remove(0);
            }
        } else {
            spill.remove(m - SLOTS);
        }
        self.lens[i] -= 1;
        ev
    }
}

/// Names of the wakeup-decision rows counted in [`Counters::rows`].
pub const ROW_NAMES: [&str; 17] = [
    "idle_cpu",
    "same_task",
    "higher_class",
    "lower_class",
    "rt_higher",
    "rt_not_higher",
    "fair_same_task",
    "already_pending",
    "disabled",
    "idle_current",
    "idle_wakee",
    "not_normal",
    "fork_or_delayed",
    "ineligible_waker",
    "sync_resched",
    "sync_none",
    "picked",
];
const ROW_NOT_PICKED: usize = 17;
/// Number of rows (the names above plus `not_picked`).
pub const NR_ROWS: usize = 18;

/// Name of row `i`.
pub fn row_name(i: usize) -> &'static str {
    if i == ROW_NOT_PICKED {
        "not_picked"
    } else {
        ROW_NAMES[i]
    }
}

fn row_of(r: WakeupReason) -> usize {
    use sched::fair::FairWakeup as F;
    match r {
        WakeupReason::IdleCpu => 0,
        WakeupReason::SameTask => 1,
        WakeupReason::HigherClass => 2,
        WakeupReason::LowerClass => 3,
        WakeupReason::RtHigherPriority => 4,
        WakeupReason::RtNotHigher => 5,
        WakeupReason::DlEarlierDeadline | WakeupReason::DlNotEarlier => {
            unreachable!("the simulator spawns no SCHED_DEADLINE task")
        }
        WakeupReason::Fair(f) => match f {
            F::SameTask => 6,
            F::AlreadyPending => 7,
            F::Disabled => 8,
            F::IdleCurrent => 9,
            F::IdleWakee => 10,
            F::NotNormalPolicy => 11,
            F::ForkOrDelayed => 12,
            F::IneligibleWaker => 13,
            F::SyncResched => 14,
            F::SyncNone => 15,
            F::Picked { .. } => 16,
            F::NotPicked { .. } => ROW_NOT_PICKED,
        },
    }
}

/// Mechanism counters of a run.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Events handled (stale ones excluded: a burst end or tick superseded
    /// by a reschedule, a timer cancelled by an earlier wakeup).
    pub events: u64,
    /// Stale events popped and dropped.
    pub stale: u64,
    /// Context switches (task to a different task or idle).
    pub switches: u64,
    /// Switches away from a still-runnable task.
    pub preemptions: u64,
    /// Task-to-task and timer wakeups of sleeping tasks.
    pub wakeups: u64,
    /// Of which WF_SYNC.
    pub sync_wakeups: u64,
    /// Wakeups queued on a remote wake list (decided when drained).
    pub queued_wakeups: u64,
    /// Wakeups that found the task still held (delayed dequeue) and re-queued it in place.
    pub ttwu_runnable: u64,
    /// Wakeup decisions by row (direct wakeups: local, remote, in place).
    pub rows: [u64; NR_ROWS],
    /// IPIs delivered.
    pub ipis: u64,
    /// Bursts that paid a cache refill.
    pub cold_runs: u64,
    /// Of which after a migration.
    pub cold_migrations: u64,
    /// Total refill time, ns.
    pub cold_ns: u64,
    /// Total switch overhead, ns.
    pub switch_ns: u64,
    /// Tasks moved by the balancer.
    pub balanced: u64,
    /// Newidle balance passes that moved a task.
    pub newidle_pulled: u64,
    /// Read from the scheduler at the end: newidle balances run, summed
    /// over CPUs and domain levels (`Scheduler::newidle_stats`).
    pub newidle_balances: u64,
    /// Likewise: newidle balances NI_RANDOM skipped.
    pub newidle_skipped: u64,
    /// Wakeups placed on a CPU other than the previous one.
    pub wake_migrations: u64,
    /// Read from the runqueues at the end: migrations in.
    pub migrations: u64,
    /// Pick-path counters summed over CPUs: buddy picks.
    pub buddy_picks: u64,
    /// Wakeups that asked to preempt (RqStats, all paths incl. drained lists).
    pub wakeup_preempts: u64,
    /// Ticks that asked for a reschedule.
    pub tick_resched: u64,
    /// HRTICK expiries that asked for a reschedule.
    pub hrtick_resched: u64,
    /// Preemptions at an interrupt's return to user code ([`Next::RunUser`])
    /// that a return to kernel mode would not have made (a lazy request;
    /// any request under none and voluntary).
    pub irq_user_preempts: u64,
    /// Wakeup-path, IPI-send and idle-scan time charged to wakers, ns.
    pub wake_cost_ns: u64,
    /// CPUs `select_idle_sibling` looked at.
    pub scanned_cpus: u64,
    /// vCPU turns taken (vCPU turns modelled).
    pub vcpu_turns: u64,
    /// Reschedules of a running task by place ([`Place`]) and request
    /// (`[lazy, immediate]`): where the model's preemptions happen.
    pub resched_at: [[u64; 2]; NR_PLACES],
}

/// QEMU's turn order (`Mechanisms::qemu_rr_turns`), counted apart from
/// [`Counters`] (whose `Debug` text the golden digests hash).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnCounters {
    /// Kicks: the running vCPU armed its timer to be the earliest
    /// (`qemu_timer_notify_cb`), ending its turn.
    pub kicks: u64,
    /// Zero budgets: a busy vCPU passed over in no time, next after a
    /// turn that a timer deadline ended (`icount_prepare_for_run`).
    pub zero_budgets: u64,
    /// Expiries of the periodic kick timer (`rr_kick_thread`).
    pub kick_timer: u64,
    /// `Mechanisms::switch_timer_kick`: turns a switch's timer write
    /// ended inside the switch's runqueue-lock window, and writes whose
    /// turn had ended before the write was reached (no kick).
    pub switch_kicks: u64,
    pub switch_kicks_lost: u64,
    /// With it: the switches' HRTICK arms that wrote the one-shot (moved
    /// it earlier), any vCPU's (Linux 7.2's figure, per switch, is in
    /// docs/results/linux/lazy-rows.md).
    pub switch_writes: u64,
    /// Per vCPU, the time it held the turn, ns (turns that ended).
    pub turn_ns_by_cpu: Vec<u64>,
    /// Every turn model: the turns that ended, by why (a deadline, a kick,
    /// a `pause`, a halt), their summed length, ns, and their lengths in
    /// the bands of [`TURN_BIN_NS`].
    pub ends: [u64; 4],
    pub end_ns: [u64; 4],
    pub end_bins: [[u64; 5]; 4],
    /// Every turn model: the stretches a busy vCPU spent out of its turn,
    /// over [`AWAY_MIN_NS`], after which the task it lost the turn with
    /// ran on (nothing that was waiting for the turn switched it out), by
    /// length: below 100 µs, below 1 ms, below 4 ms, longer. What a busy
    /// loop on the guest clock sees as jumps of the clock without a switch
    /// of its own (as `lcbench turns` counts them), to set beside the same
    /// count in the kernel's `-C` charges.
    pub away_bins: [u64; 4],
    /// Their summed length, ns.
    pub away_ns: u64,
    /// The other stretches over [`AWAY_MIN_NS`]: the task was switched
    /// out as the turn came back (a late HRTICK, tick or IPI).
    pub away_switched: u64,
    /// Turns a spin wait's `pause` ended, by the lock the holder out of
    /// its turn held: with `Mechanisms::vcpu_pause`, a runqueue lock a
    /// wakeup needed ([`PAUSE_RQ_WAKE`]), a runqueue lock a switch needed
    /// ([`PAUSE_RQ_SWITCH`]), a wait queue a wakeup needed ([`PAUSE_WQ`]);
    /// with `Mechanisms::pipe_lock_pause` too, a pipe's mutex a spinner
    /// polled, its owner on a CPU ([`PAUSE_PIPE_LOCK`]); with
    /// `Mechanisms::wakee_switch_wait` too, a wakee's switch-out on
    /// another CPU a wakeup waited for ([`PAUSE_WAKEE_SWITCH`]).
    pub pauses: [u64; 5],
}

/// [`TurnCounters::pauses`]: a wakeup needed the target's runqueue lock.
pub const PAUSE_RQ_WAKE: usize = 0;
/// [`TurnCounters::pauses`]: a switch needed the CPU's runqueue lock.
pub const PAUSE_RQ_SWITCH: usize = 1;
/// [`TurnCounters::pauses`]: a wakeup needed the wakee's wait queue.
pub const PAUSE_WQ: usize = 2;
/// [`TurnCounters::pauses`]: a spin on a pipe's mutex (its owner on a CPU).
pub const PAUSE_PIPE_LOCK: usize = 3;
/// [`TurnCounters::pauses`]: a wakeup waited for its wakee's switch-out on
/// another CPU (`p->on_cpu`, or `ttwu_runnable()`'s lock of that CPU's
/// runqueue while its `__schedule()` holds it).
pub const PAUSE_WAKEE_SWITCH: usize = 4;

/// The shortest stretch out of the turn [`TurnCounters::away_bins`]
/// counts (`lcbench turns`' gap threshold).
pub const AWAY_MIN_NS: u64 = 20_000;

/// [`TurnCounters::away_bins`]' upper bounds, ns (the last bin has none).
pub const AWAY_BIN_NS: [u64; 3] = [100_000, 1_000_000, 4_000_000];

/// Why a turn ended ([`TurnCounters::ends`] counts them in this order;
/// QEMU's turn order, `Mechanisms::qemu_rr_turns`, treats a deadline's
/// apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TurnEnd {
    /// Its budget ran out at a timer deadline (any vCPU's, or the kick
    /// timer's).
    Deadline,
    /// A kick (a timer write that left the vCPU's timer the earliest, its
    /// `exit_request`) ended it.
    Kick,
    /// A spin wait's `pause` ended it.
    Pause,
    /// The vCPU halted (went idle).
    Halt,
}

/// [`TurnCounters::end_bins`]' upper bounds, ns (the last bin has none):
/// the bands the counting QEMU of docs/results/linux/lazy-rows.md prints.
pub const TURN_BIN_NS: [u64; 4] = [20_000, 100_000, 1_000_000, 4_000_000];

/// The wakeup's irqs-off window (`Mechanisms::wake_unlock`): how often a
/// waker paid its wakeups with interrupts off, and what was held back to
/// the window's end (the `spin_unlock_irqrestore`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnlockCounters {
    /// Windows: steps whose wakeups' cost was paid with interrupts off.
    pub windows: u64,
    /// Interrupt exits in a window that would have preempted its task and
    /// did not, by [`Place`] (tick, HRTICK, IPI, a sleeper's timer): the
    /// request waited for the unlock.
    pub deferred_irqs: [u64; NR_PLACES],
    /// Windows that ended with an immediate request pending (the
    /// wakeup's own under full, or a deferred interrupt's): a switch at
    /// the unlock.
    pub unlock_preempts: u64,
}

/// Task-to-task wakeups by where the wakee then ran and how soon: on the
/// CPU of its waker (a wakeup placed there) or on another, and the time
/// from the wakeup to the end of the context switch that runs it (when it
/// starts to execute), in bands ([`WAKE_RUN_BAND_NS`]). What our kernel's
/// `hackbench -R` counts for its receivers (`receiver wakeups:` and the
/// log2 histogram, from just before the waking send to the receive's
/// return), to set beside it (docs/results/linux/lazy-rows.md, "2026-12-07").
/// Counted apart from [`Counters`] (whose `Debug` text the golden digests
/// hash): a run's events and digests do not depend on it. Timer wakeups
/// are not counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeRunCounters {
    /// Wakees that ran: `[0]` on the waker's CPU, `[1]` on another.
    pub n: [u64; 2],
    /// Their wakeup-to-run times summed, ns (the same split).
    pub ns: [u64; 2],
    /// The same split by band: below 32 us, below 1 ms, longer.
    pub bands: [[u64; 3]; 2],
}

/// [`WakeRunCounters::bands`]' upper bounds, ns (the last band has none):
/// 32 us holds a wakee switched in at once by its waker's preemption
/// (the wakeup's cost, the switch) on `qemu:N`.
pub const WAKE_RUN_BAND_NS: [u64; 2] = [32_000, 1_000_000];

impl WakeRunCounters {
    /// A wakee ran `lat_ns` after its wakeup, on its waker's CPU or not.
    fn add(&mut self, same_cpu: bool, lat_ns: u64) {
        let i = usize::from(!same_cpu);
        self.n[i] += 1;
        self.ns[i] += lat_ns;
        let b = WAKE_RUN_BAND_NS
            .iter()
            .take_while(|&&b| lat_ns >= b)
            .count();
        self.bands[i][b] += 1;
    }
}

/// The interrupts whose cost `qemu:N` charges ([`Kernel::irq_begin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IrqKind {
    Tick,
    Hrtick,
    Ipi,
}

/// One interrupt's charge ([`Kernel::irq_begin`]): its cost (jittered),
/// the part before its decisions, and whether the scheduler clock moves.
#[derive(Clone, Copy, Debug)]
struct Irq {
    pre_ns: u64,
    ns: u64,
    split: bool,
}

impl Irq {
    const NONE: Irq = Irq {
        pre_ns: 0,
        ns: 0,
        split: false,
    };
}

/// Where a running task is rescheduled ([`Counters::resched_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// A syscall's return to user space (a burst's end).
    UserReturn = 0,
    /// A kernel preemption point (a burst that goes on in the kernel).
    Kernel = 1,
    /// The tick's interrupt exit (or a balance at the tick).
    Tick = 2,
    /// The HRTICK's interrupt exit.
    Hrtick = 3,
    /// A reschedule IPI's exit.
    Ipi = 4,
    /// A sleeper's timer's interrupt exit.
    Timer = 5,
}

/// The number of [`Place`]s.
pub const NR_PLACES: usize = 6;

/// A [`Place`]'s name in the output.
pub fn place_name(i: usize) -> &'static str {
    ["user_return", "kernel", "tick", "hrtick", "ipi", "timer"][i]
}

/// A segment of the per-CPU timeline (for the timeline plot).
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    /// CPU.
    pub cpu: u32,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// Task.
    pub tid: u32,
}

/// The simulated machine and kernel: what workloads see.
pub struct Kernel {
    /// The scheduler under test.
    pub s: Scheduler<SimPlatform>,
    /// Its configuration.
    pub cfg: Arc<SchedConfig>,
    /// The machine.
    pub m: Machine,
    /// Virtual time, ns.
    pub now: u64,
    /// The run's seed (each task's and CPU's random stream derives from it).
    seed: u64,
    /// Each task's random stream ([`Rng::stream`] of the seed and its id):
    /// its workload's draws, its switch-in costs, its wakeups' costs.
    rngs: Vec<Rng>,
    /// Each CPU's random stream (id 2^40 + CPU): IPI latencies to it.
    cpu_rngs: Vec<Rng>,
    /// Counters.
    pub ctr: Counters,
    /// The wakeup's irqs-off window (`Mechanisms::wake_unlock`), counted
    /// apart from [`Counters`] (whose `Debug` text the golden digests of
    /// every preset hash; no other preset has a window).
    pub unlock: UnlockCounters,
    /// Where and how soon woken tasks ran ([`WakeRunCounters`]).
    pub wake_runs: WakeRunCounters,
    /// Bursts switched out whose rest was dropped
    /// ([`Kernel::burst_leaves_at_resched`]), counted apart from
    /// [`Counters`] as [`Kernel::unlock`] is.
    pub bursts_left_at_resched: u64,
    /// Wakeup latency samples per class, ns.
    pub lat: Vec<Vec<u64>>,
    /// Tasks.
    pub tasks: Vec<Task>,
    /// Per task: the CPU it is on now (its CPU's `curr`: running, or
    /// paying its switch; NIL: none), [`Kernel::running`].
    cpu_of: Vec<u32>,
    /// Per task: the tasks whose batches are split when it is switched in
    /// ([`Kernel::split_on_switch_in`]), `start..end`.
    split_in: Vec<(u32, u32)>,
    /// Tasks switched in by the event being handled that have tasks to
    /// check (`split_in`).
    switched_in: Vec<u32>,
    /// Per task: its class ([`Kernel::set_class`]; NIL: none).
    class_of: Vec<u32>,
    /// Per class: its tasks on a CPU now.
    class_on_cpu: Vec<u32>,
    /// A bit per task: it runs a batch (its CPU's `batched`).
    batched_tasks: Vec<u64>,
    /// Set by a workload to end the run.
    pub stop: bool,
    /// Tasks whose step said exit and who pay their wakeups' cost first: a
    /// run the workload ended goes on until they have exited.
    exits_pending: u32,
    /// Record timeline segments until this time.
    pub trace_until: u64,
    /// Recorded timeline.
    pub trace: Vec<Segment>,
    queue: Calendar,
    cpus: Vec<Cpu>,
    this_cpu: u32,
    nr_idle: usize,
    /// CPU work takes this many times as long (busy CPUs, under the even
    /// vCPU time sharing; else 1).
    share_k: u64,
    /// vCPU turns are modelled: the longest turn, ns (0: not modelled).
    turn_ns: u64,
    /// The vCPU whose turn it is (NIL: none, every vCPU idle).
    turn_cpu: u32,
    /// Bumped at every turn: an older `TurnEnd` is stale.
    turn_gen: u32,
    /// When the running turn began, ns.
    turn_start: u64,
    /// QEMU's turn order (`Mechanisms::qemu_rr_turns`, with turns).
    rr: bool,
    /// Its kick timer: due at (`u64::MAX`: stopped), generation.
    kick_at: u64,
    kick_gen: u32,
    /// A kick ended the turn of this generation (handled after the event).
    kick_turn: Option<u32>,
    /// `Mechanisms::switch_timer_kick` acts (vCPU turns).
    switch_kick: bool,
    /// With it: the CPU whose switch's one-shot timer changes are being
    /// drained ([`NIL`] otherwise; [`Kernel::switch_write_ns`] says where
    /// in the switch the write is).
    switch_write: u32,
    /// A spin wait's `pause` ended the turn of this generation (handled
    /// after the event; `Mechanisms::vcpu_pause`).
    pause_turn: Option<u32>,
    /// `Mechanisms::vcpu_pause` acts (vCPU turns, and some cost holds a lock).
    pause_on: bool,
    /// `Mechanisms::pipe_lock_pause` acts (vCPU turns, with `vcpu_pause`).
    pipe_pause_on: bool,
    /// The locks the stepping task's wakeups hold, as parts of its wake
    /// debt (from, to, ns into [`Kernel::wake_debt`]); made into its CPU's
    /// [`LockWindow`]s when the debt becomes its burst.
    wake_locks: Vec<(LockId, u64, u64)>,
    /// The CPU the last wakeup placed its task on.
    wake_cpu: u32,
    /// QEMU's turn order's counters.
    pub turns: TurnCounters,
    /// Where wakeups' preemption requests lead (output only,
    /// [`crate::follow`]).
    pub follow: Follow,
    /// Wakeup costs the stepping task owes (charged when its step returns).
    wake_debt: u64,
    /// IPIs sent (not counting ones merged into a pending IPI).
    ipis_sent: u64,
    /// The last wakeup went onto a remote wake list.
    wake_queued: bool,
    /// Batching is on ([`Machine::batch`], and no vCPU time sharing).
    batch_on: bool,
    /// The end of the run ([`Kernel::run`]'s `end_ns`).
    end_ns: u64,
    /// The tag of the event being handled (with `now`, its place in the
    /// order of events).
    cur_tag: u32,
    /// CPUs whose batch another CPU's scheduler call touched in the event
    /// being handled ([`Cpu::split_at`]).
    splits: Vec<u32>,
    /// Steps taken in batches rather than as events of their own (not an
    /// output of the model: 0 with batching off, the rest the same).
    pub batched_steps: u64,
    /// Batches split before their event.
    pub batch_splits: u64,
    /// Ranged sleeps ([`Next::SleepRange`]) ended before their range's end
    /// by another timer interrupt of their CPU.
    pub ranges_early: u64,
    /// Room for the times of a batch being split.
    split_times: Vec<u64>,
    /// HRTICK events are held back while beyond the calendar's window
    /// ([`Calendar::hold`]): not under vCPU turns, where each event, stale
    /// ones too, ends with a pass of the idle vCPUs' turns.
    hold_hrticks: bool,
    /// Held HRTICK events replaced before they were queued: each a stale
    /// event of the run that queued them all, counted in
    /// [`Counters::stale`] once the run has passed it ([`Kernel::run`]).
    ghosts: Vec<Ev>,
    /// Ghosts passed and not yet in [`Counters::stale`].
    ghosts_passed: u64,
    /// [`Kernel::ghosts`]'s length at which the passed ones are dropped.
    ghosts_room: usize,
    /// The tick period and the first boundary after now as last worked
    /// out ([`Kernel::next_tick_boundary`]).
    tick_boundary: (u64, u64),
    /// SMT throughput sharing, if modelled ([`crate::smt`]).
    smt: Option<Smt>,
    /// Idle states by depth, if modelled ([`crate::idle`]).
    idle: Option<IdleCpus>,
    /// Machine noise's interrupts, if modelled.
    irqs: Option<Irqs>,
    /// Machine noise's boot stream (placement), until the run starts.
    boot_rng: Option<Rng>,
}

/// A CPU's speed, its capacity ([`Kernel::speed`]).
#[derive(Clone, Copy, Debug)]
pub struct Speed(u32);

impl Speed {
    /// How long `work_ns` of work takes at this speed
    /// ([`Kernel::run_time_ns`]).
    #[inline(always)]
    pub fn time_ns(self, work_ns: u64) -> u64 {
        time_for(self.0, work_ns)
    }

    /// Full speed (capacity 1024): [`Speed::time_ns`] is `work_ns`, so
    /// that a loop of draws can leave the conversion out.
    #[inline(always)]
    pub fn is_full(self) -> bool {
        self.0 == FULL_CAPACITY
    }

    /// This speed for works of at most `max_work_ns`, with `time_for`'s
    /// test of its bound made once for all of them: `None` at full speed
    /// (no conversion) or where such a work could take `time_for`'s
    /// division.
    #[inline(always)]
    pub fn bounded(self, max_work_ns: u64) -> Option<BoundedSpeed> {
        let cap = self.0;
        if self.is_full() || cap <= 1 || max_work_ns >= 1 << BOUNDED_WORK_BITS {
            return None;
        }
        Some(BoundedSpeed {
            cap_1: cap as u64 - 1,
            recip: RECIPROCAL[cap as usize],
        })
    }
}

/// A CPU's speed below full for works of a bounded size
/// ([`Speed::bounded`]): `time_for`'s dividend `work * 1024 + cap - 1`
/// stays below 2^44, so it is always its multiply, without the test.
#[derive(Clone, Copy, Debug)]
pub struct BoundedSpeed {
    cap_1: u64,
    recip: u64,
}

impl BoundedSpeed {
    /// [`Speed::time_ns`] of `work_ns` (at most the bound).
    #[inline(always)]
    pub fn time_ns(self, work_ns: u64) -> u64 {
        let n = work_ns * FULL_CAPACITY as u64 + self.cap_1;
        ((n as u128 * self.recip as u128) >> 64) as u64
    }
}

/// A CPU of capacity 1024 does `work_ns` of work in `work_ns`.
const FULL_CAPACITY: u32 = 1024;

/// The time a CPU of capacity `cap` (at most 1024) takes for `work_ns` of
/// work, rounded up; `work_in(cap, time_for(cap, w)) == w`, so a batch's
/// planned step and the burst it becomes agree. A charge in the middle
/// of a burst rounds the work done down, so a burst split by charges
/// on a little CPU may end a nanosecond or so late per charge.
#[inline(always)]
fn time_for(cap: u32, work_ns: u64) -> u64 {
    if cap == FULL_CAPACITY {
        return work_ns;
    }
    let n = work_ns * FULL_CAPACITY as u64 + cap as u64 - 1;
    if n < 1 << RECIPROCAL_BITS && cap > 1 {
        // floor(n / cap) as a multiply (machine noise gives every CPU a
        // capacity below 1024, and a division at every step cost 5% of
        // the simulator's speed): exact, as `n * RECIPROCAL[cap] / 2^64`
        // is `n / cap` plus less than 2^-20, which cannot carry a
        // fraction of at most 1 - 1/cap past the next integer.
        ((n as u128 * RECIPROCAL[cap as usize] as u128) >> 64) as u64
    } else {
        n / cap as u64
    }
}

/// [`time_for`]'s multiply is exact for dividends below 2^44 (bursts up
/// to 2^34 ns, 17 s, of work).
const RECIPROCAL_BITS: u32 = 44;

/// Works below 2^this ns keep [`time_for`]'s dividend, `work * 1024 +
/// cap - 1`, below 2^[`RECIPROCAL_BITS`] ([`Speed::bounded`]).
const BOUNDED_WORK_BITS: u32 = RECIPROCAL_BITS - FULL_CAPACITY.trailing_zeros();

/// `ceil(2^64 / d)` for each capacity `d` in 2..=1024 (0 for 0 and 1).
static RECIPROCAL: [u64; FULL_CAPACITY as usize + 1] = {
    let mut t = [0u64; FULL_CAPACITY as usize + 1];
    let mut d = 2;
    while d <= FULL_CAPACITY as usize {
        t[d] = u64::MAX / d as u64 + 1;
        d += 1;
    }
    t
};

/// The work a CPU of capacity `cap` does in `time_ns`, rounded down.
#[inline(always)]
fn work_in(cap: u32, time_ns: u64) -> u64 {
    if cap == FULL_CAPACITY {
        time_ns
    } else {
        time_ns * cap as u64 / FULL_CAPACITY as u64
    }
}

impl Kernel {
    /// A machine with `cfg` and room for `max_tasks` tasks.
    pub fn new(m: Machine, cfg: Arc<SchedConfig>, max_tasks: usize, seed: u64) -> Self {
        Kernel::with_boot(m, cfg, max_tasks, seed, 0)
    }

    /// [`Kernel::new`], with machine noise (if `m` models it) drawn for
    /// the boot `boot` of `seed`: runs of one seed and one boot are the
    /// same machine; another boot is another draw of its noise
    /// ([`crate::run_one`] makes each configuration's runs of each
    /// workload a boot of their own: an A/B comparison on a real machine
    /// boots each kernel, and the study's rows draw apart).
    pub fn with_boot(
        m: Machine,
        cfg: Arc<SchedConfig>,
        max_tasks: usize,
        seed: u64,
        boot: u64,
    ) -> Self {
        let n = m.topo.nr_cpus();
        let (caps, irqs, boot_rng) = machine_noise(&m, seed, boot);
        let s = Scheduler::with_topology(
            SimPlatform::default(),
            cfg.clone(),
            m.topo.clone(),
            max_tasks.max(1),
        );
        // NI_RANDOM's per-CPU dice follow the run's seed.
        s.seed_sched_rng(seed);
        let cpus = (0..n)
            .map(|c| Cpu {
                curr: NIL,
                cap: caps[c],
                rq_touched: true,
                last_mm: NIL,
                hrtick_at: u64::MAX,
                irq_at: u64::MAX,
                tick_at: u64::MAX,
                lapic_at: u64::MAX,
                away_since: u64::MAX,
                lock_task: NIL,
                lock_windows: Vec::new(),
                lock_prev: NIL,
                ilb_kicked: false,
                ilb_until: 0,
                late_ilb_end: false,
                ..Default::default()
            })
            .collect();
        let turn_ns = m.turn_ns();
        let rr = turn_ns > 0 && m.mech.qemu_rr_turns;
        let switch_kick = turn_ns > 0 && m.mech.switch_timer_kick;
        let pause_on = turn_ns > 0 && m.mech.vcpu_pause && m.locks.any();
        let pipe_pause_on = turn_ns > 0 && m.mech.vcpu_pause && m.mech.pipe_lock_pause;
        // Under vCPU time sharing a burst's end moves with the other CPUs'
        // business: no batching there.
        let m_batch = m.batch && !(m.costs.vcpu_time_sharing && m.mech.vcpu_share);
        let (smt, idle) = smt_and_idle(&m, &caps);
        // Nor under SMT sharing (a sibling's switch moves it: `crate::smt`).
        let m_batch = m_batch && smt.is_none();
        Kernel {
            s,
            cfg,
            m,
            now: 0,
            seed,
            rngs: Vec::with_capacity(max_tasks),
            cpu_rngs: (0..n as u64)
                .map(|c| Rng::stream(seed, CPU_STREAM + c))
                .collect(),
            ctr: Counters::default(),
            unlock: UnlockCounters::default(),
            wake_runs: WakeRunCounters::default(),
            bursts_left_at_resched: 0,
            lat: Vec::new(),
            tasks: Vec::with_capacity(max_tasks),
            cpu_of: Vec::with_capacity(max_tasks),
            split_in: Vec::with_capacity(max_tasks),
            switched_in: Vec::new(),
            class_of: Vec::with_capacity(max_tasks),
            class_on_cpu: Vec::new(),
            batched_tasks: Vec::new(),
            stop: false,
            exits_pending: 0,
            trace_until: 0,
            trace: Vec::new(),
            queue: Calendar::new(),
            cpus,
            this_cpu: 0,
            nr_idle: n,
            share_k: 1,
            turn_ns,
            turn_cpu: NIL,
            turn_gen: 0,
            turn_start: 0,
            rr,
            kick_at: u64::MAX,
            kick_gen: 0,
            kick_turn: None,
            switch_kick,
            switch_write: NIL,
            pause_turn: None,
            pause_on,
            pipe_pause_on,
            wake_locks: Vec::new(),
            wake_cpu: 0,
            turns: TurnCounters::default(),
            follow: Follow::default(),
            wake_debt: 0,
            ipis_sent: 0,
            wake_queued: false,
            batch_on: m_batch,
            end_ns: u64::MAX,
            cur_tag: 0,
            splits: Vec::new(),
            batched_steps: 0,
            batch_splits: 0,
            ranges_early: 0,
            split_times: Vec::new(),
            hold_hrticks: false,
            ghosts: Vec::new(),
            ghosts_passed: 0,
            ghosts_room: 1024,
            tick_boundary: (0, 0),
            smt,
            idle,
            irqs,
            boot_rng,
        }
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Is task `tid` on a CPU now (running, or paying its switch)?
    #[inline(always)]
    pub fn running(&self, tid: u32) -> bool {
        let c = self.cpu_of[tid as usize];
        debug_assert_eq!(c != NIL, self.cpus.iter().any(|c| c.curr == tid));
        c != NIL
    }

    /// Batching: the least time from now before task `tid` steps next,
    /// ns, as long as it stays on its CPU or off any. On a CPU, it steps
    /// when its burst (or its batch's next step) ends, no sooner
    /// (`Cpu::step_at`); off a CPU, [`NOT_ON_CPU_NS`]: it steps only once
    /// switched in, and the switch splits the batches planned on its
    /// being off (those of the tasks [`Kernel::split_on_switch_in`] names
    /// for it). (Not under vCPU time sharing, where a burst's end moves
    /// with the other vCPUs and nothing is batched.)
    #[inline(always)]
    pub fn step_delay_ns(&self, tid: u32) -> u64 {
        self.step_delay_of(self.cpu_of[tid as usize])
    }

    /// [`Kernel::step_delay_ns`] of the `N` tasks from `first` on, as a
    /// function of their index (`< N`): their CPUs looked up once, as an
    /// array (no bounds check per call).
    #[inline(always)]
    pub fn step_delays<const N: usize>(&self, first: u32) -> impl Fn(usize) -> u64 + '_ {
        let cpus: &[u32; N] = self.cpu_of[first as usize..first as usize + N]
            .try_into()
            .expect("tasks");
        move |i| self.step_delay_of(cpus[i])
    }

    /// [`Kernel::step_delay_ns`] of a task on CPU `c` ([`NIL`]: none).
    #[inline(always)]
    fn step_delay_of(&self, c: u32) -> u64 {
        // A task's CPU is one of the CPUs or NIL (past them all): one
        // test for both.
        debug_assert!((c as usize) < self.cpus.len() || c == NIL);
        match self.cpus.get(c as usize) {
            Some(cpu) => cpu.step_at.saturating_sub(self.now),
            None => NOT_ON_CPU_NS,
        }
    }

    /// Batching: when task `tid` is switched in, the batches of the tasks
    /// `tasks` that [`Workload::quiet_until`] does not keep are cut or split at
    /// that event (once it is handled): their plans may count on `tid`'s
    /// not stepping while off its CPU ([`Kernel::step_delay_ns`],
    /// [`Kernel::on_cpu_in_class`]).
    pub fn split_on_switch_in(&mut self, tid: u32, tasks: std::ops::Range<u32>) {
        self.split_in[tid as usize] = (tasks.start, tasks.end);
    }

    /// Counts task `tid` in class `class` ([`Kernel::on_cpu_in_class`]),
    /// before it first runs.
    pub fn set_class(&mut self, tid: u32, class: u32) {
        debug_assert!(self.cpu_of[tid as usize] == NIL && class != NIL);
        self.class_of[tid as usize] = class;
        if self.class_on_cpu.len() <= class as usize {
            self.class_on_cpu.resize(class as usize + 1, 0);
        }
    }

    /// How many tasks of class `class` ([`Kernel::set_class`]) are on a
    /// CPU now (running, or paying their switch).
    #[inline(always)]
    pub fn on_cpu_in_class(&self, class: u32) -> u32 {
        debug_assert_eq!(
            self.class_on_cpu[class as usize] as usize,
            (0..self.tasks.len())
                .filter(|&t| self.class_of[t] == class && self.cpu_of[t] != NIL)
                .count()
        );
        self.class_on_cpu[class as usize]
    }

    /// The tasks switched in by the event just handled that have tasks
    /// to check ([`Kernel::split_on_switch_in`]): the batches that
    /// [`Workload::quiet_until`] does not keep are cut short before its
    /// time, or split at the event ([`Kernel::cut`]).
    #[inline(never)]
    fn split_for_switch_ins<W: Workload + ?Sized>(&mut self, wl: &mut W) {
        while let Some(tid) = self.switched_in.pop() {
            let (a, b) = self.split_in[tid as usize];
            // The tasks of `a..b` with a batch, a word of `batched_tasks`
            // at a time.
            let mut w = a / 64;
            while w * 64 < b {
                let lo = a.max(w * 64) - w * 64;
                let hi = b.min(w * 64 + 64) - w * 64;
                let range = (u64::MAX >> (64 - (hi - lo))) << lo;
                let mut bits = self.batched_tasks[w as usize] & range;
                while bits != 0 {
                    let other = w * 64 + bits.trailing_zeros();
                    bits &= bits - 1;
                    let c = self.cpu_of[other as usize] as usize;
                    debug_assert!(self.cpus[c].batched && self.cpus[c].curr == other);
                    let limit_ns = wl.quiet_until(self, tid, other);
                    if self.cpus[c].batch.end_ns >= limit_ns {
                        self.cut(wl, c, limit_ns);
                    }
                }
                w += 1;
            }
        }
    }

    /// How long `work_ns` of work (its time on a CPU of capacity 1024)
    /// takes on the CPU the stepping task runs on ([`Machine::speed`]):
    /// what [`Workload::plan`] adds up for a batch's steps.
    #[inline(always)]
    pub fn run_time_ns(&self, work_ns: u64) -> u64 {
        time_for(self.cpus[self.this_cpu as usize].cap, work_ns)
    }

    /// The speed of the CPU the stepping task runs on: [`Kernel::run_time_ns`]
    /// as a value.
    #[inline(always)]
    pub fn speed(&self) -> Speed {
        Speed(self.cpus[self.this_cpu as usize].cap)
    }

    /// The CPU the stepping task runs on (or the timer's CPU).
    pub fn this_cpu(&self) -> usize {
        self.this_cpu as usize
    }

    /// Creates a task; it is woken (fork-balanced from CPU 0) when the run starts.
    pub fn spawn(&mut self, sp: Spawn) -> u32 {
        let id = self.tasks.len() as u32;
        assert!(
            (id as usize) < self.s.capacity(),
            "more tasks than the capacity"
        );
        if let Some(c) = sp.lat_class {
            while self.lat.len() <= c as usize {
                self.lat.push(Vec::new());
            }
        }
        self.rngs.push(Rng::stream(self.seed, id as u64));
        self.cpu_of.push(NIL);
        self.split_in.push((0, 0));
        self.class_of.push(NIL);
        if id as usize / 64 >= self.batched_tasks.len() {
            self.batched_tasks.push(0);
        }
        self.tasks.push(Task {
            state: TState::New,
            work: 0,
            overhead: 0,
            spawn: sp,
            last_ran: NIL,
            mark: 0,
            wake_origin: u64::MAX,
            waker_cpu: NIL,
            timer_gen: 0,
            deferred: None,
            user: false,
            irqs_off: false,
            exit_pending: false,
            leaves_at_resched: false,
            runtime: 0,
            nr_switch_in: 0,
        });
        id
    }

    #[inline]
    fn push(&mut self, t: u64, kind: Kind, a: u32, gen: u32) {
        self.queue.push(Ev::new(t, kind, a, gen));
    }

    #[inline]
    fn set_now(&mut self, t: u64) {
        self.now = t;
        *self.s.platform.now.get_mut() = t;
    }

    /// Task `tid`'s random stream: what its workload draws from.
    #[inline(always)]
    pub fn rng(&mut self, tid: u32) -> &mut Rng {
        &mut self.rngs[tid as usize]
    }

    /// Task `tid`'s random stream as it is (a workload's plan draws from a
    /// copy what its steps will draw: [`Workload::plan`]).
    pub fn task_rng(&self, tid: u32) -> &Rng {
        &self.rngs[tid as usize]
    }

    /// `ns` jittered from task `tid`'s stream.
    fn jit_task(&mut self, tid: u32, ns: u64) -> u64 {
        let p = self.m.costs.jitter_pct;
        self.rngs[tid as usize].jitter(ns, p)
    }

    /// `ns` jittered from CPU `cpu`'s stream.
    fn jit_cpu(&mut self, cpu: usize, ns: u64) -> u64 {
        let p = self.m.costs.jitter_pct;
        self.cpu_rngs[cpu].jitter(ns, p)
    }

    /// Delivers the IPIs the scheduler asked for as future events, and its
    /// one-shot timer changes.
    ///
    /// The engine owns the platform (`&mut`), so it reads and resets the
    /// platform's flags and lists without atomic operations or locks
    /// (`get_mut`): they cost more than the rest of a drain, at every
    /// scheduler call.
    fn drain_ipis(&mut self) {
        let p = &mut self.s.platform;
        if !std::mem::take(p.any_ipi.get_mut()) {
            return;
        }
        // Read entry by entry: handling one queues events (`&mut self`).
        let mut i = 0;
        while i < self.s.platform.hrticks.len() {
            let word = self.s.platform.hrticks.get(i);
            let c = word as u32;
            let at = (word & HRTICK_ARM != 0).then(|| {
                i += 1;
                self.s.platform.hrticks.get(i)
            });
            i += 1;
            let cpu = &mut self.cpus[c as usize];
            cpu.hrtick_gen = cpu.hrtick_gen.wrapping_add(1);
            let gen = cpu.hrtick_gen;
            cpu.hrtick_at = at.map_or(u64::MAX, |at| at.max(self.now));
            if self.hold_hrticks {
                let replaced = match at {
                    Some(at) => {
                        let ev = Ev::new(at.max(self.now), Kind::Hrtick, c, gen);
                        self.queue.hold(c as usize, ev)
                    }
                    None => self.queue.unhold(c as usize),
                };
                if let Some(ghost) = replaced {
                    self.ghost(ghost);
                }
            } else if let Some(at) = at {
                self.push(at.max(self.now), Kind::Hrtick, c, gen);
            }
            if (self.rr || self.switch_kick) && c == self.turn_cpu {
                // `timer_set_hrtick` on its own CPU: `program_if_earlier`
                // (another CPU's waits for its IPI's `timer_sync`).
                self.lapic_program(c as usize, true);
            }
        }
        self.s.platform.hrticks.clear();
        for i in 0..self.s.platform.ipis.len() {
            let c = self.s.platform.ipis.get(i);
            self.send_ipi(c as usize);
        }
        self.s.platform.ipis.clear();
    }

    /// Keeps a held HRTICK event replaced before it was queued
    /// ([`Kernel::ghosts`]). Those before now are passed: counted, and
    /// dropped whenever their number doubles.
    #[inline(never)]
    fn ghost(&mut self, ghost: Ev) {
        if self.ghosts.len() >= self.ghosts_room {
            let now = self.now;
            let n = self.ghosts.len();
            self.ghosts.retain(|g| g.t >= now);
            self.ghosts_passed += (n - self.ghosts.len()) as u64;
            // At least twice those kept: a constant time per ghost.
            self.ghosts_room = (2 * self.ghosts.len()).max(1024);
        }
        self.ghosts.push(ghost);
    }

    /// The ghosts ([`Kernel::ghosts`]) the run that queued every HRTICK
    /// event would have taken, as stale events, before it ended: at the
    /// event `last` (the last one taken, when the workload stopped the
    /// run), at `end_ns` (`None`), or with no event left (every one; the
    /// clock then ends at the last of them). Returns their number, for
    /// [`Counters::stale`] (not in [`Counters::events`]: they were never
    /// counted there).
    fn count_ghosts(&mut self, last: Option<Ev>, end_ns: u64, drained: bool) -> u64 {
        let before = |g: &Ev| match last {
            _ if drained => true,
            // Taken before `last`: earlier in the order of events, or the
            // same CPU's timer at the same instant armed before it.
            Some(l) => {
                (g.t, g.tag) < (l.t, l.tag)
                    || (g.t, g.tag) == (l.t, l.tag) && (g.gen.wrapping_sub(l.gen) as i32) < 0
            }
            None => g.t <= end_ns,
        };
        let n = self.ghosts.iter().filter(|g| before(g)).count() as u64;
        if drained {
            if let Some(t) = self.ghosts.iter().map(|g| g.t).max() {
                self.set_now(self.now.max(t));
            }
        }
        let n = self.ghosts_passed + n;
        self.ghosts.clear();
        self.ghosts_passed = 0;
        n
    }

    fn send_ipi(&mut self, c: usize) {
        if self.cpus[c].ipi_pending {
            return;
        }
        self.cpus[c].ipi_pending = true;
        self.ipis_sent += 1;
        let mut d = self.jit_cpu(c, self.m.costs.ipi_ns);
        if self.cpus[c].curr == NIL {
            let exit_ns = self.idle_exit_ns(c, self.now + d);
            d += self.jit_cpu(c, exit_ns);
        }
        self.cpus[c].ipi_at = self.now + d;
        self.push(self.now + d, Kind::Ipi, c as u32, 0);
    }

    /// Charges the running task of `cpu` for the time since its last charge.
    #[inline]
    fn charge(&mut self, cpu: usize) {
        let c = &mut self.cpus[cpu];
        if c.curr == NIL {
            return;
        }
        let el = self.now - c.run_start;
        c.run_start = self.now;
        let t = &mut self.tasks[c.curr as usize];
        // Work done: the elapsed time, shared with the other busy vCPUs
        // (evenly, or all of it in this vCPU's turn and none out of it).
        let done = if self.turn_ns == 0 {
            // (No division in the common case: one CPU per host thread.)
            if self.share_k == 1 {
                el
            } else {
                el / self.share_k
            }
        } else if cpu as u32 == self.turn_cpu {
            el
        } else {
            0
        };
        // `Mechanisms::clock_burn`: out of its turn, a task with no
        // overhead left burns its step on the clock (the wakeup's
        // irqs-off window is `try_to_wake_up`'s instructions, not burned).
        let burn = self.m.mech.clock_burn
            && self.turn_ns > 0
            && done == 0
            && t.overhead == 0
            && !t.irqs_off;
        let done = work_in(c.cap, done);
        let o = done.min(t.overhead);
        t.overhead -= o;
        let stepped = if burn { work_in(c.cap, el) } else { done - o };
        t.work = t.work.saturating_sub(stepped);
        t.runtime += el;
    }

    #[inline(always)]
    fn arm_burst(&mut self, cpu: usize) {
        let c = &mut self.cpus[cpu];
        c.burst_gen = next_gen(c.burst_gen);
        if self.turn_ns > 0 && cpu as u32 != self.turn_cpu {
            // Out of its turn a vCPU makes no progress: armed at its turn.
            c.step_at = self.now;
            return;
        }
        let t = &self.tasks[c.curr as usize];
        let at = self.now + time_for(c.cap, t.overhead + t.work) * self.share_k;
        c.step_at = at;
        let gen = c.burst_gen;
        self.push(at, Kind::Burst, cpu as u32, gen);
    }

    fn arm_tick(&mut self, cpu: usize) {
        let tick = self.cfg.tick_ns();
        let c = &mut self.cpus[cpu];
        if c.tick_on {
            return;
        }
        c.tick_on = true;
        c.tick_gen = c.tick_gen.wrapping_add(1);
        let gen = c.tick_gen;
        let at = (self.now / tick + 1) * tick;
        c.tick_at = at;
        self.push(at, Kind::Tick, cpu as u32, gen);
        self.lapic_program(cpu, false);
    }

    /// `__schedule` on `cpu` (`kernel/src/sched/switch.rs`): the scheduler
    /// drains the wake list, applies what the running task does (`action`)
    /// and picks; `finish_switch` follows at once (the previous task is off
    /// the CPU when the engine switches). A CPU that finds nothing runs a
    /// newidle balance and, if it pulled a task, schedules again.
    fn reschedule(&mut self, cpu: usize, action: PrevAction) {
        if self.pause_on && self.held_away(cpu, LockId::Rq(cpu as u32)) {
            self.pause(cpu, PAUSE_RQ_SWITCH);
        }
        self.charge(cpu);
        self.cpus[cpu].rq_touched = true;
        let prev = self.cpus[cpu].curr;
        let sw = {
            let mut rq = self.s.cpu_rq(CpuId::wrapping(cpu));
            self.s.schedule(&mut rq, action)
        };
        self.s.finish_switch(CpuId::wrapping(cpu), &sw);
        let mut next = sw.next;
        if next.is_none() && self.nr_cpus() > 1 {
            let pulled = self.s.load_balance(CpuId::wrapping(cpu), true);
            // Tasks moved, or an active balance's push asked the source CPU
            // to switch (`resched_curr` on it, its stopper to run) and moved
            // nothing yet: those CPUs' requests must be read again.
            if !pulled.is_empty() || !pulled.touched().is_empty() {
                self.touched_by_balance(cpu, pulled.touched());
            }
            if !pulled.is_empty() {
                self.ctr.balanced += pulled.len() as u64;
                self.ctr.newidle_pulled += 1;
                let sw = {
                    let mut rq = self.s.cpu_rq(CpuId::wrapping(cpu));
                    self.s.schedule(&mut rq, PrevAction::Stays)
                };
                self.s.finish_switch(CpuId::wrapping(cpu), &sw);
                next = sw.next;
            }
        }
        let next = next.map_or(NIL, |t| t.0);
        self.switch_to(cpu, prev, next);
        if self.switch_kick && next != prev && next != NIL {
            // The HRTICK the pick armed is written as the switch's lock
            // window ends (`Mechanisms::switch_timer_kick`).
            self.switch_write = cpu as u32;
        }
        self.drain_ipis();
        self.switch_write = NIL;
    }

    /// vCPU time sharing: the number of busy CPUs changes by `delta` as
    /// `cpu` (already charged) goes idle or busy. Every other running task
    /// is charged at the old rate and its burst end re-armed at the new.
    fn share_change(&mut self, cpu: usize, busy_after: usize) {
        let k = busy_after.max(1) as u64;
        if k == self.share_k {
            return;
        }
        for c in 0..self.nr_cpus() {
            if c != cpu && self.cpus[c].curr != NIL {
                self.charge(c);
            }
        }
        self.share_k = k;
        for c in 0..self.nr_cpus() {
            if c != cpu && self.cpus[c].curr != NIL {
                self.arm_burst(c);
            }
        }
    }

    fn switch_to(&mut self, cpu: usize, prev: u32, next: u32) {
        if self.follow.enabled {
            let prev_runnable = prev != NIL && self.tasks[prev as usize].state == TState::Runnable;
            self.follow
                .switch(cpu, prev, next, prev_runnable, NIL, self.now);
        }
        if next == prev {
            if next != NIL {
                // The same task goes on: its pending burst event stays valid
                // unless it has new work (re-armed by the caller).
                self.arm_burst(cpu);
            }
            return;
        }
        if self.m.costs.vcpu_time_sharing
            && self.m.mech.vcpu_share
            && self.turn_ns == 0
            && (prev == NIL) != (next == NIL)
        {
            let busy = self.nr_cpus() - self.nr_idle;
            self.share_change(cpu, if next == NIL { busy - 1 } else { busy + 1 });
        }
        if self.smt.is_some() && (prev == NIL) != (next == NIL) {
            self.smt_change(cpu, next != NIL);
        }
        if prev == NIL {
            self.idle_end(cpu);
            if self.irqs.is_some() && !self.cpus[cpu].irq_on {
                self.arm_irq(cpu);
            }
        }
        self.ctr.switches += 1;
        let now = self.now;
        let record = now < self.trace_until;
        // Whether the task switched out went to sleep (not preempted, not
        // exited): its sleep is charged with the switch (`Machine::sleep_ns`).
        let mut prev_slept = false;
        {
            let c = &mut self.cpus[cpu];
            if prev != NIL {
                self.cpu_of[prev as usize] = NIL;
                let class = self.class_of[prev as usize];
                if class != NIL {
                    self.class_on_cpu[class as usize] -= 1;
                }
                let t = &mut self.tasks[prev as usize];
                t.mark = c.touched;
                t.last_ran = cpu as u32;
                if t.state == TState::Runnable {
                    self.ctr.preemptions += 1;
                    if t.leaves_at_resched {
                        // Linux's code saw `need_resched()` and called
                        // `schedule()` itself: none of the burst is left.
                        t.work = 0;
                        self.bursts_left_at_resched += 1;
                    }
                }
                prev_slept = t.state == TState::Blocked;
                if record {
                    self.trace.push(Segment {
                        cpu: cpu as u32,
                        start: c.since,
                        end: now,
                        tid: prev,
                    });
                }
                if next == NIL {
                    c.busy_ns += now - c.since;
                    c.since = now;
                    self.nr_idle += 1;
                }
            } else {
                c.idle_ns += now - c.since;
                c.since = now;
                self.nr_idle -= 1;
            }
            c.curr = next;
        }
        if prev != NIL && next != NIL {
            let c = &mut self.cpus[cpu];
            c.busy_ns += now - c.since;
            c.since = now;
        }
        if next == NIL {
            self.idle_enter(cpu);
            return;
        }
        let costs = &self.m.costs;
        let (fp, mm, last) = {
            let t = &self.tasks[next as usize];
            (t.spawn.footprint, t.spawn.mm, t.last_ran)
        };
        let mut over = if self.cpus[cpu].last_mm == mm {
            costs.switch_thread_ns
        } else {
            costs.switch_process_ns
        };
        // The sleep's part of `over`, drawn, and of it the part under the
        // runqueue lock (`LockShares::sleep_rq_locked_ns`), with
        // `Mechanisms::sleep_lock_split` or `sleep_unlocked`.
        let (mut slept_ns, mut sleep_locked_ns) = (0, 0);
        if prev_slept && self.m.mech.sleep_cost {
            // What a sleep costs beyond a yield's switch (the dequeue, the
            // wait queue), paid with the switch to the next task; a sleep
            // that leaves the CPU idle pays no switch and no sleep.
            over += self.m.sleep_ns;
            if self.m.mech.sleep_unlocked || self.m.mech.sleep_lock_split {
                slept_ns = self.m.sleep_ns;
            }
            if !self.m.mech.sleep_unlocked {
                sleep_locked_ns = self.m.sleep_ns.min(self.m.locks.sleep_rq_locked_ns);
            }
        }
        let drawn_ns = over;
        let mut pen = 0;
        if last != NIL && last as usize != cpu {
            let d = self
                .m
                .topo
                .distance(CpuId::wrapping(last as usize), CpuId::wrapping(cpu));
            pen = costs.refill_ns(fp, d);
            if pen > 0 {
                self.ctr.cold_migrations += 1;
            }
        } else if last as usize == cpu {
            let between = self.cpus[cpu].touched - self.tasks[next as usize].mark;
            let lost = (between + fp).saturating_sub(costs.l2_bytes).min(fp);
            pen = costs.refill_ns(lost, CpuDistance::Llc);
        }
        over = self.jit_task(next, over);
        if pen > 0 {
            pen = self.jit_task(next, pen);
            self.ctr.cold_runs += 1;
            self.ctr.cold_ns += pen;
        }
        self.ctr.switch_ns += over;
        let c = &mut self.cpus[cpu];
        c.touched += fp;
        c.last_mm = mm;
        c.run_start = now;
        self.cpu_of[next as usize] = cpu as u32;
        let class = self.class_of[next as usize];
        if class != NIL {
            self.class_on_cpu[class as usize] += 1;
        }
        let split_in = self.split_in[next as usize];
        if split_in.0 < split_in.1 && self.batch_on {
            self.switched_in.push(next);
        }
        let t = &mut self.tasks[next as usize];
        t.overhead += over + pen;
        t.nr_switch_in += 1;
        if self.pause_on {
            // The runqueue lock, held for the first part of the switch.
            let top = t.overhead + t.work;
            // The measured share is of a switch. With
            // `Mechanisms::sleep_lock_split` a sleep's cost holds the lock
            // for its measured part (min(sleep, sleep_rq_locked_ns)), with
            // `sleep_unlocked` for none; each part jittered as `over` is.
            // Otherwise (`--no-sleep-lock-split`) the share covers the
            // sleep too.
            let held = if slept_ns > 0 {
                let switch = over * (drawn_ns - slept_ns) / drawn_ns;
                switch * self.m.locks.switch_rq_locked_pm / 1000 + over * sleep_locked_ns / drawn_ns
            } else {
                over * self.m.locks.switch_rq_locked_pm / 1000
            };
            let c = &mut self.cpus[cpu];
            c.lock_task = next;
            c.lock_prev = prev;
            c.lock_windows.clear();
            if held > 0 {
                c.lock_windows.push(LockWindow {
                    lock: LockId::Rq(cpu as u32),
                    lo: top - held,
                    hi: top,
                });
            }
        }
        let t = &mut self.tasks[next as usize];
        if t.wake_origin != u64::MAX {
            let o = t.wake_origin;
            t.wake_origin = u64::MAX;
            let waker = std::mem::replace(&mut t.waker_cpu, NIL);
            if waker != NIL {
                self.wake_runs
                    .add(waker == cpu as u32, (now + over).saturating_sub(o));
            }
            // Latency runs to the end of the context switch: when the task
            // itself starts to execute (its cache refill is its own work).
            if let Some(cl) = t.spawn.lat_class {
                self.lat[cl as usize].push((now + over).saturating_sub(o));
            }
        }
        self.arm_burst(cpu);
        self.arm_tick(cpu);
    }

    /// A running task is rescheduled at `place` for `need`.
    #[inline]
    fn count_resched(&mut self, place: Place, need: Resched) {
        self.ctr.resched_at[place as usize][usize::from(need == Resched::Now)] += 1;
    }

    fn count(&mut self, d: WakeupDecision) {
        self.ctr.rows[row_of(d.reason)] += 1;
    }

    /// The running task takes the lock of the wait queue task `owner`
    /// sleeps on (a wakeup of it does; so does a send that tests the
    /// queue for a sleeper, Linux's `sock_def_readable` taking the lock
    /// when `wq_has_sleeper` sees one): with `Mechanisms::vcpu_pause`, a
    /// holder out of its turn (a waker of `owner` that lost its turn
    /// inside the wakeup) ends the running vCPU's turn. No cost.
    pub fn wait_queue_lock(&mut self, owner: u32) {
        if self.pause_on {
            let this = self.this_cpu as usize;
            if self.held_away(this, LockId::Wq(owner)) {
                self.pause(this, PAUSE_WQ);
            }
        }
    }

    /// `Mechanisms::wakee_switch_wait`: the running task is about to wake
    /// `tid`; if `tid` sleeps and its switch-out is still under way on
    /// another CPU of this one's LLC (that CPU, out of its turn, inside the
    /// runqueue-lock window of the switch away from `tid`), Linux's
    /// `try_to_wake_up()` waits for it: `ttwu_runnable()` spins on that
    /// runqueue's lock while the wakee is still queued, and once it is
    /// dequeued `ttwu_queue_cond()` refuses the wake list (the CPU runs
    /// the next task, so its runqueue is not empty) and the waker spins on
    /// `p->on_cpu`, which `finish_task()` clears just before the unlock.
    /// Its first `pause` ends the turn ([`PAUSE_WAKEE_SWITCH`]). With
    /// TTWU_QUEUE and a CPU of another LLC, Linux queues the wakee on that
    /// CPU's wake list instead and does not wait (that placement is not
    /// modelled: the engine's switch is over when it returns).
    /// Returns whether the waker spins.
    fn wakee_switch_wait(&mut self, tid: u32) -> bool {
        let t = &self.tasks[tid as usize];
        if t.state != TState::Blocked || t.last_ran == NIL {
            return false;
        }
        let (this, x) = (self.this_cpu as usize, t.last_ran as usize);
        if x == this || self.cpus[x].lock_prev != tid {
            return false;
        }
        let (a, b) = (CpuId::wrapping(this), CpuId::wrapping(x));
        if self.cfg.feat(sched::Feature::TtwuQueue) && !self.m.topo.share_cache(a, b) {
            return false;
        }
        if self.holds_away(x, LockId::Rq(x as u32)) {
            self.pause(this, PAUSE_WAKEE_SWITCH);
            return true;
        }
        false
    }

    /// A normal task's `nanosleep` of `ns`: [`Next::Sleep`] for that
    /// long; with `Mechanisms::timer_slack`, a [`Next::SleepRange`] of
    /// [`crate::machine::TIMER_SLACK_NS`] more at most (a sleep of 0
    /// stays 0).
    pub fn nanosleep(&self, ns: u64) -> Next {
        if self.m.mech.timer_slack && ns > 0 {
            Next::SleepRange(ns, crate::machine::TIMER_SLACK_NS)
        } else {
            Next::Sleep(ns)
        }
    }

    /// Wakes task `tid` if it sleeps (`try_to_wake_up`), from the running
    /// task's CPU; `sync`: WF_SYNC. Returns whether it was asleep.
    ///
    /// The waker pays for the wakeup once its step returns (see
    /// `Kernel::burst_end`): [`Costs::wake_ns`](crate::machine::Costs)
    /// unless the wakeup went onto another CPU's wake list, `ipi_send_ns`
    /// per IPI it sent, and `scan_cpu_ns` per CPU the idle scan looked at.
    pub fn wake(&mut self, tid: u32, sync: bool) -> bool {
        self.wait_queue_lock(tid);
        // Whether the waker spins in this wakeup (holding `tid`'s queue).
        let mut spun = false;
        if self.pause_on && self.m.mech.wakee_switch_wait {
            spun = self.wakee_switch_wait(tid);
        }
        let wf = if sync {
            WakeFlags::SYNC
        } else {
            WakeFlags::empty()
        };
        let this = self.this_cpu as usize;
        let ipis0 = self.ipis_sent;
        *self.s.platform.scanned.get_mut() = 0;
        self.wake_queued = false;
        let woke = self.wake_from(tid, wf, this);
        let scanned = std::mem::take(self.s.platform.scanned.get_mut());
        self.ctr.scanned_cpus += scanned;
        if woke && self.pause_on && !self.wake_queued {
            let target = LockId::Rq(self.wake_cpu);
            if self.held_away(this, target) {
                self.pause(this, PAUSE_RQ_WAKE);
                spun = true;
            }
        }
        if woke {
            let (mech, c) = (self.m.mech, &self.m.costs);
            let mut cost = 0;
            if mech.wake_cost {
                if !self.wake_queued {
                    cost += c.wake_ns;
                }
                cost += (self.ipis_sent - ipis0) * c.ipi_send_ns;
            }
            if mech.scan_cost {
                cost += scanned * c.scan_cpu_ns;
            }
            if cost > 0 {
                // The waker's stream: the task whose step is running.
                let waker = self.cpus[this].curr;
                let cost = self.jit_task(waker, cost);
                self.ctr.wake_cost_ns += cost;
                if self.pause_on {
                    // The locks it holds, as parts of the debt (paid in
                    // the order of the wakeups).
                    let (from, to) = (self.wake_debt, self.wake_debt + cost);
                    let c = &self.m.locks;
                    let wq = cost * c.wake_wq_locked_pm / 1000;
                    if wq > 0 {
                        // A waker that spun holds the queue from the
                        // wakeup's instant (`Mechanisms::wq_spin_hold`).
                        let held_from = if spun && self.m.mech.wq_spin_hold {
                            FROM_INSTANT
                        } else {
                            from
                        };
                        self.wake_locks
                            .push((LockId::Wq(tid), held_from, from + wq));
                    }
                    let rq = cost * c.wake_rq_locked_pm / 1000;
                    if rq > 0 && !self.wake_queued {
                        self.wake_locks
                            .push((LockId::Rq(self.wake_cpu), to - rq, to));
                    }
                }
                self.wake_debt += cost;
            }
        }
        woke
    }

    fn wake_from(&mut self, tid: u32, wf: WakeFlags, this_cpu: usize) -> bool {
        let t = &mut self.tasks[tid as usize];
        if t.state != TState::Blocked {
            if t.deferred == Some(Next::Block) {
                // Still paying its own wakeups before it blocks: as a task
                // woken between setting its sleep state and `schedule()`,
                // it does not sleep, and steps again after that burst.
                t.deferred = None;
                return true;
            }
            return false;
        }
        t.state = TState::Runnable;
        t.timer_gen = t.timer_gen.wrapping_add(1);
        if t.wake_origin == u64::MAX {
            t.wake_origin = self.now;
            t.waker_cpu = this_cpu as u32;
        }
        self.ctr.wakeups += 1;
        if wf.contains(WakeFlags::SYNC) {
            self.ctr.sync_wakeups += 1;
        }
        let woke = self
            .s
            .wake(TaskId(tid), wf, CpuId::wrapping(this_cpu))
            .unwrap_or_else(|e| panic!("waking task {tid}: {e:?}"));
        self.touch(woke.cpu().index());
        self.wake_cpu = woke.cpu().index() as u32;
        if let Woke::Placed { from, .. } = woke {
            self.touch(from.index());
        }
        match woke {
            Woke::InPlace { cpu, decision } => {
                self.ctr.ttwu_runnable += 1;
                self.count(decision);
                self.follow_request(decision, cpu.index(), tid, this_cpu);
            }
            Woke::Placed { from, to, outcome } => {
                if from != to {
                    self.ctr.wake_migrations += 1;
                }
                match outcome {
                    WakeOutcome::Local(d) | WakeOutcome::Remote(_, d) => {
                        self.count(d);
                        self.follow_request(d, to.index(), tid, this_cpu);
                    }
                    WakeOutcome::Queued { .. } => {
                        self.ctr.queued_wakeups += 1;
                        self.wake_queued = true;
                    }
                }
            }
            // The engine wakes only tasks it saw go to sleep, one at a time.
            Woke::Pending { .. } => unreachable!("task {tid} asleep but already being woken"),
        }
        self.drain_ipis();
        true
    }

    /// [`crate::follow`]: a direct wakeup of `wakee` from `this_cpu` onto
    /// `cpu` decided `d`; if it asked to preempt a running task, what that
    /// task is now (read through the raw lock: nothing is published).
    fn follow_request(&mut self, d: WakeupDecision, cpu: usize, wakee: u32, this_cpu: usize) {
        use sched::fair::FairWakeup as F;
        if !self.follow.enabled || !d.preempt {
            return;
        }
        let kind = match d.reason {
            WakeupReason::IdleCpu => return,
            WakeupReason::Fair(F::IneligibleWaker) => KIND_RULE,
            WakeupReason::Fair(F::Picked { .. }) => KIND_PICK,
            _ => KIND_OTHER,
        };
        let at = {
            let rq = self.s.rq_lock(CpuId::wrapping(cpu)).lock();
            let Some(curr) = rq.curr() else { return };
            let Some(t) = rq.task(curr) else { return };
            let e = &t.se;
            AtDecision {
                remote: cpu != this_cpu,
                protected: (e.vprot.wrapping_sub(e.vruntime) as i64) > 0,
                ran_ns: e.sum_exec_runtime.saturating_sub(e.prev_sum_exec_runtime),
                past_avg_vns: e.vruntime.wrapping_sub(rq.avg_vruntime()) as i64,
                depth: rq.nr_running(),
            }
        };
        let curr = self.cpus[cpu].curr;
        if curr != NIL {
            self.follow.request(kind, cpu, curr, wakee, at, self.now);
        }
    }

    /// Runs `wl` until `end_ns` of virtual time or until it sets `stop`.
    /// Generic in the workload so that its step is compiled into the loop.
    pub fn run<W: Workload + ?Sized>(&mut self, wl: &mut W, end_ns: u64) {
        wl.init(self);
        // Fork every task from CPU 0 (fork balancing spreads them); with
        // machine noise, from a CPU and in an order drawn for the boot.
        let mut order: Vec<usize> = (0..self.tasks.len()).collect();
        let mut parent = CpuId::BOOT;
        if let Some(mut r) = self.boot_rng.take() {
            parent = CpuId::wrapping(r.below(self.nr_cpus() as u64) as usize);
            for i in (1..order.len()).rev() {
                order.swap(i, r.below(i as u64 + 1) as usize);
            }
        }
        for i in order {
            let mut st = SchedTask::new(self.tasks[i].spawn.params);
            if let Some(c) = self.tasks[i].spawn.pin {
                st.cpus_allowed = sched::CpuMask::from_cpus(&[c as usize]);
            }
            self.s
                .spawn(TaskId(i as u32), st, parent)
                .unwrap_or_else(|e| panic!("spawning task {i}: {e:?}"));
            let flips = self.tasks[i].spawn.wakee_flips;
            if flips != 0 {
                // As a fork from a parent with `flips` that woke nobody since
                // (`Scheduler::set_wakee_flips`: no last wakee, the halving
                // restarted now; a fork copies all three).
                self.s
                    .set_wakee_flips(TaskId(i as u32), flips)
                    .unwrap_or_else(|e| panic!("task {i}'s flips: {e:?}"));
            }
            self.tasks[i].state = TState::Runnable;
        }
        if self.turn_ns > 0 {
            // The first turn is CPU 0's (QEMU's loop starts at `first_cpu`).
            self.turn_cpu = 0;
        }
        for cpu in 0..self.nr_cpus() {
            self.reschedule(cpu, PrevAction::Stays);
        }
        // No batch yet for those first switches to check.
        self.switched_in.clear();
        if self.turn_ns > 0 {
            self.begin_turn(0);
            self.pass_idle_turn();
        }
        self.end_ns = end_ns;
        self.hold_hrticks = self.turn_ns == 0;
        // How the loop ends, for the ghosts: the last event taken when the
        // workload stops the run, and whether every event was taken.
        let (mut last, mut drained) = (NO_EVENT, true);
        while let Some(ev) = self.queue.pop() {
            if self.stop && self.exits_pending == 0 {
                drained = false;
                break;
            }
            if ev.t > end_ns {
                self.set_now(end_ns.max(self.now));
                (last, drained) = (NO_EVENT, false);
                break;
            }
            last = ev;
            self.set_now(ev.t);
            self.cur_tag = ev.tag;
            self.ctr.events += 1;
            match ev.kind() {
                Kind::Burst => {
                    let cpu = ev.a() as usize;
                    if self.cpus[cpu].burst_gen == ev.gen && self.cpus[cpu].curr != NIL {
                        if ev.gen & BATCH_GEN != 0 {
                            // The batch's event: its planned steps, then
                            // the step after them.
                            let b = self.cpus[cpu].batch;
                            self.materialize(wl, cpu, b.steps, b.last_ns, b.end_ns);
                        }
                        self.burst_end(wl, cpu);
                    } else if ev.gen & BATCH_GEN != 0 {
                        // A split batch's event: no event of the unbatched run.
                        self.ctr.events -= 1;
                    } else {
                        self.ctr.stale += 1;
                    }
                }
                Kind::Tick => {
                    let cpu = ev.a() as usize;
                    if self.cpus[cpu].tick_gen != ev.gen || !self.cpus[cpu].tick_on {
                        self.ctr.stale += 1;
                    } else if self.split_here(wl, cpu) && self.cpus[cpu].curr == NIL {
                        // An idle CPU's tick stops (nohz): no timer, no deadline.
                        self.tick(cpu);
                    } else if self.timer_deadline() {
                        self.cpus[cpu].late_tick = true;
                        self.end_turn(TurnEnd::Deadline);
                    } else if self.in_turn(cpu) {
                        self.tick(cpu);
                    } else {
                        self.cpus[cpu].late_tick = true;
                    }
                }
                Kind::Ipi if ev.gen == ILB_END => {
                    let cpu = ev.a() as usize;
                    if self.in_turn(cpu) {
                        self.ilb_end(cpu);
                    } else {
                        self.cpus[cpu].late_ilb_end = true;
                    }
                }
                Kind::Ipi => {
                    let cpu = ev.a() as usize;
                    self.split_here(wl, cpu);
                    if self.in_turn(cpu) {
                        self.ipi(cpu);
                    } else {
                        self.cpus[cpu].late_ipi = true;
                    }
                }
                Kind::Hrtick => {
                    let cpu = ev.a() as usize;
                    if self.cpus[cpu].hrtick_gen != ev.gen {
                        self.ctr.stale += 1;
                    } else if self.split_here(wl, cpu) && self.timer_deadline() {
                        self.cpus[cpu].late_hrtick = Some(ev.gen);
                        self.end_turn(TurnEnd::Deadline);
                    } else if self.in_turn(cpu) {
                        self.hrtick(cpu);
                    } else {
                        self.cpus[cpu].late_hrtick = Some(ev.gen);
                    }
                }
                Kind::TimerFire | Kind::TimerWake => {
                    let tid = ev.a();
                    let t = &self.tasks[tid as usize];
                    if t.timer_gen != ev.gen || t.state != TState::Blocked {
                        self.ctr.stale += 1;
                    } else {
                        let c = self.task_cpu(tid);
                        self.split_here(wl, c);
                        if ev.kind() == Kind::TimerFire && self.timer_deadline() {
                            self.cpus[c].late_timers.push((tid, ev.gen));
                            self.end_turn(TurnEnd::Deadline);
                        } else if !self.in_turn(c) {
                            self.cpus[c].late_timers.push((tid, ev.gen));
                        } else if ev.kind() == Kind::TimerFire && self.cpus[c].curr == NIL {
                            let exit_ns = self.idle_exit_ns(c, self.now);
                            let d = self.jit_task(tid, exit_ns);
                            self.push(self.now + d, Kind::TimerWake, tid, ev.gen);
                        } else {
                            self.timer_wake(tid);
                            self.expire_ranges(c);
                        }
                    }
                }
                Kind::TurnEnd if ev.a() == SWITCH_KICK => {
                    // A switch's timer write, reached in the turn it was
                    // made in; a turn that ended before lost it (a
                    // simplification: the write is a few µs into the
                    // switch, and QEMU would kick when it is reached).
                    if ev.gen == self.turn_gen && self.turn_cpu != NIL {
                        self.turns.switch_kicks += 1;
                        if self.rr {
                            // Ended after the event, as any kick.
                            self.kick_all();
                        } else {
                            self.end_turn(TurnEnd::Kick);
                        }
                    } else {
                        self.turns.switch_kicks_lost += 1;
                        self.ctr.stale += 1;
                    }
                }
                Kind::TurnEnd if ev.a() == KICK_TIMER => {
                    if ev.gen != self.kick_gen || self.kick_at != self.now {
                        self.ctr.stale += 1;
                    } else {
                        self.kick_timer();
                    }
                }
                Kind::TurnEnd => {
                    if ev.gen == self.turn_gen && self.turn_cpu != NIL {
                        self.end_turn(TurnEnd::Deadline);
                    } else {
                        self.ctr.stale += 1;
                    }
                }
                Kind::Irq => {
                    let cpu = ev.a() as usize;
                    self.split_here(wl, cpu);
                    self.irq(cpu);
                }
            }
            if !self.switched_in.is_empty() {
                self.split_for_switch_ins(wl);
            }
            if !self.splits.is_empty() {
                self.do_splits(wl);
            }
            if self.turn_ns > 0 {
                self.pass_idle_turn();
            }
        }
        let ghosts = self.count_ghosts((last.t != u64::MAX).then_some(last), end_ns, drained);
        // The batches still open: their steps before the run's end (the
        // event that stopped it, or `end_ns`) are steps of the unbatched run.
        let (t, tag) = if self.stop {
            (self.now, self.cur_tag)
        } else {
            (end_ns, u32::MAX)
        };
        for cpu in 0..self.nr_cpus() {
            if self.cpus[cpu].batched {
                self.split(wl, cpu, t, tag);
            }
        }
        self.ctr.events -= self.ctr.stale;
        self.ctr.stale += ghosts;
        self.finish();
    }

    /// An event for `cpu` is handled now: a batch there is split at it
    /// first. True (to be chained into the tests of the event).
    #[inline(always)]
    fn split_here<W: Workload + ?Sized>(&mut self, wl: &mut W, cpu: usize) -> bool {
        if self.cpus[cpu].batched {
            self.split(wl, cpu, self.now, self.cur_tag);
        }
        true
    }

    /// Splits the batches another CPU's scheduler call touched in the
    /// event just handled ([`Kernel::touch`]) and left with a request to
    /// reschedule: the task's next step reads it. A batch whose CPU has
    /// none goes on: its steps would each read `None` (any later change
    /// of it comes with another such call or an event of the CPU, which
    /// splits the batch then).
    #[inline(never)]
    fn do_splits<W: Workload + ?Sized>(&mut self, wl: &mut W) {
        while let Some(cpu) = self.splits.pop() {
            let cpu = cpu as usize;
            if let Some((t, tag)) = self.cpus[cpu].split_at.take() {
                if self.cpus[cpu].batched && self.need_resched(cpu) != Resched::None {
                    self.split(wl, cpu, t, tag);
                }
            }
        }
    }

    /// The CPU whose runqueue holds task `tid`, or where it last ran.
    fn task_cpu(&self, tid: u32) -> usize {
        self.s
            .task_cpu(TaskId(tid))
            .unwrap_or_else(|| panic!("task {tid} is not alive"))
            .index()
    }

    /// vCPU turns: does a timer expiring now end the running turn?
    /// Under `-icount` a vCPU's turn runs to the next deadline of the
    /// virtual clock's timers, any vCPU's (its instruction budget); timers
    /// that expire at the instant a turn began end no turn. The interrupt
    /// is taken in its own vCPU's turn.
    fn timer_deadline(&self) -> bool {
        self.turn_ns > 0 && self.turn_cpu != NIL && self.turn_start < self.now
    }

    /// vCPU turns: may `cpu` handle an event now? In its turn, yes; when no
    /// vCPU has the turn (all halted), it takes it; otherwise the event
    /// waits for its turn. Always yes without vCPU turns.
    fn in_turn(&mut self, cpu: usize) -> bool {
        if self.turn_ns == 0 || self.turn_cpu == cpu as u32 {
            return true;
        }
        if self.turn_cpu == NIL {
            if self.rr {
                // The loop starts again at CPU 0 (`first_cpu`).
                for c in &mut self.cpus[..=cpu] {
                    c.exit_req = false;
                }
            }
            self.begin_turn(cpu);
            return true;
        }
        false
    }

    /// `cpu` takes the turn: its task's burst end is armed from now (what
    /// the task did not get done out of its turn is still to do), and the
    /// interrupts that came for it while out of its turn are handled now,
    /// in the order timers, one-shot timer, tick, IPI. The one-shot timer
    /// comes before the tick as in the kernel's timer interrupt
    /// (`kernel-hal`'s `timer_dispatch`: the HRTICK first, then the tick,
    /// when both are due), so a slice that ended out of the turn is ended
    /// by the HRTICK's request (immediate under lazy too), not by the
    /// tick's (lazy under lazy).
    fn begin_turn(&mut self, cpu: usize) {
        let away = std::mem::replace(&mut self.cpus[cpu].away_since, u64::MAX);
        let away_task = self.cpus[cpu].curr;
        // Out of its turn up to now: CPU time passes, no progress.
        self.charge(cpu);
        self.turn_cpu = cpu as u32;
        self.turn_start = self.now;
        self.turn_gen = self.turn_gen.wrapping_add(1);
        self.ctr.vcpu_turns += 1;
        if !self.rr {
            let gen = self.turn_gen;
            self.push(self.now + self.turn_ns, Kind::TurnEnd, 0, gen);
        } else if self.kick_at == u64::MAX {
            // A vCPU runs again: the kick timer restarts
            // (`rr_start_kick_timer`).
            self.arm_kick_timer();
        }
        if self.cpus[cpu].curr != NIL {
            self.arm_burst(cpu);
        }
        for (tid, tgen) in std::mem::take(&mut self.cpus[cpu].late_timers) {
            let t = &self.tasks[tid as usize];
            if t.timer_gen == tgen && t.state == TState::Blocked {
                self.timer_wake(tid);
                self.expire_ranges(cpu);
            }
        }
        if let Some(g) = self.cpus[cpu].late_hrtick.take() {
            if self.cpus[cpu].hrtick_gen == g {
                self.hrtick(cpu);
            }
        }
        let c = &mut self.cpus[cpu];
        if std::mem::take(&mut c.late_tick) && c.tick_on {
            self.tick(cpu);
        }
        if std::mem::take(&mut self.cpus[cpu].late_ipi) {
            self.ipi(cpu);
        }
        if std::mem::take(&mut self.cpus[cpu].late_ilb_end) {
            self.ilb_end(cpu);
        }
        if away != u64::MAX && away_task != NIL {
            self.count_away(self.now - away, self.cpus[cpu].curr == away_task);
        }
    }

    /// A busy vCPU got the turn back after `ns` out of it, its task
    /// running on (`resumed`) or switched out by what was waiting for the
    /// turn ([`TurnCounters::away_bins`]).
    fn count_away(&mut self, ns: u64, resumed: bool) {
        if ns <= AWAY_MIN_NS {
            return;
        }
        if !resumed {
            self.turns.away_switched += 1;
            return;
        }
        let bin = AWAY_BIN_NS.iter().take_while(|&&b| ns >= b).count();
        self.turns.away_bins[bin] += 1;
        self.turns.away_ns += ns;
    }

    /// The turn passes from the running vCPU to the next one in CPU order
    /// that is busy or has interrupts waiting (QEMU's round-robin loop: a
    /// halted vCPU with nothing pending returns at once); the same vCPU
    /// again if no other; none if every vCPU is halted.
    ///
    /// In QEMU's order (`rr_cpu_thread_fn`): after a turn that ended at a
    /// deadline (`why`), the vCPU next in order, unless it is CPU 0 (the
    /// loop's wrap runs the timers first, `icount_handle_deadline`) or has
    /// an `exit_request` (the loop stops there and its next pass runs the
    /// timers), gets a budget of 0: the deadline is now
    /// (`icount_prepare_for_run`, `icount_get_limit`), it runs the expired
    /// timers and executes nothing, and the turn goes on to the one after
    /// it. Every vCPU the loop reaches has its `exit_request` cleared.
    fn end_turn(&mut self, why: TurnEnd) {
        let old = self.turn_cpu as usize;
        if self.cpus[old].curr != NIL {
            self.cpus[old].away_since = self.now;
        }
        self.charge(old);
        self.cpus[old].burst_gen = next_gen(self.cpus[old].burst_gen);
        let len_ns = self.now - self.turn_start;
        let w = why as usize;
        self.turns.ends[w] += 1;
        self.turns.end_ns[w] += len_ns;
        let bin = TURN_BIN_NS.iter().take_while(|&&b| len_ns >= b).count();
        self.turns.end_bins[w][bin] += 1;
        let n = self.nr_cpus();
        let mut first = 1;
        if self.rr {
            let by_cpu = &mut self.turns.turn_ns_by_cpu;
            by_cpu.resize(n, 0);
            by_cpu[old] += len_ns;
            // Its own exit request ended it, or it has none.
            self.cpus[old].exit_req = false;
            let v = old + 1;
            if why == TurnEnd::Deadline && v < n && !self.cpus[v].exit_req {
                if self.cpus[v].curr != NIL {
                    self.turns.zero_budgets += 1;
                }
                first = 2;
            }
        }
        let next = (first..=n)
            .map(|i| (old + i) % n)
            .find(|&c| self.cpus[c].curr != NIL || self.cpus[c].has_late());
        if self.rr {
            let reached = next.map_or(n, |c| (c + n - old - 1) % n + 1);
            for i in first..=reached {
                self.cpus[(old + i) % n].exit_req = false;
            }
        }
        // No progress for `old` from here unless it gets the turn again.
        self.turn_cpu = NIL;
        match next {
            Some(c) => self.begin_turn(c),
            None => {
                self.turn_gen = self.turn_gen.wrapping_add(1);
                if self.rr {
                    // Every vCPU halted: the kick timer stops.
                    self.kick_gen = self.kick_gen.wrapping_add(1);
                    self.kick_at = u64::MAX;
                }
            }
        }
    }

    /// `Mechanisms::vcpu_pause`: does a vCPU out of its turn, other than
    /// `me`, hold `lock`? Its task is where it was when its turn ended
    /// (out of its turn it makes no progress), inside one of its
    /// [`LockWindow`]s for `lock` or not.
    fn held_away(&self, me: usize, lock: LockId) -> bool {
        (0..self.nr_cpus()).any(|c| c != me && self.holds_away(c, lock))
    }

    /// [`Kernel::held_away`] for the vCPU of CPU `c` alone.
    fn holds_away(&self, c: usize, lock: LockId) -> bool {
        let cpu = &self.cpus[c];
        c as u32 != self.turn_cpu
            && cpu.curr != NIL
            && cpu.curr == cpu.lock_task
            && !cpu.lock_windows.is_empty()
            && {
                let t = &self.tasks[cpu.curr as usize];
                let left = t.overhead + t.work;
                cpu.lock_windows
                    .iter()
                    .any(|w| w.lock == lock && w.lo < left && left < w.hi)
            }
    }

    /// `Mechanisms::vcpu_pause`: `cpu`, in its turn, spins on a lock held
    /// by a vCPU out of its turn: its `pause` ends its turn (handled after
    /// the event, [`Kernel::pass_idle_turn`]). What it was doing goes on
    /// in the model (the step or switch has been made); the turn passes.
    /// Only a turn that has run ends so: a vCPU whose turn begins at this
    /// instant is not sent on (two such vCPUs waiting on each other's
    /// windows would pass the turn back and forth at one instant).
    fn pause(&mut self, cpu: usize, kind: usize) {
        if self.pause_ends_turn(cpu) {
            self.turns.pauses[kind] += 1;
        }
    }

    /// [`Kernel::pause`]'s rule: ends `cpu`'s turn after the event if it is
    /// the turn's vCPU and its turn has run; returns whether this `pause`
    /// ended it (not if an earlier spin wait of the event did).
    fn pause_ends_turn(&mut self, cpu: usize) -> bool {
        if self.pause_turn == Some(self.turn_gen) {
            // Its turn ends already (one spin wait ends it).
            return false;
        }
        if cpu as u32 == self.turn_cpu && self.turn_start < self.now {
            self.pause_turn = Some(self.turn_gen);
            return true;
        }
        false
    }

    /// Linux's `need_resched()` on the stepping task's CPU: an immediate
    /// reschedule request (TIF_NEED_RESCHED) is pending. A lazy one is not
    /// seen, as Linux's `need_resched()` does not test
    /// TIF_NEED_RESCHED_LAZY.
    pub fn need_resched_now(&mut self) -> bool {
        self.need_resched(self.this_cpu as usize) == Resched::Now
    }

    /// Whether the stepping task, at the end of a syscall, must go through
    /// its return to user space before it decides its next one
    /// (`Mechanisms::syscall_user_return`): the step's wakeups have a cost
    /// still to pay inside the syscall ([`Costs::wake_ns`](crate::machine::Costs),
    /// `ipi_send_ns`, `scan_cpu_ns`), or a request is pending that a
    /// return to user space takes in the run's preemption model (any
    /// request, a lazy one too: Linux's `exit_to_user_mode_loop`). Else
    /// the return is a no-op and the task goes on at once.
    pub fn user_return_waits(&mut self) -> bool {
        if self.wake_debt > 0 {
            return true;
        }
        let need = self.need_resched(self.this_cpu as usize);
        self.takes(PreemptPoint::UserReturn, need)
    }

    /// A request `need` is taken at `point` in the run's preemption model
    /// (`sched::preempt`); none is taken anywhere, and the common case
    /// reads no preemption model.
    #[inline]
    fn takes(&self, point: PreemptPoint, need: Resched) -> bool {
        need != Resched::None && self.cfg.tunables.preempt_mode().preempts_at(point, need)
    }

    /// The stepping task's next burst is one Linux runs with preemption
    /// off and leaves as soon as `need_resched()` is set, calling
    /// `schedule()` itself (`mutex_optimistic_spin`'s poll of the owner):
    /// if the task is switched out in it (the model takes the immediate
    /// request at an interrupt's exit), the burst's rest is dropped, and
    /// the task steps as soon as it runs again.
    pub fn burst_leaves_at_resched(&mut self, tid: u32) {
        self.tasks[tid as usize].leaves_at_resched = true;
    }

    /// The running task spins on a pipe's mutex whose owner is on a CPU
    /// (`mutex_spin_on_owner`, one poll): with
    /// `Mechanisms::pipe_lock_pause`, the poll's `pause` ends the running
    /// vCPU's turn, since the owner's vCPU, another, is out of its turn
    /// (one vCPU executes at a time). The spinner polls again when its
    /// turn comes back. No cost.
    pub fn pipe_lock_spin(&mut self) {
        if self.pipe_pause_on {
            self.pause(self.this_cpu as usize, PAUSE_PIPE_LOCK);
        }
    }

    /// The stepping task's wakeups' locks become its CPU's
    /// [`LockWindow`]s, now that its burst (with the wakeups' cost first)
    /// is set.
    fn set_wake_windows(&mut self, cpu: usize, tid: u32) {
        let t = &self.tasks[tid as usize];
        let top = t.overhead + t.work;
        let c = &mut self.cpus[cpu];
        c.lock_task = tid;
        c.lock_prev = NIL;
        c.lock_windows.clear();
        for &(lock, from, to) in &self.wake_locks {
            c.lock_windows.push(LockWindow {
                lock,
                lo: top.saturating_sub(to),
                // Held at the burst's first instant too (a window is
                // open at `hi`'s exclusive bound).
                hi: if from == FROM_INSTANT {
                    top + 1
                } else {
                    top.saturating_sub(from)
                },
            });
        }
        self.wake_locks.clear();
    }

    /// A vCPU that halts (goes idle) ends its turn at once; so does one
    /// that a kick left with its `exit_request` (QEMU's turn order).
    fn pass_idle_turn(&mut self) {
        loop {
            if let Some(g) = self.kick_turn.take() {
                if g == self.turn_gen && self.turn_cpu != NIL {
                    self.end_turn(TurnEnd::Kick);
                }
                continue;
            }
            if let Some(g) = self.pause_turn.take() {
                if g == self.turn_gen && self.turn_cpu != NIL {
                    self.end_turn(TurnEnd::Pause);
                }
                continue;
            }
            if self.turn_cpu != NIL && self.cpus[self.turn_cpu as usize].curr == NIL {
                self.end_turn(TurnEnd::Halt);
                continue;
            }
            break;
        }
    }

    /// QEMU's turn order: `cpu` writes its LAPIC one-shot, armed for the
    /// earlier of its next tick and its HRTICK (the kernel's `program`;
    /// with `if_earlier`, `program_if_earlier`: no write when the armed
    /// one is still ahead and no later). A write that leaves it the
    /// earliest of the virtual clock's timers (every vCPU's one-shot and
    /// the kick timer; an equal expiry queues behind) kicks the running
    /// vCPU, and every vCPU gets an `exit_request` (`timer_mod_ns`,
    /// `timerlist_rearm`, `qemu_timer_notify_cb` in `util/qemu-timer.c`
    /// and `softmmu/icount.c`; `qemu_cpu_kick`, `rr_kick_vcpu_thread`:
    /// `cpu_exit` of every vCPU). Masking the timer (`timer_del`) kicks
    /// no one. Only the running vCPU writes (another's write waits for
    /// its turn).
    #[inline]
    fn lapic_program(&mut self, cpu: usize, if_earlier: bool) {
        if !self.rr && !self.switch_kick {
            return;
        }
        // A tick already due is being handled by the same timer interrupt
        // (the kernel's `timer_dispatch` runs a due HRTICK, then a due
        // tick, and switches at the interrupt's exit): its next period
        // counts, not the instant that has passed (the engine takes the
        // late HRTICK's switch before the late tick).
        let (tick_on, tick_at) = (self.cpus[cpu].tick_on, self.cpus[cpu].tick_at);
        let tick = if !tick_on {
            u64::MAX
        } else if tick_at > self.now {
            tick_at
        } else {
            self.next_tick_boundary()
        };
        let c = &self.cpus[cpu];
        let next = c.hrtick_at.min(tick);
        if if_earlier && c.lapic_at <= next && c.lapic_at > self.now {
            return;
        }
        // A deadline already past fires at once (the kernel's shortest
        // one-shot, 1 ns here).
        let at = if next == u64::MAX {
            u64::MAX
        } else {
            next.max(self.now + 1)
        };
        self.cpus[cpu].lapic_at = at;
        if self.switch_write == cpu as u32 {
            self.turns.switch_writes += 1;
        }
        if at == u64::MAX || self.turn_cpu != cpu as u32 {
            return;
        }
        let now = self.now;
        let earliest_other = self
            .cpus
            .iter()
            .enumerate()
            .filter(|&(i, c)| i != cpu && c.lapic_at > now)
            .map(|(_, c)| c.lapic_at)
            .min()
            .unwrap_or(u64::MAX)
            .min(self.kick_at);
        if at < earliest_other {
            if self.switch_write == cpu as u32 {
                // `Mechanisms::switch_timer_kick`: the kick comes as the
                // vCPU reaches the write, holding the runqueue lock.
                let (gen, at) = (self.turn_gen, self.now + self.switch_write_ns(cpu));
                self.push(at, Kind::TurnEnd, SWITCH_KICK, gen);
            } else if self.rr {
                self.kick_all();
            }
        }
    }

    /// How far into the switch just made on `cpu` its timer write is, ns:
    /// the last instant inside its runqueue-lock window (its length less
    /// 1 ns; 0 without one).
    fn switch_write_ns(&self, cpu: usize) -> u64 {
        self.cpus[cpu]
            .lock_windows
            .iter()
            .find(|w| w.lock == LockId::Rq(cpu as u32))
            .map_or(0, |w| (w.hi - w.lo).saturating_sub(1))
    }

    /// QEMU's turn order: a kick (`qemu_cpu_kick`, `rr_kick_vcpu_thread`)
    /// ends the running turn after the event and leaves an exit request
    /// on every vCPU.
    fn kick_all(&mut self) {
        self.turns.kicks += 1;
        for c in &mut self.cpus {
            c.exit_req = true;
        }
        self.kick_turn = Some(self.turn_gen);
    }

    /// QEMU's turn order: the kick timer expires (`rr_kick_thread`): it is
    /// armed again a period on, and as any timer's deadline it ends the
    /// running turn (its kick of `rr_current_cpu` then finds the vCPU
    /// after it, taking its zero budget, which clears it). Stopped while
    /// every vCPU is halted (`rr_wait_io_event`).
    fn kick_timer(&mut self) {
        self.turns.kick_timer += 1;
        self.arm_kick_timer();
        if self.timer_deadline() {
            self.end_turn(TurnEnd::Deadline);
        }
    }

    fn arm_kick_timer(&mut self) {
        self.kick_gen = self.kick_gen.wrapping_add(1);
        self.kick_at = self.now + self.turn_ns;
        let gen = self.kick_gen;
        self.push(self.kick_at, Kind::TurnEnd, KICK_TIMER, gen);
    }

    fn timer_wake(&mut self, tid: u32) {
        let c = self.task_cpu(tid);
        self.wake_from(tid, WakeFlags::IRQ, c);
        self.irq_exit(c, Place::Timer);
    }

    /// Interrupt exit on `cpu`: an idle CPU always reschedules when asked; a
    /// busy one as [`Kernel::irq_exit_preempts`] says.
    fn irq_exit(&mut self, cpu: usize, place: Place) {
        if self.cpus[cpu].curr == NIL && self.cpus[cpu].ilb_until > self.now {
            // The idle load balancer's run goes on: what the interrupt
            // queued runs at its end (`Kernel::ilb_end`).
            self.cpus[cpu].rq_touched = true;
            self.drain_ipis();
            return;
        }
        self.idle_end(cpu);
        self.cpus[cpu].rq_touched = true;
        let need = {
            let mut rq = self.s.cpu_rq(CpuId::wrapping(cpu));
            rq.update_rq_clock(self.now);
            self.s.sched_ttwu_pending(&mut rq);
            rq.need_resched()
        };
        let idle = self.cpus[cpu].curr == NIL;
        if idle || self.irq_exit_preempts(cpu, need, place) {
            self.reschedule(cpu, PrevAction::Stays);
        } else {
            self.drain_ipis();
        }
        if self.cpus[cpu].curr == NIL {
            // Left idle: back to sleep, the governor picking again.
            self.idle_enter(cpu);
        }
    }

    /// Whether an interrupt's exit on busy `cpu` preempts its task with the
    /// request `need` pending, as the kernel's `irq_exit` decides it: the
    /// exit is a return to user space when the task was in its user code
    /// ([`Next::RunUser`]), which takes any request in every model, and to
    /// kernel mode otherwise, which takes only an immediate one under full
    /// and lazy (`PreemptPoint::irq_exit`, `sched::preempt`).
    fn irq_exit_preempts(&mut self, cpu: usize, need: Resched, place: Place) -> bool {
        let curr = self.cpus[cpu].curr;
        let user = curr != NIL && self.tasks[curr as usize].user;
        let mode = self.cfg.tunables.preempt_mode();
        let go = mode.preempts_at(PreemptPoint::irq_exit(user), need);
        if go && curr != NIL && self.tasks[curr as usize].irqs_off {
            // Interrupts are off in the waker's wakeup path: the interrupt
            // is taken at the `spin_unlock_irqrestore`, the window's end,
            // where its request (an HRTICK's is immediate under lazy too)
            // preempts at the kernel point there (`Kernel::burst_end`).
            self.unlock.deferred_irqs[place as usize] += 1;
            return false;
        }
        if go && user && !mode.preempts_at(PreemptPoint::irq_exit(false), need) {
            self.ctr.irq_user_preempts += 1;
        }
        if go && curr != NIL {
            self.count_resched(place, need);
        }
        go
    }

    fn ipi(&mut self, cpu: usize) {
        self.cpus[cpu].ipi_pending = false;
        self.ctr.ipis += 1;
        if std::mem::take(&mut self.cpus[cpu].ilb_kicked) && self.ilb_arrive(cpu) {
            return;
        }
        let irq = self.irq_begin(cpu, IrqKind::Ipi);
        self.irq_handler_end(cpu, irq);
        self.irq_exit(cpu, Place::Ipi);
        self.irq_overhead(cpu, irq);
        // The handler's `timer_sync`: an HRTICK another CPU set for it.
        self.lapic_program(cpu, true);
    }

    /// The one-shot timer fired: `Rq::hrtick`, then the interrupt's exit
    /// (as the tick's).
    fn hrtick(&mut self, cpu: usize) {
        self.cpus[cpu].rq_touched = true;
        self.cpus[cpu].hrtick_at = u64::MAX;
        self.charge(cpu);
        let irq = self.irq_begin(cpu, IrqKind::Hrtick);
        let r = {
            let mut rq = self.s.cpu_rq(CpuId::wrapping(cpu));
            rq.update_rq_clock(self.now + irq.pre_ns);
            rq.hrtick()
        };
        self.irq_handler_end(cpu, irq);
        if self.cpus[cpu].curr != NIL && self.irq_exit_preempts(cpu, r, Place::Hrtick) {
            self.reschedule(cpu, PrevAction::Stays);
        }
        self.drain_ipis();
        self.irq_overhead(cpu, irq);
        self.lapic_program(cpu, false);
        self.expire_ranges(cpu);
    }

    fn tick(&mut self, cpu: usize) {
        self.cpus[cpu].rq_touched = true;
        if self.cpus[cpu].curr == NIL {
            // Tickless idle: the tick stops until the CPU runs a task again.
            self.cpus[cpu].tick_on = false;
            self.lapic_program(cpu, false);
            return;
        }
        self.charge(cpu);
        self.cpus[cpu].ticks += 1;
        let ticks = self.cpus[cpu].ticks;
        let irq = self.irq_begin(cpu, IrqKind::Tick);
        let r = {
            let mut rq = self.s.cpu_rq(CpuId::wrapping(cpu));
            rq.update_rq_clock(self.now + irq.pre_ns);
            self.s.sched_ttwu_pending(&mut rq);
            let r = rq.task_tick();
            self.s.tick_misfit(&rq);
            r
        };
        // The tick's interrupt exit (the kernel's `irq_exit`).
        self.irq_handler_end(cpu, irq);
        if self.irq_exit_preempts(cpu, r, Place::Tick) {
            self.reschedule(cpu, PrevAction::Stays);
        }
        if self.nr_cpus() > 1 {
            // The periodic balance, once a domain level's interval passed
            // (`sched_balance_trigger`, `sched_balance_domains`).
            let pulled = self.s.rebalance_domains(CpuId::wrapping(cpu), self.now);
            // Moved tasks or an active balance's push (`Kernel::reschedule`).
            if !pulled.is_empty() || !pulled.touched().is_empty() {
                self.touched_by_balance(cpu, pulled.touched());
            }
            if !pulled.is_empty() {
                self.ctr.balanced += pulled.len() as u64;
                let need = self.s.cpu_rq(CpuId::wrapping(cpu)).need_resched();
                if self.cpus[cpu].curr != NIL && self.irq_exit_preempts(cpu, need, Place::Tick) {
                    self.reschedule(cpu, PrevAction::Stays);
                }
            }
            if (ticks + cpu as u64).is_multiple_of(BALANCE_TICKS) {
                self.nohz_kick(cpu);
            }
        }
        self.drain_ipis();
        if irq.ns == 0 {
            self.tick_irq_cost(cpu);
        }
        self.irq_overhead(cpu, irq);
        let tick = self.cfg.tick_ns();
        let c = &mut self.cpus[cpu];
        if c.curr == NIL {
            c.tick_on = false;
        } else {
            // The next period boundary (a tick handled late, out of its
            // vCPU's turn, keeps the period's phase).
            let gen = c.tick_gen;
            let at = (self.now / tick + 1) * tick;
            c.tick_at = at;
            self.push(at, Kind::Tick, cpu as u32, gen);
        }
        // The timer interrupt's end arms the one-shot again
        // (`timer_reload`).
        self.lapic_program(cpu, false);
        self.expire_ranges(cpu);
    }

    /// The tick's own interrupt ([`Machine::tick_irq_ns`], `qemu:N`): its
    /// entry, handler and exit run on the CPU's vCPU (in its turn) before
    /// anything else there, so they are the overhead of the task that runs
    /// after the tick (the one it preempted to, if it did: ahead of that
    /// switch's own cost), which is charged the time. Linux without
    /// `CONFIG_IRQ_TIME_ACCOUNTING` charges the interrupted task; the two
    /// agree unless the tick preempts, where this charges the next task's
    /// runtime (and vruntime) with what Linux charges the preempted one's:
    /// a simplification that touches only the ticks that reschedule at
    /// their own exit (about 100 a run of the `qemu:4` 4-group pipes row,
    /// under full and lazy alike; docs/results/linux.md). The
    /// tick's decisions are made at its instant, as before. This is the
    /// model with `--no-irq-split`; with `Mechanisms::irq_split` the tick
    /// is charged as Linux charges it ([`Kernel::irq_begin`]).
    fn tick_irq_cost(&mut self, cpu: usize) {
        let tid = self.cpus[cpu].curr;
        if tid == NIL || self.m.tick_irq_ns == 0 || !self.m.mech.irq_cost {
            return;
        }
        self.charge(cpu);
        let ns = self.jit_task(tid, self.m.tick_irq_ns);
        self.tasks[tid as usize].overhead += ns;
        self.arm_burst(cpu);
    }

    /// An interrupt taken on `cpu` now: its cost, what of it comes before
    /// its decisions, and whether it goes into the interrupted task's
    /// runtime (`Mechanisms::irq_split`). Nothing on an idle CPU, nor for a
    /// mechanism that is off. The tick with `--no-irq-split` is
    /// [`Kernel::tick_irq_cost`]'s (none here).
    fn irq_begin(&mut self, cpu: usize, kind: IrqKind) -> Irq {
        let tid = self.cpus[cpu].curr;
        let m = &self.m;
        let split = m.mech.irq_split;
        let (pre, whole) = match kind {
            IrqKind::Tick if m.mech.irq_cost && split => (m.tick_pre_ns, m.tick_irq_ns),
            IrqKind::Hrtick if m.mech.hrtick_cost => (m.hrtick_pre_ns, m.hrtick_irq_ns),
            IrqKind::Ipi if m.mech.ipi_cost => (0, m.ipi_irq_ns),
            _ => (0, 0),
        };
        if tid == NIL || whole == 0 {
            return Irq::NONE;
        }
        let ns = self.jit_task(tid, whole);
        Irq {
            pre_ns: if split { pre.min(ns) } else { 0 },
            ns,
            split,
        }
    }

    /// The handler's end, after its decisions and before its exit's
    /// switch: with `Mechanisms::irq_split` the CPU's scheduler clock
    /// moves to it, so a switch there charges the interrupted task the
    /// whole handler, as Linux without `CONFIG_IRQ_TIME_ACCOUNTING`
    /// (`update_rq_clock_task` gives `clock_task` the whole delta). The
    /// next task's clock then starts there, while the time itself is
    /// spent as its overhead ([`Kernel::irq_overhead`]).
    fn irq_handler_end(&mut self, cpu: usize, irq: Irq) {
        if irq.split && irq.ns > 0 {
            self.s
                .cpu_rq(CpuId::wrapping(cpu))
                .update_rq_clock(self.now + irq.ns);
        }
    }

    /// The interrupt's time, spent on the CPU's vCPU (in its turn) before
    /// anything else there: overhead of the task that runs after it (the
    /// interrupted one, or the one the exit switched to).
    fn irq_overhead(&mut self, cpu: usize, irq: Irq) {
        let tid = self.cpus[cpu].curr;
        if tid == NIL || irq.ns == 0 {
            return;
        }
        self.charge(cpu);
        self.tasks[tid as usize].overhead += irq.ns;
        self.arm_burst(cpu);
    }

    /// A balancing pass on `cpu` moved tasks, changing the runqueues of
    /// `others` too (their sources, and a destination other than `cpu`).
    fn touched_by_balance(&mut self, cpu: usize, others: &CpuMask) {
        self.touch(cpu);
        for c in others.cpus() {
            self.touch(c.index());
        }
    }

    /// A scheduler call changed (or may have changed) `cpu`'s runqueue:
    /// its need-resched state must be read again, and a batch running
    /// there is split where the event being handled falls in it if the
    /// call left a request to reschedule (once the event is handled:
    /// `Kernel::do_splits`).
    #[inline]
    fn touch(&mut self, cpu: usize) {
        let c = &mut self.cpus[cpu];
        c.rq_touched = true;
        if c.batched && c.split_at.is_none() {
            c.split_at = Some((self.now, self.cur_tag));
            self.splits.push(cpu as u32);
        }
    }

    /// `cpu`'s need-resched state, read at a syscall return. The runqueue
    /// is read only if a scheduler call may have changed the state since
    /// it was last read as `None`: every call that can (on this CPU, a
    /// wakeup placed here or taken from here, a balancing move) marks the
    /// CPU. A burst that ends without any scheduler call, most of them on a
    /// busy machine, then reads nothing. The engine owns the scheduler
    /// (`&mut`), so the read takes no lock ([`Scheduler::rq_mut`]): a
    /// locked instruction and its release store less, each some 10-25 ns
    /// on the host these figures come from (docs/design/simulator.md).
    #[inline]
    fn need_resched(&mut self, cpu: usize) -> Resched {
        if !self.cpus[cpu].rq_touched {
            debug_assert_eq!(
                self.s.rq_mut(CpuId::wrapping(cpu)).need_resched(),
                Resched::None,
                "cpu {cpu}: need-resched changed by an unmarked scheduler call"
            );
            return Resched::None;
        }
        let need = self.s.rq_mut(CpuId::wrapping(cpu)).need_resched();
        if need == Resched::None {
            self.cpus[cpu].rq_touched = false;
        }
        need
    }

    /// `nohz_balancer_kick`: once a tickless CPU's periodic balance is
    /// due, with two or more runnable tasks here or a misfit running here
    /// (`Scheduler::nohz_kick_wanted`), or with more than one CPU of this
    /// LLC busy (`Scheduler::nohz_llc_kick_wanted`), kick the first idle
    /// CPU in CPU order (`find_new_ilb`; the rules in
    /// `Scheduler::nohz_kick_target`). Either way the kicked CPU runs as the idle load balancer
    /// ([`Kernel::ilb_pass`]), as the kernel's and Linux's do for both
    /// kinds of kick (`kick_ilb(NOHZ_BALANCE_KICK)`, `_nohz_idle_balance`).
    /// With `--no-ilb-kick` (`Mechanisms::ilb_kick` off) the first kind
    /// sends its CPU an IPI instead, whose newidle balance there may be
    /// skipped by NI_RANDOM and counts no failure (the kernel's kick
    /// before a04e0ac, the model before).
    fn nohz_kick(&mut self, cpu: usize) {
        let this = CpuId::wrapping(cpu);
        if self.nr_idle == 0 {
            return;
        }
        let nr_running = self.s.cpu_rq(this).nr_running();
        let n = self.nr_cpus();
        let mut nohz = CpuMask::new();
        for c in (0..n).filter(|&c| self.cpus[c].curr == NIL) {
            nohz.set(c);
        }
        match self.s.nohz_kick_target(this, nr_running, &nohz, self.now) {
            Some((c, false)) if !self.m.mech.ilb_kick => self.send_ipi(c.index()),
            Some((c, _)) if self.m.mech.ilb_ipi => {
                // `kick_ilb`: no second IPI while a kick is on its way.
                let c = c.index();
                if !self.cpus[c].ilb_kicked {
                    self.cpus[c].ilb_kicked = true;
                    self.send_ipi(c);
                }
            }
            Some((c, _)) => {
                self.ilb_pass(c.index(), &nohz);
            }
            None => {}
        }
    }

    /// `Mechanisms::ilb_ipi`: the kick's IPI reaches `ilb`
    /// (`nohz_csd_func`). On a CPU still idle with nothing to run, the
    /// pass runs at the IPI's exit (SCHED_SOFTIRQ, `_nohz_idle_balance`)
    /// over the CPUs idle now, and the CPU runs no task for the IPI's
    /// measured receive cost ([`Machine::ipi_irq_ns`]; the pass's own cost
    /// is not measured and not charged), then [`Kernel::ilb_end`]. Returns
    /// false, the IPI handled as any other, if the CPU has a task to run
    /// (Linux skips the pass when `need_resched()`).
    fn ilb_arrive(&mut self, ilb: usize) -> bool {
        if self.cpus[ilb].curr != NIL {
            return false;
        }
        if self.has_queued(ilb) {
            return false;
        }
        let mut nohz = CpuMask::new();
        for c in (0..self.nr_cpus()).filter(|&c| self.cpus[c].curr == NIL) {
            nohz.set(c);
        }
        self.ilb_pass(ilb, &nohz);
        let cost = if self.m.mech.ipi_cost && self.m.ipi_irq_ns > 0 {
            self.jit_cpu(ilb, self.m.ipi_irq_ns)
        } else {
            0
        };
        if cost == 0 {
            self.ilb_end(ilb);
            return true;
        }
        let until = self.now + cost;
        self.cpus[ilb].ilb_until = until;
        self.push(until, Kind::Ipi, ilb as u32, ILB_END);
        true
    }

    /// Idle `cpu` has a task to run: its runqueue, with the wake list
    /// drained into it (`sched_ttwu_pending`), is not empty.
    fn has_queued(&mut self, cpu: usize) -> bool {
        self.cpus[cpu].rq_touched = true;
        let mut rq = self.s.cpu_rq(CpuId::wrapping(cpu));
        rq.update_rq_clock(self.now);
        self.s.sched_ttwu_pending(&mut rq);
        rq.nr_running() > 0
    }

    /// The idle load balancer's run on `cpu` ends (the softirq's return to
    /// the idle loop): it schedules what it pulled for itself or was
    /// woken onto it meanwhile; otherwise it goes back to sleep, the
    /// governor picking again (its idle period ended at the IPI's
    /// arrival).
    fn ilb_end(&mut self, cpu: usize) {
        if self.cpus[cpu].ilb_until > self.now {
            // A later run's end (a kick during the run) is queued.
            return;
        }
        self.cpus[cpu].ilb_until = 0;
        self.idle_end(cpu);
        if self.cpus[cpu].curr == NIL && self.has_queued(cpu) {
            self.reschedule(cpu, PrevAction::Stays);
        }
        self.drain_ipis();
        if self.cpus[cpu].curr == NIL {
            self.idle_enter(cpu);
        }
    }

    /// The kicked idle load balancer `ilb`'s pass,
    /// `Scheduler::nohz_idle_balance` (the periodic pass of each due idle
    /// CPU of `nohz`, `ilb` itself last): at the kick's IPI's arrival
    /// ([`Kernel::ilb_arrive`], `Mechanisms::ilb_ipi`), or at the kick's
    /// instant with `--no-ilb-ipi`, the kicked CPU's wake then not
    /// modelled. A CPU that got tasks is sent an IPI (it schedules them),
    /// `ilb` itself only with `--no-ilb-ipi` (otherwise it schedules them
    /// at its run's end, [`Kernel::ilb_end`]).
    fn ilb_pass(&mut self, ilb: usize, nohz: &CpuMask) {
        let mut got = CpuMask::new();
        let mut touched = CpuMask::new();
        let mut moved = 0;
        self.s
            .nohz_idle_balance(CpuId::wrapping(ilb), nohz, self.now, |c, pulled| {
                if !pulled.is_empty() {
                    got.add(c);
                    moved += pulled.len() as u64;
                }
                touched = touched.or(pulled.touched());
                true
            });
        self.ctr.balanced += moved;
        for c in touched.cpus() {
            self.touch(c.index());
        }
        for c in got.cpus() {
            self.touch(c.index());
            if c.index() != ilb || !self.m.mech.ilb_ipi {
                self.send_ipi(c.index());
            }
        }
    }

    /// A task's burst ended: its step says what it does next. Wakeups it
    /// made there cost it CPU time first: added to its next burst, or run
    /// as a burst of their own before it blocks, sleeps or exits.
    #[inline(always)]
    fn burst_end<W: Workload + ?Sized>(&mut self, wl: &mut W, cpu: usize) {
        self.charge(cpu);
        let tid = self.cpus[cpu].curr;
        self.this_cpu = cpu as u32;
        // Once, or again at once after a return to user space that took
        // nothing (`Next::ReturnToUser`).
        loop {
            self.tasks[tid as usize].leaves_at_resched = false;
            let mut next = match self.tasks[tid as usize].deferred.take() {
                Some(n) => n,
                // (Also at a window's end if the task, about to block, was
                // woken in it: it steps again, `Kernel::wake_from`.)
                None => wl.step(self, tid),
            };
            if self.tasks[tid as usize].irqs_off {
                // The window's end: `spin_unlock_irqrestore`, a kernel
                // preemption point (an immediate request under full and lazy),
                // then what the step said, at the same instant (the syscall's
                // rest after the unlock is in its measured cost, before the
                // wakeup).
                self.tasks[tid as usize].irqs_off = false;
                if self.unlock_preempts(cpu, tid, next) {
                    return;
                }
            }
            let debt = std::mem::take(&mut self.wake_debt);
            if debt > 0 {
                if matches!(next, Next::Exit) {
                    // It pays its wakeups, then exits: a run the workload
                    // ends meanwhile ends there (the workload's time is
                    // its own, from the decisions).
                    self.tasks[tid as usize].exit_pending = true;
                    self.exits_pending += 1;
                }
                if self.m.mech.wake_unlock {
                    // The wakeups were made inside the step's syscall, with
                    // interrupts off (`try_to_wake_up` under the wait queue's
                    // `spin_lock_irqsave`): the waker pays them before any
                    // preemption point, and their requests wait for the unlock.
                    let t = &mut self.tasks[tid as usize];
                    t.deferred = Some(next);
                    t.user = false;
                    t.irqs_off = true;
                    t.work = debt;
                    self.unlock.windows += 1;
                    if self.pause_on {
                        self.set_wake_windows(cpu, tid);
                    }
                    self.arm_burst(cpu);
                    return;
                }
                next = match next {
                    Next::Run(ns) => Next::Run(ns + debt),
                    Next::RunKernel(ns) => Next::RunKernel(ns + debt),
                    Next::RunOn(ns) => Next::RunOn(ns + debt),
                    // Before user code, a block, a sleep or an exit the wakeups
                    // are a kernel burst of their own (the syscall that made
                    // them), so user code starts after them.
                    then => {
                        self.tasks[tid as usize].deferred = Some(then);
                        Next::RunKernel(debt)
                    }
                };
            }
            // The user-mode mark: set for user code only (a task that blocks,
            // sleeps or pays its wakeups is in the kernel).
            self.tasks[tid as usize].user = matches!(next, Next::RunUser(_));
            match next {
                Next::Run(ns) | Next::RunUser(ns) | Next::RunKernel(ns) | Next::RunOn(ns) => {
                    self.tasks[tid as usize].work = ns;
                    if self.pause_on && !self.wake_locks.is_empty() {
                        self.set_wake_windows(cpu, tid);
                    } else if self.pause_on
                        && self.m.mech.burst_lock_windows
                        && self.cpus[cpu].lock_task == tid
                    {
                        // A burst without wakeups holds no lock: the windows
                        // of the burst before it (its switch's, its wakeups')
                        // are passed.
                        self.cpus[cpu].lock_windows.clear();
                        self.cpus[cpu].lock_prev = NIL;
                    }
                    // A syscall that returns to user space takes any request,
                    // lazy too (`sched::preempt`, Linux's
                    // `exit_to_user_mode_loop`), in every model; kernel code
                    // that goes on takes only an immediate one, under full or
                    // lazy; kernel code that goes on from the burst before
                    // (`Next::RunOn`) has no point here.
                    let point = match next {
                        Next::RunKernel(_) => Some(PreemptPoint::Kernel),
                        Next::RunOn(_) => None,
                        _ => Some(PreemptPoint::UserReturn),
                    };
                    let need = self.need_resched(cpu);
                    if let Some(point) = point.filter(|&p| self.takes(p, need)) {
                        self.count_resched(
                            if point == PreemptPoint::Kernel {
                                Place::Kernel
                            } else {
                                Place::UserReturn
                            },
                            need,
                        );
                        self.reschedule(cpu, PrevAction::Stays);
                    } else if need != Resched::None
                        || !(self.batch_on && self.try_batch(wl, cpu, tid))
                    {
                        // A request this point does not take (a lazy one at a
                        // kernel point) is taken at the task's next return to
                        // user space, which a batch's steps would pass over:
                        // no batch while one is pending. (A burst that starts
                        // with a return to user space has none pending here.)
                        self.arm_burst(cpu);
                    }
                }
                Next::ReturnToUser => {
                    let need = self.need_resched(cpu);
                    if self.takes(PreemptPoint::UserReturn, need) {
                        // Switched out here, it steps when it runs again (a
                        // burst of no work).
                        self.count_resched(Place::UserReturn, need);
                        self.tasks[tid as usize].work = 0;
                        self.reschedule(cpu, PrevAction::Stays);
                    } else {
                        continue;
                    }
                }
                Next::Block => {
                    self.tasks[tid as usize].state = TState::Blocked;
                    self.reschedule(cpu, PrevAction::Sleeps);
                }
                Next::Sleep(ns) => self.sleep(cpu, tid, ns, 0),
                Next::SleepRange(ns, slack_ns) => self.sleep(cpu, tid, ns, slack_ns),
                Next::Exit => {
                    if std::mem::take(&mut self.tasks[tid as usize].exit_pending) {
                        self.exits_pending -= 1;
                    }
                    self.tasks[tid as usize].state = TState::Exited;
                    self.reschedule(cpu, PrevAction::Exits);
                }
            }

            return;
        }
    }

    /// Task `tid` on `cpu` sleeps for `ns`, and at most `slack_ns` more: its
    /// timer fires at the end, or earlier with another timer interrupt of
    /// the CPU once `ns` have passed ([`Next::SleepRange`]).
    fn sleep(&mut self, cpu: usize, tid: u32, ns: u64, slack_ns: u64) {
        let t = &mut self.tasks[tid as usize];
        t.state = TState::Blocked;
        t.timer_gen = t.timer_gen.wrapping_add(1);
        let hard = self.now + ns + slack_ns;
        t.wake_origin = hard;
        let gen = t.timer_gen;
        self.push(hard, Kind::TimerFire, tid, gen);
        if slack_ns > 0 {
            self.cpus[cpu].ranges.push((tid, gen, self.now + ns));
        }
        self.reschedule(cpu, PrevAction::Sleeps);
    }

    /// A timer interrupt of `cpu` (the tick, the HRTICK, a sleeper's timer)
    /// also ends the ranged sleeps armed there whose soft deadline has
    /// passed, in the order they were armed; entries whose sleep ended
    /// otherwise go.
    fn expire_ranges(&mut self, cpu: usize) {
        let mut i = 0;
        while i < self.cpus[cpu].ranges.len() {
            let (tid, gen, soft) = self.cpus[cpu].ranges[i];
            let t = &self.tasks[tid as usize];
            if t.timer_gen != gen || t.state != TState::Blocked {
                self.cpus[cpu].ranges.remove(i);
            } else if soft <= self.now {
                self.cpus[cpu].ranges.remove(i);
                self.ranges_early += 1;
                self.tasks[tid as usize].wake_origin = self.now;
                self.timer_wake(tid);
            } else {
                i += 1;
            }
        }
    }

    /// The end of task `tid`'s irqs-off window on `cpu`, the unlock: an
    /// immediate request pending (the wakeup's own under full, a deferred
    /// HRTICK's or tick's) preempts there, a kernel preemption point, with
    /// `next` kept for when it runs again. A `Next::Run` or `RunUser` is
    /// then a return to user space at the same instant (and only that
    /// takes a lazy request); a block, sleep or exit goes through
    /// `schedule()` anyway. True if it was switched out.
    fn unlock_preempts(&mut self, cpu: usize, tid: u32, next: Next) -> bool {
        let ns = match next {
            Next::Run(ns) | Next::RunUser(ns) | Next::RunKernel(ns) | Next::RunOn(ns) => ns,
            // Switched out at the unlock, it steps when it runs again.
            Next::ReturnToUser => 0,
            _ => return false,
        };
        let need = self.need_resched(cpu);
        if !self.takes(PreemptPoint::Kernel, need) {
            return false;
        }
        self.unlock.unlock_preempts += 1;
        self.count_resched(Place::Kernel, need);
        let t = &mut self.tasks[tid as usize];
        t.work = ns;
        t.user = matches!(next, Next::RunUser(_));
        self.reschedule(cpu, PrevAction::Stays);
        true
    }

    /// Batching: task `tid` on `cpu` has just stepped and goes on with a
    /// burst of CPU work; its workload plans its next quiet steps
    /// ([`Workload::plan`]) before the first event that may come for the
    /// CPU (its tick, its one-shot timer, an IPI on the way; no more than
    /// [`BATCH_WINDOW_NS`] on, nor past the run's end), and one event is
    /// queued at the time of the step after them. False if none is quiet
    /// (the burst is armed as usual).
    #[inline(never)]
    fn try_batch<W: Workload + ?Sized>(&mut self, wl: &mut W, cpu: usize, tid: u32) -> bool {
        let t = &self.tasks[tid as usize];
        if t.overhead != 0 || t.deferred.is_some() {
            return false;
        }
        let work = t.work;
        // The tick's pending event (the next period boundary).
        let tick_at = if self.cpus[cpu].tick_on {
            self.next_tick_boundary()
        } else {
            u64::MAX
        };
        let c = &self.cpus[cpu];
        let first = self.now + time_for(c.cap, work);
        let mut before = (self.now + BATCH_WINDOW_NS)
            .min(self.end_ns.saturating_add(1))
            .min(c.hrtick_at);
        if c.ipi_pending {
            before = before.min(c.ipi_at);
        }
        before = before.min(tick_at).min(c.irq_at);
        if first >= before {
            return false;
        }
        let Some(p) = wl.plan(self, tid, first, before) else {
            return false;
        };
        #[cfg(debug_assertions)]
        {
            let mut times = Vec::new();
            wl.planned_times(self, tid, first, u64::MAX, &mut times);
            debug_assert!(times.windows(2).all(|w| w[0] < w[1]) && times[0] == first);
            debug_assert_eq!(times.len(), p.steps as usize + 1);
            debug_assert_eq!(
                (times[times.len() - 2], times[times.len() - 1]),
                (p.last_ns, p.end_ns)
            );
            debug_assert!(p.end_ns < before);
        }
        self.batched_tasks[tid as usize / 64] |= 1 << (tid % 64);
        let c = &mut self.cpus[cpu];
        c.batched = true;
        c.burst_gen = next_gen(c.burst_gen) | BATCH_GEN;
        c.batch_first = first;
        c.batch = p;
        c.step_at = p.end_ns;
        let gen = c.burst_gen;
        self.push(p.end_ns, Kind::Burst, cpu as u32, gen);
        true
    }

    /// The first tick period boundary after now, `(now / tick + 1) *
    /// tick`: worked out again only once now reaches it (or the period
    /// changes), not with a division at every batch.
    #[inline(always)]
    fn next_tick_boundary(&mut self) -> u64 {
        let tick = self.cfg.tick_ns();
        if self.now >= self.tick_boundary.1 || tick != self.tick_boundary.0 {
            self.tick_boundary = (tick, (self.now / tick + 1) * tick);
        }
        self.tick_boundary.1
    }

    /// Splits `cpu`'s batch at the event (`t`, `tag`) (in the order of
    /// events, [`Ev::key`]): the planned steps before it are taken, and
    /// the burst the task is in then ends at its own event, as in the
    /// unbatched run.
    fn split<W: Workload + ?Sized>(&mut self, wl: &mut W, cpu: usize, t: u64, tag: u32) {
        let burst = Ev::new(0, Kind::Burst, cpu as u32, 0).tag;
        let (tid, first) = (self.cpus[cpu].curr, self.cpus[cpu].batch_first);
        let steps = self.cpus[cpu].batch.steps;
        // The steps before the event: a step's own event at time `ti`
        // would come before it if `ti < t`, or `ti == t` and a burst end
        // of this CPU is taken before the event's kind and argument.
        let until = if burst < tag { t.saturating_add(1) } else { t };
        let (now, this) = (self.now, self.this_cpu);
        self.this_cpu = cpu as u32;
        #[cfg(debug_assertions)]
        let expected = {
            let mut times = Vec::new();
            wl.planned_times(self, tid, first, until, &mut times);
            split_point(&times, steps, until)
        };
        let (k, prev, next) = wl.take_before(self, tid, first, steps, until);
        #[cfg(debug_assertions)]
        debug_assert_eq!((k, prev, next), expected, "split of task {tid}'s batch");
        (self.now, self.this_cpu) = (now, this);
        self.batch_splits += 1;
        self.end_batch(cpu, tid, k, prev, next);
        let c = &mut self.cpus[cpu];
        c.burst_gen = next_gen(c.burst_gen);
        c.step_at = next;
        let gen = c.burst_gen;
        self.push(next, Kind::Burst, cpu as u32, gen);
    }

    /// Batching: `cpu`'s batch must have its event before `limit_ns`
    /// ([`Workload::quiet_until`]): cut short to the planned steps whose
    /// step after them is before it ([`Workload::planned_before`]), its
    /// event moved there, if that is after now; split at the event being
    /// handled otherwise. The steps left out are taken one at a time,
    /// at the times planned, as in the unbatched run.
    fn cut<W: Workload + ?Sized>(&mut self, wl: &mut W, cpu: usize, limit_ns: u64) {
        let c = &self.cpus[cpu];
        let (tid, first, steps) = (c.curr, c.batch_first, c.batch.steps);
        let this = self.this_cpu;
        self.this_cpu = cpu as u32;
        let kept = wl.planned_before(self, tid, first, steps, limit_ns);
        self.this_cpu = this;
        match kept {
            Some(p) if p.end_ns > self.now => {
                debug_assert!(p.steps < steps && p.end_ns < limit_ns);
                let c = &mut self.cpus[cpu];
                c.burst_gen = next_gen(c.burst_gen) | BATCH_GEN;
                c.batch = p;
                c.step_at = p.end_ns;
                let gen = c.burst_gen;
                self.push(p.end_ns, Kind::Burst, cpu as u32, gen);
            }
            _ => self.split(wl, cpu, self.now, self.cur_tag),
        }
    }

    /// Takes the first `k` planned steps of `cpu`'s batch, the last of
    /// them at `last_ns` and the next step at `next_ns`, and ends the
    /// batch: the task's state is then what it is in the unbatched run
    /// after them (its charge up to the last of them, and the burst that
    /// follows it to do).
    fn materialize<W: Workload + ?Sized>(
        &mut self,
        wl: &mut W,
        cpu: usize,
        k: u32,
        last_ns: u64,
        next_ns: u64,
    ) {
        let tid = self.cpus[cpu].curr;
        let (now, this) = (self.now, self.this_cpu);
        self.this_cpu = cpu as u32;
        wl.take(self, tid, k);
        (self.now, self.this_cpu) = (now, this);
        self.end_batch(cpu, tid, k, last_ns, next_ns);
    }

    /// Ends `cpu`'s batch (of task `tid`) once its first `k` planned
    /// steps are taken, the last of them at `last_ns` and the next step
    /// at `next_ns` ([`Kernel::materialize`]).
    #[inline(always)]
    fn end_batch(&mut self, cpu: usize, tid: u32, k: u32, last_ns: u64, next_ns: u64) {
        self.ctr.events += k as u64;
        self.batched_steps += k as u64;
        self.batched_tasks[tid as usize / 64] &= !(1 << (tid % 64));
        let c = &mut self.cpus[cpu];
        c.batched = false;
        c.split_at = None;
        if k > 0 {
            let t = &mut self.tasks[tid as usize];
            t.runtime += last_ns - c.run_start;
            c.run_start = last_ns;
            // The burst the k-th step began: to the next step's time.
            t.work = work_in(c.cap, next_ns - last_ns);
            t.user = false;
        }
    }

    fn finish(&mut self) {
        let now = self.now;
        for (cpu, c) in self.cpus.iter_mut().enumerate() {
            if self.trace_until > 0 && c.curr != NIL && c.since < self.trace_until {
                self.trace.push(Segment {
                    cpu: cpu as u32,
                    start: c.since,
                    end: now,
                    tid: c.curr,
                });
            }
            if c.curr == NIL {
                c.idle_ns += now - c.since;
            } else {
                c.busy_ns += now - c.since;
            }
            c.since = now;
        }
        for cpu in 0..self.nr_cpus() {
            self.charge(cpu);
            let rq = self.s.cpu_rq(CpuId::wrapping(cpu));
            self.ctr.migrations += rq.stats.nr_migrations_in;
            self.ctr.buddy_picks += rq.fair.pick_stats.buddy;
            self.ctr.wakeup_preempts += rq.stats.nr_wakeup_preempt;
            self.ctr.tick_resched += rq.stats.nr_tick_resched;
            self.ctr.hrtick_resched += rq.stats.nr_hrtick_resched;
            drop(rq);
            for level in 0..self.s.domains(CpuId::wrapping(cpu)).len() {
                let st = self.s.newidle_stats(CpuId::wrapping(cpu), level);
                self.ctr.newidle_balances += st.balances;
                self.ctr.newidle_skipped += st.skipped;
            }
        }
    }

    /// Each CPU's capacity this boot ([`Machine::speed`] times machine
    /// noise's speed factors, if modelled; SMT sharing's changes while a
    /// run goes on).
    pub fn capacities(&self) -> Vec<u32> {
        self.cpus.iter().map(|c| c.cap).collect()
    }

    /// Busy and idle ns of each CPU (after the run).
    pub fn cpu_times(&self) -> Vec<(u64, u64)> {
        self.cpus.iter().map(|c| (c.busy_ns, c.idle_ns)).collect()
    }

    /// Tasks that exited.
    pub fn nr_exited(&self) -> usize {
        self.tasks
            .iter()
            .filter(|t| t.state == TState::Exited)
            .count()
    }
}

/// Machine noise ([`crate::machine::MachineNoise`]) for the boot `boot` of
/// `seed`: each CPU's capacity (its own, [`Machine::speed`], times the
/// boot's whole-machine and per-CPU speed factors), the interrupt streams
/// and the boot's stream for placement. Without noise: the CPUs' own
/// capacities and no draw at all.
fn machine_noise(m: &Machine, seed: u64, boot: u64) -> (Vec<u32>, Option<Irqs>, Option<Rng>) {
    let n = m.topo.nr_cpus();
    let own = |c: usize| m.speed.get(c).copied().unwrap_or(FULL_CAPACITY);
    if !(m.mech.machine_noise && m.noise_applies()) {
        return ((0..n).map(own).collect(), None, None);
    }
    let p = crate::machine::MACHINE_NOISE;
    let nseed = Rng::stream(seed, NOISE_STREAM).next_u64() ^ boot;
    let mut b = Rng::stream(nseed, 0);
    // Speeds per million, drawn in whole ppm (one draw each).
    let slow = |r: &mut Rng, spread_ppm: u32| 1_000_000 - r.below(spread_ppm as u64 + 1);
    // A part switched off is still drawn, so that the other parts' draws
    // are those of the run with it.
    let full = |on: bool, f: u64| if on { f } else { 1_000_000 };
    let whole = full(
        m.mech.noise_boot_speed,
        slow(&mut b, p.boot_speed_spread_ppm),
    );
    let caps = (0..n)
        .map(|c| {
            let f = whole * full(m.mech.noise_cpu_speed, slow(&mut b, p.cpu_speed_spread_ppm));
            // own × f / 10^12, rounded, at least 1.
            ((own(c) as u64 * f + 500_000_000_000) / 1_000_000_000_000).max(1) as u32
        })
        .collect();
    let irqs = (p.irq_per_s > 0 && m.mech.noise_irqs).then(|| Irqs {
        rngs: (0..n as u64).map(|c| Rng::stream(nseed, 1 + c)).collect(),
        mean_gap_ns: 1_000_000_000 / p.irq_per_s,
        cost: Jitter::new(p.irq_ns, m.costs.jitter_pct),
    });
    (caps, irqs, m.mech.noise_placement.then_some(b))
}

/// Machine noise's interrupts.
impl Kernel {
    /// Queues `cpu`'s next interrupt (Poisson arrivals: an exponential
    /// gap; memoryless, so a stream stopped while the CPU idled starts
    /// again as if it had gone on).
    fn arm_irq(&mut self, cpu: usize) {
        let irqs = self.irqs.as_mut().expect("machine noise");
        let at = self.now + irqs.rngs[cpu].exp(irqs.mean_gap_ns);
        let c = &mut self.cpus[cpu];
        c.irq_on = true;
        c.irq_at = at;
        self.push(at, Kind::Irq, cpu as u32, 0);
    }

    /// An interrupt arrives on `cpu`: on a busy CPU it steals its time
    /// from the running task (overhead: the CPU is busy, the task makes
    /// no progress, and is charged for it as Linux charges interrupt time
    /// without IRQ_TIME_ACCOUNTING), and the next is queued; an idle CPU's
    /// stream stops until it runs a task again (an interrupt on an idle
    /// CPU is not modelled: it delays no task).
    fn irq(&mut self, cpu: usize) {
        if self.cpus[cpu].curr == NIL {
            let c = &mut self.cpus[cpu];
            c.irq_on = false;
            c.irq_at = u64::MAX;
            return;
        }
        self.charge(cpu);
        let irqs = self.irqs.as_mut().expect("machine noise");
        let ns = irqs.rngs[cpu].jittered(irqs.cost);
        let tid = self.cpus[cpu].curr;
        self.tasks[tid as usize].overhead += ns;
        self.arm_burst(cpu);
        self.arm_irq(cpu);
    }
}

/// The SMT and idle-state models of machine `m` ([`crate::smt`],
/// [`crate::idle`]), each None where it is not modelled (no SMT, no table of
/// idle states, or switched off).
fn smt_and_idle(m: &Machine, caps: &[u32]) -> (Option<Smt>, Option<IdleCpus>) {
    let n = m.topo.nr_cpus();
    let smt = if m.mech.smt_share {
        // Each CPU's own capacity, as `Kernel::new` gives it.
        Smt::new(&m.topo, caps.to_vec(), m.costs.smt_busy_cap)
    } else {
        None
    };
    let idle = (m.mech.idle_states && !m.costs.idle_states.is_empty())
        .then(|| IdleCpus::new(m.costs.idle_states, n));
    (smt, idle)
}

/// SMT throughput sharing and idle states by depth ([`crate::smt`],
/// [`crate::idle`]).
impl Kernel {
    /// SMT sharing: `cpu` goes busy (`busy`) or idle; each sibling's speed
    /// follows, its running task charged at the old speed and its burst's
    /// end re-armed at the new (as [`Kernel::share_change`]).
    fn smt_change(&mut self, cpu: usize, busy: bool) {
        let Some(smt) = self.smt.take() else {
            return;
        };
        let mask = self.m.topo.smt_mask(CpuId::wrapping(cpu));
        for s in mask.iter().filter(|&s| s != cpu) {
            let shared = busy
                || self
                    .m
                    .topo
                    .smt_mask(CpuId::wrapping(s))
                    .iter()
                    .any(|o| o != s && o != cpu && self.cpus[o].curr != NIL);
            let cap = smt.cap(s, shared);
            if cap == self.cpus[s].cap {
                continue;
            }
            if self.cpus[s].curr == NIL {
                self.cpus[s].cap = cap;
            } else {
                debug_assert!(!self.cpus[s].batched, "no batching under SMT sharing");
                self.charge(s);
                self.cpus[s].cap = cap;
                self.arm_burst(s);
            }
        }
        self.smt = Some(smt);
    }

    /// Idle `cpu` is woken by an interrupt that reaches it at `at_ns`: the
    /// exit latency it pays before the handler runs (that of its idle state,
    /// or the one state's `idle_exit_ns`).
    fn idle_exit_ns(&mut self, cpu: usize, at_ns: u64) -> u64 {
        match &mut self.idle {
            Some(i) => i.wake(cpu, at_ns),
            None => self.m.costs.idle_exit_ns,
        }
    }

    /// An interrupt is handled on `cpu`, or it switches to a task: if it
    /// was still asleep in an idle state (an interrupt sent while it was
    /// busy, which paid no exit, as in the model before; or a task at the
    /// run's start), its idle period ends now.
    fn idle_end(&mut self, cpu: usize) {
        if let Some(i) = &mut self.idle {
            i.end_period(cpu, self.now);
        }
    }

    /// `cpu` goes idle (or stays idle after an interrupt): it enters the
    /// state the governor picks.
    fn idle_enter(&mut self, cpu: usize) {
        if let Some(i) = &mut self.idle {
            i.enter(cpu, self.now);
        }
    }

    /// Idle states: (name, entries, exit latency paid in ns before jitter)
    /// per state, shallowest first; empty if not modelled.
    /// The fair wakeups' placements so far ([`SimPlatform`]'s counters).
    pub fn placement(&self) -> [u64; PLACEMENT_ROWS] {
        core::array::from_fn(|i| self.s.platform.placement[i].load(Ordering::Relaxed))
    }

    pub fn idle_stats(&self) -> Vec<(&'static str, u64, u64)> {
        self.idle.as_ref().map_or(Vec::new(), |i| {
            i.states()
                .iter()
                .enumerate()
                .map(|(k, s)| (s.name, i.entries[k], i.exit_paid_ns[k]))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The multiply of `time_for` is the division it replaces, for every
    /// capacity, at the ends of its range and around them.
    #[test]
    fn time_for_multiplies_exactly() {
        let mut r = Rng::new(9);
        for cap in 1..=FULL_CAPACITY {
            let c = cap as u64;
            let edge = (1u64 << RECIPROCAL_BITS) / FULL_CAPACITY as u64;
            let mut works = vec![
                0,
                1,
                2,
                1023,
                1024,
                1025,
                c,
                c + 1,
                edge - 2,
                edge - 1,
                edge,
                edge + 1,
            ];
            works.extend((0..200).map(|_| r.below(edge + 16)));
            for w in works {
                let want = (w * FULL_CAPACITY as u64).div_ceil(c);
                assert_eq!(time_for(cap, w), want, "cap {cap} work {w}");
                assert_eq!(work_in(cap, want), w, "cap {cap} work {w}: round trip");
            }
        }
    }

    /// A bounded speed's times are `time_for`'s, for every capacity
    /// below full, up to the bound and around its edges; past the
    /// bound, at capacity 1 and at full speed there is none.
    #[test]
    fn bounded_speed_is_time_for() {
        let mut r = Rng::new(13);
        let top = (1u64 << BOUNDED_WORK_BITS) - 1;
        for cap in 2..FULL_CAPACITY {
            let b = Speed(cap).bounded(top).expect("below the bound");
            let mut works = vec![0, 1, 2, 315, 850, top - 1, top];
            works.extend((0..50).map(|_| r.below(top + 1)));
            for w in works {
                assert_eq!(b.time_ns(w), time_for(cap, w), "cap {cap} work {w}");
            }
        }
        assert!(Speed(512).bounded(top + 1).is_none());
        assert!(Speed(1).bounded(315).is_none());
        assert!(Speed(FULL_CAPACITY).bounded(315).is_none());
    }

    /// The calendar pops exactly a binary heap's order by (time, kind and
    /// argument, order queued), over bursts a few hundred ns ahead, ties (more of them in a
    /// bucket than its slots), and events beyond the window (IPIs, ticks,
    /// long sleeps) and beyond the coarse calendar, pushed while popping as
    /// the engine does, and drained at the end (the window jumping over
    /// empty time). Each event carries
    /// its place in the queueing order.
    #[test]
    fn calendar_pops_in_the_heaps_order() {
        let mut rng = Rng::new(42);
        let mut cal = Calendar::new();
        let mut heap = BinaryHeap::new();
        let (mut seq, mut now) = (0u64, 0u64);
        let ev = |t: u64, seq: u64| Ev::new(t, Kind::Burst, (seq % 7) as u32, seq as u32);
        let mut push =
            |cal: &mut Calendar, heap: &mut BinaryHeap<Reverse<(u64, u32, u64)>>, t: u64| {
                seq += 1;
                cal.push(ev(t, seq));
                heap.push(Reverse((t, ev(t, seq).tag, seq)));
            };
        for i in 0..64 {
            push(&mut cal, &mut heap, i * 3);
        }
        for step in 0..200_000u64 {
            let a = cal.pop();
            let b = heap.pop().map(|Reverse((t, _, seq))| ev(t, seq));
            assert_eq!(a, b, "step {step}");
            let Some(ev) = a else { break };
            assert!(ev.t >= now);
            now = ev.t;
            if step < 150_000 {
                let d = match rng.below(100) {
                    // Beyond the coarse calendar (67 ms) too: the heap.
                    0 if rng.below(4) == 0 => 9_000_000 + rng.below(200_000_000),
                    0 => 4_000_000 + rng.below(1000),
                    1..=3 => rng.below(50_000),
                    4..=10 => 0,
                    _ => 280 + rng.below(70),
                };
                push(&mut cal, &mut heap, now + d);
                if rng.below(10) == 0 {
                    push(&mut cal, &mut heap, now + rng.below(2_000));
                }
                if rng.below(5000) == 0 {
                    // A burst of ties (the CPUs' ticks, aligned).
                    let t = now + 300 + rng.below(5_000);
                    for _ in 0..3 * SLOTS {
                        push(&mut cal, &mut heap, t);
                    }
                }
            }
        }
        assert!(cal.pop().is_none() && heap.is_empty());
    }

    /// A hook log gives its words back in the order appended, those past
    /// its room (the locked list) too, and starts again empty.
    #[test]
    fn hook_log_keeps_the_order_past_its_room() {
        let mut log = HookLog::default();
        for round in 0..3u64 {
            let n = [LOG_ROOM + 5, 2, 2 * LOG_ROOM][round as usize] as u64;
            for w in 0..n {
                log.append(round << 32 | w);
            }
            assert_eq!(log.len() as u64, n);
            let words: Vec<u64> = (0..log.len()).map(|i| log.get(i)).collect();
            assert_eq!(words, (0..n).map(|w| round << 32 | w).collect::<Vec<_>>());
            log.clear();
            assert_eq!(log.len(), 0);
        }
    }

    /// Held events ([`Calendar::hold`]) are taken in the order the heap
    /// takes them when queued like the others, less those replaced or
    /// taken out while held (their ghosts): one held event per index, each
    /// hold replacing the index's last one while it is still held.
    #[test]
    fn held_events_pop_in_the_heaps_order() {
        let mut rng = Rng::new(7);
        let mut cal = Calendar::new();
        let mut heap = BinaryHeap::new();
        let (mut seq, mut now) = (0u32, 0u64);
        // Per index, the sequence number of its last hold not yet taken.
        let mut last_hold = [None::<u32>; 8];
        let mut ghosts = std::collections::HashSet::new();
        let (mut held_taken, mut nr_ghosts) = (0, 0);
        for i in 0..2u64 {
            seq += 1;
            let ev = Ev::new(i * 5, Kind::Burst, (i % 7) as u32, seq);
            cal.push(ev);
            heap.push(Reverse((ev.t, ev.tag, seq)));
        }
        for step in 0..300_000u64 {
            let a = cal.pop();
            let b = loop {
                match heap.pop() {
                    Some(Reverse((_, _, s))) if ghosts.contains(&s) => continue,
                    e => break e,
                }
            };
            let Some(ev) = a else {
                assert!(b.is_none(), "step {step}");
                break;
            };
            assert_eq!(b, Some(Reverse((ev.t, ev.tag, ev.gen))), "step {step}");
            assert!(ev.t >= now);
            now = ev.t;
            if ev.kind() == Kind::Hrtick {
                let i = ev.a() as usize;
                if last_hold[i] == Some(ev.gen) {
                    last_hold[i] = None;
                    held_taken += 1;
                }
            }
            if step >= 250_000 || ev.kind() != Kind::Burst {
                continue;
            }
            // A burst for each burst taken (two in flight: ~200 ns a step).
            seq += 1;
            let t = now + 200 + rng.below(400);
            let ev = Ev::new(t, Kind::Burst, rng.below(7) as u32, seq);
            cal.push(ev);
            heap.push(Reverse((ev.t, ev.tag, seq)));
            if rng.below(128) == 0 {
                let i = rng.below(8) as usize;
                let cancel = rng.below(20) == 0;
                let replaced = if cancel {
                    cal.unhold(i)
                } else {
                    seq += 1;
                    let d = match rng.below(20) {
                        // Within the window (queued at once), just beyond
                        // it (mostly taken), beyond the coarse calendar,
                        // and a few ms on (mostly replaced).
                        0 => rng.below(60_000),
                        1..=6 => 66_000 + rng.below(100_000),
                        7 => 90_000_000 + rng.below(1_000_000),
                        _ => 2_000_000 + rng.below(3_000_000),
                    };
                    let ev = Ev::new(now + d, Kind::Hrtick, i as u32, seq);
                    heap.push(Reverse((ev.t, ev.tag, seq)));
                    cal.hold(i, ev)
                };
                if let Some(r) = replaced {
                    assert_eq!(Some(r.gen), last_hold[i], "step {step}");
                    ghosts.insert(r.gen);
                    nr_ghosts += 1;
                }
                last_hold[i] = (!cancel).then_some(seq);
            }
        }
        assert!(cal.pop().is_none());
        // Both ways of taking a held event happened, often.
        assert!(
            held_taken > 200 && nr_ghosts > 500,
            "{held_taken} {nr_ghosts}"
        );
    }
}
