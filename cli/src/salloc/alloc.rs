//! Getting an interactive allocation (salloc, and srun outside one): submit
//! a job without a batch script, wait until it runs, and release it.

use std::time::Duration;

use drover_proto::client::Controller;
use drover_proto::{
    CompleteAllocationRequest, GetJobsRequest, JobFilter, JobInfo, JobSpec, JobState, SubmitRequest,
};
use tokio::signal::unix::{signal, SignalKind};

use crate::conn;

/// Submit `spec` as an allocation and wait for it to start. Messages go to
/// stderr as Slurm's `salloc:` / `srun:` lines. Ctrl-C while waiting
/// withdraws the request.
pub async fn allocate(prog: &str, ctl: &mut Controller, mut spec: JobSpec) -> Result<JobInfo, i32> {
    spec.interactive = true;
    spec.script.clear();
    let id = match ctl.submit(SubmitRequest { spec: Some(spec) }).await {
        Ok(r) => r.into_inner().job_id,
        Err(st) => {
            eprintln!(
                "{prog}: error: Job submit/allocate failed: {}",
                conn::classify(&st).message()
            );
            return Err(1);
        }
    };
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut announced = false;
    let mut delay = Duration::from_millis(2);
    loop {
        let r = ctl
            .get_jobs(GetJobsRequest {
                filter: Some(JobFilter {
                    job_ids: vec![id.to_string()],
                    all_states: true,
                    ..Default::default()
                }),
                details: false,
            })
            .await;
        let job = match r {
            Ok(r) => r.into_inner().jobs.into_iter().find(|j| j.job_id == id),
            Err(st) => {
                conn::report(prog, &format!("{prog}: error: "), &st);
                return Err(1);
            }
        };
        let Some(job) = job else {
            eprintln!("{prog}: error: Job allocation {id} has been revoked.");
            return Err(1);
        };
        match job.state() {
            JobState::Running => {
                if prog == "salloc" {
                    eprintln!("salloc: Granted job allocation {id}");
                } else if announced {
                    eprintln!("{prog}: job {id} has been allocated resources");
                }
                return Ok(job);
            }
            JobState::Pending | JobState::Suspended => {
                if !announced {
                    if prog == "salloc" {
                        eprintln!("salloc: Pending job allocation {id}");
                    }
                    eprintln!("{prog}: job {id} queued and waiting for resources");
                    announced = true;
                }
            }
            _ => {
                eprintln!("{prog}: error: Job allocation {id} has been revoked.");
                return Err(1);
            }
        }
        let interrupted = async {
            match int.as_mut() {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = interrupted => {
                let _ = release(ctl, id, 0).await;
                eprintln!("{prog}: Job allocation {id} has been revoked.");
                return Err(1);
            }
        }
        delay = (delay * 2).min(Duration::from_millis(500));
    }
}

/// Give the allocation back (the job ends with this exit code).
pub async fn release(ctl: &mut Controller, id: u32, exit_code: i32) -> Result<(), tonic::Status> {
    ctl.complete_allocation(CompleteAllocationRequest {
        job_id: id,
        exit_code,
        exit_signal: 0,
    })
    .await
    .map(|_| ())
}

/// The variables an allocation's command gets (as salloc sets them).
pub fn alloc_env(job: &JobInfo, spec_ntasks: u32, cluster: &str) -> Vec<(String, String)> {
    let mut v = vec![
        ("SLURM_JOB_ID", job.job_id.to_string()),
        ("SLURM_JOBID", job.job_id.to_string()),
        ("SLURM_JOB_NAME", job.name.clone()),
        ("SLURM_JOB_NODELIST", job.nodes.clone()),
        ("SLURM_NODELIST", job.nodes.clone()),
        ("SLURM_JOB_NUM_NODES", job.num_nodes.to_string()),
        ("SLURM_NNODES", job.num_nodes.to_string()),
        ("SLURM_JOB_PARTITION", job.partition.clone()),
        ("SLURM_CLUSTER_NAME", cluster.to_string()),
        ("SLURM_SUBMIT_HOST", drover_proto::auth::hostname()),
    ];
    if let Ok(d) = std::env::current_dir() {
        v.push(("SLURM_SUBMIT_DIR", d.to_string_lossy().into_owned()));
    }
    if spec_ntasks > 0 {
        v.push(("SLURM_NTASKS", spec_ntasks.to_string()));
        v.push(("SLURM_NPROCS", spec_ntasks.to_string()));
    }
    v.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}
