//! The runqueue in Linux's `sched_debug` text (`kernel/sched/debug.c`'s
//! `print_rq`): the stall and soft-lockup reports print it from interrupt
//! context, and the shell's `sched_debug` prints its copies with the same
//! entity lines.

use core::fmt::Write;
use kernel_hal::cpu::CpuId;

use ::shell::{Ms, SignedMs};
use sched::{SchedTask, TaskId};

use crate::task;

/// One queued entity in `sched_debug`.
pub struct Ent {
    pub id: u32,
    pub st: SchedTask,
    pub eligible: bool,
}

/// One CPU's runqueue in the `sched_debug` format, read from the locked
/// runqueue itself (no copy, no allocation, no cross-CPU call): the stall
/// watchdog's dump, from interrupt context.
pub fn write_rq(w: &mut dyn Write, cpu: CpuId, rq: &sched::Rq) {
    let _ = writeln!(
        w,
        "cpu#{cpu}\n  .clock                : {} ms\n  .nr_running           : {}\n  .avg_vruntime         : {} ms\n  .curr                 : {:?}\n  .need_resched         : {:?}",
        Ms(rq.clock()),
        rq.nr_running(),
        Ms(rq.avg_vruntime()),
        rq.curr().map(|t| t.0),
        rq.need_resched()
    );
    let ent = |id: TaskId| {
        rq.task(id).map(|st| Ent {
            id: id.0,
            st: *st,
            eligible: st.class() == sched::class::SchedClass::Fair && rq.entity_eligible(id),
        })
    };
    let avg_v = rq.avg_vruntime();
    if let Some(e) = rq.curr().and_then(ent) {
        ent_line(w, "> ", &e, avg_v);
    }
    for e in rq.fair_queue().filter_map(ent) {
        ent_line(w, "  ", &e, avg_v);
    }
    for (id, _) in rq.tasks() {
        if Some(id) != rq.curr() && !rq.fair_queue().any(|q| q == id) {
            if let Some(e) = ent(id) {
                ent_line(w, "  ", &e, avg_v);
            }
        }
    }
}

/// One entity's line, after `mark` (`"> "` for the running one).
pub fn ent_line(sh: &mut dyn Write, mark: &str, e: &Ent, avg_v: u64) {
    let se = &e.st.se;
    let state = if se.sched_delayed {
        "delayed"
    } else if e.eligible {
        "eligible"
    } else if e.st.class() == sched::class::SchedClass::Fair {
        "ineligible"
    } else if e.st.class() == sched::class::SchedClass::Dl {
        if e.st.dl.throttled {
            "dl-throttled"
        } else {
            "dl"
        }
    } else {
        "rt"
    };
    let lag = avg_v.wrapping_sub(se.vruntime) as i64;
    let _ = writeln!(
        sh,
        "  {mark}{:>5} {:<15.15} {:<7} {:>4} {:>13} {:>13} {:>11} {:>9} {:>7} {:>8} {:>8} {}",
        e.id,
        task::thread(e.id).name(),
        e.st.params.policy.short_name(),
        e.st.prio(),
        Ms(se.vruntime),
        Ms(se.deadline),
        SignedMs(lag),
        Ms(se.slice_ns),
        se.load.weight,
        se.avg.load_avg,
        se.avg.util_avg,
        state
    );
}
