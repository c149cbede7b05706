//! `/slurmdb/v0.0.40/jobs`, `/job/{id}`, `/associations`, `/qos`: the
//! accounting daemon's answers, jobs in the JSON `sacct --json` prints.
//! The daemon applies the caller's PrivateData rules itself.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Extension;
use drover_proto::acct::{AssocSet, GetAssocsRequest, JobQuery};
use drover_proto::client::Accounting;
use drover_proto::JobState;
use serde_json::{json, Value};

use crate::auth::Caller;
use crate::query;
use crate::reply::{self, errno, Answer, Failure};
use crate::App;

fn accounting(app: &App, caller: &Caller) -> Result<Accounting, Failure> {
    app.ctl.accounting(caller).ok_or_else(|| {
        Failure::new(
            StatusCode::NOT_FOUND,
            errno::ACCOUNTING_DISABLED,
            "Slurm accounting storage is disabled",
            "AccountingStorageType is not accounting_storage/slurmdbd",
        )
    })
}

fn list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// The query `sacct` would send for these parameters.
pub fn job_query(raw: Option<&str>, cluster: &str) -> Result<JobQuery, Failure> {
    let q = query::pairs(
        raw,
        &[
            "users",
            "account",
            "start_time",
            "end_time",
            "state",
            "partition",
            "job_name",
            "qos",
        ],
    )?;
    let mut out = JobQuery {
        cluster: cluster.to_string(),
        ..Default::default()
    };
    for (k, v) in &q {
        match k.as_str() {
            "users" => {
                for u in list(v) {
                    let uid = match u.parse::<u32>() {
                        Ok(n) => n,
                        Err(_) => drover_proto::sysdb::passwd_by_name(u)
                            .map(|p| p.uid)
                            .ok_or_else(|| {
                                Failure::query(format!("Invalid user: {u}")).at("users")
                            })?,
                    };
                    out.uids.push(uid);
                }
            }
            "account" => out.accounts.extend(list(v).map(str::to_string)),
            "partition" => out.partitions.extend(list(v).map(str::to_string)),
            "job_name" => out.names.extend(list(v).map(str::to_string)),
            "qos" => out.qos.extend(list(v).map(str::to_string)),
            "state" => {
                for s in list(v) {
                    let st = match s.to_ascii_uppercase().as_str() {
                        "CANCELED" => Some(JobState::Cancelled),
                        other => JobState::parse(other),
                    };
                    let st = st.ok_or_else(|| {
                        Failure::query(format!("Invalid job state specified: {s}")).at("state")
                    })?;
                    out.states.push(st as i32);
                }
            }
            _ => {}
        }
    }
    out.start = query::epoch(&q, "start_time")?.unwrap_or(0);
    out.end = query::epoch(&q, "end_time")?.unwrap_or(0);
    Ok(out)
}

async fn jobs_of(app: &App, caller: &Caller, q: JobQuery) -> Result<Vec<Value>, Failure> {
    let mut a = accounting(app, caller)?;
    let r = a
        .get_jobs(q)
        .await
        .map_err(|st| Failure::from_status(&st))?
        .into_inner();
    let now = drover_proto::auth::now_secs();
    Ok(r.jobs
        .iter()
        .map(|j| drover_cli::sacct::json::job(j, now))
        .collect())
}

pub async fn jobs(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    RawQuery(q): RawQuery,
) -> Answer {
    let q = job_query(q.as_deref(), &app.cluster)?;
    let jobs = jobs_of(&app, &caller, q).await?;
    Ok(reply::ok(vec![("jobs", Value::Array(jobs))], Vec::new()))
}

pub async fn job(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer {
    if drover_cli::jobids::parse_job_id(&id).is_none() {
        return Err(Failure::invalid_job(&id));
    }
    let q = JobQuery {
        job_ids: vec![id.clone()],
        cluster: app.cluster.clone(),
        ..Default::default()
    };
    let jobs = jobs_of(&app, &caller, q).await?;
    if jobs.is_empty() {
        return Err(Failure::invalid_job(&id));
    }
    Ok(reply::ok(vec![("jobs", Value::Array(jobs))], Vec::new()))
}

async fn assoc_set(app: &App, caller: &Caller) -> Result<AssocSet, Failure> {
    let mut a = accounting(app, caller)?;
    let r = a
        .get_assocs(GetAssocsRequest {
            known_version: 0,
            wait_ms: 0,
        })
        .await
        .map_err(|st| Failure::from_status(&st))?
        .into_inner();
    Ok(r.set.unwrap_or_default())
}

fn num(n: i64) -> Value {
    drover_cli::json::num(n)
}

/// A count limit where -1 means none.
fn limit(n: i64) -> Value {
    if n < 0 {
        json!({"set": false, "infinite": true, "number": 0})
    } else {
        num(n)
    }
}

pub async fn associations(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
) -> Answer {
    let set = assoc_set(&app, &caller).await?;
    let list: Vec<Value> = set
        .assocs
        .iter()
        .map(|a| {
            json!({
                "account": a.account,
                "cluster": a.cluster,
                "partition": a.partition,
                "user": a.user,
                "parent_account": a.parent,
                "id": a.id,
                "shares_raw": a.shares,
                "qos": a.qos,
                "default": {"qos": a.default_qos},
                "is_default": false,
                "flags": [],
            })
        })
        .collect();
    Ok(reply::ok(
        vec![("associations", Value::Array(list))],
        Vec::new(),
    ))
}

pub async fn qos(State(app): State<Arc<App>>, Extension(caller): Extension<Caller>) -> Answer {
    let set = assoc_set(&app, &caller).await?;
    let list: Vec<Value> = set
        .qos
        .iter()
        .map(|q| {
            let l = q.limits.clone().unwrap_or_default();
            json!({
                "name": q.name,
                "description": q.description,
                "id": q.id,
                "priority": num(i64::from(q.priority)),
                "preempt": {
                    "list": q.preempt,
                    "mode": [if q.preempt_mode.is_empty() { "DISABLED".to_string() } else { q.preempt_mode.to_ascii_uppercase() }],
                    "exempt_time": num(0),
                },
                "usage_factor": {"set": true, "infinite": false, "number": q.usage_factor},
                "limits": {
                    "grace_time": q.grace_time,
                    "max": {
                        "jobs": {"active_jobs": {"per": {"user": limit(l.max_jobs)}}},
                        "tres": {"per": {"job": l.max_tres_per_job, "user": l.max_tres_per_user}},
                        "wall_clock": {"per": {"job": limit(l.max_wall_min)}},
                    },
                },
                "flags": [],
            })
        })
        .collect();
    Ok(reply::ok(vec![("qos", Value::Array(list))], Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries() {
        let q = job_query(
            Some("users=0,root&state=COMPLETED,CANCELED&start_time=5&account=a,b"),
            "c",
        )
        .unwrap();
        assert_eq!(q.uids, vec![0, 0]);
        assert_eq!(
            q.states,
            vec![JobState::Completed as i32, JobState::Cancelled as i32]
        );
        assert_eq!(q.start, 5);
        assert_eq!(q.accounts, vec!["a", "b"]);
        assert_eq!(q.cluster, "c");
        assert!(job_query(Some("state=SLEEPY"), "c").is_err());
        assert!(job_query(Some("users=no-such-user-here"), "c").is_err());
        assert!(job_query(Some("end_time=tomorrow"), "c").is_err());
        assert!(job_query(Some("colour=red"), "c").is_err());
    }
}
