//! A job in the controller's memory: its durable record, its dependency
//! and, derived from its resolved request (`request.rs`), the scheduler's
//! form of that request.

use std::collections::HashMap;
use std::sync::Arc;

use drover_proto::state::{JobRecord, JobRuntime, ResolvedRequest};
use drover_proto::{JobSpec, JobState};

use crate::deps::Dependency;
use crate::sched::Request;

/// `rec.spec` and `rec.request` are empty in memory: the spec and the
/// resolved request are held behind `Arc`s, shared with every other job
/// whose spec or request is equal (the tables in intern.rs),
/// and put back into the record when it is written ([`Job::record`]).
#[derive(Debug, Clone)]
pub struct Job {
    pub rec: JobRecord,
    spec: Arc<JobSpec>,
    request: Option<Arc<ResolvedRequest>>,
    pub dep: Option<Dependency>,
    /// Array meta record: task ids not yet split off, ascending.
    pub pending_tasks: Vec<u32>,
    /// `request` in the scheduler's form for the current configuration
    /// (node indices), made when the request or the configuration changes,
    /// not on every pass. None: the request names nodes that no longer exist.
    pub sched_req: Option<Arc<Request>>,
    /// In memory: the controller's change number at the job's last change
    /// (`Ctld::change_seq`, set with `last_changed`; 0: none since start).
    pub seq: u64,
    /// In memory: the change number at which a pass last found that the
    /// job's dependency can never be satisfied. Those outcomes are kept
    /// (`JobRuntime.dep_state`), so while `seq` is still this, the job's
    /// gate is the same and the pass does not work it out again.
    pub never_at: Option<u64>,
}

impl Job {
    pub fn id(&self) -> u32 {
        self.rec.job_id
    }
    pub fn spec(&self) -> &JobSpec {
        &self.spec
    }
    /// The spec for a change: a copy of its own when it was shared.
    pub fn spec_mut(&mut self) -> &mut JobSpec {
        Arc::make_mut(&mut self.spec)
    }
    pub fn set_spec(&mut self, spec: JobSpec) {
        self.spec = Arc::new(spec);
    }
    pub(crate) fn spec_arc(&self) -> &Arc<JobSpec> {
        &self.spec
    }
    pub(crate) fn set_spec_arc(&mut self, spec: Arc<JobSpec>) {
        self.spec = spec;
    }
    pub fn rt(&self) -> &JobRuntime {
        self.rec
            .runtime
            .as_ref()
            .expect("job records always carry a runtime")
    }
    pub fn rt_mut(&mut self) -> &mut JobRuntime {
        self.rec.runtime.get_or_insert_with(Default::default)
    }
    /// The resolved request (every job has one once submitted or recovered).
    pub fn request(&self) -> Option<&ResolvedRequest> {
        self.request.as_deref()
    }
    pub(crate) fn request_arc(&self) -> Option<&Arc<ResolvedRequest>> {
        self.request.as_ref()
    }
    pub(crate) fn set_request_arc(&mut self, r: Option<Arc<ResolvedRequest>>) {
        self.request = r;
    }
    pub fn state(&self) -> JobState {
        JobState::try_from(self.rt().state).unwrap_or(JobState::Pending)
    }
    pub fn is_meta(&self) -> bool {
        self.rt().is_array_meta
    }
    /// Slurm's `A_i` / plain id text.
    pub fn id_text(&self) -> String {
        let rt = self.rt();
        if rt.array_job_id != 0 && !rt.is_array_meta {
            format!("{}_{}", rt.array_job_id, rt.array_task_id)
        } else {
            self.id().to_string()
        }
    }
    /// The whole record as it is written (log, snapshot): spec and request
    /// filled in.
    pub fn record(&self) -> JobRecord {
        let mut rec = self.rec.clone();
        rec.spec = Some(Box::new((*self.spec).clone()));
        rec.request = self.request.as_deref().cloned().map(Box::new);
        rec
    }
    /// A job from its whole record (read from disk, or made by a test).
    pub fn from_record(mut rec: JobRecord) -> Job {
        let spec = rec.spec.take().map(|s| *s).unwrap_or_default();
        let request = rec.request.take().map(|r| Arc::new(*r));
        rec.runtime.get_or_insert_with(Default::default);
        let dep = crate::deps::parse(&spec.dependency).ok().flatten();
        let pending_tasks = rec
            .runtime
            .as_ref()
            .filter(|r| r.is_array_meta)
            .map(|r| crate::array::parse_ranges(&r.array_pending))
            .unwrap_or_default();
        Job {
            rec,
            spec: Arc::new(spec),
            request,
            dep,
            pending_tasks,
            sched_req: None,
            seq: 0,
            never_at: None,
        }
    }
}

/// Clear a job's last run so it can be queued again (requeue).
/// `JobRuntime.hold` values: none, user, admin, and the system hold of a
/// job whose launch (Prolog) failed.
pub const HOLD_LAUNCH_FAILED: u32 = 3;
pub const REASON_LAUNCH_FAILED_HELD: &str = "launch failed requeued held";
/// `scontrol requeuehold State=SpecialExit`: a user hold shown as Slurm's
/// SPECIAL_EXIT state (SE) until released.
pub const HOLD_SPECIAL_EXIT: u32 = 4;

pub fn reset_for_requeue(rt: &mut JobRuntime) {
    rt.state = JobState::Pending as i32;
    rt.restart_count += 1;
    rt.requeue_pending = false;
    rt.preempted = false;
    rt.alloc.clear();
    rt.batch_host.clear();
    rt.start_time = 0;
    rt.end_time = 0;
    rt.launched = false;
    rt.terminating = false;
    rt.cancelled = false;
    rt.timed_out = false;
    rt.node_fail = false;
    rt.oom = false;
    rt.system_comment.clear();
    rt.warn_signal_sent = false;
    rt.suspend_time = 0;
    rt.pre_sus_time = 0;
    rt.tot_sus_time = 0;
    rt.preempt_suspended = false;
    rt.suspended_for = 0;
    rt.gpu_util_pct = 0;
    rt.gpu_mem_max_mb = 0;
    rt.exit_code = 0;
    rt.exit_signal = 0;
    rt.reason = "None".into();
    rt.reason_detail.clear();
}

/// Script and environment contents, shared between jobs that have the same
/// (a shell loop of sbatch, every task of an array): kept once in memory.
#[derive(Default)]
pub struct Blobs {
    map: HashMap<u64, (Arc<[u8]>, u32)>,
}

pub fn blob_id(data: &[u8]) -> u64 {
    let d = ring::digest::digest(&ring::digest::SHA256, data);
    let b = d.as_ref();
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]).max(1)
}

impl Blobs {
    /// Add a reference; returns (id, newly stored).
    pub fn add(&mut self, data: &[u8]) -> (u64, bool) {
        let id = blob_id(data);
        let e = self.map.entry(id).or_insert_with(|| (Arc::from(data), 0));
        e.1 += 1;
        (id, e.1 == 1)
    }
    pub fn insert_raw(&mut self, id: u64, data: Vec<u8>) {
        self.map.entry(id).or_insert_with(|| (Arc::from(data), 0));
    }
    pub fn retain_ref(&mut self, id: u64) {
        if let Some(e) = self.map.get_mut(&id) {
            e.1 += 1;
        }
    }
    pub fn release(&mut self, id: u64) {
        if let Some(e) = self.map.get_mut(&id) {
            e.1 = e.1.saturating_sub(1);
            if e.1 == 0 {
                self.map.remove(&id);
            }
        }
    }
    pub fn get(&self, id: u64) -> Option<Arc<[u8]>> {
        self.map.get(&id).map(|e| e.0.clone())
    }
    /// Drop blobs no job refers to (after replay).
    pub fn drop_unreferenced(&mut self) {
        self.map.retain(|_, e| e.1 > 0);
    }
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Arc<[u8]>)> {
        self.map.iter().map(|(k, v)| (*k, &v.0))
    }
}

/// Environment as one blob: entries joined by NUL.
pub fn env_to_blob(env: &[String]) -> Vec<u8> {
    env.join("\0").into_bytes()
}

pub fn env_from_blob(b: &[u8]) -> Vec<String> {
    if b.is_empty() {
        return Vec::new();
    }
    String::from_utf8_lossy(b)
        .split('\0')
        .map(str::to_string)
        .collect()
}

/// The allocation a launch message carries: the job's resolved request
/// applied to its per-node allocation.
pub fn launch_allocation(job: &Job) -> drover_proto::JobAllocation {
    crate::request::allocation(&job.request().cloned().unwrap_or_default(), &job.rt().alloc)
}

/// The job's environment, from its content-addressed blob.
pub fn job_environment(blobs: &Blobs, job: &Job) -> Vec<String> {
    blobs
        .get(job.rec.env_blob)
        .map(|b| env_from_blob(&b))
        .unwrap_or_default()
}
