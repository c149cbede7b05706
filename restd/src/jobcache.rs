//! The cache behind `GET /slurm/v0.0.40/jobs`: each job's JSON object as
//! last written (shared bytes, sent as they are: [`crate::jobsbody`]),
//! kept with the [`JobInfo`] it was written from. A listing asks the
//! controller (`GetJobsSince`, as the caller: the same jobs the caller may
//! see, in the same order) for full details of the jobs changed since the
//! last listing only (by the controller's change numbers), and a stamp of
//! every job; a job whose stamp shows no change (see
//! [`drover_proto::jobstamp`]) is sent from the cached bytes, its
//! `run_time` (the one member that moves with the clock) appended fresh
//! when it is running. Each caller's last listing is kept too: when the
//! controller says its digest is unchanged the answer is made from it
//! with no other work. The answer is byte for byte what writing every job
//! would give ([`render_all`]); the cache is shared by all callers (a
//! job's object does not depend on who asks; which jobs are listed does,
//! and the controller decides that per call).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use drover_cli::jsonw::{self, J};
use drover_cli::squeue::{self, format as jf};
use drover_proto::{jobstamp, JobInfo, JobStamp, JobState, INFINITE};

use crate::jobsbody::Pieces;

/// The member every job object ends with; what follows it is written at
/// each answer when it moves with the clock.
const LAST_MEMBER: &str = "\"run_time\":";

/// Jobs not listed for this long (purged, or nobody asked) are dropped;
/// so are callers' listings.
const FORGET_AFTER_SECS: i64 = 600;

/// The listing a written job came from.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The controller's time of the listing.
    pub taken_at: i64,
    /// The controller process and its change number at the listing (0:
    /// a controller without change numbers).
    pub incarnation: u64,
    pub seq: u64,
}

/// One row of a job, written.
struct Row {
    /// `,` and the object: whole, or up to and including [`LAST_MEMBER`]
    /// when `tail` says its run time moves with the clock.
    bytes: Bytes,
    tail: Option<JobState>,
}

/// One job, written.
pub struct Entry {
    pub info: JobInfo,
    origin: Origin,
    /// The job's change number at that listing.
    seq: u64,
    /// Empty: the job shows no row.
    rows: Vec<Row>,
    /// Some row ends otherwise than with [`LAST_MEMBER`]: never reused.
    odd: bool,
    /// Written with `end_time` 0: an unlimited job's end still to come.
    end_hidden: bool,
    /// Local time it was last listed (for forgetting).
    seen: AtomicI64,
}

fn end_hidden(j: &JobInfo, now: i64) -> bool {
    j.time_limit == INFINITE && j.end_time > now
}

/// Is the run time of a row in `state` the same at every moment (see
/// [`jf::time_used`])?
fn clock_free(j: &JobInfo, state: JobState) -> bool {
    j.start_time == 0
        || matches!(state, JobState::Pending | JobState::Suspended)
        || (state != JobState::Running && j.end_time != 0)
}

impl Entry {
    /// Write `info` at local time `now`.
    pub fn new(
        info: JobInfo,
        origin: Origin,
        p: &squeue::Params,
        now: i64,
        cluster: &str,
    ) -> Entry {
        let mut found = Vec::new();
        squeue::filter(&info, p, &mut found);
        let mut odd = false;
        let rows = found
            .iter()
            .map(|r| {
                let mut s = String::with_capacity(3584);
                s.push(',');
                jsonw::write_compact(&mut s, &drover_cli::json::job(r, now, cluster));
                let state = jf::state_of(r);
                let tail = match s.rfind(LAST_MEMBER) {
                    Some(_) if clock_free(r.job, state) => None,
                    Some(i) => {
                        s.truncate(i + LAST_MEMBER.len());
                        Some(state)
                    }
                    None => {
                        odd = true;
                        None
                    }
                };
                Row {
                    bytes: Bytes::from(s),
                    tail,
                }
            })
            .collect();
        Entry {
            end_hidden: end_hidden(&info, now),
            info,
            origin,
            seq: 0,
            rows,
            odd,
            seen: AtomicI64::new(now),
        }
    }

    /// Can these bytes be used at local time `now`?
    fn current(&self, now: i64) -> bool {
        !self.odd && end_hidden(&self.info, now) == self.end_hidden
    }

    /// May this entry stand for the job `s` stamps, in a listing of
    /// controller process `incarnation`? By change number when it came
    /// from the same process; by time otherwise.
    fn usable(&self, s: &JobStamp, incarnation: u64) -> bool {
        if incarnation != 0 && self.origin.incarnation == incarnation {
            self.info.job_id == s.job_id && self.seq == s.seq
        } else {
            jobstamp::usable(&self.info, self.origin.taken_at, s)
        }
    }

    fn pieces(&self, out: &mut Pieces, first: &mut bool, now: i64) {
        for row in &self.rows {
            out.push(if *first {
                row.bytes.slice(1..)
            } else {
                row.bytes.clone()
            });
            *first = false;
            if let Some(state) = row.tail {
                let used = jf::time_used(&self.info, state, now);
                let mut t = String::with_capacity(24);
                jsonw::write_compact(&mut t, &J::num(used));
                t.push('}');
                out.push(Bytes::from(t));
            }
        }
    }
}

/// A caller's last listing.
struct Listing {
    origin: Origin,
    digest: u64,
    stamps: Arc<Vec<JobStamp>>,
    entries: Arc<Vec<Arc<Entry>>>,
    seen: i64,
}

#[derive(Default)]
struct Inner {
    jobs: HashMap<u32, Arc<Entry>>,
    /// The controller's time of the last complete listing: what a
    /// controller without change numbers is asked changes since (0:
    /// everything in full).
    since: i64,
    /// The controller process of the last listing, and the first change
    /// number it did not cover.
    incarnation: u64,
    since_seq: u64,
    /// Callers' last listings, by uid.
    lists: HashMap<u32, Listing>,
    last_sweep: i64,
}

/// The shared cache.
#[derive(Default)]
pub struct JobCache {
    inner: Mutex<Inner>,
}

/// What to ask the controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ask {
    pub since: i64,
    pub incarnation: u64,
    pub since_seq: u64,
    /// The digest of the caller's last listing (0: none).
    pub known_digest: u64,
}

/// What one listing decided, job by job.
pub enum Plan {
    /// Every job at hand, in order.
    Ready(Arc<Vec<Arc<Entry>>>),
    /// Some jobs were neither sent in full nor held in a usable state:
    /// ask again for the changes since these.
    Refetch { since: i64, since_seq: u64 },
}

/// One `GetJobsSince` answer, less the jobs sent in full.
pub struct Answer {
    pub origin: Origin,
    pub digest: u64,
    pub stamps: Vec<JobStamp>,
}

impl JobCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What caller `uid` asks next.
    pub fn ask(&self, uid: u32) -> Ask {
        let g = self.lock();
        let known_digest = g
            .lists
            .get(&uid)
            .filter(|l| l.origin.incarnation == g.incarnation && g.incarnation != 0)
            .map_or(0, |l| l.digest);
        Ask {
            since: g.since,
            incarnation: g.incarnation,
            since_seq: g.since_seq,
            known_digest,
        }
    }

    /// The controller found `uid`'s listing unchanged (`digest`): that
    /// listing again, its bytes rewritten where time alone moved them.
    /// None: it is no longer held (ask again, naming no digest).
    pub fn unchanged(
        &self,
        uid: u32,
        incarnation: u64,
        digest: u64,
        p: &squeue::Params,
        now: i64,
        cluster: &str,
    ) -> Option<Plan> {
        let (origin, stamps, entries) = {
            let mut g = self.lock();
            let l = g.lists.get_mut(&uid).filter(|l| {
                l.digest == digest && l.origin.incarnation == incarnation && incarnation != 0
            })?;
            l.seen = now;
            (l.origin, l.stamps.clone(), l.entries.clone())
        };
        if entries.iter().all(|e| e.current(now)) {
            for e in entries.iter() {
                e.seen.store(now, Ordering::Relaxed);
            }
            return Some(Plan::Ready(entries));
        }
        let answer = Answer {
            origin,
            digest,
            stamps: stamps.as_ref().clone(),
        };
        Some(self.plan(uid, answer, Vec::new(), p, now, cluster))
    }

    /// Combine one `GetJobsSince` answer for caller `uid` with what is
    /// held. `fresh` are the changed jobs already written (in the answer's
    /// order).
    pub fn plan(
        &self,
        uid: u32,
        answer: Answer,
        fresh: Vec<Entry>,
        p: &squeue::Params,
        now: i64,
        cluster: &str,
    ) -> Plan {
        let Answer {
            origin,
            digest,
            stamps,
        } = answer;
        let inc = origin.incarnation;
        let mut fresh: HashMap<u32, Entry> =
            fresh.into_iter().map(|e| (e.info.job_id, e)).collect();
        let mut out = Vec::with_capacity(stamps.len());
        let mut missing: Option<(i64, u64)> = None;
        let mut g = self.lock();
        for s in &stamps {
            if let Some(mut e) = fresh.remove(&s.job_id) {
                e.seq = s.seq;
                let e = Arc::new(e);
                g.jobs.insert(s.job_id, e.clone());
                out.push(e);
                continue;
            }
            let e = match g.jobs.get(&s.job_id) {
                Some(e) if e.usable(s, inc) => e.clone(),
                _ => {
                    let (t, q) = missing.unwrap_or((s.last_changed, s.seq));
                    missing = Some((t.min(s.last_changed), q.min(s.seq)));
                    continue;
                }
            };
            if jobstamp::agrees(&e.info, s) && e.current(now) {
                e.seen.store(now, Ordering::Relaxed);
                out.push(e);
                continue;
            }
            // Moved without a change (a priority, an expected start) or
            // its end is no longer to come: written again from what is held.
            let mut info = e.info.clone();
            jobstamp::apply(&mut info, s);
            let mut w = Entry::new(info, e.origin, p, now, cluster);
            w.seq = e.seq;
            let e = Arc::new(w);
            g.jobs.insert(s.job_id, e.clone());
            out.push(e);
        }
        if let Some((t, q)) = missing {
            return Plan::Refetch {
                since: t,
                since_seq: q,
            };
        }
        g.since = g.since.max(origin.taken_at);
        if inc != g.incarnation {
            g.incarnation = inc;
            g.since_seq = origin.seq + 1;
        } else {
            g.since_seq = g.since_seq.max(origin.seq + 1);
        }
        let out = Arc::new(out);
        if inc != 0 {
            g.lists.insert(
                uid,
                Listing {
                    origin,
                    digest,
                    stamps: Arc::new(stamps),
                    entries: out.clone(),
                    seen: now,
                },
            );
        }
        if now - g.last_sweep >= 60 {
            g.last_sweep = now;
            g.jobs
                .retain(|_, e| now - e.seen.load(Ordering::Relaxed) < FORGET_AFTER_SECS);
            g.lists.retain(|_, l| now - l.seen < FORGET_AFTER_SECS);
        }
        Plan::Ready(out)
    }
}

/// The answer's envelope after the jobs.
pub fn tail(out: &mut String, now: i64) {
    out.push_str("],\"last_backfill\":");
    out.push_str(&drover_cli::json::num(0).to_string());
    out.push_str(",\"last_update\":");
    out.push_str(&drover_cli::json::num(now).to_string());
    out.push_str(",\"meta\":");
    out.push_str(&crate::reply::meta().to_string());
    out.push_str(",\"errors\":[],\"warnings\":[]}");
}

/// The answer from written jobs, in pieces that share their bytes.
pub fn assemble(entries: &[Arc<Entry>], now: i64) -> Pieces {
    let n: usize = entries.iter().map(|e| e.rows.len() * 2).sum();
    let mut out = Pieces::with_capacity(n + 2);
    out.push(Bytes::from_static(b"{\"jobs\":["));
    let mut first = true;
    for e in entries {
        e.pieces(&mut out, &mut first, now);
    }
    let mut t = String::with_capacity(512);
    tail(&mut t, now);
    out.push(Bytes::from(t));
    out
}

/// Every job written afresh (no cache): the answer `assemble` must equal.
pub fn render_all(jobs: &[JobInfo], p: &squeue::Params, now: i64, cluster: &str) -> String {
    let mut rows = Vec::with_capacity(jobs.len());
    for j in jobs {
        squeue::filter(j, p, &mut rows);
    }
    let mut out = String::with_capacity(256 + rows.len() * 2048);
    out.push_str("{\"jobs\":[");
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        jsonw::write_compact(&mut out, &drover_cli::json::job(r, now, cluster));
    }
    tail(&mut out, now);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::JobState as S;

    fn params() -> squeue::Params {
        let args: Vec<String> = ["--json", "-t", "all"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        match squeue::parse_args(&args, &|_| None, &|_| None, 1000) {
            Ok(squeue::Parsed::Run(p)) => *p,
            _ => panic!("squeue arguments"),
        }
    }

    fn job(id: u32, state: S, last_changed: i64) -> JobInfo {
        JobInfo {
            job_id: id,
            state: state as i32,
            last_changed,
            submit_time: 100,
            name: format!("job \"{id}\""),
            user_name: "nobody".into(),
            partition: "debug".into(),
            time_limit: 30,
            ..Default::default()
        }
    }

    /// Pending, running (limited and unlimited, its end to come), suspended,
    /// completed, an array task and an array record with no pending task.
    fn queue() -> Vec<JobInfo> {
        let mut running = job(2, S::Running, 150);
        running.start_time = 150;
        running.end_time = 150 + 30 * 60;
        let mut unlimited = job(3, S::Running, 160);
        unlimited.start_time = 160;
        unlimited.time_limit = INFINITE;
        unlimited.end_time = 400;
        let mut suspended = job(4, S::Suspended, 170);
        suspended.start_time = 120;
        suspended.suspend_time = 170;
        suspended.pre_sus_time = 50;
        let mut done = job(5, S::Completed, 180);
        done.start_time = 110;
        done.end_time = 180;
        let mut task = job(7, S::Pending, 190);
        task.array_job_id = 6;
        task.array_task_id = 1;
        let mut meta = job(6, S::Pending, 190);
        meta.array_job_id = 6;
        meta.is_array_meta = true;
        vec![
            job(1, S::Pending, 100),
            running,
            unlimited,
            suspended,
            done,
            meta,
            task,
        ]
    }

    fn answer(c: &JobCache, jobs: &[JobInfo], full: &[u32], taken_at: i64, now: i64) -> Plan {
        let stamps: Vec<JobStamp> = jobs.iter().map(jobstamp::of).collect();
        let origin = Origin {
            taken_at,
            ..Default::default()
        };
        answer_with(c, jobs, stamps, full, origin, now)
    }

    fn answer_with(
        c: &JobCache,
        jobs: &[JobInfo],
        stamps: Vec<JobStamp>,
        full: &[u32],
        origin: Origin,
        now: i64,
    ) -> Plan {
        let p = params();
        let fresh = jobs
            .iter()
            .filter(|j| full.contains(&j.job_id))
            .map(|j| Entry::new(j.clone(), origin, &p, now, "c"))
            .collect();
        let digest = stamps.iter().fold(origin.seq, |d, s| {
            d.wrapping_mul(31) ^ u64::from(s.priority) ^ s.seq ^ u64::from(s.job_id)
        });
        let a = Answer {
            origin,
            digest,
            stamps,
        };
        c.plan(0, a, fresh, &p, now, "c")
    }

    fn ready(plan: Plan, now: i64) -> String {
        match plan {
            Plan::Ready(e) => assemble(&e, now).concat(),
            Plan::Refetch { since, .. } => panic!("asked again since {since}"),
        }
    }

    #[test]
    fn held_jobs_are_written_exactly_as_afresh() {
        let c = JobCache::default();
        let p = params();
        let mut jobs = queue();
        let ids: Vec<u32> = jobs.iter().map(|j| j.job_id).collect();
        let first = ready(answer(&c, &jobs, &ids, 200, 300), 300);
        assert_eq!(first, render_all(&jobs, &p, 300, "c"));
        assert!(first.contains("\"run_time\":"));
        assert!(
            !first.contains("\"job_id\":6,"),
            "no row for the array record"
        );
        assert_eq!(c.ask(0).since, 200);
        // Later, nothing changed: run times move, an unlimited job's end
        // comes (shown from then on), all from what is held.
        for now in [301, 399, 400, 401, 5000] {
            let got = ready(answer(&c, &jobs, &[], 250, now), now);
            assert_eq!(got, render_all(&jobs, &p, now, "c"), "at {now}");
        }
        // A priority and an expected start moved without a change.
        jobs[0].priority = 77;
        jobs[0].start_time = 9000;
        let got = ready(answer(&c, &jobs, &[], 260, 5001), 5001);
        assert_eq!(got, render_all(&jobs, &p, 5001, "c"));
        assert!(got.contains("\"priority\":{\"set\":true,\"infinite\":false,\"number\":77}"));
    }

    #[test]
    fn a_job_neither_sent_nor_held_usable_is_asked_for_again() {
        let c = JobCache::default();
        let p = params();
        let mut jobs = queue();
        let ids: Vec<u32> = jobs.iter().map(|j| j.job_id).collect();
        ready(answer(&c, &jobs, &ids, 200, 300), 300);
        // Job 2 changed at 210 and the answer did not carry it.
        jobs[1].last_changed = 210;
        jobs[1].name = "renamed".into();
        match answer(&c, &jobs, &[], 220, 310) {
            Plan::Refetch { since, .. } => assert_eq!(since, 210),
            Plan::Ready(_) => panic!("a changed job written from old bytes"),
        }
        let got = ready(answer(&c, &jobs, &[2], 220, 310), 310);
        assert_eq!(got, render_all(&jobs, &p, 310, "c"));
        // Held from a listing in the second of its change: not trusted.
        let c = JobCache::default();
        let jobs = vec![job(1, S::Pending, 200)];
        ready(answer(&c, &jobs, &[1], 200, 300), 300);
        assert!(matches!(
            answer(&c, &jobs, &[], 201, 301),
            Plan::Refetch { since: 200, .. }
        ));
        // Unknown to the cache: asked for.
        let c = JobCache::default();
        assert!(matches!(
            answer(&c, &jobs, &[], 201, 301),
            Plan::Refetch { since: 200, .. }
        ));
        // An empty queue is ready at once.
        assert_eq!(
            ready(answer(&c, &[], &[], 201, 301), 301),
            render_all(&[], &p, 301, "c")
        );
    }

    /// Stamps as a controller with change numbers gives them.
    fn numbered(jobs: &[JobInfo], seqs: &[u64]) -> Vec<JobStamp> {
        jobs.iter()
            .zip(seqs)
            .map(|(j, q)| JobStamp {
                seq: *q,
                ..jobstamp::of(j)
            })
            .collect()
    }

    #[test]
    fn by_change_numbers_a_change_in_the_same_second_is_caught_and_an_unchanged_listing_reused() {
        let c = JobCache::default();
        let p = params();
        let mut jobs = queue();
        let ids: Vec<u32> = jobs.iter().map(|j| j.job_id).collect();
        let mut seqs: Vec<u64> = (1..=jobs.len() as u64).collect();
        let at = |taken_at, seq| Origin {
            taken_at,
            incarnation: 9,
            seq,
        };
        let first = answer_with(&c, &jobs, numbered(&jobs, &seqs), &ids, at(200, 7), 300);
        assert_eq!(ready(first, 300), render_all(&jobs, &p, 300, "c"));
        let ask = c.ask(0);
        assert_eq!((ask.incarnation, ask.since_seq), (9, 8));
        assert_ne!(ask.known_digest, 0);
        assert_eq!(c.ask(1).known_digest, 0, "another caller has no listing");
        // Held from a listing in the second of the change, yet usable: the
        // change numbers agree (by time it would be asked for again).
        let got = answer_with(&c, &jobs, numbered(&jobs, &seqs), &[], at(200, 7), 301);
        assert_eq!(ready(got, 301), render_all(&jobs, &p, 301, "c"));
        // Job 2 renamed in that same second: its number moved, and the
        // answer did not carry it: asked for since just before it.
        jobs[1].name = "renamed".into();
        seqs[1] = 8;
        match answer_with(&c, &jobs, numbered(&jobs, &seqs), &[], at(200, 8), 302) {
            Plan::Refetch { since_seq, .. } => assert_eq!(since_seq, 8),
            Plan::Ready(_) => panic!("a changed job written from old bytes"),
        }
        let got = answer_with(&c, &jobs, numbered(&jobs, &seqs), &[2], at(200, 8), 302);
        assert_eq!(ready(got, 302), render_all(&jobs, &p, 302, "c"));
        // Unchanged: the caller's listing again, byte for byte as afresh
        // as time goes by (run times; the unlimited job's end at 400).
        let digest = c.ask(0).known_digest;
        for now in [303, 399, 400, 401, 5000] {
            let plan = c.unchanged(0, 9, digest, &p, now, "c").expect("held");
            assert_eq!(
                ready(plan, now),
                render_all(&jobs, &p, now, "c"),
                "at {now}"
            );
        }
        // Not this digest, or not this controller: not held.
        assert!(c.unchanged(0, 9, digest ^ 1, &p, 5001, "c").is_none());
        assert!(c.unchanged(0, 10, digest, &p, 5001, "c").is_none());
        assert!(c.unchanged(1, 9, digest, &p, 5001, "c").is_none());
    }

    #[test]
    fn pending_and_finished_jobs_are_sent_whole_running_ones_with_a_fresh_run_time() {
        let p = params();
        let jobs = queue();
        let mut pieces = 0;
        let mut tails = 0;
        for j in &jobs {
            let e = Entry::new(j.clone(), Origin::default(), &p, 300, "c");
            for r in &e.rows {
                pieces += 1;
                let text = std::str::from_utf8(&r.bytes).unwrap();
                assert!(text.starts_with(",{"));
                if r.tail.is_some() {
                    tails += 1;
                    assert!(text.ends_with(LAST_MEMBER));
                    assert_eq!(j.state, S::Running as i32, "{text}");
                } else {
                    assert!(text.ends_with('}'));
                }
            }
        }
        assert_eq!(tails, 2, "the two running jobs");
        assert!(pieces > tails);
    }
}
