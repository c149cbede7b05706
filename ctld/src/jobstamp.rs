//! `GetJobsSince`: the job listing for droverrestd's cache of rendered
//! jobs. The same jobs, visible to the same caller, in the same order as
//! `GetJobs` without job ids; full details only for the jobs whose
//! `last_changed` is at or after the client's time, a [`JobStamp`] (a few
//! numbers read from the record, no strings built) for every job. A
//! 10,000-job queue polled while little changes is then a small answer,
//! cheap to build in the owner task.

use crate::refusal::Refusal;
use drover_proto::auth::Identity;
use drover_proto::{GetJobsSinceRequest, GetJobsSinceResponse, JobStamp, JobState, INFINITE};

use crate::control::job_matches;
use crate::ctld::Ctld;
use crate::job::Job;

impl Ctld {
    /// The listing since `req.changed_since` (0: every job in full).
    pub fn get_jobs_since(
        &mut self,
        who: &Identity,
        req: GetJobsSinceRequest,
    ) -> Result<GetJobsSinceResponse, Refusal> {
        let f = req.filter.unwrap_or_default();
        if !f.job_ids.is_empty() {
            return Err(Refusal::invalid_argument(
                "GetJobsSince lists jobs; ask GetJobs for jobs by id",
            ));
        }
        let viewer = self.job_viewer(who);
        let now = self.now;
        let mut stamps = Vec::new();
        let mut changed = Vec::new();
        {
            let mut add = |j: &Job| {
                if job_matches(&f, j) && viewer.sees(j.rec.uid) {
                    let s = self.stamp(j, now);
                    if s.last_changed >= req.changed_since {
                        changed.push(s.job_id);
                    }
                    stamps.push(s);
                }
            };
            match self.index.candidates(&f) {
                Some(ids) => ids
                    .iter()
                    .filter_map(|id| self.jobs.get(id))
                    .for_each(|j| add(j)),
                None => self.jobs.values().for_each(|j| add(j)),
            }
        }
        let jobs = changed
            .into_iter()
            .filter_map(|id| self.job_info_by_id(id, true))
            .collect();
        Ok(GetJobsSinceResponse { stamps, jobs, now })
    }

    /// The fields of the job's [`drover_proto::JobInfo`] that move without
    /// `last_changed` moving, exactly as `job_info` and
    /// `add_expected_start` give them.
    fn stamp(&self, job: &Job, now: i64) -> JobStamp {
        let rt = job.rt();
        let state = job.state();
        let pending = state == JobState::Pending;
        let mut start_time = rt.start_time;
        let mut end_time = if rt.end_time != 0 {
            rt.end_time
        } else {
            crate::suspend::shown_end(rt, state, now).unwrap_or(0)
        };
        if pending {
            if let Some(&s) = self.sched.expected.get(&job.id()) {
                let limit = if rt.time_limit == 0 {
                    INFINITE
                } else {
                    rt.time_limit
                };
                start_time = s;
                end_time = if limit == INFINITE {
                    0
                } else {
                    s + i64::from(limit) * 60
                };
            }
        }
        JobStamp {
            job_id: job.id(),
            last_changed: rt.last_changed,
            state: state as i32,
            priority: if rt.hold != 0 { 0 } else { rt.priority },
            start_time,
            end_time,
            eligible_time: if rt.eligible_time == 0 && pending {
                job.spec().begin_time
            } else {
                rt.eligible_time
            },
            suspend_time: rt.suspend_time,
            pre_sus_time: rt.pre_sus_time,
            oversubscribe: if pending {
                crate::jobinfo::may_share(&self.cfg, job.spec())
            } else {
                rt.share > 1
            },
            stopped: rt.stopped && state == JobState::Running,
            array_pending: if job.is_meta() {
                crate::array::ranges(&job.pending_tasks)
            } else {
                String::new()
            },
        }
    }
}
