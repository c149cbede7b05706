//! A job's accounting record as of one transition. Pure: state in, record out.

use std::collections::BTreeMap;

use drover_proto::acct::{JobRecord, StepRecord};
use drover_proto::{JobInfo, JobState};

use crate::job::Job;

/// Slurm's step ids for the batch script and the extern step.
pub const BATCH_STEP: i32 = -5;
pub const EXTERN_STEP: i32 = -4;

/// Where a state stands in a run: the daemon keeps the record with the
/// highest (restart_count, transition).
pub fn transition(state: JobState) -> u32 {
    match state {
        JobState::Pending | JobState::Requeued => 1,
        JobState::Running | JobState::Suspended | JobState::Configuring => 2,
        JobState::Completing => 3,
        _ => 4,
    }
}

/// The batch step's state for a job's final state (Slurm: a job killed at
/// its time limit or cancelled shows its batch step CANCELLED).
pub fn batch_step_state(job: JobState) -> JobState {
    match job {
        JobState::Timeout | JobState::Cancelled | JobState::Preempted | JobState::Deadline => {
            JobState::Cancelled
        }
        JobState::Completing => JobState::Running,
        s => s,
    }
}

/// The extern step's state for a job's state: it ends when the allocation
/// does, COMPLETED unless the allocation was cancelled.
pub fn extern_step_state(job: JobState) -> JobState {
    match job {
        JobState::Cancelled | JobState::Preempted => JobState::Cancelled,
        s if s.is_final() => JobState::Completed,
        _ => JobState::Running,
    }
}

/// Allocated GPUs by type (`gres/gpu:a100=2`), added to the TRES text.
fn typed_gpus(job: &Job) -> String {
    let mut by_type: BTreeMap<&str, u64> = BTreeMap::new();
    for a in &job.rt().alloc {
        for g in a
            .gres
            .iter()
            .filter(|g| g.name == "gpu" && !g.r#type.is_empty())
        {
            *by_type.entry(g.r#type.as_str()).or_default() += g.indices.len() as u64 + g.count;
        }
    }
    by_type
        .iter()
        .map(|(t, n)| format!(",gres/gpu:{t}={n}"))
        .collect()
}

/// Build the record; `info` is the job's JobInfo with details. With
/// `extern_step` (`PrologFlags=Contain`) the allocation also has Slurm's
/// `ID.extern` step on every node.
pub fn build(cluster: &str, job: &Job, info: &JobInfo, extern_step: bool) -> JobRecord {
    let rt = job.rt();
    let spec = job.spec();
    let state = job.state();
    let started = rt.start_time > 0 && !rt.alloc.is_empty();
    let mut alloc_tres = if started {
        info.tres_alloc.clone()
    } else {
        String::new()
    };
    if started && !alloc_tres.is_empty() {
        alloc_tres.push_str(&typed_gpus(job));
    }
    let mut steps = Vec::new();
    // The batch step exists once the script was handed to a node (the
    // launch answer may arrive after a quick job's end report). A launch
    // that failed still ends it: its RUNNING record went out at the start
    // and would otherwise stay RUNNING with no end for ever.
    if started && !rt.batch_host.is_empty() {
        let cpus = rt
            .alloc
            .iter()
            .find(|a| a.node == rt.batch_host)
            .map(|a| a.cpus)
            .unwrap_or(0);
        let done = state.is_final();
        steps.push(StepRecord {
            step_id: BATCH_STEP,
            name: "batch".into(),
            nodelist: rt.batch_host.clone(),
            nnodes: 1,
            ntasks: 1,
            ncpus: cpus,
            start_time: rt.start_time,
            end_time: if done { rt.end_time } else { 0 },
            state: batch_step_state(state) as i32,
            exit_code: rt.exit_code,
            exit_signal: rt.exit_signal,
            cpu_time_usec: rt.cpu_time_usec,
            max_rss_kb: rt.max_rss_kb,
            gpu_util_pct: rt.gpu_util_pct,
            gpu_mem_max_mb: rt.gpu_mem_max_mb,
            alloc_tres: format!("cpu={cpus},mem={}M,node=1", {
                rt.alloc
                    .iter()
                    .find(|a| a.node == rt.batch_host)
                    .map(|a| a.mem_mb)
                    .unwrap_or(0)
            }),
        });
    }
    if started && extern_step {
        let nodes: Vec<&str> = rt.alloc.iter().map(|a| a.node.as_str()).collect();
        let cpus: u32 = rt.alloc.iter().map(|a| a.cpus).sum();
        let mem: u64 = rt.alloc.iter().map(|a| a.mem_mb).sum();
        let n = nodes.len() as u32;
        steps.push(StepRecord {
            step_id: EXTERN_STEP,
            name: "extern".into(),
            nodelist: drover_conf::hostlist::compress(&nodes),
            nnodes: n,
            ntasks: n,
            ncpus: cpus,
            start_time: rt.start_time,
            end_time: if state.is_final() { rt.end_time } else { 0 },
            state: extern_step_state(state) as i32,
            alloc_tres: format!("cpu={cpus},mem={mem}M,node={n}"),
            ..Default::default()
        });
    }
    for st in &rt.steps {
        let st = crate::steps::effective(st, state, rt.end_time);
        let nnodes = if st.nodelist.is_empty() {
            0
        } else {
            drover_conf::hostlist::expand(&st.nodelist).map_or(0, |v| v.len() as u32)
        };
        steps.push(StepRecord {
            step_id: st.step_id as i32,
            name: st.name.clone(),
            nodelist: st.nodelist.clone(),
            nnodes,
            ntasks: st.ntasks,
            ncpus: st.ncpus,
            start_time: st.start_time,
            end_time: st.end_time,
            state: st.state,
            exit_code: st.exit_code,
            exit_signal: st.exit_signal,
            cpu_time_usec: st.cpu_time_usec,
            max_rss_kb: st.max_rss_kb,
            gpu_util_pct: 0,
            gpu_mem_max_mb: 0,
            alloc_tres: format!("cpu={},mem={}M,node={nnodes}", st.ncpus, st.mem_mb),
        });
    }
    let (array_pending, array_task_id) = if rt.is_array_meta {
        (crate::array::ranges(&job.pending_tasks), 0)
    } else {
        (String::new(), rt.array_task_id)
    };
    JobRecord {
        cluster: cluster.to_string(),
        job_id: job.id(),
        array_job_id: rt.array_job_id,
        array_task_id,
        array_pending,
        array_max_running: rt.array_max_running,
        name: spec.name.clone(),
        uid: job.rec.uid,
        user: job.rec.user_name.clone(),
        gid: job.rec.gid,
        account: spec.account.clone(),
        qos: info.qos.clone(),
        partition: if rt.partition.is_empty() {
            spec.partition.clone()
        } else {
            rt.partition.clone()
        },
        submit_time: rt.submit_time,
        eligible_time: rt.eligible_time,
        start_time: rt.start_time,
        end_time: if state.is_final() { rt.end_time } else { 0 },
        state: state as i32,
        exit_code: rt.exit_code,
        exit_signal: rt.exit_signal,
        cancelled_by: rt.cancelled_by,
        cancelled: rt.cancelled,
        time_limit: rt.time_limit,
        nodelist: if started {
            info.nodes.clone()
        } else {
            String::new()
        },
        nnodes: info.num_nodes,
        ncpus: info.num_cpus,
        ntasks: info.num_tasks,
        req_tres: info.tres_req.clone(),
        alloc_tres,
        req_mem_mb: info.min_memory_mb,
        req_mem_per_cpu: info.mem_per_cpu,
        work_dir: spec.work_dir.clone(),
        comment: spec.comment.clone(),
        reason: rt.reason.clone(),
        cpu_time_usec: rt.cpu_time_usec,
        max_rss_kb: rt.max_rss_kb,
        gpu_util_pct: rt.gpu_util_pct,
        gpu_mem_max_mb: rt.gpu_mem_max_mb,
        restart_count: rt.restart_count,
        transition: transition(state),
        steps,
        constraints: spec.constraint.clone(),
        priority: rt.priority,
        wckey: spec.wckey.clone(),
        batch_host: rt.batch_host.clone(),
        derived_exit_code: 0,
        oom: rt.oom,
        system_comment: rt.system_comment.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_grow_through_a_run() {
        let order = [
            JobState::Pending,
            JobState::Running,
            JobState::Completing,
            JobState::Completed,
        ];
        for w in order.windows(2) {
            assert!(transition(w[0]) < transition(w[1]));
        }
        for s in [
            JobState::Failed,
            JobState::Cancelled,
            JobState::Timeout,
            JobState::OutOfMemory,
            JobState::NodeFail,
        ] {
            assert_eq!(transition(s), 4);
        }
    }

    #[test]
    fn extern_step_states() {
        assert_eq!(extern_step_state(JobState::Running), JobState::Running);
        assert_eq!(extern_step_state(JobState::Failed), JobState::Completed);
        assert_eq!(extern_step_state(JobState::Timeout), JobState::Completed);
        assert_eq!(extern_step_state(JobState::Cancelled), JobState::Cancelled);
    }

    fn launched_job(state: JobState, reason: &str) -> Job {
        use drover_proto::state::{JobRecord as StateRecord, JobRuntime};
        use drover_proto::NodeAlloc;
        Job::from_record(StateRecord {
            job_id: 7,
            spec: Some(Box::default()),
            runtime: Some(JobRuntime {
                state: state as i32,
                reason: reason.into(),
                start_time: 100,
                end_time: 105,
                batch_host: "node1".into(),
                alloc: vec![NodeAlloc {
                    node: "node1".into(),
                    cpus: 1,
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn a_failed_launch_ends_its_batch_step() {
        let job = launched_job(JobState::Failed, "JobLaunchFailure");
        let rec = build("c", &job, &JobInfo::default(), false);
        let batch = rec
            .steps
            .iter()
            .find(|s| s.step_id == BATCH_STEP)
            .expect("the batch step is in the final record");
        assert_eq!(batch.state, JobState::Failed as i32);
        assert_eq!(batch.end_time, 105);
        // While it runs, the step is RUNNING with no end.
        let job = launched_job(JobState::Running, "None");
        let rec = build("c", &job, &JobInfo::default(), false);
        assert_eq!(rec.steps[0].state, JobState::Running as i32);
        assert_eq!(rec.steps[0].end_time, 0);
    }

    #[test]
    fn batch_step_states() {
        assert_eq!(batch_step_state(JobState::Timeout), JobState::Cancelled);
        assert_eq!(batch_step_state(JobState::Cancelled), JobState::Cancelled);
        assert_eq!(
            batch_step_state(JobState::OutOfMemory),
            JobState::OutOfMemory
        );
        assert_eq!(batch_step_state(JobState::Failed), JobState::Failed);
        assert_eq!(batch_step_state(JobState::Completed), JobState::Completed);
    }
}
