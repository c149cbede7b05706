//! Client requests on existing jobs: listing, cancelling, signalling, waiting.

use crate::refusal::Refusal;
use drover_proto::auth::Identity;
use drover_proto::{
    CancelRequest, CancelResponse, GetJobsRequest, GetJobsResponse, JobFilter, JobInfo, JobResult,
    JobState,
};

use crate::ctld::{Ctld, Reply};
use crate::job::Job;
use crate::jobindex::state_selected;
use crate::submit::msg;

/// A job id as a user typed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `12`: the job, or every task of array 12.
    Job(u32),
    /// `12_3`, `12_[1-3,7]`
    Tasks(u32, Vec<u32>),
}

pub fn parse_selector(s: &str) -> Option<Selector> {
    let s = s.trim();
    match s.split_once('_') {
        None => s.parse().ok().map(Selector::Job),
        Some((a, t)) => {
            let a = a.parse().ok()?;
            let t = t.trim_start_matches('[').trim_end_matches(']');
            let tasks = crate::array::parse_ranges(t);
            (!tasks.is_empty()).then_some(Selector::Tasks(a, tasks))
        }
    }
}

impl Ctld {
    /// Job `id`, when `who` owns it or is an admin: else Slurm's
    /// `Invalid job id specified` / `Access/permission denied`.
    pub fn owned_job(&self, who: &Identity, id: u32) -> Result<&Job, Refusal> {
        use crate::submit::msg;
        let job = self
            .jobs
            .get(&id)
            .ok_or_else(|| Refusal::not_found(msg::INVALID_JOB))?;
        if !self.is_admin(who) && job.rec.uid != who.uid {
            return Err(Refusal::permission_denied(msg::ACCESS));
        }
        Ok(job)
    }

    /// Job ids a selector names (split-off tasks and meta records).
    pub fn select_ids(&self, sel: &Selector) -> Vec<u32> {
        match sel {
            Selector::Job(id) => {
                let mut v: Vec<u32> = self.array_tasks.get(id).cloned().unwrap_or_default();
                if self.jobs.contains_key(id) && !v.contains(id) {
                    v.push(*id);
                }
                v.sort_unstable();
                v
            }
            Selector::Tasks(a, tasks) => {
                let mut v: Vec<u32> = self
                    .array_tasks
                    .get(a)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|id| {
                        self.jobs
                            .get(id)
                            .is_some_and(|j| tasks.contains(&j.rt().array_task_id))
                    })
                    .collect();
                if let Some(m) = self.jobs.get(a) {
                    if m.is_meta() && m.pending_tasks.iter().any(|t| tasks.contains(t)) {
                        v.push(*a);
                    }
                }
                v
            }
        }
    }

    fn filter_matches(&self, f: &JobFilter, id: u32) -> bool {
        self.jobs.get(&id).is_some_and(|j| job_matches(f, j))
    }

    /// Jobs matching a filter, by id; errors for ids that name nothing.
    fn matching(&self, f: &JobFilter) -> Result<Vec<(String, Vec<u32>)>, Refusal> {
        if f.job_ids.is_empty() {
            // The most selective index (state, user, partition) proposes;
            // every candidate is checked against the whole filter.
            let ids: Vec<u32> = match self.index.candidates(f) {
                Some(c) => c
                    .into_iter()
                    .filter(|id| self.filter_matches(f, *id))
                    .collect(),
                None => self
                    .jobs
                    .keys()
                    .copied()
                    .filter(|id| self.filter_matches(f, *id))
                    .collect(),
            };
            return Ok(vec![(String::new(), ids)]);
        }
        let mut out = Vec::new();
        for text in &f.job_ids {
            let sel =
                parse_selector(text).ok_or_else(|| Refusal::invalid_argument(msg::INVALID_JOB))?;
            let ids = self.select_ids(&sel);
            out.push((text.clone(), ids));
        }
        Ok(out)
    }

    /// squeue's query.
    pub fn get_jobs(
        &mut self,
        who: &Identity,
        req: GetJobsRequest,
    ) -> Result<GetJobsResponse, Refusal> {
        let f = req.filter.clone().unwrap_or_default();
        let mask = drover_proto::jobmask::JobMask::of(&req.fields);
        if f.job_ids.is_empty() {
            return Ok(self.list_jobs(who, &f, req.details, mask));
        }
        let groups = self.matching(&f)?;
        if !f.job_ids.is_empty() && groups.iter().all(|(_, ids)| ids.is_empty()) {
            return Err(Refusal::not_found(msg::INVALID_JOB));
        }
        let mut ids: Vec<u32> = groups.into_iter().flat_map(|(_, v)| v).collect();
        ids.sort_unstable();
        ids.dedup();
        // PrivateData=jobs: other users' jobs are left out; naming only
        // such jobs is refused, as Slurm does.
        let before = ids.len();
        let viewer = self.job_viewer(who);
        ids.retain(|id| self.jobs.get(id).is_none_or(|j| viewer.sees(j.rec.uid)));
        if !f.job_ids.is_empty() && before > 0 && ids.is_empty() {
            return Err(Refusal::permission_denied(msg::ACCESS));
        }
        let explicit = !f.job_ids.is_empty();
        let mut jobs = Vec::with_capacity(ids.len());
        for id in ids {
            if explicit
                && !self.filter_matches(
                    &JobFilter {
                        all_states: true,
                        ..f.clone()
                    },
                    id,
                )
            {
                continue;
            }
            if explicit && !f.all_states && !f.states.is_empty() && !self.filter_matches(&f, id) {
                continue;
            }
            if let Some(mut info) = self.job_info_by_id(id, req.details) {
                mask.apply(&mut info);
                jobs.push(info);
            }
        }
        Ok(GetJobsResponse {
            jobs,
            now: self.now,
        })
    }

    /// A query without job ids: one walk over the candidates (the most
    /// selective index's, or every job), each job looked up once.
    fn list_jobs(
        &mut self,
        who: &Identity,
        f: &JobFilter,
        details: bool,
        mask: drover_proto::jobmask::JobMask,
    ) -> GetJobsResponse {
        let now = self.now;
        let mut names = std::mem::take(&mut self.names);
        let mut out = Vec::new();
        self.each_listed(who, f, |c, j| {
            let mut i = crate::jobinfo::job_info(&c.cfg, &mut names, j, details, now);
            c.add_expected_start(&mut i);
            mask.apply(&mut i);
            out.push(i);
        });
        self.names = names;
        GetJobsResponse { jobs: out, now }
    }

    /// Every job a query without job ids shows `who`, in id order: the
    /// candidates of the most selective index (or every job), each checked
    /// against the whole filter and PrivateData. Both answers of the
    /// listing (records here, encoded bytes in `jobwire.rs`) walk this.
    pub(crate) fn each_listed(
        &mut self,
        who: &Identity,
        f: &JobFilter,
        mut visit: impl FnMut(&Ctld, &Job),
    ) {
        let viewer = self.job_viewer(who);
        let me: &Ctld = self;
        let mut add = |j: &Job| {
            if job_matches(f, j) && viewer.sees(j.rec.uid) {
                visit(me, j);
            }
        };
        match me.index.candidates(f) {
            Some(ids) => ids
                .iter()
                .filter_map(|id| me.jobs.get(id))
                .for_each(|j| add(j)),
            None => me.jobs.values().for_each(|j| add(j)),
        }
    }

    /// `scontrol write batch_script`: the script of a batch job, for its
    /// owner, operators and admins (Slurm's rule).
    pub fn job_script(&mut self, who: &Identity, id: u32) -> Result<Vec<u8>, Refusal> {
        let Some(job) = self.jobs.get(&id) else {
            return Err(Refusal::not_found(msg::INVALID_JOB));
        };
        let (uid, interactive, blob) = (job.rec.uid, job.spec().interactive, job.rec.script_blob);
        if uid != who.uid && !self.is_admin(who) && !self.is_operator(who) {
            return Err(Refusal::permission_denied(msg::ACCESS));
        }
        // An salloc/srun allocation has no script (Slurm: ESLURM_JOB_SCRIPT_MISSING).
        let missing = || Refusal::failed_precondition("Job script not specified");
        if interactive {
            return Err(missing());
        }
        self.blobs.get(blob).map(|b| b.to_vec()).ok_or_else(missing)
    }

    /// sdiag's answer: the counters and the current job counts.
    pub fn diag(&self, threads: u32) -> drover_proto::DiagResponse {
        let (mut pending, mut running) = (0u32, 0u32);
        for j in self.jobs.values() {
            match j.state() {
                JobState::Pending => pending += 1,
                JobState::Running | JobState::Completing => running += 1,
                _ => {}
            }
        }
        self.diag.response(self.now, pending, running, threads)
    }

    fn may_touch(&self, who: &Identity, id: u32) -> bool {
        self.is_admin(who) || self.jobs.get(&id).is_some_and(|j| j.rec.uid == who.uid)
    }

    pub fn cancel(&mut self, who: Identity, req: CancelRequest) -> Result<CancelResponse, Refusal> {
        let f = req.filter.clone().unwrap_or_default();
        let mut results = Vec::new();
        if f.job_ids.is_empty() {
            // Filter-only cancel: every matching job the caller can see;
            // another user's job is reported (Slurm's "Kill job error on
            // job id N: Access/permission denied"), not silently skipped.
            let (_, ids) = self.matching(&f)?.into_iter().next().unwrap_or_default();
            let viewer = self.job_viewer(&who);
            for id in ids {
                if self.jobs.get(&id).is_some_and(|j| !viewer.sees(j.rec.uid)) {
                    continue;
                }
                if !self.may_touch(&who, id) {
                    results.push(result(&id.to_string(), Err(msg::ACCESS)));
                    continue;
                }
                let r = self.cancel_one(&who, id, None, &req);
                results.push(result(&id.to_string(), r));
            }
            return Ok(CancelResponse { results });
        }
        for text in &f.job_ids {
            if text.contains('.') {
                // A job step (issue 6).
                let r = self.cancel_step(&who, text, req.signal);
                results.push(result(text, r));
                continue;
            }
            let Some(sel) = parse_selector(text) else {
                results.push(result(text, Err(msg::INVALID_JOB)));
                continue;
            };
            let ids = self.select_ids(&sel);
            if ids.is_empty() {
                results.push(result(text, Err(msg::INVALID_JOB)));
                continue;
            }
            let tasks = match &sel {
                Selector::Tasks(_, t) => Some(t.clone()),
                Selector::Job(_) => None,
            };
            let mut outcome = Ok(());
            for id in ids {
                if !self.may_touch(&who, id) {
                    outcome = Err(msg::ACCESS);
                    continue;
                }
                if let Err(e) = self.cancel_one(&who, id, tasks.as_deref(), &req) {
                    outcome = Err(e);
                }
            }
            results.push(result(text, outcome));
        }
        Ok(CancelResponse { results })
    }

    /// Cancel or signal one job record; `tasks` limits an array meta record.
    fn cancel_one(
        &mut self,
        who: &Identity,
        id: u32,
        tasks: Option<&[u32]>,
        req: &CancelRequest,
    ) -> Result<(), &'static str> {
        let Some(job) = self.jobs.get(&id) else {
            return Err(msg::INVALID_JOB);
        };
        let state = job.state();
        if job.is_meta() {
            if req.signal != 0 && req.signal != libc::SIGKILL as u32 {
                return Err(msg::PENDING);
            }
            let Some(tasks) = tasks else {
                self.cancel_pending(id, who.uid, "None");
                return Ok(());
            };
            // Slurm drops cancelled pending tasks from the meta record: no
            // record of them is left.
            self.drop_pending_tasks(id, tasks, who.uid);
            return Ok(());
        }
        match state {
            JobState::Pending => {
                if req.signal != 0 && req.signal != libc::SIGKILL as u32 {
                    return Err(msg::PENDING);
                }
                self.cancel_pending(id, who.uid, "None");
                Ok(())
            }
            JobState::Running | JobState::Suspended | JobState::Configuring => {
                let nodes: Vec<String> = job.rt().alloc.iter().map(|a| a.node.clone()).collect();
                let batch = job.rt().batch_host.clone();
                if req.signal != 0 || req.batch_only {
                    let sig = if req.signal == 0 {
                        libc::SIGTERM as u32
                    } else {
                        req.signal
                    };
                    // Slurm's STOPPED flag: set by SIGSTOP, cleared by SIGCONT.
                    if sig == libc::SIGSTOP as u32 || sig == libc::SIGCONT as u32 {
                        if let Some(j) = self.jobs.get_mut(&id) {
                            j.rt_mut().stopped = sig == libc::SIGSTOP as u32;
                        }
                        self.log_runtime(id);
                    }
                    // Slurm: a signal other than SIGKILL goes to the job's
                    // steps only; -b to the batch shell only; -f to both.
                    if req.batch_only {
                        self.signal_node(id, &batch, sig, true, false);
                    } else if req.full || sig == libc::SIGKILL as u32 {
                        for n in nodes {
                            self.signal_node(id, &n, sig, false, false);
                        }
                    } else {
                        self.signal_steps(id, sig);
                    }
                    return Ok(());
                }
                let j = self.jobs.get_mut(&id).expect("job present");
                j.rt_mut().cancelled = true;
                j.rt_mut().cancelled_by = who.uid;
                self.terminate(id, false);
                Ok(())
            }
            JobState::Completing => {
                if req.signal == 0 {
                    // Already being killed: repeat the kill, harmless.
                    let nodes: Vec<String> =
                        job.rt().alloc.iter().map(|a| a.node.clone()).collect();
                    for n in nodes {
                        self.signal_node(id, &n, 0, false, false);
                    }
                }
                Ok(())
            }
            _ => Err(msg::ALREADY_DONE),
        }
    }

    pub fn wait_job(&mut self, who: &Identity, job_id: u32, reply: Reply<JobInfo>) {
        if !self.may_see_job(who, job_id) {
            let _ = reply.send(Err(Refusal::permission_denied(msg::ACCESS)));
            return;
        }
        let Some(job) = self.jobs.get(&job_id) else {
            let _ = reply.send(Err(Refusal::not_found(msg::INVALID_JOB)));
            return;
        };
        if job.state().is_final() && !job.is_meta() {
            let job = job.clone();
            let info = self.job_info(&job);
            let _ = reply.send(Ok(info));
            return;
        }
        self.waiters.entry(job_id).or_default().push(reply);
    }
}

fn result(id: &str, r: Result<(), &'static str>) -> JobResult {
    JobResult {
        job_id: id.to_string(),
        ok: r.is_ok(),
        error: r.err().unwrap_or_default().to_string(),
    }
}

/// Does job `j` pass every part of `f` but its job ids?
pub(crate) fn job_matches(f: &JobFilter, j: &Job) -> bool {
    let state = j.state();
    let selected = if f.all_states {
        true
    } else if f.states.is_empty() {
        state_selected(state, &[], false)
    } else {
        f.states.contains(&(state as i32))
    };
    if !selected {
        return false;
    }
    if !f.user_ids.is_empty() && !f.user_ids.contains(&j.rec.uid) {
        return false;
    }
    let spec = j.spec();
    let part = crate::jobindex::job_partition(j);
    if !f.partitions.is_empty() && !f.partitions.iter().any(|p| part.split(',').any(|x| x == p)) {
        return false;
    }
    if !f.names.is_empty() && !f.names.contains(&spec.name) {
        return false;
    }
    if !f.accounts.is_empty() && !f.accounts.contains(&spec.account) {
        return false;
    }
    if !f.qos.is_empty() && !f.qos.contains(&spec.qos) {
        return false;
    }
    if !f.nodes.is_empty() && !j.rt().alloc.iter().any(|a| f.nodes.contains(&a.node)) {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        assert_eq!(parse_selector("12"), Some(Selector::Job(12)));
        assert_eq!(parse_selector("12_3"), Some(Selector::Tasks(12, vec![3])));
        assert_eq!(
            parse_selector("12_[1-3,7]"),
            Some(Selector::Tasks(12, vec![1, 2, 3, 7]))
        );
        assert_eq!(parse_selector("x"), None);
        assert_eq!(parse_selector("12_"), None);
    }
}
