//! Every endpoint, once: the router is built from this table and so is the
//! OpenAPI document ([`crate::openapi`]), so the two cannot disagree.

use std::sync::Arc;

use axum::routing::{delete, get, post, MethodRouter};
use axum::Router;

use crate::{auth, cluster, dash, jobs, metrics, openapi, slurmdb, App};

/// Which handler serves an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Ping,
    Diag,
    Jobs,
    JobSubmit,
    JobGet,
    JobUpdate,
    JobCancel,
    Nodes,
    Node,
    Partitions,
    Partition,
    Reservations,
    DbJobs,
    DbJob,
    Associations,
    Qos,
    Metrics,
    OpenApi,
    WhoAmI,
    JobDetail,
    JobRequeue,
    Gpus,
}

/// What the request body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    None,
    /// `{"script": ..., "job": {...}}` ([`crate::jobdesc::FIELDS`]).
    Submit,
    /// `{field: value}` ([`crate::jobs::UPDATE_FIELDS`]).
    Update,
}

pub struct Endpoint {
    pub op: Op,
    pub method: &'static str,
    pub path: &'static str,
    pub summary: &'static str,
    pub query: &'static [&'static str],
    pub body: Body,
    /// The answer's data member (`jobs`, `nodes`, ...); "" for none.
    pub data: &'static str,
    /// Needs a token (TCP) or a local peer; false: served to anyone.
    pub auth: bool,
}

const fn ep(
    op: Op,
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    query: &'static [&'static str],
    body: Body,
    data: &'static str,
) -> Endpoint {
    Endpoint {
        op,
        method,
        path,
        summary,
        query,
        body,
        data,
        auth: true,
    }
}

const JOBS_QUERY: &[&str] = &["update_time", "flags"];
const DB_JOBS_QUERY: &[&str] = &[
    "users",
    "account",
    "start_time",
    "end_time",
    "state",
    "partition",
    "job_name",
    "qos",
];

pub const ENDPOINTS: &[Endpoint] = &[
    ep(
        Op::Ping,
        "get",
        "/slurm/v0.0.40/ping",
        "ping the controller",
        &[],
        Body::None,
        "pings",
    ),
    ep(
        Op::Diag,
        "get",
        "/slurm/v0.0.40/diag",
        "controller statistics (sdiag)",
        &[],
        Body::None,
        "statistics",
    ),
    ep(
        Op::Jobs,
        "get",
        "/slurm/v0.0.40/jobs",
        "list jobs (squeue)",
        JOBS_QUERY,
        Body::None,
        "jobs",
    ),
    ep(
        Op::JobSubmit,
        "post",
        "/slurm/v0.0.40/job/submit",
        "submit a batch job (sbatch)",
        &[],
        Body::Submit,
        "result",
    ),
    ep(
        Op::JobGet,
        "get",
        "/slurm/v0.0.40/job/{job_id}",
        "show a job, an array task A_i or a whole array A",
        JOBS_QUERY,
        Body::None,
        "jobs",
    ),
    ep(
        Op::JobUpdate,
        "post",
        "/slurm/v0.0.40/job/{job_id}",
        "update a job: hold, release, time limit, nice, ...",
        &[],
        Body::Update,
        "results",
    ),
    ep(
        Op::JobCancel,
        "delete",
        "/slurm/v0.0.40/job/{job_id}",
        "cancel or signal a job (scancel)",
        &["signal", "flags"],
        Body::None,
        "",
    ),
    ep(
        Op::Nodes,
        "get",
        "/slurm/v0.0.40/nodes",
        "list nodes",
        &[],
        Body::None,
        "nodes",
    ),
    ep(
        Op::Node,
        "get",
        "/slurm/v0.0.40/node/{node_name}",
        "show a node",
        &[],
        Body::None,
        "nodes",
    ),
    ep(
        Op::Partitions,
        "get",
        "/slurm/v0.0.40/partitions",
        "list partitions",
        &[],
        Body::None,
        "partitions",
    ),
    ep(
        Op::Partition,
        "get",
        "/slurm/v0.0.40/partition/{partition_name}",
        "show a partition",
        &[],
        Body::None,
        "partitions",
    ),
    ep(
        Op::Reservations,
        "get",
        "/slurm/v0.0.40/reservations",
        "list reservations",
        &[],
        Body::None,
        "reservations",
    ),
    ep(
        Op::DbJobs,
        "get",
        "/slurmdb/v0.0.40/jobs",
        "accounting records (sacct)",
        DB_JOBS_QUERY,
        Body::None,
        "jobs",
    ),
    ep(
        Op::DbJob,
        "get",
        "/slurmdb/v0.0.40/job/{job_id}",
        "one job's accounting record",
        &[],
        Body::None,
        "jobs",
    ),
    ep(
        Op::Associations,
        "get",
        "/slurmdb/v0.0.40/associations",
        "associations",
        &[],
        Body::None,
        "associations",
    ),
    ep(
        Op::Qos,
        "get",
        "/slurmdb/v0.0.40/qos",
        "QOS",
        &[],
        Body::None,
        "qos",
    ),
    Endpoint {
        auth: false,
        ..ep(
            Op::Metrics,
            "get",
            "/metrics",
            "Prometheus metrics (text exposition)",
            &[],
            Body::None,
            "",
        )
    },
    Endpoint {
        auth: false,
        ..ep(
            Op::OpenApi,
            "get",
            "/openapi/v3",
            "this document",
            &[],
            Body::None,
            "",
        )
    },
    ep(
        Op::WhoAmI,
        "get",
        "/drover/v0.0.40/whoami",
        "Drover: the user the request acts for",
        &[],
        Body::None,
        "user",
    ),
    ep(
        Op::JobDetail,
        "get",
        "/drover/v0.0.40/job/{job_id}/detail",
        "Drover: scontrol show job -d, show step and seff texts of a job, and its output tail",
        &[],
        Body::None,
        "detail",
    ),
    ep(
        Op::JobRequeue,
        "post",
        "/drover/v0.0.40/job/{job_id}/requeue",
        "Drover: requeue a job (scontrol requeue)",
        &[],
        Body::None,
        "",
    ),
    ep(
        Op::Gpus,
        "get",
        "/drover/v0.0.40/gpus",
        "Drover: the devices (GPUs) running jobs hold, per node and index",
        &[],
        Body::None,
        "gpus",
    ),
];

fn handler(op: Op) -> MethodRouter<Arc<App>> {
    match op {
        Op::Ping => get(cluster::ping),
        Op::Diag => get(cluster::diag),
        Op::Jobs => get(jobs::list),
        Op::JobSubmit => post(jobs::submit),
        Op::JobGet => get(jobs::show),
        Op::JobUpdate => post(jobs::update),
        Op::JobCancel => delete(jobs::cancel),
        Op::Nodes => get(cluster::nodes),
        Op::Node => get(cluster::node),
        Op::Partitions => get(cluster::partitions),
        Op::Partition => get(cluster::partition),
        Op::Reservations => get(cluster::reservations),
        Op::DbJobs => get(slurmdb::jobs),
        Op::DbJob => get(slurmdb::job),
        Op::Associations => get(slurmdb::associations),
        Op::Qos => get(slurmdb::qos),
        Op::Metrics => get(metrics::serve),
        Op::OpenApi => get(openapi::serve),
        Op::WhoAmI => get(dash::whoami),
        Op::JobDetail => get(dash::detail),
        Op::JobRequeue => post(dash::requeue),
        Op::Gpus => get(dash::gpus),
    }
}

/// The routes of [`ENDPOINTS`], authenticated where they say so.
pub fn routes(app: &Arc<App>) -> Router<Arc<App>> {
    let mut r = Router::new();
    for e in ENDPOINTS {
        let mut h = handler(e.op);
        if e.auth {
            h = h.layer(axum::middleware::from_fn_with_state(
                app.clone(),
                auth::authenticate,
            ));
        }
        r = r.route(e.path, h);
    }
    r
}
