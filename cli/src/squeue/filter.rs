//! Which records squeue shows, and `-r` expansion. Pure.

use drover_proto::{JobInfo, JobState};

use super::args::Params;
use super::format::Row;
use crate::jobids::{self, JobIdArg};

fn default_state(s: JobState) -> bool {
    matches!(
        s,
        JobState::Pending
            | JobState::Running
            | JobState::Suspended
            | JobState::Completing
            | JobState::Configuring
    )
}

/// Apply the filters to one record; returns the rows it contributes.
pub fn filter<'a>(job: &'a JobInfo, p: &Params, out: &mut Vec<Row<'a>>) {
    let mut row = Row::new(job);
    let meta = job.is_array_meta && job.array_job_id != 0;
    if meta && job.array_pending.is_empty() {
        return;
    }
    let mut narrowed: Option<Vec<u32>> = None;
    if let Some(jobs) = &p.jobs {
        let mut ok = false;
        for want in jobs {
            match want {
                JobIdArg::Job(j) => {
                    if job.job_id == *j || (job.array_job_id != 0 && job.array_job_id == *j) {
                        ok = true;
                        narrowed = None;
                        break;
                    }
                }
                JobIdArg::Task(j, t) => {
                    if job.array_job_id == *j {
                        if meta {
                            if jobids::expand_indices(&job.array_pending).contains(t) {
                                narrowed.get_or_insert_with(Vec::new).push(*t);
                                ok = true;
                            }
                        } else if job.array_task_id == *t {
                            ok = true;
                        }
                    }
                }
                JobIdArg::Tasks(j, ts) => {
                    if job.array_job_id == *j {
                        if meta {
                            let pend = jobids::expand_indices(&job.array_pending);
                            for t in ts {
                                if pend.contains(t) {
                                    narrowed.get_or_insert_with(Vec::new).push(*t);
                                    ok = true;
                                }
                            }
                        } else if ts.contains(&job.array_task_id) {
                            ok = true;
                        }
                    }
                }
            }
        }
        if !ok {
            return;
        }
    }
    if let Some(acc) = &p.accounts {
        if !acc.iter().any(|a| a.eq_ignore_ascii_case(&job.account)) {
            return;
        }
    }
    if let Some(q) = &p.qos {
        if !q.iter().any(|a| a.eq_ignore_ascii_case(&job.qos)) {
            return;
        }
    }
    let state = JobState::try_from(job.state).unwrap_or(JobState::Pending);
    if p.special_exit_only && state == JobState::Pending && !super::format::special_exit(job, state)
    {
        return;
    }
    if !p.all_states {
        match &p.states {
            Some(list) => {
                if !list.contains(&state) {
                    return;
                }
            }
            None => {
                if !default_state(state) {
                    return;
                }
            }
        }
    }
    if let Some(nodes) = &p.nodes {
        let jn = drover_conf::hostlist::expand(&job.nodes).unwrap_or_default();
        if !jn.iter().any(|n| nodes.contains(n)) {
            return;
        }
    }
    if let Some(users) = &p.users {
        if !users.contains(&job.user_id) {
            return;
        }
    }
    if let Some(r) = &p.reservation {
        if &job.reservation != r {
            return;
        }
    }
    if let Some(names) = &p.names {
        if !names.iter().any(|n| n.eq_ignore_ascii_case(&job.name)) {
            return;
        }
    }
    if !p.hidden_partitions.is_empty()
        && job
            .partition
            .split(',')
            .all(|x| p.hidden_partitions.iter().any(|h| h == x))
    {
        return;
    }
    if let Some(parts) = &p.partitions {
        if !job
            .partition
            .split(',')
            .any(|x| parts.iter().any(|w| w == x))
        {
            return;
        }
    }
    if let Some(mut n) = narrowed {
        n.sort_unstable();
        n.dedup();
        if n.len() == 1 {
            row.task = Some(n[0]);
        } else {
            // Several pending tasks asked for: one row each.
            for t in n {
                out.push(Row {
                    job,
                    task: Some(t),
                    pending: None,
                });
            }
            return;
        }
    }
    out.push(row);
}

/// Expand rows for `-r`: a pending-array record becomes one row per task.
pub fn expand_arrays<'a>(rows: Vec<Row<'a>>) -> Vec<Row<'a>> {
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        if r.task.is_none() && r.job.is_array_meta && r.job.array_job_id != 0 {
            for t in jobids::expand_indices(r.pending.unwrap_or(&r.job.array_pending)) {
                out.push(Row {
                    job: r.job,
                    task: Some(t),
                    pending: None,
                });
            }
        } else {
            out.push(r);
        }
    }
    out
}
