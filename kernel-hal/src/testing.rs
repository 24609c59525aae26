//! The in-kernel test registry, for the kernel's tests and this crate's
//! own: the [`KTest`] record, the registration macros ([`ktest!`](crate::ktest),
//! [`ktest_smp!`](crate::ktest_smp), [`ktest_timing!`](crate::ktest_timing),
//! [`ktest_smp_timing!`](crate::ktest_smp_timing)) that put one into the
//! `.ktest` link section, the assertions ([`kassert!`](crate::kassert),
//! [`kassert_eq!`](crate::kassert_eq)), the skip ([`kskip!`](crate::kskip))
//! and [`registry`], which reads the section. The runner is the kernel's
//! (`ktest`).

use alloc::string::String;

/// What a test returns: `Ok` when it passed, else why not
/// ([`TestError`]). A test's `?` on a `Result<_, String>` fails it with that
/// string.
pub type TestResult = Result<(), TestError>;

/// Why a test did not pass.
#[derive(Debug)]
pub enum TestError {
    /// It ran and failed: the reason.
    Failed(String),
    /// It could not test what it is for in this boot (a feature a boot
    /// argument turned off, a topology without the level it needs): the
    /// reason. Reported and counted as skipped, never as passed
    /// ([`kskip!`](crate::kskip)).
    Skipped(String),
}

/// The reason, and `skipped (...)` around a skip's.
impl core::fmt::Display for TestError {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self {
            TestError::Failed(why) => f.write_str(why),
            TestError::Skipped(why) => write!(f, "skipped ({why})"),
        }
    }
}

impl From<String> for TestError {
    fn from(why: String) -> TestError {
        TestError::Failed(why)
    }
}

impl From<&str> for TestError {
    fn from(why: &str) -> TestError {
        TestError::Failed(why.into())
    }
}

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
    /// Which boot runs it.
    pub suite: Suite,
}

/// Which boot of `make test` runs a test (boot argument `ktest_suite=`).
pub use bootargs::KtestSuite as Suite;

/// Puts one [`KTest`] record into the `.ktest` section (what the public
/// registration macros expand to).
#[doc(hidden)]
#[macro_export]
macro_rules! __ktest_register {
    ($name:ident, $cpus:expr, $smp:expr, $suite:ident, $body:expr) => {
        const _: () = {
            // A plain record in the `.ktest` link section, which
            // `testing::registry` reads; no code runs from it. (The
            // attribute is this crate's, written here: the `unsafe_code`
            // lint does not count it against a crate that forbids
            // `unsafe` and registers tests with these macros.)
            #[used]
            #[link_section = ".ktest"]
            static KTEST: $crate::testing::KTest = $crate::testing::KTest {
                name: stringify!($name),
                func: $body,
                requires_cpus: $cpus,
                smp: $smp,
                suite: $crate::testing::Suite::$suite,
            };
        };
    };
}

/// Registers a test: `ktest!(name, || { ...; Ok(()) });`. The body is a
/// non-capturing closure returning [`TestResult`]. Concurrency suite (no time
/// bounds).
#[macro_export]
macro_rules! ktest {
    ($name:ident, $body:expr) => {
        $crate::__ktest_register!($name, 1, false, Concurrency, $body);
    };
}

/// Registers a multi-CPU test that needs at least `$cpus` online CPUs and runs
/// unpinned: `ktest_smp!(name, 2, || { ...; Ok(()) });`. With fewer CPUs the
/// runner reports it as skipped. Concurrency suite.
#[macro_export]
macro_rules! ktest_smp {
    ($name:ident, $cpus:expr, $body:expr) => {
        $crate::__ktest_register!($name, $cpus, true, Concurrency, $body);
    };
}

/// Registers a single-CPU test with time bounds (the timing suite, run in
/// the reproducible-time boot): `ktest_timing!(name, || { ...; Ok(()) });`.
#[macro_export]
macro_rules! ktest_timing {
    ($name:ident, $body:expr) => {
        $crate::__ktest_register!($name, 1, false, Timing, $body);
    };
}

/// Registers a multi-CPU test with time bounds (the timing suite).
#[macro_export]
macro_rules! ktest_smp_timing {
    ($name:ident, $cpus:expr, $body:expr) => {
        $crate::__ktest_register!($name, $cpus, true, Timing, $body);
    };
}

/// Fails the test with a formatted reason unless `cond` holds.
#[macro_export]
macro_rules! kassert {
    ($cond:expr) => {
        if $cond {
        } else {
            return Err(alloc::format!("assertion failed: {} ({}:{})", stringify!($cond), file!(), line!()).into());
        }
    };
    ($cond:expr, $($arg:tt)+) => {
        if $cond {
        } else {
            return Err(alloc::format!("{} ({}:{})", format_args!($($arg)+), file!(), line!()).into());
        }
    };
}

/// Ends the test as skipped with a formatted reason:
/// `kskip!("NOHZ_IDLE is off, boot argument nohz=off")`. Only for a precondition of this
/// boot without which the test cannot test what it is for (a feature a boot
/// argument turned off, a topology without the level the test needs); the
/// runner reports `test <name> ... skipped (<reason>)` and counts it with the
/// skipped tests, never as passed. Not for a failure, and not for a branch
/// of the test's own logic.
#[macro_export]
macro_rules! kskip {
    ($($arg:tt)+) => {
        return Err($crate::testing::TestError::Skipped(alloc::format!($($arg)+)))
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
            )
            .into());
        }
    }};
}

extern "C" {
    // Linker symbols (boot/'s linker scripts): only their addresses mean
    // anything.
    static __ktest_start: u8;
    static __ktest_end: u8;
}

/// The in-kernel test registry: the [`KTest`] records that `ktest!` places in
/// the `.ktest` link section, in link order.
pub fn registry() -> &'static [KTest] {
    let start = (&raw const __ktest_start).cast::<KTest>();
    let end = (&raw const __ktest_end).cast::<KTest>();
    let len = (end as usize - start as usize) / core::mem::size_of::<KTest>();
    // SAFETY: the linker scripts place only `KTest` records (repr(C), 8-byte
    // aligned, written by `ktest!`) between the two symbols, which live as
    // long as the kernel.
    unsafe { core::slice::from_raw_parts(start, len) }
}
