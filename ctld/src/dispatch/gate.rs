//! Which pending jobs a pass may consider: holds, begin times,
//! dependencies (with what a dependency sees of the jobs it names),
//! inactive partitions, array throttles.

use drover_proto::JobState;

use crate::ctld::Ctld;
use crate::deps::{self, Seen, Verdict};
use crate::job::Job;

/// Why a pending job may not be considered now (None: it may).
pub(super) enum Gate {
    Open,
    Closed(&'static str),
    Never,
}

/// A gate, and the dependency outcomes newly decided on the way (to keep
/// with the job: `JobRuntime.dep_state`).
pub(super) struct Gated {
    pub gate: Gate,
    pub dep_state: Option<Vec<u8>>,
}

impl Ctld {
    /// Where job record `j` stands, as a dependency sees it.
    pub(crate) fn seen_of(&self, j: &Job) -> Seen {
        let rt = j.rt();
        match j.state() {
            JobState::Pending => Seen::Pending,
            JobState::Running
            | JobState::Suspended
            | JobState::Completing
            | JobState::Configuring => Seen::Running {
                since: rt.start_time,
            },
            s => Seen::Ended {
                ok: s == JobState::Completed && rt.exit_code == 0,
                at: rt.end_time,
            },
        }
    }

    pub(crate) fn seen(&self, id: u32, task: Option<u32>) -> Vec<Seen> {
        let of = |j: &Job| self.seen_of(j);
        let mut out = Vec::new();
        let tasks = self.array_tasks.get(&id);
        let meta = self.jobs.get(&id).filter(|j| j.rt().array_job_id == id);
        if tasks.is_some() || meta.is_some() {
            // A job array: all tasks, or the one named.
            if let Some(m) = meta {
                if m.is_meta() {
                    for &t in &m.pending_tasks {
                        if task.is_none_or(|x| x == t) {
                            out.push(Seen::Pending);
                        }
                    }
                } else if task.is_none_or(|x| x == m.rt().array_task_id) {
                    out.push(of(m));
                }
            }
            for tid in tasks.into_iter().flatten() {
                if let Some(j) = self.jobs.get(tid) {
                    if task.is_none_or(|x| x == j.rt().array_task_id) {
                        out.push(of(j));
                    }
                }
            }
            if out.is_empty() && task.is_some() {
                out.push(Seen::Unknown);
            }
            return out;
        }
        match self.jobs.get(&id) {
            Some(j) => vec![of(j)],
            None => vec![Seen::Unknown],
        }
    }

    /// The job's dependency now (Satisfied without one), and its newly
    /// decided outcomes. Evaluated for held jobs too, as Slurm does, so an
    /// outcome is kept before the job it names can be purged.
    fn dependency(&self, job: &Job, t: i64) -> (Verdict, Option<Vec<u8>>) {
        let Some(dep) = &job.dep else {
            return (Verdict::Satisfied, None);
        };
        let rt = job.rt();
        let name = &job.spec().name;
        let verdicts: Vec<Verdict> =
            dep.conds
                .iter()
                .enumerate()
                .map(|(i, c)| match c.kind {
                    deps::Kind::Singleton => {
                        let busy = self.jobs.values().any(|o| {
                            o.id() < job.id()
                                && o.rec.uid == job.rec.uid
                                && &o.spec().name == name
                                && !o.state().is_final()
                        });
                        if busy {
                            Verdict::Wait
                        } else {
                            Verdict::Satisfied
                        }
                    }
                    deps::Kind::AfterCorr => deps::decided(&rt.dep_state, i)
                        .unwrap_or_else(|| self.corr_verdict(job, c, t)),
                    _ => deps::decided(&rt.dep_state, i).unwrap_or_else(|| {
                        let (id, task) = c.job.unwrap_or((0, None));
                        deps::eval_cond(c, &self.seen(id, task), t)
                    }),
                })
                .collect();
        // Every outcome is kept but a singleton's (which may change back).
        let keep = |i: usize| dep.conds[i].kind != deps::Kind::Singleton;
        let state = deps::settle(&rt.dep_state, &verdicts, &keep);
        (deps::combine(dep, &verdicts), state)
    }

    pub(super) fn gate(&self, job: &Job, t: i64) -> Gated {
        let rt = job.rt();
        let (dep, dep_state) = self.dependency(job, t);
        let gate = if rt.hold == 2 {
            Gate::Closed("JobHeldAdmin")
        } else if rt.hold == 1 || rt.hold == crate::job::HOLD_SPECIAL_EXIT {
            Gate::Closed("JobHeldUser")
        } else if rt.hold == crate::job::HOLD_LAUNCH_FAILED {
            Gate::Closed(crate::job::REASON_LAUNCH_FAILED_HELD)
        } else if job.spec().begin_time > t {
            Gate::Closed("BeginTime")
        } else if dep == Verdict::Wait {
            Gate::Closed("Dependency")
        } else if dep == Verdict::Never {
            Gate::Never
        } else if self.partitions_inactive(job) {
            Gate::Closed("PartitionInactive")
        } else if self.array_throttled(job) {
            Gate::Closed("JobArrayTaskLimit")
        } else {
            Gate::Open
        };
        Gated { gate, dep_state }
    }

    /// Every partition `job` may run in is INACTIVE (Slurm's
    /// WAIT_PART_INACTIVE; DOWN ones are the planner's PartitionDown).
    fn partitions_inactive(&self, job: &Job) -> bool {
        let inactive =
            |p: &crate::cluster::Partition| p.conf.state.eq_ignore_ascii_case("INACTIVE");
        if !self.cluster.parts.iter().any(inactive) {
            return false;
        }
        job.spec().partition.split(',').all(|n| {
            self.cluster
                .part_idx(n.trim())
                .is_some_and(|i| inactive(&self.cluster.parts[i]))
        })
    }

    /// The array `job` belongs to (its meta record, or a task split off
    /// it while pending) runs as many tasks as its throttle allows.
    pub(super) fn array_throttled(&self, job: &Job) -> bool {
        let rt = job.rt();
        if rt.array_job_id == 0 || job.state() != JobState::Pending {
            return false;
        }
        let max = self
            .jobs
            .get(&rt.array_job_id)
            .filter(|m| m.is_meta())
            .map_or(rt.array_max_running, |m| m.rt().array_max_running);
        max > 0 && self.array_running(rt.array_job_id) >= max
    }

    pub(super) fn array_running(&self, array_id: u32) -> u32 {
        self.array_tasks
            .get(&array_id)
            .map(|v| {
                v.iter()
                    .filter(|id| {
                        self.jobs.get(id).is_some_and(|j| {
                            !j.state().is_final() && j.state() != JobState::Pending
                        })
                    })
                    .count() as u32
            })
            .unwrap_or(0)
    }
}
