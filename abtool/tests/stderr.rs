//! `abtool` with a stderr that fails (a closed pipe, `/dev/full`) while it
//! reports a bad argument: status 141 and 2, never a panic.

#[path = "../../sim/tests/broken_stderr/mod.rs"]
mod broken_stderr;

#[test]
fn a_broken_stderr_never_panics_abtool() {
    broken_stderr::check(
        env!("CARGO_BIN_EXE_abtool"),
        &["--bogus"],
        "error: abtool: unknown option",
        2,
    );
}
