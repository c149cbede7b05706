//! Job suspend/resume: `scontrol suspend|resume` (operators only) and
//! `PreemptMode=SUSPEND`.
//!
//! A suspended job keeps its allocation; its processes are stopped by the
//! agents (frozen cgroup, else SIGSTOP). Time spent suspended does not count
//! towards the time limit: as in Slurm, `suspend_time` is the time of the
//! last suspend or resume, `pre_sus_time` the seconds run before it and
//! `tot_sus_time` the seconds spent suspended, so the limit ends at
//! `start + tot_sus_time + limit`.
//!
//! A job suspended by preemption lends its CPUs and GPUs to the preemptor
//! (its memory stays allocated, as in Slurm) and is resumed by the
//! scheduling pass as soon as all of them are free again, before any pending
//! job may take them ([`Ctld::resume_lenders`]). Until then the scheduler's
//! snapshot shows its free CPUs/GPUs only while the preemptor it was
//! suspended for is still pending ([`Ctld::hide_lent`]): nothing else can
//! take them.

use std::time::Duration;

use drover_proto::state::JobRuntime;
use drover_proto::{JobState, NodeAlloc, SuspendJobRequest, INFINITE};

use crate::ctld::Ctld;
use crate::ctld::Effect;
use crate::refusal::{Kind, Refusal};
use crate::sched;

/// How long a job suspended by preemption keeps its CPUs/GPUs for a
/// preemptor that does not start (held back by a limit, say), seconds.
/// After that it resumes as soon as they are free, like any lender.
pub const LEND_WAIT: i64 = 60;

/// Slurm's texts.
pub mod msg {
    pub const NOT_RUNNING: &str = "Job is not running";
    pub const NOT_SUSPENDED: &str = "Job is not suspended";
    pub const NODES_BUSY: &str = "Requested nodes are busy";
}

/// When the job's time limit runs out: start + time suspended + limit
/// (None: no limit, or not started).
pub fn limit_end(rt: &JobRuntime) -> Option<i64> {
    if rt.start_time == 0 || rt.time_limit == INFINITE || rt.time_limit == 0 {
        return None;
    }
    Some(rt.start_time + rt.tot_sus_time + i64::from(rt.time_limit) * 60)
}

/// The expected end as shown (EndTime): the limit's end, pushed on by the
/// current suspension while suspended.
pub fn shown_end(rt: &JobRuntime, state: JobState, t: i64) -> Option<i64> {
    let end = limit_end(rt)?;
    if state == JobState::Suspended && rt.suspend_time != 0 {
        return Some(end + (t - rt.suspend_time).max(0));
    }
    Some(end)
}

/// Seconds the job has run at `t`, suspensions excluded.
pub fn run_secs(rt: &JobRuntime, state: JobState, t: i64) -> i64 {
    if rt.start_time == 0 {
        return 0;
    }
    if state == JobState::Suspended {
        return rt.pre_sus_time;
    }
    let end = if rt.end_time != 0 { rt.end_time } else { t };
    let used = if rt.suspend_time != 0 {
        rt.pre_sus_time + (end - rt.suspend_time)
    } else {
        end - rt.start_time
    };
    used.max(0)
}

/// Book a suspension at `t` (Slurm's arithmetic).
pub fn note_suspend(rt: &mut JobRuntime, t: i64) {
    let since = if rt.suspend_time != 0 {
        rt.suspend_time
    } else {
        rt.start_time
    };
    rt.pre_sus_time += (t - since).max(0);
    rt.suspend_time = t;
    rt.state = JobState::Suspended as i32;
    rt.reason = "None".into();
}

/// Book the end of a suspension at `t`; the job runs again.
pub fn note_resume(rt: &mut JobRuntime, t: i64) {
    if rt.suspend_time != 0 {
        rt.tot_sus_time += (t - rt.suspend_time).max(0);
    }
    rt.suspend_time = t;
    rt.state = JobState::Running as i32;
}

/// What the job holds on its nodes now: everything, or only the memory
/// while its CPUs and GPUs are lent (suspended by preemption).
pub fn held_allocs(rt: &JobRuntime) -> Vec<NodeAlloc> {
    if !rt.preempt_suspended {
        return rt.alloc.clone();
    }
    rt.alloc
        .iter()
        .map(|a| NodeAlloc {
            cpus: 0,
            cpu_ids: Vec::new(),
            gres: Vec::new(),
            ..a.clone()
        })
        .collect()
}

/// The CPUs and GPUs of the allocation (no memory): what preemption lends.
pub fn lent_allocs(rt: &JobRuntime) -> Vec<NodeAlloc> {
    rt.alloc
        .iter()
        .map(|a| NodeAlloc {
            mem_mb: 0,
            ..a.clone()
        })
        .collect()
}

impl Ctld {
    /// An accounting user with AdminLevel Operator or Administrator.
    pub fn is_operator(&mut self, who: &drover_proto::auth::Identity) -> bool {
        let name = self.names.user(who.uid);
        self.assoc.users.get(&*name).is_some_and(|u| {
            u.admin_level.eq_ignore_ascii_case("operator")
                || u.admin_level.eq_ignore_ascii_case("administrator")
        })
    }

    /// `scontrol suspend` (no preemptor) or PreemptMode=SUSPEND for
    /// pending job `preemptor`.
    pub fn suspend_job(&mut self, id: u32, preemptor: Option<u32>) -> Result<(), String> {
        let job = self.jobs.get(&id).ok_or(crate::submit::msg::INVALID_JOB)?;
        match job.state() {
            JobState::Running if !job.rt().terminating => {}
            JobState::Pending => return Err(crate::submit::msg::PENDING.into()),
            s if s.is_final() => return Err(crate::submit::msg::ALREADY_DONE.into()),
            JobState::Completing => return Err(crate::submit::msg::ALREADY_DONE.into()),
            _ => return Err(msg::NOT_RUNNING.into()),
        }
        let t = self.now;
        let job = self.jobs.get_mut(&id).expect("job present");
        let rt = job.rt_mut();
        note_suspend(rt, t);
        let preempt = preemptor.is_some();
        if let Some(by) = preemptor {
            rt.preempt_suspended = true;
            rt.suspended_for = by;
            let lent = lent_allocs(rt);
            self.cluster.lend(&lent);
            self.lenders.insert(id);
        }
        tracing::info!(
            "job {id} suspended{}",
            if preempt { " (preempted)" } else { "" }
        );
        self.log_runtime(id);
        self.send_suspend(id, true);
        self.sched_needed = true;
        Ok(())
    }

    /// `scontrol resume`, or the automatic resume of a preempted job.
    pub fn resume_job(&mut self, id: u32) -> Result<(), String> {
        let job = self.jobs.get(&id).ok_or(crate::submit::msg::INVALID_JOB)?;
        match job.state() {
            JobState::Suspended => {}
            JobState::Pending => return Err(crate::submit::msg::PENDING.into()),
            s if s.is_final() => return Err(crate::submit::msg::ALREADY_DONE.into()),
            _ => return Err(msg::NOT_SUSPENDED.into()),
        }
        if job.rt().preempt_suspended {
            let lent = lent_allocs(job.rt());
            let share = job.rt().share;
            if !self.cluster.all_free(&lent, share) {
                return Err(msg::NODES_BUSY.into());
            }
            self.cluster.take_back(&lent, share);
            self.lenders.remove(&id);
        }
        let t = self.now;
        let job = self.jobs.get_mut(&id).expect("job present");
        let rt = job.rt_mut();
        rt.preempt_suspended = false;
        rt.suspended_for = 0;
        note_resume(rt, t);
        tracing::info!("job {id} resumed");
        self.log_runtime(id);
        self.send_suspend(id, false);
        Ok(())
    }

    /// A suspended job is being stopped (cancel, requeue, node failure):
    /// book the suspension as over, let the agents thaw it before the kill.
    /// Its CPUs stay lent (it releases only its memory when it ends).
    pub fn end_suspension(&mut self, id: u32) {
        self.lenders.remove(&id);
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.state() != JobState::Suspended {
            return;
        }
        note_resume(job.rt_mut(), self.now);
    }

    /// Resume preempted jobs whose CPUs and GPUs are all free again, highest
    /// priority first. Runs before the scheduler looks at the free
    /// resources, so pending jobs never take them first.
    pub fn resume_lenders(&mut self) {
        if self.lenders.is_empty() {
            return;
        }
        let mut ids: Vec<(u32, u32)> = self
            .lenders
            .iter()
            .filter_map(|id| self.jobs.get(id).map(|j| (j.rt().priority, *id)))
            .collect();
        ids.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let t = self.now;
        for (_, id) in ids {
            let job = &self.jobs[&id];
            // The preemptor it was suspended for is still waiting to take
            // the CPUs (a held or cancelled one no longer is).
            if self.awaits_preemptor(job.rt(), t) {
                continue;
            }
            let lent = lent_allocs(job.rt());
            let up = lent.iter().all(|a| {
                self.cluster
                    .node_idx(&a.node)
                    .is_some_and(|i| !self.cluster.nodes[i].down)
            });
            if up && self.cluster.all_free(&lent, job.rt().share) {
                if let Err(e) = self.resume_job(id) {
                    tracing::warn!("job {id}: automatic resume failed: {e}");
                }
            }
        }
        let stale: Vec<u32> = self
            .lenders
            .iter()
            .copied()
            .filter(|id| {
                self.jobs
                    .get(id)
                    .is_none_or(|j| j.state() != JobState::Suspended || !j.rt().preempt_suspended)
            })
            .collect();
        for id in stale {
            self.lenders.remove(&id);
        }
    }

    /// In the scheduler's snapshot, the free CPUs/GPUs lent by suspended
    /// jobs are free only for the preemptor they were suspended for, while
    /// it is pending and in this pass; otherwise they stay reserved for the
    /// lender's resume.
    pub fn hide_lent(&self, nodes: &mut [sched::NodeSnap], cands: &[sched::JobSnap]) {
        for id in &self.lenders {
            let Some(job) = self.jobs.get(id) else {
                continue;
            };
            let by = job.rt().suspended_for;
            if self.awaits_preemptor(job.rt(), self.now) && cands.iter().any(|c| c.id == by) {
                continue;
            }
            for a in &job.rt().alloc {
                let Some(i) = self.cluster.node_idx(&a.node) else {
                    continue;
                };
                let Some(n) = nodes.get_mut(i) else {
                    continue;
                };
                n.free_cpus.retain(|c| !a.cpu_ids.contains(c));
                n.shared.retain(|x| !a.cpu_ids.contains(&x.id));
                for g in &a.gres {
                    for d in n
                        .gres
                        .iter_mut()
                        .filter(|d| d.name == g.name && g.indices.contains(&d.index))
                    {
                        d.free = false;
                    }
                }
            }
        }
    }

    /// Is this lender still keeping its CPUs/GPUs for the preemptor it was
    /// suspended for (pending, not held, and not for longer than
    /// [`LEND_WAIT`])?
    fn awaits_preemptor(&self, rt: &JobRuntime, t: i64) -> bool {
        let by = rt.suspended_for;
        by != 0
            && t - rt.suspend_time < LEND_WAIT
            && self
                .jobs
                .get(&by)
                .is_some_and(|j| j.state() == JobState::Pending && j.rt().hold == 0)
    }

    /// Tell every node of the job to stop (suspend) or continue its
    /// processes; retried while the node does not answer and the job is
    /// still in the state that asked for it.
    pub fn send_suspend(&mut self, id: u32, suspend: bool) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let nodes: Vec<String> = job.rt().alloc.iter().map(|a| a.node.clone()).collect();
        for node in nodes {
            self.send_suspend_node(id, &node, suspend, 0);
        }
    }

    pub(crate) fn send_suspend_node(&mut self, id: u32, node: &str, suspend: bool, attempt: u32) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        if !job.rt().alloc.iter().any(|a| a.node == node) {
            return;
        }
        let start = job.rt().start_time;
        let req = SuspendJobRequest {
            job_id: id,
            node: node.to_string(),
            suspend,
        };
        self.effects.push(Effect::Suspend {
            node: node.to_string(),
            req,
            start,
            attempt,
        });
    }

    /// A suspend (or resume) of the job started at `start` failed on
    /// `node`: try again in a second while the node may still answer and
    /// the job is still in the state that asked for it.
    pub fn suspend_failed(
        &mut self,
        id: u32,
        node: &str,
        suspend: bool,
        start: i64,
        attempt: u32,
        e: &Refusal,
    ) {
        if attempt >= 60
            || matches!(
                e.kind(),
                Kind::NotFound
                    | Kind::InvalidArgument
                    | Kind::PermissionDenied
                    | Kind::Unauthenticated
                    | Kind::Unimplemented
            )
        {
            let what = if suspend { "suspend" } else { "resume" };
            tracing::warn!("job {id}: {what} on {node} failed: {}", e.words());
            return;
        }
        let node = node.to_string();
        self.later(
            Duration::from_secs(1),
            Box::new(move |c: &mut Ctld| {
                let want = if suspend {
                    JobState::Suspended
                } else {
                    JobState::Running
                };
                if c.jobs
                    .get(&id)
                    .is_some_and(|j| j.state() == want && j.rt().start_time == start)
                {
                    c.send_suspend_node(id, &node, suspend, attempt + 1);
                }
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(start: i64, limit_min: u32) -> JobRuntime {
        JobRuntime {
            state: JobState::Running as i32,
            start_time: start,
            time_limit: limit_min,
            ..Default::default()
        }
    }

    #[test]
    fn suspended_time_moves_the_limit() {
        let mut rt = running(1000, 1);
        assert_eq!(limit_end(&rt), Some(1060));
        note_suspend(&mut rt, 1020);
        assert_eq!(rt.pre_sus_time, 20);
        assert_eq!(run_secs(&rt, JobState::Suspended, 1100), 20);
        assert_eq!(shown_end(&rt, JobState::Suspended, 1050), Some(1090));
        note_resume(&mut rt, 1100);
        assert_eq!(rt.tot_sus_time, 80);
        assert_eq!(limit_end(&rt), Some(1140));
        assert_eq!(run_secs(&rt, JobState::Running, 1110), 30);
        // A second suspension adds up.
        note_suspend(&mut rt, 1110);
        assert_eq!(rt.pre_sus_time, 30);
        note_resume(&mut rt, 1120);
        assert_eq!(rt.tot_sus_time, 90);
        assert_eq!(limit_end(&rt), Some(1150));
        assert_eq!(run_secs(&rt, JobState::Running, 1130), 40);
    }

    #[test]
    fn no_limit_no_end() {
        let rt = running(1000, INFINITE);
        assert_eq!(limit_end(&rt), None);
        assert_eq!(limit_end(&running(0, 5)), None);
        assert_eq!(run_secs(&running(1000, 0), JobState::Running, 1005), 5);
    }

    #[test]
    fn lent_and_held_split_the_allocation() {
        let mut rt = running(1, 1);
        rt.alloc = vec![NodeAlloc {
            node: "n1".into(),
            cpus: 2,
            cpu_ids: vec![0, 1],
            mem_mb: 100,
            gres: vec![drover_proto::GresAlloc {
                name: "gpu".into(),
                indices: vec![0],
                ..Default::default()
            }],
            tasks: 1,
        }];
        assert_eq!(held_allocs(&rt), rt.alloc);
        rt.preempt_suspended = true;
        let held = held_allocs(&rt);
        assert!(held[0].cpu_ids.is_empty() && held[0].gres.is_empty());
        assert_eq!(held[0].mem_mb, 100);
        let lent = lent_allocs(&rt);
        assert_eq!(lent[0].cpu_ids, vec![0, 1]);
        assert_eq!(lent[0].mem_mb, 0);
        assert_eq!(lent[0].gres.len(), 1);
    }
}
