//! The agent's side of the per-job supervisors: following one until its job
//! ends, reporting the end to the controller (JobEnded, retried until
//! acknowledged), forwarding signal/terminate requests to it, and
//! re-attaching to the supervisors left running by a previous agent.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::oneshot;
use tonic::{Request, Status};
use tracing::{debug, info, warn};

use drover_proto::auth::now_secs;
use drover_proto::JobEndedRequest;

use crate::agent::Shared;
use crate::every::Every;
use crate::jobdir;
use crate::jobs::Phase;
use crate::status::JobStatus;
use crate::stepd::protocol::Request as StepdRequest;
use crate::stepd_client;

/// What the supervisor said about starting the script.
#[derive(Debug)]
pub(crate) enum Start {
    Started(i32),
    Failed(String),
    Died,
}

pub(crate) type LineSource = BufReader<Box<dyn AsyncRead + Unpin + Send>>;

/// Follow a supervisor (its notify pipe, or a `wait` connection after a
/// restart) until the job ends, then report it.
pub(crate) async fn watch_job(
    shared: Arc<Shared>,
    job_id: u32,
    dir: PathBuf,
    mut source: LineSource,
    mut first: Option<oneshot::Sender<Start>>,
) {
    let mut result: Option<JobStatus> = None;
    let mut line = String::new();
    loop {
        line.clear();
        match source.read_line(&mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let l = line.trim_end();
        if let Some(pid) = l.strip_prefix("started ") {
            let pid: i32 = pid.trim().parse().unwrap_or(0);
            {
                let mut jobs = shared.jobs();
                if let Some(e) = jobs.get_mut(job_id) {
                    e.script_pid = (pid > 0).then_some(pid);
                }
                jobs.set_phase(job_id, Phase::Running);
            }
            if let Some(tx) = first.take() {
                let _ = tx.send(Start::Started(pid));
            }
        } else if let Some(reason) = l.strip_prefix("failed ") {
            if let Some(tx) = first.take() {
                let _ = tx.send(Start::Failed(reason.to_string()));
            }
        } else if let Some(st) = JobStatus::parse_done_line(l) {
            result = Some(st);
            break;
        } else {
            debug!("job {job_id}: supervisor said {l:?}");
        }
    }
    // After its report the supervisor removes the job's cgroups, then
    // exits, which closes its end: a relaunch of this job waits for that.
    let (gone_tx, gone) = oneshot::channel();
    if result.is_some() {
        tokio::spawn(async move {
            let mut rest = Vec::new();
            let _ = tokio::time::timeout(SUPERVISOR_EXIT_WAIT, source.read_to_end(&mut rest)).await;
            let _ = gone_tx.send(());
        });
    } else {
        drop(source);
        let _ = gone_tx.send(());
    }
    if let Some(tx) = first.take() {
        let _ = tx.send(Start::Died);
    }
    let st = match result {
        Some(st) => st,
        None => {
            let pid = shared.jobs().get(job_id).and_then(|e| e.script_pid);
            let d = dir.clone();
            tokio::task::spawn_blocking(move || status_after_supervisor_gone(&d, pid, false))
                .await
                .unwrap_or_else(|_| JobStatus::launch_failure("job supervisor died", now_secs()))
        }
    };
    finish_job_after(shared, job_id, dir, st, Some(gone)).await;
}

/// The supervisor is gone: its status file if it wrote one, otherwise a
/// failure (recorded on disk so it survives an agent restart). Blocking.
fn status_after_supervisor_gone(dir: &Path, script_pid: Option<i32>, no_launch: bool) -> JobStatus {
    match JobStatus::read(dir) {
        Ok(Some(st)) => return st,
        Ok(None) => {}
        Err(e) => warn!("{}: unreadable status file: {e}", dir.display()),
    }
    // Whatever the script left behind must not outlive the job; only touch
    // the group while its leader (the script) is alive, so the id is ours.
    if let Some(pid) = script_pid.filter(|p| *p > 1) {
        let leader_alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| crate::proctree::parse_stat(&t))
            .is_some_and(|p| p.pgrp == pid);
        if leader_alive {
            let _ = drover_proto::sys::kill(-pid, libc::SIGKILL);
        }
    }
    let st = if no_launch {
        JobStatus::launch_failure("launch interrupted by an agent restart", now_secs())
    } else {
        JobStatus {
            exit_code: 1,
            failure: "job supervisor died".into(),
            end_time: now_secs(),
            ..Default::default()
        }
    };
    if dir.is_dir() {
        if let Err(e) = st.write_atomic(dir) {
            warn!("{}: cannot write status file: {e}", dir.display());
        }
    }
    st
}

fn permanent_rejection(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::NotFound
            | tonic::Code::InvalidArgument
            | tonic::Code::FailedPrecondition
            | tonic::Code::AlreadyExists
            | tonic::Code::OutOfRange
    )
}

/// How long a job's entry waits for its supervisor to exit after the end
/// was acknowledged (it removes the job's cgroups meanwhile).
const SUPERVISOR_EXIT_WAIT: Duration = Duration::from_secs(10);

/// Report a job's end until the controller acknowledges it, then forget it.
pub(crate) async fn finish_job(shared: Arc<Shared>, job_id: u32, dir: PathBuf, st: JobStatus) {
    finish_job_after(shared, job_id, dir, st, None).await;
}

/// [`finish_job`], keeping the job known (a relaunch of it waits) until
/// `gone` fires: its supervisor has exited.
async fn finish_job_after(
    shared: Arc<Shared>,
    job_id: u32,
    dir: PathBuf,
    st: JobStatus,
    gone: Option<oneshot::Receiver<()>>,
) {
    // The batch script is done: so are the job's srun steps on this node.
    crate::steps::signal_job(job_id, None, 0, 2);
    let gpu = shared.gpus.finish(job_id);
    let (node, run) = {
        let mut jobs = shared.jobs();
        jobs.set_phase(job_id, Phase::Ended);
        jobs.get(job_id)
            .map(|e| (e.node.clone(), e.run))
            .unwrap_or_default()
    };
    if st.launch_failed {
        warn!("job {job_id}: launch failed on {node}: {}", st.failure);
    } else if !st.failure.is_empty() {
        warn!("job {job_id}: ended on {node}: {}", st.failure);
    } else {
        info!(
            "job {job_id}: ended on {node}, exit code {}, signal {}{}",
            st.exit_code,
            st.signal,
            if st.timeout { ", time limit" } else { "" }
        );
    }
    // A failed script: did it run out of GPU memory? (its stderr says so)
    // A file on a hung network file system must not hold the report back.
    let system_comment = if crate::failure_scan::worth_scanning(&st) {
        let d = dir.clone();
        let scan = tokio::task::spawn_blocking(move || crate::failure_scan::system_comment(&d));
        match tokio::time::timeout(crate::failure_scan::READ_TIMEOUT, scan).await {
            Ok(found) => found.unwrap_or_default(),
            Err(_) => {
                warn!("job {job_id}: reading the end of its stderr timed out; not scanned");
                String::new()
            }
        }
    } else {
        String::new()
    };
    if !system_comment.is_empty() {
        info!("job {job_id}: {system_comment}");
    }
    let req = JobEndedRequest {
        job_id,
        node,
        exit_code: st.exit_code,
        exit_signal: st.signal,
        oom: st.oom,
        timeout: st.timeout,
        end_time: st.end_time,
        cpu_time_usec: st.cpu_time_usec,
        max_rss_kb: st.max_rss_kb,
        failure: st.failure.clone(),
        launch_failed: st.launch_failed,
        prolog_failed: st.prolog_failed,
        epilog_failed: st.epilog_failed,
        drain_reason: if st.node_failed {
            st.failure.clone()
        } else {
            String::new()
        },
        restart_count: run,
        gpu_util_pct: gpu.mean_util(),
        gpu_mem_max_mb: gpu.mem_max_mb,
        system_comment,
    };
    let mut registered = shared.registered.subscribe();
    let _ = registered.wait_for(|r| *r).await;
    let mut log = Every::new(Duration::from_secs(60));
    loop {
        if shared.jobs().is_disowned(job_id) {
            debug!("job {job_id}: disowned by the controller; end not reported");
            break;
        }
        let mut r = Request::new(req.clone());
        r.set_timeout(Duration::from_secs(10));
        match shared.ctl.clone().job_ended(r).await {
            Ok(_) => break,
            Err(s) if permanent_rejection(s.code()) => {
                warn!(
                    "job {job_id}: controller rejected JobEnded: {}",
                    s.message()
                );
                break;
            }
            Err(s) => {
                if log.due() {
                    warn!(
                        "job {job_id}: cannot report the end to the controller ({}): {}; retrying",
                        shared.settings.controller,
                        s.message()
                    );
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
    debug!("job {job_id}: end acknowledged");
    let s = shared.clone();
    let d = dir.clone();
    let removed = tokio::task::spawn_blocking(move || s.recycler.retire(&d)).await;
    if let Ok(Err(e)) = removed {
        warn!("cannot remove {}: {e}", dir.display());
    }
    if let Some(g) = gone {
        let _ = g.await;
    }
    shared.jobs().finish(job_id);
}

/// Forward a signal or terminate request to a job's supervisor.
pub(crate) async fn to_supervisor(
    shared: &Shared,
    job_id: u32,
    req: StepdRequest,
) -> Result<(), Status> {
    let entry = {
        let jobs = shared.jobs();
        jobs.get(job_id)
            .map(|e| (e.phase, e.dir.clone(), e.ready.subscribe()))
    };
    let Some((phase, dir, mut ready)) = entry else {
        return match req {
            StepdRequest::Terminate { .. } => Ok(()),
            _ => Err(Status::not_found("Invalid job id specified")),
        };
    };
    if phase == Phase::Starting {
        let _ = tokio::time::timeout(Duration::from_secs(30), ready.wait_for(|r| *r)).await;
    }
    let phase = shared.jobs().get(job_id).map(|e| e.phase);
    if phase != Some(Phase::Running) {
        return Ok(()); // ended meanwhile
    }
    match stepd_client::request(&dir, &req).await {
        Ok(reply) if reply == "ok" => Ok(()),
        Ok(reply) => match reply.strip_prefix("error ") {
            Some(msg) => Err(Status::invalid_argument(msg.to_string())),
            None => Ok(()),
        },
        // The supervisor exits right after the job ends.
        Err(e) => {
            debug!("job {job_id}: supervisor unreachable: {e}");
            Ok(())
        }
    }
}

/// Pick up the job directories left by a previous agent: re-attach to live
/// supervisors, report finished jobs.
pub async fn reattach(shared: &Arc<Shared>) {
    let spool = shared.settings.spool_dir.clone();
    let found = tokio::task::spawn_blocking(move || jobdir::scan_spool(&spool))
        .await
        .unwrap_or_default();
    let first_node = shared
        .settings
        .nodes
        .first()
        .map(|n| n.name.clone())
        .unwrap_or_default();
    for job in found {
        let node = match &job.launch {
            Some(l) if !l.node.is_empty() => l.node.clone(),
            _ => first_node.clone(),
        };
        if !shared.settings.serves(&node) {
            debug!(
                "job {}: belongs to node {node}, not served here",
                job.job_id
            );
            continue;
        }
        let run = job
            .launch
            .as_ref()
            .and_then(|l| l.info.as_ref())
            .map_or(0, |i| i.restart_count);
        match stepd_client::wait_connection(&job.dir).await {
            Ok(conn) => {
                info!("job {}: re-attached to its running supervisor", job.job_id);
                shared
                    .jobs()
                    .insert(job.job_id, run, node, job.dir.clone(), Phase::Running);
                let source: LineSource = BufReader::new(Box::new(conn.into_inner()));
                tokio::spawn(watch_job(shared.clone(), job.job_id, job.dir, source, None));
            }
            Err(_) => {
                shared
                    .jobs()
                    .insert(job.job_id, run, node, job.dir.clone(), Phase::Ended);
                let s = shared.clone();
                tokio::spawn(async move {
                    let d = job.dir.clone();
                    let no_launch = job.launch.is_none();
                    let st = tokio::task::spawn_blocking(move || {
                        status_after_supervisor_gone(&d, None, no_launch)
                    })
                    .await
                    .unwrap_or_else(|_| {
                        JobStatus::launch_failure("job supervisor died", now_secs())
                    });
                    finish_job(s, job.job_id, job.dir, st).await;
                });
            }
        }
    }
}
