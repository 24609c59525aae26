//! `nice`, `chrt`, `taskset` and `kill`: changing one thread, which may be
//! a thread of a running background job (`ps` and the `&` reply list them),
//! and (`nice`, `chrt`) every workload thread of a job at once (`%N`).
//!
//! A job's threads are checked first and changed after: if one of them
//! refuses (it exited meanwhile is not a refusal: exited threads are
//! skipped), nothing is changed.
//!
//! A PID is a thread slot index, as `ps` shows it. Idle threads are not
//! scheduler tasks (the runqueue never holds them), so they refuse every
//! change. Parameters go through `crate::sched::sched_setattr`, which handles a
//! running, queued or sleeping thread under its runqueue lock.

use core::fmt::Write;

use alloc::vec::Vec;

use ::shell::{CpuList, Pid, Target};
use sched::{Policy, TaskParams};

use super::inspect::live;
use super::{fail, CmdResult, Sh};
use crate::{task, workloads};

/// The thread behind `pid` and its current parameters, or an error line.
pub(super) fn target_thread(
    cmd: &str,
    pid: Pid,
) -> Result<(&'static task::Thread, TaskParams), alloc::string::String> {
    if !live(pid) {
        fail!("{cmd}: no such process {pid}");
    }
    let t = task::thread(pid);
    if task::is_idle_idx(pid) {
        fail!("{cmd}: {pid} is CPU {pid}'s idle thread, which is not a scheduler task");
    }
    match crate::sched::sched_snapshot(t) {
        Some(st) if t.state() != task::ThreadState::Dead => Ok((t, st.params)),
        _ => fail!("{cmd}: process {pid} ({}) has exited", t.name()),
    }
}

/// The errno Linux's `sched_setattr` gives for a refusal of the same kind:
/// ended to the error line, `(EBUSY)`, so a transcript can be set beside
/// Linux's (`make linux-compare`'s deadline rows read it).
fn linux_errno(e: &sched::task::ParamsError) -> &'static str {
    use sched::task::ParamsError as P;
    match e {
        P::DlBandwidthExceeded => "EBUSY",
        P::DlAffinityRestricted => "EPERM",
        P::NiceOutOfRange | P::RtPriorityOutOfRange | P::DlAttrInvalid => "EINVAL",
    }
}

fn setattr(cmd: &str, t: &task::Thread, p: TaskParams) -> super::CmdResult {
    match crate::sched::sched_setattr(t, p) {
        Ok(()) => Ok(()),
        Err(sched::RqError::Params(sched::task::ParamsError::DlAffinityRestricted)) => {
            let online = crate::sched::online_mask();
            fail!(
                "{cmd}: pid {} may run only on CPUs {}, but SCHED_DEADLINE needs all online CPUs ({}): widen its affinity with taskset first (EPERM)",
                t.idx(),
                CpuList(t.cpus_allowed().and(&online)),
                CpuList(online)
            )
        }
        Err(sched::RqError::Params(e)) => fail!("{cmd}: {e} ({})", linux_errno(&e)),
        Err(e) => fail!("{cmd}: cannot change process {}: {:?}", t.idx(), e),
    }
}

/// The threads `target` names, each with its current parameters: one
/// thread, or the live workload threads of a job (at least one).
fn targets(
    sh: &Sh,
    cmd: &str,
    target: Target,
) -> Result<Vec<(&'static task::Thread, TaskParams)>, alloc::string::String> {
    match target {
        Target::Pid(pid) => Ok(alloc::vec![target_thread(cmd, pid)?]),
        Target::Job(n) => {
            let Some(j) = sh.jobs.get(n) else {
                fail!("{cmd}: no such job %{n}");
            };
            let list: Vec<_> = j
                .threads()
                .into_iter()
                .filter_map(|pid| target_thread(cmd, pid).ok())
                .collect();
            if list.is_empty() {
                fail!("{cmd}: job %{n} has no running threads left");
            }
            Ok(list)
        }
    }
}

/// `nice PID N` / `nice %JOB N`: sets the nice value (kept, but without
/// effect, for RT threads, as in Linux).
pub fn nice(sh: &mut Sh, target: Target, nice: i32) -> CmdResult {
    let list = targets(sh, "nice", target)?;
    let new: Vec<TaskParams> = list
        .iter()
        .map(|&(_, p)| TaskParams { nice, ..p })
        .collect();
    check_all("nice", &new)?;
    for ((t, old), p) in list.into_iter().zip(new) {
        setattr("nice", t, p)?;
        let _ = writeln!(
            sh,
            "{} ({}): old priority {}, new priority {nice}",
            t.idx(),
            t.name(),
            old.nice
        );
    }
    Ok(())
}

/// Refuses the whole change if any thread's new parameters are invalid.
fn check_all(cmd: &str, new: &[TaskParams]) -> CmdResult {
    for p in new {
        if let Err(e) = p.validate() {
            fail!("{cmd}: {e} ({})", linux_errno(&e));
        }
    }
    Ok(())
}

/// `chrt [-f|-r|-o|-b|-i] [-T NS] PRIO PID|%JOB`: sets policy, RT priority
/// and (`-T`) the custom slice; without `-T` the slice is kept.
pub fn chrt(
    sh: &mut Sh,
    policy: Policy,
    prio: u8,
    runtime_ns: Option<u64>,
    target: Target,
) -> CmdResult {
    let list = targets(sh, "chrt", target)?;
    let new: Vec<TaskParams> = list
        .iter()
        .map(|&(_, old)| TaskParams {
            policy,
            rt_priority: prio,
            slice_ns: runtime_ns.unwrap_or(old.slice_ns),
            dl_runtime_ns: 0,
            dl_deadline_ns: 0,
            dl_period_ns: 0,
            ..old
        })
        .collect();
    check_all("chrt", &new)?;
    for ((t, old), p) in list.into_iter().zip(new) {
        setattr("chrt", t, p)?;
        let pid = t.idx();
        let _ = writeln!(
            sh,
            "pid {pid}'s policy: {}/{} -> {}/{prio}",
            old.policy.name(),
            old.rt_priority,
            policy.name()
        );
        if runtime_ns.is_some() {
            let _ = writeln!(
                sh,
                "pid {pid}'s custom slice: {} -> {}",
                SliceNs(old.slice_ns),
                SliceNs(p.slice_ns)
            );
        }
    }
    Ok(())
}

/// `chrt -d --sched-runtime NS --sched-deadline NS [--sched-period NS] 0
/// PID|%JOB`: SCHED_DEADLINE, refused by admission control when the CPUs'
/// deadline bandwidth would pass its limit, and for a thread not allowed on
/// every online CPU (Linux's EPERM: `taskset` it to all of them first).
/// Threads changed before a refusal keep their new policy, as separate
/// `sched_setattr` calls would.
pub fn chrt_deadline(
    sh: &mut Sh,
    runtime_ns: u64,
    deadline_ns: u64,
    period_ns: u64,
    target: Target,
) -> CmdResult {
    let list = targets(sh, "chrt", target)?;
    let p = TaskParams::deadline(runtime_ns, deadline_ns, period_ns);
    check_all("chrt", &[p])?;
    for (t, old) in list {
        setattr("chrt", t, p)?;
        let _ = writeln!(
            sh,
            "pid {}'s policy: {}/{} -> SCHED_DEADLINE runtime {} ns deadline {} ns period {} ns",
            t.idx(),
            old.policy.name(),
            old.rt_priority,
            runtime_ns,
            deadline_ns,
            p.dl_period()
        );
    }
    Ok(())
}

/// A custom slice as `chrt` prints it: `N ns`, or `none` (the base slice).
struct SliceNs(u64);

impl core::fmt::Display for SliceNs {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            0 => f.write_str("none (base slice)"),
            ns => write!(f, "{ns} ns"),
        }
    }
}

/// `chrt -p PID|%JOB`: Linux's two lines per thread, and for a fair policy
/// the runtime parameter (its slice, custom or the base slice, in ns, as
/// Linux 6.12+'s `sched_getattr` reports it).
pub fn chrt_show(sh: &mut Sh, target: Target) -> CmdResult {
    for (t, p) in targets(sh, "chrt", target)? {
        let pid = t.idx();
        let _ = writeln!(
            sh,
            "pid {pid}'s current scheduling policy: {}",
            p.policy.name()
        );
        let _ = writeln!(
            sh,
            "pid {pid}'s current scheduling priority: {}",
            p.rt_priority
        );
        if p.policy.class() == sched::class::SchedClass::Fair {
            let slice = crate::sched::sched_snapshot(t).map_or(0, |st| st.se.slice_ns);
            let kind = if p.slice_ns != 0 { "custom" } else { "base" };
            let _ = writeln!(
                sh,
                "pid {pid}'s current runtime parameter: {slice} ({kind} slice)"
            );
        }
    }
    Ok(())
}

/// `taskset -p MASK PID`: `crate::sched::set_affinity` (CPUs that are not online
/// are ignored, as in Linux; a mask with no online CPU is refused, and so is
/// one that leaves out an online CPU for a SCHED_DEADLINE thread, Linux's
/// EBUSY).
pub fn taskset(sh: &mut Sh, mask: task::CpuMask, pid: Pid) -> CmdResult {
    let (t, _) = target_thread("taskset", pid)?;
    let online = crate::sched::online_mask();
    if !mask.intersects(&online) {
        fail!(
            "taskset: mask {mask:x} contains no online CPU (online: {})",
            CpuList(online)
        );
    }
    let Some(tid) = task::inspect::tid_of(pid) else {
        fail!("taskset: no such process {pid}");
    };
    let old = t.cpus_allowed().and(&online);
    match crate::sched::set_affinity(tid, mask) {
        Ok(()) => {}
        Err(crate::sched::AffinityError::NoOnlineCpu) => {
            fail!("taskset: mask {mask:x} contains no online CPU")
        }
        Err(crate::sched::AffinityError::NoSuchThread) => fail!("taskset: no such process {pid}"),
        Err(crate::sched::AffinityError::DeadlineBusy) => fail!(
            "taskset: pid {pid} is SCHED_DEADLINE, which must stay allowed on all online CPUs ({}): change its policy with chrt first (EBUSY)",
            CpuList(online)
        ),
    }
    let _ = writeln!(sh, "pid {pid}'s current affinity mask: {old:x}");
    let _ = writeln!(
        sh,
        "pid {pid}'s new affinity mask: {:x}",
        t.cpus_allowed().and(&online)
    );
    Ok(())
}

/// `taskset -p MASK %JOB`: [`taskset`] for every live workload thread of
/// the job, in order; the first refusal ends it (the threads before keep
/// their new mask, as separate `sched_setaffinity` calls would).
pub fn taskset_job(sh: &mut Sh, mask: task::CpuMask, job: u32) -> CmdResult {
    let pids: Vec<Pid> = targets(sh, "taskset", Target::Job(job))?
        .iter()
        .map(|(t, _)| t.idx())
        .collect();
    for pid in pids {
        taskset(sh, mask, pid)?;
    }
    Ok(())
}

/// `cpu offline N` / `cpu online N` (`crate::hotplug`): refused requests
/// change nothing and say why.
pub fn cpu_hotplug(sh: &mut Sh, cpu: sched::CpuId, online: bool) -> CmdResult {
    let (verb, r) = if online {
        ("online", crate::hotplug::cpu_up(cpu))
    } else {
        ("offline", crate::hotplug::cpu_down(cpu))
    };
    match r {
        Ok(()) => {
            let _ = writeln!(
                sh,
                "cpu {cpu} {verb} (online: {})",
                CpuList(crate::sched::online_mask())
            );
            Ok(())
        }
        Err(e) => fail!("cpu: cannot take cpu {cpu} {verb}: {e}"),
    }
}

/// `taskset -p PID` / `taskset -cp PID`.
pub fn taskset_show(sh: &mut Sh, pid: Pid, list: bool) -> CmdResult {
    let (t, _) = target_thread("taskset", pid)?;
    let cur = t.cpus_allowed().and(&crate::sched::online_mask());
    if list {
        let _ = writeln!(sh, "pid {pid}'s current affinity list: {}", CpuList(cur));
    } else {
        let _ = writeln!(sh, "pid {pid}'s current affinity mask: {cur:x}");
    }
    Ok(())
}

/// `kill PID`: only workload threads and job leaders can be stopped (a kernel
/// thread cannot be killed asynchronously here: it may hold a lock or sit in
/// a wait queue; workload threads poll a stop flag). A thread of a
/// background job stops its whole job (its threads depend on each other) and
/// waits for it ([`super::work::kill_job`]). The idle threads, the shell and
/// other kernel threads refuse, and nothing changes.
pub fn kill(sh: &mut Sh, pid: Pid) -> CmdResult {
    if !live(pid) {
        fail!("kill: no such process {pid}");
    }
    let t = task::thread(pid);
    if task::is_idle_idx(pid) {
        fail!("kill: {pid} is CPU {pid}'s idle thread and cannot be killed");
    }
    if pid == task::current_idx() {
        fail!("kill: {pid} is the shell itself (use poweroff)");
    }
    if let Some(n) = sh.jobs.of_thread(pid) {
        return super::work::kill_job(sh, n, Some(pid));
    }
    if workloads::stop_thread(pid) {
        let _ = writeln!(sh, "kill: stopping {pid} ({}) and its workload", t.name());
        return Ok(());
    }
    fail!(
        "kill: {pid} ({}) is a kernel thread without a stop flag; only workload threads and jobs can be killed",
        t.name()
    )
}
