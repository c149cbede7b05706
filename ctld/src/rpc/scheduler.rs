//! The `Scheduler` gRPC service: sprio, sshare and reservations.

use drover_proto::auth::Identity;
use drover_proto::scheduler_server::Scheduler;
use drover_proto::*;
use tonic::{Request, Response, Status};

use crate::ctld::Ctld;
use crate::rpc::controller::Svc;
use crate::submit::msg;

/// Same channel to the owner task and key as the controller service.
pub struct SchedSvc(pub Svc);

impl SchedSvc {
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Ctld) -> Result<T, Status> + Send + 'static,
    ) -> Result<Response<T>, Status> {
        self.0
            .call(move |c, r| {
                let _ = r.send(f(c));
            })
            .await
    }

    fn who<T>(&self, req: &Request<T>) -> Result<Identity, Status> {
        self.0.who(req)
    }
}

fn admin(c: &Ctld, who: &Identity) -> Result<(), Status> {
    if c.is_admin(who) {
        Ok(())
    } else {
        Err(Status::permission_denied(msg::ACCESS))
    }
}

impl Ctld {
    pub fn priorities(
        &mut self,
        who: &Identity,
        req: GetPrioritiesRequest,
    ) -> GetPrioritiesResponse {
        let pc = crate::dispatch::state::prio_conf(&self.cfg);
        // A job submitted since the last full pass has no factors yet: as
        // Slurm computes them at submission, sprio must not show zeros.
        if pc.multifactor
            && self
                .queue
                .iter()
                .any(|(_, id)| !self.sched.factors.contains_key(id))
        {
            let t = self.now;
            self.charge_usage(t, &pc);
            self.recompute_priorities(t, &pc);
        }
        let mut jobs = Vec::new();
        let viewer = self.job_viewer(who);
        let ids: Vec<u32> = self.queue.iter().map(|(_, id)| *id).collect();
        for id in ids {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            if !req.job_ids.is_empty() && !req.job_ids.contains(&id) {
                continue;
            }
            if !req.users.is_empty() && !req.users.contains(&job.rec.user_name) {
                continue;
            }
            if !viewer.sees(job.rec.uid) {
                continue;
            }
            let o = self.owner(job);
            let f = self.sched.factors.get(&id).cloned().unwrap_or_default();
            let part = job.spec().partition.split(',').next().unwrap_or("").trim();
            let part = if part.is_empty() {
                self.cluster
                    .default_part
                    .map(|p| self.cluster.parts[p].conf.name.clone())
                    .unwrap_or_default()
            } else {
                part.to_string()
            };
            jobs.push(PriorityFactors {
                job_id: id,
                partition: part,
                user: o.user,
                account: o.account,
                priority: job.rt().priority,
                site: 0.0,
                age: f.age,
                assoc: f.assoc,
                fairshare: f.fairshare,
                jobsize: f.jobsize,
                partition_factor: f.partition,
                qos: f.qos,
                nice: job.spec().nice,
                tres: f
                    .tres
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.round() as i64))
                    .collect::<Vec<_>>()
                    .join(","),
            });
        }
        jobs.sort_by_key(|j| j.job_id);
        GetPrioritiesResponse {
            jobs,
            weights: Some(PriorityWeights {
                age: pc.w_age,
                assoc: pc.w_assoc,
                fairshare: pc.w_fairshare,
                jobsize: pc.w_jobsize,
                partition: pc.w_partition,
                qos: pc.w_qos,
                tres: pc.weights_text.clone(),
            }),
            multifactor: pc.multifactor,
        }
    }

    pub fn shares(&mut self, who: &Identity) -> GetSharesResponse {
        let pc = crate::dispatch::state::prio_conf(&self.cfg);
        let t = self.now;
        self.charge_usage(t, &pc);
        // PrivateData=usage: a user sees only their own rows.
        let own = (self.private().usage && !self.sees_all(who))
            .then(|| self.names.user(who.uid).to_string());
        let rows = self
            .share_rows(&pc)
            .into_iter()
            .filter(|r| own.as_ref().is_none_or(|u| &r.user == u))
            .map(|r| ShareRow {
                account: r.account,
                user: r.user,
                raw_shares: r.raw_shares,
                norm_shares: r.norm_shares,
                raw_usage: r.raw_usage,
                effective_usage: r.effective_usage,
                fairshare: r.fairshare,
                depth: r.depth,
            })
            .collect();
        GetSharesResponse { rows }
    }
}

#[tonic::async_trait]
impl Scheduler for SchedSvc {
    async fn get_priorities(
        &self,
        req: Request<GetPrioritiesRequest>,
    ) -> Result<Response<GetPrioritiesResponse>, Status> {
        let who = self.who(&req)?;
        let req = req.into_inner();
        self.call(move |c| Ok(c.priorities(&who, req))).await
    }

    async fn get_shares(
        &self,
        req: Request<GetSharesRequest>,
    ) -> Result<Response<GetSharesResponse>, Status> {
        let who = self.who(&req)?;
        self.call(move |c| Ok(c.shares(&who))).await
    }

    async fn create_reservation(
        &self,
        req: Request<ReservationRequest>,
    ) -> Result<Response<ReservationResponse>, Status> {
        let who = self.who(&req)?;
        let args = req.into_inner().args;
        self.call(move |c| {
            admin(c, &who)?;
            let name = c.create_reservation(&args, c.now)?;
            Ok(ReservationResponse { name })
        })
        .await
    }

    async fn update_reservation(
        &self,
        req: Request<ReservationRequest>,
    ) -> Result<Response<ReservationResponse>, Status> {
        let who = self.who(&req)?;
        let args = req.into_inner().args;
        self.call(move |c| {
            admin(c, &who)?;
            let name = c.update_reservation(&args, c.now)?;
            Ok(ReservationResponse { name })
        })
        .await
    }

    async fn delete_reservation(
        &self,
        req: Request<DeleteReservationRequest>,
    ) -> Result<Response<ReservationResponse>, Status> {
        let who = self.who(&req)?;
        let name = req.into_inner().name;
        self.call(move |c| {
            admin(c, &who)?;
            let name = c.delete_reservation(&name)?;
            Ok(ReservationResponse { name })
        })
        .await
    }

    async fn get_reservations(
        &self,
        req: Request<GetReservationsRequest>,
    ) -> Result<Response<GetReservationsResponse>, Status> {
        let who = self.who(&req)?;
        let name = req.into_inner().name;
        self.call(move |c| {
            let t = c.now;
            c.resv_snaps(t);
            // PrivateData=reservations: only those the user may use.
            let mine = if c.private().reservations && !c.sees_all(&who) {
                let user = c.names.user(who.uid).to_string();
                let accounts = c.user_accounts(&user);
                Some((user, accounts))
            } else {
                None
            };
            let reservations: Vec<ReservationInfo> = c
                .sched
                .resvs
                .iter()
                .filter(|r| name.is_empty() || r.name == name)
                .filter(|r| {
                    mine.as_ref()
                        .is_none_or(|(u, a)| crate::privacy::resv_usable(r, u, a))
                })
                .cloned()
                .collect();
            if !name.is_empty() && reservations.is_empty() {
                return Err(Status::not_found(format!("Reservation {name} not found")));
            }
            Ok(GetReservationsResponse {
                reservations,
                now: t,
            })
        })
        .await
    }
}
