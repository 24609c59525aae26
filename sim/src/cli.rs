//! The command line of `sim run`: options, workloads and their `key=value`
//! settings. Anything it does not know is refused with the accepted keys or
//! values (as the kernel shell does), before anything runs or is written:
//! a typo such as `hackbench sockets=true` must not quietly run pipes.

use crate::machine::Machine;
use crate::machine::{mechanism_flag_names, Mechanisms, PRESETS};
use crate::workloads::*;
use crate::{Config, WorkSpec};

/// A parsed `sim run` command line.
#[derive(Clone, Debug)]
pub struct RunArgs {
    /// The machine.
    pub machine: Machine,
    /// The scheduler configuration (already checked with [`Config::check`]).
    pub config: Config,
    /// The seed.
    pub seed: u64,
    /// Virtual time limit, ms.
    pub ms: u64,
    /// The workload.
    pub work: WorkSpec,
}

/// The accepted `key=value` settings of a workload: (key, accepted values).
fn keys(workload: &str) -> Option<&'static [(&'static str, &'static str)]> {
    Some(match workload {
        "hackbench" => &[
            ("groups", "1..=400"),
            ("loops", "1..=100000"),
            ("ipc", "pipe|socket"),
            ("mode", "process|thread"),
            ("flips", "0..=1000000"),
        ],
        "schbench" => &[
            ("m", "1..=256"),
            ("t", "1..=256"),
            ("sleep_us", "0..=10000000"),
            ("work_us", "1..=10000000"),
            ("warmup_ms", "0..=3600000, below --ms"),
        ],
        "dbench" => &[
            ("clients", "1..=5000"),
            ("ops", "1..=1000000000"),
            ("workers", "1..=5000"),
            ("bound", "0|1"),
        ],
        "pgbench" => &[
            ("clients", "1..=5000"),
            ("rw", "0|1"),
            ("warmup_ms", "0..=3600000, below --ms"),
        ],
        "lcschbench" => &[
            ("m", "1..=64"),
            ("t", "1..=4095"),
            ("sleep_us", "0..=1000000"),
            ("work_us", "0..=10000000"),
        ],
        "lcpgbench" => &[
            ("clients", "1..=1000"),
            ("tx", "1..=1000000"),
            ("rw", "1|0"),
            ("space_wake", "1|0"),
        ],
        _ => return None,
    })
}

/// The workloads `sim run` knows.
pub const WORKLOADS: &[&str] = &[
    "hackbench",
    "schbench",
    "dbench",
    "pgbench",
    "lcpgbench",
    "lcschbench",
    "mix",
];

fn list(keys: &[(&str, &str)]) -> String {
    keys.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `key=value` settings of one workload, checked against its keys.
struct Settings<'a> {
    workload: &'a str,
    keys: &'static [(&'static str, &'static str)],
    kv: Vec<(&'a str, &'a str)>,
}

impl<'a> Settings<'a> {
    fn parse(workload: &'a str, args: &'a [String]) -> Result<Self, String> {
        let keys = keys(workload).ok_or_else(|| {
            format!(
                "unknown workload '{workload}' (one of {})",
                WORKLOADS.join(", ")
            )
        })?;
        let mut kv: Vec<(&str, &str)> = Vec::new();
        for a in args {
            let (k, v) = a.split_once('=').ok_or_else(|| {
                format!(
                    "{workload}: expected key=value, got '{a}' (accepted: {})",
                    list(keys)
                )
            })?;
            if !keys.iter().any(|(name, _)| *name == k) {
                return Err(format!(
                    "{workload}: unknown key '{k}' (accepted: {})",
                    list(keys)
                ));
            }
            if kv.iter().any(|(seen, _)| *seen == k) {
                return Err(format!("{workload}: '{k}' given twice"));
            }
            kv.push((k, v));
        }
        Ok(Settings { workload, keys, kv })
    }

    fn accepted(&self, key: &str) -> &'static str {
        self.keys
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("", |(_, v)| v)
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.kv.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// A number in `min..=max` (the range the key's description states).
    fn num(&self, key: &str, def: u64, min: u64, max: u64) -> Result<u64, String> {
        let Some(v) = self.get(key) else {
            return Ok(def);
        };
        match v.parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(format!(
                "{}: {key}={v}: expected {}",
                self.workload,
                self.accepted(key)
            )),
        }
    }

    /// One of `names` (the first is the default); returns its index.
    fn choice(&self, key: &str, names: &[&str]) -> Result<usize, String> {
        let Some(v) = self.get(key) else {
            return Ok(0);
        };
        names.iter().position(|n| *n == v).ok_or_else(|| {
            format!(
                "{}: {key}={v}: expected {}",
                self.workload,
                self.accepted(key)
            )
        })
    }
}

/// Parses a workload and its settings (`rest`) for machine `m`.
pub fn parse_work(name: &str, rest: &[String], m: &Machine) -> Result<WorkSpec, String> {
    if name == "mix" || name == "cyclictest" {
        let v = rest
            .iter()
            .map(|s| MixTask::parse(s))
            .collect::<Result<Vec<_>, _>>()?;
        if v.is_empty() {
            return Err(
                "mix needs tasks: hog[:NICE], sleeper:RUN_US:SLEEP_US[:NICE], cyclic:INTERVAL_US"
                    .into(),
            );
        }
        return Ok(WorkSpec::Mix(v));
    }
    let o = Settings::parse(name, rest)?;
    Ok(match name {
        "hackbench" => WorkSpec::Hackbench(HackbenchCfg {
            groups: o.num("groups", 4, 1, 400)? as usize,
            loops: o.num("loops", 100, 1, 100_000)? as usize,
            sockets: o.choice("ipc", &["pipe", "socket"])? == 1,
            threads: o.choice("mode", &["process", "thread"])? == 1,
            flips: o.num("flips", 0, 0, 1_000_000)? as u32,
        }),
        "schbench" => WorkSpec::Schbench(SchbenchCfg {
            message: o.num("m", 4, 1, 256)? as usize,
            workers: o.num("t", 4, 1, 256)? as usize,
            sleep_us: o.num("sleep_us", 100, 0, 10_000_000)?,
            work_us: o.num("work_us", 1000, 1, 10_000_000)?,
            warmup_ns: o.num("warmup_ms", 0, 0, 3_600_000)? * 1_000_000,
        }),
        "dbench" => WorkSpec::Dbench(DbenchCfg {
            clients: o.num("clients", 8, 1, 5000)? as usize,
            ops: o.num("ops", 200, 1, 1_000_000_000)? as usize,
            workers: o.num("workers", (m.topo.nr_cpus() as u64 / 2).max(1), 1, 5000)? as usize,
            bound: o.choice("bound", &["0", "1"])? == 1,
        }),
        "pgbench" => WorkSpec::Pgbench(PgbenchCfg {
            clients: o.num("clients", 8, 1, 5000)? as usize,
            rw: o.choice("rw", &["0", "1"])? == 1,
            warmup_ns: o.num("warmup_ms", 0, 0, 3_600_000)? * 1_000_000,
        }),
        // lcbench's defaults: -m 1 -t 4 -s 100, and the walk of -F 256 at
        // qemu:N's measured 392 ns a KiB.
        "lcschbench" => WorkSpec::LcSchbench(LcSchbenchCfg {
            message: o.num("m", 1, 1, 64)? as usize,
            workers: o.num("t", 4, 1, 4095)? as usize,
            sleep_us: o.num("sleep_us", 100, 0, 1_000_000)?,
            work_us: o.num("work_us", 100, 0, 10_000_000)?,
        }),
        // lcbench's defaults: -c 1 -t 10, read-write.
        "lcpgbench" => WorkSpec::LcPgbench(LcPgbenchCfg {
            clients: o.num("clients", 1, 1, 1000)? as usize,
            tx: o.num("tx", 10, 1, 1_000_000)?,
            rw: o.choice("rw", &["1", "0"])? == 0,
            space_wake: o.choice("space_wake", &["1", "0"])? == 0,
        }),
        _ => unreachable!("Settings::parse accepts only known workloads"),
    })
}

/// Parses `sim run`'s arguments (everything after `run`).
pub fn parse_run(args: &[String]) -> Result<RunArgs, String> {
    let (mut machine, mut config, mut seed, mut ms) = (None, None, None, None);
    let mut mech = Mechanisms::default();
    let mut offs: Vec<&str> = Vec::new();
    let mut batch = true;
    let mut noise = false;
    let mut rr_turns = false;
    let mut sleep_unlocked = false;
    let mut clock_burn = false;
    let mut switch_kick = false;
    let mut timer_slack = false;
    let mut i = 0;
    while i < args.len() && args[i].starts_with("--") {
        let opt = args[i].as_str();
        // The switches that turn something on: each at most once.
        let on = match opt {
            "--machine-noise" => Some(&mut noise),
            "--qemu-rr-turns" => Some(&mut rr_turns),
            "--sleep-unlocked" => Some(&mut sleep_unlocked),
            "--clock-burn" => Some(&mut clock_burn),
            "--switch-timer-kick" => Some(&mut switch_kick),
            "--timer-slack" => Some(&mut timer_slack),
            _ => None,
        };
        if let Some(flag) = on {
            if *flag {
                return Err(format!("{opt} given twice"));
            }
            *flag = true;
            i += 1;
            continue;
        }
        if opt.starts_with("--no-") {
            if offs.contains(&opt) {
                return Err(format!("{opt} given twice"));
            }
            if opt == "--no-batch" {
                batch = false;
            } else {
                mech.turn_off(opt)
                    .map_err(|e| format!("{e}, or --no-batch"))?;
            }
            offs.push(opt);
            i += 1;
            continue;
        }
        let v = args
            .get(i + 1)
            .ok_or_else(|| format!("{opt} needs a value"))?;
        let slot = match opt {
            "--machine" => &mut machine,
            "--config" => &mut config,
            "--seed" => &mut seed,
            "--ms" => &mut ms,
            o => {
                return Err(format!(
                    "unknown option '{o}' (accepted: --machine, --config, --seed, --ms, --machine-noise, --qemu-rr-turns, --sleep-unlocked, --clock-burn, --switch-timer-kick, --timer-slack, {}, --no-batch)",
                    mechanism_flag_names()
                ))
            }
        };
        if slot.replace(v.clone()).is_some() {
            return Err(format!("{opt} given twice"));
        }
        i += 2;
    }
    let name = machine.as_deref().unwrap_or("small");
    let mut machine = Machine::preset(name).ok_or_else(|| {
        format!(
            "unknown machine '{name}' (one of {}; flat:N with N in 1..=256, qemu:N in 1..=64)",
            PRESETS.join(", ")
        )
    })?;
    if noise && !mech.machine_noise {
        return Err("--machine-noise and --no-machine-noise contradict each other".into());
    }
    if noise && !machine.noise_applies() {
        return Err(format!(
            "--machine-noise: {name} has no machine noise (its clock counts instructions: no frequency, no host interrupts)"
        ));
    }
    // The options that act only where vCPUs take turns.
    let turns = machine.costs.vcpu_time_sharing && mech.vcpu_share && mech.vcpu_turns;
    let no_turns = |opt: &str| {
        format!(
            "{opt}: {name} takes no vCPU turns (only qemu:N does, without --no-vcpu-share or --no-vcpu-turns)"
        )
    };
    if rr_turns && !turns {
        return Err(no_turns("--qemu-rr-turns"));
    }
    if sleep_unlocked && !mech.sleep_lock_split {
        return Err(
            "--sleep-unlocked and --no-sleep-lock-split contradict each other (none of a sleep under the runqueue lock, or all of its share)"
                .into(),
        );
    }
    if sleep_unlocked && !(turns && mech.vcpu_pause) {
        return Err(format!(
            "--sleep-unlocked: {name} takes no vCPU turns with pauses (only qemu:N does, without --no-vcpu-share, --no-vcpu-turns or --no-vcpu-pause)"
        ));
    }
    if clock_burn && !turns {
        return Err(no_turns("--clock-burn"));
    }
    if switch_kick && !turns {
        return Err(no_turns("--switch-timer-kick"));
    }
    // A flag turns a mechanism off; one the machine does not model stays off.
    machine.mech = Mechanisms {
        wake_cost: machine.mech.wake_cost && mech.wake_cost,
        scan_cost: machine.mech.scan_cost && mech.scan_cost,
        contention: machine.mech.contention && mech.contention,
        vcpu_share: machine.mech.vcpu_share && mech.vcpu_share,
        vcpu_turns: machine.mech.vcpu_turns && mech.vcpu_turns,
        qemu_rr_turns: rr_turns,
        vcpu_pause: machine.mech.vcpu_pause && mech.vcpu_pause,
        pipe_lock_pause: machine.mech.pipe_lock_pause && mech.pipe_lock_pause,
        pipe_user_return: machine.mech.pipe_user_return && mech.pipe_user_return,
        wake_unlock: machine.mech.wake_unlock && mech.wake_unlock,
        smt_share: machine.mech.smt_share && mech.smt_share,
        idle_states: machine.mech.idle_states && mech.idle_states,
        // Off in every preset: `--machine-noise` turns it on where it
        // applies, `--no-machine-noise` keeps it off.
        machine_noise: noise,
        noise_boot_speed: noise && mech.noise_boot_speed,
        noise_cpu_speed: noise && mech.noise_cpu_speed,
        noise_irqs: noise && mech.noise_irqs,
        noise_placement: noise && mech.noise_placement,
        wq_concurrency: machine.mech.wq_concurrency && mech.wq_concurrency,
        sleep_cost: machine.mech.sleep_cost && mech.sleep_cost,
        irq_cost: machine.mech.irq_cost && mech.irq_cost,
        hrtick_cost: machine.mech.hrtick_cost && mech.hrtick_cost,
        ipi_cost: machine.mech.ipi_cost && mech.ipi_cost,
        irq_split: machine.mech.irq_split && mech.irq_split,
        sock_sleep: machine.mech.sock_sleep && mech.sock_sleep,
        sleep_unlocked,
        sleep_lock_split: machine.mech.sleep_lock_split && mech.sleep_lock_split,
        clock_burn,
        switch_timer_kick: switch_kick,
        timer_slack,
        mutex_handoff: machine.mech.mutex_handoff && mech.mutex_handoff,
        mutex_spin_resched: machine.mech.mutex_spin_resched && mech.mutex_spin_resched,
        pipe_wake_next_writer: machine.mech.pipe_wake_next_writer && mech.pipe_wake_next_writer,
        pipe_pages: machine.mech.pipe_pages && mech.pipe_pages,
        mutex_poll_cut: machine.mech.mutex_poll_cut && mech.mutex_poll_cut,
        pipe_mutex_split: machine.mech.pipe_mutex_split && mech.pipe_mutex_split,
        mutex_fast_path: machine.mech.mutex_fast_path && mech.mutex_fast_path,
        ilb_kick: machine.mech.ilb_kick && mech.ilb_kick,
        ilb_ipi: machine.mech.ilb_ipi && mech.ilb_ipi,
        row_lock: machine.mech.row_lock && mech.row_lock,
        syscall_user_return: machine.mech.syscall_user_return && mech.syscall_user_return,
        burst_lock_windows: machine.mech.burst_lock_windows && mech.burst_lock_windows,
        wakee_switch_wait: machine.mech.wakee_switch_wait && mech.wakee_switch_wait,
        wq_spin_hold: machine.mech.wq_spin_hold && mech.wq_spin_hold,
    };
    machine.batch = batch;
    let config = Config::parse(config.as_deref().unwrap_or("NO_NEXT_BUDDY"));
    config.check()?;
    let number = |opt: &str, v: Option<String>, def: u64, min: u64| match v {
        None => Ok(def),
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|&n| n >= min)
            .ok_or_else(|| format!("{opt}: expected a number >= {min}, got '{v}'")),
    };
    let seed = number("--seed", seed, 1, 0)?;
    let ms = number("--ms", ms, 1000, 1)?;
    if ms > u64::MAX / 1_000_000 {
        return Err(format!("--ms: {ms} is too long"));
    }
    let name = args.get(i).ok_or_else(|| {
        format!(
            "which workload? (one of {}, then its key=value settings)",
            WORKLOADS.join(", ")
        )
    })?;
    let work = parse_work(name, &args[i + 1..], &machine)?;
    // A warm-up as long as the run would count nothing.
    let warmup_ns = match &work {
        WorkSpec::Pgbench(c) => c.warmup_ns,
        WorkSpec::Schbench(c) => c.warmup_ns,
        _ => 0,
    };
    if warmup_ns > 0 && warmup_ns >= ms * 1_000_000 {
        return Err(format!(
            "{name}: warmup_ms={} is not below --ms {ms}: nothing would be counted",
            warmup_ns / 1_000_000
        ));
    }
    Ok(RunArgs {
        machine,
        config,
        seed,
        ms,
        work,
    })
}
