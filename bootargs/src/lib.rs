//! The kernel command line: `hz=N`, `ktest[=filter]`, `ktest_suite=SUITE`,
//! `ktest_repeat=N`, `preempt=MODE`, `idle_poll=US`, `nohz=on|off`, `seed=N`, `fault=CASE`
//! (a deliberate fault for the fault-report tests), `fail_alloc=PERCENT,SEED`
//! and `fail_cpu_start=N` (failures on demand), `cpu_capacity=A,B,...`
//! (each CPU's relative capacity, as a DT's `capacity-dmips-mhz`),
//! `schedstats=enable|disable` (the diagnostic wakeup counters, Linux's
//! spelling; the `kernel.sched_schedstats` sysctl's value from the boot on),
//! `acpi_rsdp=auto|efi|bios`
//! (x86_64: where the boot code looks for the ACPI RSDP first; checked here,
//! read by `boot`), and last
//! `run=CMD;CMD;...`, which takes the rest of the line (spaces included): a
//! shell script for the kernel to run before its first prompt (`make ab`
//! hands a reproducible boot its script this way). The kernel checks each
//! of its commands with the shell's parser before it uses it.
//!
//! Parsing never fails and never panics: an unknown word, a malformed number or
//! an out-of-range value is reported through `warn` (word and reason) and
//! ignored (the default stays). Pure and `no_std`, so the host tests and the
//! fuzzer (`make fuzz`) run it as the kernel does.
#![no_std]

use sched::PreemptMode;

/// Default tick rate.
pub const DEFAULT_HZ: u32 = 250;
/// Accepted tick rates.
pub const HZ_RANGE: core::ops::RangeInclusive<u32> = 10..=1000;

/// Most rounds `ktest_repeat=` accepts.
pub const KTEST_REPEAT_MAX: u32 = 10_000;

/// Highest CPU index `fail_cpu_start=` accepts (the kernel's `MAX_CPUS`
/// is 256; the kernel also checks it against the CPUs it has).
pub const FAIL_CPU_START_MAX: usize = 255;

/// Largest value `cpu_capacity=` takes for one CPU.
pub const CPU_CAPACITY_MAX: u32 = 1_000_000;
/// Most CPUs `cpu_capacity=` lists (the kernel's `MAX_CPUS`).
pub const CPU_CAPACITY_CPUS: usize = 256;

/// `cpu_capacity=A,B,...`: CPU i's raw capacity is the i-th value (the
/// scheduler normalises them so the biggest CPU has 1024). Each value
/// 1..=[`CPU_CAPACITY_MAX`], at most [`CPU_CAPACITY_CPUS`] of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuCapacities {
    raw: [u32; CPU_CAPACITY_CPUS],
    len: usize,
}

impl CpuCapacities {
    /// Parses `A,B,...`; the error says what is wrong.
    pub fn parse(v: &str) -> Result<CpuCapacities, &'static str> {
        let mut c = CpuCapacities {
            raw: [0; CPU_CAPACITY_CPUS],
            len: 0,
        };
        for part in v.split(',') {
            let n: u32 = part.parse().map_err(|_| {
                "cpu_capacity must be numbers separated by commas (530,530,1024,1024)"
            })?;
            if !(1..=CPU_CAPACITY_MAX).contains(&n) {
                return Err("cpu_capacity values must be 1..=1000000");
            }
            if c.len == CPU_CAPACITY_CPUS {
                return Err("cpu_capacity lists more than 256 CPUs");
            }
            c.raw[c.len] = n;
            c.len += 1;
        }
        Ok(c)
    }

    /// The values, CPU 0 first.
    pub fn as_slice(&self) -> &[u32] {
        &self.raw[..self.len]
    }
}

/// Longest idle polling window accepted, us.
pub const IDLE_POLL_MAX_US: u64 = 1000;

/// Which in-kernel test suite a boot runs (`ktest_suite=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum KtestSuite {
    /// Functional and race tests: multi-threaded TCG (real parallelism).
    Concurrency,
    /// Tests with time bounds: the reproducible-time (`-icount`) boot.
    Timing,
}

impl KtestSuite {
    /// Parses `timing` / `concurrency`.
    pub fn from_name(s: &str) -> Option<KtestSuite> {
        match s {
            "timing" => Some(KtestSuite::Timing),
            "concurrency" => Some(KtestSuite::Concurrency),
            _ => None,
        }
    }

    /// The name `from_name` reads.
    pub fn name(self) -> &'static str {
        match self {
            KtestSuite::Timing => "timing",
            KtestSuite::Concurrency => "concurrency",
        }
    }
}

/// A deliberate fault (`fault=CASE`), one per boot, for the fault-report
/// tests (`scripts/test/fault-test.sh`): the kernel triggers it instead of
/// starting the shell or the tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FaultCase {
    /// Unbounded recursion in a thread: overflows its stack.
    Recursion = 1,
    /// A thread calls a function whose frame (48 KiB) is larger than its
    /// whole stack and than the guard below it.
    HugeFrame,
    /// Unbounded recursion on CPU 1's idle stack, during its bring-up.
    IdleStack,
    /// Unbounded recursion on CPU 0's idle stack (the boot context), during
    /// boot.
    BootStack,
    /// A thread overflows its stack, and the report of that overflows the
    /// stack it runs on (CPU 0's exception stack).
    ExceptionStack,
    /// Unbounded recursion on the boot stack itself, early in boot (before
    /// the heap and the scheduler's threads exist).
    EarlyStack,
    /// The boot stack overflows, and the report of that overflows the
    /// boot CPU's static exception stack it runs on.
    EarlyExceptionStack,
    /// A thread reads through a wild pointer (an unmapped address).
    WildPointer,
    /// A thread executes an undefined instruction.
    Undefined,
    /// A thread panics.
    Panic,
    /// A thread pinned to CPU 1 panics.
    ApPanic,
    /// CPU 1 reads through a wild pointer before it has an idle thread.
    Bringup,
    /// Unbounded recursion on CPU 1 in the arch layer's bring-up code,
    /// before generic code runs (aarch64: on its bootstrap stack; x86_64:
    /// an AP starts on its idle thread's stack).
    BringupStack,
}

impl FaultCase {
    /// Every case, in `name` order of the docs.
    pub const ALL: [FaultCase; 13] = [
        FaultCase::Recursion,
        FaultCase::HugeFrame,
        FaultCase::IdleStack,
        FaultCase::BootStack,
        FaultCase::ExceptionStack,
        FaultCase::EarlyStack,
        FaultCase::EarlyExceptionStack,
        FaultCase::WildPointer,
        FaultCase::Undefined,
        FaultCase::Panic,
        FaultCase::ApPanic,
        FaultCase::Bringup,
        FaultCase::BringupStack,
    ];

    /// The name `fault=` takes.
    pub fn name(self) -> &'static str {
        match self {
            FaultCase::Recursion => "recursion",
            FaultCase::HugeFrame => "huge_frame",
            FaultCase::IdleStack => "idle_stack",
            FaultCase::BootStack => "boot_stack",
            FaultCase::ExceptionStack => "exception_stack",
            FaultCase::EarlyStack => "early_stack",
            FaultCase::EarlyExceptionStack => "early_exception_stack",
            FaultCase::WildPointer => "wild_pointer",
            FaultCase::Undefined => "undefined",
            FaultCase::Panic => "panic",
            FaultCase::ApPanic => "ap_panic",
            FaultCase::Bringup => "bringup",
            FaultCase::BringupStack => "bringup_stack",
        }
    }

    /// Parses a [`name`](Self::name).
    pub fn from_name(s: &str) -> Option<FaultCase> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Whether the case needs a second CPU.
    pub fn needs_cpu1(self) -> bool {
        matches!(
            self,
            FaultCase::IdleStack
                | FaultCase::ApPanic
                | FaultCase::Bringup
                | FaultCase::BringupStack
        )
    }
}

/// What the command line asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootArgs<'a> {
    /// Tick rate.
    pub hz: u32,
    /// Run the in-kernel tests whose name contains this filter (`""`: all).
    pub ktest: Option<&'a str>,
    /// Only this suite of them (`None`: every suite).
    pub ktest_suite: Option<KtestSuite>,
    /// `ktest_repeat=N`: run the selected tests N times over (1..=
    /// [`KTEST_REPEAT_MAX`]; default 1), to hunt a rare failure in one boot.
    pub ktest_repeat: u32,
    /// Preemption model, when given.
    pub preempt: Option<PreemptMode>,
    /// How long an idle CPU polls before it halts, us, when given.
    pub idle_poll_us: Option<u64>,
    /// Tickless idle (idle CPUs other than CPU 0 stop their tick), when given.
    pub nohz: Option<bool>,
    /// `seed=N`: seeds the pauses `compare` takes before each run.
    pub seed: Option<u64>,
    /// `run=...`: the rest of the line, a `;`-separated shell script (not
    /// checked here).
    pub run: Option<&'a str>,
    /// `fault=CASE`: a deliberate fault instead of the shell or the tests.
    pub fault: Option<FaultCase>,
    /// `fail_alloc=PERCENT,SEED`: failing allocations on demand, from the
    /// end of the boot on.
    pub fail_alloc: Option<FailAlloc>,
    /// `fail_cpu_start=N`: the first start of secondary CPU N is given up
    /// at once, as if it had not come up in time, so that the boot's second
    /// try (a real path on a host that keeps a vCPU off for seconds) runs.
    pub fail_cpu_start: Option<usize>,
    /// `cpu_capacity=A,B,...`: each CPU's relative capacity, over what the
    /// firmware says (the kernel checks the count against its CPUs).
    pub cpu_capacity: Option<CpuCapacities>,
    /// `schedstats=enable|disable`: the diagnostic wakeup counters on or
    /// off from the boot on (`disable` also keeps `compare` from turning
    /// them on for its runs), when given.
    pub schedstats: Option<bool>,
}

impl Default for BootArgs<'_> {
    fn default() -> Self {
        BootArgs {
            hz: DEFAULT_HZ,
            ktest: None,
            ktest_suite: None,
            ktest_repeat: 1,
            preempt: None,
            idle_poll_us: None,
            nohz: None,
            seed: None,
            run: None,
            fault: None,
            fail_alloc: None,
            fail_cpu_start: None,
            cpu_capacity: None,
            schedstats: None,
        }
    }
}

/// Failing allocations on demand (`fail_alloc=PERCENT,SEED`, or the
/// `debug.fail_alloc` sysctl): each allocation that may fail does so with
/// probability PERCENT %, decided by a PRNG stream seeded with SEED (so a
/// run's sequence of decisions is reproducible). `0,SEED` or `off`: never.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailAlloc {
    /// Percent of allocations failed, 0..=100.
    pub percent: u32,
    /// The PRNG's seed.
    pub seed: u64,
}

impl FailAlloc {
    /// Parses `PERCENT,SEED` (PERCENT in 0..=100, SEED a decimal u64) or
    /// `off`; the error says what is accepted.
    pub fn parse(v: &str) -> Result<FailAlloc, &'static str> {
        if v == "off" {
            return Ok(FailAlloc::default());
        }
        let Some((p, s)) = v.split_once(',') else {
            return Err("fail_alloc must be PERCENT,SEED (e.g. 10,1) or off");
        };
        let percent = match p.parse::<u32>() {
            Ok(p) if p <= 100 => p,
            Ok(_) => return Err("fail_alloc: PERCENT out of range 0..=100"),
            Err(_) => return Err("fail_alloc: PERCENT is not a number (PERCENT,SEED)"),
        };
        let seed = s
            .parse::<u64>()
            .map_err(|_| "fail_alloc: SEED must be a decimal integer (PERCENT,SEED)")?;
        Ok(FailAlloc { percent, seed })
    }
}

impl core::fmt::Display for FailAlloc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.percent == 0 {
            f.write_str("off")
        } else {
            write!(f, "{},{}", self.percent, self.seed)
        }
    }
}

/// The `kernel.sched_schedstats` sysctl's value, as Linux takes it: `1`
/// (count the diagnostic wakeup counters) or `0`; the error says what is
/// accepted.
pub fn parse_schedstats_sysctl(v: &str) -> Result<bool, &'static str> {
    match v {
        "1" => Ok(true),
        "0" => Ok(false),
        _ => Err("kernel.sched_schedstats must be 1 (count) or 0 (do not)"),
    }
}

/// Parses `cmdline`, calling `warn` once per ignored word with the reason.
pub fn parse<'a>(cmdline: &'a str, mut warn: impl FnMut(&str, &str)) -> BootArgs<'a> {
    let mut args = BootArgs::default();
    // `run=` (at the start of a word) takes the rest of the line.
    let (cmdline, run) = match cmdline.find("run=") {
        Some(i) if i == 0 || cmdline.as_bytes()[i - 1].is_ascii_whitespace() => {
            (&cmdline[..i], Some(&cmdline[i + 4..]))
        }
        _ => (cmdline, None),
    };
    args.run = run;
    for word in cmdline.split_ascii_whitespace() {
        let (key, value) = match word.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (word, None),
        };
        match (key, value) {
            ("hz", Some(v)) => match v.parse::<u32>() {
                Ok(hz) if HZ_RANGE.contains(&hz) => args.hz = hz,
                Ok(_) => warn(word, "hz out of range 10..=1000; keeping the default"),
                Err(_) => warn(word, "hz is not a number; keeping the default"),
            },
            ("hz", None) => warn(word, "hz needs a value (hz=250)"),
            ("ktest", None) => args.ktest = Some(""),
            ("ktest", Some(f)) => args.ktest = Some(f),
            ("ktest_suite", Some("all")) => args.ktest_suite = None,
            ("ktest_suite", Some(v)) => match KtestSuite::from_name(v) {
                Some(s) => args.ktest_suite = Some(s),
                None => warn(word, "ktest_suite must be timing, concurrency or all"),
            },
            ("ktest_suite", None) => warn(word, "ktest_suite needs a value (ktest_suite=timing)"),
            ("ktest_repeat", Some(v)) => match v.parse::<u32>() {
                Ok(n) if (1..=KTEST_REPEAT_MAX).contains(&n) => args.ktest_repeat = n,
                Ok(_) => warn(word, "ktest_repeat out of range 1..=10000; keeping 1"),
                Err(_) => warn(word, "ktest_repeat is not a number; keeping 1"),
            },
            ("ktest_repeat", None) => warn(word, "ktest_repeat needs a value (ktest_repeat=20)"),
            ("preempt", Some(v)) => match PreemptMode::from_name(v) {
                Some(m) => args.preempt = Some(m),
                None => warn(word, "preempt must be none, voluntary, full or lazy"),
            },
            ("preempt", None) => warn(word, "preempt needs a value (preempt=full)"),
            ("idle_poll", Some(v)) => match v.parse::<u64>() {
                Ok(us) if us <= IDLE_POLL_MAX_US => args.idle_poll_us = Some(us),
                Ok(_) => warn(
                    word,
                    "idle_poll out of range 0..=1000 (us); keeping the default",
                ),
                Err(_) => warn(word, "idle_poll is not a number; keeping the default"),
            },
            ("idle_poll", None) => warn(word, "idle_poll needs a value in us (idle_poll=50)"),
            ("nohz", Some("on")) => args.nohz = Some(true),
            ("nohz", Some("off")) => args.nohz = Some(false),
            ("nohz", _) => warn(word, "nohz must be on or off"),
            ("schedstats", Some("enable")) => args.schedstats = Some(true),
            ("schedstats", Some("disable")) => args.schedstats = Some(false),
            ("schedstats", _) => warn(word, "schedstats must be enable or disable"),
            ("seed", Some(v)) => match v.parse::<u64>() {
                Ok(n) => args.seed = Some(n),
                Err(_) => warn(word, "seed must be a decimal integer"),
            },
            ("seed", None) => warn(word, "seed needs a value (seed=1)"),
            ("fault", Some(v)) => match FaultCase::from_name(v) {
                Some(c) => args.fault = Some(c),
                None => warn(
                    word,
                    "fault must be recursion, huge_frame, idle_stack, boot_stack, exception_stack, early_stack, early_exception_stack, wild_pointer, undefined, panic, ap_panic, bringup or bringup_stack",
                ),
            },
            ("fault", None) => warn(word, "fault needs a value (fault=recursion)"),
            ("fail_alloc", Some(v)) => match FailAlloc::parse(v) {
                Ok(f) => args.fail_alloc = Some(f),
                Err(e) => warn(word, e),
            },
            ("fail_alloc", None) => warn(word, "fail_alloc needs a value (fail_alloc=10,1)"),
            ("fail_cpu_start", Some(v)) => match v.parse::<usize>() {
                Ok(n) if (1..=FAIL_CPU_START_MAX).contains(&n) => args.fail_cpu_start = Some(n),
                Ok(_) => warn(
                    word,
                    "fail_cpu_start out of range 1..=255 (a secondary CPU's index)",
                ),
                Err(_) => warn(word, "fail_cpu_start is not a number"),
            },
            ("cpu_capacity", Some(v)) => match CpuCapacities::parse(v) {
                Ok(c) => args.cpu_capacity = Some(c),
                Err(e) => warn(word, e),
            },
            ("cpu_capacity", None) => warn(word, "cpu_capacity needs a value (cpu_capacity=530,1024)"),
            ("fail_cpu_start", None) => {
                warn(word, "fail_cpu_start needs a value (fail_cpu_start=1)")
            }
            // Read by the x86_64 boot code (boot/src/x86_64/rsdp.rs) before
            // the kernel runs: which RSDP sources to skip, for the tests.
            ("acpi_rsdp", Some("auto" | "efi" | "bios")) => {}
            ("acpi_rsdp", _) => warn(word, "acpi_rsdp must be auto, efi or bios"),
            _ => warn(word, "unknown argument"),
        }
    }
    args
}
