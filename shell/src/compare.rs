//! `compare`'s output formats, shared by the kernel (which prints them) and
//! the host (`abtool`, which parses the per-run lines, and the tests):
//!
//! - one line per run: `run R/T cfg C LABEL: metric=value ... | counter=delta ...`
//!   ([`RunLine`]), with `warmup` instead of `run` for dropped runs;
//! - the closing table, mmtests style ([`write_table`]): a baseline column
//!   (the first config), then each variant as `value (±x.xx%)` with better as
//!   positive, `value *±x.xx%*` when Welch's t-test gives p < [`ALPHA`];
//!   Amean rows for times and latencies, Hmean for rates, each followed by a
//!   `CI95` row (the 95% confidence interval of each variant's change,
//!   [`change_ci`]), Stddev and CoV rows, and a block of mechanism counters
//!   (mean per run, more is positive).

use core::fmt::{self, Write};

use stats::{amean, cov, hmean, pct_better, stddev, welch_p, ALPHA};

/// How a series is summarised and which direction is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A time or latency: Amean, lower is better.
    Lower,
    /// A rate: Hmean, higher is better.
    Higher,
    /// A mechanism counter (per-run delta): Amean, more is shown as positive.
    Counter,
}

/// The kind of a metric the kernel's workloads report, by name (rates are
/// higher-is-better; everything else is a time or latency). For tools that
/// read run lines.
pub fn metric_kind(name: &str) -> Kind {
    match name {
        "ops_per_s" | "rps" | "tps" | "runtime_ms" | "share0_pct" => Kind::Higher,
        _ => Kind::Lower,
    }
}

/// One row group of the table: a metric or counter and its samples per config.
#[derive(Clone, Copy, Debug)]
pub struct Series<'a> {
    /// Metric or counter name.
    pub name: &'a str,
    /// Summary and direction.
    pub kind: Kind,
    /// `samples[config]`: the kept runs' values, in run order.
    pub samples: &'a [&'a [f64]],
}

/// Width of a config column.
const CELL: usize = 22;

struct Cell {
    v: f64,
    pct: Option<f64>,
    sig: bool,
    decimals: usize,
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = alloc::string::String::new();
        let _ = write!(s, "{:.*}", self.decimals, self.v);
        match self.pct {
            None => write!(f, "{:>w$}", s, w = CELL),
            // A change against a zero baseline has no percentage.
            Some(p) if p.is_nan() && self.sig => write!(f, "{:>12} *{:>7}*", s, "n/a"),
            Some(p) if p.is_nan() => write!(f, "{:>12} ({:>7})", s, "n/a"),
            Some(p) if self.sig => write!(f, "{:>12} *{:>6.2}%*", s, p),
            Some(p) => write!(f, "{:>12} ({:>6.2}%)", s, p),
        }
    }
}

/// The significance test, as the table names it.
pub const TEST_NAME: &str = "Welch's t-test (two-sided, unequal variances)";

/// The second legend line: what the `CI95` rows are.
pub const CI_LEGEND: &str = "CI95: 95% confidence interval of that % change (arithmetic means; \
     Fieller's interval, Welch's df), excluding 0 exactly where *x.xx%*; \
     unbounded: A's mean is not significantly away from 0; n/a: fewer than 2 runs";

/// Whether a variant's mean is marked `*` against the baseline: Welch's
/// t-test gives p < [`ALPHA`].
pub fn significant(base: &[f64], variant: &[f64]) -> bool {
    welch_p(base, variant) < ALPHA
}

pub use stats::ChangeCi;

// A `CI95` cell keeps a blank before it in its column.
const _: () = assert!(stats::CHANGE_CI_MAX_CHARS < CELL);

/// The 95% confidence interval of `variant`'s change against `base` in % of
/// the baseline mean, signed as the mean row's %: better is positive for
/// [`Kind::Lower`] (a drop is positive) and [`Kind::Higher`], more is
/// positive for [`Kind::Counter`]: [`stats::change_ci`], which inverts the
/// test of [`significant`], so a bounded interval excludes 0 exactly when
/// the mean is marked `*`. (For an Hmean row it is the change of the
/// arithmetic means, the ones the t-test compares.)
pub fn change_ci(kind: Kind, base: &[f64], variant: &[f64]) -> ChangeCi {
    stats::change_ci(base, variant, kind != Kind::Lower)
}

/// Writes the table: a header of `labels` (the first is the baseline), then
/// for each series its mean, `CI95` (when there is a variant column), Stddev
/// and CoV rows. The legend lines name the test and the threshold, and
/// what `CI95` is.
pub fn write_table(out: &mut dyn Write, labels: &[&str], series: &[Series<'_>]) -> fmt::Result {
    // Headers are cut to the column width; then the full names come first.
    if labels.iter().any(|l| l.len() + 2 > CELL - 1) {
        write!(out, "configs:")?;
        for (i, l) in labels.iter().enumerate() {
            write!(out, " {}={l}", (b'A' + i as u8) as char)?;
        }
        writeln!(out)?;
    }
    write!(out, "{:<28}", "")?;
    for (i, l) in labels.iter().enumerate() {
        let tag = alloc::format!("{}:{}", (b'A' + i as u8) as char, l);
        let tag = if tag.len() > CELL - 1 {
            alloc::format!("{}~", &tag[..CELL - 2])
        } else {
            tag
        };
        write!(out, "{:>w$}", tag, w = CELL)?;
    }
    writeln!(out)?;
    let mut counters = false;
    for s in series {
        if s.kind == Kind::Counter && !counters {
            counters = true;
            writeln!(out, "counters, per run (% change: more is positive)")?;
        }
        let (mean_name, mean): (&str, fn(&[f64]) -> f64) = match s.kind {
            Kind::Higher => ("Hmean", hmean),
            Kind::Lower | Kind::Counter => ("Amean", amean),
        };
        let hb = s.kind != Kind::Lower;
        let dec = if s.kind == Kind::Counter { 1 } else { 4 };
        let Some(base) = s.samples.first() else {
            continue;
        };
        let (bm, bsd) = (mean(base), stddev(base));
        write!(out, "{:<8}{:<20}", mean_name, s.name)?;
        for (i, x) in s.samples.iter().enumerate() {
            let c = Cell {
                v: mean(x),
                pct: Some(match i {
                    0 => 0.0,
                    _ if bm == 0.0 && mean(x) != 0.0 => f64::NAN,
                    _ => pct_better(bm, mean(x), hb),
                }),
                sig: i > 0 && significant(base, x),
                decimals: dec,
            };
            write!(out, "{c}")?;
        }
        writeln!(out)?;
        if s.samples.len() > 1 {
            // The baseline's cell blank, no trailing blanks.
            let mut row = alloc::format!("{:<8}{:<20}{:w$}", "CI95", s.name, "", w = CELL);
            for x in &s.samples[1..] {
                let _ = write!(row, "{:>w$}", change_ci(s.kind, base, x), w = CELL);
            }
            writeln!(out, "{}", row.trim_end())?;
        }
        write!(out, "{:<8}{:<20}", "Stddev", s.name)?;
        for (i, x) in s.samples.iter().enumerate() {
            // Less spread is better whatever the metric.
            let c = Cell {
                v: stddev(x),
                pct: Some(if i == 0 {
                    0.0
                } else {
                    pct_better(bsd, stddev(x), false)
                }),
                sig: false,
                decimals: dec,
            };
            write!(out, "{c}")?;
        }
        writeln!(out)?;
        // No trailing blanks after the last column.
        let mut row = alloc::format!("{:<8}{:<20}", "CoV", s.name);
        for x in s.samples.iter() {
            let v = alloc::format!("{:.2}%", cov(x));
            let _ = write!(row, "{:>12}{:>10}", v, "");
        }
        writeln!(out, "{}", row.trim_end())?;
    }
    writeln!(
        out,
        "% change against A, better is positive; *x.xx%*: {TEST_NAME} p < {ALPHA:.2}"
    )?;
    writeln!(out, "{CI_LEGEND}")
}

/// One run's line as the kernel prints it and the host parses it:
/// `run 3/12 cfg B NEXT_BUDDY: time_s=0.3650 | switches=1234 buddy=56`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunLine<'a> {
    /// Warmup (dropped) or kept.
    pub warmup: bool,
    /// 1-based position among all runs, and their total.
    pub index: (u32, u32),
    /// Config index (A = 0).
    pub config: usize,
    /// Config label.
    pub label: &'a str,
    /// `name=value` metrics.
    pub metrics: alloc::vec::Vec<(&'a str, f64)>,
    /// `name=delta` counters.
    pub counters: alloc::vec::Vec<(&'a str, u64)>,
}

impl RunLine<'_> {
    /// Parses a line printed by [`write_run_line`] (`None` for anything else).
    pub fn parse(line: &str) -> Option<RunLine<'_>> {
        let line = line.trim_end_matches(['\r', '\n']);
        let (warmup, rest) = if let Some(r) = line.strip_prefix("run ") {
            (false, r)
        } else {
            (true, line.strip_prefix("warmup ")?)
        };
        let (idx, rest) = rest.split_once(" cfg ")?;
        let (i, n) = idx.split_once('/')?;
        let index = (i.trim().parse().ok()?, n.trim().parse().ok()?);
        let (tag, rest) = rest.split_once(' ')?;
        let config = match tag.as_bytes() {
            [c @ b'A'..=b'Z'] => (c - b'A') as usize,
            _ => return None,
        };
        let (label, rest) = rest.split_once(": ")?;
        let (m, c) = rest.split_once(" |").unwrap_or((rest, ""));
        let mut metrics = alloc::vec::Vec::new();
        for w in m.split_ascii_whitespace() {
            let (k, v) = w.split_once('=')?;
            metrics.push((k, v.parse().ok()?));
        }
        let mut counters = alloc::vec::Vec::new();
        for w in c.split_ascii_whitespace() {
            let (k, v) = w.split_once('=')?;
            counters.push((k, v.parse().ok()?));
        }
        Some(RunLine {
            warmup,
            index,
            config,
            label,
            metrics,
            counters,
        })
    }
}

/// Prints one run's line (see [`RunLine`]).
pub fn write_run_line(out: &mut dyn Write, r: &RunLine<'_>) -> fmt::Result {
    write!(
        out,
        "{} {}/{} cfg {} {}:",
        if r.warmup { "warmup" } else { "run" },
        r.index.0,
        r.index.1,
        (b'A' + r.config as u8) as char,
        r.label
    )?;
    for (k, v) in &r.metrics {
        write!(out, " {k}={v:.4}")?;
    }
    write!(out, " |")?;
    for (k, v) in &r.counters {
        write!(out, " {k}={v}")?;
    }
    writeln!(out)
}
