//! Small output helpers for the executor, as `Display` types so they write
//! straight into the console without allocating.

use core::fmt;

use sched::{CpuId, Policy, PreemptMode};

/// The `preempt` line: every mode in Linux's order, the current one in
/// parentheses: `none voluntary (full) lazy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreemptLine(pub PreemptMode);

impl fmt::Display for PreemptLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, m) in PreemptMode::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            if *m == self.0 {
                write!(f, "({})", m.name())?;
            } else {
                f.write_str(m.name())?;
            }
        }
        Ok(())
    }
}

/// Nanoseconds shown as milliseconds with three decimals (`1234567` -> `1.234`).
/// Width and alignment flags apply to the whole number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ms(pub u64);

/// Signed nanoseconds as milliseconds with three decimals (`-1500000` -> `-1.500`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignedMs(pub i64);

fn write_ms(f: &mut fmt::Formatter<'_>, neg: bool, ns: u64) -> fmt::Result {
    // Render into a small stack buffer, then pad as one piece.
    let mut buf = [0u8; 32];
    let mut n = buf.len();
    let mut put = |b: u8| {
        n -= 1;
        buf[n] = b;
    };
    let us = ns / 1000;
    let mut frac = us % 1000;
    for _ in 0..3 {
        put(b'0' + (frac % 10) as u8);
        frac /= 10;
    }
    put(b'.');
    let mut whole = us / 1000;
    loop {
        put(b'0' + (whole % 10) as u8);
        whole /= 10;
        if whole == 0 {
            break;
        }
    }
    if neg {
        put(b'-');
    }
    f.pad_integral(true, "", core::str::from_utf8(&buf[n..]).unwrap_or("?"))
}

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_ms(f, false, self.0)
    }
}

impl fmt::Display for SignedMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_ms(f, self.0 < 0, self.0.unsigned_abs())
    }
}

/// A CPU mask as a Linux CPU list: `0-2,5` (empty mask: empty string).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuList(pub sched::CpuMask);

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.0;
        let mut first = true;
        let mut next = m.first();
        while let Some(start) = next {
            // The run start..end of consecutive CPUs.
            let mut end = start;
            while m.test(end + 1) {
                end += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            next = m.next_from(end + 1);
        }
        Ok(())
    }
}

/// Thread ids as ranges, like a CPU list: `13-20,25` (empty: empty string),
/// for the thread ids of a background job. The ids should be sorted: a run
/// is a stretch of consecutive increasing ids, as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdList<'a>(pub &'a [u32]);

impl fmt::Display for IdList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids = self.0;
        let mut i = 0;
        while i < ids.len() {
            if i > 0 {
                f.write_str(",")?;
            }
            let start = ids[i];
            while i + 1 < ids.len() && Some(ids[i + 1]) == ids[i].checked_add(1) {
                i += 1;
            }
            if ids[i] == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{}", ids[i])?;
            }
            i += 1;
        }
        Ok(())
    }
}

/// The `ps` header line, aligned with [`PsRow`].
pub const PS_HEADER: &str =
    "  PID NAME            CPU POLICY  NICE ST      VRUNTIME      DEADLINE         LAG      SLICE       RUNTIME   SWITCHES";

/// One `ps` line. Times are nanoseconds, printed as ms; RT threads show their
/// priority after the policy (`FIFO/50`) and `-` for nice.
#[derive(Clone, Copy, Debug)]
pub struct PsRow<'a> {
    /// Thread id.
    pub pid: u32,
    /// Name (cut to 15 characters).
    pub name: &'a str,
    /// CPU it is on or last ran on.
    pub cpu: CpuId,
    /// Policy.
    pub policy: Policy,
    /// Nice value (fair policies).
    pub nice: i32,
    /// RT priority (FIFO/RR).
    pub rt_prio: u8,
    /// State letter(s): `R` running/runnable, `S` sleeping, `D` delayed, ...
    pub state: &'a str,
    /// Virtual runtime.
    pub vruntime_ns: u64,
    /// Virtual deadline.
    pub deadline_ns: u64,
    /// Lag (V - v, weighted).
    pub lag_ns: i64,
    /// Slice (request size).
    pub slice_ns: u64,
    /// Total runtime.
    pub runtime_ns: u64,
    /// Times switched in.
    pub switches: u64,
}

impl fmt::Display for PsRow<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>5} {:<15.15} {:>3} ", self.pid, self.name, self.cpu)?;
        match self.policy {
            Policy::Fifo | Policy::RoundRobin => {
                // "FIFO/50" in the 7-wide policy column, no nice.
                let (p, n) = (self.policy.short_name(), self.rt_prio);
                let w = 7usize.saturating_sub(p.len() + 1);
                write!(f, "{p}/{n:<w$} {:>4}", "-")?;
            }
            _ => write!(f, "{:<7} {:>4}", self.policy.short_name(), self.nice)?,
        }
        write!(
            f,
            " {:<2} {:>13} {:>13} {:>11} {:>10} {:>13} {:>10}",
            self.state,
            Ms(self.vruntime_ns),
            Ms(self.deadline_ns),
            SignedMs(self.lag_ns),
            Ms(self.slice_ns),
            Ms(self.runtime_ns),
            self.switches
        )
    }
}
