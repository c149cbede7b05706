//! Tests of a job's environment.

use super::*;
use drover_proto::{GresAlloc, JobInfo, JobSpec};

fn get<'a>(env: &'a [(String, String)], k: &str) -> Option<&'a str> {
    env.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str())
}

fn base() -> LaunchRequest {
    LaunchRequest {
        job_id: 42,
        spec: Some(JobSpec {
            name: "train".into(),
            work_dir: "/home/alice/w".into(),
            submit_host: "login1".into(),
            environment: vec![
                "PATH=/opt/bin:/usr/bin".into(),
                "SLURM_JOB_ID=999".into(),
                "NOEQUALS".into(),
                "EMPTY=".into(),
            ],
            ..Default::default()
        }),
        info: Some(JobInfo {
            job_id: 42,
            partition: "batch".into(),
            start_time: 1_700_000_000,
            time_limit: 60,
            user_name: "alice".into(),
            alloc: vec![
                NodeAlloc {
                    node: "node1".into(),
                    cpus: 4,
                    ..Default::default()
                },
                NodeAlloc {
                    node: "node2".into(),
                    cpus: 4,
                    ..Default::default()
                },
                NodeAlloc {
                    node: "node3".into(),
                    cpus: 2,
                    ..Default::default()
                },
            ],
            ..Default::default()
        }),
        uid: 1000,
        gid: 100,
        user_name: "alice".into(),
        node: "node1".into(),
        cluster_name: "lab".into(),
        ..Default::default()
    }
}

fn ctx() -> EnvContext<'static> {
    EnvContext {
        task_pid: 4321,
        conf_path: "/etc/drover/drover.conf",
        home: Some("/home/alice"),
        shell: Some("/bin/bash"),
        now: 1_700_000_100,
        local_gpu_index: false,
        step_gpus_only: false,
    }
}

#[test]
fn run_length_form() {
    assert_eq!(run_length(&[4, 4, 2]), "4(x2),2");
    assert_eq!(run_length(&[1]), "1");
    assert_eq!(run_length(&[2, 1, 1, 1, 2]), "2,1(x3),2");
    assert_eq!(run_length(&[]), "");
}

#[test]
fn block_layout_like_slurm() {
    assert_eq!(block_layout(10, &[4, 4, 2]), vec![4, 4, 2]);
    assert_eq!(block_layout(3, &[4, 4, 2]), vec![1, 1, 1]);
    assert_eq!(block_layout(5, &[4, 4, 2]), vec![3, 1, 1]);
    assert_eq!(block_layout(13, &[4, 4, 2]), vec![5, 5, 3]);
    assert_eq!(block_layout(0, &[4]), vec![0]);
    assert_eq!(
        block_layout(u32::MAX, &[u32::MAX, u32::MAX]),
        vec![u32::MAX - 1, 1]
    );
}

#[test]
fn array_summaries() {
    let s = array_summary("0-15:4%2").unwrap();
    assert_eq!((s.min, s.max, s.count, s.step), (0, 12, 4, 4));
    let s = array_summary("1,3,5").unwrap();
    assert_eq!((s.min, s.max, s.count, s.step), (1, 5, 3, 2));
    let s = array_summary("1,2,5").unwrap();
    assert_eq!((s.min, s.max, s.count, s.step), (1, 5, 3, 1));
    let s = array_summary("7").unwrap();
    assert_eq!((s.min, s.max, s.count, s.step), (7, 7, 1, 1));
    let s = array_summary("0-9").unwrap();
    assert_eq!((s.min, s.max, s.count, s.step), (0, 9, 10, 1));
    let s = array_summary("1-4294967295").unwrap();
    assert_eq!((s.min, s.max, s.count, s.step), (1, u32::MAX, u32::MAX, 1));
    assert!(array_summary("0-4294967295").is_none(), "2^32 ids");
    let s = array_summary("3-3:7").unwrap();
    assert_eq!((s.min, s.max, s.count, s.step), (3, 3, 1, 1));
    let s = array_summary("1-10:3,2").unwrap();
    assert_eq!((s.min, s.max, s.count, s.step), (1, 10, 5, 1));
    let s = array_summary("1-5,3").unwrap();
    assert_eq!((s.min, s.max, s.count, s.step), (1, 5, 5, 1));
    assert!(array_summary("0-4000000,1-4000000").is_none());
    assert!(array_summary("").is_none());
    assert!(array_summary("x-3").is_none());
    assert!(array_summary("5-1").is_none());
    assert!(array_summary("1-3:0").is_none());
}

#[test]
fn batch_environment() {
    let env = job_environment(&base(), &ctx());
    let keys: std::collections::HashSet<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys.len(), env.len(), "keys are unique");
    assert_eq!(get(&env, "SLURM_JOB_ID"), Some("42"));
    assert_eq!(get(&env, "SLURM_JOBID"), Some("42"));
    assert_eq!(get(&env, "SLURM_JOB_NAME"), Some("train"));
    assert_eq!(get(&env, "SLURM_JOB_NODELIST"), Some("node[1-3]"));
    assert_eq!(get(&env, "SLURM_NODELIST"), Some("node[1-3]"));
    assert_eq!(get(&env, "SLURM_JOB_NUM_NODES"), Some("3"));
    assert_eq!(get(&env, "SLURM_NNODES"), Some("3"));
    assert_eq!(get(&env, "SLURM_JOB_CPUS_PER_NODE"), Some("4(x2),2"));
    assert_eq!(get(&env, "SLURM_TASKS_PER_NODE"), Some("4(x2),2"));
    assert_eq!(get(&env, "SLURM_CPUS_ON_NODE"), Some("4"));
    assert_eq!(get(&env, "SLURM_NTASKS"), None, "only when -n was given");
    assert_eq!(get(&env, "SLURM_CPUS_PER_TASK"), None);
    assert_eq!(get(&env, "SLURM_JOB_PARTITION"), Some("batch"));
    assert_eq!(get(&env, "SLURM_JOB_ACCOUNT"), None);
    assert_eq!(get(&env, "SLURM_CLUSTER_NAME"), Some("lab"));
    assert_eq!(get(&env, "SLURMD_NODENAME"), Some("node1"));
    assert_eq!(get(&env, "SLURM_TASK_PID"), Some("4321"));
    assert_eq!(get(&env, "SLURM_NODEID"), Some("0"));
    assert_eq!(get(&env, "SLURM_PROCID"), Some("0"));
    assert_eq!(get(&env, "SLURM_LOCALID"), Some("0"));
    assert_eq!(get(&env, "SLURM_GTIDS"), Some("0"));
    assert_eq!(get(&env, "SLURM_PRIO_PROCESS"), Some("0"));
    assert_eq!(get(&env, "SLURM_RESTART_COUNT"), Some("0"));
    assert_eq!(get(&env, "SLURM_JOB_USER"), Some("alice"));
    assert_eq!(get(&env, "SLURM_JOB_UID"), Some("1000"));
    assert_eq!(get(&env, "SLURM_JOB_GID"), Some("100"));
    assert_eq!(get(&env, "SLURM_JOB_START_TIME"), Some("1700000000"));
    assert_eq!(get(&env, "SLURM_JOB_END_TIME"), Some("1700003600"));
    assert_eq!(get(&env, "SLURM_CONF"), Some("/etc/drover/drover.conf"));
    assert_eq!(get(&env, "DROVER_CONF"), Some("/etc/drover/drover.conf"));
    assert_eq!(get(&env, "ENVIRONMENT"), Some("BATCH"));
    assert_eq!(get(&env, "SLURM_SUBMIT_DIR"), Some("/home/alice/w"));
    assert_eq!(get(&env, "SLURM_SUBMIT_HOST"), Some("login1"));
    assert_eq!(
        get(&env, "PATH"),
        Some("/opt/bin:/usr/bin"),
        "submitter's PATH kept"
    );
    assert_eq!(get(&env, "EMPTY"), Some(""));
    assert_eq!(get(&env, "NOEQUALS"), None);
    assert_eq!(get(&env, "HOME"), Some("/home/alice"));
    assert_eq!(get(&env, "USER"), Some("alice"));
    assert_eq!(get(&env, "SLURM_ARRAY_JOB_ID"), None);
    assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), None);
    assert_eq!(get(&env, "SLURM_MEM_PER_NODE"), None);
}

#[test]
fn tasks_cpus_memory_gpus_array() {
    let mut r = base();
    {
        let spec = r.spec.as_mut().unwrap();
        spec.ntasks = 5;
        spec.cpus_per_task = 1;
        spec.account = "physics".into();
        spec.qos = "normal".into();
        spec.dependency = "afterok:41".into();
        spec.gpus_per_node = 2;
        spec.gpus_type = "a100".into();
        spec.array = "0-15:4%2".into();
        spec.environment
            .push("SLURM_SUBMIT_DIR=/from/sbatch".into());
    }
    {
        let info = r.info.as_mut().unwrap();
        info.min_memory_mb = 2048;
        info.mem_per_cpu = true;
        info.time_limit = INFINITE;
        info.restart_count = 2;
        info.array_job_id = 40;
        info.array_task_id = 8;
        info.alloc[0].gres.push(GresAlloc {
            name: "gpu".into(),
            r#type: "a100".into(),
            indices: vec![3, 1],
            count: 2,
        });
    }
    let env = job_environment(&r, &ctx());
    assert_eq!(get(&env, "SLURM_NTASKS"), Some("5"));
    assert_eq!(get(&env, "SLURM_NPROCS"), Some("5"));
    assert_eq!(get(&env, "SLURM_TASKS_PER_NODE"), Some("3,1(x2)"));
    assert_eq!(get(&env, "SLURM_CPUS_PER_TASK"), Some("1"));
    assert_eq!(get(&env, "SLURM_MEM_PER_CPU"), Some("2048"));
    assert_eq!(get(&env, "SLURM_MEM_PER_NODE"), None);
    assert_eq!(get(&env, "SLURM_JOB_END_TIME"), None, "unlimited");
    assert_eq!(get(&env, "SLURM_RESTART_COUNT"), Some("2"));
    assert_eq!(get(&env, "SLURM_JOB_ACCOUNT"), Some("physics"));
    assert_eq!(get(&env, "SLURM_JOB_QOS"), Some("normal"));
    assert_eq!(get(&env, "SLURM_JOB_DEPENDENCY"), Some("afterok:41"));
    assert_eq!(get(&env, "SLURM_GPUS_PER_NODE"), Some("a100:2"));
    assert_eq!(get(&env, "SLURM_GPUS_ON_NODE"), Some("2"));
    assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), Some("1,3"));
    assert_eq!(get(&env, "SLURM_JOB_GPUS"), Some("1,3"));
    let mut c = ctx();
    c.local_gpu_index = true;
    let local = job_environment(&r, &c);
    assert_eq!(
        get(&local, "CUDA_VISIBLE_DEVICES"),
        Some("0,1"),
        "renumbered under the device cgroup"
    );
    assert_eq!(get(&local, "SLURM_JOB_GPUS"), Some("1,3"));
    assert_eq!(get(&env, "GPU_DEVICE_ORDINAL"), Some("1,3"));
    assert_eq!(get(&env, "SLURM_ARRAY_JOB_ID"), Some("40"));
    assert_eq!(get(&env, "SLURM_ARRAY_TASK_ID"), Some("8"));
    assert_eq!(get(&env, "SLURM_ARRAY_TASK_COUNT"), Some("4"));
    assert_eq!(get(&env, "SLURM_ARRAY_TASK_MIN"), Some("0"));
    assert_eq!(get(&env, "SLURM_ARRAY_TASK_MAX"), Some("12"));
    assert_eq!(get(&env, "SLURM_ARRAY_TASK_STEP"), Some("4"));
    assert_eq!(get(&env, "SLURM_SUBMIT_DIR"), Some("/from/sbatch"));
    assert_eq!(default_stdout_pattern(&r), "slurm-%A_%a.out");
    assert_eq!(default_stdout_pattern(&base()), "slurm-%j.out");
}

#[test]
fn ntasks_per_node_and_cpus_per_task() {
    let mut r = base();
    {
        let spec = r.spec.as_mut().unwrap();
        spec.ntasks_per_node = 2;
        spec.mem_per_node_mb = 1000;
    }
    let env = job_environment(&r, &ctx());
    assert_eq!(get(&env, "SLURM_NTASKS_PER_NODE"), Some("2"));
    assert_eq!(get(&env, "SLURM_NTASKS"), Some("6"));
    assert_eq!(get(&env, "SLURM_TASKS_PER_NODE"), Some("2(x3)"));
    assert_eq!(get(&env, "SLURM_MEM_PER_NODE"), Some("1000"));

    let mut r = base();
    r.spec.as_mut().unwrap().cpus_per_task = 2;
    let env = job_environment(&r, &ctx());
    assert_eq!(get(&env, "SLURM_TASKS_PER_NODE"), Some("2(x2),1"));
    assert_eq!(get(&env, "SLURM_CPUS_PER_TASK"), Some("2"));
}

#[test]
fn minimal_request_does_not_panic() {
    let r = LaunchRequest::default();
    let env = job_environment(&r, &EnvContext::default());
    assert_eq!(get(&env, "SLURM_JOB_ID"), Some("0"));
    assert_eq!(get(&env, "SLURM_JOB_NUM_NODES"), Some("1"));
    assert_eq!(get(&env, "SLURM_TASKS_PER_NODE"), Some("1"));
}

#[test]
fn the_launch_allocation_decides_over_the_display_record() {
    let mut r = base();
    // The display record says per node; the controller's resolved
    // request (partition DefMemPerCPU) and allocation say otherwise.
    let info = r.info.as_mut().unwrap();
    info.min_memory_mb = 999;
    info.mem_per_cpu = false;
    r.allocation = Some(drover_proto::JobAllocation {
        nodes: vec![
            NodeAlloc {
                node: "node1".into(),
                cpus: 2,
                tasks: 1,
                ..Default::default()
            },
            NodeAlloc {
                node: "node2".into(),
                cpus: 6,
                tasks: 3,
                ..Default::default()
            },
        ],
        mem_per_cpu_mb: 100,
        cpus_per_task: 2,
        ntasks: 4,
        ..Default::default()
    });
    r.node = "node2".into();
    let env = job_environment(&r, &ctx());
    assert_eq!(get(&env, "SLURM_MEM_PER_CPU"), Some("100"));
    assert_eq!(get(&env, "SLURM_MEM_PER_NODE"), None);
    assert_eq!(get(&env, "SLURM_JOB_NODELIST"), Some("node[1-2]"));
    assert_eq!(get(&env, "SLURM_JOB_CPUS_PER_NODE"), Some("2,6"));
    assert_eq!(get(&env, "SLURM_CPUS_ON_NODE"), Some("6"));
    assert_eq!(get(&env, "SLURM_TASKS_PER_NODE"), Some("1,3"));
    assert_eq!(get(&env, "SLURM_NTASKS"), Some("4"));
}
