//! `seff JOBID`: how well a finished job used what it asked for (CPU,
//! memory, GPU), with a hint for the next `--mem` after an OOM kill.

use drover_proto::acct::{JobQuery, JobRecord};
use drover_proto::text::printable;
use drover_proto::JobState;

use crate::sacct::fields;

/// `1.50 GB` / `512.00 MB` (seff's kbytes2str).
pub fn kb_str(kb: u64) -> String {
    let kb = kb as f64;
    if kb >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} TB", kb / (1024.0 * 1024.0 * 1024.0))
    } else if kb >= 1024.0 * 1024.0 {
        format!("{:.2} GB", kb / (1024.0 * 1024.0))
    } else if kb >= 1024.0 {
        format!("{:.2} MB", kb / 1024.0)
    } else {
        format!("{kb:.2} KB")
    }
}

/// Memory the job asked for in total, MiB.
fn requested_mb(j: &JobRecord) -> u64 {
    let from_tres = j
        .req_tres
        .split(',')
        .find_map(|p| p.strip_prefix("mem="))
        .and_then(|v| drover_conf::units::parse_mem_mb(v).ok());
    from_tres.unwrap_or(if j.req_mem_per_cpu {
        j.req_mem_mb * u64::from(j.ncpus.max(1))
    } else {
        j.req_mem_mb * u64::from(j.nnodes.max(1))
    })
}

/// A memory request to suggest after the job used (or was killed at) `kb`.
pub fn suggest_mem(used_kb: u64, requested_mb: u64, oom: bool) -> String {
    let used_mb = used_kb.div_ceil(1024);
    let want = if oom {
        (requested_mb * 2).max(used_mb * 3 / 2)
    } else {
        used_mb * 5 / 4
    }
    .max(1);
    if want >= 1024 {
        format!("{}G", want.div_ceil(1024))
    } else {
        format!("{want}M")
    }
}

/// The report for one job record. Pure.
pub fn report(j: &JobRecord, now: i64) -> String {
    let mut o = String::new();
    let id = fields::job_id_text(j);
    if j.array_job_id != 0 {
        o.push_str(&format!("Job ID: {}\nArray Job ID: {id}\n", j.job_id));
    } else {
        o.push_str(&format!("Job ID: {id}\n"));
    }
    o.push_str(&format!("Cluster: {}\n", printable(&j.cluster)));
    let group = crate::users::group_name(j.gid);
    o.push_str(&format!("User/Group: {}/{group}\n", printable(&j.user)));
    let state = JobState::try_from(j.state).unwrap_or(JobState::Pending);
    let st = fields::job_state_text(j);
    if state.is_final() {
        o.push_str(&format!("State: {st} (exit code {})\n", j.exit_code));
    } else {
        o.push_str(&format!("State: {st}\n"));
    }
    let nodes = j.nnodes.max(1);
    o.push_str(&format!("Nodes: {nodes}\n"));
    let cpn = j.ncpus / nodes;
    o.push_str(&format!("Cores per node: {cpn}\n"));
    let elapsed = if j.start_time == 0 {
        0
    } else if j.end_time == 0 {
        (now - j.start_time).max(0)
    } else {
        (j.end_time - j.start_time).max(0)
    };
    let cpu_usec: u64 = j
        .steps
        .iter()
        .map(|s| s.cpu_time_usec)
        .sum::<u64>()
        .max(j.cpu_time_usec);
    let core_wall = elapsed as u64 * u64::from(j.ncpus);
    let cpu_secs = cpu_usec / 1_000_000;
    o.push_str(&format!(
        "CPU Utilized: {}\n",
        crate::timefmt::secs2time_str(cpu_secs as i64)
    ));
    if core_wall > 0 {
        o.push_str(&format!(
            "CPU Efficiency: {:.2}% of {} core-walltime\n",
            cpu_secs as f64 * 100.0 / core_wall as f64,
            crate::timefmt::secs2time_str(core_wall as i64)
        ));
    } else {
        o.push_str("CPU Efficiency: 0.00% of 00:00:00 core-walltime\n");
    }
    o.push_str(&format!(
        "Job Wall-clock time: {}\n",
        crate::timefmt::secs2time_str(elapsed)
    ));
    let rss = j
        .steps
        .iter()
        .map(|s| s.max_rss_kb)
        .max()
        .unwrap_or(0)
        .max(j.max_rss_kb);
    let req = requested_mb(j);
    o.push_str(&format!("Memory Utilized: {}\n", kb_str(rss)));
    if req > 0 {
        o.push_str(&format!(
            "Memory Efficiency: {:.2}% of {}\n",
            rss as f64 * 100.0 / (req as f64 * 1024.0),
            kb_str(req * 1024)
        ));
    } else {
        o.push_str("Memory Efficiency: 0.00% of 0.00 MB\n");
    }
    let gpu_util = j
        .steps
        .iter()
        .map(|s| s.gpu_util_pct)
        .max()
        .unwrap_or(0)
        .max(j.gpu_util_pct);
    let gpu_mem = j
        .steps
        .iter()
        .map(|s| s.gpu_mem_max_mb)
        .max()
        .unwrap_or(0)
        .max(j.gpu_mem_max_mb);
    let gpus = crate::sacct::fields::value(
        "AllocTRES",
        fields::Row::Job(j),
        &fields::Ctx {
            now,
            group: &|g| g.to_string(),
        },
    )
    .split(',')
    .find_map(|p| {
        p.strip_prefix("gres/gpu=")
            .and_then(|v| v.parse::<u32>().ok())
    })
    .unwrap_or(0);
    if gpus > 0 {
        o.push_str(&format!("GPUs: {gpus}\n"));
        o.push_str(&format!("GPU Utilization: {gpu_util}%\n"));
        o.push_str(&format!(
            "GPU Memory Utilized: {}\n",
            kb_str(gpu_mem * 1024)
        ));
    }
    if state == JobState::OutOfMemory || j.oom {
        o.push_str(&format!(
            "The job ran out of memory (limit {}). Ask for more next time, e.g. --mem={}\n",
            kb_str(req * 1024),
            suggest_mem(rss, req, true)
        ));
    } else if !state.is_final() {
        o.push_str("WARNING: Efficiency statistics may be misleading for RUNNING jobs.\n");
    }
    o
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
        // `seff 12` on an array shows its tasks; `12_3` the one task.
        let jobs: Vec<&JobRecord> = jobs
            .iter()
            .filter(|j| {
                base.contains('_')
                    || j.job_id.to_string() == base
                    || j.array_job_id.to_string() == base
            })
            .collect();
        if jobs.is_empty() {
            eprintln!("Job not found.");
            return 2;
        }
        let now = crate::timefmt::now();
        let text: Vec<String> = jobs.iter().map(|j| report(j, now)).collect();
        print!("{}", text.join("\n"));
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::acct::StepRecord;

    #[test]
    fn oom_report_suggests_more_memory() {
        let j = JobRecord {
            job_id: 9,
            cluster: "lab".into(),
            user: "alice".into(),
            state: JobState::OutOfMemory as i32,
            oom: true,
            exit_code: 0,
            nnodes: 1,
            ncpus: 4,
            start_time: 1000,
            end_time: 1600,
            req_tres: "cpu=4,mem=2G,node=1,billing=4,gres/gpu=1".into(),
            alloc_tres: "cpu=4,mem=2G,node=1,billing=4,gres/gpu=1".into(),
            steps: vec![StepRecord {
                step_id: -5,
                cpu_time_usec: 1_200_000_000,
                max_rss_kb: 2 * 1024 * 1024,
                gpu_util_pct: 80,
                gpu_mem_max_mb: 1024,
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = report(&j, 2000);
        assert!(r.contains("State: OUT_OF_MEMORY (exit code 0)"), "{r}");
        assert!(
            r.contains("CPU Efficiency: 50.00% of 00:40:00 core-walltime"),
            "{r}"
        );
        assert!(r.contains("Memory Utilized: 2.00 GB"), "{r}");
        assert!(r.contains("Memory Efficiency: 100.00% of 2.00 GB"), "{r}");
        assert!(r.contains("GPU Utilization: 80%"), "{r}");
        assert!(r.contains("--mem=4G"), "{r}");
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest_mem(100 * 1024, 100, true), "200M");
        assert_eq!(suggest_mem(800 * 1024, 1000, false), "1000M");
        assert_eq!(kb_str(1536), "1.50 MB");
    }
}
