//! `compare [-n RUNS] [-w WARMUP] -c CONFIG ... -- WORKLOAD ARGS`: its
//! configurations (features, sysctl values, the preemption model) and its own
//! word splitting, since a configuration may be quoted.

use alloc::string::String;
use alloc::vec::Vec;

use sched::config::FEATURES_KEY;
use sched::{Feature, Features, PreemptMode};

use super::args::{err, is_option, limit};
use super::sysctl::sysctl_key;
use super::{parse, Command, Limit};
use crate::error::{quote, ArgError, Error};

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

pub(super) fn parse_compare(rest: &str) -> Result<Command, Error> {
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
            | Command::Wakelat(_)
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
