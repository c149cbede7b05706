//! Room in `StateSaveLocation`. A submission is taken only when the state
//! log can hold it: with less free space than twice its size plus a margin
//! (for the state changes of the jobs already acknowledged: starts, ends,
//! accounting records), or while the log writer is waiting for space, it
//! is refused with Slurm's words for a failed write of a job
//! (`I/O error writing script/environment to file`), and the log says which
//! directory is full. Nothing already acknowledged is dropped: the writer
//! waits for space instead of exiting (see the state log, wal/writer.rs).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use tonic::Status;

/// Slurm's ESLURM_WRITING_TO_FILE, what sbatch prints after "Batch job
/// submission failed: " when slurmctld cannot save a job.
pub const WRITING_TO_FILE: &str = "I/O error writing script/environment to file";

/// Free space kept besides the submission itself.
pub const MARGIN_BYTES: u64 = 1024 * 1024;

/// Set by the state log writer while a write fails for want of space
/// (one controller, one log per process).
pub static LOG_WAITING_FOR_SPACE: AtomicBool = AtomicBool::new(false);

/// The state directory as submissions see it.
pub struct StateDisk {
    dir: PathBuf,
    /// Refusing now (for one log line per episode).
    refusing: AtomicBool,
}

/// Free bytes and free inodes under a directory (`statvfs`).
pub use drover_proto::sys::free_space;

/// Whether a request of `len` bytes fits; if not, why.
pub fn fits(len: u64, free: u64, inodes: Option<u64>) -> Result<(), String> {
    let need = len.saturating_mul(2).saturating_add(MARGIN_BYTES);
    if inodes == Some(0) {
        return Err("no free inodes".into());
    }
    if free < need {
        return Err(format!(
            "{free} bytes free, a submission of {len} bytes needs {need}"
        ));
    }
    Ok(())
}

impl StateDisk {
    pub fn new(dir: impl Into<PathBuf>) -> StateDisk {
        StateDisk {
            dir: dir.into(),
            refusing: AtomicBool::new(false),
        }
    }

    /// Admit a submission of `len` encoded bytes, or refuse it.
    pub fn admit(&self, len: usize) -> Result<(), Status> {
        let why = if LOG_WAITING_FOR_SPACE.load(Ordering::Acquire) {
            Err("the state log is waiting for space".to_string())
        } else {
            match free_space(&self.dir) {
                Ok((free, inodes)) => fits(len as u64, free, inodes),
                // Cannot tell: let the write itself find out.
                Err(_) => Ok(()),
            }
        };
        match why {
            Ok(()) => {
                if self.refusing.swap(false, Ordering::AcqRel) {
                    tracing::info!(
                        "StateSaveLocation {} has room again: submissions are taken",
                        self.dir.display()
                    );
                }
                Ok(())
            }
            Err(why) => {
                if !self.refusing.swap(true, Ordering::AcqRel) {
                    tracing::error!(
                        "StateSaveLocation {} is full ({why}): new submissions are refused \
                         until there is room; acknowledged jobs are kept",
                        self.dir.display()
                    );
                }
                Err(Status::resource_exhausted(WRITING_TO_FILE))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submission_needs_twice_its_size_and_the_margin() {
        assert!(fits(1000, 2000 + MARGIN_BYTES, Some(5)).is_ok());
        let e = fits(1000, 1999 + MARGIN_BYTES, Some(5)).unwrap_err();
        assert!(e.contains("needs"), "{e}");
        assert!(fits(10, u64::MAX, Some(0)).unwrap_err().contains("inodes"));
        assert!(fits(10, u64::MAX, None).is_ok());
    }

    #[test]
    fn free_space_of_a_real_directory() {
        let d = tempfile::tempdir().unwrap();
        let (bytes, _) = free_space(d.path()).unwrap();
        assert!(bytes > 0);
        assert!(free_space(&d.path().join("missing")).is_err());
        let disk = StateDisk::new(d.path());
        assert!(disk.admit(10).is_ok());
        let e = disk.admit(usize::MAX / 2).unwrap_err();
        assert_eq!(e.message(), WRITING_TO_FILE);
        assert!(disk.admit(10).is_ok());
    }
}
