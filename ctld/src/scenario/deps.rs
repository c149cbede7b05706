//! Dependencies on jobs that are purged (MinJobAge): an outcome decided
//! before the purge stays decided (Slurm's DEPEND_FAILED/FULFILLED kept with
//! the dependent job), across a restart too; a job purged before any
//! evaluation lifts the dependency.

use drover_proto::state::WalRecord;
use drover_proto::JobState;

use super::env::{job, TestEnv, T0};
use crate::ctld::Effect;

const CONF: &str = "MinJobAge=300\n\
                    NodeName=n[1-2] CPUs=2 RealMemory=1000\n\
                    PartitionName=p Nodes=n[1-2] Default=YES MaxTime=UNLIMITED";

/// A job, then one that depends on it with `kind` (`afterok`, ...).
fn pair(env: &mut TestEnv, kind: &str) -> (u32, u32) {
    let first = env.sbatch(job(10));
    let mut spec = job(10);
    spec.dependency = format!("{kind}:{first}");
    let second = env.sbatch(spec);
    (first, second)
}

/// Everything logged so far, as the next start-up reads it back.
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
fn a_failed_dependency_stays_failed_after_the_job_is_purged() {
    let mut env = TestEnv::new(CONF);
    let (first, second) = pair(&mut env, "afterok");
    env.advance(T0 + 1);
    env.finish(first, 1);
    env.advance(T0 + 2);
    assert_eq!(env.reason(second), "DependencyNeverSatisfied");
    env.advance(T0 + 400);
    assert!(env.purged(first), "the failed job is purged");
    assert!(!env.core.jobs.contains_key(&first));
    env.advance(T0 + 401);
    assert_eq!(env.state(second), JobState::Pending);
    assert_eq!(env.reason(second), "DependencyNeverSatisfied");
    assert_eq!(
        env.launched(),
        vec![first],
        "the dependent job never starts"
    );

    // The outcome is durable: a controller recovering the log agrees.
    let mut after = TestEnv::new(CONF);
    after.core.restore(None, records(&env));
    assert!(!after.core.jobs.contains_key(&first));
    after.advance(T0 + 402);
    assert_eq!(after.reason(second), "DependencyNeverSatisfied");
    assert!(after.launched().is_empty(), "{:?}", after.launched());
}

#[test]
fn a_dependency_on_a_job_purged_before_any_evaluation_is_lifted() {
    let mut env = TestEnv::new(CONF);
    let (first, second) = pair(&mut env, "afterok");
    env.advance(T0 + 1);
    assert_eq!(env.reason(second), "Dependency");
    // Ends and is purged with no pass in between: never evaluated failed.
    env.finish(first, 1);
    env.advance(T0 + 400);
    assert!(env.purged(first));
    assert_eq!(env.launched(), vec![first, second]);
}

#[test]
fn an_outcome_decided_while_held_is_kept() {
    let mut env = TestEnv::new(CONF);
    let (first, second) = pair(&mut env, "afternotok");
    env.control("hold", second).unwrap();
    env.advance(T0 + 1);
    env.finish(first, 0);
    // Evaluated while held (afternotok on a success: never), then purged.
    env.advance(T0 + 2);
    assert_eq!(env.reason(second), "JobHeldAdmin");
    env.advance(T0 + 400);
    assert!(env.purged(first));
    env.control("release", second).unwrap();
    env.advance(T0 + 401);
    assert_eq!(env.reason(second), "DependencyNeverSatisfied");
    assert_eq!(env.launched(), vec![first]);
}

/// A job whose `afterok` dependency failed, left by `passes` passes
/// (`settled` looks at it then), is given `afternotok` on the same job
/// instead: the next pass starts it.
fn redepend_after(passes: i64, settled: impl Fn(&TestEnv, u32)) {
    let mut env = TestEnv::new(CONF);
    let (first, second) = pair(&mut env, "afterok");
    env.advance(T0 + 1);
    env.finish(first, 1);
    for t in 2..2 + passes {
        env.advance(T0 + t);
        assert_eq!(env.reason(second), "DependencyNeverSatisfied");
    }
    settled(&env, second);
    let r = env.core.update_job(
        super::env::root(),
        drover_proto::UpdateJobRequest {
            job_ids: vec![second.to_string()],
            fields: [("Dependency".to_string(), format!("afternotok:{first}"))].into(),
            ..Default::default()
        },
    );
    assert!(r.is_ok_and(|r| r.results.iter().all(|x| x.ok)));
    env.collect();
    env.advance(T0 + 2 + passes);
    assert_eq!(env.launched(), vec![first, second]);
}

#[test]
fn a_new_dependency_forgets_the_old_outcome() {
    redepend_after(1, |_, _| {});
}

/// A job found never satisfiable is not worked out again by every pass,
/// only once it changes: a new dependency is seen at the next pass.
#[test]
fn a_job_found_never_satisfiable_is_looked_at_again_once_changed() {
    redepend_after(3, |env, second| {
        let job = &env.core.jobs[&second];
        assert_eq!(job.never_at, Some(job.seq), "passes leave it be");
    });
}

#[test]
fn a_failed_condition_of_an_or_dependency_is_not_undone_by_a_purge() {
    // afterok:A?afterok:B with A failed (never) and B pending: waits; A's
    // purge must not turn its condition into a satisfied one.
    let mut env = TestEnv::new(CONF);
    let a = env.sbatch(job(10));
    let b = env.sbatch(job(10));
    let mut spec = job(10);
    spec.dependency = format!("afterok:{a}?afterok:{b}");
    let c = env.sbatch(spec);
    env.advance(T0 + 1);
    env.finish(a, 1);
    env.advance(T0 + 2);
    assert_eq!(env.reason(c), "Dependency");
    env.advance(T0 + 400);
    assert!(env.purged(a));
    assert_eq!(env.reason(c), "Dependency", "B still runs: c waits");
    env.finish(b, 0);
    env.advance(T0 + 401);
    assert!(env.launched().contains(&c));
}
