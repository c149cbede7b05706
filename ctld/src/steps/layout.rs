//! Where a step's tasks go inside its job's allocation (pure logic).

use std::collections::HashMap;

use drover_proto::{NodeAlloc, StepNode, StepRequest};

/// Why a step cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutError {
    /// It would fit once other steps end (srun waits and retries).
    Busy,
    /// It can never fit this allocation.
    Invalid(String),
}

/// Slurm's message for a step larger than the allocation.
pub const NOT_AVAILABLE: &str = "Requested node configuration is not available";

/// A placed step: per node, its tasks and the CPUs it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub nodes: Vec<StepNode>,
    pub ntasks: u32,
}

/// Place `req` on `alloc`; `busy` holds the CPU ids (or, for allocations
/// without ids, the count as ids 0..n) taken by running non-overlapping steps.
/// `job_ntasks` is the job's task count (the default for a bare `srun`).
pub fn place(
    alloc: &[NodeAlloc],
    busy: &HashMap<String, Vec<u32>>,
    req: &StepRequest,
    job_ntasks: u32,
) -> Result<Placement, LayoutError> {
    let invalid = |m: &str| LayoutError::Invalid(m.to_string());
    let cpt = req.cpus_per_task.max(1);
    let mut cands: Vec<&NodeAlloc> = alloc.iter().collect();
    if !req.nodelist.is_empty() {
        for n in &req.nodelist {
            if !alloc.iter().any(|a| &a.node == n) {
                return Err(invalid(NOT_AVAILABLE));
            }
        }
        cands.retain(|a| req.nodelist.contains(&a.node));
    }
    if cands.is_empty() {
        return Err(invalid(NOT_AVAILABLE));
    }
    let fixed_nodes = if !req.nodelist.is_empty() {
        Some(req.nodelist.len() as u32)
    } else if req.nodes > 0 {
        Some(req.nodes)
    } else {
        None
    };
    let ntasks = if req.ntasks > 0 {
        req.ntasks
    } else if req.ntasks_per_node > 0 {
        req.ntasks_per_node * fixed_nodes.unwrap_or(cands.len() as u32)
    } else if let Some(n) = fixed_nodes {
        n
    } else if job_ntasks > 0 {
        job_ntasks
    } else {
        cands.len() as u32
    };
    let mut nnodes = match fixed_nodes {
        Some(n) => n,
        None if req.ntasks_per_node > 0 => ntasks.div_ceil(req.ntasks_per_node),
        None => ntasks.min(cands.len() as u32),
    };
    if nnodes as usize > cands.len() || nnodes == 0 {
        return Err(invalid(NOT_AVAILABLE));
    }
    nnodes = nnodes.min(ntasks);
    let ids_of = |a: &NodeAlloc| -> Vec<u32> {
        if a.cpu_ids.is_empty() {
            (0..a.cpus).collect()
        } else {
            a.cpu_ids.clone()
        }
    };
    // Fits at all (ignoring other steps)? The biggest nodes, in tasks.
    // -O: tasks share CPUs, so a node holds any number of them.
    let tasks_on = |cpus: u32| if req.overcommit { u32::MAX } else { cpus / cpt };
    let mut caps: Vec<u32> = cands.iter().map(|a| tasks_on(a.cpus)).collect();
    caps.sort_unstable_by(|a, b| b.cmp(a));
    let fits = |caps: &[u32]| -> bool {
        let take = &caps[..(nnodes as usize).min(caps.len())];
        if take.len() < nnodes as usize || take.contains(&0) {
            return false;
        }
        match req.ntasks_per_node {
            0 => take.iter().map(|&c| u64::from(c)).sum::<u64>() >= u64::from(ntasks),
            n => take.iter().all(|&c| c >= n.min(ntasks)),
        }
    };
    if !fits(&caps) {
        return Err(invalid(NOT_AVAILABLE));
    }
    // The first nnodes nodes with room for at least one task now.
    let mut chosen: Vec<(&NodeAlloc, Vec<u32>)> = Vec::new();
    for a in cands {
        if chosen.len() == nnodes as usize {
            break;
        }
        let taken = busy.get(&a.node);
        let free: Vec<u32> = ids_of(a)
            .into_iter()
            .filter(|c| req.overlap || !taken.is_some_and(|t| t.contains(c)))
            .collect();
        if free.len() as u32 >= cpt {
            chosen.push((a, free));
        }
    }
    if chosen.len() < nnodes as usize {
        return Err(LayoutError::Busy);
    }
    // Tasks per node: --ntasks-per-node, else one each, then round-robin
    // over the nodes with room left (an even block split when all are equal).
    let cap: Vec<u32> = chosen
        .iter()
        .map(|(_, f)| tasks_on(f.len() as u32))
        .collect();
    let mut counts: Vec<u32> = vec![1; chosen.len()];
    if req.ntasks_per_node > 0 {
        let mut left = ntasks;
        for c in counts.iter_mut() {
            *c = left.min(req.ntasks_per_node);
            left -= *c;
        }
        if left > 0 {
            return Err(invalid(NOT_AVAILABLE));
        }
    } else {
        let mut left = ntasks - nnodes;
        while left > 0 {
            let mut placed = false;
            for (i, c) in counts.iter_mut().enumerate() {
                if left > 0 && *c < cap[i] {
                    *c += 1;
                    left -= 1;
                    placed = true;
                }
            }
            if !placed {
                return Err(LayoutError::Busy);
            }
        }
    }
    if counts.iter().zip(&cap).any(|(c, k)| c > k) {
        return Err(LayoutError::Busy);
    }
    if counts.contains(&0) {
        return Err(invalid(NOT_AVAILABLE));
    }
    let mut out = Vec::new();
    let mut next_task = 0u32;
    for ((a, free), &count) in chosen.iter().zip(&counts) {
        let need = (count.saturating_mul(cpt) as usize).min(free.len());
        let node_id = out.len() as u32;
        out.push(StepNode {
            node: a.node.clone(),
            node_id,
            task_ids: (next_task..next_task + count).collect(),
            cpus: need as u32,
            cpu_ids: if a.cpu_ids.is_empty() {
                Vec::new()
            } else {
                free[..need].to_vec()
            },
            gpu_ids: Vec::new(),
        });
        next_task += count;
    }
    Ok(Placement { nodes: out, ntasks })
}

/// Slurm's message for a GPU request the allocation cannot hold.
pub const BAD_GRES: &str = "Invalid generic resource (gres) specification";

/// Give each node of a placed step the GPUs it asks for (`--gpus`,
/// `--gpus-per-node`, `--gpus-per-task`) out of the job's GPUs there,
/// skipping those `busy` (held by running non-overlapping steps). A step
/// without a GPU request keeps `gpu_ids` empty: it sees all the job's GPUs.
pub fn assign_gpus(
    p: &mut Placement,
    alloc: &[NodeAlloc],
    busy: &HashMap<String, Vec<u32>>,
    req: &StepRequest,
) -> Result<(), LayoutError> {
    if req.gpus == 0 && req.gpus_per_node == 0 && req.gpus_per_task == 0 {
        return Ok(());
    }
    let nn = p.nodes.len() as u32;
    for (i, n) in p.nodes.iter_mut().enumerate() {
        let want = if req.gpus_per_task > 0 {
            req.gpus_per_task * n.task_ids.len() as u32
        } else if req.gpus_per_node > 0 {
            req.gpus_per_node
        } else {
            req.gpus / nn + u32::from((i as u32) < req.gpus % nn)
        };
        if want == 0 {
            continue;
        }
        let job_gpus: Vec<u32> = alloc
            .iter()
            .filter(|a| a.node == n.node)
            .flat_map(|a| a.gres.iter())
            .filter(|g| g.name == "gpu")
            .flat_map(|g| g.indices.iter().copied())
            .collect();
        if (job_gpus.len() as u32) < want {
            return Err(LayoutError::Invalid(BAD_GRES.to_string()));
        }
        let taken = busy.get(&n.node);
        let free: Vec<u32> = job_gpus
            .into_iter()
            .filter(|g| req.overlap || !taken.is_some_and(|t| t.contains(g)))
            .collect();
        if (free.len() as u32) < want {
            return Err(LayoutError::Busy);
        }
        n.gpu_ids = free[..want as usize].to_vec();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc(n: usize, cpus: u32) -> Vec<NodeAlloc> {
        (0..n)
            .map(|i| NodeAlloc {
                node: format!("n{i}"),
                cpus,
                cpu_ids: (0..cpus).collect(),
                ..Default::default()
            })
            .collect()
    }

    fn req(ntasks: u32, nodes: u32) -> StepRequest {
        StepRequest {
            ntasks,
            nodes,
            ..Default::default()
        }
    }

    fn tasks(p: &Placement) -> Vec<(String, Vec<u32>)> {
        p.nodes
            .iter()
            .map(|n| (n.node.clone(), n.task_ids.clone()))
            .collect()
    }

    #[test]
    fn block_split_over_nodes() {
        let a = alloc(2, 4);
        let p = place(&a, &HashMap::new(), &req(4, 2), 0).unwrap();
        assert_eq!(
            tasks(&p),
            vec![("n0".into(), vec![0, 1]), ("n1".into(), vec![2, 3])]
        );
        let p = place(&a, &HashMap::new(), &req(3, 2), 0).unwrap();
        assert_eq!(p.nodes[0].task_ids, vec![0, 1]);
        assert_eq!(p.nodes[1].task_ids, vec![2]);
        // -n1: one node, one CPU.
        let p = place(&a, &HashMap::new(), &req(1, 0), 0).unwrap();
        assert_eq!(p.nodes.len(), 1);
        assert_eq!(p.nodes[0].cpu_ids, vec![0]);
    }

    #[test]
    fn overcommit_puts_more_tasks_than_cpus() {
        let a = alloc(2, 2);
        assert_eq!(
            place(&a, &HashMap::new(), &req(6, 0), 0),
            Err(LayoutError::Invalid(NOT_AVAILABLE.into()))
        );
        let r = StepRequest {
            overcommit: true,
            ..req(6, 0)
        };
        let p = place(&a, &HashMap::new(), &r, 0).unwrap();
        assert_eq!(
            tasks(&p),
            vec![("n0".into(), vec![0, 1, 2]), ("n1".into(), vec![3, 4, 5])]
        );
        assert_eq!(p.nodes[0].cpu_ids, vec![0, 1]);
    }

    #[test]
    fn defaults_and_per_node() {
        let a = alloc(3, 4);
        // Bare srun: one task per node, or the job's task count.
        let p = place(&a, &HashMap::new(), &req(0, 0), 0).unwrap();
        assert_eq!(p.ntasks, 3);
        assert_eq!(p.nodes.len(), 3);
        let p = place(&a, &HashMap::new(), &req(0, 0), 6).unwrap();
        assert_eq!(p.ntasks, 6);
        let r = StepRequest {
            ntasks_per_node: 2,
            nodes: 2,
            ..Default::default()
        };
        let p = place(&a, &HashMap::new(), &r, 0).unwrap();
        assert_eq!(p.ntasks, 4);
        assert_eq!(tasks(&p)[1], ("n1".into(), vec![2, 3]));
        let r = StepRequest {
            nodelist: vec!["n2".into()],
            ..Default::default()
        };
        let p = place(&a, &HashMap::new(), &r, 0).unwrap();
        assert_eq!(tasks(&p), vec![("n2".into(), vec![0])]);
    }

    #[test]
    fn gpus_per_node_task_and_total() {
        let mut a = alloc(2, 4);
        for n in a.iter_mut() {
            n.gres = vec![drover_proto::GresAlloc {
                name: "gpu".into(),
                indices: vec![2, 3],
                ..Default::default()
            }];
        }
        let none = HashMap::new();
        let mut r = req(2, 2);
        r.gpus = 3;
        let mut p = place(&a, &none, &r, 0).unwrap();
        assign_gpus(&mut p, &a, &none, &r).unwrap();
        assert_eq!(p.nodes[0].gpu_ids, vec![2, 3]);
        assert_eq!(p.nodes[1].gpu_ids, vec![2]);
        let mut r = req(1, 1);
        r.gpus_per_task = 1;
        let busy: HashMap<String, Vec<u32>> = [("n0".into(), vec![2])].into();
        let mut p = place(&a, &none, &r, 0).unwrap();
        assign_gpus(&mut p, &a, &busy, &r).unwrap();
        assert_eq!(p.nodes[0].gpu_ids, vec![3]);
        let full: HashMap<String, Vec<u32>> = [("n0".into(), vec![2, 3])].into();
        let mut p = place(&a, &none, &r, 0).unwrap();
        assert_eq!(assign_gpus(&mut p, &a, &full, &r), Err(LayoutError::Busy));
        r.gpus_per_task = 0;
        r.gpus_per_node = 3;
        let mut p = place(&a, &none, &r, 0).unwrap();
        assert_eq!(
            assign_gpus(&mut p, &a, &none, &r),
            Err(LayoutError::Invalid(BAD_GRES.into()))
        );
        // No request: all of the job's GPUs (no ids).
        let r = req(1, 1);
        let mut p = place(&a, &none, &r, 0).unwrap();
        assign_gpus(&mut p, &a, &none, &r).unwrap();
        assert!(p.nodes[0].gpu_ids.is_empty());
    }

    #[test]
    fn too_big_or_busy() {
        let a = alloc(2, 2);
        assert_eq!(
            place(&a, &HashMap::new(), &req(1, 3), 0),
            Err(LayoutError::Invalid(NOT_AVAILABLE.into()))
        );
        assert_eq!(
            place(&a, &HashMap::new(), &req(5, 2), 0),
            Err(LayoutError::Invalid(NOT_AVAILABLE.into()))
        );
        let r = StepRequest {
            nodelist: vec!["zz".into()],
            ..Default::default()
        };
        assert!(matches!(
            place(&a, &HashMap::new(), &r, 0),
            Err(LayoutError::Invalid(_))
        ));
        // Uneven allocations: tasks follow the CPUs.
        let mut uneven = alloc(2, 3);
        uneven[1].cpus = 1;
        uneven[1].cpu_ids = vec![0];
        let p = place(&uneven, &HashMap::new(), &req(4, 2), 0).unwrap();
        assert_eq!(p.nodes[0].task_ids, vec![0, 1, 2]);
        assert_eq!(p.nodes[1].task_ids, vec![3]);
        // Both nodes fully used by another step: wait; --overlap shares.
        let busy: HashMap<String, Vec<u32>> =
            [("n0".into(), vec![0, 1]), ("n1".into(), vec![0, 1])].into();
        assert_eq!(place(&a, &busy, &req(1, 0), 0), Err(LayoutError::Busy));
        let mut r = req(1, 0);
        r.overlap = true;
        assert!(place(&a, &busy, &r, 0).is_ok());
        // One CPU left on n1: the step goes there.
        let busy: HashMap<String, Vec<u32>> =
            [("n0".into(), vec![0, 1]), ("n1".into(), vec![0])].into();
        let p = place(&a, &busy, &req(1, 0), 0).unwrap();
        assert_eq!(p.nodes[0].node, "n1");
        assert_eq!(p.nodes[0].cpu_ids, vec![1]);
    }
}
