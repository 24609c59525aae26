//! `sim` with a stdout that fails: a closed pipe (`sim run ... | head -2`
//! once `head` has exited) ends it quietly with status 141, as SIGPIPE ends
//! a C filter; any other write error is one line on stderr and status 1.
//! Never a panic (`sim::out`).

use std::process::{Command, Output, Stdio};

const ARGS: [&str; 6] = ["run", "--machine", "small", "--ms", "20", "hackbench"];

/// `sim ARGS` with stdout the write end of a pipe whose read end is closed
/// before `sim` starts, so its first write fails with `EPIPE`.
fn with_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("sim runs")
}

#[test]
fn a_closed_pipe_ends_sim_quietly_with_status_141() {
    for args in [&ARGS[..], &["--help"]] {
        let out = with_closed_pipe(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "sim {args:?}: {stderr}");
        assert!(stderr.is_empty(), "sim {args:?} wrote to stderr: {stderr}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_one_line_on_stderr_and_status_1() {
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(ARGS)
        .stdout(full)
        .output()
        .expect("sim runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "error: sim: writing to stdout: No space left on device (os error 28)\n"
    );
}
