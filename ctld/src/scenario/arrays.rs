//! Pending array tasks addressed one by one (`A_i`): hold/release/update
//! split the task off the meta record, scancel drops it, `aftercorr` waits
//! for the corresponding task only; all of it recovered from the log.

use drover_proto::state::WalRecord;
use drover_proto::{CancelRequest, JobFilter, JobState, UpdateJobRequest};

use super::env::{job, root, user, TestEnv, T0};
use crate::control::{parse_selector, Selector};
use crate::ctld::Effect;

const CONF: &str = "NodeName=n1 CPUs=1 RealMemory=1000\n\
                    PartitionName=p Nodes=n1 Default=YES MaxTime=UNLIMITED";

fn array(env: &mut TestEnv, tasks: &str) -> u32 {
    let mut spec = job(10);
    spec.array = tasks.into();
    env.sbatch(spec)
}

/// `scontrol <action> <text>` as root; the first error, if any.
fn act(env: &mut TestEnv, action: &str, text: &str, fields: &[(&str, &str)]) -> Result<(), String> {
    let r = env
        .core
        .update_job(
            root(),
            UpdateJobRequest {
                job_ids: vec![text.to_string()],
                action: action.into(),
                fields: fields
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..Default::default()
            },
        )
        .map_err(|e| e.words().to_string())?;
    env.collect();
    match r.results.into_iter().find(|r| !r.ok) {
        Some(bad) => Err(bad.error),
        None => Ok(()),
    }
}

fn scancel(env: &mut TestEnv, text: &str) {
    let r = env.core.cancel(
        user(),
        CancelRequest {
            filter: Some(JobFilter {
                job_ids: vec![text.to_string()],
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    assert!(r.is_ok_and(|r| r.results.iter().all(|x| x.ok)), "{text}");
    env.collect();
}

/// The job records `text` (`A_i`) names.
fn named(env: &TestEnv, text: &str) -> Vec<u32> {
    env.core.select_ids(&parse_selector(text).unwrap())
}

/// The record of task `i` of array `a` that is not the meta record.
fn task(env: &TestEnv, a: u32, i: u32) -> Option<u32> {
    let ids = env.core.select_ids(&Selector::Tasks(a, vec![i]));
    ids.into_iter()
        .find(|id| !env.core.jobs[id].is_meta() && env.core.jobs[id].rt().array_task_id == i)
}

fn records(env: &TestEnv) -> Vec<WalRecord> {
    env.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Log(r) => Some((**r).clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn holding_one_pending_task_splits_it_off_and_the_rest_runs() {
    let mut env = TestEnv::new(CONF);
    let a = array(&mut env, "0-3");
    env.advance(T0 + 1);
    let t0 = task(&env, a, 0).expect("task 0 started");
    assert_eq!(env.state(t0), JobState::Running);
    // Still in the meta record: task 2 is named by the meta record alone.
    assert_eq!(named(&env, &format!("{a}_2")), vec![a]);
    act(&mut env, "hold", &format!("{a}_2"), &[]).unwrap();
    let t2 = task(&env, a, 2).expect("task 2 split off");
    assert_ne!(t2, a);
    assert_eq!(named(&env, &format!("{a}_2")), vec![t2]);
    assert_eq!(env.core.jobs[&a].pending_tasks, vec![1, 3]);
    assert_eq!(env.reason(t2), "JobHeldAdmin");
    assert_eq!(env.core.jobs[&a].rt().hold, 0, "the rest is not held");
    // An update of one pending task changes that task only.
    act(&mut env, "", &format!("{a}_3"), &[("Comment", "three")]).unwrap();
    let t3 = task(&env, a, 3).expect("task 3 split off");
    assert_eq!(env.core.jobs[&t3].spec().comment, "three");
    assert_eq!(env.core.jobs[&a].spec().comment, "");
    assert_eq!(env.core.jobs[&a].pending_tasks, vec![1]);
    // The others run, one at a time; the held one does not.
    env.finish(t0, 0);
    env.advance(T0 + 2);
    let t1 = task(&env, a, 1).expect("task 1 started");
    assert_eq!(env.state(t1), JobState::Running);
    env.finish(t1, 0);
    env.advance(T0 + 3);
    assert_eq!(env.state(t3), JobState::Running);
    env.finish(t3, 0);
    env.advance(T0 + 4);
    assert_eq!(env.state(t2), JobState::Pending);
    act(&mut env, "release", &format!("{a}_2"), &[]).unwrap();
    env.advance(T0 + 5);
    assert_eq!(env.state(t2), JobState::Running);
}

#[test]
fn naming_every_pending_task_updates_the_meta_record() {
    let mut env = TestEnv::new(CONF);
    let a = array(&mut env, "0-3");
    env.advance(T0 + 1);
    // 1-3 are all the tasks still pending: no split, the meta record is held.
    act(&mut env, "hold", &format!("{a}_[1-3]"), &[]).unwrap();
    assert!(env.core.jobs[&a].is_meta());
    assert_eq!(env.core.jobs[&a].pending_tasks, vec![1, 2, 3]);
    assert_eq!(env.core.jobs[&a].rt().hold, 2);
}

#[test]
fn a_cancelled_pending_task_leaves_no_record() {
    let mut env = TestEnv::new(CONF);
    let a = array(&mut env, "0-3");
    env.advance(T0 + 1);
    let t0 = task(&env, a, 0).unwrap();
    let before = env.core.jobs.len();
    scancel(&mut env, &format!("{a}_2"));
    assert!(named(&env, &format!("{a}_2")).is_empty());
    assert_eq!(env.core.jobs.len(), before, "no record made for it");
    assert_eq!(env.core.jobs[&a].pending_tasks, vec![1, 3]);
    assert_eq!(env.state(a), JobState::Pending);
    // The rest runs.
    env.finish(t0, 0);
    env.advance(T0 + 2);
    let t1 = task(&env, a, 1).unwrap();
    env.finish(t1, 0);
    env.advance(T0 + 3);
    // The last task takes over the meta record.
    assert_eq!(task(&env, a, 3), Some(a));
    assert_eq!(env.state(a), JobState::Running);
    assert!(task(&env, a, 2).is_none());
}

#[test]
fn cancelling_every_pending_task_cancels_the_meta_record() {
    let mut env = TestEnv::new(CONF);
    let a = array(&mut env, "0-3");
    env.advance(T0 + 1);
    let t0 = task(&env, a, 0).unwrap();
    scancel(&mut env, &format!("{a}_[1-3]"));
    assert_eq!(env.state(a), JobState::Cancelled);
    assert_eq!(env.state(t0), JobState::Running, "the running task goes on");
}

#[test]
fn aftercorr_waits_for_the_corresponding_task_only() {
    let mut env = TestEnv::new(
        "NodeName=n1 CPUs=8 RealMemory=8000\n\
         PartitionName=p Nodes=n1 Default=YES MaxTime=UNLIMITED",
    );
    let a = array(&mut env, "0-2");
    let mut spec = job(10);
    spec.array = "0-2".into();
    spec.dependency = format!("aftercorr:{a}");
    let b = env.sbatch(spec);
    env.advance(T0 + 1);
    let (a0, a1, a2) = (
        task(&env, a, 0).unwrap(),
        task(&env, a, 1).unwrap(),
        task(&env, a, 2).unwrap(),
    );
    // B's tasks are split out to be judged one by one.
    let b1 = task(&env, b, 1).expect("B's task 1 split out");
    assert_eq!(env.reason(b1), "Dependency");
    env.finish(a1, 0);
    env.advance(T0 + 2);
    assert_eq!(env.state(b1), JobState::Running, "A_1 done: B_1 runs");
    let b0 = task(&env, b, 0).unwrap();
    assert_eq!(env.state(b0), JobState::Pending, "A_0 still runs");
    // A failed task: its counterpart never runs; the others do.
    env.finish(a0, 1);
    env.finish(a2, 0);
    env.advance(T0 + 3);
    assert_eq!(env.reason(b0), "DependencyNeverSatisfied");
    assert_eq!(env.state(b0), JobState::Pending);
    let b2 = task(&env, b, 2).unwrap();
    assert_eq!(env.state(b2), JobState::Running);
}

#[test]
fn split_held_and_dropped_tasks_are_recovered_from_the_log() {
    let mut env = TestEnv::new(CONF);
    let a = array(&mut env, "0-4");
    env.advance(T0 + 1);
    act(&mut env, "hold", &format!("{a}_2"), &[]).unwrap();
    scancel(&mut env, &format!("{a}_3"));
    let t2 = task(&env, a, 2).unwrap();
    let mut after = TestEnv::new(CONF);
    after.core.restore(None, records(&env));
    assert_eq!(after.core.jobs[&a].pending_tasks, vec![1, 4]);
    assert!(named(&after, &format!("{a}_3")).is_empty());
    assert_eq!(named(&after, &format!("{a}_2")), vec![t2]);
    assert_eq!(after.core.jobs[&t2].rt().hold, 2);
    assert_eq!(after.state(t2), JobState::Pending);
}
