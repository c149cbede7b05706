//! A job's request, resolved once. What the user asked for (`JobSpec`'s
//! options) is turned at submit, at `scontrol update` and, for records of
//! older versions, at recovery into one [`ResolvedRequest`]: counts made
//! explicit, memory per node or per CPU with the partition's (else the
//! cluster's) `DefMemPerCPU`/`DefMemPerNode`/`MaxMemPerCPU`/`MaxMemPerNode`
//! applied, GRES by type, node lists expanded. It is stored with the job
//! (write-ahead log and snapshot) and everything else reads it: the
//! scheduler ([`to_sched`]), accounting limits and priority ([`tres`]),
//! squeue/scontrol ([`min_memory`]) and the launch (memory terms).
//!
//! Pure: no I/O, no clock.

use drover_conf::partitions::PartitionConf;
use drover_conf::slurmconf::Config;
use drover_proto::state::{GresCount, ResolvedRequest};
use drover_proto::{JobAllocation, JobSpec, NodeAlloc};

use crate::assoc::Tres;
use crate::sched::{parse_constraint, request_tres, GresReq, Request};

/// Slurm's refusals of a request (`ESLURM_*` texts).
pub mod refusal {
    pub const NODE_NAME: &str = "Invalid node name specified";
    pub const GRES: &str = "Invalid generic resource (gres) specification";
    pub const FEATURE: &str = "Invalid feature specification";
    pub const MEMORY: &str = "Memory required by task is not available";
    pub const NODE_CONFIG: &str = "Requested node configuration is not available";
}

/// Where the memory defaults and maxima come from: the partition's own,
/// else the cluster's.
struct MemRules {
    def_per_cpu: Option<u64>,
    def_per_node: Option<u64>,
    max_per_cpu: Option<u64>,
    max_per_node: Option<u64>,
}

impl MemRules {
    fn of(part: Option<&PartitionConf>, cfg: &Config) -> MemRules {
        // A partition that sets one of a pair overrides both of the cluster's.
        let (def_per_cpu, def_per_node) = match part {
            Some(p) if p.def_mem_per_cpu.is_some() || p.def_mem_per_node.is_some() => {
                (p.def_mem_per_cpu, p.def_mem_per_node)
            }
            _ => (cfg.def_mem_per_cpu, cfg.def_mem_per_node),
        };
        let (max_per_cpu, max_per_node) = match part {
            Some(p) if p.max_mem_per_cpu.is_some() || p.max_mem_per_node.is_some() => {
                (p.max_mem_per_cpu, p.max_mem_per_node)
            }
            _ => (cfg.max_mem_per_cpu, cfg.max_mem_per_node),
        };
        MemRules {
            def_per_cpu,
            def_per_node,
            max_per_cpu,
            max_per_node,
        }
    }
}

fn gres_count(g: GresReq) -> GresCount {
    GresCount {
        name: g.name,
        r#type: g.r#type.unwrap_or_default(),
        count: g.count,
    }
}

fn gres_req(g: &GresCount) -> GresReq {
    GresReq {
        name: g.name.clone(),
        r#type: (!g.r#type.is_empty()).then(|| g.r#type.clone()),
        count: g.count,
    }
}

/// Parse `gpu:a100:2` style per-node gres into requests.
pub fn gres_requests(s: &str) -> Result<Vec<GresReq>, &'static str> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    let list = drover_conf::slurmconf::parse_gres_list(s).map_err(|_| refusal::GRES)?;
    Ok(list
        .into_iter()
        .map(|g| GresReq {
            name: g.name,
            r#type: g.r#type,
            count: g.count.min(u64::from(u32::MAX)) as u32,
        })
        .collect())
}

/// The CPUs of each node of the partition (every node without one), as
/// slurm.conf names them.
fn config_node_cpus(cfg: &Config, part: Option<&PartitionConf>) -> Vec<u32> {
    match part {
        Some(p) => {
            // A set: a name-by-name match is nodes × partition nodes.
            let names: std::collections::HashSet<&str> =
                p.nodes.iter().map(String::as_str).collect();
            cfg.nodes
                .iter()
                .filter(|n| names.contains(n.name.as_str()))
                .map(|n| n.cpus)
                .collect()
        }
        None => cfg.nodes.iter().map(|n| n.cpus).collect(),
    }
}

/// The tasks of `cpus_per_task` a node of `cpus` CPUs holds, at most
/// `per_node` when set.
fn node_task_cap(cpus: u32, cpus_per_task: u32, per_node: u32) -> u32 {
    let t = cpus / cpus_per_task.max(1);
    if per_node > 0 {
        t.min(per_node)
    } else {
        t
    }
}

/// The fewest of these nodes (their CPU counts) whose CPUs hold `ntasks`
/// tasks of `cpus_per_task` (at most `per_node` a node when set), the
/// roomiest first; all of them when even that is too few (placement then
/// refuses it).
fn fewest_nodes(node_cpus: &[u32], ntasks: u32, cpus_per_task: u32, per_node: u32) -> u32 {
    let cap = |c: u32| node_task_cap(c, cpus_per_task, per_node);
    // Nodes by how many tasks each holds: a cluster has few node types.
    let mut by_cap: Vec<(u32, u32)> = Vec::new();
    for &c in node_cpus {
        let t = cap(c);
        match by_cap.iter_mut().find(|x| x.0 == t) {
            Some(x) => x.1 += 1,
            None => by_cap.push((t, 1)),
        }
    }
    by_cap.sort_unstable_by_key(|x| std::cmp::Reverse(x.0));
    let (mut held, mut nodes) = (0u32, 0u32);
    for (t, n) in by_cap {
        if t > 0 {
            let left = ntasks.saturating_sub(held);
            let need = left.div_ceil(t);
            if need <= n {
                return nodes + need.max(1);
            }
            held = held.saturating_add(t.saturating_mul(n));
        }
        nodes += n;
    }
    nodes.max(1)
}

fn expand_nodes(s: &str) -> Result<Vec<String>, &'static str> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    drover_conf::hostlist::expand(s).map_err(|_| refusal::NODE_NAME)
}

/// Resolve `spec` against the partition that supplies its defaults (`None`:
/// the cluster's only). Errors are Slurm's texts.
pub fn resolve(
    spec: &JobSpec,
    part: Option<&PartitionConf>,
    cfg: &Config,
) -> Result<ResolvedRequest, &'static str> {
    resolve_with(spec, part, cfg, &|| config_node_cpus(cfg, part))
}

/// [`resolve`], with the CPUs of each node the request may span (the
/// partition's, else every node's) from `node_cpus`, asked only for a task
/// count without a node count.
pub fn resolve_with(
    spec: &JobSpec,
    part: Option<&PartitionConf>,
    cfg: &Config,
    node_cpus: &dyn Fn() -> Vec<u32>,
) -> Result<ResolvedRequest, &'static str> {
    let required_nodes = expand_nodes(&spec.nodelist)?;
    let excluded_nodes = expand_nodes(&spec.exclude)?;
    let mut min_nodes = spec.min_nodes.max(1).max(required_nodes.len() as u32);
    let mut max_nodes = spec.max_nodes.max(min_nodes);
    let ntasks_given = spec.ntasks > 0;
    let ntasks = if spec.ntasks > 0 {
        spec.ntasks
    } else if spec.ntasks_per_node > 0 {
        spec.ntasks_per_node.saturating_mul(min_nodes)
    } else {
        min_nodes
    };
    let mut cpus_per_task = spec.cpus_per_task.max(1);

    let rules = MemRules::of(part, cfg);
    let (mut mem_per_node_mb, mut mem_per_cpu_mb) = (spec.mem_per_node_mb, spec.mem_per_cpu_mb);
    let asked = mem_per_node_mb > 0 || mem_per_cpu_mb > 0 || spec.mem_per_gpu_mb > 0;
    // --exclusive without --mem: the whole node's memory (placement's rule).
    let mem_defaulted = !asked && !spec.exclusive;
    if mem_defaulted {
        if let Some(m) = rules.def_per_cpu {
            mem_per_cpu_mb = m;
        } else if let Some(m) = rules.def_per_node {
            mem_per_node_mb = m;
        }
    }
    if let Some(max) = rules.max_per_node.filter(|&m| m > 0) {
        if mem_per_node_mb > max {
            return Err(refusal::MEMORY);
        }
    }
    if let Some(max) = rules.max_per_cpu.filter(|&m| m > 0) {
        if mem_per_cpu_mb > max {
            // Slurm's answer: more CPUs per task, the memory per task kept.
            let per_task = mem_per_cpu_mb.saturating_mul(u64::from(cpus_per_task));
            let cpt = per_task.div_ceil(max);
            cpus_per_task = u32::try_from(cpt).map_err(|_| refusal::MEMORY)?;
            mem_per_cpu_mb = per_task.div_ceil(cpt);
        }
    }

    // Without -N (or -w), a task count spans the fewest nodes of the
    // partition that hold its tasks, as Slurm allocates it.
    if spec.min_nodes == 0 && spec.max_nodes == 0 && spec.ntasks > 1 && required_nodes.is_empty() {
        let n = fewest_nodes(&node_cpus(), ntasks, cpus_per_task, spec.ntasks_per_node);
        if part.and_then(|p| p.max_nodes).is_some_and(|max| n > max) {
            return Err(refusal::NODE_CONFIG);
        }
        min_nodes = n.max(min_nodes);
        max_nodes = min_nodes;
    }

    let gres_per_node = {
        let mut g: Vec<GresCount> = gres_requests(&spec.gres)?
            .into_iter()
            .map(gres_count)
            .collect();
        if spec.gpus_per_node > 0 {
            g.push(GresCount {
                name: "gpu".into(),
                r#type: spec.gpus_type.clone(),
                count: spec.gpus_per_node,
            });
        }
        g
    };
    let gpus_total = (spec.gpus > 0).then(|| GresCount {
        name: "gpu".into(),
        r#type: spec.gpus_type.clone(),
        count: spec.gpus,
    });
    parse_constraint(&spec.constraint).map_err(|_| refusal::FEATURE)?;

    Ok(ResolvedRequest {
        min_nodes,
        max_nodes,
        ntasks,
        ntasks_given,
        ntasks_per_node: spec.ntasks_per_node,
        cpus_per_task,
        min_cpus_per_node: spec.min_cpus_per_node,
        mem_per_node_mb,
        mem_per_cpu_mb,
        mem_per_gpu_mb: spec.mem_per_gpu_mb,
        mem_defaulted,
        gres_per_node,
        gpus_total,
        gpus_per_task: spec.gpus_per_task,
        cpus_per_gpu: spec.cpus_per_gpu,
        exclusive: spec.exclusive,
        oversubscribe: spec.oversubscribe,
        constraint: spec.constraint.trim().to_string(),
        required_nodes,
        excluded_nodes,
        defaults_from: part.map(|p| p.name.clone()).unwrap_or_default(),
    })
}

/// The counts of a request in the scheduler's form (no node lists, no
/// constraint): enough for TRES arithmetic.
fn counts(r: &ResolvedRequest) -> Request {
    Request {
        min_nodes: r.min_nodes.max(1),
        max_nodes: r.max_nodes.max(r.min_nodes).max(1),
        ntasks: r.ntasks,
        ntasks_per_node: r.ntasks_per_node,
        cpus_per_task: r.cpus_per_task.max(1),
        min_cpus_per_node: r.min_cpus_per_node,
        mem_per_node: r.mem_per_node_mb,
        mem_per_cpu: r.mem_per_cpu_mb,
        mem_per_gpu: r.mem_per_gpu_mb,
        gres: r.gres_per_node.iter().map(gres_req).collect(),
        gpus_total: r.gpus_total.as_ref().map(gres_req),
        gpus_per_task: r.gpus_per_task,
        cpus_per_gpu: r.cpus_per_gpu,
        exclusive: r.exclusive,
        oversubscribe: r.oversubscribe,
        constraint: None,
        required: Vec::new(),
        excluded: Vec::new(),
    }
}

/// The scheduler's form: node names become indices of the current
/// configuration (`node_idx`), the constraint its parsed form.
pub fn to_sched(
    r: &ResolvedRequest,
    node_idx: impl Fn(&str) -> Option<usize>,
) -> Result<Request, &'static str> {
    let idx = |names: &[String]| -> Result<Vec<usize>, &'static str> {
        names
            .iter()
            .map(|n| node_idx(n).ok_or(refusal::NODE_NAME))
            .collect()
    };
    let mut q = counts(r);
    q.required = idx(&r.required_nodes)?;
    q.excluded = idx(&r.excluded_nodes)?;
    q.constraint = parse_constraint(&r.constraint).map_err(|_| refusal::FEATURE)?;
    Ok(q)
}

/// What the job asks for as TRES counts (cpu, mem in MiB, node, gres/gpu,
/// gres/gpu:TYPE, billing): accounting limits, priority, squeue.
pub fn tres(r: &ResolvedRequest) -> Tres {
    request_tres(&counts(r))
}

/// The totals of [`tres`] (CPUs, nodes, MiB, GPUs) without its map (squeue).
pub fn totals(r: &ResolvedRequest) -> crate::sched::Totals {
    crate::sched::request_totals(&counts(r))
}

/// Slurm's `MinMemoryCPU`/`MinMemoryNode`: (MiB, per CPU). 0 = none asked.
pub fn min_memory(r: &ResolvedRequest) -> (u64, bool) {
    if r.mem_per_cpu_mb > 0 {
        (r.mem_per_cpu_mb, true)
    } else {
        (r.mem_per_node_mb, false)
    }
}

/// What the launch carries: the job's own allocation on every node and
/// the memory and task terms of its request.
pub fn allocation(r: &ResolvedRequest, nodes: &[NodeAlloc]) -> JobAllocation {
    JobAllocation {
        nodes: nodes.to_vec(),
        mem_per_node_mb: r.mem_per_node_mb,
        mem_per_cpu_mb: r.mem_per_cpu_mb,
        mem_per_gpu_mb: r.mem_per_gpu_mb,
        cpus_per_task: r.cpus_per_task,
        ntasks: if r.ntasks_given { r.ntasks } else { 0 },
        ntasks_per_node: r.ntasks_per_node,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Config {
        Config::default()
    }

    fn part(f: impl FnOnce(&mut PartitionConf)) -> PartitionConf {
        let mut p = PartitionConf::new("p");
        f(&mut p);
        p
    }

    #[test]
    fn totals_are_the_tres_numbers() {
        let spec = JobSpec {
            ntasks: 4,
            cpus_per_task: 2,
            min_nodes: 2,
            mem_per_gpu_mb: 100,
            gres: "gpu:a100:2".into(),
            ..Default::default()
        };
        let r = resolve(&spec, None, &cfg()).unwrap();
        let (t, m) = (totals(&r), tres(&r));
        assert_eq!((t.cpus, t.nodes, t.gpus, t.mem), (8, 2, 4, 400));
        assert_eq!(
            (m["cpu"], m["node"], m["gres/gpu"], m["mem"]),
            (8, 2, 4, 400)
        );
        assert_eq!(m["gres/gpu:a100"], 4);
        let r = resolve(&JobSpec::default(), None, &cfg()).unwrap();
        assert_eq!(
            totals(&r),
            crate::sched::Totals {
                cpus: 1,
                nodes: 1,
                mem: 0,
                gpus: 0
            }
        );
        assert!(!tres(&r).contains_key("gres/gpu"));
    }

    #[test]
    fn per_cpu_default_multiplies_with_cpus() {
        let p = part(|p| p.def_mem_per_cpu = Some(100));
        let spec = JobSpec {
            cpus_per_task: 2,
            ..Default::default()
        };
        let r = resolve(&spec, Some(&p), &cfg()).unwrap();
        assert_eq!((r.mem_per_cpu_mb, r.mem_per_node_mb), (100, 0));
        assert!(r.mem_defaulted);
        assert_eq!(tres(&r)["mem"], 200);
        assert_eq!(min_memory(&r), (100, true));
    }

    #[test]
    fn partition_defaults_win_over_the_cluster() {
        let mut c = cfg();
        c.def_mem_per_cpu = Some(50);
        let p = part(|p| p.def_mem_per_node = Some(1000));
        let r = resolve(&JobSpec::default(), Some(&p), &c).unwrap();
        assert_eq!((r.mem_per_cpu_mb, r.mem_per_node_mb), (0, 1000));
        assert_eq!(r.defaults_from, "p");
        // No partition default: the cluster's.
        let r = resolve(&JobSpec::default(), Some(&part(|_| {})), &c).unwrap();
        assert_eq!((r.mem_per_cpu_mb, r.mem_per_node_mb), (50, 0));
        // No default anywhere: no memory reserved.
        let r = resolve(&JobSpec::default(), None, &cfg()).unwrap();
        assert_eq!((r.mem_per_cpu_mb, r.mem_per_node_mb), (0, 0));
        assert!(!tres(&r).contains_key("mem"));
    }

    #[test]
    fn an_explicit_request_is_kept() {
        let p = part(|p| p.def_mem_per_cpu = Some(100));
        let spec = JobSpec {
            mem_per_node_mb: 512,
            min_nodes: 2,
            ..Default::default()
        };
        let r = resolve(&spec, Some(&p), &cfg()).unwrap();
        assert_eq!((r.mem_per_cpu_mb, r.mem_per_node_mb), (0, 512));
        assert!(!r.mem_defaulted);
        assert_eq!(tres(&r)["mem"], 1024);
        // --mem-per-gpu alone also means "no default".
        let spec = JobSpec {
            mem_per_gpu_mb: 10,
            ..Default::default()
        };
        let r = resolve(&spec, Some(&p), &cfg()).unwrap();
        assert_eq!((r.mem_per_cpu_mb, r.mem_per_node_mb), (0, 0));
    }

    #[test]
    fn exclusive_without_memory_takes_no_default() {
        let p = part(|p| p.def_mem_per_cpu = Some(100));
        let spec = JobSpec {
            exclusive: true,
            ..Default::default()
        };
        let r = resolve(&spec, Some(&p), &cfg()).unwrap();
        assert!(r.exclusive && !r.mem_defaulted);
        assert_eq!((r.mem_per_cpu_mb, r.mem_per_node_mb), (0, 0));
    }

    #[test]
    fn max_mem_per_node_refuses_and_max_per_cpu_adds_cpus() {
        let p = part(|p| p.max_mem_per_node = Some(1000));
        let spec = JobSpec {
            mem_per_node_mb: 2000,
            ..Default::default()
        };
        assert_eq!(resolve(&spec, Some(&p), &cfg()), Err(refusal::MEMORY));
        let p = part(|p| p.max_mem_per_cpu = Some(100));
        let spec = JobSpec {
            mem_per_cpu_mb: 250,
            cpus_per_task: 2,
            ..Default::default()
        };
        let r = resolve(&spec, Some(&p), &cfg()).unwrap();
        // 500 MiB per task over CPUs of at most 100 MiB: 5 CPUs.
        assert_eq!((r.cpus_per_task, r.mem_per_cpu_mb), (5, 100));
        // The cluster's maximum when the partition sets none.
        let mut c = cfg();
        c.max_mem_per_node = Some(10);
        let spec = JobSpec {
            mem_per_node_mb: 11,
            ..Default::default()
        };
        assert_eq!(resolve(&spec, None, &c), Err(refusal::MEMORY));
    }

    #[test]
    fn gres_by_type_and_gpus() {
        let spec = JobSpec {
            gres: "gpu:a100:2,nic:1".into(),
            gpus: 3,
            gpus_type: "h100".into(),
            min_nodes: 2,
            ..Default::default()
        };
        let r = resolve(&spec, None, &cfg()).unwrap();
        let g: Vec<_> = r
            .gres_per_node
            .iter()
            .map(|g| (g.name.as_str(), g.r#type.as_str(), g.count))
            .collect();
        assert_eq!(g, vec![("gpu", "a100", 2), ("nic", "", 1)]);
        let t = tres(&r);
        assert_eq!(
            (t["gres/gpu"], t["gres/gpu:a100"], t["gres/gpu:h100"]),
            (7, 4, 3)
        );
        let bad = JobSpec {
            gres: "gpu:x:y:z:w".into(),
            ..Default::default()
        };
        assert_eq!(resolve(&bad, None, &cfg()), Err(refusal::GRES));
    }

    #[test]
    fn node_counts_and_lists() {
        let spec = JobSpec {
            min_nodes: 1,
            max_nodes: 0,
            nodelist: "n[1-3]".into(),
            exclude: "n9".into(),
            ntasks_per_node: 2,
            ..Default::default()
        };
        let r = resolve(&spec, None, &cfg()).unwrap();
        assert_eq!((r.min_nodes, r.max_nodes, r.ntasks), (3, 3, 6));
        assert!(!r.ntasks_given);
        let idx = |n: &str| n.strip_prefix('n').and_then(|i| i.parse().ok());
        let q = to_sched(&r, idx).unwrap();
        assert_eq!((q.required, q.excluded), (vec![1, 2, 3], vec![9]));
        assert_eq!(
            to_sched(&r, |n: &str| (n != "n2").then_some(0)),
            Err(refusal::NODE_NAME)
        );
        let range = JobSpec {
            min_nodes: 2,
            max_nodes: 4,
            ..Default::default()
        };
        let r = resolve(&range, None, &cfg()).unwrap();
        assert_eq!((r.min_nodes, r.max_nodes, r.ntasks), (2, 4, 2));
        assert!(!r.ntasks_given);
    }

    #[test]
    fn constraint_is_checked_once() {
        let spec = JobSpec {
            constraint: "a&(".into(),
            ..Default::default()
        };
        assert_eq!(resolve(&spec, None, &cfg()), Err(refusal::FEATURE));
        let spec = JobSpec {
            constraint: "a|b".into(),
            ..Default::default()
        };
        let r = resolve(&spec, None, &cfg()).unwrap();
        assert!(to_sched(&r, |_: &str| None).unwrap().constraint.is_some());
    }

    #[test]
    fn the_same_spec_resolves_the_same_for_every_array_task() {
        let p = part(|p| p.def_mem_per_cpu = Some(64));
        let spec = JobSpec {
            array: "0-99".into(),
            ntasks: 4,
            ..Default::default()
        };
        let a = resolve(&spec, Some(&p), &cfg()).unwrap();
        let b = resolve(&spec, Some(&p), &cfg()).unwrap();
        assert_eq!(a, b);
        assert_eq!(tres(&a)["mem"], 256);
    }

    #[test]
    fn tres_counts_tasks_cpus_memory_and_gpus() {
        let spec = JobSpec {
            ntasks: 4,
            cpus_per_task: 2,
            mem_per_cpu_mb: 100,
            gpus_per_node: 1,
            min_nodes: 2,
            ..Default::default()
        };
        let t = tres(&resolve(&spec, None, &cfg()).unwrap());
        assert_eq!(
            (t["cpu"], t["mem"], t["node"], t["gres/gpu"]),
            (8, 800, 2, 2)
        );
    }

    /// The fewest nodes, counted by node type, as one by one over the
    /// nodes sorted roomiest first.
    #[test]
    fn fewest_nodes_counts_the_roomiest_first() {
        let by_sort = |cpus: &[u32], ntasks: u32, cpt: u32, per_node: u32| {
            let mut caps: Vec<u32> = cpus
                .iter()
                .map(|&c| node_task_cap(c, cpt, per_node))
                .collect();
            caps.sort_unstable_by(|a, b| b.cmp(a));
            let mut held = 0u32;
            for (i, c) in caps.iter().enumerate() {
                held += c;
                if held >= ntasks {
                    return i as u32 + 1;
                }
            }
            (caps.len() as u32).max(1)
        };
        let clusters: [&[u32]; 4] = [&[64; 10], &[32, 64, 32, 128, 64, 1], &[2, 0, 0, 3], &[]];
        for cpus in clusters {
            for ntasks in [2, 3, 63, 64, 65, 130, 500, 10_000] {
                for (cpt, per_node) in [(1, 0), (2, 0), (1, 16), (3, 5)] {
                    assert_eq!(
                        fewest_nodes(cpus, ntasks, cpt, per_node),
                        by_sort(cpus, ntasks, cpt, per_node),
                        "{cpus:?} {ntasks} {cpt} {per_node}"
                    );
                }
            }
        }
    }
}
