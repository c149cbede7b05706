//! The accounting gRPC service.

use std::sync::Arc;
use std::time::Duration;

use drover_proto::acct::accounting_server::Accounting;
use drover_proto::acct::{
    AssocSet, DbdPingRequest, DbdPingResponse, GetAssocsRequest, GetAssocsResponse, JobQuery,
    JobQueryResponse, ModifyRequest, ModifyResponse, RecordJobsRequest, RecordJobsResponse,
    RegisterClusterRequest, RegisterClusterResponse, UsageRequest, UsageResponse,
};
use drover_proto::auth::{ClusterKey, Identity};
use tokio::sync::{watch, Mutex};
use tonic::{Request, Response, Status};

use crate::jobs::JobSql;
use crate::store::Store;

pub struct Dbd {
    pub store: Store,
    pub job_sql: JobSql,
    pub key: ClusterKey,
    /// The association set as stored; changes are serialised by this lock.
    pub assocs: Mutex<AssocSet>,
    pub version: watch::Sender<u64>,
    pub slurm_user_uid: u32,
    pub private_data: Vec<String>,
    pub storage: String,
    pub start_time: i64,
}

#[derive(Clone)]
pub struct Svc(pub Arc<Dbd>);

/// A database error as the client sees it: Unavailable (retry later).
fn db_err(e: sqlx::Error) -> Status {
    tracing::warn!("database: {e}");
    Status::unavailable(format!("Problem talking to the database: {e}"))
}

/// Name of a uid (NSS); the number as text if unknown.
pub fn user_name(uid: u32) -> String {
    drover_proto::sysdb::user_name_or_number(uid)
}

impl Svc {
    fn identity<T>(&self, req: &Request<T>) -> Result<Identity, Status> {
        drover_proto::client::identity(&self.0.key, req)
    }

    /// The configured `PrivateData`.
    fn private(&self) -> drover_conf::private::Private {
        drover_conf::private::Private::parse(&self.0.private_data)
    }

    /// Root, SlurmUser, a daemon, or a user with AdminLevel=Administrator
    /// (Operator when `operator_ok`).
    async fn is_admin(&self, id: &Identity, operator_ok: bool) -> bool {
        if id.daemon || id.uid == 0 || id.uid == self.0.slurm_user_uid {
            return true;
        }
        let name = user_name(id.uid);
        let set = self.0.assocs.lock().await;
        set.users.iter().any(|u| {
            u.name == name
                && (u.admin_level == "Administrator"
                    || (operator_ok && u.admin_level == "Operator"))
        })
    }
}

#[tonic::async_trait]
impl Accounting for Svc {
    async fn record_jobs(
        &self,
        req: Request<RecordJobsRequest>,
    ) -> Result<Response<RecordJobsResponse>, Status> {
        let id = self.identity(&req)?;
        if !id.daemon {
            return Err(Status::permission_denied("Access/permission denied"));
        }
        let jobs = req.into_inner().jobs;
        let stored = crate::jobs::record(&self.0.store, &self.0.job_sql, &jobs)
            .await
            .map_err(db_err)?;
        tracing::debug!("stored {stored} of {} job records", jobs.len());
        Ok(Response::new(RecordJobsResponse { stored }))
    }

    async fn register_cluster(
        &self,
        req: Request<RegisterClusterRequest>,
    ) -> Result<Response<RegisterClusterResponse>, Status> {
        let id = self.identity(&req)?;
        if !id.daemon {
            return Err(Status::permission_denied("Access/permission denied"));
        }
        let Some(mut c) = req.into_inner().cluster else {
            return Err(Status::invalid_argument("no cluster"));
        };
        c.registered = drover_proto::auth::now_secs();
        let name = c.name.clone();
        {
            let mut set = self.0.assocs.lock().await;
            let mut next = set.clone();
            if crate::edit::ensure_cluster(&mut next, c) {
                let v = crate::assocs::save(&self.0.store, &next)
                    .await
                    .map_err(db_err)?;
                next.version = v;
                *set = next;
                self.0.version.send_replace(v);
            }
        }
        let max = crate::jobs::max_job_id(&self.0.store, &name)
            .await
            .map_err(db_err)?;
        tracing::info!("cluster {name} registered (highest job id {max})");
        Ok(Response::new(RegisterClusterResponse { max_job_id: max }))
    }

    async fn get_jobs(&self, req: Request<JobQuery>) -> Result<Response<JobQueryResponse>, Status> {
        let id = self.identity(&req)?;
        let mut q = req.into_inner();
        if !q.all_clusters {
            // Asking for every cluster there is needs no condition (and lets
            // the database pick the job-id / time indexes).
            let wanted: Vec<String> = if q.clusters.is_empty() {
                vec![q.cluster.clone()]
            } else {
                q.clusters.clone()
            };
            let set = self.0.assocs.lock().await;
            if !set.clusters.is_empty() && set.clusters.iter().all(|c| wanted.contains(&c.name)) {
                q.all_clusters = true;
            }
        }
        if self.private().jobs && !self.is_admin(&id, true).await {
            q.uids = vec![id.uid];
        }
        let t0 = std::time::Instant::now();
        let jobs = crate::jobs::query(&self.0.store, &q)
            .await
            .map_err(db_err)?;
        tracing::debug!("sacct query: {} jobs in {:?}", jobs.len(), t0.elapsed());
        Ok(Response::new(JobQueryResponse { jobs }))
    }

    async fn get_assocs(
        &self,
        req: Request<GetAssocsRequest>,
    ) -> Result<Response<GetAssocsResponse>, Status> {
        let id = self.identity(&req)?;
        let r = req.into_inner();
        // Subscribe before looking, so a change between the look and the
        // wait still wakes us; the set itself says which version is current.
        let mut rx = self.0.version.subscribe();
        let current = self.0.assocs.lock().await.version;
        if current == r.known_version && r.wait_ms > 0 {
            let wait = Duration::from_millis(u64::from(r.wait_ms.min(60_000)));
            let _ = tokio::time::timeout(wait, rx.changed()).await;
        }
        let mut set = self.0.assocs.lock().await.clone();
        let p = self.private();
        if (p.users || p.accounts) && !self.is_admin(&id, true).await {
            crate::private::filter_assocs(p, &user_name(id.uid), &mut set);
        }
        Ok(Response::new(GetAssocsResponse {
            changed: set.version != r.known_version,
            set: Some(set),
        }))
    }

    async fn modify(
        &self,
        req: Request<ModifyRequest>,
    ) -> Result<Response<ModifyResponse>, Status> {
        let id = self.identity(&req)?;
        if !self.is_admin(&id, false).await {
            return Err(Status::permission_denied(
                "Your user doesn't have privilege to perform this action",
            ));
        }
        let r = req.into_inner();
        let mut set = self.0.assocs.lock().await;
        let mut next = set.clone();
        let changes = crate::edit::apply(&mut next, &r).map_err(Status::invalid_argument)?;
        if !changes.is_empty() && !r.dry_run {
            let v = crate::assocs::save(&self.0.store, &next)
                .await
                .map_err(db_err)?;
            next.version = v;
            *set = next;
            self.0.version.send_replace(v);
            tracing::info!(
                "{} {} {:?} by uid {}: {} change(s)",
                r.verb,
                r.entity,
                r.names,
                id.uid,
                changes.len()
            );
        }
        Ok(Response::new(ModifyResponse { changes }))
    }

    async fn get_usage(
        &self,
        req: Request<UsageRequest>,
    ) -> Result<Response<UsageResponse>, Status> {
        let id = self.identity(&req)?;
        let r = req.into_inner();
        let mut out = crate::usage::query(&self.0.store, &r, drover_proto::auth::now_secs())
            .await
            .map_err(db_err)?;
        if self.private().usage && !self.is_admin(&id, true).await {
            crate::private::filter_usage(self.private(), &user_name(id.uid), &mut out);
        }
        Ok(Response::new(out))
    }

    async fn ping(
        &self,
        req: Request<DbdPingRequest>,
    ) -> Result<Response<DbdPingResponse>, Status> {
        self.identity(&req)?;
        Ok(Response::new(DbdPingResponse {
            version: env!("CARGO_PKG_VERSION").into(),
            storage: self.0.storage.clone(),
            start_time: self.0.start_time,
        }))
    }
}
