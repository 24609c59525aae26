//! In-kernel tests: registration next to the code under test, and the runner.
//!
//! Registration works on stable Rust without `custom_test_frameworks`: the
//! [`ktest!`](crate::ktest!) macro puts a [`KTest`] record into the `.ktest` link
//! section, which both arch linker scripts KEEP between the symbols
//! `__ktest_start` and `__ktest_end`; the runner reads that array. The
//! record, the macros and the section are `kernel_hal::testing`'s (the test
//! module the hardware layer exposes, so its own code registers tests the
//! same way); the crate root re-exports the macros.
//!
//! The runner (boot argument `ktest`, or `ktest=<filter>` to select by name:
//! comma-separated substrings, a test runs if its name contains one of them
//! (or there is none) and no `-`-prefixed one, e.g. `ktest=smp_,-smp_no_idle`)
//! runs each test once in a fresh thread with default scheduler features and
//! the boot preemption model, prints `test <name> ... ok` or `test <name> ...
//! FAILED` plus the reason, then `N passed, M failed, K skipped, Q
//! quarantined`, and ends QEMU: success iff nothing failed and at least one
//! test ran. There are no retries: a test that cannot hold its bound on every
//! run is either fixed or listed in [`QUARANTINE`] with the reason (not run,
//! counted in the closing line).
//!
//! Suites: every test belongs to one [`Suite`]. [`Suite::Timing`] tests
//! ([`ktest_timing!`](crate::ktest_timing), [`ktest_smp_timing!`](crate::ktest_smp_timing))
//! assert time bounds (latencies, tick counts, CPU shares); `make test` runs
//! them in a reproducible-time boot (QEMU `-icount`: virtual time counts
//! executed instructions, so host load cannot stretch it). The others
//! ([`Suite::Concurrency`]: functional and race tests) run under
//! multi-threaded TCG, where vCPUs really run in parallel. Boot argument
//! `ktest_suite=timing|concurrency|all` (default all) selects.
//! `ktest_repeat=N` runs the selection N times over in one boot (a rare
//! failure hunted without N boots; `KTEST_REPEAT` in `scripts/test/ktest.sh`).
//!
//! Threads: a test must stop and join every thread it starts, also when it
//! fails (the test helpers stop their threads on drop). After each test the
//! runner reaps threads that exited unjoined and waits for the others while
//! they make progress; a thread still alive after that fails the test and
//! ends the run (there is no kill), naming the thread.
//!
//! CPUs: a [`ktest!`](crate::ktest!) test measures single-CPU behaviour, so its
//! thread (and every thread it spawns, which inherit its affinity) is pinned
//! to CPU 0: the same test means the same thing at any CPU count. A
//! [`ktest_smp!`](crate::ktest_smp) test runs unpinned and declares the CPUs
//! it needs; with fewer online it is not run but reported as
//! `test <name> ... skipped (needs N CPUs, M online)` and counted in the
//! `skipped` figure (never as passed). The SMP runs of `make test` fail
//! unless that figure is 0.
//!
//! Skips at run time: a test that cannot test what it is for in this boot
//! (a feature a boot argument turned off, a topology without the level it
//! needs) ends with [`kskip!`](crate::kskip)`("reason")`, never with an
//! early `Ok`: it is reported as `test <name> ... skipped (<reason>)` and
//! counted in the same `skipped` figure, so the runs that must skip nothing
//! fail on it too, and `scripts/test/ktest.sh` lists it in the others.
//!
//! A watchdog in the tick ends the run
//! as a failure when a test takes longer than [`TEST_TIMEOUT_NS`], so a hung test
//! (even one that spins with preemption off) cannot hang the run; a panic in a
//! test is reported the same way by the panic handler.

use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use kernel_hal::cpu::CpuId;

use sched::{Feature, PreemptMode, TaskParams};

use crate::arch;
use crate::sync::SpinLock;
use crate::task;

// The registry (the record, the registration and assertion macros, the
// `.ktest` section) is the hardware layer's, so that arch code can register
// tests without naming this module.
pub use kernel_hal::testing::{KTest, Suite, TestError, TestResult};

/// Longest a test may go without progress before the watchdog ends the run
/// (it only catches hangs). Progress: a context switch on any CPU (seen by
/// the watchdog itself), or a step a test reports with [`progress`]
/// ([`crate::tests::wait_progress`] does); each pushes this deadline out, up
/// to [`TEST_HARD_LIMIT_NS`] in all: on a loaded host a slow test takes
/// longer, it does not fail.
pub const TEST_TIMEOUT_NS: u64 = 10_000_000_000;

/// Longest a single test may take in all, progress or not: it catches a
/// livelock that keeps switching without ever finishing. Well above what
/// any test needs on a host running four busy loops beside `make test`
/// (the slowest, the cross-CPU ping-pong without `-icount`, took over 60 s
/// at a host load of 13 on 2 cores).
pub const TEST_HARD_LIMIT_NS: u64 = 180_000_000_000;

/// The running test made progress: the watchdog starts counting again
/// (never past [`TEST_HARD_LIMIT_NS`] from the test's start).
pub fn progress() {
    let start = START_NS.load(Ordering::Relaxed);
    if DEADLINE_NS.load(Ordering::Relaxed) != 0 {
        let d = (arch::now_ns() + TEST_TIMEOUT_NS).min(start + TEST_HARD_LIMIT_NS);
        DEADLINE_NS.fetch_max(d, Ordering::SeqCst);
    }
}

/// Every registered test, in link order (the `.ktest` section that boot/'s
/// linker scripts collect; read by `kernel_hal::testing`).
pub fn registry() -> &'static [KTest] {
    kernel_hal::testing::registry()
}

static PASSED: AtomicU32 = AtomicU32::new(0);
static FAILED: AtomicU32 = AtomicU32::new(0);
static SKIPPED: AtomicU32 = AtomicU32::new(0);
static QUARANTINED: AtomicU32 = AtomicU32::new(0);
/// Index in [`registry`] of the running test (`usize::MAX`: none).
static CURRENT: AtomicUsize = AtomicUsize::new(usize::MAX);
static DEADLINE_NS: AtomicU64 = AtomicU64::new(0);
static START_NS: AtomicU64 = AtomicU64::new(0);

/// Tests that are not run, each with the number of online CPUs from which
/// it is not run (1: never) and the reason, counted as `quarantined` in the
/// closing line. Empty is the goal; an entry is an open bug.
pub const QUARANTINE: &[(&str, usize, &str)] = &[];

/// The boot-time preemption model, restored before every test.
static BOOT_PREEMPT: AtomicU32 = AtomicU32::new(PreemptMode::Full as u32);

/// Puts the scheduler back to its boot state: default features, boot
/// preemption model, default base slice, Linux's timer slack.
pub fn reset_sched_state() {
    let cfg = crate::sched::sched_config();
    for &f in Feature::ALL {
        cfg.features.set(f, f.default_enabled());
    }
    let mode = PreemptMode::ALL
        .into_iter()
        .find(|m| *m as u32 == BOOT_PREEMPT.load(Ordering::Relaxed))
        .unwrap_or(PreemptMode::Full);
    cfg.tunables.set_preempt_mode(mode);
    let _ = cfg.tunables.set("kernel.sched_base_slice_ns", "700000");
    let _ = cfg
        .tunables
        .set("kernel.sched_stall_warn_ms", KTEST_STALL_WARN_MS);
    let _ = cfg
        .tunables
        .set("kernel.softlockup_thresh_ms", KTEST_SOFTLOCKUP_MS);
    let _ = cfg.tunables.set(
        "kernel.timer_slack_ns",
        &alloc::format!("{}", sched::tunables::DEFAULT_TIMER_SLACK_NS),
    );
    // The fair server back to Linux's defaults, if a test changed them
    // (through the longest period, so that runtime <= period at every step).
    let defaults = (
        sched::deadline::FAIR_SERVER_RUNTIME_NS,
        sched::deadline::FAIR_SERVER_PERIOD_NS,
    );
    if cfg.tunables.fair_server() != defaults {
        for (k, v) in [
            ("kernel.sched_fair_server_period_ns", "4194304000"),
            ("kernel.sched_fair_server_runtime_ns", "50000000"),
            ("kernel.sched_fair_server_period_ns", "1000000000"),
        ] {
            let _ = cfg.tunables.set(k, v);
        }
    }
}

/// Ends the run with the summary line. The console is claimed first
/// (`console::claim_for_report`: waits for a line another CPU is printing,
/// then keeps every other CPU out), so the line starts a line of its own: a
/// log line from another CPU (the x86 clock's refinement from CPU 0's idle
/// loop, say) written at the same moment would otherwise be interleaved into
/// it, and the harness, which reads the line, would find no summary.
fn finish(code_ok: bool) -> ! {
    crate::console::claim_for_report();
    let (p, f, k, q) = (
        PASSED.load(Ordering::Relaxed),
        FAILED.load(Ordering::Relaxed),
        SKIPPED.load(Ordering::Relaxed),
        QUARANTINED.load(Ordering::Relaxed),
    );
    #[cfg(feature = "lockdep")]
    crate::console::emergency_write(format_args!("lockdep: {}\n", kernel_hal::lockdep::stats()));
    crate::console::emergency_write(format_args!(
        "{} passed, {} failed, {} skipped, {} quarantined\n",
        p, f, k, q
    ));
    arch::exit_qemu(if code_ok && f == 0 && p > 0 {
        arch::ExitCode::Success
    } else {
        arch::ExitCode::Failure
    })
}

/// Whether `t` is in the selected suite (`None`: all).
fn in_suite(t: &KTest, suite: Option<Suite>) -> bool {
    suite.is_none_or(|s| s == t.suite)
}

/// Whether test `name` is selected by `filter`: comma-separated substrings;
/// it must contain one of the plain ones (if any) and none of the
/// `-`-prefixed ones. An empty filter selects everything.
fn selected_by(name: &str, filter: &str) -> bool {
    let terms = filter.split(',').filter(|t| !t.is_empty());
    let (mut any_plus, mut plus_hit) = (false, false);
    for t in terms {
        match t.strip_prefix('-') {
            Some(out) if name.contains(out) => return false,
            Some(_) => {}
            None => {
                any_plus = true;
                plus_hit |= name.contains(t);
            }
        }
    }
    plus_hit || !any_plus
}

crate::ktest!(ktest_filter_terms, || {
    crate::kassert!(selected_by("smp_a", "") && selected_by("smp_a", "smp_"));
    crate::kassert!(!selected_by("cmdline", "smp_"));
    crate::kassert!(selected_by("smp_call", "smp_,-smp_no_idle"));
    crate::kassert!(!selected_by("smp_no_idle_x", "smp_,-smp_no_idle"));
    crate::kassert!(selected_by("b", "a,b") && !selected_by("c", "a,b"));
    crate::kassert!(selected_by("x", "-y") && !selected_by("y", "-y"));
    Ok(())
});

/// Runs the tests of `suite` (`None`: all) that `filter` selects (see
/// [`selected_by`]), then ends QEMU with the verdict.
pub fn run(filter: &'static str, suite: Option<Suite>, repeat: u32) -> ! {
    BOOT_PREEMPT.store(crate::sched::preempt_mode() as u32, Ordering::Relaxed);
    // A watchdog's report fails the running test.
    task::stall::set_notifier(on_stall);
    task::softlockup::set_notifier(on_softlockup);
    let tests = registry();
    let selected: alloc::vec::Vec<&'static KTest> = tests
        .iter()
        .filter(|t| selected_by(t.name, filter) && in_suite(t, suite))
        .collect();
    let repeat = repeat.max(1);
    crate::kprintln!(
        "ktest: running {} of {} tests (filter '{}', suite {}){}",
        selected.len(),
        tests.len(),
        filter,
        suite.map_or("all", Suite::name),
        if repeat > 1 {
            alloc::format!(", {repeat} rounds")
        } else {
            String::new()
        }
    );
    for round in 1..=repeat {
        if repeat > 1 {
            crate::kprintln!("ktest: round {} of {}", round, repeat);
        }
        for &t in &selected {
            if let Some((_, _, why)) = QUARANTINE
                .iter()
                .find(|(n, from, _)| *n == t.name && crate::sched::nr_cpus() >= *from)
            {
                QUARANTINED.fetch_add(1, Ordering::Relaxed);
                crate::kprintln!("test {} ... quarantined ({})", t.name, why);
                continue;
            }
            let online = crate::sched::nr_cpus();
            if online < t.requires_cpus {
                SKIPPED.fetch_add(1, Ordering::Relaxed);
                crate::kprintln!(
                    "test {} ... skipped (needs {} CPUs, {} online)",
                    t.name,
                    t.requires_cpus,
                    online
                );
                continue;
            }
            let before = task::live_threads();
            let outcome = run_one(t);
            // Threads the test left behind: reap the exited ones, wait for the
            // rest while they make progress; one still alive ends the run.
            // A skipped test too: a skip is decided before anything starts.
            if let Err(stuck) = reap_leftovers(&before) {
                let why = alloc::format!("left thread(s) running after the test: {}", stuck);
                FAILED.fetch_add(1, Ordering::Relaxed);
                crate::kprintln!("test {} ... FAILED", t.name);
                match outcome {
                    Ok(()) => crate::kprintln!("    {}", why),
                    Err(e) => crate::kprintln!("    {}; {}", e, why),
                }
                task::dump_threads();
                finish(false);
            }
            DEADLINE_NS.store(0, Ordering::SeqCst);
            CURRENT.store(usize::MAX, Ordering::SeqCst);
            match outcome {
                Ok(()) => {
                    PASSED.fetch_add(1, Ordering::Relaxed);
                    crate::kprintln!("test {} ... ok", t.name);
                }
                Err(TestError::Skipped(why)) => {
                    SKIPPED.fetch_add(1, Ordering::Relaxed);
                    crate::kprintln!("test {} ... skipped ({})", t.name, why);
                }
                Err(TestError::Failed(why)) => {
                    FAILED.fetch_add(1, Ordering::Relaxed);
                    crate::kprintln!("test {} ... FAILED", t.name);
                    crate::kprintln!("    {}", why);
                }
            }
        }
    }
    reset_sched_state();
    finish(true)
}

/// How long a progress check tolerates no progress at all: far beyond any
/// legitimate pause (a tick is 1-100 ms; host stalls of an emulator vCPU
/// seen here were 15 ms), and long enough for a vCPU the host keeps off its
/// core for seconds (the 5 s that Linux gives an arm64 CPU to come up, and
/// every wait on another CPU gets here: see "Waits on other CPUs" in
/// docs/design/kernel.md), below the runner's 10 s watchdog. The tests'
/// progress checks use it too.
pub const STALL_NS: u64 = 5_000_000_000;

/// How long the runner waits for a leftover thread that makes no progress
/// (no CPU time, no switch) before it gives up on it: as long as a test's
/// own progress checks, since the thread may be queued on a vCPU the host
/// keeps off its core.
const LEFTOVER_STALL_NS: u64 = STALL_NS;

/// Joins the threads that are live now but were not in `before`, waiting
/// while they still make progress. `Err` names one that is stuck.
fn reap_leftovers(before: &[task::Tid]) -> Result<(), String> {
    let mut last_progress = arch::now_ns();
    let mut last_seen = (0u64, 0u64);
    loop {
        let now: alloc::vec::Vec<task::Tid> = task::live_threads()
            .into_iter()
            .filter(|t| !before.contains(t) && *t != task::current_tid())
            .collect();
        if now.is_empty() {
            return Ok(());
        }
        let mut progress = (0u64, 0u64);
        for &tid in &now {
            if task::has_exited(tid) {
                let _ = task::join(tid);
                continue;
            }
            let th = task::thread(tid.idx());
            let (v, i) = th.switches();
            progress.0 = progress.0.wrapping_add(v + i);
            progress.1 = progress.1.wrapping_add(crate::sched::task_runtime_ns(th));
        }
        let t = arch::now_ns();
        if progress != last_seen {
            last_seen = progress;
            last_progress = t;
        } else if t - last_progress > LEFTOVER_STALL_NS {
            let names: alloc::vec::Vec<&str> = now
                .iter()
                .filter(|t| !task::has_exited(**t))
                .map(|t| task::thread(t.idx()).name())
                .collect();
            return Err(alloc::format!(
                "{:?} (no progress for {} s)",
                names,
                LEFTOVER_STALL_NS / 1_000_000_000
            ));
        }
        // Waiting on progress: the watchdog counts from the last of it.
        DEADLINE_NS.store(last_progress + TEST_TIMEOUT_NS, Ordering::SeqCst);
        task::sleep_ms(10);
    }
}

/// Runs `t` once in a fresh thread with a fresh scheduler state.
fn run_one(t: &'static KTest) -> TestResult {
    reset_sched_state();
    // Single-CPU tests on CPU 0; SMP tests anywhere.
    let mask = if t.smp {
        crate::cpumask::CpuMask::all()
    } else {
        crate::cpumask::only(CpuId::BOOT)
    };
    let result: Arc<SpinLock<Option<TestResult>>> = Arc::new(SpinLock::new(None));
    let slot = result.clone();
    let func = t.func;
    let index = registry()
        .iter()
        .position(|r| core::ptr::eq(r, t))
        .unwrap_or(usize::MAX);
    CURRENT.store(index, Ordering::SeqCst);
    START_NS.store(arch::now_ns(), Ordering::SeqCst);
    DEADLINE_NS.store(arch::now_ns() + TEST_TIMEOUT_NS, Ordering::SeqCst);
    let spawned = task::spawn_on(t.name, TaskParams::default(), mask, move || {
        let r = func();
        *slot.lock() = Some(r);
    });
    let outcome = match spawned {
        Ok(tid) => match task::join(tid) {
            Ok(_) => result
                .lock()
                .take()
                .unwrap_or_else(|| Err("the test thread left no result".into())),
            Err(e) => Err(alloc::format!("join failed: {:?}", e).into()),
        },
        Err(e) => Err(alloc::format!("spawn failed: {:?}", e).into()),
    };
    outcome
}

/// Context switches on all CPUs at the watchdog's last look.
static LAST_SWITCHES: AtomicU64 = AtomicU64::new(0);

/// From the tick: ends the run as a failure when the running test made no
/// progress for [`TEST_TIMEOUT_NS`] (or ran for [`TEST_HARD_LIMIT_NS`]).
pub fn watchdog_check() {
    let switches: u64 = CpuId::range(crate::sched::nr_runqueues())
        .map(|c| crate::percpu::cpu(c).switches.load(Ordering::Relaxed))
        .sum();
    if LAST_SWITCHES.swap(switches, Ordering::Relaxed) != switches {
        progress();
    }
    let deadline = DEADLINE_NS.load(Ordering::Relaxed);
    let now = arch::now_ns();
    if deadline != 0 && now > deadline {
        DEADLINE_NS.store(0, Ordering::SeqCst);
        let name = current_name().unwrap_or("?");
        let ran_s = now.saturating_sub(START_NS.load(Ordering::Relaxed)) / 1_000_000_000;
        // Which limit it was: a hang stands still; a livelock (or a very
        // slow host) keeps progressing until the hard limit.
        let why = if ran_s * 1_000_000_000 >= TEST_HARD_LIMIT_NS {
            "still progressing at the limit for a whole test (a livelock, or a very slow host?)"
        } else {
            "no progress for the stall limit (hung?)"
        };
        crate::console::claim_for_report();
        crate::console::emergency_write(format_args!(
            "test {} ... FAILED\n    timeout after {} s: {} (limits: {} s without progress, {} s in all)\n",
            name,
            ran_s,
            why,
            TEST_TIMEOUT_NS / 1_000_000_000,
            TEST_HARD_LIMIT_NS / 1_000_000_000
        ));
        FAILED.fetch_add(1, Ordering::Relaxed);
        task::dump_threads();
        finish(false);
    }
}

fn current_name() -> Option<&'static str> {
    registry()
        .get(CURRENT.load(Ordering::SeqCst))
        .map(|t| t.name)
}

/// The stall watchdog's notifier (`task::stall::set_notifier`, after its report): a runnable
/// thread did not run for `kernel.sched_stall_warn_ms`; if a test was
/// running, it fails and the run ends.
fn on_stall(thread: &str) {
    fail_running_test(format_args!(
        "stall: thread '{thread}' runnable without running for kernel.sched_stall_warn_ms"
    ));
}

/// The soft-lockup detector's notifier (`task::softlockup::set_notifier`, after its report): CPU
/// `cpu` had work queued and made no context switch for
/// `kernel.softlockup_thresh_ms`; if a test was running, it fails and the
/// run ends.
fn on_softlockup(cpu: CpuId) {
    fail_running_test(format_args!(
        "softlockup: cpu {cpu} made no context switch with work queued for kernel.softlockup_thresh_ms"
    ));
}

/// A watchdog's verdict: if a test is running, it fails with `why` and the
/// run ends (from interrupt context: emergency console only).
fn fail_running_test(why: core::fmt::Arguments) {
    if let Some(name) = current_name() {
        crate::console::claim_for_report();
        crate::console::emergency_write(format_args!("test {name} ... FAILED\n    {why}\n"));
        FAILED.fetch_add(1, Ordering::Relaxed);
        finish(false);
    }
}

/// The soft-lockup detector's threshold during the tests
/// (`reset_sched_state`): the stall watchdog's, for the same reason (a CPU
/// with work queued switches within a few slices, or a tick under the none
/// model once the running thread blocks; add host vCPU stalls).
pub const KTEST_SOFTLOCKUP_MS: &str = KTEST_STALL_WARN_MS;

/// The stall watchdog's threshold during the tests (`reset_sched_state`):
/// far above any legitimate wait (a runnable thread waits a few slices; on a
/// loaded host add vCPU stalls of ~15 ms), far below the no-progress watchdog.
pub const KTEST_STALL_WARN_MS: &str = "5000";

/// From the panic handler: if a test was running, report it as failed with the
/// panic message and end the run with the summary line.
pub fn on_panic(info: &core::panic::PanicInfo) {
    if let Some(name) = current_name() {
        crate::console::emergency_write(format_args!(
            "test {} ... FAILED\n    panic: {}\n",
            name, info
        ));
        FAILED.fetch_add(1, Ordering::Relaxed);
        finish(false);
    }
}
