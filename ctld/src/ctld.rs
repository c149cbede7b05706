//! The one owner of controller state. A single task runs [`Ctld::run`]: it
//! takes operations from the RPC handlers in order, applies them, runs the
//! scheduler on the result, and hands the batch's log records to the
//! write-ahead log. Nobody else touches jobs or nodes.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use drover_conf::slurmconf::Config;
use drover_proto::auth::{ClusterKey, Identity};
use drover_proto::client::{Agent, Credential};
use drover_proto::state::{
    wal_record::Kind, Blob, JobRuntimeUpdate, NodeStateRecord, Snapshot, WalRecord,
};
use drover_proto::{JobInfo, JobState};
use tokio::sync::{mpsc, oneshot};
use tonic::Status;

use crate::cluster::Cluster;
use crate::job::{Blobs, Job};
use crate::users::NameCache;
use crate::wal::{self, Wal};

/// An operation on the state, sent by an RPC handler.
pub type Op = Box<dyn FnOnce(&mut Ctld) + Send>;

/// Where the answer to an operation goes.
pub type Reply<T> = oneshot::Sender<Result<T, Status>>;

/// Snapshot the state once the log has grown this much.
const SNAPSHOT_BYTES: u64 = 64 * 1024 * 1024;
/// Jobs the event-driven scheduling pass looks at (Slurm's default_queue_depth).
pub const DEFAULT_QUEUE_DEPTH: usize = 100;

pub struct Ctld {
    pub cfg: Arc<Config>,
    pub config_path: PathBuf,
    pub cluster: Cluster,
    /// Boxed: a B-tree node then holds 11 pointers, not 11 big records.
    pub jobs: BTreeMap<u32, Box<Job>>,
    /// Array job id -> ids of its split-off tasks (the meta record excluded).
    pub array_tasks: HashMap<u32, Vec<u32>>,
    pub blobs: Blobs,
    /// Blobs already written to the current log generation.
    pub blobs_logged: HashSet<u64>,
    pub next_job_id: u32,
    pub wal: Wal,
    pub names: NameCache,
    pub waiters: HashMap<u32, Vec<Reply<JobInfo>>>,
    pub key: ClusterKey,
    pub cred: Credential,
    pub agents: HashMap<String, Agent>,
    pub tx: mpsc::Sender<Op>,
    pub slurm_user_uid: u32,
    pub start_time: i64,
    pub host: String,
    /// Something changed that may let a job start.
    pub sched_needed: bool,
    /// Run a full pass over every pending job (not just the top of the queue).
    pub full_pass_needed: bool,
    pub shutdown: bool,
    pub queue_depth: usize,
    /// sdiag's counters.
    pub diag: crate::diag::DiagStats,
    /// Associations and QOS cached from accounting (empty without it).
    pub assoc: crate::assoc::AssocSet,
    /// Accounting outbox (None without AccountingStorageType=.../slurmdbd).
    pub acct: Option<crate::acct::Acct>,
    /// Pending jobs by (effective priority desc, id): the scheduler's queue.
    /// Kept in step by [`Ctld::sync_queue`], which every logged change calls.
    pub queue: BTreeSet<(Reverse<u32>, u32)>,
    queue_key: HashMap<u32, u32>,
    /// Scheduler state: reservations, fair-share usage, planned starts.
    pub sched: crate::schedstate::SchedState,
    /// Jobs suspended by preemption whose CPUs/GPUs are lent (resumed
    /// automatically when they are free again; see `suspend.rs`).
    pub lenders: BTreeSet<u32>,
    /// Running allocations without a batch script (salloc, srun's own):
    /// when their command last said it is there (`inactive.rs`). In memory
    /// only: after a restart every allocation gets a whole grace period.
    pub alloc_seen: HashMap<u32, i64>,
    /// The time of the batch being applied (unix seconds). Set by the
    /// runtime, which reads the clock once per batch; no handler reads it.
    pub now: i64,
}

pub fn now() -> i64 {
    drover_proto::auth::now_secs()
}

impl Ctld {
    /// Rebuild state from disk and start the log writer.
    pub fn recover(
        cfg: Config,
        config_path: PathBuf,
        key: ClusterKey,
        tx: mpsc::Sender<Op>,
    ) -> Result<Ctld, String> {
        let dir = PathBuf::from(&cfg.state_save_location);
        let rec = wal::recover(&dir)?;
        if rec.torn_tail {
            tracing::warn!("state log ended in a torn record (crash mid-write); it was dropped");
        }
        let start = now();
        let cluster = Cluster::from_config(&cfg, start);
        let host = drover_proto::auth::hostname();
        let slurm_user_uid = crate::users::user_uid(&cfg.slurm_user).unwrap_or(0);
        let wal = Wal::start(&dir, rec.generation)?;
        let mut c = Ctld {
            next_job_id: cfg.first_job_id.max(1),
            cfg: Arc::new(cfg),
            config_path,
            cluster,
            jobs: BTreeMap::new(),
            array_tasks: HashMap::new(),
            blobs: Blobs::default(),
            blobs_logged: HashSet::new(),
            wal,
            names: NameCache::default(),
            waiters: HashMap::new(),
            cred: Credential::daemon(key.clone(), host.clone()),
            key,
            agents: HashMap::new(),
            tx,
            slurm_user_uid,
            start_time: start,
            host,
            sched_needed: true,
            full_pass_needed: true,
            shutdown: false,
            queue_depth: DEFAULT_QUEUE_DEPTH,
            diag: crate::diag::DiagStats::new(start),
            assoc: Default::default(),
            acct: None,
            queue: BTreeSet::new(),
            queue_key: HashMap::new(),
            sched: Default::default(),
            alloc_seen: HashMap::new(),
            lenders: BTreeSet::new(),
            now: start,
        };
        let mut node_records = Vec::new();
        if let Some(s) = rec.snapshot {
            c.next_job_id = c.next_job_id.max(s.next_job_id);
            for b in s.blobs {
                c.blobs.insert_raw(b.id, b.data);
            }
            for j in s.jobs {
                c.jobs.insert(j.job_id, Box::new(Job::from_record(j)));
            }
            node_records.extend(s.nodes);
            c.recover_sched(s.usage, s.resvs);
        }
        let replayed = rec.records.len();
        for r in rec.records {
            match r.kind {
                Some(Kind::Job(j)) => {
                    c.next_job_id = c.next_job_id.max(j.job_id.saturating_add(1));
                    c.jobs.insert(j.job_id, Box::new(Job::from_record(j)));
                }
                Some(Kind::Runtime(u)) => {
                    if let (Some(job), Some(rt)) = (c.jobs.get_mut(&u.job_id), u.runtime) {
                        if rt.is_array_meta {
                            job.pending_tasks = crate::array::parse_ranges(&rt.array_pending);
                        }
                        job.rec.runtime = Some(rt);
                    }
                }
                Some(Kind::Purge(id)) => {
                    c.jobs.remove(&id);
                }
                Some(Kind::Blob(b)) => c.blobs.insert_raw(b.id, b.data),
                Some(Kind::Node(n)) => node_records.push(n),
                Some(Kind::NextJobId(n)) => c.next_job_id = c.next_job_id.max(n),
                Some(k @ (Kind::Usage(_) | Kind::Resv(_) | Kind::ResvDelete(_))) => {
                    c.replay_sched(k)
                }
                None => {}
            }
        }
        for n in node_records {
            if let Some(i) = c.cluster.node_idx(&n.name) {
                let node = &mut c.cluster.nodes[i];
                node.drain = n.drain;
                node.down = n.down;
                node.down_not_responding = n.down && n.not_responding;
                node.reason = n.reason;
                node.reason_uid = n.reason_uid;
                node.reason_time = n.reason_time;
            }
        }
        // Rebuild derived state: blob references, allocations, array index.
        let ids: Vec<u32> = c.jobs.keys().copied().collect();
        for id in ids {
            let job = &c.jobs[&id];
            c.next_job_id = c.next_job_id.max(id.saturating_add(1));
            c.blobs.retain_ref(job.rec.script_blob);
            c.blobs.retain_ref(job.rec.env_blob);
            let rt = job.rt().clone();
            if rt.array_job_id != 0 && !rt.is_array_meta {
                c.array_tasks.entry(rt.array_job_id).or_default().push(id);
            }
            if matches!(
                job.state(),
                JobState::Running | JobState::Completing | JobState::Suspended
            ) {
                c.cluster
                    .allocate(id, &crate::suspend::held_allocs(&rt), rt.share);
                if job.state() == JobState::Suspended && rt.preempt_suspended {
                    c.lenders.insert(id);
                }
            }
        }
        c.blobs.drop_unreferenced();
        let all: Vec<u32> = c.jobs.keys().copied().collect();
        for id in all {
            c.sync_queue(id);
        }
        let running = c
            .jobs
            .values()
            .filter(|j| !j.state().is_final() && j.state() != JobState::Pending)
            .count();
        let pending = c
            .jobs
            .values()
            .filter(|j| j.state() == JobState::Pending)
            .count();
        tracing::info!(
            "recovered {} jobs ({} pending, {} running) from {} ({} log records); next job id {}",
            c.jobs.len(),
            pending,
            running,
            dir.display(),
            replayed,
            c.next_job_id
        );
        // Start from a compact state: the snapshot replaces the replayed log.
        if replayed > 0 {
            c.write_snapshot();
        }
        Ok(c)
    }

    /// The event loop of the owner task.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Op>) {
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_full = now();
        loop {
            tokio::select! {
                op = rx.recv() => {
                    let Some(op) = op else { break };
                    self.now = now();
                    op(&mut self);
                    // Take everything already queued: one scheduling pass and one
                    // fsync for the whole batch.
                    for _ in 0..4096 {
                        match rx.try_recv() {
                            Ok(op) => op(&mut self),
                            Err(_) => break,
                        }
                    }
                }
                _ = tick.tick() => {
                    let t = now();
                    self.now = t;
                    self.tick(t);
                    if t - last_full >= 1 {
                        self.full_pass_needed = true;
                        last_full = t;
                        // Give memory freed after a burst (big replies, many
                        // requests in flight) back to the system.
                        // SAFETY: malloc_trim only releases free heap pages.
                        unsafe {
                            libc::malloc_trim(0);
                        }
                    }
                }
            }
            if self.sched_needed || self.full_pass_needed {
                self.schedule_pass();
            }
            self.wal.flush();
            if self.wal.bytes_in_generation > SNAPSHOT_BYTES {
                self.write_snapshot();
            }
            if self.shutdown {
                self.wal.sync_blocking();
                break;
            }
        }
    }

    pub fn is_admin(&self, id: &Identity) -> bool {
        id.daemon || id.uid == 0 || id.uid == self.slurm_user_uid
    }

    /// Job `id`, when `who` owns it or is an admin: else Slurm's
    /// `Invalid job id specified` / `Access/permission denied`.
    pub fn owned_job(&self, who: &Identity, id: u32) -> Result<&Job, tonic::Status> {
        use crate::submit::msg;
        let job = self
            .jobs
            .get(&id)
            .ok_or_else(|| tonic::Status::not_found(msg::INVALID_JOB))?;
        if !self.is_admin(who) && job.rec.uid != who.uid {
            return Err(tonic::Status::permission_denied(msg::ACCESS));
        }
        Ok(job)
    }

    // ------------------------------------------------------------ logging

    /// Put a job where it belongs in the pending queue (or take it out).
    pub fn sync_queue(&mut self, id: u32) {
        if let Some(old) = self.queue_key.remove(&id) {
            self.queue.remove(&(Reverse(old), id));
        }
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        if job.state() == JobState::Pending {
            let prio = if job.rt().hold != 0 {
                0
            } else {
                job.rt().priority
            };
            self.queue.insert((Reverse(prio), id));
            self.queue_key.insert(id, prio);
        }
    }

    /// Log the whole job record (submit, or a spec change).
    pub fn log_job(&mut self, id: u32) {
        self.sync_queue(id);
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        for b in [job.rec.script_blob, job.rec.env_blob] {
            if b != 0 && self.blobs_logged.insert(b) {
                if let Some(data) = self.blobs.get(b) {
                    self.wal.append(&WalRecord {
                        kind: Some(Kind::Blob(Blob {
                            id: b,
                            data: data.to_vec(),
                        })),
                    });
                }
            }
        }
        let mut rec = job.rec.clone();
        if let Some(rt) = rec.runtime.as_mut() {
            if job.is_meta() {
                rt.array_pending = crate::array::ranges(&job.pending_tasks);
            }
        }
        self.wal.append(&WalRecord {
            kind: Some(Kind::Job(rec)),
        });
        self.acct_record(id);
    }

    /// Log a job's runtime part (state changes).
    pub fn log_runtime(&mut self, id: u32) {
        self.sync_queue(id);
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.is_meta() {
            let p = crate::array::ranges(&job.pending_tasks);
            job.rt_mut().array_pending = p;
        }
        let rt = job.rt().clone();
        self.wal.append(&WalRecord {
            kind: Some(Kind::Runtime(JobRuntimeUpdate {
                job_id: id,
                runtime: Some(rt),
            })),
        });
        self.acct_record(id);
    }

    /// Log node `idx`'s durable state (drain, down and why).
    pub fn log_node(&mut self, idx: usize) {
        let rec = node_record(&self.cluster.nodes[idx]);
        self.wal.append(&WalRecord {
            kind: Some(Kind::Node(rec)),
        });
    }

    pub fn write_snapshot(&mut self) {
        let mut jobs = Vec::with_capacity(self.jobs.len());
        for j in self.jobs.values() {
            let mut rec = j.rec.clone();
            if j.is_meta() {
                if let Some(rt) = rec.runtime.as_mut() {
                    rt.array_pending = crate::array::ranges(&j.pending_tasks);
                }
            }
            jobs.push(rec);
        }
        let blobs: Vec<Blob> = self
            .blobs
            .iter()
            .map(|(id, d)| Blob {
                id,
                data: d.to_vec(),
            })
            .collect();
        self.blobs_logged = blobs.iter().map(|b| b.id).collect();
        let nodes = (0..self.cluster.nodes.len())
            .map(|i| node_record(&self.cluster.nodes[i]))
            .collect();
        self.wal.snapshot(Snapshot {
            next_job_id: self.next_job_id,
            blobs,
            jobs,
            nodes,
            wal_generation: 0,
            usage: Some(self.usage_record()),
            resvs: self.sched.resvs.clone(),
        });
    }

    // ------------------------------------------------------------ helpers

    /// Answer `reply` once everything logged so far is durable.
    pub fn reply_durable<T: Send + 'static>(&mut self, reply: Reply<T>, value: Result<T, Status>) {
        self.wal.after_durable(Box::new(move || {
            let _ = reply.send(value);
        }));
    }

    /// Allocate a fresh job id (never reused: the counter is durable and skips ids in use).
    pub fn alloc_job_id(&mut self) -> Result<u32, Status> {
        let max = self
            .cfg
            .max_job_id
            .max(self.cfg.first_job_id.saturating_add(1));
        for _ in 0..1_000_000 {
            let id = self.next_job_id;
            self.next_job_id = if id >= max {
                self.cfg.first_job_id.max(1)
            } else {
                id + 1
            };
            if !self.jobs.contains_key(&id) {
                self.wal.append(&WalRecord {
                    kind: Some(Kind::NextJobId(self.next_job_id)),
                });
                return Ok(id);
            }
        }
        Err(Status::resource_exhausted(
            "Slurm temporarily unable to accept job, sleeping and retrying",
        ))
    }

    /// Client for the agent serving `node`.
    pub fn agent_for(&mut self, node: &str) -> Option<Agent> {
        let i = self.cluster.node_idx(node)?;
        let n = &self.cluster.nodes[i].conf;
        let port = if n.port == 0 {
            self.cfg.slurmd_port
        } else {
            n.port
        };
        let addr = format!("{}:{}", n.node_addr, port);
        if let Some(a) = self.agents.get(&addr) {
            return Some(a.clone());
        }
        match drover_proto::client::agent(&addr, self.cred.clone()) {
            Ok(a) => {
                self.agents.insert(addr, a.clone());
                Some(a)
            }
            Err(e) => {
                tracing::warn!("node {node}: {e}");
                None
            }
        }
    }

    /// Wake the owner task later with an operation.
    pub fn later(&self, delay: Duration, op: Op) {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(op).await;
        });
    }
}

/// A node's durable record.
fn node_record(n: &crate::cluster::Node) -> NodeStateRecord {
    NodeStateRecord {
        name: n.name().to_string(),
        drain: n.drain,
        down: n.down,
        reason: n.reason.clone(),
        reason_uid: n.reason_uid,
        reason_time: n.reason_time,
        not_responding: n.down_not_responding,
    }
}
