//! `sim`: the scheduler on simulated machines.
//!
//! ```text
//! sim run [--machine PRESET] [--config A+B] [--seed N] [--ms MS] [--machine-noise] [--qemu-rr-turns] [--sleep-unlocked] [--clock-burn] [--switch-timer-kick] [--no-MECHANISM...] [--no-batch] WORKLOAD [k=v...]
//! sim study [--quick | --newidle | --ablation [--mechanisms LIST]] [--rows LIST | --points LIST] [--length short|full] [--no-machine-noise] [--seeds N] [--samples seeds|published] [--jobs N] [--out DIR] [--config LABEL:A+B]...
//! sim bench
//! ```
//! Workloads: `hackbench groups=4 loops=100 ipc=pipe|socket mode=process|thread`,
//! `schbench m=8 t=8 sleep_us=100 work_us=1000`, `dbench clients=16 ops=200 workers=N bound=0|1`,
//! `pgbench clients=16 rw=0|1`, `mix hog hog:5 sleeper:200:800 cyclic:500`.
//! Configs: `NEXT_BUDDY`, `NO_NEXT_BUDDY`, `preempt=lazy`,
//! `kernel.sched_base_slice_ns=3000000`, joined with `+`.

// Stdout goes through `outln!` / `out!`, stderr through `errln!`
// (`sim/src/out.rs`): `println!` and `eprintln!` panic on a closed pipe.
#![warn(clippy::print_stdout, clippy::print_stderr)]

use std::process::exit;

use sim::cli::parse_run;
use sim::engine::{place_name, row_name, Counters, NR_PLACES, NR_ROWS};
use sim::machine::{mechanism_flag_names, PRESETS};
use sim::run_one_followed;
use sim::{errln, outln};

fn usage_text() -> String {
    format!(
        "usage: sim run [--machine PRESET] [--config A+B] [--seed N] [--ms MS] [--machine-noise] [--qemu-rr-turns] [--sleep-unlocked] [--clock-burn] [--switch-timer-kick] [--no-MECHANISM...] [--no-batch] WORKLOAD [k=v...]\n       \
         {}\n       sim bench\n\
         presets: {}\nmechanisms: {}",
        sim::study::STUDY_USAGE.trim_start_matches("usage: "),
        PRESETS.join(", "),
        mechanism_flag_names()
    )
}

fn usage(e: &str) -> ! {
    errln!("error: {e}");
    errln!("{}", usage_text());
    exit(2);
}

/// `-h` or `--help` anywhere before a workload's `k=v` pairs: the usage on
/// stdout, exit status 0.
fn help_asked(args: &[String]) -> bool {
    args.iter()
        .take_while(|a| !a.contains('='))
        .any(|a| a == "-h" || a == "--help")
}

fn print_counters(c: &Counters) {
    outln!(
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
    outln!(
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
    outln!(
        "newidle balances {} (pulled {})  skipped by NI_RANDOM {}",
        c.newidle_balances,
        c.newidle_pulled,
        c.newidle_skipped
    );
    let rows: Vec<String> = (0..NR_ROWS)
        .filter(|&i| c.rows[i] > 0)
        .map(|i| format!("{} {}", row_name(i), c.rows[i]))
        .collect();
    outln!("wakeup decisions (direct wakeups): {}", rows.join(", "));
    let places: Vec<String> = (0..NR_PLACES)
        .filter(|&i| c.resched_at[i] != [0, 0])
        .map(|i| {
            format!(
                "{} {}+{}",
                place_name(i),
                c.resched_at[i][0],
                c.resched_at[i][1]
            )
        })
        .collect();
    outln!(
        "reschedules of a running task by place (lazy+immediate): {}  hrtick resched {}",
        places.join(", "),
        c.hrtick_resched
    );
    if c.vcpu_turns > 0 {
        outln!("vCPU turns {}", c.vcpu_turns);
    }

    if c.irq_user_preempts > 0 {
        outln!(
            "preemptions at an interrupt's return to user code only {}",
            c.irq_user_preempts
        );
    }
}

/// Where the wakeups' preemption requests led ([`sim::follow`]), and the
/// CPUs' busy and idle time with the switch and refill time the model
/// charged in it.
fn print_follow(r: &sim::RunResult) {
    let f = &r.follow;
    let (busy, idle) = r
        .cpu_times
        .iter()
        .fold((0, 0), |(b, i), &(cb, ci)| (b + cb, i + ci));
    let c = &r.ctr;
    outln!(
        "CPU time: busy {:.3} ms, idle {:.3} ms; in the busy time switches {:.3} ms ({:.0} ns per switch), refills {:.3} ms, charged to wakers {:.3} ms",
        busy as f64 / 1e6,
        idle as f64 / 1e6,
        c.switch_ns as f64 / 1e6,
        c.switch_ns as f64 / c.switches.max(1) as f64,
        c.cold_ns as f64 / 1e6,
        c.wake_cost_ns as f64 / 1e6
    );
    let placed: Vec<String> = (r.placement.iter().enumerate())
        .filter(|(_, &n)| n > 0)
        .map(|(i, n)| format!("{}={n}", sched::smp::placement_name(i)))
        .collect();
    if !placed.is_empty() {
        outln!("fair wakeups placed: {}", placed.join(" "));
    }
    if r.ranges_early > 0 {
        outln!(
            "timer slack: {} sleeps ended inside their range, by another timer interrupt of their CPU",
            r.ranges_early
        );
    }
    for (i, k) in f.kinds.iter().enumerate() {
        if k.requests == 0 {
            continue;
        }
        let n = k.requests as f64;
        let next: Vec<String> = (0..sim::follow::NEXTS)
            .map(|j| {
                format!(
                    "{} {} ({} remote)",
                    sim::follow::NEXT_NAMES[j],
                    k.next[j],
                    k.next_remote[j]
                )
            })
            .collect();
        let bins = |w: &sim::follow::Waits| {
            format!(
                "{:.1} us mean, {} / {} / {} / {} below 10 us / 100 us / 1 ms / longer",
                w.mean_us(),
                w.bins[0],
                w.bins[1],
                w.bins[2],
                w.bins[3]
            )
        };
        outln!(
            "preemption requests, {}: {} ({} remote), protected {}, ran {:.2} us since picked, vruntime {:.2} us past the average, {:.2} runnable on the CPU; next switch after {:.2} us: {}; preempted tasks' wait {} ({}); wakees' wait {} ({})",
            sim::follow::KIND_NAMES[i],
            k.requests,
            k.remote,
            k.protected,
            k.ran_ns as f64 / n / 1e3,
            k.past_avg_vns as f64 / n / 1e3,
            k.depth as f64 / n,
            k.to_switch_ns as f64 / (k.next.iter().sum::<u64>().max(1)) as f64 / 1e3,
            next.join(", "),
            k.preempted_waits.n,
            bins(&k.preempted_waits),
            k.wakee_waits.n,
            bins(&k.wakee_waits)
        );
    }
    let w = &f.all_preempted;
    if w.n > 0 {
        outln!(
            "every preemption's wait to run again: {} ({:.1} us mean, {} / {} / {} / {} below 10 us / 100 us / 1 ms / longer)",
            w.n,
            w.mean_us(),
            w.bins[0],
            w.bins[1],
            w.bins[2],
            w.bins[3]
        );
    }
}

fn cmd_run(args: &[String]) {
    let a = parse_run(args).unwrap_or_else(|e| usage(&e));
    let (m, c, w, seed) = (&a.machine, &a.config, &a.work, a.seed);
    let r = run_one_followed(m, c, w, seed, a.ms * 1_000_000, 0).unwrap_or_else(|e| usage(&e));
    outln!("{m}");
    let k = &m.costs;
    if k.vcpu_time_sharing || k.wake_ns > 0 || k.ipi_send_ns > 0 || k.scan_cpu_ns > 0 {
        outln!("mechanisms: {:?}", m.mech);
    }
    if m.mech.machine_noise {
        outln!("machine noise: {:?}", sim::machine::MACHINE_NOISE);
    }
    outln!("config {} seed {seed}: {:?}", c.name, w);
    outln!(
        "simulated {:.3} ms in {:.3} s wall ({:.2} M events/s)",
        r.sim_ns as f64 / 1e6,
        r.wall_s,
        r.ctr.events as f64 / r.wall_s / 1e6
    );
    for mt in &r.metrics {
        outln!("{:<24} {:>14.4}", mt.name, mt.value);
    }
    print_counters(&r.ctr);
    let t = &r.turns;
    if r.ctr.vcpu_turns > 0 {
        let [a, b, c, d] = t.away_bins;
        outln!(
            "busy vCPUs out of their turn over 20 us, the task running on: below 100 us {a}, below 1 ms {b}, below 4 ms {c}, longer {d} ({:.3} s in all); switched out as the turn came back {}",
            t.away_ns as f64 / 1e9,
            t.away_switched
        );
    }
    if t.ends.iter().sum::<u64>() > 0 {
        let part = |i: usize, name: &str| {
            let [a, b, c, d, e] = t.end_bins[i];
            format!(
                "{name} {} ({:.1} ms, mean {:.1} us; {a} / {b} / {c} / {d} / {e})",
                t.ends[i],
                t.end_ns[i] as f64 / 1e6,
                t.end_ns[i] as f64 / t.ends[i].max(1) as f64 / 1e3
            )
        };
        outln!(
            "turns ended by (count, time in them, mean; below 20 us / 100 us / 1 ms / 4 ms / longer): {}, {}, {}, {}",
            part(0, "deadline"),
            part(1, "kick"),
            part(2, "pause"),
            part(3, "halt")
        );
    }
    if t.pauses.iter().sum::<u64>() > 0 {
        let [rq_wake, rq_switch, wq, pipe, wakee] = t.pauses;
        outln!(
            "turns a pause ended (the lock's holder out of its turn): runqueue lock of a wakeup {rq_wake}, of a switch {rq_switch}, wait queue {wq}, pipe mutex {pipe}, a wakee's switch-out {wakee}"
        );
    }
    let w = &r.wake_runs;
    if w.n.iter().sum::<u64>() > 0 {
        let part = |i: usize| {
            let [a, b, c] = w.bands[i];
            format!(
                "{} ({:.1} us mean; {a} / {b} / {c} below 32 us / 1 ms / longer)",
                w.n[i],
                w.ns[i] as f64 / w.n[i].max(1) as f64 / 1e3
            )
        };
        outln!(
            "woken tasks ran, from the wakeup to the switch's end: on the waker's CPU {}, on another {}",
            part(0),
            part(1)
        );
    }
    if t.kicks + t.zero_budgets + t.kick_timer > 0 {
        let ms: Vec<String> = t
            .turn_ns_by_cpu
            .iter()
            .map(|ns| format!("{:.1}", *ns as f64 / 1e6))
            .collect();
        outln!(
            "QEMU turn order: kicks {}  zero budgets {}  kick timer {}  turn ms by vCPU {}",
            t.kicks,
            t.zero_budgets,
            t.kick_timer,
            ms.join(" ")
        );
    }
    if t.switch_kicks + t.switch_kicks_lost > 0 {
        outln!(
            "switches' timer writes {}, of which ended the turn inside the runqueue-lock window {} (lost, the turn over first: {})",
            t.switch_writes,
            t.switch_kicks,
            t.switch_kicks_lost
        );
    }
    if !r.idle_states.is_empty() {
        let st: Vec<String> = r
            .idle_states
            .iter()
            .map(|(name, n, ns)| format!("{name} {n} ({:.3} ms exit)", *ns as f64 / 1e6))
            .collect();
        outln!("idle state entries: {}", st.join(", "));
    }
    if r.ctr.wake_cost_ns > 0 {
        outln!(
            "charged to wakers: {:.3} ms (idle scan visited {} CPUs)",
            r.ctr.wake_cost_ns as f64 / 1e6,
            r.ctr.scanned_cpus
        );
    }
    print_follow(&r);
    let u = &r.unlock;
    if u.windows > 0 {
        let deferred: Vec<String> = (0..NR_PLACES)
            .filter(|&i| u.deferred_irqs[i] > 0)
            .map(|i| format!("{} {}", place_name(i), u.deferred_irqs[i]))
            .collect();
        outln!(
            "wakeups' irqs-off windows {}: interrupt preemptions deferred to the unlock: {}; switches at the unlock {}",
            u.windows,
            if deferred.is_empty() { "none".to_string() } else { deferred.join(", ") },
            u.unlock_preempts
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if help_asked(&args) {
        outln!("{}", usage_text());
        return;
    }
    match args.first().map(String::as_str) {
        Some("run") => cmd_run(&args[1..]),
        Some("study") => sim::study::cmd_study(&args[1..]),
        Some("bench") if args.len() == 1 => sim::study::cmd_bench(),
        Some("bench") => usage(&format!("bench takes no arguments, got '{}'", args[1])),
        Some(c) => usage(&format!("unknown command '{c}' (one of run, study, bench)")),
        None => usage("give a command: run, study or bench"),
    }
}
