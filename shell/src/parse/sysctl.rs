//! The scheduler's knobs: `features` (SCHED_FEAT flags), `sysctl` (the
//! tunables and `kernel.sched_features`) and `preempt` (the preemption model).

use alloc::string::String;

use sched::config::FEATURES_KEY;
use sched::tunables::TUNABLES;
use sched::{Features, PreemptMode};

use super::args::{err, is_option, no_options};
use super::Command;
use crate::error::{quote, ArgError, Error};

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

pub(super) fn parse_features(args: &[&str]) -> Result<Command, Error> {
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

/// The kernel's own sysctl (not the scheduler's): failing allocations on
/// demand, `PERCENT,SEED` or `off` (checked by the kernel).
pub const FAIL_ALLOC_KEY: &str = "debug.fail_alloc";

/// The kernel's own sysctl: the diagnostic wakeup counters (Linux's
/// schedstats), `0` or `1` (checked by the kernel).
pub const SCHEDSTATS_KEY: &str = "kernel.sched_schedstats";

/// A key `sysctl` accepts: the scheduler's, or the kernel's own.
fn any_sysctl_key(k: &str) -> Option<&'static str> {
    sysctl_key(k).or_else(|| {
        [FAIL_ALLOC_KEY, SCHEDSTATS_KEY]
            .into_iter()
            .find(|key| *key == k)
    })
}

/// The table's spelling of a sysctl key.
pub(super) fn sysctl_key(k: &str) -> Option<&'static str> {
    if k == FEATURES_KEY {
        return Some(FEATURES_KEY);
    }
    TUNABLES.iter().find(|t| t.key == k).map(|t| t.key)
}

pub(super) fn parse_sysctl(args: &[&str]) -> Result<SysctlCmd, Error> {
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
        let Some(key) = any_sysctl_key(w) else {
            return err(C, ArgError::UnknownKey(quote(w)));
        };
        return if write {
            err(C, ArgError::Missing("=VALUE"))
        } else {
            Ok(SysctlCmd::Get(key))
        };
    };
    let Some(key) = any_sysctl_key(k) else {
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

pub(super) fn parse_preempt(args: &[&str]) -> Result<Command, Error> {
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
