//! `make bench-kernel`'s recorded baseline (`bench/kernel-baseline.txt`)
//! and the regression check against it.
//!
//! - `abtool --baseline-record BASE.csv OUT.txt [--floor [METRIC=]PCT]... NOISE.csv...`
//!   writes, for
//!   every workload, config and metric of BASE (a `samples.csv` of
//!   `scripts/tools/kbench.sh`), its mean over the kept runs, the per-run
//!   standard deviation and the number of runs behind that mean, and a
//!   tolerance in percent: the largest change of that mean seen in the NOISE
//!   runs (the same scheduler code built with unrelated layout changes: under
//!   QEMU `-icount` a run is deterministic, and what moves a figure between
//!   such builds is where code and data land and the phase of the tick
//!   against the workload), and at least twice the standard error of BASE's
//!   own mean and each `--floor` (for every metric, or for METRIC: the shift
//!   measured between commits that do not touch the measured paths, which
//!   the padded builds may not reproduce).
//! - `abtool --baseline-check BASELINE.txt NEW.csv` prints one line per
//!   figure and `REGRESSION` for each that got worse (higher for a time,
//!   lower for a rate) by more than its tolerance **and** significantly so
//!   given both samples' run-to-run spread (see [`check`]); it exits with
//!   status 1 when there is one. A figure worse by more than its tolerance
//!   whose difference is not significant is marked `noise` and does not
//!   fail. Figures better by more than the tolerance are marked `improved`
//!   (re-record the baseline to keep the gain guarded).
//!
//! Why both conditions: the tolerance is the layout noise of the mean (how
//! far builds of the same code move it), which says nothing about the
//! run-to-run spread of the sample being checked. A 6-run mean of a figure
//! whose runs spread by 20% (hackbench's short runs) has a standard error of
//! about 8%, so a tolerance of 14% alone fails an unchanged kernel often.
//! The significance test asks whether the difference could be that spread:
//! Welch's t of the new runs against the baseline's recorded mean, per-run
//! stddev and run count, one-sided in the worse direction, at
//! [`ALPHA`]. With no spread on either side (deterministic figures such as
//! perfpipe's under `-icount`) any difference is significant and the
//! tolerance alone decides, as before.

use std::fmt::Write as _;

use shell::compare::{metric_kind, Kind};

use crate::csvcmp::{Key, Samples};

/// One recorded figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Workload command line.
    pub workload: String,
    /// Config label.
    pub config: String,
    /// Metric name.
    pub metric: String,
    /// Mean over the kept runs.
    pub mean: f64,
    /// Tolerance, % of `mean`.
    pub tol_pct: f64,
    /// Per-run sample standard deviation behind `mean`.
    pub sd: f64,
    /// Number of runs behind `mean`.
    pub runs: usize,
}

/// One-sided significance level of the check: a figure worse than its
/// tolerance is a regression only when a difference that large (in the
/// worse direction) has less than this chance under the two samples'
/// spread. 1%: with four noisy hackbench figures, an unchanged kernel
/// fails at most about one bench in 25 on them (1 - 0.99^4), against one in
/// five (1 - 0.95^4) at 5%.
pub const ALPHA: f64 = 0.01;

/// Welch's t of a sample with mean `m1`, per-run stddev `s1` and `n1` runs
/// against one with `m0`, `s0`, `n0` (Welch-Satterthwaite degrees of
/// freedom): the one-sided p-value P(T >= t) for t = (m1 - m0) / se, so a
/// small value means `m1` is significantly above `m0`. With no spread on
/// either side, or fewer than 2 runs on a side (no spread to judge by): 0
/// when `m1 > m0`, else 1, so the tolerance alone decides.
pub fn p_above(m1: f64, s1: f64, n1: usize, m0: f64, s0: f64, n0: usize) -> f64 {
    let (v1, v0) = (s1 * s1 / n1.max(1) as f64, s0 * s0 / n0.max(1) as f64);
    let se2 = v1 + v0;
    if n1 < 2 || n0 < 2 || se2 == 0.0 {
        return if m1 > m0 { 0.0 } else { 1.0 };
    }
    let t = (m1 - m0) / se2.sqrt();
    let df = se2 * se2 / (v1 * v1 / (n1 - 1) as f64 + v0 * v0 / (n0 - 1) as f64);
    let two = stats::t_two_sided_p(t, df);
    if t > 0.0 {
        two / 2.0
    } else {
        1.0 - two / 2.0
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Standard error of the mean, % of the mean (0 for fewer than 2 samples).
fn se_pct(v: &[f64]) -> f64 {
    let n = v.len();
    let m = mean(v);
    if n < 2 || m == 0.0 {
        return 0.0;
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
    (var / n as f64).sqrt() / m.abs() * 100.0
}

fn values<'a>(s: &'a Samples, key: &Key, metric: &str) -> Option<&'a [f64]> {
    s.get(key)?
        .iter()
        .find(|(m, _)| m == metric)
        .map(|(_, v)| v.as_slice())
}

/// The baseline figures of `base`, each with its tolerance from `noise`.
/// Fails when a noise run lacks a figure of `base` (not the same bench).
/// `floors`: (metric name, or `None` for every metric, %).
pub fn record(
    base: &Samples,
    noise: &[Samples],
    floors: &[(Option<String>, f64)],
) -> Result<Vec<Figure>, String> {
    let mut out = Vec::new();
    for (key, metrics) in base {
        for (metric, v) in metrics {
            let m = mean(v);
            let mut tol = 2.0 * se_pct(v);
            for (m, f) in floors {
                if m.as_ref().is_none_or(|m| m == metric) {
                    tol = tol.max(*f);
                }
            }
            for (i, n) in noise.iter().enumerate() {
                let nv = values(n, key, metric).ok_or_else(|| {
                    format!(
                        "noise run {} has no '{metric}' for '{}' [{}]",
                        i + 1,
                        key.2,
                        key.3
                    )
                })?;
                if m != 0.0 {
                    tol = tol.max((mean(nv) - m).abs() / m.abs() * 100.0);
                }
            }
            out.push(Figure {
                workload: key.2.clone(),
                config: key.3.clone(),
                metric: metric.clone(),
                mean: m,
                tol_pct: tol,
                sd: stats::stddev(v),
                runs: v.len(),
            });
        }
    }
    Ok(out)
}

/// The baseline file: a header comment, then one tab-separated line per
/// figure (workload, config, metric, mean, tolerance %, per-run stddev,
/// runs).
pub fn write(figs: &[Figure], header: &str) -> String {
    let mut s = String::new();
    for l in header.lines() {
        let _ = writeln!(s, "# {l}");
    }
    let _ = writeln!(
        s,
        "# workload\tconfig\tmetric\tmean\ttolerance_pct\tstddev\truns"
    );
    for f in figs {
        let _ = writeln!(
            s,
            "{}\t{}\t{}\t{:.6}\t{:.3}\t{:.6}\t{}",
            f.workload, f.config, f.metric, f.mean, f.tol_pct, f.sd, f.runs
        );
    }
    s
}

/// Reads a baseline file written by [`write()`].
pub fn read(text: &str) -> Result<Vec<Figure>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || format!("baseline line {}: '{line}'", i + 1);
        if f.len() == 5 {
            return Err(format!(
                "baseline line {}: no per-run stddev and run count (recorded before the \
                 check took the spread into account): re-record it with make bench-baseline",
                i + 1
            ));
        }
        if f.len() != 7 {
            return Err(bad());
        }
        out.push(Figure {
            workload: f[0].to_string(),
            config: f[1].to_string(),
            metric: f[2].to_string(),
            mean: f[3].parse().map_err(|_| bad())?,
            tol_pct: f[4].parse().map_err(|_| bad())?,
            sd: f[5].parse().map_err(|_| bad())?,
            runs: f[6].parse().map_err(|_| bad())?,
        });
    }
    Ok(out)
}

/// Checks `new` against the baseline: the report, and how many figures
/// regressed (a figure missing from `new` counts as one).
///
/// The rule: a figure is a `REGRESSION` when its new mean is worse than the
/// baseline's by more than the tolerance **and** [`p_above`] of the new runs
/// against the baseline's (mean, per-run stddev, runs), taken in the worse
/// direction, is below [`ALPHA`]. Worse beyond the tolerance but not
/// significant: `noise`, which does not fail.
pub fn check(base: &[Figure], new: &Samples) -> (String, usize) {
    let mut s = String::new();
    let mut bad = 0;
    let _ = writeln!(
        s,
        "{:<40} {:<18} {:<14} {:>12} {:>12} {:>8} {:>7} {:>7}  verdict",
        "workload", "config", "metric", "baseline", "now", "change", "tol", "p"
    );
    for f in base {
        let key = new
            .keys()
            .find(|k| k.2 == f.workload && k.3 == f.config)
            .cloned();
        let Some(v) = key.as_ref().and_then(|k| values(new, k, &f.metric)) else {
            bad += 1;
            let _ = writeln!(
                s,
                "REGRESSION: {} [{}] {}: not measured",
                f.workload, f.config, f.metric
            );
            continue;
        };
        let now = mean(v);
        let pct = if f.mean == 0.0 {
            0.0
        } else {
            (now - f.mean) / f.mean.abs() * 100.0
        };
        let sd = stats::stddev(v);
        let (worse, p) = match metric_kind(&f.metric) {
            Kind::Higher => (-pct, p_above(f.mean, f.sd, f.runs, now, sd, v.len())),
            _ => (pct, p_above(now, sd, v.len(), f.mean, f.sd, f.runs)),
        };
        let verdict = if worse > f.tol_pct && p < ALPHA {
            bad += 1;
            "REGRESSION"
        } else if worse > f.tol_pct {
            "noise"
        } else if worse < -f.tol_pct {
            "improved"
        } else {
            "ok"
        };
        let _ = writeln!(
            s,
            "{:<40} {:<18} {:<14} {:>12.4} {:>12.4} {:>7.2}% {:>6.2}% {:>7.4}  {verdict}",
            f.workload, f.config, f.metric, f.mean, now, pct, f.tol_pct, p
        );
        if verdict == "REGRESSION" {
            let _ = writeln!(
                s,
                "REGRESSION: {} [{}] {}: {:.4} -> {:.4} ({:+.2}%, tolerance {:.2}%, \
                 p {:.4} < {ALPHA}: n={} sd={:.4} against n={} sd={:.4})",
                f.workload,
                f.config,
                f.metric,
                f.mean,
                now,
                pct,
                f.tol_pct,
                p,
                v.len(),
                sd,
                f.runs,
                f.sd
            );
        }
    }
    (s, bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csvcmp::parse;

    const HEAD: &str = "arch,cpus,seed,workload,config,label,run,warmup,kind,name,value\n";

    fn csv(rows: &[(&str, &str, f64)]) -> Samples {
        let mut t = String::from(HEAD);
        for (i, (w, m, v)) in rows.iter().enumerate() {
            t.push_str(&format!(
                "x86_64,2,1,\"{w}\",0,\"preempt=full\",{},false,metric,{m},{v}\n",
                i + 1
            ));
        }
        parse(&t).unwrap()
    }

    #[test]
    fn tolerance_is_the_largest_noise_shift_or_twice_the_standard_error() {
        let base = csv(&[("cyc", "lat_avg_us", 10.0), ("cyc", "lat_avg_us", 10.0)]);
        let n1 = csv(&[("cyc", "lat_avg_us", 10.2), ("cyc", "lat_avg_us", 10.2)]);
        let n2 = csv(&[("cyc", "lat_avg_us", 9.9), ("cyc", "lat_avg_us", 9.9)]);
        let f = record(&base, &[n1.clone(), n2.clone()], &[]).unwrap();
        assert_eq!(f.len(), 1);
        assert!((f[0].tol_pct - 2.0).abs() < 1e-9, "{}", f[0].tol_pct);
        // No noise runs: the standard error (of 9 and 11: 1 = 10%) doubled.
        let spread = csv(&[("cyc", "lat_avg_us", 9.0), ("cyc", "lat_avg_us", 11.0)]);
        let f = record(&spread, &[], &[]).unwrap();
        assert!((f[0].tol_pct - 20.0).abs() < 1e-9, "{}", f[0].tol_pct);
        // A floor wins over smaller shifts; a metric's own floor only there.
        let f = record(&base, &[n1.clone(), n2.clone()], &[(None, 5.0)]).unwrap();
        assert!((f[0].tol_pct - 5.0).abs() < 1e-9, "{}", f[0].tol_pct);
        let other = [(Some("lat_max_us".to_string()), 50.0)];
        let f = record(&base, &[n1.clone(), n2.clone()], &other).unwrap();
        assert!((f[0].tol_pct - 2.0).abs() < 1e-9, "{}", f[0].tol_pct);
        let mine = [(Some("lat_avg_us".to_string()), 50.0)];
        let f = record(&base, &[n1, n2], &mine).unwrap();
        assert!((f[0].tol_pct - 50.0).abs() < 1e-9, "{}", f[0].tol_pct);
    }

    #[test]
    fn a_noise_run_without_a_figure_is_refused() {
        let base = csv(&[("cyc", "lat_avg_us", 10.0)]);
        let other = csv(&[("perfpipe", "usecs_per_op", 20.0)]);
        assert!(record(&base, &[other], &[]).is_err());
    }

    #[test]
    fn worse_beyond_tolerance_is_a_regression_in_the_metric_direction() {
        let base = csv(&[("cyc", "lat_avg_us", 10.0), ("pp", "ops_per_s", 1000.0)]);
        let figs = read(&write(
            &record(
                &base,
                &[csv(&[
                    ("cyc", "lat_avg_us", 10.1),
                    ("pp", "ops_per_s", 1010.0),
                ])],
                &[],
            )
            .unwrap(),
            "test",
        ))
        .unwrap();
        assert_eq!(figs.len(), 2);
        // Within 1%: fine; a latency 5% up and a rate 5% down: regressions.
        let (_, n) = check(
            &figs,
            &csv(&[("cyc", "lat_avg_us", 10.05), ("pp", "ops_per_s", 995.0)]),
        );
        assert_eq!(n, 0);
        let (r, n) = check(
            &figs,
            &csv(&[("cyc", "lat_avg_us", 10.5), ("pp", "ops_per_s", 950.0)]),
        );
        assert_eq!(n, 2, "{r}");
        assert_eq!(r.matches("REGRESSION:").count(), 2, "{r}");
        // Better beyond the tolerance: marked, not failed.
        let (r, n) = check(
            &figs,
            &csv(&[("cyc", "lat_avg_us", 9.0), ("pp", "ops_per_s", 1100.0)]),
        );
        assert_eq!(n, 0);
        assert_eq!(r.matches("improved").count(), 2, "{r}");
        // A figure that was not measured counts as a regression.
        let (_, n) = check(&figs, &csv(&[("cyc", "lat_avg_us", 10.0)]));
        assert_eq!(n, 1);
    }

    fn runs(w: &str, m: &str, v: &[f64]) -> Samples {
        let rows: Vec<_> = v.iter().map(|&x| (w, m, x)).collect();
        csv(&rows)
    }

    #[test]
    fn p_above_is_half_of_welchs_two_sided_p_in_the_worse_direction() {
        let a = [5.1, 5.9, 6.3, 5.5, 6.8, 6.0];
        let b = [5.0, 5.2, 4.8, 5.6, 5.1, 4.9, 5.3];
        let w = stats::welch(&a, &b).unwrap();
        let (sa, sb) = (stats::stddev(&a), stats::stddev(&b));
        let (ma, mb) = (stats::amean(&a), stats::amean(&b));
        let up = p_above(ma, sa, a.len(), mb, sb, b.len());
        assert!(w.t > 0.0 && (up - w.p / 2.0).abs() < 1e-12, "{up} {w:?}");
        let down = p_above(mb, sb, b.len(), ma, sa, a.len());
        assert!((down - (1.0 - w.p / 2.0)).abs() < 1e-12, "{down}");
        // No spread, or a single run: the sign alone.
        assert_eq!(p_above(2.0, 0.0, 5, 1.0, 0.0, 5), 0.0);
        assert_eq!(p_above(1.0, 0.0, 5, 1.0, 0.0, 5), 1.0);
        assert_eq!(p_above(2.0, 0.5, 1, 1.0, 0.5, 30), 0.0);
    }

    /// hackbench -g 1 -l 20 as bench-kernel measured it: runs spread by
    /// about 20% (per-run stddev / mean), a tolerance of 14%.
    #[test]
    fn a_noisy_mean_beyond_the_tolerance_is_not_flagged_a_clear_regression_is() {
        let hb = "hackbench -g 1 -l 20";
        let base: Vec<f64> = [0.030, 0.035, 0.040, 0.045, 0.050].repeat(6);
        let floor = [(None, 14.0)];
        let figs = read(&write(
            &record(&runs(hb, "time_s", &base), &[], &floor).unwrap(),
            "test",
        ))
        .unwrap();
        assert_eq!((figs[0].runs, figs[0].tol_pct), (30, 14.0));
        assert!((figs[0].sd - stats::stddev(&base)).abs() < 1e-6);
        // Six runs 20% above the baseline's mean, spread as much as the
        // baseline's: beyond the tolerance, but p is about 0.03.
        let noisy = [0.036, 0.042, 0.048, 0.054, 0.060, 0.048];
        let (r, n) = check(&figs, &runs(hb, "time_s", &noisy));
        assert_eq!(n, 0, "{r}");
        assert!(r.contains("noise") && !r.contains("REGRESSION"), "{r}");
        // Six runs 50% above with a small spread: flagged.
        let slow = [0.058, 0.060, 0.062, 0.059, 0.061, 0.060];
        let (r, n) = check(&figs, &runs(hb, "time_s", &slow));
        assert_eq!(n, 1, "{r}");
        assert!(r.contains("REGRESSION: hackbench"), "{r}");
        // Significant but within the tolerance (+5%, 30 runs): not flagged.
        let near: Vec<f64> = [0.0415, 0.042, 0.0425].repeat(10);
        let (r, n) = check(&figs, &runs(hb, "time_s", &near));
        assert_eq!(n, 0, "{r}");
        assert!(r.contains("  ok"), "{r}");
    }

    #[test]
    fn a_rate_is_tested_for_a_drop() {
        let pp = "perfpipe";
        let base: Vec<f64> = [900.0, 1000.0, 1100.0].repeat(4);
        let floor = [(None, 5.0)];
        let figs = record(&runs(pp, "ops_per_s", &base), &[], &floor).unwrap();
        // 20% fewer operations a second, consistently: a regression.
        let (r, n) = check(&figs, &runs(pp, "ops_per_s", &[790.0, 800.0, 810.0]));
        assert_eq!(n, 1, "{r}");
        // 20% more: improved, whatever the test says about a drop.
        let (r, n) = check(&figs, &runs(pp, "ops_per_s", &[1190.0, 1200.0, 1210.0]));
        assert_eq!(n, 0, "{r}");
        assert!(r.contains("improved"), "{r}");
        // 8% fewer with a wide spread over three runs: noise.
        let (r, n) = check(&figs, &runs(pp, "ops_per_s", &[780.0, 920.0, 1060.0]));
        assert_eq!(n, 0, "{r}");
        assert!(r.contains("noise"), "{r}");
    }

    #[test]
    fn a_baseline_without_the_spread_is_refused_with_the_way_out() {
        let old = "# old\ncyc\tpreempt=full\tlat_avg_us\t7.1\t1.5\n";
        let e = read(old).unwrap_err();
        assert!(e.contains("make bench-baseline"), "{e}");
        assert!(read("cyc\tpreempt=full\tlat_avg_us\t7.1\t1.5\t0.2\n").is_err());
        assert!(read("cyc\tpreempt=full\tlat_avg_us\t7.1\t1.5\tx\t6\n").is_err());
    }
}
