//! The agent calls that take a *user's* token (`scontrol listpids`,
//! `sbcast`, `sattach`, the dashboard's output tail): who is calling and
//! whether as an administrator, then the call itself ([`crate::listpids`],
//! [`crate::bcast`], [`crate::attach`], [`crate::output_tail`]). Every
//! other agent call needs a daemon's token.

use std::sync::Arc;

use tonic::{Request, Status, Streaming};

use drover_proto::auth::Identity;
use drover_proto::{
    AttachInput, BcastChunk, BcastResponse, ListPidsRequest, ListPidsResponse, ReadOutputRequest,
    ReadOutputResponse,
};

use crate::agent::Shared;

/// A user's call: who, and whether an administrator (root, SlurmUser, a
/// daemon).
pub fn caller<T>(shared: &Shared, req: &Request<T>) -> Result<(Identity, bool), Status> {
    let id = drover_proto::client::identity(&shared.key, req)?;
    let admin = id.daemon || id.uid == 0 || id.uid == shared.settings.slurm_user_uid;
    Ok((id, admin))
}

/// `ListPids`: the processes of the caller's jobs (any job for an admin).
pub async fn list_pids(
    shared: &Arc<Shared>,
    request: Request<ListPidsRequest>,
) -> Result<ListPidsResponse, Status> {
    let (id, admin) = caller(shared, &request)?;
    let r = request.into_inner();
    let caller = crate::listpids::Caller { uid: id.uid, admin };
    let shared = shared.clone();
    let procs = tokio::task::spawn_blocking(move || {
        crate::listpids::list(&shared, r.job_id, &r.node, caller)
    })
    .await
    .map_err(|e| Status::internal(e.to_string()))??;
    Ok(ListPidsResponse { procs })
}

/// `FileBcast`: a file written on this node as the job's user.
pub async fn file_bcast(
    shared: &Arc<Shared>,
    request: Request<Streaming<BcastChunk>>,
) -> Result<BcastResponse, Status> {
    let (id, admin) = caller(shared, &request)?;
    crate::bcast::receive(shared.clone(), id, admin, request.into_inner()).await
}

/// `AttachStep`: a running step's output from now on, stdin into its tasks.
pub async fn attach_step(
    shared: &Shared,
    request: Request<Streaming<AttachInput>>,
) -> Result<crate::attach::OutputStream, Status> {
    let (id, admin) = caller(shared, &request)?;
    crate::attach::attach(id.uid, admin, request.into_inner()).await
}

/// `ReadOutput`: the end of a file, read with the caller's own rights.
pub async fn read_output(
    shared: &Arc<Shared>,
    request: Request<ReadOutputRequest>,
) -> Result<ReadOutputResponse, Status> {
    let (id, _) = caller(shared, &request)?;
    let r = request.into_inner();
    let (data, size) =
        tokio::task::spawn_blocking(move || crate::output_tail::read_as(&id, &r.path, r.max_bytes))
            .await
            .map_err(|e| Status::internal(e.to_string()))??;
    Ok(ReadOutputResponse { data, size })
}
