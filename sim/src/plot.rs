//! PNG plots with `plotters` (bitmap backend, text through `ab_glyph` with
//! DejaVu Sans from Debian's `fonts-dejavu-core`, which `make study` installs
//! when it is missing; without the font the plots are skipped, not the study):
//! the % change against the baseline per parameter value for each sweep,
//! wakeup-latency CDFs, and a per-CPU timeline of a short window.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::prelude::*;

use crate::machine::Machine;
use crate::study::Results;
use crate::workloads::HackbenchCfg;
use crate::{run_one, WorkSpec};
use stats::{amean, hmean};

/// Where the font is looked for.
pub const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// Registers DejaVu Sans as plotters' "sans-serif" (once); the error names
/// the paths tried. Public for `abtool`, which draws `make ab`'s plots.
pub fn init_font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let bytes = FONT_PATHS
            .iter()
            .find_map(|p| std::fs::read(p).ok())
            .ok_or_else(|| format!("no font at {}", FONT_PATHS.join(" or ")))?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| "invalid font file".to_string())
    })
    .clone()
}

/// The series colours (baseline black first). Public for `abtool`.
pub const COLORS: [RGBColor; 6] = [
    RGBColor(0, 0, 0),
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
];

fn e<E: std::fmt::Debug>(x: E) -> String {
    format!("{x:?}")
}

/// The % change (better is positive) of each configuration against the
/// baseline, per parameter value, one panel per (item, first metric).
pub fn pct_plot(r: &Results, items: &[usize], path: &Path, title: &str) -> Result<(), String> {
    init_font()?;
    let st = &r.study;
    let cols = if items.len() > 1 { 2 } else { 1 };
    let rows = items.len().div_ceil(cols);
    let root =
        BitMapBackend::new(path, (560 * cols as u32, 340 * rows as u32 + 30)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let (top, body) = root.split_vertically(30);
    top.draw_text(
        title,
        &("sans-serif", 18).into_font().color(&BLACK),
        (10, 6),
    )
    .map_err(e)?;
    let panels = body.split_evenly((rows, cols));
    for (&ii, area) in items.iter().zip(panels.iter()) {
        let it = &st.items[ii];
        let metric = it.metrics[0];
        let hb = r
            .samples
            .iter()
            .flat_map(|s| s.r.metrics.iter())
            .find(|m| m.name == metric)
            .is_some_and(|m| m.higher_better);
        let mean = |v: &[f64]| if hb { hmean(v) } else { amean(v) };
        let mut lines = Vec::new();
        let (mut lo, mut hi) = (-1.0f64, 1.0f64);
        for ci in 1..st.configs.len() {
            let pts: Vec<(f64, f64)> = (0..it.values.len())
                .map(|vi| {
                    let b = mean(&r.values(ii, vi, 0, metric));
                    let x = mean(&r.values(ii, vi, ci, metric));
                    let p = if b == 0.0 {
                        0.0
                    } else if hb {
                        100.0 * (x - b) / b
                    } else {
                        100.0 * (b - x) / b
                    };
                    (vi as f64, p)
                })
                .collect();
            for &(_, p) in &pts {
                lo = lo.min(p);
                hi = hi.max(p);
            }
            lines.push((ci, pts));
        }
        let pad = (hi - lo) * 0.1 + 0.5;
        let n = it.values.len();
        let values = it.values.clone();
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{} on {} ({metric})", it.title, it.machine),
                ("sans-serif", 15),
            )
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(48)
            .build_cartesian_2d(-0.3f64..(n as f64 - 0.7), (lo - pad)..(hi + pad))
            .map_err(e)?;
        let fmt = move |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 && (i as usize) < values.len() {
                values[i as usize].to_string()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_labels(4 * n)
            .x_label_formatter(&fmt)
            .x_desc(it.param)
            .y_desc("% vs baseline (better +)")
            .label_style(("sans-serif", 12))
            .draw()
            .map_err(e)?;
        chart
            .draw_series(LineSeries::new(
                vec![(-0.3, 0.0), (n as f64 - 0.7, 0.0)],
                BLACK.stroke_width(1),
            ))
            .map_err(e)?
            .label(format!("{} (baseline)", st.configs[0].name))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
        for (ci, pts) in lines {
            let c = COLORS[ci % COLORS.len()];
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map_err(e)?
                .label(st.configs[ci].name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(e)?;
        }
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 11))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerLeft)
            .draw()
            .map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

/// Wakeup-latency CDFs (class-0 samples of seed 0) of item `ii` at value `vi`.
pub fn cdf_plot(r: &Results, ii: usize, vi: usize, path: &Path) -> Result<(), String> {
    init_font()?;
    let st = &r.study;
    let it = &st.items[ii];
    let mut curves = Vec::new();
    let mut xmax = 1.0f64;
    for ci in 0..st.configs.len() {
        let Some(s) = r
            .samples
            .iter()
            .find(|s| s.item == ii && s.vi == vi && s.ci == ci && s.seed == 0)
        else {
            continue;
        };
        let mut v: Vec<f64> = s.r.lat0.iter().map(|&x| x as f64 / 1000.0).collect();
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        let p999 = v[(v.len() * 999 / 1000).min(v.len() - 1)];
        xmax = xmax.max(p999);
        let step = (v.len() / 400).max(1);
        let pts: Vec<(f64, f64)> = v
            .iter()
            .enumerate()
            .step_by(step)
            .map(|(i, &x)| (x, (i + 1) as f64 / v.len() as f64))
            .collect();
        curves.push((ci, pts));
    }
    if curves.is_empty() {
        return Err("no latency samples".into());
    }
    let root = BitMapBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{} on {}: wakeup latency CDF ({} = {}, seed 0)",
                it.title, it.machine, it.param, it.values[vi]
            ),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(0f64..xmax * 1.05, 0f64..1.0)
        .map_err(e)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_desc("wakeup latency, µs (to the 99.9th percentile)")
        .y_desc("fraction of wakeups")
        .label_style(("sans-serif", 12))
        .draw()
        .map_err(e)?;
    for (ci, pts) in curves {
        let c = COLORS[ci % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(e)?
            .label(st.configs[ci].name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 12))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

/// A per-CPU timeline of `[from, to)` ns of one hackbench run per
/// configuration (receivers blue, senders orange, idle white).
pub fn timeline_plot(r: &Results, path: &Path) -> Result<(), String> {
    init_font()?;
    let st = &r.study;
    let m = Machine::preset("graviton3").ok_or("preset")?;
    let w = WorkSpec::Hackbench(HackbenchCfg {
        groups: 4,
        loops: 100,
        sockets: false,
        threads: false,
        flips: 0,
    });
    let (from, to) = (1_000_000u64, 1_400_000u64);
    let n = st.configs.len().min(2);
    let cpus = 16usize;
    let root = BitMapBackend::new(path, (900, 40 + 260 * n as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let (top, body) = root.split_vertically(30);
    top.draw_text(
        "hackbench-process-pipes, 4 groups, graviton3: CPUs 0-15 from 1.0 to 1.4 ms (blue receivers, orange senders)",
        &("sans-serif", 14).into_font().color(&BLACK),
        (10, 8),
    )
    .map_err(e)?;
    let panels = body.split_evenly((n, 1));
    for (ci, area) in panels.iter().enumerate() {
        let res = run_one(&m, &st.configs[ci], &w, 1, to, to)?;
        let mut chart = ChartBuilder::on(area)
            .caption(st.configs[ci].name.clone(), ("sans-serif", 13))
            .margin(6)
            .x_label_area_size(28)
            .y_label_area_size(40)
            .build_cartesian_2d(from as f64 / 1e3..to as f64 / 1e3, 0f64..cpus as f64)
            .map_err(e)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .disable_y_mesh()
            .x_desc("µs")
            .y_desc("CPU")
            .label_style(("sans-serif", 11))
            .draw()
            .map_err(e)?;
        let segs = res
            .trace
            .iter()
            .filter(|s| (s.cpu as usize) < cpus && s.end > from && s.start < to);
        chart
            .draw_series(segs.map(|s| {
                let receiver = s.tid % 40 < 20;
                let shade = (s.tid % 20) as u8 * 6;
                let c = if receiver {
                    RGBColor(40 + shade, 90 + shade, 200)
                } else {
                    RGBColor(240, 120 + shade, 20 + shade)
                };
                let y = s.cpu as f64;
                Rectangle::new(
                    [
                        (s.start.max(from) as f64 / 1e3, y + 0.1),
                        (s.end.min(to) as f64 / 1e3, y + 0.9),
                    ],
                    c.filled(),
                )
            }))
            .map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

/// Every plot of a study; returns the files written.
pub fn study_plots(r: &Results, out: &Path) -> Result<Vec<PathBuf>, String> {
    init_font()?;
    let st = &r.study;
    let mut files = Vec::new();
    // Hackbench sweeps per machine on one image, the others one each.
    let mut machines: Vec<&str> = st.items.iter().map(|i| i.machine.as_str()).collect();
    machines.dedup();
    for mname in machines {
        let hbs: Vec<usize> = (0..st.items.len())
            .filter(|&i| st.items[i].machine == mname && st.items[i].title.starts_with("hackbench"))
            .collect();
        if !hbs.is_empty() {
            let p = out.join(format!("hackbench-{mname}.png"));
            pct_plot(
                r,
                &hbs,
                &p,
                &format!(
                    "hackbench on {mname}: change vs {} (Amean time; better is positive)",
                    st.configs[0].name
                ),
            )?;
            files.push(p);
        }
    }
    for (ii, it) in st.items.iter().enumerate() {
        if it.title.starts_with("hackbench") {
            continue;
        }
        let p = out.join(format!("{}-{}.png", it.title, it.machine));
        pct_plot(r, &[ii], &p, &format!("{} on {}", it.title, it.machine))?;
        files.push(p);
        if it.title == "schbench" {
            let p = out.join("schbench-wakeup-cdf.png");
            cdf_plot(r, ii, it.values.len() - 1, &p)?;
            files.push(p);
        }
    }
    let p = out.join("timeline.png");
    timeline_plot(r, &p)?;
    files.push(p);
    Ok(files)
}
