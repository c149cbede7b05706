//! The scheduler core: a pure, deterministic function from a snapshot of the
//! cluster (nodes with their free resources, partitions, pending jobs in any
//! order) to decisions (start job J on nodes N with CPUs C and GPUs G, or
//! leave it pending with a reason). No I/O, no clock reads, no async: the
//! controller builds the snapshot, calls [`schedule`], and applies the result.
//!
//! This is the priority-order scheduler of Slurm's `sched/builtin`: jobs are
//! taken by (partition PriorityTier, priority, job id); once a job in a
//! partition must wait for resources, lower-priority jobs of that partition
//! wait behind it (reason `Priority`). Backfill plugs in here later: it needs
//! only expected end times added to the snapshot.

mod constraint;
mod place;

pub use constraint::{parse_constraint, Constraint};
pub use place::{place, Alloc};

/// One node as the scheduler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSnap {
    /// Can take new work (registered, responding, not drained or down).
    pub usable: bool,
    pub cpus: u32,
    /// Free CPU ids, ascending.
    pub free_cpus: Vec<u32>,
    pub real_memory: u64,
    pub free_memory: u64,
    /// Generic resources, one entry per device (or unit) in index order.
    pub gres: Vec<GresDev>,
    pub features: Vec<String>,
    pub weight: u32,
    /// Jobs currently on the node (for exclusive placement and packing).
    pub jobs: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GresDev {
    pub name: String,
    pub r#type: String,
    /// Index among devices of the same name on this node.
    pub index: u32,
    pub free: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PartSnap {
    /// Indices into the node slice.
    pub nodes: Vec<usize>,
    /// State UP (DOWN/INACTIVE/DRAIN partitions start nothing).
    pub up: bool,
    pub priority_tier: u32,
}

/// A typed or untyped generic resource request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GresReq {
    pub name: String,
    pub r#type: Option<String>,
    pub count: u32,
}

/// Normalised resource request of a job (defaults already applied).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Request {
    pub min_nodes: u32,
    pub max_nodes: u32,
    /// Total tasks; at least min_nodes when not given.
    pub ntasks: u32,
    pub ntasks_per_node: u32,
    pub cpus_per_task: u32,
    pub min_cpus_per_node: u32,
    /// Memory per node in MB (0 = none).
    pub mem_per_node: u64,
    /// Memory per allocated CPU in MB (0 = none).
    pub mem_per_cpu: u64,
    /// Memory per allocated GPU in MB (0 = none).
    pub mem_per_gpu: u64,
    /// Per-node generic resources.
    pub gres: Vec<GresReq>,
    /// `--gpus`: total over the job.
    pub gpus_total: Option<GresReq>,
    pub gpus_per_task: u32,
    pub cpus_per_gpu: u32,
    pub exclusive: bool,
    pub constraint: Option<Constraint>,
    /// Node indices that must be in the allocation.
    pub required: Vec<usize>,
    /// Node indices that must not.
    pub excluded: Vec<usize>,
}

/// A pending job, or the pending part of a job array.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSnap {
    pub id: u32,
    pub priority: u32,
    /// Candidate partitions (indices), in the user's order.
    pub partitions: Vec<usize>,
    pub req: Request,
    /// How many copies may start now (array tasks under the throttle); 1 for a plain job.
    pub instances: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Start {
        job: u32,
        partition: usize,
        allocs: Vec<Alloc>,
    },
    Wait {
        job: u32,
        reason: &'static str,
    },
}

/// Plan one scheduling pass. Deterministic: same input, same output.
pub fn schedule(nodes: &[NodeSnap], parts: &[PartSnap], jobs: &[JobSnap]) -> Vec<Decision> {
    let mut order: Vec<&JobSnap> = jobs.iter().collect();
    let tier = |j: &JobSnap| {
        j.partitions
            .iter()
            .filter_map(|&p| parts.get(p))
            .map(|p| p.priority_tier)
            .max()
            .unwrap_or(0)
    };
    order.sort_by(|a, b| {
        tier(b)
            .cmp(&tier(a))
            .then(b.priority.cmp(&a.priority))
            .then(a.id.cmp(&b.id))
    });

    let mut work: Vec<NodeSnap> = nodes.to_vec();
    let mut blocked = vec![false; parts.len()];
    let mut out = Vec::new();
    let any_free = |w: &[NodeSnap]| w.iter().any(|n| n.usable && !n.free_cpus.is_empty());

    for job in order {
        let mut started = 0;
        let mut reason: &'static str = "Resources";
        'instances: while started < job.instances.max(1) {
            if !any_free(&work) {
                reason = "Resources";
                break;
            }
            let mut waiting_reason: Option<&'static str> = None;
            for &p in &job.partitions {
                let Some(part) = parts.get(p) else { continue };
                if !part.up {
                    waiting_reason.get_or_insert("PartitionDown");
                    continue;
                }
                if blocked[p] {
                    waiting_reason.get_or_insert("Priority");
                    continue;
                }
                match place(&job.req, &part.nodes, &work) {
                    Ok(allocs) => {
                        for a in &allocs {
                            apply(&mut work[a.node], a);
                        }
                        out.push(Decision::Start {
                            job: job.id,
                            partition: p,
                            allocs,
                        });
                        started += 1;
                        continue 'instances;
                    }
                    Err(_) => {
                        // Could it run here if the partition's usable nodes were empty?
                        let pristine: Vec<NodeSnap> = part
                            .nodes
                            .iter()
                            .filter_map(|&i| work.get(i))
                            .map(|n| n.pristine_if_usable())
                            .collect();
                        let local: Vec<usize> = (0..pristine.len()).collect();
                        let req = remap(&job.req, &part.nodes);
                        if place(&req, &local, &pristine).is_ok() {
                            blocked[p] = true;
                            waiting_reason.get_or_insert("Resources");
                        } else {
                            waiting_reason.get_or_insert("ReqNodeNotAvail");
                        }
                    }
                }
            }
            reason = waiting_reason.unwrap_or("Resources");
            break;
        }
        if started == 0 {
            out.push(Decision::Wait {
                job: job.id,
                reason,
            });
        }
    }
    out
}

/// Translate a request's node indices into a partition-local numbering.
fn remap(req: &Request, part_nodes: &[usize]) -> Request {
    let local = |v: &[usize]| -> Vec<usize> {
        v.iter()
            .filter_map(|n| part_nodes.iter().position(|p| p == n))
            .collect()
    };
    let mut r = req.clone();
    let required = local(&req.required);
    if required.len() != req.required.len() {
        // A required node outside the partition can never be satisfied here.
        r.required = vec![usize::MAX];
    } else {
        r.required = required;
    }
    r.excluded = local(&req.excluded);
    r
}

impl NodeSnap {
    /// The node with nothing running on it, if it can take work at all.
    pub fn pristine_if_usable(&self) -> NodeSnap {
        let mut n = self.pristine();
        n.usable = self.usable;
        n
    }

    /// The node as configured, empty and usable (for "could this ever run").
    pub fn pristine(&self) -> NodeSnap {
        NodeSnap {
            usable: true,
            cpus: self.cpus,
            free_cpus: (0..self.cpus).collect(),
            real_memory: self.real_memory,
            free_memory: self.real_memory,
            gres: self
                .gres
                .iter()
                .map(|g| GresDev {
                    free: true,
                    ..g.clone()
                })
                .collect(),
            features: self.features.clone(),
            weight: self.weight,
            jobs: 0,
        }
    }
}

/// Take an allocation's resources out of a node.
pub fn apply(node: &mut NodeSnap, a: &Alloc) {
    node.free_cpus.retain(|c| !a.cpu_ids.contains(c));
    node.free_memory = node.free_memory.saturating_sub(a.mem);
    for &g in &a.gres {
        if let Some(d) = node.gres.get_mut(g) {
            d.free = false;
        }
    }
    node.jobs += 1;
}

#[cfg(test)]
mod tests;
