//! droverrestd: Slurm's REST API (slurmrestd's paths and JSON, data_parser
//! v0.0.40) and Prometheus metrics, in front of the controller and the
//! accounting daemon. It owns no state: every request becomes the gRPC
//! call the matching command would make, with credentials for the
//! request's user (see [`auth`] and [`ctl`]).

#![forbid(unsafe_code)]

pub mod auth;
pub mod cluster;
pub mod ctl;
pub mod dash;
pub mod jobcache;
pub mod jobdesc;
pub mod jobs;
pub mod jobsbody;
pub mod metrics;
pub mod openapi;
pub mod query;
pub mod reply;
pub mod routes;
pub mod slurmdb;
pub mod web;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
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
    pub callers: auth::CallerCache,
    /// Jobs as last written for `GET /jobs` ([`jobcache`]).
    pub jobs: jobcache::JobCache,
    /// The config read at start: what seff's advice may suggest (the
    /// largest node of a partition, the GPU types).
    pub conf: drover_conf::slurmconf::Config,
}

async fn not_found(uri: Uri) -> Response {
    reply::Failure::not_found_url(uri.path()).into_response()
}

/// Every route of [`routes::ENDPOINTS`] and the dashboard ([`web`]);
/// anything else is Slurm's 404.
pub fn router(app: Arc<App>) -> Router {
    routes::routes(&app)
        .merge(web::routes())
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(app.max_body))
        .with_state(app)
}
