//! CPU masks, topologies, scheduling domains, and placement and balancing on
//! machines with SMT, LLCs and sockets (up to 256 CPUs).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common;
use common::cpu_id;

use common::plat::Plat;
use sched::domain::DomainLevel;
use sched::smp::{Platform, Scheduler};
use sched::topology::TopologyError;
use sched::{
    CpuDistance, CpuId, CpuMask, DequeueFlags, Feature, SchedConfig, SchedTask, TaskId, TaskParams,
    Topology, WakeFlags, MAX_CPUS,
};

use crate::common::MS;

/// 2 sockets × 20 cores × 2 threads, one LLC and one node per socket.
fn cascadelake() -> Topology {
    Topology::uniform(80, 2, 20, 1).unwrap()
}

const CAPACITY: usize = 512;

fn machine(topo: Topology) -> Scheduler<Plat> {
    let n = topo.nr_cpus() as u32;
    let cfg = Arc::new(SchedConfig::new(n, 250));
    let s = Scheduler::with_topology(Plat::default(), cfg, topo, CAPACITY);
    // Far from 0, so tasks that never ran are cache-cold everywhere.
    s.platform.now.store(1_000 * MS, Ordering::Relaxed);
    s
}

/// Puts `n` new tasks on `cpu` (ids from `*next`), the first one running.
fn load_cpu(s: &Scheduler<Plat>, cpu: CpuId, n: u32, next: &mut u32) {
    common::plat::load_cpu(s, cpu, n, next, false);
}

fn nr(s: &Scheduler<Plat>, cpu: CpuId) -> u32 {
    s.cpu_rq(cpu).nr_runnable()
}

/// Where task `id` is held.
fn cpu_of(s: &Scheduler<Plat>, id: u32) -> usize {
    (0..s.nr_cpus())
        .find(|&c| s.cpu_rq(cpu_id(c)).task(TaskId(id)).is_some())
        .expect("task is held somewhere")
}

/// A task last run on `prev`, woken by `this_cpu`.
fn wake(s: &Scheduler<Plat>, prev: usize, this_cpu: usize) -> usize {
    let mut t = SchedTask::new(TaskParams::default());
    t.cpu = cpu_id(prev);
    s.select_task_rq(&t, cpu_id(this_cpu), WakeFlags::TTWU)
        .0
        .index()
}

#[test]
fn cpumask_operations_cover_all_256_cpus() {
    let mut m = CpuMask::default();
    assert!(m.is_empty() && m.first().is_none() && m.weight() == 0);
    for c in [0, 63, 64, 127, 128, 200, 255] {
        m.set(c);
    }
    assert_eq!(m.weight(), 7);
    assert!(m.test(64) && m.test(255) && !m.test(65) && !m.test(256));
    assert_eq!(
        m.iter().collect::<Vec<_>>(),
        vec![0, 63, 64, 127, 128, 200, 255]
    );
    assert_eq!(m.first(), Some(0));
    // The CpuId view of the same set.
    let cpu = |i| CpuId::new(i).unwrap();
    assert!(m.has(cpu(64)) && m.has(cpu(255)) && !m.has(cpu(65)));
    assert!(m.cpus().map(CpuId::index).eq(m.iter()));
    m.clear(0);
    m.clear(63);
    assert_eq!(m.first(), Some(64));
    assert_eq!(m.low_u64(), 0, "CPUs >= 64 are not in the low word");
    let high = CpuMask::from_cpus(&[100, 200, 255]);
    assert_eq!(m.and(&high).iter().collect::<Vec<_>>(), vec![200, 255]);
    assert_eq!(
        m.and_not(&high).iter().collect::<Vec<_>>(),
        vec![64, 127, 128]
    );
    assert!(m.intersects(&high) && !m.is_subset(&high));
    assert!(CpuMask::from_cpus(&[200]).is_subset(&m));
    assert_eq!(CpuMask::all().weight(), MAX_CPUS);
    assert_eq!(CpuMask::first_n(70).weight(), 70);
    assert!(CpuMask::first_n(70).test(69) && !CpuMask::first_n(70).test(70));
    // u64 round trip for the kernel's masks.
    let k = CpuMask::from_u64(0x8000_0000_0000_0005);
    assert_eq!(k.iter().collect::<Vec<_>>(), vec![0, 2, 63]);
    assert_eq!(k.low_u64(), 0x8000_0000_0000_0005);
    // Word round trip (the kernel's atomic masks keep the words).
    let w = m.words();
    assert_eq!(w, [0, 1 << 0 | 1 << 63, 1 << 0, 1 << 8 | 1 << 63]);
    assert_eq!(CpuMask::from_words(w), m);
    // Wrapped scan: from 200 up, then from 0.
    assert_eq!(
        m.iter_wrap(200).collect::<Vec<_>>(),
        vec![200, 255, 64, 127, 128]
    );
    assert_eq!(
        m.iter_wrap(256).collect::<Vec<_>>(),
        m.iter().collect::<Vec<_>>()
    );
    // find_wrap is cpus_wrap(start).take(limit).find(f): the same
    // answer, and f called on the same CPUs in the same order.
    let dense = CpuMask::from_cpus(&(0..70).chain(130..140).collect::<Vec<_>>());
    for mask in [m, dense, CpuMask::default(), CpuMask::all()] {
        for start in [0, 1, 63, 64, 65, 135, 200, 255, 256] {
            for limit in [0, 1, 3, 64, 100, usize::MAX] {
                for hit in [64usize, 137, 255, 1000] {
                    let (mut seen_a, mut seen_b) = (Vec::new(), Vec::new());
                    let a = mask.cpus_wrap(start).take(limit).find(|&c| {
                        seen_a.push(c.index());
                        c.index() == hit
                    });
                    let b = mask.find_wrap(start, limit, |c| {
                        seen_b.push(c.index());
                        c.index() == hit
                    });
                    assert_eq!(a, b, "start {start} limit {limit} hit {hit}");
                    assert_eq!(seen_a, seen_b, "start {start} limit {limit} hit {hit}");
                }
            }
        }
    }
    // Linux's hex text.
    assert_eq!(format!("{}", CpuMask::from_u64(0xf)), "0xf");
    assert_eq!(format!("{:x}", CpuMask::default()), "0");
    assert_eq!(
        format!("{}", CpuMask::from_cpus(&[64])),
        "0x10000000000000000"
    );
    assert_eq!(CpuMask::parse_hex("0xf"), Some(CpuMask::first_n(4)));
    assert_eq!(
        CpuMask::parse_hex("ff,00000000")
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        (32..40).collect::<Vec<_>>()
    );
    let top = CpuMask::from_cpus(&[255]);
    assert_eq!(CpuMask::parse_hex(&top.to_string()), Some(top));
    assert_eq!(
        CpuMask::parse_hex(&format!("1{}", "0".repeat(64))),
        None,
        "CPU 256"
    );
    assert_eq!(CpuMask::parse_hex("0x"), None);
    assert_eq!(CpuMask::parse_hex("xyz"), None);
}

#[test]
fn uniform_topology_numbers_threads_then_cores_then_llcs() {
    let t = cascadelake();
    assert_eq!(t.nr_cpus(), 80);
    assert_eq!(
        (
            t.core_of(cpu_id(0)),
            t.core_of(cpu_id(1)),
            t.core_of(cpu_id(2))
        ),
        (0, 0, 1)
    );
    assert_eq!((t.llc_of(cpu_id(39)), t.llc_of(cpu_id(40))), (0, 1));
    assert_eq!(
        (
            t.node_of(cpu_id(39)),
            t.node_of(cpu_id(40)),
            t.node_of(cpu_id(79))
        ),
        (0, 1, 1)
    );
    assert_eq!(t.smt_mask(cpu_id(5)), CpuMask::from_cpus(&[4, 5]));
    assert_eq!(t.llc_mask(cpu_id(41)), (40..80).collect::<CpuMask>());
    assert_eq!((t.llc_size(cpu_id(0)), t.llc_size(cpu_id(79))), (40, 40));
    assert_eq!(t.node_mask(cpu_id(0)), CpuMask::first_n(40));
    assert!(t.has_smt());
    // epyc-like: 8 cores of 2 threads per LLC, 2 LLCs per node, 2 nodes.
    let e = Topology::uniform(64, 2, 8, 2).unwrap();
    assert_eq!(
        (
            e.llc_of(cpu_id(15)),
            e.llc_of(cpu_id(16)),
            e.node_of(cpu_id(31)),
            e.node_of(cpu_id(32))
        ),
        (0, 1, 0, 1)
    );
    assert_eq!(
        Topology::uniform(81, 2, 20, 1).unwrap_err(),
        TopologyError::NotDivisible
    );
    assert_eq!(
        Topology::uniform(8, 0, 4, 1).unwrap_err(),
        TopologyError::ZeroSize
    );
    assert_eq!(
        Topology::uniform(0, 1, 1, 1).unwrap_err(),
        TopologyError::NoCpus
    );
    assert_eq!(
        Topology::uniform(512, 2, 8, 1).unwrap_err(),
        TopologyError::TooManyCpus(512)
    );
    // 256 CPUs fit.
    assert_eq!(Topology::uniform(256, 2, 16, 2).unwrap().nr_cpus(), 256);
    assert_eq!(
        Topology::from_ids(&[0, 0], &[0, 0], &[0]).unwrap_err(),
        TopologyError::LengthMismatch
    );
    assert_eq!(
        Topology::from_ids(&[0, 0], &[0, 1], &[0, 0]).unwrap_err(),
        TopologyError::CoreSpansLlc(0)
    );
    assert_eq!(
        Topology::from_ids(&[0, 1], &[0, 0], &[0, 1]).unwrap_err(),
        TopologyError::LlcSpansNode(0)
    );
    // Sparse ids are fine.
    let s = Topology::from_ids(&[7, 7, 9, 9], &[3, 3, 3, 3], &[5, 5, 5, 5]).unwrap();
    assert_eq!(s.smt_mask(cpu_id(2)), CpuMask::from_cpus(&[2, 3]));
    // So are interleaved ones (siblings numbered apart, as x86 firmware
    // lists a package's first threads before their siblings), with ids
    // up to u32::MAX.
    let max = u32::MAX;
    let t = Topology::from_ids(&[max, 4, max, 4], &[1, 1, 1, 1], &[0, 0, 0, 0]).unwrap();
    assert_eq!(t.smt_mask(cpu_id(0)), CpuMask::from_cpus(&[0, 2]));
    assert_eq!(t.smt_mask(cpu_id(3)), CpuMask::from_cpus(&[1, 3]));
    assert_eq!(t.llc_mask(cpu_id(2)), CpuMask::from_cpus(&[0, 1, 2, 3]));
    assert!(t.has_smt());
    let u = Topology::from_ids(&[0, 1, 2, 3], &[8, 9, 8, 9], &[2, 2, 2, 2]).unwrap();
    assert_eq!(u.llc_mask(cpu_id(1)), CpuMask::from_cpus(&[1, 3]));
    assert_eq!(u.llc_size(cpu_id(1)), 2);
    // Unequal LLCs: each CPU counts its own.
    let w = Topology::from_ids(&[0, 1, 2, 3], &[5, 5, 5, 6], &[0, 0, 0, 0]).unwrap();
    assert_eq!(
        (0..4).map(|c| w.llc_size(cpu_id(c))).collect::<Vec<_>>(),
        [3, 3, 3, 1]
    );
    assert_eq!(u.node_mask(cpu_id(1)), CpuMask::from_cpus(&[0, 1, 2, 3]));
    assert!(!u.has_smt());
}

#[test]
fn distance_orders_smt_llc_node_remote() {
    let e = Topology::uniform(64, 2, 8, 2).unwrap();
    assert_eq!(e.distance(cpu_id(3), cpu_id(3)), CpuDistance::Same);
    assert_eq!(e.distance(cpu_id(2), cpu_id(3)), CpuDistance::Smt);
    assert_eq!(e.distance(cpu_id(0), cpu_id(15)), CpuDistance::Llc);
    assert_eq!(e.distance(cpu_id(0), cpu_id(16)), CpuDistance::Node);
    assert_eq!(e.distance(cpu_id(0), cpu_id(32)), CpuDistance::Remote);
    assert!(CpuDistance::Smt < CpuDistance::Llc && CpuDistance::Node < CpuDistance::Remote);
    let f = Topology::flat(4);
    assert_eq!(f.distance(cpu_id(0), cpu_id(3)), CpuDistance::Llc);
    assert!(!f.has_smt());
}

/// `cpu`'s domain levels and their weights, bottom-up.
fn levels(s: &Scheduler<Plat>, cpu: CpuId) -> Vec<(DomainLevel, u32)> {
    s.domains(cpu)
        .iter()
        .map(|sd| (sd.level, sd.weight))
        .collect()
}

#[test]
fn domains_skip_degenerate_levels_with_linux_parameters() {
    let s = machine(cascadelake());
    let d = s.domains(cpu_id(41));
    assert_eq!(
        levels(&s, cpu_id(41)),
        vec![
            (DomainLevel::Smt, 2),
            (DomainLevel::Mc, 40),
            (DomainLevel::Numa, 80)
        ],
        "PKG is the socket = the LLC here, so it is dropped"
    );
    assert_eq!(
        d.iter().map(|sd| sd.imbalance_pct).collect::<Vec<_>>(),
        vec![110, 117, 117]
    );
    assert_eq!(
        d.iter().map(|sd| sd.cache_nice_tries).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert_eq!(d[2].imb_numa_nr, 2, "two LLCs under the NUMA level");
    // Groups: threads, cores, sockets.
    let topo = s.topology();
    assert_eq!(d[0].groups(topo).count(), 2);
    assert_eq!(d[1].groups(topo).count(), 20);
    assert_eq!(
        d[2].groups(topo).collect::<Vec<_>>(),
        vec![CpuMask::first_n(40), (40..80).collect()]
    );
    // One node, several LLCs: SMT, MC, PKG.
    let e = machine(Topology::uniform(64, 2, 8, 4).unwrap());
    assert_eq!(
        levels(&e, cpu_id(0)),
        vec![
            (DomainLevel::Smt, 2),
            (DomainLevel::Mc, 16),
            (DomainLevel::Pkg, 64)
        ]
    );
    // Flat: one MC level over single CPUs; one CPU: none.
    let f = machine(Topology::flat(4));
    assert_eq!(f.domains(cpu_id(2)).len(), 1);
    assert_eq!(f.domains(cpu_id(2))[0].level, DomainLevel::Mc);
    assert!(f.domains(cpu_id(2))[0].child.is_none());
    assert!(machine(Topology::flat(1)).domains(cpu_id(0)).is_empty());
}

#[test]
fn wakeup_with_an_idle_cpu_in_the_target_llc_stays_in_that_socket() {
    for idle_cpu in [1, 6, 17, 38, 39] {
        let s = machine(cascadelake());
        let mut next = 0;
        for c in (0..40).filter(|&c| c != idle_cpu) {
            load_cpu(&s, cpu_id(c), 1, &mut next);
        }
        // Socket 1 is all idle; the previous CPU and the waker are busy in socket 0.
        for (prev, waker) in [(5, 3), (20, 20), (0, 45)] {
            let cpu = wake(&s, prev, waker);
            assert_eq!(
                cpu, idle_cpu,
                "prev {prev} waker {waker}: the idle CPU of the LLC, never socket 1"
            );
        }
    }
}

#[test]
fn wakeup_prefers_an_idle_core_to_an_idle_sibling_of_a_busy_cpu() {
    let s = machine(cascadelake());
    let mut next = 0;
    // Socket 0 busy except CPU 1 (its sibling 0 busy) and core {10, 11}.
    for c in (0..40).filter(|c| ![1, 10, 11].contains(c)) {
        load_cpu(&s, cpu_id(c), 1, &mut next);
    }
    assert_eq!(wake(&s, 0, 0), 10, "the idle core, not CPU 1");
    // No idle core left: the idle sibling of the previous CPU (select_idle_smt)
    // before other idle CPUs (11, met first in the scan from 6).
    load_cpu(&s, cpu_id(10), 1, &mut next);
    assert_eq!(wake(&s, 0, 0), 1);
    assert_eq!(
        wake(&s, 5, 5),
        11,
        "prev's sibling busy: first idle CPU after the target"
    );
}

#[test]
fn fork_balancing_spreads_over_sockets_then_cores_then_threads() {
    let s = machine(cascadelake());
    let topo = s.topology().clone();
    let mut cpus = Vec::new();
    for id in 0..80u32 {
        let (cpu, _) =
            s.wake_up_new_task(TaskId(id), SchedTask::new(TaskParams::default()), cpu_id(0));
        cpus.push(cpu);
        if id == 39 {
            let per_socket = |n: u32| cpus.iter().filter(|&&c| topo.node_of(c) == n).count();
            assert_eq!((per_socket(0), per_socket(1)), (20, 20), "{cpus:?}");
            let mut cores: Vec<u32> = cpus.iter().map(|&c| topo.core_of(c)).collect();
            cores.sort();
            cores.dedup();
            assert_eq!(
                cores.len(),
                40,
                "one task per core before any core gets two"
            );
        }
    }
    // Then the second threads: every CPU holds exactly one task.
    for c in 0..80 {
        assert_eq!(nr(&s, cpu_id(c)), 1, "cpu {c}");
    }
    // The first two stay near the parent (NUMA imbalance allowance), the
    // third goes to the other socket.
    assert_eq!(topo.node_of(cpus[0]), 0);
    assert_eq!(topo.node_of(cpus[1]), 0);
    assert_eq!(topo.node_of(cpus[2]), 1);
}

#[test]
fn load_balance_pulls_within_the_llc_before_crossing_sockets() {
    let topo_run = |s: &Scheduler<Plat>| {
        let mut next = 0;
        load_cpu(s, cpu_id(0), 3, &mut next);
        load_cpu(s, cpu_id(40), 6, &mut next);
        s.load_balance(cpu_id(2), false)
    };
    let s = machine(cascadelake());
    let p = topo_run(&s);
    assert_eq!(
        (p.from_cpu().index(), p.len()),
        (0, 1),
        "from the busy core of its own LLC"
    );
    assert_eq!(
        nr(&s, cpu_id(40)),
        6,
        "the busier CPU of the other socket is left alone"
    );
    // A flat machine of the same size takes from the busiest CPU anywhere.
    let flat = machine(Topology::flat(80));
    let p = topo_run(&flat);
    assert_eq!((p.from_cpu().index(), p.len()), (40, 3));
    // Once its socket has nothing to give, an idle CPU pulls across.
    let s = machine(cascadelake());
    let mut next = 0;
    load_cpu(&s, cpu_id(40), 6, &mut next);
    let p = s.load_balance(cpu_id(0), false);
    assert_eq!((p.from_cpu().index(), p.len()), (40, 3));
    // But a pair on a lightly loaded node stays there (adjust_numa_imbalance):
    // its own LLC will spread it.
    let s = machine(cascadelake());
    let mut next = 0;
    load_cpu(&s, cpu_id(40), 2, &mut next);
    assert!(s.load_balance(cpu_id(0), false).is_empty());
    assert_eq!(s.load_balance(cpu_id(41), false).len(), 1);
}

#[test]
fn only_one_cpu_per_group_balances_periodically() {
    let s = machine(cascadelake());
    let mut next = 0;
    load_cpu(&s, cpu_id(40), 6, &mut next);
    // CPUs 0 and 1 are both idle: CPU 0 balances the socket, CPU 1 does not
    // climb past its core.
    assert!(s.load_balance(cpu_id(1), false).is_empty());
    assert!(!s.load_balance(cpu_id(0), false).is_empty());
    // A newly idle CPU always tries (with NO_NI_RANDOM: NI_RANDOM's die may
    // skip a level, see tests/newidle.rs).
    let s = machine(cascadelake());
    s.cfg.features.set(Feature::NiRandom, false);
    let mut next = 0;
    load_cpu(&s, cpu_id(40), 6, &mut next);
    assert!(!s.load_balance(cpu_id(1), true).is_empty());
}

/// Linux's `detach_tasks` with CONFIG_PREEMPTION: a newly idle pass stops
/// after the first task it detaches; a periodic pass takes up to the
/// imbalance. An idle CPU against one running 1 task and queuing 5, on a
/// flat machine and across the sockets of a two-socket one.
#[test]
fn a_newidle_pass_pulls_one_task_where_a_periodic_pass_pulls_several() {
    for topo in [Topology::flat(4), cascadelake()] {
        let src = if topo.nr_cpus() == 4 { 3 } else { 40 };
        let fresh = || {
            let s = machine(topo.clone());
            // NI_RANDOM's die may skip a level (see tests/newidle.rs).
            s.cfg.features.set(Feature::NiRandom, false);
            let mut next = 0;
            load_cpu(&s, cpu_id(src), 6, &mut next);
            s
        };
        let s = fresh();
        let p = s.load_balance(cpu_id(0), true);
        assert_eq!((p.from_cpu().index(), p.len()), (src, 1), "newidle");
        assert_eq!((nr(&s, cpu_id(0)), nr(&s, cpu_id(src))), (1, 5));
        let s = fresh();
        let p = s.load_balance(cpu_id(0), false);
        assert_eq!((p.from_cpu().index(), p.len()), (src, 3), "periodic");
        assert_eq!((nr(&s, cpu_id(0)), nr(&s, cpu_id(src))), (3, 3));
    }
}

#[test]
fn a_burst_of_160_hogs_on_cpu0_ends_two_per_cpu() {
    // Under Miri (~1000x slower; every round balances every CPU over
    // every CPU) a quarter of the machine: 2 sockets of 5 cores × 2
    // threads, 40 hogs. The sockets' bound is the same rule: balancing
    // across them stops once the busier holds at most imbalance_pct
    // (117%) of the other's tasks, so each holds at least 100/217 of them:
    // 74 of 160, 19 of 40.
    let (cpus, socket_min) = if cfg!(miri) { (20, 19) } else { (80, 74) };
    let s = machine(Topology::uniform(cpus, 2, cpus / 4, 1).unwrap());
    let hogs = 2 * cpus as u32;
    let mut next = 0;
    load_cpu(&s, cpu_id(0), hogs, &mut next);
    let mut rounds = 0;
    loop {
        let mut moved = 0;
        for c in 0..cpus {
            let p = s.load_balance(cpu_id(c), false);
            moved += p.len();
            if !p.is_empty() {
                let mut rq = s.cpu_rq(cpu_id(c));
                if rq.curr().is_none() {
                    rq.pick_next_task();
                }
            }
        }
        rounds += 1;
        if moved == 0 {
            break;
        }
        assert!(rounds < 100, "balancing does not settle");
    }
    let counts: Vec<u32> = (0..cpus).map(|c| nr(&s, cpu_id(c))).collect();
    assert_eq!(counts.iter().sum::<u32>(), hogs);
    assert!(
        counts.iter().all(|&n| (1..=3).contains(&n)),
        "every CPU within one of 2: {counts:?} after {rounds} rounds"
    );
    let socket0: u32 = counts[..cpus / 2].iter().sum();
    assert!(
        (socket_min..=hogs - socket_min).contains(&socket0),
        "sockets within imbalance_pct: {socket0}"
    );
    for c in 0..cpus {
        s.cpu_rq(cpu_id(c)).check().unwrap();
    }
}

#[test]
fn affinity_to_cpus_above_63_is_honoured() {
    let s = machine(cascadelake());
    let mask = CpuMask::from_cpus(&[70, 75]);
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = mask;
    let (cpu, _) = s.wake_up_new_task(TaskId(1), t, cpu_id(0));
    assert!(mask.test(cpu.index()), "forked onto {cpu}");
    // A wakeup from CPU 0 of a task that last ran on 70.
    t.cpu = cpu_id(70);
    let (w, _) = s.select_task_rq(&t, cpu_id(0), WakeFlags::TTWU);
    assert!(mask.test(w.index()), "woken onto {w}");
    // Pinning a queued task from CPU 3 to CPU 66 moves it there.
    let mut next = 100;
    load_cpu(&s, cpu_id(3), 3, &mut next);
    let queued = (100..103)
        .find(|&id| s.cpu_rq(cpu_id(3)).curr() != Some(TaskId(id)))
        .unwrap();
    assert!(s.set_cpus_allowed(
        cpu_id(3),
        TaskId(queued),
        CpuMask::from_cpus(&[66]),
        cpu_id(0)
    ));
    assert_eq!(cpu_of(&s, queued), 66);
    // Tasks pinned to 66 are never pulled elsewhere.
    let mut ids = Vec::new();
    {
        let mut rq = s.cpu_rq(cpu_id(66));
        for id in 200..204 {
            let mut t = SchedTask::new(TaskParams::default());
            t.cpus_allowed = CpuMask::from_cpus(&[66]);
            t.cpu = cpu_id(66);
            rq.wake_up_new_task(TaskId(id), t);
            ids.push(id);
        }
        rq.pick_next_task();
    }
    ids.push(queued);
    // Other CPUs may take the unpinned tasks left on CPU 3, never these.
    for c in [64, 67, 0, 1] {
        for _ in 0..4 {
            let p = s.load_balance(cpu_id(c), true);
            assert!(
                p.ids().iter().all(|id| !ids.contains(&id.0)),
                "cpu {c} pulled a pinned task: {:?}",
                p.ids()
            );
        }
    }
    assert!(ids.iter().all(|&id| cpu_of(&s, id) == 66));
    // A mask with no online CPU is refused.
    assert!(!s.set_cpus_allowed(
        cpu_id(66),
        TaskId(200),
        CpuMask::from_cpus(&[200]),
        cpu_id(0)
    ));
}

#[test]
fn higher_levels_are_balanced_less_often() {
    let s = machine(cascadelake());
    // Idle CPU: the interval is the span weight in ms, in whole 4 ms ticks.
    assert_eq!(s.balance_interval_ns(cpu_id(0), 0), 4 * MS);
    assert_eq!(s.balance_interval_ns(cpu_id(0), 1), 40 * MS);
    assert_eq!(s.balance_interval_ns(cpu_id(0), 2), 80 * MS);
    // Only the socket level can fix this imbalance.
    let mut next = 0;
    let t0 = 10_000 * MS;
    load_cpu(&s, cpu_id(40), 6, &mut next);
    let p = s.rebalance_domains(cpu_id(0), t0);
    assert_eq!(
        (p.from_cpu().index(), p.len()),
        (40, 3),
        "every level is due at first"
    );
    // The pulled tasks go to sleep: CPU 0 is idle again, CPU 40 busy again.
    {
        let mut rq = s.cpu_rq(cpu_id(0));
        for &id in p.ids() {
            rq.dequeue_task(id, DequeueFlags::SLEEP).unwrap();
        }
    }
    load_cpu(&s, cpu_id(40), 3, &mut next);
    assert_eq!(nr(&s, cpu_id(0)), 0);
    assert!(
        s.rebalance_domains(cpu_id(0), t0 + 10 * MS).is_empty(),
        "10 ms later only the SMT level is due"
    );
    // Balanced levels backed off: SMT 2 -> 4 ms, MC 40 -> 80 ms.
    assert_eq!(s.balance_interval_ns(cpu_id(0), 0), 4 * MS);
    assert_eq!(s.balance_interval_ns(cpu_id(0), 1), 80 * MS);
    assert!(s.rebalance_domains(cpu_id(0), t0 + 60 * MS).is_empty());
    let p = s.rebalance_domains(cpu_id(0), t0 + 81 * MS);
    assert_eq!(
        p.from_cpu(),
        cpu_id(40),
        "the NUMA level is due again after 80 ms"
    );
    // A busy CPU balances 16 times less often, less one tick (160 - 1).
    let b = machine(cascadelake());
    load_cpu(&b, cpu_id(2), 1, &mut next);
    assert_eq!(b.balance_interval_ns(cpu_id(2), 1), 159 * 4 * MS);
}

/// The placement and balancing rules the scheduler had before it knew
/// topology, written out as a model over (nr_running, load) per CPU.
mod flat_model {
    pub fn idle(nr: &[u32], c: usize) -> bool {
        nr[c] == 0
    }

    pub fn select_wakeup(nr: &[u32], load: &[u64], prev: usize, this: usize) -> usize {
        let n = nr.len();
        let mut target = prev;
        if this != prev {
            if idle(nr, this) {
                target = if idle(nr, prev) { prev } else { this };
            } else if idle(nr, prev) {
                target = prev;
            } else if (load[this] as i64 + 1024) * 100 < (load[prev] as i64 - 1024) * 108 {
                // Since PELT: Linux's wake_affine_weight over the load
                // averages (a new task's is its weight, 1024), the
                // previous CPU's without the wakee's and, with WA_BIAS,
                // weighed by 100 + (117 - 100) / 2 %.
                target = this;
            }
        }
        if idle(nr, target) {
            return target;
        }
        if prev != target && idle(nr, prev) {
            return prev;
        }
        (1..n)
            .map(|k| (target + k) % n)
            .find(|&c| idle(nr, c))
            .unwrap_or(target)
    }

    pub fn select_fork(nr: &[u32], load: &[u64], this: usize) -> usize {
        let key = |c: usize| (nr[c], load[c]);
        (0..nr.len()).fold(this, |best, c| if key(c) < key(best) { c } else { best })
    }

    /// (source CPU, tasks moved) of a periodic pass, or None. The one change
    /// from the old rule: an overloaded CPU pulls only from a CPU with more
    /// than `imbalance_pct` (117%) of its tasks (Linux's
    /// `find_busiest_group`), which matters from 12 tasks per CPU up.
    pub fn balance(nr: &[u32], load: &[u64], this: usize) -> Option<(usize, u32)> {
        let busiest = (0..nr.len())
            .filter(|&c| c != this)
            .max_by_key(|&c| (nr[c], load[c]))?;
        let (b, l) = (nr[busiest], nr[this]);
        if b < 2 || b <= l + 1 {
            return None;
        }
        if l > 1 && b * 100 <= l * 117 {
            return None;
        }
        Some((busiest, ((b - l) / 2).clamp(1, 32)))
    }
}

#[test]
fn flat_topology_keeps_the_flat_rules() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let ncpus = 8;
    // 40 machines under Miri (~1000x slower) instead of 400.
    let cases = if cfg!(miri) { 40 } else { 400 };
    for case in 0..cases {
        let s = machine(Topology::flat(ncpus));
        let mut next = 0;
        let crowded = case % 4 == 0;
        for c in 0..ncpus {
            let n = match rand(3) {
                0 => 0,
                _ if crowded => rand(24) as u32,
                _ => rand(5) as u32,
            };
            if n > 0 {
                load_cpu(&s, cpu_id(c), n, &mut next);
            }
        }
        let nr: Vec<u32> = (0..ncpus).map(|c| nr(&s, cpu_id(c))).collect();
        let load: Vec<u64> = (0..ncpus).map(|c| s.cpu_rq(cpu_id(c)).load()).collect();
        let load_avg: Vec<u64> = (0..ncpus).map(|c| s.cpu_rq(cpu_id(c)).load_avg()).collect();
        let (prev, this) = (rand(8) as usize, rand(8) as usize);
        assert_eq!(
            wake(&s, prev, this),
            flat_model::select_wakeup(&nr, &load_avg, prev, this),
            "case {case}: wakeup prev {prev} by {this} on {nr:?}"
        );
        let mut t = SchedTask::new(TaskParams::default());
        t.cpu = cpu_id(this);
        assert_eq!(
            s.select_task_rq(&t, cpu_id(this), WakeFlags::FORK).0,
            cpu_id(flat_model::select_fork(&nr, &load, this)),
            "case {case}: fork from {this} on {nr:?}"
        );
        let p = s.load_balance(cpu_id(this), false);
        let got = (!p.is_empty()).then(|| (p.from_cpu().index(), p.len() as u32));
        assert_eq!(
            got,
            flat_model::balance(&nr, &load, this),
            "case {case}: balance to {this} on {nr:?}"
        );
    }
}

#[test]
fn a_256_cpu_machine_gives_every_cpu_one_forked_task() {
    // 2 nodes × 8 LLCs × 8 cores × 2 threads. Under Miri (~1000x slower;
    // each fork scans every CPU of each level, so the test grows with the
    // square of the CPUs: 94 M instructions at 256) 80 CPUs: 2 nodes × 5
    // LLCs × 4 cores × 2 threads, still four levels and more CPUs than one
    // mask word (15 M instructions).
    let (n, cores_per_llc, llcs_per_node) = if cfg!(miri) { (80, 4, 5) } else { (256, 8, 8) };
    let s = machine(Topology::uniform(n, 2, cores_per_llc, llcs_per_node).unwrap());
    let last = n - 1;
    assert_eq!(
        levels(&s, cpu_id(last)),
        vec![
            (DomainLevel::Smt, 2),
            (DomainLevel::Mc, 2 * cores_per_llc as u32),
            (DomainLevel::Pkg, n as u32 / 2),
            (DomainLevel::Numa, n as u32)
        ]
    );
    for id in 0..n as u32 {
        s.wake_up_new_task(TaskId(id), SchedTask::new(TaskParams::default()), cpu_id(0));
    }
    assert!((0..n).all(|c| nr(&s, cpu_id(c)) == 1));
    // The last CPU can be the only one allowed.
    let mut t = SchedTask::new(TaskParams::default());
    t.cpus_allowed = CpuMask::from_cpus(&[last]);
    assert_eq!(
        s.wake_up_new_task(TaskId(300), t, cpu_id(0)).0,
        cpu_id(last)
    );
    t.cpu = cpu_id(3);
    assert_eq!(
        s.select_task_rq(&t, cpu_id(0), WakeFlags::TTWU).0,
        cpu_id(last)
    );
}

/// Like [`load_cpu`], but every task runs for a while, in 50 µs turns;
/// returns the time 0.6 ms after the last turn, when all of them ran less
/// than 2 ms but more than 0.5 ms ago.
fn load_cpu_hot(s: &Scheduler<Plat>, cpu: CpuId, n: u32, next: &mut u32) -> u64 {
    let start = s.platform.now_ns();
    let now = common::plat::run_each_in_turns(s, cpu, n, next);
    let t1 = now + 600_000;
    assert!(t1 - start < 2 * MS, "the turns took too long");
    t1
}

#[test]
fn the_cache_hot_window_grows_with_the_distance_moved() {
    // Tasks that ran 0.6 to 2 ms ago: cold within an LLC (0.5 ms), hot
    // across sockets (4 × 0.5 ms), never hot between SMT siblings.
    let s = machine(cascadelake());
    let mut next = 0;
    let t1 = load_cpu_hot(&s, cpu_id(40), 8, &mut next);
    s.platform.now.store(t1, Ordering::Relaxed);
    for failure in 1..=3 {
        assert!(
            s.load_balance(cpu_id(0), false).is_empty(),
            "hot across sockets"
        );
        assert_eq!(s.nr_balance_failed(cpu_id(0), 2), failure);
    }
    // NUMA's cache_nice_tries is 2: the third failure lets hot tasks go.
    assert_eq!(s.load_balance(cpu_id(0), false).from_cpu(), cpu_id(40));
    assert_eq!(s.nr_balance_failed(cpu_id(0), 2), 0);
    // Within the LLC the same tasks are cold.
    let s = machine(cascadelake());
    let mut next = 0;
    let t1 = load_cpu_hot(&s, cpu_id(40), 8, &mut next);
    s.platform.now.store(t1, Ordering::Relaxed);
    assert_eq!(s.load_balance(cpu_id(42), false).len(), 4);
    // With a 10 ms migration cost they are hot for MC too, but an SMT
    // sibling takes them at once.
    let s = machine(cascadelake());
    s.cfg
        .tunables
        .set("kernel.sched_migration_cost_ns", "10000000")
        .unwrap();
    let mut next = 0;
    let t1 = load_cpu_hot(&s, cpu_id(40), 8, &mut next);
    s.platform.now.store(t1, Ordering::Relaxed);
    assert!(s.load_balance(cpu_id(42), false).is_empty());
    assert_eq!(s.nr_balance_failed(cpu_id(42), 1), 1);
    assert_eq!(s.load_balance(cpu_id(41), false).len(), 4);
}

/// Puts `n` new tasks on `cpu` that may run nowhere else.
fn load_cpu_pinned(s: &Scheduler<Plat>, cpu: CpuId, n: u32, next: &mut u32) {
    let mut rq = s.cpu_rq(cpu);
    rq.update_rq_clock(s.platform.now_ns());
    for _ in 0..n {
        let mut t = SchedTask::new(TaskParams::default());
        t.cpu = cpu;
        t.cpus_allowed = CpuMask::from_cpus(&[cpu.index()]);
        rq.wake_up_new_task(TaskId(*next), t);
        *next += 1;
    }
}

/// CPU 0's NUMA level on [`cascadelake`] (SMT, MC, NUMA).
const NUMA: usize = 2;

/// [`cascadelake`] (NI_RANDOM and DELAY_DEQUEUE off) with 8 tasks that
/// just ran on CPU 40, hot for the NUMA level (ids from `*next`), on which
/// CPU 0's periodic passes failed `failures` times.
fn hot_on_cpu40(failures: u32, next: &mut u32) -> Scheduler<Plat> {
    let s = machine(cascadelake());
    s.cfg.features.set(Feature::NiRandom, false);
    s.cfg.features.set(Feature::DelayDequeue, false);
    let t1 = load_cpu_hot(&s, cpu_id(40), 8, next);
    s.platform.now.store(t1, Ordering::Relaxed);
    for failure in 1..=failures {
        assert!(s.load_balance(cpu_id(0), false).is_empty());
        assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), failure);
    }
    s
}

#[test]
fn newidle_passes_neither_count_failures_nor_take_hot_tasks_sooner() {
    // Linux's `sched_balance_rq`: only periodic passes that find an
    // imbalance and move nothing count (`nr_balance_failed++`), and
    // `can_migrate_task` lets a hot task go once the count exceeds
    // `cache_nice_tries`, whatever kind of pass it is.
    let s = hot_on_cpu40(2, &mut 0);
    // Newly idle passes fail on the same hot tasks and leave the count.
    for _ in 0..5 {
        assert!(s.load_balance(cpu_id(0), true).is_empty(), "newidle");
        assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), 2);
    }
    // NUMA's cache_nice_tries is 2: the third periodic failure lets them go.
    assert!(s.load_balance(cpu_id(0), false).is_empty());
    assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), 3);
    let pulled = s.load_balance(cpu_id(0), false);
    assert_eq!((pulled.from_cpu(), pulled.len()), (cpu_id(40), 4));
    assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), 0);
}

#[test]
fn a_periodic_pass_that_moves_nothing_counts_as_failed_without_hot_tasks() {
    // CPU 40 runs a task that may go anywhere, with 7 queued tasks pinned
    // to it: each pass finds the imbalance and moves nothing. Linux counts
    // it (its `LBF_ALL_PINNED` is cleared by the running task, so the pass
    // does not end in `out_all_pinned`).
    let s = machine(cascadelake());
    s.cfg.features.set(Feature::NiRandom, false);
    let mut next = 0;
    load_cpu(&s, cpu_id(40), 1, &mut next);
    load_cpu_pinned(&s, cpu_id(40), 7, &mut next);
    for failure in 1..=3 {
        assert!(s.load_balance(cpu_id(0), false).is_empty());
        assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), failure);
    }
    for _ in 0..3 {
        assert!(s.load_balance(cpu_id(0), true).is_empty(), "newidle");
        assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), 3);
    }
    // Three failures exceed NUMA's cache_nice_tries (2): tasks that just
    // ran on CPU 40 are taken at the first pass.
    let pinned = 1..8;
    let t1 = load_cpu_hot(&s, cpu_id(40), 8, &mut next);
    s.platform.now.store(t1, Ordering::Relaxed);
    let pulled = s.load_balance(cpu_id(0), false);
    assert_eq!(pulled.from_cpu(), cpu_id(40));
    assert!(!pulled.is_empty());
    assert!(pulled.ids().iter().all(|id| !pinned.contains(&id.0)));
    assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), 0);
}

#[test]
fn a_source_with_every_task_pinned_is_passed_over() {
    // Linux's `LBF_ALL_PINNED`: the pass tries the next busiest CPU, and
    // ends balanced (`out_all_pinned`, the count reset) when none is left.
    let mut next = 0;
    let s = hot_on_cpu40(1, &mut next);
    // CPU 42 holds more tasks, all pinned to it: CPU 40's hot ones are
    // tried instead, and the pass fails on them.
    load_cpu_pinned(&s, cpu_id(42), 9, &mut next);
    s.cpu_rq(cpu_id(42)).pick_next_task();
    assert_eq!(nr(&s, cpu_id(42)), 9);
    assert!(s.load_balance(cpu_id(0), false).is_empty());
    assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), 2);
    // CPU 40's tasks sleep: only pinned tasks are left, the pass ends
    // balanced.
    {
        let mut rq = s.cpu_rq(cpu_id(40));
        for id in 0..8 {
            rq.dequeue_task(TaskId(id), DequeueFlags::SLEEP).unwrap();
        }
        rq.pick_next_task();
        assert_eq!(rq.nr_runnable(), 0);
    }
    assert!(s.load_balance(cpu_id(0), false).is_empty());
    assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), 0);
}

#[test]
fn a_balanced_pass_restarts_the_count() {
    // Linux's `out_balanced`: a pass that finds no busier group resets the
    // count, so hot tasks wait for as many fresh failures again.
    let mut next = 0;
    let s = hot_on_cpu40(2, &mut next);
    // One task on each of 8 cores of CPU 0's socket: 8 a side, balanced.
    let local = next;
    for cpu in (2..=16).step_by(2) {
        load_cpu(&s, cpu_id(cpu), 1, &mut next);
    }
    assert!(s.load_balance(cpu_id(0), false).is_empty());
    assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), 0);
    // They sleep, at once: CPU 40's tasks are as hot as before, and
    // need three fresh failures.
    for (cpu, id) in (2..=16).step_by(2).zip(local..) {
        let mut rq = s.cpu_rq(cpu_id(cpu));
        rq.dequeue_task(TaskId(id), DequeueFlags::SLEEP).unwrap();
        rq.pick_next_task();
        assert_eq!(rq.nr_runnable(), 0);
    }
    for failure in 1..=3 {
        assert!(s.load_balance(cpu_id(0), false).is_empty());
        assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), failure);
    }
    assert_eq!(s.load_balance(cpu_id(0), false).from_cpu(), cpu_id(40));
    assert_eq!(s.nr_balance_failed(cpu_id(0), NUMA), 0);
}

/// Flags of each of `cpu`'s domains: (level, SD_ASYM_CPUCAPACITY, _FULL).
fn asym_flags(s: &Scheduler<Plat>, cpu: CpuId) -> Vec<(DomainLevel, bool, bool)> {
    s.domains(cpu)
        .iter()
        .map(|sd| (sd.level, sd.asym_cpucapacity, sd.asym_cpucapacity_full))
        .collect()
}

#[test]
fn capacities_are_normalised_to_the_biggest_cpu() {
    // Equal CPUs: 1024 each, no asymmetry, no flags.
    let t = Topology::uniform(8, 1, 4, 2).unwrap();
    assert!(!t.has_asym_capacity());
    assert!((0..8).all(|c| t.capacity_of(cpu_id(c)) == 1024));
    let t = t.with_capacities(&[700; 8]).unwrap();
    assert!(!t.has_asym_capacity(), "equal raw values are equal CPUs");
    assert!((0..8).all(|c| t.capacity_of(cpu_id(c)) == 1024));
    // An RK3588-like board: 4 Cortex-A55 (capacity-dmips-mhz 530), 4
    // Cortex-A76 (1024); and the same ratio at twice the raw scale.
    for scale in [1, 2] {
        let raw: Vec<u32> = [530, 530, 530, 530, 1024, 1024, 1024, 1024]
            .iter()
            .map(|r| r * scale)
            .collect();
        let t = Topology::uniform(8, 1, 4, 2)
            .unwrap()
            .with_capacities(&raw)
            .unwrap();
        assert!(t.has_asym_capacity());
        assert_eq!(
            (0..8).map(|c| t.capacity_of(cpu_id(c))).collect::<Vec<_>>(),
            [530, 530, 530, 530, 1024, 1024, 1024, 1024]
        );
    }
    // Rounds down (530/1060 * 1024 = 512), and never to 0.
    let t = Topology::flat(2).with_capacities(&[530, 1060]).unwrap();
    assert_eq!(
        (t.capacity_of(cpu_id(0)), t.capacity_of(cpu_id(1))),
        (512, 1024)
    );
    let t = Topology::flat(2).with_capacities(&[1, 100_000]).unwrap();
    assert_eq!(t.capacity_of(cpu_id(0)), 1);
    // Refused: a missing CPU, a zero.
    assert!(matches!(
        Topology::flat(4).with_capacities(&[1024; 3]),
        Err(TopologyError::LengthMismatch)
    ));
    assert!(matches!(
        Topology::flat(4).with_capacities(&[1024, 1024, 0, 512]),
        Err(TopologyError::ZeroCapacity(2))
    ));
    assert_eq!(
        TopologyError::ZeroCapacity(2).to_string(),
        "CPU 2: capacity 0"
    );
}

#[test]
fn asymmetric_domains_are_classified_as_linux_does() {
    // Two clusters of 4 (an LLC each) in one node, little then big: each
    // cluster's MC sees one capacity, PKG sees both: sd_asym_cpucapacity
    // is PKG for every CPU.
    let raw = [530, 530, 530, 530, 1024, 1024, 1024, 1024];
    let s = machine(
        Topology::uniform(8, 1, 4, 2)
            .unwrap()
            .with_capacities(&raw)
            .unwrap(),
    );
    for cpu in [0, 5] {
        assert_eq!(
            asym_flags(&s, cpu_id(cpu)),
            vec![
                (DomainLevel::Mc, false, false),
                (DomainLevel::Pkg, true, true)
            ]
        );
    }
    let doms = sched::domain::build_domains(s.topology());
    assert_eq!(
        doms[2].asym_cpucapacity().map(|sd| sd.level),
        Some(DomainLevel::Pkg)
    );
    // DynamIQ: 4 little, 3 mid, 1 big in one LLC: the one MC level sees all.
    let s = machine(
        Topology::flat(8)
            .with_capacities(&[400, 400, 400, 400, 800, 800, 800, 1024])
            .unwrap(),
    );
    assert_eq!(
        asym_flags(&s, cpu_id(3)),
        vec![(DomainLevel::Mc, true, true)]
    );
    // A cluster of little and mid cores beside a cluster of big ones: the
    // first cluster's MC is asymmetric but misses the big capacity
    // (SD_ASYM_CPUCAPACITY without _FULL); the second's is symmetric.
    let s = machine(
        Topology::uniform(8, 1, 4, 2)
            .unwrap()
            .with_capacities(&[400, 400, 800, 800, 1024, 1024, 1024, 1024])
            .unwrap(),
    );
    assert_eq!(
        asym_flags(&s, cpu_id(1)),
        vec![
            (DomainLevel::Mc, true, false),
            (DomainLevel::Pkg, true, true)
        ]
    );
    assert_eq!(
        asym_flags(&s, cpu_id(6)),
        vec![
            (DomainLevel::Mc, false, false),
            (DomainLevel::Pkg, true, true)
        ]
    );
    let doms = sched::domain::build_domains(s.topology());
    assert_eq!(
        doms[1].asym_cpucapacity().map(|sd| sd.level),
        Some(DomainLevel::Pkg),
        "the lowest _FULL"
    );
    // Equal CPUs: no flag anywhere, no sd_asym_cpucapacity.
    let s = machine(cascadelake());
    assert!(asym_flags(&s, cpu_id(41)).iter().all(|&(_, a, f)| !a && !f));
    assert!(sched::domain::build_domains(s.topology())[41]
        .asym_cpucapacity()
        .is_none());
}
