//! The scheduler core: a pure, deterministic function from `now` and a
//! snapshot of the cluster (nodes with their free resources, partitions,
//! running jobs with their expected ends, pending jobs, reservations, the
//! accounting cache for limits and QOS) to decisions: start job J on nodes N
//! with CPUs C and GPUs G, preempt job P, or leave a job pending with a
//! reason and an expected start time. No I/O, no clock reads, no async: the
//! controller builds the snapshot, calls [`plan`], and applies the result.
//!
//! Jobs are taken by (partition PriorityTier, priority, job id). With
//! backfill (Slurm's `sched/backfill`, the default) a job that cannot start
//! now gets a planned start on a time-resource profile ([`profile`]) built
//! from the running jobs' time limits, and a lower job starts now only if it
//! fits around every planned start. With `sched/builtin` the first job that
//! must wait in a partition holds back every job below it there.

pub mod assoc;
mod constraint;
mod index;
pub use index::Index;
mod limits;
mod place;
mod plan;
mod preempt;
pub mod profile;
pub mod replay;
pub mod synth;
mod work;

pub use constraint::{parse_constraint, Constraint};
pub use limits::{request_totals, request_tres, LimitState, Owner, Totals};
pub use place::{place, place_with, Alloc, Avail, PlaceOpts};
pub use plan::plan;

use crate::sched::assoc::PreemptMode;

/// Scheduler settings (SchedulerType, SchedulerParameters,
/// SelectTypeParameters, PreemptType).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// `sched/backfill` (true) or `sched/builtin`.
    pub backfill: bool,
    /// `bf_window`: how far ahead starts are planned, seconds.
    pub bf_window: i64,
    /// `bf_resolution`: planned starts are rounded up to this, seconds.
    pub bf_resolution: i64,
    /// `bf_max_job_test`: jobs planned per pass (the rest wait unplanned).
    pub bf_max_job_test: usize,
    /// `bf_max_job_user`: jobs planned per user per pass (0 = no limit).
    pub bf_max_job_user: usize,
    pub place: PlaceOpts,
    pub preempt: PreemptKind,
    /// An event-driven pass (Slurm's main scheduler, run on submissions
    /// and job ends over the first `default_queue_depth` jobs): once a job
    /// of a partition is left pending, no job below it there is looked at
    /// (they keep their reasons and planned starts until a full pass).
    pub quick: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            backfill: true,
            bf_window: 86400,
            bf_resolution: 60,
            bf_max_job_test: 500,
            bf_max_job_user: 0,
            place: PlaceOpts::default(),
            preempt: PreemptKind::Off,
            quick: false,
        }
    }
}

/// `PreemptType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PreemptKind {
    #[default]
    Off,
    /// `preempt/qos`: a job's QOS names the QOS it may preempt.
    Qos,
    /// `preempt/partition_prio`: jobs in a partition of higher PriorityTier
    /// preempt jobs in lower ones.
    PartitionPrio,
}

/// A running job as the scheduler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSnap {
    pub id: u32,
    pub partition: usize,
    /// Shared: the controller keeps a running job's snapshot between passes.
    pub allocs: std::sync::Arc<[RunAlloc]>,
    /// Expected end (start + time limit); `i64::MAX` for no limit.
    pub end: i64,
    pub priority: u32,
    /// Read only for association/QOS limits and preemption (the
    /// controller leaves it empty when neither is on).
    pub owner: Owner,
    /// What preempting it does (`Off`: it cannot be preempted).
    pub preempt_mode: PreemptMode,
    /// Already being stopped (preempted, cancelled, timed out).
    pub ending: bool,
    /// It may share its CPUs (OverSubscribe): they are in its nodes'
    /// `shared` lists, not held by it alone.
    pub share: bool,
}

/// Resources of a running job on one node.
#[derive(Debug, Clone, PartialEq)]
pub struct RunAlloc {
    pub node: usize,
    pub cpus: u32,
    pub mem: u64,
    /// Positions in the node's `gres` list.
    pub gres: Vec<usize>,
}

/// An advance reservation.
#[derive(Debug, Clone, PartialEq)]
pub struct ResvSnap {
    pub name: String,
    pub nodes: Vec<usize>,
    pub start: i64,
    pub end: i64,
    pub users: Vec<String>,
    pub accounts: Vec<String>,
    pub maint: bool,
}

impl ResvSnap {
    pub fn admits(&self, o: &Owner) -> bool {
        self.users.iter().any(|u| u == &o.user) || self.accounts.iter().any(|a| a == &o.account)
    }
}

/// Everything one pass looks at.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub now: i64,
    pub params: &'a Params,
    pub nodes: &'a [NodeSnap],
    pub parts: &'a [PartSnap],
    pub running: &'a [RunSnap],
    pub jobs: &'a [JobSnap],
    pub resvs: &'a [ResvSnap],
    pub assoc: &'a crate::sched::assoc::AssocSet,
    /// The best-fit index of `nodes` and `parts` ([`Index::new`]), where
    /// the caller keeps one: lent to the pass, which files the nodes it
    /// changes anew and gives it back as it found it (no copy); the pass
    /// builds one otherwise.
    pub index: Option<&'a std::cell::RefCell<Index>>,
}

/// Nodes by index: a snapshot's slice, or a pass's working copy of one
/// (which copies a node only once the pass changes it).
pub trait NodeSet: std::ops::Index<usize, Output = NodeSnap> {
    fn count(&self) -> usize;
}

impl NodeSet for [NodeSnap] {
    fn count(&self) -> usize {
        self.len()
    }
}

impl NodeSet for Vec<NodeSnap> {
    fn count(&self) -> usize {
        self.len()
    }
}

/// One node as the scheduler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSnap {
    /// Can take new work (registered, responding, not drained or down).
    pub usable: bool,
    pub cpus: u32,
    /// Free CPU ids, ascending.
    pub free_cpus: Vec<u32>,
    pub real_memory: u64,
    pub free_memory: u64,
    /// Generic resources, one entry per device (or unit) in index order.
    pub gres: Vec<GresDev>,
    pub features: Vec<String>,
    pub weight: u32,
    /// Jobs currently on the node (for exclusive placement and packing).
    pub jobs: u32,
    /// Threads per core (for `CR_Core`).
    pub threads: u32,
    /// CPUs held only by jobs that share them (OverSubscribe), ascending
    /// by id; not in `free_cpus`. A CPU held by a job that shares with
    /// nobody is in neither list.
    pub shared: Vec<SharedCpu>,
    /// When the node can run work (0: now). A powered-down node is
    /// `ResumeTimeout` away: a job given it runs from then, and no start
    /// on it is planned sooner.
    pub ready: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GresDev {
    pub name: String,
    pub r#type: String,
    /// Index among devices of the same name on this node.
    pub index: u32,
    pub free: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PartSnap {
    /// Indices into the node slice.
    pub nodes: Vec<usize>,
    /// State UP (DOWN/INACTIVE/DRAIN partitions start nothing).
    pub up: bool,
    pub priority_tier: u32,
    pub name: String,
    /// `OverSubscribe`: CPU sharing between jobs.
    pub share: Share,
}

/// A CPU held only by jobs that share it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedCpu {
    pub id: u32,
    /// Jobs on it.
    pub jobs: u32,
    /// The least share limit among them (since it was last free).
    pub cap: u32,
    /// When it is expected free: the latest expected end of its jobs
    /// (`i64::MAX`: not known, or never).
    pub until: i64,
}

impl SharedCpu {
    /// May one more job sharing up to `share` per CPU use it (no job on it
    /// allows more than its own limit)?
    pub fn joinable(&self, share: u32) -> bool {
        self.jobs < share.min(self.cap)
    }
}

/// A partition's `OverSubscribe` CPU sharing (`EXCLUSIVE` is `No` with
/// every request made exclusive by the controller).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Share {
    /// CPUs are not shared.
    #[default]
    No,
    /// `YES:N`: jobs that ask (`--oversubscribe`) share, up to N per CPU.
    Yes(u32),
    /// `FORCE:N`: every job shares, up to N per CPU.
    Force(u32),
}

impl Share {
    /// From the partition's `OverSubscribe` value (NO, YES[:N],
    /// EXCLUSIVE, FORCE[:N]; N defaults to 4).
    pub fn parse(v: &str) -> Share {
        let (word, n) = match v.trim().split_once(':') {
            Some((w, n)) => (w, n.trim().parse::<u32>().unwrap_or(4)),
            None => (v.trim(), 4),
        };
        if word.eq_ignore_ascii_case("YES") {
            Share::Yes(n.max(1))
        } else if word.eq_ignore_ascii_case("FORCE") {
            Share::Force(n.max(1))
        } else {
            Share::No
        }
    }

    /// How many jobs may use one CPU that `req` uses here (1: the job
    /// needs CPUs nobody else uses).
    pub fn limit(self, req: &Request) -> u32 {
        self.limit_for(req.exclusive, req.oversubscribe)
    }

    /// [`Share::limit`] for a request that is `exclusive` or asks to
    /// `oversubscribe`.
    pub fn limit_for(self, exclusive: bool, oversubscribe: bool) -> u32 {
        if exclusive {
            return 1;
        }
        match self {
            Share::No => 1,
            Share::Yes(n) if oversubscribe => n.max(1),
            Share::Yes(_) => 1,
            Share::Force(n) => n.max(1),
        }
    }
}

/// A typed or untyped generic resource request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GresReq {
    pub name: String,
    pub r#type: Option<String>,
    pub count: u32,
}

/// Normalised resource request of a job (defaults already applied).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Request {
    pub min_nodes: u32,
    pub max_nodes: u32,
    /// Total tasks; at least min_nodes when not given.
    pub ntasks: u32,
    pub ntasks_per_node: u32,
    pub cpus_per_task: u32,
    pub min_cpus_per_node: u32,
    /// Memory per node in MB (0 = none).
    pub mem_per_node: u64,
    /// Memory per allocated CPU in MB (0 = none).
    pub mem_per_cpu: u64,
    /// Memory per allocated GPU in MB (0 = none).
    pub mem_per_gpu: u64,
    /// Per-node generic resources.
    pub gres: Vec<GresReq>,
    /// `--gpus`: total over the job.
    pub gpus_total: Option<GresReq>,
    pub gpus_per_task: u32,
    pub cpus_per_gpu: u32,
    pub exclusive: bool,
    /// `-s/--oversubscribe`: may share CPUs where the partition says `YES`.
    pub oversubscribe: bool,
    pub constraint: Option<Constraint>,
    /// Node indices that must be in the allocation.
    pub required: Vec<usize>,
    /// Node indices that must not.
    pub excluded: Vec<usize>,
}

/// A pending job, or the pending part of a job array.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSnap {
    pub id: u32,
    pub priority: u32,
    /// Candidate partitions (indices), in the user's order (shared by
    /// the jobs naming the same ones).
    pub partitions: std::sync::Arc<[usize]>,
    /// Shared with the job's own (`Job::sched_req`): not copied per pass.
    pub req: std::sync::Arc<Request>,
    /// How many copies may start now (array tasks under the throttle); 1 for a plain job.
    pub instances: u32,
    /// Time limit, seconds (`i64::MAX`: none).
    pub time_limit: i64,
    pub owner: Owner,
    /// Index into the reservations (`--reservation`).
    pub reservation: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Start {
        job: u32,
        partition: usize,
        allocs: Vec<Alloc>,
    },
    Wait {
        job: u32,
        reason: &'static str,
        /// Expected start (planned by backfill), if any.
        start: Option<i64>,
    },
    /// Stop running job `job` so that pending job `by` can start.
    Preempt {
        job: u32,
        by: u32,
        mode: PreemptMode,
    },
}

/// One pass with nothing running, no reservations and no accounting
/// (tests and the submit-time feasibility check).
pub fn schedule(nodes: &[NodeSnap], parts: &[PartSnap], jobs: &[JobSnap]) -> Vec<Decision> {
    let assoc = crate::sched::assoc::AssocSet::default();
    plan(&Input {
        now: 0,
        params: &Params::default(),
        nodes,
        parts,
        running: &[],
        jobs,
        resvs: &[],
        assoc: &assoc,
        index: None,
    })
}

impl NodeSnap {
    /// The node with nothing running on it, if it can take work at all.
    pub fn pristine_if_usable(&self) -> NodeSnap {
        let mut n = self.pristine();
        n.usable = self.usable;
        n
    }

    /// The node as configured, empty and usable (for "could this ever run").
    pub fn pristine(&self) -> NodeSnap {
        NodeSnap {
            usable: true,
            cpus: self.cpus,
            free_cpus: (0..self.cpus).collect(),
            real_memory: self.real_memory,
            free_memory: self.real_memory,
            gres: self
                .gres
                .iter()
                .map(|g| GresDev {
                    free: true,
                    ..g.clone()
                })
                .collect(),
            features: self.features.clone(),
            weight: self.weight,
            jobs: 0,
            threads: self.threads,
            ready: self.ready,
            shared: Vec::new(),
        }
    }

    /// Shared CPUs that one more job sharing up to `share` per CPU may use.
    pub fn shareable(&self, share: u32) -> u32 {
        if share <= 1 {
            return 0;
        }
        self.shared.iter().filter(|x| x.joinable(share)).count() as u32
    }
}

/// Take an allocation's resources out of a node.
pub fn apply(node: &mut NodeSnap, a: &Alloc) {
    node.free_cpus.retain(|c| !a.cpu_ids.contains(c));
    node.free_memory = node.free_memory.saturating_sub(a.mem);
    for &g in &a.gres {
        if let Some(d) = node.gres.get_mut(g) {
            d.free = false;
        }
    }
    node.jobs += 1;
}

/// [`apply`] for a job that may share its CPUs with up to `share` jobs
/// each (1: [`apply`]), expected to end at `end`: its CPUs become (or stay)
/// shared CPUs.
pub fn apply_share(node: &mut NodeSnap, a: &Alloc, share: u32, end: i64) {
    if share <= 1 {
        apply(node, a);
        return;
    }
    for &c in &a.cpu_ids {
        if let Ok(k) = node.free_cpus.binary_search(&c) {
            node.free_cpus.remove(k);
        }
        match node.shared.binary_search_by_key(&c, |x| x.id) {
            Ok(k) => {
                let x = &mut node.shared[k];
                x.jobs += 1;
                x.cap = x.cap.min(share);
                x.until = x.until.max(end);
            }
            Err(k) => node.shared.insert(
                k,
                SharedCpu {
                    id: c,
                    jobs: 1,
                    cap: share,
                    until: end,
                },
            ),
        }
    }
    node.free_memory = node.free_memory.saturating_sub(a.mem);
    for &g in &a.gres {
        if let Some(d) = node.gres.get_mut(g) {
            d.free = false;
        }
    }
    node.jobs += 1;
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_backfill;
#[cfg(test)]
mod tests_oversub;
