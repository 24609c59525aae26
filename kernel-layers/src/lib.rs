//! The kernel's layering, checked: every `crate::MODULE` path in
//! `kernel/src` (a `use`, a `crate::{a, b}` group or a path in code) is an
//! import of that top-level module; an import of a module in a higher layer
//! than the importing file's is a violation.
//!
//! The layers and the upward imports still known are written in
//! `docs/design/kernel.md`, between the `layers:` and `known upward
//! imports:` markers of its "Layers" section, so the page and the check
//! cannot disagree. The check fails on an upward import that is not listed,
//! and on a listed one that is gone (the list only shrinks).
//!
//! Run it with `cargo test -p kernel-layers` (host).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// An import of module `to` by a file of module `from`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    /// The importing top-level module.
    pub from: String,
    /// The imported top-level module.
    pub to: String,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {}", self.from, self.to)
    }
}

/// The documented layering: each module's layer (0 = lowest) and the
/// upward imports still allowed.
#[derive(Debug, Default)]
pub struct Layering {
    /// Module -> layer index.
    pub layer: BTreeMap<String, usize>,
    /// Upward imports that are known and listed.
    pub known: BTreeSet<Edge>,
}

/// Reads the layering from the text of `docs/design/kernel.md`: inside a
/// fenced block, a line `layers:` starts lines `N: mod mod ...` (lowest
/// first), and a line `known upward imports:` starts lines `from -> to`.
pub fn parse_layering(doc: &str) -> Result<Layering, String> {
    #[derive(PartialEq)]
    enum Part {
        None,
        Layers,
        Known,
    }
    let mut out = Layering::default();
    let mut part = Part::None;
    let mut in_fence = false;
    for (n, raw) in doc.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with("```") {
            in_fence = !in_fence;
            if !in_fence {
                part = Part::None;
            }
            continue;
        }
        if !in_fence || line.is_empty() {
            continue;
        }
        match line {
            "layers:" => {
                part = Part::Layers;
                continue;
            }
            "known upward imports:" => {
                part = Part::Known;
                continue;
            }
            _ => {}
        }
        let bad = |what: &str| format!("line {}: {what}: {raw:?}", n + 1);
        match part {
            Part::None => {}
            Part::Layers => {
                let (idx, mods) = line
                    .split_once(':')
                    .ok_or_else(|| bad("want `N: modules`"))?;
                let idx: usize = idx.trim().parse().map_err(|_| bad("layer number"))?;
                for m in mods.split_whitespace() {
                    if out.layer.insert(m.to_string(), idx).is_some() {
                        return Err(bad("module in two layers"));
                    }
                }
            }
            Part::Known => {
                let (from, to) = line
                    .split_once("->")
                    .ok_or_else(|| bad("want `from -> to`"))?;
                out.known.insert(Edge {
                    from: from.trim().to_string(),
                    to: to.trim().to_string(),
                });
            }
        }
    }
    if out.layer.is_empty() {
        return Err("no `layers:` block found".into());
    }
    Ok(out)
}

/// `src` with comments, string and char literals blanked out (so a path in
/// a doc comment or a message is not an import).
pub fn strip_comments_and_strings(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == b'r' && matches!(b.get(i + 1), Some(b'"') | Some(b'#')) && !ident_byte(b, i)
        {
            // raw string r"..." / r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&b'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let rest = &src[i + 1..];
            let close = if let Some(esc) = rest.strip_prefix('\\') {
                esc.find('\'').map(|p| p + 2)
            } else {
                rest.chars()
                    .next()
                    .filter(|_| rest.chars().nth(1) == Some('\''))
                    .map(|ch| ch.len_utf8())
            };
            match close {
                Some(len) => {
                    out.push_str("' '");
                    i += 1 + len + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = src[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn ident_byte(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// The top-level modules `src` (one file, comments and strings stripped)
/// names through `crate::`: `crate::x`, `crate::x::...` and each first
/// segment of a `crate::{x, y::z}` group. A macro call `crate::m!` is not an
/// import.
pub fn imported_modules(src: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = src;
    while let Some(p) = rest.find("crate::") {
        let before_ok = p == 0 || !ident_byte(rest.as_bytes(), p) && rest.as_bytes()[p - 1] != b'$';
        let after = &rest[p + "crate::".len()..];
        rest = after;
        if !before_ok {
            continue;
        }
        if let Some(group) = after.strip_prefix('{') {
            let end = matching_brace(group);
            let mut depth = 0;
            let mut seg_start = true;
            let mut word = String::new();
            for ch in group[..end].chars() {
                if seg_start && (ch.is_alphanumeric() || ch == '_') {
                    word.push(ch);
                    continue;
                }
                if !word.is_empty() {
                    out.insert(std::mem::take(&mut word));
                    seg_start = false;
                }
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => seg_start = true,
                    _ => {}
                }
            }
            if !word.is_empty() {
                out.insert(word);
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let next = after[name.len()..].chars().next();
            if !name.is_empty() && next != Some('!') {
                out.insert(name);
            }
        }
    }
    out
}

fn matching_brace(s: &str) -> usize {
    let mut depth = 1;
    for (i, ch) in s.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// The top-level module a file of `kernel/src` belongs to, from its path
/// relative to `kernel/src` (`task/mod.rs` -> `task`, `console.rs` ->
/// `console`, `main.rs` -> `main`).
pub fn module_of(rel: &str) -> String {
    let first = rel.split('/').next().unwrap_or(rel);
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

/// What [`check`] found.
#[derive(Debug, Default)]
pub struct Report {
    /// Upward imports not in the known list: `(edge, a file that makes it)`.
    pub new_upward: Vec<(Edge, String)>,
    /// Known upward imports that no file makes any more.
    pub gone: Vec<Edge>,
    /// Modules of the tree the layering does not place.
    pub unplaced: BTreeSet<String>,
    /// Upward imports found in all (known or not).
    pub upward: BTreeSet<Edge>,
    /// Every import between two different modules.
    pub edges: BTreeSet<Edge>,
}

impl Report {
    /// Whether the tree matches the documented layering exactly.
    pub fn ok(&self) -> bool {
        self.new_upward.is_empty() && self.gone.is_empty() && self.unplaced.is_empty()
    }
}

/// Checks `files` (`(path relative to kernel/src, text)`) against `layering`.
pub fn check(layering: &Layering, files: &[(String, String)]) -> Report {
    let mut report = Report::default();
    let modules: BTreeSet<String> = files.iter().map(|(p, _)| module_of(p)).collect();
    for m in &modules {
        if !layering.layer.contains_key(m) {
            report.unplaced.insert(m.clone());
        }
    }
    let mut seen_new = BTreeSet::new();
    for (path, text) in files {
        let from = module_of(path);
        let Some(&from_layer) = layering.layer.get(&from) else {
            continue;
        };
        for to in imported_modules(&strip_comments_and_strings(text)) {
            if to == from || !modules.contains(&to) {
                continue;
            }
            let edge = Edge {
                from: from.clone(),
                to: to.clone(),
            };
            report.edges.insert(edge.clone());
            let Some(&to_layer) = layering.layer.get(&to) else {
                continue;
            };
            if to_layer > from_layer {
                report.upward.insert(edge.clone());
                if !layering.known.contains(&edge) && seen_new.insert(edge.clone()) {
                    report.new_upward.push((edge, path.clone()));
                }
            }
        }
    }
    report.gone = layering
        .known
        .iter()
        .filter(|e| !report.upward.contains(e))
        .cloned()
        .collect();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_paths_groups_and_skips_macros_comments_strings() {
        let src = r#"
            use crate::arch::{self, IrqGuard};
            use crate::{task, sync::SpinLock, percpu::{self, this_cpu}};
            // crate::shell in a comment
            /* crate::tests in a block comment */
            let s = "crate::workloads in a string";
            let c = '"'; let l: &'static str = "x";
            crate::ktest!(name, || Ok(()));
            $crate::kassert!(x);
            crate::console::write(b"x");
            notcrate::trace::x();
        "#;
        let got = imported_modules(&strip_comments_and_strings(src));
        let want: BTreeSet<String> = ["arch", "task", "sync", "percpu", "console"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn upward_import_is_reported_unless_known_and_known_must_exist() {
        let doc = "```\nlayers:\n0: low\n1: high\nknown upward imports:\nlow -> high\n```\n";
        let lay = parse_layering(doc).unwrap();
        let files = vec![
            ("low.rs".to_string(), "use crate::high::X;".to_string()),
            ("high/mod.rs".to_string(), "use crate::low::Y;".to_string()),
        ];
        assert!(check(&lay, &files).ok());
        // The upward import gone: the known list must shrink.
        let fixed = vec![
            ("low.rs".to_string(), String::new()),
            ("high/mod.rs".to_string(), "use crate::low::Y;".to_string()),
        ];
        let r = check(&lay, &fixed);
        assert!(!r.ok());
        assert_eq!(r.gone.len(), 1);
        // Not listed: reported with the file.
        let strict = parse_layering("```\nlayers:\n0: low\n1: high\n```\n").unwrap();
        let r = check(&strict, &files);
        assert_eq!(r.new_upward.len(), 1);
        assert_eq!(r.new_upward[0].1, "low.rs");
    }

    #[test]
    fn unplaced_module_and_bad_layer_lines_are_errors() {
        let lay = parse_layering("```\nlayers:\n0: a\n```\n").unwrap();
        let r = check(&lay, &[("b.rs".into(), String::new())]);
        assert!(r.unplaced.contains("b"));
        assert!(parse_layering("```\nlayers:\nx: a\n```\n").is_err());
        assert!(parse_layering("```\nlayers:\n0: a\n1: a\n```\n").is_err());
        assert!(parse_layering("no block").is_err());
    }
}
