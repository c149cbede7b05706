//! The agent's side of a launch: the job directory in `SlurmdSpoolDir`,
//! starting the supervisor, and finding job directories after a restart.
//!
//! Files in `SlurmdSpoolDir/job<ID>/` (mode 0711):
//! - `launch.pb` — the LaunchRequest (prost), written as `launch.pb.tmp`
//!   and renamed last: its presence marks a complete launch record (not
//!   fsynced: see `fill_dir`);
//! - `script` — the batch script (mode 0700, owned by the job's user);
//! - `stepd.addr` — the name of the supervisor's control socket, an
//!   abstract Unix socket (`stepd_socket`: no inode per job);
//! - `status` — how the job ended (written atomically by the supervisor via
//!   `status.tmp`, or by the agent when the supervisor died without one);
//! - `stepd.log` — the supervisor's own messages (created only when it has
//!   something to say: errors, or everything when the agent runs with -v).
//!
//! Once the controller acknowledged JobEnded the directory is recycled: it
//! is renamed into `SlurmdSpoolDir/.recycle/` and its files are rewritten in
//! place by a later launch (creating and deleting inodes is what costs most
//! on a busy node, notably on ext4 without a journal). The pool keeps as
//! many as the agent's nodes can run jobs at once (their CPUs, at least
//! `RECYCLE_MIN`); directories beyond it are deleted.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use prost::Message;

use crate::status::{LAUNCH_FILE, LOG_FILE, SCRIPT_FILE, STATUS_FILE};
use crate::stepd::{CONF_ENV, DEBUG_ENV, NOTIFY_FD_ENV};
use drover_proto::LaunchRequest;

const LAUNCH_TMP: &str = "launch.pb.tmp";
const STATUS_TMP: &str = "status.tmp";
const RECYCLE_DIR: &str = ".recycle";
/// Recycled job directories kept for reuse at least (more where the agent's
/// nodes have more CPUs: [`Recycler::new`]).
const RECYCLE_MIN: usize = 256;

pub fn job_dir(spool: &Path, job_id: u32) -> PathBuf {
    spool.join(format!("job{job_id}"))
}

/// Parse `job<ID>` directory names.
pub fn parse_job_dir_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("job")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Result of preparing a job directory.
#[derive(Debug)]
pub enum Prepared {
    /// Freshly written; start the supervisor.
    New(PathBuf),
    /// A complete launch record already exists (a repeated launch).
    Exists(PathBuf),
}

/// Create the spool directory if needed, and make what an older version (or
/// a careless umask) left readable private again, logging each change. The
/// spool directory itself is 0755 (no group/other write): a job's user must
/// traverse it to reach its script. Job directories are 0711 (others can
/// neither list them nor read a file in them); every file in them is 0600
/// except the script, which belongs to the job's user (0700).
pub fn ensure_spool(spool: &Path) -> Result<(), String> {
    let err = |e: std::io::Error| format!("cannot create {}: {e}", spool.display());
    if !spool.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(spool)
            .map_err(err)?;
    }
    let mode = std::fs::metadata(spool).map_err(err)?.mode() & 0o7777;
    if mode & 0o022 != 0 {
        std::fs::set_permissions(spool, std::fs::Permissions::from_mode(mode & !0o022))
            .map_err(err)?;
        tracing::warn!(
            "tightened {} from mode {mode:04o} to {:04o}",
            spool.display(),
            mode & !0o022
        );
    }
    let entries = std::fs::read_dir(spool).map_err(err)?;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name == RECYCLE_DIR {
            drover_proto::private::tighten_tree(&path, &|_| false)?;
        } else if name.starts_with("job") && path.is_dir() {
            let m = entry.metadata().map_err(err)?.mode() & 0o7777;
            if m != 0o711 {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o711))
                    .map_err(err)?;
                tracing::warn!("tightened {} from mode {m:04o} to 0711", path.display());
            }
            for file in std::fs::read_dir(&path).map_err(err)?.flatten() {
                if file.file_name() != SCRIPT_FILE {
                    drover_proto::private::tighten_file(&file.path())?;
                }
            }
        }
    }
    Ok(())
}

/// A pool of finished job directories whose inodes are reused.
#[derive(Debug)]
pub struct Recycler {
    dir: PathBuf,
    free: Mutex<Vec<PathBuf>>,
    counter: AtomicU64,
    /// Directories kept at most.
    keep: usize,
}

impl Recycler {
    /// Start with an empty pool (anything left in `SPOOL/.recycle` is
    /// deleted) that keeps up to `cpus` directories (the served nodes' CPUs
    /// when droverd started: as many jobs as may run at once, each finishing
    /// into the pool), at least `RECYCLE_MIN`. Blocking.
    pub fn new(spool: &Path, cpus: usize) -> Recycler {
        let dir = spool.join(RECYCLE_DIR);
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        Recycler {
            dir,
            free: Mutex::new(Vec::new()),
            counter: AtomicU64::new(0),
            keep: cpus.max(RECYCLE_MIN),
        }
    }

    fn pop(&self) -> Option<PathBuf> {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    /// Retire a finished job directory: keep it for reuse, or delete it. Blocking.
    pub fn retire(&self, jobdir: &Path) -> std::io::Result<()> {
        let _ = std::fs::remove_file(jobdir.join(LOG_FILE));
        let full = self.free.lock().unwrap_or_else(|p| p.into_inner()).len() >= self.keep;
        if full || !self.dir.is_dir() {
            return remove_dir(jobdir);
        }
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let target = self.dir.join(format!("r{n}"));
        if std::fs::rename(jobdir, &target).is_err() {
            return remove_dir(jobdir);
        }
        // No launch record or status under their real names any more.
        let _ = std::fs::rename(target.join(LAUNCH_FILE), target.join(LAUNCH_TMP));
        let _ = std::fs::rename(target.join(STATUS_FILE), target.join(STATUS_TMP));
        self.free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(target);
        Ok(())
    }
}

fn remove_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Extra files of a job directory: (name, contents); None removes a file a
/// recycled directory may still hold.
pub type ExtraFiles = Vec<(&'static str, Option<String>)>;

/// Write the script, the extra files and `launch.pb.tmp` into `dir`
/// (reusing existing files).
fn fill_dir(dir: &Path, req: &LaunchRequest, extra: &ExtraFiles) -> Result<(), String> {
    for (name, content) in extra {
        let path = dir.join(name);
        match content {
            Some(text) => drover_proto::private::rewrite(&path, text.as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    let script = req
        .spec
        .as_ref()
        .map(|s| s.script.as_slice())
        .unwrap_or(&[]);
    let script_path = dir.join(SCRIPT_FILE);
    // A recycled directory's files are written over, not truncated
    // (`private::overwrite`: they keep their disk blocks). Not a script
    // another user owned: that user may still hold it open (it was theirs,
    // reachable by path while their job ran) and would read or rewrite
    // this job's script through it; it gets a new file instead.
    if let Ok(md) = std::fs::symlink_metadata(&script_path) {
        if md.uid() != req.uid || !md.is_file() {
            std::fs::remove_file(&script_path)
                .map_err(|e| format!("cannot remove {}: {e}", script_path.display()))?;
        }
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o700)
        .open(&script_path)
        .map_err(|e| format!("cannot create {}: {e}", script_path.display()))?;
    drover_proto::private::overwrite(&f, script)
        .map_err(|e| format!("cannot write {}: {e}", script_path.display()))?;
    if drover_proto::sys::is_root() {
        if let Err(e) = std::os::unix::fs::fchown(&f, Some(req.uid), Some(req.gid)) {
            return Err(format!(
                "cannot chown {} to {}:{}: {}",
                script_path.display(),
                req.uid,
                req.gid,
                e
            ));
        }
    }
    // After fchown (which may clear set-id bits); the mode of a reused file too.
    f.set_permissions(std::fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("cannot chmod {}: {e}", script_path.display()))?;
    drop(f);

    let tmp = dir.join(LAUNCH_TMP);
    // Not fsynced: the record serves the supervisor and an agent restarted
    // after a crash of its own, both of which read the page cache. A crash
    // of the machine ends the job's processes too, and a record it tore
    // (empty, or naming no job) reads as none (`scan_spool`): the job is
    // reported lost either way. (0.2-0.3 ms off every start.)
    drover_proto::private::rewrite(&tmp, &req.encode_to_vec())
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    Ok(())
}

/// Create `job<ID>/` with the launch record and the script (from a recycled
/// directory when one is available). Blocking.
pub fn prepare_job_dir(
    spool: &Path,
    req: &LaunchRequest,
    recycler: Option<&Recycler>,
    extra: &ExtraFiles,
) -> Result<Prepared, String> {
    let dir = job_dir(spool, req.job_id);
    if dir.exists() {
        if dir.join(LAUNCH_FILE).exists() {
            return Ok(Prepared::Exists(dir));
        }
        // A launch that crashed half way: start over.
        remove_dir(&dir).map_err(|e| format!("cannot clean {}: {e}", dir.display()))?;
    }
    let mut placed = false;
    if let Some(r) = recycler.and_then(Recycler::pop) {
        let _ = std::fs::set_permissions(&r, std::fs::Permissions::from_mode(0o711));
        if fill_dir(&r, req, extra).is_ok() && std::fs::rename(&r, &dir).is_ok() {
            placed = true;
        } else {
            let _ = remove_dir(&r);
        }
    }
    if !placed {
        match std::fs::DirBuilder::new().mode(0o711).create(&dir) {
            Ok(()) => {}
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711));
        fill_dir(&dir, req, extra)?;
    }
    std::fs::rename(dir.join(LAUNCH_TMP), dir.join(LAUNCH_FILE))
        .map_err(|e| format!("cannot write {}: {e}", dir.join(LAUNCH_FILE).display()))?;
    Ok(Prepared::New(dir))
}

/// Read a job directory's launch record.
pub fn read_launch(dir: &Path) -> Result<LaunchRequest, String> {
    let bytes = std::fs::read(dir.join(LAUNCH_FILE)).map_err(|e| e.to_string())?;
    LaunchRequest::decode(bytes.as_slice()).map_err(|e| e.to_string())
}

/// A started supervisor: the process handle and its notify pipe (its stdout).
pub struct Started {
    pub child: tokio::process::Child,
    pub notify: tokio::process::ChildStdout,
}

/// Start `EXE --stepd DIR` with stdin and stderr on /dev/null and stdout a
/// pipe: the notify channel (`started PID` / `failed REASON`, then `done ...`).
/// The supervisor starts its own session, so it outlives the agent; no
/// pre-exec hook, so the spawn can use posix_spawn (no fork of the agent).
pub fn spawn_stepd(
    exe: &Path,
    dir: &Path,
    conf_path: &Path,
    debug: bool,
) -> Result<Started, String> {
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("--stepd")
        .arg(dir)
        .env(NOTIFY_FD_ENV, "1")
        .env(CONF_ENV, conf_path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(false);
    if debug {
        cmd.env(DEBUG_ENV, "1");
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {} --stepd: {e}", exe.display()))?;
    let notify = child
        .stdout
        .take()
        .ok_or_else(|| "supervisor has no notify pipe".to_string())?;
    Ok(Started { child, notify })
}

/// A job directory found in the spool at startup.
#[derive(Debug, Clone)]
pub struct FoundJob {
    pub job_id: u32,
    pub dir: PathBuf,
    /// The launch record, when readable.
    pub launch: Option<LaunchRequest>,
}

/// Every `job<ID>/` directory in the spool.
pub fn scan_spool(spool: &Path) -> Vec<FoundJob> {
    let Ok(rd) = std::fs::read_dir(spool) else {
        return Vec::new();
    };
    let mut out: Vec<FoundJob> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let job_id = parse_job_dir_name(name.to_str()?)?;
            let dir = e.path();
            if !dir.is_dir() {
                return None;
            }
            // A record naming another job is not this directory's.
            let launch = read_launch(&dir).ok().filter(|l| l.job_id == job_id);
            Some(FoundJob {
                job_id,
                dir,
                launch,
            })
        })
        .collect();
    out.sort_by_key(|j| j.job_id);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::JobSpec;

    #[test]
    fn job_dir_names() {
        assert_eq!(parse_job_dir_name("job42"), Some(42));
        assert_eq!(parse_job_dir_name("job"), None);
        assert_eq!(parse_job_dir_name("job4x"), None);
        assert_eq!(parse_job_dir_name("jobs"), None);
        assert_eq!(parse_job_dir_name("job99999999999"), None);
        assert_eq!(parse_job_dir_name("xjob1"), None);
    }

    #[test]
    fn prepare_is_idempotent_and_recovers_partial_dirs() {
        let spool = tempfile::tempdir().unwrap();
        let req = LaunchRequest {
            job_id: 9,
            uid: drover_proto::sys::geteuid(),
            gid: drover_proto::sys::getegid(),
            spec: Some(JobSpec {
                script: b"#!/bin/sh\necho hi\n".to_vec(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let dir = match prepare_job_dir(spool.path(), &req, None, &vec![]).unwrap() {
            Prepared::New(d) => d,
            other => panic!("{other:?}"),
        };
        use std::os::unix::fs::MetadataExt;
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o711);
        let script = dir.join(SCRIPT_FILE);
        assert_eq!(std::fs::metadata(&script).unwrap().mode() & 0o777, 0o700);
        assert_eq!(std::fs::read(&script).unwrap(), b"#!/bin/sh\necho hi\n");
        assert_eq!(read_launch(&dir).unwrap(), req);
        assert!(matches!(
            prepare_job_dir(spool.path(), &req, None, &vec![]).unwrap(),
            Prepared::Exists(_)
        ));
        // Partial directory (no launch record): rebuilt.
        std::fs::remove_file(dir.join(LAUNCH_FILE)).unwrap();
        assert!(matches!(
            prepare_job_dir(spool.path(), &req, None, &vec![]).unwrap(),
            Prepared::New(_)
        ));
        let found = scan_spool(spool.path());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].job_id, 9);
        assert_eq!(found[0].launch.as_ref(), Some(&req));
    }

    #[test]
    fn recycled_directories_are_reused_in_place() {
        use std::os::unix::fs::MetadataExt;
        let spool = tempfile::tempdir().unwrap();
        let rec = Recycler::new(spool.path(), 0);
        let mut req = LaunchRequest {
            job_id: 1,
            uid: drover_proto::sys::geteuid(),
            gid: drover_proto::sys::getegid(),
            spec: Some(JobSpec {
                script: b"#!/bin/sh\necho a long first script\n".to_vec(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let Prepared::New(d1) = prepare_job_dir(spool.path(), &req, Some(&rec), &vec![]).unwrap()
        else {
            panic!()
        };
        std::fs::write(d1.join(STATUS_FILE), "exit_code=0\n").unwrap();
        let ino = std::fs::metadata(d1.join(SCRIPT_FILE)).unwrap().ino();
        rec.retire(&d1).unwrap();
        assert!(!d1.exists());
        assert!(
            scan_spool(spool.path()).is_empty(),
            "recycled dirs are not jobs"
        );

        req.job_id = 2;
        req.spec.as_mut().unwrap().script = b"#!/bin/sh\necho b\n".to_vec();
        let Prepared::New(d2) = prepare_job_dir(spool.path(), &req, Some(&rec), &vec![]).unwrap()
        else {
            panic!()
        };
        assert_eq!(std::fs::metadata(d2.join(SCRIPT_FILE)).unwrap().ino(), ino);
        assert_eq!(
            std::fs::read(d2.join(SCRIPT_FILE)).unwrap(),
            b"#!/bin/sh\necho b\n"
        );
        assert_eq!(read_launch(&d2).unwrap(), req);
        // The first user's open handle on their script reaches nothing of
        // another user's job.
        if drover_proto::sys::is_root() {
            let held = std::fs::File::open(d2.join(SCRIPT_FILE)).unwrap();
            rec.retire(&d2).unwrap();
            req.job_id = 4;
            req.uid += 1;
            let Prepared::New(d4) =
                prepare_job_dir(spool.path(), &req, Some(&rec), &vec![]).unwrap()
            else {
                panic!()
            };
            let md = std::fs::metadata(d4.join(SCRIPT_FILE)).unwrap();
            assert_ne!(md.ino(), held.metadata().unwrap().ino());
            assert_eq!(md.uid(), req.uid);
            rec.retire(&d4).unwrap();
            req.job_id = 2;
            req.uid -= 1;
            let Prepared::New(again) =
                prepare_job_dir(spool.path(), &req, Some(&rec), &vec![]).unwrap()
            else {
                panic!()
            };
            assert_eq!(again, d2);
        }
        assert!(!d2.join(STATUS_FILE).exists(), "old status is not visible");
        assert!(!d2.join(LAUNCH_TMP).exists());
        assert_eq!(std::fs::metadata(&d2).unwrap().mode() & 0o777, 0o711);
        let found = scan_spool(spool.path());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].job_id, 2);
        // Stale launch records of another job are ignored by the scan.
        std::fs::rename(&d2, spool.path().join("job3")).unwrap();
        let found = scan_spool(spool.path());
        assert_eq!(found[0].job_id, 3);
        assert!(found[0].launch.is_none());
    }

    #[test]
    fn the_pool_keeps_as_many_directories_as_the_nodes_have_cpus() {
        let spool = tempfile::tempdir().unwrap();
        let kept = |rec: &Recycler| rec.free.lock().unwrap().len();
        let count = |dir: &Path| std::fs::read_dir(dir).unwrap().count();
        let rec = Recycler::new(spool.path(), RECYCLE_MIN + 2);
        for id in 1..=RECYCLE_MIN + 3 {
            let dir = job_dir(spool.path(), id as u32);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join(STATUS_FILE), "exit_code=0\n").unwrap();
            rec.retire(&dir).unwrap();
            assert!(!dir.exists());
        }
        // One directory more than the CPUs was deleted, not kept.
        assert_eq!(kept(&rec), RECYCLE_MIN + 2);
        assert_eq!(count(&spool.path().join(RECYCLE_DIR)), RECYCLE_MIN + 2);
        // Few CPUs still keep the minimum.
        assert_eq!(Recycler::new(spool.path(), 4).keep, RECYCLE_MIN);
    }
}
