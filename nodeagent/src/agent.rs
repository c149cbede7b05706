//! The agent proper: the NodeAgent gRPC service, the job watchers, JobEnded
//! reporting, registration and heartbeats.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::{oneshot, watch};
use tonic::{Request, Response, Status};
use tracing::{debug, info, warn};

use drover_proto::auth::{now_secs, ClusterKey};
use drover_proto::client::Controller;
use drover_proto::node_agent_server::NodeAgent;
use drover_proto::{
    AgentJob, AgentPingRequest, AgentPingResponse, AttachInput, BcastChunk, BcastResponse,
    HeartbeatRequest, JobEndedRequest, JobStatsRequest, JobStatsResponse, LaunchRequest,
    LaunchResponse, ListPidsRequest, ListPidsResponse, RegisterRequest, SignalJobRequest,
    SignalJobResponse, StepLaunchRequest, StepLaunchResponse, SuspendJobRequest,
    SuspendJobResponse,
};

use crate::jobs::{Jobs, LaunchCheck, Phase};
use crate::launch::{self, Prepared};
use crate::settings::Settings;
use crate::spawner::Spawner;
use crate::status::JobStatus;
use crate::stepd::protocol::Request as StepdRequest;
use crate::stepd_client;

/// State shared by the service and the background tasks.
pub struct Shared {
    pub settings: Settings,
    pub key: ClusterKey,
    /// This binary, re-executed as `--stepd`.
    pub exe: PathBuf,
    pub ctl: Controller,
    pub jobs: Mutex<Jobs>,
    /// True once the first registration was answered.
    pub registered: watch::Sender<bool>,
    pub start_time: i64,
    pub boot_time: i64,
    pub os: String,
    /// Finished job directories kept for reuse.
    pub recycler: launch::Recycler,
    /// Starts supervisors (fork server, or exec).
    pub spawner: Spawner,
    /// Supervisors log routine events too (agent started with -v).
    pub stepd_debug: bool,
    /// GPU utilization and memory of running jobs (NVML).
    pub gpus: crate::gpu::Sampler,
}

impl Shared {
    /// Blocking (sets up the recycle area in the spool).
    pub fn new(
        settings: Settings,
        key: ClusterKey,
        exe: PathBuf,
        ctl: Controller,
        stepd_debug: bool,
    ) -> Shared {
        let spawner = if std::env::var_os("DROVER_NO_FORK_SERVER").is_some() {
            Spawner::exec_only(&exe)
        } else {
            Spawner::new(&exe)
        };
        Shared {
            recycler: launch::Recycler::new(&settings.spool_dir),
            spawner,
            stepd_debug,
            settings,
            key,
            exe,
            ctl,
            jobs: Mutex::new(Jobs::default()),
            registered: watch::Sender::new(false),
            start_time: now_secs(),
            boot_time: crate::hostinfo::boot_time(),
            os: crate::hostinfo::os_name(),
            gpus: crate::gpu::Sampler::default(),
        }
    }

    pub fn jobs(&self) -> MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Logs at most once per period.
struct Every {
    period: Duration,
    last: Option<Instant>,
}

impl Every {
    fn new(period: Duration) -> Every {
        Every { period, last: None }
    }

    fn due(&mut self) -> bool {
        let now = Instant::now();
        match self.last {
            Some(t) if now.duration_since(t) < self.period => false,
            _ => {
                self.last = Some(now);
                true
            }
        }
    }
}

/// What the supervisor said about starting the script.
#[derive(Debug)]
enum Start {
    Started(i32),
    Failed(String),
    Died,
}

type LineSource = BufReader<Box<dyn AsyncRead + Unpin + Send>>;

/// Follow a supervisor (its notify pipe, or a `wait` connection after a
/// restart) until the job ends, then report it.
async fn watch_job(
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
    drop(source);
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
    finish_job(shared, job_id, dir, st).await;
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
            // SAFETY: kill has no memory effects.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
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

/// Report a job's end until the controller acknowledges it, then forget it.
async fn finish_job(shared: Arc<Shared>, job_id: u32, dir: PathBuf, st: JobStatus) {
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

/// Terminate jobs the controller does not know. Only the runs this agent
/// reported in the request being answered are concerned (a requeued job may
/// have started a newer run meanwhile). Their step tasks on the nodes
/// reported go too: a job may have nothing else here.
fn kill_jobs(shared: &Arc<Shared>, ids: &[u32], reported: &[AgentJob]) {
    let kill_wait = shared.settings.kill_wait;
    for &id in ids {
        let mine: Vec<&AgentJob> = reported.iter().filter(|j| j.job_id == id).collect();
        for j in &mine {
            if crate::steps::has_tasks(id, &j.node) {
                info!(
                    "job {id}: the controller does not run it on {}: killing its step tasks",
                    j.node
                );
                crate::steps::signal_job(id, Some(&j.node), 0, kill_wait);
            }
        }
        let Some(run) = mine.iter().find(|j| !j.steps_only).map(|j| j.restart_count) else {
            continue;
        };
        let running = shared.jobs().disown(id, run);
        if running != Some(true) {
            if running.is_some() {
                debug!("job {id}: the controller does not know it: its end is not reported");
            }
            continue;
        }
        info!("job {id}: the controller does not know it: terminating");
        let s = shared.clone();
        tokio::spawn(async move {
            let req = StepdRequest::Terminate {
                kill_wait,
                timeout: false,
            };
            if let Err(e) = to_supervisor(&s, id, req).await {
                warn!("job {id}: cannot terminate: {}", e.message());
            }
        });
    }
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
fn node_files(settings: &crate::settings::Settings, req: &LaunchRequest) -> launch::ExtraFiles {
    let plan = cgroup_plan(settings, req).map(|p| p.to_text());
    let hooks = (!settings.hooks.is_empty()).then(|| settings.hooks.to_text());
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
        let extra = node_files(&s.settings, &req);
        if let Some(n) = s.settings.nodes.iter().find(|n| n.name == req.node) {
            s.gpus
                .track(req.job_id, crate::gpu::job_minors(&n.gres, &req));
        }
        let p = launch::prepare_job_dir(&s.settings.spool_dir, &req, Some(&s.recycler), &extra)?;
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
            match launch::spawn_stepd(
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

#[derive(Clone)]
pub struct AgentService {
    shared: Arc<Shared>,
}

impl AgentService {
    pub fn new(shared: Arc<Shared>) -> AgentService {
        AgentService { shared }
    }

    fn check_daemon<T>(&self, req: &Request<T>) -> Result<(), Status> {
        let id = drover_proto::client::identity(&self.shared.key, req)?;
        if !id.daemon {
            return Err(Status::permission_denied("Access/permission denied"));
        }
        Ok(())
    }

    /// A user's call (listpids, sbcast, sattach): who, and whether an
    /// administrator (root, SlurmUser, a daemon).
    fn caller<T>(&self, req: &Request<T>) -> Result<(drover_proto::auth::Identity, bool), Status> {
        let id = drover_proto::client::identity(&self.shared.key, req)?;
        let admin = id.daemon || id.uid == 0 || id.uid == self.shared.settings.slurm_user_uid;
        Ok((id, admin))
    }
}

#[tonic::async_trait]
impl NodeAgent for AgentService {
    async fn launch(
        &self,
        request: Request<LaunchRequest>,
    ) -> Result<Response<LaunchResponse>, Status> {
        self.check_daemon(&request)?;
        let mut req = request.into_inner();
        let shared = &self.shared;
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
        let dir = launch::job_dir(&shared.settings.spool_dir, job_id);
        let since = Instant::now();
        loop {
            {
                let mut jobs = shared.jobs();
                match jobs.check_launch(job_id, run) {
                    LaunchCheck::New => {
                        jobs.insert(job_id, run, node.clone(), dir.clone(), Phase::Starting);
                        break;
                    }
                    LaunchCheck::Duplicate => {
                        debug!("job {job_id}: repeated launch ignored");
                        return Ok(Response::new(LaunchResponse {}));
                    }
                    LaunchCheck::Busy => {}
                }
            }
            // A requeued job whose previous run is still being wound up
            // (JobEnded just acknowledged, directory being retired).
            if since.elapsed() > Duration::from_secs(10) {
                return Err(Status::unavailable(format!(
                    "job {job_id}: the previous run is still active on this node"
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The launch runs in its own task: a cancelled RPC must not leave a
        // half-started job behind. The answer waits for the script to start.
        let (done_tx, done_rx) = oneshot::channel();
        tokio::spawn(run_launch(shared.clone(), req, dir, done_tx));
        let _ = done_rx.await;
        Ok(Response::new(LaunchResponse {}))
    }

    async fn signal_job(
        &self,
        request: Request<SignalJobRequest>,
    ) -> Result<Response<SignalJobResponse>, Status> {
        self.check_daemon(&request)?;
        let r = request.into_inner();
        if r.step_only {
            crate::steps::signal_step(r.job_id, r.step_id, r.signal as i32, r.kill_wait);
            return Ok(Response::new(SignalJobResponse {}));
        }
        let req = if r.signal == 0 {
            StepdRequest::Terminate {
                kill_wait: r.kill_wait,
                timeout: r.timeout,
            }
        } else {
            let signal = i32::try_from(r.signal)
                .ok()
                .filter(|s| (1..=64).contains(s))
                .ok_or_else(|| Status::invalid_argument("Invalid signal"))?;
            StepdRequest::Signal {
                signal,
                batch_only: r.batch_only,
            }
        };
        debug!("job {}: {:?}", r.job_id, req);
        if r.signal == 0 {
            // A suspended job: its steps' tasks here must be thawed too.
            crate::suspend::thaw_for_kill(&self.shared, r.job_id, &r.node);
        }
        if !r.batch_only {
            crate::steps::signal_job(r.job_id, Some(&r.node), r.signal as i32, r.kill_wait);
        }
        to_supervisor(&self.shared, r.job_id, req).await?;
        Ok(Response::new(SignalJobResponse {}))
    }

    async fn suspend_job(
        &self,
        request: Request<SuspendJobRequest>,
    ) -> Result<Response<SuspendJobResponse>, Status> {
        self.check_daemon(&request)?;
        let r = request.into_inner();
        crate::suspend::apply(&self.shared, r.job_id, &r.node, r.suspend).await?;
        Ok(Response::new(SuspendJobResponse {}))
    }

    async fn step_launch(
        &self,
        request: Request<StepLaunchRequest>,
    ) -> Result<Response<StepLaunchResponse>, Status> {
        self.check_daemon(&request)?;
        let req = request.into_inner();
        let job = req.job.clone().unwrap_or_default();
        if job.expires != 0 && job.expires < now_secs() {
            return Err(Status::permission_denied("Job credential expired"));
        }
        if !self.shared.settings.serves(&job.node) {
            return Err(Status::invalid_argument(format!(
                "node {} is not served by this agent",
                job.node
            )));
        }
        crate::steps::launch(self.shared.clone(), req).await?;
        Ok(Response::new(StepLaunchResponse {}))
    }

    async fn job_stats(
        &self,
        request: Request<JobStatsRequest>,
    ) -> Result<Response<JobStatsResponse>, Status> {
        self.check_daemon(&request)?;
        let r = request.into_inner();
        let dir = launch::job_dir(&self.shared.settings.spool_dir, r.job_id);
        let steps =
            tokio::task::spawn_blocking(move || crate::usage::live_steps(&dir, r.job_id, &r.node))
                .await
                .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(JobStatsResponse {
            steps,
            errors: Vec::new(),
        }))
    }

    async fn list_pids(
        &self,
        request: Request<ListPidsRequest>,
    ) -> Result<Response<ListPidsResponse>, Status> {
        let (id, admin) = self.caller(&request)?;
        let r = request.into_inner();
        let caller = crate::listpids::Caller { uid: id.uid, admin };
        let shared = self.shared.clone();
        let procs = tokio::task::spawn_blocking(move || {
            crate::listpids::list(&shared, r.job_id, &r.node, caller)
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))??;
        Ok(Response::new(ListPidsResponse { procs }))
    }

    async fn file_bcast(
        &self,
        request: Request<tonic::Streaming<BcastChunk>>,
    ) -> Result<Response<BcastResponse>, Status> {
        let (id, admin) = self.caller(&request)?;
        let r = crate::bcast::receive(self.shared.clone(), id, admin, request.into_inner()).await?;
        Ok(Response::new(r))
    }

    type AttachStepStream = crate::attach::OutputStream;

    async fn attach_step(
        &self,
        request: Request<tonic::Streaming<AttachInput>>,
    ) -> Result<Response<Self::AttachStepStream>, Status> {
        let (id, admin) = self.caller(&request)?;
        let s = crate::attach::attach(id.uid, admin, request.into_inner()).await?;
        Ok(Response::new(s))
    }

    async fn ping(
        &self,
        request: Request<AgentPingRequest>,
    ) -> Result<Response<AgentPingResponse>, Status> {
        self.check_daemon(&request)?;
        Ok(Response::new(AgentPingResponse {
            jobs: self.shared.jobs().agent_jobs(),
            start_time: self.shared.start_time,
        }))
    }
}

/// Pick up the job directories left by a previous agent: re-attach to live
/// supervisors, report finished jobs.
pub async fn reattach(shared: &Arc<Shared>) {
    let spool = shared.settings.spool_dir.clone();
    let found = tokio::task::spawn_blocking(move || launch::scan_spool(&spool))
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

/// Every job with something running here: the job table's (batch scripts)
/// and, once per node, the jobs of which only step tasks run there (srun
/// inside salloc, or the other nodes of a batch job).
fn reported_jobs(shared: &Shared) -> Vec<AgentJob> {
    let mut v = shared.jobs().agent_jobs();
    for (job_id, node, run) in crate::steps::running_jobs() {
        if !v.iter().any(|j| j.job_id == job_id && j.node == node) {
            v.push(AgentJob {
                job_id,
                node,
                running: true,
                restart_count: run,
                steps_only: true,
            });
        }
    }
    v
}

fn register_request(shared: &Shared) -> RegisterRequest {
    RegisterRequest {
        nodes: shared.settings.registrations(shared.boot_time, &shared.os),
        jobs: reported_jobs(shared),
        agent_start_time: shared.start_time,
        version: env!("CARGO_PKG_VERSION").to_string(),
        conf_hash: shared.settings.conf_hash,
    }
}

/// Register (retrying every second), then heartbeat; register again when
/// the controller asks. Never returns.
pub async fn control_loop(shared: Arc<Shared>) {
    let mut unreachable = Every::new(Duration::from_secs(60));
    loop {
        let interval = loop {
            let reg = register_request(&shared);
            let reported = reg.jobs.clone();
            let mut r = Request::new(reg);
            r.set_timeout(Duration::from_secs(10));
            match shared.ctl.clone().register(r).await {
                Ok(resp) => {
                    let resp = resp.into_inner();
                    for e in &resp.errors {
                        warn!("controller: {e}");
                    }
                    info!(
                        "registered {} node(s) with the controller at {}",
                        shared.settings.nodes.len(),
                        shared.settings.controller
                    );
                    // Disown first, so no end report of those jobs goes out.
                    kill_jobs(&shared, &resp.kill_jobs, &reported);
                    shared.registered.send_replace(true);
                    break Duration::from_secs(u64::from(resp.heartbeat_interval.clamp(1, 300)));
                }
                Err(s) => {
                    if unreachable.due() {
                        warn!(
                            "cannot register with the controller at {}: {}; retrying every second",
                            shared.settings.controller,
                            s.message()
                        );
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        };
        unreachable = Every::new(Duration::from_secs(60));
        loop {
            tokio::time::sleep(interval).await;
            let n = shared.settings.nodes.len();
            let load = crate::hostinfo::loadavg_x100();
            let free = crate::hostinfo::mem_available_mb().unwrap_or(0);
            let reported = reported_jobs(&shared);
            let hb = HeartbeatRequest {
                nodes: shared.settings.node_names(),
                jobs: reported.clone(),
                cpu_load: vec![load; n],
                free_memory: vec![free; n],
            };
            let mut r = Request::new(hb);
            r.set_timeout(Duration::from_secs(10));
            match shared.ctl.clone().heartbeat(r).await {
                Ok(resp) => {
                    let resp = resp.into_inner();
                    kill_jobs(&shared, &resp.kill_jobs, &reported);
                    if resp.reregister {
                        info!("the controller asked this agent to register again");
                        break;
                    }
                }
                Err(s) => {
                    if unreachable.due() {
                        warn!(
                            "heartbeat to the controller at {} failed: {}",
                            shared.settings.controller,
                            s.message()
                        );
                    }
                }
            }
        }
    }
}

/// Keep the local auth socket served: if nothing answers on it, serve it.
pub async fn auth_socket_loop(shared: Arc<Shared>) {
    let path = shared.settings.auth_socket.clone();
    let mut server: Option<tokio::task::JoinHandle<()>> = None;
    let mut failed_log = Every::new(Duration::from_secs(600));
    loop {
        let answered = tokio::net::UnixStream::connect(&path).await.is_ok();
        if !answered {
            if let Some(h) = server.take() {
                h.abort();
            }
            let key = shared.key.clone();
            let ttl = shared.settings.auth_ttl;
            let p = path.clone();
            let (tx, rx) = oneshot::channel::<String>();
            server = Some(tokio::spawn(async move {
                if let Err(e) = drover_proto::auth::serve_auth_socket(&p, key, ttl).await {
                    let _ = tx.send(e.to_string());
                }
            }));
            // Give the bind a moment to fail before logging success.
            match tokio::time::timeout(Duration::from_millis(200), rx).await {
                Ok(Ok(e)) => {
                    if failed_log.due() {
                        warn!("cannot serve the auth socket {}: {e}", path.display());
                    }
                    server = None;
                }
                _ => info!("serving the auth socket {}", path.display()),
            }
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}
