//! Carrying out a preemption decision: the victim is requeued or ends
//! PREEMPTED, after `GraceTime` if one is set (SIGTERM first, as Slurm);
//! with `PreemptMode=SUSPEND` it is suspended and lends its CPUs/GPUs to the
//! preemptor until they are free again (`suspend.rs`).

use std::time::Duration;

use drover_proto::JobState;

use crate::assoc::PreemptMode;
use crate::ctld::Ctld;

impl Ctld {
    pub fn preempt(&mut self, id: u32, by: u32, mode: PreemptMode) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        if job.state() != JobState::Running || job.rt().preempted || job.rt().terminating {
            return;
        }
        if mode == PreemptMode::Suspend {
            tracing::info!("job {id} preempted by job {by} (suspend)");
            if let Err(e) = self.suspend_job(id, Some(by)) {
                tracing::warn!("job {id}: cannot suspend for job {by}: {e}");
            }
            return;
        }
        let spec = job.spec();
        let requeueable = !spec.no_requeue && (spec.requeue || self.cfg.job_requeue != 0);
        let requeue = mode == PreemptMode::Requeue && requeueable;
        let part = job.rt().partition.clone();
        let owner = self.owner(job);
        let grace = if self.cfg.preempt_type == "preempt/qos" {
            let q = if owner.qos.is_empty() {
                "normal"
            } else {
                owner.qos.as_str()
            };
            self.assoc.qos.get(q).map_or(0, |q| q.grace_time)
        } else {
            0
        }
        .max(self.cfg.partition(&part).map_or(0, |p| p.grace_time));
        tracing::info!(
            "job {id} preempted by job {by} ({}, grace {grace}s)",
            if requeue { "requeue" } else { "cancel" }
        );
        let job = self.jobs.get_mut(&id).expect("job present");
        let rt = job.rt_mut();
        rt.preempted = true;
        if requeue {
            rt.requeue_pending = true;
        }
        self.log_runtime(id);
        if grace == 0 {
            self.terminate(id, false);
            return;
        }
        let nodes: Vec<String> = self.jobs[&id]
            .rt()
            .alloc
            .iter()
            .map(|a| a.node.clone())
            .collect();
        for n in nodes {
            self.signal_node(id, &n, libc::SIGTERM as u32, false, false);
        }
        let start = self.jobs[&id].rt().start_time;
        self.later(
            Duration::from_secs(u64::from(grace)),
            Box::new(move |c: &mut Ctld| {
                if c.jobs
                    .get(&id)
                    .is_some_and(|j| j.state() == JobState::Running && j.rt().start_time == start)
                {
                    c.terminate(id, false);
                }
            }),
        );
    }
}
