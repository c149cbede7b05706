//! `unsafe` stays in one small module per crate (docs/architecture.md,
//! "Privileges and unsafe code"): every Rust file of the workspace is read,
//! and a line with `unsafe` code outside those modules fails this test, as
//! does an `unsafe` block inside them without a `// SAFETY:` comment just
//! above it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The modules that may hold `unsafe` code.
const ALLOWED: &[&str] = &[
    "proto/src/sys/",
    "nodeagent/src/sys/",
    "cli/src/sys.rs",
    "tests/src/sys.rs",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if name != "target" && !name.starts_with('.') {
                sources(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

/// The code of a line: no `//` comment, no string literal.
fn code(line: &str) -> String {
    let mut out = String::new();
    let mut in_str = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_str => {
                chars.next();
            }
            '"' => in_str = !in_str,
            '/' if !in_str && chars.peek() == Some(&'/') => break,
            _ if !in_str => out.push(c),
            _ => {}
        }
    }
    out
}

fn is_unsafe_code(line: &str) -> bool {
    let c = code(line);
    c.split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
        .any(|w| w == "unsafe")
        && !c.contains("unsafe_code")
}

#[test]
fn unsafe_code_stays_in_the_sys_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    sources(root, &mut files);
    assert!(
        files.len() > 200,
        "the walk found the sources ({})",
        files.len()
    );
    let mut outside = Vec::new();
    let mut unexplained = Vec::new();
    let mut per_crate: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let allowed = ALLOWED.iter().any(|a| rel.starts_with(a));
        for (n, line) in lines.iter().enumerate() {
            if !is_unsafe_code(line) {
                continue;
            }
            if !allowed {
                outside.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                continue;
            }
            let krate = rel.split('/').next().unwrap_or("").to_string();
            *per_crate.entry(krate).or_default() += 1;
            // The comment sits just above the block (a few lines up when
            // the block is an expression inside a statement).
            let explained = lines[n.saturating_sub(4)..n]
                .iter()
                .any(|l| l.trim_start().starts_with("// SAFETY:"));
            if !explained {
                unexplained.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    eprintln!("lines with unsafe code per crate: {per_crate:?}");
    assert!(
        outside.is_empty(),
        "unsafe code outside the sys modules ({ALLOWED:?}):\n{}",
        outside.join("\n")
    );
    assert!(
        unexplained.is_empty(),
        "unsafe code without a `// SAFETY:` comment just above:\n{}",
        unexplained.join("\n")
    );
}

#[test]
fn the_scanner_sees_unsafe_code_only() {
    assert!(is_unsafe_code("    let x = unsafe { libc::getpid() };"));
    assert!(is_unsafe_code("pub unsafe fn f() {}"));
    assert!(!is_unsafe_code("// unsafe in a comment"));
    assert!(!is_unsafe_code("let s = \"unsafe in a string\";"));
    assert!(!is_unsafe_code("#![deny(unsafe_code)]"));
    assert!(!is_unsafe_code("let not_unsafe = 1;"));
}
