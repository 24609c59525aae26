//! `ps`, `sched_debug`, `schedstat` and `stat`: read-only views of the
//! threads and the runqueues.
//!
//! Each view first copies what it needs under the runqueue lock of one CPU at
//! a time (short critical sections, no allocation of note, nothing printed
//! with a lock held: the console is slow), then formats the copy. The copy of
//! one CPU is consistent; different CPUs are seen at slightly different times,
//! as in Linux's `/proc/sched_debug`.

use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel_hal::cpu::CpuId;

use ::shell::{Ms, PsRow, SignedMs, PS_HEADER};
use sched::rq::RqStats;
use sched::{Policy, SchedTask, TaskId};

use super::{CmdResult, Sh};
use crate::percpu::{self, MAX_CPUS};
use crate::sched::debug::{ent_line, Ent};
use crate::{arch, smp, task};

/// CPUs running the scheduler (`online`), as indices.
pub fn online_cpus() -> impl Iterator<Item = CpuId> {
    CpuId::range(MAX_CPUS).filter(|&c| percpu::cpu(c).online.load(Ordering::Acquire))
}

/// Whether `idx` is a thread that exists (spawned, not yet joined, or an
/// online CPU's idle thread).
pub fn live(idx: u32) -> bool {
    let Some(t) = task::threads().get(idx as usize) else {
        return false;
    };
    if task::is_idle_idx(idx) {
        return CpuId::new(idx as usize)
            .is_some_and(|c| percpu::cpu(c).online.load(Ordering::Acquire));
    }
    !matches!(t.state(), task::ThreadState::Free | task::ThreadState::New)
}

/// What `ps` shows of one thread, copied under its runqueue lock.
struct Snap {
    st: Option<SchedTask>,
    /// The runqueue's V when the runqueue holds the task (for the lag).
    avg_v: Option<u64>,
}

fn snap(t: &task::Thread) -> Snap {
    let id = TaskId(t.idx());
    match crate::sched::sched().task_rq_lock(id, crate::arch::cpu_id()) {
        Ok((_, rq)) => Snap {
            st: rq.task(id).copied(),
            avg_v: Some(rq.avg_vruntime()),
        },
        Err(_) => Snap {
            st: None,
            avg_v: None,
        },
    }
}

/// A thread's state letter(s) for `ps`.
fn state_str(t: &task::Thread, st: Option<&SchedTask>) -> &'static str {
    if task::is_idle_idx(t.idx()) {
        return "I";
    }
    match t.state() {
        task::ThreadState::Running => "R",
        task::ThreadState::Sleeping if st.is_some_and(|s| s.se.sched_delayed) => "D",
        task::ThreadState::Sleeping => "S",
        task::ThreadState::Dead => "X",
        _ => "N",
    }
}

/// `ps`: one line per thread (idle threads first, as `I`).
pub fn ps(sh: &mut Sh) -> CmdResult {
    struct Row {
        pid: u32,
        name: &'static str,
        cpu: CpuId,
        policy: Policy,
        nice: i32,
        rt_prio: u8,
        state: &'static str,
        v: u64,
        d: u64,
        lag: i64,
        slice: u64,
        runtime: u64,
        switches: u64,
    }
    let mut rows = Vec::new();
    for t in task::threads() {
        if !live(t.idx()) {
            continue;
        }
        let s = snap(t);
        let st = s.st.as_ref();
        let (nv, niv) = t.switches();
        let mut r = Row {
            pid: t.idx(),
            name: t.name(),
            cpu: t.cpu(),
            policy: Policy::Idle,
            nice: 0,
            rt_prio: 0,
            state: state_str(t, st),
            v: 0,
            d: 0,
            lag: 0,
            slice: 0,
            runtime: 0,
            switches: nv + niv,
        };
        if let Some(st) = st {
            r.policy = st.params.policy;
            r.nice = st.params.nice;
            r.rt_prio = st.params.rt_priority;
            r.v = st.se.vruntime;
            r.d = st.se.deadline;
            r.slice = st.se.slice_ns;
            r.lag = match s.avg_v {
                // Queued: V - v now; asleep: the lag saved at dequeue.
                Some(v) if st.se.on_rq => v.wrapping_sub(st.se.vruntime) as i64,
                _ => st.se.vlag,
            };
            r.runtime = crate::sched::task_runtime_ns(t);
        }
        rows.push(r);
    }
    let _ = writeln!(sh, "{PS_HEADER}");
    for r in &rows {
        let _ = writeln!(
            sh,
            "{}",
            PsRow {
                pid: r.pid,
                name: r.name,
                cpu: r.cpu,
                policy: r.policy,
                nice: r.nice,
                rt_prio: r.rt_prio,
                state: r.state,
                vruntime_ns: r.v,
                deadline_ns: r.d,
                lag_ns: r.lag,
                slice_ns: r.slice,
                runtime_ns: r.runtime,
                switches: r.switches,
            }
        );
    }
    let _ = writeln!(
        sh,
        "(idle threads show as I with policy IDLE; lag = V - vruntime while queued, the saved vlag while asleep)"
    );
    Ok(())
}

/// One CPU's copy for `sched_debug`.
struct CpuDump {
    cpu: CpuId,
    clock: u64,
    nr_running: u32,
    nr_runnable: u32,
    load: u64,
    /// PELT (`cfs_rq->avg`).
    avg: sched::pelt::SchedAvg,
    avg_v: u64,
    curr: Option<Ent>,
    queue: Vec<Ent>,
    others: Vec<Ent>,
    next_buddy: Option<u32>,
    stats: RqStats,
    pick: sched::fair::PickStats,
    need_resched: sched::Resched,
    server: sched::deadline::DlServer,
}

fn dump_cpu(cpu: CpuId) -> CpuDump {
    // Room for the whole runqueue, allocated before the lock is taken.
    let mut queue = Vec::with_capacity(task::MAX_THREADS);
    let mut others = Vec::with_capacity(16);
    crate::sched::with_cpu_rq(cpu, |rq| {
        let ent = |id: TaskId| {
            rq.task(id).map(|st| Ent {
                id: id.0,
                st: *st,
                eligible: st.class() == sched::class::SchedClass::Fair && rq.entity_eligible(id),
            })
        };
        for id in rq.fair_queue() {
            if queue.len() < queue.capacity() {
                queue.extend(ent(id));
            }
        }
        let curr = rq.curr().and_then(ent);
        for (id, _) in rq.tasks() {
            if Some(id) != rq.curr()
                && !queue.iter().any(|e: &Ent| e.id == id.0)
                && others.len() < others.capacity()
            {
                others.extend(ent(id));
            }
        }
        CpuDump {
            cpu,
            clock: rq.clock(),
            nr_running: rq.nr_running(),
            nr_runnable: rq.nr_runnable(),
            load: rq.load(),
            avg: *rq.fair.avg(),
            avg_v: rq.avg_vruntime(),
            curr,
            queue,
            others,
            next_buddy: rq.next_buddy().map(|t| t.0),
            stats: rq.stats,
            pick: rq.fair.pick_stats,
            need_resched: rq.need_resched(),
            server: rq.fair_server,
        }
    })
}

/// Per CPU, the clock as that CPU read it when it ran the `sched_debug` probe.
static PROBE_NS: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// Runs on the probed CPU (interrupts off): notes its own clock.
fn probe(_: usize) {
    PROBE_NS[arch::cpu_id().index()].store(arch::now_ns(), Ordering::Relaxed);
}

/// The `.ipi_call` line: runs [`probe`] on `cpu` through a waited cross-CPU
/// call and reports when it ran there and when the answer came back (an
/// unresponsive CPU, e.g. stuck with interrupts off, shows as an error; a
/// clock that disagrees with this CPU's shows as a run time outside the
/// round trip).
fn ipi_call_line(cpu: CpuId) -> alloc::string::String {
    let t0 = arch::now_ns();
    match smp::call_function_single(cpu, probe, 0, true) {
        Ok(()) => {
            let t1 = arch::now_ns();
            let ran = PROBE_NS[cpu.index()].load(Ordering::Relaxed) as i64 - t0 as i64;
            alloc::format!(
                "ran after {} us, answered in {} us",
                ran / 1000,
                (t1 - t0) / 1000
            )
        }
        Err(e) => alloc::format!("error: {e:?}"),
    }
}

/// `sched_debug`: per CPU, the runqueue's clock, sizes, V, current task, the
/// queued entities in deadline order with eligibility, buddies and counters,
/// and how fast it answers a cross-CPU function call.
pub fn sched_debug(sh: &mut Sh) -> CmdResult {
    let cfg = crate::sched::sched_config();
    let _ = writeln!(
        sh,
        "sched_debug: now {} ms, preempt {}, base_slice {} ns",
        Ms(arch::now_ns()),
        crate::sched::preempt_mode().name(),
        cfg.tunables.base_slice_ns()
    );
    for cpu in online_cpus() {
        let d = dump_cpu(cpu);
        let name = |i: Option<u32>| match i {
            Some(i) => alloc::format!("{} {}", i, task::thread(i).name()),
            None => alloc::string::String::from("-"),
        };
        let _ = writeln!(sh, "cpu#{}", d.cpu);
        let _ = writeln!(sh, "  .clock                : {} ms", Ms(d.clock));
        let _ = writeln!(
            sh,
            "  .cpu_capacity         : {}",
            crate::sched::sched().topology().capacity_of(cpu)
        );
        // Linux's rq->misfit_task_load (not in its /proc/sched_debug): the
        // load of the running task if it does not fit this CPU, else 0.
        let _ = writeln!(
            sh,
            "  .misfit_task_load     : {}",
            crate::sched::sched().misfit_task_load(cpu)
        );
        // SIS_UTIL's scan limit of this CPU's LLC (Linux's
        // sd_llc_shared->nr_idle_scan, not in its /proc/sched_debug).
        let _ = writeln!(
            sh,
            "  .nr_idle_scan         : {}",
            crate::sched::sched().nr_idle_scan(cpu)
        );
        let _ = writeln!(sh, "  .nr_running           : {}", d.nr_running);
        let _ = writeln!(sh, "  .nr_runnable          : {}", d.nr_runnable);
        let _ = writeln!(sh, "  .load                 : {}", d.load);
        let _ = writeln!(sh, "  .load_avg             : {}", d.avg.load_avg);
        let _ = writeln!(sh, "  .runnable_avg         : {}", d.avg.runnable_avg);
        let _ = writeln!(sh, "  .util_avg             : {}", d.avg.util_avg);
        let _ = writeln!(sh, "  .avg_vruntime         : {} ms", Ms(d.avg_v));
        let _ = writeln!(
            sh,
            "  .curr                 : {}",
            name(d.curr.as_ref().map(|e| e.id)).as_str()
        );
        let _ = writeln!(sh, "  .need_resched         : {:?}", d.need_resched);
        let _ = writeln!(sh, "  .next_buddy           : {}", name(d.next_buddy));
        let s = &d.stats;
        let _ = writeln!(sh, "  .nr_switches          : {}", s.nr_switches);
        let _ = writeln!(sh, "  .nr_preempt_tick      : {}", s.nr_tick_resched);
        let _ = writeln!(sh, "  .nr_preempt_hrtick    : {}", s.nr_hrtick_resched);
        let _ = writeln!(sh, "  .nr_preempt_wakeup    : {}", s.nr_wakeup_preempt);
        let _ = writeln!(sh, "  .nr_wakeups           : {}", s.nr_wakeups);
        let _ = writeln!(sh, "  .nr_migrations_in     : {}", s.nr_migrations_in);
        let _ = writeln!(sh, "  .nr_rt_push           : {}", s.nr_rt_push);
        let _ = writeln!(sh, "  .nr_rt_pull           : {}", s.nr_rt_pull);
        let _ = writeln!(sh, "  .nr_dl_push           : {}", s.nr_dl_push);
        let _ = writeln!(sh, "  .nr_dl_pull           : {}", s.nr_dl_pull);
        let _ = writeln!(sh, "  .nr_delayed           : {}", s.nr_delayed);
        let _ = writeln!(sh, "  .nr_ticks             : {}", s.nr_ticks);
        let fs = &d.server;
        let _ = writeln!(
            sh,
            "  .fair_server          : {}{} runtime {} ms left {} ms deadline {} ms (period {} ms), boosts {} replenished {} served {} ms",
            fs.state.name(),
            if fs.defer_running && !fs.running() { " (serves without deferring)" } else { "" },
            Ms(fs.runtime_ns),
            SignedMs(fs.remaining_ns),
            Ms(fs.deadline),
            Ms(fs.period_ns),
            fs.nr_boosts,
            fs.nr_replenish,
            Ms(fs.served_ns)
        );
        let probe = ipi_call_line(cpu);
        let (ipis, calls) = smp::call_stats(cpu);
        let _ = writeln!(
            sh,
            "  .ipi_call             : {probe} ({ipis} call IPIs, {calls} calls run)"
        );
        let p = &d.pick;
        let _ = writeln!(
            sh,
            "  .picks                : single {} buddy {} protect {} fast {} heap {}",
            p.single, p.buddy, p.protect, p.fast, p.heap
        );
        let _ = writeln!(
            sh,
            "  runnable tasks ('>' running, deadline order):\n     {:>5} {:<15} {:<7} {:>4} {:>13} {:>13} {:>11} {:>9} {:>7} {:>8} {:>8} STATE",
            "PID", "NAME", "POLICY", "PRIO", "VRUNTIME", "DEADLINE", "LAG", "SLICE", "WEIGHT", "LOAD_AVG", "UTIL_AVG"
        );
        if let Some(e) = &d.curr {
            ent_line(sh, "> ", e, d.avg_v);
        }
        for e in &d.queue {
            ent_line(sh, "  ", e, d.avg_v);
        }
        for e in &d.others {
            ent_line(sh, "  ", e, d.avg_v);
        }
    }
    Ok(())
}

/// `stat`: uptime, per-CPU busy / idle time, context switches, interrupts
/// (like `/proc/stat`'s `cpuN`, `ctxt` and `intr` lines, in ms and counts),
/// from `sched::stats`' counters; then threads, sleepers and the heap.
pub fn stat(sh: &mut Sh) -> CmdResult {
    let now = arch::now_ns();
    let _ = writeln!(sh, "uptime {} ms", Ms(now));
    for cpu in CpuId::range(MAX_CPUS) {
        let Some(s) = crate::sched::cpu_stats(cpu) else {
            continue;
        };
        let idle = s.idle_ns.min(now);
        let _ = writeln!(
            sh,
            "cpu{cpu} busy {} ms idle {} ms switches {} interrupts {} (ticks {} timer events {} ipis {}) tickless idle {} (kicked {}) wakeups {} migrations_in {} running {}",
            Ms(now - idle),
            Ms(idle),
            s.nr_switches,
            s.nr_interrupts,
            s.nr_ticks,
            s.nr_timer_events,
            s.nr_ipis,
            s.nr_nohz_entries,
            s.nr_nohz_kicks,
            s.nr_wakeups,
            s.nr_migrations_in,
            s.nr_running
        );
    }
    let t = crate::sched::stats();
    let idle = t.idle_ns.min(now * u64::from(t.nr_cpus));
    let _ = writeln!(
        sh,
        "cpu  busy {} ms idle {} ms ({} CPUs)",
        Ms(now * u64::from(t.nr_cpus) - idle),
        Ms(idle),
        t.nr_cpus
    );
    let _ = writeln!(sh, "ctxt {}", t.nr_switches);
    let _ = writeln!(sh, "intr {}", t.nr_interrupts);
    let (used, free) = crate::heap::stats();
    let _ = writeln!(
        sh,
        "threads {} sleepers {} heap {}/{} KiB",
        task::nr_threads(),
        task::nr_sleepers(),
        used >> 10,
        (used + free) >> 10
    );
    let _ = writeln!(
        sh,
        "console input {}: {} receive interrupts, ring full {} times",
        if crate::console::rx_irq_active() {
            "interrupt-driven"
        } else {
            "polled"
        },
        crate::console::RX_INTERRUPTS.load(core::sync::atomic::Ordering::Relaxed),
        crate::console::RX_HELD_BACK.load(core::sync::atomic::Ordering::Relaxed),
    );
    Ok(())
}

/// `schedstat`: the load-balance counters of every online CPU's domains
/// (`sched::smp::LbStats`), one `domainN` line per level in the order and
/// naming of Linux's `/proc/schedstat` (`show_schedstat`, version 17), so
/// the two can be set side by side: `domainN NAME SPAN`, then for each
/// idle type (not idle, idle, newly idle) the `lb_*` fields this scheduler
/// counts, then the `alb_*` ones, then `ttwu_wake_remote` and
/// `ttwu_move_affine`, and last ours' `ttwu_migrate` (wakeups that moved a
/// task here; not in Linux's line). Linux's fields that are not counted
/// here are left out, not printed as 0; the header names the fields present.
/// The counters are plain relaxed loads (no lock), counted only while
/// schedstats is on (`kernel.sched_schedstats`, as in Linux); off, they
/// keep their values and are printed all the same.
pub fn schedstat(sh: &mut Sh) -> CmdResult {
    use sched::smp::{ALB_FIELD_NAMES, LB_FIELD_NAMES, TTWU_FIELD_NAMES};
    let s = crate::sched::sched();
    let nr_cpus = s.nr_cpus();
    let _ = writeln!(
        sh,
        "schedstat: /proc/schedstat v17 domain lines, only the fields counted here"
    );
    let _ = writeln!(
        sh,
        "fields: domainN name span, then for busy, idle, newly idle: {}; then {}; then {}",
        LB_FIELD_NAMES.join(" "),
        ALB_FIELD_NAMES.join(" "),
        TTWU_FIELD_NAMES.join(" ")
    );
    for cpu in online_cpus() {
        let _ = writeln!(sh, "cpu{}", cpu.index());
        for (level, sd) in s.domains(cpu).iter().enumerate() {
            let Some(st) = s.lb_stats(cpu, level) else {
                continue;
            };
            let mut line = alloc::format!("domain{} {} ", level, sd.level.name());
            push_span(
                &mut line,
                |c| CpuId::new(c).is_some_and(|c| sd.span.has(c)),
                nr_cpus,
            );
            for itype in [
                sched::smp::IdleType::NotIdle,
                sched::smp::IdleType::Idle,
                sched::smp::IdleType::NewlyIdle,
            ] {
                for v in st.fields(itype) {
                    let _ = write!(line, " {v}");
                }
            }
            for v in st.alb_fields().into_iter().chain(st.ttwu_fields()) {
                let _ = write!(line, " {v}");
            }
            let _ = writeln!(sh, "{line}");
        }
    }
    Ok(())
}

/// Appends a CPU mask as Linux's `%*pb` prints it: hex, highest CPU
/// first, as many digits as `nr_cpus` needs, a comma between 32-bit words.
fn push_span(out: &mut alloc::string::String, has: impl Fn(usize) -> bool, nr_cpus: usize) {
    let digits = nr_cpus.div_ceil(4).max(1);
    for d in (0..digits).rev() {
        let nib = (0..4).fold(0u32, |v, b| {
            let c = d * 4 + b;
            v | (u32::from(c < nr_cpus && has(c)) << b)
        });
        out.push(char::from_digit(nib, 16).unwrap_or('0'));
        if d != 0 && d % 8 == 0 {
            out.push(',');
        }
    }
}
