//! `/metrics`: Prometheus text exposition. Gauges from the queue, node and
//! partition listings (Slurm 25.11's `slurm_*` names), sdiag's counters,
//! and the controller's own histograms (`GetMetrics`). Read with daemon
//! credentials, so served only while PrivateData is not set (Slurm's rule
//! for its metrics). The rendering is pure.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use drover_proto::metrics::{family, sample};
use drover_proto::{
    DiagRequest, DiagResponse, GetJobsRequest, GetNodesRequest, GetPartitionsRequest, JobFilter,
    JobInfo, JobState, MetricsRequest, NodeInfo, PartitionInfo,
};

use crate::reply::{errno, Failure};
use crate::App;

/// Slurm's metric word for a job state (`slurm_jobs_<word>`).
pub fn state_word(s: JobState) -> String {
    match s {
        JobState::NodeFail => "node_failed".into(),
        JobState::OutOfMemory => "outofmemory".into(),
        JobState::BootFail => "bootfail".into(),
        other => other.long_name().to_ascii_lowercase().replace('_', ""),
    }
}

/// Slurm's metric word for a node's base state (`slurm_nodes_<word>`).
fn node_words(n: &NodeInfo) -> Vec<&'static str> {
    let mut w = vec![match n.state.as_str() {
        "IDLE" => "idle",
        "ALLOCATED" => "alloc",
        "MIXED" => "mixed",
        "DOWN" => "down",
        "DRAINED" => "drained",
        "DRAINING" => "draining",
        "COMPLETING" => "completing",
        "FUTURE" => "future",
        _ => "unknown",
    }];
    if n.state_flags.contains("DRAIN") || n.state == "DRAINED" || n.state == "DRAINING" {
        w.push("drain");
    }
    if n.state_flags.contains("NOT_RESPONDING") {
        w.push("noresp");
    }
    if n.state_flags.contains("COMPLETING") && n.state != "COMPLETING" {
        w.push("completing");
    }
    w
}

/// GPUs in a GRES text (`gpu:a100:4`, `gpu:1(IDX:0)`, several comma-separated).
pub fn gpus_in(gres: &str) -> u64 {
    let mut total = 0;
    let mut depth = 0;
    let mut item = String::new();
    let mut items = Vec::new();
    for ch in gres.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => items.push(std::mem::take(&mut item)),
            _ if depth == 0 => item.push(ch),
            _ => {}
        }
    }
    items.push(item);
    for it in items {
        let it = it.trim();
        if it == "gpu" || it.starts_with("gpu:") {
            total += it
                .rsplit(':')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(u64::from(it == "gpu"));
        }
    }
    total
}

/// `mem=` (in bytes) and `gres/gpu=` of a TRES text.
pub fn tres_mem_gpus(tres: &str) -> (u64, u64) {
    let (mut mem, mut gpus) = (0, 0);
    for kv in tres.split(',') {
        match kv.split_once('=') {
            Some(("mem", v)) => {
                mem = drover_conf::units::parse_mem_mb(v).unwrap_or(0) * 1024 * 1024
            }
            Some(("gres/gpu", v)) => gpus = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    (mem, gpus)
}

#[derive(Default)]
struct PartSums {
    jobs: BTreeMap<String, u64>,
    total: u64,
    cpus_alloc: u64,
    mem_alloc: u64,
    gpus_alloc: u64,
}

/// Everything but the controller's own text.
pub fn render(
    out: &mut String,
    jobs: &[JobInfo],
    nodes: &[NodeInfo],
    parts: &[PartitionInfo],
    diag: &DiagResponse,
) {
    let params = drover_cli::squeue::parse_args(
        &["-t".to_string(), "all".to_string()],
        &|_| None,
        &|_| None,
        0,
    );
    let Ok(drover_cli::squeue::Parsed::Run(params)) = params else {
        return;
    };
    // Jobs as squeue lists them (a pending array remainder is one line).
    let mut rows = Vec::with_capacity(jobs.len());
    for j in jobs {
        drover_cli::squeue::filter(j, &params, &mut rows);
    }
    let mut by_state: BTreeMap<String, u64> = BTreeMap::new();
    for s in [
        JobState::Pending,
        JobState::Running,
        JobState::Suspended,
        JobState::Completing,
        JobState::Completed,
        JobState::Cancelled,
        JobState::Failed,
        JobState::Timeout,
        JobState::NodeFail,
        JobState::Preempted,
        JobState::OutOfMemory,
    ] {
        by_state.insert(state_word(s), 0);
    }
    let mut parts_sum: BTreeMap<String, PartSums> = BTreeMap::new();
    for p in parts {
        parts_sum.entry(p.name.clone()).or_default();
    }
    let (mut cpus_alloc, mut mem_alloc, mut nodes_alloc, mut gpus_alloc) = (0u64, 0u64, 0u64, 0u64);
    for r in &rows {
        let j = r.job;
        let word = state_word(j.state());
        *by_state.entry(word.clone()).or_default() += 1;
        let p = parts_sum.entry(j.partition.clone()).or_default();
        *p.jobs.entry(word).or_default() += 1;
        p.total += 1;
        if matches!(
            j.state(),
            JobState::Running | JobState::Completing | JobState::Suspended
        ) {
            let (mem, gpus) = tres_mem_gpus(&j.tres_alloc);
            p.cpus_alloc += u64::from(j.num_cpus);
            p.mem_alloc += mem;
            p.gpus_alloc += gpus;
            cpus_alloc += u64::from(j.num_cpus);
            mem_alloc += mem;
            gpus_alloc += gpus;
            nodes_alloc += u64::from(j.num_nodes);
        }
    }
    family(out, "slurm_jobs", "gauge", "Total number of jobs");
    sample(out, "slurm_jobs", &[], rows.len() as f64);
    for (w, n) in &by_state {
        let name = format!("slurm_jobs_{w}");
        family(
            out,
            &name,
            "gauge",
            &format!("Number of jobs in {} state", w.to_ascii_uppercase()),
        );
        sample(out, &name, &[], *n as f64);
    }
    for (name, help, v) in [
        (
            "slurm_jobs_cpus_alloc",
            "Total number of CPUs allocated by jobs",
            cpus_alloc,
        ),
        (
            "slurm_jobs_memory_alloc",
            "Total memory bytes allocated by jobs",
            mem_alloc,
        ),
        (
            "slurm_jobs_nodes_alloc",
            "Total number of nodes allocated by jobs",
            nodes_alloc,
        ),
        (
            "slurm_jobs_gpus_alloc",
            "Total number of GPUs allocated by jobs",
            gpus_alloc,
        ),
    ] {
        family(out, name, "gauge", help);
        sample(out, name, &[], v as f64);
    }

    // Partitions.
    family(
        out,
        "slurm_partitions",
        "gauge",
        "Total number of partitions",
    );
    sample(out, "slurm_partitions", &[], parts.len() as f64);
    family(
        out,
        "slurm_partition_jobs",
        "gauge",
        "Number of jobs in this partition",
    );
    for (p, s) in &parts_sum {
        sample(
            out,
            "slurm_partition_jobs",
            &[("partition", p)],
            s.total as f64,
        );
    }
    let words: Vec<String> = by_state.keys().cloned().collect();
    for w in &words {
        let name = format!("slurm_partition_jobs_{w}");
        family(
            out,
            &name,
            "gauge",
            &format!(
                "Number of jobs in {} state, by partition",
                w.to_ascii_uppercase()
            ),
        );
        for (p, s) in &parts_sum {
            sample(
                out,
                &name,
                &[("partition", p)],
                *s.jobs.get(w).unwrap_or(&0) as f64,
            );
        }
    }
    for (name, help, get) in [
        (
            "slurm_partition_jobs_cpus_alloc",
            "CPUs allocated by jobs, by partition",
            (|s: &PartSums| s.cpus_alloc) as fn(&PartSums) -> u64,
        ),
        (
            "slurm_partition_jobs_memory_alloc",
            "Memory bytes allocated by jobs, by partition",
            |s| s.mem_alloc,
        ),
        (
            "slurm_partition_jobs_gpus_alloc",
            "GPUs allocated by jobs, by partition",
            |s| s.gpus_alloc,
        ),
    ] {
        family(out, name, "gauge", help);
        for (p, s) in &parts_sum {
            sample(out, name, &[("partition", p)], get(s) as f64);
        }
    }
    // Partition capacity, from its nodes.
    let mut cap: BTreeMap<&str, [u64; 8]> = BTreeMap::new(); // nodes cpus cpus_alloc mem mem_alloc gpus gpus_alloc _
    for p in parts {
        cap.insert(&p.name, [0; 8]);
    }
    for n in nodes {
        for p in &n.partitions {
            if let Some(c) = cap.get_mut(p.as_str()) {
                c[0] += 1;
                c[1] += u64::from(n.cpus);
                c[2] += u64::from(n.cpus_alloc);
                c[3] += n.real_memory * 1024 * 1024;
                c[4] += n.alloc_memory * 1024 * 1024;
                c[5] += gpus_in(&n.gres);
                c[6] += gpus_in(&n.gres_used);
            }
        }
    }
    for (i, name, help) in [
        (0, "slurm_partition_nodes", "Partition total nodes"),
        (1, "slurm_partition_cpus", "Partition total CPUs"),
        (
            2,
            "slurm_partition_nodes_cpus_alloc",
            "Allocated CPUs on the partition's nodes",
        ),
        (
            3,
            "slurm_partition_nodes_mem_tot",
            "Total memory bytes of the partition's nodes",
        ),
        (
            4,
            "slurm_partition_nodes_mem_alloc",
            "Allocated memory bytes on the partition's nodes",
        ),
        (
            5,
            "slurm_partition_gpus",
            "Total GPUs of the partition's nodes",
        ),
        (
            6,
            "slurm_partition_nodes_gpus_alloc",
            "Allocated GPUs on the partition's nodes",
        ),
    ] {
        family(out, name, "gauge", help);
        for (p, c) in &cap {
            sample(out, name, &[("partition", p)], c[i] as f64);
        }
    }

    // Nodes.
    let mut node_states: BTreeMap<&str, u64> = [
        "idle",
        "alloc",
        "mixed",
        "down",
        "drain",
        "drained",
        "draining",
        "completing",
        "noresp",
        "future",
        "unknown",
    ]
    .into_iter()
    .map(|w| (w, 0))
    .collect();
    for n in nodes {
        for w in node_words(n) {
            *node_states.entry(w).or_default() += 1;
        }
    }
    family(out, "slurm_nodes", "gauge", "Total number of nodes");
    sample(out, "slurm_nodes", &[], nodes.len() as f64);
    for (w, c) in &node_states {
        let name = format!("slurm_nodes_{w}");
        family(
            out,
            &name,
            "gauge",
            &format!("Number of nodes in {} state", w.to_ascii_uppercase()),
        );
        sample(out, &name, &[], *c as f64);
    }
    for (name, help, get) in [
        (
            "slurm_node_cpus",
            "Total number of CPUs in the node",
            (|n: &NodeInfo| u64::from(n.cpus)) as fn(&NodeInfo) -> u64,
        ),
        ("slurm_node_cpus_alloc", "Allocated CPUs in the node", |n| {
            u64::from(n.cpus_alloc)
        }),
        ("slurm_node_cpus_idle", "Idle CPUs in the node", |n| {
            u64::from(n.cpus.saturating_sub(n.cpus_alloc))
        }),
        (
            "slurm_node_memory_bytes",
            "Total memory bytes of the node",
            |n| n.real_memory * 1024 * 1024,
        ),
        (
            "slurm_node_memory_alloc_bytes",
            "Bytes allocated to jobs in the node",
            |n| n.alloc_memory * 1024 * 1024,
        ),
        ("slurm_node_gpus", "Total GPUs of the node", |n| {
            gpus_in(&n.gres)
        }),
        (
            "slurm_node_gpus_alloc",
            "GPUs allocated to jobs in the node",
            |n| gpus_in(&n.gres_used),
        ),
    ] {
        family(out, name, "gauge", help);
        for n in nodes {
            sample(out, name, &[("node", &n.name)], get(n) as f64);
        }
    }

    // sdiag.
    for (name, kind, help, v) in [
        (
            "slurm_sdiag_jobs_submitted",
            "counter",
            "Jobs submitted since the controller started",
            u64::from(diag.jobs_submitted),
        ),
        (
            "slurm_sdiag_jobs_started",
            "counter",
            "Jobs started since the controller started",
            u64::from(diag.jobs_started),
        ),
        (
            "slurm_sdiag_jobs_completed",
            "counter",
            "Jobs completed since the controller started",
            u64::from(diag.jobs_completed),
        ),
        (
            "slurm_sdiag_jobs_canceled",
            "counter",
            "Jobs canceled since the controller started",
            u64::from(diag.jobs_canceled),
        ),
        (
            "slurm_sdiag_jobs_failed",
            "counter",
            "Jobs failed since the controller started",
            u64::from(diag.jobs_failed),
        ),
        (
            "slurm_schedule_cycle_cnt",
            "counter",
            "Scheduling cycle count",
            diag.cycle_count,
        ),
        (
            "slurm_schedule_cycle_last",
            "gauge",
            "Last scheduling cycle time (microseconds)",
            diag.cycle_last_us,
        ),
        (
            "slurm_schedule_cycle_max",
            "gauge",
            "Max scheduling cycle time (microseconds)",
            diag.cycle_max_us,
        ),
        (
            "slurm_schedule_cycle_tot",
            "counter",
            "Sum of scheduling cycle times (microseconds)",
            diag.cycle_sum_us,
        ),
        (
            "slurm_schedule_cycle_depth",
            "counter",
            "Processed jobs depth total",
            diag.cycle_depth_sum,
        ),
        (
            "slurm_schedule_queue_len",
            "gauge",
            "Jobs pending queue length at the last cycle",
            u64::from(diag.queue_len),
        ),
        (
            "slurm_server_thread_cnt",
            "gauge",
            "Controller threads serving RPCs",
            u64::from(diag.server_thread_count),
        ),
    ] {
        family(out, name, kind, help);
        sample(out, name, &[], v as f64);
    }
}

fn fail(st: tonic::Status) -> Failure {
    Failure::from_status(&st)
}

/// The handler.
pub async fn serve(State(app): State<Arc<App>>) -> Response {
    if app.private_data {
        return Failure::new(
            StatusCode::FORBIDDEN,
            errno::ACCESS_DENIED,
            "Access/permission denied",
            "metrics are disabled while PrivateData is set (as in Slurm)",
        )
        .into_response();
    }
    let c = app.ctl.controller_as_daemon();
    let (mut c1, mut c2, mut c3, mut c4, mut c5) = (c.clone(), c.clone(), c.clone(), c.clone(), c);
    let all = JobFilter {
        all_states: true,
        ..Default::default()
    };
    let (jobs, nodes, parts, diag, own) = tokio::join!(
        c1.get_jobs(GetJobsRequest {
            filter: Some(all),
            details: true,
            fields: Vec::new(),
        }),
        c2.get_nodes(GetNodesRequest { names: Vec::new() }),
        c3.get_partitions(GetPartitionsRequest { names: Vec::new() }),
        c4.get_diag(DiagRequest {}),
        c5.get_metrics(MetricsRequest {}),
    );
    let got = (|| {
        Ok::<_, Failure>((
            jobs.map_err(fail)?.into_inner().jobs,
            nodes.map_err(fail)?.into_inner().nodes,
            parts.map_err(fail)?.into_inner().partitions,
            diag.map_err(fail)?.into_inner(),
            own.map_err(fail)?.into_inner().text,
        ))
    })();
    let (jobs, nodes, parts, diag, own) = match got {
        Ok(x) => x,
        Err(f) => return f.into_response(),
    };
    let mut out = String::with_capacity(64 * 1024);
    render(&mut out, &jobs, &nodes, &parts, &diag);
    out.push_str(&own);
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gres_and_tres_counts() {
        assert_eq!(gpus_in("gpu:a100:4"), 4);
        assert_eq!(gpus_in("gpu:2(IDX:0-1),gpu:t4:1(IDX:2)"), 3);
        assert_eq!(gpus_in(""), 0);
        assert_eq!(gpus_in("shard:8"), 0);
        assert_eq!(
            tres_mem_gpus("cpu=4,mem=8G,node=1,billing=4,gres/gpu=2"),
            (8 << 30, 2)
        );
        assert_eq!(tres_mem_gpus("cpu=1,mem=500M"), (500 << 20, 0));
    }

    #[test]
    fn state_words_follow_slurm() {
        assert_eq!(state_word(JobState::Pending), "pending");
        assert_eq!(state_word(JobState::NodeFail), "node_failed");
        assert_eq!(state_word(JobState::OutOfMemory), "outofmemory");
    }
}
