//! `/ping`, `/diag`, `/nodes`, `/node/{name}`, `/partitions`,
//! `/partition/{name}`, `/reservations`: the controller's answers, nodes
//! and partitions in the JSON `scontrol show --json` prints.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;
use drover_proto::{
    DiagRequest, GetNodesRequest, GetPartitionsRequest, GetReservationsRequest, PingRequest,
};
use serde_json::{json, Value};

use crate::auth::Caller;
use crate::reply::{self, errno, Answer, Failure};
use crate::App;

fn num(n: i64) -> Value {
    drover_cli::json::num(n)
}

pub async fn ping(State(app): State<Arc<App>>, Extension(caller): Extension<Caller>) -> Answer {
    let mut c = app.ctl.controller(&caller);
    let t = Instant::now();
    let r = c.ping(PingRequest {}).await;
    let latency = t.elapsed().as_micros() as i64;
    // The controller that answered (a backup in control says so).
    let (host, up, index) = match &r {
        Ok(p) => (p.get_ref().host.clone(), true, p.get_ref().index),
        Err(st)
            if st.code() == tonic::Code::PermissionDenied
                || st.code() == tonic::Code::Unauthenticated =>
        {
            return Err(Failure::from_status(st))
        }
        Err(_) => (app.ctld_host.clone(), false, 0),
    };
    Ok(reply::ok(
        vec![(
            "pings",
            json!([{
                "hostname": host,
                "pinged": if up { "UP" } else { "DOWN" },
                "latency": latency,
                "mode": if index == 0 { "primary" } else { "backup" },
            }]),
        )],
        Vec::new(),
    ))
}

pub async fn diag(State(app): State<Arc<App>>, Extension(caller): Extension<Caller>) -> Answer {
    let mut c = app.ctl.controller(&caller);
    let d = c
        .get_diag(DiagRequest {})
        .await
        .map_err(|st| Failure::from_status(&st))?
        .into_inner();
    let mean = |sum: u64, n: u64| sum.checked_div(n).unwrap_or(0) as i64;
    let minutes = ((d.now - d.since).max(60) / 60) as u64;
    Ok(reply::ok(
        vec![(
            "statistics",
            json!({
                "parts_packed": 1,
                "req_time": num(d.now),
                "req_time_start": num(d.since),
                "server_thread_count": d.server_thread_count,
                "agent_queue_size": d.agent_queue_size,
                "agent_count": 0,
                "agent_thread_count": 0,
                "dbd_agent_queue_size": d.dbd_agent_queue_size,
                "gettimeofday_latency": 0,
                "schedule_cycle_max": d.cycle_max_us,
                "schedule_cycle_last": d.cycle_last_us,
                "schedule_cycle_sum": d.cycle_sum_us,
                "schedule_cycle_total": d.cycle_count,
                "schedule_cycle_mean": mean(d.cycle_sum_us, d.cycle_count),
                "schedule_cycle_mean_depth": mean(d.cycle_depth_sum, d.cycle_count),
                "schedule_cycle_per_minute": d.cycle_count / minutes,
                "schedule_queue_length": d.queue_len,
                "jobs_submitted": d.jobs_submitted,
                "jobs_started": d.jobs_started,
                "jobs_completed": d.jobs_completed,
                "jobs_canceled": d.jobs_canceled,
                "jobs_failed": d.jobs_failed,
                "jobs_pending": d.jobs_pending,
                "jobs_running": d.jobs_running,
                "job_states_ts": num(d.now),
            }),
        )],
        Vec::new(),
    ))
}

async fn nodes_of(app: &App, caller: &Caller, names: Vec<String>) -> Answer {
    let one = names.first().cloned();
    let mut c = app.ctl.controller(caller);
    let r = c
        .get_nodes(GetNodesRequest { names })
        .await
        .map_err(|st| Failure::from_status(&st))?
        .into_inner();
    if let Some(n) = one {
        if r.nodes.is_empty() {
            return Err(Failure::new(
                StatusCode::NOT_FOUND,
                errno::INVALID_NODE_NAME,
                "Invalid node name specified",
                format!("Unable to find node {n}"),
            ));
        }
    }
    let v = drover_cli::json::nodes(&r.nodes, r.now, &app.cluster, &[]);
    Ok(reply::json_response(StatusCode::OK, v.to_string()))
}

pub async fn nodes(State(app): State<Arc<App>>, Extension(caller): Extension<Caller>) -> Answer {
    nodes_of(&app, &caller, Vec::new()).await
}

pub async fn node(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Answer {
    nodes_of(&app, &caller, vec![name]).await
}

async fn partitions_of(app: &App, caller: &Caller, names: Vec<String>) -> Answer {
    let one = names.first().cloned();
    let mut c = app.ctl.controller(caller);
    let r = c
        .get_partitions(GetPartitionsRequest { names })
        .await
        .map_err(|st| {
            let mut f = Failure::from_status(&st);
            // A partition asked for by name that is not there: not found.
            if f.errno == errno::INVALID_PARTITION_NAME {
                f.status = StatusCode::NOT_FOUND;
            }
            f
        })?
        .into_inner();
    if let Some(n) = one {
        if r.partitions.is_empty() {
            return Err(Failure::new(
                StatusCode::NOT_FOUND,
                errno::INVALID_PARTITION_NAME,
                "Invalid partition name specified",
                format!("Unable to find partition {n}"),
            ));
        }
    }
    let v = drover_cli::json::partitions(&r.partitions, r.now, &app.cluster, &[]);
    Ok(reply::json_response(StatusCode::OK, v.to_string()))
}

pub async fn partitions(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
) -> Answer {
    partitions_of(&app, &caller, Vec::new()).await
}

pub async fn partition(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Answer {
    partitions_of(&app, &caller, vec![name]).await
}

pub async fn reservations(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
) -> Answer {
    let mut s = app.ctl.scheduler(&caller);
    let r = s
        .get_reservations(GetReservationsRequest {
            name: String::new(),
        })
        .await
        .map_err(|st| Failure::from_status(&st))?
        .into_inner();
    let list: Vec<Value> = r
        .reservations
        .iter()
        .map(|x| {
            json!({
                "name": x.name,
                "node_list": x.nodes,
                "node_count": x.node_cnt,
                "start_time": num(x.start_time),
                "end_time": num(x.end_time),
                "users": x.users.join(","),
                "accounts": x.accounts.join(","),
                "flags": x.flags,
                "partition": x.partition,
                "core_count": 0,
                "features": "",
                "groups": "",
                "licenses": "",
                "tres": "",
                "watts": num(0),
                "burst_buffer": "",
                "max_start_delay": num(0),
                "purge_completed": {"time": num(0)},
                "core_specializations": [],
            })
        })
        .collect();
    Ok(reply::ok(
        vec![
            ("reservations", Value::Array(list)),
            ("last_update", num(r.now)),
        ],
        Vec::new(),
    ))
}
