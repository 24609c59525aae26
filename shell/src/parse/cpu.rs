//! `cpu offline N` / `cpu online N`: CPU hotplug.

use sched::CpuId;

use super::args::{cpu_id, err, limit, no_options};
use super::{Command, Limit, MAX_CPUS};
use crate::error::{quote, ArgError, Error};

/// The `N` of `cpu offline|online N`. Whether the CPU exists, is online, or
/// may go (CPU 0 stays) is the kernel's to check.
pub const HOTPLUG_CPU: Limit = Limit {
    name: "N",
    min: 0,
    max: MAX_CPUS as i64 - 1,
    default: None,
    doc: "the CPU (0, the boot CPU, stays online)",
};

pub(super) fn parse_cpu(args: &[&str]) -> Result<Command, Error> {
    const C: &str = "cpu";
    no_options(C, args)?;
    let online = match args.first() {
        None => return err(C, ArgError::Missing("offline|online")),
        Some(&"offline") => false,
        Some(&"online") => true,
        Some(a) => return err(C, ArgError::UnknownCpuAction(quote(a))),
    };
    match &args[1..] {
        [] => err(C, ArgError::Missing("N")),
        [n] => {
            let v = limit(C, &HOTPLUG_CPU, n)?;
            let cpu: CpuId = cpu_id(C, &HOTPLUG_CPU, v)?;
            Ok(Command::Cpu { cpu, online })
        }
        [_, extra, ..] => err(C, ArgError::Unexpected(quote(extra))),
    }
}
