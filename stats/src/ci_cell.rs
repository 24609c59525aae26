//! The `CI95` cell of every A/B table (the kernel's `compare` and `make ab`
//! through `shell::compare`, `abtool --versus`, the simulator's study and
//! score): a change's [`ALPHA`]-level (95%) confidence interval in % of the
//! baseline mean, better as positive, and how it prints. Allocation-free
//! (`core::fmt` into a buffer on the stack).

use core::fmt::{self, Write};

use crate::{rel_change_ci, ALPHA};

/// The most characters a [`ChangeCi`] prints: a column of at least one more
/// keeps a blank before it.
pub const CHANGE_CI_MAX_CHARS: usize = 21;

/// The `1 - ALPHA` (95%) confidence interval of a variant's change against
/// the baseline, as a `CI95` cell prints it ([`change_ci`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ChangeCi {
    /// Fewer than 2 samples in either column (`n/a`).
    NotAvailable,
    /// Fieller's set of ratios is unbounded: the baseline mean is 0 or not
    /// significantly away from 0 (`unbounded`).
    Unbounded,
    /// The interval's ends in % of the baseline mean, better as positive.
    Bounded {
        /// Lower end, %.
        lo_pct: f64,
        /// Upper end, %.
        hi_pct: f64,
    },
}

impl ChangeCi {
    /// The ends (low, high), %, of a bounded interval; `None` otherwise.
    pub fn bounds(&self) -> Option<(f64, f64)> {
        match *self {
            ChangeCi::Bounded { lo_pct, hi_pct } => Some((lo_pct, hi_pct)),
            _ => None,
        }
    }
}

/// The 95% confidence interval of `variant`'s change against `base` in % of
/// the baseline mean, signed as [`crate::pct_better`] with `higher_better`
/// (a time or latency: `false`, a drop is positive; a rate or a counter:
/// `true`). It is [`rel_change_ci`] at [`ALPHA`]: Fieller's interval for
/// the ratio of the arithmetic means with the Welch-Satterthwaite degrees
/// of freedom, which inverts the test of [`crate::welch_p`], so a bounded
/// interval excludes 0 exactly when `welch_p(base, variant) < ALPHA`. (For a
/// rate summarised by its harmonic mean it is the change of the arithmetic
/// means, the ones the t-test compares, so a printed Hmean change may sit
/// slightly off its centre.) An unbounded set can still go with p < ALPHA:
/// the ratios then form two half-lines around a gap that holds 1.
pub fn change_ci(base: &[f64], variant: &[f64], higher_better: bool) -> ChangeCi {
    if base.len() < 2 || variant.len() < 2 {
        return ChangeCi::NotAvailable;
    }
    let Some(c) = rel_change_ci(base, variant, ALPHA) else {
        return ChangeCi::Unbounded;
    };
    let c = if higher_better { c } else { c.lower_better() };
    // + 0.0: no "-0.00" for an end that is exactly 0.
    ChangeCi::Bounded {
        lo_pct: c.lo_pct + 0.0,
        hi_pct: c.hi_pct + 0.0,
    }
}

/// A printed cell that is not one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotACell;

impl core::str::FromStr for ChangeCi {
    type Err = NotACell;

    /// A cell as [`ChangeCi`]'s `Display` prints it (blanks around it
    /// ignored), for tools and tests that read tables: its ends as printed,
    /// so rounded.
    fn from_str(s: &str) -> Result<ChangeCi, NotACell> {
        match s.trim() {
            "n/a" => return Ok(ChangeCi::NotAvailable),
            "unbounded" => return Ok(ChangeCi::Unbounded),
            _ => {}
        }
        let (lo, hi) = s
            .trim()
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix("]%"))
            .and_then(|x| x.split_once(", "))
            .ok_or(NotACell)?;
        Ok(ChangeCi::Bounded {
            lo_pct: lo.parse().map_err(|_| NotACell)?,
            hi_pct: hi.parse().map_err(|_| NotACell)?,
        })
    }
}

/// A [`CHANGE_CI_MAX_CHARS`]-byte text on the stack; a write that does not
/// fit fails.
struct Text {
    buf: [u8; CHANGE_CI_MAX_CHARS],
    len: usize,
}

impl Write for Text {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl Text {
    /// The text of `args` if it fits.
    fn fit(args: fmt::Arguments<'_>) -> Option<Text> {
        let mut t = Text {
            buf: [0; CHANGE_CI_MAX_CHARS],
            len: 0,
        };
        t.write_fmt(args).ok().map(|()| t)
    }

    fn as_str(&self) -> &str {
        // Only whole `&str`s are copied in.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl fmt::Display for ChangeCi {
    /// `[-1.23, +4.56]%`, in at most [`CHANGE_CI_MAX_CHARS`] characters
    /// (fewer decimals, then exponents, for wide intervals); `n/a`;
    /// `unbounded`. Width, fill and alignment apply to the whole cell.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (lo, hi) = match *self {
            ChangeCi::NotAvailable => return f.pad("n/a"),
            ChangeCi::Unbounded => return f.pad("unbounded"),
            ChangeCi::Bounded { lo_pct, hi_pct } => (lo_pct, hi_pct),
        };
        for d in [2, 1, 0] {
            if let Some(t) = Text::fit(format_args!("[{lo:+.d$}, {hi:+.d$}]%")) {
                return f.pad(t.as_str());
            }
        }
        // "[-1.8e308, +1.8e308]%"; with no decimals "[-1e-308, +1e308]%",
        // "[-inf, NaN]%": the last always fits.
        for d in [1, 0] {
            if let Some(t) = Text::fit(format_args!("[{lo:+.d$e}, {hi:+.d$e}]%")) {
                return f.pad(t.as_str());
            }
        }
        Err(fmt::Error)
    }
}
