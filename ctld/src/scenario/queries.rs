//! squeue's filtered queries answered from the indexes (`jobindex.rs`) give
//! exactly the rows of the full list filtered, through submit, start, end,
//! cancel, requeue, array splits, partition updates and PrivateData.

use drover_proto::auth::Identity;
use drover_proto::{GetJobsRequest, JobFilter, JobInfo, JobState};
use prost::Message;

use super::env::{job, root, user, TestEnv, T0, USER};
use crate::jobindex::state_selected;

const CONF: &str = "NodeName=n[1-2] CPUs=2 RealMemory=1000\n\
                    PartitionName=a Nodes=n1 Default=YES MaxTime=UNLIMITED\n\
                    PartitionName=b Nodes=n2 MaxTime=UNLIMITED";

fn other() -> Identity {
    Identity {
        uid: USER + 1,
        gid: USER + 1,
        groups: vec![USER + 1],
        ..user()
    }
}

fn query(env: &mut TestEnv, who: &Identity, f: JobFilter) -> Vec<JobInfo> {
    env.core
        .get_jobs(
            who,
            GetJobsRequest {
                filter: Some(f),
                details: false,
                fields: Vec::new(),
            },
        )
        .map(|r| r.jobs)
        .unwrap_or_default()
}

fn ids(v: &[JobInfo]) -> Vec<u32> {
    v.iter().map(|j| j.job_id).collect()
}

/// What the filter keeps of the full list, decided on the records shown.
fn keeps(f: &JobFilter, j: &JobInfo) -> bool {
    let st = JobState::try_from(j.state).unwrap();
    let state_ok = if f.all_states {
        true
    } else if f.states.is_empty() {
        state_selected(st, &[], false)
    } else {
        f.states.contains(&j.state)
    };
    state_ok
        && (f.user_ids.is_empty() || f.user_ids.contains(&j.user_id))
        && (f.partitions.is_empty()
            || j.partition
                .split(',')
                .any(|p| f.partitions.contains(&p.to_string())))
}

fn filters() -> Vec<JobFilter> {
    let st = |v: &[JobState]| v.iter().map(|s| *s as i32).collect::<Vec<_>>();
    let mut out = vec![JobFilter::default()];
    let state_sets = [
        vec![],
        st(&[JobState::Running]),
        st(&[JobState::Pending]),
        st(&[JobState::Pending, JobState::Running]),
        st(&[JobState::Completed, JobState::Cancelled]),
    ];
    let user_sets = [
        vec![],
        vec![USER],
        vec![USER + 1],
        vec![USER, USER + 1, 4242],
    ];
    let part_sets = [vec![], vec!["a"], vec!["b"], vec!["a", "b"], vec!["zzz"]];
    for s in &state_sets {
        for u in &user_sets {
            for p in &part_sets {
                out.push(JobFilter {
                    states: s.clone(),
                    user_ids: u.clone(),
                    partitions: p.iter().map(|x| x.to_string()).collect(),
                    ..Default::default()
                });
            }
        }
    }
    out
}

/// Every filter, for `who`, against the full list filtered here; and the
/// index against the job table.
fn check(env: &mut TestEnv, who: &Identity) {
    // The listing kept since the last check (jobs changed since) is sent
    // again only where nothing it shows moved.
    same_bytes_kept(env, who);
    assert!(env
        .core
        .index
        .agrees_with(env.core.jobs.values().map(|j| &**j)));
    assert_eq!(env.core.index.len(), env.core.jobs.len());
    let all = query(
        env,
        who,
        JobFilter {
            all_states: true,
            ..Default::default()
        },
    );
    same_record_after_any_other(env);
    for id in ["1", "5", "5_[1-3]", "99999"] {
        let named = JobFilter {
            job_ids: vec![id.to_string()],
            all_states: true,
            ..Default::default()
        };
        same_bytes(env, who, &named);
    }
    for f in filters() {
        same_bytes(env, who, &f);
        let want: Vec<u32> = all
            .iter()
            .filter(|j| keeps(&f, j))
            .map(|j| j.job_id)
            .collect();
        assert_eq!(ids(&query(env, who, f.clone())), want, "{f:?}");
    }
    same_bytes_kept(env, who);
}

/// squeue's listing (its default fields, every state) and `squeue
/// --json`'s (every field, with details) from the kept encodings
/// (`jobwire::WireCache`) are prost's encoding of the records `get_jobs`
/// builds now.
fn same_bytes_kept(env: &mut TestEnv, who: &Identity) {
    use drover_proto::jobmask::num;
    let json = GetJobsRequest {
        filter: Some(JobFilter {
            all_states: true,
            ..Default::default()
        }),
        details: true,
        fields: Vec::new(),
    };
    let want = env
        .core
        .get_jobs(who, json.clone())
        .map(|r| r.encode_to_vec());
    let got = env.core.get_jobs_wire(who, json);
    assert!(
        want == got,
        "kept detailed listing differs from a fresh one"
    );
    let req = GetJobsRequest {
        filter: Some(JobFilter {
            all_states: true,
            ..Default::default()
        }),
        details: false,
        fields: vec![
            num::JOB_ID,
            num::STATE,
            num::NAME,
            num::PRIORITY,
            num::START_TIME,
            num::END_TIME,
            num::STATE_REASON,
            num::ARRAY_PENDING,
        ],
    };
    let want = env
        .core
        .get_jobs(who, req.clone())
        .map(|r| r.encode_to_vec());
    let got = env.core.get_jobs_wire(who, req);
    assert!(want == got, "kept listing differs from a fresh one");
}

/// The listing's encoded answer (`jobwire.rs`, one scratch record refilled
/// for every job) is, byte for byte, prost's encoding of the records
/// `get_jobs` builds; errors are the same errors.
/// With a field mask (`fields`), the same holds, and each record is the
/// unmasked one with the other fields at their defaults.
fn same_bytes(env: &mut TestEnv, who: &Identity, f: &JobFilter) {
    use drover_proto::jobmask::num;
    let masks = [
        Vec::new(),
        vec![num::JOB_ID, num::STATE, num::NAME, num::START_TIME],
        vec![
            num::ARRAY_PENDING,
            num::STATE_REASON,
            num::WORK_DIR,
            num::STEPS,
        ],
    ];
    for (details, fields) in [false, true]
        .into_iter()
        .flat_map(|d| masks.iter().map(move |m| (d, m.clone())))
    {
        let req = GetJobsRequest {
            filter: Some(f.clone()),
            details,
            fields: fields.clone(),
        };
        if !fields.is_empty() {
            let mask = drover_proto::jobmask::JobMask::of(&fields);
            let full = GetJobsRequest {
                fields: Vec::new(),
                ..req.clone()
            };
            let full = env.core.get_jobs(who, full).map(|r| r.jobs);
            let masked = env.core.get_jobs(who, req.clone()).map(|r| r.jobs);
            if let (Ok(mut full), Ok(masked)) = (full, masked) {
                full.iter_mut().for_each(|j| mask.apply(j));
                assert_eq!(full, masked, "{f:?} fields={fields:?}");
            }
        }
        let want = env
            .core
            .get_jobs(who, req.clone())
            .map(|r| r.encode_to_vec());
        let got = env.core.get_jobs_wire(who, req);
        match (want, got) {
            (Ok(want), Ok(got)) => {
                assert!(want == got, "{f:?} details={details} fields={fields:?}")
            }
            (Err(want), Err(got)) => {
                assert_eq!(want, got)
            }
            (want, got) => panic!("{f:?}: {want:?} against {got:?}"),
        }
    }
}

/// A record refilled over any other job's carries nothing of it over.
fn same_record_after_any_other(env: &mut TestEnv) {
    let now = env.core.now;
    let ids: Vec<u32> = env.core.jobs.keys().copied().collect();
    let mut names = std::mem::take(&mut env.core.names);
    for details in [false, true] {
        for a in &ids {
            for b in &ids {
                let (ja, jb) = (&env.core.jobs[a], &env.core.jobs[b]);
                let cfg = &env.core.cfg;
                let mut reused = crate::jobinfo::job_info(cfg, &mut names, ja, details, now);
                crate::jobinfo::fill_job_info(cfg, &mut names, jb, details, now, &mut reused);
                let fresh = crate::jobinfo::job_info(cfg, &mut names, jb, details, now);
                assert_eq!(reused, fresh, "job {b} over job {a}, details={details}");
            }
        }
    }
    env.core.names = names;
}

fn in_part(p: &str) -> drover_proto::JobSpec {
    let mut s = job(10);
    s.partition = p.into();
    s
}

#[test]
fn filtered_queries_match_the_filtered_full_list_through_a_jobs_life() {
    let mut env = TestEnv::new(CONF);
    let a1 = env.sbatch(in_part("a"));
    let a2 = env.sbatch(in_part("a"));
    let _a3 = env.sbatch(in_part("a"));
    let b1 = env.sbatch(in_part("b"));
    let mut arr = in_part("a");
    arr.array = "0-5".into();
    let _arr = env.sbatch(arr);
    let o1 = env.submit_as(other(), in_part("b")).unwrap();
    let _o2 = env.submit_as(other(), in_part("a,b")).unwrap();
    check(&mut env, &root());
    check(&mut env, &user());
    // A selective filter is answered from the index, a broad one by a walk.
    let few = JobFilter {
        user_ids: vec![USER + 1],
        ..Default::default()
    };
    assert_eq!(env.core.index.candidates(&few).map(|v| v.len()), Some(2));
    assert_eq!(env.core.index.candidates(&JobFilter::default()), None);

    // Jobs start (array tasks split off), one ends, one is cancelled.
    env.advance(T0 + 1);
    assert!(!env.launched().is_empty());
    check(&mut env, &root());
    env.launch_ok(a1);
    env.finish(a1, 0);
    env.cancel(a2);
    check(&mut env, &root());

    // Requeue a running job, release the CPUs, start more.
    let running: Vec<u32> = env
        .core
        .jobs
        .values()
        .filter(|j| j.state() == JobState::Running)
        .map(|j| j.id())
        .collect();
    let r = running[0];
    env.control("requeue", r).unwrap();
    check(&mut env, &root());
    env.advance(T0 + 2);
    check(&mut env, &root());

    // A pending job moved to another partition by an admin.
    if env.state(b1) == JobState::Pending {
        env.core
            .update_job(
                root(),
                drover_proto::UpdateJobRequest {
                    job_ids: vec![b1.to_string()],
                    fields: [("Partition".to_string(), "a".to_string())].into(),
                    ..Default::default()
                },
            )
            .unwrap();
    }
    check(&mut env, &root());

    // Completed jobs are purged after MinJobAge: gone from every index.
    env.advance(T0 + 10_000);
    check(&mut env, &root());
    check(&mut env, &other());
    assert!(env.core.jobs.contains_key(&o1) || env.purged(o1));
}

#[test]
fn private_data_hides_other_users_jobs_from_indexed_queries() {
    let mut env = TestEnv::new(&format!("PrivateData=jobs\n{CONF}"));
    let mine = env.sbatch(in_part("a"));
    let theirs = env.submit_as(other(), in_part("a")).unwrap();
    let f = JobFilter {
        states: vec![JobState::Pending as i32],
        ..Default::default()
    };
    assert_eq!(ids(&query(&mut env, &user(), f.clone())), vec![mine]);
    assert_eq!(ids(&query(&mut env, &other(), f.clone())), vec![theirs]);
    assert_eq!(ids(&query(&mut env, &root(), f)), vec![mine, theirs]);
    let by_user = JobFilter {
        user_ids: vec![USER + 1],
        ..Default::default()
    };
    assert!(query(&mut env, &user(), by_user).is_empty());
    check(&mut env, &user());
    check(&mut env, &other());
}

#[test]
fn hold_release_and_updates_are_reported_as_changes() {
    // restd's `update_time` poll compares `last_changed`: every change
    // squeue shows moves it, and it is logged (a restart keeps it).
    let mut env = TestEnv::new(CONF);
    let id = env.sbatch(job(10));
    let changed = |env: &mut TestEnv| {
        let all = query(env, &root(), JobFilter::default());
        all.iter().find(|j| j.job_id == id).map(|j| j.last_changed)
    };
    assert_eq!(changed(&mut env), Some(T0), "submitted");
    env.core.now = T0 + 10;
    env.control("hold", id).unwrap();
    assert_eq!(changed(&mut env), Some(T0 + 10), "held");
    env.advance(T0 + 20);
    assert_eq!(changed(&mut env), Some(T0 + 10), "a pass changes nothing");
    env.core.now = T0 + 30;
    env.control("release", id).unwrap();
    assert_eq!(changed(&mut env), Some(T0 + 30), "released");
    env.core.now = T0 + 40;
    let r = env.core.update_job(
        root(),
        drover_proto::UpdateJobRequest {
            job_ids: vec![id.to_string()],
            fields: [("Nice".to_string(), "5".to_string())].into(),
            ..Default::default()
        },
    );
    assert!(r.is_ok_and(|r| r.results.iter().all(|x| x.ok)));
    env.collect();
    assert_eq!(changed(&mut env), Some(T0 + 40), "nice changed");
    env.advance(T0 + 50);
    assert_eq!(env.state(id), JobState::Running);
    assert_eq!(changed(&mut env), Some(T0 + 50), "started");
}
