//! seff's report of one job: Slurm's seff lines first (scripts parse
//! them), then why it failed and the advice. Pure.

use drover_proto::acct::JobRecord;
use drover_proto::seff;
use drover_proto::text::printable;
use drover_proto::JobState;

use super::advice::{advise, Facts};
use super::usage;
use crate::sacct::fields;

/// `1.50 GB` / `512.00 MB` (seff's kbytes2str).
pub fn kb_str(kb: u64) -> String {
    seff::kb_text(kb)
}

/// The report for one job record: Slurm's seff lines. Pure.
pub fn report(j: &JobRecord, now: i64) -> String {
    let state = JobState::try_from(j.state).unwrap_or(JobState::Pending);
    let nodes = j.nnodes.max(1);
    let gpu_util = usage::gpu_util_pct(j);
    let gpu_mem = usage::gpu_mem_max_mb(j);
    let gpus = fields::value(
        "AllocTRES",
        fields::Row::Job(j),
        &fields::Ctx {
            now,
            group: &|g| g.to_string(),
            noconvert: false,
        },
    )
    .split(',')
    .find_map(|p| {
        p.strip_prefix("gres/gpu=")
            .and_then(|v| v.parse::<u32>().ok())
    })
    .unwrap_or(0);
    seff::efficiency_summary(&seff::Usage {
        job_id: j.job_id,
        array_id: (j.array_job_id != 0).then(|| fields::job_id_text(j)),
        cluster: printable(&j.cluster).into_owned(),
        user: printable(&j.user).into_owned(),
        group: crate::users::group_name(j.gid),
        state: fields::job_state_text(j),
        finished: state.is_final(),
        exit_code: j.exit_code,
        nodes,
        cpus: j.ncpus,
        elapsed_secs: usage::elapsed(j, now),
        cpu_secs: usage::cpu_usec(j) / 1_000_000,
        max_rss_kb: usage::peak_rss_kb(j),
        mem_mb: usage::requested_total_mb(j),
        gpus,
        gpu_util_pct: gpu_util,
        gpu_mem_mb: gpu_mem,
    })
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
