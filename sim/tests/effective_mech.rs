//! `Machine::effective_mech`: a mechanism flag it makes false cannot change
//! a run on that machine. For every such flag of the study's machines (and
//! of other presets), runs of the workloads the study uses with the flag on
//! and off are the same byte for byte (every output of the run but its wall
//! time); on `qemu:N`, where the mechanisms act, the flags stay on. The
//! ablation skips a variant on this equality (`sim::score::changes_mechanisms`).

use sim::machine::{Machine, MECHANISM_FLAGS};
use sim::study::study_machine;
use sim::workloads::{DbenchCfg, HackbenchCfg, PgbenchCfg, SchbenchCfg};
use sim::{run_one_followed, Config, WorkSpec};

const MS: u64 = 1_000_000;
/// Each run's length: ten ticks at HZ=250 (periodic and nohz balancing).
const RUN_NS: u64 = 40 * MS;

/// The study's kinds of workload, small: hackbench (pipes with processes,
/// sockets with threads), pgbench, schbench, dbench and dbench-bound.
fn workloads(m: &Machine) -> Vec<WorkSpec> {
    let hb = |sockets, threads| {
        WorkSpec::Hackbench(HackbenchCfg {
            groups: 2,
            loops: 200,
            sockets,
            threads,
            flips: 0,
        })
    };
    let db = |bound| {
        WorkSpec::Dbench(DbenchCfg {
            clients: 6,
            ops: 400,
            workers: (m.topo.nr_cpus() / 2).max(1),
            bound,
        })
    };
    vec![
        hb(false, false),
        hb(true, true),
        WorkSpec::Pgbench(PgbenchCfg {
            clients: 16,
            rw: false,
            warmup_ns: 0,
        }),
        WorkSpec::Schbench(SchbenchCfg {
            message: 2,
            workers: 4,
            sleep_us: 100,
            work_us: 200,
            warmup_ns: 0,
        }),
        db(false),
        db(true),
    ]
}

/// Every output of a run of `w` on `m` (metrics, counters, times, the
/// timeline, where wakeups' requests led), but its wall time.
fn fingerprint(m: &Machine, w: &WorkSpec, seed: u64) -> String {
    let c = Config::parse("NEXT_BUDDY+NEXT_BUDDY_INELIGIBLE_RESCHED");
    let mut r = run_one_followed(m, &c, w, seed, RUN_NS, RUN_NS).expect("run");
    r.wall_s = 0.0;
    format!("{r:?}")
}

/// The flags whose variant has `preset`'s effective mechanisms (with the
/// study's machine noise where it applies, as `sim study` runs it).
fn normalized_off(preset: &str) -> Vec<&'static str> {
    let full = study_machine(preset, &[]).unwrap().effective_mech();
    MECHANISM_FLAGS
        .iter()
        .map(|(f, _)| *f)
        .filter(|f| study_machine(preset, &[f]).unwrap().effective_mech() == full)
        .collect()
}

/// Runs with and without each flag `normalized_off` gives: the same.
fn same_runs(preset: &str) -> Vec<&'static str> {
    let flags = normalized_off(preset);
    let on = study_machine(preset, &[]).unwrap();
    let ws = workloads(&on);
    let base: Vec<String> = ws.iter().map(|w| fingerprint(&on, w, 3)).collect();
    for f in &flags {
        let off = study_machine(preset, &[f]).unwrap();
        if off.mech == on.mech {
            // Off already (the pipe mutex without its costs, the noise
            // where it does not apply): the same machine.
            continue;
        }
        for (w, want) in ws.iter().zip(&base) {
            assert!(
                fingerprint(&off, w, 3) == *want,
                "{f} changes a run of {w:?} on {preset}, but effective_mech makes it false there"
            );
        }
    }
    flags
}

#[test]
fn flags_that_cannot_act_on_graviton3_change_no_run() {
    let flags = same_runs("graviton3");
    // No cost of a wakeup, scan, sleep or interrupt, no vCPUs, no pipe
    // mutex, no SMT, one idle state.
    for f in [
        "--no-wake-cost",
        "--no-scan-cost",
        "--no-contention",
        "--no-vcpu-share",
        "--no-vcpu-turns",
        "--no-vcpu-pause",
        "--no-pipe-lock-pause",
        "--no-pipe-user-return",
        "--no-wake-unlock",
        "--no-sleep-cost",
        "--no-irq-cost",
        "--no-hrtick-cost",
        "--no-ipi-cost",
        "--no-irq-split",
        "--no-sock-sleep",
        "--no-sleep-lock-split",
        "--no-burst-lock-windows",
        "--no-wakee-switch-wait",
        "--no-wq-spin-hold",
        "--no-mutex-handoff",
        "--no-mutex-spin-resched",
        "--no-pipe-wake-next-writer",
        "--no-pipe-pages",
        "--no-mutex-poll-cut",
        "--no-pipe-mutex-split",
        "--no-mutex-fast-path",
        "--no-smt-share",
        "--no-idle-states",
    ] {
        assert!(flags.contains(&f), "{f} on graviton3");
    }
    assert_eq!(flags.len(), 28, "{flags:?}");
}

#[test]
fn flags_that_cannot_act_on_cascadelake_change_no_run() {
    let flags = same_runs("cascadelake-2s");
    // As graviton3's, but SMT sharing and idle states act there.
    assert_eq!(flags.len(), 26, "{flags:?}");
    assert!(!flags.contains(&"--no-smt-share") && !flags.contains(&"--no-idle-states"));
}

#[test]
fn flags_that_cannot_act_on_other_presets_change_no_run() {
    let e = same_runs("epyc-ccx");
    assert!(!e.contains(&"--no-smt-share") && e.contains(&"--no-idle-states"));
    assert_eq!(same_runs("flat:8").len(), 28);
    // A lone vCPU takes no turns: nothing of the turns acts; the even
    // share, the costs and the pipe mutex do.
    let q = same_runs("qemu:1");
    assert_eq!(
        q,
        [
            "--no-vcpu-turns",
            "--no-smt-share",
            "--no-idle-states",
            "--no-machine-noise",
            "--no-sleep-lock-split",
            "--no-burst-lock-windows",
            "--no-wakee-switch-wait",
            "--no-wq-spin-hold",
            "--no-vcpu-pause",
            "--no-pipe-lock-pause",
            "--no-noise-boot-speed",
            "--no-noise-cpu-speed",
            "--no-noise-irqs",
            "--no-noise-placement",
        ]
    );
}

/// The fingerprint sees a mechanism that acts: SMT sharing and idle
/// states on cascadelake-2s, the noise on graviton3, the vCPU turns on
/// qemu:4 each change some run.
#[test]
fn a_flag_that_acts_changes_a_run() {
    for (preset, f) in [
        ("cascadelake-2s", "--no-smt-share"),
        ("cascadelake-2s", "--no-idle-states"),
        ("graviton3", "--no-noise-placement"),
        ("qemu:4", "--no-vcpu-turns"),
        ("qemu:4", "--no-vcpu-pause"),
    ] {
        let (on, off) = (
            study_machine(preset, &[]).unwrap(),
            study_machine(preset, &[f]).unwrap(),
        );
        assert_ne!(on.effective_mech(), off.effective_mech(), "{f} on {preset}");
        let ws = workloads(&on);
        assert!(
            ws.iter()
                .any(|w| fingerprint(&on, w, 3) != fingerprint(&off, w, 3)),
            "{f} on {preset}"
        );
    }
}

/// On `qemu:N` (N > 1) every mechanism but the machine noise, SMT sharing
/// and idle states (no SMT, one idle state) acts: its effective mechanisms
/// are its own, and each other flag changes them.
#[test]
fn qemu_keeps_the_flags_that_act() {
    for n in [2, 4, 8] {
        let name = format!("qemu:{n}");
        let m = study_machine(&name, &[]).unwrap();
        assert!(!m.mech.machine_noise && m.mech.smt_share && m.mech.idle_states);
        let mut acting = m.mech;
        (acting.smt_share, acting.idle_states) = (false, false);
        assert_eq!(m.effective_mech(), acting, "{name}");
        let mut same = Vec::new();
        for (f, _) in MECHANISM_FLAGS {
            let less = study_machine(&name, &[f]).unwrap();
            if less.effective_mech() == m.effective_mech() {
                same.push(*f);
            }
        }
        assert_eq!(
            same,
            [
                "--no-smt-share",
                "--no-idle-states",
                "--no-machine-noise",
                "--no-noise-boot-speed",
                "--no-noise-cpu-speed",
                "--no-noise-irqs",
                "--no-noise-placement",
            ],
            "{name}"
        );
    }
    // The options that are off by default act there when turned on, and
    // not where vCPUs take no turns.
    let opted = |preset: &str| {
        let mut m = study_machine(preset, &[]).unwrap();
        m.mech.qemu_rr_turns = true;
        m.mech.clock_burn = true;
        m.mech.sleep_unlocked = true;
        m.mech.switch_timer_kick = true;
        m.effective_mech()
    };
    let e = opted("qemu:4");
    assert!(e.qemu_rr_turns && e.clock_burn && e.sleep_unlocked && !e.sleep_lock_split);
    assert!(e.switch_timer_kick);
    let e = opted("graviton3");
    assert!(!e.qemu_rr_turns && !e.clock_burn && !e.sleep_unlocked);
    assert!(!e.switch_timer_kick);
}
