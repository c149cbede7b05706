//! Multifactor priorities and fair-share usage over time: recomputed each
//! PriorityCalcPeriod (Slurm's decay thread), new jobs prioritised at the
//! next pass, each job charged for the time it ran.

use super::env::{job, TestEnv, T0};

const ONE_NODE: &str = "NodeName=n1 CPUs=2 RealMemory=1000\n\
                        PartitionName=p Nodes=n1 Default=YES MaxTime=UNLIMITED\n\
                        PriorityType=priority/multifactor\n\
                        PriorityWeightAge=100000\n\
                        PriorityMaxAge=1:00:00\n\
                        PriorityDecayHalfLife=0\n\
                        PriorityCalcPeriod=5";

fn priority(env: &TestEnv, id: u32) -> u32 {
    env.core.jobs[&id].rt().priority
}

#[test]
fn pending_priorities_age_each_calc_period_and_new_jobs_get_theirs_at_once() {
    let mut env = TestEnv::new(ONE_NODE);
    let mut whole = job(600);
    whole.ntasks = 2;
    let running = env.sbatch(whole.clone());
    let waiting = env.sbatch(whole.clone());
    env.advance(T0 + 1);
    assert_eq!(env.launched(), vec![running]);
    env.launch_ok(running);
    let first = priority(&env, waiting);
    // Full passes within the period leave the age factor where it was.
    env.advance(T0 + 120);
    assert_eq!(priority(&env, waiting), first, "not recomputed yet");
    // A job submitted meanwhile is prioritised by the next pass, from the
    // factors of the last recomputation (not its submit-time value).
    let late = env.sbatch(whole);
    let at_submit = priority(&env, late);
    env.advance(T0 + 121);
    let late_prio = priority(&env, late);
    assert_ne!(late_prio, at_submit, "prioritised at the next pass");
    assert!(
        late_prio <= first,
        "no older than the first: {late_prio} > {first}"
    );
    // PriorityCalcPeriod (5 minutes) after the last: every job again.
    env.advance(T0 + 301);
    assert!(
        priority(&env, waiting) > first,
        "aged: {} after {first}",
        priority(&env, waiting)
    );
    assert!(priority(&env, late) > late_prio);
}

#[test]
fn a_job_is_charged_for_the_time_it_ran_across_periods() {
    let mut env = TestEnv::new(ONE_NODE);
    let mut spec = job(600);
    spec.ntasks = 2;
    let id = env.sbatch(spec);
    env.advance(T0 + 1);
    env.launch_ok(id);
    let start = env.core.jobs[&id].rt().start_time;
    let usage = |env: &TestEnv| -> f64 { env.core.sched.usage.map.values().sum() };
    // Charged at the next recomputation for the time since it started...
    env.advance(T0 + 200);
    assert_eq!(usage(&env), 0.0, "not charged between periods");
    env.advance(T0 + 301);
    assert_eq!(usage(&env), 2.0 * (T0 + 301 - start) as f64);
    // ... and for its last stretch as it ends, not at the next period.
    env.advance(T0 + 350);
    env.finish(id, 0);
    assert_eq!(usage(&env), 2.0 * (T0 + 350 - start) as f64);
    env.advance(T0 + 700);
    assert_eq!(
        usage(&env),
        2.0 * (T0 + 350 - start) as f64,
        "an ended job is not charged again"
    );
}
