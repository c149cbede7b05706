//! `scontrol hold/release/requeue/update` on jobs and `update NodeName=`.

use crate::refusal::Refusal;
use drover_proto::auth::Identity;
use drover_proto::{
    JobResult, JobState, UpdateJobRequest, UpdateJobResponse, UpdateNodeRequest,
    UpdateNodeResponse, INFINITE,
};

use crate::control::parse_selector;
use crate::ctld::Ctld;
use crate::submit::{base_priority, msg};

impl Ctld {
    pub fn update_job(
        &mut self,
        who: Identity,
        req: UpdateJobRequest,
    ) -> Result<UpdateJobResponse, Refusal> {
        let mut results = Vec::new();
        // Operators may suspend/resume anyone's job (and only they may).
        let operator = matches!(
            req.action.to_ascii_lowercase().as_str(),
            "suspend" | "resume"
        ) && self.is_operator(&who);
        for text in &req.job_ids {
            let sel = parse_selector(text);
            if let Some(sel) = &sel {
                // Pending tasks named one by one get records of their own.
                let admin = self.is_admin(&who) || operator;
                self.split_for_update(sel, |j| admin || j.rec.uid == who.uid);
            }
            let ids = sel.map(|s| self.select_ids(&s)).unwrap_or_default();
            if ids.is_empty() {
                results.push(JobResult {
                    job_id: text.clone(),
                    ok: false,
                    error: msg::INVALID_JOB.into(),
                });
                continue;
            }
            let mut err: Option<String> = None;
            for id in ids {
                let r = if !self.is_admin(&who)
                    && !operator
                    && self.jobs.get(&id).is_some_and(|j| j.rec.uid != who.uid)
                {
                    Err(msg::ACCESS.to_string())
                } else if req.action.is_empty() {
                    self.update_fields(&who, id, &req)
                } else {
                    let special_exit = req.fields.iter().any(|(k, v)| {
                        k.eq_ignore_ascii_case("state") && v.eq_ignore_ascii_case("specialexit")
                    });
                    self.job_action(&who, id, &req.action, special_exit)
                };
                if let Err(e) = r {
                    err = Some(e);
                }
                // What its priority is computed from may have changed.
                self.sched.factors.remove(&id);
            }
            results.push(JobResult {
                job_id: text.clone(),
                ok: err.is_none(),
                error: err.unwrap_or_default(),
            });
        }
        self.sched_needed = true;
        Ok(UpdateJobResponse { results })
    }

    /// hold, release, requeue ... of one job; `special_exit`: requeuehold
    /// `State=SpecialExit` (held as [`crate::job::HOLD_SPECIAL_EXIT`]).
    fn job_action(
        &mut self,
        who: &Identity,
        id: u32,
        action: &str,
        special_exit: bool,
    ) -> Result<(), String> {
        let admin = self.is_admin(who);
        let job = self.jobs.get(&id).ok_or(msg::INVALID_JOB)?;
        let state = job.state();
        match action.to_ascii_lowercase().as_str() {
            "hold" | "uhold" => {
                if state != JobState::Pending {
                    return Err(msg::NOT_PENDING.into());
                }
                let level = if action.eq_ignore_ascii_case("hold") && admin {
                    2
                } else {
                    1
                };
                // A held job is planned no more: StartTime=Unknown.
                self.sched.expected.remove(&id);
                let j = self.jobs.get_mut(&id).expect("present");
                j.rt_mut().hold = level;
                j.rt_mut().reason = if level == 2 {
                    "JobHeldAdmin"
                } else {
                    "JobHeldUser"
                }
                .into();
                self.log_runtime(id);
                Ok(())
            }
            "release" => {
                if state != JobState::Pending {
                    return Err(msg::NOT_PENDING.into());
                }
                if job.rt().hold == 2 && !admin {
                    return Err(msg::ACCESS.into());
                }
                let j = self.jobs.get_mut(&id).expect("present");
                j.rt_mut().hold = 0;
                j.rt_mut().reason = "None".into();
                self.log_runtime(id);
                Ok(())
            }
            "requeue" | "requeuehold" => {
                let hold = action.eq_ignore_ascii_case("requeuehold");
                let level = if special_exit {
                    crate::job::HOLD_SPECIAL_EXIT
                } else {
                    1
                };
                match state {
                    JobState::Running | JobState::Suspended => {
                        // Slurm: a suspended job that is requeued is held.
                        let was_suspended = state == JobState::Suspended;
                        let j = self.jobs.get_mut(&id).expect("present");
                        j.rt_mut().requeue_pending = true;
                        if hold || was_suspended {
                            j.rt_mut().hold = if hold { level } else { 1 };
                        }
                        self.terminate(id, false);
                        Ok(())
                    }
                    JobState::Pending | JobState::Completing => Err(msg::PENDING.into()),
                    _ if job.is_meta() => Err(msg::PENDING.into()),
                    _ => {
                        // A finished job still in memory goes back to the queue.
                        let j = self.jobs.get_mut(&id).expect("present");
                        let rt = j.rt_mut();
                        crate::job::reset_for_requeue(rt);
                        if hold {
                            rt.hold = level;
                        }
                        self.log_runtime(id);
                        Ok(())
                    }
                }
            }
            "suspend" | "resume" => {
                // Slurm: root, SlurmUser and accounting Operators and
                // Administrators only (not even the job's owner).
                if !admin && !self.is_operator(who) {
                    return Err(msg::ACCESS.into());
                }
                if action.eq_ignore_ascii_case("suspend") {
                    self.suspend_job(id, None)
                } else {
                    self.resume_job(id)
                }
            }
            "top" => Ok(()),
            other => Err(format!("Invalid job update action: {other}")),
        }
    }

    fn update_fields(
        &mut self,
        who: &Identity,
        id: u32,
        req: &UpdateJobRequest,
    ) -> Result<(), String> {
        let admin = self.is_admin(who);
        let job = self.jobs.get(&id).ok_or(msg::INVALID_JOB)?;
        let pending = job.state() == JobState::Pending;
        let mut spec = job.spec().clone();
        let mut rt = job.rt().clone();
        let mut dep = job.dep.clone();
        for (k, v) in &req.fields {
            let need_pending = || -> Result<(), String> {
                if pending {
                    Ok(())
                } else {
                    Err(msg::NOT_PENDING.into())
                }
            };
            match k.to_ascii_lowercase().as_str() {
                "timelimit" => {
                    let (rel, text) = match v.strip_prefix('+') {
                        Some(t) => (1i64, t),
                        None => match v.strip_prefix('-') {
                            Some(t) => (-1, t),
                            None => (0, v.as_str()),
                        },
                    };
                    let m = drover_conf::units::parse_time_minutes(text)
                        .map_err(|_| msg::TIME_LIMIT.to_string())?
                        .unwrap_or(INFINITE);
                    let cur = if rt.time_limit == 0 {
                        INFINITE
                    } else {
                        rt.time_limit
                    };
                    let new = match rel {
                        0 => m,
                        1 => cur.saturating_add(m),
                        _ => cur.saturating_sub(m),
                    };
                    if !admin && new > cur {
                        return Err(msg::ACCESS.into());
                    }
                    spec.time_limit = new;
                    rt.time_limit = new;
                }
                "partition" => {
                    need_pending()?;
                    let idx = self.cluster.part_idx(v).ok_or(msg::INVALID_PARTITION)?;
                    spec.partition = v.clone();
                    rt.partition = self.cluster.parts[idx].conf.name.clone();
                }
                "name" | "jobname" => spec.name = v.clone(),
                "comment" => spec.comment = v.clone(),
                "priority" => {
                    if !admin {
                        return Err(msg::ACCESS.into());
                    }
                    let p: u32 = v
                        .parse()
                        .map_err(|_| format!("Invalid Priority value: {v}"))?;
                    spec.priority = p;
                    rt.priority = base_priority(id, spec.nice, p);
                }
                "nice" => {
                    let n: i32 = v.parse().map_err(|_| format!("Invalid Nice value: {v}"))?;
                    if n < 0 && !admin {
                        return Err(msg::ACCESS.into());
                    }
                    spec.nice = n;
                    rt.priority = base_priority(id, n, spec.priority);
                }
                "numnodes" | "minnodes" => {
                    need_pending()?;
                    let (a, b) = v.split_once('-').unwrap_or((v, v));
                    spec.min_nodes = a.parse().map_err(|_| msg::NODE_COUNT.to_string())?;
                    spec.max_nodes = b.parse().map_err(|_| msg::NODE_COUNT.to_string())?;
                }
                "numcpus" | "mincpusnode" => {
                    need_pending()?;
                    let n: u32 = v.parse().map_err(|_| format!("Invalid {k} value: {v}"))?;
                    if k.eq_ignore_ascii_case("numcpus") {
                        spec.ntasks = n.max(1);
                        spec.cpus_per_task = 1;
                    } else {
                        spec.min_cpus_per_node = n;
                    }
                }
                "numtasks" => {
                    need_pending()?;
                    spec.ntasks = v
                        .parse()
                        .map_err(|_| format!("Invalid NumTasks value: {v}"))?;
                }
                "minmemorynode" | "minmemorycpu" => {
                    need_pending()?;
                    let mb = drover_conf::units::parse_mem_mb(v)
                        .map_err(|_| format!("Invalid {k} value: {v}"))?;
                    if k.eq_ignore_ascii_case("minmemorynode") {
                        spec.mem_per_node_mb = mb;
                        spec.mem_per_cpu_mb = 0;
                    } else {
                        spec.mem_per_cpu_mb = mb;
                        spec.mem_per_node_mb = 0;
                    }
                }
                "features" | "constraint" => {
                    need_pending()?;
                    crate::sched::parse_constraint(v)?;
                    spec.constraint = v.clone();
                }
                "dependency" => {
                    need_pending()?;
                    dep = crate::deps::parse(v)?;
                    spec.dependency = v.clone();
                    // A new dependency: nothing of it decided yet.
                    rt.dep_state.clear();
                }
                "excnodelist" => {
                    need_pending()?;
                    spec.exclude = v.clone();
                }
                "reqnodelist" | "nodelist" => {
                    need_pending()?;
                    spec.nodelist = v.clone();
                }
                "starttime" | "begintime" => {
                    need_pending()?;
                    spec.begin_time = parse_start_time(v, self.now)?;
                }
                "requeue" => spec.requeue = v == "1" || v.eq_ignore_ascii_case("yes"),
                "arraytaskthrottle" => {
                    rt.array_max_running = v
                        .parse()
                        .map_err(|_| format!("Invalid ArrayTaskThrottle value: {v}"))?;
                }
                "account" => {
                    need_pending()?;
                    spec.account = v.clone();
                }
                "qos" => {
                    need_pending()?;
                    spec.qos = v.clone();
                }
                "workdir" => {
                    need_pending()?;
                    spec.work_dir = v.clone();
                }
                "stdout" => spec.std_out = v.clone(),
                "stderr" => spec.std_err = v.clone(),
                "gres" | "tresperNode" | "tres-per-node" | "trespernode" => {
                    need_pending()?;
                    crate::request::gres_requests(v)?;
                    spec.gres = v.trim_start_matches("gres/").to_string();
                }
                "exclusive" | "oversubscribe" => {
                    need_pending()?;
                    let yes = v != "0" && !v.eq_ignore_ascii_case("no");
                    spec.exclusive = k.eq_ignore_ascii_case("exclusive") && yes;
                    if k.eq_ignore_ascii_case("oversubscribe") {
                        spec.oversubscribe = yes;
                    }
                }
                other => return Err(format!("Update of {other} is not supported")),
            }
        }
        crate::submit::check_bounds(&spec)?;
        self.check_sizes(&spec)?;
        // The new request must still be possible somewhere; it is resolved
        // again where it first is, as at submit.
        let mut resolved = None;
        if pending {
            let parts = self
                .resolve_partitions(&spec, who)
                .map_err(|e| e.words().to_string())?;
            // The same check as at submit, so an update cannot make a job
            // that could never run.
            let mut first_err = msg::NODE_CONFIG;
            resolved = parts.iter().find_map(|&p| match self.feasible(&spec, p) {
                Ok(r) => Some(r),
                Err(e) => {
                    first_err = e;
                    None
                }
            });
            if resolved.is_none() {
                return Err(first_err.into());
            }
        }
        let j = self.jobs.get_mut(&id).expect("present");
        j.set_spec(spec);
        j.rec.runtime = Some(rt);
        j.dep = dep;
        if let Some(r) = resolved {
            self.set_request(id, r);
        }
        self.log_job(id);
        Ok(())
    }

    pub fn update_node(
        &mut self,
        who: Identity,
        req: UpdateNodeRequest,
    ) -> Result<UpdateNodeResponse, Refusal> {
        if !self.is_admin(&who) {
            return Err(Refusal::permission_denied(msg::ACCESS));
        }
        let state = req.state.to_ascii_uppercase();
        if matches!(state.as_str(), "DRAIN" | "DOWN") && req.reason.trim().is_empty() {
            return Err(Refusal::invalid_argument(
                "You must specify a reason when DOWNING or DRAINING a node. Request denied",
            ));
        }
        let mut errors = Vec::new();
        let t = self.now;
        for name in &req.names {
            let Some(i) = self.cluster.node_idx(name) else {
                errors.push(format!("Invalid node name specified: {name}"));
                continue;
            };
            match state.as_str() {
                "DRAIN" => {
                    let n = &mut self.cluster.nodes[i];
                    n.drain = true;
                    n.reason = req.reason.clone();
                    n.reason_uid = who.uid;
                    n.reason_time = t;
                }
                "DOWN" => {
                    let n = &mut self.cluster.nodes[i];
                    n.reason = req.reason.clone();
                    n.reason_uid = who.uid;
                    n.reason_time = t;
                    let jobs: Vec<u32> = n.jobs.iter().copied().collect();
                    n.down = true;
                    n.down_not_responding = false;
                    for id in jobs {
                        let name = name.clone();
                        self.signal_node(id, &name, 0, false, false);
                        self.job_ended(
                            id,
                            &name,
                            crate::end::EndReport {
                                node_fail: true,
                                failure: format!("node {name} set DOWN"),
                                ..Default::default()
                            },
                        );
                    }
                }
                "RESUME" | "IDLE" | "UNDRAIN" => {
                    let n = &mut self.cluster.nodes[i];
                    n.drain = false;
                    if state != "UNDRAIN" {
                        n.down = false;
                        n.down_not_responding = false;
                        // Counts as word from the node until its next heartbeat.
                        n.last_seen = t;
                    }
                    n.reason.clear();
                    n.reason_uid = 0;
                    n.reason_time = 0;
                }
                "POWER_DOWN" | "POWER_DOWN_ASAP" | "POWER_DOWN_FORCE" | "POWER_UP" => {
                    if let Err(e) = self.power_update(i, &state) {
                        errors.push(e);
                        continue;
                    }
                }
                "" => {}
                other => {
                    errors.push(format!("Invalid node state specified: {other}"));
                    continue;
                }
            }
            for (k, v) in &req.fields {
                if k.eq_ignore_ascii_case("weight") {
                    match v.parse() {
                        Ok(w) => self.cluster.nodes[i].conf.weight = w,
                        Err(_) => errors.push(format!("Invalid weight: {v}")),
                    }
                } else if k.eq_ignore_ascii_case("features")
                    || k.eq_ignore_ascii_case("availablefeatures")
                {
                    self.cluster.nodes[i].conf.features =
                        v.split(',').map(str::to_string).collect();
                } else if k.eq_ignore_ascii_case("reason") {
                    self.cluster.nodes[i].reason = v.clone();
                } else {
                    errors.push(format!("Update of {k} is not supported"));
                }
            }
            self.cluster.node_conf_changed();
            self.log_node(i);
        }
        self.sched_needed = true;
        Ok(UpdateNodeResponse { errors })
    }
}

/// `StartTime=` for scontrol update: unix seconds, `now`, `now+N[units]`, or
/// `YYYY-MM-DDTHH:MM[:SS]` read as UTC-less local time by the client (the
/// client converts); here numbers and `now` forms.
fn parse_start_time(v: &str, t: i64) -> Result<i64, String> {
    let bad = || format!("Invalid StartTime value: {v}");
    if v.eq_ignore_ascii_case("now") {
        return Ok(t);
    }
    if let Some(rest) = v.strip_prefix("now+") {
        let secs = drover_conf::datetime::parse_offset(rest).ok_or_else(bad)?;
        return t.checked_add(secs).ok_or_else(bad);
    }
    v.parse::<i64>().map_err(|_| bad())
}
