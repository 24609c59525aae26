//! Summary statistics as mmtests prints them (Amean, Hmean, Stddev, CoV) and
//! Welch's unequal-variance t-test, with the Student t CDF computed here
//! (regularized incomplete beta function by Lentz's continued fraction,
//! Numerical Recipes §6.4), so no statistics crate is needed.

/// Arithmetic mean (0 for no samples).
pub fn amean(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    x.iter().sum::<f64>() / x.len() as f64
}

/// Harmonic mean (for rates; 0 if any sample is 0).
pub fn hmean(x: &[f64]) -> f64 {
    if x.is_empty() || x.iter().any(|&v| v <= 0.0) {
        return 0.0;
    }
    x.len() as f64 / x.iter().map(|v| 1.0 / v).sum::<f64>()
}

/// Sample standard deviation (n - 1).
pub fn stddev(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let m = amean(x);
    (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() - 1) as f64).sqrt()
}

/// Coefficient of variation in % (stddev / mean).
pub fn cov(x: &[f64]) -> f64 {
    let m = amean(x);
    if m == 0.0 {
        0.0
    } else {
        100.0 * stddev(x) / m
    }
}

/// Percentile `p` (0..=100) of sorted samples, nearest rank.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos approximation (g = 7, n = 9).
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Keeps a continued-fraction term away from zero (Lentz's method).
fn nz(x: f64) -> f64 {
    if x.abs() < 1e-300 {
        1e-300
    } else {
        x
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / nz(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        // Even then odd step of the continued fraction.
        for aa in [
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 / nz(1.0 + aa * d);
            c = nz(1.0 + aa / c);
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

/// Regularized incomplete beta I_x(a, b).
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let bt = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        bt * beta_cf(a, b, x) / a
    } else {
        1.0 - bt * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Two-sided p-value of Student's t with `df` degrees of freedom.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() || df <= 0.0 {
        return if t.is_infinite() { 0.0 } else { 1.0 };
    }
    inc_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// Welch's t-test: the two-sided p-value that the means of `a` and `b`
/// differ (1.0 when it cannot be computed: fewer than 2 samples).
pub fn welch_p(a: &[f64], b: &[f64]) -> f64 {
    if a.len() < 2 || b.len() < 2 {
        return 1.0;
    }
    let (ma, mb) = (amean(a), amean(b));
    let (va, vb) = (stddev(a).powi(2), stddev(b).powi(2));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let se2 = va / na + vb / nb;
    if se2 == 0.0 {
        return if ma == mb { 1.0 } else { 0.0 };
    }
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / ((va / na).powi(2) / (na - 1.0) + (vb / nb).powi(2) / (nb - 1.0));
    t_two_sided_p(t, df)
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
