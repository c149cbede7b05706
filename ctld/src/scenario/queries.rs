//! squeue's filtered queries answered from the indexes (`jobindex.rs`) give
//! exactly the rows of the full list filtered, through submit, start, end,
//! cancel, requeue, array splits, partition updates and PrivateData.

use drover_proto::auth::Identity;
use drover_proto::{GetJobsRequest, JobFilter, JobInfo, JobState};

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
    for f in filters() {
        let want: Vec<u32> = all
            .iter()
            .filter(|j| keeps(&f, j))
            .map(|j| j.job_id)
            .collect();
        assert_eq!(ids(&query(env, who, f.clone())), want, "{f:?}");
    }
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
