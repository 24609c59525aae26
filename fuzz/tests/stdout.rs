//! `fuzz` with stdout a pipe whose read end is closed (`fuzz ... | head` once
//! `head` has exited): the first write fails with `EPIPE` and ends `fuzz`
//! quietly with status 141, as SIGPIPE ends a C filter, not with a panic
//! (`sim/src/out.rs`, included as `mod out`).

use std::process::{Command, Stdio};

#[test]
fn a_closed_pipe_ends_fuzz_quietly_with_status_141() {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_fuzz"))
        .args(["--secs", "0", "--target", "sysctl"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("fuzz runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(stderr.is_empty(), "fuzz wrote to stderr: {stderr}");
}
