//! Placement: choose nodes, CPUs, memory and devices for one request.

use super::{GresReq, NodeSnap, Request};

/// Resources a job gets on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alloc {
    /// Index into the node slice.
    pub node: usize,
    pub cpu_ids: Vec<u32>,
    pub mem: u64,
    /// Positions in the node's `gres` list.
    pub gres: Vec<usize>,
    pub tasks: u32,
}

/// Why a request does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoFit {
    /// Not enough suitable nodes with the resources free.
    Resources,
}

fn gres_matches(d: &super::GresDev, r: &GresReq) -> bool {
    d.name == r.name && r.r#type.as_deref().is_none_or(|t| t == d.r#type)
}

/// Free devices on `n` matching `r`, in index order.
fn free_gres(n: &NodeSnap, r: &GresReq) -> Vec<usize> {
    n.gres
        .iter()
        .enumerate()
        .filter(|(_, d)| d.free && gres_matches(d, r))
        .map(|(i, _)| i)
        .collect()
}

/// What one node can give a job: tasks it can host (0 = none) and the fixed part.
struct NodeFit {
    max_tasks: u32,
}

fn node_fit(req: &Request, n: &NodeSnap, free_cpus: u32) -> NodeFit {
    let none = NodeFit { max_tasks: 0 };
    if !n.usable {
        return none;
    }
    if let Some(c) = &req.constraint {
        if !c.matches(&n.features) {
            return none;
        }
    }
    if req.exclusive && (n.jobs > 0 || free_cpus < n.cpus) {
        return none;
    }
    // Fixed per-node generic resources.
    let mut gpus_fixed = 0u32;
    for g in &req.gres {
        if (free_gres(n, g).len() as u32) < g.count {
            return none;
        }
        if g.name == "gpu" {
            gpus_fixed += g.count;
        }
    }
    let cpt = req.cpus_per_task.max(1);
    let mut max_tasks = free_cpus / cpt;
    // Per-task GPUs.
    let g = GresReq {
        name: "gpu".into(),
        r#type: req.gpus_total.as_ref().and_then(|t| t.r#type.clone()),
        count: 0,
    };
    if let Some(by_gpu) = (free_gres(n, &g).len() as u32).checked_div(req.gpus_per_task) {
        max_tasks = max_tasks.min(by_gpu);
    }
    // Memory.
    let mut mem_fixed = req.mem_per_node;
    if req.mem_per_gpu > 0 {
        mem_fixed += req.mem_per_gpu * u64::from(gpus_fixed);
    }
    if mem_fixed > n.free_memory {
        return none;
    }
    if req.mem_per_cpu > 0 {
        let per_task = req.mem_per_cpu * u64::from(cpt);
        let by_mem = (n.free_memory - mem_fixed) / per_task.max(1);
        max_tasks = max_tasks.min(by_mem.min(u64::from(u32::MAX)) as u32);
    }
    // CPUs demanded by GPUs or --mincpus must be free too.
    let min_cpus = req
        .min_cpus_per_node
        .max(gpus_fixed * req.cpus_per_gpu)
        .max(cpt);
    if free_cpus < min_cpus {
        return none;
    }
    if req.ntasks_per_node > 0 {
        if max_tasks < req.ntasks_per_node {
            return none;
        }
        max_tasks = req.ntasks_per_node;
    }
    NodeFit { max_tasks }
}

/// Place a request on the candidate nodes (indices into `nodes`), best fit:
/// lowest `Weight` first, then nodes already in use (to keep idle nodes whole),
/// then the fewest free CPUs. All-or-nothing.
pub fn place(req: &Request, candidates: &[usize], nodes: &[NodeSnap]) -> Result<Vec<Alloc>, NoFit> {
    let min_nodes = req.min_nodes.max(1) as usize;
    let max_nodes = (req.max_nodes.max(req.min_nodes).max(1) as usize).max(min_nodes);
    if req.required.iter().any(|&r| !candidates.contains(&r)) {
        return Err(NoFit::Resources);
    }
    let mut order: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|i| *i < nodes.len() && !req.excluded.contains(i))
        .collect();
    order.sort_by_key(|&i| {
        let n = &nodes[i];
        (
            !req.required.contains(&i),
            n.weight,
            n.jobs == 0,
            n.free_cpus.len(),
            i,
        )
    });

    // Choose nodes and how many tasks each can host.
    let mut chosen: Vec<(usize, u32)> = Vec::new();
    let want_tasks = if req.ntasks_per_node > 0 {
        req.ntasks.max(req.ntasks_per_node * min_nodes as u32)
    } else {
        req.ntasks.max(min_nodes as u32)
    };
    let mut cap_sum: u64 = 0;
    for &i in &order {
        let n = &nodes[i];
        let fit = node_fit(req, n, n.free_cpus.len() as u32);
        if fit.max_tasks == 0 {
            if req.required.contains(&i) {
                return Err(NoFit::Resources);
            }
            continue;
        }
        chosen.push((i, fit.max_tasks));
        cap_sum += u64::from(fit.max_tasks);
        let enough_nodes = chosen.len() >= min_nodes && chosen.len() >= req.required.len();
        if enough_nodes && cap_sum >= u64::from(want_tasks) {
            break;
        }
        if chosen.len() >= max_nodes {
            break;
        }
    }
    if chosen.len() < min_nodes || cap_sum < u64::from(want_tasks) {
        return Err(NoFit::Resources);
    }
    if req.ntasks_per_node > 0 {
        // Exactly ntasks_per_node on each chosen node; need enough nodes.
        let need = want_tasks.div_ceil(req.ntasks_per_node) as usize;
        if chosen.len() < need {
            return Err(NoFit::Resources);
        }
        chosen.truncate(need.max(min_nodes));
    }

    // Distribute tasks: one per node, then fill in order.
    let mut tasks: Vec<u32> = vec![1; chosen.len()];
    if req.ntasks_per_node > 0 {
        tasks = vec![req.ntasks_per_node; chosen.len()];
    } else {
        let mut left = want_tasks.saturating_sub(chosen.len() as u32);
        for (k, (_, cap)) in chosen.iter().enumerate() {
            let add = left.min(cap - 1);
            tasks[k] += add;
            left -= add;
        }
    }

    // GPUs spread over the nodes for --gpus=N.
    let mut total_gpus_left = req.gpus_total.as_ref().map_or(0, |g| g.count);
    let cpt = req.cpus_per_task.max(1);
    let mut allocs = Vec::with_capacity(chosen.len());
    for (k, &(i, _)) in chosen.iter().enumerate() {
        let n = &nodes[i];
        let t = tasks[k];
        let mut gres: Vec<usize> = Vec::new();
        let mut gpus = 0u32;
        for g in &req.gres {
            let free = free_gres(n, g);
            let take: Vec<usize> = free
                .into_iter()
                .filter(|p| !gres.contains(p))
                .take(g.count as usize)
                .collect();
            if (take.len() as u32) < g.count {
                return Err(NoFit::Resources);
            }
            if g.name == "gpu" {
                gpus += g.count;
            }
            gres.extend(take);
        }
        let mut extra_gpus = t * req.gpus_per_task;
        if let Some(g) = &req.gpus_total {
            let free = free_gres(n, g)
                .into_iter()
                .filter(|p| !gres.contains(p))
                .count() as u32;
            let nodes_after = (chosen.len() - k - 1) as u32;
            let take = if nodes_after == 0 {
                total_gpus_left
            } else {
                total_gpus_left.min(free)
            };
            extra_gpus += take;
            total_gpus_left -= take.min(total_gpus_left);
        }
        if extra_gpus > 0 {
            let g = GresReq {
                name: "gpu".into(),
                r#type: req.gpus_total.as_ref().and_then(|t| t.r#type.clone()),
                count: extra_gpus,
            };
            let take: Vec<usize> = free_gres(n, &g)
                .into_iter()
                .filter(|p| !gres.contains(p))
                .take(extra_gpus as usize)
                .collect();
            if (take.len() as u32) < extra_gpus {
                return Err(NoFit::Resources);
            }
            gpus += extra_gpus;
            gres.extend(take);
        }
        let (cpu_count, mem) = if req.exclusive {
            let gres_all: Vec<usize> = (0..n.gres.len()).collect();
            gres = gres_all;
            (n.cpus, n.real_memory)
        } else {
            let c = (t * cpt)
                .max(req.min_cpus_per_node)
                .max(gpus * req.cpus_per_gpu);
            let mem = req.mem_per_node
                + req.mem_per_cpu * u64::from(c)
                + req.mem_per_gpu * u64::from(gpus);
            (c, mem)
        };
        if cpu_count as usize > n.free_cpus.len() || mem > n.free_memory {
            return Err(NoFit::Resources);
        }
        allocs.push(Alloc {
            node: i,
            cpu_ids: n.free_cpus[..cpu_count as usize].to_vec(),
            mem,
            gres,
            tasks: t,
        });
    }
    if total_gpus_left > 0 {
        return Err(NoFit::Resources);
    }
    Ok(allocs)
}
