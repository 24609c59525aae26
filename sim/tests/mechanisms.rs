//! The switchable mechanisms of the `qemu:N` machine (`sim run --no-...`):
//! each one does what it says, is off when switched off, and keeps a run
//! deterministic and its CPU time conserved.

use sched::TaskParams;
use sim::engine::{Kernel, Metric, Next, Spawn, Workload};
use sim::machine::{
    qemu_costs, Machine, QEMU_IPI_IRQ_NS, QEMU_PIPE_READ_MUTEX_NS, QEMU_PIPE_WRITE_MUTEX_NS,
    QEMU_SLEEP_NS, QEMU_SOCK_SLEEP_NS, QEMU_TICK_IRQ_NS,
};
use sim::workloads::{Hackbench, HackbenchCfg};
use sim::{run_one, Config, RunResult, WorkSpec};

fn hb(sockets: bool) -> WorkSpec {
    WorkSpec::Hackbench(HackbenchCfg {
        groups: 2,
        loops: 20,
        sockets,
        threads: false,
        flips: 0,
    })
}

fn qemu(n: usize, off: &[&str]) -> Machine {
    let mut m = Machine::preset(&format!("qemu:{n}")).expect("preset");
    for f in off {
        m.mech.turn_off(f).expect("flag");
    }
    m
}

fn run(m: &Machine, w: &WorkSpec, seed: u64) -> RunResult {
    run_one(
        m,
        &Config::parse("NO_NEXT_BUDDY"),
        w,
        seed,
        60_000_000_000,
        0,
    )
    .expect("run")
}

fn time_s(r: &RunResult) -> f64 {
    r.metrics.iter().find(|m| m.name == "time_s").unwrap().value
}

fn fingerprint(r: &RunResult) -> String {
    format!("{:?} {:?} {} {:?}", r.metrics, r.ctr, r.sim_ns, r.runtimes)
}

#[test]
fn deterministic_and_conserved_with_every_mechanism() {
    for sockets in [false, true] {
        let m = qemu(4, &[]);
        let (a, b) = (run(&m, &hb(sockets), 5), run(&m, &hb(sockets), 5));
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&run(&m, &hb(sockets), 6)));
        assert_eq!(a.exited, 80, "every task finished");
        for &(busy, idle) in &a.cpu_times {
            assert_eq!(busy + idle, a.sim_ns);
        }
        let busy: u64 = a.cpu_times.iter().map(|c| c.0).sum();
        assert_eq!(busy, a.runtimes.iter().sum::<u64>());
    }
}

/// The waker pays `wake_ns` for each wakeup it enqueues and `ipi_send_ns`
/// per IPI (each ±10% jitter), and nothing with `--no-wake-cost` (the scan's
/// cost, charged the same way, is off here). Under the even vCPU share: the
/// lower bound counts an IPI per queued wakeup, and in vCPU turns an IPI
/// that waits for its vCPU's turn takes the next wakeups onto that CPU
/// without another.
#[test]
fn wakeup_costs_are_charged_to_the_waker() {
    let m = qemu(4, &["--no-scan-cost", "--no-vcpu-turns"]);
    let r = run(&m, &hb(false), 1);
    let c = &m.costs;
    let direct = r.ctr.wakeups - r.ctr.queued_wakeups;
    let lo = 0.9 * (direct * c.wake_ns + r.ctr.queued_wakeups * c.ipi_send_ns) as f64;
    let hi = 1.1 * (direct * c.wake_ns + r.ctr.ipis * c.ipi_send_ns) as f64;
    let got = r.ctr.wake_cost_ns as f64;
    assert!(
        r.ctr.wakeups > 100 && got >= lo && got <= hi,
        "{got} ns for {} wakeups ({} queued, {} IPIs): expected {lo}..{hi}",
        r.ctr.wakeups,
        r.ctr.queued_wakeups,
        r.ctr.ipis
    );
    let off = run(
        &qemu(4, &["--no-scan-cost", "--no-wake-cost", "--no-vcpu-turns"]),
        &hb(false),
        1,
    );
    assert_eq!(off.ctr.wake_cost_ns, 0);
    assert!(time_s(&off) < time_s(&r), "the waker's costs take time");
}

/// One task pinned to each CPU, each `work_ns[cpu]` of CPU work, then exit;
/// records when each exits.
struct Pinned {
    work_ns: Vec<u64>,
    started: Vec<bool>,
    exit_ns: Vec<u64>,
}

impl Workload for Pinned {
    fn init(&mut self, k: &mut Kernel) {
        for c in 0..self.work_ns.len() {
            k.spawn(Spawn {
                pin: Some(c as u32),
                ..Default::default()
            });
        }
    }
    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let t = tid as usize;
        if !self.started[t] {
            self.started[t] = true;
            return Next::Run(self.work_ns[t]);
        }
        self.exit_ns[t] = k.now;
        Next::Exit
    }
    fn metrics(&mut self, _: &Kernel) -> Vec<Metric> {
        Vec::new()
    }
}

fn pinned_exits(m: Machine, work_ns: &[u64]) -> Vec<u64> {
    let n = m.topo.nr_cpus();
    let cfg = Config::parse("NO_NEXT_BUDDY").build(n, m.hz).unwrap();
    let mut k = Kernel::new(m, cfg, n, 1);
    let mut wl = Pinned {
        work_ns: work_ns.to_vec(),
        started: vec![false; n],
        exit_ns: vec![0; n],
    };
    k.run(&mut wl, 1_000_000_000);
    wl.exit_ns
}

/// `qemu:n` without switch costs or jitter, so that times are exact.
fn exact_qemu(n: usize, off: &[&str]) -> Machine {
    let mut m = qemu(n, off);
    m.costs.switch_thread_ns = 0;
    m.costs.switch_process_ns = 0;
    m.sleep_ns = 0;
    m.tick_irq_ns = 0;
    m.hrtick_irq_ns = 0;
    m.ipi_irq_ns = 0;
    m.sock_sleep_ns = 0;
    m.costs.jitter_pct = 0;
    m
}

/// The even share (`--no-vcpu-turns`): k busy vCPUs share one instruction
/// rate: 1 ms of work on each of 4 vCPUs takes 4 ms; a task with 2 ms
/// finishes its second ms alone at full rate (5 ms); with sharing off each
/// takes its own time.
#[test]
fn vcpus_share_the_instruction_rate() {
    let m = exact_qemu(4, &["--no-vcpu-turns"]);
    let ms = 1_000_000;
    assert_eq!(pinned_exits(m.clone(), &[ms; 4]), vec![4 * ms; 4]);
    assert_eq!(
        pinned_exits(m.clone(), &[2 * ms, ms, ms, ms]),
        vec![5 * ms, 4 * ms, 4 * ms, 4 * ms]
    );
    let mut own = m.clone();
    own.mech.turn_off("--no-vcpu-share").unwrap();
    assert_eq!(
        pinned_exits(own, &[2 * ms, ms, ms, ms]),
        vec![2 * ms, ms, ms, ms]
    );
    let a = run(&qemu(1, &[]), &hb(true), 2);
    let b = run(&qemu(1, &["--no-vcpu-share"]), &hb(true), 2);
    assert_eq!(
        fingerprint(&a),
        fingerprint(&b),
        "one vCPU shares with nobody"
    );
}

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// vCPU turns: a lone busy vCPU runs at the full rate, also past the tick
/// (a deadline that ends its turn and gives it the next one), and also when
/// it is not CPU 0 (idle vCPUs give up their turn at once: CPUs 0-2 run a
/// task of no work and go idle).
#[test]
fn lone_busy_vcpu_runs_at_full_rate_in_turns() {
    assert_eq!(pinned_exits(exact_qemu(4, &[]), &[5 * MS])[0], 5 * MS);
    assert_eq!(
        pinned_exits(exact_qemu(4, &[]), &[0, 0, 0, 5 * MS]),
        vec![0, 0, 0, 5 * MS]
    );
}

/// The tick's interrupt (`Machine::tick_irq_ns`): each periodic tick of a
/// busy CPU costs its task the interrupt's time: 5 ms of work alone (one
/// tick, at 4 ms) end 13.024 us late, 10 ms (ticks at 4 and 8 ms) twice
/// that; the idle CPUs of the second case take no tick and delay nobody.
/// `--no-irq-cost` (or the cost 0) charges nothing.
#[test]
fn busy_ticks_pay_the_interrupt_cost() {
    let mut m = exact_qemu(4, &[]);
    m.tick_irq_ns = QEMU_TICK_IRQ_NS;
    let irq = QEMU_TICK_IRQ_NS;
    assert_eq!(pinned_exits(m.clone(), &[5 * MS])[0], 5 * MS + irq);
    assert_eq!(pinned_exits(m.clone(), &[10 * MS])[0], 10 * MS + 2 * irq);
    assert_eq!(
        pinned_exits(m.clone(), &[0, 0, 0, 5 * MS]),
        vec![0, 0, 0, 5 * MS + irq]
    );
    let mut off = m.clone();
    off.mech.turn_off("--no-irq-cost").unwrap();
    assert_eq!(pinned_exits(off, &[10 * MS])[0], 10 * MS);
    // Whose runtime holds the tick moves no time.
    let mut whole = m.clone();
    whole.mech.turn_off("--no-irq-split").unwrap();
    assert_eq!(pinned_exits(whole, &[10 * MS])[0], 10 * MS + 2 * irq);
}

/// A hackbench over sockets pays a socket's sleep (`Machine::sock_sleep_ns`)
/// at every switch away from a sleeper, over pipes a pipe's
/// (`Machine::sleep_ns`); `--no-sock-sleep` gives sockets the pipe's. With
/// the switches themselves free and no jitter, the switches' charged time
/// is a whole number of sleeps of the figure paid.
#[test]
fn sockets_pay_the_socket_sleep() {
    let mut m = exact_qemu(2, &[]);
    m.sleep_ns = QEMU_SLEEP_NS;
    m.sock_sleep_ns = QEMU_SOCK_SLEEP_NS;
    let mut pipe_figure = m.clone();
    pipe_figure.mech.turn_off("--no-sock-sleep").unwrap();
    for (mm, sockets, paid) in [
        (&m, true, QEMU_SOCK_SLEEP_NS),
        (&m, false, QEMU_SLEEP_NS),
        (&pipe_figure, true, QEMU_SLEEP_NS),
    ] {
        let ns = run(mm, &hb(sockets), 1).ctr.switch_ns;
        assert!(ns > 0, "sockets {sockets}: no sleep charged");
        assert_eq!(
            ns % paid,
            0,
            "sockets {sockets}: {ns} ns not sleeps of {paid}"
        );
    }
}

/// vCPU turns: busy vCPUs take turns in CPU order, each to the next timer
/// deadline (the 4 ms tick at HZ=250): with 10 ms of work on each of two
/// vCPUs, CPU 0 runs 0-4, 8-12, 16-18 ms and CPU 1 4-8, 12-16, 18-20 ms;
/// with three, CPU 0 ends at 26 (its third turn from 24), CPU 1 at 28, CPU 2
/// at 30. The even share ends all of them together, at 20 and 30 ms.
#[test]
fn busy_vcpus_alternate_turns() {
    assert_eq!(
        pinned_exits(exact_qemu(4, &[]), &[10 * MS, 10 * MS])[..2],
        [18 * MS, 20 * MS]
    );
    assert_eq!(
        pinned_exits(exact_qemu(4, &[]), &[10 * MS; 3])[..3],
        [26 * MS, 28 * MS, 30 * MS]
    );
    // (The even share divides elapsed ns by 3: a few ns of rounding.)
    for t in &pinned_exits(exact_qemu(4, &["--no-vcpu-turns"]), &[10 * MS; 3])[..3] {
        assert!((30 * MS..30 * MS + 10).contains(t), "{t} ns");
    }
}

/// Task 0 on CPU 0 sleeps 10 ms (every vCPU idle: task 1 on CPU 1 has
/// blocked), runs 1 ms, wakes task 1 and runs 20 ms more; task 1 records
/// when it runs again.
struct WakeOutOfTurn {
    step: [u32; 2],
    woken_run_ns: u64,
}

impl Workload for WakeOutOfTurn {
    fn init(&mut self, k: &mut Kernel) {
        for c in 0..2 {
            k.spawn(Spawn {
                pin: Some(c),
                ..Default::default()
            });
        }
    }
    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let s = self.step[tid as usize];
        self.step[tid as usize] += 1;
        match (tid, s) {
            (0, 0) => Next::Sleep(10 * MS),
            (0, 1) => Next::Run(MS),
            (0, 2) => {
                assert!(k.wake(1, false), "task 1 sleeps");
                Next::Run(20 * MS)
            }
            (1, 0) => Next::Block,
            (1, 1) => {
                self.woken_run_ns = k.now;
                Next::Exit
            }
            _ => Next::Exit,
        }
    }
    fn metrics(&mut self, _: &Kernel) -> Vec<Metric> {
        Vec::new()
    }
}

fn woken_run_ns(m: Machine) -> u64 {
    let cfg = Config::parse("NO_NEXT_BUDDY").build(4, m.hz).unwrap();
    let mut k = Kernel::new(m, cfg, 2, 1);
    let mut wl = WakeOutOfTurn {
        step: [0; 2],
        woken_run_ns: 0,
    };
    k.run(&mut wl, 100 * MS);
    wl.woken_run_ns
}

/// vCPU turns: the wakeup at 11 ms sends CPU 1 an IPI (14.5 µs); CPU 0 has
/// the turn until its tick's deadline at 12 ms, and CPU 1 takes the IPI
/// and runs task 1 only then. In the even share (CPU 1 idle: CPU 0 runs at
/// the full rate) and without sharing, task 1 runs at 11 ms + the IPI.
#[test]
fn wakeup_ipi_to_an_out_of_turn_vcpu_waits_for_its_turn() {
    let ipi = exact_qemu(4, &[]).costs.ipi_ns;
    assert_eq!(woken_run_ns(exact_qemu(4, &[])), 12 * MS);
    for off in ["--no-vcpu-turns", "--no-vcpu-share"] {
        let t = woken_run_ns(exact_qemu(4, &[off]));
        assert!(t >= 11 * MS + ipi && t < 11 * MS + 2 * ipi, "{off}: {t} ns");
    }
}

/// The idle scan is charged per CPU visited (`scan_cpu_ns` ±10% jitter).
#[test]
fn idle_scan_is_charged_by_cpus_visited() {
    let mut m = qemu(4, &["--no-wake-cost"]);
    let c = m.costs.scan_cpu_ns as f64;
    let r = run(&m, &hb(false), 3);
    assert!(r.ctr.scanned_cpus > 100, "{}", r.ctr.scanned_cpus);
    let (lo, hi) = (0.9 * c, 1.1 * c);
    let per = r.ctr.wake_cost_ns as f64 / r.ctr.scanned_cpus as f64;
    assert!((lo..=hi).contains(&per), "{per} ns per CPU visited");
    m.mech.turn_off("--no-scan-cost").unwrap();
    assert_eq!(run(&m, &hb(false), 3).ctr.wake_cost_ns, 0);
}

fn metric(r: &RunResult, name: &str) -> Option<f64> {
    r.metrics.iter().find(|m| m.name == name).map(|m| m.value)
}

/// The pipe mutex: waiters spin while the owner runs and sleep while it is
/// off its CPU (a preempted owner keeps the mutex: a holder never blocks,
/// so every sleep on the mutex is behind a preempted owner); every task
/// still finishes. Off with `--no-contention`, and never on sockets.
#[test]
fn pipe_mutex_contention() {
    let r = run(&qemu(4, &[]), &hb(false), 4);
    let spins = metric(&r, "lock_spins").expect("lock counters");
    let sleeps = metric(&r, "lock_sleeps").expect("lock counters");
    assert!(spins > 0.0 && sleeps > 0.0, "spins {spins} sleeps {sleeps}");
    assert_eq!(r.exited, 80);
    let off = run(&qemu(4, &["--no-contention"]), &hb(false), 4);
    assert!(metric(&off, "lock_spins").is_none());
    assert!(
        time_s(&off) < time_s(&r),
        "contention takes time: {} against {}",
        time_s(&off),
        time_s(&r)
    );
    assert!(metric(&run(&qemu(4, &[]), &hb(true), 4), "lock_spins").is_none());
}

/// What the hog's 300 µs bursts are.
#[derive(Clone, Copy)]
enum HogBurst {
    /// Kernel code that goes on (`Next::RunKernel`).
    Kernel,
    /// Start with a return to user space, then unmarked code (`Next::Run`).
    Syscall,
    /// Start with a return to user space, then user code (`Next::RunUser`).
    User,
}

/// A hog whose bursts are `hog`, and a sleeper woken by a timer every 1 ms
/// (its wakeup latency recorded).
struct HogAndSleeper {
    hog: HogBurst,
}

impl Workload for HogAndSleeper {
    fn init(&mut self, k: &mut Kernel) {
        k.spawn(Spawn::default());
        k.spawn(Spawn {
            lat_class: Some(0),
            ..Default::default()
        });
    }
    fn step(&mut self, _: &mut Kernel, tid: u32) -> Next {
        match (tid, self.hog) {
            (0, HogBurst::Kernel) => Next::RunKernel(300_000),
            (0, HogBurst::Syscall) => Next::Run(300_000),
            (0, HogBurst::User) => Next::RunUser(300_000),
            _ => Next::Sleep(1_000_000),
        }
    }
    fn metrics(&mut self, _: &Kernel) -> Vec<Metric> {
        Vec::new()
    }
}

/// The sleeper's worst wakeup latency, and the preemptions made at an
/// interrupt's return to user code that kernel mode would not have made.
fn sleeper_run(preempt: &str, hog: HogBurst) -> (u64, u64) {
    let m = Machine::preset("flat:1").unwrap();
    let cfg = Config::parse(preempt).build(1, m.hz).unwrap();
    let mut k = Kernel::new(m, cfg, 2, 1);
    k.run(&mut HogAndSleeper { hog }, 50_000_000);
    assert!(k.lat[0].len() >= 10, "{} wakeups", k.lat[0].len());
    (*k.lat[0].iter().max().unwrap(), k.ctr.irq_user_preempts)
}

fn sleeper_max_latency_ns(preempt: &str, kernel: bool) -> u64 {
    let hog = if kernel {
        HogBurst::Kernel
    } else {
        HogBurst::Syscall
    };
    sleeper_run(preempt, hog).0
}

/// Under lazy, a wakeup's (lazy) preemption request is taken when the
/// running task returns to user space (within one 300 µs burst), not when
/// a burst ends inside the kernel (`Next::RunKernel`): there it waits for
/// the tick (4 ms at HZ=250), or with HRTICK (the default) for the end of
/// the hog's slice (0.7 ms at 1 CPU), whose timer asks for an immediate
/// reschedule, which its interrupt's exit to kernel mode takes under lazy.
/// Under full, the request is immediate (a switch, ~1 µs) either way.
#[test]
fn kernel_bursts_are_not_returns_to_user_space() {
    let user = sleeper_max_latency_ns("preempt=lazy", false);
    let kernel = sleeper_max_latency_ns("preempt=lazy+NO_HRTICK", true);
    assert!(user <= 305_000, "lazy, user-space returns: {user} ns");
    assert!(kernel > 1_000_000, "lazy, kernel bursts: {kernel} ns");
    let hrtick = sleeper_max_latency_ns("preempt=lazy", true);
    assert!(
        (305_000..=760_000).contains(&hrtick),
        "lazy, kernel bursts, HRTICK: {hrtick} ns"
    );
    let full = sleeper_max_latency_ns("preempt=full", true);
    assert!(full <= 5_000, "full, kernel bursts: {full} ns");
}

/// The interrupt-return-to-user preemption point (the kernel's
/// `classes_lazy_request_honoured_at_irq_return_to_user`): the sleeper's
/// timer interrupt lands while the hog runs its 300 µs burst. Under lazy
/// (HRTICK off, so only the tick would otherwise take the request), the
/// wakeup's lazy request is taken at that interrupt's return when the hog
/// is in user code (`Next::RunUser`): the latency is the switch alone,
/// at most the model's switch cost plus its jitter (flat:1: one address
/// space, `switch_thread_ns` +- `jitter_pct`). In an unmarked burst
/// (`Next::Run`, kernel mode for the interrupt) the same request waits for
/// the burst's end: up to 300 µs, past that bound. Under none the request
/// is immediate, and still only a return to user space takes it.
#[test]
fn lazy_request_taken_at_interrupt_return_to_user_code() {
    let c = Machine::preset("flat:1").unwrap().costs;
    let switch_max_ns = c.switch_thread_ns * (100 + c.jitter_pct as u64) / 100;
    for preempt in ["preempt=lazy+NO_HRTICK", "preempt=none+NO_HRTICK"] {
        let (user, user_irq) = sleeper_run(preempt, HogBurst::User);
        assert!(
            user <= switch_max_ns,
            "{preempt}, hog in user code: {user} ns (want <= {switch_max_ns}: the switch alone)"
        );
        assert!(
            user_irq >= 10,
            "{preempt}: {user_irq} preemptions at a return to user code"
        );
        let (syscall, syscall_irq) = sleeper_run(preempt, HogBurst::Syscall);
        // Under none the wakeup's request is immediate, so the switch at
        // the burst's end also skips its clock update (Linux's
        // `rq_clock_skip_update`): the sleeper is charged the rest of the
        // burst from its wakeup, becomes ineligible, and a later wakeup
        // waits up to a tick more. A lazy request skips nothing.
        let bound_ns = if preempt.starts_with("preempt=none") {
            1_000_000_000 / Machine::preset("flat:1").unwrap().hz as u64 + 300_000 + switch_max_ns
        } else {
            300_000 + switch_max_ns
        };
        assert!(
            syscall > switch_max_ns && syscall <= bound_ns,
            "{preempt}, hog in unmarked code: {syscall} ns (want: at the burst's end, <= {bound_ns})"
        );
        assert_eq!(syscall_irq, 0, "{preempt}: no burst is user code");
    }
    // Under full the request is immediate and kernel mode takes it too.
    let (full, full_irq) = sleeper_run("preempt=full+NO_HRTICK", HogBurst::Syscall);
    assert!(full <= switch_max_ns, "full, unmarked: {full} ns");
    assert_eq!(full_irq, 0);
}

fn run_cfg(m: &Machine, cfg: &str, w: &WorkSpec, seed: u64) -> RunResult {
    run_one(m, &Config::parse(cfg), w, seed, 60_000_000_000, 0).expect("run")
}

/// A pipe syscall returns to user space between two syscalls, before the
/// next `mutex_lock`, so a lazy request (a wakeup's, under lazy) is taken
/// with no mutex held: lazy then leaves sleeps on the pipe mutex (each
/// behind a switched-out owner) about where full has them (measured
/// x0.83-1.37 over seeds 1-2, NEXT_BUDDY x0.83-0.89; bound x1.5; before
/// a sleep paid its cost, `Machine::sleep_ns`, x1.08-1.15 and x0.90-0.98
/// under a bound of x1.3). With `--no-pipe-user-return` (the return to
/// user after the next `mutex_lock`, the earlier model) the lazy request
/// switches the owner out holding the mutex: x6.3-7.7, NEXT_BUDDY
/// x4.7-7.7 (x2.9-3.0 before the sleep's cost; bound x2). Under full, where every
/// request is immediate and taken at either point, the two models give
/// the same run (only the count of where the reschedules were made moves
/// from the kernel point to the return to user) when both take a
/// preemption point after every `mutex_lock` (`--no-mutex-fast-path`;
/// the earlier model has no fast path).
#[test]
fn pipe_lazy_request_taken_before_the_mutex() {
    for seed in [1, 2] {
        let (now, old) = (qemu(4, &[]), qemu(4, &["--no-pipe-user-return"]));
        let no_fast = qemu(4, &["--no-mutex-fast-path"]);
        let full = run_cfg(&no_fast, "NO_NEXT_BUDDY", &hb(false), seed);
        let mut full_old = run_cfg(&old, "NO_NEXT_BUDDY", &hb(false), seed);
        full_old.ctr.resched_at = full.ctr.resched_at;
        assert_eq!(fingerprint(&full), fingerprint(&full_old));
        let sleeps = |r: &RunResult| metric(r, "lock_sleeps").expect("lock counters");
        let base = sleeps(&full);
        assert!(base > 0.0);
        for cfg in ["preempt=lazy", "NEXT_BUDDY+preempt=lazy"] {
            let lazy = sleeps(&run_cfg(&now, cfg, &hb(false), seed));
            assert!(
                lazy <= 1.5 * base,
                "seed {seed} {cfg}: {lazy} sleeps on the mutex against {base} under full"
            );
            let before = sleeps(&run_cfg(&old, cfg, &hb(false), seed));
            assert!(
                before >= 2.0 * base,
                "seed {seed} {cfg}, earlier model: {before} against {base}"
            );
        }
    }
}

/// Task 0 (CPU 0) sleeps 1 ms and wakes task 1, which asks for a 100 µs
/// slice and so preempts task 2, a 10 ms hog, on CPU 1: a reschedule IPI
/// taken by a busy CPU. Records when the hog exits.
struct WakeBusy {
    step: [u32; 3],
    hog_exit_ns: u64,
}

impl Workload for WakeBusy {
    fn init(&mut self, k: &mut Kernel) {
        k.spawn(Spawn {
            pin: Some(0),
            ..Default::default()
        });
        k.spawn(Spawn {
            pin: Some(1),
            params: TaskParams {
                slice_ns: 100 * US,
                ..Default::default()
            },
            ..Default::default()
        });
        k.spawn(Spawn {
            pin: Some(1),
            ..Default::default()
        });
    }
    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let s = self.step[tid as usize];
        self.step[tid as usize] += 1;
        match (tid, s) {
            (0, 0) => Next::Sleep(MS),
            (0, 1) => {
                assert!(k.wake(1, false), "task 1 sleeps");
                Next::Exit
            }
            (1, 0) => Next::Block,
            (1, 1) => Next::Run(100 * US),
            (2, 0) => Next::Run(10 * MS),
            (2, 1) => {
                self.hog_exit_ns = k.now;
                Next::Exit
            }
            _ => Next::Exit,
        }
    }
    fn metrics(&mut self, _: &Kernel) -> Vec<Metric> {
        Vec::new()
    }
}

fn hog_exit_ns(m: Machine) -> (u64, u64) {
    let cfg = Config::parse("NO_NEXT_BUDDY").build(4, m.hz).unwrap();
    let mut k = Kernel::new(m, cfg, 3, 1);
    let mut wl = WakeBusy {
        step: [0; 3],
        hog_exit_ns: 0,
    };
    k.run(&mut wl, 100 * MS);
    (wl.hog_exit_ns, k.ctr.ipis)
}

/// A reschedule IPI taken by a busy CPU costs it `Machine::ipi_irq_ns`:
/// the hog it interrupted ends that much later; `--no-ipi-cost` charges
/// nothing, and `--no-irq-split` (whose runtime holds it) moves no time.
#[test]
fn busy_receivers_pay_the_ipi() {
    let mut m = exact_qemu(4, &["--no-vcpu-share"]);
    m.ipi_irq_ns = QEMU_IPI_IRQ_NS;
    let (on, ipis) = hog_exit_ns(m.clone());
    assert_eq!(ipis, 1, "one IPI");
    let mut off = m.clone();
    off.mech.turn_off("--no-ipi-cost").unwrap();
    let (base, _) = hog_exit_ns(off);
    assert!(base >= 10 * MS + 100 * US, "{base} ns");
    assert_eq!(on, base + QEMU_IPI_IRQ_NS);
    let mut whole = m.clone();
    whole.mech.turn_off("--no-irq-split").unwrap();
    assert_eq!(hog_exit_ns(whole).0, on);
}

/// [`pipes_driven`] on `m` and on `m` with the mechanism `flag`
/// turned off (the model before it), seed 1.
fn now_and_before(
    m: &Machine,
    flag: &str,
    cfg: &str,
    groups: usize,
    loops: usize,
) -> (Hackbench, Hackbench) {
    let mut old = m.clone();
    old.mech.turn_off(flag).unwrap();
    (
        pipes_driven(m, cfg, groups, loops, 1),
        pipes_driven(&old, cfg, groups, loops, 1),
    )
}

/// A hackbench over pipes on `m` under `cfg`, `loops` messages per sender
/// and receiver pair, driven here so that the workload's own counters can
/// be read after the run.
fn pipes_driven(m: &Machine, cfg: &str, groups: usize, loops: usize, seed: u64) -> Hackbench {
    pipes_driven_kernel(m, cfg, groups, loops, seed).1
}

/// [`pipes_driven`], with the kernel after the run.
fn pipes_driven_kernel(
    m: &Machine,
    cfg: &str,
    groups: usize,
    loops: usize,
    seed: u64,
) -> (Kernel, Hackbench) {
    let c = Config::parse(cfg);
    let hc = HackbenchCfg {
        groups,
        loops,
        sockets: false,
        threads: false,
        flips: 0,
    };
    let mut k = Kernel::with_boot(
        m.clone(),
        c.build(m.topo.nr_cpus(), m.hz).expect("config"),
        Hackbench::nr_tasks(&hc),
        seed,
        c.boot(),
    );
    let mut wl = Hackbench::new(hc);
    k.run(&mut wl, 60_000_000_000);
    assert_eq!(
        k.nr_exited(),
        Hackbench::nr_tasks(&hc),
        "every task finished"
    );
    (k, wl)
}

/// NEXT_BUDDY with the ineligible-waker rule, as the study's configs name it.
const INELIGIBLE_RULE: &str = "NEXT_BUDDY+NEXT_BUDDY_INELIGIBLE_RESCHED";

/// `graviton3` with the pipe mutex and the split of the pipe-mutex
/// experiment (105 ns of a pipe syscall outside the mutex,
/// docs/results/study.md).
fn graviton3_pipe_mutex() -> Machine {
    let mut g3 = Machine::preset("graviton3").expect("preset");
    g3.costs.syscall_ns = 105;
    g3.mech.contention = true;
    g3
}

/// `Mechanisms::mutex_handoff` (the default; `--no-mutex-handoff` the
/// model before): the pipe mutex is handed over as Linux's
/// `kernel/locking/mutex.c` does. An unlock wakes the first sleeper on the
/// wait list, which stays first until it holds the mutex, so no unlock
/// wakes another meanwhile: at most one task of a pipe is woken and not
/// yet holding or asleep again. If the mutex was taken before the woken
/// one ran, it sets `MUTEX_FLAG_HANDOFF` and the owner's next unlock
/// gives it the mutex (counted). In the model before, each unlock took
/// the first sleeper off the list and woke it, so while one woken sleeper
/// waited for its CPU a spinner's or a newcomer's unlocks woke the next
/// ones: 12-16 at once here (measured). On `qemu:4` (its measured split of
/// a pipe syscall) and on `graviton3` with the split of the pipe-mutex
/// experiment (105 ns outside the mutex, docs/results/study.md), where
/// NO_NEXT_BUDDY at 4 groups never sleeps on the mutex. The rule's
/// `qemu:4` case holds the mutex for the whole body
/// (`--no-pipe-mutex-split`) and takes a preemption point after every
/// `mutex_lock` (`--no-mutex-fast-path`): with the measured hold its
/// seed-1 run hands the mutex over 0 times in 170 sleeps (hand-overs 0-2
/// a run over seeds 1-3), and with the long hold and the fast path 0 in
/// 302, which tests nothing.
#[test]
fn pipe_mutex_handed_to_its_woken_sleeper() {
    for (m, cfg, groups) in [
        (qemu(4, &[]), "NO_NEXT_BUDDY", 2),
        (
            qemu(4, &["--no-pipe-mutex-split", "--no-mutex-fast-path"]),
            INELIGIBLE_RULE,
            2,
        ),
        (graviton3_pipe_mutex(), INELIGIBLE_RULE, 4),
    ] {
        let (now, before) = now_and_before(&m, "--no-mutex-handoff", cfg, groups, 20);
        let name = &m.name;
        assert!(
            now.lock_sleeps > 0 && now.lock_handoffs > 0 && now.lock_woken_max == 1,
            "{name} {cfg}: {} sleeps, {} hand-overs, {} woken at once",
            now.lock_sleeps,
            now.lock_handoffs,
            now.lock_woken_max
        );
        assert!(
            before.lock_woken_max > 1 && before.lock_handoffs == 0,
            "{name} {cfg}, the model before: {} woken at once",
            before.lock_woken_max
        );
    }
}

/// `Mechanisms::mutex_spin_resched` (the default;
/// `--no-mutex-spin-resched` the model before): a pipe mutex spinner
/// stops at an immediate reschedule request as Linux's
/// `mutex_optimistic_spin` does (`need_resched()` in
/// `mutex_can_spin_on_owner` and `mutex_spin_on_owner`; it spins with
/// preemption off), and after the `schedule()` tries once and sleeps on
/// the wait list instead of spinning again. In the model the request
/// comes in a poll (a wakeup's IPI preempts the spinner at the
/// interrupt's exit): spins stopped so are counted, and no task polls
/// again after being switched out. The model before polled again after a
/// switch-out, a few times a run: summed over seeds 1-4 (a single seed
/// need not: seed 1 of the rule's configuration had 2 before
/// `Mechanisms::wq_spin_hold`, none after).
#[test]
fn pipe_mutex_spinner_stops_at_resched() {
    let m = qemu(4, &[]);
    let mut old = m.clone();
    old.mech.turn_off("--no-mutex-spin-resched").unwrap();
    for cfg in ["NO_NEXT_BUDDY", INELIGIBLE_RULE] {
        // (stops, polls after a switch-out): now, and the model before.
        let mut got = [(0, 0), (0, 0)];
        for seed in 1..=4 {
            let now = pipes_driven(&m, cfg, 2, 20, seed);
            let before = pipes_driven(&old, cfg, 2, 20, seed);
            assert!(now.lock_spins > 0, "{cfg} seed {seed}: no poll");
            assert_eq!(now.lock_respins, 0, "{cfg} seed {seed}");
            assert_eq!(before.lock_spin_stops, 0, "{cfg} seed {seed}");
            got[0].0 += now.lock_spin_stops;
            got[0].1 += now.lock_respins;
            got[1].0 += before.lock_spin_stops;
            got[1].1 += before.lock_respins;
        }
        eprintln!("{cfg}: {got:?}");
        assert!(
            got[0].0 > 0 && got[1].1 > 0,
            "{cfg}: (stops, polls after a switch-out) now and before, seeds 1-4: {got:?}"
        );
    }
}

/// `Mechanisms::pipe_wake_next_writer` (the default;
/// `--no-pipe-wake-next-writer` the model before): as `anon_pipe_write`,
/// a writer wakes the next sleeping writer only if it slept for room in
/// that write itself (`wake_next_writer`). On `graviton3` with the split of
/// the pipe-mutex experiment (docs/results/study.md), whose pipes fill at 4
/// groups of 100 loops (on `qemu:N` they do not in these sizes); the model
/// before woke writers after writes that had not slept.
#[test]
fn pipe_writer_wakes_the_next_only_after_it_slept() {
    let (now, before) = now_and_before(
        &graviton3_pipe_mutex(),
        "--no-pipe-wake-next-writer",
        "NO_NEXT_BUDDY",
        4,
        100,
    );
    assert!(
        now.pipe_full_sleeps > 0 && now.next_writer_wakes_unslept == 0,
        "{} sleeps on a full pipe, {} wakes by writers that did not sleep",
        now.pipe_full_sleeps,
        now.next_writer_wakes_unslept
    );
    assert!(
        before.pipe_full_sleeps > 0 && before.next_writer_wakes_unslept > 0,
        "the model before: {} sleeps on a full pipe, {} wakes by writers that did not sleep",
        before.pipe_full_sleeps,
        before.next_writer_wakes_unslept
    );
}

/// `Mechanisms::pipe_pages` (the default; `--no-pipe-pages` the model
/// before): a pipe holds 16 pages of 40 messages as Linux 7.2's
/// `fs/pipe.c` fills them, full when all 16 slots are in use whatever
/// their bytes, and a read wakes a writer only when it empties a page of
/// a full pipe (`anon_pipe_read`). On `graviton3` with the pipe-mutex
/// experiment's split, whose pipes fill at 4 groups of 100 loops: writers
/// sleep on full pipes and readers wake them in both models; with the
/// pages some reads of a pipe holding all 640 messages wake nobody (they
/// leave their page unfinished) and some writers sleep on a full pipe of
/// fewer than 640 (its oldest page partly read), neither of which the
/// model before does.
#[test]
fn pipe_reader_wakes_a_writer_when_it_empties_a_page() {
    let (now, before) = now_and_before(
        &graviton3_pipe_mutex(),
        "--no-pipe-pages",
        "NO_NEXT_BUDDY",
        4,
        100,
    );
    let got = [now, before].map(|h| {
        (
            h.pipe_full_sleeps,
            h.reader_writer_wakes,
            h.full_reads_no_wake,
            h.full_sleeps_below_cap,
        )
    });
    assert!(
        got.iter()
            .all(|&(sleeps, wakes, _, _)| sleeps > 0 && wakes > 0)
            && got[0].2 > 0
            && got[0].3 > 0
            && got[1].2 == 0
            && got[1].3 == 0,
        "(sleeps on a full pipe, readers' writer wakes, full reads without a wake, \
         sleeps on a full pipe below 640) now and before: {got:?}"
    );
}

/// `Mechanisms::mutex_poll_cut` (the default; `--no-mutex-poll-cut` the
/// model before): a pipe mutex spinner switched out in its poll (the model
/// takes the immediate request at an interrupt's exit; Linux's spinner,
/// with preemption off, leaves its loop at `need_resched()` and calls
/// `schedule()`) drops the poll's rest, and tries the mutex as soon as it
/// runs again. Counted by the engine: some polls cut on `qemu:4` at 2
/// groups x 20 loops, none in the model before, which ran their rest.
#[test]
fn pipe_mutex_spinner_switched_out_drops_its_poll() {
    for cfg in ["NO_NEXT_BUDDY", INELIGIBLE_RULE] {
        let m = qemu(4, &[]);
        let mut old = m.clone();
        old.mech.turn_off("--no-mutex-poll-cut").unwrap();
        let (k, wl) = pipes_driven_kernel(&m, cfg, 2, 20, 1);
        let (k_before, _) = pipes_driven_kernel(&old, cfg, 2, 20, 1);
        assert!(
            wl.lock_spins > 0
                && k.bursts_left_at_resched > 0
                && k_before.bursts_left_at_resched == 0,
            "{cfg}: {} polls, {} cut, {} cut in the model before",
            wl.lock_spins,
            k.bursts_left_at_resched,
            k_before.bursts_left_at_resched
        );
    }
}

/// Two hogs (tasks 1 and 2, never sleeping) beside a task pinned to CPU 1
/// (task 0) that runs 1 ms and exits, on a machine of 2 CPUs: one CPU
/// ends up running both hogs, the other idle and tickless.
struct HogsBesideShort;

impl Workload for HogsBesideShort {
    fn init(&mut self, k: &mut Kernel) {
        k.spawn(Spawn {
            pin: Some(1),
            ..Default::default()
        });
        for _ in 0..2 {
            k.spawn(Spawn::default());
        }
        // Every newidle pass of both CPUs skipped by NI_RANDOM (ratio 0,
        // where a CPU whose newidle passes all fail settles).
        for c in 0..2 {
            let cpu = sched::CpuId::new(c).unwrap();
            for level in 0..k.s.domains(cpu).len() {
                k.s.set_newidle_ratio(cpu, level, 0);
            }
        }
    }
    fn step(&mut self, _: &mut Kernel, tid: u32) -> Next {
        match tid {
            0 => Next::Exit,
            _ => Next::Run(MS),
        }
    }
    fn metrics(&mut self, _: &Kernel) -> Vec<Metric> {
        Vec::new()
    }
}

/// `HogsBesideShort` for 200 ms: each CPU's idle time, the tasks the
/// balancers moved and the newidle passes NI_RANDOM skipped.
fn hogs_beside_short(m: Machine) -> (Vec<u64>, u64, u64) {
    let n = m.topo.nr_cpus();
    let cfg = Config::parse("NO_NEXT_BUDDY").build(n, m.hz).unwrap();
    let mut k = Kernel::new(m, cfg, 3, 1);
    k.run(&mut HogsBesideShort, 200 * MS);
    let idle = k.cpu_times().iter().map(|&(_, idle)| idle).collect();
    (idle, k.ctr.balanced, k.ctr.newidle_skipped)
}

/// `Mechanisms::ilb_kick` (the default; `--no-ilb-kick` the model before):
/// the busy CPU's two-task kick makes the tickless CPU run the idle load
/// balancer's periodic idle pass, which NI_RANDOM does not skip and which
/// counts its failures, so a hog moves to the idle CPU although every
/// newidle pass of that CPU is skipped (ratio 0). The kick before asked
/// for a newidle pass, which the die skipped every time: the CPU stayed
/// idle the whole run beside the two hogs (as the kernel's kick before
/// a04e0ac, `smp_nohz_kick_balances_when_newidle_fails`).
#[test]
fn nohz_kick_runs_the_idle_load_balancer() {
    let (idle, balanced, _) = hogs_beside_short(Machine::preset("flat:2").unwrap());
    let mut old = Machine::preset("flat:2").unwrap();
    old.mech.turn_off("--no-ilb-kick").unwrap();
    let (idle_old, balanced_old, skipped_old) = hogs_beside_short(old);
    eprintln!("idle ns now {idle:?} (moved {balanced}), before {idle_old:?} (moved {balanced_old}, newidle skipped {skipped_old})");
    assert!(
        idle_old.iter().max().unwrap() > &(190 * MS) && balanced_old == 0 && skipped_old > 0,
        "before: a CPU idle the whole run, nothing moved, the kicked newidle passes skipped: \
         idle {idle_old:?} ns, moved {balanced_old}, skipped {skipped_old}"
    );
    assert!(
        idle.iter().all(|&ns| ns < 40 * MS) && balanced > 0,
        "now: a hog moved within a few kicks: idle {idle:?} ns, moved {balanced}"
    );
}

/// `flat:2` without jitter, its IPI taking `ipi_ns` to arrive and a busy
/// receiver's IPI costing `ipi_irq_ns`; `off` turned off.
fn flat2_exact(ipi_ns: u64, ipi_irq_ns: u64, off: &[&str]) -> Machine {
    let mut m = Machine::preset("flat:2").unwrap();
    m.costs.jitter_pct = 0;
    m.costs.ipi_ns = ipi_ns;
    m.ipi_irq_ns = ipi_irq_ns;
    for f in off {
        m.mech.turn_off(f).unwrap();
    }
    m
}

/// `HogsBesideShort` on `m` until `end_ns`: the tasks moved by then, and
/// each CPU's idle time.
fn hogs_until(m: Machine, end_ns: u64) -> (u64, Vec<u64>) {
    let n = m.topo.nr_cpus();
    let cfg = Config::parse("NO_NEXT_BUDDY").build(n, m.hz).unwrap();
    let mut k = Kernel::new(m, cfg, 3, 1);
    k.run(&mut HogsBesideShort, end_ns);
    let idle = k.cpu_times().iter().map(|&(_, idle)| idle).collect();
    (k.ctr.balanced, idle)
}

/// `Mechanisms::ilb_ipi` (the default; `--no-ilb-ipi` the model before):
/// the idle load balancer's pass runs when the kick's IPI reaches the
/// kicked CPU, not at the kick. With a 100 us IPI and no jitter on
/// `flat:2`, the first kick moves a hog: the model before moves it at the
/// kick (and the hog runs when the IPI it sends arrives), this one not
/// before the IPI's arrival; either way CPU 1 starts the hog at the same
/// instant, with no receive cost. With a receive cost the kicked CPU runs
/// nothing for that long after the pass: the hog starts that much later.
#[test]
fn ilb_pass_runs_at_the_kicks_ipi() {
    const IPI_NS: u64 = 100_000;
    let exit_ns = Machine::preset("flat:2").unwrap().costs.idle_exit_ns;
    let (moved_old, idle_old) = hogs_until(flat2_exact(IPI_NS, 0, &["--no-ilb-ipi"]), 200 * MS);
    let (moved, idle) = hogs_until(flat2_exact(IPI_NS, 0, &[]), 200 * MS);
    eprintln!("idle ns before {idle_old:?} (moved {moved_old}), now {idle:?} (moved {moved})");
    assert!(
        moved_old > 0 && moved > 0,
        "a hog moved: {moved_old}, {moved}"
    );
    // CPU 1 ran its pinned task (which exits at once), then idled until
    // the hog came, the IPI's delay and the idle exit after the kick: its
    // idle time is the hog's start less the few us the pinned task ran.
    assert_eq!(
        idle, idle_old,
        "the hog starts when the IPI arrives in both"
    );
    let start_ns = idle_old[1];
    assert!(start_ns > IPI_NS + exit_ns, "{start_ns}");
    let half_way = start_ns - (IPI_NS + exit_ns) / 2;
    let (moved_old, _) = hogs_until(flat2_exact(IPI_NS, 0, &["--no-ilb-ipi"]), half_way);
    let (moved, _) = hogs_until(flat2_exact(IPI_NS, 0, &[]), half_way);
    assert!(
        moved_old > 0 && moved == 0,
        "half way from the kick to its IPI's arrival ({half_way} ns): moved {moved_old} before, {moved} now"
    );
    let (moved, _) = hogs_until(flat2_exact(IPI_NS, 0, &[]), start_ns + 10_000);
    assert!(moved > 0, "moved once the IPI arrived: {moved}");
    // The receive cost: the kicked CPU is busy with the IPI for 50 us.
    const RECV_NS: u64 = 50_000;
    let (_, idle_recv) = hogs_until(flat2_exact(IPI_NS, RECV_NS, &[]), 200 * MS);
    let (_, idle_recv_old) = hogs_until(flat2_exact(IPI_NS, RECV_NS, &["--no-ilb-ipi"]), 200 * MS);
    assert_eq!(
        idle_recv_old[1], idle_old[1],
        "before, an idle receiver paid nothing"
    );
    assert_eq!(
        idle_recv[1],
        idle[1] + RECV_NS,
        "the hog starts after the IPI's receive cost: {idle_recv:?} against {idle:?}"
    );
}

/// Two hogs pinned to CPU 0: every kick's pass pulls nothing.
struct PinnedHogs;

impl Workload for PinnedHogs {
    fn init(&mut self, k: &mut Kernel) {
        for _ in 0..2 {
            k.spawn(Spawn {
                pin: Some(0),
                ..Default::default()
            });
        }
    }
    fn step(&mut self, _: &mut Kernel, _: u32) -> Next {
        Next::Run(MS)
    }
    fn metrics(&mut self, _: &Kernel) -> Vec<Metric> {
        Vec::new()
    }
}

/// `PinnedHogs` on `cascadelake-2s` (idle states by depth) for 200 ms:
/// the idle states' (entries, exit latency paid) summed over states, and
/// each CPU's idle time.
fn pinned_hogs_idle(off: &[&str]) -> ((u64, u64), Vec<u64>) {
    let mut m = Machine::preset("cascadelake-2s").unwrap();
    for f in off {
        m.mech.turn_off(f).unwrap();
    }
    let n = m.topo.nr_cpus();
    let cfg = Config::parse("NO_NEXT_BUDDY").build(n, m.hz).unwrap();
    let mut k = Kernel::new(m, cfg, 3, 1);
    k.run(&mut PinnedHogs, 200 * MS);
    let st = k.idle_stats();
    let sums = (st.iter().map(|s| s.1).sum(), st.iter().map(|s| s.2).sum());
    let idle = k.cpu_times().iter().map(|&(_, idle)| idle).collect();
    (sums, idle)
}

/// `Mechanisms::ilb_ipi`: a kick whose pass pulls nothing wakes the kicked
/// CPU from its idle state (it pays the exit latency) and the CPU goes
/// back to sleep, its idle residency restarted (a new entry the governor
/// picks). The model before left it asleep: only the first switches
/// wake a CPU, and the CPUs that never run a task enter no state.
#[test]
fn ilb_kick_that_pulls_nothing_restarts_the_idle_residency() {
    let ((entries_old, paid_old), idle_old) = pinned_hogs_idle(&["--no-ilb-ipi"]);
    let ((entries, paid), idle) = pinned_hogs_idle(&[]);
    let n = idle.len() as u64;
    eprintln!("entries {entries_old} -> {entries}, exit paid {paid_old} -> {paid} ns");
    // Before: each CPU's entry at the start (deepest state), CPU 0's
    // wake-up to run the hogs paid nothing (a switch, not an interrupt).
    assert_eq!(entries_old, n, "before: no CPU but CPU 0 ever woke");
    assert_eq!(paid_old, 0, "before: no exit latency paid");
    // Now: the kicked CPUs woke and slept again, once a kick.
    assert!(entries > n, "no idle entry after a kick: {entries}");
    assert!(paid > 0, "no exit paid for a kick");
    // Nothing ran on the other CPUs either way.
    assert_eq!(idle[1..], idle_old[1..], "an idle CPU ran a task");
}

/// `Mechanisms::pipe_mutex_split` (the default; `--no-pipe-mutex-split`
/// the model before): on `qemu:N` a pipe `write` holds the mutex for the
/// hold measured in Linux 7.2 ([`QEMU_PIPE_WRITE_MUTEX_NS`], a `read`
/// [`QEMU_PIPE_READ_MUTEX_NS`]), jittered +/-10%, the rest of its body run
/// before `mutex_lock`; the model before held it for the syscall less its
/// entry and exit. On one vCPU (no sharing, so a hold's time is its work),
/// the holds whose task stayed on its CPU average the two holds' mean
/// within 8% (writes and reads alternate one for one); the model
/// before's, its bodies' mean the same way. Holds whose holder was
/// switched out (a few, milliseconds each) are counted apart, and happen
/// in both.
#[test]
fn pipe_mutex_held_for_the_measured_hold() {
    let c = qemu_costs();
    let whole = ((c.pipe_write_ns - c.syscall_ns) + (c.pipe_read_ns - c.syscall_ns)) as f64 / 2.0;
    let measured = (QEMU_PIPE_WRITE_MUTEX_NS + QEMU_PIPE_READ_MUTEX_NS) as f64 / 2.0;
    for (off, want) in [(&[][..], measured), (&["--no-pipe-mutex-split"][..], whole)] {
        let h = pipes_driven(&qemu(1, off), "NO_NEXT_BUDDY", 1, 20, 1);
        assert_eq!(
            h.lock_holds,
            2 * 20 * 20 * 20,
            "{off:?}: one hold a write and a read"
        );
        let stayed = h.lock_holds - h.lock_holds_preempted;
        let mean = (h.lock_hold_ns - h.lock_hold_preempted_ns) as f64 / stayed as f64;
        assert!(
            (mean / want - 1.0).abs() < 0.08,
            "{off:?}: holds average {mean:.0} ns, want {want:.0}"
        );
        assert!(
            h.lock_holds_preempted > 0 && h.lock_holds_preempted * 100 < h.lock_holds,
            "{off:?}: {} of {} holds preempted",
            h.lock_holds_preempted,
            h.lock_holds
        );
    }
}

/// `Mechanisms::mutex_fast_path` (the default; `--no-mutex-fast-path`
/// the model before): a `mutex_lock` that finds the pipe's mutex free
/// with nobody waiting takes Linux's fast path (`__mutex_trylock_fast`,
/// no `preempt_enable()`), so a reschedule request made before it, by a
/// remote wakeup whose IPI has not arrived yet, is not taken right after
/// the lock with the mutex held. On `graviton3` with the pipe-mutex
/// experiment's split and the ineligible-waker rule (7 groups x 40, seed
/// 1; many remote immediate requests): 29 of 153 897 fast-path holds had
/// their task switched out holding the mutex (by an interrupt in the
/// hold), against 811 of 148 038 in the model before; bound 1/10.
#[test]
fn pipe_mutex_fast_path_has_no_preemption_point() {
    let now = pipes_driven(&graviton3_pipe_mutex(), INELIGIBLE_RULE, 7, 40, 1);
    let mut m = graviton3_pipe_mutex();
    m.mech.turn_off("--no-mutex-fast-path").unwrap();
    let before = pipes_driven(&m, INELIGIBLE_RULE, 7, 40, 1);
    for (h, what) in [(&now, "now"), (&before, "before")] {
        assert!(
            h.lock_fast_holds > h.lock_holds / 2,
            "{what}: {} of {} holds on the fast path",
            h.lock_fast_holds,
            h.lock_holds
        );
    }
    assert!(
        before.lock_fast_holds_preempted > 100
            && now.lock_fast_holds_preempted * 10 < before.lock_fast_holds_preempted,
        "fast-path holds switched out holding the mutex: {} now, {} before",
        now.lock_fast_holds_preempted,
        before.lock_fast_holds_preempted
    );
}
