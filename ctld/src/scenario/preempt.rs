//! Suspend, resume and preemption (requeue, cancel).

use drover_proto::JobState;

use super::env::{job, TestEnv, T0};

const ONE_NODE: &str = "NodeName=n1 CPUs=2 RealMemory=1000\n\
                        PartitionName=p Nodes=n1 Default=YES";

/// One node in a low and a high partition; `mode` is PreemptMode.
fn tiers(mode: &str) -> String {
    format!(
        "PreemptType=preempt/partition_prio\nPreemptMode={mode}\n\
         NodeName=n1 CPUs=2 RealMemory=1000\n\
         PartitionName=low Nodes=n1 Default=YES PriorityTier=1\n\
         PartitionName=high Nodes=n1 PriorityTier=10"
    )
}

fn whole_node(partition: &str) -> drover_proto::JobSpec {
    let mut spec = job(10);
    spec.partition = partition.into();
    spec.cpus_per_task = 2;
    spec
}

#[test]
fn suspend_stops_the_job_and_resume_continues_it() {
    let mut env = TestEnv::new(ONE_NODE);
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    env.launch_ok(id);
    env.clear();
    env.advance(T0 + 10);
    env.control("suspend", id).unwrap();
    assert_eq!(env.state(id), JobState::Suspended);
    assert_eq!(env.suspends(), vec![(id, "n1".to_string(), true)]);
    env.advance(T0 + 100);
    env.control("resume", id).unwrap();
    assert_eq!(env.state(id), JobState::Running);
    assert_eq!(
        env.suspends(),
        vec![(id, "n1".to_string(), true), (id, "n1".to_string(), false)]
    );
    // Time suspended does not count against the limit.
    env.clear();
    env.advance(T0 + 1 + 600);
    assert!(env.signals().is_empty(), "the limit moved on by 90 s");
    env.advance(T0 + 1 + 600 + 90);
    assert_eq!(env.signals().len(), 1);
}

#[test]
fn suspending_a_pending_job_is_refused() {
    let mut env = TestEnv::new(ONE_NODE);
    let mut spec = job(10);
    spec.hold = true;
    let id = env.sbatch(spec);
    assert!(env.control("suspend", id).is_err());
    assert!(env.suspends().is_empty());
}

#[test]
fn preemption_in_requeue_mode_requeues_the_victim_and_starts_the_preemptor() {
    let mut env = TestEnv::new(&tiers("REQUEUE"));
    let mut spec = whole_node("low");
    spec.requeue = true;
    let low = env.sbatch(spec);
    env.advance(T0 + 1);
    env.launch_ok(low);
    let high = env.sbatch(whole_node("high"));
    env.clear();
    env.advance(T0 + 2);
    assert_eq!(
        env.signals(),
        vec![(low, "n1".to_string(), 0)],
        "victim terminated"
    );
    assert!(
        env.launched().is_empty(),
        "the preemptor waits for the CPUs"
    );
    env.finish(low, 0);
    assert_eq!(env.state(low), JobState::Pending, "requeued, not ended");
    env.advance(T0 + 3);
    assert_eq!(env.launched(), vec![high]);
}

#[test]
fn preemption_in_cancel_mode_ends_the_victim_preempted() {
    let mut env = TestEnv::new(&tiers("CANCEL"));
    let low = env.sbatch(whole_node("low"));
    env.advance(T0 + 1);
    env.launch_ok(low);
    let high = env.sbatch(whole_node("high"));
    env.clear();
    env.advance(T0 + 2);
    assert_eq!(env.signals(), vec![(low, "n1".to_string(), 0)]);
    env.finish(low, 0);
    assert_eq!(env.state(low), JobState::Preempted);
    env.advance(T0 + 3);
    assert_eq!(env.launched(), vec![high]);
}
