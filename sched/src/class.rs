//! The closed set of scheduling classes and their order, written once.
//!
//! Linux lays its classes out in memory so that `sched_class_above(a, b)` is an
//! address comparison; here the order is the enum's declaration order, and the
//! pick walks the classes from the highest down (`Rq::pick_next_task`).

/// A scheduling class. Declaration order is priority order, highest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SchedClass {
    /// SCHED_DEADLINE: EDF with constant bandwidth servers ([`crate::deadline`]).
    Dl,
    /// SCHED_FIFO / SCHED_RR, 99 priorities.
    Rt,
    /// EEVDF: SCHED_NORMAL / SCHED_BATCH / SCHED_IDLE.
    Fair,
    /// The per-CPU idle task: runs when nothing else can.
    Idle,
}

impl SchedClass {
    /// Every class, highest priority first.
    pub const ALL: [SchedClass; 4] = [
        SchedClass::Dl,
        SchedClass::Rt,
        SchedClass::Fair,
        SchedClass::Idle,
    ];

    /// Does `self` preempt `other` on wakeup by class alone (`sched_class_above`)?
    #[inline]
    pub fn above(self, other: SchedClass) -> bool {
        self < other
    }

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            SchedClass::Dl => "dl",
            SchedClass::Rt => "rt",
            SchedClass::Fair => "fair",
            SchedClass::Idle => "idle",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_dl_rt_fair_idle() {
        assert!(SchedClass::Dl.above(SchedClass::Rt));
        assert!(SchedClass::Rt.above(SchedClass::Fair));
        assert!(SchedClass::Fair.above(SchedClass::Idle));
        assert!(SchedClass::Rt.above(SchedClass::Idle));
        assert!(!SchedClass::Fair.above(SchedClass::Rt));
        assert!(!SchedClass::Fair.above(SchedClass::Fair));
        let mut sorted = SchedClass::ALL;
        sorted.sort();
        assert_eq!(sorted, SchedClass::ALL);
    }
}
