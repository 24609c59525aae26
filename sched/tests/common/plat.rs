//! A host [`Platform`] for multi-CPU tests: a virtual clock the test advances
//! and reschedule IPIs counted per CPU.

use std::sync::atomic::{AtomicU64, Ordering};

use sched::smp::Platform;
use sched::MAX_CPUS;

pub struct Plat {
    /// Reschedule IPIs sent to each CPU.
    pub ipis: Vec<AtomicU64>,
    /// The virtual clock, ns.
    pub now: AtomicU64,
}

impl Default for Plat {
    fn default() -> Self {
        Plat {
            ipis: (0..MAX_CPUS).map(|_| AtomicU64::new(0)).collect(),
            now: AtomicU64::new(0),
        }
    }
}

impl Platform for Plat {
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
    fn irq_save(&self) -> bool {
        false
    }
    fn irq_restore(&self, _: bool) {}
    fn send_resched_ipi(&self, cpu: sched::CpuId) {
        self.ipis[cpu.index()].fetch_add(1, Ordering::Relaxed);
    }
}
