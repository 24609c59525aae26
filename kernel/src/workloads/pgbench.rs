//! `pgbench [-c CLIENTS] [-t TX] [-S]`: a model of PostgreSQL's `pgbench`
//! against a server with one backend process per connection.
//!
//! Each client has its own backend thread, connected by a request and a reply
//! channel that behave like the unix stream socket between libpq and the
//! backend ([`Model::Socket`]: every send wakes the sleeping peer with
//! WF_SYNC, `sock_def_readable`). In pgbench's simple query mode every SQL
//! statement is one round trip:
//! - read-write (default, the builtin "TPC-B (sort of)" script): `BEGIN`,
//!   `UPDATE pgbench_accounts`, `SELECT abalance`, `UPDATE pgbench_tellers`,
//!   `UPDATE pgbench_branches`, `INSERT INTO pgbench_history`, `END`: 7
//!   round trips; each statement is [`STMT_NS`] of backend CPU work (`BEGIN`
//!   and `END` a fifth of it), and `END` also sleeps [`COMMIT_SLEEP_NS`], the
//!   WAL flush's I/O wait;
//! - `-S` (builtin "select only"): one `SELECT abalance`, [`STMT_NS`] of work.
//!
//! Both ends also wake as Linux's socket pair does when a message is
//! consumed: a unix stream socket has one wait queue for its reader and
//! writer, and the consumer's `sock_wfree` → `unix_write_space` wakes it,
//! so the sender, asleep in `read` for its reply, is woken (WF_SYNC) as soon
//! as the peer takes its request, finds no reply yet and sleeps again unless
//! the reply came first ([`Channel::wake_readers_sync`]). In Linux 7.2 these
//! are most of the run's wakeups (`make linux-compare ... TRACE=1`:
//! `unix_write_space`, 759 of about 1300 per `pgbench -c 4 -t 20` run).
//!
//! A client measures each transaction from its first send to its last
//! reply. Reports pgbench's header lines, the latency average and p99, and
//! TPS (transactions / time from the start signal to the last client's end).
//!
//! Stopping: clients poll the stop flag between transactions; every client,
//! finished or stopped, sends its backend a poison request.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use ::shell::Pgbench;
use sched::TaskParams;

use super::{Control, Hist, Job};
use crate::sync::{Channel, ChannelStats, Model, Semaphore};
use crate::{arch, task};

const POISON: u32 = u32::MAX;
/// Backend CPU time of one statement.
pub const STMT_NS: u64 = 20_000;
/// I/O wait of a read-write commit (WAL flush).
pub const COMMIT_SLEEP_NS: u64 = 200_000;
/// Bytes of a query or result message.
const MSG_BYTES: usize = 128;
/// Statements of the read-write script.
const RW_STMTS: u32 = 7;

/// A client's request and reply sockets.
type Connection = (Arc<Channel<u32>>, Arc<Channel<u32>>);

/// What a run did.
pub struct Report {
    /// Transactions finished.
    pub processed: u64,
    /// Transactions asked for: clients x TX.
    pub expected: u64,
    /// Transaction latencies, ns.
    pub latency: Hist,
    /// From the start signal to the last client's end, ns.
    pub ns: u64,
    /// Both directions of every connection, summed (poisons included).
    pub channels: ChannelStats,
    /// Stopped by Ctrl-C or `kill`.
    pub interrupted: bool,
}

impl Report {
    /// TPS (higher is better) and the average latency (ms, lower).
    pub fn metrics(&self) -> super::Metrics {
        super::Metrics {
            list: alloc::vec![
                super::Metric::higher("tps", self.processed as f64 * 1e9 / self.ns.max(1) as f64),
                super::Metric::lower("lat_avg_ms", self.latency.mean() as f64 / 1e6),
            ],
            interrupted: self.interrupted,
        }
    }
}

/// The backend's work for statement `i` of a script of `n` statements:
/// compute in user space, and a commit's sleep (a syscall).
fn serve(i: u32, n: u32) {
    let work = |ns| crate::sched::run_in_user_mode(|| super::work_ns(ns));
    if n == 1 {
        work(STMT_NS);
    } else if i == 0 {
        work(STMT_NS / 5);
    } else if i == n - 1 {
        work(STMT_NS / 5);
        task::sleep_ns(COMMIT_SLEEP_NS);
        crate::sched::exit_to_user_mode();
    } else {
        work(STMT_NS);
    }
}

/// Runs the workload and prints pgbench-like result lines.
pub fn run(
    p: Pgbench,
    ctl: &mut dyn Control,
    out: &mut dyn Write,
) -> Result<Report, alloc::string::String> {
    let clients = p.clients as usize;
    let model = Model::Socket {
        msg_bytes: MSG_BYTES,
    };
    super::check_resources(2 * clients, clients * (2 * model.ring_bytes::<u32>() + 512))?;
    let stmts = if p.select_only { 1 } else { RW_STMTS };
    let tx = p.transactions;
    let latency = Arc::new(Hist::new());
    let processed = Arc::new(AtomicU64::new(0));
    let last_end = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(Semaphore::new(0));
    // The connections' sockets, made here and shared with the parent.
    let conns: Vec<Connection> = (0..clients)
        .map(|_| {
            (
                Arc::new(Channel::with_model(model)),
                Arc::new(Channel::with_model(model)),
            )
        })
        .collect();
    let outcome = Arc::new(super::ParentReport::new());
    let mut job = Job::new();
    let (parent_out, conns0) = (outcome.clone(), conns.clone());
    let (latency0, processed0, last_end0) = (latency.clone(), processed.clone(), last_end.clone());
    // The parent: a fresh thread that spawns every backend and client and
    // starts the clients ([`Job::spawn_parent`]), so the shell wakes
    // nobody and the threads start with the parent's wakee_flips. (Linux's
    // pgbench process starts its client threads; its backends are forked by
    // the postmaster, which wakes few tasks either.)
    job.spawn_parent("pgbench", move |mut job| {
        let (latency, processed, last_end) = (latency0, processed0, last_end0);
        let mut started = 0;
        let mut failed = None;
        for (req, reply) in conns0 {
            let (rq, rp) = (req.clone(), reply.clone());
            let r = job.spawn("pgbench-backend", TaskParams::default(), None, move || {
                loop {
                    let i = rq.recv();
                    // The consumed request's sock_wfree wakes the client's socket.
                    rp.wake_readers_sync();
                    // Each recv()/send() returns to user space.
                    crate::sched::exit_to_user_mode();
                    if i == POISON {
                        break;
                    }
                    serve(i, stmts);
                    rp.send(i);
                    crate::sched::exit_to_user_mode();
                }
            });
            if let Err(e) = r {
                failed = Some(e);
                break;
            }
            let poison = req.clone();
            let (gate, stop) = (gate.clone(), job.stop_flag());
            let (lat, done, end) = (latency.clone(), processed.clone(), last_end.clone());
            let r = job.spawn("pgbench-client", TaskParams::default(), None, move || {
                gate.down();
                for _ in 0..tx {
                    if stop.stopped() {
                        break;
                    }
                    let t0 = arch::now_ns();
                    for i in 0..stmts {
                        req.send(i);
                        crate::sched::exit_to_user_mode();
                        reply.recv();
                        // The consumed reply's sock_wfree wakes the backend's socket.
                        req.wake_readers_sync();
                        crate::sched::exit_to_user_mode();
                    }
                    lat.add(arch::now_ns() - t0);
                    done.fetch_add(1, Ordering::Relaxed);
                }
                end.fetch_max(arch::now_ns(), Ordering::Relaxed);
                req.send(POISON);
            });
            if let Err(e) = r {
                // This backend has no client: end it ourselves.
                failed = Some(e);
                poison.send(POISON);
                break;
            }
            started += 1;
        }
        if failed.is_some() {
            job.stop();
        }
        parent_out.released();
        for _ in 0..started {
            gate.up();
        }
        job.spawned();
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
    for (a, b) in &conns {
        channels += a.stats();
        channels += b.stats();
    }
    let latency = match Arc::try_unwrap(latency) {
        Ok(h) => h,
        Err(_) => return Err("pgbench: a thread still holds the histogram".into()),
    };
    let r = Report {
        processed: processed.load(Ordering::Relaxed),
        expected: clients as u64 * u64::from(tx),
        latency,
        ns: last_end.load(Ordering::Relaxed).saturating_sub(t0).max(1),
        channels,
        interrupted,
    };
    if interrupted {
        let _ = writeln!(out, "pgbench: interrupted");
    }
    let script = if p.select_only {
        "<builtin: select only>"
    } else {
        "<builtin: TPC-B (sort of)>"
    };
    let _ = writeln!(out, "transaction type: {script}");
    let _ = writeln!(out, "query mode: simple");
    let _ = writeln!(out, "number of clients: {clients}");
    let _ = writeln!(out, "number of transactions per client: {tx}");
    let _ = writeln!(
        out,
        "number of transactions actually processed: {}/{}",
        r.processed, r.expected
    );
    let ms = |ns: u64| (ns / 1_000_000, ns / 1000 % 1000);
    let (a, af) = ms(r.latency.mean());
    let (q, qf) = ms(r.latency.percentile(990));
    let _ = writeln!(out, "latency average = {a}.{af:03} ms");
    let _ = writeln!(out, "latency p99 = {q}.{qf:03} ms");
    let tps_x1000 = (u128::from(r.processed) * 1_000_000_000_000 / u128::from(r.ns)) as u64;
    let _ = writeln!(
        out,
        "tps = {}.{:03} (without initial connection time)",
        tps_x1000 / 1000,
        tps_x1000 % 1000
    );
    let _ = writeln!(
        out,
        "wakeups: {} sync, {} plain",
        channels.woken_sync, channels.woken_plain
    );
    Ok(r)
}
