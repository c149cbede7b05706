//! The core's line: below it (every controller source file but the runtime
//! and the gRPC front) no task, clock, socket, thread or file. Handlers get
//! `now` from the runtime and record effects; the runtime performs them.
//! A file that needs any of these belongs above the line (see
//! docs/architecture.md, "The core and the runtime").

use std::path::{Path, PathBuf};

/// Above the line: these may use tokio, sockets, the clock and files.
const RUNTIME: &[&str] = &[
    "runtime/",
    "rpc/",
    "daemon.rs",
    "main.rs",
    "wal.rs",
    "acct/sender.rs",
    "acct/outbox.rs",
];

/// What the core must not mention (outside comments).
const FORBIDDEN: &[&str] = &[
    "tokio",
    "tonic::transport",
    "tonic::Request",
    "drover_proto::client",
    "SystemTime",
    "Instant::now",
    "now_secs",
    "std::net",
    "std::fs",
    "std::thread",
    "slurmconf::load",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read ctld/src") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn nothing_below_the_core_line_reaches_the_world() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut core_files = 0;
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        if RUNTIME.iter().any(|r| rel.starts_with(r)) {
            continue;
        }
        core_files += 1;
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for word in FORBIDDEN {
                if code.contains(word) {
                    bad.push(format!("ctld/src/{rel}:{}: {word}", n + 1));
                }
            }
        }
    }
    assert!(core_files > 30, "the walk found the core's files ({core_files})");
    assert!(bad.is_empty(), "below the core's line:\n{}", bad.join("\n"));
}

#[test]
fn the_scheduler_imports_nothing_of_the_controller() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sched");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut bad = Vec::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("tests") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let mut rest = code;
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + "crate::".len()..];
                if !rest.starts_with("sched") {
                    bad.push(format!("sched/{name}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "the scheduler reaches up:\n{}", bad.join("\n"));
}
