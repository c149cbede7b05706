//! Why a batch job failed, from the end of its stderr: read the last 64 KiB
//! of the file (stdout when stderr goes there) with the job user's rights
//! and look for a GPU out-of-memory error ([`crate::gpu_oom`]). Blocking.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use tracing::debug;

use crate::asuser::{self, Creds};
use crate::gpu_oom;
use crate::status::JobStatus;

/// How long the end report waits for the read (a hung network file
/// system); after that the job's end is reported without it.
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Worth a look: the script ran and failed on its own (not an OOM kill,
/// not the time limit, not a launch failure).
pub fn worth_scanning(st: &JobStatus) -> bool {
    !st.launch_failed && !st.oom && !st.timeout && (st.exit_code != 0 || st.signal != 0)
}

/// The job's SystemComment from its job directory's launch request, or "".
pub fn system_comment(dir: &Path) -> String {
    let req = match crate::jobdir::read_launch(dir) {
        Ok(r) => r,
        Err(e) => {
            debug!("{}: no launch request to scan: {e}", dir.display());
            return String::new();
        }
    };
    let io = crate::stepd::run_script::io_paths(&req);
    let path = io.stderr.unwrap_or(io.stdout);
    let creds = Creds {
        uid: req.uid,
        gid: req.gid,
        groups: &req.groups,
    };
    match asuser::run(creds, || read_tail(Path::new(&path), gpu_oom::TAIL_BYTES)) {
        Ok(tail) => gpu_oom::scan(&tail).unwrap_or_default(),
        Err(e) => {
            debug!("job {}: cannot read {path}: {e}", req.job_id);
            String::new()
        }
    }
}

/// The last `max` bytes of a regular file. Opened non-blocking so that a
/// FIFO named as the output never stalls the agent; anything but a
/// regular file (a FIFO, a terminal, /dev/null) yields nothing.
pub fn read_tail(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Ok(Vec::new());
    }
    let start = meta.len().saturating_sub(max);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity(max.min(meta.len()) as usize);
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_the_tail_of_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("err");
        let mut text = "x".repeat(100_000);
        text.push_str("\nRuntimeError: CUDA error: out of memory\n");
        std::fs::write(&p, &text).unwrap();
        let tail = read_tail(&p, 64 * 1024).unwrap();
        assert_eq!(tail.len(), 64 * 1024);
        assert!(gpu_oom::scan(&tail).is_some());
        let small = read_tail(&p, 10).unwrap();
        assert_eq!(small, b"of memory\n");
        // A FIFO nobody writes to: nothing, at once.
        let fifo = dir.path().join("fifo");
        drover_proto::sys::mkfifo(&fifo, 0o600).unwrap();
        assert!(read_tail(&fifo, 100).unwrap().is_empty());
        assert!(read_tail(&dir.path().join("none"), 100).is_err());
    }

    #[test]
    fn only_failures_of_the_script_are_scanned() {
        let failed = JobStatus {
            exit_code: 1,
            ..Default::default()
        };
        assert!(worth_scanning(&failed));
        assert!(!worth_scanning(&JobStatus::default()));
        assert!(!worth_scanning(&JobStatus {
            oom: true,
            ..failed.clone()
        }));
        assert!(!worth_scanning(&JobStatus {
            timeout: true,
            ..failed.clone()
        }));
    }
}
