//! `features`, `sysctl` and `preempt`: the scheduler configuration every
//! runqueue shares (`crate::sched::sched_config()`). Flags and tunables are atomics in
//! the `sched` crate, so these commands take no runqueue lock; the scheduler
//! sees a change at its next decision. Validation is `sched`'s (`sysctl_set`
//! refuses and changes nothing), the error line adds the accepted range.

use core::fmt::Write;

use ::shell::{PreemptLine, SysctlCmd, FAIL_ALLOC_KEY, SCHEDSTATS_KEY};
use kernel_hal::heap::{fail as fail_alloc, FailAlloc};
use sched::config::{SysctlValue, FEATURES_KEY};
use sched::tunables::{Kind, SysctlError, TUNABLES};
use sched::{Feature, PreemptMode};

use super::{fail, CmdResult, Sh};

/// `features` prints the `sched/features` line; `features [NO_]NAME` flips one
/// flag and prints the new line.
pub fn features(sh: &mut Sh, flip: Option<(Feature, bool)>) -> CmdResult {
    let cfg = crate::sched::sched_config();
    if let Some((f, on)) = flip {
        cfg.features.set(f, on);
    }
    let _ = writeln!(sh, "{}", SysctlValue::Features(&cfg.features));
    Ok(())
}

/// The accepted values of a sysctl key, for error lines.
fn accepted(key: &str) -> alloc::string::String {
    use alloc::string::String;
    if key == FEATURES_KEY {
        return String::from("NAME or NO_NAME of a feature in 'features'");
    }
    match TUNABLES.iter().find(|t| t.key == key).map(|t| t.kind) {
        Some(Kind::Int { min, max }) => alloc::format!("an integer in [{min}, {max}]"),
        Some(Kind::Choice(names)) => {
            let mut s = String::from("one of");
            for n in names {
                s.push(' ');
                s.push_str(n);
            }
            s
        }
        None => String::from("nothing (unknown key)"),
    }
}

/// `sysctl -a`, `sysctl KEY`, `sysctl KEY=VALUE` (prints `KEY = VALUE`).
/// `debug.fail_alloc` is the kernel's: failing allocations on demand;
/// `kernel.sched_schedstats` too: the diagnostic counters, the wakeups'
/// and `schedstat`'s (`crate::sched::schedstats`).
pub fn sysctl(sh: &mut Sh, c: SysctlCmd) -> CmdResult {
    let cfg = crate::sched::sched_config();
    match c {
        SysctlCmd::All => {
            for (k, v) in cfg.sysctl_all() {
                let _ = writeln!(sh, "{k} = {v}");
            }
            let _ = writeln!(sh, "{FAIL_ALLOC_KEY} = {}", fail_alloc::get());
            let _ = writeln!(sh, "{SCHEDSTATS_KEY} = {}", schedstats_value());
        }
        SysctlCmd::Get(SCHEDSTATS_KEY) => {
            let _ = writeln!(sh, "{SCHEDSTATS_KEY} = {}", schedstats_value());
        }
        SysctlCmd::Set {
            key: SCHEDSTATS_KEY,
            value,
        } => match bootargs::parse_schedstats_sysctl(&value) {
            Ok(on) => {
                crate::sched::schedstats::set_schedstats(on);
                let _ = writeln!(sh, "{SCHEDSTATS_KEY} = {}", schedstats_value());
            }
            Err(e) => fail!("sysctl: {e}, got '{}'", Quote(&value)),
        },
        SysctlCmd::Get(FAIL_ALLOC_KEY) => {
            let _ = writeln!(sh, "{FAIL_ALLOC_KEY} = {}", fail_alloc::get());
        }
        SysctlCmd::Set {
            key: FAIL_ALLOC_KEY,
            value,
        } => match FailAlloc::parse(&value) {
            Ok(f) => {
                fail_alloc::set(f);
                let _ = writeln!(sh, "{FAIL_ALLOC_KEY} = {f}");
            }
            Err(e) => fail!("sysctl: {e}, got '{}'", Quote(&value)),
        },
        SysctlCmd::Get(key) => match cfg.sysctl_get(key) {
            Ok(v) => {
                let _ = writeln!(sh, "{key} = {v}");
            }
            Err(e) => fail!("sysctl: {key}: {e}"),
        },
        SysctlCmd::Set { key, value } => match cfg.sysctl_set(key, &value) {
            Ok(v) => {
                let _ = writeln!(sh, "{key} = {v}");
            }
            // Already names the range / the choices.
            Err(e @ (SysctlError::OutOfRange { .. } | SysctlError::BadChoice(_))) => {
                fail!("sysctl: {key}: {e}, got '{}'", Quote(&value))
            }
            Err(e) => fail!(
                "sysctl: {key}: {e} '{}' (accepted: {})",
                Quote(&value),
                accepted(key)
            ),
        },
    }
    Ok(())
}

/// `kernel.sched_schedstats`'s value as Linux prints it: `1` or `0`.
fn schedstats_value() -> u8 {
    u8::from(crate::sched::schedstats::schedstat_enabled())
}

/// User text in an error line, cut to 40 bytes.
struct Quote<'a>(&'a str);

impl core::fmt::Display for Quote<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = self.0;
        if s.len() <= 40 {
            return f.write_str(s);
        }
        // The parser accepts ASCII only, so any byte index is a boundary.
        write!(f, "{}...", s.get(..40).unwrap_or(""))
    }
}

/// `preempt` prints `none voluntary (full) lazy`; `preempt MODE` switches first.
pub fn preempt(sh: &mut Sh, mode: Option<PreemptMode>) -> CmdResult {
    let t = &crate::sched::sched_config().tunables;
    if let Some(m) = mode {
        t.set_preempt_mode(m);
    }
    let _ = writeln!(sh, "{}", PreemptLine(t.preempt_mode()));
    Ok(())
}
