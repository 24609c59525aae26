//! `RqStats::wakeup_rows`: every `wakeup_preempt` decision is counted once,
//! in the row `WakeupReason::row` names.

use crate::common::cpu_id;
use std::sync::Arc;

use sched::rq::{WAKEUP_ROWS, WAKEUP_ROW_NAMES};
use sched::{Rq, SchedConfig, SchedTask, TaskId, TaskParams, WakeupReason};

#[test]
fn every_decision_counts_in_its_row() {
    let cfg = Arc::new(SchedConfig::new(1, 250));
    let mut rq = Rq::new(cpu_id(0), cfg, 16);
    rq.update_rq_clock(1_000_000);
    let mut decisions = Vec::new();
    // The first task wakes an idle CPU.
    decisions.push(rq.wake_up_new_task(TaskId(1), SchedTask::new(TaskParams::default())));
    assert_eq!(rq.pick_next_task(), Some(TaskId(1)));
    for id in 2..6 {
        rq.update_rq_clock(1_000_000 + id as u64 * 100_000);
        decisions.push(rq.wake_up_new_task(TaskId(id), SchedTask::new(TaskParams::default())));
    }
    let rows = rq.stats.wakeup_rows;
    assert_eq!(rows.iter().sum::<u64>(), decisions.len() as u64);
    assert_eq!(rows[WakeupReason::IdleCpu.row()], 1);
    assert_eq!(WAKEUP_ROW_NAMES[WakeupReason::IdleCpu.row()], "wk_idle_cpu");
    for d in &decisions {
        assert!(rows[d.reason.row()] > 0, "{:?}", d.reason);
    }
    // Preempting rows add up to nr_wakeup_preempt.
    let preempting: u64 = decisions.iter().filter(|d| d.preempt).count() as u64;
    assert_eq!(rq.stats.nr_wakeup_preempt, preempting);
    assert_eq!(WAKEUP_ROW_NAMES.len(), WAKEUP_ROWS);
}
