//! Workloads: models of the real tools' communication patterns. Each task is a
//! small state machine advanced by [`Workload::step`] when its CPU burst ends.
//! CPU costs per operation are parameters; the defaults say where they come
//! from.
//!
//! A burst that models a program's own computation between syscalls is user
//! code ([`Next::RunUser`], as the kernel's workloads run it in
//! `task::run_in_user_mode`): an interrupt that lands in it returns to user
//! space and takes even a lazy reschedule request. These are schbench's
//! request work, pgbench's client and backend work, the dbench client's
//! compute, and the mix's hogs and sleepers' runs. The others are syscall
//! or kernel-thread costs ([`Next::Run`]): hackbench's per-message
//! `write`/`read` (ours' hackbench marks none either: its threads do nothing
//! but the syscalls), schbench's message thread (futex wakes), the dbench
//! kworkers.
//!
//! # hackbench (rt-tests `hackbench`, mmtests `hackbench-{process,thread}-{pipes,sockets}`)
//! Groups of 20 senders and 20 receivers; each receiver owns one channel
//! (a pipe, or a unix stream socketpair) that all 20 senders of its group
//! write to; each sender writes `loops` messages of 100 bytes to every
//! receiver of its group, round robin; each receiver reads 20 × `loops`.
//! One `write`/`read` syscall per message; its CPU cost is the burst.
//!
//! Wakeups, as Linux 6.x does them (checked against `fs/pipe.c` and
//! `net/unix/af_unix.c` through the code search; a copy of 6.x `pipe_read`
//! reads `if (was_full) wake_up_interruptible_sync_poll(&pipe->wr_wait, ..)`,
//! and `pipe_write` wakes `rd_wait` only `if (was_empty)`):
//! - **pipe write** (`pipe_write`): after copying, `wake_up_interruptible_sync_poll(&pipe->rd_wait)`
//!   (WF_SYNC) only if the pipe was empty before the write (`was_empty`;
//!   hackbench does not poll, so `poll_usage` is 0). A writer finding the pipe
//!   full (16 pages = 64 KiB; 100-byte writes merge into pages, so 40 messages
//!   per page, 640 in all) sleeps on `wr_wait` (exclusive).
//! - **pipe read** (`pipe_read`): a reader that found the pipe full wakes one
//!   writer with `wake_up_interruptible_sync_poll(&pipe->wr_wait)` (WF_SYNC,
//!   exclusive waiters: one at a time); a writer that writes and leaves room
//!   wakes the next writer (`wake_next_writer`), also sync. With the pipe
//!   mutex model, as Linux 7.2's `anon_pipe_read` and `anon_pipe_write`
//!   (`Mechanisms::pipe_pages`, `Mechanisms::pipe_wake_next_writer`): the
//!   pipe is 16 pages (`PipePages`), full when all are in use, a read
//!   wakes a writer only when it empties a page of a full pipe, and a
//!   writer wakes the next only if it slept for room in that write.
//! - **unix stream write** (`unix_stream_sendmsg`): every message calls
//!   `other->sk_data_ready` = `sock_def_readable`, which wakes a sleeping
//!   reader with `wake_up_interruptible_sync_poll` (WF_SYNC). Writers sleep in
//!   `sock_alloc_send_pskb` when the sending socket's `sk_wmem_alloc` reaches
//!   `sk_sndbuf` (212992 B by default; one 100-byte skb costs ~1 KiB of
//!   truesize, so ~208 messages).
//! - **unix stream read**: freeing the skb calls `sk_write_space` =
//!   `unix_write_space`, which wakes *all* writers (non-exclusive wait) with
//!   `wake_up_interruptible_sync_poll` once `unix_writable` holds (wmem at most
//!   a quarter of sndbuf).
//!
//! Costs per message (write + read syscall), from this machine's rt-tests
//! hackbench (`-g 4 -l 1000`, 2 vCPUs; `docs/benchmarks.md`, "Linux on this
//! VM"): pipes 315 ns and sockets 849 ns of wall time per message on 2 CPUs,
//! so ~630 / ~1700 ns of CPU
//! per message, split evenly between the write and the read. Process mode: every
//! task has its own address space (process switch cost); thread mode: one
//! address space. Working set per task: 32 KiB (a guess: stack, a few pipe or
//! skb pages, libc state). Metric: time until every task exited, seconds
//! (lower is better).
//!
//! # schbench (github.com/masoncl/schbench)
//! `m` message threads, each with `t` workers. A worker that finishes a
//! request puts itself on its message thread's list, wakes the message thread
//! (futex wake: no WF_SYNC) and sleeps; the message thread wakes every worker
//! on its list (futex wakes, ~1 µs each of its CPU time) and sleeps. A woken
//! worker records its wakeup latency, sleeps `sleep_us` (the request's usleep)
//! and then does `work_us` of CPU work (the matrix math over a 256 KiB
//! footprint, schbench's `-F` default). Metrics: wakeup-latency and
//! request-latency p50/p90/p99 (µs), RPS.
//!
//! # dbench-like (dbench4 with XFS, as in Mel Gorman's runs)
//! `n` clients each replay a loadfile of `ops` operations: a compute burst
//! (exponential, mean 20 µs), and for half of them an I/O handed to a pool of
//! kernel workers (unbound workqueue: `queue_work` wakes an idle kworker, no
//! WF_SYNC); the client sleeps until the worker completes it (`complete()`,
//! no WF_SYNC). A worker spends 15 µs of CPU per request and for 30% of them
//! waits 100 µs for the device. `dbench-bound` (`bound=1`): one kworker per
//! CPU, pinned, serving the work queued on its CPU (a bound workqueue:
//! `queue_work` uses the local CPU's pool), so the client and the worker
//! share a CPU and every handoff goes through the wakeup-preemption decision.
//! (Added after the first study showed that the unbound model never consults
//! that decision; costs unchanged.) Each CPU's pool is concurrency-managed,
//! as Linux's per-CPU worker pools are (`kernel/workqueue.c`): it keeps
//! [`KWORKERS_PER_CPU`] workers, idle ones asleep; an item queued while
//! none of the pool's workers runs wakes an idle one (`kick_pool`); a
//! worker that sleeps inside an item (the device wait) stops counting as
//! running, and if items wait an idle worker is woken to take them
//! (`wq_worker_sleeping`); a worker done with an item takes the next only
//! while no other worker of the pool runs (`keep_working`), else it goes
//! idle. XFS's completion work on a bound queue sleeps in the work
//! function (`xfs_end_io` on `xfs-conv` runs a transaction that waits for
//! log space, inode locks and metadata reads), and the device's own
//! completion comes by interrupt (`xfs_end_bio` queues the item), so no
//! queued item waits for a device behind a sleeping one. `--no-wq-concurrency`
//! (`Mechanisms::wq_concurrency`): one worker per CPU that sleeps through
//! its item's device wait with the queue behind it (the model until
//! 2026-12-05; `docs/results/study.md`, the dbench rows at 141 and 160
//! clients).
//!
//! A client replays its loadfile again as soon as it has finished it, as
//! dbench does until its time limit (`-t`; mmtests' `dbench-bench` runs it
//! so, with `--warmup 0`), and the run ends when every client has finished
//! its first loadfile: every client runs from the start to the end of the
//! run. dbench's throughput is the bytes of all clients over the time
//! elapsed, printed each second while every client still runs
//! (`sig_alarm` in dbench's `dbench.c`); it never covers a drain in which
//! some clients are done and the others finish on an emptier machine. (Until
//! 2026-12-05 each client here ran its loadfile once and exited, and the
//! throughput was every client's operations over the last one's finish:
//! that counted the drain, so a configuration that spread the clients'
//! progress more lost throughput without running any slower while all
//! clients ran; `docs/results/study.md`, the dbench rows at 141 and 160
//! clients.) Metrics: throughput (64 KiB per operation completed by any
//! client up to the end, over the end's time; "MB/s", higher is better),
//! the mean execution time of the clients' first loadfile (ms) and the
//! all-clients time, the last of those (ms), which ends the run.
//!
//! # pgbench-like (pts/pgbench, Scale 1)
//! `n` client/backend pairs over unix sockets: the client spends 4 µs, sends
//! a query (`sock_def_readable`: WF_SYNC wake of the backend) and sleeps; the
//! backend spends 8 µs (read-only) or 60 µs plus a 900 µs commit wait
//! (read-write; the 1-client read-write latency in Ryan Roberts' Graviton3
//! pgbench rows is ~1 ms, `docs/references.md`) and replies (WF_SYNC
//! wake of the client). Metrics: TPS (higher is better) and mean latency (ms).
//!
//! Read-write runs PostgreSQL's row locks (`Mechanisms::row_lock`; checked
//! against PostgreSQL's source through the code search). The transaction is
//! pgbench's built-in `tpcb-like` script (`builtin_script` in
//! `src/bin/pgbench/pgbench.c`): BEGIN; UPDATE pgbench_accounts (a random
//! `aid` of 100 000 × scale); SELECT abalance; UPDATE pgbench_tellers (a
//! random `tid` of 10 × scale); UPDATE pgbench_branches (a `bid` of 1 ×
//! scale); INSERT INTO pgbench_history; END. With pgbench's default simple
//! protocol each statement is one round trip: the client sends it and
//! sleeps, the backend runs it and replies, as above. An UPDATE of a row
//! that another running transaction updated waits in `heap_update`
//! (`src/backend/access/heap/heapam.c`): `heap_acquire_tuplock` takes the
//! tuple's heavyweight lock (queued, granted in queue order by
//! `ProcLockWakeup` in `src/backend/storage/lmgr/proc.c`; the waiter
//! sleeps in `ProcSleep`), then `XactLockTableWait`
//! (`src/backend/storage/lmgr/lmgr.c`) sleeps on the holder's transaction
//! id until that transaction ends; woken, it updates the row (holding it
//! from then to its own end) and releases the tuple lock, which wakes the
//! next queued waiter to wait on it in turn. The transaction's locks go at
//! its end, after its commit record's WAL flush (`CommitTransaction` in
//! `src/backend/access/transam/xact.c`: `RecordTransactionCommit`, then the
//! lock release). Here that is one sleeping lock per row with FIFO waiters
//! and handoff ([`RowLocks`]): an UPDATE takes its row's lock before its
//! work, or queues and sleeps; the commit (END: its work, then the 900 µs
//! flush) releases the account's, the teller's and the branch's locks and
//! each goes to its first waiter, which is woken (a latch set by signal:
//! no WF_SYNC) owning it and runs its statement, then the client gets its
//! reply. A holder preempted, or runnable and waiting for a CPU, keeps its
//! locks. At scale 1 the one branch row serialises every transaction from
//! its branches UPDATE to its commit's end, a teller row (10) is held
//! across that wait, and an account row (100 000) is rarely met (modelled
//! as the others: it costs one lock slot per row and no time). The costs
//! are the model's: 60 µs of backend work and 4 µs of client work a
//! transaction split evenly over the seven statements (8.571 µs and
//! 0.571 µs each, ±10%; a split, not a measurement), the 900 µs flush at
//! END. Left out: the tuple lock's and the transaction-id lock's being two
//! locks (one FIFO lock here), EvalPlanQual's re-check after the wait, the
//! lock manager's and the WAL's own locks (`WALWriteLock`; concurrent
//! commits flush in parallel here, as before), group commit, deadlock
//! checks (the order accounts, tellers, branches leaves none). `--no-row-lock`:
//! the model before, one round trip of 60 µs a transaction and no lock.
//!
//! # lcbench's pgbench (`lcpgbench`)
//! The client/server pair of `scripts/linux-compare/lcbench.c`'s `pgbench`,
//! which `make linux-compare` runs in Linux 7 and in our kernel: `clients`
//! threads of one process, each with a backend thread over a unix stream
//! socketpair, `tx` transactions each. A transaction is seven statements
//! (`rw=1`) or one (`rw=0`, lcbench's `-S`), each a round trip of one
//! 128-byte message each way: the client `write`s and `read`s; the backend
//! `read`s, works (user code: 20 µs, BEGIN's and END's 4 µs; `-S`'s one
//! statement 20 µs), after END's work sleeps 200 µs (`nanosleep`), and
//! `write`s the reply. The program's constants are lcbench's. The
//! syscalls' costs are the machine's measured unix socket `write` and
//! `read` ([`Costs::sock_write_ns`](crate::machine::Costs)), the `read`'s
//! entry [`Costs::syscall_ns`](crate::machine::Costs) before it decides.
//! Wakeups as Linux's `net/unix/af_unix.c` and `net/core/sock.c` make them:
//! a `write` wakes the peer if it sleeps in its `read`
//! (`sock_def_readable`, WF_SYNC), and so does a `read` that consumes a
//! message: the message's memory is charged to the sender's socket, its
//! free (`sock_wfree`) calls the sender's `sk_write_space`
//! (`unix_write_space`: `wake_up_interruptible_sync_poll` on the socket's
//! wait queue, where the sender sleeps in its own `read`), which finds no
//! message and sleeps again (`space_wakeups` counts them; `space_wake=0`
//! leaves them out). Metrics: TPS,
//! every transaction over the time the last client finished its last one
//! (lcbench's `tps`), and the mean transaction latency; the run ends when
//! every thread has exited (each client sends its backend a last message
//! that ends it, as lcbench's).
//!
//! # lcbench's schbench (`lcschbench`)
//! The message/worker shape of `scripts/linux-compare/lcbench.c`'s
//! `schbench`, as `make linux-compare` runs it in Linux 7 and in our
//! kernel, one step per syscall as the program makes them (the study's
//! `schbench` wakes a message thread's whole list in one step and charges
//! the wakeups after it). `m` message threads with `t` workers each, all
//! threads of one process. A worker appends itself to its message thread's
//! list and posts the message thread's semaphore, then waits on its own;
//! when that is posted it records its wakeup latency, sleeps `sleep_us`
//! (`nanosleep`) and walks its buffer (`work_us` of user code: the walk's
//! measured cost), and starts over. The message thread waits on its
//! semaphore, takes the list, and posts each listed worker's semaphore in
//! turn, stamping the worker's post time first. A semaphore is lcbench's
//! futex pair: a post stores 1 and always makes a `FUTEX_WAKE` syscall
//! (entry [`Costs::syscall_ns`](crate::machine::Costs), then the wakeup of
//! a sleeper, not WF_SYNC, which the waker pays as any wakeup); a wait takes
//! a posted value with no syscall, else enters `FUTEX_WAIT` (the same
//! entry), which sleeps unless the value was posted meanwhile. Latency is
//! lcbench's: from the post's stamp (before its syscall) to the worker's
//! return from its wait; the request, from there to the walk's end. The
//! list's mutex, the clock reads and `sched_getcpu` are user code of no
//! cost here (not measured). Metrics: wakeup and request p50/p90/p99 and
//! requests a second, over the whole run (lcbench has no warm-up), and
//! lcbench's counters: the latencies by where the worker was when posted
//! (`wk_awake`: not asleep yet; `wk_same`: asleep, then run on the CPU
//! that posted; `wk_other`: on another; count and sum), the posts that
//! woke a sleeper each way, the message threads' rounds and those that
//! slept first, and of those the latency from the stamp of the post that
//! set the semaphore to the return from the wait (`msg_wake_sum_us`) and
//! how many ran on the posting CPU (`msg_same`); and where the scheduler
//! placed the message threads' wakeups (`msg_wa_*`, `msg_sis_*`,
//! `msg_placed_local`: `compare`'s placement rows for them alone).
//!
//! # Warm-up (pgbench and schbench, `warmup_ns`)
//! A run can leave its start out of the measurement, as the real tools'
//! harnesses do: mmtests' `pgbench-bench` (since its rework 737901ce,
//! 2026-04-15) runs pgbench for a warm-up plus the measured time (`-T
//! $((WARM_TIME+MAX_TIME))`, at least 60 s of warm-up) and its report skips
//! the first per-second samples; before that it ran a separate warm-up
//! pgbench first. The Phoronix Test Suite's `pts/pgbench` counts a whole
//! `-T 120` run but its connection set-up; schbench's `-w` resets its
//! statistics after the warm-up. Transactions and requests
//! that complete before `warmup_ns`, and the wakeup latencies recorded
//! before the first step at or after it, are not counted, and the rates
//! are over the time from `warmup_ns` to the end. It changes what is
//! counted, not what runs: the configuration's `Debug` (which seeds the
//! boot, [`crate::WorkSpec::boot`]) leaves it out, so a run with a warm-up
//! is the same run as one without, counted differently. 0 (the default):
//! everything from the start counts, as before.
//!
//! # cyclictest and mixes
//! `cyclictest`: threads sleeping on a periodic absolute timer; latency =
//! the end of the switch to the thread minus the timer's expiry (schbench's
//! wakeup latency likewise runs from the wake to the end of the switch). `mix`: hogs and sleepers as the
//! old fixed-step simulator had (`hog[:NICE]`, `sleeper:RUN_US:SLEEP_US[:NICE]`).

use sched::TaskParams;

use crate::engine::{Kernel, Metric, Next, Planned, Spawn, Speed, Workload, NOT_ON_CPU_NS};
use crate::rng::{Jitter, Rng};
use stats::percentile;

// ---------------------------------------------------------------- hackbench

/// hackbench parameters.
#[derive(Clone, Copy)]
pub struct HackbenchCfg {
    /// Groups of 20 + 20 tasks.
    pub groups: usize,
    /// Messages per sender per receiver.
    pub loops: usize,
    /// Unix stream sockets (else pipes).
    pub sockets: bool,
    /// Threads (else processes).
    pub threads: bool,
    /// The `wakee_flips` every task starts with (`flips=N`): its parent's at
    /// the fork, which Linux's fork copies (`dup_task_struct`; `__sched_fork`
    /// leaves them) and which `wake_wide()` reads at the task's wakeups. 0,
    /// the default, is a parent that woke nobody. rt-tests' hackbench main
    /// process had a median of 6 at its first fork in Linux 7.2 on the QEMU
    /// machine (docs/results/linux/smt.md, measured before any run used it);
    /// the kernel's `hackbench -W` is the same input.
    pub flips: u32,
}

/// `HackbenchCfg { groups: .., loops: .., sockets: .., threads: .. }`, with
/// `flips` only when it is set: the string seeds a run's machine noise
/// ([`crate::WorkSpec::boot`]), so a configuration without flips keeps the
/// runs it had before the field existed.
impl std::fmt::Debug for HackbenchCfg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("HackbenchCfg");
        d.field("groups", &self.groups)
            .field("loops", &self.loops)
            .field("sockets", &self.sockets)
            .field("threads", &self.threads);
        if self.flips != 0 {
            d.field("flips", &self.flips);
        }
        d.finish()
    }
}

const FDS: usize = 20;

/// A channel's counts, read and written at every message: kept apart from
/// its wait queues ([`ChanWaits`]) so that the 16-byte records of all
/// channels stay in the CPU's cache.
#[derive(Clone, Copy, Debug, Default)]
struct Chan {
    queued: u32,
    reserved: u32,
    /// Batching: the writes started and the reads started in the steps
    /// planned and not yet taken ([`Workload::plan`]).
    pend_starts: u16,
    pend_reads: u16,
    /// Writers asleep on it (the length of [`ChanWaits::writers`]).
    nr_writers: u16,
    reader_waiting: bool,
}

/// A channel's reader and the tasks asleep on it.
#[derive(Clone, Debug, Default)]
struct ChanWaits {
    reader: u32,
    writers: std::collections::VecDeque<u32>,
    /// The pipe mutex (`pipe->mutex`) with the pipe mutex model: its owner
    /// ([`NO_OWNER`]: free) and its wait list, in order (with
    /// `Mechanisms::mutex_handoff` the first stays on it, asleep or woken,
    /// until it holds the mutex).
    owner: u32,
    lock_waiters: std::collections::VecDeque<u32>,
    /// `MUTEX_FLAG_HANDOFF` (`Mechanisms::mutex_handoff`): the first
    /// waiter, woken, found the mutex taken; the next unlock gives it the
    /// mutex.
    handoff: bool,
    /// Tasks woken by an unlock that have not yet taken the mutex or slept
    /// on it again ([`Hackbench::lock_woken_max`]).
    woken: u32,
    /// Its pages (`Mechanisms::pipe_pages`, with the pipe mutex model).
    pages: PipePages,
}

/// A pipe's ring of buffers (`pipe->bufs`): [`PIPE_SLOTS`] of them
/// (`PIPE_DEF_BUFFERS`; `pipe->max_usage`), each one page.
const PIPE_SLOTS: usize = 16;

/// hackbench's 100-byte messages a page takes: `anon_pipe_write` merges a
/// write into the last page while `offset + chars <= PAGE_SIZE`, so 40 of
/// them (4 000 of 4 096 bytes); the pipe then holds 16 x 40 = 640, the
/// capacity of the model without pages.
const MSGS_PER_PAGE: u8 = 40;

/// A pipe's buffers in use, as Linux 7.2's `fs/pipe.c` fills and empties
/// them with hackbench's messages (`Mechanisms::pipe_pages`).
/// `anon_pipe_write` merges its message into the last page if the pipe was
/// not empty when it started and the page has room, and only before it
/// first sleeps for room (the merge precedes its loop); otherwise it takes
/// a new slot if the pipe is not full (`pipe_full`: all
/// [`PIPE_SLOTS`] in use, whatever their bytes), and sleeps on `wr_wait`
/// if it is. `anon_pipe_read` frees a slot when it has read its page's
/// last message (`!buf->len`, `pipe_update_tail`), and only then wakes a
/// writer, if the pipe was full (`wake_writer |= pipe_full(..)`).
#[derive(Clone, Copy, Debug, Default)]
struct PipePages {
    /// Messages written into each slot, a ring from `tail`.
    written: [u8; PIPE_SLOTS],
    /// The oldest slot in use.
    tail: u8,
    /// Slots in use (`head - tail`).
    used: u8,
    /// Messages read from the oldest slot's page.
    read: u8,
}

impl PipePages {
    /// The slot of the last page (`head - 1`), if any is in use.
    fn last(&self) -> usize {
        (self.tail as usize + self.used as usize + PIPE_SLOTS - 1) % PIPE_SLOTS
    }

    /// `pipe_is_full`: every slot in use.
    fn is_full(&self) -> bool {
        self.used as usize == PIPE_SLOTS
    }

    /// Whether a write finds room: in the last page if `merge` (no sleep
    /// in this write yet) and the pipe is not empty, else in a new slot.
    fn has_room(&self, merge: bool) -> bool {
        self.merges(merge) || !self.is_full()
    }

    /// Whether a write merges into the last page: `merge` (no sleep in
    /// this write yet), the pipe not empty and that page not full.
    fn merges(&self, merge: bool) -> bool {
        merge && self.used > 0 && self.written[self.last()] < MSGS_PER_PAGE
    }

    /// A write of one message, which [`PipePages::has_room`].
    fn write(&mut self, merge: bool) {
        if self.merges(merge) {
            let last = self.last();
            self.written[last] += 1;
        } else {
            debug_assert!(!self.is_full());
            self.used += 1;
            let last = self.last();
            self.written[last] = 1;
        }
    }

    /// A read of one message (the pipe is not empty): true if it emptied
    /// a page of a full pipe, whose read then wakes a writer.
    fn read(&mut self) -> bool {
        debug_assert!(self.used > 0);
        self.read += 1;
        if self.read < self.written[self.tail as usize] {
            return false;
        }
        let was_full = self.is_full();
        self.tail = ((self.tail as usize + 1) % PIPE_SLOTS) as u8;
        self.used -= 1;
        self.read = 0;
        was_full
    }

    /// Messages held.
    fn messages(&self) -> u32 {
        (0..self.used as usize)
            .map(|i| u32::from(self.written[(self.tail as usize + i) % PIPE_SLOTS]))
            .sum::<u32>()
            - u32::from(self.read)
    }
}

#[cfg(test)]
mod pipe_pages_tests {
    use super::*;

    /// 16 pages of 40 merged messages fill the pipe; the read that
    /// empties the first page of the full pipe, and no read before it,
    /// wakes a writer; the freed slot takes one new page.
    #[test]
    fn a_full_pipe_wakes_a_writer_when_a_page_is_emptied() {
        let mut p = PipePages::default();
        for _ in 0..PIPE_SLOTS * MSGS_PER_PAGE as usize {
            assert!(p.has_room(true));
            p.write(true);
        }
        assert_eq!((p.used as usize, p.messages()), (PIPE_SLOTS, 640));
        assert!(p.is_full() && !p.has_room(true) && !p.has_room(false));
        for _ in 1..MSGS_PER_PAGE {
            assert!(!p.read(), "no wake before the page is empty");
        }
        assert!(p.read(), "the page emptied wakes a writer");
        assert!(!p.is_full() && p.has_room(false));
        p.write(false);
        // Full again: only a merge into the new page finds room.
        assert!(p.is_full() && p.has_room(true) && !p.has_room(false));
        // The next page's reads: a wake at its end again, the pipe full.
        assert!((1..MSGS_PER_PAGE).all(|_| !p.read()) && p.read());
        // Not full when its page empties: no wake.
        let mut q = PipePages::default();
        q.write(true);
        assert!(!q.read() && q.used == 0);
    }

    /// A write merges into the last page only if it may (no sleep in
    /// this write yet) and the pipe is not empty: after a sleep, or on an
    /// empty pipe, it takes a new slot.
    #[test]
    fn a_writer_that_slept_takes_a_new_page() {
        let mut p = PipePages::default();
        p.write(true);
        p.write(true);
        assert_eq!((p.used, p.written[0]), (1, 2));
        p.write(false);
        assert_eq!((p.used, p.written[1]), (2, 1));
        // Emptied, then written: a new page, in the next slot.
        assert!(!p.read() && !p.read() && !p.read());
        assert_eq!((p.used, p.messages()), (0, 0));
        p.write(true);
        assert_eq!((p.used, p.tail, p.written[2]), (1, 2, 1));
        // 15 more pages of one message each (writers that slept) fill it
        // with 16 messages.
        for _ in 1..PIPE_SLOTS {
            p.write(false);
        }
        assert!(p.is_full() && p.messages() == 16 && p.has_room(true) && !p.has_room(false));
    }
}

/// The reader of channel `c` (tasks are spawned a group at a time, its
/// [`FDS`] receivers first, each owning the channel of its place).
#[inline(always)]
fn reader_of(c: u32) -> u32 {
    c + c / FDS as u32 * FDS as u32
}

/// The channel after `i` in a sender's round (`i` < [`FDS`]; the test
/// as `>=` lets the compiler see the result in bounds).
#[inline(always)]
fn next_chan(i: usize) -> usize {
    if i + 1 >= FDS {
        0
    } else {
        i + 1
    }
}

/// Applies `f(channel, k)` to the `count` channels after `i` in a
/// sender's round (wrapping in its group), a channel that comes `k` times
/// in them once with `k`: each of the [`FDS`] channels `count / FDS`
/// times, then the `count % FDS` after `i` once more. Returns the index
/// of the last of them (`(i + count) % FDS`). The same counts as `count`
/// single steps round the group, in at most `2 FDS` of them.
#[inline(always)]
fn round(grp: &mut [Chan; FDS], i: usize, count: u32, mut f: impl FnMut(&mut Chan, u32)) -> usize {
    let (full, rest) = (count / FDS as u32, count % FDS as u32);
    if full > 0 {
        for ch in grp.iter_mut() {
            f(ch, full);
        }
    }
    // The rest as one or two runs of the array (no wrap test per step).
    let (start, end) = (i + 1, i + 1 + rest as usize);
    if end <= FDS {
        for ch in &mut grp[start..end] {
            f(ch, 1);
        }
    } else {
        for ch in &mut grp[start..] {
            f(ch, 1);
        }
        for ch in &mut grp[..end - FDS] {
            f(ch, 1);
        }
    }
    if end > FDS {
        end - 1 - FDS
    } else {
        end - 1
    }
}

/// Batching: the steps of cost `j` that fit from `t` on, at most `max`,
/// each drawn from `rng` and taking its draw's time at `speed`, while the
/// step after each is before `stop_ns`; how many, with `t` (the time of
/// the step after them) and `last` (of the last of them) moved on, `rng`
/// past their draws.
#[inline(always)]
fn fit_steps(
    rng: &mut Rng,
    j: Jitter,
    speed: Speed,
    max: u32,
    stop_ns: u64,
    t: &mut u64,
    last: &mut u64,
) -> u32 {
    #[inline(always)]
    fn fit(
        rng: &mut Rng,
        j: Jitter,
        time: impl Fn(u64) -> u64,
        max: u32,
        stop_ns: u64,
        t: &mut u64,
        last: &mut u64,
    ) -> u32 {
        let (mut n, mut tt, mut lt) = (0, *t, *last);
        // Steps sure to fit whatever they draw, each at most the time of
        // the highest draw (the time grows with the work): four at a time
        // while four such fit, drawn without the test (the last of them
        // at `tt` less its draw's time). Then the rest one at a time,
        // each tested.
        let high = time(j.high());
        if j.draws() {
            while n + 4 <= max && tt + 4 * high < stop_ns {
                let mut d = 0;
                for _ in 0..4 {
                    d = time(rng.peek_drawn(j));
                    rng.skip_drawn();
                    tt += d;
                }
                (n, lt) = (n + 4, tt - d);
            }
        }
        while n < max {
            let next = tt + time(rng.peek_jittered(j));
            if next >= stop_ns {
                break;
            }
            rng.skip_jittered(j);
            (lt, tt) = (tt, next);
            n += 1;
        }
        (*t, *last) = (tt, lt);
        n
    }
    if speed.is_full() {
        fit(rng, j, |w| w, max, stop_ns, t, last)
    } else if let Some(b) = speed.bounded(j.high()) {
        fit(rng, j, |w| b.time_ns(w), max, stop_ns, t, last)
    } else {
        fit(rng, j, |w| speed.time_ns(w), max, stop_ns, t, last)
    }
}

/// What [`Hackbench::room_of`] works a channel's band out from, as
/// values (a plan's loop keeps them in registers).
#[derive(Clone, Copy, Debug)]
struct Band {
    /// The channel's capacity less one.
    cap_1: u32,
    /// The shortest read, ns.
    read_low: u64,
    /// [`FDS`] shortest writes, ns.
    writes_low: u64,
    /// The group's writers on a CPU now ([`Kernel::on_cpu_in_class`]),
    /// `w`, as the reciprocal the writers' side multiplies by
    /// ([`Band::per_writer`]); with none, `w` is 1, and `cap_1` and
    /// `writes_low` are such that the writers' side is no bound
    /// ([`Hackbench::band`]).
    recip_w: u64,
    /// Unix sockets: a read wakes the writers asleep on the channel once
    /// at most a quarter of it is in use, which a write's reservation
    /// changes ([`Band::started_in`]).
    sockets: bool,
}

impl Band {
    /// [`Hackbench::room_of`].
    #[inline(always)]
    fn room_of(self, ch: &Chan, lim: u64, reader_in: u64) -> u64 {
        self.done_in(ch, lim.min(self.room_writers(ch)), reader_in)
    }

    /// The band a write only started in a batch needs (`lim` bounded by
    /// it): the writers' side ([`Band::room_writers`]: its start finds
    /// room, and its reservation, counted at the batch's event, changes
    /// no other task's decision before it), and on a socket nobody asleep
    /// on it (a read that leaves a quarter of it in use with the
    /// reservation, not without, would wake them).
    #[inline(always)]
    fn started_in(self, ch: &Chan, lim: u64) -> u64 {
        if self.sockets && ch.nr_writers > 0 {
            return 0;
        }
        lim.min(self.room_writers(ch))
    }

    /// The side of [`Hackbench::room_of`] that a write finished in a batch
    /// needs (`lim` bounded by it): nobody asleep on the channel (the
    /// write would wake them), and its reader sure to find a message
    /// until the batch's event. A write only started in a batch needs
    /// [`Band::started_in`] alone: the step that finishes it, the batch's
    /// event, is taken as an event of its own.
    #[inline(always)]
    fn done_in(self, ch: &Chan, lim: u64, reader_in: u64) -> u64 {
        if ch.nr_writers > 0 || ch.reader_waiting {
            return 0;
        }
        if reader_in >= NOT_ON_CPU_NS {
            // A reader off its CPU: no bound ([`Hackbench::room_of`]).
            return lim;
        }
        // Its first step that can find the channel empty: after the `b`
        // messages its planned reads leave ([`Hackbench::room_of`]).
        let b = ch.queued.saturating_sub(ch.pend_reads as u32) as u64;
        lim.min(b * self.read_low + reader_in)
    }

    /// The writers' side of [`Hackbench::room_of`]: `a / w * FDS` shortest writes for
    /// `a` messages of room and `w` writers on a CPU, as `a / w` times
    /// [`FDS`] of them; no bound (at least [`NOT_ON_CPU_NS`]) with none
    /// on a CPU ([`Hackbench::band`]).
    #[inline(always)]
    fn room_writers(self, ch: &Chan) -> u64 {
        self.writers_side(self.room(ch))
    }

    /// The messages channel `ch` has room for beyond those under way and
    /// planned, less one (what the writers' side is worked out from).
    #[inline(always)]
    fn room(self, ch: &Chan) -> u32 {
        self.cap_1
            .saturating_sub(ch.queued + ch.reserved + ch.pend_starts as u32)
    }

    /// The writers' side for a room of `a` messages ([`Band::room`]).
    #[inline(always)]
    fn writers_side(self, a: u32) -> u64 {
        Band::per_writer(a, self.recip_w) * self.writes_low
    }

    /// `ceil(2^32 / w)`, the reciprocal [`Band::per_writer`] divides by
    /// `w` (> 0) with: worked out once per band, not a division per
    /// channel.
    #[inline(always)]
    const fn recip(w: u32) -> u64 {
        (1u64 << 32).div_ceil(w as u64)
    }

    /// `a / w` for the reciprocal `r` of `w` ([`Band::recip`]): exact for
    /// every `a < 2^32 / w`. With `r = ceil(2^32 / w)`, `e = r w - 2^32`
    /// is below `w`, and `a r / 2^32 = a / w + a e / (w 2^32)`; the
    /// fraction of `a / w` is at most `(w - 1) / w`, so the floor is
    /// `a / w` while `a e < 2^32`, which `a < 2^32 / w` gives. A band's
    /// room is at most its `cap_1`: 2^31 with `w` = 1 (then `e` = 0, exact
    /// for any `a`), below a channel's capacity (< 2^16) otherwise, with
    /// `w` at most the group's [`FDS`] writers (a test checks each such
    /// pair). A division (`div`) per channel took some 2% of the plan's
    /// time for a single instruction.
    #[inline(always)]
    fn per_writer(a: u32, r: u64) -> u64 {
        (a as u64 * r) >> 32
    }
}

/// [`Band::recip`] of 1 to [`FDS`] writers (index 0 unused): a band is
/// made at every plan and at every switch's check, each with a 64-bit
/// division without the table.
const RECIP_W: [u64; FDS + 1] = {
    let mut t = [0; FDS + 1];
    let mut w = 1;
    while w <= FDS {
        t[w] = Band::recip(w as u32);
        w += 1;
    }
    t
};

#[cfg(test)]
mod band_tests {
    use super::*;

    /// The reciprocal's quotient is the division's for every room a band
    /// can have: a capacity below 2^16 with 1 to [`FDS`] writers, and the
    /// no-writer band's room (below 2^31 + 1) with its one.
    #[test]
    fn per_writer_is_the_division() {
        for w in 1..=FDS as u32 {
            let r = Band::recip(w);
            for a in 0..1u32 << 16 {
                assert_eq!(Band::per_writer(a, r), (a / w) as u64, "{a} / {w}");
            }
        }
        for (w, &r) in RECIP_W.iter().enumerate().skip(1) {
            assert_eq!(r, Band::recip(w as u32));
        }
        let r = Band::recip(1);
        assert_eq!(r, 1 << 32);
        for a in [0, 1, 639, 1 << 20, (1 << 31) - 1, 1 << 31, u32::MAX] {
            assert_eq!(Band::per_writer(a, r), a as u64);
        }
    }
}

/// Batching, a sender's plan ([`Workload::plan`]): from step 1 on, step
/// `j` finishes the write to channel `i0 + j - 1` (wrapping in `grp`) and
/// starts one to channel `i0 + j`, planned while the step after it is
/// before `t0 + lim`, `lim` lowered by the writers' side of the band of
/// the channel it starts and the whole band of those it finishes
/// ([`Band::done_in`]; `reader_in(i)`: when channel `i`'s reader steps
/// next), at most up to
/// step `with_chans - 1`; each step takes its draw's `time`. Returns the
/// first step not planned, with `lim`, `t` (its time) and `last` (the
/// time of the step before it) moved on, `rng` past the planned draws.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn sender_steps(
    band: Band,
    grp: &mut [Chan; FDS],
    reader_in: impl Fn(usize) -> u64,
    rng: &mut Rng,
    wj: Jitter,
    speed: Speed,
    i0: usize,
    with_chans: u32,
    t0: u64,
    lim: &mut u64,
    t: &mut u64,
    last: &mut u64,
) -> u32 {
    // The loop compiled once at full speed (no conversion of the draws),
    // once for a slower CPU with the conversion's bound checked once
    // (`Speed::bounded`, the case of every CPU under machine noise)
    // and once for the rest, each with and without draws (`DRAWS`: the
    // test of the cost's range made once); its values in locals
    // (registers).
    #[inline(always)]
    fn walk<const DRAWS: bool>(
        band: Band,
        grp: &mut [Chan; FDS],
        reader_in: impl Fn(usize) -> u64,
        rng: &mut Rng,
        wj: Jitter,
        time: impl Fn(u64) -> u64,
        (i0, with_chans, t0): (usize, u32, u64),
        (lim, t, last): (&mut u64, &mut u64, &mut u64),
    ) -> u32 {
        let (mut j, mut i) = (1, i0);
        let (mut l, mut tt, mut lt) = (*lim, *t, *last);
        while j < with_chans {
            i = next_chan(i);
            // Step `j` starts the write to channel `i`: that side of its
            // band ([`Band::started_in`]) bounds the batch's event (`next` if it is the
            // last step planned); the step after it, which finishes the
            // write, is the batch's event or planned too, and then the
            // whole band bounds what follows ([`Band::done_in`]).
            let ws = band.started_in(&grp[i], l);
            let w = if DRAWS { rng.peek_drawn(wj) } else { wj.low() };
            let next = tt + time(w);
            if next - t0 >= ws {
                break;
            }
            if DRAWS {
                rng.skip_drawn();
            }
            (lt, tt) = (tt, next);
            l = band.done_in(&grp[i], ws, reader_in(i));
            // Its write to channel `i` planned (after its band is read:
            // each channel comes once in the walk).
            grp[i].pend_starts += 1;
            j += 1;
        }
        (*lim, *t, *last) = (l, tt, lt);
        j
    }
    let at = (i0, with_chans, t0);
    let out = (lim, t, last);
    match (speed.is_full(), wj.draws()) {
        (true, true) => walk::<true>(band, grp, reader_in, rng, wj, |w| w, at, out),
        (true, false) => walk::<false>(band, grp, reader_in, rng, wj, |w| w, at, out),
        (false, draws) => {
            if let Some(b) = speed.bounded(wj.high()) {
                let time = |w| b.time_ns(w);
                if draws {
                    walk::<true>(band, grp, reader_in, rng, wj, time, at, out)
                } else {
                    walk::<false>(band, grp, reader_in, rng, wj, time, at, out)
                }
            } else {
                let time = |w| speed.time_ns(w);
                if draws {
                    walk::<true>(band, grp, reader_in, rng, wj, time, at, out)
                } else {
                    walk::<false>(band, grp, reader_in, rng, wj, time, at, out)
                }
            }
        }
    }
}

/// A free pipe mutex.
const NO_OWNER: u32 = u32::MAX;

/// A mutex waiter whose owner runs spins (Linux's optimistic spinning,
/// `mutex_optimistic_spin`) and looks again after this long: the model's
/// resolution, not a cost (the spinning CPU is busy either way).
const SPIN_POLL_NS: u64 = 200;

#[derive(Clone, Copy, Debug)]
enum Role {
    Sender {
        g: u32,
        sent: u32,
        pending: Option<u32>,
    },
    Receiver {
        ch: u32,
        left: u32,
        pending: bool,
        was_full: bool,
    },
}

/// A task's planned steps (batching): how many, and its random stream
/// when they were planned.
#[derive(Clone, Debug)]
struct Plan {
    n: u32,
    rng: Rng,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            n: 0,
            rng: Rng::new(0),
        }
    }
}

/// A task's role and its plan (batching), in one cache line: a batch's
/// event takes the plan and makes the next one, reading both.
#[derive(Clone, Debug)]
#[repr(align(64))]
struct HbTask {
    role: Role,
    plan: Plan,
}

impl HbTask {
    fn new(role: Role) -> Self {
        HbTask {
            role,
            plan: Plan::default(),
        }
    }
}

/// The hackbench model (see the module docs).
#[derive(Debug)]
pub struct Hackbench {
    cfg: HackbenchCfg,
    chans: Vec<Chan>,
    waits: Vec<ChanWaits>,
    /// Messages a channel holds (pipe pages or socket send buffer).
    cap: u32,
    /// Per task, its role and its plan.
    tasks: Vec<HbTask>,
    write_ns: u64,
    read_ns: u64,
    /// `write_ns` and `read_ns` jittered ±10%, drawn at every message.
    write_j: Jitter,
    read_j: Jitter,
    alive: usize,
    end: u64,
    /// The pipe mutex model is on (pipes, `Mechanisms::contention`).
    mutex: bool,
    /// Without the pipe mutex: a syscall returns to user space before the
    /// next one's first decision (`Mechanisms::syscall_user_return`).
    decide_after_return: bool,
    /// Syscall entry and exit, outside the mutex, ns.
    syscall_ns: u64,
    /// A write's (read's) body under the pipe mutex, ns: all of it but
    /// the entry and exit, or with `Mechanisms::pipe_mutex_split` the
    /// measured hold ([`crate::machine::LockShares::pipe_write_mutex_ns`]).
    write_hold_ns: u64,
    read_hold_ns: u64,
    /// The rest of a write's (read's) body, run before `mutex_lock` with
    /// the entry, ns (0 without `Mechanisms::pipe_mutex_split`).
    write_pre_ns: u64,
    read_pre_ns: u64,
    /// Time from a body's start under the mutex to its unlock, summed over
    /// the bodies that ended, ns, and their number (not metrics: read by
    /// tests of the split).
    pub lock_hold_ns: u64,
    /// See [`Hackbench::lock_hold_ns`].
    pub lock_holds: u64,
    /// Of those bodies, the ones whose task was switched out holding the
    /// mutex, and their time.
    pub lock_holds_preempted: u64,
    /// See [`Hackbench::lock_holds_preempted`].
    pub lock_hold_preempted_ns: u64,
    /// Of the bodies, those whose `mutex_lock` took the fast path (the
    /// first try after the entry, the mutex free, nobody waiting), and of
    /// them those whose task was switched out holding the mutex.
    pub lock_fast_holds: u64,
    /// See [`Hackbench::lock_fast_holds`].
    pub lock_fast_holds_preempted: u64,
    /// The return to user space sits between two syscalls, before the
    /// next `mutex_lock` (`Mechanisms::pipe_user_return`; else at the
    /// start of the body, the mutex held).
    user_return_first: bool,
    /// Per task, its state under the pipe mutex model.
    locking: Vec<LockTask>,
    /// Times a task found the mutex held: spun, slept.
    pub lock_spins: u64,
    /// See [`Hackbench::lock_spins`].
    pub lock_sleeps: u64,
    /// Linux's hand-over of the pipe mutex (`Mechanisms::mutex_handoff`).
    handoff: bool,
    /// Linux's fast path of `mutex_lock` (`Mechanisms::mutex_fast_path`).
    fast_path: bool,
    /// Unlocks that gave the mutex to the first waiter (`__mutex_handoff`).
    pub lock_handoffs: u64,
    /// The most tasks of one pipe in that state at once (not a metric:
    /// read by tests of the hand-over; Linux's unlock wakes only the
    /// first waiter, which stays first, so at most 1).
    pub lock_woken_max: u32,
    /// Linux's spinner stops at a reschedule request
    /// (`Mechanisms::mutex_spin_resched`).
    spin_resched: bool,
    /// Spins stopped at a reschedule request (`need_resched()` seen at a
    /// poll, or the spinner switched out in its poll).
    pub lock_spin_stops: u64,
    /// Polls by a task switched out since its previous poll (Linux's
    /// spinner, preempted, sleeps instead: 0 with
    /// `Mechanisms::mutex_spin_resched`).
    pub lock_respins: u64,
    /// `anon_pipe_write`'s `wake_next_writer` only after the writer slept
    /// for room (`Mechanisms::pipe_wake_next_writer`).
    wake_next_writer: bool,
    /// Writers that found a pipe full and slept on it.
    pub pipe_full_sleeps: u64,
    /// The pipes' pages as Linux fills and empties them
    /// (`Mechanisms::pipe_pages`); else a pipe holds 640 messages, and a
    /// read that found it full wakes a writer.
    pages: bool,
    /// Reads that woke a writer (a page emptied of a full pipe; without
    /// `Mechanisms::pipe_pages`, a read that found the pipe full).
    pub reader_writer_wakes: u64,
    /// Reads that found all 640 messages in the pipe and woke no writer
    /// (they did not empty a page; 0 without `Mechanisms::pipe_pages`).
    pub full_reads_no_wake: u64,
    /// Writers that slept on a full pipe holding fewer than 640 messages
    /// (all 16 slots in use, the oldest page partly read; 0 without
    /// `Mechanisms::pipe_pages`).
    pub full_sleeps_below_cap: u64,
    /// A spinner switched out in its poll drops the poll's rest
    /// (`Mechanisms::mutex_poll_cut`).
    poll_cut: bool,
    /// Writers woken at the end of a write by a writer that had not slept
    /// in it (0 with `Mechanisms::pipe_wake_next_writer`).
    pub next_writer_wakes_unslept: u64,
}

/// [`LockTask::spin_switch_in`] of a task whose last try did not spin.
const NOT_SPINNING: u64 = u64::MAX;

/// A task's state under the pipe mutex model (one record per task, apart
/// from [`HbTask`], whose one cache line the batching path reads and
/// which the mutex model, never batched, does not need).
#[derive(Clone, Copy, Debug)]
struct LockTask {
    /// Its switch-in count when it last decided to spin ([`NOT_SPINNING`]:
    /// its last try did not spin).
    spin_switch_in: u64,
    /// Inside its syscall, the mutex not yet taken.
    entering: bool,
    /// Woken by an unlock, and since then neither holding the mutex nor
    /// asleep on it again.
    lock_woken: bool,
    /// Its spin stopped at a reschedule request; once it runs again it
    /// tries the mutex once and otherwise sleeps on it.
    spin_stopped: bool,
    /// A writer that slept for room in its current write.
    wr_slept: bool,
    /// When its body under the mutex began, ns, and its switch-in count
    /// then.
    held_since: u64,
    held_switch_in: u64,
    /// Its next try of the mutex comes right after its syscall's entry.
    fresh: bool,
    /// Its last acquisition took Linux's fast path
    /// (`Mechanisms::mutex_fast_path`).
    fast: bool,
}

impl Default for LockTask {
    fn default() -> Self {
        LockTask {
            spin_switch_in: NOT_SPINNING,
            entering: false,
            lock_woken: false,
            spin_stopped: false,
            wr_slept: false,
            held_since: 0,
            held_switch_in: 0,
            fresh: false,
            fast: false,
        }
    }
}

impl Hackbench {
    /// A run of `cfg`.
    pub fn new(cfg: HackbenchCfg) -> Self {
        Hackbench {
            cfg,
            chans: Vec::new(),
            waits: Vec::new(),
            cap: 0,
            tasks: Vec::new(),
            // From the machine's costs, at init.
            write_ns: 0,
            read_ns: 0,
            write_j: Jitter::default(),
            read_j: Jitter::default(),
            mutex: false,
            decide_after_return: true,
            syscall_ns: 0,
            user_return_first: true,
            locking: Vec::new(),
            lock_spins: 0,
            lock_sleeps: 0,
            handoff: false,
            fast_path: false,
            lock_handoffs: 0,
            write_hold_ns: 0,
            read_hold_ns: 0,
            write_pre_ns: 0,
            read_pre_ns: 0,
            lock_hold_ns: 0,
            lock_holds: 0,
            lock_holds_preempted: 0,
            lock_hold_preempted_ns: 0,
            lock_fast_holds: 0,
            lock_fast_holds_preempted: 0,
            lock_woken_max: 0,
            spin_resched: false,
            lock_spin_stops: 0,
            lock_respins: 0,
            wake_next_writer: false,
            pipe_full_sleeps: 0,
            pages: false,
            reader_writer_wakes: 0,
            full_reads_no_wake: 0,
            full_sleeps_below_cap: 0,
            poll_cut: false,
            next_writer_wakes_unslept: 0,
            alive: 0,
            end: 0,
        }
    }

    /// Tasks it creates.
    pub fn nr_tasks(cfg: &HackbenchCfg) -> usize {
        cfg.groups * 2 * FDS
    }

    fn total(&self) -> u32 {
        (self.cfg.loops * FDS) as u32
    }

    /// A syscall's cost after its decision (without the pipe mutex): kernel
    /// code that goes on once the return to user space before it was made
    /// (`Mechanisms::syscall_user_return`), else the model before, which
    /// returns to user space at its start.
    fn syscall_cost(&self, ns: u64) -> Next {
        if self.decide_after_return {
            Next::RunKernel(ns)
        } else {
            Next::Run(ns)
        }
    }
}

impl Workload for Hackbench {
    fn init(&mut self, k: &mut Kernel) {
        let c = &k.m.costs;
        (self.write_ns, self.read_ns) = if self.cfg.sockets {
            (c.sock_write_ns, c.sock_read_ns)
        } else {
            (c.pipe_write_ns, c.pipe_read_ns)
        };
        if self.cfg.sockets && k.m.mech.sock_sleep && k.m.sock_sleep_ns > 0 {
            // Every sleep of a hackbench over sockets is on a socket.
            k.m.sleep_ns = k.m.sock_sleep_ns;
        }
        self.write_j = Jitter::new(self.write_ns, 10);
        self.read_j = Jitter::new(self.read_ns, 10);
        self.mutex = !self.cfg.sockets && k.m.mech.contention;
        self.handoff = self.mutex && k.m.mech.mutex_handoff;
        self.fast_path = self.mutex && k.m.mech.mutex_fast_path && k.m.mech.pipe_user_return;
        self.spin_resched = self.mutex && k.m.mech.mutex_spin_resched;
        self.wake_next_writer = self.mutex && k.m.mech.pipe_wake_next_writer;
        self.pages = self.mutex && k.m.mech.pipe_pages;
        self.poll_cut = self.mutex && k.m.mech.mutex_poll_cut;
        self.decide_after_return = k.m.mech.syscall_user_return;
        self.syscall_ns = c.syscall_ns.min(self.write_ns).min(self.read_ns);
        self.split_hold(&k.m);
        self.user_return_first = k.m.mech.pipe_user_return;
        self.cap = if self.cfg.sockets { 208 } else { 640 };
        for g in 0..self.cfg.groups {
            // Receivers first (hackbench forks them first), then senders.
            for r in 0..FDS {
                let tid = k.spawn(self.spawn_of(k.tasks.len()));
                debug_assert_eq!(reader_of(self.chans.len() as u32), tid);
                // Its group's senders (spawned after the receivers).
                let senders = (g * 2 * FDS + FDS) as u32;
                k.split_on_switch_in(tid, senders..senders + FDS as u32);
                self.chans.push(Chan::default());
                self.waits.push(ChanWaits {
                    reader: tid,
                    owner: NO_OWNER,
                    ..Default::default()
                });
                self.tasks.push(HbTask::new(Role::Receiver {
                    ch: (g * FDS + r) as u32,
                    left: self.total(),
                    pending: false,
                    was_full: false,
                }));
            }
            for _ in 0..FDS {
                let tid = k.spawn(self.spawn_of(k.tasks.len()));
                // Its group's writers on a CPU bound the bands; a switch
                // to it checks the group's batches.
                k.set_class(tid, g as u32);
                let group = (g * 2 * FDS) as u32;
                k.split_on_switch_in(tid, group..group + 2 * FDS as u32);
                self.tasks.push(HbTask::new(Role::Sender {
                    g: g as u32,
                    sent: 0,
                    pending: None,
                }));
            }
        }
        self.alive = self.tasks.len();
        self.locking = vec![LockTask::default(); self.tasks.len()];
    }

    #[inline]
    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        if self.mutex {
            return self.step_mutex(k, tid);
        }
        let sockets = self.cfg.sockets;
        let total = self.total();
        match self.tasks[tid as usize].role {
            Role::Sender {
                g,
                mut sent,
                pending,
            } => {
                if let Some(c) = pending {
                    let ch = &mut self.chans[c as usize];
                    let was_empty = ch.queued == 0;
                    ch.reserved -= 1;
                    ch.queued += 1;
                    sent += 1;
                    // Pipes wake the reader only when the pipe was empty; unix
                    // sockets on every message (sock_def_readable) — both only
                    // if the reader sleeps.
                    if sockets && !ch.reader_waiting {
                        // sock_def_readable: a sleeper still on the queue
                        // while its waker holds the queue's lock is seen,
                        // and the lock taken (vCPU turns only).
                        k.wait_queue_lock(self.waits[c as usize].reader);
                    }
                    if ch.reader_waiting && (sockets || was_empty) {
                        ch.reader_waiting = false;
                        let r = self.waits[c as usize].reader;
                        k.wake(r, true);
                    }
                    // wake_next_writer: room left, another writer waits (pipes).
                    let ch = &self.chans[c as usize];
                    if !sockets && ch.queued + ch.reserved < self.cap {
                        if let Some(w) = self.pop_writer(c) {
                            k.wake(w, true);
                        }
                    }
                    // The write returns to user space: a request it takes
                    // (or its wakeups' cost) comes before the next write's
                    // room check, which the task makes when it goes on.
                    if self.decide_after_return {
                        self.tasks[tid as usize].role = Role::Sender {
                            g,
                            sent,
                            pending: None,
                        };
                        if k.user_return_waits() {
                            return Next::ReturnToUser;
                        }
                    }
                }
                if sent == total {
                    self.tasks[tid as usize].role = Role::Sender {
                        g,
                        sent,
                        pending: None,
                    };
                    return self.exit(k);
                }
                let c = g * FDS as u32 + sent % FDS as u32;
                let ch = &mut self.chans[c as usize];
                if ch.queued + ch.reserved >= self.cap {
                    self.push_writer(c, tid);
                    self.tasks[tid as usize].role = Role::Sender {
                        g,
                        sent,
                        pending: None,
                    };
                    return Next::Block;
                }
                ch.reserved += 1;
                self.tasks[tid as usize].role = Role::Sender {
                    g,
                    sent,
                    pending: Some(c),
                };
                let ns = k.rng(tid).jittered(self.write_j);
                self.syscall_cost(ns)
            }
            Role::Receiver {
                ch: c,
                mut left,
                pending,
                was_full,
            } => {
                if pending {
                    left -= 1;
                    let ch = &mut self.chans[c as usize];
                    if sockets {
                        // unix_write_space: wake every writer once at most a
                        // quarter of the send buffer is in use.
                        if (ch.queued + ch.reserved) * 4 <= self.cap && ch.nr_writers > 0 {
                            ch.nr_writers = 0;
                            // In queue order, without a copy of the queue.
                            for w in self.waits[c as usize].writers.drain(..) {
                                k.wake(w, true);
                            }
                        }
                    } else if was_full {
                        if let Some(w) = self.pop_writer(c) {
                            k.wake(w, true);
                        }
                    }
                    // The read returns to user space: a request it takes
                    // (or its wakeups' cost) comes before the next read
                    // dequeues a message or finds the channel empty.
                    if self.decide_after_return {
                        self.tasks[tid as usize].role = Role::Receiver {
                            ch: c,
                            left,
                            pending: false,
                            was_full: false,
                        };
                        if k.user_return_waits() {
                            return Next::ReturnToUser;
                        }
                    }
                }
                if left == 0 {
                    self.tasks[tid as usize].role = Role::Receiver {
                        ch: c,
                        left,
                        pending: false,
                        was_full: false,
                    };
                    return self.exit(k);
                }
                let ch = &mut self.chans[c as usize];
                if ch.queued == 0 {
                    ch.reader_waiting = true;
                    self.tasks[tid as usize].role = Role::Receiver {
                        ch: c,
                        left,
                        pending: false,
                        was_full: false,
                    };
                    return Next::Block;
                }
                let full = ch.queued + ch.reserved >= self.cap;
                ch.queued -= 1;
                self.tasks[tid as usize].role = Role::Receiver {
                    ch: c,
                    left,
                    pending: true,
                    was_full: full,
                };
                let ns = k.rng(tid).jittered(self.read_j);
                self.syscall_cost(ns)
            }
        }
    }

    /// A sender plans the writes that follow while every channel they
    /// touch stays in its band (`Hackbench::room_of`), a receiver the reads
    /// its pipe already holds messages for (at most one fewer than it has
    /// left) while no writer could fill its pipe. Not with the pipe mutex.
    fn plan(&mut self, k: &mut Kernel, tid: u32, first_ns: u64, before_ns: u64) -> Option<Planned> {
        if self.mutex {
            return None;
        }
        let t0 = k.now;
        // Drawn from a copy; the stream as it is now goes to the plan
        // once there is one (`mem::replace` below).
        let mut rng = k.task_rng(tid).clone();
        let speed = k.speed();
        // Times from `t0` on: a planned step's next step is before `t0 +
        // lim`.
        let (mut t, mut last, mut lim) = (first_ns, 0, before_ns - t0);
        let n = match self.tasks[tid as usize].role {
            Role::Sender {
                g,
                sent,
                pending: Some(c0),
            } => {
                let base = g as usize * FDS;
                let grp: &[Chan; FDS] = self.chans[base..base + FDS].try_into().expect("group");
                let r0 = reader_of(base as u32);
                let i0 = c0 as usize - base;
                let on = k.step_delays::<FDS>(r0);
                // Its band worked out once, for the walk too.
                let band = self.band(k.on_cpu_in_class(g));
                lim = Hackbench::room_of(band, &grp[i0], lim, on(i0));
                if lim == 0 {
                    // Not even the first step (it finishes the write
                    // under way): nothing planned, nothing counted.
                    return None;
                }
                // Step j finishes the write to channel j - 1 and starts
                // one to channel j (the step that sends the last message
                // exits: not planned). Past 20 steps no new channel.
                let end = self.total() - sent;
                let with_chans = end.min(FDS as u32);
                let write_j = self.write_j;
                let grp: &mut [Chan; FDS] = (&mut self.chans[base..base + FDS])
                    .try_into()
                    .expect("group");
                // The walk counts its planned starts in its channels'
                // `pend_starts`; the steps past it (back to channels
                // already walked) are counted after it.
                let walked = sender_steps(
                    band, grp, on, &mut rng, write_j, speed, i0, with_chans, t0, &mut lim, &mut t,
                    &mut last,
                );
                let mut j = walked;
                if j == with_chans && j < end {
                    let stop_ns = t0 + lim;
                    let more = fit_steps(
                        &mut rng,
                        write_j,
                        speed,
                        end - j,
                        stop_ns,
                        &mut t,
                        &mut last,
                    );
                    j += more;
                    // Their starts, round the group from the walk's last
                    // channel ([`round`]).
                    let i = (i0 + walked as usize - 1) % FDS;
                    round(grp, i, more, |ch, k| ch.pend_starts += k as u16);
                }
                j - 1
            }
            Role::Receiver {
                ch: c,
                left,
                pending: true,
                was_full,
            } => {
                // Step j finishes read j - 1 and starts read j: the pipe
                // holds at least `queued - (j - 1)` messages then (only
                // this task reads it), and the last read exits. The
                // first finishes the read under way, which wakes a writer
                // if it found the pipe full (`was_full`): quiet for a
                // pipe that was not full. Writers asleep on a pipe are
                // woken by the others' writes, which find it not full
                // with or without the planned reads (the band). A
                // socket's read wakes its every writer asleep once at
                // most a quarter of the buffer is in use: with writers
                // asleep, quiet while it holds more than that, which it
                // does at step j if `queued + reserved - (j - 1)` does
                // (the others' steps only add to it).
                let ch = self.chans[c as usize];
                if was_full {
                    return None;
                }
                let mut max = ch.queued.min(left - 1);
                if self.cfg.sockets && ch.nr_writers > 0 {
                    max = max.min((ch.queued + ch.reserved).saturating_sub(self.cap / 4));
                }
                if max == 0 {
                    // Not even one read to plan (an empty channel, the
                    // last read, or sleepers it could wake).
                    return None;
                }
                let writers = k.on_cpu_in_class(c / FDS as u32);
                lim = lim.min(self.band(writers).room_writers(&ch));
                let n = fit_steps(
                    &mut rng,
                    self.read_j,
                    speed,
                    max,
                    t0 + lim,
                    &mut t,
                    &mut last,
                );
                self.chans[c as usize].pend_reads += n as u16;
                n
            }
            _ => 0,
        };
        if n == 0 {
            return None;
        }
        let at_plan = std::mem::replace(k.rng(tid), rng);
        self.tasks[tid as usize].plan = Plan { n, rng: at_plan };
        Some(Planned {
            steps: n,
            last_ns: last,
            end_ns: t,
        })
    }

    /// A receiver switched in: its group's senders' batches, planned
    /// while it could not read, stay quiet as long as it cannot find its
    /// channel empty (the reader's side of `Hackbench::room_of`, from
    /// now), or for good if they finish no write to it. A sender
    /// switched in: its group's batches, planned while it
    /// could not write, stay quiet as long as the writers (it with them)
    /// cannot fill a channel they touch (the writers' side, from now,
    /// over the receiver's channel, or the channels of the sender's
    /// planned writes). The other sides of the band do not depend on
    /// where the task switched in is.
    fn quiet_until(&self, k: &Kernel, tid: u32, other: u32) -> u64 {
        let room = match (
            self.tasks[tid as usize].role,
            self.tasks[other as usize].role,
        ) {
            (Role::Receiver { ch, .. }, Role::Sender { pending, .. }) => {
                // Only a batch that finishes a write to its channel (its
                // write under way `c0` and those its steps but the last
                // start, [`Band::done_in`]) depends on its reads.
                let n = self.tasks[other as usize].plan.n;
                if let Some(c0) = pending {
                    if n < FDS as u32 && (ch + FDS as u32 - c0) % FDS as u32 >= n {
                        return u64::MAX;
                    }
                }
                let ch = &self.chans[ch as usize];
                let b = ch.queued.saturating_sub(ch.pend_reads as u32) as u64;
                b * self.read_j.low() + k.step_delay_ns(tid)
            }
            (Role::Sender { g, .. }, Role::Receiver { ch, .. }) => self
                .band(k.on_cpu_in_class(g))
                .room_writers(&self.chans[ch as usize]),
            (
                Role::Sender { g, .. },
                Role::Sender {
                    pending: Some(c0), ..
                },
            ) => {
                // Its walk's channels: `c0` and those of its planned steps.
                // The least writers' side is that of the least room (it
                // grows with the room): one division.
                let band = self.band(k.on_cpu_in_class(g));
                let base = g as usize * FDS;
                let mut i = c0 as usize - base;
                let mut a = band.room(&self.chans[c0 as usize]);
                for _ in 0..self.tasks[other as usize].plan.n.min(FDS as u32 - 1) {
                    i = next_chan(i);
                    a = a.min(band.room(&self.chans[base + i]));
                }
                band.writers_side(a)
            }
            (Role::Sender { .. }, Role::Sender { pending: None, .. })
            | (Role::Receiver { .. }, Role::Receiver { .. }) => return 0,
        };
        k.now + room
    }

    /// The plan's times drawn again from the stream as it was planned, as
    /// [`Workload::planned_times`] draws them, up to the first step not
    /// before `limit_ns`.
    fn planned_before(
        &self,
        k: &Kernel,
        tid: u32,
        first_ns: u64,
        steps: u32,
        limit_ns: u64,
    ) -> Option<Planned> {
        let plan = &self.tasks[tid as usize].plan;
        debug_assert!(steps <= plan.n);
        let mut rng = plan.rng.clone();
        // The plan's loop of draws again ([`fit_steps`], the same
        // conversion), bounded by `limit_ns`: `m` steps kept, the last at
        // `last`, the step after them at `t`.
        let (mut t, mut last) = (first_ns, 0);
        let m = fit_steps(
            &mut rng,
            self.cost_of(tid),
            k.speed(),
            steps,
            limit_ns,
            &mut t,
            &mut last,
        );
        (m > 0).then_some(Planned {
            steps: m,
            last_ns: last,
            end_ns: t,
        })
    }

    /// A plan's times, drawn again from the stream as it was planned
    /// (each step's duration is one draw of the role's cost).
    fn planned_times(
        &self,
        k: &Kernel,
        tid: u32,
        first_ns: u64,
        until_ns: u64,
        times: &mut Vec<u64>,
    ) {
        let plan = &self.tasks[tid as usize].plan;
        let mut rng = plan.rng.clone();
        let j = self.cost_of(tid);
        let mut push = |time: &dyn Fn(u64) -> u64| {
            let mut t = first_ns;
            for _ in 0..plan.n {
                times.push(t);
                if t > until_ns {
                    return;
                }
                t += time(rng.jittered(j));
            }
            times.push(t);
        };
        // Converted as the plan's loops convert them (`fit_steps`).
        let speed = k.speed();
        if speed.is_full() {
            push(&|w| w)
        } else if let Some(b) = speed.bounded(j.high()) {
            push(&|w| b.time_ns(w))
        } else {
            push(&|w| speed.time_ns(w))
        }
    }

    /// The first `steps` planned steps, at once: a sender's writes
    /// finished and the next ones started, a receiver's reads; its stream
    /// as they leave it. What they decide is known (nothing sleeps, nobody
    /// is woken, no pipe is full: checked in debug builds).
    fn take(&mut self, k: &mut Kernel, tid: u32, steps: u32) {
        let j = self.cost_of(tid);
        let plan = &mut self.tasks[tid as usize].plan;
        let n = std::mem::take(&mut plan.n);
        debug_assert!(steps <= n && n > 0);
        if steps < n {
            // The stream as the steps taken leave it.
            let rng = k.rng(tid);
            *rng = plan.rng.clone();
            for _ in 0..steps {
                rng.jittered(j);
            }
        }
        self.apply_taken(tid, steps, n);
    }

    /// A split: the plan's times drawn again from the stream as it was
    /// planned, once, up to `until_ns`, the stream left where the steps
    /// before it leave it ([`Workload::planned_times`] and
    /// [`Workload::take`] in one walk).
    #[inline(never)]
    fn take_before(
        &mut self,
        k: &mut Kernel,
        tid: u32,
        first_ns: u64,
        steps: u32,
        until_ns: u64,
    ) -> (u32, u64, u64) {
        let j = self.cost_of(tid);
        let plan = &mut self.tasks[tid as usize].plan;
        let n = std::mem::take(&mut plan.n);
        // (Fewer steps than planned if the batch was cut short.)
        debug_assert!(steps > 0 && steps <= n);
        let mut rng = plan.rng.clone();
        // Compiled once per conversion (no call per step).
        #[inline(always)]
        fn walk(
            rng: &mut Rng,
            j: Jitter,
            time: impl Fn(u64) -> u64,
            steps: u32,
            first_ns: u64,
            until_ns: u64,
        ) -> (u32, u64, u64) {
            let (mut taken, mut prev, mut t) = (0, 0, first_ns);
            while taken < steps && t < until_ns {
                prev = t;
                t += time(rng.jittered(j));
                taken += 1;
            }
            (taken, prev, t)
        }
        // Converted as the plan's loops convert them (`fit_steps`).
        let speed = k.speed();
        let (taken, prev, next) = if speed.is_full() {
            walk(&mut rng, j, |w| w, steps, first_ns, until_ns)
        } else if let Some(b) = speed.bounded(j.high()) {
            walk(&mut rng, j, |w| b.time_ns(w), steps, first_ns, until_ns)
        } else {
            walk(&mut rng, j, |w| speed.time_ns(w), steps, first_ns, until_ns)
        };
        if taken < n {
            // (All of them taken, the stream is where the plan left it.)
            *k.rng(tid) = rng;
        }
        self.apply_taken(tid, taken, n);
        (taken, prev, next)
    }

    fn metrics(&mut self, k: &Kernel) -> Vec<Metric> {
        let end = if self.alive == 0 { self.end } else { k.now };
        let mut m = vec![Metric::new("time_s", end as f64 / 1e9, false)];
        if self.mutex {
            m.push(Metric::new("lock_spins", self.lock_spins as f64, false));
            m.push(Metric::new("lock_sleeps", self.lock_sleeps as f64, false));
            if self.handoff {
                m.push(Metric::new(
                    "lock_handoffs",
                    self.lock_handoffs as f64,
                    false,
                ));
            }
            if self.spin_resched {
                m.push(Metric::new(
                    "lock_spin_stops",
                    self.lock_spin_stops as f64,
                    false,
                ));
            }
        }
        m
    }
}

impl Hackbench {
    /// The first `steps` of task `tid`'s `n` planned steps are taken, its
    /// stream already where they leave it ([`Workload::take`]): their
    /// effects on its role and its channels, and the others' dropped.
    fn apply_taken(&mut self, tid: u32, steps: u32, n: u32) {
        match self.tasks[tid as usize].role {
            Role::Sender {
                g,
                sent,
                pending: Some(c0),
            } => {
                // Step j finishes the write to channel j - 1 (one more
                // queued) and starts one to channel j (planned no more);
                // the reservations in between cancel out.
                let base = g as usize * FDS;
                let grp: &mut [Chan; FDS] = (&mut self.chans[base..base + FDS])
                    .try_into()
                    .expect("group");
                let i0 = c0 as usize - base;
                // In debug builds, the steps one at a time, each checked,
                // on a copy: the counts below must come out the same.
                #[cfg(debug_assertions)]
                let expected = {
                    let mut grp = *grp;
                    let mut i = i0;
                    grp[i].reserved -= 1;
                    for _ in 0..steps {
                        debug_assert!(!grp[i].reader_waiting && grp[i].nr_writers == 0);
                        grp[i].queued += 1;
                        i = next_chan(i);
                        debug_assert!(grp[i].queued + grp[i].reserved + 1 < self.cap);
                        grp[i].pend_starts -= 1;
                    }
                    grp[i].reserved += 1;
                    for _ in steps..n {
                        i = next_chan(i);
                        grp[i].pend_starts -= 1;
                    }
                    grp
                };
                // Step j finishes the write to channel i0 + j - 1 and
                // starts one to i0 + j: one more queued in each of the
                // `steps` channels from i0 on, the write under way then
                // reserved in the next, and each of the `n` planned starts
                // after i0 planned no more. Counted round the group, not
                // step by step ([`round`]).
                grp[i0].reserved -= 1;
                let i = if n < FDS as u32 {
                    // A short batch: step by step.
                    let mut i = i0;
                    for _ in 0..steps {
                        grp[i].queued += 1;
                        i = next_chan(i);
                        grp[i].pend_starts -= 1;
                    }
                    let end = i;
                    for _ in steps..n {
                        i = next_chan(i);
                        grp[i].pend_starts -= 1;
                    }
                    end
                } else {
                    let before = if i0 == 0 { FDS - 1 } else { i0 - 1 };
                    let i = next_chan(round(grp, before, steps, |ch, k| ch.queued += k));
                    round(grp, i0, n, |ch, k| ch.pend_starts -= k as u16);
                    i
                };
                grp[i].reserved += 1;
                let c_end = (base + i) as u32;
                #[cfg(debug_assertions)]
                for (a, b) in grp.iter().zip(expected.iter()) {
                    debug_assert_eq!(
                        (a.queued, a.reserved, a.pend_starts, a.pend_reads),
                        (b.queued, b.reserved, b.pend_starts, b.pend_reads)
                    );
                }
                self.tasks[tid as usize].role = Role::Sender {
                    g,
                    sent: sent + steps,
                    pending: Some(c_end),
                };
            }
            Role::Receiver {
                ch: c,
                left,
                was_full,
                ..
            } => {
                let ch = &mut self.chans[c as usize];
                debug_assert!(ch.queued >= steps);
                debug_assert!(
                    steps == 0
                        || !(self.cfg.sockets && ch.nr_writers > 0)
                        || (ch.queued + ch.reserved + 1).saturating_sub(steps) * 4 > self.cap
                );
                ch.queued -= steps;
                debug_assert!(steps == 0 || ch.queued + ch.reserved < self.cap);
                ch.pend_reads -= n as u16;
                self.tasks[tid as usize].role = Role::Receiver {
                    ch: c,
                    left: left - steps,
                    pending: true,
                    was_full: was_full && steps == 0,
                };
            }
            Role::Sender { .. } => unreachable!("task {tid}: a plan with no write under way"),
        }
    }
}

/// What a task finds when it tries to take a pipe mutex.
enum Acquire {
    Taken,
    Spin,
    Sleep,
    /// A spin that stops at a reschedule request (`need_resched()`):
    /// `schedule()`, then one more try before sleeping.
    Resched,
}

impl Hackbench {
    /// The cost a task draws at each step: its role's.
    fn cost_of(&self, tid: u32) -> Jitter {
        if matches!(self.tasks[tid as usize].role, Role::Sender { .. }) {
            self.write_j
        } else {
            self.read_j
        }
    }

    /// Batching: how long from now channel `ch` is sure to stay in its band
    /// whatever the tasks do, ns (a planned step's time must be less).
    /// In the band nobody sleeps on the channel and nobody would: the
    /// reader always finds a message (`queued` stays at least 1) and no
    /// writer finds it full (`queued + reserved` stays below the
    /// capacity), so every decision about it (block, wake the reader, wake
    /// a writer) comes out the same whenever the planned steps' changes
    /// to its counts are made within the window (taken late, at a split
    /// or at the batch's event). The window is bounded by what the others
    /// can do in it: the one reader steps at most once every
    /// `read_j.low()` ns, from its next step on (`reader_in`, below), and
    /// each of its steps starts a read if the channel holds a message; the
    /// `b = queued - pend_reads` messages not taken by its planned reads
    /// (others' writes only add to them) last it `b` steps, so the first
    /// step that can find the channel empty comes `reader_in + b * low`
    /// from now at the soonest, and a batch whose event is before that
    /// (strictly: the event's writes are counted first) is taken before
    /// any such step; each of the group's `writers` on a CPU (of the 20) writes to its
    /// channels in turn, so it starts at most one write to `c` per 20
    /// writes, at most `L / (20 low) + 1`. Other tasks' planned and not
    /// yet taken reads and writes count against the band as if still to
    /// come (`pend_reads`, `pend_starts`). The reader starts no read
    /// (beyond those planned) before its next step, `reader_in` ns from
    /// now ([`Kernel::step_delay_ns`]: when its burst or batch ends): its
    /// reads come that much later. A reader off its CPU reads nothing,
    /// and a writer off its CPU starts no write, until switched in, which
    /// the band does not bound: the switch checks the batches of its
    /// group (a reader's: its senders') against the band from then on
    /// ([`Workload::quiet_until`], [`Kernel::split_on_switch_in`],
    /// [`Kernel::on_cpu_in_class`]) and splits those that reach past it.
    ///
    /// Returns `lim` (ns) bounded by the band.
    #[inline(always)]
    fn room_of(band: Band, ch: &Chan, lim: u64, reader_in: u64) -> u64 {
        band.room_of(ch, lim, reader_in)
    }

    /// What the band of a channel is worked out from, with `writers` of
    /// its group's writers on a CPU.
    #[inline(always)]
    fn band(&self, writers: u32) -> Band {
        if writers == 0 {
            // No writer on a CPU, no bound: a writers' side of more
            // than 2^30 x 2^32 ns (at least [`NOT_ON_CPU_NS`], more than
            // any window or time left), with no test for it at each
            // channel; at most 2^63, so that `now` adds to it.
            const _: () =
                assert!(((1u64 << 31) - 2 * 640 - u16::MAX as u64) << 32 >= NOT_ON_CPU_NS);
            return Band {
                cap_1: 1 << 31,
                read_low: self.read_j.low(),
                writes_low: 1 << 32,
                recip_w: 1 << 32,
                sockets: self.cfg.sockets,
            };
        }
        debug_assert!(writers as usize <= FDS && self.cap < 1 << 16);
        Band {
            cap_1: self.cap - 1,
            read_low: self.read_j.low(),
            writes_low: FDS as u64 * self.write_j.low(),
            recip_w: match RECIP_W.get(writers as usize) {
                Some(&r) => r,
                None => Band::recip(writers),
            },
            sockets: self.cfg.sockets,
        }
    }

    /// A writer goes to sleep on channel `c` (at the tail of its wait queue).
    fn push_writer(&mut self, c: u32, tid: u32) {
        self.chans[c as usize].nr_writers += 1;
        self.waits[c as usize].writers.push_back(tid);
    }

    /// The first writer asleep on channel `c`, taken off its wait queue.
    #[inline]
    fn pop_writer(&mut self, c: u32) -> Option<u32> {
        let ch = &mut self.chans[c as usize];
        if ch.nr_writers == 0 {
            return None;
        }
        ch.nr_writers -= 1;
        self.waits[c as usize].writers.pop_front()
    }

    /// `mutex_lock(&pipe->mutex)`: taken if free; a waiter spins while the
    /// owner runs on a CPU and sleeps on the mutex while it does not (a
    /// preempted owner keeps the mutex). With `Mechanisms::mutex_handoff`,
    /// Linux's hand-over ([`Hackbench::acquire_handoff`]).
    /// A task whose spin stopped at a reschedule request (`may_spin`
    /// false) does not spin: it sleeps if the mutex is not free.
    fn acquire(&mut self, k: &mut Kernel, c: u32, tid: u32, may_spin: bool) -> Acquire {
        if self.handoff {
            return self.acquire_handoff(k, c, tid, may_spin);
        }
        let ch = &mut self.waits[c as usize];
        if ch.owner == NO_OWNER {
            ch.owner = tid;
            Acquire::Taken
        } else if may_spin && k.running(ch.owner) {
            self.spin(k)
        } else {
            ch.lock_waiters.push_back(tid);
            self.lock_sleeps += 1;
            Acquire::Sleep
        }
    }

    /// A poll of a mutex whose owner runs (`mutex_spin_on_owner`). With
    /// `Mechanisms::mutex_spin_resched`, none if an immediate reschedule
    /// request is pending (`mutex_can_spin_on_owner`,
    /// `mutex_spin_on_owner`): the spin stops.
    fn spin(&mut self, k: &mut Kernel) -> Acquire {
        if self.spin_resched && k.need_resched_now() {
            self.lock_spin_stops += 1;
            return Acquire::Resched;
        }
        self.lock_spins += 1;
        // The poll's `pause` (vCPU turns: the owner's vCPU is out of
        // its turn, `Mechanisms::pipe_lock_pause`).
        k.pipe_lock_spin();
        Acquire::Spin
    }

    /// `mutex_lock` as Linux's `__mutex_lock_common` hands the mutex over
    /// (`kernel/locking/mutex.c`). A task not on the wait list takes a
    /// free mutex (`__mutex_trylock`: free is free, sleepers or not), spins
    /// while the owner runs (`mutex_optimistic_spin`) and otherwise joins
    /// the list's tail and sleeps. Only the list's first is ever woken
    /// (`__mutex_unlock_slowpath`), and it stays first until it holds the
    /// mutex: woken, it takes the mutex if free or handed to it (the
    /// `MUTEX_FLAG_PICKUP` of `__mutex_handoff`), and otherwise sets
    /// `MUTEX_FLAG_HANDOFF` (`__mutex_trylock_or_handoff` with `first`),
    /// spins while the owner runs (`mutex_optimistic_spin` with its
    /// waiter) and sleeps again while it does not, still first.
    fn acquire_handoff(&mut self, k: &mut Kernel, c: u32, tid: u32, may_spin: bool) -> Acquire {
        let ch = &mut self.waits[c as usize];
        let first = ch.lock_waiters.front() == Some(&tid);
        if ch.owner == NO_OWNER || ch.owner == tid {
            debug_assert!(
                ch.owner == NO_OWNER || first,
                "task {tid}: handed a mutex it does not wait for"
            );
            if first {
                // `__mutex_remove_waiter`: the last one clears the flags.
                ch.lock_waiters.pop_front();
                if ch.lock_waiters.is_empty() {
                    ch.handoff = false;
                }
            }
            ch.owner = tid;
            return Acquire::Taken;
        }
        if first {
            ch.handoff = true;
        }
        if may_spin && k.running(ch.owner) {
            return self.spin(k);
        }
        if !first {
            ch.lock_waiters.push_back(tid);
        }
        self.lock_sleeps += 1;
        Acquire::Sleep
    }

    /// The syscall's entry (with `pre_ns`, its body's part before the
    /// lock), then `mutex_lock`: what the task does next until it holds
    /// the mutex of pipe `c` (`None`: it holds it now).
    /// The entry (with the previous syscall's exit) starts with the return
    /// to user space between the two syscalls, where Linux's
    /// `exit_to_user_mode_loop` takes a lazy request too: before the
    /// mutex is taken, not with it held.
    fn enter_and_lock(&mut self, k: &mut Kernel, c: u32, tid: u32, pre_ns: u64) -> Option<Next> {
        let t = tid as usize;
        if !self.locking[t].entering {
            self.locking[t].entering = true;
            let ns = k.rng(tid).jitter(self.syscall_ns + pre_ns, 10);
            self.locking[t].fresh = true;
            return Some(if self.user_return_first {
                Next::Run(ns)
            } else {
                Next::RunKernel(ns)
            });
        }
        // A spinner switched out since its last poll was preempted:
        // Linux's spins with preemption off and stops only at
        // `need_resched()`, then `schedule()`s.
        let switch_in = k.tasks[t].nr_switch_in;
        let l = &mut self.locking[t];
        let respin = l.spin_switch_in != NOT_SPINNING && l.spin_switch_in != switch_in;
        if respin && self.spin_resched && !l.spin_stopped {
            l.spin_stopped = true;
            self.lock_spin_stops += 1;
        }
        let may_spin = !std::mem::take(&mut l.spin_stopped);
        // `__mutex_trylock_fast`: the first try after the entry, the
        // mutex free and nobody on its wait list.
        let fresh = std::mem::take(&mut l.fresh) && self.waits[c as usize].lock_waiters.is_empty();
        let got = self.acquire(k, c, tid, may_spin);
        self.locking[t].fast = fresh && matches!(got, Acquire::Taken);
        if !matches!(got, Acquire::Spin | Acquire::Resched) && self.locking[t].lock_woken {
            self.locking[t].lock_woken = false;
            self.waits[c as usize].woken -= 1;
        }
        self.locking[t].spin_switch_in = NOT_SPINNING;
        match got {
            Acquire::Spin => {
                if respin {
                    self.lock_respins += 1;
                }
                self.locking[t].spin_switch_in = switch_in;
                if self.poll_cut {
                    k.burst_leaves_at_resched(tid);
                }
                Some(Next::RunKernel(SPIN_POLL_NS))
            }
            // `schedule()` (the request pending, a kernel preemption
            // point switches it out), then the try once it runs again.
            Acquire::Resched => {
                self.locking[t].spin_stopped = true;
                Some(Next::RunKernel(0))
            }
            Acquire::Sleep => Some(Next::Block),
            Acquire::Taken => None,
        }
    }

    /// `mutex_unlock`: frees the mutex and wakes the first sleeper
    /// (`wake_up_q`: no WF_SYNC), which then tries again. With
    /// `Mechanisms::mutex_handoff` the first waiter stays on the list and
    /// is woken again (a no-op if awake), and with `MUTEX_FLAG_HANDOFF`
    /// set the mutex becomes its (`__mutex_handoff`) instead of free.
    fn release(&mut self, k: &mut Kernel, c: u32) {
        let ch = &mut self.waits[c as usize];
        ch.owner = NO_OWNER;
        let w = if self.handoff {
            let w = ch.lock_waiters.front().copied();
            if let (Some(w), true) = (w, ch.handoff) {
                ch.owner = w;
                ch.handoff = false;
                self.lock_handoffs += 1;
            }
            w
        } else {
            ch.lock_waiters.pop_front()
        };
        if let Some(w) = w {
            let l = &mut self.locking[w as usize];
            if k.wake(w, false) && !l.lock_woken {
                l.lock_woken = true;
                ch.woken += 1;
                self.lock_woken_max = self.lock_woken_max.max(ch.woken);
            }
        }
    }

    /// The step with the pipe mutex (pipes only; unix stream sockets take
    /// spinlocks on this path, `unix_state_lock`, whose holder cannot be
    /// preempted). Each `write`/`read` is syscall entry and exit
    /// (`syscall_ns`, outside the mutex) then its body: with
    /// `Mechanisms::pipe_mutex_split` its part outside the mutex with the
    /// entry and the measured hold under it, else all of it under it. As
    /// `pipe_write`/`pipe_read`, a task that finds the pipe full (empty)
    /// drops the mutex and sleeps on the pipe, and takes the mutex again
    /// when woken; wakeups of the other side come after the unlock.
    fn step_mutex(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let total = self.total();
        let t = tid as usize;
        match self.tasks[t].role {
            Role::Sender {
                g,
                mut sent,
                pending,
            } => {
                if let Some(c) = pending {
                    // The write's body is done: unlock, then wake.
                    self.count_hold(k, t);
                    self.release(k, c);
                    let ch = &mut self.chans[c as usize];
                    let was_empty = ch.queued == 0;
                    ch.reserved -= 1;
                    ch.queued += 1;
                    sent += 1;
                    if ch.reader_waiting && was_empty {
                        ch.reader_waiting = false;
                        let r = self.waits[c as usize].reader;
                        k.wake(r, true);
                    }
                    // `wake_next_writer` (`anon_pipe_write`): set once the
                    // writer slept for room, cleared if the pipe is full.
                    let slept = std::mem::take(&mut self.locking[t].wr_slept);
                    if !self.is_full(c) && (slept || !self.wake_next_writer) {
                        if let Some(w) = self.pop_writer(c) {
                            if !slept {
                                self.next_writer_wakes_unslept += 1;
                            }
                            k.wake(w, true);
                        }
                    }
                    self.tasks[t].role = Role::Sender {
                        g,
                        sent,
                        pending: None,
                    };
                }
                if sent == total {
                    return self.exit(k);
                }
                let c = g * FDS as u32 + sent % FDS as u32;
                if let Some(next) = self.enter_and_lock(k, c, tid, self.write_pre_ns) {
                    return next;
                }
                // A writer that slept in this write takes a new page.
                let merge = !self.locking[t].wr_slept;
                if !self.has_room(c, merge) {
                    let ch = &self.chans[c as usize];
                    if ch.queued + ch.reserved < self.cap {
                        self.full_sleeps_below_cap += 1;
                    }
                    self.push_writer(c, tid);
                    self.locking[t].wr_slept = true;
                    self.pipe_full_sleeps += 1;
                    self.release(k, c);
                    return Next::Block;
                }
                self.locking[t].entering = false;
                self.chans[c as usize].reserved += 1;
                if self.pages {
                    self.waits[c as usize].pages.write(merge);
                }
                self.tasks[t].role = Role::Sender {
                    g,
                    sent,
                    pending: Some(c),
                };
                self.hold_starts(k, t);
                self.hold(k.rng(tid).jitter(self.write_hold_ns, 10), t)
            }
            Role::Receiver {
                ch: c,
                mut left,
                pending,
                was_full,
            } => {
                if pending {
                    left -= 1;
                    self.release(k, c);
                    self.count_hold(k, t);
                    if was_full {
                        self.reader_writer_wakes += 1;
                        if let Some(w) = self.pop_writer(c) {
                            k.wake(w, true);
                        }
                    }
                    self.tasks[t].role = Role::Receiver {
                        ch: c,
                        left,
                        pending: false,
                        was_full: false,
                    };
                }
                if left == 0 {
                    return self.exit(k);
                }
                if let Some(next) = self.enter_and_lock(k, c, tid, self.read_pre_ns) {
                    return next;
                }
                let ch = &mut self.chans[c as usize];
                if ch.queued == 0 {
                    ch.reader_waiting = true;
                    self.release(k, c);
                    return Next::Block;
                }
                self.locking[t].entering = false;
                // Whether the read wakes a writer after its unlock.
                let full = if self.pages {
                    let pages = &mut self.waits[c as usize].pages;
                    debug_assert_eq!(pages.messages(), self.chans[c as usize].queued);
                    let wakes = pages.read();
                    if !wakes && self.chans[c as usize].queued >= self.cap {
                        self.full_reads_no_wake += 1;
                    }
                    wakes
                } else {
                    let ch = &self.chans[c as usize];
                    ch.queued + ch.reserved >= self.cap
                };
                self.chans[c as usize].queued -= 1;
                self.tasks[t].role = Role::Receiver {
                    ch: c,
                    left,
                    pending: true,
                    was_full: full,
                };
                self.hold_starts(k, t);
                self.hold(k.rng(tid).jitter(self.read_hold_ns, 10), t)
            }
        }
    }

    /// Pipe `c` is full for the end of a write (`pipe_is_full`): every
    /// slot in use with `Mechanisms::pipe_pages`, else 640 messages.
    fn is_full(&self, c: u32) -> bool {
        if self.pages {
            self.waits[c as usize].pages.is_full()
        } else {
            let ch = &self.chans[c as usize];
            ch.queued + ch.reserved >= self.cap
        }
    }

    /// A write to pipe `c` finds room (`merge`: it may merge into the last
    /// page, with `Mechanisms::pipe_pages`).
    fn has_room(&self, c: u32, merge: bool) -> bool {
        if self.pages {
            self.waits[c as usize].pages.has_room(merge)
        } else {
            !self.is_full(c)
        }
    }

    /// A write's and a read's body (the syscall less its entry and exit,
    /// [`Hackbench::syscall_ns`]): its part under the pipe mutex, all of it
    /// unless `Mechanisms::pipe_mutex_split` gives the measured hold
    /// ([`crate::machine::LockShares::pipe_write_mutex_ns`]), and the rest,
    /// run before `mutex_lock`.
    fn split_hold(&mut self, m: &crate::machine::Machine) {
        let (w, r) = (
            self.write_ns - self.syscall_ns,
            self.read_ns - self.syscall_ns,
        );
        let split = self.mutex && m.mech.pipe_mutex_split;
        let hold = |measured: u64, body: u64| {
            if split && measured > 0 {
                measured.min(body)
            } else {
                body
            }
        };
        self.write_hold_ns = hold(m.locks.pipe_write_mutex_ns, w);
        self.read_hold_ns = hold(m.locks.pipe_read_mutex_ns, r);
        self.write_pre_ns = w - self.write_hold_ns;
        self.read_pre_ns = r - self.read_hold_ns;
    }

    /// Task `t`'s body under the mutex starts now.
    fn hold_starts(&mut self, k: &Kernel, t: usize) {
        let l = &mut self.locking[t];
        l.held_since = k.now;
        l.held_switch_in = k.tasks[t].nr_switch_in;
    }

    /// Task `t`'s body under the mutex ends now ([`Hackbench::lock_hold_ns`]).
    fn count_hold(&mut self, k: &Kernel, t: usize) {
        let l = &self.locking[t];
        let ns = k.now - l.held_since;
        self.lock_hold_ns += ns;
        self.lock_holds += 1;
        if k.tasks[t].nr_switch_in != l.held_switch_in {
            self.lock_holds_preempted += 1;
            self.lock_hold_preempted_ns += ns;
            if l.fast {
                self.lock_fast_holds_preempted += 1;
            }
        }
        if l.fast {
            self.lock_fast_holds += 1;
        }
    }

    /// Task `t`'s body under the mutex it has just taken: after the fast
    /// path it goes on with no preemption point
    /// (`Mechanisms::mutex_fast_path`).
    fn hold(&self, ns: u64, t: usize) -> Next {
        if self.fast_path && self.locking[t].fast {
            Next::RunOn(ns)
        } else {
            self.body(ns)
        }
    }

    /// A `write`/`read` body under the pipe mutex: kernel code, where only
    /// an immediate request preempts (full, lazy); with `--no-pipe-user-return`
    /// the earlier model's burst that starts with a return to user space.
    #[inline]
    fn body(&self, ns: u64) -> Next {
        if self.user_return_first {
            Next::RunKernel(ns)
        } else {
            Next::Run(ns)
        }
    }

    fn spawn_of(&self, tid: usize) -> Spawn {
        Spawn {
            mm: if self.cfg.threads { 0 } else { tid as u32 + 1 },
            footprint: 32 << 10,
            wakee_flips: self.cfg.flips,
            ..Default::default()
        }
    }

    fn exit(&mut self, k: &mut Kernel) -> Next {
        self.alive -= 1;
        if self.alive == 0 {
            self.end = k.now;
            k.stop = true;
        }
        Next::Exit
    }
}

// ---------------------------------------------------------------- schbench

/// `NAME_p50_us`, `NAME_p90_us` and `NAME_p99_us` of the ns latencies
/// `sorted` (lower is better): schbench's and lcschbench's latency rows.
fn push_latency_percentiles(out: &mut Vec<Metric>, name: &str, sorted: &[u64]) {
    for p in [50.0, 90.0, 99.0] {
        out.push(Metric::new(
            &format!("{name}_p{}_us", p as u32),
            percentile(sorted, p) as f64 / 1000.0,
            false,
        ));
    }
}

/// schbench parameters.
#[derive(Clone, Copy)]
pub struct SchbenchCfg {
    /// Message threads (`-m`).
    pub message: usize,
    /// Workers per message thread (`-t`).
    pub workers: usize,
    /// The request's sleep, µs.
    pub sleep_us: u64,
    /// The request's CPU work, µs.
    pub work_us: u64,
    /// Warm-up not counted (schbench's `-w`), ns; 0: none (module docs,
    /// "Warm-up").
    pub warmup_ns: u64,
}

/// As derived, without `warmup_ns` (module docs, "Warm-up"): the boot seed
/// of a run does not depend on what is counted.
impl std::fmt::Debug for SchbenchCfg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchbenchCfg")
            .field("message", &self.message)
            .field("workers", &self.workers)
            .field("sleep_us", &self.sleep_us)
            .field("work_us", &self.work_us)
            .finish()
    }
}

#[derive(Clone, Copy, Debug)]
enum SRole {
    Msg { m: u32, waking: bool },
    Worker { m: u32, phase: u8, start: u64 },
}

/// The schbench model.
#[derive(Debug)]
pub struct Schbench {
    cfg: SchbenchCfg,
    roles: Vec<SRole>,
    lists: Vec<Vec<u32>>,
    msg_tid: Vec<u32>,
    req_lat: Vec<u64>,
    done: u64,
    /// Wakeup latencies recorded before the warm-up ended (`k.lat[0]`'s
    /// length at the first step at or after `warmup_ns`); `None` until then.
    lat_skip: Option<usize>,
}

impl Schbench {
    /// A run of `cfg`.
    pub fn new(cfg: SchbenchCfg) -> Self {
        Schbench {
            cfg,
            roles: Vec::new(),
            lists: Vec::new(),
            msg_tid: Vec::new(),
            req_lat: Vec::new(),
            done: 0,
            lat_skip: (cfg.warmup_ns == 0).then_some(0),
        }
    }

    /// Tasks it creates.
    pub fn nr_tasks(cfg: &SchbenchCfg) -> usize {
        cfg.message * (cfg.workers + 1)
    }
}

impl Workload for Schbench {
    fn init(&mut self, k: &mut Kernel) {
        for m in 0..self.cfg.message {
            let tid = k.spawn(Spawn {
                footprint: 16 << 10,
                ..Default::default()
            });
            self.msg_tid.push(tid);
            self.roles.push(SRole::Msg {
                m: m as u32,
                waking: false,
            });
            self.lists.push(Vec::new());
            for _ in 0..self.cfg.workers {
                k.spawn(Spawn {
                    footprint: 256 << 10,
                    lat_class: Some(0),
                    ..Default::default()
                });
                self.roles.push(SRole::Worker {
                    m: m as u32,
                    phase: 0,
                    start: 0,
                });
            }
        }
    }

    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        if self.lat_skip.is_none() && k.now >= self.cfg.warmup_ns {
            self.lat_skip = Some(k.lat.first().map_or(0, Vec::len));
        }
        match self.roles[tid as usize] {
            SRole::Msg { m, waking } => {
                if waking {
                    let list = std::mem::take(&mut self.lists[m as usize]);
                    for &w in &list {
                        if let SRole::Worker { phase, .. } = &mut self.roles[w as usize] {
                            *phase = 1;
                        }
                        if let SRole::Worker { start, .. } = &mut self.roles[w as usize] {
                            *start = k.now;
                        }
                        k.wake(w, false);
                    }
                    self.lists[m as usize] = list;
                    self.lists[m as usize].clear();
                    self.roles[tid as usize] = SRole::Msg { m, waking: false };
                    return Next::Block;
                }
                if self.lists[m as usize].is_empty() {
                    return Next::Block;
                }
                let n = self.lists[m as usize].len() as u64;
                self.roles[tid as usize] = SRole::Msg { m, waking: true };
                Next::Run(n * 1000)
            }
            SRole::Worker { m, phase, start } => match phase {
                0 => {
                    // First run, or a request done: queue on the list, wake
                    // the message thread, sleep.
                    self.lists[m as usize].push(tid);
                    let mt = self.msg_tid[m as usize];
                    k.wake(mt, false);
                    Next::Block
                }
                1 => {
                    self.roles[tid as usize] = SRole::Worker { m, phase: 2, start };
                    k.nanosleep(self.cfg.sleep_us * 1000)
                }
                2 => {
                    self.roles[tid as usize] = SRole::Worker { m, phase: 3, start };
                    Next::RunUser(k.rng(tid).jitter(self.cfg.work_us * 1000, 10))
                }
                _ => {
                    if k.now >= self.cfg.warmup_ns {
                        self.req_lat.push(k.now - start);
                        self.done += 1;
                    }
                    self.roles[tid as usize] = SRole::Worker { m, phase: 0, start };
                    self.lists[m as usize].push(tid);
                    let mt = self.msg_tid[m as usize];
                    k.wake(mt, false);
                    Next::Block
                }
            },
        }
    }

    fn metrics(&mut self, k: &Kernel) -> Vec<Metric> {
        let all = k.lat.first().map_or(&[][..], Vec::as_slice);
        // A run that ended inside its warm-up counted nothing.
        let mut w = all[self.lat_skip.unwrap_or(all.len()).min(all.len())..].to_vec();
        w.sort_unstable();
        self.req_lat.sort_unstable();
        let mut out = Vec::new();
        push_latency_percentiles(&mut out, "wakeup", &w);
        push_latency_percentiles(&mut out, "request", &self.req_lat);
        out.push(Metric::new(
            "rps",
            self.done as f64 / (measured_ns(k.now, self.cfg.warmup_ns) as f64 / 1e9),
            true,
        ));
        out
    }
}

// ---------------------------------------------------------------- dbench

/// dbench-like parameters.
#[derive(Clone, Copy, Debug)]
pub struct DbenchCfg {
    /// Clients.
    pub clients: usize,
    /// Operations per loadfile.
    pub ops: usize,
    /// Kernel workers (unbound pool; ignored when `bound`).
    pub workers: usize,
    /// One kworker per CPU, pinned, serving the work queued on its CPU (a
    /// bound workqueue: `queue_work` queues on the local CPU's pool).
    pub bound: bool,
}

#[derive(Clone, Copy, Debug)]
enum DRole {
    /// phase 0: start the next operation; 1: its compute burst is done;
    /// 2: woken after its I/O completed.
    Client { done: u32, phase: u8 },
    /// phase 0: the request's CPU work is done; 1: its device wait is done.
    /// `q`: the queue it serves.
    Worker { q: u32, req: Option<u32>, phase: u8 },
}

/// The dbench-like model.
#[derive(Debug)]
pub struct Dbench {
    cfg: DbenchCfg,
    roles: Vec<DRole>,
    queues: Vec<std::collections::VecDeque<u32>>,
    idle_workers: Vec<Vec<u32>>,
    /// When each client that has finished its first loadfile finished it.
    finish: Vec<u64>,
    /// Per client: it has finished its first loadfile (it replays it since).
    looped: Vec<bool>,
    /// Clients still in their first loadfile: the run ends at 0.
    alive: usize,
    /// Operations completed by all clients, every loadfile counted.
    ops_done: u64,
    /// Per queue, with concurrency-managed pools: the workers counted as
    /// running (`pool->nr_running`): woken to work or at work, not asleep
    /// in an item or idle.
    running: Vec<u32>,
    /// Concurrency-managed bound pools (`bound` and
    /// `Mechanisms::wq_concurrency`).
    managed: bool,
    /// Times an item waited with the pool out of idle workers (Linux
    /// would create one; the pool here is fixed at [`KWORKERS_PER_CPU`]).
    pub pool_dry: u64,
    /// When the last client finished its first loadfile (the run's end).
    end_ns: Option<u64>,
}

impl Dbench {
    /// A run of `cfg`.
    pub fn new(cfg: DbenchCfg) -> Self {
        Dbench {
            cfg,
            roles: Vec::new(),
            queues: Vec::new(),
            idle_workers: Vec::new(),
            finish: Vec::new(),
            looped: Vec::new(),
            alive: 0,
            ops_done: 0,
            end_ns: None,
            running: Vec::new(),
            managed: false,
            pool_dry: 0,
        }
    }

    /// Tasks it creates at most on a machine of `nr_cpus` (the bound pools'
    /// [`KWORKERS_PER_CPU`] workers per CPU; one under
    /// `--no-wq-concurrency`).
    pub fn nr_tasks(cfg: &DbenchCfg, nr_cpus: usize) -> usize {
        cfg.clients
            + if cfg.bound {
                nr_cpus * KWORKERS_PER_CPU
            } else {
                cfg.workers
            }
    }

    /// A bound pool's worker `w` of queue `q` is done with what it ran (or
    /// was just woken): it takes the next item while no other worker of
    /// the pool runs (`keep_working`, `need_more_worker`), else it goes
    /// idle. `w` is counted in `running[q]`.
    fn managed_next(&mut self, k: &mut Kernel, w: u32, q: u32) -> Next {
        let qi = q as usize;
        if self.running[qi] <= 1 {
            if let Some(c) = self.queues[qi].pop_front() {
                self.roles[w as usize] = DRole::Worker {
                    q,
                    req: Some(c),
                    phase: 0,
                };
                return Next::Run(k.rng(w).jitter(15_000, 10));
            }
        }
        self.running[qi] -= 1;
        self.roles[w as usize] = DRole::Worker {
            q,
            req: None,
            phase: 0,
        };
        self.idle_workers[qi].push(w);
        Next::Block
    }

    /// Wakes an idle worker of bound pool `q` if items wait and none of its
    /// workers runs (`kick_pool`).
    fn kick_pool(&mut self, k: &mut Kernel, q: usize) {
        if self.running[q] > 0 || self.queues[q].is_empty() {
            return;
        }
        match self.idle_workers[q].pop() {
            Some(w) => {
                self.running[q] += 1;
                k.wake(w, false);
            }
            None => self.pool_dry += 1,
        }
    }
}

/// Workers per CPU of a concurrency-managed bound pool. Linux creates a
/// pool's workers as it needs them and keeps idle ones for minutes
/// (`IDLE_WORKER_TIMEOUT`, 300 s), so within a run a pool has as many as
/// its items ever sleep in at once; a fixed number here, enough that the
/// study's runs never find a pool without an idle worker
/// ([`Dbench::pool_dry`]), with no cost of creating one.
pub const KWORKERS_PER_CPU: usize = 8;

impl Workload for Dbench {
    fn init(&mut self, k: &mut Kernel) {
        for _ in 0..self.cfg.clients {
            let t = k.spawn(Spawn {
                mm: k.tasks.len() as u32 + 1,
                footprint: 128 << 10,
                ..Default::default()
            });
            let _ = t;
            self.roles.push(DRole::Client { done: 0, phase: 0 });
        }
        self.managed = self.cfg.bound && k.m.mech.wq_concurrency;
        let (nw, nq) = if self.managed {
            (k.nr_cpus() * KWORKERS_PER_CPU, k.nr_cpus())
        } else if self.cfg.bound {
            (k.nr_cpus(), k.nr_cpus())
        } else {
            (self.cfg.workers, 1)
        };
        self.queues = vec![Default::default(); nq];
        self.idle_workers = vec![Vec::new(); nq];
        // Each worker runs once at the start and goes idle.
        self.running = vec![(nw / nq) as u32; nq];
        for i in 0..nw {
            k.spawn(Spawn {
                mm: 0,
                footprint: 64 << 10,
                pin: self.cfg.bound.then_some((i % nq) as u32),
                ..Default::default()
            });
            self.roles.push(DRole::Worker {
                q: (i % nq) as u32,
                req: None,
                phase: 0,
            });
        }
        self.alive = self.cfg.clients;
        self.looped = vec![false; self.cfg.clients];
    }

    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        match self.roles[tid as usize] {
            DRole::Client { mut done, phase } => {
                if phase == 1 {
                    if k.rng(tid).below(2) == 0 {
                        // Hand the I/O to a worker and wait for it.
                        let q = if self.cfg.bound { k.this_cpu() } else { 0 };
                        self.queues[q].push_back(tid);
                        if self.managed {
                            self.kick_pool(k, q);
                        } else if let Some(w) = self.idle_workers[q].pop() {
                            k.wake(w, false);
                        }
                        self.roles[tid as usize] = DRole::Client { done, phase: 2 };
                        return Next::Block;
                    }
                    done += 1;
                    self.ops_done += 1;
                } else if phase == 2 {
                    done += 1;
                    self.ops_done += 1;
                }
                if done as usize >= self.cfg.ops {
                    // The loadfile is done: the client starts it again.
                    done = 0;
                    if !self.looped[tid as usize] {
                        self.looped[tid as usize] = true;
                        self.finish.push(k.now);
                        self.alive -= 1;
                        if self.alive == 0 {
                            self.end_ns = Some(k.now);
                            k.stop = true;
                        }
                    }
                }
                self.roles[tid as usize] = DRole::Client { done, phase: 1 };
                Next::RunUser(k.rng(tid).exp(20_000))
            }
            DRole::Worker { q, req, phase } if self.managed => {
                if let Some(c) = req {
                    if phase == 0 && k.rng(tid).below(10) < 3 {
                        // Asleep in the item: the pool runs its next
                        // item on another worker (`wq_worker_sleeping`).
                        self.roles[tid as usize] = DRole::Worker { q, req, phase: 1 };
                        self.running[q as usize] -= 1;
                        self.kick_pool(k, q as usize);
                        return Next::Sleep(k.rng(tid).jitter(100_000, 10));
                    }
                    if phase == 1 {
                        // Awake again (`wq_worker_running`).
                        self.running[q as usize] += 1;
                    }
                    k.wake(c, false);
                }
                self.managed_next(k, tid, q)
            }
            DRole::Worker { q, req, phase } => {
                if let Some(c) = req {
                    if phase == 0 && k.rng(tid).below(10) < 3 {
                        self.roles[tid as usize] = DRole::Worker { q, req, phase: 1 };
                        return Next::Sleep(k.rng(tid).jitter(100_000, 10));
                    }
                    k.wake(c, false);
                }
                match self.queues[q as usize].pop_front() {
                    Some(c) => {
                        self.roles[tid as usize] = DRole::Worker {
                            q,
                            req: Some(c),
                            phase: 0,
                        };
                        Next::Run(k.rng(tid).jitter(15_000, 10))
                    }
                    None => {
                        self.roles[tid as usize] = DRole::Worker {
                            q,
                            req: None,
                            phase: 0,
                        };
                        self.idle_workers[q as usize].push(tid);
                        Next::Block
                    }
                }
            }
        }
    }

    fn metrics(&mut self, k: &Kernel) -> Vec<Metric> {
        let n = self.finish.len().max(1) as f64;
        // A run cut by its time limit ends there.
        let end = self.end_ns.unwrap_or(k.now);
        let mean = self.finish.iter().sum::<u64>() as f64 / n;
        vec![
            Metric::new(
                "throughput_mbs",
                self.ops_done as f64 * 64.0 / 1024.0 / (end as f64 / 1e9),
                true,
            ),
            Metric::new("loadfile_ms", mean / 1e6, false),
            Metric::new("all_clients_ms", end as f64 / 1e6, false),
        ]
    }
}

// ---------------------------------------------------------------- pgbench

/// pgbench-like parameters.
#[derive(Clone, Copy)]
pub struct PgbenchCfg {
    /// Client/backend pairs.
    pub clients: usize,
    /// Read-write (else read-only).
    pub rw: bool,
    /// Warm-up not counted, ns; 0: none (module docs, "Warm-up").
    pub warmup_ns: u64,
}

/// As derived, without `warmup_ns` (module docs, "Warm-up"): the boot seed
/// of a run does not depend on what is counted.
impl std::fmt::Debug for PgbenchCfg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgbenchCfg")
            .field("clients", &self.clients)
            .field("rw", &self.rw)
            .finish()
    }
}

/// The measured time of a run that ended at `now_ns` with a warm-up of
/// `warmup_ns`: what follows the warm-up (at least 1 ns, so that a run
/// that ended inside its warm-up reports a rate of 0, not NaN).
fn measured_ns(now_ns: u64, warmup_ns: u64) -> u64 {
    if warmup_ns == 0 {
        now_ns
    } else {
        now_ns.saturating_sub(warmup_ns).max(1)
    }
}

#[derive(Clone, Copy, Debug)]
enum PRole {
    Client { sent: bool, start: u64 },
    Server { phase: u8 },
}

/// No one: a free row lock's owner, an empty queue's end.
const NOBODY: u32 = u32::MAX;

/// Sleeping locks with FIFO waiters and handoff, as PostgreSQL's row locks
/// behave for pgbench's updates (module docs, "pgbench-like"): a lock has
/// at most one owner; a waiter queues at the tail; a release hands the lock
/// to the head waiter, which owns it from then on (it is woken to run, not
/// to try again), or frees it. Each waiter waits on one lock at a time, so
/// one link per waiter chains every queue: no allocation after
/// [`RowLocks::new`].
#[derive(Debug)]
pub struct RowLocks {
    owner: Vec<u32>,
    head: Vec<u32>,
    tail: Vec<u32>,
    next: Vec<u32>,
}

impl RowLocks {
    /// `locks` free locks for waiters `0..waiters`.
    pub fn new(locks: usize, waiters: usize) -> Self {
        RowLocks {
            owner: vec![NOBODY; locks],
            head: vec![NOBODY; locks],
            tail: vec![NOBODY; locks],
            next: vec![NOBODY; waiters],
        }
    }

    /// `lock`'s owner, if any.
    pub fn owner(&self, lock: usize) -> Option<u32> {
        let o = self.owner[lock];
        (o != NOBODY).then_some(o)
    }

    /// Takes `lock` for `who` if it is free (true), else queues `who` at
    /// its tail (false). Panics if `who` owns it already.
    pub fn acquire(&mut self, lock: usize, who: u32) -> bool {
        assert_ne!(
            self.owner[lock], who,
            "waiter {who} owns lock {lock} already"
        );
        if self.owner[lock] == NOBODY {
            self.owner[lock] = who;
            return true;
        }
        self.next[who as usize] = NOBODY;
        match self.tail[lock] {
            NOBODY => self.head[lock] = who,
            t => self.next[t as usize] = who,
        }
        self.tail[lock] = who;
        false
    }

    /// `who`, the owner, releases `lock`: the head waiter, if any, owns it
    /// now and is returned (to be woken). Panics if `who` is not the owner.
    pub fn release(&mut self, lock: usize, who: u32) -> Option<u32> {
        assert_eq!(self.owner[lock], who, "lock {lock} released by a non-owner");
        let w = self.head[lock];
        if w == NOBODY {
            self.owner[lock] = NOBODY;
            return None;
        }
        self.head[lock] = self.next[w as usize];
        if self.head[lock] == NOBODY {
            self.tail[lock] = NOBODY;
        }
        self.next[w as usize] = NOBODY;
        self.owner[lock] = w;
        Some(w)
    }
}

/// pgbench's tables at scale 1 (`naccounts`, `ntellers`, `nbranches` of
/// pgbench.c, times the scale): one row lock each, accounts first.
const PG_ACCOUNTS: usize = 100_000;
const PG_TELLERS: usize = 10;
const PG_BRANCHES: usize = 1;

/// The statements of pgbench's built-in `tpcb-like` transaction: BEGIN,
/// UPDATE pgbench_accounts, SELECT abalance, UPDATE pgbench_tellers,
/// UPDATE pgbench_branches, INSERT INTO pgbench_history, END.
const PG_STATEMENTS: u8 = 7;
/// The last statement, END: the commit.
const PG_END: u8 = PG_STATEMENTS - 1;
/// The read-write backend work, 60 µs a transaction, split evenly over its
/// statements (a split of the model's cost, not a measurement), ns.
const PG_RW_STATEMENT_NS: u64 = 60_000 / PG_STATEMENTS as u64;
/// The client's 4 µs a transaction, split evenly over its statements, ns.
const PG_RW_CLIENT_NS: u64 = 4_000 / PG_STATEMENTS as u64;

/// A statement-model backend's phase ([`PRole::Server`]'s `phase`).
const PG_IDLE: u8 = 0;
const PG_WORKING: u8 = 1;
const PG_FLUSHING: u8 = 2;
const PG_WAITING: u8 = 3;

/// The pgbench-like model.
#[derive(Debug)]
pub struct Pgbench {
    cfg: PgbenchCfg,
    roles: Vec<PRole>,
    pending: Vec<bool>,
    tx: u64,
    lat_sum: u64,
    /// Read-write with [`crate::machine::Mechanisms::row_lock`]: the
    /// rows' locks (accounts, tellers, branches), waiters by pair.
    locks: Option<RowLocks>,
    /// Per pair, the statement its client sent last (statement model).
    stmt: Vec<u8>,
    /// Per pair, the locks of its transaction's account, teller and branch.
    rows: Vec<[u32; 3]>,
}

impl Pgbench {
    /// A run of `cfg`.
    pub fn new(cfg: PgbenchCfg) -> Self {
        Pgbench {
            cfg,
            roles: Vec::new(),
            pending: vec![false; cfg.clients],
            tx: 0,
            lat_sum: 0,
            locks: None,
            stmt: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// The row lock pair `pair`'s current statement takes, if any: the
    /// account's (UPDATE pgbench_accounts), the teller's, the branch's.
    fn statement_lock(&self, pair: usize) -> Option<usize> {
        match self.stmt[pair] {
            1 => Some(self.rows[pair][0] as usize),
            3 => Some(self.rows[pair][1] as usize),
            4 => Some(self.rows[pair][2] as usize),
            _ => None,
        }
    }

    /// [`Workload::step`] of the statement model (read-write with row
    /// locks; module docs, "pgbench-like").
    fn step_statements(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let pair = (tid / 2) as usize;
        match self.roles[tid as usize] {
            PRole::Client { sent, start } => {
                if sent {
                    // A statement's reply arrived.
                    if self.stmt[pair] == PG_END {
                        if k.now >= self.cfg.warmup_ns {
                            self.tx += 1;
                            self.lat_sum += k.now - start;
                        }
                        self.stmt[pair] = 0;
                    } else {
                        self.stmt[pair] += 1;
                    }
                    self.roles[tid as usize] = PRole::Client { sent: false, start };
                    return Next::RunUser(k.rng(tid).jitter(PG_RW_CLIENT_NS, 10));
                }
                let start = if self.stmt[pair] == 0 {
                    // The script's `\set`s: the rows of this transaction.
                    let r = k.rng(tid);
                    let aid = r.below(PG_ACCOUNTS as u64) as u32;
                    let tid_row = r.below(PG_TELLERS as u64) as u32;
                    let t0 = PG_ACCOUNTS as u32;
                    let b0 = t0 + PG_TELLERS as u32;
                    self.rows[pair] = [aid, t0 + tid_row, b0];
                    k.now
                } else {
                    start
                };
                self.roles[tid as usize] = PRole::Client { sent: true, start };
                self.pending[pair] = true;
                k.wake(tid + 1, true);
                Next::Block
            }
            PRole::Server { phase } => {
                match phase {
                    PG_WORKING if self.stmt[pair] == PG_END => {
                        // The commit's WAL flush, every lock still held.
                        self.roles[tid as usize] = PRole::Server { phase: PG_FLUSHING };
                        return Next::Sleep(k.rng(tid).jitter(900_000, 10));
                    }
                    PG_WORKING => {
                        k.wake(tid - 1, true);
                    }
                    PG_FLUSHING => {
                        // The transaction ends: its locks go to their
                        // first waiters, then the reply.
                        let locks = self.locks.as_mut().expect("statement model");
                        for lock in self.rows[pair] {
                            if let Some(w) = locks.release(lock as usize, pair as u32) {
                                k.wake(2 * w + 1, false);
                            }
                        }
                        k.wake(tid - 1, true);
                    }
                    PG_WAITING => {
                        let lock = self.statement_lock(pair).expect("a waiter waits on a lock");
                        let locks = self.locks.as_ref().expect("statement model");
                        if locks.owner(lock) != Some(pair as u32) {
                            return Next::Block;
                        }
                        // Handed the lock: the statement's work.
                        self.roles[tid as usize] = PRole::Server { phase: PG_WORKING };
                        return Next::RunUser(k.rng(tid).jitter(PG_RW_STATEMENT_NS, 10));
                    }
                    _ => {}
                }
                if self.pending[pair] {
                    self.pending[pair] = false;
                    if let Some(lock) = self.statement_lock(pair) {
                        let locks = self.locks.as_mut().expect("statement model");
                        if !locks.acquire(lock, pair as u32) {
                            self.roles[tid as usize] = PRole::Server { phase: PG_WAITING };
                            return Next::Block;
                        }
                    }
                    self.roles[tid as usize] = PRole::Server { phase: PG_WORKING };
                    return Next::RunUser(k.rng(tid).jitter(PG_RW_STATEMENT_NS, 10));
                }
                self.roles[tid as usize] = PRole::Server { phase: PG_IDLE };
                Next::Block
            }
        }
    }

    /// Tasks it creates.
    pub fn nr_tasks(cfg: &PgbenchCfg) -> usize {
        2 * cfg.clients
    }
}

impl Workload for Pgbench {
    fn init(&mut self, k: &mut Kernel) {
        for _ in 0..self.cfg.clients {
            let mm = k.tasks.len() as u32 + 1;
            k.spawn(Spawn {
                mm,
                footprint: 64 << 10,
                ..Default::default()
            });
            self.roles.push(PRole::Client {
                sent: false,
                start: 0,
            });
            k.spawn(Spawn {
                mm: mm + 1,
                footprint: 256 << 10,
                ..Default::default()
            });
            self.roles.push(PRole::Server { phase: 0 });
        }
        if self.cfg.rw && k.m.mech.row_lock {
            let n = self.cfg.clients;
            self.locks = Some(RowLocks::new(PG_ACCOUNTS + PG_TELLERS + PG_BRANCHES, n));
            self.stmt = vec![0; n];
            self.rows = vec![[0; 3]; n];
        }
    }

    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        if self.locks.is_some() {
            return self.step_statements(k, tid);
        }
        match self.roles[tid as usize] {
            PRole::Client { sent, start } => {
                if sent {
                    // The reply arrived.
                    if k.now >= self.cfg.warmup_ns {
                        self.tx += 1;
                        self.lat_sum += k.now - start;
                    }
                    self.roles[tid as usize] = PRole::Client { sent: false, start };
                    return Next::RunUser(k.rng(tid).jitter(4_000, 10));
                }
                self.roles[tid as usize] = PRole::Client {
                    sent: true,
                    start: k.now,
                };
                // The query is in the socket whether or not the backend sleeps.
                self.pending[(tid / 2) as usize] = true;
                k.wake(tid + 1, true);
                Next::Block
            }
            PRole::Server { phase } => {
                let pair = (tid / 2) as usize;
                match phase {
                    1 => {
                        self.roles[tid as usize] = PRole::Server { phase: 2 };
                        return Next::Sleep(k.rng(tid).jitter(900_000, 10));
                    }
                    2 => {
                        // Reply, then wait for the next query.
                        k.wake(tid - 1, true);
                    }
                    _ => {}
                }
                if self.pending[pair] {
                    self.pending[pair] = false;
                    let w = if self.cfg.rw { 60_000 } else { 8_000 };
                    self.roles[tid as usize] = PRole::Server {
                        phase: if self.cfg.rw { 1 } else { 2 },
                    };
                    return Next::RunUser(k.rng(tid).jitter(w, 10));
                }
                self.roles[tid as usize] = PRole::Server { phase: 0 };
                Next::Block
            }
        }
    }

    fn metrics(&mut self, k: &Kernel) -> Vec<Metric> {
        let secs = measured_ns(k.now, self.cfg.warmup_ns) as f64 / 1e9;
        vec![
            Metric::new("tps", self.tx as f64 / secs, true),
            Metric::new(
                "latency_ms",
                self.lat_sum as f64 / self.tx.max(1) as f64 / 1e6,
                false,
            ),
        ]
    }
}

// ---------------------------------------------------------------- lcbench's pgbench

/// lcbench's pgbench shape (`lcpgbench`): the pgbench-like client/server
/// pair that `make linux-compare` runs in Linux and in our kernel
/// (`scripts/linux-compare/lcbench.c`, `lcbench pgbench -c C -t T [-S]`).
#[derive(Clone, Copy, Debug)]
pub struct LcPgbenchCfg {
    /// Client/backend pairs (`-c`).
    pub clients: usize,
    /// Transactions per client (`-t`).
    pub tx: u64,
    /// Read-write, seven statements a transaction (else `-S`: one).
    pub rw: bool,
    /// A consume wakes the sender asleep in its own `read`
    /// (`unix_write_space`; `space_wake=0`: no such wakeup, as a unix
    /// socket without it, or a sender waiting in `poll` for input only,
    /// would have).
    pub space_wake: bool,
}

/// A statement's backend work, ns (lcbench's `STMT_NS`).
const LC_STMT_NS: u64 = 20_000;
/// The commit's sleep after END's work, ns (lcbench's `COMMIT_SLEEP_NS`).
const LC_COMMIT_SLEEP_NS: u64 = 200_000;

/// Where a task of [`LcPgbench`] is: the step its next burst ends in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LcPhase {
    /// About to send (client) or to reply (backend): the `write`.
    Write,
    /// The `write`'s cost has run: its message is in the peer's socket.
    Written,
    /// Back in user space after a `write`: the `read`'s entry next.
    ReadEntry,
    /// In `read`, deciding (again, when woken): a message, or sleep.
    ReadDecide,
    /// The `read`'s copy has run: the message is the task's.
    Read,
    /// Backend: the statement's work (user code) has run.
    Worked,
    /// Backend: END's commit sleep has run.
    Slept,
}

/// lcbench's pgbench (module docs, "lcbench's pgbench"). Pair `p`'s
/// client is task `2p`, its backend `2p + 1`: each task's peer is
/// `tid ^ 1`.
#[derive(Debug)]
pub struct LcPgbench {
    cfg: LcPgbenchCfg,
    /// Per task: where it is.
    phase: Vec<LcPhase>,
    /// Per task: asleep in `read` on its socket (`skwq_has_sleeper`).
    reading: Vec<bool>,
    /// Per task: messages in its socket, not yet read.
    inbox: Vec<u32>,
    /// Per pair: the statement in flight, its transaction's start and the
    /// transactions done (all of them: the client's next message is the
    /// last one, which ends the backend).
    stmt: Vec<u32>,
    start: Vec<u64>,
    done: Vec<u64>,
    /// Per client: when it finished its last transaction.
    end: Vec<u64>,
    lat_sum: u64,
    alive: usize,
    write_ns: u64,
    read_ns: u64,
    syscall_ns: u64,
    /// Wakeups of a task asleep in `read` by its peer's consume of a
    /// message (`unix_write_space`), which find no message.
    space_wakeups: u64,
}

impl LcPgbench {
    /// A run of `cfg`.
    pub fn new(cfg: LcPgbenchCfg) -> Self {
        let n = cfg.clients;
        LcPgbench {
            cfg,
            phase: vec![LcPhase::Write; 2 * n],
            reading: vec![false; 2 * n],
            inbox: vec![0; 2 * n],
            stmt: vec![0; n],
            start: vec![0; n],
            done: vec![0; n],
            end: vec![0; n],
            lat_sum: 0,
            alive: 2 * n,
            write_ns: 0,
            read_ns: 0,
            syscall_ns: 0,
            space_wakeups: 0,
        }
    }

    /// Tasks it creates.
    pub fn nr_tasks(cfg: &LcPgbenchCfg) -> usize {
        2 * cfg.clients
    }

    /// Statements a transaction.
    fn statements(&self) -> u32 {
        if self.cfg.rw {
            7
        } else {
            1
        }
    }

    /// Pair `p` is through: its client has done all its transactions.
    fn through(&self, p: usize) -> bool {
        self.done[p] == self.cfg.tx
    }

    /// Wakes task `t` if it sleeps in `read` (both wakeups here are
    /// `wake_up_interruptible_sync_poll`: WF_SYNC).
    fn wake_reader(&mut self, k: &mut Kernel, t: u32) -> bool {
        if std::mem::take(&mut self.reading[t as usize]) {
            k.wake(t, true);
            true
        } else {
            false
        }
    }

    fn exit(&mut self, k: &mut Kernel) -> Next {
        self.alive -= 1;
        if self.alive == 0 {
            k.stop = true;
        }
        Next::Exit
    }

    /// The `read` of task `tid` decides: a message in its socket is taken
    /// (its peer, if asleep in its own `read`, is woken by the consume:
    /// `sock_wfree` → `unix_write_space`), or it sleeps.
    fn read_decide(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let t = tid as usize;
        if self.inbox[t] == 0 {
            self.reading[t] = true;
            return Next::Block;
        }
        self.inbox[t] -= 1;
        if self.cfg.space_wake && self.wake_reader(k, tid ^ 1) {
            self.space_wakeups += 1;
        }
        self.phase[t] = LcPhase::Read;
        Next::RunKernel(k.rng(tid).jitter(self.read_ns - self.syscall_ns, 10))
    }
}

impl Workload for LcPgbench {
    fn init(&mut self, k: &mut Kernel) {
        let c = &k.m.costs;
        (self.write_ns, self.read_ns) = (c.sock_write_ns, c.sock_read_ns);
        self.syscall_ns = c.syscall_ns.min(self.write_ns).min(self.read_ns);
        for p in 0..self.cfg.clients {
            // One process, lcbench's threads: one mm.
            for _ in 0..2 {
                k.spawn(Spawn {
                    mm: 1,
                    footprint: 16 << 10,
                    ..Default::default()
                });
            }
            // The backend starts in its `read`.
            self.phase[2 * p + 1] = LcPhase::ReadEntry;
        }
    }

    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let t = tid as usize;
        let p = t / 2;
        let client = t.is_multiple_of(2);
        match self.phase[t] {
            LcPhase::Write => {
                if client && self.stmt[p] == 0 {
                    // A transaction's start, or (all done) the last message.
                    if self.through(p) {
                        self.end[p] = k.now;
                    } else {
                        self.start[p] = k.now;
                    }
                }
                self.phase[t] = LcPhase::Written;
                Next::Run(k.rng(tid).jitter(self.write_ns, 10))
            }
            LcPhase::Written => {
                self.inbox[t ^ 1] += 1;
                // `sock_def_readable`: a sync wakeup of a reader asleep.
                self.wake_reader(k, tid ^ 1);
                if client && self.through(p) {
                    return self.exit(k);
                }
                self.phase[t] = LcPhase::ReadEntry;
                Next::ReturnToUser
            }
            LcPhase::ReadEntry => {
                self.phase[t] = LcPhase::ReadDecide;
                Next::RunKernel(k.rng(tid).jitter(self.syscall_ns, 10))
            }
            LcPhase::ReadDecide => self.read_decide(k, tid),
            LcPhase::Read if client => {
                self.stmt[p] += 1;
                if self.stmt[p] == self.statements() {
                    self.stmt[p] = 0;
                    self.done[p] += 1;
                    self.lat_sum += k.now - self.start[p];
                }
                self.phase[t] = LcPhase::Write;
                self.step(k, tid)
            }
            LcPhase::Read => {
                // The client's message after its last transaction ends it.
                if self.through(p) {
                    return self.exit(k);
                }
                let (i, n) = (self.stmt[p], self.statements());
                let work = if n == 1 || (i != 0 && i != n - 1) {
                    LC_STMT_NS
                } else {
                    LC_STMT_NS / 5
                };
                self.phase[t] = LcPhase::Worked;
                Next::RunUser(work)
            }
            LcPhase::Worked => {
                let (i, n) = (self.stmt[p], self.statements());
                if n > 1 && i == n - 1 {
                    self.phase[t] = LcPhase::Slept;
                    return k.nanosleep(LC_COMMIT_SLEEP_NS);
                }
                self.phase[t] = LcPhase::Write;
                self.step(k, tid)
            }
            LcPhase::Slept => {
                self.phase[t] = LcPhase::Write;
                self.step(k, tid)
            }
        }
    }

    fn metrics(&mut self, _k: &Kernel) -> Vec<Metric> {
        let done: u64 = self.done.iter().sum();
        let end = self.end.iter().copied().max().unwrap_or(0).max(1);
        vec![
            Metric::new("tps", done as f64 / (end as f64 / 1e9), true),
            Metric::new(
                "lat_avg_ms",
                self.lat_sum as f64 / done.max(1) as f64 / 1e6,
                false,
            ),
            Metric::new("space_wakeups", self.space_wakeups as f64, false),
        ]
    }
}

// ---------------------------------------------------------------- lcbench's schbench

/// lcbench's schbench shape (`lcschbench`, module docs): `m` message
/// threads of `t` workers each.
#[derive(Clone, Copy, Debug)]
pub struct LcSchbenchCfg {
    /// Message threads (`-m`).
    pub message: usize,
    /// Workers per message thread (`-t`).
    pub workers: usize,
    /// The worker's sleep, µs (`-s`).
    pub sleep_us: u64,
    /// The worker's walk over its buffer, µs of user code (the measured
    /// cost of `-F`'s KiB).
    pub work_us: u64,
}

/// Where a thread of [`LcSchbench`] is: the step its next burst ends in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LcsPhase {
    /// Worker: append to the list and post the message thread (the
    /// `FUTEX_WAKE` syscall's entry next).
    Post,
    /// Worker: that syscall's entry has run: wake the message thread if it
    /// sleeps.
    Posted,
    /// Either: wait on its own semaphore (a posted value is taken at once;
    /// else the `FUTEX_WAIT` syscall's entry next).
    Wait,
    /// In `FUTEX_WAIT`: a value posted meanwhile returns, else sleep.
    WaitDecide,
    /// Woken from `FUTEX_WAIT` (its post already taken for it).
    Woken,
    /// Worker: its sleep has run: the walk next.
    Slept,
    /// Worker: the walk has run: the request is done.
    Walked,
    /// Message thread: post the next worker of its list (the syscall's
    /// entry next).
    MsgPost,
    /// Message thread: that entry has run: wake the worker if it sleeps.
    MsgPosted,
}

/// lcbench's schbench (module docs, "lcbench's schbench"). Group `g`'s
/// message thread is task `g * (t + 1)`, its workers the `t` after it.
#[derive(Debug)]
pub struct LcSchbench {
    cfg: LcSchbenchCfg,
    /// Per task: where it is.
    phase: Vec<LcsPhase>,
    /// Per task: its semaphore's value (posted, not yet taken).
    sem: Vec<bool>,
    /// Per task: asleep in `FUTEX_WAIT` on its semaphore.
    waiting: Vec<bool>,
    /// Per group: the workers listed, and the message thread's copy it
    /// posts from, with the next to post.
    list: Vec<Vec<u32>>,
    mine: Vec<Vec<u32>>,
    next: Vec<usize>,
    /// Per worker task: its post's stamp, and its request's start.
    posted_at: Vec<u64>,
    started: Vec<u64>,
    wake_lat: Vec<u64>,
    req_lat: Vec<u64>,
    syscall_ns: u64,
    /// Per worker task: the CPU its post was made on; per task: it slept
    /// in `FUTEX_WAIT` since its last post was taken.
    posted_cpu: Vec<usize>,
    slept: Vec<bool>,
    /// lcbench's counters: the latencies by where the worker was (not
    /// asleep yet, asleep and run on the posting CPU, on another), count
    /// and sum in ns; the posts each way that woke a sleeper; the message
    /// threads' rounds and those that slept first.
    by_place: [(u64, u64); 3],
    msg_posts_woke: u64,
    wk_posts_woke: u64,
    msg_rounds: u64,
    msg_slept: u64,
    /// Per group: the stamp and CPU of the post that set its message
    /// thread's semaphore (before the store); of the rounds after a sleep,
    /// the sum of their latencies (that stamp to the return from the
    /// wait), ns, and those run on the CPU that posted.
    msg_posted_at: Vec<u64>,
    msg_posted_cpu: Vec<usize>,
    msg_wake_sum_ns: u64,
    msg_same: u64,
    /// The message threads' wakeups' placements, by `compare`'s rows
    /// (`sched::smp::placement_name`): the engine's counters' change
    /// across each of them.
    msg_placed: [u64; crate::engine::PLACEMENT_ROWS],
}

impl LcSchbench {
    /// A run of `cfg`.
    pub fn new(cfg: LcSchbenchCfg) -> Self {
        let (n, g) = (Self::nr_tasks(&cfg), cfg.message);
        LcSchbench {
            cfg,
            phase: vec![LcsPhase::Post; n],
            sem: vec![false; n],
            waiting: vec![false; n],
            list: vec![Vec::new(); g],
            mine: vec![Vec::new(); g],
            next: vec![0; g],
            posted_at: vec![0; n],
            started: vec![0; n],
            wake_lat: Vec::new(),
            req_lat: Vec::new(),
            syscall_ns: 0,
            posted_cpu: vec![0; n],
            slept: vec![false; n],
            by_place: [(0, 0); 3],
            msg_posts_woke: 0,
            wk_posts_woke: 0,
            msg_rounds: 0,
            msg_slept: 0,
            msg_posted_at: vec![0; g],
            msg_posted_cpu: vec![0; g],
            msg_wake_sum_ns: 0,
            msg_same: 0,
            msg_placed: [0; crate::engine::PLACEMENT_ROWS],
        }
    }

    /// Tasks it creates.
    pub fn nr_tasks(cfg: &LcSchbenchCfg) -> usize {
        cfg.message * (cfg.workers + 1)
    }

    /// Task `tid`'s group.
    fn group_of(&self, tid: u32) -> usize {
        tid as usize / (self.cfg.workers + 1)
    }

    /// The message thread of task `tid`'s group.
    fn msg_of(&self, tid: u32) -> u32 {
        (self.group_of(tid) * (self.cfg.workers + 1)) as u32
    }

    /// A syscall's entry, jittered as every cost.
    fn entry(&self, k: &mut Kernel, tid: u32) -> Next {
        Next::RunKernel(k.rng(tid).jitter(self.syscall_ns, 10))
    }

    /// Task `tid` has its semaphore's post: the worker's wakeup latency
    /// ends and its request starts (its sleep first); the message thread
    /// takes its list.
    fn got_post(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let (t, g) = (tid as usize, self.group_of(tid));
        let slept = std::mem::take(&mut self.slept[t]);
        if self.msg_of(tid) == tid {
            self.msg_rounds += 1;
            if slept {
                self.msg_slept += 1;
                self.msg_wake_sum_ns += k.now - self.msg_posted_at[g];
                self.msg_same += u64::from(k.this_cpu() == self.msg_posted_cpu[g]);
            }
            // Take the list (its copy's old contents are all posted).
            self.mine[g].clear();
            std::mem::swap(&mut self.list[g], &mut self.mine[g]);
            self.next[g] = 0;
            self.phase[t] = if self.mine[g].is_empty() {
                LcsPhase::Wait
            } else {
                LcsPhase::MsgPost
            };
            return self.step(k, tid);
        }
        let lat = k.now - self.posted_at[t];
        self.wake_lat.push(lat);
        let place = match (slept, k.this_cpu() == self.posted_cpu[t]) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => 2,
        };
        self.by_place[place].0 += 1;
        self.by_place[place].1 += lat;
        self.started[t] = k.now;
        self.phase[t] = LcsPhase::Slept;
        if self.cfg.sleep_us == 0 {
            return self.step(k, tid);
        }
        k.nanosleep(self.cfg.sleep_us * 1000)
    }
}

impl Workload for LcSchbench {
    fn init(&mut self, k: &mut Kernel) {
        self.syscall_ns = k.m.costs.syscall_ns;
        for g in 0..self.cfg.message {
            k.spawn(Spawn {
                mm: 1,
                footprint: 16 << 10,
                ..Default::default()
            });
            self.phase[g * (self.cfg.workers + 1)] = LcsPhase::Wait;
            for _ in 0..self.cfg.workers {
                k.spawn(Spawn {
                    mm: 1,
                    footprint: 256 << 10,
                    ..Default::default()
                });
            }
        }
    }

    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let t = tid as usize;
        match self.phase[t] {
            LcsPhase::Post => {
                let (m, g) = (self.msg_of(tid), self.group_of(tid));
                self.list[g].push(tid);
                if !self.sem[m as usize] {
                    // The post that sets it: the one that ends a sleep.
                    self.msg_posted_at[g] = k.now;
                    self.msg_posted_cpu[g] = k.this_cpu();
                }
                self.sem[m as usize] = true;
                self.phase[t] = LcsPhase::Posted;
                self.entry(k, tid)
            }
            LcsPhase::Posted => {
                let m = self.msg_of(tid);
                if std::mem::take(&mut self.waiting[m as usize]) {
                    self.sem[m as usize] = false;
                    self.phase[m as usize] = LcsPhase::Woken;
                    self.wk_posts_woke += 1;
                    let before = k.placement();
                    k.wake(m, false);
                    for (n, (a, b)) in self
                        .msg_placed
                        .iter_mut()
                        .zip(k.placement().iter().zip(before))
                    {
                        *n += a - b;
                    }
                }
                self.phase[t] = LcsPhase::Wait;
                Next::ReturnToUser
            }
            LcsPhase::Wait => {
                if std::mem::take(&mut self.sem[t]) {
                    return self.got_post(k, tid);
                }
                self.phase[t] = LcsPhase::WaitDecide;
                self.entry(k, tid)
            }
            LcsPhase::WaitDecide => {
                if std::mem::take(&mut self.sem[t]) {
                    // FUTEX_WAIT returns at once (the value changed); the
                    // next try takes it in user space.
                    self.phase[t] = LcsPhase::Woken;
                    return Next::ReturnToUser;
                }
                self.waiting[t] = true;
                self.slept[t] = true;
                self.phase[t] = LcsPhase::Woken;
                Next::Block
            }
            LcsPhase::Woken => self.got_post(k, tid),
            LcsPhase::Slept => {
                self.phase[t] = LcsPhase::Walked;
                Next::RunUser(k.rng(tid).jitter(self.cfg.work_us * 1000, 10))
            }
            LcsPhase::Walked => {
                self.req_lat.push(k.now - self.started[t]);
                self.phase[t] = LcsPhase::Post;
                self.step(k, tid)
            }
            LcsPhase::MsgPost => {
                let g = self.group_of(tid);
                let w = self.mine[g][self.next[g]] as usize;
                self.posted_at[w] = k.now;
                self.posted_cpu[w] = k.this_cpu();
                self.sem[w] = true;
                self.phase[t] = LcsPhase::MsgPosted;
                self.entry(k, tid)
            }
            LcsPhase::MsgPosted => {
                let g = self.group_of(tid);
                let w = self.mine[g][self.next[g]];
                if std::mem::take(&mut self.waiting[w as usize]) {
                    self.sem[w as usize] = false;
                    self.msg_posts_woke += 1;
                    k.wake(w, false);
                }
                self.next[g] += 1;
                self.phase[t] = if self.next[g] < self.mine[g].len() {
                    LcsPhase::MsgPost
                } else {
                    LcsPhase::Wait
                };
                Next::ReturnToUser
            }
        }
    }

    fn metrics(&mut self, k: &Kernel) -> Vec<Metric> {
        self.wake_lat.sort_unstable();
        self.req_lat.sort_unstable();
        let us = |v: u64| v as f64 / 1000.0;
        let mut out = Vec::new();
        push_latency_percentiles(&mut out, "wakeup", &self.wake_lat);
        push_latency_percentiles(&mut out, "request", &self.req_lat);
        out.push(Metric::new(
            "rps",
            self.req_lat.len() as f64 / (k.now.max(1) as f64 / 1e9),
            true,
        ));
        for (i, place) in ["awake", "same", "other"].iter().enumerate() {
            let (n, sum) = self.by_place[i];
            out.push(Metric::new(&format!("wk_{place}"), n as f64, false));
            out.push(Metric::new(&format!("wk_{place}_sum_us"), us(sum), false));
        }
        for (name, v) in [
            ("msg_posts_woke", self.msg_posts_woke),
            ("wk_posts_woke", self.wk_posts_woke),
            ("msg_rounds", self.msg_rounds),
            ("msg_slept", self.msg_slept),
            ("msg_wake_sum_us", self.msg_wake_sum_ns / 1000),
            ("msg_same", self.msg_same),
        ] {
            out.push(Metric::new(name, v as f64, false));
        }
        for (i, &n) in self.msg_placed.iter().enumerate() {
            let name = format!("msg_{}", sched::smp::placement_name(i));
            out.push(Metric::new(&name, n as f64, false));
        }
        out
    }
}

// ---------------------------------------------------------------- cyclictest + mix

/// One task of a mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixTask {
    /// Always runnable.
    Hog {
        /// Nice.
        nice: i32,
    },
    /// Runs `run_us`, sleeps `sleep_us`, forever.
    Sleeper {
        /// Burst, µs.
        run_us: u64,
        /// Sleep, µs.
        sleep_us: u64,
        /// Nice.
        nice: i32,
    },
    /// cyclictest thread: periodic timer with this interval.
    Cyclic {
        /// Interval, µs.
        interval_us: u64,
    },
}

impl MixTask {
    /// Parses `hog[:NICE]`, `sleeper:RUN_US:SLEEP_US[:NICE]`, `cyclic:INTERVAL_US`.
    pub fn parse(s: &str) -> Result<MixTask, String> {
        let f: Vec<&str> = s.split(':').collect();
        let num = |x: &str| {
            x.parse::<i64>()
                .map_err(|_| format!("'{s}': bad number '{x}'"))
        };
        let nice = |i: usize| -> Result<i32, String> {
            let n = f.get(i).map_or(Ok(0), |x| num(x))? as i32;
            if (-20..=19).contains(&n) {
                Ok(n)
            } else {
                Err(format!("'{s}': nice must be in [-20, 19]"))
            }
        };
        match f[0] {
            "hog" if f.len() <= 2 => Ok(MixTask::Hog { nice: nice(1)? }),
            "sleeper" if (3..=4).contains(&f.len()) => {
                let (r, sl) = (num(f[1])?, num(f[2])?);
                if r <= 0 || sl <= 0 {
                    return Err(format!("'{s}': RUN_US and SLEEP_US must be positive"));
                }
                Ok(MixTask::Sleeper {
                    run_us: r as u64,
                    sleep_us: sl as u64,
                    nice: nice(3)?,
                })
            }
            "cyclic" if f.len() == 2 => {
                let i = num(f[1])?;
                if i <= 0 {
                    return Err(format!("'{s}': interval must be positive"));
                }
                Ok(MixTask::Cyclic {
                    interval_us: i as u64,
                })
            }
            _ => Err(format!(
                "unknown task '{s}' (hog[:NICE], sleeper:RUN_US:SLEEP_US[:NICE], cyclic:INTERVAL_US)"
            )),
        }
    }
}

/// Hogs, sleepers and cyclictest threads.
#[derive(Debug)]
pub struct Mix {
    /// The tasks.
    pub tasks: Vec<MixTask>,
    next_expiry: Vec<u64>,
    phase: Vec<bool>,
}

impl Mix {
    /// A mix of `tasks`.
    pub fn new(tasks: Vec<MixTask>) -> Self {
        let n = tasks.len();
        Mix {
            tasks,
            next_expiry: vec![0; n],
            phase: vec![false; n],
        }
    }
}

impl Workload for Mix {
    fn init(&mut self, k: &mut Kernel) {
        for (i, t) in self.tasks.iter().enumerate() {
            let (nice, lat) = match *t {
                MixTask::Hog { nice } => (nice, None),
                MixTask::Sleeper { nice, .. } => (nice, Some(i as u8)),
                MixTask::Cyclic { .. } => (0, Some(i as u8)),
            };
            k.spawn(Spawn {
                mm: i as u32 + 1,
                footprint: 32 << 10,
                lat_class: lat,
                params: TaskParams {
                    nice,
                    ..Default::default()
                },
                pin: None,
                wakee_flips: 0,
            });
        }
    }

    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let i = tid as usize;
        match self.tasks[i] {
            // Hogs spin in user code in 1 ms chunks (return-to-user
            // points), forever.
            MixTask::Hog { .. } => Next::RunUser(1_000_000),
            MixTask::Sleeper {
                run_us, sleep_us, ..
            } => {
                self.phase[i] = !self.phase[i];
                if self.phase[i] {
                    Next::RunUser(run_us * 1000)
                } else {
                    k.nanosleep(sleep_us * 1000)
                }
            }
            MixTask::Cyclic { interval_us } => {
                let iv = interval_us * 1000;
                if self.next_expiry[i] == 0 {
                    self.next_expiry[i] = k.now + iv;
                } else {
                    while self.next_expiry[i] <= k.now {
                        self.next_expiry[i] += iv;
                    }
                }
                // A few µs of work per period, then the absolute sleep.
                Next::Sleep(self.next_expiry[i] - k.now)
            }
        }
    }

    fn metrics(&mut self, k: &Kernel) -> Vec<Metric> {
        let mut out = Vec::new();
        for (i, t) in k.tasks.iter().enumerate() {
            out.push(Metric::new(
                &format!("task{i}_runtime_ms"),
                t.runtime as f64 / 1e6,
                true,
            ));
            if let Some(l) = k.lat.get(i) {
                if !l.is_empty() {
                    let mut l = l.clone();
                    l.sort_unstable();
                    out.push(Metric::new(
                        &format!("task{i}_lat_p99_us"),
                        percentile(&l, 99.0) as f64 / 1000.0,
                        false,
                    ));
                    out.push(Metric::new(
                        &format!("task{i}_lat_avg_us"),
                        l.iter().sum::<u64>() as f64 / l.len() as f64 / 1000.0,
                        false,
                    ));
                }
            }
        }
        out
    }
}
