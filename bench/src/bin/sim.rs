//! `sim`: the scheduler on virtual CPUs with a virtual clock, on the host.
//!
//! The same `sched` code the kernel runs (`sched::smp::Scheduler`, per-CPU
//! runqueues, placement, balancing), driven by a discrete-time loop instead of
//! interrupts: every CPU ticks at `--hz`, runs its current task for 10 µs
//! steps, and preempts as the chosen model says. Use it to see what a feature
//! flag or a tunable does to shares and wakeup latency before trying it in the
//! kernel:
//!
//! ```text
//! cargo run -p bench --release --bin sim -- --cpus 1 hog hog:5
//! cargo run -p bench --release --bin sim -- --feature NEXT_BUDDY sleeper:200:800 sleeper:200:800 hog
//! ```
//!
//! Task specs: `hog[:NICE]` (always runnable), `sleeper:RUN_US:SLEEP_US[:NICE]`
//! (runs RUN_US, then sleeps SLEEP_US, forever), `short:SLICE_US[:NICE]` (a
//! hog with a custom slice). Options: `--cpus N` (1..=8), `--hz HZ`,
//! `--ms DURATION`, `--preempt none|voluntary|full|lazy`, `--feature NAME` or
//! `NO_NAME` (repeatable), `--sysctl KEY=VALUE` (repeatable).
//!
//! Output per task: its CPU share, context switches, and for sleepers the
//! wakeup latency (wakeup to running) average, p99 and maximum.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sched::smp::{Platform, Scheduler};
use sched::{
    PreemptMode, Resched, SchedConfig, SchedTask, TaskId, TaskParams, TtwuRunnable, WakeFlags,
};

const STEP_NS: u64 = 10_000;

#[derive(Default)]
struct VirtualPlatform {
    now: AtomicU64,
}

impl Platform for VirtualPlatform {
    fn irq_save(&self) -> bool {
        false
    }
    fn irq_restore(&self, _: bool) {}
    fn send_resched_ipi(&self, _cpu: usize) {}
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Hog,
    Sleeper { run_ns: u64, sleep_ns: u64 },
}

struct Task {
    spec: String,
    kind: Kind,
    params: TaskParams,
    /// Runtime left in the current burst (sleepers).
    left_ns: u64,
    /// Asleep until this time (sleepers); `None` when runnable.
    wake_at: Option<u64>,
    /// Held by a runqueue (queued, running or delay-dequeued).
    held: bool,
    /// The state while it is off every runqueue.
    off: Option<SchedTask>,
    woke_at: Option<u64>,
    lat_ns: Vec<u64>,
    cpu: usize,
}

fn parse_task(spec: &str) -> Result<(Kind, TaskParams), String> {
    let f: Vec<&str> = spec.split(':').collect();
    let num = |s: &str| {
        s.parse::<i64>()
            .map_err(|_| format!("'{spec}': bad number '{s}'"))
    };
    let nice =
        |i: usize| -> Result<i32, String> { f.get(i).map_or(Ok(0), |s| num(s).map(|v| v as i32)) };
    let p = |nice: i32, slice_ns: u64| {
        let p = TaskParams {
            nice,
            slice_ns,
            ..Default::default()
        };
        p.validate()
            .map(|_| p)
            .map_err(|e| format!("'{spec}': {e}"))
    };
    match f[0] {
        "hog" if f.len() <= 2 => Ok((Kind::Hog, p(nice(1)?, 0)?)),
        "short" if (2..=3).contains(&f.len()) => Ok((Kind::Hog, p(nice(2)?, num(f[1])? as u64 * 1000)?)),
        "sleeper" if (3..=4).contains(&f.len()) => {
            let (run, sleep) = (num(f[1])?, num(f[2])?);
            if run <= 0 || sleep <= 0 {
                return Err(format!("'{spec}': RUN_US and SLEEP_US must be positive"));
            }
            Ok((Kind::Sleeper { run_ns: run as u64 * 1000, sleep_ns: sleep as u64 * 1000 }, p(nice(3)?, 0)?))
        }
        _ => Err(format!("unknown task spec '{spec}' (hog[:NICE], short:SLICE_US[:NICE], sleeper:RUN_US:SLEEP_US[:NICE])")),
    }
}

fn usage(e: &str) -> ! {
    eprintln!("error: {e}");
    eprintln!("usage: sim [--cpus N] [--hz HZ] [--ms MS] [--preempt MODE] [--feature NAME]... [--sysctl K=V]... TASK...");
    std::process::exit(2);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut cpus, mut hz, mut ms) = (1usize, 250u32, 2000u64);
    let mut feats = Vec::new();
    let mut sysctls = Vec::new();
    let mut preempt = None;
    let mut specs = Vec::new();
    while let Some(a) = args.next() {
        let mut val = |name: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        match a.as_str() {
            "--cpus" => {
                cpus = val("--cpus")
                    .parse()
                    .ok()
                    .filter(|n| (1..=8).contains(n))
                    .unwrap_or_else(|| usage("--cpus takes 1..=8"))
            }
            "--hz" => {
                hz = val("--hz")
                    .parse()
                    .ok()
                    .filter(|n| (10..=1000).contains(n))
                    .unwrap_or_else(|| usage("--hz takes 10..=1000"))
            }
            "--ms" => {
                ms = val("--ms")
                    .parse()
                    .ok()
                    .filter(|n| (1..=600_000).contains(n))
                    .unwrap_or_else(|| usage("--ms takes 1..=600000"))
            }
            "--preempt" => {
                preempt = Some(
                    PreemptMode::from_name(&val("--preempt"))
                        .unwrap_or_else(|| usage("--preempt takes none|voluntary|full|lazy")),
                )
            }
            "--feature" => feats.push(val("--feature")),
            "--sysctl" => sysctls.push(val("--sysctl")),
            s if s.starts_with("--") => usage(&format!("unknown option '{s}'")),
            _ => specs.push(a),
        }
    }
    if specs.is_empty() || specs.len() > 64 {
        usage("give 1 to 64 task specs");
    }
    let cfg = Arc::new(SchedConfig::new(cpus as u32, hz));
    for f in &feats {
        cfg.features
            .write(f)
            .unwrap_or_else(|e| usage(&format!("feature '{f}': {e}")));
    }
    for kv in &sysctls {
        let (k, v) = kv
            .split_once('=')
            .unwrap_or_else(|| usage(&format!("--sysctl '{kv}': expected KEY=VALUE")));
        cfg.sysctl_set(k, v)
            .unwrap_or_else(|e| usage(&format!("sysctl {k}: {e}")));
    }
    if let Some(m) = preempt {
        cfg.tunables.set_preempt_mode(m);
    }
    let s = Scheduler::new(VirtualPlatform::default(), cfg.clone(), cpus, specs.len());
    let mut tasks: Vec<Task> = specs
        .iter()
        .map(|spec| {
            let (kind, params) = parse_task(spec).unwrap_or_else(|e| usage(&e));
            let left_ns = match kind {
                Kind::Sleeper { run_ns, .. } => run_ns,
                Kind::Hog => 0,
            };
            Task {
                spec: spec.clone(),
                kind,
                params,
                left_ns,
                wake_at: None,
                held: true,
                off: None,
                woke_at: None,
                lat_ns: Vec::new(),
                cpu: 0,
            }
        })
        .collect();
    let set_now = |now: u64| s.platform.now.store(now, Ordering::Relaxed);
    let mut now = 1u64;
    set_now(now);
    for (i, t) in tasks.iter_mut().enumerate() {
        let (cpu, _) = s.wake_up_new_task(TaskId(i as u32), SchedTask::new(t.params), 0);
        t.cpu = cpu;
    }
    let tick_ns = cfg.tick_ns();
    let end = now + ms * 1_000_000;
    let mut next_tick = now + tick_ns;
    let mode = || cfg.tunables.preempt_mode();
    while now < end {
        now += STEP_NS;
        set_now(now);
        let tick = now >= next_tick;
        if tick {
            next_tick += tick_ns;
        }
        // Wake sleepers whose time has come (interrupt context: WF_IRQ).
        for (i, t) in tasks.iter_mut().enumerate() {
            if t.wake_at.is_none_or(|w| w > now) {
                continue;
            }
            t.wake_at = None;
            t.woke_at = Some(now);
            let id = TaskId(i as u32);
            let st = if t.held {
                let mut rq = s.cpu_rq(t.cpu);
                rq.update_rq_clock(now);
                match rq.ttwu_runnable(id, WakeFlags::IRQ) {
                    TtwuRunnable::Woken(_) => continue,
                    TtwuRunnable::Blocked(st) => st,
                    TtwuRunnable::NotHere => unreachable!("held task not on its runqueue"),
                }
            } else {
                t.off.take().expect("a sleeping task's state")
            };
            let (cpu, wf) = s.select_task_rq(&st, t.cpu, WakeFlags::IRQ);
            t.cpu = cpu;
            t.held = true;
            let mut rq = s.cpu_rq(cpu);
            rq.update_rq_clock(now);
            rq.try_to_wake_up(id, st, wf);
        }
        for cpu in 0..cpus {
            let mut rq = s.cpu_rq(cpu);
            rq.update_rq_clock(now);
            s.sched_ttwu_pending(&mut rq);
            // The running task uses this step.
            let mut blocks = false;
            if let Some(c) = rq.curr() {
                let t = &mut tasks[c.0 as usize];
                if let Kind::Sleeper { run_ns, sleep_ns } = t.kind {
                    t.left_ns = t.left_ns.saturating_sub(STEP_NS);
                    if t.left_ns == 0 {
                        t.left_ns = run_ns;
                        t.wake_at = Some(now + sleep_ns);
                        blocks = true;
                    }
                }
            }
            let resched = if tick {
                rq.task_tick()
            } else {
                rq.need_resched()
            };
            let preempt = match mode() {
                PreemptMode::Full | PreemptMode::Lazy => resched == Resched::Now,
                // No switch points in a spinning task: only blocking switches.
                PreemptMode::None | PreemptMode::Voluntary => false,
            };
            let idle = rq.curr().is_none();
            if blocks {
                let prev = rq.curr().expect("a blocking task runs");
                let sw = rq.schedule(true);
                let t = &mut tasks[prev.0 as usize];
                if let Some(st) = sw.prev_blocked {
                    t.off = Some(st);
                    t.held = false;
                }
            } else if preempt || idle {
                rq.pick_next_task();
            }
            if let Some(c) = rq.curr() {
                let t = &mut tasks[c.0 as usize];
                t.cpu = cpu;
                if let Some(w) = t.woke_at.take() {
                    t.lat_ns.push(now - w);
                }
            }
            drop(rq);
            if tick && (next_tick / tick_ns + cpu as u64).is_multiple_of(4) {
                s.load_balance(cpu, false);
            }
        }
    }
    // Report.
    let mut runtime = vec![0u64; tasks.len()];
    let mut switches = vec![0u64; tasks.len()];
    for (i, t) in tasks.iter().enumerate() {
        let st = if t.held {
            let mut rq = s.cpu_rq(t.cpu);
            rq.update_curr();
            rq.task(TaskId(i as u32)).copied()
        } else {
            t.off
        };
        if let Some(st) = st {
            runtime[i] = st.se.sum_exec_runtime;
            switches[i] = st.nr_switches;
        }
    }
    let total: u64 = runtime.iter().sum::<u64>().max(1);
    println!(
        "sim: {} CPU(s), HZ={}, {} ms, preempt={}, base slice {} ns",
        cpus,
        hz,
        ms,
        mode().name(),
        cfg.tunables.base_slice_ns()
    );
    println!("features: {}", cfg.features);
    println!(
        "{:<28} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "task", "runtime", "share", "switches", "lat avg", "lat p99", "lat max"
    );
    for (i, t) in tasks.iter_mut().enumerate() {
        t.lat_ns.sort_unstable();
        let n = t.lat_ns.len();
        let (avg, p99, max) = if n == 0 {
            ("-".to_string(), "-".to_string(), "-".to_string())
        } else {
            let avg = t.lat_ns.iter().sum::<u64>() / n as u64;
            let p99 = t.lat_ns[(n * 99 / 100).min(n - 1)];
            (
                format!("{}us", avg / 1000),
                format!("{}us", p99 / 1000),
                format!("{}us", t.lat_ns[n - 1] / 1000),
            )
        };
        println!(
            "{:<28} {:>7}ms {:>6.1}% {:>9} {:>9} {:>9} {:>9}",
            format!("{} {}", i, t.spec),
            runtime[i] / 1_000_000,
            100.0 * runtime[i] as f64 / total as f64,
            switches[i],
            avg,
            p99,
            max
        );
    }
}
