//! `trace start|stop|dump`: the scheduler event recorder.

use super::args::{err, no_options};
use super::Command;
use crate::error::{quote, ArgError, Error};

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

pub(super) fn parse_trace(args: &[&str]) -> Result<Command, Error> {
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
