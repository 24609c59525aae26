//! `make bench-kernel`'s recorded baseline (`bench/kernel-baseline.txt`)
//! and the regression check against it.
//!
//! - `abtool --baseline-record BASE.csv OUT.txt [--floor [METRIC=]PCT]... NOISE.csv...`
//!   writes, for
//!   every workload, config and metric of BASE (a `samples.csv` of
//!   `scripts/tools/kbench.sh`), its mean over the kept runs and a tolerance
//!   in percent: the largest change of that mean seen in the NOISE runs (the
//!   same scheduler code built with unrelated layout changes: under QEMU
//!   `-icount` a run is deterministic, and what moves a figure between such
//!   builds is where code and data land and the phase of the tick against
//!   the workload), and at least twice the standard error of BASE's own mean
//!   and each `--floor` (for every metric, or for METRIC: the shift measured
//!   between commits that do not touch the measured paths, which the padded
//!   builds may not reproduce).
//! - `abtool --baseline-check BASELINE.txt NEW.csv` prints one line per
//!   figure and `REGRESSION` for each that got worse (higher for a time,
//!   lower for a rate) by more than its tolerance; it exits with status 1
//!   when there is one. Figures better by more than the tolerance are marked
//!   `improved` (re-record the baseline to keep the gain guarded).

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
            });
        }
    }
    Ok(out)
}

/// The baseline file: a header comment, then one tab-separated line per
/// figure (workload, config, metric, mean, tolerance %).
pub fn write(figs: &[Figure], header: &str) -> String {
    let mut s = String::new();
    for l in header.lines() {
        let _ = writeln!(s, "# {l}");
    }
    let _ = writeln!(s, "# workload\tconfig\tmetric\tmean\ttolerance_pct");
    for f in figs {
        let _ = writeln!(
            s,
            "{}\t{}\t{}\t{:.6}\t{:.3}",
            f.workload, f.config, f.metric, f.mean, f.tol_pct
        );
    }
    s
}

/// Reads a baseline file written by [`write`].
pub fn read(text: &str) -> Result<Vec<Figure>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || format!("baseline line {}: '{line}'", i + 1);
        if f.len() != 5 {
            return Err(bad());
        }
        out.push(Figure {
            workload: f[0].to_string(),
            config: f[1].to_string(),
            metric: f[2].to_string(),
            mean: f[3].parse().map_err(|_| bad())?,
            tol_pct: f[4].parse().map_err(|_| bad())?,
        });
    }
    Ok(out)
}

/// Checks `new` against the baseline: the report, and how many figures
/// regressed (a figure missing from `new` counts as one).
pub fn check(base: &[Figure], new: &Samples) -> (String, usize) {
    let mut s = String::new();
    let mut bad = 0;
    let _ = writeln!(
        s,
        "{:<40} {:<18} {:<14} {:>12} {:>12} {:>8} {:>7}  verdict",
        "workload", "config", "metric", "baseline", "now", "change", "tol"
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
        let worse = match metric_kind(&f.metric) {
            Kind::Higher => -pct,
            _ => pct,
        };
        let verdict = if worse > f.tol_pct {
            bad += 1;
            "REGRESSION"
        } else if worse < -f.tol_pct {
            "improved"
        } else {
            "ok"
        };
        let _ = writeln!(
            s,
            "{:<40} {:<18} {:<14} {:>12.4} {:>12.4} {:>7.2}% {:>6.2}%  {verdict}",
            f.workload, f.config, f.metric, f.mean, now, pct, f.tol_pct
        );
        if verdict == "REGRESSION" {
            let _ = writeln!(
                s,
                "REGRESSION: {} [{}] {}: {:.4} -> {:.4} ({:+.2}%, tolerance {:.2}%)",
                f.workload, f.config, f.metric, f.mean, now, pct, f.tol_pct
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
}
