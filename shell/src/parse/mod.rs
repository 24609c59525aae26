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
//!
//! The parsers are split by command family, one module each; this module holds
//! what they share (the [`Command`] type, [`Limit`], the line checks and the
//! dispatch on the command word):
//!
//! - `args`: the option parser (GNU-style `getopt`) and number checks;
//! - `sysctl`: `features`, `sysctl`, `preempt` (the scheduler's knobs);
//! - `tasks`: `nice`, `chrt`, `taskset`, `kill` (one thread's or one job's
//!   attributes);
//! - `jobs`: `WORKLOAD &`, `jobs`, `wait`, `fg`;
//! - `workloads`: `spin`, `hackbench`, `schbench`, `pgbench`, `cyclictest`,
//!   `wakelat`, `dlperiodic`, `perfpipe`, `soak`, `yield`;
//! - `trace`: `trace start|stop|dump`;
//! - `cpu`: `cpu offline|online N` (CPU hotplug);
//! - `cgroup`: `cgroup create|weight|attach|ls` (task groups);
//! - `compare`: `compare`, with its own quoting and configurations.

use alloc::vec::Vec;

use sched::{CpuMask, Feature, Policy, PreemptMode};

use crate::editor::{LineError, MAX_LINE};
use crate::error::{quote, ArgError, Error};

mod args;
mod cgroup;
mod compare;
mod cpu;
mod jobs;
mod sysctl;
mod tasks;
mod trace;
mod workloads;

use args::{err, no_args, no_options};

pub use cgroup::{CgroupCmd, CPU_WEIGHT, MAX_GROUP_NAME};
pub use compare::{parse_compare_config, Compare, CompareConfig, Setting};
pub use cpu::HOTPLUG_CPU;
pub use jobs::{JOB, MAX_JOBS};
pub use sysctl::{SysctlCmd, FAIL_ALLOC_KEY, SCHEDSTATS_KEY};
pub use tasks::{cpu_list, hex_mask, Target, NICE, SCHED_RUNTIME};
pub use trace::TraceCmd;
pub use workloads::{
    Cyclictest, Dlperiodic, Hackbench, Perfpipe, Pgbench, Schbench, SchedCost, Soak, Spin,
    SpinThread, SyscallCost, Wakelat, YieldPp,
};

/// A thread id as shown by `ps`.
pub type Pid = u32;

/// CPUs a mask or CPU number can name (a [`CpuMask`]'s 256): the
/// scheduler's limit, the one every crate uses.
pub use sched::MAX_CPUS;

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
    /// `schedstat`: the load-balance statistics per CPU and domain.
    Schedstat,
    /// `stat`.
    Stat,
    /// `nice PID N` / `nice %JOB N`.
    Nice {
        /// Target thread, or every thread of a job.
        target: Target,
        /// -20..=19.
        nice: i32,
    },
    /// `chrt [-f|-r|-o|-b|-i] [-T NS] [-p] [PRIO] PID|%JOB` (no policy
    /// option: SCHED_RR, as in Linux).
    Chrt {
        /// The policy (`-o` is SCHED_NORMAL).
        policy: Policy,
        /// 1..=99 for FIFO/RR, 0 otherwise.
        prio: u8,
        /// `-T`/`--sched-runtime NS`: the custom slice (SCHED_NORMAL and
        /// SCHED_BATCH), 0 for the base slice; `None` keeps the current one.
        runtime_ns: Option<u64>,
        /// Target thread, or every thread of a job.
        target: Target,
    },
    /// `chrt -d --sched-runtime NS --sched-deadline NS [--sched-period NS] 0
    /// PID|%JOB`: SCHED_DEADLINE (admission control may refuse it).
    ChrtDeadline {
        /// Runtime per period, ns.
        runtime_ns: u64,
        /// Relative deadline, ns (0: the period).
        deadline_ns: u64,
        /// Period, ns (0: the deadline).
        period_ns: u64,
        /// Target thread, or every thread of a job.
        target: Target,
    },
    /// `chrt -p PID|%JOB`: show the policy.
    ChrtShow {
        /// Target thread, or every thread of a job.
        target: Target,
    },
    /// `taskset -p MASK PID` / `taskset -cp LIST PID`.
    Taskset {
        /// Allowed CPUs; never empty.
        mask: CpuMask,
        /// Target thread.
        pid: Pid,
    },
    /// `taskset -p MASK %JOB` / `taskset -cp LIST %JOB`: every workload
    /// thread of a job, in order, until one refuses.
    TasksetJob {
        /// Allowed CPUs; never empty.
        mask: CpuMask,
        /// Job number, 1..=[`MAX_JOBS`].
        job: u32,
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
    /// `spin -d MS [-c CPU] SPEC...`.
    Spin(Spin),
    /// `hackbench [-p] [-T|-P] [-g GROUPS] [-l LOOPS] [-f FDS] [-s DATASIZE]`.
    Hackbench(Hackbench),
    /// `schbench [-m MSG_THREADS] [-t WORKERS] [-r SECONDS] [-F KB] [-s USEC]`.
    Schbench(Schbench),
    /// `pgbench [-c CLIENTS] [-t TX] [-S]`.
    Pgbench(Pgbench),
    /// `cyclictest [-t THREADS] [-i INTERVAL_US] [-l LOOPS] [-p PRIO] [-L GROUPS] [-a CPU]`.
    Cyclictest(Cyclictest),
    /// `wakelat [-d MS] [-c CPU] [-n HOGS] [-p PERIOD_US] [-P POLICY] [-s SLICE_US]`.
    Wakelat(Wakelat),
    /// `dlperiodic [-n TASKS] [-r US] [-D US] [-p US] [-w US] [-d MS]`.
    Dlperiodic(Dlperiodic),
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
    /// `cpu offline N` / `cpu online N`: take CPU `cpu` out of scheduling
    /// and park it, or bring it back.
    Cpu {
        /// The CPU (below [`MAX_CPUS`]; whether it exists is the kernel's
        /// to check).
        cpu: sched::CpuId,
        /// `online` (true) or `offline`.
        online: bool,
    },
    /// `cgroup create|weight|attach|ls`: task groups.
    Cgroup(CgroupCmd),
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
            Command::Schedstat => "schedstat",
            Command::Stat => "stat",
            Command::Nice { .. } => "nice",
            Command::Chrt { .. } | Command::ChrtShow { .. } | Command::ChrtDeadline { .. } => {
                "chrt"
            }
            Command::Taskset { .. } | Command::TasksetJob { .. } | Command::TasksetShow { .. } => {
                "taskset"
            }
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
            Command::Wakelat(_) => "wakelat",
            Command::Dlperiodic(_) => "dlperiodic",
            Command::Perfpipe(_) => "perfpipe",
            Command::Soak(_) => "soak",
            Command::Yield(_) => "yield",
            Command::Trace(_) => "trace",
            Command::Compare(_) => "compare",
            Command::Cpu { .. } => "cpu",
            Command::Cgroup(_) => "cgroup",
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
                | Command::Wakelat(_)
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
        return jobs::parse_background(line);
    }
    parse_foreground(line)
}

/// One command without `&`.
fn parse_foreground(line: &str) -> Result<Option<Command>, Error> {
    // `compare` takes quoted configurations: it splits its own words.
    if let Some(rest) = line.trim_start().strip_prefix("compare") {
        if rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_whitespace()) {
            return compare::parse_compare(rest).map(Some);
        }
    }
    let mut words = line.split_ascii_whitespace();
    let Some(name) = words.next().filter(|w| !w.starts_with('#')) else {
        return Ok(None);
    };
    // A command is a word of the help table ([`crate::help::COMMANDS`], the
    // list the fuzzer and the property tests draw from too); a test checks
    // that every word of it reaches its parser below.
    let Some(known) = crate::help::lookup(name) else {
        return Err(Error::UnknownCommand(quote(name)));
    };
    let args: Vec<&str> = words.collect();
    let a = args.as_slice();
    let cmd = match known.name {
        "help" => parse_help(a)?,
        "features" => sysctl::parse_features(a)?,
        "sysctl" => Command::Sysctl(sysctl::parse_sysctl(a)?),
        "preempt" => sysctl::parse_preempt(a)?,
        "ps" => no_args("ps", a, Command::Ps)?,
        "sched_debug" => no_args("sched_debug", a, Command::SchedDebug)?,
        "schedstat" => no_args("schedstat", a, Command::Schedstat)?,
        "stat" => no_args("stat", a, Command::Stat)?,
        "poweroff" => no_args("poweroff", a, Command::Poweroff)?,
        "nice" => tasks::parse_nice(a)?,
        "chrt" => tasks::parse_chrt(a)?,
        "taskset" => tasks::parse_taskset(a)?,
        "kill" => tasks::parse_kill(a)?,
        "jobs" => jobs::parse_jobs(a)?,
        "wait" => Command::Wait(jobs::opt_job("wait", a)?),
        "fg" => Command::Fg(jobs::opt_job("fg", a)?),
        "spin" => match workloads::parse_spin(a)? {
            Some(s) => Command::Spin(s),
            None => Command::Help(Some("spin")),
        },
        "hackbench" => workloads::parse_hackbench(a)?,
        "schbench" => workloads::parse_schbench(a)?,
        "pgbench" => workloads::parse_pgbench(a)?,
        "cyclictest" => workloads::parse_cyclictest(a)?,
        "wakelat" => workloads::parse_wakelat(a)?,
        "dlperiodic" => workloads::parse_dlperiodic(a)?,
        "perfpipe" => workloads::parse_perfpipe(a)?,
        "soak" => workloads::parse_soak(a)?,
        "yield" => workloads::parse_yield(a)?,
        "trace" => trace::parse_trace(a)?,
        "cpu" => cpu::parse_cpu(a)?,
        "cgroup" => cgroup::parse_cgroup(a)?,
        _ => return Err(Error::UnknownCommand(quote(name))),
    };
    Ok(Some(cmd))
}

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
