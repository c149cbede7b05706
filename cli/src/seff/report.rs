//! seff's report of one job: Slurm's seff lines first (scripts parse
//! them), then why it failed and the advice. Pure.

use drover_proto::acct::JobRecord;
use drover_proto::text::printable;
use drover_proto::JobState;

use super::advice::{advise, Facts};
use super::usage;
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
    let elapsed = usage::elapsed(j, now) as i64;
    let cpu_usec = usage::cpu_usec(j);
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
    let rss = usage::peak_rss_kb(j);
    let req = usage::requested_total_mb(j);
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
    if !state.is_final() {
        o.push_str("WARNING: Efficiency statistics may be misleading for RUNNING jobs.\n");
    }
    o
}

/// Why the job failed (its SystemComment) and what to ask for next time,
/// after the Slurm lines: `Failure: ...`, then one `Advice: ...` a line.
pub fn advice_lines(j: &JobRecord, now: i64, facts: &Facts) -> String {
    let mut o = String::new();
    if !j.system_comment.is_empty() {
        o.push_str(&format!("Failure: {}\n", printable(&j.system_comment)));
    }
    for a in advise(&usage::of(j, now), facts) {
        o.push_str(&format!("Advice: {}\n", a.text));
    }
    o
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
        assert!(!r.contains("Advice"), "Slurm's lines only: {r}");
        let a = advice_lines(&j, 2000, &Facts::default());
        assert_eq!(
            a,
            "Advice: Out of memory: peak memory reached the 2 GiB limit; ask --mem=3G.\n"
        );
    }

    #[test]
    fn gpu_oom_failure_line() {
        let j = JobRecord {
            job_id: 10,
            state: JobState::Failed as i32,
            exit_code: 1,
            start_time: 1000,
            end_time: 1010,
            alloc_tres: "cpu=1,gres/gpu=1,gres/gpu:t4=1".into(),
            system_comment: "GPU out of memory: RuntimeError: CUDA out of memory.".into(),
            ..Default::default()
        };
        let f = Facts {
            max_node_mem_mb: None,
            gpu_types: vec![("t4".into(), Some(16384)), ("l40s".into(), Some(49152))],
        };
        let a = advice_lines(&j, 2000, &f);
        let lines: Vec<&str> = a.lines().collect();
        assert_eq!(
            lines[0],
            "Failure: GPU out of memory: RuntimeError: CUDA out of memory."
        );
        assert!(lines[1].starts_with("Advice: Out of GPU memory:"), "{a}");
        assert!(
            lines[1].contains("l40s (48 GiB) (e.g. --gres=gpu:l40s:1)"),
            "{a}"
        );
        assert_eq!(kb_str(1536), "1.50 MB");
    }
}
