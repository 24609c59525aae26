//! The kernel crate against the layering in `docs/design/kernel.md`.

use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .replace('\\', "/");
            let text = fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            out.push((rel, text));
        }
    }
}

#[test]
fn kernel_imports_follow_the_documented_layers() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc =
        fs::read_to_string(repo.join("docs/design/kernel.md")).expect("docs/design/kernel.md");
    let layering =
        kernel_layers::parse_layering(&doc).expect("the Layers section of docs/design/kernel.md");
    let src = repo.join("kernel/src");
    let mut files = Vec::new();
    rust_files(&src, &src, &mut files);
    assert!(
        files.len() > 50,
        "kernel/src looks empty: {} files",
        files.len()
    );
    let report = kernel_layers::check(&layering, &files);
    let mut problems = Vec::new();
    for m in &report.unplaced {
        problems.push(format!(
            "module `{m}` is in no layer of docs/design/kernel.md"
        ));
    }
    for (edge, file) in &report.new_upward {
        problems.push(format!(
            "upward import {edge} (kernel/src/{file}): remove it, or move a module"
        ));
    }
    for edge in &report.gone {
        problems.push(format!(
            "{edge} is listed as a known upward import but is gone: delete the line"
        ));
    }
    println!(
        "{} imports between modules, {} upward (all listed as known)",
        report.edges.len(),
        report.upward.len()
    );
    assert!(
        problems.is_empty(),
        "layering:\n  {}",
        problems.join("\n  ")
    );
}
