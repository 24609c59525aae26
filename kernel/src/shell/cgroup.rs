//! `cgroup create NAME [PARENT]`, `cgroup weight NAME W`,
//! `cgroup attach NAME PID`, `cgroup ls`, `cgroup rm NAME`: task groups by name over
//! `sched`'s hierarchical fair class (`sched::fair::group`; Linux's cgroup
//! v2 `cpu.weight`). The shell keeps the names; the scheduler keeps the
//! groups, their weights and their threads. Refused requests change
//! nothing and say why.

use core::fmt::Write;

use alloc::string::String;
use alloc::vec::Vec;

use ::shell::CgroupCmd;
use sched::fair::group::{GroupError, GroupId};
use sched::TaskId;

use super::control::target_thread;
use super::{fail, CmdResult, Sh};
use crate::arch;

/// Group names, in creation order, and their ids.
static NAMES: spin::Mutex<Vec<(String, GroupId)>> = spin::Mutex::new(Vec::new());

fn lookup(name: &str) -> Option<GroupId> {
    if name == "root" {
        return Some(GroupId::ROOT);
    }
    NAMES.lock().iter().find(|(n, _)| n == name).map(|e| e.1)
}

fn name_of(g: GroupId) -> String {
    if g == GroupId::ROOT {
        return String::from("root");
    }
    NAMES
        .lock()
        .iter()
        .find(|e| e.1 == g)
        .map_or_else(|| alloc::format!("#{}", g.0), |e| e.0.clone())
}

/// Runs one `cgroup` subcommand.
pub fn command(sh: &mut Sh, cmd: CgroupCmd) -> CmdResult {
    let s = crate::sched::sched();
    match cmd {
        CgroupCmd::Create { name, parent } => {
            if lookup(&name).is_some() {
                fail!("cgroup: group '{name}' exists");
            }
            let p = match &parent {
                None => GroupId::ROOT,
                Some(p) => match lookup(p) {
                    Some(g) => g,
                    None => fail!("cgroup: no such group '{p}'"),
                },
            };
            match s.create_task_group(p, 100) {
                Ok(g) => {
                    NAMES.lock().push((name.clone(), g));
                    let _ = writeln!(sh, "cgroup {name} created under {}", name_of(p));
                    Ok(())
                }
                Err(e) => fail!("cgroup: cannot create '{name}': {e}"),
            }
        }
        CgroupCmd::Weight { name, weight } => {
            let Some(g) = lookup(&name).filter(|&g| g != GroupId::ROOT) else {
                fail!("cgroup: no such group '{name}'");
            };
            match s.set_task_group_weight(g, weight, arch::cpu_id()) {
                Ok(()) => {
                    let _ = writeln!(sh, "cgroup {name} weight {weight}");
                    Ok(())
                }
                Err(e) => fail!("cgroup: cannot set the weight of '{name}': {e}"),
            }
        }
        CgroupCmd::Attach { name, pid } => {
            let Some(g) = lookup(&name) else {
                fail!("cgroup: no such group '{name}'");
            };
            let (t, _) = target_thread("cgroup", pid)?;
            match s.sched_move_task(TaskId(t.idx()), g, arch::cpu_id()) {
                Ok(()) => {
                    let _ = writeln!(sh, "pid {pid} ({}) now in cgroup {name}", t.name());
                    Ok(())
                }
                Err(GroupError::NoSuchTask) => fail!("cgroup: process {pid} has exited"),
                Err(e) => fail!("cgroup: cannot attach {pid} to '{name}': {e}"),
            }
        }
        CgroupCmd::Rm { name } => {
            // The parser refuses `root`; the lookup only finds real groups.
            let Some(g) = lookup(&name).filter(|&g| g != GroupId::ROOT) else {
                fail!("cgroup: no such group '{name}'");
            };
            match s.destroy_task_group(g) {
                Ok(()) => {
                    NAMES.lock().retain(|e| e.1 != g);
                    let _ = writeln!(sh, "cgroup {name} removed");
                    Ok(())
                }
                Err(GroupError::Busy) => {
                    let tasks = s.cfg.groups.nr_tasks(g);
                    let children = s.cfg.groups.list().iter().filter(|e| e.1 == g).count();
                    if tasks == 0 && children == 0 {
                        fail!("cgroup: cannot remove '{name}': busy (an exiting task still queued)")
                    }
                    fail!(
                        "cgroup: cannot remove '{name}': busy ({tasks} task(s) attached, \
                         {children} child group(s))"
                    )
                }
                Err(e) => fail!("cgroup: cannot remove '{name}': {e}"),
            }
        }
        CgroupCmd::Ls => {
            let _ = writeln!(
                sh,
                "{:<32} {:<32} {:>6} {:>6}",
                "NAME", "PARENT", "WEIGHT", "TASKS"
            );
            for (g, parent, weight, tasks) in s.cfg.groups.list() {
                let _ = writeln!(
                    sh,
                    "{:<32} {:<32} {:>6} {:>6}",
                    name_of(g),
                    name_of(parent),
                    weight,
                    tasks
                );
            }
            Ok(())
        }
    }
}
