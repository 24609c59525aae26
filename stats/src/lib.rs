//! Summary statistics, one implementation for the kernel's `compare`
//! command (through the `shell` crate), the simulator's study and `abtool`,
//! so all three mark significance identically.
//!
//! - The means mmtests prints: Amean for times and latencies, Hmean for
//!   rates; Stddev (n - 1), CoV, the nearest-rank percentile.
//! - Welch's unequal-variance t-test: t, the Welch-Satterthwaite degrees of
//!   freedom, and the two-sided p-value from the Student t CDF, which is the
//!   regularized incomplete beta function (Lentz's continued fraction,
//!   Numerical Recipes 6.4), with `lgamma` from `libm`; at infinite degrees
//!   of freedom the normal distribution (`erfc`).
//! - Confidence intervals that invert that test: of the difference of the
//!   means ([`welch_ci`]) and of their relative change in % (Fieller's
//!   interval for the ratio of the means, [`rel_change_ci`]), from the t
//!   quantile ([`t_quantile`], bisection on the CDF).
//! - The `CI95` cell every A/B table prints from that interval
//!   ([`change_ci`], [`ChangeCi`]).
//!
//! `no_std` (the kernel links it), no allocation, no `unsafe`; it does not
//! depend on `sched`. `tests/published.rs` checks it against t tables and
//! published Welch examples.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use libm::{ceil, erfc, exp, fabs, lgamma, log, sqrt};

mod ci_cell;
pub use ci_cell::{change_ci, ChangeCi, NotACell, CHANGE_CI_MAX_CHARS};

/// Arithmetic mean (0 for no samples).
pub fn amean(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    x.iter().sum::<f64>() / x.len() as f64
}

/// Harmonic mean, for rates (0 when empty or any sample is <= 0).
pub fn hmean(x: &[f64]) -> f64 {
    if x.is_empty() || x.iter().any(|&v| v <= 0.0) {
        return 0.0;
    }
    x.len() as f64 / x.iter().map(|v| 1.0 / v).sum::<f64>()
}

/// Sample standard deviation (n - 1; 0 below 2 samples).
pub fn stddev(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let m = amean(x);
    sqrt(x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() - 1) as f64)
}

/// Coefficient of variation in % (stddev / mean; 0 when the mean is 0).
pub fn cov(x: &[f64]) -> f64 {
    let m = amean(x);
    if m == 0.0 {
        0.0
    } else {
        100.0 * stddev(x) / fabs(m)
    }
}

/// Keeps a continued-fraction term away from zero (Lentz's method).
fn nz(x: f64) -> f64 {
    if fabs(x) < 1e-300 {
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
        for aa in [
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 / nz(1.0 + aa * d);
            c = nz(1.0 + aa / c);
            h *= d * c;
        }
        if fabs(d * c - 1.0) < 1e-14 {
            break;
        }
    }
    h
}

/// Regularized incomplete beta function I_x(a, b).
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log(1.0 - x));
    if x < (a + 1.0) / (a + b + 2.0) {
        bt * beta_cf(a, b, x) / a
    } else {
        1.0 - bt * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Two-sided p-value of Student's t with `df` degrees of freedom:
/// P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2); the normal distribution's
/// `erfc(|t|/sqrt(2))` at `df` = infinity. 1.0 when it cannot be computed
/// (NaN, `df` <= 0).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    if df.is_infinite() {
        return erfc(fabs(t) / core::f64::consts::SQRT_2);
    }
    inc_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// The result of Welch's unequal-variance t-test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    /// (mean(a) - mean(b)) / sqrt(var(a)/n_a + var(b)/n_b).
    pub t: f64,
    /// The Welch-Satterthwaite degrees of freedom (not an integer).
    pub df: f64,
    /// Two-sided p-value that the means differ.
    pub p: f64,
}

/// Welch's t-test of `a` against `b`. `None` below 2 samples on a side or
/// with no variance on either side (t is undefined).
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (sa, sb) = (stddev(a), stddev(b));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (sa * sa / na, sb * sb / nb);
    let se2 = va + vb;
    if se2 == 0.0 {
        return None;
    }
    let t = (amean(a) - amean(b)) / sqrt(se2);
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Some(Welch {
        t,
        df,
        p: t_two_sided_p(t, df),
    })
}

/// Welch's t-test: the two-sided p-value that the means of `a` and `b` differ.
/// 1.0 when it cannot be computed (fewer than 2 samples on a side); with no
/// variance on either side, 0.0 if the means differ and 1.0 if not.
pub fn welch_p(a: &[f64], b: &[f64]) -> f64 {
    if a.len() < 2 || b.len() < 2 {
        return 1.0;
    }
    match welch(a, b) {
        Some(w) => w.p,
        None if amean(a) == amean(b) => 1.0,
        None => 0.0,
    }
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
/// unequal variances (the interval the t-test of [`welch_p`] inverts: it
/// excludes 0 exactly when `welch_p(a, b) < alpha`). `None` with fewer than
/// two samples on either side.
pub fn welch_ci(a: &[f64], b: &[f64], alpha: f64) -> Option<(f64, f64)> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let d = amean(b) - amean(a);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (stddev(a) * stddev(a) / na, stddev(b) * stddev(b) / nb);
    let se2 = va + vb;
    if se2 == 0.0 {
        return Some((d, d));
    }
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let h = t_quantile(alpha, df) * sqrt(se2);
    Some((d - h, d + h))
}

/// A relative change of one sample's mean against another's with its
/// confidence interval, all in % of the base mean's magnitude (as
/// [`pct_better`] with higher as better: `100 (v - b) / |b|`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RelChange {
    /// The change of the arithmetic means, %.
    pub pct: f64,
    /// The interval's lower end, %.
    pub lo_pct: f64,
    /// The interval's upper end, %.
    pub hi_pct: f64,
}

impl RelChange {
    /// The same interval with lower as better (a time, a latency): every
    /// figure negated and the ends swapped, so that it reads as
    /// [`pct_better`] with `higher_better` false.
    pub fn lower_better(self) -> RelChange {
        RelChange {
            pct: -self.pct,
            lo_pct: -self.hi_pct,
            hi_pct: -self.lo_pct,
        }
    }

    /// Whether `pct` lies in the interval (ends included).
    pub fn contains(&self, pct: f64) -> bool {
        self.lo_pct <= pct && pct <= self.hi_pct
    }
}

/// The change of `mean(variant)` against `mean(base)` in % of the base mean
/// with its `1 - alpha` confidence interval: Fieller's interval for the
/// ratio of two independent means, `rho = mean(variant) / mean(base)`, with
/// Welch's unequal variances, the Welch-Satterthwaite degrees of freedom of
/// the difference and the Student t quantile ([`t_quantile`]).
///
/// Fieller's interval is every `rho` with
/// `(m_v - rho m_b)^2 <= t^2 (s_v^2/n_v + rho^2 s_b^2/n_b)`, the ratios that
/// a t-test of `m_v - rho m_b = 0` does not reject. It is chosen over the
/// delta method (on the ratio or its log) because at `rho = 1` that test is
/// Welch's test of the difference itself: with the degrees of freedom of
/// the difference (those of [`welch`], used for every `rho`) the interval
/// excludes a change of 0 exactly when `welch_p(base, variant) < alpha`, so
/// it never contradicts the `*` of [`welch_p`]; and it carries the base
/// mean's own error into the denominator instead of treating the base mean
/// as known. The delta method gives a symmetric interval on a scale that
/// does not invert the test, so the two could disagree near the level.
/// (Strictly, the Welch-Satterthwaite degrees of freedom of
/// `m_v - rho m_b` depend on `rho`; for the changes of a few % this is used
/// on, they are those of the difference to within a rounding.)
///
/// Its limitation: the interval is bounded only when the base mean itself
/// differs significantly from 0 (`m_b^2 > t^2 s_b^2 / n_b`); when the base
/// mean's own interval reaches 0 the set of ratios is unbounded (the whole
/// line, or two half-lines) and this returns `None`, as it does with fewer
/// than two samples on a side, a base mean of 0, or `alpha` outside (0, 1).
/// With no variance on either side the interval is the change itself.
pub fn rel_change_ci(base: &[f64], variant: &[f64], alpha: f64) -> Option<RelChange> {
    if base.len() < 2 || variant.len() < 2 || alpha.is_nan() || alpha <= 0.0 || alpha >= 1.0 {
        return None;
    }
    let (mb, mv) = (amean(base), amean(variant));
    if mb == 0.0 || !mb.is_finite() || !mv.is_finite() {
        return None;
    }
    // Both ends in % of |m_b|, better (higher) positive: 100 (rho - 1) sign(m_b).
    let sign = if mb < 0.0 { -1.0 } else { 1.0 };
    let pct = |rho: f64| 100.0 * (rho - 1.0) * sign;
    let (sb, sv) = (stddev(base), stddev(variant));
    let (vb, vv) = (sb * sb / base.len() as f64, sv * sv / variant.len() as f64);
    let se2 = vb + vv;
    let rho = mv / mb;
    if se2 == 0.0 {
        let p = pct(rho);
        return Some(RelChange {
            pct: p,
            lo_pct: p,
            hi_pct: p,
        });
    }
    let df = se2 * se2 / (vb * vb / (base.len() - 1) as f64 + vv * vv / (variant.len() - 1) as f64);
    let t = t_quantile(alpha, df);
    let t2 = t * t;
    // rho^2 (m_b^2 - t^2 v_b) - 2 rho m_b m_v + (m_v^2 - t^2 v_v) <= 0.
    let a = mb * mb - t2 * vb;
    if a.is_nan() || a <= 0.0 {
        return None;
    }
    // b^2 - a c with b = m_b m_v, c = m_v^2 - t^2 v_v; >= 0 when a > 0.
    let disc = t2 * (vv * a + mv * mv * vb);
    let root = sqrt(disc);
    let (r1, r2) = ((mb * mv - root) / a, (mb * mv + root) / a);
    let (p1, p2) = (pct(r1), pct(r2));
    Some(RelChange {
        pct: pct(rho),
        lo_pct: p1.min(p2),
        hi_pct: p1.max(p2),
    })
}

/// The significance level `compare` marks (`*`).
pub const ALPHA: f64 = 0.05;

/// % change of `v` against `base` with better as positive (0 when base is 0).
pub fn pct_better(base: f64, v: f64, higher_better: bool) -> f64 {
    if base == 0.0 {
        return 0.0;
    }
    if higher_better {
        100.0 * (v - base) / fabs(base)
    } else {
        100.0 * (base - v) / fabs(base)
    }
}

/// Percentile `p` (0..=100) of sorted samples, nearest rank (0 when empty).
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ceil((p / 100.0) * sorted.len() as f64) as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
