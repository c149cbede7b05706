//! A job's life: submit, start, hold, dependencies, limits, requeue, purge.

use drover_proto::JobState;

use super::env::{job, TestEnv, T0};
use crate::ctld::Effect;

const TWO_NODES: &str = "NodeName=n[1-2] CPUs=2 RealMemory=1000\n\
                         PartitionName=p Nodes=n[1-2] Default=YES MaxTime=UNLIMITED";

#[test]
fn submitted_job_starts_then_completes() {
    let mut env = TestEnv::new(TWO_NODES);
    let id = env.sbatch(job(10));
    assert_eq!(env.state(id), JobState::Pending);
    assert!(env.launches().is_empty(), "nothing starts before a pass");
    env.advance(T0 + 1);
    assert_eq!(env.launches(), vec![(id, "n1".to_string())]);
    assert_eq!(env.logged_states(id), vec![JobState::Running]);
    env.launch_ok(id);
    env.clear();
    env.advance(T0 + 5);
    env.finish(id, 0);
    assert_eq!(env.state(id), JobState::Completed);
    assert_eq!(env.logged_states(id), vec![JobState::Completed]);
    assert_eq!(env.core.jobs[&id].rt().end_time, T0 + 5);
}

#[test]
fn submission_is_answered_only_after_its_records_are_logged() {
    let mut env = TestEnv::new(TWO_NODES);
    let mut spec = job(10);
    spec.time_limit = 5;
    let reply = crate::effect::Reply::new(|_| true);
    env.core.submit(super::env::user(), spec, reply);
    let effects = env.core.take_effects();
    let durable = effects
        .iter()
        .position(|e| matches!(e, Effect::AfterDurable(_)))
        .expect("the answer waits for durability");
    let job_logged = effects.iter().position(|e| {
        matches!(e, Effect::Log(r) if matches!(r.kind,
            Some(drover_proto::state::wal_record::Kind::Job(_))))
    });
    assert!(job_logged.is_some_and(|l| l < durable), "{effects:?}");
}

#[test]
fn held_job_waits_until_released() {
    let mut env = TestEnv::new(TWO_NODES);
    let mut spec = job(10);
    spec.hold = true;
    let id = env.sbatch(spec);
    env.advance(T0 + 1);
    assert!(env.launched().is_empty());
    assert_eq!(env.state(id), JobState::Pending);
    assert_eq!(env.reason(id), "JobHeldUser");
    env.control("release", id).unwrap();
    env.advance(T0 + 2);
    assert_eq!(env.launched(), vec![id]);
}

#[test]
fn a_held_job_is_gated_once_until_it_changes_one_with_a_dependency_every_pass() {
    let mut env = TestEnv::new(TWO_NODES);
    let first = env.sbatch(job(10));
    let mut spec = job(10);
    spec.hold = true;
    let plain = env.sbatch(spec);
    let mut spec = job(10);
    spec.hold = true;
    spec.dependency = format!("afterok:{first}");
    let dependent = env.sbatch(spec);
    env.advance(T0 + 1);
    assert_eq!(env.reason(plain), "JobHeldUser");
    assert_eq!(env.reason(dependent), "JobHeldUser");
    let to_gate: Vec<u32> = env.core.held_to_gate.iter().copied().collect();
    assert_eq!(to_gate, vec![dependent], "the plain held job is settled");
    // The dependency is still followed while held: its outcome is kept.
    env.launch_ok(first);
    env.finish(first, 1);
    env.advance(T0 + 2);
    assert!(!env.core.jobs[&dependent].rt().dep_state.is_empty());
    // A change (here a release) puts the job back in the pass.
    env.control("release", plain).unwrap();
    assert!(!env.core.held_to_gate.contains(&plain), "released: unheld");
    env.advance(T0 + 3);
    assert_eq!(env.launched(), vec![first, plain]);
    env.control("release", dependent).unwrap();
    env.advance(T0 + 4);
    assert_eq!(env.reason(dependent), "DependencyNeverSatisfied");
}

#[test]
fn a_held_job_has_no_priority_until_released_then_it_is_recomputed_first() {
    let mut env = TestEnv::new(
        "NodeName=n1 CPUs=1 RealMemory=1000\nPartitionName=p Nodes=n1 Default=YES\n\
         PriorityType=priority/multifactor\nPriorityWeightJobSize=1000",
    );
    let running = env.sbatch(job(10));
    let waiting = env.sbatch(job(10));
    let mut spec = job(10);
    spec.hold = true;
    let held = env.sbatch(spec);
    env.advance(T0 + 1);
    assert_eq!(env.launched(), vec![running]);
    // As Slurm's sprio: a held job (priority 0) is not listed.
    let listed = |env: &mut TestEnv| -> Vec<u32> {
        let all = drover_proto::GetPrioritiesRequest::default();
        let who = super::env::user();
        env.core
            .priorities(&who, all)
            .jobs
            .iter()
            .map(|j| j.job_id)
            .collect()
    };
    assert_eq!(listed(&mut env), vec![waiting]);
    let computed = env.core.jobs[&waiting].rt().priority;
    assert_ne!(
        env.core.jobs[&held].rt().priority,
        computed,
        "still its submit-time value"
    );
    env.control("release", held).unwrap();
    assert!(env.core.full_pass_needed, "a release asks for a full pass");
    env.core.schedule_pass();
    assert_eq!(env.core.jobs[&held].rt().priority, computed);
    assert_eq!(listed(&mut env), vec![waiting, held]);
}

#[test]
fn admin_hold_on_a_pending_job_keeps_it_from_starting() {
    let mut env =
        TestEnv::new("NodeName=n1 CPUs=1 RealMemory=1000\nPartitionName=p Nodes=n1 Default=YES");
    let first = env.sbatch(job(10));
    let second = env.sbatch(job(10));
    env.advance(T0 + 1);
    assert_eq!(env.launched(), vec![first]);
    env.control("hold", second).unwrap();
    assert_eq!(env.reason(second), "JobHeldAdmin");
    env.finish(first, 0);
    env.advance(T0 + 2);
    assert_eq!(env.launched(), vec![first], "a held job does not start");
    env.control("release", second).unwrap();
    env.advance(T0 + 3);
    assert_eq!(env.launched(), vec![first, second]);
}

#[test]
fn afterok_dependency_starts_once_the_first_job_succeeds() {
    let mut env = TestEnv::new(TWO_NODES);
    let first = env.sbatch(job(10));
    let mut spec = job(10);
    spec.dependency = format!("afterok:{first}");
    let second = env.sbatch(spec);
    env.advance(T0 + 1);
    assert_eq!(env.launched(), vec![first]);
    assert_eq!(env.reason(second), "Dependency");
    env.launch_ok(first);
    env.finish(first, 0);
    env.advance(T0 + 2);
    assert_eq!(env.launched(), vec![first, second]);
}

#[test]
fn afterok_dependency_on_a_failed_job_is_never_satisfied() {
    let mut env = TestEnv::new(TWO_NODES);
    let first = env.sbatch(job(10));
    let mut spec = job(10);
    spec.dependency = format!("afterok:{first}");
    let second = env.sbatch(spec);
    env.advance(T0 + 1);
    env.finish(first, 1);
    assert_eq!(env.state(first), JobState::Failed);
    env.advance(T0 + 2);
    assert_eq!(env.reason(second), "DependencyNeverSatisfied");
    assert_eq!(env.state(second), JobState::Pending);
    assert_eq!(
        env.launched(),
        vec![first],
        "no launch of the dependent job"
    );
}

#[test]
fn kill_on_invalid_dep_cancels_the_dependent_job() {
    let mut env = TestEnv::new(TWO_NODES);
    let first = env.sbatch(job(10));
    let mut spec = job(10);
    spec.dependency = format!("afterok:{first}");
    spec.kill_on_invalid_dep = true;
    let second = env.sbatch(spec);
    env.advance(T0 + 1);
    env.finish(first, 1);
    env.advance(T0 + 2);
    assert_eq!(env.state(second), JobState::Cancelled);
    assert_eq!(env.reason(second), "DependencyNeverSatisfied");
    assert_eq!(env.logged_states(second).last(), Some(&JobState::Cancelled));
}

#[test]
fn time_limit_terminates_the_job_then_it_ends_timeout() {
    let mut env = TestEnv::new(TWO_NODES);
    let id = env.sbatch(job(1));
    env.advance(T0 + 1);
    env.launch_ok(id);
    env.clear();
    env.advance(T0 + 60);
    assert!(env.signals().is_empty(), "not before the limit");
    env.advance(T0 + 61);
    assert_eq!(env.signals(), vec![(id, "n1".to_string(), 0)]);
    assert_eq!(env.state(id), JobState::Completing);
    env.killed_by_timeout(id);
    assert_eq!(env.state(id), JobState::Timeout);
}

#[test]
fn cancelled_pending_job_never_launches() {
    let mut env = TestEnv::new(TWO_NODES);
    let id = env.sbatch(job(10));
    env.cancel(id);
    assert_eq!(env.state(id), JobState::Cancelled);
    env.advance(T0 + 1);
    assert!(env.launched().is_empty());
    assert!(env.signals().is_empty(), "nothing ran: nothing to signal");
}

#[test]
fn requeued_job_is_terminated_then_runs_again() {
    let mut env = TestEnv::new(TWO_NODES);
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    env.launch_ok(id);
    env.clear();
    env.control("requeue", id).unwrap();
    assert_eq!(env.signals(), vec![(id, "n1".to_string(), 0)]);
    // The agent reports the killed script.
    env.finish(id, 0);
    assert_eq!(env.state(id), JobState::Pending);
    assert_eq!(env.core.jobs[&id].rt().restart_count, 1);
    // Slurm holds a requeued job back for a while (BeginTime).
    env.advance(T0 + 200);
    assert_eq!(env.launched(), vec![id]);
}

#[test]
fn finished_job_is_purged_after_min_job_age() {
    let mut env = TestEnv::new(&format!("MinJobAge=300\n{TWO_NODES}"));
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    env.finish(id, 0);
    env.advance(T0 + 300);
    assert!(!env.purged(id));
    env.advance(T0 + 301);
    assert!(env.purged(id));
    assert!(!env.core.jobs.contains_key(&id));
}

#[test]
fn refused_launch_with_a_retryable_error_is_retried_later() {
    let mut env = TestEnv::new(TWO_NODES);
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    env.clear();
    let start = env.core.jobs[&id].rt().start_time;
    env.core.launch_done(
        id,
        start,
        Err(crate::refusal::Refusal::unavailable("connection refused")),
    );
    let later = env.core.take_effects();
    assert!(
        matches!(&later[..], [Effect::Later { delay, .. }] if delay.as_secs() == 1),
        "{later:?}"
    );
    assert_eq!(env.state(id), JobState::Running);
    let Some(Effect::Later { op, .. }) = later.into_iter().next() else {
        unreachable!()
    };
    op(&mut env.core);
    let again = env.core.take_effects();
    assert!(
        matches!(&again[..], [Effect::Launch { req, .. }] if req.job_id == id),
        "{again:?}"
    );
}

/// A job started (its launch sent, not answered yet) and then cancelled:
/// its id, start time and node; the effects so far cleared.
fn cancelled_before_its_launch_answer(env: &mut TestEnv) -> (u32, i64, String) {
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    let start = env.core.jobs[&id].rt().start_time;
    let node = env.node_of(id);
    env.cancel(id);
    env.clear();
    (id, start, node)
}

/// scancel while the launch is unanswered, then the agent refuses it for
/// now (it is registering): nothing runs, so the job ends CANCELLED at once
/// and its node is free; it is not launched again.
#[test]
fn job_cancelled_before_its_launch_is_acknowledged_ends_when_the_launch_fails() {
    let mut env = TestEnv::new(TWO_NODES);
    let (id, start, node) = cancelled_before_its_launch_answer(&mut env);
    assert_eq!(env.state(id), JobState::Completing);
    env.core.launch_done(
        id,
        start,
        Err(crate::refusal::Refusal::unavailable(
            "this agent is registering with the controller",
        )),
    );
    env.collect();
    assert_eq!(env.state(id), JobState::Cancelled);
    assert!(env.launched().is_empty(), "not launched again");
    let i = env.core.cluster.node_idx(&node).unwrap();
    assert!(env.core.cluster.nodes[i].jobs.is_empty(), "node released");
    // Its agent registers without it: nothing more happens to the job.
    env.register_without_jobs(&node);
    assert!(env.launched().is_empty());
    assert_eq!(env.state(id), JobState::Cancelled);
}

/// The same, but the launch goes through after the terminate was sent (it
/// may have reached the agent first, when the job was not there yet): the
/// job is terminated again there, and ends when the agent reports it.
#[test]
fn job_cancelled_before_its_launch_is_acknowledged_is_terminated_again_once_launched() {
    let mut env = TestEnv::new(TWO_NODES);
    let (id, start, node) = cancelled_before_its_launch_answer(&mut env);
    env.core.launch_done(id, start, Ok(()));
    env.collect();
    assert_eq!(env.signals(), vec![(id, node.clone(), 0)]);
    assert_eq!(env.state(id), JobState::Completing);
    env.core.job_ended(
        id,
        &node,
        crate::end::EndReport {
            exit_signal: libc::SIGTERM,
            ..Default::default()
        },
    );
    assert_eq!(env.state(id), JobState::Cancelled);
}

/// A job cancelled while its node's agent was away, before the launch was
/// acknowledged: when the agent registers without it, the job ends (it is
/// not launched only to be killed).
#[test]
fn unlaunched_cancelled_job_ends_when_its_agent_registers_without_it() {
    let mut env = TestEnv::new(TWO_NODES);
    let (id, _, node) = cancelled_before_its_launch_answer(&mut env);
    env.register_without_jobs(&node);
    assert!(env.launched().is_empty(), "not launched only to be killed");
    assert_eq!(env.state(id), JobState::Cancelled);
}

#[test]
fn launch_refused_as_aborted_drains_the_node_and_requeues_the_job() {
    let mut env = TestEnv::new(TWO_NODES);
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    let start = env.core.jobs[&id].rt().start_time;
    env.core.launch_done(
        id,
        start,
        Err(crate::refusal::Refusal::aborted(
            "cannot create the job's cgroup",
        )),
    );
    let i = env.core.cluster.node_idx("n1").unwrap();
    let n1 = &env.core.cluster.nodes[i];
    assert!(n1.drain);
    assert_eq!(n1.reason, "cannot create the job's cgroup");
    assert_eq!(env.state(id), JobState::Pending, "requeued");
    env.clear();
    env.advance(T0 + 300);
    assert_eq!(
        env.launches(),
        vec![(id, "n2".to_string())],
        "not on the drained node"
    );
}

#[test]
fn signal_option_warns_the_job_before_its_time_limit() {
    let mut env = TestEnv::new(TWO_NODES);
    let mut spec = job(2);
    spec.signal = libc::SIGUSR1 as u32;
    spec.signal_time = 60;
    let id = env.sbatch(spec);
    env.advance(T0 + 1);
    env.launch_ok(id);
    env.clear();
    env.advance(T0 + 60);
    assert!(env.signals().is_empty());
    env.advance(T0 + 61);
    assert_eq!(
        env.signals(),
        vec![(id, "n1".to_string(), libc::SIGUSR1 as u32)]
    );
    env.advance(T0 + 62);
    assert_eq!(env.signals().len(), 1, "warned once");
}

#[test]
fn allocation_without_a_script_runs_with_nothing_to_launch() {
    let mut env = TestEnv::new(TWO_NODES);
    let mut spec = job(10);
    spec.interactive = true;
    spec.script.clear();
    let id = env.sbatch(spec);
    env.advance(T0 + 1);
    assert_eq!(env.state(id), JobState::Running);
    assert!(
        env.launches().is_empty(),
        "salloc's allocation has no batch script"
    );
    let node = env.core.jobs[&id].rt().alloc[0].node.clone();
    env.cancel(id);
    assert_eq!(
        env.state(id),
        JobState::Cancelled,
        "no agent reports its end"
    );
    let signals = env.signals();
    assert!(!signals.is_empty(), "its steps are killed");
    // (Terminated twice today: by the cancel and again as the allocation
    // ends; agents take a repeat as a no-op.)
    assert!(
        signals.iter().all(|s| *s == (id, node.clone(), 0)),
        "{signals:?}"
    );
}

#[test]
fn a_waiting_client_is_answered_once_the_end_is_durable() {
    let mut env = TestEnv::new(TWO_NODES);
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    let answer = std::sync::Arc::new(std::sync::Mutex::new(None));
    let slot = answer.clone();
    let reply = crate::effect::Reply::new(move |v: Result<drover_proto::JobInfo, _>| {
        *slot.lock().unwrap() = Some(v.map(|i| i.state));
        true
    });
    env.core.wait_job(&super::env::user(), id, reply);
    assert!(env.core.take_effects().is_empty(), "nothing to answer yet");
    env.finish(id, 3);
    let durable: Vec<_> = std::mem::take(&mut env.effects)
        .into_iter()
        .filter_map(|e| match e {
            Effect::AfterDurable(f) => Some(f),
            _ => None,
        })
        .collect();
    assert!(
        answer.lock().unwrap().is_none(),
        "not before the log is on disk"
    );
    assert_eq!(durable.len(), 1);
    durable.into_iter().for_each(|f| f());
    let got = answer.lock().unwrap().take().expect("answered");
    assert_eq!(got.unwrap(), JobState::Failed as i32);
}

#[test]
fn gpu_oom_found_by_the_agent_is_logged_shown_and_cleared_on_requeue() {
    use drover_proto::state::wal_record::Kind;
    use drover_proto::JobEndedRequest;
    let mut env = TestEnv::new(TWO_NODES);
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    env.launch_ok(id);
    env.clear();
    let comment = "GPU out of memory: RuntimeError: CUDA error: out of memory";
    env.core.agent_job_ended(JobEndedRequest {
        job_id: id,
        node: "n1".into(),
        exit_code: 1,
        system_comment: comment.into(),
        ..Default::default()
    });
    assert_eq!(env.state(id), JobState::Failed);
    // Durable with the end (the runtime record carries it) and shown.
    let logged = env.core.effects.iter().any(|e| {
        matches!(e, Effect::Log(r) if matches!(&r.kind,
            Some(Kind::Runtime(u)) if u.job_id == id
                && u.runtime.as_ref().is_some_and(|rt| rt.system_comment == comment)))
    });
    assert!(logged, "the end's runtime record holds the SystemComment");
    let job = env.core.jobs[&id].clone();
    assert_eq!(env.core.job_info(&job).system_comment, comment);
    // A new run starts without it.
    crate::job::reset_for_requeue(env.core.jobs.get_mut(&id).unwrap().rt_mut());
    assert!(env.core.jobs[&id].rt().system_comment.is_empty());
}

#[test]
fn the_tick_wakes_the_scheduler_when_a_begin_time_passes() {
    let mut env = TestEnv::new(TWO_NODES);
    let mut spec = job(10);
    spec.begin_time = T0 + 50;
    let id = env.sbatch(spec);
    env.advance(T0 + 1);
    assert_eq!(env.reason(id), "BeginTime");
    // Synced again and again (its priority changes as it ages): one entry.
    for _ in 0..10 {
        env.core.sync_queue(id);
    }
    assert_eq!(env.core.due.len(), (0, 1, 1));
    env.core.sched_needed = false;
    env.core.tick(T0 + 49);
    assert!(!env.core.sched_needed);
    env.core.tick(T0 + 50);
    assert!(env.core.sched_needed, "the begin time passed");
    env.core.sched_needed = false;
    env.core.tick(T0 + 51);
    assert!(!env.core.sched_needed, "woken once");
    env.advance(T0 + 51);
    assert_eq!(env.launched(), vec![id]);
    assert_eq!(env.core.due.len(), (0, 0, 0), "running: nothing noted");
}

#[test]
fn a_job_that_ran_again_is_purged_min_job_age_after_its_last_end() {
    let mut env = TestEnv::new(&format!("MinJobAge=300\n{TWO_NODES}"));
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    env.launch_ok(id);
    env.finish(id, 0);
    assert!(env.state(id).is_final());
    env.advance(T0 + 100);
    env.control("requeue", id).unwrap();
    assert_eq!(env.state(id), JobState::Pending);
    // Its first end is 300 s old: it is pending again, not purged.
    env.advance(T0 + 302);
    assert!(!env.purged(id));
    let started = env.launched().contains(&id);
    assert!(started, "runs again after the requeue hold");
    env.launch_ok(id);
    env.finish(id, 0);
    let end = env.core.jobs[&id].rt().end_time;
    env.advance(end + 299);
    assert!(!env.purged(id));
    env.advance(end + 300);
    assert!(env.purged(id));
    assert_eq!(env.core.due.len(), (0, 0, 0));
}
