//! Task groups over the whole machine ([`crate::fair::group`]): the
//! [`Scheduler`]'s side of `sched_create_group`, `sched_group_set_weight`,
//! `sched_destroy_group` and `sched_move_task`, which visit every CPU's
//! runqueue in turn (each under its own lock; a slow path, which may
//! allocate when a group is created) or the task wherever it is: running
//! or queued on a runqueue, or asleep in its cell.

use super::lifecycle::LifecycleError;
use super::{Platform, Scheduler};
use crate::cpu_id::CpuId;
use crate::fair::group::{GroupError, GroupId};
use crate::task::{SchedTask, TaskId};

impl<P: Platform> Scheduler<P> {
    fn cpus(&self) -> impl Iterator<Item = CpuId> {
        CpuId::range(self.nr_cpus())
    }

    /// `sched_create_group`: a group under `parent` with `cpu.weight`
    /// `weight`, built on every CPU's runqueue. Errors change nothing.
    pub fn create_task_group(&self, parent: GroupId, weight: u32) -> Result<GroupId, GroupError> {
        let g = self.cfg.groups.create(parent, weight)?;
        let cpus: alloc::vec::Vec<CpuId> = self.cpus().collect();
        for (i, &cpu) in cpus.iter().enumerate() {
            // The CPU's removal records for its group runqueues, with its
            // first group (kept for the machine's life).
            let r = self.slots[cpu.index()]
                .summary
                .group_removed
                .try_call_once(crate::fair::group::GroupRemoved::try_new_boxed)
                .map(|_| ())
                .and_then(|()| self.cpu_rq(cpu).alloc_task_group(g));
            if let Err(e) = r {
                for &done in &cpus[..i] {
                    let _ = self.cpu_rq(done).free_task_group(g);
                }
                let _ = self.cfg.groups.destroy(g);
                return Err(e);
            }
        }
        Ok(g)
    }

    /// `sched_group_set_weight`: range-checked (a bad value changes
    /// nothing), then the group's entity on every CPU reweighted.
    pub fn set_task_group_weight(
        &self,
        g: GroupId,
        weight: u32,
        this_cpu: CpuId,
    ) -> Result<(), GroupError> {
        self.cfg.groups.set_weight(g, weight)?;
        for cpu in self.cpus() {
            let mut rq = self.cpu_rq(cpu);
            rq.update_rq_clock(self.platform.now_ns());
            rq.update_group_shares(g);
            let r = rq.need_resched();
            drop(rq);
            self.kick_if_needed(cpu, this_cpu, r);
        }
        Ok(())
    }

    /// `sched_destroy_group`: refused ([`GroupError::Busy`]) while tasks are
    /// attached to the group, it has child groups, or anything of it is
    /// still queued or running on some CPU.
    pub fn destroy_task_group(&self, g: GroupId) -> Result<(), GroupError> {
        if !self.cfg.groups.exists(g) || g == GroupId::ROOT {
            return Err(GroupError::NoSuchGroup);
        }
        if self
            .cpus()
            .any(|cpu| !self.cpu_rq(cpu).group_idle_here(g.0))
        {
            return Err(GroupError::Busy);
        }
        self.cfg.groups.destroy(g)?;
        for cpu in self.cpus() {
            // Idle everywhere with no task attached: it stays so.
            let _ = self.cpu_rq(cpu).free_task_group(g);
        }
        Ok(())
    }

    /// `sched_move_task`: attaches task `id` to group `g` (the root
    /// included), wherever it is: a queued or running task changes group
    /// runqueues at once (lag kept), a sleeper's state is changed in its
    /// cell and its wakeup queues it in the new group.
    pub fn sched_move_task(
        &self,
        id: TaskId,
        g: GroupId,
        this_cpu: CpuId,
    ) -> Result<(), GroupError> {
        if !self.cfg.groups.exists(g) {
            return Err(GroupError::NoSuchGroup);
        }
        loop {
            match self.task_rq_lock(id, this_cpu) {
                Ok((cpu, mut rq)) => {
                    rq.update_rq_clock(self.platform.now_ns());
                    rq.sched_move_task(id, g)?;
                    let r = rq.need_resched();
                    drop(rq);
                    self.kick_if_needed(cpu, this_cpu, r);
                    return Ok(());
                }
                Err(LifecycleError::Asleep) => {
                    let done = self.with_parked(id, |_, p| {
                        let t = p.as_mut()?;
                        Some(self.cfg.groups.move_task(GroupId(t.group), g).map(|()| {
                            t.group = g.0;
                            // task_change_group_fair: its averages leave
                            // the runqueue it slept on now (through the
                            // removal record of that CPU); its wakeup
                            // attaches them to the new group's.
                            self.remove_sleeper_load(t, usize::MAX);
                        }))
                    });
                    match done {
                        Some(Some(r)) => return r,
                        Some(None) => return Err(GroupError::NoSuchTask),
                        // Woken meanwhile: a runqueue holds it now.
                        None => {}
                    }
                }
                Err(_) => return Err(GroupError::NoSuchTask),
            }
        }
    }

    /// The task group of task `id` (a copy of its state is read).
    pub fn task_group(&self, id: TaskId, this_cpu: CpuId) -> Option<GroupId> {
        self.task(id, this_cpu).ok().map(|t| GroupId(t.group))
    }

    /// A task leaves the machine (exit, removal): its group no longer
    /// counts it.
    pub(super) fn leave_task_group(&self, t: &SchedTask) {
        if t.group != 0 {
            let _ = self.cfg.groups.move_task(GroupId(t.group), GroupId::ROOT);
        }
    }
}
