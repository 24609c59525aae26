//! The statistics against published values: Student t table points, closed
//! forms of the t distribution, the worked examples of Welch's test in the
//! Wikipedia article "Welch's t-test", and the means on small samples whose
//! values are known by hand.

use stats::{
    amean, cov, hmean, inc_beta, pct_better, percentile, stddev, t_two_sided_p, welch, welch_p,
};

/// Critical values of Student's t, two-sided, as printed in the standard
/// tables (NIST/SEMATECH e-Handbook of Statistical Methods, section
/// 1.3.6.7.2; any statistics textbook's appendix): (t, degrees of freedom,
/// two-sided p).
const T_TABLE: &[(f64, f64, f64)] = &[
    (12.706, 1.0, 0.05),
    (63.657, 1.0, 0.01),
    (2.776, 4.0, 0.05),
    (1.812, 10.0, 0.10),
    (2.228, 10.0, 0.05),
    (3.169, 10.0, 0.01),
    (2.086, 20.0, 0.05),
    (2.845, 20.0, 0.01),
    (1.645, f64::INFINITY, 0.10),
    (1.960, f64::INFINITY, 0.05),
    (2.576, f64::INFINITY, 0.01),
];

/// The tables round t to 3 decimals (error <= 0.0005); the two-sided p moves
/// by 2 f(t) dt for a density f <= 1/sqrt(2 pi) < 0.4, so at most 0.0004.
const TABLE_TOL: f64 = 4e-4;

#[test]
fn t_cdf_matches_the_t_table() {
    for &(t, df, p) in T_TABLE {
        let got = t_two_sided_p(t, df);
        assert!(
            (got - p).abs() <= TABLE_TOL,
            "t = {t}, df = {df}: p = {got}, table {p}"
        );
        // Symmetric in t.
        assert_eq!(t_two_sided_p(-t, df), got);
    }
}

#[test]
fn t_cdf_matches_closed_forms() {
    use std::f64::consts::PI;
    for t in [0.0, 0.1, 0.5, 1.0, 2.0, 3.7, 10.0, 1e3] {
        // df = 1 is the Cauchy distribution: P(|T| >= t) = 1 - 2 atan(t) / pi.
        let cauchy = 1.0 - 2.0 * f64::atan(t) / PI;
        assert!(
            (t_two_sided_p(t, 1.0) - cauchy).abs() < 1e-10,
            "df 1, t {t}"
        );
        // df = 2: P(|T| >= t) = 1 - t / sqrt(2 + t^2).
        let two = 1.0 - t / (2.0 + t * t).sqrt();
        assert!((t_two_sided_p(t, 2.0) - two).abs() < 1e-10, "df 2, t {t}");
    }
    // I_x(1, 1) = x; I_x(a, b) = 1 - I_{1-x}(b, a).
    assert!((inc_beta(1.0, 1.0, 0.3) - 0.3).abs() < 1e-12);
    assert!((inc_beta(2.5, 4.0, 0.2) + inc_beta(4.0, 2.5, 0.8) - 1.0).abs() < 1e-12);
}

#[test]
fn t_cdf_edges() {
    assert_eq!(t_two_sided_p(0.0, 5.0), 1.0);
    assert_eq!(t_two_sided_p(f64::INFINITY, 5.0), 0.0);
    assert_eq!(t_two_sided_p(f64::NAN, 5.0), 1.0);
    assert_eq!(t_two_sided_p(2.0, 0.0), 1.0);
    assert_eq!(t_two_sided_p(2.0, f64::NAN), 1.0);
    // Very many degrees of freedom approach the normal distribution.
    let (big, inf) = (t_two_sided_p(1.96, 1e7), t_two_sided_p(1.96, f64::INFINITY));
    assert!((big - inf).abs() < 1e-6, "{big} vs {inf}");
}

/// Wikipedia, "Welch's t-test", section Examples (examples 1 and 2): the data
/// and the published t, degrees of freedom and p-value, rounded there to
/// 2, 1 and 3 decimals (so the tolerances are half a unit of the last digit).
#[test]
fn welch_matches_the_published_examples() {
    struct Example {
        a: &'static [f64],
        b: &'static [f64],
        t: f64,
        df: f64,
        p: f64,
    }
    let examples = [
        Example {
            a: &[
                27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
                21.4,
            ],
            b: &[
                27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
                24.4,
            ],
            t: -2.46,
            df: 25.0,
            p: 0.021,
        },
        Example {
            a: &[17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8],
            b: &[
                21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5,
                23.6, 21.5, 22.5, 23.5, 21.5, 21.8,
            ],
            t: -1.57,
            df: 9.9,
            p: 0.149,
        },
    ];
    for (i, e) in examples.iter().enumerate() {
        let w = welch(e.a, e.b).unwrap();
        assert!((w.t - e.t).abs() <= 0.005, "example {}: t = {}", i + 1, w.t);
        assert!(
            (w.df - e.df).abs() <= 0.05,
            "example {}: df = {}",
            i + 1,
            w.df
        );
        assert!(
            (w.p - e.p).abs() <= 0.0005,
            "example {}: p = {}",
            i + 1,
            w.p
        );
        assert_eq!(welch_p(e.a, e.b), w.p);
        // Swapping the sides flips t and keeps df and p.
        let r = welch(e.b, e.a).unwrap();
        assert_eq!((r.t, r.df, r.p), (-w.t, w.df, w.p));
    }
}

#[test]
fn welch_small_samples_and_degenerate_cases() {
    // R: t.test(c(10,12,11,13), c(11,13,12,15)): t = -1.1677,
    // df = 5.5846, p-value = 0.2903.
    let w = welch(&[10.0, 12.0, 11.0, 13.0], &[11.0, 13.0, 12.0, 15.0]).unwrap();
    assert!((w.t + 1.1677).abs() < 5e-5, "{w:?}");
    assert!((w.df - 5.5846).abs() < 5e-5, "{w:?}");
    assert!((w.p - 0.2903).abs() < 5e-5, "{w:?}");
    // Far apart with little spread: p far below any level.
    assert!(welch_p(&[1.0, 1.1, 0.9, 1.0], &[2.0, 2.1, 1.9, 2.0]) < 0.001);
    // Fewer than 2 samples on a side: no test.
    assert_eq!(welch(&[1.0], &[2.0, 3.0]), None);
    assert_eq!(welch_p(&[1.0], &[2.0, 3.0]), 1.0);
    // No variance: different means are certainly different, equal ones not.
    assert_eq!(welch(&[1.0, 1.0], &[2.0, 2.0]), None);
    assert_eq!(welch_p(&[1.0, 1.0], &[2.0, 2.0]), 0.0);
    assert_eq!(welch_p(&[1.0, 1.0], &[1.0, 1.0]), 1.0);
}

#[test]
fn means_spread_and_percentiles() {
    assert_eq!(amean(&[1.0, 2.0, 3.0]), 2.0);
    assert_eq!(amean(&[]), 0.0);
    // 2 / (1/1 + 1/4) = 1.6.
    assert!((hmean(&[1.0, 4.0]) - 1.6).abs() < 1e-12);
    assert_eq!(hmean(&[1.0, 0.0]), 0.0);
    // Sum of squared deviations 32 over n - 1 = 7: sqrt(32 / 7).
    assert!(
        (stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) - (32.0f64 / 7.0).sqrt()).abs() < 1e-12
    );
    assert_eq!(stddev(&[5.0]), 0.0);
    // Stddev sqrt(2) over mean 10.
    assert!((cov(&[9.0, 11.0]) - 100.0 * 2f64.sqrt() / 10.0).abs() < 1e-12);
    assert_eq!(cov(&[0.0, 0.0]), 0.0);
    assert_eq!(pct_better(2.0, 1.0, false), 50.0);
    assert_eq!(pct_better(2.0, 1.0, true), -50.0);
    assert_eq!(pct_better(0.0, 1.0, true), 0.0);
    assert_eq!(percentile(&[1, 2, 3, 4], 50.0), 2);
    assert_eq!(percentile(&[1, 2, 3, 4], 99.0), 4);
    assert_eq!(percentile(&[1, 2, 3, 4], 0.0), 1);
    assert_eq!(percentile(&[], 50.0), 0);
}

/// A fixed pseudo-random walk in [0, 1) (xorshift64 from `seed`).
fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The t quantile against the same table points, and the Welch interval:
/// `d ± t(0.025, df) · sqrt(s_a²/n_a + s_b²/n_b)`, which excludes 0 exactly
/// when the test is significant.
#[test]
fn welch_interval() {
    assert!((stats::t_quantile(0.05, 10.0) - 2.228).abs() < 1e-3);
    assert!((stats::t_quantile(0.05, 4.0) - 2.776).abs() < 1e-3);
    assert!((stats::t_quantile(0.05, 1e6) - 1.960).abs() < 1e-3);
    // Equal variances and sizes: s² = 1 for both (1, 2, 3 and 2, 3, 4),
    // n = 3, df = 4.
    let (lo, hi) = stats::welch_ci(&[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0], 0.05).unwrap();
    let h = 2.776_445 * (2.0 / 3.0f64).sqrt();
    assert!((lo - (1.0 - h)).abs() < 1e-4 && (hi - (1.0 + h)).abs() < 1e-4);
    // A fixed pseudo-random walk of sample pairs (xorshift).
    let mut f = uniform(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200 {
        let a: Vec<f64> = (0..5).map(|_| f()).collect();
        let shift = f();
        let b: Vec<f64> = (0..7).map(|_| f() * 1.5 + shift).collect();
        let (lo, hi) = stats::welch_ci(&a, &b, 0.05).unwrap();
        let p = stats::welch_p(&a, &b);
        if (p - 0.05).abs() > 1e-6 {
            assert_eq!(lo > 0.0 || hi < 0.0, p < 0.05, "p {p} [{lo}, {hi}]");
        }
    }
    assert!(stats::welch_ci(&[1.0], &[1.0, 2.0], 0.05).is_none());
}

/// The two-sided t quantile inverts the CDF at every point of the t table
/// (rounded there to 3 decimals, so within half a unit of the last digit
/// plus the bisection's error), and at df = 30 (2.042).
#[test]
fn t_quantile_matches_the_t_table() {
    for &(t, df, p) in T_TABLE
        .iter()
        .chain(&[(2.042, 30.0, 0.05), (2.750, 30.0, 0.01)])
    {
        let q = stats::t_quantile(p, df);
        assert!(
            (q - t).abs() <= 5e-4 + 1e-9,
            "df {df}, p {p}: {q}, table {t}"
        );
    }
}

/// Fieller's interval of the relative change, by hand. Equal sizes and
/// variances give integer Welch degrees of freedom, 2 (n - 1):
///
/// - base 9, 10, 11 and variant 8, 9, 10: means 10 and 9, s² = 1, n = 3,
///   so v_b = v_v = 1/3, df = 4, t = 2.7764451 (t² = 7.708647). Then
///   a = 10² − t²/3 = 97.430451, the discriminant t² (v_v a + 9² v_b) =
///   7.708647 × 59.476817 = 458.48581 (root 21.412281), and
///   rho = (90 ∓ 21.412281) / 97.430451 = 0.703966, 1.143506:
///   −10% in [−29.6034, +14.3506]%. The first-order interval
///   (`welch_ci` over the base mean) is [−32.6696, +12.6696]%: Fieller's
///   leans towards the side where the ratio stretches.
/// - base 98..102 and variant 103..107 (steps of 1): means 100 and 105,
///   s² = 2.5, n = 5, v = 0.5, df = 8, t = 2.3060041 (t² = 5.317655):
///   a = 10000 − 0.5 t² = 9997.341172, discriminant
///   t² (0.5 a + 105² × 0.5) = 55894.780 (root 236.421615),
///   rho = (10500 ∓ 236.421615) / 9997.341172: +5% in
///   [+2.6631, +7.3928]%.
#[test]
fn relative_change_interval_by_hand() {
    let c = stats::rel_change_ci(&[9.0, 10.0, 11.0], &[8.0, 9.0, 10.0], 0.05).unwrap();
    assert!((c.pct + 10.0).abs() < 1e-12, "{c:?}");
    assert!((c.lo_pct + 29.6034).abs() < 1e-4, "{c:?}");
    assert!((c.hi_pct - 14.3506).abs() < 1e-4, "{c:?}");
    // Lower is better (a time): 10% better in [-14.3506, +29.6034]%.
    let l = c.lower_better();
    assert_eq!((l.pct, l.lo_pct, l.hi_pct), (-c.pct, -c.hi_pct, -c.lo_pct));
    assert!(l.contains(10.0) && l.contains(-14.35) && !l.contains(29.61));

    let base = [98.0, 99.0, 100.0, 101.0, 102.0];
    let var = [103.0, 104.0, 105.0, 106.0, 107.0];
    let c = stats::rel_change_ci(&base, &var, 0.05).unwrap();
    assert!((c.pct - 5.0).abs() < 1e-12, "{c:?}");
    assert!((c.lo_pct - 2.6631).abs() < 1e-4, "{c:?}");
    assert!((c.hi_pct - 7.3928).abs() < 1e-4, "{c:?}");
    // A 99% interval is wider and still excludes 0 (p is about 2e-4).
    let w = stats::rel_change_ci(&base, &var, 0.01).unwrap();
    assert!(
        w.lo_pct < c.lo_pct && w.hi_pct > c.hi_pct && w.lo_pct > 0.0,
        "{w:?}"
    );
    assert!(welch_p(&base, &var) < 0.01);

    // A negative base mean: the change is in % of its magnitude, as
    // pct_better's: -10 -> -9 is +10%, and the interval is the first
    // example's mirrored.
    let n = stats::rel_change_ci(&[-9.0, -10.0, -11.0], &[-8.0, -9.0, -10.0], 0.05).unwrap();
    assert!((n.pct - 10.0).abs() < 1e-12, "{n:?}");
    assert!((n.lo_pct + 14.3506).abs() < 1e-4 && (n.hi_pct - 29.6034).abs() < 1e-4);
}

/// The interval inverts Welch's test: it excludes a change of 0 exactly
/// when `welch_p < alpha`, at two levels, on a fixed pseudo-random walk of
/// sample pairs; it always holds the change of the means; and with little
/// spread it meets the first-order interval (`welch_ci` over the base mean).
#[test]
fn relative_change_interval_inverts_welch() {
    let mut f = uniform(0x2545_f491_4f6c_dd1d);
    let (mut bounded, mut excluded, mut included) = (0, 0, 0);
    for k in 0..400 {
        let alpha = if k % 2 == 0 { 0.05 } else { 0.10 };
        let nb = 2 + k % 6;
        let b: Vec<f64> = (0..nb).map(|_| 10.0 + 3.0 * f()).collect();
        let shift = 2.0 * f() - 1.0;
        let v: Vec<f64> = (0..5).map(|_| 10.0 + 4.0 * f() + shift).collect();
        let Some(c) = stats::rel_change_ci(&b, &v, alpha) else {
            continue;
        };
        bounded += 1;
        assert!(c.contains(c.pct), "{c:?}");
        let p = welch_p(&b, &v);
        if (p - alpha).abs() > 1e-6 {
            assert_eq!(!c.contains(0.0), p < alpha, "p {p} alpha {alpha} {c:?}");
            if p < alpha {
                excluded += 1;
            } else {
                included += 1;
            }
        }
    }
    // The walk exercises both sides of the rule.
    assert!(
        bounded >= 390 && excluded >= 40 && included >= 40,
        "{bounded} {excluded} {included}"
    );

    // Little spread: the base mean is nearly known, the ratio nearly linear.
    let b = [1000.0, 1001.0, 999.0, 1000.5, 999.5];
    let v = [950.0, 951.0, 949.0, 950.2, 949.8];
    let c = stats::rel_change_ci(&b, &v, 0.05).unwrap();
    let (lo, hi) = stats::welch_ci(&b, &v, 0.05).unwrap();
    assert!((c.lo_pct - lo / 10.0).abs() < 1e-2 && (c.hi_pct - hi / 10.0).abs() < 1e-2);
}

#[test]
fn relative_change_interval_edges() {
    // Too few samples, a base mean of 0, a level out of range: no interval.
    assert_eq!(stats::rel_change_ci(&[1.0], &[1.0, 2.0], 0.05), None);
    assert_eq!(stats::rel_change_ci(&[1.0, 2.0], &[1.0], 0.05), None);
    assert_eq!(stats::rel_change_ci(&[-1.0, 1.0], &[1.0, 2.0], 0.05), None);
    for alpha in [0.0, 1.0, -0.1, f64::NAN] {
        assert_eq!(stats::rel_change_ci(&[1.0, 2.0], &[1.0, 2.0], alpha), None);
    }
    // A base mean whose own interval reaches 0 (0.5 ± 4.3 at df = 2):
    // Fieller's set is unbounded.
    assert_eq!(
        stats::rel_change_ci(&[0.0, 0.5, 1.0], &[5.0, 6.0, 7.0], 0.05),
        None
    );
    // No variance: the interval is the change itself, excluding 0 exactly
    // when welch_p says the means differ.
    let c = stats::rel_change_ci(&[4.0, 4.0], &[5.0, 5.0], 0.05).unwrap();
    assert_eq!((c.pct, c.lo_pct, c.hi_pct), (25.0, 25.0, 25.0));
    assert_eq!(welch_p(&[4.0, 4.0], &[5.0, 5.0]), 0.0);
    let z = stats::rel_change_ci(&[4.0, 4.0], &[4.0, 4.0], 0.05).unwrap();
    assert!(z.contains(0.0));
}
