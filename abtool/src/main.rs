//! `abtool`: the host half of `make ab` (scripts/tools/ab.sh boots the kernels).
//!
//! ```text
//! abtool --out DIR LOG...
//! abtool --compare OLD.csv NEW.csv [NAME_OLD NAME_NEW]
//! abtool --versus SAMPLES.csv REF_ARCH OTHER_ARCH...
//! abtool --baseline-record BASE.csv OUT.txt [--floor [METRIC=]PCT]... [NOISE.csv...]
//! abtool --baseline-check BASELINE.txt NEW.csv   (make bench-kernel, see [`baseline`])
//! ```
//!
//! The second form puts two runs' `samples.csv` (e.g. two commits' `make
//! bench`) side by side, see [`csvcmp`]. The third sets kernels' A/B
//! effects side by side with a verdict per row (`make linux-compare`: Linux
//! against ours), see [`versus`].
//!
//! Each LOG is one boot's serial output, named `ARCH_smpN_seedS.log`; it holds
//! one or more `compare` transcripts (header `compare: ... of 'WORKLOAD' ...`
//! and one `run`/`warmup` line per run, see `shell::compare::RunLine`).
//! Writes to DIR:
//! - `tables.txt` (also on stdout): per arch, CPU count and workload, the
//!   kernel's own mmtests-style table over every kept run of every boot, then
//!   the variance split per metric: within-boot CoV (pooled: the root of the
//!   mean per-boot variance over the grand mean), boot-to-boot CoV (of the
//!   per-boot means), and Welch's p and the change's 95% interval
//!   ([`stats::change_ci`]) with the per-boot means as the samples;
//! - `samples.csv`, `samples.json`: every sample (warmups included, marked);
//! - `pct_change.png`: % change against the baseline (better positive) per
//!   workload metric and config, `*` where Welch p < 0.05;
//! - `distributions.png`: every kept sample per config, coloured by boot.

// Stdout goes through `outln!` / `out!`, stderr through `errln!`
// (`sim/src/out.rs`): `println!` and `eprintln!` panic on a closed pipe.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod baseline;
mod csvcmp;
mod versus;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use shell::compare::{change_ci, metric_kind, write_table, Kind, RunLine, Series};
use sim::plot::COLORS;
use sim::study::json_str;
use sim::{errln, out, outln};
use stats::{amean, cov, hmean, stddev, welch_p};

/// One run of one boot.
#[derive(Clone, Debug)]
struct Sample {
    arch: String,
    cpus: u32,
    seed: u64,
    workload: String,
    config: usize,
    label: String,
    run: u32,
    warmup: bool,
    metrics: Vec<(String, f64)>,
    counters: Vec<(String, u64)>,
}

/// `x86_64_smp4_seed3.log` -> (x86_64, 4, 3).
fn parse_name(p: &Path) -> Option<(String, u32, u64)> {
    let stem = p.file_stem()?.to_str()?;
    let (rest, seed) = stem.rsplit_once("_seed")?;
    let (arch, cpus) = rest.rsplit_once("_smp")?;
    Some((arch.to_string(), cpus.parse().ok()?, seed.parse().ok()?))
}

/// Whether `line` has the head of a run line (`run 3/12 cfg B ...` or
/// `warmup 1/12 cfg A ...`), whatever follows.
fn looks_like_run_line(line: &str) -> bool {
    let Some(rest) = line
        .strip_prefix("run ")
        .or_else(|| line.strip_prefix("warmup "))
    else {
        return false;
    };
    let Some((idx, _)) = rest.split_once(" cfg ") else {
        return false;
    };
    idx.split_once('/')
        .is_some_and(|(i, n)| i.trim().parse::<u32>().is_ok() && n.trim().parse::<u32>().is_ok())
}

fn parse_log(path: &Path) -> Result<Vec<Sample>, String> {
    let (arch, cpus, seed) = parse_name(path)
        .ok_or_else(|| format!("{}: name is not ARCH_smpN_seedS.log", path.display()))?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut workload = None::<String>;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if let Some(rest) = line.strip_prefix("compare: ") {
            if let Some((_, w)) = rest.split_once(" of '") {
                workload = w.split_once('\'').map(|(w, _)| w.to_string());
            }
            continue;
        }
        let Some(r) = RunLine::parse(line) else {
            // Anything else in the log (kernel messages, the tables) is not
            // a sample; a line shaped like a run line that does not parse
            // (a negative counter, a truncated line) is an error, never a
            // silently smaller sample.
            if looks_like_run_line(line) {
                return Err(format!(
                    "{}: line {}: a run line that does not parse: '{line}'",
                    path.display(),
                    n + 1
                ));
            }
            continue;
        };
        let Some(w) = &workload else {
            return Err(format!(
                "{}: a run line before any compare header",
                path.display()
            ));
        };
        out.push(Sample {
            arch: arch.clone(),
            cpus,
            seed,
            workload: w.clone(),
            config: r.config,
            label: r.label.to_string(),
            run: r.index.0,
            warmup: r.warmup,
            metrics: r.metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            counters: r
                .counters
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
        });
    }
    Ok(out)
}

type Key = (String, u32, String);

/// The samples of one (arch, cpus, workload).
struct Group<'a> {
    key: Key,
    labels: Vec<String>,
    seeds: Vec<u64>,
    kept: Vec<&'a Sample>,
    metrics: Vec<String>,
    counters: Vec<String>,
}

impl Group<'_> {
    fn metric(s: &Sample, name: &str) -> Option<f64> {
        s.metrics.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    fn counter(s: &Sample, name: &str) -> f64 {
        s.counters
            .iter()
            .find(|(k, _)| k == name)
            .map_or(0.0, |(_, v)| *v as f64)
    }

    /// `values[config]` of a metric (or a counter), kept runs, optionally of one boot.
    fn values(&self, name: &str, counter: bool, seed: Option<u64>) -> Vec<Vec<f64>> {
        (0..self.labels.len())
            .map(|ci| {
                self.kept
                    .iter()
                    .filter(|s| s.config == ci && seed.is_none_or(|x| s.seed == x))
                    .filter_map(|s| {
                        if counter {
                            Some(Self::counter(s, name))
                        } else {
                            Self::metric(s, name)
                        }
                    })
                    .collect()
            })
            .collect()
    }
}

fn groups(all: &[Sample]) -> Vec<Group<'_>> {
    let mut map: BTreeMap<Key, Vec<&Sample>> = BTreeMap::new();
    for s in all {
        map.entry((s.arch.clone(), s.cpus, s.workload.clone()))
            .or_default()
            .push(s);
    }
    map.into_iter()
        .map(|(key, ss)| {
            let n = ss.iter().map(|s| s.config + 1).max().unwrap_or(0);
            let mut labels = vec![String::new(); n];
            for s in &ss {
                labels[s.config] = s.label.clone();
            }
            let mut seeds: Vec<u64> = ss.iter().map(|s| s.seed).collect();
            seeds.sort_unstable();
            seeds.dedup();
            let mut metrics: Vec<String> = Vec::new();
            let mut counters: Vec<String> = Vec::new();
            for s in &ss {
                for (k, _) in &s.metrics {
                    if !metrics.contains(k) {
                        metrics.push(k.clone());
                    }
                }
                for (k, _) in &s.counters {
                    if !counters.contains(k) {
                        counters.push(k.clone());
                    }
                }
            }
            Group {
                key,
                labels,
                seeds,
                kept: ss.into_iter().filter(|s| !s.warmup).collect(),
                metrics,
                counters,
            }
        })
        .collect()
}

fn mean_of(kind: Kind) -> fn(&[f64]) -> f64 {
    if kind == Kind::Higher {
        hmean
    } else {
        amean
    }
}

fn table(g: &Group<'_>) -> String {
    let mut s = String::new();
    let (arch, cpus, w) = &g.key;
    // Kept runs per config (a boot that failed may have fewer).
    let per: Vec<usize> = (0..g.labels.len())
        .map(|ci| g.kept.iter().filter(|s| s.config == ci).count())
        .collect();
    let _ = writeln!(
        s,
        "== {w} on {arch}, {cpus} CPU(s): {} boot(s) (seeds {:?}), kept runs per config {per:?}",
        g.seeds.len(),
        g.seeds
    );
    let mut owned: Vec<(String, Kind, Vec<Vec<f64>>)> = Vec::new();
    for m in &g.metrics {
        owned.push((m.clone(), metric_kind(m), g.values(m, false, None)));
    }
    for c in &g.counters {
        owned.push((c.clone(), Kind::Counter, g.values(c, true, None)));
    }
    let refs: Vec<Vec<&[f64]>> = owned
        .iter()
        .map(|(_, _, v)| v.iter().map(Vec::as_slice).collect())
        .collect();
    let series: Vec<Series<'_>> = owned
        .iter()
        .zip(&refs)
        .map(|((n, k, _), r)| Series {
            name: n,
            kind: *k,
            samples: r,
        })
        .collect();
    let labels: Vec<&str> = g.labels.iter().map(String::as_str).collect();
    let _ = write_table(&mut s, &labels, &series);
    // Variance split.
    let _ = writeln!(
        s,
        "variance (within-boot: pooled per-boot stddev / mean; boot-to-boot: CoV of per-boot means;\n boot-level p: Welch's t-test on the per-boot means against A; boot-level CI95: that change's\n 95% interval from the same per-boot means, as CI95 above, excluding 0 exactly where p < 0.05)"
    );
    for m in &g.metrics {
        let kind = metric_kind(m);
        let mean = mean_of(kind);
        let per_boot: Vec<Vec<Vec<f64>>> = g
            .seeds
            .iter()
            .map(|&sd| g.values(m, false, Some(sd)))
            .collect();
        let mut rows = [
            format!("{:<22}{:<20}", "within-boot CoV", m),
            format!("{:<22}{:<20}", "boot-to-boot CoV", m),
            format!("{:<22}{:<20}", "boot-level p", m),
            format!("{:<22}{:<20}", "boot-level CI95", m),
        ];
        let boot_means = |ci: usize| -> Vec<f64> {
            per_boot
                .iter()
                .filter(|b| !b[ci].is_empty())
                .map(|b| mean(&b[ci]))
                .collect()
        };
        for ci in 0..g.labels.len() {
            let all: Vec<f64> = per_boot.iter().flat_map(|b| b[ci].clone()).collect();
            let vars: Vec<f64> = per_boot
                .iter()
                .filter(|b| b[ci].len() > 1)
                .map(|b| stddev(&b[ci]).powi(2))
                .collect();
            let within = if vars.is_empty() || amean(&all) == 0.0 {
                0.0
            } else {
                100.0 * amean(&vars).sqrt() / amean(&all)
            };
            let bm = boot_means(ci);
            let _ = write!(rows[0], "{:>12.2}%{:>9}", within, "");
            let _ = write!(rows[1], "{:>12.2}%{:>9}", cov(&bm), "");
            if ci == 0 {
                let _ = write!(rows[2], "{:>13}{:>9}", "-", "");
                let _ = write!(rows[3], "{:>13}{:>9}", "-", "");
            } else {
                let _ = write!(rows[2], "{:>13.4}{:>9}", welch_p(&boot_means(0), &bm), "");
                let c = change_ci(kind, &boot_means(0), &bm);
                let _ = write!(rows[3], "{c:>22}");
            }
        }
        for r in rows {
            let _ = writeln!(s, "{}", r.trim_end());
        }
    }
    s
}

fn csv(all: &[Sample]) -> String {
    let mut s = String::from("arch,cpus,seed,workload,config,label,run,warmup,kind,name,value\n");
    for x in all {
        let head = format!(
            "{},{},{},\"{}\",{},\"{}\",{},{}",
            x.arch, x.cpus, x.seed, x.workload, x.config, x.label, x.run, x.warmup
        );
        for (k, v) in &x.metrics {
            let _ = writeln!(s, "{head},metric,{k},{v}");
        }
        for (k, v) in &x.counters {
            let _ = writeln!(s, "{head},counter,{k},{v}");
        }
    }
    s
}

fn json(all: &[Sample]) -> String {
    let mut s = String::from("[\n");
    for (i, x) in all.iter().enumerate() {
        let m: Vec<String> = x
            .metrics
            .iter()
            .map(|(k, v)| format!("{}: {v}", json_str(k)))
            .collect();
        let c: Vec<String> = x
            .counters
            .iter()
            .map(|(k, v)| format!("{}: {v}", json_str(k)))
            .collect();
        let _ = write!(
            s,
            "  {{\"arch\": {}, \"cpus\": {}, \"seed\": {}, \"workload\": {}, \"config\": {}, \"label\": {}, \"run\": {}, \"warmup\": {}, \"metrics\": {{{}}}, \"counters\": {{{}}}}}",
            json_str(&x.arch),
            x.cpus,
            x.seed,
            json_str(&x.workload),
            x.config,
            json_str(&x.label),
            x.run,
            x.warmup,
            m.join(", "),
            c.join(", ")
        );
        s.push_str(if i + 1 < all.len() { ",\n" } else { "\n" });
    }
    s.push_str("]\n");
    s
}

fn e<E: std::fmt::Debug>(x: E) -> String {
    format!("{x:?}")
}

/// Point size of the x-axis category labels, and the pixels one line of
/// them takes.
const XLABEL_PT: u32 = 11;
const XLABEL_LINE_PX: u32 = 13;
/// Average advance of one character of the label font at [`XLABEL_PT`],
/// in pixels (DejaVu Sans: about 0.6 em).
const XLABEL_CHAR_PX: f64 = 6.6;

/// Breaks `s` into lines of at most `max_chars` characters, at spaces and
/// after commas and plus signs (config names such as `NEXT_BUDDY,DELAY_ZERO`);
/// a word longer than a line is cut.
fn wrap_label(s: &str, max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(4);
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    for ch in s.chars() {
        if ch == ' ' {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        cur.push(ch);
        if ch == ',' || ch == '+' {
            words.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for w in words {
        let glue = !line.is_empty() && !line.ends_with(',') && !line.ends_with('+');
        let need = line.chars().count() + usize::from(glue) + w.chars().count();
        if !line.is_empty() && need > max_chars {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() && !line.ends_with(',') && !line.ends_with('+') {
            line.push(' ');
        }
        line.push_str(&w);
        while line.chars().count() > max_chars {
            let head: String = line.chars().take(max_chars).collect();
            line = line.chars().skip(max_chars).collect();
            lines.push(head);
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Each category's label wrapped to the width one category gets on an axis
/// `axis_px` pixels wide.
fn wrap_labels(names: &[String], axis_px: u32) -> Vec<Vec<String>> {
    let per = f64::from(axis_px) / names.len().max(1) as f64;
    let max_chars = ((per - 8.0) / XLABEL_CHAR_PX).floor().max(4.0) as usize;
    names.iter().map(|n| wrap_label(n, max_chars)).collect()
}

/// Draws category `i`'s label lines centred under x = i, below the chart's
/// plotting area, on `area` (the drawing area the chart was built on).
/// Plotters' own tick labels are one line each and overlap when the names
/// are longer than a category is wide.
fn draw_x_labels<'a, DB: DrawingBackend + 'a>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &ChartContext<
        'a,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    y_bottom: f64,
    labels: &[Vec<String>],
) -> Result<(), String> {
    let (bx, by) = area.get_base_pixel();
    let style = ("sans-serif", XLABEL_PT).into_font().color(&BLACK).pos(
        plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Top,
        ),
    );
    for (i, lines) in labels.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64, y_bottom));
        for (k, l) in lines.iter().enumerate() {
            let top = y - by + 6 + (k as u32 * XLABEL_LINE_PX) as i32;
            area.draw(&Text::new(l.clone(), (x - bx, top), style.clone()))
                .map_err(e)?;
        }
    }
    Ok(())
}

/// Draws a chart's legend in the upper right corner.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    size: u32,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .label_font(("sans-serif", size))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(e)
}

/// One bar: config index, % change (better positive), significant.
type Bar = (usize, f64, bool);

/// Bars: % change of each variant against A per (group, metric).
fn pct_plot(gs: &[Group<'_>], path: &Path) -> Result<(), String> {
    sim::plot::init_font()?;
    // (category, [(config, pct, significant)])
    let mut cats: Vec<(String, Vec<Bar>)> = Vec::new();
    for g in gs {
        for m in &g.metrics {
            let kind = metric_kind(m);
            let v = g.values(m, false, None);
            let mean = mean_of(kind);
            let b = mean(&v[0]);
            let bars = (1..v.len())
                .map(|ci| {
                    let x = mean(&v[ci]);
                    let p = sim_pct(b, x, kind == Kind::Higher);
                    (ci, p, welch_p(&v[0], &v[ci]) < 0.05)
                })
                .collect();
            cats.push((
                format!("{} {}/{}cpu {}", first_word(&g.key.2), g.key.0, g.key.1, m),
                bars,
            ));
        }
    }
    if cats.is_empty() {
        return Err("no samples".into());
    }
    let (mut lo, mut hi) = (-1.0f64, 1.0f64);
    for (_, bars) in &cats {
        for &(_, p, _) in bars {
            lo = lo.min(p);
            hi = hi.max(p);
        }
    }
    let pad = (hi - lo) * 0.15 + 0.5;
    let n = cats.len();
    let w = (160 * n as u32).clamp(640, 2400);
    let names: Vec<String> = cats.iter().map(|c| c.0.clone()).collect();
    // The plotting area is the width less the y labels (56) and the margins.
    let labels = wrap_labels(&names, w - 56 - 20);
    let nlines = labels.iter().map(Vec::len).max().unwrap_or(1) as u32;
    let root = BitMapBackend::new(path, (w, 500 + nlines * XLABEL_LINE_PX)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "make ab: % change against config A (better is positive; * Welch p < 0.05)",
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(12 + nlines * XLABEL_LINE_PX)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo - pad)..(hi + pad))
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("% vs A (better +)")
        .label_style(("sans-serif", 11))
        .draw()
        .map_err(e)?;
    draw_x_labels(&root, &chart, lo - pad, &labels)?;
    let nv = cats.iter().map(|c| c.1.len()).max().unwrap_or(1).max(1);
    let bw = 0.8 / nv as f64;
    let mut legend_done = vec![false; nv + 1];
    for (i, (_, bars)) in cats.iter().enumerate() {
        for (j, &(ci, p, sig)) in bars.iter().enumerate() {
            let x0 = i as f64 - 0.4 + j as f64 * bw;
            let c = COLORS[ci % COLORS.len()];
            let series = chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.0), (x0 + bw * 0.9, p)],
                    c.filled(),
                )))
                .map_err(e)?;
            if !legend_done[ci] {
                legend_done[ci] = true;
                let label = gs
                    .iter()
                    .find_map(|g| g.labels.get(ci).cloned())
                    .unwrap_or_default();
                series
                    .label(format!("{}:{label}", (b'A' + ci as u8) as char))
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled())
                    });
            }
            let txt = format!("{p:+.1}%{}", if sig { "*" } else { "" });
            chart
                .draw_series(std::iter::once(Text::new(
                    txt,
                    (
                        x0,
                        if p >= 0.0 {
                            p + pad * 0.3
                        } else {
                            p - pad * 0.1
                        },
                    ),
                    ("sans-serif", 11).into_font(),
                )))
                .map_err(e)?;
        }
    }
    chart
        .draw_series(LineSeries::new(
            vec![(-0.5, 0.0), (n as f64 - 0.5, 0.0)],
            BLACK.stroke_width(1),
        ))
        .map_err(e)?;
    legend(&mut chart, 12)?;
    root.present().map_err(e)
}

fn sim_pct(base: f64, v: f64, higher_better: bool) -> f64 {
    stats::pct_better(base, v, higher_better)
}

fn first_word(s: &str) -> &str {
    s.split_whitespace().next().unwrap_or(s)
}

/// Every kept sample of each group's first metric, per config, by boot.
fn dist_plot(gs: &[Group<'_>], path: &Path) -> Result<(), String> {
    sim::plot::init_font()?;
    let cols = if gs.len() > 1 { 2 } else { 1 };
    let rows = gs.len().div_ceil(cols);
    let root = BitMapBackend::new(path, (520 * cols as u32, 340 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    for (g, area) in gs.iter().zip(root.split_evenly((rows, cols)).iter()) {
        let Some(m) = g.metrics.first() else {
            continue;
        };
        let v = g.values(m, false, None);
        let all: Vec<f64> = v.iter().flatten().copied().collect();
        if all.is_empty() {
            continue;
        }
        let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let pad = (hi - lo).max(hi.abs() * 0.01) * 0.15 + 1e-9;
        let nc = g.labels.len();
        let names: Vec<String> = g
            .labels
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{}:{l}", (b'A' + i as u8) as char))
            .collect();
        let labels = wrap_labels(&names, 520 - 56 - 16);
        let nlines = labels.iter().map(Vec::len).max().unwrap_or(1) as u32;
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!(
                    "{} on {}, {} CPUs: {m}",
                    first_word(&g.key.2),
                    g.key.0,
                    g.key.1
                ),
                ("sans-serif", 14),
            )
            .margin(8)
            .x_label_area_size(12 + nlines * XLABEL_LINE_PX)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5f64..(nc as f64 - 0.5), (lo - pad)..(hi + pad))
            .map_err(e)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(m.as_str())
            .label_style(("sans-serif", 11))
            .draw()
            .map_err(e)?;
        draw_x_labels(area, &chart, lo - pad, &labels)?;
        for (bi, &sd) in g.seeds.iter().enumerate() {
            let c = COLORS[(bi + 1) % COLORS.len()];
            let pv = g.values(m, false, Some(sd));
            let nb = g.seeds.len().max(1) as f64;
            let pts: Vec<(f64, f64)> = pv
                .iter()
                .enumerate()
                .flat_map(|(ci, xs)| {
                    let off = -0.3 + 0.6 * (bi as f64 + 0.5) / nb;
                    xs.iter().map(move |&y| (ci as f64 + off, y))
                })
                .collect();
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled())))
                .map_err(e)?
                .label(format!("boot seed {sd}"))
                .legend(move |(x, y)| Circle::new((x + 6, y), 3, c.filled()));
        }
        legend(&mut chart, 10)?;
    }
    root.present().map_err(e)
}

/// `--compare OLD.csv NEW.csv [NAME_OLD NAME_NEW]`.
fn compare_csv(args: &[String]) -> ! {
    if args.len() != 2 && args.len() != 4 {
        errln!("error: abtool: usage: abtool --compare OLD.csv NEW.csv [NAME_OLD NAME_NEW]");
        std::process::exit(2);
    }
    let (old, new) = (read_samples(&args[0]), read_samples(&args[1]));
    let names = if args.len() == 4 {
        [args[2].as_str(), args[3].as_str()]
    } else {
        ["old", "new"]
    };
    out!("{}", csvcmp::tables(&old, &new, names));
    std::process::exit(0);
}

fn read_samples(p: &str) -> csvcmp::Samples {
    match std::fs::read_to_string(p)
        .map_err(|e| e.to_string())
        .and_then(|t| csvcmp::parse(&t))
    {
        Ok(s) => s,
        Err(e) => {
            errln!("error: abtool: {p}: {e}");
            std::process::exit(1);
        }
    }
}

/// `--baseline-record BASE.csv OUT.txt [--floor [METRIC=]PCT]... NOISE.csv...` (see [`baseline`]).
fn baseline_record(args: &[String]) -> ! {
    let usage =
        "usage: abtool --baseline-record BASE.csv OUT.txt [--floor [METRIC=]PCT]... [NOISE.csv...]";
    if args.len() < 2 {
        errln!("error: abtool: {usage}");
        std::process::exit(2);
    }
    let mut rest = &args[2..];
    let mut floors: Vec<(Option<String>, f64)> = Vec::new();
    while rest.first().map(String::as_str) == Some("--floor") {
        let arg = rest.get(1).map_or("", String::as_str);
        let (metric, pct) = match arg.split_once('=') {
            Some((m, p)) if !m.is_empty() => (Some(m.to_string()), p),
            _ => (None, arg),
        };
        match pct.parse::<f64>() {
            Ok(f) if f.is_finite() && f >= 0.0 => floors.push((metric, f)),
            _ => {
                errln!(
                    "error: abtool: --floor wants [METRIC=]PCT with PCT >= 0, got '{arg}'; {usage}"
                );
                std::process::exit(2);
            }
        }
        rest = &rest[2.min(rest.len())..];
    }
    let base = read_samples(&args[0]);
    let noise: Vec<_> = rest.iter().map(|p| read_samples(p)).collect();
    let figs = match baseline::record(&base, &noise, &floors) {
        Ok(f) => f,
        Err(e) => {
            errln!("error: abtool: {e}");
            std::process::exit(1);
        }
    };
    let name = |p: &String| {
        std::path::Path::new(p)
            .file_stem()
            .map_or(p.clone(), |s| s.to_string_lossy().into_owned())
    };
    let header = format!(
        "make bench-kernel's baseline (scripts/tools/kbench.sh, abtool --baseline-record).\n\
         Recorded from {}; tolerances from {} noise run(s): {}; floors: {}.\n\
         A figure worse than its mean by more than its tolerance, and significantly so\n\
         (Welch's t against its stddev and runs, one-sided p < {}), is a REGRESSION.",
        name(&args[0]),
        noise.len(),
        rest.iter().map(name).collect::<Vec<_>>().join(", "),
        floors
            .iter()
            .map(|(m, f)| match m {
                Some(m) => format!("{m} {f}%"),
                None => format!("{f}%"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        baseline::ALPHA
    );
    if let Err(e) = std::fs::write(&args[1], baseline::write(&figs, &header)) {
        errln!("error: abtool: {}: {e}", args[1]);
        std::process::exit(1);
    }
    outln!("abtool: {} figures recorded in {}", figs.len(), args[1]);
    std::process::exit(0);
}

/// `--baseline-check BASELINE.txt NEW.csv` (see [`baseline`]).
fn baseline_check(args: &[String]) -> ! {
    if args.len() != 2 {
        errln!("error: abtool: usage: abtool --baseline-check BASELINE.txt NEW.csv");
        std::process::exit(2);
    }
    let figs = match std::fs::read_to_string(&args[0])
        .map_err(|e| e.to_string())
        .and_then(|t| baseline::read(&t))
    {
        Ok(f) => f,
        Err(e) => {
            errln!("error: abtool: {}: {e}", args[0]);
            std::process::exit(1);
        }
    };
    let (report, bad) = baseline::check(&figs, &read_samples(&args[1]));
    out!("{report}");
    if bad > 0 {
        outln!(
            "abtool: {bad} of {} figures regressed against {}",
            figs.len(),
            args[0]
        );
        std::process::exit(1);
    }
    outln!(
        "abtool: no regression against {} ({} figures)",
        args[0],
        figs.len()
    );
    std::process::exit(0);
}

fn versus_csv(args: &[String]) -> ! {
    if args.len() < 3 {
        errln!("error: abtool: usage: abtool --versus SAMPLES.csv REF_ARCH OTHER_ARCH...");
        std::process::exit(2);
    }
    let s = match std::fs::read_to_string(&args[0])
        .map_err(|e| e.to_string())
        .and_then(|t| csvcmp::parse_kinds(&t, true))
    {
        Ok(s) => s,
        Err(e) => {
            errln!("error: abtool: {}: {e}", args[0]);
            std::process::exit(1);
        }
    };
    let others: Vec<&str> = args[2..].iter().map(String::as_str).collect();
    out!("{}", versus::table(&s, &args[1], &others));
    std::process::exit(0);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--compare") {
        compare_csv(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("--versus") {
        versus_csv(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("--baseline-record") {
        baseline_record(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("--baseline-check") {
        baseline_check(&args[1..]);
    }
    let mut out = PathBuf::from("build/ab");
    let mut logs = Vec::new();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--out" if i + 1 < args.len() => {
                out = PathBuf::from(&args[i + 1]);
                i += 1;
            }
            "-h" | "--help" => {
                outln!("usage: abtool [--out DIR] LOG...  (LOG named ARCH_smpN_seedS.log)");
                outln!("       abtool --compare OLD.csv NEW.csv [NAME_OLD NAME_NEW]");
                outln!("       abtool --versus SAMPLES.csv REF_ARCH OTHER_ARCH...");
                outln!(
                    "       abtool --baseline-record BASE.csv OUT.txt [--floor [METRIC=]PCT]... [NOISE.csv...]"
                );
                outln!("       abtool --baseline-check BASELINE.txt NEW.csv");
                return;
            }
            a if a.starts_with('-') => {
                errln!("error: abtool: unknown option '{a}'");
                std::process::exit(2);
            }
            a => logs.push(PathBuf::from(a)),
        }
        i += 1;
    }
    if logs.is_empty() {
        errln!("error: abtool: no logs given (usage: abtool [--out DIR] LOG...)");
        std::process::exit(2);
    }
    let mut all = Vec::new();
    for l in &logs {
        match parse_log(l) {
            Ok(s) => all.extend(s),
            Err(e) => {
                errln!("error: abtool: {e}");
                std::process::exit(1);
            }
        }
    }
    if all.is_empty() {
        errln!("error: abtool: no run lines in the logs");
        std::process::exit(1);
    }
    if let Err(e) = std::fs::create_dir_all(&out) {
        errln!("error: abtool: {}: {e}", out.display());
        std::process::exit(1);
    }
    let gs = groups(&all);
    let mut text = String::new();
    for g in &gs {
        text.push_str(&table(g));
        text.push('\n');
    }
    out!("{text}");
    let write = |name: &str, body: &str| {
        let p = out.join(name);
        if let Err(e) = std::fs::write(&p, body) {
            errln!("error: abtool: {}: {e}", p.display());
            std::process::exit(1);
        }
    };
    write("tables.txt", &text);
    write("samples.csv", &csv(&all));
    write("samples.json", &json(&all));
    for (name, r) in [
        ("pct_change.png", pct_plot(&gs, &out.join("pct_change.png"))),
        (
            "distributions.png",
            dist_plot(&gs, &out.join("distributions.png")),
        ),
    ] {
        if let Err(e) = r {
            errln!("abtool: {name} skipped: {e}");
        }
    }
    errln!(
        "abtool: {} samples from {} log(s): {}/tables.txt, samples.csv, samples.json, pct_change.png, distributions.png",
        all.len(),
        logs.len(),
        out.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two boots of a two-config compare, as the kernel prints them.
    fn write_logs(dir: &Path) -> Vec<PathBuf> {
        let mut v = Vec::new();
        for (seed, shift) in [(1u64, 0.0), (2, 0.02)] {
            let mut s = String::from("sched> compare -c default -c NEXT_BUDDY -- hackbench\r\n");
            s.push_str("compare: 2 config(s) x 2 run(s) (+1 warmup) of 'hackbench -g 1', rotated order, seed 1\r\n");
            s.push_str("warmup 1/6 cfg A default: time_s=9.0000 | switches=1 buddy=0\r\n");
            s.push_str("warmup 2/6 cfg B NEXT_BUDDY: time_s=9.0000 | switches=1 buddy=5\r\n");
            for (i, (c, l, t)) in [
                ('B', "NEXT_BUDDY", 0.50),
                ('A', "default", 1.00),
                ('A', "default", 1.02),
                ('B', "NEXT_BUDDY", 0.52),
            ]
            .iter()
            .enumerate()
            {
                s.push_str(&format!(
                    "run {}/6 cfg {c} {l}: time_s={:.4} | switches=10 buddy={}\r\n",
                    i + 3,
                    t + shift,
                    if *c == 'A' { 0 } else { 7 }
                ));
            }
            let p = dir.join(format!("x86_64_smp4_seed{seed}.log"));
            std::fs::write(&p, s).unwrap();
            v.push(p);
        }
        v
    }

    #[test]
    fn x_labels_wrap_at_spaces_and_commas_and_fit_their_width() {
        assert_eq!(
            wrap_label("hackbench x86_64/4cpu time_s", 20),
            vec!["hackbench", "x86_64/4cpu time_s"]
        );
        assert_eq!(
            wrap_label("C:NEXT_BUDDY,NEXT_BUDDY_SYNC_RUNTIME", 24),
            vec!["C:NEXT_BUDDY,", "NEXT_BUDDY_SYNC_RUNTIME"]
        );
        // A word longer than a line is cut, never left to overflow.
        assert_eq!(wrap_label("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap_label("a b", 10), vec!["a b"]);
        // 18 categories on 2324 px: about 129 px, 18 characters, each.
        let names: Vec<String> = (0..18)
            .map(|i| format!("perfpipe aarch64/{i}cpu usecs_per_op"))
            .collect();
        for lines in wrap_labels(&names, 2324) {
            for l in &lines {
                let px = l.chars().count() as f64 * XLABEL_CHAR_PX;
                assert!(px <= 2324.0 / 18.0, "{l:?} is {px} px");
            }
        }
    }

    #[test]
    fn a_run_line_that_does_not_parse_is_an_error_not_a_smaller_sample() {
        let dir = std::env::temp_dir().join(format!("abtool-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = write_logs(&dir).remove(0);
        let good = std::fs::read_to_string(&p).unwrap();
        // Kernel messages between the run lines are not samples and pass.
        let noisy = good.replace("run 4/6", "[ 1.0] clock: refined\r\nrun 4/6");
        std::fs::write(&p, &noisy).unwrap();
        assert_eq!(parse_log(&p).unwrap().len(), 6);
        // A negative counter (u64) makes a run line unparsable: an error
        // that names the file and the line.
        let bad = good.replace(
            "run 4/6 cfg A default: time_s=1.0000 | switches=10",
            "run 4/6 cfg A default: time_s=1.0000 | switches=-3",
        );
        assert_ne!(bad, good);
        std::fs::write(&p, &bad).unwrap();
        let e = parse_log(&p).unwrap_err();
        assert!(e.contains("line 6: a run line that does not parse"), "{e}");
        assert!(e.contains("switches=-3"), "{e}");
        // So is a truncated one.
        std::fs::write(&p, good.replace("time_s=1.0000 |", "time_s=")).unwrap();
        assert!(parse_log(&p).is_err());
        assert!(!looks_like_run_line("runqueue 3/4 cfg"));
        assert!(!looks_like_run_line("run the tests"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_logs_tables_and_variance() {
        assert_eq!(
            parse_name(Path::new("a/aarch64_smp4_seed12.log")),
            Some(("aarch64".into(), 4, 12))
        );
        assert_eq!(parse_name(Path::new("x86_64.log")), None);
        let dir = std::env::temp_dir().join(format!("abtool-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut all = Vec::new();
        for p in write_logs(&dir) {
            all.extend(parse_log(&p).unwrap());
        }
        assert_eq!(all.len(), 12);
        assert_eq!(all.iter().filter(|s| s.warmup).count(), 4);
        let gs = groups(&all);
        assert_eq!(gs.len(), 1);
        assert_eq!(gs[0].labels, vec!["default", "NEXT_BUDDY"]);
        assert_eq!(gs[0].kept.len(), 8);
        let t = table(&gs[0]);
        assert!(
            t.contains("2 boot(s) (seeds [1, 2]), kept runs per config [4, 4]"),
            "{t}"
        );
        assert!(t.contains("Amean   time_s "), "{t}");
        assert!(t.contains("Amean   buddy "), "{t}");
        // Every mean row has its interval under it.
        let lines: Vec<&str> = t.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if let Some(name) = l.strip_prefix("Amean   ") {
                let name = name.split_whitespace().next().unwrap();
                assert!(lines[i + 1].starts_with(&format!("CI95    {name} ")), "{t}");
            }
        }
        // Boot 2 is 0.02 slower everywhere: within-boot spread is 0.01 / 1.02
        // (stddev of [1.00, 1.02] is 0.01414), boot-to-boot of A's means
        // [1.01, 1.03] is 1.39%.
        assert!(
            t.contains("within-boot CoV       time_s                      1.39%"),
            "{t}"
        );
        assert!(
            t.contains("boot-to-boot CoV      time_s                      1.39%"),
            "{t}"
        );
        // The per-boot means: A [1.01, 1.03], B [0.51, 0.53] (s^2 = 0.0002
        // on both sides, n = 2: df 2, t = 4.302653), so p = 0.0008 and B is
        // about 49% faster; the interval from those means, signed as the
        // time's (a drop is positive): Fieller's a = 1.02^2 - t^2 0.0001,
        // rho = (1.02 * 0.52 -+ t sqrt(0.0001 a + 0.52^2 0.0001)) / a =
        // 0.463313, 0.558119, so [+44.19, +53.67]%. The same from
        // stats::rel_change_ci, and it excludes 0 as p < 0.05.
        let (a, b) = ([1.01, 1.03], [0.51, 0.53]);
        assert!(welch_p(&a, &b) < 0.05);
        let r = stats::rel_change_ci(&a, &b, 0.05).unwrap().lower_better();
        let cell = format!("[{:+.2}, {:+.2}]%", r.lo_pct, r.hi_pct);
        assert_eq!(cell, "[+44.19, +53.67]%");
        assert!(
            t.contains(&format!(
                "\nboot-level CI95       time_s                          -         {cell:>22}\n"
            )),
            "{t}"
        );
        let c = csv(&all);
        assert!(c.starts_with("arch,cpus,seed,workload,config,label,run,warmup,kind,name,value\n"));
        assert!(
            c.contains("x86_64,4,2,\"hackbench -g 1\",1,\"NEXT_BUDDY\",6,false,metric,time_s,0.54"),
            "{c}"
        );
        let j = json(&all);
        assert!(j.contains("\"label\": \"NEXT_BUDDY\", \"run\": 3, \"warmup\": false, \"metrics\": {\"time_s\": 0.5}, \"counters\": {\"switches\": 10, \"buddy\": 7}"), "{j}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
