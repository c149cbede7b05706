//! [`TestEnv`]: the core alone, driven by events, its effects recorded.
//! A cluster from a few lines of slurm.conf text, every node registered;
//! the test feeds submissions, agent reports and commands, moves the clock
//! with [`TestEnv::advance`], and reads what the core asked for.

use std::sync::{Arc, Mutex};

use crate::refusal::Refusal;
use drover_proto::auth::Identity;
use drover_proto::{
    JobEndedRequest, JobSpec, JobState, NodeRegistration, RegisterRequest, SubmitResponse,
    UpdateJobRequest,
};

use crate::ctld::Effect;
use crate::ctld::{Ctld, Reply};

/// When every scenario starts (unix seconds).
pub const T0: i64 = 1_000_000;

/// The ordinary user submitting jobs.
pub const USER: u32 = 1000;

pub struct TestEnv {
    pub core: Ctld,
    /// Every effect the core recorded since the last [`TestEnv::clear`].
    pub effects: Vec<Effect>,
    /// Nodes whose agent no longer answers (no heartbeat).
    silent: Vec<String>,
}

impl TestEnv {
    /// The cluster of `conf` (slurm.conf text: nodes, partitions, options),
    /// with every node registered at [`T0`].
    pub fn new(conf: &str) -> TestEnv {
        let text = format!("ClusterName=test\nSlurmctldHost=localhost\n{conf}\n");
        let (cfg, _) = drover_conf::slurmconf::parse_str(&text, "slurm.conf", &mut |p| {
            Err(format!("no Include in tests: {p}"))
        })
        .unwrap_or_else(|e| panic!("test slurm.conf: {e}"));
        let mut core = Ctld::new(cfg, "slurm.conf".into(), T0, 0, "ctl".into());
        let nodes = core
            .cfg
            .nodes
            .iter()
            .map(|n| NodeRegistration {
                name: n.name.clone(),
                cpus: n.cpus,
                real_memory: n.real_memory,
                ..Default::default()
            })
            .collect();
        core.register(RegisterRequest {
            nodes,
            ..Default::default()
        });
        let mut env = TestEnv {
            core,
            effects: Vec::new(),
            silent: Vec::new(),
        };
        env.collect();
        env.clear();
        env
    }

    /// Submit `spec` as [`USER`] at the current time.
    pub fn submit(&mut self, spec: JobSpec) -> Result<u32, Refusal> {
        self.submit_as(user(), spec)
    }

    /// Submit `spec` as `who` at the current time.
    pub fn submit_as(&mut self, who: Identity, spec: JobSpec) -> Result<u32, Refusal> {
        let got: Arc<Mutex<Option<Result<SubmitResponse, Refusal>>>> = Arc::default();
        let slot = got.clone();
        let reply = Reply::new(move |v| {
            *slot.lock().unwrap() = Some(v);
            true
        });
        self.core.submit(who, spec, reply);
        self.collect();
        // A successful submission is answered once durable: perform that.
        for e in std::mem::take(&mut self.effects) {
            match e {
                Effect::AfterDurable(f) => f(),
                other => self.effects.push(other),
            }
        }
        let v = got.lock().unwrap().take().expect("submission answered");
        v.map(|r| r.job_id)
    }

    /// Submit and expect success.
    pub fn sbatch(&mut self, spec: JobSpec) -> u32 {
        self.submit(spec).expect("submission accepted")
    }

    /// Move the clock to `t`: heartbeats from the nodes that still answer,
    /// the periodic checks (time limits, timeouts, purges), then a full
    /// scheduling pass (a big pass's off-thread planning is run here).
    pub fn advance(&mut self, t: i64) {
        assert!(t >= self.core.now, "time goes forward");
        self.core.now = t;
        for n in &mut self.core.cluster.nodes {
            if !self.silent.iter().any(|s| s == n.name()) {
                n.last_seen = t;
            }
        }
        self.core.tick(t);
        self.core.full_pass_needed = true;
        self.core.schedule_pass();
        self.collect();
    }

    /// The node's agent stops answering (its heartbeats stop).
    pub fn silence(&mut self, node: &str) {
        self.silent.push(node.to_string());
    }

    /// Take the core's effects; run planning done off-thread in the live
    /// controller (and apply its decisions) at once.
    pub fn collect(&mut self) {
        loop {
            let batch = self.core.take_effects();
            if batch.is_empty() {
                return;
            }
            for e in batch {
                match e {
                    Effect::Plan { work, .. } => work()(&mut self.core),
                    other => self.effects.push(other),
                }
            }
        }
    }

    /// Forget the effects recorded so far.
    pub fn clear(&mut self) {
        self.effects.clear();
    }

    /// Jobs whose batch script the core asked an agent to start, in order,
    /// with the node.
    pub fn launches(&self) -> Vec<(u32, String)> {
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Launch { node, req, .. } => Some((req.job_id, node.clone())),
                _ => None,
            })
            .collect()
    }

    /// Job ids launched, in order.
    pub fn launched(&self) -> Vec<u32> {
        self.launches().into_iter().map(|(j, _)| j).collect()
    }

    /// (job, node, signal) of every signal or termination asked for.
    pub fn signals(&self) -> Vec<(u32, String, u32)> {
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Signal { node, req } => Some((req.job_id, node.clone(), req.signal)),
                _ => None,
            })
            .collect()
    }

    /// (job, node, suspend?) of every suspend or resume asked for.
    pub fn suspends(&self) -> Vec<(u32, String, bool)> {
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Suspend { node, req, .. } => Some((req.job_id, node.clone(), req.suspend)),
                _ => None,
            })
            .collect()
    }

    /// States of the job the log was told, in order.
    pub fn logged_states(&self, id: u32) -> Vec<JobState> {
        use drover_proto::state::wal_record::Kind;
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Log(r) => match &r.kind {
                    Some(Kind::Runtime(u)) if u.job_id == id => {
                        u.runtime.as_ref().map(|rt| state_of(rt.state))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    /// Whether the log was told to forget the job.
    pub fn purged(&self, id: u32) -> bool {
        use drover_proto::state::wal_record::Kind;
        self.effects.iter().any(
            |e| matches!(e, Effect::Log(r) if matches!(r.kind, Some(Kind::Purge(p)) if p == id)),
        )
    }

    /// The agent accepted the job's launch.
    pub fn launch_ok(&mut self, id: u32) {
        let start = self.core.jobs[&id].rt().start_time;
        self.core.launch_done(id, start, Ok(()));
        self.collect();
    }

    /// The job's batch script ended with `exit_code` (as its agent reports).
    pub fn finish(&mut self, id: u32, exit_code: i32) {
        let rt = self.core.jobs[&id].rt().clone();
        self.core.agent_job_ended(JobEndedRequest {
            job_id: id,
            node: rt.batch_host,
            exit_code,
            end_time: self.core.now,
            restart_count: rt.restart_count,
            ..Default::default()
        });
        self.collect();
    }

    /// The job's agent reports it killed at the time limit.
    pub fn killed_by_timeout(&mut self, id: u32) {
        let rt = self.core.jobs[&id].rt().clone();
        self.core.agent_job_ended(JobEndedRequest {
            job_id: id,
            node: rt.batch_host,
            exit_signal: libc::SIGKILL,
            timeout: true,
            restart_count: rt.restart_count,
            ..Default::default()
        });
        self.collect();
    }

    /// `scontrol <action> <id>` as root (hold, release, requeue, suspend, ...).
    pub fn control(&mut self, action: &str, id: u32) -> Result<(), String> {
        let r = self
            .core
            .update_job(
                root(),
                UpdateJobRequest {
                    job_ids: vec![id.to_string()],
                    action: action.into(),
                    ..Default::default()
                },
            )
            .map_err(|e| e.words().to_string())?;
        self.collect();
        match r.results.into_iter().find(|r| !r.ok) {
            Some(bad) => Err(bad.error),
            None => Ok(()),
        }
    }

    /// `scancel <id>` as the job's owner.
    pub fn cancel(&mut self, id: u32) {
        let r = self.core.cancel(
            user(),
            drover_proto::CancelRequest {
                filter: Some(drover_proto::JobFilter {
                    job_ids: vec![id.to_string()],
                    ..Default::default()
                }),
                ..Default::default()
            },
        );
        assert!(
            r.is_ok_and(|r| r.results.iter().all(|x| x.ok)),
            "cancel {id}"
        );
        self.collect();
    }

    /// The agent of `node` registers it as configured, running no job.
    pub fn register_without_jobs(&mut self, node: &str) {
        let i = self.core.cluster.node_idx(node).expect("node");
        let conf = &self.core.cluster.nodes[i].conf;
        let (cpus, real_memory) = (conf.cpus, conf.real_memory);
        self.core.register(drover_proto::RegisterRequest {
            nodes: vec![drover_proto::NodeRegistration {
                name: node.into(),
                cpus,
                real_memory,
                ..Default::default()
            }],
            ..Default::default()
        });
        self.collect();
    }

    pub fn state(&self, id: u32) -> JobState {
        self.core.jobs[&id].state()
    }

    pub fn reason(&self, id: u32) -> String {
        self.core.jobs[&id].rt().reason.clone()
    }

    /// The node the job's batch script runs on.
    pub fn node_of(&self, id: u32) -> String {
        self.core.jobs[&id].rt().batch_host.clone()
    }
}

/// A one-CPU, one-node batch job with a time limit in minutes.
pub fn job(minutes: u32) -> JobSpec {
    JobSpec {
        name: "scenario".into(),
        script: b"#!/bin/sh\ntrue\n".to_vec(),
        time_limit: minutes,
        work_dir: "/tmp".into(),
        ..Default::default()
    }
}

fn state_of(v: i32) -> JobState {
    JobState::try_from(v).unwrap_or(JobState::Pending)
}

pub fn user() -> Identity {
    Identity {
        uid: USER,
        gid: USER,
        groups: vec![USER],
        daemon: false,
        host: "login".into(),
    }
}

pub fn root() -> Identity {
    Identity {
        uid: 0,
        gid: 0,
        groups: vec![0],
        daemon: false,
        host: "login".into(),
    }
}
