//! Suspending and resuming a job on this node (`SuspendJob` from the
//! controller: `scontrol suspend|resume`, `PreemptMode=SUSPEND`).
//!
//! With cgroups the job's group (`drover/<node>_<port>/job_<id>`, v1 in the
//! freezer hierarchy) is frozen: the batch script, everything it started
//! and every srun step (their `step_<id>` groups are below it) stop at once
//! and nothing can fork meanwhile. The kernel keeps the group frozen across
//! agent restarts. Without cgroups every process of the job gets SIGSTOP:
//! the supervisor's script group and descendants, and the step tasks'
//! process groups. Resume thaws and sends SIGCONT (covers both ways, and a
//! job frozen before its group existed). Killing a suspended job thaws it
//! first (the supervisor's `terminate`, [`thaw_for_kill`]).

use std::sync::Arc;
use std::time::Duration;

use tonic::Status;
use tracing::{info, warn};

use crate::agent::Shared;
use crate::cgroup::job::set_frozen;
use crate::stepd::protocol::Request as StepdRequest;

/// How long a freeze may take before the agent reports it (the group stays
/// set to freeze; a task in an uninterruptible sleep stops when it wakes).
const FREEZE_WAIT: Duration = Duration::from_secs(5);

/// Stop (`suspend`) or continue every process of `job_id` on `node`.
pub async fn apply(
    shared: &Arc<Shared>,
    job_id: u32,
    node: &str,
    suspend: bool,
) -> Result<(), Status> {
    let dir = shared.settings.cgroup.as_ref().and_then(|sys| {
        sys.freezer_dir(node, shared.settings.listen.port(), job_id)
            .filter(|d| d.exists())
            .map(|d| (sys.version, d))
    });
    let mut frozen = false;
    if let Some((version, d)) = dir {
        let res =
            tokio::task::spawn_blocking(move || set_frozen(version, &d, suspend, FREEZE_WAIT))
                .await
                .map_err(|e| Status::internal(e.to_string()))?;
        match res {
            Ok(()) => frozen = suspend,
            Err(e) => warn!("job {job_id}: {e}"),
        }
    }
    info!(
        "job {job_id}: {} on {node}{}",
        if suspend { "suspended" } else { "resumed" },
        if frozen { " (cgroup frozen)" } else { "" }
    );
    if frozen {
        return Ok(());
    }
    let sig = if suspend {
        libc::SIGSTOP
    } else {
        libc::SIGCONT
    };
    crate::steps::signal_job(job_id, Some(node), sig, 0);
    if shared.jobs().get(job_id).is_some() {
        crate::supervisors::to_supervisor(
            shared,
            job_id,
            StepdRequest::Signal {
                signal: sig,
                batch_only: false,
            },
        )
        .await?;
    }
    Ok(())
}

/// Before a kill: thaw the job's group on `node` if it has one, so that
/// SIGTERM reaches the tasks (the supervisor does the same for its job).
pub fn thaw_for_kill(shared: &Shared, job_id: u32, node: &str) {
    let Some(sys) = shared.settings.cgroup.as_ref() else {
        return;
    };
    if let Some(d) = sys
        .freezer_dir(node, shared.settings.listen.port(), job_id)
        .filter(|d| d.exists())
    {
        let _ = set_frozen(sys.version, &d, false, Duration::ZERO);
    }
}
