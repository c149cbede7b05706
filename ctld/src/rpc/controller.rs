//! The gRPC service: authenticate, then hand the request to the owner task.

use drover_proto::auth::{ClusterKey, Identity};
use drover_proto::client::identity;
use drover_proto::controller_server::Controller;
use drover_proto::*;
use tokio::sync::{mpsc, oneshot};
use tonic::{Request, Response, Status};

use crate::ctld::{Ctld, Op, Reply};
use crate::refusal::Refusal;
use crate::runtime::AgentPool;
use crate::submit::msg;

#[derive(Clone)]
pub struct Svc {
    pub tx: mpsc::Sender<Op>,
    pub key: ClusterKey,
    /// Agent connections (step launches and sstat fan out from here).
    pub agents: AgentPool,
    /// Backup controllers: standby or active, the epoch.
    pub ha: std::sync::Arc<crate::runtime::ha::Ha>,
    /// `SlurmctldParameters=rl_enable`: per-user token buckets.
    pub limit: std::sync::Arc<crate::rpc::ratelimit::Limiter>,
    /// Room in StateSaveLocation for new submissions.
    pub disk: std::sync::Arc<crate::runtime::disk::StateDisk>,
}

impl Svc {
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Ctld, Reply<T>) + Send + 'static,
    ) -> Result<Response<T>, Status> {
        let (tx, rx) = oneshot::channel();
        // An operation the owner never ran (it stopped first): when control
        // passes to another controller, the client may send it there.
        let gone = || {
            if self
                .ha
                .stepping_down
                .load(std::sync::atomic::Ordering::Acquire)
            {
                Status::unavailable(drover_proto::standby::NOT_ACTIVE)
            } else {
                Status::unavailable("controller is shutting down")
            }
        };
        self.tx
            .send(Box::new(move |c: &mut Ctld| {
                f(c, Reply::new(move |v| tx.send(v).is_ok()))
            }))
            .await
            .map_err(|_| gone())?;
        rx.await
            .map_err(|_| gone())?
            .map(Response::new)
            .map_err(Status::from)
    }

    /// The caller, once the rate limit admits the call (every user call
    /// comes through here; agents' calls are daemons', never limited).
    pub(crate) fn who<T>(&self, req: &Request<T>) -> Result<Identity, Status> {
        let id = identity(&self.key, req)?;
        self.limit.admit(&id, req.remote_addr())?;
        Ok(id)
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
    async fn job_stats(
        &self,
        req: Request<JobStatsRequest>,
    ) -> Result<Response<JobStatsResponse>, Status> {
        let who = self.who(&req)?;
        let job_id = req.into_inner().job_id;
        let targets = self
            .call(move |c, r| {
                let _ = r.send(c.stats_targets(&who, job_id));
            })
            .await?
            .into_inner();
        // Ask every node at once; a node that cannot answer is reported, not fatal.
        let calls = targets.into_iter().map(|(node, addr)| {
            let agent = self.agents.get(&addr);
            async move {
                let r = match agent {
                    Some(mut a) => {
                        a.job_stats(JobStatsRequest {
                            job_id,
                            node: node.clone(),
                        })
                        .await
                    }
                    None => Err(Status::unavailable("no address for the node's agent")),
                };
                (node, r)
            }
        });
        let mut out = JobStatsResponse::default();
        for (node, r) in futures_join_all(calls).await {
            match r {
                Ok(resp) => out.steps.extend(resp.into_inner().steps),
                Err(e) => out.errors.push(format!("{node}: {}", e.message())),
            }
        }
        Ok(Response::new(out))
    }

    async fn create_step(
        &self,
        req: Request<StepRequest>,
    ) -> Result<Response<CreateStepResponse>, Status> {
        let who = self.who(&req)?;
        let r = req.into_inner();
        // srun may go at any moment (killed, Ctrl-C), and its call with it.
        // A step the log already holds must still be launched, or ended
        // where its launch failed, so the rest runs as a task of its own:
        // dropping its handle does not stop it.
        let svc = self.clone();
        tokio::spawn(async move { svc.create_and_launch_step(who, r).await })
            .await
            .map_err(|e| Status::internal(format!("step launch: {e}")))?
    }
    async fn complete_allocation(
        &self,
        req: Request<CompleteAllocationRequest>,
    ) -> Result<Response<CompleteAllocationResponse>, Status> {
        let who = self.who(&req)?;
        let r = req.into_inner();
        self.call(move |c, reply| {
            let v = c.complete_allocation(&who, r);
            c.reply_durable(reply, v);
        })
        .await
    }

    async fn allocation_alive(
        &self,
        req: Request<AllocationAliveRequest>,
    ) -> Result<Response<AllocationAliveResponse>, Status> {
        let who = self.who(&req)?;
        let r = req.into_inner();
        self.call(move |c, reply| {
            let _ = reply.send(c.allocation_alive(&who, r));
        })
        .await
    }

    async fn get_job_script(
        &self,
        req: Request<JobScriptRequest>,
    ) -> Result<Response<JobScriptResponse>, Status> {
        let who = self.who(&req)?;
        let id = req.into_inner().job_id;
        self.call(move |c, reply| {
            let _ = reply.send(
                c.job_script(&who, id)
                    .map(|script| JobScriptResponse { script }),
            );
        })
        .await
    }

    async fn get_diag(&self, req: Request<DiagRequest>) -> Result<Response<DiagResponse>, Status> {
        self.who(&req)?;
        // The runtime's worker threads are what serves RPCs.
        let threads = tokio::runtime::Handle::current().metrics().num_workers() as u32;
        self.call(move |c, reply| {
            let _ = reply.send(Ok(c.diag(threads)));
        })
        .await
    }

    async fn get_metrics(
        &self,
        req: Request<MetricsRequest>,
    ) -> Result<Response<MetricsResponse>, Status> {
        let who = self.who(&req)?;
        let ages = self
            .call(move |c, reply| {
                let allowed = who.daemon
                    || who.uid == 0
                    || drover_proto::sysdb::passwd_by_name(&c.cfg.slurm_user)
                        .is_some_and(|p| p.uid == who.uid);
                if !allowed {
                    let _ = reply.send(Err(Refusal::permission_denied(msg::ACCESS)));
                    return;
                }
                let now = crate::runtime::clock();
                let ages: Vec<(String, i64)> = c
                    .cluster
                    .nodes
                    .iter()
                    .map(|n| (n.conf.name.clone(), (now - n.last_seen).max(0)))
                    .collect();
                let _ = reply.send(Ok(ages));
            })
            .await?
            .into_inner();
        Ok(Response::new(MetricsResponse {
            text: crate::metrics::text(&ages),
        }))
    }

    async fn mint_token(
        &self,
        req: Request<MintTokenRequest>,
    ) -> Result<Response<MintTokenResponse>, Status> {
        let who = self.who(&req)?;
        let r = req.into_inner();
        // The owner only hands over two config values; signing happens here.
        let (path, slurm_user) = self
            .call(|c, reply| {
                let _ = reply.send(Ok((c.cfg.jwt_key_path(), c.cfg.slurm_user.clone())));
            })
            .await?
            .into_inner();
        crate::token::mint(
            &who,
            &r,
            path.as_deref(),
            &slurm_user,
            crate::runtime::clock(),
        )
        .map(Response::new)
        .map_err(Status::from)
    }

    async fn step_ended(
        &self,
        req: Request<StepEndedRequest>,
    ) -> Result<Response<StepEndedResponse>, Status> {
        self.daemon(&req)?;
        let r = req.into_inner();
        self.call(move |c, reply| {
            c.step_ended(r);
            let _ = reply.send(Ok(StepEndedResponse {}));
        })
        .await
    }

    async fn submit(
        &self,
        req: Request<SubmitRequest>,
    ) -> Result<Response<SubmitResponse>, Status> {
        let who = self.who(&req)?;
        self.disk
            .admit(prost::Message::encoded_len(req.get_ref()))?;
        let spec = req.into_inner().spec.unwrap_or_default();
        self.call(move |c, r| c.submit(who, spec, r)).await
    }

    /// The generated trait's `GetJobs`: the daemon answers the method in
    /// front of this service (`rpc/jobs.rs`, the owner's encoded bytes);
    /// this answer (the same records) is what the trait requires.
    async fn get_jobs(
        &self,
        req: Request<GetJobsRequest>,
    ) -> Result<Response<GetJobsResponse>, Status> {
        let who = self.who(&req)?;
        let req = req.into_inner();
        self.call(move |c, r| {
            let _ = r.send(c.get_jobs(&who, req));
        })
        .await
    }

    async fn get_jobs_since(
        &self,
        req: Request<GetJobsSinceRequest>,
    ) -> Result<Response<GetJobsSinceResponse>, Status> {
        let who = self.who(&req)?;
        let req = req.into_inner();
        self.call(move |c, r| {
            let _ = r.send(c.get_jobs_since(&who, req));
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
        let who = self.who(&req)?;
        let id = req.into_inner().job_id;
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Box::new(move |c: &mut Ctld| {
                c.wait_job(&who, id, Reply::new(move |v| tx.send(v).is_ok()))
            }))
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
        let who = self.who(&req)?;
        let names = req.into_inner().names;
        self.call(move |c, r| {
            // PrivateData=nodes: node information for operators only.
            if c.private().nodes && !c.sees_all(&who) {
                tracing::info!(
                    "node information refused to uid {} (PrivateData=nodes)",
                    who.uid
                );
                let _ = r.send(Err(Refusal::permission_denied(msg::ACCESS)));
                return;
            }
            let idx: Vec<usize> = if names.is_empty() {
                (0..c.cluster.nodes.len())
                    .filter(|&i| !c.node_hidden(i))
                    .collect()
            } else {
                names.iter().filter_map(|n| c.cluster.node_idx(n)).collect()
            };
            if !names.is_empty() && idx.is_empty() {
                let _ = r.send(Err(Refusal::not_found("Invalid node name specified")));
                return;
            }
            let nodes = idx.into_iter().map(|i| c.node_info(i)).collect();
            let _ = r.send(Ok(GetNodesResponse { nodes, now: c.now }));
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

    async fn edit_partition(
        &self,
        req: Request<PartitionEdit>,
    ) -> Result<Response<PartitionEditResponse>, Status> {
        let who = self.who(&req)?;
        let edit = req.into_inner();
        self.call(move |c, r| {
            let v = c.edit_partition(&who, edit);
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
                let _ = r.send(Err(Refusal::not_found(msg::INVALID_PARTITION)));
                return;
            }
            let partitions = idx.into_iter().map(|i| c.partition_info(i)).collect();
            let _ = r.send(Ok(GetPartitionsResponse {
                partitions,
                now: c.now,
            }));
        })
        .await
    }

    async fn takeover(
        &self,
        req: Request<TakeoverRequest>,
    ) -> Result<Response<TakeoverResponse>, Status> {
        self.takeover_now(req).await
    }

    async fn relinquish(
        &self,
        req: Request<RelinquishRequest>,
    ) -> Result<Response<RelinquishResponse>, Status> {
        self.relinquish_now(req).await
    }

    async fn ping(&self, req: Request<PingRequest>) -> Result<Response<PingResponse>, Status> {
        self.who(&req)?;
        if let Some(standby) = self.standby_ping() {
            return Ok(Response::new(standby));
        }
        let (index, epoch, name) = self.ha_place();
        self.call(move |c, r| {
            let _ = r.send(Ok(PingResponse {
                host: name.unwrap_or_else(|| c.host.clone()),
                version: env!("CARGO_PKG_VERSION").into(),
                start_time: c.start_time,
                cluster: c.cfg.cluster_name.clone(),
                standby: false,
                index,
                epoch,
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
                let _ = r.send(Err(Refusal::permission_denied(msg::ACCESS)));
                return;
            }
            let v = c.reconfigure(crate::runtime::config_files::reload(&c.config_path));
            c.reply_durable(r, v);
        })
        .await
    }

    async fn get_config_files(
        &self,
        req: Request<ConfigFilesRequest>,
    ) -> Result<Response<ConfigFilesResponse>, Status> {
        let who = self.who(&req)?;
        let files = self
            .call(|c, r| {
                let _ = r.send(Ok(c.served_files.clone()));
            })
            .await?
            .into_inner()
            .ok_or_else(|| Status::failed_precondition(crate::configless::NOT_ENABLED))?;
        tracing::debug!("config files for uid {} on {}", who.uid, who.host);
        Ok(Response::new((*files).clone()))
    }

    async fn shutdown(
        &self,
        req: Request<ShutdownRequest>,
    ) -> Result<Response<ShutdownResponse>, Status> {
        let who = self.who(&req)?;
        self.call(move |c, r| {
            if !c.is_admin(&who) {
                let _ = r.send(Err(Refusal::permission_denied(msg::ACCESS)));
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
        let peer = req.remote_addr().map(|a| a.ip().to_string());
        let req = req.into_inner();
        self.call(move |c, r| {
            let v = c.register_from(req, peer);
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

impl Svc {
    /// Create the step (durable), then launch it on its nodes; a node
    /// whose launch fails has its part of the step ended.
    async fn create_and_launch_step(
        &self,
        who: Identity,
        r: StepRequest,
    ) -> Result<Response<CreateStepResponse>, Status> {
        let job_id = r.job_id;
        let (resp, launches) = self
            .call(move |c, reply| {
                // The step is in the log (fsynced) before anything starts.
                let v = c.create_step(&who, r);
                c.reply_durable(reply, v);
            })
            .await?
            .into_inner();
        let step_id = resp.step_id;
        // Every node at once: a fan-out, not one node after another.
        let calls = launches.into_iter().map(|(node, addr, l)| {
            let agent = addr.and_then(|a| self.agents.get(&a));
            async move {
                let res = match agent {
                    Some(mut a) => a.step_launch(l).await.map(|_| ()),
                    None => Err(Status::unavailable("no address for the node's agent")),
                };
                (node, res)
            }
        });
        let mut failed = Vec::new();
        for (node, res) in futures_join_all(calls).await {
            if let Err(e) = res {
                failed.push((node, e.message().to_string()));
            }
        }
        if let Some((node, why)) = failed.first().cloned() {
            let _ = self
                .call(move |c, reply| {
                    for (node, _) in failed {
                        c.step_ended(StepEndedRequest {
                            job_id,
                            step_id,
                            node,
                            exit_code: 1,
                            ..Default::default()
                        });
                    }
                    let _ = reply.send(Ok(()));
                })
                .await;
            return Err(Status::unavailable(format!(
                "launch of step {job_id}.{step_id} failed on {node}: {why}"
            )));
        }
        Ok(Response::new(resp))
    }
}

/// Run futures concurrently and collect their outputs in order (a small
/// join_all on tokio tasks, to keep the futures crate out of the tree).
async fn futures_join_all<F>(futs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        if let Ok(v) = h.await {
            out.push(v);
        }
    }
    out
}
