//! sched's integration tests, one module per file of this folder, linked
//! into one test binary instead of one binary per file, each of which
//! compiled its own copy of `common` and linked sched and its dependencies
//! again (docs/testing.md has the build times before and after).
//! Cargo's automatic test targets are off (`autotests = false`), so a file
//! here runs only once it is named below (or gets a `[[test]]` entry of its
//! own): `every_test_file_is_a_module` fails until it is. A test's name is
//! its file's, then its own: `cargo test -p sched --test integration
//! hotplug::` runs one file's tests. The modules behind a feature are
//! built with it (`make test` turns on `axsched` and `oracle`).
//!
//! `memory.rs` stays a binary of its own: it installs a counting global
//! allocator, which would serve every test of a shared process.

mod common;

mod active_balance;
#[cfg(feature = "axsched")]
mod axsched;
#[cfg(feature = "axsched")]
mod axtask;
mod balance_interval;
mod balance_pelt;
mod balance_rules;
mod capacity;
mod classes;
mod clock_skip;
mod deadline;
mod deadline_capacity;
mod deadline_place;
mod deadline_smp;
mod deadline_timer;
mod duty_place_lag;
mod eevdf;
#[cfg(feature = "oracle")]
mod fair_server;
mod groups;
mod groups_balance;
#[cfg(feature = "oracle")]
mod groups_oracle;
mod groups_pelt;
mod groups_smp;
mod hotplug;
mod hrtick;
mod lb_stats;
mod lifecycle;
mod newidle;
mod nohz_idle_balance;
mod nohz_misfit;
#[cfg(feature = "oracle")]
mod oracle;
mod pelt;
mod pelt_clock;
mod pelt_rq;
mod place_lag;
mod rt_push;
#[cfg(feature = "oracle")]
mod server_fast_path;
mod set_wakee_flips;
mod sis_util;
mod slots;
mod smp;
mod task_sched_runtime;
mod topology;
mod util_est;
mod wake_affine;
mod wakeup_rows;

/// Test files that are targets of their own in Cargo.toml, not modules here.
const OWN_TARGETS: &[&str] = &["integration", "memory"];

#[test]
fn every_test_file_is_a_module() {
    let root = include_str!("integration.rs");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("sched/tests is readable") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 name");
        if OWN_TARGETS.contains(&stem) {
            continue;
        }
        assert!(
            root.contains(&format!("\nmod {stem};\n")),
            "tests/{stem}.rs is neither a module of tests/integration.rs nor in OWN_TARGETS: it would never run"
        );
        seen += 1;
    }
    // Every module but `common` is a file of this folder.
    let modules = root.matches("\nmod ").count() - 1;
    assert_eq!(
        seen,
        modules,
        "test files in {} against modules here",
        dir.display()
    );
}
