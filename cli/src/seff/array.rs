//! `seff ARRAYID`: one summary of an array's tasks (counts by state, mean
//! and worst efficiencies, the advice that fits every task) instead of a
//! report per task. Pure.

use std::collections::BTreeMap;

use drover_proto::acct::JobRecord;
use drover_proto::text::printable;
use drover_proto::JobState;

use super::advice::{advise, Facts};
use super::report::kb_str;
use super::usage::{self, Usage};
use crate::sacct::fields;

/// Tasks a record stands for: one, or the pending ones of the array's
/// meta record (`array_pending`).
fn task_count(j: &JobRecord) -> usize {
    if j.array_pending.is_empty() {
        1
    } else {
        crate::jobids::parse_array_spec(&j.array_pending).map_or(1, |s| s.indices().len())
    }
}

/// The summary of an array's records (`array_id` its id).
pub fn summary(array_id: u32, tasks: &[&JobRecord], now: i64, facts: &Facts) -> String {
    let mut o = format!("Array Job ID: {array_id}\n");
    let Some(first) = tasks.first() else {
        return o;
    };
    o.push_str(&format!("Cluster: {}\n", printable(&first.cluster)));
    o.push_str(&format!(
        "User/Group: {}/{}\n",
        printable(&first.user),
        crate::users::group_name(first.gid)
    ));
    let mut by_state: BTreeMap<String, usize> = BTreeMap::new();
    for j in tasks {
        *by_state
            .entry(fields::state_name(j.state).to_string())
            .or_default() += task_count(j);
    }
    let total: usize = by_state.values().sum();
    let counts: Vec<String> = by_state.iter().map(|(s, n)| format!("{s} {n}")).collect();
    o.push_str(&format!("Tasks: {total} ({})\n", counts.join(", ")));
    // Figures of the tasks that ran.
    let ran: Vec<(&JobRecord, Usage)> = tasks
        .iter()
        .filter(|j| j.start_time > 0 && j.array_pending.is_empty())
        .map(|j| (*j, usage::of(j, now)))
        .collect();
    if ran.is_empty() {
        return o;
    }
    let id = |j: &JobRecord| fields::job_id_text(j);
    let mean = |f: &dyn Fn(&Usage) -> Option<f64>| {
        let v: Vec<f64> = ran.iter().filter_map(|(_, u)| f(u)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let pick = |f: &dyn Fn(&Usage) -> Option<f64>, highest: bool| {
        ran.iter()
            .filter_map(|(j, u)| f(u).map(|x| (x, *j)))
            .reduce(|a, b| {
                if (highest && b.0 > a.0) || (!highest && b.0 < a.0) {
                    b
                } else {
                    a
                }
            })
    };
    let cpu = |u: &Usage| u.cpu_efficiency();
    if let (Some(m), Some((w, j))) = (mean(&cpu), pick(&cpu, false)) {
        o.push_str(&format!(
            "CPU Efficiency: mean {:.2}%, lowest {:.2}% (task {})\n",
            m * 100.0,
            w * 100.0,
            id(j)
        ));
    }
    let mem = |u: &Usage| u.mem_efficiency();
    if let (Some(m), Some((w, j))) = (mean(&mem), pick(&mem, true)) {
        o.push_str(&format!(
            "Memory Efficiency: mean {:.2}%, highest {:.2}% (task {})\n",
            m * 100.0,
            w * 100.0,
            id(j)
        ));
    }
    let rss = |u: &Usage| Some(u.peak_rss_kb as f64);
    if let Some((w, j)) = pick(&rss, true) {
        o.push_str(&format!(
            "Memory Utilized: highest {} (task {})\n",
            kb_str(w as u64),
            id(j)
        ));
    }
    let wall = |u: &Usage| Some(u.elapsed as f64);
    if let (Some(m), Some((w, j))) = (mean(&wall), pick(&wall, true)) {
        o.push_str(&format!(
            "Job Wall-clock time: mean {}, longest {} (task {})\n",
            crate::timefmt::secs2time_str(m.round() as i64),
            crate::timefmt::secs2time_str(w as i64),
            id(j)
        ));
    }
    // Advice that fits every finished task: their worst case.
    let finished: Vec<&Usage> = ran
        .iter()
        .map(|(_, u)| u)
        .filter(|u| u.state.is_final())
        .collect();
    let worst = finished
        .split_first()
        .map(|(f, rest)| rest.iter().fold((*f).clone(), |a, u| a.worst(u)));
    if let Some(worst) = worst {
        let oom = finished.iter().filter(|u| u.host_oom).count();
        let gpu = finished.iter().filter(|u| u.gpu_oom).count();
        if oom > 0 {
            o.push_str(&format!("Failure: {oom} task(s) ran out of memory\n"));
        }
        if gpu > 0 {
            o.push_str(&format!("Failure: {gpu} task(s) ran out of GPU memory\n"));
        }
        for a in advise(&worst, facts) {
            o.push_str(&format!("Advice: {}\n", a.text));
        }
    }
    if ran.iter().any(|(_, u)| u.state == JobState::Running) {
        o.push_str("WARNING: Efficiency statistics may be misleading for RUNNING jobs.\n");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::acct::StepRecord;

    fn task(i: u32, state: JobState, rss_mb: u64, secs: i64) -> JobRecord {
        JobRecord {
            cluster: "lab".into(),
            user: "alice".into(),
            job_id: 20 + i,
            array_job_id: 20,
            array_task_id: i,
            state: state as i32,
            oom: state == JobState::OutOfMemory,
            nnodes: 1,
            ncpus: 1,
            ntasks: 1,
            start_time: 1000,
            end_time: 1000 + secs,
            req_mem_mb: 100,
            time_limit: 60,
            steps: vec![StepRecord {
                step_id: -5,
                max_rss_kb: rss_mb * 1024,
                cpu_time_usec: secs as u64 * 500_000,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn summarises_tasks_and_advises_for_all() {
        let t = [
            task(1, JobState::Completed, 40, 60),
            task(2, JobState::OutOfMemory, 100, 30),
            task(3, JobState::Completed, 20, 120),
        ];
        let pending = JobRecord {
            job_id: 20,
            array_job_id: 20,
            array_pending: "4-6".into(),
            state: JobState::Pending as i32,
            ..Default::default()
        };
        let mut refs: Vec<&JobRecord> = t.iter().collect();
        refs.push(&pending);
        let s = summary(20, &refs, 5000, &Facts::default());
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "Array Job ID: 20");
        assert_eq!(
            lines[3], "Tasks: 6 (COMPLETED 2, OUT_OF_MEMORY 1, PENDING 3)",
            "{s}"
        );
        assert_eq!(
            lines[4], "CPU Efficiency: mean 50.00%, lowest 50.00% (task 20_1)",
            "{s}"
        );
        assert_eq!(
            lines[5], "Memory Efficiency: mean 53.33%, highest 100.00% (task 20_2)",
            "{s}"
        );
        assert_eq!(
            lines[6], "Memory Utilized: highest 100.00 MB (task 20_2)",
            "{s}"
        );
        assert_eq!(
            lines[7], "Job Wall-clock time: mean 00:01:10, longest 00:02:00 (task 20_3)",
            "{s}"
        );
        assert_eq!(lines[8], "Failure: 1 task(s) ran out of memory", "{s}");
        assert_eq!(
            lines[9],
            "Advice: Out of memory: peak memory reached the 100 MiB limit; ask --mem=256M.",
            "{s}"
        );
        assert_eq!(lines.len(), 10, "{s}");
    }
}
