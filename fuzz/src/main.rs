//! Stable-Rust fuzzing: random, structure-aware inputs for every parser of
//! untrusted text and for the scheduler against its brute-force oracle, for a
//! set time (`make fuzz FUZZ_SECS=60`).
//!
//! Targets (run round-robin until the time is up):
//! - `shell_line`: command lines into `shell::parse`, the accepted ones applied
//!   to a live `SchedConfig` as the kernel shell does (`sysctl KEY=VALUE`,
//!   `features [NO_]NAME`, `preempt MODE`);
//! - `editor`: byte streams (escape sequences, control bytes, text) into the
//!   line editor, every finished line into the parser;
//! - `sysctl`: keys and values into `SchedConfig::sysctl_set`;
//! - `features`: feature names into `Features::write`;
//! - `bootargs`: kernel command lines into `bootargs::parse`;
//! - `sched_ops`: operation sequences on the tree runqueue and the oracle
//!   side by side (`sched/tests/common/world.rs`, every step checked).
//!
//! Checked on every input: no panic; a rejected input leaves `sysctl -a`,
//! `features` and `preempt` exactly as they were; accepted values read back
//! as they were written; every line the editor hands out is printable ASCII.
//!
//! Inputs come from proptest strategies driven by a ChaCha RNG seeded per
//! execution (`base seed + index`), so a crash prints the target and seed and
//! `fuzz --replay TARGET SEED` regenerates and prints the input, then runs it.
//! The profile aborts on panic: a crash ends the run with the panic message,
//! the target and the seed, and a non-zero status.

// Stdout goes through `outln!` / `out!`, stderr through `errln!`
// (`sim/src/out.rs`): `println!` and `eprintln!` panic on a closed pipe.
#![warn(clippy::print_stdout, clippy::print_stderr)]

#[path = "../../sched/tests/common/mod.rs"]
mod common;
// `outln!` / `errln!`: printing that ends the process on a closed pipe
// instead of panicking; the one source is `sim`'s (no dependency on it).
#[path = "../../sim/src/out.rs"]
mod out;

use std::cell::Cell;
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use sched::config::FEATURES_KEY;
use sched::tunables::TUNABLES;
use sched::{Feature, Features, PreemptMode, SchedConfig};
use shell::{usage_words, Command, Event, LineEditor, SysctlCmd, COMMANDS, PROBE_WORDS};

/// What `sysctl -a`, `features` and `preempt` print, as one value.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Snapshot {
    sysctl: Vec<(&'static str, String)>,
    features: u64,
    preempt: PreemptMode,
}

fn snapshot(cfg: &SchedConfig) -> Snapshot {
    Snapshot {
        sysctl: cfg.sysctl_all().map(|(k, v)| (k, v.to_string())).collect(),
        features: cfg.features.mask(),
        preempt: cfg.tunables.preempt_mode(),
    }
}

fn new_cfg() -> Arc<SchedConfig> {
    Arc::new(SchedConfig::new(4, 250))
}

/// Applies what the kernel shell applies for `cmd`; checks that a refusal
/// changed nothing and that an accepted value reads back.
fn apply(cfg: &SchedConfig, cmd: &Command) {
    let before = snapshot(cfg);
    match cmd {
        Command::Sysctl(SysctlCmd::Set { key, value }) => sysctl_set(cfg, key, value),
        Command::Features(Some((f, on))) => {
            cfg.features.set(*f, *on);
            assert_eq!(cfg.features.enabled(*f), *on);
        }
        Command::Preempt(Some(m)) => {
            cfg.tunables.set_preempt_mode(*m);
            assert_eq!(cfg.tunables.preempt_mode(), *m);
        }
        // Everything else reads state or acts on threads: nothing changes here.
        _ => assert_eq!(snapshot(cfg), before, "{cmd:?} changed the state"),
    }
}

/// `sysctl KEY=VALUE` with the checks.
fn sysctl_set(cfg: &SchedConfig, key: &str, value: &str) {
    let before = snapshot(cfg);
    match cfg.sysctl_set(key, value) {
        Err(_) => assert_eq!(
            snapshot(cfg),
            before,
            "rejected sysctl {key}={value:?} changed the state"
        ),
        Ok(v) => {
            let text = v.to_string();
            let after = snapshot(cfg);
            // Only this key changed (the base slice shown is the effective
            // one: the scaling multiplies it).
            let depends = |k: &str| {
                k == key
                    || (key == "kernel.sched_tunable_scaling" && k == "kernel.sched_base_slice_ns")
            };
            for ((k, a), (_, b)) in before.sysctl.iter().zip(&after.sysctl) {
                if !depends(k) {
                    assert_eq!(a, b, "sysctl {key}={value:?} changed {k}");
                }
            }
            if key != FEATURES_KEY {
                // The printed value is accepted again and means the same.
                let again = cfg
                    .sysctl_set(key, &text)
                    .unwrap_or_else(|e| panic!("{key}: own value {text:?} refused: {e:?}"));
                assert_eq!(again.to_string(), text, "{key} does not read back");
            }
        }
    }
}

// ---- input strategies -------------------------------------------------------

/// The help table's command words (`shell::COMMANDS`, the list the parser
/// itself takes), its usage lines' option and keyword words, then the
/// edge-probing words: the same vocabulary as the property tests.
fn words() -> Vec<&'static str> {
    COMMANDS
        .iter()
        .map(|c| c.name)
        .chain(usage_words())
        .chain(PROBE_WORDS.iter().copied())
        .collect()
}

fn keys() -> Vec<&'static str> {
    TUNABLES
        .iter()
        .map(|t| t.key)
        .chain([FEATURES_KEY])
        .collect()
}

fn feature_name() -> impl Strategy<Value = String> {
    let names: Vec<&'static str> = Feature::ALL.iter().map(|f| f.name()).collect();
    (
        proptest::sample::select(names),
        any::<bool>(),
        0u8..6,
        "[ a-zA-Z_]{0,3}",
    )
        .prop_map(|(n, no, mutation, junk)| {
            let n = if no { format!("NO_{n}") } else { n.to_string() };
            match mutation {
                0 => n.to_lowercase(),
                1 => format!("{n}{junk}"),
                2 => format!("{junk}{n}"),
                3 => format!(" {n} "),
                _ => n,
            }
        })
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,22}",
        "[-+ ]?[0-9]{1,12}[ a-z]{0,2}",
        "(none|log|linear|voluntary|full|lazy|NONE|Full)",
        feature_name(),
        "[ -~]{0,16}",
        Just(String::new()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(keys()).prop_map(str::to_string),
        1 => "kernel\\.sched_[a-z_]{0,16}",
        1 => "[ -~]{0,20}",
    ]
}

fn line() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        3 => proptest::sample::select(words()).prop_map(str::to_string),
        1 => (key(), value()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => feature_name(),
        1 => "[ -~]{0,10}",
    ];
    prop_oneof![
        6 => (
            proptest::sample::select(words()),
            proptest::collection::vec(token, 0..6),
            "[ \t]{0,2}",
        )
            .prop_map(|(c, args, sep)| {
                let mut s = c.to_string();
                for a in args {
                    s.push(' ');
                    s.push_str(&a);
                }
                s.push_str(&sep);
                s
            }),
        1 => "[ -~]{0,60}",
    ]
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    let chunk = prop_oneof![
        4 => "[ -~]{0,8}".prop_map(String::into_bytes),
        1 => line().prop_map(|l| format!("{l}\r").into_bytes()),
        1 => proptest::sample::select(vec![
            b"\x1b".to_vec(), b"\x1b[".to_vec(), b"\x1b]".to_vec(), b"\x1bP".to_vec(),
            b"\x1bO".to_vec(), b"\x1b\\".to_vec(), b"\x07".to_vec(), b"\r".to_vec(),
            b"\n".to_vec(), b"\r\n".to_vec(), b"\x03".to_vec(), b"\x15".to_vec(),
            b"\x7f".to_vec(), b"\x08".to_vec(), b"\t".to_vec(), b"\x1b[A".to_vec(),
            b"\x1b[B".to_vec(), b"\x1b[1;5D".to_vec(), b"\x1b]0;t\x07".to_vec(),
            b"\x1b(B".to_vec(), b"\xff".to_vec(), b"\x80".to_vec(),
        ]),
        1 => proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(chunk, 0..12).prop_map(|v| v.concat())
}

fn cmdline() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        3 => (
            proptest::sample::select(vec!["hz", "ktest", "ktest_suite", "preempt", "idle_poll", "nohz"]),
            proptest::option::of(prop_oneof![
                "[0-9]{1,12}",
                "(on|off|timing|concurrency|all|none|full|lazy|voluntary)",
                "[ -~&&[^ ]]{0,6}",
            ]),
        )
            .prop_map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k.to_string(),
            }),
        1 => "[!-~]{0,10}",
    ];
    (proptest::collection::vec(word, 0..8), "[ \t]{1,3}").prop_map(|(w, sep)| w.join(&sep))
}

// ---- targets ----------------------------------------------------------------

/// Generates one input of `strategy` from `seed`.
fn gen<S: Strategy>(strategy: S, seed: u64) -> S::Value {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    strategy
        .new_tree(&mut runner)
        .expect("strategy rejected too many inputs")
        .current()
}

struct Target {
    name: &'static str,
    /// Runs the input of `seed` (printing it first when `show`).
    run: fn(&SchedConfig, u64, bool),
}

fn t_shell_line(cfg: &SchedConfig, seed: u64, show: bool) {
    let l = gen(line(), seed);
    if show {
        outln!("input: {l:?}");
    }
    let before = snapshot(cfg);
    match shell::parse(&l) {
        Err(_) | Ok(None) => assert_eq!(snapshot(cfg), before),
        Ok(Some(cmd)) => {
            assert_eq!(shell::parse(&l).ok().flatten(), Some(cmd.clone()));
            apply(cfg, &cmd);
        }
    }
}

fn t_editor(cfg: &SchedConfig, seed: u64, show: bool) {
    let input = gen(bytes(), seed);
    if show {
        outln!("input: {input:?}");
    }
    let mut ed = LineEditor::new();
    let mut lines = Vec::new();
    for &b in &input {
        if let Event::Line(l) = ed.feed(b, &mut |_| {}) {
            assert!(
                l.bytes().all(|c| (0x20..0x7f).contains(&c)),
                "the editor handed out a control byte: {l:?}"
            );
            lines.push(l.to_string());
        }
    }
    for l in lines {
        let before = snapshot(cfg);
        match shell::parse(&l) {
            Ok(Some(cmd)) => apply(cfg, &cmd),
            _ => assert_eq!(snapshot(cfg), before),
        }
    }
}

fn t_sysctl(cfg: &SchedConfig, seed: u64, show: bool) {
    let (k, v) = gen((key(), value()), seed);
    if show {
        outln!("input: {k:?} = {v:?}");
    }
    sysctl_set(cfg, &k, &v);
}

fn t_features(cfg: &SchedConfig, seed: u64, show: bool) {
    let name = gen(feature_name(), seed);
    if show {
        outln!("input: {name:?}");
    }
    let before = snapshot(cfg);
    match cfg.features.write(&name) {
        Err(_) => assert_eq!(
            snapshot(cfg),
            before,
            "rejected feature {name:?} changed the state"
        ),
        Ok((f, on)) => {
            assert_eq!(cfg.features.enabled(f), on);
            assert_eq!(Features::parse(f.name()), Ok((f, true)));
            assert_eq!(cfg.features.mask() & !f.bit(), before.features & !f.bit());
        }
    }
}

fn t_bootargs(_: &SchedConfig, seed: u64, show: bool) {
    let l = gen(cmdline(), seed);
    if show {
        outln!("input: {l:?}");
    }
    let mut warned = 0;
    let args = bootargs::parse(&l, |_, _| warned += 1);
    assert!(warned <= l.split_ascii_whitespace().count());
    assert!(bootargs::HZ_RANGE.contains(&args.hz));
    assert!(args
        .idle_poll_us
        .is_none_or(|us| us <= bootargs::IDLE_POLL_MAX_US));
    // A word that is warned about changes nothing: alone, it parses to the
    // defaults.
    for w in l.split_ascii_whitespace() {
        let mut bad = false;
        let one = bootargs::parse(w, |_, _| bad = true);
        if bad {
            assert_eq!(
                one,
                bootargs::BootArgs::default(),
                "rejected {w:?} changed something"
            );
        }
    }
}

fn t_sched_ops(_: &SchedConfig, seed: u64, show: bool) {
    let ops = gen(
        proptest::collection::vec(common::world::op(), 50..=400),
        seed,
    );
    if show {
        outln!("input: {ops:?}");
    }
    let mut w = common::world::World::new();
    for op in &ops {
        w.apply(op);
        let held = &w.h.held;
        w.lag_unclamped.retain(|id| !held.contains(id));
        w.check();
    }
}

const TARGETS: &[Target] = &[
    Target {
        name: "shell_line",
        run: t_shell_line,
    },
    Target {
        name: "editor",
        run: t_editor,
    },
    Target {
        name: "sysctl",
        run: t_sysctl,
    },
    Target {
        name: "features",
        run: t_features,
    },
    Target {
        name: "bootargs",
        run: t_bootargs,
    },
    Target {
        name: "sched_ops",
        run: t_sched_ops,
    },
];

thread_local! {
    static CURRENT: Cell<(usize, u64)> = const { Cell::new((usize::MAX, 0)) };
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Cmd {
    /// Fuzz for `secs` from base `seed` (now's nanoseconds if not given),
    /// one target or all.
    Run {
        secs: u64,
        seed: Option<u64>,
        only: Option<usize>,
    },
    /// Replay one target's seed.
    Replay { target: usize, seed: u64 },
}

const USAGE: &str = "usage: fuzz [--secs N] [--seed N] [--target NAME] | fuzz --replay TARGET SEED";

/// The index of the target called `name`, or an error listing them.
fn target_index(name: &str) -> Result<usize, String> {
    TARGETS.iter().position(|t| t.name == name).ok_or_else(|| {
        let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        format!("unknown target '{name}' (targets: {})", names.join(", "))
    })
}

/// Parses the arguments; every problem is an error naming it, and nothing
/// runs before all of them are checked.
fn parse_args(args: &[String]) -> Result<Cmd, String> {
    let number = |flag: &str, v: Option<&String>| -> Result<u64, String> {
        let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
        v.parse()
            .map_err(|_| format!("{flag}: '{v}' is not a non-negative integer"))
    };
    let (mut secs, mut seed, mut only) = (None, None, None);
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let value = args.get(i + 1);
        match flag {
            "--secs" | "--seed" | "--target" if value.is_none() => {
                return Err(format!("{flag} needs a value"));
            }
            "--secs" if secs.is_some() => return Err("--secs given twice".into()),
            "--seed" if seed.is_some() => return Err("--seed given twice".into()),
            "--target" if only.is_some() => return Err("--target given twice".into()),
            "--secs" => secs = Some(number(flag, value)?),
            "--seed" => seed = Some(number(flag, value)?),
            "--target" => only = Some(target_index(&args[i + 1])?),
            "--replay" => {
                if args.len() != 3 || i != 0 {
                    return Err("--replay TARGET SEED takes nothing else".into());
                }
                return Ok(Cmd::Replay {
                    target: target_index(&args[1])?,
                    seed: number("--replay's SEED", args.get(2))?,
                });
            }
            a => return Err(format!("unknown argument '{a}'")),
        }
        i += 2;
    }
    Ok(Cmd::Run {
        secs: secs.unwrap_or(60),
        seed,
        only,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (secs, seed, only) = match parse_args(&args) {
        Ok(Cmd::Run { secs, seed, only }) => (secs, seed, only),
        Ok(Cmd::Replay { target, seed }) => {
            let t = &TARGETS[target];
            (t.run)(&new_cfg(), seed, true);
            outln!("fuzz: replay of {} seed {} passed", t.name, seed);
            return;
        }
        Err(e) => {
            errln!("error: fuzz: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let (t, s) = CURRENT.with(Cell::get);
        if let Some(t) = TARGETS.get(t) {
            // Not `errln!`: a closed stderr pipe must not turn the crash
            // into a quiet status 141. Like the default hook, ignore a
            // failed write and let the panic abort.
            let _ = writeln!(
                std::io::stderr(),
                "fuzz: CRASH in target {} at seed {} (replay: cargo run -p fuzz --release -- --replay {} {})",
                t.name, s, t.name, s
            );
        }
        default_hook(info);
    }));
    let targets: Vec<usize> = (0..TARGETS.len())
        .filter(|&t| only.is_none_or(|o| o == t))
        .collect();
    outln!(
        "fuzz: {} s, base seed {}, targets {:?}",
        secs,
        seed,
        targets.iter().map(|&t| TARGETS[t].name).collect::<Vec<_>>()
    );
    let cfg = new_cfg();
    let start = Instant::now();
    let budget = Duration::from_secs(secs);
    let mut execs = vec![0u64; TARGETS.len()];
    let mut n = 0u64;
    // Round-robin in slices of equal time, so the slow sched_ops target gets
    // its share without starving the fast ones.
    let slice = Duration::from_millis(50);
    'outer: loop {
        for &t in &targets {
            let t0 = Instant::now();
            while t0.elapsed() < slice {
                let s = seed.wrapping_add(n);
                CURRENT.with(|c| c.set((t, s)));
                (TARGETS[t].run)(&cfg, s, false);
                execs[t] += 1;
                n += 1;
            }
            if start.elapsed() >= budget {
                break 'outer;
            }
        }
    }
    for &t in &targets {
        outln!("fuzz: {:<10} {:>10} executions", TARGETS[t].name, execs[t]);
    }
    outln!(
        "fuzz: {} executions in {:.1} s, 0 crashes (seeds {}..{})",
        n,
        start.elapsed().as_secs_f64(),
        seed,
        seed.wrapping_add(n)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Cmd, String> {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse_args(&args)
    }

    /// Good command lines parse to what they say; every bad one is an
    /// error that names the problem (and `main` exits 2 before running
    /// anything).
    #[test]
    fn arguments_are_checked_with_clear_errors() {
        let sysctl = target_index("sysctl").expect("sysctl is a target");
        assert_eq!(
            parse(""),
            Ok(Cmd::Run {
                secs: 60,
                seed: None,
                only: None
            })
        );
        assert_eq!(
            parse("--secs 5 --seed 7 --target sysctl"),
            Ok(Cmd::Run {
                secs: 5,
                seed: Some(7),
                only: Some(sysctl)
            })
        );
        assert_eq!(
            parse("--replay sysctl 42"),
            Ok(Cmd::Replay {
                target: sysctl,
                seed: 42
            })
        );
        for (line, want) in [
            ("--secs", "--secs needs a value"),
            ("--secs x", "--secs: 'x' is not a non-negative integer"),
            ("--seed -1", "--seed: '-1' is not a non-negative integer"),
            ("--secs 1 --secs 2", "--secs given twice"),
            ("--target bogus", "unknown target 'bogus' (targets: "),
            ("--replay bogus 1", "unknown target 'bogus' (targets: "),
            ("--replay sysctl", "--replay TARGET SEED takes nothing else"),
            (
                "--replay sysctl x",
                "--replay's SEED: 'x' is not a non-negative integer",
            ),
            (
                "--secs 1 --replay sysctl 1",
                "--replay TARGET SEED takes nothing else",
            ),
            ("--bogus 1", "unknown argument '--bogus'"),
        ] {
            let e = parse(line).expect_err(line);
            assert!(e.starts_with(want), "{line}: {e}");
        }
    }

    /// Every target on fixed seeds: the fuzzer's checks pass on known inputs
    /// (`make test` runs this; `make fuzz` runs the targets for real).
    #[test]
    fn every_target_runs_on_fixed_seeds() {
        let cfg = new_cfg();
        for t in TARGETS {
            let n = if t.name == "sched_ops" { 3 } else { 300 };
            for s in 0..n {
                (t.run)(&cfg, s, false);
            }
        }
    }

    /// A rejected sysctl is detected as "unchanged" and an accepted one as
    /// changed: the snapshot sees what `sysctl -a` prints.
    #[test]
    fn snapshot_sees_changes() {
        let cfg = new_cfg();
        let a = snapshot(&cfg);
        assert!(cfg.sysctl_set("kernel.sched_nr_migrate", "0").is_err());
        assert_eq!(snapshot(&cfg), a);
        cfg.sysctl_set("kernel.sched_nr_migrate", "7").unwrap();
        assert_ne!(snapshot(&cfg), a);
        cfg.features.write("NO_PLACE_LAG").unwrap();
        cfg.tunables.set_preempt_mode(PreemptMode::None);
        let b = snapshot(&cfg);
        assert_ne!(b.features, a.features);
        assert_eq!(b.preempt, PreemptMode::None);
    }
}
