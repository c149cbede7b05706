//! A step task's environment (pure): the job's environment, srun's
//! environment over it, then the step and task variables Slurm sets.

use drover_proto::{StepLaunchRequest, StepNode};

use crate::job_env::{job_environment, EnvContext};

/// One task's place in the step.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskPlace<'a> {
    pub task_id: u32,
    pub local_id: u32,
    /// The task's own GPUs (node indices) when bound to some of the step's.
    pub gpus: Option<&'a [u32]>,
    /// The task has a device group of its own: CUDA numbers its GPUs from 0.
    pub own_devices: bool,
    /// Binding variables (`SLURM_CPU_BIND*`, `SLURM_GPU_BIND`).
    pub extra: &'a [(String, String)],
}

fn set(env: &mut Vec<(String, String)>, k: &str, v: impl Into<String>) {
    let v = v.into();
    match env.iter_mut().find(|(key, _)| key == k) {
        Some(e) => e.1 = v,
        None => env.push((k.to_string(), v)),
    }
}

/// Tasks per node in Slurm's compressed form: `2(x3),1`.
pub fn tasks_per_node_text(nodes: &[StepNode]) -> String {
    let counts: Vec<u32> = nodes.iter().map(|n| n.task_ids.len() as u32).collect();
    crate::job_env::run_length(&counts)
}

/// The environment of one task on `this` node.
pub fn task_environment(
    req: &StepLaunchRequest,
    this: &StepNode,
    task: TaskPlace<'_>,
    ctx: &EnvContext<'_>,
) -> Vec<(String, String)> {
    let job = req.job.clone().unwrap_or_default();
    let step = req.step.clone().unwrap_or_default();
    let mut env = job_environment(&job, ctx);
    for entry in &step.env {
        if let Some((k, v)) = entry.split_once('=') {
            if !k.is_empty() && !k.contains('\0') {
                set(&mut env, k, v);
            }
        }
    }
    let nnodes = req.nodes.len().to_string();
    let ntasks = req.ntasks.to_string();
    let tpn = tasks_per_node_text(&req.nodes);
    let step_id = req.step_id.to_string();
    set(&mut env, "SLURM_JOB_ID", job.job_id.to_string());
    set(&mut env, "SLURM_JOBID", job.job_id.to_string());
    set(&mut env, "SLURM_STEP_ID", step_id.clone());
    set(&mut env, "SLURM_STEPID", step_id);
    set(&mut env, "SLURM_PROCID", task.task_id.to_string());
    set(&mut env, "SLURM_LOCALID", task.local_id.to_string());
    set(&mut env, "SLURM_NODEID", this.node_id.to_string());
    set(&mut env, "SLURMD_NODENAME", this.node.clone());
    set(&mut env, "SLURM_STEP_NUM_TASKS", ntasks.clone());
    set(&mut env, "SLURM_STEP_NUM_NODES", nnodes.clone());
    set(&mut env, "SLURM_STEP_NODELIST", req.nodelist.clone());
    set(&mut env, "SLURM_STEP_TASKS_PER_NODE", tpn.clone());
    set(&mut env, "SLURM_NTASKS", ntasks.clone());
    set(&mut env, "SLURM_NPROCS", ntasks);
    set(&mut env, "SLURM_NNODES", nnodes);
    set(&mut env, "SLURM_TASKS_PER_NODE", tpn);
    set(&mut env, "SLURM_CPUS_ON_NODE", this.cpus.to_string());
    if step.cpus_per_task > 0 {
        set(
            &mut env,
            "SLURM_CPUS_PER_TASK",
            step.cpus_per_task.to_string(),
        );
    }
    if !this.gpu_ids.is_empty() {
        // The step's GPUs: node indices; with the job's device cgroup their
        // places among the job's GPUs; with the step's own, among the
        // step's (what CUDA numbers from 0).
        let job_gpus = crate::allocation::gpus_on_node(&crate::allocation::of(&job), &this.node);
        let ids = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let mine: &[u32] = task.gpus.unwrap_or(&this.gpu_ids);
        let visible: Vec<u32> = if task.own_devices {
            (0..mine.len() as u32).collect()
        } else if ctx.step_gpus_only {
            let mut own = this.gpu_ids.clone();
            own.sort_unstable();
            mine.iter()
                .filter_map(|g| own.iter().position(|o| o == g).map(|p| p as u32))
                .collect()
        } else if ctx.local_gpu_index {
            mine.iter()
                .filter_map(|g| job_gpus.iter().position(|j| j == g).map(|p| p as u32))
                .collect()
        } else {
            mine.to_vec()
        };
        set(&mut env, "CUDA_VISIBLE_DEVICES", ids(&visible));
        set(&mut env, "GPU_DEVICE_ORDINAL", ids(&visible));
        set(&mut env, "SLURM_STEP_GPUS", ids(&this.gpu_ids));
    }
    for (k, v) in task.extra {
        set(&mut env, k, v.clone());
    }
    set(&mut env, "SLURM_SRUN_COMM_HOST", step.io_host.clone());
    set(&mut env, "SLURM_LAUNCH_NODE_IPADDR", step.io_host.clone());
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::{JobInfo, JobSpec, LaunchRequest, StepRequest};

    fn get<'a>(env: &'a [(String, String)], k: &str) -> Option<&'a str> {
        env.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn step_variables_over_job_and_srun() {
        let nodes = vec![
            StepNode {
                node: "n1".into(),
                node_id: 0,
                task_ids: vec![0, 1],
                cpus: 2,
                cpu_ids: vec![],
                gpu_ids: vec![],
            },
            StepNode {
                node: "n2".into(),
                node_id: 1,
                task_ids: vec![2, 3],
                cpus: 2,
                cpu_ids: vec![],
                gpu_ids: vec![],
            },
        ];
        let req = StepLaunchRequest {
            job: Some(LaunchRequest {
                job_id: 7,
                node: "n2".into(),
                spec: Some(JobSpec {
                    environment: vec!["FROM_JOB=1".into(), "SHARED=job".into()],
                    ..Default::default()
                }),
                info: Some(JobInfo {
                    job_id: 7,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            step_id: 3,
            step: Some(StepRequest {
                env: vec!["SHARED=srun".into(), "SLURM_PROCID=99".into()],
                io_host: "10.0.0.1".into(),
                ..Default::default()
            }),
            nodes: nodes.clone(),
            nodelist: "n[1-2]".into(),
            ntasks: 4,
        };
        let env = task_environment(
            &req,
            &nodes[1],
            TaskPlace {
                task_id: 3,
                local_id: 1,
                ..Default::default()
            },
            &EnvContext::default(),
        );
        assert_eq!(get(&env, "FROM_JOB"), Some("1"));
        assert_eq!(get(&env, "SHARED"), Some("srun"));
        assert_eq!(get(&env, "SLURM_JOB_ID"), Some("7"));
        assert_eq!(get(&env, "SLURM_STEP_ID"), Some("3"));
        assert_eq!(get(&env, "SLURM_PROCID"), Some("3"));
        assert_eq!(get(&env, "SLURM_LOCALID"), Some("1"));
        assert_eq!(get(&env, "SLURM_NODEID"), Some("1"));
        assert_eq!(get(&env, "SLURM_STEP_NUM_TASKS"), Some("4"));
        assert_eq!(get(&env, "SLURM_STEP_NUM_NODES"), Some("2"));
        assert_eq!(get(&env, "SLURM_STEP_NODELIST"), Some("n[1-2]"));
        assert_eq!(get(&env, "SLURM_STEP_TASKS_PER_NODE"), Some("2(x2)"));
        assert_eq!(get(&env, "SLURMD_NODENAME"), Some("n2"));
        let keys: std::collections::HashSet<_> = env.iter().map(|(k, _)| k).collect();
        assert_eq!(keys.len(), env.len(), "unique keys");
    }
}
