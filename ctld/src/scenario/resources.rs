//! Nodes, arrays, reservations and limits as they decide what starts.

use drover_proto::JobState;

use super::env::{job, TestEnv, T0};

#[test]
fn array_tasks_start_in_index_order_within_the_throttle() {
    let mut env =
        TestEnv::new("NodeName=n1 CPUs=4 RealMemory=1000\nPartitionName=p Nodes=n1 Default=YES");
    let mut spec = job(10);
    spec.array = "0-3%2".into();
    let meta = env.sbatch(spec);
    env.advance(T0 + 1);
    let first = env.launched();
    assert_eq!(first.len(), 2, "throttled to 2 at a time");
    let index = |env: &TestEnv, id: u32| env.core.jobs[&id].rt().array_task_id;
    assert_eq!(
        first.iter().map(|&id| index(&env, id)).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert!(first
        .iter()
        .all(|&id| env.core.jobs[&id].rt().array_job_id == meta));
    env.finish(first[0], 0);
    env.advance(T0 + 2);
    let now = env.launched();
    assert_eq!(now.len(), 3);
    assert_eq!(index(&env, now[2]), 2);
}

#[test]
fn silent_node_goes_down_and_its_job_ends_node_fail() {
    let mut env = TestEnv::new(
        "SlurmdTimeout=60\nNodeName=n[1-2] CPUs=1 RealMemory=1000\n\
         PartitionName=p Nodes=n[1-2] Default=YES",
    );
    let mut spec = job(10);
    spec.no_requeue = true;
    let id = env.sbatch(spec);
    env.advance(T0 + 1);
    env.launch_ok(id);
    let node = env.node_of(id);
    env.silence(&node);
    env.advance(T0 + 60);
    assert_eq!(env.state(id), JobState::Running, "not before SlurmdTimeout");
    env.advance(T0 + 62);
    assert_eq!(env.state(id), JobState::NodeFail);
    let i = env.core.cluster.node_idx(&node).unwrap();
    assert!(env.core.cluster.nodes[i].down);
}

#[test]
fn requeueable_job_on_a_failed_node_runs_again_elsewhere() {
    let mut env = TestEnv::new(
        "SlurmdTimeout=60\nNodeName=n[1-2] CPUs=1 RealMemory=1000\n\
         PartitionName=p Nodes=n[1-2] Default=YES",
    );
    let mut spec = job(10);
    spec.requeue = true;
    let id = env.sbatch(spec);
    env.advance(T0 + 1);
    env.launch_ok(id);
    assert_eq!(env.launches(), vec![(id, "n1".to_string())]);
    env.silence("n1");
    env.clear();
    env.advance(T0 + 62);
    // Requeued (back to pending), then started on the node left, at once.
    let states = env.logged_states(id);
    assert!(
        states.starts_with(&[JobState::Pending]) && states.ends_with(&[JobState::Running]),
        "{states:?}"
    );
    assert_eq!(env.launches(), vec![(id, "n2".to_string())]);
    assert_eq!(env.core.jobs[&id].rt().restart_count, 1);
}

#[test]
fn reservation_keeps_other_users_off_its_nodes() {
    let mut env =
        TestEnv::new("NodeName=n1 CPUs=1 RealMemory=1000\nPartitionName=p Nodes=n1 Default=YES");
    let args: Vec<String> = [
        "ReservationName=maint",
        "Nodes=n1",
        "Users=root",
        "StartTime=now",
        "Duration=60",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    env.core.create_reservation(&args, T0).unwrap();
    let id = env.sbatch(job(10));
    env.advance(T0 + 1);
    assert!(env.launched().is_empty());
    assert_eq!(env.reason(id), "Resources");
    // The reservation ends after its hour: the job starts.
    env.advance(T0 + 3601);
    assert_eq!(env.launched(), vec![id]);
}

#[test]
fn qos_max_jobs_per_user_holds_the_second_job() {
    let mut env =
        TestEnv::new("NodeName=n1 CPUs=4 RealMemory=1000\nPartitionName=p Nodes=n1 Default=YES");
    let first = env.sbatch(job(10));
    let second = env.sbatch(job(10));
    let user = env.core.jobs[&first].rec.user_name.clone();
    let mut set = crate::assoc::AssocSet::default();
    let mut normal = crate::assoc::Qos::normal();
    normal.limits.max_jobs = Some(1);
    set.qos.insert("normal".into(), normal);
    set.assocs.push(crate::assoc::Assoc::new("root", "", ""));
    set.assocs.push(crate::assoc::Assoc::new("lab", "", "root"));
    set.assocs
        .push(crate::assoc::Assoc::new("lab", &user, "lab"));
    set.users.insert(
        user.clone(),
        crate::assoc::User {
            name: user,
            default_account: "lab".into(),
            admin_level: "None".into(),
        },
    );
    env.core.assoc = set;
    env.advance(T0 + 1);
    assert_eq!(env.launched(), vec![first]);
    assert_eq!(env.reason(second), "QOSMaxJobsPerUserLimit");
    env.finish(first, 0);
    env.advance(T0 + 2);
    assert_eq!(env.launched(), vec![first, second]);
}

/// `-n 20` without `-N` on 8-CPU nodes: the job spans as few nodes as hold
/// its tasks (Slurm's default), within the partition's MaxNodes.
#[test]
fn tasks_without_a_node_count_span_nodes() {
    let mut env = TestEnv::new(
        "NodeName=n[1-4] CPUs=8 RealMemory=8000\n\
         PartitionName=p Nodes=n[1-4] Default=YES\n\
         PartitionName=small Nodes=n[1-4] MaxNodes=2",
    );
    let mut spec = job(10);
    spec.ntasks = 20;
    let id = env.sbatch(spec);
    env.advance(T0 + 1);
    assert_eq!(env.launched(), vec![id]);
    let alloc = &env.core.jobs[&id].rt().alloc;
    assert_eq!(alloc.len(), 3, "{alloc:?}");
    assert!(alloc.iter().map(|a| a.cpus).sum::<u32>() >= 20, "{alloc:?}");
    // Three nodes' worth in a partition of MaxNodes=2 can never run.
    let mut spec = job(10);
    spec.ntasks = 20;
    spec.partition = "small".into();
    assert!(env.submit(spec).is_err(), "refused at submit");
}

/// Jobs asking for a node range (`-N1-4`) on one node, or a task count
/// without `-N`: a job that would run past the blocked job's planned start
/// is not started; one that ends before it is backfilled (as with `-N1`).
#[test]
fn a_node_range_job_does_not_delay_the_top_job() {
    for (min_nodes, max_nodes) in [(1, 1), (1, 4), (0, 0)] {
        let mut env = TestEnv::new(
            "SchedulerParameters=bf_resolution=1,bf_window=120\n\
             NodeName=n1 CPUs=4 RealMemory=8000\n\
             PartitionName=p Nodes=n1 Default=YES MaxTime=UNLIMITED",
        );
        let tasks = |n: u32, minutes: u32| {
            let mut s = job(minutes);
            s.ntasks = n;
            s.min_nodes = min_nodes;
            s.max_nodes = max_nodes;
            s
        };
        let a = env.sbatch(tasks(2, 10));
        env.advance(T0 + 1);
        assert_eq!(env.launched(), vec![a]);
        env.launch_ok(a);
        let b = env.sbatch(tasks(4, 10));
        let cc = env.sbatch(tasks(2, 60));
        let d = env.sbatch(tasks(2, 5));
        env.advance(T0 + 2);
        assert_eq!(
            env.launched(),
            vec![a, d],
            "-N{min_nodes}-{max_nodes}: b {b} waits for a, cc {cc} would delay b"
        );
        assert_eq!(env.reason(b), "Resources");
    }
}

/// Three nodes: a blocked `-N2-3` job that needs all of them plans on
/// them when the running job ends; a range job (`-N1-3`) that would run
/// past that is not started, one that ends before it is.
#[test]
fn a_node_range_job_does_not_delay_a_multi_node_top_job() {
    let mut env = TestEnv::new(
        "SchedulerParameters=bf_resolution=1,bf_window=120\n\
         NodeName=n[1-3] CPUs=4 RealMemory=8000\n\
         PartitionName=p Nodes=n[1-3] Default=YES MaxTime=UNLIMITED",
    );
    let spec = |ntasks: u32, min: u32, max: u32, minutes: u32| {
        let mut s = job(minutes);
        s.ntasks = ntasks;
        s.min_nodes = min;
        s.max_nodes = max;
        s
    };
    let a = env.sbatch(spec(2, 1, 1, 10));
    env.advance(T0 + 1);
    assert_eq!(env.launched(), vec![a]);
    env.launch_ok(a);
    // b needs every CPU of the three nodes: planned at a's end.
    let b = env.sbatch(spec(12, 2, 3, 10));
    let long = env.sbatch(spec(3, 1, 3, 60));
    let short = env.sbatch(spec(3, 1, 3, 5));
    env.advance(T0 + 2);
    assert_eq!(
        env.launched(),
        vec![a, short],
        "b {b} waits for a, long {long} would delay b"
    );
    assert_eq!(env.reason(b), "Resources");
    assert_ne!(env.state(long), JobState::Running);
}
