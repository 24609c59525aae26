//! One command line to a typed, fully validated [`Command`].
//!
//! The line is split on ASCII whitespace (no quoting: no argument needs spaces).
//! Options follow Linux conventions: short options may be clustered (`-cp`), a
//! value may be attached (`-d100`) or follow (`-d 100`), options and positional
//! arguments may be mixed, `--` ends the options, and a word such as `-5` is a
//! (negative) number, not an option, so `spin -d 100 -5 0 5` works. Numbers are
//! decimal with an optional sign, except `taskset` masks (hex, like Linux).
//!
//! Everything the shell can check without kernel state is checked here (ranges,
//! names, CPU masks, feature names, sysctl keys), so the executor only has to
//! check what needs the kernel: does the PID exist, is the CPU online, is the
//! tunable value in range (done by `sched` when it is written).

use alloc::string::String;
use alloc::vec::Vec;

use sched::config::FEATURES_KEY;
use sched::tunables::TUNABLES;
use sched::{CpuMask, Feature, Features, Policy, PreemptMode};

use crate::editor::{LineError, MAX_LINE};
use crate::error::{quote, ArgError, BgError, Error};

/// A thread id as shown by `ps`.
pub type Pid = u32;

/// CPUs a mask or CPU number can name (a [`CpuMask`]'s 256).
pub const MAX_CPUS: u32 = sched::MAX_CPUS as u32;

/// Background jobs (`WORKLOAD &`) that may exist at once; job numbers are
/// `1..=MAX_JOBS` (`%1` .. `%8`).
pub const MAX_JOBS: u32 = 8;

/// `%JOB` arguments.
pub const JOB: Limit = Limit {
    name: "%JOB",
    min: 1,
    max: MAX_JOBS as i64,
    default: None,
    doc: "job number, as shown by jobs and by WORKLOAD &",
};

/// A numeric argument's accepted range (and default), shared by the parser and
/// `help CMD`, so the two cannot disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// How it is written in the usage line (`-d MS`, `NICE`).
    pub name: &'static str,
    /// Smallest accepted value.
    pub min: i64,
    /// Largest accepted value.
    pub max: i64,
    /// The value when the option is left out (`None`: required or no default).
    pub default: Option<i64>,
    /// One line on what it is.
    pub doc: &'static str,
}

impl Limit {
    /// The option letter of a `-x NAME` limit.
    fn short(&self) -> Option<u8> {
        match self.name.as_bytes() {
            [b'-', c, ..] => Some(*c),
            _ => None,
        }
    }
}

/// `PID` arguments.
pub const PID: Limit = Limit {
    name: "PID",
    min: 0,
    max: u32::MAX as i64,
    default: None,
    doc: "thread id, as shown by ps",
};
/// `nice PID N`.
pub const NICE: Limit = Limit {
    name: "N",
    min: -20,
    max: 19,
    default: None,
    doc: "nice value (weight 88761 .. 15)",
};

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

/// One setting of a `compare` configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setting {
    /// `NAME` / `NO_NAME` (also `kernel.sched_features=NAME`).
    Feature(Feature, bool),
    /// `key=value` of a tunable (the key is the table's; the value is
    /// range-checked by `SchedConfig::sysctl_set`).
    Sysctl {
        /// The key.
        key: &'static str,
        /// The value text.
        value: String,
    },
    /// `preempt=MODE` (also `kernel.sched_preempt=MODE`).
    Preempt(PreemptMode),
}

/// One `-c` configuration of `compare`: exactly these settings on top of the
/// boot defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompareConfig {
    /// The settings joined by `,` (`default` when there are none): the
    /// column name.
    pub label: String,
    /// The settings, in the order given.
    pub settings: Vec<Setting>,
}

/// `compare [-n RUNS] [-w WARMUP] -c CONFIG ... -- WORKLOAD ARGS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compare {
    /// `-n`: kept runs per configuration.
    pub runs: u32,
    /// `-w`: warmup runs per configuration (dropped, counted).
    pub warmup: u32,
    /// The configurations; the first is the baseline.
    pub configs: Vec<CompareConfig>,
    /// The workload (a `spin`, `hackbench`, `schbench`, `pgbench`,
    /// `cyclictest`, `perfpipe` or `yield` command).
    pub workload: alloc::boxed::Box<Command>,
}

impl Compare {
    /// Most configurations.
    pub const MAX_CONFIGS: usize = 8;
    /// `-n RUNS`.
    pub const RUNS: Limit = Limit {
        name: "-n RUNS",
        min: 1,
        max: 100,
        default: Some(5),
        doc: "kept runs per configuration",
    };
    /// `-w WARMUP`.
    pub const WARMUP: Limit = Limit {
        name: "-w WARMUP",
        min: 0,
        max: 20,
        default: Some(1),
        doc: "warmup runs per configuration (dropped)",
    };
    /// `-n`, `-w`.
    pub const LIMITS: &'static [Limit] = &[Self::RUNS, Self::WARMUP];
}

/// The defaults of a workload's limits (all of them have one).
fn defaults<const N: usize>(limits: &[Limit]) -> [u32; N] {
    let mut out = [0; N];
    for (o, l) in out.iter_mut().zip(limits) {
        *o = l.default.unwrap_or(l.min) as u32;
    }
    out
}

/// `sysctl` forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysctlCmd {
    /// `sysctl -a`.
    All,
    /// `sysctl KEY` (the key is known; the `&'static str` is the table's).
    Get(&'static str),
    /// `sysctl KEY=VALUE` (key known, value non-empty; for
    /// `kernel.sched_features` a valid `NAME`/`NO_NAME`; tunable values are
    /// range-checked by `SchedConfig::sysctl_set`).
    Set {
        /// The key.
        key: &'static str,
        /// The value text.
        value: String,
    },
}

/// `trace` actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceCmd {
    /// Start recording scheduler events.
    Start,
    /// Stop recording.
    Stop,
    /// Print the recorded events.
    Dump,
}

/// A parsed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `help [CMD]` (the command's table name).
    Help(Option<&'static str>),
    /// `features` (print) or `features [NO_]NAME` (flip).
    Features(Option<(Feature, bool)>),
    /// `sysctl ...`.
    Sysctl(SysctlCmd),
    /// `preempt` (print) or `preempt MODE` (switch).
    Preempt(Option<PreemptMode>),
    /// `ps`.
    Ps,
    /// `sched_debug`.
    SchedDebug,
    /// `stat`.
    Stat,
    /// `nice PID N`.
    Nice {
        /// Target thread.
        pid: Pid,
        /// -20..=19.
        nice: i32,
    },
    /// `chrt [-f|-r|-o|-b|-i] [-p] PRIO PID` (no policy option: SCHED_RR, as in Linux).
    Chrt {
        /// The policy (`-o` is SCHED_NORMAL).
        policy: Policy,
        /// 1..=99 for FIFO/RR, 0 otherwise.
        prio: u8,
        /// Target thread.
        pid: Pid,
    },
    /// `chrt -p PID`: show the policy.
    ChrtShow {
        /// Target thread.
        pid: Pid,
    },
    /// `taskset -p MASK PID` / `taskset -cp LIST PID`.
    Taskset {
        /// Allowed CPUs; never empty.
        mask: CpuMask,
        /// Target thread.
        pid: Pid,
    },
    /// `taskset -p PID` / `taskset -cp PID`: show the affinity.
    TasksetShow {
        /// Target thread.
        pid: Pid,
        /// `-c`: print a CPU list instead of a hex mask.
        list: bool,
    },
    /// `kill PID`.
    Kill {
        /// Target thread.
        pid: Pid,
    },
    /// `kill %JOB`.
    KillJob {
        /// Job number, 1..=[`MAX_JOBS`].
        job: u32,
    },
    /// `WORKLOAD ... &`: a workload command (spin, hackbench, schbench,
    /// pgbench, cyclictest, perfpipe) run in the background.
    Background(alloc::boxed::Box<Command>),
    /// `jobs [-l]`: the background jobs; `-l` adds thread ids.
    Jobs {
        /// `-l`: the leader's and the workload's thread ids too.
        long: bool,
    },
    /// `wait [%JOB]`: wait for one job or (`None`) all of them.
    Wait(Option<u32>),
    /// `fg [%JOB]`: wait for a job (`None`: the newest) with Ctrl-C killing it.
    Fg(Option<u32>),
    /// `spin -d MS [-c CPU] NICE...`.
    Spin(Spin),
    /// `hackbench [-p] [-T|-P] [-g GROUPS] [-l LOOPS] [-f FDS] [-s DATASIZE]`.
    Hackbench(Hackbench),
    /// `schbench [-m MSG_THREADS] [-t WORKERS] [-r SECONDS] [-F KB] [-s USEC]`.
    Schbench(Schbench),
    /// `pgbench [-c CLIENTS] [-t TX] [-S]`.
    Pgbench(Pgbench),
    /// `cyclictest [-t THREADS] [-i INTERVAL_US] [-l LOOPS] [-p PRIO]`.
    Cyclictest(Cyclictest),
    /// `perfpipe [-l LOOPS]`.
    Perfpipe(Perfpipe),
    /// `soak [-t THREADS] [-s SECS] [-r SEED]`.
    Soak(Soak),
    /// `yield [-l LOOPS]`.
    Yield(YieldPp),
    /// `trace start|stop|dump`.
    Trace(TraceCmd),
    /// `compare ... -- WORKLOAD`.
    Compare(Compare),
    /// `poweroff`.
    Poweroff,
}

impl Command {
    /// The command's name, as in the help table.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Help(_) => "help",
            Command::Features(_) => "features",
            Command::Sysctl(_) => "sysctl",
            Command::Preempt(_) => "preempt",
            Command::Ps => "ps",
            Command::SchedDebug => "sched_debug",
            Command::Stat => "stat",
            Command::Nice { .. } => "nice",
            Command::Chrt { .. } | Command::ChrtShow { .. } => "chrt",
            Command::Taskset { .. } | Command::TasksetShow { .. } => "taskset",
            Command::Kill { .. } | Command::KillJob { .. } => "kill",
            Command::Background(c) => c.name(),
            Command::Jobs { .. } => "jobs",
            Command::Wait(_) => "wait",
            Command::Fg(_) => "fg",
            Command::Spin(_) => "spin",
            Command::Hackbench(_) => "hackbench",
            Command::Schbench(_) => "schbench",
            Command::Pgbench(_) => "pgbench",
            Command::Cyclictest(_) => "cyclictest",
            Command::Perfpipe(_) => "perfpipe",
            Command::Soak(_) => "soak",
            Command::Yield(_) => "yield",
            Command::Trace(_) => "trace",
            Command::Compare(_) => "compare",
            Command::Poweroff => "poweroff",
        }
    }

    /// Whether it is a workload command (one that may run with `&`).
    pub fn is_workload(&self) -> bool {
        matches!(
            self,
            Command::Spin(_)
                | Command::Hackbench(_)
                | Command::Schbench(_)
                | Command::Pgbench(_)
                | Command::Cyclictest(_)
                | Command::Perfpipe(_)
        )
    }
}

/// Parses one line. `Ok(None)` for an empty or blank line.
///
/// Never panics; any input that is not a valid command is an [`Error`].
pub fn parse(line: &str) -> Result<Option<Command>, Error> {
    if line.len() > MAX_LINE {
        return Err(LineError::TooLong { max: MAX_LINE }.into());
    }
    if !line.is_ascii() {
        return Err(LineError::NonAscii.into());
    }
    if let Some(b) = line
        .bytes()
        .find(|b| b.is_ascii_control() && !b.is_ascii_whitespace())
    {
        return Err(Error::ControlChar(b));
    }
    // Blank lines and `# comments` (as in sh) do nothing: scripts piped
    // into the shell can carry notes.
    let first = line.split_ascii_whitespace().next();
    if first.is_none_or(|w| w.starts_with('#')) {
        return Ok(None);
    }
    if line.contains('&') {
        return parse_background(line);
    }
    parse_foreground(line)
}

/// `LINE &`: `&` must end the line and follow a workload; `&&` and `&`
/// anywhere else are refused (one command per line, no lists).
fn parse_background(line: &str) -> Result<Option<Command>, Error> {
    let body = line.trim_end();
    if line.contains("&&") {
        return Err(Error::Background(BgError::AndList));
    }
    let Some(cmd) = body.strip_suffix('&') else {
        return Err(Error::Background(BgError::NotAtEnd));
    };
    if cmd.contains('&') {
        return Err(Error::Background(BgError::NotAtEnd));
    }
    match parse_foreground(cmd)? {
        None => Err(Error::Background(BgError::Empty)),
        Some(c) if c.is_workload() => Ok(Some(Command::Background(alloc::boxed::Box::new(c)))),
        Some(c) => Err(Error::Background(BgError::NotAWorkload(c.name()))),
    }
}

/// One command without `&`.
fn parse_foreground(line: &str) -> Result<Option<Command>, Error> {
    // `compare` takes quoted configurations: it splits its own words.
    if let Some(rest) = line.trim_start().strip_prefix("compare") {
        if rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_whitespace()) {
            return parse_compare(rest).map(Some);
        }
    }
    let mut words = line.split_ascii_whitespace();
    let Some(name) = words.next().filter(|w| !w.starts_with('#')) else {
        return Ok(None);
    };
    let args: Vec<&str> = words.collect();
    let a = args.as_slice();
    let cmd = match name {
        "help" => parse_help(a)?,
        "features" => parse_features(a)?,
        "sysctl" => Command::Sysctl(parse_sysctl(a)?),
        "preempt" => parse_preempt(a)?,
        "ps" => no_args("ps", a, Command::Ps)?,
        "sched_debug" => no_args("sched_debug", a, Command::SchedDebug)?,
        "stat" => no_args("stat", a, Command::Stat)?,
        "poweroff" => no_args("poweroff", a, Command::Poweroff)?,
        "nice" => parse_nice(a)?,
        "chrt" => parse_chrt(a)?,
        "taskset" => parse_taskset(a)?,
        "kill" => parse_kill(a)?,
        "jobs" => parse_jobs(a)?,
        "wait" => Command::Wait(opt_job("wait", a)?),
        "fg" => Command::Fg(opt_job("fg", a)?),
        "spin" => match parse_spin(a)? {
            Some(s) => Command::Spin(s),
            None => Command::Help(Some("spin")),
        },
        "hackbench" => parse_hackbench(a)?,
        "schbench" => {
            let w = workload_opts("schbench", a, Schbench::LIMITS, Schbench::LONG, &[])?;
            let Some(([m, t, r, f, s], _)) = w else {
                return Ok(Some(Command::Help(Some("schbench"))));
            };
            Command::Schbench(Schbench {
                message_threads: m,
                workers: t,
                runtime_s: r,
                footprint_kb: f,
                sleep_us: s,
            })
        }
        "pgbench" => {
            let flags = [Opt {
                short: b'S',
                long: "select-only",
                takes_value: false,
            }];
            let w = workload_opts("pgbench", a, Pgbench::LIMITS, Pgbench::LONG, &flags)?;
            let Some(([c, t], f)) = w else {
                return Ok(Some(Command::Help(Some("pgbench"))));
            };
            Command::Pgbench(Pgbench {
                clients: c,
                transactions: t,
                select_only: f.contains(&b'S'),
            })
        }
        "cyclictest" => {
            let Some(([t, i, l, p], _)) =
                workload_opts("cyclictest", a, Cyclictest::LIMITS, &[], &[])?
            else {
                return Ok(Some(Command::Help(Some("cyclictest"))));
            };
            Command::Cyclictest(Cyclictest {
                threads: t,
                interval_us: i,
                loops: l,
                prio: p,
            })
        }
        "perfpipe" => {
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
                return Ok(Some(Command::Help(Some("perfpipe"))));
            };
            let (cross, same) = (f.contains(&b'x'), f.contains(&b's'));
            if cross && same {
                return err("perfpipe", ArgError::ConflictingOptions("-x", "-s"));
            }
            Command::Perfpipe(Perfpipe {
                loops: l,
                cross,
                same,
            })
        }
        "soak" => {
            let w = workload_opts("soak", a, Soak::LIMITS, Soak::LONG, &[])?;
            let Some(([t, s, _], _)) = w else {
                return Ok(Some(Command::Help(Some("soak"))));
            };
            // The seed has no default: whether it was given matters.
            let seed = seed_opt(a)?;
            Command::Soak(Soak {
                threads: t,
                secs: s,
                seed,
            })
        }
        "yield" => {
            let Some(([l], _)) = workload_opts("yield", a, YieldPp::LIMITS, &[], &[])? else {
                return Ok(Some(Command::Help(Some("yield"))));
            };
            Command::Yield(YieldPp { loops: l })
        }
        "trace" => parse_trace(a)?,
        _ => return Err(Error::UnknownCommand(quote(name))),
    };
    Ok(Some(cmd))
}

// ---------------------------------------------------------------------------
// Helpers

fn err<T>(cmd: &'static str, kind: ArgError) -> Result<T, Error> {
    Err(Error::arg(cmd, kind))
}

/// Is `w` an option word? `-x...` or `--...`, but not `-` and not `-5`.
fn is_option(w: &str) -> bool {
    matches!(w.as_bytes(), [b'-', c, ..] if !c.is_ascii_digit())
}

fn no_args(cmd: &'static str, args: &[&str], c: Command) -> Result<Command, Error> {
    match args.first() {
        None => Ok(c),
        Some(w) if is_option(w) => err(cmd, ArgError::UnknownOption(quote(w))),
        Some(w) => err(cmd, ArgError::Unexpected(quote(w))),
    }
}

/// Refuses option words in a command that takes none.
fn no_options(cmd: &'static str, args: &[&str]) -> Result<(), Error> {
    match args.iter().find(|w| is_option(w)) {
        Some(w) => err(cmd, ArgError::UnknownOption(quote(w))),
        None => Ok(()),
    }
}

/// Is `w` a decimal integer with an optional sign (of any size)?
fn is_int(w: &str) -> bool {
    let digits = w.strip_prefix(['+', '-']).unwrap_or(w);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A decimal integer (optional sign) in `min..=max`.
fn int(cmd: &'static str, what: &'static str, w: &str, min: i64, max: i64) -> Result<i64, Error> {
    if !is_int(w) {
        return err(
            cmd,
            ArgError::NotANumber {
                what,
                got: quote(w),
            },
        );
    }
    match w.parse::<i64>() {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => err(
            cmd,
            ArgError::OutOfRange {
                what,
                min,
                max,
                got: quote(w),
            },
        ),
    }
}

fn limit(cmd: &'static str, l: &Limit, w: &str) -> Result<i64, Error> {
    int(cmd, l.name, w, l.min, l.max)
}

fn pid(cmd: &'static str, w: &str) -> Result<Pid, Error> {
    Ok(limit(cmd, &PID, w)? as Pid)
}

/// One option a command accepts.
#[derive(Clone, Copy)]
struct Opt {
    short: u8,
    long: &'static str,
    takes_value: bool,
}

/// Options (letter, value) in the order given, and positional arguments.
struct Getopt<'a> {
    opts: Vec<(u8, Option<&'a str>)>,
    pos: Vec<&'a str>,
}

impl Getopt<'_> {
    fn has(&self, c: u8) -> bool {
        self.opts.iter().any(|&(o, _)| o == c)
    }

    fn value(&self, c: u8) -> Option<&str> {
        self.opts
            .iter()
            .find(|&&(o, _)| o == c)
            .and_then(|&(_, v)| v)
    }
}

/// GNU-style option parsing: clusters (`-cp`), attached (`-d100`) or separate
/// values, `--long[=value]`, `--` ends options, options anywhere.
fn getopt<'a>(cmd: &'static str, args: &[&'a str], spec: &[Opt]) -> Result<Getopt<'a>, Error> {
    let mut g = Getopt {
        opts: Vec::new(),
        pos: Vec::new(),
    };
    let mut i = 0;
    let mut only_pos = false;
    fn push<'a>(
        cmd: &'static str,
        g: &mut Getopt<'a>,
        c: u8,
        v: Option<&'a str>,
        typed: &str,
    ) -> Result<(), Error> {
        if g.has(c) {
            return err(cmd, ArgError::Duplicate(quote(typed)));
        }
        g.opts.push((c, v));
        Ok(())
    }
    while i < args.len() {
        let w = args[i];
        i += 1;
        if only_pos || !is_option(w) {
            g.pos.push(w);
            continue;
        }
        if w == "--" {
            only_pos = true;
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let Some(o) = spec.iter().find(|o| !o.long.is_empty() && o.long == name) else {
                return err(cmd, ArgError::UnknownOption(quote(w)));
            };
            let v = match (o.takes_value, inline) {
                (true, Some(v)) => Some(v),
                (true, None) if i < args.len() => {
                    i += 1;
                    Some(args[i - 1])
                }
                (true, None) => return err(cmd, ArgError::NeedsValue(quote(w))),
                (false, Some(_)) => return err(cmd, ArgError::TakesNoValue(quote(w))),
                (false, None) => None,
            };
            push(cmd, &mut g, o.short, v, w)?;
            continue;
        }
        for (j, &c) in w.as_bytes().iter().enumerate().skip(1) {
            let typed = &w[j..=j]; // ASCII: one byte is one char
            let Some(o) = spec.iter().find(|o| o.short == c) else {
                return err(cmd, ArgError::UnknownOption(alloc::format!("-{typed}")));
            };
            if !o.takes_value {
                push(cmd, &mut g, c, None, &alloc::format!("-{typed}"))?;
                continue;
            }
            let rest = &w[j + 1..];
            let v = if !rest.is_empty() {
                rest
            } else if i < args.len() {
                i += 1;
                args[i - 1]
            } else {
                return err(cmd, ArgError::NeedsValue(alloc::format!("-{typed}")));
            };
            push(cmd, &mut g, c, Some(v), &alloc::format!("-{typed}"))?;
            break;
        }
    }
    Ok(g)
}

// ---------------------------------------------------------------------------
// Commands

fn parse_help(args: &[&str]) -> Result<Command, Error> {
    no_options("help", args)?;
    match args {
        [] => Ok(Command::Help(None)),
        [topic] => match crate::help::lookup(topic) {
            Some(h) => Ok(Command::Help(Some(h.name))),
            None => err("help", ArgError::UnknownTopic(quote(topic))),
        },
        [_, extra, ..] => err("help", ArgError::Unexpected(quote(extra))),
    }
}

fn parse_features(args: &[&str]) -> Result<Command, Error> {
    no_options("features", args)?;
    match args {
        [] => Ok(Command::Features(None)),
        [name] => match Features::parse(name) {
            Ok(f) => Ok(Command::Features(Some(f))),
            Err(_) => err("features", ArgError::UnknownFeature(quote(name))),
        },
        [_, extra, ..] => err("features", ArgError::Unexpected(quote(extra))),
    }
}

/// The table's spelling of a sysctl key.
fn sysctl_key(k: &str) -> Option<&'static str> {
    if k == FEATURES_KEY {
        return Some(FEATURES_KEY);
    }
    TUNABLES.iter().find(|t| t.key == k).map(|t| t.key)
}

fn parse_sysctl(args: &[&str]) -> Result<SysctlCmd, Error> {
    const C: &str = "sysctl";
    let (write, args) = match args {
        ["-w", rest @ ..] => (true, rest),
        _ => (false, args),
    };
    if args.len() > 1 {
        let spaced = args.iter().any(|w| w.starts_with('=') || w.ends_with('='));
        return if spaced {
            err(C, ArgError::SpacedAssignment)
        } else {
            err(C, ArgError::Unexpected(quote(args[1])))
        };
    }
    let Some(&w) = args.first() else {
        return err(
            C,
            ArgError::Missing(if write {
                "KEY=VALUE"
            } else {
                "KEY, KEY=VALUE or -a"
            }),
        );
    };
    if w == "-a" && !write {
        return Ok(SysctlCmd::All);
    }
    if is_option(w) {
        return err(C, ArgError::UnknownOption(quote(w)));
    }
    let Some((k, v)) = w.split_once('=') else {
        let Some(key) = sysctl_key(w) else {
            return err(C, ArgError::UnknownKey(quote(w)));
        };
        return if write {
            err(C, ArgError::Missing("=VALUE"))
        } else {
            Ok(SysctlCmd::Get(key))
        };
    };
    let Some(key) = sysctl_key(k) else {
        return err(C, ArgError::UnknownKey(quote(k)));
    };
    if v.is_empty() {
        return err(C, ArgError::EmptyValue(key));
    }
    if key == FEATURES_KEY && Features::parse(v).is_err() {
        return err(C, ArgError::UnknownFeature(quote(v)));
    }
    Ok(SysctlCmd::Set {
        key,
        value: String::from(v),
    })
}

fn parse_preempt(args: &[&str]) -> Result<Command, Error> {
    no_options("preempt", args)?;
    match args {
        [] => Ok(Command::Preempt(None)),
        [m] => match PreemptMode::from_name(m) {
            Some(mode) => Ok(Command::Preempt(Some(mode))),
            None => err("preempt", ArgError::UnknownMode(quote(m))),
        },
        [_, extra, ..] => err("preempt", ArgError::Unexpected(quote(extra))),
    }
}

fn parse_nice(args: &[&str]) -> Result<Command, Error> {
    no_options("nice", args)?;
    match args {
        [] => err("nice", ArgError::Missing("PID")),
        [_] => err("nice", ArgError::Missing("N")),
        [p, n] => {
            let pid = pid("nice", p)?;
            let nice = limit("nice", &NICE, n)? as i32;
            Ok(Command::Nice { pid, nice })
        }
        [_, _, extra, ..] => err("nice", ArgError::Unexpected(quote(extra))),
    }
}

fn parse_kill(args: &[&str]) -> Result<Command, Error> {
    no_options("kill", args)?;
    match args {
        [] => err("kill", ArgError::Missing("PID or %JOB")),
        [j] if j.starts_with('%') => Ok(Command::KillJob {
            job: job("kill", j)?,
        }),
        [p] => Ok(Command::Kill {
            pid: pid("kill", p)?,
        }),
        [_, extra, ..] => err("kill", ArgError::Unexpected(quote(extra))),
    }
}

/// A `%N` job argument (1..=[`MAX_JOBS`]).
fn job(cmd: &'static str, w: &str) -> Result<u32, Error> {
    match w.strip_prefix('%') {
        Some(n) => Ok(limit(cmd, &JOB, n)? as u32),
        None => err(cmd, ArgError::NotAJob(quote(w))),
    }
}

/// `[%JOB]` (`wait`, `fg`).
fn opt_job(cmd: &'static str, args: &[&str]) -> Result<Option<u32>, Error> {
    no_options(cmd, args)?;
    match args {
        [] => Ok(None),
        [j] => Ok(Some(job(cmd, j)?)),
        [_, extra, ..] => err(cmd, ArgError::Unexpected(quote(extra))),
    }
}

fn parse_jobs(args: &[&str]) -> Result<Command, Error> {
    const SPEC: &[Opt] = &[Opt {
        short: b'l',
        long: "long",
        takes_value: false,
    }];
    let g = getopt("jobs", args, SPEC)?;
    match g.pos.first() {
        Some(extra) => err("jobs", ArgError::Unexpected(quote(extra))),
        None => Ok(Command::Jobs { long: g.has(b'l') }),
    }
}

fn parse_chrt(args: &[&str]) -> Result<Command, Error> {
    const C: &str = "chrt";
    const SPEC: &[Opt] = &[
        Opt {
            short: b'f',
            long: "fifo",
            takes_value: false,
        },
        Opt {
            short: b'r',
            long: "rr",
            takes_value: false,
        },
        Opt {
            short: b'o',
            long: "other",
            takes_value: false,
        },
        Opt {
            short: b'b',
            long: "batch",
            takes_value: false,
        },
        Opt {
            short: b'i',
            long: "idle",
            takes_value: false,
        },
        Opt {
            short: b'p',
            long: "pid",
            takes_value: false,
        },
    ];
    let g = getopt(C, args, SPEC)?;
    let mut policy = None;
    for &(c, _) in &g.opts {
        let p = match c {
            b'f' => Policy::Fifo,
            b'r' => Policy::RoundRobin,
            b'o' => Policy::Normal,
            b'b' => Policy::Batch,
            b'i' => Policy::Idle,
            _ => continue,
        };
        if policy.replace(p).is_some() {
            return err(C, ArgError::ConflictingPolicies);
        }
    }
    let show = g.has(b'p');
    match g.pos.as_slice() {
        [] => err(
            C,
            ArgError::Missing(if show && policy.is_none() {
                "PID"
            } else {
                "PRIO"
            }),
        ),
        [p] if show && policy.is_none() => Ok(Command::ChrtShow { pid: pid(C, p)? }),
        [_] => err(C, ArgError::Missing("PID")),
        [prio, p] => {
            // No policy option: SCHED_RR, like Linux chrt.
            let policy = policy.unwrap_or(Policy::RoundRobin);
            if !is_int(prio) {
                return err(
                    C,
                    ArgError::NotANumber {
                        what: "PRIO",
                        got: quote(prio),
                    },
                );
            }
            let (lo, hi) = match policy {
                Policy::Fifo | Policy::RoundRobin => (1, i64::from(sched::task::MAX_RT_PRIO)),
                _ => (0, 0),
            };
            let prio = match prio.parse::<i64>() {
                Ok(v) if (lo..=hi).contains(&v) => v as u8,
                _ => {
                    return err(
                        C,
                        ArgError::BadPriority {
                            policy,
                            got: quote(prio),
                        },
                    )
                }
            };
            Ok(Command::Chrt {
                policy,
                prio,
                pid: pid(C, p)?,
            })
        }
        [_, _, extra, ..] => err(C, ArgError::Unexpected(quote(extra))),
    }
}

fn parse_taskset(args: &[&str]) -> Result<Command, Error> {
    const C: &str = "taskset";
    const SPEC: &[Opt] = &[
        Opt {
            short: b'p',
            long: "pid",
            takes_value: false,
        },
        Opt {
            short: b'c',
            long: "cpu-list",
            takes_value: false,
        },
    ];
    let g = getopt(C, args, SPEC)?;
    if !g.has(b'p') {
        return err(C, ArgError::TasksetNeedsP);
    }
    let list = g.has(b'c');
    match g.pos.as_slice() {
        [] => err(C, ArgError::Missing("PID")),
        [p] => Ok(Command::TasksetShow {
            pid: pid(C, p)?,
            list,
        }),
        [m, p] => {
            let mask = if list { cpu_list(m)? } else { hex_mask(m)? };
            Ok(Command::Taskset {
                mask,
                pid: pid(C, p)?,
            })
        }
        [_, _, extra, ..] => err(C, ArgError::Unexpected(quote(extra))),
    }
}

/// A hex CPU mask like Linux `taskset`: `3`, `0x3`, `0X0000ff`; non-zero,
/// at most [`MAX_CPUS`] bits.
pub fn hex_mask(w: &str) -> Result<CpuMask, Error> {
    const C: &str = "taskset";
    let h = w
        .strip_prefix("0x")
        .or_else(|| w.strip_prefix("0X"))
        .unwrap_or(w);
    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return err(C, ArgError::BadMask(quote(w)));
    }
    let sig = h.trim_start_matches('0');
    if sig.len() * 4 > MAX_CPUS as usize {
        return err(C, ArgError::MaskTooWide(quote(w)));
    }
    if sig.is_empty() {
        return err(C, ArgError::ZeroMask);
    }
    // Digits checked and the width fits: parse_hex cannot refuse it.
    match CpuMask::parse_hex(sig) {
        Some(m) if !m.is_empty() => Ok(m),
        Some(_) => err(C, ArgError::ZeroMask),
        None => err(C, ArgError::MaskTooWide(quote(w))),
    }
}

/// A CPU list like Linux `taskset -c`: `0-2,5`, `0-7:2` (stride); CPUs
/// below [`MAX_CPUS`].
pub fn cpu_list(w: &str) -> Result<CpuMask, Error> {
    const C: &str = "taskset";
    let bad = |why| {
        err(
            C,
            ArgError::BadCpuList {
                list: quote(w),
                why,
            },
        )
    };
    // A CPU number: Ok(Some(n)) below MAX_CPUS, Ok(None) for a well-formed but too
    // large number, Err for anything else.
    let cpu = |s: &str| -> Result<Option<u32>, ()> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(());
        }
        Ok(s.parse::<u32>().ok().filter(|&n| n < MAX_CPUS))
    };
    let mut mask = CpuMask::new();
    for item in w.split(',') {
        let (range, stride) = match item.split_once(':') {
            Some((r, s)) => match cpu(s) {
                Ok(Some(s)) if s > 0 => (r, s),
                _ => return bad("stride must be in [1, 255]"),
            },
            None => (item, 1),
        };
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let (lo, hi) = match (cpu(lo), cpu(hi)) {
            (Ok(Some(lo)), Ok(Some(hi))) => (lo, hi),
            (Ok(_), Ok(_)) => return err(C, ArgError::MaskTooWide(quote(w))),
            _ => return bad("expected N or N-M items separated by commas"),
        };
        if lo > hi {
            return bad("range end below its start");
        }
        for c in (lo..=hi).step_by(stride as usize) {
            mask.set(c as usize);
        }
    }
    Ok(mask)
}

/// `None`: `-h` / `--help`.
fn parse_spin(args: &[&str]) -> Result<Option<Spin>, Error> {
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
fn parse_hackbench(a: &[&str]) -> Result<Command, Error> {
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

fn parse_trace(args: &[&str]) -> Result<Command, Error> {
    no_options("trace", args)?;
    match args {
        [] => err("trace", ArgError::Missing("start|stop|dump")),
        [a] => match *a {
            "start" => Ok(Command::Trace(TraceCmd::Start)),
            "stop" => Ok(Command::Trace(TraceCmd::Stop)),
            "dump" => Ok(Command::Trace(TraceCmd::Dump)),
            _ => err("trace", ArgError::UnknownTraceAction(quote(a))),
        },
        [_, extra, ..] => err("trace", ArgError::Unexpected(quote(extra))),
    }
}

// ---------------------------------------------------------------------------
// compare

/// Splits `compare`'s arguments into words: whitespace separates, `'...'`
/// and `"..."` group (an empty pair is an empty word), no escapes.
fn shell_words(s: &str) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_ascii_whitespace() => {
                if in_word {
                    out.push(core::mem::take(&mut cur));
                    in_word = false;
                }
            }
            None => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return err("compare", ArgError::UnterminatedQuote);
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// One `-c` configuration: items separated by whitespace or `,`; `default`
/// (or nothing) is the boot defaults.
pub fn parse_compare_config(text: &str) -> Result<CompareConfig, Error> {
    const C: &str = "compare";
    let mut settings: Vec<Setting> = Vec::new();
    let mut label = String::new();
    for item in text
        .split(|c: char| c.is_ascii_whitespace() || c == ',')
        .filter(|w| !w.is_empty() && *w != "default")
    {
        let bad = |why: &'static str| {
            err(
                C,
                ArgError::BadSetting {
                    setting: quote(item),
                    why,
                },
            )
        };
        let s = match item.split_once('=') {
            Some(("preempt" | "kernel.sched_preempt", m)) => match PreemptMode::from_name(m) {
                Some(m) => Setting::Preempt(m),
                None => return bad("the mode must be none, voluntary, full or lazy"),
            },
            Some((FEATURES_KEY, f)) => match Features::parse(f) {
                Ok((f, on)) => Setting::Feature(f, on),
                Err(_) => return bad("unknown feature"),
            },
            Some((k, v)) => {
                let Some(key) = sysctl_key(k) else {
                    return bad("unknown sysctl key (see 'sysctl -a')");
                };
                if v.is_empty() {
                    return bad("missing value");
                }
                Setting::Sysctl {
                    key,
                    value: String::from(v),
                }
            }
            None => match Features::parse(item) {
                Ok((f, on)) => Setting::Feature(f, on),
                Err(_) => return bad("not a feature NAME/NO_NAME, key=value or preempt=MODE"),
            },
        };
        let clash = settings.iter().any(|o| match (o, &s) {
            (Setting::Feature(a, _), Setting::Feature(b, _)) => a == b,
            (Setting::Sysctl { key: a, .. }, Setting::Sysctl { key: b, .. }) => a == b,
            (Setting::Preempt(_), Setting::Preempt(_)) => true,
            _ => false,
        });
        if clash {
            return err(C, ArgError::ConflictingSetting(quote(item)));
        }
        if !label.is_empty() {
            label.push(',');
        }
        label.push_str(item);
        settings.push(s);
    }
    if label.is_empty() {
        label.push_str("default");
    }
    Ok(CompareConfig { label, settings })
}

fn parse_compare(rest: &str) -> Result<Command, Error> {
    const C: &str = "compare";
    let words = shell_words(rest)?;
    let mut runs = None;
    let mut warmup = None;
    let mut configs = Vec::new();
    let mut i = 0;
    let mut workload = None;
    while i < words.len() {
        let w = words[i].as_str();
        i += 1;
        if w == "--" {
            workload = Some(&words[i..]);
            break;
        }
        if w == "-h" || w == "--help" {
            return Ok(Command::Help(Some(C)));
        }
        let (opt, attached) = match w.as_bytes() {
            [b'-', o @ (b'n' | b'w' | b'c'), ..] => (*o, &w[2..]),
            _ if is_option(w) => return err(C, ArgError::UnknownOption(quote(w))),
            _ => return err(C, ArgError::Unexpected(quote(w))),
        };
        let value: &str = if !attached.is_empty() {
            attached
        } else if i < words.len() {
            i += 1;
            &words[i - 1]
        } else {
            return err(C, ArgError::NeedsValue(alloc::format!("-{}", opt as char)));
        };
        match opt {
            b'n' | b'w' => {
                let (slot, l) = if opt == b'n' {
                    (&mut runs, &Compare::RUNS)
                } else {
                    (&mut warmup, &Compare::WARMUP)
                };
                if slot.is_some() {
                    return err(C, ArgError::Duplicate(alloc::format!("-{}", opt as char)));
                }
                *slot = Some(limit(C, l, value)? as u32);
            }
            _ => {
                if configs.len() == Compare::MAX_CONFIGS {
                    return err(
                        C,
                        ArgError::TooMany {
                            what: "-c CONFIG",
                            max: Compare::MAX_CONFIGS,
                        },
                    );
                }
                configs.push(parse_compare_config(value)?);
            }
        }
    }
    if configs.is_empty() {
        return err(C, ArgError::Missing("-c CONFIG"));
    }
    let Some(wl) = workload.filter(|w| !w.is_empty()) else {
        return err(C, ArgError::Missing("-- WORKLOAD"));
    };
    let line = wl.join(" ");
    let cmd = match parse(&line)? {
        Some(
            c @ (Command::Spin(_)
            | Command::Hackbench(_)
            | Command::Schbench(_)
            | Command::Pgbench(_)
            | Command::Cyclictest(_)
            | Command::Perfpipe(_)
            | Command::Yield(_)),
        ) => c,
        _ => return err(C, ArgError::NotAWorkload(quote(&line))),
    };
    Ok(Command::Compare(Compare {
        runs: runs.unwrap_or(Compare::RUNS.default.unwrap_or(5) as u32),
        warmup: warmup.unwrap_or(Compare::WARMUP.default.unwrap_or(1) as u32),
        configs,
        workload: alloc::boxed::Box::new(cmd),
    }))
}
