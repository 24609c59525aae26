//! Task groups in the kernel (`sched::fair::group` through
//! `smp::Scheduler`): the share of two groups of equal weight, one with a
//! single spinner and one with ten, on one CPU. A timing test (QEMU
//! `-icount`), its bound fixed before it was first run.

use alloc::vec::Vec;

use sched::fair::group::GroupId;
use sched::{CpuId, CpuMask, PreemptMode, TaskId, TaskParams};

use super::{set_preempt, Hog};
use crate::task;
use crate::{arch, kassert, kprintln, ktest_timing};

ktest_timing!(cgroup_one_spinner_against_ten_gets_half, || {
    // Groups A and B at cpu.weight 100 on CPU 0: A's one spinner and B's
    // ten spinners; each group gets half of the CPU. Flat, the lone
    // spinner would get 1/11 (9.1%). Bound: 50% +- 2 points over 1 s after
    // 100 ms to settle (the host model gives 50% +- 1 over 4 s).
    set_preempt(PreemptMode::Full);
    let s = crate::sched::sched();
    let me = arch::cpu_id();
    let a = s
        .create_task_group(GroupId::ROOT, 100)
        .map_err(|e| alloc::format!("create A: {e}"))?;
    let b = s
        .create_task_group(GroupId::ROOT, 100)
        .map_err(|e| alloc::format!("create B: {e}"))?;
    let mut hogs = Vec::new();
    hogs.push(Hog::spawn("cg-a", TaskParams::default())?);
    for _ in 0..10 {
        hogs.push(Hog::spawn("cg-b", TaskParams::default())?);
    }
    for (i, h) in hogs.iter().enumerate() {
        crate::sched::set_affinity(h.tid, CpuMask::of(CpuId::BOOT))
            .map_err(|e| alloc::format!("pin: {e:?}"))?;
        let g = if i == 0 { a } else { b };
        s.sched_move_task(TaskId(h.idx), g, me)
            .map_err(|e| alloc::format!("attach: {e}"))?;
    }
    task::sleep_ns(100_000_000);
    let r0: Vec<u64> = hogs.iter().map(|h| h.runtime_ns()).collect();
    task::sleep_ns(1_000_000_000);
    let d: Vec<u64> = hogs
        .iter()
        .zip(&r0)
        .map(|(h, r)| h.runtime_ns() - r)
        .collect();
    for h in hogs {
        h.stop()?;
    }
    // Exited, the hogs left their groups: both can go (once the last
    // exit's switch is done).
    for g in [a, b] {
        let mut tries = 0;
        while s.destroy_task_group(g).is_err() && tries < 100 {
            task::sleep_ns(1_000_000);
            tries += 1;
        }
    }
    let total: u64 = d.iter().sum();
    let pct = d[0] as f64 * 100.0 / total.max(1) as f64;
    kprintln!(
        "    group A's single spinner against group B's ten: {:.2}% of CPU 0",
        pct
    );
    kassert!((pct - 50.0).abs() <= 2.0, "A got {:.2}%, want 50 +- 2", pct);
    kassert!(s.cfg.groups.list().is_empty(), "groups left behind");
    Ok(())
});
