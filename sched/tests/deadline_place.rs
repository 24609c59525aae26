//! Deadline placement that knows CPU capacity and topology (`sched::smp`'s
//! `find_later_rq` and `select_task_rq_dl`, after Linux's
//! kernel/sched/deadline.c and cpudeadline.c: `dl_task_fits_capacity`,
//! `cpudl_find`'s fitting free CPUs and its largest-capacity fallback,
//! `find_later_rq`'s preference for the caller's CPU and the nearest sched
//! domain).
//!
//! A CPU of capacity `c` fits a deadline task of runtime `r` and relative
//! deadline `d` when `d * c / 1024 >= r`: on a big.LITTLE machine of
//! 1024 + 1024 + 400 + 400, a 6/10 ms task (needs 615) fits only the big
//! CPUs, a 1/10 ms one (needs 103) fits all. Each test below failed before
//! capacity and topology entered the search (then the first later CPU
//! after the task's own was taken, whatever its size or distance).

use std::sync::atomic::Ordering;

use crate::common;
use common::cpu_id;
use common::plat::{machine_hz, Plat};
use common::MS;

use sched::smp::Scheduler;
use sched::{CpuMask, PrevAction, SchedTask, TaskId, TaskParams, Topology, WakeFlags};

/// `common::plat::machine` at HZ 1000, every CPU through its first switch.
fn machine(topo: Topology) -> Scheduler<Plat> {
    let n = topo.nr_cpus();
    let s = machine_hz(topo, 1000);
    for c in 0..n {
        switch(&s, c);
    }
    s
}

/// Two big CPUs (1024) and two little ones (400), one cluster.
fn big_little() -> Scheduler<Plat> {
    machine(
        Topology::flat(4)
            .with_capacities(&[1024, 1024, 400, 400])
            .unwrap(),
    )
}

/// Eight equal CPUs: SMT pairs {0,1} {2,3} {4,5} {6,7}, LLCs {0-3} {4-7}.
fn two_llcs() -> Scheduler<Plat> {
    machine(
        Topology::from_ids(
            &[0, 0, 1, 1, 2, 2, 3, 3],
            &[0, 0, 0, 0, 1, 1, 1, 1],
            &[0; 8],
        )
        .unwrap(),
    )
}

fn dl(runtime_ms: u64, deadline_ms: u64, period_ms: u64) -> TaskParams {
    TaskParams::deadline(runtime_ms * MS, deadline_ms * MS, period_ms * MS)
}

/// `schedule()` + `finish_switch` on `cpu` (its task stays runnable).
fn switch(s: &Scheduler<Plat>, cpu: usize) {
    let sw = {
        let mut rq = s.cpu_rq(cpu_id(cpu));
        s.schedule(&mut rq, PrevAction::Stays)
    };
    s.finish_switch(cpu_id(cpu), &sw);
}

/// Starts task `id` with `p` on `cpu` as Linux allows for a deadline task
/// (spawned fair and pinned there, allowed every CPU, then given `p`), and
/// switches `cpu` so that the first task there runs. The setattr's
/// balancing may push the task on at once.
fn start_on(s: &Scheduler<Plat>, id: u32, p: TaskParams, cpu: usize) {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(cpu));
    assert_eq!(s.spawn(TaskId(id), t, cpu_id(cpu)).unwrap().0, cpu_id(cpu));
    s.set_affinity(TaskId(id), CpuMask::all(), cpu_id(cpu))
        .unwrap();
    s.set_params(TaskId(id), p, cpu_id(cpu)).unwrap();
    switch(s, cpu);
}

/// Makes `cpu` busy with a fair task of its own (not idle, no deadline
/// task: a free CPU in cpudl's sense, ranked after the idle ones).
fn occupy(s: &Scheduler<Plat>, cpu: usize, id: u32) {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::of(cpu_id(cpu));
    s.spawn(TaskId(id), t, cpu_id(cpu)).unwrap();
    switch(s, cpu);
}

/// The CPU `select_task_rq` gives a deadline task of `p` and absolute
/// deadline `deadline_ns` that last ran on `prev`, woken from `this`.
fn wake(s: &Scheduler<Plat>, p: TaskParams, deadline_ns: u64, prev: usize, this: usize) -> usize {
    let mut t = SchedTask::new(p);
    t.cpu = cpu_id(prev);
    t.dl.deadline = deadline_ns;
    s.select_task_rq(&t, cpu_id(this), WakeFlags::TTWU)
        .0
        .index()
}

fn cpu_of(s: &Scheduler<Plat>, id: u32) -> usize {
    s.task_cpu(TaskId(id)).unwrap().index()
}

/// A 6/10 ms task waking on an idle little CPU it does not fit moves to a
/// big one (`select_task_rq_dl`'s `!dl_task_fits_capacity`); a 1/10 ms one
/// fits and stays. Before: both stayed on the little CPU.
#[test]
fn a_waking_dl_task_leaves_a_cpu_it_does_not_fit() {
    let s = big_little();
    let now = s.platform.now.load(Ordering::Relaxed);
    for prev in [2, 3] {
        let big = wake(&s, dl(6, 10, 10), now + 10 * MS, prev, prev);
        assert!(big < 2, "6/10 from little CPU {prev} went to CPU {big}");
        assert_eq!(wake(&s, dl(1, 10, 10), now + 10 * MS, prev, prev), prev);
    }
    // A big CPU it fits keeps it.
    assert_eq!(wake(&s, dl(6, 10, 10), now + 10 * MS, 1, 1), 1);
}

/// Two 6/10 ms tasks started on little CPU 2: the one queued behind is
/// pushed to an idle big CPU, not to the idle little CPU 3 that comes
/// first after CPU 2 (where it went before). Two 1/10 ms tasks there: the
/// little CPU 3 fits and takes it, as before.
#[test]
fn a_pushed_dl_task_goes_to_a_cpu_it_fits() {
    let s = big_little();
    start_on(&s, 1, dl(6, 10, 10), 2);
    start_on(&s, 2, dl(6, 10, 10), 2);
    assert_eq!(cpu_of(&s, 1), 2);
    let pushed = cpu_of(&s, 2);
    assert!(pushed < 2, "6/10 pushed from CPU 2 to CPU {pushed}");
    assert_eq!(s.cpu_rq(cpu_id(2)).stats.nr_dl_push, 1);

    let s = big_little();
    start_on(&s, 1, dl(1, 10, 10), 2);
    start_on(&s, 2, dl(1, 10, 10), 2);
    assert_eq!((cpu_of(&s, 1), cpu_of(&s, 2)), (2, 3));
}

/// When no free CPU fits (a 9/10 ms task needs 922; CPU 0, the only big
/// one, runs a deadline task), the free CPU of largest capacity is taken
/// (`cpudl_find`'s fallback): from little CPU 2 (400) one of the 800 ones,
/// 1 or 3, where before it stayed on CPU 2; from CPU 1 (800) it stays
/// there, its own CPU being as large as any (Linux prefers `task_cpu`
/// among equals); and when no other CPU is free, it stays on its own.
#[test]
fn with_no_fitting_cpu_the_largest_free_one() {
    let s = machine(
        Topology::flat(4)
            .with_capacities(&[1024, 800, 400, 800])
            .unwrap(),
    );
    start_on(&s, 1, dl(1, 10, 10), 0);
    let now = s.platform.now.load(Ordering::Relaxed);
    let to = wake(&s, dl(9, 10, 10), now + 10 * MS, 2, 2);
    assert!(to == 1 || to == 3, "9/10 from CPU 2 went to CPU {to}");
    assert_eq!(wake(&s, dl(9, 10, 10), now + 10 * MS, 1, 1), 1);
    // A task that fits the little CPU is not moved at all.
    assert_eq!(wake(&s, dl(1, 10, 10), now + 10 * MS, 2, 2), 2);
    // With CPUs 1 and 3 running deadline tasks too, no CPU but its own is
    // free: the 9/10 task stays on little CPU 2 (cpudl's free CPUs are
    // only CPU 2, its fallback) rather than preempting a later deadline
    // on a bigger CPU.
    start_on(&s, 2, dl(1, 100, 100), 1);
    start_on(&s, 3, dl(1, 100, 100), 3);
    assert_eq!(wake(&s, dl(9, 10, 10), now + 10 * MS, 2, 2), 2);
}

/// Two deadline tasks started on CPU 3 of the first LLC; its SMT sibling
/// CPU 2 runs a fair task, every other CPU is idle. The pushed task goes
/// to an idle CPU of its own LLC (0 or 1, `find_later_rq`'s walk up the
/// sched domains), not to CPU 4 of the other LLC, the first idle CPU after
/// CPU 3 (where it went before).
#[test]
fn a_pushed_dl_task_prefers_its_own_llc() {
    let s = two_llcs();
    occupy(&s, 2, 9);
    start_on(&s, 1, dl(2, 10, 10), 3);
    start_on(&s, 2, dl(2, 10, 10), 3);
    assert_eq!(cpu_of(&s, 1), 3);
    let pushed = cpu_of(&s, 2);
    assert!(pushed < 2, "pushed from CPU 3 to CPU {pushed}");
}

/// A deadline task waking on CPU 1, where an earlier deadline runs, from
/// CPU 3 (idle, same LLC): it takes the waker's CPU (`find_later_rq`:
/// preempting `this_cpu` is cheaper than migrating elsewhere), not CPU 2,
/// the first idle CPU after CPU 1 (before). CPU 0, CPU 1's SMT sibling,
/// is busy with a fair task, so that no CPU nearer than the LLC is idle.
/// Woken from CPU 5 of the other LLC, it stays in CPU 1's LLC.
#[test]
fn a_waking_dl_task_takes_the_wakers_cpu_in_its_llc() {
    let s = two_llcs();
    occupy(&s, 0, 9);
    start_on(&s, 1, dl(2, 10, 10), 1);
    let late = s.platform.now.load(Ordering::Relaxed) + 100 * MS;
    assert_eq!(wake(&s, dl(2, 10, 10), late, 1, 3), 3);
    let to = wake(&s, dl(2, 10, 10), late, 1, 5);
    assert!(to == 2 || to == 3, "woken from CPU 5: CPU {to}");
}
