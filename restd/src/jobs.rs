//! `/slurm/v0.0.40/jobs`, `/job/{id}` (GET, POST = update, DELETE =
//! signal/cancel) and `/job/submit`: the controller's answers in the same
//! JSON `squeue --json` prints (one code path for both).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::Extension;
use drover_cli::squeue;
use drover_proto::{
    CancelRequest, GetJobsRequest, GetJobsSinceRequest, JobFilter, JobInfo, JobState,
    SubmitRequest, UpdateJobRequest,
};
use serde_json::{json, Value};

use crate::auth::Caller;
use crate::jobdesc::{self, Submitter};
use crate::query;
use crate::reply::{self, Answer, Failure};
use crate::App;

/// squeue's parameters for a listing: every state, optionally one job id
/// (`A`, `A_i`, plain).
fn params(caller: &Caller, job: Option<&str>) -> Result<squeue::Params, Failure> {
    let mut args = vec!["--json".to_string(), "-t".into(), "all".into()];
    if let Some(j) = job {
        args.push("-j".into());
        args.push(j.to_string());
    }
    let lookup = |n: &str| drover_proto::sysdb::passwd_by_name(n).map(|p| p.uid);
    match squeue::parse_args(&args, &|_| None, &lookup, caller.ids.uid) {
        Ok(squeue::Parsed::Run(p)) => Ok(*p),
        _ => Err(Failure::invalid_job(job.unwrap_or(""))),
    }
}

/// When a job last changed: the controller's `last_changed` (every change
/// squeue shows: hold, release, priority, update, state, reason), and its
/// times (submitted, started, ended, suspended) for a controller that does
/// not send it. Times still to come (a pending job's expected start, a
/// running job's expected end) are no change.
pub fn changed_at(j: &JobInfo, now: i64) -> i64 {
    let pending = j.state == JobState::Pending as i32;
    let running = j.state == JobState::Running as i32 || j.state == JobState::Suspended as i32;
    [
        j.last_changed,
        j.submit_time,
        if pending { 0 } else { j.start_time },
        if pending || running { 0 } else { j.end_time },
        j.suspend_time,
    ]
    .into_iter()
    .filter(|t| *t <= now)
    .max()
    .unwrap_or(0)
}

async fn fetch_req(
    app: &App,
    caller: &Caller,
    req: GetJobsRequest,
) -> Result<(Vec<JobInfo>, i64), Failure> {
    let mut client = app.ctl.controller(caller);
    client
        .get_jobs(req)
        .await
        .map(|r| {
            let r = r.into_inner();
            (r.jobs, r.now)
        })
        .map_err(|st| Failure::from_status(&st))
}

async fn fetch(app: &App, caller: &Caller, p: &squeue::Params) -> Result<Vec<JobInfo>, Failure> {
    fetch_req(app, caller, squeue::request(p))
        .await
        .map(|(jobs, _)| jobs)
}

/// The jobs changed since `since`: first every job without details (cheap:
/// the times are there), then the changed ones with details; a poll that
/// finds nothing changed costs one light listing.
async fn fetch_changed(
    app: &App,
    caller: &Caller,
    p: &squeue::Params,
    since: i64,
) -> Result<Vec<JobInfo>, Failure> {
    let mut req = squeue::request(p);
    req.details = false;
    let (light, now) = fetch_req(app, caller, req).await?;
    let ids: Vec<String> = light
        .iter()
        .filter(|j| changed_at(j, now) >= since)
        .map(|j| j.job_id.to_string())
        .collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut req = squeue::request(p);
    if let Some(f) = req.filter.as_mut() {
        f.job_ids = ids;
        f.all_states = true;
    }
    let (mut jobs, now) = fetch_req(app, caller, req).await?;
    jobs.retain(|j| changed_at(j, now) >= since);
    Ok(jobs)
}

/// The answer: squeue --json's job objects, written compactly.
fn render(app: &App, jobs: &[JobInfo], p: &squeue::Params) -> String {
    let now = drover_proto::auth::now_secs();
    crate::jobcache::render_all(jobs, p, now, &app.cluster)
}

/// Every job the caller may see, through the cache of written jobs
/// ([`crate::jobcache`]): the controller sends in full only the jobs
/// changed since the last listing, and nothing but `unchanged` when the
/// caller's last listing still stands. A controller without
/// `GetJobsSince` gets the plain listing.
async fn list_cached(app: &App, caller: &Caller, p: &squeue::Params) -> Result<Response, Failure> {
    use crate::jobcache::{assemble, Answer, Entry, Origin, Plan};
    let filter = squeue::request(p).filter;
    let uid = caller.ids.uid;
    let mut ask = app.jobs.ask(uid);
    for attempt in 0..4 {
        if attempt == 3 {
            // Still unsettled (jobs changing under every listing): all in full.
            ask = Default::default();
        }
        let mut client = app.ctl.controller(caller);
        let req = GetJobsSinceRequest {
            filter: filter.clone(),
            changed_since: ask.since,
            incarnation: ask.incarnation,
            since_seq: ask.since_seq,
            known_digest: ask.known_digest,
        };
        let r = match client.get_jobs_since(req).await {
            Ok(r) => r.into_inner(),
            Err(st) if st.code() == tonic::Code::Unimplemented => {
                let body = render(app, &fetch(app, caller, p).await?, p);
                return Ok(reply::json_response(axum::http::StatusCode::OK, body));
            }
            Err(st) => return Err(Failure::from_status(&st)),
        };
        let now = drover_proto::auth::now_secs();
        let plan = if r.unchanged {
            match app
                .jobs
                .unchanged(uid, r.incarnation, r.digest, p, now, &app.cluster)
            {
                Some(plan) => plan,
                None => {
                    ask.known_digest = 0;
                    continue;
                }
            }
        } else {
            let origin = Origin {
                taken_at: r.now,
                incarnation: r.incarnation,
                seq: r.seq,
            };
            let fresh = r
                .jobs
                .into_iter()
                .map(|j| Entry::new(j, origin, p, now, &app.cluster))
                .collect();
            let answer = Answer {
                origin,
                digest: r.digest,
                stamps: r.stamps,
            };
            app.jobs.plan(uid, answer, fresh, p, now, &app.cluster)
        };
        match plan {
            Plan::Ready(entries) => return Ok(assemble(&entries, now).into_response()),
            Plan::Refetch { since, since_seq } => {
                ask = crate::jobcache::Ask {
                    since,
                    incarnation: r.incarnation,
                    since_seq,
                    known_digest: 0,
                }
            }
        }
    }
    Err(Failure::from_status(&tonic::Status::internal(
        "the job listing did not settle",
    )))
}

pub async fn list(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    RawQuery(q): RawQuery,
) -> Answer {
    let q = query::pairs(q.as_deref(), &["update_time", "flags"])?;
    let since = query::epoch(&q, "update_time")?;
    let p = params(&caller, None)?;
    match since {
        Some(t) => {
            let body = render(&app, &fetch_changed(&app, &caller, &p, t).await?, &p);
            Ok(reply::json_response(axum::http::StatusCode::OK, body))
        }
        None => list_cached(&app, &caller, &p).await,
    }
}

pub async fn show(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Answer {
    let q = query::pairs(q.as_deref(), &["update_time", "flags"])?;
    let since = query::epoch(&q, "update_time")?;
    if drover_cli::jobids::parse_job_id(&id).is_none() {
        return Err(Failure::invalid_job(&id));
    }
    let p = params(&caller, Some(&id))?;
    let mut jobs = fetch(&app, &caller, &p).await?;
    let base: u32 = id
        .split('_')
        .next()
        .and_then(|b| b.parse().ok())
        .unwrap_or(0);
    if !jobs
        .iter()
        .any(|j| j.job_id == base || (j.array_job_id != 0 && j.array_job_id == base))
    {
        return Err(Failure::invalid_job(&id));
    }
    if let Some(t) = since {
        let now = drover_proto::auth::now_secs();
        jobs.retain(|j| changed_at(j, now) >= t);
    }
    Ok(reply::json_response(
        axum::http::StatusCode::OK,
        render(&app, &jobs, &p),
    ))
}

pub async fn submit(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Answer {
    let body = query::json_body(body)?;
    let home = if caller.home.starts_with('/') {
        caller.home.as_str()
    } else {
        "/"
    };
    let who = Submitter {
        home,
        host: &app.host,
    };
    let (spec, mut warnings) = jobdesc::to_spec(&body, &who, drover_proto::auth::now_secs())?;
    let mut client = app.ctl.controller(&caller);
    let resp = client
        .submit(SubmitRequest { spec: Some(spec) })
        .await
        .map_err(|st| Failure::from_status(&st).at("job/submit"))?
        .into_inner();
    let user_msg = resp.warnings.join("\n");
    warnings.extend(resp.warnings);
    Ok(reply::ok(
        vec![
            (
                "result",
                json!({
                    "job_id": resp.job_id,
                    "step_id": "batch",
                    "error_code": 0,
                    "error": "",
                    "job_submit_user_msg": user_msg,
                }),
            ),
            ("job_id", json!(resp.job_id)),
            ("step_id", json!("batch")),
            ("job_submit_user_msg", json!(user_msg)),
        ],
        warnings,
    ))
}

/// The fields `POST /job/{id}` updates, and the scontrol key each becomes
/// (`hold` is the hold/release action). The OpenAPI document lists these.
pub const UPDATE_FIELDS: &[(&str, &str)] = &[
    ("hold", ""),
    ("time_limit", "TimeLimit"),
    ("time_minimum", "TimeMin"),
    ("nice", "Nice"),
    ("priority", "Priority"),
    ("comment", "Comment"),
    ("name", "JobName"),
    ("partition", "Partition"),
    ("qos", "QOS"),
    ("account", "Account"),
];

/// The update a description asks for: (fields, hold/release action).
/// An update: scontrol `Key=Value` fields, and a hold/release action.
pub type Update = (Vec<(String, String)>, Option<&'static str>);

pub fn update_of(desc: &Value) -> Result<Update, Failure> {
    let desc = match desc.get("job") {
        Some(j) if j.is_object() => j,
        _ => desc,
    };
    let Some(obj) = desc.as_object() else {
        return Err(Failure::parsing("the job description is not a JSON object"));
    };
    let mut fields = Vec::new();
    let mut action = None;
    for (k, v) in obj {
        let fail = |why: &str| Failure::parsing(why.to_string()).at(format!("#/{k}"));
        let number = |v: &Value| -> Result<Option<String>, Failure> {
            match v {
                Value::Number(n) => Ok(Some(n.to_string())),
                Value::Object(o) if o.get("infinite").and_then(Value::as_bool) == Some(true) => {
                    Ok(Some("UNLIMITED".into()))
                }
                Value::Object(o) if o.get("set").and_then(Value::as_bool) == Some(false) => {
                    Ok(None)
                }
                Value::Object(o) => match o.get("number") {
                    Some(Value::Number(n)) => Ok(Some(n.to_string())),
                    _ => Err(fail("expected a number")),
                },
                _ => Err(fail("expected a number")),
            }
        };
        let text = |v: &Value| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| fail("expected a string"))
        };
        if k == "hold" {
            action = Some(match v {
                Value::Bool(true) => "hold",
                Value::Bool(false) => "release",
                _ => return Err(fail("expected true or false")),
            });
            continue;
        }
        let Some((_, key)) = UPDATE_FIELDS.iter().find(|(f, _)| f == k) else {
            return Err(fail(&format!("updating '{k}' is not supported")));
        };
        let numeric = matches!(*key, "TimeLimit" | "TimeMin" | "Nice" | "Priority");
        let (key, val) = (*key, if numeric { number(v)? } else { Some(text(v)?) });
        if let Some(val) = val {
            fields.push((key.to_string(), val));
        }
    }
    if fields.is_empty() && action.is_none() {
        return Err(Failure::parsing("nothing to update"));
    }
    Ok((fields, action))
}

fn check_results(id: &str, results: &[drover_proto::JobResult]) -> Result<(), Failure> {
    match results.iter().find(|r| !r.ok) {
        Some(r) => Err(
            Failure::from_status(&tonic::Status::invalid_argument(r.error.clone()))
                .at(id.to_string()),
        ),
        None if results.is_empty() => Err(Failure::invalid_job(id)),
        None => Ok(()),
    }
}

pub(crate) async fn run_update(
    mut client: drover_proto::client::Controller,
    id: &str,
    fields: Vec<(String, String)>,
    action: &str,
) -> Result<(), Failure> {
    let req = UpdateJobRequest {
        job_ids: vec![id.to_string()],
        fields: fields.into_iter().collect(),
        action: action.to_string(),
        reason: String::new(),
    };
    let r = client
        .update_job(req)
        .await
        .map_err(|st| Failure::from_status(&st))?;
    check_results(id, &r.into_inner().results)
}

pub async fn update(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Answer {
    if drover_cli::jobids::parse_job_id(&id).is_none() {
        return Err(Failure::invalid_job(&id));
    }
    let (fields, action) = update_of(&query::json_body(body)?)?;
    let client = app.ctl.controller(&caller);
    if !fields.is_empty() {
        run_update(client.clone(), &id, fields, "").await?;
    }
    if let Some(a) = action {
        run_update(client, &id, Vec::new(), a).await?;
    }
    Ok(reply::ok(
        vec![
            (
                "results",
                json!([{"job_id": id, "step_id": "batch", "error_code": 0, "error": "", "why": ""}]),
            ),
            ("job_id", json!(id)),
            ("step_id", json!("batch")),
            ("job_submit_user_msg", json!("")),
        ],
        Vec::new(),
    ))
}

pub async fn cancel(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Answer {
    let q = query::pairs(q.as_deref(), &["signal", "flags"])?;
    if drover_cli::jobids::parse_job_id(&id).is_none() {
        return Err(Failure::invalid_job(&id));
    }
    let signal = match query::get(&q, "signal") {
        None | Some("") => 0,
        Some(s) => drover_cli::sbatch::options::parse_signal(s)
            .ok_or_else(|| Failure::query(format!("Invalid signal: {s}")).at("signal"))?,
    };
    let mut batch_only = false;
    let mut full = false;
    for flag in query::get(&q, "flags")
        .unwrap_or("")
        .split(',')
        .filter(|f| !f.is_empty())
    {
        match flag.to_ascii_uppercase().as_str() {
            "BATCH_JOB" => batch_only = true,
            "FULL_JOB" | "FULL_STEPS_ONLY" => full = true,
            "ARRAY_TASK" | "HURRY" | "NO_SIBLING_JOBS" | "CRON_JOBS" | "WARNING_SENT"
            | "VERBOSE" => {}
            other => return Err(Failure::query(format!("unknown flag: {other}")).at("flags")),
        }
    }
    let mut client = app.ctl.controller(&caller);
    let resp = client
        .cancel(CancelRequest {
            filter: Some(JobFilter {
                job_ids: vec![id.clone()],
                ..Default::default()
            }),
            signal,
            batch_only,
            full,
            interactive: false,
        })
        .await
        .map_err(|st| Failure::from_status(&st))?
        .into_inner();
    check_results(&id, &resp.results)?;
    Ok(reply::ok(Vec::new(), Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_past_times() {
        let now = 1000;
        let j = |state: JobState, submit, start, end| JobInfo {
            state: state as i32,
            submit_time: submit,
            start_time: start,
            end_time: end,
            ..Default::default()
        };
        // A pending job's expected start and end are no change.
        assert_eq!(changed_at(&j(JobState::Pending, 10, 2000, 3000), now), 10);
        assert_eq!(changed_at(&j(JobState::Pending, 10, 500, 900), now), 10);
        // A running job: its start; its expected end is not one.
        assert_eq!(changed_at(&j(JobState::Running, 10, 500, 5000), now), 500);
        // A finished job: its end.
        assert_eq!(changed_at(&j(JobState::Completed, 10, 500, 900), now), 900);
        assert_eq!(changed_at(&j(JobState::Cancelled, 10, 0, 700), now), 700);
        // A hold, release or update: the controller's change time.
        let mut held = j(JobState::Pending, 10, 0, 0);
        held.last_changed = 600;
        assert_eq!(changed_at(&held, now), 600);
    }

    #[test]
    fn updates_from_descriptions() {
        let (mut f, a) =
            update_of(&json!({"time_limit": {"set": true, "number": 10}, "nice": 5})).unwrap();
        f.sort();
        assert_eq!(
            f,
            vec![
                ("Nice".to_string(), "5".to_string()),
                ("TimeLimit".into(), "10".into())
            ]
        );
        assert_eq!(a, None);
        let (f, a) = update_of(&json!({"job": {"hold": false}})).unwrap();
        assert!(f.is_empty());
        assert_eq!(a, Some("release"));
        assert!(update_of(&json!({})).is_err());
        assert!(update_of(&json!({"hold": "yes"})).is_err());
        assert!(update_of(&json!({"nodes_shape": 3})).is_err());
        assert!(update_of(&json!([])).is_err());
    }
}
