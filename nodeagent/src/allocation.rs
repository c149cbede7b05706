//! What a launch gives the job: its allocation on every node (CPU ids,
//! memory, GPU indices, tasks) and the memory and task terms of its
//! resolved request (`LaunchRequest.allocation`). The job's cgroup limits,
//! device rules and the `SLURM_*` variables that describe the allocation
//! are built from this, never from the display record (`JobInfo`). Pure.

use std::borrow::Cow;

use drover_proto::{JobAllocation, LaunchRequest, NodeAlloc};

/// The launch's allocation. A launch record written for a controller of an
/// older version has none: then the same facts from the fields it did send
/// (the allocation in `info`, the options in `spec`).
pub fn of(req: &LaunchRequest) -> Cow<'_, JobAllocation> {
    if let Some(a) = &req.allocation {
        return Cow::Borrowed(a);
    }
    let spec = req.spec.clone().unwrap_or_default();
    let info = req.info.clone().unwrap_or_default();
    let (mem_per_node_mb, mem_per_cpu_mb) = if info.min_memory_mb > 0 {
        if info.mem_per_cpu {
            (0, info.min_memory_mb)
        } else {
            (info.min_memory_mb, 0)
        }
    } else {
        (spec.mem_per_node_mb, spec.mem_per_cpu_mb)
    };
    Cow::Owned(JobAllocation {
        nodes: info.alloc,
        mem_per_node_mb,
        mem_per_cpu_mb,
        mem_per_gpu_mb: spec.mem_per_gpu_mb,
        cpus_per_task: spec.cpus_per_task.max(1),
        ntasks: spec.ntasks,
        ntasks_per_node: spec.ntasks_per_node,
    })
}

/// The job's allocation on `node`.
pub fn on_node<'a>(a: &'a JobAllocation, node: &str) -> Option<&'a NodeAlloc> {
    a.nodes.iter().find(|n| n.node == node)
}

/// Indices of the GPUs the job has on `node`, ascending.
pub fn gpus_on_node(a: &JobAllocation, node: &str) -> Vec<u32> {
    let mut v: Vec<u32> = on_node(a, node)
        .into_iter()
        .flat_map(|n| n.gres.iter())
        .filter(|g| g.name == "gpu")
        .flat_map(|g| g.indices.iter().copied())
        .collect();
    v.sort_unstable();
    v
}

/// The memory variable of the allocation: `SLURM_MEM_PER_CPU` when the
/// request is per CPU, else `SLURM_MEM_PER_NODE` (None: no memory asked).
pub fn mem_var(a: &JobAllocation) -> Option<(&'static str, u64)> {
    if a.mem_per_cpu_mb > 0 {
        Some(("SLURM_MEM_PER_CPU", a.mem_per_cpu_mb))
    } else if a.mem_per_node_mb > 0 {
        Some(("SLURM_MEM_PER_NODE", a.mem_per_node_mb))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::{GresAlloc, JobInfo, JobSpec};

    fn node(name: &str, gpus: &[u32]) -> NodeAlloc {
        NodeAlloc {
            node: name.into(),
            cpus: 2,
            cpu_ids: vec![0, 1],
            mem_mb: 200,
            gres: vec![GresAlloc {
                name: "gpu".into(),
                r#type: String::new(),
                indices: gpus.to_vec(),
                count: 0,
            }],
            tasks: 1,
        }
    }

    #[test]
    fn the_launch_allocation_is_used_as_sent() {
        let req = LaunchRequest {
            allocation: Some(JobAllocation {
                nodes: vec![node("a", &[3, 1]), node("b", &[0])],
                mem_per_cpu_mb: 100,
                ..Default::default()
            }),
            // A display record saying otherwise is not read.
            info: Some(JobInfo {
                min_memory_mb: 999,
                ..Default::default()
            }),
            ..Default::default()
        };
        let a = of(&req);
        assert_eq!(mem_var(&a), Some(("SLURM_MEM_PER_CPU", 100)));
        assert_eq!(gpus_on_node(&a, "a"), vec![1, 3]);
        assert_eq!(on_node(&a, "b").map(|n| n.mem_mb), Some(200));
        assert!(on_node(&a, "c").is_none());
    }

    #[test]
    fn an_older_launch_record_is_read_from_info_and_spec() {
        let req = LaunchRequest {
            spec: Some(JobSpec {
                mem_per_node_mb: 300,
                ntasks: 4,
                ..Default::default()
            }),
            info: Some(JobInfo {
                alloc: vec![node("a", &[])],
                ..Default::default()
            }),
            ..Default::default()
        };
        let a = of(&req);
        assert_eq!(mem_var(&a), Some(("SLURM_MEM_PER_NODE", 300)));
        assert_eq!((a.ntasks, a.cpus_per_task, a.nodes.len()), (4, 1, 1));
        assert_eq!(mem_var(&JobAllocation::default()), None);
    }
}
