//! `sbcast`: receive a file for a job running on one of this agent's nodes
//! and write it with the job user's rights (never root's).
//!
//! The first chunk names the job, node and destination; the controller
//! confirms the job runs on that node and whose it is. Only the owner, root
//! or SlurmUser may send. The file is created `O_EXCL` (replaced only with
//! `--force`), mode 0700 as Slurm's slurmd does, then with `--preserve` the
//! source's mode and times are applied. Chunks are bounded by the sender
//! (and by the gRPC message limit); the file is never held in memory whole.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;

use drover_proto::auth::Identity;
use drover_proto::{BcastChunk, BcastResponse, GetJobsRequest, JobFilter, JobState};
use tonic::{Request, Status, Streaming};
use tracing::info;

use crate::agent::Shared;
use crate::asuser::{self, Creds};

/// Largest chunk accepted (sbcast sends at most 8 MiB).
pub const MAX_CHUNK: usize = 16 << 20;

/// Who the file is written as: the caller when they own the job (with
/// their groups), else (an administrator) the job's user and group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteAs {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

/// Decide whether `caller` may write into the job of `owner`/`owner_gid`,
/// and as whom. Pure.
pub fn write_as(caller: &Identity, admin: bool, owner: u32, owner_gid: u32) -> Option<WriteAs> {
    if caller.uid == owner {
        Some(WriteAs {
            uid: caller.uid,
            gid: caller.gid,
            groups: caller.groups.clone(),
        })
    } else if admin {
        Some(WriteAs {
            uid: owner,
            gid: owner_gid,
            groups: vec![owner_gid],
        })
    } else {
        None
    }
}

/// The message for a failed file operation: the C library's text (Slurm
/// prints `REQUEST_FILE_BCAST(node): File exists`).
fn io_status(e: &std::io::Error) -> Status {
    let text = match e.raw_os_error() {
        Some(n) => crate::stepd::sys::strerror(n),
        None => e.to_string(),
    };
    let code = match e.kind() {
        std::io::ErrorKind::AlreadyExists => tonic::Code::AlreadyExists,
        std::io::ErrorKind::PermissionDenied => tonic::Code::PermissionDenied,
        std::io::ErrorKind::NotFound => tonic::Code::NotFound,
        _ => tonic::Code::FailedPrecondition,
    };
    Status::new(code, text)
}

pub async fn receive(
    shared: Arc<Shared>,
    caller: Identity,
    admin: bool,
    mut stream: Streaming<BcastChunk>,
) -> Result<BcastResponse, Status> {
    let first = stream
        .message()
        .await?
        .ok_or_else(|| Status::invalid_argument("sbcast: nothing was sent"))?;
    if !shared.settings.serves(&first.node) {
        return Err(Status::invalid_argument(format!(
            "node {} is not served by this agent",
            first.node
        )));
    }
    let dest = PathBuf::from(&first.dest);
    if !dest.is_absolute() {
        return Err(Status::invalid_argument(format!(
            "destination {} is not an absolute path",
            first.dest
        )));
    }
    // The controller says whose the job is and where it runs.
    let mut r = Request::new(GetJobsRequest {
        filter: Some(JobFilter {
            job_ids: vec![first.job_id.to_string()],
            ..Default::default()
        }),
        details: false,
        fields: Vec::new(),
    });
    r.set_timeout(std::time::Duration::from_secs(10));
    let jobs = shared.ctl.clone().get_jobs(r).await?.into_inner().jobs;
    let job = jobs
        .into_iter()
        .find(|j| j.job_id == first.job_id)
        .ok_or_else(|| Status::not_found("Invalid job id specified"))?;
    let on_node = drover_conf::hostlist::expand(&job.nodes)
        .unwrap_or_default()
        .contains(&first.node);
    if job.state != JobState::Running as i32 || !on_node {
        return Err(Status::failed_precondition(
            "Job/step already completing or completed",
        ));
    }
    let who = write_as(&caller, admin, job.user_id, job.group_id)
        .ok_or_else(|| Status::permission_denied("Access/permission denied"))?;
    let (job_id, node) = (first.job_id, first.node.clone());
    let (force, preserve, mode, atime, mtime) = (
        first.force,
        first.preserve,
        first.mode,
        first.atime,
        first.mtime,
    );
    let path = dest.clone();
    let w = who.clone();
    let mut file = tokio::task::spawn_blocking(move || {
        let c = Creds {
            uid: w.uid,
            gid: w.gid,
            groups: &w.groups,
        };
        asuser::run(c, || {
            let mut o = std::fs::OpenOptions::new();
            o.write(true).mode(0o700).custom_flags(libc::O_NOFOLLOW);
            if force {
                o.create(true).truncate(true);
            } else {
                o.create_new(true);
            }
            o.open(&path)
        })
    })
    .await
    .map_err(|e| Status::internal(e.to_string()))?
    .map_err(|e| io_status(&e))?;
    let mut written: u64 = 0;
    let mut chunk = first;
    loop {
        if chunk.data.len() > MAX_CHUNK {
            return Err(Status::invalid_argument(format!(
                "sbcast: a chunk of {} bytes is over the limit of {MAX_CHUNK}",
                chunk.data.len()
            )));
        }
        if !chunk.data.is_empty() {
            let data = std::mem::take(&mut chunk.data);
            written += data.len() as u64;
            file = tokio::task::spawn_blocking(move || file.write_all(&data).map(|_| file))
                .await
                .map_err(|e| Status::internal(e.to_string()))?
                .map_err(|e| io_status(&e))?;
        }
        if chunk.last {
            break;
        }
        chunk = stream
            .message()
            .await?
            .ok_or_else(|| Status::aborted("sbcast: the transfer ended early"))?;
    }
    tokio::task::spawn_blocking(move || {
        let c = Creds {
            uid: who.uid,
            gid: who.gid,
            groups: &who.groups,
        };
        asuser::run(c, || {
            if preserve {
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
                set_times(&file, atime, mtime)?;
            }
            file.sync_all()
        })
    })
    .await
    .map_err(|e| Status::internal(e.to_string()))?
    .map_err(|e| io_status(&e))?;
    info!(
        "sbcast: job {job_id}: {written} bytes written to {} on {node}",
        dest.display()
    );
    Ok(BcastResponse { bytes: written })
}

/// Access and modification times (seconds) of an open file.
fn set_times(f: &std::fs::File, atime: i64, mtime: i64) -> std::io::Result<()> {
    let t = std::fs::FileTimes::new()
        .set_accessed(to_system_time(atime))
        .set_modified(to_system_time(mtime));
    f.set_times(t)
}

fn to_system_time(secs: i64) -> std::time::SystemTime {
    let base = std::time::UNIX_EPOCH;
    if secs >= 0 {
        base + std::time::Duration::from_secs(secs as u64)
    } else {
        base - std::time::Duration::from_secs(secs.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(uid: u32) -> Identity {
        Identity {
            uid,
            gid: uid,
            groups: vec![uid, 50],
            daemon: false,
            host: "h".into(),
        }
    }

    #[test]
    fn owner_writes_as_itself_admin_as_the_owner_others_not_at_all() {
        let own = write_as(&id(1000), false, 1000, 1000).unwrap();
        assert_eq!(own.groups, vec![1000, 50]);
        let adm = write_as(&id(0), true, 1000, 100).unwrap();
        assert_eq!((adm.uid, adm.gid, adm.groups), (1000, 100, vec![100]));
        assert!(write_as(&id(1001), false, 1000, 1000).is_none());
    }
}
