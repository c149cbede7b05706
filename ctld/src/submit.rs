//! Submission: validate against partitions and the cluster's capacity (a
//! request that could never run is refused now, with Slurm's wording), assign
//! the id, log the job, answer once it is durable.

use std::collections::HashMap;
use std::sync::Arc;

use crate::refusal::Refusal;
use drover_proto::auth::Identity;
use drover_proto::state::{JobRecord, JobRuntime, ResolvedRequest};
use drover_proto::{JobSpec, JobState, SubmitResponse, INFINITE};

use crate::ctld::{Ctld, Reply};
use crate::job::{env_to_blob, Job};
use crate::sched::Request;

/// Slurm's texts for the refusals clients and scripts look for.
pub mod msg {
    pub const INVALID_PARTITION: &str = "Invalid partition name specified";
    pub const NO_DEFAULT_PARTITION: &str = "No partition specified or system default partition";
    pub const NODE_CONFIG: &str = "Requested node configuration is not available";
    pub const TIME_LIMIT: &str = "Requested time limit is invalid (missing or exceeds some limit)";
    pub const GROUP: &str = "User's group not permitted to use this partition";
    pub const ACCOUNT: &str = "Invalid account or account/partition combination specified";
    pub const NODE_COUNT: &str = "Node count specification invalid";
    pub const DEPENDENCY: &str = "Job dependency problem";
    pub const INVALID_JOB: &str = "Invalid job id specified";
    pub const ACCESS: &str = "Access/permission denied";
    pub const FEATURE: &str = "Invalid feature specification";
    pub const TOO_MANY_JOBS: &str = "Slurm temporarily unable to accept job, sleeping and retrying";
    pub const ALREADY_DONE: &str = "Job/step already completing or completed";
    pub const NOT_PENDING: &str = "Job is no longer pending execution";
    pub const PENDING: &str = "Job is pending execution";
    /// Slurm's ESLURM_PARTITION_NOT_AVAIL: submitting to an INACTIVE or
    /// DRAIN partition.
    pub const INACTIVE: &str = "Required partition not available (inactive or drain)";
    pub const SCRIPT: &str = "Batch script is empty!";
}

fn invalid(m: &str) -> Refusal {
    Refusal::invalid_argument(m)
}

/// Refuse counts so large that no cluster has them (and that would overflow
/// the arithmetic of placement): every product of them stays in range.
pub fn check_bounds(spec: &JobSpec) -> Result<(), &'static str> {
    let within = |v: u32, max: u32| v <= max;
    let ok = within(spec.ntasks, 1 << 20)
        && within(spec.cpus_per_task, 1 << 10)
        && within(spec.min_nodes, 1 << 16)
        && within(spec.max_nodes, 1 << 16)
        && within(spec.ntasks_per_node, 1 << 12)
        && within(spec.min_cpus_per_node, 1 << 12)
        && within(spec.gpus, 1 << 12)
        && within(spec.gpus_per_node, 1 << 12)
        && within(spec.gpus_per_task, 1 << 8)
        && within(spec.cpus_per_gpu, 1 << 10)
        && within(spec.ntasks_per_gpu, 1 << 12);
    if !ok {
        return Err(msg::NODE_CONFIG);
    }
    let mem_ok = [
        spec.mem_per_node_mb,
        spec.mem_per_cpu_mb,
        spec.mem_per_gpu_mb,
    ]
    .iter()
    .all(|m| *m <= 1 << 30);
    if !mem_ok {
        return Err("Memory required by task is not available");
    }
    if spec.gres.len() > 4096 || spec.constraint.len() > 4096 || spec.nodelist.len() > 65536 {
        return Err(msg::NODE_CONFIG);
    }
    Ok(())
}

/// Base priority, Slurm's priority/basic: decreasing with submission order.
pub fn base_priority(job_id: u32, nice: i32, admin: u32) -> u32 {
    if admin > 0 {
        return admin;
    }
    let p = i64::from(0xFFFF_0000u32.saturating_sub(job_id)) - i64::from(nice);
    p.clamp(1, i64::from(u32::MAX - 1)) as u32
}

impl Ctld {
    /// Every user-set field within its size limit (`fieldlimits`), the
    /// script within `SchedulerParameters=max_script_size`.
    pub fn check_sizes(&self, spec: &JobSpec) -> Result<(), String> {
        let max_script = self.cfg.sched_params().max_script_size as usize;
        crate::fieldlimits::check_sizes(spec, max_script)
    }

    /// Refuse at submit what breaks a partition limit. Drover's default is
    /// Slurm's `EnforcePartLimits=ALL`; only an explicit `NO` lets such jobs pend.
    pub fn enforce_part_limits(&self) -> bool {
        self.cfg
            .get("EnforcePartLimits")
            .is_none_or(|v| !v.eq_ignore_ascii_case("NO"))
    }

    /// Partitions a spec names (or the default), after access checks.
    pub fn resolve_partitions(
        &self,
        spec: &JobSpec,
        who: &Identity,
    ) -> Result<Vec<usize>, Refusal> {
        let names: Vec<&str> = spec
            .partition
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let idx: Vec<usize> = if names.is_empty() {
            vec![self
                .cluster
                .default_part
                .ok_or_else(|| invalid(msg::NO_DEFAULT_PARTITION))?]
        } else {
            names
                .iter()
                .map(|n| {
                    self.cluster
                        .part_idx(n)
                        .ok_or_else(|| invalid(msg::INVALID_PARTITION))
                })
                .collect::<Result<_, _>>()?
        };
        let admin = self.is_admin(who);
        let mut allowed = Vec::new();
        let mut err = msg::GROUP;
        for i in idx {
            let p = &self.cluster.parts[i];
            if !p.accepts_jobs() {
                err = msg::INACTIVE;
                continue;
            }
            if !admin {
                if p.conf.root_only {
                    err = msg::ACCESS;
                    continue;
                }
                if let Some(gids) = &p.allow_gids {
                    let ok = gids.contains(&who.gid) || who.groups.iter().any(|g| gids.contains(g));
                    if !ok {
                        err = msg::GROUP;
                        continue;
                    }
                }
                if let Some(accts) = &p.conf.allow_accounts {
                    if !accts.iter().any(|a| a == &spec.account) {
                        err = msg::ACCOUNT;
                        continue;
                    }
                }
            }
            allowed.push(i);
        }
        if allowed.is_empty() {
            return Err(invalid(err));
        }
        Ok(allowed)
    }

    /// Effective time limit in a partition, or the refusal.
    fn time_limit_for(&self, spec: &JobSpec, part: usize) -> Result<u32, &'static str> {
        let p = &self.cluster.parts[part].conf;
        let max = p.max_time_min.unwrap_or(INFINITE);
        let limit = if spec.time_limit != 0 {
            spec.time_limit
        } else {
            p.default_time_min.unwrap_or(max)
        };
        if self.enforce_part_limits() && limit > max {
            return Err(msg::TIME_LIMIT);
        }
        if spec.time_min != 0 && spec.time_min != INFINITE && spec.time_min > limit {
            return Err(msg::TIME_LIMIT);
        }
        Ok(limit)
    }

    /// `spec` resolved against partition `part`'s memory defaults and
    /// maxima (`None`: the cluster's), see `request.rs`.
    pub fn resolve_request(
        &self,
        spec: &JobSpec,
        part: Option<usize>,
    ) -> Result<ResolvedRequest, &'static str> {
        let part = part.and_then(|p| self.cluster.parts.get(p));
        let nodes = &self.cluster.nodes;
        let node_cpus = || match part {
            Some(p) => p.nodes.iter().map(|&i| nodes[i].conf.cpus).collect(),
            None => nodes.iter().map(|n| n.conf.cpus).collect(),
        };
        crate::request::resolve_with(spec, part.map(|p| &p.conf), &self.cfg, &node_cpus)
    }

    /// A resolved request in the scheduler's form for the current nodes.
    pub fn sched_request(&self, r: &ResolvedRequest) -> Result<Request, &'static str> {
        crate::request::to_sched(r, |n| self.cluster.node_idx(n))
    }

    /// The partition a job's request is resolved against: the first of
    /// those it names that exists.
    pub fn defaults_partition(&self, spec: &JobSpec) -> Option<usize> {
        spec.partition
            .split(',')
            .find_map(|p| self.cluster.part_idx(p.trim()))
    }

    /// Store a job's resolved request and its scheduler form.
    pub fn set_request(&mut self, id: u32, r: ResolvedRequest) {
        let r = self.shared.requests.intern(r);
        self.set_request_arc(id, r, None);
    }

    /// `set_request` with the shared request; `sched` is its scheduler
    /// form when already made for this configuration (recovery: once per
    /// distinct request).
    fn set_request_arc(
        &mut self,
        id: u32,
        r: Arc<ResolvedRequest>,
        sched: Option<Option<Arc<Request>>>,
    ) -> Option<Arc<Request>> {
        let sched = sched.unwrap_or_else(|| {
            self.sched_request(&r)
                .ok()
                .map(|q| self.shared.sched.intern(q))
        });
        if let Some(job) = self.jobs.get_mut(&id) {
            job.set_request_arc(Some(r));
            job.sched_req = sched.clone();
        }
        sched
    }

    /// After recovery or a reconfiguration: resolve the requests of records
    /// that have none (written by older versions) and remake every job's
    /// scheduler form for the current node indices.
    pub fn refresh_requests(&mut self) {
        let ids: Vec<u32> = self.jobs.keys().copied().collect();
        // Scheduler forms made so far, by shared request.
        let mut made: HashMap<*const ResolvedRequest, Option<Arc<Request>>> = HashMap::new();
        for id in ids {
            let job = &self.jobs[&id];
            let r = match job.request_arc() {
                Some(r) => Ok(self.shared.requests.intern_arc(r.clone())),
                None => self
                    .resolve_request(job.spec(), self.defaults_partition(job.spec()))
                    .map(|r| self.shared.requests.intern(r)),
            };
            match r {
                Ok(r) => {
                    let key = Arc::as_ptr(&r);
                    let known = made.get(&key).cloned();
                    let sched = self.set_request_arc(id, r, known);
                    made.insert(key, sched);
                }
                Err(e) => {
                    tracing::warn!(
                        "job {id}: its request cannot be resolved ({e}); it will not start"
                    );
                    if let Some(j) = self.jobs.get_mut(&id) {
                        j.sched_req = None;
                    }
                }
            }
        }
    }

    /// Could the job ever run in this partition (all nodes empty)? The
    /// request resolved there, if so.
    pub(crate) fn feasible(
        &self,
        spec: &JobSpec,
        part: usize,
    ) -> Result<ResolvedRequest, &'static str> {
        let p = &self.cluster.parts[part];
        if let Some(max) = p.conf.max_nodes {
            if spec.min_nodes > max && self.enforce_part_limits() {
                return Err(msg::NODE_COUNT);
            }
        }
        let resolved = self.resolve_request(spec, Some(part))?;
        let req = self.sched_request(&resolved)?;
        if let Some(c) = &req.constraint {
            let known = |f: &str| {
                self.cluster
                    .nodes
                    .iter()
                    .any(|n| n.conf.features.iter().any(|x| x == f))
            };
            if c.names().any(|f| !known(f)) {
                return Err(msg::FEATURE);
            }
        }
        if !self.cluster.fits_pristine(&req, part) {
            return Err(msg::NODE_CONFIG);
        }
        Ok(resolved)
    }

    pub fn submit(&mut self, who: Identity, mut spec: JobSpec, reply: Reply<SubmitResponse>) {
        match self.validate_and_create(&who, &mut spec) {
            Ok(resp) => {
                self.diag.submitted += 1;
                self.sched_needed = true;
                self.reply_durable(reply, Ok(resp));
            }
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    fn validate_and_create(
        &mut self,
        who: &Identity,
        spec: &mut JobSpec,
    ) -> Result<SubmitResponse, Refusal> {
        if spec.script.is_empty() && !spec.interactive {
            return Err(invalid(msg::SCRIPT));
        }
        check_bounds(spec).map_err(invalid)?;
        self.check_sizes(spec).map_err(|e| {
            tracing::info!("submit by uid {} refused: {e}", who.uid);
            invalid(&e)
        })?;
        let live = self.jobs.len() as u64;
        if live >= u64::from(self.cfg.max_job_count.max(1)) {
            return Err(Refusal::resource_exhausted(msg::TOO_MANY_JOBS));
        }
        // Limits are checked on the request as resolved in the partition
        // that supplies its defaults; a request that cannot be resolved is
        // refused below, with the reason.
        let want = self
            .resolve_request(
                spec,
                self.defaults_partition(spec).or(self.cluster.default_part),
            )
            .map(|r| crate::request::tres(&r))
            .unwrap_or_default();
        self.acct_submit_check(who, spec, &want)?;
        let parts = self.resolve_partitions(spec, who)?;
        self.check_reservation(spec, who)?;
        if !self.is_admin(who) && (spec.priority > 0 || spec.nice < 0) {
            return Err(Refusal::permission_denied(msg::ACCESS));
        }
        // At least one named partition must be able to run it.
        let mut first_err = None;
        let mut usable = Vec::new();
        for &p in &parts {
            match self
                .time_limit_for(spec, p)
                .and_then(|t| self.feasible(spec, p).map(|r| (t, r)))
            {
                Ok((t, r)) => usable.push((p, t, r)),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        let Some((part0, limit0, resolved)) = usable.first().cloned() else {
            return Err(invalid(first_err.unwrap_or(msg::NODE_CONFIG)));
        };
        let array = if spec.array.trim().is_empty() {
            None
        } else {
            Some(
                crate::array::parse(&spec.array, self.cfg.max_array_size)
                    .map_err(|e| invalid(&e))?,
            )
        };
        let dep = crate::deps::parse(&spec.dependency).map_err(|e| invalid(&e))?;
        if let Some(d) = &dep {
            for c in &d.conds {
                if let Some((id, _)) = c.job {
                    if !self.jobs.contains_key(&id) && !self.array_tasks.contains_key(&id) {
                        return Err(invalid(msg::DEPENDENCY));
                    }
                }
            }
        }
        if spec.name.is_empty() {
            spec.name = "sbatch".into();
        }
        if spec.partition.is_empty() {
            spec.partition = self.cluster.parts[part0].conf.name.clone();
        } else {
            spec.partition = usable
                .iter()
                .map(|(p, _, _)| self.cluster.parts[*p].conf.name.clone())
                .collect::<Vec<_>>()
                .join(",");
        }
        if spec.submit_host.is_empty() {
            spec.submit_host = who.host.clone();
        }

        let id = self.alloc_job_id()?;
        let t = self.now;
        let script = std::mem::take(&mut spec.script);
        let env = env_to_blob(&std::mem::take(&mut spec.environment));
        let (script_blob, _) = self.blobs.add(&script);
        let (env_blob, _) = self.blobs.add(&env);
        let hold = u32::from(spec.hold);
        let mut rt = JobRuntime {
            state: JobState::Pending as i32,
            reason: if hold != 0 {
                "JobHeldUser".into()
            } else {
                "None".into()
            },
            priority: base_priority(id, spec.nice, spec.priority),
            submit_time: t,
            hold,
            partition: if usable.len() == 1 {
                self.cluster.parts[part0].conf.name.clone()
            } else {
                String::new()
            },
            time_limit: limit0,
            ..Default::default()
        };
        let mut pending_tasks = Vec::new();
        if let Some(a) = &array {
            rt.is_array_meta = true;
            rt.array_job_id = id;
            rt.array_max_running = a.max_running;
            pending_tasks = a.tasks.clone();
            rt.array_pending = crate::array::ranges(&pending_tasks);
        }
        let rec = JobRecord {
            job_id: id,
            uid: who.uid,
            gid: who.gid,
            user_name: self.names.user(who.uid).to_string(),
            groups: who.groups.clone(),
            spec: Some(Box::new(std::mem::take(spec))),
            runtime: Some(rt),
            script_blob,
            env_blob,
            request: None,
        };
        let mut job = Job::from_record(rec);
        job.dep = dep;
        job.pending_tasks = pending_tasks;
        self.jobs.insert(id, Box::new(job));
        self.set_request(id, resolved);
        self.log_job(id);
        tracing::debug!("job {id} submitted by uid {}", who.uid);
        Ok(SubmitResponse {
            job_id: id,
            warnings: Vec::new(),
        })
    }
}
