//! The workloads: `spin`, `hackbench`, `schbench`, `pgbench`, `cyclictest`,
//! `perfpipe`, `soak` and `yield`. Each has a struct of its validated options
//! with the [`Limit`]s `help` prints, and a parser; `-h`/`--help` asks for
//! the command's help instead.

use alloc::vec::Vec;

use super::args::{defaults, err, getopt, limit, Opt};
use super::{Command, Limit, MAX_CPUS};
use crate::error::{quote, ArgError, Error};

/// A `spin` workload: one CPU-bound thread per nice value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spin {
    /// How long each thread spins.
    pub duration_ms: u32,
    /// Pin every thread to this CPU (`-c`); `None` lets the balancer place them.
    pub cpu: Option<u32>,
    /// One thread per entry, each -20..=19.
    pub nices: Vec<i32>,
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
    /// `NICE`.
    pub const NICE: Limit = Limit {
        name: "NICE",
        min: -20,
        max: 19,
        default: None,
        doc: "one thread per value, 1 to 16 values",
    };
    /// `-d MS`, `-c CPU`, `NICE`.
    pub const LIMITS: &'static [Limit] = &[Self::DURATION, Self::CPU, Self::NICE];
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
    ];
}

impl Default for Cyclictest {
    fn default() -> Self {
        let [t, i, l, p] = defaults(Self::LIMITS);
        Cyclictest {
            threads: t,
            interval_us: i,
            loops: l,
            prio: p,
        }
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
    let (dur, cpu_l, nice_l) = (&Spin::DURATION, &Spin::CPU, &Spin::NICE);
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
        Some(c) => Some(limit(C, cpu_l, c)? as u32),
        None => None,
    };
    if g.pos.is_empty() {
        return err(C, ArgError::Missing(nice_l.name));
    }
    if g.pos.len() > Spin::MAX_THREADS {
        return err(
            C,
            ArgError::TooMany {
                what: nice_l.name,
                max: Spin::MAX_THREADS,
            },
        );
    }
    let mut nices = Vec::with_capacity(g.pos.len());
    for w in &g.pos {
        nices.push(limit(C, nice_l, w)? as i32);
    }
    Ok(Some(Spin {
        duration_ms,
        cpu,
        nices,
    }))
}

/// A workload's limit values (in `limits` order) and the flags given (in the
/// order given).
type WorkloadOpts<const N: usize> = ([u32; N], Vec<u8>);

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
    for f in flags {
        spec.push(*f);
    }
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
/// [-s N]`; of `-T` and `-P` the last one given counts, as in Linux.
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
    Ok(Command::Hackbench(Hackbench {
        groups: g,
        loops: l,
        fds: f,
        datasize: s,
        pipe: given.contains(&b'p'),
        threads,
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

/// `cyclictest [-t N] [-i US] [-l N] [-p PRIO]`.
pub(super) fn parse_cyclictest(a: &[&str]) -> Result<Command, Error> {
    let Some(([t, i, l, p], _)) = workload_opts("cyclictest", a, Cyclictest::LIMITS, &[], &[])?
    else {
        return Ok(Command::Help(Some("cyclictest")));
    };
    Ok(Command::Cyclictest(Cyclictest {
        threads: t,
        interval_us: i,
        loops: l,
        prio: p,
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
