//! `seff JOBID`: how well a finished job used what it asked for (CPU,
//! memory, GPU) in Slurm's seff format, then why it failed and what to ask
//! for next time; `seff ARRAYID` summarises an array's tasks.
//!
//! * `usage.rs` — the measured figures of a record (pure);
//! * `advice.rs` — the advice rules (pure; the dashboard can reuse them);
//! * `report.rs` — one job's report (pure);
//! * `array.rs` — an array's summary (pure);
//! * here — the command, and the cluster's facts from the config.

pub mod advice;
pub mod array;
pub mod report;
pub mod usage;

use drover_conf::slurmconf::Config;
use drover_proto::acct::{JobQuery, JobRecord};

use advice::{gpu_type_mem_mb, Facts};

/// What the cluster offers to a job of `partition` (the config's nodes).
pub fn facts(cfg: &Config, partition: &str) -> Facts {
    let part = partition.split(',').next().unwrap_or("");
    let mut nodes = cfg.partition_nodes(part);
    if nodes.is_empty() {
        nodes = cfg.nodes.iter().collect();
    }
    let max_node_mem_mb = nodes
        .iter()
        .map(|n| n.real_memory.saturating_sub(n.mem_spec_limit))
        .max()
        .filter(|m| *m > 1);
    let mut gpu_types: Vec<(String, Option<u64>)> = Vec::new();
    for g in cfg.nodes.iter().flat_map(|n| &n.gres) {
        if let (true, Some(t)) = (g.name == "gpu", &g.r#type) {
            if !gpu_types.iter().any(|(x, _)| x == t) {
                gpu_types.push((t.clone(), gpu_type_mem_mb(t)));
            }
        }
    }
    Facts {
        max_node_mem_mb,
        gpu_types,
    }
}

pub fn run(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("Usage: seff [Options] <JobID>\n       Options:\n       -h    Help menu\n       -v    Version");
        return 0;
    }
    if args
        .iter()
        .any(|a| a == "-v" || a == "-V" || a == "--version")
    {
        crate::print_version();
        return 0;
    }
    let ids: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let [id] = ids.as_slice() else {
        eprintln!("Usage: seff [Options] <JobID>");
        return 1;
    };
    let base = id.split('.').next().unwrap_or("");
    if base.is_empty()
        || !base
            .split('_')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        eprintln!("seff: error: Invalid job id: {id}");
        return 1;
    }
    let (cfg, rt) = match crate::conn::setup("seff") {
        Ok(x) => x,
        Err(rc) => return rc,
    };
    rt.block_on(async move {
        let mut client = match crate::acctconn::client("seff", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let q = JobQuery {
            job_ids: vec![base.to_string()],
            cluster: cfg.cluster_name.clone(),
            ..Default::default()
        };
        let jobs = match client.get_jobs(q).await {
            Ok(r) => r.into_inner().jobs,
            Err(e) => {
                crate::acctconn::report("seff", &e);
                return 1;
            }
        };
        // `seff 12` on an array summarises its tasks; `12_3` is the one task.
        let jobs: Vec<&JobRecord> = jobs
            .iter()
            .filter(|j| {
                base.contains('_')
                    || j.job_id.to_string() == base
                    || j.array_job_id.to_string() == base
            })
            .collect();
        let Some(first) = jobs.first() else {
            eprintln!("Job not found.");
            return 2;
        };
        let now = crate::timefmt::now();
        let array = !base.contains('_') && jobs.iter().any(|j| j.array_job_id.to_string() == base);
        if array {
            let f = facts(&cfg, &first.partition);
            print!("{}", array::summary(first.array_job_id, &jobs, now, &f));
            return 0;
        }
        let text: Vec<String> = jobs
            .iter()
            .map(|j| {
                let mut t = report::report(j, now);
                t.push_str(&report::advice_lines(j, now, &facts(&cfg, &j.partition)));
                t
            })
            .collect();
        print!("{}", text.join("\n"));
        0
    })
}
