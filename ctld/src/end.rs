//! How jobs end: reports from agents, cancellation of pending jobs, node
//! failure, time limits, requeue, and forgetting old jobs (MinJobAge).

use drover_proto::state::wal_record::Kind;
use drover_proto::state::WalRecord;
use drover_proto::{JobState, SignalJobRequest};

use crate::ctld::Ctld;
use crate::ctld::Effect;

/// What a node said about a job's end.
#[derive(Debug, Default, Clone)]
pub struct EndReport {
    pub exit_code: i32,
    pub exit_signal: i32,
    pub oom: bool,
    pub timeout: bool,
    pub cpu_time_usec: u64,
    pub max_rss_kb: u64,
    pub failure: String,
    pub launch_failed: bool,
    pub node_fail: bool,
    /// The node's Prolog failed: drain the node, requeue the job held.
    pub prolog_failed: bool,
    /// The node's Epilog failed: drain the node.
    pub epilog_failed: bool,
    /// The node could not set the job up: drain it with this reason and
    /// requeue the job (it is not the job's fault).
    pub drain_reason: String,
    pub gpu_util_pct: u32,
    pub gpu_mem_max_mb: u64,
    /// What the node found about the failure (a GPU out-of-memory error at
    /// the end of the job's stderr): the job's SystemComment.
    pub system_comment: String,
}

impl Ctld {
    /// A running job ended on `node`. Idempotent: a repeat is ignored.
    pub fn job_ended(&mut self, id: u32, node: &str, r: EndReport) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        if !matches!(
            job.state(),
            JobState::Running | JobState::Completing | JobState::Suspended | JobState::Configuring
        ) {
            return;
        }
        if !job.rt().alloc.iter().any(|a| a.node == node) && !node.is_empty() {
            return;
        }
        let t = self.now;
        if matches!(job.state(), JobState::Running | JobState::Completing) {
            self.charge_ended(id, t);
        }
        let job = self.jobs.get(&id).expect("job present");
        let allocs = job.rt().alloc.clone();
        // A job suspended by preemption holds only its memory (its CPUs
        // and GPUs are lent and may be someone else's now).
        let held = crate::suspend::held_allocs(job.rt());
        self.lenders.remove(&id);
        self.cluster.release(id, &held, t);
        if r.prolog_failed || r.epilog_failed {
            let why = if r.prolog_failed {
                "Prolog error"
            } else {
                "Epilog error"
            };
            tracing::warn!("job {id}: {why} on {node}: draining the node");
            self.drain_node(node, why, t);
        }
        if !r.drain_reason.is_empty() {
            tracing::warn!("job {id}: {} on {node}: draining the node", r.drain_reason);
            self.drain_node(node, &r.drain_reason, t);
        }
        // Other nodes of a multi-node job: make sure nothing is left there.
        for a in allocs.iter().filter(|a| a.node != node) {
            self.signal_node(id, &a.node, 0, false, false);
        }
        let job = self.jobs.get_mut(&id).expect("job present");
        let prolog_requeue = r.prolog_failed && !job.rt().cancelled;
        let node_requeue = !r.drain_reason.is_empty() && !job.rt().cancelled;
        let requeue = job.rt().requeue_pending
            || prolog_requeue
            || node_requeue
            || (r.node_fail
                && (job.spec().requeue
                    || (self.cfg.get("JobRequeue") == Some("1") && !job.spec().no_requeue)));
        let rt = job.rt_mut();
        rt.exit_code = r.exit_code;
        rt.exit_signal = r.exit_signal;
        rt.cpu_time_usec = r.cpu_time_usec;
        rt.max_rss_kb = r.max_rss_kb;
        rt.gpu_util_pct = r.gpu_util_pct;
        rt.gpu_mem_max_mb = r.gpu_mem_max_mb;
        rt.terminating = false;
        if requeue {
            self.mail_requeued(id, t);
            let rt = self.jobs.get_mut(&id).expect("job present").rt_mut();
            crate::job::reset_for_requeue(rt);
            rt.reason_detail = if r.node_fail {
                "requeued after node failure".into()
            } else if node_requeue {
                format!("requeued: {} on {node}", r.drain_reason)
            } else if prolog_requeue {
                // Slurm holds a job whose prolog failed until someone looks.
                rt.hold = crate::job::HOLD_LAUNCH_FAILED;
                rt.reason = crate::job::REASON_LAUNCH_FAILED_HELD.into();
                format!("Prolog failed on {node}")
            } else {
                String::new()
            };
            self.log_runtime(id);
            self.sched_needed = true;
            return;
        }
        rt.end_time = t;
        let (state, reason) = if rt.preempted {
            (JobState::Preempted, "None")
        } else if rt.cancelled {
            (JobState::Cancelled, "None")
        } else if r.node_fail {
            (JobState::NodeFail, "NodeDown")
        } else if rt.timed_out || r.timeout {
            (JobState::Timeout, "TimeLimit")
        } else if r.oom {
            (JobState::OutOfMemory, "OutOfMemory")
        } else if r.launch_failed {
            (JobState::Failed, "JobLaunchFailure")
        } else if r.exit_signal != 0 || r.exit_code != 0 {
            (JobState::Failed, "NonZeroExitCode")
        } else {
            (JobState::Completed, "None")
        };
        rt.state = state as i32;
        rt.reason = reason.into();
        self.diag.record_end(state);
        rt.oom = r.oom;
        rt.system_comment = r.system_comment.clone();
        if state == JobState::OutOfMemory {
            // Slurm's exit code of a job the memory limit ended: 0:125.
            rt.exit_code = 0;
            rt.exit_signal = 125;
        }
        if !r.failure.is_empty() {
            rt.reason_detail = r.failure.clone();
        }
        self.log_runtime(id);
        self.notify_waiters(id);
        self.mail_ended(id);
        self.sched_needed = true;
    }

    pub fn notify_waiters(&mut self, id: u32) {
        let Some(ws) = self.waiters.remove(&id) else {
            return;
        };
        let Some(job) = self.jobs.get(&id).cloned() else {
            return;
        };
        let info = self.job_info(&job);
        for w in ws {
            let v = info.clone();
            self.reply_durable(w, Ok(v));
        }
    }

    /// Cancel a pending job (or array meta record) right away.
    pub fn cancel_pending(&mut self, id: u32, by_uid: u32, reason: &str) {
        let t = self.now;
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.is_meta() {
            job.pending_tasks.clear();
        }
        let rt = job.rt_mut();
        rt.state = JobState::Cancelled as i32;
        self.diag.record_end(JobState::Cancelled);
        rt.cancelled = true;
        rt.cancelled_by = by_uid;
        rt.end_time = t;
        if rt.start_time == 0 {
            rt.start_time = t;
        }
        rt.reason = reason.into();
        self.log_runtime(id);
        self.notify_waiters(id);
        self.mail_ended(id);
        self.sched_needed = true;
    }

    /// Ask the agent of `node` to signal (sig != 0) or terminate (sig == 0) a job.
    pub fn signal_node(&mut self, id: u32, node: &str, sig: u32, batch_only: bool, timeout: bool) {
        let req = SignalJobRequest {
            job_id: id,
            signal: sig,
            batch_only,
            node: node.to_string(),
            kill_wait: self.cfg.kill_wait as u32,
            timeout,
            ..Default::default()
        };
        self.effects.push(Effect::Signal {
            node: node.to_string(),
            req,
        });
    }

    /// Terminate a running job on all its nodes (cancel, timeout, requeue).
    pub fn terminate(&mut self, id: u32, timeout: bool) {
        // A suspended job is thawed by its agents before the kill.
        self.end_suspension(id);
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let nodes: Vec<String> = job.rt().alloc.iter().map(|a| a.node.clone()).collect();
        // Still waiting for its nodes to power up: nothing runs anywhere.
        let configuring = job.state() == JobState::Configuring;
        let rt = job.rt_mut();
        rt.terminating = true;
        rt.state = JobState::Completing as i32;
        if timeout {
            rt.timed_out = true;
        }
        self.log_runtime(id);
        for n in nodes {
            self.signal_node(id, &n, 0, false, timeout);
        }
        // An allocation without a batch script (salloc) has no agent to
        // report its end: it ends now (its steps are being killed).
        if configuring || self.jobs.get(&id).is_some_and(|j| j.spec().interactive) {
            self.job_ended(
                id,
                "",
                EndReport {
                    timeout,
                    exit_signal: libc::SIGKILL,
                    ..Default::default()
                },
            );
        }
    }

    /// A node went away: its jobs fail (or are requeued when asked).
    pub fn node_failed(&mut self, idx: usize, why: &str) {
        let t = self.now;
        let name = self.cluster.nodes[idx].name().to_string();
        {
            let n = &mut self.cluster.nodes[idx];
            if n.down {
                return;
            }
            n.down = true;
            n.down_not_responding = true;
            n.responding = false;
            n.reason = why.to_string();
            n.reason_uid = 0;
            n.reason_time = t;
        }
        tracing::warn!("node {name} is DOWN: {why}");
        self.log_node(idx);
        let jobs: Vec<u32> = self.cluster.nodes[idx].jobs.iter().copied().collect();
        for id in jobs {
            self.job_ended(
                id,
                &name,
                EndReport {
                    exit_code: 0,
                    node_fail: true,
                    failure: format!("node {name} failed: {why}"),
                    ..Default::default()
                },
            );
        }
    }

    /// Periodic work: lost nodes, time limits, purging old jobs.
    pub fn tick(&mut self, t: i64) {
        let timeout = self.cfg.slurmd_timeout.max(1) as i64;
        for i in 0..self.cluster.nodes.len() {
            let n = &self.cluster.nodes[i];
            if !n.down
                && !n.future()
                && n.power == crate::nodepower::Power::On
                && t - n.last_seen > timeout
            {
                self.node_failed(i, "Not responding");
            }
        }
        self.power_tick(t);
        let over = i64::from(if self.cfg.over_time_limit_min == u32::MAX {
            0
        } else {
            self.cfg.over_time_limit_min
        });
        let mut expired = Vec::new();
        let mut warn = Vec::new();
        let mut purge = Vec::new();
        // Running jobs that asked for mail (TIME_LIMIT_* mails).
        let mut mail = Vec::new();
        let min_age = self.cfg.min_job_age as i64;
        // The running jobs only (the index), and of the rest what is due.
        for id in self.index.ids_in(&[JobState::Running]) {
            let Some(j) = self.jobs.get(&id) else {
                continue;
            };
            let rt = j.rt();
            if !j.spec().mail_type.is_empty() {
                mail.push(id);
            }
            // Time spent suspended does not count (the limit's end moves on
            // by it); a suspended job never expires.
            if self.cfg.over_time_limit_min != u32::MAX
                && crate::suspend::limit_end(rt).is_some_and(|e| t >= e + over * 60)
            {
                expired.push(id);
            } else if j.spec().signal != 0
                && !rt.warn_signal_sent
                && crate::suspend::limit_end(rt)
                    .is_some_and(|e| t + i64::from(j.spec().signal_time) >= e)
            {
                warn.push(id);
            }
        }
        // A begin time passed: a pass now, not at the next event.
        let wake = self.due.begun_by(t).into_iter().any(|id| {
            self.jobs.get(&id).is_some_and(|j| {
                let b = j.spec().begin_time;
                j.state() == JobState::Pending && b != 0 && b <= t
            })
        });
        // MinJobAge=0 keeps every record (Slurm); its entries wait.
        if min_age > 0 {
            for id in self.due.ended_by(t - min_age) {
                let due = self
                    .jobs
                    .get(&id)
                    .is_some_and(|j| j.state().is_final() && j.rt().end_time + min_age <= t);
                if due {
                    purge.push(id);
                }
            }
            // A job noted more than once comes up more than once.
            purge.sort_unstable();
            purge.dedup();
        }
        self.mail_time_limits(&mail, t);
        for id in expired {
            tracing::info!("job {id} reached its time limit");
            self.terminate(id, true);
        }
        for id in warn {
            self.send_warn_signal(id);
        }
        for id in purge {
            self.purge(id);
        }
        self.end_inactive_allocations(t);
        if wake {
            self.sched_needed = true;
        }
    }

    /// `--signal=[B:]SIG@T`: T seconds before the limit, SIG to every
    /// process of the job (B: the batch shell only), once per run.
    fn send_warn_signal(&mut self, id: u32) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let (sig, batch) = (job.spec().signal, job.spec().signal_batch_only);
        job.rt_mut().warn_signal_sent = true;
        let nodes: Vec<String> = if batch {
            vec![job.rt().batch_host.clone()]
        } else {
            job.rt().alloc.iter().map(|a| a.node.clone()).collect()
        };
        tracing::info!("job {id}: sending signal {sig} before its time limit");
        self.log_runtime(id);
        for n in nodes.iter().filter(|n| !n.is_empty()) {
            self.signal_node(id, n, sig, batch, false);
        }
    }

    /// Drain a node on the controller's own initiative (Prolog/Epilog errors).
    pub fn drain_node(&mut self, name: &str, reason: &str, t: i64) {
        let Some(i) = self.cluster.node_idx(name) else {
            return;
        };
        let n = &mut self.cluster.nodes[i];
        n.drain = true;
        n.reason = reason.into();
        n.reason_uid = self.slurm_user_uid;
        n.reason_time = t;
        self.log_node(i);
    }

    fn purge(&mut self, id: u32) {
        let Some(job) = self.jobs.remove(&id) else {
            return;
        };
        self.sync_queue(id);
        self.blobs.release(job.rec.script_blob);
        self.blobs.release(job.rec.env_blob);
        let a = job.rt().array_job_id;
        if a != 0 {
            if let Some(v) = self.array_tasks.get_mut(&a) {
                v.retain(|x| *x != id);
                if v.is_empty() && !self.jobs.contains_key(&a) {
                    self.array_tasks.remove(&a);
                }
            }
        }
        self.log(WalRecord {
            kind: Some(Kind::Purge(id)),
        });
    }
}
