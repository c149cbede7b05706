//! The agent proper: the state shared by its tasks and the NodeAgent gRPC
//! service, whose calls are handled here or in the modules they name
//! ([`crate::batch_launch`], [`crate::usercalls`], ...). The job watchers
//! and JobEnded reporting are in [`crate::supervisors`], registration and
//! heartbeats in [`crate::registration`].

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use tokio::sync::watch;
use tonic::{Request, Response, Status};
use tracing::debug;

use drover_proto::auth::{now_secs, ClusterKey};
use drover_proto::client::Controller;
use drover_proto::node_agent_server::NodeAgent;
use drover_proto::{
    AgentPingRequest, AgentPingResponse, AgentReconfigureRequest, AgentReconfigureResponse,
    AttachInput, BcastChunk, BcastResponse, JobStatsRequest, JobStatsResponse, LaunchRequest,
    LaunchResponse, ListPidsRequest, ListPidsResponse, ReadOutputRequest, ReadOutputResponse,
    SignalJobRequest, SignalJobResponse, StepLaunchRequest, StepLaunchResponse, SuspendJobRequest,
    SuspendJobResponse,
};

use crate::jobdir;
use crate::jobs::Jobs;
use crate::settings::Settings;
use crate::stepd::protocol::Request as StepdRequest;
use crate::supervisor_start::Spawner;
use crate::supervisors::to_supervisor;

/// What `scontrol reconfigure` changes while the agent runs (the rest of
/// [`Settings`] needs a restart of droverd, see [`crate::reconfigure`]).
#[derive(Debug, Clone)]
pub struct Live {
    pub hooks: crate::stepd::hooks::Hooks,
    pub kill_wait: u32,
    pub conf_hash: u64,
    pub task_affinity: bool,
}

impl Live {
    pub fn of(s: &Settings) -> Live {
        Live {
            hooks: s.hooks.clone(),
            kill_wait: s.kill_wait,
            conf_hash: s.conf_hash,
            task_affinity: s.task_affinity,
        }
    }
}

/// State shared by the service and the background tasks.
pub struct Shared {
    /// As read at start-up; what may change since is in [`Shared::live`].
    pub settings: Settings,
    live: RwLock<Arc<Live>>,
    /// Register again now (the config changed).
    pub reregister: tokio::sync::Notify,
    pub key: ClusterKey,
    /// This binary, re-executed as `--stepd`.
    pub exe: PathBuf,
    pub ctl: Controller,
    pub jobs: Mutex<Jobs>,
    /// True while this agent is registered: false from the start of each
    /// registration until its answer (new batch launches wait meanwhile;
    /// job ends wait for the first one).
    pub registered: watch::Sender<bool>,
    pub start_time: i64,
    pub boot_time: i64,
    pub os: String,
    /// Finished job directories kept for reuse.
    pub recycler: jobdir::Recycler,
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
        let cpus = settings.nodes.iter().map(|n| n.cpus as usize).sum();
        Shared {
            recycler: jobdir::Recycler::new(&settings.spool_dir, cpus),
            live: RwLock::new(Arc::new(Live::of(&settings))),
            reregister: tokio::sync::Notify::new(),
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

    /// The settings `scontrol reconfigure` may have changed.
    pub fn live(&self) -> Arc<Live> {
        self.live.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_live(&self, live: Live) {
        *self.live.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(live);
    }

    pub fn jobs(&self) -> MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
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
}

#[tonic::async_trait]
impl NodeAgent for AgentService {
    async fn launch(
        &self,
        request: Request<LaunchRequest>,
    ) -> Result<Response<LaunchResponse>, Status> {
        self.check_daemon(&request)?;
        crate::batch_launch::launch(&self.shared, request.into_inner()).await?;
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

    async fn read_output(
        &self,
        request: Request<ReadOutputRequest>,
    ) -> Result<Response<ReadOutputResponse>, Status> {
        let r = crate::usercalls::read_output(&self.shared, request).await?;
        Ok(Response::new(r))
    }

    async fn reconfigure(
        &self,
        request: Request<AgentReconfigureRequest>,
    ) -> Result<Response<AgentReconfigureResponse>, Status> {
        self.check_daemon(&request)?;
        crate::reconfigure::reconfigure(self.shared.clone())
            .await
            .map_err(|e| {
                tracing::warn!("reconfigure: {e}");
                Status::failed_precondition(e)
            })?;
        Ok(Response::new(AgentReconfigureResponse {}))
    }

    async fn job_stats(
        &self,
        request: Request<JobStatsRequest>,
    ) -> Result<Response<JobStatsResponse>, Status> {
        self.check_daemon(&request)?;
        let r = request.into_inner();
        let dir = jobdir::job_dir(&self.shared.settings.spool_dir, r.job_id);
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
        let r = crate::usercalls::list_pids(&self.shared, request).await?;
        Ok(Response::new(r))
    }

    async fn file_bcast(
        &self,
        request: Request<tonic::Streaming<BcastChunk>>,
    ) -> Result<Response<BcastResponse>, Status> {
        let r = crate::usercalls::file_bcast(&self.shared, request).await?;
        Ok(Response::new(r))
    }

    type AttachStepStream = crate::attach::OutputStream;

    async fn attach_step(
        &self,
        request: Request<tonic::Streaming<AttachInput>>,
    ) -> Result<Response<Self::AttachStepStream>, Status> {
        let s = crate::usercalls::attach_step(&self.shared, request).await?;
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
