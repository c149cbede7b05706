//! Starting a job the planner placed: its allocation taken on the nodes
//! (an array task split off its array first), its record logged, the
//! batch launch sent to its first node, and the agent's answer.

use std::time::Duration;

use drover_proto::{GresAlloc, JobState, LaunchRequest, NodeAlloc};

use crate::ctld::{Ctld, Effect};
use crate::job::{job_environment, launch_allocation, Job};
use crate::refusal::{Kind, Refusal};
use crate::sched;

impl Ctld {
    /// Take task `task` out of array meta record `meta_id` as its own job.
    /// The last task takes over the meta record's id, as in Slurm.
    pub fn split_task(&mut self, meta_id: u32, task: u32) -> Option<u32> {
        let meta = self.jobs.get_mut(&meta_id)?;
        let pos = meta.pending_tasks.iter().position(|&t| t == task)?;
        if meta.pending_tasks.len() == 1 {
            meta.pending_tasks.clear();
            let rt = meta.rt_mut();
            rt.is_array_meta = false;
            rt.array_task_id = task;
            rt.array_pending.clear();
            self.array_tasks.entry(meta_id).or_default().push(meta_id);
            return Some(meta_id);
        }
        meta.pending_tasks.remove(pos);
        // The task is the meta record less its pending tasks (spec and
        // request shared with it).
        let tasks = std::mem::take(&mut meta.pending_tasks);
        let mut task_job: Job = (**meta).clone();
        meta.pending_tasks = tasks;
        let new_id = self.alloc_job_id().ok()?;
        task_job.rec.job_id = new_id;
        if let Some(rt) = task_job.rec.runtime.as_mut() {
            rt.is_array_meta = false;
            rt.array_task_id = task;
            rt.array_pending.clear();
        }
        self.blobs.retain_ref(task_job.rec.script_blob);
        self.blobs.retain_ref(task_job.rec.env_blob);
        self.jobs.insert(new_id, Box::new(task_job));
        self.array_tasks.entry(meta_id).or_default().push(new_id);
        self.log_runtime(meta_id);
        self.log_job(new_id);
        Some(new_id)
    }

    pub(super) fn start_job(
        &mut self,
        id: u32,
        part: usize,
        allocs: &[sched::Alloc],
        nodes: &[sched::NodeSnap],
    ) {
        let id = match self.jobs.get(&id) {
            Some(j) if j.is_meta() => {
                let Some(&task) = j.pending_tasks.first() else {
                    return;
                };
                match self.split_task(id, task) {
                    Some(n) => n,
                    None => return,
                }
            }
            Some(_) => id,
            None => return,
        };
        let t = self.now;
        // In the nodes' configured order, as Slurm's node bitmap: the batch
        // script and rank 0 run on the first node of NodeList (launchers
        // take MASTER_ADDR from it), whatever order placement chose.
        let mut in_order: Vec<_> = allocs.iter().collect();
        in_order.sort_by_key(|a| a.node);
        let node_allocs: Vec<NodeAlloc> = in_order
            .into_iter()
            .map(|a| {
                let n = &self.cluster.nodes[a.node];
                let mut gres: Vec<GresAlloc> = Vec::new();
                for &g in &a.gres {
                    let Some(d) = nodes.get(a.node).and_then(|s| s.gres.get(g)) else {
                        continue;
                    };
                    match gres
                        .iter_mut()
                        .find(|x| x.name == d.name && x.r#type == d.r#type)
                    {
                        Some(x) => x.indices.push(d.index),
                        None => gres.push(GresAlloc {
                            name: d.name.clone(),
                            r#type: d.r#type.clone(),
                            indices: vec![d.index],
                            count: 0,
                        }),
                    }
                }
                NodeAlloc {
                    node: n.name().to_string(),
                    cpus: a.cpu_ids.len() as u32,
                    cpu_ids: a.cpu_ids.clone(),
                    mem_mb: a.mem,
                    gres,
                    tasks: a.tasks,
                }
            })
            .collect();
        let part_name = self.cluster.parts[part].conf.name.clone();
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let limit = self.effective_time_limit(job, Some(part));
        let share = self.cluster.share_limit(part, job.spec());
        let job = self.jobs.get_mut(&id).expect("job present");
        let rt = job.rt_mut();
        rt.state = JobState::Running as i32;
        rt.reason = "None".into();
        rt.start_time = t;
        self.diag.started += 1;
        rt.end_time = 0;
        if rt.eligible_time == 0 {
            rt.eligible_time = t;
        }
        rt.partition = part_name;
        rt.time_limit = limit;
        rt.batch_host = node_allocs
            .first()
            .map(|a| a.node.clone())
            .unwrap_or_default();
        rt.alloc = node_allocs.clone();
        rt.share = share;
        rt.launched = false;
        rt.terminating = false;
        rt.exit_code = 0;
        rt.exit_signal = 0;
        self.cluster.allocate(id, &node_allocs, share);
        // Powered-down nodes: the job waits (CONFIGURING) while they come up.
        if self.power_wait(id) {
            return;
        }
        if let Some(j) = self.jobs.get_mut(&id).filter(|j| j.spec().interactive) {
            // salloc/srun allocation: nothing to launch; steps come by srun.
            let rt = j.rt_mut();
            rt.batch_host.clear();
            rt.launched = true;
            self.log_runtime(id);
            self.mail_started(id);
            return;
        }
        self.log_runtime(id);
        self.mail_started(id);
        self.send_launch(id);
    }

    /// Send (or re-send: the agent makes it idempotent) the batch launch:
    /// the job's launch request with its script, to its batch host.
    pub fn send_launch(&mut self, id: u32) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let (node, start) = (job.rt().batch_host.clone(), job.rt().start_time);
        let script = self
            .blobs
            .get(job.rec.script_blob)
            .map(|b| b.to_vec())
            .unwrap_or_default();
        let mut req = self.job_launch_request(id);
        if let Some(spec) = req.spec.as_mut() {
            spec.script = script;
        }
        req.node = node.clone();
        self.effects.push(Effect::Launch {
            node,
            req: Box::new(req),
            start,
        });
    }

    /// The job's launch credential (environment, user, allocation), as the
    /// batch launch and every step launch carry it; without the script and
    /// the node (the batch launch adds them).
    pub fn job_launch_request(&mut self, id: u32) -> LaunchRequest {
        let Some(job) = self.jobs.get(&id) else {
            return LaunchRequest::default();
        };
        let job = job.clone();
        let mut spec = job.spec().clone();
        spec.environment = job_environment(&self.blobs, &job);
        let allocation = launch_allocation(&job);
        let info = self.job_info(&job);
        LaunchRequest {
            job_id: id,
            spec: Some(spec),
            info: Some(info),
            uid: job.rec.uid,
            gid: job.rec.gid,
            user_name: job.rec.user_name.clone(),
            groups: job.rec.groups.clone(),
            node: String::new(),
            expires: self.now + 300,
            kill_wait: self.cfg.kill_wait as u32,
            cluster_name: self.cfg.cluster_name.clone(),
            node_id: 0,
            allocation: Some(allocation),
        }
    }

    /// The answer to the launch of a job terminated (cancelled, timed out,
    /// requeued) before its agent had acknowledged that launch. The
    /// terminate may have reached the agent before the job did: once the
    /// agent has it, it is terminated again. Refused or unanswered, there
    /// is no run to wait for and the job ends here (were a run started
    /// after all, the agent's next heartbeat names it and it is killed as a
    /// stray).
    fn launch_done_terminating(&mut self, id: u32, res: Result<(), Refusal>) {
        let rt = self.jobs.get_mut(&id).expect("job present").rt_mut();
        let (node, timed_out) = (rt.batch_host.clone(), rt.timed_out);
        match res {
            Ok(()) => {
                rt.launched = true;
                self.log_runtime(id);
                self.signal_node(id, &node, 0, false, timed_out);
            }
            Err(e) => {
                tracing::debug!(
                    "job {id} ended before its launch was acknowledged ({})",
                    e.words()
                );
                self.end_unlaunched(id);
            }
        }
    }

    /// A job terminated while no agent runs it (its launch was never
    /// acknowledged): it ends now, killed, on every node.
    pub(crate) fn end_unlaunched(&mut self, id: u32) {
        let timeout = self.jobs.get(&id).is_some_and(|j| j.rt().timed_out);
        self.job_ended(
            id,
            "",
            crate::end::EndReport {
                timeout,
                exit_signal: libc::SIGKILL,
                ..Default::default()
            },
        );
    }

    /// The agent's answer to a launch of the job started at `start`.
    pub fn launch_done(&mut self, id: u32, start: i64, res: Result<(), Refusal>) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.rt().start_time != start {
            return;
        }
        if job.state() == JobState::Completing && job.rt().terminating && !job.rt().launched {
            self.launch_done_terminating(id, res);
            return;
        }
        if !matches!(job.state(), JobState::Running | JobState::Suspended) {
            return;
        }
        match res {
            Ok(()) => {
                if !job.rt().launched {
                    job.rt_mut().launched = true;
                    self.log_runtime(id);
                }
                // Suspended while it was being launched: the stop may have
                // come before the script existed.
                if self.jobs[&id].state() == JobState::Suspended {
                    self.send_suspend(id, true);
                }
            }
            Err(e)
                if !matches!(
                    e.kind(),
                    Kind::PermissionDenied
                        | Kind::Unauthenticated
                        | Kind::InvalidArgument
                        | Kind::FailedPrecondition
                        | Kind::NotFound
                        | Kind::Aborted
                ) =>
            {
                // Unreachable, or the connection broke mid-call (the agent may
                // have started the job and died before answering): try again.
                // Launch is idempotent per job and run on the agent, and
                // SlurmdTimeout takes the node down if it stays away.
                tracing::debug!("launch of job {id} failed ({}), retrying", e.words());
                self.later(
                    Duration::from_secs(1),
                    Box::new(move |c: &mut Ctld| {
                        if c.jobs.get(&id).is_some_and(|j| {
                            matches!(j.state(), JobState::Running | JobState::Suspended)
                                && !j.rt().launched
                                && j.rt().start_time == start
                        }) {
                            c.send_launch(id);
                        }
                    }),
                );
            }
            Err(e) => {
                tracing::warn!("launch of job {id} refused by its node: {}", e.words());
                // ABORTED: the node cannot run jobs as configured (it says
                // why): drain it with that and requeue the job.
                let drain_reason = if e.kind() == Kind::Aborted {
                    e.words().to_string()
                } else {
                    String::new()
                };
                let node = job.rt().batch_host.clone();
                self.job_ended(
                    id,
                    &node,
                    crate::end::EndReport {
                        exit_code: 1,
                        failure: format!("launch failed: {}", e.words()),
                        launch_failed: true,
                        drain_reason,
                        ..Default::default()
                    },
                );
            }
        }
    }
}
