//! `scontrol show job A_i` of an array task: a pending task still in its
//! array's meta record is shown as that record with `ArrayTaskId=i`, and a
//! task the array does not have is `Job A_i not found` (Slurm's
//! `scontrol_print_job`).

use drover_proto::client::Controller;
use drover_proto::{GetJobsRequest, JobFilter, JobInfo};

use super::{report, Flags};

/// Show the meta records among `jobs` as their pending task `t`.
pub(super) fn as_task(jobs: &mut [JobInfo], t: u32) {
    for j in jobs.iter_mut().filter(|j| j.is_array_meta) {
        j.array_pending = t.to_string();
    }
}

/// `scontrol show job A_i` naming no task of an array that exists:
/// Slurm's `Job A_i not found` (on stdout, exit 1); without the array,
/// `Invalid job id specified`.
pub(super) async fn show_missing_task(
    client: &mut Controller,
    flags: &Flags,
    a: u32,
    t: u32,
) -> i32 {
    let filter = JobFilter {
        job_ids: vec![a.to_string()],
        all_states: true,
        ..Default::default()
    };
    let req = GetJobsRequest {
        filter: Some(filter),
        details: false,
        fields: Vec::new(),
    };
    match client.get_jobs(req).await {
        Ok(r) if !r.get_ref().jobs.is_empty() => {
            if !flags.quiet {
                println!("Job {a}_{t} not found");
            }
            1
        }
        Ok(_) => report(
            flags,
            "slurm_load_jobs error: ",
            &tonic::Status::not_found("Invalid job id specified"),
        ),
        Err(st) => report(flags, "slurm_load_jobs error: ", &st),
    }
}
