//! Scoring the NEXT_BUDDY study against the published tables.
//!
//! The linux-kernel threads the study models (`docs/references.md`,
//! "NEXT_BUDDY, 2025–2026") published compare tables; this module holds the
//! rows of them that show a clear effect, maps each onto a point of the study
//! (workload, machine preset, parameter value, and the pair of study
//! configurations whose difference the row measures), and scores the
//! simulator's change there: agree (significant, same sign), null (not
//! significant), opposite (significant, other sign), and whether its size is
//! within a factor of 2 of the published one. Rows the study cannot run (a
//! workload or a kernel it lacks, a size beyond its sweep) stay in the table
//! as "not modelled" or "not run", so nothing is silently dropped. The
//! ablation (`sim study --ablation`) re-runs the points the clear rows need
//! with each switchable mechanism ([`crate::machine::Mechanisms`]) turned off
//! and scores every variant, to show which mechanism a verdict depends on.
//!
//! What "clear" means (the rule is code: [`is_clear`], [`ryan_rows`]):
//! - Mel Gorman's CascadeLake tables (mmtests compare): the change is marked
//!   significant (`*`) and |change| >= 2%.
//! - Ryan Roberts' Graviton3 table gives every column against 6.18, marked
//!   (R)/(I) when its 95% interval does not overlap 6.18's. A row pairs two
//!   of its columns (the base: "revert #1 & #2", NEXT_BUDDY off and the
//!   rework reverted, the fair `nb-off`; or "6.19-rc6 + patch" for
//!   NEXT_BUDDY's own effect with the rule present), so the change is the
//!   one between those columns ([`ryan_change`]); it is clear when at least
//!   one of the two columns is marked and |change| >= 2%. The pair's own
//!   significance is not published, so this is the nearest rule.
//! - Ryan's schbench table (rc1 against "revert-next-buddy"): marked and
//!   |change| >= 2%; its base keeps the old NEXT_BUDDY on (only the rework
//!   is reverted), which the simulator does not have: not modelled.

use std::fmt::Write as _;

use crate::study::{json_str, Results, Study};
use crate::{errln, out, WorkSpec};
use stats::{amean, change_ci, hmean, welch_p, ChangeCi};

/// Mel Gorman's v1 of the rework, 2-socket CascadeLake: "[PATCH 2/2]
/// sched/fair: Reimplement NEXT_BUDDY to align with EEVDF goals".
pub const SRC_MEL: &str = "20250714134429.19624-1-mgorman@techsingularity.net";
/// Ryan Roberts' Graviton3 table with the "6.19-rc6 + patch" column, as
/// quoted in Vincent Guittot's reply to the disable patch.
pub const SRC_RYAN: &str = "CAKfTPtCMcgMO1mK4sNwHtqbKWTQRB_92yPE2vd+11k7aHAukew@mail.gmail.com";
/// Ryan Roberts' regression report thread (his schbench table is in his
/// reply of 2026-01-02 to Dietmar Eggemann there).
pub const SRC_RYAN_SCHBENCH: &str = "4b96909a-f1ac-49eb-b814-97b8adda6229@arm.com";

/// Where a published row lands in the study.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// A study point: item title, machine preset, parameter value, metric.
    Point {
        /// Item title (`hackbench-process-pipes`).
        title: &'static str,
        /// Machine preset.
        machine: &'static str,
        /// The published parameter value (groups, clients).
        value: u64,
        /// The study's metric.
        metric: &'static str,
    },
    /// The simulator cannot run it; why.
    NotModelled(&'static str),
}

/// One clear published row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// lkml message id.
    pub source: &'static str,
    /// The published machine.
    pub machine: &'static str,
    /// The published workload and metric.
    pub workload: String,
    /// Parameter value (groups, clients; 0 when none).
    pub param: u64,
    /// The study configuration the published base corresponds to.
    pub base: &'static str,
    /// The study configuration the published variant corresponds to.
    pub variant: &'static str,
    /// The published change of variant against base, %, better positive.
    pub published: f64,
    /// Where it lands in the study.
    pub target: Target,
}

/// A verdict on one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Significant in the simulator, same sign.
    Agree,
    /// Not significant in the simulator.
    Null,
    /// Significant in the simulator, other sign.
    Opposite,
}

impl Verdict {
    /// Its name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Null => "null",
            Verdict::Opposite => "opposite",
        }
    }
}

/// Mel's and mmtests' rule: significant and |change| >= 2%.
pub fn is_clear(change: f64, significant: bool) -> bool {
    significant && change.abs() >= 2.0
}

/// The verdict on a row: the simulator's change `sim` (%, better positive)
/// and whether it is significant, against the published change.
pub fn verdict(published: f64, sim: f64, significant: bool) -> Verdict {
    if !significant || sim == 0.0 {
        Verdict::Null
    } else if (sim > 0.0) == (published > 0.0) {
        Verdict::Agree
    } else {
        Verdict::Opposite
    }
}

/// Whether `sim` is within a factor of 2 of `published`, same sign.
pub fn within_2x(published: f64, sim: f64) -> bool {
    published != 0.0 && sim / published >= 0.5 && sim / published <= 2.0
}

/// The change of column `v` against column `b` of a table whose columns are
/// % changes against a common base, better positive: for a time,
/// `t = t0 (1 - x/100)`; for a rate, `r = r0 (1 + x/100)`.
pub fn ryan_change(v: f64, b: f64, higher_better: bool) -> f64 {
    if higher_better {
        100.0 * (v - b) / (100.0 + b)
    } else {
        100.0 * (v - b) / (100.0 - b)
    }
}

/// (% change against 6.18, mark: 1 (I), -1 (R), 0 none).
type Col = (f64, i8);
/// (benchmark, result class, SUT, `[rc1, revert #2, revert #1 & #2, rc6 + patch]`).
type RyanRow = (&'static str, &'static str, &'static str, [Col; 4]);

// The published tables. Mel Gorman's (SRC_MEL), 6.16-rc5 vanilla against
// sched-preemptnext-v1r8: (clients or groups, % change better positive,
// marked significant `*`). dbench4 throughput (Hmean):
/// Mel's dbench4 throughput, Hmean.
const MEL_DBENCH: &[(u64, f64, bool)] = &[
    (1, -0.40, false),
    (4, -2.06, true),
    (7, -1.50, true),
    (12, -0.47, false),
    (21, 2.57, false),
    (30, 11.91, true),
    (48, 23.35, true),
    (79, 28.94, true),
    (110, 40.18, true),
    (141, 39.67, true),
    (160, 38.10, true),
];
/// Mel's hackbench-process-pipes, Amean.
const MEL_PIPES: &[(u64, f64, bool)] = &[
    (1, -1.83, false),
    (4, 6.34, false),
    (7, 8.20, false),
    (12, 0.45, false),
    (21, -1.39, false),
    (30, -17.51, true),
    (48, -9.82, true),
    (79, -4.27, true),
    (110, -5.78, true),
    (141, -5.71, true),
    (172, -4.35, true),
    (203, -2.66, false),
    (234, -6.41, true),
    (265, -5.24, true),
    (296, -5.93, true),
];
/// Mel's hackbench-process-sockets, Amean.
const MEL_SOCKETS: &[(u64, f64, bool)] = &[
    (1, 5.08, false),
    (4, -0.45, false),
    (7, -1.94, false),
    (12, -3.26, false),
    (21, -4.81, true),
    (30, -3.93, true),
    (48, -4.48, true),
    (79, 2.10, false),
    (110, -0.68, false),
    (141, 0.84, false),
    (172, 2.28, false),
    (203, 1.31, false),
    (234, 0.30, false),
    (265, -0.53, false),
    (296, -1.20, false),
];
/// Ryan Roberts' Graviton3 table: (benchmark, result class, SUT, then the
/// columns 6.19-rc1, revert #2, revert #1 & #2, 6.19-rc6 + patch as
/// (% change against 6.18, better positive; mark: 1 (I), -1 (R), 0 none)).
#[rustfmt::skip]
const RYAN: &[RyanRow] = &[
    ("repro-collection/mysql-workload", "db transaction rate (transactions/min)", "multi-node", [(-1.33, -1), (5.87, 1), (7.63, 1), (4.01, 1)]),
    ("repro-collection/mysql-workload", "new order rate (orders/min)", "multi-node", [(-1.32, -1), (5.87, 1), (7.64, 1), (3.94, 1)]),
    ("specjbb/composite", "critical-jOPS (jOPS)", "single-node", [(-5.10, -1), (-0.90, 0), (-0.37, 0), (3.07, 1)]),
    ("specjbb/composite", "max-jOPS (jOPS)", "single-node", [(-3.90, -1), (-0.65, 0), (0.65, 0), (1.94, 1)]),
    ("repro-collection/mysql-workload", "db transaction rate (transactions/min)", "single-node", [(-3.88, -1), (-0.13, 0), (0.24, 0), (-1.34, 0)]),
    ("repro-collection/mysql-workload", "new order rate (orders/min)", "single-node", [(-3.78, -1), (-0.07, 0), (0.29, 0), (-1.29, 0)]),
    ("pts/pgbench", "Scale: 1 Clients: 1 Read Only (TPS)", "single-node", [(2.90, 1), (0.74, 0), (0.85, 0), (2.58, 0)]),
    ("pts/pgbench", "Scale: 1 Clients: 1 Read Only - Latency (ms)", "single-node", [(5.49, 1), (1.05, 0), (1.05, 0), (4.35, 0)]),
    ("pts/pgbench", "Scale: 1 Clients: 1 Read Write (TPS)", "single-node", [(0.11, 0), (-0.08, 0), (-0.03, 0), (0.11, 0)]),
    ("pts/pgbench", "Scale: 1 Clients: 1 Read Write - Latency (ms)", "single-node", [(0.12, 0), (-0.06, 0), (-0.06, 0), (0.14, 0)]),
    ("pts/pgbench", "Scale: 1 Clients: 250 Read Only (TPS)", "single-node", [(-2.25, -1), (2.12, 1), (1.62, 0), (-3.92, -1)]),
    ("pts/pgbench", "Scale: 1 Clients: 250 Read Only - Latency (ms)", "single-node", [(-2.37, -1), (2.09, 1), (1.69, 0), (-3.93, -1)]),
    ("pts/pgbench", "Scale: 1 Clients: 250 Read Write (TPS)", "single-node", [(-1.36, 0), (-0.14, 0), (-0.12, 0), (-0.49, 0)]),
    ("pts/pgbench", "Scale: 1 Clients: 250 Read Write - Latency (ms)", "single-node", [(-1.31, 0), (-0.08, 0), (-0.08, 0), (-0.49, 0)]),
    ("pts/pgbench", "Scale: 1 Clients: 1000 Read Only (TPS)", "single-node", [(-11.37, -1), (0.08, 0), (0.48, 0), (-11.85, -1)]),
    ("pts/pgbench", "Scale: 1 Clients: 1000 Read Only - Latency (ms)", "single-node", [(-11.38, -1), (0.08, 0), (0.44, 0), (-11.87, -1)]),
    ("pts/pgbench", "Scale: 1 Clients: 1000 Read Write (TPS)", "single-node", [(-1.11, 0), (2.15, 0), (-0.96, 0), (1.60, 0)]),
    ("pts/pgbench", "Scale: 1 Clients: 1000 Read Write - Latency (ms)", "single-node", [(-1.26, 0), (2.47, 0), (-0.90, 0), (1.52, 0)]),
    ("pts/pgbench", "Scale: 100 Clients: 1 Read Only (TPS)", "single-node", [(1.68, 0), (0.10, 0), (0.22, 0), (2.16, 0)]),
    ("pts/pgbench", "Scale: 100 Clients: 1 Read Only - Latency (ms)", "single-node", [(1.94, 0), (0.00, 0), (0.96, 0), (1.94, 0)]),
    ("pts/pgbench", "Scale: 100 Clients: 1 Read Write (TPS)", "single-node", [(-0.37, 0), (-0.41, 0), (0.07, 0), (0.07, 0)]),
    ("pts/pgbench", "Scale: 100 Clients: 1 Read Write - Latency (ms)", "single-node", [(-0.37, 0), (-0.40, 0), (0.06, 0), (0.06, 0)]),
    ("pts/pgbench", "Scale: 100 Clients: 250 Read Only (TPS)", "single-node", [(-1.61, 0), (1.67, 0), (1.34, 0), (-2.94, -1)]),
    ("pts/pgbench", "Scale: 100 Clients: 250 Read Only - Latency (ms)", "single-node", [(-1.40, 0), (1.56, 0), (1.20, 0), (-2.87, -1)]),
    ("pts/pgbench", "Scale: 100 Clients: 250 Read Write (TPS)", "single-node", [(-0.17, 0), (-0.86, 0), (-1.66, 0), (0.17, 0)]),
    ("pts/pgbench", "Scale: 100 Clients: 250 Read Write - Latency (ms)", "single-node", [(-0.17, 0), (-0.85, 0), (-1.67, 0), (0.17, 0)]),
    ("pts/pgbench", "Scale: 100 Clients: 1000 Read Only (TPS)", "single-node", [(-10.31, -1), (-0.19, 0), (0.53, 0), (-10.36, -1)]),
    ("pts/pgbench", "Scale: 100 Clients: 1000 Read Only - Latency (ms)", "single-node", [(-10.30, -1), (-0.17, 0), (0.53, 0), (-10.35, -1)]),
    ("pts/pgbench", "Scale: 100 Clients: 1000 Read Write (TPS)", "single-node", [(0.27, 0), (0.07, 0), (-0.79, 0), (-2.32, 0)]),
    ("pts/pgbench", "Scale: 100 Clients: 1000 Read Write - Latency (ms)", "single-node", [(0.23, 0), (0.05, 0), (-0.81, 0), (-2.27, 0)]),
    ("mmtests/hackbench", "hackbench-process-pipes-1 (seconds)", "single-node", [(-1.51, 0), (-1.05, 0), (-1.51, 0), (0.35, 0)]),
    ("mmtests/hackbench", "hackbench-process-pipes-4 (seconds)", "single-node", [(6.49, 1), (5.42, 1), (6.06, 1), (5.72, 1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-7 (seconds)", "single-node", [(-18.36, -1), (3.40, 1), (-0.41, 0), (-24.54, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-12 (seconds)", "single-node", [(-19.89, -1), (-0.45, 0), (-2.23, -1), (-24.55, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-21 (seconds)", "single-node", [(-8.41, -1), (-1.22, 0), (-2.46, -1), (-13.58, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-30 (seconds)", "single-node", [(-9.06, -1), (-2.95, -1), (-1.62, 0), (-13.21, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-48 (seconds)", "single-node", [(-11.68, -1), (-4.10, -1), (-0.26, 0), (-12.63, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-79 (seconds)", "single-node", [(-9.74, -1), (-3.25, -1), (-2.45, -1), (-10.31, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-110 (seconds)", "single-node", [(-6.57, -1), (-2.12, -1), (-2.25, -1), (-7.15, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-141 (seconds)", "single-node", [(-5.86, -1), (-3.44, -1), (-2.89, -1), (-5.60, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-172 (seconds)", "single-node", [(-4.28, -1), (-2.81, -1), (-2.44, -1), (-4.79, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-203 (seconds)", "single-node", [(-4.01, -1), (-3.00, -1), (-2.17, -1), (-3.74, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-234 (seconds)", "single-node", [(-3.52, -1), (-2.81, -1), (-2.20, -1), (-3.63, -1)]),
    ("mmtests/hackbench", "hackbench-process-pipes-256 (seconds)", "single-node", [(-3.24, -1), (-2.81, -1), (-2.74, -1), (-3.19, -1)]),
    ("mmtests/hackbench", "hackbench-process-sockets-1 (seconds)", "single-node", [(0.50, 0), (0.26, 0), (0.03, 0), (-0.43, 0)]),
    ("mmtests/hackbench", "hackbench-process-sockets-4 (seconds)", "single-node", [(17.44, 1), (16.31, 1), (19.09, 1), (18.69, 1)]),
    ("mmtests/hackbench", "hackbench-process-sockets-7 (seconds)", "single-node", [(12.10, 1), (9.78, 1), (11.83, 1), (11.37, 1)]),
    ("mmtests/hackbench", "hackbench-process-sockets-12 (seconds)", "single-node", [(10.19, 1), (9.83, 1), (11.21, 1), (9.31, 1)]),
    ("mmtests/hackbench", "hackbench-process-sockets-21 (seconds)", "single-node", [(9.38, 1), (9.20, 1), (10.30, 1), (8.99, 1)]),
    ("mmtests/hackbench", "hackbench-process-sockets-30 (seconds)", "single-node", [(6.43, 1), (6.11, 1), (7.22, 1), (6.75, 1)]),
    ("mmtests/hackbench", "hackbench-process-sockets-48 (seconds)", "single-node", [(3.00, 1), (2.19, 1), (2.85, 1), (2.98, 1)]),
    ("mmtests/hackbench", "hackbench-process-sockets-79 (seconds)", "single-node", [(2.87, 1), (3.31, 1), (3.10, 0), (3.10, 1)]),
    ("mmtests/hackbench", "hackbench-process-sockets-110 (seconds)", "single-node", [(-1.15, 0), (2.33, 1), (0.22, 0), (0.44, 0)]),
    ("mmtests/hackbench", "hackbench-process-sockets-141 (seconds)", "single-node", [(-1.40, 0), (14.53, 1), (2.64, 0), (1.54, 0)]),
    ("mmtests/hackbench", "hackbench-process-sockets-172 (seconds)", "single-node", [(3.52, 1), (30.37, 1), (4.32, 1), (4.25, 1)]),
    ("mmtests/hackbench", "hackbench-process-sockets-203 (seconds)", "single-node", [(1.10, 0), (27.20, 1), (0.32, 0), (1.67, 0)]),
    ("mmtests/hackbench", "hackbench-process-sockets-234 (seconds)", "single-node", [(1.60, 0), (28.24, 1), (1.28, 0), (3.11, 1)]),
    ("mmtests/hackbench", "hackbench-process-sockets-256 (seconds)", "single-node", [(0.70, 0), (28.74, 1), (0.53, 0), (1.48, 0)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-1 (seconds)", "single-node", [(-1.32, 0), (-0.76, 0), (-0.67, 0), (-0.76, 0)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-4 (seconds)", "single-node", [(6.91, 1), (7.64, 1), (9.08, 1), (6.15, 1)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-7 (seconds)", "single-node", [(-7.51, -1), (5.26, 1), (2.82, 1), (-9.98, -1)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-12 (seconds)", "single-node", [(-8.40, -1), (2.32, 1), (-0.53, 0), (-14.42, -1)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-21 (seconds)", "single-node", [(-2.95, -1), (0.91, 0), (-2.00, -1), (-7.93, -1)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-30 (seconds)", "single-node", [(-4.61, -1), (1.47, 0), (-1.63, 0), (-11.99, -1)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-48 (seconds)", "single-node", [(-5.45, -1), (2.15, 1), (0.81, 0), (-11.45, -1)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-79 (seconds)", "single-node", [(-5.53, -1), (1.85, 0), (-0.53, 0), (-8.88, -1)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-110 (seconds)", "single-node", [(-2.33, -1), (1.51, 0), (0.59, 0), (-4.92, -1)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-141 (seconds)", "single-node", [(-2.47, -1), (1.15, 0), (0.24, 0), (-3.56, -1)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-172 (seconds)", "single-node", [(-0.91, 0), (1.48, 0), (0.45, 0), (-1.93, 0)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-203 (seconds)", "single-node", [(-1.29, 0), (0.77, 0), (0.40, 0), (-1.41, 0)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-234 (seconds)", "single-node", [(-1.03, 0), (0.77, 0), (0.65, 0), (-1.21, 0)]),
    ("mmtests/hackbench", "hackbench-thread-pipes-256 (seconds)", "single-node", [(-0.80, 0), (0.42, 0), (0.30, 0), (-0.92, 0)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-1 (seconds)", "single-node", [(0.05, 0), (-0.05, 0), (-0.43, 0), (-0.05, 0)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-4 (seconds)", "single-node", [(18.91, 1), (16.82, 1), (19.79, 1), (19.30, 1)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-7 (seconds)", "single-node", [(12.57, 1), (10.63, 1), (12.95, 1), (11.90, 1)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-12 (seconds)", "single-node", [(12.65, 1), (12.26, 1), (13.90, 1), (11.66, 1)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-21 (seconds)", "single-node", [(11.62, 1), (12.74, 1), (13.89, 1), (11.06, 1)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-30 (seconds)", "single-node", [(7.35, 1), (8.89, 1), (9.51, 1), (6.58, 1)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-48 (seconds)", "single-node", [(2.69, 1), (3.06, 1), (3.74, 1), (1.92, 0)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-79 (seconds)", "single-node", [(3.30, 1), (1.98, 0), (2.76, 1), (-0.20, 0)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-110 (seconds)", "single-node", [(-0.25, 0), (3.68, 1), (0.44, 0), (-0.41, 0)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-141 (seconds)", "single-node", [(-2.18, -1), (8.46, 1), (1.51, 0), (-1.01, 0)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-172 (seconds)", "single-node", [(1.02, 0), (24.33, 1), (1.38, 0), (1.33, 0)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-203 (seconds)", "single-node", [(-0.99, 0), (24.20, 1), (0.57, 0), (0.72, 0)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-234 (seconds)", "single-node", [(-0.42, 0), (24.35, 1), (0.72, 0), (1.00, 0)]),
    ("mmtests/hackbench", "hackbench-thread-sockets-256 (seconds)", "single-node", [(-1.30, 0), (26.22, 1), (0.81, 0), (1.22, 0)]),
];
/// Ryan's schbench table (SRC_RYAN_SCHBENCH), "revert-next-buddy" against
/// 6.19-rc1: (-m, -t, metric, % change better positive, marked (R)/(I)).
const RYAN_SCHBENCH: &[(u64, u64, &str, f64, bool)] = &[
    (16, 1, "avg_rps", -6.43, false),
    (16, 1, "req_latency_p99", -0.28, false),
    (16, 1, "wakeup_latency_p99", 0.00, false),
    (16, 4, "avg_rps", -10.99, false),
    (16, 4, "req_latency_p99", -0.39, false),
    (16, 4, "wakeup_latency_p99", -16.67, true),
    (16, 16, "avg_rps", -1.57, false),
    (16, 16, "req_latency_p99", 15.46, false),
    (16, 16, "wakeup_latency_p99", -5.97, false),
    (16, 64, "avg_rps", 3.21, false),
    (16, 64, "req_latency_p99", 2.92, false),
    (16, 64, "wakeup_latency_p99", -2.87, false),
    (32, 1, "avg_rps", 2.58, false),
    (32, 1, "req_latency_p99", 0.00, false),
    (32, 1, "wakeup_latency_p99", 0.00, false),
    (32, 4, "avg_rps", 5.18, false),
    (32, 4, "req_latency_p99", 8.22, false),
    (32, 4, "wakeup_latency_p99", -5.34, true),
    (32, 16, "avg_rps", 2.91, false),
    (32, 16, "req_latency_p99", 13.76, true),
    (32, 16, "wakeup_latency_p99", 0.24, false),
    (32, 64, "avg_rps", 3.42, false),
    (32, 64, "req_latency_p99", 5.82, true),
    (32, 64, "wakeup_latency_p99", -3.22, false),
    (64, 1, "avg_rps", 5.02, false),
    (64, 1, "req_latency_p99", 0.42, false),
    (64, 1, "wakeup_latency_p99", -4.35, false),
    (64, 4, "avg_rps", -1.38, false),
    (64, 4, "req_latency_p99", 13.73, false),
    (64, 4, "wakeup_latency_p99", -10.44, false),
    (64, 16, "avg_rps", 4.60, false),
    (64, 16, "req_latency_p99", 2.67, true),
    (64, 16, "wakeup_latency_p99", -5.48, true),
    (64, 64, "avg_rps", 2.65, false),
    (64, 64, "req_latency_p99", 10.95, true),
    (64, 64, "wakeup_latency_p99", -1.94, false),
];

/// The column pairs of Ryan's table the study has: (base column, variant
/// column, base config, variant config).
const RYAN_PAIRS: &[(usize, usize, &str, &str)] = &[
    (2, 0, "nb-off", "nb+inelig"),
    (2, 3, "nb-off", "off+inelig"),
    (3, 0, "off+inelig", "nb+inelig"),
];

fn ryan_target(bench: &str, class: &str) -> (String, u64, Target) {
    if bench == "mmtests/hackbench" {
        // "hackbench-process-pipes-12 (seconds)"
        let name = class.split(' ').next().unwrap_or(class);
        let (title, g) = name.rsplit_once('-').unwrap_or((name, "0"));
        let g: u64 = g.parse().unwrap_or(0);
        let title = HB_TITLES.iter().find(|t| **t == title).copied();
        return match title {
            Some(t) => (
                format!("{t} time"),
                g,
                Target::Point {
                    title: t,
                    machine: "graviton3",
                    value: g,
                    metric: "time_s",
                },
            ),
            None => (
                class.to_string(),
                g,
                Target::NotModelled("unknown hackbench"),
            ),
        };
    }
    if bench == "pts/pgbench" {
        // "Scale: 1 Clients: 250 Read Only - Latency (ms)"
        let w: Vec<&str> = class.split_whitespace().collect();
        let scale: u64 = w.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let clients: u64 = w.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
        let ro = class.contains("Read Only");
        let lat = class.contains("Latency");
        let label = format!(
            "pgbench {} s{} {}",
            if ro { "ro" } else { "rw" },
            scale,
            if lat { "latency" } else { "tps" }
        );
        let t = if !ro {
            Target::NotModelled("read-write pgbench is not in the study")
        } else if scale != 1 {
            Target::NotModelled("the pgbench model has no scale factor (scale 1 rows are mapped)")
        } else {
            Target::Point {
                title: "pgbench-ro",
                machine: "graviton3",
                value: clients,
                metric: if lat { "latency_ms" } else { "tps" },
            }
        };
        return (label, clients, t);
    }
    (
        format!("{bench} {class}"),
        0,
        Target::NotModelled("no such workload in the simulator"),
    )
}

const HB_TITLES: &[&str] = &[
    "hackbench-process-pipes",
    "hackbench-process-sockets",
    "hackbench-thread-pipes",
    "hackbench-thread-sockets",
];

/// The clear rows of Ryan's Graviton3 table, for each pair the study has.
pub fn ryan_rows() -> Vec<Row> {
    let mut out = Vec::new();
    for &(bi, vi, base, variant) in RYAN_PAIRS {
        for &(bench, class, sut, cols) in RYAN {
            let hb = !(class.contains("seconds") || class.contains("Latency"));
            let (b, v) = (cols[bi], cols[vi]);
            let ch = ryan_change(v.0, b.0, hb);
            if !is_clear(ch, b.1 != 0 || v.1 != 0) {
                continue;
            }
            let (label, param, target) = ryan_target(bench, class);
            let label = if bench.starts_with("repro") || bench.starts_with("specjbb") {
                format!("{label} ({sut})")
            } else {
                label
            };
            out.push(Row {
                source: SRC_RYAN,
                machine: "Graviton3",
                workload: label,
                param,
                base,
                variant,
                published: (ch * 100.0).round() / 100.0,
                target,
            });
        }
    }
    out
}

/// One of Mel's tables: (label, study item, metric, rows).
type MelTable = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(u64, f64, bool)],
);

/// How many samples a published table's row rests on, per study sweep:
/// (item title prefix, machine preset, samples per point when the cited
/// sources fix it, the source). `sim study --samples published` runs each
/// sweep with that many seeds ([`published_samples`]); a sweep whose count
/// the sources do not fix keeps the study's `--seeds` (5). The counts come
/// from mmtests (github.com/gormanm/mmtests) as of commit cba7cac7
/// (2025-06-06), its last before Mel Gorman's v1 of 2025-07-14, and unchanged
/// in it until after the reports (at 02ffbdca, 2026-01-15); they were fixed
/// from those files, not from any score.
pub const PUBLISHED_SAMPLES: &[(&str, &str, Option<u64>, &str)] = &[
    (
        "hackbench-",
        "cascadelake-2s",
        Some(3),
        "Mel Gorman's hackbench tables: mmtests configs/config-scheduler-hackbench sets HACKBENCH_ITERATIONS=3, shellpacks' hackbench-bench runs that many `perf bench sched messaging` per group count, ExtractHackbench takes each one's total time as a sample; run-mmtests.sh's MMTEST_ITERATIONS defaults to 1",
    ),
    (
        "dbench-bound",
        "cascadelake-2s",
        Some(120),
        "Mel Gorman's dbench4 throughput table: mmtests configs/config-io-dbench4-async runs one dbench of DBENCH_DURATION_BASE=120 s per client count; dbench prints its throughput once a second (dbench.c, PRINT_FREQ 1) and ExtractDbench4tput takes each line as a sample. Those 120 are running averages of one run, not 120 runs: seeds give the test more independent samples than the published one had",
    ),
    (
        "dbench",
        "cascadelake-2s",
        None,
        "the unbound dbench model of the same table: no scored row uses it (Mel's rows are scored on dbench-bound), so it keeps --seeds rather than double the option's time",
    ),
    (
        "hackbench-",
        "graviton3",
        None,
        "Ryan Roberts' table: mmtests hackbench (3 per invocation, as above), but how many invocations his harness pools into a column and its (R)/(I) interval is not fixed by mmtests' files, and is not recorded with his rows here",
    ),
    (
        "pgbench",
        "graviton3",
        None,
        "Ryan Roberts' table: pts/pgbench (the Phoronix Test Suite, not mmtests); its run count is not in the sources cited here",
    ),
    (
        "schbench",
        "graviton3",
        None,
        "no scored row (Ryan's schbench rows are not modelled)",
    ),
];

/// The published sample count of a sweep and its source ([`PUBLISHED_SAMPLES`]);
/// `None` when no entry names it.
pub fn published_count(title: &str, machine: &str) -> Option<(Option<u64>, &'static str)> {
    PUBLISHED_SAMPLES
        .iter()
        .find(|(prefix, m, _, _)| title.starts_with(prefix) && *m == machine)
        .map(|(_, _, n, src)| (*n, *src))
}

/// Sets each sweep of `study` to its published sample count
/// ([`PUBLISHED_SAMPLES`]); a sweep without one keeps the study's seeds.
/// Returns one line per sweep: its seeds and why.
pub fn published_samples(study: &mut Study) -> Vec<String> {
    let seeds = study.seeds;
    study
        .items
        .iter_mut()
        .map(|it| {
            let (n, src) =
                published_count(&it.title, &it.machine).unwrap_or((None, "no published table"));
            it.seeds = n;
            match n {
                Some(n) => format!("{}@{}: {n} (published) - {src}", it.title, it.machine),
                None => format!(
                    "{}@{}: {seeds} (the study's; not published) - {src}",
                    it.title, it.machine
                ),
            }
        })
        .collect()
}

/// The clear rows of Mel's CascadeLake tables (vanilla 6.16-rc5 against his
/// v1, which had the ineligible-waker rule: `nb-off` against `nb+inelig`).
pub fn mel_rows() -> Vec<Row> {
    let mut out = Vec::new();
    let tables: [MelTable; 3] = [
        (
            "dbench4 throughput",
            "dbench-bound",
            "throughput_mbs",
            MEL_DBENCH,
        ),
        (
            "hackbench-process-pipes time",
            "hackbench-process-pipes",
            "time_s",
            MEL_PIPES,
        ),
        (
            "hackbench-process-sockets time",
            "hackbench-process-sockets",
            "time_s",
            MEL_SOCKETS,
        ),
    ];
    for (label, title, metric, rows) in tables {
        for &(p, ch, sig) in rows {
            if !is_clear(ch, sig) {
                continue;
            }
            out.push(Row {
                source: SRC_MEL,
                machine: "CascadeLake 2s",
                workload: label.to_string(),
                param: p,
                base: "nb-off",
                variant: "nb+inelig",
                published: ch,
                target: Target::Point {
                    title,
                    machine: "cascadelake-2s",
                    value: p,
                    metric,
                },
            });
        }
    }
    out
}

/// The clear rows of Ryan's schbench table (rc1 against the rework
/// reverted, old NEXT_BUDDY on): not modelled.
pub fn schbench_rows() -> Vec<Row> {
    RYAN_SCHBENCH
        .iter()
        .filter(|r| is_clear(r.3, r.4))
        .map(|&(m, t, metric, ch, _)| Row {
            source: SRC_RYAN_SCHBENCH,
            machine: "Graviton3",
            workload: format!("schbench -m {m} -t {t} {metric}"),
            param: t,
            base: "nb+inelig",
            variant: "old-nb",
            published: ch,
            target: Target::NotModelled(
                "the base keeps the old NEXT_BUDDY on (only the rework reverted); the simulator has no old NEXT_BUDDY",
            ),
        })
        .collect()
}

/// Every clear published row: Mel's, Ryan's, Ryan's schbench.
pub fn clear_rows() -> Vec<Row> {
    let mut v = mel_rows();
    v.extend(ryan_rows());
    v.extend(schbench_rows());
    v
}

/// The study point of a target: (item, value index, the value run), the
/// value being the published one or the nearest in the sweep within 10%.
pub fn resolve(study: &Study, t: &Target) -> Option<(usize, usize, u64)> {
    let Target::Point {
        title,
        machine,
        value,
        ..
    } = t
    else {
        return None;
    };
    let ii = study
        .items
        .iter()
        .position(|it| it.title == *title && it.machine == *machine)?;
    let (vi, v) = study.items[ii]
        .values
        .iter()
        .enumerate()
        .min_by_key(|(_, v)| v.abs_diff(*value))?;
    (v.abs_diff(*value) * 10 <= *value).then_some((ii, vi, *v))
}

/// The simulator's side of one row.
#[derive(Clone, Debug, PartialEq)]
pub struct SimChange {
    /// The parameter value run.
    pub value: u64,
    /// Change of the variant's mean against the base's, %, better positive.
    pub pct: f64,
    /// Welch's p.
    pub p: f64,
    /// The 95% confidence interval of the change, %, better positive:
    /// Fieller's interval for the ratio of the arithmetic means
    /// ([`stats::change_ci`]), which excludes 0 exactly when `p < 0.05`;
    /// unbounded when the base mean is not significantly away from 0, not
    /// available with fewer than 2 samples on a side.
    pub ci: ChangeCi,
}

/// One scored row.
#[derive(Clone, Debug, PartialEq)]
pub struct Scored {
    /// The row.
    pub row: Row,
    /// The simulator's change; `None` when not modelled or not run.
    pub sim: Option<SimChange>,
    /// Why there is none.
    pub why_not: Option<String>,
}

impl Scored {
    /// The verdict (`None` when not scored).
    pub fn verdict(&self) -> Option<Verdict> {
        self.sim
            .as_ref()
            .map(|s| verdict(self.row.published, s.pct, s.p < 0.05))
    }
    /// Within 2x (`None` when not scored).
    pub fn within_2x(&self) -> Option<bool> {
        self.sim
            .as_ref()
            .map(|s| within_2x(self.row.published, s.pct))
    }
    /// Whether the published change lies inside the simulator's 95%
    /// interval (`None` when not scored or the interval is unbounded).
    pub fn published_in_ci(&self) -> Option<bool> {
        let (lo, hi) = self.sim.as_ref()?.ci.bounds()?;
        Some(lo <= self.row.published && self.row.published <= hi)
    }
}

/// The samples the scoring needs, per row: (base samples, variant samples,
/// higher is better, the value run), or why there are none.
pub type Lookup<'a> = dyn Fn(&Row) -> Result<(Vec<f64>, Vec<f64>, bool, u64), String> + 'a;

/// Scores rows with samples from `lookup`.
pub fn score_with(rows: &[Row], lookup: &Lookup) -> Vec<Scored> {
    rows.iter()
        .map(|row| {
            if let Target::NotModelled(why) = &row.target {
                return Scored {
                    row: row.clone(),
                    sim: None,
                    why_not: Some(format!("not modelled: {why}")),
                };
            }
            match lookup(row) {
                Ok((b, v, hb, value)) => {
                    let f = if hb { hmean } else { amean };
                    let (bm, vm) = (f(&b), f(&v));
                    let pct = stats::pct_better(bm, vm, hb);
                    Scored {
                        row: row.clone(),
                        sim: Some(SimChange {
                            value,
                            pct,
                            p: welch_p(&b, &v),
                            ci: change_ci(&b, &v, hb),
                        }),
                        why_not: None,
                    }
                }
                Err(e) => Scored {
                    row: row.clone(),
                    sim: None,
                    why_not: Some(e),
                },
            }
        })
        .collect()
}

/// Scores rows against a study's results.
pub fn score(rows: &[Row], r: &Results) -> Vec<Scored> {
    let st = &r.study;
    let cfg = |n: &str| st.configs.iter().position(|c| c.name == n);
    score_with(rows, &|row: &Row| {
        let Some((ii, vi, value)) = resolve(st, &row.target) else {
            return Err("not run: no study point within 10% of this value".into());
        };
        let (Some(bc), Some(vc)) = (cfg(row.base), cfg(row.variant)) else {
            return Err(format!(
                "not run: the study has no {} or {} configuration",
                row.base, row.variant
            ));
        };
        let Target::Point { metric, .. } = &row.target else {
            unreachable!("resolve found a point");
        };
        let b = r.values(ii, vi, bc, metric);
        let v = r.values(ii, vi, vc, metric);
        if b.is_empty() || v.is_empty() {
            return Err(format!("not run: no {metric} samples"));
        }
        Ok((b, v, r.higher_better(metric), value))
    })
}

/// Verdict counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Rows.
    pub rows: usize,
    /// Agree.
    pub agree: usize,
    /// Null.
    pub null: usize,
    /// Opposite.
    pub opposite: usize,
    /// Agree and within 2x.
    pub agree_2x: usize,
    /// Not modelled.
    pub not_modelled: usize,
    /// Not run (a size or value beyond the sweep).
    pub not_run: usize,
}

/// The counts of a scored table.
pub fn totals(s: &[Scored]) -> Totals {
    let mut t = Totals {
        rows: s.len(),
        ..Totals::default()
    };
    for x in s {
        match x.verdict() {
            Some(Verdict::Agree) => {
                t.agree += 1;
                if x.within_2x() == Some(true) {
                    t.agree_2x += 1;
                }
            }
            Some(Verdict::Null) => t.null += 1,
            Some(Verdict::Opposite) => t.opposite += 1,
            None if matches!(x.row.target, Target::NotModelled(_)) => t.not_modelled += 1,
            None => t.not_run += 1,
        }
    }
    t
}

impl Totals {
    /// One line.
    pub fn line(&self) -> String {
        format!(
            "{} clear rows: {} scored: agree {} (within 2x: {}), null {}, opposite {}; not modelled {}, not run {}",
            self.rows,
            self.agree + self.null + self.opposite,
            self.agree,
            self.agree_2x,
            self.null,
            self.opposite,
            self.not_modelled,
            self.not_run
        )
    }
}

fn target_text(t: &Target) -> String {
    match t {
        Target::Point { title, machine, .. } => format!("{title}@{machine}"),
        Target::NotModelled(_) => "-".into(),
    }
}

/// `yes`, `no`, or `-` for none.
fn yes_no(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

/// The two ends of an interval for CSV (empty when none).
fn ci_csv(ci: ChangeCi) -> (String, String) {
    ci.bounds()
        .map_or((String::new(), String::new()), |(lo, hi)| {
            (lo.to_string(), hi.to_string())
        })
}

/// The score table.
pub fn score_table(s: &[Scored]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Score against the published tables (clear rows; change %, better positive; sim * = Welch p < 0.05; 95% CI = Fieller's interval of the change, Welch df, excluding 0 exactly when *; in = pub% inside it; 2x = |sim| within a factor 2, same sign)"
    );
    let _ = writeln!(
        o,
        "{:<3} {:<40} {:>5} {:<22} {:>8}  {:<34} {:>5} {:>9} {:>8} {:>21} {:<3} {:<8} {:<3} source",
        "#",
        "published workload",
        "param",
        "pair (base>variant)",
        "pub%",
        "study point",
        "run",
        "sim%",
        "p",
        "95% CI",
        "in",
        "verdict",
        "2x"
    );
    for (k, x) in s.iter().enumerate() {
        let r = &x.row;
        let _ = write!(
            o,
            "{:<3} {:<40} {:>5} {:<22} {:>+8.2}  {:<34} ",
            k + 1,
            format!("{} {}", r.machine, r.workload),
            r.param,
            format!("{}>{}", r.base, r.variant),
            r.published,
            target_text(&r.target)
        );
        match (&x.sim, x.verdict()) {
            (Some(sc), Some(v)) => {
                let _ = write!(
                    o,
                    "{:>5} {:>+8.2}{} {:>8.4} {:>21} {:<3} {:<8} {:<3}",
                    sc.value,
                    sc.pct,
                    if sc.p < 0.05 { "*" } else { " " },
                    sc.p,
                    sc.ci,
                    yes_no(x.published_in_ci()),
                    v.name(),
                    yes_no(x.within_2x())
                );
            }
            _ => {
                let _ = write!(o, "{}", x.why_not.as_deref().unwrap_or("-"));
            }
        }
        let _ = writeln!(o, " {}", r.source);
    }
    let _ = writeln!(o, "{}", totals(s).line());
    o
}

/// The score as CSV.
pub fn score_csv(s: &[Scored]) -> String {
    let mut o = String::from(
        "row,source,machine,workload,param,base,variant,published_pct,study_item,study_machine,value_run,sim_pct,p,verdict,within_2x,why_not,ci_lo_pct,ci_hi_pct,published_in_ci\n",
    );
    for (k, x) in s.iter().enumerate() {
        let r = &x.row;
        let (ti, tm) = match &r.target {
            Target::Point { title, machine, .. } => (*title, *machine),
            Target::NotModelled(_) => ("", ""),
        };
        let (vr, sp, p) = match &x.sim {
            Some(sc) => (sc.value.to_string(), sc.pct.to_string(), sc.p.to_string()),
            None => (String::new(), String::new(), String::new()),
        };
        let (lo, hi) = ci_csv(x.sim.as_ref().map_or(ChangeCi::NotAvailable, |sc| sc.ci));
        let _ = writeln!(
            o,
            "{},{},{},\"{}\",{},{},{},{},{},{},{},{},{},{},{},\"{}\",{},{},{}",
            k + 1,
            r.source,
            r.machine,
            r.workload,
            r.param,
            r.base,
            r.variant,
            r.published,
            ti,
            tm,
            vr,
            sp,
            p,
            x.verdict().map_or("", |v| v.name()),
            x.within_2x().map_or("", |w| if w { "yes" } else { "no" }),
            x.why_not.as_deref().unwrap_or("").replace('"', "'"),
            lo,
            hi,
            x.published_in_ci()
                .map_or("", |w| if w { "yes" } else { "no" })
        );
    }
    o
}

/// The score as JSON.
pub fn score_json(s: &[Scored]) -> String {
    let t = totals(s);
    let mut o = format!(
        "{{\n  \"totals\": {{\"rows\": {}, \"agree\": {}, \"agree_within_2x\": {}, \"null\": {}, \"opposite\": {}, \"not_modelled\": {}, \"not_run\": {}}},\n  \"rows\": [\n",
        t.rows, t.agree, t.agree_2x, t.null, t.opposite, t.not_modelled, t.not_run
    );
    for (k, x) in s.iter().enumerate() {
        let r = &x.row;
        let sim = match &x.sim {
            Some(sc) => format!(
                "{{\"value\": {}, \"pct\": {}, \"p\": {}, \"ci_lo_pct\": {}, \"ci_hi_pct\": {}}}",
                sc.value,
                sc.pct,
                sc.p,
                sc.ci.bounds().map_or("null".into(), |c| c.0.to_string()),
                sc.ci.bounds().map_or("null".into(), |c| c.1.to_string())
            ),
            None => "null".into(),
        };
        let _ = writeln!(
            o,
            "    {{\"source\": {}, \"machine\": {}, \"workload\": {}, \"param\": {}, \"base\": {}, \"variant\": {}, \"published_pct\": {}, \"target\": {}, \"sim\": {}, \"verdict\": {}, \"within_2x\": {}, \"published_in_ci\": {}, \"why_not\": {}}}{}",
            json_str(r.source),
            json_str(r.machine),
            json_str(&r.workload),
            r.param,
            json_str(r.base),
            json_str(r.variant),
            r.published,
            json_str(&target_text(&r.target)),
            sim,
            x.verdict().map_or("null".into(), |v| json_str(v.name())),
            x.within_2x().map_or("null", |w| if w { "true" } else { "false" }),
            x.published_in_ci()
                .map_or("null", |w| if w { "true" } else { "false" }),
            x.why_not.as_deref().map_or("null".into(), json_str),
            if k + 1 < s.len() { "," } else { "" }
        );
    }
    o.push_str("  ]\n}\n");
    o
}

/// The ablation variants: every mechanism on (`all`, each preset's own),
/// then each `--no-...` flag of [`crate::machine::MECHANISM_FLAGS`] alone.
pub fn ablation_variants() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut v = vec![("all", Vec::new())];
    for (f, _) in crate::machine::MECHANISM_FLAGS {
        v.push((*f, vec![*f]));
    }
    v
}

/// Whether the ablation of `base` can score `r`: its point is in the
/// sweep (item index, value run) and both configurations of its pair are
/// in the study.
fn scorable(base: &Study, r: &Row) -> Option<(usize, u64)> {
    let (ii, _, v) = resolve(base, &r.target)?;
    let has = |n: &str| base.configs.iter().any(|c| c.name == n);
    (has(r.base) && has(r.variant)).then_some((ii, v))
}

/// The study the ablation runs: only the points the clear rows of `base`
/// resolve to, only the configurations their pairs name (the baseline
/// `nb-off` first), the same seeds, sizes and mechanisms turned off.
pub fn ablation_study(base: &Study, rows: &[Row]) -> Study {
    let mut need: Vec<(usize, u64)> = Vec::new();
    let mut cfgs: Vec<&str> = Vec::new();
    for r in rows {
        if let Some((ii, v)) = scorable(base, r) {
            need.push((ii, v));
            for c in [r.base, r.variant] {
                if !cfgs.contains(&c) {
                    cfgs.push(c);
                }
            }
        }
    }
    let mut items = Vec::new();
    for (ii, it) in base.items.iter().enumerate() {
        let values: Vec<u64> = it
            .values
            .iter()
            .copied()
            .filter(|v| need.contains(&(ii, *v)))
            .collect();
        if !values.is_empty() {
            let mut it = it.clone();
            it.values = values;
            items.push(it);
        }
    }
    // The base's order of configurations (its baseline first).
    let configs = base
        .configs
        .iter()
        .filter(|c| cfgs.contains(&c.name.as_str()))
        .cloned()
        .collect();
    Study {
        items,
        configs,
        seeds: base.seeds,
        scale: base.scale,
        mechanisms_off: base.mechanisms_off.clone(),
    }
}

/// Whether turning `off` changes the mechanisms of any machine of `study`
/// as they act there ([`crate::machine::Machine::effective_mech`], with
/// the study's own mechanisms off: a mechanism a preset does not model,
/// that cannot act on it, or that the study turned off, is off already;
/// then the runs are the same runs, and the ablation reuses `all`'s). The
/// workload-bound flags count only on an item whose workload reads them:
/// the row locks (`Mechanisms::row_lock`) on read-write pgbench, the
/// kworker pool's concurrency management (`Mechanisms::wq_concurrency`)
/// on dbench with bound workers (`DbenchCfg::bound`), the syscalls' return
/// to user space before their decision (`Mechanisms::syscall_user_return`)
/// on hackbench.
pub fn changes_mechanisms(study: &Study, off: &[&str]) -> Result<bool, String> {
    let base = &study.mechanisms_off;
    let both: Vec<&str> = base.iter().chain(off).copied().collect();
    for it in &study.items {
        let full = crate::study::study_machine(&it.machine, base)?;
        let (mut rw, mut bound, mut hb) = (false, false, false);
        for &v in &it.values {
            match (it.make)(v, &full, &study.scale) {
                WorkSpec::Pgbench(c) => rw |= c.rw,
                WorkSpec::Dbench(c) => bound |= c.bound,
                WorkSpec::Hackbench(_) => hb = true,
                _ => {}
            }
        }
        let full = full.effective_mech();
        let mut less = crate::study::study_machine(&it.machine, &both)?.effective_mech();
        if !rw {
            less.row_lock = full.row_lock;
        }
        if !bound {
            less.wq_concurrency = full.wq_concurrency;
        }
        if !hb {
            less.syscall_user_return = full.syscall_user_return;
        }
        if full != less {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The ablation's scores: per variant, its name, whether it was run (else
/// `all`'s runs stand for it), and the scored rows.
pub type Ablation = Vec<(&'static str, bool, Vec<Scored>)>;

/// A variant's number in the full ablation (`v0` = `all`, then the order of
/// [`crate::machine::MECHANISM_FLAGS`]): a subset (`--mechanisms`) keeps
/// the numbers, so its columns read as the full table's. `None` for a
/// name that is no variant.
pub fn variant_number(name: &str) -> Option<usize> {
    ablation_variants().iter().position(|(n, _)| *n == name)
}

/// The label of the `k`th variant of `ab` in the table: `v` and its
/// [`variant_number`], or `k` for a name that is no variant.
fn variant_label(ab: &Ablation, k: usize) -> String {
    format!("v{}", variant_number(ab[k].0).unwrap_or(k))
}

fn letter(v: Option<Verdict>) -> &'static str {
    match v {
        Some(Verdict::Agree) => "A",
        Some(Verdict::Null) => ".",
        Some(Verdict::Opposite) => "O",
        None => "-",
    }
}

/// The ablation table: per scored row its verdict under each variant (`A`
/// agree, `.` null, `O` opposite; `!` after a verdict that differs from
/// `all`'s), then the counts per variant.
pub fn ablation_table(ab: &Ablation) -> String {
    let mut o = String::new();
    let Some((_, _, all)) = ab.first() else {
        return o;
    };
    let _ = writeln!(
        o,
        "Ablation: verdict per clear row with every mechanism (all) and with each turned off (A agree, . null, O opposite, ! differs from all)"
    );
    let _ = write!(
        o,
        "{:<3} {:<44} {:>5} {:<22} {:>8}",
        "#", "row", "param", "pair", "pub%"
    );
    for k in 0..ab.len() {
        let _ = write!(o, " {:>3}", variant_label(ab, k));
    }
    o.push('\n');
    for (k, x) in all.iter().enumerate() {
        if x.sim.is_none() {
            continue;
        }
        let r = &x.row;
        let _ = write!(
            o,
            "{:<3} {:<44} {:>5} {:<22} {:>+8.2}",
            k + 1,
            format!("{} {}", r.machine, r.workload),
            r.param,
            format!("{}>{}", r.base, r.variant),
            r.published
        );
        let v0 = x.verdict();
        for (_, _, s) in ab {
            let v = s[k].verdict();
            let _ = write!(
                o,
                " {:>3}",
                format!("{}{}", letter(v), if v != v0 { "!" } else { " " })
            );
        }
        o.push('\n');
    }
    let _ = writeln!(
        o,
        "\n{:<4} {:<22} {:>5} {:>5} {:>5} {:>8} {:>6} {:>6}  runs",
        "", "variant", "agree", "null", "opp", "agree2x", "->A", "A->"
    );
    for (k, (name, ran, s)) in ab.iter().enumerate() {
        let t = totals(s);
        let to_agree = s
            .iter()
            .zip(all)
            .filter(|(a, b)| {
                a.verdict() == Some(Verdict::Agree) && b.verdict() != Some(Verdict::Agree)
            })
            .count();
        let from_agree = s
            .iter()
            .zip(all)
            .filter(|(a, b)| {
                a.verdict() != Some(Verdict::Agree) && b.verdict() == Some(Verdict::Agree)
            })
            .count();
        let _ = writeln!(
            o,
            "{:<4} {:<22} {:>5} {:>5} {:>5} {:>8} {:>6} {:>6}  {}",
            variant_label(ab, k),
            name,
            t.agree,
            t.null,
            t.opposite,
            t.agree_2x,
            to_agree,
            from_agree,
            if *ran {
                "run"
            } else {
                "not run: it cannot act on these points' machines or workloads (same runs as all)"
            }
        );
    }
    let _ = writeln!(
        o,
        "(->A: rows that agree with it off and not with all; A->: rows that agree with all and not with it off)"
    );
    o
}

/// The ablation as CSV: one line per (variant, row).
pub fn ablation_csv(ab: &Ablation) -> String {
    let mut o = String::from(
        "variant,ran,row,workload,param,base,variant_config,published_pct,sim_pct,p,verdict,ci_lo_pct,ci_hi_pct\n",
    );
    for (name, ran, s) in ab {
        for (k, x) in s.iter().enumerate() {
            let Some(sc) = &x.sim else { continue };
            let r = &x.row;
            let (lo, hi) = ci_csv(sc.ci);
            let _ = writeln!(
                o,
                "{name},{ran},{},\"{} {}\",{},{},{},{},{},{},{},{},{}",
                k + 1,
                r.machine,
                r.workload,
                r.param,
                r.base,
                r.variant,
                r.published,
                sc.pct,
                sc.p,
                x.verdict().map_or("", |v| v.name()),
                lo,
                hi
            );
        }
    }
    o
}

/// The names `--mechanisms` takes: each flag of
/// [`crate::machine::MECHANISM_FLAGS`] without its `--no-` (`wake-cost` for
/// `--no-wake-cost`).
pub fn mechanism_names() -> Vec<&'static str> {
    crate::machine::MECHANISM_FLAGS
        .iter()
        .map(|(f, _)| f.trim_start_matches("--no-"))
        .collect()
}

/// Parses `--mechanisms LIST` (comma-separated [`mechanism_names`], or the
/// flags themselves, `--no-wake-cost`) into flags. An unknown or repeated
/// name is an error that lists the accepted ones.
pub fn parse_mechanisms(list: &str) -> Result<Vec<&'static str>, String> {
    let names = mechanism_names();
    let mut out: Vec<&'static str> = Vec::new();
    for w in list.split(',') {
        let w = w.trim();
        let name = w.strip_prefix("--no-").unwrap_or(w);
        let Some(k) = names.iter().position(|n| *n == name) else {
            return Err(format!(
                "--mechanisms: unknown mechanism '{w}' (accepted: {}; `all` always runs)",
                names.join(", ")
            ));
        };
        let flag = crate::machine::MECHANISM_FLAGS[k].0;
        if out.contains(&flag) {
            return Err(format!("--mechanisms: '{name}' given twice"));
        }
        out.push(flag);
    }
    Ok(out)
}

/// 0-based indices as 1-based numbers with runs joined: `1-7, 9, 12-20`.
fn number_ranges(ix: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < ix.len() {
        let mut e = k;
        while e + 1 < ix.len() && ix[e + 1] == ix[e] + 1 {
            e += 1;
        }
        parts.push(if e == k {
            format!("{}", ix[k] + 1)
        } else {
            format!("{}-{}", ix[k] + 1, ix[e] + 1)
        });
        k = e + 1;
    }
    parts.join(", ")
}

/// Which command a `--rows LIST` is for: the words of its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowsFor {
    /// `sim study --rows`: the study cut to the rows' points.
    Study,
    /// `sim study --ablation --rows`: the ablation's rows.
    Ablation,
}

impl RowsFor {
    /// What scores the rows, as the errors say it.
    pub fn scorer(self) -> &'static str {
        match self {
            RowsFor::Study => "this study",
            RowsFor::Ablation => "this ablation",
        }
    }
}

/// [`parse_rows_for`] for the ablation (`sim study --ablation --rows`).
pub fn parse_rows(list: &str, base: &Study, rows: &[Row]) -> Result<Vec<usize>, String> {
    parse_rows_for(list, base, rows, RowsFor::Ablation)
}

/// Parses `--rows LIST` against the study `base` over `rows` (the clear
/// rows), for the command `mode` names: each entry is a row number (the
/// `#` column of the score and ablation tables, 1-based), a range `N-M` of
/// them, or a study point `TITLE@MACHINE` (`dbench-bound@cascadelake-2s`),
/// or `TITLE` for it on every machine. Returns the chosen rows' 0-based
/// indices, sorted. A single row `base` cannot score (not modelled, not
/// run), a range with none it can score, or an unknown point is an error
/// that lists the accepted numbers and points; a range keeps only the rows
/// it can score. The errors name what scores the rows
/// ([`RowsFor::scorer`]).
pub fn parse_rows_for(
    list: &str,
    base: &Study,
    rows: &[Row],
    mode: RowsFor,
) -> Result<Vec<usize>, String> {
    let by = mode.scorer();
    let ok: Vec<usize> = (0..rows.len())
        .filter(|&k| scorable(base, &rows[k]).is_some())
        .collect();
    let points: Vec<String> = ablation_study(base, rows)
        .items
        .iter()
        .map(|it| format!("{}@{}", it.title, it.machine))
        .collect();
    let accepted = || {
        format!(
            "accepted: row numbers {} (the # column of the score and ablation tables), ranges N-M, or the study points {} (TITLE@MACHINE, or TITLE on every machine)",
            if ok.is_empty() { "(none)".to_string() } else { number_ranges(&ok) },
            if points.is_empty() { "(none)".to_string() } else { points.join(", ") }
        )
    };
    let why = |k: usize| match (&rows[k].target, resolve(base, &rows[k].target)) {
        (Target::NotModelled(w), _) => format!("not modelled: {w}"),
        (Target::Point { .. }, None) => {
            "not run: no study point within 10% of its value".to_string()
        }
        (Target::Point { .. }, Some(_)) => format!(
            "not run: the study has no {} or {} configuration",
            rows[k].base, rows[k].variant
        ),
    };
    let number = |w: &str| w.parse::<usize>().ok();
    let mut out: Vec<usize> = Vec::new();
    for w in list.split(',') {
        let w = w.trim();
        let range = w
            .split_once('-')
            .and_then(|(a, b)| Some((number(a)?, number(b)?)));
        let chosen: Vec<usize> = if let Some(n) = number(w) {
            if n == 0 || n > rows.len() {
                return Err(format!("--rows: no row {n} ({})", accepted()));
            }
            if !ok.contains(&(n - 1)) {
                return Err(format!(
                    "--rows: row {n} is not scored by {by} ({}; {})",
                    why(n - 1),
                    accepted()
                ));
            }
            vec![n - 1]
        } else if let Some((a, b)) = range {
            if a == 0 || a > b || b > rows.len() {
                return Err(format!(
                    "--rows: bad range '{w}' (rows are 1-{}; {})",
                    rows.len(),
                    accepted()
                ));
            }
            let v: Vec<usize> = ok
                .iter()
                .copied()
                .filter(|k| (a - 1..b).contains(k))
                .collect();
            if v.is_empty() {
                return Err(format!(
                    "--rows: no row in {w} is scored by {by} ({})",
                    accepted()
                ));
            }
            v
        } else {
            let (title, machine) = match w.split_once('@') {
                Some((t, m)) => (t, Some(m)),
                None => (w, None),
            };
            let v: Vec<usize> = ok
                .iter()
                .copied()
                .filter(|&k| match &rows[k].target {
                    Target::Point {
                        title: t,
                        machine: m,
                        ..
                    } => *t == title && machine.is_none_or(|x| x == *m),
                    Target::NotModelled(_) => false,
                })
                .collect();
            if v.is_empty() {
                return Err(format!("--rows: unknown row '{w}' ({})", accepted()));
            }
            v
        };
        for k in chosen {
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Which parts of the ablation to run (`sim study --ablation --mechanisms
/// LIST --rows LIST`). `all` always runs: every verdict is read against it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AblationSubset {
    /// The flags whose variants run besides `all` ([`parse_mechanisms`]);
    /// `None`: every one.
    pub mechanisms: Option<Vec<&'static str>>,
    /// The rows to score, 0-based indices into [`clear_rows`]
    /// ([`parse_rows`]); `None`: every row the study can score.
    pub rows: Option<Vec<usize>>,
}

/// One variant of an ablation plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedVariant {
    /// Its number in the full ablation ([`variant_number`]).
    pub number: usize,
    /// Its name (`all`, or the flag).
    pub name: &'static str,
    /// The flags it turns off.
    pub off: Vec<&'static str>,
    /// Whether it runs (else the mechanism cannot act on any machine or
    /// workload of the points, [`changes_mechanisms`], and `all`'s runs
    /// stand for it).
    pub ran: bool,
}

/// What an ablation of `base` over `rows` (the clear rows) with `subset`
/// runs: the study (only the chosen rows' points and configurations; with
/// no `--rows` the [`ablation_study`] of every row) and the variants (`all`
/// first, then the chosen flags in the order of
/// [`crate::machine::MECHANISM_FLAGS`]).
pub fn ablation_plan(
    base: &Study,
    rows: &[Row],
    subset: &AblationSubset,
) -> Result<(Study, Vec<PlannedVariant>), String> {
    let st = match &subset.rows {
        None => ablation_study(base, rows),
        Some(ix) => {
            let chosen: Vec<Row> = ix.iter().map(|&k| rows[k].clone()).collect();
            ablation_study(base, &chosen)
        }
    };
    if st.items.is_empty() {
        return Err("no clear row resolves to a point of this study".into());
    }
    let mut variants = Vec::new();
    for (number, (name, off)) in ablation_variants().into_iter().enumerate() {
        let keep = off.is_empty()
            || subset
                .mechanisms
                .as_ref()
                .is_none_or(|m| off.iter().all(|f| m.contains(f)));
        if keep {
            let ran = off.is_empty() || changes_mechanisms(&st, &off)?;
            variants.push(PlannedVariant {
                number,
                name,
                off,
                ran,
            });
        }
    }
    Ok((st, variants))
}

/// How often the ablation reports progress on stderr, at most.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs the ablation of `base` (`sim study --ablation`), or the parts of it
/// `subset` names: prints the table, writes `ablation.txt` and
/// `ablation.csv` under `out`. Progress goes to stderr: the plan, each
/// variant as it starts and ends, and every `PROGRESS_EVERY` the runs
/// done of the variant and of the whole, the elapsed time and the last
/// run's point, configuration, seed and the rows it serves. The output is
/// the same bytes whatever the progress (but the wall time in its first
/// line); a subset's rows and verdicts are the full ablation's lines.
///
/// `study`: the runs of a study just run (`sim study --with-ablation`);
/// the `all` variant's runs are taken from them when they are its runs
/// ([`crate::study::results_for`] says why not otherwise, and then `all`
/// runs), so `all`'s scores are the ones a run of its own gives.
pub fn cmd_ablation(
    base: &Study,
    jobs: usize,
    out: &std::path::Path,
    subset: &AblationSubset,
    study: Option<&Results>,
) -> Result<(), String> {
    let (txt, ab) = run_ablation(base, jobs, subset, study)?;
    out!("{txt}");
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for (name, text) in [("ablation.txt", txt), ("ablation.csv", ablation_csv(&ab))] {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// [`cmd_ablation`]'s runs and scores, nothing printed on stdout or
/// written: the text of `ablation.txt` and the scores per variant.
pub fn run_ablation(
    base: &Study,
    jobs: usize,
    subset: &AblationSubset,
    study: Option<&Results>,
) -> Result<(String, Ablation), String> {
    let rows = clear_rows();
    let (st, variants) = ablation_plan(base, &rows, subset)?;
    let selected = |k: usize| subset.rows.as_ref().is_none_or(|ix| ix.contains(&k));
    // The rows each point serves, for the progress lines.
    let mut point_rows: Vec<Vec<Vec<usize>>> = st
        .items
        .iter()
        .map(|it| vec![Vec::new(); it.values.len()])
        .collect();
    for (k, r) in rows.iter().enumerate() {
        if selected(k) && scorable(&st, r).is_some() {
            if let Some((ii, vi, _)) = resolve(&st, &r.target) {
                point_rows[ii][vi].push(k + 1);
            }
        }
    }
    let points: usize = st.items.iter().map(|it| it.values.len()).sum();
    let per_variant = points * st.configs.len() * st.seeds as usize;
    // `all`'s runs from the study's, when they are its runs.
    let mut reused = match study.map(|r| crate::study::results_for(&st, r)) {
        Some(Ok(r)) => Some(r),
        Some(Err(why)) => {
            errln!("ablation: v0 all runs: the study's runs are not its runs ({why})");
            None
        }
        None => None,
    };
    let to_run = variants.iter().filter(|v| v.ran).count() - usize::from(reused.is_some());
    let total = per_variant * to_run;
    errln!(
        "ablation: {} items, {points} points × {} configs × {} seeds = {per_variant} runs per variant; {} variants, {to_run} to run{}: {total} runs",
        st.items.len(),
        st.configs.len(),
        st.seeds,
        variants.len(),
        if reused.is_some() {
            " (all's runs are the study's)"
        } else {
            ""
        }
    );
    for v in variants.iter().filter(|v| !v.ran) {
        errln!(
            "ablation: v{} {} not run: it cannot act on these points' machines or workloads (Machine::effective_mech, changes_mechanisms; all's runs stand for it)",
            v.number, v.name
        );
    }
    let mask = |mut s: Vec<Scored>| -> Vec<Scored> {
        for (k, x) in s.iter_mut().enumerate() {
            if !selected(k) {
                x.sim = None;
                x.why_not = Some("not selected (--rows)".into());
            }
        }
        s
    };
    let all_from_study = reused.is_some();
    let mut ab: Ablation = Vec::new();
    let mut all_results = None;
    let t0 = std::time::Instant::now();
    let mut before = 0usize;
    let mut nth = 0usize;
    for v in &variants {
        let (n, name) = (v.number, v.name);
        let taken = if v.off.is_empty() {
            reused.take()
        } else {
            None
        };
        let s = if let Some(r) = taken {
            errln!(
                "ablation: v{n} {name}: its {} runs are the study's (the same points, configurations, seeds, scale and mechanisms: sim/src/study.rs, results_for)",
                r.samples.len()
            );
            let s = mask(score(&rows, &r));
            all_results = Some(s.clone());
            s
        } else if v.ran {
            nth += 1;
            let mut sv = st.clone();
            sv.mechanisms_off.extend(v.off.iter().copied());
            errln!(
                "ablation: v{n} {name} ({nth}/{to_run}) starts: {per_variant} runs; {:.0} s elapsed",
                t0.elapsed().as_secs_f64()
            );
            let tv = std::time::Instant::now();
            let last = std::sync::Mutex::new(std::time::Instant::now());
            let report = |f: crate::study::Finished| {
                let mut l = last.lock().expect("progress");
                if f.done == f.total || l.elapsed() < PROGRESS_EVERY {
                    return;
                }
                *l = std::time::Instant::now();
                let it = &sv.items[f.item];
                let done = before + f.done;
                let el = t0.elapsed().as_secs_f64();
                let left = el / done as f64 * total.saturating_sub(done) as f64;
                let served = &point_rows[f.item][f.vi];
                errln!(
                    "ablation: v{n} {name}: {}/{} runs; in all {done}/{total}, {el:.0} s elapsed, about {left:.0} s left at this pace; last: {}@{} {}={} {} seed {} (row{} {})",
                    f.done,
                    f.total,
                    it.title,
                    it.machine,
                    it.param,
                    it.values[f.vi],
                    sv.configs[f.ci].name,
                    f.seed,
                    if served.len() == 1 { "" } else { "s" },
                    served
                        .iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            };
            let r = crate::study::run_study_with(&sv, jobs, false, &report)?;
            before += r.samples.len();
            errln!(
                "ablation: v{n} {name} done: {} runs in {:.0} s; in all {before}/{total}, {:.0} s elapsed",
                r.samples.len(),
                tv.elapsed().as_secs_f64(),
                t0.elapsed().as_secs_f64()
            );
            let s = mask(score(&rows, &r));
            if v.off.is_empty() {
                all_results = Some(s.clone());
            }
            s
        } else {
            all_results.clone().ok_or("the all variant runs first")?
        };
        ab.push((name, v.ran, s));
    }
    let mut txt = format!(
        "ablation: {} items, configs {}, {} seeds, {:.1} s wall\n",
        st.items.len(),
        st.configs
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        st.seeds,
        t0.elapsed().as_secs_f64()
    );
    if !st.mechanisms_off.is_empty() {
        let _ = writeln!(
            txt,
            "  every variant also with {}",
            st.mechanisms_off.join(" ")
        );
    }
    for l in crate::study::costs_lines(&st) {
        let _ = writeln!(txt, "{l}");
    }
    if all_from_study {
        let _ = writeln!(
            txt,
            "  all: the study's own runs (sim study --with-ablation)"
        );
    }
    if let Some(l) = crate::study::length_line(&st) {
        let _ = writeln!(txt, "{l}");
    }
    if let Some(ix) = &subset.rows {
        let _ = writeln!(txt, "  --rows: only the rows {}", number_ranges(ix));
    }
    if subset.mechanisms.is_some() {
        let names: Vec<&str> = variants.iter().map(|v| v.name).collect();
        let _ = writeln!(
            txt,
            "  --mechanisms: only the variants {} (all always runs)",
            names.join(" ")
        );
    }
    for it in &st.items {
        let _ = writeln!(txt, "  {} on {}: {:?}", it.title, it.machine, it.values);
    }
    for v in &variants {
        let _ = writeln!(txt, "  v{} = {}", v.number, v.name);
    }
    txt.push('\n');
    txt.push_str(&ablation_table(&ab));
    Ok((txt, ab))
}
