//! A wakeup inside its syscall (`Mechanisms::wake_unlock`, `sim run
//! --no-wake-unlock`): the waker's side of the wakeup runs with interrupts
//! off, and the preemption point is its end, the `spin_unlock_irqrestore`
//! of the wait queue's lock, not the wakeup's instant.

use sched::TaskParams;
use sim::engine::{Kernel, Metric, Next, Place, Spawn, Workload, NR_PLACES};
use sim::machine::Machine;
use sim::workloads::HackbenchCfg;
use sim::{run_one, Config, RunResult, WorkSpec};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// `qemu:1` without switch costs, jitter or the idle scan's cost, so that
/// times are exact: a local wakeup costs its waker `wake_ns` (6.116 µs).
fn exact_qemu1(off: &[&str]) -> Machine {
    let mut m = Machine::preset("qemu:1").expect("preset");
    m.mech.turn_off("--no-scan-cost").unwrap();
    for f in off {
        m.mech.turn_off(f).expect("flag");
    }
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

/// Task 0 sleeps 1 ms (task 1 runs and blocks meanwhile), runs 100 µs of
/// syscall, then wakes task 1 at the end of that syscall and goes on with
/// a long one. Task 1 asks for a 100 µs slice (`sched_runtime`), so its
/// deadline comes before task 0's and the wakeup preempts (PREEMPT_SHORT):
/// an immediate request under full, a lazy one under lazy.
struct WakeInSyscall {
    step: [u32; 2],
    wake_ns: u64,
    woken_run_ns: u64,
}

impl Workload for WakeInSyscall {
    fn init(&mut self, k: &mut Kernel) {
        k.spawn(Spawn::default());
        k.spawn(Spawn {
            params: TaskParams {
                slice_ns: 100 * US,
                ..Default::default()
            },
            ..Default::default()
        });
    }
    fn step(&mut self, k: &mut Kernel, tid: u32) -> Next {
        let s = self.step[tid as usize];
        self.step[tid as usize] += 1;
        match (tid, s) {
            (0, 0) => Next::Sleep(MS),
            (0, 1) => Next::Run(100 * US),
            (0, 2) => {
                self.wake_ns = k.now;
                assert!(k.wake(1, true), "task 1 sleeps");
                Next::Run(10 * MS)
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

/// (the wakeup's instant, when the wakee first ran), and the run's
/// window counters.
fn wake_in_syscall(m: Machine, cfg: &str) -> (u64, u64, sim::engine::UnlockCounters) {
    let cfg = Config::parse(cfg).build(1, m.hz).unwrap();
    let mut k = Kernel::new(m, cfg, 2, 1);
    let mut wl = WakeInSyscall {
        step: [0; 2],
        wake_ns: 0,
        woken_run_ns: 0,
    };
    k.run(&mut wl, 100 * MS);
    (wl.wake_ns, wl.woken_run_ns, k.unlock.clone())
}

/// The wakee runs once its waker has paid the wakeup with interrupts off:
/// `wake_ns` after the wakeup, under full (the wakeup's immediate request,
/// switched at the unlock, a kernel point) and under lazy (its lazy
/// request, taken at the return to user space right after the unlock).
/// With `--no-wake-unlock` it runs at the wakeup's own instant in both, the
/// waker paying the cost once it runs again.
#[test]
fn wakeup_switches_at_its_unlock() {
    let wake_cost = exact_qemu1(&[]).costs.wake_ns;
    assert!(wake_cost > 0);
    for cfg in ["NO_NEXT_BUDDY", "preempt=lazy"] {
        let (at, ran, u) = wake_in_syscall(exact_qemu1(&[]), cfg);
        assert!(at > MS, "{cfg}: woken at {at} ns");
        assert_eq!(ran, at + wake_cost, "{cfg}: the wakee ran at the unlock");
        assert_eq!(u.windows, 1, "{cfg}");
        // Under full the switch is the unlock's (an immediate request);
        // under lazy the request waits for the return to user space.
        let at_unlock = u64::from(cfg == "NO_NEXT_BUDDY");
        assert_eq!(u.unlock_preempts, at_unlock, "{cfg}");
        let (at0, ran0, u0) = wake_in_syscall(exact_qemu1(&["--no-wake-unlock"]), cfg);
        assert_eq!(at0, at, "{cfg}: the same history up to the wakeup");
        assert_eq!(
            ran0, at0,
            "{cfg}, --no-wake-unlock: at the wakeup's instant"
        );
        assert_eq!(u0, Default::default(), "{cfg}: no window");
    }
}

fn hb_sockets() -> WorkSpec {
    WorkSpec::Hackbench(HackbenchCfg {
        groups: 2,
        loops: 20,
        sockets: true,
        threads: false,
        flips: 0,
    })
}

fn run_cfg(m: &Machine, cfg: &str, seed: u64) -> RunResult {
    run_one(
        m,
        &Config::parse(cfg),
        &hb_sockets(),
        seed,
        60_000_000_000,
        0,
    )
    .expect("run")
}

/// On `qemu:4`'s hackbench over sockets, every wakeup made in a sender's
/// step opens a window, and an HRTICK expiry (a hard request under lazy)
/// that lands in one is taken at the unlock, not at its own instant: the
/// HRTICK's deferred preemptions are counted, and every switch at a kernel
/// point is an immediate request at an unlock (the socket model without
/// `Mechanisms::syscall_user_return` has no other kernel point; with it
/// the start of a syscall's work after its decision is one, which a task
/// back from a sleep reaches without a return to user space: at most 1%
/// more there). Under full a wakeup's own request switches there too, so
/// the syscall's return to user space takes (almost) no immediate
/// request: it did all of the wakeups' before. Seeds 1-2, each with and
/// without the mechanism.
#[test]
fn hrtick_in_a_window_is_taken_at_the_unlock() {
    let now = Machine::preset("qemu:4").unwrap();
    for seed in [1, 2] {
        for cfg in ["preempt=lazy", "NO_NEXT_BUDDY"] {
            let r = run_cfg(&now, cfg, seed);
            let (kp, unlock) = (
                r.ctr.resched_at[Place::Kernel as usize],
                r.unlock.unlock_preempts,
            );
            assert_eq!(kp[0], 0, "{cfg} {seed}: a lazy request at a kernel point");
            assert!(
                kp[1] >= unlock && (kp[1] - unlock) * 100 <= unlock,
                "{cfg} {seed}: {} at kernel points, {unlock} at unlocks",
                kp[1]
            );
        }
    }
    let mut on = now.clone();
    on.mech.turn_off("--no-syscall-user-return").unwrap();
    let mut off = on.clone();
    off.mech.turn_off("--no-wake-unlock").unwrap();
    let (ur, kp, hr) = (
        Place::UserReturn as usize,
        Place::Kernel as usize,
        Place::Hrtick as usize,
    );
    for seed in [1, 2] {
        let lazy = run_cfg(&on, "preempt=lazy", seed);
        let u = &lazy.unlock;
        assert!(u.windows > 0, "seed {seed}: no window");
        assert!(u.deferred_irqs[hr] > 0, "seed {seed}: {u:?}");
        let deferred: u64 = u.deferred_irqs.iter().sum();
        assert!(u.unlock_preempts > 0 && u.unlock_preempts <= deferred + u.windows);
        assert_eq!(
            lazy.ctr.resched_at[kp],
            [0, u.unlock_preempts],
            "seed {seed}"
        );
        let full = run_cfg(&on, "NO_NEXT_BUDDY", seed);
        assert_eq!(full.ctr.resched_at[kp], [0, full.unlock.unlock_preempts]);
        let full_off = run_cfg(&off, "NO_NEXT_BUDDY", seed);
        assert!(
            full.ctr.resched_at[ur][1] * 100 <= full_off.ctr.resched_at[ur][1],
            "seed {seed}: immediate requests at a return to user {} against {} without the windows",
            full.ctr.resched_at[ur][1],
            full_off.ctr.resched_at[ur][1]
        );
        for r in [&full_off, &run_cfg(&off, "preempt=lazy", seed)] {
            assert_eq!(r.unlock.windows, 0);
            assert_eq!(r.unlock.deferred_irqs, [0; NR_PLACES]);
        }
    }
}

/// The windows are the waker's wakeup cost: with neither the wakeup nor
/// the idle scan's cost charged there is no window, and the run is the
/// run without the mechanism, byte for byte.
#[test]
fn no_window_without_a_wakeup_cost() {
    let mut m = Machine::preset("qemu:4").unwrap();
    m.mech.turn_off("--no-wake-cost").unwrap();
    m.mech.turn_off("--no-scan-cost").unwrap();
    let mut off = m.clone();
    off.mech.turn_off("--no-wake-unlock").unwrap();
    for cfg in ["NO_NEXT_BUDDY", "preempt=lazy"] {
        let (a, b) = (run_cfg(&m, cfg, 1), run_cfg(&off, cfg, 1));
        assert_eq!(a.unlock.windows, 0);
        assert_eq!(
            format!("{:?} {:?} {:?}", a.metrics, a.ctr, a.runtimes),
            format!("{:?} {:?} {:?}", b.metrics, b.ctr, b.runtimes),
            "{cfg}"
        );
    }
}
