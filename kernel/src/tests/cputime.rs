//! A thread's read of its own CPU time charges it (Linux 7.2's
//! `task_sched_runtime()` → `update_curr`), so a thread that polls its CPU
//! time ends its own request at the read. Timing test (QEMU `-icount`), its
//! bound fixed before it was first run.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};

use sched::{PreemptMode, TaskParams};

use super::hrtick::Feat;
use super::{set_preempt, slice_ns, tick_ns};
use crate::task;
use crate::{kassert, kprintln, kskip, ktest_timing};

/// A thread that reads its own CPU time in a loop, each read a modelled
/// syscall from its user code (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`).
fn spawn_reader(
    name: &'static str,
    stop: &Arc<AtomicBool>,
) -> Result<task::Tid, alloc::string::String> {
    let stop = stop.clone();
    task::spawn(name, TaskParams::default(), move || {
        let me = task::current();
        crate::sched::run_in_user_mode(|| {
            while !stop.load(Ordering::Relaxed) {
                crate::sched::syscall(|| crate::sched::task_runtime_ns(me));
            }
        });
    })
    .map_err(|e| alloc::format!("spawn {}: {:?}", name, e))
}

ktest_timing!(cputime_read_ends_own_request, || {
    // Two threads on one CPU under full preemption, each reading its own
    // CPU time in a loop, with HRTICK off: nothing but the tick ends a
    // request, except the reads themselves. A read charges the reader and,
    // its request consumed, asks for a reschedule that the syscall's return
    // takes: each reader is switched out at the end of its request (0.7 ms)
    // or, when it is still behind the other, picked again for one more.
    // Bound: an average run of at most two requests plus 0.1 ms. Without
    // the charge a request ends at the next tick: about one tick per run
    // (4 ms at 250 Hz), so the test needs a tick longer than the bound.
    let bound_ns = 2 * slice_ns() + 100_000;
    if tick_ns() <= bound_ns {
        kskip!(
            "tick {} us is not longer than the bound {} us: nothing to tell apart",
            tick_ns() / 1000,
            bound_ns / 1000
        );
    }
    set_preempt(PreemptMode::Full);
    let _off = Feat::set("HRTICK", false);
    let stop = Arc::new(AtomicBool::new(false));
    let tids = [
        spawn_reader("reader-a", &stop),
        spawn_reader("reader-b", &stop),
    ];
    if tids.iter().all(Result::is_ok) {
        task::sleep_ns(200_000_000);
    }
    stop.store(true, Ordering::Relaxed);
    // Every reader that started is joined before any error is reported.
    let stats =
        tids.map(|t| t.and_then(|t| task::join(t).map_err(|e| alloc::format!("join: {:?}", e))));
    let mut runs = [0u64; 2];
    let mut ran_ns = [0u64; 2];
    for (i, st) in stats.into_iter().enumerate() {
        let st = st?;
        runs[i] = st.nr_switches;
        ran_ns[i] = st.sum_exec_runtime_ns;
    }
    let avg = |i: usize| ran_ns[i] / runs[i].max(1);
    kprintln!(
        "    two readers of their own CPU time, NO_HRTICK, 200 ms: runs {} / {}, average run {} / {} us (slice {} us, tick {} us)",
        runs[0],
        runs[1],
        avg(0) / 1000,
        avg(1) / 1000,
        slice_ns() / 1000,
        tick_ns() / 1000
    );
    for i in 0..2 {
        kassert!(
            avg(i) <= bound_ns,
            "reader {}: average run {} us, over {} us",
            i,
            avg(i) / 1000,
            bound_ns / 1000
        );
    }
    Ok(())
});
