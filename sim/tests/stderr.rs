//! `sim` with a stderr that fails (a closed pipe, `/dev/full`) while it
//! reports a bad argument, from the binary (`sim --bogus`) and from the
//! library's study parser (`sim study --bogus`): status 141 and 2, never a
//! panic.

mod broken_stderr;

#[test]
fn a_broken_stderr_never_panics_sim() {
    let sim = env!("CARGO_BIN_EXE_sim");
    broken_stderr::check(sim, &["--bogus"], "error: unknown command", 2);
    broken_stderr::check(sim, &["study", "--bogus"], "error: unknown option", 2);
}
