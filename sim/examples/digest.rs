//! A digest of every output of a matrix of simulator runs, one line per
//! run: to check that a change meant to leave results alone (a speed-up of
//! the engine) does. Build it before and after the change and compare:
//!
//! ```text
//! cargo run -q -p sim --release --example digest > before.txt
//! (apply the change)
//! cargo run -q -p sim --release --example digest > after.txt
//! cmp before.txt after.txt
//! ```
//!
//! `--no-batch` takes every step as its own event (`Machine::batch`): the
//! digests must be those of the default run, line for line
//! (`cargo run -q -p sim --release --example digest -- --no-batch`).
//! `--machine-noise` turns the machine noise on (boot and per-CPU speeds,
//! interrupts; off in the presets, on in the study and in `sim bench`'s
//! third row): another matrix, to compare before and after a change with
//! the same flag. The two flags combine.
//!
//! The matrix: 7 machines (graviton3, small, qemu:4, qemu:1,
//! cascadelake-2s, epyc-ccx, flat:8) × 7 configurations (NEXT_BUDDY on and
//! off, NO_HRTICK, NO_TTWU_QUEUE, preempt=lazy|none|voluntary) × 6
//! workloads (hackbench pipes and sockets, processes and threads;
//! schbench; a mix of hogs, a sleeper and a cyclictest thread) × 2 seeds.
//! A run's digest covers its metrics, every counter, the simulated time,
//! each task's runtime, each CPU's busy and idle time, the wakeup-latency
//! samples and the timeline of its first tenth.

use sim::machine::Machine;
use sim::workloads::{HackbenchCfg, MixTask, SchbenchCfg};
use sim::{run_one, Config, WorkSpec};

/// FNV-1a, 64 bits.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn main() {
    let (mut batch, mut noise) = (true, false);
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--no-batch" => batch = false,
            "--machine-noise" => noise = true,
            _ => {
                sim::errln!(
                    "digest: unknown argument '{a}' (accepted: --no-batch, --machine-noise)"
                );
                std::process::exit(2);
            }
        }
    }
    let machines = [
        "graviton3",
        "small",
        "qemu:4",
        "qemu:1",
        "cascadelake-2s",
        "epyc-ccx",
        "flat:8",
    ];
    let configs = [
        "NO_NEXT_BUDDY",
        "NEXT_BUDDY",
        "NO_HRTICK",
        "preempt=lazy",
        "NO_TTWU_QUEUE",
        "preempt=none",
        "preempt=voluntary",
    ];
    let mut works: Vec<(WorkSpec, u64)> = Vec::new();
    for sockets in [false, true] {
        for threads in [false, true] {
            let c = HackbenchCfg {
                groups: 3,
                loops: 200,
                sockets,
                threads,
                flips: 0,
            };
            works.push((WorkSpec::Hackbench(c), 40));
        }
    }
    let sch = SchbenchCfg {
        message: 2,
        workers: 8,
        sleep_us: 100,
        work_us: 500,
        warmup_ns: 0,
    };
    works.push((WorkSpec::Schbench(sch), 100));
    let mix = vec![
        MixTask::Hog { nice: 0 },
        MixTask::Hog { nice: 5 },
        MixTask::Sleeper {
            run_us: 100,
            sleep_us: 900,
            nice: 0,
        },
        MixTask::Cyclic { interval_us: 500 },
    ];
    works.push((WorkSpec::Mix(mix), 200));
    for m in machines {
        let mut machine = Machine::preset(m).expect("preset");
        machine.batch = batch;
        machine.mech.machine_noise = noise;
        for c in configs {
            let cfg = Config::parse(c);
            for (i, (w, ms)) in works.iter().enumerate() {
                for seed in [1, 2] {
                    let r = run_one(&machine, &cfg, w, seed, ms * 1_000_000, ms * 100_000)
                        .expect("run");
                    let trace: Vec<_> = r
                        .trace
                        .iter()
                        .map(|g| (g.cpu, g.start, g.end, g.tid))
                        .collect();
                    let all = format!(
                        "{:?} {:?} {} {:?} {:?} {:?} {} {:?}",
                        r.metrics,
                        r.ctr,
                        r.sim_ns,
                        r.runtimes,
                        r.cpu_times,
                        r.lat0,
                        r.exited,
                        trace
                    );
                    sim::outln!(
                        "{m} {c} workload{i} seed{seed} {:016x} events={}",
                        fnv(&all),
                        r.ctr.events
                    );
                }
            }
        }
    }
}
