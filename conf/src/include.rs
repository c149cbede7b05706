//! `Include` expansion and the file-system side of `load`.
//!
//! This is the only module doing I/O; the parsers receive a resolver closure.

use std::path::{Path, PathBuf};

use crate::error::{ConfError, ConfWarning};
use crate::lexer::{lex, LexLine, Pair};

/// How deep `Include`s may nest (guards against include loops).
pub(crate) const MAX_INCLUDE_DEPTH: usize = 16;

/// Resolves `Include <path>` written in file `including`: returns the
/// (resolved name, text) of every file it stands for (a glob may match
/// several or none).
pub(crate) type Resolver<'a> = dyn FnMut(&str, &str) -> Result<Vec<(String, String)>, String> + 'a;

/// Lex `text` and splice in included files; returns the pair lines in order.
pub(crate) fn collect(
    text: &str,
    file: &str,
    resolver: &mut Resolver<'_>,
    warnings: &mut Vec<ConfWarning>,
) -> Result<Vec<Vec<Pair>>, ConfError> {
    let mut out = Vec::new();
    collect_into(text, file, resolver, warnings, 0, &mut out)?;
    Ok(out)
}

fn collect_into(
    text: &str,
    file: &str,
    resolver: &mut Resolver<'_>,
    warnings: &mut Vec<ConfWarning>,
    depth: usize,
    out: &mut Vec<Vec<Pair>>,
) -> Result<(), ConfError> {
    for l in lex(text, file)? {
        match l {
            LexLine::Pairs(p) => out.push(p),
            LexLine::Include { path, line } => {
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(ConfError::new(
                        file,
                        line,
                        "Include",
                        format!(
                            "'{path}': includes nested more than {MAX_INCLUDE_DEPTH} deep (loop?)"
                        ),
                    ));
                }
                let files = resolver(&path, file)
                    .map_err(|m| ConfError::new(file, line, "Include", format!("'{path}': {m}")))?;
                if files.is_empty() {
                    warnings.push(ConfWarning::new(
                        file,
                        line,
                        "Include",
                        format!("'{path}' matched no files"),
                    ));
                }
                for (name, sub) in files {
                    collect_into(&sub, &name, resolver, warnings, depth + 1, out)?;
                }
            }
        }
    }
    Ok(())
}

/// The file at `path` as one text with every `Include` line replaced by
/// the files it names (recursively): what a configless host receives, so
/// it needs none of the controller's paths. Parses the same as the file.
pub fn flatten(path: &Path) -> Result<String, ConfError> {
    let text = read_file(path)?;
    let mut out = String::with_capacity(text.len());
    flatten_into(&text, &path.display().to_string(), 0, &mut out)?;
    Ok(out)
}

fn flatten_into(text: &str, file: &str, depth: usize, out: &mut String) -> Result<(), ConfError> {
    for (i, raw) in text.lines().enumerate() {
        let code = raw.split('#').next().unwrap_or("").trim();
        let Some(path) = crate::lexer::include_path(code) else {
            out.push_str(raw);
            out.push('\n');
            continue;
        };
        let path = crate::lexer::unquote(path.trim());
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(ConfError::new(
                file,
                i + 1,
                "Include",
                format!("'{path}': includes nested more than {MAX_INCLUDE_DEPTH} deep (loop?)"),
            ));
        }
        let files = fs_resolver(&path, file)
            .map_err(|m| ConfError::new(file, i + 1, "Include", format!("'{path}': {m}")))?;
        for (name, sub) in files {
            out.push_str(&format!("# from {name}\n"));
            flatten_into(&sub, &name, depth + 1, out)?;
        }
    }
    Ok(())
}

/// Resolver for `parse_str` functions that have no include callback.
pub(crate) fn no_includes(_: &str, _: &str) -> Result<Vec<(String, String)>, String> {
    Err("Include is not available when parsing from a string (use load)".to_string())
}

/// Read a whole file, mapping I/O errors to a line-0 [`ConfError`].
pub(crate) fn read_file(path: &Path) -> Result<String, ConfError> {
    std::fs::read_to_string(path).map_err(|e| ConfError::io(path.display().to_string(), &e))
}

/// `*` and `?` wildcard match.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == '?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi.min(p.len())..].iter().all(|&c| c == '*')
}

/// File-system resolver used by the `load` functions: relative paths resolve
/// against the including file's directory; `*`/`?` are allowed in the last
/// path component (matches are read in name order, hidden files skipped).
pub(crate) fn fs_resolver(path: &str, including: &str) -> Result<Vec<(String, String)>, String> {
    let p = Path::new(path);
    let full: PathBuf = if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new(including)
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join(p)
    };
    let last = full
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !last.contains(['*', '?']) {
        let text = std::fs::read_to_string(&full).map_err(|e| e.to_string())?;
        return Ok(vec![(full.display().to_string(), text)]);
    }
    let dir = full.parent().unwrap_or_else(|| Path::new("."));
    if dir.to_string_lossy().contains(['*', '?']) {
        return Err("wildcards are only supported in the last path component".to_string());
    }
    let mut matches: Vec<PathBuf> = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && !last.starts_with('.') {
            continue;
        }
        if glob_match(&last, &name) && entry.path().is_file() {
            matches.push(entry.path());
        }
    }
    matches.sort();
    let mut out = Vec::new();
    for m in matches {
        let text = std::fs::read_to_string(&m).map_err(|e| format!("{}: {e}", m.display()))?;
        out.push((m.display().to_string(), text));
    }
    Ok(out)
}

/// `load` of the side files (gres.conf, cgroup.conf, droverdbd.conf): read
/// `path` and parse it with its `Include`s resolved from the file system.
pub(crate) fn load_with<T>(
    path: &Path,
    parse: impl FnOnce(&str, &str, &mut Resolver<'_>) -> Result<T, ConfError>,
) -> Result<T, ConfError> {
    let text = read_file(path)?;
    parse(&text, &path.display().to_string(), &mut fs_resolver)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob() {
        assert!(glob_match("*.conf", "a.conf"));
        assert!(glob_match("*.conf", ".conf"));
        assert!(!glob_match("*.conf", "a.conf.bak"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(glob_match("nodes-*", "nodes-ä"));
    }

    #[test]
    fn include_depth_is_limited() {
        let mut r = |_: &str, _: &str| Ok(vec![("self".to_string(), "Include self".to_string())]);
        let mut w = Vec::new();
        let e = collect("Include self", "top", &mut r, &mut w).unwrap_err();
        assert_eq!(e.key, "Include");
        assert!(e.message.contains("nested"));
    }

    #[test]
    fn resolver_error_and_empty_glob() {
        let mut r = |p: &str, _: &str| {
            if p == "none*" {
                Ok(vec![])
            } else {
                Err("No such file".to_string())
            }
        };
        let mut w = Vec::new();
        let e = collect("A=1\nInclude missing", "top.conf", &mut r, &mut w).unwrap_err();
        assert_eq!(
            e.to_string(),
            "top.conf:2: Include: 'missing': No such file"
        );
        let lines = collect("Include none*", "top.conf", &mut r, &mut w).unwrap();
        assert!(lines.is_empty());
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn flattened_config_parses_like_the_original() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("parts")).unwrap();
        std::fs::write(
            d.path().join("parts/nodes.conf"),
            "NodeName=n[1-2] CPUs=4\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("parts/more.conf"),
            "  include \"nodes.conf\" # a comment\n",
        )
        .unwrap();
        let main = d.path().join("slurm.conf");
        std::fs::write(
            &main,
            "ClusterName=c\nInclude parts/more.conf\nPartitionName=p Nodes=ALL\n",
        )
        .unwrap();
        let flat = flatten(&main).unwrap();
        assert!(!flat.to_ascii_lowercase().contains("include"), "{flat}");
        let (a, _) = crate::slurmconf::load(&main).unwrap();
        let (b, _) =
            crate::slurmconf::parse_str(&flat, "flat", &mut |_: &str| Err("none".to_string()))
                .unwrap();
        assert_eq!(a.nodes, b.nodes);
        assert_eq!(a.conf_hash, b.conf_hash, "same digest: no drift warning");
        std::fs::write(&main, "Include missing.conf\n").unwrap();
        let e = flatten(&main).unwrap_err();
        assert_eq!(e.line, 1);
        assert_eq!(e.key, "Include");
    }
}
