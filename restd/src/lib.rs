//! droverrestd: Slurm's REST API (slurmrestd's paths and JSON, data_parser
//! v0.0.40) and Prometheus metrics, in front of the controller and the
//! accounting daemon. It owns no state: every request becomes the gRPC
//! call the matching command would make, with credentials for the
//! request's user (see [`auth`] and [`ctl`]).

pub mod auth;
pub mod cluster;
pub mod ctl;
pub mod jobdesc;
pub mod jobs;
pub mod metrics;
pub mod query;
pub mod reply;
pub mod slurmdb;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use drover_proto::jwt::JwtKey;

/// The data_parser version of every path.
pub const VERSION: &str = "v0.0.40";

/// Largest request body accepted (a job script and its description).
pub const DEFAULT_MAX_BODY: usize = 1 << 20;

/// What every handler shares.
pub struct App {
    pub ctl: ctl::Ctl,
    /// None: `AuthAltParameters=jwt_key` is not set; TCP requests get 401.
    pub jwt: Option<JwtKey>,
    pub cluster: String,
    pub slurm_user: String,
    /// This host (jobs' SLURM_SUBMIT_HOST).
    pub host: String,
    pub ctld_host: String,
    pub max_body: usize,
    /// PrivateData is set: `/metrics` is off (as Slurm's).
    pub private_data: bool,
}

async fn not_found(uri: Uri) -> Response {
    reply::Failure::not_found_url(uri.path()).into_response()
}

/// Every route; authentication on all but `/openapi/v3`.
pub fn router(app: Arc<App>) -> Router {
    let s = |p: &str| format!("/slurm/{VERSION}/{p}");
    let db = |p: &str| format!("/slurmdb/{VERSION}/{p}");
    let api = Router::new()
        .route(&s("ping"), get(cluster::ping))
        .route(&s("diag"), get(cluster::diag))
        .route(&s("jobs"), get(jobs::list))
        .route(&s("job/submit"), post(jobs::submit))
        .route(
            &s("job/{id}"),
            get(jobs::show).post(jobs::update).delete(jobs::cancel),
        )
        .route(&s("nodes"), get(cluster::nodes))
        .route(&s("node/{name}"), get(cluster::node))
        .route(&s("partitions"), get(cluster::partitions))
        .route(&s("partition/{name}"), get(cluster::partition))
        .route(&s("reservations"), get(cluster::reservations))
        .route(&db("jobs"), get(slurmdb::jobs))
        .route(&db("job/{id}"), get(slurmdb::job))
        .route(&db("associations"), get(slurmdb::associations))
        .route(&db("qos"), get(slurmdb::qos))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::authenticate,
        ));
    Router::new()
        .merge(api)
        .route("/metrics", get(metrics::serve))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(app.max_body))
        .with_state(app)
}
