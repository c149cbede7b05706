//! `sacct --json`: the fields of Slurm's data_parser job records that tools
//! read (job_id, name, state, exit_code, time, tres, steps, array).

use drover_proto::acct::{JobRecord, StepRecord};
use serde_json::{json, Value};

use super::fields::{self, state_name};

fn num(n: i64) -> Value {
    json!({"set": true, "infinite": false, "number": n})
}

fn exit(code: i32, sig: i32) -> Value {
    let status = if sig != 0 {
        "SIGNALED"
    } else if code != 0 {
        "ERROR"
    } else {
        "SUCCESS"
    };
    json!({
        "status": [status],
        "return_code": num(i64::from(code)),
        "signal": {"id": num(i64::from(sig)), "name": ""},
    })
}

fn tres_list(t: &str) -> Value {
    Value::Array(
        t.split(',')
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| {
                let (ty, name) = k.split_once('/').unwrap_or((k, ""));
                let count = if ty == "mem" {
                    drover_conf::units::parse_mem_mb(v).unwrap_or(0) as i64
                } else {
                    v.parse::<i64>().unwrap_or(0)
                };
                json!({"type": ty, "name": name, "id": 0, "count": count})
            })
            .collect(),
    )
}

fn step(j: &JobRecord, s: &StepRecord, now: i64) -> Value {
    let elapsed = if s.start_time == 0 {
        0
    } else if s.end_time == 0 {
        now - s.start_time
    } else {
        s.end_time - s.start_time
    };
    json!({
        "step": {"id": format!("{}.{}", j.job_id, fields::step_suffix(s.step_id)), "name": s.name},
        "state": [state_name(s.state)],
        "exit_code": exit(s.exit_code, s.exit_signal),
        "nodes": {"count": s.nnodes, "list": [s.nodelist], "range": s.nodelist},
        "tasks": {"count": s.ntasks},
        "time": {
            "start": num(s.start_time), "end": num(s.end_time), "elapsed": elapsed.max(0),
            "total": {"seconds": s.cpu_time_usec / 1_000_000, "microseconds": s.cpu_time_usec % 1_000_000},
        },
        "tres": {
            "allocated": tres_list(&s.alloc_tres),
            "requested": {"max": tres_list(&format!("mem={}K", s.max_rss_kb))},
        },
        "gpu": {"utilization_percent": s.gpu_util_pct, "memory_max_mb": s.gpu_mem_max_mb},
    })
}

pub fn job(j: &JobRecord, now: i64) -> Value {
    let elapsed = if j.start_time == 0 {
        0
    } else if j.end_time == 0 {
        now - j.start_time
    } else {
        j.end_time - j.start_time
    };
    json!({
        "job_id": j.job_id,
        "name": j.name,
        "user": j.user,
        "account": j.account,
        "partition": j.partition,
        "qos": j.qos,
        "cluster": j.cluster,
        "comment": {"job": j.comment, "system": j.system_comment},
        "working_directory": j.work_dir,
        "nodes": j.nodelist,
        "allocation_nodes": j.nnodes,
        "array": {
            "job_id": j.array_job_id,
            "task_id": if j.array_job_id != 0 && j.array_pending.is_empty() { num(i64::from(j.array_task_id)) } else { json!({"set": false, "infinite": false, "number": 0}) },
            "task": j.array_pending,
        },
        "state": {"current": [state_name(j.state)], "reason": j.reason},
        "exit_code": exit(j.exit_code, j.exit_signal),
        "derived_exit_code": exit(j.derived_exit_code as i32, 0),
        "restart_cnt": j.restart_count,
        "time": {
            "submission": j.submit_time, "eligible": j.eligible_time, "start": j.start_time,
            "end": j.end_time, "elapsed": elapsed.max(0),
            "limit": if j.time_limit == u32::MAX { json!({"set": true, "infinite": true, "number": 0}) } else { num(i64::from(j.time_limit)) },
        },
        "tres": {"requested": tres_list(&j.req_tres), "allocated": tres_list(&j.alloc_tres)},
        "required": {"CPUs": j.ncpus, "memory_per_node": num(j.req_mem_mb as i64)},
        "kill_request_user": if j.cancelled { Value::String(j.cancelled_by.to_string()) } else { Value::Null },
        "steps": j.steps.iter().map(|s| step(j, s, now)).collect::<Vec<_>>(),
    })
}

pub fn render(jobs: &[JobRecord], now: i64) -> String {
    let v = json!({
        "jobs": jobs.iter().map(|j| job(j, now)).collect::<Vec<_>>(),
        "meta": {"plugin": {"type": "openapi/v0.0.40", "name": "Slurm OpenAPI v0.0.40", "data_parser": "data_parser/v0.0.40"},
                 "Slurm": {"version": {"major": crate::SLURM_MAJOR, "minor": crate::SLURM_MINOR, "micro": crate::SLURM_MICRO}, "release": crate::SLURM_VERSION}},
        "errors": [],
        "warnings": [],
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}
