//! Fuzz targets for the parsers of this crate: each takes arbitrary bytes,
//! must not panic or hang, and checks that what it returns is usable (an
//! error names its file and line). The same functions run under the
//! coverage-guided fuzzer (`fuzz/`, `bench/fuzz.sh`) and, over the saved
//! corpus and the inputs of past crashes, in `cargo test`.

use std::path::{Path, PathBuf};

use crate::datetime::{self, Utc, Zone};
use crate::{hostlist, units, ConfError};

/// A fuzz target: arbitrary bytes in, no panic or hang.
pub type Target = fn(&[u8]);

/// A fixed "now" (2026-01-02 03:04:05 UTC), so runs are reproducible.
pub const NOW: i64 = 1_767_323_045;

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// A configuration error must say where: the file name and a line number
/// within the text (0: the whole file).
fn check_located(e: &ConfError, file: &str, text: &str) {
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{file}:")),
        "error does not name the file: {shown}"
    );
    assert!(
        e.line <= text.lines().count().max(1),
        "error names line {} of a {}-line text: {shown}",
        e.line,
        text.lines().count()
    );
}

/// slurm.conf / drover.conf text. `Include` names a file that is empty.
pub fn slurm_conf(data: &[u8]) {
    let t = text(data);
    let mut include = |path: &str| Ok((format!("inc/{path}"), String::new()));
    if let Err(e) = crate::slurmconf::parse_str(&t, "fuzz.conf", &mut include) {
        if !e.file.starts_with("inc/") {
            check_located(&e, "fuzz.conf", &t);
        }
    }
}

/// gres.conf text.
pub fn gres_conf(data: &[u8]) {
    let t = text(data);
    if let Err(e) = crate::gresconf::parse_str(&t, "gres.conf") {
        check_located(&e, "gres.conf", &t);
    }
}

/// cgroup.conf text.
pub fn cgroup_conf(data: &[u8]) {
    let t = text(data);
    if let Err(e) = crate::cgroupconf::parse_str(&t, "cgroup.conf") {
        check_located(&e, "cgroup.conf", &t);
    }
}

/// droverdbd.conf text; a parsed file must give a database URL.
pub fn dbd_conf(data: &[u8]) {
    let t = text(data);
    match crate::dbdconf::parse_str(&t, "droverdbd.conf") {
        Ok((c, _)) => {
            let _ = c.url();
            let _ = c.url_for_log();
        }
        Err(e) => check_located(&e, "droverdbd.conf", &t),
    }
}

/// Hostlist expressions: what expands also compresses, and the compressed
/// form expands to the same set of names, as many as counted (checked up to
/// 10,000 names, so that the fuzzer does not spend its time making and
/// sorting a million).
pub fn hostlist(data: &[u8]) {
    let t = text(data);
    // Counting parses without making names, so a list too long to
    // round-trip cheaply costs no more than its parse; the bounded expansion
    // (what the daemons call on input from users) must refuse it.
    let Ok(n) = hostlist::count(&t) else {
        return;
    };
    if n > 10_000 {
        assert!(hostlist::expand_at_most(&t, 10_000).is_err(), "{t:?}");
        return;
    }
    let names = hostlist::expand(&t)
        .unwrap_or_else(|e| panic!("{t:?} counts {n} names but does not expand: {e}"));
    assert_eq!(names.len(), n, "count({t:?}) differs from its expansion");
    let _ = hostlist::compress_in_order(&names);
    let packed = hostlist::compress(&names);
    let again = hostlist::expand(&packed)
        .unwrap_or_else(|e| panic!("compress({t:?}) = {packed:?} does not expand: {e}"));
    let mut a: Vec<&String> = names.iter().collect();
    let mut b: Vec<&String> = again.iter().collect();
    a.sort();
    a.dedup();
    b.sort();
    b.dedup();
    assert_eq!(a, b, "expand(compress(expand({t:?}))) differs");
}

/// Memory sizes (`--mem`, `RealMemory`, ...): a parsed size prints and
/// parses back to itself.
pub fn mem_size(data: &[u8]) {
    let t = text(data);
    if let Ok(mb) = units::parse_mem_mb(&t) {
        let shown = units::format_mem_mb(mb);
        assert_eq!(
            units::parse_mem_mb(&shown),
            Ok(mb),
            "{t:?} shown as {shown:?}"
        );
    }
}

/// Time limits (`--time`, `MaxTime`): a parsed duration prints (as
/// `[D-]HH:MM:SS`) and parses back to itself.
pub fn time_limit(data: &[u8]) {
    let t = text(data);
    if let Ok(Some(secs)) = units::parse_duration(&t) {
        let shown = units::format_elapsed(secs);
        assert_eq!(
            units::parse_duration(&shown),
            Ok(Some(secs)),
            "{t:?} shown as {shown:?}"
        );
    }
    if let Ok(m) = units::parse_time_minutes(&t) {
        let _ = units::format_limit(m);
    }
}

/// Dates and times (`--begin`, `--deadline`, `sacct -S/-E`).
pub fn date(data: &[u8]) {
    let t = text(data);
    for parsed in [
        datetime::parse_begin(&t, NOW, &Utc),
        datetime::parse_query_time(&t, NOW, &Utc),
    ]
    .into_iter()
    .flatten()
    {
        let _ = datetime::fmt_iso(&Utc.to_tm(parsed));
        let _ = datetime::fmt_ctime(&Utc.to_tm(parsed));
    }
    let _ = datetime::parse_offset(&t);
}

/// The saved inputs of a target: the corpus the fuzzer kept
/// (`fuzz/corpus/TARGET`) and the inputs of past crashes
/// (`fuzz/regressions/TARGET`), each with its path. For `cargo test`.
pub fn saved_inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut out = Vec::new();
    for kind in ["corpus", "regressions"] {
        let dir = root.join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            out.push((p, bytes));
        }
    }
    out
}

/// Run `f` over every saved input of `target`, naming the input that fails.
/// Returns how many ran.
pub fn replay(target: &str, f: Target) -> usize {
    let inputs = saved_inputs(target);
    for (path, bytes) in &inputs {
        if std::panic::catch_unwind(|| f(bytes)).is_err() {
            panic!("fuzz target {target} fails on {}", path.display());
        }
    }
    inputs.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_inputs_replay() {
        let targets: [(&str, Target); 8] = [
            ("slurm_conf", slurm_conf),
            ("gres_conf", gres_conf),
            ("cgroup_conf", cgroup_conf),
            ("dbd_conf", dbd_conf),
            ("hostlist", hostlist),
            ("mem_size", mem_size),
            ("time_limit", time_limit),
            ("date", date),
        ];
        for (name, f) in targets {
            assert!(replay(name, f) > 0, "no saved inputs for {name}");
        }
    }
}
