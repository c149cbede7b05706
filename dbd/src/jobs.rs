//! Job and step records: storing the controller's transitions (in order,
//! idempotently) and answering sacct's queries.

use std::collections::HashMap;

use drover_proto::acct::{JobQuery, JobRecord, StepRecord};
use drover_proto::JobState;
use sqlx::any::{AnyArguments, AnyRow};

fn i32c(r: &AnyRow, i: usize) -> i32 {
    r.try_get::<i64, _>(i).unwrap_or(0) as i32
}
fn i64c(r: &AnyRow, i: usize) -> i64 {
    r.try_get::<i64, _>(i).unwrap_or(0)
}
use sqlx::query::Query;
use sqlx::{Any, AssertSqlSafe, Row};

use crate::store::Store;
use crate::usage;
use drover_conf::dbdconf::StorageKind;

const JOB_COLS: &[&str] = &[
    "cluster",
    "job_id",
    "submit_time",
    "array_job_id",
    "array_task_id",
    "array_pending",
    "array_max_running",
    "job_name",
    "uid",
    "user_name",
    "gid",
    "account",
    "qos",
    "part",
    "eligible_time",
    "start_time",
    "end_time",
    "state",
    "exit_code",
    "exit_signal",
    "cancelled",
    "cancelled_by",
    "time_limit",
    "nodelist",
    "nnodes",
    "ncpus",
    "ntasks",
    "req_tres",
    "alloc_tres",
    "req_mem_mb",
    "req_mem_per_cpu",
    "work_dir",
    "job_comment",
    "reason",
    "cpu_time_usec",
    "max_rss_kb",
    "gpu_util_pct",
    "gpu_mem_max_mb",
    "restart_count",
    "transition",
    "constraints",
    "priority",
    "wckey",
    "batch_host",
    "derived_exit_code",
    "oom",
    "system_comment",
];

const STEP_COLS: &[&str] = &[
    "cluster",
    "job_id",
    "submit_time",
    "step_id",
    "step_name",
    "nodelist",
    "nnodes",
    "ntasks",
    "ncpus",
    "start_time",
    "end_time",
    "state",
    "exit_code",
    "exit_signal",
    "cpu_time_usec",
    "max_rss_kb",
    "gpu_util_pct",
    "gpu_mem_max_mb",
    "alloc_tres",
];

/// Slurm's SLURM_BATCH_SCRIPT and SLURM_EXTERN_CONT step ids, as i32.
pub const BATCH_STEP: i32 = -5;
pub const EXTERN_STEP: i32 = -4;

type Q<'q> = Query<'q, Any, AnyArguments>;

fn bind_job<'q>(q: Q<'q>, j: &JobRecord) -> Q<'q> {
    q.bind(j.cluster.clone())
        .bind(i64::from(j.job_id))
        .bind(j.submit_time)
        .bind(i64::from(j.array_job_id))
        .bind(i64::from(j.array_task_id))
        .bind(j.array_pending.clone())
        .bind(i64::from(j.array_max_running))
        .bind(j.name.clone())
        .bind(i64::from(j.uid))
        .bind(j.user.clone())
        .bind(i64::from(j.gid))
        .bind(j.account.clone())
        .bind(j.qos.clone())
        .bind(j.partition.clone())
        .bind(j.eligible_time)
        .bind(j.start_time)
        .bind(j.end_time)
        .bind(i64::from(j.state))
        .bind(i64::from(j.exit_code))
        .bind(i64::from(j.exit_signal))
        .bind(i64::from(j.cancelled))
        .bind(i64::from(j.cancelled_by))
        .bind(i64::from(j.time_limit))
        .bind(j.nodelist.clone())
        .bind(i64::from(j.nnodes))
        .bind(i64::from(j.ncpus))
        .bind(i64::from(j.ntasks))
        .bind(j.req_tres.clone())
        .bind(j.alloc_tres.clone())
        .bind(j.req_mem_mb as i64)
        .bind(i64::from(j.req_mem_per_cpu))
        .bind(j.work_dir.clone())
        .bind(j.comment.clone())
        .bind(j.reason.clone())
        .bind(j.cpu_time_usec as i64)
        .bind(j.max_rss_kb as i64)
        .bind(i64::from(j.gpu_util_pct))
        .bind(j.gpu_mem_max_mb as i64)
        .bind(i64::from(j.restart_count))
        .bind(i64::from(j.transition))
        .bind(j.constraints.clone())
        .bind(i64::from(j.priority))
        .bind(j.wckey.clone())
        .bind(j.batch_host.clone())
        .bind(i64::from(j.derived_exit_code))
        .bind(i64::from(j.oom))
        .bind(j.system_comment.clone())
}

fn bind_step<'q>(q: Q<'q>, j: &JobRecord, s: &StepRecord) -> Q<'q> {
    q.bind(j.cluster.clone())
        .bind(i64::from(j.job_id))
        .bind(j.submit_time)
        .bind(i64::from(s.step_id))
        .bind(s.name.clone())
        .bind(s.nodelist.clone())
        .bind(i64::from(s.nnodes))
        .bind(i64::from(s.ntasks))
        .bind(i64::from(s.ncpus))
        .bind(s.start_time)
        .bind(s.end_time)
        .bind(i64::from(s.state))
        .bind(i64::from(s.exit_code))
        .bind(i64::from(s.exit_signal))
        .bind(s.cpu_time_usec as i64)
        .bind(s.max_rss_kb as i64)
        .bind(i64::from(s.gpu_util_pct))
        .bind(s.gpu_mem_max_mb as i64)
        .bind(s.alloc_tres.clone())
}

/// Set the record field stored in column `col` from its text.
fn set_text(j: &mut JobRecord, col: &str, v: &str) {
    let n = || v.parse::<i64>().unwrap_or(0);
    let u = || n().clamp(0, u32::MAX as i64) as u32;
    match col {
        "cluster" => j.cluster = v.to_string(),
        "job_id" => j.job_id = u(),
        "submit_time" => j.submit_time = n(),
        "array_job_id" => j.array_job_id = u(),
        "array_task_id" => j.array_task_id = u(),
        "array_pending" => j.array_pending = v.to_string(),
        "array_max_running" => j.array_max_running = u(),
        "job_name" => j.name = v.to_string(),
        "uid" => j.uid = u(),
        "user_name" => j.user = v.to_string(),
        "gid" => j.gid = u(),
        "account" => j.account = v.to_string(),
        "qos" => j.qos = v.to_string(),
        "part" => j.partition = v.to_string(),
        "eligible_time" => j.eligible_time = n(),
        "start_time" => j.start_time = n(),
        "end_time" => j.end_time = n(),
        "state" => j.state = n() as i32,
        "exit_code" => j.exit_code = n() as i32,
        "exit_signal" => j.exit_signal = n() as i32,
        "cancelled" => j.cancelled = n() != 0,
        "cancelled_by" => j.cancelled_by = u(),
        "time_limit" => j.time_limit = u(),
        "nodelist" => j.nodelist = v.to_string(),
        "nnodes" => j.nnodes = u(),
        "ncpus" => j.ncpus = u(),
        "ntasks" => j.ntasks = u(),
        "req_tres" => j.req_tres = v.to_string(),
        "alloc_tres" => j.alloc_tres = v.to_string(),
        "req_mem_mb" => j.req_mem_mb = n().max(0) as u64,
        "req_mem_per_cpu" => j.req_mem_per_cpu = n() != 0,
        "work_dir" => j.work_dir = v.to_string(),
        "job_comment" => j.comment = v.to_string(),
        "reason" => j.reason = v.to_string(),
        "cpu_time_usec" => j.cpu_time_usec = n().max(0) as u64,
        "max_rss_kb" => j.max_rss_kb = n().max(0) as u64,
        "gpu_util_pct" => j.gpu_util_pct = u(),
        "gpu_mem_max_mb" => j.gpu_mem_max_mb = n().max(0) as u64,
        "restart_count" => j.restart_count = u(),
        "transition" => j.transition = u(),
        "constraints" => j.constraints = v.to_string(),
        "priority" => j.priority = u(),
        "wckey" => j.wckey = v.to_string(),
        "batch_host" => j.batch_host = v.to_string(),
        "derived_exit_code" => j.derived_exit_code = u(),
        "oom" => j.oom = n() != 0,
        "system_comment" => j.system_comment = v.to_string(),
        _ => {}
    }
}

/// A step from its text fields in STEP_COLS order (after the key).
fn step_from_text(f: &[&str]) -> StepRecord {
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    let t = |i: usize| f.get(i).map(|v| v.to_string()).unwrap_or_default();
    StepRecord {
        step_id: n(3) as i32,
        name: t(4),
        nodelist: t(5),
        nnodes: n(6) as u32,
        ntasks: n(7) as u32,
        ncpus: n(8) as u32,
        start_time: n(9),
        end_time: n(10),
        state: n(11) as i32,
        exit_code: n(12) as i32,
        exit_signal: n(13) as i32,
        cpu_time_usec: n(14).max(0) as u64,
        max_rss_kb: n(15).max(0) as u64,
        gpu_util_pct: n(16) as u32,
        gpu_mem_max_mb: n(17).max(0) as u64,
        alloc_tres: t(18),
    }
}

/// A copy with the packed-text separators taken out of every text field.
fn cleaned(j: &JobRecord) -> JobRecord {
    use crate::packed::clean;
    let mut c = j.clone();
    for s in [
        &mut c.cluster,
        &mut c.array_pending,
        &mut c.name,
        &mut c.user,
        &mut c.account,
        &mut c.qos,
        &mut c.partition,
        &mut c.nodelist,
        &mut c.req_tres,
        &mut c.alloc_tres,
        &mut c.work_dir,
        &mut c.comment,
        &mut c.reason,
        &mut c.constraints,
        &mut c.wckey,
        &mut c.batch_host,
        &mut c.system_comment,
    ] {
        *s = clean(s);
    }
    for st in &mut c.steps {
        st.name = clean(&st.name);
        st.nodelist = clean(&st.nodelist);
        st.alloc_tres = clean(&st.alloc_tres);
    }
    c
}

/// Columns always read: the key and what JobID needs.
const ALWAYS: &[&str] = &[
    "cluster",
    "job_id",
    "submit_time",
    "array_job_id",
    "array_task_id",
    "array_pending",
    "array_max_running",
    "state",
];

/// The columns a query reads: all, or ALWAYS plus the known ones asked for.
fn selected(q: &JobQuery) -> Vec<&'static str> {
    if q.columns.is_empty() {
        return JOB_COLS.to_vec();
    }
    JOB_COLS
        .iter()
        .copied()
        .filter(|c| {
            ALWAYS.contains(c)
                || q.columns.iter().any(|x| x == c)
                || (*c == "nodelist" && !q.nodes.is_empty())
        })
        .collect()
}

fn insert_sql(table: &str, cols: &[&str]) -> String {
    let marks = vec!["?"; cols.len()].join(", ");
    format!("INSERT INTO {table} ({}) VALUES ({marks})", cols.join(", "))
}

fn update_sql(table: &str, cols: &[&str], key: &[&str]) -> String {
    let set: Vec<String> = cols
        .iter()
        .filter(|c| !key.contains(c))
        .map(|c| format!("{c} = ?"))
        .collect();
    let cond: Vec<String> = key.iter().map(|c| format!("{c} = ?")).collect();
    format!(
        "UPDATE {table} SET {} WHERE {}",
        set.join(", "),
        cond.join(" AND ")
    )
}

/// Is this a finished state (the job will not run again)?
pub fn is_final(state: i32) -> bool {
    JobState::try_from(state)
        .map(|s| s.is_final())
        .unwrap_or(false)
}

/// Precomputed statements for one backend.
pub struct JobSql {
    select_key: String,
    insert: String,
    update: String,
    delete_step: String,
    delete_steps: String,
    insert_step: String,
}

impl JobSql {
    pub fn new(store: &Store) -> JobSql {
        let key = ["cluster", "job_id", "submit_time"];
        let upd_cols: Vec<&str> = JOB_COLS
            .iter()
            .copied()
            .filter(|c| !key.contains(c))
            .collect();
        let mut update = update_sql("jobs", &upd_cols, &[]);
        // update_sql with an empty key leaves "WHERE " dangling: add ours.
        update.truncate(update.len() - " WHERE ".len());
        update.push_str(" WHERE cluster = ? AND job_id = ? AND submit_time = ?");
        JobSql {
            select_key: store.q("SELECT restart_count, transition, state FROM jobs \
                 WHERE cluster = ? AND job_id = ? AND submit_time = ?"),
            insert: store.q(&insert_sql("jobs", JOB_COLS)),
            update: store.q(&update),
            delete_step: store.q(
                "DELETE FROM steps WHERE cluster = ? AND job_id = ? AND submit_time = ? \
                 AND step_id = ?",
            ),
            delete_steps: store
                .q("DELETE FROM steps WHERE cluster = ? AND job_id = ? AND submit_time = ?"),
            insert_step: store.q(&insert_sql("steps", STEP_COLS)),
        }
    }
}

/// The records of a batch worth storing: each record is a whole snapshot of
/// its job run (steps included), so of several for the same run (cluster,
/// job id, submit time, restart count) only the last counts. A burst of
/// short jobs sends pending, running and completed in one batch: one write
/// instead of three. Runs are kept apart so that each run's end still
/// charges its usage. Order is kept (by each run's last record).
pub fn latest_per_run(jobs: &[JobRecord]) -> Vec<&JobRecord> {
    let mut last: HashMap<(&str, u32, i64, u32), usize> = HashMap::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        last.insert(
            (j.cluster.as_str(), j.job_id, j.submit_time, j.restart_count),
            i,
        );
    }
    jobs.iter()
        .enumerate()
        .filter(|(i, j)| {
            last.get(&(j.cluster.as_str(), j.job_id, j.submit_time, j.restart_count)) == Some(i)
        })
        .map(|(_, j)| j)
        .collect()
}

/// Store records in order, in one transaction. A record older than the one
/// stored for the same job ((restart_count, transition) smaller) is a
/// duplicate from a resend and is skipped. Returns how many records of the
/// batch were applied (those a later record of the same run in the batch
/// replaced count as applied).
pub async fn record(store: &Store, sql: &JobSql, jobs: &[JobRecord]) -> Result<u32, sqlx::Error> {
    let _w = store.write_lock.lock().await;
    let mut tx = store.pool.begin().await?;
    let latest = latest_per_run(jobs);
    let mut applied = (jobs.len() - latest.len()) as u32;
    let jobs: Vec<JobRecord> = latest.into_iter().map(cleaned).collect();
    for j in &jobs {
        let old = sqlx::query(AssertSqlSafe(sql.select_key.clone()))
            .bind(j.cluster.clone())
            .bind(i64::from(j.job_id))
            .bind(j.submit_time)
            .fetch_optional(&mut *tx)
            .await?;
        let old = old.map(|r| (i64c(&r, 0), i64c(&r, 1), i32c(&r, 2)));
        let new_key = (i64::from(j.restart_count), i64::from(j.transition));
        match old {
            None => {
                bind_job(sqlx::query(AssertSqlSafe(sql.insert.clone())), j)
                    .execute(&mut *tx)
                    .await?;
            }
            Some((rc, tr, _)) if (rc, tr) <= new_key => {
                if rc < new_key.0 {
                    // A requeued job's new run: the steps of the run before
                    // (a batch step still RUNNING when its launch failed and
                    // the job was requeued) are not this run's.
                    sqlx::query(AssertSqlSafe(sql.delete_steps.clone()))
                        .bind(j.cluster.clone())
                        .bind(i64::from(j.job_id))
                        .bind(j.submit_time)
                        .execute(&mut *tx)
                        .await?;
                }
                let mut rec = j.clone();
                // Bind the non-key columns, then the key.
                let q = sqlx::query(AssertSqlSafe(sql.update.clone()));
                let q = bind_job_update(q, &mut rec);
                q.execute(&mut *tx).await?;
            }
            Some(_) => continue,
        }
        applied += 1;
        for s in &j.steps {
            sqlx::query(AssertSqlSafe(sql.delete_step.clone()))
                .bind(j.cluster.clone())
                .bind(i64::from(j.job_id))
                .bind(j.submit_time)
                .bind(i64::from(s.step_id))
                .execute(&mut *tx)
                .await?;
            bind_step(sqlx::query(AssertSqlSafe(sql.insert_step.clone())), j, s)
                .execute(&mut *tx)
                .await?;
        }
        // Usage is rolled up once per run: when the run first turns final.
        let first_end = match old {
            None => true,
            Some((rc, _, st)) => i64::from(j.restart_count) > rc || !is_final(st),
        };
        if is_final(j.state) && first_end && j.start_time > 0 && j.end_time > j.start_time {
            usage::add_job(store, &mut tx, j).await?;
        }
    }
    tx.commit().await?;
    if store.kind == StorageKind::Sqlite && jobs.len() >= 500 {
        // Keep the planner's statistics current after bulk loads.
        let _ = store.exec("PRAGMA optimize").await;
    }
    Ok(applied)
}

/// The update statement binds every non-key column in JOB_COLS order, then
/// the key (cluster, job_id, submit_time).
fn bind_job_update<'q>(q: Q<'q>, j: &mut JobRecord) -> Q<'q> {
    q.bind(i64::from(j.array_job_id))
        .bind(i64::from(j.array_task_id))
        .bind(std::mem::take(&mut j.array_pending))
        .bind(i64::from(j.array_max_running))
        .bind(std::mem::take(&mut j.name))
        .bind(i64::from(j.uid))
        .bind(std::mem::take(&mut j.user))
        .bind(i64::from(j.gid))
        .bind(std::mem::take(&mut j.account))
        .bind(std::mem::take(&mut j.qos))
        .bind(std::mem::take(&mut j.partition))
        .bind(j.eligible_time)
        .bind(j.start_time)
        .bind(j.end_time)
        .bind(i64::from(j.state))
        .bind(i64::from(j.exit_code))
        .bind(i64::from(j.exit_signal))
        .bind(i64::from(j.cancelled))
        .bind(i64::from(j.cancelled_by))
        .bind(i64::from(j.time_limit))
        .bind(std::mem::take(&mut j.nodelist))
        .bind(i64::from(j.nnodes))
        .bind(i64::from(j.ncpus))
        .bind(i64::from(j.ntasks))
        .bind(std::mem::take(&mut j.req_tres))
        .bind(std::mem::take(&mut j.alloc_tres))
        .bind(j.req_mem_mb as i64)
        .bind(i64::from(j.req_mem_per_cpu))
        .bind(std::mem::take(&mut j.work_dir))
        .bind(std::mem::take(&mut j.comment))
        .bind(std::mem::take(&mut j.reason))
        .bind(j.cpu_time_usec as i64)
        .bind(j.max_rss_kb as i64)
        .bind(i64::from(j.gpu_util_pct))
        .bind(j.gpu_mem_max_mb as i64)
        .bind(i64::from(j.restart_count))
        .bind(i64::from(j.transition))
        .bind(std::mem::take(&mut j.constraints))
        .bind(i64::from(j.priority))
        .bind(std::mem::take(&mut j.wckey))
        .bind(std::mem::take(&mut j.batch_host))
        .bind(i64::from(j.derived_exit_code))
        .bind(i64::from(j.oom))
        .bind(std::mem::take(&mut j.system_comment))
        .bind(std::mem::take(&mut j.cluster))
        .bind(i64::from(j.job_id))
        .bind(j.submit_time)
}

/// A value bound into a dynamically built query.
enum Arg {
    I(i64),
    S(String),
}

/// WHERE clause (on table alias `j`) and its arguments for a query.
fn conditions(q: &JobQuery) -> (String, Vec<Arg>) {
    let mut conds: Vec<String> = Vec::new();
    let mut args = Vec::new();
    if !q.all_clusters {
        let clusters: Vec<String> = if q.clusters.is_empty() {
            vec![q.cluster.clone()]
        } else {
            q.clusters.clone()
        };
        let clusters: Vec<String> = clusters.into_iter().filter(|c| !c.is_empty()).collect();
        if !clusters.is_empty() {
            conds.push(format!(
                "j.cluster IN ({})",
                vec!["?"; clusters.len()].join(",")
            ));
            args.extend(clusters.into_iter().map(Arg::S));
        }
    }
    if !q.job_ids.is_empty() {
        let mut ors = Vec::new();
        for id in &q.job_ids {
            if let Some((a, t)) = id.split_once('_') {
                if let (Ok(a), Ok(t)) = (a.parse::<i64>(), t.parse::<i64>()) {
                    ors.push("(j.array_job_id = ? AND j.array_task_id = ?)".to_string());
                    args.push(Arg::I(a));
                    args.push(Arg::I(t));
                }
            } else if let Ok(n) = id.parse::<i64>() {
                ors.push("(j.job_id = ? OR j.array_job_id = ?)".to_string());
                args.push(Arg::I(n));
                args.push(Arg::I(n));
            }
        }
        if ors.is_empty() {
            ors.push("1 = 0".into());
        }
        conds.push(format!("({})", ors.join(" OR ")));
    }
    let mut list = |col: &str, vals: Vec<Arg>| {
        if !vals.is_empty() {
            conds.push(format!("j.{col} IN ({})", vec!["?"; vals.len()].join(",")));
            args.extend(vals);
        }
    };
    list(
        "uid",
        q.uids.iter().map(|u| Arg::I(i64::from(*u))).collect(),
    );
    list(
        "account",
        q.accounts.iter().map(|s| Arg::S(s.clone())).collect(),
    );
    list(
        "part",
        q.partitions.iter().map(|s| Arg::S(s.clone())).collect(),
    );
    list(
        "job_name",
        q.names.iter().map(|s| Arg::S(s.clone())).collect(),
    );
    list(
        "state",
        q.states.iter().map(|s| Arg::I(i64::from(*s))).collect(),
    );
    list("qos", q.qos.iter().map(|s| Arg::S(s.clone())).collect());
    if q.start > 0 {
        conds.push("(j.end_time >= ? OR j.end_time = 0)".into());
        args.push(Arg::I(q.start));
    }
    if q.end > 0 {
        conds.push("j.submit_time <= ?".into());
        args.push(Arg::I(q.end));
    }
    let w = if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
    };
    (w, args)
}

fn bind_args<'q>(mut q: Q<'q>, args: &[Arg]) -> Q<'q> {
    for a in args {
        q = match a {
            Arg::I(i) => q.bind(*i),
            Arg::S(s) => q.bind(s.clone()),
        };
    }
    q
}

/// Jobs (and their steps unless `no_steps`) matching a query, in submit order.
pub async fn query(store: &Store, q: &JobQuery) -> Result<Vec<JobRecord>, sqlx::Error> {
    let (w, args) = conditions(q);
    let names = selected(q);
    let cols: Vec<String> = names.iter().map(|c| format!("j.{c}")).collect();
    let from = format!("jobs j{w}");
    let bind = |qq| bind_args(qq, &args);
    let rows = crate::packed::fetch(
        store,
        &cols,
        &from,
        "j.submit_time, j.job_id, j.cluster",
        bind,
    )
    .await?;
    let mut jobs: Vec<JobRecord> = crate::packed::rows(&rows)
        .map(|r| {
            let mut j = JobRecord::default();
            for (c, v) in names.iter().zip(r) {
                set_text(&mut j, c, v);
            }
            j
        })
        .collect();
    jobs.sort_by(|a, b| {
        (a.submit_time, a.job_id, &a.cluster).cmp(&(b.submit_time, b.job_id, &b.cluster))
    });
    let nodes: Vec<&str> = q.nodes.iter().map(String::as_str).collect();
    if !nodes.is_empty() {
        jobs.retain(|j| {
            drover_conf::hostlist::expand(&j.nodelist)
                .map(|hs| hs.iter().any(|h| nodes.contains(&h.as_str())))
                .unwrap_or(false)
        });
    }
    if q.no_steps || jobs.is_empty() {
        return Ok(jobs);
    }
    let scols: Vec<String> = STEP_COLS.iter().map(|c| format!("s.{c}")).collect();
    let from = format!(
        "steps s JOIN jobs j ON s.cluster = j.cluster AND s.job_id = j.job_id \
         AND s.submit_time = j.submit_time{w}"
    );
    let rows = crate::packed::fetch(
        store,
        &scols,
        &from,
        "s.submit_time, s.job_id, s.cluster, s.step_id",
        bind,
    )
    .await?;
    let mut index: HashMap<(String, u32, i64), usize> = HashMap::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        index.insert((j.cluster.clone(), j.job_id, j.submit_time), i);
    }
    for r in crate::packed::rows(&rows) {
        let f: Vec<&str> = r.collect();
        let Some(cluster) = f.first() else { continue };
        let id = f.get(1).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
        let st = f.get(2).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
        if let Some(&i) = index.get(&(cluster.to_string(), id, st)) {
            jobs[i].steps.push(step_from_text(&f));
        }
    }
    // Slurm lists batch and extern before numbered steps.
    for j in &mut jobs {
        j.steps.sort_by_key(|s| match s.step_id {
            BATCH_STEP => -3,
            EXTERN_STEP => -2,
            n if n < 0 => -1,
            n => i64::from(n),
        });
    }
    Ok(jobs)
}

/// The highest job id stored for a cluster (the controller starts above it).
pub async fn max_job_id(store: &Store, cluster: &str) -> Result<u32, sqlx::Error> {
    let row = sqlx::query(AssertSqlSafe(
        store.q("SELECT MAX(job_id) FROM jobs WHERE cluster = ?"),
    ))
    .bind(cluster.to_string())
    .fetch_one(&store.pool)
    .await?;
    Ok(row
        .try_get::<Option<i64>, _>(0)
        .ok()
        .flatten()
        .unwrap_or(0)
        .clamp(0, u32::MAX as i64) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_keeps_the_last_record_of_each_run() {
        let r = |job_id, restart_count, transition| JobRecord {
            cluster: "c".into(),
            job_id,
            submit_time: 100,
            restart_count,
            transition,
            ..Default::default()
        };
        let batch = vec![
            r(1, 0, 1),
            r(2, 0, 1),
            r(1, 0, 2),
            r(1, 0, 4),
            r(1, 1, 1),
            r(2, 0, 4),
        ];
        let kept: Vec<(u32, u32, u32)> = latest_per_run(&batch)
            .iter()
            .map(|j| (j.job_id, j.restart_count, j.transition))
            .collect();
        assert_eq!(kept, vec![(1, 0, 4), (1, 1, 1), (2, 0, 4)]);
    }

    #[test]
    fn update_statement_binds_key_last() {
        let key = ["cluster", "job_id", "submit_time"];
        let cols: Vec<&str> = JOB_COLS
            .iter()
            .copied()
            .filter(|c| !key.contains(c))
            .collect();
        assert_eq!(cols.len() + 3, JOB_COLS.len());
        let s = update_sql("jobs", &cols, &key);
        assert!(s.ends_with("WHERE cluster = ? AND job_id = ? AND submit_time = ?"));
        assert_eq!(s.matches('?').count(), JOB_COLS.len());
    }

    #[test]
    fn query_conditions() {
        let q = JobQuery {
            job_ids: vec!["12".into(), "13_2".into()],
            uids: vec![1000],
            start: 5,
            cluster: "lab".into(),
            ..Default::default()
        };
        let (w, args) = conditions(&q);
        assert!(w.contains("j.cluster IN (?)"));
        assert!(w.contains("(j.job_id = ? OR j.array_job_id = ?)"));
        assert!(w.contains("(j.array_job_id = ? AND j.array_task_id = ?)"));
        assert!(w.contains("j.uid IN (?)"));
        assert_eq!(w.matches('?').count(), args.len());
    }
}
