//! What every command's parser shares: the GNU-style option parser
//! ([`getopt`]), decimal numbers checked against a [`Limit`], and the
//! "takes no arguments / no options" checks.

use alloc::vec::Vec;

use sched::CpuId;

use super::{Command, Limit, Pid, MAX_CPUS, PID};
use crate::error::{quote, ArgError, Error};

pub(super) fn err<T>(cmd: &'static str, kind: ArgError) -> Result<T, Error> {
    Err(Error::arg(cmd, kind))
}

/// Is `w` an option word? `-x...` or `--...`, but not `-` and not `-5`.
pub(super) fn is_option(w: &str) -> bool {
    matches!(w.as_bytes(), [b'-', c, ..] if !c.is_ascii_digit())
}

pub(super) fn no_args(cmd: &'static str, args: &[&str], c: Command) -> Result<Command, Error> {
    match args.first() {
        None => Ok(c),
        Some(w) if is_option(w) => err(cmd, ArgError::UnknownOption(quote(w))),
        Some(w) => err(cmd, ArgError::Unexpected(quote(w))),
    }
}

/// Refuses option words in a command that takes none.
pub(super) fn no_options(cmd: &'static str, args: &[&str]) -> Result<(), Error> {
    match args.iter().find(|w| is_option(w)) {
        Some(w) => err(cmd, ArgError::UnknownOption(quote(w))),
        None => Ok(()),
    }
}

/// Is `w` a decimal integer with an optional sign (of any size)?
pub(super) fn is_int(w: &str) -> bool {
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

pub(super) fn limit(cmd: &'static str, l: &Limit, w: &str) -> Result<i64, Error> {
    int(cmd, l.name, w, l.min, l.max)
}

/// `v`, a value `limit` accepted for the CPU limit `l` (`-c CPU`, whose
/// range is `0..MAX_CPUS`), as a [`CpuId`]; an out-of-range error like
/// `limit`'s should `l` ever admit a CPU beyond `MAX_CPUS`.
pub(super) fn cpu_id(cmd: &'static str, l: &Limit, v: i64) -> Result<CpuId, Error> {
    match usize::try_from(v).ok().and_then(CpuId::new) {
        Some(c) => Ok(c),
        None => err(
            cmd,
            ArgError::OutOfRange {
                what: l.name,
                min: 0,
                max: MAX_CPUS as i64 - 1,
                got: quote(&alloc::format!("{v}")),
            },
        ),
    }
}

pub(super) fn pid(cmd: &'static str, w: &str) -> Result<Pid, Error> {
    Ok(limit(cmd, &PID, w)? as Pid)
}

/// One option a command accepts.
#[derive(Clone, Copy)]
pub(super) struct Opt {
    pub(super) short: u8,
    pub(super) long: &'static str,
    pub(super) takes_value: bool,
}

/// Options (letter, value) in the order given, and positional arguments.
pub(super) struct Getopt<'a> {
    pub(super) opts: Vec<(u8, Option<&'a str>)>,
    pub(super) pos: Vec<&'a str>,
}

impl Getopt<'_> {
    pub(super) fn has(&self, c: u8) -> bool {
        self.opts.iter().any(|&(o, _)| o == c)
    }

    pub(super) fn value(&self, c: u8) -> Option<&str> {
        self.opts
            .iter()
            .find(|&&(o, _)| o == c)
            .and_then(|&(_, v)| v)
    }
}

/// GNU-style option parsing: clusters (`-cp`), attached (`-d100`) or separate
/// values, `--long[=value]`, `--` ends options, options anywhere.
pub(super) fn getopt<'a>(
    cmd: &'static str,
    args: &[&'a str],
    spec: &[Opt],
) -> Result<Getopt<'a>, Error> {
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

/// The defaults of a workload's limits (all of them have one).
pub(super) fn defaults<const N: usize>(limits: &[Limit]) -> [u32; N] {
    let mut out = [0; N];
    for (o, l) in out.iter_mut().zip(limits) {
        *o = l.default.unwrap_or(l.min) as u32;
    }
    out
}
