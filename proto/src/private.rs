//! Files that hold other users' data (controller state, accounting, spool,
//! logs): created 0600 in 0700 directories whatever the process umask, and
//! tightened at start-up when an older version (or a hand-made directory)
//! left them readable by others.
//!
//! Every daemon goes through these helpers for such files, so the mode is
//! decided in one place.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of a private file.
pub const FILE_MODE: u32 = 0o600;
/// Mode of a private directory.
pub const DIR_MODE: u32 = 0o700;

/// Set `path`'s permission bits to `mode` if they differ; log the change.
/// Returns whether anything changed.
fn set_mode(path: &Path, meta: &std::fs::Metadata, mode: u32) -> std::io::Result<bool> {
    let old = meta.permissions().mode() & 0o7777;
    if old == mode {
        return Ok(false);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    tracing::warn!(
        "tightened {} from mode {old:04o} to {mode:04o} (it holds other users' data)",
        path.display()
    );
    Ok(true)
}

/// Create `dir` (with its missing parents) and make `dir` itself 0700,
/// tightening an existing one. Parents keep whatever mode they have or get.
pub fn ensure_dir(dir: &Path) -> Result<(), String> {
    let err = |e: std::io::Error| format!("cannot create {}: {e}", dir.display());
    if !dir.is_dir() {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(err)?;
        }
        match std::fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(err(e)),
        }
    }
    let meta = std::fs::metadata(dir).map_err(err)?;
    set_mode(dir, &meta, DIR_MODE)
        .map(|_| ())
        .map_err(|e| format!("cannot set the mode of {}: {e}", dir.display()))
}

/// Make `path` 0600 if it is a regular file that exists (a missing file is
/// not an error).
pub fn tighten_file(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => set_mode(path, &meta, FILE_MODE)
            .map(|_| ())
            .map_err(|e| format!("cannot set the mode of {}: {e}", path.display())),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Walk `dir`: directories become 0700 and regular files 0600. Sockets,
/// links and other kinds are left alone. `keep` names entries (by file name)
/// that are skipped with everything below them. Returns how many entries
/// changed.
pub fn tighten_tree(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<usize, String> {
    let mut changed = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let meta = std::fs::symlink_metadata(&d)
            .map_err(|e| format!("cannot read {}: {e}", d.display()))?;
        if !meta.is_dir() {
            continue;
        }
        changed += usize::from(
            set_mode(&d, &meta, DIR_MODE)
                .map_err(|e| format!("cannot set the mode of {}: {e}", d.display()))?,
        );
        let entries =
            std::fs::read_dir(&d).map_err(|e| format!("cannot list {}: {e}", d.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if keep(&path) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                changed += usize::from(
                    set_mode(&path, &meta, FILE_MODE)
                        .map_err(|e| format!("cannot set the mode of {}: {e}", path.display()))?,
                );
            }
        }
    }
    Ok(changed)
}

fn fix_open_file(file: &File, path: &Path) -> std::io::Result<()> {
    let meta = file.metadata()?;
    if meta.permissions().mode() & 0o7777 != FILE_MODE {
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
        tracing::warn!(
            "tightened {} to mode 0600 (it holds other users' data)",
            path.display()
        );
    }
    Ok(())
}

/// Open `path` for writing, created 0600 (an existing file is made 0600),
/// truncated.
pub fn create(path: &Path) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)?;
    fix_open_file(&f, path)?;
    Ok(f)
}

/// Open `path` for reading and appending, created 0600 (an existing file is
/// made 0600).
pub fn append(path: &Path) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(FILE_MODE)
        .open(path)?;
    fix_open_file(&f, path)?;
    Ok(f)
}

/// Open `path` for reading and writing without truncating, created 0600
/// (an existing file is made 0600).
pub fn open_rw(path: &Path) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(path)?;
    fix_open_file(&f, path)?;
    Ok(f)
}

/// Write `bytes` to `path` (0600).
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    create(path)?.write_all(bytes)
}

/// Write `bytes` to `path` (0600) over what an existing file holds, cut
/// to their length only where it was longer: a file rewritten with about
/// as much keeps its disk blocks (truncating to zero frees them, and a
/// file system mounted with `discard` then tells the device about each).
pub fn rewrite(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    overwrite(&open_rw(path)?, bytes)
}

/// [`rewrite`] for a file already open for writing.
pub fn overwrite(f: &File, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.write_all_at(bytes, 0)?;
    if f.metadata()?.len() > bytes.len() as u64 {
        f.set_len(bytes.len() as u64)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().mode() & 0o7777
    }

    /// Run `f` with a wide-open umask, as a careless init script would.
    fn with_umask<T>(mask: u32, f: impl FnOnce() -> T) -> T {
        let old = crate::sys::umask(mask);
        let r = f();
        crate::sys::umask(old);
        r
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("drover-private-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn rewrite_replaces_longer_and_shorter_contents() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        rewrite(&p, b"a long first content").unwrap();
        assert_eq!(mode(&p), 0o600);
        rewrite(&p, b"short").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"short");
        rewrite(&p, b"longer again").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"longer again");
    }

    #[test]
    fn new_files_and_dirs_are_private_whatever_the_umask() {
        let d = tmp("new");
        with_umask(0, || {
            ensure_dir(&d.join("state")).unwrap();
            write(&d.join("state/a"), b"x").unwrap();
            append(&d.join("state/b")).unwrap();
            open_rw(&d.join("state/c")).unwrap();
        });
        assert_eq!(mode(&d.join("state")), 0o700);
        for f in ["a", "b", "c"] {
            assert_eq!(mode(&d.join("state").join(f)), 0o600, "{f}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn existing_loose_files_are_tightened() {
        let d = tmp("old");
        std::fs::create_dir_all(d.join("sub/deeper")).unwrap();
        for p in ["f", "sub/g", "sub/deeper/h", "keep/k"] {
            let p = d.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let n = tighten_tree(&d, &|p| p.ends_with("keep")).unwrap();
        assert!(n >= 4, "{n} changes");
        assert_eq!(mode(&d), 0o700);
        assert_eq!(mode(&d.join("sub/deeper")), 0o700);
        assert_eq!(mode(&d.join("f")), 0o600);
        assert_eq!(mode(&d.join("sub/deeper/h")), 0o600);
        assert_eq!(mode(&d.join("keep/k")), 0o644, "skipped subtree untouched");
        // A second pass has nothing left to do.
        assert_eq!(tighten_tree(&d, &|p| p.ends_with("keep")).unwrap(), 0);
        // Reopening an existing loose file tightens it too.
        std::fs::set_permissions(d.join("f"), std::fs::Permissions::from_mode(0o666)).unwrap();
        append(&d.join("f")).unwrap();
        assert_eq!(mode(&d.join("f")), 0o600);
        tighten_file(&d.join("missing")).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }
}
