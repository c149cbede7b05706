//! `sattach`: a second client of a running step on this node. It receives
//! the tasks' output from the moment it attaches (as srun does) and may send
//! stdin to a task; the stream ends when the step ends here. Only the job's
//! owner, root or SlurmUser may attach.

use drover_proto::stepio::{Frame, Kind};
use drover_proto::{AttachInput, AttachOutput};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};
use tracing::{debug, warn};

use crate::steps::here;

pub type OutputStream = ReceiverStream<Result<AttachOutput, Status>>;

/// Slurm's words for a step that does not run here.
pub fn missing(job_id: u32, step_id: u32) -> String {
    format!("StepId={job_id}.{step_id} does not exist on this node.")
}

pub async fn attach(
    uid: u32,
    admin: bool,
    mut input: Streaming<AttachInput>,
) -> Result<OutputStream, Status> {
    let first = input
        .message()
        .await?
        .ok_or_else(|| Status::invalid_argument("sattach: no step named"))?;
    let (job_id, step_id) = (first.job_id, first.step_id);
    let step = here::get(job_id, step_id, &first.node)
        .ok_or_else(|| Status::not_found(missing(job_id, step_id)))?;
    if !admin && uid != step.uid {
        return Err(Status::permission_denied("Access/permission denied"));
    }
    let mut output = step.output.subscribe();
    let control = step.control.clone();
    // Holding the registry's copy would keep the output channel open after
    // the step ended.
    drop(step);
    debug!("step {job_id}.{step_id}: client attached (uid {uid})");
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(async move {
        loop {
            match output.recv().await {
                Ok(f) => {
                    let out = AttachOutput {
                        task: f.task,
                        stderr: f.kind == Kind::Stderr,
                        data: f.data,
                    };
                    if tx.send(Ok(out)).await.is_err() {
                        return; // the client went away
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    warn!("step {job_id}.{step_id}: an attached client missed {n} output chunks");
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    tokio::spawn(async move {
        let mut next = Some(first);
        while let Some(m) = next {
            if m.eof || !m.data.is_empty() {
                let data = if m.eof { Vec::new() } else { m.data };
                if control
                    .send(Some(Frame::new(Kind::Stdin, m.task, data)))
                    .await
                    .is_err()
                {
                    return; // the step ended
                }
            }
            next = input.message().await.ok().flatten();
        }
    });
    Ok(ReceiverStream::new(rx))
}
