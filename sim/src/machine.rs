//! Machines: CPU count, topology (SMT siblings, LLC domains, sockets) and the
//! cost model. Every cost is a parameter; each default names the measurement it
//! comes from. None was fitted to any study outcome.
//!
//! # Cost model
//! - **Context switch** ([`Costs::switch_thread_ns`], [`Costs::switch_process_ns`]):
//!   CPU time the incoming task loses before it makes progress. Thread switch
//!   1.07 µs and process switch 2.41 µs: ddumbying.vercel.app, Linux 6.6 on an
//!   11th-gen Core i7 (`docs/references.md`); this machine's pinned
//!   `perf bench sched pipe` gives 0.97 (threads) and 1.09 µs (processes) per
//!   switch (`docs/benchmarks.md`, "Linux on this VM"), the same order.
//! - **Wakeup IPI latency** ([`Costs::ipi_ns`]): 1.5 µs from the send to the
//!   handler on the target, a value between two measurements, fixed before
//!   the first study run: on hardware, `perf bench sched pipe` unpinned (a
//!   cross-CPU wake and a switch each way) is 1–2 µs per round trip on an x86
//!   laptop (the CPUIDLE_POLL_MIN discussion, `docs/references.md`), so under
//!   1 µs one way; the kernel's own cross-CPU ping-pong under QEMU TCG measured
//!   3.4 µs per wakeup (aarch64, 4 CPUs), emulation included.
//! - **Idle exit** ([`Costs::idle_exit_ns`]): 2 µs, the C1 exit latency of
//!   Linux's `intel_idle` table for Skylake-SP/Cascade Lake (`skx_cstates`: C1
//!   exit_latency 2 µs; C1E is 10 µs, C6 133 µs): the one state of every
//!   preset without a table of idle states, and of every preset under
//!   `--no-idle-states`.
//! - **Idle states by depth** ([`Costs::idle_states`], `cascadelake-2s`
//!   only): that whole table, C1 2/2, C1E 10/20, C6 133/600 µs (exit
//!   latency / target residency), a state picked at each idle entry by the
//!   governor rule of [`crate::idle`], where the other presets' tables and
//!   why they keep the one state are given.
//! - **SMT throughput sharing** ([`Costs::smt_busy_cap`]): the two hardware
//!   threads of a core share its execution resources, so a thread whose
//!   sibling is busy runs slower than one alone. Intel's Hyper-Threading
//!   gives "up to 30%" more throughput on server benchmarks with both
//!   threads of a core busy than with one (Marr et al., "Hyper-Threading
//!   Technology Architecture and Microarchitecture", Intel Technology
//!   Journal 6(1), February 2002): a core with both threads busy does 1.3
//!   times a lone thread's work, each thread 0.65 of it, 666/1024 (the
//!   figure is an upper bound of the gain, so the least slowdown it allows;
//!   Linux's own estimate of the gain was 15%, `smt_gain` 1178 "/* 15% */"
//!   of an SMT domain's capacity, until commit 765d0af19f5f "sched/topology:
//!   Remove the ::smt_gain field from 'struct sched_domain'"). A busy sibling
//!   makes a CPU do `smt_busy_cap / 1024` of a lone thread's work per ns,
//!   as a CPU of that capacity in the `asym:` presets (the engine's
//!   "SMT"); the presets with SMT are `cascadelake-2s` and `epyc-ccx`.
//! - **Cache refill** ([`Costs::bw_llc`], [`Costs::bw_cross_llc`],
//!   [`Costs::bw_cross_node`]): a task's next burst after a migration is longer
//!   by `footprint / bandwidth`. Same LLC: the working set refills from the
//!   LLC at 20 GB/s (single-core L3 read bandwidth of Skylake-SP class cores is
//!   in the 15–30 GB/s range, e.g. Intel MLC figures; Hennessy & Patterson 6th
//!   ed. ch. 2 quote similar per-core L3 bandwidths). Another LLC in the same
//!   node: from memory at 12 GB/s (single-thread STREAM on Skylake-SP, McCalpin's
//!   STREAM results: ~12 GB/s per core). Another socket: 7 GB/s (remote memory
//!   over UPI, about 60% of local bandwidth, the usual local/remote ratio of
//!   2-socket Xeons in STREAM). SMT siblings share L1/L2: no penalty.
//! - **Working set lost in place** ([`Costs::l2_bytes`]): when other tasks ran
//!   on the CPU since a task last ran there and their footprints together with
//!   its own exceed the private L2 (1 MiB on Cascade Lake and Neoverse V1,
//!   512 KiB on Zen 2/3: vendor data sheets), the part that no longer fits is
//!   refilled from the LLC at [`Costs::bw_llc`].
//!
//! Counted: every burst that paid a refill is a "cache-cold run".

use std::fmt;

use sched::topology::CpuDistance;
use sched::{CpuId, Topology};

use crate::idle::{IdleState, SKX_CSTATES};

/// The cost parameters (see the module docs for where each default comes from).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Costs {
    /// Switch to a thread of the same process (no mm switch), ns.
    pub switch_thread_ns: u64,
    /// Switch to another process (mm/TLB switch), ns.
    pub switch_process_ns: u64,
    /// Reschedule IPI send-to-handler latency, ns.
    pub ipi_ns: u64,
    /// Shallow idle-state exit latency, ns: the one idle state of a
    /// machine without [`Costs::idle_states`] (or with `--no-idle-states`).
    pub idle_exit_ns: u64,
    /// The machine's idle states, shallowest first ([`crate::idle`]);
    /// empty: one state, exit [`Costs::idle_exit_ns`].
    pub idle_states: &'static [IdleState],
    /// The speed of a hardware thread whose SMT sibling is busy, per 1024
    /// of a lone thread's (1024: no sharing; only machines with SMT).
    pub smt_busy_cap: u32,
    /// Refill bandwidth from the shared LLC, bytes per µs (= MB/s).
    pub bw_llc: u64,
    /// Refill bandwidth from another LLC of the node (memory), bytes per µs.
    pub bw_cross_llc: u64,
    /// Refill bandwidth across sockets, bytes per µs.
    pub bw_cross_node: u64,
    /// Private (L2) cache per core, bytes.
    pub l2_bytes: u64,
    /// Run-to-run jitter of every modelled CPU cost, ±% (uniform).
    pub jitter_pct: u32,
    /// hackbench: a 100-byte pipe `write` / `read` nobody waits on, ns.
    pub pipe_write_ns: u64,
    /// See [`Costs::pipe_write_ns`].
    pub pipe_read_ns: u64,
    /// hackbench: a 100-byte unix stream `write` / `read`, ns.
    pub sock_write_ns: u64,
    /// See [`Costs::sock_write_ns`].
    pub sock_read_ns: u64,
    /// Syscall entry and exit (a null syscall), ns: the part of a pipe
    /// syscall outside the pipe mutex.
    pub syscall_ns: u64,
    /// The waker's side of a wakeup that it enqueues itself, on its own CPU
    /// or another's (`try_to_wake_up`: enqueue, preemption check), charged
    /// to the waker, ns. 0: not modelled.
    pub wake_ns: u64,
    /// The waker's side of each IPI a wakeup sends (for a wakeup queued on
    /// another CPU's wake list: all of its waker's side), ns.
    pub ipi_send_ns: u64,
    /// Per CPU whose idle state `select_idle_sibling` looks at, charged to
    /// the waker, ns. 0: not modelled.
    pub scan_cpu_ns: u64,
    /// The machine's vCPUs take turns on one host thread and its clock
    /// counts every vCPU's instructions (QEMU `-icount`, round-robin TCG):
    /// with k CPUs busy, CPU work takes k times as long.
    pub vcpu_time_sharing: bool,
    /// How the vCPUs share that thread (with [`Costs::vcpu_time_sharing`]):
    /// 0, evenly and continuously (k busy vCPUs each at 1/k of the rate);
    /// otherwise in round-robin turns of at most this many ns, one vCPU at a
    /// time (see [`crate::engine`], "vCPU turns").
    pub vcpu_turn_ns: u64,
}

/// Which part of a cost runs with which kernel lock held, for
/// `Mechanisms::vcpu_pause` (vCPU turns): a vCPU whose turn ends there
/// keeps the lock until its next turn. Apart from [`Costs`] (whose digest
/// the study's results are tied to); all 0 (no lock) but on `qemu:N`
/// ([`qemu_lock_shares`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockShares {
    /// The share of a context switch's cost run with the CPU's runqueue
    /// lock held (from `__schedule`'s lock to `finish_task_switch`'s
    /// unlock), per mille, from its start.
    pub switch_rq_locked_pm: u64,
    /// The share of a wakeup's cost ([`Costs::wake_ns`] and the rest the
    /// waker pays for it) run with the target CPU's runqueue lock held,
    /// per mille, at its end (`try_to_wake_up` places the task first, then
    /// locks the target's runqueue to enqueue it).
    pub wake_rq_locked_pm: u64,
    /// The share of a wakeup's cost run with the wakee's wait-queue lock
    /// held (`__wake_up_sync_key` holds it around `try_to_wake_up`), per
    /// mille, from its start.
    pub wake_wq_locked_pm: u64,
    /// What a sleep ([`Machine::sleep_ns`]) does under the CPU's runqueue
    /// lock, beyond a yield's switch, ns (the sleeper's dequeue in
    /// `__schedule()`): with `Mechanisms::sleep_lock_split` a switch after
    /// a sleep holds the lock for [`Self::switch_rq_locked_pm`] of the
    /// switch's own cost and min(the sleep's cost, this) of the sleep's,
    /// both jittered as the switch is.
    pub sleep_rq_locked_ns: u64,
    /// How long a 100-byte pipe `write` holds the pipe's mutex, ns
    /// (`anon_pipe_write` from `mutex_lock`'s return to `mutex_unlock`):
    /// with `Mechanisms::pipe_mutex_split` the rest of the write's body
    /// ([`Costs::pipe_write_ns`] less [`Costs::syscall_ns`] and this)
    /// runs before `mutex_lock`, with the syscall's entry. 0: the whole
    /// body under the mutex.
    pub pipe_write_mutex_ns: u64,
    /// The same for a 100-byte pipe `read` (`anon_pipe_read`).
    pub pipe_read_mutex_ns: u64,
}

impl LockShares {
    /// Some cost holds a lock.
    pub fn any(&self) -> bool {
        self.switch_rq_locked_pm > 0 || self.wake_rq_locked_pm > 0 || self.wake_wq_locked_pm > 0
    }
}

/// Linux's default timer slack of a normal task, ns (`init_task`'s
/// `timer_slack_ns`; [`Mechanisms::timer_slack`]).
pub const TIMER_SLACK_NS: u64 = 50_000;

/// The mechanisms a run models, each switchable (`sim run --no-...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mechanisms {
    /// Wakeup-path and IPI-send costs charged to the waker
    /// ([`Costs::wake_ns`], [`Costs::ipi_send_ns`]); `--no-wake-cost`.
    pub wake_cost: bool,
    /// The idle-CPU scan charged by CPUs visited ([`Costs::scan_cpu_ns`]);
    /// `--no-scan-cost`.
    pub scan_cost: bool,
    /// Sleeping locks: each pipe's mutex (a holder that is preempted keeps
    /// it); `--no-contention`.
    pub contention: bool,
    /// vCPU time sharing ([`Costs::vcpu_time_sharing`]); `--no-vcpu-share`.
    pub vcpu_share: bool,
    /// vCPU time sharing in turns ([`Costs::vcpu_turn_ns`]) rather than
    /// evenly; `--no-vcpu-turns` (the even share).
    pub vcpu_turns: bool,
    /// With vCPU turns: QEMU 7.2's round-robin turn order
    /// (`accel/tcg/tcg-accel-ops-rr.c`) rather than the even order: the
    /// zero budget after a turn that a timer deadline ended, the kick of
    /// the running vCPU by a timer armed to be the earliest, the exit
    /// requests that kick leaves on every vCPU, and one periodic kick
    /// timer (`sim/src/engine.rs`, "vCPU turns"). Off by default (an
    /// experiment, docs/results/linux.md); `sim run --qemu-rr-turns`.
    pub qemu_rr_turns: bool,
    /// With vCPU turns: a vCPU whose task needs a lock (a runqueue lock to
    /// wake a task onto a CPU or to switch, the wait queue of a task it
    /// wakes) held by a vCPU out of its turn spins on it with `pause`, which
    /// in QEMU's TCG ends its turn (`helper_pause`: `EXCP_INTERRUPT`), so the
    /// turn passes on ([`Machine::locks`] says which part of a cost holds
    /// which lock; `sim/src/engine.rs`, "vCPU turns").
    /// `--no-vcpu-pause`: a spin wait keeps the turn (the model before).
    pub vcpu_pause: bool,
    /// With `vcpu_pause` and the pipe mutex (`contention`): a task that
    /// finds its pipe's lock taken by a task on a CPU spins on it with
    /// `pause` (Linux's `mutex_spin_on_owner` calls `cpu_relax()`; our
    /// kernel's pipe spinlock, `Channel`'s, `SpinLock::lock`'s
    /// `cpu_relax`), and since one vCPU executes at a time that owner is
    /// out of its turn: the spinner's first `pause` ends its turn, and
    /// it polls again in its next (`sim/src/engine.rs`, "vCPU turns";
    /// measured: `scripts/linux-compare/pipelock-probe.sh`, 1.07 `pause`s
    /// a meeting). `--no-pipe-lock-pause`: the spinner polls through the
    /// rest of its turn (the model before).
    pub pipe_lock_pause: bool,
    /// With the pipe mutex: a pipe syscall's return to user space comes
    /// where Linux has it, after the previous syscall's unlock and wakeups
    /// and before the next `mutex_lock` (the entry and exit burst returns
    /// to user, the body under the mutex is kernel code).
    /// `--no-pipe-user-return`: the model before, whose return to user
    /// came after the next `mutex_lock`, at the start of the body, so a
    /// lazy request was taken with the mutex held.
    pub pipe_user_return: bool,
    /// A wakeup inside its syscall: the waker's side of its wakeups
    /// ([`Costs::wake_ns`], `ipi_send_ns`, `scan_cpu_ns`, as `wake_cost`
    /// and `scan_cost` charge them) runs with interrupts off, as Linux's
    /// `try_to_wake_up` under the wait queue's `spin_lock_irqsave`
    /// (`__wake_up_sync_key`, from `sock_def_readable` or `pipe_write`),
    /// and the preemption point is its end, the `spin_unlock_irqrestore`:
    /// a wakeup's immediate request switches there, not at the wakeup's
    /// instant (so the scheduler's clock skip gives the window to the
    /// wakee), a lazy one at the return to user space after it, and an
    /// interrupt (HRTICK, tick, IPI) that lands in the window preempts at
    /// the unlock. `--no-wake-unlock`: the model before, the cost paid
    /// after a preemption point at the wakeup's instant. Acts only where
    /// a wakeup costs its waker time (`qemu:N`).
    pub wake_unlock: bool,
    /// SMT throughput sharing: a thread whose sibling is busy runs at
    /// [`Costs::smt_busy_cap`]; `--no-smt-share` (every thread at full speed).
    pub smt_share: bool,
    /// Idle states by depth ([`Costs::idle_states`], [`crate::idle`]);
    /// `--no-idle-states` (one state, [`Costs::idle_exit_ns`]).
    pub idle_states: bool,
    /// Machine noise ([`MachineNoise`]): each run a boot of its own, with
    /// its CPUs' speeds, its interrupts and its tasks' placement drawn
    /// from the run's seed. Off in every preset (`sim run` turns it on
    /// with `--machine-noise`), on in the study (`crate::study`), never
    /// on `qemu:N` ([`Machine::noise_applies`]); `--no-machine-noise`.
    /// Its parts have switches of their own (below), on and off with it
    /// ([`Mechanisms::set_machine_noise`]).
    pub machine_noise: bool,
    /// Machine noise's whole-machine speed per boot
    /// ([`MachineNoise::boot_speed_spread_ppm`]); `--no-noise-boot-speed`
    /// (every boot at full speed; the other parts' draws unchanged).
    pub noise_boot_speed: bool,
    /// Machine noise's per-CPU speed per boot
    /// ([`MachineNoise::cpu_speed_spread_ppm`]); `--no-noise-cpu-speed`.
    pub noise_cpu_speed: bool,
    /// Machine noise's interrupts ([`MachineNoise::irq_per_s`]);
    /// `--no-noise-irqs`.
    pub noise_irqs: bool,
    /// Machine noise's placement: the parent's CPU and the fork order drawn
    /// per boot; `--no-noise-placement` (forked from CPU 0 in task order,
    /// as without noise).
    pub noise_placement: bool,
    /// Concurrency-managed per-CPU workqueue pools (`dbench-bound`'s
    /// kworkers): when the pool's running worker sleeps inside a work item,
    /// an idle worker of the pool takes the next item (Linux's
    /// `wq_worker_sleeping` and `kick_pool`); `--no-wq-concurrency` (one
    /// worker per CPU, the queue waits while it sleeps: the earlier model).
    pub wq_concurrency: bool,
    /// A sleep's cost ([`Machine::sleep_ns`]) charged with the switch away
    /// from a task that went to sleep; `--no-sleep-cost`.
    pub sleep_cost: bool,
    /// A busy CPU's periodic tick's cost ([`Machine::tick_irq_ns`])
    /// charged at each tick; `--no-irq-cost`.
    pub irq_cost: bool,
    /// An HRTICK expiry's cost ([`Machine::hrtick_irq_ns`]) charged on its
    /// busy CPU; `--no-hrtick-cost`.
    pub hrtick_cost: bool,
    /// A reschedule IPI's cost on its busy receiver
    /// ([`Machine::ipi_irq_ns`]); `--no-ipi-cost`.
    pub ipi_cost: bool,
    /// Where an interrupt's cost goes, as Linux without
    /// `CONFIG_IRQ_TIME_ACCOUNTING` charges it: the handler's part before
    /// its decisions ([`Machine::tick_pre_ns`], [`Machine::hrtick_pre_ns`];
    /// none for an IPI) moves the CPU's scheduler clock before them, and
    /// the rest before the exit's switch, so the interrupted task's
    /// runtime holds the whole handler (the time itself is still spent
    /// by the task that runs after it). `--no-irq-split`: no clock moves,
    /// the whole in the runtime of the task that runs after the interrupt
    /// (the tick's model before).
    pub irq_split: bool,
    /// A hackbench over sockets pays a socket's sleep
    /// ([`Machine::sock_sleep_ns`]) instead of a pipe's
    /// ([`Machine::sleep_ns`]); `--no-sock-sleep`.
    pub sock_sleep: bool,
    /// With `vcpu_pause`: the runqueue lock of a switch after a sleep is
    /// held for the measured share of the switch's cost only
    /// ([`LockShares::switch_rq_locked_pm`] of `switch_*_ns`), the sleep's
    /// cost ([`Machine::sleep_ns`]) paid outside it, as Linux's wait-queue
    /// work (`prepare_to_wait` / `finish_wait`, the socket's state lock,
    /// `pipe_read`'s `wait_event`) runs outside `__schedule()`'s lock.
    /// Off by default: Linux does the sleep's dequeue under the lock, and
    /// [`Self::sleep_lock_split`] holds that measured part; `sim run
    /// --sleep-unlocked` is its lower bound.
    pub sleep_unlocked: bool,
    /// With `vcpu_pause`: the runqueue lock of a switch after a sleep is
    /// held for the measured share of the switch's own cost and for the
    /// sleep's measured part under the lock
    /// ([`LockShares::sleep_rq_locked_ns`], at most the sleep's cost), not
    /// for the switch's share of the whole switch and sleep;
    /// `--no-sleep-lock-split` (the upper bound, the model before).
    /// [`Self::sleep_unlocked`] overrides it (no part of the sleep held).
    pub sleep_lock_split: bool,
    /// With vCPU turns: a step's own burst (a hackbench message's syscall
    /// cost) is burned on the guest clock, as our kernel's `hackbench -C`
    /// charged it until 10010b3 (`syscall_work`: a loop until the clock had
    /// moved that far; since 5b89f38 calibrated instructions, as Linux's),
    /// so a vCPU out of its turn with no overhead left to pay (switch,
    /// wakeup, sleep, interrupt: real instructions in both) finishes that
    /// burst meanwhile, and its task goes on at once when the turn comes
    /// back. Off by default: Linux's
    /// syscall costs are instructions, done only in the vCPU's turn; `sim
    /// run --clock-burn` models that old kernel charge instead
    /// (`sim/src/engine.rs`, "vCPU turns").
    pub clock_burn: bool,
    /// With `vcpu_pause`: a lock window ([`LockShares`]) belongs to the
    /// burst it was set for (the switch's, or the one that pays a step's
    /// wakeups), so the task's next burst that sets none clears its CPU's
    /// windows. `--no-burst-lock-windows`: the model before, whose windows
    /// stayed until the CPU's next switch or wakeup windows, so each later
    /// burst of the task passed through them again and held the lock
    /// there (a sender's every send held its last switch's runqueue lock).
    pub burst_lock_windows: bool,
    /// With `vcpu_pause`: a wakeup of a task whose switch-out is still
    /// under way on another CPU of its LLC waits for it, as Linux 7.2's
    /// `try_to_wake_up()` does: while that CPU's `__schedule()` holds its
    /// runqueue lock with the wakee as `prev`, the wakee is either still
    /// queued (`ttwu_runnable()` spins on that lock) or dequeued with
    /// `p->on_cpu` set (`ttwu_queue_cond()` refuses the wake list for a
    /// busy CPU of the same LLC, so `smp_cond_load_acquire(&p->on_cpu,
    /// !VAL)` spins until `finish_task()`, just before the unlock). The
    /// wait is the switch's runqueue-lock window on that CPU
    /// ([`LockShares::switch_rq_locked_pm`] and the sleep's locked part);
    /// its holder is out of its turn, so the waker's `pause` passes the
    /// turn on (`sim/src/engine.rs`, "vCPU turns"). No cost of its own.
    /// `--no-wakee-switch-wait`: only the target's runqueue lock and the
    /// wait queue are waited for (the model before).
    pub wakee_switch_wait: bool,
    /// With `vcpu_pause`: a waker that spins in a wakeup (on the target's
    /// runqueue lock, or on its wakee's switch-out, `wakee_switch_wait`)
    /// holds the wakee's wait queue while it spins, as Linux's waker does:
    /// `__wake_up_common_lock()` takes `wq_head->lock` around
    /// `try_to_wake_up()`, and our kernel's `WaitQueue::wake_all_flags`
    /// holds the queue around its wakeups. The waker's `pause` ends its
    /// turn at the wakeup's instant, so its vCPU keeps the queue out of
    /// its turn and a send that tests that queue, or another wakeup of the
    /// task, meets it held (`sim/src/engine.rs`, "vCPU turns").
    /// `--no-wq-spin-hold`: the queue is held only while the wakeup's
    /// measured share is paid (the model before), not at the spin.
    pub wq_spin_hold: bool,
    /// With the pipe mutex (`contention`): its hand-over follows Linux's
    /// `kernel/locking/mutex.c`. The sleeper an unlock wakes stays first
    /// on the mutex's wait list until it holds the mutex, so an unlock
    /// wakes no other sleeper meanwhile (the first one again, a no-op
    /// while it is awake); a newcomer or a spinner may still take the
    /// mutex before the woken sleeper runs, and the sleeper that then
    /// finds it taken sets `MUTEX_FLAG_HANDOFF` (`__mutex_trylock_or_handoff`)
    /// and spins while the owner runs (`mutex_optimistic_spin` with its
    /// waiter) or sleeps again, still first; the owner's next unlock gives
    /// it the mutex directly (`__mutex_handoff`), which nobody can then
    /// take from it. `--no-mutex-handoff`: the model before, whose unlock
    /// took the first sleeper off the list and woke it, and which queued
    /// again at the tail if it lost the mutex, so each unlock woke another
    /// sleeper.
    pub mutex_handoff: bool,
    /// With the pipe mutex (`contention`): a spinner stops at a reschedule
    /// request as Linux's does (`mutex_can_spin_on_owner` and
    /// `mutex_spin_on_owner` test `need_resched()`, the immediate request
    /// only; `mutex_optimistic_spin` then calls `schedule()`), and once it
    /// runs again it tries the mutex once and otherwise sleeps on the wait
    /// list (`__mutex_lock_common`) rather than spinning again. A spinner
    /// switched out in its poll for any other reason counts as stopped too
    /// (Linux spins with preemption off). `--no-mutex-spin-resched`: the
    /// model before, whose spinner was preempted at a poll's end and
    /// polled again when it ran again.
    pub mutex_spin_resched: bool,
    /// With the pipe mutex (`contention`): a writer wakes the next writer
    /// asleep on a pipe (`wake_next_writer`) only if it slept itself in
    /// that write waiting for room, and the pipe is not full at its end,
    /// as `fs/pipe.c`'s `anon_pipe_write`. `--no-pipe-wake-next-writer`:
    /// the model before, whose writer woke a sleeping writer after any
    /// write that left room.
    pub pipe_wake_next_writer: bool,
    /// With the pipe mutex (`contention`): a pipe holds 16 pages
    /// (`PIPE_DEF_BUFFERS`) of 40 of hackbench's messages, filled and
    /// emptied as Linux 7.2's `fs/pipe.c` does: a write merges into the
    /// last page while it has room (not after the writer slept for room)
    /// and otherwise takes a new page, the pipe being full when all 16 are
    /// in use; a read wakes a writer only when it empties a page of a full
    /// pipe (`anon_pipe_read`: `wake_writer |= pipe_full(..)` under
    /// `!buf->len`). `--no-pipe-pages`: the model before, whose pipe held
    /// 640 messages and whose every read that found it full woke a writer.
    pub pipe_pages: bool,
    /// With the pipe mutex (`contention`): a spinner switched out in its
    /// poll of the owner drops the poll's rest and tries the mutex as soon
    /// as it runs again, as Linux's spinner, which runs with preemption
    /// off, leaves its loop at `need_resched()` and calls `schedule()`
    /// itself (`mutex_optimistic_spin`). `--no-mutex-poll-cut`: the model
    /// before, whose spinner ran the rest of its 200 ns poll when it came
    /// back.
    pub mutex_poll_cut: bool,
    /// With the pipe mutex (`contention`) and a measured hold
    /// ([`LockShares::pipe_write_mutex_ns`], `qemu:N`): a pipe syscall
    /// holds the mutex for that hold only; the rest of its body runs before
    /// `mutex_lock`, with its entry (Linux 7.2's `vfs_write`/`vfs_read`
    /// checks, `rw_verify_area`, the LSM hooks and `fdget_pos` come first;
    /// of the pipe function's own work only the copy and its bookkeeping
    /// are under the mutex). A task woken in the syscall (a full or empty
    /// pipe, the mutex's wait) does not run that part again.
    /// `--no-pipe-mutex-split`: the model before, the whole body (the
    /// syscall less its entry and exit) under the mutex.
    pub pipe_mutex_split: bool,
    /// With the pipe mutex (`contention`): a `mutex_lock` that finds the
    /// mutex free with nobody on its wait list takes Linux's fast path
    /// (`__mutex_trylock_fast`, one `cmpxchg`, no `preempt_enable()`), so
    /// the hold goes on from the syscall's work before it with no
    /// preemption point between them (`Next::RunOn`): a request made
    /// meanwhile waits for an interrupt's exit in the hold or for the
    /// unlock's, as Linux's. Every other acquisition (after a spin, a
    /// sleep, or with waiters listed: `__mutex_lock_common`'s
    /// `preempt_enable()`) is a kernel preemption point, with the mutex
    /// held. `--no-mutex-fast-path`: the model before, a kernel preemption
    /// point after every `mutex_lock`.
    pub mutex_fast_path: bool,
    /// A busy CPU's two-task or misfit nohz kick makes the kicked idle CPU
    /// run as the idle load balancer (`Scheduler::nohz_idle_balance`: the
    /// periodic idle balance of each due idle CPU, itself last), as the
    /// kernel's since a04e0ac and Linux's `nohz_balancer_kick` ->
    /// `kick_ilb(NOHZ_BALANCE_KICK)` -> `_nohz_idle_balance` do.
    /// `--no-ilb-kick`: the model before, whose kick sent the CPU an IPI
    /// for a newidle balance (which NI_RANDOM may skip and which counts no
    /// failure when it finds only cache-hot tasks).
    pub ilb_kick: bool,
    /// The idle load balancer's pass runs when the kick's IPI reaches the
    /// kicked CPU ([`Costs::ipi_ns`] and its idle state's exit latency
    /// after the kick), as Linux's `kick_ilb` ->
    /// `smp_call_function_single_async` -> `nohz_csd_func` ->
    /// SCHED_SOFTIRQ -> `_nohz_idle_balance` at the IPI's `irq_exit`. The
    /// CPU then runs no task for the IPI's measured receive cost
    /// ([`Machine::ipi_irq_ns`], with [`Mechanisms::ipi_cost`]; no cost of
    /// the pass itself is measured, none is charged), and goes back to
    /// sleep, its idle period ended by the IPI, unless it pulled a task for
    /// itself. `--no-ilb-ipi`: the model before, the pass at the kick's
    /// instant, the kicked CPU charged nothing and left asleep.
    pub ilb_ipi: bool,
    /// pgbench read-write as its statements, one round trip each, with
    /// PostgreSQL's row locks on the rows it updates: sleeping FIFO locks
    /// held to the commit's end and handed to the next waiter
    /// (`crate::workloads`, "pgbench-like"); `--no-row-lock`: the model
    /// before, one round trip per transaction and no lock.
    pub row_lock: bool,
    /// A hackbench syscall without the pipe mutex (sockets everywhere;
    /// pipes where the costs do not split a pipe syscall, every preset but
    /// `qemu:N`) returns to user space before the next syscall's first
    /// decision, as Linux's and our kernel's do (`unix_stream_recvmsg` /
    /// `unix_stream_sendmsg` and `pipe_read` / `pipe_write` each end with
    /// `exit_to_user_mode`, and the next one checks its queue or its room
    /// after its entry): a request pending when a read or write ends, or a
    /// wakeup's cost still to pay, is taken before the receiver dequeues
    /// its next message (or finds its socket empty) and before the sender
    /// checks the next channel's room. `--no-syscall-user-return`: the
    /// decision first, then the return to user space and the syscall's
    /// cost (the model before), so a task switched out there held the
    /// message it had dequeued or the room it had reserved.
    pub syscall_user_return: bool,
    /// With vCPU turns: a context switch on the running vCPU whose HRTICK
    /// arm moves its LAPIC one-shot (the kernel's `program_if_earlier`:
    /// the new deadline is before the armed one) and leaves it the
    /// earliest of the virtual clock's timers ends the vCPU's turn at the
    /// write, inside the switch's runqueue-lock window: our kernel arms
    /// the next task's HRTICK in `Scheduler::publish` before `switch_to`,
    /// Linux 7.2 in `hrtick_schedule_exit` right before `__schedule`
    /// releases the lock (commit 96d1610e0b20), and QEMU 7.2's `-icount`
    /// TCG kicks the running vCPU when a timer write becomes the earliest
    /// deadline (`timer_mod_ns` → `qemu_timer_notify_cb` →
    /// `qemu_cpu_kick`). The vCPU sits out of its turn holding the lock.
    /// Off by default (an experiment; `sim run --switch-timer-kick`):
    /// only the switch's write kicks, the tick's and the IPI's
    /// reprogramming do not (`sim/src/engine.rs`, "vCPU turns").
    pub switch_timer_kick: bool,
    /// A normal task's timed sleep (`nanosleep`: schbench's request sleep,
    /// lcbench's pgbench commit sleep, a mix sleeper's) is a timer range of
    /// [`TIMER_SLACK_NS`]: Linux arms its hrtimer for a range of that
    /// width (`hrtimer_set_expires_range_ns`, `current->timer_slack_ns`,
    /// 50 000 ns by default for a SCHED_OTHER task, none for RT), programs
    /// the timer device for the range's end, and any timer interrupt of the
    /// CPU inside the range (the tick, the HRTICK, another sleeper's timer)
    /// ends it there (`__hrtimer_run_queues` expires by the soft deadline;
    /// [`crate::engine::Next::SleepRange`]). A device wait (dbench's I/O,
    /// pts/pgbench's WAL flush) and cyclictest's RT thread have none. Off
    /// by default, an option (`sim run --timer-slack`): every run without
    /// it is as before.
    pub timer_slack: bool,
}

impl Default for Mechanisms {
    fn default() -> Self {
        Mechanisms {
            wake_cost: true,
            scan_cost: true,
            contention: true,
            vcpu_share: true,
            vcpu_turns: true,
            qemu_rr_turns: false,
            vcpu_pause: true,
            pipe_lock_pause: true,
            pipe_user_return: true,
            wake_unlock: true,
            smt_share: true,
            idle_states: true,
            machine_noise: true,
            noise_boot_speed: true,
            noise_cpu_speed: true,
            noise_irqs: true,
            noise_placement: true,
            wq_concurrency: true,
            sleep_cost: true,
            irq_cost: true,
            hrtick_cost: true,
            ipi_cost: true,
            irq_split: true,
            sock_sleep: true,
            sleep_unlocked: false,
            sleep_lock_split: true,
            clock_burn: false,
            burst_lock_windows: true,
            wakee_switch_wait: true,
            wq_spin_hold: true,
            mutex_handoff: true,
            mutex_spin_resched: true,
            pipe_wake_next_writer: true,
            pipe_pages: true,
            mutex_poll_cut: true,
            pipe_mutex_split: true,
            mutex_fast_path: true,
            ilb_kick: true,
            ilb_ipi: true,
            row_lock: true,
            syscall_user_return: true,
            switch_timer_kick: false,
            timer_slack: false,
        }
    }
}

/// The `sim run` flags that turn a mechanism off, with what each does.
pub const MECHANISM_FLAGS: &[(&str, &str)] = &[
    (
        "--no-wake-cost",
        "no wakeup-path or IPI-send cost charged to the waker",
    ),
    ("--no-scan-cost", "no idle-scan cost per CPU visited"),
    ("--no-contention", "no pipe mutex (locks free, never held)"),
    (
        "--no-vcpu-share",
        "vCPUs do not share the host thread's time",
    ),
    (
        "--no-vcpu-turns",
        "busy vCPUs share the host thread's time evenly, not in turns",
    ),
    (
        "--no-pipe-user-return",
        "a pipe syscall returns to user space after the next mutex_lock (the earlier model)",
    ),
    (
        "--no-smt-share",
        "SMT siblings do not share their core's throughput (each as fast as a lone thread)",
    ),
    (
        "--no-idle-states",
        "one idle state (exit idle_exit_ns) instead of the machine's states by depth",
    ),
    (
        "--no-machine-noise",
        "no machine noise (CPU speeds, interrupts, placement per boot): only the cost jitter varies by seed",
    ),
    (
        "--no-wake-unlock",
        "a wakeup's cost is paid after a preemption point at its instant, not with interrupts off up to its unlock",
    ),
    (
        "--no-wq-concurrency",
        "one bound kworker per CPU that sleeps through its work item's waits (no concurrency-managed pool)",
    ),
    (
        "--no-sleep-cost",
        "no sleep's cost (Machine::sleep_ns) charged with the switch away from a sleeping task",
    ),
    (
        "--no-irq-cost",
        "no periodic tick's interrupt cost (Machine::tick_irq_ns) charged on a busy CPU",
    ),
    (
        "--no-hrtick-cost",
        "no HRTICK expiry's interrupt cost (Machine::hrtick_irq_ns) charged on its CPU",
    ),
    (
        "--no-ipi-cost",
        "no reschedule IPI's cost (Machine::ipi_irq_ns) charged on a busy receiver",
    ),
    (
        "--no-irq-split",
        "an interrupt's cost goes to the task after it, not into the interrupted task's runtime (part before the decisions)",
    ),
    (
        "--no-sock-sleep",
        "a hackbench over sockets pays a pipe's sleep cost (Machine::sleep_ns), not a socket's",
    ),
    (
        "--no-sleep-lock-split",
        "a switch after a sleep holds the runqueue lock for its share of the whole switch and sleep, not for the sleep's measured part (the upper bound)",
    ),
    (
        "--no-burst-lock-windows",
        "a switch's or wakeup's lock window stays on its CPU for the task's later bursts, which hold the lock again (the model before)",
    ),
    (
        "--no-wakee-switch-wait",
        "a wakeup does not wait for its wakee's switch-out still under way on another CPU (p->on_cpu, ttwu_runnable's lock)",
    ),
    (
        "--no-wq-spin-hold",
        "a waker that spins in a wakeup (runqueue lock, the wakee's switch-out) does not hold the wakee's wait queue while it spins",
    ),
    (
        "--no-vcpu-pause",
        "a spin wait on a lock whose holder is out of its vCPU turn keeps the turn (no pause hand-on)",
    ),
    (
        "--no-pipe-lock-pause",
        "a spin on a pipe's mutex whose owner is on a CPU polls through the rest of the vCPU turn (no pause hand-on)",
    ),
    (
        "--no-mutex-handoff",
        "the pipe mutex's unlock takes its first sleeper off the wait list and wakes it, a sleeper that loses the mutex queues again at the tail, and no hand-over (the model before)",
    ),
    (
        "--no-mutex-spin-resched",
        "a pipe mutex spinner preempted at a poll's end polls again when it runs again, instead of trying once and sleeping on the wait list (the model before)",
    ),
    (
        "--no-pipe-wake-next-writer",
        "a pipe writer wakes a sleeping writer after any write that leaves room, not only after it slept for room itself (the model before)",
    ),
    (
        "--no-pipe-pages",
        "a pipe holds 640 messages and every read that finds it full wakes a writer, not 16 pages of 40 whose reader wakes a writer only when it empties a page of a full pipe (the model before)",
    ),
    (
        "--no-mutex-poll-cut",
        "a pipe mutex spinner switched out in its poll runs the poll's rest when it runs again (the model before)",
    ),
    (
        "--no-ilb-kick",
        "a busy CPU's two-task or misfit nohz kick sends the idle CPU an IPI for a newidle balance, not the idle load balancer's pass (the model before)",
    ),
    (
        "--no-ilb-ipi",
        "the idle load balancer's pass runs at the kick's instant, the kicked CPU charged nothing and left asleep, not when the kick's IPI arrives (the model before)",
    ),
    (
        "--no-noise-boot-speed",
        "machine noise without its whole-machine speed per boot (every boot at full speed; its other parts drawn as with it)",
    ),
    (
        "--no-noise-cpu-speed",
        "machine noise without its per-CPU speed per boot (its other parts drawn as with it)",
    ),
    (
        "--no-noise-irqs",
        "machine noise without its interrupts (its other parts drawn as with it)",
    ),
    (
        "--no-noise-placement",
        "machine noise without its placement per boot (the parent on CPU 0, forking in task order; its other parts drawn as with it)",
    ),
    (
        "--no-row-lock",
        "pgbench read-write as one round trip per transaction without row locks, not its statements with the rows' sleeping locks (the model before)",
    ),
    (
        "--no-syscall-user-return",
        "a hackbench syscall without the pipe mutex decides (dequeue, room check) before its return to user space (the earlier model)",
    ),
    (
        "--no-pipe-mutex-split",
        "a pipe syscall holds its mutex for its whole body (the syscall less its entry and exit), not for the measured hold with the rest before mutex_lock (the model before)",
    ),
    (
        "--no-mutex-fast-path",
        "every pipe mutex_lock is followed by a kernel preemption point, the uncontended fast path's too (the model before)",
    ),
];

/// The mechanism flags, comma-separated (for error messages).
pub fn mechanism_flag_names() -> String {
    MECHANISM_FLAGS
        .iter()
        .map(|(f, _)| *f)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Mechanisms {
    /// Machine noise on or off, with all of its parts
    /// ([`Mechanisms::noise_boot_speed`], [`Mechanisms::noise_cpu_speed`],
    /// [`Mechanisms::noise_irqs`], [`Mechanisms::noise_placement`]); a
    /// part's own flag then turns that part off.
    pub fn set_machine_noise(&mut self, on: bool) {
        self.machine_noise = on;
        self.noise_boot_speed = on;
        self.noise_cpu_speed = on;
        self.noise_irqs = on;
        self.noise_placement = on;
    }

    /// Turns off the mechanism named by `flag` (one of [`MECHANISM_FLAGS`]).
    pub fn turn_off(&mut self, flag: &str) -> Result<(), String> {
        match flag {
            "--no-wake-cost" => self.wake_cost = false,
            "--no-scan-cost" => self.scan_cost = false,
            "--no-contention" => self.contention = false,
            "--no-vcpu-share" => self.vcpu_share = false,
            "--no-vcpu-turns" => self.vcpu_turns = false,
            "--no-vcpu-pause" => self.vcpu_pause = false,
            "--no-pipe-lock-pause" => self.pipe_lock_pause = false,
            "--no-pipe-user-return" => self.pipe_user_return = false,
            "--no-wake-unlock" => self.wake_unlock = false,
            "--no-smt-share" => self.smt_share = false,
            "--no-idle-states" => self.idle_states = false,
            "--no-machine-noise" => self.set_machine_noise(false),
            "--no-wq-concurrency" => self.wq_concurrency = false,
            "--no-sleep-cost" => self.sleep_cost = false,
            "--no-irq-cost" => self.irq_cost = false,
            "--no-hrtick-cost" => self.hrtick_cost = false,
            "--no-ipi-cost" => self.ipi_cost = false,
            "--no-irq-split" => self.irq_split = false,
            "--no-sock-sleep" => self.sock_sleep = false,
            "--no-sleep-lock-split" => self.sleep_lock_split = false,
            "--no-burst-lock-windows" => self.burst_lock_windows = false,
            "--no-wakee-switch-wait" => self.wakee_switch_wait = false,
            "--no-wq-spin-hold" => self.wq_spin_hold = false,
            "--no-mutex-handoff" => self.mutex_handoff = false,
            "--no-mutex-spin-resched" => self.mutex_spin_resched = false,
            "--no-pipe-wake-next-writer" => self.pipe_wake_next_writer = false,
            "--no-pipe-pages" => self.pipe_pages = false,
            "--no-mutex-poll-cut" => self.mutex_poll_cut = false,
            "--no-pipe-mutex-split" => self.pipe_mutex_split = false,
            "--no-mutex-fast-path" => self.mutex_fast_path = false,
            "--no-ilb-kick" => self.ilb_kick = false,
            "--no-ilb-ipi" => self.ilb_ipi = false,
            "--no-row-lock" => self.row_lock = false,
            "--no-syscall-user-return" => self.syscall_user_return = false,
            "--no-noise-boot-speed" => self.noise_boot_speed = false,
            "--no-noise-cpu-speed" => self.noise_cpu_speed = false,
            "--no-noise-irqs" => self.noise_irqs = false,
            "--no-noise-placement" => self.noise_placement = false,
            _ => {
                return Err(format!(
                    "unknown mechanism flag '{flag}' (accepted: {})",
                    mechanism_flag_names()
                ))
            }
        }
        Ok(())
    }
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            switch_thread_ns: 1_070,
            switch_process_ns: 2_410,
            ipi_ns: 1_500,
            idle_exit_ns: 2_000,
            idle_states: &[],
            smt_busy_cap: SMT_BUSY_CAP,
            bw_llc: 20_000,
            bw_cross_llc: 12_000,
            bw_cross_node: 7_000,
            l2_bytes: 1 << 20,
            jitter_pct: 10,
            pipe_write_ns: 315,
            pipe_read_ns: 315,
            sock_write_ns: 850,
            sock_read_ns: 850,
            syscall_ns: 0,
            wake_ns: 0,
            ipi_send_ns: 0,
            scan_cpu_ns: 0,
            vcpu_time_sharing: false,
            vcpu_turn_ns: 0,
        }
    }
}

/// The QEMU machine's costs (`qemu:N`), measured in Linux 7.2 on that
/// machine: `make linux-compare WHAT=costs SMP=4` (`lcbench costs -n 2000`
/// in the guest, `scripts/linux-compare/lcbench.c`; measured as the separate
/// program `lccosts` of commit e228d2c, the same code), x86_64, 4 vCPUs, QEMU TCG
/// `-icount shift=2,sleep=off`, `preempt=full`, schedstats on (as in the
/// A/B boots), one boot; the figures it printed are in
/// `docs/results/linux/sim-costs.md` ("The simulator's qemu:N costs"). Fixed before
/// any comparison run used them; not fitted to any A/B result.
/// - Switches: two threads / processes on one CPU calling `sched_yield`,
///   less the yield alone, per switch: 8.72 / 9.22 µs.
/// - IPI: the wakee's latency on an idle CPU, from the waker's return from
///   `write` to the wakee's return from `read` (median 27.65 µs), less a
///   process switch and a pipe read: 14.55 µs. The same wakeup onto a busy
///   CPU (a SCHED_IDLE spinner there) took 28.81 µs: no extra latency for
///   an idle vCPU (a halted vCPU has no idle states), so `idle_exit_ns` 0.
/// - Syscalls of 100 bytes, nobody waiting: pipe write 4.36, read 3.88,
///   unix stream write 9.62, read 7.77 µs; a null syscall 1.38 µs.
/// - Waker's side: a write that wakes a SCHED_BATCH reader on its own CPU
///   costs 6.12 µs more than one that wakes nobody (medians); one that
///   wakes a reader on an idle CPU (wake list, IPI) 2.03 µs more; onto a
///   busy CPU (direct enqueue, resched IPI) 8.07 µs more, within 1% of the
///   sum of the two (8.15).
/// - Idle scan: with the other CPUs busy and SIS_UTIL off, a wakeup of an
///   unpinned reader through `select_idle_sibling` costs the waker 2.07 µs
///   more than the same wakeup of a pinned one, which skips
///   `select_task_rq` (medians; the waker waits for the reader to sleep
///   before each round). That scan looks at CPU 0 and then at all 4 CPUs of
///   the LLC, 5 idle checks as `sched` counts them: 414 ns per CPU visited,
///   `select_task_rq`'s fixed part included (an upper bound). One boot
///   (`make linux-costs`, commit 2b68b1d); two earlier boots timed writes
///   that partly woke nobody and gave no figure.
/// - No cache model: QEMU's TCG does not model caches, so no refill cost.
/// - vCPU time sharing: a fixed loop on CPU 0 took 1.78-2.48x as long with
///   1 other vCPU spinning, 2.55-3.47x with 2 and 3.39-6.98x with 3 (three
///   boots; QEMU's round-robin turns are uneven). Modelled as turns, one
///   vCPU at a time ([`crate::engine`], "vCPU turns"), after QEMU 7.2's
///   source: a turn runs to the next timer deadline of any vCPU, or until
///   the vCPU halts, or for at most the kick period (`TCG_KICK_PERIOD`,
///   100 ms). Measured with `lcbench turns` (in `make linux-costs
///   COST_ITERS=200`, commit dd0a5f0, same conditions, one boot): k spinners
///   reading CLOCK_MONOTONIC see turns of p50 3.97 ms (p10 1.83, p90 3.98
///   ms) at k = 2, 3 and 4: the 4 ms tick period at HZ=250, the deadline;
///   the gaps between a spinner's turns are uneven (k = 4: p50 4.0 ms, mean
///   9.8, p90 23.5 ms, where even turns would give 12 ms). `--no-vcpu-turns`:
///   the earlier model, k busy vCPUs sharing one CPU's rate evenly.
pub fn qemu_costs() -> Costs {
    Costs {
        switch_thread_ns: 8_723,
        switch_process_ns: 9_221,
        ipi_ns: 14_548,
        idle_exit_ns: 0,
        idle_states: &[],
        // vCPUs of one host thread: no SMT.
        smt_busy_cap: 1024,
        bw_llc: u64::MAX,
        bw_cross_llc: u64::MAX,
        bw_cross_node: u64::MAX,
        l2_bytes: u64::MAX / 2,
        jitter_pct: 10,
        pipe_write_ns: 4_358,
        pipe_read_ns: 3_883,
        sock_write_ns: 9_618,
        sock_read_ns: 7_773,
        syscall_ns: 1_379,
        wake_ns: 6_116,
        ipi_send_ns: 2_032,
        scan_cpu_ns: 414,
        vcpu_time_sharing: true,
        vcpu_turn_ns: QEMU_TURN_NS,
    }
}

/// The lock shares of `qemu:N` ([`LockShares`]).
pub fn qemu_lock_shares() -> LockShares {
    LockShares {
        // Measured in our kernel on this machine (x86_64, 4 vCPUs, -icount
        // shift=2), hackbench sockets, `scripts/linux-compare/lockhold-probe.sh`
        // (docs/results/linux/sim-costs.md, "The simulator's qemu:N costs"): the
        // runqueue lock held for 8.44-8.50 us of a 9.04-9.10 us switch, the
        // target's runqueue lock for 6.91-6.94 us of a 13.24-13.30 us
        // `try_to_wake_up`, the wait queue's for 14.02-14.08 us around it
        // (the whole wakeup). Shares of our kernel's paths, applied to
        // Linux's measured costs above.
        switch_rq_locked_pm: QEMU_SWITCH_RQ_LOCKED_PM,
        wake_rq_locked_pm: QEMU_WAKE_RQ_LOCKED_PM,
        wake_wq_locked_pm: QEMU_WAKE_WQ_LOCKED_PM,
        sleep_rq_locked_ns: QEMU_SLEEP_RQ_LOCKED_NS,
        pipe_write_mutex_ns: QEMU_PIPE_WRITE_MUTEX_NS,
        pipe_read_mutex_ns: QEMU_PIPE_READ_MUTEX_NS,
    }
}

/// `qemu:N`: how long a hackbench pipe `write` holds the pipe's mutex, ns
/// ([`LockShares::pipe_write_mutex_ns`]). Counted in Linux 7.2.13 on that
/// machine in instructions (docs/results/linux/lazy-rows.md, "One input of
/// that mutex is not a measurement"; QEMU's TB-count plugin,
/// `scripts/tools/tbcount.c`, the difference of `hackbench -p -g 2 -l 40`
/// and `-l 20` per message, and what `anon_pipe_write`'s control flow runs
/// between `mutex_lock` and `mutex_unlock`): about 279 instructions, at
/// 4 ns each under `-icount shift=2`. Fixed before the runs it feeds.
pub const QEMU_PIPE_WRITE_MUTEX_NS: u64 = 279 * 4;
/// `qemu:N`: the same for a pipe `read` (`anon_pipe_read`): about 264
/// instructions ([`QEMU_PIPE_WRITE_MUTEX_NS`]).
pub const QEMU_PIPE_READ_MUTEX_NS: u64 = 264 * 4;

/// `qemu:N`: the share of a switch run under the runqueue lock, per mille
/// (measured, [`qemu_costs`]).
pub const QEMU_SWITCH_RQ_LOCKED_PM: u64 = 934;
/// `qemu:N`: the share of a wakeup run under the target's runqueue lock,
/// per mille (measured, [`qemu_costs`]).
pub const QEMU_WAKE_RQ_LOCKED_PM: u64 = 522;
/// `qemu:N`: the share of a wakeup run under the wakee's wait-queue lock,
/// per mille (measured, [`qemu_costs`]).
pub const QEMU_WAKE_WQ_LOCKED_PM: u64 = 1000;
/// `qemu:N`: what a hackbench sleep does under the runqueue lock beyond a
/// yield's switch, ns ([`LockShares::sleep_rq_locked_ns`]). Measured in
/// Linux 7.2 on that machine (docs/results/linux/sim-costs.md, "2026-12-06 (night):
/// a sleep's share under the runqueue lock, measured in Linux"):
/// `dequeue_task_fair` 3.15 us and PSI's sleep part 0.47 us, +/- 0.3 us;
/// 66% of a pipe's sleep ([`QEMU_SLEEP_NS`]), 55% of a socket's
/// ([`QEMU_SOCK_SLEEP_NS`]). An absolute time, fitted to nothing.
pub const QEMU_SLEEP_RQ_LOCKED_NS: u64 = 3_620;

/// A thread's speed with its SMT sibling busy, per 1024 of a lone
/// thread's: a core with both threads busy does 1.3 times a lone thread's
/// work (Hyper-Threading's "up to 30%", Marr et al., Intel Technology
/// Journal 6(1), 2002; the module docs), 1.3 / 2 * 1024 = 665.6, rounded.
pub const SMT_BUSY_CAP: u32 = 666;

/// `qemu:N`: what a sleep costs beyond a yield's switch, ns
/// ([`Machine::sleep_ns`]). Measured in Linux 7.2 on that machine
/// (`lcbench costs`, `sleep_ns`; docs/results/linux/sim-costs.md, "The simulator's
/// qemu:N costs"): two SCHED_BATCH processes on one CPU sending 100 bytes
/// back and forth over two pipes take 28.97 us a half round (one switch
/// each, every read sleeping first), 5.52 us more than the same boot's
/// pipe write (4.21) and read (3.93), local wakeup (6.12, medians) and
/// process switch (9.21, two tasks yielding: nobody sleeps).
pub const QEMU_SLEEP_NS: u64 = 5_515;

/// `qemu:N`: a busy CPU's periodic tick, ns ([`Machine::tick_irq_ns`]).
/// Measured in Linux 7.2 on that machine (`lcbench costs`, `tick_irq_ns`;
/// docs/results/linux/sim-costs.md, "The simulator's qemu:N costs"): a process alone
/// on CPU 0 (the other vCPUs idle and tickless) reading CLOCK_MONOTONIC
/// for 1 s sees 262 jumps of over 2 us against 252 local timer interrupts
/// on CPU 0; the median jump less one loop is the interrupt's entry, the
/// tick's handler (`tick_sched_timer`: jiffies and timekeeping, as CPU 0
/// then held the duty, `update_process_times`, `sched_tick`) and its exit,
/// without softirqs: 13 024 ns (13 072 in a second boot; the mean jump,
/// softirqs included, 24.7 and 25.2 us). No HRTICK expiry is in it (a task
/// alone on its CPU arms none).
pub const QEMU_TICK_IRQ_NS: u64 = 13_024;

/// `qemu:N`: the part of a busy CPU's tick before `sched_tick()`, whose
/// clock update the tick's decisions see, ns ([`Machine::tick_pre_ns`]).
/// Measured in Linux 7.2 on that machine (`lcbench costs`, `tick_pre_ns`
/// and `tick_probe_ns`; docs/results/linux/sim-costs.md, "The simulator's qemu:N
/// costs", 2026-12-05 night): [`QEMU_TICK_IRQ_NS`]'s lone spinner with an
/// fprobe on `sched_tick`: 7.84 us from the jump's start to the probe
/// (median, first boot; 7.80-7.85 in four), less half the probe's own
/// 3.17 us (the traced jump less the untraced), whose split around its
/// timestamp is not measured: 6 258 ns, +-1.59 us. The interrupt's entry,
/// the jiffies and timekeeping update and `update_process_times` up to
/// `sched_tick`.
pub const QEMU_TICK_PRE_NS: u64 = 6_258;

/// `qemu:N`: an HRTICK expiry on a busy CPU, ns ([`Machine::hrtick_irq_ns`]).
/// Measured in Linux 7.2 on that machine (`lcbench costs`,
/// `hrtick_irq_ns`; docs/results/linux/sim-costs.md, "The simulator's qemu:N costs",
/// 2026-12-05 night): two nice-0 spinners on CPU 0 switch at each slice's
/// end; the median switch gap is 19.32 us when the HRTICK's expiry ends the
/// slice and 23.73 us when the tick does (NO_HRTICK), the same switch in
/// both, so the expiry (entry, `hrtick()`, exit) costs the lone tick's
/// 13.02 us less 4.41: 8 612 ns (8 628 and 8 800 in two more boots).
pub const QEMU_HRTICK_IRQ_NS: u64 = 8_612;

/// `qemu:N`: the part of an HRTICK expiry before `hrtick()`'s clock
/// update, ns ([`Machine::hrtick_pre_ns`]). Measured as
/// [`QEMU_TICK_PRE_NS`] (`hrtick_pre_ns`, `hrtick_probe_ns`): 3.35 us from
/// the switch gap's start to an fprobe on `hrtick`, less half the probe's
/// 4.44 us: 1 128 ns, +-1.11 us.
pub const QEMU_HRTICK_PRE_NS: u64 = 1_128;

/// `qemu:N`: a reschedule IPI on a busy receiver, ns
/// ([`Machine::ipi_irq_ns`]). Measured in Linux 7.2 on that machine
/// (`lcbench costs`, `ipi_resched_ns`; docs/results/linux/sim-costs.md, "The
/// simulator's qemu:N costs", 2026-12-05 night): a spinner on CPU 1's clock
/// jumps 25.77 us around a renice from CPU 0 that sends it a reschedule
/// IPI and 14.04 us around one that sends none; less the two calls'
/// difference on CPU 0 (12.69 against 5.06 us): 4 108 ns, the IPI's entry,
/// handler, the return's `schedule()` (no switch) and exit; a second
/// boot gave the same medians to the ns.
pub const QEMU_IPI_IRQ_NS: u64 = 4_108;

/// `qemu:N`: what a sleep on a unix stream socket costs beyond a yield's
/// switch, ns ([`Machine::sock_sleep_ns`]). Measured in Linux 7.2 on that
/// machine (`lcbench costs`, `sleep_sock_ns`; docs/results/linux/sim-costs.md, "The
/// simulator's qemu:N costs"): [`QEMU_SLEEP_NS`]'s ping-pong over two unix
/// stream socketpairs takes 39.14 us a half round, 6.58 us more than the
/// same boot's socket write and read, local wakeup and process switch
/// (6 576 ns, the second boot of 87ebea4; 6 307-6 424 ns in four boots of
/// 2026-12-05, night).
pub const QEMU_SOCK_SLEEP_NS: u64 = 6_576;

/// The longest vCPU turn of `qemu:N`, ns: QEMU's `TCG_KICK_PERIOD`
/// (`accel/tcg/tcg-accel-ops-rr.h`, a tenth of a second of virtual time),
/// the kick timer that ends a turn no deadline ended.
pub const QEMU_TURN_NS: u64 = 100_000_000;

/// Machine noise: what makes one run of a benchmark differ from the next
/// on a real machine besides the benchmark's own randomness, drawn per run
/// (a "boot": one per seed, configuration and workload, `crate::run_one`)
/// from the run's seed. Its parameters, their basis, and the
/// one free scale ([`MachineNoise::boot_speed_spread_ppm`]) and how it
/// was set, are in `docs/design/simulator.md` ("Machine noise").
///
/// - **Whole-machine speed per boot**: every CPU runs at `1 - s·u` of its
///   speed for the whole run, `u` uniform in [0, 1), `s` the boot spread.
///   It stands for what changes a whole run's speed on real machines and
///   the model has nowhere else: the frequency a boot settles at (turbo
///   and thermal state), physical page placement and cache colouring.
///   The one free scale: set so that the baseline's CoV over seeds lands
///   in the published tables' 1–3% for hackbench (a calibration of the
///   noise, never of an effect: it moves every configuration alike).
/// - **Per-CPU speed per boot**: each CPU also at `1 - c·u_cpu` (`c` the
///   CPU spread, independent per CPU): cores of one part differ in their
///   top frequency by a turbo bin or two (Linux's ITMT ranks them,
///   `arch/x86/kernel/itmt.c`; 100–200 MHz of 3.5–4 GHz, 2.5–6%).
/// - **Interrupts**: a Poisson stream per busy CPU, `irq_per_s` a second,
///   each stealing `irq_ns` (jittered as every cost) from whatever runs
///   there: device interrupts, function-call IPIs and TLB shootdowns (the
///   tick and reschedule IPIs are modelled already). The rate is this
///   project's VM's order (`/proc/interrupts`: 83 and 126 a second per
///   CPU); the duration an assumption, the order of the modelled IPI.
/// - **Placement**: the benchmark's parent runs on a CPU drawn per boot
///   and forks its tasks in an order drawn per boot (fork balancing then
///   spreads them from there).
///
/// The scheduler is told none of it (as Linux, which sees neither a
/// boot's frequency nor another core's turbo bin as capacity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineNoise {
    /// Whole-machine speed spread per boot, parts per million (`s`).
    pub boot_speed_spread_ppm: u32,
    /// Per-CPU speed spread per boot, parts per million (`c`).
    pub cpu_speed_spread_ppm: u32,
    /// Interrupts per second per busy CPU.
    pub irq_per_s: u64,
    /// Time each interrupt steals, ns (before jitter).
    pub irq_ns: u64,
}

/// The machine noise of every preset it applies to (the basis of each
/// figure: [`MachineNoise`] and `docs/design/simulator.md`).
pub const MACHINE_NOISE: MachineNoise = MachineNoise {
    boot_speed_spread_ppm: 60_000,
    cpu_speed_spread_ppm: 30_000,
    irq_per_s: 150,
    irq_ns: 2_000,
};

impl Costs {
    /// Refill time of `bytes` at distance `d`, ns.
    #[inline]
    pub fn refill_ns(&self, bytes: u64, d: CpuDistance) -> u64 {
        let bw = match d {
            CpuDistance::Same | CpuDistance::Smt => return 0,
            CpuDistance::Llc => self.bw_llc,
            CpuDistance::Node => self.bw_cross_llc,
            CpuDistance::Remote => self.bw_cross_node,
        };
        bytes * 1000 / bw.max(1)
    }

    /// A digest of the whole table (FNV-1a, 64 bits, of its `Debug`
    /// text): printed with the study's results, so that a reader can tell
    /// which costs a set of results was made with (the costs are fixed; a
    /// changed digest means a changed table).
    pub fn digest(&self) -> u64 {
        format!("{self:?}")
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325, |h, b| {
                (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
            })
    }
}

/// A machine: topology and costs.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Preset name.
    pub name: String,
    /// Topology: `sched`'s own, the one its placement and balancing use.
    pub topo: Topology,
    /// Each CPU's real capacity (1024: the fastest), by which the engine
    /// scales a task's progress: `work_ns` of work (what it takes at 1024)
    /// takes `work_ns * 1024 / capacity` there. Empty: every CPU 1024 (every
    /// preset but `asym:`). The scheduler knows these only through `topo`'s
    /// capacities, which `asym-nocap:` leaves equal.
    pub speed: Vec<u32>,
    /// Costs.
    pub costs: Costs,
    /// Which part of a cost holds which kernel lock (`qemu:N` only).
    pub locks: LockShares,
    /// What a task's sleep costs beyond a yield's switch, ns: a read that
    /// sleeps (the task's dequeue, the wait queue, the empty check and the
    /// retry) against a read that finds data, charged with the switch away
    /// from a task that went to sleep ([`QEMU_SLEEP_NS`] on `qemu:N`, 0
    /// elsewhere). Apart from [`Costs`], whose digest the study's results
    /// are tied to.
    pub sleep_ns: u64,
    /// What a busy CPU's periodic tick costs, ns: the timer interrupt's
    /// entry, the tick's handler and its exit, run on the CPU's vCPU and,
    /// as Linux without `CONFIG_IRQ_TIME_ACCOUNTING` (Debian's 7.2 config)
    /// charges it, to the task that runs there ([`QEMU_TICK_IRQ_NS`] on
    /// `qemu:N`, 0 elsewhere). Tickless idle CPUs take no tick and pay
    /// nothing; HRTICK expiries and IPIs have their own figures
    /// ([`Machine::hrtick_irq_ns`], [`Machine::ipi_irq_ns`]).
    /// Apart from [`Costs`], as [`Machine::sleep_ns`].
    pub tick_irq_ns: u64,
    /// The part of [`Machine::tick_irq_ns`] before the tick's decisions
    /// (`sched_tick`'s clock update), ns ([`QEMU_TICK_PRE_NS`] on `qemu:N`);
    /// with `Mechanisms::irq_split` the interrupted task's runtime holds it
    /// at them.
    pub tick_pre_ns: u64,
    /// What an HRTICK expiry costs its busy CPU, ns: the interrupt's entry,
    /// `hrtick()` and its exit ([`QEMU_HRTICK_IRQ_NS`] on `qemu:N`, 0
    /// elsewhere); charged as the tick's.
    pub hrtick_irq_ns: u64,
    /// The part of [`Machine::hrtick_irq_ns`] before `hrtick()`'s clock
    /// update, ns ([`QEMU_HRTICK_PRE_NS`]).
    pub hrtick_pre_ns: u64,
    /// What a reschedule IPI costs a busy receiver, ns: its entry, handler
    /// and exit ([`QEMU_IPI_IRQ_NS`] on `qemu:N`, 0 elsewhere). An idle
    /// receiver's is inside [`Costs::ipi_ns`], the wakee's latency.
    pub ipi_irq_ns: u64,
    /// [`Machine::sleep_ns`] for a sleep on a unix stream socket, ns
    /// ([`QEMU_SOCK_SLEEP_NS`] on `qemu:N`, 0 elsewhere): hackbench over
    /// sockets pays it instead (`Mechanisms::sock_sleep`).
    pub sock_sleep_ns: u64,
    /// Tick rate.
    pub hz: u32,
    /// The mechanisms modelled: all on, except the pipe mutex where the
    /// costs do not split a pipe syscall into its entry/exit and its part
    /// under the mutex ([`Costs::syscall_ns`] 0: every preset but
    /// `qemu:N`). A mechanism whose cost is 0 changes nothing.
    pub mech: Mechanisms,
    /// Take a task's runs of quiet steps as one event (`sim/src/engine.rs`,
    /// "Batching"); `--no-batch` takes every step as its own event. The
    /// output is the same byte for byte either way: this is the
    /// simulator's speed, not part of the model.
    pub batch: bool,
}

impl Machine {
    /// Whether machine noise can apply: not on a machine whose clock
    /// counts instructions (`qemu:N`'s `-icount`: a boot's frequency and
    /// the host's interrupts move no virtual time).
    pub fn noise_applies(&self) -> bool {
        !self.costs.vcpu_time_sharing
    }

    /// The length of a vCPU's turn, ns ([`Costs::vcpu_turn_ns`]), where
    /// the machine's vCPUs take turns (time sharing in turns), else 0:
    /// what the engine runs with (`Kernel::new`). A lone vCPU takes no
    /// turns (QEMU starts its kick timer only with a second vCPU).
    pub fn turn_ns(&self) -> u64 {
        let (c, m) = (&self.costs, &self.mech);
        if c.vcpu_time_sharing && m.vcpu_share && m.vcpu_turns && self.topo.nr_cpus() > 1 {
            c.vcpu_turn_ns
        } else {
            0
        }
    }

    /// [`Machine::mech`] as it acts on this machine: each flag that
    /// cannot change a run here (whatever the workload, configuration and
    /// seed) is false, the others as they are. Two machines of one preset
    /// whose effective mechanisms are equal give the same run byte for
    /// byte, so the ablation runs a variant only where they differ
    /// (`crate::score::changes_mechanisms`). Each condition is where the
    /// engine reads the flag (`sim/src/engine.rs`, `sim/src/workloads.rs`):
    ///
    /// - `vcpu_share`: only with [`Costs::vcpu_time_sharing`].
    /// - `vcpu_turns`, `qemu_rr_turns`, `clock_burn`,
    ///   `switch_timer_kick`: only where vCPUs take turns (time sharing on, more than one CPU, a turn length).
    /// - `vcpu_pause`: only in turns, with a cost that holds a lock
    ///   ([`LockShares::any`]) or the pipe mutex's spin pause
    ///   (`pipe_lock_pause` with `contention`); `pipe_lock_pause` only in
    ///   turns with `vcpu_pause` and `contention` (its spin is the mutex's).
    /// - `wakee_switch_wait`, `wq_spin_hold`, `burst_lock_windows`: only
    ///   where the lock
    ///   windows are kept (turns, `vcpu_pause`, a lock share).
    /// - `wake_cost`: only with [`Costs::wake_ns`] or
    ///   [`Costs::ipi_send_ns`]; `scan_cost` only with
    ///   [`Costs::scan_cpu_ns`]; `wake_unlock` only where one of the two
    ///   charges a wakeup's waker (no wakeup debt otherwise).
    /// - `sleep_cost`: only with a sleep cost ([`Machine::sleep_ns`], or
    ///   [`Machine::sock_sleep_ns`] with `sock_sleep`); `sock_sleep` only
    ///   with [`Machine::sock_sleep_ns`] and `sleep_cost`;
    ///   `sleep_unlocked` and `sleep_lock_split` (the latter only without
    ///   `sleep_unlocked`) only with a sleep cost where the lock windows
    ///   are kept.
    /// - `irq_cost`, `hrtick_cost`, `ipi_cost`: only with
    ///   [`Machine::tick_irq_ns`], [`Machine::hrtick_irq_ns`],
    ///   [`Machine::ipi_irq_ns`]; `irq_split` only where one of the
    ///   three is charged.
    /// - `pipe_user_return`, `mutex_handoff`, `mutex_spin_resched`,
    ///   `pipe_wake_next_writer`, `pipe_pages`, `mutex_poll_cut`: only with
    ///   the pipe mutex (`contention`); `mutex_fast_path` only with it and
    ///   `pipe_user_return` (without it the body starts with the return to
    ///   user space); `pipe_mutex_split` only with it and
    ///   a measured hold ([`LockShares::pipe_write_mutex_ns`] or
    ///   [`LockShares::pipe_read_mutex_ns`]).
    /// - `smt_share`: only on a topology with SMT and
    ///   [`Costs::smt_busy_cap`] under 1024 (`crate::smt::Smt::new`).
    /// - `idle_states`: only with a table of idle states
    ///   ([`Costs::idle_states`]).
    /// - `machine_noise`: only where it applies
    ///   ([`Machine::noise_applies`]); its parts only with it (and
    ///   `noise_irqs` with [`MachineNoise::irq_per_s`]).
    ///
    /// `contention`, `wq_concurrency`, `ilb_kick`, `ilb_ipi`, `row_lock`,
    /// `syscall_user_return` and `timer_slack` stay as they are: the first is set from
    /// the costs with the preset ([`Machine::preset`]), the others act
    /// wherever their workload (`dbench-bound`, read-write pgbench,
    /// hackbench, a workload's timed sleeps: a property of the workload, which
    /// `crate::score::changes_mechanisms` looks at) or a nohz kick (more
    /// than one CPU) is.
    ///
    /// Not applied to [`Machine::mech`] itself: a run uses the flags as
    /// asked (and `sim run` prints them), which is what lets
    /// `sim/tests/effective_mech.rs` check that a flag made false here
    /// changes no run.
    pub fn effective_mech(&self) -> Mechanisms {
        let (c, m) = (&self.costs, self.mech);
        let turns = self.turn_ns() > 0;
        let mutex = m.contention;
        let pipe_pause = turns && m.vcpu_pause && m.pipe_lock_pause && mutex;
        let windows = turns && m.vcpu_pause && self.locks.any();
        let wake_cost = m.wake_cost && (c.wake_ns > 0 || c.ipi_send_ns > 0);
        let scan_cost = m.scan_cost && c.scan_cpu_ns > 0;
        let sleep = m.sleep_cost && (self.sleep_ns > 0 || (m.sock_sleep && self.sock_sleep_ns > 0));
        let irq_cost = m.irq_cost && self.tick_irq_ns > 0;
        let hrtick_cost = m.hrtick_cost && self.hrtick_irq_ns > 0;
        let ipi_cost = m.ipi_cost && self.ipi_irq_ns > 0;
        let noise = m.machine_noise && self.noise_applies();
        Mechanisms {
            wake_cost,
            scan_cost,
            contention: m.contention,
            vcpu_share: m.vcpu_share && c.vcpu_time_sharing,
            vcpu_turns: turns,
            qemu_rr_turns: m.qemu_rr_turns && turns,
            vcpu_pause: windows || pipe_pause,
            pipe_lock_pause: pipe_pause,
            pipe_user_return: m.pipe_user_return && mutex,
            wake_unlock: m.wake_unlock && (wake_cost || scan_cost),
            smt_share: m.smt_share && self.topo.has_smt() && c.smt_busy_cap < 1024,
            idle_states: m.idle_states && !c.idle_states.is_empty(),
            machine_noise: noise,
            noise_boot_speed: m.noise_boot_speed && noise,
            noise_cpu_speed: m.noise_cpu_speed && noise,
            noise_irqs: m.noise_irqs && noise && MACHINE_NOISE.irq_per_s > 0,
            noise_placement: m.noise_placement && noise,
            wq_concurrency: m.wq_concurrency,
            sleep_cost: sleep,
            irq_cost,
            hrtick_cost,
            ipi_cost,
            irq_split: m.irq_split && (irq_cost || hrtick_cost || ipi_cost),
            sock_sleep: m.sock_sleep && m.sleep_cost && self.sock_sleep_ns > 0,
            sleep_unlocked: m.sleep_unlocked && windows && sleep,
            sleep_lock_split: m.sleep_lock_split && windows && sleep && !m.sleep_unlocked,
            clock_burn: m.clock_burn && turns,
            burst_lock_windows: m.burst_lock_windows && windows,
            wakee_switch_wait: m.wakee_switch_wait && windows,
            wq_spin_hold: m.wq_spin_hold && windows,
            mutex_handoff: m.mutex_handoff && mutex,
            mutex_spin_resched: m.mutex_spin_resched && mutex,
            pipe_wake_next_writer: m.pipe_wake_next_writer && mutex,
            pipe_pages: m.pipe_pages && mutex,
            mutex_poll_cut: m.mutex_poll_cut && mutex,
            pipe_mutex_split: m.pipe_mutex_split
                && mutex
                && (self.locks.pipe_write_mutex_ns > 0 || self.locks.pipe_read_mutex_ns > 0),
            mutex_fast_path: m.mutex_fast_path && mutex && m.pipe_user_return,
            ilb_kick: m.ilb_kick,
            ilb_ipi: m.ilb_ipi,
            row_lock: m.row_lock,
            syscall_user_return: m.syscall_user_return,
            switch_timer_kick: m.switch_timer_kick && turns,
            timer_slack: m.timer_slack,
        }
    }
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.topo;
        // The topology has 1 to MAX_CPUS CPUs.
        let last = CpuId::wrapping(t.nr_cpus() - 1);
        let (nodes, llcs) = (t.node_of(last) + 1, t.llc_of(last) + 1);
        write!(
            f,
            "{}: {} CPUs, {} node(s), {} LLC(s), {} thread(s)/core, HZ={}",
            self.name,
            t.nr_cpus(),
            nodes,
            llcs,
            t.smt_mask(CpuId::BOOT).weight(),
            self.hz
        )
    }
}

/// The preset names [`Machine::preset`] knows.
pub const PRESETS: &[&str] = &[
    "graviton3",
    "cascadelake-2s",
    "epyc-ccx",
    "small",
    "flat:N",
    "qemu:N",
    "asym:B+L",
    "asym-nocap:B+L",
];

/// A little CPU's capacity in the `asym:` presets (big: 1024): RK3588's
/// Cortex-A55 against its Cortex-A76, `capacity-dmips-mhz = <530>` and
/// `<1024>` in Linux's arch/arm64/boot/dts/rockchip/rk3588-base.dtsi (seen
/// in the patch of lkml message
/// <20250519101909.62754-1-didi.debian@cknow.org>). Per MHz only, as the
/// kernel's `cpu_capacity=`/devicetree path: Linux would also scale by each
/// cluster's top frequency.
pub const LITTLE_CAPACITY: u32 = 530;

/// `asym:B+L`'s parts: B big and L little CPUs (each at least 1, at most
/// 256 in all).
fn parse_asym(spec: &str) -> Option<(usize, usize)> {
    let (b, l) = spec.split_once('+')?;
    let (b, l): (usize, usize) = (b.parse().ok()?, l.parse().ok()?);
    (b >= 1 && l >= 1 && b + l <= 256).then_some((b, l))
}

impl Machine {
    /// A preset: `graviton3` (64 cores, one LLC, no SMT, 1 MiB L2, HZ=250 as
    /// Amazon Linux arm64), `cascadelake-2s` (2 sockets × 20 cores × 2 SMT,
    /// one LLC per socket), `epyc-ccx` (64 cores in 8-core LLCs, 2 SMT, 1
    /// node, 512 KiB L2), `small` (4 CPUs, one LLC), `flat:N` (N CPUs, one
    /// LLC), `qemu:N` (the project's QEMU machine as `-smp N` presents it:
    /// N vCPUs, one LLC, no SMT, HZ=250 as Debian's Linux, with
    /// [`qemu_costs`]), `asym:B+L` (B big CPUs of capacity 1024, then L
    /// little ones of [`LITTLE_CAPACITY`], one LLC as a DynamIQ cluster:
    /// work on a little CPU takes 1024/530 times as long, and the scheduler
    /// knows the capacities), `asym-nocap:B+L` (the same CPUs, the
    /// scheduler told they are equal: a devicetree without
    /// `capacity-dmips-mhz`).
    pub fn preset(name: &str) -> Option<Machine> {
        let c = Costs::default();
        let mut speed = Vec::new();
        let mut locks = LockShares::default();
        let mut sleep_ns = 0;
        let mut tick_irq_ns = 0;
        let (mut tick_pre_ns, mut hrtick_irq_ns, mut hrtick_pre_ns) = (0, 0, 0);
        let (mut ipi_irq_ns, mut sock_sleep_ns) = (0, 0);
        let (topo, costs) = match name {
            "graviton3" => (Topology::uniform(64, 1, 64, 1).ok()?, c),
            "cascadelake-2s" => (
                Topology::uniform(80, 2, 20, 1).ok()?,
                Costs {
                    idle_states: SKX_CSTATES,
                    ..c
                },
            ),
            "epyc-ccx" => (
                Topology::uniform(128, 2, 8, 8).ok()?,
                Costs {
                    l2_bytes: 512 << 10,
                    ..c
                },
            ),
            "small" => (Topology::uniform(4, 1, 4, 1).ok()?, c),
            s if s.starts_with("asym:") || s.starts_with("asym-nocap:") => {
                let (kind, spec) = s.split_once(':')?;
                let (b, l) = parse_asym(spec)?;
                speed = core::iter::repeat_n(1024, b)
                    .chain(core::iter::repeat_n(LITTLE_CAPACITY, l))
                    .collect();
                let flat = Topology::uniform(b + l, 1, b + l, 1).ok()?;
                let topo = if kind == "asym" {
                    flat.with_capacities(&speed).ok()?
                } else {
                    flat
                };
                (topo, c)
            }
            s if s.starts_with("qemu:") => {
                let n: usize = s.strip_prefix("qemu:")?.parse().ok()?;
                if !(1..=64).contains(&n) {
                    return None;
                }
                locks = qemu_lock_shares();
                sleep_ns = QEMU_SLEEP_NS;
                tick_irq_ns = QEMU_TICK_IRQ_NS;
                tick_pre_ns = QEMU_TICK_PRE_NS;
                hrtick_irq_ns = QEMU_HRTICK_IRQ_NS;
                hrtick_pre_ns = QEMU_HRTICK_PRE_NS;
                ipi_irq_ns = QEMU_IPI_IRQ_NS;
                sock_sleep_ns = QEMU_SOCK_SLEEP_NS;
                (Topology::uniform(n, 1, n, 1).ok()?, qemu_costs())
            }
            s => {
                let n: usize = s.strip_prefix("flat:")?.parse().ok()?;
                if !(1..=256).contains(&n) {
                    return None;
                }
                (Topology::uniform(n, 1, n, 1).ok()?, c)
            }
        };
        let mut mech = Mechanisms {
            contention: costs.syscall_ns > 0,
            ..Mechanisms::default()
        };
        mech.set_machine_noise(false);
        Some(Machine {
            name: name.to_string(),
            topo,
            speed,
            hz: 250,
            mech,
            batch: true,
            costs,
            locks,
            sleep_ns,
            tick_irq_ns,
            tick_pre_ns,
            hrtick_irq_ns,
            hrtick_pre_ns,
            ipi_irq_ns,
            sock_sleep_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(i: usize) -> CpuId {
        CpuId::new(i).unwrap()
    }

    /// The cost tables the study's results were made with: a change of any
    /// cost (costs are fixed parameters, never tuned) changes a digest and
    /// fails here, to be made on purpose and recorded in
    /// `docs/results/study.md` with the study run again.
    ///
    /// The study's tables (docs/results/study.md) were made with
    /// 0x0819_c141_1927_b006, one table for both machines. December 2026:
    /// two costs added, SMT throughput sharing (`smt_busy_cap` 666, the
    /// "up to 30%" of Marr et al., Intel Technology Journal 6(1), 2002) and
    /// Cascade Lake's idle states (`idle_states`, `skx_cstates` of Linux's
    /// drivers/idle/intel_idle.c); no cost of the old table changed, and
    /// graviton3 (no SMT, no table of idle states) runs as before, byte for
    /// byte. cascadelake-2s now has a table of its own (its idle states).
    #[test]
    fn cost_tables_are_the_studys() {
        let d = |m: &str| Machine::preset(m).unwrap().costs.digest();
        assert_eq!(d("graviton3"), STUDY_COSTS_GRAVITON3);
        assert_eq!(d("cascadelake-2s"), STUDY_COSTS_CASCADELAKE);
        assert_ne!(d("qemu:4"), STUDY_COSTS_GRAVITON3);
        let mut c = Machine::preset("graviton3").unwrap().costs;
        c.pipe_write_ns += 1;
        assert_ne!(c.digest(), STUDY_COSTS_GRAVITON3);
        // The two tables differ in the idle states alone.
        let mut g = Machine::preset("graviton3").unwrap().costs;
        g.idle_states = crate::idle::SKX_CSTATES;
        assert_eq!(g.digest(), STUDY_COSTS_CASCADELAKE);
        let mut s = Machine::preset("cascadelake-2s").unwrap().costs;
        s.smt_busy_cap = 1024;
        assert_ne!(s.digest(), STUDY_COSTS_CASCADELAKE);
    }
    const STUDY_COSTS_GRAVITON3: u64 = 0x4498_2d5c_4c89_e832;
    const STUDY_COSTS_CASCADELAKE: u64 = 0xa934_3e55_d1da_8943;

    #[test]
    fn presets() {
        let m = Machine::preset("cascadelake-2s").unwrap();
        assert_eq!(m.topo.nr_cpus(), 80);
        assert_eq!(m.topo.distance(cpu(0), cpu(1)), CpuDistance::Smt);
        assert_eq!(m.topo.distance(cpu(0), cpu(2)), CpuDistance::Llc);
        assert_eq!(m.topo.distance(cpu(0), cpu(40)), CpuDistance::Remote);
        let e = Machine::preset("epyc-ccx").unwrap();
        assert_eq!(e.topo.distance(cpu(0), cpu(16)), CpuDistance::Node);
        assert_eq!(Machine::preset("flat:256").unwrap().topo.nr_cpus(), 256);
        assert!(Machine::preset("flat:257").is_none());
        let a = Machine::preset("asym:4+4").unwrap();
        assert_eq!(a.speed, [1024, 1024, 1024, 1024, 530, 530, 530, 530]);
        assert!(a.topo.has_asym_capacity());
        assert_eq!(a.topo.capacity_of(cpu(5)), 530);
        let n = Machine::preset("asym-nocap:4+4").unwrap();
        assert_eq!(n.speed, a.speed);
        assert!(!n.topo.has_asym_capacity());
        for bad in [
            "asym:0+4",
            "asym:4+0",
            "asym:4",
            "asym:200+57",
            "asym:x+1",
            "asym-nocap:+",
        ] {
            assert!(Machine::preset(bad).is_none(), "{bad}");
        }
        let q = Machine::preset("qemu:4").unwrap();
        assert_eq!(q.topo.nr_cpus(), 4);
        assert_eq!(q.topo.distance(cpu(0), cpu(3)), CpuDistance::Llc);
        assert!(q.costs.vcpu_time_sharing);
        for bad in ["qemu:0", "qemu:65", "qemu:", "qemu:x", "qemu:-1"] {
            assert!(Machine::preset(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn mechanism_flags() {
        let mut m = Mechanisms::default();
        for (f, _) in MECHANISM_FLAGS {
            m.turn_off(f).unwrap();
        }
        assert_eq!(
            m,
            Mechanisms {
                wake_cost: false,
                scan_cost: false,
                contention: false,
                vcpu_share: false,
                vcpu_turns: false,
                qemu_rr_turns: false,
                vcpu_pause: false,
                pipe_lock_pause: false,
                pipe_user_return: false,
                wake_unlock: false,
                smt_share: false,
                idle_states: false,
                machine_noise: false,
                noise_boot_speed: false,
                noise_cpu_speed: false,
                noise_irqs: false,
                noise_placement: false,
                wq_concurrency: false,
                sleep_cost: false,
                irq_cost: false,
                hrtick_cost: false,
                ipi_cost: false,
                irq_split: false,
                sock_sleep: false,
                sleep_unlocked: false,
                sleep_lock_split: false,
                clock_burn: false,
                burst_lock_windows: false,
                wakee_switch_wait: false,
                wq_spin_hold: false,
                mutex_handoff: false,
                mutex_spin_resched: false,
                pipe_wake_next_writer: false,
                pipe_pages: false,
                mutex_poll_cut: false,
                pipe_mutex_split: false,
                mutex_fast_path: false,
                ilb_kick: false,
                ilb_ipi: false,
                row_lock: false,
                syscall_user_return: false,
                switch_timer_kick: false,
                timer_slack: false,
            }
        );
        let e = Mechanisms::default().turn_off("--no-locks").unwrap_err();
        assert!(e.contains("--no-contention"), "{e}");
    }
}
