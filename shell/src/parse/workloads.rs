//! The workloads: `spin`, `hackbench`, `schbench`, `pgbench`, `cyclictest`,
//! `perfpipe`, `soak` and `yield`. Each has a struct of its validated options
//! with the [`Limit`]s `help` prints, and a parser; `-h`/`--help` asks for
//! the command's help instead.

use alloc::vec::Vec;

use sched::{CpuId, Policy};

use super::args::{cpu_id, defaults, err, getopt, limit, Opt};
use super::{Command, Limit, MAX_CPUS};
use crate::error::{quote, ArgError, Error};

/// A `spin` workload: one CPU-bound thread per SPEC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spin {
    /// How long each thread spins.
    pub duration_ms: u32,
    /// Pin every thread to this CPU (`-c`); `None` lets the balancer place them.
    pub cpu: Option<CpuId>,
    /// One thread per entry.
    pub threads: Vec<SpinThread>,
}

/// One `spin` thread's SPEC: how it is scheduled and whether it sleeps.
///
/// The words are those of `lcbench spin` (the Linux side of `make
/// linux-compare`), so a conformance row runs the same SPECs in both:
/// `N` (nice N, SCHED_NORMAL), `batch:N` (SCHED_BATCH at nice N), `idle`
/// (SCHED_IDLE), `slice:US` (nice 0 with a custom slice of US
/// microseconds, Linux 6.12+'s `sched_setattr` `sched_runtime`) and
/// `duty:RUN_US:SLEEP_US` (nice 0; runs RUN_US of CPU time, then sleeps
/// SLEEP_US, repeatedly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpinThread {
    /// SCHED_NORMAL, SCHED_BATCH or SCHED_IDLE.
    pub policy: Policy,
    /// -20..=19 (ignored by SCHED_IDLE, as in Linux).
    pub nice: i32,
    /// Custom slice in us (`slice:US`), 0 for the base slice.
    pub slice_us: u32,
    /// `duty:RUN_US:SLEEP_US`: CPU time per burst and sleep after it, us.
    pub duty_us: Option<(u32, u32)>,
}

impl SpinThread {
    /// A plain SCHED_NORMAL thread at `nice`.
    pub const fn nice(nice: i32) -> Self {
        SpinThread {
            policy: Policy::Normal,
            nice,
            slice_us: 0,
            duty_us: None,
        }
    }
}

impl core::fmt::Display for SpinThread {
    /// The SPEC word it was parsed from (`0`, `batch:5`, `idle`, ...).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match (self.policy, self.slice_us, self.duty_us) {
            (_, _, Some((r, s))) => write!(f, "duty:{r}:{s}"),
            (_, us, None) if us != 0 => write!(f, "slice:{us}"),
            (Policy::Batch, _, None) => write!(f, "batch:{}", self.nice),
            (Policy::Idle, _, None) => f.write_str("idle"),
            _ => write!(f, "{}", self.nice),
        }
    }
}

impl Spin {
    /// Most threads one `spin` starts.
    pub const MAX_THREADS: usize = 16;
    /// `-d MS`.
    pub const DURATION: Limit = Limit {
        name: "-d MS",
        min: 1,
        max: 60_000,
        default: None,
        doc: "run time in ms (required)",
    };
    /// `-c CPU`.
    pub const CPU: Limit = Limit {
        name: "-c CPU",
        min: 0,
        max: MAX_CPUS as i64 - 1,
        default: None,
        doc: "pin every thread to this CPU (default: no pinning)",
    };
    /// `NICE` (a plain SPEC, and `batch:NICE`).
    pub const NICE: Limit = Limit {
        name: "NICE",
        min: -20,
        max: 19,
        default: None,
        doc: "SPEC N or batch:N; 1 to 16 SPECs, a thread each",
    };
    /// `slice:US`: a custom slice (Linux clamps `sched_runtime` to this range).
    pub const SLICE_US: Limit = Limit {
        name: "slice:US",
        min: 100,
        max: 100_000,
        default: None,
        doc: "SPEC slice:US: nice 0 with a custom slice of US microseconds",
    };
    /// `duty:RUN_US:SLEEP_US`'s two numbers.
    pub const DUTY_US: Limit = Limit {
        name: "duty:RUN_US:SLEEP_US",
        min: 1,
        max: 10_000_000,
        default: None,
        doc: "SPEC duty:RUN_US:SLEEP_US: runs RUN_US of CPU time, sleeps SLEEP_US",
    };
    /// `-d MS`, `-c CPU`, `NICE` (`help spin` gives the other SPECs'
    /// ranges in its notes: their names are too long for its table).
    pub const LIMITS: &'static [Limit] = &[Self::DURATION, Self::CPU, Self::NICE];
}

/// One `spin` SPEC word (see [`SpinThread`]).
fn spin_spec(w: &str) -> Result<SpinThread, Error> {
    const C: &str = "spin";
    let num = |l: &Limit, v: &str| limit(C, l, v);
    if let Some(n) = w.strip_prefix("batch:") {
        let nice = num(&Spin::NICE, n)? as i32;
        return Ok(SpinThread {
            policy: Policy::Batch,
            ..SpinThread::nice(nice)
        });
    }
    if w == "idle" {
        return Ok(SpinThread {
            policy: Policy::Idle,
            ..SpinThread::nice(0)
        });
    }
    if let Some(us) = w.strip_prefix("slice:") {
        return Ok(SpinThread {
            slice_us: num(&Spin::SLICE_US, us)? as u32,
            ..SpinThread::nice(0)
        });
    }
    if let Some(d) = w.strip_prefix("duty:") {
        let Some((r, s)) = d.split_once(':') else {
            return err(C, ArgError::BadSpec(quote(w)));
        };
        let (r, s) = (num(&Spin::DUTY_US, r)?, num(&Spin::DUTY_US, s)?);
        return Ok(SpinThread {
            duty_us: Some((r as u32, s as u32)),
            ..SpinThread::nice(0)
        });
    }
    if super::args::is_int(w) {
        return Ok(SpinThread::nice(num(&Spin::NICE, w)? as i32));
    }
    err(C, ArgError::BadSpec(quote(w)))
}

/// `hackbench`: groups of senders and receivers passing messages (Linux
/// `perf bench sched messaging` / rt-tests `hackbench`), `2 * groups * fds`
/// threads, over unix stream sockets (the default) or pipes (`-p`). Defaults
/// are Linux's except `-g` (1 instead of 10) to suit a hobby kernel in QEMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hackbench {
    /// `-g`: groups.
    pub groups: u32,
    /// `-l`: messages each sender sends to each receiver of its group.
    pub loops: u32,
    /// `-f`: senders (and receivers) per group.
    pub fds: u32,
    /// `-s`: bytes per message.
    pub datasize: u32,
    /// `-p`/`--pipe`: pipes instead of sockets.
    pub pipe: bool,
    /// `-T`/`--threads` (true) or `-P`/`--process` (false, the default): both
    /// run kernel threads here; the flag is kept and reported.
    pub threads: bool,
    /// `-C`/`--syscall-cost`: CPU time charged to each send and each
    /// receive, on top of the channel operation itself; `None` (the
    /// default) charges nothing.
    pub syscall_cost: Option<SyscallCost>,
    /// `-K`/`--sched-cost`: CPU time charged per context switch and per
    /// wakeup of a task, on top of ours' own; `None` (the default)
    /// charges nothing.
    pub sched_cost: Option<SchedCost>,
    /// `-M`/`--pipe-mutex` (with `-p -C linux`): each pipe's copy runs
    /// under a sleeping lock of that pipe, as Linux's `pipe->mutex`.
    pub pipe_mutex: bool,
    /// `-R`/`--roles`: count what ends the senders' and receivers' runs and
    /// the receivers' wakeups (the `roles:` result lines). Off by default:
    /// the counting reads the task's switch counts and the clock around
    /// each message, which slows the run (rt-tests' hackbench counts
    /// nothing).
    pub roles: bool,
    /// `-W`/`--wakee-flips`: the run's parent thread starts with these
    /// `wakee_flips` (no last wakee, the once-a-second halving from its
    /// start), and its tasks copy them at their spawn, as Linux's fork
    /// copies the parent's. `None` (the default): the parent's are the
    /// shell's, as a fork copies them, near 0 since the shell wakes
    /// nobody. rt-tests' hackbench main process inherits init's, 4-8 on
    /// this project's QEMU machine (docs/results/linux/smt.md, "Two-level
    /// topology"), and `wake_wide()` compares them with the LLC size.
    pub wakee_flips: Option<u32>,
}

/// `hackbench -C COST`: the CPU time each message's send and receive
/// costs beyond the channel operation, burned as syscall (kernel) work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyscallCost {
    /// `-C linux`: what Linux 7.2 spends in that syscall on this project's
    /// QEMU machine, as measured ([`Hackbench::LINUX_PIPE_WRITE_NS`] and
    /// the three beside it).
    Linux,
    /// `-C NS`: NS nanoseconds for each send and for each receive.
    Ns(u32),
}

/// `hackbench -K COST`: the CPU time each context switch and each wakeup
/// of a hackbench task costs beyond ours' own, burned as kernel work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedCost {
    /// `-K linux`: what Linux 7.2 spends more than ours on this project's
    /// QEMU machine, as measured ([`Hackbench::LINUX_SWITCH_THREAD_NS`],
    /// [`Hackbench::OURS_SWITCH_NS`] and those beside them).
    Linux,
    /// `-K SWITCH_NS,WAKE_NS`: ns per context switch and per wakeup.
    Ns {
        /// Per context switch of a task, charged to it when it runs again.
        switch_ns: u32,
        /// Per wakeup a task does, charged to it (the waker).
        wake_ns: u32,
    },
}

impl core::fmt::Display for SchedCost {
    /// The word it was parsed from (`linux` or `SWITCH_NS,WAKE_NS`).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SchedCost::Linux => f.write_str("linux"),
            SchedCost::Ns { switch_ns, wake_ns } => write!(f, "{switch_ns},{wake_ns}"),
        }
    }
}

impl core::fmt::Display for SyscallCost {
    /// The word it was parsed from (`linux` or the number).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SyscallCost::Linux => f.write_str("linux"),
            SyscallCost::Ns(ns) => write!(f, "{ns}"),
        }
    }
}

impl Hackbench {
    /// `-g`, `-l`, `-f`, `-s`.
    pub const LIMITS: &'static [Limit] = &[
        Limit {
            name: "-g GROUPS",
            min: 1,
            max: 256,
            default: Some(1),
            doc: "groups (Linux default 10)",
        },
        Limit {
            name: "-l LOOPS",
            min: 1,
            max: 1_000_000,
            default: Some(100),
            doc: "messages per sender to each receiver",
        },
        Limit {
            name: "-f FDS",
            min: 1,
            max: 2048,
            default: Some(20),
            doc: "senders (and receivers) per group",
        },
        Limit {
            name: "-s DATASIZE",
            min: 1,
            max: 4096,
            default: Some(100),
            doc: "bytes per message",
        },
    ];
    /// Long names of [`Self::LIMITS`], as Linux hackbench spells them.
    const LONG: &'static [&'static str] = &["groups", "loops", "fds", "datasize"];
    /// `-C NS`: the range of a cost in nanoseconds (up to 1 ms a syscall).
    pub const SYSCALL_COST_NS: Limit = Limit {
        name: "-C NS",
        min: 0,
        max: 1_000_000,
        default: None,
        doc: "ns charged to each send and each receive (or -C linux)",
    };
    /// `-K SWITCH_NS,WAKE_NS`: the range of each (up to 1 ms).
    pub const SCHED_COST_NS: Limit = Limit {
        name: "-K NS",
        min: 0,
        max: 1_000_000,
        default: None,
        doc: "ns charged per context switch and per wakeup (or -K linux)",
    };
    /// `-W FLIPS`: the range of the parent's starting `wakee_flips`.
    pub const WAKEE_FLIPS: Limit = Limit {
        name: "-W FLIPS",
        min: 0,
        max: 1_000_000,
        default: None,
        doc: "wakee_flips the run's parent starts with (default: the shell's)",
    };

    // What one syscall of a 100-byte message costs Linux 7.2.13 (Debian sid,
    // amd64) on this project's QEMU machine: q35, 4 vCPUs, TCG with
    // `-icount shift=2,sleep=off` (so CLOCK_MONOTONIC counts instructions,
    // the A/B's time base), preempt=full, schedstats on. From `lcbench costs
    // -n 2000` (scripts/linux-compare/lcbench.c: each a 100-byte write or
    // read with nobody waiting, syscall entry and exit included), `make
    // linux-costs` / `make linux-compare WHAT=costs SMP=4 OURS=0 SIM=0`,
    // first boot; a second boot gave 4341 / 3811 / 9537 / 7849 ns. The
    // simulator's `qemu:N` machine charges the same figures
    // (`sim/src/machine.rs`, `qemu_costs`). docs/results/linux/sim-costs.md, "The
    // simulator's qemu:N costs", has the whole table.

    /// Linux's `write()` of 100 bytes to a pipe (`pipe_write_ns`), ns.
    pub const LINUX_PIPE_WRITE_NS: u32 = 4_358;
    /// Linux's `read()` of 100 bytes from a pipe (`pipe_read_ns`), ns.
    pub const LINUX_PIPE_READ_NS: u32 = 3_883;
    /// Linux's `write()` of 100 bytes to a unix stream socket
    /// (`sock_write_ns`), ns.
    pub const LINUX_SOCK_WRITE_NS: u32 = 9_618;
    /// Linux's `read()` of 100 bytes from a unix stream socket
    /// (`sock_read_ns`), ns.
    pub const LINUX_SOCK_READ_NS: u32 = 7_773;

    // Context switch and wakeup, Linux 7.2.13 against ours, on the same
    // machine and in the same time base (x86_64, 4 vCPUs, `-icount
    // shift=2,sleep=off`, preempt=full). Linux's from the same `lcbench
    // costs` boot as the syscall figures above: two threads / processes on
    // CPU 0 yielding to each other, (time - 2 x iterations x a yield alone)
    // / context switches; a write that wakes a SCHED_BATCH reader asleep
    // on the waker's CPU minus a write that wakes nobody (means). Ours' the
    // same way, by the ktest `workload_hackbench_switch_and_wake_costs`
    // (kernel/src/tests/workloads.rs, one boot, 2000 iterations; recorded
    // in docs/results/linux.md before any A/B run used them).

    /// Linux's context switch between two threads (`switch_thread_ns`), ns.
    pub const LINUX_SWITCH_THREAD_NS: u32 = 8_723;
    /// Linux's context switch between two processes (`switch_process_ns`,
    /// an mm switch more), ns.
    pub const LINUX_SWITCH_PROCESS_NS: u32 = 9_221;
    /// Linux's waker's side of a wakeup onto its own CPU (`wake_local_ns`,
    /// mean), ns.
    pub const LINUX_WAKE_LOCAL_NS: u32 = 6_150;
    /// Linux's syscall entry and exit (`null_syscall_ns`, `getppid()`),
    /// ns: with `-M`, the part of `-C linux`'s figure outside the pipe's
    /// mutex (the rest, the copy, runs under it).
    pub const LINUX_NULL_SYSCALL_NS: u32 = 1_379;
    /// Ours' context switch (kernel threads: no mm), ns.
    pub const OURS_SWITCH_NS: u32 = 4_297;
    /// Ours' waker's side of a wakeup onto its own CPU (mean), ns.
    pub const OURS_WAKE_LOCAL_NS: u32 = 4_948;

    /// The CPU time charged per context switch and per wakeup of a task, in
    /// ns (`(switch_ns, wake_ns)`): `(0, 0)` without `-K`; with `-K linux`
    /// Linux's figure less ours' (never below 0), a process switch without
    /// `-T` and a thread switch with it. Every wakeup is charged as a local
    /// one (Linux's waker spends 2103 ns on a remote one, `wake_remote_ns`).
    pub fn sched_cost_ns(&self) -> (u32, u32) {
        match self.sched_cost {
            None => (0, 0),
            Some(SchedCost::Ns { switch_ns, wake_ns }) => (switch_ns, wake_ns),
            Some(SchedCost::Linux) => {
                let linux = if self.threads {
                    Self::LINUX_SWITCH_THREAD_NS
                } else {
                    Self::LINUX_SWITCH_PROCESS_NS
                };
                (
                    linux.saturating_sub(Self::OURS_SWITCH_NS),
                    Self::LINUX_WAKE_LOCAL_NS.saturating_sub(Self::OURS_WAKE_LOCAL_NS),
                )
            }
        }
    }

    /// The CPU time charged to each send and to each receive, in ns
    /// (`(send_ns, recv_ns)`): `(0, 0)` without `-C`; with `-C linux` the
    /// measured Linux figures for this run's channel, pipe or socket (taken
    /// with 100-byte messages; other `-s` sizes are charged the same).
    pub fn syscall_cost_ns(&self) -> (u32, u32) {
        match (self.syscall_cost, self.pipe) {
            (None, _) => (0, 0),
            (Some(SyscallCost::Ns(ns)), _) => (ns, ns),
            (Some(SyscallCost::Linux), true) => {
                (Self::LINUX_PIPE_WRITE_NS, Self::LINUX_PIPE_READ_NS)
            }
            (Some(SyscallCost::Linux), false) => {
                (Self::LINUX_SOCK_WRITE_NS, Self::LINUX_SOCK_READ_NS)
            }
        }
    }
}

impl Default for Hackbench {
    fn default() -> Self {
        let [g, l, f, s] = defaults(Self::LIMITS);
        Hackbench {
            groups: g,
            loops: l,
            fds: f,
            datasize: s,
            pipe: false,
            threads: false,
            syscall_cost: None,
            sched_cost: None,
            pipe_mutex: false,
            roles: false,
            wakee_flips: None,
        }
    }
}

/// `schbench`: message threads waking worker threads that serve requests
/// (Meta's schbench 1.0): wakeup and request latency percentiles, RPS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schbench {
    /// `-m`: message threads.
    pub message_threads: u32,
    /// `-t`: workers per message thread.
    pub workers: u32,
    /// `-r`: run time in seconds.
    pub runtime_s: u32,
    /// `-F`: cache footprint of a request, KiB per worker.
    pub footprint_kb: u32,
    /// `-s`: sleep per request (simulated I/O), microseconds.
    pub sleep_us: u32,
}

impl Schbench {
    /// `-m`, `-t`, `-r`, `-F`, `-s`.
    pub const LIMITS: &'static [Limit] = &[
        Limit {
            name: "-m MSG_THREADS",
            min: 1,
            max: 64,
            default: Some(1),
            doc: "message threads",
        },
        Limit {
            name: "-t WORKERS",
            min: 1,
            max: 4095,
            default: Some(4),
            doc: "worker threads per message thread",
        },
        Limit {
            name: "-r SECONDS",
            min: 1,
            max: 600,
            default: Some(5),
            doc: "run time",
        },
        Limit {
            name: "-F KB",
            min: 0,
            max: 65_536,
            default: Some(256),
            doc: "KiB each request touches",
        },
        Limit {
            name: "-s USEC",
            min: 0,
            max: 1_000_000,
            default: Some(100),
            doc: "sleep in each request (its I/O)",
        },
    ];
    const LONG: &'static [&'static str] = &[
        "message-threads",
        "threads",
        "runtime",
        "cache_footprint",
        "sleep_usec",
    ];
}

impl Default for Schbench {
    fn default() -> Self {
        let [m, t, r, f, s] = defaults(Self::LIMITS);
        Schbench {
            message_threads: m,
            workers: t,
            runtime_s: r,
            footprint_kb: f,
            sleep_us: s,
        }
    }
}

/// `pgbench`: client/backend pairs over request/reply sockets (a model of
/// PostgreSQL's pgbench against backends), TPS and latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pgbench {
    /// `-c`: clients (each with its backend thread).
    pub clients: u32,
    /// `-t`: transactions per client.
    pub transactions: u32,
    /// `-S`: select-only (short backend work, no I/O wait).
    pub select_only: bool,
}

impl Pgbench {
    /// `-c`, `-t`.
    pub const LIMITS: &'static [Limit] = &[
        Limit {
            name: "-c CLIENTS",
            min: 1,
            max: 1000,
            default: Some(1),
            doc: "clients (one backend thread each)",
        },
        Limit {
            name: "-t TX",
            min: 1,
            max: 1_000_000,
            default: Some(10),
            doc: "transactions per client",
        },
    ];
    const LONG: &'static [&'static str] = &["client", "transactions"];
}

impl Default for Pgbench {
    fn default() -> Self {
        let [c, t] = defaults(Self::LIMITS);
        Pgbench {
            clients: c,
            transactions: t,
            select_only: false,
        }
    }
}

/// `cyclictest`: periodic timer threads measuring wakeup latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cyclictest {
    /// `-t`: measuring threads.
    pub threads: u32,
    /// `-i`: timer interval in microseconds.
    pub interval_us: u32,
    /// `-l`: wakeups per thread.
    pub loops: u32,
    /// `-p`: SCHED_FIFO priority, 0 for SCHED_NORMAL (as in Linux).
    pub prio: u32,
    /// `-L`/`--load`: groups of a pipe, thread-mode hackbench (`hackbench -T
    /// -p -g GROUPS`, 40 threads a group) that runs beside the measurement
    /// and is stopped after it; 0: no load.
    pub load_groups: u32,
    /// `-a`: the CPU every measuring thread is pinned to (rt-tests'
    /// `-a CPU`); `None`: not pinned. Under QEMU's `-icount` the vCPUs
    /// run in turns in CPU order, so the measuring thread's CPU moves the
    /// result (docs/results/linux/ab-features.md, "At 2 vCPUs").
    pub cpu: Option<CpuId>,
}

impl Cyclictest {
    /// `-t`, `-i`, `-l`, `-p`.
    pub const LIMITS: &'static [Limit] = &[
        Limit {
            name: "-t THREADS",
            min: 1,
            max: 64,
            default: Some(1),
            doc: "measuring threads",
        },
        Limit {
            name: "-i INTERVAL_US",
            min: 100,
            max: 1_000_000,
            default: Some(1000),
            doc: "timer interval in microseconds",
        },
        Limit {
            name: "-l LOOPS",
            min: 1,
            max: 1_000_000,
            default: Some(1000),
            doc: "wakeups per thread",
        },
        Limit {
            name: "-p PRIO",
            min: 0,
            max: 99,
            default: Some(0),
            doc: "FIFO priority (0: SCHED_NORMAL)",
        },
        Limit {
            name: "-L GROUPS",
            min: 0,
            max: 8,
            default: Some(0),
            doc: "load: hackbench -T -p -g GROUPS",
        },
    ];
    const LONG: &'static [&'static str] = &["threads", "interval", "loops", "priority", "load"];
    /// `-a CPU`.
    pub const AFFINITY: Limit = Limit {
        name: "-a CPU",
        min: 0,
        max: MAX_CPUS as i64 - 1,
        default: None,
        doc: "pin to this CPU (default: none)",
    };
    /// Every numeric option, for `help`.
    pub const HELP_LIMITS: &'static [Limit] = &[
        Self::LIMITS[0],
        Self::LIMITS[1],
        Self::LIMITS[2],
        Self::LIMITS[3],
        Self::LIMITS[4],
        Self::AFFINITY,
    ];
}

impl Default for Cyclictest {
    fn default() -> Self {
        let [t, i, l, p, g] = defaults(Self::LIMITS);
        Cyclictest {
            threads: t,
            interval_us: i,
            loops: l,
            prio: p,
            load_groups: g,
            cpu: None,
        }
    }
}

/// `wakelat`: a periodic sleeper among CPU hogs on one CPU, and the
/// distribution of how late it wakes (`lcbench wakelat` on the Linux side
/// of `make linux-compare`): the wakeup preemption rules of EEVDF as a
/// latency (SCHED_BATCH does not preempt on wakeup; a short custom slice
/// gives an earlier deadline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wakelat {
    /// `-d`: measuring time, ms.
    pub duration_ms: u32,
    /// `-c`: the CPU every thread is pinned to.
    pub cpu: CpuId,
    /// `-n`: nice-0 CPU hogs beside the sleeper.
    pub hogs: u32,
    /// `-p`: the sleeper's period, us (absolute wakeup times).
    pub period_us: u32,
    /// `-P`: the sleeper's policy (SCHED_NORMAL, SCHED_BATCH or SCHED_IDLE).
    pub policy: Policy,
    /// `-s`: the sleeper's custom slice, us; 0 for the base slice.
    pub slice_us: u32,
    /// `-f`: the hogs' SCHED_FIFO priority (RT hogs); 0 for nice-0 hogs.
    pub hog_fifo_prio: u8,
}

impl Wakelat {
    /// `-d`, `-c`, `-n`, `-p`.
    pub const LIMITS: &'static [Limit] = &[
        Limit {
            name: "-d MS",
            min: 1,
            max: 60_000,
            default: Some(1000),
            doc: "measuring time",
        },
        Limit {
            name: "-c CPU",
            min: 0,
            max: MAX_CPUS as i64 - 1,
            default: Some(0),
            doc: "CPU of the sleeper and the hogs",
        },
        Limit {
            name: "-n HOGS",
            min: 0,
            max: 15,
            default: Some(2),
            doc: "nice-0 CPU hogs beside the sleeper",
        },
        Limit {
            name: "-p PERIOD_US",
            min: 100,
            max: 1_000_000,
            default: Some(1000),
            doc: "the sleeper's period",
        },
    ];
    /// `-s SLICE_US` (no default: the base slice).
    pub const SLICE: Limit = Limit {
        name: "-s SLICE_US",
        min: 100,
        max: 100_000,
        default: None,
        doc: "its custom slice (default: base)",
    };
    /// `-f PRIO` (no default: nice-0 hogs).
    pub const HOG_FIFO: Limit = Limit {
        name: "-f PRIO",
        min: 1,
        max: sched::task::MAX_RT_PRIO as i64,
        default: None,
        doc: "FIFO hogs (default: nice 0)",
    };
    /// Every numeric option, for `help`.
    pub const HELP_LIMITS: &'static [Limit] = &[
        Self::LIMITS[0],
        Self::LIMITS[1],
        Self::LIMITS[2],
        Self::LIMITS[3],
        Self::SLICE,
        Self::HOG_FIFO,
    ];
    const LONG: &'static [&'static str] = &["duration", "cpu", "hogs", "period"];
}

/// A `dlperiodic` workload: TASKS SCHED_DEADLINE threads (runtime, deadline,
/// period), allowed every CPU, released together and then every period;
/// each job burns WORK_US of the thread's own CPU time, and its response time
/// (end minus release) is recorded. The shape of `lcbench dl periodic` (the
/// Linux side of `make linux-compare`), after rt-tests' cyclicdeadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dlperiodic {
    /// `-n`: deadline threads.
    pub tasks: u32,
    /// `-r`: each one's runtime (budget), us.
    pub runtime_us: u32,
    /// `-D`: its relative deadline, us (the period when not given).
    pub deadline_us: u32,
    /// `-p`: its period, us.
    pub period_us: u32,
    /// `-w`: each job's work, us of the thread's CPU time.
    pub work_us: u32,
    /// `-d`: how long, ms (the jobs whose period ends within it).
    pub duration_ms: u32,
}

impl Dlperiodic {
    /// `-n`, `-r`, `-D`, `-p`, `-w`, `-d`.
    pub const LIMITS: &'static [Limit] = &[
        Limit {
            name: "-n TASKS",
            min: 1,
            max: 32,
            default: Some(4),
            doc: "SCHED_DEADLINE threads",
        },
        Limit {
            name: "-r RUNTIME_US",
            min: 2,
            max: 4_000_000,
            default: Some(10_000),
            doc: "each one's runtime (budget)",
        },
        Limit {
            name: "-D DEADLINE_US",
            min: 0,
            max: 4_000_000,
            default: Some(0),
            doc: "deadline (0: the period)",
        },
        Limit {
            name: "-p PERIOD_US",
            min: 100,
            max: 4_000_000,
            default: Some(100_000),
            doc: "period",
        },
        Limit {
            name: "-w WORK_US",
            min: 1,
            max: 4_000_000,
            default: Some(5_000),
            doc: "each job's CPU time",
        },
        Limit {
            name: "-d MS",
            min: 1,
            max: 60_000,
            default: Some(1000),
            doc: "length of the run",
        },
    ];
    const LONG: &'static [&'static str] =
        &["tasks", "runtime", "deadline", "period", "work", "duration"];
}

impl Default for Wakelat {
    fn default() -> Self {
        let [d, c, n, p] = defaults(Self::LIMITS);
        Wakelat {
            duration_ms: d,
            // The limit's default, CPU 0.
            cpu: CpuId::new(c as usize).unwrap_or(CpuId::BOOT),
            hogs: n,
            period_us: p,
            policy: Policy::Normal,
            slice_us: 0,
            hog_fifo_prio: 0,
        }
    }
}

/// A fair policy by name, as `-P` takes it: normal, batch or idle.
fn fair_policy(cmd: &'static str, w: &str) -> Result<Policy, Error> {
    match w {
        "normal" | "other" => Ok(Policy::Normal),
        "batch" => Ok(Policy::Batch),
        "idle" => Ok(Policy::Idle),
        _ => err(cmd, ArgError::UnknownPolicy(quote(w))),
    }
}

/// `perfpipe`: two threads ping-ponging over a pipe (Linux `perf bench sched pipe`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Perfpipe {
    /// `-l`: round trips.
    pub loops: u32,
    /// `-x`/`--cross`: the two threads pinned to two different CPUs (the
    /// first and the last online CPU), so every wakeup crosses CPUs.
    pub cross: bool,
    /// `-s`/`--same`: both threads pinned to the first online CPU, so no
    /// wakeup crosses CPUs (`taskset -c 0 perf bench sched pipe`).
    pub same: bool,
}

impl Perfpipe {
    /// `-l`.
    pub const LIMITS: &'static [Limit] = &[Limit {
        name: "-l LOOPS",
        min: 1,
        max: 10_000_000,
        default: Some(100_000),
        doc: "round trips",
    }];
}

impl Default for Perfpipe {
    fn default() -> Self {
        let [l] = defaults(Self::LIMITS);
        Perfpipe {
            loops: l,
            cross: false,
            same: false,
        }
    }
}

/// `soak`: many threads doing random scheduler actions while the scheduler's
/// invariants are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Soak {
    /// `-t`: worker threads (kept at this count: exits are respawned).
    pub threads: u32,
    /// `-s`: seconds to run.
    pub secs: u32,
    /// `-r`/`--seed`: the PRNG seed (`None`: taken from the clock and printed).
    pub seed: Option<u32>,
}

impl Soak {
    /// `-t`, `-s`, `-r`.
    pub const LIMITS: &'static [Limit] = &[
        Limit {
            name: "-t THREADS",
            min: 1,
            max: 4000,
            default: Some(1000),
            doc: "worker threads",
        },
        Limit {
            name: "-s SECS",
            min: 1,
            max: 86_400,
            default: Some(60),
            doc: "run time in seconds",
        },
        Limit {
            name: "-r SEED",
            min: 0,
            max: u32::MAX as i64,
            default: None,
            doc: "seed (default: from the clock)",
        },
    ];
    const LONG: &'static [&'static str] = &["threads", "secs", "seed"];
}

impl Default for Soak {
    fn default() -> Self {
        let [t, s, _] = defaults(Self::LIMITS);
        Soak {
            threads: t,
            secs: s,
            seed: None,
        }
    }
}

/// `yield`: two threads on one CPU handing it to each other with
/// `sched_yield` (the cost of a yield and a context switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct YieldPp {
    /// `-l`: yields per thread.
    pub loops: u32,
}

impl YieldPp {
    /// `-l`.
    pub const LIMITS: &'static [Limit] = &[Limit {
        name: "-l LOOPS",
        min: 1,
        max: 10_000_000,
        default: Some(100_000),
        doc: "yields per thread",
    }];
}

impl Default for YieldPp {
    fn default() -> Self {
        let [l] = defaults(Self::LIMITS);
        YieldPp { loops: l }
    }
}

/// `None`: `-h` / `--help`.
pub(super) fn parse_spin(args: &[&str]) -> Result<Option<Spin>, Error> {
    const C: &str = "spin";
    let (dur, cpu_l) = (&Spin::DURATION, &Spin::CPU);
    let spec = [
        Opt {
            short: b'd',
            long: "",
            takes_value: true,
        },
        Opt {
            short: b'c',
            long: "",
            takes_value: true,
        },
        Opt {
            short: b'h',
            long: "help",
            takes_value: false,
        },
    ];
    let g = getopt(C, args, &spec)?;
    if g.has(b'h') {
        return Ok(None);
    }
    let Some(d) = g.value(b'd') else {
        return err(C, ArgError::Missing(dur.name));
    };
    let duration_ms = limit(C, dur, d)? as u32;
    let cpu = match g.value(b'c') {
        Some(c) => Some(cpu_id(C, cpu_l, limit(C, cpu_l, c)?)?),
        None => None,
    };
    if g.pos.is_empty() {
        return err(C, ArgError::Missing("SPEC"));
    }
    if g.pos.len() > Spin::MAX_THREADS {
        return err(
            C,
            ArgError::TooMany {
                what: "SPEC",
                max: Spin::MAX_THREADS,
            },
        );
    }
    let mut threads = Vec::with_capacity(g.pos.len());
    for w in &g.pos {
        threads.push(spin_spec(w)?);
    }
    Ok(Some(Spin {
        duration_ms,
        cpu,
        threads,
    }))
}

/// A workload's limit values (in `limits` order) and the flags given (in the
/// order given).
type WorkloadOpts<const N: usize> = ([u32; N], Vec<u8>);

/// The getopt spec of `limits` (each `-x VALUE`, `--long VALUE` where
/// `longs` names it, in the order of `limits`) followed by `extra`.
fn limit_opts(limits: &[Limit], longs: &[&'static str], extra: &[Opt]) -> Vec<Opt> {
    let mut spec: Vec<Opt> = limits
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            l.short().map(|short| Opt {
                short,
                long: longs.get(i).copied().unwrap_or(""),
                takes_value: true,
            })
        })
        .collect();
    spec.extend_from_slice(extra);
    spec
}

/// A workload's options: `-x VALUE` limits with defaults (`--long VALUE`
/// too, where `longs` names them, in the order of `limits`), boolean `flags`,
/// and `-h`/`--help`. `Ok(None)` when help was asked for; else the values
/// and the flags given, in the order given.
fn workload_opts<const N: usize>(
    cmd: &'static str,
    args: &[&str],
    limits: &'static [Limit],
    longs: &[&'static str],
    flags: &[Opt],
) -> Result<Option<WorkloadOpts<N>>, Error> {
    let mut spec = limit_opts(limits, longs, flags);
    spec.push(Opt {
        short: b'h',
        long: "help",
        takes_value: false,
    });
    let g = getopt(cmd, args, &spec)?;
    if g.has(b'h') {
        return Ok(None);
    }
    if let Some(extra) = g.pos.first() {
        return err(cmd, ArgError::Unexpected(quote(extra)));
    }
    let mut out = defaults::<N>(limits);
    for (o, l) in out.iter_mut().zip(limits) {
        if let Some(v) = l.short().and_then(|c| g.value(c)) {
            *o = limit(cmd, l, v)? as u32;
        }
    }
    let given = g
        .opts
        .iter()
        .map(|&(c, _)| c)
        .filter(|c| flags.iter().any(|f| f.short == *c))
        .collect();
    Ok(Some((out, given)))
}

/// `soak`'s `-r SEED` / `--seed SEED`, if given (the rest was checked by
/// `workload_opts`).
fn seed_opt(a: &[&str]) -> Result<Option<u32>, Error> {
    let spec = [
        Opt {
            short: b't',
            long: "threads",
            takes_value: true,
        },
        Opt {
            short: b's',
            long: "secs",
            takes_value: true,
        },
        Opt {
            short: b'r',
            long: "seed",
            takes_value: true,
        },
    ];
    let g = getopt("soak", a, &spec)?;
    match g.value(b'r') {
        Some(v) => Ok(Some(limit("soak", &Soak::LIMITS[2], v)? as u32)),
        None => Ok(None),
    }
}

/// `hackbench [-p|--pipe] [-T|--threads|-P|--process] [-g N] [-l N] [-f N]
/// [-s N] [-C linux|NS] [-K linux|SWITCH_NS,WAKE_NS] [-M] [-R] [-W FLIPS]`; of `-T` and `-P`
/// the last one given counts, as in Linux.
pub(super) fn parse_hackbench(a: &[&str]) -> Result<Command, Error> {
    let flag = |short, long| Opt {
        short,
        long,
        takes_value: false,
    };
    let flags = [
        flag(b'p', "pipe"),
        flag(b'T', "threads"),
        flag(b'P', "process"),
        Opt {
            short: b'C',
            long: "syscall-cost",
            takes_value: true,
        },
        Opt {
            short: b'K',
            long: "sched-cost",
            takes_value: true,
        },
        flag(b'M', "pipe-mutex"),
        flag(b'R', "roles"),
        Opt {
            short: b'W',
            long: "wakee-flips",
            takes_value: true,
        },
    ];
    let w = workload_opts("hackbench", a, Hackbench::LIMITS, Hackbench::LONG, &flags)?;
    let Some(([g, l, f, s], given)) = w else {
        return Ok(Command::Help(Some("hackbench")));
    };
    let threads = given
        .iter()
        .rev()
        .find(|&&c| c == b'T' || c == b'P')
        .is_some_and(|&c| c == b'T');
    let h = Hackbench {
        groups: g,
        loops: l,
        fds: f,
        datasize: s,
        pipe: given.contains(&b'p'),
        threads,
        syscall_cost: syscall_cost_opt(a, &flags)?,
        sched_cost: sched_cost_opt(a, &flags)?,
        pipe_mutex: given.contains(&b'M'),
        roles: given.contains(&b'R'),
        wakee_flips: wakee_flips_opt(a, &flags)?,
    };
    if h.pipe_mutex && !(h.pipe && h.syscall_cost == Some(SyscallCost::Linux)) {
        return err("hackbench", ArgError::PipeMutexNeedsPipeCost);
    }
    Ok(Command::Hackbench(h))
}

/// hackbench's options as `getopt` takes them (the limits and `flags`).
fn hackbench_getopt<'a>(a: &[&'a str], flags: &[Opt]) -> Result<super::args::Getopt<'a>, Error> {
    let mut spec: Vec<Opt> = Hackbench::LIMITS
        .iter()
        .zip(Hackbench::LONG)
        .filter_map(|(l, &long)| {
            l.short().map(|short| Opt {
                short,
                long,
                takes_value: true,
            })
        })
        .collect();
    spec.extend_from_slice(flags);
    getopt("hackbench", a, &spec)
}

/// `hackbench`'s `-C linux|NS` / `--syscall-cost linux|NS`, if given (the
/// other options were checked by `workload_opts`, with the same `flags`).
fn syscall_cost_opt(a: &[&str], flags: &[Opt]) -> Result<Option<SyscallCost>, Error> {
    const C: &str = "hackbench";
    let g = hackbench_getopt(a, flags)?;
    match g.value(b'C') {
        None => Ok(None),
        Some("linux") => Ok(Some(SyscallCost::Linux)),
        Some(v) if !super::args::is_int(v) => err(C, ArgError::BadSyscallCost(quote(v))),
        Some(v) => Ok(Some(SyscallCost::Ns(
            limit(C, &Hackbench::SYSCALL_COST_NS, v)? as u32,
        ))),
    }
}

/// `hackbench`'s `-W FLIPS` / `--wakee-flips FLIPS`, if given (the other
/// options were checked by `workload_opts`).
fn wakee_flips_opt(a: &[&str], flags: &[Opt]) -> Result<Option<u32>, Error> {
    let g = hackbench_getopt(a, flags)?;
    g.value(b'W')
        .map(|v| Ok(limit("hackbench", &Hackbench::WAKEE_FLIPS, v)? as u32))
        .transpose()
}

/// `hackbench`'s `-K linux|SWITCH_NS,WAKE_NS` / `--sched-cost ...`, if
/// given (the other options were checked by `workload_opts`).
fn sched_cost_opt(a: &[&str], flags: &[Opt]) -> Result<Option<SchedCost>, Error> {
    const C: &str = "hackbench";
    let g = hackbench_getopt(a, flags)?;
    let v = match g.value(b'K') {
        None => return Ok(None),
        Some("linux") => return Ok(Some(SchedCost::Linux)),
        Some(v) => v,
    };
    let bad = || err(C, ArgError::BadSchedCost(quote(v)));
    let Some((sw, wk)) = v.split_once(',') else {
        return bad();
    };
    if !super::args::is_int(sw) || !super::args::is_int(wk) {
        return bad();
    }
    Ok(Some(SchedCost::Ns {
        switch_ns: limit(C, &Hackbench::SCHED_COST_NS, sw)? as u32,
        wake_ns: limit(C, &Hackbench::SCHED_COST_NS, wk)? as u32,
    }))
}

/// `schbench [-m N] [-t N] [-r N] [-F N] [-s N]`.
pub(super) fn parse_schbench(a: &[&str]) -> Result<Command, Error> {
    let w = workload_opts("schbench", a, Schbench::LIMITS, Schbench::LONG, &[])?;
    let Some(([m, t, r, f, s], _)) = w else {
        return Ok(Command::Help(Some("schbench")));
    };
    Ok(Command::Schbench(Schbench {
        message_threads: m,
        workers: t,
        runtime_s: r,
        footprint_kb: f,
        sleep_us: s,
    }))
}

/// `pgbench [-c N] [-t N] [-S|--select-only]`.
pub(super) fn parse_pgbench(a: &[&str]) -> Result<Command, Error> {
    let flags = [Opt {
        short: b'S',
        long: "select-only",
        takes_value: false,
    }];
    let w = workload_opts("pgbench", a, Pgbench::LIMITS, Pgbench::LONG, &flags)?;
    let Some(([c, t], f)) = w else {
        return Ok(Command::Help(Some("pgbench")));
    };
    Ok(Command::Pgbench(Pgbench {
        clients: c,
        transactions: t,
        select_only: f.contains(&b'S'),
    }))
}

/// `cyclictest [-t N] [-i US] [-l N] [-p PRIO] [-L GROUPS] [-a CPU]`.
pub(super) fn parse_cyclictest(a: &[&str]) -> Result<Command, Error> {
    const C: &str = "cyclictest";
    let affinity = [Opt {
        short: b'a',
        long: "affinity",
        takes_value: true,
    }];
    let w = workload_opts(C, a, Cyclictest::LIMITS, Cyclictest::LONG, &affinity)?;
    let Some(([t, i, l, p, g], _)) = w else {
        return Ok(Command::Help(Some(C)));
    };
    // `workload_opts` checked every option; read -a's value apart (it has
    // no default, so it is no limit there).
    let all = limit_opts(Cyclictest::LIMITS, Cyclictest::LONG, &affinity);
    let cpu = match getopt(C, a, &all)?.value(b'a') {
        Some(v) => Some(cpu_id(
            C,
            &Cyclictest::AFFINITY,
            limit(C, &Cyclictest::AFFINITY, v)?,
        )?),
        None => None,
    };
    Ok(Command::Cyclictest(Cyclictest {
        threads: t,
        interval_us: i,
        loops: l,
        prio: p,
        load_groups: g,
        cpu,
    }))
}

/// `wakelat [-d MS] [-c CPU] [-n HOGS] [-p PERIOD_US] [-P POLICY] [-s SLICE_US]`.
pub(super) fn parse_wakelat(a: &[&str]) -> Result<Command, Error> {
    const C: &str = "wakelat";
    // -P, -s and -f are not limits with defaults: read them apart, after
    // `workload_opts` has checked the rest (it knows them as flags only to
    // accept them; their values are taken here).
    let spec = [
        Opt {
            short: b'P',
            long: "policy",
            takes_value: true,
        },
        Opt {
            short: b's',
            long: "slice",
            takes_value: true,
        },
        Opt {
            short: b'f',
            long: "fifo",
            takes_value: true,
        },
    ];
    let w = workload_opts(C, a, Wakelat::LIMITS, Wakelat::LONG, &spec)?;
    let Some(([d, c, n, p], _)) = w else {
        return Ok(Command::Help(Some(C)));
    };
    let g = getopt(C, a, &limit_opts(Wakelat::LIMITS, Wakelat::LONG, &spec))?;
    let policy = match g.value(b'P') {
        Some(v) => fair_policy(C, v)?,
        None => Policy::Normal,
    };
    let slice_us = match g.value(b's') {
        Some(v) => limit(C, &Wakelat::SLICE, v)? as u32,
        None => 0,
    };
    let hog_fifo_prio = match g.value(b'f') {
        Some(v) => limit(C, &Wakelat::HOG_FIFO, v)? as u8,
        None => 0,
    };
    let cpu = cpu_id(C, &Wakelat::LIMITS[1], i64::from(c))?;
    Ok(Command::Wakelat(Wakelat {
        duration_ms: d,
        cpu,
        hogs: n,
        period_us: p,
        policy,
        slice_us,
        hog_fifo_prio,
    }))
}

/// `dlperiodic [-n TASKS] [-r US] [-D US] [-p US] [-w US] [-d MS]`; the
/// deadline defaults to the period; runtime <= deadline <= period and work
/// <= runtime are checked here (a job longer than its budget would be
/// throttled in every period).
pub(super) fn parse_dlperiodic(a: &[&str]) -> Result<Command, Error> {
    const C: &str = "dlperiodic";
    let Some(([n, r, d, p, w, ms], _)) =
        workload_opts(C, a, Dlperiodic::LIMITS, Dlperiodic::LONG, &[])?
    else {
        return Ok(Command::Help(Some(C)));
    };
    let deadline = if d == 0 { p } else { d };
    let bad = |why| err(C, ArgError::BadDlShape(why));
    if r > deadline {
        return bad("the runtime (-r) must be at most the deadline (-D)");
    }
    if deadline > p {
        return bad("the deadline (-D) must be at most the period (-p)");
    }
    if w > r {
        return bad("the work (-w) must be at most the runtime (-r): a longer job is throttled every period");
    }
    Ok(Command::Dlperiodic(Dlperiodic {
        tasks: n,
        runtime_us: r,
        deadline_us: deadline,
        period_us: p,
        work_us: w,
        duration_ms: ms,
    }))
}

/// `perfpipe [-l N] [-x|--cross|-s|--same]`.
pub(super) fn parse_perfpipe(a: &[&str]) -> Result<Command, Error> {
    let flags = [
        Opt {
            short: b'x',
            long: "cross",
            takes_value: false,
        },
        Opt {
            short: b's',
            long: "same",
            takes_value: false,
        },
    ];
    let w = workload_opts("perfpipe", a, Perfpipe::LIMITS, &[], &flags)?;
    let Some(([l], f)) = w else {
        return Ok(Command::Help(Some("perfpipe")));
    };
    let (cross, same) = (f.contains(&b'x'), f.contains(&b's'));
    if cross && same {
        return err("perfpipe", ArgError::ConflictingOptions("-x", "-s"));
    }
    Ok(Command::Perfpipe(Perfpipe {
        loops: l,
        cross,
        same,
    }))
}

/// `soak [-t N] [-s SECS] [-r SEED]`.
pub(super) fn parse_soak(a: &[&str]) -> Result<Command, Error> {
    let w = workload_opts("soak", a, Soak::LIMITS, Soak::LONG, &[])?;
    let Some(([t, s, _], _)) = w else {
        return Ok(Command::Help(Some("soak")));
    };
    // The seed has no default: whether it was given matters.
    let seed = seed_opt(a)?;
    Ok(Command::Soak(Soak {
        threads: t,
        secs: s,
        seed,
    }))
}

/// `yield [-l N]`.
pub(super) fn parse_yield(a: &[&str]) -> Result<Command, Error> {
    let Some(([l], _)) = workload_opts("yield", a, YieldPp::LIMITS, &[], &[])? else {
        return Ok(Command::Help(Some("yield")));
    };
    Ok(Command::Yield(YieldPp { loops: l }))
}
