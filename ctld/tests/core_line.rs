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
    "wal/",
    "acct/sender.rs",
    "acct/outbox.rs",
    // The fuzz targets drive the runtime's recovery from files.
    "fuzz.rs",
];

/// What the core must not mention (outside comments). `tonic` as a whole:
/// the core refuses with its own `Refusal` (ctld/src/refusal.rs), which only
/// rpc/ turns into a gRPC status.
const FORBIDDEN: &[&str] = &[
    "tokio",
    "tonic",
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

/// The forbidden words `text` uses outside comments, as `file:line: word`.
fn offences(file: &str, text: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for word in FORBIDDEN {
            if code.contains(word) {
                bad.push(format!("{file}:{}: {word}", n + 1));
            }
        }
    }
    bad
}

#[test]
fn the_line_check_catches_each_way_out() {
    let cases = [
        ("use tonic::Status;", "tonic"),
        ("fn f() -> Result<(), tonic::Status> {", "tonic"),
        ("    tokio::spawn(async {});", "tokio"),
        ("let t = std::time::SystemTime::now();", "SystemTime"),
        ("let t = Instant::now();", "Instant::now"),
        ("use std::net::TcpStream;", "std::net"),
        ("let s = std::fs::read(p);", "std::fs"),
        ("std::thread::sleep(d);", "std::thread"),
    ];
    for (line, word) in cases {
        let text = format!("//! A core file.\n\n{line}\n");
        assert_eq!(
            offences("x.rs", &text),
            vec![format!("x.rs:3: {word}")],
            "{line}"
        );
    }
    // Words in comments are prose, not code.
    let prose = "//! Above the line: tokio, tonic.\nlet x = 1; // not std::net\n";
    assert!(offences("x.rs", prose).is_empty());
}

#[test]
fn nothing_below_the_core_line_reaches_the_world() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut core_files = 0;
    let mut bad = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if RUNTIME.iter().any(|r| rel.starts_with(r)) {
            continue;
        }
        core_files += 1;
        let text = std::fs::read_to_string(&f).unwrap();
        bad.extend(offences(&format!("ctld/src/{rel}"), &text));
    }
    assert!(
        core_files > 30,
        "the walk found the core's files ({core_files})"
    );
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
    assert!(
        bad.is_empty(),
        "the scheduler reaches up:\n{}",
        bad.join("\n")
    );
}

/// The file a `crate::a::b::c` path names: the longest prefix that is one.
fn resolve(files: &[String], path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len()).rev().find_map(|k| {
        let stem = parts[..k].join("/");
        [format!("{stem}.rs"), format!("{stem}/mod.rs")]
            .into_iter()
            .find(|f| files.contains(f))
    })
}

#[test]
fn no_import_circles_between_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    sources(&root, &mut paths);
    let names: Vec<String> = paths
        .iter()
        .map(|f| {
            f.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    // deps[i]: the files file i names through `crate::` (unit tests aside).
    let deps: Vec<Vec<usize>> = paths
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let text = std::fs::read_to_string(f).unwrap();
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
            let mut out = Vec::new();
            let mut rest = code;
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + "crate::".len()..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_lowercase() || c == '_' || c == ':'))
                    .unwrap_or(rest.len());
                let path = rest[..end].trim_end_matches(':');
                if let Some(t) = resolve(&names, path) {
                    let j = names.iter().position(|n| *n == t).unwrap();
                    if j != i && !out.contains(&j) {
                        out.push(j);
                    }
                }
            }
            out
        })
        .collect();
    // A file that reaches itself again is in a circle.
    let mut circles = Vec::new();
    for start in 0..names.len() {
        let mut seen = vec![false; names.len()];
        let mut todo = deps[start].clone();
        while let Some(x) = todo.pop() {
            if x == start {
                circles.push(names[start].clone());
                break;
            }
            if !std::mem::replace(&mut seen[x], true) {
                todo.extend(&deps[x]);
            }
        }
    }
    assert!(circles.is_empty(), "files in import circles: {circles:?}");
}
