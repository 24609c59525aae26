//! `sim`: the scheduler on simulated machines.
//!
//! ```text
//! sim run [--machine PRESET] [--config A+B] [--seed N] [--ms MS] WORKLOAD [k=v...]
//! sim study [--quick] [--seeds N] [--out DIR] [--jobs N] [--config A+B]...
//! sim bench
//! ```
//! Workloads: `hackbench groups=4 loops=100 ipc=pipe|socket mode=process|thread`,
//! `schbench m=8 t=8 sleep_us=100 work_us=1000`, `dbench clients=16 ops=200 workers=N`,
//! `pgbench clients=16 rw=0|1`, `mix hog hog:5 sleeper:200:800 cyclic:500`.
//! Configs: `NEXT_BUDDY`, `NO_NEXT_BUDDY`, `preempt=lazy`,
//! `kernel.sched_base_slice_ns=3000000`, joined with `+`.

use std::process::exit;

use sim::engine::{row_name, Counters, NR_ROWS};
use sim::machine::{Machine, PRESETS};
use sim::workloads::*;
use sim::{run_one, Config, WorkSpec};

fn usage(e: &str) -> ! {
    eprintln!("error: {e}");
    eprintln!(
        "usage: sim run [--machine PRESET] [--config A+B] [--seed N] [--ms MS] WORKLOAD [k=v...]\n       \
         sim study [--quick] [--seeds N] [--out DIR] [--jobs N] [--config A+B]...\n       sim bench\n\
         presets: {}",
        PRESETS.join(", ")
    );
    exit(2);
}

fn kv(args: &[String]) -> Vec<(String, String)> {
    args.iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => usage(&format!("expected key=value, got '{a}'")),
        })
        .collect()
}

fn num(kvs: &[(String, String)], key: &str, def: u64) -> u64 {
    kvs.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{key}: bad number '{v}'")))
        })
        .unwrap_or(def)
}

fn text<'a>(kvs: &'a [(String, String)], key: &str, def: &'a str) -> &'a str {
    kvs.iter()
        .find(|(k, _)| k == key)
        .map_or(def, |(_, v)| v.as_str())
}

/// Parses a workload and its options.
pub fn parse_work(name: &str, rest: &[String], m: &Machine) -> WorkSpec {
    if name == "mix" || name == "cyclictest" {
        let v: Vec<MixTask> = rest
            .iter()
            .map(|s| MixTask::parse(s).unwrap_or_else(|e| usage(&e)))
            .collect();
        if v.is_empty() {
            usage("mix needs tasks");
        }
        return WorkSpec::Mix(v);
    }
    let o = kv(rest);
    match name {
        "hackbench" => WorkSpec::Hackbench(HackbenchCfg {
            groups: num(&o, "groups", 4).clamp(1, 400) as usize,
            loops: num(&o, "loops", 100).clamp(1, 100_000) as usize,
            sockets: match text(&o, "ipc", "pipe") {
                "pipe" => false,
                "socket" => true,
                s => usage(&format!("ipc: pipe or socket, got '{s}'")),
            },
            threads: match text(&o, "mode", "process") {
                "process" => false,
                "thread" => true,
                s => usage(&format!("mode: process or thread, got '{s}'")),
            },
        }),
        "schbench" => WorkSpec::Schbench(SchbenchCfg {
            message: num(&o, "m", 4).clamp(1, 256) as usize,
            workers: num(&o, "t", 4).clamp(1, 256) as usize,
            sleep_us: num(&o, "sleep_us", 100),
            work_us: num(&o, "work_us", 1000),
        }),
        "dbench" => WorkSpec::Dbench(DbenchCfg {
            clients: num(&o, "clients", 8).clamp(1, 5000) as usize,
            ops: num(&o, "ops", 200).max(1) as usize,
            workers: num(&o, "workers", (m.topo.nr_cpus() as u64 / 2).max(1)).max(1) as usize,
        }),
        "pgbench" => WorkSpec::Pgbench(PgbenchCfg {
            clients: num(&o, "clients", 8).clamp(1, 5000) as usize,
            rw: num(&o, "rw", 0) != 0,
        }),
        s => usage(&format!("unknown workload '{s}'")),
    }
}

fn print_counters(c: &Counters) {
    println!(
        "events {}  switches {}  preemptions {}  wakeups {} (sync {}, queued {}, in place {})  ipis {}",
        c.events,
        c.switches,
        c.preemptions,
        c.wakeups,
        c.sync_wakeups,
        c.queued_wakeups,
        c.ttwu_runnable,
        c.ipis
    );
    println!(
        "wakeup preempts {}  buddy picks {}  migrations {} (wake {} balance {})  cache-cold runs {} ({} after migration, {:.3} ms refill)  tick resched {}",
        c.wakeup_preempts,
        c.buddy_picks,
        c.migrations,
        c.wake_migrations,
        c.balanced,
        c.cold_runs,
        c.cold_migrations,
        c.cold_ns as f64 / 1e6,
        c.tick_resched
    );
    let rows: Vec<String> = (0..NR_ROWS)
        .filter(|&i| c.rows[i] > 0)
        .map(|i| format!("{} {}", row_name(i), c.rows[i]))
        .collect();
    println!("wakeup decisions (direct wakeups): {}", rows.join(", "));
}

fn cmd_run(args: &[String]) {
    let mut machine = "small".to_string();
    let mut config = "NO_NEXT_BUDDY".to_string();
    let mut seed = 1u64;
    let mut ms = 1000u64;
    let mut i = 0;
    while i < args.len() && args[i].starts_with("--") {
        let v = args
            .get(i + 1)
            .cloned()
            .unwrap_or_else(|| usage(&format!("{} needs a value", args[i])));
        match args[i].as_str() {
            "--machine" => machine = v,
            "--config" => config = v,
            "--seed" => seed = v.parse().unwrap_or_else(|_| usage("--seed: a number")),
            "--ms" => ms = v.parse().unwrap_or_else(|_| usage("--ms: a number")),
            o => usage(&format!("unknown option '{o}'")),
        }
        i += 2;
    }
    let m =
        Machine::preset(&machine).unwrap_or_else(|| usage(&format!("unknown machine '{machine}'")));
    let Some(name) = args.get(i) else {
        usage("which workload?")
    };
    let w = parse_work(name, &args[i + 1..], &m);
    let c = Config::parse(&config);
    let r = run_one(&m, &c, &w, seed, ms * 1_000_000, 0).unwrap_or_else(|e| usage(&e));
    println!("{m}");
    println!("config {} seed {seed}: {:?}", c.name, w);
    println!(
        "simulated {:.3} ms in {:.3} s wall ({:.2} M events/s)",
        r.sim_ns as f64 / 1e6,
        r.wall_s,
        r.ctr.events as f64 / r.wall_s / 1e6
    );
    for mt in &r.metrics {
        println!("{:<24} {:>14.4}", mt.name, mt.value);
    }
    print_counters(&r.ctr);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => cmd_run(&args[1..]),
        Some("study") => sim::study::cmd_study(&args[1..]),
        Some("bench") => sim::study::cmd_bench(),
        _ => usage("give a command: run, study or bench"),
    }
}
