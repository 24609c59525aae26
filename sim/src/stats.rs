//! Summary statistics as mmtests prints them (Amean, Hmean, Stddev, CoV) and
//! Welch's unequal-variance t-test: the `shell` crate's `stats` module, the
//! same code the kernel's `compare` command uses (no_std, through `libm`:
//! Student's t CDF from the regularized incomplete beta function), so the
//! simulator's study and the kernel's tables mark significance identically.
//! Only the nearest-rank percentile is the simulator's own.

pub use shell::stats::{amean, cov, hmean, inc_beta, stddev, t_two_sided_p, welch_p};

/// Percentile `p` (0..=100) of sorted samples, nearest rank.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
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
