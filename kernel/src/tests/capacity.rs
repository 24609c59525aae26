//! Capacity-aware balancing on the running kernel: on a machine of unequal
//! CPUs (`cpu_capacity=` or the devicetree's `capacity-dmips-mhz`), a
//! CPU-bound fair thread on a little CPU is marked misfit at its tick and
//! pulled to a big CPU (the misfit balance and its active balance, or a
//! tickless big CPU kicked by `nohz_balance_kick`; sched/src/smp/capacity.rs);
//! on a machine of equal CPUs the same thread is never a misfit.
//! `make test-ARCH-topology` boots it with `cpu_capacity=1024,1024,512,512`
//! under -icount; the SMP suites run it on equal CPUs.

use kernel_hal::cpu::CpuId;
use sched::TaskParams;

use super::Hog;
use crate::cpumask::only;
use crate::task;
use crate::{arch, kassert, kprintln, ktest_smp};

/// How long a misfit may take to reach a big CPU: `util_avg` must pass 409
/// (what no longer fits 512), which takes tens of ms of running on a CPU
/// of capacity 512 (PELT's clock runs at half speed there, as Linux's
/// `rq_clock_pelt`), then a balance pass of a big CPU (every few ticks) or
/// a kick. The bound only catches "never"; the time taken is printed.
const MOVE_BOUND_NS: u64 = 5_000_000_000;

/// How long a machine of equal CPUs is watched for a misfit.
const STAY_NS: u64 = 300_000_000;

ktest_smp!(smp_misfit_task_moves_to_a_big_cpu, 2, || {
    let s = crate::sched::sched();
    let topo = s.topology();
    let n = crate::sched::nr_cpus();
    let last = CpuId::wrapping(n - 1);
    let max_cap = CpuId::range(n)
        .map(|c| topo.capacity_of(c))
        .max()
        .unwrap_or(0);
    // This thread sleeps on CPU 0 (a big CPU in the asymmetric boot).
    let me = task::current_tid();
    crate::sched::set_affinity(me, only(CpuId::BOOT)).map_err(|e| alloc::format!("{e:?}"))?;
    crate::sched::yield_now();
    // A CPU-bound thread started on the last CPU (a little one there),
    // then free to run anywhere.
    let hog = Hog::spawn("misfithog", TaskParams::default())?;
    crate::sched::set_affinity(hog.tid, only(last)).map_err(|e| alloc::format!("{e:?}"))?;
    let on = |c: CpuId| task::thread(hog.idx).cpu() == c;
    let deadline = arch::now_ns() + MOVE_BOUND_NS;
    while !on(last) && arch::now_ns() < deadline {
        task::sleep_ms(2);
    }
    kassert!(on(last), "the pinned thread never reached cpu {}", last);
    crate::sched::set_affinity(hog.tid, crate::sched::online_mask())
        .map_err(|e| alloc::format!("{e:?}"))?;
    let t0 = arch::now_ns();
    let cpu_of = || task::thread(hog.idx).cpu();
    if topo.has_asym_capacity() {
        kassert!(
            topo.capacity_of(last) < max_cap,
            "cpu {} is not a little CPU (capacity {} of {max_cap})",
            last,
            topo.capacity_of(last)
        );
        let mut misfit_seen = 0;
        let deadline = t0 + MOVE_BOUND_NS;
        let moved = loop {
            misfit_seen = misfit_seen.max(s.misfit_task_load(last));
            let c = cpu_of();
            if topo.capacity_of(c) == max_cap || arch::now_ns() >= deadline {
                break topo.capacity_of(c) == max_cap;
            }
            task::sleep_ms(2);
        };
        let took_ms = (arch::now_ns() - t0) / 1_000_000;
        let to = cpu_of();
        hog.stop()?;
        crate::sched::set_affinity(me, crate::sched::online_mask())
            .map_err(|e| alloc::format!("{e:?}"))?;
        kprintln!(
            "    misfit thread: cpu {} -> cpu {} (capacity {}) after {} ms; misfit_task_load seen {}",
            last,
            to,
            topo.capacity_of(to),
            took_ms,
            misfit_seen
        );
        kassert!(
            moved,
            "the CPU-bound thread stayed off the big CPUs for {} ms (on cpu {})",
            MOVE_BOUND_NS / 1_000_000,
            to
        );
    } else {
        // Equal CPUs: the thread is never a misfit, wherever it runs. (Not
        // asserted: that it stays on its CPU. Any other thread that wakes
        // there, e.g. a kernel worker, makes the balancer free to move it,
        // which is load balancing, not capacity.)
        let mut misfit_seen = 0;
        while arch::now_ns() < t0 + STAY_NS {
            for c in CpuId::range(n) {
                misfit_seen = misfit_seen.max(s.misfit_task_load(c));
            }
            task::sleep_ms(5);
        }
        let at = cpu_of();
        hog.stop()?;
        crate::sched::set_affinity(me, crate::sched::online_mask())
            .map_err(|e| alloc::format!("{e:?}"))?;
        kprintln!(
            "    equal CPUs: the thread went from cpu {} to cpu {}, misfit_task_load 0",
            last,
            at
        );
        kassert!(
            misfit_seen == 0,
            "misfit_task_load {misfit_seen} on equal CPUs"
        );
    }
    Ok(())
});
