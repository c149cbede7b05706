//! The controller's state, the core: jobs, nodes, partitions, reservations,
//! associations/QOS, fair-share usage, steps. Every change is a method
//! applied by the one owner task (`runtime/`) with `now` set for the batch;
//! what a change asks of the world (log records, agent calls, accounting
//! records, replies, timers) is pushed on [`Ctld::effects`] for the runtime
//! to perform. No clock, no socket, no task below this line.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::refusal::Refusal;
use drover_conf::slurmconf::Config;
use drover_proto::auth::Identity;
use drover_proto::state::{
    wal_record::Kind, Blob, JobRuntimeUpdate, NodeStateRecord, Snapshot, WalRecord,
};
use drover_proto::{JobInfo, JobState};

use crate::cluster::Cluster;
pub use crate::effect::Reply;
use crate::job::{Blobs, Job};
use crate::users::NameCache;

/// An operation on the state, sent by an RPC handler.
pub type Op = crate::effect::Op<Ctld>;
/// What an operation asks the world to do.
pub type Effect = crate::effect::Effect<Ctld>;

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
    pub names: NameCache,
    /// Each listed job's encoding, sent again while unchanged (`jobwire.rs`),
    /// for listings without details (`squeue`).
    pub wire_cache: crate::wirecache::WireCache,
    /// The same for listings with details (`squeue --json`).
    pub detailed_wire_cache: crate::wirecache::WireCache,
    pub waiters: HashMap<u32, Vec<Reply<JobInfo>>>,
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
    pub acct: Option<crate::acct::settings::Acct>,
    /// Jobs whose accounting record is sent again after a restart (a change
    /// logged just before a crash may not have reached the outbox), highest
    /// id first; sent a chunk per owner-loop turn (`resend_accounting`), so
    /// the controller serves from the start.
    pub acct_resend: Vec<u32>,
    /// Configless: the files as read at start-up or the last reconfigure
    /// (what this controller runs on), served to hosts without their own.
    pub served_files: Option<Arc<drover_proto::ConfigFilesResponse>>,
    /// Pending jobs by (effective priority desc, id): the scheduler's queue.
    /// Kept in step by [`Ctld::sync_queue`], which every logged change calls.
    pub queue: BTreeSet<(Reverse<u32>, u32)>,
    queue_key: rustc_hash::FxHashMap<u32, u32>,
    /// Held jobs (the queue's tail, key 0) a pass must still gate: those
    /// whose reason it has not set since their last change, and those with
    /// a dependency to settle. The rest of the tail costs a pass nothing.
    pub held_to_gate: BTreeSet<u32>,
    /// Pending array records with an aftercorr dependency, whose tasks a
    /// pass splits out to judge one by one; kept by [`Ctld::sync_queue`].
    pub corr_metas: BTreeSet<u32>,
    /// Job ids by state, user and partition for queries (`jobindex.rs`),
    /// kept in step by [`Ctld::sync_queue`] like the queue.
    pub index: crate::jobindex::JobIndex,
    /// Finished jobs by end time, pending ones by begin time, for the
    /// tick (`due.rs`); noted by [`Ctld::sync_queue`].
    pub due: crate::due::Due,
    /// Specs and requests shared between jobs (`intern.rs`).
    pub shared: crate::intern::SharedParts,
    /// Scheduler state: reservations, fair-share usage, planned starts.
    pub sched: crate::dispatch::state::SchedState,
    /// Jobs suspended by preemption whose CPUs/GPUs are lent (resumed
    /// automatically when they are free again; see `suspend.rs`).
    pub lenders: BTreeSet<u32>,
    /// Running allocations without a batch script (salloc, srun's own):
    /// when their command last said it is there (`inactive.rs`). In memory
    /// only: after a restart every allocation gets a whole grace period.
    pub alloc_seen: HashMap<u32, i64>,
    /// Job mails due and not yet sent (`mail/`).
    pub mail: crate::mail::outbox::Outbox,
    /// The time of the batch being applied (unix seconds). Set by the
    /// runtime, which reads the clock once per batch; no handler reads it.
    pub now: i64,
    /// What the operations applied so far asked the world to do.
    pub effects: Vec<Effect>,
    /// Nodes resumed/suspended this minute (ResumeRate, SuspendRate).
    pub power_rates: crate::nodepower::Rates,
    /// scontrol partition edits in force over slurm.conf's (`partedit.rs`).
    pub part_edits: Vec<drover_proto::PartitionEdit>,
    /// The last change number given to a job (`Job::seq`; `GetJobsSince`).
    pub change_seq: u64,
    /// This process's change numbers (`GetJobsSince`): drawn at random at
    /// start and at each reconfigure, never 0.
    pub incarnation: u64,
}

/// A fresh [`Ctld::incarnation`]: std's per-process random hash keys, no
/// I/O.
pub fn new_incarnation() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x6472_6f76_6572);
    h.finish() | 1
}

impl Ctld {
    /// Empty state for `cfg` at time `now` (no jobs; nodes as configured).
    pub fn new(
        cfg: Config,
        config_path: PathBuf,
        now: i64,
        slurm_user_uid: u32,
        host: String,
    ) -> Ctld {
        let cluster = Cluster::from_config(&cfg, now);
        Ctld {
            next_job_id: cfg.first_job_id.max(1),
            cfg: Arc::new(cfg),
            config_path,
            cluster,
            jobs: BTreeMap::new(),
            array_tasks: HashMap::new(),
            blobs: Blobs::default(),
            blobs_logged: HashSet::new(),
            names: NameCache::default(),
            waiters: HashMap::new(),
            slurm_user_uid,
            start_time: now,
            host,
            sched_needed: true,
            full_pass_needed: true,
            shutdown: false,
            queue_depth: DEFAULT_QUEUE_DEPTH,
            diag: crate::diag::DiagStats::new(now),
            assoc: Default::default(),
            acct: None,
            served_files: None,
            queue: BTreeSet::new(),
            queue_key: Default::default(),
            held_to_gate: BTreeSet::new(),
            corr_metas: BTreeSet::new(),
            index: Default::default(),
            due: Default::default(),
            shared: Default::default(),
            sched: Default::default(),
            alloc_seen: HashMap::new(),
            lenders: BTreeSet::new(),
            mail: Default::default(),
            acct_resend: Vec::new(),
            change_seq: 0,
            wire_cache: Default::default(),
            detailed_wire_cache: crate::wirecache::WireCache::with_budget(
                crate::wirecache::DETAILED_BUDGET,
            ),
            incarnation: new_incarnation(),
            now,
            effects: Vec::new(),
            power_rates: Default::default(),
            part_edits: Vec::new(),
        }
    }

    /// Take the effects recorded so far (the runtime performs them).
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    pub fn is_admin(&self, id: &Identity) -> bool {
        id.daemon || id.uid == 0 || id.uid == self.slurm_user_uid
    }

    // ------------------------------------------------------------ logging

    /// Put a job where it belongs in the pending queue (or take it out),
    /// and in the query indexes.
    pub fn sync_queue(&mut self, id: u32) {
        let was_held = match self.queue_key.remove(&id) {
            Some(old) => {
                self.queue.remove(&(Reverse(old), id));
                self.held_to_gate.remove(&id);
                old == 0
            }
            None => false,
        };
        self.index.update(id, self.jobs.get(&id).map(|j| &**j));
        let Some(job) = self.jobs.get(&id) else {
            self.due.forget(id);
            self.corr_metas.remove(&id);
            self.sched.factors.remove(&id);
            self.sched.runs.remove(&id);
            return;
        };
        self.sched.runs.remove(&id);
        self.due.note(id, job);
        if job.state() != JobState::Pending || job.rt().hold != 0 {
            // Prioritised again when it is next pending and unheld.
            self.sched.factors.remove(&id);
        }
        let corr = job.is_meta()
            && job.state() == JobState::Pending
            && job.dep.as_ref().is_some_and(|d| {
                d.conds
                    .iter()
                    .any(|c| c.kind == crate::deps::Kind::AfterCorr)
            });
        if corr {
            self.corr_metas.insert(id);
        } else {
            self.corr_metas.remove(&id);
        }
        if job.state() == JobState::Pending {
            let prio = if job.rt().hold != 0 {
                0
            } else {
                job.rt().priority
            };
            self.queue.insert((Reverse(prio), id));
            self.queue_key.insert(id, prio);
            if prio == 0 {
                self.held_to_gate.insert(id);
            } else if was_held {
                // Released: held jobs' priorities are not kept up to date
                // (as Slurm), so the next pass recomputes them first.
                self.full_pass_needed = true;
            }
        }
    }

    /// The pending queue's unheld part (held jobs sort last, with key 0).
    pub fn unheld(&self) -> impl Iterator<Item = &(Reverse<u32>, u32)> + '_ {
        self.queue.iter().take_while(|(Reverse(prio), _)| *prio > 0)
    }

    /// Log the whole job record (submit, or a spec change).
    pub fn log_job(&mut self, id: u32) {
        self.sync_queue(id);
        let now = self.now;
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        job.rt_mut().last_changed = now;
        self.shared.share_spec(job);
        self.change_seq += 1;
        job.seq = self.change_seq;
        let job = &**job;
        for b in [job.rec.script_blob, job.rec.env_blob] {
            if b != 0 && self.blobs_logged.insert(b) {
                if let Some(data) = self.blobs.get(b) {
                    self.effects.push(Effect::Log(Box::new(WalRecord {
                        kind: Some(Kind::Blob(Blob {
                            id: b,
                            data: data.to_vec(),
                        })),
                    })));
                }
            }
        }
        let mut rec = job.record();
        if let Some(rt) = rec.runtime.as_mut() {
            if job.is_meta() {
                rt.array_pending = crate::array::ranges(&job.pending_tasks);
            }
        }
        self.log(WalRecord {
            kind: Some(Kind::Job(rec)),
        });
        self.acct_record(id);
    }

    /// Log a job's runtime part (state changes). Both this and
    /// [`Ctld::log_job`] stamp `last_changed` (what restd's `update_time`
    /// poll compares): every change squeue shows is logged through them.
    pub fn log_runtime(&mut self, id: u32) {
        self.sync_queue(id);
        let now = self.now;
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        job.rt_mut().last_changed = now;
        self.change_seq += 1;
        job.seq = self.change_seq;
        if job.is_meta() {
            let p = crate::array::ranges(&job.pending_tasks);
            job.rt_mut().array_pending = p;
        }
        let rt = job.rt().clone();
        self.log(WalRecord {
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
        self.log(WalRecord {
            kind: Some(Kind::Node(rec)),
        });
    }

    /// The whole durable state, for a new log generation (the blobs in it
    /// count as logged).
    pub fn snapshot(&mut self) -> Snapshot {
        let mut jobs = Vec::with_capacity(self.jobs.len());
        for j in self.jobs.values() {
            let mut rec = j.record();
            if j.is_meta() {
                if let Some(rt) = rec.runtime.as_mut() {
                    rt.array_pending = crate::array::ranges(&j.pending_tasks);
                }
            }
            jobs.push(rec);
        }
        Snapshot {
            jobs,
            ..self.snapshot_but_jobs()
        }
    }

    /// [`Ctld::snapshot`] without the jobs (`snapshot.rs` encodes them
    /// from the job table directly).
    pub fn snapshot_but_jobs(&mut self) -> Snapshot {
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
        Snapshot {
            next_job_id: self.next_job_id,
            blobs,
            jobs: Vec::new(),
            nodes,
            wal_generation: 0,
            usage: Some(self.usage_record()),
            resvs: self.sched.resvs.clone(),
            mails: self.mail.due.values().cloned().collect(),
            next_mail_id: self.mail.next_id,
            part_edits: Some(drover_proto::state::PartitionEdits {
                edits: self.part_edits.clone(),
            }),
        }
    }

    // ------------------------------------------------------------ helpers

    /// Append `rec` to the write-ahead log.
    pub fn log(&mut self, rec: WalRecord) {
        self.effects.push(Effect::Log(Box::new(rec)));
    }

    /// Answer `reply` once everything logged so far is durable.
    pub fn reply_durable<T: Send + 'static>(&mut self, reply: Reply<T>, value: Result<T, Refusal>) {
        self.effects.push(Effect::AfterDurable(Box::new(move || {
            reply.send(value);
        })));
    }

    /// Allocate a fresh job id (never reused: the counter is durable and skips ids in use).
    pub fn alloc_job_id(&mut self) -> Result<u32, Refusal> {
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
                self.log(WalRecord {
                    kind: Some(Kind::NextJobId(self.next_job_id)),
                });
                return Ok(id);
            }
        }
        Err(Refusal::resource_exhausted(
            "Slurm temporarily unable to accept job, sleeping and retrying",
        ))
    }

    /// Where the agent serving `node` listens (`NodeAddr:Port`).
    pub fn agent_addr(&self, node: &str) -> Option<String> {
        let i = self.cluster.node_idx(node)?;
        let node = &self.cluster.nodes[i];
        let n = &node.conf;
        let port = if n.port == 0 {
            self.cfg.slurmd_port
        } else {
            n.port
        };
        let addr = node.learned_addr.as_deref().unwrap_or(&n.node_addr);
        Some(drover_conf::slurmconf::join_host_port(addr, port))
    }

    /// Apply `op` after `delay`.
    pub fn later(&mut self, delay: Duration, op: Op) {
        self.effects.push(Effect::Later { delay, op });
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
        power: n.power as u32,
        power_since: n.power_since,
        power_down_asap: n.power_down_asap,
        addr: n.learned_addr.clone().unwrap_or_default(),
    }
}
