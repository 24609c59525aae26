//! `nice`, `chrt`, `taskset` and `kill`: changing one thread, which may be
//! a thread of a running background job (`ps` and the `&` reply list them).
//!
//! A PID is a thread slot index, as `ps` shows it. Idle threads are not
//! scheduler tasks (the runqueue never holds them), so they refuse every
//! change. Parameters go through `task::sched_setattr`, which handles a
//! running, queued or sleeping thread under its runqueue lock.

use core::fmt::Write;

use ::shell::{CpuList, Pid};
use sched::{Policy, TaskParams};

use super::inspect::live;
use super::{fail, CmdResult, Sh};
use crate::{task, workloads};

/// The thread behind `pid` and its current parameters, or an error line.
fn target(
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
    match task::sched_snapshot(t) {
        Some(st) if t.state() != task::TASK_DEAD => Ok((t, st.params)),
        _ => fail!("{cmd}: process {pid} ({}) has exited", t.name()),
    }
}

fn setattr(cmd: &str, t: &task::Thread, p: TaskParams) -> super::CmdResult {
    match task::sched_setattr(t, p) {
        Ok(()) => Ok(()),
        Err(sched::RqError::Params(e)) => fail!("{cmd}: {e}"),
        Err(e) => fail!("{cmd}: cannot change process {}: {:?}", t.idx(), e),
    }
}

/// `nice PID N`: sets the nice value (kept, but without effect, for RT threads,
/// as in Linux).
pub fn nice(sh: &mut Sh, pid: Pid, nice: i32) -> CmdResult {
    let (t, mut p) = target("nice", pid)?;
    let old = p.nice;
    p.nice = nice;
    setattr("nice", t, p)?;
    let _ = writeln!(
        sh,
        "{pid} ({}): old priority {old}, new priority {nice}",
        t.name()
    );
    Ok(())
}

/// `chrt [-f|-r|-o|-b|-i] PRIO PID`: sets policy and RT priority.
pub fn chrt(sh: &mut Sh, policy: Policy, prio: u8, pid: Pid) -> CmdResult {
    let (t, old) = target("chrt", pid)?;
    let p = TaskParams {
        policy,
        rt_priority: prio,
        dl_runtime_ns: 0,
        dl_deadline_ns: 0,
        dl_period_ns: 0,
        ..old
    };
    setattr("chrt", t, p)?;
    let _ = writeln!(
        sh,
        "pid {pid}'s policy: {}/{} -> {}/{prio}",
        old.policy.name(),
        old.rt_priority,
        policy.name()
    );
    Ok(())
}

/// `chrt -d --sched-runtime NS --sched-deadline NS [--sched-period NS] 0
/// PID`: SCHED_DEADLINE, refused by admission control when the CPUs'
/// deadline bandwidth would pass its limit.
pub fn chrt_deadline(
    sh: &mut Sh,
    runtime_ns: u64,
    deadline_ns: u64,
    period_ns: u64,
    pid: Pid,
) -> CmdResult {
    let (t, old) = target("chrt", pid)?;
    let p = TaskParams::deadline(runtime_ns, deadline_ns, period_ns);
    setattr("chrt", t, p)?;
    let _ = writeln!(
        sh,
        "pid {pid}'s policy: {}/{} -> SCHED_DEADLINE runtime {} ns deadline {} ns period {} ns",
        old.policy.name(),
        old.rt_priority,
        runtime_ns,
        deadline_ns,
        p.dl_period()
    );
    Ok(())
}

/// `chrt -p PID`: Linux's two lines.
pub fn chrt_show(sh: &mut Sh, pid: Pid) -> CmdResult {
    let (_, p) = target("chrt", pid)?;
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
    Ok(())
}

/// `taskset -p MASK PID`: `task::set_affinity` (CPUs that are not online
/// are ignored, as in Linux; a mask with no online CPU is refused).
pub fn taskset(sh: &mut Sh, mask: task::CpuMask, pid: Pid) -> CmdResult {
    let (t, _) = target("taskset", pid)?;
    let online = task::online_mask();
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
    }
    let _ = writeln!(sh, "pid {pid}'s current affinity mask: {old:x}");
    let _ = writeln!(
        sh,
        "pid {pid}'s new affinity mask: {:x}",
        t.cpus_allowed().and(&online)
    );
    Ok(())
}

/// `taskset -p PID` / `taskset -cp PID`.
pub fn taskset_show(sh: &mut Sh, pid: Pid, list: bool) -> CmdResult {
    let (t, _) = target("taskset", pid)?;
    let cur = t.cpus_allowed().and(&task::online_mask());
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
