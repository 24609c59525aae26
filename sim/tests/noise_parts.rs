//! Machine noise's parts (`sim/src/machine.rs`, `MachineNoise`; the
//! `--no-noise-...` switches): each part is drawn whether or not it is on,
//! so turning one off leaves the others' draws as they were; and the part
//! that moves the pgbench rows at 250 clients (`docs/results/study.md`,
//! "2026-12-06 (afternoon)"), the placement, is where the tasks start.

use sched::TaskId;
use sim::engine::Kernel;
use sim::machine::Machine;
use sim::workloads::{Pgbench, PgbenchCfg};
use sim::{Config, WorkSpec};

/// `graviton3` with machine noise and `off` turned off.
fn g3(noise: bool, off: &[&str]) -> Machine {
    let mut m = Machine::preset("graviton3").unwrap();
    m.mech.set_machine_noise(noise);
    for f in off {
        m.mech.turn_off(f).unwrap();
    }
    m
}

fn pg250() -> PgbenchCfg {
    PgbenchCfg {
        clients: 250,
        rw: false,
        warmup_ns: 0,
    }
}

/// A kernel of `m` booted as `run_one` boots the study's `nb-off` runs of
/// pgbench at 250 clients, seed `seed`, with its tasks forked (a run of
/// 0 ns): each CPU's capacity and each task's CPU.
fn booted(m: &Machine, seed: u64) -> (Vec<u32>, Vec<usize>) {
    let c = Config::parse("nb-off:NO_NEXT_BUDDY");
    let w = WorkSpec::Pgbench(pg250());
    let n = m.topo.nr_cpus();
    let cfg = c.build(n, m.hz).unwrap();
    let mut k = Kernel::with_boot(m.clone(), cfg, w.nr_tasks(n), seed, c.boot() ^ w.boot());
    let caps = k.capacities();
    k.run(&mut Pgbench::new(pg250()), 0);
    let cpus = (0..w.nr_tasks(n))
        .map(|i| k.s.task_cpu(TaskId(i as u32)).expect("forked").index())
        .collect();
    (caps, cpus)
}

/// Turning one part off changes that part only: the speeds with the
/// interrupts or the placement off are those with every part on; with
/// the per-CPU spread off every CPU runs at the boot's one speed, at
/// least each CPU's speed with it; with the boot's speed off each CPU is
/// at least as fast as with it; and the placement is the same with either
/// speed or the interrupts off.
#[test]
fn each_part_is_drawn_alone() {
    for seed in 1000..1005 {
        let (caps, cpus) = booted(&g3(true, &[]), seed);
        assert!(caps.iter().all(|&c| c < 1024), "seed {seed}: {caps:?}");
        assert!(caps.iter().any(|&c| c != caps[0]), "seed {seed}");
        for part in ["--no-noise-irqs", "--no-noise-placement"] {
            assert_eq!(booted(&g3(true, &[part]), seed).0, caps, "{part}");
        }
        let one = booted(&g3(true, &["--no-noise-cpu-speed"]), seed).0;
        assert!(one.iter().all(|&c| c == one[0]), "seed {seed}: {one:?}");
        assert!(caps.iter().all(|&c| c <= one[0]), "seed {seed}");
        let cpu_only = booted(&g3(true, &["--no-noise-boot-speed"]), seed).0;
        assert!(cpu_only.iter().zip(&caps).all(|(a, b)| a >= b));
        assert!(cpu_only.iter().any(|&c| c != cpu_only[0]), "seed {seed}");
        for part in [
            "--no-noise-boot-speed",
            "--no-noise-cpu-speed",
            "--no-noise-irqs",
        ] {
            assert_eq!(booted(&g3(true, &[part]), seed).1, cpus, "{part}");
        }
    }
}

/// How many CPUs host pgbench's clients only or its backends only, after
/// the fork (a client is an even task, its backend the next one).
fn one_kind_cpus(cpus: &[usize]) -> usize {
    let (mut clients, mut backends) = (vec![0; 64], vec![0; 64]);
    for (t, &c) in cpus.iter().enumerate() {
        if t % 2 == 0 {
            clients[c] += 1;
        } else {
            backends[c] += 1;
        }
    }
    (0..64)
        .filter(|&c| (clients[c] == 0) != (backends[c] == 0))
        .count()
}

/// Without the placement's draw the 500 tasks of pgbench at 250 clients
/// are forked from CPU 0 in task order (client, backend, client, ...) and
/// fork balancing deals them out over the 64 CPUs in turn: every client on
/// an even CPU, every backend on an odd one, no CPU with both. With it
/// (another fork order each boot) the CPUs host both kinds, as a real
/// machine's clients and backends, forked by two processes, do.
#[test]
fn pgbench_placement_without_the_draw_parts_clients_from_backends() {
    let quiet = booted(&g3(false, &[]), 1000).1;
    for (t, &c) in quiet.iter().enumerate() {
        assert_eq!(c % 2, t % 2, "task {t} on CPU {c}");
    }
    assert_eq!(one_kind_cpus(&quiet), 64);
    for seed in 1000..1005 {
        let no_draw = booted(&g3(true, &["--no-noise-placement"]), seed).1;
        assert_eq!(no_draw, quiet, "seed {seed}");
        let drawn = booted(&g3(true, &[]), seed).1;
        assert!(one_kind_cpus(&drawn) <= 4, "seed {seed}: {drawn:?}");
    }
}
