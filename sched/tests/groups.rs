//! Task groups (`sched::fair::group`, Linux's CONFIG_FAIR_GROUP_SCHED):
//! shares between groups on one CPU and across CPUs, weights, nesting, a
//! task moved between groups, destroy refused while busy, delayed dequeue
//! in a group and of a group entity, migration into the group's runqueue on the new CPU, the
//! sleeper's group made the next buddy above it and a lone grouped task's
//! yield (Linux 7.2's `dequeue_entities()` and `yield_task_fair()`), and
//! the runqueue invariants (checked after every tick by `H::run_ms`).
//!
//! Shares are measured as ratios of runtime over seconds of spinning on a
//! virtual clock; the bounds are stated at each assert.

use crate::common;

use std::sync::Arc;

use common::{cpu_id, H};
use sched::fair::group::{GroupError, GroupId, MAX_TASK_GROUPS};
use sched::{DequeueFlags, Rq, SchedConfig, SchedTask, TaskId, TaskParams, WakeFlags};

fn spawn_in(h: &mut H, id: u32, g: GroupId) {
    h.spawn(id, TaskParams::default());
    h.rq.sched_move_task(TaskId(id), g).unwrap();
}

/// Picks, then ticks (at most 100) until task `id` runs.
fn run_until_current(h: &mut H, id: u32) {
    h.pick();
    for _ in 0..100 {
        if h.curr() == Some(id) {
            return;
        }
        h.tick();
    }
}

fn share(h: &H, ids: &[u32], all: &[u32]) -> f64 {
    let mine: u64 = ids.iter().map(|&i| h.runtime(i)).sum();
    let total: u64 = all.iter().map(|&i| h.runtime(i)).sum();
    mine as f64 / total as f64
}

/// The acceptance row: two groups of equal weight, one with 1 spinner and
/// one with 10, on 1 CPU: each group gets half (within 1 point); flat, the
/// lone spinner would get 1/11.
#[test]
fn equal_groups_split_one_cpu_whatever_their_task_count() {
    let mut h = H::one();
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    let b = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    spawn_in(&mut h, 1, a);
    for id in 10..20 {
        spawn_in(&mut h, id, b);
    }
    h.pick();
    h.run_ms(4000);
    let all: Vec<u32> = std::iter::once(1).chain(10..20).collect();
    let sa = share(&h, &[1], &all);
    assert!(
        (sa - 0.5).abs() < 0.01,
        "group A (1 spinner) got {sa:.4}, want 0.5 ± 0.01"
    );
    // Within B, its ten spinners share evenly (each 5% ± 0.5 point).
    for id in 10..20 {
        let s = share(&h, &[id], &all);
        assert!((s - 0.05).abs() < 0.005, "task {id} of B got {s:.4}");
    }
    // Alone on the CPU each group entity has all its shares.
    assert_eq!(h.rq.group_entity_weight(a), Some(1024));
    assert_eq!(h.rq.group_entity_weight(b), Some(1024));
    // The root holds the two group entities and nothing else.
    assert_eq!(h.rq.fair.nr_queued, 2);
    assert_eq!(h.rq.fair.load, 2048);
    assert_eq!(h.rq.nr_runnable(), 11);
    assert_eq!(h.rq.nr_running(), 11);
}

/// The same 1 against 10 without groups: the flat path, 1/11 each.
#[test]
fn without_groups_the_lone_spinner_gets_one_eleventh() {
    let mut h = H::one();
    for id in 1..=11 {
        h.spawn(id, TaskParams::default());
    }
    h.pick();
    h.run_ms(2000);
    let all: Vec<u32> = (1..=11).collect();
    let s = share(&h, &[1], &all);
    assert!((s - 1.0 / 11.0).abs() < 0.01, "{s}");
}

/// cpu.weight 100 against 300: 1:3 (within 1 point), whatever the tasks.
#[test]
fn weights_100_and_300_split_one_to_three() {
    let mut h = H::one();
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    let b = h.rq.create_task_group(GroupId::ROOT, 300).unwrap();
    for id in 1..=3 {
        spawn_in(&mut h, id, a);
    }
    spawn_in(&mut h, 10, b);
    h.pick();
    h.run_ms(4000);
    let all = [1, 2, 3, 10];
    let sb = share(&h, &[10], &all);
    assert!(
        (sb - 0.75).abs() < 0.01,
        "weight 300 got {sb:.4}, want 0.75 ± 0.01"
    );
    assert_eq!(h.rq.group_entity_weight(b), Some(3072));
}

/// Nested groups: A and B at 100 under the root, A1 (100) and A2 (300)
/// under A. A1 has two spinners, A2 one, B one: B 1/2, A2 3/8, A1 1/8
/// (each within 1 point).
#[test]
fn nested_groups_share_level_by_level() {
    let mut h = H::one();
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    let b = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    let a1 = h.rq.create_task_group(a, 100).unwrap();
    let a2 = h.rq.create_task_group(a, 300).unwrap();
    spawn_in(&mut h, 1, a1);
    spawn_in(&mut h, 2, a1);
    spawn_in(&mut h, 3, a2);
    spawn_in(&mut h, 4, b);
    h.pick();
    h.run_ms(4000);
    let all = [1, 2, 3, 4];
    let (s_a1, s_a2, s_b) = (
        share(&h, &[1, 2], &all),
        share(&h, &[3], &all),
        share(&h, &[4], &all),
    );
    assert!((s_b - 0.5).abs() < 0.01, "B {s_b:.4}");
    assert!((s_a2 - 0.375).abs() < 0.01, "A2 {s_a2:.4}");
    assert!((s_a1 - 0.125).abs() < 0.01, "A1 {s_a1:.4}");
    // A's runqueue holds the two child group entities only.
    assert_eq!(h.rq.group_fair(a).unwrap().nr_queued, 2);
    assert_eq!(h.rq.group_fair(a1).unwrap().nr_queued, 2);
    // A destroy of A is refused while it has children, of A1 while it has tasks.
    assert_eq!(h.rq.destroy_task_group(a), Err(GroupError::Busy));
    assert_eq!(h.rq.destroy_task_group(a1), Err(GroupError::Busy));
}

/// A task moved from A to B while others spin: before, A (2 tasks) and B
/// (1) each have half; after, A's remaining task has A's half alone and
/// B's two share theirs. Moved while running and while queued.
#[test]
fn a_task_moved_between_groups_takes_its_new_groups_share() {
    let mut h = H::one();
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    let b = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    spawn_in(&mut h, 1, a);
    spawn_in(&mut h, 2, a);
    spawn_in(&mut h, 3, b);
    h.pick();
    h.run_ms(2000);
    let all = [1, 2, 3];
    let s1 = share(&h, &[1], &all);
    assert!((s1 - 0.25).abs() < 0.01, "before: task 1 {s1:.4}");
    // Move whichever of 1 and 2 is running (the running-task path), then
    // measure a fresh window.
    let moved = h.curr().filter(|c| *c == 1 || *c == 2).unwrap_or(2);
    let stay = 3 - moved;
    h.rq.sched_move_task(TaskId(moved), b).unwrap();
    h.rq.check().unwrap();
    assert_eq!(h.task(moved).group, b.0);
    assert_eq!(h.cfg.groups.nr_tasks(a), 1);
    assert_eq!(h.cfg.groups.nr_tasks(b), 2);
    let before: Vec<u64> = all.iter().map(|&i| h.runtime(i)).collect();
    h.run_ms(2000);
    let d: Vec<u64> = all
        .iter()
        .zip(&before)
        .map(|(&i, b)| h.runtime(i) - b)
        .collect();
    let tot: u64 = d.iter().sum();
    let s_stay = d[(stay - 1) as usize] as f64 / tot as f64;
    let s_moved = d[(moved - 1) as usize] as f64 / tot as f64;
    assert!(
        (s_stay - 0.5).abs() < 0.01,
        "after: A's remaining task {s_stay:.4}"
    );
    assert!(
        (s_moved - 0.25).abs() < 0.01,
        "after: the moved task {s_moved:.4}"
    );
    // And back to the root: three tasks and group B's entity.
    h.rq.sched_move_task(TaskId(stay), GroupId::ROOT).unwrap();
    h.rq.check().unwrap();
    assert!(!h.rq.group_entity_queued(a));
    h.rq.destroy_task_group(a).unwrap();
    h.run_ms(100);
}

/// Destroy is refused while the group has a task (running, queued or
/// asleep) or a child group; bad input is an error that changes nothing.
#[test]
fn destroy_refused_while_busy_and_bad_input_changes_nothing() {
    let mut h = H::one();
    assert_eq!(
        h.rq.create_task_group(GroupId::ROOT, 0),
        Err(GroupError::BadWeight(0))
    );
    assert_eq!(
        h.rq.create_task_group(GroupId::ROOT, 10_001),
        Err(GroupError::BadWeight(10_001))
    );
    assert_eq!(
        h.rq.create_task_group(GroupId(7), 100),
        Err(GroupError::NoSuchGroup)
    );
    assert!(h.cfg.groups.list().is_empty());
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    spawn_in(&mut h, 1, a);
    h.spawn(2, TaskParams::default());
    h.pick();
    assert_eq!(h.rq.destroy_task_group(a), Err(GroupError::Busy));
    assert_eq!(
        h.rq.set_task_group_weight(a, 0),
        Err(GroupError::BadWeight(0))
    );
    assert_eq!(
        h.rq.set_task_group_weight(a, 20_000),
        Err(GroupError::BadWeight(20_000))
    );
    assert_eq!(h.cfg.groups.weight(a), Ok(100));
    assert_eq!(
        h.rq.sched_move_task(TaskId(1), GroupId(9)),
        Err(GroupError::NoSuchGroup)
    );
    assert_eq!(
        h.rq.sched_move_task(TaskId(55), a),
        Err(GroupError::NoSuchTask)
    );
    assert_eq!(h.task(1).group, a.0);
    // Asleep, the task still counts.
    while h.curr() != Some(1) {
        h.tick();
    }
    h.block();
    h.rq.settle_delayed(TaskId(1));
    assert_eq!(h.rq.destroy_task_group(a), Err(GroupError::Busy));
    // A weight change reaches the entity (set while the group is empty here).
    h.rq.set_task_group_weight(a, 500).unwrap();
    assert_eq!(h.cfg.groups.weight(a), Ok(500));
    h.wake(1, WakeFlags::empty());
    h.rq.check().unwrap();
    assert_eq!(h.rq.group_entity_weight(a), Some(5120));
    // Out of the group: destroy succeeds, and the slot is reused.
    h.rq.sched_move_task(TaskId(1), GroupId::ROOT).unwrap();
    h.run_ms(10);
    h.rq.destroy_task_group(a).unwrap();
    h.rq.check().unwrap();
    assert_eq!(h.rq.destroy_task_group(a), Err(GroupError::NoSuchGroup));
    // The bound on the number of groups.
    let mut made = Vec::new();
    loop {
        match h.rq.create_task_group(GroupId::ROOT, 100) {
            Ok(g) => made.push(g),
            Err(e) => {
                assert_eq!(e, GroupError::TooManyGroups);
                break;
            }
        }
    }
    assert_eq!(made.len(), MAX_TASK_GROUPS - 1);
    h.rq.check().unwrap();
    for g in made {
        h.rq.destroy_task_group(g).unwrap();
    }
    h.rq.check().unwrap();
    h.run_ms(10);
}

/// A grouped task that blocks with negative lag is delayed in its group's
/// runqueue, and its group entity stays queued in the root (as in Linux);
/// once the delayed dequeue completes the emptied group leaves the root.
#[test]
fn a_delayed_task_keeps_its_group_queued() {
    let mut h = H::one();
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    spawn_in(&mut h, 1, a);
    spawn_in(&mut h, 2, a);
    h.spawn(3, TaskParams::default());
    h.pick();
    // Run until a task of A has run past its share, then block it.
    let mut blocked = None;
    for _ in 0..200 {
        h.tick();
        let c = h.curr().unwrap();
        if c != 3 {
            let f = h.rq.group_fair(a).unwrap();
            let _ = f;
            // Block it: ineligible in A's runqueue means delayed.
            h.adv(300_000);
            h.rq.update_curr();
            let sw = h.block();
            assert_eq!(sw.prev, Some(TaskId(c)));
            if h.rq
                .task(TaskId(c))
                .is_some_and(|t| t.state == sched::TaskState::Delayed)
            {
                blocked = Some(c);
                break;
            }
            h.wake(c, WakeFlags::empty());
        }
    }
    let c = blocked.expect("a grouped task was delayed");
    h.rq.check().unwrap();
    assert!(h.rq.group_entity_queued(a));
    // The other task of A blocks too (not delayed or delayed: either way
    // A's entity stays queued while anything of A is).
    let other = 3 - c;
    while h.curr() != Some(other) {
        h.tick();
    }
    h.block();
    h.rq.check().unwrap();
    // Task 3 runs on; picks finish the delayed dequeues: A empties and leaves.
    for _ in 0..50 {
        h.tick();
        h.pick();
    }
    h.rq.check().unwrap();
    assert!(h.rq.group_fair(a).unwrap().nr_queued == 0);
    assert!(!h.rq.group_entity_queued(a));
    assert_eq!(h.rq.fair.nr_queued, 1);
}

/// A wakeup of a grouped task is decided between the entities at the level
/// both tasks share (`find_matching_se`): a wakee in another group than the
/// running task competes as its group entity.
#[test]
fn a_wakeup_preempts_at_the_level_the_tasks_share() {
    let mut h = H::one();
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    let b = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    spawn_in(&mut h, 1, a);
    h.pick();
    h.run_ms(50);
    // Task 2 in B has slept: B's entity enters the root with zero lag, at
    // V, while A's entity ran its slice: the wakeup picks B.
    spawn_in(&mut h, 2, b);
    h.rq.check().unwrap();
    h.run_ms(20);
    assert!(h.runtime(2) > 0, "B's task ran");
    h.rq.check().unwrap();
}

/// Two runqueues sharing one configuration, stepped together (no balancer).
struct Two {
    cfg: Arc<SchedConfig>,
    rqs: [Rq; 2],
    now: u64,
}

impl Two {
    fn new() -> Two {
        let cfg = Arc::new(SchedConfig::new(2, 1000));
        let rqs = [
            Rq::new(cpu_id(0), cfg.clone(), 64),
            Rq::new(cpu_id(1), cfg.clone(), 64),
        ];
        Two { cfg, rqs, now: 1 }
    }
    fn group(&mut self, parent: GroupId, w: u32) -> GroupId {
        let g = self.cfg.groups.create(parent, w).unwrap();
        for rq in &mut self.rqs {
            rq.alloc_task_group(g).unwrap();
        }
        g
    }
    fn spawn(&mut self, cpu: usize, id: u32, g: GroupId) {
        let mut t = SchedTask::new(TaskParams::default());
        t.group = g.0;
        self.cfg.groups.move_task(GroupId::ROOT, g).unwrap();
        self.rqs[cpu].update_rq_clock(self.now);
        self.rqs[cpu].wake_up_new_task(TaskId(id), t);
    }
    fn run_ms(&mut self, ms: u64) {
        common::run_rqs_ms(&mut self.rqs, &mut self.now, ms);
    }

    fn runtime(&self, id: u32) -> u64 {
        self.rqs
            .iter()
            .find_map(|rq| rq.task(TaskId(id)))
            .unwrap()
            .se
            .sum_exec_runtime
    }
}

/// Across CPUs, each CPU's group entity gets the group's shares in
/// proportion to the group's load there (`calc_group_shares`). Group A has
/// one spinner per CPU, group B five per CPU: each group has half of each
/// CPU and of the machine (within 1 point).
#[test]
fn equal_groups_split_two_cpus_evenly() {
    let mut t = Two::new();
    let a = t.group(GroupId::ROOT, 100);
    let b = t.group(GroupId::ROOT, 100);
    t.spawn(0, 1, a);
    t.spawn(1, 2, a);
    for id in 10..20 {
        t.spawn((id % 2) as usize, id, b);
    }
    t.run_ms(3000);
    let ra: u64 = [1, 2].iter().map(|&i| t.runtime(i)).sum();
    let rb: u64 = (10..20).map(|i| t.runtime(i)).sum();
    let sa = ra as f64 / (ra + rb) as f64;
    assert!((sa - 0.5).abs() < 0.01, "A got {sa:.4} of the machine");
    // Each CPU's entity of each group has half the group's shares.
    for rq in &t.rqs {
        assert_eq!(rq.group_entity_weight(a), Some(512));
        assert_eq!(rq.group_entity_weight(b), Some(512));
    }
    assert_eq!(t.cfg.groups.load(a.0), 2048);
    assert_eq!(t.cfg.groups.load(b.0), 10240);
}

/// Uneven placement: A's single spinner on CPU 0, B's ten spinners one on
/// CPU 0 and nine on CPU 1. On CPU 0, A's entity has all of A's shares
/// (1024) and B's a tenth of B's (102): A gets 1024/1126 of CPU 0 (within
/// 1 point), as Linux's formula gives; B gets the rest and all of CPU 1.
/// (Evening this out across CPUs is the load balancer's job.)
#[test]
fn uneven_placement_splits_each_cpu_by_the_groups_load_there() {
    let mut t = Two::new();
    let a = t.group(GroupId::ROOT, 100);
    let b = t.group(GroupId::ROOT, 100);
    t.spawn(0, 1, a);
    t.spawn(0, 10, b);
    for id in 11..20 {
        t.spawn(1, id, b);
    }
    t.run_ms(3000);
    assert_eq!(t.rqs[0].group_entity_weight(a), Some(1024));
    assert_eq!(t.rqs[0].group_entity_weight(b), Some(102));
    assert_eq!(t.rqs[1].group_entity_weight(b), Some(921));
    let (r1, r10) = (t.runtime(1), t.runtime(10));
    let s = r1 as f64 / (r1 + r10) as f64;
    let want = 1024.0 / 1126.0;
    assert!(
        (s - want).abs() < 0.01,
        "A's share of CPU 0 {s:.4}, want {want:.4}"
    );
}

/// A task that moves to another CPU is queued in its group's runqueue
/// there, and the group's entities follow the load (balancer migration:
/// detach_task / attach_task).
#[test]
fn a_migrated_task_joins_its_groups_runqueue_on_the_new_cpu() {
    let mut t = Two::new();
    let a = t.group(GroupId::ROOT, 100);
    t.spawn(0, 1, a);
    t.spawn(0, 2, a);
    t.run_ms(10);
    let mover = if t.rqs[0].curr() == Some(TaskId(1)) {
        2
    } else {
        1
    };
    let task = t.rqs[0].detach_task(TaskId(mover)).unwrap();
    assert_eq!(task.group, a.0);
    t.rqs[0].check().unwrap();
    t.rqs[1].update_rq_clock(t.now);
    t.rqs[1].attach_task(TaskId(mover), task);
    t.rqs[1].check().unwrap();
    assert_eq!(t.rqs[1].group_fair(a).unwrap().nr_queued, 1);
    assert!(t.rqs[1].group_entity_queued(a));
    assert_eq!(t.rqs[0].group_fair(a).unwrap().nr_queued, 1);
    t.run_ms(20);
    // Half of A's shares on each CPU, from the load averages (Linux's
    // calc_group_shares): the mover's average, attached on CPU 1 20 ms ago,
    // is still a little off the weight, so within 1% of 512.
    for rq in &t.rqs {
        let w = rq.group_entity_weight(a).unwrap();
        assert!(
            (507..=517).contains(&w),
            "A's entity weight {w}, want 512 ± 1%"
        );
    }
    assert!(t.runtime(mover) > 0);
    // Dequeued for good on CPU 1 (it exits there, say): its group empties there.
    let _ = t.rqs[1]
        .dequeue_task(TaskId(mover), DequeueFlags::empty())
        .unwrap();
    t.rqs[1].check().unwrap();
    assert!(!t.rqs[1].group_entity_queued(a));
}

/// Linux 7.2's `dequeue_entities()`: when a grouped task goes to sleep and
/// its group's runqueue keeps other entities, the group's entity becomes
/// the next buddy in its parent's runqueue (and so on up: `if (task_sleep
/// && se) set_next_buddy(se)`), whatever NEXT_BUDDY says, so that the next
/// pick there favours the sleeper's group. A dequeue that is not a sleep
/// (a migration) nominates nothing, and neither does the group's last
/// task leaving: its entity leaves the root too.
#[test]
fn a_sleeping_grouped_task_makes_its_group_the_next_buddy_above() {
    let mut h = H::one();
    h.cfg.features.set(sched::Feature::DelayDequeue, false);
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    spawn_in(&mut h, 1, a);
    spawn_in(&mut h, 2, a);
    spawn_in(&mut h, 4, a);
    h.spawn(3, TaskParams::default());
    run_until_current(&mut h, 3);
    assert_eq!(h.curr(), Some(3), "the flat task runs");
    let root_curr = h.rq.fair.curr();
    assert_eq!(h.rq.fair.next_buddy(), None);
    // A task of A leaves without sleeping (a migration): no buddy.
    h.rq.dequeue_task(TaskId(4), DequeueFlags::empty()).unwrap();
    assert_eq!(h.rq.fair.next_buddy(), None);
    // A task of A goes to sleep; A keeps task 1: A's entity, the root's
    // other entity, is the next buddy there.
    h.rq.dequeue_task(TaskId(2), DequeueFlags::SLEEP).unwrap();
    let b = h.rq.fair.next_buddy();
    assert!(
        b.is_some() && b != root_curr,
        "{b:?} (running {root_curr:?})"
    );
    assert!(h.rq.group_entity_queued(a));
    h.rq.check().unwrap();
    // A's last task sleeps: A's entity leaves the root, and the buddy
    // with it.
    h.rq.dequeue_task(TaskId(1), DequeueFlags::SLEEP).unwrap();
    assert!(!h.rq.group_entity_queued(a));
    assert_eq!(h.rq.fair.next_buddy(), None);
    h.rq.check().unwrap();
}

/// Linux 7.2's `yield_task_fair()` returns early only when the CPU holds
/// one runnable task (`rq->nr_running == 1`), whatever its runqueue: a
/// task alone in its group, beside a task of the root, still forfeits the
/// rest of its request there (v = its deadline, a new deadline a slice
/// later).
#[test]
fn a_task_alone_in_its_group_forfeits_its_request_when_it_yields() {
    let mut h = H::one();
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    spawn_in(&mut h, 1, a);
    h.spawn(2, TaskParams::default());
    run_until_current(&mut h, 1);
    assert_eq!(h.curr(), Some(1));
    assert_eq!(h.rq.nr_running(), 2);
    assert_eq!(h.rq.group_fair(a).unwrap().nr_queued, 1);
    let before = h.se(1);
    h.rq.yield_task();
    let after = h.se(1);
    assert_eq!(after.vruntime, before.deadline, "{before:?} -> {after:?}");
    assert!(after.deadline > before.deadline, "{before:?} -> {after:?}");
    h.rq.check().unwrap();
}

/// Group A with task 1 alone in it and task 2 in the root, on one CPU; ticks
/// until task 1 runs with A's entity not eligible in the root (it has run
/// past its share: V < its vruntime). Returns A, or `None` if that never
/// happened in 200 ticks.
fn running_with_its_group_ineligible(h: &mut H) -> GroupId {
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    spawn_in(h, 1, a);
    h.spawn(2, TaskParams::default());
    h.pick();
    for _ in 0..200 {
        h.tick();
        if h.curr() == Some(1) {
            h.adv(200_000);
            h.rq.update_curr();
            let ge = h.rq.group_entity(a).unwrap();
            if (h.rq.avg_vruntime().wrapping_sub(ge.vruntime) as i64) < 0 {
                return a;
            }
        }
    }
    panic!("task 1 never ran with its group entity ineligible");
}

/// Linux 7.2's `dequeue_entities()`: the last task of a group's runqueue
/// sleeps (dequeued: alone there, it is eligible there) while the group's
/// entity is not eligible in the root, so the entity is dequeued with
/// DEQUEUE_SLEEP and DELAY_DEQUEUE delays it: it stays queued, delayed,
/// with the lag it had (`update_entity_lag`: V − v, read off the root
/// before the sleep); the pick passes over it while it is not eligible
/// (task 2 runs) and, once it is and a pick lands on it, finishes its
/// dequeue (`pick_next_entity` → `DEQUEUE_DELAYED`) with the lag DELAY_ZERO
/// leaves (0: it was eligible). Before, the group entity left at once.
#[test]
fn a_group_entity_is_delayed_when_its_last_task_sleeps_ineligible() {
    let mut h = H::one();
    let a = running_with_its_group_ineligible(&mut h);
    let ge = *h.rq.group_entity(a).unwrap();
    let lag = h.rq.avg_vruntime().wrapping_sub(ge.vruntime) as i64;
    assert!(lag < 0);
    let sw = h.block();
    assert_eq!(sw.prev, Some(TaskId(1)));
    assert_eq!(sw.next, Some(TaskId(2)), "the root's other entity runs");
    assert!(h.rq.task(TaskId(1)).is_none(), "task 1 itself is dequeued");
    assert_eq!(h.rq.group_fair(a).unwrap().nr_queued, 0);
    let d = *h.rq.group_entity(a).unwrap();
    assert!(d.on_rq && d.sched_delayed, "A's entity delayed: {d:?}");
    assert_eq!(d.vlag, lag, "its lag when it was delayed");
    assert_eq!(d.vruntime, ge.vruntime, "not moved");
    assert_eq!(h.rq.fair.nr_queued, 2, "task 2 and A's delayed entity");
    h.rq.check().unwrap();
    // Task 2 runs; A's entity stays delayed while it is not eligible and
    // is dequeued by the pick that lands on it once it is.
    let mut dequeued_at = None;
    for t in 0..100 {
        let v = h.rq.avg_vruntime();
        let e = *h.rq.group_entity(a).unwrap();
        if !e.on_rq {
            dequeued_at = Some(t);
            break;
        }
        assert!(e.sched_delayed);
        if (v.wrapping_sub(e.vruntime) as i64) < 0 {
            // Not eligible: the pick leaves it where it is.
            h.pick();
            assert_eq!(h.curr(), Some(2));
            assert!(h.rq.group_entity(a).unwrap().sched_delayed);
        }
        h.tick();
        h.pick();
        h.rq.check().unwrap();
    }
    assert!(
        dequeued_at.is_some(),
        "A's delayed entity was never dequeued"
    );
    let e = *h.rq.group_entity(a).unwrap();
    assert!(!e.sched_delayed);
    assert_eq!(
        e.vlag, 0,
        "DELAY_ZERO: its lag (>= 0 once eligible) clipped to 0"
    );
    assert_eq!(h.rq.fair.nr_queued, 1);
    assert_eq!(h.curr(), Some(2));
}

/// `enqueue_task_fair()` on a group whose entity is delayed: the entity is
/// requeued where it was (`requeue_delayed_entity`: no time passed, its lag
/// is the one it was delayed with, so it is not placed again) and the task
/// queued below it; then the group runs again when its entity is picked.
#[test]
fn a_delayed_group_entity_is_requeued_in_place_by_a_wakeup() {
    let mut h = H::one();
    let a = running_with_its_group_ineligible(&mut h);
    h.block();
    let d = *h.rq.group_entity(a).unwrap();
    assert!(d.on_rq && d.sched_delayed, "{d:?}");
    h.wake(1, WakeFlags::empty()).unwrap();
    let e = *h.rq.group_entity(a).unwrap();
    assert!(e.on_rq && !e.sched_delayed, "{e:?}");
    assert_eq!(
        (e.vruntime, e.deadline),
        (d.vruntime, d.deadline),
        "in place"
    );
    assert_eq!(h.rq.group_fair(a).unwrap().nr_queued, 1);
    assert_eq!(h.rq.fair.nr_queued, 2);
    h.rq.check().unwrap();
    h.run_ms(100);
    let (r1, r2) = (h.runtime(1), h.runtime(2));
    assert!(r1 > 0 && r2 > 0);
}

/// 66951e4860d3 ("sched/fair: Fix update_cfs_group() vs DELAY_DEQUEUE"): a
/// group whose runqueue empties keeps its entity's weight, so an entity left
/// queued, delayed, competes and leaves with the weight it had. Group A has
/// a spinner on each of two CPUs and CPU 0 a root task too; A's task on CPU
/// 0 sleeps while A's entity there is not eligible. Without the rule the
/// emptied runqueue's shares (from its decaying load average against A's
/// load on CPU 1) would reweight the delayed entity.
#[test]
fn an_emptied_group_keeps_its_entitys_weight_while_it_is_delayed() {
    let mut t = Two::new();
    let a = t.group(GroupId::ROOT, 100);
    t.spawn(0, 1, a);
    t.spawn(1, 2, a);
    let mut root = SchedTask::new(TaskParams::default());
    root.se.vlag = 0;
    t.rqs[0].wake_up_new_task(TaskId(3), root);
    t.run_ms(40);
    let mut delayed = false;
    for _ in 0..200 {
        t.run_ms(1);
        let rq = &mut t.rqs[0];
        if rq.curr() != Some(TaskId(1)) {
            continue;
        }
        t.now += 200_000;
        rq.update_rq_clock(t.now);
        rq.update_curr();
        let ge = *rq.group_entity(a).unwrap();
        if (rq.avg_vruntime().wrapping_sub(ge.vruntime) as i64) < 0 {
            let w = ge.load.weight;
            let sw = rq.schedule(true);
            assert_eq!(sw.prev, Some(TaskId(1)));
            let d = *rq.group_entity(a).unwrap();
            assert!(d.on_rq && d.sched_delayed, "A's entity delayed: {d:?}");
            assert_eq!(rq.group_fair(a).unwrap().load, 0, "A's runqueue is empty");
            assert_eq!(d.load.weight, w, "the weight it competed with");
            rq.check().unwrap();
            delayed = true;
            // Task 3 runs; the pick that lands on A's entity finishes its
            // dequeue (`dequeue_entity` ends in `update_cfs_group`): it
            // leaves with that weight too, which its blocked load average
            // keeps being weighed by until A is queued here again.
            for _ in 0..100 {
                if !rq.group_entity(a).unwrap().on_rq {
                    break;
                }
                t.now += 1_000_000;
                rq.update_rq_clock(t.now);
                rq.task_tick();
                rq.pick_next_task();
                rq.check().unwrap();
            }
            let e = *rq.group_entity(a).unwrap();
            assert!(!e.on_rq, "A's delayed entity was never dequeued");
            assert_eq!(e.load.weight, w, "dequeued with the weight it had");
            break;
        }
    }
    assert!(delayed, "A's entity on CPU 0 was never delayed");
}

/// Group A (task 3 alone in it) queued beside two nice-0 tasks in the root,
/// not running, with a non-zero lag; `None` if that never happened.
fn group_queued_with_lag(h: &mut H) -> GroupId {
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    h.spawn(1, TaskParams::default());
    h.spawn(2, TaskParams::default());
    spawn_in(h, 3, a);
    h.pick();
    for _ in 0..200 {
        h.tick();
        h.adv(170_000);
        h.rq.update_curr();
        let ge = *h.rq.group_entity(a).unwrap();
        let lag = h.rq.avg_vruntime().wrapping_sub(ge.vruntime) as i64;
        if h.curr() != Some(3) && ge.on_rq && !ge.sched_delayed && lag != 0 {
            return a;
        }
    }
    panic!("A's entity was never queued, waiting, with a lag");
}

/// Linux 7.2's `reweight_entity()` for a queued group entity whose
/// `cpu.weight` changes (101f3498b4bd, "sched/fair: Revert 6d71a9c61604"):
/// no placement, so it keeps its lag (in real time: scaled by old/new
/// weight) whatever PLACE_LAG says, V does not move, and its deadline keeps
/// its real-time distance from V whatever PLACE_REL_DEADLINE says.
#[test]
fn a_queued_group_entity_reweighted_keeps_its_lag_and_v() {
    use sched::features::Feature;
    for (place_lag, rel_deadline) in [(true, true), (false, true), (true, false), (false, false)] {
        let mut h = H::one();
        h.cfg.features.set(Feature::PlaceLag, place_lag);
        h.cfg.features.set(Feature::PlaceRelDeadline, rel_deadline);
        let a = group_queued_with_lag(&mut h);
        let v0 = h.rq.avg_vruntime();
        let e0 = *h.rq.group_entity(a).unwrap();
        let lag0 = v0.wrapping_sub(e0.vruntime) as i64;
        let dl0 = e0.deadline.wrapping_sub(v0) as i64;
        h.rq.set_task_group_weight(a, 400).unwrap();
        let e1 = *h.rq.group_entity(a).unwrap();
        let (w0, w1) = (i64::from(e0.load.weight), i64::from(e1.load.weight));
        assert_ne!(w0, w1, "the weight changed");
        let v1 = h.rq.avg_vruntime();
        let lag1 = v1.wrapping_sub(e1.vruntime) as i64;
        let dl1 = e1.deadline.wrapping_sub(v1) as i64;
        let what = format!("PLACE_LAG {place_lag}, PLACE_REL_DEADLINE {rel_deadline}");
        assert!(
            (v1 as i64).wrapping_sub(v0 as i64).abs() <= 1,
            "{what}: V {v0} -> {v1}"
        );
        assert!(
            (lag1 - lag0 * w0 / w1).abs() <= 1,
            "{what}: lag {lag0} -> {lag1}, w {w0} -> {w1}"
        );
        assert!(
            (dl1 - dl0 * w0 / w1).abs() <= 1,
            "{what}: d - V {dl0} -> {dl1}, w {w0} -> {w1}"
        );
        h.rq.check().unwrap();
    }
}

/// The same for the running group entity inside its protected slice
/// (RUN_TO_PARITY): the protection's end keeps its real-time distance too.
#[test]
fn a_running_group_entity_reweighted_keeps_its_protected_slice_in_real_time() {
    let mut h = H::one();
    let a = h.rq.create_task_group(GroupId::ROOT, 100).unwrap();
    h.spawn(1, TaskParams::default());
    spawn_in(&mut h, 2, a);
    h.pick();
    let mut found = false;
    for _ in 0..200 {
        h.tick();
        if h.curr() == Some(2) {
            h.adv(50_000);
            h.rq.update_curr();
            let e = *h.rq.group_entity(a).unwrap();
            if (e.vprot.wrapping_sub(e.vruntime) as i64) > 0 {
                found = true;
                break;
            }
        }
    }
    assert!(found, "task 2 never ran inside A's protected slice");
    let e0 = *h.rq.group_entity(a).unwrap();
    let prot0 = e0.vprot.wrapping_sub(e0.vruntime) as i64;
    h.rq.set_task_group_weight(a, 1000).unwrap();
    let e1 = *h.rq.group_entity(a).unwrap();
    let (w0, w1) = (i64::from(e0.load.weight), i64::from(e1.load.weight));
    assert_ne!(w0, w1);
    let prot1 = e1.vprot.wrapping_sub(e1.vruntime) as i64;
    assert!(
        (prot1 - prot0 * w0 / w1).abs() <= 2,
        "vprot - v {prot0} -> {prot1}, w {w0} -> {w1}"
    );
    h.rq.check().unwrap();
}
