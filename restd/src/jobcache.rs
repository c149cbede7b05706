//! The cache behind `GET /slurm/v0.0.40/jobs`: each job's JSON object as
//! last written, kept with the [`JobInfo`] it was written from. A listing
//! asks the controller (`GetJobsSince`, as the caller: the same jobs the
//! caller may see, in the same order) for full details of the jobs changed
//! since the previous listing only, and a stamp of every job; a held job
//! whose stamp shows no change (see [`drover_proto::jobstamp`]) is written
//! from the cached bytes, its `run_time` (the one member that moves with
//! the clock) appended fresh. The answer is byte for byte what writing
//! every job would give ([`render_all`]); the cache is shared by all
//! callers (a job's object does not depend on who asks; which jobs are
//! listed does, and the controller decides that per call).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use drover_cli::jsonw::{self, J};
use drover_cli::squeue::{self, format as jf};
use drover_proto::{jobstamp, JobInfo, JobStamp, JobState, INFINITE};

/// The member every job object ends with; what follows it is written at
/// each answer.
const LAST_MEMBER: &str = "\"run_time\":";

/// Jobs not listed for this long (purged, or nobody asked) are dropped.
const FORGET_AFTER_SECS: i64 = 600;

/// One job, written.
pub struct Entry {
    pub info: JobInfo,
    /// The controller's time of the listing `info` is as of.
    taken_at: i64,
    /// Per row: the object up to and including [`LAST_MEMBER`], and the
    /// state its run time is counted in (None: the whole object, written
    /// without that member last; never reused). Empty: the job shows no row.
    rows: Vec<(String, Option<JobState>)>,
    /// Written with `end_time` 0: an unlimited job's end still to come.
    end_hidden: bool,
    /// Local time it was last listed (for forgetting).
    seen: AtomicI64,
}

fn end_hidden(j: &JobInfo, now: i64) -> bool {
    j.time_limit == INFINITE && j.end_time > now
}

impl Entry {
    /// Write `info` at local time `now`.
    pub fn new(info: JobInfo, taken_at: i64, p: &squeue::Params, now: i64, cluster: &str) -> Entry {
        let mut found = Vec::new();
        squeue::filter(&info, p, &mut found);
        let rows = found
            .iter()
            .map(|r| {
                let mut s = String::with_capacity(3584);
                jsonw::write_compact(&mut s, &drover_cli::json::job(r, now, cluster));
                match s.rfind(LAST_MEMBER) {
                    Some(i) => {
                        s.truncate(i + LAST_MEMBER.len());
                        (s, Some(jf::state_of(r)))
                    }
                    None => (s, None),
                }
            })
            .collect();
        Entry {
            end_hidden: end_hidden(&info, now),
            info,
            taken_at,
            rows,
            seen: AtomicI64::new(now),
        }
    }

    /// Can these bytes be used at local time `now`?
    fn current(&self, now: i64) -> bool {
        end_hidden(&self.info, now) == self.end_hidden && self.rows.iter().all(|r| r.1.is_some())
    }

    fn write(&self, out: &mut String, first: &mut bool, now: i64) {
        for (head, state) in &self.rows {
            if !*first {
                out.push(',');
            }
            *first = false;
            out.push_str(head);
            if let Some(state) = state {
                let used = jf::time_used(&self.info, *state, now);
                jsonw::write_compact(out, &J::num(used));
                out.push('}');
            }
        }
    }

    fn len(&self) -> usize {
        self.rows.iter().map(|(h, _)| h.len() + 48).sum()
    }
}

#[derive(Default)]
struct Inner {
    jobs: HashMap<u32, Arc<Entry>>,
    /// The controller's time of the last complete listing: what the next
    /// asks changes since (0: everything in full).
    since: i64,
    last_sweep: i64,
}

/// The shared cache.
#[derive(Default)]
pub struct JobCache {
    inner: Mutex<Inner>,
}

/// What one listing decided, job by job.
pub enum Plan {
    /// Every job at hand, in order.
    Ready(Vec<Arc<Entry>>),
    /// Some jobs were neither sent in full nor held in a usable state:
    /// ask again for the changes since this time.
    Refetch(i64),
}

impl JobCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The time to ask changes since.
    pub fn since(&self) -> i64 {
        self.lock().since
    }

    /// Combine one `GetJobsSince` answer with what is held. `fresh` are the
    /// changed jobs already written (in the answer's order).
    pub fn plan(
        &self,
        stamps: &[JobStamp],
        fresh: Vec<Entry>,
        taken_at: i64,
        p: &squeue::Params,
        now: i64,
        cluster: &str,
    ) -> Plan {
        let mut fresh: HashMap<u32, Arc<Entry>> = fresh
            .into_iter()
            .map(|e| (e.info.job_id, Arc::new(e)))
            .collect();
        let mut out = Vec::with_capacity(stamps.len());
        let mut missing: Option<i64> = None;
        let mut g = self.lock();
        for s in stamps {
            if let Some(e) = fresh.remove(&s.job_id) {
                g.jobs.insert(s.job_id, e.clone());
                out.push(e);
                continue;
            }
            let e = match g.jobs.get(&s.job_id) {
                Some(e) if jobstamp::usable(&e.info, e.taken_at, s) => e.clone(),
                _ => {
                    missing = Some(missing.map_or(s.last_changed, |m| m.min(s.last_changed)));
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
            let e = Arc::new(Entry::new(info, taken_at, p, now, cluster));
            g.jobs.insert(s.job_id, e.clone());
            out.push(e);
        }
        if let Some(m) = missing {
            return Plan::Refetch(m);
        }
        g.since = g.since.max(taken_at);
        if now - g.last_sweep >= 60 {
            g.last_sweep = now;
            g.jobs
                .retain(|_, e| now - e.seen.load(Ordering::Relaxed) < FORGET_AFTER_SECS);
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

/// The answer from written jobs.
pub fn assemble(entries: &[Arc<Entry>], now: i64) -> String {
    let size: usize = entries.iter().map(|e| e.len()).sum();
    let mut out = String::with_capacity(size + 1024);
    out.push_str("{\"jobs\":[");
    let mut first = true;
    for e in entries {
        e.write(&mut out, &mut first, now);
    }
    tail(&mut out, now);
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
        let p = params();
        let stamps: Vec<JobStamp> = jobs.iter().map(jobstamp::of).collect();
        let fresh = jobs
            .iter()
            .filter(|j| full.contains(&j.job_id))
            .map(|j| Entry::new(j.clone(), taken_at, &p, now, "c"))
            .collect();
        c.plan(&stamps, fresh, taken_at, &p, now, "c")
    }

    fn ready(plan: Plan, now: i64) -> String {
        match plan {
            Plan::Ready(e) => assemble(&e, now),
            Plan::Refetch(t) => panic!("asked again since {t}"),
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
        assert_eq!(c.since(), 200);
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
            Plan::Refetch(t) => assert_eq!(t, 210),
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
            Plan::Refetch(200)
        ));
        // Unknown to the cache: asked for.
        let c = JobCache::default();
        assert!(matches!(
            answer(&c, &jobs, &[], 201, 301),
            Plan::Refetch(200)
        ));
        // An empty queue is ready at once.
        assert_eq!(
            ready(answer(&c, &[], &[], 201, 301), 301),
            render_all(&[], &p, 301, "c")
        );
    }
}
