//! The `CI95` cell: hand-computed intervals under both signs, `n/a`,
//! `unbounded`, and the text of wide and exact intervals.

use stats::{change_ci, welch_p, ChangeCi, NotACell, ALPHA, CHANGE_CI_MAX_CHARS};

fn close(c: ChangeCi, lo: f64, hi: f64) {
    match c {
        ChangeCi::Bounded { lo_pct, hi_pct } => assert!(
            (lo_pct - lo).abs() < 1e-4 && (hi_pct - hi).abs() < 1e-4,
            "{c:?}, want [{lo}, {hi}]"
        ),
        other => panic!("{other:?}, want [{lo}, {hi}]"),
    }
}

/// The two worked examples of `published.rs` (equal n and variances, so
/// integer Welch degrees of freedom and published t quantiles): means 10 ->
/// 9 with n = 3 (df 4, t = 2.7764451) is -10% in [-29.6034, +14.3506]% of
/// the ratio; means 100 -> 105 with n = 5 (df 8, t = 2.3060041) is +5% in
/// [+2.6631, +7.3928]%.
#[test]
fn intervals_by_hand_under_both_signs() {
    let (b, v) = ([9.0, 10.0, 11.0], [8.0, 9.0, 10.0]);
    // 10 -> 15, n = 3 on both sides: df 4; a = 100 - t^2/3 = 97.430451, the
    // discriminant t^2 (a/3 + 15^2/3) = 828.4994 (root 28.783665), rho =
    // (150 -+ 28.783665) / 97.430451 = 1.244132, 1.834988.
    let c = [14.0, 15.0, 16.0];
    close(change_ci(&b, &c, true), 24.4132, 83.4988);
    assert_eq!(change_ci(&b, &c, true).to_string(), "[+24.41, +83.50]%");
    // A time that drops 10% is +10% better; a rate or a counter is -10%.
    close(change_ci(&b, &v, false), -14.3506, 29.6034);
    close(change_ci(&b, &v, true), -29.6034, 14.3506);
    assert_eq!(change_ci(&b, &v, false).to_string(), "[-14.35, +29.60]%");
    let b5 = [98.0, 99.0, 100.0, 101.0, 102.0];
    let v5 = [103.0, 104.0, 105.0, 106.0, 107.0];
    close(change_ci(&b5, &v5, false), -7.3928, -2.6631);
    close(change_ci(&b5, &v5, true), 2.6631, 7.3928);
    // Padding applies to the whole cell.
    assert_eq!(
        format!(
            "{:>18}|{:<16}|",
            change_ci(&b5, &v5, true),
            ChangeCi::Unbounded
        ),
        "   [+2.66, +7.39]%|unbounded       |"
    );
    // Excludes 0 exactly where Welch's p < ALPHA: t = 6.12 at df 4 and
    // t = 5 at df 8 are significant, t = 1.22 at df 4 is not.
    for (x, y, sig) in [(&b[..], &c[..], true), (&b, &v, false), (&b5, &v5, true)] {
        assert_eq!(welch_p(x, y) < ALPHA, sig);
        let (lo, hi) = change_ci(x, y, true).bounds().unwrap();
        assert_eq!(lo > 0.0 || hi < 0.0, sig);
    }
}

#[test]
fn not_available_unbounded_and_exact() {
    let one = [1.0];
    let two = [1.0, 1.2];
    // A base mean whose own interval reaches 0: 0.5 +- 4.3 at df 2.
    let near0 = [0.0, 0.5, 1.0];
    let far = [5.0, 6.0, 7.0];
    assert_eq!(change_ci(&one, &two, false), ChangeCi::NotAvailable);
    assert_eq!(change_ci(&two, &one, false), ChangeCi::NotAvailable);
    assert_eq!(change_ci(&[], &[], true), ChangeCi::NotAvailable);
    assert_eq!(ChangeCi::NotAvailable.to_string(), "n/a");
    assert_eq!(ChangeCi::NotAvailable.bounds(), None);
    assert_eq!(change_ci(&near0, &far, true), ChangeCi::Unbounded);
    // A zero baseline (a counter that a feature starts): no ratio.
    let z = [0.0, 0.0, 0.0];
    assert_eq!(change_ci(&z, &far, true), ChangeCi::Unbounded);
    assert_eq!(ChangeCi::Unbounded.to_string(), "unbounded");
    assert_eq!(ChangeCi::Unbounded.bounds(), None);
    // No spread on either side: the change itself; 0 is "+0.00", not "-0.00".
    assert_eq!(
        change_ci(&[4.0, 4.0], &[4.0, 4.0], false),
        ChangeCi::Bounded {
            lo_pct: 0.0,
            hi_pct: 0.0
        }
    );
    assert_eq!(
        change_ci(&[4.0, 4.0], &[4.0, 4.0], false).to_string(),
        "[+0.00, +0.00]%"
    );
    assert_eq!(
        change_ci(&[4.0, 4.0], &[5.0, 5.0], false).bounds(),
        Some((-25.0, -25.0))
    );
}

/// What prints parses back, to the printed decimals; anything else is an
/// error.
#[test]
fn cells_parse_back() {
    let b = |lo_pct, hi_pct| ChangeCi::Bounded { lo_pct, hi_pct };
    for (c, back) in [
        (b(-7.39281, 2.661), b(-7.39, 2.66)),
        (b(-1.5e12, 2.25e15), b(-1.5e12, 2.2e15)),
        (ChangeCi::NotAvailable, ChangeCi::NotAvailable),
        (ChangeCi::Unbounded, ChangeCi::Unbounded),
    ] {
        assert_eq!(format!("{c:>30}").parse(), Ok(back));
    }
    for bad in ["", "-", "[1, 2]", "[1,2]%", "[a, 2]%", "1, 2]%", "n/a*"] {
        assert_eq!(bad.parse::<ChangeCi>(), Err(NotACell), "{bad:?}");
    }
}

#[test]
fn wide_intervals_fit_their_characters() {
    let b = |lo_pct, hi_pct| ChangeCi::Bounded { lo_pct, hi_pct };
    // 21 characters with two decimals: kept.
    assert_eq!(b(-1234.5, 1234.25).to_string(), "[-1234.50, +1234.25]%");
    // Too wide for two decimals: fewer, then exponents.
    assert_eq!(
        b(-12345.678, 98765.4321).to_string(),
        "[-12345.7, +98765.4]%"
    );
    assert_eq!(b(-123456.7, 987654.3).to_string(), "[-123457, +987654]%");
    assert_eq!(b(-1.5e12, 2.25e15).to_string(), "[-1.5e12, +2.2e15]%");
    // The widest there is, and ends that are not numbers.
    assert_eq!(b(-f64::MAX, f64::MAX).to_string(), "[-1.8e308, +1.8e308]%");
    assert_eq!(b(f64::NEG_INFINITY, f64::NAN).to_string(), "[-inf, NaN]%");
    assert_eq!(b(-1e300, 1e-300).to_string(), "[-1e300, +1e-300]%");
    for x in [
        b(-f64::MAX, f64::MAX),
        b(-1e300, 1e-300),
        b(f64::MIN_POSITIVE, 1e22),
    ] {
        assert!(x.to_string().len() <= CHANGE_CI_MAX_CHARS, "{x}");
    }
}
