//! The gRPC service: authenticate, then hand the request to the owner task.

use drover_proto::auth::{ClusterKey, Identity};
use drover_proto::client::identity;
use drover_proto::controller_server::Controller;
use drover_proto::*;
use tokio::sync::{mpsc, oneshot};
use tonic::{Request, Response, Status};

use crate::ctld::{Ctld, Op, Reply};
use crate::submit::msg;

pub struct Svc {
    pub tx: mpsc::Sender<Op>,
    pub key: ClusterKey,
}

impl Svc {
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Ctld, Reply<T>) + Send + 'static,
    ) -> Result<Response<T>, Status> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Box::new(move |c: &mut Ctld| f(c, tx)))
            .await
            .map_err(|_| Status::unavailable("controller is shutting down"))?;
        rx.await
            .map_err(|_| Status::unavailable("controller is shutting down"))?
            .map(Response::new)
    }

    fn who<T>(&self, req: &Request<T>) -> Result<Identity, Status> {
        identity(&self.key, req)
    }

    fn daemon<T>(&self, req: &Request<T>) -> Result<Identity, Status> {
        let id = identity(&self.key, req)?;
        if !id.daemon {
            return Err(Status::permission_denied(msg::ACCESS));
        }
        Ok(id)
    }
}

#[tonic::async_trait]
impl Controller for Svc {
    async fn submit(
        &self,
        req: Request<SubmitRequest>,
    ) -> Result<Response<SubmitResponse>, Status> {
        let who = self.who(&req)?;
        let spec = req.into_inner().spec.unwrap_or_default();
        self.call(move |c, r| c.submit(who, spec, r)).await
    }

    async fn get_jobs(
        &self,
        req: Request<GetJobsRequest>,
    ) -> Result<Response<GetJobsResponse>, Status> {
        self.who(&req)?;
        let req = req.into_inner();
        self.call(move |c, r| {
            let _ = r.send(c.get_jobs(req));
        })
        .await
    }

    async fn cancel(
        &self,
        req: Request<CancelRequest>,
    ) -> Result<Response<CancelResponse>, Status> {
        let who = self.who(&req)?;
        let req = req.into_inner();
        self.call(move |c, r| {
            let v = c.cancel(who, req);
            c.reply_durable(r, v);
        })
        .await
    }

    async fn update_job(
        &self,
        req: Request<UpdateJobRequest>,
    ) -> Result<Response<UpdateJobResponse>, Status> {
        let who = self.who(&req)?;
        let req = req.into_inner();
        self.call(move |c, r| {
            let v = c.update_job(who, req);
            c.reply_durable(r, v);
        })
        .await
    }

    async fn wait_job(
        &self,
        req: Request<WaitJobRequest>,
    ) -> Result<Response<WaitJobResponse>, Status> {
        self.who(&req)?;
        let id = req.into_inner().job_id;
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Box::new(move |c: &mut Ctld| c.wait_job(id, tx)))
            .await
            .map_err(|_| Status::unavailable("controller is shutting down"))?;
        let info = rx
            .await
            .map_err(|_| Status::unavailable("controller is shutting down"))??;
        Ok(Response::new(WaitJobResponse { job: Some(info) }))
    }

    async fn get_nodes(
        &self,
        req: Request<GetNodesRequest>,
    ) -> Result<Response<GetNodesResponse>, Status> {
        self.who(&req)?;
        let names = req.into_inner().names;
        self.call(move |c, r| {
            let idx: Vec<usize> = if names.is_empty() {
                (0..c.cluster.nodes.len()).collect()
            } else {
                names.iter().filter_map(|n| c.cluster.node_idx(n)).collect()
            };
            if !names.is_empty() && idx.is_empty() {
                let _ = r.send(Err(Status::not_found("Invalid node name specified")));
                return;
            }
            let nodes = idx.into_iter().map(|i| c.node_info(i)).collect();
            let _ = r.send(Ok(GetNodesResponse {
                nodes,
                now: crate::ctld::now(),
            }));
        })
        .await
    }

    async fn update_node(
        &self,
        req: Request<UpdateNodeRequest>,
    ) -> Result<Response<UpdateNodeResponse>, Status> {
        let who = self.who(&req)?;
        let req = req.into_inner();
        self.call(move |c, r| {
            let v = c.update_node(who, req);
            c.reply_durable(r, v);
        })
        .await
    }

    async fn get_partitions(
        &self,
        req: Request<GetPartitionsRequest>,
    ) -> Result<Response<GetPartitionsResponse>, Status> {
        self.who(&req)?;
        let names = req.into_inner().names;
        self.call(move |c, r| {
            let idx: Vec<usize> = if names.is_empty() {
                (0..c.cluster.parts.len()).collect()
            } else {
                names.iter().filter_map(|n| c.cluster.part_idx(n)).collect()
            };
            if !names.is_empty() && idx.is_empty() {
                let _ = r.send(Err(Status::not_found(msg::INVALID_PARTITION)));
                return;
            }
            let partitions = idx.into_iter().map(|i| c.partition_info(i)).collect();
            let _ = r.send(Ok(GetPartitionsResponse {
                partitions,
                now: crate::ctld::now(),
            }));
        })
        .await
    }

    async fn ping(&self, req: Request<PingRequest>) -> Result<Response<PingResponse>, Status> {
        self.who(&req)?;
        self.call(|c, r| {
            let _ = r.send(Ok(PingResponse {
                host: c
                    .cfg
                    .slurmctld_host
                    .first()
                    .map(|h| h.name.clone())
                    .unwrap_or_else(|| c.host.clone()),
                version: env!("CARGO_PKG_VERSION").into(),
                start_time: c.start_time,
                cluster: c.cfg.cluster_name.clone(),
            }));
        })
        .await
    }

    async fn get_config(
        &self,
        req: Request<ConfigRequest>,
    ) -> Result<Response<ConfigResponse>, Status> {
        self.who(&req)?;
        self.call(|c, r| {
            let _ = r.send(Ok(c.config_entries()));
        })
        .await
    }

    async fn reconfigure(
        &self,
        req: Request<ReconfigureRequest>,
    ) -> Result<Response<ReconfigureResponse>, Status> {
        let who = self.who(&req)?;
        self.call(move |c, r| {
            if !c.is_admin(&who) {
                let _ = r.send(Err(Status::permission_denied(msg::ACCESS)));
                return;
            }
            let v = c.reconfigure();
            c.reply_durable(r, v);
        })
        .await
    }

    async fn shutdown(
        &self,
        req: Request<ShutdownRequest>,
    ) -> Result<Response<ShutdownResponse>, Status> {
        let who = self.who(&req)?;
        self.call(move |c, r| {
            if !c.is_admin(&who) {
                let _ = r.send(Err(Status::permission_denied(msg::ACCESS)));
                return;
            }
            tracing::info!("shutdown requested by uid {}", who.uid);
            c.shutdown = true;
            c.reply_durable(r, Ok(ShutdownResponse {}));
        })
        .await
    }

    async fn register(
        &self,
        req: Request<RegisterRequest>,
    ) -> Result<Response<RegisterResponse>, Status> {
        self.daemon(&req)?;
        let req = req.into_inner();
        self.call(move |c, r| {
            let v = c.register(req);
            c.reply_durable(r, Ok(v));
        })
        .await
    }

    async fn heartbeat(
        &self,
        req: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        self.daemon(&req)?;
        let req = req.into_inner();
        self.call(move |c, r| {
            let _ = r.send(Ok(c.heartbeat(req)));
        })
        .await
    }

    async fn job_ended(
        &self,
        req: Request<JobEndedRequest>,
    ) -> Result<Response<JobEndedResponse>, Status> {
        self.daemon(&req)?;
        let req = req.into_inner();
        self.call(move |c, r| {
            c.agent_job_ended(req);
            c.reply_durable(r, Ok(JobEndedResponse {}));
        })
        .await
    }
}
