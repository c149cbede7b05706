//! Power saving in the core: idle nodes suspended after SuspendTime (at
//! SuspendRate, SuspendExcNodes kept up), jobs on powered-down nodes wait
//! in CONFIGURING while ResumeProgram runs, ResumeTimeout takes a node down
//! and requeues its job, and a restart mid-resume resumes nothing twice.

use drover_proto::{JobState, NodeRegistration, RegisterRequest};

use super::env::{job, TestEnv, T0};
use crate::ctld::{Ctld, Effect};
use crate::nodepower::Power;

const CONF: &str = "SuspendProgram=/sbin/suspend\nResumeProgram=/sbin/resume\n\
                    ResumeFailProgram=/sbin/resumefail\nSuspendTime=5\nSuspendTimeout=2\n\
                    ResumeTimeout=30\n";

/// (program, hostlist) of every RunProgram effect, in order.
fn programs(env: &TestEnv) -> Vec<(&'static str, String)> {
    env.effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunProgram { kind, nodes, .. } => {
                Some((*kind, drover_conf::hostlist::compress(nodes)))
            }
            _ => None,
        })
        .collect()
}

fn power(env: &TestEnv, node: &str) -> Power {
    let i = env.core.cluster.node_idx(node).expect("node");
    env.core.cluster.nodes[i].power
}

fn register(core: &mut Ctld, node: &str) {
    core.register(RegisterRequest {
        nodes: vec![NodeRegistration {
            name: node.into(),
            cpus: 1,
            real_memory: 1000,
            ..Default::default()
        }],
        ..Default::default()
    });
}

#[test]
fn idle_nodes_power_down_at_suspend_rate_except_excluded_ones() {
    let mut env = TestEnv::new(&format!(
        "{CONF}SuspendRate=2\nSuspendExcNodes=n4\nNodeName=n[1-4] CPUs=1 RealMemory=1000\n\
         PartitionName=p Nodes=ALL Default=YES"
    ));
    env.advance(T0 + 4);
    assert!(programs(&env).is_empty());
    env.advance(T0 + 5);
    // Two a minute: n1 and n2 now, n3 in the next minute; n4 never.
    assert_eq!(programs(&env), vec![("SuspendProgram", "n[1-2]".into())]);
    assert_eq!(power(&env, "n1"), Power::PoweringDown);
    env.advance(T0 + 7);
    assert_eq!(power(&env, "n1"), Power::Off);
    assert_eq!(power(&env, "n3"), Power::On);
    env.clear();
    // T0 is 20 s before a minute starts.
    env.advance(T0 + 20);
    assert_eq!(programs(&env), vec![("SuspendProgram", "n3".into())]);
    env.advance(T0 + 600);
    assert_eq!(power(&env, "n4"), Power::On);
}

#[test]
fn a_job_on_powered_down_nodes_configures_then_runs() {
    let mut env = TestEnv::new(&format!(
        "{CONF}NodeName=n[1-2] CPUs=1 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES"
    ));
    env.advance(T0 + 5);
    env.advance(T0 + 7);
    assert_eq!(power(&env, "n1"), Power::Off);
    env.clear();
    let mut spec = job(10);
    spec.min_nodes = 2;
    spec.max_nodes = 2;
    let id = env.sbatch(spec);
    env.advance(T0 + 8);
    assert_eq!(env.state(id), JobState::Configuring);
    assert_eq!(programs(&env), vec![("ResumeProgram", "n[1-2]".into())]);
    assert_eq!(power(&env, "n2"), Power::PoweringUp);
    assert!(env.launched().is_empty());
    register(&mut env.core, "n1");
    env.advance(T0 + 9);
    // One node is not enough.
    assert_eq!(env.state(id), JobState::Configuring);
    env.core.now = T0 + 10;
    register(&mut env.core, "n2");
    env.advance(T0 + 10);
    assert_eq!(env.state(id), JobState::Running);
    // The run (and its time limit) counts from the nodes being up.
    assert_eq!(env.core.jobs[&id].rt().start_time, T0 + 10);
    assert_eq!(env.launched(), vec![id]);
    assert_eq!(power(&env, "n1"), Power::On);
}

#[test]
fn resume_timeout_takes_the_node_down_and_requeues_its_job() {
    let mut env = TestEnv::new(&format!(
        "{CONF}NodeName=n[1-2] CPUs=1 RealMemory=1000 Weight=1\n\
         NodeName=n3 CPUs=1 RealMemory=1000 Weight=9\nSuspendExcNodes=n3\n\
         PartitionName=p Nodes=ALL Default=YES"
    ));
    env.advance(T0 + 5);
    env.advance(T0 + 7);
    let id = env.sbatch(job(10));
    env.advance(T0 + 8);
    assert_eq!(env.state(id), JobState::Configuring);
    let first = env.core.jobs[&id].rt().alloc[0].node.clone();
    assert_ne!(first, "n3");
    env.clear();
    env.advance(T0 + 38);
    let i = env.core.cluster.node_idx(&first).unwrap();
    let n = &env.core.cluster.nodes[i];
    assert!(n.down, "{first} down");
    assert_eq!(n.reason, "ResumeTimeout reached");
    assert!(programs(&env).contains(&("ResumeFailProgram", first.clone())));
    // Requeued (not failed), and placed again elsewhere.
    assert!(env.logged_states(id).contains(&JobState::Pending));
    assert_eq!(env.core.jobs[&id].rt().restart_count, 1);
    assert_ne!(env.core.jobs[&id].rt().alloc[0].node, first);
}

#[test]
fn a_restart_mid_resume_neither_loses_the_job_nor_resumes_twice() {
    let mut env = TestEnv::new(&format!(
        "{CONF}NodeName=n1 CPUs=1 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES"
    ));
    env.advance(T0 + 5);
    env.advance(T0 + 7);
    let id = env.sbatch(job(10));
    env.advance(T0 + 8);
    assert_eq!(programs(&env).last(), Some(&("ResumeProgram", "n1".into())));
    // The controller restarts from its durable state.
    let snap = env.core.snapshot();
    let cfg = (*env.core.cfg).clone();
    let mut core = Ctld::new(cfg, "slurm.conf".into(), T0 + 9, 0, "ctl".into());
    core.restore(Some(snap), Vec::new());
    core.take_effects();
    assert_eq!(core.jobs[&id].state(), JobState::Configuring);
    let i = core.cluster.node_idx("n1").unwrap();
    assert_eq!(core.cluster.nodes[i].power, Power::PoweringUp);
    core.now = T0 + 10;
    core.tick(T0 + 10);
    assert!(!core
        .take_effects()
        .iter()
        .any(|e| matches!(e, Effect::RunProgram { .. })));
    register(&mut core, "n1");
    assert_eq!(core.jobs[&id].state(), JobState::Running);
    assert!(core
        .take_effects()
        .iter()
        .any(|e| matches!(e, Effect::Launch { .. })));
}

#[test]
fn a_failed_resume_program_fails_the_resume_at_once() {
    let mut env = TestEnv::new(&format!(
        "{CONF}NodeName=n1 CPUs=1 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES"
    ));
    env.advance(T0 + 5);
    env.advance(T0 + 7);
    let id = env.sbatch(job(10));
    env.advance(T0 + 8);
    env.core
        .program_failed("ResumeProgram", &["n1".into()], "exit code 3: no quota");
    let n = &env.core.cluster.nodes[0];
    assert!(n.down);
    assert_eq!(n.reason, "ResumeProgram failed: exit code 3: no quota");
    assert_eq!(env.state(id), JobState::Pending);
}

#[test]
fn a_job_cancelled_while_configuring_ends_at_once_and_frees_its_node() {
    let mut env = TestEnv::new(&format!(
        "{CONF}NodeName=n1 CPUs=1 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES"
    ));
    env.advance(T0 + 5);
    env.advance(T0 + 7);
    let id = env.sbatch(job(10));
    env.advance(T0 + 8);
    assert_eq!(env.state(id), JobState::Configuring);
    env.cancel(id);
    assert_eq!(env.state(id), JobState::Cancelled);
    assert!(env.core.cluster.nodes[0].jobs.is_empty());
    // The node still comes up (it was asked to), and nothing is launched.
    env.clear();
    register(&mut env.core, "n1");
    env.advance(T0 + 9);
    assert_eq!(power(&env, "n1"), Power::On);
    assert!(env.launched().is_empty());
}

#[test]
fn suspend_exc_nodes_with_a_count_keeps_that_many_up() {
    let mut env = TestEnv::new(&format!(
        "{CONF}SuspendExcNodes=n[1-3]:2\nNodeName=n[1-3] CPUs=1 RealMemory=1000\n\
         PartitionName=p Nodes=ALL Default=YES"
    ));
    env.advance(T0 + 5);
    assert_eq!(programs(&env), vec![("SuspendProgram", "n1".into())]);
    env.advance(T0 + 300);
    let up = ["n1", "n2", "n3"]
        .iter()
        .filter(|n| power(&env, n) == Power::On)
        .count();
    assert_eq!(up, 2);
}

#[test]
fn idle_on_node_suspend_clears_down_and_drain() {
    let mut env = TestEnv::new(&format!(
        "{CONF}SlurmctldParameters=idle_on_node_suspend\nSlurmdTimeout=3\n\
         NodeName=n1 CPUs=1 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES"
    ));
    env.silence("n1");
    env.advance(T0 + 4);
    assert!(env.core.cluster.nodes[0].down);
    // Down and idle: powered down after SuspendTime, and idle again then.
    env.advance(T0 + 10);
    env.advance(T0 + 12);
    let n = &env.core.cluster.nodes[0];
    assert_eq!(n.power, Power::Off);
    assert!(!n.down && n.reason.is_empty(), "{n:?}");
    assert!(n.usable());
}

#[test]
fn power_down_force_requeues_the_jobs_and_powers_down_now() {
    let mut env = TestEnv::new(&format!(
        "{CONF}SuspendTime=INFINITE\nNodeName=n1 CPUs=1 RealMemory=1000\n\
         PartitionName=p Nodes=ALL Default=YES"
    ));
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    env.launch_ok(id);
    assert_eq!(env.core.power_update(0, "POWER_DOWN"), Ok(()));
    // Busy: marked, no new work, powered down when its job ends.
    assert!(env.core.cluster.nodes[0].power_down_asap);
    assert!(!env.core.cluster.nodes[0].usable());
    assert_eq!(env.core.power_update(0, "POWER_DOWN_FORCE"), Ok(()));
    env.advance(T0 + 2);
    assert_eq!(power(&env, "n1"), Power::PoweringDown);
    assert_eq!(env.core.jobs[&id].rt().restart_count, 1);
    assert_eq!(env.state(id), JobState::Pending);
    assert!(env
        .core
        .power_update(0, "POWER_SIDEWAYS")
        .unwrap_err()
        .contains("Invalid node state"));
}

#[test]
fn begin_mail_goes_when_the_job_runs_not_while_its_nodes_start() {
    let mut env = TestEnv::new(&format!(
        "{CONF}NodeName=n1 CPUs=1 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES"
    ));
    env.advance(T0 + 5);
    env.advance(T0 + 7);
    let mut spec = job(10);
    spec.mail_type = "BEGIN".into();
    let id = env.sbatch(spec);
    env.advance(T0 + 8);
    let mails = |env: &TestEnv| {
        env.effects
            .iter()
            .filter(|e| matches!(e, Effect::Mail(_)))
            .count()
    };
    assert_eq!(env.state(id), JobState::Configuring);
    assert_eq!(mails(&env), 0);
    register(&mut env.core, "n1");
    env.advance(T0 + 9);
    assert_eq!(env.state(id), JobState::Running);
    assert_eq!(mails(&env), 1);
}
