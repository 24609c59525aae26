//! Active balancing of a lone running task on the running kernel
//! (sched/src/smp/balance.rs, Linux's `imbalanced_active_balance`): two
//! CPU-bound threads on the two hardware threads of one core while another
//! core idles. Neither can be detached (each runs alone), so the balancing
//! CPU's periodic passes fail; past `cache_nice_tries + 2` failures the
//! source's running thread is pushed (the source reschedules and its
//! switch hands the thread over). Without the active balance nothing
//! moves them: no CPU runs two tasks, so no tickless CPU is kicked either.
//! Needs an SMT level (`make test-ARCH-topology` boots it on
//! `-smp 4,threads=2`); without one there is nothing to spread, and the test
//! is reported as skipped with that reason.

use kernel_hal::cpu::CpuId;
use sched::domain::DomainLevel;
use sched::TaskParams;

use super::Hog;
use crate::cpumask::only;
use crate::task;
use crate::{arch, kassert, kprintln, kskip, ktest_smp};

/// How long the packed core is watched: the MC level's passes run every
/// few ticks on an idle CPU 0 (its interval is the span weight in ms), and
/// the 4th failed one pushes. The bound only catches "never", as every
/// wait on another vCPU gets 5 s here; the time taken is printed.
const MOVE_BOUND_NS: u64 = 5_000_000_000;

ktest_smp!(smp_active_balance_spreads_a_packed_core, 4, || {
    let s = crate::sched::sched();
    let n = crate::sched::nr_cpus();
    let last = CpuId::wrapping(n - 1);
    let Some(core) = s
        .domains(last)
        .iter()
        .find(|d| d.level == DomainLevel::Smt)
        .map(|d| d.span)
    else {
        kskip!("no SMT level, no core to spread: needs -smp 4,threads=2");
    };
    let sibs: alloc::vec::Vec<CpuId> = core.cpus().take(2).collect();
    kassert!(sibs.len() == 2 && !core.has(CpuId::BOOT));
    // This thread sleeps on CPU 0, which keeps its tick and balances the
    // MC level for its idle core (`should_we_balance`).
    let me = task::current_tid();
    crate::sched::set_affinity(me, only(CpuId::BOOT)).map_err(|e| alloc::format!("{e:?}"))?;
    crate::sched::yield_now();
    let hogs: alloc::vec::Vec<Hog> = sibs
        .iter()
        .map(|&c| Hog::spawn_on("packedhog", TaskParams::default(), only(c)))
        .collect::<Result<_, _>>()?;
    let on_core = |h: &Hog| core.has(task::thread(h.idx).cpu());
    task::sleep_ms(30);
    kassert!(
        hogs.iter().all(on_core),
        "the pinned threads are not on cpus {:?}",
        sibs
    );
    for h in &hogs {
        crate::sched::set_affinity(h.tid, crate::sched::online_mask())
            .map_err(|e| alloc::format!("{e:?}"))?;
    }
    let t0 = arch::now_ns();
    let moved = loop {
        let off = !hogs.iter().all(on_core);
        if off || arch::now_ns() >= t0 + MOVE_BOUND_NS {
            break off;
        }
        task::sleep_ms(2);
    };
    let took_ms = (arch::now_ns() - t0) / 1_000_000;
    let at: alloc::vec::Vec<CpuId> = hogs.iter().map(|h| task::thread(h.idx).cpu()).collect();
    for h in hogs {
        h.stop()?;
    }
    crate::sched::set_affinity(me, crate::sched::online_mask())
        .map_err(|e| alloc::format!("{e:?}"))?;
    kprintln!(
        "    packed core {:?}: a thread left it: {moved} (after {took_ms} ms; now on {:?})",
        sibs,
        at
    );
    kassert!(
        moved,
        "both threads stayed on cpus {:?} for {} ms",
        sibs,
        MOVE_BOUND_NS / 1_000_000
    );
    Ok(())
});
