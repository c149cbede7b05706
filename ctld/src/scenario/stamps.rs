//! `GetJobsSince` (droverrestd's cache): a job held from an earlier listing
//! with a newer stamp patched in is exactly the job `GetJobs` gives now,
//! through priority recalculation, backfill's expected starts, --begin
//! eligibility, start, suspend, resume, end, holds, array task splits and
//! PrivateData; every job changed since the client's time comes in full.

use std::collections::HashMap;

use drover_proto::auth::Identity;
use drover_proto::{jobstamp, GetJobsRequest, GetJobsSinceRequest, JobFilter, JobInfo, JobSpec};

use super::env::{job, root, user, TestEnv, T0, USER};

const CONF: &str = "NodeName=n[1-2] CPUs=2 RealMemory=1000\n\
                    PartitionName=a Nodes=n[1-2] Default=YES MaxTime=UNLIMITED\n\
                    PriorityType=priority/multifactor\n\
                    PriorityWeightAge=100000\n\
                    PriorityMaxAge=00:10:00\n\
                    PrivateData=jobs";

fn all() -> JobFilter {
    JobFilter {
        all_states: true,
        ..Default::default()
    }
}

fn listing(env: &mut TestEnv, who: &Identity) -> Vec<JobInfo> {
    env.core
        .get_jobs(
            who,
            GetJobsRequest {
                filter: Some(all()),
                details: true,
                fields: Vec::new(),
            },
        )
        .expect("listing")
        .jobs
}

/// What a client holds: each job as last given in full, and when.
type Held = HashMap<u32, (JobInfo, i64)>;

/// One poll: the answer agrees with a fresh listing; returns the time to
/// ask from next, the jobs that came in full and how many held jobs the
/// stamps moved (priority, expected start, ... without a change).
fn poll(env: &mut TestEnv, who: &Identity, held: &mut Held, since: i64) -> (i64, Vec<u32>, usize) {
    let fresh = listing(env, who);
    let r = env
        .core
        .get_jobs_since(
            who,
            GetJobsSinceRequest {
                filter: Some(all()),
                changed_since: since,
                ..Default::default()
            },
        )
        .expect("listing since");
    let order: Vec<u32> = r.stamps.iter().map(|s| s.job_id).collect();
    let want: Vec<u32> = fresh.iter().map(|j| j.job_id).collect();
    assert_eq!(order, want, "the same jobs in the same order");
    let changed: Vec<&JobInfo> = fresh.iter().filter(|j| j.last_changed >= since).collect();
    assert_eq!(
        r.jobs.iter().collect::<Vec<_>>(),
        changed,
        "changed in full"
    );
    let full: HashMap<u32, &JobInfo> = r.jobs.iter().map(|j| (j.job_id, j)).collect();
    let mut moved = 0;
    for (s, now) in r.stamps.iter().zip(&fresh) {
        let numberless = drover_proto::JobStamp {
            seq: 0,
            ..s.clone()
        };
        assert_eq!(numberless, jobstamp::of(now), "job {}'s stamp", s.job_id);
        if let Some(j) = full.get(&s.job_id) {
            held.insert(s.job_id, ((*j).clone(), r.now));
            continue;
        }
        let (old, at) = held
            .get(&s.job_id)
            .unwrap_or_else(|| panic!("job {} neither held nor sent", s.job_id));
        assert!(jobstamp::usable(old, *at, s), "job {} usable", s.job_id);
        let mut patched = old.clone();
        if jobstamp::apply(&mut patched, s) {
            moved += 1;
        }
        assert_eq!(&patched, now, "job {} patched", s.job_id);
        held.insert(s.job_id, (patched, r.now));
    }
    (r.now, full.keys().copied().collect(), moved)
}

/// A job of two CPUs per task: a whole node of CONF.
fn two_cpus(minutes: u32) -> JobSpec {
    JobSpec {
        cpus_per_task: 2,
        ..job(minutes)
    }
}

#[test]
fn held_jobs_patched_with_stamps_are_the_jobs_listed_now() {
    let mut env = TestEnv::new(CONF);
    let run = env.sbatch(job(30));
    let long = env.sbatch(two_cpus(60));
    let waiting: Vec<u32> = (0..3).map(|_| env.sbatch(two_cpus(20))).collect();
    let later = env.sbatch(JobSpec {
        begin_time: T0 + 300,
        ..job(5)
    });
    let array = env.sbatch(JobSpec {
        array: "1-4".into(),
        ..job(10)
    });
    let held_job = env.sbatch(job(10));
    env.control("hold", held_job).unwrap();
    let mut held = Held::new();
    let (mut since, _, _) = poll(&mut env, &root(), &mut held, 0);
    let mut moved = 0;
    assert_eq!(held.len(), listing(&mut env, &root()).len());
    let mut t = T0;
    // Passes: priorities age, expected starts and eligibility move.
    for step in 0..12 {
        t += 60;
        env.advance(t);
        match step {
            2 => env.control("suspend", run).unwrap(),
            4 => env.control("resume", run).unwrap(),
            5 => env.control("release", held_job).unwrap(),
            6 => env.finish(run, 0),
            8 => env.cancel(waiting[0]),
            _ => {}
        }
        let (next, full, m) = poll(&mut env, &root(), &mut held, since);
        since = next;
        moved += m;
        if step == 2 {
            // Nothing happened to the long job since the last poll: a
            // stamp alone.
            assert!(!full.contains(&long), "{full:?}");
        }
    }
    assert!(
        moved > 0,
        "no stamp moved a held job: the patch went untested"
    );
    let _ = (later, array);
    // The owner alone sees their jobs; another user's poll lists none.
    let mut mine = Held::new();
    let (s, _, _) = poll(&mut env, &user(), &mut mine, 0);
    assert!(!mine.is_empty());
    poll(&mut env, &user(), &mut mine, s);
    let other = Identity {
        uid: USER + 1,
        gid: USER + 1,
        groups: vec![USER + 1],
        ..user()
    };
    let r = env
        .core
        .get_jobs_since(
            &other,
            GetJobsSinceRequest {
                filter: Some(all()),
                changed_since: 0,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(r.stamps.is_empty() && r.jobs.is_empty());
}

#[test]
fn jobs_by_id_are_refused() {
    let mut env = TestEnv::new(CONF);
    let id = env.sbatch(job(5));
    let r = env.core.get_jobs_since(
        &root(),
        GetJobsSinceRequest {
            filter: Some(JobFilter {
                job_ids: vec![id.to_string()],
                ..Default::default()
            }),
            changed_since: 0,
            ..Default::default()
        },
    );
    assert!(r.is_err());
}

/// A client's state between polls by change number.
#[derive(Default)]
struct Since {
    incarnation: u64,
    seq: u64,
    digest: u64,
}

fn poll_seq(
    env: &mut TestEnv,
    who: &Identity,
    at: &mut Since,
) -> drover_proto::GetJobsSinceResponse {
    let r = env
        .core
        .get_jobs_since(
            who,
            GetJobsSinceRequest {
                filter: Some(all()),
                changed_since: 0,
                incarnation: at.incarnation,
                since_seq: at.seq,
                known_digest: at.digest,
            },
        )
        .expect("listing since");
    *at = Since {
        incarnation: r.incarnation,
        seq: r.seq + 1,
        digest: r.digest,
    };
    r
}

fn ids(jobs: &[JobInfo]) -> Vec<u32> {
    jobs.iter().map(|j| j.job_id).collect()
}

#[test]
fn change_numbers_send_exactly_the_changed_jobs_and_nothing_for_an_unchanged_queue() {
    let mut env = TestEnv::new(CONF);
    let a = env.sbatch(job(30));
    let b = env.sbatch(two_cpus(20));
    let c = env.sbatch(two_cpus(20));
    let mut at = Since::default();
    let first = poll_seq(&mut env, &root(), &mut at);
    assert!(!first.unchanged);
    assert_ne!(first.incarnation, 0);
    assert_eq!(ids(&first.jobs), ids(&listing(&mut env, &root())));
    // Nothing happened: unchanged, and nothing else in the answer.
    let r = poll_seq(&mut env, &root(), &mut at);
    assert!(r.unchanged);
    assert!(r.stamps.is_empty() && r.jobs.is_empty());
    assert_eq!(r.digest, first.digest);
    // A hold in the same second as the last poll: that job alone in full
    // (a client by seconds would have to take every job of the second).
    env.control("hold", c).unwrap();
    let r = poll_seq(&mut env, &root(), &mut at);
    assert!(!r.unchanged);
    assert_eq!(ids(&r.jobs), vec![c]);
    assert_eq!(r.stamps.len(), 3);
    assert!(r.stamps.iter().all(|s| s.seq != 0));
    assert!(poll_seq(&mut env, &root(), &mut at).unchanged);
    // Time passes: priorities age without a change: new stamps, no job in
    // full.
    let before: Vec<u32> = listing(&mut env, &root())
        .iter()
        .map(|j| j.priority)
        .collect();
    env.advance(T0 + 600);
    let after: Vec<u32> = listing(&mut env, &root())
        .iter()
        .map(|j| j.priority)
        .collect();
    let prev = at.seq;
    let r = poll_seq(&mut env, &root(), &mut at);
    if before != after {
        assert!(!r.unchanged);
    }
    let numbered: Vec<u32> = r
        .stamps
        .iter()
        .filter(|s| s.seq >= prev)
        .map(|s| s.job_id)
        .collect();
    assert_eq!(ids(&r.jobs), numbered, "in full: those changed since");
    assert!(poll_seq(&mut env, &root(), &mut at).unchanged);
    // Another incarnation (a restarted controller): everything in full.
    at.incarnation ^= 2;
    let r = poll_seq(&mut env, &root(), &mut at);
    assert!(!r.unchanged);
    assert_eq!(ids(&r.jobs), ids(&listing(&mut env, &root())));
    // Another viewer lists other jobs: not the root's digest.
    let mut theirs = Since {
        digest: at.digest,
        ..at
    };
    let other = Identity {
        uid: USER + 1,
        gid: USER + 1,
        groups: vec![USER + 1],
        ..user()
    };
    let r = poll_seq(&mut env, &other, &mut theirs);
    assert!(!r.unchanged && r.stamps.is_empty());
    let _ = (a, b);
}
