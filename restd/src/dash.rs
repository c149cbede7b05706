//! `/drover/v0.0.40/...`: what the web dashboard needs that Slurm's REST
//! API has no endpoint for: who the token speaks for, a job's
//! `scontrol show job -d` / `show step` / `seff` texts and output tail,
//! requeue, and which running job holds which GPU. Each is the gRPC call the matching command
//! makes, as the request's user (PrivateData applies).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::Extension;
use drover_cli::scontrol::show::{self, ShowOpts};
use drover_cli::squeue::format as jf;
use drover_proto::acct::JobQuery;
use drover_proto::{
    GetJobsRequest, GetNodesRequest, JobFilter, JobInfo, JobState, ReadOutputRequest,
};
use serde_json::{json, Value};

use crate::auth::Caller;
use crate::reply::{self, Answer, Failure};
use crate::App;

/// `GET /drover/v0.0.40/whoami`: the user the request acts for.
pub async fn whoami(State(app): State<Arc<App>>, Extension(caller): Extension<Caller>) -> Answer {
    Ok(reply::ok(
        vec![(
            "user",
            json!({
                "name": caller.name,
                "uid": caller.ids.uid,
                "gid": caller.ids.gid,
                "cluster": app.cluster,
            }),
        )],
        Vec::new(),
    ))
}

async fn jobs(
    app: &App,
    caller: &Caller,
    filter: JobFilter,
    details: bool,
) -> Result<(Vec<JobInfo>, i64), Failure> {
    let mut c = app.ctl.controller(caller);
    let r = c
        .get_jobs(GetJobsRequest {
            filter: Some(filter),
            details,
            fields: Vec::new(),
        })
        .await
        .map_err(|st| Failure::from_status(&st))?
        .into_inner();
    Ok((r.jobs, r.now))
}

/// The seff report of `id`, when accounting has the job ("" otherwise:
/// accounting off, not recorded yet, or not the caller's to see).
async fn efficiency(app: &App, caller: &Caller, id: &str, now: i64) -> String {
    let Some(mut a) = app.ctl.accounting(caller) else {
        return String::new();
    };
    let q = JobQuery {
        job_ids: vec![id.to_string()],
        cluster: app.cluster.clone(),
        ..Default::default()
    };
    let Ok(r) = a.get_jobs(q).await else {
        return String::new();
    };
    r.into_inner()
        .jobs
        .iter()
        .map(|j| {
            let facts = drover_cli::seff::facts(&app.conf, &j.partition);
            drover_cli::seff::report::report(j, now)
                + &drover_cli::seff::report::advice_lines(j, now, &facts)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `GET /drover/v0.0.40/job/{job_id}/detail`: `{"show": scontrol show job
/// -d, "steps": [scontrol show step, ...], "efficiency": seff}`; the job
/// from accounting alone (purged from the controller) has only efficiency.
pub async fn detail(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer {
    if drover_cli::jobids::parse_job_id(&id).is_none() {
        return Err(Failure::invalid_job(&id));
    }
    let filter = JobFilter {
        job_ids: vec![id.clone()],
        all_states: true,
        ..Default::default()
    };
    let (list, now) = jobs(&app, &caller, filter, true).await?;
    let o = ShowOpts {
        one_liner: false,
        details: true,
        now,
    };
    let shown: String = list.iter().map(|j| show::job(j, &o)).collect();
    let steps: Vec<String> = list
        .iter()
        .flat_map(|j| j.steps.iter().map(move |s| show::step(j, s, &o)))
        .collect();
    let eff = efficiency(&app, &caller, &id, now).await;
    if list.is_empty() && eff.is_empty() {
        return Err(Failure::invalid_job(&id));
    }
    let output = match list.as_slice() {
        [j] => output(&app, &caller, j).await,
        _ => Value::Null,
    };
    Ok(reply::ok(
        vec![(
            "detail",
            json!({"job_id": id, "show": shown, "steps": steps, "efficiency": eff,
                   "output": output}),
        )],
        Vec::new(),
    ))
}

/// How much of each output file the detail shows.
const TAIL_BYTES: u64 = 16 * 1024;

/// The tails of a batch job's stdout and stderr, read on its batch host by
/// the node agent with the caller's own rights: `{"std_out": {"path",
/// "size", "text"} or {"path", "error"}, "std_err": ...}`; null for a job
/// that has not run (or has no batch host).
async fn output(app: &App, caller: &Caller, j: &JobInfo) -> Value {
    if j.batch_host.is_empty() || !j.batch_flag {
        return Value::Null;
    }
    // Where the batch host's agent listens: the controller's node record
    // (asked as this daemon: the address is not the user's information).
    let node = app
        .ctl
        .controller_as_daemon()
        .get_nodes(GetNodesRequest {
            names: vec![j.batch_host.clone()],
        })
        .await
        .ok()
        .and_then(|r| r.into_inner().nodes.into_iter().next());
    let agent = node.map(|n| {
        let host = if n.node_addr.is_empty() {
            &n.name
        } else {
            &n.node_addr
        };
        app.ctl.agent(
            caller,
            &drover_conf::slurmconf::join_host_port(host, n.port as u16),
        )
    });
    let mut out = serde_json::Map::new();
    let paths = [
        ("std_out", jf::std_out_path(j)),
        ("std_err", jf::std_err_path(j)),
    ];
    for (key, path) in paths {
        if key == "std_err" && path == out["std_out"]["path"] {
            continue; // -e not given: one file for both
        }
        let v = match &agent {
            None => json!({"path": path, "error": format!("node {} unknown", j.batch_host)}),
            Some(Err(e)) => json!({"path": path, "error": e}),
            Some(Ok(a)) => {
                let req = ReadOutputRequest {
                    path: path.clone(),
                    max_bytes: TAIL_BYTES,
                };
                match a.clone().read_output(req).await {
                    Ok(r) => {
                        let r = r.into_inner();
                        json!({"path": path, "size": r.size,
                               "text": String::from_utf8_lossy(&r.data)})
                    }
                    Err(st) => json!({"path": path, "error": st.message()}),
                }
            }
        };
        out.insert(key.to_string(), v);
    }
    Value::Object(out)
}

/// `POST /drover/v0.0.40/job/{job_id}/requeue`: `scontrol requeue`.
pub async fn requeue(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer {
    if drover_cli::jobids::parse_job_id(&id).is_none() {
        return Err(Failure::invalid_job(&id));
    }
    let client = app.ctl.controller(&caller);
    crate::jobs::run_update(client, &id, Vec::new(), "requeue").await?;
    Ok(reply::ok(vec![("job_id", json!(id))], Vec::new()))
}

/// One GPU (or other device) held by a job, from the job's allocation.
fn holders(jobs: &[JobInfo]) -> Vec<Value> {
    let mut out = Vec::new();
    for j in jobs {
        let id = match (j.array_job_id, j.is_array_meta) {
            (0, _) | (_, true) => j.job_id.to_string(),
            (a, false) => format!("{a}_{}", j.array_task_id),
        };
        for a in &j.alloc {
            for g in &a.gres {
                for i in &g.indices {
                    out.push(json!({
                        "node": a.node,
                        "name": g.name,
                        "type": g.r#type,
                        "index": i,
                        "job_id": id,
                        "user_name": j.user_name,
                    }));
                }
            }
        }
    }
    out
}

/// `GET /drover/v0.0.40/gpus`: every device a running job holds (the jobs
/// the caller may see).
pub async fn gpus(State(app): State<Arc<App>>, Extension(caller): Extension<Caller>) -> Answer {
    let filter = JobFilter {
        states: vec![
            JobState::Running as i32,
            JobState::Suspended as i32,
            JobState::Completing as i32,
        ],
        ..Default::default()
    };
    let (list, now) = jobs(&app, &caller, filter, true).await?;
    Ok(reply::ok(
        vec![
            ("gpus", Value::Array(holders(&list))),
            ("last_update", drover_cli::json::num(now)),
        ],
        Vec::new(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::{GresAlloc, NodeAlloc};

    #[test]
    fn holders_per_device() {
        let j = JobInfo {
            job_id: 7,
            array_job_id: 5,
            array_task_id: 2,
            user_name: "ann".into(),
            alloc: vec![NodeAlloc {
                node: "n1".into(),
                gres: vec![GresAlloc {
                    name: "gpu".into(),
                    r#type: "a100".into(),
                    indices: vec![0, 3],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let h = holders(&[j]);
        assert_eq!(h.len(), 2);
        assert_eq!(h[1]["index"], 3);
        assert_eq!(h[0]["job_id"], "5_2");
        assert_eq!(h[0]["type"], "a100");
        assert!(holders(&[JobInfo::default()]).is_empty());
    }
}
