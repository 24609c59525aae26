//! One thread's attributes, as util-linux and procps set them: `nice`,
//! `chrt` (policy, RT priority and, as util-linux 2.41+ does for
//! SCHED_OTHER and SCHED_BATCH, the custom slice through `-T NS`), `taskset`
//! (affinity, hex masks and CPU lists) and `kill`. `nice` and `chrt` also
//! take a background job (`%N`): every workload thread of it, the way
//! `chrt -a` takes every thread of a process.

use sched::{CpuMask, Policy};

use super::args::{err, getopt, is_int, limit, no_options, pid, Opt};
use super::jobs::job;
use super::{Command, Limit, Pid, MAX_CPUS};
use crate::error::{quote, ArgError, Error};

/// What `nice` and `chrt` change: one thread, or every workload thread of a
/// background job (its leader, `job/N`, is left alone: it only waits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A thread id, as `ps` shows it.
    Pid(Pid),
    /// `%N`: job N's workload threads.
    Job(u32),
}

/// A `PID` or `%JOB` word.
fn target(cmd: &'static str, w: &str) -> Result<Target, Error> {
    if w.starts_with('%') {
        Ok(Target::Job(job(cmd, w)?))
    } else {
        Ok(Target::Pid(pid(cmd, w)?))
    }
}

/// `chrt -T NS` / `--sched-runtime NS`: a fair task's custom slice, as
/// Linux 6.12+ takes `sched_attr.sched_runtime`. 0 means the base slice.
/// Linux clamps other values into 0.1..100 ms; here they are refused.
pub const SCHED_RUNTIME: Limit = Limit {
    name: "-T NS",
    min: sched::tunables::MIN_SLICE_NS as i64,
    max: sched::tunables::MAX_SLICE_NS as i64,
    default: None,
    doc: "custom slice, ns (-o/-b); 0: the base slice",
};

/// `nice PID N`.
pub const NICE: Limit = Limit {
    name: "N",
    min: -20,
    max: 19,
    default: None,
    doc: "nice value (weight 88761 .. 15)",
};

pub(super) fn parse_nice(args: &[&str]) -> Result<Command, Error> {
    no_options("nice", args)?;
    match args {
        [] => err("nice", ArgError::Missing("PID or %JOB")),
        [_] => err("nice", ArgError::Missing("N")),
        [p, n] => {
            let target = target("nice", p)?;
            let nice = limit("nice", &NICE, n)? as i32;
            Ok(Command::Nice { target, nice })
        }
        [_, _, extra, ..] => err("nice", ArgError::Unexpected(quote(extra))),
    }
}

pub(super) fn parse_kill(args: &[&str]) -> Result<Command, Error> {
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

pub(super) fn parse_chrt(args: &[&str]) -> Result<Command, Error> {
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
        Opt {
            short: b'T',
            long: "sched-runtime",
            takes_value: true,
        },
        Opt {
            short: b'd',
            long: "deadline",
            takes_value: false,
        },
        Opt {
            short: b'D',
            long: "sched-deadline",
            takes_value: true,
        },
        Opt {
            short: b'P',
            long: "sched-period",
            takes_value: true,
        },
    ];
    let g = getopt(C, args, SPEC)?;
    if g.has(b'd') || g.has(b'D') || g.has(b'P') {
        return parse_chrt_deadline(&g);
    }
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
    let runtime_ns = match g.value(b'T') {
        Some(v) => {
            let out_of_range = || {
                err(
                    C,
                    ArgError::OutOfRange {
                        what: SCHED_RUNTIME.name,
                        min: SCHED_RUNTIME.min,
                        max: SCHED_RUNTIME.max,
                        got: quote(v),
                    },
                )
            };
            match limit(C, &SCHED_RUNTIME_OR_ZERO, v) {
                Ok(ns) if ns == 0 || ns >= SCHED_RUNTIME.min => Some(ns as u64),
                Ok(_) => return out_of_range(),
                Err(Error::Arg {
                    kind: ArgError::OutOfRange { .. },
                    ..
                }) => return out_of_range(),
                Err(e) => return Err(e),
            }
        }
        None => None,
    };
    // As util-linux: a custom slice only for SCHED_OTHER and SCHED_BATCH.
    if runtime_ns.is_some() && !matches!(policy, Some(Policy::Normal | Policy::Batch)) {
        return err(C, ArgError::RuntimeNeedsFairPolicy);
    }
    // util-linux 2.42: the priority is optional for the non-RT policies.
    let rt = !matches!(policy, Some(Policy::Normal | Policy::Batch | Policy::Idle));
    let (prio, who) = match g.pos.as_slice() {
        [] => {
            let what = if (show && policy.is_none()) || !rt {
                "PID or %JOB"
            } else {
                "PRIO"
            };
            return err(C, ArgError::Missing(what));
        }
        [p] if show && policy.is_none() && runtime_ns.is_none() => {
            return Ok(Command::ChrtShow {
                target: target(C, p)?,
            })
        }
        [p] if !rt => ("0", p),
        [_] => return err(C, ArgError::Missing("PID or %JOB")),
        [prio, p] => (*prio, p),
        [_, _, extra, ..] => return err(C, ArgError::Unexpected(quote(extra))),
    };
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
        runtime_ns,
        target: target(C, who)?,
    })
}

/// [`SCHED_RUNTIME`] with 0 (the base slice) let through: the range check
/// of the non-zero values follows.
const SCHED_RUNTIME_OR_ZERO: Limit = Limit {
    min: 0,
    ..SCHED_RUNTIME
};

/// `chrt -d --sched-runtime NS --sched-deadline NS [--sched-period NS] 0
/// PID|%JOB` (util-linux's syntax; the period defaults to the deadline, and
/// the deadline to the period, as there). Without `-d`, `--sched-runtime`
/// is the fair custom slice.
fn parse_chrt_deadline(g: &super::args::Getopt<'_>) -> Result<Command, Error> {
    const C: &str = "chrt";
    if !g.has(b'd') {
        return err(C, ArgError::DeadlineOptionsNeedD);
    }
    if g.opts
        .iter()
        .any(|&(c, _)| matches!(c, b'f' | b'r' | b'o' | b'b' | b'i' | b'p'))
    {
        return err(C, ArgError::ConflictingPolicies);
    }
    let ns = |c: u8, what: &'static str| -> Result<u64, Error> {
        match g.value(c) {
            None => Ok(0),
            Some(v) => v.parse::<u64>().or_else(|_| {
                err(
                    C,
                    ArgError::NotANumber {
                        what,
                        got: quote(v),
                    },
                )
            }),
        }
    };
    let runtime_ns = ns(b'T', "--sched-runtime")?;
    let mut deadline_ns = ns(b'D', "--sched-deadline")?;
    let period_ns = ns(b'P', "--sched-period")?;
    if runtime_ns == 0 {
        return err(C, ArgError::Missing("--sched-runtime"));
    }
    if deadline_ns == 0 {
        deadline_ns = period_ns;
    }
    match g.pos.as_slice() {
        [] => err(C, ArgError::Missing("PRIO")),
        [_] => err(C, ArgError::Missing("PID or %JOB")),
        [prio, p] => {
            if *prio != "0" {
                return err(
                    C,
                    ArgError::BadPriority {
                        policy: Policy::Deadline,
                        got: quote(prio),
                    },
                );
            }
            Ok(Command::ChrtDeadline {
                runtime_ns,
                deadline_ns,
                period_ns,
                target: target(C, p)?,
            })
        }
        [_, _, extra, ..] => err(C, ArgError::Unexpected(quote(extra))),
    }
}

pub(super) fn parse_taskset(args: &[&str]) -> Result<Command, Error> {
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
            match target(C, p)? {
                Target::Pid(pid) => Ok(Command::Taskset { mask, pid }),
                Target::Job(job) => Ok(Command::TasksetJob { mask, job }),
            }
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
    if sig.len() * 4 > MAX_CPUS {
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
        Ok(s.parse::<u32>().ok().filter(|&n| (n as usize) < MAX_CPUS))
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
