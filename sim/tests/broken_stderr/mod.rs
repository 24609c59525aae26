//! Shared by the host tools' `tests/stderr.rs` (each includes this file
//! through `#[path]`): a tool whose stderr fails must not panic
//! (`eprintln!` did, and `panic = "abort"` made it a SIGABRT, status 134).
//! A closed pipe ends it quietly with status 141, as for stdout; any other
//! write error (`/dev/full`) is ignored and the tool ends with its own
//! status (`sim/src/out.rs`).

use std::fs::File;
use std::process::{Command, Output, Stdio};

fn run(bin: &str, args: &[&str], stderr: Stdio) -> Output {
    Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .output()
        .unwrap_or_else(|e| panic!("{bin} runs: {e}"))
}

/// Runs `bin args` three times: stderr a pipe (it must write a line that
/// starts with `first` and end with `status`, so the two other runs do
/// write to stderr); stderr a pipe whose read end is closed before `bin`
/// starts (status 141); stderr on `/dev/full` (status `status`). Stdout
/// stays empty in all three.
pub fn check(bin: &str, args: &[&str], first: &str, status: i32) {
    let out = run(bin, args, Stdio::piped());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(status), "{bin} {args:?}: {stderr}");
    assert!(
        stderr.starts_with(first) && stderr.ends_with('\n'),
        "{bin} {args:?} wrote to stderr: {stderr:?}"
    );
    assert!(out.stdout.is_empty(), "{bin} {args:?} wrote to stdout");

    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = run(bin, args, writer.into());
    assert_eq!(
        out.status.code(),
        Some(141),
        "{bin} {args:?}, stderr a closed pipe: {:?}",
        out.status
    );
    assert!(out.stdout.is_empty(), "{bin} {args:?} wrote to stdout");

    #[cfg(target_os = "linux")]
    {
        let full = File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = run(bin, args, full.into());
        assert_eq!(
            out.status.code(),
            Some(status),
            "{bin} {args:?}, stderr /dev/full: {:?}",
            out.status
        );
        assert!(out.stdout.is_empty(), "{bin} {args:?} wrote to stdout");
    }
}
