//! `abtool` with stdout a pipe whose read end is closed (`abtool ... | head` once
//! `head` has exited): the first write fails with `EPIPE` and ends `abtool`
//! quietly with status 141, as SIGPIPE ends a C filter, not with a panic
//! (`sim::out`).

use std::process::{Command, Stdio};

#[test]
fn a_closed_pipe_ends_abtool_quietly_with_status_141() {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_abtool"))
        .args(["--help"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("abtool runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(stderr.is_empty(), "abtool wrote to stderr: {stderr}");
}
