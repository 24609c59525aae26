//! Host tests of the per-CPU timer deadlines (`kernel-hal/src/arch/deadlines.rs`,
//! included by path: the crate itself links only into a kernel): every CPU's
//! tick sits on one grid, as Linux's `tick_sched` with `skew_tick` off.

// The tests use the tick half of the module only.
#[allow(dead_code)]
#[path = "../src/arch/deadlines.rs"]
mod deadlines;

/// What the included module takes from `arch` and `crate::cpu`.
const MAX_CPUS: usize = 4;
mod cpu {
    pub use sched::CpuId;
}

use deadlines::TimerDeadlines;
use sched::CpuId;

const PERIOD: u64 = 4_000_000;

fn deadlines() -> TimerDeadlines {
    let d = TimerDeadlines::new();
    d.set_period(PERIOD);
    d
}

#[test]
fn ticks_started_at_different_moments_share_one_grid() {
    let d = deadlines();
    let (a, b) = (CpuId::new(0).unwrap(), CpuId::new(1).unwrap());
    d.start_tick(a, 1_000);
    d.start_tick(b, 3_999_999);
    assert_eq!(d.next(a), PERIOD);
    assert_eq!(d.next(b), PERIOD);
    // Leaving idle mid-period restarts on the grid, not a period later.
    d.stop_tick(b);
    d.start_tick(b, 9_500_000);
    assert_eq!(d.next(b), 3 * PERIOD);
    // Exactly on a grid point: the next one.
    d.start_tick(a, 2 * PERIOD);
    assert_eq!(d.next(a), 3 * PERIOD);
}

#[test]
fn a_late_tick_resumes_on_the_grid_and_is_counted() {
    let d = deadlines();
    let cpu = CpuId::new(0).unwrap();
    d.start_tick(cpu, 0);
    assert!(d.expire(cpu, PERIOD + 10, 0).tick);
    assert_eq!(d.next(cpu), 2 * PERIOD);
    // Two and a half periods late: one late tick merging two periods,
    // the next deadline the next grid point.
    assert!(d.expire(cpu, 4 * PERIOD + PERIOD / 2, 0).tick);
    assert_eq!(d.next(cpu), 5 * PERIOD);
    let stats = d.tick_stats(cpu);
    assert_eq!((stats.late, stats.merged), (1, 2));
}
