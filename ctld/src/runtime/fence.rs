//! Fencing between controllers sharing `StateSaveLocation` (a primary and
//! its backups): an epoch number in the file `epoch`, raised by each
//! controller that takes control, and an exclusive lock on `ctld.lock`.
//!
//! Taking control raises the epoch under the lock. Every batch the log
//! writer writes happens under the lock, after checking that the epoch is
//! still the one this controller raised it to; a controller that finds it
//! moved on has been deposed and writes nothing more. The check and the
//! write are one step under the lock, so once a new controller has raised
//! the epoch (and only then reads the state), no deposed controller's
//! record can land after it, however long that one was stopped.
//!
//! The lock is `flock(2)`; on NFS Linux maps it to a POSIX lock that the
//! server arbitrates (NFSv4, or v3 with lockd), and taking a lock makes the
//! client re-read the file, so the epoch read under it is the server's.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use drover_proto::private;

const LOCK: &str = "ctld.lock";
const EPOCH: &str = "epoch";
const HEARTBEAT: &str = "heartbeat";

/// This controller's claim on the state directory.
pub struct Fence {
    lock: File,
    dir: PathBuf,
    /// The epoch this controller raised the file to.
    pub epoch: u64,
}

/// The lock, released when dropped.
pub struct Held<'a>(&'a File);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let _ = drover_proto::sys::flock(self.0, libc::LOCK_UN);
    }
}

/// The epoch in `dir` (0 before any controller took control).
pub fn read_epoch(dir: &Path) -> Result<u64, String> {
    let path = dir.join(EPOCH);
    match std::fs::read_to_string(&path) {
        Ok(t) => t
            .trim()
            .parse()
            .map_err(|_| format!("{}: not an epoch number: {:?}", path.display(), t.trim())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn lock<'a>(f: &'a File, path: &Path) -> Result<Held<'a>, String> {
    let started = Instant::now();
    let mut warned = false;
    loop {
        let Err(e) = drover_proto::sys::flock(f, libc::LOCK_EX | libc::LOCK_NB) else {
            return Ok(Held(f));
        };
        if e.raw_os_error() != Some(libc::EWOULDBLOCK)
            && e.kind() != std::io::ErrorKind::Interrupted
        {
            return Err(format!("cannot lock {}: {e}", path.display()));
        }
        if !warned && started.elapsed() > Duration::from_secs(5) {
            tracing::warn!(
                "waiting for the lock on {} (another controller holds it)",
                path.display()
            );
            warned = true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

impl Fence {
    /// Take control of `dir`: raise the epoch, durably, under the lock.
    pub fn take(dir: &Path) -> Result<Fence, String> {
        private::ensure_dir(dir)?;
        let lock_path = dir.join(LOCK);
        let file = private::append(&lock_path)
            .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
        let epoch = {
            let _held = lock(&file, &lock_path)?;
            let epoch = read_epoch(dir)? + 1;
            let tmp = dir.join("epoch.new");
            let err = |e: std::io::Error| format!("cannot write {}: {e}", tmp.display());
            let mut f = private::create(&tmp).map_err(err)?;
            f.write_all(format!("{epoch}\n").as_bytes()).map_err(err)?;
            f.sync_all().map_err(err)?;
            std::fs::rename(&tmp, dir.join(EPOCH)).map_err(err)?;
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| format!("cannot sync {}: {e}", dir.display()))?;
            epoch
        };
        Ok(Fence {
            lock: file,
            dir: dir.to_path_buf(),
            epoch,
        })
    }

    /// Hold the lock while the epoch is still ours; Err (why) when another
    /// controller took control since, or the files cannot be read.
    pub fn hold(&self) -> Result<Held<'_>, String> {
        let held = lock(&self.lock, &self.dir.join(LOCK))?;
        let now = read_epoch(&self.dir)?;
        if now != self.epoch {
            return Err(deposed(self.epoch, now));
        }
        Ok(held)
    }

    /// Is the epoch still ours (read without the lock: a cheap early check
    /// for an idle controller)?
    pub fn check(dir: &Path, epoch: u64) -> Result<(), String> {
        match read_epoch(dir)? {
            now if now == epoch => Ok(()),
            now => Err(deposed(epoch, now)),
        }
    }
}

/// The active controller's heartbeat (each second): a backup that cannot
/// reach it over the network does not take over while it still writes to
/// the shared directory (Slurm's `heartbeat` file).
pub fn beat(dir: &Path, epoch: u64, now: i64) {
    let path = dir.join(HEARTBEAT);
    if let Err(e) = private::write(&path, format!("{epoch} {now}\n").as_bytes()) {
        tracing::warn!("cannot write {}: {e}", path.display());
    }
}

/// The heartbeat file's contents (empty when absent).
pub fn heartbeat(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(HEARTBEAT)).unwrap_or_default()
}

fn deposed(ours: u64, now: u64) -> String {
    format!(
        "another controller took control (state epoch {now}, ours {ours}): \
         this controller was deposed and writes nothing more"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_taker_deposes_the_earlier() {
        let dir = tempfile::tempdir().unwrap();
        let a = Fence::take(dir.path()).unwrap();
        assert_eq!(a.epoch, 1);
        drop(a.hold().unwrap());
        let b = Fence::take(dir.path()).unwrap();
        assert_eq!(b.epoch, 2);
        let e = a.hold().err().expect("deposed");
        assert!(e.contains("epoch 2, ours 1"), "{e}");
        assert!(Fence::check(dir.path(), 1).is_err());
        assert!(b.hold().is_ok());
        assert!(Fence::check(dir.path(), 2).is_ok());
    }

    #[test]
    fn a_garbled_epoch_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("epoch"), "x\n").unwrap();
        let e = Fence::take(dir.path()).err().unwrap();
        assert!(e.contains("epoch: not an epoch number"), "{e}");
    }
}
