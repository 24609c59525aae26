//! Parse errors. `Display` gives the whole error line without the `error: `
//! prefix, naming the command (`nice: N must be in [-20, 19], got '25'`), so the
//! executor prints `error: {e}` and nothing else. User text quoted in a message is
//! cut to [`QUOTE_MAX`] bytes, so a huge token cannot flood the console.

use alloc::string::String;
use core::fmt;

use sched::Policy;

use crate::editor::LineError;

/// Longest piece of user input quoted in an error message.
pub const QUOTE_MAX: usize = 40;

/// Why a line was refused. Nothing was executed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The line editor refused the line (too long, non-ASCII).
    Line(LineError),
    /// A control byte other than whitespace.
    ControlChar(u8),
    /// The first word is no command.
    UnknownCommand(String),
    /// A misplaced `&` (background jobs).
    Background(BgError),
    /// A command's arguments are wrong.
    Arg {
        /// The command (its name in the help table).
        cmd: &'static str,
        /// What is wrong.
        kind: ArgError,
    },
}

/// What is wrong with a line's `&`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BgError {
    /// `&&` (lists are not supported: one command per line).
    AndList,
    /// `&` somewhere other than at the end of the line.
    NotAtEnd,
    /// `&` alone.
    Empty,
    /// `CMD &` for a command that is no workload (its name).
    NotAWorkload(&'static str),
}

impl fmt::Display for BgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BgError::AndList => f.write_str("'&&' is not supported: one command per line"),
            BgError::NotAtEnd => f.write_str("'&' must end the line (usage: WORKLOAD ARGS &)"),
            BgError::Empty => f.write_str("'&' needs a workload before it (usage: WORKLOAD ARGS &)"),
            BgError::NotAWorkload(c) => write!(
                f,
                "{c}: only workloads (spin, hackbench, schbench, pgbench, cyclictest, wakelat, perfpipe) run in the background"
            ),
        }
    }
}

/// What is wrong with a command's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgError {
    /// A required argument is missing (`PID`, `-d MS`, ...).
    Missing(&'static str),
    /// An argument too many.
    Unexpected(String),
    /// An option the command does not take.
    UnknownOption(String),
    /// An option that takes a value came last.
    NeedsValue(String),
    /// The same option twice.
    Duplicate(String),
    /// A long option that takes no value was given one (`--fifo=1`).
    TakesNoValue(String),
    /// Not a decimal integer.
    NotANumber {
        /// The argument's name (`N`, `-d MS`).
        what: &'static str,
        /// The text given.
        got: String,
    },
    /// A number outside its range.
    OutOfRange {
        /// The argument's name.
        what: &'static str,
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
        /// The text given.
        got: String,
    },
    /// More values than the command takes (`spin` threads).
    TooMany {
        /// The argument's name.
        what: &'static str,
        /// Most accepted.
        max: usize,
    },
    /// `help CMD` for an unknown command.
    UnknownTopic(String),
    /// `features NAME` for an unknown feature.
    UnknownFeature(String),
    /// `preempt MODE` for an unknown mode.
    UnknownMode(String),
    /// `sysctl KEY` for an unknown key.
    UnknownKey(String),
    /// `sysctl KEY=` without a value.
    EmptyValue(&'static str),
    /// `sysctl KEY = VALUE` (spaces around `=`).
    SpacedAssignment,
    /// `trace` with something other than start, stop or dump.
    UnknownTraceAction(String),
    /// `cpu` with something other than offline or online.
    UnknownCpuAction(String),
    /// `cgroup` with something other than create, weight, attach, ls or rm.
    UnknownCgroupAction(String),
    /// `cgroup rm root`: the root group always exists.
    RootGroupNotRemovable,
    /// A task group name that is empty, too long, has other characters than
    /// letters, digits, `_`, `-` and `.`, or is `root` where a new or
    /// real group is meant.
    BadGroupName(String),
    /// `chrt` with two policy options.
    ConflictingPolicies,
    /// `chrt --sched-deadline/--sched-period` without `-d`.
    DeadlineOptionsNeedD,
    /// `chrt -T` without `-o` or `-b`.
    RuntimeNeedsFairPolicy,
    /// `dlperiodic` parameters out of order (runtime <= deadline <= period,
    /// work <= runtime): which rule.
    BadDlShape(&'static str),
    /// A policy name that is not normal, batch or idle (`wakelat -P`).
    UnknownPolicy(String),
    /// A `spin` SPEC that is none of the forms.
    BadSpec(String),
    /// `hackbench -C` with neither `linux` nor a number.
    BadSyscallCost(String),
    /// `hackbench -K` with neither `linux` nor `SWITCH_NS,WAKE_NS`.
    BadSchedCost(String),
    /// `hackbench -M` without `-p` and `-C linux`.
    PipeMutexNeedsPipeCost,
    /// Two options that exclude each other (`perfpipe -x -s`).
    ConflictingOptions(&'static str, &'static str),
    /// `chrt` priority invalid for the policy.
    BadPriority {
        /// The policy asked for.
        policy: Policy,
        /// The text given.
        got: String,
    },
    /// `taskset` without `-p` (there are no commands to launch).
    TasksetNeedsP,
    /// A hex CPU mask that is not hex.
    BadMask(String),
    /// A CPU mask or list wider than MAX_CPUS (256) CPUs.
    MaskTooWide(String),
    /// A CPU mask of zero.
    ZeroMask,
    /// `compare`: a quote without its closing quote.
    UnterminatedQuote,
    /// `compare`: what follows `--` is no workload.
    NotAWorkload(String),
    /// `compare`: a configuration item that is no setting.
    BadSetting {
        /// The item.
        setting: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// `compare`: a configuration sets the same thing twice.
    ConflictingSetting(String),
    /// A job argument that is not `%N`.
    NotAJob(String),
    /// A malformed CPU list.
    BadCpuList {
        /// The list given.
        list: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// Copies `s` for quoting, cut to [`QUOTE_MAX`] bytes (on a char boundary).
pub(crate) fn quote(s: &str) -> String {
    if s.len() <= QUOTE_MAX {
        return String::from(s);
    }
    let mut end = QUOTE_MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut q = String::from(&s[..end]);
    q.push_str("...");
    q
}

impl Error {
    pub(crate) fn arg(cmd: &'static str, kind: ArgError) -> Self {
        Error::Arg { cmd, kind }
    }
}

impl From<LineError> for Error {
    fn from(e: LineError) -> Self {
        Error::Line(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Line(e) => write!(f, "{e}"),
            Error::ControlChar(b) => write!(f, "control character 0x{b:02x} in line"),
            Error::UnknownCommand(c) => write!(f, "unknown command '{c}' (try 'help')"),
            Error::Background(e) => write!(f, "{e}"),
            Error::Arg { cmd, kind } => {
                write!(f, "{cmd}: {kind}")?;
                if matches!(
                    kind,
                    ArgError::Missing(_)
                        | ArgError::Unexpected(_)
                        | ArgError::UnknownOption(_)
                        | ArgError::NeedsValue(_)
                        | ArgError::Duplicate(_)
                        | ArgError::TakesNoValue(_)
                        | ArgError::TasksetNeedsP
                        | ArgError::NotAWorkload(_)
                        | ArgError::NotAJob(_)
                        | ArgError::BadSpec(_)
                        | ArgError::BadSyscallCost(_)
                        | ArgError::BadSchedCost(_)
                        | ArgError::PipeMutexNeedsPipeCost
                ) {
                    if let Some(h) = crate::help::lookup(cmd) {
                        write!(f, " (usage: {})", h.usage)?;
                    }
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::Missing(what) => write!(f, "missing {what}"),
            ArgError::Unexpected(a) => write!(f, "unexpected argument '{a}'"),
            ArgError::UnknownOption(o) => write!(f, "unknown option '{o}'"),
            ArgError::NeedsValue(o) => write!(f, "option '{o}' needs a value"),
            ArgError::Duplicate(o) => write!(f, "option '{o}' given twice"),
            ArgError::TakesNoValue(o) => write!(f, "option '{o}' takes no value"),
            ArgError::NotANumber { what, got } => {
                write!(f, "{what} must be a decimal integer, got '{got}'")
            }
            ArgError::OutOfRange {
                what,
                min,
                max,
                got,
            } => {
                write!(f, "{what} must be in [{min}, {max}], got '{got}'")
            }
            ArgError::TooMany { what, max } => write!(f, "at most {max} {what} values"),
            ArgError::UnknownTopic(t) => write!(f, "unknown command '{t}'"),
            ArgError::UnknownFeature(n) => write!(f, "unknown feature '{n}'"),
            ArgError::UnknownMode(m) => {
                write!(
                    f,
                    "unknown mode '{m}' (expected none, voluntary, full or lazy)"
                )
            }
            ArgError::UnknownKey(k) => write!(f, "unknown key '{k}' (see 'sysctl -a')"),
            ArgError::EmptyValue(k) => write!(f, "missing VALUE in '{k}='"),
            ArgError::SpacedAssignment => {
                f.write_str("write KEY=VALUE as one word, without spaces around '='")
            }
            ArgError::UnknownTraceAction(a) => {
                write!(f, "unknown action '{a}' (expected start, stop or dump)")
            }
            ArgError::UnknownCpuAction(a) => {
                write!(f, "unknown action '{a}' (expected offline or online)")
            }
            ArgError::UnknownCgroupAction(a) => {
                write!(f, "unknown action '{a}' (expected create, weight, attach, ls or rm)")
            }
            ArgError::RootGroupNotRemovable => f.write_str("the root group cannot be removed"),
            ArgError::BadGroupName(n) => write!(
                f,
                "bad group name '{n}' (1-32 letters, digits, '_', '-', '.'; 'root' is the root group)"
            ),
            ArgError::BadDlShape(why) => f.write_str(why),
            ArgError::ConflictingPolicies => f.write_str("more than one policy option given"),
            ArgError::DeadlineOptionsNeedD => {
                f.write_str("--sched-deadline and --sched-period need -d (SCHED_DEADLINE)")
            }
            ArgError::RuntimeNeedsFairPolicy => f.write_str(
                "-T/--sched-runtime (the custom slice) needs -o or -b (SCHED_OTHER or SCHED_BATCH)",
            ),
            ArgError::UnknownPolicy(p) => {
                write!(f, "unknown policy '{p}' (expected normal, batch or idle)")
            }
            ArgError::BadSpec(w) => write!(
                f,
                "bad SPEC '{w}' (expected NICE, batch:NICE, idle, slice:US or duty:RUN_US:SLEEP_US)"
            ),
            ArgError::BadSyscallCost(w) => {
                write!(f, "-C expects 'linux' or NS (a decimal integer), got '{w}'")
            }
            ArgError::BadSchedCost(w) => write!(
                f,
                "-K expects 'linux' or SWITCH_NS,WAKE_NS (decimal integers), got '{w}'"
            ),
            ArgError::PipeMutexNeedsPipeCost => {
                write!(f, "-M (the pipe mutex) needs -p and -C linux")
            }
            ArgError::ConflictingOptions(a, b) => write!(f, "{a} and {b} exclude each other"),
            ArgError::BadPriority { policy, got } => match policy {
                Policy::Fifo | Policy::RoundRobin => write!(
                    f,
                    "PRIO for {} must be in [1, {}], got '{got}'",
                    policy.name(),
                    sched::task::MAX_RT_PRIO
                ),
                _ => write!(f, "PRIO for {} must be 0, got '{got}'", policy.name()),
            },
            ArgError::TasksetNeedsP => f.write_str("only 'taskset -p' is supported"),
            ArgError::BadMask(m) => write!(f, "invalid hex mask '{m}'"),
            ArgError::MaskTooWide(m) => {
                write!(f, "'{m}' does not fit {} CPUs", crate::parse::MAX_CPUS)
            }
            ArgError::ZeroMask => f.write_str("mask must not be empty (zero)"),
            ArgError::NotAJob(w) => {
                write!(
                    f,
                    "expected %JOB (a job number from 'jobs', e.g. %1), got '{w}'"
                )
            }
            ArgError::BadCpuList { list, why } => write!(f, "invalid CPU list '{list}': {why}"),
            ArgError::UnterminatedQuote => f.write_str("unterminated quote"),
            ArgError::NotAWorkload(w) => write!(
                f,
                "'{w}' is not a workload (spin, hackbench, schbench, pgbench, cyclictest, wakelat, perfpipe, yield)"
            ),
            ArgError::BadSetting { setting, why } => {
                write!(f, "bad setting '{setting}' in a config: {why}")
            }
            ArgError::ConflictingSetting(s) => {
                write!(f, "'{s}' sets something the same config already sets")
            }
        }
    }
}
