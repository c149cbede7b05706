//! Getting an interactive allocation (salloc, and srun outside one): submit
//! a job without a batch script, wait until it runs, and release it.

use std::time::Duration;

use drover_conf::slurmconf::Config;
use drover_proto::client::Controller;
use drover_proto::{
    AllocationAliveRequest, CompleteAllocationRequest, GetJobsRequest, JobFilter, JobInfo, JobSpec,
    JobState, SubmitRequest, WaitJobRequest,
};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tonic::Code;

use crate::conn;

/// How an allocation is waited for: `-I/--immediate[=secs]` and
/// `-Q/--quiet` (no informational lines: granted, pending, queued).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Waiting {
    pub immediate: Option<u64>,
    pub quiet: bool,
}

/// Submit `spec` as an allocation and wait for it to start. Messages go to
/// stderr as Slurm's `salloc:` / `srun:` lines. Ctrl-C while waiting
/// withdraws the request, and so does `-I/--immediate` (`immediate`
/// seconds) once that time has passed without an allocation.
pub async fn allocate(
    prog: &str,
    ctl: &mut Controller,
    cfg: &Config,
    mut spec: JobSpec,
    how: Waiting,
) -> Result<JobInfo, i32> {
    let Waiting { immediate, quiet } = how;
    let asked = std::time::Instant::now();
    spec.interactive = true;
    spec.script.clear();
    let partition = spec.partition.clone();
    let id = match ctl.submit(SubmitRequest { spec: Some(spec) }).await {
        Ok(r) => r.into_inner().job_id,
        Err(st) => {
            if let Some(note) = conn::partition_note(&st, &partition, cfg) {
                eprintln!("{prog}: error: {note}");
            }
            // Slurm's words differ: srun "Unable to allocate resources".
            let what = if prog == "srun" {
                "Unable to allocate resources"
            } else {
                "Job submit/allocate failed"
            };
            eprintln!("{prog}: error: {what}: {}", conn::classify(&st).message());
            return Err(1);
        }
    };
    // Ctrl-C, a closed terminal (SIGHUP) or SIGTERM withdraw the request.
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    let mut term = signal(SignalKind::terminate()).ok();
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
                details: true,
                fields: Vec::new(),
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
                if prog == "salloc" && !quiet {
                    eprintln!("salloc: Granted job allocation {id}");
                } else if announced && !quiet {
                    eprintln!("{prog}: job {id} has been allocated resources");
                }
                return Ok(job);
            }
            JobState::Pending | JobState::Suspended => {
                if immediate.is_some_and(|secs| asked.elapsed().as_secs() >= secs.max(1)) {
                    // Slurm's answer when the wait ran out (ETIMEDOUT).
                    let _ = release(ctl, id, 0).await;
                    eprintln!("{prog}: error: Unable to allocate resources: Connection timed out");
                    let code = std::env::var("SLURM_EXIT_IMMEDIATE").ok();
                    return Err(crate::support::exit_status(code.as_deref()));
                }
                if !announced && !quiet {
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
            tokio::select! {
                _ = recv(&mut int) => {}
                _ = recv(&mut hup) => {}
                _ = recv(&mut term) => {}
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

/// The next delivery of a signal (never, without a handler).
pub async fn recv(sig: &mut Option<Signal>) {
    match sig.as_mut() {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// A client with a fresh credential (tokens expire; an allocation may
/// last for days), or None while the authentication socket does not answer.
pub(crate) fn fresh_client(cfg: &Config) -> Option<Controller> {
    let socket = cfg.auth_socket();
    drover_proto::auth::probe_socket(std::path::Path::new(&socket)).ok()?;
    drover_proto::client::controller_for(cfg, drover_proto::client::Credential::user(socket.into()))
        .ok()
}

/// Is this answer the controller saying the allocation is over (rather
/// than the controller being away)?
pub(crate) fn is_gone(st: &tonic::Status) -> bool {
    matches!(
        st.code(),
        Code::NotFound | Code::FailedPrecondition | Code::PermissionDenied | Code::InvalidArgument
    )
}

/// Keep the allocation: tell the controller every few seconds that its
/// command still runs (Slurm's InactiveLimit ends it otherwise). A
/// controller that is away (restarting) is asked again each second; the
/// future ends only when the controller says the allocation is over.
pub async fn keep_alive(cfg: Config, id: u32) {
    let mut interval = Duration::from_secs(1);
    loop {
        if let Some(mut ctl) = fresh_client(&cfg) {
            match ctl
                .allocation_alive(AllocationAliveRequest { job_id: id })
                .await
            {
                Ok(r) => {
                    interval = Duration::from_secs(u64::from(r.into_inner().interval_secs.max(1)));
                }
                Err(st) if is_gone(&st) => return,
                Err(st) => {
                    tracing::debug!("allocation {id}: controller away: {}", st.message());
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            }
        }
        tokio::time::sleep(interval).await;
    }
}

/// Ends when the allocation is over (ended, revoked, cancelled): the
/// controller's answer to WaitJob, asked again after a controller restart,
/// or its refusal of a keep-alive.
pub async fn ended(cfg: Config, id: u32) {
    let wait = async {
        loop {
            if let Some(mut ctl) = fresh_client(&cfg) {
                match ctl.wait_job(WaitJobRequest { job_id: id }).await {
                    Ok(_) => return,
                    Err(st) if is_gone(&st) => return,
                    Err(_) => {}
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    tokio::select! {
        _ = wait => {}
        _ = keep_alive(cfg.clone(), id) => {}
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

/// Slurm's compressed per-node counts: `2(x3),1`.
pub fn run_length(values: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        let n = values[i..].iter().take_while(|&&x| x == v).count();
        out.push(if n > 1 {
            format!("{v}(x{n})")
        } else {
            v.to_string()
        });
        i += n;
    }
    out.join(",")
}

/// Tasks on each node of an allocation of `cpus` per node: the counts the
/// controller recorded, else `ntasks` laid out in blocks (one a node, then
/// each node filled up to its CPUs / `cpus_per_task`), else that many per
/// node.
pub fn tasks_per_node(recorded: &[u32], cpus: &[u32], ntasks: u32, cpus_per_task: u32) -> Vec<u32> {
    if !recorded.is_empty() && recorded.iter().all(|&t| t > 0) {
        return recorded.to_vec();
    }
    let caps: Vec<u32> = cpus
        .iter()
        .map(|c| (c / cpus_per_task.max(1)).max(1))
        .collect();
    if ntasks == 0 {
        return caps;
    }
    let mut counts = vec![0u32; caps.len()];
    let mut left = ntasks;
    for c in counts.iter_mut() {
        if left > 0 {
            *c = 1;
            left -= 1;
        }
    }
    for (c, cap) in counts.iter_mut().zip(&caps) {
        let more = left.min(cap.saturating_sub(*c));
        *c += more;
        left -= more;
    }
    let n = counts.len().max(1);
    for i in 0..left as usize {
        counts[i % n] += 1;
    }
    counts
}

/// The variables an allocation's command gets (as salloc sets them).
pub fn alloc_env(job: &JobInfo, spec: &JobSpec, cluster: &str) -> Vec<(String, String)> {
    let spec_ntasks = match spec.ntasks {
        0 => spec.ntasks_per_node * job.num_nodes,
        n => n,
    };
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
    if spec.ntasks_per_node > 0 {
        v.push(("SLURM_NTASKS_PER_NODE", spec.ntasks_per_node.to_string()));
    }
    if spec.cpus_per_task > 0 {
        v.push(("SLURM_CPUS_PER_TASK", spec.cpus_per_task.to_string()));
    }
    let cpus: Vec<u32> = job.alloc.iter().map(|a| a.cpus).collect();
    if !cpus.is_empty() {
        let recorded: Vec<u32> = job.alloc.iter().map(|a| a.tasks).collect();
        v.push(("SLURM_JOB_CPUS_PER_NODE", run_length(&cpus)));
        v.push((
            "SLURM_TASKS_PER_NODE",
            run_length(&tasks_per_node(
                &recorded,
                &cpus,
                spec_ntasks,
                spec.cpus_per_task,
            )),
        ));
    }
    v.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}
