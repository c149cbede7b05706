//! Node agents talking to the controller: registration, heartbeats, job ends.

use drover_proto::{
    HeartbeatRequest, HeartbeatResponse, JobEndedRequest, JobState, RegisterRequest,
    RegisterResponse,
};

use crate::ctld::Ctld;
use crate::end::EndReport;

impl Ctld {
    /// Seconds between agent heartbeats: a third of SlurmdTimeout, 1..=30.
    pub fn heartbeat_interval(&self) -> u32 {
        (self.cfg.slurmd_timeout / 3).clamp(1, 30) as u32
    }

    /// Jobs an agent reports that the controller does not have running there.
    /// A job is a stray if it is not running there, or the agent runs an
    /// earlier run of it (the job was requeued meanwhile).
    fn strays(&self, node: &str, reported: &[(u32, u32)]) -> Vec<u32> {
        reported
            .iter()
            .filter(|(id, run)| {
                !self.jobs.get(id).is_some_and(|j| {
                    matches!(
                        j.state(),
                        JobState::Running | JobState::Completing | JobState::Suspended
                    ) && j.rt().restart_count == *run
                        && j.rt().alloc.iter().any(|a| a.node == node)
                })
            })
            .map(|(id, _)| *id)
            .collect()
    }

    pub fn register(&mut self, req: RegisterRequest) -> RegisterResponse {
        self.register_from(req, None)
    }

    /// [`Ctld::register`] from the agent at `peer` (its IP address): a
    /// CLOUD node may be reached there from now on (`power.rs`).
    pub fn register_from(
        &mut self,
        req: RegisterRequest,
        peer: Option<String>,
    ) -> RegisterResponse {
        let t = self.now;
        let mut errors = Vec::new();
        let mut kill = Vec::new();
        let mut relaunch = Vec::new();
        let mut lost = Vec::new();
        // Terminated before any launch of theirs was acknowledged.
        let mut unlaunched_ended = Vec::new();
        // Nodes whose durable state (drain, down) changed here.
        let mut changed = Vec::new();
        // Nodes registered here (a powered-down one is up now).
        let mut powered = Vec::new();
        let conf_differs = req.conf_hash != 0
            && req.conf_hash != self.cfg.conf_hash
            && !self.cfg.debug_flag("NO_CONF_HASH");
        for reg in &req.nodes {
            let Some(i) = self.cluster.node_idx(&reg.name) else {
                errors.push(format!(
                    "node {} is not in the controller's configuration",
                    reg.name
                ));
                continue;
            };
            let reported_runs: Vec<(u32, u32)> = req
                .jobs
                .iter()
                .filter(|j| j.node == reg.name)
                .map(|j| (j.job_id, j.restart_count))
                .collect();
            kill.extend(self.strays(&reg.name, &reported_runs));
            // Batch scripts the agent has (step tasks alone say nothing of those).
            let batch_runs: Vec<(u32, u32)> = req
                .jobs
                .iter()
                .filter(|j| j.node == reg.name && !j.steps_only)
                .map(|j| (j.job_id, j.restart_count))
                .collect();
            let reported: Vec<u32> = batch_runs
                .iter()
                .filter(|(id, run)| {
                    self.jobs
                        .get(id)
                        .is_some_and(|j| j.rt().restart_count == *run)
                })
                .map(|(id, _)| *id)
                .collect();
            if conf_differs {
                // Slurm's words (slurmctld's node registration).
                tracing::warn!(
                    "Node {} appears to have a different slurm.conf than the slurmctld.  \
                     This could cause issues with communication and functionality.  \
                     Please review both files and make sure they are the same.  \
                     If this is expected ignore, and set DebugFlags=NO_CONF_HASH in your slurm.conf.",
                    reg.name
                );
            }
            let rts = self.cfg.return_to_service;
            let n = &mut self.cluster.nodes[i];
            n.registered = true;
            n.responding = true;
            n.last_seen = t;
            n.agent_start_time = req.agent_start_time;
            n.boot_time = reg.boot_time;
            n.os = reg.os.clone();
            n.version = req.version.clone();
            if n.down && n.down_not_responding && rts >= 1 {
                n.down = false;
                n.down_not_responding = false;
                n.reason.clear();
                n.reason_time = 0;
                tracing::info!("node {} is back (ReturnToService={rts})", reg.name);
                changed.push(i);
            }
            let already = n.drain && n.reason == reg.drain_reason;
            if !reg.drain_reason.is_empty() && !already {
                tracing::warn!("node {}: {}: draining it", reg.name, reg.drain_reason);
                n.drain = true;
                n.reason = reg.drain_reason.clone();
                n.reason_time = t;
                n.reason_uid = self.slurm_user_uid;
                changed.push(i);
            }
            if reg.cpus < n.conf.cpus || reg.real_memory < n.conf.real_memory {
                let why = if reg.cpus < n.conf.cpus {
                    "Low socket*core*thread count"
                } else {
                    "Low RealMemory"
                };
                if !n.drain {
                    tracing::warn!(
                        "node {}: {why} (has {} CPUs / {} MB, configured {} / {})",
                        reg.name,
                        reg.cpus,
                        reg.real_memory,
                        n.conf.cpus,
                        n.conf.real_memory
                    );
                    n.drain = true;
                    n.reason = why.into();
                    n.reason_time = t;
                    changed.push(i);
                }
            }
            let n = &self.cluster.nodes[i];
            if (reg.host_cpus > 0 && reg.host_cpus < n.conf.cpus)
                || (reg.host_memory > 0 && reg.host_memory < n.conf.real_memory)
            {
                tracing::warn!(
                    "node {}: the host has {} CPUs / {} MB, configured CPUs={} RealMemory={}",
                    reg.name,
                    reg.host_cpus,
                    reg.host_memory,
                    n.conf.cpus,
                    n.conf.real_memory
                );
            }
            // Jobs we believe run there but the agent does not know.
            let ours: Vec<u32> = n.jobs.iter().copied().collect();
            for id in ours {
                if reported.contains(&id) {
                    continue;
                }
                let Some(j) = self.jobs.get(&id) else {
                    continue;
                };
                if j.rt().batch_host != reg.name {
                    continue;
                }
                if j.rt().launched {
                    lost.push((id, reg.name.clone()));
                } else if j.state() == JobState::Completing && j.rt().terminating {
                    unlaunched_ended.push(id);
                } else if j.state() != JobState::Configuring {
                    relaunch.push(id);
                }
            }
            tracing::info!("node {} registered", reg.name);
            if let Some(ip) = &peer {
                if self.learn_addr(i, ip) {
                    changed.push(i);
                }
            }
            powered.push(i);
        }
        changed.dedup();
        for i in changed {
            self.log_node(i);
        }
        for (id, node) in lost {
            self.job_ended(
                id,
                &node,
                EndReport {
                    node_fail: true,
                    failure: format!("job vanished from node {node}"),
                    ..Default::default()
                },
            );
        }
        for id in relaunch {
            self.send_launch(id);
        }
        for id in unlaunched_ended {
            self.end_unlaunched(id);
        }
        for i in powered {
            self.power_registered(i);
        }
        // Kills are re-sent: an agent that stopped before it passed a
        // terminate on to the job's supervisor re-attaches the job when it
        // comes back, and only then can the kill be finished.
        let mut terminate = Vec::new();
        for j in &req.jobs {
            let Some(job) = self.jobs.get(&j.job_id) else {
                continue;
            };
            if j.running
                && job.rt().terminating
                && job.rt().restart_count == j.restart_count
                && job.rt().alloc.iter().any(|a| a.node == j.node)
            {
                terminate.push((j.job_id, j.node.clone(), job.rt().timed_out));
            }
        }
        for (id, node, timeout) in terminate {
            tracing::info!("job {id}: {node} is back: terminating it there again");
            self.signal_node(id, &node, 0, false, timeout);
        }
        // Suspensions (and resumes) are re-asserted: the agent may have been
        // away longer than their retries (both are idempotent there).
        let mut again = Vec::new();
        for reg in &req.nodes {
            let Some(i) = self.cluster.node_idx(&reg.name) else {
                continue;
            };
            for id in &self.cluster.nodes[i].jobs {
                let Some(j) = self.jobs.get(id) else {
                    continue;
                };
                match j.state() {
                    JobState::Suspended => again.push((*id, reg.name.clone(), true)),
                    JobState::Running if j.rt().suspend_time != 0 => {
                        again.push((*id, reg.name.clone(), false))
                    }
                    _ => {}
                }
            }
        }
        for (id, node, suspend) in again {
            self.send_suspend_node(id, &node, suspend, 0);
        }
        self.sched_needed = true;
        RegisterResponse {
            kill_jobs: kill,
            heartbeat_interval: self.heartbeat_interval(),
            errors,
        }
    }

    pub fn heartbeat(&mut self, req: HeartbeatRequest) -> HeartbeatResponse {
        let t = self.now;
        let mut reregister = false;
        let mut kill = Vec::new();
        for (k, name) in req.nodes.iter().enumerate() {
            let Some(i) = self.cluster.node_idx(name) else {
                continue;
            };
            if !self.cluster.nodes[i].registered || self.cluster.nodes[i].down {
                reregister = true;
                continue;
            }
            let reported: Vec<(u32, u32)> = req
                .jobs
                .iter()
                .filter(|j| &j.node == name && j.running)
                .map(|j| (j.job_id, j.restart_count))
                .collect();
            kill.extend(self.strays(name, &reported));
            let n = &mut self.cluster.nodes[i];
            n.last_seen = t;
            n.responding = true;
            if let Some(l) = req.cpu_load.get(k) {
                n.cpu_load = *l;
            }
            if let Some(m) = req.free_memory.get(k) {
                n.free_mem = *m;
            }
        }
        kill.sort_unstable();
        kill.dedup();
        HeartbeatResponse {
            kill_jobs: kill,
            reregister,
        }
    }

    pub fn agent_job_ended(&mut self, req: JobEndedRequest) {
        if let Some(i) = self.cluster.node_idx(&req.node) {
            self.cluster.nodes[i].last_seen = self.now;
        }
        // A report about an earlier run of a requeued job changes nothing.
        if self
            .jobs
            .get(&req.job_id)
            .is_some_and(|j| j.rt().restart_count != req.restart_count)
        {
            tracing::debug!(
                "job {}: ignoring end of run {} (current run {:?})",
                req.job_id,
                req.restart_count,
                self.jobs.get(&req.job_id).map(|j| j.rt().restart_count)
            );
            return;
        }
        self.job_ended(
            req.job_id,
            &req.node,
            EndReport {
                exit_code: req.exit_code,
                exit_signal: req.exit_signal,
                oom: req.oom,
                timeout: req.timeout,
                cpu_time_usec: req.cpu_time_usec,
                max_rss_kb: req.max_rss_kb,
                failure: req.failure,
                launch_failed: req.launch_failed || req.prolog_failed,
                node_fail: false,
                prolog_failed: req.prolog_failed,
                epilog_failed: req.epilog_failed,
                drain_reason: req.drain_reason,
                gpu_util_pct: req.gpu_util_pct,
                gpu_mem_max_mb: req.gpu_mem_max_mb,
                // Free text from a node: bounded (its own cap is 200 characters).
                system_comment: req.system_comment.chars().take(1024).collect(),
            },
        );
    }
}
