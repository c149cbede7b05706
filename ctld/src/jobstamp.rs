//! `GetJobsSince`: the job listing for droverrestd's cache of rendered
//! jobs. The same jobs, visible to the same caller, in the same order as
//! `GetJobs` without job ids; full details only for the jobs changed after
//! the client's change number (`Job::seq`), a [`JobStamp`] (a few numbers
//! read from the record, no strings built) for every job, and a digest of
//! the whole listing. A poll of an unchanged queue (the digest the client
//! names) is answered `unchanged` with nothing else: one pass over the
//! jobs in the owner task, no allocation, an answer of a few bytes.

use crate::refusal::Refusal;
use drover_proto::auth::Identity;
use drover_proto::{GetJobsSinceRequest, GetJobsSinceResponse, JobStamp, JobState, INFINITE};

use crate::control::job_matches;
use crate::ctld::Ctld;
use crate::job::Job;

impl Ctld {
    /// The listing of the jobs changed at or after `req.since_seq` (this
    /// incarnation's change numbers) or, for a client without change numbers, since
    /// `req.changed_since` (0: every job in full). A listing whose digest
    /// is the client's `known_digest` is answered `unchanged`, empty.
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
        let same = req.incarnation == self.incarnation;
        let listed = |j: &&Job| job_matches(&f, j) && viewer.sees(j.rec.uid);
        let ids = self.index.candidates(&f);
        let jobs: Box<dyn Iterator<Item = &Job>> = match &ids {
            Some(ids) => Box::new(ids.iter().filter_map(|id| self.jobs.get(id).map(|j| &**j))),
            None => Box::new(self.jobs.values().map(|j| &**j)),
        };
        // First the digest alone (no allocation): an unchanged listing
        // ends here.
        let mut d = Digest::default();
        let mut shares = SharesBySpec::default();
        for j in jobs.filter(listed) {
            d.stamp(j.seq, &self.stamp(j, now, &mut shares));
        }
        let digest = d.finish();
        let mut r = GetJobsSinceResponse {
            stamps: Vec::new(),
            jobs: Vec::new(),
            now,
            incarnation: self.incarnation,
            seq: self.change_seq,
            digest,
            unchanged: same && req.known_digest == digest,
        };
        if r.unchanged {
            return Ok(r);
        }
        let jobs: Box<dyn Iterator<Item = &Job>> = match &ids {
            Some(ids) => Box::new(ids.iter().filter_map(|id| self.jobs.get(id).map(|j| &**j))),
            None => Box::new(self.jobs.values().map(|j| &**j)),
        };
        let mut changed = Vec::new();
        for j in jobs.filter(listed) {
            let mut s = self.stamp(j, now, &mut shares);
            s.seq = j.seq;
            let fresh = if same {
                j.seq >= req.since_seq
            } else {
                s.last_changed >= req.changed_since
            };
            if fresh {
                changed.push(s.job_id);
            }
            r.stamps.push(s);
        }
        r.jobs = changed
            .into_iter()
            .filter_map(|id| self.job_info_by_id(id, true))
            .collect();
        Ok(r)
    }

    /// The fields of the job's [`drover_proto::JobInfo`] that move without
    /// `last_changed` moving, exactly as `job_info` and
    /// `add_expected_start` give them.
    pub(crate) fn stamp(&self, job: &Job, now: i64, shares: &mut SharesBySpec) -> JobStamp {
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
                shares.may_share(&self.cfg, job)
            } else {
                rt.share > 1
            },
            stopped: rt.stopped && state == JobState::Running,
            array_pending: if job.is_meta() {
                crate::array::ranges(&job.pending_tasks)
            } else {
                String::new()
            },
            seq: 0,
        }
    }
}

/// Whether pending jobs may share their CPUs, for one listing: worked out
/// once for each run of jobs sharing a spec (`intern.rs`: jobs of equal
/// specs share one), not parsed again from the partition for each.
#[derive(Default)]
pub(crate) struct SharesBySpec {
    /// The last spec's address (specs outlive the listing, which borrows
    /// every job), and its answer.
    last: Option<(usize, bool)>,
}

impl SharesBySpec {
    fn may_share(&mut self, cfg: &drover_conf::Config, job: &Job) -> bool {
        let spec = std::sync::Arc::as_ptr(job.spec_arc()) as usize;
        match self.last {
            Some((s, yes)) if s == spec => yes,
            _ => {
                let yes = crate::jobinfo::may_share(cfg, job.spec());
                self.last = Some((spec, yes));
                yes
            }
        }
    }
}

/// The digest of a listing: every stamp in order, with its job's change
/// number, mixed word by word (a 64-bit multiply-xorshift; not for
/// adversaries, who cannot choose these numbers anyway).
#[derive(Default)]
struct Digest(u64);

impl Digest {
    fn word(&mut self, w: u64) {
        let x = (self.0 ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ (x >> 32);
    }

    fn stamp(&mut self, seq: u64, s: &JobStamp) {
        for w in [
            u64::from(s.job_id),
            seq,
            s.last_changed as u64,
            s.state as u64,
            u64::from(s.priority),
            s.start_time as u64,
            s.end_time as u64,
            s.eligible_time as u64,
            s.suspend_time as u64,
            s.pre_sus_time as u64,
            u64::from(s.oversubscribe) | (u64::from(s.stopped) << 1),
            s.array_pending.len() as u64,
        ] {
            self.word(w);
        }
        for c in s.array_pending.as_bytes().chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            self.word(u64::from_le_bytes(b));
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
