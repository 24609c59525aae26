//! `abtool --versus SAMPLES.csv REF_ARCH OTHER_ARCH...`: one kernel's A/B
//! against another's (`make linux-compare`: Linux, arch `linux-x86_64`,
//! as the reference; ours, `x86_64`), one row per workload and config.
//!
//! For each workload of the reference and each config other than `default`:
//! the change of the workload's first metric against the config's baseline
//! (the config with the most settings that are all in this one's:
//! `NEXT_BUDDY,preempt=lazy` against `preempt=lazy`, `NEXT_BUDDY` against
//! `default`; better positive; Welch's t-test over every kept
//! run of every boot, `*` when p < 0.05) and the ratio of the mean
//! `switches` per run, config / baseline (the mechanism); under it a `CI95`
//! row: the change's 95% confidence interval from the same samples
//! ([`stats::change_ci`], the cell of every A/B table), which excludes 0
//! exactly where the change has its `*`. Then per other
//! kernel the same, and a verdict against the reference:
//! - `agree`: both significant, same direction;
//! - `opposite`: both significant, opposite directions;
//! - `null`: the reference is significant, the other is not;
//! - `ref null`: the reference shows nothing significant (no target);
//!
//! and `x2`: whether the other's change is within a factor of 2 of the
//! reference's (only for `agree`).
//!
//! Workloads are matched by their options: the reference's label `hackbench
//! -p -g 2 -l 100` matches ours `hackbench -p -g 2 -l 100 -f 20 -s 100` (our
//! shell names its defaults); a `-x N` option pair must be present with the
//! same value, a bare flag must be present.

use std::fmt::Write as _;

use shell::compare::{change_ci, metric_kind, Kind};
use stats::{amean, hmean, pct_better, welch_p, ChangeCi, ALPHA};

use crate::csvcmp::Samples;

/// A workload label's command word and its options (`-g 2` as ("-g", "2"),
/// a bare flag as ("-p", "")).
fn options(label: &str) -> (String, Vec<(String, String)>) {
    let mut words = label.split_whitespace().peekable();
    let cmd = words.next().unwrap_or("").to_string();
    let mut out = Vec::new();
    while let Some(w) = words.next() {
        let value = match words.peek() {
            Some(v) if !v.starts_with('-') || v.parse::<f64>().is_ok() => {
                words.next().unwrap_or("").to_string()
            }
            _ => String::new(),
        };
        out.push((w.to_string(), value));
    }
    (cmd, out)
}

/// Whether `other` names everything `reference` names (same command).
/// hackbench's `-T` / `-P` (threads / processes) are not required: our
/// shell accepts them but runs every task as a kernel thread either way,
/// and does not name them in its label.
fn matches(reference: &str, other: &str) -> bool {
    let ((rc, ro), (oc, oo)) = (options(reference), options(other));
    let mode = |o: &(String, String)| rc == "hackbench" && (o.0 == "-T" || o.0 == "-P");
    rc == oc && ro.iter().all(|o| mode(o) || oo.contains(o))
}

/// hackbench's mode flags (`-T`, `-P`) in a label, in order.
fn modes(label: &str) -> Vec<String> {
    let (c, o) = options(label);
    o.into_iter()
        .filter(|o| c == "hackbench" && (o.0 == "-T" || o.0 == "-P"))
        .map(|o| o.0)
        .collect()
}

/// `other`'s workload for the reference's `w`: among the labels that
/// [`matches()`] accepts, the one with the same mode flags (the simulator runs
/// `-T` apart from processes), else the first (our kernel names no mode).
fn counterpart<'a>(w: &str, labels: impl Iterator<Item = &'a String>) -> Option<&'a String> {
    let found: Vec<&String> = labels.filter(|l| matches(w, l)).collect();
    let mode = modes(w);
    found
        .iter()
        .find(|l| modes(l) == mode)
        .or(found.first())
        .copied()
}

/// One kernel's effect of a config: % change (better positive), p, its 95%
/// interval, switches ratio.
#[derive(Clone, Copy, Debug)]
pub struct Effect {
    pub pct: f64,
    pub p: f64,
    pub ci: ChangeCi,
    pub switches: Option<f64>,
}

impl Effect {
    fn significant(&self) -> bool {
        self.p < ALPHA
    }
}

fn series<'a>(ms: &'a [(String, Vec<f64>)], name: &str) -> Option<&'a [f64]> {
    ms.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_slice())
}

/// A config label's settings (`default` has none).
fn settings(label: &str) -> Vec<&str> {
    label
        .split([',', ' '])
        .filter(|x| !x.is_empty() && *x != "default")
        .collect()
}

/// The baseline of `label` among `labels`: the config with the most
/// settings that are all in `label`'s (`NEXT_BUDDY,preempt=lazy` against
/// `preempt=lazy`; `NEXT_BUDDY` against `default`).
fn baseline<'a>(label: &str, labels: &[&'a str]) -> Option<&'a str> {
    let mine = settings(label);
    labels
        .iter()
        .filter(|l| {
            let theirs = settings(l);
            theirs.len() < mine.len() && theirs.iter().all(|x| mine.contains(x))
        })
        // Ties: the one that keeps the preemption model, so the row is a
        // feature's effect within one model.
        .max_by_key(|l| (settings(l).len(), l.contains("preempt=")))
        .copied()
}

/// The labels of (arch, cpus, workload).
fn labels_of<'a>(s: &'a Samples, arch: &str, cpus: u32, w: &str) -> Vec<&'a str> {
    s.keys()
        .filter(|k| k.0 == arch && k.1 == cpus && k.2 == w)
        .map(|k| k.3.as_str())
        .collect()
}

/// The effect of `label` against `base` for (arch, workload).
fn effect(
    s: &Samples,
    arch: &str,
    cpus: u32,
    w: &str,
    label: &str,
    base: &str,
) -> Option<(String, Effect)> {
    let get = |l: &str| s.get(&(arch.to_string(), cpus, w.to_string(), l.to_string()));
    let (base, var) = (get(base)?, get(label)?);
    let (metric, b) = base.first()?;
    let v = series(var, metric)?;
    let kind = metric_kind(metric);
    let mean = if kind == Kind::Higher { hmean } else { amean };
    let switches = match (series(base, "switches"), series(var, "switches")) {
        (Some(a), Some(b)) if amean(a) > 0.0 => Some(amean(b) / amean(a)),
        _ => None,
    };
    Some((
        metric.clone(),
        Effect {
            pct: pct_better(mean(b), mean(v), kind == Kind::Higher),
            p: welch_p(b, v),
            ci: change_ci(kind, b, v),
            switches,
        },
    ))
}

/// The verdict of `other` against `reference`.
pub fn verdict(reference: &Effect, other: &Effect) -> &'static str {
    match (reference.significant(), other.significant()) {
        (false, _) => "ref null",
        (true, false) => "null",
        (true, true) if (reference.pct >= 0.0) == (other.pct >= 0.0) => "agree",
        _ => "opposite",
    }
}

/// Width of a kernel's cell.
const CELL: usize = 32;

/// The legend line of the `CI95` rows.
pub const CI_LEGEND: &str = "CI95: 95% confidence interval of that change (arithmetic means; \
     Fieller's interval, Welch's df; the same runs as its p), excluding 0 exactly where *; \
     unbounded: the baseline's mean is not significantly away from 0; n/a: fewer than 2 runs";

fn cell(e: Option<&Effect>) -> String {
    match e {
        None => format!("{:>26}", "-"),
        Some(e) => {
            let sig = if e.significant() { '*' } else { ' ' };
            let sw = e.switches.map_or("-".to_string(), |r| format!("x{r:.2}"));
            format!("{:>+8.1}%{sig} p={:<6.3} sw {:>6}", e.pct, e.p, sw)
        }
    }
}

/// The table (see the module docs).
pub fn table(s: &Samples, reference: &str, others: &[&str]) -> String {
    let mut out = String::new();
    let mut keys: Vec<(u32, String)> = s
        .keys()
        .filter(|k| k.0 == reference)
        .map(|k| (k.1, k.2.clone()))
        .collect();
    keys.dedup();
    let _ = writeln!(
        out,
        "== versus: change of each workload's first metric against the config's baseline (`default`, or the config it adds one setting to) (better positive; * Welch p < {ALPHA}, all kept runs of all boots), sw: switches per run, config / its baseline"
    );
    let _ = writeln!(out, "{CI_LEGEND}");
    let mut head = format!("{:<38}{:<40}{:>CELL$}", "workload", "config", reference);
    for o in others {
        let _ = write!(head, "{:>CELL$}{:>10}{:>5}", o, "verdict", "x2");
    }
    let _ = writeln!(out, "{head}");
    let mut tally = vec![[0usize; 5]; others.len()];
    for (cpus, w) in keys {
        let labels = labels_of(s, reference, cpus, &w);
        let mut first = true;
        for &label in &labels {
            let Some(base) = baseline(label, &labels) else {
                continue;
            };
            let Some((metric, r)) = effect(s, reference, cpus, &w, label, base) else {
                continue;
            };
            let name = if first {
                format!("{w} [{metric}]")
            } else {
                String::new()
            };
            first = false;
            let config = if base == "default" {
                label.to_string()
            } else {
                format!("{label} vs {base}")
            };
            let mut row = format!("{name:<38}{config:<40}{:>CELL$}", cell(Some(&r)));
            // Each kernel's interval under its change; none where it has none.
            let mut ci_row = format!("{:<38}{:<40}{:>CELL$}", "", "  CI95", r.ci);
            for (i, o) in others.iter().enumerate() {
                let ow = counterpart(
                    &w,
                    s.keys().filter(|k| k.0 == *o && k.1 == cpus).map(|k| &k.2),
                )
                .cloned();
                let e = ow.and_then(|ow| effect(s, o, cpus, &ow, label, base).map(|(_, e)| e));
                let (v, x2) = match &e {
                    Some(e) => {
                        let v = verdict(&r, e);
                        let within = v == "agree" && e.pct / r.pct <= 2.0 && e.pct / r.pct >= 0.5;
                        let j = ["agree", "null", "opposite", "ref null"]
                            .iter()
                            .position(|x| *x == v)
                            .unwrap_or(3);
                        tally[i][j] += 1;
                        if within {
                            tally[i][4] += 1;
                        }
                        (
                            v,
                            if v == "agree" {
                                if within {
                                    "yes"
                                } else {
                                    "no"
                                }
                            } else {
                                ""
                            },
                        )
                    }
                    None => ("-", ""),
                };
                let _ = write!(row, "{:>CELL$}{v:>10}{x2:>5}", cell(e.as_ref()));
                let ci = e.map_or(String::new(), |e| e.ci.to_string());
                let _ = write!(ci_row, "{ci:>CELL$}{:>15}", "");
            }
            let _ = writeln!(out, "{}", row.trim_end());
            let _ = writeln!(out, "{}", ci_row.trim_end());
        }
    }
    for (i, o) in others.iter().enumerate() {
        let t = tally[i];
        let _ = writeln!(
            out,
            "{o} against {reference}: {} agree ({} within 2x), {} null, {} opposite, {} where {reference} shows no significant change",
            t[0], t[4], t[1], t[2], t[3]
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_match_with_defaults_named() {
        assert!(matches(
            "hackbench -p -g 2 -l 100",
            "hackbench -p -g 2 -l 100 -f 20 -s 100"
        ));
        assert!(!matches(
            "hackbench -p -g 2 -l 100",
            "hackbench -g 2 -l 100 -f 20 -s 100"
        ));
        assert!(!matches(
            "hackbench -g 4 -l 100",
            "hackbench -g 2 -l 100 -f 20"
        ));
        assert!(!matches("schbench -r 1", "hackbench -r 1"));
        assert!(matches("perfpipe -l 2000", "perfpipe -l 2000"));
    }

    #[test]
    fn a_process_row_takes_the_process_run_when_both_modes_ran() {
        let sim = [
            "hackbench -T -g 2 -l 100".to_string(),
            "hackbench -g 2 -l 100".to_string(),
        ];
        assert_eq!(
            counterpart("hackbench -g 2 -l 100", sim.iter()).map(String::as_str),
            Some("hackbench -g 2 -l 100")
        );
        assert_eq!(
            counterpart("hackbench -T -g 2 -l 100", sim.iter()).map(String::as_str),
            Some("hackbench -T -g 2 -l 100")
        );
        // Our kernel names no mode: both rows take its one label.
        let ours = ["hackbench -g 2 -l 100 -f 20 -s 100".to_string()];
        assert_eq!(
            counterpart("hackbench -T -g 2 -l 100", ours.iter()).map(String::as_str),
            Some("hackbench -g 2 -l 100 -f 20 -s 100")
        );
        assert_eq!(counterpart("hackbench -p -g 2 -l 100", ours.iter()), None);
    }

    #[test]
    fn baselines() {
        let l = [
            "default",
            "NEXT_BUDDY",
            "preempt=lazy",
            "NEXT_BUDDY,preempt=lazy",
        ];
        assert_eq!(baseline("NEXT_BUDDY", &l), Some("default"));
        assert_eq!(
            baseline("NEXT_BUDDY,preempt=lazy", &l),
            Some("preempt=lazy")
        );
        assert_eq!(baseline("default", &l), None);
    }

    #[test]
    fn verdicts() {
        let e = |pct, p| Effect {
            pct,
            p,
            ci: ChangeCi::NotAvailable,
            switches: None,
        };
        assert_eq!(verdict(&e(10.0, 0.01), &e(30.0, 0.001)), "agree");
        assert_eq!(verdict(&e(10.0, 0.01), &e(-3.0, 0.01)), "opposite");
        assert_eq!(verdict(&e(10.0, 0.01), &e(3.0, 0.4)), "null");
        assert_eq!(verdict(&e(1.0, 0.4), &e(3.0, 0.01)), "ref null");
    }

    #[test]
    fn table_pairs_kernels_by_options() {
        let text = "arch,cpus,seed,workload,config,label,run,warmup,kind,name,value\n\
            linux-x86_64,4,1,\"hackbench -g 2\",0,\"default\",1,false,metric,time_s,1.0\n\
            linux-x86_64,4,1,\"hackbench -g 2\",0,\"default\",1,false,counter,switches,100\n\
            linux-x86_64,4,1,\"hackbench -g 2\",0,\"default\",3,false,metric,time_s,1.1\n\
            linux-x86_64,4,1,\"hackbench -g 2\",0,\"default\",3,false,counter,switches,100\n\
            linux-x86_64,4,1,\"hackbench -g 2\",1,\"NEXT_BUDDY\",2,false,metric,time_s,0.5\n\
            linux-x86_64,4,1,\"hackbench -g 2\",1,\"NEXT_BUDDY\",2,false,counter,switches,50\n\
            linux-x86_64,4,1,\"hackbench -g 2\",1,\"NEXT_BUDDY\",4,false,metric,time_s,0.55\n\
            linux-x86_64,4,1,\"hackbench -g 2\",1,\"NEXT_BUDDY\",4,false,counter,switches,50\n\
            x86_64,4,1,\"hackbench -g 2 -f 20\",0,\"default\",1,false,metric,time_s,2.0\n\
            x86_64,4,1,\"hackbench -g 2 -f 20\",0,\"default\",3,false,metric,time_s,2.02\n\
            x86_64,4,1,\"hackbench -g 2 -f 20\",1,\"NEXT_BUDDY\",2,false,metric,time_s,2.5\n\
            x86_64,4,1,\"hackbench -g 2 -f 20\",1,\"NEXT_BUDDY\",4,false,metric,time_s,2.52\n";
        let s = crate::csvcmp::parse_kinds(text, true).unwrap();
        let t = table(&s, "linux-x86_64", &["x86_64"]);
        // Linux: 1.05 -> 0.525 s, +50% better, switches halved; ours 2.01 -> 2.51, worse.
        assert!(t.contains("+50.0%*"), "{t}");
        assert!(t.contains("sw  x0.50"), "{t}");
        assert!(t.contains("opposite"), "{t}");
        assert!(
            t.contains("x86_64 against linux-x86_64: 0 agree (0 within 2x), 0 null, 1 opposite"),
            "{t}"
        );
    }

    /// `samples.csv` lines of kept runs of one metric: (arch, workload,
    /// config index, label, metric, values).
    fn csv_lines(arch: &str, w: &str, c: usize, label: &str, m: &str, v: &[f64]) -> String {
        v.iter()
            .enumerate()
            .map(|(i, x)| {
                format!(
                    "{arch},4,1,\"{w}\",{c},\"{label}\",{},false,metric,{m},{x}\n",
                    i + 1
                )
            })
            .collect()
    }

    /// `[lo, hi]%` of a CI95 cell; `None` for `n/a`, `unbounded` or blank.
    fn parse_ci(c: &str) -> Option<(f64, f64)> {
        c.parse::<ChangeCi>().ok()?.bounds()
    }

    /// Under each change row a CI95 row: each kernel's interval under its
    /// change, from the same runs as its p, excluding 0 exactly where the
    /// change has its `*`; blank where the other kernel has no such row.
    #[test]
    fn ci95_rows_under_the_changes() {
        let lin = "linux-x86_64";
        // hackbench time_s (lower is better). Linux 100 -> 105, n = 5 and
        // s^2 = 2.5 on both sides: df 8, t = 2.3060041, 5% worse in
        // [-7.3928, -2.6631]% (`stats/tests/change_ci.rs`), marked. Ours 10
        // -> 9, n = 3 and s^2 = 1: df 4, t = 2.7764451, 10% better in
        // [-14.3506, +29.6034]%, not marked.
        let (lb, lv) = (
            [98.0, 99.0, 100.0, 101.0, 102.0],
            [103.0, 104.0, 105.0, 106.0, 107.0],
        );
        let (ob, ov) = ([9.0, 10.0, 11.0], [8.0, 9.0, 10.0]);
        // perfpipe ops_per_s (higher is better): Linux 10 -> 15, n = 3:
        // +50% in [+24.4132, +83.4988]%, marked; ours has one NEXT_BUDDY
        // run: n/a. schbench runs only on Linux.
        let (pb, pv) = ([9.0, 10.0, 11.0], [14.0, 15.0, 16.0]);
        let (hb, pp, sb) = ("hackbench -g 2", "perfpipe -l 20", "schbench -m 2");
        let mut text =
            String::from("arch,cpus,seed,workload,config,label,run,warmup,kind,name,value\n");
        for (arch, w, m, b, v) in [
            (lin, hb, "time_s", &lb[..], &lv[..]),
            ("x86_64", hb, "time_s", &ob, &ov),
            (lin, pp, "ops_per_s", &pb, &pv),
            ("x86_64", pp, "ops_per_s", &pb, &pv[..1]),
            (lin, sb, "p99_us", &ob, &ov),
        ] {
            text += &csv_lines(arch, w, 0, "default", m, b);
            text += &csv_lines(arch, w, 1, "NEXT_BUDDY", m, v);
        }
        let s = crate::csvcmp::parse_kinds(&text, true).unwrap();
        let t = table(&s, lin, &["x86_64"]);
        assert!(t.contains(&format!("\n{CI_LEGEND}\n")), "{t}");
        let lines: Vec<&str> = t.lines().collect();
        let ci_row = |workload: &str| {
            let i = lines.iter().position(|l| l.starts_with(workload)).unwrap();
            (lines[i], lines[i + 1])
        };
        // Expected cells, apart from the table: Fieller's interval of the
        // ratio (stats::rel_change_ci), better positive, to 2 decimals.
        let want = |b: &[f64], v: &[f64], higher_better: bool| {
            let c = stats::rel_change_ci(b, v, 0.05).unwrap();
            let c = if higher_better { c } else { c.lower_better() };
            format!("[{:+.2}, {:+.2}]%", c.lo_pct, c.hi_pct)
        };
        assert_eq!(want(&lb, &lv, false), "[-7.39, -2.66]%");
        assert_eq!(want(&ob, &ov, false), "[-14.35, +29.60]%");
        assert_eq!(want(&pb, &pv, true), "[+24.41, +83.50]%");
        let row = |cells: &[&str]| {
            let mut r = format!("{:<38}{:<40}", "", "  CI95");
            for (i, c) in cells.iter().enumerate() {
                r += &format!("{c:>32}");
                if i > 0 {
                    r += &" ".repeat(15);
                }
            }
            r.trim_end().to_string()
        };
        let (h, hc) = ci_row("hackbench -g 2 [time_s]");
        assert_eq!(
            hc,
            row(&[&want(&lb, &lv, false), &want(&ob, &ov, false)]),
            "{t}"
        );
        assert!(h.contains("-5.0%* p=") && h.contains("+10.0%  p="), "{h}");
        let (_, pc) = ci_row("perfpipe -l 20 [ops_per_s]");
        assert_eq!(pc, row(&[&want(&pb, &pv, true), "n/a"]), "{t}");
        let (_, sc) = ci_row("schbench -m 2 [p99_us]");
        assert_eq!(sc, row(&[&want(&ob, &ov, false)]), "{t}");

        // Every bounded interval excludes 0 exactly where its change has a
        // `*`: the kernels' cells start at 78, 32 and 47 wide.
        let mut checked = 0;
        for (i, l) in lines.iter().enumerate().skip(1) {
            if !l.starts_with(&format!("{:<38}  CI95", "")) {
                continue;
            }
            let change = lines[i - 1];
            for (start, w) in [(78, 32), (78 + 32, 32)] {
                let Some(ci) = l.get(start..(start + w).min(l.len())).and_then(parse_ci) else {
                    continue;
                };
                let star = change[start..start + w].contains("%*");
                assert_eq!(ci.0 > 0.0 || ci.1 < 0.0, star, "{change}\n{l}");
                checked += 1;
            }
        }
        assert_eq!(checked, 4, "{t}");
    }
}
