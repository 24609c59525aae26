//! PELT on the fair runqueue: where Linux's `update_load_avg` and its
//! attach/detach run (kernel/sched/fair.c), over [`crate::pelt`]'s
//! arithmetic.
//!
//! What: each fair entity and each fair runqueue keep a [`SchedAvg`]. The
//! runqueue's sums accumulate by its own weight, runnable count and running
//! state, so an entity that sleeps leaves its history in them, decaying
//! (Linux's blocked load); an entity's averages enter them once, when it is
//! attached (its first enqueue on this CPU: fork, or a wakeup or balance
//! that moved it here) and leave when it is detached (a balance migration,
//! an exit, a wakeup elsewhere: [`FairRq::remove_load`]). So the runqueue's
//! `load_avg` is, within rounding, the sum of its attached entities'.
//!
//! Why: wakeup placement compares CPUs by these averages
//! (`wake_affine_weight`, [`crate::smp`]), as Linux does, not by the weight
//! queued at the instant of the wakeup.
//!
//! The clock is the CPU's PELT clock (`FairRq::clock_pelt`, Linux's
//! `cfs_rq_clock_pelt`, with no bandwidth throttling to take off): the task
//! clock slowed by the CPU's capacity while it runs, caught up when it is
//! idle ([`crate::pelt::PeltClock`]); on a CPU of full capacity, the task
//! clock. Each update is O(1).

use super::{se, sem, FairRq};
use crate::config::SchedConfig;
use crate::features::Feature;
use crate::pelt::{SchedAvg, LOAD_AVG_MAX, PERIOD_UNITS, UTIL_AVG_UNCHANGED};
use crate::task::{FairEntity, SchedTask, AVG_DETACHED, NIL};

/// `PELT_MIN_DIVIDER`: the smallest divider, the floor of a sum after a
/// subtraction (a sum must not fall below what its average implies).
const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - PERIOD_UNITS;

/// What [`FairRq::update_load_avg`] does after the update (Linux's
/// `DO_ATTACH` / `DO_DETACH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AvgAction {
    /// Only bring the entity and the runqueue up to date.
    Update,
    /// And attach the entity if it is not attached here (enqueue).
    Attach,
    /// And detach it (a migration's dequeue).
    Detach,
}

/// `sub_positive` on an average and its sum, with the sum kept at or above
/// `avg * PELT_MIN_DIVIDER` (Linux's pattern after every subtraction).
fn sub_avg(avg: &mut u64, sum: &mut u64, d_avg: u64, d_sum: u64) {
    *avg = avg.saturating_sub(d_avg);
    *sum = sum.saturating_sub(d_sum).max(*avg * PELT_MIN_DIVIDER);
}

impl FairRq {
    /// The runqueue's load tracking (Linux's `cfs_rq->avg`).
    pub fn avg(&self) -> &SchedAvg {
        &self.avg
    }

    /// `cfs_rq_clock_pelt`: the PELT clock at the last clock update.
    #[inline(always)]
    pub(crate) fn clock_pelt(&self) -> u64 {
        self.clock_pelt
    }

    /// `update_cfs_rq_load_avg`: the runqueue's sums to now, by the weight,
    /// runnable count and running state it had since the last update.
    /// Returns whether a period ended.
    #[inline]
    pub(crate) fn update_cfs_rq_load_avg(&mut self) -> bool {
        self.avg.update_rq(
            self.clock_pelt(),
            self.load,
            self.h_nr_runnable as u64,
            self.curr != NIL,
        )
    }

    /// `update_load_avg(cfs_rq, se, flags)`: entity `i` (if attached here)
    /// and the runqueue to now, then `action`. Called before the change it
    /// precedes in Linux (so the elapsed time is accounted as it was spent).
    /// An entity stamped with the runqueue (updated with it since its
    /// attach) shares its split of the elapsed time: one computation for
    /// both, and one test when no unit elapsed (a put_prev after a tick at
    /// the same clock).
    #[inline(always)]
    pub(crate) fn update_load_avg(
        &mut self,
        ts: &mut [SchedTask],
        cfg: &SchedConfig,
        i: u32,
        action: AvgAction,
    ) {
        let now = self.clock_pelt();
        let attached = se(ts, i).avg_cpu == self.cpu;
        if attached {
            let running = self.curr == i;
            let e = sem(ts, i);
            let runnable = e.on_rq && !e.sched_delayed;
            let w = e.load.weight as u64;
            if e.avg.same_stamp(&self.avg) {
                // Stamped together: one split of the elapsed time for both
                // (the usual case: both are updated here, at the same now).
                match self.avg.elapsed(now) {
                    Some(el) => {
                        if e.avg.update_entity_by(&el, e.on_rq, runnable, running, w) {
                            util_change(&mut e.avg, cfg);
                        }
                        let curr = self.curr != NIL;
                        self.avg
                            .update_rq_by(&el, self.load, self.h_nr_runnable as u64, curr);
                    }
                    // Within the unit, or the clock went back: the stamp.
                    None => e.avg.last_update_time_ns = self.avg.last_update_time_ns,
                }
            } else {
                if e.avg.update_entity(now, e.on_rq, runnable, running, w) {
                    util_change(&mut e.avg, cfg);
                }
                self.update_cfs_rq_load_avg();
            }
        } else {
            self.update_cfs_rq_load_avg();
        }
        match action {
            AvgAction::Attach if !attached => self.attach_entity_load_avg(sem(ts, i)),
            AvgAction::Detach if attached => self.detach_entity_load_avg(sem(ts, i)),
            _ => {}
        }
    }

    /// `attach_entity_load_avg`: the entity's averages join the runqueue's,
    /// its sums rebuilt from them on the runqueue's period.
    pub(crate) fn attach_entity_load_avg(&mut self, e: &mut FairEntity) {
        let divider = self.avg.divider();
        let w = (e.load.weight as u64).max(1);
        let a = &mut e.avg;
        a.last_update_time_ns = self.avg.last_update_time_ns;
        a.period_contrib = self.avg.period_contrib;
        a.util_sum = a.util_avg * divider;
        a.runnable_sum = a.runnable_avg * divider;
        let load_sum = a.load_avg * divider;
        a.load_sum = if w < load_sum { load_sum / w } else { 1 };
        self.avg.load_avg += a.load_avg;
        self.avg.load_sum += w * a.load_sum;
        self.avg.util_avg += a.util_avg;
        self.avg.util_sum += a.util_sum;
        self.avg.runnable_avg += a.runnable_avg;
        self.avg.runnable_sum += a.runnable_sum;
        let prop = a.load_sum as i64;
        self.add_tg_cfs_propagate(prop);
        e.avg_cpu = self.cpu;
    }

    /// `add_tg_cfs_propagate`: `runnable_sum` (unweighted) joined or left
    /// this runqueue; a group runqueue's entity takes it over at its next
    /// update (`propagate_entity_load_avg`, [`crate::fair::group`]).
    #[inline]
    pub(crate) fn add_tg_cfs_propagate(&mut self, runnable_sum: i64) {
        self.propagate = true;
        self.prop_runnable_sum += runnable_sum;
    }

    /// `detach_entity_load_avg`: the entity's averages leave the runqueue's
    /// (it is up to date with it).
    pub(crate) fn detach_entity_load_avg(&mut self, e: &mut FairEntity) {
        let w = e.load.weight as u64;
        let a = e.avg;
        let r = &mut self.avg;
        sub_avg(&mut r.load_avg, &mut r.load_sum, a.load_avg, w * a.load_sum);
        sub_avg(&mut r.util_avg, &mut r.util_sum, a.util_avg, a.util_sum);
        sub_avg(
            &mut r.runnable_avg,
            &mut r.runnable_sum,
            a.runnable_avg,
            a.runnable_sum,
        );
        self.add_tg_cfs_propagate(-(a.load_sum as i64));
        e.avg_cpu = AVG_DETACHED;
    }

    /// The removal of an entity that left while not held here (Linux's
    /// `cfs_rq->removed`, applied by `update_cfs_rq_load_avg`): its
    /// averages, synchronised to about now, leave the runqueue's.
    pub fn remove_load(&mut self, load_avg: u64, util_avg: u64, runnable_avg: u64) {
        self.update_cfs_rq_load_avg();
        let divider = self.avg.divider();
        let r = &mut self.avg;
        sub_avg(
            &mut r.load_avg,
            &mut r.load_sum,
            load_avg,
            load_avg * divider,
        );
        sub_avg(
            &mut r.util_avg,
            &mut r.util_sum,
            util_avg,
            util_avg * divider,
        );
        sub_avg(
            &mut r.runnable_avg,
            &mut r.runnable_sum,
            runnable_avg,
            runnable_avg * divider,
        );
        // As update_cfs_rq_load_avg does with the removed runnable average.
        let gone = (runnable_avg * divider).min(i64::MAX as u64) as i64;
        self.add_tg_cfs_propagate(-gone >> crate::pelt::SCHED_CAPACITY_SHIFT);
    }

    /// Detaches a task whose state this runqueue no longer holds (an exit,
    /// or a sleeper moved to another CPU by its wakeup) if it is attached
    /// here: its averages are brought to now (it was off the runqueue) and
    /// removed.
    pub(crate) fn detach_gone(&mut self, e: &mut FairEntity) {
        if e.avg_cpu != self.cpu {
            return;
        }
        e.avg
            .update_entity(self.clock_pelt(), false, false, false, e.load.weight as u64);
        self.update_cfs_rq_load_avg();
        self.detach_entity_load_avg(e);
    }

    /// `reweight_entity`'s PELT part: the entity's load average rescaled to
    /// the new weight `w` (its sum is unweighted), in the runqueue's too if
    /// it is attached here.
    pub(crate) fn reweight_load_avg(&mut self, e: &mut FairEntity, w: u64) {
        let attached = e.avg_cpu == self.cpu;
        let old_w = e.load.weight as u64;
        if e.avg_cpu == AVG_DETACHED && e.avg.load_sum == 0 {
            // Never attached (a new task): it still counts at full weight.
            e.avg.load_avg = w;
            return;
        }
        if attached {
            let r = &mut self.avg;
            sub_avg(
                &mut r.load_avg,
                &mut r.load_sum,
                e.avg.load_avg,
                old_w * e.avg.load_sum,
            );
        }
        let divider = e.avg.divider();
        e.avg.load_avg = w * e.avg.load_sum / divider;
        if attached {
            self.avg.load_avg += e.avg.load_avg;
            self.avg.load_sum += w * e.avg.load_sum;
        }
    }

    /// A new task's first utilization (`post_init_entity_util_avg`), before
    /// its first enqueue attaches it: sized by the CPU's capacity, as Linux
    /// sizes it by `arch_scale_cpu_capacity`.
    pub(crate) fn post_init_entity_util_avg(&self, e: &mut FairEntity) {
        let w = e.load.weight as u64;
        let cap = self.cpu_capacity as u64;
        e.avg.post_init_util(self.clock_pelt(), &self.avg, w, cap);
    }
}

/// `cfs_se_util_change` behind its UTIL_EST check: with the feature off the
/// flag stays as it was, so estimates freeze (Linux's). The flag is tested
/// first: it is usually clear already (from the first update after the
/// last sleep), and then the feature word is not read.
#[inline(always)]
fn util_change(a: &mut SchedAvg, cfg: &SchedConfig) {
    if a.util_est & UTIL_AVG_UNCHANGED != 0 && cfg.feat(Feature::UtilEst) {
        a.util_change();
    }
}
