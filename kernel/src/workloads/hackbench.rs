//! `hackbench [-p] [-T|-P] [-g GROUPS] [-l LOOPS] [-f FDS] [-s DATASIZE]`:
//! rt-tests `hackbench` / `perf bench sched messaging`. Each group has FDS
//! receivers, each reading its own socket (default) or pipe (`-p`), and FDS
//! senders that each write LOOPS messages of DATASIZE bytes to every receiver
//! of the group. Reports the wall time from the start signal until the last
//! thread finished, like Linux's `Time:` line.
//!
//! # Wakeups, as Linux's
//! The channels follow [`Model::Socket`] or [`Model::Pipe`] (see
//! [`crate::sync::channel`] for the Linux code they model):
//! - sockets (`unix_stream_sendmsg` → `sock_def_readable` →
//!   `wake_up_interruptible_sync_poll`): every send wakes the sleeping
//!   receiver with WF_SYNC; senders block while the socket's 208 KiB sndbuf is
//!   charged and are all woken (sync) when it drains to a quarter;
//! - pipes (`anon_pipe_write`): a write wakes one reader with WF_SYNC only if
//!   the pipe was empty; writers block on a full pipe (16 pages) and are woken
//!   one at a time (sync) as pages are freed.
//!
//! Either way every wakeup hackbench causes is WF_SYNC (counted per channel
//! and reported); the start signal is a semaphore (Linux: a `poll` on a pipe).
//!
//! `-T` / `-P`: Linux runs each task as a thread or a forked process; the only
//! scheduler-visible difference is that a switch between processes also
//! switches the mm. Here every task is a kernel thread either way; the flag is
//! accepted and printed.
//!
//! # The cost of a syscall (`-C`)
//! By default a send or a receive costs only what the channel operation
//! costs here, about a tenth of what Linux's `write()`/`read()` cost on the
//! same QEMU machine (docs/results/linux/problems.md, "Problems found", item 2).
//! `-C linux` charges each data message's send and receive the CPU time
//! Linux 7.2 spends in that syscall on that machine, as measured by `lcbench
//! costs` (pipe write / read 4358 / 3883 ns, socket 9618 / 7773 ns: the
//! figures and their conditions are at [`Hackbench::LINUX_PIPE_WRITE_NS`]);
//! `-C NS` charges NS ns to each. The charge is a calibrated instruction
//! burn ([`BurnRate`]): at the run's start the parent times
//! [`super::burn`] on the guest clock and keeps the fastest of a few
//! trials as loop iterations per second; each charge then runs that many
//! iterations per ns, with no clock read. Like Linux's syscall
//! instructions, it progresses only while its task runs on its CPU: time
//! the task spends preempted, or that its vCPU spends out of its turn
//! under `-icount` (where QEMU's TCG runs the vCPUs in turns and the
//! guest clock moves with every vCPU's instructions), does not count
//! toward it. Under `-icount` an iteration's guest time is fixed, so the
//! calibration is the same every run (printed with the charge). Until
//! 10010b3 the charge was a loop until the guest clock had moved NS ns,
//! which a preemption or a lost turn in the middle ended early.
//!
//! It is burned as the syscall's kernel time, where Linux spends it: in
//! kernel code, not in [`crate::sched::run_in_user_mode`]. So an interrupt
//! arriving during it preempts only for an immediate request under full or
//! lazy (a return to kernel code), and a lazy request waits for the
//! syscall's end, [`crate::sched::exit_to_user_mode`], as Linux's waits for
//! `exit_to_user_mode_loop()`. A send burns before it queues the message
//! and wakes the receiver (Linux copies the data in, then calls
//! `sk_data_ready` / wakes `rd_wait`); a receive burns after it took the
//! message (Linux copies it out after any sleep). Poison messages, which
//! Linux's hackbench does not send, are not charged. Not modelled: the
//! pipe's `mutex`, which Linux holds while it copies (the charge runs
//! outside the channel's lock), and a cost that grows with `-s` (the
//! figures are for 100-byte messages).
//!
//! # The cost of a switch and of a wakeup (`-K`)
//! Ours' context switch and the waker's side of ours' local wakeup cost
//! less than Linux's on the same machine (4297 against 8723 / 9221 ns,
//! 4948 against 6150 ns: [`Hackbench::OURS_SWITCH_NS`] and those beside
//! it). `-K linux` charges the difference, `-K SWITCH_NS,WAKE_NS` any
//! figures, as kernel work burned like `-C`'s:
//! - per context switch of a hackbench task (counted from its own nvcsw +
//!   nivcsw), charged to that task when it runs again, at the end of its
//!   next channel operation (in Linux a switch's cost falls on both sides;
//!   here all of it on the task switched out);
//! - per wakeup a channel operation did, charged to the task that did it,
//!   the waker, after the operation. Counted as the channel's woken
//!   counters across the operation, less the times the task itself was
//!   woken in it (its voluntary switches there: a task asleep in a channel
//!   operation is woken through that channel). Every wakeup is charged as
//!   a local one. While a task is switched out inside an operation, others
//!   on the same channel may wake someone else (a blocked sender's
//!   fellow senders, woken together with it; a reader that slept again
//!   after the task's wakeup preempted it, woken by another sender), and
//!   that wakeup is counted for both: the report says how many wakeups
//!   were charged against how many there were.
//!
//! Switches out of the idle thread or the shell, and a task's switches
//! after its last operation, are not charged.
//!
//! # The pipe's mutex (`-M`, with `-p -C linux`)
//! Linux copies a pipe write's data in and a read's out under the pipe's
//! `mutex` (`anon_pipe_write` / `anon_pipe_read`) and wakes after the
//! unlock. With `-M` each pipe has such a lock ([`PipeMutex`]): a send
//! burns the syscall entry and exit outside it
//! ([`Hackbench::LINUX_NULL_SYSCALL_NS`]), then the rest of `-C linux`'s
//! figure under it, then queues and wakes; a receive takes the message,
//! then burns the rest under the lock and the entry and exit after it.
//! The queueing itself runs outside the lock (the channel has its own), so
//! a writer never holds the mutex while it waits for room (Linux drops it
//! there too).
//!
//! The result line `pipe mutex: …` ([`PipeMutexStats`]) counts the locks
//! that found the mutex taken, the sleeps on it, the wakeups at unlock,
//! why a waiter stopped spinning, and the holds during which the owner
//! was switched out: the counts that a Linux trace of the same run gives
//! (`linux-compare.sh TRACE=1`, docs/results/linux/three-way.md, "Which wait queue
//! Linux's pipe wakeups come from").
//!
//! # Per-role counters (`-R`, the `roles:` lines)
//! With `-R` a run also prints what ended the senders' and the receivers' runs
//! (voluntary switches inside a send, i.e. a full buffer, or elsewhere;
//! involuntary ones inside a send, at the return to user space or
//! elsewhere), how many times receivers were woken and how many messages
//! each found queued, and the time from the waking send to the woken
//! receiver's run, on the waker's CPU or another ([`RoleStats`]). They
//! are what a Linux trace of rt-tests' hackbench gives per role
//! (`linux-compare.sh TRACE=1` or `TRACE=2`), so that the two kernels'
//! mechanisms can be set side by side (docs/results/linux/problems.md, "what ends
//! a sender's run under NEXT_BUDDY"). Each task counts into locals from
//! its own nvcsw / nivcsw and adds them up once at its end; the only
//! shared write on the message path is the receiver's wakeup stamp
//! ([`stamp_send`]): one load per send, and a clock read and a
//! compare-exchange per first send after the receiver found its channel
//! empty. That is not free: three switch-count reads per send, a
//! channel-counter read and a stamp store per receive made `hackbench -g 1
//! -l 20` 15-25% slower in guest time (x86_64, 2 CPUs, -icount), more
//! switches and migrations, and rt-tests' hackbench counts nothing. So it
//! is opt-in, and a const parameter of the run ([`run_charged`]'s `ROLES`)
//! so that a run without `-R` compiles to the message path it had before
//! the counters existed.
//!
//! # Who spawns the tasks
//! A fresh `hackbench` thread of the run, the parent
//! ([`super::Job::spawn_parent`]), spawns every task, then releases the
//! senders, then waits for all of them, as rt-tests' hackbench main
//! process forks its groups, writes the start byte and reaps them. The
//! shell only waits for the parent. So the shell wakes nobody, and the
//! tasks start with the parent's `wakee_flips` (a fork copies them), which
//! are the shell's at the parent's spawn and no longer grow by one per
//! sender each run (docs/results/linux/three-way.md, "hackbench's workers and the
//! shell's wakee_flips").
//!
//! `-W FLIPS` starts the parent with FLIPS `wakee_flips` instead
//! ([`sched::smp::Scheduler::set_wakee_flips`]), before it spawns the
//! tasks, so they start with FLIPS too. It is an input, not a rule:
//! rt-tests' hackbench main process is forked by a shell and inherits
//! init's flips, 4-8 on this project's QEMU machine, where ours' parent
//! has the shell thread's, near 0, and `wake_wide()` holds for a wakee
//! only with as many flips as the LLC has CPUs. Off by default.
//!
//! Stopping: senders poll the stop flag; every sender, finished or stopped,
//! sends one poison message to each receiver of its group, and a receiver
//! exits after FDS poisons, so nobody waits forever. A sender that could not
//! be spawned is poisoned for by the parent.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use ::shell::Hackbench;
use sched::TaskParams;

use super::{Control, Job};
use crate::arch;
use crate::sync::{Channel, ChannelStats, Model, Semaphore, WaitQueue};

const POISON: u32 = u32::MAX;

/// What a run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    /// From the start signal to the last thread's end.
    pub ns: u64,
    /// Data messages the receivers got (poisons excluded).
    pub data_received: u64,
    /// Data messages the run was to pass: groups x fds x fds x loops.
    pub data_expected: u64,
    /// All channels' counters summed (poison messages included).
    pub channels: ChannelStats,
    /// Stopped by Ctrl-C or `kill`.
    pub interrupted: bool,
    /// `-K`: the context switches charged (all tasks).
    pub charged_switches: u64,
    /// `-K`: the wakeups charged (all tasks; see the module's notes).
    pub charged_wakeups: u64,
    /// `-M`: what the pipe mutexes did (all groups summed).
    pub pipe_mutex: PipeMutexStats,
    /// `-R`: what ended the senders' and receivers' runs, and the
    /// receivers' wakeups (the `roles:` result line); zero without it.
    pub roles: RoleStats,
}

impl Report {
    /// `time_s` (lower is better).
    pub fn metrics(&self) -> super::Metrics {
        super::Metrics {
            list: alloc::vec![super::Metric::lower("time_s", self.ns as f64 / 1e9)],
            interrupted: self.interrupted,
        }
    }
}

/// The CPU time charged to a message's send and receive (`-C`), and to a
/// task's switches and wakeups (`-K`). A type, not a value, so that a run
/// without `-C` and `-K` ([`NoCharge`], zero-sized) compiles to the code it
/// had before the options existed, and one with `-C` only ([`ChargeNs`])
/// to the code it had before `-K`.
trait Charge: Copy + Send + 'static {
    /// One task's account of what it was charged for (`-K`).
    type Acct: Send;
    /// The run's totals, shared by its tasks (`-K`).
    type Totals: Clone + Send + 'static;
    /// A group's pipe mutexes (`-M`), by the receiver's place.
    type Locks: Clone + Send + Sync + 'static;
    /// A group's `fds` pipe mutexes.
    fn locks(self, fds: usize) -> Self::Locks;
    /// What a group's pipe mutexes did.
    fn lock_stats(locks: &Self::Locks) -> PipeMutexStats;
    /// Before a data message is queued to the group's pipe `k`.
    fn send(self, locks: &Self::Locks, k: usize);
    /// After a data message was taken from the group's pipe `k`.
    fn recv(self, locks: &Self::Locks, k: usize);
    /// Says what is charged, after the run's header lines.
    fn print(self, out: &mut dyn Write);
    /// The run's totals, zero.
    fn totals(self) -> Self::Totals;
    /// A task's account as it starts its part of the run.
    fn start(self) -> Self::Acct;
    /// Before a channel operation of the task.
    fn op_begin(self, ch: &Channel<u32>, acct: &mut Self::Acct);
    /// After that operation (and its `-C` charge): charges what happened
    /// since the last one.
    fn op_end(self, ch: &Channel<u32>, acct: &mut Self::Acct);
    /// Adds a task's account to the totals as it ends.
    fn finish(self, acct: &Self::Acct, totals: &Self::Totals);
    /// (switches, wakeups) charged.
    fn charged(totals: &Self::Totals) -> (u64, u64);
}

/// Implements the `-K` part of [`Charge`] as nothing.
macro_rules! no_sched_charge {
    () => {
        type Acct = ();
        type Totals = ();
        type Locks = ();
        #[inline(always)]
        fn locks(self, _: usize) {}
        #[inline(always)]
        fn lock_stats(_: &()) -> PipeMutexStats {
            PipeMutexStats::default()
        }
        #[inline(always)]
        fn totals(self) {}
        #[inline(always)]
        fn start(self) {}
        #[inline(always)]
        fn op_begin(self, _: &Channel<u32>, _: &mut ()) {}
        #[inline(always)]
        fn op_end(self, _: &Channel<u32>, _: &mut ()) {}
        #[inline(always)]
        fn finish(self, _: &(), _: &()) {}
        #[inline(always)]
        fn charged(_: &()) -> (u64, u64) {
            (0, 0)
        }
    };
}

/// No `-C`: nothing charged.
#[derive(Clone, Copy)]
struct NoCharge;

impl Charge for NoCharge {
    no_sched_charge!();
    #[inline(always)]
    fn send(self, _: &(), _: usize) {}
    #[inline(always)]
    fn recv(self, _: &(), _: usize) {}
    #[inline(always)]
    fn print(self, _: &mut dyn Write) {}
}

/// `-C`: ns burned per send and per receive.
#[derive(Clone, Copy)]
struct ChargeNs {
    send_ns: u32,
    recv_ns: u32,
    rate: BurnRate,
}

impl Charge for ChargeNs {
    no_sched_charge!();
    fn send(self, _: &(), _: usize) {
        self.rate.work(u64::from(self.send_ns));
    }
    fn recv(self, _: &(), _: usize) {
        self.rate.work(u64::from(self.recv_ns));
    }
    fn print(self, out: &mut dyn Write) {
        let _ = writeln!(
            out,
            "Each send is charged {} ns and each receive {} ns of syscall time",
            self.send_ns, self.recv_ns
        );
        self.rate.print(out);
    }
}

/// `-K` or `-M` (with or without `-C`): ns per send and receive, per
/// context switch and per wakeup, and the pipe mutex.
#[derive(Clone, Copy)]
struct ChargeSched {
    send_ns: u32,
    recv_ns: u32,
    switch_ns: u32,
    wake_ns: u32,
    /// `-M`: the part of a send's and a receive's charge outside the
    /// pipe's mutex (syscall entry and exit); the rest runs under it.
    mutex_outside_ns: Option<u32>,
    rate: BurnRate,
}

/// `-M`: what pipe mutexes did, to set beside a Linux trace of the same
/// run (`linux-compare.sh TRACE=1`'s `pipe mutex:` rows and D switch-outs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeMutexStats {
    /// `lock()`s that found it taken (Linux: entries into
    /// `__mutex_lock_slowpath`).
    pub contended: u64,
    /// Voluntary switches while waiting for it (Linux: D switch-outs in
    /// `__mutex_lock`); one `lock()` may sleep more than once.
    pub sleeps: u64,
    /// `unlock()`s that woke a sleeper (Linux: wakeups by
    /// `__mutex_unlock_slowpath`'s `wake_up_q`).
    pub wakeups: u64,
    /// Waits that slept, begun because the owner was not on a CPU.
    pub waits_owner_off_cpu: u64,
    /// Waits that slept, begun with the owner on a CPU because the waiter's
    /// CPU had an immediate resched request.
    pub waits_resched: u64,
    /// Holds during which the owner was switched out (preempted or asleep)
    /// before its unlock.
    pub holds_switched_out: u64,
}

impl core::ops::AddAssign for PipeMutexStats {
    fn add_assign(&mut self, o: Self) {
        self.contended += o.contended;
        self.sleeps += o.sleeps;
        self.wakeups += o.wakeups;
        self.waits_owner_off_cpu += o.waits_owner_off_cpu;
        self.waits_resched += o.waits_resched;
        self.holds_switched_out += o.holds_switched_out;
    }
}

/// `-M`: a pipe's `mutex` (Linux's `pipe->mutex`, held while a read or a
/// write copies): the owner's thread index + 1 (0: free), the tasks
/// asleep on it and its [`PipeMutexStats`] counters. A task that finds it
/// taken spins while the owner is on a CPU and its own CPU has no
/// immediate resched request (Linux's `mutex_optimistic_spin`), else
/// sleeps until it is released; a release wakes one sleeper (plain, as
/// `mutex_unlock`'s `wake_up_q`).
pub(crate) struct PipeMutex {
    owner: AtomicU32,
    waiters: WaitQueue,
    contended: AtomicU64,
    sleeps: AtomicU64,
    wakeups: AtomicU64,
    waits_owner_off_cpu: AtomicU64,
    waits_resched: AtomicU64,
    holds_switched_out: AtomicU64,
    /// The owner's nvcsw + nivcsw when it took the lock (written and read
    /// by the owner only).
    owner_switches: AtomicU64,
}

impl PipeMutex {
    pub(crate) fn new() -> Self {
        PipeMutex {
            owner: AtomicU32::new(0),
            waiters: WaitQueue::new(),
            contended: AtomicU64::new(0),
            sleeps: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            waits_owner_off_cpu: AtomicU64::new(0),
            waits_resched: AtomicU64::new(0),
            holds_switched_out: AtomicU64::new(0),
            owner_switches: AtomicU64::new(0),
        }
    }

    /// Its counters so far.
    pub(crate) fn stats(&self) -> PipeMutexStats {
        PipeMutexStats {
            contended: self.contended.load(Ordering::Relaxed),
            sleeps: self.sleeps.load(Ordering::Relaxed),
            wakeups: self.wakeups.load(Ordering::Relaxed),
            waits_owner_off_cpu: self.waits_owner_off_cpu.load(Ordering::Relaxed),
            waits_resched: self.waits_resched.load(Ordering::Relaxed),
            holds_switched_out: self.holds_switched_out.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn lock(&self) {
        let me = crate::task::current().idx() + 1;
        let mut counted = false;
        loop {
            let owner = match self
                .owner
                .compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    let (v, i) = own_switches();
                    self.owner_switches.store(v + i, Ordering::Relaxed);
                    return;
                }
                Err(o) => o,
            };
            if owner == 0 {
                continue;
            }
            if !counted {
                counted = true;
                self.contended.fetch_add(1, Ordering::Relaxed);
            }
            let running = crate::task::thread(owner - 1)
                .on_cpu
                .load(Ordering::Relaxed);
            let resched = matches!(
                crate::percpu::this_cpu().need_resched(),
                ::sched::Resched::Now
            );
            if running && !resched {
                // Linux's `mutex_spin_on_owner` polls with `cpu_relax()`,
                // x86's `pause`: under QEMU's TCG that hands the vCPU's
                // turn on, so the owner runs again before the next poll.
                crate::arch::cpu_relax();
                continue;
            }
            let nvcsw = own_switches().0;
            self.waiters
                .wait_event(|| self.owner.load(Ordering::SeqCst) == 0);
            let slept = own_switches().0 - nvcsw;
            self.sleeps.fetch_add(slept, Ordering::Relaxed);
            // A wait counts by its reason only if it slept: the owner may
            // release (and leave its CPU) between the reads above and the
            // wait's first check, which then finds the mutex free.
            if slept > 0 {
                if running {
                    self.waits_resched.fetch_add(1, Ordering::Relaxed);
                } else {
                    self.waits_owner_off_cpu.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    pub(crate) fn unlock(&self) {
        let (v, i) = own_switches();
        if v + i != self.owner_switches.load(Ordering::Relaxed) {
            self.holds_switched_out.fetch_add(1, Ordering::Relaxed);
        }
        self.owner.store(0, Ordering::SeqCst);
        if self.waiters.wake_one() {
            self.wakeups.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Log2 buckets of the receivers' wakeup-to-run times (ns): bucket `b`
/// holds times in `[2^b, 2^(b+1))`, the last one everything longer.
pub const WAKE_LAT_BUCKETS: usize = 32;

/// What ended each role's runs and what a woken receiver found: the counts
/// a Linux trace of the same run gives (`linux-compare.sh TRACE=1` / `2`:
/// switch-outs by `prev_state` per role, by kernel stack; the
/// `lc_wlat` wakeup-to-run histogram; docs/results/linux/problems.md, "what ends a
/// sender's run under NEXT_BUDDY"). Counted by the tasks themselves from
/// their own nvcsw / nivcsw around each channel operation, into locals
/// flushed once at their end: no allocation and no shared write on the
/// message path except the wakeup stamp below.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoleStats {
    /// Senders' voluntary switches inside a send (a full buffer; Linux: S
    /// in `sock_alloc_send_pskb` / `anon_pipe_write`).
    pub send_blocked: u64,
    /// Senders' voluntary switches elsewhere (the start gate).
    pub send_blocked_other: u64,
    /// Senders preempted inside a send: at the wakeup's unlock, or an
    /// interrupt's return during it (Linux: R+ at `sock_def_readable`'s
    /// irqrestore).
    pub send_preempted_in_send: u64,
    /// Senders switched out at the syscall's return to user space (Linux:
    /// `exit_to_user_mode_loop`).
    pub send_preempted_user_return: u64,
    /// Senders preempted elsewhere: an interrupt's return in the `-C`/`-K`
    /// charge or between operations.
    pub send_preempted_other: u64,
    /// Receivers' voluntary switches (an empty channel; the pipe mutex with
    /// `-M`).
    pub recv_blocked: u64,
    /// Receivers' involuntary switches.
    pub recv_preempted: u64,
    /// Receives that slept, and then ran: the receivers' wakeups.
    pub recv_wakeups: u64,
    /// Messages queued when a woken receiver took its first (that one
    /// included), summed over `recv_wakeups`.
    pub recv_found: u64,
    /// Woken receivers that ran on the CPU the waking send ran on, and
    /// their wakeup-to-run time summed (ns).
    pub wake_same_cpu: u64,
    pub wake_same_cpu_ns: u64,
    /// The same for those that ran on another CPU.
    pub wake_other_cpu: u64,
    pub wake_other_cpu_ns: u64,
    /// Wakeup-to-run times, log2 buckets of ns ([`WAKE_LAT_BUCKETS`]).
    pub wake_lat_log2: [u64; WAKE_LAT_BUCKETS],
}

/// [`RoleStats`] shared by a run's tasks; each adds its locals once.
struct SharedRoles {
    sum: crate::sync::SpinLock<RoleStats>,
}

impl SharedRoles {
    fn add(&self, r: &RoleStats) {
        let mut s = self.sum.lock();
        s.send_blocked += r.send_blocked;
        s.send_blocked_other += r.send_blocked_other;
        s.send_preempted_in_send += r.send_preempted_in_send;
        s.send_preempted_user_return += r.send_preempted_user_return;
        s.send_preempted_other += r.send_preempted_other;
        s.recv_blocked += r.recv_blocked;
        s.recv_preempted += r.recv_preempted;
        s.recv_wakeups += r.recv_wakeups;
        s.recv_found += r.recv_found;
        s.wake_same_cpu += r.wake_same_cpu;
        s.wake_same_cpu_ns += r.wake_same_cpu_ns;
        s.wake_other_cpu += r.wake_other_cpu;
        s.wake_other_cpu_ns += r.wake_other_cpu_ns;
        for (a, b) in s.wake_lat_log2.iter_mut().zip(r.wake_lat_log2) {
            *a += b;
        }
    }
}

/// Messages in `ch` (poisons included), from its counters: a hint, read
/// without the channel's lock.
fn queued(ch: &Channel<u32>) -> u64 {
    let s = ch.stats();
    s.sent.saturating_sub(s.received)
}

/// The wakeup stamp of a receiver: 0 while nobody has sent since it found
/// its channel empty; then the first such send's time (ns) shifted left by
/// 8, or'd with its CPU plus one, set by that sender just before it sends
/// (so before the wakeup and any preemption it causes). A receiver that
/// slept reads it when it runs.
fn stamp_send(stamp: &AtomicU64) {
    if stamp.load(Ordering::Relaxed) == 0 {
        let cpu = crate::task::current().cpu().index() as u64 & 0xff;
        let s = (arch::now_ns() << 8) | (cpu + 1);
        let _ = stamp.compare_exchange(0, s, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// A receive that slept has returned with its first message: counts the
/// wakeup, what was queued, and the time since the waking send.
fn receiver_woke(ch: &Channel<u32>, stamp: &AtomicU64, rs: &mut RoleStats) {
    rs.recv_wakeups += 1;
    rs.recv_found += queued(ch) + 1;
    let s = stamp.load(Ordering::Relaxed);
    if s == 0 {
        return;
    }
    let lat_ns = arch::now_ns().saturating_sub(s >> 8);
    let waker_cpu = (s & 0xff) - 1;
    if waker_cpu == crate::task::current().cpu().index() as u64 & 0xff {
        rs.wake_same_cpu += 1;
        rs.wake_same_cpu_ns += lat_ns;
    } else {
        rs.wake_other_cpu += 1;
        rs.wake_other_cpu_ns += lat_ns;
    }
    let b = (63 - lat_ns.max(1).leading_zeros() as usize).min(WAKE_LAT_BUCKETS - 1);
    rs.wake_lat_log2[b] += 1;
}

/// A task's `-K` account.
struct SchedAcct {
    /// Its nvcsw + nivcsw when last charged.
    switches: u64,
    /// The channel's wakeups and the task's voluntary switches before the
    /// current operation.
    woken_before: u64,
    nvcsw_before: u64,
    /// Switches and wakeups charged so far.
    charged_switches: u64,
    charged_wakeups: u64,
}

fn woken(ch: &Channel<u32>) -> u64 {
    let s = ch.stats();
    s.woken_sync + s.woken_plain
}

/// The current task's (nvcsw, nivcsw).
fn own_switches() -> (u64, u64) {
    crate::task::current().switches()
}

impl Charge for ChargeSched {
    type Acct = SchedAcct;
    type Totals = Arc<[AtomicU64; 2]>;
    type Locks = Option<Arc<[PipeMutex]>>;
    fn locks(self, fds: usize) -> Self::Locks {
        self.mutex_outside_ns
            .map(|_| (0..fds).map(|_| PipeMutex::new()).collect())
    }
    fn lock_stats(locks: &Self::Locks) -> PipeMutexStats {
        let mut s = PipeMutexStats::default();
        for m in locks.iter().flat_map(|l| l.iter()) {
            s += m.stats();
        }
        s
    }
    fn send(self, locks: &Self::Locks, k: usize) {
        match (locks, self.mutex_outside_ns) {
            (Some(l), Some(outside_ns)) => {
                // Entry, then the copy-in under the mutex; the wakeup
                // follows the unlock, as in `anon_pipe_write`.
                self.rate.work(u64::from(outside_ns));
                l[k].lock();
                self.rate
                    .work(u64::from(self.send_ns.saturating_sub(outside_ns)));
                l[k].unlock();
            }
            _ if self.send_ns > 0 => self.rate.work(u64::from(self.send_ns)),
            _ => {}
        }
    }
    fn recv(self, locks: &Self::Locks, k: usize) {
        match (locks, self.mutex_outside_ns) {
            (Some(l), Some(outside_ns)) => {
                l[k].lock();
                self.rate
                    .work(u64::from(self.recv_ns.saturating_sub(outside_ns)));
                l[k].unlock();
                self.rate.work(u64::from(outside_ns));
            }
            _ if self.recv_ns > 0 => self.rate.work(u64::from(self.recv_ns)),
            _ => {}
        }
    }
    fn print(self, out: &mut dyn Write) {
        if (self.send_ns, self.recv_ns) != (0, 0) {
            ChargeNs {
                send_ns: self.send_ns,
                recv_ns: self.recv_ns,
                rate: self.rate,
            }
            .print(out);
        }
        let _ = writeln!(
            out,
            "Each context switch of a task is charged {} ns when it runs again and each wakeup {} ns to the waker",
            self.switch_ns, self.wake_ns
        );
        if let Some(outside_ns) = self.mutex_outside_ns {
            let _ = writeln!(
                out,
                "Each pipe copy runs under the pipe's mutex ({outside_ns} ns of each charge outside it)"
            );
        }
    }
    fn totals(self) -> Self::Totals {
        Arc::new([AtomicU64::new(0), AtomicU64::new(0)])
    }
    fn start(self) -> SchedAcct {
        SchedAcct {
            switches: {
                let (v, i) = own_switches();
                v + i
            },
            woken_before: 0,
            nvcsw_before: 0,
            charged_switches: 0,
            charged_wakeups: 0,
        }
    }
    fn op_begin(self, ch: &Channel<u32>, acct: &mut SchedAcct) {
        acct.woken_before = woken(ch);
        acct.nvcsw_before = own_switches().0;
    }
    fn op_end(self, ch: &Channel<u32>, acct: &mut SchedAcct) {
        let (v, i) = own_switches();
        let slept = v.saturating_sub(acct.nvcsw_before);
        let wakeups = woken(ch)
            .saturating_sub(acct.woken_before)
            .saturating_sub(slept);
        let now = v + i;
        let switches = now.saturating_sub(acct.switches);
        acct.switches = now;
        acct.charged_switches += switches;
        acct.charged_wakeups += wakeups;
        let ns = switches * u64::from(self.switch_ns) + wakeups * u64::from(self.wake_ns);
        if ns > 0 {
            self.rate.work(ns);
        }
    }
    fn finish(self, acct: &SchedAcct, totals: &Self::Totals) {
        totals[0].fetch_add(acct.charged_switches, Ordering::Relaxed);
        totals[1].fetch_add(acct.charged_wakeups, Ordering::Relaxed);
    }
    fn charged(totals: &Self::Totals) -> (u64, u64) {
        (
            totals[0].load(Ordering::Relaxed),
            totals[1].load(Ordering::Relaxed),
        )
    }
}

/// How many iterations of [`super::burn`] this CPU runs per second of
/// guest time, measured at a run's start ([`BurnRate::calibrate`]); a
/// charge of `ns` is that many iterations ([`BurnRate::work`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BurnRate {
    pub(crate) iters_per_s: u64,
}

impl BurnRate {
    /// Iterations per calibration trial: about 0.2 ms of guest time
    /// under `-icount shift=2`, below a tick so that most trials see no
    /// interrupt.
    const TRIAL_ITERS: u32 = 5_000;
    /// Trials; the fastest counts.
    const TRIALS: u32 = 16;

    /// Times [`Self::TRIALS`] runs of [`super::burn`] on the guest clock
    /// and keeps the fastest. A trial is slowed, never sped up, by an
    /// interrupt or, under `-icount`, by a lost turn (the clock then also
    /// counts the other vCPUs' instructions), so the fastest is this
    /// CPU's own rate. At a run's start the other CPUs are idle (the
    /// tasks are not spawned yet), so under `-icount` every trial but
    /// one hit by a tick takes the same guest time.
    pub(crate) fn calibrate() -> Self {
        let mut best_ns = u64::MAX;
        for _ in 0..Self::TRIALS {
            let t0_ns = arch::now_ns();
            super::burn(Self::TRIAL_ITERS);
            best_ns = best_ns.min(arch::now_ns().saturating_sub(t0_ns));
        }
        Self {
            iters_per_s: u64::from(Self::TRIAL_ITERS) * 1_000_000_000 / best_ns.max(1),
        }
    }

    /// Busy-works `ns` of this task's CPU time as kernel code (a
    /// syscall's work): [`super::burn`]'s iterations at the calibrated
    /// rate, no clock read, no sleeping, no user-mode mark, preemptible by
    /// an immediate request at an interrupt's exit. It progresses only
    /// while this task runs: a preemption or a lost `-icount` turn in the
    /// middle delays its end by that time, as it delays a Linux syscall's.
    pub(crate) fn work(self, ns: u64) {
        let mut iters = ns.saturating_mul(self.iters_per_s) / 1_000_000_000;
        while iters > 0 {
            let n = iters.min(u64::from(u32::MAX));
            // In range: `n` is at most u32::MAX.
            super::burn(n as u32);
            iters -= n;
        }
    }

    fn print(self, out: &mut dyn Write) {
        let _ = writeln!(
            out,
            "Charges burn {} loop iterations per ms of CPU time (calibrated at the run's start)",
            self.iters_per_s / 1000
        );
    }
}

/// Runs the workload and prints Linux-like result lines.
pub fn run(
    p: Hackbench,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    let (send_ns, recv_ns) = p.syscall_cost_ns();
    if p.sched_cost.is_some() || p.pipe_mutex {
        let (switch_ns, wake_ns) = p.sched_cost_ns();
        let c = ChargeSched {
            send_ns,
            recv_ns,
            switch_ns,
            wake_ns,
            mutex_outside_ns: p.pipe_mutex.then_some(Hackbench::LINUX_NULL_SYSCALL_NS),
            rate: BurnRate::calibrate(),
        };
        return run_roles(p, c, ctl, out);
    }
    match (send_ns, recv_ns) {
        (0, 0) => run_roles(p, NoCharge, ctl, out),
        (send_ns, recv_ns) => {
            let rate = BurnRate::calibrate();
            run_roles(
                p,
                ChargeNs {
                    send_ns,
                    recv_ns,
                    rate,
                },
                ctl,
                out,
            )
        }
    }
}

/// [`run_charged`] with the per-role counters (`-R`) or without.
fn run_roles<C: Charge>(
    p: Hackbench,
    charge: C,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    if p.roles {
        run_charged::<C, true>(p, charge, ctl, out)
    } else {
        run_charged::<C, false>(p, charge, ctl, out)
    }
}

/// One run. `ROLES` (`-R`): the tasks count [`RoleStats`] around each
/// channel operation; without it none of that code is there.
fn run_charged<C: Charge, const ROLES: bool>(
    p: Hackbench,
    charge: C,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    let (groups, fds, loops) = (p.groups as usize, p.fds as usize, p.loops);
    let model = if p.pipe {
        Model::Pipe {
            msg_bytes: p.datasize as usize,
        }
    } else {
        Model::Socket {
            msg_bytes: p.datasize as usize,
        }
    };
    let nthreads = 2 * groups * fds;
    let per_channel = model.ring_bytes::<u32>() + 256;
    super::check_resources(nthreads, groups * fds * per_channel)?;
    let _ = writeln!(
        out,
        "Running in {} mode with {groups} groups using {} file descriptors each (== {nthreads} tasks)",
        if p.threads { "threaded" } else { "process" },
        2 * fds
    );
    let _ = writeln!(
        out,
        "Each sender will pass {loops} messages of {} bytes",
        p.datasize
    );
    charge.print(out);
    if let Some(n) = p.wakee_flips {
        let _ = writeln!(out, "The parent starts with {n} wakee_flips");
    }
    let gate = Arc::new(Semaphore::new(0));
    let last_end = Arc::new(AtomicU64::new(0));
    let received = Arc::new(AtomicU64::new(0));
    let totals = charge.totals();
    let roles = Arc::new(SharedRoles {
        sum: crate::sync::SpinLock::named("hackbench roles", RoleStats::default()),
    });
    // Each group's channels, mutexes and wakeup stamps, made here and
    // shared with the parent thread (Linux's main process makes a group's
    // socketpairs before it forks the group's tasks).
    let mut group_parts = Vec::with_capacity(groups);
    let mut all = Vec::with_capacity(groups * fds);
    let mut all_locks = Vec::with_capacity(groups);
    for _ in 0..groups {
        let pipes: Vec<Arc<Channel<u32>>> = (0..fds)
            .map(|_| Arc::new(Channel::with_model(model)))
            .collect();
        all.extend(pipes.iter().cloned());
        let locks = charge.locks(fds);
        all_locks.push(locks.clone());
        let stamps: Arc<[AtomicU64]> = (0..fds).map(|_| AtomicU64::new(0)).collect();
        group_parts.push((pipes, locks, stamps));
    }
    let outcome = Arc::new(super::ParentReport::new());
    let mut job = Job::new();
    let (parent_out, end0) = (outcome.clone(), last_end.clone());
    let (received0, totals0, roles0) = (received.clone(), totals.clone(), roles.clone());
    // The parent: a fresh thread that spawns every task, starts them and
    // reaps them, as rt-tests' hackbench main process does
    // ([`Job::spawn_parent`]: they start with its wakee_flips, not the
    // shell's).
    job.spawn_parent("hackbench", move |mut job| {
        let (last_end, received, totals, roles) = (end0, received0, totals0, roles0);
        let mut pipes_of_groups = Vec::new();
        let mut failed = None;
        if let Some(n) = p.wakee_flips {
            // `-W`: the history Linux's main process inherits from init,
            // set before the first spawn so that every task copies it.
            let me = sched::TaskId(crate::task::current_idx());
            if let Err(e) = crate::sched::sched().set_wakee_flips(me, n) {
                failed = Some(alloc::format!("-W {n}: {e:?}"));
            }
        }
        for (pipes, locks, stamps) in group_parts {
            if failed.is_some() {
                break;
            }
            let mut receivers = 0;
            for (k, pipe) in pipes.iter().enumerate() {
                let (pipe, locks) = (pipe.clone(), locks.clone());
                let (end, got, totals) = (last_end.clone(), received.clone(), totals.clone());
                let (roles, stamps) = (roles.clone(), stamps.clone());
                let r = job.spawn("hackbench-recv", TaskParams::default(), None, move || {
                    let (mut poisons, mut n) = (0, 0);
                    let mut acct = charge.start();
                    let mut rs = RoleStats::default();
                    let sw0 = if ROLES { own_switches() } else { (0, 0) };
                    while poisons < fds {
                        let mut v0 = 0;
                        if ROLES {
                            if queued(&pipe) == 0 {
                                stamps[k].store(0, Ordering::Relaxed);
                            }
                            v0 = own_switches().0;
                        }
                        charge.op_begin(&pipe, &mut acct);
                        let v = pipe.recv();
                        if ROLES && own_switches().0 != v0 {
                            receiver_woke(&pipe, &stamps[k], &mut rs);
                        }
                        if v != POISON {
                            // read()'s copy-out and exit, after any sleep.
                            charge.recv(&locks, k);
                        }
                        charge.op_end(&pipe, &mut acct);
                        // read() returns to user space (a lazy request is taken).
                        crate::sched::exit_to_user_mode();
                        if v == POISON {
                            poisons += 1;
                        } else {
                            n += 1;
                        }
                    }
                    if ROLES {
                        let sw1 = own_switches();
                        rs.recv_blocked = sw1.0 - sw0.0;
                        rs.recv_preempted = sw1.1 - sw0.1;
                        roles.add(&rs);
                    }
                    charge.finish(&acct, &totals);
                    got.fetch_add(n, Ordering::Relaxed);
                    end.fetch_max(arch::now_ns(), Ordering::Relaxed);
                });
                match r {
                    Ok(_) => receivers += 1,
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if failed.is_some() {
                // No senders for this group: end its receivers with fds poisons
                // each (a full channel only blocks until its receiver drains it).
                for pipe in &pipes[..receivers] {
                    for _ in 0..fds {
                        pipe.send(POISON);
                    }
                }
                break;
            }
            let mut unspawned = 0;
            for _ in 0..fds {
                let (pipes2, locks) = (pipes.clone(), locks.clone());
                let (gate, stop, end) = (gate.clone(), job.stop_flag(), last_end.clone());
                let totals = totals.clone();
                let (roles, stamps) = (roles.clone(), stamps.clone());
                let r = job.spawn("hackbench-send", TaskParams::default(), None, move || {
                    let sw0 = if ROLES { own_switches() } else { (0, 0) };
                    gate.down();
                    let mut acct = charge.start();
                    let mut rs = RoleStats::default();
                    'outer: for i in 0..loops {
                        for (k, pipe) in pipes2.iter().enumerate() {
                            if stop.stopped() {
                                break 'outer;
                            }
                            // write()'s entry and copy-in, before the wakeup.
                            charge.send(&locks, k);
                            charge.op_begin(pipe, &mut acct);
                            if ROLES {
                                stamp_send(&stamps[k]);
                                let (v0, i0) = own_switches();
                                pipe.send(i);
                                let (v1, i1) = own_switches();
                                rs.send_blocked += v1 - v0;
                                rs.send_preempted_in_send += i1 - i0;
                            } else {
                                pipe.send(i);
                            }
                            charge.op_end(pipe, &mut acct);
                            // write() returns to user space.
                            if ROLES {
                                let i2 = own_switches().1;
                                crate::sched::exit_to_user_mode();
                                rs.send_preempted_user_return += own_switches().1 - i2;
                            } else {
                                crate::sched::exit_to_user_mode();
                            }
                        }
                    }
                    for (k, pipe) in pipes2.iter().enumerate() {
                        charge.op_begin(pipe, &mut acct);
                        if ROLES {
                            stamp_send(&stamps[k]);
                        }
                        pipe.send(POISON);
                        charge.op_end(pipe, &mut acct);
                    }
                    if ROLES {
                        let sw1 = own_switches();
                        rs.send_blocked_other = (sw1.0 - sw0.0).saturating_sub(rs.send_blocked);
                        rs.send_preempted_other = (sw1.1 - sw0.1).saturating_sub(
                            rs.send_preempted_in_send + rs.send_preempted_user_return,
                        );
                        roles.add(&rs);
                    }
                    charge.finish(&acct, &totals);
                    end.fetch_max(arch::now_ns(), Ordering::Relaxed);
                });
                if let Err(e) = r {
                    failed.get_or_insert(e);
                    unspawned += 1;
                }
            }
            pipes_of_groups.push((pipes, unspawned));
        }
        parent_out.released();
        for _ in 0..groups * fds {
            gate.up();
        }
        job.spawned();
        if failed.is_some() {
            job.stop();
            // Stand in for the senders that do not exist.
            for (pipes, unspawned) in &pipes_of_groups {
                for _ in 0..*unspawned {
                    for pipe in pipes {
                        pipe.send(POISON);
                    }
                }
            }
        }
        // Reaped as rt-tests' hackbench reaps its children (waitpid); the
        // shell's Ctrl-C reaches them through the shared stop flag.
        job.wait(&mut super::NoInterrupt, 10);
        job.join();
        parent_out.set_error(failed);
    })?;
    let interrupted = job.wait(ctl, 10);
    job.join();
    if let Some(e) = outcome.take_error() {
        return Err(e);
    }
    let t0 = outcome.start_ns();
    let mut channels = ChannelStats::default();
    for c in &all {
        channels += c.stats();
    }
    let (charged_switches, charged_wakeups) = C::charged(&totals);
    let mut pipe_mutex = PipeMutexStats::default();
    for l in &all_locks {
        pipe_mutex += C::lock_stats(l);
    }
    let r = Report {
        ns: last_end.load(Ordering::Relaxed).saturating_sub(t0),
        data_received: received.load(Ordering::Relaxed),
        data_expected: (groups * fds * fds) as u64 * u64::from(loops),
        channels,
        interrupted,
        charged_switches,
        charged_wakeups,
        pipe_mutex,
        roles: *roles.sum.lock(),
    };
    if interrupted {
        let _ = writeln!(out, "hackbench: interrupted");
    }
    let _ = writeln!(
        out,
        "Time: {}.{:03}",
        r.ns / 1_000_000_000,
        r.ns / 1_000_000 % 1000
    );
    let _ = writeln!(
        out,
        "{} {} messages; wakeups: {} sync, {} plain; senders blocked {} times",
        r.data_received,
        if p.pipe { "pipe" } else { "socket" },
        channels.woken_sync,
        channels.woken_plain,
        channels.sender_waits
    );
    if ROLES {
        let ro = &r.roles;
        let _ = writeln!(
            out,
            "roles: senders blocked {} in send, {} elsewhere; preempted {} in send, {} at return to user, {} elsewhere; receivers blocked {}, preempted {}",
            ro.send_blocked,
            ro.send_blocked_other,
            ro.send_preempted_in_send,
            ro.send_preempted_user_return,
            ro.send_preempted_other,
            ro.recv_blocked,
            ro.recv_preempted
        );
        let _ = writeln!(
            out,
            "receiver wakeups: {} ran, {} messages found; on the waker's CPU {} ({} ns total), on another {} ({} ns total)",
            ro.recv_wakeups,
            ro.recv_found,
            ro.wake_same_cpu,
            ro.wake_same_cpu_ns,
            ro.wake_other_cpu,
            ro.wake_other_cpu_ns
        );
        let _ = write!(out, "wakeup-to-run log2 ns:");
        for (b, n) in ro.wake_lat_log2.iter().enumerate() {
            if *n != 0 {
                let _ = write!(out, " {b}:{n}");
            }
        }
        let _ = writeln!(out);
    }
    if p.sched_cost.is_some() || p.pipe_mutex {
        let _ = writeln!(
            out,
            "charged {} context switches and {} wakeups ({} woken)",
            r.charged_switches,
            r.charged_wakeups,
            channels.woken_sync + channels.woken_plain
        );
    }
    if p.pipe_mutex {
        let _ = writeln!(
            out,
            "pipe mutex: {} contended locks, {} sleeps, {} wakeups at unlock; waited {} times for an owner off CPU, {} for a resched request; {} holds switched out",
            r.pipe_mutex.contended,
            r.pipe_mutex.sleeps,
            r.pipe_mutex.wakeups,
            r.pipe_mutex.waits_owner_off_cpu,
            r.pipe_mutex.waits_resched,
            r.pipe_mutex.holds_switched_out
        );
    }
    Ok(r)
}
