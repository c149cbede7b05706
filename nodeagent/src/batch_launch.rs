//! Starting a batch job on this node (the Launch call): the job directory,
//! the node's part of the launch (cgroup plan, Prolog/Epilog), the
//! supervisor (fork server, else exec), and the wait for the script to start.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::BufReader;
use tokio::sync::oneshot;
use tonic::Status;
use tracing::{debug, info, warn};

use drover_proto::auth::now_secs;
use drover_proto::LaunchRequest;

use crate::agent::Shared;
use crate::jobdir::{self, Prepared};
use crate::jobs::{LaunchCheck, Phase};
use crate::status::JobStatus;
use crate::supervisors::{finish_job, watch_job, LineSource, Start};

/// What keeps a launch from being recorded for a while.
enum Wait {
    /// This agent's registration is not answered yet.
    Registration,
    /// The job's previous run is still being wound up.
    PreviousRun,
}

impl Wait {
    /// How long a launch waits for it.
    fn limit(&self) -> Duration {
        match self {
            Wait::Registration => Duration::from_secs(5),
            Wait::PreviousRun => Duration::from_secs(10),
        }
    }
}

/// The Launch call: check the request, record the job as starting (or
/// recognise a repeated launch), then start it and wait until the script has
/// started or failed to.
pub async fn launch(shared: &Arc<Shared>, mut req: LaunchRequest) -> Result<(), Status> {
    if req.expires != 0 && req.expires < now_secs() {
        return Err(Status::permission_denied("Job credential expired"));
    }
    if req.node.is_empty() {
        req.node = shared
            .settings
            .nodes
            .first()
            .map(|n| n.name.clone())
            .unwrap_or_default();
    }
    if let Some(why) = &shared.settings.drain_reason {
        // The controller drains the node with this and requeues the job.
        return Err(Status::aborted(why.clone()));
    }
    if !shared.settings.serves(&req.node) {
        return Err(Status::invalid_argument(format!(
            "node {} is not served by this agent",
            req.node
        )));
    }
    let job_id = req.job_id;
    let run = req.info.as_ref().map_or(0, |i| i.restart_count);
    let node = req.node.clone();
    let dir = jobdir::job_dir(&shared.settings.spool_dir, job_id);
    let since = Instant::now();
    let mut registered = shared.registered.subscribe();
    loop {
        let wait = {
            let mut jobs = shared.jobs();
            match jobs.check_launch(job_id, run) {
                // Checked under the job table's lock, as the registration
                // reads it: a job its list does not name would be taken
                // for lost. The controller, not having this launch's
                // answer yet, launches it again at registration (a repeat).
                LaunchCheck::New if !*registered.borrow_and_update() => Wait::Registration,
                LaunchCheck::New => {
                    jobs.insert(job_id, run, node.clone(), dir.clone(), Phase::Starting);
                    break;
                }
                LaunchCheck::Duplicate => {
                    debug!("job {job_id}: repeated launch ignored");
                    return Ok(());
                }
                // A requeued job whose previous run is still being wound up
                // (JobEnded just acknowledged, directory being retired).
                LaunchCheck::Busy => Wait::PreviousRun,
            }
        };
        let Some(left) = wait.limit().checked_sub(since.elapsed()) else {
            return Err(Status::unavailable(match wait {
                Wait::Registration => "this agent is registering with the controller".to_string(),
                Wait::PreviousRun => {
                    format!("job {job_id}: the previous run is still active on this node")
                }
            }));
        };
        match wait {
            Wait::Registration => {
                let _ = tokio::time::timeout(left, registered.wait_for(|r| *r)).await;
            }
            Wait::PreviousRun => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    // The launch runs in its own task: a cancelled RPC must not leave a
    // half-started job behind. The answer waits for the script to start.
    let (done_tx, done_rx) = oneshot::channel();
    tokio::spawn(run_launch(shared.clone(), req, dir, done_tx));
    let _ = done_rx.await;
    Ok(())
}

/// The job's cgroup plan on `req.node` (None without cgroups).
pub fn cgroup_plan(
    settings: &crate::settings::Settings,
    req: &LaunchRequest,
) -> Option<crate::cgroup::Plan> {
    settings.cgroup.as_ref().and_then(|sys| {
        let node = settings.nodes.iter().find(|n| n.name == req.node)?;
        let dev_of = |f: &str| crate::cgroup::char_dev(f);
        let inputs = sys.plan_inputs(
            settings.listen.port(),
            node.real_memory,
            crate::hostinfo::online_cpus(),
            &node.gres,
            &dev_of,
        );
        Some(crate::cgroup::Plan::build(&inputs, req))
    })
}

/// The node's part of a launch for the supervisor: the cgroup plan and
/// the Prolog/Epilog settings.
fn node_files(
    settings: &crate::settings::Settings,
    live: &crate::agent::Live,
    req: &LaunchRequest,
) -> jobdir::ExtraFiles {
    let plan = cgroup_plan(settings, req).map(|p| p.to_text());
    let hooks = (!live.hooks.is_empty()).then(|| live.hooks.to_text());
    vec![
        (crate::stepd::CGROUP_PLAN_FILE, plan),
        (crate::stepd::hooks::HOOKS_FILE, hooks),
    ]
}

/// Prepare the job directory, start the supervisor, wait for the script to
/// start (or fail to); `done` is signalled when the launch is settled.
async fn run_launch(
    shared: Arc<Shared>,
    req: LaunchRequest,
    dir: PathBuf,
    done: oneshot::Sender<()>,
) {
    let _done = done; // dropped (= signalled) on every return path
    let job_id = req.job_id;
    let node = req.node.clone();
    let s = shared.clone();
    let prepared = tokio::task::spawn_blocking(move || {
        let extra = node_files(&s.settings, &s.live(), &req);
        if let Some(n) = s.settings.nodes.iter().find(|n| n.name == req.node) {
            s.gpus
                .track(req.job_id, crate::gpu::job_minors(&n.gres, &req));
        }
        let p = jobdir::prepare_job_dir(&s.settings.spool_dir, &req, Some(&s.recycler), &extra)?;
        let forked = match &p {
            Prepared::New(d) => Some(s.spawner.spawn_forked(
                d,
                &s.settings.config_path,
                s.stepd_debug,
            )),
            Prepared::Exists(_) => None,
        };
        Ok::<_, String>((p, forked))
    })
    .await
    .unwrap_or_else(|e| Err(format!("launch task failed: {e}")));
    let (dir, forked) = match prepared {
        Ok((Prepared::New(d), forked)) => (d, forked),
        Ok((Prepared::Exists(d), _)) => {
            warn!(
                "job {job_id}: {} already exists and is not ours; not starting it again",
                d.display()
            );
            shared.jobs().forget(job_id);
            return;
        }
        Err(reason) => {
            tokio::spawn(finish_job(
                shared.clone(),
                job_id,
                dir,
                JobStatus::launch_failure(&reason, now_secs()),
            ));
            return;
        }
    };
    let pipe = match forked {
        Some(Ok(fd)) => tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
            .map_err(|e| format!("notify pipe: {e}")),
        Some(Err(e)) => Err(e),
        None => Err("no supervisor".into()),
    };
    let source: LineSource = match pipe {
        Ok(p) => BufReader::new(Box::new(p)),
        Err(why) => {
            debug!("job {job_id}: fork server not used ({why}); exec'ing the supervisor");
            match jobdir::spawn_stepd(
                &shared.exe,
                &dir,
                &shared.settings.config_path,
                shared.stepd_debug,
            ) {
                Ok(started) => {
                    let mut child = started.child;
                    tokio::spawn(async move {
                        let _ = child.wait().await; // reap the supervisor when it exits
                    });
                    BufReader::new(Box::new(started.notify))
                }
                Err(reason) => {
                    let st = JobStatus::launch_failure(&reason, now_secs());
                    let d = dir.clone();
                    let st2 = st.clone();
                    let _ = tokio::task::spawn_blocking(move || st2.write_atomic(&d)).await;
                    tokio::spawn(finish_job(shared.clone(), job_id, dir, st));
                    return;
                }
            }
        }
    };
    let (tx, rx) = oneshot::channel();
    tokio::spawn(watch_job(shared.clone(), job_id, dir, source, Some(tx)));
    match rx.await {
        Ok(Start::Started(pid)) => info!("job {job_id}: started on {node}, pid {pid}"),
        Ok(Start::Failed(reason)) => debug!("job {job_id}: did not start: {reason}"),
        Ok(Start::Died) | Err(_) => warn!("job {job_id}: supervisor exited during launch"),
    }
    if let Some(e) = shared.jobs().get(job_id) {
        e.ready.send_replace(true);
    }
}
