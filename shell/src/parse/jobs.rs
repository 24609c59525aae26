//! Background jobs: `WORKLOAD &`, `jobs`, `wait` and `fg`, and the `%JOB`
//! argument they (and `kill`) take.

use super::args::{err, getopt, limit, no_options, Opt};
use super::{parse_foreground, Command, Limit};
use crate::error::{quote, ArgError, BgError, Error};

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

/// `LINE &`: `&` must end the line and follow a workload; `&&` and `&`
/// anywhere else are refused (one command per line, no lists).
pub(super) fn parse_background(line: &str) -> Result<Option<Command>, Error> {
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

/// A `%N` job argument (1..=[`MAX_JOBS`]).
pub(super) fn job(cmd: &'static str, w: &str) -> Result<u32, Error> {
    match w.strip_prefix('%') {
        Some(n) => Ok(limit(cmd, &JOB, n)? as u32),
        None => err(cmd, ArgError::NotAJob(quote(w))),
    }
}

/// `[%JOB]` (`wait`, `fg`).
pub(super) fn opt_job(cmd: &'static str, args: &[&str]) -> Result<Option<u32>, Error> {
    no_options(cmd, args)?;
    match args {
        [] => Ok(None),
        [j] => Ok(Some(job(cmd, j)?)),
        [_, extra, ..] => err(cmd, ArgError::Unexpected(quote(extra))),
    }
}

pub(super) fn parse_jobs(args: &[&str]) -> Result<Command, Error> {
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
