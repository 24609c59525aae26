//! In-kernel tests: registration next to the code under test, and the runner.
//!
//! Registration works on stable Rust without `custom_test_frameworks`: the
//! [`ktest!`](crate::ktest) macro puts a [`KTest`] record into the `.ktest` link
//! section, which both arch linker scripts KEEP between the symbols
//! `__ktest_start` and `__ktest_end`; the runner reads that array.
//!
//! The runner (boot argument `ktest`, or `ktest=<substring>` to filter by name)
//! runs each test in a fresh thread with default scheduler features and the
//! boot preemption model, prints `test <name> ... ok` or `test <name> ... FAILED`
//! plus the reason, then `N passed, M failed, K skipped`, and ends QEMU:
//! success iff nothing failed and at least one test ran. A failing test is
//! run again, up to [`ATTEMPTS`] times in all, with every failed attempt
//! printed (`(attempt 1 of 3 failed, retrying: ...)`): timing bounds are wide,
//! but an emulated CPU can be descheduled by the host mid-measurement.
//!
//! CPUs: a [`ktest!`](crate::ktest) test measures single-CPU behaviour, so its
//! thread (and every thread it spawns, which inherit its affinity) is pinned
//! to CPU 0: the same test means the same thing at any CPU count. A
//! [`ktest_smp!`](crate::ktest_smp) test runs unpinned and declares the CPUs
//! it needs; with fewer online it is not run but reported as
//! `test <name> ... skipped (needs N CPUs, M online)` and counted in the
//! `skipped` figure (never as passed). The SMP runs of `make test` fail
//! unless that figure is 0. A watchdog in the tick ends the run
//! as a failure when a test takes longer than [`TEST_TIMEOUT_NS`], so a hung test
//! (even one that spins with preemption off) cannot hang the run; a panic in a
//! test is reported the same way by the panic handler.

use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use sched::{Feature, PreemptMode, TaskParams};

use crate::arch;
use crate::sync::SpinLock;
use crate::task;

/// What a test returns: `Err` carries the failure reason.
pub type TestResult = Result<(), String>;

/// One registered test.
#[repr(C)]
pub struct KTest {
    /// Its name (the filter matches substrings of it).
    pub name: &'static str,
    /// The test body.
    pub func: fn() -> TestResult,
    /// CPUs that must be online for the test to run (1: any machine).
    pub requires_cpus: usize,
    /// Run unpinned (SMP tests) instead of pinned to CPU 0.
    pub smp: bool,
}

/// Registers a test: `ktest!(name, || { ...; Ok(()) });`. The body is a
/// non-capturing closure returning [`TestResult`].
#[macro_export]
macro_rules! ktest {
    ($name:ident, $body:expr) => {
        const _: () = {
            #[used]
            #[link_section = ".ktest"]
            static KTEST: $crate::ktest::KTest = $crate::ktest::KTest {
                name: stringify!($name),
                func: $body,
                requires_cpus: 1,
                smp: false,
            };
        };
    };
}

/// Registers a multi-CPU test that needs at least `$cpus` online CPUs and runs
/// unpinned: `ktest_smp!(name, 2, || { ...; Ok(()) });`. With fewer CPUs the
/// runner reports it as skipped.
#[macro_export]
macro_rules! ktest_smp {
    ($name:ident, $cpus:expr, $body:expr) => {
        const _: () = {
            #[used]
            #[link_section = ".ktest"]
            static KTEST: $crate::ktest::KTest = $crate::ktest::KTest {
                name: stringify!($name),
                func: $body,
                requires_cpus: $cpus,
                smp: true,
            };
        };
    };
}

/// Fails the test with a formatted reason unless `cond` holds.
#[macro_export]
macro_rules! kassert {
    ($cond:expr) => {
        if $cond {
        } else {
            return Err(alloc::format!("assertion failed: {} ({}:{})", stringify!($cond), file!(), line!()));
        }
    };
    ($cond:expr, $($arg:tt)+) => {
        if $cond {
        } else {
            return Err(alloc::format!("{} ({}:{})", format_args!($($arg)+), file!(), line!()));
        }
    };
}

/// Fails the test unless the two values are equal.
#[macro_export]
macro_rules! kassert_eq {
    ($a:expr, $b:expr) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err(alloc::format!(
                "{} == {} failed: {:?} != {:?} ({}:{})",
                stringify!($a),
                stringify!($b),
                a,
                b,
                file!(),
                line!()
            ));
        }
    }};
}

/// Longest a single test may take (its own bounds are much tighter; this only
/// catches hangs).
pub const TEST_TIMEOUT_NS: u64 = 10_000_000_000;

extern "C" {
    // Linker symbols: only their addresses mean anything.
    static __ktest_start: u8;
    static __ktest_end: u8;
}

/// Every registered test, in link order.
pub fn registry() -> &'static [KTest] {
    let start = (&raw const __ktest_start).cast::<KTest>();
    let end = (&raw const __ktest_end).cast::<KTest>();
    let len = (end as usize - start as usize) / core::mem::size_of::<KTest>();
    // SAFETY: the linker script places only `KTest` records (repr(C), 8-byte
    // aligned, written by `ktest!`) between the two symbols.
    unsafe { core::slice::from_raw_parts(start, len) }
}

static PASSED: AtomicU32 = AtomicU32::new(0);
static FAILED: AtomicU32 = AtomicU32::new(0);
static SKIPPED: AtomicU32 = AtomicU32::new(0);
static CURRENT: AtomicPtr<KTest> = AtomicPtr::new(core::ptr::null_mut());
static DEADLINE_NS: AtomicU64 = AtomicU64::new(0);

/// The boot-time preemption model, restored before every test.
static BOOT_PREEMPT: AtomicU32 = AtomicU32::new(PreemptMode::Full as u32);

/// Puts the scheduler back to its boot state: default features, boot
/// preemption model, default base slice.
pub fn reset_sched_state() {
    let cfg = task::sched_config();
    for &f in Feature::ALL {
        cfg.features.set(f, f.default_enabled());
    }
    let mode = PreemptMode::ALL
        .into_iter()
        .find(|m| *m as u32 == BOOT_PREEMPT.load(Ordering::Relaxed))
        .unwrap_or(PreemptMode::Full);
    cfg.tunables.set_preempt_mode(mode);
    let _ = cfg.tunables.set("kernel.sched_base_slice_ns", "700000");
}

fn finish(code_ok: bool) -> ! {
    let (p, f, k) = (
        PASSED.load(Ordering::Relaxed),
        FAILED.load(Ordering::Relaxed),
        SKIPPED.load(Ordering::Relaxed),
    );
    crate::console::emergency_write(format_args!("{} passed, {} failed, {} skipped\n", p, f, k));
    arch::exit_qemu(if code_ok && f == 0 && p > 0 {
        arch::ExitCode::Success
    } else {
        arch::ExitCode::Failure
    })
}

/// Runs the tests whose name contains `filter`, then ends QEMU with the verdict.
pub fn run(filter: &'static str) -> ! {
    BOOT_PREEMPT.store(task::preempt_mode() as u32, Ordering::Relaxed);
    let tests = registry();
    let selected = tests.iter().filter(|t| t.name.contains(filter)).count();
    crate::kprintln!(
        "ktest: running {} of {} tests (filter '{}')",
        selected,
        tests.len(),
        filter
    );
    for t in tests.iter().filter(|t| t.name.contains(filter)) {
        let online = task::nr_cpus();
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
        let mut attempt = 1;
        let outcome = loop {
            let r = run_one(t);
            match r {
                Err(why) if attempt < ATTEMPTS => {
                    crate::kprintln!(
                        "    (attempt {} of {} failed, retrying: {})",
                        attempt,
                        ATTEMPTS,
                        why
                    );
                    attempt += 1;
                }
                r => break r,
            }
        };
        match outcome {
            Ok(()) => {
                PASSED.fetch_add(1, Ordering::Relaxed);
                crate::kprintln!("test {} ... ok", t.name);
            }
            Err(why) => {
                FAILED.fetch_add(1, Ordering::Relaxed);
                crate::kprintln!("test {} ... FAILED", t.name);
                crate::kprintln!("    {}", why);
            }
        }
    }
    reset_sched_state();
    finish(true)
}

/// Runs attempts of a failing test. Timing-dependent assertions have wide,
/// justified bounds, but the emulator's vCPUs can still be descheduled by the
/// host for 10-15 ms at a time (the 4-CPU runs put 4 vCPU threads on a 2-core
/// host), which spoils one measurement, not the scheduler's behaviour. A test
/// that fails is therefore run again, up to this many times in all; every
/// failed attempt and its reason is printed, so flakiness stays visible, and a
/// real fault fails every attempt.
const ATTEMPTS: u32 = 3;

/// One attempt of `t` in a fresh thread with a fresh scheduler state.
fn run_one(t: &'static KTest) -> TestResult {
    reset_sched_state();
    // Single-CPU tests on CPU 0; SMP tests anywhere.
    let mask = if t.smp { u64::MAX } else { 1 };
    let result: Arc<SpinLock<Option<TestResult>>> = Arc::new(SpinLock::new(None));
    let slot = result.clone();
    let func = t.func;
    CURRENT.store(t as *const KTest as *mut KTest, Ordering::SeqCst);
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
            Err(e) => Err(alloc::format!("join failed: {:?}", e)),
        },
        Err(e) => Err(alloc::format!("spawn failed: {:?}", e)),
    };
    DEADLINE_NS.store(0, Ordering::SeqCst);
    CURRENT.store(core::ptr::null_mut(), Ordering::SeqCst);
    outcome
}

/// From the tick: ends the run as a failure when the running test overran.
pub fn watchdog_check() {
    let deadline = DEADLINE_NS.load(Ordering::Relaxed);
    if deadline != 0 && arch::now_ns() > deadline {
        DEADLINE_NS.store(0, Ordering::SeqCst);
        let name = current_name().unwrap_or("?");
        crate::console::emergency_write(format_args!(
            "test {} ... FAILED\n    timeout: no result after {} s (hung?)\n",
            name,
            TEST_TIMEOUT_NS / 1_000_000_000
        ));
        FAILED.fetch_add(1, Ordering::Relaxed);
        task::dump_threads();
        finish(false);
    }
}

fn current_name() -> Option<&'static str> {
    let p = CURRENT.load(Ordering::SeqCst);
    // SAFETY: CURRENT is null or points at a record of the 'static registry.
    unsafe { p.as_ref() }.map(|t| t.name)
}

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
