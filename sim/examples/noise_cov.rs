//! The calibration of machine noise's one free scale
//! (`MachineNoise::boot_speed_spread_ppm`, `docs/design/simulator.md`,
//! "Machine noise"): the baseline configuration's (`nb-off`) CoV of
//! hackbench's time over seeds at every point of the default study's
//! hackbench sweeps, with machine noise and without.
//!
//! ```text
//! cargo run -q -p sim --release --example noise_cov -- [SEEDS]
//! ```
//!
//! One line per item: the median, smallest and largest CoV over its
//! points, noise on and off. Only the baseline runs, so the CoV it calibrates
//! against moves no effect.

use sim::study::{run_study, Study};

fn cov(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt() / mean
}

fn main() {
    let seeds: u64 = match std::env::args().nth(1) {
        None => 10,
        Some(a) => a.parse().ok().filter(|&n| n >= 2).unwrap_or_else(|| {
            sim::errln!("noise_cov: SEEDS: expected a number >= 2, got '{a}'");
            std::process::exit(2);
        }),
    };
    let mut study = Study::default_study();
    study.items.retain(|it| it.title.starts_with("hackbench"));
    study.configs.truncate(1);
    study.seeds = seeds;
    for off in [&[][..], &["--no-machine-noise"][..]] {
        let mut s = study.clone();
        s.mechanisms_off = off.to_vec();
        let r = run_study(&s, 1, false).unwrap_or_else(|e| {
            sim::errln!("noise_cov: {e}");
            std::process::exit(1);
        });
        for (ii, it) in s.items.iter().enumerate() {
            let mut c: Vec<f64> = (0..it.values.len())
                .map(|vi| cov(&r.values(ii, vi, 0, "time_s")))
                .collect();
            c.sort_by(f64::total_cmp);
            sim::outln!(
                "{:<8} {:<26} {:<15} {} seeds: CoV median {:.2}%, min {:.2}%, max {:.2}% ({} points)",
                if off.is_empty() { "noise" } else { "no-noise" },
                it.title,
                it.machine,
                seeds,
                100.0 * c[c.len() / 2],
                100.0 * c[0],
                100.0 * c[c.len() - 1],
                c.len()
            );
        }
    }
}
