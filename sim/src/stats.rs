//! Summary statistics as mmtests prints them (Amean, Hmean, Stddev, CoV) and
//! Welch's unequal-variance t-test: the `shell` crate's `stats` module, the
//! same code the kernel's `compare` command uses (no_std, through `libm`:
//! Student's t CDF from the regularized incomplete beta function), so the
//! simulator's study and the kernel's tables mark significance identically.
//! The nearest-rank percentile and the confidence interval of a difference
//! of means ([`welch_ci`]) are the simulator's own.

pub use shell::stats::{amean, cov, hmean, inc_beta, stddev, t_two_sided_p, welch_p};

/// Percentile `p` (0..=100) of sorted samples, nearest rank.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The two-sided Student's t quantile: the `t` with `P(|T| > t) = alpha`
/// for `df` degrees of freedom (bisection on [`t_two_sided_p`]).
pub fn t_quantile(alpha: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while t_two_sided_p(hi, df) > alpha {
        hi *= 2.0;
        if hi > 1e9 {
            return f64::INFINITY;
        }
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if t_two_sided_p(mid, df) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The `1 - alpha` confidence interval of `mean(b) - mean(a)` with Welch's
/// unequal variances (the interval the t-test of [`welch_p`] inverts:
/// it excludes 0 exactly when `welch_p(a, b) < alpha`). `None` with fewer
/// than two samples on either side.
pub fn welch_ci(a: &[f64], b: &[f64], alpha: f64) -> Option<(f64, f64)> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let d = amean(b) - amean(a);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (stddev(a).powi(2) / na, stddev(b).powi(2) / nb);
    let se2 = va + vb;
    if se2 == 0.0 {
        return Some((d, d));
    }
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let h = t_quantile(alpha, df) * se2.sqrt();
    Some((d - h, d + h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_cdf_matches_tables() {
        // t = 2.228, df = 10 is the two-sided 5% point; t = 2.776, df = 4 too.
        assert!((t_two_sided_p(2.228, 10.0) - 0.05).abs() < 1e-3);
        assert!((t_two_sided_p(2.776, 4.0) - 0.05).abs() < 1e-3);
        assert!((t_two_sided_p(0.0, 5.0) - 1.0).abs() < 1e-9);
        assert!((t_two_sided_p(1.0, 1.0) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn welch_interval() {
        assert!((t_quantile(0.05, 10.0) - 2.228).abs() < 1e-3);
        assert!((t_quantile(0.05, 4.0) - 2.776).abs() < 1e-3);
        assert!((t_quantile(0.05, 1e6) - 1.960).abs() < 1e-3);
        // Equal variances and sizes: d ± t(0.025, df) · sqrt(2 s² / n);
        // s² = 1 for both (1, 2, 3 and 2, 3, 4), n = 3, df = 4.
        let (lo, hi) = welch_ci(&[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0], 0.05).unwrap();
        let h = 2.776_445 * (2.0 / 3.0f64).sqrt();
        assert!((lo - (1.0 - h)).abs() < 1e-4 && (hi - (1.0 + h)).abs() < 1e-4);
        // The interval excludes 0 exactly when the test is significant.
        let mut rng = crate::rng::Rng::new(3);
        for _ in 0..200 {
            let a: Vec<f64> = (0..5).map(|_| rng.f64()).collect();
            let shift = rng.f64();
            let b: Vec<f64> = (0..7).map(|_| rng.f64() * 1.5 + shift).collect();
            let (lo, hi) = welch_ci(&a, &b, 0.05).unwrap();
            let p = welch_p(&a, &b);
            if (p - 0.05).abs() > 1e-6 {
                assert_eq!(lo > 0.0 || hi < 0.0, p < 0.05, "p {p} [{lo}, {hi}]");
            }
        }
        assert!(welch_ci(&[1.0], &[1.0, 2.0], 0.05).is_none());
    }

    #[test]
    fn means() {
        assert_eq!(amean(&[1.0, 2.0, 3.0]), 2.0);
        assert!((hmean(&[1.0, 4.0]) - 1.6).abs() < 1e-12);
        assert!((stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) - 2.138_089_935).abs() < 1e-6);
        assert!(welch_p(&[1.0, 1.1, 0.9, 1.0], &[2.0, 2.1, 1.9, 2.0]) < 0.001);
        assert!(welch_p(&[1.0, 2.0, 3.0], &[1.1, 2.1, 2.9]) > 0.5);
        assert_eq!(percentile(&[1, 2, 3, 4], 50.0), 2);
        assert_eq!(percentile(&[1, 2, 3, 4], 99.0), 4);
    }
}
